/*
 * t-multipart.c - multipart/form-data's parser (basic/multipart.h): the
 * boundary of a Content-Type, bodies as the SDKs and curl send them,
 * every refusal the E2B front's upload relies on, a body cut at every
 * offset, and a fuzzer: random and mutated bodies, each in a buffer of
 * exactly its size (so ASan sees a read one byte past it), must parse or
 * be refused with a reason, and what parses lies inside the body.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/alloc.h"
#include "basic/multipart.h"
#include "basic/util.h"
#include "tap.h"

#define MAX_PARTS 1000

/* body parsed from a copy of exactly its length. */
static int parse(const char *body, size_t len, const char *boundary,
		 struct multipart *mp, const char **why)
{
	char *copy = xmalloc(len ? len : 1);
	int rc;

	memcpy(copy, body, len);
	*why = NULL;
	rc = multipart_parse(mp, copy, len, boundary, MAX_PARTS, why);
	/* Check the parts point into the copy before it goes. */
	for (size_t i = 0; rc == 0 && i < mp->n; i++)
		if (!mp->parts[i].name ||
		    (mp->parts[i].len &&
		     (mp->parts[i].data < copy ||
		      mp->parts[i].data + mp->parts[i].len > copy + len)))
			rc = -2;
	if (rc == 0)
		/* Keep the data readable past the copy: point at body. */
		for (size_t i = 0; i < mp->n; i++)
			mp->parts[i].data = body + (mp->parts[i].data - copy);
	free(copy);
	return rc;
}

static void test_boundary(void)
{
	static const struct {
		const char *ct, *want; /* want NULL: refused */
	} cases[] = {
	    {"multipart/form-data; boundary=abc", "abc"},
	    {"multipart/form-data;boundary=abc", "abc"},
	    {"Multipart/Form-Data; BOUNDARY=\"a b:c\"", "a b:c"},
	    {"multipart/form-data; charset=utf-8; boundary=----formdata-"
	     "undici-012345678901",
	     "----formdata-undici-012345678901"},
	    {"multipart/form-data; boundary=x;", "x"},
	    {"multipart/form-data", NULL},
	    {"multipart/form-data; boundary=", NULL},
	    {"multipart/form-data; boundary=\"\"", NULL},
	    {"multipart/form-data; boundary=\"abc ", NULL},
	    {"multipart/form-data; boundary=\"ab \"", NULL},
	    {"multipart/form-data; boundary=a; boundary=b", NULL},
	    {"multipart/form-data; boundary=\"a\\\"b\"", NULL},
	    {"multipart/form-database; boundary=a", NULL},
	    {"multipart/mixed; boundary=a", NULL},
	    {"application/octet-stream", NULL},
	    {"", NULL},
	    {"multipart/form-data; boundary=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	     NULL}, /* 71 */
	    {"multipart/form-data; =x; boundary=a", NULL},
	    {"multipart/form-data boundary=a", NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char b[MULTIPART_BOUNDARY_MAX + 1] = "";
		const char *why = NULL;
		int rc = multipart_boundary(cases[i].ct, b, &why);

		if (cases[i].want)
			ok(rc == 0 && !strcmp(b, cases[i].want),
			   "boundary of '%s' is '%s' (got '%s', %s)",
			   cases[i].ct, cases[i].want, rc ? "" : b,
			   why ? why : "");
		else
			ok(rc < 0 && why, "'%s' refused: %s", cases[i].ct,
			   why ? why : "(no reason)");
	}
	ok(multipart_boundary(NULL, (char[71]){0}, &(const char *){0}) < 0,
	   "no Content-Type refused");
}

/* A part as the table says it: NAME|FILENAME|DATA, FILENAME "-" none. */
static char *render(const struct multipart *mp)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < mp->n; i++) {
		const struct multipart_part *p = &mp->parts[i];

		strbuf_addf(&sb, "%s%s|%s|", i ? "," : "", p->name,
			    p->filename ? p->filename : "-");
		strbuf_add(&sb, p->data ? p->data : "", p->len);
	}
	return strbuf_detach(&sb, NULL);
}

static void test_bodies(void)
{
	static const struct {
		const char *what, *body, *want; /* want NULL: refused */
	} cases[] = {
	    {"one file",
	     "--B\r\nContent-Disposition: form-data; name=\"file\"; "
	     "filename=\"a.txt\"\r\nContent-Type: application/octet-stream"
	     "\r\n\r\nhello\r\n--B--\r\n",
	     "file|a.txt|hello"},
	    {"two files and a preamble",
	     "preamble\r\n--B\r\nContent-Disposition: form-data; name=file; "
	     "filename=x\r\n\r\n1\r\n--B\r\ncontent-disposition: FORM-DATA;"
	     "name=\"file\";filename=\"d/y\"\r\n\r\n22\r\n--B--",
	     "file|x|1,file|d/y|22"},
	    {"empty content",
	     "--B\r\nContent-Disposition: form-data; "
	     "name=f\r\n\r\n\r\n--B--",
	     "f|-|"},
	    {"no content at all",
	     "--B\r\nContent-Disposition: form-data; "
	     "name=f\r\n\r\n--B--",
	     "f|-|"},
	    {"the boundary inside the content, not after CRLF",
	     "--B\r\nContent-Disposition: form-data; name=f\r\n\r\nx--B--y"
	     "\r\n--B--",
	     "f|-|x--B--y"},
	    {"CRLF--B followed by other bytes is content",
	     "--B\r\nContent-Disposition: form-data; name=f\r\n\r\na\r\n--BB"
	     "\r\n--Bx\r\n--B--",
	     "f|-|a\r\n--BB\r\n--Bx"},
	    {"padding after a delimiter",
	     "--B \t\r\nContent-Disposition: form-data; name=f\r\n\r\nz\r\n"
	     "--B--epilogue",
	     "f|-|z"},
	    {"a quoted filename with escapes",
	     "--B\r\nContent-Disposition: form-data; name=\"f\"; filename="
	     "\"a\\\"b\\\\c\"\r\n\r\nq\r\n--B--",
	     "f|a\"b\\c|q"},
	    {"UTF-8 in a filename",
	     "--B\r\nContent-Disposition: form-data; name=f; filename=\""
	     "\xc3\xa9t\xc3\xa9\"\r\n\r\nq\r\n--B--",
	     "f|\xc3\xa9t\xc3\xa9|q"},
	    {"no parts", "--B--", ""},
	    {"no boundary line", "just bytes", NULL},
	    {"another boundary",
	     "--C\r\nContent-Disposition: form-data; "
	     "name=f\r\n\r\nx\r\n--C--",
	     NULL},
	    {"no final boundary",
	     "--B\r\nContent-Disposition: form-data; "
	     "name=f\r\n\r\nx\r\n",
	     NULL},
	    {"a final boundary without its dashes",
	     "--B\r\nContent-Disposition: form-data; name=f\r\n\r\nx\r\n--B",
	     NULL},
	    {"a part without a name",
	     "--B\r\nContent-Disposition: form-data; filename=a\r\n\r\nx\r\n"
	     "--B--",
	     NULL},
	    {"a part without Content-Disposition",
	     "--B\r\nContent-Type: text/plain\r\n\r\nx\r\n--B--", NULL},
	    {"a part without headers", "--B\r\n\r\nx\r\n--B--", NULL},
	    {"not form-data",
	     "--B\r\nContent-Disposition: attachment; name=f\r\n\r\nx\r\n"
	     "--B--",
	     NULL},
	    {"form-datax",
	     "--B\r\nContent-Disposition: form-datax; name=f"
	     "\r\n\r\nx\r\n--B--",
	     NULL},
	    {"a NUL in a filename",
	     "--B\r\nContent-Disposition: form-data; name=f; filename=\"a\0b"
	     "\"\r\n\r\nx\r\n--B--",
	     NULL},
	    {"a bare LF in a filename",
	     "--B\r\nContent-Disposition: form-data; name=f; filename=\"a\nb"
	     "\"\r\n\r\nx\r\n--B--",
	     NULL},
	    {"a CR in a header",
	     "--B\r\nContent-Disposition: form-data; "
	     "name=f\rX: y\r\n\r\nx\r\n--B--",
	     NULL},
	    {"a folded header",
	     "--B\r\nContent-Disposition: form-data;\r\n name=f\r\n\r\nx\r\n"
	     "--B--",
	     NULL},
	    {"a line without a colon",
	     "--B\r\nContent-Disposition: form-data; name=f\r\nnocolon\r\n\r\n"
	     "x\r\n--B--",
	     NULL},
	    {"an unclosed quote",
	     "--B\r\nContent-Disposition: form-data; "
	     "name=\"f\r\n\r\nx\r\n--B--",
	     NULL},
	    {"a name given twice",
	     "--B\r\nContent-Disposition: form-data; "
	     "name=f; name=g\r\n\r\nx\r\n--B--",
	     NULL},
	    {"two dispositions",
	     "--B\r\nContent-Disposition: form-data; name=f\r\n"
	     "Content-Disposition: form-data; name=g\r\n\r\nx\r\n--B--",
	     NULL},
	    {"a parameter without a value",
	     "--B\r\nContent-Disposition: form-data; name=\r\n\r\nx\r\n--B--",
	     NULL},
	    {"headers with no end",
	     "--B\r\nContent-Disposition: form-data; "
	     "name=f\r\n",
	     NULL},
	    {"LF line ends",
	     "--B\nContent-Disposition: form-data; name=f\n\n"
	     "x\n--B--",
	     NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct multipart mp = MULTIPART_INIT;
		const char *why;
		/* Bodies with a NUL: their length is the literal's. */
		size_t len = strlen(cases[i].body);
		int rc;

		if (strstr(cases[i].what, "NUL"))
			len += 1 + strlen(cases[i].body + len + 1);
		rc = parse(cases[i].body, len, "B", &mp, &why);
		if (cases[i].want) {
			char *got = rc == 0 ? render(&mp) : NULL;

			if (!ok(rc == 0 && !strcmp(got, cases[i].want), "%s",
				cases[i].what))
				diag("got %s (%s)",
				     got ? "other parts" : "a refusal",
				     why ? why : "");
			free(got);
		} else {
			ok(rc == -1 && why, "%s: refused (%s)", cases[i].what,
			   why ? why : "no reason");
		}
		multipart_release(&mp);
	}
}

/* A body of n parts of the given header padding. */
static char *body_of(size_t n, size_t pad, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		strbuf_addf(&sb,
			    "--B\r\nContent-Disposition: form-data; name=file; "
			    "filename=f%zu\r\n",
			    i);
		if (pad) {
			strbuf_addstr(&sb, "X-Pad: ");
			for (size_t k = 0; k < pad; k++)
				strbuf_addch(&sb, 'p');
			strbuf_addstr(&sb, "\r\n");
		}
		strbuf_addf(&sb, "\r\ncontent %zu\r\n", i);
	}
	strbuf_addstr(&sb, "--B--\r\n");
	return strbuf_detach(&sb, len);
}

static void test_bounds(void)
{
	struct multipart mp = MULTIPART_INIT;
	const char *why;
	size_t len;
	char *b;

	b = body_of(MAX_PARTS, 0, &len);
	ok(parse(b, len, "B", &mp, &why) == 0 && mp.n == MAX_PARTS,
	   "%d parts: every one (%zu)", MAX_PARTS, mp.n);
	multipart_release(&mp);
	free(b);
	b = body_of(10000, 0, &len);
	ok(parse(b, len, "B", &mp, &why) == -1 && why &&
	       strstr(why, "too many parts"),
	   "10000 parts: refused (%s)", why ? why : "");
	multipart_release(&mp);
	free(b);
	b = body_of(1, MULTIPART_HEADER_BYTES, &len);
	ok(parse(b, len, "B", &mp, &why) == -1 && why &&
	       strstr(why, "over 8 KiB"),
	   "a header of 8 KiB: refused (%s)", why ? why : "");
	multipart_release(&mp);
	free(b);
	b = body_of(1, 1 << 20, &len);
	ok(parse(b, len, "B", &mp, &why) == -1 && why,
	   "a header of 1 MiB: refused (%s)", why ? why : "");
	multipart_release(&mp);
	free(b);
	{
		struct strbuf sb = STRBUF_INIT;

		strbuf_addstr(&sb, "--B\r\nContent-Disposition: form-data; "
				   "name=f\r\n");
		for (int i = 0; i < MULTIPART_HEADER_LINES; i++)
			strbuf_addstr(&sb, "X: y\r\n");
		strbuf_addstr(&sb, "\r\nx\r\n--B--");
		ok(parse(sb.buf, sb.len, "B", &mp, &why) == -1 && why &&
		       strstr(why, "header lines"),
		   "17 header lines: refused (%s)", why ? why : "");
		multipart_release(&mp);
		strbuf_release(&sb);
	}
	{
		/* Content of a million fake delimiters: linear, one part. */
		struct strbuf sb = STRBUF_INIT;

		strbuf_addstr(&sb, "--B\r\nContent-Disposition: form-data; "
				   "name=f\r\n\r\n");
		for (int i = 0; i < 1000000; i++)
			strbuf_addstr(&sb, "\r\n--Bx");
		strbuf_addstr(&sb, "\r\n--B--");
		ok(parse(sb.buf, sb.len, "B", &mp, &why) == 0 && mp.n == 1 &&
		       mp.parts[0].len == 6000000,
		   "a million false delimiters are content");
		multipart_release(&mp);
		strbuf_release(&sb);
	}
}

/* A valid body cut at every offset: refused, never read past the cut. */
static void test_cuts(void)
{
	size_t len, bad = 0;
	char *b = body_of(3, 5, &len);

	/* The last "\r\n" after "--B--" is epilogue: cuts there parse. */
	for (size_t cut = 0; cut < len - 2; cut++) {
		struct multipart mp = MULTIPART_INIT;
		const char *why;

		if (parse(b, cut, "B", &mp, &why) != -1 || !why)
			bad++;
		multipart_release(&mp);
	}
	ok(!bad, "a body cut at each of %zu offsets is refused (%zu not)",
	   len - 2, bad);
	free(b);
}

static const char *const pieces[] = {
    "\r\n",
    "--B",
    "\r\n--B",
    "\r\n--B--",
    "--",
    "\r\n\r\n",
    ";",
    "=",
    "\"",
    "\\",
    "name=f",
    "filename=",
    "Content-Disposition: form-data; name=f",
    "Content-Type: x",
    ":",
    " ",
    "\t",
    "\0",
    "\n",
    "\r",
    "\xff",
    "B",
};

static void mutate(struct strbuf *sb)
{
	size_t at = sb->len ? tap_rand() % (sb->len + 1) : 0;
	const char *p;
	size_t plen;

	switch (tap_rand() % 5) {
	case 0: /* a byte changed */
		if (sb->len)
			sb->buf[at % sb->len] = (char)tap_rand();
		break;
	case 1: /* a range cut */
		if (sb->len) {
			size_t n = tap_rand() % 16;

			at %= sb->len;
			if (n > sb->len - at)
				n = sb->len - at;
			memmove(sb->buf + at, sb->buf + at + n,
				sb->len - at - n);
			sb->len -= n;
		}
		break;
	default: /* a piece inserted */
		p = pieces[tap_rand() % (sizeof(pieces) / sizeof(*pieces))];
		plen = *p ? strlen(p) : 1;
		strbuf_grow(sb, plen);
		memmove(sb->buf + at + plen, sb->buf + at, sb->len - at);
		memcpy(sb->buf + at, p, plen);
		sb->len += plen;
		break;
	}
}

static void test_fuzz(void)
{
	size_t parsed = 0, refused = 0, bad = 0, seedlen;
	char *seed = body_of(4, 3, &seedlen);

	for (int round = 0; round < 30000; round++) {
		struct strbuf sb = STRBUF_INIT;
		struct multipart mp = MULTIPART_INIT;
		const char *why;
		int rc;

		if (round % 3 == 0) {
			/* Random bytes from the pieces alone. */
			int n = (int)(tap_rand() % 64);

			for (int k = 0; k < n; k++) {
				const char *p =
				    pieces[tap_rand() %
					   (sizeof(pieces) / sizeof(*pieces))];

				strbuf_add(&sb, p, *p ? strlen(p) : 1);
			}
		} else {
			int n = 1 + (int)(tap_rand() % 8);

			strbuf_add(&sb, seed, seedlen);
			for (int k = 0; k < n; k++)
				mutate(&sb);
		}
		rc = parse(sb.buf ? sb.buf : "", sb.len, "B", &mp, &why);
		if (rc == 0)
			parsed++;
		else if (rc == -1 && why)
			refused++;
		else
			bad++;
		multipart_release(&mp);
		strbuf_release(&sb);
	}
	ok(!bad && parsed && refused,
	   "30000 fuzzed bodies: %zu parsed, %zu refused with a reason, %zu "
	   "wrong",
	   parsed, refused, bad);
	free(seed);
}

int main(void)
{
	test_boundary();
	test_bodies();
	test_bounds();
	test_cuts();
	test_fuzz();
	return done_testing();
}

/*
 * t-util.c - the bottom layers: checked size arithmetic (overflow is fatal,
 * never a short buffer), strbuf, xjson (checked packs, lossless paths) and
 * text.c against independent references: glibc's iconv for UTF-8 validity
 * (exhaustive over every 1-, 2- and 3-byte sequence, sampled over 4-byte
 * ones) and small fuzzers for the printable and escaped forms.
 *
 * T_UTIL_QUICK=1 samples the 3-byte space instead of walking all of it
 * (for valgrind runs).
 */
#include "config.h"

#include <errno.h>
#include <iconv.h>
#include <regex.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "basic/base64.h"
#include "basic/hash.h"
#include "basic/size.h"
#include "tap.h"
#include "basic/util.h"
#include "basic/xjson.h"


/*
 * Run fn in a child; true when it died by SIGABRT having written a line
 * containing want on stderr.
 */
static bool dies_with(void (*fn)(void), const char *want)
{
	int fds[2];
	char buf[512];
	size_t got = 0;
	int status;
	pid_t pid;

	if (pipe(fds) < 0)
		bail_out("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bail_out("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		signal(SIGABRT, SIG_DFL);
		fn();
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], buf + got, sizeof(buf) - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)) {
		diag("child status %d, stderr: %s", status, buf);
		return false;
	}
	if (!strstr(buf, want)) {
		diag("stderr was: %s", buf);
		return false;
	}
	return true;
}

static volatile size_t sink;

static void add_overflow(void)
{
	sink = st_add(SIZE_MAX, 1);
}

static void mult_overflow(void)
{
	sink = st_mult(SIZE_MAX / 3, 4);
}

static void grow_overflow(void)
{
	/* An element count that fits, times a size that does not. */
	uint64_t *p = NULL;
	size_t alloc = 0;

	ALLOC_GROW(p, SIZE_MAX / 8 + 1, alloc);
	sink = (size_t)p;
}

static void strbuf_overflow(void)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, "x");
	strbuf_grow(&sb, SIZE_MAX); /* len + extra + 1 wraps to 1 */
	sink = sb.alloc;
}

/* A format the walker cannot read: a bug in the source, still fatal. */
static void pack_fails(void)
{
	json_t *j = xjson_pack("{s:q}", "path", 1);

	sink = (size_t)j;
}

static void test_sizes(void)
{
	size_t a;
	int *p = NULL;
	size_t alloc = 0;

	is_int((long long)st_add(2, 3), 5, "st_add in range");
	is_int((long long)(st_mult(SIZE_MAX / 2, 2) == SIZE_MAX - 1), 1,
	       "st_mult at the edge does not trip");
	ok(dies_with(add_overflow, "size overflow"),
	   "st_add past SIZE_MAX is fatal with a message");
	ok(dies_with(mult_overflow, "size overflow"),
	   "st_mult past SIZE_MAX is fatal with a message");
	ok(dies_with(grow_overflow, "size overflow"),
	   "ALLOC_GROW whose byte count overflows is fatal");
	ok(dies_with(strbuf_overflow, "size overflow"),
	   "strbuf_grow whose size overflows is fatal");
	ok(dies_with(pack_fails, "xjson_pack(\"{s:q}\")"),
	   "an xjson_pack format that does not parse is fatal and names it");

	is_int((long long)alloc_nr(0, 1), 8, "alloc_nr starts at 8");
	is_int((long long)alloc_nr(8, 9), 16, "alloc_nr doubles");
	is_int((long long)alloc_nr(8, 100), 100, "alloc_nr jumps to want");
	a = alloc_nr(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2);
	ok(a == SIZE_MAX / 2 + 2, "alloc_nr near SIZE_MAX gives want, not a "
				  "wrapped double");
	for (int i = 0; i < 1000; i++) {
		ALLOC_GROW(p, (size_t)i + 1, alloc);
		p[i] = i;
	}
	ok(alloc >= 1000 && p[999] == 999, "ALLOC_GROW grows to 1000");
	free(p);
}

static void test_strbuf(void)
{
	struct strbuf sb = STRBUF_INIT;
	char *s;
	size_t len;

	is_str(strbuf_str(&sb), "", "an empty strbuf reads as \"\"");
	strbuf_addstr(&sb, "abc");
	strbuf_addch(&sb, 0);
	strbuf_add(&sb, "de", 2);
	strbuf_addf(&sb, "%d-%s", 42, "x");
	is_int((long long)sb.len, 10, "strbuf holds binary bytes");
	ok(memcmp(sb.buf, "abc\0de42-x", 11) == 0,
	   "strbuf bytes and the NUL after them");
	for (int i = 0; i < 10000; i++)
		strbuf_addch(&sb, 'a' + i % 26);
	is_int((long long)sb.len, 10010, "strbuf grows across many appends");
	ok(sb.buf[sb.len] == '\0', "strbuf stays NUL-terminated");
	s = strbuf_detach(&sb, &len);
	ok(len == 10010 && sb.buf == NULL && sb.len == 0,
	   "strbuf_detach hands over and resets");
	free(s);
	s = strbuf_detach(&sb, &len);
	ok(len == 0 && s[0] == '\0', "detach of an empty strbuf gives \"\"");
	free(s);
	strbuf_release(&sb);
}

/* The path decoded from obj[key] and obj[key_base64] as xjson.h says. */
static char *path_from_json(json_t *o, const char *key)
{
	char *k = xasprintf("%s_base64", key);
	json_t *b = json_object_get(o, k);
	char *out;

	free(k);
	if (!b)
		return xstrdup(json_string_value(json_object_get(o, key)));
	out = xcalloc(json_string_length(b) + 1, 1);
	EVP_DecodeBlock((unsigned char *)out,
			(const unsigned char *)json_string_value(b),
			(int)json_string_length(b));
	return out; /* trailing zero padding from base64 is NULs: fine */
}

/* want (JSON text) is what got is; got consumed. */
static bool pack_is(json_t *got, const char *want, const char *what)
{
	json_t *w = json_loads(want, JSON_ALLOW_NUL, NULL);
	bool same = got && w && json_equal(got, w);

	if (!same) {
		char *g = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;

		diag("%s: got %s, want %s", what, g ? g : "NULL", want);
		free(g);
	}
	json_decref(w);
	json_decref(got);
	return ok(same, "xjson_pack, %s", what);
}

/*
 * xjson_pack never ends the process on what its strings hold: each
 * element of the format grammar with an invalid string somewhere makes
 * the value jansson would make of the strings made valid (U+FFFD per
 * invalid byte), "o" values are consumed exactly once (ASan checks), a
 * NULL "o" is null.
 */
static void test_pack_lossy(void)
{
	json_t *owned = json_pack("{s:i}", "x", 1), *borrowed = json_array();

	pack_is(xjson_pack("{s:s}", "path", "caf\xe9"),
		"{\"path\": \"caf\\ufffd\"}", "a latin-1 \"s\"");
	pack_is(xjson_pack("{s:i}", "k\xff", 7), "{\"k\\ufffd\": 7}",
		"an invalid key");
	pack_is(xjson_pack("{s:s?, s:s?, s:s*, s:s*}", "a", NULL, "b",
			   "\x80", "c", NULL, "d", "ok"),
		"{\"a\": null, \"b\": \"\\ufffd\", \"d\": \"ok\"}",
		"s? and s* with NULL and an invalid string");
	pack_is(xjson_pack("{s:s++}", "content", "Error: '", "x\xfe",
			   "' missing"),
		"{\"content\": \"Error: 'x\\ufffd' missing\"}", "s++");
	pack_is(xjson_pack("{s:s%, s:s#}", "a", "n\0\xff", (size_t)3, "b",
			   "xy\xc3", 2),
		"{\"a\": \"n\\u0000\\ufffd\", \"b\": \"xy\"}",
		"s% (a NUL kept) and s#");
	pack_is(xjson_pack("{s:o, s:O, s:s, s:n, s:b, s:i, s:I, s:f, "
			   "s:[s, {s:s}], s:o?, s:o*, s:O*}",
			   "o", owned, "O", borrowed, "bad", "\xff\xfe", "n",
			   "b", 1, "i", -3, "I", (json_int_t)1 << 40, "f", 0.5,
			   "arr", "\xc0", "in", "\xe2\x82", "q", NULL, "r",
			   NULL, "t", NULL),
		"{\"o\": {\"x\": 1}, \"O\": [], \"bad\": "
		"\"\\ufffd\\ufffd\", \"n\": null, \"b\": true, \"i\": -3, "
		"\"I\": 1099511627776, \"f\": 0.5, \"arr\": [\"\\ufffd\", "
		"{\"in\": \"\\ufffd\\ufffd\"}], \"q\": null}",
		"every element beside an invalid string");
	is_int((long long)borrowed->refcount, 1,
	       "xjson_pack: \"O\" took its own reference, \"o\" the caller's");
	json_decref(borrowed);
	pack_is(xjson_pack("{s:o, s:s}", "content", json_stringn("\xe9", 1),
			   "k", "v"),
		"{\"content\": null, \"k\": \"v\"}",
		"a NULL \"o\" (json_stringn of latin-1) is null");
	pack_is(xjson_pack("[s, i]", "\xff", 2), "[\"\\ufffd\", 2]",
		"an array at the top");
	pack_is(xjson_pack("{s:s}", "k", "caf\xc3\xa9"),
		"{\"k\": \"caf\\u00e9\"}", "valid UTF-8 through jansson");
}

static void test_xjson(void)
{
	static const char *const paths[] = {
	    "plain.json", "caf\xc3\xa9/x",    "bad\xff.json",
	    "\x80",	  "a\xed\xa0\x80z",   "ab",
	    "abc",	  "\xff\xfe\xfd\xfc",
	};
	bool all = true, flagged = true;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		json_t *o = json_object();
		char *dump, *back;
		json_t *re;

		xjson_set_path(o, "path", paths[i]);
		/* Through text and back, as a reader would get it. */
		dump = json_dumps(o, 0);
		re = json_loads(dump, 0, NULL);
		back = re ? path_from_json(re, "path") : NULL;
		if (!back || strcmp(back, paths[i]) != 0)
			all = false;
		if ((json_object_get(o, "path_base64") != NULL) !=
		    (utf8_first_invalid(paths[i], strlen(paths[i])) >= 0))
			flagged = false;
		free(back);
		free(dump);
		json_decref(re);
		json_decref(o);
	}
	ok(all, "xjson_set_path is lossless for valid and invalid UTF-8");
	ok(flagged, "path_base64 is present exactly when the path is not "
		    "UTF-8");
	{
		json_t *t = xjson_text("a\xffz");
		is_str(json_string_value(t), "a\xef\xbf\xbdz",
		       "xjson_text replaces an invalid byte by U+FFFD");
		json_decref(t);
		t = xjson_textn("a\0\xff", 3);
		ok(json_string_length(t) == 5 &&
			   !memcmp(json_string_value(t), "a\0\xef\xbf\xbd", 5),
		   "xjson_textn keeps a NUL and replaces an invalid byte");
		json_decref(t);
		t = xjson_string("\xc3");
		is_str(json_string_value(t), "\xef\xbf\xbd",
		       "xjson_string of a string that is not UTF-8 is U+FFFD, "
		       "not fatal");
		json_decref(t);
	}
	test_pack_lossy();
}

/*
 * The reference: what glibc's iconv makes of the first character of s.
 * Returns its length with *cp set, or 0 when s does not start with a whole
 * valid UTF-8 character.
 */
static iconv_t cd;

static size_t ref_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
	char *in = (char *)s, *out = (char *)cp;
	size_t inleft = len, outleft = 4;
	size_t r;

	iconv(cd, NULL, NULL, NULL, NULL);
	r = iconv(cd, &in, &inleft, &out, &outleft);
	if (outleft != 0)
		return 0; /* no character came out: invalid or cut short */
	(void)r;
	return len - inleft;
}

static bool same_decode(const unsigned char *s, size_t len)
{
	uint32_t a = 0, b = 0;
	size_t n = utf8_decode((const char *)s, len, &a);
	size_t m = ref_decode(s, len, &b);

	if (n != m || (n && a != b)) {
		diag("%02x %02x %02x %02x (len %zu): utf8_decode %zu/%x, "
		     "iconv %zu/%x",
		     s[0], len > 1 ? s[1] : 0, len > 2 ? s[2] : 0,
		     len > 3 ? s[3] : 0, len, n, a, m, b);
		return false;
	}
	return true;
}

static void test_utf8(void)
{
	static const struct {
		const char *s;
		size_t len, want;
	} known[] = {
	    {"\xed\xa0\x80", 3, 0},	/* surrogate */
	    {"\xc0\x80", 2, 0},		/* overlong NUL */
	    {"\xe0\x80\x80", 3, 0},	/* overlong */
	    {"\xf0\x80\x80\x80", 4, 0}, /* overlong */
	    {"\xf4\x90\x80\x80", 4, 0}, /* past U+10FFFF */
	    {"\xe2\x82", 2, 0},		/* cut short */
	    {"\xf0\x9f\x98\x80", 4, 4}, /* U+1F600 */
	    {"\xef\xbf\xbf", 3, 3},	/* U+FFFF, a noncharacter, valid */
	    {"\xf4\x8f\xbf\xbf", 4, 4}, /* U+10FFFF */
	};
	bool refok = true, good = true;
	bool quick = getenv("T_UTIL_QUICK") != NULL;
	unsigned char s[4];
	uint32_t cp;
	long bad_at_ok = 0;

	cd = iconv_open("UTF-32LE", "UTF-8");
	if (cd == (iconv_t)-1)
		bail_out("iconv_open: %s", strerror(errno));
	/* A reference is only worth what it gets right: check it first. */
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (ref_decode((const unsigned char *)known[i].s, known[i].len,
			       &cp) != known[i].want)
			refok = false;
	if (!ok(refok, "iconv rejects surrogates, overlongs and code "
		       "points past U+10FFFF"))
		bail_out("iconv is no reference for UTF-8 here");

	for (unsigned a = 0; a < 256 && good; a++) {
		s[0] = (unsigned char)a;
		good = same_decode(s, 1);
	}
	ok(good, "utf8_decode matches iconv on all 1-byte sequences");
	for (unsigned a = 0; a < 65536 && good; a++) {
		s[0] = (unsigned char)(a >> 8), s[1] = (unsigned char)a;
		good = same_decode(s, 2);
	}
	ok(good, "utf8_decode matches iconv on all 2-byte sequences");
	for (uint32_t a = 0; a < (1u << 24) && good; a++) {
		uint32_t v = quick ? tap_rand() & 0xFFFFFF : a;

		if (quick && a >= 200000)
			break;
		s[0] = (unsigned char)(v >> 16), s[1] = (unsigned char)(v >> 8),
		s[2] = (unsigned char)v;
		good = same_decode(s, 3);
	}
	ok(good, "utf8_decode matches iconv on all 3-byte sequences%s",
	   quick ? " (sampled)" : "");
	for (int i = 0; i < 2000000 && good; i++) {
		uint32_t v = tap_rand() ^ (tap_rand() << 16);

		s[0] = (unsigned char)(i % 2 ? 0xF0 | (v >> 24 & 7) : v >> 24);
		s[1] =
		    (unsigned char)(i % 3 ? 0x80 | (v >> 16 & 0x3F) : v >> 16);
		s[2] = (unsigned char)(v >> 8), s[3] = (unsigned char)v;
		good = same_decode(s, 4);
	}
	ok(good, "utf8_decode matches iconv on 2,000,000 4-byte sequences");

	/* utf8_first_invalid against iconv over whole random buffers. */
	for (int i = 0; i < 20000 && good; i++) {
		unsigned char buf[16];
		size_t len = tap_rand() % sizeof(buf), inleft = len, outleft;
		char *in = (char *)buf, *out;
		uint32_t wide[16];
		long want;

		for (size_t k = 0; k < len; k++)
			buf[k] = (unsigned char)(tap_rand() % 4 ? 0x80 + tap_rand() % 0x80
							   : tap_rand() % 0x80);
		out = (char *)wide, outleft = sizeof(wide);
		iconv(cd, NULL, NULL, NULL, NULL);
		want = iconv(cd, &in, &inleft, &out, &outleft) == (size_t)-1
			   ? (long)(len - inleft)
			   : -1;
		if (utf8_first_invalid((const char *)buf, len) != want)
			good = false;
		else if (want >= 0)
			bad_at_ok++;
	}
	ok(good && bad_at_ok > 1000,
	   "utf8_first_invalid matches iconv on 20,000 random buffers");
	iconv_close(cd);
}

/* True when s[0..len) is valid UTF-8 with no control or bidi character,
 * decoded by iconv, not by the code under test. */
static bool clean_by_iconv(const char *s, size_t len)
{
	iconv_t c = iconv_open("UTF-32LE", "UTF-8");
	uint32_t *wide = xcalloc(len + 1, 4);
	char *in = (char *)s, *out = (char *)wide;
	size_t inleft = len, outleft = (len + 1) * 4;
	bool clean = iconv(c, &in, &inleft, &out, &outleft) != (size_t)-1;

	for (size_t i = 0; clean && i < (len + 1) * 4 / 4 - outleft / 4; i++) {
		uint32_t cp = wide[i];

		if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) ||
		    (cp >= 0x202A && cp <= 0x202E) ||
		    (cp >= 0x2066 && cp <= 0x2069))
			clean = false;
	}
	free(wide);
	iconv_close(c);
	return clean;
}

/* Random bytes rich in what terminals and text.c care about. */
static size_t hostile(char *buf, size_t max)
{
	static const char *const bits[] = {
	    "\x1b",
	    "[",
	    "]",
	    "\x07",
	    "\x1b\\",
	    "\xc2\x9b",
	    "\xc2\x9c",
	    "\xc2\x9d",
	    "\xc2\x85",
	    "\x9b",
	    "\xe2\x80\xae",
	    "\xe2\x81\xa6",
	    "\xed\xa0\x80",
	    "\xf0\x9f\x98\x80",
	    "\xc3\xa9",
	    "\n",
	    "\r",
	    "\t",
	    "\\",
	    "0;",
	    "31m",
	    "P",
	    "_",
	    "^",
	    "X",
	    "\x7f",
	    "\x00",
	    "\xff",
	    "\xc3",
	    "a",
	    "b",
	    " ",
	};
	size_t len = 0, want = tap_rand() % max;

	while (len < want) {
		const char *b = bits[tap_rand() % (sizeof(bits) / sizeof(bits[0]))];
		size_t n = b[0] ? strlen(b) : 1;

		if (tap_rand() % 4 == 0) {
			buf[len++] = (char)tap_rand();
			continue;
		}
		if (len + n > max)
			break;
		memcpy(buf + len, b, n);
		len += n;
	}
	return len;
}

/* Undo text_add_escaped as text.h documents it. */
static char *unescape(const char *s, size_t len, size_t *outlen)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < len; i++) {
		unsigned v;

		if (s[i] != '\\') {
			strbuf_addch(&sb, s[i]);
			continue;
		}
		i++;
		if (s[i] == 'n' || s[i] == 'r' || s[i] == 't' || s[i] == '\\') {
			strbuf_addch(&sb, s[i] == 'n'	? '\n'
					  : s[i] == 'r' ? '\r'
					  : s[i] == 't' ? '\t'
							: '\\');
		} else if (s[i] == 'x' && sscanf(s + i + 1, "%2x", &v) == 1) {
			strbuf_addch(&sb, (int)v);
			i += 2;
		} else if (s[i] == 'u' && sscanf(s + i + 1, "%4x", &v) == 1) {
			if (v < 0x800) {
				strbuf_addch(&sb, (int)(0xC0 | v >> 6));
			} else {
				strbuf_addch(&sb, (int)(0xE0 | v >> 12));
				strbuf_addch(&sb,
					     (int)(0x80 | (v >> 6 & 0x3F)));
			}
			strbuf_addch(&sb, (int)(0x80 | (v & 0x3F)));
			i += 4;
		} else {
			strbuf_addstr(&sb, "<bad escape>");
		}
	}
	return strbuf_detach(&sb, outlen);
}

static void test_text(void)
{
	static const struct {
		const char *in, *want;
	} esc[] = {
	    {"A\x1b[31;1mB", "AB"},
	    {"A\x1b]0;title\x07"
	     "B",
	     "AB"},
	    {"A\x1b]8;;http://x\x1b\\B", "AB"},
	    {"A\xc2\x9b"
	     "2JB",
	     "AB"},
	    {"A\xc2\x9d"
	     "evil\xc2\x9c"
	     "B",
	     "AB"},
	    {"A\x1bP+q\x1b\\B", "AB"},
	    {"A\x1b"
	     "cB",
	     "AB"},
	    {"A\x1b(BB", "AB"},
	};
	bool printable = true, whole = true, escaped = true, inverse = true;

	for (size_t i = 0; i < sizeof(esc) / sizeof(esc[0]); i++) {
		struct strbuf sb = STRBUF_INIT;

		text_add_printable(&sb, esc[i].in, strlen(esc[i].in));
		if (strcmp(strbuf_str(&sb), esc[i].want) != 0) {
			diag("printable(%zu) = '%s'", i, strbuf_str(&sb));
			whole = false;
		}
		strbuf_release(&sb);
	}
	ok(whole, "ESC, CSI, OSC, DCS and C1-introduced sequences are "
		  "removed whole");

	for (int i = 0; i < 20000; i++) {
		char in[96];
		size_t len = hostile(in, sizeof(in)), back_len;
		struct strbuf p = STRBUF_INIT, e = STRBUF_INIT;
		char *back;

		text_add_printable(&p, in, len);
		if (p.len && !clean_by_iconv(p.buf, p.len))
			printable = false;
		text_add_escaped(&e, in, len);
		if (e.len && !clean_by_iconv(e.buf, e.len))
			escaped = false;
		back = unescape(e.buf ? e.buf : "", e.len, &back_len);
		if (back_len != len || memcmp(back, in, len) != 0)
			inverse = false;
		free(back);
		strbuf_release(&p);
		strbuf_release(&e);
	}
	ok(printable, "text_add_printable: 20,000 hostile inputs give valid "
		      "UTF-8 without C0, DEL, C1 or bidi controls");
	ok(escaped, "text_add_escaped: the same inputs give valid UTF-8 "
		    "without controls");
	ok(inverse, "text_add_escaped is injective: each output decodes back "
		    "to its input");
}

/*
 * sha256 and hmac_sha256 (libcrypto's SHA-256 without EVP) against EVP's
 * digest and HMAC(), on random data of every length around the block
 * edges and random keys shorter and longer than a block.
 */
/* s[0..len) decoded as text_sniff reads it. */
static char *decoded(const char *s, size_t len, enum text_encoding *enc,
		     size_t *outlen)
{
	struct strbuf sb = STRBUF_INIT;

	*enc = text_sniff(s, len);
	text_decode(&sb, s, len, *enc);
	strbuf_addstr(&sb, "");
	return strbuf_detach(&sb, outlen);
}

/* Text files as sandboxd reads them (text.h, "Text files"). */
static void test_decode(void)
{
	static const struct {
		const char *in;
		size_t len;
		enum text_encoding enc;
		const char *out;
		size_t outlen;
		const char *what;
	} cases[] = {
	    {"caf\xe9 cr\xe8me", 10, TEXT_SINGLE_BYTE,
	     "caf\xc3\xa9 cr\xc3\xa8me", 12, "latin-1 café crème"},
	    {"caf\xc3\xa9", 5, TEXT_UTF8, "caf\xc3\xa9", 5, "UTF-8 as is"},
	    {"\xef\xbb\xbfhi", 5, TEXT_UTF8_BOM, "hi", 2,
	     "UTF-8 byte order mark dropped"},
	    {"\x80\x81\x9f\xff", 4, TEXT_SINGLE_BYTE,
	     "\xe2\x82\xac\xc2\x81\xc5\xb8\xc3\xbf", 9,
	     "windows-1252: 0x80 euro, 0x81 undefined as U+0081, 0x9f, 0xff"},
	    {"a\0b\xff", 4, TEXT_SINGLE_BYTE, "a\0b\xc3\xbf", 5,
	     "a NUL is U+0000"},
	    {"a\0b", 3, TEXT_UTF8, "a\0b", 3, "a NUL in UTF-8 is U+0000"},
	    {"\xff\xfe" "h\0\xe9\0\n\0", 8, TEXT_UTF16LE, "h\xc3\xa9\n", 4,
	     "UTF-16LE with its byte order mark"},
	    {"\xfe\xff" "\0h\xd8\x3d\xde\x00", 8, TEXT_UTF16BE,
	     "h\xf0\x9f\x98\x80", 5, "UTF-16BE, a surrogate pair"},
	    {"\xff\xfe" "\x00\xd8h\0x", 7, TEXT_UTF16LE,
	     "\xef\xbf\xbdh\xef\xbf\xbd", 7,
	     "UTF-16: a lone surrogate and an odd last byte as U+FFFD"},
	    {"\xef\xbb\xbf\xff", 4, TEXT_SINGLE_BYTE,
	     "\xc3\xaf\xc2\xbb\xc2\xbf\xc3\xbf", 8,
	     "a UTF-8 byte order mark before invalid bytes: windows-1252"},
	    {"", 0, TEXT_UTF8, "", 0, "empty"},
	};
	struct strbuf sb = STRBUF_INIT;
	bool round = true, valid = true;
	char all[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum text_encoding enc;
		size_t n;
		char *out = decoded(cases[i].in, cases[i].len, &enc, &n);

		ok(enc == cases[i].enc && n == cases[i].outlen &&
		       !memcmp(out, cases[i].out, n),
		   "text_decode: %s", cases[i].what);
		free(out);
	}
	/* windows-1252 is a bijection: every byte string comes back. */
	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	text_decode(&sb, all, 256, TEXT_SINGLE_BYTE);
	valid = utf8_first_invalid(sb.buf, sb.len) < 0;
	{
		struct strbuf back = STRBUF_INIT;

		round = text_encode(&back, sb.buf, sb.len, TEXT_SINGLE_BYTE) &&
			back.len == 256 && !memcmp(back.buf, all, 256);
		strbuf_release(&back);
	}
	ok(valid && round, "windows-1252: the 256 bytes decode to UTF-8 and "
			   "encode back to themselves");
	for (int t = 0; t < 2000 && round; t++) {
		char buf[64];
		size_t len = tap_rand() % sizeof(buf);
		struct strbuf d = STRBUF_INIT, e = STRBUF_INIT;
		enum text_encoding enc;

		for (size_t k = 0; k < len; k++)
			buf[k] = (char)tap_rand();
		enc = text_sniff(buf, len);
		text_decode(&d, buf, len, enc);
		if (utf8_first_invalid(d.buf ? d.buf : "", d.len) >= 0)
			valid = false;
		if (enc == TEXT_SINGLE_BYTE &&
		    (!text_encode(&e, d.buf, d.len, enc) || e.len != len ||
		     memcmp(e.buf, buf, len)))
			round = false;
		strbuf_release(&d);
		strbuf_release(&e);
	}
	ok(valid && round, "2,000 random buffers decode to valid UTF-8; the "
			   "single-byte ones encode back to their bytes");
	strbuf_reset(&sb);
	ok(!text_encode(&sb, "\xe2\x86\x92", 3, TEXT_SINGLE_BYTE) &&
	       sb.len == 0,
	   "text_encode: an arrow has no windows-1252 byte, nothing added");
	ok(!text_encode(&sb, "\xff", 1, TEXT_UTF16LE),
	   "text_encode: bytes that are not UTF-8 are refused");
	ok(text_encode(&sb, "h\xf0\x9f\x98\x80", 5, TEXT_UTF16BE) &&
	       sb.len == 6 && !memcmp(sb.buf, "\0h\xd8\x3d\xde\x00", 6),
	   "text_encode: UTF-16BE with a surrogate pair");
	strbuf_release(&sb);
}

static void test_hash(void)
{
	unsigned char buf[1200], key[200];
	unsigned int n;
	int bad_sha = 0, bad_hmac = 0, runs = 0;

	for (size_t len = 0; len <= sizeof(buf); len += len < 300 ? 1 : 37) {
		unsigned char a[32], b[32], c[32], d[32];
		size_t klen = tap_rand() % sizeof(key);

		for (size_t i = 0; i < len; i++)
			buf[i] = (unsigned char)tap_rand();
		for (size_t i = 0; i < klen; i++)
			key[i] = (unsigned char)tap_rand();
		sha256(buf, len, a);
		EVP_Digest(buf, len, b, &n, EVP_sha256(), NULL);
		bad_sha += memcmp(a, b, 32) != 0;
		hmac_sha256(key, klen, buf, len, c);
		HMAC(EVP_sha256(), key, (int)klen, buf, len, d, &n);
		bad_hmac += memcmp(c, d, 32) != 0;
		runs++;
	}
	ok(bad_sha == 0, "sha256 = EVP's SHA-256 on %d inputs (%d differ)",
	   runs, bad_sha);
	ok(bad_hmac == 0, "hmac_sha256 = HMAC() on %d inputs, keys 0-199 "
	   "bytes (%d differ)", runs, bad_hmac);
	{
		char hex[65];

		sha256_hex("abc", 3, hex);
		is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		       "sha256_hex(\"abc\"): FIPS 180-2's example");
	}
}

/* text_find against memmem: random haystacks over a small alphabet (so
 * that matches are dense and straddle the doubling windows), needles cut
 * from them or random, every match of each found in turn. */
static void test_find(void)
{
	static char hay[70000];
	char needle[600];
	size_t bad = 0, found = 0, calls = 0;

	for (int round = 0; round < 400; round++) {
		size_t len = tap_rand() % sizeof(hay), n, from = 0;
		char alpha = (char)(1 + tap_rand() % 3);

		for (size_t i = 0; i < len; i++)
			hay[i] = (char)('a' + tap_rand() % (unsigned)alpha);
		n = 1 + tap_rand() % (round % 4 ? 8 : sizeof(needle));
		if (len >= n && tap_rand() % 2) {
			memcpy(needle, hay + tap_rand() % (len - n + 1), n);
		} else {
			for (size_t i = 0; i < n; i++)
				needle[i] = (char)('a' + tap_rand() % 4);
		}
		for (;;) {
			const char *want = memmem(hay + from, len - from, needle, n);
			const char *got = text_find(hay + from, len - from, needle, n);

			calls++;
			if (want != got) {
				bad++;
				break;
			}
			if (!got)
				break;
			found++;
			from = (size_t)(got - hay) + 1;
		}
	}
	is_int((long long)bad, 0,
	       "text_find agrees with memmem: %zu calls, %zu matches", calls,
	       found);
	ok(text_find("abc", 3, "", 0) != NULL && !text_find("ab", 2, "abc", 3),
	   "text_find: an empty needle is found at once; a longer one never");
}

static void test_parse_uint(void)
{
	static const struct {
		const char *s;
		unsigned long long max;
		bool good;
		unsigned long long want;
	} cases[] = {
	    {"0", 10, true, 0},
	    {"10", 10, true, 10},
	    {"11", 10, false, 0},
	    {"007", 10, true, 7},
	    {"18446744073709551615", ULLONG_MAX, true, ULLONG_MAX},
	    {"18446744073709551616", ULLONG_MAX, false, 0},
	    {"99999999999999999999999999999999", ULLONG_MAX, false, 0},
	    {"", 10, false, 0},
	    {"-1", 10, false, 0},
	    {"+1", 10, false, 0},
	    {" 1", 10, false, 0},
	    {"1 ", 10, false, 0},
	    {"1a", 10, false, 0},
	    {"0x1", 10, false, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned long long x = 12345;
		bool got = text_parse_uint(cases[i].s, cases[i].max, &x);

		ok(got == cases[i].good &&
		       x == (cases[i].good ? cases[i].want : 12345),
		   "text_parse_uint('%s', max %llu): %s", cases[i].s,
		   cases[i].max, cases[i].good ? "taken" : "refused, untouched");
	}
}

/* base64 against OpenSSL's encoder, and the decoder's strictness: a
 * string decodes exactly when it is what encoding its bytes gives. */
static void test_base64(void)
{
	static const char *const refused[] = {
	    "eA=",	 "eA=\n", "e===", "====", "eB==", "eA==eA==", "e", "eA==\n",
	    " eA==", "eA!=",  "e-A=",
	};
	unsigned char data[100], ref[140];
	bool all = true, fuzz = true;
	size_t bad;

	for (size_t len = 0; len <= sizeof(data); len++) {
		struct strbuf std = STRBUF_INIT, url = STRBUF_INIT,
			      back = STRBUF_INIT;
		int n;

		random_bytes(data, len);
		n = EVP_EncodeBlock(ref, data, (int)len);
		base64_encode(&std, data, len, BASE64_STD, true);
		base64_encode(&url, data, len, BASE64_URL, false);
		for (int i = 0; i < n; i++)
			ref[i] = ref[i] == '+' ? '-' : ref[i] == '/' ? '_' : ref[i];
		all &= std.len == (size_t)n &&
		       base64_decode(&back, std.buf ? std.buf : "", std.len,
				     BASE64_STD, true, &bad) == 0 &&
		       back.len == len && !memcmp(back.buf ? back.buf : "", data, len);
		strbuf_reset(&back);
		while (n && ref[n - 1] == '=')
			n--;
		all &= url.len == (size_t)n &&
		       !memcmp(url.buf ? url.buf : "", ref, (size_t)n) &&
		       base64_decode(&back, url.buf ? url.buf : "", url.len,
				     BASE64_URL, false, &bad) == 0 &&
		       back.len == len && !memcmp(back.buf ? back.buf : "", data, len);
		strbuf_release(&std);
		strbuf_release(&url);
		strbuf_release(&back);
	}
	ok(all, "base64: 0 to 100 random bytes encode as OpenSSL's, both "
		"alphabets, and decode back");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct strbuf out = STRBUF_INIT, name = STRBUF_INIT;
		int rc = base64_decode(&out, refused[i], strlen(refused[i]),
				       BASE64_STD, true, &bad);

		text_add_escaped(&name, refused[i], strlen(refused[i]));
		ok(rc < 0, "base64: '%s' refused (at %zu)", strbuf_str(&name),
		   rc < 0 ? bad : 0);
		strbuf_release(&out);
		strbuf_release(&name);
	}
	/* Any string that decodes is its bytes' encoding. */
	for (int i = 0; i < 20000; i++) {
		static const char chars[] = "AQgw+/=-_eA \n";
		struct strbuf out = STRBUF_INIT, again = STRBUF_INIT;
		unsigned char r[13];
		char s[13];
		size_t n;

		random_bytes(r, sizeof(r));
		n = r[0] % 13;
		for (size_t k = 0; k < n; k++)
			s[k] = chars[r[k + 1] % (sizeof(chars) - 1)];
		for (int a = 0; a < 2; a++) {
			strbuf_reset(&out);
			strbuf_reset(&again);
			if (base64_decode(&out, s, n, a, a == BASE64_STD, &bad) < 0)
				continue;
			base64_encode(&again, out.buf ? out.buf : "", out.len, a,
				      a == BASE64_STD);
			fuzz &= again.len == n && !memcmp(again.buf ? again.buf : "", s, n);
		}
		strbuf_release(&out);
		strbuf_release(&again);
	}
	ok(fuzz, "base64: of 20,000 random strings, each one that decodes is "
		 "exactly its bytes' encoding");
}

/*
 * The one grammar of sizes (basic/size.h): its edges as a table, then a
 * fuzz loop against an independent reading of the grammar (a POSIX
 * regular expression, strtoull and 128-bit arithmetic).
 */
static const struct size_bounds mem = {
    .min = 6ull << 20, .max = SIZE_LARGEST, .min_name = "Docker's minimum"};
static const struct size_bounds disk = {
    .min = 16ull << 20, .max = 16ull << 40, .max_name = "ext4's bound"};

/* What the grammar says of s within b, by other means: 0 refused. */
static unsigned long long size_ref(const regex_t *re, const char *s,
				   const struct size_bounds *b)
{
	unsigned __int128 v;
	size_t n = strlen(s);
	int shift = 0;

	if (regexec(re, s, 0, NULL, 0) != 0)
		return 0;
	switch (s[n - 1] | 0x20) {
	case 'k':
		shift = 10;
		break;
	case 'm':
		shift = 20;
		break;
	case 'g':
		shift = 30;
		break;
	}
	v = (unsigned __int128)strtoull(s, NULL, 10) << shift;
	if (v == 0 || v > b->max || v < b->min)
		return 0;
	return (unsigned long long)v;
}

static void test_size_parse(void)
{
	static const struct {
		const char *s;
		const struct size_bounds *b;
		unsigned long long want; /* 0: refused */
		const char *why;	 /* the refusal's words */
	} t[] = {
	    {"2g", &mem, 2ull << 30, NULL},
	    {"512m", &mem, 512ull << 20, NULL},
	    {"512M", &mem, 512ull << 20, NULL},
	    {"6m", &mem, 6ull << 20, NULL},
	    {"6144k", &mem, 6ull << 20, NULL},
	    {"6291456", &mem, 6ull << 20, NULL},
	    {"6291456b", &mem, 6ull << 20, NULL},
	    {"6291455", &mem, 0, "'6291455' is below Docker's minimum of 6m"},
	    {"1k", &mem, 0, "'1k' is below Docker's minimum of 6m"},
	    {"5m", &mem, 0, "below Docker's minimum of 6m"},
	    {"0", &mem, 0, "'0' must be greater than zero"},
	    {"0g", &mem, 0, "'0g' must be greater than zero"},
	    {"000000000000000", &mem, 0, "greater than zero"},
	    {"1.5g", &mem, 0, "'1.5g' is not a size: 1 to 15 digits"},
	    {"1t", &mem, 0, "'1t' is not a size"},
	    {"2gb", &mem, 0, "is not a size"},
	    {"1kib", &mem, 0, "is not a size"},
	    {"", &mem, 0, "'' is not a size"},
	    {"g", &mem, 0, "is not a size"},
	    {"-1g", &mem, 0, "is not a size"},
	    {"+1g", &mem, 0, "is not a size"},
	    {" 2g", &mem, 0, "is not a size"},
	    {"2g ", &mem, 0, "is not a size"},
	    {"2 g", &mem, 0, "is not a size"},
	    {"1e9", &mem, 0, "is not a size"},
	    {"0x10m", &mem, 0, "is not a size"},
	    {"2g\n", &mem, 0, "'2g\\n' is not a size"},
	    {"1000000000000000", &mem, 0, "is not a size"}, /* 16 digits */
	    {"999999999999999", &mem, 999999999999999ull, NULL},
	    {"8589934591g", &mem, 8589934591ull << 30, NULL},
	    {"8589934592g", &mem, 0, "'8589934592g' is too large"},
	    {"999999999999999g", &mem, 0, "is too large"},
	    {"16m", &disk, 16ull << 20, NULL},
	    {"16383k", &disk, 0, "is below the minimum of 16m"},
	    {"16384g", &disk, 16ull << 40, NULL},
	    {"16385g", &disk, 0, "'16385g' is over ext4's bound of 16384g"},
	    {"15t", &disk, 0, "is not a size"},
	    {"1", &size_bytes, 1, NULL},
	    {"1b", &size_bytes, 1, NULL},
	    {"0b", &size_bytes, 0, "greater than zero"},
	};
	char long_in[200];
	regex_t re;
	unsigned seed = 28;
	int wrong = 0, n = 0;

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		unsigned long long v = 77;
		char *why = size_parse(t[i].s, t[i].b, &v);

		if (t[i].want)
			ok(!why && v == t[i].want, "size '%s' is %llu bytes",
			   t[i].s, t[i].want);
		else
			ok(why && v == 77 && strstr(why, t[i].why),
			   "size #%zu refused: %s", i, t[i].why);
		free(why);
	}
	memset(long_in, '7', sizeof(long_in) - 1);
	long_in[sizeof(long_in) - 1] = '\0';
	{
		char *why = size_parse(long_in, &mem, &(unsigned long long){0});

		ok(why && strstr(why, "...' is not a size") &&
		       strlen(why) < 160,
		   "a long value is refused, cut in the message");
		free(why);
	}

	/* Fuzz: strings of the characters that matter, and numbers near
	 * every bound, against the reference. */
	if (regcomp(&re, "^[0-9]{1,15}[bkmgBKMG]?$", REG_EXTENDED | REG_NOSUB))
		bail_out("regcomp");
	for (int i = 0; i < 200000; i++) {
		static const char alphabet[] = "0123456789bkmgtBKMG. -+xe\xff";
		const struct size_bounds *b = i % 3 == 0	 ? &mem
					      : i % 3 == 1 ? &disk
							   : &size_bytes;
		char s[24];
		size_t len = (size_t)(rand_r(&seed) % 19);
		unsigned long long v = 0, want;
		char *why;

		if (i % 4 == 0) {
			/* A number of 1 to 18 digits, often of a unit. */
			snprintf(s, sizeof(s), "%llu%s",
				 ((unsigned long long)rand_r(&seed) << 31 |
				  (unsigned)rand_r(&seed)) >>
				     (rand_r(&seed) % 62),
				 (const char *[]){"", "k", "m", "G", "t"}
				     [rand_r(&seed) % 5]);
		} else {
			for (size_t k = 0; k < len; k++)
				s[k] = alphabet[(size_t)rand_r(&seed) %
						(sizeof(alphabet) - 1)];
			s[len] = '\0';
		}
		want = size_ref(&re, s, b);
		why = size_parse(s, b, &v);
		n++;
		if (want ? (why || v != want) : (!why || why[0] != '\'')) {
			if (wrong++ < 5)
				diag("'%s': %s, %llu; want %llu", s,
				     why ? why : "taken", v, want);
		}
		free(why);
	}
	regfree(&re);
	is_int(wrong, 0, "size_parse agrees with the grammar's reference "
			 "on %d fuzzed values",
	       n);

	/* size_format gives what size_parse reads back. */
	wrong = 0;
	for (int i = 0; i < 10000; i++) {
		unsigned long long x =
		    ((unsigned long long)rand_r(&seed) % 1000000 + 1)
		    << (10 * (rand_r(&seed) % 4));
		char buf[SIZE_FORMAT_MAX];
		unsigned long long back = 0;
		char *why;

		size_format(x, buf);
		why = size_parse(buf, &size_bytes, &back);
		wrong += why || back != x;
		free(why);
	}
	is_int(wrong, 0, "size_format reads back as the same size");
	{
		char buf[SIZE_FORMAT_MAX];

		size_format(6ull << 20, buf);
		is_str(buf, "6m", "6 MiB formats as 6m");
		size_format(16ull << 40, buf);
		is_str(buf, "16384g", "16 TiB formats as 16384g");
		size_format(1000, buf);
		is_str(buf, "1000", "1000 bytes format as 1000");
	}
}

int main(void)
{
	xjson_init();
	test_sizes();
	test_strbuf();
	test_utf8();
	test_text();
	test_decode();
	test_find();
	test_xjson();
	test_hash();
	test_parse_uint();
	test_base64();
	test_size_parse();
	return done_testing();
}

/*
 * t-stream.c - the engine's streamed replies, cut anywhere: the line
 * splitter gives the same lines whatever the pieces, keeps memory bounded
 * on a runaway line, and the stream decoder finds the step, the output
 * that led to a failure and the error line of a real `docker build` reply
 * (recorded from Docker 20.10: a RUN that exits 7 still answers HTTP 200).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/engine.h"
#include "basic/lines.h"
#include "tap.h"
#include "basic/util.h"

struct got {
	struct strbuf text; /* lines joined with '|', truncated ones marked */
	size_t n;
};

static void collect(void *ctx, const char *line, size_t len, bool truncated)
{
	struct got *g = ctx;
	if (strlen(line) != len)
		strbuf_addstr(&g->text, "[len mismatch]");
	strbuf_add(&g->text, line, len);
	strbuf_addstr(&g->text, truncated ? "~|" : "|");
	g->n++;
}

/* Feed data in pieces of the given sizes (cycled), return the lines. */
static char *split(const char *data, size_t len, size_t max,
		   const size_t *pieces, size_t npieces)
{
	struct got g = {STRBUF_INIT, 0};
	struct lines l;
	size_t at = 0, k = 0;

	lines_init(&l, max, collect, &g);
	while (at < len) {
		size_t n = pieces[k++ % npieces];
		if (n > len - at)
			n = len - at;
		lines_feed(&l, data + at, n);
		at += n;
	}
	lines_finish(&l);
	lines_release(&l);
	return strbuf_detach(&g.text, NULL);
}

static void test_lines(void)
{
	static const char in[] = "a\nbb\r\n\nccc\r\r\nlast";
	static const char want[] = "a|bb||ccc\r|last|";
	size_t one = 1, whole = sizeof(in) - 1;
	char *got;
	bool all_same = true;

	got = split(in, whole, 100, &whole, 1);
	is_str(got, want, "lines: one piece");
	free(got);
	got = split(in, whole, 100, &one, 1);
	is_str(got, want, "lines: a byte at a time");
	free(got);
	/* Every cut into two pieces. */
	for (size_t cut = 0; cut <= whole; cut++) {
		size_t pieces[2] = {cut ? cut : whole, whole};
		got = split(in, whole, 100, pieces, 2);
		if (strcmp(got, want) != 0) {
			diag("cut at %zu: %s", cut, got);
			all_same = false;
		}
		free(got);
	}
	ok(all_same, "lines: the same lines for every cut into two pieces");

	got = split("abcdefgh\nxy\nabcd\n", 17, 4, &one, 1);
	is_str(got, "abcd~|xy|abcd|",
	       "lines: a line over the cap is cut and marked");
	free(got);
	got = split("", 0, 4, &one, 1);
	is_str(got, "", "lines: nothing in, nothing out");
	free(got);
	got = split("\n", 1, 4, &one, 1);
	is_str(got, "|", "lines: one empty line");
	free(got);
}

static void test_bounded(void)
{
	struct got g = {STRBUF_INIT, 0};
	struct lines l;
	char chunk[4096];
	size_t peak = 0;

	/* 64 MiB without a newline, then a short line. */
	memset(chunk, 'x', sizeof(chunk));
	lines_init(&l, 1024, collect, &g);
	for (int i = 0; i < 16384; i++) {
		lines_feed(&l, chunk, sizeof(chunk));
		if (l.buf.alloc > peak)
			peak = l.buf.alloc;
	}
	lines_feed(&l, "\nok\n", 4);
	lines_finish(&l);
	ok(peak <= 2048, "lines: 64 MiB on one line holds at most 2 KiB (%zu)",
	   peak);
	is_int((long long)g.n, 2, "lines: the runaway line and the next one");
	ok(g.text.len > 4 && strcmp(g.text.buf + g.text.len - 4, "|ok|") == 0,
	   "lines: the line after a runaway one is whole");
	lines_release(&l);
	strbuf_release(&g.text);
}

static void test_utf8(void)
{
	is_int((long long)utf8_whole("abc", 3), 3, "utf8_whole: ASCII");
	is_int((long long)utf8_whole("a\xc3\xa9", 3), 3,
	       "utf8_whole: whole 2-byte");
	is_int((long long)utf8_whole("a\xc3", 2), 1, "utf8_whole: cut 2-byte");
	is_int((long long)utf8_whole("a\xe2\x9c", 3), 1,
	       "utf8_whole: cut 3-byte");
	is_int((long long)utf8_whole("a\xf0\x9f\x98\x80", 5), 5,
	       "utf8_whole: whole 4-byte");
	is_int((long long)utf8_whole("a\xf0\x9f\x98", 4), 1,
	       "utf8_whole: cut 4-byte");
}

/* A recorded reply to POST /build whose third step exits 7. */
static const char build_fail[] =
    "{\"stream\":\"Step 1/3 : FROM sbxcat-test/busybox:1\"}\r\n"
    "{\"stream\":\"\\n\"}\r\n"
    "{\"stream\":\" ---\\u003e 98813ff2e732\\n\"}\r\n"
    "{\"stream\":\"Step 2/3 : RUN echo hello; echo world \\u003e\\u00262\"}\r\n"
    "{\"stream\":\"\\n\"}\r\n"
    "{\"stream\":\" ---\\u003e [Warning] IPv4 forwarding is disabled. "
    "Networking will not work.\\n\"}\r\n"
    "{\"stream\":\" ---\\u003e Running in 8c65ece80b1c\\n\"}\r\n"
    "{\"stream\":\"hello\\n\"}\r\n"
    "{\"stream\":\"\\u001b[91mworld\\n\\u001b[0m\"}\r\n"
    "{\"stream\":\"Removing intermediate container 8c65ece80b1c\\n\"}\r\n"
    "{\"stream\":\" ---\\u003e 558053a5d0f5\\n\"}\r\n"
    "{\"stream\":\"Step 3/3 : RUN echo about to fail; exit 7\"}\r\n"
    "{\"stream\":\"\\n\"}\r\n"
    "{\"stream\":\" ---\\u003e Running in f4e58116e71f\\n\"}\r\n"
    "{\"stream\":\"about \"}\r\n"
    "{\"stream\":\"to fail\\n\\tcaf\\u00e9\\n\"}\r\n"
    "{\"stream\":\"Removing intermediate container f4e58116e71f\\n\"}\r\n"
    "{\"errorDetail\":{\"code\":7,\"message\":\"The command '/bin/sh -c echo "
    "about to fail; exit 7' returned a non-zero code: 7\"},\"error\":\"The "
    "command '/bin/sh -c echo about to fail; exit 7' returned a non-zero "
    "code: 7\"}\r\n";

struct seen {
	int steps;
	size_t lines;
};

static void seen_step(void *ctx, int step, int nsteps, const char *text)
{
	((struct seen *)ctx)->steps++;
}

static void seen_line(void *ctx, const char *line)
{
	((struct seen *)ctx)->lines++;
}

/* Decode data in pieces of size piece; a summary of what was found. */
static char *decode(const char *data, size_t len, size_t piece,
		    struct seen *seen)
{
	struct engine_stream s;
	struct strbuf sb = STRBUF_INIT;

	engine_stream_init(&s);
	s.on_step = seen_step;
	s.on_line = seen_line;
	s.ctx = seen;
	for (size_t at = 0; at < len; at += piece)
		engine_stream_feed(&s, data + at,
				   piece < len - at ? piece : len - at);
	engine_stream_finish(&s);
	strbuf_addf(&sb, "step %d/%d : %s\n", s.step, s.nsteps, s.step_text);
	for (size_t i = 0; i < s.tail.n; i++)
		strbuf_addf(&sb, "| %s\n", engine_tail_line(&s.tail, i));
	strbuf_addf(&sb, "error: %s\nbad: %llu\n", s.error ? s.error : "(none)",
		    s.bad_lines);
	engine_stream_release(&s);
	return strbuf_detach(&sb, NULL);
}

static void test_build_stream(void)
{
	static const char want[] =
	    "step 3/3 : RUN echo about to fail; exit 7\n"
	    "| about to fail\n"
	    "|  caf\xc3\xa9\n"
	    "error: The command '/bin/sh -c echo about to fail; exit 7' "
	    "returned a non-zero code: 7\n"
	    "bad: 0\n";
	size_t len = sizeof(build_fail) - 1;
	struct seen seen = {0, 0};
	char *got = decode(build_fail, len, len, &seen);
	bool all_same = true;

	is_str(got, want,
	       "build stream: the failing step, its output, the error");
	is_int(seen.steps, 3, "build stream: on_step for each step");
	is_int(
	    (long long)seen.lines, 4,
	    "build stream: on_line for output, not the builder's bookkeeping");
	free(got);
	for (size_t piece = 1; piece <= 64; piece++) {
		got = decode(build_fail, len, piece, &seen);
		if (strcmp(got, want) != 0) {
			diag("pieces of %zu:\n%s", piece, got);
			all_same = false;
		}
		free(got);
	}
	ok(all_same, "build stream: the same for pieces of every size 1..64");
}

static void test_other_streams(void)
{
	static const char ok_build[] =
	    "{\"stream\":\"Step 1/1 : FROM x\\n\"}\n"
	    "{\"aux\":{\"ID\":\"sha256:abc\"}}\n"
	    "{\"stream\":\"Successfully built abc\\n\"}\n"
	    "not json at all\n";
	static const char pull_fail[] =
	    "{\"status\":\"Pulling from library/busybox\",\"id\":\"1.36\"}\n"
	    "{\"status\":\"Downloading\",\"progressDetail\":{\"current\":1},"
	    "\"progress\":\"[=\\u003e  ] 1B/2B\",\"id\":\"abc\"}\n"
	    "{\"errorDetail\":{\"message\":\"manifest unknown\"},"
	    "\"error\":\"manifest unknown\"}\n";
	struct seen seen = {0, 0};
	struct strbuf big = STRBUF_INIT;
	struct strbuf many = STRBUF_INIT;
	char *got;

	got = decode(ok_build, sizeof(ok_build) - 1, 7, &seen);
	is_str(got, "step 1/1 : FROM x\nerror: (none)\nbad: 1\n",
	       "a successful build: no error, the builder's lines not output");
	free(got);
	got = decode(pull_fail, sizeof(pull_fail) - 1, 5, &seen);
	is_str(got,
	       "step 0/0 : \n| 1.36: Pulling from library/busybox\n"
	       "| abc: Downloading [=>  ] 1B/2B\nerror: manifest unknown\n"
	       "bad: 0\n",
	       "a failed pull: status lines and the error");
	free(got);

	/* A message over the 1 MiB cap is skipped, and said so. */
	strbuf_addstr(&big, "{\"stream\":\"");
	for (int i = 0; i < (1 << 21) / 64; i++)
		strbuf_addstr(&big, "0123456789012345678901234567890123456789"
				    "012345678901234567890123");
	strbuf_addstr(&big, "\\n\"}\n{\"stream\":\"after\\n\"}\n");
	got = decode(big.buf, big.len, 65536, &seen);
	is_str(
	    got,
	    "step 0/0 : \n| [sbxcat: a line of over 1 MiB from the engine was "
	    "skipped]\n| after\nerror: (none)\nbad: 1\n",
	    "a runaway line is skipped, the next one is read");
	free(got);

	/* The tail keeps the last lines only, and long lines are cut. */
	strbuf_addstr(&many, "{\"stream\":\"Step 1/1 : RUN x\\n\"}\n");
	for (int i = 0; i < 1000; i++)
		strbuf_addf(&many, "{\"stream\":\"line %d\\n\"}\n", i);
	strbuf_addstr(&many, "{\"stream\":\"");
	for (int i = 0; i < 500; i++)
		strbuf_addstr(&many, "\\u00e9");
	strbuf_addstr(&many, "\\n\"}\n");
	got = decode(many.buf, many.len, 100, &seen);
	/* 19 numbered lines and the long one. */
	ok(strstr(got, "| line 981\n") && !strstr(got, "| line 980\n"),
	   "the tail holds the last %d lines", ENGINE_TAIL_LINES);
	ok(strstr(got, "\xc3\xa9...\n") != NULL,
	   "a long line is cut at a character boundary and marked");
	free(got);
	strbuf_release(&big);
	strbuf_release(&many);
}

/* Does s hold a control character, a bidi control or invalid UTF-8? */
static bool unsafe(const char *s)
{
	size_t len = strlen(s);
	uint32_t cp;

	if (utf8_first_invalid(s, len) >= 0 || text_find_control(s, len, &cp))
		return true;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_decode(s + i, len - i, &cp);
		if (text_is_bidi(cp))
			return true;
		i += n ? n : 1;
	}
	return false;
}

/*
 * Hostile output from a RUN step: C1 controls as UTF-8 (U+0080-U+009F),
 * a raw 0x9B (CSI to some terminals), ESC sequences, an OSC, bidi
 * overrides.  Nothing of them reaches a line, the step text or the error,
 * whatever else is in the line and however it is cut.
 */
static const char *const hostile[] = {
    "\xc2\x9b"
    "31mred",
    "\x1b[2J\x1b[H",
    "\x1b]0;title\x07",
    "\x1b]8;;http://x\x1b\\",
    "\xc2\x85"
    "next",
    "\xe2\x80\xae"
    "evil",
    "\xe2\x81\xa6"
    "iso",
    "\xc2\x90"
    "dcs\xc2\x9c",
    "\x1bPq\x1b\\",
    "a\rb",
    "tab\there",
    "\xc2\x80\xc2\x9f",
    "\x7f"
    "del",
};

static void test_hostile(void)
{
	bool clean = true, shown = true;
	unsigned seed = 7;

	for (int round = 0; round < 300; round++) {
		struct engine_stream s;
		struct strbuf raw = STRBUF_INIT, stream = STRBUF_INIT;
		json_t *j;
		char *js;
		size_t piece = 1 + (seed = seed * 1103515245 + 12345) % 97;

		/* A few hostile pieces, with words between them. */
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245 + 12345;
			strbuf_addstr(
			    &raw, hostile[(seed >> 8) % (sizeof(hostile) /
							 sizeof(hostile[0]))]);
			strbuf_addstr(&raw, " word ");
		}
		j = json_pack("{s:s%}", "stream", raw.buf, raw.len);
		js = json_dumps(j, JSON_COMPACT);
		strbuf_addf(&stream,
			    "{\"stream\":\"Step 1/1 : RUN x\\n\"}\n%s\n", js);
		free(js);
		json_decref(j);
		j = json_pack("{s:s%}", "error", raw.buf, raw.len);
		js = json_dumps(j, JSON_COMPACT);
		strbuf_addf(&stream, "%s\n", js);
		free(js);
		json_decref(j);

		engine_stream_init(&s);
		for (size_t at = 0; at < stream.len; at += piece)
			engine_stream_feed(
			    &s, stream.buf + at,
			    piece < stream.len - at ? piece : stream.len - at);
		engine_stream_finish(&s);
		for (size_t i = 0; i < s.tail.n; i++) {
			const char *l = engine_tail_line(&s.tail, i);
			if (unsafe(l)) {
				diag("unsafe output line: %s", l);
				clean = false;
			}
			shown = shown && strstr(l, "word") != NULL;
		}
		if (!s.error || unsafe(s.error) || unsafe(s.step_text)) {
			diag("unsafe error: %s", s.error ? s.error : "(none)");
			clean = false;
		}
		engine_stream_release(&s);
		strbuf_release(&raw);
		strbuf_release(&stream);
	}
	/* A raw 0x9B is not valid UTF-8: JSON cannot carry it, a line can. */
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		char out[ENGINE_TAIL_WIDTH];
		cleanup_free char *in = xasprintf("%s\x9b[2J%s", hostile[i],
						  hostile[i]);
		engine_clean_line(out, sizeof(out), in, strlen(in), false);
		if (unsafe(out)) {
			diag("unsafe clean line: %s", out);
			clean = false;
		}
	}
	ok(clean, "hostile output: no control, C1, bidi or invalid byte in "
		  "the tail or the error (300 mixes, cut anywhere)");
	ok(shown, "hostile output: the text around the controls is kept");
}

/* A RUN can print "Successfully built X": nothing of it is kept. */
static void test_spoofed_id(void)
{
	static const char spoof[] =
	    "{\"stream\":\"Step 1/2 : RUN echo Successfully built "
	    "deadbeef\\n\"}\n"
	    "{\"stream\":\"Successfully built deadbeef\\n\"}\n"
	    "{\"aux\":{\"ID\":\"sha256:deadbeef\"}}\n"
	    "{\"stream\":\"Step 2/2 : LABEL x=y\\n\"}\n"
	    "{\"stream\":\"Successfully built 0123456789ab\\n\"}\n";
	struct seen seen = {0, 0};
	char *got = decode(spoof, sizeof(spoof) - 1, 3, &seen);

	is_str(got, "step 2/2 : LABEL x=y\nerror: (none)\nbad: 0\n",
	       "a spoofed 'Successfully built' changes nothing the decoder "
	       "keeps");
	free(got);
}

int main(void)
{
	test_lines();
	test_bounded();
	test_utf8();
	test_build_stream();
	test_other_streams();
	test_hostile();
	test_spoofed_id();
	return done_testing();
}

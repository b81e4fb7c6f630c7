/*
 * t-audit.c - the audit's rows (audit.h): op names, UUIDs (format, the
 * version and variant bits, no duplicate in 100,000), audit_clean on hand
 * cases and fuzzed bytes (valid UTF-8, no control character, within max,
 * idempotent), JSON round trips of fuzzed rows, from_json refusing
 * each broken key, and the chain's encoding of version 1, pinned.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/alloc.h"
#include "audit/audit.h"
#include "basic/error.h"
#include "tap.h"
#include "basic/text.h"
#include "basic/xjson.h"

static void test_ops(void)
{
	bool all = true;

	for (int i = 0; i < AUDIT_NOPS; i++)
		all &= audit_op_parse(audit_op_name((enum audit_op)i)) == i;
	ok(all, "every op name parses back to its op");
	is_str(audit_op_name(AUDIT_READ_BYTES), "read_bytes", "read_bytes");
	is_str(audit_op_name(AUDIT_REAP), "reap", "reap is the last op");
	ok(audit_op_name(AUDIT_NOPS) == NULL, "no name past the last op");
	is_int(audit_op_parse("Write"), -1, "op names are exact");
	is_int(audit_op_parse("writes"), -1, "no prefix match");
	is_str(audit_op_name(AUDIT_REMOVE), "remove",
	       "remove: an op of its own");
	/* --op takes the names the service's events give (issue 29) */
	is_int(audit_op_parse("exec"), -1, "exec is not the audit's name");
	is_int(audit_op_parse_alias("exec"), AUDIT_EXECUTE, "exec: execute");
	is_int(audit_op_parse_alias("ls"), AUDIT_LS_INFO, "ls: ls_info");
	is_int(audit_op_parse_alias("glob"), AUDIT_GLOB_INFO,
	       "glob: glob_info");
	is_int(audit_op_parse_alias("grep"), AUDIT_GREP_RAW, "grep: grep_raw");
	is_int(audit_op_parse_alias("exists"), AUDIT_STAT, "exists: stat");
	is_int(audit_op_parse_alias("execute"), AUDIT_EXECUTE,
	       "the audit's own names too");
	is_int(audit_op_parse_alias("Exec"), -1, "aliases are exact");
	is_int(audit_op_parse_alias("rm"), -1, "rm is no alias (remove)");
}

static int cmp_id(const void *a, const void *b)
{
	return memcmp(a, b, 36);
}

static void test_uuid(void)
{
	enum { N = 100000 };
	char(*ids)[37] = xmalloc(sizeof(*ids) * N);
	bool shape = true, dup = false;

	for (int i = 0; i < N; i++) {
		struct audit_row r;

		audit_row_init(&r, AUDIT_READ);
		memcpy(ids[i], r.id, 37);
		audit_row_release(&r);
		for (int k = 0; k < 36 && shape; k++) {
			char c = ids[i][k];

			if (k == 8 || k == 13 || k == 18 || k == 23)
				shape = c == '-';
			else
				shape = (c >= '0' && c <= '9') ||
					(c >= 'a' && c <= 'f');
		}
		shape = shape && ids[i][36] == '\0' && ids[i][14] == '4' &&
			strchr("89ab", ids[i][19]) != NULL;
		if (!shape) {
			diag("bad id: %s", ids[i]);
			break;
		}
	}
	ok(shape, "100000 ids: lowercase 8-4-4-4-12 hex, version 4, "
		  "variant 10xx");
	qsort(ids, N, sizeof(*ids), cmp_id);
	for (int i = 1; i < N && !dup; i++)
		dup = !memcmp(ids[i - 1], ids[i], 36);
	ok(!dup, "no duplicate among 100000 ids");
	free(ids);
}

static void test_init(void)
{
	struct audit_row r;
	struct sbx_error *err = NULL;

	audit_row_init(&r, AUDIT_EXECUTE);
	ok(r.created_us > 1700000000LL * 1000000, "created_us is now");
	ok(!strcmp(r.tenant, "") && !strcmp(r.target, "") &&
	       !strcmp(r.detail, "") && r.agent == NULL && r.run == NULL,
	   "strings empty, agent and run NULL");
	ok(r.bytes == AUDIT_NONE && r.results == AUDIT_NONE && !r.has_exit,
	   "bytes, results not counted, no exit status");
	ok(audit_row_check(&r, &err) == 0, "a new row checks");
	sbx_error_free(&err);
	audit_row_release(&r);
}

/* What cleaner (audit_clean, audit_clean_tail) makes of in. */
static void cleaned_is(void (*cleaner)(struct strbuf *, const char *, size_t,
				       size_t),
		       const char *what, const char *in, size_t len, size_t max,
		       const char *want, const char *name)
{
	struct strbuf sb = STRBUF_INIT;

	cleaner(&sb, in, len, max);
	is_str(sb.buf ? sb.buf : "", want, "%s: %s", what, name);
	if (sb.buf)
		ok(utf8_chars(sb.buf, sb.len) <= max &&
		       audit_is_clean(sb.buf, max),
		   "%s: %s: clean, within %zu characters", what, name, max);
	strbuf_release(&sb);
}

static void clean_is(const char *in, size_t len, size_t max, const char *want,
		     const char *name)
{
	cleaned_is(audit_clean, "clean", in, len, max, want, name);
}

static void tail_is(const char *in, size_t len, size_t max, const char *want,
		    const char *name)
{
	cleaned_is(audit_clean_tail, "tail", in, len, max, want, name);
}

/* Targets keep their end when cut (issue 16 item 6). */
static void test_clean_tail(void)
{
	struct strbuf big = STRBUF_INIT, got = STRBUF_INIT;

	tail_is("a/b.txt", 7, 512, "a/b.txt", "a short target as it is");
	tail_is("0123456789a", 11, 10, "[cut] 789a", "max + 1: the end kept");
	tail_is("0123456789", 10, 10, "0123456789", "exactly max: kept");
	tail_is("zzzzzz\x01"
		"ab",
		9, 12, "zzzzzz\\x01ab", "an escape that fits");
	tail_is("zzzz\x01"
		"ab",
		7, 9, "[cut] ab", "an escape straddling the cut goes whole");
	tail_is("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
		22, 10, "[cut] \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
		"multibyte characters counted as characters");
	/* 300 "./" then a name, as typed (the path check normalises it
	 * first; this is what a command line of such words keeps). */
	for (int i = 0; i < 300; i++)
		strbuf_addstr(&big, "./");
	strbuf_addstr(&big, "secrets.env");
	audit_clean_tail(&got, big.buf, big.len, AUDIT_TARGET_MAX);
	ok(got.len == AUDIT_TARGET_MAX && strncmp(got.buf, "[cut] ", 6) == 0 &&
	       strcmp(got.buf + got.len - 11, "secrets.env") == 0,
	   "611 characters: '[cut] ' and the last 506, the name kept");
	/* Megabytes in: only the last 4 * max bytes are looked at, and a
	 * window starting inside a character is moved to its next one. */
	strbuf_reset(&big);
	for (int i = 0; i < 1 << 20; i++)
		strbuf_addstr(&big, "\xe2\x82\xac"); /* the euro sign */
	strbuf_reset(&got);
	audit_clean_tail(&got, big.buf, big.len, 100);
	ok(got.len == 6 + 94 * 3 && audit_is_clean(got.buf, 100),
	   "3 MiB of 3-byte characters: 94 of them kept, clean (%zu bytes)",
	   got.len);
	strbuf_release(&big);
	strbuf_release(&got);
}

static void test_clean_cases(void)
{
	char buf[64];

	clean_is("plain/path.txt", 14, 512, "plain/path.txt",
		 "clean unchanged");
	/* A backslash is escaped, so a stored string says one input
	 * (issue 29): a tab and a backslash followed by t differ. */
	clean_is("a\\b", 3, 512, "a\\\\b", "a backslash: \\\\");
	clean_is("tab\there.txt", 12, 512, "tab\\there.txt", "a tab: \\t");
	clean_is("tab\\there.txt", 13, 512, "tab\\\\there.txt",
		 "a backslash and t: \\\\t, not \\t");
	clean_is("\\x41", 4, 512, "\\\\x41", "a name spelling an escape");
	ok(!audit_is_clean("a\\b", 512) && !audit_is_clean("a\\", 512) &&
	       !audit_is_clean("\\x4", 512) && !audit_is_clean("\\x41", 512) &&
	       !audit_is_clean("\\u0041", 512) &&
	       !audit_is_clean("\\u202E", 512) &&
	       !audit_is_clean("\\xC3", 512) && !audit_is_clean("a\tb", 512),
	   "not clean: a lone backslash, an escape clean would not write, a "
	   "raw tab");
	ok(audit_is_clean("a\\\\b", 512) && audit_is_clean("\\u202e", 512) &&
	       audit_is_clean("\\x00\\n", 512),
	   "clean: the escapes clean writes");
	ok(audit_is_plain("a\\b", 512) && !audit_is_plain("a\tb", 512) &&
	       !audit_is_plain("\xff", 512) && !audit_is_plain("abc", 2),
	   "plain (ids, rows of version 1): backslash as it is, no control, "
	   "within max");
	clean_is("a\nb\tc\rd", 7, 512, "a\\nb\\tc\\rd", "line breaks, tab");
	clean_is("a\0b", 3, 512, "a\\x00b", "NUL");
	clean_is("\x1b[31mred", 8, 512, "\\x1b[31mred", "ESC");
	clean_is("x\x7fy", 3, 512, "x\\x7fy", "DEL");
	clean_is("\xc2\x9b"
		 "2J",
		 4, 512, "\\u009b2J", "C1 CSI");
	clean_is("a\xe2\x80\xae"
		 "evil",
		 8, 512, "a\\u202eevil", "RLO");
	clean_is("\xe2\x81\xa6x", 4, 512, "\\u2066x", "LRI");
	clean_is("ok\xffno", 5, 512, "ok\\xffno", "invalid byte");
	clean_is("\xc3", 1, 512, "\\xc3", "sequence cut short");
	clean_is("\xc0\xaf", 2, 512, "\\xc0\\xaf", "overlong /");
	clean_is("\xed\xa0\x80", 3, 512, "\\xed\\xa0\\x80", "surrogate");
	clean_is("caf\xc3\xa9", 5, 512, "caf\xc3\xa9", "é kept");

	/* exactly max, max + 1 */
	clean_is("0123456789", 10, 10, "0123456789", "exactly max: not cut");
	clean_is("0123456789a", 11, 10, "0123 [cut]", "max + 1: cut to max");
	/* multibyte characters count as one each */
	clean_is("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		 "\xc3\xa9\xc3\xa9\xc3\xa9",
		 20, 10,
		 "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3"
		 "\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
		 "10 two-byte characters: max, not cut");
	clean_is("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x82\xac\xf0\x9f\x98"
		 "\x80xyzwv",
		 20, 10, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 [cut]",
		 "cut next to multibyte characters: whole ones kept");
	/* the cut next to an escape: it goes whole */
	clean_is("abc\x01zzzzzzz", 11, 10, "abc [cut]",
		 "an escape that would straddle the mark goes whole");
	clean_is("abcd\x01zzzzzz", 11, 10, "abcd [cut]",
		 "an escape just past the kept part goes");
	clean_is("\x01zzzzzzzzz", 10, 10, "\\x01 [cut]",
		 "an escape that fits before the mark stays whole");
	clean_is("\xe2\x80\xae"
		 "abcdefgh",
		 11, 12, "\\u202e [cut]", "a bidi escape fits exactly");
	clean_is("a\xe2\x80\xae"
		 "abcdefgh",
		 12, 12, "a [cut]",
		 "a bidi escape that would straddle goes whole");
	/* an escape that makes the string longer than max */
	clean_is("\x01\x02\x03", 3, 10, "\\x01 [cut]",
		 "three escapes are 12 characters: cut");
	memset(buf, 'x', 6);
	clean_is(buf, 6, 6, "xxxxxx", "max 6, 6 characters");
	clean_is("xxxxxxx", 7, 6, " [cut]", "max 6, 7 characters: the mark");
}

/* Random bytes, biased toward what matters: controls, bidi, multibyte,
 * invalid sequences, backslashes. */
static size_t random_bytes(char *buf, size_t cap)
{
	static const char *const pieces[] = {
	    "\xc3\xa9",	    "\xe2\x82\xac", "\xf0\x9f\x98\x80",
	    "\xe2\x80\xae", "\xe2\x81\xa9", "\xc2\x85",
	    "\xc2\x9b",	    "\\",	    "\\x41",
	    "\n",	    "\x1b",	    "\xff",
	    "\xc3",	    "\xe2\x82",	    "\xed\xa0\x80",
	    " [cut]",	    "\"",
	};
	size_t n = tap_rand() % cap, len = 0;

	while (len < n) {
		uint32_t k = tap_rand() % 4;

		if (k == 0) {
			const char *p =
			    pieces[tap_rand() %
				   (sizeof(pieces) / sizeof(pieces[0]))];
			size_t pl = strlen(p);

			if (len + pl > n)
				break;
			memcpy(buf + len, p, pl);
			len += pl;
		} else if (k == 1) {
			buf[len++] = (char)(tap_rand() & 0xFF);
		} else {
			buf[len++] = (char)(0x20 + tap_rand() % 0x5F);
		}
	}
	return len;
}

static void test_clean_fuzz(void)
{
	enum { N = 30000 };
	char buf[1200];
	size_t bad_utf8 = 0, bad_ctl = 0, bad_len = 0, bad_idem = 0,
	       bad_exact = 0, bad_inj = 0;
	struct strbuf prev = STRBUF_INIT, prev_in = STRBUF_INIT;

	for (int i = 0; i < N; i++) {
		struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
		size_t len = random_bytes(buf, sizeof(buf));
		size_t max = 6 + tap_rand() % 600, chars;
		uint32_t cp;

		audit_clean(&a, buf, len, max);
		if (!a.buf)
			strbuf_addstr(&a, "");
		if (utf8_first_invalid(a.buf, a.len) >= 0)
			bad_utf8++;
		for (size_t k = 0; k < a.len;) {
			size_t m = utf8_decode(a.buf + k, a.len - k, &cp);

			if (m == 0)
				break;
			if (text_is_control(cp) || text_is_bidi(cp)) {
				bad_ctl++;
				break;
			}
			k += m;
		}
		chars = utf8_chars(a.buf, a.len);
		if (chars > max)
			bad_len++;
		/* Cut when the whole would be longer than max: then the kept
		 * part is the whole's beginning, then the mark, max
		 * characters or short only by an escape's width (< 6). */
		{
			struct strbuf full = STRBUF_INIT;

			audit_clean(&full, buf, len, SIZE_MAX);
			if (!full.buf)
				strbuf_addstr(&full, "");
			if (utf8_chars(full.buf, full.len) > max) {
				if (a.len < 6 ||
				    memcmp(a.buf + a.len - 6, " [cut]", 6) ||
				    chars + 5 < max ||
				    memcmp(a.buf, full.buf, a.len - 6))
					bad_exact++;
			} else if (a.len != full.len ||
				   memcmp(a.buf, full.buf, a.len)) {
				bad_exact++;
			}
			strbuf_release(&full);
		}
		/* What is stored checks as clean (audit_is_clean undoes
		 * the escapes and cleans again). */
		a.buf[a.len] = '\0'; /* an empty clean grew, not ended */
		if (!audit_is_clean(a.buf, max) && !bad_idem++) {
			struct strbuf e = STRBUF_INIT;

			text_add_escaped(&e, a.buf, a.len);
			diag("not clean (max %zu): '%s'", max, e.buf);
			strbuf_release(&e);
		}
		/* One output, one input: two inputs not cut never clean to
		 * the same bytes (the previous one and a copy with each
		 * backslash made a tab or a tab a backslash). */
		audit_clean(&b, buf, len, SIZE_MAX);
		{
			struct strbuf sw = STRBUF_INIT, c = STRBUF_INIT;

			strbuf_add(&sw, buf, len);
			for (size_t k = 0; k < sw.len; k++)
				if (sw.buf[k] == '\\')
					sw.buf[k] = '\t';
				else if (sw.buf[k] == '\t')
					sw.buf[k] = '\\';
			audit_clean(&c, sw.buf ? sw.buf : "", sw.len, SIZE_MAX);
			if ((sw.len != len || memcmp(sw.buf, buf, len)) &&
			    c.len == b.len && !memcmp(c.buf, b.buf, b.len))
				bad_inj++;
			if (prev_in.len &&
			    (prev_in.len != len ||
			     memcmp(prev_in.buf, buf, len)) &&
			    prev.len == b.len &&
			    !memcmp(prev.buf, b.buf ? b.buf : "", b.len))
				bad_inj++;
			strbuf_release(&sw);
			strbuf_release(&c);
		}
		strbuf_reset(&prev);
		strbuf_add(&prev, b.buf ? b.buf : "", b.len);
		strbuf_reset(&prev_in);
		strbuf_add(&prev_in, buf, len);
		strbuf_release(&a);
		strbuf_release(&b);
	}
	is_int((long long)bad_utf8, 0, "fuzz: output always valid UTF-8");
	is_int((long long)bad_ctl, 0, "fuzz: no control or bidi character");
	is_int((long long)bad_len, 0, "fuzz: never over max characters");
	is_int(
	    (long long)bad_exact, 0,
	    "fuzz: cut only when longer than max, then the beginning and the "
	    "mark, max characters or at most 5 fewer");
	is_int((long long)bad_idem, 0, "fuzz: what clean makes is clean");
	is_int((long long)bad_inj, 0,
	       "fuzz: different inputs (tabs and backslashes swapped) clean "
	       "to different bytes");
	strbuf_release(&prev);
	strbuf_release(&prev_in);
}

static char *random_text(size_t max)
{
	char buf[2400];
	struct strbuf sb = STRBUF_INIT;
	size_t len = random_bytes(buf, sizeof(buf));

	audit_clean(&sb, buf, len, max);
	if (!sb.buf)
		strbuf_addstr(&sb, "");
	return strbuf_detach(&sb, NULL);
}

static long long random_ll(void)
{
	return (long long)(((unsigned long long)tap_rand() << 31) ^ tap_rand());
}

static void random_row(struct audit_row *r)
{
	audit_row_init(r, (enum audit_op)(tap_rand() % AUDIT_NOPS));
	/* any time a row may hold: 1970-9999 (the schema's CHECK) */
	r->created_us = random_ll() % (AUDIT_US_MAX + 1);
	if (r->created_us < 0)
		r->created_us = -r->created_us;
	free(r->tenant);
	r->tenant = random_text(64);
	free(r->session_key);
	r->session_key = random_text(64);
	free(r->runtime);
	r->runtime = random_text(32);
	if (tap_rand() % 2) {
		r->agent = random_text(AUDIT_ID_MAX / 4);
		if (!*r->agent) {
			free(r->agent);
			r->agent = xstrdup("agent-7");
		}
	}
	if (tap_rand() % 2)
		r->run = xstrdup("run \"1\" \\ é");
	free(r->target);
	r->target = random_text(AUDIT_TARGET_MAX);
	free(r->detail);
	r->detail = random_text(AUDIT_DETAIL_MAX);
	r->ok = tap_rand() % 2;
	r->has_exit = tap_rand() % 2;
	r->exit_status = r->has_exit ? (int)(int32_t)tap_rand() : 0;
	r->bytes = tap_rand() % 3 ? llabs(random_ll()) : AUDIT_NONE;
	r->results = tap_rand() % 3 ? (long long)tap_rand() : AUDIT_NONE;
	r->duration_ms = tap_rand() % 2 ? LLONG_MAX : llabs(random_ll());
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool rows_equal(const struct audit_row *a, const struct audit_row *b)
{
	return !strcmp(a->id, b->id) && a->created_us == b->created_us &&
	       str_eq(a->tenant, b->tenant) &&
	       str_eq(a->session_key, b->session_key) &&
	       str_eq(a->runtime, b->runtime) && str_eq(a->agent, b->agent) &&
	       str_eq(a->run, b->run) && a->op == b->op &&
	       str_eq(a->target, b->target) && a->ok == b->ok &&
	       a->has_exit == b->has_exit && a->exit_status == b->exit_status &&
	       a->bytes == b->bytes && a->results == b->results &&
	       a->duration_ms == b->duration_ms && str_eq(a->detail, b->detail);
}

static void test_round_trip(void)
{
	enum { N = 5000 };
	int bad = 0, bad_text = 0;

	for (int i = 0; i < N; i++) {
		struct audit_row r, back;
		struct sbx_error *err = NULL;
		json_t *j, *j2;
		char *text;

		random_row(&r);
		j = audit_row_json(&r);
		/* through text, as the spool and export carry it */
		text = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		j2 = json_loads(text, 0, NULL);
		if (audit_row_from_json(j2, &back, &err) < 0) {
			if (!bad++)
				diag("refused: %s in %s", err->msg, text);
			sbx_error_free(&err);
		} else {
			if (!rows_equal(&r, &back) && !bad++)
				diag("differs: %s", text);
			audit_row_release(&back);
		}
		if (i == 0) {
			const char *k[] = {
			    "id",      "created_at",  "tenant",	     "session",
			    "runtime", "agent",	      "run",	     "op",
			    "target",  "ok",	      "exit_status", "bytes",
			    "results", "duration_ms", "detail",	     "wire_id"};
			size_t n = 0;
			const char *key;
			json_t *v;

			json_object_foreach(j2, key, v)
			{
				if (n < 16 && strcmp(key, k[n]))
					bad_text++;
				n++;
			}
			if (n != 16)
				bad_text++;
		}
		json_decref(j2);
		free(text);
		audit_row_release(&r);
	}
	is_int(bad, 0, "%d fuzzed rows: JSON round trip is exact", N);
	is_int(bad_text, 0, "the keys, in audit.h's order");
}

static void test_json_shape(void)
{
	struct audit_row r;
	json_t *j;
	char *text;

	audit_row_init(&r, AUDIT_WRITE);
	memcpy(r.id, "0b8e4a6c-1d2f-4e3a-9b5c-6d7e8f9a0b1c", 37);
	r.created_us = 1796119200123456LL; /* 2026-12-01T10:00:00.123456Z */
	audit_row_set(&r.tenant, "acme", 4, AUDIT_TARGET_MAX);
	audit_row_set(&r.target, "a.txt", 5, AUDIT_TARGET_MAX);
	r.duration_ms = 3;
	r.ok = true;
	j = audit_row_json(&r);
	text = json_dumps(j, JSON_COMPACT);
	is_str(text,
	       "{\"id\":\"0b8e4a6c-1d2f-4e3a-9b5c-6d7e8f9a0b1c\","
	       "\"created_at\":\"2026-12-01T10:00:00.123456Z\","
	       "\"tenant\":\"acme\",\"session\":\"\",\"runtime\":\"\","
	       "\"agent\":null,\"run\":null,\"op\":\"write\","
	       "\"target\":\"a.txt\",\"ok\":true,\"exit_status\":null,"
	       "\"bytes\":null,\"results\":null,\"duration_ms\":3,"
	       "\"detail\":\"\",\"wire_id\":null}",
	       "the JSON of a row: keys, nulls, created_at");
	free(text);
	json_decref(j);
	audit_row_release(&r);
	{
		char t[32];
		long long us;

		audit_time_format(t, -1);
		is_str(t, "1969-12-31T23:59:59.999999Z", "before 1970");
		ok(audit_time_parse(t, &us) && us == -1, "and back");
		ok(!audit_time_parse("2026-02-30T00:00:00.000000Z", &us),
		   "Feb 30 refused");
		ok(!audit_time_parse("2026-12-01T24:00:00.000000Z", &us),
		   "24:00 refused");
		ok(!audit_time_parse("2026-12-01T10:00:00.123456+00:00", &us),
		   "only Z");
	}
}

/* One key of a good row's JSON replaced (or removed: v NULL). */
static void refuse(const char *key, json_t *v, const char *want,
		   const char *name)
{
	struct audit_row r, back;
	struct sbx_error *err = NULL;
	json_t *j;
	int rc;

	audit_row_init(&r, AUDIT_EXECUTE);
	r.has_exit = true;
	r.exit_status = 2;
	r.agent = xstrdup("agent");
	j = audit_row_json(&r);
	audit_row_release(&r);
	if (v)
		json_object_set_new(j, key, v);
	else
		json_object_del(j, key);
	rc = audit_row_from_json(j, &back, &err);
	ok(rc < 0 && err && strstr(err->msg, want) && back.target == NULL,
	   "refused: %s (%s)", name, err ? err->msg : "accepted");
	if (rc == 0)
		audit_row_release(&back);
	sbx_error_free(&err);
	json_decref(j);
}

static void test_refusals(void)
{
	static const char *const keys[] = {
	    "id",	   "created_at", "tenant",  "session",	   "runtime",
	    "agent",	   "run",	 "op",	    "target",	   "ok",
	    "exit_status", "bytes",	 "results", "duration_ms", "detail"};
	char big[700];

	for (size_t i = 0; i < 15; i++) {
		char want[64];

		snprintf(want, sizeof(want), "'%s': missing", keys[i]);
		refuse(keys[i], NULL, want, want);
	}
	refuse("extra", json_true(), "unknown key 'extra'", "an unknown key");
	refuse("ev\x1bil", json_true(), "unknown key 'ev\\x1bil'",
	       "an unknown key, shown escaped");
	refuse("id", json_string("0B8E4A6C-1D2F-4E3A-9B5C-6D7E8F9A0B1C"),
	       "'id'", "uppercase id");
	refuse("id", json_string("0b8e4a6c-1d2f-1e3a-9b5c-6d7e8f9a0b1c"),
	       "'id'", "version 1 id");
	refuse("id", json_string("0b8e4a6c-1d2f-4e3a-cb5c-6d7e8f9a0b1c"),
	       "'id'", "wrong variant");
	refuse("id", json_integer(4), "'id'", "id not a string");
	refuse("created_at", json_string("2026-12-01T10:00:00Z"),
	       "'created_at'", "no microseconds");
	refuse("created_at", json_string("2026-13-01T10:00:00.000000Z"),
	       "'created_at'", "month 13");
	refuse("created_at", json_string("1969-12-31T23:59:59.999999Z"),
	       "'created_at': out of range",
	       "before 1970 (the table would refuse it and block the spool)");
	refuse("tenant", json_integer(1), "'tenant': not a string",
	       "tenant a number");
	refuse("tenant", json_null(), "'tenant': not a string", "tenant null");
	refuse("session", json_string("a\nb"), "'session': not clean",
	       "session with a newline");
	refuse("runtime", json_string("\xe2\x80\xae"), "'runtime': not clean",
	       "runtime with RLO");
	refuse("agent", json_string(""), "'agent': empty", "empty agent");
	memset(big, 'a', 201);
	big[201] = '\0';
	refuse("agent", json_string(big), "'agent': over 200 bytes",
	       "agent over 200 bytes");
	refuse("run", json_true(), "'run': not a string or null", "run true");
	refuse("op", json_string("delete"), "'op': not an operation",
	       "unknown op");
	refuse("op", json_null(), "'op': not an operation", "op null");
	memset(big, 'a', 513);
	big[513] = '\0';
	refuse("target", json_string(big), "'target': over 512 characters",
	       "target of 513 characters");
	refuse("target", json_stringn("a\0b", 3), "'target'",
	       "target with NUL");
	refuse("ok", json_integer(1), "'ok': not true or false", "ok 1");
	refuse("exit_status", json_integer(1LL << 40), "'exit_status': out of",
	       "exit status past int");
	refuse("exit_status", json_real(1.0), "'exit_status': not an integer",
	       "exit status a real");
	refuse("bytes", json_integer(-1), "'bytes': out of range",
	       "negative bytes");
	refuse("results", json_string("3"), "'results': not an integer",
	       "results a string");
	refuse("duration_ms", json_integer(-5), "'duration_ms': out of range",
	       "negative duration");
	refuse("duration_ms", json_null(), "'duration_ms': not an integer",
	       "duration null");
	memset(big, 'd', 201);
	big[201] = '\0';
	refuse("detail", json_string(big), "'detail': over 200 characters",
	       "detail of 201 characters");
	refuse("detail", json_string("exit 2\x01"), "'detail': not clean",
	       "detail with a control");
	{
		struct audit_row back;
		struct sbx_error *err = NULL;
		json_t *a = json_array();

		ok(audit_row_from_json(a, &back, &err) < 0, "an array refused");
		sbx_error_free(&err);
		json_decref(a);
	}
}

/* h as 64 hex digits in hx. */
static const char *hex32(const unsigned char h[32], char hx[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(hx + 2 * i, 3, "%02x", h[i]);
	return hx;
}

/*
 * The chain's encoding, version 1, pinned: rows hashed with it must verify
 * for ever, so its bytes and a hash of them are written out here by hand
 * (docs/audit.md, "The chain"), not computed by the code under test.  A
 * version sbxcat does not know appends nothing and fails.
 */
static void test_canonical(void)
{
	static const char want[] =
	    "sbxcat-audit-1\n36:01234567-89ab-4cde-8f01-23456789abcd"
	    "\n16:1700000000123456\n4:acme\n13:xc-acme-run-k\n6:python\n-"
	    "\n5:run-1\n7:execute\n7:echo \xc3\xa9\n1:f\n1:2\n-\n1:7"
	    "\n4:1234\n6:exit 2";
	struct audit_row r = {
	    .id = "01234567-89ab-4cde-8f01-23456789abcd",
	    .created_us = 1700000000123456LL,
	    .tenant = (char *)"acme",
	    .session_key = (char *)"xc-acme-run-k",
	    .runtime = (char *)"python",
	    .agent = NULL,
	    .run = (char *)"run-1",
	    .op = AUDIT_EXECUTE,
	    .target = (char *)"echo \xc3\xa9",
	    .ok = false,
	    .has_exit = true,
	    .exit_status = 2,
	    .bytes = AUDIT_NONE,
	    .results = 7,
	    .duration_ms = 1234,
	    .detail = (char *)"exit 2",
	};
	struct strbuf sb = STRBUF_INIT;
	unsigned char zero[32] = {0}, h[32];
	char hx[65];

	ok(audit_canonical(&sb, &r, 1) == 0 && sb.len == sizeof(want) - 1 &&
	       !memcmp(sb.buf, want, sb.len),
	   "version 1: every field, its length, NULLs as '-'");
	strbuf_reset(&sb);
	ok(audit_chain_hash(zero, &r, 1, h) == 0, "version 1 hashes");
	is_str(
	    hex32(h, hx),
	    "fecac3f636c05d3fd5a3213715feb2916c802d7b2054740dcf8d0dbf5c038c68",
	    "... to the SHA-256 of 32 zero bytes and that encoding");
	/* Version 2: its own tag, version 1's fields, then the wire id. */
	r.wire_id = (char *)"xc-rc1";
	strbuf_reset(&sb);
	ok(audit_canonical(&sb, &r, 2) == 0 &&
	       sb.len == sizeof(want) - 1 + strlen("\n6:xc-rc1") &&
	       !memcmp(sb.buf, "sbxcat-audit-2", 14) &&
	       !memcmp(sb.buf + 14, want + 14, sizeof(want) - 1 - 14) &&
	       !strcmp(sb.buf + sizeof(want) - 1, "\n6:xc-rc1"),
	   "version 2: tagged 2, version 1's fields, then wire_id");
	strbuf_reset(&sb);
	ok(audit_chain_hash(zero, &r, 2, h) == 0, "version 2 hashes");
	is_str(
	    hex32(h, hx),
	    "0e37ca1c31aab0cae4f04970bbd120595a409722692233c0b974904dfe503a79",
	    "... to the SHA-256 of 32 zero bytes and that encoding");
	ok(audit_chain_hash(zero, &r, 1, h) == 0, "version 1 ignores wire_id");
	is_str(
	    hex32(h, hx),
	    "fecac3f636c05d3fd5a3213715feb2916c802d7b2054740dcf8d0dbf5c038c68",
	    "... its hash unchanged");
	{
		unsigned char h2[32];

		r.wire_id = (char *)"xc-rc2";
		audit_chain_hash(zero, &r, 2, h2);
		r.wire_id = NULL;
		audit_chain_hash(zero, &r, 1, h);
		ok(memcmp(h, h2, 32) != 0,
		   "version 2 covers wire_id: another id, another hash");
	}
	is_int(AUDIT_CHAIN_VERSION, 2, "new rows are hashed with version 2");
	ok(audit_canonical(&sb, &r, 0) == -1 && sb.len == 0 &&
	       audit_canonical(&sb, &r, AUDIT_CHAIN_VERSION + 1) == -1 &&
	       sb.len == 0,
	   "a version unknown: -1, nothing appended");
	ok(audit_chain_hash(zero, &r, AUDIT_CHAIN_VERSION + 1, h) == -1,
	   "... and no hash");
	strbuf_release(&sb);
}

/*
 * A spool line written before version 2 (no "wire_id") holds strings
 * cleaned by version 1's rule, a backslash as it was: it still replays,
 * as a row of version 1, and is written back as it was read.  A line of
 * version 2 must hold version 2's clean strings.
 */
static void test_versions(void)
{
	static const char old_line[] =
	    "{\"id\":\"0b8e4a6c-1d2f-4e3a-9b5c-6d7e8f9a0b1c\","
	    "\"created_at\":\"2026-12-01T10:00:00.123456Z\","
	    "\"tenant\":\"acme\",\"session\":\"k\",\"runtime\":\"\","
	    "\"agent\":null,\"run\":null,\"op\":\"write\","
	    "\"target\":\"tab\\\\there.txt\",\"ok\":true,"
	    "\"exit_status\":null,\"bytes\":null,\"results\":null,"
	    "\"duration_ms\":3,\"detail\":\"\"}";
	struct audit_row r;
	struct sbx_error *err = NULL;
	json_t *j = json_loads(old_line, 0, NULL), *back;
	char *text;

	ok(j && audit_row_from_json(j, &r, &err) == 0 && r.version == 1 &&
	       !strcmp(r.target, "tab\\there.txt") && !r.wire_id,
	   "a line of before version 2: version 1, its target as it was "
	   "(%s)",
	   err ? err->msg : "ok");
	sbx_error_free(&err);
	back = audit_row_json(&r);
	text = json_dumps(back, JSON_COMPACT);
	is_str(text, old_line, "... written back as it was read (no wire_id)");
	free(text);
	json_decref(back);
	r.wire_id = xstrdup("xc-rc1");
	ok(audit_row_check(&r, &err) < 0 && strstr(err->msg, "wire_id"),
	   "version 1 holds no wire_id");
	sbx_error_free(&err);
	audit_row_release(&r);

	/* The same line with a wire_id is version 2: "a\\b" is no clean
	 * string of it (a backslash stands alone). */
	json_object_set_new(j, "wire_id", json_null());
	json_object_set_new(j, "target", json_string("a\\b"));
	ok(audit_row_from_json(j, &r, &err) < 0 && strstr(err->msg, "target"),
	   "version 2: a lone backslash is not clean (%s)",
	   err ? err->msg : "accepted");
	sbx_error_free(&err);
	json_object_set_new(j, "target", json_string("tab\\\\there.txt"));
	json_object_set_new(j, "wire_id", json_string("xc-rc1"));
	ok(audit_row_from_json(j, &r, &err) == 0 && r.version == 2 &&
	       !strcmp(r.wire_id, "xc-rc1"),
	   "version 2: its escaped backslash and its wire id");
	sbx_error_free(&err);
	audit_row_release(&r);
	json_object_set_new(j, "wire_id", json_string("a\tb"));
	ok(audit_row_from_json(j, &r, &err) < 0 && strstr(err->msg, "wire_id"),
	   "a wire id with a control character refused");
	sbx_error_free(&err);
	json_object_set_new(j, "wire_id", json_string(""));
	ok(audit_row_from_json(j, &r, &err) < 0 && strstr(err->msg, "wire_id"),
	   "an empty wire id refused");
	sbx_error_free(&err);
	json_decref(j);
}

int main(void)
{
	xjson_init();
	test_ops();
	test_uuid();
	test_init();
	test_clean_cases();
	test_clean_tail();
	test_clean_fuzz();
	test_json_shape();
	test_round_trip();
	test_refusals();
	test_canonical();
	test_versions();
	return done_testing();
}

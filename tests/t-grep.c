/*
 * t-grep.c - grep (grep.h): grep_buffer against a per-line reference (a
 * naive pcre2_match of each line alone) over random buffers and patterns,
 * newline-spanning ones included; binary, too big, max_count, cut lines,
 * a catastrophic pattern; grep_run over a generated tree against GNU
 * grep -rn on the same tree.
 */
#include "config.h"

#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "workspace/grep.h"
#include "tap.h"
#include "workspace/workspace.h"

struct hits {
	struct strbuf sb; /* "line:text\n" per match, text escaped */
	unsigned long long n;
	long stop_after; /* emit returns -5 after this many; <0 never */
};

static void add_text(struct strbuf *sb, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f)
			strbuf_addf(sb, "\\x%02x", c);
		else
			strbuf_addch(sb, (char)c);
	}
}

static int collect(void *ctx, const struct grep_match *m)
{
	struct hits *h = ctx;

	if (*m->path)
		strbuf_addf(&h->sb, "%s:", m->path);
	strbuf_addf(&h->sb, "%llu:", m->line);
	add_text(&h->sb, m->text, m->len);
	strbuf_addstr(&h->sb, m->cut ? " [cut]\n" : "\n");
	h->n++;
	if (h->stop_after >= 0 && (long)h->n >= h->stop_after)
		return -5;
	return 0;
}

/* The reference: each line alone, as grep(1) defines a match. */
static bool reference(const char *pat, bool fixed, bool icase, const char *buf,
		      size_t len, struct strbuf *out)
{
	uint32_t opt = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
		       (fixed ? PCRE2_LITERAL : 0) | (icase ? PCRE2_CASELESS : 0);
	int code;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
				       opt, &code, &off, NULL);
	pcre2_match_data *md;
	unsigned long long line = 1;
	size_t ls = 0;

	if (!re)
		return false;
	md = pcre2_match_data_create(1, NULL);
	while (ls < len) {
		const char *nl = memchr(buf + ls, '\n', len - ls);
		size_t le = nl ? (size_t)(nl - buf) : len;

		if (pcre2_match(re, (PCRE2_SPTR)buf + ls, le - ls, 0, 0, md,
				NULL) >= 0) {
			strbuf_addf(out, "%llu:", line);
			add_text(out, buf + ls, le - ls > GREP_LINE_MAX
						    ? GREP_LINE_MAX
						    : le - ls);
			strbuf_addstr(out, "\n");
		}
		ls = le + 1;
		line++;
	}
	pcre2_match_data_free(md);
	pcre2_code_free(re);
	return true;
}

static struct grep *new_grep(const char *pat, bool fixed, bool icase)
{
	struct grep_opts o = {.pattern = pat, .fixed = fixed, .icase = icase};
	struct sbx_error *err = NULL;
	struct grep *g;

	if (grep_new(&o, &g, &err) < 0) {
		sbx_error_free(&err);
		return NULL;
	}
	return g;
}

static void gen_buffer(struct strbuf *sb)
{
	static const char *piece[] = {"a",  "b",	"x",  " ", "\n", "\n",
				      "\t", "A",	"\xc3\xa9", "\xff", "\xc3",
				      "ab", "\r\n", "B"};
	size_t n = tap_rand() % 60;

	strbuf_release(sb);
	strbuf_addstr(sb, "");
	for (size_t i = 0; i < n; i++)
		strbuf_addstr(sb, piece[tap_rand() % (sizeof(piece) / sizeof(*piece))]);
}

static void gen_pattern(char *out, size_t cap, bool fixed)
{
	static const char *re[] = {"a",	    "b+",    "\\s",    "[^x]",	"\\n",
				   "a.b",   "^a",    "b$",     "x\\s*a", "(a|b)x",
				   "\\s+b", "\xc3\xa9", "A",   "a\\sb",	"^$",
				   "[^a]*", "x?",    "\\S\\s\\S", "\\r", "a\\n*b", ".", "\\W", "\\D\\d*",
				   "[^a]b", "\\bab", "a.\\s*"};
	static const char *lit[] = {"a", "b", "x", " ", "ab", "A", "\xc3\xa9",
				    "a b", "\t"};
	size_t n = 1 + tap_rand() % 3;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *p = fixed ? lit[tap_rand() % (sizeof(lit) / sizeof(*lit))]
				      : re[tap_rand() % (sizeof(re) / sizeof(*re))];

		if (strlen(out) + strlen(p) + 1 < cap)
			strcat(out, p);
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fuzz(void)
{
	struct strbuf buf = STRBUF_INIT;
	int bad = 0, runs = 0;

	for (int i = 0; i < 6000; i++) {
		bool fixed = i % 3 == 0, icase = i % 4 == 1;
		char pat[64];
		struct hits h = {STRBUF_INIT, 0, -1};
		struct strbuf want = STRBUF_INIT;
		struct grep_stats st = {0};
		struct grep *g;

		gen_pattern(pat, sizeof(pat), fixed);
		gen_buffer(&buf);
		g = new_grep(pat, fixed, icase);
		if (!g || !reference(pat, fixed, icase, buf.buf, buf.len, &want)) {
			grep_free(g);
			strbuf_release(&want);
			continue;
		}
		runs++;
		grep_buffer(g, buf.buf, buf.len, collect, &h, &st);
		if (strcmp(strbuf_str(&h.sb), strbuf_str(&want)) != 0 &&
		    bad++ < 3) {
			struct strbuf b = STRBUF_INIT;

			add_text(&b, buf.buf, buf.len);
			diag("pattern '%s' fixed=%d icase=%d on '%s':\n got\n%s "
			     "want\n%s",
			     pat, fixed, icase, b.buf, strbuf_str(&h.sb),
			     strbuf_str(&want));
			strbuf_release(&b);
		}
		grep_free(g);
		strbuf_release(&h.sb);
		strbuf_release(&want);
		grep_stats_release(&st);
	}
	strbuf_release(&buf);
	ok(runs > 5000, "%d random buffers and patterns", runs);
	is_int(bad, 0, "grep_buffer agrees with each line searched alone");
}

static void cases(void)
{
	struct grep_stats st = {0};
	struct hits h = {STRBUF_INIT, 0, -1};
	struct grep *g;
	struct strbuf big = STRBUF_INIT;
	struct grep_opts o = {.pattern = "a("};
	struct sbx_error *err = NULL;
	double t0;

	ok(grep_new(&o, &g, &err) < 0 && tap_status(err) == 2 &&
	       strstr(err->msg, "offset 2"),
	   "a syntax error is status 2 with the offset: %s", err ? err->msg : "");
	sbx_error_free(&err);
	o.pattern = "a";
	o.include = "[ab";
	ok(grep_new(&o, &g, &err) < 0 && tap_status(err) == 2,
	   "a bad include is status 2: %s", err ? err->msg : "");
	sbx_error_free(&err);

	g = new_grep("needle", true, false);
	grep_buffer(g, "hay\nneedle\0\n", 12, collect, &h, &st);
	ok(h.n == 0 && st.binary == 1 && st.files == 0, "a NUL: binary, skipped");
	memset(&st, 0, sizeof(st));
	strbuf_release(&h.sb);
	h.n = 0;
	for (int i = 0; i < 50; i++)
		strbuf_addstr(&big, "needle\nhay\n");
	grep_buffer(g, big.buf, big.len, collect, &h, &st);
	ok(h.n == 50 && st.matches == 50 && !st.truncated_matches, "50 matches");
	grep_free(g);

	o.pattern = "needle";
	o.include = NULL;
	o.fixed = true;
	o.max_count = 10;
	grep_new(&o, &g, &err);
	memset(&st, 0, sizeof(st));
	strbuf_release(&h.sb);
	h.n = 0;
	grep_buffer(g, big.buf, big.len, collect, &h, &st);
	ok(h.n == 10 && st.truncated_matches, "max_count 10: 10, then stopped");
	grep_free(g);
	o.max_count = 50;
	grep_new(&o, &g, &err);
	memset(&st, 0, sizeof(st));
	grep_buffer(g, big.buf, big.len, collect, &h, &st);
	ok(st.matches == 50 && !st.truncated_matches,
	   "max_count 50 of 50: not truncated");
	memset(&st, 0, sizeof(st));
	h.stop_after = 3;
	h.n = 0;
	is_int(grep_buffer(g, big.buf, big.len, collect, &h, &st), -5,
	       "emit's negative return stops and is returned");
	ok(h.n == 3, "after 3");
	grep_free(g);
	h.stop_after = -1;

	/* A long line is cut at GREP_LINE_MAX, not inside a character. */
	strbuf_release(&big);
	strbuf_addstr(&big, "x");
	for (int i = 0; i < 1500; i++)
		strbuf_addstr(&big, "\xc3\xa9");
	strbuf_addstr(&big, " needle\nshort needle\n");
	{
		struct hits c = {STRBUF_INIT, 0, -1};
		struct grep_match first = {0};

		g = new_grep("needle", false, true);
		memset(&st, 0, sizeof(st));
		grep_buffer(g, big.buf, big.len, collect, &c, &st);
		ok(c.n == 2 && strstr(c.sb.buf, "[cut]\n2:short needle\n"),
		   "the long line cut, the next whole");
		(void)first;
		grep_free(g);
		strbuf_release(&c.sb);
	}

	/* The catastrophic pattern on a 100 KB line of a's then b. */
	strbuf_release(&big);
	for (int i = 0; i < 100000; i++)
		strbuf_addch(&big, 'a');
	strbuf_addstr(&big, "b\nab\nthe end a\n");
	g = new_grep("(a+)+$", false, false);
	memset(&st, 0, sizeof(st));
	strbuf_release(&h.sb);
	h.n = 0;
	t0 = now();
	grep_buffer(g, big.buf, big.len, collect, &h, &st);
	ok(now() - t0 < 2.0, "(a+)+$ on 100 KB: %.3f s", now() - t0);
	is_int((long long)st.limited, 1, "counted in limited");
	grep_free(g);

	/* A fixed pattern with a newline matches no line (as -F would
	 * search for either part, grep.h's lines never hold one). */
	g = new_grep("a\nb", true, false);
	memset(&st, 0, sizeof(st));
	h.n = 0;
	grep_buffer(g, "a\nb\n", 4, collect, &h, &st);
	ok(h.n == 0, "a fixed pattern with a newline matches no line");
	grep_free(g);
	g = new_grep("", true, false);
	memset(&st, 0, sizeof(st));
	grep_buffer(g, "a\n\nb", 4, collect, &h, &st);
	ok(h.n == 3, "the empty pattern matches every line (%llu)", h.n);
	grep_free(g);

	/* Patterns that could see past their line are matched line by
	 * line, as grep -P matches them. */
	{
		static const struct {
			const char *pat, *want;
		} per_line[] = {
		    {"\\Afoo", "1:foo\n2:foo bar\n"},
		    {"foo\\z", "1:foo\n3:xfoo\n"},
		    {"foo\\Z", "1:foo\n3:xfoo\n"},
		    {"(?<!x)foo", "1:foo\n2:foo bar\n"},
		    {"foo(?=\\n)", ""},
		    {"foo(?!\\s)", "1:foo\n3:xfoo\n"},
		    {"\\Gfoo", "1:foo\n2:foo bar\n"},
		};

		for (size_t i = 0; i < sizeof(per_line) / sizeof(*per_line);
		     i++) {
			g = new_grep(per_line[i].pat, false, false);
			memset(&st, 0, sizeof(st));
			strbuf_reset(&h.sb);
			h.n = 0;
			grep_buffer(g, "foo\nfoo bar\nxfoo\n", 17, collect, &h,
				    &st);
			is_str(h.sb.buf ? h.sb.buf : "", per_line[i].want,
			       "'%s' is matched line by line, as grep -P",
			       per_line[i].pat);
			grep_free(g);
		}
	}
	strbuf_release(&h.sb);
	strbuf_release(&big);
}

/* ---- grep_run over a tree, against GNU grep ---- */

static char ws[128];
/* The workspace's cancel flag (workspace.h): a test sets it. */
static atomic_int cancel;

static void write_file(const char *rel, const char *data, size_t len)
{
	char p[4096];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", ws, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		bail_out("write %s: %s", p, strerror(errno));
	close(fd);
}

static void gen_tree(void)
{
	static const char *words[] = {"foo", "bar", "fooo7", "baz", "fo1",
				      "quux", "Foo", "x", "needle", "\xc3\xa9"};
	char p[256];

	for (int d = 0; d < 10; d++) {
		snprintf(p, sizeof(p), "%s/d%d", ws, d);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/d%d/sub", ws, d);
		mkdir(p, 0755);
	}
	for (int f = 0; f < 300; f++) {
		struct strbuf sb = STRBUF_INIT;
		size_t lines = tap_rand() % 40;

		for (size_t l = 0; l < lines; l++) {
			size_t nw = tap_rand() % 8;

			for (size_t k = 0; k < nw; k++) {
				strbuf_addstr(&sb, words[tap_rand() % 10]);
				strbuf_addch(&sb, ' ');
			}
			strbuf_addch(&sb, '\n');
		}
		snprintf(p, sizeof(p), "d%d/%sf%d.%s", f % 10,
			 f % 3 ? "sub/" : "", f, f % 2 ? "txt" : "c");
		write_file(p, sb.buf ? sb.buf : "", sb.len);
		strbuf_release(&sb);
	}
}

/* "path:line" lines, sorted. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *sorted_keys(const char *text)
{
	char **v = NULL, *copy = xstrdup(text), *save = NULL;
	size_t n = 0, alloc = 0;
	struct strbuf out = STRBUF_INIT;

	for (char *l = strtok_r(copy, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		if (!strncmp(l, "./", 2))
			l += 2;
		ALLOC_GROW(v, n + 1, alloc);
		v[n++] = l;
	}
	qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&out, "%s\n", v[i]);
	free(v);
	free(copy);
	strbuf_addstr(&out, "");
	return strbuf_detach(&out, NULL);
}

static char *gnu_grep(const char *args)
{
	char cmd[512];
	struct strbuf out = STRBUF_INIT;
	char chunk[65536];
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "cd '%s' && LC_ALL=C grep -rn %s .", ws, args);
	f = popen(cmd, "r");
	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		strbuf_add(&out, chunk, n);
	pclose(f);
	strbuf_addstr(&out, "");
	return strbuf_detach(&out, NULL);
}

static int run(const struct workspace *w, struct grep_opts *o, const char *start,
	       struct hits *h, struct grep_stats *st)
{
	struct sbx_error *err = NULL;
	struct grep *g;
	int r;

	strbuf_release(&h->sb);
	strbuf_addstr(&h->sb, "");
	h->n = 0;
	if (grep_new(o, &g, &err) < 0)
		bail_out("grep_new: %s", err->msg);
	r = grep_run(g, w, start, start, collect, h, st, &err);
	if (r < 0 && err) {
		diag("grep_run: %s", err->msg);
		r = -tap_status(err);
		sbx_error_free(&err);
	}
	grep_free(g);
	return r;
}

static void tree(void)
{
	char root[] = "/tmp/t-grep-XXXXXX";
	struct workspace w;
	struct sbx_error *err = NULL;
	struct grep_opts o = {.walk = {.max_entries = 100000, .max_depth = 10},
			      .max_count = 1000000};
	struct grep_stats st;
	struct hits h = {STRBUF_INIT, 0, -1};
	char *want, *got, *gnu, cmd[256], p[256];
	int fd;

	if (!mkdtemp(root))
		bail_out("mkdtemp");
	snprintf(ws, sizeof(ws), "%s/ws", root);
	mkdir(ws, 0755);
	gen_tree();
	fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (workspace_init(&w, fd, ws, 0, 8 << 20, 64 << 20, &cancel, &err) <
	    0) {
		if (err && tap_status(err) == 3) /* no openat2 (valgrind 3.19) */
			skip_all(err->msg);
		bail_out("workspace_init");
	}

	if (system("grep --version >/dev/null 2>&1") != 0) {
		skip("no GNU grep here", "grep_run against grep -rn");
	} else {
		static const struct {
			const char *pat, *gnu;
			bool fixed, icase;
		} cmp[] = {
			{"needle", "-F -e needle", true, false},
			{"fo+[0-9]", "-E -e 'fo+[0-9]'", false, false},
			{"foo", "-i -e foo", false, true},
			{"^bar", "-e '^bar'", false, false},
		};

		for (size_t i = 0; i < sizeof(cmp) / sizeof(*cmp); i++) {
			o.pattern = cmp[i].pat;
			o.fixed = cmp[i].fixed;
			o.icase = cmp[i].icase;
			memset(&st, 0, sizeof(st));
			run(&w, &o, "", &h, &st);
			gnu = gnu_grep(cmp[i].gnu);
			want = sorted_keys(gnu);
			got = sorted_keys(h.sb.buf);
			ok(strcmp(want, got) == 0 && h.n > 0,
			   "'%s': the same %llu file:line pairs as grep -rn %s",
			   cmp[i].pat, h.n, cmp[i].gnu);
			if (strcmp(want, got) != 0)
				diag("got %.300s\nwant %.300s", got, want);
			free(want);
			free(got);
			free(gnu);
			grep_stats_release(&st);
		}
		ok(st.files == 300, "300 files searched (%llu)", st.files);
	}

	/* Include, hidden, binary, too big, a file as start, symlinks. */
	write_file(".hidden", "needle\n", 7);
	write_file("d0/bin.dat", "needle\0\n", 8);
	write_file("d1/big.txt", "needle needle needle needle needle\n", 35);
	snprintf(p, sizeof(p), "%s/out", ws);
	if (symlink("/etc/passwd", p) < 0)
		bail_out("symlink");
	snprintf(p, sizeof(p), "%s/in", ws);
	if (symlink("d1/big.txt", p) < 0)
		bail_out("symlink");
	o.pattern = "needle";
	o.fixed = true;
	o.icase = false;
	o.include = "*.txt";
	memset(&st, 0, sizeof(st));
	run(&w, &o, "", &h, &st);
	ok(strstr(h.sb.buf, "d1/big.txt:1:") && !strstr(h.sb.buf, ".c:") &&
	       !strstr(h.sb.buf, ".hidden"),
	   "--include '*.txt'");
	grep_stats_release(&st);
	o.include = "d0/sub/*";
	memset(&st, 0, sizeof(st));
	run(&w, &o, "", &h, &st);
	{
		bool only = true;

		for (char *l = h.sb.buf; l && *l; l = strchr(l, '\n') + 1)
			if (strncmp(l, "d0/sub/", 7) != 0)
				only = false;
		ok(only && h.n > 0, "--include with a '/' takes the whole path");
	}
	grep_stats_release(&st);
	o.include = NULL;
	o.max_read = 30;
	o.walk.hidden = false;
	memset(&st, 0, sizeof(st));
	run(&w, &o, "", &h, &st);
	ok(st.binary == 1 && st.too_big >= 1 && !strstr(h.sb.buf, "big.txt") &&
	       !strstr(h.sb.buf, ".hidden") && !strstr(h.sb.buf, "in:") &&
	       !strstr(h.sb.buf, "out:"),
	   "binary %llu, too big %llu, hidden and symlinks skipped", st.binary,
	   st.too_big);
	grep_stats_release(&st);
	o.walk.hidden = true;
	o.max_read = 0;
	memset(&st, 0, sizeof(st));
	run(&w, &o, "", &h, &st);
	ok(strstr(h.sb.buf, ".hidden:1:needle") != NULL, "--hidden takes it");
	grep_stats_release(&st);
	memset(&st, 0, sizeof(st));
	is_int(run(&w, &o, "d1/big.txt", &h, &st), 0, "a file as start");
	ok(h.n == 1 && st.files == 1 && strstr(h.sb.buf, "d1/big.txt:1:needle"),
	   "searched alone");
	grep_stats_release(&st);
	memset(&st, 0, sizeof(st));
	ok(run(&w, &o, "out", &h, &st) == -1,
	   "a start leading out is refused");
	grep_stats_release(&st);
	memset(&st, 0, sizeof(st));
	ok(run(&w, &o, "missing", &h, &st) == -1, "a missing start is refused");
	grep_stats_release(&st);

	/* The walk's bounds carry over. */
	o.walk.max_entries = 5;
	memset(&st, 0, sizeof(st));
	run(&w, &o, "", &h, &st);
	ok(st.truncated && st.why && strcmp(st.why, "entries") == 0,
	   "the walk's bound is reported");
	grep_stats_release(&st);
	o.walk.max_entries = 100000;

	/* A budget already spent searches nothing. */
	o.budget_ms = -1;
	memset(&st, 0, sizeof(st));
	run(&w, &o, "", &h, &st);
	ok(st.out_of_time && h.n == 0, "out of time");
	grep_stats_release(&st);
	o.budget_ms = 0;

	/* The cancel flag stops it: an error of kind cancelled, the
	 * signal named; the same when the start is a file. */
	atomic_store(&cancel, SIGINT);
	for (int i = 0; i < 2; i++) {
		const char *start = i ? "d1/big.txt" : "";
		struct grep *g;
		int r;

		memset(&st, 0, sizeof(st));
		if (grep_new(&o, &g, &err) < 0)
			bail_out("grep_new: %s", err->msg);
		r = grep_run(g, &w, start, i ? start : ".", collect, &h, &st,
			     &err);
		ok(r == -1 && err && err->kind == SBX_E_CANCELLED,
		   "the cancel flag up: grep from '%s' fails, cancelled",
		   start);
		is_str(err ? err->msg : "",
		       i ? "interrupted by signal 2 while searching "
			   "'d1/big.txt'"
			 : "interrupted by signal 2 while searching '.'",
		       "... naming the signal and the start");
		sbx_error_free(&err);
		grep_stats_release(&st);
		grep_free(g);
	}
	atomic_store(&cancel, 0);
	memset(&st, 0, sizeof(st));
	is_int(run(&w, &o, "", &h, &st), 0, "the flag down: it runs again");
	grep_stats_release(&st);

	strbuf_release(&h.sb);
	workspace_close(&w);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		diag("could not remove %s", root);
}

int main(void)
{
	fuzz();
	cases();
	tree();
	return done_testing();
}

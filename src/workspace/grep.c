/*
 * grep.c - `sbxcat fs grep`: the files of a walk searched line by line,
 * bounded in files, matches, time and regex effort (grep.h).  Never
 * prints.
 *
 * Speed comes from searching each file's whole buffer at once (memmem,
 * or one PCRE2 JIT call in multiline mode) and looking for line
 * boundaries only around a match: a line that does not match costs no
 * call of its own.  Line numbers are counted incrementally, up to the
 * next match only.
 */
#include "config.h"

#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/text.h"
#include "workspace/grep.h"
#include "workspace/walk.h"
#include "workspace/workspace.h"

/*
 * PCRE2's limits.  The match limit (per start position) stops a
 * backtracking blow-up such as (a+)+$ in well under a second with the JIT;
 * 1,000,000 is a tenth of PCRE2's default, still far above what a sane
 * pattern needs on one line.  The depth and heap limits bound the
 * interpreter (used when the JIT is not available), the JIT stack the JIT.
 */
#define GREP_MATCH_LIMIT 1000000
#define GREP_DEPTH_LIMIT 10000
#define GREP_HEAP_LIMIT_KIB 65536
#define GREP_JIT_STACK_MIN (32 * 1024)
#define GREP_JIT_STACK_MAX (1024 * 1024)
#define GREP_READ_DEFAULT (8ULL << 20)

struct grep {
	char *pattern;
	size_t plen;
	bool memmem;	/* fixed and !icase */
	bool never;	/* a fixed pattern with a newline: no line has it */
	bool per_line;	/* it sees past its line: matched one line at a time */
	char *include;
	bool include_path; /* include holds a '/': match the whole path */
	struct walk_opts walk;
	char *spill;
	unsigned long long max_count, max_read;
	long long budget_ms;
	pcre2_code *re;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jst;
	char *buf;
	size_t abuf;
	/* What one grep_run sets and clears: its deadline and the
	 * workspace's cancel flag. */
	long long deadline_ms; /* clock_now_ms(); 0: none */
	const atomic_int *cancel;
};

/* The outcome of searching one buffer. */
enum { SEARCH_DONE = 0, SEARCH_STOP = 1 };

static void quoted(struct strbuf *sb, const char *s)
{
	text_add_escaped(sb, s, strlen(s));
}

/*
 * PCRE2 before 10.43 has a JIT bug (PCRE2Project/pcre2 issue 224): with
 * PCRE2_MATCH_INVALID_UTF, a negated type such as \S, \D or \W does not
 * match a multibyte character (\S misses "\xc3\xa9"), so lines would be
 * lost.  Ask the library once; when it has the bug, a pattern with such an
 * escape (a backslash and an upper-case letter, over-approximated) runs
 * in the interpreter, slower but right.  Debian 12 ships 10.42.
 */
static bool jit_misses_types(void)
{
	/* The library's, not a call's: the same for every thread, so two
	 * threads that both probe it store the same answer. */
	static atomic_int known = -1;
	int buggy = atomic_load(&known);
	pcre2_code *re;
	pcre2_match_data *md;
	int code;
	PCRE2_SIZE off;

	if (buggy >= 0)
		return buggy;
	buggy = 0;
	re = pcre2_compile((PCRE2_SPTR)"\\S", 2,
			   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &off,
			   NULL);
	md = pcre2_match_data_create(1, NULL);
	if (!re || !md)
		die_oom();
	if (pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0 &&
	    pcre2_match(re, (PCRE2_SPTR)"\xc3\xa9", 2, 0, 0, md, NULL) < 0)
		buggy = 1;
	pcre2_match_data_free(md);
	pcre2_code_free(re);
	atomic_store(&known, buggy);
	return buggy;
}

/*
 * Whether a regular expression can tell the whole buffer from its line:
 * \A, \z, \Z and \G anchor to the subject, and a lookaround can look
 * over a newline.  Such a pattern is matched line by line, as grep -P
 * does (slower; everything else is searched over the whole buffer).
 */
static bool sees_past_line(const char *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (p[i] == '\\') {
			if (strchr("AzZG", p[i + 1]))
				return true;
			i++; /* an escaped character is not a construct */
		} else if (p[i] == '(' && p[i + 1] == '?' && i + 2 < n &&
			   strchr("<=!", p[i + 2])) {
			return true;
		}
	}
	return false;
}

static bool has_type_escape(const char *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (p[i] == '\\' && p[i + 1] >= 'A' && p[i + 1] <= 'Z')
			return true;
	return false;
}

int grep_new(const struct grep_opts *o, struct grep **gp,
	     struct sbx_error **err)
{
	struct grep *g;
	const char *bad;
	uint32_t options;
	int code;
	PCRE2_SIZE off;

	*gp = NULL;
	if (o->include && (bad = glob_check(o->include))) {
		struct strbuf sb = STRBUF_INIT;
		int r;

		quoted(&sb, o->include);
		r = sbx_error_set(err, SBX_E_INVALID, 0,
				  "bad include pattern '%s': %s",
				  strbuf_str(&sb), bad);
		strbuf_release(&sb);
		return r;
	}
	g = xcalloc(1, sizeof(*g));
	g->pattern = xstrdup(o->pattern);
	g->plen = strlen(o->pattern);
	g->memmem = o->fixed && !o->icase;
	g->never = o->fixed && memchr(g->pattern, '\n', g->plen);
	g->per_line = !o->fixed && sees_past_line(g->pattern, g->plen);
	g->include = o->include ? xstrdup(o->include) : NULL;
	g->include_path = o->include && strchr(o->include, '/');
	g->walk = o->walk;
	g->spill = o->walk.spill ? xstrdup(o->walk.spill) : NULL;
	g->walk.spill = g->spill;
	g->max_count = o->max_count ? o->max_count : GREP_MAX_COUNT_DEFAULT;
	g->budget_ms = o->budget_ms ? o->budget_ms : GREP_BUDGET_MS_DEFAULT;
	g->max_read = o->max_read;
	if (g->memmem || g->never) {
		*gp = g;
		return 0;
	}

	options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
	/* PCRE2_LITERAL refuses PCRE2_MULTILINE; a literal needs neither. */
	options |= o->fixed ? PCRE2_LITERAL : PCRE2_MULTILINE;
	if (o->icase)
		options |= PCRE2_CASELESS;
	g->re = pcre2_compile((PCRE2_SPTR)g->pattern, g->plen, options, &code,
			      &off, NULL);
	if (!g->re) {
		PCRE2_UCHAR msg[256];
		struct strbuf sb = STRBUF_INIT;
		int r;

		if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
			strcpy((char *)msg, "unknown error");
		quoted(&sb, o->pattern);
		r = sbx_error_set(err, SBX_E_INVALID, 0,
				  "bad pattern '%s': %s at offset %zu",
				  strbuf_str(&sb), (const char *)msg,
				  (size_t)off);
		strbuf_release(&sb);
		grep_free(g);
		return r;
	}
	/* Without JIT support PCRE2 interprets; the limits hold either way. */
	if (!jit_misses_types() || !has_type_escape(g->pattern, g->plen))
		(void)pcre2_jit_compile(g->re, PCRE2_JIT_COMPLETE);
	g->md = pcre2_match_data_create(1, NULL);
	g->mctx = pcre2_match_context_create(NULL);
	g->jst = pcre2_jit_stack_create(GREP_JIT_STACK_MIN, GREP_JIT_STACK_MAX,
					NULL);
	if (!g->md || !g->mctx || !g->jst)
		die_oom();
	pcre2_set_match_limit(g->mctx, GREP_MATCH_LIMIT);
	pcre2_set_depth_limit(g->mctx, GREP_DEPTH_LIMIT);
	pcre2_set_heap_limit(g->mctx, GREP_HEAP_LIMIT_KIB);
	pcre2_jit_stack_assign(g->mctx, NULL, g->jst);
	*gp = g;
	return 0;
}

void grep_free(struct grep *g)
{
	if (!g)
		return;
	pcre2_match_data_free(g->md);
	pcre2_match_context_free(g->mctx);
	pcre2_jit_stack_free(g->jst);
	pcre2_code_free(g->re);
	free(g->pattern);
	free(g->include);
	free(g->spill);
	free(g->buf);
	free(g);
}

static bool past_deadline(const struct grep *g)
{
	return g->deadline_ms && clock_now_ms() >= g->deadline_ms;
}

static int cancelled(const struct grep *g)
{
	return g->cancel ? atomic_load(g->cancel) : 0;
}

/* Stop now: a cancel, or the budget spent (said so). */
static bool must_stop(const struct grep *g, struct grep_stats *st)
{
	if (cancelled(g))
		return true;
	if (!past_deadline(g))
		return false;
	st->out_of_time = true;
	return true;
}
/* Newlines in buf[from..to). */
static unsigned long long count_lines(const char *buf, size_t from, size_t to)
{
	unsigned long long n = 0;
	const char *p = buf + from, *end = buf + to, *q;

	while (p < end && (q = memchr(p, '\n', (size_t)(end - p)))) {
		n++;
		p = q + 1;
	}
	return n;
}

struct cursor {
	const char *path;
	const char *buf;
	size_t len;
	size_t counted; /* lineno is 1 + the newlines of buf[0..counted) */
	unsigned long long lineno;
};

/* Report the line buf[ls..le). */
static int report(struct grep *g, struct cursor *c, size_t ls, size_t le,
		  int (*emit)(void *, const struct grep_match *), void *ctx,
		  struct grep_stats *st)
{
	struct grep_match m;
	size_t n = le - ls;
	int r;

	if (st->matches >= g->max_count) {
		st->truncated_matches = true;
		return SEARCH_STOP;
	}
	c->lineno += count_lines(c->buf, c->counted, ls);
	c->counted = ls;
	m.path = c->path;
	m.line = c->lineno;
	m.text = c->buf + ls;
	m.cut = n > GREP_LINE_MAX;
	m.len = m.cut ? utf8_whole(m.text, GREP_LINE_MAX) : n;
	st->matches++;
	r = emit(ctx, &m);
	if (r < 0)
		return r;
	if (st->matches % 4096 == 0 && must_stop(g, st))
		return SEARCH_STOP;
	return SEARCH_DONE;
}

/* The line around position s, searching back no further than floor. */
static void line_of(const char *buf, size_t len, size_t floor, size_t s,
		    size_t *ls, size_t *le)
{
	const char *p = s > floor ? memrchr(buf + floor, '\n', s - floor) : NULL;
	const char *q = s < len ? memchr(buf + s, '\n', len - s) : NULL;

	*ls = p ? (size_t)(p - buf) + 1 : floor;
	*le = q ? (size_t)(q - buf) : len;
}

static int search_memmem(struct grep *g, struct cursor *c,
			 int (*emit)(void *, const struct grep_match *),
			 void *ctx, struct grep_stats *st)
{
	size_t pos = 0;

	while (pos < c->len) {
		const char *p = text_find(c->buf + pos, c->len - pos,
					  g->pattern, g->plen);
		size_t ls, le;
		int r;

		if (!p)
			break;
		line_of(c->buf, c->len, pos, (size_t)(p - c->buf), &ls, &le);
		r = report(g, c, ls, le, emit, ctx, st);
		if (r != SEARCH_DONE)
			return r;
		pos = le + 1;
	}
	return SEARCH_DONE;
}

/* A PCRE2 error other than no match: the limits; abandon the buffer. */
static bool limited(int rc, struct grep_stats *st)
{
	if (rc == PCRE2_ERROR_NOMATCH)
		return false;
	st->limited++;
	return true;
}

/* One line at a time: the subject of each match is its line alone. */
static int search_lines(struct grep *g, struct cursor *c,
			int (*emit)(void *, const struct grep_match *),
			void *ctx, struct grep_stats *st)
{
	size_t ls = 0;

	while (ls < c->len) {
		const char *nl = memchr(c->buf + ls, '\n', c->len - ls);
		size_t le = nl ? (size_t)(nl - c->buf) : c->len;
		int rc = pcre2_match(g->re, (PCRE2_SPTR)(c->buf + ls), le - ls,
				     0, 0, g->md, g->mctx);

		if (rc >= 0) {
			int r = report(g, c, ls, le, emit, ctx, st);

			if (r != SEARCH_DONE)
				return r;
		} else if (limited(rc, st)) {
			break;
		}
		ls = le + 1;
	}
	return SEARCH_DONE;
}

static int search_pcre2(struct grep *g, struct cursor *c,
			int (*emit)(void *, const struct grep_match *),
			void *ctx, struct grep_stats *st)
{
	if (g->per_line)
		return search_lines(g, c, emit, ctx, st);
	const unsigned char *subj = (const unsigned char *)c->buf;
	bool nl_end = c->len > 0 && c->buf[c->len - 1] == '\n';
	size_t pos = 0;

	while (pos < c->len) {
		PCRE2_SIZE *ov;
		size_t s, e, ls, le;
		int rc, r;

		rc = pcre2_match(g->re, subj, c->len, pos, 0, g->md, g->mctx);
		if (rc < 0) {
			limited(rc, st);
			break;
		}
		ov = pcre2_get_ovector_pointer(g->md);
		s = ov[0] < pos ? pos : ov[0];
		e = ov[1] > s ? ov[1] : s;
		if (s >= c->len && nl_end)
			break; /* past the last line: there is no line there */
		line_of(c->buf, c->len, pos, s, &ls, &le);
		if (e > le) {
			/* The match ran past its line: does the line alone
			 * match? */
			rc = pcre2_match(g->re, subj + ls, le - ls, 0, 0, g->md,
					 g->mctx);
			if (rc < 0) {
				if (limited(rc, st))
					break;
				pos = le + 1;
				continue;
			}
		}
		r = report(g, c, ls, le, emit, ctx, st);
		if (r != SEARCH_DONE)
			return r;
		pos = le + 1;
	}
	return SEARCH_DONE;
}

static int search(struct grep *g, const char *path, const char *buf,
		  size_t len, int (*emit)(void *, const struct grep_match *),
		  void *ctx, struct grep_stats *st)
{
	struct cursor c = {path, buf, len, 0, 1};

	if (memchr(buf, '\0', len)) {
		st->binary++;
		return SEARCH_DONE;
	}
	st->files++;
	if (g->never)
		return SEARCH_DONE;
	if (g->memmem)
		return search_memmem(g, &c, emit, ctx, st);
	return search_pcre2(g, &c, emit, ctx, st);
}

int grep_buffer(struct grep *g, const char *buf, size_t len,
		int (*emit)(void *ctx, const struct grep_match *m), void *ctx,
		struct grep_stats *st)
{
	int r = search(g, "", buf, len, emit, ctx, st);

	return r < 0 ? r : 0;
}

static void add_problem(struct grep_stats *st, const char *path,
			const struct sbx_error *e)
{
	walk_problem_add(&st->problems, &st->nproblems, &st->aproblems, path,
			 e ? e->errnum : 0, "it is not a regular file any more");
}

/*
 * Open a file the walk found, for reading: beneath the workspace, its last
 * component not a symlink, O_NONBLOCK so that a FIFO swapped in since the
 * walk saw a file neither blocks nor is read (it is closed unread when
 * fstat says it is not regular).  This is one system call where
 * workspace_open_file() takes three, for every file of a tree: a device
 * node is the one thing it could open that workspace_open_file() would
 * not, and the sandbox cannot make one (CapDrop ALL takes CAP_MKNOD).
 */
static int open_file(const struct workspace *w, const char *rel,
		     struct stat *sb, struct sbx_error **e)
{
	int fd = workspace_openat(w, rel,
				  O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW,
				  0, 0, rel, e);

	if (fd < 0)
		return -1;
	if (fstat(fd, sb) < 0) {
		int errnum = errno;

		close(fd);
		return sbx_error_set(e, SBX_E_UNAVAILABLE, errnum, "cannot stat");
	}
	if (!S_ISREG(sb->st_mode)) {
		close(fd);
		return sbx_error_set(e, SBX_E_REFUSED, 0,
				     "not a regular file any more");
	}
	return fd;
}

/*
 * Read the file rel into g->buf: the number of bytes, or -1 (skipped and
 * counted: unreadable or too big).
 */
static long long read_file(struct grep *g, const struct workspace *w,
			   const char *rel, struct grep_stats *st)
{
	unsigned long long max = g->max_read ? g->max_read
			       : w->max_read ? w->max_read
					     : GREP_READ_DEFAULT;
	struct sbx_error *e = NULL;
	struct stat sb;
	size_t n = 0;
	int fd = open_file(w, rel, &sb, &e);

	if (fd < 0) {
		st->unreadable++;
		add_problem(st, rel, e);
		sbx_error_free(&e);
		return -1;
	}
	if ((unsigned long long)sb.st_size > max) {
		st->too_big++;
		close(fd);
		return -1;
	}
	/* One byte more than st_size: a file that grew is noticed. */
	if (g->abuf < (size_t)sb.st_size + 1) {
		free(g->buf);
		g->abuf = (size_t)sb.st_size + 1 < 65536 ? 65536
							: (size_t)sb.st_size + 1;
		g->buf = xmalloc(g->abuf);
	}
	for (;;) {
		size_t want;
		ssize_t r;

		if (n == g->abuf) {
			if (n > max) {
				st->too_big++;
				close(fd);
				return -1;
			}
			g->abuf = alloc_nr(g->abuf, n + 1);
			if (g->abuf > max + 1)
				g->abuf = max + 1;
			g->buf = xrealloc(g->buf, g->abuf);
		}
		want = g->abuf - n;
		r = read(fd, g->buf + n, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			struct sbx_error re = {.errnum = errno};

			st->unreadable++;
			add_problem(st, rel, &re);
			close(fd);
			return -1;
		}
		n += (size_t)r;
		/* A short read of a regular file is its end: the read that
		 * would say 0 is spared. */
		if (r == 0 || ((size_t)r < want &&
			       n >= (size_t)sb.st_size))
			break;
	}
	close(fd);
	if (n > max) {
		st->too_big++;
		return -1;
	}
	return (long long)n;
}

static int search_file(struct grep *g, const struct workspace *w,
		       const char *rel,
		       int (*emit)(void *, const struct grep_match *),
		       void *ctx, struct grep_stats *st)
{
	long long n = read_file(g, w, rel, st);

	if (n < 0)
		return SEARCH_DONE;
	return search(g, rel, g->buf, (size_t)n, emit, ctx, st);
}

static bool want_file(void *ctx, const struct walk_entry *e, bool *descend)
{
	struct grep *g = ctx;

	(void)descend;
	if (e->type != WALK_FILE)
		return false;
	if (!g->include)
		return true;
	return glob_match(g->include, g->include_path ? e->path : e->name,
			  g->walk.hidden);
}

/* The walk polls the cancel flag itself. */
static bool stop_walk(void *ctx)
{
	return past_deadline(ctx);
}

/* The search stopped by the cancel flag (grep.h). */
static int interrupted(const struct grep *g, const char *shown,
		       struct sbx_error **err)
{
	struct strbuf q = STRBUF_INIT;
	int r;

	sbx_error_free(err);
	quoted(&q, shown);
	r = sbx_error_set(err, SBX_E_CANCELLED, 0,
			  "interrupted by signal %d while searching '%s'",
			  cancelled(g), strbuf_str(&q));
	strbuf_release(&q);
	return r;
}

/* The end of one grep_run: r, or the cancel when it stopped the search. */
static int run_end(struct grep *g, int r, const char *shown,
		   struct sbx_error **err)
{
	if (cancelled(g))
		r = interrupted(g, shown, err);
	g->deadline_ms = 0;
	g->cancel = NULL;
	return r < 0 ? r : 0;
}

int grep_run(struct grep *g, const struct workspace *w, const char *start,
	     const char *shown,
	     int (*emit)(void *ctx, const struct grep_match *m), void *ctx,
	     struct grep_stats *st, struct sbx_error **err)
{
	struct walk_opts wo = g->walk;
	struct walk_result res;
	struct stat sb;
	int fd, r = 0;

	memset(st, 0, sizeof(*st));
	if (!shown)
		shown = *start ? start : ".";
	g->deadline_ms = clock_now_ms() + g->budget_ms;
	g->cancel = w->cancel;

	fd = workspace_openat(w, start, O_PATH, 0, 0, shown, err);
	if (fd < 0 || fstat(fd, &sb) < 0) {
		int e = errno;

		if (fd >= 0) {
			close(fd);
			sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				      "cannot stat '%s'", shown);
		}
		g->deadline_ms = 0;
		g->cancel = NULL;
		return -1;
	}
	close(fd);
	if (S_ISREG(sb.st_mode)) {
		/* A file named on its own is searched, whatever its name. */
		if (!cancelled(g))
			r = search_file(g, w, start, emit, ctx, st);
		return run_end(g, r, shown, err);
	}
	if (!S_ISDIR(sb.st_mode)) {
		struct strbuf q = STRBUF_INIT;

		quoted(&q, shown);
		r = sbx_error_set(err, SBX_E_REFUSED, 0,
				  "'%s' is not a regular file or a directory",
				  strbuf_str(&q));
		strbuf_release(&q);
		g->deadline_ms = 0;
		g->cancel = NULL;
		return r;
	}

	wo.recursive = true;
	wo.types_only = true;
	wo.want = want_file;
	wo.stop = stop_walk;
	wo.ctx = g;
	if (walk_run(w, start, shown, &wo, &res, err) < 0) {
		walk_result_release(&res);
		/* A cancelled walk is a cancelled search: run_end says so. */
		return run_end(g, cancelled(g) ? 0 : -1, shown, err);
	}
	st->truncated = res.truncated;
	st->why = res.why;
	st->out_of_time = res.stopped;
	st->problems = res.problems;
	st->nproblems = res.nproblems;
	st->aproblems = res.aproblems;
	res.problems = NULL;
	res.nproblems = res.aproblems = 0;
	for (size_t i = 0; i < res.n && !st->out_of_time; i++) {
		if (must_stop(g, st))
			break;
		r = search_file(g, w, res.v[i].path, emit, ctx, st);
		if (r != SEARCH_DONE)
			break;
	}
	walk_result_release(&res);
	return run_end(g, r, shown, err);
}

void grep_stats_release(struct grep_stats *st)
{
	walk_problems_free(st->problems, st->nproblems);
	st->problems = NULL;
	st->nproblems = st->aproblems = 0;
}

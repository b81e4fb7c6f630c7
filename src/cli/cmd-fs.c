/*
 * cmd-fs.c - sbxcat fs KEY VERB ...: the workspace operations, done on the
 * host side of the bind mount, never through the engine (brief section 7,
 * docs/workspace.md).
 *
 * The work is workspace.c's (paths resolved beneath a held descriptor,
 * reads, writes, edits, stat, rm), walk.c's (bounded breadth-first
 * listings, glob) and grep.c's; this file parses, stamps the session's
 * activity, decides what to say and says it.  Every verb of a session that
 * was found stamps its activity, refused ones included.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/alloc.h"
#include "audit/audit.h"
#include "cli/cmd.h"
#include "engine/engine.h"
#include "basic/error.h"
#include "workspace/grep.h"
#include "session/session.h"
#include "basic/sig.h"
#include "basic/text.h"
#include "basic/util.h"
#include "workspace/walk.h"
#include "workspace/workspace.h"
#include "basic/xjson.h"

#define FS_DEPTH_MAX 64
#define FS_ENTRIES_MAX 10000000ULL
#define FS_COUNT_MAX 100000000ULL
#define FS_TIMEOUT_MAX 3600ULL
#define FS_READ_LIMIT_DEFAULT 2000ULL

/* The verbs, and which options each takes. */
enum {
	O_OFFSET = 1 << 0,
	O_LIMIT = 1 << 1,
	O_OLD = 1 << 2,
	O_NEW = 1 << 3,
	O_ALLMATCH = 1 << 4, /* edit --all */
	O_RECURSIVE = 1 << 5,
	O_ALL = 1 << 6, /* listings --all */
	O_HIDDEN = 1 << 7,
	O_BOUNDS = 1 << 8, /* --max-depth, --max-entries */
	O_GREP = 1 << 9,   /* --include -i -F --max-count --timeout */
};

struct fs_args {
	const char *tenant;
	const char *operand[2];
	size_t noperands;
	unsigned long long offset, limit;
	const char *old, *new;
	bool all_matches, recursive, all, hidden;
	unsigned long long max_depth, max_entries;
	const char *include;
	bool icase, fixed;
	unsigned long long max_count, timeout_s;
};

struct fs_call {
	struct sbx_ctx *ctx;
	const char *key;
	struct session_config cfg;
	struct session_root root;
	struct session_record rec;
	struct workspace ws;
	struct fs_args a;
	char *rel; /* the first operand, checked */
	/* What the audit's row says of it (audit.h): counts, AUDIT_NONE when
	 * not counted, and a few words of sbxcat's own. */
	long long out_bytes, out_results;
	const char *out_detail;
};

struct fs_verb {
	const char *name;
	const char *usage;
	unsigned opts;
	size_t min_operands, max_operands;
	bool may_be_root; /* the operand may name the workspace itself */
	bool pattern;	  /* its first operand is a pattern, checked by it */
	int (*run)(struct fs_call *c, struct sbx_error **err);
	enum audit_op op; /* its audit row's op */
	bool changes;	  /* it changes the workspace: the audit first */
};

static const struct cmd_entry *fs_cmd(void);

/* ---- output helpers ---- */

/* A path for a one-line message or a listing: escaped. */
static const char *shown(struct strbuf *sb, const char *s)
{
	strbuf_reset(sb);
	text_add_escaped(sb, s, strlen(s));
	return strbuf_str(sb);
}

/* 2000 -> "2,000" */
static const char *grouped(char out[32], unsigned long long v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", v), o = 0;

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = 0;
	return out;
}

/* Bytes of a file's content for a display: raw to a pipe or a file,
 * printable only on a terminal. */
static void put_text(const char *s, size_t len)
{
	static int tty = -1;

	if (tty < 0)
		tty = isatty(STDOUT_FILENO);
	if (tty) {
		struct strbuf sb = STRBUF_INIT;

		text_add_printable(&sb, s, len);
		fwrite(sb.buf, 1, sb.len, stdout);
		strbuf_release(&sb);
	} else {
		fwrite(s, 1, len, stdout);
	}
}

/*
 * ---- JSON written as it is made ----
 *
 * A document with one array that an input can make big (read's lines,
 * grep's matches, a listing's entries) is written as it is made, one
 * element at a time, byte for byte what cmd_print_json() prints of the
 * whole (JSON_INDENT(2)): what is held is one element, never the
 * document (an 8 MiB file of newlines made 4.2 GB of jansson objects).
 * The members around the array come from a document holding it empty,
 * dumped: the array goes where its text "\n  \"KEY\": []" is (a raw
 * newline is never inside a JSON string, so that text is that member and
 * nothing else).  Ownership: head and the document given to
 * json_stream_end are consumed.
 */
struct json_stream {
	const char *key;
	json_t *head; /* the members before the array, until written */
	size_t n;     /* elements written */
};

/* Where "\n  \"KEY\": []" starts in text, and its length. */
static size_t stream_marker(const char *text, const char *key, size_t *len)
{
	cleanup_free char *m = xasprintf("\n  \"%s\": []", key);
	const char *at = strstr(text, m);

	if (!at)
		die_bug("json stream: no member '%s'", key);
	*len = strlen(m);
	return (size_t)(at - text);
}

static void json_stream_begin(struct json_stream *js, const char *key,
			      json_t *head)
{
	js->key = key;
	js->head = head;
	js->n = 0;
}

/* The text of the document up to the array's '[' (once). */
static void stream_head(struct json_stream *js)
{
	char *text;
	size_t at, len;

	if (!js->head)
		return;
	text = json_dumps(js->head, JSON_INDENT(2));
	if (!text)
		die_oom();
	at = stream_marker(text, js->key, &len);
	fwrite(text, 1, at + len - 1, stdout);
	free(text);
	json_decref(js->head);
	js->head = NULL;
}

/* jansson's text of an element, every line indented 4 more (its depth). */
static int put_indented(const char *buf, size_t size, void *data)
{
	(void)data;
	while (size) {
		const char *nl = memchr(buf, '\n', size);
		size_t n = nl ? (size_t)(nl - buf) + 1 : size;

		fwrite(buf, 1, n, stdout);
		if (nl)
			fputs("    ", stdout);
		buf += n;
		size -= n;
	}
	return 0;
}

static void json_stream_item(struct json_stream *js, json_t *item)
{
	stream_head(js);
	fputs(js->n++ ? ",\n    " : "\n    ", stdout);
	json_dump_callback(item, put_indented, NULL, JSON_INDENT(2));
	json_decref(item);
}

/* The rest: doc holds the same members before the array, and those after. */
static void json_stream_end(struct json_stream *js, json_t *doc)
{
	char *text;
	size_t at, len;

	stream_head(js);
	text = json_dumps(doc, JSON_INDENT(2));
	if (!text)
		die_oom();
	json_decref(doc);
	at = stream_marker(text, js->key, &len);
	fputs(js->n ? "\n  ]" : "]", stdout);
	fputs(text + at + len, stdout);
	fputc('\n', stdout);
	free(text);
}

static json_t *mode_json(unsigned mode)
{
	char buf[8];

	snprintf(buf, sizeof(buf), "%04o", mode & 07777);
	return json_string(buf);
}

static const char *truncation_line(char out[96], const char *why,
				   size_t entries, unsigned depth)
{
	char n[32];

	if (why && strcmp(why, "depth") == 0)
		snprintf(out, 96,
			 "listing stopped at depth %u; deeper entries are "
			 "not shown",
			 depth);
	else
		snprintf(out, 96,
			 "listing stopped at %s entries; not every file is "
			 "shown",
			 grouped(n, entries));
	return out;
}

static void walk_opts_from(const struct fs_call *c, struct walk_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_depth = (unsigned)(c->a.max_depth ? c->a.max_depth
						 : WALK_DEPTH_DEFAULT);
	o->max_entries =
	    (size_t)(c->a.max_entries ? c->a.max_entries : WALK_ENTRIES_DEFAULT);
	o->hidden = c->a.hidden;
	o->all = c->a.all;
	o->spill = c->cfg.spill;
}

static json_t *entry_json(const struct walk_entry *e)
{
	json_t *o = json_object();

	xjson_set_path(o, "path", e->path);
	json_object_set_new(o, "type", json_string(walk_type_name(e->type)));
	json_object_set_new(o, "size", json_integer((json_int_t)e->size));
	json_object_set_new(o, "mtime", cmd_time_json(e->mtime));
	json_object_set_new(o, "mode", mode_json(e->mode));
	json_object_set_new(o, "upload", json_boolean(e->upload));
	return o;
}

static void print_entry(const struct walk_entry *e)
{
	struct strbuf sb = STRBUF_INIT;

	text_add_escaped(&sb, e->path, strlen(e->path));
	if (e->type == WALK_DIR)
		strbuf_addch(&sb, '/');
	else if (e->type == WALK_SYMLINK)
		strbuf_addch(&sb, '@');
	if (e->upload)
		strbuf_addstr(&sb, "\t(uploaded)");
	strbuf_addch(&sb, '\n');
	fwrite(sb.buf, 1, sb.len, stdout);
	strbuf_release(&sb);
}

static json_t *problems_json(const struct walk_problem *p, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		xjson_set_path(o, "path", p[i].path);
		json_object_set_new(o, "why", xjson_text(p[i].why));
		json_array_append_new(a, o);
	}
	return a;
}

static void print_problems(const struct walk_problem *p, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		const char *path = shown(&sb, p[i].path);

		fprintf(stderr, "sbxcat: skipped '%s': %s\n",
			*path ? path : ".", p[i].why);
	}
	strbuf_release(&sb);
}

/* A listing's entries and end, shared by ls and glob (doc consumed). */
static void listing_end(const struct fs_call *c, const char *what, json_t *doc,
			const struct walk_result *res)
{
	struct walk_opts o;
	char line[96];

	/* The time budget stopped it (a signal is main's to report). */
	bool timed = res->stopped && !sig_caught();
	bool truncated = res->truncated || timed;
	const char *why = timed ? "time" : res->why;

	walk_opts_from(c, &o);
	if (c->ctx->json) {
		struct json_stream js;

		json_object_set_new(doc, what, json_array());
		json_object_set_new(doc, "truncated", json_boolean(truncated));
		json_object_set_new(doc, "why",
				    truncated && why ? json_string(why)
						     : json_null());
		json_object_set_new(
		    doc, "skipped",
		    problems_json(res->problems, res->nproblems));
		json_stream_begin(&js, what, json_incref(doc));
		for (size_t i = 0; i < res->n; i++)
			json_stream_item(&js, entry_json(&res->v[i]));
		json_stream_end(&js, doc);
		return;
	}
	json_decref(doc);
	for (size_t i = 0; i < res->n; i++)
		print_entry(&res->v[i]);
	if (timed)
		printf("listing stopped after its %lld s budget; not every "
		       "file is shown\n",
		       c->ws.budget_ms / 1000);
	else if (res->truncated)
		printf("%s\n", truncation_line(line, res->why, o.max_entries,
					       o.max_depth));
	print_problems(res->problems, res->nproblems);
}

/* ---- the verbs ---- */

static int fs_write(struct fs_call *c, struct sbx_error **err)
{
	unsigned long long bytes = 0;
	bool created = false;
	struct strbuf sb = STRBUF_INIT;

	if (workspace_write(&c->ws, c->rel, c->a.operand[0], STDIN_FILENO,
			    &bytes, &created, err) < 0)
		return -1;
	c->out_bytes = (long long)bytes;
	c->out_detail = created ? "created" : "replaced";
	if (c->ctx->json) {
		json_t *o = json_object();

		xjson_set_path(o, "path", c->rel);
		json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
		json_object_set_new(o, "created", json_boolean(created));
		cmd_print_json(o);
	} else {
		printf("wrote %llu bytes to '%s'\n", bytes,
		       shown(&sb, c->a.operand[0]));
	}
	strbuf_release(&sb);
	return 0;
}

static int fs_read(struct fs_call *c, struct sbx_error **err)
{
	struct workspace_lines l = {0};
	unsigned long long offset = c->a.offset ? c->a.offset : 1;
	unsigned long long limit = c->a.limit ? c->a.limit
					      : FS_READ_LIMIT_DEFAULT;
	unsigned long long next;

	if (workspace_read_lines(&c->ws, c->rel, c->a.operand[0], offset,
				 limit, c->a.offset || c->a.limit, &l, err) < 0)
		return -1;
	next = offset + l.n;
	c->out_results = (long long)l.n;
	c->out_bytes = (long long)l.len;
	if (l.cut)
		c->out_detail = "cut at the read limit";
	if (c->ctx->json) {
		json_t *o = json_object();
		struct json_stream js;
		const char *text;
		size_t pos = 0, len;

		xjson_set_path(o, "path", c->rel);
		json_object_set_new(o, "offset", json_integer((json_int_t)offset));
		json_object_set_new(o, "lines", json_array());
		json_object_set_new(o, "lines_left",
				    l.lines_left < 0
					? json_null()
					: json_integer(l.lines_left));
		json_object_set_new(o, "more", json_boolean(l.more));
		json_object_set_new(o, "cut", json_boolean(l.cut));
		json_object_set_new(o, "size", json_integer((json_int_t)l.size));
		json_stream_begin(&js, "lines", json_incref(o));
		for (size_t i = 0; workspace_lines_next(&l, &pos, &text, &len);
		     i++) {
			char *t = xstrndup(text, len);

			json_stream_item(&js,
					 xjson_pack("{s:I, s:o}", "n",
						    (json_int_t)(l.first + i),
						    "text", xjson_text(t)));
			free(t);
		}
		json_stream_end(&js, o);
		workspace_lines_release(&l);
		return 0;
	}
	{
		const char *text;
		size_t pos = 0, len;

		for (size_t i = 0; workspace_lines_next(&l, &pos, &text, &len);
		     i++) {
			printf("%6llu\t", l.first + i);
			put_text(text, len);
			putchar('\n');
		}
	}
	if (l.cut)
		printf("... output stopped at the %llu-byte read limit; read "
		       "on with --offset %llu\n",
		       c->ws.max_read, next);
	else if (l.lines_left > 0)
		printf("... %lld more line%s; read on with --offset %llu\n",
		       l.lines_left, l.lines_left == 1 ? "" : "s", next);
	else if (l.lines_left < 0 && l.more)
		printf("... more lines follow; read on with --offset %llu\n",
		       next);
	workspace_lines_release(&l);
	return 0;
}

static int fs_read_bytes(struct fs_call *c, struct sbx_error **err)
{
	struct stat st;
	int fd = workspace_open_read(&c->ws, c->rel, c->a.operand[0], &st, err);
	struct strbuf data = STRBUF_INIT;
	char buf[65536];
	unsigned long long total = 0;
	int rc = 0;

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			struct strbuf sb = STRBUF_INIT;

			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot read '%s'",
					   shown(&sb, c->a.operand[0]));
			strbuf_release(&sb);
			break;
		}
		if (n == 0)
			break;
		/* Never more than was checked: a file that grows while it
		 * is read is cut at the size fstat gave. */
		if (total + (unsigned long long)n > c->ws.max_read)
			n = (ssize_t)(c->ws.max_read - total);
		total += (unsigned long long)n;
		if (c->ctx->json)
			strbuf_add(&data, buf, (size_t)n);
		else
			fwrite(buf, 1, (size_t)n, stdout);
		if (total >= c->ws.max_read)
			break;
	}
	close(fd);
	c->out_bytes = (long long)total;
	if (rc == 0 && c->ctx->json) {
		json_t *o = json_object();

		xjson_set_path(o, "path", c->rel);
		json_object_set_new(o, "bytes", json_integer((json_int_t)total));
		json_object_set_new(o, "content_base64",
				    xjson_base64(data.buf ? data.buf : "",
						 data.len));
		cmd_print_json(o);
	}
	strbuf_release(&data);
	return rc;
}

static int fs_edit(struct fs_call *c, struct sbx_error **err)
{
	size_t count = 0;
	unsigned long long line = 0;
	struct strbuf sb = STRBUF_INIT;

	if (workspace_edit(&c->ws, c->rel, c->a.operand[0], c->a.old,
			   strlen(c->a.old), c->a.new, strlen(c->a.new),
			   c->a.all_matches, &count, &line, err) < 0)
		return -1;
	c->out_results = (long long)count;
	if (c->ctx->json) {
		json_t *o = json_object();

		xjson_set_path(o, "path", c->rel);
		json_object_set_new(o, "replaced", json_integer((json_int_t)count));
		json_object_set_new(o, "line", json_integer((json_int_t)line));
		cmd_print_json(o);
	} else {
		printf("replaced %zu occurrence%s in '%s'\n", count,
		       count == 1 ? "" : "s", shown(&sb, c->a.operand[0]));
	}
	strbuf_release(&sb);
	return 0;
}

static int fs_ls(struct fs_call *c, struct sbx_error **err)
{
	struct walk_opts o;
	struct walk_result res = {0};
	json_t *doc;
	const char *path = c->a.noperands ? c->a.operand[0] : ".";

	walk_opts_from(c, &o);
	o.deadline_ms = clock_now_ms() + c->ws.budget_ms;
	o.recursive = c->a.recursive;
	o.hidden = true; /* ls shows dot files; grep and glob need --hidden */
	if (walk_run(&c->ws, c->rel, path, &o, &res, err) < 0)
		return -1;
	c->out_results = (long long)res.n;
	if (res.truncated)
		c->out_detail = "listing stopped at a bound";
	if (res.stopped)
		c->out_detail = "stopped at the time budget";
	doc = json_object();
	xjson_set_path(doc, "path", c->rel);
	listing_end(c, "entries", doc, &res);
	walk_result_release(&res);
	return 0;
}

/* ---- glob ---- */

struct glob_ctx {
	const char *pattern;
	bool hidden;
};

static bool glob_want(void *ctx, const struct walk_entry *e, bool *descend)
{
	const struct glob_ctx *g = ctx;

	if (e->type == WALK_DIR)
		*descend = *descend &&
			   glob_may_descend(g->pattern, e->path, g->hidden);
	return glob_match(g->pattern, e->path, g->hidden);
}

/*
 * The directory a pattern's leading literal components name ("src/lib"
 * of the pattern "src/lib/" "**" "/" "*.c"), where the walk starts; ""
 * when the first component has a wildcard.
 */
static char *glob_base(const char *pattern)
{
	const char *p = pattern, *end = pattern;

	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (!slash || strcspn(p, "*?[\\") < n)
			break;
		end = slash;
		p = slash + 1;
	}
	return xstrndup(pattern, (size_t)(end - pattern));
}

/* A ".." component anywhere in a pattern. */
static bool has_dotdot(const char *p)
{
	for (const char *q = p; (q = strstr(q, "..")); q += 2)
		if ((q == p || q[-1] == '/') && (q[2] == 0 || q[2] == '/'))
			return true;
	return false;
}

static int fs_glob(struct fs_call *c, struct sbx_error **err)
{
	const char *pattern = c->a.operand[0], *why = glob_check(pattern);
	struct glob_ctx g = {pattern, c->a.hidden};
	struct walk_opts o;
	struct walk_result res = {0};
	struct strbuf sb = STRBUF_INIT;
	char *base = NULL, *rel = NULL;
	json_t *doc;
	int rc = -1;

	if (why) {
		rc = sbx_error_set(err, SBX_E_INVALID, 0,
				   "glob pattern '%s': %s",
				   shown(&sb, pattern), why);
		goto out;
	}
	/* The pattern's literal part is a path like any other. */
	base = glob_base(pattern);
	if (*pattern == '/' ||
	    workspace_path_check(*base ? base : ".", true, &rel, err) < 0) {
		if (*pattern == '/')
			sbx_error_set(err, SBX_E_REFUSED, 0,
				      "'%s' is outside the workspace: paths "
				      "are relative to it",
				      shown(&sb, pattern));
		goto out;
	}
	if (has_dotdot(pattern)) {
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "'%s' is outside the workspace: '..' is not "
			      "allowed",
			      shown(&sb, pattern));
		goto out;
	}
	walk_opts_from(c, &o);
	o.deadline_ms = clock_now_ms() + c->ws.budget_ms;
	o.recursive = true;
	o.want = glob_want;
	o.ctx = &g;
	if (walk_run(&c->ws, rel, *base ? base : ".", &o, &res, err) < 0) {
		/* No such directory: nothing matches. */
		if (!*err || (*err)->errnum != ENOENT)
			goto out;
		sbx_error_free(err);
	}
	c->out_results = (long long)res.n;
	if (res.truncated)
		c->out_detail = "listing stopped at a bound";
	if (res.stopped)
		c->out_detail = "stopped at the time budget";
	doc = json_object();
	json_object_set_new(doc, "pattern", xjson_text(pattern));
	listing_end(c, "matches", doc, &res);
	rc = 0;
out:
	walk_result_release(&res);
	free(base);
	free(rel);
	strbuf_release(&sb);
	return rc;
}

/* ---- grep ---- */

struct grep_out {
	bool json;
	struct json_stream js; /* the matches, as they come */
	struct strbuf line;
};

static int grep_emit(void *ctx, const struct grep_match *m)
{
	struct grep_out *g = ctx;

	if (g->json) {
		char *t = xstrndup(m->text, m->len);
		json_t *o = json_object();

		xjson_set_path(o, "path", m->path);
		json_object_set_new(o, "line", json_integer((json_int_t)m->line));
		json_object_set_new(o, "text", xjson_text(t));
		json_object_set_new(o, "cut", json_boolean(m->cut));
		json_stream_item(&g->js, o);
		free(t);
		return 0;
	}
	strbuf_reset(&g->line);
	text_add_escaped(&g->line, m->path, strlen(m->path));
	strbuf_addf(&g->line, ":%llu:", m->line);
	fwrite(g->line.buf, 1, g->line.len, stdout);
	put_text(m->text, m->len);
	fputs(m->cut ? " [line cut]\n" : "\n", stdout);
	return 0;
}

static void grep_report(const struct fs_call *c, const struct grep_opts *o,
			const struct grep_stats *st)
{
	struct strbuf sb = STRBUF_INIT;
	char n[32], line[96];

	if (st->binary)
		strbuf_addf(&sb, "%llu binary file%s", st->binary,
			    st->binary == 1 ? "" : "s");
	if (st->too_big)
		strbuf_addf(&sb, "%s%llu file%s over the %llu-byte read limit",
			    sb.len ? ", " : "", st->too_big,
			    st->too_big == 1 ? "" : "s", c->ws.max_read);
	if (st->unreadable)
		strbuf_addf(&sb, "%s%llu unreadable file%s", sb.len ? ", " : "",
			    st->unreadable, st->unreadable == 1 ? "" : "s");
	if (sb.len)
		fprintf(stderr, "sbxcat: skipped %s\n", sb.buf);
	if (st->limited)
		fprintf(stderr,
			"sbxcat: the pattern hit its match limit in %llu "
			"file%s; %s not searched to the end\n",
			st->limited, st->limited == 1 ? "" : "s",
			st->limited == 1 ? "it was" : "they were");
	if (st->truncated_matches)
		fprintf(stderr,
			"sbxcat: stopped at %s matches; not every match is "
			"shown\n",
			grouped(n, o->max_count));
	if (st->out_of_time)
		fprintf(stderr,
			"sbxcat: the search stopped after its %lld s budget; "
			"not every file was searched\n",
			o->budget_ms / 1000);
	if (st->truncated)
		fprintf(stderr, "sbxcat: %s\n",
			truncation_line(line, st->why, o->walk.max_entries,
					o->walk.max_depth));
	print_problems(st->problems, st->nproblems);
	strbuf_release(&sb);
}

static int fs_grep(struct fs_call *c, struct sbx_error **err)
{
	struct grep_opts o = {0};
	struct grep_stats st = {0};
	struct grep_out out = {c->ctx->json, {0}, STRBUF_INIT};
	struct grep *g = NULL;
	char *start = NULL;
	const char *path = c->a.noperands > 1 ? c->a.operand[1] : ".";
	int rc = -1;

	o.pattern = c->a.operand[0];
	o.fixed = c->a.fixed;
	o.icase = c->a.icase;
	o.include = c->a.include;
	walk_opts_from(c, &o.walk);
	o.max_count = c->a.max_count ? c->a.max_count : GREP_MAX_COUNT_DEFAULT;
	o.budget_ms = c->a.timeout_s ? (long long)c->a.timeout_s * 1000
				     : GREP_BUDGET_MS_DEFAULT;
	o.max_read = c->ws.max_read;
	if (grep_new(&o, &g, err) < 0 ||
	    workspace_path_check(path, true, &start, err) < 0)
		goto out;
	/* The document's members before its matches, written at the first
	 * one (or at the end): nothing of it before the search can fail. */
	if (out.json)
		json_stream_begin(&out.js, "matches",
				  xjson_pack("{s:o, s:[]}", "pattern",
					     xjson_text(o.pattern), "matches"));
	if (grep_run(g, &c->ws, start, path, grep_emit, &out, &st, err) < 0)
		goto out;
	c->out_results = (long long)st.matches;
	c->out_detail = st.out_of_time		? "stopped at the time budget"
			: st.truncated_matches	? "stopped at the match bound"
			: st.truncated		? "listing stopped at a bound"
						: NULL;
	if (out.json) {
		const char *why = st.out_of_time	 ? "time"
				  : st.truncated_matches ? "matches"
				  : st.truncated	 ? st.why
							 : NULL;
		json_t *doc = json_object();

		json_object_set_new(doc, "pattern", xjson_text(o.pattern));
		json_object_set_new(doc, "matches", json_array());
		json_object_set_new(doc, "files_searched",
				    json_integer((json_int_t)st.files));
		json_object_set_new(doc, "binary_skipped",
				    json_integer((json_int_t)st.binary));
		json_object_set_new(doc, "too_big_skipped",
				    json_integer((json_int_t)st.too_big));
		json_object_set_new(doc, "limited",
				    json_integer((json_int_t)st.limited));
		json_object_set_new(doc, "truncated", json_boolean(why != NULL));
		json_object_set_new(doc, "why",
				    why ? json_string(why) : json_null());
		json_object_set_new(doc, "skipped",
				    problems_json(st.problems, st.nproblems));
		json_stream_end(&out.js, doc);
	} else {
		grep_report(c, &o, &st);
	}
	rc = 0;
out:
	json_decref(out.js.head); /* not written: the search failed */
	strbuf_release(&out.line);
	grep_stats_release(&st);
	grep_free(g);
	free(start);
	return rc;
}

/* ---- stat, rm ---- */

static const char *type_of(mode_t m)
{
	return S_ISREG(m)    ? "file"
	       : S_ISDIR(m)  ? "dir"
	       : S_ISLNK(m)  ? "symlink"
	       : S_ISFIFO(m) ? "fifo"
	       : S_ISSOCK(m) ? "socket"
	       : S_ISCHR(m)  ? "char-device"
	       : S_ISBLK(m)  ? "block-device"
			     : "other";
}

static int fs_stat(struct fs_call *c, struct sbx_error **err)
{
	struct stat st;
	char *target = NULL;
	json_t *o;

	if (workspace_stat(&c->ws, c->rel, c->a.operand[0], &st, &target,
			   err) < 0)
		return -1;
	c->out_bytes = (long long)st.st_size;
	c->out_results = 1;
	o = json_object();
	xjson_set_path(o, "path", c->rel);
	json_object_set_new(o, "type", json_string(type_of(st.st_mode)));
	json_object_set_new(o, "size", json_integer((json_int_t)st.st_size));
	json_object_set_new(o, "mode", mode_json(st.st_mode));
	json_object_set_new(o, "uid", json_integer((json_int_t)st.st_uid));
	json_object_set_new(o, "gid", json_integer((json_int_t)st.st_gid));
	json_object_set_new(o, "mtime", cmd_time_json(st.st_mtime));
	json_object_set_new(o, "links", json_integer((json_int_t)st.st_nlink));
	if (target)
		xjson_set_path(o, "target", target);
	if (c->ctx->json) {
		cmd_print_json(o);
	} else {
		struct strbuf sb = STRBUF_INIT;
		char t[32];

		printf("path: %s\n", shown(&sb, c->rel));
		printf("type: %s\nsize: %lld\nmode: %04o\nuid: %u\ngid: %u\n",
		       type_of(st.st_mode), (long long)st.st_size,
		       (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
		       (unsigned)st.st_gid);
		cmd_rfc3339(t, st.st_mtime);
		printf("mtime: %s\nlinks: %llu\n", t,
		       (unsigned long long)st.st_nlink);
		if (target)
			printf("target: %s\n", shown(&sb, target));
		strbuf_release(&sb);
		json_decref(o);
	}
	free(target);
	return 0;
}

static int fs_rm(struct fs_call *c, struct sbx_error **err)
{
	unsigned long long removed = 0;
	struct strbuf sb = STRBUF_INIT;

	if (workspace_rm(&c->ws, c->rel, c->a.operand[0], c->a.recursive,
			 &removed, err) < 0)
		return -1;
	c->out_results = (long long)removed;
	c->out_detail = "removed";
	if (c->ctx->json) {
		json_t *o = json_object();

		xjson_set_path(o, "path", c->rel);
		json_object_set_new(o, "removed",
				    json_integer((json_int_t)removed));
		cmd_print_json(o);
	} else if (c->a.recursive) {
		printf("removed '%s' (%llu entr%s)\n",
		       shown(&sb, c->a.operand[0]), removed,
		       removed == 1 ? "y" : "ies");
	} else {
		printf("removed '%s'\n", shown(&sb, c->a.operand[0]));
	}
	strbuf_release(&sb);
	return 0;
}

static const struct fs_verb verbs[] = {
    {"write", "PATH  (content from stdin)", 0, 1, 1, false, false, fs_write,
     AUDIT_WRITE, true},
    {"read", "PATH [--offset LINE] [--limit N]", O_OFFSET | O_LIMIT, 1, 1,
     false, false, fs_read, AUDIT_READ, false},
    {"read-bytes", "PATH", 0, 1, 1, false, false, fs_read_bytes,
     AUDIT_READ_BYTES, false},
    {"edit", "PATH --old TEXT --new TEXT [--all]",
     O_OLD | O_NEW | O_ALLMATCH, 1, 1, false, false, fs_edit, AUDIT_EDIT,
     true},
    {"ls", "[PATH] [-R] [--all] [--max-depth N] [--max-entries N]",
     O_RECURSIVE | O_ALL | O_BOUNDS, 0, 1, true, false, fs_ls, AUDIT_LS_INFO,
     false},
    {"glob", "PATTERN [--hidden] [--all] [--max-depth N] [--max-entries N]",
     O_HIDDEN | O_ALL | O_BOUNDS, 1, 1, true, true, fs_glob, AUDIT_GLOB_INFO,
     false},
    {"grep",
     "PATTERN [PATH] [--include GLOB] [-i] [-F] [--hidden] [--all] "
     "[--max-count N] [--max-depth N] [--max-entries N] [--timeout S]",
     O_GREP | O_HIDDEN | O_ALL | O_BOUNDS, 1, 2, true, true, fs_grep,
     AUDIT_GREP_RAW, false},
    {"stat", "PATH", 0, 1, 1, false, false, fs_stat, AUDIT_LS_INFO, false},
    {"rm", "PATH [-r]", O_RECURSIVE, 1, 1, false, false, fs_rm, AUDIT_WRITE,
     true},
};

static const struct fs_verb *find_verb(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(*verbs); i++)
		if (strcmp(verbs[i].name, name) == 0)
			return &verbs[i];
	return NULL;
}

/* ---- parsing ---- */

/* The options of every verb; fs_options says which verb takes which. */
enum { OPT_TENANT = 256, OPT_OFFSET, OPT_LIMIT, OPT_OLD, OPT_NEW,
       OPT_ALL, OPT_HIDDEN, OPT_DEPTH, OPT_ENTRIES, OPT_INCLUDE,
       OPT_COUNT, OPT_TIMEOUT };
static const struct option longopts[] = {
    COMMON_LONGOPTS,
    {"tenant", required_argument, NULL, OPT_TENANT},
    {"offset", required_argument, NULL, OPT_OFFSET},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"old", required_argument, NULL, OPT_OLD},
    {"new", required_argument, NULL, OPT_NEW},
    {"all", no_argument, NULL, OPT_ALL},
    {"hidden", no_argument, NULL, OPT_HIDDEN},
    {"max-depth", required_argument, NULL, OPT_DEPTH},
    {"max-entries", required_argument, NULL, OPT_ENTRIES},
    {"include", required_argument, NULL, OPT_INCLUDE},
    {"max-count", required_argument, NULL, OPT_COUNT},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"recursive", no_argument, NULL, 'R'},
    {"ignore-case", no_argument, NULL, 'i'},
    {"fixed-strings", no_argument, NULL, 'F'},
    {0}};

static int fs_options(struct sbx_ctx *ctx, const struct fs_verb *v, int argc,
		      char **argv, struct fs_args *a)
{
	const struct cmd_entry *cmd = fs_cmd();
	int c, rc, li = -1;

	optind = 0; /* full reset: argv is a new vector */
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS "RriF", longopts,
				&li)) != -1) {
		unsigned need = c == OPT_OFFSET	   ? O_OFFSET
				: c == OPT_LIMIT   ? O_LIMIT
				: c == OPT_OLD	   ? O_OLD
				: c == OPT_NEW	   ? O_NEW
				: c == OPT_ALL	   ? (v->opts & O_ALLMATCH
							  ? O_ALLMATCH
							  : O_ALL)
				: c == OPT_HIDDEN  ? O_HIDDEN
				: c == OPT_DEPTH   ? O_BOUNDS
				: c == OPT_ENTRIES ? O_BOUNDS
				: c == 'R' || c == 'r' ? O_RECURSIVE
				: c == OPT_INCLUDE || c == 'i' || c == 'F' ||
					c == OPT_COUNT || c == OPT_TIMEOUT
				    ? O_GREP
				    : 0;
		rc = 0;
		if (need && !(v->opts & need)) {
			if (li >= 0)
				return cmd_usage_error(cmd,
						       "'%s' does not take --%s",
						       v->name, longopts[li].name);
			return cmd_usage_error(cmd, "'%s' does not take -%c",
					       v->name, c);
		}
		li = -1;
		switch (c) {
		case OPT_TENANT:
			a->tenant = optarg;
			break;
		case OPT_OFFSET:
			rc = cmd_parse_count(cmd, "--offset", optarg,
					     1ULL << 62, &a->offset);
			break;
		case OPT_LIMIT:
			rc = cmd_parse_count(cmd, "--limit", optarg,
					     1ULL << 62, &a->limit);
			break;
		case OPT_OLD:
			a->old = optarg;
			break;
		case OPT_NEW:
			a->new = optarg;
			break;
		case OPT_ALL:
			if (v->opts & O_ALLMATCH)
				a->all_matches = true;
			else
				a->all = true;
			break;
		case OPT_HIDDEN:
			a->hidden = true;
			break;
		case OPT_DEPTH:
			rc = cmd_parse_count(cmd, "--max-depth", optarg,
					     FS_DEPTH_MAX, &a->max_depth);
			break;
		case OPT_ENTRIES:
			rc = cmd_parse_count(cmd, "--max-entries", optarg,
					     FS_ENTRIES_MAX, &a->max_entries);
			break;
		case OPT_INCLUDE:
			a->include = optarg;
			break;
		case OPT_COUNT:
			rc = cmd_parse_count(cmd, "--max-count", optarg,
					     FS_COUNT_MAX, &a->max_count);
			break;
		case OPT_TIMEOUT:
			rc = cmd_parse_count(cmd, "--timeout", optarg,
					     FS_TIMEOUT_MAX, &a->timeout_s);
			break;
		case 'R':
		case 'r':
			a->recursive = true;
			break;
		case 'i':
			a->icase = true;
			break;
		case 'F':
			a->fixed = true;
			break;
		default:
			rc = cmd_common_option(ctx, cmd, c, optarg);
		}
		if (rc)
			return rc;
	}
	for (; optind < argc; optind++) {
		if (a->noperands == v->max_operands)
			return cmd_usage_error(cmd, "%s: unexpected operand '%s'",
					       v->name, argv[optind]);
		a->operand[a->noperands++] = argv[optind];
	}
	if (a->noperands < v->min_operands)
		return cmd_usage_error(cmd, "%s: %s is missing (sbxcat fs KEY %s %s)",
				       v->name,
				       v->pattern ? "PATTERN" : "PATH",
				       v->name, v->usage);
	if ((v->opts & O_OLD) && (!a->old || !*a->old))
		return cmd_usage_error(cmd, "edit needs --old TEXT, not empty");
	if ((v->opts & O_NEW) && !a->new)
		return cmd_usage_error(cmd, "edit needs --new TEXT (it may be "
					    "empty)");
	if ((v->opts & O_GREP) && !*a->operand[0])
		return cmd_usage_error(cmd, "grep needs a pattern, not empty");
	return 0;
}

/* An option given before the verb that takes its value as the next word
 * ("--tenant T"; "--tenant=T" is one word): longopts says which. */
static bool takes_value(const char *a)
{
	if (a[0] != '-')
		return false;
	if (a[1] != '-')
		return strcmp(a, "-C") == 0; /* the one short option with one */
	for (const struct option *o = longopts; o->name; o++)
		if (strcmp(a + 2, o->name) == 0)
			return o->has_arg == required_argument;
	return false;
}

/*
 * The operation's audit row: the session's tenant, key and runtime (or,
 * for a session not found, the caller's tenant and no key: the key asked
 * for goes to the detail, never onto another tenant's chain), the path (for
 * grep the directory searched, never the pattern, which may be what the
 * agent looks for), and how it went.  A failure to record goes to *aerr.
 */
static void fs_record(struct fs_call *c, const struct fs_verb *v,
		      struct audit *au, bool found, long long started,
		      struct sbx_error **err, struct sbx_error **aerr)
{
	const char *operand = v->op == AUDIT_GREP_RAW
				  ? (c->a.noperands > 1 ? c->a.operand[1] : ".")
			      : c->a.noperands ? c->a.operand[0]
					       : ".";
	/* glob's target is its pattern, as given: not a path */
	cleanup_free char *target = v->pattern && v->op != AUDIT_GREP_RAW
					? xstrdup(operand)
					: workspace_path_shown(operand);
	struct audit_event ev = {
	    .op = v->op,
	    .tenant = found ? c->rec.tenant : cmd_tenant(c->a.tenant),
	    .session_key = found ? c->rec.key : NULL,
	    .asked_key = found ? NULL : c->key,
	    .runtime = found ? c->rec.runtime : NULL,
	    .target = target,
	    .ok = !*err,
	    .why = *err,
	    .detail = c->out_detail,
	    .bytes = c->out_bytes,
	    .results = c->out_results,
	    .duration_ms = clock_now_ms() - started,
	};

	audit_event(au, &ev, aerr);
}

static int fs_main(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = fs_cmd();
	const struct fs_verb *v = NULL;
	struct fs_call c = {0};
	struct sbx_error *err = NULL, *aerr = NULL;
	struct audit *au = NULL;
	bool unrecorded = false;
	long long started;
	char **args;
	int nargs = 0, verb = 0, rc = 0;
	bool found = false;

	/* Options may come before KEY and between KEY and VERB too
	 * (sbxcat fs --json KEY ls, sbxcat fs KEY --tenant T read x): they
	 * are moved after the verb, where getopt sees them all. */
	args = xcalloc((size_t)argc + 1, sizeof(*args));
	for (int k = 1; k < argc; k++) {
		if (argv[k][0] == '-' && argv[k][1]) {
			if (strcmp(argv[k], "-h") == 0 ||
			    strcmp(argv[k], "--help") == 0) {
				cmd_print_help(stdout, cmd);
				free(args);
				return 0;
			}
			args[nargs++] = argv[k];
			if (takes_value(argv[k]) && k + 1 < argc)
				args[nargs++] = argv[++k];
		} else if (!c.key) {
			c.key = argv[k];
		} else {
			verb = k;
			break;
		}
	}
	if (!c.key)
		rc = cmd_usage_error(cmd, "which session? KEY is missing");
	else if (!verb)
		rc = cmd_usage_error(cmd, "which operation? VERB is missing "
					  "(write, read, read-bytes, edit, "
					  "ls, glob, grep, stat, rm)");
	else if (!(v = find_verb(argv[verb]))) {
		struct strbuf sb = STRBUF_INIT;

		rc = cmd_usage_error(cmd, "'%s' is not an fs verb (write, read, "
					  "read-bytes, edit, ls, glob, grep, "
					  "stat, rm)",
				     shown(&sb, argv[verb]));
		strbuf_release(&sb);
	}
	if (rc) {
		free(args);
		return rc;
	}
	/* argv of the verb: its name, the options moved, the rest. */
	memmove(args + 1, args, (size_t)nargs * sizeof(*args));
	args[0] = argv[0]; /* "sbxcat", for getopt's messages */
	nargs++;
	for (int k = verb + 1; k < argc; k++)
		args[nargs++] = argv[k];
	rc = fs_options(ctx, v, nargs, args, &c.a);
	free(args);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (cmd_audit_open(ctx, &au, &err) < 0)
		return cmd_report(&err);
	c.ctx = ctx;
	c.ws.fd = -1;
	c.root = (struct session_root)SESSION_ROOT_INIT;
	c.out_bytes = c.out_results = AUDIT_NONE;
	started = clock_now_ms();
	if (cmd_session_begin(ctx, &c.cfg, &c.root, &err) < 0 ||
	    session_find(&c.root, c.key, cmd_tenant(c.a.tenant), &c.rec,
			     &err) < 0)
		goto out;
	found = true;
	{
		int fd = session_workspace_open(&c.root, c.rec.key, &err);
		struct stat st;
		char *path;

		if (fd < 0)
			goto out;
		/* What fs makes belongs to whoever the workspace was given
		 * to when the session was opened: the sandbox's uid then. */
		if (fstat(fd, &st) < 0) {
			sbx_error_set(&err, SBX_E_UNAVAILABLE, errno,
				      "cannot stat the workspace of '%s'",
				      c.rec.key);
			close(fd);
			goto out;
		}
		path = session_workspace_path(&c.root, c.rec.key);
		rc = workspace_init(&c.ws, fd, path, st.st_uid, c.cfg.max_read,
				    c.cfg.max_write, &err);
		free(path);
		if (rc < 0)
			goto out;
	}
	/* The verbs that take a path check it here; glob and grep check
	 * theirs (a pattern, and an optional path after it). */
	if (!v->pattern &&
	    workspace_path_check(c.a.noperands ? c.a.operand[0] : ".",
				 v->may_be_root, &c.rel, &err) < 0)
		goto out;
	/* Nothing is changed or read unless its row will be written. */
	if (audit_ready(au, &err) < 0) {
		unrecorded = true;
		goto out;
	}
	v->run(&c, &err);
out:
	/* The row says how the verb went (a stamp that failed after it is
	 * not the verb's failure). */
	if (!unrecorded)
		fs_record(&c, v, au, found, started, &err, &aerr);
	/* Every operation on a session that exists is activity, refused
	 * ones too: an agent that keeps trying is not idle. */
	if (found) {
		struct sbx_error *terr = NULL;

		if (session_record_touch(&c.root, c.rec.key, &terr) < 0 && !err)
			err = terr;
		else
			sbx_error_free(&terr);
	}
	rc = err ? cmd_report(&err) : 0;
	if (aerr)
		rc = cmd_report(&aerr);
	cmd_audit_close(au);
	free(c.rel);
	workspace_close(&c.ws);
	session_record_release(&c.rec);
	session_root_close(&c.root);
	session_config_release(&c.cfg);
	return rc;
}

const struct cmd_entry cmd_fs_entry = {
    .name = "fs",
    .usage = "KEY VERB [ARGS] [--tenant T] [--json]",
    .summary = "workspace files from the host side: read, write, edit, "
	       "ls, glob, grep, stat, rm",
    .exec = fs_main,
    .epilog =
	"Verbs:\n"
	"  write PATH                      content from stdin, atomically\n"
	"  read PATH [--offset LINE] [--limit N]\n"
	"                                  lines numbered like cat -n\n"
	"  read-bytes PATH                 raw bytes to stdout\n"
	"  edit PATH --old TEXT --new TEXT [--all]\n"
	"  ls [PATH] [-R] [--all] [--max-depth N] [--max-entries N]\n"
	"  glob PATTERN [--hidden] [--all] ...   ** spans directories\n"
	"  grep PATTERN [PATH] [--include GLOB] [-i] [-F] [--hidden]\n"
	"       [--max-count N] [--timeout S] ...\n"
	"  stat PATH\n"
	"  rm PATH [-r]\n"
	"Paths are relative to the workspace and resolved beneath it; see "
	"docs/workspace.md.",
};

static const struct cmd_entry *fs_cmd(void)
{
	return &cmd_fs_entry;
}

/*
 * svc-fs.c - the workspace operations as the service layer's (svc-fs.h):
 * the recorder, the session and its workspace around workspace.c, walk.c
 * and grep.c, each verb's audit row, its JSON document, and the streaming
 * of the documents an input can make big.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/text.h"
#include "basic/xjson.h"
#include "session/session.h"
#include "svc/svc-fs.h"
#include "svc/svc-int.h"
#include "svc/svc-wire.h"
#include "workspace/grep.h"
#include "workspace/walk.h"
#include "workspace/workspace.h"

/*
 * ---- JSON written as it is made ----
 *
 * A document with one array that an input can make big (read's lines,
 * grep's matches, a listing's entries) is written as it is made, one
 * element at a time, byte for byte what json_dumpf(JSON_INDENT(2)) and a
 * newline make of the whole: what is held is one element and a block of
 * text, never the document (an 8 MiB file of newlines made 4.2 GB of
 * jansson objects).  The members around the array come from a document
 * holding it empty, dumped: the array goes where its text "\n  \"KEY\":
 * []" is (a raw newline is never inside a JSON string, so that text is
 * that member and nothing else).  Ownership: head and the document given
 * to stream_end are consumed.  The text goes to the sink in blocks of
 * STREAM_BLOCK; the first write that fails is kept, and nothing more is
 * written.
 */
#define STREAM_BLOCK 65536

struct json_stream {
	const struct svc_sink *sink;
	const char *key;
	json_t *head; /* the members before the array, until written */
	size_t n;     /* elements written */
	struct strbuf buf;
	struct sbx_error *err;
};

static void stream_flush(struct json_stream *js)
{
	if (!js->err && js->buf.len)
		(void)svc_sink_write(js->sink, js->buf.buf, js->buf.len,
				     &js->err);
	strbuf_reset(&js->buf);
}

static void stream_put(struct json_stream *js, const char *s, size_t len)
{
	if (js->err)
		return;
	strbuf_add(&js->buf, s, len);
	if (js->buf.len >= STREAM_BLOCK)
		stream_flush(js);
}

static void stream_puts(struct json_stream *js, const char *s)
{
	stream_put(js, s, strlen(s));
}

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

static void stream_begin(struct json_stream *js, const struct svc_sink *sink,
			 const char *key, json_t *head)
{
	memset(js, 0, sizeof(*js));
	js->sink = sink;
	js->key = key;
	js->head = head;
	strbuf_init(&js->buf);
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
	stream_put(js, text, at + len - 1);
	free(text);
	json_decref(js->head);
	js->head = NULL;
}

/* jansson's text of an element, every line indented 4 more (its depth). */
static int put_indented(const char *buf, size_t size, void *data)
{
	struct json_stream *js = data;

	while (size) {
		const char *nl = memchr(buf, '\n', size);
		size_t n = nl ? (size_t)(nl - buf) + 1 : size;

		stream_put(js, buf, n);
		if (nl)
			stream_puts(js, "    ");
		buf += n;
		size -= n;
	}
	return 0;
}

static void stream_item(struct json_stream *js, json_t *item)
{
	stream_head(js);
	stream_puts(js, js->n++ ? ",\n    " : "\n    ");
	json_dump_callback(item, put_indented, js, JSON_INDENT(2));
	json_decref(item);
}

/*
 * The rest: doc holds the same members before the array, and those
 * after.  Returns 0, or -1 with *err the first write that failed.
 */
static int stream_end(struct json_stream *js, json_t *doc,
		      struct sbx_error **err)
{
	char *text;
	size_t at, len;

	stream_head(js);
	text = json_dumps(doc, JSON_INDENT(2));
	if (!text)
		die_oom();
	json_decref(doc);
	at = stream_marker(text, js->key, &len);
	stream_puts(js, js->n ? "\n  ]" : "]");
	stream_puts(js, text + at + len);
	stream_puts(js, "\n");
	free(text);
	stream_flush(js);
	strbuf_release(&js->buf);
	if (js->err) {
		*err = steal_pointer(&js->err);
		return -1;
	}
	return 0;
}

/* A stream abandoned: what it held freed, its error dropped. */
static void stream_drop(struct json_stream *js)
{
	json_decref(js->head);
	js->head = NULL;
	strbuf_release(&js->buf);
	sbx_error_free(&js->err);
}

/* ---- small documents ---- */

static json_t *mode_json(unsigned mode)
{
	char buf[8];

	snprintf(buf, sizeof(buf), "%04o", mode & 07777);
	return json_string(buf);
}

static json_t *entry_json(const struct walk_entry *e)
{
	json_t *o = json_object();

	xjson_set_path(o, "path", e->path);
	json_object_set_new(o, "type", json_string(walk_type_name(e->type)));
	json_object_set_new(o, "size", json_integer((json_int_t)e->size));
	json_object_set_new(o, "mtime", svc_time_json(e->mtime));
	json_object_set_new(o, "mode", mode_json(e->mode));
	json_object_set_new(o, "upload", json_boolean(e->upload));
	return o;
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

/* {"path": rel} and more members to come. */
static json_t *path_doc(const char *rel)
{
	json_t *o = json_object();

	xjson_set_path(o, "path", rel);
	return o;
}

/* path, or the workspace itself (ls, glob, grep). */
static const char *or_dot(const char *path)
{
	return path ? path : ".";
}

/* s, or "" for none: a path refused as the workspace itself where a verb
 * needs one, a pattern or an old text refused as empty. */
static const char *need(const char *path)
{
	return path ? path : "";
}

/*
 * ---- the transaction every verb shares ----
 *
 * What a verb's row says: its op and target (the path as given,
 * normalised; glob's pattern verbatim; grep's directory, never its
 * pattern, which may be what the agent looks for), and how it went:
 * counts (AUDIT_NONE when not counted) and a few words of sbxcat's own.
 */
struct fs_op {
	struct svc_op op; /* the session, the recorder, the row's counts */
	const char *target;
	bool verbatim; /* target is a pattern, not a path */
	struct workspace ws;
	char *rel; /* the path checked, normalised */
};

/* The session's workspace, as what fs makes belongs to whoever it was
 * given to when the session was opened: the sandbox's uid then. */
static int open_workspace(struct fs_op *o, struct sbx_error **err)
{
	const struct session_config *cfg = &o->op.s->cfg.session;
	int fd = session_workspace_open(&o->op.root, &o->op.rec, err);
	struct stat st;
	char *path;
	int rc;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot stat the workspace of '%s'",
			      o->op.rec.key);
		close(fd);
		return -1;
	}
	path = session_workspace_path(&o->op.root, &o->op.rec);
	rc = workspace_init(&o->ws, fd, path, st.st_uid, cfg->max_read,
			    cfg->max_write,
			    o->op.call ? o->op.call->cancel : NULL, err);
	free(path);
	return rc;
}

/*
 * Everything before the operation: the recorder, the session under the
 * caller's tenant, its workspace, path checked (NULL: the verb checks its
 * own, a pattern), the recorder ready.  Returns 0, or -1 with *err; either
 * way fs_end ends it.
 */
static int fs_begin(struct fs_op *o, const struct svc *s,
		    const struct svc_call *call, const char *key,
		    enum audit_op op, const char *target, bool verbatim,
		    const char *path, bool may_be_root, struct sbx_error **err)
{
	memset(o, 0, sizeof(*o));
	o->target = target;
	o->verbatim = verbatim;
	o->ws.fd = -1;
	if (svc_op_begin(&o->op, s, call, key, op, err) < 0 ||
	    open_workspace(o, err) < 0 ||
	    (path && workspace_path_check(path, may_be_root, &o->rel, err) < 0))
		return -1;
	return svc_op_ready(&o->op, err);
}

/*
 * Everything after: the row (the target as given, normalised, or the
 * pattern verbatim), the activity stamp and the release (svc_op_end).
 * Returns 0, or -1 with *err.
 */
static int fs_end(struct fs_op *o, struct sbx_error **err)
{
	cleanup_free char *target =
	    o->verbatim ? xstrdup(o->target) : workspace_path_shown(o->target);
	int rc = svc_op_end(&o->op, target, err);

	free(o->rel);
	workspace_close(&o->ws);
	return rc;
}

/* ---- write ---- */

int svc_fs_write(const struct svc *s, const struct svc_call *call,
		 const struct svc_fs_write_req *req,
		 struct svc_fs_write_res *res, struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_WRITE, need(req->path), false,
		     need(req->path), false, err) == 0 &&
	    workspace_write(&o.ws, o.rel, need(req->path), req->in_fd,
			    &res->bytes, &res->created, err) == 0) {
		o.op.bytes = (long long)res->bytes;
		o.op.detail = res->created ? "created" : "replaced";
		res->path = xstrdup(o.rel);
		res->doc = path_doc(o.rel);
		json_object_set_new(res->doc, "bytes",
				    json_integer((json_int_t)res->bytes));
		json_object_set_new(res->doc, "created",
				    json_boolean(res->created));
	}
	return fs_end(&o, err);
}

void svc_fs_write_res_release(struct svc_fs_write_res *res)
{
	free(res->path);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- read ---- */

/* The document of a read, its lines streamed. */
static int read_json(const struct svc_sink *sink, const char *rel,
		     unsigned long long offset, const struct workspace_lines *l,
		     struct sbx_error **err)
{
	json_t *o = path_doc(rel);
	struct json_stream js;
	const char *text;
	size_t pos = 0, len;

	json_object_set_new(o, "offset", json_integer((json_int_t)offset));
	json_object_set_new(o, "lines", json_array());
	json_object_set_new(o, "lines_left",
			    l->lines_left < 0 ? json_null()
					      : json_integer(l->lines_left));
	json_object_set_new(o, "more", json_boolean(l->more));
	json_object_set_new(o, "cut", json_boolean(l->cut));
	json_object_set_new(o, "size", json_integer((json_int_t)l->size));
	stream_begin(&js, sink, "lines", json_incref(o));
	for (size_t i = 0; workspace_lines_next(l, &pos, &text, &len); i++)
		stream_item(&js, xjson_pack("{s:I, s:o}", "n",
					    (json_int_t)(l->first + i), "text",
					    xjson_textn(text, len)));
	return stream_end(&js, o, err);
}

static int read_op(struct fs_op *o, const struct svc_fs_read_req *req,
		   struct svc_fs_read_res *res, struct sbx_error **err)
{
	struct workspace_lines l = {0};
	unsigned long long offset = req->offset ? req->offset : 1;
	unsigned long long limit =
	    req->limit ? req->limit : SVC_FS_READ_LIMIT_DEFAULT;
	int rc = 0;

	if (workspace_read_lines(&o->ws, o->rel, need(req->path), offset, limit,
				 req->offset || req->limit, &l, err) < 0)
		return -1;
	o->op.results = (long long)l.n;
	o->op.bytes = (long long)l.len;
	if (l.cut)
		o->op.detail = "cut at the read limit";
	res->first = l.first;
	res->n = l.n;
	res->lines_left = l.lines_left;
	res->more = l.more;
	res->cut = l.cut;
	res->next = offset + l.n;
	res->max_read = o->ws.max_read;
	if (req->json) {
		rc = read_json(req->json, o->rel, offset, &l, err);
		workspace_lines_release(&l);
		return rc;
	}
	res->len = l.len;
	res->text = steal_pointer(&l.buf);
	workspace_lines_release(&l);
	return 0;
}

int svc_fs_read(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_read_req *req, struct svc_fs_read_res *res,
		struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_READ, need(req->path), false,
		     need(req->path), false, err) == 0)
		read_op(&o, req, res, err);
	return fs_end(&o, err);
}

void svc_fs_read_res_release(struct svc_fs_read_res *res)
{
	free(res->text);
	memset(res, 0, sizeof(*res));
}

/* ---- read-bytes ---- */

/* A read of path that failed with errno e: cancelled, when the flag is up
 * (the read was interrupted for it), else the machine's. */
static int read_failed(const struct fs_op *o, const char *path, int e,
		       struct sbx_error **err)
{
	int sig = e == EINTR ? workspace_cancelled(&o->ws) : 0;
	struct strbuf sb = STRBUF_INIT;
	int rc;

	text_add_escaped(&sb, path, strlen(path));
	if (sig)
		rc = sbx_error_set(err, SBX_E_CANCELLED, 0,
				   "'%s' was being read when signal %d came",
				   strbuf_str(&sb), sig);
	else
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				   "cannot read '%s'", strbuf_str(&sb));
	strbuf_release(&sb);
	return rc;
}

/* The file's bytes to req->out, or into data (json_doc); *total of them,
 * never more than the read limit the open checked them against. */
static int copy_out(const struct fs_op *o, int fd, const char *path,
		    const struct svc_fs_read_bytes_req *req,
		    struct strbuf *data, unsigned long long *total,
		    struct sbx_error **err)
{
	cleanup_free char *buf = xmalloc(65536);
	unsigned long long max = o->ws.max_read;

	for (;;) {
		ssize_t n = read(fd, buf, 65536);

		if (n < 0 && errno == EINTR && !workspace_cancelled(&o->ws))
			continue;
		if (n < 0)
			return read_failed(o, path, errno, err);
		if (n == 0)
			return 0;
		/* Never more than was checked: a file that grows while it
		 * is read is cut at the size fstat gave. */
		if (*total + (unsigned long long)n > max)
			n = (ssize_t)(max - *total);
		*total += (unsigned long long)n;
		if (req->json_doc)
			strbuf_add(data, buf, (size_t)n);
		else if (svc_sink_write(req->out, buf, (size_t)n, err) < 0)
			return -1;
		if (*total >= max)
			return 0;
	}
}

static int read_bytes_op(struct fs_op *o,
			 const struct svc_fs_read_bytes_req *req,
			 struct svc_fs_read_bytes_res *res,
			 struct sbx_error **err)
{
	const char *path = need(req->path);
	struct strbuf data = STRBUF_INIT;
	struct stat st;
	int fd = workspace_open_read(&o->ws, o->rel, path, &st, err), rc;

	if (fd < 0)
		return -1;
	rc = copy_out(o, fd, path, req, &data, &res->bytes, err);
	close(fd);
	o->op.bytes = (long long)res->bytes;
	if (rc == 0 && req->json_doc) {
		res->doc = path_doc(o->rel);
		json_object_set_new(res->doc, "bytes",
				    json_integer((json_int_t)res->bytes));
		json_object_set_new(
		    res->doc, "content_base64",
		    xjson_base64(data.buf ? data.buf : "", data.len));
	}
	strbuf_release(&data);
	return rc;
}

int svc_fs_read_bytes(const struct svc *s, const struct svc_call *call,
		      const struct svc_fs_read_bytes_req *req,
		      struct svc_fs_read_bytes_res *res, struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_READ_BYTES, need(req->path),
		     false, need(req->path), false, err) == 0)
		read_bytes_op(&o, req, res, err);
	return fs_end(&o, err);
}

void svc_fs_read_bytes_res_release(struct svc_fs_read_bytes_res *res)
{
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- edit ---- */

int svc_fs_edit(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_edit_req *req, struct svc_fs_edit_res *res,
		struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_EDIT, need(req->path), false,
		     need(req->path), false, err) == 0 &&
	    workspace_edit(&o.ws, o.rel, need(req->path), need(req->old),
			   strlen(need(req->old)), need(req->new),
			   strlen(need(req->new)), req->all, &res->replaced,
			   &res->line, err) == 0) {
		o.op.results = (long long)res->replaced;
		res->path = xstrdup(o.rel);
		res->doc = path_doc(o.rel);
		json_object_set_new(res->doc, "replaced",
				    json_integer((json_int_t)res->replaced));
		json_object_set_new(res->doc, "line",
				    json_integer((json_int_t)res->line));
	}
	return fs_end(&o, err);
}

void svc_fs_edit_res_release(struct svc_fs_edit_res *res)
{
	free(res->path);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- listings ---- */

static void walk_opts_from(const struct fs_op *o, const struct svc_fs_bounds *b,
			   struct walk_opts *w)
{
	memset(w, 0, sizeof(*w));
	w->max_depth =
	    (unsigned)(b->max_depth ? b->max_depth : WALK_DEPTH_DEFAULT);
	w->max_entries =
	    (size_t)(b->max_entries ? b->max_entries : WALK_ENTRIES_DEFAULT);
	w->all = b->all;
	w->spill = o->op.s->cfg.session.spill;
}

/*
 * A listing's end, shared by ls and glob: the row's counts, how it ended
 * (l), and its entries to the JSON stream or to entry (doc, the members
 * before the array, consumed).  The walk's problems move to l.
 */
static int listing_end(
    struct fs_op *o, const struct walk_opts *wo, const char *what, json_t *doc,
    struct walk_result *w, const struct svc_sink *json,
    int (*entry)(void *, const struct walk_entry *, struct sbx_error **),
    void *arg, struct svc_fs_listing *l, struct sbx_error **err)
{
	o->op.results = (long long)w->n;
	if (w->truncated)
		o->op.detail = "listing stopped at a bound";
	if (w->stopped)
		o->op.detail = "stopped at the time budget";
	l->n = w->n;
	l->out_of_time = w->stopped;
	l->truncated = w->truncated && !w->stopped;
	l->why = w->stopped ? "time" : w->truncated ? w->why : NULL;
	l->max_depth = wo->max_depth;
	l->max_entries = wo->max_entries;
	l->budget_ms = o->ws.budget_ms;
	l->problems = steal_pointer(&w->problems);
	l->nproblems = w->nproblems;
	w->nproblems = w->aproblems = 0;
	if (json) {
		struct json_stream js;

		json_object_set_new(doc, what, json_array());
		json_object_set_new(doc, "truncated",
				    json_boolean(l->why != NULL));
		json_object_set_new(doc, "why",
				    l->why ? json_string(l->why) : json_null());
		json_object_set_new(doc, "skipped",
				    problems_json(l->problems, l->nproblems));
		stream_begin(&js, json, what, json_incref(doc));
		for (size_t i = 0; i < w->n; i++)
			stream_item(&js, entry_json(&w->v[i]));
		return stream_end(&js, doc, err);
	}
	json_decref(doc);
	for (size_t i = 0; i < w->n; i++)
		if (entry && entry(arg, &w->v[i], err) < 0)
			return -1;
	return 0;
}

static void listing_release(struct svc_fs_listing *l)
{
	walk_problems_free(l->problems, l->nproblems);
	memset(l, 0, sizeof(*l));
}

static int ls_op(struct fs_op *o, const struct svc_fs_ls_req *req,
		 struct svc_fs_ls_res *res, struct sbx_error **err)
{
	struct walk_opts wo;
	struct walk_result w = {0};
	int rc = -1;

	walk_opts_from(o, &req->bounds, &wo);
	wo.deadline_ms = clock_now_ms() + o->ws.budget_ms;
	wo.recursive = req->recursive;
	wo.hidden = true; /* ls shows dot files; grep and glob need hidden */
	if (walk_run(&o->ws, o->rel, or_dot(req->path), &wo, &w, err) == 0)
		rc = listing_end(o, &wo, "entries", path_doc(o->rel), &w,
				 req->json, req->entry, req->arg, &res->l, err);
	walk_result_release(&w);
	return rc;
}

int svc_fs_ls(const struct svc *s, const struct svc_call *call,
	      const struct svc_fs_ls_req *req, struct svc_fs_ls_res *res,
	      struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_LS_INFO, or_dot(req->path),
		     false, or_dot(req->path), true, err) == 0)
		ls_op(&o, req, res, err);
	return fs_end(&o, err);
}

void svc_fs_ls_res_release(struct svc_fs_ls_res *res)
{
	listing_release(&res->l);
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

/* The pattern checked: its syntax, and that it stays beneath. */
static int glob_check_pattern(const char *pattern, const char *base, char **rel,
			      struct sbx_error **err)
{
	const char *why = glob_check(pattern);
	struct strbuf sb = STRBUF_INIT;
	int rc = -1;

	text_add_escaped(&sb, pattern, strlen(pattern));
	if (why)
		sbx_error_set(err, SBX_E_INVALID, 0, "glob pattern '%s': %s",
			      strbuf_str(&sb), why);
	else if (*pattern == '/')
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "'%s' is outside the workspace: paths are "
			      "relative to it",
			      strbuf_str(&sb));
	/* The pattern's literal part is a path like any other. */
	else if (workspace_path_check(*base ? base : ".", true, rel, err) < 0)
		;
	else if (has_dotdot(pattern))
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "'%s' is outside the workspace: '..' is not "
			      "allowed",
			      strbuf_str(&sb));
	else
		rc = 0;
	strbuf_release(&sb);
	return rc;
}

static int glob_op(struct fs_op *o, const struct svc_fs_glob_req *req,
		   struct svc_fs_glob_res *res, struct sbx_error **err)
{
	struct glob_ctx g = {need(req->pattern), req->hidden};
	cleanup_free char *base = glob_base(need(req->pattern));
	struct walk_opts wo;
	struct walk_result w = {0};
	json_t *doc;
	int rc = -1;

	if (glob_check_pattern(need(req->pattern), base, &o->rel, err) < 0)
		return -1;
	walk_opts_from(o, &req->bounds, &wo);
	wo.deadline_ms = clock_now_ms() + o->ws.budget_ms;
	wo.recursive = true;
	wo.hidden = req->hidden;
	wo.want = glob_want;
	wo.ctx = &g;
	if (walk_run(&o->ws, o->rel, *base ? base : ".", &wo, &w, err) < 0) {
		/* No such directory: nothing matches. */
		if (!*err || (*err)->errnum != ENOENT)
			goto out;
		sbx_error_free(err);
	}
	doc = json_object();
	json_object_set_new(doc, "pattern", xjson_text(need(req->pattern)));
	rc = listing_end(o, &wo, "matches", doc, &w, req->json, req->entry,
			 req->arg, &res->l, err);
out:
	walk_result_release(&w);
	return rc;
}

int svc_fs_glob(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_glob_req *req, struct svc_fs_glob_res *res,
		struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	/* glob's target is its pattern, as given: not a path */
	if (fs_begin(&o, s, call, req->key, AUDIT_GLOB_INFO, need(req->pattern),
		     true, NULL, true, err) == 0)
		glob_op(&o, req, res, err);
	return fs_end(&o, err);
}

void svc_fs_glob_res_release(struct svc_fs_glob_res *res)
{
	listing_release(&res->l);
}

/* ---- grep ---- */

/* Where grep's matches go: the JSON stream, or the caller's callback and
 * the first error it gave. */
struct grep_out {
	const struct svc_fs_grep_req *req;
	struct json_stream js;
	struct sbx_error *err;
};

static int grep_emit(void *ctx, const struct grep_match *m)
{
	struct grep_out *g = ctx;

	if (g->req->json) {
		char *t = xstrndup(m->text, m->len);
		json_t *o = json_object();

		xjson_set_path(o, "path", m->path);
		json_object_set_new(o, "line",
				    json_integer((json_int_t)m->line));
		json_object_set_new(o, "text", xjson_text(t));
		json_object_set_new(o, "cut", json_boolean(m->cut));
		stream_item(&g->js, o);
		free(t);
		/* A reader gone: the search stops. */
		return g->js.err ? -1 : 0;
	}
	if (g->req->match)
		return g->req->match(g->req->arg, m, &g->err);
	return 0;
}

static json_t *grep_doc(const char *pattern, const struct grep_stats *st,
			const char *why)
{
	json_t *doc = json_object();

	json_object_set_new(doc, "pattern", xjson_text(pattern));
	json_object_set_new(doc, "matches", json_array());
	json_object_set_new(doc, "files_searched",
			    json_integer((json_int_t)st->files));
	json_object_set_new(doc, "binary_skipped",
			    json_integer((json_int_t)st->binary));
	json_object_set_new(doc, "too_big_skipped",
			    json_integer((json_int_t)st->too_big));
	json_object_set_new(doc, "limited",
			    json_integer((json_int_t)st->limited));
	json_object_set_new(doc, "truncated", json_boolean(why != NULL));
	json_object_set_new(doc, "why", why ? json_string(why) : json_null());
	json_object_set_new(doc, "skipped",
			    problems_json(st->problems, st->nproblems));
	return doc;
}

/* The search's options from the request, and the bounds that apply in
 * res. */
static void grep_opts_from(const struct fs_op *o,
			   const struct svc_fs_grep_req *req,
			   struct grep_opts *go, struct svc_fs_grep_res *res)
{
	memset(go, 0, sizeof(*go));
	go->pattern = need(req->pattern);
	go->fixed = req->fixed;
	go->icase = req->icase;
	go->include = req->include;
	walk_opts_from(o, &req->bounds, &go->walk);
	go->walk.hidden = req->hidden;
	go->max_count =
	    req->max_count ? req->max_count : GREP_MAX_COUNT_DEFAULT;
	go->budget_ms = req->timeout_s ? (long long)req->timeout_s * 1000
				       : GREP_BUDGET_MS_DEFAULT;
	go->max_read = o->ws.max_read;
	res->max_count = go->max_count;
	res->max_read = go->max_read;
	res->max_depth = go->walk.max_depth;
	res->max_entries = go->walk.max_entries;
	res->budget_ms = go->budget_ms;
}

static int grep_op(struct fs_op *o, const struct svc_fs_grep_req *req,
		   struct svc_fs_grep_res *res, struct sbx_error **err)
{
	struct grep_opts go;
	struct grep_out out = {.req = req};
	struct grep *g = NULL;
	int rc = -1;

	grep_opts_from(o, req, &go, res);
	if (grep_new(&go, &g, err) < 0 ||
	    workspace_path_check(or_dot(req->path), true, &o->rel, err) < 0)
		goto out;
	/* The document's members before its matches, written at the first
	 * one (or at the end): nothing of it before the search can fail. */
	if (req->json)
		stream_begin(&out.js, req->json, "matches",
			     xjson_pack("{s:o, s:[]}", "pattern",
					xjson_text(need(req->pattern)),
					"matches"));
	if (grep_run(g, &o->ws, o->rel, or_dot(req->path), grep_emit, &out,
		     &res->st, err) < 0) {
		/* A sink or callback that failed stopped the search. */
		if (!*err)
			*err = out.js.err ? steal_pointer(&out.js.err)
					  : steal_pointer(&out.err);
		if (!*err)
			sbx_error_set(err, SBX_E_INTERNAL, 0,
				      "the search was stopped");
		goto out;
	}
	o->op.results = (long long)res->st.matches;
	o->op.detail = res->st.out_of_time ? "stopped at the time budget"
		       : res->st.truncated_matches
			   ? "stopped at the match bound"
		       : res->st.truncated ? "listing stopped at a bound"
					   : NULL;
	res->why = res->st.out_of_time	       ? "time"
		   : res->st.truncated_matches ? "matches"
		   : res->st.truncated	       ? res->st.why
					       : NULL;
	if (req->json)
		rc = stream_end(
		    &out.js, grep_doc(need(req->pattern), &res->st, res->why),
		    err);
	else
		rc = 0;
out:
	if (req->json && rc < 0)
		stream_drop(&out.js); /* not finished: the search failed */
	sbx_error_free(&out.err);
	grep_free(g);
	return rc;
}

int svc_fs_grep(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_grep_req *req, struct svc_fs_grep_res *res,
		struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	/* grep's target is where it searched, never the pattern */
	if (fs_begin(&o, s, call, req->key, AUDIT_GREP_RAW, or_dot(req->path),
		     false, NULL, true, err) == 0)
		grep_op(&o, req, res, err);
	return fs_end(&o, err);
}

void svc_fs_grep_res_release(struct svc_fs_grep_res *res)
{
	grep_stats_release(&res->st);
	memset(res, 0, sizeof(*res));
}

/* ---- stat ---- */

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

static void stat_res(const char *rel, const struct stat *st,
		     struct svc_fs_stat_res *res)
{
	json_t *o = path_doc(rel);

	res->path = xstrdup(rel);
	res->type = type_of(st->st_mode);
	res->size = (unsigned long long)st->st_size;
	res->mode = (unsigned)(st->st_mode & 07777);
	res->uid = (unsigned long)st->st_uid;
	res->gid = (unsigned long)st->st_gid;
	res->mtime = (long long)st->st_mtime;
	res->links = (unsigned long long)st->st_nlink;
	json_object_set_new(o, "type", json_string(res->type));
	json_object_set_new(o, "size", json_integer((json_int_t)st->st_size));
	json_object_set_new(o, "mode", mode_json(st->st_mode));
	json_object_set_new(o, "uid", json_integer((json_int_t)st->st_uid));
	json_object_set_new(o, "gid", json_integer((json_int_t)st->st_gid));
	json_object_set_new(o, "mtime", svc_time_json(st->st_mtime));
	json_object_set_new(o, "links", json_integer((json_int_t)st->st_nlink));
	if (res->target)
		xjson_set_path(o, "target", res->target);
	res->doc = o;
}

int svc_fs_stat(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_stat_req *req, struct svc_fs_stat_res *res,
		struct sbx_error **err)
{
	struct fs_op o;
	struct stat st;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_STAT, need(req->path),
		     false, need(req->path), false, err) == 0 &&
	    workspace_stat(&o.ws, o.rel, need(req->path), &st, &res->target,
			   err) == 0) {
		o.op.bytes = (long long)st.st_size;
		o.op.results = 1;
		stat_res(o.rel, &st, res);
	}
	return fs_end(&o, err);
}

void svc_fs_stat_res_release(struct svc_fs_stat_res *res)
{
	free(res->path);
	free(res->target);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- rm ---- */

int svc_fs_rm(const struct svc *s, const struct svc_call *call,
	      const struct svc_fs_rm_req *req, struct svc_fs_rm_res *res,
	      struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_REMOVE, need(req->path),
		     false, need(req->path), false, err) == 0 &&
	    workspace_rm(&o.ws, o.rel, need(req->path), req->recursive,
			 &res->removed, err) == 0) {
		o.op.results = (long long)res->removed;
		o.op.detail = "removed";
		res->path = xstrdup(o.rel);
		res->doc = path_doc(o.rel);
		json_object_set_new(res->doc, "removed",
				    json_integer((json_int_t)res->removed));
	}
	return fs_end(&o, err);
}

void svc_fs_rm_res_release(struct svc_fs_rm_res *res)
{
	free(res->path);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- mkdir, move ---- */

/* What rel is after a change, for the answer (the operation's own
 * look: no row of its own); a failure leaves st's type NULL. */
static void after(struct fs_op *o, const char *rel, struct svc_fs_stat_res *st)
{
	struct sbx_error *e = NULL;
	struct stat sb;

	if (workspace_stat(&o->ws, rel, rel, &sb, &st->target, &e) == 0)
		stat_res(rel, &sb, st);
	sbx_error_free(&e);
}

/*
 * Both are changes to the tree that the audit's ops do not name apart
 * yet: recorded as write (as remove was before it had its op), the
 * detail saying which.
 */
int svc_fs_mkdir(const struct svc *s, const struct svc_call *call,
		 const struct svc_fs_mkdir_req *req,
		 struct svc_fs_mkdir_res *res, struct sbx_error **err)
{
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_WRITE, need(req->path), false,
		     need(req->path), false, err) == 0 &&
	    workspace_mkdir(&o.ws, o.rel, need(req->path), &res->created,
			    err) == 0) {
		o.op.detail =
		    res->created ? "directory made" : "directory there already";
		res->path = xstrdup(o.rel);
		after(&o, o.rel, &res->st);
	}
	return fs_end(&o, err);
}

void svc_fs_mkdir_res_release(struct svc_fs_mkdir_res *res)
{
	svc_fs_stat_res_release(&res->st);
	free(res->path);
	memset(res, 0, sizeof(*res));
}

int svc_fs_move(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_move_req *req, struct svc_fs_move_res *res,
		struct sbx_error **err)
{
	cleanup_free char *from = workspace_path_shown(need(req->from));
	cleanup_free char *to = workspace_path_shown(need(req->to));
	cleanup_free char *target = xasprintf("%s -> %s", from, to);
	struct fs_op o;

	memset(res, 0, sizeof(*res));
	if (fs_begin(&o, s, call, req->key, AUDIT_WRITE, target, true,
		     need(req->from), false, err) == 0 &&
	    workspace_path_check(need(req->to), false, &res->to, err) == 0 &&
	    workspace_move(&o.ws, o.rel, need(req->from), res->to,
			   need(req->to), err) == 0) {
		o.op.detail = "moved";
		res->from = xstrdup(o.rel);
		after(&o, res->to, &res->st);
	}
	return fs_end(&o, err);
}

void svc_fs_move_res_release(struct svc_fs_move_res *res)
{
	svc_fs_stat_res_release(&res->st);
	free(res->from);
	free(res->to);
	memset(res, 0, sizeof(*res));
}

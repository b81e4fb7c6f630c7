/*
 * wire-ops.c - the operations on a session (sandboxd-wire.md section 5,
 * generation A; section 9's run and stop) and the reads of a kept
 * workspace, each one call of svc/ (svc-exec.h, svc-fs.h), which writes
 * its audit row.  Answers as sandboxd's: an operation that fails is 200
 * with the failure in the body, in the words clients and models know.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/base64.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/text.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "serve/wire-status.h"
#include "serve/wire.h"
#include "svc/svc-exec.h"
#include "svc/svc-fs.h"
#include "svc/svc-session.h"

#define EXEC_OUTPUT_MAX 100000		/* generation A: merged, bytes */
#define RUN_OUTPUT_MAX (10 << 20)	/* generation B: both streams */

/* ---- exec and run ---- */

/* What a command wrote, as the wire returns it: one buffer (merged) or
 * two, cut at a total. */
struct captured {
	pthread_mutex_t lock;
	struct strbuf buf[2];
	bool merged, cut;
	size_t total, max;
};

static int capture(struct captured *c, int which, const void *p, size_t n)
{
	pthread_mutex_lock(&c->lock);
	if (c->total + n > c->max) {
		n = c->max - c->total;
		c->cut = true;
	}
	strbuf_add(&c->buf[c->merged ? 0 : which], p, n);
	c->total += n;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int cap_out(void *arg, const void *p, size_t n, struct sbx_error **e)
{
	return capture(arg, 0, p, n);
}

static int cap_err(void *arg, const void *p, size_t n, struct sbx_error **e)
{
	return capture(arg, 1, p, n);
}

/* Run the command of req in w's session, captured into c. */
static int run_captured(struct wire_req *w, struct svc_exec_req *req,
			struct captured *c, struct svc_exec_res *res,
			struct sbx_error **err)
{
	req->key = w->ws.key;
	req->in_fd = -1;
	req->out = (struct svc_sink){.fd = -1, .write = cap_out, .arg = c};
	req->err = (struct svc_sink){.fd = -1, .write = cap_err, .arg = c};
	return svc_exec(&w->snap->svc, &w->call, req, res, err);
}

/* A timeout of the wire, in the milliseconds the exec takes (a
 * fraction of one rounds up): at most the ceiling; none (or 0, which
 * sandboxd took as no limit): the ceiling. */
static unsigned long long wire_timeout(const struct wire_req *w, double t,
				       bool given)
{
	unsigned long long ceiling =
	    (unsigned long long)w->snap->svc.cfg.session.execute_timeout_s *
	    1000;

	if (!given || !(t > 0) || t * 1000 >= (double)ceiling)
		return ceiling;
	double m = t * 1000;
	unsigned long long ms = (unsigned long long)m;

	if ((double)ms < m)
		ms++;
	return ms ? ms : 1;
}

/* Whether err says the session's container is not running (stopped:
 * not_running; gone: its container removed). */
static bool is_down(const struct sbx_error *err, bool gone_too)
{
	return err && (err->why == SBX_R_NOT_RUNNING ||
		       (gone_too && err->why == SBX_R_GONE));
}

/* Start the session's container again (sandboxd's healing: the files
 * are the workspace's, on the host, so nothing is lost; a hibernated
 * session is woken so): 0 when it runs, else -1 with *err. */
static int heal(struct wire_req *w, struct sbx_error **err)
{
	struct svc_session_open_req o = {
	    .scope = SVC_WIRE_KEY_SCOPE,
	    .subject = w->ws.wire.id,
	    .host = "",
	    .cat = &w->snap->cat,
	    .runtime = w->ws.rec.runtime,
	    .name = w->ws.wire.id,
	};
	struct svc_session_open_res res;
	struct svc_call call = w->call;
	int rc;

	call.tenant = w->ws.rec.tenant;
	rc = svc_session_open(&w->snap->svc, &call, &o, &res, err);
	svc_session_open_res_release(&res);
	return rc;
}

/*
 * The command, once more after healing when its container was down.  A
 * hibernated session the host has no room to wake: -1, *woken_not
 * saying why (the quota's refusal), *err the command's.
 */
static int run_healing(struct wire_req *w, struct svc_exec_req *req,
		       struct captured *c, struct svc_exec_res *res,
		       bool gone_too, struct sbx_error **woken_not,
		       struct sbx_error **err)
{
	int rc = run_captured(w, req, c, res, err);
	struct sbx_error *herr = NULL;

	if (rc == 0 || res->ended || !is_down(*err, gone_too))
		return rc;
	if (heal(w, &herr) < 0) {
		if (w->ws.marked && herr->kind == SBX_E_REFUSED)
			*woken_not = steal_pointer(&herr);
		sbx_error_free(&herr);
		return rc;
	}
	sbx_error_free(err);
	svc_exec_res_release(res);
	memset(res, 0, sizeof(*res));
	return run_captured(w, req, c, res, err);
}

/* sandboxd's 429 for a hibernated session the host has no room for. */
static void wake_refused(struct wire_req *w, const struct sbx_error *why)
{
	wire_error(w, why, &(struct wire_subject){.waking = true});
}

static void exec_failed(struct wire_req *w, struct sbx_error *err)
{
	cleanup_free char *m = wire_said(w, err->msg);

	wire_json(w, 200,
		  xjson_pack("{s:s+, s:i, s:b}", "output", "Error: ", m,
			     "exit_code", 1, "truncated", false));
}

void wire_exec(struct wire_req *w)
{
	struct captured c = {.lock = PTHREAD_MUTEX_INITIALIZER,
			     .buf = {STRBUF_INIT, STRBUF_INIT},
			     .merged = true,
			     .max = EXEC_OUTPUT_MAX};
	struct svc_exec_req x = {0};
	struct svc_exec_res r = {0};
	struct sbx_error *err = NULL, *woken_not = NULL;
	long long t = 0;
	bool given = false;

	if (!wire_str(w, "command", true, false, &x.shell) ||
	    !wire_int(w, "timeout_seconds", 0, true, &t, &given))
		goto out;
	x.timeout_ms = wire_timeout(w, (double)t, given);
	if (run_healing(w, &x, &c, &r, true, &woken_not, &err) < 0 &&
	    !r.ended) {
		if (woken_not)
			wake_refused(w, woken_not);
		else
			exec_failed(w, err);
		goto out;
	}
	/* A command that never started: the engine's reason, as docker
	 * exec prints it. */
	if (r.not_started && !c.buf[0].len)
		strbuf_addstr(&c.buf[0], r.not_started);
	wire_json(w, 200,
		  xjson_pack("{s:o, s:i, s:b}", "output",
			     xjson_textn(c.buf[0].buf ? c.buf[0].buf : "",
					 c.buf[0].len),
			     "exit_code",
			     r.end == SVC_EXEC_TIMED_OUT ? 124 : r.exit_code,
			     "truncated", c.cut));
out:
	sbx_error_free(&woken_not);
	sbx_error_free(&err);
	svc_exec_res_release(&r);
	strbuf_release(&c.buf[0]);
	strbuf_release(&c.buf[1]);
}

/* run's argv: a list of at least one string. */
static bool run_argv(struct wire_req *w, char ***argv, int *argc)
{
	json_t *a = json_object_get(w->body, "argv"), *v;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) == 0 ||
	    json_array_size(a) > 4096) {
		wire_invalid(w, "body", "argv", a ? "list_type" : "missing",
			     "Input should be a list of 1 to 4096 strings");
		return false;
	}
	*argv = xcalloc(json_array_size(a) + 1, sizeof(char *));
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v) ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			wire_invalid(w, "body", "argv", "string_type",
				     "Input should be a valid string");
			return false;
		}
		(*argv)[i] = (char *)json_string_value(v);
	}
	*argc = (int)i;
	return true;
}

static bool run_id_valid(const char *s)
{
	size_t n;

	for (n = 0; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') ||
		      (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == 32;
}

/*
 * run's env: an object of strings, into x's "NAME=VALUE" list (svc's
 * rules: svc_exec_env_check; a refusal names a name, never a value).
 */
/* run's env refused: 422 whose input is the names, never a value. */
static void env_invalid(struct wire_req *w, const char *type, const char *msg)
{
	json_t *env = json_object_get(w->body, "env"), *names = NULL, *v;
	const char *name;

	if (json_is_object(env)) {
		names = json_array();
		json_object_foreach(env, name, v)
		    json_array_append_new(names, xjson_string(name));
	}
	wire_invalid_input(w, "body", "env", type, msg, names);
	json_decref(names);
}

static bool run_env(struct wire_req *w, struct svc_exec_req *x,
		    struct strbuf *held)
{
	json_t *env = json_object_get(w->body, "env"), *v;
	struct sbx_error *err = NULL;
	const char *name, **list;
	size_t i = 0;

	if (!env || json_is_null(env))
		return true;
	if (!json_is_object(env) ||
	    json_object_size(env) > SVC_EXEC_ENV_COUNT_MAX) {
		env_invalid(w, "dict_type",
			    "Input should be an object of at most 128 "
			    "strings");
		return false;
	}
	list = xcalloc(json_object_size(env) + 1, sizeof(*list));
	json_object_foreach(env, name, v)
	{
		if (!json_is_string(v) ||
		    strlen(json_string_value(v)) != json_string_length(v) ||
		    strchr(name, '=')) {
			free(list);
			for (size_t k = 0; k < i; k++)
				strbuf_release(&held[k]);
			env_invalid(w, "string_type",
				    "Each value should be a valid string, "
				    "each name one without '='");
			return false;
		}
		strbuf_addf(&held[i], "%s=%s", name, json_string_value(v));
		list[i] = held[i].buf;
		i++;
	}
	x->env = list;
	x->nenv = i;
	if (svc_exec_env_check(x->env, x->nenv, &err) < 0) {
		env_invalid(w, "value_error", err->msg);
		sbx_error_free(&err);
		return false;
	}
	return true;
}

/* run's env, cwd (as the file operations take a path: *cwd, the
 * workspace's relative one) and run_id, checked. */
static bool run_fields(struct wire_req *w, struct svc_exec_req *x,
		       struct strbuf *held, char **cwd, const char **run_id)
{
	const char *given = NULL, *why;

	if (!run_env(w, x, held) || !wire_str(w, "cwd", false, true, &given))
		return false;
	if (given && !(*cwd = wire_path(w, given, &why))) {
		wire_invalid(w, "body", "cwd", "value_error",
			     "The working directory is outside the workspace");
		return false;
	}
	x->cwd = *cwd;
	if (!wire_str(w, "run_id", false, true, run_id))
		return false;
	if (*run_id && !run_id_valid(*run_id)) {
		wire_invalid(w, "body", "run_id", "string_pattern_mismatch",
			     "String should match pattern '^[0-9a-f]{32}$'");
		return false;
	}
	return true;
}

static void run_answer(struct wire_req *w, const struct svc_exec_res *r,
		       struct captured *c)
{
	bool timed_out = r->end == SVC_EXEC_TIMED_OUT;

	wire_json(w, 200,
		  xjson_pack("{s:o, s:o, s:o, s:b, s:b, s:i}", "stdout",
			     xjson_textn(c->buf[0].buf ? c->buf[0].buf : "",
					 c->buf[0].len), "stderr",
			     xjson_textn(c->buf[1].buf ? c->buf[1].buf : "",
					 c->buf[1].len), "exit_code",
			     timed_out || r->end != SVC_EXEC_EXITED
				 ? json_null()
				 : json_integer(r->exit_code),
			     "timed_out", timed_out, "output_limited", c->cut,
			     "output_limit", RUN_OUTPUT_MAX));
}

void wire_run(struct wire_req *w)
{
	struct captured c = {.lock = PTHREAD_MUTEX_INITIALIZER,
			     .buf = {STRBUF_INIT, STRBUF_INIT},
			     .max = RUN_OUTPUT_MAX};
	struct svc_exec_req x = {0};
	struct svc_exec_res r = {0};
	struct sbx_error *err = NULL, *woken_not = NULL;
	const char *run_id = NULL;
	char **argv = NULL, *cwd = NULL;
	struct strbuf env[SVC_EXEC_ENV_COUNT_MAX] = {0};
	double t = 0;
	bool given = false, registered = false;

	if (!run_argv(w, &argv, &x.argc) ||
	    !wire_num(w, "timeout_seconds", 0, true, &t, &given) ||
	    !run_fields(w, &x, env, &cwd, &run_id))
		goto out;
	/* A run is its session's: another session's run of the same id
	 * is not this one (neither a conflict nor a thing to stop). */
	if (run_id && serve_run_add(w->sv, w->ws.key, run_id,
				    (atomic_int *)w->req->gone) < 0) {
		wire_detail(w, 409, "Run %s is running already", run_id);
		goto out;
	}
	registered = run_id != NULL;
	/* Stoppable from the command line too (sbxcat exec KEY --stop). */
	x.run_id = run_id;
	x.argv = argv;
	x.timeout_ms = wire_timeout(w, t, given);
	/* A container gone is 410, never silently made anew (section 9);
	 * one stopped is started again. */
	if (run_healing(w, &x, &c, &r, false, &woken_not, &err) < 0 &&
	    !r.ended) {
		cleanup_free char *m = wire_said(w, err->msg);

		if (woken_not)
			wake_refused(w, woken_not);
		else if (err->kind == SBX_E_INVALID)
			wire_invalid(w, "body", "cwd", "value_error", m);
		else
			wire_error(w, err,
				   &(struct wire_subject){.run = run_id});
		goto out;
	}
	run_answer(w, &r, &c);
out:
	if (registered)
		serve_run_del(w->sv, w->ws.key, run_id);
	for (size_t i = 0; i < x.nenv; i++) {
		explicit_bzero(env[i].buf, env[i].len);
		strbuf_release(&env[i]);
	}
	free((void *)x.env);
	free(cwd);
	free(argv);
	sbx_error_free(&woken_not);
	sbx_error_free(&err);
	svc_exec_res_release(&r);
	strbuf_release(&c.buf[0]);
	strbuf_release(&c.buf[1]);
}

void wire_run_stop(struct wire_req *w)
{
	const char *run_id = w->req->params[1];
	struct sbx_error *err = NULL;
	bool running, ended;

	if (!run_id_valid(run_id)) {
		wire_invalid(w, "path", "run_id", "string_pattern_mismatch",
			     "String should match pattern '^[0-9a-f]{32}$'");
		return;
	}
	/* A run that ended, or never was: stopped all the same.  One of
	 * this service's in this session, by its cancel; one the command
	 * line started (--run-id) in this session, by its file. */
	if (!serve_run_stop(w->sv, w->ws.key, run_id) &&
	    svc_exec_stop(&w->snap->svc, &w->call, w->ws.key, run_id, 0,
			  &running, &ended, &err) < 0)
		sbx_error_free(&err);
	w->answered = true;
	w->res->status = 204;
}

/* ---- files ---- */

/* The path field as the workspace takes it; false once answered (with
 * the failure in the shape the route's client expects: how). */
static bool op_path(struct wire_req *w, const char *field, char **rel,
		    const char **given)
{
	const char *why;

	if (!wire_str(w, field, true, false, given))
		return false;
	*rel = wire_path(w, *given, &why);
	return true;
}

/* "[... N more lines. Use offset=M to read more.]" and the rest of a
 * read's content, from the lines svc gave. */
static json_t *read_content(const struct svc_fs_read_res *r,
			    unsigned long long offset)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *j;

	strbuf_add(&sb, r->text ? r->text : "", r->len);
	if (sb.len && sb.buf[sb.len - 1] == '\n')
		strbuf_setlen(&sb, sb.len - 1);
	if (r->more && r->lines_left > 0)
		strbuf_addf(&sb,
			    "\n\n[... %lld more lines. Use offset=%llu to "
			    "read more.]",
			    r->lines_left, offset + r->n);
	else if (r->more)
		strbuf_addf(&sb, "\n\n[... more lines. Use offset=%llu to read "
				 "more.]",
			    offset + r->n);
	/* The lines are text already (workspace.h, read); a NUL in the
	 * file is U+0000, as sandboxd's str keeps it. */
	j = xjson_textn(sb.buf ? sb.buf : "", sb.len);
	strbuf_release(&sb);
	return j;
}

/* read, on a live session or a kept workspace. */
static void do_read(struct wire_req *w, bool archive)
{
	struct svc_fs_read_req r = {0};
	struct svc_fs_read_res res = {0};
	struct sbx_error *err = NULL;
	cleanup_free char *rel = NULL;
	const char *given;
	long long offset = 0, limit = 2000;
	bool has_off = false, has_lim = false;

	if (!op_path(w, "path", &rel, &given) ||
	    !wire_int(w, "offset", 0, false, &offset, &has_off) ||
	    !wire_int(w, "limit", 1, false, &limit, &has_lim))
		return;
	if (!rel) {
		if (archive)
			wire_detail(w, 400, "Path '%s' is outside the workspace",
				    given);
		else
			wire_json(w, 200,
				  xjson_pack("{s:s++}", "content",
					     "Error: Path '", given,
					     "' is outside the workspace"));
		return;
	}
	r.key = w->ws.key;
	r.path = rel;
	/* sandboxd's default read is of the whole file (refused over the
	 * read limit); a slice asked for reads a slice of any file. */
	if (offset != 0 || limit != 2000) {
		r.offset = (unsigned long long)offset + 1;
		r.limit = (unsigned long long)limit;
	}
	if (svc_fs_read(&w->snap->svc, &w->call, &r, &res, &err) < 0) {
		struct wire_subject sub = {.path = given};
		cleanup_free char *msg = wire_read_text(err, &sub);

		/* The archive's route refuses what it cannot find and a
		 * file over the read limit (sandboxd's 400 "File is N bytes,
		 * over the M-byte read limit", which WorkspaceArchive raises
		 * rather than return as the file's text); the rest is
		 * content, as sandboxd's. */
		if (archive &&
		    (err->why == SBX_R_NOT_FOUND || err->why == SBX_R_OUTSIDE ||
		     err->why == SBX_R_OVER_READ_LIMIT))
			wire_error(w, err, &sub);
		else
			wire_json(w, 200, xjson_pack("{s:s}", "content", msg));
	} else {
		wire_json(w, 200,
			  xjson_pack("{s:o}", "content",
				     read_content(&res, (unsigned long long)offset)));
	}
	sbx_error_free(&err);
	svc_fs_read_res_release(&res);
}

void wire_read(struct wire_req *w)
{
	do_read(w, false);
}

static void do_read_bytes(struct wire_req *w, bool archive)
{
	struct svc_fs_read_bytes_req r = {.json_doc = true};
	struct svc_fs_read_bytes_res res = {0};
	struct sbx_error *err = NULL;
	cleanup_free char *rel = NULL;
	const char *given;

	if (!op_path(w, "path", &rel, &given))
		return;
	r.key = w->ws.key;
	r.path = rel;
	if (rel && svc_fs_read_bytes(&w->snap->svc, &w->call, &r, &res, &err) ==
		       0) {
		json_t *b = json_object_get(res.doc, "content_base64");

		wire_json(w, 200,
			  xjson_pack("{s:O}", "content_b64",
				     b ? b : json_string("")));
	} else if (!archive) {
		wire_json(w, 200, xjson_pack("{s:s}", "content_b64", ""));
	} else if (!rel) {
		wire_detail(w, 400, "Path '%s' is outside the workspace",
			    given);
	} else {
		wire_error(w, err, &(struct wire_subject){.path = given});
	}
	sbx_error_free(&err);
	svc_fs_read_bytes_res_release(&res);
}

void wire_read_bytes(struct wire_req *w)
{
	do_read_bytes(w, false);
}

/* The bytes of a write as a descriptor svc_fs_write reads. */
static int bytes_fd(const struct strbuf *data)
{
	int fd = memfd_create("sbxcat-write", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (write_all(fd, data->buf ? data->buf : "", data->len) < 0 ||
	    lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void write_result(struct wire_req *w, const char *path,
			 const char *error)
{
	wire_json(w, 200,
		  xjson_pack("{s:s?, s:s?}", "path", path, "error", error));
}

void wire_write(struct wire_req *w)
{
	struct svc_fs_write_req r = {0};
	struct svc_fs_write_res wr = {0};
	struct strbuf data = STRBUF_INIT;
	struct sbx_error *err = NULL;
	cleanup_free char *rel = NULL;
	const char *given, *b64;
	size_t bad;

	if (!op_path(w, "path", &rel, &given) ||
	    !wire_str(w, "content_b64", true, false, &b64))
		goto out;
	if (base64_decode(&data, b64, strlen(b64), BASE64_STD, true, &bad) <
	    0) {
		wire_detail(w, 400,
			    "content_b64 is not valid base64: bad character "
			    "or length at offset %zu",
			    bad);
		goto out;
	}
	if (!rel) {
		write_result(w, NULL,
			     "Failed to write file: the path is "
			     "outside the workspace");
		goto out;
	}
	r.key = w->ws.key;
	r.path = rel;
	r.in_fd = bytes_fd(&data);
	if (r.in_fd < 0) {
		write_result(w, NULL, "Failed to write file: no memory");
		goto out;
	}
	if (svc_fs_write(&w->snap->svc, &w->call, &r, &wr, &err) < 0) {
		cleanup_free char *m = xasprintf("Failed to write file: %s",
						 err->msg);
		write_result(w, NULL, m);
	} else {
		cleanup_free char *abs = wire_abs_path(w, wr.path);
		write_result(w, abs, NULL);
	}
	close(r.in_fd);
out:
	strbuf_release(&data);
	sbx_error_free(&err);
	svc_fs_write_res_release(&wr);
}

void wire_edit(struct wire_req *w)
{
	struct svc_fs_edit_req r = {0};
	struct svc_fs_edit_res er = {0};
	struct sbx_error *err = NULL;
	cleanup_free char *rel = NULL;
	const char *given;

	if (!op_path(w, "path", &rel, &given) ||
	    !wire_str(w, "old_string", true, false, &r.old) ||
	    !wire_str(w, "new_string", true, false, &r.new) ||
	    !wire_bool(w, "replace_all", &r.all))
		goto out;
	r.key = w->ws.key;
	r.path = rel ? rel : given;
	if (!rel) {
		wire_json(w, 200,
			  xjson_pack("{s:n, s:s, s:n}", "path", "error",
				     "Failed to edit file: the path is "
				     "outside the workspace",
				     "occurrences"));
	} else if (svc_fs_edit(&w->snap->svc, &w->call, &r, &er, &err) < 0) {
		cleanup_free char *m = wire_edit_text(
		    err, &(struct wire_subject){.path = given, .old = r.old});
		wire_json(w, 200,
			  xjson_pack("{s:n, s:s, s:n}", "path", "error", m,
				     "occurrences"));
	} else {
		cleanup_free char *abs = wire_abs_path(w, er.path);
		wire_json(w, 200,
			  xjson_pack("{s:s, s:n, s:I}", "path", abs, "error",
				     "occurrences", (json_int_t)er.replaced));
	}
	sbx_error_free(&err);
	svc_fs_edit_res_release(&er);
out:
}

void wire_exists(struct wire_req *w)
{
	struct svc_fs_stat_req r = {0};
	struct svc_fs_stat_res sr = {0};
	struct sbx_error *err = NULL;
	cleanup_free char *rel = NULL;
	const char *given;
	bool yes = false;

	if (op_path(w, "path", &rel, &given)) {
		r.key = w->ws.key;
		r.path = rel;
		if (rel &&
		    svc_fs_stat(&w->snap->svc, &w->call, &r, &sr, &err) == 0)
			yes = !strcmp(sr.type, "file");
		wire_json(w, 200, xjson_pack("{s:b}", "exists", yes));
	}
	sbx_error_free(&err);
	svc_fs_stat_res_release(&sr);
}

/* ---- listings ---- */

struct listing {
	json_t *rows;
	const char *prefix; /* what each row's path begins with */
	bool glob;
};

static int list_entry(void *arg, const svc_fs_entry *e, struct sbx_error **err)
{
	struct listing *l = arg;
	bool dir = svc_fs_type_of(e) == SVC_FS_DIR;
	cleanup_free char *path =
	    l->glob ? xasprintf("./%s", e->path)
		    : xasprintf("%s%s%s", l->prefix, *l->prefix ? "/" : "",
				e->name);

	char when[32];

	/* Generation B's modified_at: ISO 8601, UTC; null for a time the
	 * sandbox set where it cannot be written (before 1970, or past
	 * what a struct tm holds). */
	clock_format_time(when, e->mtime);
	/* FileEntry's name and path are strings: a name that is not UTF-8
	 * shows each invalid byte as U+FFFD (docs/serve.md, "Text"). */
	json_array_append_new(
	    l->rows,
	    xjson_pack("{s:o, s:o, s:b, s:o, s:o}", "name",
		       xjson_text(e->name), "path", xjson_text(path), "is_dir",
		       dir && !l->glob, "size",
		       l->glob ? json_null()
			       : json_integer((json_int_t)e->size),
		       "modified_at",
		       strcmp(when, "-") ? json_string(when) : json_null()));
	return 0;
}

/* Directories first, then by name (ls); by path (glob). */
static int by_dir_name(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int dx = json_is_true(json_object_get(x, "is_dir"));
	int dy = json_is_true(json_object_get(y, "is_dir"));

	if (dx != dy)
		return dy - dx;
	return strcmp(json_string_value(json_object_get(x, "path")),
		      json_string_value(json_object_get(y, "path")));
}

static json_t *sorted(json_t *rows)
{
	size_t n = json_array_size(rows);
	json_t **v = xcalloc(n + 1, sizeof(*v));
	json_t *out = json_array();

	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(rows, i);
	qsort(v, n, sizeof(*v), by_dir_name);
	for (size_t i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(rows);
	return out;
}

static void do_ls(struct wire_req *w, bool archive)
{
	struct svc_fs_ls_req r = {0};
	struct svc_fs_ls_res lr = {0};
	struct sbx_error *err = NULL;
	struct listing l = {.rows = json_array()};
	cleanup_free char *rel = NULL, *prefix = NULL;
	const char *given = NULL, *why;

	if (!wire_str(w, "path", false, true, &given))
		goto out;
	if (!given)
		given = ".";
	rel = wire_path(w, given, &why);
	prefix = xstrdup(given);
	while (strlen(prefix) > 1 && prefix[strlen(prefix) - 1] == '/')
		prefix[strlen(prefix) - 1] = '\0';
	l.prefix = archive ? (strcmp(rel ? rel : "", ".") ? rel : "") : prefix;
	r.key = w->ws.key;
	r.path = rel;
	r.entry = list_entry;
	r.arg = &l;
	if (rel && svc_fs_ls(&w->snap->svc, &w->call, &r, &lr, &err) == 0) {
		wire_json(w, 200, sorted(l.rows));
		l.rows = NULL;
	} else if (!archive) {
		wire_json(w, 200, json_array());
	} else if (!rel) {
		wire_detail(w, 400, "Path '%s' is outside the workspace", given);
	} else {
		wire_error(w, err,
			   &(struct wire_subject){.path = given, .dir = true});
	}
	sbx_error_free(&err);
	svc_fs_ls_res_release(&lr);
out:
	json_decref(l.rows);
}

void wire_ls(struct wire_req *w)
{
	do_ls(w, false);
}

void wire_glob(struct wire_req *w)
{
	struct svc_fs_glob_req r = {0};
	struct svc_fs_glob_res gr = {0};
	struct sbx_error *err = NULL;
	struct listing l = {.rows = json_array(), .glob = true};
	cleanup_free char *rel = NULL, *pattern = NULL;
	const char *pat, *path = NULL, *why;

	if (!wire_str(w, "pattern", true, false, &pat) ||
	    !wire_str(w, "path", false, true, &path))
		goto out;
	rel =
	    wire_path(w, path && *path && strcmp(path, "/") ? path : ".", &why);
	/* sandboxd finds -path STAR/PATTERN: the pattern at any depth. */
	if (strncmp(pat, "**/", 3) == 0)
		pat += 3;
	pattern = rel && strcmp(rel, ".") ? xasprintf("%s/**/%s", rel, pat)
					  : xasprintf("**/%s", pat);
	r.key = w->ws.key;
	r.pattern = pattern;
	r.entry = list_entry;
	r.arg = &l;
	if (rel && svc_fs_glob(&w->snap->svc, &w->call, &r, &gr, &err) == 0) {
		wire_json(w, 200, sorted(l.rows));
		l.rows = NULL;
	} else {
		wire_json(w, 200, json_array());
	}
	sbx_error_free(&err);
	svc_fs_glob_res_release(&gr);
out:
	json_decref(l.rows);
}

static int grep_match(void *arg, const svc_fs_match *m, struct sbx_error **err)
{
	json_t *rows = arg;
	/* A line cut at GREP_LINE_MAX may end inside a character. */
	size_t len = m->cut ? utf8_whole(m->text, m->len) : m->len;

	/* A line or a path that is not UTF-8 shows each invalid byte as
	 * U+FFFD; a NUL in the line is U+0000. */
	json_array_append_new(
	    rows, xjson_pack("{s:o, s:I, s:o}", "path", xjson_text(m->path),
			     "line_number", (json_int_t)m->line, "line",
			     xjson_textn(m->text, len)));
	return 0;
}

void wire_grep(struct wire_req *w)
{
	struct svc_fs_grep_req r = {0};
	struct svc_fs_grep_res gr = {0};
	struct sbx_error *err = NULL;
	json_t *rows = json_array();
	cleanup_free char *rel = NULL;
	const char *path = NULL, *why;
	bool ignore_hidden = true;

	if (!wire_str(w, "pattern", true, false, &r.pattern) ||
	    !wire_str(w, "path", false, true, &path) ||
	    !wire_str(w, "glob", false, true, &r.include) ||
	    !wire_bool(w, "ignore_hidden", &ignore_hidden))
		goto out;
	rel = path ? wire_path(w, path, &why) : xstrdup(".");
	r.key = w->ws.key;
	r.path = rel && strcmp(rel, ".") ? rel : NULL;
	r.hidden = !ignore_hidden;
	r.match = grep_match;
	r.arg = rows;
	if (!rel || !*r.pattern) {
		wire_json(w, 200,
			  xjson_pack("{s:[], s:s}", "matches", "error",
				     !rel ? "Error: the path is outside the "
					    "workspace"
					  : "Error: an empty pattern"));
	} else if (svc_fs_grep(&w->snap->svc, &w->call, &r, &gr, &err) < 0) {
		cleanup_free char *m = xasprintf("Error: %s", err->msg);
		wire_json(w, 200,
			  xjson_pack("{s:[], s:s}", "matches", "error", m));
	} else {
		wire_json(w, 200,
			  xjson_pack("{s:O, s:n}", "matches", rows, "error"));
	}
	sbx_error_free(&err);
	svc_fs_grep_res_release(&gr);
out:
	json_decref(rows);
}

/* ---- a kept workspace ---- */

void wire_ws_ls(struct wire_req *w)
{
	do_ls(w, true);
}

void wire_ws_read(struct wire_req *w)
{
	do_read(w, true);
}

void wire_ws_read_bytes(struct wire_req *w)
{
	do_read_bytes(w, true);
}

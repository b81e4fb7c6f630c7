/*
 * e2b-code.c - the code interpreter's /execute and /contexts (e2b.h,
 * docs/e2b.md): E2B's code-interpreter server, served from sbxcat.
 *
 * Each sandbox has contexts, each a persistent Python interpreter
 * (svc-interp.h): "default", started by its first /execute, and those
 * POST /contexts makes (at most CTX_MAX in all).  An execution streams
 * the interpreter's lines as NDJSON, then {"type": "end_of_execution"},
 * as E2B's server does.  One execution at a time per context: a second
 * waits up to BUSY_WAIT_MS, then is 409.
 *
 * The interpreters are the service's, not a request's: a table of the
 * sandboxes that have any, under one mutex (never held across a start,
 * a run or a stop), each interpreter holding the snapshot it was started
 * under.  They end with their sandbox's container, after their idle
 * time, and at the service's stop (e2b_code_stop).
 */
#include "config.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "basic/xjson.h"
#include "serve/e2b.h"
#include "svc/svc-exec.h"
#include "svc/svc-interp.h"

/* Contexts per sandbox, the default among them: each is a python3
 * process of its own. */
#define CTX_MAX 8
/* Sandboxes the table keeps before it forgets those with no live
 * interpreter. */
#define BOXES_MAX 4096
/* How long a second execution on a busy context waits. */
#define BUSY_WAIT_MS 10000
#define DEFAULT_ID "default"
#define CTX_ID_MAX 40
#define NDJSON "application/x-ndjson"

struct ctx {
	char id[CTX_ID_MAX + 1];
	char *cwd; /* as the client gave it; NULL: the sandbox's home */
	struct svc_interp *ip;
	struct serve_snap *snap; /* held while ip lives */
	bool busy;
	bool lost; /* its interpreter ended under it: said at the next run */
};

struct box {
	char sid[E2B_ID_MAX + 1];
	bool no_python; /* found out once */
	struct ctx *ctx[CTX_MAX];
	size_t n;
	struct box *next;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct box *boxes;
	size_t nboxes;
} code = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static void ctx_free(struct ctx *c)
{
	if (!c)
		return;
	svc_interp_free(c->ip);
	if (c->snap)
		serve_snap_put(c->snap);
	free(c->cwd);
	free(c);
}

/* Under code.mu: the sandbox's entry, made when make (forgetting the
 * idle ones past BOXES_MAX: their contexts go to *drop). */
static struct box *box_of(const char *sid, bool make, struct box **drop)
{
	struct box *b, **pp;

	for (b = code.boxes; b; b = b->next)
		if (!strcmp(b->sid, sid))
			return b;
	if (!make)
		return NULL;
	if (code.nboxes >= BOXES_MAX) {
		for (pp = &code.boxes; *pp;) {
			bool idle = true;

			b = *pp;
			for (size_t i = 0; i < b->n; i++)
				if (b->ctx[i]->busy ||
				    (b->ctx[i]->ip &&
				     svc_interp_alive(b->ctx[i]->ip)))
					idle = false;
			if (!idle) {
				pp = &b->next;
				continue;
			}
			*pp = b->next;
			b->next = *drop;
			*drop = b;
			code.nboxes--;
		}
	}
	b = xcalloc(1, sizeof(*b));
	snprintf(b->sid, sizeof(b->sid), "%s", sid);
	b->next = code.boxes;
	code.boxes = b;
	code.nboxes++;
	return b;
}

static void boxes_free(struct box *b)
{
	while (b) {
		struct box *next = b->next;

		for (size_t i = 0; i < b->n; i++)
			ctx_free(b->ctx[i]);
		free(b);
		b = next;
	}
}

static struct ctx *ctx_find(struct box *b, const char *id)
{
	for (size_t i = 0; b && i < b->n; i++)
		if (!strcmp(b->ctx[i]->id, id))
			return b->ctx[i];
	return NULL;
}

static struct ctx *ctx_add(struct box *b, const char *id, const char *cwd)
{
	struct ctx *c = xcalloc(1, sizeof(*c));

	snprintf(c->id, sizeof(c->id), "%s", id);
	c->cwd = cwd ? xstrdup(cwd) : NULL;
	b->ctx[b->n++] = c;
	return c;
}

/* A context's id: a UUID, as a Jupyter kernel's. */
static void ctx_id_new(char out[CTX_ID_MAX + 1])
{
	unsigned char r[16];

	random_bytes(r, sizeof(r));
	r[6] = (r[6] & 0x0f) | 0x40;
	r[8] = (r[8] & 0x3f) | 0x80;
	snprintf(out, CTX_ID_MAX + 1,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
		 r[10], r[11], r[12], r[13], r[14], r[15]);
}

static void interp_warn(void *arg, const char *msg)
{
	struct serve *sv = arg;
	struct strbuf sb = STRBUF_INIT;

	strbuf_addf(&sb, "sbxcat serve: interpreter: %s\n", msg);
	if (sv->log_fd >= 0 && write_all(sv->log_fd, sb.buf, sb.len) < 0) {
		/* nowhere else to say it */
	}
	strbuf_release(&sb);
}

/*
 * Claim a context of the sandbox (busy), waiting up to BUSY_WAIT_MS for
 * one running code.  NULL once answered (404, 409).
 */
static struct ctx *claim(struct e2b_req *e, const char *id)
{
	long long until = clock_now_ms() + BUSY_WAIT_MS;
	struct box *drop = NULL, *b;
	struct ctx *c = NULL;
	int status = 0;

	pthread_mutex_lock(&code.mu);
	for (;;) {
		b = box_of(e->id, !strcmp(id, DEFAULT_ID), &drop);
		c = ctx_find(b, id);
		if (!c && b && !strcmp(id, DEFAULT_ID)) {
			if (b->n >= CTX_MAX) {
				status = 429;
				break;
			}
			c = ctx_add(b, DEFAULT_ID, NULL);
		}
		if (!c) {
			status = 404;
			break;
		}
		if (!c->busy) {
			c->busy = true;
			break;
		}
		if (clock_now_ms() >= until || atomic_load(e->w.req->gone)) {
			status = 409;
			c = NULL;
			break;
		}
		{
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&code.cv, &code.mu, &ts);
		}
	}
	pthread_mutex_unlock(&code.mu);
	boxes_free(drop);
	if (status == 404)
		e2b_rest_error(e, 404, "Context %s not found", id);
	else if (status == 409)
		e2b_rest_error(e, 409,
			       "Context %s is running code: one execution at "
			       "a time per context",
			       id);
	else if (status == 429)
		e2b_rest_error(e, 429, "At most %d contexts per sandbox",
			       CTX_MAX);
	return c;
}

static void release(struct ctx *c)
{
	pthread_mutex_lock(&code.mu);
	c->busy = false;
	pthread_cond_broadcast(&code.cv);
	pthread_mutex_unlock(&code.mu);
}

static void refuse_no_python(struct e2b_req *e)
{
	e2b_rest_error(e, 400,
		       "This sandbox's runtime has no python3; /execute needs "
		       "it");
}

/*
 * The context's interpreter running (c claimed): a new one when it has
 * none or it ended (c->lost then says its variables went).  False once
 * answered.
 */
static bool ensure(struct e2b_req *e, struct ctx *c)
{
	struct svc_interp_start_req req = {
	    .key = e->w.ws.key,
	    .cwd = c->cwd,
	    .warn = interp_warn,
	    .warn_arg = e->w.sv,
	};
	json_t *envs = e2b_sandbox_envs(e), *v;
	const char *name;
	struct strbuf *sbs = NULL;
	const char **env = NULL;
	enum svc_interp_fail why;
	struct sbx_error *err = NULL;
	struct svc_interp *ip = NULL;
	struct serve_snap *snap;
	struct box *b;
	size_t n = 0;
	int rc;

	if (c->ip && svc_interp_alive(c->ip))
		return true;
	if (c->ip) {
		/* Ended: its idle time, a deadline, or it died. */
		svc_interp_free(c->ip);
		serve_snap_put(c->snap);
		c->ip = NULL;
		c->snap = NULL;
		c->lost = true;
	}
	pthread_mutex_lock(&code.mu);
	b = box_of(e->id, false, NULL);
	rc = b && b->no_python;
	pthread_mutex_unlock(&code.mu);
	if (rc) {
		refuse_no_python(e);
		return false;
	}
	if (json_is_object(envs)) {
		env = xcalloc(json_object_size(envs) + 1, sizeof(*env));
		sbs = xcalloc(json_object_size(envs) + 1, sizeof(*sbs));
		json_object_foreach(envs, name, v)
		{
			if (!json_is_string(v))
				continue;
			strbuf_init(&sbs[n]);
			strbuf_addf(&sbs[n], "%s=%s", name,
				    json_string_value(v));
			env[n] = sbs[n].buf;
			n++;
		}
	}
	req.env = env;
	req.nenv = n;
	snap = serve_snap_get(e->w.sv);
	rc = svc_interp_start(&snap->svc, &e->w.call, &req, &ip, &why, &err);
	for (size_t i = 0; i < n; i++)
		strbuf_release(&sbs[i]);
	free(sbs);
	free(env);
	if (rc == 0) {
		c->ip = ip;
		c->snap = snap;
		return true;
	}
	serve_snap_put(snap);
	if (why == SVC_INTERP_FAIL_NO_PYTHON) {
		pthread_mutex_lock(&code.mu);
		b = box_of(e->id, false, NULL);
		if (b)
			b->no_python = true;
		pthread_mutex_unlock(&code.mu);
		refuse_no_python(e);
	} else if (why == SVC_INTERP_FAIL_CWD) {
		e2b_rest_error(e, 400,
			       "The context's cwd cannot be changed to: %s",
			       c->cwd ? c->cwd : E2B_HOME);
	} else {
		e2b_error(e, err);
	}
	sbx_error_free(&err);
	return false;
}

/* ---- the stream ---- */

static int emit_line(struct e2b_req *e, json_t *line)
{
	char *s = json_dumps(line, JSON_COMPACT);
	int rc;

	if (!s)
		die_oom();
	if (!http_streaming(e->w.req)) {
		e->w.answered = true;
		if (http_stream_start(e->w.req, 200, NDJSON) < 0) {
			free(s);
			return -1;
		}
	}
	rc = http_stream_write(e->w.req, s, strlen(s));
	if (rc == 0)
		rc = http_stream_write(e->w.req, "\n", 1);
	free(s);
	return rc;
}

static int emit(void *arg, json_t *line)
{
	return emit_line(arg, line) < 0 ? -1 : 0;
}

/* An error line of sbxcat's own (E2B's shape, no traceback). */
static void emit_error(struct e2b_req *e, const char *name, const char *value)
{
	json_t *j =
	    xjson_pack("{s:s, s:s, s:o, s:s}", "type", "error", "name", name,
		       "value", xjson_text(value), "traceback", "");

	emit_line(e, j);
	json_decref(j);
}

/* ---- the body's fields ---- */

/* An optional string field: false once answered (400). */
static bool opt_str(struct e2b_req *e, const char *name, const char **out)
{
	json_t *v = json_object_get(e->w.body, name);

	*out = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		e2b_rest_error(e, 400, "'%s' must be a string (without NUL)",
			       name);
		return false;
	}
	*out = json_string_value(v);
	return true;
}

/* The language asked for: absent, or python (E2B's normalised form:
 * trimmed, any case).  False once answered. */
static bool python_only(struct e2b_req *e, const char *lang)
{
	size_t n;

	if (!lang)
		return true;
	while (isspace((unsigned char)*lang))
		lang++;
	n = strlen(lang);
	while (n && isspace((unsigned char)lang[n - 1]))
		n--;
	if (n == 6 && !strncasecmp(lang, "python", 6))
		return true;
	e2b_rest_error(e, 400,
		       "Language not served: only \"python\" is (a persistent "
		       "Python interpreter)");
	return false;
}

/* env_vars: an object of strings whose names and values an exec's
 * environment could take.  False once answered. */
static bool env_vars(struct e2b_req *e, json_t **out)
{
	json_t *v = json_object_get(e->w.body, "env_vars"), *x;
	const char *name;
	const char **list;
	struct strbuf *sbs;
	struct sbx_error *err = NULL;
	size_t n = 0;
	int rc;

	*out = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_object(v)) {
		e2b_rest_error(e, 400,
			       "'env_vars' must be an object of strings");
		return false;
	}
	json_object_foreach(v, name, x) if (!json_is_string(x))
	{
		e2b_rest_error(e, 400,
			       "'env_vars' must be an object of strings");
		return false;
	}
	if (json_object_size(v) > SVC_EXEC_ENV_COUNT_MAX) {
		e2b_rest_error(e, 400, "'env_vars': at most %d variables",
			       SVC_EXEC_ENV_COUNT_MAX);
		return false;
	}
	list = xcalloc(json_object_size(v) + 1, sizeof(*list));
	sbs = xcalloc(json_object_size(v) + 1, sizeof(*sbs));
	json_object_foreach(v, name, x)
	{
		strbuf_init(&sbs[n]);
		strbuf_addf(&sbs[n], "%s=%s", name, json_string_value(x));
		list[n] = sbs[n].buf;
		n++;
	}
	rc = svc_exec_env_check(list, n, &err);
	for (size_t i = 0; i < n; i++)
		strbuf_release(&sbs[i]);
	free(sbs);
	free(list);
	if (rc < 0) {
		e2b_rest_error(e, 400, "'env_vars': %s", err->msg);
		sbx_error_free(&err);
		return false;
	}
	*out = v;
	return true;
}

/* ---- the routes ---- */

static void execute(struct e2b_req *e)
{
	json_t *jcode = json_object_get(e->w.body, "code"), *env;
	const char *ctx_id, *lang;
	struct svc_interp_run_req req = {.emit = emit, .emit_arg = e};
	struct svc_interp_run_res res;
	struct sbx_error *err = NULL;
	struct ctx *c;
	bool lost;

	if (!json_is_string(jcode) ||
	    strlen(json_string_value(jcode)) != json_string_length(jcode)) {
		e2b_rest_error(e, 400,
			       "'code' is required: a string (without NUL)");
		return;
	}
	if (!opt_str(e, "context_id", &ctx_id) ||
	    !opt_str(e, "language", &lang) || !env_vars(e, &env))
		return;
	if (ctx_id && lang) {
		e2b_rest_error(e, 400,
			       "Only one of context_id or language can be "
			       "provided");
		return;
	}
	if (!python_only(e, lang))
		return;
	c = claim(e, ctx_id ? ctx_id : DEFAULT_ID);
	if (!c)
		return;
	if (!ensure(e, c)) {
		release(c);
		return;
	}
	lost = c->lost;
	c->lost = false;
	if (lost) {
		/* Said before the code's own lines: they run in a new
		 * interpreter. */
		json_t *said = xjson_pack(
		    "{s:s, s:s, s:o}", "type", "stderr", "text",
		    "[sbxcat] this context's interpreter had stopped; a new "
		    "one runs this code: earlier variables are gone\n",
		    "timestamp", json_null());

		emit_line(e, said);
		json_decref(said);
	}
	req.code = json_string_value(jcode);
	req.env = env;
	if (svc_interp_run(c->ip, &e->w.call, &req, &res, &err) < 0) {
		if (!http_streaming(e->w.req))
			e2b_error(e, err);
		else
			emit_error(e, "InterpreterError",
				   "sbxcat could not run the code");
		sbx_error_free(&err);
	} else if (res.end == SVC_INTERP_KILLED) {
		emit_error(e, "TimeoutError",
			   "The execution did not stop when interrupted at "
			   "its deadline: its interpreter was stopped, and "
			   "with it this context's variables");
		c->lost = true;
	} else if (res.end == SVC_INTERP_DIED) {
		emit_error(e, "InterpreterDied",
			   "The interpreter ended during the execution; its "
			   "variables are gone (the next execution starts a "
			   "new one)");
		c->lost = true;
	}
	if (res.cut)
		emit_error(e, "OutputLimitExceeded",
			   "Output past the sandbox's limit "
			   "(SANDBOXD_MAX_OUTPUT_BYTES) was dropped");
	if (c->ip && !svc_interp_alive(c->ip)) {
		/* Said now, and again by the next run, which starts a new
		 * one. */
		svc_interp_free(c->ip);
		serve_snap_put(c->snap);
		c->ip = NULL;
		c->snap = NULL;
	}
	release(c);
	{
		json_t *end = xjson_pack("{s:s}", "type", "end_of_execution");

		emit_line(e, end);
		json_decref(end);
	}
}

static json_t *ctx_json(const struct ctx *c)
{
	return xjson_pack("{s:s, s:s, s:s}", "id", c->id, "language", "python",
			  "cwd", c->cwd ? c->cwd : E2B_HOME);
}

static void ctx_create(struct e2b_req *e)
{
	const char *lang, *cwd;
	struct box *b, *drop = NULL;
	struct ctx *c = NULL;
	char id[CTX_ID_MAX + 1];

	if (!opt_str(e, "language", &lang) || !opt_str(e, "cwd", &cwd) ||
	    !python_only(e, lang))
		return;
	if (cwd && (cwd[0] != '/' || strlen(cwd) > 4096)) {
		e2b_rest_error(e, 400,
			       "'cwd' must be an absolute path (at most 4096 "
			       "bytes)");
		return;
	}
	ctx_id_new(id);
	pthread_mutex_lock(&code.mu);
	b = box_of(e->id, true, &drop);
	if (b->n < CTX_MAX) {
		c = ctx_add(b, id, cwd);
		c->busy = true;
	}
	pthread_mutex_unlock(&code.mu);
	boxes_free(drop);
	if (!c) {
		e2b_rest_error(e, 429, "At most %d contexts per sandbox",
			       CTX_MAX);
		return;
	}
	if (!ensure(e, c)) {
		/* Not made after all. */
		pthread_mutex_lock(&code.mu);
		for (size_t i = 0; i < b->n; i++)
			if (b->ctx[i] == c)
				b->ctx[i] = b->ctx[--b->n];
		pthread_cond_broadcast(&code.cv);
		pthread_mutex_unlock(&code.mu);
		ctx_free(c);
		return;
	}
	release(c);
	e2b_rest_json(e, 200, ctx_json(c));
}

static void ctx_list(struct e2b_req *e)
{
	json_t *arr = json_array();
	struct box *b;
	bool dflt = false;

	pthread_mutex_lock(&code.mu);
	b = box_of(e->id, false, NULL);
	for (size_t i = 0; b && i < b->n; i++) {
		json_array_append_new(arr, ctx_json(b->ctx[i]));
		dflt |= !strcmp(b->ctx[i]->id, DEFAULT_ID);
	}
	pthread_mutex_unlock(&code.mu);
	if (!dflt) {
		/* The default context is always there, started on use. */
		struct ctx d = {.id = DEFAULT_ID};

		json_array_insert_new(arr, 0, ctx_json(&d));
	}
	e2b_rest_json(e, 200, arr);
}

/* DELETE /contexts/{id} and POST /contexts/{id}/restart: the context
 * claimed (waiting for its execution as /execute does), its interpreter
 * stopped; a restart starts a new one at once. */
static void ctx_stop(struct e2b_req *e, bool restart)
{
	const char *id = e->w.req->params[0];
	struct ctx *c;
	struct box *b;

	if (!id || strlen(id) > CTX_ID_MAX) {
		e2b_rest_error(e, 404, "Context not found");
		return;
	}
	if (strcmp(id, DEFAULT_ID) != 0) {
		pthread_mutex_lock(&code.mu);
		c = ctx_find(box_of(e->id, false, NULL), id);
		pthread_mutex_unlock(&code.mu);
		if (!c) {
			e2b_rest_error(e, 404, "Context %s not found", id);
			return;
		}
	}
	c = claim(e, id);
	if (!c)
		return;
	svc_interp_free(c->ip);
	if (c->snap)
		serve_snap_put(c->snap);
	c->ip = NULL;
	c->snap = NULL;
	c->lost = false;
	if (restart) {
		if (!ensure(e, c)) {
			release(c);
			return;
		}
		release(c);
		e2b_rest_empty(e, 204);
		return;
	}
	pthread_mutex_lock(&code.mu);
	b = box_of(e->id, false, NULL);
	for (size_t i = 0; b && i < b->n; i++)
		if (b->ctx[i] == c)
			b->ctx[i] = b->ctx[--b->n];
	pthread_cond_broadcast(&code.cv);
	pthread_mutex_unlock(&code.mu);
	ctx_free(c);
	e2b_rest_empty(e, 204);
}

static void ctx_delete(struct e2b_req *e)
{
	ctx_stop(e, false);
}

static void ctx_restart(struct e2b_req *e)
{
	ctx_stop(e, true);
}

void e2b_code_stop(void)
{
	struct box *all;

	pthread_mutex_lock(&code.mu);
	all = code.boxes;
	code.boxes = NULL;
	code.nboxes = 0;
	pthread_mutex_unlock(&code.mu);
	boxes_free(all);
}

/* The body caps: /execute's code is at most 1 MiB of JSON (E2B sets
 * none; a cell is rarely past a few KiB); a context's fields are short. */
const struct http_route e2b_code_routes[] = {
    E2B_ROUTE("POST", "/execute", SLOW, 1 << 20, execute, ENVD, REST,
	      .body = true),
    E2B_ROUTE("POST", "/contexts", SLOW, 16384, ctx_create, ENVD, REST,
	      .body = true),
    E2B_ROUTE("GET", "/contexts", QUICK, 0, ctx_list, ENVD, REST),
    E2B_ROUTE("DELETE", "/contexts/{id}", SLOW, 0, ctx_delete, ENVD, REST),
    E2B_ROUTE("POST", "/contexts/{id}/restart", SLOW, 0, ctx_restart, ENVD,
	      REST),
};
const size_t e2b_code_nroutes =
    sizeof(e2b_code_routes) / sizeof(*e2b_code_routes);

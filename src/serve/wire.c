/*
 * wire.c - sandboxd's routes (sandboxd-wire.md sections 2-4, 9): the
 * shared handling of every request (wire.h), sessions, policy, health,
 * metrics, and the route table.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "serve/wire-status.h"
#include "serve/wire.h"
#include "svc/svc-audit.h"
#include "svc/svc-session.h"

#define TOKEN_HEADER "X-Sandbox-Token"
/* How long /healthz's counts stand before the engine is asked again. */
#define HEALTH_CACHE_MS 1000

/* A request's gone flag is its call's cancel flag as it is. */
_Static_assert(HTTP_GONE_CLIENT == SVC_CANCEL_GONE, "gone: client");
_Static_assert(HTTP_GONE_SHUTDOWN == SVC_CANCEL_SHUTDOWN, "gone: shutdown");

/* ---- the shared handling ---- */

bool wire_begin(struct wire_req *w, void *arg, struct http_request *req,
		struct http_response *res, bool with_body)
{
	json_error_t jerr;

	memset(w, 0, sizeof(*w));
	w->sv = arg;
	w->req = req;
	w->res = res;
	w->snap = serve_snap_get(w->sv);
	w->call.cancel = req->gone;
	serve_auth(w->sv, http_header(req, TOKEN_HEADER), &w->auth);
	if (!with_body)
		return true;
	w->body = json_loadb(req->body ? req->body : "", req->body_len,
			     JSON_REJECT_DUPLICATES, &jerr);
	if (!w->body || !json_is_object(w->body)) {
		wire_invalid(w, "body", NULL, w->body ? "dict_type" : "json_invalid",
			     w->body ? "Input should be a valid dictionary"
				     : "JSON decode error");
		return false;
	}
	return true;
}

void wire_end(struct wire_req *w)
{
	if (w->ws.key[0]) {
		snprintf(w->req->session, sizeof(w->req->session), "%s",
			 w->ws.wire.id[0] ? w->ws.wire.id : w->ws.key);
		if (w->ws.rec.tenant)
			snprintf(w->req->tenant, sizeof(w->req->tenant), "%s",
				 w->ws.rec.tenant);
	} else if (w->auth.tenant) {
		snprintf(w->req->tenant, sizeof(w->req->tenant), "%s",
			 w->auth.tenant);
	}
	svc_wire_session_release(&w->ws);
	json_decref(w->body);
	serve_snap_put(w->snap);
}

void wire_json(struct wire_req *w, int status, json_t *doc)
{
	w->answered = true;
	http_respond_json(w->res, status, doc);
}

void wire_detail(struct wire_req *w, int status, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	wire_json(w, status, xjson_pack("{s:s}", "detail", msg));
	free(msg);
}

void wire_invalid(struct wire_req *w, const char *where, const char *field,
		  const char *type, const char *msg)
{
	wire_invalid_input(w, where, field, type, msg,
			   field && w->body ? json_object_get(w->body, field)
					    : NULL);
}

void wire_invalid_input(struct wire_req *w, const char *where,
			const char *field, const char *type, const char *msg,
			json_t *input)
{
	json_t *loc = json_array();

	json_array_append_new(loc, xjson_string(where));
	if (field)
		json_array_append_new(loc, xjson_string(field));
	wire_json(w, 422,
		  xjson_pack("{s:[{s:s, s:o, s:s, s:O}]}", "detail", "type",
			     type, "loc", loc, "msg", msg, "input",
			     input ? input : json_null()));
}

bool wire_str(struct wire_req *w, const char *name, bool required,
	      bool nullable, const char **out)
{
	json_t *v = json_object_get(w->body, name);

	*out = NULL;
	if (!v && required) {
		wire_invalid(w, "body", name, "missing", "Field required");
		return false;
	}
	if (!v || (json_is_null(v) && nullable))
		return true;
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		wire_invalid(w, "body", name, "string_type",
			     "Input should be a valid string");
		return false;
	}
	*out = json_string_value(v);
	return true;
}

bool wire_int(struct wire_req *w, const char *name, long long min,
	      bool nullable, long long *out, bool *present)
{
	json_t *v = json_object_get(w->body, name);

	if (present)
		*present = false;
	if (!v || (json_is_null(v) && nullable))
		return true;
	if (!json_is_integer(v)) {
		wire_invalid(w, "body", name, "int_type",
			     "Input should be a valid integer");
		return false;
	}
	if (json_integer_value(v) < min) {
		char msg[64];

		snprintf(msg, sizeof(msg),
			 "Input should be greater than or equal to %lld", min);
		wire_invalid(w, "body", name, "greater_than_equal", msg);
		return false;
	}
	*out = json_integer_value(v);
	if (present)
		*present = true;
	return true;
}

bool wire_bool(struct wire_req *w, const char *name, bool *out)
{
	json_t *v = json_object_get(w->body, name);

	if (!v || json_is_null(v))
		return true;
	if (!json_is_boolean(v)) {
		wire_invalid(w, "body", name, "bool_type",
			     "Input should be a valid boolean");
		return false;
	}
	*out = json_is_true(v);
	return true;
}

bool wire_num(struct wire_req *w, const char *name, double min_excl,
	      bool nullable, double *out, bool *present)
{
	json_t *v = json_object_get(w->body, name);

	*present = false;
	if (!v || (json_is_null(v) && nullable))
		return true;
	if (!json_is_number(v)) {
		wire_invalid(w, "body", name, "float_type",
			     "Input should be a valid number");
		return false;
	}
	if (!(json_number_value(v) > min_excl)) {
		wire_invalid(w, "body", name, "greater_than",
			     "Input should be greater than 0");
		return false;
	}
	*out = json_number_value(v);
	*present = true;
	return true;
}

bool wire_query_bool(struct wire_req *w, const char *name, bool *out)
{
	static const char *const yes[] = {"true", "1", "yes", "on"};
	static const char *const no[] = {"false", "0", "no", "off"};
	const char *v = http_query(w->req, name);

	if (!v)
		return true;
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	wire_invalid(w, "query", name, "bool_parsing",
		     "Input should be a valid boolean");
	return false;
}

bool wire_query_uint(struct wire_req *w, const char *name,
		     unsigned long long *out)
{
	const char *v = http_query(w->req, name);
	char *end;

	if (!v)
		return true;
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (!*v || *end || errno || *v == '-' || *v == '+' || *v == ' ') {
		wire_invalid(w, "query", name, "int_parsing",
			     "Input should be a valid integer >= 0");
		return false;
	}
	return true;
}

bool wire_auth_service(struct wire_req *w, bool tenant_ok)
{
	if (w->auth.who == SERVE_SERVICE ||
	    (tenant_ok && w->auth.who == SERVE_TENANT)) {
		w->call.tenant = w->auth.tenant;
		return true;
	}
	if (w->auth.who == SERVE_TENANT)
		wire_detail(w, 403, "This route needs the service token");
	else
		wire_detail(w, 401, "Invalid or missing sandbox token");
	return false;
}

/* The session id of the path, found as the caller may see it. */
static bool find_session(struct wire_req *w, const char *id, bool open_only,
			 const char *missing)
{
	struct sbx_error *err = NULL;

	if (!svc_wire_name_valid(id)) {
		wire_invalid(w, "path", "session_id", "string_pattern_mismatch",
			     "String should match pattern "
			     "'^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'");
		return false;
	}
	w->call.tenant = w->auth.tenant;
	if (svc_wire_find(&w->snap->svc, &w->call, id, &w->ws, &err) == 0 &&
	    (w->ws.open || !open_only))
		return true;
	if (err && err->kind != SBX_E_NOT_FOUND)
		wire_error(w, err, NULL);
	else
		wire_detail(w, 404, "%s: %s", missing, id);
	svc_wire_session_release(&w->ws);
	sbx_error_free(&err);
	return false;
}

bool wire_session(struct wire_req *w, bool open_only, const char *missing)
{
	const char *id = w->req->params[0];
	const char *token = http_header(w->req, TOKEN_HEADER);
	struct sbx_error *err = NULL;

	if (!missing)
		missing = "No such session";
	if (w->auth.who != SERVE_NOBODY)
		return find_session(w, id, open_only, missing);
	if (open_only &&
	    svc_wire_auth(&w->snap->svc, &w->call, id, token, &w->ws, &err) ==
		0) {
		w->call.tenant = w->ws.rec.tenant;
		return true;
	}
	if (err && err->kind != SBX_E_REFUSED)
		wire_error(w, err, NULL);
	else
		wire_detail(w, 401, "Invalid or missing sandbox token");
	sbx_error_free(&err);
	return false;
}

/* Whether a session's container holds its memory: running, or paused. */
static bool resident(const char *state)
{
	return state &&
	       (strcmp(state, "running") == 0 || strcmp(state, "paused") == 0);
}

json_t *wire_session_info(const struct svc *s,
			  const struct svc_wire_session *ws, const char *state)
{
	double now = (double)time(NULL);
	/* A paused container (the reaper's idle pause) is alive: its
	 * memory is kept and the next operation unpauses it.  A hibernated
	 * one is not: its container is stopped until its next operation. */
	bool alive = resident(state);
	bool asleep = state && strcmp(state, svc_wire_hibernated) == 0;
	double last = (double)ws->rec.last_activity;
	json_t *doc = xjson_pack(
	    "{s:s, s:s, s:s?, s:b, s:s, s:f, s:f, s:f, s:n, s:s}", "session_id",
	    ws->wire.id[0] ? ws->wire.id : ws->key, "runtime", ws->rec.runtime,
	    "tenant", svc_wire_tenant(ws->rec.tenant), "alive", alive, "state",
	    asleep ? svc_wire_hibernated : "running", "created_at",
	    (double)ws->rec.created, "last_activity", last, "idle_seconds",
	    now > last ? now - last : 0.0, "usage", "key", ws->key);

	/* labels, durability and expires_at are sbxcat's (issue 20), as
	 * session show gives them. */
	svc_session_add_kept(s, doc, &ws->rec.labels, ws->rec.durability,
			     ws->rec.last_activity);
	return doc;
}

/* A count, or null when it is not known (negative). */
static json_t *count_or_null(long long n)
{
	return n < 0 ? json_null() : json_integer(n);
}

/* SessionInfo's usage (?usage=true): one sample of the engine's stats,
 * nulls for what it does not say (or when it does not answer). */
static json_t *usage_json(struct wire_req *w, const struct svc_wire_session *ws)
{
	struct svc_wire_usage u;
	struct sbx_error *err = NULL;

	if (svc_wire_usage(&w->snap->svc, &w->call, ws, &u, &err) < 0) {
		atomic_fetch_add(&w->sv->engine_errors, 1);
		sbx_error_free(&err);
	}
	return xjson_pack(
	    "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "memory_bytes",
	    count_or_null(u.memory_bytes), "memory_limit_bytes",
	    count_or_null(u.memory_limit_bytes), "cpu_percent",
	    u.cpu_percent < 0 ? json_null() : json_real(u.cpu_percent), "pids",
	    count_or_null(u.pids), "disk_bytes", count_or_null(u.disk_bytes),
	    "disk_limit_bytes", count_or_null(u.disk_limit_bytes),
	    "disk_inodes", count_or_null(u.disk_inodes), "disk_limit_inodes",
	    count_or_null(u.disk_limit_inodes));
}

const char *wire_session_state(struct wire_req *w)
{
	struct sbx_error *err = NULL;
	const char *state = "unknown";

	if (svc_wire_state(&w->snap->svc, &w->call, &w->ws, &state, &err) < 0) {
		atomic_fetch_add(&w->sv->engine_errors, 1);
		sbx_error_free(&err);
	}
	return state;
}

/* ---- paths ---- */

static const char *strip_prefix(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strncmp(path, dir, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path + n + strspn(path + n, "/");
}

char *wire_path(const struct wire_req *w, const char *path, const char **why)
{
	const char *rel = path;

	*why = NULL;
	if (path[0] == '/') {
		/* The sandbox's path of the workspace, the work dir (the
		 * host's is not the sandbox's: it is outside, as any other
		 * absolute path). */
		rel = strip_prefix(path, w->snap->svc.cfg.session.work_dir);
		if (!rel) {
			*why = "outside the workspace";
			return NULL;
		}
	}
	if (!*rel || strcmp(rel, ".") == 0)
		return xstrdup(".");
	return xstrdup(rel);
}

char *wire_abs_path(const struct wire_req *w, const char *rel)
{
	const char *wd = w->snap->svc.cfg.session.work_dir;

	if (!*rel || strcmp(rel, ".") == 0)
		return xstrdup(wd);
	return xasprintf("%s/%s", wd, rel);
}

/* ---- sessions ---- */

static void runtime_unknown(struct wire_req *w, const char *rt)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < w->snap->cat.n; i++)
		strbuf_addf(&sb, "%s%s", i ? ", " : "",
			    w->snap->cat.rt[i].alias);
	wire_detail(w, 400, "Unknown runtime '%s'. Allowed: %s", rt,
		    strbuf_str(&sb));
	strbuf_release(&sb);
}

static void open_failed(struct wire_req *w, const struct svc_wire_open_req *o,
			const struct svc_wire_open_res *res, const char *tenant,
			struct sbx_error *err)
{
	switch (res->refused) {
	case SVC_WIRE_EXISTS:
		wire_detail(w, 409, "Session exists: %s", o->id);
		return;
	case SVC_WIRE_RUNTIME:
		wire_detail(w, 409,
			    "Session %s is open on runtime '%s', not '%s'. "
			    "Close it before changing runtime.",
			    o->id, res->open_runtime, o->runtime);
		return;
	case SVC_WIRE_NOTHING:
		wire_detail(w, 404, "Nothing to attach to: %s", o->id);
		return;
	case SVC_WIRE_OK:
		break;
	}
	if (err->why == SBX_R_BAD_LABELS)
		wire_invalid(w, "body", "labels", "value_error", err->msg);
	else
		wire_error(
		    w, err,
		    &(struct wire_subject){
			.tenant = tenant,
			.session = o->id,
			.durability = o->durability,
			/* A reuse of a hibernated session the host
			 * has no room for. */
			.waking = res->marked && err->why == SBX_R_HOST_QUOTA,
			.failing = err->kind == SBX_E_INVALID
				       ? NULL
				       : "Could not start sandbox",
		    });
}

/*
 * sbxcat's fields of an open (issue 20): durability, "ephemeral" or
 * "persistent"; labels, an object of strings (absent or null: a reopen
 * keeps its own), each checked by the open as the command line's
 * --label (422 naming the label).  False once answered.
 */
static bool open_kept(struct wire_req *w, struct svc_wire_open_req *o)
{
	json_t *l = json_object_get(w->body, "labels");

	if (!wire_str(w, "durability", false, true, &o->durability))
		return false;
	if (o->durability && strcmp(o->durability, "ephemeral") != 0 &&
	    strcmp(o->durability, "persistent") != 0) {
		wire_invalid(w, "body", "durability", "enum",
			     "Input should be 'ephemeral' or 'persistent'");
		return false;
	}
	if (l && !json_is_null(l) && !json_is_object(l)) {
		wire_invalid(w, "body", "labels", "dict_type",
			     "Input should be a valid dictionary");
		return false;
	}
	o->labels = l;
	return true;
}

/* disk_quota (a size, "64m", or bytes) and disk_inodes, ours
 * (docs/serve.md); their bounds are the open's to check. */
static bool disk_fields(struct wire_req *w, struct svc_wire_open_req *o,
			char quota[24])
{
	json_t *q = json_object_get(w->body, "disk_quota");
	long long n = 0;
	bool present;

	if (json_is_integer(q)) {
		if (json_integer_value(q) < 1) {
			wire_invalid(w, "body", "disk_quota",
				     "greater_than_equal",
				     "Input should be greater than or equal "
				     "to 1");
			return false;
		}
		snprintf(quota, 24, "%lld", (long long)json_integer_value(q));
		o->disk_quota = quota;
	} else if (!wire_str(w, "disk_quota", false, true, &o->disk_quota)) {
		return false;
	}
	if (!wire_int(w, "disk_inodes", 1, true, &n, &present))
		return false;
	o->disk_inodes = present ? (unsigned long long)n : 0;
	return true;
}

/* The fields of an open, checked: false once answered. */
static bool open_fields(struct wire_req *w, struct svc_wire_open_req *o,
			const char **tenant, char idbuf[24], char quota[24])
{
	const char *t = NULL;

	if (!wire_str(w, "session_id", false, true, &o->id) ||
	    !wire_str(w, "runtime", false, true, &o->runtime) ||
	    !wire_str(w, "tenant", false, true, &t) ||
	    !wire_bool(w, "reuse", &o->reuse) ||
	    !wire_bool(w, "attach", &o->attach) || !open_kept(w, o) ||
	    !disk_fields(w, o, quota))
		return false;
	if (o->id && !svc_wire_name_valid(o->id)) {
		wire_invalid(w, "body", "session_id", "string_pattern_mismatch",
			     "String should match pattern "
			     "'^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'");
		return false;
	}
	if (t && !svc_wire_name_valid(t)) {
		wire_invalid(w, "body", "tenant", "string_pattern_mismatch",
			     "String should match pattern "
			     "'^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'");
		return false;
	}
	if (o->attach && !o->id) {
		wire_detail(w, 400, "attach needs a session_id");
		return false;
	}
	if (w->auth.tenant && t && strcmp(t, w->auth.tenant) != 0) {
		wire_detail(w, 403, "This token is not tenant '%s''s", t);
		return false;
	}
	/* No tenant: sandboxd's null, no per-tenant ceiling
	 * (SVC_WIRE_NO_TENANT), unless SBXCAT_SERVE_TENANT names one. */
	*tenant = w->auth.tenant	? w->auth.tenant
		  : t			? t
		  : w->sv->default_tenant ? w->sv->default_tenant
					: SVC_WIRE_NO_TENANT;
	if (!o->id) {
		char hex[17];

		random_hex(hex, 8); /* 16 digits: random_hex(hex, 16) wrote 33 */
		snprintf(idbuf, 24, "s-%s", hex);
		o->id = idbuf;
	}
	if (o->runtime && !catalog_find(&w->snap->cat, o->runtime)) {
		runtime_unknown(w, o->runtime);
		return false;
	}
	if (!o->runtime && !o->reuse && !o->attach)
		o->runtime = w->snap->default_runtime;
	return true;
}

static void open_answer(struct wire_req *w, const struct svc_wire_open_res *r,
			const char *id, const char *tenant)
{
	struct svc_wire_session ws = {0};

	memcpy(ws.key, r->open.key, sizeof(ws.key));
	snprintf(ws.wire.id, sizeof(ws.wire.id), "%s", id);
	ws.rec.runtime = (char *)r->open.runtime;
	ws.rec.tenant = (char *)tenant;
	ws.rec.created = r->open.created;
	ws.rec.last_activity = r->open.last_activity;
	/* Borrowed for the info: ws is not released. */
	ws.rec.labels = r->open.labels;
	ws.rec.durability = r->open.durability;
	wire_json(w, 200,
		  xjson_pack("{s:o, s:s}", "session",
			     wire_session_info(&w->snap->svc, &ws, "running"),
			     "token", r->token));
	snprintf(w->req->session, sizeof(w->req->session), "%s",
		 ws.wire.id);
}

static void sessions_create(void *arg, struct http_request *req,
			    struct http_response *res)
{
	struct wire_req w;
	struct svc_wire_open_req o = {0};
	struct svc_wire_open_res r = {0};
	struct sbx_error *err = NULL;
	const char *tenant = NULL;
	char idbuf[24], quota[24];

	if (!wire_begin(&w, arg, req, res, true) ||
	    !wire_auth_service(&w, true) ||
	    !open_fields(&w, &o, &tenant, idbuf, quota))
		goto out;
	snprintf(req->tenant, sizeof(req->tenant), "%s", tenant);
	snprintf(req->session, sizeof(req->session), "%s", o.id);
	if (serve_opening_add(w.sv, o.id) < 0) {
		wire_detail(&w, 409, "Session is opening: %s", o.id);
		goto out;
	}
	o.cat = &w.snap->cat;
	w.call.tenant = tenant;
	atomic_fetch_add(&w.sv->opens, 1);
	if (svc_wire_open(&w.snap->svc, &w.call, &o, &r, &err) < 0)
		open_failed(&w, &o, &r, tenant, err);
	else
		open_answer(&w, &r, o.id, tenant);
	serve_opening_del(w.sv, o.id);
	serve_pool_kick(w.sv);
	svc_wire_open_res_release(&r);
	sbx_error_free(&err);
out:
	wire_end(&w);
}

/* SANDBOXD_MAX_OPEN_SESSIONS, or null when unset. */
static json_t *open_limit(const struct svc *s)
{
	return s->cfg.session.max_open
		   ? json_integer((json_int_t)s->cfg.session.max_open)
		   : json_null();
}

static void sessions_list(void *arg, struct http_request *req,
			  struct http_response *res)
{
	struct wire_req w;
	struct svc_wire_list_res l;
	struct sbx_error *err = NULL;
	json_t *rows;
	bool usage = false;

	if (!wire_begin(&w, arg, req, res, false) ||
	    !wire_auth_service(&w, true) ||
	    !wire_query_bool(&w, "usage", &usage))
		goto out;
	if (svc_wire_list(&w.snap->svc, &w.call, &l, &err) < 0) {
		wire_error(&w, err, NULL);
		sbx_error_free(&err);
		goto out;
	}
	rows = json_array();
	for (size_t i = 0; i < l.n; i++) {
		json_t *info =
		    wire_session_info(&w.snap->svc, &l.rows[i], l.states[i]);

		if (usage && resident(l.states[i]))
			json_object_set_new(info, "usage",
					    usage_json(&w, &l.rows[i]));
		json_array_append_new(rows, info);
	}
	wire_json(
	    &w, 200,
	    xjson_pack("{s:o, s:i, s:o, s:i}", "sessions", rows, "limit",
		       (json_int_t)w.snap->svc.cfg.session.max_sessions,
		       "open_limit", open_limit(&w.snap->svc), "tenant_limit",
		       (json_int_t)w.snap->svc.cfg.session.max_per_tenant));
	svc_wire_list_res_release(&l);
out:
	wire_end(&w);
}

static void sessions_get(void *arg, struct http_request *req,
			 struct http_response *res)
{
	struct wire_req w;
	bool usage = false;

	if (wire_begin(&w, arg, req, res, false) &&
	    wire_session(&w, true, NULL) &&
	    wire_query_bool(&w, "usage", &usage)) {
		const char *state = wire_session_state(&w);
		json_t *info = wire_session_info(&w.snap->svc, &w.ws, state);

		if (usage && resident(state))
			json_object_set_new(info, "usage", usage_json(&w, &w.ws));
		wire_json(&w, 200, info);
	}
	wire_end(&w);
}

static void sessions_delete(void *arg, struct http_request *req,
			    struct http_response *res)
{
	struct wire_req w;
	struct svc_session_close_req c = {0};
	struct svc_session_close_res r = {0};
	struct sbx_error *err = NULL;

	if (!wire_begin(&w, arg, req, res, false) ||
	    !wire_query_bool(&w, "purge", &c.purge) ||
	    /* A kept workspace may be purged with the service's token. */
	    !wire_session(&w, !(c.purge && w.auth.who != SERVE_NOBODY), NULL))
		goto out;
	c.key = w.ws.key;
	atomic_fetch_add(&w.sv->closes, 1);
	if (svc_session_close(&w.snap->svc, &w.call, &c, &r, &err) < 0) {
		wire_error(&w, err, NULL);
	} else {
		w.answered = true;
		res->status = 204;
	}
	svc_session_close_res_release(&r);
	sbx_error_free(&err);
out:
	wire_end(&w);
}

/* ---- events, from the audit ---- */

/* The audit's op names as sandboxd's events name them. */
static const char *event_op(const char *op)
{
	static const char *const map[][2] = {
	    {"execute", "exec"},
	    {"ls_info", "ls"},
	    {"glob_info", "glob"},
	    {"grep_raw", "grep"},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(op, map[i][0]) == 0)
			return map[i][1];
	return op;
}

static void sessions_events(void *arg, struct http_request *req,
			    struct http_response *res)
{
	struct wire_req w;
	struct svc_audit_events_req e = {0};
	struct svc_audit_events_res r = {0};
	struct sbx_error *err = NULL;
	unsigned long long after = 0;
	size_t i;
	json_t *ev;

	if (!wire_begin(&w, arg, req, res, false) ||
	    !wire_session(&w, true, NULL) ||
	    !wire_query_uint(&w, "after", &after))
		goto out;
	e.key = w.ws.key;
	e.after = after > (unsigned long long)LLONG_MAX ? LLONG_MAX
							: (long long)after;
	if (svc_audit_events(&w.snap->svc, &w.call, &e, &r, &err) < 0) {
		wire_error(
		    &w, err,
		    &(struct wire_subject){
			.failing = "The audit cannot be read", .audit = true});
		goto out;
	}
	json_array_foreach(r.events, i, ev)
	{
		const char *op = json_string_value(json_object_get(ev, "op"));
		const char *t =
		    json_string_value(json_object_get(ev, "target"));

		if (op)
			json_object_set_new(ev, "op",
					    xjson_string(event_op(op)));
		/* A row about the session itself targets its key (close)
		 * or its container's name, which holds it (reap): the host's
		 * names; the client knows the session by its id. */
		if (t && strstr(t, w.ws.key))
			json_object_set_new(ev, "target",
					    xjson_string(w.ws.wire.id[0]
							     ? w.ws.wire.id
							     : "(session)"));
	}
	wire_json(&w, 200, json_incref(r.doc));
out:
	sbx_error_free(&err);
	svc_audit_events_res_release(&r);
	wire_end(&w);
}

/* ---- policy ---- */

static void policy_get(void *arg, struct http_request *req,
		       struct http_response *res)
{
	struct wire_req w;

	if (wire_begin(&w, arg, req, res, false) &&
	    wire_auth_service(&w, true))
		wire_json(&w, 200, serve_policy_json(w.snap));
	wire_end(&w);
}

/* The overrides kept on disk, when SANDBOXD_POLICY_OVERRIDES is set. */
static int policy_save(struct serve *sv, json_t *o, struct sbx_error **err)
{
	char *text;
	int rc;

	if (!sv->policy_file)
		return 0;
	text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!text)
		die_oom();
	rc = write_file_atomic(sv->policy_file, text, strlen(text), 0600, NULL,
			       err);
	free(text);
	return rc;
}

static void policy_put(void *arg, struct http_request *req,
		       struct http_response *res)
{
	struct wire_req w;
	struct strbuf why = STRBUF_INIT, field = STRBUF_INIT;
	struct serve_snap *snap = NULL;
	struct sbx_error *err = NULL;
	json_t *merged = NULL;
	int status = 422;

	if (!wire_begin(&w, arg, req, res, true) ||
	    !wire_auth_service(&w, false))
		goto out;
	if (serve_policy_check(w.snap, w.body, &status, &field, &why) < 0) {
		if (status == 400)
			wire_detail(&w, 400, "%s", strbuf_str(&why));
		else
			wire_invalid(&w, "body", strbuf_str(&field),
				     "value_error", strbuf_str(&why));
		goto out;
	}
	merged = serve_policy_merge(w.snap->overrides, w.body);
	if (serve_snap_make(w.sv, merged, &snap, &err) < 0 ||
	    policy_save(w.sv, merged, &err) < 0) {
		wire_error(&w, err, NULL);
		serve_snap_put(snap);
		goto out;
	}
	serve_snap_set(w.sv, snap);
	wire_json(&w, 200, serve_policy_json(snap));
out:
	json_decref(merged);
	sbx_error_free(&err);
	strbuf_release(&why);
	strbuf_release(&field);
	wire_end(&w);
}

/* ---- health, index, metrics ---- */

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *health_json(struct wire_req *w)
{
	struct svc_wire_list_res l;
	struct sbx_error *err = NULL;
	struct svc_call any = {0};
	json_t *rts = json_array();
	size_t running = 0, open = 0;
	bool fresh;
	char **aliases = xcalloc(w->snap->cat.n + 1, sizeof(char *));

	for (size_t i = 0; i < w->snap->cat.n; i++)
		aliases[i] = w->snap->cat.rt[i].alias;
	qsort(aliases, w->snap->cat.n, sizeof(char *), by_str);
	for (size_t i = 0; i < w->snap->cat.n; i++)
		json_array_append_new(rts, xjson_string(aliases[i]));
	free(aliases);
	pthread_mutex_lock(&w->sv->lock);
	fresh = w->sv->health_at &&
		clock_now_ms() - w->sv->health_at < HEALTH_CACHE_MS;
	running = w->sv->health_running;
	open = w->sv->health_open;
	pthread_mutex_unlock(&w->sv->lock);
	if (!fresh && svc_wire_list(&w->snap->svc, &any, &l, &err) == 0) {
		open = l.n;
		running = 0;
		for (size_t i = 0; i < l.n; i++)
			running += resident(l.states[i]);
		svc_wire_list_res_release(&l);
		pthread_mutex_lock(&w->sv->lock);
		w->sv->health_at = clock_now_ms();
		w->sv->health_running = running;
		w->sv->health_open = open;
		pthread_mutex_unlock(&w->sv->lock);
	} else if (!fresh) {
		atomic_fetch_add(&w->sv->engine_errors, 1);
	}
	sbx_error_free(&err);
	return xjson_pack("{s:s, s:i, s:i, s:i, s:o, s:o}", "status", "ok",
			  "sessions", (json_int_t)running, "limit",
			  (json_int_t)w->snap->svc.cfg.session.max_sessions,
			  "open_sessions", (json_int_t)open, "open_limit",
			  open_limit(&w->snap->svc), "runtimes", rts);
}

static void healthz(void *arg, struct http_request *req,
		    struct http_response *res)
{
	struct wire_req w;

	wire_begin(&w, arg, req, res, false);
	wire_json(&w, 200, health_json(&w));
	wire_end(&w);
}

static void index_route(void *arg, struct http_request *req,
			struct http_response *res)
{
	struct wire_req w;
	json_t *eps = json_array();

	wire_begin(&w, arg, req, res, false);
	for (size_t i = 0; i < serve_nroutes; i++)
		json_array_append_new(eps, xjson_string(serve_routes[i].path));
	wire_json(&w, 200,
		  xjson_pack("{s:s, s:o, s:n, s:n, s:n, s:o}", "service",
			     "sandboxd", "health", health_json(&w), "docs_url",
			     "openapi_url", "ui_url", "endpoints", eps));
	wire_end(&w);
}

/* sbxcat_sessions{state}: the sessions open on the wire by their
 * containers' states. */
static void session_metrics(struct wire_req *w, struct strbuf *out)
{
	static const char *const states[] = {"running",		  "paused",
					     svc_wire_hibernated, "exited",
					     "created",		  "closed"};
	enum { NSTATES = sizeof(states) / sizeof(states[0]) };
	struct svc_wire_list_res l;
	struct sbx_error *err = NULL;
	struct svc_call any = {0};
	size_t count[NSTATES + 1] = {0};

	if (svc_wire_list(&w->snap->svc, &any, &l, &err) < 0) {
		atomic_fetch_add(&w->sv->engine_errors, 1);
		sbx_error_free(&err);
		return;
	}
	for (size_t i = 0; i < l.n; i++) {
		size_t k = 0;

		while (k < NSTATES && strcmp(l.states[i], states[k]) != 0)
			k++;
		count[k]++;
	}
	svc_wire_list_res_release(&l);
	strbuf_addstr(out, "# HELP sbxcat_sessions Sessions open on the "
			   "service, by their containers' state\n"
			   "# TYPE sbxcat_sessions gauge\n");
	for (size_t k = 0; k <= NSTATES; k++)
		strbuf_addf(out, "sbxcat_sessions{state=\"%s\"} %zu\n",
			    k < NSTATES ? states[k] : "other", count[k]);
}

static void metrics(void *arg, struct http_request *req,
		    struct http_response *res)
{
	struct wire_req w;
	struct strbuf sb = STRBUF_INIT;

	wire_begin(&w, arg, req, res, false);
	if (w.sv->service_hash[0] && !wire_auth_service(&w, false))
		goto out;
	http_metrics(w.sv->http, &sb);
	serve_metrics(w.sv, &sb);
	session_metrics(&w, &sb);
	res->status = 200;
	res->content_type = "text/plain; version=0.0.4; charset=utf-8";
	res->body = strbuf_detach(&sb, &res->body_len);
	w.answered = true;
out:
	strbuf_release(&sb);
	wire_end(&w);
}

/* ---- the routes ---- */

const struct http_route serve_routes[] = {
    {"GET", "/", index_route, HTTP_POOL_QUICK},
    {"GET", "/healthz", healthz, HTTP_POOL_QUICK},
    {"GET", "/metrics", metrics, HTTP_POOL_QUICK},
    {"GET", "/policy", policy_get, HTTP_POOL_QUICK},
    {"PUT", "/policy", policy_put, HTTP_POOL_QUICK},
    {"POST", "/sessions", sessions_create, HTTP_POOL_SLOW},
    {"GET", "/sessions", sessions_list, HTTP_POOL_QUICK},
    {"GET", "/sessions/{id}", sessions_get, HTTP_POOL_QUICK},
    {"DELETE", "/sessions/{id}", sessions_delete, HTTP_POOL_SLOW},
    {"GET", "/sessions/{id}/events", sessions_events, HTTP_POOL_QUICK},
    {"POST", "/sessions/{id}/exec", wire_exec, HTTP_POOL_SLOW},
    {"POST", "/sessions/{id}/run", wire_run, HTTP_POOL_SLOW},
    {"POST", "/sessions/{id}/runs/{run_id}/stop", wire_run_stop,
     HTTP_POOL_QUICK},
    {"POST", "/sessions/{id}/read", wire_read, HTTP_POOL_QUICK},
    {"POST", "/sessions/{id}/read_bytes", wire_read_bytes, HTTP_POOL_QUICK},
    {"POST", "/sessions/{id}/write", wire_write, HTTP_POOL_QUICK},
    {"POST", "/sessions/{id}/edit", wire_edit, HTTP_POOL_QUICK},
    {"POST", "/sessions/{id}/exists", wire_exists, HTTP_POOL_QUICK},
    {"POST", "/sessions/{id}/ls", wire_ls, HTTP_POOL_QUICK},
    {"POST", "/sessions/{id}/glob", wire_glob, HTTP_POOL_SLOW},
    {"POST", "/sessions/{id}/grep", wire_grep, HTTP_POOL_SLOW},
    {"POST", "/workspaces/{id}/ls", wire_ws_ls, HTTP_POOL_QUICK},
    {"POST", "/workspaces/{id}/read", wire_ws_read, HTTP_POOL_QUICK},
    {"POST", "/workspaces/{id}/read_bytes", wire_ws_read_bytes,
     HTTP_POOL_QUICK},
};
const size_t serve_nroutes = sizeof(serve_routes) / sizeof(serve_routes[0]);

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
#include "serve/e2b.h"
#include "serve/serve-fleet.h"
#include "serve/wire-status.h"
#include "serve/wire.h"
#include "svc/svc-audit.h"
#include "svc/svc-session.h"

#define TOKEN_HEADER "X-Sandbox-Token"
/* Who acts, for the audit's rows (ours; docs/serve.md "Agent and run"). */
#define AGENT_HEADER "X-Sandbox-Agent"
#define RUN_HEADER "X-Sandbox-Run"
/* How long /healthz's counts stand before the engine is asked again. */
#define HEALTH_CACHE_MS 1000
/* The scrape token's refusal on any route but /metrics. */
#define METRICS_ONLY "The metrics token reads /metrics alone"

/* A request's gone flag is its call's cancel flag as it is. */
_Static_assert(HTTP_GONE_CLIENT == SVC_CANCEL_GONE, "gone: client");
_Static_assert(HTTP_GONE_SHUTDOWN == SVC_CANCEL_SHUTDOWN, "gone: shutdown");

/* ---- the shared handling ---- */

/*
 * The request's token: X-Sandbox-Token (sandboxd's header, what the
 * platform's client sends), else the credentials of "Authorization:
 * Bearer TOKEN" (RFC 6750: what Prometheus and most HTTP tools send).
 * X-Sandbox-Token wins when both come: a proxy's own Authorization on
 * the platform's requests then changes nothing.  The admit hook and the
 * worker read it through here alike, so they cannot disagree.
 */
const char *wire_token(const struct http_request *req)
{
	const char *t = http_header(req, TOKEN_HEADER);
	const char *a;

	if (t)
		return t;
	a = http_header(req, "Authorization");
	/* The scheme is case-insensitive (RFC 9110, 11.1). */
	if (!a || strncasecmp(a, "Bearer", 6) != 0 ||
	    (a[6] != ' ' && a[6] != '\t'))
		return NULL;
	a += 6 + strspn(a + 6, " \t");
	return *a ? a : NULL;
}

/* Whether /metrics needs a token: the service has one, or a scrape
 * token (a unix socket alone, without either, is guarded by its mode). */
static bool metrics_guarded(const struct serve *sv)
{
	return sv->service_hash[0] || sv->metrics_token_file;
}

/* A token that authenticates as the service or a tenant (the scrape
 * token reads /metrics alone). */
bool wire_who_acts(enum serve_who who)
{
	return who == SERVE_SERVICE || who == SERVE_TENANT;
}

void wire_begin(struct wire_req *w, void *arg, struct http_request *req,
		struct http_response *res)
{
	memset(w, 0, sizeof(*w));
	w->sv = arg;
	w->req = req;
	w->res = res;
	w->snap = serve_snap_get(w->sv);
	w->call.cancel = req->gone;
	serve_auth(w->sv, wire_token(req), &w->auth);
}

/*
 * What parsing a body may cost, before jansson parses it (jansson has no
 * limits: 12 MiB of [{},{},...] parsed to ~940 MiB): one pass over the
 * bytes counting the values (containers, strings, and the commas between
 * the rest) and the deepest nesting, strings skipped with their escapes.
 * The bytes are bounded by the route's cap, so the strings' total is.
 * 0, or the status to refuse with: 422 too deep, 413 too many values.
 */
int wire_json_shape(const char *p, size_t n)
{
	size_t nodes = 1;
	unsigned depth = 0;

	for (size_t i = 0; i < n; i++) {
		switch (p[i]) {
		case '"':
			nodes++;
			for (i++; i < n && p[i] != '"'; i++)
				if (p[i] == '\\')
					i++;
			break;
		case '{':
		case '[':
			nodes++;
			if (++depth > WIRE_JSON_DEPTH)
				return 422;
			break;
		case '}':
		case ']':
			if (depth)
				depth--;
			break;
		case ',':
			nodes++;
			break;
		}
		if (nodes > WIRE_JSON_NODES)
			return 413;
	}
	return 0;
}

/* The body as a JSON object, within json_shape's bounds (else 422 or
 * 413, and false). */
static bool wire_body(struct wire_req *w)
{
	const char *body = w->req->body ? w->req->body : "";
	json_error_t jerr;
	int status = wire_json_shape(body, w->req->body_len);
	char msg[64];

	if (status == 413) {
		wire_detail(w, 413, "Request body has more than %d JSON values",
			    WIRE_JSON_NODES);
		return false;
	}
	if (status) {
		snprintf(msg, sizeof(msg), "JSON nested deeper than %d levels",
			 WIRE_JSON_DEPTH);
		wire_invalid(w, "body", NULL, "json_too_deep", msg);
		return false;
	}
	w->body =
	    json_loadb(body, w->req->body_len, JSON_REJECT_DUPLICATES, &jerr);
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

/* The fleet's refusals in the wire's shapes (serve-fleet.h). */
static void fleet_error(struct wire_req *w, const struct sbx_error *err,
			const char *id, const char *tenant)
{
	struct wire_subject s = {.tenant = tenant, .session = id};

	wire_error(w, err, &s);
}

static const struct serve_fleet_front wire_front = {
    .error = fleet_error,
    .unreachable = wire_unreachable,
};

void wire_unreachable(struct wire_req *w, const char *id, const char *host,
		      const char *why)
{
	wire_detail(w, 503,
		    "Session %s lives on host %s, which is unreachable (%s). "
		    "Retry later, or open the session again.",
		    id, host, why);
	w->res->retry_after = "5";
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
	else if (w->auth.who == SERVE_METRICS)
		wire_detail(w, 403, "%s", METRICS_ONLY);
	else
		wire_detail(w, 401, "Invalid or missing sandbox token");
	return false;
}

/*
 * An agent or run header (name) into *out, NULL when absent: checked as
 * the command line's --agent and --run are (svc_id_check: 1 to 200 bytes
 * of UTF-8 without control characters), and sent once or repeated with
 * the same value (two values: which one acted cannot be told).  Else 422
 * naming the header, its value not echoed (it may not be UTF-8), and
 * false.
 */
/* One of the who headers: *out its value (NULL: absent); -1 with *why
 * (static, or err's text in *err) when it is bad. */
static int who_header(struct wire_req *w, const char *name, const char **out,
		      const char **why, struct sbx_error **err)
{
	const char *v = http_header_at(w->req, name, 0), *again;

	*out = NULL;
	if (!v)
		return 0;
	for (size_t i = 1; (again = http_header_at(w->req, name, i)); i++)
		if (strcmp(again, v) != 0) {
			*why = "sent twice with different values";
			return -1;
		}
	if (svc_id_check(name, v, err) < 0) {
		*why = (*err)->msg;
		return -1;
	}
	*out = v;
	return 0;
}

/* The one of an agent or run that counts: the header's, else the
 * session's default (its wire record's, "" for none), else the
 * service's (serve --agent/--run), else none. */
static const char *who_of(const char *hdr, const char *session,
			  const char *service)
{
	return hdr ? hdr : session && session[0] ? session : service;
}

int wire_who_read(struct wire_req *w, const char **bad, const char **why,
		  struct sbx_error **err)
{
	*bad = AGENT_HEADER;
	if (who_header(w, AGENT_HEADER, &w->hdr_agent, why, err) < 0)
		return -1;
	*bad = RUN_HEADER;
	if (who_header(w, RUN_HEADER, &w->hdr_run, why, err) < 0)
		return -1;
	*bad = NULL;
	w->call.agent =
	    who_of(w->hdr_agent, w->ws.wire.agent, w->sv->default_agent);
	w->call.run = who_of(w->hdr_run, w->ws.wire.run, w->sv->default_run);
	return 0;
}

/* The call's agent and run from the headers, the session's defaults
 * and the service's: false once answered (422). */
static bool wire_who(struct wire_req *w)
{
	const char *bad, *why;
	struct sbx_error *err = NULL;

	if (wire_who_read(w, &bad, &why, &err) == 0)
		return true;
	wire_invalid_input(w, "header", bad, "value_error", why, NULL);
	sbx_error_free(&err);
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
	const char *id = w->path_id ? w->path_id : w->req->params[0];
	const char *token = wire_token(w->req);
	struct sbx_error *err = NULL;

	if (!missing)
		missing = "No such session";
	if (wire_who_acts(w->auth.who))
		return find_session(w, id, open_only, missing);
	if (w->auth.who == SERVE_METRICS) {
		wire_detail(w, 403, "%s", METRICS_ONLY);
		return false;
	}
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
	    "{s:s, s:s, s:s?, s:b, s:s, s:f, s:f, s:f, s:n}", "session_id",
	    ws->wire.id[0] ? ws->wire.id : ws->key, "runtime", ws->rec.runtime,
	    "tenant", svc_wire_tenant(ws->rec.tenant), "alive", alive, "state",
	    asleep ? svc_wire_hibernated : "running", "created_at",
	    (double)ws->rec.created, "last_activity", last, "idle_seconds",
	    now > last ? now - last : 0.0, "usage");

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
 * nulls for what it does not say (or when it does not answer), kept per
 * session SERVE_USAGE_MS as sandboxd keeps it (a sample is a second of
 * the engine's time: a flood of ?usage=true asks it once). */
static json_t *usage_json(struct wire_req *w, const struct svc_wire_session *ws)
{
	struct svc_wire_usage u;
	struct sbx_error *err = NULL;

	if (!serve_usage_get(w->sv, ws->key, &u)) {
		if (svc_wire_usage(&w->snap->svc, &w->call, ws, &u, &err) < 0) {
			atomic_fetch_add(&w->sv->engine_errors, 1);
			sbx_error_free(&err);
		} else {
			serve_usage_put(w->sv, ws->key, &u);
		}
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

/* The work dir of the request's session (the configuration's without
 * one): where its sandbox sees its workspace. */
static const char *session_wd(const struct wire_req *w)
{
	return w->ws.key[0] ? svc_session_work_dir(&w->snap->svc, &w->ws.rec)
			    : w->snap->svc.cfg.session.work_dir;
}

char *wire_path(const struct wire_req *w, const char *path, const char **why)
{
	const char *rel = path;

	*why = NULL;
	if (path[0] == '/') {
		/* The sandbox's path of the workspace, the work dir (the
		 * host's is not the sandbox's: it is outside, as any other
		 * absolute path). */
		rel = strip_prefix(path, session_wd(w));
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
	const char *wd = session_wd(w);

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

/* agent and run, ours: the session's defaults (absent or null: a new
 * open has none, a reuse keeps its own), checked as the headers are.
 * The open's own row takes them when it has no header; a reuse that
 * names none takes the session's.  False once answered. */
static bool open_who(struct wire_req *w, struct svc_wire_open_req *o)
{
	static const char *const names[] = {"agent", "run"};
	const char **dst[] = {&o->agent, &o->run};
	struct sbx_error *err = NULL;

	for (size_t i = 0; i < 2; i++) {
		if (!wire_str(w, names[i], false, true, dst[i]))
			return false;
		if (*dst[i] && svc_id_check(names[i], *dst[i], &err) < 0) {
			wire_invalid(w, "body", names[i], "value_error",
				     err->msg);
			sbx_error_free(&err);
			return false;
		}
	}
	return true;
}

/* The open's own agent and run: the header's, else the body's; where
 * neither names one, svc_wire_open takes a reused session's defaults
 * (from the record it reads anyway), else the service's. */
static void open_who_call(struct wire_req *w, struct svc_wire_open_req *o)
{
	w->call.agent = w->hdr_agent ? w->hdr_agent : o->agent;
	w->call.run = w->hdr_run ? w->hdr_run : o->run;
	o->default_agent = w->sv->default_agent;
	o->default_run = w->sv->default_run;
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
	    !disk_fields(w, o, quota) || !open_who(w, o))
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
	/* The token is good from now on, without a lookup (wire_admit). */
	serve_token_remember(w->sv, id, r->token);
}

static void sessions_create(struct wire_req *w)
{
	struct svc_wire_open_req o = {0};
	struct svc_wire_open_res r = {0};
	struct sbx_error *err = NULL;
	const char *tenant = NULL;
	char idbuf[24], quota[24];

	if (!open_fields(w, &o, &tenant, idbuf, quota))
		return;
	snprintf(w->req->tenant, sizeof(w->req->tenant), "%s", tenant);
	snprintf(w->req->session, sizeof(w->req->session), "%s", o.id);
	/* In a fleet, the host: this one, or another that answers. */
	if (serve_fleet_place(w, o.id, tenant, o.runtime, NULL, &wire_front))
		return;
	if (serve_opening_add(w->sv, o.id) < 0) {
		wire_detail(w, 409, "Session is opening: %s", o.id);
		return;
	}
	o.cat = &w->snap->cat;
	w->call.tenant = tenant;
	open_who_call(w, &o);
	atomic_fetch_add(&w->sv->opens, 1);
	if (svc_wire_open(&w->snap->svc, &w->call, &o, &r, &err) < 0)
		open_failed(w, &o, &r, tenant, err);
	else
		open_answer(w, &r, o.id, tenant);
	serve_fleet_opened(w, o.id, err == NULL);
	serve_opening_del(w->sv, o.id);
	serve_pool_kick(w->sv);
	svc_wire_open_res_release(&r);
	sbx_error_free(&err);
}

/* SANDBOXD_MAX_OPEN_SESSIONS, or null when unset. */
static json_t *open_limit(const struct svc *s)
{
	return s->cfg.session.max_open
		   ? json_integer((json_int_t)s->cfg.session.max_open)
		   : json_null();
}

static void sessions_list(struct wire_req *w)
{
	struct svc_wire_list_res l;
	struct sbx_error *err = NULL;
	json_t *rows;
	bool usage = false;

	if (!wire_query_bool(w, "usage", &usage))
		return;
	if (svc_wire_list(&w->snap->svc, &w->call, &l, &err) < 0) {
		wire_error(w, err, NULL);
		sbx_error_free(&err);
		return;
	}
	rows = json_array();
	for (size_t i = 0; i < l.n; i++) {
		json_t *info =
		    wire_session_info(&w->snap->svc, &l.rows[i], l.states[i]);

		if (usage && resident(l.states[i]))
			json_object_set_new(info, "usage",
					    usage_json(w, &l.rows[i]));
		json_array_append_new(rows, info);
	}
	serve_fleet_list(w, rows, "sessions");
	wire_json(
	    w, 200,
	    xjson_pack("{s:o, s:i, s:o, s:i}", "sessions", rows, "limit",
		       (json_int_t)w->snap->svc.cfg.session.max_sessions,
		       "open_limit", open_limit(&w->snap->svc), "tenant_limit",
		       (json_int_t)w->snap->svc.cfg.session.max_per_tenant));
	svc_wire_list_res_release(&l);
}

static void sessions_get(struct wire_req *w)
{
	bool usage = false;

	if (wire_query_bool(w, "usage", &usage)) {
		const char *state = wire_session_state(w);
		json_t *info = wire_session_info(&w->snap->svc, &w->ws, state);

		if (usage && resident(state))
			json_object_set_new(info, "usage",
					    usage_json(w, &w->ws));
		wire_json(w, 200, info);
	}
}

static void sessions_delete(struct wire_req *w)
{
	struct svc_session_close_req c = {0};
	struct svc_session_close_res r = {0};
	struct sbx_error *err = NULL;

	c.purge = w->purge;
	c.key = w->ws.key;
	atomic_fetch_add(&w->sv->closes, 1);
	if (svc_session_close(&w->snap->svc, &w->call, &c, &r, &err) < 0) {
		wire_error(w, err, NULL);
	} else {
		w->answered = true;
		w->res->status = 204;
		/* Its tokens are no longer good. */
		serve_token_forget(w->sv, w->req->params[0]);
		serve_fleet_closed(w, w->req->params[0], r.purged);
	}
	svc_session_close_res_release(&r);
	sbx_error_free(&err);
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
	    {"stat", "exists"},
	    /* sandboxd has no removal: its name is the audit's */
	    {"remove", "remove"},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(op, map[i][0]) == 0)
			return map[i][1];
	return op;
}

static void sessions_events(struct wire_req *w)
{
	struct svc_audit_events_req e = {0};
	struct svc_audit_events_res r = {0};
	struct sbx_error *err = NULL;
	unsigned long long after = 0;
	size_t i;
	json_t *ev;

	if (!wire_query_uint(w, "after", &after))
		goto out;
	e.key = w->ws.key;
	e.after = after > (unsigned long long)LLONG_MAX ? LLONG_MAX
							: (long long)after;
	if (svc_audit_events(&w->snap->svc, &w->call, &e, &r, &err) < 0) {
		wire_error(
		    w, err,
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
		if (t && strstr(t, w->ws.key))
			json_object_set_new(ev, "target",
					    xjson_string(w->ws.wire.id[0]
							     ? w->ws.wire.id
							     : "(session)"));
	}
	wire_json(w, 200, json_incref(r.doc));
out:
	sbx_error_free(&err);
	svc_audit_events_res_release(&r);
}

/* ---- policy ---- */

static void policy_get(struct wire_req *w)
{

	wire_json(w, 200, serve_policy_json(w->snap));
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

static void policy_put(struct wire_req *w)
{
	struct strbuf why = STRBUF_INIT, field = STRBUF_INIT;
	struct serve_snap *snap = NULL;
	struct sbx_error *err = NULL;
	json_t *merged = NULL;
	int status = 422;

	if (serve_policy_check(w->snap, w->body, &status, &field, &why) < 0) {
		if (status == 400)
			wire_detail(w, 400, "%s", strbuf_str(&why));
		else
			wire_invalid(w, "body", strbuf_str(&field),
				     "value_error", strbuf_str(&why));
		goto out;
	}
	merged = serve_policy_merge(w->snap->overrides, w->body);
	if (serve_snap_make(w->sv, merged, &snap, &err) < 0 ||
	    policy_save(w->sv, merged, &err) < 0) {
		wire_error(w, err, NULL);
		serve_snap_put(snap);
		goto out;
	}
	serve_snap_set(w->sv, snap);
	wire_json(w, 200, serve_policy_json(snap));
out:
	json_decref(merged);
	sbx_error_free(&err);
	strbuf_release(&why);
	strbuf_release(&field);
}

/* ---- health, index, metrics ---- */

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool wire_session_counts(struct serve *sv, const struct svc *s,
			 long long max_age_ms, size_t *running, size_t *open)
{
	struct svc_wire_list_res l;
	struct sbx_error *err = NULL;
	struct svc_call any = {0};
	bool fresh;

	pthread_mutex_lock(&sv->lock);
	fresh = sv->health_at && clock_now_ms() - sv->health_at < max_age_ms;
	*running = sv->health_running;
	*open = sv->health_open;
	pthread_mutex_unlock(&sv->lock);
	if (fresh)
		return true;
	if (svc_wire_list(s, &any, &l, &err) < 0) {
		sbx_error_free(&err);
		return false;
	}
	*open = l.n;
	*running = 0;
	for (size_t i = 0; i < l.n; i++)
		*running += resident(l.states[i]);
	svc_wire_list_res_release(&l);
	pthread_mutex_lock(&sv->lock);
	sv->health_at = clock_now_ms();
	sv->health_running = *running;
	sv->health_open = *open;
	pthread_mutex_unlock(&sv->lock);
	return true;
}

static json_t *health_json(struct wire_req *w)
{
	json_t *rts = json_array();
	size_t running = 0, open = 0;
	bool reload_ok;
	double reload_at;
	char at[32];
	char **aliases = xcalloc(w->snap->cat.n + 1, sizeof(char *));

	for (size_t i = 0; i < w->snap->cat.n; i++)
		aliases[i] = w->snap->cat.rt[i].alias;
	qsort(aliases, w->snap->cat.n, sizeof(char *), by_str);
	for (size_t i = 0; i < w->snap->cat.n; i++)
		json_array_append_new(rts, xjson_string(aliases[i]));
	free(aliases);
	if (!wire_session_counts(w->sv, &w->snap->svc, HEALTH_CACHE_MS,
				 &running, &open))
		atomic_fetch_add(&w->sv->engine_errors, 1);
	/* A failed reload leaves the service serving what it had: status
	 * stays "ok" (a balancer must not take it out), reload says it. */
	serve_reload_state(w->sv, &reload_ok, &reload_at);
	clock_format_time(at, (long long)reload_at);
	return xjson_pack("{s:s, s:i, s:i, s:i, s:o, s:o, s:{s:b, s:s}}",
			  "status", "ok", "sessions", (json_int_t)running,
			  "limit",
			  (json_int_t)w->snap->svc.cfg.session.max_sessions,
			  "open_sessions", (json_int_t)open, "open_limit",
			  open_limit(&w->snap->svc), "runtimes", rts, "reload",
			  "successful", reload_ok, "last_success_at", at);
}

static void healthz(struct wire_req *w)
{

	wire_json(w, 200, health_json(w));
}

static void index_route(struct wire_req *w)
{
	json_t *eps = json_array();
	const char **paths = xcalloc(serve_nroutes, sizeof(*paths));

	/* Each path once, sorted, as sandboxd lists them. */
	for (size_t i = 0; i < serve_nroutes; i++)
		paths[i] = serve_routes[i].path;
	qsort(paths, serve_nroutes, sizeof(*paths), by_str);
	for (size_t i = 0; i < serve_nroutes; i++)
		if (!i || strcmp(paths[i], paths[i - 1]) != 0)
			json_array_append_new(eps, xjson_string(paths[i]));
	free(paths);
	/* sandboxd's strings (the client's ServiceIndex wants them); no
	 * UI is served. */
	wire_json(w, 200,
		  xjson_pack("{s:s, s:o, s:s, s:s, s:n, s:o}", "service",
			     "sandboxd", "health", health_json(w), "docs_url",
			     "/docs", "openapi_url", "/openapi.json", "ui_url",
			     "endpoints", eps));
}

/* The token a route takes, in the words of the OpenAPI document. */
static const char *token_word(enum wire_token t)
{
	static const char *const words[] = {
	    [WIRE_TOKEN_NONE] = "none",
	    [WIRE_TOKEN_METRICS] = "service or metrics (when the service "
				   "has one)",
	    [WIRE_TOKEN_SERVICE] = "service",
	    [WIRE_TOKEN_TENANT] = "service or tenant",
	    [WIRE_TOKEN_SESSION] = "the session's, its tenant's or the "
				   "service's",
	};

	return words[t];
}

/*
 * GET /openapi.json: a minimal OpenAPI 3.1 document made from the route
 * table (every path, its methods, the token each takes, the body's
 * cap), so the index's openapi_url is not a misleading 404.  The shapes
 * of bodies and answers are sandboxd's (docs/serve.md), not repeated
 * here.
 */
static void openapi_route(struct wire_req *w)
{
	json_t *paths = json_object();

	for (size_t i = 0; i < serve_nroutes; i++) {
		const struct http_route *rt = &serve_routes[i];
		const struct wire_needs *n = rt->needs;
		json_t *item = json_object_get(paths, rt->path), *op, *params;
		struct strbuf m = STRBUF_INIT;

		if (!item) {
			item = json_object();
			json_object_set_new(paths, rt->path, item);
		}
		params = json_array();
		for (const char *p = strchr(rt->path, '{'); p;
		     p = strchr(p + 1, '{')) {
			size_t len = strcspn(p + 1, "}");
			json_array_append_new(
			    params,
			    xjson_pack("{s:s%, s:s, s:b, s:{s:s}}", "name",
				       p + 1, len, "in", "path", "required", 1,
				       "schema", "type", "string"));
		}
		op = xjson_pack(
		    "{s:s, s:o, s:o, s:s, s:I, s:{s:{s:s}}}", "operationId",
		    rt->path, "parameters", params, "security",
		    n->token == WIRE_TOKEN_NONE
			? json_array()
			: xjson_pack("[{s:[]}, {s:[]}]", "token", "bearer"),
		    "x-sbxcat-token", token_word(n->token), "x-sbxcat-max-body",
		    (json_int_t)rt->max_body, "responses", "default",
		    "description", "sandboxd's answer (docs/serve.md)");
		for (const char *c = rt->method; *c; c++)
			strbuf_addch(&m, (char)(*c - 'A' + 'a'));
		json_object_set_new(item, strbuf_str(&m), op);
		strbuf_release(&m);
	}
	wire_json(w, 200,
		  xjson_pack("{s:s, s:{s:s, s:s, s:s}, s:o, s:{s:{s:{s:s, s:s, "
			     "s:s}, s:{s:s, s:s}}}}",
			     "openapi", "3.1.0", "info", "title",
			     "sbxcat serve: sandboxd's wire", "version",
			     PACKAGE_VERSION, "description",
			     "The routes of sbxcat serve; see docs/serve.md",
			     "paths", paths, "components", "securitySchemes",
			     "token", "type", "apiKey", "in", "header", "name",
			     TOKEN_HEADER, "bearer", "type", "http", "scheme",
			     "bearer"));
}

/* GET /docs: a page that says where the routes are described. */
static void docs_route(struct wire_req *w)
{
	static const char page[] =
	    "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
	    "<title>sbxcat serve</title></head><body>\n"
	    "<h1>sbxcat serve</h1>\n<p>The sandbox service, speaking "
	    "sandboxd's wire. Its routes, the token each takes and the "
	    "largest body each accepts: <a href=\"/openapi.json\">"
	    "/openapi.json</a>. Their fields and answers: "
	    "<code>docs/serve.md</code> and <code>man sbxcat</code>.</p>\n"
	    "</body></html>\n";

	w->res->status = 200;
	w->res->content_type = "text/html; charset=utf-8";
	w->res->body = xstrdup(page);
	w->res->body_len = sizeof(page) - 1;
	w->answered = true;
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
	http_metric_family(out, "sbxcat_sessions", "gauge",
			   "Sessions open on the service, by their containers' "
			   "state.");
	for (size_t k = 0; k <= NSTATES; k++)
		strbuf_addf(out, "sbxcat_sessions{state=\"%s\"} %zu\n",
			    k < NSTATES ? states[k] : "other", count[k]);
}

static void metrics(struct wire_req *w)
{
	struct strbuf sb = STRBUF_INIT;

	http_metrics(w->sv->http, &sb);
	serve_metrics(w->sv, &sb);
	session_metrics(w, &sb);
	w->res->status = 200;
	w->res->content_type = "text/plain; version=0.0.4; charset=utf-8";
	w->res->body = strbuf_detach(&sb, &w->res->body_len);
	w->answered = true;
	strbuf_release(&sb);
}

/* ---- what a route needs, done before its operation ---- */

/* Who a caller is for the pools' fair shares: the session a per-session
 * route acts on (whatever the token), else the tenant, else the service,
 * else "-" (no token). */
static void caller_of(const struct wire_needs *n,
		      const struct http_request *req,
		      const struct serve_auth *au, struct http_admit *a)
{
	if (n->session != WIRE_LOOKUP_NONE && req->nparams)
		snprintf(a->caller, sizeof(a->caller), "s:%s", req->params[0]);
	else if (au->who == SERVE_TENANT)
		snprintf(a->caller, sizeof(a->caller), "t:%s", au->tenant);
	else if (au->who == SERVE_SERVICE)
		snprintf(a->caller, sizeof(a->caller), "service");
	else if (au->who == SERVE_METRICS)
		snprintf(a->caller, sizeof(a->caller), "metrics");
	else
		snprintf(a->caller, sizeof(a->caller), "-");
}

static void admit_refuse(struct http_admit *a, const struct serve_auth *au)
{
	if (au->who == SERVE_TENANT) {
		a->status = 403;
		a->detail = "This route needs the service token";
	} else if (au->who == SERVE_METRICS) {
		a->status = 403;
		a->detail = METRICS_ONLY;
	} else {
		a->status = 401;
		a->detail = "Invalid or missing sandbox token";
	}
}

/*
 * The HTTP server's admit hook: on libmicrohttpd's thread, before a byte
 * of the body is read.  The service's and tenants' tokens are hashes in
 * memory; a session's token is checked against the service's cache of
 * session tokens (serve_token_check: a miss reads the session's record,
 * at a bounded rate).  What it lets in is checked again on the worker
 * (wire_handle), against the record itself.
 */
void wire_admit(void *arg, const struct http_route *rt,
		const struct http_request *req, struct http_admit *a)
{
	struct serve *sv = arg;
	const struct wire_needs *n = rt->needs;
	const char *token = wire_token(req);
	const char *usage = http_query(req, "usage");
	struct serve_auth au;

	if (!n)
		return;
	if (rt->handler != wire_handle) {
		e2b_admit(arg, rt, req, a);
		return;
	}
	serve_auth(sv, token, &au);
	a->who = (int)au.who;
	caller_of(n, req, &au, a);
	/* A sample of the engine's stats is a second of the engine's time:
	 * not on the quick pool. */
	if (n->usage_slow && usage &&
	    (!strcasecmp(usage, "true") || !strcmp(usage, "1") ||
	     !strcasecmp(usage, "yes") || !strcasecmp(usage, "on")))
		a->pool = HTTP_POOL_SLOW;
	switch (n->token) {
	case WIRE_TOKEN_NONE:
		return;
	case WIRE_TOKEN_METRICS:
		if (!metrics_guarded(sv) || au.who == SERVE_SERVICE ||
		    au.who == SERVE_METRICS)
			return;
		break;
	case WIRE_TOKEN_SERVICE:
		if (au.who == SERVE_SERVICE)
			return;
		break;
	case WIRE_TOKEN_TENANT:
		if (wire_who_acts(au.who))
			return;
		break;
	case WIRE_TOKEN_SESSION:
		if (wire_who_acts(au.who))
			return;
		if (!token || !req->nparams || au.who == SERVE_METRICS)
			break;
		switch (serve_token_check(sv, req->params[0], token)) {
		case 1:
			return;
		case -1:
			a->status = 503;
			a->detail = "Server busy";
			a->retry_after = "1";
			return;
		}
		break;
	}
	admit_refuse(a, &au);
}

/* What the route declares, done: the token, the session, the body.
 * False once answered. */
static bool prepare(struct wire_req *w, const struct wire_needs *n)
{
	bool open_only = true;

	switch (n->token) {
	case WIRE_TOKEN_NONE:
	case WIRE_TOKEN_SESSION: /* wire_session checks it */
		break;
	case WIRE_TOKEN_METRICS:
		if (metrics_guarded(w->sv) && w->auth.who != SERVE_METRICS &&
		    !wire_auth_service(w, false))
			return false;
		break;
	case WIRE_TOKEN_SERVICE:
	case WIRE_TOKEN_TENANT:
		if (!wire_auth_service(w, n->token == WIRE_TOKEN_TENANT))
			return false;
		break;
	}
	switch (n->session) {
	case WIRE_LOOKUP_NONE:
		break;
	case WIRE_LOOKUP_PURGE:
		if (!wire_query_bool(w, "purge", &w->purge))
			return false;
		/* A kept workspace may be purged with the service's token. */
		open_only = !(w->purge && wire_who_acts(w->auth.who));
		/* fall through */
	case WIRE_LOOKUP_OPEN:
	case WIRE_LOOKUP_KEPT:
		if (n->session == WIRE_LOOKUP_KEPT)
			open_only = false;
		/* The key is the host's name of a session: the service's
		 * and the tenants' tokens may use it; a session's own token
		 * came with the id (and the admit hook checked it by the
		 * path, on the listener's thread, with no lookup). */
		if (n->key_alias && wire_who_acts(w->auth.who))
			w->path_id = svc_wire_alias(&w->snap->svc, &w->call,
						    w->req->params[0], w->alias);
		if (!wire_session(w, open_only, n->missing))
			return false;
		break;
	}
	/* After the token (a caller who is nobody learns nothing) and the
	 * session (its defaults), before the body and the operation: a
	 * bad header runs and records nothing. */
	return wire_who(w) && (!n->body || wire_body(w));
}

void wire_handle(void *arg, struct http_request *req, struct http_response *res)
{
	const struct wire_needs *n = req->needs;
	struct wire_req w;

	wire_begin(&w, arg, req, res);
	/* A session of another host of the fleet: its host answers. */
	if (n->session != WIRE_LOOKUP_NONE && req->nparams &&
	    serve_fleet_route(&w, req->params[0], &wire_front)) {
		wire_end(&w);
		return;
	}
	if (prepare(&w, n))
		n->op(&w);
	wire_end(&w);
}

/* ---- the routes ---- */

/* The bodies routes take: a few fields (paths, patterns: 64 KiB); a
 * command (exec: ARG_MAX's 128 KiB a string, escaped); run's argv and
 * env (ARG_MAX, 2 MiB, and 256 KiB of env, escaped); edit's two strings;
 * a PolicyUpdate; none (a GET, a DELETE). write's is base64 of
 * SANDBOXD_MAX_WRITE_BYTES, set at start (serve.c, wire_write_cap). */
#define CAP_NONE (4 << 10)
#define CAP_FIELDS (64 << 10)
#define CAP_POLICY (16 << 10)
#define CAP_EXEC (1 << 20)
#define CAP_RUN (8 << 20)
#define CAP_EDIT (4 << 20)

size_t wire_write_cap(unsigned long long max_write)
{
	/* base64 (4 per 3, rounded up), JSON's quotes, the path and the
	 * other fields. */
	return st_add(st_mult((size_t)(max_write / 3 + 1), 4), CAP_FIELDS);
}

/* clang-format off: a route a line, what it needs by name. */
#define ROUTE(m, p, pool, cap, op_, tok, ...)                                  \
	{m, p, wire_handle, HTTP_POOL_##pool, cap,                             \
	 &(const struct wire_needs){.op = op_, .token = WIRE_TOKEN_##tok,      \
				    __VA_ARGS__}}
#define OPEN .session = WIRE_LOOKUP_OPEN
#define KEPT .session = WIRE_LOOKUP_KEPT, .missing = "No workspace for session"
#define PURGE .session = WIRE_LOOKUP_PURGE
#define BODY .body = true

const struct http_route serve_routes[] = {
    ROUTE("GET", "/", QUICK, CAP_NONE, index_route, NONE),
    ROUTE("GET", "/healthz", QUICK, CAP_NONE, healthz, NONE),
    ROUTE("GET", "/docs", QUICK, CAP_NONE, docs_route, NONE),
    ROUTE("GET", "/openapi.json", QUICK, CAP_NONE, openapi_route, NONE),
    ROUTE("GET", "/metrics", QUICK, CAP_NONE, metrics, METRICS),
    ROUTE("GET", "/policy", QUICK, CAP_NONE, policy_get, TENANT),
    ROUTE("PUT", "/policy", QUICK, CAP_POLICY, policy_put, SERVICE, BODY),
    ROUTE("POST", "/sessions", SLOW, CAP_FIELDS, sessions_create, TENANT, BODY),
    ROUTE("GET", "/sessions", QUICK, CAP_NONE, sessions_list, TENANT,
	  .usage_slow = true),
    ROUTE("GET", "/sessions/{id}", QUICK, CAP_NONE, sessions_get, SESSION, OPEN,
	  .usage_slow = true),
    ROUTE("DELETE", "/sessions/{id}", SLOW, CAP_NONE, sessions_delete, SESSION,
	  PURGE),
    ROUTE("GET", "/sessions/{id}/events", QUICK, CAP_NONE, sessions_events,
	  SESSION, OPEN, .key_alias = true),
    ROUTE("POST", "/sessions/{id}/exec", SLOW, CAP_EXEC, wire_exec, SESSION,
	  OPEN, BODY),
    ROUTE("POST", "/sessions/{id}/run", SLOW, CAP_RUN, wire_run, SESSION, OPEN,
	  BODY),
    ROUTE("POST", "/sessions/{id}/runs/{run_id}/stop", QUICK, CAP_NONE,
	  wire_run_stop, SESSION, OPEN),
    ROUTE("POST", "/sessions/{id}/read", QUICK, CAP_FIELDS, wire_read, SESSION,
	  OPEN, BODY),
    ROUTE("POST", "/sessions/{id}/read_bytes", QUICK, CAP_FIELDS,
	  wire_read_bytes, SESSION, OPEN, BODY),
    ROUTE("POST", "/sessions/{id}/write", QUICK, 0, wire_write, SESSION, OPEN,
	  BODY, .write_cap = true),
    ROUTE("POST", "/sessions/{id}/edit", QUICK, CAP_EDIT, wire_edit, SESSION,
	  OPEN, BODY),
    ROUTE("POST", "/sessions/{id}/exists", QUICK, CAP_FIELDS, wire_exists,
	  SESSION, OPEN, BODY),
    ROUTE("POST", "/sessions/{id}/ls", QUICK, CAP_FIELDS, wire_ls, SESSION,
	  OPEN, BODY),
    ROUTE("POST", "/sessions/{id}/glob", SLOW, CAP_FIELDS, wire_glob, SESSION,
	  OPEN, BODY),
    ROUTE("POST", "/sessions/{id}/grep", SLOW, CAP_FIELDS, wire_grep, SESSION,
	  OPEN, BODY),
    ROUTE("POST", "/workspaces/{id}/ls", QUICK, CAP_FIELDS, wire_ws_ls, TENANT,
	  KEPT, BODY),
    ROUTE("POST", "/workspaces/{id}/read", QUICK, CAP_FIELDS, wire_ws_read,
	  TENANT, KEPT, BODY),
    ROUTE("POST", "/workspaces/{id}/read_bytes", QUICK, CAP_FIELDS,
	  wire_ws_read_bytes, TENANT, KEPT, BODY),
};
/* clang-format on */
const size_t serve_nroutes = sizeof(serve_routes) / sizeof(serve_routes[0]);

/*
 * e2b-api.c - the E2B front's control plane (e2b.h, docs/e2b.md,
 * "Control plane" and "Lifecycle"): sandboxes created, connected,
 * paused, listed and killed over REST, in the shapes of E2B's
 * spec/openapi.yml that its SDK's models require.  A sandbox is a wire
 * session with svc-e2b.h's record beside it; what E2B has and sbxcat
 * does not (metrics, logs, snapshots, templates, volumes, forks) answers
 * 501 naming itself.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/size.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "serve/e2b.h"
#include "serve/serve-fleet.h"
#include "serve/wire-status.h"
#include "svc/svc-e2b.h"

/* The id a placing host gave the sandbox it forwards the create of. */
#define FLEET_ID_HEADER "X-Sbxcat-Fleet-Id"

/* What envd would say it is: the SDK gates features on it (0.5.7: file
 * uploads as octet-stream; 0.5.2: closing stdin). */
#define ENVD_VERSION "0.5.7"
/* The deprecated clientID: one value, as E2B's own. */
#define CLIENT_ID "sbxcat"
/* Every container's NanoCpus (brief section 7): two CPUs. */
#define E2B_CPUS 2
/* A timeout not given: spec/openapi.yml's defaults (v1's create and
 * resume 15 s, v2's create and connect 300 s, the SDK's own). */
#define TIMEOUT_V1 15
#define TIMEOUT_V2 300
/* GET /v2/sandboxes: limit's default and most (E2B's own bounds). */
#define LIST_LIMIT 100
/* The metadata filter's pairs at most. */
#define FILTER_PAIRS SVC_E2B_META_KEYS
/* The templates E2B's SDKs name when given none. */
static const char *const builtin_templates[] = {"base", "code-interpreter-v1"};
#define N_BUILTIN (sizeof(builtin_templates) / sizeof(*builtin_templates))
/* A create's body: metadata and envVars at their bounds. */
#define CREATE_CAP (512 << 10)
#define SMALL_CAP 4096

static const struct svc *svc_of(struct e2b_req *e)
{
	return &e->w.snap->svc;
}

/* ---- what the other modules call ---- */

bool e2b_envd_ready(struct e2b_req *e)
{
	struct svc_e2b rec;
	struct sbx_error *err = NULL;

	if (svc_e2b_read(svc_of(e), &e->w.call, e->w.ws.key, &rec, &err) < 0) {
		/* A wire session that is no E2B sandbox is not one here. */
		if (err->kind == SBX_E_NOT_FOUND)
			e2b_rest_error(e, 404, "Sandbox %s not found", e->id);
		else
			e2b_error(e, err);
		sbx_error_free(&err);
		return false;
	}
	if (rec.paused) {
		/* E2B's proxy answers a paused sandbox's traffic so: 502,
		 * whatever the route's dialect (it is the proxy's). */
		e2b_rest_error(e, 502,
			       "The sandbox %s is paused: connect to resume it",
			       e->id);
		svc_e2b_release(&rec);
		return false;
	}
	if (json_object_size(rec.envs))
		e->envs = json_incref(rec.envs);
	svc_e2b_release(&rec);
	return true;
}

json_t *e2b_sandbox_envs(struct e2b_req *e)
{
	return e->envs;
}

/* ---- the shapes ---- */

/* Milliseconds since the epoch as RFC 3339 with milliseconds. */
static json_t *time_ms_json(long long ms)
{
	char buf[32];
	size_t n;

	clock_format_time(buf, ms / 1000);
	n = strlen(buf);
	if (n && buf[n - 1] == 'Z')
		snprintf(buf + n - 1, sizeof(buf) - n + 1, ".%03lldZ",
			 ms % 1000);
	return xjson_string(buf);
}

static json_t *domain_json(struct e2b_req *e)
{
	return e->w.sv->e2b_domain ? xjson_string(e->w.sv->e2b_domain)
				   : json_null();
}

/* Sandbox: what a create and a connect answer. */
static json_t *sandbox_json(struct e2b_req *e, const char *id,
			    const char *template_id, const char *token)
{
	/* trafficAccessToken is the same token: the code interpreter's
	 * context calls send it alone (E2B-Traffic-Access-Token, e2b.c). */
	return xjson_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:s}",
			  "sandboxID", id, "templateID", template_id, "alias",
			  template_id, "clientID", CLIENT_ID, "envdVersion",
			  ENVD_VERSION, "envdAccessToken", token, "domain",
			  domain_json(e), "trafficAccessToken", token);
}

static long long mib(unsigned long long bytes)
{
	return (long long)(bytes >> 20);
}

/* SandboxDetail (GET) and ListedSandbox (lists): every field their
 * models require, and the optional ones sbxcat knows. */
static json_t *detail(struct e2b_req *e, const struct svc_e2b_sandbox *sb)
{
	const struct svc *s = svc_of(e);
	const struct runtime *rt =
	    catalog_find(&e->w.snap->cat, sb->ws.rec.runtime);
	unsigned long long mem = s->cfg.session.mem_limit;
	char *why;

	if (rt && rt->mem_limit) {
		why = size_parse(rt->mem_limit, &size_memory, &mem);
		free(why);
	}
	return xjson_pack(
	    "{s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:i, s:I, s:I, s:O, s:s, "
	    "s:b, s:o, s:{s:b, s:s}, s:[]}",
	    "templateID", sb->e.template_id, "alias", sb->e.template_id,
	    "sandboxID", sb->ws.wire.id, "clientID", CLIENT_ID, "startedAt",
	    time_ms_json(sb->e.started_ms), "endAt",
	    svc_time_json(sb->e.end_at), "envdVersion", ENVD_VERSION,
	    "cpuCount", E2B_CPUS, "memoryMB", (json_int_t)mib(mem),
	    "diskSizeMB", (json_int_t)mib(s->cfg.session.disk_quota),
	    "metadata", sb->e.metadata, "state",
	    sb->e.paused ? "paused" : "running", "allowInternetAccess",
	    rt && rt->needs_network, "domain", domain_json(e), "lifecycle",
	    "autoResume", false, "onTimeout",
	    sb->e.auto_pause ? "pause" : "kill", "volumeMounts");
}

/* ---- a request's parts ---- */

/* The body of a route whose body is optional: {} when empty.  False
 * once answered. */
static bool opt_body(struct e2b_req *e)
{
	const char *p = e->w.req->body;
	size_t n = e->w.req->body_len;
	int shape;

	if (!n) {
		e->w.body = json_object();
		return true;
	}
	shape = wire_json_shape(p, n);
	if (shape) {
		e2b_rest_error(e, 400,
			       "The body's JSON is too big or too deep");
		return false;
	}
	e->w.body = json_loadb(p, n, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(e->w.body)) {
		e2b_rest_error(e, 400, "The body is not a JSON object");
		return false;
	}
	return true;
}

/* An integer field within [min, max], def when absent or null.  False
 * once answered. */
static bool int_field(struct e2b_req *e, const char *name, long long min,
		      long long max, long long def, long long *out)
{
	json_t *v = json_object_get(e->w.body, name);

	*out = def;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v)) {
		e2b_rest_error(e, 400, "%s is not an integer", name);
		return false;
	}
	if (json_integer_value(v) < min || json_integer_value(v) > max) {
		e2b_rest_error(e, 400, "%s must be from %lld to %lld", name,
			       min, max);
		return false;
	}
	*out = json_integer_value(v);
	return true;
}

/* A boolean field (absent or null: *out unchanged, *given false). */
static bool bool_field(struct e2b_req *e, const char *name, bool *out,
		       bool *given)
{
	json_t *v = json_object_get(e->w.body, name);

	if (given)
		*given = false;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_boolean(v)) {
		e2b_rest_error(e, 400, "%s is not a boolean", name);
		return false;
	}
	*out = json_is_true(v);
	if (given)
		*given = true;
	return true;
}

static bool timeout_field(struct e2b_req *e, long long def, long long *out)
{
	return int_field(e, "timeout", 0, e->w.sv->e2b_max_timeout, def, out);
}

/* The path's sandbox as the caller sees it: an id that is not one, or
 * is another tenant's, is absent (404).  False once answered. */
static bool find(struct e2b_req *e, bool with_state, struct svc_e2b_sandbox *sb)
{
	const char *id = e->w.req->params[0];
	struct sbx_error *err = NULL;

	memset(sb, 0, sizeof(*sb));
	if (!e2b_id_valid(id)) {
		e2b_rest_error(e, 404, "Sandbox not found");
		return false;
	}
	snprintf(e->w.req->session, sizeof(e->w.req->session), "%s", id);
	if (svc_e2b_find(svc_of(e), &e->w.call, id, with_state, sb, &err) == 0)
		return true;
	if (err->kind == SBX_E_NOT_FOUND || err->kind == SBX_E_INVALID)
		e2b_rest_error(e, 404, "Sandbox %s not found", id);
	else
		e2b_error(e, err);
	sbx_error_free(&err);
	return false;
}

/* ---- templates ---- */

static void template_unknown(struct e2b_req *e, const char *t)
{
	struct strbuf sb = STRBUF_INIT;
	const struct serve *sv = e->w.sv;

	for (size_t i = 0; i < sv->ne2b_templates; i++)
		strbuf_addf(&sb, "%s%s", sb.len ? ", " : "",
			    sv->e2b_templates[i].name);
	for (size_t i = 0; i < N_BUILTIN; i++)
		strbuf_addf(&sb, "%s%s", sb.len ? ", " : "",
			    builtin_templates[i]);
	for (size_t i = 0; i < e->w.snap->cat.n; i++)
		strbuf_addf(&sb, "%s%s", sb.len ? ", " : "",
			    e->w.snap->cat.rt[i].alias);
	e2b_rest_error(e, 404, "template '%.128s' not found; templates: %s", t,
		       strbuf_str(&sb));
	strbuf_release(&sb);
}

/* The runtime a template names: a configured name, a catalogue alias,
 * else base and code-interpreter-v1 the default runtime.  NULL once
 * answered. */
static const char *template_runtime(struct e2b_req *e, const char *t)
{
	const struct serve *sv = e->w.sv;
	const char *rt = NULL;

	for (size_t i = 0; i < sv->ne2b_templates && !rt; i++)
		if (!strcmp(sv->e2b_templates[i].name, t))
			rt = sv->e2b_templates[i].runtime;
	if (!rt && catalog_find(&e->w.snap->cat, t))
		rt = t;
	for (size_t i = 0; i < N_BUILTIN && !rt; i++)
		if (!strcmp(builtin_templates[i], t))
			rt = e->w.snap->default_runtime
				 ? e->w.snap->default_runtime
			     : e->w.snap->cat.n ? e->w.snap->cat.rt[0].alias
						: NULL;
	if (rt && catalog_find(&e->w.snap->cat, rt))
		return rt;
	template_unknown(e, t);
	return NULL;
}

/* ---- create ---- */

/* The fields of E2B's that sbxcat cannot honour: refused, never
 * ignored into a wrong success. */
static bool create_refusals(struct e2b_req *e)
{
	json_t *b = e->w.body, *v;

	v = json_object_get(b, "volumeMounts");
	if (v && !json_is_null(v) &&
	    !(json_is_array(v) && !json_array_size(v))) {
		e2b_rest_error(e, 400, "volumeMounts are not served by sbxcat");
		return false;
	}
	v = json_object_get(b, "mcp");
	if (v && !json_is_null(v)) {
		e2b_rest_error(e, 400, "mcp is not served by sbxcat");
		return false;
	}
	v = json_object_get(json_object_get(b, "autoResume"), "enabled");
	if (json_is_true(v)) {
		e2b_rest_error(e, 400,
			       "autoResume is not served by sbxcat: connect "
			       "resumes a paused sandbox");
		return false;
	}
	v = json_object_get(b, "network");
	if (v && !json_is_null(v) && !json_is_object(v)) {
		e2b_rest_error(e, 400, "network is not an object");
		return false;
	}
	return true;
}

static void create(struct e2b_req *e, long long def_timeout)
{
	struct svc_e2b_create_req c = {0};
	struct svc_e2b_create_res r;
	struct sbx_error *err = NULL;
	json_t *t = json_object_get(e->w.body, "templateID");
	json_t *m = json_object_get(e->w.body, "metadata");
	json_t *v = json_object_get(e->w.body, "envVars");
	const char *why, *tenant, *given;
	char id[E2B_ID_LEN + 1];
	bool ai = false, ai_given, secure = true, memory = true;

	if (!json_is_string(t) || !json_string_length(t) ||
	    json_string_length(t) > SVC_E2B_TEMPLATE_MAX ||
	    strlen(json_string_value(t)) != json_string_length(t)) {
		e2b_rest_error(e, 400, "templateID is not a template's name");
		return;
	}
	if (m && !json_is_null(m) && (why = svc_e2b_metadata_check(m))) {
		e2b_rest_error(e, 400, "%s", why);
		return;
	}
	if (v && !json_is_null(v) && svc_e2b_envs_check(v, &err) < 0) {
		e2b_rest_error(e, 400, "envVars: %s", err->msg);
		sbx_error_free(&err);
		return;
	}
	if (!timeout_field(e, def_timeout, &c.timeout_s) ||
	    !bool_field(e, "autoPause", &c.auto_pause, NULL) ||
	    !bool_field(e, "allow_internet_access", &ai, &ai_given) ||
	    !bool_field(e, "secure", &secure, NULL) ||
	    !bool_field(e, "autoPauseMemory", &memory, NULL) ||
	    !create_refusals(e))
		return;
	c.template_id = json_string_value(t);
	c.runtime = template_runtime(e, c.template_id);
	if (!c.runtime)
		return;
	c.metadata = json_is_object(m) ? m : NULL;
	c.envs = json_is_object(v) ? v : NULL;
	c.allow_internet = ai_given ? ai : -1;
	c.auto_pause_memory = memory;
	c.retention = e->w.sv->e2b_retention;
	c.cat = &e->w.snap->cat;
	c.default_agent = e->w.sv->default_agent;
	c.default_run = e->w.sv->default_run;
	/* E2B's sandboxes see their workspace at /home/user, their HOME. */
	c.work_dir = E2B_HOME;
	tenant = e->w.auth.tenant	   ? e->w.auth.tenant
		 : e->w.sv->default_tenant ? e->w.sv->default_tenant
					   : SVC_WIRE_NO_TENANT;
	e->w.call.tenant = tenant;
	/* In a fleet, the host that placed it named it; else a new id. */
	given = serve_fleet_given_id(&e->w, FLEET_ID_HEADER);
	if (given && strlen(given) <= E2B_ID_LEN)
		snprintf(id, sizeof(id), "%s", given);
	else
		e2b_id_new(id);
	c.id = id;
	snprintf(e->w.req->tenant, sizeof(e->w.req->tenant), "%s", tenant);
	snprintf(e->w.req->session, sizeof(e->w.req->session), "%s", id);
	if (serve_fleet_place(&e->w, id, tenant, c.runtime, FLEET_ID_HEADER,
			      &e2b_fleet_front))
		return;
	atomic_fetch_add(&e->w.sv->opens, 1);
	if (svc_e2b_create(svc_of(e), &e->w.call, &c, &r, &err) < 0) {
		e2b_error(e, err);
		sbx_error_free(&err);
		serve_fleet_opened(&e->w, id, false);
		return;
	}
	serve_fleet_opened(&e->w, id, true);
	serve_token_remember(e->w.sv, id, r.open.token);
	e2b_rest_json(e, 201, sandbox_json(e, id, c.template_id, r.open.token));
	serve_pool_kick(e->w.sv);
	svc_e2b_create_res_release(&r);
}

static void create_v1(struct e2b_req *e)
{
	create(e, TIMEOUT_V1);
}

static void create_v2(struct e2b_req *e)
{
	create(e, TIMEOUT_V2);
}

/* ---- one sandbox ---- */

static void get(struct e2b_req *e)
{
	struct svc_e2b_sandbox sb;

	if (!find(e, false, &sb))
		return;
	e2b_rest_json(e, 200, detail(e, &sb));
	svc_e2b_sandbox_release(&sb);
}

static void kill_op(struct e2b_req *e)
{
	struct svc_e2b_sandbox sb;
	struct sbx_error *err = NULL;

	if (!find(e, false, &sb))
		return;
	atomic_fetch_add(&e->w.sv->closes, 1);
	if (svc_e2b_kill(svc_of(e), &e->w.call, &sb, &err) < 0) {
		e2b_error(e, err);
	} else {
		e2b_rest_empty(e, 204);
		serve_fleet_closed(&e->w, sb.ws.wire.id, true);
	}
	serve_token_forget(e->w.sv, sb.ws.wire.id);
	sbx_error_free(&err);
	svc_e2b_sandbox_release(&sb);
}

static void connect_with(struct e2b_req *e, long long def_timeout)
{
	struct svc_e2b_sandbox sb;
	struct sbx_error *err = NULL;
	char token[SVC_WIRE_TOKEN_LEN + 1];
	long long timeout;
	bool resumed = false;

	if (!opt_body(e) || !timeout_field(e, def_timeout, &timeout) ||
	    !find(e, false, &sb))
		return;
	if (svc_e2b_connect(svc_of(e), &e->w.call, &sb,
			    (long long)time(NULL) + timeout, &e->w.snap->cat,
			    &resumed, token, &err) < 0) {
		e2b_error(e, err);
	} else {
		serve_token_remember(e->w.sv, sb.ws.wire.id, token);
		e2b_rest_json(
		    e, resumed ? 201 : 200,
		    sandbox_json(e, sb.ws.wire.id, sb.e.template_id, token));
	}
	explicit_bzero(token, sizeof(token));
	sbx_error_free(&err);
	svc_e2b_sandbox_release(&sb);
}

static void connect_op(struct e2b_req *e)
{
	connect_with(e, TIMEOUT_V2);
}

static void resume_op(struct e2b_req *e)
{
	connect_with(e, TIMEOUT_V1);
}

static void pause_op(struct e2b_req *e)
{
	struct svc_e2b_sandbox sb;
	struct sbx_error *err = NULL;
	bool memory = true, already = false;

	if (!opt_body(e) || !bool_field(e, "memory", &memory, NULL))
		return;
	/* An older client's form: ?memory=false. */
	if (http_query(e->w.req, "memory") &&
	    !strcmp(http_query(e->w.req, "memory"), "false"))
		memory = false;
	if (!find(e, true, &sb))
		return;
	if (svc_e2b_pause(svc_of(e), &e->w.call, &sb, memory,
			  (long long)time(NULL), &already, &err) == 0)
		e2b_rest_empty(e, 204);
	else if (already)
		e2b_rest_error(e, 409, "Sandbox %s is already paused",
			       sb.ws.wire.id);
	else
		e2b_error(e, err);
	sbx_error_free(&err);
	svc_e2b_sandbox_release(&sb);
}

/* /timeout and /refreshes: endAt from now. */
static void set_end(struct e2b_req *e, const char *field, bool required,
		    bool only_later)
{
	struct svc_e2b_sandbox sb;
	struct sbx_error *err = NULL;
	long long t, end;

	if (!opt_body(e))
		return;
	if (required && !json_object_get(e->w.body, field)) {
		e2b_rest_error(e, 400, "%s is required", field);
		return;
	}
	if (!int_field(e, field, 0, e->w.sv->e2b_max_timeout, 0, &t) ||
	    !find(e, false, &sb))
		return;
	end = (long long)time(NULL) + t;
	if (only_later && end < sb.e.end_at)
		end = sb.e.end_at;
	if (svc_e2b_set_end(svc_of(e), &e->w.call, &sb, end, &err) < 0)
		e2b_error(e, err);
	else
		e2b_rest_empty(e, 204);
	sbx_error_free(&err);
	svc_e2b_sandbox_release(&sb);
}

static void timeout_op(struct e2b_req *e)
{
	set_end(e, "timeout", true, false);
}

static void refresh_op(struct e2b_req *e)
{
	set_end(e, "duration", false, true);
}

/* ---- lists ---- */

/* %XX and '+' decoded in place (a form's value): false for a bad %. */
static bool form_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '+') {
			*o++ = ' ';
		} else if (*s == '%') {
			if (!isxdigit((unsigned char)s[1]) ||
			    !isxdigit((unsigned char)s[2]))
				return false;
			char hex[3] = {s[1], s[2], 0};

			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return true;
}

/*
 * The metadata filter as the SDK sends it: key=value pairs joined by &,
 * each key and value URL-encoded inside the query's own encoding (E2B's
 * server unescapes each once more).  Into an object; NULL once answered.
 */
static json_t *metadata_filter(struct e2b_req *e, const char *q)
{
	json_t *f = json_object();
	char *copy = xstrdup(q), *save = NULL;
	size_t n = 0;

	for (char *p = strtok_r(copy, "&", &save); p;
	     p = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(p, '=');

		if (!eq || ++n > FILTER_PAIRS) {
			e2b_rest_error(e, 400,
				       eq ? "metadata: more than 64 pairs"
					  : "metadata: not key=value&...");
			goto bad;
		}
		*eq = '\0';
		if (!form_decode(p) || !form_decode(eq + 1) ||
		    !form_decode(p) || !form_decode(eq + 1)) {
			e2b_rest_error(e, 400, "metadata: a bad %%-escape");
			goto bad;
		}
		json_object_set_new(f, p, json_string(eq + 1));
	}
	free(copy);
	return f;
bad:
	free(copy);
	json_decref(f);
	return NULL;
}

static bool metadata_matches(const json_t *f, const json_t *m)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)f, k, v)
	{
		json_t *have = json_object_get(m, k);

		/* A filter value that was not UTF-8 matches nothing. */
		if (!json_is_string(v) || !json_is_string(have) ||
		    !json_equal(v, have))
			return false;
	}
	return true;
}

/* The page's key: a sandbox's start and id, in the list's order. */
struct list_key {
	long long ms;
	const char *id;
};

static int key_cmp(const struct list_key *a, const struct list_key *b)
{
	if (a->ms != b->ms)
		return a->ms < b->ms ? -1 : 1;
	return strcmp(a->id, b->id);
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct svc_e2b_sandbox *a =
	    *(const struct svc_e2b_sandbox *const *)pa;
	const struct svc_e2b_sandbox *b =
	    *(const struct svc_e2b_sandbox *const *)pb;
	struct list_key ka = {a->e.started_ms, a->ws.wire.id};
	struct list_key kb = {b->e.started_ms, b->ws.wire.id};

	return key_cmp(&ka, &kb);
}

/* nextToken: "MS.ID" (the last sandbox given).  False for another. */
static bool token_parse(const char *t, long long *ms, char id[E2B_ID_MAX + 1])
{
	const char *dot = strchr(t, '.');
	char *end;

	if (!dot || dot == t || dot - t > 19 || !isdigit((unsigned char)*t))
		return false;
	errno = 0;
	*ms = strtoll(t, &end, 10);
	if (end != dot || errno || !e2b_id_valid(dot + 1))
		return false;
	snprintf(id, E2B_ID_MAX + 1, "%s", dot + 1);
	return true;
}

/* What a list's query asks. */
struct list_query {
	bool running, paused;
	json_t *metadata;
	const char *template_id;
	long long after_ms;
	size_t limit;
	bool desc, has_next;
	struct list_key next;
	char next_id[E2B_ID_MAX + 1];
};

static bool states_parse(struct e2b_req *e, struct list_query *q)
{
	const char *v;
	size_t i;

	for (i = 0; (v = http_query_at(e->w.req, "state", i)); i++) {
		char *copy = xstrdup(v), *save = NULL;

		if (i >= 8) {
			free(copy);
			e2b_rest_error(e, 400, "state: given too many times");
			return false;
		}
		for (char *p = strtok_r(copy, ",", &save); p;
		     p = strtok_r(NULL, ",", &save)) {
			if (!strcmp(p, "running")) {
				q->running = true;
			} else if (!strcmp(p, "paused")) {
				q->paused = true;
			} else {
				e2b_rest_error(
				    e, 400,
				    "state: '%.32s' is not running or "
				    "paused",
				    p);
				free(copy);
				return false;
			}
		}
		free(copy);
	}
	if (!i)
		q->running = q->paused = true;
	return true;
}

static bool query_parse(struct e2b_req *e, struct list_query *q, bool v2)
{
	const char *v;
	long long t;

	memset(q, 0, sizeof(*q));
	q->limit = LIST_LIMIT;
	q->desc = true;
	if (!v2) {
		q->running = true;
	} else if (!states_parse(e, q)) {
		return false;
	}
	v = http_query(e->w.req, "metadata");
	if (v && *v && !(q->metadata = metadata_filter(e, v)))
		return false;
	q->template_id = http_query(e->w.req, "template");
	if (q->template_id && !*q->template_id)
		q->template_id = NULL;
	if (!v2)
		return true;
	if ((v = http_query(e->w.req, "limit"))) {
		char *end;

		errno = 0;
		t = strtoll(v, &end, 10);
		if (!isdigit((unsigned char)*v) || *end || errno || t < 1 ||
		    t > LIST_LIMIT) {
			e2b_rest_error(e, 400, "limit must be from 1 to %d",
				       LIST_LIMIT);
			return false;
		}
		q->limit = (size_t)t;
	}
	if ((v = http_query(e->w.req, "order"))) {
		if (strcmp(v, "asc") != 0 && strcmp(v, "desc") != 0) {
			e2b_rest_error(e, 400, "order is asc or desc");
			return false;
		}
		q->desc = strcmp(v, "desc") == 0;
	}
	if ((v = http_query(e->w.req, "startedAfter"))) {
		if (clock_parse_time(v, &t) < 0) {
			e2b_rest_error(e, 400, "startedAfter is not a time");
			return false;
		}
		q->after_ms = t * 1000;
	}
	if ((v = http_query(e->w.req, "nextToken")) && *v) {
		if (!token_parse(v, &q->next.ms, q->next_id)) {
			e2b_rest_error(e, 400,
				       "nextToken is not one this list "
				       "gave");
			return false;
		}
		q->next.id = q->next_id;
		q->has_next = true;
	}
	return true;
}

static bool row_wanted(const struct list_query *q,
		       const struct svc_e2b_sandbox *sb)
{
	struct list_key k = {sb->e.started_ms, sb->ws.wire.id};

	if (!(sb->e.paused ? q->paused : q->running))
		return false;
	if (q->metadata && !metadata_matches(q->metadata, sb->e.metadata))
		return false;
	if (q->template_id && strcmp(q->template_id, sb->e.template_id) != 0)
		return false;
	if (sb->e.started_ms < q->after_ms)
		return false;
	/* Keyset: strictly after the last one given, in the list's order,
	 * so a sandbox made meanwhile (the newest) never shifts a page. */
	if (q->has_next &&
	    (q->desc ? key_cmp(&k, &q->next) >= 0 : key_cmp(&k, &q->next) <= 0))
		return false;
	return true;
}

static void list(struct e2b_req *e, bool v2)
{
	struct svc_e2b_list_res l;
	struct sbx_error *err = NULL;
	struct list_query q;
	struct svc_e2b_sandbox **rows;
	json_t *out;
	size_t n = 0, given = 0;

	if (!query_parse(e, &q, v2))
		return;
	if (svc_e2b_list(svc_of(e), &e->w.call, &l, &err) < 0) {
		e2b_error(e, err);
		sbx_error_free(&err);
		json_decref(q.metadata);
		return;
	}
	rows = xcalloc(l.n + 1, sizeof(*rows));
	for (size_t i = 0; i < l.n; i++)
		if (row_wanted(&q, &l.rows[i]))
			rows[n++] = &l.rows[i];
	qsort(rows, n, sizeof(*rows), row_cmp);
	out = json_array();
	for (size_t i = 0; i < n && (!v2 || given < q.limit); i++) {
		const struct svc_e2b_sandbox *sb = rows[q.desc ? n - 1 - i : i];

		json_array_append_new(out, detail(e, sb));
		given++;
	}
	if (v2 && given < n) {
		const struct svc_e2b_sandbox *last =
		    rows[q.desc ? n - given : given - 1];
		char tok[24 + E2B_ID_MAX + 1];

		snprintf(tok, sizeof(tok), "%lld.%s", last->e.started_ms,
			 last->ws.wire.id);
		http_response_header(e->w.res, "X-Next-Token", tok);
	}
	/* In a fleet, every live host's (each its own page: docs/fleet.md). */
	serve_fleet_list(&e->w, out, NULL);
	e2b_rest_json(e, 200, out);
	free(rows);
	svc_e2b_list_res_release(&l);
	json_decref(q.metadata);
}

static void list_v1(struct e2b_req *e)
{
	list(e, false);
}

static void list_v2(struct e2b_req *e)
{
	list(e, true);
}

/* ---- what sbxcat does not serve ---- */

static void not_served(struct e2b_req *e)
{
	e2b_rest_error(e, 501, "%s %s is not served by sbxcat",
		       e->w.req->method, e->w.req->route);
}

#define API(m, p, pool, cap, op, ...)                                          \
	E2B_ROUTE(m, p, pool, cap, op, API_KEY, REST, __VA_ARGS__)
#define NOT_SERVED(m, p) API(m, p, QUICK, SMALL_CAP, not_served, .body = false)

const struct http_route e2b_api_routes[] = {
    API("POST", "/sandboxes", SLOW, CREATE_CAP, create_v1, .body = true),
    API("POST", "/v2/sandboxes", SLOW, CREATE_CAP, create_v2, .body = true),
    API("GET", "/sandboxes", SLOW, 0, list_v1, .body = false),
    API("GET", "/v2/sandboxes", SLOW, 0, list_v2, .body = false),
    API("GET", "/sandboxes/{id}", QUICK, 0, get, .body = false),
    API("DELETE", "/sandboxes/{id}", SLOW, 0, kill_op, .body = false),
    API("POST", "/sandboxes/{id}/connect", SLOW, SMALL_CAP, connect_op,
	.body = false),
    API("POST", "/v2/sandboxes/{id}/connect", SLOW, SMALL_CAP, connect_op,
	.body = false),
    API("POST", "/sandboxes/{id}/resume", SLOW, SMALL_CAP, resume_op,
	.body = false),
    API("POST", "/sandboxes/{id}/pause", SLOW, SMALL_CAP, pause_op,
	.body = false),
    API("POST", "/sandboxes/{id}/timeout", QUICK, SMALL_CAP, timeout_op,
	.body = false),
    API("POST", "/sandboxes/{id}/refreshes", QUICK, SMALL_CAP, refresh_op,
	.body = false),
    NOT_SERVED("GET", "/sandboxes/{id}/metrics"),
    NOT_SERVED("GET", "/sandboxes/metrics"),
    NOT_SERVED("GET", "/sandboxes/{id}/logs"),
    NOT_SERVED("GET", "/v2/sandboxes/{id}/logs"),
    NOT_SERVED("PUT", "/sandboxes/{id}/network"),
    NOT_SERVED("POST", "/sandboxes/{id}/snapshots"),
    NOT_SERVED("POST", "/sandboxes/{id}/fork"),
    NOT_SERVED("GET", "/snapshots"),
    NOT_SERVED("GET", "/templates"),
    NOT_SERVED("POST", "/templates"),
    NOT_SERVED("POST", "/v2/templates"),
    NOT_SERVED("POST", "/v3/templates"),
    NOT_SERVED("GET", "/templates/{id}"),
    NOT_SERVED("DELETE", "/templates/{id}"),
    NOT_SERVED("GET", "/templates/aliases/{alias}"),
    NOT_SERVED("POST", "/templates/tags"),
    NOT_SERVED("DELETE", "/templates/tags"),
    NOT_SERVED("GET", "/templates/{id}/tags"),
    NOT_SERVED("GET", "/templates/{id}/files/{hash}"),
    NOT_SERVED("POST", "/v2/templates/{id}/builds/{build}"),
    NOT_SERVED("GET", "/templates/{id}/builds/{build}/status"),
    NOT_SERVED("GET", "/volumes"),
    NOT_SERVED("POST", "/volumes"),
    NOT_SERVED("GET", "/volumes/{id}"),
    NOT_SERVED("DELETE", "/volumes/{id}"),
    NOT_SERVED("GET", "/secrets"),
    NOT_SERVED("POST", "/secrets"),
    NOT_SERVED("GET", "/teams"),
};
const size_t e2b_api_nroutes = sizeof(e2b_api_routes) / sizeof(*e2b_api_routes);

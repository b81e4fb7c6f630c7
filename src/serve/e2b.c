/*
 * e2b.c - what the E2B front's routes share (e2b.h): who a request is,
 * which sandbox it names, its body, and its answers in the route's
 * dialect (REST or Connect).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/xjson.h"
#include "serve/e2b.h"
#include "serve/serve-fleet.h"
#include "serve/wire-status.h"

#define API_KEY_HEADER "X-API-KEY"
#define ACCESS_HEADER "X-Access-Token"
/* What the code interpreter's SDK sends alone on its /contexts calls:
 * the create's trafficAccessToken, which is the same token. */
#define TRAFFIC_HEADER "E2B-Traffic-Access-Token"
#define ID_HEADER "E2b-Sandbox-Id"
#define PORT_HEADER "E2b-Sandbox-Port"
/* Connect's deadline: at most 10 digits (its spec). */
#define TIMEOUT_HEADER "Connect-Timeout-Ms"
#define CONNECT_JSON "application/json"
#define CONNECT_STREAM_JSON "application/connect+json"
/* An envelope's flags: the last frame of a stream. */
#define ENVELOPE_END 0x02
#define ENVELOPE_COMPRESSED 0x01

bool e2b_id_valid(const char *id)
{
	size_t n = 0;

	if (!id)
		return false;
	for (; id[n]; n++)
		if (!(islower((unsigned char)id[n]) ||
		      isdigit((unsigned char)id[n])) ||
		    n >= E2B_ID_MAX)
			return false;
	return n > 0;
}

void e2b_id_new(char id[E2B_ID_LEN + 1])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char buf[64];
	size_t n = 0;

	/* 36 letters: a byte under 252 (7 * 36) is taken mod 36, the rest
	 * dropped, so every letter is as likely. */
	while (n < E2B_ID_LEN) {
		random_bytes(buf, sizeof(buf));
		for (size_t i = 0; i < sizeof(buf) && n < E2B_ID_LEN; i++)
			if (buf[i] < 252)
				id[n++] = alphabet[buf[i] % 36];
	}
	id[n] = '\0';
}

const char *e2b_home(const struct e2b_req *e)
{
	/* The session's own (its create asks for E2B_HOME: e2b-api.c); one
	 * opened otherwise says where its workspace really is. */
	if (e && e->w.ws.key[0])
		return svc_session_work_dir(&e->w.snap->svc, &e->w.ws.rec);
	return E2B_HOME;
}

/* ---- which sandbox ---- */

/*
 * The sandbox and port a daemon's request names: E2b-Sandbox-Id and
 * E2b-Sandbox-Port, else the Host's first label, PORT-ID (what the SDK
 * that builds https://PORT-ID.DOMAIN sends).  Both given and different:
 * refused (a proxy must not make one request reach two sandboxes).  0,
 * or -1 with *why.
 */
static int sandbox_of(const struct http_request *req, char id[E2B_ID_MAX + 1],
		      unsigned *port, const char **why)
{
	const char *hid = http_header(req, ID_HEADER);
	const char *hport = http_header(req, PORT_HEADER);
	const char *host = http_header(req, "Host");
	char label[E2B_ID_MAX + 16] = "";
	char *dash, *end;
	unsigned long p = 0;

	if (host) {
		size_t n = strcspn(host, ".:");

		if (host[n] == '.' && n < sizeof(label)) {
			memcpy(label, host, n);
			label[n] = '\0';
		}
	}
	dash = strchr(label, '-');
	if (dash && isdigit((unsigned char)label[0])) {
		*dash = '\0';
		errno = 0;
		p = strtoul(label, &end, 10);
		if (*end || errno || p > 65535 || !e2b_id_valid(dash + 1))
			dash = NULL;
	} else {
		dash = NULL;
	}
	if (hid) {
		if (!e2b_id_valid(hid)) {
			*why = "E2b-Sandbox-Id is not a sandbox id";
			return -1;
		}
		if (dash && strcmp(dash + 1, hid) != 0) {
			*why = "E2b-Sandbox-Id and Host name two sandboxes";
			return -1;
		}
		snprintf(id, E2B_ID_MAX + 1, "%s", hid);
	} else if (dash) {
		snprintf(id, E2B_ID_MAX + 1, "%s", dash + 1);
	} else {
		*why = "No sandbox named: E2b-Sandbox-Id or a Host of "
		       "PORT-ID.DOMAIN";
		return -1;
	}
	if (hport) {
		errno = 0;
		p = strtoul(hport, &end, 10);
		if (!isdigit((unsigned char)*hport) || *end || errno ||
		    p > 65535) {
			*why = "E2b-Sandbox-Port is not a port";
			return -1;
		}
	} else if (!dash) {
		p = E2B_PORT_ENVD;
	}
	*port = (unsigned)p;
	return 0;
}

/* The sandbox's token a daemon's request carries, or NULL. */
static const char *access_token(const struct http_request *req)
{
	const char *t = http_header(req, ACCESS_HEADER);

	return t ? t : http_header(req, TRAFFIC_HEADER);
}

/* ---- admission (libmicrohttpd's thread: memory only) ---- */

void e2b_admit(void *arg, const struct http_route *rt,
	       const struct http_request *req, struct http_admit *a)
{
	struct serve *sv = arg;
	const struct e2b_needs *n = rt->needs;
	struct serve_auth au;
	char id[E2B_ID_MAX + 1];
	unsigned port;
	const char *why;

	switch (n->auth) {
	case E2B_AUTH_NONE:
		snprintf(a->caller, sizeof(a->caller), "-");
		return;
	case E2B_AUTH_API_KEY:
		serve_auth(sv, http_header(req, API_KEY_HEADER), &au);
		a->who = (int)au.who;
		if (au.who == SERVE_TENANT) {
			snprintf(a->caller, sizeof(a->caller), "t:%s",
				 au.tenant);
			return;
		}
		if (au.who == SERVE_SERVICE) {
			snprintf(a->caller, sizeof(a->caller), "service");
			return;
		}
		a->status = 401;
		a->detail = "Invalid API key";
		return;
	case E2B_AUTH_ENVD:
		if (sandbox_of(req, id, &port, &why) < 0) {
			/* The worker says why, in the route's dialect. */
			snprintf(a->caller, sizeof(a->caller), "-");
			return;
		}
		snprintf(a->caller, sizeof(a->caller), "s:%s", id);
		switch (serve_token_check(sv, id, access_token(req))) {
		case 1:
			return;
		case -1:
			a->status = 503;
			a->detail = "Server busy";
			a->retry_after = "1";
			return;
		}
		a->status = 401;
		a->detail = "Invalid or missing access token";
		return;
	}
}

/* ---- answers ---- */

void e2b_rest_json(struct e2b_req *e, int status, json_t *doc)
{
	wire_json(&e->w, status, doc);
}

void e2b_rest_empty(struct e2b_req *e, int status)
{
	e->w.answered = true;
	e->w.res->status = status;
	free(e->w.res->body);
	e->w.res->body = NULL;
	e->w.res->body_len = 0;
}

static void rest_error_text(struct e2b_req *e, int status, const char *msg)
{
	e2b_rest_json(e, status,
		      xjson_pack("{s:i, s:o}", "code", status, "message",
				 xjson_text(msg)));
}

void e2b_rest_error(struct e2b_req *e, int status, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	rest_error_text(e, status, msg);
	free(msg);
}

/* Connect's codes and their HTTP statuses (the protocol's table). */
static const struct {
	const char *code;
	int status;
} connect_codes[] = {
    {"canceled", 499},
    {"unknown", 500},
    {"invalid_argument", 400},
    {"deadline_exceeded", 504},
    {"not_found", 404},
    {"already_exists", 409},
    {"permission_denied", 403},
    {"resource_exhausted", 429},
    {"failed_precondition", 400},
    {"aborted", 409},
    {"out_of_range", 400},
    {"unimplemented", 501},
    {"internal", 500},
    {"unavailable", 503},
    {"data_loss", 500},
    {"unauthenticated", 401},
};

int e2b_connect_status(const char *code)
{
	for (size_t i = 0; i < sizeof(connect_codes) / sizeof(*connect_codes);
	     i++)
		if (!strcmp(connect_codes[i].code, code))
			return connect_codes[i].status;
	return 500;
}

/* The Connect code of an HTTP status (an sbx_error's). */
static const char *connect_code_of(int status)
{
	switch (status) {
	case 400:
	case 422:
		return "invalid_argument";
	case 401:
		return "unauthenticated";
	case 403:
		return "permission_denied";
	case 404:
		return "not_found";
	case 408:
	case 504:
		return "deadline_exceeded";
	case 409:
		return "already_exists";
	case 413:
	case 429:
		return "resource_exhausted";
	case 499:
		return "canceled";
	case 501:
		return "unimplemented";
	case 502:
	case 503:
		return "unavailable";
	default:
		return "internal";
	}
}

static json_t *connect_error_doc(const char *code, const char *msg)
{
	return xjson_pack("{s:s, s:o}", "code", code, "message",
			  xjson_text(msg));
}

static int frame(struct e2b_req *e, unsigned flags, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	size_t len;
	unsigned char head[5];
	int rc;

	json_decref(msg);
	if (!s)
		die_oom();
	len = strlen(s);
	head[0] = (unsigned char)flags;
	head[1] = (unsigned char)(len >> 24);
	head[2] = (unsigned char)(len >> 16);
	head[3] = (unsigned char)(len >> 8);
	head[4] = (unsigned char)len;
	rc = http_stream_write(e->w.req, head, sizeof(head));
	if (rc == 0)
		rc = http_stream_write(e->w.req, s, len);
	free(s);
	return rc;
}

int e2b_stream_begin(struct e2b_req *e)
{
	if (e->stream_open)
		return 0;
	e->stream_open = true;
	e->w.answered = true;
	return http_stream_start(e->w.req, 200, CONNECT_STREAM_JSON);
}

int e2b_stream_msg(struct e2b_req *e, json_t *msg)
{
	if (e2b_stream_begin(e) < 0) {
		json_decref(msg);
		return -1;
	}
	return frame(e, 0, msg);
}

static int stream_end_text(struct e2b_req *e, const char *code, const char *msg)
{
	if (e2b_stream_begin(e) < 0)
		return -1;
	if (!code)
		return frame(e, ENVELOPE_END, json_object());
	return frame(
	    e, ENVELOPE_END,
	    xjson_pack("{s:o}", "error", connect_error_doc(code, msg)));
}

int e2b_stream_end(struct e2b_req *e, const char *code, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;
	int rc;

	if (code && fmt) {
		va_start(ap, fmt);
		msg = xvasprintf(fmt, ap);
		va_end(ap);
	}
	rc = stream_end_text(e, code, msg ? msg : "");
	free(msg);
	return rc;
}

static void connect_error_text(struct e2b_req *e, const char *code,
			       const char *msg)
{
	if (e->connect_stream || e->stream_open) {
		stream_end_text(e, code, msg);
		return;
	}
	wire_json(&e->w, e2b_connect_status(code),
		  connect_error_doc(code, msg));
}

void e2b_connect_error(struct e2b_req *e, const char *code, const char *fmt,
		       ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	connect_error_text(e, code, msg);
	free(msg);
}

void e2b_connect_reply(struct e2b_req *e, json_t *msg)
{
	wire_json(&e->w, 200, msg);
}

/* A refusal in the route's dialect, by HTTP status. */
static void refuse(struct e2b_req *e, int status, const char *msg)
{
	if (e->n->dialect == E2B_CONNECT)
		connect_error_text(e, connect_code_of(status), msg);
	else
		rest_error_text(e, status, msg);
}

void e2b_error(struct e2b_req *e, const struct sbx_error *err)
{
	struct wire_subject sub = {
	    .session = e->id[0] ? e->id : NULL,
	    .tenant = e->w.call.tenant,
	};
	int status = wire_status(err);
	char *text = wire_error_text(err, &sub);

	if (status >= 500)
		wire_log_error(&e->w, err);
	refuse(e, status, text);
	free(text);
}

json_t *e2b_field(json_t *obj, const char *json_name, const char *proto_name)
{
	json_t *v = json_object_get(obj, json_name);

	if (!v && proto_name)
		v = json_object_get(obj, proto_name);
	return v;
}

/* The paths of E2B's API that a client of it may send: the control
 * plane's and the daemon's, served or not. */
static bool e2b_path(const char *path)
{
	static const char *const prefixes[] = {
	    "/sandboxes", "/v1/",      "/v2/",	       "/v3/",	 "/templates",
	    "/snapshots", "/volumes",  "/teams",       "/files", "/execute",
	    "/contexts",  "/process.", "/filesystem.", "/envs",	 "/init",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++)
		if (!strncmp(path, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

char *e2b_refusal(void *arg, const struct http_route *rt, const char *path,
		  int status, const char *detail)
{
	const struct e2b_needs *n =
	    rt && rt->handler == e2b_handle ? rt->needs : NULL;
	bool connect;
	json_t *doc;
	char *msg, *s;

	(void)arg;
	if (!n && (rt || !path || !e2b_path(path)))
		return NULL;
	connect = n ? n->dialect == E2B_CONNECT
		    : !strncmp(path, "/process.", 9) ||
			  !strncmp(path, "/filesystem.", 12);
	if (!n && status == 404)
		msg = xasprintf("%s is not served by sbxcat", path);
	else if (!n && status == 405)
		msg = xasprintf("%s is not served by sbxcat with this method",
				path);
	else
		msg = xstrdup(detail);
	if (connect)
		doc = connect_error_doc(status == 404 && !n
					    ? "unimplemented"
					    : connect_code_of(status),
					msg);
	else
		doc = xjson_pack("{s:i, s:o}", "code", status, "message",
				 xjson_text(msg));
	free(msg);
	s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!s)
		die_oom();
	return s;
}

/* ---- a request's way ---- */

/* Who asks: false once answered. */
static bool auth(struct e2b_req *e)
{
	struct wire_req *w = &e->w;
	struct sbx_error *err = NULL;
	const char *why;

	switch (e->n->auth) {
	case E2B_AUTH_NONE:
		return true;
	case E2B_AUTH_API_KEY:
		serve_auth(w->sv, http_header(w->req, API_KEY_HEADER),
			   &w->auth);
		if (!wire_who_acts(w->auth.who)) {
			refuse(e, 401, "Invalid API key");
			return false;
		}
		w->call.tenant = w->auth.tenant;
		return true;
	case E2B_AUTH_ENVD:
		if (sandbox_of(w->req, e->id, &e->port, &why) < 0) {
			e->id[0] = '\0';
			refuse(e, 400, why);
			return false;
		}
		if (svc_wire_auth(&w->snap->svc, &w->call, e->id,
				  access_token(w->req), &w->ws, &err) == 0) {
			w->call.tenant = w->ws.rec.tenant;
			return e2b_envd_ready(e);
		}
		if (err && err->kind != SBX_E_REFUSED)
			e2b_error(e, err);
		else
			refuse(e, 401, "Invalid or missing access token");
		sbx_error_free(&err);
		return false;
	}
	return false;
}

static bool who(struct e2b_req *e)
{
	const char *bad, *why;
	struct sbx_error *err = NULL;
	char *msg;

	if (wire_who_read(&e->w, &bad, &why, &err) == 0)
		return true;
	msg = xasprintf("%s: %s", bad, why);
	refuse(e, 400, msg);
	free(msg);
	sbx_error_free(&err);
	return false;
}

/* The Connect request's form: unary JSON or a stream of JSON envelopes;
 * its deadline.  False once answered. */
static bool connect_form(struct e2b_req *e)
{
	const char *type = http_header(e->w.req, "Content-Type");
	const char *t = http_header(e->w.req, TIMEOUT_HEADER);
	size_t n;

	if (type && !strncasecmp(type, CONNECT_STREAM_JSON,
				 strlen(CONNECT_STREAM_JSON)))
		e->connect_stream = true;
	else if (!type ||
		 strncasecmp(type, CONNECT_JSON, strlen(CONNECT_JSON)) != 0) {
		/* Connect's answer to a codec it does not speak: 415. */
		e->w.answered = true;
		http_respond_json(e->w.res, 415,
				  connect_error_doc("unimplemented",
						    "Only Connect's JSON codec "
						    "is served"));
		return false;
	}
	if (t) {
		n = strspn(t, "0123456789");
		if (!n || n > 10 || t[n]) {
			e2b_connect_error(e, "invalid_argument",
					  "%s is not 1 to 10 digits",
					  TIMEOUT_HEADER);
			return false;
		}
		e->deadline_ms = strtoll(t, NULL, 10);
	}
	return true;
}

/* The body: a JSON object within wire_json_shape's bounds; a stream's
 * one envelope first.  False once answered. */
static bool body(struct e2b_req *e)
{
	const char *p = e->w.req->body ? e->w.req->body : "";
	size_t n = e->w.req->body_len;
	json_error_t jerr;
	int shape;

	if (e->connect_stream) {
		size_t len;

		if (n < 5) {
			e2b_connect_error(e, "invalid_argument",
					  "A stream's request is one envelope: "
					  "%zu bytes is none",
					  n);
			return false;
		}
		if (p[0] & ENVELOPE_COMPRESSED) {
			e2b_connect_error(e, "unimplemented",
					  "Compressed messages are not served");
			return false;
		}
		len = (size_t)(unsigned char)p[1] << 24 |
		      (size_t)(unsigned char)p[2] << 16 |
		      (size_t)(unsigned char)p[3] << 8 | (unsigned char)p[4];
		if (p[0] != 0 || len != n - 5) {
			e2b_connect_error(e, "invalid_argument",
					  "A stream's request is one envelope "
					  "of flags 0 and its length");
			return false;
		}
		p += 5;
		n = len;
	}
	if (!n && e->n->dialect == E2B_CONNECT) {
		/* A message with every field its default. */
		e->w.body = json_object();
		return true;
	}
	shape = wire_json_shape(p, n);
	if (shape) {
		refuse(e, 400,
		       shape == 413 ? "The body has too many JSON values"
				    : "The body's JSON is nested too deep");
		return false;
	}
	e->w.body = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!e->w.body || !json_is_object(e->w.body)) {
		refuse(e, 400,
		       e->w.body ? "The body is not a JSON object"
				 : "The body is not JSON");
		return false;
	}
	return true;
}

/* ---- the fleet (serve-fleet.h): its refusals in E2B's shapes ---- */

static struct e2b_req *e2b_of(struct wire_req *w)
{
	return (struct e2b_req *)((char *)w - offsetof(struct e2b_req, w));
}

static void fleet_error(struct wire_req *w, const struct sbx_error *err,
			const char *id, const char *tenant)
{
	(void)id, (void)tenant;
	e2b_error(e2b_of(w), err);
}

static void fleet_unreachable(struct wire_req *w, const char *id,
			      const char *host, const char *why)
{
	char *msg = xasprintf("sandbox %s lives on host %s, which is "
			      "unreachable (%s)",
			      id, host, why);

	refuse(e2b_of(w), 503, msg);
	w->res->retry_after = "5";
	free(msg);
}

const struct serve_fleet_front e2b_fleet_front = {
    .error = fleet_error,
    .unreachable = fleet_unreachable,
};

/* The sandbox a request is for, when its host may be another of the
 * fleet's: the daemon's (by header or Host), or the control plane's
 * /sandboxes/{id}... */
static const char *fleet_id(struct e2b_req *e)
{
	const struct http_request *req = e->w.req;
	const char *why;

	if (!serve_fleet_on(e->w.sv))
		return NULL;
	if (e->n->auth == E2B_AUTH_ENVD)
		return sandbox_of(req, e->id, &e->port, &why) == 0 ? e->id
								   : NULL;
	if (e->n->auth == E2B_AUTH_API_KEY && req->nparams &&
	    (!strncmp(req->route, "/sandboxes/{id}", 15) ||
	     !strncmp(req->route, "/v2/sandboxes/{id}", 18)))
		return req->params[0];
	return NULL;
}

void e2b_handle(void *arg, struct http_request *req, struct http_response *res)
{
	struct e2b_req e;
	const char *fid;

	memset(&e, 0, sizeof(e));
	e.n = req->needs;
	wire_begin(&e.w, arg, req, res);
	fid = fleet_id(&e);
	if (fid && serve_fleet_route(&e.w, fid, &e2b_fleet_front)) {
		json_decref(e.envs);
		wire_end(&e.w);
		return;
	}
	e.id[0] = '\0';
	e.port = 0;
	if (auth(&e) && who(&e) &&
	    (e.n->dialect != E2B_CONNECT || connect_form(&e)) &&
	    (!e.n->body || body(&e)))
		e.n->op(&e);
	if (!e.w.answered)
		refuse(&e, 500, "The route gave no answer");
	json_decref(e.envs);
	wire_end(&e.w);
}

/* ---- the routes ---- */

static const struct {
	const struct http_route *routes;
	const size_t *n;
} tables[] = {
    {e2b_api_routes, &e2b_api_nroutes},
    {e2b_process_routes, &e2b_process_nroutes},
    {e2b_fs_routes, &e2b_fs_nroutes},
    {e2b_code_routes, &e2b_code_nroutes},
};

size_t e2b_nroutes(void)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(tables) / sizeof(*tables); i++)
		n += *tables[i].n;
	return n;
}

void e2b_routes_copy(struct http_route *out)
{
	for (size_t i = 0; i < sizeof(tables) / sizeof(*tables); i++) {
		memcpy(out, tables[i].routes, *tables[i].n * sizeof(*out));
		out += *tables[i].n;
	}
}

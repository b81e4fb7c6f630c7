/*
 * wire.h - what the route handlers share (wire.c: sessions, policy,
 * health; wire-ops.c: the operations on a session and its workspace);
 * private to src/serve.
 *
 * Every route is a line of the route table (wire.c) that declares what
 * it needs (struct wire_needs): which token, whether the path's session
 * is looked up, whether a JSON body is parsed, plus in its struct
 * http_route the pool and the body's cap.  The HTTP server asks
 * wire_admit who a request is before it reads a byte of the body (a
 * token that does not authenticate: 401, the body never read);
 * wire_handle then holds the snapshot, checks the token again, looks
 * the session up, parses the body within its bounds, and only then
 * calls the route's operation, which does its own work alone.  Answers
 * use sandboxd's
 * shapes: {"detail": "..."} with the status of sandboxd-wire.md section
 * 3; a body that is not JSON, a field of the wrong type or missing: 422
 * in FastAPI's shape ({"detail": [{"type", "loc", "msg", "input"}]}).
 *
 * Thread rule: a struct wire_req belongs to its handler call.
 */
#ifndef SBX_WIRE_H
#define SBX_WIRE_H

#include <jansson.h>
#include <stdbool.h>

#include "serve/serve-int.h"
#include "svc/svc-wire.h"

struct wire_req {
	struct serve *sv;
	struct serve_snap *snap;
	struct http_request *req;
	struct http_response *res;
	json_t *body; /* the request's object, or NULL */
	struct serve_auth auth;
	struct svc_call call;
	struct svc_wire_session ws; /* a per-session route's session */
	/* The path's session id: {id}, or the id whose key {id} is (a
	 * route that takes either, struct wire_needs.key_alias). */
	const char *path_id;
	char alias[SVC_WIRE_ID_MAX + 1];
	/* X-Sandbox-Agent and X-Sandbox-Run as sent (NULL: absent); the
	 * call's agent and run are these, else the session's defaults,
	 * else the service's (wire_who). */
	const char *hdr_agent, *hdr_run;
	bool purge;		    /* DELETE's ?purge=true */
	bool answered;
};

/* The token a route takes. */
enum wire_token {
	WIRE_TOKEN_NONE,    /* anyone */
	WIRE_TOKEN_METRICS, /* the service's or the scrape token, when the
			     * service has either */
	WIRE_TOKEN_SERVICE, /* the service token (a tenant's: 403) */
	WIRE_TOKEN_TENANT,  /* the service token or a tenant's */
	WIRE_TOKEN_SESSION, /* the path's session's own, the service's, or
			     * its tenant's */
};
/* Whether the path's session ({id}, the first parameter) is looked up
 * (into w->ws) before the operation runs. */
enum wire_lookup {
	WIRE_LOOKUP_NONE,
	WIRE_LOOKUP_OPEN,  /* an open session, else 404 "No such session" */
	WIRE_LOOKUP_KEPT,  /* or a kept workspace (missing: the 404 text) */
	WIRE_LOOKUP_PURGE, /* open; kept too with ?purge=true and the
			    * service's or a tenant's token (w->purge) */
};
/* What a route declares (struct http_route.needs). */
struct wire_needs {
	void (*op)(struct wire_req *w);
	enum wire_token token;
	enum wire_lookup session;
	const char *missing; /* the 404's words; NULL: "No such session" */
	bool body;	     /* a JSON object is parsed into w->body */
	bool usage_slow;     /* ?usage=true runs on the slow pool */
	bool write_cap;	     /* the body's cap: wire_write_cap (serve.c) */
	bool key_alias;	     /* {id} may be the session's key (svc_wire_alias) */
};

/* The body a write of max_write bytes takes: its base64 and the fields. */
size_t wire_write_cap(unsigned long long max_write);

/* What every front shares (the E2B front too, serve/e2b.c): a request's
 * begin (the snapshot held, the token's who, the cancel flag) and end
 * (the access log's tenant and session, everything released). */
void wire_begin(struct wire_req *w, void *arg, struct http_request *req,
		struct http_response *res);
void wire_end(struct wire_req *w);
/* X-Sandbox-Token, else Authorization: Bearer's credentials, or NULL. */
const char *wire_token(const struct http_request *req);
/* The service or a tenant (not nobody, not the scrape token). */
bool wire_who_acts(enum serve_who who);
/* What parsing a body may cost, before jansson does: 0, or 413 (more
 * than WIRE_JSON_NODES values), 422 (deeper than WIRE_JSON_DEPTH). */
int wire_json_shape(const char *p, size_t n);
/* The call's agent and run (X-Sandbox-Agent, X-Sandbox-Run, then
 * w->ws's defaults, then the service's): 0, or -1 with *bad the header
 * and *why what is wrong with it (err's text, freed by the caller). */
int wire_who_read(struct wire_req *w, const char **bad, const char **why,
		  struct sbx_error **err);

/* The admit hook of the HTTP server (http.h): who a request is, from
 * its headers alone, and whether its route lets it in. */
void wire_admit(void *arg, const struct http_route *rt,
		const struct http_request *req, struct http_admit *a);
/* The handler of every route: what the route needs, then its op. */
void wire_handle(void *arg, struct http_request *req,
		 struct http_response *res);
/* The most nesting and JSON values a body may have (every route takes a
 * flat object of a few fields; run's argv and env, open's labels and
 * PUT /policy's runtimes are the only nesting). */
#define WIRE_JSON_DEPTH 4
#define WIRE_JSON_NODES 16384

/* The sessions open on the wire and those resident (running or paused),
 * counted at most once per max_age_ms (/healthz's and the fleet's lease
 * share the count): false when they could not be counted now (the last
 * counts given). */
bool wire_session_counts(struct serve *sv, const struct svc *s,
			 long long max_age_ms, size_t *running, size_t *open);
/* 503: session id lives on host, which cannot be reached (why), with
 * Retry-After. */
void wire_unreachable(struct wire_req *w, const char *id, const char *host,
		      const char *why);
void wire_detail(struct wire_req *w, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void wire_json(struct wire_req *w, int status, json_t *doc);
/* 422, FastAPI's shape: loc is ["body", field] (or "query"/"path"). */
void wire_invalid(struct wire_req *w, const char *where, const char *field,
		  const char *type, const char *msg);
/* The same with the "input" given (borrowed; NULL: null), for a field
 * whose value must not be echoed (run's env: its names alone). */
void wire_invalid_input(struct wire_req *w, const char *where,
			const char *field, const char *type, const char *msg,
			json_t *input);

/* The body's fields: false once answered (422). */
bool wire_str(struct wire_req *w, const char *name, bool required,
	      bool nullable, const char **out);
bool wire_int(struct wire_req *w, const char *name, long long min,
	      bool nullable, long long *out, bool *present);
bool wire_bool(struct wire_req *w, const char *name, bool *out);
bool wire_num(struct wire_req *w, const char *name, double min_excl,
	      bool nullable, double *out, bool *present);
/* A query argument: bool (true/false/1/0/yes/no/on/off), int >= 0. */
bool wire_query_bool(struct wire_req *w, const char *name, bool *out);
bool wire_query_uint(struct wire_req *w, const char *name,
		     unsigned long long *out);

/* Service token only (401, or 403 for a tenant's token when
 * tenant_ok is false).  wire_handle calls it for the route's token. */
bool wire_auth_service(struct wire_req *w, bool tenant_ok);
/*
 * A per-session route: the token checked before the session's existence
 * is said (401 for a wrong one, even for an id that does not exist);
 * then 422 for an id outside the pattern, 404 "No such session: ID" for
 * one that is not open (or another tenant's).  open_only false: a kept
 * workspace of a closed session is found too (archive routes, purge),
 * with missing the 404 detail to give.
 */
bool wire_session(struct wire_req *w, bool open_only, const char *missing);

/* SessionInfo of ws, its container's state word given (s: the idle
 * timeout its expires_at counts). */
json_t *wire_session_info(const struct svc *s,
			  const struct svc_wire_session *ws, const char *state);
/* The session's state word, from the engine (one inspect). */
const char *wire_session_state(struct wire_req *w);

/* A path of the wire (in the sandbox) as the workspace module takes
 * it: relative to the workspace; an absolute one under the work dir
 * (SANDBOXD_WORK_DIR) stripped to relative; NULL (and *why) for any
 * other absolute path, the workspace's host path included. A new
 * string. */
char *wire_path(const struct wire_req *w, const char *path,
		const char **why);
/* The sandbox's absolute path of rel, under the work dir, where its
 * container binds the workspace: never a host path. A new string. */
char *wire_abs_path(const struct wire_req *w, const char *rel);

/* The operations of wire-ops.c (their routes' needs done). */
void wire_exec(struct wire_req *w);
void wire_run(struct wire_req *w);
void wire_run_stop(struct wire_req *w);
void wire_read(struct wire_req *w);
void wire_read_bytes(struct wire_req *w);
void wire_write(struct wire_req *w);
void wire_edit(struct wire_req *w);
void wire_exists(struct wire_req *w);
void wire_ls(struct wire_req *w);
void wire_glob(struct wire_req *w);
void wire_grep(struct wire_req *w);
void wire_ws_ls(struct wire_req *w);
void wire_ws_read(struct wire_req *w);
void wire_ws_read_bytes(struct wire_req *w);

#endif

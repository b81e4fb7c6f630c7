/*
 * wire.h - what the route handlers share (wire.c: sessions, policy,
 * health; wire-ops.c: the operations on a session and its workspace);
 * private to src/serve.
 *
 * A handler begins with wire_begin (the snapshot held, the body parsed
 * when it has one) and ends with wire_end.  Answers use sandboxd's
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
	bool answered;
};

/* Begin: with_body parses the body as a JSON object (else 422, and
 * false). */
bool wire_begin(struct wire_req *w, void *arg, struct http_request *req,
		struct http_response *res, bool with_body);
void wire_end(struct wire_req *w);

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
 * tenant_ok is false). */
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

/* The handlers of wire-ops.c. */
void wire_exec(void *arg, struct http_request *req, struct http_response *res);
void wire_run(void *arg, struct http_request *req, struct http_response *res);
void wire_run_stop(void *arg, struct http_request *req,
		   struct http_response *res);
void wire_read(void *arg, struct http_request *req, struct http_response *res);
void wire_read_bytes(void *arg, struct http_request *req,
		     struct http_response *res);
void wire_write(void *arg, struct http_request *req, struct http_response *res);
void wire_edit(void *arg, struct http_request *req, struct http_response *res);
void wire_exists(void *arg, struct http_request *req,
		 struct http_response *res);
void wire_ls(void *arg, struct http_request *req, struct http_response *res);
void wire_glob(void *arg, struct http_request *req, struct http_response *res);
void wire_grep(void *arg, struct http_request *req, struct http_response *res);
void wire_ws_ls(void *arg, struct http_request *req, struct http_response *res);
void wire_ws_read(void *arg, struct http_request *req,
		  struct http_response *res);
void wire_ws_read_bytes(void *arg, struct http_request *req,
			struct http_response *res);

#endif

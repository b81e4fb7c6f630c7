/*
 * e2b.h - the E2B front of `sbxcat serve` (docs/e2b.md): E2B's API on
 * the same listener as sandboxd's, so a platform built on the E2B SDK
 * reaches sbxcat's sessions unchanged.  Three dialects, one route table:
 *
 * - the control plane (e2b-api.c): REST and JSON, E2B's spec/openapi.yml,
 *   X-API-KEY a tenant's token (or the service's), errors
 *   {"code": STATUS, "message": "..."};
 * - the sandbox's daemon, envd (e2b-process.c, e2b-fs.c): the Connect
 *   protocol with its JSON codec (unary: application/json; server
 *   streaming: application/connect+json, 5-byte envelopes, an end-stream
 *   frame), plus envd's REST routes (/files, /health);
 * - the code interpreter (e2b-code.c): POST /execute answered in NDJSON.
 *
 * An E2B sandbox is a session opened on the wire (svc-wire.h) whose id
 * is its sandboxID and whose token is its envdAccessToken: a request to
 * the daemon or the interpreter names the sandbox by E2b-Sandbox-Id (and
 * the port by E2b-Sandbox-Port), or by its Host, PORT-ID.DOMAIN (what an
 * SDK that cannot be pointed at one URL sends), and proves it with
 * X-Access-Token, checked as the sandboxd front checks a session's token.
 *
 * Thread rule: as wire.h: a struct e2b_req belongs to its handler call.
 */
#ifndef SBX_E2B_H
#define SBX_E2B_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "serve/wire.h"

struct sbx_error;

/* The envd's port and the code interpreter's (E2b-Sandbox-Port). */
#define E2B_PORT_ENVD 49983
#define E2B_PORT_CODE 49999
/* A sandbox id is one DNS label of [a-z0-9] (ids sbxcat mints: 20). */
#define E2B_ID_MAX 63
#define E2B_ID_LEN 20

/* Who a route lets in. */
enum e2b_auth {
	E2B_AUTH_NONE,	  /* anyone (GET /health) */
	E2B_AUTH_API_KEY, /* X-API-KEY: the service's token or a tenant's */
	E2B_AUTH_ENVD,	  /* a sandbox named by header or Host, its own
			   * X-Access-Token */
};

/* How a route answers, errors included. */
enum e2b_dialect {
	E2B_REST,    /* JSON, errors {"code": STATUS, "message"} */
	E2B_CONNECT, /* Connect: unary or server streaming, by the request's
		      * Content-Type */
};

struct e2b_req;
struct e2b_needs {
	void (*op)(struct e2b_req *e);
	enum e2b_auth auth;
	enum e2b_dialect dialect;
	/* The body is a JSON object, parsed into e->w.body (REST, a
	 * Connect unary request, the one message of a streaming request);
	 * a route without it reads e->w.req->body itself. */
	bool body;
};

struct e2b_req {
	/* The shared part (wire.h): snap, auth, call (tenant, agent, run,
	 * cancel), ws (an ENVD route's session, found by its token), body,
	 * req, res. */
	struct wire_req w;
	const struct e2b_needs *n;
	/* An ENVD route's sandbox and port (E2b-Sandbox-Id and -Port, or
	 * the Host's PORT-ID.); "" and 0 for the others. */
	char id[E2B_ID_MAX + 1];
	unsigned port;
	/* Connect: the request came as a stream (application/connect+json:
	 * the answer is a stream too); its deadline from Connect-Timeout-Ms
	 * (0: none given). */
	bool connect_stream;
	long long deadline_ms;
	bool stream_open; /* e2b_stream_begin was called */
	/* An ENVD route's sandbox's envVars (e2b_sandbox_envs), held for
	 * the request: e2b_handle releases it. */
	json_t *envs;
};

/* The fleet's refusals in E2B's shapes (serve-fleet.h). */
extern const struct serve_fleet_front e2b_fleet_front;

/* An id of E2B's shape: one DNS label of [a-z0-9], 1 to E2B_ID_MAX. */
bool e2b_id_valid(const char *id);
/* A new sandbox id: E2B_ID_LEN of [a-z0-9] from getrandom. */
void e2b_id_new(char id[E2B_ID_LEN + 1]);

/* ---- answers ---- */

/* REST: status with {"code": status, "message": the text}. */
void e2b_rest_error(struct e2b_req *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* REST: a JSON document (stolen). */
void e2b_rest_json(struct e2b_req *e, int status, json_t *doc);
/* REST: a status with no body (204). */
void e2b_rest_empty(struct e2b_req *e, int status);

/*
 * Connect's error codes (connectrpc.com/docs/protocol: "canceled",
 * "invalid_argument", ...): a unary call is answered with the code's
 * HTTP status and {"code", "message"}; a stream that has begun ends with
 * an end-stream frame {"error": {"code", "message"}}; one that has not,
 * with a stream of that frame alone (HTTP 200, as the protocol says).
 */
void e2b_connect_error(struct e2b_req *e, const char *code, const char *fmt,
		       ...) __attribute__((format(printf, 3, 4)));
/* A Connect unary answer: msg (stolen) with 200. */
void e2b_connect_reply(struct e2b_req *e, json_t *msg);
/* The HTTP status of a Connect code (500 for one not known). */
int e2b_connect_status(const char *code);
/* err as the route's dialect says it: its status (wire_status) and text
 * (wire_error_text); for Connect the code of that status. */
void e2b_error(struct e2b_req *e, const struct sbx_error *err);

/*
 * A server stream: begin (200, application/connect+json), each message
 * as an envelope (flags 0, its length, the JSON), then the end-stream
 * frame (flags 0x02: {} when code is NULL, else the error).  -1 when the
 * client has gone (e->w.req->gone is raised: stop what runs).
 */
int e2b_stream_begin(struct e2b_req *e);
int e2b_stream_msg(struct e2b_req *e, json_t *msg); /* msg stolen */
int e2b_stream_end(struct e2b_req *e, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- the values of Connect's JSON (protobuf's JSON mapping) ---- */

/* A field by its JSON name or its proto name (a client may send
 * either: "processId" or "process_id"), or NULL. */
json_t *e2b_field(json_t *obj, const char *json_name, const char *proto_name);

/* ---- what the front's modules give ---- */

/* The control plane's check that a sandbox the daemon's routes reach is
 * in a state to be reached (running or resumable, not paused by its
 * client): false once answered (e2b-api.c). */
bool e2b_envd_ready(struct e2b_req *e);

/* The sandbox's envVars given at its create (an object of strings,
 * borrowed: valid for the request), every command's environment before
 * its own envs; NULL for none (e2b-api.c). */
json_t *e2b_sandbox_envs(struct e2b_req *e);

/* Where an E2B sandbox sees its workspace: its work dir and HOME
 * (E2B's /home/user).  Paths under it are served on the host, the others
 * inside the container (docs/e2b.md). */
#define E2B_HOME "/home/user"
const char *e2b_home(const struct e2b_req *e);

/* Stop every interpreter of the code routes (e2b-code.c): the service's
 * stop, once no request runs. */
void e2b_code_stop(void);

/* The routes of each module, and all of them (serve.c). */
extern const struct http_route e2b_api_routes[], e2b_process_routes[],
    e2b_fs_routes[], e2b_code_routes[];
extern const size_t e2b_api_nroutes, e2b_process_nroutes, e2b_fs_nroutes,
    e2b_code_nroutes;
size_t e2b_nroutes(void);
/* envd's upload route's body cap: max_write and what its multipart
 * framing may add (e2b-fs.c; serve.c calls it at start). */
void e2b_fs_caps(struct http_route *rt, size_t n, unsigned long long max_write);
void e2b_routes_copy(struct http_route *out);

/* The admit hook's and the handler's part for the E2B routes (wire.c's
 * hook hands a route of this front here). */
void e2b_admit(void *arg, const struct http_route *rt,
	       const struct http_request *req, struct http_admit *a);
void e2b_handle(void *arg, struct http_request *req, struct http_response *res);
/* The HTTP server's refusal hook (http_config.refusal): a refusal of an
 * E2B route, or of a path of E2B's API no route serves, in E2B's shape
 * (REST {"code": STATUS, "message"}, Connect {"code", "message"}); NULL
 * for sandboxd's paths. */
char *e2b_refusal(void *arg, const struct http_route *rt, const char *path,
		  int status, const char *detail);

/* A route of this front: method, path, pool, body cap, op, who, dialect,
 * then e2b_needs' other fields by name. */
#define E2B_ROUTE(m, p, pool, cap, op_, auth_, dialect_, ...)                  \
	{                                                                      \
		m, p, e2b_handle, HTTP_POOL_##pool, cap,                       \
		    &(const struct e2b_needs)                                  \
		{                                                              \
			.op = op_, .auth = E2B_AUTH_##auth_,                   \
			.dialect = E2B_##dialect_, __VA_ARGS__                 \
		}                                                              \
	}

#endif

/*
 * engine-http.h - the request runner shared by the engine's call files
 * (engine.c, engine-image.c, and engine-container.c to come); private to
 * them, not part of the engine's interface (engine.h).
 *
 * A struct call is one request: call_init() names it, call_run() sets up
 * the curl handle, runs it and maps what went wrong to an error, and the
 * caller reads c.status and c.body.  Every error made here carries the
 * HTTP status (err->http) when the engine answered, and a hint (err->hint)
 * apart from the message when there is something to do about it.
 *
 * Thread rule: a struct call belongs to one thread (and its engine handle
 * to that thread, engine.h).
 */
#ifndef SBX_ENGINE_HTTP_H
#define SBX_ENGINE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/curl-dl.h"
#include "engine/engine.h"
#include "basic/util.h"

/* One request and what came back. */
struct call {
	struct engine *e;
	void *h; /* the CURL * it runs on */
	const char *method;
	char *what; /* "GET /version", for messages */
	char *url;
	long timeout_ms;    /* 0: none */
	long status;	    /* HTTP status, 0 before the headers */
	struct strbuf body; /* the reply, unless streamed into stream */
	bool body_over;	    /* the reply was larger than body_max */
	size_t body_max;
	struct engine_stream *stream; /* a 2xx reply goes here */
	struct tar *upload;
	const char *json_body;	 /* a POST's JSON body, or NULL (empty) */
	const char *want_header; /* a reply header to keep, e.g. "X-Foo" */
	/* One more request header, "Name: value" (X-Registry-Auth): it may
	 * carry a secret, so it is never traced nor put into a message. */
	const char *extra_header;
	/* A reply that sends nothing for this long fails (a push, pull or
	 * distribution inspect whose registry stalls: the engine still
	 * answers its ping, so the stall check alone would wait for
	 * stream_ms); 0: no such bound.  idle says it was hit. */
	long idle_ms;
	bool idle;
	char *header_value;	 /* its value (trimmed), or NULL */
	long long last_rx, last_ping;
	char *stall_why; /* the stream went silent and the ping failed */
	char errbuf[CURL_ERROR_SIZE];
};

/*
 * method path: path starts with '/' and may carry a query; versioned
 * prefixes the negotiated API version.  A HEAD reads the headers only.
 */
void call_init(struct call *c, struct engine *e, const char *method,
	       const char *path, bool versioned);
void call_release(struct call *c);
/* Run c; 0 when the engine answered (any status), else -1 and *err. */
int call_run(struct call *c, struct sbx_error **err);
/* A plain request whose 2xx reply is JSON; *out is a new reference. */
int call_json(struct call *c, json_t **out, struct sbx_error **err);
/* The body of a streamed call: the reply or, on an error line, failure. */
int call_stream(struct call *c, struct engine_stream *s,
		struct sbx_error **err);
/* An error for a reply of status c->status: its message, err->http set. */
int call_reply_error(struct call *c, struct sbx_error **err);
/*
 * The same for a reply read without a struct call (the hijacked exec
 * connection): status, and the body, the engine's {"message": ...}.
 */
int engine_reply_error(long status, const char *body, size_t len,
		       struct sbx_error **err);
/* One SBXCAT_ENGINE_TRACE line for a request made without a call. */
void engine_trace(struct engine *e, const char *method, const char *path);

/*
 * A request whose reply body is not needed: 0 when the status is 2xx or
 * one of accept[] (0-terminated, may be NULL), with *status set (may be
 * NULL); else -1 and an error carrying the status.
 */
int call_simple(struct engine *e, const char *method, const char *path,
		const long *accept, long *status, struct sbx_error **err);

/* Path bytes of a reference kept as they are; anything else %-encoded. */
void engine_add_path_escaped(struct strbuf *sb, const char *s);
/* A container or exec id or name: one path segment, '/' and '.' encoded. */
void engine_add_segment_escaped(struct strbuf *sb, const char *s);
void engine_add_query_escaped(struct strbuf *sb, const char *s);
/* filters={"KEY":["VALUE", ...]} (values ORed), escaped for a query. */
void engine_add_filter_values(struct strbuf *sb, const char *key,
			      const char *const *values, size_t n);

#endif

/*
 * http.h - the service's HTTP server: libmicrohttpd (loaded on first use,
 * basic/dl.h) under a route table, with the limits a hostile client needs
 * (issue 18, docs/serve.md "Limits").  It knows nothing of sandboxes: the
 * wire (serve/wire.c) gives it routes and handlers.
 *
 * How a request goes: libmicrohttpd's own threads (epoll) read the
 * headers and the body; a handler never runs there.  When the body is
 * whole, the request is handed to a worker of the route's pool (quick or
 * slow: a long exec never keeps a read waiting) and the connection is
 * suspended; the worker runs the handler, which fills a struct
 * http_response; the connection is resumed and the response queued.
 *
 * Limits, each answered before the handler runs:
 * - headers over max_header_bytes: 431 (libmicrohttpd's own pool size);
 * - a body over max_body_bytes: 413 as soon as Content-Length says so (or
 *   the bytes read pass it), never read whole;
 * - more than max_connections at once: 503 with Retry-After, the
 *   connection closed after it;
 * - a connection idle for idle_timeout_s is closed; a request whose
 *   headers and body are not whole within request_timeout_s of its first
 *   byte (a client sending a byte a second) is closed: neither ever holds
 *   a worker.
 * - While a handler runs, the client's socket is watched: when the client
 *   goes away (the socket reads EOF or fails), req->gone becomes non-zero,
 *   which the handler passes on as its call's cancel flag.
 *
 * Every request ends with one access-log line (struct http_server.log:
 * time, method, route template, status, duration, tenant, session: never
 * a token, never a body) and is counted in the metrics (http_metrics).
 *
 * Thread rule: http_server_start and _stop are called by one thread;
 * handlers run on worker threads, any number at once, and must share
 * only what they lock themselves.  A struct http_request and its response
 * belong to the one handler call.
 */
#ifndef SBX_HTTP_H
#define SBX_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct sbx_error;
struct strbuf;

#define HTTP_GONE_CLIENT (-1)	  /* SVC_CANCEL_GONE */
#define HTTP_GONE_SHUTDOWN (-3) /* SVC_CANCEL_SHUTDOWN */
/* Raise a request's gone flag with why, unless it is raised already. */
static inline void http_gone_raise(atomic_int *gone, int why)
{
	int zero = 0;

	atomic_compare_exchange_strong(gone, &zero, why);
}

/* Path parameters of a route ("{id}" segments), in order. */
#define HTTP_PARAMS_MAX 4

struct http_request {
	const char *method;	/* "GET", "POST", ... */
	const char *path;	/* as the client sent it, without the query */
	const char *route;	/* the template it matched: "/sessions/{id}" */
	const char *params[HTTP_PARAMS_MAX];
	size_t nparams;
	const char *body; /* NUL-terminated (one NUL past body_len) */
	size_t body_len;
	/* Non-zero once the request is to stop: HTTP_GONE_CLIENT when the
	 * client went away (EOF or an error on its socket),
	 * HTTP_GONE_SHUTDOWN when the server stops past its grace.  The
	 * first reason stays.  The values are svc.h's cancel reasons, so
	 * the flag is a call's cancel flag as it is. */
	const atomic_int *gone;
	/* For the access log, set by the handler (copied, may be NULL). */
	char tenant[129];
	char session[65];
	void *priv; /* the server's */
};

/* A header of the request (case-insensitive name), or NULL; a query
 * argument (decoded), or NULL.  Valid for the handler call. */
const char *http_header(const struct http_request *req, const char *name);
const char *http_query(const struct http_request *req, const char *name);

struct http_response {
	int status;	    /* 0 when the handler set none: 500 */
	char *body;	    /* malloc'd, the server frees it; NULL: empty */
	size_t body_len;
	const char *content_type; /* static; NULL: application/json */
	/* Extra headers, static strings: Retry-After etc. NULL: none. */
	const char *retry_after;
};

/* One route: method, template (segments, "{name}" matching one
 * non-empty segment of [^/]), the handler, the pool. */
enum http_pool { HTTP_POOL_QUICK, HTTP_POOL_SLOW };
struct http_route {
	const char *method;
	const char *path;
	void (*handler)(void *arg, struct http_request *req,
			struct http_response *res);
	enum http_pool pool;
};

/* Where to listen: "unix:/path" or "tcp:HOST:PORT" (HOST an address or
 * a name; [v6] in brackets). */
struct http_listen {
	const char *spec;
};

struct http_config {
	const struct http_listen *listen;
	size_t nlisten;
	const struct http_route *routes;
	size_t nroutes;
	void *arg; /* handed to every handler */
	/* Called for a request no route matches: NULL gives 404
	 * {"detail":"Not Found"}; a path that matches but not its method:
	 * 405 {"detail":"Method Not Allowed"}. */
	size_t max_body_bytes;	   /* 0: 12 MiB */
	size_t max_header_bytes;   /* 0: 32 KiB */
	unsigned max_connections;  /* 0: 1024 */
	unsigned idle_timeout_s;   /* 0: 60 */
	unsigned request_timeout_s; /* 0: 30: headers and body whole */
	unsigned quick_workers;	   /* 0: 8 */
	unsigned slow_workers;	   /* 0: 32 */
	/* Requests waiting for a worker, per pool, past which a request is
	 * answered 503 with Retry-After (0: 4 per worker). */
	unsigned queue_depth;
	/* The access log: one line per request, to this descriptor (-1:
	 * none). */
	int log_fd;
};

struct http_server;
/* Listen on every address and start serving.  *srv is set before the
 * first thread starts, so handlers may read it; -1 with *err (naming the
 * address) when one cannot be listened on: nothing then listens, and
 * *srv is NULL again once every thread has stopped. */
int http_server_start(struct http_server **srv, const struct http_config *c,
		      struct sbx_error **err);
/* Stop accepting (the listening sockets closed, a unix socket's path
 * removed), wait up to grace_ms for the requests in flight; past it, their
 * gone flags are raised (their commands stopped) and they are waited for.
 * Then everything is freed. */
void http_server_stop(struct http_server *srv, unsigned grace_ms);
/* Requests being handled now (queued for a worker or running). */
unsigned http_server_inflight(struct http_server *srv);
/* The port listen[i] is bound to (a tcp: port 0 gets one from the
 * kernel); 0 for a unix socket. */
unsigned http_server_port(struct http_server *srv, size_t i);

/*
 * The metrics the server keeps, in Prometheus text format, appended to
 * out: sbxcat_http_requests_total{route,method,status},
 * sbxcat_http_request_duration_seconds (histogram, by route),
 * sbxcat_http_connections (gauge), sbxcat_http_refused_total{reason}
 * (413, 431, 503, timeout).
 */
void http_metrics(struct http_server *srv, struct strbuf *out);

/* A JSON response: status and a document (stolen: decref'd here). */
struct json_t;
void http_respond_json(struct http_response *res, int status,
		       struct json_t *doc);
/* {"detail": msg} with status. */
void http_respond_detail(struct http_response *res, int status,
			 const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

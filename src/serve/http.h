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
 * - a path that no template can hold: 400 for a %00 anywhere in the
 *   request target, 404 for a %2F inside a segment (checked on the raw
 *   target: libmicrohttpd decodes the path into a C string);
 * - who asks: the config's admit hook, called with the route and the
 *   headers as soon as they are in (before one byte of the body is read):
 *   a refusal (401, 403, ...) is answered at once and the connection
 *   closed, the body never read;
 * - a body over the route's max_body (else max_body_bytes): 413 as soon
 *   as Content-Length says so (or the bytes read pass it), never read
 *   whole;
 * - more than max_connections at once: 503 with Retry-After, the
 *   connection closed after it;
 * - one caller (http_admit.caller) holding its share of a pool already:
 *   429 with Retry-After; a worker takes the oldest request whose caller
 *   runs fewer than its share of the workers, so one caller's flood
 *   never keeps another's request waiting for all of it;
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
	const void *needs;	/* the matched route's declaration */
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
	/* What the admit hook found (http_admit.who), and its caller. */
	int who;
	char caller[96];
	void *priv; /* the server's */
};

/* A header of the request (case-insensitive name), or NULL; a query
 * argument (decoded), or NULL.  Valid for the handler call (and the admit
 * hook's). */
const char *http_header(const struct http_request *req, const char *name);
/* The n-th (from 0) of the request's headers of that name, or NULL: a
 * header a client may repeat is checked whole.  A value is
 * libmicrohttpd's string: a NUL among its bytes ends it. */
const char *http_header_at(const struct http_request *req, const char *name,
			   size_t n);
const char *http_query(const struct http_request *req, const char *name);
/* The n-th (from 0) of all the request's headers, or of its query
 * arguments (decoded), in the order sent: false past the last. */
bool http_header_nth(const struct http_request *req, size_t n,
		     const char **name, const char **value);
bool http_query_nth(const struct http_request *req, size_t n, const char **name,
		    const char **value);
/* The n-th (from 0) query argument of that name, or NULL (a list sent
 * as name=a&name=b). */
const char *http_query_at(const struct http_request *req, const char *name,
			  size_t n);

struct http_response {
	int status;	    /* 0 when the handler set none: 500 */
	char *body;	    /* malloc'd, the server frees it; NULL: empty */
	size_t body_len;
	const char *content_type; /* static; NULL: application/json */
	/* Extra headers, static strings: Retry-After etc. NULL: none. */
	const char *retry_after;
	/* More headers (http_response_header), copied: names and values
	 * as "Name: value" strings, at most HTTP_RESPONSE_HEADERS.  A
	 * Content-Type among them (a forwarded answer's) takes the place
	 * of content_type, and of http_stream_start's. */
	char *headers[8];
	size_t nheaders;
};
#define HTTP_RESPONSE_HEADERS 8

/*
 * Add a header to res (both copied): its name a token of RFC 9110's
 * tchar, its value printable ASCII and spaces (a value from a client is
 * checked here: a CR or LF never reaches the wire).  -1 (nothing added)
 * for a bad name or value, or past HTTP_RESPONSE_HEADERS.
 */
int http_response_header(struct http_response *res, const char *name,
			 const char *value);

/*
 * A streamed response: instead of filling res's body, a handler calls
 * http_stream_start once (the status, the type and res's headers so
 * far), then http_stream_write as its bytes come; the response ends when
 * the handler returns.  The bytes go out as the client takes them
 * (chunked for HTTP/1.1); a write waits while the client is slow, at
 * most the server's write timeout, and returns -1 when the client is
 * gone, or did not take the bytes in time (req->gone is raised then:
 * the handler stops what it runs and returns).  A handler that never
 * calls http_stream_start answers with res as before.
 *
 * Thread rule: the handler's own calls, on its worker.
 */
int http_stream_start(struct http_request *req, int status,
		      const char *content_type);
int http_stream_write(struct http_request *req, const void *buf, size_t len);
/* Whether req's response is streamed (http_stream_start was called). */
bool http_streaming(const struct http_request *req);

/*
 * One route: method, template (segments, "{name}" matching one
 * non-empty segment of [^/]), the handler, the pool, and what the route
 * declares it needs: the most body it takes (0: the config's
 * max_body_bytes) and needs, the front end's own declaration (which
 * token, which lookup...), read by its admit hook and its handler
 * (req->needs), never by the server.
 */
enum http_pool { HTTP_POOL_QUICK, HTTP_POOL_SLOW };
struct http_route {
	const char *method;
	const char *path;
	void (*handler)(void *arg, struct http_request *req,
			struct http_response *res);
	enum http_pool pool;
	size_t max_body;
	const void *needs;
};

/*
 * The admit hook (http_config.admit): called on libmicrohttpd's thread
 * once the headers are in and the route is matched, before any byte of
 * the body is read, with the request's method, path, params, headers and
 * query (http_header, http_query).  It must be quick (it holds every
 * connection of its daemon): a check of a token against memory, not a
 * round trip.  It fills a, which comes zeroed but for pool (the route's):
 * - status: 0 lets the request in; else the refusal's status (401, 403,
 *   503...), answered at once with {"detail": detail} (a static string)
 *   and Retry-After: retry_after when set, and the connection closed;
 * - pool: where the handler runs (the hook may send a costly variant of
 *   a route, a query flag, to the slow pool);
 * - caller: who asks, the key of the pools' fair shares ("": none, no
 *   share applies); copied to req->caller;
 * - who: anything the handler wants to know of it (req->who).
 */
struct http_admit {
	int status;
	const char *detail;
	const char *retry_after;
	enum http_pool pool;
	char caller[96];
	int who;
};

/* Where to listen: "unix:/path", "tcp:HOST:PORT" (HOST an address or
 * a name; [v6] in brackets) or "https:HOST:PORT" (TCP with TLS: the
 * config's tls_cert_pem and tls_key_pem). */
struct http_listen {
	const char *spec;
};

struct http_config {
	const struct http_listen *listen;
	size_t nlisten;
	const struct http_route *routes;
	size_t nroutes;
	void *arg; /* handed to every handler and the admit hook */
	/* NULL: every request is let in, with no caller. */
	void (*admit)(void *arg, const struct http_route *rt,
		      const struct http_request *req, struct http_admit *a);
	/* Called for a request no route matches: NULL gives 404
	 * {"detail":"Not Found"}; a path that matches but not its method:
	 * 405 {"detail":"Method Not Allowed"}. */
	/* The body of a refusal the server answers itself (404, 405, 413,
	 * 431, 429, 503, the admit hook's), for a front whose clients read
	 * another shape: a malloc'd JSON document, or NULL for sandboxd's
	 * {"detail": detail}.  rt is the matched route (NULL: none), path
	 * the request's.  Called on libmicrohttpd's thread: memory only.
	 * NULL hook: {"detail"} always. */
	char *(*refusal)(void *arg, const struct http_route *rt,
			 const char *path, int status, const char *detail);
	/* Headers added to every response, the server's own refusals
	 * too: "Name: value" strings (static), or NULL. */
	const char *const *headers;
	size_t nheaders;
	size_t max_body_bytes;	   /* 0: 12 MiB; a route's own cap first */
	size_t max_header_bytes;   /* 0: 32 KiB */
	unsigned max_connections;  /* 0: 1024 */
	unsigned idle_timeout_s;   /* 0: 60 */
	unsigned request_timeout_s; /* 0: 30: headers and body whole */
	/* How long http_stream_write waits for a client that takes none of
	 * a streamed response's bytes (0: idle_timeout_s). */
	unsigned write_timeout_s;
	unsigned quick_workers;	   /* 0: 8 */
	unsigned slow_workers;	   /* 0: 32 */
	/* Requests waiting for a worker, per pool, past which a request is
	 * answered 503 with Retry-After (0: 4 per worker). */
	unsigned queue_depth;
	/* One caller's share of a pool: running at most caller_workers
	 * (0: half the pool's workers, at least 1) and holding at most
	 * caller_places of its workers and queue (0: a quarter, at least
	 * 2); past it 429 with Retry-After: 1. */
	unsigned caller_workers, caller_places;
	/* The access log: one line per request, to this descriptor (-1:
	 * none). */
	int log_fd;
	/* The https: listeners' certificate (PEM: the server's first, then
	 * its chain) and its key (PEM, not encrypted); copied at start.
	 * Both are needed when an https: listener is, and refused when
	 * none is. */
	const char *tls_cert_pem, *tls_key_pem;
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
/*
 * A certificate and its key checked (http_config.tls_*): the PEM parses
 * (the certificate first, a chain after it), the key is not encrypted and
 * is the certificate's.  0, or -1 with *err saying which; serial, when
 * not NULL, gets the certificate's serial number in hex (80 bytes).
 * Neither the dates, the names nor the chain are checked.
 */
int http_tls_check(const char *cert_pem, const char *key_pem, char *serial,
		   struct sbx_error **err);
/*
 * SIGHUP: serve a new certificate and key on every https: listener.
 * Each gets a new daemon on the same listening socket (the old one, given
 * the socket back, accepts no more and is stopped once its connections
 * are done: requests in flight finish on the old certificate).  -1 with
 * *err when the pair is bad or a daemon cannot start: the old
 * certificate is still served everywhere.  Called by the thread that
 * starts and stops the server.
 */
int http_server_tls_reload(struct http_server *srv, const char *cert_pem,
			   const char *key_pem, struct sbx_error **err);
/* Whether listen spec s is an https: one. */
bool http_listen_is_tls(const char *spec);

/* Requests being handled now (queued for a worker or running). */
unsigned http_server_inflight(struct http_server *srv);
/* The port listen[i] is bound to (a tcp: port 0 gets one from the
 * kernel); 0 for a unix socket. */
unsigned http_server_port(struct http_server *srv, size_t i);

/*
 * The metrics the server keeps, in Prometheus text format, appended to
 * out: sbxcat_http_requests_total{route,method,status},
 * sbxcat_http_request_duration_seconds{route,method} (histogram),
 * sbxcat_http_connections (gauge), sbxcat_http_refused_total{reason}
 * (413, 431, 503, timeout, mhd, path, admit, 429).
 */
void http_metrics(struct http_server *srv, struct strbuf *out);
/* A family's "# HELP" (help escaped: backslash, newline) and "# TYPE"
 * lines, for every family the service exposes. */
void http_metric_family(struct strbuf *out, const char *name, const char *type,
			const char *help);
/* name="value" with value escaped (backslash, double quote, newline),
 * after a comma unless out ends with the series' '{'. */
void http_metric_label(struct strbuf *out, const char *name, const char *value);

/* A JSON response: status and a document (stolen: decref'd here). */
struct json_t;
void http_respond_json(struct http_response *res, int status,
		       struct json_t *doc);
/* {"detail": msg} with status. */
void http_respond_detail(struct http_response *res, int status,
			 const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

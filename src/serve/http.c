/*
 * http.c - the server (see http.h): libmicrohttpd's daemons, one per
 * listening socket, and a request's way through them.
 *
 * On libmicrohttpd's thread (the daemon's one epoll thread):
 *   URI log callback    the request line is in: the request is made, its
 *                       clock started, the deadline for its headers and
 *                       body set (http-watch.c), the raw target checked
 *                       for what no path may hold (%00, %2F);
 *   first access call   the headers are in: copied, then the answers that
 *                       need no handler (503 over the cap or stopping,
 *                       431, 400 for the path, the admit hook's refusal,
 *                       413 by Content-Length) queued at once;
 *   upload calls        the body gathered, bounded by the route's cap;
 *   last access call    a place in the pool taken (or 503, or 429 over
 *                       the caller's share), the connection suspended,
 *                       the request handed over;
 *   after resume        the handler's response queued (or, when it
 *                       started a streamed one, that response, fed
 *                       from the worker while it runs: http-stream.c);
 *   completed callback  the access-log line, the counters, the request
 *                       freed.
 * On a worker: the handler, with the socket watched for the client going.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/clock.h"
#include "basic/error.h"
#include "serve/http-int.h"
#include "serve/mhd-dl.h"

/* libmicrohttpd's per-connection pool holds the request's headers (the
 * bytes and a list entry each), its read buffer and the response's
 * headers.  max_header_bytes is checked here, in the first access call,
 * so the pool is made large enough that a request just past the limit
 * still reaches it and gets our 431; past the pool libmicrohttpd answers
 * itself (docs/serve.md, "Limits"). */
#define POOL_HEADROOM (16 * 1024)
/* How long stop waits, after the handlers, for their responses to go. */
#define FLUSH_MS 1000

static struct MHD_Response *make_response(char *body, size_t len,
					  const char *type)
{
	struct MHD_Response *mr;

	mr = sym_MHD_create_response_from_buffer(len, body ? body : (char *)"",
						 body ? MHD_RESPMEM_MUST_FREE
						      : MHD_RESPMEM_PERSISTENT);
	if (!mr) {
		free(body);
		return NULL;
	}
	if (!type || *type)
		sym_MHD_add_response_header(mr, "Content-Type",
					    type ? type : "application/json");
	return mr;
}

/* Queue mr as r's response with its headers, consuming it. */
static enum MHD_Result queue(struct http_req *r, int status,
			     struct MHD_Response *mr, const char *retry_after)
{
	enum MHD_Result ok;

	if (!mr)
		return MHD_NO;
	if (retry_after)
		sym_MHD_add_response_header(mr, "Retry-After", retry_after);
	for (size_t i = 0; i < r->srv->cfg.nheaders; i++) {
		const char *h = r->srv->cfg.headers[i], *colon = strchr(h, ':');
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)(colon - h), h);
		sym_MHD_add_response_header(mr, name, colon + 2);
	}
	for (size_t i = 0; i < r->res.nheaders; i++) {
		char *h = r->res.headers[i], *colon = strchr(h, ':');

		*colon = '\0';
		sym_MHD_add_response_header(mr, h, colon + 2);
		*colon = ':';
	}
	if (r->close || atomic_load(&r->srv->stopping))
		sym_MHD_add_response_header(mr, "Connection", "close");
	ok = sym_MHD_queue_response(r->mhd, status, mr);
	sym_MHD_destroy_response(mr);
	r->status = status;
	atomic_store(&r->state, REQ_ANSWERED);
	return ok;
}

/* The handler's own Content-Type among its headers (a forwarded
 * answer's): the type is then not added. */
static bool own_type(const struct http_req *r)
{
	for (size_t i = 0; i < r->res.nheaders; i++)
		if (!strncasecmp(r->res.headers[i], "Content-Type:", 13))
			return true;
	return false;
}

/* Queue r's response (the handler's, or the early one), consuming it. */
static enum MHD_Result answer(struct http_req *r, int status, char *body,
			      size_t len, const char *type,
			      const char *retry_after)
{
	return queue(r, status,
		     make_response(body, len, own_type(r) ? "" : type),
		     retry_after);
}

/* The handler started a streamed response: queue it (http-stream.c). */
static enum MHD_Result answer_stream(struct http_req *r)
{
	struct MHD_Response *mr = http_stream_response(r);

	if (mr && !own_type(r))
		sym_MHD_add_response_header(mr, "Content-Type",
					    r->st->type ? r->st->type
							: "application/json");
	return queue(r, r->st->status, mr, NULL);
}

static enum MHD_Result answer_detail(struct http_req *r, int status,
				     const char *detail,
				     const char *retry_after)
{
	struct http_server *srv = r->srv;
	char *body = NULL;

	if (srv->cfg.refusal)
		body = srv->cfg.refusal(srv->cfg.arg, r->route, r->path, status,
					detail);
	if (!body)
		body = xasprintf("{\"detail\":\"%s\"}", detail);

	return answer(r, status, body, strlen(body), NULL, retry_after);
}

/* A refusal before any handler: counted, answered, the connection closed
 * after it (the body is not read). */
static enum MHD_Result refuse(struct http_req *r, enum http_refusal why,
			      int status, const char *detail)
{
	http_stats_refused(r->srv, why);
	r->close = true;
	return answer_detail(r, status, detail,
			     status == 503 || status == 429 ? "1" : NULL);
}

/*
 * The request line is in: the request starts.  Its headers and body must
 * be whole within request_timeout_s of this line, and within
 * idle_timeout_s + request_timeout_s of the connection's accept or its
 * last response (on_completed), which cuts a request line sent a byte at
 * a time too: libmicrohttpd says nothing of a request's first byte.
 */
/*
 * What the raw request target holds that no path of a route can:
 * libmicrohttpd decodes the path before the access handler sees it, into
 * a C string, so a %00 would cut it (GET /sessions/a1%00/events/x served
 * as /sessions/{id}): 400, anywhere in the target (a query's value is a
 * C string too).  A %2F would split a segment in two and route the rest
 * as segments of their own: no template's segment holds a '/', so 404,
 * as sandboxd (Starlette matches the decoded path) answers; in the path
 * only (a query may carry a path).  0: neither.
 */
static int target_bad(const char *uri)
{
	bool query = false;
	int bad = 0;

	for (const char *p = uri; p && *p; p++) {
		if (*p == '?')
			query = true;
		if (*p != '%')
			continue;
		if (p[1] == '0' && p[2] == '0')
			return 400;
		if (!query && p[1] == '2' && (p[2] == 'f' || p[2] == 'F'))
			bad = 404;
	}
	return bad;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
	struct http_server *srv = cls;
	const union MHD_ConnectionInfo *ci;
	struct http_req *r = xcalloc(1, sizeof(*r));

	r->bad_path = target_bad(uri);
	r->srv = srv;
	r->mhd = mc;
	r->start_ms = clock_now_ms();
	r->pub.priv = r;
	r->pub.gone = &r->gone;
	ci =
	    sym_MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	r->conn = ci ? ci->socket_context : NULL;
	if (r->conn)
		http_watch_deadline(r->conn,
				    srv->cfg.request_timeout_s * 1000LL, true);
	return r;
}

/* The body's length as Content-Length says it; -1: none said. */
static intmax_t body_length(struct http_req *r)
{
	const char *cl = sym_MHD_lookup_connection_value(
	    r->mhd, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	char *end;
	uintmax_t n;

	if (!cl)
		return -1;
	errno = 0;
	n = strtoumax(cl, &end, 10);
	return errno == ERANGE || n > INTMAX_MAX ? INTMAX_MAX : (intmax_t)n;
}

/* Ask the admit hook who this is; the refusal answered at once, the
 * connection closed, the body never read. */
static enum MHD_Result admit(struct http_req *r)
{
	struct http_server *srv = r->srv;
	struct http_admit a = {.pool = r->route->pool};

	r->pool = a.pool;
	if (!srv->cfg.admit)
		return MHD_YES;
	srv->cfg.admit(srv->cfg.arg, r->route, &r->pub, &a);
	r->pool = a.pool;
	r->pub.who = a.who;
	memcpy(r->pub.caller, a.caller, sizeof(r->pub.caller));
	r->pub.caller[sizeof(r->pub.caller) - 1] = '\0';
	if (!a.status)
		return MHD_YES;
	http_stats_refused(srv, REFUSED_ADMIT);
	r->close = true;
	return answer_detail(r, a.status, a.detail ? a.detail : "Forbidden",
			     a.retry_after);
}

static enum MHD_Result first_call(struct http_req *r, const char *url,
				  const char *method)
{
	struct http_server *srv = r->srv;
	intmax_t len;

	r->seen = true;
	r->method = xstrdup(method);
	r->path = xstrdup(url);
	r->pub.method = r->method;
	r->pub.path = r->path;
	pthread_mutex_lock(&srv->lock);
	srv->active++;
	pthread_mutex_unlock(&srv->lock);
	http_req_copy(r, r->mhd);
	if (atomic_load(&srv->stopping))
		return refuse(r, REFUSED_503, 503, "Service is shutting down");
	if (r->conn && r->conn->over_cap)
		return refuse(r, REFUSED_503, 503, "Too many connections");
	if (st_add(r->hdr_bytes, strlen(url) + strlen(method)) >
	    srv->cfg.max_header_bytes)
		return refuse(r, REFUSED_431, 431,
			      "Request header fields too large");
	if (r->bad_path == 400)
		return refuse(r, REFUSED_PATH, 400,
			      "Invalid path: an encoded NUL in it");
	if (r->bad_path)
		return refuse(r, REFUSED_PATH, 404, "Not Found");
	r->cap = srv->cfg.max_body_bytes;
	r->route = http_route_match(srv, r, &r->early);
	if (r->route) {
		enum MHD_Result ok;

		r->early = 0;
		r->pub.needs = r->route->needs;
		if (r->route->max_body)
			r->cap = r->route->max_body;
		ok = admit(r);
		if (atomic_load(&r->state) == REQ_ANSWERED)
			return ok;
	} else {
		r->early_detail =
		    r->early == 405 ? "Method Not Allowed" : "Not Found";
	}
	len = body_length(r);
	if (len > (intmax_t)r->cap)
		return refuse(r, REFUSED_413, 413, "Request body too large");
	/* The whole body at once: a doubling buffer would take twice it. */
	if (len > 0 && !r->early)
		strbuf_grow(&r->body, (size_t)len + 1);
	return MHD_YES;
}

/*
 * A chunked body past the route's cap: libmicrohttpd 0.9.75 takes no
 * response in mid-body (MHD_queue_response fails until the body is
 * whole), so the rest is read and dropped, up to the cap more, and 413
 * answered at its end; a body longer still has its connection closed.
 * A request answered early (404, 405) has its body dropped as it comes,
 * never kept, within the same bound.
 */
static enum MHD_Result upload(struct http_req *r, const char *data,
			      size_t *size)
{
	size_t max = r->cap;

	if (!r->early) {
		if (r->body.len + *size <= max) {
			strbuf_add(&r->body, data, *size);
			*size = 0;
			return MHD_YES;
		}
		http_stats_refused(r->srv, REFUSED_413);
		strbuf_release(&r->body);
		r->early = 413;
		r->early_detail = "Request body too large";
		r->close = true;
	}
	r->discarded = st_add(r->discarded, *size);
	*size = 0;
	if (r->discarded > max) {
		r->status = r->early;
		return MHD_NO;
	}
	return MHD_YES;
}

static void handed_link(struct http_req *r)
{
	struct http_server *srv = r->srv;

	pthread_mutex_lock(&srv->lock);
	r->hnext = srv->handed;
	if (srv->handed)
		srv->handed->hprev = r;
	srv->handed = r;
	pthread_mutex_unlock(&srv->lock);
}

static void handed_unlink(struct http_req *r)
{
	struct http_server *srv = r->srv;

	pthread_mutex_lock(&srv->lock);
	if (r->hprev)
		r->hprev->hnext = r->hnext;
	else
		srv->handed = r->hnext;
	if (r->hnext)
		r->hnext->hprev = r->hprev;
	pthread_mutex_unlock(&srv->lock);
}

/* The body is whole: hand the request to its pool. */
static enum MHD_Result hand_over(struct http_req *r)
{
	struct http_server *srv = r->srv;
	struct http_workers *p = &srv->pools[r->pool == HTTP_POOL_SLOW];

	switch (http_pool_reserve(p, r)) {
	case PLACE_OK:
		break;
	case PLACE_FULL:
		r->close = false;
		return refuse(r, REFUSED_503, 503, "Server busy");
	case PLACE_SHARE:
		r->close = false;
		return refuse(r, REFUSED_429, 429,
			      "Too many requests of this caller at once");
	}
	r->pub.body = r->body.buf ? r->body.buf : "";
	r->pub.body_len = r->body.len;
	atomic_store(&r->state, REQ_HANDED);
	handed_link(r);
	if (r->conn)
		http_watch_running(r->conn, r);
	sym_MHD_suspend_connection(r->mhd);
	http_pool_push(p, r);
	return MHD_YES;
}

static enum MHD_Result last_call(struct http_req *r)
{
	switch (atomic_load_explicit(&r->state, memory_order_acquire)) {
	case REQ_READ:
		if (r->conn)
			http_watch_deadline(r->conn, -1, false);
		if (r->early)
			return answer_detail(r, r->early, r->early_detail,
					     NULL);
		return hand_over(r);
	case REQ_DONE: {
		struct http_response *res = &r->res;
		int status = res->status ? res->status : 500;
		return answer(r, status, steal_pointer(&res->body),
			      res->body_len, res->content_type,
			      res->retry_after);
	}
	case REQ_STREAMING:
		return answer_stream(r);
	default:
		return MHD_YES;
	}
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *mc,
				 const char *url, const char *method,
				 const char *version, const char *data,
				 size_t *size, void **con_cls)
{
	struct http_req *r = *con_cls;

	(void)version;
	if (!r)
		r = *con_cls = on_uri(cls, url, mc);
	if (!r->seen)
		return first_call(r, url, method);
	if (atomic_load(&r->state) == REQ_ANSWERED) {
		*size = 0;
		return MHD_YES;
	}
	if (*size)
		return upload(r, data, size);
	return last_call(r);
}

/* The request is over: its access-log line, its counts, freed.  On
 * libmicrohttpd's thread (on_completed), or on the worker of a stream
 * whose connection went before its handler returned. */
static void finish(struct http_server *srv, struct http_req *r,
		   enum MHD_RequestTerminationCode toe)
{
	long long dur = clock_now_ms() - r->start_ms;

	if (r->conn && !r->status && http_watch_timed_out(r->conn)) {
		r->status = 408;
		r->conn->timeout_logged = true;
	}
	if (r->seen) {
		http_log(srv, http_method_label(r), r->pub.route, r->status,
			 dur, r->pub.tenant, r->pub.session);
		http_stats_count(srv, r, dur);
		pthread_mutex_lock(&srv->lock);
		srv->active--;
		pthread_cond_broadcast(&srv->cond);
		pthread_mutex_unlock(&srv->lock);
	} else {
		/* Its headers never reached us: cut at the deadline (408),
		 * answered by libmicrohttpd itself (400 or 431: "-"), or
		 * the client left. */
		if (toe == MHD_REQUEST_TERMINATED_WITH_ERROR && !r->status)
			http_stats_refused(srv, REFUSED_MHD);
		http_log(srv, NULL, NULL, r->status, dur, NULL, NULL);
	}
	if (r->conn)
		http_watch_deadline(
		    r->conn,
		    (srv->cfg.idle_timeout_s + srv->cfg.request_timeout_s) *
			1000LL,
		    false);
	http_req_free(r);
}

void http_req_run(struct http_req *r)
{
	struct http_server *srv = r->srv;
	struct MHD_Connection *mc = r->mhd;

	if (atomic_load(&srv->cancel_all))
		http_gone_raise(&r->gone, HTTP_GONE_SHUTDOWN);
	r->route->handler(srv->cfg.arg, &r->pub, &r->res);
	if (r->st) {
		/* Streamed: the response is queued already (or about to
		 * be); its end is sent when the reader finds the ring empty
		 * (http-stream.c). */
		handed_unlink(r);
		if (http_stream_end(r))
			finish(srv, r, MHD_REQUEST_TERMINATED_WITH_ERROR);
		return;
	}
	if (r->conn)
		http_watch_running(r->conn, NULL);
	handed_unlink(r);
	atomic_store_explicit(&r->state, REQ_DONE, memory_order_release);
	/* r may be freed by libmicrohttpd's thread from here on. */
	sym_MHD_resume_connection(mc);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *con_cls;

	(void)mc;
	if (!r)
		return;
	*con_cls = NULL;
	/* A stream whose handler still runs: the worker finishes it. */
	if (r->st && http_stream_completed(r))
		return;
	finish(cls, r, toe);
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *srv = cls;
	struct http_conn *c = *ctx;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		http_watch_remove(srv, c);
		/* Cut before its request line was whole: no request to log
		 * it. */
		if (c->timed_out && !c->timeout_logged)
			http_log(srv, NULL, NULL, 408,
				 clock_now_ms() - c->conn_start_ms, NULL, NULL);
		atomic_fetch_sub(&srv->nconn, 1);
		free(c);
		*ctx = NULL;
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->srv = srv;
	ci = sym_MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	c->fd = ci ? ci->connect_fd : -1;
	c->conn_start_ms = clock_now_ms();
	/* Its first request must be whole by then (see on_uri). */
	c->deadline_ms =
	    c->conn_start_ms +
	    (srv->cfg.idle_timeout_s + srv->cfg.request_timeout_s) * 1000LL;
	c->over_cap =
	    atomic_fetch_add(&srv->nconn, 1) >= srv->cfg.max_connections;
	http_watch_add(srv, c);
	*ctx = c;
}

static void fill_defaults(struct http_config *c)
{
	if (!c->max_body_bytes)
		c->max_body_bytes = 12 << 20;
	if (!c->max_header_bytes)
		c->max_header_bytes = 32 << 10;
	if (!c->max_connections)
		c->max_connections = 1024;
	if (!c->idle_timeout_s)
		c->idle_timeout_s = 60;
	if (!c->request_timeout_s)
		c->request_timeout_s = 30;
	if (!c->write_timeout_s)
		c->write_timeout_s = c->idle_timeout_s;
	if (!c->quick_workers)
		c->quick_workers = 8;
	if (!c->slow_workers)
		c->slow_workers = 32;
}

/* GnuTLS' priorities: TLS 1.2 and 1.3 only, its NORMAL ciphers. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct MHD_Daemon *http_daemon_start(struct http_server *srv,
				     struct http_listener *l, const char *cert,
				     const char *key)
{
	const struct http_config *c = &srv->cfg;
	/* libmicrohttpd's own cap, above ours so that ours answers 503. */
	unsigned hard = c->max_connections + 16 + c->max_connections / 8;
	size_t pool = st_add(st_mult(c->max_header_bytes, 2), POOL_HEADROOM);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_ALLOW_SUSPEND_RESUME;
	struct MHD_OptionItem tls[] = {
	    {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert},
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key},
	    {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES},
	    {MHD_OPTION_END, 0, NULL},
	};

	if (cert)
		flags |= MHD_USE_TLS;
	return sym_MHD_start_daemon(
	    flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_LISTEN_SOCKET,
	    (MHD_socket)l->fd, MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
	    MHD_OPTION_CONNECTION_LIMIT, hard, MHD_OPTION_CONNECTION_TIMEOUT,
	    c->idle_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_ARRAY,
	    cert ? tls : tls + 3, MHD_OPTION_END);
}

static int start_daemon(struct http_server *srv, struct http_listener *l,
			struct sbx_error **err)
{
	if (l->tls) {
		l->cert = xstrdup(srv->cfg.tls_cert_pem);
		l->key = xstrdup(srv->cfg.tls_key_pem);
	}
	l->mhd = http_daemon_start(srv, l, l->cert, l->key);
	if (!l->mhd)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot serve on '%s'%s", l->spec,
				     l->tls ? " (TLS: libmicrohttpd refused "
					      "the certificate or key)"
					    : "");
	return 0;
}

/* The TLS settings against the listeners: both PEM or neither, an
 * https: listener for them, a library that has TLS, a good pair. */
static int check_tls(struct http_server *srv, struct sbx_error **err)
{
	const struct http_config *c = &srv->cfg;
	const char *https = NULL;

	for (size_t i = 0; i < srv->nls; i++)
		if (srv->ls[i].tls)
			https = srv->ls[i].spec;
	if (!https && !c->tls_cert_pem && !c->tls_key_pem)
		return 0;
	if (!https)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "a TLS certificate and key but no "
				     "https: listener to serve them");
	if (!c->tls_cert_pem || !c->tls_key_pem)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "cannot listen on '%s' without a TLS "
				     "certificate and its key",
				     https);
	if (sym_MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "cannot listen on '%s': this "
				     "libmicrohttpd was built without TLS "
				     "(GnuTLS)",
				     https);
	return http_tls_check(c->tls_cert_pem, c->tls_key_pem, NULL, err);
}

static int start_all(struct http_server *srv, struct sbx_error **err)
{
	const struct http_config *c = &srv->cfg;
	size_t qdepth = c->queue_depth;

	if (check_tls(srv, err) < 0)
		return -1;
	for (size_t i = 0; i < srv->nls; i++)
		if (http_listen_open(&srv->ls[i], err) < 0)
			return -1;
	if (http_watch_start(srv, err) < 0 ||
	    http_pool_start(&srv->pools[0], srv, c->quick_workers,
			    qdepth ? qdepth : 4 * c->quick_workers,
			    c->caller_places, c->caller_workers, err) < 0 ||
	    http_pool_start(&srv->pools[1], srv, c->slow_workers,
			    qdepth ? qdepth : 4 * c->slow_workers,
			    c->caller_places, c->caller_workers, err) < 0)
		return -1;
	for (size_t i = 0; i < srv->nls; i++)
		if (start_daemon(srv, &srv->ls[i], err) < 0)
			return -1;
	return 0;
}

int http_server_start(struct http_server **out, const struct http_config *c,
		      struct sbx_error **err)
{
	struct http_server *srv;

	*out = NULL;
	if (!c->nlisten)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "no address to listen on");
	if (mhd_dl_load(err) < 0)
		return -1;
	srv = xcalloc(1, sizeof(*srv));
	srv->cfg = *c;
	fill_defaults(&srv->cfg);
	pthread_mutex_init(&srv->lock, NULL);
	http_cond_init(&srv->cond);
	http_stats_init(&srv->stats, c->nroutes);
	srv->nls = c->nlisten;
	srv->ls = xcalloc(srv->nls, sizeof(*srv->ls));
	for (size_t i = 0; i < srv->nls; i++) {
		srv->ls[i].spec = xstrdup(c->listen[i].spec);
		srv->ls[i].fd = -1;
		srv->ls[i].tls = http_listen_is_tls(srv->ls[i].spec);
	}
	/* Set before any thread starts: a handler may read *out (the
	 * service's metrics read it from the first request on). */
	*out = srv;
	if (start_all(srv, err) < 0) {
		http_server_stop(srv, 0);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* Wait until no request is active or ms have passed. */
static void wait_active(struct http_server *srv, unsigned ms)
{
	long long end = clock_now_ms() + ms;

	pthread_mutex_lock(&srv->lock);
	while (srv->active && clock_now_ms() < end)
		http_cond_wait_ms(&srv->cond, &srv->lock, 10);
	pthread_mutex_unlock(&srv->lock);
}

static void raise_gone(struct http_server *srv)
{
	atomic_store(&srv->cancel_all, 1);
	pthread_mutex_lock(&srv->lock);
	for (struct http_req *r = srv->handed; r; r = r->hnext)
		http_gone_raise(&r->gone, HTTP_GONE_SHUTDOWN);
	pthread_mutex_unlock(&srv->lock);
}

void http_server_stop(struct http_server *srv, unsigned grace_ms)
{
	if (!srv)
		return;
	atomic_store(&srv->stopping, 1);
	for (size_t i = 0; i < srv->nls; i++) {
		if (srv->ls[i].mhd)
			sym_MHD_quiesce_daemon(srv->ls[i].mhd);
		http_listen_close(&srv->ls[i]);
	}
	wait_active(srv, grace_ms);
	raise_gone(srv);
	http_pool_stop(&srv->pools[0]);
	http_pool_stop(&srv->pools[1]);
	wait_active(srv, FLUSH_MS);
	http_tls_retired_stop(srv);
	for (size_t i = 0; i < srv->nls; i++) {
		if (srv->ls[i].mhd)
			sym_MHD_stop_daemon(srv->ls[i].mhd);
		free(srv->ls[i].spec);
		free(srv->ls[i].cert);
		if (srv->ls[i].key)
			explicit_bzero(srv->ls[i].key, strlen(srv->ls[i].key));
		free(srv->ls[i].key);
	}
	http_watch_stop(srv);
	http_stats_release(&srv->stats);
	pthread_cond_destroy(&srv->cond);
	pthread_mutex_destroy(&srv->lock);
	free(srv->ls);
	free(srv);
}

unsigned http_server_inflight(struct http_server *srv)
{
	return (unsigned)(http_pool_load(&srv->pools[0]) +
			  http_pool_load(&srv->pools[1]));
}

unsigned http_server_port(struct http_server *srv, size_t i)
{
	return i < srv->nls ? srv->ls[i].port : 0;
}

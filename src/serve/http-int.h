/*
 * http-int.h - what the files of the HTTP server share (http.c, the
 * daemons and the request's way through them; http-pool.c, the workers;
 * http-watch.c, the connections' deadlines and the clients gone;
 * http-route.c, routing and the request's copies; http-metrics.c, the
 * counters and the access log).  Not for use outside src/serve/http*.c.
 *
 * Thread rule: a struct http_req is the MHD thread's until it is handed
 * to a pool (http_req.state HANDED), the worker's until it stores DONE
 * (release) and resumes the connection, then the MHD thread's again
 * (acquire).  A streamed response (http-stream.c) is shared instead from
 * the worker's STREAMING (release, the connection resumed) on: the MHD
 * thread queues the response and reads its bytes, the worker writes them,
 * both under http_stream.lock; the request is freed by whichever of
 * on_completed and the worker's end comes last (http_stream.worker,
 * .closed).  struct http_conn's deadline and running are under
 * http_watch.lock, which the close notification also takes: the watcher
 * never touches the descriptor of a connection that has gone.
 */
#ifndef SBX_HTTP_INT_H
#define SBX_HTTP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "basic/alloc.h"
#include "serve/http.h"

struct MHD_Connection;
struct MHD_Daemon;

/* A connection, from libmicrohttpd's STARTED notification to CLOSED. */
struct http_conn {
	struct http_server *srv;
	int fd;
	bool over_cap; /* accepted past max_connections: answered 503 */
	/* Under http_watch.lock: */
	long long deadline_ms;	  /* the request must be whole by then; 0 */
	long long conn_start_ms;  /* accepted */
	struct http_req *running; /* handed to a pool: watched for EOF */
	bool timed_out;		  /* cut at its deadline */
	bool timeout_logged;	  /* libmicrohttpd's thread's */
	struct http_conn *prev, *next;
};

enum http_req_state {
	REQ_READ,
	REQ_HANDED,
	REQ_STREAMING, /* the handler started a streamed response */
	REQ_DONE,
	REQ_ANSWERED
};

/*
 * A streamed response's bytes between the worker that writes them and
 * libmicrohttpd's thread that sends them: a ring of HTTP_STREAM_BUF
 * bytes.  Lock order: http_stream.lock, then libmicrohttpd's own (suspend
 * and resume take its cleanup mutex), then http_watch.lock or
 * http_server.lock; libmicrohttpd calls the reader under its response's
 * mutex, before ours.
 */
#define HTTP_STREAM_BUF (256u << 10)
struct http_stream {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* room made, or the connection gone */
	char *buf;
	size_t rd, n; /* the bytes held: n from buf[rd], wrapping */
	int status;
	const char *type;
	bool suspended; /* the reader found nothing and suspended */
	bool ended;	/* the handler returned */
	bool abort;	/* end with an error: the client is gone or slow */
	bool closed;	/* on_completed ran: mhd and conn are no more */
	bool worker;	/* the handler has not returned yet */
};

/* A header or query argument, copied out of libmicrohttpd's pool. */
struct http_kv {
	char *name, *value;
};

struct http_req {
	struct http_request pub;
	struct http_server *srv;
	struct http_conn *conn;
	struct MHD_Connection *mhd;
	const struct http_route *route; /* NULL: none matched */
	enum http_pool pool;		/* where it runs (the admit hook's) */
	size_t cap;			/* the body it may have */
	int bad_path;			/* 400: a %00; 404: a %2F in the path */
	struct http_req *qnext;		/* its pool's queue */
	size_t route_index;
	bool seen;		  /* the access handler has had it */
	int early;		  /* a status decided before any handler */
	const char *early_detail; /* its {"detail"} (static) */
	bool close;		  /* answer with Connection: close */
	size_t discarded;	  /* body bytes past the limit, dropped */
	struct strbuf body;
	char *method, *path, *segs;
	struct http_kv *hdr, *query;
	size_t nhdr, nquery, hdr_bytes;
	atomic_int gone;
	_Atomic enum http_req_state state;
	struct http_response res;
	/* A streamed response (http_stream_start); NULL: none. */
	struct http_stream *st;
	int status; /* what was queued; 0: none */
	long long start_ms;
	struct http_req *hnext, *hprev; /* srv->handed */
};

/* What one caller holds of a pool: places (reserved, queued and
 * running) and, of them, workers (running). */
struct http_share {
	char caller[96];
	size_t places, running;
};

struct http_workers {
	struct http_server *srv;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t *threads;
	unsigned nthreads;
	/* The queue, oldest first (http_req.qnext). */
	struct http_req *qhead, *qtail;
	/* Requests reserved, queued (len) and running (busy): together at
	 * most limit, the workers and the queue's depth. */
	size_t len, reserved, busy, limit;
	/* The callers holding places now, and one caller's most. */
	struct http_share *shares;
	size_t nshares, ashares, share_places, share_running;
	bool stop;
};

/* http_pool_reserve's answers. */
enum http_place { PLACE_OK, PLACE_FULL, PLACE_SHARE };

struct http_watch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct http_conn *conns;
	pthread_t thread;
	bool started, stop;
};

enum http_refusal {
	REFUSED_413,
	REFUSED_431,
	REFUSED_503,
	REFUSED_TIMEOUT,
	REFUSED_MHD,   /* answered by libmicrohttpd itself: 400, 431 */
	REFUSED_PATH,  /* a path no template can hold: 400, 404 */
	REFUSED_ADMIT, /* the admit hook's refusal: 401, 403, ... */
	REFUSED_429,   /* a caller over its share of a pool */
	REFUSED_N
};

/* Prometheus' default buckets, and the longer ones an exec takes. */
#define HTTP_NBUCKETS 14
struct http_count {
	size_t route; /* index; nroutes: none matched */
	const char *method;
	int status;
	unsigned long long n;
};
struct http_stats {
	pthread_mutex_t lock;
	struct http_count *counts;
	size_t ncounts, alloc;
	/* Per route and one for none: [HTTP_NBUCKETS] each. */
	unsigned long long *buckets, *total;
	double *sum;
	atomic_ullong refused[REFUSED_N];
};

struct http_listener {
	char *spec;
	int fd;
	char *unix_path; /* to remove at stop; NULL for TCP */
	unsigned port;
	bool tls; /* https: */
	struct MHD_Daemon *mhd;
	char *cert, *key; /* the PEM its daemon was started with */
};

/* A daemon replaced at a TLS reload, quiesced (it accepts no more): a
 * thread of its own stops it once its connections are done, or once the
 * server stops (after its workers: none of its connections is suspended
 * then). */
struct http_retired {
	struct http_server *srv;
	struct MHD_Daemon *mhd;
	char *cert, *key; /* the PEM it was started with */
	pthread_t thread;
	bool threaded; /* thread runs (else: stopped with the server) */
	bool done;     /* stopped (under http_server.lock) */
	struct http_retired *next;
};

struct http_server {
	struct http_config cfg; /* with the defaults filled in */
	struct http_listener *ls;
	size_t nls;
	struct http_workers pools[2];
	struct http_watch watch;
	struct http_stats stats;
	atomic_uint nconn;
	atomic_int stopping;   /* no new request */
	atomic_int cancel_all; /* past the grace: every handler's gone */
	pthread_mutex_t lock;  /* active, handed */
	pthread_cond_t cond;
	unsigned active; /* requests seen and not yet completed */
	struct http_req *handed;
	/* TLS: the daemons replaced at reloads (under lock; retire_stop:
	 * stop them now). */
	struct http_retired *retired;
	bool retire_stop;
};

/* http-pool.c */
/* places, running: one caller's share (0: the defaults of http.h). */
int http_pool_start(struct http_workers *p, struct http_server *srv,
		    unsigned nthreads, size_t depth, size_t places,
		    size_t running, struct sbx_error **err);
/* A place for r (its caller's share counted), or why not. */
enum http_place http_pool_reserve(struct http_workers *p,
				  const struct http_req *r);
/* Requests reserved, waiting or running in p now. */
size_t http_pool_load(struct http_workers *p);
/* Queue r into the place reserved. */
void http_pool_push(struct http_workers *p, struct http_req *r);
/* Run what is queued, then end the workers. */
void http_pool_stop(struct http_workers *p);
/* http.c: what a worker does with a request. */
void http_req_run(struct http_req *r);

/* http-watch.c */
/* A condition variable on CLOCK_MONOTONIC, and a wait of at most ms. */
void http_cond_init(pthread_cond_t *cond);
void http_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, long ms);
int http_watch_start(struct http_server *srv, struct sbx_error **err);
void http_watch_stop(struct http_server *srv);
void http_watch_add(struct http_server *srv, struct http_conn *c);
void http_watch_remove(struct http_server *srv, struct http_conn *c);
/* The connection's request deadline: now + s, or none (s < 0); "earlier"
 * keeps an earlier deadline already set. */
void http_watch_deadline(struct http_conn *c, long long ms, bool earlier);
void http_watch_running(struct http_conn *c, struct http_req *r);
/* Whether the watcher cut the connection at its deadline. */
bool http_watch_timed_out(struct http_conn *c);

/* http-tls.c */
/* Stop the retired daemons (their threads joined): at the server's
 * stop, after its workers. */
void http_tls_retired_stop(struct http_server *srv);
/* Start l's daemon with the TLS of cert and key (NULL: plain HTTP);
 * http.c's. */
struct MHD_Daemon *http_daemon_start(struct http_server *srv,
				     struct http_listener *l, const char *cert,
				     const char *key);

/* http-stream.c */
/* The response of a request in REQ_STREAMING, for the MHD thread to
 * queue (NULL: out of memory). */
struct MHD_Response *http_stream_response(struct http_req *r);
/* The handler returned: the connection woken to send the rest.  true
 * when on_completed has run already: the caller then finishes r. */
bool http_stream_end(struct http_req *r);
/* on_completed of a streamed request: true when its handler still runs
 * (the stream is cut, the worker is woken and will finish r). */
bool http_stream_completed(struct http_req *r);
void http_stream_release(struct http_req *r);

/* http-route.c */
/* Match method and path: the route (params filled in r), or NULL with
 * *status 404 or 405. */
const struct http_route *http_route_match(struct http_server *srv,
					  struct http_req *r, int *status);
/* Copy the request's headers and query out of libmicrohttpd. */
void http_req_copy(struct http_req *r, struct MHD_Connection *mc);
void http_req_free(struct http_req *r);

/* http-listen.c: the listener's socket, or -1 with *err; close
 * removes a unix socket's path.  https: is TCP with l->tls set. */
int http_listen_open(struct http_listener *l, struct sbx_error **err);
void http_listen_close(struct http_listener *l);

/* http-metrics.c */
/* The method as a label: the route's, or one of a fixed list, or
 * "OTHER". */
const char *http_method_label(const struct http_req *r);
void http_stats_init(struct http_stats *st, size_t nroutes);
void http_stats_release(struct http_stats *st);
void http_stats_count(struct http_server *srv, const struct http_req *r,
		      long long dur_ms);
void http_stats_refused(struct http_server *srv, enum http_refusal why);
/* One access-log line (method, route may be NULL: "-"). */
void http_log(struct http_server *srv, const char *method, const char *route,
	      int status, long long dur_ms, const char *tenant,
	      const char *session);

#endif

/*
 * http-watch.c - one thread that watches every connection (see http.h):
 *
 * - a request whose headers and body are not whole by its deadline is cut
 *   with shutdown(2): libmicrohttpd's own timeout (idle_timeout_s) only
 *   sees a connection that sends nothing, so a client sending a byte a
 *   second would hold its connection for ever;
 * - the socket of a request handed to a worker is polled for EOF, hangup
 *   or error, and the request's gone flag raised.  libmicrohttpd does not
 *   read a suspended connection, so nothing else would notice.
 *
 * Both touch a descriptor libmicrohttpd owns.  libmicrohttpd 0.9.75 calls
 * the CLOSED notification (MHD_cleanup_connections, daemon.c) before it
 * closes the socket, on its own thread, and the notification takes
 * watch.lock to unlink the connection: so while the watcher holds the
 * lock and sees a connection in its list, the descriptor is still that
 * connection's.  What it does under the lock never blocks: shutdown() and
 * poll() with a zero timeout.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/clock.h"
#include "basic/error.h"
#include "serve/http-int.h"

/* The watcher's tick: a client gone is seen within this (the tests allow
 * 200 ms), a deadline passed within this. */
#define WATCH_TICK_MS 20

/* Cut the connections past their deadline; collect the sockets of the
 * requests running, for poll. */
static size_t sweep(struct http_server *srv, long long now, struct pollfd **pfd,
		    struct http_req ***reqs, size_t *alloc)
{
	size_t n = 0;

	for (struct http_conn *c = srv->watch.conns; c; c = c->next) {
		if (c->deadline_ms && now >= c->deadline_ms) {
			c->deadline_ms = 0;
			c->timed_out = true;
			if (c->fd >= 0)
				shutdown(c->fd, SHUT_RDWR);
			http_stats_refused(srv, REFUSED_TIMEOUT);
		}
		if (!c->running || atomic_load(&c->running->gone))
			continue;
		if (n == *alloc) {
			*alloc = alloc_nr(*alloc, n + 1);
			*pfd = xrealloc(*pfd, st_mult(*alloc, sizeof(**pfd)));
			*reqs =
			    xrealloc(*reqs, st_mult(*alloc, sizeof(**reqs)));
		}
		(*pfd)[n] = (struct pollfd){.fd = c->fd, .events = POLLRDHUP};
		(*reqs)[n++] = c->running;
	}
	return n;
}

static void watch_gone(struct pollfd *pfd, struct http_req **reqs, size_t n)
{
	if (!n || poll(pfd, n, 0) <= 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
			http_gone_raise(&reqs[i]->gone, HTTP_GONE_CLIENT);
}

void http_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

void http_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += ms % 1000 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cond, lock, &ts);
}

static void *watcher(void *arg)
{
	struct http_server *srv = arg;
	struct http_watch *w = &srv->watch;
	struct pollfd *pfd = NULL;
	struct http_req **reqs = NULL;
	size_t alloc = 0;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		size_t n = sweep(srv, clock_now_ms(), &pfd, &reqs, &alloc);
		watch_gone(pfd, reqs, n);
		http_cond_wait_ms(&w->cond, &w->lock, WATCH_TICK_MS);
	}
	pthread_mutex_unlock(&w->lock);
	free(pfd);
	free(reqs);
	return NULL;
}

int http_watch_start(struct http_server *srv, struct sbx_error **err)
{
	struct http_watch *w = &srv->watch;
	int rc;

	pthread_mutex_init(&w->lock, NULL);
	http_cond_init(&w->cond);
	rc = pthread_create(&w->thread, NULL, watcher, srv);
	if (rc)
		return sbx_error_set(err, SBX_E_INTERNAL, rc,
				     "cannot start the connection watcher");
	w->started = true;
	return 0;
}

void http_watch_stop(struct http_server *srv)
{
	struct http_watch *w = &srv->watch;

	if (!w->started)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->started = false;
}

void http_watch_add(struct http_server *srv, struct http_conn *c)
{
	struct http_watch *w = &srv->watch;

	pthread_mutex_lock(&w->lock);
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	pthread_mutex_unlock(&w->lock);
}

void http_watch_remove(struct http_server *srv, struct http_conn *c)
{
	struct http_watch *w = &srv->watch;

	pthread_mutex_lock(&w->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&w->lock);
}

void http_watch_deadline(struct http_conn *c, long long ms, bool earlier)
{
	struct http_watch *w = &c->srv->watch;
	long long d = ms < 0 ? 0 : clock_now_ms() + ms;

	pthread_mutex_lock(&w->lock);
	if (!earlier || !c->deadline_ms || d < c->deadline_ms)
		c->deadline_ms = d;
	pthread_mutex_unlock(&w->lock);
}

void http_watch_running(struct http_conn *c, struct http_req *r)
{
	struct http_watch *w = &c->srv->watch;

	pthread_mutex_lock(&w->lock);
	c->running = r;
	pthread_mutex_unlock(&w->lock);
}

bool http_watch_timed_out(struct http_conn *c)
{
	struct http_watch *w = &c->srv->watch;
	bool t;

	pthread_mutex_lock(&w->lock);
	t = c->timed_out;
	pthread_mutex_unlock(&w->lock);
	return t;
}

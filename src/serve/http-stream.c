/*
 * http-stream.c - streamed responses (http_stream_start, _write; see
 * http.h): the bytes a handler writes on its worker go out on
 * libmicrohttpd's thread as the client takes them.
 *
 * http_stream_start makes the request STREAMING and resumes the
 * connection (suspended since it was handed over); libmicrohttpd calls the
 * access handler again, which queues a callback response of unknown size
 * (chunked on HTTP/1.1, the end by closing on HTTP/1.0) with the
 * handler's status, type and headers.  Its reader hands out what the
 * worker put in the ring (http_stream, HTTP_STREAM_BUF).  When the ring is
 * empty and the handler still runs, the reader suspends the connection
 * and returns 0 (what microhttpd.h says a content reader must do instead
 * of returning 0 alone, which libmicrohttpd's internal polling thread
 * would call again at once: a busy loop); the next write, or the
 * handler's end, resumes it.  Suspend and resume are both called under
 * http_stream.lock, so a resume never comes before its suspend (undefined
 * in libmicrohttpd 0.9.75: "calling this function on a connection that
 * was not previously suspended").  A suspended connection has no
 * timeout: a stream may be silent as long as its handler likes, and the
 * watcher (http-watch.c) still sees the client go.
 *
 * A write waits while the ring is full, for at most write_timeout_s
 * without the client taking a byte; past it, or once the client is gone
 * (the watcher's EOF, or libmicrohttpd closing the connection: an error
 * writing, its idle timeout), it fails and raises req->gone, and the
 * reader ends the response with an error (the connection closed).  At
 * the server's stop past the grace the writes fail too, but what is held
 * is still sent and the response ended properly.
 *
 * Once streaming, the connection is live while the handler runs, so
 * libmicrohttpd may finish with it (on_completed) first: then the
 * request is the worker's to finish (the access-log line, the counters,
 * the free) when the handler returns.
 */
#include "config.h"

#include <string.h>

#include "basic/clock.h"
#include "serve/http-int.h"
#include "serve/mhd-dl.h"

/* How often a write waiting for room looks at req->gone (the watcher
 * raises it without a signal of ours). */
#define STREAM_POLL_MS 50
/* What libmicrohttpd asks of the reader at most. */
#define STREAM_BLOCK (16u << 10)

/* Under st->lock: wake the reader. */
static void wake(struct http_req *r)
{
	struct http_stream *st = r->st;

	if (st->suspended && !st->closed) {
		st->suspended = false;
		sym_MHD_resume_connection(r->mhd);
	}
}

int http_stream_start(struct http_request *req, int status,
		      const char *content_type)
{
	struct http_req *r = req->priv;
	struct http_stream *st;

	if (r->st || atomic_load(&r->state) != REQ_HANDED)
		return -1;
	st = xcalloc(1, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	http_cond_init(&st->cond);
	st->buf = xmalloc(HTTP_STREAM_BUF);
	st->status = status;
	st->type = content_type;
	st->worker = true;
	r->st = st;
	atomic_store_explicit(&r->state, REQ_STREAMING, memory_order_release);
	/* Suspended by hand_over; the access handler queues the response. */
	sym_MHD_resume_connection(r->mhd);
	return 0;
}

int http_stream_write(struct http_request *req, const void *buf, size_t len)
{
	struct http_req *r = req->priv;
	struct http_stream *st = r->st;
	long long wait_ms, last;
	const char *p = buf;
	int rc = 0;

	if (!st)
		return -1;
	wait_ms = r->srv->cfg.write_timeout_s * 1000LL;
	last = clock_now_ms();
	pthread_mutex_lock(&st->lock);
	while (len) {
		size_t at, n;

		if (st->closed || st->abort || atomic_load(&r->gone)) {
			rc = -1;
			break;
		}
		if (st->n == HTTP_STREAM_BUF) {
			long long left = last + wait_ms - clock_now_ms();

			if (left <= 0) {
				/* The client took nothing for the timeout. */
				http_gone_raise(&r->gone, HTTP_GONE_CLIENT);
				st->abort = true;
				wake(r);
				rc = -1;
				break;
			}
			http_cond_wait_ms(
			    &st->cond, &st->lock,
			    left < STREAM_POLL_MS ? left : STREAM_POLL_MS);
			continue;
		}
		at = (st->rd + st->n) % HTTP_STREAM_BUF;
		n = HTTP_STREAM_BUF - st->n;
		if (n > HTTP_STREAM_BUF - at)
			n = HTTP_STREAM_BUF - at;
		if (n > len)
			n = len;
		memcpy(st->buf + at, p, n);
		st->n += n;
		p += n;
		len -= n;
		last = clock_now_ms();
		wake(r);
	}
	pthread_mutex_unlock(&st->lock);
	return rc;
}

bool http_streaming(const struct http_request *req)
{
	const struct http_req *r = req->priv;

	return r->st;
}

/* libmicrohttpd's content reader, on its thread. */
static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_req *r = cls;
	struct http_stream *st = r->st;
	ssize_t ret;

	(void)pos;
	pthread_mutex_lock(&st->lock);
	if (st->abort) {
		ret = MHD_CONTENT_READER_END_WITH_ERROR;
	} else if (st->n) {
		size_t n = st->n < max ? st->n : max;

		if (n > HTTP_STREAM_BUF - st->rd)
			n = HTTP_STREAM_BUF - st->rd;
		memcpy(out, st->buf + st->rd, n);
		st->rd = (st->rd + n) % HTTP_STREAM_BUF;
		st->n -= n;
		pthread_cond_signal(&st->cond);
		ret = (ssize_t)n;
	} else if (st->ended) {
		ret = MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		st->suspended = true;
		sym_MHD_suspend_connection(r->mhd);
		ret = 0;
	}
	pthread_mutex_unlock(&st->lock);
	return ret;
}

struct MHD_Response *http_stream_response(struct http_req *r)
{
	return sym_MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, STREAM_BLOCK, reader, r, NULL);
}

bool http_stream_end(struct http_req *r)
{
	struct http_stream *st = r->st;
	bool closed;

	pthread_mutex_lock(&st->lock);
	st->ended = true;
	st->worker = false;
	if (atomic_load(&r->gone) == HTTP_GONE_CLIENT)
		st->abort = true;
	closed = st->closed;
	if (!closed) {
		if (r->conn)
			http_watch_running(r->conn, NULL);
		wake(r);
	}
	pthread_mutex_unlock(&st->lock);
	/* Unless closed, r may be freed by libmicrohttpd's thread now. */
	return closed;
}

bool http_stream_completed(struct http_req *r)
{
	struct http_stream *st = r->st;
	bool running;

	pthread_mutex_lock(&st->lock);
	running = st->worker;
	if (running) {
		st->closed = true;
		st->abort = true;
		http_gone_raise(&r->gone, HTTP_GONE_CLIENT);
		if (r->conn)
			http_watch_running(r->conn, NULL);
		/* The connection and its socket are about to go. */
		r->conn = NULL;
		r->mhd = NULL;
		pthread_cond_broadcast(&st->cond);
	}
	pthread_mutex_unlock(&st->lock);
	return running;
}

void http_stream_release(struct http_req *r)
{
	struct http_stream *st = r->st;

	if (!st)
		return;
	pthread_cond_destroy(&st->cond);
	pthread_mutex_destroy(&st->lock);
	free(st->buf);
	free(st);
	r->st = NULL;
}

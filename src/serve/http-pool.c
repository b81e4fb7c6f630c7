/*
 * http-pool.c - the fixed pools of workers a route's handler runs on
 * (see http.h: quick and slow), each with a bounded queue.
 *
 * A request takes its place (http_pool_reserve: a worker, or the
 * queue's depth when every worker is busy) before its
 * connection is suspended, so a full queue is answered 503 at once on
 * libmicrohttpd's thread and a suspended connection always has a worker
 * coming.  Workers are made once, at start: 1,000 connections are still
 * these few threads.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "basic/error.h"
#include "serve/http-int.h"

static void *worker(void *arg)
{
	struct http_workers *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->len && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->len)
			break;
		struct http_req *r = p->ring[p->head];
		p->head = (p->head + 1) % p->cap;
		p->len--;
		p->busy++;
		pthread_mutex_unlock(&p->lock);
		http_req_run(r);
		pthread_mutex_lock(&p->lock);
		p->busy--;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int http_pool_start(struct http_workers *p, struct http_server *srv,
		    unsigned nthreads, size_t depth, struct sbx_error **err)
{
	int rc;

	p->srv = srv;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	/* depth requests wait beside the nthreads running; until the
	 * workers take theirs, all of them may be in the ring at once (a
	 * burst counted against the queue alone would be refused while
	 * workers sat idle). */
	p->limit = nthreads + depth;
	p->cap = p->limit ? p->limit : 1;
	p->ring = xcalloc(p->cap, sizeof(*p->ring));
	p->threads = xcalloc(nthreads, sizeof(*p->threads));
	for (p->nthreads = 0; p->nthreads < nthreads; p->nthreads++) {
		rc = pthread_create(&p->threads[p->nthreads], NULL, worker, p);
		if (rc)
			return sbx_error_set(err, SBX_E_INTERNAL, rc,
					     "cannot start a worker thread");
	}
	return 0;
}

bool http_pool_reserve(struct http_workers *p)
{
	bool ok;

	pthread_mutex_lock(&p->lock);
	ok = !p->stop && p->len + p->reserved + p->busy < p->limit;
	if (ok)
		p->reserved++;
	pthread_mutex_unlock(&p->lock);
	return ok;
}

size_t http_pool_load(struct http_workers *p)
{
	size_t n;

	if (!p->ring)
		return 0;
	pthread_mutex_lock(&p->lock);
	n = p->len + p->reserved + p->busy;
	pthread_mutex_unlock(&p->lock);
	return n;
}

void http_pool_push(struct http_workers *p, struct http_req *r)
{
	pthread_mutex_lock(&p->lock);
	p->reserved--;
	p->ring[(p->head + p->len) % p->cap] = r;
	p->len++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void http_pool_stop(struct http_workers *p)
{
	if (!p->ring)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	free(p->ring);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	memset(p, 0, sizeof(*p));
}

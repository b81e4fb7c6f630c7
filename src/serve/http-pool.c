/*
 * http-pool.c - the fixed pools of workers a route's handler runs on
 * (see http.h: quick and slow), each with a bounded queue, shared fairly
 * between callers.
 *
 * A request takes its place (http_pool_reserve: a worker, or the
 * queue's depth when every worker is busy) before its
 * connection is suspended, so a full queue is answered 503 at once on
 * libmicrohttpd's thread and a suspended connection always has a worker
 * coming.  Workers are made once, at start: 1,000 connections are still
 * these few threads.
 *
 * Fair shares (issue 28): one caller (the admit hook's req->caller: a
 * session, a tenant) holds at most share_places of a pool's places and
 * runs on at most share_running of its workers.  Past its places it is
 * refused (429); a worker takes the oldest queued request whose caller
 * runs fewer than its share, so requests of other callers behind a
 * flood are not kept waiting for all of it.  A request with no caller
 * ("") has no share.  The queue is a list scanned from its head: it is
 * at most workers + depth long.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/error.h"
#include "serve/http-int.h"

static struct http_share *share_of(struct http_workers *p, const char *caller,
				   bool make)
{
	if (!*caller)
		return NULL;
	for (size_t i = 0; i < p->nshares; i++)
		if (strcmp(p->shares[i].caller, caller) == 0)
			return &p->shares[i];
	if (!make)
		return NULL;
	ALLOC_GROW(p->shares, p->nshares + 1, p->ashares);
	memset(&p->shares[p->nshares], 0, sizeof(p->shares[0]));
	snprintf(p->shares[p->nshares].caller, sizeof(p->shares[0].caller),
		 "%s", caller);
	return &p->shares[p->nshares++];
}

/* One place of caller's given back (under p->lock). */
static void share_put(struct http_workers *p, const char *caller)
{
	struct http_share *sh = share_of(p, caller, false);

	if (!sh)
		return;
	sh->places--;
	if (!sh->places)
		*sh = p->shares[--p->nshares];
}

/* The oldest queued request whose caller may run one more, unlinked
 * (under p->lock); NULL when none may. */
static struct http_req *take(struct http_workers *p)
{
	struct http_req *prev = NULL;

	for (struct http_req *r = p->qhead; r; prev = r, r = r->qnext) {
		struct http_share *sh = share_of(p, r->pub.caller, false);

		if (sh && sh->running >= p->share_running)
			continue;
		if (prev)
			prev->qnext = r->qnext;
		else
			p->qhead = r->qnext;
		if (p->qtail == r)
			p->qtail = prev;
		r->qnext = NULL;
		if (sh)
			sh->running++;
		return r;
	}
	return NULL;
}

static void *worker(void *arg)
{
	struct http_workers *p = arg;
	struct http_share *sh;
	struct http_req *r;
	/* The caller's name outlives r: r is freed once answered. */
	char caller[sizeof(r->pub.caller)];

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!(r = take(p)) && !(p->stop && !p->len))
			pthread_cond_wait(&p->cond, &p->lock);
		if (!r)
			break;
		p->len--;
		p->busy++;
		memcpy(caller, r->pub.caller, sizeof(caller));
		pthread_mutex_unlock(&p->lock);
		http_req_run(r);
		pthread_mutex_lock(&p->lock);
		p->busy--;
		sh = share_of(p, caller, false);
		if (sh)
			sh->running--;
		share_put(p, caller);
		/* A request of this caller may be eligible now. */
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int http_pool_start(struct http_workers *p, struct http_server *srv,
		    unsigned nthreads, size_t depth, size_t places,
		    size_t running, struct sbx_error **err)
{
	int rc;

	p->srv = srv;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	/* depth requests wait beside the nthreads running; until the
	 * workers take theirs, all of them may be in the queue at once (a
	 * burst counted against the queue alone would be refused while
	 * workers sat idle). */
	p->limit = nthreads + depth;
	p->share_places = places ? places : p->limit / 4;
	if (p->share_places < 2)
		p->share_places = 2;
	p->share_running = running ? running : nthreads / 2;
	if (p->share_running < 1)
		p->share_running = 1;
	p->threads = xcalloc(nthreads ? nthreads : 1, sizeof(*p->threads));
	for (p->nthreads = 0; p->nthreads < nthreads; p->nthreads++) {
		rc = pthread_create(&p->threads[p->nthreads], NULL, worker, p);
		if (rc)
			return sbx_error_set(err, SBX_E_INTERNAL, rc,
					     "cannot start a worker thread");
	}
	return 0;
}

enum http_place http_pool_reserve(struct http_workers *p,
				  const struct http_req *r)
{
	enum http_place ok = PLACE_OK;
	struct http_share *sh;

	pthread_mutex_lock(&p->lock);
	sh = share_of(p, r->pub.caller, false);
	if (p->stop || p->len + p->reserved + p->busy >= p->limit)
		ok = PLACE_FULL;
	else if (sh && sh->places >= p->share_places)
		ok = PLACE_SHARE;
	if (ok == PLACE_OK) {
		p->reserved++;
		sh = share_of(p, r->pub.caller, true);
		if (sh)
			sh->places++;
	}
	pthread_mutex_unlock(&p->lock);
	return ok;
}

size_t http_pool_load(struct http_workers *p)
{
	size_t n;

	if (!p->threads)
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
	r->qnext = NULL;
	if (p->qtail)
		p->qtail->qnext = r;
	else
		p->qhead = r;
	p->qtail = r;
	p->len++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void http_pool_stop(struct http_workers *p)
{
	if (!p->threads)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	free(p->shares);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	memset(p, 0, sizeof(*p));
}

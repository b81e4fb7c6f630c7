/*
 * auditdb-pool.c - the service's pool of database connections for its
 * reads (auditdb.h): a stack of idle connections under one mutex,
 * connections made and closed outside it.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "audit/auditdb.h"
#include "basic/alloc.h"
#include "basic/error.h"

struct auditdb_pool {
	char *conninfo, *connect_timeout;
	size_t max;
	pthread_mutex_t lock;
	pthread_cond_t freed; /* a slot given back */
	struct auditdb **idle;
	size_t nidle, busy;
	struct auditdb_pool_stats st;
};

struct auditdb_pool *auditdb_pool_new(const char *conninfo,
				      const char *connect_timeout, size_t max)
{
	struct auditdb_pool *p = xcalloc(1, sizeof(*p));

	p->conninfo = xstrdup(conninfo ? conninfo : "");
	p->connect_timeout = connect_timeout ? xstrdup(connect_timeout) : NULL;
	p->max = max ? max : 1;
	p->idle = xcalloc(p->max, sizeof(*p->idle));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->freed, NULL);
	return p;
}

int auditdb_pool_get(struct auditdb_pool *p, struct auditdb **db,
		     struct sbx_error **err)
{
	*db = NULL;
	pthread_mutex_lock(&p->lock);
	while (!p->nidle && p->busy >= p->max)
		pthread_cond_wait(&p->freed, &p->lock);
	p->busy++;
	if (p->nidle)
		*db = p->idle[--p->nidle];
	pthread_mutex_unlock(&p->lock);
	if (*db)
		return 0;
	if (auditdb_connect(p->conninfo, p->connect_timeout, db, err) == 0) {
		pthread_mutex_lock(&p->lock);
		p->st.made++;
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	pthread_mutex_lock(&p->lock);
	p->busy--;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->lock);
	return -1;
}

void auditdb_pool_put(struct auditdb_pool *p, struct auditdb *db)
{
	bool keep;

	if (!db)
		return;
	keep = auditdb_reusable(db);
	pthread_mutex_lock(&p->lock);
	p->busy--;
	if (keep)
		p->idle[p->nidle++] = db;
	else
		p->st.dropped++;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->lock);
	if (!keep)
		auditdb_close(db);
}

void auditdb_pool_stats(struct auditdb_pool *p, struct auditdb_pool_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	st->idle = p->nidle;
	st->busy = p->busy;
	pthread_mutex_unlock(&p->lock);
}

void auditdb_pool_free(struct auditdb_pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nidle; i++)
		auditdb_close(p->idle[i]);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->freed);
	free(p->idle);
	free(p->conninfo);
	free(p->connect_timeout);
	free(p);
}

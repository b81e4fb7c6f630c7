/*
 * audit-writer.c - the service's audit writer (audit-writer.h): a caller
 * that finds the writer idle commits its row itself on a connection of the
 * writer's small pool (struct direct); the others queue a slot on their own
 * stack naming their row and wait on it; the writer thread takes the whole
 * queue, commits it in one transaction (or spools it), marks every slot
 * done and wakes them all.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit-writer.h"
#include "audit/auditdb.h"
#include "audit/spool.h"
#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"

/* One caller's row, on the caller's stack while it waits.  Its own
 * condition: the writer wakes the callers of the group it committed,
 * not every caller waiting (half of them are in the next group). */
struct slot {
	const struct audit_row *row;
	pthread_cond_t wake;
	bool done;
	bool maybe_there; /* its caller's own commit failed: it may be in */
	int rc;
	enum audit_where where;
	struct sbx_error *err;
};

/* A connection of the callers' own (audit-writer.h, "the direct
 * path"), with a spool handle to see whether rows wait there.  busy under
 * w->lock; db and spool are the taker's alone while it is busy. */
struct direct {
	bool busy;
	struct auditdb *db; /* NULL: connected on first use */
	struct spool spool; /* spool_pending only */
};

struct audit_writer {
	bool off;
	pthread_t thread;
	/* Under lock: the queue, the state, the counters. */
	pthread_mutex_t lock;
	pthread_cond_t work; /* to the writer: rows queued, or stop */
	pthread_cond_t done; /* to callers: room in the queue; to stop */
	int room_waits;	     /* callers waiting for room */
	struct slot *queue[AUDIT_WRITER_QUEUE_MAX];
	size_t nqueue;
	bool stopping, exited;
	int callers; /* inside audit_writer_record: stop waits for them */
	bool busy;   /* the writer has a group in hand */
	int ndirect; /* callers committing their own row */
	bool
	    direct_hold; /* a caller's commit failed: until the writer's next */
	struct direct direct[AUDIT_WRITER_DIRECT_MAX];
	bool db_up;
	char *db_why; /* why the database is down */
	struct audit_writer_stats st;
	/* audit_ready's spool, under ready_lock. */
	pthread_mutex_t ready_lock;
	struct spool ready;
	/* The writer thread's alone (and the starter's before it runs). */
	char *conninfo, *connect_timeout;
	struct auditdb *db;
	struct spool spool;
	long long retry_at, backoff; /* clock_now_ms(); ms */
	struct slot *batch[AUDIT_WRITER_QUEUE_MAX];
	struct audit_row rows[AUDIT_WRITER_QUEUE_MAX];
};

bool audit_writer_off(const struct audit_writer *w)
{
	return w->off;
}

/* ---- the database's state ---- */

static void set_down(struct audit_writer *w, struct sbx_error **why)
{
	long long now = clock_now_ms();

	pthread_mutex_lock(&w->lock);
	w->db_up = false;
	free(w->db_why);
	w->db_why = xstrdup(*why ? (*why)->msg : "?");
	pthread_mutex_unlock(&w->lock);
	sbx_error_free(why);
	w->retry_at = now + w->backoff;
	w->backoff *= 2;
	if (w->backoff > AUDIT_WRITER_RETRY_MAX_MS)
		w->backoff = AUDIT_WRITER_RETRY_MAX_MS;
}

/* Forget a connection that failed. */
static void drop_db(struct audit_writer *w, struct sbx_error **why)
{
	auditdb_close(w->db);
	w->db = NULL;
	set_down(w, why);
}

static void count(struct audit_writer *w, unsigned long long *field,
		  unsigned long long n)
{
	pthread_mutex_lock(&w->lock);
	*field += n;
	pthread_mutex_unlock(&w->lock);
}

/* The replay's sink: the writer's connection. */
static int replay_batch(void *arg, const struct audit_row *rows, size_t n,
			struct sbx_error **err)
{
	struct audit_writer *w = arg;
	size_t inserted, skipped;

	if (auditdb_insert(w->db, rows, n, &inserted, &skipped, err) < 0)
		return -1;
	count(w, &w->st.replayed, inserted);
	return 0;
}

/* A non-empty spool into the database, waiting for a replay another
 * process holds: what follows must come after it in its chain. */
static int replay(struct audit_writer *w, struct sbx_error **err)
{
	unsigned long long moved, kept;

	if (!spool_pending(&w->spool))
		return 0;
	return spool_replay(&w->spool, true, replay_batch, w, &moved, &kept,
			    err);
}

static void reconnect(struct audit_writer *w)
{
	struct sbx_error *err = NULL;

	if (auditdb_connect(w->conninfo, w->connect_timeout, &w->db, &err) <
	    0) {
		set_down(w, &err);
		return;
	}
	if (replay(w, &err) < 0) {
		drop_db(w, &err);
		return;
	}
	w->backoff = AUDIT_WRITER_RETRY_MIN_MS;
	pthread_mutex_lock(&w->lock);
	w->db_up = true;
	w->direct_hold = false;
	pthread_mutex_unlock(&w->lock);
}

static bool retry_due(const struct audit_writer *w)
{
	return !w->db && w->conninfo && clock_now_ms() >= w->retry_at;
}

/* ---- a group ---- */

static void group_to_spool(struct audit_writer *w, size_t n)
{
	unsigned long long spooled = 0, lost = 0;

	for (size_t i = 0; i < n; i++) {
		struct slot *s = w->batch[i];
		struct sbx_error *e = NULL;

		if (spool_append(&w->spool, &w->rows[i], &e) == 0) {
			s->where = AUDIT_TO_SPOOL;
			spooled++;
			continue;
		}
		spool_note_lost(&w->spool, &w->rows[i]);
		/* db_why is written by this thread only: read unlocked */
		s->rc =
		    audit_both_failed(w->db_why ? w->db_why : "?", &e, &s->err);
		lost++;
	}
	pthread_mutex_lock(&w->lock);
	w->st.spooled += spooled;
	w->st.lost += lost;
	pthread_mutex_unlock(&w->lock);
}

/* The group into the database: as fresh rows, unless one of them may be
 * there already (its caller's own commit failed, perhaps after the
 * server took it): then each row's key is looked up first, as a
 * replay's is. */
static int insert_group(struct audit_writer *w, size_t n, size_t *inserted,
			struct sbx_error **err)
{
	size_t skipped;

	for (size_t i = 0; i < n; i++)
		if (w->batch[i]->maybe_there)
			return auditdb_insert(w->db, w->rows, n, inserted,
					      &skipped, err);
	return auditdb_insert_fresh(w->db, w->rows, n, inserted, err);
}

static void write_group(struct audit_writer *w, size_t n)
{
	struct sbx_error *err = NULL;
	size_t inserted;

	for (size_t i = 0; i < n; i++)
		w->rows[i] = *w->batch[i]->row; /* borrowed: its caller waits */
	if (w->db && replay(w, &err) < 0)
		drop_db(w, &err);
	if (w->db && insert_group(w, n, &inserted, &err) == 0) {
		for (size_t i = 0; i < n; i++)
			w->batch[i]->where = AUDIT_TO_DB;
		pthread_mutex_lock(&w->lock);
		w->st.written += inserted;
		w->st.groups++;
		w->direct_hold = false;
		pthread_mutex_unlock(&w->lock);
		return;
	}
	if (w->db)
		drop_db(w, &err);
	group_to_spool(w, n);
}

/* ---- the thread ---- */

/* Wait (w->lock held) for rows, a stop, or the time to reconnect. */
static void wait_work(struct audit_writer *w)
{
	struct timespec ts;
	long long left;

	if (w->db || !w->conninfo) {
		pthread_cond_wait(&w->work, &w->lock);
		return;
	}
	left = w->retry_at - clock_now_ms();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (left % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&w->work, &w->lock, &ts);
}

/* Take the queue (w->lock held): room for the callers waiting. */
static size_t take(struct audit_writer *w)
{
	size_t n = w->nqueue;

	memcpy(w->batch, w->queue, n * sizeof(*w->batch));
	w->nqueue = 0;
	if (n && w->room_waits)
		pthread_cond_broadcast(&w->done);
	return n;
}

static void *writer_main(void *arg)
{
	struct audit_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		size_t n;

		while (!w->nqueue && !w->stopping && !retry_due(w))
			wait_work(w);
		/* A caller committing its own row may still hand it over
		 * (its commit failed): the writer stays for it. */
		if (!w->nqueue && w->stopping && !w->ndirect)
			break;
		if (!w->nqueue && w->stopping && !retry_due(w)) {
			wait_work(w);
			continue;
		}
		n = take(w);
		w->busy = n > 0;
		pthread_mutex_unlock(&w->lock);
		if (retry_due(w))
			reconnect(w);
		if (n)
			write_group(w, n);
		pthread_mutex_lock(&w->lock);
		/* Once done is set the caller may return (its slot goes
		 * with its stack): signalled first, under the lock. */
		for (size_t i = 0; i < n; i++) {
			pthread_cond_signal(&w->batch[i]->wake);
			w->batch[i]->done = true;
		}
		w->busy = false;
		/* Then at once the next group: the rows queued while this one
		 * committed are taken without waiting for more. */
	}
	w->exited = true;
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* ---- the interface ---- */

static void writer_free(struct audit_writer *w)
{
	for (size_t i = 0; i < AUDIT_WRITER_DIRECT_MAX; i++) {
		auditdb_close(w->direct[i].db);
		spool_close(&w->direct[i].spool);
	}
	auditdb_close(w->db);
	spool_close(&w->spool);
	spool_close(&w->ready);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->ready_lock);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->done);
	free(w->db_why);
	free(w->conninfo);
	free(w->connect_timeout);
	free(w);
}

static void writer_init(struct audit_writer *w, const struct audit_config *c)
{
	const char *conninfo = audit_config_db(c, NULL);
	pthread_condattr_t ca;

	w->off = c->off;
	w->conninfo = conninfo && !c->off ? xstrdup(conninfo) : NULL;
	w->connect_timeout =
	    c->connect_timeout ? xstrdup(c->connect_timeout) : NULL;
	w->db_why = xstrdup("no database configured");
	w->backoff = AUDIT_WRITER_RETRY_MIN_MS;
	spool_init(&w->spool, c);
	spool_init(&w->ready, c);
	for (size_t i = 0; i < AUDIT_WRITER_DIRECT_MAX; i++)
		spool_init(&w->direct[i].spool, c);
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->ready_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->work, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&w->done, NULL);
}

int audit_writer_start(struct audit_writer **out, const struct audit_config *c,
		       struct sbx_error **err)
{
	struct audit_writer *w = xcalloc(1, sizeof(*w));
	int e;

	*out = NULL;
	writer_init(w, c);
	if (w->conninfo)
		reconnect(w);
	e = pthread_create(&w->thread, NULL, writer_main, w);
	if (e) {
		writer_free(w);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "the audit's writer thread");
	}
	*out = w;
	return 0;
}

void audit_writer_stop(struct audit_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	/* A caller woken by the last group may still be on its way out of
	 * the lock: the writer is freed only once every one has left. */
	pthread_mutex_lock(&w->lock);
	while (w->callers)
		pthread_cond_wait(&w->done, &w->lock);
	pthread_mutex_unlock(&w->lock);
	writer_free(w);
}

void audit_writer_stats(struct audit_writer *w, struct audit_writer_stats *st)
{
	pthread_mutex_lock(&w->lock);
	*st = w->st;
	st->queued = w->nqueue;
	st->inside = w->callers;
	st->db_up = w->db_up;
	pthread_mutex_unlock(&w->lock);
}

int audit_writer_ready(struct audit_writer *w, struct sbx_error **err)
{
	struct sbx_error *serr = NULL;
	char *why = NULL;
	int rc;

	pthread_mutex_lock(&w->ready_lock);
	rc = spool_ready(&w->ready, &serr);
	pthread_mutex_unlock(&w->ready_lock);
	if (rc == 0)
		return 0;
	/* As the command line's recorder (recorder.c): the message says
	 * whether the database answers; a limit set wrong is its own. */
	pthread_mutex_lock(&w->lock);
	if (!w->db_up)
		why = xstrdup(w->db_why);
	pthread_mutex_unlock(&w->lock);
	if (serr->kind != SBX_E_INVALID && why) {
		rc = audit_both_failed(why, &serr, err);
		free(why);
		return rc;
	}
	if (serr->kind != SBX_E_INVALID)
		sbx_error_wrap(&serr,
			       "audit record could not be written should the "
			       "database fail: spool");
	free(why);
	*err = serr;
	return -1;
}

/* ---- the direct path ---- */

/*
 * A connection for the caller to commit its own row on (w->lock held), or
 * NULL: only while the writer is idle (no group in hand, none queued), its
 * database up and no caller's commit has failed since its last one, so a
 * caller alone pays no hand-over to a thread and back; under load the
 * rows queue and are committed in groups as before.
 */
static struct direct *direct_take(struct audit_writer *w)
{
	if (!w->conninfo || !w->db_up || w->direct_hold || w->busy ||
	    w->nqueue || w->stopping || w->exited)
		return NULL;
	for (size_t i = 0; i < AUDIT_WRITER_DIRECT_MAX; i++)
		if (!w->direct[i].busy) {
			w->direct[i].busy = true;
			w->ndirect++;
			return &w->direct[i];
		}
	return NULL;
}

/*
 * r committed on d (w->lock not held): 0, or -1 when the row is to go to
 * the writer after all, *broke set when d could not connect or commit
 * and *tried when the commit was sent (it may have been taken).  A spool that
 * holds rows is never jumped: the writer replays it before its next group, so
 * each session's rows stay in the order they were made (a row spooled by this
 * process is fsync'd before its caller is woken, hence seen here by the
 * caller's next row).
 */
static int direct_write(struct audit_writer *w, struct direct *d,
			const struct audit_row *r, bool *broke, bool *tried)
{
	struct sbx_error *err = NULL;
	size_t inserted;

	if (spool_pending(&d->spool))
		return -1;
	*broke = true;
	if (!d->db && auditdb_connect(w->conninfo, w->connect_timeout, &d->db,
				      &err) < 0) {
		sbx_error_free(&err);
		return -1;
	}
	*tried = true;
	if (auditdb_insert_fresh(d->db, r, 1, &inserted, &err) == 0) {
		*broke = false;
		return 0;
	}
	sbx_error_free(&err);
	auditdb_close(d->db);
	d->db = NULL;
	return -1;
}

/* d given back (w->lock held); ok: the row committed; broke: d failed. */
static void direct_give(struct audit_writer *w, struct direct *d, bool ok,
			bool broke)
{
	d->busy = false;
	w->ndirect--;
	if (ok) {
		w->st.written++;
		w->st.direct++;
	} else if (broke) {
		/* The others hand over until the writer's next commit. */
		w->direct_hold = true;
	}
	if (w->stopping)
		pthread_cond_signal(&w->work);
}

int audit_writer_record(struct audit_writer *w, const struct audit_row *r,
			enum audit_where *where, struct sbx_error **err)
{
	struct slot s = {.row = r, .where = AUDIT_TO_NOWHERE};
	enum audit_where dummy;
	struct direct *d;

	if (!where)
		where = &dummy;
	pthread_mutex_lock(&w->lock);
	w->callers++;
	d = direct_take(w);
	if (d) {
		bool broke = false, tried = false;
		int rc;

		pthread_mutex_unlock(&w->lock);
		rc = direct_write(w, d, r, &broke, &tried);
		pthread_mutex_lock(&w->lock);
		direct_give(w, d, rc == 0, broke);
		if (rc == 0) {
			if (--w->callers == 0 && w->exited)
				pthread_cond_broadcast(&w->done);
			pthread_mutex_unlock(&w->lock);
			*where = AUDIT_TO_DB;
			return 0;
		}
		s.maybe_there = tried;
	}
	pthread_cond_init(&s.wake, NULL);
	if (w->nqueue == AUDIT_WRITER_QUEUE_MAX)
		w->st.full_waits++;
	w->room_waits++;
	while (w->nqueue == AUDIT_WRITER_QUEUE_MAX && !w->exited)
		pthread_cond_wait(&w->done, &w->lock);
	w->room_waits--;
	if (w->exited) {
		s.done = true;
		s.rc = sbx_error_set(&s.err, SBX_E_UNAVAILABLE, 0,
				     "audit record could not be written: "
				     "the audit's writer has stopped");
	} else {
		w->queue[w->nqueue++] = &s;
		pthread_cond_signal(&w->work);
	}
	while (!s.done)
		pthread_cond_wait(&s.wake, &w->lock);
	if (--w->callers == 0 && w->exited)
		pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_destroy(&s.wake);
	*where = s.where;
	if (s.rc < 0) {
		if (err)
			*err = s.err;
		else
			sbx_error_free(&s.err);
	}
	return s.rc;
}

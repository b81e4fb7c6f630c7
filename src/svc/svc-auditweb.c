/*
 * svc-auditweb.c - the auditor's page's reads (svc-auditweb.h): its own
 * read-only connections, each checked when made, around auditq.c,
 * auditq-follow.c and auditweb.c.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/auditq-follow.h"
#include "audit/auditq.h"
#include "audit/auditweb.h"
#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "svc/svc-auditweb.h"
#include "svc/svc-int.h"

struct svc_auditweb {
	char *conninfo, *connect_timeout;
	pthread_mutex_t lock;
	struct auditdb *idle[SVC_AUDITWEB_IDLE];
	size_t nidle;
};

int svc_auditweb_new(const struct svc *s, struct svc_auditweb **out,
		     struct sbx_error **err)
{
	const struct audit_config *c = &s->cfg.audit;
	const char *conninfo = audit_config_db(c, NULL);
	struct svc_auditweb *w;

	*out = NULL;
	if (!conninfo) {
		/* svc_audit_db_open's own "no database configured" (no
		 * connection is tried without one). */
		struct auditdb *db = NULL;

		return svc_audit_db_open(s, &db, err);
	}
	w = xcalloc(1, sizeof(*w));
	w->conninfo = xstrdup(conninfo);
	w->connect_timeout =
	    c->connect_timeout ? xstrdup(c->connect_timeout) : NULL;
	pthread_mutex_init(&w->lock, NULL);
	*out = w;
	return 0;
}

static void drop_idle(struct svc_auditweb *w)
{
	struct auditdb *gone[SVC_AUDITWEB_IDLE];
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = w->nidle;
	memcpy(gone, w->idle, n * sizeof(*gone));
	w->nidle = 0;
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < n; i++)
		auditdb_close(gone[i]);
}

void svc_auditweb_free(struct svc_auditweb *w)
{
	if (!w)
		return;
	drop_idle(w);
	pthread_mutex_destroy(&w->lock);
	free(w->conninfo);
	free(w->connect_timeout);
	free(w);
}

/* A new connection: read-only, its role checked, the schema this sbxcat
 * knows. */
static int connect_new(struct svc_auditweb *w, struct auditdb **db,
		       struct sbx_error **err)
{
	int applied, known;

	*db = NULL;
	if (auditdb_connect(w->conninfo, w->connect_timeout, db, err) < 0)
		goto fail;
	if (auditweb_setup(*db, SVC_AUDITWEB_TIMEOUT_MS, err) < 0 ||
	    auditweb_role_check(*db, err) < 0 ||
	    auditdb_schema_version(*db, &applied, &known, err) < 0)
		goto fail;
	if (applied < known) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the audit's schema is at version %d of %d: "
			      "run sbxcat audit migrate",
			      applied, known);
		goto fail;
	}
	return 0;
fail:
	auditdb_close(*db);
	*db = NULL;
	return -1;
}

static int db_get(struct svc_auditweb *w, struct auditdb **db, bool *reused,
		  struct sbx_error **err)
{
	pthread_mutex_lock(&w->lock);
	*db = w->nidle ? w->idle[--w->nidle] : NULL;
	pthread_mutex_unlock(&w->lock);
	*reused = *db != NULL;
	if (*db)
		return 0;
	return connect_new(w, db, err);
}

static void db_put(struct svc_auditweb *w, struct auditdb *db)
{
	if (!db)
		return;
	if (auditdb_reusable(db)) {
		pthread_mutex_lock(&w->lock);
		if (w->nidle < SVC_AUDITWEB_IDLE) {
			w->idle[w->nidle++] = db;
			db = NULL;
		}
		pthread_mutex_unlock(&w->lock);
	}
	auditdb_close(db);
}

/* Run fn on a connection; when a kept one turns out dead (the server
 * restarted since), drop every kept one and try once more on a new
 * connection, unless *wrote says fn already gave something away. */
typedef int (*read_fn)(struct auditdb *db, void *arg, struct sbx_error **err);
static int with_db(struct svc_auditweb *w, read_fn fn, void *arg,
		   const bool *wrote, struct sbx_error **err)
{
	for (int attempt = 0;; attempt++) {
		struct sbx_error *e = NULL;
		struct auditdb *db;
		bool reused;
		int rc;

		if (db_get(w, &db, &reused, err) < 0) {
			/* A role that may write, found on a new connection,
			 * is the database's state to a request, not its
			 * value: unavailable (503), as a refusal to connect
			 * is. */
			(*err)->kind = SBX_E_UNAVAILABLE;
			return -1;
		}
		rc = fn(db, arg, &e);
		if (rc < 0 && reused && !attempt && auditq_follow_lost(db) &&
		    !(wrote && *wrote)) {
			auditdb_close(db);
			sbx_error_free(&e);
			drop_idle(w);
			continue;
		}
		db_put(w, db);
		if (rc < 0)
			*err = e;
		return rc;
	}
}

int svc_auditweb_check(struct svc_auditweb *w, struct sbx_error **err)
{
	struct auditdb *db;

	if (connect_new(w, &db, err) < 0)
		return -1;
	db_put(w, db);
	return 0;
}

static int ping_fn(struct auditdb *db, void *arg, struct sbx_error **err)
{
	int applied, known;

	(void)arg;
	return auditdb_schema_version(db, &applied, &known, err);
}

int svc_auditweb_ping(struct svc_auditweb *w, struct sbx_error **err)
{
	return with_db(w, ping_fn, NULL, NULL, err);
}

int svc_auditweb_grant_reader(const struct svc *s, const char *role,
			      struct sbx_error **err)
{
	struct auditdb *db = NULL;
	int rc = -1;

	if (svc_audit_db_open(s, &db, err) == 0)
		rc = auditweb_grant_reader(db, role, err);
	svc_audit_db_close(s, db);
	return rc;
}

/* ---- the reads ---- */

struct page_arg {
	const struct auditq_filter *f;
	unsigned long limit;
	json_t *rows;
	char *next;
};

static int page_fn(struct auditdb *db, void *arg, struct sbx_error **err)
{
	struct page_arg *a = arg;

	return auditq_page(db, a->f, a->limit, &a->rows, &a->next, err);
}

int svc_auditweb_page(struct svc_auditweb *w, const svc_audit_filter *f,
		      unsigned long limit, json_t **rows, char **next,
		      struct sbx_error **err)
{
	struct page_arg a = {.f = f, .limit = limit};

	*rows = NULL;
	*next = NULL;
	if (f->since_us && f->until_us && f->until_us <= f->since_us)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "until: the window ends before it starts");
	if (auditq_check_filter(f, err) < 0 ||
	    with_db(w, page_fn, &a, NULL, err) < 0)
		return -1;
	*rows = a.rows;
	*next = a.next;
	return 0;
}

struct session_arg {
	const char *id, *key, *tenant;
	long long after, next;
	unsigned long limit;
	bool by_agent, truncated;
	const struct auditq_filter *f;
	json_t *doc;
	int found;
};

static int session_fn(struct auditdb *db, void *arg, struct sbx_error **err)
{
	struct session_arg *a = arg;

	a->found = auditweb_session(db, a->id, a->tenant, &a->doc, err);
	return a->found < 0 ? -1 : 0;
}

int svc_auditweb_session(struct svc_auditweb *w, const char *id,
			 const char *tenant, json_t **info,
			 struct sbx_error **err)
{
	struct session_arg a = {.id = id, .tenant = tenant};

	*info = NULL;
	if (with_db(w, session_fn, &a, NULL, err) < 0)
		return -1;
	*info = a.doc;
	return a.found;
}

static int timeline_fn(struct auditdb *db, void *arg, struct sbx_error **err)
{
	struct session_arg *a = arg;

	return auditweb_timeline(db, a->key, a->tenant, a->after, a->limit,
				 &a->doc, &a->next, err);
}

int svc_auditweb_timeline(struct svc_auditweb *w, const char *key,
			  const char *tenant, long long after,
			  unsigned long limit, json_t **events, long long *next,
			  struct sbx_error **err)
{
	struct session_arg a = {
	    .key = key, .tenant = tenant, .after = after, .limit = limit};

	*events = NULL;
	if (with_db(w, timeline_fn, &a, NULL, err) < 0)
		return -1;
	*events = a.doc;
	*next = a.next;
	return 0;
}

static int files_fn(struct auditdb *db, void *arg, struct sbx_error **err)
{
	struct session_arg *a = arg;

	return auditweb_files(db, a->key, a->tenant, SVC_AUDITWEB_FILES_MAX,
			      &a->doc, &a->truncated, err);
}

int svc_auditweb_files(struct svc_auditweb *w, const char *key,
		       const char *tenant, json_t **files, bool *truncated,
		       struct sbx_error **err)
{
	struct session_arg a = {.key = key, .tenant = tenant};

	*files = NULL;
	if (with_db(w, files_fn, &a, NULL, err) < 0)
		return -1;
	*files = a.doc;
	*truncated = a.truncated;
	return 0;
}

static int chain_fn(struct auditdb *db, void *arg, struct sbx_error **err)
{
	struct session_arg *a = arg;

	return auditweb_chain(db, a->key, a->tenant, SVC_AUDITWEB_CHAIN_MAX,
			      &a->doc, err);
}

int svc_auditweb_chain(struct svc_auditweb *w, const char *key,
		       const char *tenant, json_t **state,
		       struct sbx_error **err)
{
	struct session_arg a = {.key = key, .tenant = tenant};

	*state = NULL;
	if (with_db(w, chain_fn, &a, NULL, err) < 0)
		return -1;
	*state = a.doc;
	return 0;
}

static int chart_fn(struct auditdb *db, void *arg, struct sbx_error **err)
{
	struct session_arg *a = arg;

	return auditweb_chart(db, a->f, a->by_agent, SVC_AUDITWEB_CHART_TOP,
			      &a->doc, err);
}

int svc_auditweb_chart(struct svc_auditweb *w, const svc_audit_filter *f,
		       bool by_agent, json_t **chart, struct sbx_error **err)
{
	struct session_arg a = {.f = f, .by_agent = by_agent};

	*chart = NULL;
	if (!f->since_us || !f->until_us || f->until_us <= f->since_us)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "until: the window ends before it starts");
	if (f->until_us - f->since_us > 31LL * 86400 * 1000000)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "since: a chart spans 31 days at most");
	if (with_db(w, chart_fn, &a, NULL, err) < 0)
		return -1;
	*chart = a.doc;
	return 0;
}

struct export_arg {
	const struct auditq_filter *f;
	enum auditq_format fmt;
	const struct svc_sink *out;
	unsigned long long rows;
	bool wrote;
};

static int export_write(void *arg, const void *buf, size_t len)
{
	struct export_arg *a = arg;
	struct sbx_error *e = NULL;
	int errnum;

	a->wrote = true;
	if (svc_sink_write(a->out, buf, len, &e) == 0)
		return 0;
	errnum = e->errnum ? e->errnum : EIO;
	sbx_error_free(&e);
	return errnum;
}

static int export_fn(struct auditdb *db, void *arg, struct sbx_error **err)
{
	struct export_arg *a = arg;

	return auditq_export(db, a->f, a->fmt, export_write, a, &a->rows, err);
}

int svc_auditweb_export(struct svc_auditweb *w, const svc_audit_filter *f,
			const char *format, const struct svc_sink *out,
			unsigned long long *rows, struct sbx_error **err)
{
	struct export_arg a = {.f = f, .out = out};

	*rows = 0;
	if (svc_audit_parse_format(format, &a.fmt, err) < 0 ||
	    auditq_check_filter(f, err) < 0 ||
	    with_db(w, export_fn, &a, &a.wrote, err) < 0)
		return -1;
	*rows = a.rows;
	return 0;
}

/* ---- live ---- */

static bool stop_now(const struct svc_auditweb_live_req *q)
{
	return q->cancel && atomic_load(q->cancel);
}

static void nap_ms(long long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	if (ms > 0)
		nanosleep(&ts, NULL);
}

int svc_auditweb_live(struct svc_auditweb *w,
		      const struct svc_auditweb_live_req *q,
		      struct sbx_error **err)
{
	long long end = clock_now_ms() + q->max_ms,
		  tick = clock_now_ms() + q->tick_ms, retry = 0;
	struct auditq_follow *fo = auditq_follow_new(&q->filter);
	struct auditdb *db = NULL;
	bool started = false, restarted;
	int rc = 0;

	if (auditq_check_filter(&q->filter, err) < 0) {
		auditq_follow_free(fo);
		return -1;
	}
	while (!rc && !stop_now(q) && clock_now_ms() < end) {
		long long now = clock_now_ms(), wait;
		struct sbx_error *e = NULL;
		unsigned long n;

		if (!db && now >= retry) {
			if (connect_new(w, &db, &e) == 0 &&
			    (started
				 ? auditq_follow_resume(fo, db, &restarted, &e)
				 : auditq_follow_start(fo, db, 0, q->row,
						       q->arg, &e)) == 0) {
				started = true;
			} else {
				auditdb_close(db);
				db = NULL;
				sbx_error_free(&e);
				retry = now + 1000;
			}
		}
		now = clock_now_ms();
		wait = tick - now;
		if (end - now < wait)
			wait = end - now;
		if (wait < 0)
			wait = 0;
		if (db) {
			if (wait > 1000)
				wait = 1000;
			if (auditq_follow_poll(fo, db, q->row, q->arg, &n, &e) <
				0 ||
			    auditq_follow_wait(db, (int)wait, q->cancel, -1,
					       &e) < 0) {
				if (!auditq_follow_lost(db)) {
					*err = e;
					rc = -1;
					break;
				}
				sbx_error_free(&e);
				auditdb_close(db);
				db = NULL;
				retry = clock_now_ms() + 200;
			}
		} else {
			nap_ms(wait < 100 ? wait : 100);
		}
		if (clock_now_ms() >= tick) {
			tick = clock_now_ms() + q->tick_ms;
			if (q->tick(q->arg, db != NULL, err) < 0)
				rc = -1;
		}
	}
	auditdb_close(db);
	auditq_follow_free(fo);
	return rc;
}

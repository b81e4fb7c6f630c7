/*
 * svc-fleet-host.c - a serving host as a member of the fleet
 * (svc-fleet-host.h): settings, registration and lease, placement,
 * where a session lives (cached), reconciliation, the drain's pass.
 * The forwarder is svc-forward.c.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/auditdb.h"
#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/env.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "basic/text.h"
#include "svc/svc-fleet-int.h"
#include "svc/svc-int.h"
#include "svc/svc-session.h"
#include "svc/svc-wire.h"

/* A positive answer of where a session lives is good this long. */
#define WHERE_CACHE_MS 2000
#define WHERE_CACHE_MAX 4096
/* The database connections the fleet keeps: placement and lookups on
 * request threads, the lease on its own. */
#define FLEET_POOL_MAX 8

static int bad(struct sbx_error **err, const char *var, const char *v,
	       const char *want)
{
	struct strbuf sb = STRBUF_INIT;

	text_add_escaped(&sb, v, strlen(v));
	sbx_error_set(err, SBX_E_INVALID, 0, "%s '%s': %s", var,
		      strbuf_str(&sb), want);
	strbuf_release(&sb);
	return -1;
}

static int uint_var(const struct sbx_env *env, const char *var, unsigned min,
		    unsigned max, unsigned def, unsigned *out,
		    struct sbx_error **err)
{
	const char *v = sbx_env_nonempty(env, var);
	unsigned long long x = 0;
	char want[64];

	*out = def;
	if (!v)
		return 0;
	if (text_parse_uint(v, max, &x) && x >= min) {
		*out = (unsigned)x;
		return 0;
	}
	snprintf(want, sizeof(want), "expected seconds from %u to %u", min,
		 max);
	return bad(err, var, v, want);
}

/* http://HOST:PORT (or https://), printable, no user, path or query:
 * the base a forwarded request's path is put after. */
static bool url_valid(const char *u)
{
	const char *h, *colon;
	size_t n = strlen(u);

	if (n > FLEET_URL_MAX)
		return false;
	if (!strncmp(u, "http://", 7))
		h = u + 7;
	else if (!strncmp(u, "https://", 8))
		h = u + 8;
	else
		return false;
	for (const char *c = h; *c; c++)
		if (*c <= ' ' || *c >= 127 || strchr("/?#@\\\"'", *c))
			return false;
	colon = strrchr(h, ':');
	if (!colon || colon == h || !colon[1])
		return false;
	for (const char *c = colon + 1; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	return strtoul(colon + 1, NULL, 10) > 0 &&
	       strtoul(colon + 1, NULL, 10) < 65536;
}

int svc_fleet_config_load(struct svc_fleet_config *c, const struct sbx_env *env,
			  struct sbx_error **err)
{
	const char *name = sbx_env_nonempty(env, "SBXCAT_FLEET");
	const char *url = sbx_env_nonempty(env, "SBXCAT_FLEET_URL");

	memset(c, 0, sizeof(*c));
	if (uint_var(env, "SBXCAT_FLEET_LEASE", 3, 300, 6, &c->lease_s, err) <
		0 ||
	    uint_var(env, "SBXCAT_FLEET_GIVE_UP", 0, 7 * 86400, 600,
		     &c->give_up_s, err) < 0 ||
	    uint_var(env, "SBXCAT_FLEET_DRAIN_IDLE", 0, 86400, 30,
		     &c->drain_idle_s, err) < 0 ||
	    uint_var(env, "SBXCAT_FLEET_FORWARD_TIMEOUT", 1, 86400, 3700,
		     &c->forward_timeout_s, err) < 0)
		return -1;
	if (!name)
		return 0;
	if (!svc_wire_name_valid(name))
		return bad(err, "SBXCAT_FLEET", name,
			   "expected a host's name: [A-Za-z0-9]"
			   "[A-Za-z0-9._-]{0,63}");
	if (!url)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "SBXCAT_FLEET is set but "
				     "SBXCAT_FLEET_URL is not: say where the "
				     "other hosts reach this one "
				     "(http://HOST:PORT)");
	if (!url_valid(url))
		return bad(err, "SBXCAT_FLEET_URL", url,
			   "expected http://HOST:PORT (no path, no user)");
	c->name = xstrdup(name);
	c->url = xstrdup(url);
	return 0;
}

void svc_fleet_config_release(struct svc_fleet_config *c)
{
	free(c->name);
	free(c->url);
	memset(c, 0, sizeof(*c));
}

const char *svc_fleet_name(const struct svc_fleet *f)
{
	return f->cfg.name;
}

const struct svc_fleet_config *svc_fleet_config(const struct svc_fleet *f)
{
	return &f->cfg;
}

static void self_of(struct svc_fleet *f, struct fleetdb_self *me,
		    unsigned capacity, unsigned resident, const char *pool)
{
	me->name = f->cfg.name;
	me->url = f->cfg.url;
	me->instance = f->instance;
	me->capacity = capacity;
	me->resident = resident;
	me->pool_json = pool;
	me->lease_s = f->cfg.lease_s;
}

static void sleep_ms(long long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Register, waiting out a live row of another process for at most one
 * lease and a second. */
static int do_register(struct svc_fleet *f, struct auditdb *db,
		       const struct fleetdb_self *me, bool *first,
		       bool *draining, struct sbx_error **err)
{
	long long deadline =
	    clock_now_ms() + (long long)f->cfg.lease_s * 1000 + 1000;

	for (int tries = 0;; tries++) {
		long long retry = 0;

		if (fleetdb_register(db, me, first, draining, &retry, err) == 0)
			return 0;
		if ((*err)->kind != SBX_E_CONFLICT || tries >= 3 ||
		    clock_now_ms() + retry > deadline)
			return -1;
		sbx_error_free(err);
		sleep_ms(retry + 100);
	}
}

/*
 * This host's instance: kept in ROOT/.sbxcat-fleet-instance, so a serve
 * restarted on the same root (after a crash, say) takes its row back at
 * once, while a second process with the same name elsewhere (another
 * root: another host) waits for the lease and is refused.  A file that
 * does not read as one is made anew.
 */
static void instance_of(const struct svc *s, char out[33])
{
	char *path = NULL, *data = NULL;
	size_t len = 0;
	struct sbx_error *err = NULL;
	bool ok = false;

	if (s->cfg.session.root)
		path =
		    xasprintf("%s/.sbxcat-fleet-instance", s->cfg.session.root);
	if (path && read_file_limited(path, 64, &data, &len, &err) == 0 &&
	    len >= 32) {
		ok = true;
		for (size_t i = 0; i < 32; i++)
			ok = ok && data[i] &&
			     strchr("0123456789abcdef", data[i]);
	}
	if (ok) {
		memcpy(out, data, 32);
		out[32] = '\0';
	} else {
		random_hex(out, 16);
		sbx_error_free(&err);
		if (path)
			write_file_atomic(path, out, 32, 0600, NULL, &err);
	}
	sbx_error_free(&err);
	free(data);
	free(path);
}

int svc_fleet_join(const struct svc *s, const struct svc_fleet_config *c,
		   unsigned capacity, struct svc_fleet **out, bool *first,
		   struct sbx_error **err)
{
	const char *conninfo = audit_config_db(&s->cfg.audit, NULL);
	struct svc_fleet *f;
	struct fleetdb_self me;
	struct auditdb *db = NULL;
	bool draining = false;

	*out = NULL;
	if (!c->name)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "no fleet: SBXCAT_FLEET is not set");
	if (!conninfo)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "a fleet's hosts share the audit's "
				     "database, and none is set "
				     "(SBXCAT_DATABASE_URL)");
	f = xcalloc(1, sizeof(*f));
	f->cfg.name = xstrdup(c->name);
	f->cfg.url = xstrdup(c->url);
	f->cfg.lease_s = c->lease_s;
	f->cfg.give_up_s = c->give_up_s;
	f->cfg.drain_idle_s = c->drain_idle_s;
	f->cfg.forward_timeout_s = c->forward_timeout_s;
	instance_of(s, f->instance);
	pthread_mutex_init(&f->lock, NULL);
	f->pool = auditdb_pool_new(conninfo, s->cfg.audit.connect_timeout,
				   FLEET_POOL_MAX);
	if (auditdb_pool_get(f->pool, &db, err) < 0)
		goto fail;
	self_of(f, &me, capacity, 0, NULL);
	if (do_register(f, db, &me, first, &draining, err) < 0)
		goto fail;
	auditdb_pool_put(f->pool, db);
	f->joined = true;
	*out = f;
	return 0;
fail:
	auditdb_pool_put(f->pool, db);
	sbx_error_wrap(err, "fleet: host '%s' cannot join", c->name);
	svc_fleet_leave(f);
	return -1;
}

int svc_fleet_renew(struct svc_fleet *f, unsigned capacity, unsigned resident,
		    const char *pool_json, bool *draining,
		    struct sbx_error **err)
{
	struct fleetdb_self me;
	struct auditdb *db = NULL;
	int rc;

	if (auditdb_pool_get(f->pool, &db, err) < 0)
		return -1;
	self_of(f, &me, capacity, resident, pool_json);
	rc = fleetdb_renew(db, &me, draining, err);
	if (rc < 0 && (*err)->kind == SBX_E_CONFLICT) {
		bool first = false;

		/* Our row was lost: a lapse and a `fleet forget`, say. */
		sbx_error_free(err);
		rc = fleetdb_register(db, &me, &first, draining, NULL, err);
	}
	auditdb_pool_put(f->pool, db);
	return rc;
}

void svc_fleet_leave(struct svc_fleet *f)
{
	struct auditdb *db = NULL;
	struct sbx_error *err = NULL;

	if (!f)
		return;
	if (f->joined && auditdb_pool_get(f->pool, &db, &err) == 0) {
		struct fleetdb_self me;

		self_of(f, &me, 0, 0, NULL);
		fleetdb_leave(db, &me, &err);
		auditdb_pool_put(f->pool, db);
	}
	sbx_error_free(&err);
	svc_forward_free(f);
	auditdb_pool_free(f->pool);
	pthread_mutex_destroy(&f->lock);
	free(f->cache);
	svc_fleet_config_release(&f->cfg);
	free(f);
}

/* Run fn on a connection of the pool. */
#define WITH_DB(f, err, call)                                                  \
	({                                                                     \
		struct auditdb *db_ = NULL;                                    \
		int rc_ = auditdb_pool_get((f)->pool, &db_, (err));            \
		if (rc_ == 0) {                                                \
			struct auditdb *db = db_;                              \
			rc_ = (call);                                          \
		}                                                              \
		auditdb_pool_put((f)->pool, db_);                              \
		rc_;                                                           \
	})

int svc_fleet_place(struct svc_fleet *f, const char *id, const char *tenant,
		    unsigned max_per_tenant, const char *runtime,
		    const char *const *exclude, size_t nexclude,
		    svc_fleet_where *w, bool *placed, struct sbx_error **err)
{
	struct fleetdb_place_req r = {
	    .id = id,
	    .tenant = tenant,
	    .max_per_tenant = max_per_tenant,
	    .runtime = runtime,
	    .exclude = exclude,
	    .nexclude = nexclude,
	};

	svc_fleet_uncache(f, id);
	return WITH_DB(f, err, fleetdb_place(db, &r, w, placed, err));
}

int svc_fleet_opened(struct svc_fleet *f, const char *id,
		     const char *const *tokens, size_t ntokens,
		     struct sbx_error **err)
{
	svc_fleet_uncache(f, id);
	return WITH_DB(
	    f, err, fleetdb_opened(db, id, f->cfg.name, tokens, ntokens, err));
}

int svc_fleet_kept(struct svc_fleet *f, const char *id, struct sbx_error **err)
{
	svc_fleet_uncache(f, id);
	return WITH_DB(f, err, fleetdb_kept(db, id, f->cfg.name, err));
}

int svc_fleet_unplace(struct svc_fleet *f, const char *id, const char *host,
		      struct sbx_error **err)
{
	svc_fleet_uncache(f, id);
	return WITH_DB(f, err,
		       fleetdb_forget(db, id, host ? host : f->cfg.name, err));
}

/* ---- where a session lives, cached ---- */

struct where_entry {
	char id[SVC_WIRE_ID_MAX + 1];
	svc_fleet_where w;
	long long at;
};

static struct where_entry *cache_find(struct svc_fleet *f, const char *id)
{
	for (size_t i = 0; i < f->ncache; i++)
		if (!strcmp(f->cache[i].id, id))
			return &f->cache[i];
	return NULL;
}

void svc_fleet_uncache(struct svc_fleet *f, const char *id)
{
	struct where_entry *e;

	pthread_mutex_lock(&f->lock);
	e = cache_find(f, id);
	if (e)
		*e = f->cache[--f->ncache];
	pthread_mutex_unlock(&f->lock);
}

static void cache_put(struct svc_fleet *f, const char *id,
		      const svc_fleet_where *w, long long now)
{
	struct where_entry *e;

	pthread_mutex_lock(&f->lock);
	e = cache_find(f, id);
	if (!e) {
		/* Full: the stale ones go; still full, the oldest. */
		if (f->ncache == WHERE_CACHE_MAX) {
			size_t old = 0;

			for (size_t i = 0; i < f->ncache;) {
				if (now - f->cache[i].at > WHERE_CACHE_MS) {
					f->cache[i] = f->cache[--f->ncache];
					continue;
				}
				if (f->cache[i].at < f->cache[old].at)
					old = i;
				i++;
			}
			if (f->ncache == WHERE_CACHE_MAX)
				f->cache[old] = f->cache[--f->ncache];
		}
		if (!f->cache)
			f->cache = xcalloc(WHERE_CACHE_MAX, sizeof(*f->cache));
		e = &f->cache[f->ncache++];
		snprintf(e->id, sizeof(e->id), "%s", id);
	}
	e->w = *w;
	e->at = now;
	pthread_mutex_unlock(&f->lock);
}

int svc_fleet_where_is(struct svc_fleet *f, const char *id, svc_fleet_where *w,
		       struct sbx_error **err)
{
	long long now = clock_now_ms();
	struct where_entry *e;
	int found;

	pthread_mutex_lock(&f->lock);
	e = cache_find(f, id);
	if (e && now - e->at <= WHERE_CACHE_MS) {
		*w = e->w;
		pthread_mutex_unlock(&f->lock);
		return 1;
	}
	pthread_mutex_unlock(&f->lock);
	found = WITH_DB(f, err, fleetdb_lookup(db, id, w, err));
	/* A dead host's answer is not kept: it may come back any time. */
	if (found == 1 && w->alive)
		cache_put(f, id, w, now);
	return found;
}

int svc_fleet_peers(struct svc_fleet *f, struct svc_fleet_peer **v, size_t *n,
		    struct sbx_error **err)
{
	char **names = NULL, **urls = NULL;
	size_t k = 0;

	*v = NULL;
	*n = 0;
	if (WITH_DB(f, err,
		    fleetdb_peers(db, f->cfg.name, &names, &urls, &k, err)) < 0)
		return -1;
	*v = xcalloc(k ? k : 1, sizeof(**v));
	for (size_t i = 0; i < k; i++) {
		snprintf((*v)[i].name, sizeof((*v)[i].name), "%s", names[i]);
		snprintf((*v)[i].url, sizeof((*v)[i].url), "%s", urls[i]);
	}
	*n = k;
	strv_free(names, k);
	strv_free(urls, k);
	return 0;
}

/* ---- reconciliation ---- */

int svc_fleet_reconcile(struct svc_fleet *f, const struct svc *s,
			const struct svc_call *call, bool adopt, size_t *closed,
			struct sbx_error **err)
{
	struct svc_call admin = *call;
	struct svc_wire_list_res l = {0};
	const char **ids = NULL, **tenants = NULL;
	char **gone = NULL;
	size_t ngone = 0, n = 0;
	int rc;

	*closed = 0;
	admin.tenant = NULL;
	if (svc_wire_list(s, &admin, &l, err) < 0)
		return -1;
	ids = xcalloc(l.n ? l.n : 1, sizeof(*ids));
	tenants = xcalloc(l.n ? l.n : 1, sizeof(*tenants));
	for (size_t i = 0; i < l.n; i++) {
		if (!l.rows[i].has_wire || !l.rows[i].open)
			continue;
		ids[n] = l.rows[i].wire.id;
		tenants[n] = svc_wire_tenant(l.rows[i].rec.tenant);
		n++;
	}
	rc = WITH_DB(f, err,
		     fleetdb_reconcile(db, f->cfg.name, ids, tenants, n, adopt,
				       &gone, &ngone, err));
	for (size_t i = 0; rc == 0 && i < ngone; i++) {
		struct svc_wire_session ws = {0};
		struct svc_session_close_req c = {0};
		struct svc_session_close_res r = {0};
		struct sbx_error *e = NULL;

		if (svc_wire_find(s, &admin, gone[i], &ws, &e) == 0) {
			c.key = ws.key;
			if (svc_session_close(s, &admin, &c, &r, &e) == 0)
				(*closed)++;
			svc_session_close_res_release(&r);
		}
		svc_wire_session_release(&ws);
		if (e && call->warn) {
			char *m = xasprintf("fleet: session %s, given up by "
					    "the fleet, could not be closed "
					    "here: %s",
					    gone[i], e->msg);

			call->warn(call->warn_arg, m);
			free(m);
		}
		sbx_error_free(&e);
	}
	strv_free(gone, ngone);
	free(ids);
	free(tenants);
	svc_wire_list_res_release(&l);
	return rc;
}

int svc_fleet_give_up(struct svc_fleet *f, size_t *n, struct sbx_error **err)
{
	*n = 0;
	return WITH_DB(f, err, fleetdb_give_up(db, f->cfg.give_up_s, n, err));
}

/*
 * fleetdb.c - a serving host's statements on the fleet's tables
 * (fleetdb.h): its registration and lease, placement, a session's row
 * through its life, where a session lives, and reconciliation.  The
 * administrator's (`sbxcat fleet`) are fleetdb-admin.c's.
 *
 * Every statement binds its values ($1...), never splices them; every
 * one is a single round trip (placement is a function of migration 6),
 * so a statement is its own transaction.
 */
#include "audit/fleetdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/auditdb-pq.h"
#include "audit/auditdb.h"
#include "basic/alloc.h"
#include "basic/error.h"

static PGconn *conn(struct auditdb *db)
{
	return auditdb_conn(db);
}

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static const char *value(PGresult *r, int row, int col)
{
	return sym_PQgetisnull(r, row, col) ? NULL
					    : sym_PQgetvalue(r, row, col);
}

/* The values every registration and renewal binds: name, url, instance,
 * capacity, resident, pool, lease. */
struct self_params {
	char capacity[16], resident[16], lease[16];
	char *p[7];
};

static void self_params(struct self_params *sp, const struct fleetdb_self *s)
{
	snprintf(sp->capacity, sizeof(sp->capacity), "%u", s->capacity);
	snprintf(sp->resident, sizeof(sp->resident), "%u", s->resident);
	snprintf(sp->lease, sizeof(sp->lease), "%u", s->lease_s);
	sp->p[0] = (char *)s->name;
	sp->p[1] = (char *)s->url;
	sp->p[2] = (char *)s->instance;
	sp->p[3] = sp->capacity;
	sp->p[4] = sp->resident;
	sp->p[5] = (char *)(s->pool_json ? s->pool_json : "{}");
	sp->p[6] = sp->lease;
}

int fleetdb_register(struct auditdb *db, const struct fleetdb_self *self,
		     bool *first, bool *draining, long long *retry_ms,
		     struct sbx_error **err)
{
	/* Taken over only when its lease is past, or it is ours (a renewal
	 * that lost its answer): two live processes never share a name. */
	static const char sql[] =
	    "INSERT INTO fleet_hosts AS h (name, url, instance, capacity,\n"
	    "  resident, pool, lease_until)\n"
	    "VALUES ($1, $2, $3, $4::integer, $5::integer, $6::jsonb,\n"
	    "  now() + make_interval(secs => $7::integer))\n"
	    "ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url,\n"
	    "  instance = EXCLUDED.instance, capacity = EXCLUDED.capacity,\n"
	    "  resident = EXCLUDED.resident, pool = EXCLUDED.pool,\n"
	    "  lease_until = EXCLUDED.lease_until, renewed_at = now(),\n"
	    "  registered_at = now(), epoch = h.epoch + 1\n"
	    "  WHERE h.lease_until <= now() OR h.instance = EXCLUDED.instance\n"
	    "RETURNING (xmax = 0), draining";
	struct self_params sp;
	PGresult *r = NULL;
	int ret = 0;

	self_params(&sp, self);
	if (auditdb_run(conn(db), "fleet: register", sql, 7, sp.p, &r, err) < 0)
		return fleetdb_failed(db, err);
	if (sym_PQntuples(r) == 1) {
		*first = strcmp(sym_PQgetvalue(r, 0, 0), "t") == 0;
		*draining = strcmp(sym_PQgetvalue(r, 0, 1), "t") == 0;
		sym_PQclear(r);
		return 0;
	}
	sym_PQclear(r);
	/* Another process holds the name, and its lease runs. */
	if (auditdb_run(conn(db), "fleet: register",
			"SELECT url, greatest(0, ceil(extract(epoch FROM "
			"lease_until - now()) * 1000))::bigint FROM "
			"fleet_hosts WHERE name = $1",
			1, sp.p, &r, err) < 0)
		return -1;
	if (sym_PQntuples(r) == 1) {
		if (retry_ms)
			*retry_ms = strtoll(sym_PQgetvalue(r, 0, 1), NULL, 10);
		ret = sbx_error_set(err, SBX_E_CONFLICT, 0,
				    "host '%s' is in the fleet already, alive "
				    "at %s (another sbxcat serve holds the "
				    "name; its lease ends in %s ms)",
				    self->name, sym_PQgetvalue(r, 0, 0),
				    sym_PQgetvalue(r, 0, 1));
	} else {
		/* Gone between the two statements: try again. */
		if (retry_ms)
			*retry_ms = 0;
		ret = sbx_error_set(err, SBX_E_CONFLICT, 0,
				    "host '%s': its row changed while it "
				    "registered",
				    self->name);
	}
	sym_PQclear(r);
	return ret;
}

int fleetdb_renew(struct auditdb *db, const struct fleetdb_self *self,
		  bool *draining, struct sbx_error **err)
{
	static const char sql[] =
	    "UPDATE fleet_hosts SET url = $2, capacity = $4::integer,\n"
	    "  resident = $5::integer, pool = $6::jsonb,\n"
	    "  lease_until = now() + make_interval(secs => $7::integer),\n"
	    "  renewed_at = now()\n"
	    "WHERE name = $1 AND instance = $3 RETURNING draining";
	struct self_params sp;
	PGresult *r = NULL;

	self_params(&sp, self);
	if (auditdb_run(conn(db), "fleet: renew the lease", sql, 7, sp.p, &r,
			err) < 0)
		return -1;
	if (sym_PQntuples(r) != 1) {
		sym_PQclear(r);
		return sbx_error_set(err, SBX_E_CONFLICT, 0,
				     "host '%s' is no longer this process's "
				     "in the fleet (forgotten, or its name "
				     "taken after its lease lapsed)",
				     self->name);
	}
	*draining = strcmp(sym_PQgetvalue(r, 0, 0), "t") == 0;
	sym_PQclear(r);
	return 0;
}

int fleetdb_leave(struct auditdb *db, const struct fleetdb_self *self,
		  struct sbx_error **err)
{
	char *p[2] = {(char *)self->name, (char *)self->instance};

	return auditdb_run(conn(db), "fleet: leave",
			   "UPDATE fleet_hosts SET lease_until = now() "
			   "WHERE name = $1 AND instance = $2",
			   2, p, NULL, err);
}

/* "{a,b}": a text[] literal of names (the wire's pattern: no quote,
 * comma, brace or blank can be in one, but quote anyway). */
static char *text_array(const char *const *v, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addch(&sb, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			strbuf_addch(&sb, ',');
		strbuf_addch(&sb, '"');
		for (const char *c = v[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				strbuf_addch(&sb, '\\');
			strbuf_addch(&sb, *c);
		}
		strbuf_addch(&sb, '"');
	}
	strbuf_addch(&sb, '}');
	return strbuf_detach(&sb, NULL);
}

/* "{h1,h2}" (hex hashes: nothing to unquote) into w's tokens. */
static void tokens_fill(struct fleetdb_where *w, const char *a)
{
	if (!a || *a++ != '{')
		return;
	while (*a && *a != '}' && w->ntokens < FLEET_TOKENS_MAX) {
		size_t n = strcspn(a, ",}");

		if (n < sizeof(w->tokens[0]))
			copy(w->tokens[w->ntokens++], n + 1, a);
		a += n;
		if (*a == ',')
			a++;
	}
}

static void where_fill(struct fleetdb_where *w, PGresult *r, int host, int url,
		       int alive, int state, int tenant)
{
	const char *t = tenant >= 0 ? value(r, 0, tenant) : NULL;

	memset(w, 0, sizeof(*w));
	copy(w->host, sizeof(w->host), value(r, 0, host));
	copy(w->url, sizeof(w->url), value(r, 0, url));
	w->alive = strcmp(sym_PQgetvalue(r, 0, alive), "t") == 0;
	copy(w->state, sizeof(w->state), value(r, 0, state));
	w->has_tenant = t != NULL;
	copy(w->tenant, sizeof(w->tenant), t);
}

int fleetdb_place(struct auditdb *db, const struct fleetdb_place_req *req,
		  struct fleetdb_where *w, bool *placed, struct sbx_error **err)
{
	char max[16];
	char *ex = text_array(req->exclude, req->nexclude);
	char *p[5] = {(char *)req->id, (char *)req->tenant, max,
		      (char *)req->runtime, ex};
	PGresult *r = NULL;
	const char *outcome;
	unsigned long long n, lim;
	int ret = 0;

	snprintf(max, sizeof(max), "%u", req->max_per_tenant);
	ret = auditdb_run(conn(db), "fleet: place a session",
			  "SELECT outcome, host, url, alive, state, n, lim "
			  "FROM sbxcat_fleet_place($1, $2, $3::integer, $4, "
			  "$5::text[])",
			  5, p, &r, err);
	free(ex);
	if (ret < 0)
		return -1;
	if (sym_PQntuples(r) != 1) {
		sym_PQclear(r);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "fleet: place a session: no answer");
	}
	outcome = sym_PQgetvalue(r, 0, 0);
	n = strtoull(sym_PQgetvalue(r, 0, 5), NULL, 10);
	lim = strtoull(sym_PQgetvalue(r, 0, 6), NULL, 10);
	if (!strcmp(outcome, "placed") || !strcmp(outcome, "there")) {
		where_fill(w, r, 1, 2, 3, 4, -1);
		*placed = outcome[0] == 'p';
	} else if (!strcmp(outcome, "tenant")) {
		ret = sbx_error_set(err, SBX_E_REFUSED, 0,
				    "tenant '%s' already holds %llu of %llu "
				    "sessions across the fleet; close one "
				    "first",
				    req->tenant, n, lim);
		sbx_error_why(*err, SBX_R_TENANT_QUOTA, n, lim);
	} else if (!strcmp(outcome, "full")) {
		ret = sbx_error_set(err, SBX_E_REFUSED, 0,
				    "no host of the fleet has room: %llu of "
				    "%llu sessions open on the live hosts",
				    n, lim);
		sbx_error_why(*err, SBX_R_HOST_QUOTA, n, lim);
	} else {
		ret = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				    "no host of the fleet is alive");
	}
	sym_PQclear(r);
	return ret;
}

static int set_state(struct auditdb *db, const char *id, const char *host,
		     const char *state, struct sbx_error **err)
{
	char *p[3] = {(char *)id, (char *)host, (char *)state};

	return auditdb_run(conn(db), "fleet: a session's row",
			   "UPDATE fleet_sessions SET state = $3 "
			   "WHERE wire_id = $1 AND host = $2",
			   3, p, NULL, err);
}

int fleetdb_opened(struct auditdb *db, const char *id, const char *host,
		   const char *const *tokens, size_t ntokens,
		   struct sbx_error **err)
{
	char *t = text_array(
	    tokens, ntokens < FLEET_TOKENS_MAX ? ntokens : FLEET_TOKENS_MAX);
	char *p[3] = {(char *)id, (char *)host, t};
	int rc;

	rc = auditdb_run(conn(db), "fleet: a session's row",
			 "UPDATE fleet_sessions SET state = 'open', tokens = "
			 "$3::text[] WHERE wire_id = $1 AND host = $2",
			 3, p, NULL, err);
	free(t);
	return rc;
}

int fleetdb_kept(struct auditdb *db, const char *id, const char *host,
		 struct sbx_error **err)
{
	return set_state(db, id, host, "kept", err);
}

int fleetdb_forget(struct auditdb *db, const char *id, const char *host,
		   struct sbx_error **err)
{
	char *p[2] = {(char *)id, (char *)host};

	return auditdb_run(conn(db), "fleet: forget a session",
			   "DELETE FROM fleet_sessions "
			   "WHERE wire_id = $1 AND host = $2",
			   2, p, NULL, err);
}

int fleetdb_lookup(struct auditdb *db, const char *id, struct fleetdb_where *w,
		   struct sbx_error **err)
{
	char *p[1] = {(char *)id};
	PGresult *r = NULL;
	int found;

	if (auditdb_run(conn(db), "fleet: find a session",
			"SELECT s.host, h.url, h.lease_until > now(), s.state, "
			"s.tenant, s.tokens FROM fleet_sessions s JOIN "
			"fleet_hosts h ON h.name = s.host WHERE s.wire_id = $1",
			1, p, &r, err) < 0)
		return -1;
	found = sym_PQntuples(r) == 1;
	if (found) {
		where_fill(w, r, 0, 1, 2, 3, 4);
		tokens_fill(w, value(r, 0, 5));
	}
	sym_PQclear(r);
	return found;
}

int fleetdb_reconcile(struct auditdb *db, const char *host,
		      const char *const *ids, const char *const *tenants,
		      size_t n, bool adopt, char ***gone, size_t *ngone,
		      struct sbx_error **err)
{
	/* One statement: the stale rows deleted, the placing ones of open
	 * sessions made open, the orphans adopted (or not), and the ids the
	 * fleet gave up (no row, or another host's) returned. */
	static const char sql[] =
	    "WITH l AS (SELECT * FROM unnest($2::text[], $3::text[])\n"
	    "    AS l (id, tenant)),\n"
	    "  stale AS (DELETE FROM fleet_sessions s WHERE s.host = $1\n"
	    "    AND NOT EXISTS (SELECT 1 FROM l WHERE l.id = s.wire_id)\n"
	    "    AND s.state IN ('placing', 'open')\n"
	    "    AND s.placed_at < now() - interval '1 minute'),\n"
	    "  opened AS (UPDATE fleet_sessions s SET state = 'open'\n"
	    "    FROM l WHERE s.wire_id = l.id AND s.host = $1\n"
	    "    AND s.state = 'placing'),\n"
	    "  adopted AS (INSERT INTO fleet_sessions (wire_id, tenant, host,\n"
	    "      state)\n"
	    "    SELECT l.id, l.tenant, $1, 'open' FROM l WHERE $4::boolean\n"
	    "    ON CONFLICT (wire_id) DO NOTHING RETURNING wire_id)\n"
	    "SELECT l.id FROM l LEFT JOIN fleet_sessions s\n"
	    "  ON s.wire_id = l.id\n"
	    "WHERE NOT EXISTS (SELECT 1 FROM adopted a WHERE a.wire_id = "
	    "l.id)\n"
	    "  AND (s.wire_id IS NULL OR s.host <> $1)";
	char *a_ids = text_array(ids, n);
	struct strbuf ts = STRBUF_INIT;
	char *p[4];
	PGresult *r = NULL;
	int ret;

	/* The tenants' array, NULL where a session has none. */
	strbuf_addch(&ts, '{');
	for (size_t i = 0; i < n; i++) {
		char *one;

		if (i)
			strbuf_addch(&ts, ',');
		if (!tenants || !tenants[i]) {
			strbuf_addstr(&ts, "NULL");
			continue;
		}
		one = text_array(&tenants[i], 1);
		/* "{"x"}" without its braces */
		strbuf_add(&ts, one + 1, strlen(one) - 2);
		free(one);
	}
	strbuf_addch(&ts, '}');
	p[0] = (char *)host;
	p[1] = a_ids;
	p[2] = ts.buf;
	p[3] = (char *)(adopt ? "true" : "false");
	*gone = NULL;
	*ngone = 0;
	ret = auditdb_run(conn(db), "fleet: reconcile", sql, 4, p, &r, err);
	free(a_ids);
	strbuf_release(&ts);
	if (ret < 0)
		return -1;
	if (sym_PQntuples(r) > 0) {
		size_t k = (size_t)sym_PQntuples(r);

		*gone = xcalloc(k, sizeof(**gone));
		for (size_t i = 0; i < k; i++)
			(*gone)[i] = xstrdup(sym_PQgetvalue(r, (int)i, 0));
		*ngone = k;
	}
	sym_PQclear(r);
	return 0;
}

int fleetdb_give_up(struct auditdb *db, unsigned give_up_s, size_t *n,
		    struct sbx_error **err)
{
	char secs[16];
	char *p[1] = {secs};
	PGresult *r = NULL;

	snprintf(secs, sizeof(secs), "%u", give_up_s);
	if (auditdb_run(conn(db), "fleet: give a dead host's sessions up",
			"DELETE FROM fleet_sessions s USING fleet_hosts h "
			"WHERE s.host = h.name AND h.lease_until < now() - "
			"make_interval(secs => $1::integer)",
			1, p, &r, err) < 0)
		return -1;
	*n = strtoull(sym_PQcmdTuples(r), NULL, 10);
	sym_PQclear(r);
	return 0;
}

int fleetdb_peers(struct auditdb *db, const char *self, char ***names,
		  char ***urls, size_t *n, struct sbx_error **err)
{
	char *p[1] = {(char *)self};
	PGresult *r = NULL;
	size_t k;

	*names = *urls = NULL;
	*n = 0;
	if (auditdb_run(conn(db), "fleet: the live hosts",
			"SELECT name, url FROM fleet_hosts WHERE lease_until > "
			"now() AND name <> $1 ORDER BY name",
			1, p, &r, err) < 0)
		return -1;
	k = (size_t)sym_PQntuples(r);
	*names = xcalloc(k + 1, sizeof(**names));
	*urls = xcalloc(k + 1, sizeof(**urls));
	for (size_t i = 0; i < k; i++) {
		(*names)[i] = xstrdup(sym_PQgetvalue(r, (int)i, 0));
		(*urls)[i] = xstrdup(sym_PQgetvalue(r, (int)i, 1));
	}
	*n = k;
	sym_PQclear(r);
	return 0;
}

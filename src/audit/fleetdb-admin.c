/*
 * fleetdb-admin.c - what the operator's `sbxcat fleet` does to the fleet's
 * tables (fleetdb.h): the hosts listed with what the database computes of
 * them, a host drained or undrained, a host gone for good forgotten.
 *
 * Whether a host is alive and how long its lease runs are the database's
 * now(), never this machine's clock: the hosts renew by the server's
 * clock, and a fleet's machines need not agree.  Every value goes to the
 * server as a parameter.  A statement that fails on a database without
 * migration 6 is said as that (fleetdb_no_tables), not as the server's
 * "relation does not exist".
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/auditdb-pq.h"
#include "audit/auditdb.h"
#include "audit/fleetdb.h"
#include "audit/pq-dl.h"
#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"

const char fleetdb_no_tables[] =
    "the database has no fleet tables: run `sbxcat audit migrate`";

int fleetdb_failed(struct auditdb *db, struct sbx_error **err)
{
	struct sbx_error *e = NULL;
	bool ready = true;

	if (fleetdb_ready(db, &ready, &e) == 0 && !ready) {
		sbx_error_free(err);
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s",
			      fleetdb_no_tables);
		sbx_error_reason(*err, fleetdb_no_tables);
	}
	sbx_error_free(&e);
	return -1;
}

int fleetdb_ready(struct auditdb *db, bool *ready, struct sbx_error **err)
{
	PGresult *r;

	if (auditdb_run(auditdb_conn(db), "looking for the fleet's tables",
			"SELECT to_regclass('fleet_hosts') IS NOT NULL AND "
			"to_regclass('fleet_sessions') IS NOT NULL",
			0, NULL, &r, err))
		return -1;
	*ready = sym_PQntuples(r) == 1 && !strcmp(sym_PQgetvalue(r, 0, 0), "t");
	sym_PQclear(r);
	return 0;
}

/* A count the table holds as integer: 0 for anything below (resident has
 * no CHECK: a row written by hand). */
static unsigned count_of(const char *s)
{
	long long v = strtoll(s, NULL, 10);

	if (v < 0)
		return 0;
	return v > (long long)UINT32_MAX ? UINT32_MAX : (unsigned)v;
}

/*
 * The sessions placed on a host: 'placing' (its open on the way) and
 * 'open'; 'kept' ones hold a workspace, not a slot.  lease_left in
 * seconds, to the microsecond (extract's numeric, as float8 text: "4.1",
 * "-130.5").  renewed_at in UTC, to the second.
 */
static const char hosts_sql[] =
    "SELECT h.name, h.url, h.capacity, h.resident,\n"
    "  (SELECT count(*) FROM fleet_sessions s\n"
    "    WHERE s.host = h.name AND s.state IN ('placing', 'open')),\n"
    "  h.pool::text, h.draining, h.lease_until > now(),\n"
    "  extract(epoch FROM h.lease_until - now())::float8, h.epoch,\n"
    "  to_char(h.renewed_at AT TIME ZONE 'UTC',\n"
    "          'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')\n"
    "FROM fleet_hosts h ORDER BY h.name";

int fleetdb_hosts(struct auditdb *db, struct fleetdb_host **rows, size_t *n,
		  struct sbx_error **err)
{
	PGresult *r;
	size_t nt;

	*rows = NULL;
	*n = 0;
	if (auditdb_run(auditdb_conn(db), "listing the fleet", hosts_sql, 0,
			NULL, &r, err))
		return fleetdb_failed(db, err);
	nt = (size_t)sym_PQntuples(r);
	*rows = xcalloc(nt ? nt : 1, sizeof(**rows));
	for (size_t i = 0; i < nt; i++) {
		struct fleetdb_host *h = &(*rows)[i];
		int t = (int)i;

		/* Names and urls the hosts wrote fit; a longer one (a row
		 * made by hand) is shown cut, never overflows. */
		snprintf(h->name, sizeof(h->name), "%s",
			 sym_PQgetvalue(r, t, 0));
		snprintf(h->url, sizeof(h->url), "%s", sym_PQgetvalue(r, t, 1));
		h->capacity = count_of(sym_PQgetvalue(r, t, 2));
		h->resident = count_of(sym_PQgetvalue(r, t, 3));
		h->placed = count_of(sym_PQgetvalue(r, t, 4));
		h->pool_json = xstrdup(sym_PQgetvalue(r, t, 5));
		h->draining = !strcmp(sym_PQgetvalue(r, t, 6), "t");
		h->alive = !strcmp(sym_PQgetvalue(r, t, 7), "t");
		h->lease_left = strtod(sym_PQgetvalue(r, t, 8), NULL);
		h->epoch = strtoll(sym_PQgetvalue(r, t, 9), NULL, 10);
		snprintf(h->renewed_at, sizeof(h->renewed_at), "%s",
			 sym_PQgetvalue(r, t, 10));
	}
	*n = nt;
	sym_PQclear(r);
	return 0;
}

void fleetdb_hosts_free(struct fleetdb_host *rows, size_t n)
{
	for (size_t i = 0; rows && i < n; i++)
		free(rows[i].pool_json);
	free(rows);
}

/* SBX_E_NOT_FOUND "no host 'NAME' in the fleet"; -1. */
static int no_host(const char *host, struct sbx_error **err)
{
	char *q = text_quote_short(host);

	sbx_error_set(err, SBX_E_NOT_FOUND, 0, "no host %s in the fleet", q);
	free(q);
	return -1;
}

int fleetdb_drain(struct auditdb *db, const char *host, bool on,
		  struct sbx_error **err)
{
	char *params[] = {(char *)host, (char *)(on ? "true" : "false")};
	PGresult *r;
	bool found;

	if (auditdb_run(auditdb_conn(db), on ? "draining" : "undraining",
			"UPDATE fleet_hosts SET draining = $2::boolean "
			"WHERE name = $1",
			2, params, &r, err))
		return fleetdb_failed(db, err);
	found = strcmp(sym_PQcmdTuples(r), "0") != 0;
	sym_PQclear(r);
	return found ? 0 : no_host(host, err);
}

/*
 * One statement: the row locked (a renewal waits, and alive is read from
 * its newest version), deleted when its lease is past or force, and the
 * sessions it held counted as they were before (the delete's cascade
 * takes them; the statement's snapshot still has them).  No row: no such
 * host.
 */
static const char forget_sql[] =
    "WITH h AS (SELECT name, lease_until > now() AS alive,\n"
    "             extract(epoch FROM lease_until - now())::float8 AS left_s\n"
    "           FROM fleet_hosts WHERE name = $1 FOR UPDATE),\n"
    "  d AS (DELETE FROM fleet_hosts f USING h\n"
    "        WHERE f.name = h.name AND (NOT h.alive OR $2::boolean)\n"
    "        RETURNING f.name)\n"
    "SELECT h.alive, h.left_s,\n"
    "  (SELECT count(*) FROM fleet_sessions s WHERE s.host = $1),\n"
    "  (SELECT count(*) FROM d)\n"
    "FROM h";

int fleetdb_forget_host(struct auditdb *db, const char *host, bool force,
			size_t *sessions, struct sbx_error **err)
{
	char *params[] = {(char *)host, (char *)(force ? "true" : "false")};
	PGresult *r;
	double left;
	bool alive, gone;

	*sessions = 0;
	if (auditdb_run(auditdb_conn(db), "forgetting a host", forget_sql, 2,
			params, &r, err))
		return fleetdb_failed(db, err);
	if (sym_PQntuples(r) != 1) {
		sym_PQclear(r);
		return no_host(host, err);
	}
	alive = !strcmp(sym_PQgetvalue(r, 0, 0), "t");
	left = strtod(sym_PQgetvalue(r, 0, 1), NULL);
	*sessions = count_of(sym_PQgetvalue(r, 0, 2));
	gone = strcmp(sym_PQgetvalue(r, 0, 3), "0") != 0;
	sym_PQclear(r);
	if (!gone) {
		char *q = text_quote_short(host);

		*sessions = 0;
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "host %s is alive: its lease runs another %.1fs",
			      q, alive ? left : 0.0);
		sbx_error_reason(*err, "the host is alive");
		free(q);
		return -1;
	}
	return 0;
}

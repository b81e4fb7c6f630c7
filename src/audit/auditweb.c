/*
 * auditweb.c - the auditor's page's own queries (auditweb.h): a session's
 * summary, timeline, files and chain state, the chart's buckets, and the
 * read-only role.  The log's pages, export and follow are auditq's.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/auditdb-pq.h"
#include "audit/auditdb.h"
#include "audit/auditq.h"
#include "audit/auditweb.h"
#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"
#include "basic/xjson.h"

const char *const auditweb_tables[] = {
    "sandbox_operations", "audit_chains", "agents", "runs", "schema_migrations",
};
const int auditweb_ntables =
    sizeof(auditweb_tables) / sizeof(auditweb_tables[0]);

/* A timestamptz as RFC 3339 UTC with microseconds, in SQL. */
#define RFC3339(x)                                                             \
	"to_char((" x ") AT TIME ZONE 'UTC', "                                 \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/* ---- the role ---- */

int auditweb_setup(struct auditdb *db, unsigned timeout_ms,
		   struct sbx_error **err)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "SET statement_timeout = %u", timeout_ms);
	if (auditdb_run(auditdb_conn(db), "setting up the connection",
			"SET default_transaction_read_only = on", 0, NULL, NULL,
			err))
		return -1;
	return auditdb_run(auditdb_conn(db), "setting up the connection", sql,
			   0, NULL, NULL, err);
}

int auditweb_role_check(struct auditdb *db, struct sbx_error **err)
{
	static const char *const privs[] = {"INSERT", "UPDATE", "DELETE",
					    "TRUNCATE"};
	struct strbuf sql = STRBUF_INIT;
	PGresult *r;
	int rc = 0;

	/* Each table: found, owned (by the role or one it is in), then
	 * each privilege; the role's own superuser flag in every row. */
	strbuf_addstr(&sql,
		      "SELECT t.name, c.oid IS NOT NULL, "
		      "coalesce(pg_has_role(c.relowner, 'USAGE'), false), "
		      "(SELECT rolsuper FROM pg_roles WHERE rolname = "
		      "current_user), current_user");
	for (size_t i = 0; i < sizeof(privs) / sizeof(privs[0]); i++)
		strbuf_addf(&sql,
			    ", coalesce(has_table_privilege(c.oid, '%s'), "
			    "false)",
			    privs[i]);
	strbuf_addstr(&sql, ", coalesce(has_table_privilege(c.oid, 'SELECT'), "
			    "false) FROM unnest(ARRAY[");
	for (int i = 0; i < auditweb_ntables; i++)
		strbuf_addf(&sql, "%s'%s'", i ? ", " : "", auditweb_tables[i]);
	strbuf_addstr(&sql, "]) WITH ORDINALITY AS t(name, k) LEFT JOIN "
			    "pg_class c ON c.oid = to_regclass(t.name) "
			    "ORDER BY t.k");
	rc = auditdb_run(auditdb_conn(db), "checking the database role",
			 sql.buf, 0, NULL, &r, err);
	strbuf_release(&sql);
	if (rc)
		return -1;
	for (int i = 0; !rc && i < sym_PQntuples(r); i++) {
		const char *t = sym_PQgetvalue(r, i, 0);
		const char *who = sym_PQgetvalue(r, i, 4);
		struct strbuf w = STRBUF_INIT;

		text_add_escaped(&w, who, strlen(who));
		if (!strcmp(sym_PQgetvalue(r, i, 3), "t"))
			rc = sbx_error_set(err, SBX_E_INVALID, 0,
					   "the database role '%s' is a "
					   "superuser: the page needs a role "
					   "that can only read (sbxcat audit "
					   "migrate --reader ROLE)",
					   w.buf);
		else if (strcmp(sym_PQgetvalue(r, i, 1), "t"))
			rc = sbx_error_set(err, SBX_E_INVALID, 0,
					   "the audit's table %s is missing "
					   "(sbxcat audit migrate)",
					   t);
		else if (!strcmp(sym_PQgetvalue(r, i, 2), "t"))
			rc = sbx_error_set(err, SBX_E_INVALID, 0,
					   "the database role '%s' owns the "
					   "table %s: the page needs a role "
					   "that can only read",
					   w.buf, t);
		for (size_t p = 0; !rc && p < sizeof(privs) / sizeof(privs[0]);
		     p++)
			if (!strcmp(sym_PQgetvalue(r, i, 5 + (int)p), "t"))
				rc = sbx_error_set(
				    err, SBX_E_INVALID, 0,
				    "the database role '%s' has %s on the "
				    "table %s: the page needs a role that can "
				    "only read (sbxcat audit migrate --reader "
				    "ROLE)",
				    w.buf, privs[p], t);
		if (!rc && strcmp(sym_PQgetvalue(r, i, 9), "t"))
			rc = sbx_error_set(err, SBX_E_INVALID, 0,
					   "the database role '%s' may not "
					   "read the table %s (sbxcat audit "
					   "migrate --reader ROLE, then GRANT "
					   "ROLE TO '%s')",
					   w.buf, t, w.buf);
		strbuf_release(&w);
	}
	sym_PQclear(r);
	return rc ? -1 : 0;
}

static bool role_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 63 ||
	    !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') ||
	      (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_") == n;
}

int auditweb_grant_reader(struct auditdb *db, const char *role,
			  struct sbx_error **err)
{
	struct strbuf sql = STRBUF_INIT;
	int rc;

	if (!role_name_valid(role)) {
		struct strbuf sb = STRBUF_INIT;

		text_add_escaped(&sb, role, strlen(role));
		rc = sbx_error_set(err, SBX_E_INVALID, 0,
				   "'%s': a role's name is a letter or _ "
				   "then letters, digits or _ (63 at most)",
				   sb.buf);
		strbuf_release(&sb);
		return rc;
	}
	/* The name is checked above: a literal of those characters, quoted
	 * again by format's %I where it is an identifier. */
	strbuf_addf(&sql,
		    "DO $sbxcat$ BEGIN "
		    "IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%s') "
		    "THEN EXECUTE format('CREATE ROLE %%I NOLOGIN', '%s'); "
		    "END IF; "
		    "EXECUTE format('GRANT USAGE ON SCHEMA %%I TO %%I', "
		    "current_schema(), '%s'); ",
		    role, role, role);
	for (int i = 0; i < auditweb_ntables; i++)
		strbuf_addf(&sql,
			    "EXECUTE format('GRANT SELECT ON TABLE %s TO "
			    "%%I', '%s'); ",
			    auditweb_tables[i], role);
	strbuf_addstr(&sql, "END $sbxcat$");
	rc = auditdb_run(auditdb_conn(db), "making the reader role", sql.buf, 0,
			 NULL, NULL, err);
	strbuf_release(&sql);
	return rc;
}

/* ---- a session ---- */

/* " AND <col> = $n::text" when tenant, else "". */
static const char *tenant_and(const char *tenant, const char *col, int n,
			      char out[64])
{
	if (!tenant)
		return "";
	snprintf(out, 64, " AND %s = $%d::text", col, n);
	return out;
}

/* Run sql; its one column per row a JSON object; each appended to *a. */
static int json_rows(struct auditdb *db, const char *what, const char *sql,
		     int n, const char *const *p, unsigned long max, json_t **a,
		     unsigned long *count, struct sbx_error **err)
{
	PGresult *r;
	int nt;

	*a = NULL;
	*count = 0;
	if (auditdb_run(auditdb_conn(db), what, sql, n, (char *const *)p, &r,
			err))
		return -1;
	*a = json_array();
	nt = sym_PQntuples(r);
	*count = (unsigned long)nt;
	for (int i = 0; i < nt && (unsigned long)i < max; i++) {
		json_t *j =
		    auditdb_row_object(sym_PQgetvalue(r, i, 0), what, err);

		if (!j) {
			json_decref(*a);
			*a = NULL;
			sym_PQclear(r);
			return -1;
		}
		json_array_append_new(*a, j);
	}
	sym_PQclear(r);
	return 0;
}

static int check_utf8(const char *what, const char *s, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	int rc;

	if (!s || utf8_first_invalid(s, strlen(s)) < 0)
		return 0;
	text_add_escaped(&sb, s, strlen(s));
	rc = sbx_error_set(err, SBX_E_INVALID, 0, "%s '%s': not valid UTF-8",
			   what, sb.buf);
	strbuf_release(&sb);
	return rc;
}

int auditweb_session(struct auditdb *db, const char *id, const char *tenant,
		     json_t **info, struct sbx_error **err)
{
	const char *p[2] = {id, tenant};
	char t1[64], t2[64], *sql;
	const char *tand;
	unsigned long n;
	json_t *a;
	int rc;

	*info = NULL;
	if (check_utf8("session", id, err) || check_utf8("tenant", tenant, err))
		return -1;
	tand = tenant_and(tenant, "o.tenant", 2, t2);
	/* The key first (either index: key or wire id), then the summary
	 * over that key's index. */
	sql = xasprintf(
	    "WITH k AS (SELECT session_key, tenant FROM sandbox_operations "
	    "WHERE (session_key = $1::text OR wire_id = $1::text)%s LIMIT 1) "
	    "SELECT json_build_object('session', k.session_key, 'tenant', "
	    "k.tenant, 'wire_id', (SELECT o.wire_id FROM sandbox_operations o "
	    "WHERE o.session_key = k.session_key AND o.wire_id IS NOT NULL%s "
	    "LIMIT 1), 'runtime', s.runtime, "
	    "'first_at', " RFC3339(
		"s.first") ", "
			   "'last_at', " RFC3339(
			       "s.last") ", 'rows', s.n)::text "
					 "FROM k, LATERAL (SELECT "
					 "min(created_at) AS first, "
					 "max(created_at) AS last, count(*) AS "
					 "n, max(runtime) AS runtime "
					 "FROM sandbox_operations o WHERE "
					 "o.session_key = k.session_key%s) s",
	    tenant_and(tenant, "tenant", 2, t1), tand, tand);
	rc = json_rows(db, "reading the session", sql, tenant ? 2 : 1, p, 1, &a,
		       &n, err);
	free(sql);
	if (rc)
		return -1;
	if (!json_array_size(a)) {
		json_decref(a);
		return 1;
	}
	*info = json_incref(json_array_get(a, 0));
	json_decref(a);
	return 0;
}

int auditweb_timeline(struct auditdb *db, const char *key, const char *tenant,
		      long long after, unsigned long limit, json_t **events,
		      long long *next, struct sbx_error **err)
{
	char a[24], l[24], t[64], *sql;
	const char *p[4] = {key, a, l, tenant};
	unsigned long n;
	int rc;

	*next = -1;
	snprintf(a, sizeof(a), "%lld", after < 0 ? 0 : after);
	snprintf(l, sizeof(l), "%lu", limit + 1);
	sql = xasprintf(
	    "SELECT json_build_object('seq', seq, 'at', " RFC3339(
		"created_at") ", 'op', op, 'target', target, 'ok', ok, "
			      "'detail', detail, 'duration_ms', duration_ms, "
			      "'exit_status', exit_status, 'bytes', bytes, "
			      "'results', results)::text FROM "
			      "sandbox_operations WHERE session_key = $1::text "
			      "AND seq > $2::bigint%s ORDER BY seq LIMIT "
			      "$3::bigint",
	    tenant_and(tenant, "tenant", 4, t));
	rc = json_rows(db, "reading the timeline", sql, tenant ? 4 : 3, p,
		       limit, events, &n, err);
	free(sql);
	if (rc)
		return -1;
	if (n > limit && limit)
		*next = json_integer_value(
		    json_object_get(json_array_get(*events, limit - 1), "seq"));
	return 0;
}

int auditweb_files(struct auditdb *db, const char *key, const char *tenant,
		   unsigned long max, json_t **files, bool *truncated,
		   struct sbx_error **err)
{
	char l[24], t[64], *sql;
	const char *p[3] = {key, l, tenant};
	unsigned long n;
	int rc;

	*truncated = false;
	snprintf(l, sizeof(l), "%lu", max + 1);
	sql = xasprintf(
	    "SELECT json_build_object('path', target, 'read', count(*) FILTER "
	    "(WHERE op IN ('read', 'read_bytes')), 'written', count(*) FILTER "
	    "(WHERE op IN ('write', 'edit')), 'removed', count(*) FILTER "
	    "(WHERE op = 'remove'), 'last_at', " RFC3339(
		"max(created_at)") ")::text FROM sandbox_operations WHERE "
				   "session_key = $1::text AND op IN ('read', "
				   "'read_bytes', 'write', 'edit', 'remove')%s "
				   "GROUP BY target ORDER BY max(created_at) "
				   "DESC, target LIMIT $2::bigint",
	    tenant_and(tenant, "tenant", 3, t));
	rc = json_rows(db, "reading the files touched", sql, tenant ? 3 : 2, p,
		       max, files, &n, err);
	free(sql);
	if (rc)
		return -1;
	*truncated = n > max;
	return 0;
}

int auditweb_chain(struct auditdb *db, const char *key, const char *tenant,
		   long long max_rows, json_t **state, struct sbx_error **err)
{
	const char *p[2] = {key, tenant};
	char t[64], *sql;
	long long rows = 0;
	json_t *rep = NULL, *bad;
	PGresult *r;
	int rc;

	*state = NULL;
	sql = xasprintf("SELECT nrows FROM audit_chains WHERE session_key = "
			"$1::text%s",
			tenant_and(tenant, "tenant", 2, t));
	rc = auditdb_run(auditdb_conn(db), "reading the chain", sql,
			 tenant ? 2 : 1, (char *const *)p, &r, err);
	free(sql);
	if (rc)
		return -1;
	if (sym_PQntuples(r))
		rows = strtoll(sym_PQgetvalue(r, 0, 0), NULL, 10);
	sym_PQclear(r);
	if (rows > max_rows) {
		char why[160];

		snprintf(why, sizeof(why),
			 "%lld rows: more than the page verifies (%lld); run "
			 "sbxcat audit verify --session KEY",
			 rows, max_rows);
		*state =
		    xjson_pack("{s:s, s:I, s:n, s:s}", "state", "too_long",
			       "rows", (json_int_t)rows, "at_seq", "why", why);
		return 0;
	}
	rc = auditdb_verify(db, key, NULL, &rep, err);
	if (rc < 0)
		return -1;
	bad = json_array_get(json_object_get(rep, "bad"), 0);
	if (rc == 0) {
		*state = xjson_pack("{s:s, s:O, s:n, s:n}", "state", "verified",
				    "rows", json_object_get(rep, "rows"),
				    "at_seq", "why");
	} else {
		json_t *seq = json_object_get(bad, "seq");

		*state =
		    xjson_pack("{s:s, s:O, s:o, s:O}", "state", "broken",
			       "rows", json_object_get(rep, "rows"), "at_seq",
			       json_integer_value(seq) >= 0 ? json_incref(seq)
							    : json_null(),
			       "why", json_object_get(bad, "why"));
	}
	json_decref(rep);
	return 0;
}

/* ---- the chart ---- */

/* Unix seconds as RFC 3339 UTC. */
static void hour_text(char out[40], long long s)
{
	time_t tt = (time_t)s;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 40, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int auditweb_chart(struct auditdb *db, const struct auditq_filter *f,
		   bool by_agent, int top, json_t **chart,
		   struct sbx_error **err)
{
	struct auditq_sql w;
	struct strbuf sql = STRBUF_INIT;
	const char *col = by_agent ? "agent_ref" : "tenant";
	long long h0 = f->since_us / 3600000000LL,
		  h1 = (f->until_us + 3600000000LL - 1) / 3600000000LL;
	long long nh = h1 - h0;
	json_t *doc, *hours, *series, *byrank[64] = {0};
	PGresult *r;
	char t[40];
	int rc;

	*chart = NULL;
	if (top < 1 || top > 62 || nh < 1 || nh > 24 * 366)
		die_bug("auditweb_chart: top %d, %lld hours", top, nh);
	if (auditq_check_filter(f, err))
		return -1;
	auditq_where_sql(f, 0, &w);
	/* Buckets per key and hour, the top keys ranked by count (ties by
	 * key), and everything else summed as rank top + 1. */
	strbuf_addf(
	    &sql,
	    "WITH b AS (SELECT %s AS k, (extract(epoch FROM "
	    "date_trunc('hour', created_at AT TIME ZONE 'UTC')) / "
	    "3600)::bigint AS h, count(*) FILTER (WHERE ok) AS n_ok, "
	    "count(*) FILTER (WHERE NOT ok) AS n_bad FROM "
	    "sandbox_operations%s GROUP BY 1, 2), "
	    "t AS (SELECT k, row_number() OVER (ORDER BY sum(n_ok + "
	    "n_bad) DESC, k NULLS FIRST) AS r FROM b GROUP BY k "
	    "ORDER BY r LIMIT %d) "
	    "SELECT coalesce(t.r, %d), min(b.k), bool_and(b.k IS NULL), "
	    "b.h, sum(b.n_ok), sum(b.n_bad) FROM b LEFT JOIN t ON t.k "
	    "IS NOT DISTINCT FROM b.k GROUP BY 1, b.h ORDER BY 1, b.h",
	    col, w.sql, top, top + 1);
	rc = auditdb_run(auditdb_conn(db), "counting operations per hour",
			 sql.buf, w.nparams, w.params, &r, err);
	strbuf_release(&sql);
	auditq_sql_free(&w);
	if (rc)
		return -1;
	hours = json_array();
	for (long long h = h0; h < h1; h++) {
		hour_text(t, h * 3600);
		json_array_append_new(hours, json_string(t));
	}
	series = json_array();
	for (int i = 0; i < sym_PQntuples(r); i++) {
		long long rank = strtoll(sym_PQgetvalue(r, i, 0), NULL, 10);
		long long h = strtoll(sym_PQgetvalue(r, i, 3), NULL, 10) - h0;
		json_t *s;

		if (rank < 1 || rank > top + 1 || h < 0 || h >= nh)
			continue;
		s = byrank[rank];
		if (!s) {
			json_t *ok = json_array(), *bad = json_array();

			for (long long k = 0; k < nh; k++) {
				json_array_append_new(ok, json_integer(0));
				json_array_append_new(bad, json_integer(0));
			}
			if (rank == top + 1)
				s = xjson_pack("{s:n, s:b}", "key", "other",
					       true);
			else if (!strcmp(sym_PQgetvalue(r, i, 2), "t"))
				s = xjson_pack("{s:n}", "key");
			else
				s = xjson_pack(
				    "{s:o}", "key",
				    xjson_text(sym_PQgetvalue(r, i, 1)));
			json_object_set_new(s, "ok", ok);
			json_object_set_new(s, "failed", bad);
			byrank[rank] = s;
		}
		json_array_set_new(
		    json_object_get(s, "ok"), (size_t)h,
		    json_integer(strtoll(sym_PQgetvalue(r, i, 4), NULL, 10)));
		json_array_set_new(
		    json_object_get(s, "failed"), (size_t)h,
		    json_integer(strtoll(sym_PQgetvalue(r, i, 5), NULL, 10)));
	}
	sym_PQclear(r);
	for (int k = 1; k <= top + 1; k++)
		if (byrank[k])
			json_array_append_new(series, byrank[k]);
	doc = json_object();
	hour_text(t, f->since_us / 1000000);
	json_object_set_new(doc, "since", json_string(t));
	hour_text(t, f->until_us / 1000000);
	json_object_set_new(doc, "until", json_string(t));
	json_object_set_new(doc, "hours", hours);
	json_object_set_new(doc, "series", series);
	*chart = doc;
	return 0;
}

/*
 * t-audit-part.c - the rows and the writers of tests/t-audit-partition.sh
 * (migration 7, rows by day, applied online):
 *
 *   schema2 URL DAYS CHAINS ROWS
 *	the schema as migration 2 left it, made by hand from migrations 1
 *	and 2, and ROWS rows of hash_version 1 (as sbxcat wrote them before
 *	version 2), hashed with audit_chain_hash onto CHAINS chains, spread
 *	over the last DAYS days; the chains' heads as the writer keeps them.
 *   fill URL ROWS DAYS CHAINS
 *	ROWS rows written by sbxcat's own insert (auditdb_insert, 500 a
 *	call) onto CHAINS chains, spread over the last DAYS days, oldest
 *	first, a third of them with an agent and a run.
 *   write URL STOPFILE
 *	a writer of the service: one row a call (auditdb_insert, so a row
 *	retried after an error is never in twice) onto 4 chains of its own,
 *	until STOPFILE exists (at most 120 s); a call that failed is retried
 *	(the same row) after 20 ms.  At the end: "committed N retried R
 *	calls C max_ms M p99_ms P max_end_ms E" (E: when the longest call
 *	ended, Unix ms) and the distinct errors, one a line.
 *   sweep URL CUTOFF_US
 *	the sweep as sbxcat wrote it before migration 7 (auditdb_sweep's
 *	statements: each chain's prefix of rows older than the cutoff
 *	deleted, 200 a transaction, its swept hash kept), racing the
 *	migration's copy; prints the rows it deleted.
 */
#include "config.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/pq-dl.h"
#include "basic/alloc.h"
#include "basic/error.h"

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "t-audit-part: %s: %s\n", what, why ? why : "?");
	exit(1);
}

static struct auditdb *connect_db(const char *url)
{
	struct sbx_error *err = NULL;
	struct auditdb *db;

	if (auditdb_connect(url, NULL, &db, &err) < 0)
		die("connect", err->msg);
	return db;
}

/* Run q; die unless it worked.  The result, or NULL for a command. */
static PGresult *must(struct auditdb *db, const char *q)
{
	PGresult *res = sym_PQexec(auditdb_conn(db), q);
	ExecStatusType st = sym_PQresultStatus(res);

	if (st == PGRES_COMMAND_OK) {
		sym_PQclear(res);
		return NULL;
	}
	if (st != PGRES_TUPLES_OK)
		die(q, sym_PQresultErrorMessage(res));
	return res;
}

static void hex32(const unsigned char h[32], char out[65])
{
	for (int k = 0; k < 32; k++)
		sprintf(out + 2 * k, "%02x", h[k]);
}

/* A row id unique to this process and call. */
static void row_id(struct audit_row *r, unsigned long long n)
{
	snprintf(r->id, sizeof(r->id), "%08x-0000-4000-8000-%012llx",
		 (unsigned)getpid(), n);
}

static int do_schema2(char **a)
{
	struct auditdb *db = connect_db(a[0]);
	int days = atoi(a[1]), nchains = atoi(a[2]), n = atoi(a[3]);
	long long end = now_us() - 3600LL * 1000000,
		  span = (long long)days * 86400 * 1000000;
	unsigned char(*prev)[32] = xcalloc((size_t)nchains, 32);
	struct strbuf q = STRBUF_INIT;
	static const char *const targets[] = {"/work/a.txt", "a\\b",
					      "tab\\there.txt", "ls -la"};

	for (int i = 0; i < 2; i++) {
		const struct auditdb_migration *m = &auditdb_migrations[i];
		char v[256];

		must(db, m->sql);
		snprintf(v, sizeof(v),
			 "INSERT INTO schema_migrations (version, name) VALUES "
			 "(%d, '%s')",
			 m->version, m->name);
		must(db, v);
	}
	must(db, "BEGIN");
	for (int c = 0; c < nchains; c++) {
		strbuf_reset(&q);
		strbuf_addf(&q,
			    "INSERT INTO audit_chains (session_key, tenant, "
			    "head, nrows, swept_hash, swept_rows) VALUES "
			    "('s2-%d', 't%d', decode(repeat('00', 32), 'hex'), "
			    "0, decode(repeat('00', 32), 'hex'), 0)",
			    c, c % 3);
		must(db, q.buf);
	}
	for (int i = 0; i < n; i++) {
		struct audit_row r;
		char key[32], tenant[16], h[32], hx[65];
		int c = i % nchains;

		memset(&r, 0, sizeof(r));
		row_id(&r, (unsigned long long)i + 1);
		snprintf(key, sizeof(key), "s2-%d", c);
		snprintf(tenant, sizeof(tenant), "t%d", c % 3);
		r.created_us = end - span + span / n * i;
		r.tenant = tenant;
		r.session_key = key;
		r.runtime = (char *)"python";
		r.op = i % 5 == 4 ? AUDIT_EXECUTE : AUDIT_READ;
		r.target = (char *)targets[i % 4];
		r.ok = i % 7 != 3;
		r.has_exit = r.op == AUDIT_EXECUTE;
		r.exit_status = r.has_exit ? i % 3 : 0;
		r.bytes = i % 2 ? AUDIT_NONE : i;
		r.results = AUDIT_NONE;
		r.duration_ms = i % 100;
		r.detail = (char *)(r.ok ? "" : "no such file");
		audit_chain_hash(prev[c], &r, 1, (unsigned char *)h);
		memcpy(prev[c], h, 32);
		hex32((unsigned char *)h, hx);
		/* standard_conforming_strings: a backslash is itself */
		strbuf_reset(&q);
		strbuf_addf(
		    &q,
		    "INSERT INTO sandbox_operations (id, created_at, tenant, "
		    "session_key, runtime, op, target, ok, exit_status, bytes, "
		    "duration_ms, detail, hash, hash_version) VALUES ('%s', "
		    "'epoch'::timestamptz + %lld * interval '1 microsecond', "
		    "'%s', '%s', 'python', '%s', '",
		    r.id, r.created_us, tenant, key, audit_op_name(r.op));
		strbuf_addstr(&q, r.target); /* no quote in targets[] */
		strbuf_addf(&q, "', %s, ", r.ok ? "true" : "false");
		if (r.has_exit)
			strbuf_addf(&q, "%d, ", r.exit_status);
		else
			strbuf_addstr(&q, "NULL, ");
		if (r.bytes == AUDIT_NONE)
			strbuf_addstr(&q, "NULL, ");
		else
			strbuf_addf(&q, "%lld, ", r.bytes);
		strbuf_addf(&q, "%lld, '%s', decode('%s', 'hex'), 1)",
			    r.duration_ms, r.detail, hx);
		must(db, q.buf);
	}
	must(db,
	     "UPDATE audit_chains c SET head = l.hash, head_seq = l.seq, "
	     "nrows = l.n FROM (SELECT DISTINCT ON (session_key) "
	     "session_key, hash, seq, count(*) OVER (PARTITION BY "
	     "session_key) AS n FROM sandbox_operations ORDER BY "
	     "session_key, seq DESC) l WHERE l.session_key = c.session_key");
	must(db, "COMMIT");
	strbuf_release(&q);
	free(prev);
	auditdb_close(db);
	return 0;
}

/* Rows i.. of the fill: row i on chain i % nchains, created at
 * start + step * i (oldest first, so a chain's seq order is its time
 * order, as a writer's is). */
static void fill_row(struct audit_row *r, long i, int nchains, long long start,
		     long long step)
{
	char s[64];
	int c = (int)(i % nchains);

	audit_row_init(r, i % 3 ? AUDIT_READ : AUDIT_WRITE);
	r->created_us = start + step * i;
	snprintf(s, sizeof(s), "t%d", c % 4);
	audit_row_set(&r->tenant, s, strlen(s), AUDIT_TARGET_MAX);
	snprintf(s, sizeof(s), "s6-%d", c);
	audit_row_set(&r->session_key, s, strlen(s), AUDIT_TARGET_MAX);
	audit_row_set(&r->runtime, "python", 6, AUDIT_TARGET_MAX);
	snprintf(s, sizeof(s), "/work/dir%d/file-%ld.txt", c % 10, i);
	audit_row_set_target(r, s, strlen(s));
	r->ok = i % 11 != 5;
	r->bytes = i % 4096;
	r->duration_ms = i % 50;
	if (!r->ok)
		audit_row_set(&r->detail, "permission denied", 17,
			      AUDIT_TARGET_MAX);
	if (i % 3 == 1) {
		snprintf(s, sizeof(s), "agent-%d", c % 5);
		r->agent = xstrdup(s);
		snprintf(s, sizeof(s), "run-%d", c % 7);
		r->run = xstrdup(s);
	}
}

static int do_fill(char **a)
{
	struct auditdb *db = connect_db(a[0]);
	long n = atol(a[1]);
	int days = atoi(a[2]), nchains = atoi(a[3]);
	long long end = now_us() - 3600LL * 1000000,
		  span = (long long)days * 86400 * 1000000;
	struct audit_row rows[500];
	struct sbx_error *err = NULL;

	for (long i = 0; i < n; i += 500) {
		long m = n - i < 500 ? n - i : 500;
		size_t ins, skip;

		for (long j = 0; j < m; j++)
			fill_row(&rows[j], i + j, nchains, end - span,
				 span / n);
		if (auditdb_insert(db, rows, (size_t)m, &ins, &skip, &err) < 0)
			die("insert", err->msg);
		for (long j = 0; j < m; j++)
			audit_row_release(&rows[j]);
	}
	auditdb_close(db);
	return 0;
}

static int cmp_ll(const void *x, const void *y)
{
	long long a = *(const long long *)x, b = *(const long long *)y;

	return (a > b) - (a < b);
}

#define MAXERRS 8

static int do_write(char **a)
{
	struct auditdb *db = connect_db(a[0]);
	const char *stop = a[1];
	long long until = mono_us() + 120LL * 1000000, maxlat = 0, maxat = 0;
	long long *lat = NULL;
	size_t nlat = 0, cap = 0;
	long committed = 0, retried = 0;
	char *errs[MAXERRS];
	int nerrs = 0;
	struct stat st;

	for (long i = 0; stat(stop, &st) < 0 && mono_us() < until; i++) {
		struct audit_row r;
		char s[32];

		audit_row_init(&r, AUDIT_EXECUTE);
		audit_row_set(&r.tenant, "tw", 2, AUDIT_TARGET_MAX);
		snprintf(s, sizeof(s), "w-%ld", i % 4);
		audit_row_set(&r.session_key, s, strlen(s), AUDIT_TARGET_MAX);
		audit_row_set(&r.runtime, "python", 6, AUDIT_TARGET_MAX);
		snprintf(s, sizeof(s), "echo %ld", i);
		audit_row_set_target(&r, s, strlen(s));
		r.ok = true;
		r.has_exit = true;
		r.duration_ms = 1;
		for (int tries = 0;; tries++) {
			struct sbx_error *err = NULL;
			size_t ins = 0, skip = 0;
			long long t0 = mono_us(), d;
			int rc = auditdb_insert(db, &r, 1, &ins, &skip, &err);

			d = mono_us() - t0;
			if (nlat == cap) {
				cap = cap ? 2 * cap : 4096;
				lat = xrealloc(lat, cap * sizeof(*lat));
			}
			lat[nlat++] = d;
			if (d > maxlat) {
				maxlat = d;
				maxat = now_us();
			}
			if (rc == 0) {
				committed += (long)(ins + skip);
				break;
			}
			retried++;
			bool seen = false;
			for (int k = 0; k < nerrs; k++)
				seen |= !strcmp(errs[k], err->msg);
			if (!seen && nerrs < MAXERRS)
				errs[nerrs++] = xstrdup(err->msg);
			sbx_error_free(&err);
			if (tries >= 500 || mono_us() > until)
				die("insert", "still failing after retries");
			usleep(20000);
			/* A connection the server dropped: a new one. */
			if (!auditdb_reusable(db)) {
				auditdb_close(db);
				db = connect_db(a[0]);
			}
		}
		audit_row_release(&r);
	}
	qsort(lat, nlat, sizeof(*lat), cmp_ll);
	printf("committed %ld retried %ld calls %zu max_ms %.1f p99_ms %.1f "
	       "max_end_ms %lld\n",
	       committed, retried, nlat, maxlat / 1000.0,
	       nlat ? lat[nlat * 99 / 100] / 1000.0 : 0.0, maxat / 1000);
	for (int k = 0; k < nerrs; k++) {
		printf("error %s\n", errs[k]);
		free(errs[k]);
	}
	free(lat);
	auditdb_close(db);
	return 0;
}

/* auditdb_sweep's statements, as they were before migration 7. */
static int do_sweep(char **a)
{
	struct auditdb *db = connect_db(a[0]);
	PGconn *c = auditdb_conn(db);
	const char *cutoff = a[1];
	long long total = 0;
	PGresult *res, *k;

	const char *p1[1] = {cutoff};
	res = sym_PQexecParams(c,
			       "SELECT DISTINCT session_key COLLATE \"C\" AS s "
			       "FROM sandbox_operations WHERE created_at < "
			       "'epoch'::timestamptz + $1::bigint * interval "
			       "'1 microsecond' ORDER BY s",
			       1, NULL, p1, NULL, NULL, 0);
	if (sym_PQresultStatus(res) != PGRES_TUPLES_OK)
		die("sweep", sym_PQresultErrorMessage(res));
	for (int i = 0; i < sym_PQntuples(res); i++) {
		const char *s = sym_PQgetvalue(res, i, 0);
		int gone;

		do {
			const char *p[3] = {s, cutoff, "200"};
			int n = 0;

			sym_PQclear(sym_PQexec(c, "BEGIN"));
			sym_PQclear(sym_PQexecParams(
			    c,
			    "SELECT 1 FROM audit_chains WHERE session_key = $1 "
			    "FOR UPDATE",
			    1, NULL, p, NULL, NULL, 0));
			k = sym_PQexecParams(
			    c,
			    "SELECT seq, hash, created_at < "
			    "'epoch'::timestamptz + $2::bigint * interval "
			    "'1 microsecond' FROM sandbox_operations WHERE "
			    "session_key = $1 ORDER BY seq LIMIT $3::bigint",
			    3, NULL, p, NULL, NULL, 0);
			if (sym_PQresultStatus(k) != PGRES_TUPLES_OK)
				die("sweep", sym_PQresultErrorMessage(k));
			while (n < sym_PQntuples(k) &&
			       !strcmp(sym_PQgetvalue(k, n, 2), "t"))
				n++;
			gone = n;
			if (n) {
				char nb[24];
				snprintf(nb, sizeof(nb), "%d", n);
				const char *q[3] = {
				    s, sym_PQgetvalue(k, n - 1, 0), nb};
				const char *u[3] = {
				    s, sym_PQgetvalue(k, n - 1, 1), nb};
				PGresult *d = sym_PQexecParams(
				    c,
				    "DELETE FROM sandbox_operations WHERE "
				    "session_key = $1 AND seq <= $2::bigint",
				    2, NULL, q, NULL, NULL, 0);
				if (sym_PQresultStatus(d) != PGRES_COMMAND_OK)
					die("sweep",
					    sym_PQresultErrorMessage(d));
				total += atoll(sym_PQcmdTuples(d));
				sym_PQclear(d);
				d = sym_PQexecParams(
				    c,
				    "UPDATE audit_chains SET swept_hash = "
				    "$2::bytea, swept_rows = swept_rows + "
				    "$3::bigint, nrows = nrows - $3::bigint, "
				    "swept_at = now() WHERE session_key = $1",
				    3, NULL, u, NULL, NULL, 0);
				if (sym_PQresultStatus(d) != PGRES_COMMAND_OK)
					die("sweep",
					    sym_PQresultErrorMessage(d));
				sym_PQclear(d);
			}
			sym_PQclear(k);
			k = sym_PQexec(c, "COMMIT");
			if (sym_PQresultStatus(k) != PGRES_COMMAND_OK)
				die("sweep", sym_PQresultErrorMessage(k));
			sym_PQclear(k);
		} while (gone == 200);
	}
	sym_PQclear(res);
	auditdb_close(db);
	printf("%lld\n", total);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int nargs;
		int (*fn)(char **);
	} cmds[] = {
	    {"schema2", 4, do_schema2},
	    {"fill", 4, do_fill},
	    {"write", 2, do_write},
	    {"sweep", 2, do_sweep},
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (argc == 2 + cmds[i].nargs && !strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argv + 2);
	fprintf(stderr, "usage: t-audit-part schema2 URL DAYS CHAINS ROWS | "
			"fill URL ROWS DAYS CHAINS | write URL STOPFILE | "
			"sweep URL CUTOFF_US\n");
	return 2;
}

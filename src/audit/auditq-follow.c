/*
 * auditq-follow.c - the rows of a filter as they commit, each once
 * (auditq-follow.h says the rule and why it is exact).
 *
 * A read is one statement, so one snapshot: its first row (NULL seq, so
 * first in the order) carries pg_current_snapshot() of that very
 * statement and the highest seq among the rows it read before the
 * filter; the rows follow in seq order, one at a time (single-row mode:
 * a burst after an outage costs no memory).  Only when the last row has
 * been handed on does that snapshot become the base of the next read.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "audit/auditdb-pq.h"
#include "audit/auditdb.h"
#include "audit/auditq-follow.h"
#include "audit/auditq.h"
#include "audit/pq-dl.h"
#include "basic/alloc.h"
#include "basic/error.h"

/* Seqs below the cut a second cut read handed on, kept to leave out: a
 * cut within a cut is rare, and these are only rows that committed late
 * below the first cut. */
#define FOLLOW_EXTRA_MAX 4096
#define FOLLOW_TAIL_MAX 10000

struct auditq_follow {
	const struct auditq_filter *f;
	char *base;	   /* the last whole read's snapshot */
	long long top;	   /* the highest seq base sees (any filter) */
	char *started;	   /* pg_postmaster_start_time() base was read on */
	bool restarted;	   /* reads since a restart take seq > top too */
	char *cut;	   /* a cut read's snapshot, or NULL */
	long long cut_seq; /* ... the last seq it handed on */
	long long *extra;  /* seqs below cut_seq handed on by later cuts */
	size_t nextra, aextra;
};

struct auditq_follow *auditq_follow_new(const struct auditq_filter *f)
{
	struct auditq_follow *fo = xcalloc(1, sizeof(*fo));

	fo->f = f;
	return fo;
}

void auditq_follow_free(struct auditq_follow *fo)
{
	if (!fo)
		return;
	free(fo->base);
	free(fo->started);
	free(fo->cut);
	free(fo->extra);
	free(fo);
}

#define WHAT "following the audit"

/* A statement with no parameters, as auditq.c runs its own. */
static int exec(PGconn *c, const char *sql, PGresult **res,
		struct sbx_error **err)
{
	return auditdb_run(c, WHAT, sql, 0, NULL, res, err);
}

static int listen_on(PGconn *c, struct sbx_error **err)
{
	return exec(c, "LISTEN sbxcat_audit", NULL, err);
}

int auditq_follow_start(struct auditq_follow *fo, struct auditdb *db,
			unsigned long tail, auditq_follow_row row, void *arg,
			struct sbx_error **err)
{
	PGconn *c = auditdb_conn(db);
	PGresult *r = NULL;
	json_t *rows = NULL;
	char *cursor = NULL;
	int rc = -1;

	if (tail > FOLLOW_TAIL_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "the last %lu rows: at most %d", tail,
				     FOLLOW_TAIL_MAX);
	if (auditq_check_filter(fo->f, err))
		return -1;
	/* LISTEN first: a commit between the snapshot and the LISTEN would
	 * otherwise wake no one until the fallback's poll. */
	if (listen_on(c, err) ||
	    exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", NULL,
		 err))
		return -1;
	/* head_seq is each chain's last row's: their max is the highest
	 * seq of the snapshot, without reading sandbox_operations. */
	if (exec(c,
		 "SELECT pg_current_snapshot()::text, coalesce((SELECT "
		 "max(head_seq) FROM audit_chains), 0), "
		 "pg_postmaster_start_time()::text",
		 &r, err))
		goto rollback;
	free(fo->base);
	free(fo->started);
	fo->base = xstrdup(sym_PQgetvalue(r, 0, 0));
	fo->top = strtoll(sym_PQgetvalue(r, 0, 1), NULL, 10);
	fo->started = xstrdup(sym_PQgetvalue(r, 0, 2));
	sym_PQclear(r);
	/* The page of ls in the same snapshot: the tail and the first poll
	 * meet exactly. */
	if (tail && auditq_page(db, fo->f, tail, &rows, &cursor, err))
		goto rollback;
	if (exec(c, "COMMIT", NULL, err))
		goto out;
	for (size_t i = json_array_size(rows); i-- > 0;)
		if (row(arg, json_array_get(rows, i), err))
			goto out;
	rc = 0;
	goto out;
rollback:
	sym_PQclear(sym_PQexec(c, "ROLLBACK"));
out:
	json_decref(rows);
	free(cursor);
	return rc;
}

int auditq_follow_resume(struct auditq_follow *fo, struct auditdb *db,
			 bool *restarted, struct sbx_error **err)
{
	PGconn *c = auditdb_conn(db);
	PGresult *r;

	*restarted = false;
	if (listen_on(c, err) ||
	    exec(c, "SELECT pg_postmaster_start_time()::text", &r, err))
		return -1;
	if (strcmp(sym_PQgetvalue(r, 0, 0), fo->started)) {
		*restarted = fo->restarted = true;
		free(fo->started);
		fo->started = xstrdup(sym_PQgetvalue(r, 0, 0));
	}
	sym_PQclear(r);
	return 0;
}

/* The statement's parameters, numbered as added. */
struct params {
	char *v[8];
	int n;
};

static int param(struct params *p, char *v)
{
	p->v[p->n] = v;
	return ++p->n;
}

static void build(struct auditq_follow *fo, struct strbuf *sql,
		  struct auditq_sql *where)
{
	struct strbuf cut = STRBUF_INIT;
	struct params p = {0};
	int b = param(&p, xstrdup(fo->base));

	strbuf_addf(
	    sql,
	    "WITH d AS MATERIALIZED (SELECT * FROM sandbox_operations "
	    "WHERE xact >= pg_snapshot_xmax($%d::pg_snapshot) OR "
	    "xact = ANY(ARRAY(SELECT pg_snapshot_xip($%d::pg_snapshot)))",
	    b, b);
	if (fo->restarted)
		strbuf_addf(sql, " OR seq > $%d::bigint",
			    param(&p, xasprintf("%lld", fo->top)));
	strbuf_addstr(sql,
		      ") SELECT NULL::bigint, pg_current_snapshot()::text, "
		      "(SELECT max(seq) FROM d), NULL::text UNION ALL "
		      "SELECT seq, NULL, NULL, ");
	auditq_row_json_sql(sql);
	strbuf_addstr(sql, "::text FROM d");
	/* The cut read's rows already handed on are left out. */
	if (fo->cut) {
		int k = param(&p, xasprintf("%lld", fo->cut_seq));
		int s = param(&p, xstrdup(fo->cut));

		strbuf_addf(&cut,
			    "NOT (seq <= $%d::bigint AND coalesce("
			    "pg_visible_in_snapshot(xact, $%d::pg_snapshot), "
			    "true))",
			    k, s);
		if (fo->nextra) {
			struct strbuf a = STRBUF_INIT;

			for (size_t i = 0; i < fo->nextra; i++)
				strbuf_addf(&a, "%s%lld", i ? "," : "{",
					    fo->extra[i]);
			strbuf_addch(&a, '}');
			strbuf_addf(&cut, " AND seq <> ALL($%d::bigint[])",
				    param(&p, strbuf_detach(&a, NULL)));
		}
	}
	auditq_where_sql(fo->f, p.n, where);
	strbuf_addstr(sql, where->sql);
	if (cut.len)
		strbuf_addf(sql, "%s%s", *where->sql ? " AND " : " WHERE ",
			    cut.buf);
	strbuf_addstr(sql, " ORDER BY 1 NULLS FIRST");
	for (int i = 0; i < p.n; i++) {
		free(where->params[i]);
		where->params[i] = p.v[i];
	}
	strbuf_release(&cut);
}

/* The read cut after handing rows up to seq k, on snapshot snap. */
static void cut_at(struct auditq_follow *fo, const char *snap, long long k)
{
	if (!fo->cut || k >= fo->cut_seq) {
		/* Every row of snap up to k was handed on, those of the
		 * earlier cut included (its snapshot is older): one cut. */
		free(fo->cut);
		fo->cut = xstrdup(snap);
		fo->cut_seq = k;
		fo->nextra = 0;
	}
}

int auditq_follow_poll(struct auditq_follow *fo, struct auditdb *db,
		       auditq_follow_row row, void *arg, unsigned long *rows,
		       struct sbx_error **err)
{
	PGconn *c = auditdb_conn(db);
	struct strbuf sql = STRBUF_INIT;
	struct auditq_sql where;
	char *snap = NULL;
	long long top = fo->top, last = -1;
	bool handed = false, stopped = false;
	PGresult *r;
	int rc = -1;

	*rows = 0;
	build(fo, &sql, &where);
	if (!sym_PQsendQueryParams(c, sql.buf, where.nparams, NULL,
				   (const char *const *)where.params, NULL,
				   NULL, 0) ||
	    !sym_PQsetSingleRowMode(c)) {
		auditdb_pq_error(err, WHAT, sym_PQerrorMessage(c));
		goto out;
	}
	while ((r = sym_PQgetResult(c))) {
		ExecStatusType st = sym_PQresultStatus(r);

		if (st == PGRES_SINGLE_TUPLE && !stopped) {
			if (sym_PQgetisnull(r, 0, 0)) {
				snap = xstrdup(sym_PQgetvalue(r, 0, 1));
				if (!sym_PQgetisnull(r, 0, 2))
					top = strtoll(sym_PQgetvalue(r, 0, 2),
						      NULL, 10);
			} else {
				long long seq =
				    strtoll(sym_PQgetvalue(r, 0, 0), NULL, 10);
				json_t *j = auditdb_row_object(
				    sym_PQgetvalue(r, 0, 3), WHAT, err);

				if (!j || row(arg, j, err)) {
					json_decref(j);
					stopped = true;
				} else {
					json_decref(j);
					last = seq;
					handed = true;
					(*rows)++;
				}
			}
		} else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK &&
			   !stopped) {
			auditdb_pq_error(err, WHAT,
					 sym_PQresultErrorMessage(r));
			stopped = true;
		}
		sym_PQclear(r);
	}
	if (!stopped && !snap) {
		auditdb_pq_error(err, WHAT, sym_PQerrorMessage(c));
		stopped = true;
	}
	if (stopped) {
		/* Cut: what was handed on must not be handed again. */
		if (handed && snap) {
			if (fo->cut && last < fo->cut_seq) {
				if (fo->nextra >= FOLLOW_EXTRA_MAX) {
					sbx_error_set(
					    err, SBX_E_INTERNAL, 0,
					    "following the audit: too many "
					    "cut reads in a row");
					goto out;
				}
				ALLOC_GROW(fo->extra, fo->nextra + 1,
					   fo->aextra);
				fo->extra[fo->nextra++] = last;
			} else {
				cut_at(fo, snap, last);
			}
		}
		goto out;
	}
	free(fo->base);
	fo->base = steal_pointer(&snap);
	fo->top = top > fo->top ? top : fo->top;
	fo->restarted = false;
	free(fo->cut);
	fo->cut = NULL;
	fo->nextra = 0;
	rc = 0;
out:
	free(snap);
	strbuf_release(&sql);
	auditq_sql_free(&where);
	return rc;
}

int auditq_follow_wait(struct auditdb *db, int timeout_ms,
		       const atomic_int *cancel, int out_fd,
		       struct sbx_error **err)
{
	PGconn *c = auditdb_conn(db);
	int waited = 0, got = 0;

	for (;;) {
		PGnotify *n;
		struct pollfd pfd[2] = {
		    {.fd = sym_PQsocket(c), .events = POLLIN}, {.fd = out_fd}};
		int slice;

		if (!sym_PQconsumeInput(c))
			return auditdb_pq_error(err, WHAT,
						sym_PQerrorMessage(c));
		while ((n = sym_PQnotifies(c))) {
			got = 1;
			sym_PQfreemem(n);
		}
		if (got || waited >= timeout_ms ||
		    (cancel && atomic_load(cancel)))
			return got;
		/* Slices: a signal between the check and poll(2) is seen
		 * within one. */
		slice = timeout_ms - waited < 200 ? timeout_ms - waited : 200;
		if (pfd[0].fd < 0)
			return auditdb_pq_error(err, WHAT,
						"the connection has no socket");
		if (poll(pfd, out_fd >= 0 ? 2 : 1, slice) < 0 && errno != EINTR)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "following the audit: poll");
		/* The write end of a pipe whose reader left polls POLLERR:
		 * no need to wait for the next row to learn it. */
		if (out_fd >= 0 && (pfd[1].revents & (POLLERR | POLLHUP)))
			return sbx_error_set(err, SBX_E_UNAVAILABLE, EPIPE,
					     "writing the output");
		waited += slice;
	}
}

bool auditq_follow_lost(struct auditdb *db)
{
	return sym_PQstatus(auditdb_conn(db)) != CONNECTION_OK;
}

/*
 * auditq.c - the auditors' queries over sandbox_operations (auditq.h):
 * the opaque keyset cursor, the page query, the streamed export and the
 * stats (what --since and --until say is audit-time.c's).
 *
 * One WHERE builder serves all of them.  It writes every value either as
 * a $n parameter (the page and the stats: PQexecParams) or, for COPY,
 * which takes no parameters, as a literal quoted by PQescapeLiteral on the
 * live connection (so with its encoding and standard_conforming_strings).
 * COPY is what streams a result in constant memory on both ends; the
 * other server-side way, a parameterised DECLARE CURSOR and FETCH in
 * batches, costs a round trip per batch and still builds every row as a
 * tuple for libpq.  The literal is quoted by libpq itself, never by us,
 * and followed by the same ::type cast the parameter form has.
 *
 * A row's JSON is made by the server (sql_row_json, from the column table
 * of audit.h) for the page, the slowest
 * rows of the stats and the jsonl export alike, so the three cannot drift:
 * audit_row_json's keys and created_at as RFC 3339 UTC with six fraction
 * digits, plus "seq".  Times go to the server as "YYYY-MM-DD
 * HH:MM:SS.ffffff+00" text cast to timestamptz: exact to the microsecond,
 * where to_timestamp(double) is not.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "audit/audit.h"
#include "audit/auditdb-pq.h"
#include "audit/auditdb.h"
#include "audit/auditq.h"
#include "audit/pq-dl.h"
#include "basic/alloc.h"
#include "basic/base64.h"
#include "basic/error.h"
#include "basic/text.h"

/* ---- times (their parsing: audit-time.c) ---- */

/* "YYYY-MM-DD HH:MM:SS.ffffff+00" (sql) or RFC 3339 "...T...Z". */
static void format_us(char out[64], long long us, bool sql)
{
	char t[32];
	size_t n;

	audit_time_format(t, us);
	n = strlen(t);
	if (n != 27 || t[n - 1] != 'Z')
		die_bug("time %lld out of range", us);
	if (!sql) {
		memcpy(out, t, n + 1);
		return;
	}
	t[10] = ' ';
	t[n - 1] = '\0';
	snprintf(out, 64, "%s+00", t);
}

/* ---- cursors ---- */

/*
 * The cursor is base64url (RFC 4648 section 5, no padding) of
 * "1:CREATED_US:SEQ", both in canonical decimal.  Opaque to users, so the
 * format may change with the version; decode accepts exactly what encode
 * makes, which it checks at the end by encoding again.
 */
#define CURSOR_VERSION "1"

void auditq_cursor_encode(long long created_us, long long seq, char out[64])
{
	struct strbuf sb = STRBUF_INIT;
	char text[48];
	int n;

	if (created_us < 0 || seq < 0)
		die_bug("cursor of a negative (%lld, %lld)", created_us, seq);
	n = snprintf(text, sizeof(text), CURSOR_VERSION ":%lld:%lld",
		     created_us, seq);
	base64_encode(&sb, text, (size_t)n, BASE64_URL, false);
	snprintf(out, 64, "%s", strbuf_str(&sb));
	strbuf_release(&sb);
}

/* A canonical non-negative decimal (no sign, no leading zero) at *p. */
static bool cursor_number(const char **p, long long *v)
{
	const char *s = *p;

	*v = 0;
	if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
		return false;
	for (; *s >= '0' && *s <= '9'; s++)
		if (__builtin_mul_overflow(*v, 10, v) ||
		    __builtin_add_overflow(*v, *s - '0', v))
			return false;
	*p = s;
	return true;
}

int auditq_cursor_decode(const char *s, long long *created_us, long long *seq,
			 struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	char text[48], again[64];
	size_t len = strlen(s), bad;
	const char *p;
	long long a, b;

	/* 63 characters at most: what encode's 64 bytes can hold */
	if (len == 0 || len > 63 ||
	    base64_decode(&sb, s, len, BASE64_URL, false, &bad) < 0 ||
	    sb.len >= sizeof(text) || strlen(strbuf_str(&sb)) != sb.len) {
		strbuf_release(&sb);
		goto bad;
	}
	memcpy(text, strbuf_str(&sb), sb.len + 1);
	strbuf_release(&sb);
	p = text;
	if (strncmp(p, CURSOR_VERSION ":", strlen(CURSOR_VERSION ":")))
		goto bad;
	p += strlen(CURSOR_VERSION ":");
	if (!cursor_number(&p, &a) || *p++ != ':' || !cursor_number(&p, &b) ||
	    *p)
		goto bad;
	/* created_at lies in 1970-9999 (the schema's CHECK) */
	if (a > AUDIT_US_MAX)
		goto bad;
	auditq_cursor_encode(a, b, again);
	if (strcmp(again, s))
		goto bad;
	*created_us = a;
	*seq = b;
	return 0;
bad:
	return sbx_error_set(err, SBX_E_INVALID, 0,
			     "not a cursor sbxcat printed");
}

/* ---- the SQL ---- */

/* A row as the server makes its JSON (audit_row_json's shape, plus
 * "seq" last), from the column table (audit.h). */
static void sql_row_json(struct strbuf *sb)
{
	strbuf_addstr(sb, "json_build_object(");
	for (size_t i = 0; i < audit_ncolumns; i++) {
		strbuf_addf(sb, "%s'%s', ", i ? ", " : "",
			    audit_columns[i].key);
		audit_column_json_sql(&audit_columns[i], sb);
	}
	strbuf_addstr(sb, ", 'seq', seq)");
}

/* The same as CSV columns named as the JSON keys; seq follows the id. */
static void sql_row_csv(struct strbuf *sb)
{
	for (size_t i = 0; i < audit_ncolumns; i++) {
		if (i)
			strbuf_addstr(sb, ", ");
		audit_column_csv_sql(&audit_columns[i], sb);
		if (audit_columns[i].type == AUDIT_COL_UUID)
			strbuf_addstr(sb, ", seq");
	}
}

#define CREATED_US "(extract(epoch FROM created_at) * 1000000)::bigint"
#define ORDER " ORDER BY created_at DESC, seq DESC"

struct qb {
	struct strbuf sql;
	char **params;
	size_t n, alloc;
	void *lit; /* a PGconn *: values as escaped literals, not $n */
	bool bad;  /* PQescapeLiteral refused a value */
	const char *and;
};

static void qb_value(struct qb *q, const char *v, const char *cast)
{
	if (q->lit) {
		char *e = sym_PQescapeLiteral(q->lit, v, strlen(v));

		if (!e) {
			q->bad = true;
			strbuf_addstr(&q->sql, "NULL");
		} else {
			strbuf_addstr(&q->sql, e);
			sym_PQfreemem(e);
		}
	} else {
		ALLOC_GROW(q->params, q->n + 1, q->alloc);
		q->params[q->n++] = xstrdup(v);
		strbuf_addf(&q->sql, "$%zu", q->n);
	}
	strbuf_addstr(&q->sql, cast);
}

/* " WHERE " or " AND " then the text up to the value, the value, its
 * cast and what follows it. */
static void qb_cond(struct qb *q, const char *before, const char *v,
		    const char *cast)
{
	strbuf_addstr(&q->sql, q->and);
	q->and = " AND ";
	strbuf_addstr(&q->sql, before);
	qb_value(q, v, cast);
}

static void qb_time(struct qb *q, const char *before, long long us)
{
	char t[64];

	format_us(t, us, true);
	qb_cond(q, before, t, "::timestamptz");
}

static void qb_where(struct qb *q, const struct auditq_filter *f, bool after)
{
	q->and = " WHERE ";
	if (f->tenant)
		qb_cond(q, "tenant = ", f->tenant, "::text");
	/* sbxcat's key or the wire's id (the platform's name of a wire
	 * session): each has its index, which the planner ORs (a bitmap of
	 * the two; docs/audit.md). */
	if (f->session) {
		qb_cond(q, "(session_key = ", f->session, "::text");
		strbuf_addstr(&q->sql, " OR wire_id = ");
		qb_value(q, f->session, "::text)");
	}
	if (f->agent)
		qb_cond(q, "agent_ref = ", f->agent, "::text");
	if (f->run)
		qb_cond(q, "run_ref = ", f->run, "::text");
	if (f->ops) {
		struct strbuf a = STRBUF_INIT;
		int one = -1, nops = 0;

		for (int i = 0; i < AUDIT_NOPS; i++)
			if (f->ops & (1u << i)) {
				strbuf_addstr(&a, nops ? "," : "{");
				strbuf_addstr(&a, audit_op_name(i));
				one = i;
				nops++;
			}
		strbuf_addch(&a, '}');
		/* One op as equality: PostgreSQL 15 reads an index in order
		 * under = but not under = ANY (sorting every match then). */
		if (nops == 1)
			qb_cond(q, "op = ", audit_op_name(one), "::text");
		else
			qb_cond(q, "op = ANY(", a.buf, "::text[])");
		strbuf_release(&a);
	}
	if (f->failed) {
		strbuf_addstr(&q->sql, q->and);
		q->and = " AND ";
		strbuf_addstr(&q->sql, "NOT ok");
	}
	if (f->search) {
		struct strbuf pat = STRBUF_INIT;
		/* Under 3 characters the trigram index cannot narrow a
		 * search: walk the time order instead (a page ends at its
		 * limit) rather than fetch and sort every row. */
		bool short_search = utf8_chars(f->search, strlen(f->search)) < 3;

		strbuf_addch(&pat, '%');
		for (const char *c = f->search; *c; c++) {
			if (*c == '%' || *c == '_' || *c == '\\')
				strbuf_addch(&pat, '\\');
			strbuf_addch(&pat, *c);
		}
		strbuf_addch(&pat, '%');
		qb_cond(q, short_search ? "(target || '') LIKE " : "target LIKE ",
			pat.buf, "::text ESCAPE E'\\\\'");
		strbuf_release(&pat);
	}
	if (f->since_us)
		qb_time(q, "created_at >= ", f->since_us);
	if (f->until_us)
		qb_time(q, "created_at < ", f->until_us);
	if (after && f->has_after) {
		char t[64], seq[24];

		format_us(t, f->after_us, true);
		snprintf(seq, sizeof(seq), "%lld", f->after_seq);
		qb_cond(q, "(created_at, seq) < (", t, "::timestamptz");
		strbuf_addstr(&q->sql, ", ");
		qb_value(q, seq, "::bigint)");
	}
}

void auditq_page_sql(const struct auditq_filter *f, unsigned long limit,
		     struct auditq_sql *q)
{
	struct qb b = {.sql = STRBUF_INIT};
	char n[24];

	strbuf_addstr(&b.sql, "SELECT " CREATED_US ", seq, ");
	sql_row_json(&b.sql);
	strbuf_addstr(&b.sql, "::text FROM sandbox_operations");
	qb_where(&b, f, true);
	strbuf_addstr(&b.sql, ORDER " LIMIT ");
	snprintf(n, sizeof(n), "%lu", limit);
	qb_value(&b, n, "::bigint");
	q->sql = strbuf_detach(&b.sql, NULL);
	q->params = b.params;
	q->nparams = (int)b.n;
}

/* For auditq-follow.c: the row's JSON as the page makes it, and the
 * filter's conditions (" WHERE ..." or nothing, ignoring after) with its
 * parameters numbered after the caller's npre. */
void auditq_row_json_sql(struct strbuf *sb)
{
	sql_row_json(sb);
}

void auditq_where_sql(const struct auditq_filter *f, int npre,
		      struct auditq_sql *q)
{
	struct qb b = {.sql = STRBUF_INIT};

	for (int i = 0; i < npre; i++) {
		ALLOC_GROW(b.params, b.n + 1, b.alloc);
		b.params[b.n++] = xstrdup("");
	}
	qb_where(&b, f, false);
	q->sql = strbuf_detach(&b.sql, NULL);
	q->params = b.params;
	q->nparams = (int)b.n;
}

void auditq_sql_free(struct auditq_sql *q)
{
	free(q->sql);
	strv_free(q->params, (size_t)q->nparams);
	q->sql = NULL;
	q->params = NULL;
	q->nparams = 0;
}

/* ---- running it ---- */

static int check_text(const char *what, const char *s, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	int ret;

	if (!s || utf8_first_invalid(s, strlen(s)) < 0)
		return 0;
	text_add_escaped(&sb, s, strlen(s));
	ret = sbx_error_set(err, SBX_E_INVALID, 0,
			    "%s '%s': not valid UTF-8 (no row could match)",
			    what, sb.buf);
	strbuf_release(&sb);
	return ret;
}

static int check_filter(const struct auditq_filter *f, struct sbx_error **err)
{
	if (check_text("tenant", f->tenant, err) ||
	    check_text("session", f->session, err) ||
	    check_text("agent", f->agent, err) ||
	    check_text("run", f->run, err) ||
	    check_text("search", f->search, err))
		return -1;
	if (f->ops >> AUDIT_NOPS)
		die_bug("auditq: op bits 0x%x", f->ops);
	if (f->has_after && (f->after_us < 0 || f->after_seq < 0))
		die_bug("auditq: negative cursor");
	return 0;
}

int auditq_check_filter(const struct auditq_filter *f, struct sbx_error **err)
{
	return check_filter(f, err);
}

/* -1 status 3 naming what failed and the server's message (escaped: it may
 * quote a filter). */
int auditq_page(struct auditdb *db, const struct auditq_filter *f,
		unsigned long limit, json_t **rows, char **cursor,
		struct sbx_error **err)
{
	struct auditq_sql q;
	PGresult *r;
	json_t *a;
	int n;

	*rows = NULL;
	*cursor = NULL;
	if (limit == 0 || limit > ULONG_MAX / 2)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "a page of %lu rows: out of range", limit);
	if (check_filter(f, err))
		return -1;
	/* One row more than asked: a cursor only when a next page exists. */
	auditq_page_sql(f, limit + 1, &q);
	if (auditdb_run(auditdb_conn(db), "listing the audit", q.sql, q.nparams,
			q.params, &r, err)) {
		auditq_sql_free(&q);
		return -1;
	}
	auditq_sql_free(&q);
	n = sym_PQntuples(r);
	a = json_array();
	for (int i = 0; i < n && (unsigned long)i < limit; i++) {
		json_t *j = auditdb_row_object(sym_PQgetvalue(r, i, 2),
					       "reading the audit", err);

		if (!j) {
			json_decref(a);
			sym_PQclear(r);
			return -1;
		}
		json_array_append_new(a, j);
	}
	if ((unsigned long)n > limit) {
		long long us = strtoll(sym_PQgetvalue(r, (int)limit - 1, 0),
				       NULL, 10),
			  seq = strtoll(sym_PQgetvalue(r, (int)limit - 1, 1),
					NULL, 10);
		char c[64];

		if (us < 0) {
			json_decref(a);
			sym_PQclear(r);
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "listing the audit: a row dated "
					     "before 1970 cannot be paged past");
		}
		auditq_cursor_encode(us, seq, c);
		*cursor = xstrdup(c);
	}
	sym_PQclear(r);
	*rows = a;
	return 0;
}

/* ---- export ---- */

/*
 * COPY's text format writes a backslash as \\ (and newline, tab... as \n,
 * \t; JSON has none raw).  One row per PQgetCopyData call: undo the
 * escapes in place.  -1 on anything COPY would not write for a non-null
 * json column.
 */
static int copy_unescape(char *buf, int *len)
{
	int o = 0;

	for (int i = 0; i < *len; i++) {
		if (buf[i] != '\\') {
			buf[o++] = buf[i];
			continue;
		}
		if (++i >= *len)
			return -1;
		switch (buf[i]) {
		case '\\': buf[o++] = '\\'; break;
		case 'n': buf[o++] = '\n'; break;
		case 'r': buf[o++] = '\r'; break;
		case 't': buf[o++] = '\t'; break;
		case 'b': buf[o++] = '\b'; break;
		case 'f': buf[o++] = '\f'; break;
		case 'v': buf[o++] = '\v'; break;
		default: return -1;
		}
	}
	*len = o;
	return 0;
}

/* Bytes of output gathered before each write(2). */
#define EXPORT_CHUNK 65536

int auditq_export(struct auditdb *db, const struct auditq_filter *f,
		  enum auditq_format fmt, auditq_writer write, void *arg,
		  unsigned long long *count, struct sbx_error **err)
{
	PGconn *c = auditdb_conn(db);
	struct qb b = {.sql = STRBUF_INIT, .lit = c};
	struct strbuf ob = STRBUF_INIT;
	unsigned long long rows = 0;
	int werr = 0, bad = 0, n, ret = -1;
	char *buf;
	PGresult *r;

	*count = 0;
	if (check_filter(f, err))
		return -1;
	strbuf_addstr(&b.sql, "COPY (SELECT ");
	if (fmt == AUDITQ_CSV)
		sql_row_csv(&b.sql);
	else
		sql_row_json(&b.sql);
	strbuf_addstr(&b.sql, " FROM sandbox_operations");
	qb_where(&b, f, true);
	strbuf_addstr(&b.sql, ORDER ") TO STDOUT");
	if (fmt == AUDITQ_CSV)
		strbuf_addstr(&b.sql, " WITH (FORMAT csv, HEADER)");
	if (b.bad) {
		ret = auditdb_pq_error(err, "exporting the audit",
				       sym_PQerrorMessage(c));
		goto out;
	}
	/* However long the reader takes: statement_timeout is for ls. */
	if (auditdb_run(c, "exporting the audit", "BEGIN READ ONLY", 0, NULL,
			NULL, err))
		goto out;
	if (auditdb_run(c, "exporting the audit",
			"SET LOCAL statement_timeout = 0", 0, NULL, NULL, err))
		goto rollback;
	r = sym_PQexec(c, b.sql.buf);
	if (sym_PQresultStatus(r) != PGRES_COPY_OUT) {
		auditdb_pq_error(err, "exporting the audit",
				 r ? sym_PQresultErrorMessage(r)
				   : sym_PQerrorMessage(c));
		sym_PQclear(r);
		goto rollback;
	}
	sym_PQclear(r);
	/* Each call gives one row (CSV: the header first).  A write error
	 * (the reader gone) stops here: reading a million rows more to
	 * throw them away helps no one, and the connection, left inside the
	 * COPY, is the caller's to close (auditq.h). */
	while ((n = sym_PQgetCopyData(c, &buf, 0)) > 0) {
		if (fmt == AUDITQ_JSONL && !bad && copy_unescape(buf, &n))
			bad = 1;
		if (!bad) {
			strbuf_add(&ob, buf, (size_t)n);
			if (ob.len >= EXPORT_CHUNK) {
				werr = write(arg, ob.buf, ob.len);
				strbuf_reset(&ob);
			}
		}
		sym_PQfreemem(buf);
		rows++;
		if (werr)
			goto write_failed;
	}
	r = sym_PQgetResult(c);
	if (n == -2 || sym_PQresultStatus(r) != PGRES_COMMAND_OK) {
		auditdb_pq_error(err, "exporting the audit",
				 n == -2 ? sym_PQerrorMessage(c)
					 : sym_PQresultErrorMessage(r));
		sym_PQclear(r);
		while ((r = sym_PQgetResult(c)))
			sym_PQclear(r);
		goto rollback;
	}
	sym_PQclear(r);
	while ((r = sym_PQgetResult(c)))
		sym_PQclear(r);
	if (bad) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "exporting the audit: COPY wrote an escape "
			      "sbxcat does not know");
		goto rollback;
	}
	if (ob.len && (werr = write(arg, ob.buf, ob.len)) != 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, werr,
			      "exporting the audit: writing the output");
		goto rollback;
	}
	if (auditdb_run(c, "exporting the audit", "COMMIT", 0, NULL, NULL, err))
		goto out;
	*count = fmt == AUDITQ_CSV && rows ? rows - 1 : rows;
	ret = 0;
	goto out;
write_failed:
	sbx_error_set(err, SBX_E_UNAVAILABLE, werr,
		      "exporting the audit: writing the output");
	goto out;
rollback:
	sym_PQclear(sym_PQexec(c, "ROLLBACK"));
out:
	strbuf_release(&ob);
	strbuf_release(&b.sql);
	strv_free(b.params, b.n);
	return ret;
}

/* ---- stats ---- */

static json_t *time_json(long long us)
{
	char t[64];

	if (!us)
		return json_null();
	format_us(t, us, false);
	return json_string(t);
}

static json_t *num_json(PGresult *r, int i, int col)
{
	const char *v = sym_PQgetvalue(r, i, col);

	if (sym_PQgetisnull(r, i, col))
		return json_null();
	if (strpbrk(v, ".eEn")) /* percentile_cont: double precision */
		return json_real(strtod(v, NULL));
	return json_integer(strtoll(v, NULL, 10));
}

int auditq_stats(struct auditdb *db, const struct auditq_filter *f,
		 json_t **stats, struct sbx_error **err)
{
	PGconn *c = auditdb_conn(db);
	struct qb b = {.sql = STRBUF_INIT};
	size_t where_at, where_len;
	char *where = NULL;
	PGresult *r = NULL;
	json_t *s = NULL, *ops, *slow;
	long long total = 0, failed = 0;
	int ret = -1;

	*stats = NULL;
	if (check_filter(f, err))
		return -1;
	/* One WHERE, two statements, one snapshot. */
	strbuf_addstr(&b.sql, " FROM sandbox_operations");
	where_at = b.sql.len;
	qb_where(&b, f, false);
	where_len = b.sql.len - where_at;
	where = xstrndup(b.sql.buf + where_at, where_len);
	strbuf_reset(&b.sql);
	strbuf_addf(&b.sql,
		    "SELECT op, count(*), count(*) FILTER (WHERE NOT ok), "
		    "percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms), "
		    "percentile_cont(0.95) WITHIN GROUP (ORDER BY "
		    "duration_ms), max(duration_ms) FROM sandbox_operations%s "
		    "GROUP BY op ORDER BY op",
		    where);
	if (auditdb_run(c, "counting the audit",
			"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0,
			NULL, NULL, err))
		goto out;
	/* A month of a busy deployment takes longer than a page may. */
	if (auditdb_run(c, "counting the audit",
			"SET LOCAL statement_timeout = 0", 0, NULL, NULL, err))
		goto rollback;
	if (auditdb_run(c, "counting the audit", b.sql.buf, (int)b.n, b.params,
			&r, err))
		goto rollback;
	s = json_object();
	ops = json_object();
	json_object_set_new(s, "since", time_json(f->since_us));
	json_object_set_new(s, "until", time_json(f->until_us));
	for (int i = 0; i < sym_PQntuples(r); i++) {
		long long n = strtoll(sym_PQgetvalue(r, i, 1), NULL, 10),
			  nf = strtoll(sym_PQgetvalue(r, i, 2), NULL, 10);
		json_t *o = json_object();

		json_object_set_new(o, "count", json_integer(n));
		json_object_set_new(o, "failed", json_integer(nf));
		json_object_set_new(o, "p50_ms", num_json(r, i, 3));
		json_object_set_new(o, "p95_ms", num_json(r, i, 4));
		json_object_set_new(o, "max_ms", num_json(r, i, 5));
		json_object_set_new(ops, sym_PQgetvalue(r, i, 0), o);
		total += n;
		failed += nf;
	}
	sym_PQclear(r);
	r = NULL;
	json_object_set_new(s, "total", json_integer(total));
	json_object_set_new(s, "failed", json_integer(failed));
	json_object_set_new(s, "ops", ops);
	strbuf_reset(&b.sql);
	strbuf_addstr(&b.sql, "SELECT NULL, NULL, ");
	sql_row_json(&b.sql);
	strbuf_addf(&b.sql,
		    "::text FROM sandbox_operations%s ORDER BY duration_ms "
		    "DESC, created_at DESC, seq DESC LIMIT 10",
		    where);
	if (auditdb_run(c, "counting the audit", b.sql.buf, (int)b.n, b.params,
			&r, err))
		goto rollback;
	slow = json_array();
	json_object_set_new(s, "slowest", slow);
	for (int i = 0; i < sym_PQntuples(r); i++) {
		json_t *j = auditdb_row_object(sym_PQgetvalue(r, i, 2),
					       "reading the audit", err);

		if (!j)
			goto rollback;
		json_array_append_new(slow, j);
	}
	if (auditdb_run(c, "counting the audit", "COMMIT", 0, NULL, NULL, err))
		goto out;
	*stats = steal_pointer(&s);
	ret = 0;
	goto out;
rollback:
	sym_PQclear(sym_PQexec(c, "ROLLBACK"));
out:
	sym_PQclear(r);
	json_decref(s);
	free(where);
	strbuf_release(&b.sql);
	strv_free(b.params, b.n);
	return ret;
}

/* ---- a session's events ---- */

/* One event's JSON, made by the server: the row's seq, its time as float
 * epoch seconds, the op's name and what the wire layer maps to its
 * detail, and who acted (agent and run, null for none). */
#define EVENT_JSON                                                             \
	"json_build_object('seq', seq, 'at', "                                 \
	"extract(epoch FROM created_at)::float8, 'op', op, 'target', target, " \
	"'ok', ok, 'detail', detail, 'duration_ms', duration_ms, "             \
	"'exit_status', exit_status, 'bytes', bytes, 'results', results, "     \
	"'agent', agent_ref, 'run', run_ref)"

int auditq_events(struct auditdb *db, const struct auditq_events_req *q,
		  json_t **events, long long *latest_seq,
		  struct sbx_error **err)
{
	const char *tenant = q->tenant ? " AND tenant = $3::text" : "";
	char after[24], limit[24], *sql;
	const char *p[3] = {q->session, after, q->tenant};
	PGresult *r;
	json_t *a;
	int ret;

	*events = NULL;
	*latest_seq = 0;
	if (check_text("session", q->session, err) ||
	    check_text("tenant", q->tenant, err))
		return -1;
	snprintf(after, sizeof(after), "%lld", q->after < 0 ? 0 : q->after);
	snprintf(limit, sizeof(limit), "%lu", q->limit);
	/* One round trip: the chain's last seq (the index on (session_key,
	 * seq) read backwards), and the rows after the client's, in order. */
	sql = xasprintf(
	    "SELECT coalesce(l.latest, 0), e.j FROM (SELECT max(seq) AS latest "
	    "FROM sandbox_operations WHERE session_key = $1::text%s) l "
	    "LEFT JOIN LATERAL (SELECT seq, " EVENT_JSON "::text AS j FROM "
	    "sandbox_operations WHERE session_key = $1::text AND seq > "
	    "$2::bigint%s ORDER BY seq LIMIT %s) e ON true ORDER BY e.seq",
	    tenant, tenant, limit);
	ret = auditdb_run(auditdb_conn(db), "reading the session's events", sql,
			  q->tenant ? 3 : 2, (char *const *)p, &r, err);
	free(sql);
	if (ret)
		return -1;
	a = json_array();
	for (int i = 0; i < sym_PQntuples(r); i++) {
		json_t *j;

		*latest_seq = strtoll(sym_PQgetvalue(r, i, 0), NULL, 10);
		if (sym_PQgetisnull(r, i, 1))
			continue;
		j = auditdb_row_object(sym_PQgetvalue(r, i, 1),
				       "reading the audit", err);
		if (!j) {
			json_decref(a);
			sym_PQclear(r);
			return -1;
		}
		json_array_append_new(a, j);
	}
	sym_PQclear(r);
	*events = a;
	return 0;
}

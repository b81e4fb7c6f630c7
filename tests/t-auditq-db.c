/*
 * t-auditq-db.c - auditq.c against the real PostgreSQL (the private
 * cluster of tests/pgbed.sh; run by t-auditq-db.sh and
 * t-auditq-explain.sh, which make the database and pass its conninfo).
 *
 *   t-auditq-db rows URL     10,000 rows: paging through every filter
 *                            combination, rows inserted between pages,
 *                            --search literally, --since/--until to the
 *                            microsecond, export csv and jsonl, stats;
 *                            each against plain SQL written here
 *   t-auditq-db explain URL  1,000,000 rows: no sequential scan of
 *                            sandbox_operations for any page query
 *                            (every filter alone and in pairs, with and
 *                            without --after, custom and generic plans)
 *   t-auditq-db bench URL    (after explain) first and deep pages, p50/p95
 *                            over 50 runs each, as diagnostics only
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/auditq.h"
#include "audit/pq-dl.h"
#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/xjson.h"
#include "tap.h"

static struct auditdb *db;
static PGconn *conn;

#define BASE_US 1780000000000000LL /* 2026-05-28T20:26:40Z */
#define DAY_US 86400000000LL

static PGresult *sql(const char *s, int n, const char *const *params)
{
	PGresult *r = sym_PQexecParams(conn, s, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = sym_PQresultStatus(r);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
		bail_out("%s: %s", s, sym_PQresultErrorMessage(r));
	return r;
}

static void sql0(const char *s)
{
	sym_PQclear(sql(s, 0, NULL));
}

static long long sql_ll(const char *s)
{
	PGresult *r = sql(s, 0, NULL);
	long long v = strtoll(sym_PQgetvalue(r, 0, 0), NULL, 10);

	sym_PQclear(r);
	return v;
}

static void fmt_us(char out[64], long long us, char sep, const char *zone)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, 64, "%04d-%02d-%02d%c%02d:%02d:%02d.%06d%s",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, sep, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(us % 1000000), zone);
}

/* ---- the 10,000 rows ---- */

static const char *const tenants[] = {"acme", "globex", "initech",
				      "umbrella"};
static const char *const targets[] = {
    "50%_off",	  "50%Xoff",   "50_off",      "a\\b",	    "ab",
    "dir/50%_off/x", "ünïcødé/文件.txt", "make -j2 'x y'", "/work/%",
    "/work/_",	  "say \"hi\", twice", "x,y;z"};

static void csv_field(struct strbuf *sb, const char *s)
{
	if (!s) {
		strbuf_addch(sb, ',');
		return;
	}
	strbuf_addch(sb, '"');
	for (; *s; s++) {
		if (*s == '"')
			strbuf_addch(sb, '"');
		strbuf_addch(sb, *s);
	}
	strbuf_addstr(sb, "\",");
}

static void load_rows(int n)
{
	struct strbuf sb = STRBUF_INIT;
	long long prev = BASE_US;
	PGresult *r;

	r = sym_PQexec(conn,
		       "COPY sandbox_operations (id, created_at, tenant, "
		       "session_key, runtime, agent_ref, run_ref, op, target, "
		       "ok, exit_status, bytes, results, duration_ms, detail, "
		       "hash, wire_id) FROM STDIN WITH (FORMAT csv)");
	if (sym_PQresultStatus(r) != PGRES_COPY_IN)
		bail_out("COPY: %s", sym_PQresultErrorMessage(r));
	sym_PQclear(r);
	for (int i = 0; i < n; i++) {
		char id[40], t[64], buf[64];
		unsigned sess = tap_rand() % 24, op = tap_rand() % AUDIT_NOPS;
		long long us;
		bool okv = tap_rand() % 5 != 0;

		/* 1 in 20 shares the previous row's time: seq breaks ties */
		us = i % 20 == 19 ? prev
				  : BASE_US - (long long)(((unsigned long long)
							       tap_rand()
							   << 32 |
						       tap_rand()) %
						      (30 * DAY_US));
		prev = us;
		snprintf(id, sizeof(id), "%08x-%04x-4%03x-8%03x-%08x%04x",
			 tap_rand(), tap_rand() & 0xffff,
			 tap_rand() & 0xfff, tap_rand() & 0xfff, tap_rand(),
			 tap_rand() & 0xffff);
		strbuf_reset(&sb);
		csv_field(&sb, id);
		fmt_us(t, us, ' ', "+00");
		csv_field(&sb, t);
		csv_field(&sb, tenants[sess % 4]);
		snprintf(buf, sizeof(buf), "%s-s%u", tenants[sess % 4], sess);
		csv_field(&sb, buf);
		csv_field(&sb, "python");
		snprintf(buf, sizeof(buf), "agent-%u", tap_rand() % 5);
		csv_field(&sb, tap_rand() % 6 ? buf : NULL);
		snprintf(buf, sizeof(buf), "run-%u", tap_rand() % 10);
		csv_field(&sb, tap_rand() % 6 ? buf : NULL);
		csv_field(&sb, audit_op_name(op));
		if (tap_rand() % 3 == 0) {
			csv_field(&sb, targets[tap_rand() %
					       (sizeof(targets) /
						sizeof(targets[0]))]);
		} else {
			snprintf(buf, sizeof(buf), "/work/file%u.txt",
				 tap_rand() % 300);
			csv_field(&sb, buf);
		}
		csv_field(&sb, okv ? "t" : "f");
		snprintf(buf, sizeof(buf), "%u", okv ? 0 : 1 + tap_rand() % 3);
		csv_field(&sb, op == AUDIT_EXECUTE ? buf : NULL);
		snprintf(buf, sizeof(buf), "%u", tap_rand() % 100000);
		csv_field(&sb, tap_rand() % 4 ? buf : NULL);
		snprintf(buf, sizeof(buf), "%u", tap_rand() % 50);
		csv_field(&sb, tap_rand() % 4 ? buf : NULL);
		snprintf(buf, sizeof(buf), "%u", tap_rand() % 3000);
		csv_field(&sb, buf);
		csv_field(&sb, okv ? "" : "exit 2");
		strbuf_addstr(&sb, "\"\\x");
		for (int k = 0; k < 32; k++)
			strbuf_addstr(&sb, "00");
		/* One session in three has an id on the wire (issue 29). */
		snprintf(buf, sizeof(buf), "wire-s%u", sess);
		strbuf_addstr(&sb, "\",");
		if (sess % 3 == 0)
			strbuf_addstr(&sb, buf);
		strbuf_addstr(&sb, "\n");
		if (sym_PQputCopyData(conn, sb.buf, (int)sb.len) != 1)
			bail_out("COPY data: %s", sym_PQerrorMessage(conn));
	}
	if (sym_PQputCopyEnd(conn, NULL) != 1)
		bail_out("COPY end: %s", sym_PQerrorMessage(conn));
	r = sym_PQgetResult(conn);
	if (sym_PQresultStatus(r) != PGRES_COMMAND_OK)
		bail_out("COPY: %s", sym_PQresultErrorMessage(r));
	sym_PQclear(r);
	while ((r = sym_PQgetResult(conn)))
		sym_PQclear(r);
	strbuf_release(&sb);
}

/* ---- the reference: plain SQL of a filter, written apart ---- */

#define US_EXPR "(extract(epoch FROM created_at) * 1000000)::bigint"
#define REF_COLS                                                               \
	"id, seq, " US_EXPR ", tenant, session_key, runtime, agent_ref, "      \
	"run_ref, op, target, ok, exit_status, bytes, results, duration_ms, "  \
	"detail, wire_id"

struct ref {
	struct strbuf where;
	char *params[16];
	char bufs[16][600];
	int n;
};

/* Add v as the next parameter; its number. */
static int ref_param(struct ref *r, const char *v)
{
	snprintf(r->bufs[r->n], sizeof(r->bufs[0]), "%s", v);
	r->params[r->n] = r->bufs[r->n];
	return ++r->n;
}

/* " AND " cond, its @ the parameter v. */
static void ref_add(struct ref *r, const char *cond, const char *v)
{
	const char *at = strchr(cond, '@');

	strbuf_addstr(&r->where, " AND ");
	strbuf_add(&r->where, cond, (size_t)(at - cond));
	strbuf_addf(&r->where, "$%d", ref_param(r, v));
	strbuf_addstr(&r->where, at + 1);
}

static void ref_where(struct ref *r, const struct auditq_filter *f)
{
	char b[64], c[64];

	strbuf_init(&r->where);
	strbuf_addstr(&r->where, " WHERE true");
	r->n = 0;
	if (f->tenant)
		ref_add(r, "tenant = @", f->tenant);
	if (f->session)
		ref_add(r, "@ IN (session_key, wire_id)", f->session);
	if (f->agent)
		ref_add(r, "agent_ref = @", f->agent);
	if (f->run)
		ref_add(r, "run_ref = @", f->run);
	if (f->ops) {
		struct strbuf l = STRBUF_INIT;

		for (int i = 0; i < AUDIT_NOPS; i++)
			if (f->ops & 1u << i) {
				strbuf_addstr(&l, l.len ? "," : "");
				strbuf_addstr(&l, audit_op_name(i));
			}
		ref_add(r, "op = ANY(string_to_array(@, ','))", l.buf);
		strbuf_release(&l);
	}
	if (f->failed)
		strbuf_addstr(&r->where, " AND ok = false");
	if (f->search)
		ref_add(r, "strpos(target, @) > 0", f->search);
	snprintf(b, sizeof(b), "%lld", f->since_us);
	if (f->since_us)
		ref_add(r, US_EXPR " >= @::bigint", b);
	snprintf(b, sizeof(b), "%lld", f->until_us);
	if (f->until_us)
		ref_add(r, US_EXPR " < @::bigint", b);
	if (f->has_after) {
		int pa, pb;

		snprintf(b, sizeof(b), "%lld", f->after_us);
		snprintf(c, sizeof(c), "%lld", f->after_seq);
		pa = ref_param(r, b);
		pb = ref_param(r, c);
		strbuf_addf(&r->where,
			    " AND (" US_EXPR " < $%d::bigint OR (" US_EXPR
			    " = $%d::bigint AND seq < $%d::bigint))",
			    pa, pa, pb);
	}
}

static PGresult *ref_rows(const struct auditq_filter *f, const char *cols,
			  const char *extra)
{
	struct ref r;
	struct strbuf s = STRBUF_INIT;
	PGresult *res;

	ref_where(&r, f);
	strbuf_addf(&s, "SELECT %s FROM sandbox_operations%s%s ORDER BY "
			"created_at DESC, seq DESC",
		    cols, r.where.buf, extra ? extra : "");
	res = sql(s.buf, r.n, (const char *const *)r.params);
	strbuf_release(&s);
	strbuf_release(&r.where);
	return res;
}

/* ---- paging ---- */

static bool page_through(struct auditq_filter f, unsigned long limit,
			 PGresult *want, const char *name,
			 void (*between)(long long us, long long seq))
{
	size_t n = (size_t)sym_PQntuples(want), got = 0, pages = 0;
	bool good = true;

	for (;;) {
		json_t *rows = NULL, *row;
		char *cursor = NULL;
		struct sbx_error *err = NULL;
		size_t i;

		if (auditq_page(db, &f, limit, &rows, &cursor, &err)) {
			diag("%s: %s", name, err->msg);
			sbx_error_free(&err);
			return false;
		}
		pages++;
		json_array_foreach(rows, i, row)
		{
			long long seq =
			    json_integer_value(json_object_get(row, "seq"));

			if (got >= n ||
			    seq != strtoll(sym_PQgetvalue(want, (int)got, 1),
					   NULL, 10)) {
				if (good)
					diag("%s, limit %lu: row %zu is seq "
					     "%lld, want %s",
					     name, limit, got, seq,
					     got < n ? sym_PQgetvalue(
							   want, (int)got, 1)
						     : "none");
				good = false;
			}
			got++;
		}
		if (cursor && json_array_size(rows) != limit) {
			diag("%s: a cursor after a page of %zu", name,
			     json_array_size(rows));
			good = false;
		}
		json_decref(rows);
		if (!cursor)
			break;
		if (auditq_cursor_decode(cursor, &f.after_us, &f.after_seq,
					 &err))
			bail_out("%s: %s", cursor, err->msg);
		f.has_after = true;
		free(cursor);
		if (between && pages == 1)
			between(f.after_us, f.after_seq);
		if (pages > n / limit + 2) {
			diag("%s: too many pages", name);
			return false;
		}
	}
	if (got != n) {
		diag("%s, limit %lu: %zu rows, want %zu", name, limit, got, n);
		good = false;
	}
	return good;
}

struct combo {
	const char *name;
	struct auditq_filter f;
};

static void paging(void)
{
	long long since = BASE_US - 20 * DAY_US + 123457,
		  until = BASE_US - 5 * DAY_US - 98765;
	const struct combo combos[] = {
	    {"no filter", {0}},
	    {"--tenant", {.tenant = "globex"}},
	    {"--session", {.session = "initech-s6"}},
	    {"--session by the wire id", {.session = "wire-s6"}},
	    {"--session by a key with a wire id", {.session = "umbrella-s3"}},
	    {"--agent", {.agent = "agent-3"}},
	    {"--run", {.run = "run-7"}},
	    {"--op write", {.ops = 1u << AUDIT_WRITE}},
	    {"--op read,execute,reap",
	     {.ops =
		  1u << AUDIT_READ | 1u << AUDIT_EXECUTE | 1u << AUDIT_REAP}},
	    {"--failed", {.failed = true}},
	    {"--search 50%_off", {.search = "50%_off"}},
	    {"--search a\\b", {.search = "a\\b"}},
	    {"--search 文件", {.search = "文件"}},
	    {"--since", {.since_us = since}},
	    {"--until", {.until_us = until}},
	    {"--since --until", {.since_us = since, .until_us = until}},
	    {"--tenant --failed", {.tenant = "acme", .failed = true}},
	    {"--agent --run", {.agent = "agent-1", .run = "run-2"}},
	    {"--op --tenant --since",
	     {.ops = 1u << AUDIT_EDIT,
	      .tenant = "umbrella",
	      .since_us = since}},
	    {"--search --failed", {.search = "off", .failed = true}},
	    {"--session --op",
	     {.session = "acme-s0",
	      .ops = 1u << AUDIT_OPEN | 1u << AUDIT_CLOSE}},
	    {"--tenant nobody", {.tenant = "nobody"}},
	};
	static const unsigned long limits[] = {7, 100, 1000};

	for (size_t c = 0; c < sizeof(combos) / sizeof(combos[0]); c++) {
		PGresult *want = ref_rows(&combos[c].f, REF_COLS, NULL);

		for (size_t l = 0; l < 3; l++)
			ok(page_through(combos[c].f, limits[l], want,
					combos[c].name, NULL),
			   "%s, --limit %lu: all %d rows once, in order",
			   combos[c].name, limits[l], sym_PQntuples(want));
		sym_PQclear(want);
	}
}

/* After the first page: rows newer than all, rows among (and tied with)
 * those already shown, and rows not yet reached. */
static void insert_between(long long us, long long seq)
{
	char a[64], b[64], c[64];
	const char *p[3] = {a, b, c};

	(void)seq;
	fmt_us(a, BASE_US + DAY_US, ' ', "+00");
	fmt_us(b, us, ' ', "+00");
	fmt_us(c, us - DAY_US, ' ', "+00");
	sym_PQclear(sql(
	    "INSERT INTO sandbox_operations (id, created_at, tenant, "
	    "session_key, runtime, op, target, ok, duration_ms, detail, hash) "
	    "SELECT gen_random_uuid(), t, 'acme', 'acme-s0', 'python', "
	    "'write', 'between', true, 0, d, decode(repeat('00', 32), 'hex') FROM "
	    "(VALUES ($1::timestamptz, 'seen'), ($2::timestamptz, 'seen'), "
	    "($2::timestamptz + interval '1 microsecond', 'seen'), "
	    "($3::timestamptz, 'unseen')) v(t, d), generate_series(1, 10)",
	    3, p));
}

static void between_pages(void)
{
	struct auditq_filter f = {.tenant = "acme"};
	struct sbx_error *err = NULL;
	long long *got = NULL;
	size_t n = 0, alloc = 0, bad = 0;
	PGresult *want;

	for (int pages = 0;; pages++) {
		json_t *rows = NULL, *row;
		char *cursor = NULL;
		size_t i;

		if (auditq_page(db, &f, 100, &rows, &cursor, &err))
			bail_out("%s", err->msg);
		json_array_foreach(rows, i, row)
		{
			ALLOC_GROW(got, n + 1, alloc);
			got[n++] =
			    json_integer_value(json_object_get(row, "seq"));
		}
		json_decref(rows);
		if (!cursor)
			break;
		if (auditq_cursor_decode(cursor, &f.after_us, &f.after_seq,
					 &err))
			bail_out("%s", err->msg);
		free(cursor);
		f.has_after = true;
		if (pages == 0)
			insert_between(f.after_us, f.after_seq);
	}
	/* What was there, and the rows inserted behind the cursor; none of
	 * those inserted before it (newer, or tied with the cursor's time
	 * and so with a larger seq). */
	f.has_after = false;
	want = ref_rows(&f, REF_COLS, " AND detail <> 'seen'");
	for (size_t i = 0; i < n && i < (size_t)sym_PQntuples(want); i++)
		bad += got[i] != strtoll(sym_PQgetvalue(want, (int)i, 1),
					 NULL, 10);
	is_int(sql_ll("SELECT count(*) FROM sandbox_operations WHERE target "
		      "= 'between'"),
	       40, "40 rows inserted after the first page");
	ok(n == (size_t)sym_PQntuples(want) && !bad,
	   "the pages give the %d rows that were there and the 10 behind "
	   "the cursor, each once, in order; none of the 30 before it (%zu "
	   "rows, %zu out of place)",
	   sym_PQntuples(want) - 10, n, bad);
	sym_PQclear(want);
	free(got);
	sql0("DELETE FROM sandbox_operations WHERE target = 'between'");
}

/* ---- search, since/until ---- */

static void search_literal(void)
{
	struct auditq_filter f = {.search = "50%_off"};
	json_t *rows = NULL, *row;
	char *cursor = NULL;
	struct sbx_error *err = NULL;
	size_t i;
	int lit = 0, other = 0;

	if (auditq_page(db, &f, 10000, &rows, &cursor, &err))
		bail_out("%s", err->msg);
	json_array_foreach(rows, i, row)
	{
		const char *t =
		    json_string_value(json_object_get(row, "target"));
		if (strstr(t, "50%_off"))
			lit++;
		else
			other++;
	}
	ok(lit > 100 && other == 0 && !cursor,
	   "--search '50%%_off': %d rows, all with the literal text, none "
	   "of '50%%Xoff' or '50_off' (%d)",
	   lit, other);
	ok(lit == sql_ll("SELECT count(*) FROM sandbox_operations WHERE "
			 "target IN ('50%_off', 'dir/50%_off/x')"),
	   "and every one of them");
	json_decref(rows);
	free(cursor);
}

static bool has_seq(const struct auditq_filter *f, long long seq)
{
	json_t *rows = NULL, *row;
	char *cursor = NULL;
	struct sbx_error *err = NULL;
	size_t i;
	bool found = false;

	if (auditq_page(db, f, 10000, &rows, &cursor, &err))
		bail_out("%s", err->msg);
	json_array_foreach(rows, i, row) found |=
	    json_integer_value(json_object_get(row, "seq")) == seq;
	json_decref(rows);
	free(cursor);
	return found;
}

static void microseconds(void)
{
	PGresult *r = sql("SELECT " US_EXPR ", seq, session_key FROM "
			  "sandbox_operations WHERE " US_EXPR " % 1000000 "
			  "<> 0 ORDER BY seq LIMIT 1",
			  0, NULL);
	long long us = strtoll(sym_PQgetvalue(r, 0, 0), NULL, 10),
		  seq = strtoll(sym_PQgetvalue(r, 0, 1), NULL, 10), parsed = 0;
	struct auditq_filter f = {.session = sym_PQgetvalue(r, 0, 2)};
	char text[64];
	struct sbx_error *err = NULL;

	f.since_us = us;
	ok(has_seq(&f, seq), "--since T includes a row at T");
	f.since_us = us + 1;
	ok(!has_seq(&f, seq), "--since T+1µs excludes it");
	f.since_us = 0;
	f.until_us = us;
	ok(!has_seq(&f, seq), "--until T excludes it");
	f.until_us = us + 1;
	ok(has_seq(&f, seq), "--until T+1µs includes it");
	fmt_us(text, us, 'T', "Z");
	if (auditq_parse_time(text, BASE_US, &parsed, &err))
		bail_out("%s", err->msg);
	f.until_us = 0;
	f.since_us = parsed;
	ok(parsed == us && has_seq(&f, seq),
	   "--since %s (its created_at, as export prints it) includes it",
	   text);
	sym_PQclear(r);
}

/* ---- export ---- */

/* One RFC 4180 record: fields[i] (NULL: empty and unquoted). */
static int csv_read(FILE *in, char *fields[20], int *n)
{
	struct strbuf sb = STRBUF_INIT;
	bool quoted = false, inq = false;
	int c;

	*n = 0;
	c = getc(in);
	if (c == EOF)
		return 0;
	for (;; c = getc(in)) {
		if (inq) {
			if (c == EOF)
				bail_out("CSV: EOF in quotes");
			if (c == '"') {
				c = getc(in);
				if (c != '"') {
					inq = false;
					ungetc(c, in);
					continue;
				}
			}
			strbuf_addch(&sb, (char)c);
			continue;
		}
		if (c == '"' && !sb.len && !quoted) {
			inq = quoted = true;
			strbuf_addstr(&sb, "");
			continue;
		}
		if (c == ',' || c == '\n' || c == EOF) {
			if (*n >= 20)
				bail_out("CSV: too many fields");
			fields[(*n)++] = quoted || sb.len
					     ? strbuf_detach(&sb, NULL)
					     : NULL;
			strbuf_release(&sb);
			quoted = false;
			if (c != ',')
				return 1;
			continue;
		}
		if (c == '\r')
			bail_out("CSV: CR");
		strbuf_addch(&sb, (char)c);
	}
}

static const char *const csv_header[] = {
    "id",    "seq",	"created_at",  "tenant", "session", "runtime",
    "agent", "run",	"op",	       "target", "ok",	    "exit_status",
    "bytes", "results", "duration_ms", "detail", "wire_id"};

/* Row i of want (REF_COLS) as the 17 texts export should give. */
static void want_texts(PGresult *want, int i, const char *out[17],
		       char created[64])
{
	for (int k = 0; k < 17; k++)
		out[k] = sym_PQgetisnull(want, i, k) ? NULL
						     : sym_PQgetvalue(want, i, k);
	fmt_us(created, strtoll(out[2], NULL, 10), 'T', "Z");
	out[2] = created;
	out[10] = !strcmp(out[10], "t") ? "true" : "false";
}

/* The export's writer: the temporary file (a FILE * of tmpfile()). */
static int to_fd(void *arg, const void *buf, size_t len)
{
	return write_all(fileno(arg), buf, len) < 0 ? (errno ? errno : EIO) : 0;
}

static void export_csv(const struct combo *c)
{
	PGresult *want = ref_rows(&c->f, REF_COLS, NULL);
	FILE *tmp = tmpfile();
	unsigned long long count = 0;
	struct sbx_error *err = NULL;
	char *fields[20];
	int n, rec = 0, bad = 0;

	if (auditq_export(db, &c->f, AUDITQ_CSV, to_fd, tmp, &count, &err))
		bail_out("export: %s", err->msg);
	rewind(tmp);
	if (!csv_read(tmp, fields, &n) || n != 17)
		bail_out("CSV: no header");
	for (int k = 0; k < n; k++) {
		bad += !fields[k] || strcmp(fields[k], csv_header[k]);
		free(fields[k]);
	}
	while (csv_read(tmp, fields, &n)) {
		const char *w[17];
		char created[64];

		if (rec < sym_PQntuples(want) && n == 17) {
			want_texts(want, rec, w, created);
			for (int k = 0; k < 17; k++)
				if ((!w[k]) != (!fields[k]) ||
				    (w[k] && strcmp(w[k], fields[k]))) {
					if (bad++ < 3)
						diag("row %d %s: '%s', want "
						     "'%s'",
						     rec, csv_header[k],
						     fields[k] ? fields[k]
							       : "NULL",
						     w[k] ? w[k] : "NULL");
				}
		} else {
			bad++;
		}
		for (int k = 0; k < n; k++)
			free(fields[k]);
		rec++;
	}
	ok(!bad && rec == sym_PQntuples(want) && count == (unsigned)rec,
	   "export csv %s: %d rows (count %llu), every field as in the "
	   "table",
	   c->name, rec, count);
	fclose(tmp);
	sym_PQclear(want);
}

static void export_jsonl(const struct combo *c)
{
	PGresult *want = ref_rows(&c->f, REF_COLS, NULL);
	FILE *tmp = tmpfile();
	unsigned long long count = 0;
	struct sbx_error *err = NULL;
	char *line = NULL;
	size_t cap = 0;
	int rec = 0, bad = 0;
	json_t *page = NULL;
	char *cursor = NULL;

	if (auditq_export(db, &c->f, AUDITQ_JSONL, to_fd, tmp, &count, &err))
		bail_out("export: %s", err->msg);
	if (auditq_page(db, &c->f, 10000, &page, &cursor, &err))
		bail_out("page: %s", err->msg);
	rewind(tmp);
	while (getline(&line, &cap, tmp) > 0) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		const char *w[17];
		char created[64];

		if (!j || rec >= sym_PQntuples(want) ||
		    json_object_size(j) != 17) {
			bad++;
			json_decref(j);
			rec++;
			continue;
		}
		want_texts(want, rec, w, created);
		for (int k = 0; k < 17; k++) {
			json_t *v = json_object_get(
			    j, csv_header[k]);
			char num[32];
			const char *got = NULL;

			if (json_is_string(v))
				got = json_string_value(v);
			else if (json_is_integer(v)) {
				snprintf(num, sizeof(num), "%lld",
					 (long long)json_integer_value(v));
				got = num;
			} else if (json_is_boolean(v))
				got = json_is_true(v) ? "true" : "false";
			else if (!json_is_null(v))
				got = "?";
			if (!v || (!w[k]) != (!got) ||
			    (got && strcmp(got, w[k]))) {
				if (bad++ < 3)
					diag("row %d %s: '%s', want '%s'", rec,
					     csv_header[k], got ? got : "null",
					     w[k] ? w[k] : "null");
			}
		}
		if (!json_equal(j, json_array_get(page, (size_t)rec)))
			bad++;
		json_decref(j);
		rec++;
	}
	ok(!bad && rec == sym_PQntuples(want) && count == (unsigned)rec,
	   "export jsonl %s: %d rows (count %llu), every key as in the "
	   "table, and the objects auditq_page gives",
	   c->name, rec, count);
	free(line);
	free(cursor);
	json_decref(page);
	fclose(tmp);
	sym_PQclear(want);
}

static void exports(void)
{
	const struct combo combos[] = {
	    {"no filter", {0}},
	    {"--tenant --failed", {.tenant = "globex", .failed = true}},
	    {"--search 'a\\b'", {.search = "a\\b"}},
	    {"--search '\"'", {.search = "\""}},
	    {"--op --since",
	     {.ops = 1u << AUDIT_EXECUTE | 1u << AUDIT_GREP_RAW,
	      .since_us = BASE_US - 9 * DAY_US}},
	    {"--tenant nobody", {.tenant = "nobody"}},
	};

	for (size_t i = 0; i < sizeof(combos) / sizeof(combos[0]); i++) {
		export_csv(&combos[i]);
		export_jsonl(&combos[i]);
	}
	/* 'a\b' and quotes survive both formats */
	ok(sql_ll("SELECT count(*) FROM sandbox_operations WHERE target = "
		  "'a\\b'") > 0,
	   "the rows exported include targets with a backslash");
}

/* ---- stats ---- */

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* percentile_cont as PostgreSQL defines it, over sorted v[0..n). */
static double pct(const long long *v, size_t n, double p)
{
	double pos = p * (double)(n - 1);
	size_t lo = (size_t)floor(pos), hi = (size_t)ceil(pos);

	return (double)v[lo] + (pos - (double)lo) * (double)(v[hi] - v[lo]);
}

static void stats_one(const struct combo *c)
{
	struct sbx_error *err = NULL;
	json_t *st = NULL, *slow;
	PGresult *rows = ref_rows(&c->f, "op, ok, duration_ms, seq", NULL);
	PGresult *s10;
	int bad = 0;
	long long total = 0, failed = 0;

	if (auditq_stats(db, &c->f, &st, &err))
		bail_out("stats: %s", err->msg);
	for (int op = 0; op < AUDIT_NOPS; op++) {
		long long *d = NULL, nf = 0;
		size_t n = 0, alloc = 0;
		json_t *o = json_object_get(json_object_get(st, "ops"),
					    audit_op_name(op));

		for (int i = 0; i < sym_PQntuples(rows); i++) {
			if (strcmp(sym_PQgetvalue(rows, i, 0),
				   audit_op_name(op)))
				continue;
			ALLOC_GROW(d, n + 1, alloc);
			d[n++] = strtoll(sym_PQgetvalue(rows, i, 2), NULL, 10);
			nf += !strcmp(sym_PQgetvalue(rows, i, 1), "f");
		}
		total += (long long)n;
		failed += nf;
		if (!n) {
			bad += o != NULL;
			continue;
		}
		qsort(d, n, sizeof(*d), cmp_ll);
		if (!o ||
		    json_integer_value(json_object_get(o, "count")) !=
			(long long)n ||
		    json_integer_value(json_object_get(o, "failed")) != nf ||
		    fabs(json_number_value(json_object_get(o, "p50_ms")) -
			 pct(d, n, 0.5)) > 1e-9 ||
		    fabs(json_number_value(json_object_get(o, "p95_ms")) -
			 pct(d, n, 0.95)) > 1e-9 ||
		    json_integer_value(json_object_get(o, "max_ms")) !=
			d[n - 1]) {
			if (bad++ < 3)
				diag("%s: %s; want n %zu failed %lld p50 %g "
				     "p95 %g max %lld",
				     audit_op_name(op),
				     o ? json_dumps(o, JSON_COMPACT) : "none",
				     n, nf, pct(d, n, 0.5), pct(d, n, 0.95),
				     d[n - 1]);
		}
		free(d);
	}
	bad += json_integer_value(json_object_get(st, "total")) != total;
	bad += json_integer_value(json_object_get(st, "failed")) != failed;
	/* (the "--" comments out ref_rows's own ORDER BY) */
	s10 = ref_rows(&c->f, REF_COLS,
		       " ORDER BY duration_ms DESC, created_at DESC, seq DESC "
		       "LIMIT 10 --");
	slow = json_object_get(st, "slowest");
	bad += json_array_size(slow) != (size_t)sym_PQntuples(s10);
	for (int i = 0; i < sym_PQntuples(s10); i++)
		bad += json_integer_value(json_object_get(
			   json_array_get(slow, (size_t)i), "seq")) !=
		       strtoll(sym_PQgetvalue(s10, i, 1), NULL, 10);
	ok(!bad && total == sym_PQntuples(rows),
	   "stats %s: %lld rows, per op count, failed, p50, p95, max and "
	   "the 10 slowest as computed here",
	   c->name, total);
	json_decref(st);
	sym_PQclear(rows);
	sym_PQclear(s10);
}

static void stats(void)
{
	const struct combo combos[] = {
	    {"everything", {0}},
	    {"--since 24h-ish", {.since_us = BASE_US - DAY_US}},
	    {"--tenant --since",
	     {.tenant = "initech", .since_us = BASE_US - 7 * DAY_US}},
	    {"--tenant nobody", {.tenant = "nobody"}},
	};

	for (size_t i = 0; i < sizeof(combos) / sizeof(combos[0]); i++)
		stats_one(&combos[i]);
}

/*
 * A tenant's chains are those holding its rows: a chain whose first row
 * was another tenant's (a refused request of the key, written before the
 * owner opened it, by a sbxcat that still put such rows on the key's
 * chain) is still the owner's in verify --tenant and head --tenant.
 */
static bool heads_name(const char *tenant, const char *session)
{
	struct sbx_error *err = NULL;
	json_t *heads = NULL, *h;
	size_t i;
	bool found = false;

	if (auditdb_heads(db, NULL, tenant, &heads, &err) < 0)
		bail_out("heads: %s", err->msg);
	json_array_foreach(heads, i, h)
	{
		if (!strcmp(json_string_value(json_object_get(h, "session")),
			    session))
			found = true;
	}
	json_decref(heads);
	return found;
}

static void chain_owner(void)
{
	static const char *const who[] = {"mallory-c", "victim-c", "victim-c"};
	const char *key = "xc-victimc-run-aaaaaaaaaaaaaaaaaaaaaaaaaa";
	struct audit_row r[3];
	struct sbx_error *err = NULL;
	size_t inserted = 0, skipped = 0;
	json_t *rep = NULL;
	int rc;

	for (int i = 0; i < 3; i++) {
		audit_row_init(&r[i], AUDIT_LS_INFO);
		audit_row_set(&r[i].tenant, who[i], strlen(who[i]),
			      AUDIT_ID_MAX);
		audit_row_set(&r[i].session_key, key, strlen(key),
			      AUDIT_ID_MAX);
		audit_row_set(&r[i].target, "a.txt", 5, AUDIT_TARGET_MAX);
	}
	rc = auditdb_insert(db, r, 3, &inserted, &skipped, &err);
	is_int(rc, 0, "a chain whose first row is another tenant's: inserted%s",
	       err ? err->msg : "");
	ok(heads_name("victim-c", key),
	   "audit head --tenant of the owner lists it (its rows' tenant)");
	ok(heads_name("mallory-c", key),
	   "... and so does --tenant of the one who wrote a row of it");
	ok(!heads_name("nobody-c", key), "... and not another tenant's");
	rc = auditdb_verify(db, NULL, "victim-c", &rep, &err);
	{
		char *txt = rep ? json_dumps(rep, JSON_COMPACT) : NULL;

		ok(rc == 0 &&
		       json_integer_value(json_object_get(rep, "chains")) ==
			   1 &&
		       json_integer_value(json_object_get(rep, "rows")) == 3,
		   "audit verify --tenant of the owner verifies that chain, "
		   "every row: %s",
		   txt ? txt : err->msg);
		free(txt);
	}
	json_decref(rep);
	for (int i = 0; i < 3; i++)
		audit_row_release(&r[i]);
	sql0("DELETE FROM sandbox_operations WHERE tenant LIKE '%-c'");
	sql0("DELETE FROM audit_chains WHERE session_key = "
	     "'xc-victimc-run-aaaaaaaaaaaaaaaaaaaaaaaaaa'");
}

static void rows_test(void)
{
	load_rows(10000);
	sql0("ANALYZE sandbox_operations");
	is_int(sql_ll("SELECT count(*) FROM sandbox_operations"), 10000,
	       "10,000 rows loaded with COPY");
	paging();
	between_pages();
	search_literal();
	microseconds();
	exports();
	stats();
	chain_owner();
	{
		struct auditq_filter f = {.tenant = "\xff"};
		json_t *rows = NULL;
		char *cursor = NULL;
		struct sbx_error *err = NULL;

		int r = auditq_page(db, &f, 10, &rows, &cursor, &err);

		ok(r == -1 && tap_status(err) == 2 && strstr(err->msg, "\\xff"),
		   "a filter that is not UTF-8 is a usage error: %s",
		   err ? err->msg : "");
		sbx_error_free(&err);
	}
}

/* ---- the plans on 1,000,000 rows ---- */

static void load_million(long n)
{
	char s[2048];

	if (sql_ll("SELECT count(*) FROM sandbox_operations") >= n)
		return;
	snprintf(s, sizeof(s),
		 "INSERT INTO sandbox_operations (id, created_at, tenant, "
		 "session_key, runtime, agent_ref, run_ref, op, target, ok, "
		 "exit_status, bytes, results, duration_ms, detail, hash) "
		 "SELECT gen_random_uuid(), timestamptz '2026-05-28 20:26:40+00' "
		 "- random() * interval '30 days', 'tenant-' || i %% 8, "
		 "'sess-' || i %% 1000, 'python', CASE WHEN i %% 7 = 0 THEN NULL "
		 "ELSE 'agent-' || i %% 20 END, 'run-' || i %% 200, "
		 "(ARRAY['write','edit','read','read_bytes','ls_info',"
		 "'glob_info','grep_raw','execute','open','close','reap'])"
		 "[1 + i %% 11], CASE WHEN i %% 1000 = 0 THEN 'promo/50%%_off' "
		 "ELSE '/work/src/file' || i %% 5000 || '.c' END, i %% 10 <> 0, "
		 "NULL, i %% 100000, NULL, i %% 997, '', decode(repeat('00', "
		 "32), 'hex') FROM generate_series(1, %ld) i",
		 n);
	/* The indexes of the schema are dropped for the load and made again
	 * from their own definitions: a sorted build is minutes faster than
	 * a million insertions into each (the trigram GIN most). */
	/* auditdb_connect's 30 s statement_timeout is for the CLI */
	sql0("SET statement_timeout = 0");
	sql0("SET maintenance_work_mem = '512MB'");
	/* The rows' 30 days, a partition each (migration 7), as the service
	 * makes them ahead of time; none left in the default partition. */
	sql0("SELECT sbxcat_audit_day('sandbox_operations', d::date) FROM "
	     "generate_series(date '2026-04-27', date '2026-05-29', "
	     "interval '1 day') d");
	sql0("CREATE TEMP TABLE ix AS SELECT indexname, indexdef FROM "
	     "pg_indexes WHERE tablename = 'sandbox_operations' AND indexname "
	     "NOT IN (SELECT conname FROM pg_constraint)");
	sql0("DO $$DECLARE i record; BEGIN FOR i IN SELECT * FROM ix LOOP "
	     "EXECUTE 'DROP INDEX ' || quote_ident(i.indexname); END LOOP; "
	     "END$$");
	sql0(s);
	/* A partitioned table's index reads "ON ONLY" (the parent's alone):
	 * made again on every partition. */
	sql0("DO $$DECLARE i record; BEGIN FOR i IN SELECT * FROM ix LOOP "
	     "EXECUTE replace(i.indexdef, ' ON ONLY ', ' ON '); END LOOP; "
	     "END$$");
	is_int(sql_ll("SELECT count(*) FROM pg_indexes WHERE tablename = "
		      "'sandbox_operations'"),
	       sql_ll("SELECT count(*) FROM ix") +
		   sql_ll("SELECT count(*) FROM pg_constraint WHERE conrelid = "
			  "'sandbox_operations'::regclass AND contype IN "
			  "('p', 'u')"),
	       "the schema's indexes made again after the load");
	sql0("DROP TABLE ix");
	sql0("VACUUM ANALYZE sandbox_operations");
}

static char *plan_nodes(const char *plan)
{
	struct strbuf sb = STRBUF_INIT;

	for (const char *p = plan; (p = strstr(p, "\"Node Type\": \""));) {
		p += strlen("\"Node Type\": \"");
		strbuf_add(&sb, p, strcspn(p, "\""));
		strbuf_addstr(&sb, " ");
		if (!strncmp(p, "Index", 5) || !strncmp(p, "Bitmap Index", 12)) {
			const char *ix = strstr(p, "\"Index Name\": \"");
			if (ix) {
				ix += strlen("\"Index Name\": \"");
				strbuf_addch(&sb, '(');
				strbuf_add(&sb, ix, strcspn(ix, "\""));
				strbuf_addstr(&sb, ") ");
			}
		}
	}
	return strbuf_detach(&sb, NULL);
}

/*
 * Whether the plan reads a partition that holds rows sequentially.  A
 * partition with no row (a day ahead, the default one) is read by a
 * sequential scan of nothing, which costs nothing and is what the
 * planner rightly picks for it.
 */
static bool seq_scan_of_rows(const char *plan)
{
	static const char node[] = "\"Node Type\": \"Seq Scan\"";
	static const char rel[] = "\"Relation Name\": \"";

	for (const char *p = plan; (p = strstr(p, node)); p += sizeof(node)) {
		const char *next = strstr(p + 1, "\"Node Type\"");
		const char *r = strstr(p, rel);
		char q[256];

		if (!r || (next && r > next))
			return true; /* a scan of no relation named: say so */
		r += strlen(rel);
		snprintf(q, sizeof(q), "SELECT count(*) FROM (SELECT 1 FROM "
				       "\"%.*s\" LIMIT 1) x",
			 (int)strcspn(r, "\""), r);
		if (sql_ll(q) > 0)
			return true;
	}
	return false;
}

static void explain_one(const char *name, const struct auditq_filter *f)
{
	struct auditq_sql q;
	struct strbuf s = STRBUF_INIT;
	static const char *const modes[] = {"force_custom_plan",
					    "force_generic_plan"};

	auditq_page_sql(f, 51, &q);
	strbuf_addf(&s, "PREPARE p AS %s", q.sql);
	sql0(s.buf);
	for (int m = 0; m < 2; m++) {
		PGresult *r;
		char *nodes;

		strbuf_reset(&s);
		strbuf_addf(&s, "SET plan_cache_mode = %s", modes[m]);
		sql0(s.buf);
		strbuf_reset(&s);
		strbuf_addstr(&s, "EXPLAIN (FORMAT JSON) EXECUTE p(");
		for (int i = 0; i < q.nparams; i++) {
			char *lit = sym_PQescapeLiteral(conn, q.params[i],
							strlen(q.params[i]));
			strbuf_addf(&s, "%s%s", i ? ", " : "", lit);
			sym_PQfreemem(lit);
		}
		strbuf_addch(&s, ')');
		r = sql(s.buf, 0, NULL);
		nodes = plan_nodes(sym_PQgetvalue(r, 0, 0));
		if (!ok(!seq_scan_of_rows(sym_PQgetvalue(r, 0, 0)),
			"%s (%s plan): no sequential scan", name,
			m ? "generic" : "custom"))
			diag("%s", nodes);
		else if (strstr(nodes, "Sort"))
			diag("%s (%s): %s", name, m ? "generic" : "custom",
			     nodes);
		free(nodes);
		sym_PQclear(r);
	}
	sql0("DEALLOCATE p");
	sql0("RESET plan_cache_mode");
	strbuf_release(&s);
	auditq_sql_free(&q);
}

static void explain_test(long n)
{
	struct auditq_filter one[10] = {
	    {.tenant = "tenant-3"},
	    {.session = "sess-42"},
	    {.agent = "agent-5"},
	    {.run = "run-17"},
	    {.ops = 1u << AUDIT_WRITE},
	    {.ops = 1u << AUDIT_READ | 1u << AUDIT_GREP_RAW},
	    {.failed = true},
	    {.search = "50%_off"},
	    {.since_us = BASE_US - 3 * DAY_US},
	    {.until_us = BASE_US - 20 * DAY_US},
	};
	static const char *const names[10] = {
	    "--tenant", "--session", "--agent", "--run",    "--op",
	    "--op x2",	"--failed",  "--search", "--since", "--until"};
	PGresult *mid;
	long long after_us, after_seq;

	load_million(n);
	is_int(sql_ll("SELECT count(*) FROM sandbox_operations"), n,
	       "%ld rows loaded", n);
	mid = sql("SELECT " US_EXPR ", seq FROM sandbox_operations ORDER BY "
		  "created_at DESC, seq DESC OFFSET 1000 LIMIT 1",
		  0, NULL);
	after_us = strtoll(sym_PQgetvalue(mid, 0, 0), NULL, 10);
	after_seq = strtoll(sym_PQgetvalue(mid, 0, 1), NULL, 10);
	sym_PQclear(mid);
	for (int after = 0; after < 2; after++) {
		struct auditq_filter none = {0};
		char name[128];

		none.has_after = after;
		none.after_us = after_us;
		none.after_seq = after_seq;
		explain_one(after ? "no filter --after" : "no filter", &none);
		for (int i = 0; i < 10; i++) {
			for (int j = i; j < 10; j++) {
				struct auditq_filter f = one[i];
				const struct auditq_filter *g = &one[j];

				if (j != i && ((i == 4 || i == 5) &&
					       (j == 4 || j == 5)))
					continue; /* one --op list */
				f.tenant = f.tenant ? f.tenant : g->tenant;
				f.session = f.session ? f.session : g->session;
				f.agent = f.agent ? f.agent : g->agent;
				f.run = f.run ? f.run : g->run;
				f.ops |= g->ops;
				f.failed |= g->failed;
				f.search = f.search ? f.search : g->search;
				f.since_us = f.since_us ? f.since_us
							: g->since_us;
				f.until_us = f.until_us ? f.until_us
							: g->until_us;
				f.has_after = after;
				f.after_us = after_us;
				f.after_seq = after_seq;
				snprintf(name, sizeof(name), "%s%s%s%s",
					 names[i], j != i ? " " : "",
					 j != i ? names[j] : "",
					 after ? " --after" : "");
				explain_one(name, &f);
			}
		}
	}
}

/* ---- timings (diagnostics, not tests) ---- */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void bench_one(const char *name, struct auditq_filter f, long deep)
{
	double t[50];
	char s[256];

	if (deep) {
		/* the cursor of row `deep` in this filter's order */
		struct auditq_sql q;
		PGresult *r;
		struct strbuf sb = STRBUF_INIT;

		auditq_page_sql(&f, 1, &q);
		strbuf_addstr(&sb, q.sql);
		strbuf_addf(&sb, " OFFSET %ld", deep);
		r = sql(sb.buf, q.nparams, (const char *const *)q.params);
		if (sym_PQntuples(r) != 1) {
			diag("%s: fewer than %ld rows", name, deep);
			sym_PQclear(r);
			auditq_sql_free(&q);
			strbuf_release(&sb);
			return;
		}
		f.has_after = true;
		f.after_us = strtoll(sym_PQgetvalue(r, 0, 0), NULL, 10);
		f.after_seq = strtoll(sym_PQgetvalue(r, 0, 1), NULL, 10);
		sym_PQclear(r);
		auditq_sql_free(&q);
		strbuf_release(&sb);
	}
	for (int i = 0; i < 50; i++) {
		json_t *rows = NULL;
		char *cursor = NULL;
		struct sbx_error *err = NULL;
		double t0 = now_ms();

		if (auditq_page(db, &f, 50, &rows, &cursor, &err))
			bail_out("%s: %s", name, err->msg);
		t[i] = now_ms() - t0;
		json_decref(rows);
		free(cursor);
	}
	qsort(t, 50, sizeof(t[0]), cmp_d);
	snprintf(s, sizeof(s), "%-34s p50 %6.2f ms  p95 %6.2f ms", name,
		 t[24], t[47]);
	diag("%s", s);
}

static void bench_test(long n)
{
	load_million(n);
	diag("auditq_page, 50 rows, end to end (query, JSON), %lld rows:",
	     sql_ll("SELECT count(*) FROM sandbox_operations"));
	bench_one("first page, no filter", (struct auditq_filter){0}, 0);
	bench_one("deep (500000), no filter", (struct auditq_filter){0},
		  500000);
	bench_one("first page, --tenant",
		  (struct auditq_filter){.tenant = "tenant-3"}, 0);
	bench_one("deep (60000), --tenant",
		  (struct auditq_filter){.tenant = "tenant-3"}, 60000);
	bench_one("first page, --session",
		  (struct auditq_filter){.session = "sess-42"}, 0);
	bench_one("deep (900), --session",
		  (struct auditq_filter){.session = "sess-42"}, 900);
	bench_one("first page, --op",
		  (struct auditq_filter){.ops = 1u << AUDIT_WRITE}, 0);
	bench_one("deep (45000), --op",
		  (struct auditq_filter){.ops = 1u << AUDIT_WRITE}, 45000);
	bench_one("first page, --failed",
		  (struct auditq_filter){.failed = true}, 0);
	bench_one("deep (50000), --failed",
		  (struct auditq_filter){.failed = true}, 50000);
	bench_one("first page, --search 50%_off",
		  (struct auditq_filter){.search = "50%_off"}, 0);
	bench_one("deep (900), --search 50%_off",
		  (struct auditq_filter){.search = "50%_off"}, 900);
	bench_one("first page, --tenant --failed",
		  (struct auditq_filter){.tenant = "tenant-3", .failed = true},
		  0);
	bench_one("first page, --agent --run",
		  (struct auditq_filter){.agent = "agent-5", .run = "run-25"},
		  0);
	ok(1, "timings printed above (not a timed test)");
}

int main(int argc, char **argv)
{
	struct sbx_error *err = NULL;
	int applied;
	long n = getenv("AUDITQ_ROWS") ? atol(getenv("AUDITQ_ROWS")) : 1000000;

	xjson_init();
	if (argc != 3)
		bail_out("usage: t-auditq-db rows|explain|bench CONNINFO");
	/* the .sh made the database just before: not reaching it is a bug */
	if (auditdb_connect(argv[2], NULL, &db, &err))
		bail_out("connect: %s", err->msg);
	conn = auditdb_conn(db);
	if (auditdb_migrate(db, &applied, &err) && strcmp(argv[1], "bench"))
		bail_out("migrate: %s", err->msg);
	sbx_error_free(&err);
	if (!strcmp(argv[1], "rows"))
		rows_test();
	else if (!strcmp(argv[1], "explain"))
		explain_test(n);
	else if (!strcmp(argv[1], "bench"))
		bench_test(n);
	else
		bail_out("unknown mode %s", argv[1]);
	auditdb_close(db);
	return done_testing();
}

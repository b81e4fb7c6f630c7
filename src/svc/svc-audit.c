/*
 * svc-audit.c - the audit's own verbs as operations (svc-audit.h): the
 * database and the spool of the configuration around auditdb.c,
 * auditq.c and spool.c, and the documents `--json` prints.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "audit/audit-writer.h"
#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/auditq-follow.h"
#include "basic/clock.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "svc/svc-audit.h"
#include "svc/svc-int.h"

#define SWEEP_BATCH 10000 /* rows a transaction of the sweep */

/* The reason (struct sbx_error's) of "no database configured". */
static const char no_database[] = "no database configured";

bool svc_audit_needs_database(const struct sbx_error *err)
{
	return err && err->reason == no_database;
}

bool svc_audit_needs_migrate(const struct sbx_error *err)
{
	return err && err->reason == auditdb_schema_old;
}

/* ---- the values of a request ---- */

int svc_audit_parse_time(const char *s, bool local, long long *us,
			 struct sbx_error **err)
{
	return auditq_parse_time_in(s, audit_now_us(), local, us, err);
}

int svc_audit_parse_ops(const char *list, unsigned *ops, struct sbx_error **err)
{
	char *copy = xstrdup(list), *save = NULL, *w;
	unsigned got = 0;
	int rc = 0;

	for (w = strtok_r(copy, ",", &save); w && !rc;
	     w = strtok_r(NULL, ",", &save)) {
		int op = audit_op_parse_alias(w);
		struct strbuf sb = STRBUF_INIT;

		if (op >= 0) {
			got |= 1u << op;
			continue;
		}
		/* The ops, as the audit names them, and the wire's names. */
		text_add_escaped(&sb, w, strlen(w));
		strbuf_addstr(&sb, "': not an operation (");
		for (int i = 0; i < AUDIT_NOPS; i++)
			strbuf_addf(&sb, "%s%s", i ? ", " : "",
				    audit_op_name((enum audit_op)i));
		strbuf_addstr(&sb, "; or as the service's events name them: "
				   "exec, ls, glob, grep, exists");
		rc = sbx_error_set(err, SBX_E_INVALID, 0, "'%s)", sb.buf);
		strbuf_release(&sb);
	}
	free(copy);
	/* A list of commas alone adds nothing: an error unless ops
	 * earlier in the request named one. */
	if (!rc && !(*ops | got))
		rc = sbx_error_set(err, SBX_E_INVALID, 0, "which operation?");
	if (!rc)
		*ops |= got;
	return rc;
}

int svc_audit_parse_cursor(const char *s, struct auditq_filter *f,
			   struct sbx_error **err)
{
	if (auditq_cursor_decode(s, &f->after_us, &f->after_seq, err) < 0)
		return -1;
	f->has_after = true;
	return 0;
}

int svc_audit_parse_format(const char *s, enum auditq_format *fmt,
			   struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;

	if (!strcmp(s, "csv") || !strcmp(s, "jsonl")) {
		*fmt = !strcmp(s, "csv") ? AUDITQ_CSV : AUDITQ_JSONL;
		return 0;
	}
	text_add_escaped(&sb, s, strlen(s));
	sbx_error_set(err, SBX_E_INVALID, 0, "'%s': csv or jsonl",
		      strbuf_str(&sb));
	strbuf_release(&sb);
	return -1;
}

/* What the queries need of a filter (a command line checks its own
 * first, in its own words). */
static int check_filter(const struct auditq_filter *f, struct sbx_error **err)
{
	if (f->since_us && f->until_us && f->until_us <= f->since_us)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "the window ends before it starts");
	return 0;
}

static int check_chains(const struct svc_audit_chains_req *req,
			struct sbx_error **err)
{
	if (req->session && req->tenant)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "a session or a tenant, not both");
	return 0;
}

/* ---- the database ---- */

/* The database every verb needs: the service's pool when it has one,
 * else a connection of the call's own; close_db gives it back. */
static int open_db(const struct svc *s, struct auditdb **db,
		   struct sbx_error **err)
{
	const struct audit_config *c = &s->cfg.audit;
	const char *conninfo = audit_config_db(c, NULL);

	*db = NULL;
	if (!conninfo) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s", no_database);
		sbx_error_reason(*err, no_database);
		return -1;
	}
	if (s->pool)
		return auditdb_pool_get(s->pool, db, err);
	return auditdb_connect(conninfo, c->connect_timeout, db, err);
}

static void close_db(const struct svc *s, struct auditdb *db)
{
	if (s->pool)
		auditdb_pool_put(s->pool, db);
	else
		auditdb_close(db);
}

int svc_audit_db_open(const struct svc *s, struct auditdb **db,
		      struct sbx_error **err)
{
	return open_db(s, db, err);
}

void svc_audit_db_close(const struct svc *s, struct auditdb *db)
{
	close_db(s, db);
}

/* The database, with a schema this sbxcat reads (the query verbs):
 * the latest, or one it reads as well (AUDITDB_SCHEMA_COMPAT). */
static int open_schema(const struct svc *s, struct auditdb **db,
		       struct sbx_error **err)
{
	int applied, known;

	if (open_db(s, db, err) < 0 ||
	    auditdb_schema_version(*db, &applied, &known, err) < 0)
		return -1;
	if (applied < AUDITDB_SCHEMA_COMPAT) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the audit's schema is at version %d of %d",
			      applied, known);
		sbx_error_reason(*err, auditdb_schema_old);
		return -1;
	}
	return 0;
}

/* ---- migrate, status, flush ---- */

int svc_audit_migrate(const struct svc *s, const struct svc_call *call,
		      const struct svc_audit_migrate_req *req,
		      struct svc_audit_migrate_res *res, struct sbx_error **err)
{
	struct auditdb *db = NULL;
	int known, rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	if (open_db(s, &db, err) < 0)
		goto out;
	if (req->status) {
		rc = auditdb_migrate_status(db, &res->doc, err);
		goto out;
	}
	if (auditdb_migrate_to(db, req->to, &res->applied, err) < 0 ||
	    auditdb_schema_version(db, &res->version, &known, err) < 0)
		goto out;
	res->doc = xjson_pack("{s:i, s:i}", "applied", res->applied,
			      "schema_version", res->version);
	rc = 0;
out:
	close_db(s, db);
	return rc;
}

void svc_audit_migrate_res_release(struct svc_audit_migrate_res *res)
{
	json_decref(res->doc);
	res->doc = NULL;
}

static json_t *status_json(const struct svc_audit_status_res *r)
{
	const struct spool_status *ss = &r->spool;
	json_t *doc = xjson_pack(
	    "{s:{s:b, s:s?, s:b, s:o, s:i, s:i}, "
	    "s:{s:b, s:I, s:o, s:I, s:o, s:I, s:I, s:I, s:I, s:I}, s:I}",
	    "database", "configured", r->configured, "source", r->source,
	    "reachable", r->reachable, "error",
	    r->db_error ? xjson_text(r->db_error) : json_null(),
	    "schema_version", r->version, "schema_known", r->known, "spool",
	    "exists", ss->exists, "rows", (json_int_t)ss->rows, "oldest",
	    svc_time_json(ss->oldest_us / 1000000), "kept_aside",
	    (json_int_t)ss->kept_aside, "last_flush",
	    svc_time_json(ss->last_flush_us / 1000000), "last_flush_rows",
	    (json_int_t)ss->last_flush_rows, "free", (json_int_t)ss->free,
	    "min_free", (json_int_t)ss->min_free, "reserve",
	    (json_int_t)ss->reserve, "reserved", (json_int_t)ss->reserved,
	    "lost", (json_int_t)ss->lost);

	/* The spool's directory is the configuration's: any bytes. */
	xjson_set_path(json_object_get(doc, "spool"), "dir", r->spool_dir);
	return doc;
}

int svc_audit_status(const struct svc *s, const struct svc_call *call,
		     struct svc_audit_status_res *res, struct sbx_error **err)
{
	const struct audit_config *c = &s->cfg.audit;
	struct sbx_error *dberr = NULL;
	struct auditdb *db = NULL;
	const char *conninfo;
	struct spool sp;
	int rc;

	(void)call;
	memset(res, 0, sizeof(*res));
	res->known = auditdb_nmigrations;
	conninfo = audit_config_db(c, &res->source);
	res->configured = conninfo != NULL;
	if (conninfo && open_db(s, &db, &dberr) == 0 &&
	    auditdb_schema_version(db, &res->version, &res->known, &dberr) <
		0) {
		close_db(s, db);
		db = NULL;
	}
	res->reachable = db != NULL;
	if (dberr)
		res->db_error = xstrdup(dberr->msg);
	sbx_error_free(&dberr);
	close_db(s, db);
	spool_init(&sp, c);
	rc = spool_status(&sp, &res->spool, err);
	res->spool_dir = xstrdup(sp.dir);
	spool_close(&sp);
	if (rc < 0) {
		svc_audit_status_res_release(res);
		return -1;
	}
	res->doc = status_json(res);
	return 0;
}

void svc_audit_status_res_release(struct svc_audit_status_res *res)
{
	free(res->db_error);
	free(res->spool_dir);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

struct flush_sink {
	struct auditdb *db;
	unsigned long long inserted, skipped;
};

static int flush_batch(void *arg, const struct audit_row *rows, size_t n,
		       struct sbx_error **err)
{
	struct flush_sink *fs = arg;
	size_t ins = 0, skip = 0;

	if (auditdb_insert(fs->db, rows, n, &ins, &skip, err) < 0)
		return -1;
	fs->inserted += ins;
	fs->skipped += skip;
	return 0;
}

int svc_audit_flush(const struct svc *s, const struct svc_call *call,
		    struct svc_audit_flush_res *res, struct sbx_error **err)
{
	struct flush_sink fs = {0};
	unsigned long long moved = 0;
	struct spool sp;
	int rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	spool_init(&sp, &s->cfg.audit);
	if (open_db(s, &fs.db, err) < 0 ||
	    spool_replay(&sp, true, flush_batch, &fs, &moved, &res->kept_aside,
			 err) < 0)
		goto out;
	res->flushed = fs.inserted;
	res->already = fs.skipped;
	res->doc =
	    xjson_pack("{s:I, s:I, s:I}", "flushed", (json_int_t)res->flushed,
		       "already", (json_int_t)res->already, "kept_aside",
		       (json_int_t)res->kept_aside);
	rc = 0;
out:
	spool_close(&sp);
	close_db(s, fs.db);
	return rc;
}

void svc_audit_flush_res_release(struct svc_audit_flush_res *res)
{
	json_decref(res->doc);
	res->doc = NULL;
}

/* ---- ls, export, stats ---- */

/* The rows waiting in the spool: what a page from the database lacks.
 * Lines are counted only when the file is not empty (one fstat); a spool
 * this user cannot read is not ls's error. */
static unsigned long long spooled(const struct svc *s)
{
	struct spool_status st = {0};
	struct sbx_error *err = NULL;
	struct spool sp;

	spool_init(&sp, &s->cfg.audit);
	if (spool_pending(&sp) && spool_status(&sp, &st, &err) < 0)
		sbx_error_free(&err);
	spool_close(&sp);
	return st.rows;
}

int svc_audit_ls(const struct svc *s, const struct svc_call *call,
		 const struct svc_audit_ls_req *req,
		 struct svc_audit_ls_res *res, struct sbx_error **err)
{
	unsigned long limit = req->limit ? req->limit : SVC_AUDIT_LS_DEFAULT;
	struct auditdb *db = NULL;
	json_t *rows = NULL, *r;
	size_t i;
	int rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	if (limit > SVC_AUDIT_LS_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "a page of %lu rows: at most %d", limit,
				     SVC_AUDIT_LS_MAX);
	if (check_filter(&req->filter, err) < 0 ||
	    open_schema(s, &db, err) < 0 ||
	    auditq_page(db, &req->filter, limit, &rows, &res->cursor, err) < 0)
		goto out;
	json_array_foreach(rows, i, r)
	{
		if (req->row(req->row_arg, r, err) < 0)
			goto out;
		res->rows++;
	}
	res->doc =
	    xjson_pack("{s:o}", "next",
		       res->cursor ? json_string(res->cursor) : json_null());
	res->spooled = spooled(s);
	rc = 0;
out:
	if (rc < 0)
		svc_audit_ls_res_release(res);
	json_decref(rows);
	close_db(s, db);
	return rc;
}

void svc_audit_ls_res_release(struct svc_audit_ls_res *res)
{
	free(res->cursor);
	json_decref(res->doc);
	res->cursor = NULL;
	res->doc = NULL;
}

/* ---- follow ---- */

static bool cancelled(const struct svc_call *call)
{
	return call->cancel && atomic_load(call->cancel);
}

static void warn(const struct svc_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(const struct svc_call *call, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (!call->warn)
		return;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	call->warn(call->warn_arg, sb.buf);
	strbuf_release(&sb);
}

/* Sleep ms, in slices, unless cancelled. */
static void nap(const struct svc_call *call, long long ms)
{
	long long end = clock_now_ms() + ms, left;

	while (!cancelled(call) && (left = end - clock_now_ms()) > 0) {
		struct timespec ts = {0, (left < 100 ? left : 100) * 1000000L};

		nanosleep(&ts, NULL);
	}
}

/* Connect again until it works, the retry budget is spent or the call is
 * cancelled (0 with *db NULL). */
static int reconnect(const struct svc *s, const struct svc_call *call,
		     struct auditq_follow *fo, struct auditdb **db,
		     struct sbx_error **err)
{
	long long first = clock_now_ms(), backoff = 100;
	bool restarted;

	for (;;) {
		struct sbx_error *e = NULL;

		if (cancelled(call))
			return 0;
		if (open_schema(s, db, &e) == 0 &&
		    auditq_follow_resume(fo, *db, &restarted, &e) == 0) {
			warn(call, "following the audit: reconnected%s",
			     restarted ? " (the server restarted: reading "
					 "what it committed since)"
				       : "");
			return 0;
		}
		close_db(s, *db);
		*db = NULL;
		if (clock_now_ms() - first >=
		    SVC_AUDIT_FOLLOW_RETRY_S * 1000LL) {
			*err = e;
			return -1;
		}
		warn(call,
		     "following the audit: %s; reconnecting in %lld.%lld s",
		     e->msg, backoff / 1000, backoff % 1000 / 100);
		sbx_error_free(&e);
		nap(call, backoff);
		backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
	}
}

int svc_audit_follow(const struct svc *s, const struct svc_call *call,
		     const struct svc_audit_follow_req *req,
		     struct sbx_error **err)
{
	unsigned poll_ms =
	    req->poll_ms ? req->poll_ms : SVC_AUDIT_FOLLOW_POLL_MS;
	struct auditq_follow *fo = NULL;
	struct auditdb *db = NULL;
	unsigned long n;
	int rc = -1;

	if (req->tail > SVC_AUDIT_LS_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "the last %lu rows: at most %d", req->tail,
				     SVC_AUDIT_LS_MAX);
	if (check_filter(&req->filter, err) < 0 || open_schema(s, &db, err) < 0)
		goto out;
	fo = auditq_follow_new(&req->filter);
	if (auditq_follow_start(fo, db, req->tail, req->row, req->row_arg,
				err) < 0)
		goto out;
	while (!cancelled(call)) {
		if (auditq_follow_poll(fo, db, req->row, req->row_arg, &n,
				       err) == 0 &&
		    auditq_follow_wait(db, (int)poll_ms, call->cancel,
				       req->out_fd, err) >= 0)
			continue;
		/* A lost connection is waited out; anything else (the
		 * reader gone, a query refused) ends the call. */
		if (!auditq_follow_lost(db))
			goto out;
		warn(call, "following the audit: the connection was lost: %s",
		     (*err)->msg);
		sbx_error_free(err);
		close_db(s, db);
		db = NULL;
		if (reconnect(s, call, fo, &db, err) < 0)
			goto out;
	}
	rc = 0;
out:
	auditq_follow_free(fo);
	close_db(s, db);
	return rc;
}

/* auditq_export's writer: the request's sink; an errno value when it
 * fails (its errnum: EPIPE when the reader left). */
static int to_sink(void *arg, const void *buf, size_t len)
{
	struct sbx_error *e = NULL;
	int errnum;

	if (svc_sink_write(arg, buf, len, &e) == 0)
		return 0;
	errnum = e->errnum ? e->errnum : EIO;
	sbx_error_free(&e);
	return errnum;
}

int svc_audit_export(const struct svc *s, const struct svc_call *call,
		     const struct svc_audit_export_req *req,
		     struct svc_audit_export_res *res, struct sbx_error **err)
{
	struct auditdb *db = NULL;
	int rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	if (check_filter(&req->filter, err) == 0 &&
	    open_schema(s, &db, err) == 0)
		rc = auditq_export(db, &req->filter, req->format, to_sink,
				   (void *)&req->out, &res->rows, err);
	close_db(s, db);
	return rc;
}

int svc_audit_stats(const struct svc *s, const struct svc_call *call,
		    const struct svc_audit_stats_req *req,
		    struct svc_audit_stats_res *res, struct sbx_error **err)
{
	struct auditq_filter f = req->filter;
	struct auditdb *db = NULL;
	int rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	if (!f.since_us)
		f.since_us = (f.until_us ? f.until_us : audit_now_us()) -
			     86400LL * 1000000;
	if (check_filter(&f, err) == 0 && open_schema(s, &db, err) == 0)
		rc = auditq_stats(db, &f, &res->doc, err);
	close_db(s, db);
	return rc;
}

void svc_audit_stats_res_release(struct svc_audit_stats_res *res)
{
	json_decref(res->doc);
	res->doc = NULL;
}

/* ---- sweep ---- */

int svc_audit_sweep(const struct svc *s, const struct svc_call *call,
		    const struct svc_audit_sweep_req *req,
		    struct svc_audit_sweep_res *res, struct sbx_error **err)
{
	struct auditdb_swept sw;
	struct auditdb *db = NULL;
	int rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	res->days = req->days;
	if (!res->days) {
		if (svc_config_check(s->cfg.retention_err, err) < 0)
			return -1;
		res->days = s->cfg.retention_days
				? (unsigned long long)s->cfg.retention_days
				: SVC_AUDIT_RETENTION_DEFAULT;
	}
	if (res->days > SVC_AUDIT_DAYS_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "a retention of %llu days: at most %d",
				     res->days, SVC_AUDIT_DAYS_MAX);
	res->before_us =
	    audit_now_us() - (long long)res->days * 86400 * 1000000;
	if (open_schema(s, &db, err) < 0 ||
	    auditdb_sweep(db, res->before_us, SWEEP_BATCH, &sw, err) < 0)
		goto out;
	res->deleted = sw.deleted;
	res->held = sw.held;
	res->days_dropped = sw.days;
	res->days_split = sw.days_split;
	res->days_busy = sw.days_busy;
	res->doc =
	    xjson_pack("{s:I, s:I, s:o, s:I, s:I, s:I, s:I}", "deleted",
		       (json_int_t)res->deleted, "held", (json_int_t)res->held,
		       "before", svc_time_json(res->before_us / 1000000),
		       "days", (json_int_t)res->days, "days_dropped",
		       (json_int_t)res->days_dropped, "days_split",
		       (json_int_t)res->days_split, "days_busy",
		       (json_int_t)res->days_busy);
	rc = 0;
out:
	close_db(s, db);
	return rc;
}

void svc_audit_sweep_res_release(struct svc_audit_sweep_res *res)
{
	json_decref(res->doc);
	res->doc = NULL;
}

/* ---- the service's upkeep ---- */

int svc_audit_upkeep(const struct svc *s, const struct svc_call *call,
		     struct svc_audit_upkeep_res *res, struct sbx_error **err)
{
	struct svc_audit_sweep_req req = {.days = 0};
	struct auditdb *db = NULL;
	int rc;

	memset(res, 0, sizeof(*res));
	if (!audit_config_db(&s->cfg.audit, NULL))
		return 0;
	res->ran = true;
	/* Days first: a sweep that fails must not keep tomorrow's rows
	 * from a partition of their own. */
	if (open_schema(s, &db, err) < 0)
		rc = -1;
	else
		rc = auditdb_make_days(db, AUDITDB_DAYS_AHEAD, &res->made, err);
	close_db(s, db);
	if (rc < 0 || (!s->cfg.retention_days && !s->cfg.retention_err))
		return rc;
	if (svc_audit_sweep(s, call, &req, &res->sweep, err) < 0)
		return -1;
	res->swept = true;
	return 0;
}

void svc_audit_upkeep_res_release(struct svc_audit_upkeep_res *res)
{
	svc_audit_sweep_res_release(&res->sweep);
}

/* ---- verify, head ---- */

int svc_audit_verify(const struct svc *s, const struct svc_call *call,
		     const struct svc_audit_chains_req *req,
		     struct svc_audit_verify_res *res, struct sbx_error **err)
{
	struct auditdb *db = NULL;
	int rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	if (check_chains(req, err) == 0 && open_db(s, &db, err) == 0)
		rc = auditdb_verify(db, req->session, req->tenant, &res->doc,
				    err);
	close_db(s, db);
	if (rc < 0)
		return -1;
	res->verified = rc == 0;
	return 0;
}

void svc_audit_verify_res_release(struct svc_audit_verify_res *res)
{
	json_decref(res->doc);
	res->doc = NULL;
}

int svc_audit_head(const struct svc *s, const struct svc_call *call,
		   const struct svc_audit_chains_req *req,
		   struct svc_audit_head_res *res, struct sbx_error **err)
{
	struct auditdb *db = NULL;
	int rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	if (check_chains(req, err) == 0 && open_schema(s, &db, err) == 0)
		rc = auditdb_heads(db, req->session, req->tenant, &res->doc,
				   err);
	close_db(s, db);
	return rc;
}

void svc_audit_head_res_release(struct svc_audit_head_res *res)
{
	json_decref(res->doc);
	res->doc = NULL;
}

/* ---- the terminal's table ---- */

const svc_audit_column *svc_audit_table_column(size_t k)
{
	for (size_t i = 0; i < audit_ncolumns; i++)
		if (audit_columns[i].head && k-- == 0)
			return &audit_columns[i];
	return NULL;
}

void svc_audit_table_cell(const svc_audit_column *c, json_t *row, bool brief,
			  struct strbuf *out)
{
	audit_column_cell(c, row, brief, out);
}

/* ---- a session's events ---- */

int svc_audit_events(const struct svc *s, const struct svc_call *call,
		     const struct svc_audit_events_req *req,
		     struct svc_audit_events_res *res, struct sbx_error **err)
{
	struct auditq_events_req q = {
	    .session = req->key,
	    .tenant = call ? call->tenant : NULL,
	    .after = req->after,
	    .limit = req->limit ? req->limit : SVC_AUDIT_EVENTS_DEFAULT};
	struct auditdb *db = NULL;
	json_t *events = NULL;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (!req->key || req->after < 0 || q.limit > SVC_AUDIT_EVENTS_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "events: a session, after >= 0 and at "
				     "most %d of them",
				     SVC_AUDIT_EVENTS_MAX);
	if (open_schema(s, &db, err) == 0 &&
	    auditq_events(db, &q, &events, &res->latest_seq, err) == 0) {
		res->count = json_array_size(events);
		res->events = events;
		res->doc =
		    xjson_pack("{s:o, s:I}", "events", events, "latest_seq",
			       (json_int_t)res->latest_seq);
		rc = 0;
	}
	close_db(s, db);
	return rc;
}

void svc_audit_events_res_release(struct svc_audit_events_res *res)
{
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- the service's writer and pool ---- */

int svc_audit_serve_start(struct svc *s, size_t pool_max,
			  struct sbx_error **err)
{
	const struct audit_config *c = &s->cfg.audit;
	const char *conninfo = audit_config_db(c, NULL);

	if (audit_writer_start(&s->writer, c, err) < 0)
		return -1;
	if (conninfo)
		s->pool = auditdb_pool_new(conninfo, c->connect_timeout,
					   pool_max ? pool_max
						    : SVC_AUDIT_POOL_DEFAULT);
	return 0;
}

void svc_audit_serve_stop(struct svc *s)
{
	audit_writer_stop(s->writer);
	auditdb_pool_free(s->pool);
	s->writer = NULL;
	s->pool = NULL;
}

bool svc_audit_writer_stats(const struct svc *s, struct audit_writer_stats *st)
{
	if (!s->writer)
		return false;
	audit_writer_stats(s->writer, st);
	return true;
}

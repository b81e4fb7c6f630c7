/*
 * recorder.c - the audit recorder of audit.h: a row to the database when
 * it answers, else to the spool, else the operation fails (docs/audit.md,
 * "Nothing lost").
 *
 * The database is connected on first need and only once per recorder: a
 * database that did not answer is not asked again by the same recorder
 * (one command, one request), so a run of rows goes to one place.  Before a row
 * reaches the database a non-empty spool is replayed into it, so a session's
 * chain keeps the order its rows were made in; a replay another process holds
 * is not waited for.
 *
 * A recorder on the service's writer (audit_open_writer, audit-writer.h)
 * keeps no connection or spool of its own: its ready and record are the
 * writer's.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "audit/audit-writer.h"
#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/spool.h"
#include "basic/alloc.h"
#include "basic/env.h"
#include "basic/error.h"
#include "basic/text.h"

struct audit {
	bool off;
	char *conninfo; /* NULL: no database configured */
	char *connect_timeout;
	char *agent, *run;
	struct auditdb *db;
	bool db_tried;
	struct sbx_error *db_err;  /* why there is no db */
	struct sbx_error *warning; /* a replay that failed, for the user */
	bool replayed;		   /* tried once this command */
	struct spool spool;
	struct audit_writer *writer; /* NULL: the command line's own */
};

/* An agent or run id (what: "agent id", "run id"): at most
 * AUDIT_ID_MAX bytes, plain (kept byte for byte, never escaped).  The caller
 * knows where it came from (a flag, a variable, a request) and may say so. */
int audit_id_check(const char *what, const char *id, struct sbx_error **err)
{
	size_t len = strlen(id);

	if (!len || len > AUDIT_ID_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s: an id of 1 to %d bytes is needed, "
				     "not %zu",
				     what, AUDIT_ID_MAX, len);
	if (!audit_is_plain(id, AUDIT_ID_MAX))
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s: an id may not hold control "
				     "characters or bytes that are not UTF-8",
				     what);
	return 0;
}

/* A recorder with its ids checked and copied, nothing else set. */
static struct audit *recorder_new(const char *agent, const char *run,
				  struct sbx_error **err)
{
	struct audit *a;

	if ((agent && audit_id_check("agent id", agent, err) < 0) ||
	    (run && audit_id_check("run id", run, err) < 0))
		return NULL;
	a = xcalloc(1, sizeof(*a));
	a->agent = agent ? xstrdup(agent) : NULL;
	a->run = run ? xstrdup(run) : NULL;
	a->spool.dir = NULL;
	a->spool.dirfd = a->spool.fd = a->spool.count_fd = -1;
	return a;
}

int audit_open_writer(struct audit **out, struct audit_writer *w,
		      const char *agent, const char *run,
		      struct sbx_error **err)
{
	struct audit *a = recorder_new(agent, run, err);

	*out = a;
	if (!a)
		return -1;
	a->off = audit_writer_off(w);
	a->writer = w;
	return 0;
}

int audit_open(struct audit **out, const struct audit_config *c,
	       const char *agent, const char *run, struct sbx_error **err)
{
	const char *conninfo = audit_config_db(c, NULL);
	struct audit *a = recorder_new(agent, run, err);

	*out = a;
	if (!a)
		return -1;
	a->off = c->off;
	a->conninfo = conninfo ? xstrdup(conninfo) : NULL;
	a->connect_timeout =
	    c->connect_timeout ? xstrdup(c->connect_timeout) : NULL;
	spool_init(&a->spool, c);
	/* The server sets its session up while the operation works. */
	if (!a->off && a->conninfo &&
	    auditdb_connect_start(a->conninfo, a->connect_timeout, &a->db,
				  &a->db_err) < 0)
		a->db_tried = true;
	return 0;
}

/* The replay's sink: the database. */
static int to_db(void *arg, const struct audit_row *rows, size_t n,
		 struct sbx_error **err)
{
	size_t inserted, skipped;

	return auditdb_insert(arg, rows, n, &inserted, &skipped, err);
}

/* Forget a database that failed: this command asks it no more. */
static void drop_db(struct audit *a, struct sbx_error **why)
{
	auditdb_close(a->db);
	a->db = NULL;
	sbx_error_free(&a->db_err);
	a->db_err = *why;
	*why = NULL;
}

/* The database, connected, with the spool replayed into it; NULL (the
 * reason in a->db_err) when there is none or it failed. */
static struct auditdb *db(struct audit *a)
{
	struct sbx_error *err = NULL;
	unsigned long long moved, kept, pending;

	if (!a->db_tried) {
		a->db_tried = true;
		if (!a->conninfo) {
			sbx_error_set(&a->db_err, SBX_E_UNAVAILABLE, 0,
				      "no database configured");
		} else if (auditdb_connect_finish(a->db, &a->db_err) < 0) {
			/* a->db: audit_open started it (or set db_tried) */
			auditdb_close(a->db);
			a->db = NULL;
		}
	}
	/* A replay that fails leaves the spool as it was and is said; the
	 * row at hand still tries the database (its own insert tells
	 * whether the database is gone). */
	pending = a->db && !a->replayed ? spool_pending(&a->spool) : 0;
	if (pending) {
		a->replayed = true;
		if (spool_replay(&a->spool, false, to_db, a->db, &moved, &kept,
				 &err) < 0) {
			sbx_error_wrap(&err, "the audit's spool was not "
					     "replayed (its rows stay "
					     "spooled)");
			sbx_error_free(&a->warning);
			a->warning = err;
		} else if (kept) {
			sbx_error_free(&a->warning);
			sbx_error_set(&a->warning, SBX_E_UNAVAILABLE, 0,
				      "%llu damaged %s of the audit's spool "
				      "kept aside (see docs/audit.md)",
				      kept, kept == 1 ? "line" : "lines");
		}
	}
	return a->db;
}

int audit_both_failed(const char *db, struct sbx_error **spool_err,
		      struct sbx_error **err)
{
	int rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			       "audit record could not be written: "
			       "database: %s; spool: %s",
			       db, (*spool_err)->msg);

	if (err && *err) {
		(*err)->reason = (*spool_err)->reason;
		if ((*spool_err)->hint)
			sbx_error_hint(*err, "%s", (*spool_err)->hint);
	}
	sbx_error_free(spool_err);
	return rc;
}

static int both_failed(struct audit *a, struct sbx_error **spool_err,
		       struct sbx_error **err)
{
	return audit_both_failed(a->db_err ? a->db_err->msg : "?", spool_err,
				 err);
}

int audit_ready(struct audit *a, struct sbx_error **err)
{
	struct sbx_error *serr = NULL;

	if (a->off)
		return 0;
	if (a->writer)
		return audit_writer_ready(a->writer, err);
	/* The spool takes the row whenever the database does not, and the
	 * database may fail between here and the row: nothing is done
	 * unless the spool is certain to take it (its floor and reserve),
	 * with a database or without. */
	if (spool_ready(&a->spool, &serr) == 0)
		return 0;
	if (serr->kind != SBX_E_INVALID && !db(a))
		return both_failed(a, &serr, err);
	if (serr->kind != SBX_E_INVALID) /* else: a limit set wrong */
		sbx_error_wrap(&serr,
			       "audit record could not be written should the "
			       "database fail: spool");
	*err = serr;
	return -1;
}

int audit_record(struct audit *a, struct audit_row *r, enum audit_where *where,
		 struct sbx_error **err)
{
	struct sbx_error *why = NULL;
	size_t inserted;
	enum audit_where dummy;

	if (!where)
		where = &dummy;
	*where = AUDIT_TO_NOWHERE;
	if (a->off) {
		*where = AUDIT_OFF;
		return 0;
	}
	if (!r->agent && a->agent)
		r->agent = xstrdup(a->agent);
	if (!r->run && a->run)
		r->run = xstrdup(a->run);
	if (a->writer)
		return audit_writer_record(a->writer, r, where, err);
	if (db(a)) {
		if (auditdb_insert_fresh(a->db, r, 1, &inserted, &why) == 0) {
			*where = AUDIT_TO_DB;
			return 0;
		}
		drop_db(a, &why);
	}
	if (spool_append(&a->spool, r, &why) == 0) {
		*where = AUDIT_TO_SPOOL;
		return 0;
	}
	spool_note_lost(&a->spool, r);
	return both_failed(a, &why, err);
}

int audit_warning(struct audit *a, struct sbx_error **w)
{
	if (!a || !a->warning)
		return 0;
	*w = a->warning;
	a->warning = NULL;
	return -1;
}

void audit_close(struct audit *a)
{
	if (!a)
		return;
	auditdb_close(a->db);
	sbx_error_free(&a->db_err);
	sbx_error_free(&a->warning);
	spool_close(&a->spool);
	free(a->conninfo);
	free(a->connect_timeout);
	free(a->agent);
	free(a->run);
	free(a);
}

void audit_detail_of(struct strbuf *out, const struct sbx_error *err)
{
	const char *name = err->errnum ? strerrorname_np(err->errnum) : NULL;

	/* A request the operation itself found malformed (a bad grep or
	 * glob pattern, an empty --old: exit 2 after the session was
	 * looked up) was tried, and refused. */
	strbuf_addstr(out, sbx_kind_refusal(err->kind) ? "refused" : "failed");
	if (err->reason)
		strbuf_addf(out, ": %s", err->reason);
	else if (err->kind == SBX_E_INVALID)
		strbuf_addstr(out, ": invalid request");
	else if (name)
		strbuf_addf(out, ": %s", name);
}

int audit_event(struct audit *a, const struct audit_event *ev,
		struct sbx_error **err)
{
	struct audit_row r;
	struct strbuf sb = STRBUF_INIT;
	const char *tenant = ev->tenant ? ev->tenant : "";
	const char *key = ev->session_key ? ev->session_key : "";
	const char *target = ev->target ? ev->target : "";
	int rc;

	if (a->off)
		return 0;
	audit_row_init(&r, ev->op);
	audit_row_set(&r.tenant, tenant, strlen(tenant), AUDIT_ID_MAX);
	audit_row_set(&r.session_key, key, strlen(key), AUDIT_ID_MAX);
	if (ev->runtime)
		audit_row_set(&r.runtime, ev->runtime, strlen(ev->runtime),
			      AUDIT_ID_MAX);
	audit_row_set_target(&r, target, strlen(target));
	/* An id of the wire's pattern: nothing in it to escape. */
	if (ev->wire_id && *ev->wire_id &&
	    audit_is_plain(ev->wire_id, AUDIT_ID_MAX) &&
	    strlen(ev->wire_id) <= AUDIT_ID_MAX)
		r.wire_id = xstrdup(ev->wire_id);
	r.ok = ev->ok;
	r.has_exit = ev->has_exit;
	r.exit_status = ev->exit_status;
	r.bytes = ev->bytes;
	r.results = ev->results;
	r.duration_ms = ev->duration_ms < 0 ? 0 : ev->duration_ms;
	if (ev->why)
		audit_detail_of(&sb, ev->why);
	else if (ev->detail)
		strbuf_addstr(&sb, ev->detail);
	if (ev->asked_key)
		strbuf_addf(&sb, "%ssession asked: %s", sb.len ? "; " : "",
			    ev->asked_key);
	audit_row_set(&r.detail, sb.buf ? sb.buf : "", sb.len,
		      AUDIT_DETAIL_MAX);
	rc = audit_record(a, &r, NULL, err);
	audit_row_release(&r);
	strbuf_release(&sb);
	return rc;
}

/* ---- the configuration (audit.h) ---- */

/* A limit in bytes (a whole number) from var, kept in *out when unset. */
static int limit_bytes(const struct sbx_env *env, const char *var,
		       unsigned long long *out, struct sbx_error **err)
{
	const char *v = sbx_env_get(env, var);

	if (!v || !*v)
		return 0;
	/* 18 digits at most, as the limits have always taken. */
	if (!text_parse_uint(v, 999999999999999999ULL, out)) {
		struct strbuf sb = STRBUF_INIT;

		text_add_escaped(&sb, v, strlen(v));
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "%s '%s': expected a whole number of bytes", var,
			      strbuf_str(&sb));
		strbuf_release(&sb);
		return -1;
	}
	return 0;
}

int audit_config_load(struct audit_config *c, const struct sbx_env *env,
		      struct sbx_error **err)
{
	static const char *const pgenv[] = {"PGHOST", "PGHOSTADDR",
					    "PGPORT", "PGDATABASE",
					    "PGUSER", "PGSERVICE"};
	const char *off = sbx_env_nonempty(env, "SBXCAT_AUDIT");
	const char *db = sbx_env_nonempty(env, "SBXCAT_DATABASE_URL");
	const char *dir = sbx_env_nonempty(env, "SBXCAT_SPOOL_DIR");
	const char *timeout = sbx_env_nonempty(env, "PGCONNECT_TIMEOUT");

	memset(c, 0, sizeof(*c));
	c->spool_min_free = SPOOL_MIN_FREE_DEFAULT;
	c->spool_reserve = SPOOL_RESERVE_DEFAULT;
	c->spool_dir = xstrdup(dir ? dir : SPOOL_DEFAULT_DIR);
	c->connect_timeout = timeout ? xstrdup(timeout) : NULL;
	if (db) {
		c->db = xstrdup(db);
		c->db_source = "SBXCAT_DATABASE_URL";
	} else {
		for (size_t i = 0; i < sizeof(pgenv) / sizeof(pgenv[0]); i++)
			if (sbx_env_nonempty(env, pgenv[i])) {
				c->db = xstrdup("");
				c->db_source = "libpq environment";
				break;
			}
	}
	if (limit_bytes(env, "SBXCAT_SPOOL_MIN_FREE", &c->spool_min_free,
			&c->limits_err) < 0 ||
	    limit_bytes(env, "SBXCAT_SPOOL_RESERVE", &c->spool_reserve,
			&c->limits_err) < 0) {
		/* Kept for the first operation that needs the spool. */
	}
	if (off && strcmp(off, "off") != 0 && strcmp(off, "on") != 0)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "SBXCAT_AUDIT: 'on' or 'off', not "
				     "something else");
	c->off = off && strcmp(off, "off") == 0;
	return 0;
}

const char *audit_config_db(const struct audit_config *c, const char **source)
{
	if (c->db_override) {
		if (source)
			*source = c->db_override_source ? c->db_override_source
							: "the caller";
		return c->db_override;
	}
	if (source)
		*source = c->db_source;
	return c->db;
}

void audit_config_release(struct audit_config *c)
{
	free(c->db);
	free(c->connect_timeout);
	free(c->spool_dir);
	sbx_error_free(&c->limits_err);
	memset(c, 0, sizeof(*c));
}

/*
 * auditdb.c - the audit's PostgreSQL side (auditdb.h): connecting,
 * migrating, inserting rows onto their session's hash chain, verifying the
 * chains, their heads, and the retention sweep.
 *
 * Every value goes to the server as a parameter or through COPY's own
 * escaping, never spliced into SQL.  Sets of values (sessions, agents,
 * ids) go as one array parameter, so a batch costs a fixed number of
 * round trips whatever its size: an insert is two (pipeline mode, its
 * statements prepared once per connection; see insert_tx).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "basic/clock.h"
#include "basic/alloc.h"
#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/auditdb-pq.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "audit/pq-dl.h"
#include "basic/text.h"
#include "basic/xjson.h"

struct auditdb {
	PGconn *conn;
	int schema; /* applied version once checked, else -1 */
	char *info; /* the connection string, to keep out of messages */
	char *timeout; /* connect_timeout unless info sets one: "5" */
	PostgresPollingStatusType polling; /* the connect's last step */
	long long started;		   /* clock_now_ms() */
	bool retried;			   /* a stale start was redone */
	bool ready;			   /* connected and set up */
	/* The insert's statements prepared on this connection: a bit per
	 * enum stmt, and per row count of the multi-row INSERT. */
	uint64_t prepared, prepared_rows;
};

#define COPY_OVER 50 /* rows: more go through COPY */
_Static_assert(COPY_OVER <= 64, "a bit of prepared_rows per row count");

const char auditdb_schema_old[] = "schema older than sbxcat";

/* Replace each occurrence of secret (len > 0) in *msg with "***". */
static void scrub(char **msg, const char *secret, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = *msg, *hit;

	if (!len)
		return;
	while ((hit = strstr(p, secret)) != NULL) {
		/* strstr needs a NUL-terminated secret: callers pass one. */
		strbuf_add(&sb, p, (size_t)(hit - p));
		strbuf_addstr(&sb, "***");
		p = hit + len;
	}
	strbuf_addstr(&sb, p);
	free(*msg);
	*msg = strbuf_detach(&sb, NULL);
}

/*
 * Remove from msg whatever the connection string gives as a password:
 * password=VALUE (quoted or not), a URI's user:PASSWORD@ and its
 * ?password=VALUE.  libpq quotes pieces of a string it cannot parse.
 */
static void scrub_password(char **msg, const char *conninfo)
{
	const char *p = conninfo, *e;
	char *secret;

	while ((p = strstr(p, "password")) != NULL) {
		p += 8;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != '=')
			continue;
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\'') {
			p++;
			for (e = p; *e && *e != '\''; e++)
				if (*e == '\\' && e[1])
					e++;
		} else {
			for (e = p; *e && *e != ' ' && *e != '\t' &&
				    *e != '&' && *e != '#';
			     e++)
				;
		}
		secret = xstrndup(p, (size_t)(e - p));
		scrub(msg, secret, strlen(secret));
		free(secret);
	}
	if ((p = strstr(conninfo, "://")) != NULL) {
		p += 3;
		e = p + strcspn(p, "/?");
		const char *at = memrchr(p, '@', (size_t)(e - p));
		const char *colon =
		    at ? memchr(p, ':', (size_t)(at - p)) : NULL;
		if (colon) {
			secret = xstrndup(colon + 1, (size_t)(at - colon - 1));
			scrub(msg, secret, strlen(secret));
			free(secret);
		}
	}
}

/* libpq's message on one line, without a password, escaped. */
static char *clean_message(const char *m, const char *conninfo)
{
	struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
	bool space = false;
	char *s;

	for (; m && *m; m++) {
		if (*m == '\n' || *m == '\r' || *m == '\t' || *m == ' ') {
			space = sb.len > 0;
			continue;
		}
		if (space)
			strbuf_addch(&sb, ' ');
		space = false;
		strbuf_addch(&sb, *m);
	}
	s = strbuf_detach(&sb, NULL);
	if (conninfo)
		scrub_password(&s, conninfo);
	text_add_escaped(&out, s, strlen(s));
	free(s);
	return strbuf_detach(&out, NULL);
}

int auditdb_pq_error(struct sbx_error **err, const char *what, const char *msg)
{
	char *m = clean_message(msg, NULL);
	int ret = sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s: %s", what, m);

	free(m);
	return ret;
}

int auditdb_run(PGconn *c, const char *what, const char *sql, int n,
		char *const *params, PGresult **res, struct sbx_error **err)
{
	PGresult *r = sym_PQexecParams(
	    c, sql, n, NULL, (const char *const *)params, NULL, NULL, 0);
	ExecStatusType st = sym_PQresultStatus(r);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		int ret = auditdb_pq_error(err, what,
					   r ? sym_PQresultErrorMessage(r)
					     : sym_PQerrorMessage(c));
		sym_PQclear(r);
		return ret;
	}
	if (res)
		*res = r;
	else
		sym_PQclear(r);
	return 0;
}

json_t *auditdb_row_object(const char *text, const char *what,
			   struct sbx_error **err)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	if (!j || !json_is_object(j)) {
		json_decref(j);
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "%s: a row is not JSON: %s", what, je.text);
		return NULL;
	}
	return j;
}

static void quiet_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* An error from libpq's current message: "WHAT: REASON". */
static int pq_fail(struct auditdb *db, struct sbx_error **err, const char *what)
{
	char *m = clean_message(sym_PQerrorMessage(db->conn), NULL);
	sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s: %s", what, m);
	free(m);
	return -1;
}

/* An error from res (cleared here), for statement what. */
static int res_fail(PGresult *res, struct sbx_error **err, const char *what)
{
	char *m = clean_message(sym_PQresultErrorMessage(res), NULL);
	sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s: %s", what, m);
	free(m);
	sym_PQclear(res);
	return -1;
}

/* The connect_timeout in force (the user's string, PGCONNECT_TIMEOUT as
 * configured, or ours), in milliseconds: an asynchronous connect must keep it
 * itself. */
static long long connect_ms(PGconn *conn)
{
	PQconninfoOption *o = sym_PQconninfo(conn), *p;
	long long ms = 5000;

	for (p = o; p && p->keyword; p++)
		if (!strcmp(p->keyword, "connect_timeout") && p->val &&
		    *p->val) {
			long long t = atoll(p->val);

			/* libpq: 0 or less waits for ever, 1 is 2; a day is
			 * for ever enough (and t * 1000 cannot overflow) */
			ms = t <= 0 || t > 86400 ? 86400LL * 1000
						 : (t < 2 ? 2 : t) * 1000;
		}
	if (o)
		sym_PQconninfoFree(o);
	return ms;
}

/*
 * Start (or restart) db's connection: the first step sends the start-up
 * packet when it can, so the server sets its session up while the caller
 * does its work.
 */
static void begin(struct auditdb *db)
{
	/* Ours first: what the user's string sets wins (expand_dbname);
	 * but the client encoding is always UTF8, after it: rows are UTF-8
	 * and their hashes are of those bytes, whatever PGCLIENTENCODING
	 * says. */
	/* Over TCP, a server that vanishes mid-statement is noticed in
	 * about 30 s (keepalives, tcp_user_timeout), not when TCP gives up
	 * minutes later; a socket ignores them. */
	const char *const keys[] = {"connect_timeout",
				    "application_name",
				    "keepalives_idle",
				    "keepalives_interval",
				    "keepalives_count",
				    "tcp_user_timeout",
				    "dbname",
				    "client_encoding",
				    NULL};
	const char *vals[] = {db->timeout, /* connect_timeout */
			      "sbxcat",	   /* application_name */
			      "10",	   /* keepalives_idle */
			      "5",	   /* keepalives_interval */
			      "3",	   /* keepalives_count */
			      "30000",	   /* tcp_user_timeout */
			      db->info,	   /* dbname */
			      "UTF8",	   /* client_encoding */
			      NULL};

	if (db->conn)
		sym_PQfinish(db->conn);
	db->conn = sym_PQconnectStartParams(keys, vals, 1);
	if (!db->conn)
		die_oom();
	db->started = clock_now_ms();
	db->polling = sym_PQstatus(db->conn) == CONNECTION_BAD
			  ? PGRES_POLLING_FAILED
			  : sym_PQconnectPoll(db->conn);
}

int auditdb_connect_start(const char *conninfo, const char *connect_timeout,
			  struct auditdb **dbp, struct sbx_error **err)
{
	struct auditdb *db;

	*dbp = NULL;
	if (pq_dl_load(err) < 0)
		return -1;
	db = xcalloc(1, sizeof(*db));
	db->schema = -1;
	db->info = xstrdup(conninfo ? conninfo : "");
	db->timeout = xstrdup(
	    connect_timeout && *connect_timeout ? connect_timeout : "5");
	begin(db);
	*dbp = db;
	return 0;
}

/*
 * Drive the connection to its end.  The connect timeout counts from here,
 * not from the start: the time the caller spent on its own work (a
 * container made under load can take longer than the timeout) is not the
 * server's.  A start that failed after the caller had worked a while (the
 * server gave up waiting on us, or restarted) is redone once.
 */
static int connect_wait(struct auditdb *db)
{
	long long deadline = clock_now_ms() + connect_ms(db->conn);

	for (;;) {
		while (db->polling != PGRES_POLLING_OK &&
		       db->polling != PGRES_POLLING_FAILED) {
			struct pollfd pfd = {
			    .fd = sym_PQsocket(db->conn),
			    .events = db->polling == PGRES_POLLING_READING
					  ? POLLIN
					  : POLLOUT};
			long long left = deadline - clock_now_ms();
			int n;

			if (left <= 0)
				return ETIMEDOUT;
			n = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
			if (n < 0 && errno != EINTR)
				return errno;
			if (n > 0)
				db->polling = sym_PQconnectPoll(db->conn);
		}
		if (db->polling == PGRES_POLLING_OK &&
		    sym_PQstatus(db->conn) == CONNECTION_OK)
			return 0;
		if (db->retried || clock_now_ms() - db->started < 1000)
			return -1;
		db->retried = true;
		begin(db);
	}
}

int auditdb_connect_finish(struct auditdb *db, struct sbx_error **err)
{
	const char *enc;
	PGresult *res;

	if (!db->ready) {
		int e = connect_wait(db);

		if (e == ETIMEDOUT)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "database unreachable: no answer "
					     "within the connect timeout");
		if (e > 0)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
					     "database unreachable: poll");
		if (e < 0) {
			char *m = clean_message(sym_PQerrorMessage(db->conn),
						db->info);

			sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				      "database unreachable: %s", m);
			free(m);
			return -1;
		}
	}
	if (db->ready)
		return 0;
	/* A database of another encoding would turn a path into other
	 * bytes (or refuse it), and the chain would no longer verify. */
	enc = sym_PQparameterStatus(db->conn, "server_encoding");
	if (!enc || strcmp(enc, "UTF8") != 0)
		return sbx_error_set(
		    err, SBX_E_UNAVAILABLE, 0,
		    "the audit's database must be UTF8, not %s "
		    "(CREATE DATABASE ... ENCODING 'UTF8')",
		    enc ? enc : "unknown");
	sym_PQsetNoticeProcessor(db->conn, quiet_notice, NULL);
	/* hex: the hashes are read back as text (a role or PGOPTIONS may
	 * say escape); standard strings: E'' is used where a backslash
	 * matters, but nothing should depend on the server's default. */
	res = sym_PQexec(db->conn, "SET statement_timeout = '30s'; "
				   "SET bytea_output = 'hex'; "
				   "SET standard_conforming_strings = on");
	if (sym_PQresultStatus(res) != PGRES_COMMAND_OK)
		return res_fail(res, err, "database unreachable");
	sym_PQclear(res);
	db->ready = true;
	return 0;
}

int auditdb_connect(const char *conninfo, const char *connect_timeout,
		    struct auditdb **dbp, struct sbx_error **err)
{
	if (auditdb_connect_start(conninfo, connect_timeout, dbp, err) < 0)
		return -1;
	if (auditdb_connect_finish(*dbp, err) < 0) {
		auditdb_close(*dbp);
		*dbp = NULL;
		return -1;
	}
	return 0;
}

void auditdb_close(struct auditdb *db)
{
	if (!db)
		return;
	if (db->conn)
		sym_PQfinish(db->conn);
	free(db->info);
	free(db->timeout);
	free(db);
}

void *auditdb_conn(struct auditdb *db)
{
	return db->conn;
}

bool auditdb_reusable(struct auditdb *db)
{
	return db->ready && sym_PQstatus(db->conn) == CONNECTION_OK &&
	       sym_PQtransactionStatus(db->conn) == PQTRANS_IDLE &&
	       sym_PQpipelineStatus(db->conn) == PQ_PIPELINE_OFF;
}

/* Run sql with text params; 0 when its status is want (res kept in *out
 * when out, else cleared). */
static int run(struct auditdb *db, const char *sql, int n,
	       const char *const *params, ExecStatusType want, PGresult **out,
	       struct sbx_error **err)
{
	PGresult *res =
	    sym_PQexecParams(db->conn, sql, n, NULL, params, NULL, NULL, 0);

	if (!res)
		return pq_fail(db, err, "database");
	if (sym_PQresultStatus(res) != want)
		return res_fail(res, err, "database");
	if (out)
		*out = res;
	else
		sym_PQclear(res);
	return 0;
}

static int cmd(struct auditdb *db, const char *sql, struct sbx_error **err)
{
	return run(db, sql, 0, NULL, PGRES_COMMAND_OK, NULL, err);
}

static void rollback(struct auditdb *db)
{
	PGresult *res = sym_PQexec(db->conn, "ROLLBACK");
	sym_PQclear(res);
}

/* --- migrations ---------------------------------------------------- */

int auditdb_schema_version(struct auditdb *db, int *applied, int *known,
			   struct sbx_error **err)
{
	PGresult *res;

	*known = auditdb_nmigrations;
	*applied = 0;
	if (run(db,
		"SELECT CASE WHEN to_regclass('schema_migrations') IS NULL "
		"THEN NULL ELSE 1 END",
		0, NULL, PGRES_TUPLES_OK, &res, err) < 0)
		return -1;
	bool exists = !sym_PQgetisnull(res, 0, 0);
	sym_PQclear(res);
	if (!exists)
		return db->schema = 0;
	if (run(db, "SELECT coalesce(max(version), 0) FROM schema_migrations",
		0, NULL, PGRES_TUPLES_OK, &res, err) < 0)
		return -1;
	*applied = atoi(sym_PQgetvalue(res, 0, 0));
	sym_PQclear(res);
	db->schema = *applied;
	return 0;
}

/*
 * The session-level migration lock, by polling: each try is a statement
 * of its own, so a migrator waiting holds no snapshot that another's
 * concurrent index build would wait for (the two would deadlock).  At
 * most MIGRATE_LOCK_TRIES tries, 100 ms apart.
 */
#define MIGRATE_LOCK_TRIES 3000 /* 5 minutes */

static int migrate_lock(struct auditdb *db, const char *lock,
			struct sbx_error **err)
{
	const char *p[1] = {lock};

	for (int i = 0; i < MIGRATE_LOCK_TRIES; i++) {
		struct timespec ts = {0, 100 * 1000 * 1000};
		PGresult *res;
		bool got;

		if (run(db, "SELECT pg_try_advisory_lock($1::bigint)", 1, p,
			PGRES_TUPLES_OK, &res, err) < 0)
			return -1;
		got = !strcmp(sym_PQgetvalue(res, 0, 0), "t");
		sym_PQclear(res);
		if (got)
			return 0;
		nanosleep(&ts, NULL);
	}
	return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			     "database: another migrator held the migration "
			     "lock for 5 minutes");
}

/* Let go of the session-level migration lock. */
static void migrate_unlock(struct auditdb *db, const char *lock)
{
	const char *p[1] = {lock};

	sym_PQclear(sym_PQexecParams(db->conn,
				     "SELECT pg_advisory_unlock($1::bigint)", 1,
				     NULL, p, NULL, NULL, 0));
}

/*
 * Apply migration m unless present, under the session-level lock (taken
 * by polling, outside the transaction: a migrator waiting inside one
 * would hold the snapshot another's concurrent index build waits for),
 * in one transaction.
 */
static int migrate_one(struct auditdb *db, const struct auditdb_migration *m,
		       int *applied, struct sbx_error **err)
{
	char lock[32], version[16];
	const char *p[2];
	PGresult *res;
	int rc = -1;

	snprintf(lock, sizeof(lock), "%d", AUDITDB_LOCK_MIGRATE);
	snprintf(version, sizeof(version), "%d", m->version);
	if (migrate_lock(db, lock, err) < 0)
		return -1;
	if (cmd(db, "BEGIN", err) < 0)
		goto out;
	if (cmd(db,
		"CREATE TABLE IF NOT EXISTS schema_migrations ("
		"version integer PRIMARY KEY, name text NOT NULL, "
		"applied_at timestamptz NOT NULL DEFAULT now())",
		err) < 0)
		goto fail;
	p[0] = version;
	if (run(db, "SELECT 1 FROM schema_migrations WHERE version = $1", 1, p,
		PGRES_TUPLES_OK, &res, err) < 0)
		goto fail;
	bool done = sym_PQntuples(res) > 0;
	sym_PQclear(res);
	if (done) {
		rc = cmd(db, "COMMIT", err);
		goto out;
	}
	res = sym_PQexec(db->conn, m->sql);
	if (sym_PQresultStatus(res) != PGRES_COMMAND_OK) {
		res_fail(res, err, "database");
		sbx_error_wrap(err, "migration %d (%s)", m->version, m->name);
		goto fail;
	}
	sym_PQclear(res);
	p[1] = m->name;
	if (run(db,
		"INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
		2, p, PGRES_COMMAND_OK, NULL, err) < 0 ||
	    cmd(db, "COMMIT", err) < 0)
		goto fail;
	(*applied)++;
	rc = 0;
	goto out;
fail:
	rollback(db);
out:
	migrate_unlock(db, lock);
	return rc;
}

/*
 * Apply m, which has online statements (auditdb.h): under the session's
 * lock, m->sql in a transaction, any index left INVALID by a concurrent
 * build that failed dropped, each online statement on its own, then m
 * recorded.
 */
static int migrate_online(struct auditdb *db, const struct auditdb_migration *m,
			  int *applied, struct sbx_error **err)
{
	char lock[32], version[16];
	const char *p[2] = {version, m->name};
	PGresult *res = NULL;
	int rc = -1;

	snprintf(lock, sizeof(lock), "%d", AUDITDB_LOCK_MIGRATE);
	snprintf(version, sizeof(version), "%d", m->version);
	if (migrate_lock(db, lock, err) < 0)
		return -1;
	if (run(db, "SELECT 1 FROM schema_migrations WHERE version = $1", 1, p,
		PGRES_TUPLES_OK, &res, err) < 0)
		goto out;
	bool done = sym_PQntuples(res) > 0;
	sym_PQclear(res);
	res = NULL;
	if (done) {
		rc = 0;
		goto out;
	}
	if (cmd(db, "BEGIN", err) < 0)
		goto out;
	res = sym_PQexec(db->conn, m->sql);
	if (sym_PQresultStatus(res) != PGRES_COMMAND_OK) {
		res_fail(res, err, "database");
		res = NULL;
		rollback(db);
		goto wrap;
	}
	sym_PQclear(res);
	res = NULL;
	/* An index build of the whole table may well pass the 30 s every
	 * statement of sbxcat's is bounded by. */
	if (cmd(db, "COMMIT", err) < 0 ||
	    cmd(db, "SET statement_timeout = 0", err) < 0 ||
	    run(db,
		"SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', "
		"c.relname) FROM pg_index i JOIN pg_class c ON c.oid = "
		"i.indexrelid WHERE i.indrelid = "
		"'sandbox_operations'::regclass "
		"AND NOT i.indisvalid",
		0, NULL, PGRES_TUPLES_OK, &res, err) < 0)
		goto wrap;
	for (int r = 0; r < sym_PQntuples(res); r++)
		if (cmd(db, sym_PQgetvalue(res, r, 0), err) < 0)
			goto wrap;
	for (const char *const *o = m->online; *o; o++)
		if (cmd(db, *o, err) < 0)
			goto wrap;
	if (run(db,
		"INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
		2, p, PGRES_COMMAND_OK, NULL, err) < 0)
		goto wrap;
	(*applied)++;
	rc = 0;
	goto out;
wrap:
	sbx_error_wrap(err, "migration %d (%s)", m->version, m->name);
out:
	if (res)
		sym_PQclear(res);
	sym_PQclear(sym_PQexec(db->conn, "RESET statement_timeout"));
	migrate_unlock(db, lock);
	return rc;
}

int auditdb_migrate(struct auditdb *db, int *applied, struct sbx_error **err)
{
	return auditdb_migrate_to(db, 0, applied, err);
}

int auditdb_migrate_to(struct auditdb *db, int to, int *applied,
		       struct sbx_error **err)
{
	int have, known;

	*applied = 0;
	if (to < 0 || to > auditdb_nmigrations)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "no migration %d: this sbxcat knows 1 "
				     "to %d",
				     to, auditdb_nmigrations);
	if (!to)
		to = auditdb_nmigrations;
	if (auditdb_schema_version(db, &have, &known, err) < 0)
		return -1;
	for (int i = have; i < to; i++) {
		const struct auditdb_migration *m = &auditdb_migrations[i];

		if (m->online ? migrate_online(db, m, applied, err) < 0
			      : migrate_one(db, m, applied, err) < 0)
			return -1;
	}
	if (auditdb_schema_version(db, &have, &known, err) < 0)
		return -1;
	if (have >= known) {
		int made;
		return auditdb_make_days(db, AUDITDB_DAYS_AHEAD, &made, err);
	}
	return 0;
}

static int schema_check(struct auditdb *db, struct sbx_error **err);

int auditdb_make_days(struct auditdb *db, int ahead, int *made,
		      struct sbx_error **err)
{
	*made = 0;
	if (schema_check(db, err) < 0 ||
	    cmd(db, "SET lock_timeout = '2s'", err) < 0)
		return -1;
	for (int k = -1; k <= ahead; k++) {
		char day[16];
		const char *p[1] = {day};
		PGresult *res;
		const char *state;

		snprintf(day, sizeof(day), "%d", k);
		res = sym_PQexecParams(db->conn,
				       "SELECT sbxcat_audit_day('"
				       "sandbox_operations'::regclass, (now() "
				       "AT TIME ZONE 'UTC')::date + $1::int)",
				       1, NULL, p, NULL, NULL, 0);
		if (sym_PQresultStatus(res) == PGRES_TUPLES_OK) {
			*made += !strcmp(sym_PQgetvalue(res, 0, 0), "t");
			sym_PQclear(res);
			continue;
		}
		/* 55P03 lock_not_available: in use now, made next time; 40P01
		 * deadlock_detected: two makers of days at once (two
		 * migrators), this one the victim: the other makes it. */
		state = sym_PQresultErrorField(res, PG_DIAG_SQLSTATE);
		if (state &&
		    (!strcmp(state, "55P03") || !strcmp(state, "40P01"))) {
			sym_PQclear(res);
			continue;
		}
		res_fail(res, err, "database: making the audit's day partitions");
		sym_PQclear(sym_PQexec(db->conn, "RESET lock_timeout"));
		return -1;
	}
	return cmd(db, "RESET lock_timeout", err);
}

int auditdb_migrate_status(struct auditdb *db, json_t **status,
			   struct sbx_error **err)
{
	int have, known;
	PGresult *res = NULL;

	*status = NULL;
	if (auditdb_schema_version(db, &have, &known, err) < 0)
		return -1;
	if (db->schema > 0 ||
	    run(db, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0,
		NULL, PGRES_TUPLES_OK, &res, err) == 0) {
		bool exists =
		    db->schema > 0 || !strcmp(sym_PQgetvalue(res, 0, 0), "t");
		if (res)
			sym_PQclear(res);
		res = NULL;
		if (exists && run(db,
				  "SELECT version, to_char(applied_at AT TIME "
				  "ZONE 'UTC', "
				  "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') "
				  "FROM schema_migrations ORDER BY version",
				  0, NULL, PGRES_TUPLES_OK, &res, err) < 0)
			return -1;
	} else {
		return -1;
	}
	json_t *a = json_array();
	for (int i = 0; i < auditdb_nmigrations; i++) {
		const struct auditdb_migration *m = &auditdb_migrations[i];
		const char *at = NULL;
		for (int r = 0; res && r < sym_PQntuples(res); r++)
			if (atoi(sym_PQgetvalue(res, r, 0)) == m->version)
				at = sym_PQgetvalue(res, r, 1);
		json_array_append_new(
		    a, xjson_pack("{s:i,s:s,s:o}", "version", m->version,
				  "name", m->name, "applied_at",
				  at ? json_string(at) : json_null()));
	}
	if (res)
		sym_PQclear(res);
	*status = a;
	return 0;
}

/* --- inserting ----------------------------------------------------- */

/* bytea's text output "\x..." (32 bytes) into out; -1 when not that. */
static int unhex32(const char *s, unsigned char out[32])
{
	if (strncmp(s, "\\x", 2) || strlen(s) != 66)
		return -1;
	s += 2;
	for (int i = 0; i < 32; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + k];
			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v |= (unsigned)(c - 'a' + 10);
			else
				return -1;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

static void array_start(struct strbuf *sb)
{
	strbuf_reset(sb);
	strbuf_addch(sb, '{');
}

static void array_end(struct strbuf *sb)
{
	strbuf_addch(sb, '}');
}

static void array_add(struct strbuf *sb, const char *s)
{
	if (sb->len > 1)
		strbuf_addch(sb, ',');
	if (!s) {
		strbuf_addstr(sb, "NULL");
		return;
	}
	strbuf_addch(sb, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			strbuf_addch(sb, '\\');
		strbuf_addch(sb, *s);
	}
	strbuf_addch(sb, '"');
}

struct chain {
	const char *session, *tenant;
	unsigned char head[32];
	long long added;
	const char *last_id;
	long long last_us; /* the last row's created_at */
};

struct ins {
	const struct audit_row *rows;
	size_t n;
	const struct audit_row **byid; /* sorted by id */
	bool *skip;		       /* per row */
	struct chain *chains;	       /* sorted by session */
	size_t nchains;
	unsigned char (*hash)[32]; /* per row */
	bool fresh; /* rows never sent before: none can be present */
	/* A replay's COPY sent without the look-up (insert): true when it
	 * failed on the key (a row there already), to be tried again with
	 * it. */
	bool hopeful, present;
};

static int cmp_session(const void *a, const void *b)
{
	return strcmp(((const struct chain *)a)->session,
		      ((const struct chain *)b)->session);
}

static int cmp_rowid(const void *a, const void *b)
{
	const struct audit_row *x = *(const struct audit_row *const *)a;
	const struct audit_row *y = *(const struct audit_row *const *)b;
	int c = strcasecmp(x->id, y->id);

	if (c)
		return c;
	if (x->created_us != y->created_us)
		return x->created_us < y->created_us ? -1 : 1;
	return x < y ? -1 : x > y;
}

static struct chain *find_chain(struct ins *in, const char *session)
{
	struct chain key = {.session = session};
	return bsearch(&key, in->chains, in->nchains, sizeof(key), cmp_session);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct non-NULL strings of field (offset into audit_row), sorted,
 * as an array literal; with pair, a second literal of the first row's
 * pair field for each. */
static void distinct(const struct audit_row *rows, size_t n, size_t off,
		     size_t pair_off, struct strbuf *lit, struct strbuf *pair)
{
	const char **v = xcalloc(n ? n : 1, 2 * sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = *(char *const *)((const char *)&rows[i] + off);
		if (!s)
			continue;
		v[2 * k] = s;
		v[2 * k + 1] =
		    pair ? *(char *const *)((const char *)&rows[i] + pair_off)
			 : NULL;
		k++;
	}
	qsort(v, k, 2 * sizeof(*v), cmp_str);
	array_start(lit);
	if (pair)
		array_start(pair);
	for (size_t i = 0; i < k; i++) {
		if (i && !strcmp(v[2 * i], v[2 * (i - 1)]))
			continue;
		array_add(lit, v[2 * i]);
		if (pair)
			array_add(pair, v[2 * i + 1]);
	}
	array_end(lit);
	if (pair)
		array_end(pair);
	free(v);
}

/*
 * What the insert gives each row: every column of the table
 * (audit_columns, each foreign key beside its column), then the row's
 * link in its chain and the version of the encoding it hashes.
 */
#define INSERT_MAX 40 /* values a row: the table's and its also's, + 2 */

struct fields {
	const char *v[INSERT_MAX];
	int n;
	char buf[INSERT_MAX][AUDIT_VALUE_MAX], hash[67], version[8];
};

/* The insert's column list ("id, created_at, ..."), in row_fields'
 * order. */
static void insert_columns(struct strbuf *sb)
{
	for (size_t i = 0; i < audit_ncolumns; i++) {
		const struct audit_column *c = &audit_columns[i];

		strbuf_addf(sb, "%s%s", i ? ", " : "", c->sql);
		if (c->also)
			strbuf_addf(sb, ", %s", c->also);
	}
	strbuf_addstr(sb, ", hash, hash_version");
}

/* The encoding a row is hashed with: the one it was made for (a spool
 * line of before version 2 keeps version 1: its strings are cleaned by
 * that version's rule). */
static int row_version(const struct audit_row *r)
{
	return r->version ? r->version : AUDIT_CHAIN_VERSION;
}

static void row_fields(const struct audit_row *r, const unsigned char h[32],
		       struct fields *f)
{
	if (2 * audit_ncolumns + 2 > INSERT_MAX)
		die_bug("auditdb: %zu columns over INSERT_MAX", audit_ncolumns);
	f->n = 0;
	for (size_t i = 0; i < audit_ncolumns; i++) {
		const struct audit_column *c = &audit_columns[i];
		const char *v = audit_column_value(c, r, f->buf[f->n]);

		f->v[f->n++] = v;
		if (c->also)
			f->v[f->n++] = v;
	}
	memcpy(f->hash, "\\x", 2); /* bytea's hex input */
	hex_encode(f->hash + 2, h, 32);
	snprintf(f->version, sizeof(f->version), "%d", row_version(r));
	f->v[f->n++] = f->hash;
	f->v[f->n++] = f->version;
}

/* COPY text format: \N for NULL; backslash, tab, newline, CR escaped. */
static void copy_field(struct strbuf *sb, const char *s)
{
	if (!s) {
		strbuf_add(sb, "\\N", 2);
		return;
	}
	for (;;) {
		/* The plain run up to the next byte to escape, in one copy:
		 * most fields have none. */
		size_t run = strcspn(s, "\\\t\n\r");

		strbuf_add(sb, s, run);
		s += run;
		switch (*s) {
		case '\0':
			return;
		case '\\':
			strbuf_add(sb, "\\\\", 2);
			break;
		case '\t':
			strbuf_add(sb, "\\t", 2);
			break;
		case '\n':
			strbuf_add(sb, "\\n", 2);
			break;
		default: /* '\r' */
			strbuf_add(sb, "\\r", 2);
		}
		s++;
	}
}

static void chain_row(struct ins *in, size_t i);

static int insert_copy(struct auditdb *db, struct ins *in,
		       struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	struct fields f;
	PGresult *res;
	int rc;

	strbuf_addstr(&sb, "COPY sandbox_operations (");
	insert_columns(&sb);
	strbuf_addstr(&sb, ") FROM STDIN");
	rc = run(db, sb.buf, 0, NULL, PGRES_COPY_IN, NULL, err);
	strbuf_reset(&sb);
	if (rc < 0) {
		strbuf_release(&sb);
		return -1;
	}
	for (size_t i = 0; i < in->n && rc == 0; i++) {
		if (in->skip[i])
			continue;
		/* Hashed here, not before the COPY: the server takes the
		 * rows sent while the later ones are hashed. */
		chain_row(in, i);
		row_fields(&in->rows[i], in->hash[i], &f);
		for (int c = 0; c < f.n; c++) {
			if (c)
				strbuf_addch(&sb, '\t');
			copy_field(&sb, f.v[c]);
		}
		strbuf_addch(&sb, '\n');
		if (sb.len >= 65536) {
			if (sym_PQputCopyData(db->conn, sb.buf, (int)sb.len) !=
			    1)
				rc = -1;
			strbuf_reset(&sb);
		}
	}
	if (rc == 0 && sb.len &&
	    sym_PQputCopyData(db->conn, sb.buf, (int)sb.len) != 1)
		rc = -1;
	strbuf_release(&sb);
	if (sym_PQputCopyEnd(db->conn, rc < 0 ? "sbxcat: copy failed" : NULL) !=
	    1)
		rc = -1;
	while ((res = sym_PQgetResult(db->conn)) != NULL) {
		if (sym_PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0) {
			const char *st =
			    sym_PQresultErrorField(res, PG_DIAG_SQLSTATE);

			/* unique_violation: the only unique index is the
			 * key's. */
			in->present = in->hopeful && st && !strcmp(st, "23505");
			res_fail(res, err, "database");
			rc = -2;
			continue;
		}
		sym_PQclear(res);
	}
	if (rc == -1)
		pq_fail(db, err, "database");
	return rc < 0 ? -1 : 0;
}

/*
 * The statements of one round trip (libpq's pipeline mode): each sent at
 * once, the lot followed by a sync, then every result read in order.  A
 * group of rows costs two of them (the chains locked and read, then the
 * rows and the heads written and committed) instead of a round trip per
 * statement: on a local socket a round trip is ~0.05 ms, but each also
 * wakes the server and the writer in turn, which on a loaded machine is
 * what costs.
 */
#define PIPE_MAX 16

struct pipe {
	int n;
	bool send_failed;
	ExecStatusType want[PIPE_MAX];
	PGresult **keep[PIPE_MAX]; /* the result kept there, or NULL */
	/* A statement prepared: its bit set in *mark once the server has
	 * it (a Parse skipped after an error is not). */
	uint64_t *mark[PIPE_MAX], bit[PIPE_MAX];
};

/* A statement sent on p: its result to read after the sync. */
static void pipe_add(struct pipe *p, ExecStatusType want, PGresult **keep,
		     uint64_t *mark, uint64_t bit)
{
	p->want[p->n] = want;
	p->keep[p->n] = keep;
	p->mark[p->n] = mark;
	p->bit[p->n] = bit;
	p->n++;
}

static void pipe_send(struct auditdb *db, struct pipe *p, const char *sql,
		      int n, const char *const *params, ExecStatusType want,
		      PGresult **keep)
{
	if (p->n == PIPE_MAX)
		die_bug("auditdb: more than %d statements in a pipeline",
			PIPE_MAX);
	if (p->send_failed)
		return;
	/* libpq copies the parameters into its buffer here: they may be
	 * freed or reused once this returns. */
	if (!sym_PQsendQueryParams(db->conn, sql, n, NULL, params, NULL, NULL,
				   0)) {
		p->send_failed = true;
		return;
	}
	pipe_add(p, want, keep, NULL, 0);
}

/*
 * The insert's statements are prepared once per connection (named, in
 * the pipeline, before their first use): the server then neither parses
 * nor plans them again, which was most of a small group's time on the
 * server (measured: ~0.1-0.2 ms a statement of parse and bind).
 */
enum stmt { ST_CHAINS, ST_LOCK, ST_PRESENT, ST_AGENTS, ST_RUNS, ST_HEADS };

static const struct {
	const char *name, *sql;
} stmts[] = {
    [ST_CHAINS] = {"sbxcat_chains",
		   "INSERT INTO audit_chains (session_key, tenant, head, "
		   "nrows, swept_hash, swept_rows) SELECT s, t, "
		   "decode(repeat('00', 32), 'hex'), 0, decode(repeat('00', "
		   "32), 'hex'), 0 FROM unnest($1::text[], $2::text[]) AS "
		   "v(s, t) ORDER BY s COLLATE \"C\" ON CONFLICT DO NOTHING"},
    /* A statement of its own after the insert: in READ COMMITTED it
     * sees a chain another writer made meanwhile, and waits for its
     * lock. */
    [ST_LOCK] = {"sbxcat_lock",
		 "SELECT session_key, head FROM audit_chains WHERE "
		 "session_key = ANY($1::text[]) "
		 "ORDER BY session_key COLLATE \"C\" FOR UPDATE"},
    /*
     * After the lock: a replay of these rows by another process that
     * committed before it is seen.  The key is (id, created_at) and the
     * table is partitioned by day: the ids are asked a day at a time
     * ($3: each day's ids, an array literal each, between the day's first
     * and last time), so each day's look-up is pruned to its partition
     * when it runs and walks that partition's key index alone; asked of
     * the whole table, every id was looked for in every partition (with a
     * spool over four days, 80% of a flush's time).
     */
    [ST_PRESENT] = {"sbxcat_present",
		    "SELECT x.id, (extract(epoch FROM x.created_at) * "
		    "1000000)::bigint FROM unnest($1::timestamptz[], "
		    "$2::timestamptz[], $3::text[]) AS d(lo, hi, ids) CROSS "
		    "JOIN LATERAL (SELECT o.id, o.created_at FROM "
		    "sandbox_operations o WHERE o.created_at >= d.lo AND "
		    "o.created_at <= d.hi AND o.id = ANY(d.ids::uuid[])) x"},
    [ST_AGENTS] = {"sbxcat_agents",
		   "INSERT INTO agents (id) SELECT i FROM unnest($1::text[]) "
		   "AS v(i) ORDER BY i COLLATE \"C\" ON CONFLICT DO NOTHING"},
    [ST_RUNS] = {"sbxcat_runs",
		 "INSERT INTO runs (id, agent_id) SELECT r, a FROM unnest("
		 "$1::text[], $2::text[]) AS v(r, a) ORDER BY r COLLATE \"C\" "
		 "ON CONFLICT DO NOTHING"},
    [ST_HEADS] = {"sbxcat_heads",
		  "UPDATE audit_chains c SET head = v.h, head_seq = o.seq, "
		  "nrows = c.nrows + v.n FROM unnest($1::text[], "
		  "$2::bytea[], $3::bigint[], $4::uuid[], $5::timestamptz[]) "
		  "AS v(s, h, n, l, t) JOIN sandbox_operations o ON o.id = "
		  "v.l AND o.created_at = v.t WHERE c.session_key = v.s"},
};

/* Statement name (its text sql), prepared first unless *word has bit,
 * then run with params on p. */
static void pipe_named(struct auditdb *db, struct pipe *p, const char *name,
		       const char *sql, uint64_t *word, uint64_t bit, int n,
		       const char *const *params, ExecStatusType want,
		       PGresult **keep)
{
	if (p->n + 2 > PIPE_MAX)
		die_bug("auditdb: more than %d statements in a pipeline",
			PIPE_MAX);
	if (p->send_failed)
		return;
	if (!(*word & bit)) {
		if (!sym_PQsendPrepare(db->conn, name, sql, n, NULL)) {
			p->send_failed = true;
			return;
		}
		pipe_add(p, PGRES_COMMAND_OK, NULL, word, bit);
	}
	if (!sym_PQsendQueryPrepared(db->conn, name, n, params, NULL, NULL,
				     0)) {
		p->send_failed = true;
		return;
	}
	pipe_add(p, want, keep, NULL, 0);
}

static void pipe_stmt(struct auditdb *db, struct pipe *p, enum stmt st, int n,
		      const char *const *params, ExecStatusType want,
		      PGresult **keep)
{
	pipe_named(db, p, stmts[st].name, stmts[st].sql, &db->prepared,
		   UINT64_C(1) << st, n, params, want, keep);
}

/* The results kept of a pipeline that failed, cleared; p emptied. */
static void pipe_drop(struct pipe *p)
{
	for (int k = 0; k < p->n; k++)
		if (p->keep[k] && *p->keep[k]) {
			sym_PQclear(*p->keep[k]);
			*p->keep[k] = NULL;
		}
	p->n = 0;
}

/*
 * The sync, then the results of what p sent, in order: 0 when each had
 * its status (results kept where asked), else -1 with the first failure
 * (the statements after it are skipped by the server; a transaction open
 * is left aborted, for the caller's ROLLBACK).  Every result is read up
 * to the sync, so the connection can leave pipeline mode, unless it was
 * lost.  p is empty again after.
 */
static int pipe_sync(struct auditdb *db, struct pipe *p, struct sbx_error **err)
{
	int rc = 0;
	PGresult *res;

	if (!sym_PQpipelineSync(db->conn)) {
		p->n = 0;
		return pq_fail(db, err, "database");
	}
	if (p->send_failed)
		rc = pq_fail(db, err, "database");
	for (int i = 0; i < p->n; i++) {
		res = sym_PQgetResult(db->conn);
		if (!res) {
			/* Nothing where a result must be: the connection
			 * went; it is not used again (auditdb_reusable). */
			if (rc == 0)
				rc = pq_fail(db, err, "database");
			pipe_drop(p);
			return -1;
		}
		if (sym_PQresultStatus(res) != p->want[i]) {
			if (rc == 0)
				rc = res_fail(res, err, "database");
			else
				sym_PQclear(res);
		} else if (p->keep[i]) {
			*p->keep[i] = res;
		} else {
			if (p->mark[i])
				*p->mark[i] |= p->bit[i];
			sym_PQclear(res);
		}
		/* Each statement's results end with a NULL. */
		while ((res = sym_PQgetResult(db->conn)) != NULL)
			sym_PQclear(res);
	}
	res = sym_PQgetResult(db->conn);
	if (!res || sym_PQresultStatus(res) != PGRES_PIPELINE_SYNC) {
		if (rc == 0)
			rc = res ? res_fail(res, err, "database")
				 : pq_fail(db, err, "database");
		else if (res)
			sym_PQclear(res);
	} else {
		sym_PQclear(res);
	}
	if (rc < 0)
		pipe_drop(p);
	p->n = 0;
	return rc;
}

/*
 * The rows not skipped and the chains' heads, in one statement sent on p:
 * a multi-row INSERT ... RETURNING (each row's seq) in a WITH, and the
 * heads' UPDATE joined to it (a statement fewer, and no look-up of the
 * last rows by id).  Its SQL and parameters are built in sql, f and v,
 * the caller's, freed after; heads are heads_arrays' four literals.
 */
static void insert_params(struct auditdb *db, struct pipe *p, struct ins *in,
			  const struct strbuf heads[4], struct strbuf *sql,
			  struct fields *f, const char **v)
{
	size_t rows = 0;
	char name[32];
	int np = 0;

	strbuf_reset(sql);
	strbuf_addstr(sql, "WITH o AS (INSERT INTO sandbox_operations (");
	insert_columns(sql);
	strbuf_addstr(sql, ") VALUES ");
	for (size_t i = 0; i < in->n; i++) {
		if (in->skip[i])
			continue;
		row_fields(&in->rows[i], in->hash[i], &f[i]);
		strbuf_addstr(sql, np ? ",(" : "(");
		for (int c = 0; c < f[i].n; c++) {
			v[np] = f[i].v[c];
			strbuf_addf(sql, "%s$%d", c ? "," : "", ++np);
		}
		strbuf_addch(sql, ')');
		rows++;
	}
	strbuf_addf(sql,
		    " RETURNING id, seq) UPDATE audit_chains c SET head = v.h, "
		    "head_seq = o.seq, nrows = c.nrows + v.n FROM unnest("
		    "$%d::text[], $%d::bytea[], $%d::bigint[], $%d::uuid[]) "
		    "AS v(s, h, n, l) JOIN o ON o.id = v.l WHERE "
		    "c.session_key = v.s",
		    np + 1, np + 2, np + 3, np + 4);
	for (int k = 0; k < 4; k++)
		v[np++] = heads[k].buf;
	/* A statement per row count: 1 row for a writer alone, a few for
	 * a writer under load. */
	snprintf(name, sizeof(name), "sbxcat_write_%zu", rows);
	pipe_named(db, p, name, sql->buf, &db->prepared_rows,
		   UINT64_C(1) << (rows - 1), np, v, PGRES_COMMAND_OK, NULL);
}

static int schema_check_at(struct auditdb *db, int least,
			   struct sbx_error **err)
{
	int have, known;

	if (db->schema >= least)
		return 0;
	if (auditdb_schema_version(db, &have, &known, err) < 0)
		return -1;
	if (have < least) {
		sbx_error_set(
		    err, SBX_E_UNAVAILABLE, 0,
		    "the audit schema is at version %d, sbxcat needs %d", have,
		    known);
		sbx_error_reason(*err, auditdb_schema_old);
		return -1;
	}
	return 0;
}

static int schema_check(struct auditdb *db, struct sbx_error **err)
{
	return schema_check_at(db, auditdb_nmigrations, err);
}

/* The heads read under the chains' locks into in->chains. */
static int read_heads(struct ins *in, PGresult *res, struct sbx_error **err)
{
	for (int r = 0; r < sym_PQntuples(res); r++) {
		struct chain *ch = find_chain(in, sym_PQgetvalue(res, r, 0));
		if (!ch || unhex32(sym_PQgetvalue(res, r, 1), ch->head) < 0)
			return sbx_error_set(
			    err, SBX_E_UNAVAILABLE, 0,
			    "database: audit_chains holds a bad head");
	}
	return 0;
}

/* The keys already in the table (a replay): their rows skipped. */
static void read_present(struct ins *in, PGresult *res)
{
	for (int r = 0; r < sym_PQntuples(res); r++) {
		const char *id = sym_PQgetvalue(res, r, 0);
		long long us = strtoll(sym_PQgetvalue(res, r, 1), NULL, 10);
		/* The rows with that id: find the first by id alone. */
		size_t lo = 0, hi = in->n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (strcasecmp(in->byid[mid]->id, id) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < in->n && !strcasecmp(in->byid[lo]->id, id); lo++)
			if (in->byid[lo]->created_us == us)
				in->skip[in->byid[lo] - in->rows] = true;
	}
}

/* Row i (not skipped) hashed onto its chain's head: rows are hashed in
 * the order given. */
static void chain_row(struct ins *in, size_t i)
{
	struct chain *ch = find_chain(in, in->rows[i].session_key);

	audit_chain_hash(ch->head, &in->rows[i], row_version(&in->rows[i]),
			 in->hash[i]);
	memcpy(ch->head, in->hash[i], 32);
	ch->added++;
	ch->last_id = in->rows[i].id;
	ch->last_us = in->rows[i].created_us;
}

/* The rows to insert and to skip, counted. */
static void count_rows(struct ins *in, size_t *inserted, size_t *skipped)
{
	for (size_t i = 0; i < in->n; i++)
		(*(in->skip[i] ? skipped : inserted))++;
}

/* The chains' new heads, counts, last rows and their times, as five
 * array literals. */
static void heads_arrays(struct ins *in, struct strbuf sb[5])
{
	for (int k = 0; k < 5; k++)
		array_start(&sb[k]);
	for (size_t i = 0; i < in->nchains; i++) {
		struct chain *ch = &in->chains[i];
		char h[2 + 64 + 1] = "\\x", num[24], t[32];
		if (!ch->added)
			continue;
		hex_encode(h + 2, ch->head, 32);
		snprintf(num, sizeof(num), "%lld", ch->added);
		array_add(&sb[0], ch->session);
		array_add(&sb[1], h);
		array_add(&sb[2], num);
		array_add(&sb[3], ch->last_id);
		audit_time_format(t, ch->last_us);
		array_add(&sb[4], t);
	}
	for (int k = 0; k < 5; k++)
		array_end(&sb[k]);
}

static int cmp_created(const void *a, const void *b)
{
	const struct audit_row *x = *(const struct audit_row *const *)a;
	const struct audit_row *y = *(const struct audit_row *const *)b;

	if (x->created_us != y->created_us)
		return x->created_us < y->created_us ? -1 : 1;
	return 0;
}

/*
 * ST_PRESENT's parameters: the rows grouped by UTC day (the partitions'),
 * each day's first and last time, and its ids as an array literal.
 */
#define DAY_US (86400LL * 1000000)

static void present_arrays(struct ins *in, struct strbuf sb[3])
{
	const struct audit_row **by = xcalloc(in->n, sizeof(*by));
	struct strbuf ids = STRBUF_INIT;
	char t[32];
	size_t i = 0;

	for (size_t k = 0; k < in->n; k++)
		by[k] = in->byid[k];
	qsort(by, in->n, sizeof(*by), cmp_created);
	for (int k = 0; k < 3; k++)
		array_start(&sb[k]);
	while (i < in->n) {
		long long day = by[i]->created_us / DAY_US;
		size_t j = i;

		strbuf_reset(&ids);
		strbuf_addch(&ids, '{');
		for (; j < in->n && by[j]->created_us / DAY_US == day; j++) {
			if (j > i)
				strbuf_addch(&ids, ',');
			strbuf_addstr(&ids, by[j]->id);
		}
		strbuf_addch(&ids, '}');
		audit_time_format(t, by[i]->created_us);
		array_add(&sb[0], t);
		audit_time_format(t, by[j - 1]->created_us);
		array_add(&sb[1], t);
		array_add(&sb[2], ids.buf);
		i = j;
	}
	for (int k = 0; k < 3; k++)
		array_end(&sb[k]);
	strbuf_release(&ids);
	free(by);
}

/*
 * The transaction, in pipeline mode, in two round trips:
 *  1. BEGIN; the chains created when missing; locked in session order and
 *     their heads read; the ids already present (a replay) read;
 *  2. (the hashes made here, on the heads read) the agents and runs; the
 *     rows; the heads; COMMIT.
 * Over COPY_OVER rows the rows go through COPY, which pipeline mode does
 * not allow: two more round trips, for a group that large.
 */
static int insert_tx(struct auditdb *db, struct ins *in, size_t *inserted,
		     size_t *skipped, struct sbx_error **err)
{
	struct strbuf a[5] = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT,
			      STRBUF_INIT, STRBUF_INIT},
		      ag = STRBUF_INIT, ru = STRBUF_INIT, ra = STRBUF_INIT,
		      sql = STRBUF_INIT;
	struct fields *f = NULL;
	const char **v = NULL;
	const char *p[5];
	PGresult *heads = NULL, *present = NULL;
	struct pipe pp = {0};
	bool copy;
	int rc = -1;

	/* 1: the chains, then the ids. */
	array_start(&a[0]);
	array_start(&a[1]);
	for (size_t i = 0; i < in->nchains; i++) {
		array_add(&a[0], in->chains[i].session);
		array_add(&a[1], in->chains[i].tenant);
	}
	array_end(&a[0]);
	array_end(&a[1]);
	p[0] = a[0].buf;
	p[1] = a[1].buf;
	pipe_send(db, &pp, "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL);
	/*
	 * A replay's look-up and heads, planned once: their generic plans
	 * prune the partitions as they run, while a plan made for each
	 * call's values is ~30 ms of planning over every partition and its
	 * indexes, as long as the look-up itself (measured on 13 partitions
	 * of 17 indexes).
	 */
	if (!in->fresh)
		pipe_send(db, &pp,
			  "SET LOCAL plan_cache_mode = force_generic_plan", 0,
			  NULL, PGRES_COMMAND_OK, NULL);
	pipe_stmt(db, &pp, ST_CHAINS, 2, p, PGRES_COMMAND_OK, NULL);
	pipe_stmt(db, &pp, ST_LOCK, 1, p, PGRES_TUPLES_OK, &heads);
	/* Fresh rows (UUIDs made now) cannot be there already: the look-up
	 * is a replay's, and on a table the planner has no statistics for
	 * yet it is a scan of the whole table. */
	if (!in->fresh && !in->hopeful) {
		present_arrays(in, &a[2]);
		for (int k = 0; k < 3; k++)
			p[k] = a[2 + k].buf;
		pipe_stmt(db, &pp, ST_PRESENT, 3, p, PGRES_TUPLES_OK, &present);
	}
	if (pipe_sync(db, &pp, err) < 0 || read_heads(in, heads, err) < 0)
		goto out;
	if (present)
		read_present(in, present);
	count_rows(in, inserted, skipped);

	/* 2: what the rows need, the rows, the heads, the commit. */
	copy = *inserted > COPY_OVER;
	if (*inserted) {
		distinct(in->rows, in->n, offsetof(struct audit_row, agent), 0,
			 &ag, NULL);
		distinct(in->rows, in->n, offsetof(struct audit_row, run),
			 offsetof(struct audit_row, agent), &ru, &ra);
		p[0] = ag.buf;
		if (strcmp(ag.buf, "{}"))
			pipe_stmt(db, &pp, ST_AGENTS, 1, p, PGRES_COMMAND_OK,
				  NULL);
		p[0] = ru.buf;
		p[1] = ra.buf;
		if (strcmp(ru.buf, "{}"))
			pipe_stmt(db, &pp, ST_RUNS, 2, p, PGRES_COMMAND_OK,
				  NULL);
		if (copy) {
			if (pipe_sync(db, &pp, err) < 0)
				goto out;
			if (!sym_PQexitPipelineMode(db->conn)) {
				pq_fail(db, err, "database");
				goto out;
			}
			rc = insert_copy(db, in, err);
			if (!sym_PQenterPipelineMode(db->conn) && rc == 0)
				rc = pq_fail(db, err, "database");
			if (rc < 0)
				goto out;
			rc = -1;
		}
		for (size_t i = 0; i < in->n && !copy; i++)
			if (!in->skip[i])
				chain_row(in, i);
		heads_arrays(in, a);
		if (copy) {
			for (int k = 0; k < 5; k++)
				p[k] = a[k].buf;
			pipe_stmt(db, &pp, ST_HEADS, 5, p, PGRES_COMMAND_OK,
				  NULL);
		} else {
			f = xcalloc(in->n, sizeof(*f));
			v = xcalloc(in->n * INSERT_MAX + 4, sizeof(*v));
			insert_params(db, &pp, in, a, &sql, f, v);
		}
	}
	pipe_send(db, &pp, "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL);
	rc = pipe_sync(db, &pp, err);
out:
	if (heads)
		sym_PQclear(heads);
	if (present)
		sym_PQclear(present);
	for (int k = 0; k < 5; k++)
		strbuf_release(&a[k]);
	strbuf_release(&ag);
	strbuf_release(&ru);
	strbuf_release(&ra);
	strbuf_release(&sql);
	free(f);
	free(v);
	return rc;
}

static int insert(struct auditdb *db, const struct audit_row *rows, size_t n,
		  bool fresh, size_t *inserted, size_t *skipped,
		  struct sbx_error **err)
{
	struct ins in = {.rows = rows, .n = n, .fresh = fresh};
	bool *keep = NULL;
	int rc;

	*inserted = *skipped = 0;
	if (!n)
		return 0;
	if (schema_check_at(db, AUDITDB_SCHEMA_COMPAT, err) < 0)
		return -1;
	in.byid = xcalloc(n, sizeof(*in.byid));
	in.skip = xcalloc(n, sizeof(*in.skip));
	in.hash = xcalloc(n, sizeof(*in.hash));
	in.chains = xcalloc(n, sizeof(*in.chains));
	for (size_t i = 0; i < n; i++) {
		in.byid[i] = &rows[i];
		in.chains[i].session = rows[i].session_key;
		in.chains[i].tenant = rows[i].tenant;
	}
	/* A row repeated within the batch (its key, id and time) goes in
	 * once. */
	qsort(in.byid, n, sizeof(*in.byid), cmp_rowid);
	for (size_t i = 1; i < n; i++)
		if (!strcasecmp(in.byid[i]->id, in.byid[i - 1]->id) &&
		    in.byid[i]->created_us == in.byid[i - 1]->created_us)
			in.skip[in.byid[i] - rows] = true;
	/* Distinct sessions, the tenant of each one's first row. */
	for (size_t i = 0; i < n; i++)
		in.chains[i].last_id = (const char *)(uintptr_t)i;
	qsort(in.chains, n, sizeof(*in.chains), cmp_session);
	for (size_t i = 0; i < n; i++) {
		if (in.nchains && !strcmp(in.chains[in.nchains - 1].session,
					  in.chains[i].session)) {
			if ((uintptr_t)in.chains[i].last_id <
			    (uintptr_t)in.chains[in.nchains - 1].last_id) {
				in.chains[in.nchains - 1].tenant =
				    in.chains[i].tenant;
				in.chains[in.nchains - 1].last_id =
				    in.chains[i].last_id;
			}
			continue;
		}
		in.chains[in.nchains++] = in.chains[i];
	}
	for (size_t i = 0; i < in.nchains; i++)
		in.chains[i].last_id = NULL;

	/*
	 * A replay's batch large enough for COPY is first sent without
	 * looking its keys up: the look-up was a tenth of a flush's time in
	 * the server, and a row already there (a replay cut short and run
	 * again) fails the COPY on the key, the transaction rolls back, and
	 * the batch is sent again with it.  A COPY that went in had no row
	 * there: the key is unique, and the chains' locks, held from before
	 * the COPY, keep another replay of the same session's rows out until
	 * the commit.
	 */
	in.hopeful = !fresh && n > COPY_OVER;
	if (in.hopeful) {
		keep = xmalloc(n * sizeof(*keep));
		memcpy(keep, in.skip, n * sizeof(*keep));
	}
	for (;;) {
		if (!sym_PQenterPipelineMode(db->conn)) {
			rc = pq_fail(db, err, "database");
			break;
		}
		rc = insert_tx(db, &in, inserted, skipped, err);
		/* Fails only with results unread: a connection lost, never
		 * used again (auditdb_reusable). */
		sym_PQexitPipelineMode(db->conn);
		if (rc == 0)
			break;
		rollback(db);
		*inserted = *skipped = 0;
		if (!in.present)
			break;
		/* Again, looking the keys up, from where it started. */
		sbx_error_free(err);
		in.hopeful = in.present = false;
		memcpy(in.skip, keep, n * sizeof(*in.skip));
		for (size_t i = 0; i < in.nchains; i++) {
			in.chains[i].added = 0;
			in.chains[i].last_id = NULL;
		}
	}
	free(keep);
	free(in.byid);
	free(in.skip);
	free(in.hash);
	free(in.chains);
	return rc;
}

int auditdb_insert(struct auditdb *db, const struct audit_row *rows, size_t n,
		   size_t *inserted, size_t *skipped, struct sbx_error **err)
{
	return insert(db, rows, n, false, inserted, skipped, err);
}

int auditdb_insert_fresh(struct auditdb *db, const struct audit_row *rows,
			 size_t n, size_t *inserted, struct sbx_error **err)
{
	size_t skipped;

	return insert(db, rows, n, true, inserted, &skipped, err);
}

/* --- verifying, heads ---------------------------------------------- */

/*
 * " WHERE session_key = $1" (or its wire id) or tenant, for the chains'
 * query.  A tenant's
 * chains are those holding rows of that tenant, not those whose first row
 * was: a chain's tenant column says who wrote its first row, and a
 * refused request of another tenant once could (docs/audit.md).
 */
static const char *chain_where(const char *session, const char *tenant,
			       const char **param)
{
	*param = session ? session : tenant;
	/* A session by sbxcat's key or by the wire's id (the rows' wire_id,
	 * indexed). */
	return session	? " WHERE c.session_key = $1 OR c.session_key IN "
			  "(SELECT o.session_key FROM sandbox_operations o "
			  "WHERE o.wire_id = $1)"
	       : tenant ? " WHERE c.session_key IN (SELECT o.session_key "
			  "FROM sandbox_operations o WHERE o.tenant = $1)"
			: "";
}

static void add_bad(json_t *bad, const char *session, long long seq,
		    const char *id, const char *why)
{
	json_array_append_new(
	    bad, xjson_pack("{s:o,s:I,s:o,s:s}", "session", xjson_text(session),
			    "seq", (json_int_t)seq, "id",
			    id ? json_string(id) : json_null(), "why", why));
}

struct vchain {
	const char *session;
	unsigned char prev[32], head[32];
	unsigned char prev_next[32]; /* the hash of the row just read */
	long long head_seq; /* -1: NULL */
	long long nrows;
};

/*
 * The chain reader's statement and where its result holds each column,
 * by name: the table's columns (audit_column_select), seq, the hash and
 * its encoding's version.  The positions are looked up once, in the
 * first row (a statement's rows all have its shape).
 */
struct vreader {
	char *sql;
	int *col; /* per audit_columns[i]; -1 until looked up */
	int seq, hash, version;
};

static void vreader_init(struct vreader *vr)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, "SELECT seq");
	for (size_t i = 0; i < audit_ncolumns; i++) {
		strbuf_addstr(&sb, ", ");
		audit_column_select(&audit_columns[i], &sb);
	}
	strbuf_addstr(&sb, ", hash, hash_version FROM sandbox_operations "
			   "WHERE session_key = $1 ORDER BY seq");
	vr->sql = strbuf_detach(&sb, NULL);
	vr->col = xcalloc(audit_ncolumns, sizeof(*vr->col));
	vr->seq = vr->hash = vr->version = -1;
}

static void vreader_release(struct vreader *vr)
{
	free(vr->sql);
	free(vr->col);
}

/* The columns' positions in res, by name; -1 when one is missing. */
static int vreader_find(struct vreader *vr, const PGresult *res,
			struct sbx_error **err)
{
	if (vr->seq >= 0)
		return 0;
	for (size_t i = 0; i < audit_ncolumns; i++) {
		vr->col[i] = sym_PQfnumber(res, audit_columns[i].key);
		if (vr->col[i] < 0)
			return sbx_error_set(err, SBX_E_INTERNAL, 0,
					     "database: the chain's rows have "
					     "no column '%s'",
					     audit_columns[i].key);
	}
	vr->hash = sym_PQfnumber(res, "hash");
	vr->version = sym_PQfnumber(res, "hash_version");
	vr->seq = sym_PQfnumber(res, "seq");
	if (vr->hash < 0 || vr->version < 0 || vr->seq < 0)
		return sbx_error_set(err, SBX_E_INTERNAL, 0,
				     "database: the chain's rows have no seq, "
				     "hash or hash_version");
	return 0;
}

/* The value of res's only row at column k; NULL for SQL NULL. */
static const char *value(const PGresult *res, int k)
{
	return sym_PQgetisnull(res, 0, k) ? NULL : sym_PQgetvalue(res, 0, k);
}

/*
 * One row of the chain: r read from res (its strings borrowed from res),
 * its hash recomputed from vc->prev with the encoding of its own version.
 * NULL when it follows; else why not.
 */
static const char *verify_row(const struct vreader *vr, const PGresult *res,
			      struct vchain *vc, struct audit_row *r, char *why,
			      size_t whylen)
{
	unsigned char want[32], stored[32];
	bool readable = true;
	int version = atoi(sym_PQgetvalue(res, 0, vr->version));

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < audit_ncolumns; i++)
		if (audit_column_read(&audit_columns[i], value(res, vr->col[i]),
				      r) < 0)
			readable = false;
	if (unhex32(sym_PQgetvalue(res, 0, vr->hash), stored) < 0)
		readable = false;
	else
		memcpy(vc->prev_next, stored, 32);
	if (readable && audit_chain_hash(vc->prev, r, version, want) < 0) {
		snprintf(
		    why, whylen,
		    "hashed with version %d of the chain's encoding, which "
		    "this sbxcat does not know: not verified",
		    version);
		return why;
	}
	if (!readable || memcmp(want, stored, 32))
		return "hash does not match: this row was changed, or rows "
		       "before it were deleted or inserted";
	return NULL;
}

/* Stream the chain's rows in seq order (single-row mode), recomputing
 * each hash; the first that does not match goes to bad. */
static int verify_chain(struct auditdb *db, struct vreader *vr,
			struct vchain *vc, json_t *bad,
			unsigned long long *nrows, struct sbx_error **err)
{
	const char *p[1] = {vc->session};
	PGresult *res;
	bool found = false, any = false;
	long long last_seq = -1, counted = 0;
	int rc = 0;

	if (!sym_PQsendQueryParams(db->conn, vr->sql, 1, NULL, p, NULL, NULL,
				   0) ||
	    !sym_PQsetSingleRowMode(db->conn))
		return pq_fail(db, err, "database");
	while ((res = sym_PQgetResult(db->conn)) != NULL) {
		ExecStatusType st = sym_PQresultStatus(res);
		struct audit_row r;
		char why[160];
		const char *bad_why;
		long long seq;

		if (st == PGRES_TUPLES_OK || rc < 0) {
			sym_PQclear(res);
			continue;
		}
		if (st != PGRES_SINGLE_TUPLE) {
			res_fail(res, err, "database");
			rc = -1;
			continue;
		}
		(*nrows)++;
		counted++;
		if (found) {
			sym_PQclear(res);
			continue;
		}
		if (vreader_find(vr, res, err) < 0) {
			rc = -1;
			sym_PQclear(res);
			continue;
		}
		seq = atoll(sym_PQgetvalue(res, 0, vr->seq));
		bad_why = verify_row(vr, res, vc, &r, why, sizeof(why));
		if (bad_why) {
			add_bad(bad, vc->session, seq, r.id[0] ? r.id : NULL,
				bad_why);
			found = true;
		}
		memcpy(vc->prev, vc->prev_next, 32);
		last_seq = seq;
		any = true;
		sym_PQclear(res);
	}
	if (rc < 0 || found)
		return rc;
	if (memcmp(vc->prev, vc->head, 32) ||
	    (any && last_seq != vc->head_seq)) {
		char why[160];
		if (any && last_seq > vc->head_seq)
			snprintf(why, sizeof(why),
				 "rows after the chain's head (row %lld): "
				 "added around sbxcat",
				 vc->head_seq);
		else
			snprintf(why, sizeof(why),
				 "the chain's head is row %lld, which is "
				 "missing: rows deleted at the end",
				 vc->head_seq);
		add_bad(bad, vc->session, vc->head_seq, NULL, why);
		return 0;
	}
	/* Rows gone from the front, their hash moved into swept_hash by
	 * hand, leave the links whole: the count the chain keeps (and `audit
	 * head` shows) does not follow. */
	if (counted != vc->nrows) {
		char why[160];
		snprintf(
		    why, sizeof(why),
		    "the chain holds %lld rows but says %lld: rows deleted "
		    "or inserted around sbxcat",
		    counted, vc->nrows);
		add_bad(bad, vc->session, -1, NULL, why);
	}
	return 0;
}

/*
 * Rows whose session has no chain: inserted by hand, around sbxcat (a
 * chain row is made with the first row of every session).  Each is bad;
 * the first 100 are named.
 */
static int verify_orphans(struct auditdb *db, const char *session,
			  const char *tenant, json_t *bad,
			  struct sbx_error **err)
{
	const char *param = session ? session : tenant;
	PGresult *res = NULL;
	char *sql = xasprintf(
	    "SELECT o.session_key, o.seq, o.id FROM sandbox_operations o "
	    "WHERE NOT EXISTS (SELECT 1 FROM audit_chains c "
	    "WHERE c.session_key = o.session_key)%s ORDER BY o.seq LIMIT 100",
	    session  ? " AND (o.session_key = $1 OR o.wire_id = $1)"
	    : tenant ? " AND o.tenant = $1"
		     : "");
	int rc =
	    run(db, sql, param ? 1 : 0, &param, PGRES_TUPLES_OK, &res, err);

	free(sql);
	if (rc < 0)
		return -1;
	for (int i = 0; i < sym_PQntuples(res); i++)
		add_bad(bad, sym_PQgetvalue(res, i, 0),
			atoll(sym_PQgetvalue(res, i, 1)),
			sym_PQgetvalue(res, i, 2),
			"the row belongs to no chain: inserted around sbxcat");
	sym_PQclear(res);
	return 0;
}

int auditdb_verify(struct auditdb *db, const char *session, const char *tenant,
		   json_t **report, struct sbx_error **err)
{
	const char *param, *where = chain_where(session, tenant, &param);
	unsigned long long nrows = 0;
	struct vreader vr;
	PGresult *res = NULL;
	char *sql;
	int rc;

	*report = NULL;
	if (schema_check_at(db, AUDITDB_SCHEMA_COMPAT, err) < 0 ||
	    cmd(db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err) < 0)
		return -1;
	sql =
	    xasprintf("SELECT c.session_key, c.head, c.head_seq, c.swept_hash, "
		      "c.nrows FROM audit_chains c%s "
		      "ORDER BY c.session_key COLLATE \"C\"",
		      where);
	rc = cmd(db, "SET LOCAL statement_timeout = 0", err);
	if (rc == 0)
		rc = run(db, sql, *where ? 1 : 0, &param, PGRES_TUPLES_OK, &res,
			 err);
	free(sql);
	json_t *bad = json_array();
	vreader_init(&vr);
	int nchains = rc == 0 ? sym_PQntuples(res) : 0;
	for (int i = 0; rc == 0 && i < nchains; i++) {
		struct vchain vc = {.session = sym_PQgetvalue(res, i, 0)};
		vc.head_seq = sym_PQgetisnull(res, i, 2)
				  ? -1
				  : atoll(sym_PQgetvalue(res, i, 2));
		vc.nrows = atoll(sym_PQgetvalue(res, i, 4));
		if (unhex32(sym_PQgetvalue(res, i, 1), vc.head) < 0 ||
		    unhex32(sym_PQgetvalue(res, i, 3), vc.prev) < 0) {
			add_bad(
			    bad, vc.session, vc.head_seq, NULL,
			    "the chain's head or swept hash is not 32 bytes");
			continue;
		}
		rc = verify_chain(db, &vr, &vc, bad, &nrows, err);
	}
	vreader_release(&vr);
	if (res)
		sym_PQclear(res);
	if (rc == 0)
		rc = verify_orphans(db, session, tenant, bad, err);
	if (rc == 0 && (session || tenant) && nchains == 0 &&
	    json_array_size(bad) == 0)
		add_bad(bad, session ? session : "", -1, NULL,
			session
			    ? "no chain: no row of this session is recorded"
			    : "no chain: no row of this tenant is recorded");
	if (rc < 0) {
		rollback(db);
		json_decref(bad);
		return -1;
	}
	if (cmd(db, "COMMIT", err) < 0) {
		json_decref(bad);
		return -1;
	}
	rc = json_array_size(bad) ? 1 : 0;
	*report = xjson_pack("{s:i,s:I,s:o}", "chains", nchains, "rows",
			     (json_int_t)nrows, "bad", bad);
	return rc;
}

int auditdb_heads(struct auditdb *db, const char *session, const char *tenant,
		  json_t **heads, struct sbx_error **err)
{
	const char *param, *where = chain_where(session, tenant, &param);
	PGresult *res;
	char *sql;
	int rc;

	*heads = NULL;
	if (schema_check_at(db, AUDITDB_SCHEMA_COMPAT, err) < 0)
		return -1;
	sql = xasprintf("SELECT c.session_key, c.tenant, c.nrows, c.head_seq, "
			"encode(c.head, 'hex'), c.swept_rows, "
			"encode(c.swept_hash, 'hex') FROM audit_chains c%s "
			"ORDER BY c.session_key COLLATE \"C\"",
			where);
	rc = run(db, sql, *where ? 1 : 0, &param, PGRES_TUPLES_OK, &res, err);
	free(sql);
	if (rc < 0)
		return -1;
	json_t *a = json_array();
	for (int i = 0; i < sym_PQntuples(res); i++)
		json_array_append_new(
		    a, xjson_pack(
			   "{s:o,s:o,s:I,s:o,s:s,s:I,s:s}", "session",
			   xjson_text(sym_PQgetvalue(res, i, 0)), "tenant",
			   xjson_text(sym_PQgetvalue(res, i, 1)), "rows",
			   (json_int_t)atoll(sym_PQgetvalue(res, i, 2)),
			   "head_seq",
			   sym_PQgetisnull(res, i, 3)
			       ? json_null()
			       : json_integer(atoll(sym_PQgetvalue(res, i, 3))),
			   "head", sym_PQgetvalue(res, i, 4), "swept_rows",
			   (json_int_t)atoll(sym_PQgetvalue(res, i, 5)),
			   "swept_hash", sym_PQgetvalue(res, i, 6)));
	sym_PQclear(res);
	*heads = a;
	return 0;
}

/* --- the retention sweep ------------------------------------------- */

/* One transaction: remove at most batch old rows from the front of
 * session's chain.  *gone the rows removed. */
static int sweep_some(struct auditdb *db, const char *session,
		      const char *cutoff, const char *batch, long long *gone,
		      struct sbx_error **err)
{
	const char *p[4] = {session, cutoff, batch, NULL};
	PGresult *res;
	int k = 0;

	*gone = 0;
	if (cmd(db, "BEGIN", err) < 0)
		return -1;
	if (run(db,
		"SELECT 1 FROM audit_chains WHERE session_key = $1 FOR UPDATE",
		1, p, PGRES_TUPLES_OK, NULL, err) < 0 ||
	    run(db,
		"SELECT seq, hash, created_at < 'epoch'::timestamptz + "
		"$2::bigint * interval '1 microsecond' FROM sandbox_operations "
		"WHERE session_key = $1 ORDER BY seq LIMIT $3::bigint",
		3, p, PGRES_TUPLES_OK, &res, err) < 0)
		goto fail;
	while (k < sym_PQntuples(res) &&
	       !strcmp(sym_PQgetvalue(res, k, 2), "t"))
		k++;
	if (k == 0) {
		sym_PQclear(res);
		return cmd(db, "COMMIT", err);
	}
	char n[24];
	snprintf(n, sizeof(n), "%d", k);
	const char *q[4] = {session, sym_PQgetvalue(res, k - 1, 0),
			    sym_PQgetvalue(res, k - 1, 1), n};
	const char *u[3] = {session, q[2], n};
	if (run(db,
		"DELETE FROM sandbox_operations WHERE session_key = $1 AND "
		"seq <= $2::bigint",
		2, q, PGRES_COMMAND_OK, NULL, err) < 0 ||
	    run(db,
		"UPDATE audit_chains SET swept_hash = $2::bytea, swept_rows = "
		"swept_rows + $3::bigint, nrows = nrows - $3::bigint, swept_at "
		"= "
		"now() WHERE session_key = $1",
		3, u, PGRES_COMMAND_OK, NULL, err) < 0) {
		sym_PQclear(res);
		goto fail;
	}
	sym_PQclear(res);
	*gone = k;
	return cmd(db, "COMMIT", err);
fail:
	rollback(db);
	return -1;
}

/*
 * Run sql with text params in a day's drop: 0 done (res kept in *out when
 * out), 1 the table is gone (42P01: another sweep dropped it), 2 a lock
 * not had within lock_timeout (55P03) or a deadlock that chose this side
 * (40P01), -1 another error.
 */
static int day_run(struct auditdb *db, const char *sql, int n,
		   const char *const *params, ExecStatusType want,
		   PGresult **out, struct sbx_error **err)
{
	PGresult *res =
	    sym_PQexecParams(db->conn, sql, n, NULL, params, NULL, NULL, 0);
	const char *state;

	if (!res)
		return pq_fail(db, err, "database");
	if (sym_PQresultStatus(res) == want) {
		if (out)
			*out = res;
		else
			sym_PQclear(res);
		return 0;
	}
	state = sym_PQresultErrorField(res, PG_DIAG_SQLSTATE);
	if (state && (!strcmp(state, "42P01") || !strcmp(state, "55P03") ||
		      !strcmp(state, "40P01"))) {
		int rc = strcmp(state, "42P01") ? 2 : 1; /* state is res's */

		sym_PQclear(res);
		return rc;
	}
	return res_fail(res, err, "database: dropping a day of the audit");
}

/*
 * One day partition (part, from lo) dropped whole, in one
 * transaction: its rows' chains lose the prefix the day holds, each
 * chain's swept_hash the hash of the day's last row of it.  sweep_days
 * found no row of a later day before the day's last in its chain, when
 * the day's highest seq was premax: a row come into the day since (a
 * seq above premax) could have changed that, and keeps the day.  *gone
 * its rows; *kept 0 dropped, 1 kept because a chain has a row outside
 * the day before the day's last (a replayed row: the drop would cut the
 * chain in its middle; the row-wise sweep takes what it can instead), 2
 * kept because a lock was not had within the timeout or a deadlock chose
 * this side (left to the next sweep), 3 gone already (another sweep
 * dropped it).
 */
static int sweep_day(struct auditdb *db, const char *part, const char *lo,
		     const char *premax, long long *gone, int *kept,
		     struct sbx_error **err)
{
	struct strbuf q = STRBUF_INIT, s = STRBUF_INIT, h = STRBUF_INIT,
		      n = STRBUF_INIT;
	const char *p[3] = {lo, NULL, NULL};
	PGresult *res = NULL;
	long long rows = 0;
	int rc;

	*gone = 0;
	*kept = 0;
	if (cmd(db, "BEGIN", err) < 0)
		return -1;
	/* lock_timeout bounds each lock below: the day's (its writers
	 * wait, readers do not), the chains', the parent's for the detach
	 * (every reader queues behind it, at most that long). */
	rc = day_run(db, "SET LOCAL lock_timeout = '5s'", 0, NULL,
		     PGRES_COMMAND_OK, NULL, err);
	if (rc == 0)
		rc = day_run(db, "SET LOCAL statement_timeout = 0", 0, NULL,
			     PGRES_COMMAND_OK, NULL, err);
	/* SHARE ROW EXCLUSIVE: no row comes into the day or leaves it (an
	 * insert, a row-wise sweep, an agent's SET NULL) until the commit,
	 * and two sweeps of it take turns. */
	strbuf_addf(&q, "LOCK TABLE \"%s\" IN SHARE ROW EXCLUSIVE MODE", part);
	if (rc == 0)
		rc = day_run(db, q.buf, 0, NULL, PGRES_COMMAND_OK, NULL, err);
	/* Per chain: the day's rows, its last seq and that row's hash, and
	 * whether a row of it from an earlier day (one kept, the default
	 * partition: the bound prunes the rest away) comes before it. */
	strbuf_reset(&q);
	strbuf_addf(&q,
		    "SELECT a.s, a.n, x.hash, EXISTS (SELECT 1 FROM "
		    "sandbox_operations o WHERE o.session_key = a.s AND "
		    "o.seq < a.m AND o.created_at < $1::timestamptz), a.m "
		    "FROM (SELECT session_key AS s, count(*) AS n, max(seq) "
		    "AS m FROM \"%s\" GROUP BY session_key) a JOIN \"%s\" x "
		    "ON x.session_key = a.s AND x.seq = a.m ORDER BY a.s "
		    "COLLATE \"C\"",
		    part, part);
	if (rc == 0)
		rc = day_run(db, q.buf, 1, p, PGRES_TUPLES_OK, &res, err);
	if (rc)
		goto out;
	array_start(&s);
	array_start(&h);
	array_start(&n);
	for (int i = 0; i < sym_PQntuples(res); i++) {
		if (!strcmp(sym_PQgetvalue(res, i, 3), "t") ||
		    strtoll(sym_PQgetvalue(res, i, 4), NULL, 10) >
			strtoll(premax, NULL, 10))
			*kept = 1;
		array_add(&s, sym_PQgetvalue(res, i, 0));
		array_add(&n, sym_PQgetvalue(res, i, 1));
		array_add(&h, sym_PQgetvalue(res, i, 2));
		rows += strtoll(sym_PQgetvalue(res, i, 1), NULL, 10);
	}
	array_end(&s);
	array_end(&h);
	array_end(&n);
	sym_PQclear(res);
	if (*kept)
		goto out;
	p[0] = s.buf;
	p[1] = h.buf;
	p[2] = n.buf;
	/* The chains locked in the order writers lock them (insert_tx's
	 * sbxcat_lock), then moved past the day in one statement. */
	if (rows)
		rc = day_run(db,
			     "SELECT 1 FROM audit_chains WHERE session_key = "
			     "ANY($1::text[]) ORDER BY session_key COLLATE "
			     "\"C\" FOR UPDATE",
			     1, p, PGRES_TUPLES_OK, NULL, err);
	if (rows && rc == 0)
		rc = day_run(db,
			     "UPDATE audit_chains c SET swept_hash = v.h, "
			     "swept_rows = c.swept_rows + v.n, nrows = "
			     "c.nrows - v.n, swept_at = now() FROM unnest("
			     "$1::text[], $2::bytea[], $3::bigint[]) AS v(s, "
			     "h, n) WHERE c.session_key = v.s",
			     3, p, PGRES_COMMAND_OK, NULL, err);
	strbuf_reset(&q);
	strbuf_addf(
	    &q, "ALTER TABLE sandbox_operations DETACH PARTITION \"%s\"", part);
	if (rc == 0)
		rc = day_run(db, q.buf, 0, NULL, PGRES_COMMAND_OK, NULL, err);
	strbuf_reset(&q);
	strbuf_addf(&q, "DROP TABLE \"%s\"", part);
	if (rc == 0)
		rc = day_run(db, q.buf, 0, NULL, PGRES_COMMAND_OK, NULL, err);
	if (rc == 0) {
		rc = cmd(db, "COMMIT", err);
		if (rc == 0)
			*gone = rows;
		goto done;
	}
out:
	rollback(db);
	if (rc == 1 || rc == 2)
		*kept = rc == 1 ? 3 : 2;
done:
	strbuf_release(&q);
	strbuf_release(&s);
	strbuf_release(&h);
	strbuf_release(&n);
	return rc < 0 ? -1 : 0;
}

/*
 * Which of the days before hi (the end of the last day to drop) a drop
 * would cut a chain at by what comes after them: per day and chain the
 * lowest and highest seq, and the lowest seq of the chain's rows after
 * the day (a later day's, or from hi on): a row of a later day before the
 * day's last is a replayed row.  One read of the days' rows and one probe
 * of each chain's index per partition from hi on, for every day at once,
 * where asking per day would probe every partition for every chain of
 * every day (n MATERIALIZED: inlined, its probes would run once per day
 * and chain, not per chain).  Rows before a day are asked about by
 * sweep_day itself (a day kept here keeps its rows there).  *res: (day,
 * blocked, the day's highest seq), by day.
 */
static int days_blocked(struct auditdb *db, const char *hi, PGresult **res,
			struct sbx_error **err)
{
	const char *p[1] = {hi};
	int rc = cmd(db, "SET statement_timeout = 0", err);

	if (rc == 0)
		rc = run(
		    db,
		    "WITH a AS (SELECT (created_at AT TIME ZONE 'UTC')::date "
		    "AS d, session_key AS s, min(seq) AS mn, max(seq) AS mx "
		    "FROM sandbox_operations WHERE created_at < "
		    "$1::timestamptz GROUP BY 1, 2), w AS (SELECT d, s, mx, "
		    "min(mn) OVER (PARTITION BY s ORDER BY d DESC ROWS "
		    "BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS later "
		    "FROM a), n AS MATERIALIZED (SELECT x.s, (SELECT "
		    "min(o.seq) FROM "
		    "sandbox_operations o WHERE o.session_key = x.s AND "
		    "o.created_at >= $1::timestamptz) AS nxt FROM (SELECT "
		    "DISTINCT s FROM a) x) SELECT to_char(w.d, 'YYYYMMDD'), "
		    "coalesce(bool_or(w.mx "
		    "> least(w.later, n.nxt)), false), max(w.mx) FROM w JOIN "
		    "n USING (s) GROUP BY w.d ORDER BY w.d",
		    1, p, PGRES_TUPLES_OK, res, err);
	if (rc == 0 && cmd(db, "SET statement_timeout = '30s'", err) < 0) {
		sym_PQclear(*res);
		rc = -1;
	}
	return rc;
}

/*
 * The day partitions wholly before the cutoff, oldest first, each
 * dropped in a transaction of its own (sweep_day) unless days_blocked
 * says it would cut a chain.
 */
static int sweep_days(struct auditdb *db, const char *cutoff,
		      struct auditdb_swept *sw, struct sbx_error **err)
{
	const char *p[1] = {cutoff};
	PGresult *res, *blk;
	int nd, k = 0;

	/* A day's bounds from its name, as sbxcat_audit_day makes it. */
	if (run(db,
		"SELECT c.relname, d::timestamp AT TIME ZONE 'UTC', (d + "
		"1)::timestamp AT TIME ZONE 'UTC', to_char(d, 'YYYYMMDD') "
		"FROM pg_inherits i JOIN "
		"pg_class c ON c.oid = i.inhrelid, LATERAL to_date(right("
		"c.relname, 8), 'YYYYMMDD') AS d WHERE i.inhparent = "
		"'sandbox_operations'::regclass AND c.relname ~ "
		"'^sandbox_operations_[0-9]{8}$' AND (d + 1)::timestamp AT "
		"TIME ZONE 'UTC' <= 'epoch'::timestamptz + $1::bigint * "
		"interval '1 microsecond' ORDER BY d",
		1, p, PGRES_TUPLES_OK, &res, err) < 0)
		return -1;
	nd = sym_PQntuples(res);
	if (!nd) {
		sym_PQclear(res);
		return 0;
	}
	if (days_blocked(db, sym_PQgetvalue(res, nd - 1, 2), &blk, err) < 0) {
		sym_PQclear(res);
		return -1;
	}
	for (int i = 0; i < nd; i++) {
		const char *day = sym_PQgetvalue(res, i, 3), *premax = "0";
		long long gone = 0;
		int kept = 1;

		/* Both by day: blk's days are those with rows. */
		while (k < sym_PQntuples(blk) &&
		       strcmp(sym_PQgetvalue(blk, k, 0), day) < 0)
			k++;
		if (k < sym_PQntuples(blk) &&
		    !strcmp(sym_PQgetvalue(blk, k, 0), day)) {
			if (!strcmp(sym_PQgetvalue(blk, k, 1), "t"))
				premax = NULL;
			else
				premax = sym_PQgetvalue(blk, k, 2);
		}
		if (premax && sweep_day(db, sym_PQgetvalue(res, i, 0),
					sym_PQgetvalue(res, i, 1), premax,
					&gone, &kept, err) < 0) {
			sym_PQclear(blk);
			sym_PQclear(res);
			return -1;
		}
		sw->deleted += (unsigned long long)gone;
		sw->days += kept == 0;
		sw->days_split += kept == 1;
		sw->days_busy += kept == 2;
	}
	sym_PQclear(blk);
	sym_PQclear(res);
	return 0;
}

/*
 * Row by row: the chains with rows older than the cutoff in table (the
 * parent, or only its default partition), each chain's old prefix in
 * transactions of at most nb rows (sweep_some).
 */
static int sweep_rows(struct auditdb *db, const char *table, const char *cutoff,
		      const char *nb, struct auditdb_swept *sw,
		      struct sbx_error **err)
{
	const char *p[1] = {cutoff};
	unsigned long long batch = strtoull(nb, NULL, 10);
	struct strbuf q = STRBUF_INIT;
	PGresult *res;
	int rc;

	/* Finding the chains with old rows reads every old row: no timeout
	 * for that; each batch after is short, and keeps the 30 s. */
	strbuf_addf(&q,
		    "SELECT DISTINCT session_key COLLATE \"C\" AS s FROM %s "
		    "WHERE created_at < 'epoch'::timestamptz + $1::bigint * "
		    "interval '1 microsecond' ORDER BY s",
		    table);
	rc = cmd(db, "SET statement_timeout = 0", err);
	if (rc == 0)
		rc = run(db, q.buf, 1, p, PGRES_TUPLES_OK, &res, err);
	strbuf_release(&q);
	if (rc < 0)
		return -1;
	if (cmd(db, "SET statement_timeout = '30s'", err) < 0) {
		sym_PQclear(res);
		return -1;
	}
	for (int i = 0; i < sym_PQntuples(res); i++) {
		long long gone;
		do {
			if (sweep_some(db, sym_PQgetvalue(res, i, 0), cutoff,
				       nb, &gone, err) < 0) {
				sym_PQclear(res);
				return -1;
			}
			sw->deleted += (unsigned long long)gone;
		} while ((unsigned long long)gone == batch);
	}
	sym_PQclear(res);
	return 0;
}

int auditdb_sweep(struct auditdb *db, long long cutoff_us, size_t batch,
		  struct auditdb_swept *sw, struct sbx_error **err)
{
	char cutoff[24], nb[24];
	const char *p[1] = {cutoff};
	PGresult *res;

	memset(sw, 0, sizeof(*sw));
	if (schema_check(db, err) < 0)
		return -1;
	if (!batch)
		batch = 1;
	snprintf(cutoff, sizeof(cutoff), "%lld", cutoff_us);
	snprintf(nb, sizeof(nb), "%zu", batch);
	/* The default partition's old rows first: they come before a day's
	 * in their chains (a day had no partition when they were written),
	 * and would keep that day from being dropped. */
	if (sweep_rows(db, "sandbox_operations_default", cutoff, nb, sw, err) <
		0 ||
	    sweep_days(db, cutoff, sw, err) < 0)
		return -1;
	/* What is left older than the cutoff (its own day, a day kept) goes
	 * row by row too, so the retention is exact. */
	if (sweep_rows(db, "sandbox_operations", cutoff, nb, sw, err) < 0)
		return -1;
	if (cmd(db, "SET statement_timeout = 0", err) < 0 ||
	    run(db,
		"SELECT count(*) FROM sandbox_operations WHERE created_at < "
		"'epoch'::timestamptz + $1::bigint * interval '1 microsecond'",
		1, p, PGRES_TUPLES_OK, &res, err) < 0)
		return -1;
	sw->held = strtoull(sym_PQgetvalue(res, 0, 0), NULL, 10);
	sym_PQclear(res);
	return cmd(db, "SET statement_timeout = '30s'", err);
}

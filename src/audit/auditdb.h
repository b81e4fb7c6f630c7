/*
 * auditdb.h - the audit's PostgreSQL side: connecting, the schema and its
 * migrations, inserting rows onto their session's hash chain, verifying
 * the chains, their heads, and the retention sweep.  libpq is loaded on
 * first use (pq-dl.h).  Queries for auditors are in auditq.h.
 *
 * The schema is migration 1 in audit-schema.c, described column by column
 * in docs/audit.md ("Schema"): sandbox_operations (one row per operation,
 * its hash), agents, runs, audit_chains (each session's head, row count
 * and what a sweep removed: swept_rows, swept_hash) and schema_migrations.
 *
 * A chain is a session's rows in seq order (the order of insertion).  A
 * row's hash is audit_chain_hash(previous row's hash, row); the first
 * row's previous hash is its chain's swept_hash (32 zero bytes until a
 * sweep removes rows).  Inserting takes the chain's row lock (SELECT ...
 * FOR UPDATE on audit_chains), so concurrent writers of one session queue
 * and the chain is the order rows were inserted in.
 *
 * The rows' columns are audit.h's table (audit_columns): the insert writes
 * each, the chains' reader reads each by name; a row's hash is of the
 * encoding its hash_version names (audit_canonical), which verify uses.
 *
 * Thread rule: a struct auditdb is one connection, used by one thread at
 * a time; connections on different threads share nothing (libpq's own
 * rule, for a thread-safe libpq), and what they do to the same rows is
 * the database's to order (the chain's row lock, the migrations' advisory
 * lock).  Nothing here is static but constants.
 */
#ifndef SBX_AUDITDB_H
#define SBX_AUDITDB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct audit_row;
struct sbx_error;
struct auditdb;

/*
 * Connect to conninfo (audit_config_db's; "" for libpq's own environment)
 * with libpq loaded first; connect_timeout in seconds (the configuration's
 * PGCONNECT_TIMEOUT; NULL or "": 5) unless conninfo sets one;
 * application_name sbxcat; statement_timeout 30 s.  -1 status 3
 * "database unreachable: REASON" (the password never shown), status 3
 * naming libpq5 when libpq is missing.
 */
int auditdb_connect(const char *conninfo, const char *connect_timeout,
		    struct auditdb **db, struct sbx_error **err);
/*
 * The same in two steps: start sends the request and returns at once
 * (the server sets the session up while the caller works; -1 only when
 * libpq is missing); finish waits for it (at most the connect timeout)
 * and makes the same checks, -1 as auditdb_connect says (the caller then
 * closes db).  finish again after success returns 0 at once.
 */
int auditdb_connect_start(const char *conninfo, const char *connect_timeout,
			  struct auditdb **db, struct sbx_error **err);
int auditdb_connect_finish(struct auditdb *db, struct sbx_error **err);
void auditdb_close(struct auditdb *db);

/*
 * Migrations compiled into the binary, numbered from 1.  migrate applies
 * the pending ones in order, each in its own transaction under
 * pg_advisory_xact_lock(AUDITDB_LOCK_MIGRATE) (or, for one with online
 * statements, as its .online says), re-checking under the lock
 * whether another migrator applied it meanwhile; *applied counts what this
 * call applied (0 the second time).  status: an array of {"version",
 * "name", "applied_at" (RFC 3339 or null: pending)}.
 */
#define AUDITDB_LOCK_MIGRATE 0x73627863 /* "sbxc" */
struct auditdb_migration {
	int version; /* 1, 2, ...: auditdb_migrations[i].version == i + 1 */
	const char *name;
	const char *sql; /* statements; no BEGIN/COMMIT (migrate wraps them) */
	/*
	 * NULL, or statements that cannot run in a transaction (CREATE
	 * INDEX CONCURRENTLY: an index built while rows are written), one a
	 * string, NULL-terminated.  Such a migration is applied under the
	 * session's advisory lock, taken by polling (a migrator waiting in
	 * a transaction would hold a snapshot the concurrent build waits
	 * for): sql in its transaction, then each of these on its own with
	 * no statement timeout, then the migration recorded.  Both must be
	 * idempotent (IF NOT EXISTS): a failure part way is finished by the
	 * next migrate, which first drops any index of sandbox_operations
	 * left INVALID by a concurrent build that failed.
	 */
	const char *const *online;
};
extern const struct auditdb_migration auditdb_migrations[]; /* audit-schema.c */
extern const int auditdb_nmigrations;
int auditdb_migrate(struct auditdb *db, int *applied, struct sbx_error **err);
/* The same, up to version to only (0: every one; an older schema kept to
 * test a migration from it); a version this binary does not know is -1
 * status 2. */
int auditdb_migrate_to(struct auditdb *db, int to, int *applied,
		       struct sbx_error **err);
int auditdb_migrate_status(struct auditdb *db, json_t **status,
			   struct sbx_error **err);
/* Latest applied version (0: none), and the latest this binary knows. */
int auditdb_schema_version(struct auditdb *db, int *applied, int *known,
			   struct sbx_error **err);

/*
 * The oldest schema this binary reads, writes and verifies rows in:
 * migration 7 (rows by day) moved the rows, not their columns, so the
 * service's writers and readers go on while `audit migrate` copies the
 * table (the old table's mirror trigger takes new rows to the new one)
 * instead of failing (spooling) for the length of the copy.  What needs
 * the day partitions (auditdb_make_days, auditdb_sweep) needs the latest.
 */
#define AUDITDB_SCHEMA_COMPAT 6

/*
 * The reason (struct sbx_error's) of an error that is the schema older
 * than this sbxcat's migrations (a caller may say how to migrate).
 */
extern const char auditdb_schema_old[];

/*
 * Insert rows[0..n) in one transaction, each onto its session's chain in
 * the order given; a row whose key (id and created_at) is already in the
 * table is skipped (a replay), counted in *skipped.  Agents and runs
 * named are created in agents/runs when missing.  Large n goes through
 * COPY.  A schema older
 * than the binary's is an error (status 3, reason auditdb_schema_old).
 * On error nothing of the call is kept (the transaction rolls back).
 * Two round trips (libpq's pipeline mode: the chains locked and read,
 * then the rows, heads and COMMIT); over 50 rows (COPY) two more.  Its
 * statements are prepared on db the first time (named sbxcat_*: a pooler
 * between sbxcat and the server must keep a connection's prepared
 * statements, as PgBouncer's session mode does).
 */
int auditdb_insert(struct auditdb *db, const struct audit_row *rows, size_t n,
		   size_t *inserted, size_t *skipped, struct sbx_error **err);
/* The same for rows made now and never sent before (an operation's own,
 * not a replay's): their ids are new, so nothing is looked up to skip
 * (a row repeated within the call still goes in once). */
int auditdb_insert_fresh(struct auditdb *db, const struct audit_row *rows,
			 size_t n, size_t *inserted, struct sbx_error **err);

/*
 * Verify chains (every one, or one session's, or one tenant's): recompute
 * each row's hash from the previous one's; the first row that does not
 * match is reported (edited, or a row before it deleted, or inserted out
 * of place), and a head that is not its last row's hash (rows deleted at
 * the end).  *report: {"chains","rows","bad":[{"session","seq","id",
 * "why"}]} (at most one bad entry per chain).  Returns 0 when verified
 * (bad empty), 1 when not, -1 on error.
 */
int auditdb_verify(struct auditdb *db, const char *session, const char *tenant,
		   json_t **report, struct sbx_error **err);
/* Every chain's head: [{"session","tenant","rows","head_seq","head"
 * (hex)}], sorted by session. */
int auditdb_heads(struct auditdb *db, const char *session, const char *tenant,
		  json_t **heads, struct sbx_error **err);

/*
 * Delete rows created before cutoff_us.  First the day partitions that
 * end by the cutoff go whole, oldest first, each in a transaction of its
 * own: its chains' counts and anchors moved past the day in one
 * statement, then the partition detached and dropped (locks waited for 5
 * s at most: a day not had is left to the next sweep, days_busy).  A day
 * is dropped only if each of its chains has no row outside it before the
 * day's last (a replayed row): else the drop would cut a chain in the
 * middle, and the day goes row by row (days_split).  Then what is left
 * older than the cutoff (the cutoff's own day, the default partition, a
 * day kept) is deleted row by row in transactions of at most batch rows.
 * Per chain only a prefix goes (rows in seq order up to the first that
 * is not old), so a chain stays whole; the chain's swept_hash becomes the
 * hash of the last row removed.
 */
struct auditdb_swept {
	unsigned long long deleted;    /* rows removed, the days' too */
	unsigned long long held;       /* old rows kept: a newer row precedes
					* them in their chain (a replay) */
	unsigned long long days;       /* day partitions dropped whole */
	unsigned long long days_split; /* days gone row by row instead */
	unsigned long long days_busy;  /* days left: a lock not had in 5 s */
};
int auditdb_sweep(struct auditdb *db, long long cutoff_us, size_t batch,
		  struct auditdb_swept *sw, struct sbx_error **err);

/*
 * The day partitions of sandbox_operations (migration 7) from yesterday
 * to ahead days after today (UTC days), those missing made, each in a
 * transaction of its own that waits at most 2 s for its locks (a day
 * that could not be made now is left to the next call: rows of a day
 * with no partition go to the default one, never lost).  A day whose
 * rows already sit in the default partition is not made.  *made the days
 * made.  migrate calls it with AUDITDB_DAYS_AHEAD, the service at its
 * start and on its sweep timer.
 */
#define AUDITDB_DAYS_AHEAD 7
int auditdb_make_days(struct auditdb *db, int ahead, int *made,
		      struct sbx_error **err);

/* The libpq connection, for auditq.c (a PGconn *). */
void *auditdb_conn(struct auditdb *db);

/* Whether db may serve another caller: connected, and outside any
 * transaction, COPY or pipeline (a call that failed half-way leaves
 * one). */
bool auditdb_reusable(struct auditdb *db);

/*
 * A pool of connections for the service's reads (docs/audit.md, "In the
 * service"): at most max at once, made on demand (auditdb_connect, outside
 * the pool's lock) and kept when given back; a caller finding max in use
 * waits for one.  get: an idle connection, or a new one (-1 as
 * auditdb_connect says, the slot given back).  put: db back to the pool,
 * or closed when it is no longer reusable (auditdb_reusable: a connection
 * that failed is dropped, never handed on); NULL does nothing.
 *
 * Thread rule: a pool is shared: get and put from any number of threads at
 * once (one mutex); a connection got belongs to its caller's thread until
 * put.  new and free are the owner's (free after every connection is put
 * back).
 */
struct auditdb_pool;
struct auditdb_pool *auditdb_pool_new(const char *conninfo,
				      const char *connect_timeout, size_t max);
int auditdb_pool_get(struct auditdb_pool *p, struct auditdb **db,
		     struct sbx_error **err);
void auditdb_pool_put(struct auditdb_pool *p, struct auditdb *db);
void auditdb_pool_free(struct auditdb_pool *p);
struct auditdb_pool_stats {
	size_t idle, busy;	    /* connections now */
	unsigned long long made;    /* connections made */
	unsigned long long dropped; /* given back broken, closed */
};
void auditdb_pool_stats(struct auditdb_pool *p, struct auditdb_pool_stats *st);

#endif

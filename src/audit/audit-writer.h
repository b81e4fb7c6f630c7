/*
 * audit-writer.h - the service's audit writer: one thread, one database
 * connection, the rows of every request committed in groups (brief
 * section 9, docs/audit.md "In the service").
 *
 * A command of the command line records through its own recorder
 * (audit_open: a connection per command).  A long-running service instead
 * starts one writer and gives each request a recorder on it
 * (audit_open_writer): the same struct audit, so every operation records
 * as it always has, with the same promise: audit_ready fails closed as the
 * command line's does (the spool certain to take the row should the
 * database not), and audit_record returns only once the row is durable:
 * committed to PostgreSQL (*where AUDIT_TO_DB), or, when the database did
 * not take it, appended to the spool and fsync'd (AUDIT_TO_SPOOL).  A row
 * neither took fails its operation ("audit record could not be written:
 * database: ...; spool: ...") and is counted lost.
 *
 * The writer takes every row queued since its last commit and inserts
 * them in one transaction (auditdb_insert), so many threads recording at
 * once cost about one commit per group; it takes the next group as soon
 * as a commit returns (no timer: a row alone is not kept waiting for
 * others) and wakes the callers of the group committed, each on its own
 * condition.  Before a group reaches the
 * database a spool left non-empty (by an outage, or another process) is
 * replayed into it first, so each session's chain keeps the order its
 * rows were made in.  The queue holds at most AUDIT_WRITER_QUEUE_MAX rows
 * not yet taken: a full queue makes audit_record wait, never drop.  When
 * the database fails, the group goes to the spool and the writer tries
 * to connect again after 100 ms, doubling to at most every second, with
 * or without rows to write; once it answers the writer replays the spool
 * by itself.  A connection attempt waits at most the connect timeout
 * (PGCONNECT_TIMEOUT, 5 s): rows queued meanwhile wait for it.
 *
 * The direct path: a caller that finds the writer idle (no group in hand,
 * nothing queued, its database up) and one of AUDIT_WRITER_DIRECT_MAX
 * connections free commits its row itself, on that connection (made on
 * its first use), and returns: one operation alone pays no hand-over to
 * the writer's thread and back.  It never jumps a spool that holds rows
 * (those go first, through the writer, which replays them), and the
 * chains' row locks in the database order concurrent commits of one
 * session as they order the writer's and other processes'.  A commit of
 * its own that fails hands the row to the writer (looked up by key
 * first: the server may have taken it) and sends the other callers
 * through the writer until the writer's next commit.
 *
 * Ownership: audit_writer_start copies what it keeps of the
 * configuration; audit_writer_stop frees the writer.  A row handed to
 * audit_record is borrowed until it returns.
 *
 * Thread rule: the writer is shared: audit_open_writer, audit_ready,
 * audit_record (through recorders of their own) and audit_writer_stats may
 * be called from any number of threads at once; each recorder belongs to
 * one thread at a time, as audit.h says.  audit_writer_stop is called once,
 * by the thread that started it, when no new record will start: records
 * already queued or waiting are committed (or spooled) and have returned
 * before it frees the writer; recorders on it are closed before or after
 * (closing one touches no writer), never used again.
 * The writer's connection and spool are its thread's alone; the spool's
 * readiness is checked on a spool of its own under a lock.
 */
#ifndef SBX_AUDIT_WRITER_H
#define SBX_AUDIT_WRITER_H

#include <stdbool.h>
#include <stddef.h>

#include "audit/audit.h"

struct sbx_error;
struct audit_writer;

/* Connections callers commit their own rows on while the writer is idle,
 * at most (made on first use). */
#define AUDIT_WRITER_DIRECT_MAX 4
/* Rows waiting to be taken, at most. */
#define AUDIT_WRITER_QUEUE_MAX 1024
/* The reconnect's backoff: first and longest wait, milliseconds. */
#define AUDIT_WRITER_RETRY_MIN_MS 100
#define AUDIT_WRITER_RETRY_MAX_MS 1000

/*
 * Start the writer for c's database (audit_config_db) and spool: one
 * connection attempt here (a database that does not answer is not an
 * error: rows go to the spool until it does; a spool left by an earlier
 * run is replayed when it answers), then the thread.  -1 only when the
 * thread cannot be made (status 3).  With c->off the recorders record
 * nothing.
 */
int audit_writer_start(struct audit_writer **w, const struct audit_config *c,
		       struct sbx_error **err);
/* Every row queued committed (or spooled), then the thread stopped and
 * the writer freed.  NULL: nothing. */
void audit_writer_stop(struct audit_writer *w);

/*
 * A recorder for one request's rows (agent and run checked as
 * audit_open checks them), on w: audit_ready, audit_record, audit_event,
 * audit_warning and audit_close work on it as audit.h says.
 */
int audit_open_writer(struct audit **a, struct audit_writer *w,
		      const char *agent, const char *run,
		      struct sbx_error **err);

/* The counters, for /metrics. */
struct audit_writer_stats {
	unsigned long long written;    /* rows committed to the database */
	unsigned long long direct;     /* of which by their callers */
	unsigned long long spooled;    /* rows fsync'd to the spool */
	unsigned long long replayed;   /* spooled rows moved to the database */
	unsigned long long lost;       /* rows neither took (each failed) */
	unsigned long long groups;     /* transactions of queued rows */
	unsigned long long full_waits; /* records that waited for room */
	size_t queued;		       /* rows waiting now */
	size_t inside;		       /* records not yet returned */
	bool db_up;		       /* the connection is up */
};
void audit_writer_stats(struct audit_writer *w, struct audit_writer_stats *st);

/* ---- between the recorder (recorder.c) and the writer ---- */

/* What audit_ready checks, on w's spool and w's database. */
int audit_writer_ready(struct audit_writer *w, struct sbx_error **err);
/* r handed to w, waiting until it is durable (audit_record's promise). */
int audit_writer_record(struct audit_writer *w, const struct audit_row *r,
			enum audit_where *where, struct sbx_error **err);
/* Whether w's recorders are off (the configuration's SBXCAT_AUDIT). */
bool audit_writer_off(const struct audit_writer *w);
/*
 * "audit record could not be written: database: DB; spool: SPOOL"
 * (status 3, the spool error's reason and hint kept), *spool_err freed:
 * the one message both recorders give when neither sink takes a row.
 */
int audit_both_failed(const char *db, struct sbx_error **spool_err,
		      struct sbx_error **err);

#endif

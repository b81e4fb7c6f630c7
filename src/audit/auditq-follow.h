/*
 * auditq-follow.h - `audit ls --follow`: the rows a filter matches, as
 * their transactions commit, each exactly once (docs/audit.md,
 * "Following").
 *
 * Why not "seq > the last seq shown": seq is given at insert, but
 * transactions commit in any order (the writers lock only their own
 * session's chain), so a row with a lower seq can commit after one with a
 * higher seq has been shown, and would be skipped.  Instead the follower
 * keeps the snapshot of its last read (pg_current_snapshot(): xmin, xmax
 * and the transactions in progress, xip) and each read takes the rows
 * whose inserting transaction (the xact column, migration 5) that
 * snapshot did not yet see as finished: xact >= xmax or xact in xip.
 * PostgreSQL's own visibility then says which of those have committed by
 * the new read's snapshot, so a row is shown by the first read whose
 * snapshot sees it, and by no other: no row twice, none skipped, whatever
 * the order of commits.  Memory is the snapshot's text (bounded by the
 * server's connections) and one row at a time (libpq's single-row mode).
 *
 * Two losses are handled so the rule still holds:
 * - the connection drops while a read's rows are being handed on: the
 *   rows handed were those of that read's snapshot up to some seq k, in
 *   seq order; the next read leaves those out (seq <= k and seen by that
 *   snapshot), plus the few seqs below k a second cut read handed.
 * - the server restarted (pg_postmaster_start_time changed): after a
 *   crash PostgreSQL may give again a transaction id that no committed
 *   transaction had used, so the old snapshot could call a new
 *   transaction finished.  The first read after a restart therefore also
 *   takes every row whose seq is above the highest seq the old snapshot
 *   saw: the sequence never gives again a value a committed row holds
 *   (its WAL is flushed with the commit), so every row committed since
 *   the restart is above it, and every row at or below it that the old
 *   snapshot saw was shown.  That read scans the table once.
 *
 * Thread rule: a struct auditq_follow is one caller's, used on one
 * connection at a time (auditdb.h's rule).
 */
#ifndef SBX_AUDITQ_FOLLOW_H
#define SBX_AUDITQ_FOLLOW_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>

struct auditdb;
struct auditq_filter;
struct sbx_error;

/* A row (the page's object of auditq.h, borrowed) handed on: 0, or -1
 * with *err to stop following. */
typedef int (*auditq_follow_row)(void *arg, json_t *row,
				 struct sbx_error **err);

struct auditq_follow;

/* The follower of filter f (copied by reference: f's strings must live
 * as long as it). */
struct auditq_follow *auditq_follow_new(const struct auditq_filter *f);
void auditq_follow_free(struct auditq_follow *fo);

/*
 * Start on db: LISTEN, then the first snapshot; the last tail rows (0:
 * none; at most 10000) matching f, oldest first, read in that same
 * snapshot, go to row.  Rows committed after it are the polls'.
 */
int auditq_follow_start(struct auditq_follow *fo, struct auditdb *db,
			unsigned long tail, auditq_follow_row row, void *arg,
			struct sbx_error **err);

/* Go on on a new connection after the last one was lost: LISTEN again;
 * *restarted when the server is not the one the last read saw. */
int auditq_follow_resume(struct auditq_follow *fo, struct auditdb *db,
			 bool *restarted, struct sbx_error **err);

/* One read: every row matching f committed since the last read's
 * snapshot, in seq order, to row.  *rows: how many were handed on. */
int auditq_follow_poll(struct auditq_follow *fo, struct auditdb *db,
		       auditq_follow_row row, void *arg, unsigned long *rows,
		       struct sbx_error **err);

/*
 * Wait until a notification of a commit arrives on db (1), timeout_ms
 * passes or *cancel is set (0), or the connection fails (-1).  out_fd
 * (-1: none) is where the rows go: when its reader has left (POLLERR or
 * POLLHUP) -1 with errnum EPIPE.
 */
int auditq_follow_wait(struct auditdb *db, int timeout_ms,
		       const atomic_int *cancel, int out_fd,
		       struct sbx_error **err);

/* Whether db's connection is gone (the caller then connects again). */
bool auditq_follow_lost(struct auditdb *db);

#endif

/*
 * spool.h - the audit's local append-only spool: where a row goes when the
 * database cannot take it, until `sbxcat audit flush` (or the next
 * operation that reaches the database) replays it.
 *
 * DIR/audit.jsonl holds one row per line: audit_row_json's object with one
 * more member last, "sum": the SHA-256 (hex) of the line's bytes before
 * ',"sum":'.  A line is appended with one write(2) on an O_APPEND
 * descriptor under a shared flock and fsync'd before spool_append returns,
 * so a row the operation reported is on disk.  A replay holds the flock
 * exclusively, reads the whole lines, hands them to the sink in batches,
 * and empties the file only after every batch was taken; a crash in
 * between replays the same rows again, which the UUIDs make a no-op.  A
 * last line without its newline or whose sum does not match (a write
 * torn by a crash) is never handed on: it is moved to
 * DIR/kept-aside.jsonl (appended, fsync'd) and counted.  DIR/flush.json
 * says when the last replay ended and how many rows it moved.
 *
 * DIR is SBXCAT_SPOOL_DIR, else /var/spool/sbxcat; made 0700 when missing
 * (its parent must exist); files 0600.  A DIR that is a symlink, or not
 * owned by us, is refused (another user could read or swap the spool).
 */
#ifndef SBX_SPOOL_H
#define SBX_SPOOL_H

#include <stdbool.h>
#include <stddef.h>

struct audit_row;
struct sbx_error;

#define SPOOL_DEFAULT_DIR "/var/spool/sbxcat"
#define SPOOL_BATCH 10000 /* rows per sink call */
#define SPOOL_LINE_MAX 65536

struct spool {
	char *dir;
	int dirfd;  /* -1 until opened */
	int fd;	    /* audit.jsonl for appending, -1 until needed */
};

/* The directory (SBXCAT_SPOOL_DIR or the default), not opened yet. */
void spool_init(struct spool *s);
/* Open (making DIR when missing) and the file for appending.  -1 with
 * status 3 naming the directory and why. */
int spool_open(struct spool *s, struct sbx_error **err);
/* Append r as one line and fsync it; opens the spool when needed. */
int spool_append(struct spool *s, const struct audit_row *r,
		 struct sbx_error **err);
void spool_close(struct spool *s);

struct spool_status {
	bool exists;		 /* DIR exists */
	unsigned long long rows; /* whole lines waiting */
	long long oldest_us;	 /* created_at of the oldest; 0 when none */
	unsigned long long kept_aside; /* lines in kept-aside.jsonl */
	long long last_flush_us;       /* 0: never */
	unsigned long long last_flush_rows;
	unsigned long long lost;       /* lines in lost.jsonl */
};
int spool_status(struct spool *s, struct spool_status *st,
		 struct sbx_error **err);

/*
 * A row neither the database nor the spool's file took, for an operation
 * that had already happened: its id, time and op (no target) appended to
 * DIR/lost.jsonl, which `audit status` counts as rows lost.  Best effort:
 * a spool directory that cannot be written cannot count either (the
 * operation's own message on stderr is then all there is).
 */
void spool_note_lost(struct spool *s, const struct audit_row *r);

/* The bytes waiting in audit.jsonl (one fstat); 0 when none. */
unsigned long long spool_pending(struct spool *s);

/*
 * Replay: sink(arg, rows, n, err) takes each batch (at most SPOOL_BATCH
 * rows, in file order) and returns 0, or -1 to stop (the spool is then
 * left as it was, apart from a torn last line moved aside).  wait: block
 * for the lock; else return 0 with *moved 0 at once when another replay
 * holds it.  *moved rows handed on, *kept lines moved aside.
 */
typedef int (*spool_sink)(void *arg, const struct audit_row *rows, size_t n,
			  struct sbx_error **err);
int spool_replay(struct spool *s, bool wait, spool_sink sink, void *arg,
		 unsigned long long *moved, unsigned long long *kept,
		 struct sbx_error **err);

#endif

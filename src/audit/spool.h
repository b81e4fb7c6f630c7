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
 * DIR is the configuration's (audit.h: SBXCAT_SPOOL_DIR, else
 * /var/spool/sbxcat); made 0700 when missing (its parent must exist);
 * files 0600.  A DIR that is a symlink, or not
 * owned by us, is refused (another user could read or swap the spool).
 *
 * A full disk (docs/audit.md, "A full disk"): spool_ready, which every
 * operation's audit_ready calls before it acts, refuses when DIR's file
 * system has less than a floor free for us (SBXCAT_SPOOL_MIN_FREE), and
 * keeps a reserve allocated ahead of audit.jsonl's end (fallocate with
 * FALLOC_FL_KEEP_SIZE, SBXCAT_SPOOL_RESERVE), so the rows of operations
 * that passed it land in blocks already allocated even when the disk fills
 * while they run.  A row that is lost all the same is counted in
 * DIR/lost.count, made once while there is room and afterwards only
 * rewritten in place: counting needs no new block.
 *
 * Thread rule: a struct spool belongs to one thread at a time.  Spools of
 * one directory in different threads or processes share nothing but the
 * files, and coordinate through flock(2) on descriptors of their own, as
 * different processes do.  Nothing here is static.
 */
#ifndef SBX_SPOOL_H
#define SBX_SPOOL_H

#include <stdbool.h>
#include <stddef.h>

struct audit_config;
struct audit_row;
struct sbx_error;

#define SPOOL_DEFAULT_DIR "/var/spool/sbxcat"
#define SPOOL_BATCH 10000 /* rows per sink call */
#define SPOOL_LINE_MAX 65536
/* The defaults of SBXCAT_SPOOL_MIN_FREE and SBXCAT_SPOOL_RESERVE. */
#define SPOOL_MIN_FREE_DEFAULT (64ULL << 20)
#define SPOOL_RESERVE_DEFAULT (1ULL << 20)

struct spool {
	char *dir;
	int dirfd;    /* -1 until opened */
	int fd;	      /* audit.jsonl for appending, -1 until needed */
	int count_fd; /* lost.count, -1 until needed */
	unsigned long long min_free, reserve; /* bytes; 0: none */
	/* A floor or reserve set wrong (a copy of the configuration's
	 * limits_err), said by the calls that need them; else NULL. */
	struct sbx_error *limits_err;
};

/* The directory, the floor and the reserve from c (copied: c may go
 * first), not opened yet.  A reserve under SPOOL_LINE_MAX counts as
 * SPOOL_LINE_MAX. */
void spool_init(struct spool *s, const struct audit_config *c);
/* Open (making DIR when missing) and the file for appending.  -1 with
 * status 3 naming the directory and why. */
int spool_open(struct spool *s, struct sbx_error **err);
/*
 * Make sure a row will be taken: the spool open, DIR/lost.count made,
 * at least min_free bytes free for us on DIR's file system, and reserve
 * bytes allocated ahead of audit.jsonl's end.  -1 status 3 naming the
 * directory and why: below the floor, "spool directory 'DIR' has N bytes
 * free, under the floor of M bytes (SBXCAT_SPOOL_MIN_FREE)"; status 2
 * for a limit that is not a whole number of bytes.
 */
int spool_ready(struct spool *s, struct sbx_error **err);
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
	unsigned long long lost; /* lost.count (or lost.jsonl's lines) */
	/* DIR's file system: bytes free for us as spool_ready counts them,
	 * the floor and the reserve, and what is allocated ahead of
	 * audit.jsonl's end (free and reserved: 0 when DIR is missing). */
	unsigned long long free, min_free, reserve, reserved;
};
int spool_status(struct spool *s, struct spool_status *st,
		 struct sbx_error **err);

/*
 * A row neither the database nor the spool's file took, for an operation
 * that had already happened: counted in DIR/lost.count (rewritten in
 * place, so a full disk does not stop it), then its id, time and op (no
 * target) appended to DIR/lost.jsonl as far as the disk allows.  `audit
 * status` says the count.  -1 when it could not be counted either (no
 * lost.count and no room to make one, or an unusable directory): the
 * operation's own message on stderr is then all there is.
 */
int spool_note_lost(struct spool *s, const struct audit_row *r);

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

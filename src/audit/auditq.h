/*
 * auditq.h - the auditors' queries over sandbox_operations: filtered,
 * newest-first pages with an opaque keyset cursor, streamed export, stats.
 *
 * Order is (created_at DESC, seq DESC) everywhere; a page's cursor is the
 * last row's (created_at, seq), base64url-encoded with a version prefix,
 * and --after CURSOR continues strictly after it, so pages never repeat or
 * skip a row however many rows arrive meanwhile.  Every value reaches the
 * server as a parameter ($1...), never spliced into SQL; --search is a
 * substring of target with %, _ and \ taken literally (LIKE with those
 * escaped and ESCAPE '\').
 *
 * A filter value that is not UTF-8 is -1 status 2 naming the value
 * ("tenant '\xff': ..."), never a flag: the words of a command line are
 * its caller's.
 *
 * Thread rule: a query runs on the caller's connection (auditdb.h: one
 * thread at a time on it); nothing here keeps state.
 */
#ifndef SBX_AUDITQ_H
#define SBX_AUDITQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct auditdb;
struct sbx_error;

struct auditq_filter {
	const char *tenant, *session, *agent, *run; /* NULL: any */
	unsigned ops;	     /* bit (1 << enum audit_op); 0: any */
	bool failed;	     /* NOT ok only */
	const char *search;  /* substring of target; NULL: any */
	long long since_us;  /* created_at >= ; 0: unbounded */
	long long until_us;  /* created_at < ; 0: unbounded */
	bool has_after;	     /* continue after (after_us, after_seq) */
	long long after_us, after_seq;
};

/*
 * TIME for --since/--until (audit-time.c), as a moment in Unix
 * microseconds:
 *   - ISO 8601 / RFC 3339: "2026-12-01", "2026-12-01T10:00" (or a space
 *     for the T), "2026-12-01T10:00:00Z", "...+02:00", fractions to the
 *     nanosecond rounded up to the microsecond; no zone is UTC, or the
 *     local zone (libc's: TZ) when local;
 *   - a time ago, before now_us: N and a unit, as one word or two, with
 *     or without "ago" ("2h", "2h ago", "3 days ago", "1 hour ago"; s sec
 *     second, m min minute, h hr hour, d day, w wk week, plurals; a
 *     one-letter unit lower case only, words in any case); N days is N
 *     times 24 hours;
 *   - a day, its first moment in UTC or, when local, the local zone:
 *     "today", "yesterday", a weekday ("tuesday", "tue", "last tuesday":
 *     the most recent one before today, so today's name is a week ago);
 *     "now" is now_us;
 *   - any of those, then " + " or " - " and N UNIT as above (no "ago"):
 *     by the clock, or for days and weeks when local by the calendar
 *     ("tuesday + 1 day" is Wednesday's start, 23 or 25 hours later
 *     across a change of daylight saving time).
 * A local time the clocks passed twice is its first pass; one they
 * skipped is the moment they jumped to.  -1 status 2 naming the text
 * (cut short) and the accepted forms; never reads past s's NUL.
 * auditq_parse_time is auditq_parse_time_in with local false.
 */
int auditq_parse_time_in(const char *s, long long now_us, bool local,
			 long long *out_us, struct sbx_error **err);
int auditq_parse_time(const char *s, long long now_us, long long *out_us,
		      struct sbx_error **err);

/* Cursor text <-> (created_us, seq).  Decoding anything not made by
 * encode is -1 status 2 "not a cursor sbxcat printed". */
void auditq_cursor_encode(long long created_us, long long seq, char out[64]);
int auditq_cursor_decode(const char *s, long long *created_us, long long *seq,
			 struct sbx_error **err);

/*
 * One page of at most limit rows, newest first: *rows an array of objects
 * shaped as audit_row_json plus "seq"; *cursor (malloc'd) the cursor of
 * the last row when the page is full and more may follow, else NULL.
 */
int auditq_page(struct auditdb *db, const struct auditq_filter *f,
		unsigned long limit, json_t **rows, char **cursor,
		struct sbx_error **err);

/*
 * Every matching row, newest first, to write (as CSV: a header line, RFC
 * 4180 quoting; or JSON lines: the page's object shape), through COPY ...
 * TO STDOUT, in pieces of 64 KiB: constant memory whatever the count.
 * write(arg, buf, len) takes a piece whole and returns 0, or an errno
 * value to stop the export (EPIPE: the reader left): -1 "exporting the
 * audit: writing the output: REASON" with that errnum, and db is left
 * inside the COPY: close it, do not reuse it.  *count rows written.
 */
enum auditq_format { AUDITQ_CSV, AUDITQ_JSONL };
typedef int (*auditq_writer)(void *arg, const void *buf, size_t len);
int auditq_export(struct auditdb *db, const struct auditq_filter *f,
		  enum auditq_format fmt, auditq_writer write, void *arg,
		  unsigned long long *count, struct sbx_error **err);

/*
 * Counts over a window (since/tenant of f; the other filters too):
 * {"since","until","total","failed","ops":{"read":{"count","failed",
 * "p50_ms","p95_ms","max_ms"},...},"slowest":[up to 10 rows, page shape]}.
 */
int auditq_stats(struct auditdb *db, const struct auditq_filter *f,
		 json_t **stats, struct sbx_error **err);

/*
 * One session's events (the service's GET /sessions/{id}/events): the
 * rows of session's chain whose seq is above after, in seq order, at
 * most limit (1 or more: the caller bounds it), each {"seq", "at" (float
 * Unix seconds), "op" (audit_op_name's), "target", "ok", "detail",
 * "duration_ms", "exit_status", "bytes", "results"} (null when not
 * counted); *latest_seq the chain's last seq (0: no row).  seq is the
 * row's in sandbox_operations: it grows along the chain but is shared by
 * every chain, so it is neither contiguous nor from 1.  tenant, when not
 * NULL, must also be the rows' (and the latest's): another tenant's
 * session reads exactly like one with no rows.
 */
struct auditq_events_req {
	const char *session, *tenant;
	long long after;
	unsigned long limit;
};
int auditq_events(struct auditdb *db, const struct auditq_events_req *q,
		  json_t **events, long long *latest_seq,
		  struct sbx_error **err);

/*
 * The SQL a page runs (for the EXPLAIN test and the benchmark):
 * the statement and its parameters as text (free with auditq_sql_free).
 */
struct auditq_sql {
	char *sql;
	char **params;
	int nparams;
};
void auditq_page_sql(const struct auditq_filter *f, unsigned long limit,
		     struct auditq_sql *q);
void auditq_sql_free(struct auditq_sql *q);

/* For the follower (auditq-follow.h): a row's JSON expression (the page's
 * shape), and f's conditions (" WHERE ..." or "", after ignored) with
 * npre empty parameters first, the filter's numbered from npre + 1. */
struct strbuf;
void auditq_row_json_sql(struct strbuf *sb);
/* f's values checked as every query checks them (-1 status 2). */
int auditq_check_filter(const struct auditq_filter *f, struct sbx_error **err);
void auditq_where_sql(const struct auditq_filter *f, int npre,
		      struct auditq_sql *q);

#endif

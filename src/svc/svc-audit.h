/*
 * svc-audit.h - the audit's own verbs as operations (svc.h,
 * docs/audit.md): the schema (migrate), the state of the database and
 * the spool (status), the spool replayed (flush), the auditors' queries
 * (ls, export, stats), the retention sweep, and the chains (verify,
 * head).  None of them is an operation the audit records: the audit does
 * not audit itself.
 *
 * Each call connects to the configured database (svc/config.h's audit,
 * with the caller's override) for itself and closes it before it
 * returns; in the service (svc_audit_serve_start) it takes a connection
 * of the service's pool instead and gives it back (a broken one is
 * dropped).  The error "no database configured" and "the schema is older
 * than sbxcat" are the caller's to add its own words to
 * (svc_audit_needs_database, svc_audit_needs_migrate).
 *
 * Ownership: every res->doc is a new reference, the caller's (released
 * by svc_audit_*_res_release with the rest of res); rows handed to a row
 * callback are borrowed for the call.  A call that fails (-1) leaves res
 * with nothing to release (releasing it again is harmless).
 *
 * Thread rule: as svc.h: calls share nothing (each has its connection and
 * spool); any number may run at once.
 */
#ifndef SBX_SVC_AUDIT_H
#define SBX_SVC_AUDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "audit/audit-writer.h"
#include "audit/auditq.h"
#include "audit/spool.h"
#include "svc/svc.h"

struct sbx_error;
struct strbuf;

#define SVC_AUDIT_LS_DEFAULT 50	       /* rows a page */
#define SVC_AUDIT_LS_MAX 10000	       /* rows a page at most */
#define SVC_AUDIT_DAYS_MAX 20000       /* a retention in days at most */
#define SVC_AUDIT_RETENTION_DEFAULT 30 /* days */

/* Whether err is "no database configured" (a verb that needs one). */
bool svc_audit_needs_database(const struct sbx_error *err);
/* Whether err is the schema older than this sbxcat (`audit migrate`). */
bool svc_audit_needs_migrate(const struct sbx_error *err);

/*
 * The values of a request, from text (a command line's options, a
 * query's parameters): -1 with status 2 and a message that names the
 * value, never the option, which the caller names.
 *
 * time: ISO 8601, a time ago or a day, relative to now, a time without
 * a zone and a day in the local zone when local, else in UTC (auditq.h);
 * ops: a comma list of op names (audit_op_name, or the wire's names:
 * audit_op_parse_alias), added to *ops ("'x':
 * not an operation (write, edit, ...)"; "which operation?" when it names
 * none); cursor: what a page's cursor said, into f's after; format: "csv"
 * or "jsonl".
 */
int svc_audit_parse_time(const char *s, bool local, long long *us,
			 struct sbx_error **err);
int svc_audit_parse_ops(const char *list, unsigned *ops,
			struct sbx_error **err);
int svc_audit_parse_cursor(const char *s, struct auditq_filter *f,
			   struct sbx_error **err);
int svc_audit_parse_format(const char *s, enum auditq_format *fmt,
			   struct sbx_error **err);

/*
 * migrate: the pending migrations applied (res->applied of them; the
 * schema is then at res->version), doc {"applied", "schema_version"}; or,
 * with status, nothing applied and doc the list of every migration:
 * [{"version", "name", "applied_at" (RFC 3339, or null: pending)}].
 */
struct svc_audit_migrate_req {
	bool status;
	int to; /* apply up to this version only; 0: every one */
};
struct svc_audit_migrate_res {
	int applied, version;
	json_t *doc;
};
int svc_audit_migrate(const struct svc *s, const struct svc_call *call,
		      const struct svc_audit_migrate_req *req,
		      struct svc_audit_migrate_res *res,
		      struct sbx_error **err);
void svc_audit_migrate_res_release(struct svc_audit_migrate_res *res);

/*
 * status: whether a database is configured (and where from: source),
 * reachable (else why: db_error), its schema's version against the one
 * this sbxcat knows; the spool's directory and state (spool.h).  An
 * unreachable database is a result, not an error; a spool that cannot be
 * looked at (or a floor set wrong: status 2) is an error.
 */
struct svc_audit_status_res {
	bool configured, reachable;
	const char *source; /* static, or the configuration's */
	char *db_error;
	int version, known;
	char *spool_dir;
	struct spool_status spool;
	json_t *doc; /* {"database": {...}, "spool": {...}, "lost"} */
};
int svc_audit_status(const struct svc *s, const struct svc_call *call,
		     struct svc_audit_status_res *res, struct sbx_error **err);
void svc_audit_status_res_release(struct svc_audit_status_res *res);

/* flush: the spool replayed into the database (waiting for another
 * replay to end): rows flushed, already there (a replay cut short before),
 * lines kept aside. */
struct svc_audit_flush_res {
	unsigned long long flushed, already, kept_aside;
	json_t *doc; /* {"flushed", "already", "kept_aside"} */
};
int svc_audit_flush(const struct svc *s, const struct svc_call *call,
		    struct svc_audit_flush_res *res, struct sbx_error **err);
void svc_audit_flush_res_release(struct svc_audit_flush_res *res);

/*
 * ls: one page of the rows filter matches, newest first, each handed to
 * row (the page object of auditq.h, borrowed; row returns 0, or -1 with
 * *err to stop); res->cursor the next page's (after: svc_audit_parse_
 * cursor), NULL at the last page.  limit: 1 to SVC_AUDIT_LS_MAX rows, 0
 * for SVC_AUDIT_LS_DEFAULT.
 */
struct svc_audit_ls_req {
	struct auditq_filter filter;
	unsigned long limit;
	int (*row)(void *arg, json_t *row, struct sbx_error **err);
	void *row_arg;
};
struct svc_audit_ls_res {
	unsigned long rows; /* handed to row */
	/* Rows waiting in the spool, not in the database yet (a flush
	 * moves them); 0 when none, or when the spool cannot be read. */
	unsigned long long spooled;
	char *cursor;
	json_t *doc; /* {"next": cursor or null}, the page's last line */
};
int svc_audit_ls(const struct svc *s, const struct svc_call *call,
		 const struct svc_audit_ls_req *req,
		 struct svc_audit_ls_res *res, struct sbx_error **err);
void svc_audit_ls_res_release(struct svc_audit_ls_res *res);

/*
 * follow: the rows filter matches as their transactions commit, each
 * once, in the order they commit (auditq-follow.h), handed to row until
 * *call->cancel is set (0) or row fails (-1 with its error); first the
 * last tail of them (0: none; at most SVC_AUDIT_LS_MAX), oldest first.
 * It reads on each notification of a commit, and every poll_ms (0:
 * SVC_AUDIT_FOLLOW_POLL_MS) without one.  When the connection is lost it
 * says so to call->warn and connects again, waiting 0.1 s, doubling to
 * 5 s, between tries, for at most SVC_AUDIT_FOLLOW_RETRY_S seconds in a
 * row (then -1, status 3, the last reason).  out_fd, when not -1, is
 * where row writes: its reader gone (a pipe's POLLERR) ends the call
 * while it waits, -1 with errnum EPIPE, as row's own EPIPE would.
 */
#define SVC_AUDIT_FOLLOW_POLL_MS 1000
#define SVC_AUDIT_FOLLOW_RETRY_S 300
struct svc_audit_follow_req {
	struct auditq_filter filter;
	unsigned long tail;
	unsigned poll_ms;
	int out_fd;
	int (*row)(void *arg, json_t *row, struct sbx_error **err);
	void *row_arg;
};
int svc_audit_follow(const struct svc *s, const struct svc_call *call,
		     const struct svc_audit_follow_req *req,
		     struct sbx_error **err);

/* export: every row filter matches, newest first, streamed to out in
 * format (auditq.h).  A sink that fails stops it, -1 with the sink's
 * errnum (EPIPE: the reader left). */
struct svc_audit_export_req {
	struct auditq_filter filter;
	enum auditq_format format;
	struct svc_sink out;
};
struct svc_audit_export_res {
	unsigned long long rows;
};
int svc_audit_export(const struct svc *s, const struct svc_call *call,
		     const struct svc_audit_export_req *req,
		     struct svc_audit_export_res *res, struct sbx_error **err);

/* stats: counts per op over filter's window (since 0: the 24 hours
 * before its until, or before now), doc as auditq_stats says. */
struct svc_audit_stats_req {
	struct auditq_filter filter;
};
struct svc_audit_stats_res {
	json_t *doc;
};
int svc_audit_stats(const struct svc *s, const struct svc_call *call,
		    const struct svc_audit_stats_req *req,
		    struct svc_audit_stats_res *res, struct sbx_error **err);
void svc_audit_stats_res_release(struct svc_audit_stats_res *res);

/*
 * sweep: rows older than days (1 to SVC_AUDIT_DAYS_MAX; 0: the
 * configured OPERATION_RETENTION_DAYS, whose error is then this call's,
 * else SVC_AUDIT_RETENTION_DEFAULT) deleted: whole days dropped, the rest
 * in small batches, each chain's prefix only (auditdb.h's
 * auditdb_sweep).
 */
struct svc_audit_sweep_req {
	unsigned long long days;
};
struct svc_audit_sweep_res {
	unsigned long long deleted, held, days;
	unsigned long long days_dropped; /* day partitions dropped whole */
	unsigned long long days_split;	 /* ... gone row by row instead */
	unsigned long long days_busy;	 /* ... left: a lock not had */
	long long before_us;		 /* the cutoff */
	/* {"deleted", "held", "before", "days", "days_dropped",
	 * "days_split", "days_busy"} */
	json_t *doc;
};
int svc_audit_sweep(const struct svc *s, const struct svc_call *call,
		    const struct svc_audit_sweep_req *req,
		    struct svc_audit_sweep_res *res, struct sbx_error **err);
void svc_audit_sweep_res_release(struct svc_audit_sweep_res *res);

/*
 * The service's upkeep of the audit's table (serve's reaper calls it at
 * its start and then hourly): the day partitions made ahead
 * (auditdb_make_days, AUDITDB_DAYS_AHEAD), then, when
 * OPERATION_RETENTION_DAYS is set, the sweep (as svc_audit_sweep with
 * days 0).  Nothing without a database (*ran false).  -1 with the first
 * error (days made before it are kept); the caller logs it and carries
 * on.
 */
struct svc_audit_upkeep_res {
	bool ran;   /* a database is configured */
	int made;   /* day partitions made */
	bool swept; /* the sweep ran: sweep holds it */
	struct svc_audit_sweep_res sweep;
};
int svc_audit_upkeep(const struct svc *s, const struct svc_call *call,
		     struct svc_audit_upkeep_res *res, struct sbx_error **err);
void svc_audit_upkeep_res_release(struct svc_audit_upkeep_res *res);

/* The chains verify and head look at: one session's, the chains holding
 * rows of one tenant, or (both NULL) every one; not both. */
struct svc_audit_chains_req {
	const char *session, *tenant;
};

/* verify: every chain recomputed (auditdb.h); a chain that does not
 * verify is a result (verified false, doc's "bad" naming the row), not
 * an error. */
struct svc_audit_verify_res {
	bool verified;
	json_t *doc; /* {"chains", "rows", "bad": [...]} */
};
int svc_audit_verify(const struct svc *s, const struct svc_call *call,
		     const struct svc_audit_chains_req *req,
		     struct svc_audit_verify_res *res, struct sbx_error **err);
void svc_audit_verify_res_release(struct svc_audit_verify_res *res);

/* head: each chain's head, to keep elsewhere (auditdb.h). */
struct svc_audit_head_res {
	json_t *doc; /* [{"session", "tenant", "rows", "head_seq", ...}] */
};
int svc_audit_head(const struct svc *s, const struct svc_call *call,
		   const struct svc_audit_chains_req *req,
		   struct svc_audit_head_res *res, struct sbx_error **err);
void svc_audit_head_res_release(struct svc_audit_head_res *res);

/*
 * events: the service's GET /sessions/{id}/events, from the audit (so it
 * survives a restart): the rows of key's chain whose seq is above after,
 * in seq order, at most limit (0: SVC_AUDIT_EVENTS_DEFAULT; at most
 * SVC_AUDIT_EVENTS_MAX, else invalid), and the chain's latest seq (0: no
 * row).  Each event is auditq_events' object: "seq", "at" (float Unix
 * seconds), "op" (the audit's name: the wire maps it), "target", "ok",
 * "detail", "duration_ms", the counts, "agent" and "run" (null: none).
 * A call with a tenant sees only
 * that tenant's rows: another tenant's session reads as one without
 * rows.  It writes no audit row.
 */
#define SVC_AUDIT_EVENTS_DEFAULT 200
#define SVC_AUDIT_EVENTS_MAX 1000
struct svc_audit_events_req {
	const char *key;
	long long after;
	unsigned long limit;
};
struct svc_audit_events_res {
	json_t *events; /* the array, borrowed from doc */
	size_t count;
	long long latest_seq;
	json_t *doc; /* {"events": [...], "latest_seq"} */
};
int svc_audit_events(const struct svc *s, const struct svc_call *call,
		     const struct svc_audit_events_req *req,
		     struct svc_audit_events_res *res, struct sbx_error **err);
void svc_audit_events_res_release(struct svc_audit_events_res *res);

/*
 * The long-running service's audit (svc.h's writer and pool): start the
 * writer (audit-writer.h: rows committed in groups, the spool replayed
 * by itself) and a pool of at most pool_max connections (0:
 * SVC_AUDIT_POOL_DEFAULT; none when no database is configured) for the
 * verbs above; every recorder svc_audit_open makes is then the writer's.
 * Called once, before the service's threads start; stop after they all
 * ended (every queued row committed or spooled, then both freed).
 * writer_stats: the writer's counters for /metrics; false when there is
 * no writer.
 */
#define SVC_AUDIT_POOL_DEFAULT 4
int svc_audit_serve_start(struct svc *s, size_t pool_max,
			  struct sbx_error **err);
void svc_audit_serve_stop(struct svc *s);
/* The audit's types the front ends use, under svc's names. */
typedef struct audit_writer_stats svc_writer_stats;
typedef struct auditq_filter svc_audit_filter;
typedef struct spool_status svc_spool_status;
bool svc_audit_writer_stats(const struct svc *s, svc_writer_stats *st);

/*
 * The table of rows on a terminal (ls, stats' slowest), from the audit's
 * column table (audit.h: a column's head, name, usual, cut): the k-th
 * column a terminal can show (NULL past the last), and a page row's cell
 * of it, appended to out (brief: the usual table's short form, where the
 * column has one).
 */
typedef struct audit_column svc_audit_column;
enum svc_audit_cut { /* a column's cut */
		     SVC_AUDIT_CUT_NEVER = AUDIT_CUT_NEVER,
		     SVC_AUDIT_CUT_MIDDLE = AUDIT_CUT_MIDDLE,
		     SVC_AUDIT_CUT_END = AUDIT_CUT_END,
		     SVC_AUDIT_CUT_FIRST = AUDIT_CUT_FIRST,
};
const svc_audit_column *svc_audit_table_column(size_t k);
void svc_audit_table_cell(const svc_audit_column *c, json_t *row, bool brief,
			  struct strbuf *out);

#endif

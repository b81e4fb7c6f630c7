/*
 * audit.h - the operation audit's rows, and the recorder every workspace
 * operation goes through (brief section 8, docs/audit.md).
 *
 * A row says what was touched and how it went, never what it contained:
 * the path or the command (cut at AUDIT_TARGET_MAX characters, the cut
 * marked), ok, exit status, a byte and a result count, the duration, and
 * one line of detail that sbxcat itself writes.  Every row has a UUID made
 * here, so a replayed row is a no-op, and the time the operation happened.
 *
 * The recorder sends the row to PostgreSQL (auditdb.h) when a database is
 * configured and answers; otherwise to the local append-only spool
 * (spool.h), fsync'd before the operation reports success; when neither
 * takes it, the operation fails with "audit record could not be written:
 * ..." (status 3).  Operations call audit_ready() first, so they fail
 * closed before anything runs, changes or is read.
 *
 * Ownership: a row owns its strings (audit_row_release frees them), but
 * for one filled by audit_column_read, which borrows them.  The recorder
 * copies what it keeps of its configuration.
 *
 * Thread rule: a row, and a recorder (struct audit, with its connection
 * and spool), belong to one thread at a time; each call of the service
 * opens its own recorder (svc_audit_open).  Recorders on different
 * threads share nothing but the spool's files, which flock(2) guards
 * (spool.h), or, in the service, the writer they were opened on
 * (audit-writer.h), which is made to be shared.  The column table, the op names and the configuration once
 * loaded are read-only; nothing here keeps state in a static.
 */
#ifndef SBX_AUDIT_H
#define SBX_AUDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct sbx_error;
struct strbuf;

/* The op column's values, in the order of the CHECK constraint. */
enum audit_op {
	AUDIT_WRITE,
	AUDIT_EDIT,
	AUDIT_READ,
	AUDIT_READ_BYTES,
	AUDIT_LS_INFO,
	AUDIT_GLOB_INFO,
	AUDIT_GREP_RAW,
	AUDIT_EXECUTE,
	AUDIT_OPEN,
	AUDIT_CLOSE,
	AUDIT_REAP,
	AUDIT_STAT,   /* migration 3 */
	AUDIT_REMOVE, /* migration 4 */
	AUDIT_NOPS
};

/* "write", "read_bytes", ...; NULL past AUDIT_NOPS. */
const char *audit_op_name(enum audit_op op);
/* The op named s (exactly as audit_op_name spells it); -1 when none. */
int audit_op_parse(const char *s);
/* The same, also taking the names the service's events give the ops
 * (sandboxd's: exec, ls, glob, grep, exists) as the audit's; -1 when
 * none.  What a filter (--op) takes. */
int audit_op_parse_alias(const char *s);

#define AUDIT_TARGET_MAX 512 /* characters, the cut mark included */
#define AUDIT_DETAIL_MAX 200 /* characters */
#define AUDIT_ID_MAX 200     /* bytes of an agent or run id */
#define AUDIT_NONE (-1LL)    /* bytes, results: not counted */

struct audit_row {
	char id[37];	      /* UUID version 4, lowercase, hyphenated */
	long long created_us; /* when it happened: Unix microseconds */
	char *tenant;	      /* "" when not known (a reaped orphan) */
	char *session_key;
	char *runtime; /* catalogue alias, "" when not known */
	char *agent;   /* NULL: none */
	char *run;     /* NULL: none */
	enum audit_op op;
	char *target; /* clean: see audit_clean */
	bool ok;
	bool has_exit; /* exit_status is meaningful (execute) */
	int exit_status;
	long long bytes;       /* >= 0, or AUDIT_NONE */
	long long results;     /* >= 0, or AUDIT_NONE */
	long long duration_ms; /* >= 0 */
	char *detail;	       /* "" or one line written by sbxcat */
	/* The session's id on the service's wire (sandboxd's, the
	 * platform's), for a session opened there; NULL: none.  Version 2. */
	char *wire_id;
	/* The version of the encoding the row was made for: how its
	 * strings were cleaned and what its hash is of (audit_canonical).
	 * AUDIT_CHAIN_VERSION for a new row; 1 for a spool line written
	 * before version 2 (whose strings kept a backslash as it was). */
	int version;
};

/*
 * A new row for op: a fresh UUID (from getrandom), created_us now, strings
 * empty ("" owned by the row), agent and run NULL, bytes and results
 * AUDIT_NONE.  Strings are then set with audit_row_set, which cleans them.
 */
void audit_row_init(struct audit_row *r, enum audit_op op);
void audit_row_release(struct audit_row *r);

/*
 * Replace *field (one of r's strings) with a clean copy of s[0..len):
 * valid UTF-8 (an invalid byte becomes \xNN), no NUL, control character
 * or bidirectional control (written as text_add_escaped writes them: \n,
 * \t, \xNN, \uNNNN) and a backslash written \\ (so every stored string
 * says one input: a tab is \t, a backslash followed by t is \\t), and at
 * most max characters (max >= 6); when cut, the last characters are
 * " [cut]" so the whole is max characters, or up to 5 fewer when the cut
 * would split an escape (the escape goes whole).  audit_clean appends to
 * out.  Targets use AUDIT_TARGET_MAX, details AUDIT_DETAIL_MAX.  Rows of
 * version 1 were cleaned with the backslash kept as it was.
 */
void audit_clean(struct strbuf *out, const char *s, size_t len, size_t max);

/*
 * A target (a path, a command) cleaned as audit_clean cleans, but when it
 * must be cut its end is kept, not its front: "[cut] " then the last
 * characters that fit, so a path keeps its last component (the name a
 * search looks for) and a command its last arguments.  At most max
 * characters (max >= 6), up to 5 fewer when an escape would straddle the
 * cut (it goes whole).  A clean string of at most max characters is kept
 * as it is, so the result is clean for audit_is_clean too.
 */
void audit_clean_tail(struct strbuf *out, const char *s, size_t len,
		      size_t max);

/* Whether s is what audit_clean would make of some string, at most max
 * characters: its escapes undone and cleaned again, it is s. */
bool audit_is_clean(const char *s, size_t max);
/* Whether s needs no escape but, perhaps, its backslashes: valid UTF-8,
 * no control character or bidirectional control, at most max characters.
 * The rule of an id (agent, run, wire id: kept byte for byte) and of the
 * strings of a row of version 1. */
bool audit_is_plain(const char *s, size_t max);
void audit_row_set(char **field, const char *s, size_t len, size_t max);
/* r->target set from s[0..len) with audit_clean_tail, AUDIT_TARGET_MAX. */
void audit_row_set_target(struct audit_row *r, const char *s, size_t len);

/*
 * The canonical encoding the chain hashes (docs/audit.md, "The chain"),
 * by version: each row's hash is of one version of it, stored with the
 * row (its hash_version column), so a later version (a column added to
 * what the chain covers) leaves older rows verifiable as they were.
 * New rows are hashed with AUDIT_CHAIN_VERSION.
 *
 * Version 1: "sbxcat-audit-1" then, for each field in the order of
 * struct audit_row (id, created_us, tenant, session_key, runtime, agent,
 * run, op, target, ok, exit_status, bytes, results, duration_ms, detail),
 * a newline and either "-" (NULL: agent, run, exit_status when !has_exit,
 * bytes and results when AUDIT_NONE) or the value's byte length in
 * decimal, ':', and the value (numbers in decimal, ok as "t" or "f", op
 * as its name).
 *
 * Version 2: "sbxcat-audit-2" then the fields of version 1 in its order,
 * then wire_id ("-" for NULL), each as version 1 writes them.  Its
 * strings were cleaned with the backslash escaped (audit_clean).
 *
 * audit_canonical appends version's encoding of r to out; -1 (nothing
 * appended) for a version this sbxcat does not know.
 */
#define AUDIT_CHAIN_VERSION 2
int audit_canonical(struct strbuf *out, const struct audit_row *r, int version);
/* SHA-256 of prev (32 bytes) followed by audit_canonical(r, version); -1
 * for a version unknown. */
int audit_chain_hash(const unsigned char prev[32], const struct audit_row *r,
		     int version, unsigned char out[32]);

/*
 * The columns of a row, defined once (audit-column.c; docs/audit.md,
 * "Adding a column"): each with its key (the JSON member, the CSV header,
 * the name the database's reader reads it by), its column in
 * sandbox_operations, its type, where it lives in struct audit_row, and
 * its place on a terminal.  The insert, the verify reader, the page JSON,
 * the CSV export, the spool's JSON and the terminal table are made from
 * it, in this order; what the chain hashes is not (audit_canonical).
 */
enum audit_coltype {
	AUDIT_COL_UUID,	 /* char[37]; uuid */
	AUDIT_COL_TIME,	 /* long long microseconds; timestamptz */
	AUDIT_COL_TEXT,	 /* char *, never NULL; text */
	AUDIT_COL_ID,	 /* char *, NULL: none; text, nullable */
	AUDIT_COL_OP,	 /* enum audit_op; text, its name */
	AUDIT_COL_BOOL,	 /* bool; boolean */
	AUDIT_COL_EXIT,	 /* int, NULL unless has_exit; integer */
	AUDIT_COL_COUNT, /* long long, NULL when AUDIT_NONE; bigint */
	AUDIT_COL_MS,	 /* long long, never NULL; bigint */
};
/* How a terminal cuts a cell too wide for it: never (a time, a number,
 * an op), in the middle (an id: its start and end kept), at the end (a
 * sentence); CUT_FIRST is in the middle too, and before any other. */
enum audit_cut {
	AUDIT_CUT_NEVER,
	AUDIT_CUT_MIDDLE,
	AUDIT_CUT_END,
	AUDIT_CUT_FIRST,
};
struct audit_column {
	const char *key; /* "session" */
	const char *sql; /* "session_key" */
	/* A second column the insert gives the same value (a foreign key
	 * that may be set NULL later: agent_id), or NULL. */
	const char *also;
	enum audit_coltype type;
	size_t offset; /* of its field in struct audit_row */
	/* On a terminal (the command line's table): its header (NULL: not
	 * shown), its name for --columns, whether the usual table shows it
	 * (else -o wide and --columns only), how a cell wider than the
	 * terminal allows is cut, its cell from a page row and, when set,
	 * the short cell the usual table shows instead (brief). */
	const char *head, *name;
	bool usual;
	enum audit_cut cut;
	void (*cell)(const struct audit_column *c, json_t *row,
		     struct strbuf *out);
	void (*brief)(const struct audit_column *c, json_t *row,
		      struct strbuf *out);
};
extern const struct audit_column audit_columns[];
extern const size_t audit_ncolumns;

/* The room audit_column_value needs for a number or a time. */
#define AUDIT_VALUE_MAX 32
/* r's value of c as the database takes it (text; NULL for SQL NULL),
 * in buf or in r. */
const char *audit_column_value(const struct audit_column *c,
			       const struct audit_row *r,
			       char buf[AUDIT_VALUE_MAX]);
/* The expression a reader selects c by, "EXPR AS key" (a time as
 * microseconds), appended to out. */
void audit_column_select(const struct audit_column *c, struct strbuf *out);
/* The inverse of the two: v (what audit_column_select's expression
 * gives; NULL for SQL NULL) into r, a string borrowed, not copied (r is
 * then not the caller's to release).  -1 when v is not a value of c's
 * type (an op sbxcat does not know). */
int audit_column_read(const struct audit_column *c, const char *v,
		      struct audit_row *r);
/* c as an expression of the server's page JSON (json_build_object's
 * value), and as a CSV column ("EXPR AS key"), appended to out. */
void audit_column_json_sql(const struct audit_column *c, struct strbuf *out);
void audit_column_csv_sql(const struct audit_column *c, struct strbuf *out);
/* r's c as audit_row_json has it, and back (strict, as
 * audit_row_from_json says; strings copied into r). */
json_t *audit_column_json(const struct audit_column *c,
			  const struct audit_row *r);
int audit_column_from_json(const struct audit_column *c, json_t *j,
			   struct audit_row *r, struct sbx_error **err);
/* c's cell of a page row (auditq.h's shape) on a terminal, appended to
 * out: its brief form when brief and c has one; nothing for a column not
 * shown. */
void audit_column_cell(const struct audit_column *c, json_t *row, bool brief,
		       struct strbuf *out);

/* Whether id is a lowercase, hyphenated version 4 UUID. */
bool audit_uuid_ok(const char *id);

/* The times a row may hold, in microseconds since 1970: the schema's
 * CHECK, 1970-01-01 to 9999-12-31T23:59:59.999999Z.  The spool, the
 * cursors and --since/--until all keep to them. */
#define AUDIT_US_MIN 0LL
#define AUDIT_US_MAX (253402300799LL * 1000000 + 999999)

/* Now, in microseconds since 1970 (the wall clock: created_at's). */
long long audit_now_us(void);

/*
 * created_at's form: "2026-12-01T10:00:00.123456Z" (UTC, microseconds,
 * years 0001-9999; "out of range" past them).  parse takes exactly that
 * form of a time that exists, and gives back the microseconds it was
 * made from.
 */
void audit_time_format(char out[32], long long us);
bool audit_time_parse(const char *s, long long *us);

/*
 * The row as a JSON object, the spool's and `audit export --format jsonl`'s
 * shape: {"id","created_at" (RFC 3339 UTC with microseconds),"tenant",
 * "session","runtime","agent","run","op","target","ok","exit_status",
 * "bytes","results","duration_ms","detail","wire_id"}, nulls for what is
 * not set.  A line without "wire_id" (written before version 2) is read
 * as a row of version 1.
 */
json_t *audit_row_json(const struct audit_row *r);
/* The inverse, strict: every key, the right types, op known, sizes in
 * range, strings clean (audit_clean would not change them).  -1 status 1
 * naming the key and why; *r is then released (all its strings NULL). */
int audit_row_from_json(json_t *j, struct audit_row *r, struct sbx_error **err);
/*
 * What audit_row_from_json checks after the types, on a row in memory (the
 * spool refuses a row it could not replay): id a lowercase UUID v4,
 * created_us within AUDIT_US_MIN..AUDIT_US_MAX, tenant, session and runtime
 * clean and at most AUDIT_TARGET_MAX characters, agent, run and wire_id NULL
 * or non-empty, at most AUDIT_ID_MAX bytes and plain (audit_is_plain), op
 * known, target and detail clean within their maxima (clean by the rule
 * of the row's version; version known, no wire_id in version 1), bytes and
 * results >= 0 or AUDIT_NONE, duration_ms
 * >= 0. -1 status 1 naming the JSON key.
 */
int audit_row_check(const struct audit_row *r, struct sbx_error **err);

/*
 * The audit's configuration, read once (svc/svc-config.h) from an
 * environment copy (basic/env.h): SBXCAT_AUDIT ("on" or "off"; anything else
 * invalid: audit_config_load's -1, kept by the caller for the first
 * operation that records), the database (SBXCAT_DATABASE_URL, else ""
 * when libpq's own environment names one: PGHOST, PGHOSTADDR, PGPORT,
 * PGDATABASE, PGUSER or PGSERVICE; else NULL, none), PGCONNECT_TIMEOUT,
 * the spool's directory (SBXCAT_SPOOL_DIR, else /var/spool/sbxcat) and
 * its floor and reserve (SBXCAT_SPOOL_MIN_FREE, SBXCAT_SPOOL_RESERVE:
 * whole numbers of bytes; a bad one is kept as limits_err, reported by
 * the first operation that needs the spool, with status 2).  The caller
 * may then set db_override (its own choice of database, `--db`) and
 * db_override_source (what the caller calls it, for `audit status`).
 */
struct sbx_env;
struct audit_config {
	bool off;
	char *db;
	const char *db_source; /* "SBXCAT_DATABASE_URL", "libpq environment" */
	/* The caller's own choice, over db, and its name; NULL: none.
	 * Borrowed. */
	const char *db_override, *db_override_source;
	char *connect_timeout; /* NULL: libpq's default */
	char *spool_dir;
	unsigned long long spool_min_free, spool_reserve;
	struct sbx_error *limits_err;
};
int audit_config_load(struct audit_config *c, const struct sbx_env *env,
		      struct sbx_error **err);
void audit_config_release(struct audit_config *c);
/* The connection string to use: db_override, else db; NULL: no database
 * configured.  *source (may be NULL) says where it came from. */
const char *audit_config_db(const struct audit_config *c, const char **source);

/*
 * The recorder of one command's (one request's) rows, from c (copied
 * where kept: c may go first): the database audit_config_db names, if
 * any, the spool, recording on or off.  agent and run name the rows
 * (NULL: none); they are checked, never looked up: -1 status 2 "agent
 * id: ..." or "run id: ..." for one empty, over AUDIT_ID_MAX bytes or
 * not clean (the caller, which knows where it came from, may say so).
 * Nothing is connected or opened yet: the connection starts here and is
 * finished on first need.
 */
/* An agent or run id: 1 to AUDIT_ID_MAX bytes, plain (audit_is_plain);
 * else invalid, "WHAT: ..." (what names it as the caller knows it). */
int audit_id_check(const char *what, const char *id, struct sbx_error **err);
struct audit;
int audit_open(struct audit **a, const struct audit_config *c,
	       const char *agent, const char *run, struct sbx_error **err);
/*
 * Make sure a row will be written, before an operation acts (runs,
 * changes or reads anything): the spool certain to take it should the
 * database not (spool_ready: its file open, its file system above the
 * floor, its reserve allocated), with a database configured or not.  -1
 * "audit record could not be written: database: ...; spool: ..." (status
 * 3) when the spool is not certain and no database answers; "audit record
 * could not be written should the database fail: spool: ..." (status 3)
 * when one answers; status 2 for a spool limit that is set wrong.
 */
int audit_ready(struct audit *a, struct sbx_error **err);
/*
 * Record r (its agent and run set from a's when NULL): to the database
 * when it answers (replaying a non-empty spool first, so the chain keeps
 * the order rows were made in), else to the spool, fsync'd.  -1 with
 * "audit record could not be written: DATABASE REASON; SPOOL REASON"
 * (status 3) when neither took it.  *where says which took it (may be
 * NULL).
 */
enum audit_where { AUDIT_TO_NOWHERE, AUDIT_TO_DB, AUDIT_TO_SPOOL, AUDIT_OFF };
int audit_record(struct audit *a, struct audit_row *r, enum audit_where *where,
		 struct sbx_error **err);
/* What the user should hear of the audit though the operation went on (a
 * spool that could not be replayed, damaged lines kept aside): -1 with
 * *w once, else 0. */
int audit_warning(struct audit *a, struct sbx_error **w);
void audit_close(struct audit *a);

/*
 * Record one operation (audit_record of a row made from ev): strings
 * cleaned and cut, the detail from why when the operation failed (see
 * audit_detail_of), else ev->detail.  Nothing when recording is off.
 */
struct audit_event {
	enum audit_op op;
	const char *tenant, *session_key, *runtime, *target; /* NULL: "" */
	/* The session's id on the service's wire, or NULL (audit_row). */
	const char *wire_id;
	/* A key asked for that the caller was not found to own (no record,
	 * or another tenant's): never the row's session_key, whose chain
	 * is its record's tenant's; named in the detail instead
	 * (docs/audit.md, "Whose chain"). */
	const char *asked_key;
	bool ok;
	const struct sbx_error *why; /* what made it fail, or NULL */
	const char *detail;	     /* sbxcat's own words, or NULL */
	bool has_exit;
	int exit_status;
	long long bytes, results; /* AUDIT_NONE: not counted */
	long long duration_ms;
};
int audit_event(struct audit *a, const struct audit_event *ev,
		struct sbx_error **err);

/*
 * The detail of a row for an operation that ended in err, in sbxcat's own
 * words, never err's message (which quotes paths and engine text):
 * "refused: REASON" (status 1) or "failed: REASON" (2, 3), REASON being
 * err->reason, else the name of err->errnum ("ENOSPC"), else nothing
 * ("refused").  Appended to out.
 */
void audit_detail_of(struct strbuf *out, const struct sbx_error *err);

#endif

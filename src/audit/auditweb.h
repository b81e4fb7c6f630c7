/*
 * auditweb.h - the queries of the auditor's page (`sbxcat audit web`,
 * docs/audit.md "The auditor's page") that auditq.h does not already
 * make: a session's summary, its timeline, the files it touched, its
 * chain's state, operations per hour; and the read-only role the page
 * connects as (made by `audit migrate --reader`, checked by the page).
 *
 * Tenant rule: every query takes tenant (NULL: an auditor of every
 * tenant) and ANDs it with its own conditions, so another tenant's
 * session reads exactly as one that does not exist.
 *
 * Times in documents are RFC 3339 UTC with six fraction digits, made by
 * the server.  Values reach the server as parameters, never spliced.
 *
 * Thread rule: auditdb.h's (one connection, one thread at a time); every
 * document returned is a new reference, the caller's.
 */
#ifndef SBX_AUDITWEB_H
#define SBX_AUDITWEB_H

#include <jansson.h>
#include <stdbool.h>

struct auditdb;
struct auditq_filter;
struct sbx_error;

/* The tables the reader role reads (and a writer may not write). */
extern const char *const auditweb_tables[];
extern const int auditweb_ntables;

/*
 * The connection made read-only for the page: default_transaction_read_
 * only on and statement_timeout of timeout_ms.  Then whether its role may
 * only read: -1 SBX_E_INVALID naming the privilege and the table (or
 * "superuser", or the table it owns) when it can write; -1 SBX_E_INVALID
 * naming the table when it cannot read one; -1 SBX_E_UNAVAILABLE when the
 * check itself fails.
 */
int auditweb_setup(struct auditdb *db, unsigned timeout_ms,
		   struct sbx_error **err);
int auditweb_role_check(struct auditdb *db, struct sbx_error **err);

/*
 * `audit migrate --reader ROLE`: ROLE made NOLOGIN when missing, given
 * USAGE on the audit's schema and SELECT on auditweb_tables.  A name of
 * [A-Za-z_][A-Za-z0-9_]{0,62} only (-1 SBX_E_INVALID otherwise).
 */
int auditweb_grant_reader(struct auditdb *db, const char *role,
			  struct sbx_error **err);

/*
 * A session by its key or its wire id: 0 and *info {"session" (the key),
 * "wire_id", "tenant", "runtime", "first_at", "last_at", "rows"}; 1 when
 * there is none (of tenant's); -1 on error.
 */
int auditweb_session(struct auditdb *db, const char *id, const char *tenant,
		     json_t **info, struct sbx_error **err);

/*
 * The rows of session key (auditweb_session's "session") whose seq is
 * above after, in seq order, at most limit: *events [{"seq", "at", "op",
 * "target", "ok", "detail", "duration_ms", "exit_status", "bytes",
 * "results"}], *next the last seq when more follow, else -1.
 */
int auditweb_timeline(struct auditdb *db, const char *key, const char *tenant,
		      long long after, unsigned long limit, json_t **events,
		      long long *next, struct sbx_error **err);

/*
 * The paths session key read (read, read_bytes), wrote (write, edit) or
 * removed (remove): *files [{"path", "read", "written", "removed",
 * "last_at"}], most recently touched first, at most max; *truncated when
 * there were more.
 */
int auditweb_files(struct auditdb *db, const char *key, const char *tenant,
		   unsigned long max, json_t **files, bool *truncated,
		   struct sbx_error **err);

/*
 * The chain of session key verified now (auditdb_verify) when it holds
 * at most max_rows rows: *state {"state": "verified"|"broken"|"too_long",
 * "rows", "at_seq" (the first bad row's, or null), "why" (or null)}.
 */
int auditweb_chain(struct auditdb *db, const char *key, const char *tenant,
		   long long max_rows, json_t **state, struct sbx_error **err);

/*
 * Operations per hour over [f->since_us, f->until_us) (both set by the
 * caller, whole hours apart or not: hours are UTC's) matching f, by
 * tenant or by agent: *chart {"since", "until", "hours": [RFC 3339...],
 * "series": [{"key" (null: none; "other" series: key null and "other":
 * true), "ok": [n...], "failed": [n...]}]}: the top keys by count, at
 * most top of them, then the rest as one series.
 */
int auditweb_chart(struct auditdb *db, const struct auditq_filter *f,
		   bool by_agent, int top, json_t **chart,
		   struct sbx_error **err);

#endif

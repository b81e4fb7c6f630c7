/*
 * svc-auditweb.h - the auditor's page's reads (`sbxcat audit web`,
 * docs/audit.md "The auditor's page") over the audit's database: the
 * log's pages (auditq_page), a session's summary, timeline, files and
 * chain state, the chart, the export (auditq_export, with its CSV formula
 * guard) and the live rows (auditq-follow.h).
 *
 * Connections: the page's own, each set up read-only
 * (default_transaction_read_only, a statement timeout of
 * SVC_AUDITWEB_TIMEOUT_MS) and its role checked (may only read: never a
 * superuser, an owner of an audit table, nor a role with INSERT, UPDATE,
 * DELETE or TRUNCATE on one) when it is made; idle ones are kept (at most
 * SVC_AUDITWEB_IDLE) and reused.  A connection found dead when used (the
 * database restarted) is dropped and the read tried once more on a new
 * one, so a restart costs no request an error once the server answers.
 * Nothing is connected before the first read: the page starts while the
 * database is down, and each read then fails SBX_E_UNAVAILABLE (the
 * caller's 503) until it is back.
 *
 * Errors: SBX_E_INVALID for a request's bad value or a role that may
 * write (the message names the privilege and the table); SBX_E_UNAVAILABLE
 * for the database (down, refused, too slow).
 *
 * Ownership: every json_t * returned is a new reference, the caller's;
 * rows handed to a callback are borrowed for the call.
 *
 * Thread rule: a struct svc_auditweb is shared by any number of threads
 * (its idle list is under a mutex); each read uses a connection of its
 * own.
 */
#ifndef SBX_SVC_AUDITWEB_H
#define SBX_SVC_AUDITWEB_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "svc/svc-audit.h"
#include "svc/svc.h"

struct sbx_error;

#define SVC_AUDITWEB_TIMEOUT_MS 5000  /* a statement, at most */
#define SVC_AUDITWEB_IDLE 8	      /* idle connections kept */
#define SVC_AUDITWEB_CHAIN_MAX 100000 /* rows a chain verified on request */
#define SVC_AUDITWEB_FILES_MAX 1000   /* paths of files touched */
#define SVC_AUDITWEB_CHART_TOP 8      /* series of a chart, then "other" */

struct svc_auditweb;

/* The page's reader of s's database (none connected yet): -1 with
 * svc_audit_needs_database's error when none is configured. */
int svc_auditweb_new(const struct svc *s, struct svc_auditweb **w,
		     struct sbx_error **err);
void svc_auditweb_free(struct svc_auditweb *w);

/* Connect now and check the role (what start does): 0; -1 SBX_E_INVALID
 * when the role may write; -1 SBX_E_UNAVAILABLE when the database does
 * not answer (or its schema is older than this sbxcat). */
int svc_auditweb_check(struct svc_auditweb *w, struct sbx_error **err);

/* Whether the database answers now (a connection and the schema's
 * version): 0, or -1 SBX_E_UNAVAILABLE. */
int svc_auditweb_ping(struct svc_auditweb *w, struct sbx_error **err);

/* `audit migrate --reader ROLE` (auditweb.h): on s's database, as the
 * caller's own role. */
int svc_auditweb_grant_reader(const struct svc *s, const char *role,
			      struct sbx_error **err);

/* One page of the log (svc_audit_ls's rows): *rows an array, *next the
 * cursor of the next page or NULL (malloc'd). */
int svc_auditweb_page(struct svc_auditweb *w, const svc_audit_filter *f,
		      unsigned long limit, json_t **rows, char **next,
		      struct sbx_error **err);

/* A session by key or wire id, of tenant (NULL: any): 0 and *info; 1
 * when there is none. */
int svc_auditweb_session(struct svc_auditweb *w, const char *id,
			 const char *tenant, json_t **info,
			 struct sbx_error **err);

/* For a session key auditweb_session found: its events after seq after
 * (at most limit; *next -1 at the end), the files it touched, its
 * chain's state. */
int svc_auditweb_timeline(struct svc_auditweb *w, const char *key,
			  const char *tenant, long long after,
			  unsigned long limit, json_t **events, long long *next,
			  struct sbx_error **err);
int svc_auditweb_files(struct svc_auditweb *w, const char *key,
		       const char *tenant, json_t **files, bool *truncated,
		       struct sbx_error **err);
int svc_auditweb_chain(struct svc_auditweb *w, const char *key,
		       const char *tenant, json_t **state,
		       struct sbx_error **err);

/* Operations per hour over f's since..until (both set), by tenant or
 * agent (auditweb.h's document). */
int svc_auditweb_chart(struct svc_auditweb *w, const svc_audit_filter *f,
		       bool by_agent, json_t **chart, struct sbx_error **err);

/* Every row f matches, as `audit export --format format` ("csv" or
 * "jsonl") writes them, to out; *rows written. */
int svc_auditweb_export(struct svc_auditweb *w, const svc_audit_filter *f,
			const char *format, const struct svc_sink *out,
			unsigned long long *rows, struct sbx_error **err);

/*
 * The rows f matches as they commit (auditq-follow.h), each handed to
 * row, until *cancel is set, max_ms pass (0) or row or tick fails (-1
 * with its error).  tick(arg, up) is called every tick_ms (up: whether
 * the database answers now): its chance to keep the client's connection
 * alive.  A lost connection is waited out (reconnecting every second)
 * while ticks go on with up false.
 */
struct svc_auditweb_live_req {
	svc_audit_filter filter;
	const atomic_int *cancel;
	long long max_ms;
	unsigned tick_ms;
	int (*row)(void *arg, json_t *row, struct sbx_error **err);
	int (*tick)(void *arg, bool up, struct sbx_error **err);
	void *arg;
};
int svc_auditweb_live(struct svc_auditweb *w,
		      const struct svc_auditweb_live_req *req,
		      struct sbx_error **err);

#endif

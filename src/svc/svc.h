/*
 * svc.h - the operations as a library: what the command line and the
 * service both call (brief section 10, docs/hacking.md).
 *
 * One function per operation, in svc/svc-AREA.c, declared in
 * svc/svc-AREA.h: it takes the service (struct svc: the configuration,
 * read once), the call (struct svc_call: who asks, the cancel flag, where
 * warnings go), a request structure, and fills a result structure and,
 * where `--json` prints one, the JSON document (res->doc, the caller's to
 * decref).  It returns 0, or -1 with *err set, whose kind (error.h) the
 * caller maps to an exit or HTTP status.  An operation that fails after
 * it was recorded keeps its row: the row is written here, in svc/, and
 * nowhere else, so no door can forget it.
 *
 * Nothing in svc/ or below prints, reads argv or the environment, raises
 * or handles a signal, or exits.  Output that streams (exec's, a read's
 * bytes, a long listing) goes to a struct svc_sink; progress (prewarm's)
 * to a callback.
 *
 * Thread rule: a struct svc is built by one thread (svc_init) and then
 * read by any number at once; every call makes its own engine handle and
 * audit recorder (or takes one from a pool the service keeps), so calls
 * on different threads share nothing mutable.  A struct svc_call belongs
 * to the thread that makes the call.
 */
#ifndef SBX_SVC_H
#define SBX_SVC_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "svc/svc-config.h"

struct sbx_error;

/*
 * The service: its configuration, loaded once.  writer and pool are the
 * long-running service's (svc_audit_serve_start, svc-audit.h; NULL for
 * the command line): recorders on the writer, the audit's reads on the
 * pool, instead of a connection per call.
 */
struct audit_writer;
struct auditdb_pool;
struct svc_engines;
struct svc {
	struct svc_config cfg;
	struct audit_writer *writer;
	struct auditdb_pool *pool;
	/* The service's engine handles kept between calls (their
	 * connections kept alive, the API version negotiated once); NULL:
	 * a handle per call. */
	struct svc_engines *engines;
};

/* Load the configuration from env (basic/env.h) into s: never fails
 * itself; a setting that is wrong is kept as its area's error and
 * reported by the first operation that needs the area (svc/svc-config.h). */
void svc_init(struct svc *s, const struct sbx_env *env);
void svc_release(struct svc *s);

/*
 * Who asks, and how the call may be stopped.  tenant NULL: every tenant
 * (the host's administrator, as `sbxcat session ls` without --tenant);
 * else the call sees only that tenant's sessions, and another tenant's
 * reads exactly like none.  agent and run name the audit's rows (NULL:
 * none).  cancel, when not NULL, stops the call when it becomes non-zero
 * (its value, a signal number, is kept in the error).  warn, when not
 * NULL, hears what the caller should know though the operation went on
 * (a damaged record skipped, an audit spool that could not be replayed);
 * else that is dropped.
 */
struct svc_call {
	const char *tenant;
	const char *agent, *run;
	const atomic_int *cancel;
	void (*warn)(void *arg, const char *msg);
	void *warn_arg;
};

/* An agent or run id as a call may carry it (the recorder's rule:
 * audit.h): 0, or invalid, "WHAT: why". */
int svc_id_check(const char *what, const char *id, struct sbx_error **err);

/*
 * What a call's cancel flag may hold besides a signal number (> 0): the
 * service's reasons (serve/), which the rows name.
 */
#define SVC_CANCEL_GONE (-1)	 /* the client went away */
#define SVC_CANCEL_STOP (-2)	 /* stopped by a request (a run's stop) */
#define SVC_CANCEL_SHUTDOWN (-3) /* the service stopped past its grace */
/* "the client went away", ..., "a signal" (static). */
const char *svc_cancel_why(int value);

/* Say msg through call->warn, when there is one. */
void svc_warn(const struct svc_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Whether the call is to stop now. */
static inline bool svc_cancelled(const struct svc_call *call)
{
	return call && call->cancel && atomic_load(call->cancel) != 0;
}

/*
 * Where output goes: a descriptor (fd >= 0, written whole, EINTR retried)
 * or a callback (write returns 0, or -1 with *err set).  A sink whose
 * reader left (EPIPE) fails the write with errnum EPIPE, kind
 * unavailable: the caller decides whether that is an error.
 */
struct svc_sink {
	int fd;
	int (*write)(void *arg, const void *buf, size_t len,
		     struct sbx_error **err);
	void *arg;
};
#define SVC_SINK_FD(d) ((struct svc_sink){.fd = (d)})
int svc_sink_write(const struct svc_sink *s, const void *buf, size_t len,
		   struct sbx_error **err);

/*
 * What the operations share, for svc/ alone (the command line never sees
 * an engine, a root or a recorder):
 *
 * svc_root_open: the session area configured (SANDBOXD_SANDBOX_UID,
 * SBXCAT_DEPLOYMENT_ID and the session settings valid, else their error)
 * and the workspace root opened (session.h), its lock waits ended by
 * call->cancel.
 *
 * svc_engine_open: the engine configured, cancelled by call->cancel, its
 * API version negotiated.
 *
 * svc_audit_open: a recorder for the call's rows (its agent and run);
 * svc_audit_close hands the recorder's warning, if any, to call->warn.
 */
struct session_root;
struct engine;
struct audit;
int svc_root_open(const struct svc *s, const struct svc_call *call,
		  struct session_root *root,
		  struct sbx_error **err);
int svc_engine_open(const struct svc *s, const struct svc_call *call,
		    struct engine *e, struct sbx_error **err);
/* The end of a call's use of e: kept for the next call when the service
 * keeps handles (s->engines) and e is whole, else released. */
void svc_engine_close(const struct svc *s, struct engine *e);
/* The service's pool of at most max engine handles (s->engines), and its
 * end (every handle released); the command line keeps none. */
void svc_engines_start(struct svc *s, size_t max);
void svc_engines_stop(struct svc *s);
int svc_audit_open(const struct svc *s, const struct svc_call *call,
		   struct audit **a, struct sbx_error **err);
void svc_audit_close(const struct svc_call *call, struct audit *a);

/*
 * For a service that makes many keys: the key secret (SBXCAT_KEY_SECRET,
 * its file, else ROOT/.sbxcat-key-secret, made on first use) read once
 * into s's configuration, so no call reads the file again.  A command
 * that makes one key need not: each call loads it when missing.
 */
int svc_key_secret_load(struct svc *s, struct sbx_error **err);

/* A time in the documents: Unix seconds as an RFC 3339 UTC string, JSON
 * null for 0 or less (none).  A new reference. */
json_t *svc_time_json(long long t);

#endif

/*
 * session-engine.h - sessions as the engine sees them: the container a
 * session gets (brief section 7, docs/sessions.md), opening one under the
 * quota lock, its state, waking a paused one, closing it; never prints.
 *
 * A session's container is named "sbxcat-DEPLOYMENT-KEY" and labelled
 * with the deployment, tenant, key, runtime and creation time.  A
 * container of that name whose deployment or key label is not ours is
 * never adopted, started, stopped or removed: it is refused.
 *
 * Thread rule: nothing here keeps state; each call uses the engine handle
 * it is given (engine.h: one thread at a time) and reads the
 * configuration only.  Opens on different threads or processes decide
 * quotas one at a time under the quota lock their caller holds
 * (session.h).
 */
#ifndef SBX_SESSION_ENGINE_H
#define SBX_SESSION_ENGINE_H

#include <jansson.h>
#include <stdbool.h>

#include "session/session.h"

struct engine;
struct runtime;
struct sbx_error;

/* The main process's sleep, in seconds: about 68 years. */
#define SESSION_IDLE_SECONDS "2147483647"
#define SESSION_PIDS_LIMIT 512
#define SESSION_NANO_CPUS 2000000000LL
/* /tmp's tmpfs, then ",uid=UID,gid=UID" of the sandbox user: runc (1.1)
 * chmods a tmpfs to the mode of the image's directory under it, mode=
 * or not, so an image whose /tmp is 0755 would leave it unwritable; a
 * /tmp the sandbox user owns is writable whatever the image's mode. */
#define SESSION_TMPFS_OPTS "rw,noexec,nosuid,nodev,size=64m,mode=1777"

/* "sbxcat-DEPLOYMENT-KEY", newly allocated. */
char *session_container_name(const struct session_config *c,
			      const char *key);

/* What a new session is made of. */
struct session_spec {
	const struct session_config *cfg;
	const struct runtime *rt;
	const char *image; /* the runtime's content tag, or its image */
	const char *key, *tenant, *scope, *workspace;
	unsigned long uid; /* 0: the image's own user */
	const char *sleep; /* the idle program's path in the image */
	long long created; /* Unix seconds */
	/* Set by session_engine_open when it adopted or restarted a
	 * container: the image that container runs (free it). */
	char *image_used;
};
/* The POST /containers/create body (new reference). */
json_t *session_container_body(const struct session_spec *s);

/* The reasons (error.h) of the quota refusals of session_engine_open:
 * the tenant's ceiling, the host's. */
#define SESSION_REASON_TENANT_QUOTA "tenant quota"
#define SESSION_REASON_HOST_QUOTA "host quota"
/* The reasons of session_engine_running's refusals: a container that is
 * stopped (or paused), one that is gone. */
#define SESSION_REASON_NOT_RUNNING "not running"
#define SESSION_REASON_GONE "container gone"

enum session_outcome {
	SESSION_CREATED,
	SESSION_ADOPTED,
	SESSION_RESTARTED,
};
const char *session_outcome_name(enum session_outcome o);

/*
 * Open the session of spec (its workspace made already) under the quota
 * lock held by the caller: adopt its running container, start it again
 * when stopped, or create and start a new one (counting quotas first).
 * *id is the container's id (newly allocated).  Refusals are status 1
 * with the messages of docs/sessions.md.
 */
int session_engine_open(struct engine *e, struct session_spec *spec,
			enum session_outcome *outcome, char **id,
			struct sbx_error **err);

/*
 * Inspect the session's container: *inspect NULL when there is none (not
 * an error); refused (status 1) when a container of that name is not
 * this deployment's session of key.
 */
int session_engine_inspect(struct engine *e, const struct session_config *c,
			   const char *key, json_t **inspect,
			   struct sbx_error **err);

/*
 * The session's container, running (not paused): *inspect its inspect.
 * Else status 1, "session 'KEY' is not running (exited)" (or
 * "(OOMKilled)", "(its container is gone)"), with a hint.
 */
int session_engine_running(struct engine *e, const struct session_config *c,
			   const char *key, json_t **inspect,
			   struct sbx_error **err);

/*
 * session_engine_running for an operation that needs the container: a
 * paused one (the reaper's idle pause, reap.h) is unpaused first.  The
 * record rec (as session_find read it) is stamped before the container
 * is looked at when its last activity is at least c->pause_after old (or
 * the container is paused): the reaper pauses only under ROOT/KEY's
 * flock and a stamp it read before, so a pass that decided on the old
 * stamp leaves the session alone, and one that paused it first is undone
 * here.  Refusals as session_engine_running's.
 */
int session_engine_wake(struct engine *e, const struct session_config *c,
			struct session_root *r,
			const struct session_record *rec, json_t **inspect,
			struct sbx_error **err);

/* State.Status of an inspect ("running", ...), "closed" when NULL. */
const char *session_state(json_t *inspect);
/* A state the engine reported, as one of the engine's own words (a
 * static string), or "unknown": what is printed is never its text. */
const char *session_state_word(const char *state);
/* running, paused or restarting: the session holds a quota slot and its
 * container is not to be removed. */
bool session_state_live(const char *state);

/*
 * Every container of this deployment: an object mapping its key label to
 * its inspect summary from the list (new reference).
 */
int session_engine_list(struct engine *e, const struct session_config *c,
			json_t **by_key, struct sbx_error **err);

/* Stop a session's container of state (a paused one unpaused first),
 * SESSION_STOP_SECONDS after SIGTERM the KILL. */
#define SESSION_STOP_SECONDS 2
int session_engine_stop(struct engine *e, const char *id, const char *state,
			struct sbx_error **err);

/*
 * Close: remove the container by force, or only stop it when stop_only
 * (a paused one is unpaused first); *what is "removed", "stopped" or
 * "gone".
 */
int session_engine_close(struct engine *e, const struct session_config *c,
			 const char *key, bool stop_only, const char **what,
			 struct sbx_error **err);

#endif

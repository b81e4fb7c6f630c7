/*
 * session-engine.h - sessions as the engine sees them: the container a
 * session gets (brief section 7, docs/sessions.md), opening one (the
 * count under the quota lock, the start outside it), its state, waking a
 * paused one, closing it; never prints.
 *
 * A session's container is named "sbxcat-DEPLOYMENT-KEY" and labelled
 * with the deployment, tenant, key, runtime and creation time.  A
 * container of that name whose deployment or key label is not ours is
 * never adopted, started, stopped or removed: it is refused.
 *
 * Thread rule: nothing here keeps state; each call uses the engine handle
 * it is given (engine.h: one thread at a time) and reads the
 * configuration only.  Opens on different threads or processes count
 * and reserve one at a time under the quota lock their caller holds
 * (session.h), and create and start side by side.
 */
#ifndef SBX_SESSION_ENGINE_H
#define SBX_SESSION_ENGINE_H

#include <jansson.h>
#include <stdbool.h>

#include "engine/engine.h"
#include "session/session.h"

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

/* "sbxcat-DEPLOYMENT-pool_ID", newly allocated: never a session's name
 * (pool_ID is not a key). */
char *session_pool_container_name(const struct session_config *c,
				  const char *id);
/*
 * The session a container belongs to, from its labels and its name (as
 * the engine gives it, "/" first or not), into key: one of this
 * deployment named sbxcat-DEPLOYMENT-KEY carrying either the key label
 * of that KEY (a cold open's) or a pool's label (a pooled container
 * claimed: renamed to its session's name).  False for everything else:
 * another deployment's, one whose key label and name disagree, a pooled
 * container not yet claimed.
 */
bool session_container_key_of(const struct session_config *c,
			      const struct engine_labels *labels,
			      const char *name, char key[SESSION_KEY_MAX + 1]);

/*
 * Whether a container (its inspect) binds a
 * workspace at its work dir: its label's (SESSION_LABEL_WORK_DIR), else
 * c->work_dir.  One that does not was made by an sbxcat before the work
 * dir (it bound the workspace at its host path) or under another
 * SANDBOXD_WORK_DIR: an open, and an operation's heal, make it again
 * (session_engine_adopt); the files are the host's.
 */
bool session_container_current(const struct session_config *c,
			       const struct engine_container_info *inspect);
/* A container's work dir as its label says (NULL: the configuration's;
 * borrowed from inspect). */
const char *
session_container_work_dir(const struct engine_container_info *inspect);

/* What a new session is made of. */
struct session_spec {
	const struct session_config *cfg;
	const struct runtime *rt;
	const char *image; /* the runtime's content tag, or its image */
	const char *key, *tenant, *scope, *workspace;
	/* Where the container binds the workspace and starts, and its HOME:
	 * NULL, cfg->work_dir (no HOME set: the image's); else labelled
	 * (SESSION_LABEL_WORK_DIR) and adopted or claimed only by an open
	 * of the same. */
	const char *work_dir;
	unsigned long uid; /* 0: the image's own user */
	const char *sleep; /* the idle program's path in the image */
	/* A pooled container's ID (session_pool_new_id), made before any
	 * key: key and tenant NULL, named sbxcat-DEPLOYMENT-pool_ID and
	 * labelled with it instead. */
	const char *pool_id;
	long long created; /* Unix seconds */
	/* Set by session_engine_adopt when it found a container: the
	 * image that container runs (free it). */
	char *image_used;
};
/* What the engine is asked to create for s (engine.h); the strings it
 * points to live in *store until session_container_spec_release. */
struct session_container_store {
	char *user, *tmpfs, *created;
	char **env;
	size_t nenv;
	const char *label_values[6];
	struct engine_bind mount;
};
void session_container_spec(const struct session_spec *s,
			    struct engine_container_spec *out,
			    struct session_container_store *store);
void session_container_spec_release(struct session_container_store *store);

enum session_outcome {
	SESSION_CREATED,
	SESSION_ADOPTED,
	SESSION_RESTARTED,
	SESSION_CLAIMED, /* a container of the warm pool */
	SESSION_WOKEN,	 /* a hibernated session's, started again */
};
const char *session_outcome_name(enum session_outcome o);

/*
 * An open in three steps, so that only the count is under the quota lock:
 *
 * session_engine_adopt looks at the session's container: running,
 * restarting or paused (unpaused now) it is adopted (*adopted, *id its
 * id, outcome "adopted"), and the open needs no slot; stopped (exited,
 * created), *id is set for session_engine_launch to start again; dead or
 * removing, it is removed and *id NULL; none, *id NULL.  One of another
 * runtime is a conflict.
 *
 * session_quota_count, under the quota lock (session_lock), counts the
 * slots taken (records whose container is live, the reservations held:
 * session_reservations, and the pool's containers: session_pool_list),
 * the key's own left out; session_quota_refuse says whether the tenant
 * or the host is at its ceiling; the caller then reserves
 * (session_reserve) and unlocks.
 *
 * session_engine_launch, outside the lock, starts *id again or creates
 * and starts a new container (*id newly allocated).  Refusals are status
 * 1 with the messages of docs/sessions.md.
 */
int session_engine_adopt(struct engine *e, struct session_spec *spec,
			 enum session_outcome *outcome, char **id,
			 bool *adopted, struct sbx_error **err);
struct session_count {
	unsigned all;	 /* slots taken on the host, pooled included */
	unsigned mine;	 /* the tenant's */
	unsigned pooled; /* containers in the warm pool */
	/* The sessions open (SANDBOXD_MAX_OPEN_SESSIONS counts them): the
	 * records whose container is live, the reservations of sessions
	 * (not the pool's fills) and the hibernated sessions, of which
	 * there are hibernated. */
	unsigned open;
	unsigned hibernated;
	/* kept_of's closed workspaces that keep a disk budget. */
	unsigned kept;
};
/* kept_of: the tenant whose kept budgets are counted (NULL: none, and
 * nothing read for them). */
int session_quota_count(struct engine *e, struct session_root *r,
			const struct session_config *c, const char *key,
			const char *tenant, const char *kept_of,
			struct session_count *n, struct sbx_error **err);
/* Refused (SBX_R_TENANT_QUOTA, SBX_R_HOST_QUOTA: n of max held) when n
 * is at a ceiling: the tenant's (tenant NULL: none), the host's. */
int session_quota_refuse(const struct session_config *c, const char *tenant,
			 const struct session_count *n, struct sbx_error **err);
int session_engine_launch(struct engine *e, struct session_spec *spec,
			  enum session_outcome *outcome, char **id,
			  struct sbx_error **err);
/* Refused (status 1, SBX_R_OPEN_QUOTA) when c->max_open is set
 * and n->open is at it. */
int session_open_refuse(const struct session_config *c,
			const struct session_count *n, struct sbx_error **err);

/*
 * The pool's containers: session_engine_pool_make creates and starts the
 * container of spec (pool_id set), *id its id; one that does not start
 * is removed.  session_engine_claim checks that id is pool_id's and
 * running, and renames it to key's session name: from then on it is the
 * session's (session_container_key_of).
 */
int session_engine_pool_make(struct engine *e, struct session_spec *spec,
			     char **id, struct sbx_error **err);
int session_engine_claim(struct engine *e, const struct session_config *c,
			 const char *id, const char *pool_id,
			 const char *work_dir, const char *key,
			 struct sbx_error **err);

/*
 * Inspect the session's container: *inspect NULL when there is none (not
 * an error), else newly allocated (engine_container_info_free); refused
 * (status 1) when a container of that name is not this deployment's
 * session of key.
 */
int session_engine_inspect(struct engine *e, const struct session_config *c,
			   const char *key,
			   struct engine_container_info **inspect,
			   struct sbx_error **err);

/*
 * The session's container, running (not paused): *inspect its inspect.
 * Else status 1, "session 'KEY' is not running (exited)" (or
 * "(OOMKilled)", "(its container is gone)"), with a hint.
 */
int session_engine_running_info(struct engine *e,
				const struct session_config *c, const char *key,
				struct engine_container_info **inspect,
				struct sbx_error **err);

/*
 * session_engine_running_info for an operation that needs the container: a
 * paused one (the reaper's idle pause, reap.h) is unpaused first.  The
 * record rec (as session_find read it) is stamped before the container
 * is looked at when its last activity is at least c->pause_after old (or
 * the container is paused): the reaper pauses only under ROOT/KEY's
 * flock and a stamp it read before, so a pass that decided on the old
 * stamp leaves the session alone, and one that paused it first is undone
 * here.  Refusals as session_engine_running_info's.
 */
int session_engine_wake_info(struct engine *e, const struct session_config *c,
			     struct session_root *r,
			     const struct session_record *rec,
			     struct engine_container_info **inspect,
			     struct sbx_error **err);

/* A session's state as sbxcat says it: SESSION_STATE_HIBERNATED for an
 * exited container whose session has hibernation's mark (session.h),
 * else state (an engine word, or "closed") as it is. */
#define SESSION_STATE_HIBERNATED "hibernated"
const char *session_state_marked(struct session_root *r, const char *key,
				 const char *state);

/* The state of an inspect ("running", ...), "closed" when NULL. */
const char *session_state(const struct engine_container_info *inspect);
/* A state the engine reported, as one of the engine's own words (a
 * static string), or "unknown": what is printed is never its text. */
const char *session_state_word(const char *state);
/* running, paused or restarting: the session holds a quota slot and its
 * container is not to be removed. */
bool session_state_live(const char *state);

/*
 * Every container of this deployment that is a session's, by its key
 * (session_container_key_of): session_list_find gives key's summary or
 * NULL.
 */
struct session_list {
	struct engine_container_summary *all; /* the engine's list */
	size_t nall;
	struct session_list_entry {
		char key[SESSION_KEY_MAX + 1];
		const struct engine_container_summary *sum; /* in all[] */
	} * v;
	size_t n;
};
int session_engine_list(struct engine *e, const struct session_config *c,
			struct session_list *l, struct sbx_error **err);
const struct engine_container_summary *
session_list_find(const struct session_list *l, const char *key);
void session_list_release(struct session_list *l);

/* Stop a session's container of state (a paused one unpaused first),
 * SESSION_STOP_SECONDS after SIGTERM the KILL. */
#define SESSION_STOP_SECONDS 2
int session_engine_stop(struct engine *e, const char *id, const char *state,
			struct sbx_error **err);

/*
 * Whether container id has a command of sbxcat's running within its
 * deadline: 1, 0, or -1 with *err.  An exec stamps the activity when it
 * starts and ends, not while it runs, so a command that runs longer than
 * an idle delay would otherwise look idle.  The engine's ExecIDs are not
 * asked: a process that outlived its deadline would keep an exec
 * "running" for ever.  The exec's cgroup says when it started and its
 * deadline (procs.h); one past min(deadline, start + exec_timeout_s) is
 * killed here, as its watcher would have done, but at once (within
 * SESSION_STOP_GIVE_UP_MS): callers hold the quota lock.
 */
#define SESSION_STOP_GIVE_UP_MS 1000
int session_engine_busy(struct engine *e, const char *id, long long now,
			long long exec_timeout_s, struct sbx_error **err);

/*
 * Hibernation (docs/sessions.md), with the quota lock held, by an open
 * that needs a slot (except: its own key, never chosen), or by a
 * draining host of a fleet (except NULL: any key).
 *
 * session_hibernate_lru: when c->evict_idle_after is set, the least
 * recently used session (its record's last_activity, oldest first) whose
 * container is running or paused and idle for at least that long, with
 * no open or close of it in progress (session_open_trylock) and no
 * command of sbxcat's running in it (session_engine_busy), under its
 * ROOT/KEY flock with the stamp it was chosen on: marked (session.h) and
 * its container stopped (its StopSignal is SIGKILL).  Its record, its
 * workspace and its tokens on the service's wire are kept.  *done says
 * whether one was; *out names it (for the audit row) whether or not the
 * stop failed (-1, the mark removed again).
 *
 * session_close_asleep: the session hibernated longest (its mark's time,
 * oldest first) and not being opened, closed as session close closes it:
 * its container removed (only stopped with SANDBOXD_PERSIST_CONTAINERS),
 * the mark removed, the record stamped, its tokens dropped; its workspace
 * and record stay, unless it is ephemeral (session.h): then its container
 * is removed and ROOT/KEY moved into the trash (out->purged), emptied by
 * the next session_trash_finish (the reaper's), not under the quota lock
 * the caller holds.  *done and *out as above.
 */
struct session_evicted {
	char key[SESSION_KEY_MAX + 1];
	char *tenant, *runtime, *container; /* the container's name */
	long long stamp, since;		    /* last activity; the mark's time */
	bool purged; /* an ephemeral session's ROOT/KEY went with it */
};
void session_evicted_release(struct session_evicted *v);
int session_hibernate_lru(struct engine *e, const struct session_config *c,
			  struct session_root *r, const char *except,
			  long long now, struct session_evicted *out,
			  bool *done, struct sbx_error **err);
int session_close_asleep(struct engine *e, const struct session_config *c,
			 struct session_root *r, const char *except,
			 struct session_evicted *out, bool *done,
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

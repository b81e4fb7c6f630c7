/*
 * reap.h - the lifetimes (brief section 7, docs/lifetimes.md): one pass
 * of the reaper, planned and carried out; never prints.
 *
 * A pass runs under the lock `session open` uses (session_lock), so no
 * session is opened, restarted or purged while it decides and acts.  It
 * lists every container carrying io.sbxcat.deployment with exactly this
 * deployment's value (the engine's filter, then the value checked again
 * here: a container without it is never touched, whatever its name) and
 * reads every session record (without ROOT/KEY's flock: the record is
 * replaced atomically, so a read sees one whole version).  It decides:
 *
 *   pause         a running session container whose record's last
 *                 activity is older than the pause delay (pause_after,
 *                 when set and shorter than the idle timeout) but not the
 *                 idle timeout: frozen (POST /pause), memory and files
 *                 kept; any operation that needs it unpauses it
 *                 (session_engine_wake), host-side file operations do not
 *   stop          a running or paused session container whose record's
 *                 last activity is older than the idle timeout (a paused
 *                 one is unpaused, then stopped); files kept
 *   remove        an exited session container stopped (the later of its
 *                 State.FinishedAt and the last activity) for longer than
 *                 the container TTL; workspace kept
 *   delete        a session unused for longer than the workspace TTL (when
 *                 set) whose container is not running, paused or
 *                 restarting: its container removed, then ROOT/KEY purged
 *   remove-orphan a container of this deployment whose key label has no
 *                 record behind it, created longer ago than the idle
 *                 timeout: removed by force
 *   remove-stuck  a container in state created, dead or removing, created
 *                 longer ago than the idle timeout: removed by force
 *   release       a hibernated session (session.h, docs/sessions.md)
 *                 whose record's last activity is older than the idle
 *                 timeout: closed as an idle one is (tokens dropped, the
 *                 mark removed; its container stays stopped, for the
 *                 container TTL); until then a hibernated session's
 *                 container is not removed by the TTL
 *   closed        a record whose container is gone: shown, nothing done
 *
 * The actions are taken oldest first, at most `limit` of them; the rest
 * are counted in `left`.  Before acting on a session the pass takes the
 * flock of ROOT/KEY (session_keydir_lock) and reads the record again: a
 * last activity that moved since the decision leaves the session alone
 * (`skipped`); so does an idle session whose container has a command of
 * sbxcat's running within its deadline, for a pause as for a stop (its
 * cgroup, procs.h; one past its deadline is stopped then).  A paused
 * session keeps its tokens on the service's wire; a stopped or removed
 * one loses them.  Every age is measured from `now`.
 *
 * Ownership: struct reap_pass owns every string in it; reap_pass_release
 * frees them.
 *
 * Thread rule: a struct reap_pass belongs to one thread; passes in
 * different threads or processes are serialised by the quota lock.
 */
#ifndef SBX_REAP_H
#define SBX_REAP_H

#include <stdbool.h>
#include <stddef.h>

struct engine;
struct sbx_error;
struct session_config;
struct session_root;
struct strbuf;

#define REAP_LIMIT_DEFAULT 100
#define REAP_REPORT_DEFAULT 20

enum reap_what {
	REAP_PAUSE,
	REAP_STOP,
	REAP_REMOVE,
	REAP_DELETE,
	REAP_ORPHAN,
	REAP_STUCK,
	REAP_RELEASE,
	REAP_CLOSED,
};

/* "pause", "stop", "remove", "delete", "remove-orphan", "remove-stuck",
 * "release", "closed". */
const char *reap_what_name(enum reap_what w);

struct reap_action {
	enum reap_what what;
	char *key;	 /* the session's key, or a container's key label, or NULL */
	char *tenant;	 /* the record's tenant and runtime, NULL without one */
	char *runtime;
	char *container; /* the container's name, or NULL when there is none */
	char *id;	 /* its id, or NULL */
	char *state;	 /* its engine state when decided, or NULL */
	char *reason;	 /* "idle for 2h 5m (idle timeout 30m)", ... */
	/* The session's id on the service's wire (session-wire.h), read
	 * before the action (which may delete it), or NULL: none. */
	char *wire_id;
	long long since; /* what the age counts from (Unix seconds) */
	long long age;	 /* now - since */
	long long stamp; /* the record's last_activity when decided; -1 none */
	bool done;
	/* A delete of an ephemeral session idle past the idle timeout (not
	 * of one past the workspace TTL). */
	bool ephemeral;
	const char *skipped; /* static: why it was left alone, or NULL */
	char *error;	     /* why it failed, or NULL */
};

struct reap_pass {
	long long now;
	long long exec_timeout_s; /* SANDBOXD_EXECUTE_TIMEOUT */
	bool dry_run;
	/* The actions taken (or, dry, that would be), oldest first, then the
	 * closed sessions in key order. */
	struct reap_action *acts;
	size_t nacts, alloc;
	size_t left;	  /* actions over the limit, left for the next pass */
	size_t failed;	  /* actions with an error */
	char **warnings;  /* records that could not be read, ... */
	size_t nwarnings, walloc;
	/* Set by the caller: called right after each action is taken or
	 * tried (not dry), with the milliseconds it took, so it is recorded
	 * before the next (a pass killed half-way leaves no action without
	 * its row).  A negative return stops the pass: the actions after it
	 * are left for the next one. */
	int (*acted)(const struct reap_action *a, long long ms, void *arg);
	void *acted_arg;
};

/*
 * One pass at time now (Unix seconds), at most limit actions; dry_run
 * decides and takes nothing.  *p is reset, but for acted and acted_arg.  Returns -1 (with *err) only when the pass
 * could not look (the lock, the engine, the root); an action that fails
 * is recorded in its error and counted in p->failed, and the rest go on.
 */
int reap_pass_run(struct engine *e, const struct session_config *c,
		  struct session_root *r, long long now, size_t limit,
		  bool dry_run, struct reap_pass *p, struct sbx_error **err);
void reap_pass_release(struct reap_pass *p);

/* A workspace's size, for --report. */
struct reap_usage {
	char *key, *tenant;
	unsigned long long bytes, files;
	/* A workspace with a disk budget (session-budget.h): bytes and
	 * files are its file system's own counts (statvfs, no walk), and
	 * these what it allows; 0 without a budget. */
	unsigned long long bytes_allowed, files_allowed;
};
/*
 * The top workspaces by bytes (ties by key), at most top of them, with
 * their records' tenants (NULL when the record cannot be read); no lock,
 * no engine.  Problems with one workspace go into *warnings (strv_free).
 */
int reap_report(struct session_root *r, size_t top, struct reap_usage **v,
		size_t *n, char ***warnings, size_t *nwarnings,
		struct sbx_error **err);
void reap_usage_free(struct reap_usage *v, size_t n);

/* A duration as people read it: "45s", "30m", "2h 5m", "1d 2h", "31d"
 * (the largest unit, and the next one when not zero). */
void reap_add_duration(struct strbuf *sb, long long seconds);

#endif

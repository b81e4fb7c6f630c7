/*
 * procs.h - the processes of one exec, held in a cgroup of their own and
 * stopped from the host side; never prints.
 *
 * Identity comes from something the sandbox cannot edit: cgroup
 * membership.  Each exec gets a cgroup of its own below its container's
 * (PARENT/sbxcat-exec-START-DEADLINE-RANDOM), made by root on the host.
 * Inside the container /sys/fs/cgroup is read-only and root's, so nothing
 * a command does (rewriting its environment, setsid, a double fork,
 * re-parenting to the container's init) takes a process out of it: every
 * child is born in its parent's cgroup.  The deadline is in the name
 * (whole seconds, rounded up, so that nobody acts on it before the exec
 * itself would), so whoever finds the cgroup later (the watcher, the
 * reaper, the next exec) can tell when it expired without trusting
 * anything the sandbox wrote.
 *
 * How a process gets there (procs_group_claim): the engine starts an
 * exec's process in the container's own cgroup.  Under a per-session lock
 * held from the exec's start until its claim (so no other exec of that
 * session starts meanwhile), every process in the container's cgroup
 * except its init and main process is moved into the new group: the
 * exec's process, and anything it forked before the move, orphans
 * included.  Moving and forking are atomic with respect to each other, so
 * repeating until the container's cgroup holds only init and main leaves
 * nothing behind.
 *
 * Two back-ends: cgroup v2 (the unified hierarchy: cgroup.procs,
 * cgroup.freeze, cgroup.kill; also present beside v1 controllers on a
 * hybrid host, where it needs no controller) and, when a container has no
 * v2 cgroup, the v1 freezer hierarchy (freezer.state).  Stopping is TERM
 * to each member, then, after the grace, an atomic kill: cgroup.kill, or
 * freeze, KILL each member, thaw, repeated until none is left; a frozen
 * process cannot fork, so a fork bomb cannot outrun it.  No environment
 * is read and no real-time priority is taken.  Each member is pinned with
 * a pidfd and checked to be still in the group before it is signalled,
 * so a PID reused in between is never hit.
 *
 * Thread rule: the functions keep no state between calls; a struct
 * procs_group is the caller's and may be used by one thread at a time.
 * procs_watch forks: in a process of many threads only the caller's is in
 * the child.
 */
#ifndef SBX_PROCS_H
#define SBX_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sbx_error;

#define PROCS_GROUP_PREFIX "sbxcat-exec-"

struct procs_group {
	int version;  /* 2 (cgroup2) or 1 (the v1 freezer) */
	char *dir;    /* the group's directory, absolute */
	char *parent; /* the container's cgroup directory */
	char *rel;    /* dir relative to its hierarchy, as /proc/PID/cgroup */
	long long start; /* Unix seconds, from the name */
	long long deadline;
};
#define PROCS_GROUP_INIT                                                       \
	{                                                                      \
		0                                                              \
	}

/* Frees the strings; does not touch the cgroup. */
void procs_group_release(struct procs_group *g);

/*
 * The container's cgroup (the one init_pid, its init, is in) for the
 * back-end of version want (0: v2 when the container has one, else v1).
 * Status 3 when neither is mounted here, the process is gone, or the
 * directory is not writable (so a command's deadline could not be
 * enforced: exec runs nothing then).
 */
int procs_container_cgroup(pid_t init_pid, int want, int *version, char **dir,
			   char **rel, struct sbx_error **err);

/*
 * A new, empty group below init_pid's container cgroup, named after
 * start and deadline (Unix seconds) and 64 random bits.  want as above.
 */
int procs_group_create(pid_t init_pid, int want, long long start,
		       long long deadline, struct procs_group *g,
		       struct sbx_error **err);

/*
 * Move every process of the container's own cgroup except init_pid and
 * its main process (its earliest-started child there) into g, repeating
 * until none is left; *moved counts them.  The caller holds the lock that
 * keeps other execs of the container from starting meanwhile.
 */
int procs_group_claim(const struct procs_group *g, pid_t init_pid,
		      size_t *moved, struct sbx_error **err);

/*
 * For a process that must join init_pid's container the way its own
 * processes are (exec-ns.h): on a host that mounts v1 controllers beside
 * cgroup2, each v1 hierarchy's cgroup.procs of init_pid's group, opened
 * for writing (*n of them in *fds, newly allocated; none on a cgroup2-only
 * host).  Status 3 when one cannot be found or opened.
 */
int procs_v1_join_open(pid_t init_pid, int **fds, size_t *n,
		       struct sbx_error **err);

/* The live processes in g (0 when the group is gone). */
int procs_group_count(const struct procs_group *g, size_t *n,
		      struct sbx_error **err);

/*
 * Stop everything in g: SIGTERM to each member, up to grace_ms for them
 * to go, then the atomic kill until none is left or give_up_ms (from the
 * call) has passed.  *killed counts the distinct processes seen and
 * signalled; *left those still there at the end (0 unless it gave up).
 */
int procs_group_stop(const struct procs_group *g, long grace_ms,
		     long give_up_ms, size_t *killed, size_t *left,
		     struct sbx_error **err);

/* rmdir the group; 0 when it is gone, -1 (errno) when not (busy). */
int procs_group_remove(const struct procs_group *g);

/*
 * The exec groups below init_pid's container cgroup (both back-ends).
 * Each group whose deadline, or start + max_s when that is sooner (the
 * configured longest deadline may have shrunk since), is at or before
 * now is stopped and removed, empty or not: killed at once (the TERM
 * and its grace were owed at the deadline, which has passed), trying up
 * to give_up_ms.
 * *busy counts the groups within their deadline that have processes, or
 * that are empty and younger than 30 s (a starting exec's: its command
 * runs in the container's cgroup until its claim); those are left.  An
 * older empty one is removed (its exec is over, what it left has ended).
 * *stopped counts the processes stopped.  A group
 * that cannot be stopped is an error, the others still handled.
 */
int procs_groups_expire(pid_t init_pid, long long now, long long max_s,
			long give_up_ms, size_t *busy, size_t *stopped,
			struct sbx_error **err);

/*
 * The session's deadline watcher, for the processes a command leaves
 * running after it exits: they are stopped at the exec's deadline, not
 * when sbxcat exits.  One detached process (`sbxcat-deadline`, a session
 * of its own, nobody's child) per session, not per exec: it holds an
 * flock of lock_fd's file (the session's watch lock, a description of its
 * own) and, each second, stops every exec group of the container past its
 * deadline (TERM, grace_ms, the kill, give_up_ms) as procs_groups_expire
 * decides it (max_s).  It ends once none is left within its deadline, or
 * with the container's init (pinned by a pidfd).  *pid is the new
 * watcher's, or 0 when another holds the lock: that one sees the new
 * group (it looks at every group, and once more after letting go of the
 * lock).  It holds none of the caller's descriptors and no other lock.
 */
int procs_watch(pid_t init_pid, int lock_fd, long long max_s, long grace_ms,
		long give_up_ms, pid_t *pid, struct sbx_error **err);

/*
 * Can processes be pinned here at all (pidfd_open works)?  Status 3 when
 * not.
 */
int procs_usable(struct sbx_error **err);

/*
 * Is pid gone, a zombie, or exiting (PF_EXITING)?  Killing a PID
 * namespace's init kills its other processes first while init itself is
 * still exiting, then leaves a zombie until its parent reaps it: an exec
 * whose process died can tell "the container is dying" from this before
 * the engine says so.
 */
bool procs_exiting(pid_t pid);

/*
 * pid's start time (field 22 of /proc/PID/stat, clock ticks since boot):
 * with the PID, what tells a process from a later one of the same PID.
 * 0 when it is gone or a zombie.
 */
unsigned long long procs_start_time(pid_t pid);

/*
 * Is pid's container frozen (paused): its v1 freezer group not THAWED,
 * or its cgroup2 group frozen?  True also when that cannot be read.
 */
bool procs_frozen(pid_t pid);

/*
 * How many times the kernel's OOM killer has killed a process in the
 * memory cgroup of pid (the container's init): cgroup v2 memory.events
 * "oom_kill", or v1 memory.oom_control "oom_kill".  -1 with *err when it
 * cannot be read (no memory controller, the process gone).
 */
int procs_oom_kills(pid_t pid, unsigned long long *count,
		    struct sbx_error **err);

#endif

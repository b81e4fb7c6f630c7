/*
 * procs.h - the processes of one exec, found and stopped from the host
 * side; never prints.
 *
 * sbxcat puts a marker, SBXCAT_EXEC=<32 random hex digits>, in the
 * environment of every command it runs in a session (exec's Env).  Every
 * process the command starts inherits it, including those that leave its
 * process group or session (setsid, a double fork, nohup ... &) and are
 * re-parented to the container's init.  The engine is local (the
 * workspace is a bind mount of a host directory), so the container's
 * processes are host processes: procs_find() scans /proc for those in the
 * container's PID namespace (the same /proc/PID/ns/pid as the container's
 * init, State.Pid) whose environment holds the marker, read as root, so a
 * process cannot hide by making itself non-dumpable.  It also takes every
 * descendant of root_pid (the exec's own process, GET /exec/{id}/json
 * Pid), marker or not: a process that scrubbed its environment is still
 * caught while its ancestry holds.
 *
 * Killing is race-free against PID reuse: each process is opened as a
 * pidfd before it is checked, and signalled through that pidfd, so a
 * process that exits and whose PID is reused in between is never hit.
 *
 * What this cannot catch (docs/sessions.md): a process that both leaves
 * the exec's ancestry and overwrites the marker in its own environment
 * before the deadline.
 */
#ifndef SBX_PROCS_H
#define SBX_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sbx_error;

#define PROCS_MARKER_VAR "SBXCAT_EXEC"
/* "SBXCAT_EXEC=" + 32 hex digits */
#define PROCS_MARKER_LEN (sizeof(PROCS_MARKER_VAR) + 32)

/*
 * Can processes be stopped here at all (pidfd_open works)?  exec asks
 * before it runs anything: a command whose deadline cannot be enforced
 * is not started.  Status 3 when not.
 */
int procs_usable(struct sbx_error **err);

/* A new marker "SBXCAT_EXEC=<32 hex>" from getrandom(2), into out. */
int procs_marker(char out[PROCS_MARKER_LEN + 1], struct sbx_error **err);

/*
 * The host PIDs of the processes carrying marker (the whole
 * "SBXCAT_EXEC=..." string, matched as one environment entry) in the PID
 * namespace of init_pid, plus the descendants of root_pid (0: none).
 * *pids is newly allocated.  Status 3 when /proc cannot be read or
 * init_pid is gone.
 *
 * Never returned: init_pid itself, the calling process, zombies (dead,
 * nothing to stop; a zombie leader whose other threads still run is
 * alive and is returned, its environment read through those threads).
 * root_pid may be stale (its PID reused), so its descendants are taken
 * only when it is in the namespace and carries no other exec's marker;
 * when it carries no marker at all (scrubbed), only when init_pid is
 * truly the init of its namespace (NSpid ends in 1), so that a reused
 * init_pid on the host cannot lead to a host process tree.
 */
int procs_find(pid_t init_pid, pid_t root_pid, const char *marker,
	       pid_t **pids, size_t *n, struct sbx_error **err);

/*
 * Stop them all: SIGTERM to each found, wait up to grace_ms for them to
 * go (re-scanning, so that children they start meanwhile are caught),
 * then SIGKILL to each left, re-scanning and killing until a scan finds
 * none or give_up_ms has passed.  *killed counts the distinct processes
 * signalled; *left those found still alive at the end (0 unless it gave
 * up).  give_up_ms counts from the call; at least one KILL round is made
 * when any process outlives the grace.  Each process is pinned with
 * pidfd_open(2) (Linux 5.3) and re-checked (same start time) before it
 * is signalled through pidfd_send_signal(2); without pidfds it fails
 * (status 3) rather than signal a bare PID.  An init_pid that is gone
 * is success with nothing left: the kernel killed its namespace with it.
 */
int procs_stop(pid_t init_pid, pid_t root_pid, const char *marker,
	       long grace_ms, long give_up_ms, size_t *killed, size_t *left,
	       struct sbx_error **err);

/*
 * One scan, and sig to every process found (pinned as procs_stop does);
 * *n counts those it reached.  For a container frozen by the engine
 * (pause), where the scan cannot be outrun: a process that forks faster
 * than /proc can be read (a fork bomb) is caught here, and a SIGKILL
 * sent to a frozen process takes it the moment it thaws.
 */
int procs_signal(pid_t init_pid, pid_t root_pid, const char *marker, int sig,
		 size_t *n, struct sbx_error **err);

/*
 * Is pid gone, a zombie, or exiting (PF_EXITING)?  Killing a PID
 * namespace's init kills its other processes first while init itself is
 * still exiting, then leaves a zombie until its parent reaps it: an exec
 * whose process died can tell "the container is dying" from this before
 * the engine says so.
 */
bool procs_exiting(pid_t pid);

/*
 * How many times the kernel's OOM killer has killed a process in the
 * memory cgroup of pid (the container's init): cgroup v2 memory.events
 * "oom_kill", or v1 memory.oom_control "oom_kill".  -1 with *err when it
 * cannot be read (no memory controller, the process gone).
 */
int procs_oom_kills(pid_t pid, unsigned long long *count,
		    struct sbx_error **err);

#endif

/*
 * exec-ns.h - a command started in a container by the host itself, the
 * way `runc exec` starts one, without the engine (docs/sessions.md "How a
 * command is started"); never prints.
 *
 * The engine's exec costs dockerd, containerd, the shim and a runc
 * process per command (about 90 ms here); this is a fork and an execve
 * (a few ms).  What the command gets is read from the container's init
 * (its PID 1, which runc started with the container's whole
 * configuration), from the host, just before:
 *
 * - its namespaces: all of them, joined through a pidfd of the init in
 *   one setns(2) (mount, cgroup, IPC, UTS, network, PID).  A container
 *   in a user or time namespace of its own is not joined (unfit).
 * - its cgroups: the exec's own group below the container's
 *   (procs.h), and on a host that also mounts v1 controllers the
 *   container's group of each, entered by the forking process before
 *   the command's is forked: the command is born there and is never
 *   anywhere else.
 * - its identity: uid, gid and supplementary groups (all of Uid and Gid
 *   equal: a container whose init has more is unfit), the bounding set,
 *   every other capability set empty (an init holding any capability is
 *   unfit), no_new_privs, the rlimits, the umask, oom_score_adj, and the
 *   LSM label (AppArmor's profile, SELinux's context) when the host has
 *   one.
 * - its seccomp filters, read from the init with
 *   PTRACE_SECCOMP_GET_FILTER (a moment's ptrace-stop of the init, once
 *   per container and process: kept by the init's start time), and
 *   installed last, just before execve, as runc installs them.
 *
 * None of these can be loosened by the sandbox: its processes hold no
 * capability, so it can drop, never add, to what its init has; a sandbox
 * that ptraces its own init makes the filters unreadable, which is unfit
 * (the engine is asked instead), never a command without them.
 *
 * The process that joins (a fork of the caller) lives in the host's PID
 * namespace and exits at once; the command's process is the caller's
 * child (CLONE_PARENT), so its status is the caller's to wait for.
 * Nothing of sbxcat's is inside the container: no socket to connect to,
 * no binary to replace, no process to signal.
 *
 * Thread rule: exec_ns_start may be called by many threads at once; it
 * forks vfork-like (the calling thread waits until the command's execve)
 * and the children make only system calls, so the caller's other
 * threads (and their locks) do not matter.  The caller's SIGCHLD must not be ignored (its children are
 * reaped here and by exec_ns_wait).
 */
#ifndef SBX_EXEC_NS_H
#define SBX_EXEC_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sbx_error;

/* Why the fast path cannot start a command here (the engine can). */
enum exec_ns_unfit {
	EXEC_NS_FIT = 0,
	EXEC_NS_CGROUP,	    /* no cgroup2 group for the exec */
	EXEC_NS_SECCOMP,    /* the init's filters cannot be read */
	EXEC_NS_NAMESPACES, /* a user or time namespace, or setns failed */
	EXEC_NS_LSM,	    /* a label this host's LSM cannot be told */
	EXEC_NS_IDENTITY,   /* the init's ids or capabilities */
	EXEC_NS_START,	    /* the start itself failed before the command */
	EXEC_NS_UNFIT_N,
};
/* "cgroup", "seccomp", "namespaces", "lsm", "identity", "start". */
const char *exec_ns_unfit_name(enum exec_ns_unfit why);

struct exec_ns_req {
	pid_t init_pid;		/* the container's init, on the host */
	const char *group_dir;	/* the exec's cgroup2 group (procs.h) */
	char *const *argv;	/* argv[0] looked up in PATH without a '/' */
	/* The environment as the engine's exec makes it: PATH (a default
	 * when cfg_env has none), HOSTNAME, cfg_env (the container's
	 * Config.Env), env (the request's), each replacing what came
	 * before by name; then HOME, when none, from the container's
	 * /etc/passwd ("/" when its uid has no entry), as runc does. */
	const char *const *cfg_env;
	size_t ncfg;
	const char *hostname;
	const char *const *env;
	size_t nenv;
	const char *cwd; /* in the container; resolved by the caller */
	bool want_stdin;
};

struct exec_ns_proc {
	pid_t pid;	/* the command's process (the caller's child), or 0 */
	int pidfd;	/* readable once it has exited */
	int in_fd;	/* its stdin's write end, or -1 */
	int out_fd[2];	/* its stdout's and stderr's read ends */
	/* Not 0: the command was not started (pid 0, nothing of it ran):
	 * execve's errno (ENOENT: not found), or chdir's; why says it in
	 * the engine's words. */
	int exec_errno;
	char why[256];
};
#define EXEC_NS_PROC_INIT                                                      \
	{                                                                      \
		.pidfd = -1, .in_fd = -1, .out_fd = { -1, -1 }                 \
	}

/*
 * Start req's command.  0: started (p->pid), or not startable as the
 * engine would also refuse (p->exec_errno); -1 with *why (not FIT) and
 * *err when the fast path cannot be used here: nothing of the command
 * ran, the caller may ask the engine.
 */
int exec_ns_start(const struct exec_ns_req *req, struct exec_ns_proc *p,
		  enum exec_ns_unfit *why, struct sbx_error **err);

/*
 * Reap the command (it has exited: p->pidfd was readable, or its group
 * was stopped), waiting up to wait_ms: *status as a shell gives it (the
 * exit code, 128 + a signal).  -1 when it has not ended by then.
 */
int exec_ns_wait(struct exec_ns_proc *p, long wait_ms, int *status);

/* Close what is left open of p (not the process: exec_ns_wait). */
void exec_ns_release(struct exec_ns_proc *p);

#endif

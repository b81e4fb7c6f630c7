/*
 * svc-exec.h - a command run in a session, with a deadline that holds
 * (brief section 7, docs/sessions.md "Deadlines"): the operation the
 * command line's `sbxcat exec` and the service's exec routes call.
 *
 * The command runs as the session's user, in the workspace, in a cgroup
 * of its own (session/procs.h) that every process it starts is born in
 * and cannot leave; its output streams to the request's sinks as it
 * comes, cut per stream at max_output; at the deadline, or when the
 * call's cancel flag is raised, everything it started is stopped.  What a
 * command that exited left running runs on until its deadline, watched.
 * The one audit row is written here.
 *
 * Thread rule: as svc.h.  A process that calls this with processes left
 * running forks a watcher (procs_watch); SIGPIPE must be ignored by the
 * caller when a sink is a pipe or a socket (the write then fails with
 * EPIPE, which ends the exec as "output closed").
 */
#ifndef SBX_SVC_EXEC_H
#define SBX_SVC_EXEC_H

#include <stdbool.h>
#include <stddef.h>

#include "svc/svc.h"

struct svc_exec_req {
	const char *key;
	/* The command: a shell string run by /bin/sh -c, or argv[0..argc). */
	const char *shell;
	char *const *argv;
	int argc;
	int in_fd;		       /* its stdin, or -1 for none */
	/* Its stdout and stderr.  A descriptor is written as it can take
	 * it, never past the deadline; a callback is waited for (exec-io.h),
	 * so one whose reader can stall must bound its own wait. */
	struct svc_sink out, err;
	unsigned long long timeout_s;  /* 0: the configured; else the less */
	unsigned long long max_output; /* per stream; 0: the configured */
};

/* How a command that was started ended. */
enum svc_exec_end {
	SVC_EXEC_EXITED,	/* exit_code says how */
	SVC_EXEC_TIMED_OUT,	/* stopped at its deadline */
	SVC_EXEC_CANCELLED,	/* stopped by the call's cancel flag */
	SVC_EXEC_OUTPUT_CLOSED, /* its output's reader left (EPIPE): stopped */
};

struct svc_exec_res {
	bool ended; /* the command ran to one of the ends below */
	enum svc_exec_end end;
	/* EXITED: the command's status; 126 when it could not be invoked,
	 * 127 when not found (the engine's reason in not_started, escaped,
	 * when it never had a process). */
	int exit_code;
	bool by_command; /* the status is the command's own exit */
	char *not_started;
	bool oom;		 /* killed by the out-of-memory killer */
	long long memory_limit;	 /* the container's, bytes (for oom) */
	long long limit_s;	 /* the deadline it had, seconds */
	size_t stopped;		 /* processes stopped (deadline, cancel) */
	size_t left_running;	 /* left running until the deadline */
	unsigned long long bytes[2]; /* every byte it wrote, per stream */
	bool cut[2];		     /* a stream cut at max_output */
	unsigned long long max_output;
	/* -1 returns: the signal-free detail the row got. */
};

/*
 * Run it.  0 when the command ran to an end and its row is written; -1
 * with *err when sbxcat could not run it (res->ended false: no session,
 * not running, the engine, the audit not ready) or when it ended but its
 * row could not be written (res->ended true).  A row is written whenever
 * the audit was ready, failure or not.
 */
int svc_exec(const struct svc *s, const struct svc_call *call,
	     const struct svc_exec_req *req, struct svc_exec_res *res,
	     struct sbx_error **err);
void svc_exec_res_release(struct svc_exec_res *res);

#endif

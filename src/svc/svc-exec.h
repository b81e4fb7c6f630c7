/*
 * svc-exec.h - a command run in a session, with a deadline that holds
 * (brief section 7, docs/sessions.md "Deadlines"): the operation the
 * command line's `sbxcat exec` and the service's exec routes call.
 *
 * The command runs as the session's user, in the workspace, in a cgroup
 * of its own (exec/procs.h) that every process it starts is born in
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
	unsigned long long timeout_ms; /* 0: the configured; else the less */
	/* timeout_ms even past the configured deadline, and a group that
	 * another exec's expiry and the reaper leave alone until then: a
	 * process that serves many requests (svc-interp.h), which bounds
	 * its own life. */
	bool outlive;
	unsigned long long max_output; /* per stream; 0: the configured */
	/* Its environment besides the container's: nenv "NAME=VALUE"
	 * (svc_exec_env_check's rules), given to the engine's exec and to
	 * nothing else: never a row, a log line or a message (a name may be
	 * named, a value never). */
	const char *const *env;
	size_t nenv;
	/* Its working directory: NULL, the workspace; else a path relative
	 * to the workspace, or absolute inside it as the container sees it,
	 * resolved on the host beneath it (workspace.h) and a directory. */
	const char *cwd;
	/* An id another process stops it by (svc_exec_stop), or NULL. */
	const char *run_id;
};

/* How a command that was started ended. */
enum svc_exec_end {
	SVC_EXEC_EXITED,	/* exit_code says how */
	SVC_EXEC_TIMED_OUT,	/* stopped at its deadline */
	SVC_EXEC_CANCELLED,	/* stopped by the call's cancel flag */
	SVC_EXEC_OUTPUT_CLOSED, /* its output's reader left (EPIPE): stopped */
	SVC_EXEC_STOPPED,	/* stopped by its run id (svc_exec_stop) */
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
	long long limit_ms;	 /* the deadline it had, milliseconds */
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

/*
 * Ask the run of KEY whose id is run_id (req->run_id of an exec in any
 * process) to stop, and wait up to wait_ms for it to end: its processes
 * are stopped as at a deadline and its row says "stopped by its run id".
 * 0 whether or not it was running (*running says; *ended whether it has
 * ended by the return: a stop is idempotent); -1 with *err when the
 * session is not the caller's or the runs cannot be looked at.  No row of
 * its own: the run's row says it was stopped.
 */
int svc_exec_stop(const struct svc *s, const struct svc_call *call,
		  const char *key, const char *run_id, long long wait_ms,
		  bool *running, bool *ended, struct sbx_error **err);

/*
 * How commands were started since the process began: the fast way
 * (docs/sessions.md "How a command is started") or through the engine,
 * and how often the fast way was passed over, by reason ("cgroup",
 * "seccomp", "namespaces", "lsm", "identity", "start").
 */
#define SVC_EXEC_FALLBACK_MAX 8
struct svc_exec_stats {
	unsigned long long fast, engine;
	struct {
		const char *reason;
		unsigned long long n;
	} fallback[SVC_EXEC_FALLBACK_MAX];
	size_t nfallback;
};
void svc_exec_stats(struct svc_exec_stats *st);

/* The limits of an exec's environment (svc_exec_env_check). */
#define SVC_EXEC_ENV_NAME_MAX 256
#define SVC_EXEC_ENV_VALUE_MAX (32 << 10)
#define SVC_EXEC_ENV_COUNT_MAX 128
#define SVC_EXEC_ENV_TOTAL_MAX (256 << 10)

/*
 * Check n "NAME=VALUE" entries: NAME [A-Za-z_][A-Za-z0-9_]*, at most 256
 * bytes, not given twice; VALUE valid UTF-8 without NUL, at most 32 KiB;
 * at most 128 entries and 256 KiB in all.  -1 with *err (invalid, reason
 * "bad environment") naming the entry or its name, never its value.
 */
int svc_exec_env_check(const char *const *env, size_t n,
		       struct sbx_error **err);
/*
 * A deadline as a person writes it, in seconds: digits with an optional
 * fraction ("30", "0.2", ".5", "1.25"), more than 0 and at most 7 days,
 * into *ms (a fraction of a millisecond rounds up).  -1 with *err
 * (invalid) for anything else: a sign, an exponent, "nan", "inf", "".
 */
int svc_exec_seconds_parse(const char *s, unsigned long long *ms,
			   struct sbx_error **err);
/* ms as seconds, as few digits as it needs ("30", "0.5", "1.25"). */
const char *svc_exec_seconds(char buf[32], long long ms);

#endif

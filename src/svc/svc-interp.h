/*
 * svc-interp.h - persistent Python interpreters in a session, for E2B's
 * code interpreter (serve/e2b-code.c, docs/e2b.md): variables kept
 * between executions as in a Jupyter kernel.
 *
 * An interpreter is one long exec (svc_exec, svc_exec_req.outlive) of
 * `python3 -u -c BOOTSTRAP` as the session's user, on a thread of its
 * own: sbxcat writes the driver (interp-driver.py, embedded) and then
 * one request at a time to the exec's stdin, and reads the driver's
 * replies from its stdout.  Everything the driver writes is the
 * sandbox's, so hostile: a reply line is bounded (longer ones dropped),
 * parsed, and only E2B's shapes with fields of the right types are kept
 * and re-encoded; an execution's output is bounded (max_output); one
 * that does not end at its deadline is interrupted (KeyboardInterrupt),
 * and one that still runs past the grace has its interpreter stopped,
 * and with it every process it started (the exec's cgroup).  A driver
 * that died, was stopped or found no python3 is an interpreter ended:
 * svc_interp_alive says so and the caller starts a new one.
 *
 * The driver ends itself after idle_s without a request, and when its
 * stdin closes (svc_interp_free, sbxcat gone); it dies with its session's
 * container (close, kill, the reaper), which ends the exec.
 *
 * Ownership: svc_interp_start returns an interpreter the caller frees
 * with svc_interp_free (which stops it and joins its thread); s must
 * stay valid until then (the service holds its snapshot).  Thread rule:
 * one svc_interp_run at a time per interpreter (the caller's rule); the
 * rest is locked inside.  The output's callback runs on the caller's
 * thread.
 */
#ifndef SBX_SVC_INTERP_H
#define SBX_SVC_INTERP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "svc/svc.h"

struct svc_interp;

struct svc_interp_start_req {
	const char *key; /* the session */
	/* The interpreter's environment (svc_exec_env_check's rules). */
	const char *const *env;
	size_t nenv;
	/* Its working directory, changed to by the driver (anywhere the
	 * session's user may); NULL: the workspace. */
	const char *cwd;
	/* The driver ends after this long without a request; 0: the
	 * session's idle timeout. */
	long long idle_s;
	/* Warnings of the interpreter's exec, from its own thread. */
	void (*warn)(void *arg, const char *msg);
	void *warn_arg;
};

/* Why an interpreter could not be started (svc_interp_start's -1). */
enum svc_interp_fail {
	SVC_INTERP_FAIL_ERROR,	   /* *err says */
	SVC_INTERP_FAIL_NO_PYTHON, /* the runtime has no python3 */
	SVC_INTERP_FAIL_CWD,	   /* the driver could not change to cwd */
};

/*
 * Start one: 0 once its driver said it is ready (at most 30 s); -1 with
 * *why, and *err for SVC_INTERP_FAIL_ERROR.  call gives who (copied);
 * its cancel flag ends the wait, not the interpreter.
 */
int svc_interp_start(const struct svc *s, const struct svc_call *call,
		     const struct svc_interp_start_req *req,
		     struct svc_interp **out, enum svc_interp_fail *why,
		     struct sbx_error **err);
/* Stop it (stdin closed, then its exec cancelled), join, free.  NULL: no-op. */
void svc_interp_free(struct svc_interp *ip);
/* Whether it still runs (its exec has not ended). */
bool svc_interp_alive(struct svc_interp *ip);

struct svc_interp_run_req {
	const char *code; /* valid UTF-8 (the caller's JSON string) */
	/* Variables set in os.environ for this execution only (an object
	 * of strings, borrowed), or NULL. */
	json_t *env;
	unsigned long long timeout_ms; /* 0: the configured exec deadline */
	unsigned long long max_output; /* 0: the configured, per execution */
	/*
	 * Each line as it comes, an object of E2B's shapes (borrowed):
	 * stdout, stderr (text, timestamp), result, error,
	 * number_of_executions.  Non-zero to stop: the execution is
	 * interrupted (the client went away).
	 */
	int (*emit)(void *arg, json_t *line);
	void *emit_arg;
};

enum svc_interp_end {
	SVC_INTERP_DONE,	/* ran to its end (with an error or not) */
	SVC_INTERP_INTERRUPTED, /* interrupted at its deadline or by emit */
	SVC_INTERP_KILLED,	/* did not stop when interrupted: the
				 * interpreter was stopped, variables gone */
	SVC_INTERP_DIED,	/* the interpreter ended under it */
};

struct svc_interp_run_res {
	enum svc_interp_end end;
	bool raised;		  /* an error line was given */
	bool cut;		  /* output past max_output was dropped */
	unsigned long long bytes; /* output text given, bytes */
	long long limit_ms;
};

/*
 * Run code: its lines to req->emit as they come, then its row (op
 * execute, target "python: " and the code's first line).  0 when it ran
 * (any end), -1 with *err when it could not be sent or its row not
 * written.
 */
int svc_interp_run(struct svc_interp *ip, const struct svc_call *call,
		   const struct svc_interp_run_req *req,
		   struct svc_interp_run_res *res, struct sbx_error **err);

/* The longest reply line kept, and the most lines waiting. */
#define SVC_INTERP_LINE_MAX (4u << 20)

#endif

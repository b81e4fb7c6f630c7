/*
 * e2b-procs.h - the processes envd's process service knows of
 * (e2b-process.c, docs/e2b.md "Commands"): per sandbox, the commands
 * started through process.Process/Start that still run, so List, SendSignal,
 * SendInput and CloseStdin find them by pid or tag.
 *
 * A pid is sbxcat's, not the kernel's: a counter per sandbox, from 1,
 * never given twice while the service runs (the sandbox ids the table
 * forgets first are those with nothing running, and only past
 * E2B_PROCS_SANDBOXES of them).  A process is in the table from its
 * Start's start event to the end of its command.
 *
 * Ownership: e2b_procs_add takes a new process with one reference (the
 * Start's); e2b_procs_get gives one more; e2b_procs_put drops one, the
 * last frees it.  Its stdin's write end is closed by e2b_procs_del (the
 * command ended) or CloseStdin, under its in_lock.
 *
 * Thread rule: every function may be called by any thread at once (one
 * lock over the table; a process's stdin under its own in_lock, never
 * taken while the table's is held).
 */
#ifndef SBX_E2B_PROCS_H
#define SBX_E2B_PROCS_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "serve/e2b.h"

/* Running processes a sandbox may have, and sandboxes the table keeps
 * counters of. */
#define E2B_PROCS_MAX 64
#define E2B_PROCS_SANDBOXES 4096

struct e2b_proc {
	char sandbox[E2B_ID_MAX + 1];
	unsigned pid;
	char *tag;	/* or NULL */
	json_t *config; /* ProcessConfig as List answers it */
	bool has_stdin;
	/* The command's cancel flag (its svc_call's): SendSignal raises
	 * it (SVC_CANCEL_STOP), the Start's client going away too. */
	atomic_int stop;
	pthread_mutex_t in_lock;
	int in_fd;	/* stdin's write end, -1 once closed (or none) */
	bool in_closed; /* CloseStdin was asked */
	/* The table's. */
	int refs;
	bool listed;
	struct e2b_proc *next;
};

/* A new process of sandbox (config and tag taken: stolen), its pid
 * given; NULL when the sandbox runs E2B_PROCS_MAX already. */
struct e2b_proc *e2b_procs_add(const char *sandbox, json_t *config, char *tag,
			       bool has_stdin, int in_fd);
/* Out of the table (its command ended): stdin closed, the caller's
 * reference dropped. */
void e2b_procs_del(struct e2b_proc *p);
/* The running process of sandbox by pid (tag NULL) or tag, with a
 * reference, or NULL. */
struct e2b_proc *e2b_procs_get(const char *sandbox, unsigned pid,
			       const char *tag);
void e2b_procs_put(struct e2b_proc *p);
/* List's processes of sandbox: [{config, pid, tag}]. */
json_t *e2b_procs_list(const char *sandbox);

/* Whether the sandbox is known to have no /bin/bash (a command that
 * asked for it was found missing), and learning it. */
bool e2b_procs_no_bash(const char *sandbox);
void e2b_procs_no_bash_set(const char *sandbox);

#endif

/*
 * session-runs.h - a session's runs that have an id: ROOT/KEY/runs, a
 * directory of root's (0700, the sandbox reaches it not), holding one
 * file per run as exec/runs.h keeps them; never prints.  Every begin, end
 * and stop takes the directory's own flock for its few syscalls.
 *
 * Thread rule: as exec/runs.h.
 */
#ifndef SBX_SESSION_RUNS_H
#define SBX_SESSION_RUNS_H

#include <stdbool.h>

#include "exec/runs.h"
#include "session/session.h"

#define SESSION_RUN_ID_MAX EXEC_RUN_ID_MAX

/* Whether id is a run id ([A-Za-z0-9_-]{1,64}). */
bool session_run_id_valid(const char *id);

/*
 * Make ROOT/KEY/runs/ID and hold it: its descriptor, or -1 with *err
 * (conflict, reason "run running", when that id runs already).
 */
int session_run_begin(struct session_root *r, const char *key, const char *id,
		      struct sbx_error **err);
/* Whether the run's file on fd says stop. */
bool session_run_stop_asked(int fd);
/* The run ended: its file removed and fd closed (fd < 0: nothing). */
void session_run_end(struct session_root *r, const char *key, const char *id,
		     int fd);

/*
 * Ask run ID of KEY to stop, then wait up to wait_ms for it to end (0:
 * not at all).  *running says whether it was in flight when asked;
 * *ended whether it has ended by the return (true when it was not
 * running).  -1 with *err only when the runs cannot be looked at.
 */
int session_run_stop(struct session_root *r, const char *key, const char *id,
		     long long wait_ms, bool *running, bool *ended,
		     struct sbx_error **err);

#endif

/*
 * runs.h - the runs of a session that have an id (`sbxcat exec --run-id`,
 * the service's /run with run_id), so that another process can stop one:
 * ROOT/KEY/runs/ID, a file of root's (0600, in a directory of root's,
 * 0700, the sandbox reaches neither) made O_EXCL|O_NOFOLLOW and flocked
 * by the exec that runs for its whole life; never prints.
 *
 * The file's first byte is '0' while the run may go on and '1' once a
 * stopper asked it to stop (session_run_stop writes it); the exec looks at
 * it between reads of its stream (session_run_stop_asked) and stops the
 * command as at a cancel.  Whether a run is in flight is whether its
 * file's lock is held: a file whose lock is free is stale (its exec died)
 * and is removed by the next begin or stop of that id.  Every begin, end
 * and stop takes ROOT/KEY/runs's own flock for its few syscalls, so a
 * file is never seen between its making and its lock, nor removed by one
 * while another makes it anew.
 *
 * An id is [A-Za-z0-9_-]{1,64}: never a path.
 *
 * Thread rule: nothing here keeps state; a run's descriptor belongs to
 * the thread of its exec.
 */
#ifndef SBX_RUNS_H
#define SBX_RUNS_H

#include <stdbool.h>

#include "session/session.h"

#define SESSION_RUN_ID_MAX 64

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

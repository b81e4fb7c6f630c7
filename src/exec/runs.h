/*
 * runs.h - the runs of an exec that have an id (`sbxcat exec --run-id`,
 * the service's /run with run_id), so that another process can stop one:
 * a file ID in a directory of root's (0600 in 0700: for a session,
 * ROOT/KEY/runs, which session/session-runs.h opens and locks), made
 * O_EXCL|O_NOFOLLOW and flocked by the exec that runs for its whole
 * life; never prints.
 *
 * The file's first byte is '0' while the run may go on and '1' once a
 * stopper asked it to stop (exec_run_ask_stop writes it); the exec looks
 * at it between reads of its output (exec_run_stop_asked) and stops the
 * command as at a cancel.  Whether a run is in flight is whether its
 * file's lock is held: a file whose lock is free is stale (its exec died)
 * and is removed by the next begin or stop of that id.  The caller holds
 * the directory's own flock for each call that takes dfd, so a file is
 * never seen between its making and its lock, nor removed by one while
 * another makes it anew.
 *
 * An id is [A-Za-z0-9_-]{1,64}: never a path.
 *
 * Thread rule: nothing here keeps state; a run's descriptor belongs to
 * the thread of its exec.
 */
#ifndef SBX_EXEC_RUNS_H
#define SBX_EXEC_RUNS_H

#include <stdatomic.h>
#include <stdbool.h>

struct sbx_error;

#define EXEC_RUN_ID_MAX 64

/* Whether id is a run id ([A-Za-z0-9_-]{1,64}). */
bool exec_run_id_valid(const char *id);
/* -1 with *err (invalid) when id is not a run id. */
int exec_run_id_check(const char *id, struct sbx_error **err);

/*
 * Make dfd's ID and hold it: its descriptor, or -1 with *err (conflict,
 * reason "run running", when that id runs already).  shown names the
 * directory in messages.
 */
int exec_run_make(int dfd, const char *shown, const char *id,
		  struct sbx_error **err);
/* Whether the run's file on fd says stop. */
bool exec_run_stop_asked(int fd);
/* The run ended: its file removed from dfd when it is still the one fd
 * holds (dfd < 0: not removed), and fd closed (fd < 0: nothing). */
void exec_run_end(int dfd, const char *id, int fd);

/*
 * Ask dfd's run ID to stop: its file's descriptor (the caller waits with
 * exec_run_wait, then closes it), or -1: not running (no *err), or with
 * *err when it cannot be asked.
 */
int exec_run_ask_stop(int dfd, const char *id, struct sbx_error **err);
/* Wait up to wait_ms for the run on fd (exec_run_ask_stop's) to end, or
 * *cancel (may be NULL) to be raised: whether it ended. */
bool exec_run_wait(int fd, long long wait_ms, const atomic_int *cancel);

#endif

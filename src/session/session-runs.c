/*
 * session-runs.c - ROOT/KEY/runs, a session's runs that have an id
 * (session-runs.h) over exec/runs.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/alloc.h"
#include "session/session-layout.h"
#include "session/session-runs.h"

#define RUNS_NAME "runs"

bool session_run_id_valid(const char *id)
{
	return exec_run_id_valid(id);
}

/* ROOT/KEY/runs, made when missing when make, and flocked: its descriptor
 * (the lock's), or -1: with *err, or without (missing, !make). */
static int runs_lock(struct session_root *r, const char *key, bool make,
		     struct sbx_error **err)
{
	int kfd = session_keydir_open(r, key, err), fd;
	struct stat st;

	if (kfd < 0)
		return -1;
	if (make && mkdirat(kfd, RUNS_NAME, 0700) < 0 && errno != EEXIST) {
		int e = errno;

		close(kfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot make '%s/%s/%s'", r->path, key,
				     RUNS_NAME);
	}
	fd = openat(kfd, RUNS_NAME,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	close(kfd);
	if (fd < 0 && errno == ENOENT && !make)
		return -1;
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/%s/%s'", r->path, key,
				     RUNS_NAME);
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 077)) {
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/%s/%s' is not a directory of root's "
				     "with mode 0700",
				     r->path, key, RUNS_NAME);
	}
	if (session_lock_wait(r, fd, r->path, key, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int session_run_begin(struct session_root *r, const char *key, const char *id,
		      struct sbx_error **err)
{
	char *shown;
	int dfd, fd;

	if (exec_run_id_check(id, err) < 0)
		return -1;
	dfd = runs_lock(r, key, true, err);
	if (dfd < 0)
		return -1;
	shown = xasprintf("session '%s'", key);
	fd = exec_run_make(dfd, shown, id, err);
	free(shown);
	close(dfd);
	return fd;
}

bool session_run_stop_asked(int fd)
{
	return exec_run_stop_asked(fd);
}

void session_run_end(struct session_root *r, const char *key, const char *id,
		     int fd)
{
	struct sbx_error *err = NULL;
	int dfd;

	if (fd < 0)
		return;
	dfd = runs_lock(r, key, false, &err);
	sbx_error_free(&err);
	exec_run_end(dfd, id, fd);
	if (dfd >= 0)
		close(dfd);
}

int session_run_stop(struct session_root *r, const char *key, const char *id,
		     long long wait_ms, bool *running, bool *ended,
		     struct sbx_error **err)
{
	int dfd, fd;

	*running = false;
	*ended = true;
	if (exec_run_id_check(id, err) < 0)
		return -1;
	dfd = runs_lock(r, key, false, err);
	if (dfd < 0)
		return err && *err ? -1 : 0;
	fd = exec_run_ask_stop(dfd, id, err);
	close(dfd);
	if (fd < 0)
		return err && *err ? -1 : 0;
	*running = true;
	*ended = exec_run_wait(fd, wait_ms, r->cancel);
	close(fd);
	return 0;
}

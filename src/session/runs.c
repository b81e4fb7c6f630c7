/*
 * runs.c - ROOT/KEY/runs/ID, the runs of a session that have an id
 * (runs.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/error.h"
#include "session/runs.h"
#include "session/session-layout.h"

#define RUNS_NAME "runs"
/* How often a stopper looks whether the run has ended. */
#define STOP_NAP_US 20000

bool session_run_id_valid(const char *id)
{
	size_t n;

	if (!id)
		return false;
	for (n = 0; id[n]; n++)
		if (n >= SESSION_RUN_ID_MAX ||
		    !((id[n] >= '0' && id[n] <= '9') ||
		      (id[n] >= 'a' && id[n] <= 'z') ||
		      (id[n] >= 'A' && id[n] <= 'Z') || id[n] == '_' ||
		      id[n] == '-'))
			return false;
	return n > 0;
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

/* dfd's ID, opened when it exists: its descriptor with *held whether an
 * exec holds it; a stale one removed (-1, ENOENT, as a missing one). */
static int run_open(int dfd, const char *id, bool *held)
{
	int fd = openat(
	    dfd, id, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	*held = false;
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
		*held = true;
		return fd;
	}
	/* Its exec died without removing it: nobody can hold it now that
	 * the directory's lock is ours. */
	unlinkat(dfd, id, 0);
	close(fd);
	errno = ENOENT;
	return -1;
}

/* -1 with *err (invalid) when id is not a run id. */
static int id_check(const char *id, struct sbx_error **err)
{
	if (session_run_id_valid(id))
		return 0;
	return sbx_error_set(err, SBX_E_INVALID, 0,
			     "the run id must be 1 to %d letters, digits, '_' "
			     "or '-'",
			     SESSION_RUN_ID_MAX);
}

int session_run_begin(struct session_root *r, const char *key, const char *id,
		      struct sbx_error **err)
{
	int dfd, fd;
	bool held;

	if (id_check(id, err) < 0)
		return -1;
	dfd = runs_lock(r, key, true, err);
	if (dfd < 0)
		return -1;
	fd = run_open(dfd, id, &held);
	if (fd >= 0) {
		close(fd);
		close(dfd);
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "run '%s' of session '%s' is running already", id,
			      key);
		sbx_error_why(*err, SBX_R_RUN_RUNNING, 0, 0);
		return -1;
	}
	fd = openat(dfd, id,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
			O_NOCTTY,
		    0600);
	if (fd < 0) {
		int e = errno;

		close(dfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot make '%s/%s/%s/%s'", r->path, key,
				     RUNS_NAME, id);
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || pwrite(fd, "0", 1, 0) != 1) {
		int e = errno;

		unlinkat(dfd, id, 0);
		close(fd);
		close(dfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot hold '%s/%s/%s/%s'", r->path, key,
				     RUNS_NAME, id);
	}
	close(dfd);
	return fd;
}

bool session_run_stop_asked(int fd)
{
	char c = 0;

	return fd >= 0 && pread(fd, &c, 1, 0) == 1 && c == '1';
}

void session_run_end(struct session_root *r, const char *key, const char *id,
		     int fd)
{
	struct sbx_error *err = NULL;
	struct stat a, b;
	int dfd;

	if (fd < 0)
		return;
	dfd = runs_lock(r, key, false, &err);
	sbx_error_free(&err);
	/* Only the file this run holds (a purge may have moved it). */
	if (dfd >= 0 && fstat(fd, &a) == 0 &&
	    fstatat(dfd, id, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlinkat(dfd, id, 0);
	if (dfd >= 0)
		close(dfd);
	close(fd); /* releases its lock */
}

int session_run_stop(struct session_root *r, const char *key, const char *id,
		     long long wait_ms, bool *running, bool *ended,
		     struct sbx_error **err)
{
	long long until;
	int dfd, fd;
	bool held;

	*running = false;
	*ended = true;
	if (id_check(id, err) < 0)
		return -1;
	dfd = runs_lock(r, key, false, err);
	if (dfd < 0)
		return err && *err ? -1 : 0;
	fd = run_open(dfd, id, &held);
	if (fd < 0) {
		close(dfd);
		return 0;
	}
	*running = true;
	*ended = false;
	if (pwrite(fd, "1", 1, 0) != 1) {
		int e = errno;

		close(fd);
		close(dfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot ask run '%s' to stop", id);
	}
	close(dfd);
	/* Ended once its exec let the lock go (it removes the file first). */
	until = clock_now_ms() + (wait_ms > 0 ? wait_ms : 0);
	for (;;) {
		if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
			*ended = true;
			break;
		}
		if (clock_now_ms() >= until ||
		    (r->cancel && atomic_load(r->cancel)))
			break;
		usleep(STOP_NAP_US);
	}
	close(fd);
	return 0;
}

/*
 * runs.c - the files of the runs that have an id (runs.h).
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
#include "exec/runs.h"

/* How often a stopper looks whether the run has ended. */
#define STOP_NAP_US 20000

bool exec_run_id_valid(const char *id)
{
	size_t n;

	if (!id)
		return false;
	for (n = 0; id[n]; n++)
		if (n >= EXEC_RUN_ID_MAX ||
		    !((id[n] >= '0' && id[n] <= '9') ||
		      (id[n] >= 'a' && id[n] <= 'z') ||
		      (id[n] >= 'A' && id[n] <= 'Z') || id[n] == '_' ||
		      id[n] == '-'))
			return false;
	return n > 0;
}

int exec_run_id_check(const char *id, struct sbx_error **err)
{
	if (exec_run_id_valid(id))
		return 0;
	return sbx_error_set(err, SBX_E_INVALID, 0,
			     "the run id must be 1 to %d letters, digits, '_' "
			     "or '-'",
			     EXEC_RUN_ID_MAX);
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

int exec_run_make(int dfd, const char *shown, const char *id,
		  struct sbx_error **err)
{
	int fd;
	bool held;

	if (exec_run_id_check(id, err) < 0)
		return -1;
	fd = run_open(dfd, id, &held);
	if (fd >= 0) {
		close(fd);
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "run '%s' of %s is running already", id, shown);
		sbx_error_why(*err, SBX_R_RUN_RUNNING, 0, 0);
		return -1;
	}
	fd = openat(dfd, id,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
			O_NOCTTY,
		    0600);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot make run '%s' of %s", id, shown);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || pwrite(fd, "0", 1, 0) != 1) {
		int e = errno;

		unlinkat(dfd, id, 0);
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot hold run '%s' of %s", id, shown);
	}
	return fd;
}

bool exec_run_stop_asked(int fd)
{
	char c = 0;

	return fd >= 0 && pread(fd, &c, 1, 0) == 1 && c == '1';
}

void exec_run_end(int dfd, const char *id, int fd)
{
	struct stat a, b;

	if (fd < 0)
		return;
	/* Only the file this run holds (a purge may have moved it). */
	if (dfd >= 0 && fstat(fd, &a) == 0 &&
	    fstatat(dfd, id, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlinkat(dfd, id, 0);
	close(fd); /* releases its lock */
}

int exec_run_ask_stop(int dfd, const char *id, struct sbx_error **err)
{
	bool held;
	int fd;

	if (exec_run_id_check(id, err) < 0)
		return -1;
	fd = run_open(dfd, id, &held);
	if (fd < 0)
		return -1;
	if (pwrite(fd, "1", 1, 0) != 1) {
		int e = errno;

		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot ask run '%s' to stop", id);
	}
	return fd;
}

bool exec_run_wait(int fd, long long wait_ms, const atomic_int *cancel)
{
	/* Ended once its exec let the lock go (it removes the file first). */
	long long until = clock_now_ms() + (wait_ms > 0 ? wait_ms : 0);

	for (;;) {
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			return true;
		if (clock_now_ms() >= until || (cancel && atomic_load(cancel)))
			return false;
		usleep(STOP_NAP_US);
	}
}

/*
 * ws-stub.c - TEMPORARY stand-in for src/workspace.c, linked only into the
 * walk and grep tests (t-walk, t-grep) until the real src/workspace.c
 * lands (another branch of issue 9).  The integrator removes this file and
 * its Makefile.am lines then.
 *
 * It implements only what walk.c and grep.c call, with the same kernel
 * semantics the real one promises: openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) from the held descriptor,
 * EAGAIN retried, and files opened O_PATH, fstat()ed, refused unless
 * regular, then reopened through /proc/self/fd/N.
 *
 * Under valgrind (whose syscall table lacks openat2: ENOSYS) it falls back
 * to plain openat and sets ws_stub_emulated, so the memory checks still
 * run; the tests then skip, loudly, what needs RESOLVE_BENEATH.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "workspace.h"

bool ws_stub_emulated;

static long sys_openat2(int dirfd, const char *path, struct open_how *how)
{
	return syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

int workspace_init(struct workspace *w, int fd, const char *path,
		   unsigned long uid, unsigned long long max_read,
		   unsigned long long max_write, struct sbx_error **err)
{
	struct stat st;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->path = xstrdup(path);
	w->uid = uid;
	w->max_read = max_read;
	w->max_write = max_write;
	if (fstat(fd, &st) < 0)
		return sbx_error_set(err, SBX_EXIT_ENV, errno, "cannot stat '%s'",
				     path);
	w->dev = st.st_dev;
	return 0;
}

void workspace_close(struct workspace *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	free(w->path);
	w->path = NULL;
}

int workspace_openat(const struct workspace *w, const char *rel,
		     uint64_t flags, uint64_t mode, uint64_t resolve,
		     const char *shown, struct sbx_error **err)
{
	struct open_how how = {
		.flags = flags | O_CLOEXEC,
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = resolve | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_XDEV,
	};
	long fd = -1;

	for (int i = 0; i < 8; i++) {
		fd = sys_openat2(w->fd, *rel ? rel : ".", &how);
		if (fd < 0 && errno == ENOSYS) {
			ws_stub_emulated = true;
			fd = openat(w->fd, *rel ? rel : ".", (int)how.flags,
				    (mode_t)how.mode);
		}
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	if (fd < 0)
		return sbx_error_set(err, SBX_EXIT_FAIL, errno, "'%s'", shown);
	return (int)fd;
}

int workspace_open_file(const struct workspace *w, const char *rel,
			const char *shown, struct stat *st,
			struct sbx_error **err)
{
	char proc[64];
	int pfd = workspace_openat(w, rel, O_PATH, 0, 0, shown, err);
	int fd;

	if (pfd < 0)
		return -1;
	if (fstat(pfd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(pfd);
		return sbx_error_set(err, SBX_EXIT_FAIL, 0,
				     "'%s' is not a regular file", shown);
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	close(pfd);
	if (fd < 0)
		return sbx_error_set(err, SBX_EXIT_FAIL, errno, "'%s'", shown);
	if (fstat(fd, st) < 0) {
		int e = errno;

		close(fd);
		return sbx_error_set(err, SBX_EXIT_FAIL, e, "'%s'", shown);
	}
	return fd;
}

/*
 * fileio.c - limited reads, atomic replacement, mkdir -p (fileio.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/sig.h"

static int interrupted(struct sbx_error **err);

/*
 * Read fd to its end into *data (at most max bytes, st its fstat).
 * wait: the mask to wait under, for a file that is not a regular one,
 * opened O_NONBLOCK (ppoll before each read: a FIFO's read would say
 * end-of-file before any writer came), with sbx's signals (sig.h)
 * blocked but while waiting, so that one that came at any time before
 * ends the read instead of being lost to it.  NULL: plain blocking reads,
 * which a signal does not end (a regular file's cannot block; a caller
 * cleaning up after a signal still reads what it needs).
 */
static int read_loop(int fd, const char *path, size_t max, char **data,
		     size_t *len, const sigset_t *wait, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;

	for (;;) {
		char chunk[65536];
		ssize_t n;

		if (wait) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};

			if (!sig_caught() && ppoll(&pfd, 1, NULL, wait) < 0 &&
			    errno != EINTR) {
				int e = errno;
				strbuf_release(&sb);
				return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
						     "cannot read '%s'", path);
			}
			if (sig_caught()) {
				strbuf_release(&sb);
				return interrupted(err);
			}
		}
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || (wait && errno == EAGAIN)))
			continue;
		if (n < 0) {
			int e = errno;
			strbuf_release(&sb);
			return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
					     "cannot read '%s'", path);
		}
		if (n == 0)
			break;
		/* A pipe or a file that grew after fstat: same limit. */
		if (sb.len + (size_t)n > max) {
			strbuf_release(&sb);
			return sbx_error_set(
			    err, SBX_E_REFUSED, 0,
			    "'%s' is over the limit of %zu bytes", path, max);
		}
		strbuf_add(&sb, chunk, (size_t)n);
	}
	*data = strbuf_detach(&sb, len);
	return 0;
}

/* fd checked (not a directory, a regular file within max), then read;
 * nonblock: fd was opened O_NONBLOCK, so a file that is not a regular
 * one is read under read_loop's mask. */
static int read_fd(int fd, const char *path, size_t max, char **data,
		   size_t *len, bool nonblock, struct sbx_error **err)
{
	sigset_t ends, old;
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot stat '%s'", path);
	if (S_ISDIR(st.st_mode))
		return sbx_error_set(err, SBX_E_UNAVAILABLE, EISDIR,
				     "cannot read '%s'", path);
	if (S_ISREG(st.st_mode) && (size_t)st.st_size > max)
		return sbx_error_set(
		    err, SBX_E_REFUSED, 0,
		    "'%s' is %lld bytes, over the limit of %zu bytes", path,
		    (long long)st.st_size, max);
	if (S_ISREG(st.st_mode) || !nonblock)
		return read_loop(fd, path, max, data, len, NULL, err);
	sigemptyset(&ends);
	sigaddset(&ends, SIGINT);
	sigaddset(&ends, SIGTERM);
	sigaddset(&ends, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &ends, &old);
	rc = read_loop(fd, path, max, data, len, &old, err);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Opened without blocking, so that a FIFO with no writer cannot hold the
 * open past a signal (SIGINT, SIGTERM, SIGHUP: sig.h). */
int read_file_limited(const char *path, size_t max, char **data, size_t *len,
		      struct sbx_error **err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	int rc;

	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", path);
	rc = read_fd(fd, path, max, data, len, true, err);
	close(fd);
	return rc;
}

int read_fd_limited(int fd, const char *path, size_t max, char **data,
		    size_t *len, struct sbx_error **err)
{
	return read_fd(fd, path, max, data, len, false, err);
}

/*
 * True when path is a regular file holding exactly data.  Anything else (a
 * FIFO, a device) is "different": opening one to compare could block.
 */
static bool file_has_content(const char *path, const void *data, size_t len)
{
	char *old = NULL;
	size_t oldlen = 0;
	struct stat st;
	bool same;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != len)
		return false;
	if (read_file_limited(path, len, &old, &oldlen, NULL) < 0)
		return false;
	same = oldlen == len && memcmp(old, data, len) == 0;
	free(old);
	return same;
}

char *resolve_link(const char *path, struct sbx_error **err)
{
	char *cur = xstrdup(path);

	/* 40: the kernel's own limit on links followed in one lookup. */
	for (int hops = 0; hops < 40; hops++) {
		struct stat st;
		struct strbuf target = STRBUF_INIT;
		ssize_t n;

		if (lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode))
			return cur;
		strbuf_grow(&target, (size_t)st.st_size + 1);
		n = readlink(cur, target.buf, target.alloc - 1);
		if (n < 0) {
			int e = errno;
			strbuf_release(&target);
			sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				      "cannot read the link '%s'", cur);
			free(cur);
			return NULL;
		}
		target.len = (size_t)n;
		target.buf[n] = '\0';
		if (target.buf[0] != '/' && strchr(cur, '/')) {
			char *dir = xstrdup(cur);
			char *next =
			    xasprintf("%s/%s", dirname(dir), target.buf);
			free(dir);
			strbuf_release(&target);
			free(cur);
			cur = next;
		} else {
			free(cur);
			cur = strbuf_detach(&target, NULL);
		}
	}
	sbx_error_set(err, SBX_E_UNAVAILABLE, ELOOP, "cannot write '%s'", path);
	free(cur);
	return NULL;
}

static int fsync_dir(const char *dir, struct sbx_error **err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", dir);
	if (fsync(fd) < 0 && errno != EINVAL) {
		int e = errno;
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e, "cannot sync '%s'",
				     dir);
	}
	close(fd);
	return 0;
}

/* Give the temporary file fd the old target's owner, group and mode. */
static int keep_attributes(int fd, const char *target, const struct stat *old,
			   unsigned mode, struct sbx_error **err)
{
	struct stat st;

	if (old) {
		if (fstat(fd, &st) < 0)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "cannot stat a temporary file "
					     "beside '%s'",
					     target);
		/* Before fchmod: fchown clears the set-id bits. */
		if ((st.st_uid != old->st_uid || st.st_gid != old->st_gid) &&
		    fchown(fd, old->st_uid, old->st_gid) < 0)
			return sbx_error_set(
			    err, SBX_E_UNAVAILABLE, errno,
			    "cannot keep the owner and group of '%s' (%u:%u)",
			    target, (unsigned)old->st_uid,
			    (unsigned)old->st_gid);
		mode = old->st_mode & 07777;
	}
	if (fchmod(fd, mode) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot write '%s'", target);
	return 0;
}

int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Write data to a new temporary file beside target; *tmp names it.  sync:
 * fsync it now; otherwise start its write-back so a later fdatasync finds
 * the work under way.
 */
static int write_temp(const char *target, const void *data, size_t len,
		      unsigned mode, bool sync, char **tmp,
		      struct sbx_error **err)
{
	struct stat old;
	bool exists = stat(target, &old) == 0;
	int fd, e;

	*tmp = NULL;
	if (exists && S_ISDIR(old.st_mode))
		return sbx_error_set(err, SBX_E_UNAVAILABLE, EISDIR,
				     "cannot write '%s'", target);
	*tmp = xasprintf("%s.tmpXXXXXX", target);
	fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		free(*tmp);
		*tmp = NULL;
		return sbx_error_set(
		    err, SBX_E_UNAVAILABLE, e,
		    "cannot create a temporary file beside '%s'", target);
	}
	if (write_all(fd, data, len) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot write '%s'",
			      target);
		goto fail;
	}
	if (keep_attributes(fd, target, exists ? &old : NULL, mode, err) < 0)
		goto fail;
	if (sync && fsync(fd) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot write '%s'",
			      target);
		goto fail;
	}
	if (!sync)
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	e = close(fd);
	fd = -1;
	if (e < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot write '%s'",
			      target);
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(*tmp);
	free(*tmp);
	*tmp = NULL;
	return -1;
}

int write_file_atomic(const char *path, const void *data, size_t len,
		      unsigned mode, bool *changed, struct sbx_error **err)
{
	cleanup_free char *tmp = NULL;
	cleanup_free char *target = resolve_link(path, err);
	cleanup_free char *dircopy = NULL;

	if (changed)
		*changed = false;
	if (!target)
		return -1;
	if (file_has_content(target, data, len))
		return 0;
	if (write_temp(target, data, len, mode, true, &tmp, err) < 0)
		return -1;
	if (rename(tmp, target) < 0) {
		int e = errno;
		unlink(tmp);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e, "cannot write '%s'",
				     target);
	}
	if (changed)
		*changed = true;
	dircopy = xstrdup(target);
	return fsync_dir(dirname(dircopy), err);
}

static int interrupted(struct sbx_error **err)
{
	return sbx_error_set(err, SBX_E_CANCELLED, 0,
			     "interrupted by signal %d", sig_caught());
}

int atomic_batch_add(struct atomic_batch *b, const char *path, const void *data,
		     size_t len, unsigned mode, bool *changed,
		     struct sbx_error **err)
{
	char *tmp = NULL;
	char *target;

	*changed = false;
	if (sig_caught())
		return interrupted(err);
	target = resolve_link(path, err);
	if (!target)
		return -1;
	if (file_has_content(target, data, len)) {
		free(target);
		return 0;
	}
	if (write_temp(target, data, len, mode, false, &tmp, err) < 0) {
		free(target);
		return -1;
	}
	ALLOC_GROW(b->files, b->n + 1, b->alloc);
	b->files[b->n].path = target;
	b->files[b->n].tmp = tmp;
	b->n++;
	*changed = true;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* fsync each distinct directory of the batch's targets once. */
static int sync_dirs(const struct atomic_batch *b, struct sbx_error **err)
{
	char **dirs = xcalloc(b->n, sizeof(*dirs));
	int rc = 0;

	for (size_t i = 0; i < b->n; i++) {
		char *copy = xstrdup(b->files[i].path);
		dirs[i] = xstrdup(dirname(copy));
		free(copy);
	}
	qsort(dirs, b->n, sizeof(*dirs), cmp_str);
	for (size_t i = 0; i < b->n && rc == 0; i++)
		if (i == 0 || strcmp(dirs[i], dirs[i - 1]) != 0)
			rc = fsync_dir(dirs[i], err);
	strv_free(dirs, b->n);
	return rc;
}

/* Wait until every temporary file's bytes are on disk. */
static int sync_temps(const struct atomic_batch *b, struct sbx_error **err)
{
	for (size_t i = 0; i < b->n; i++) {
		int fd = open(b->files[i].tmp, O_RDONLY | O_CLOEXEC);
		int rc = fd < 0 ? -1 : fdatasync(fd);
		int e = errno;

		if (fd >= 0)
			close(fd);
		if (rc < 0)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
					     "cannot write '%s'",
					     b->files[i].path);
	}
	return 0;
}

int atomic_batch_commit(struct atomic_batch *b, struct sbx_error **err)
{
	int rc = sync_temps(b, err);

	/* The last moment to stop with every target untouched. */
	if (rc == 0 && sig_caught())
		rc = interrupted(err);
	for (size_t i = 0; i < b->n && rc == 0; i++) {
		if (rename(b->files[i].tmp, b->files[i].path) < 0) {
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot write '%s'",
					   b->files[i].path);
			break;
		}
		free(b->files[i].tmp);
		b->files[i].tmp = NULL;
	}
	if (rc == 0 && b->n)
		rc = sync_dirs(b, err);
	atomic_batch_abort(b);
	return rc;
}

void atomic_batch_abort(struct atomic_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		if (b->files[i].tmp)
			unlink(b->files[i].tmp);
		free(b->files[i].tmp);
		free(b->files[i].path);
	}
	free(b->files);
	b->files = NULL;
	b->n = b->alloc = 0;
}

/*
 * A directory just made survives a crash only once the entry naming it in
 * its parent is flushed too; the files later written into it are flushed
 * with their own directory, which does not cover this.
 */
static int sync_parent(const char *path, struct sbx_error **err)
{
	cleanup_free char *copy = xstrdup(path);

	return fsync_dir(dirname(copy), err);
}

int mkdir_p(const char *path, unsigned mode, struct sbx_error **err)
{
	cleanup_free char *parent = NULL;
	char *slash;

	/* The whole path first: usually it exists or only its last part is
	 * missing, so one call, not one per component. */
	if (mkdir(path, mode) == 0)
		return sync_parent(path, err);
	if (errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot create directory '%s'", path);
	parent = xstrdup(path);
	slash = strrchr(parent, '/');
	while (slash && slash > parent && slash[1] == '\0') {
		*slash = '\0'; /* "a/b/" names a/b */
		slash = strrchr(parent, '/');
	}
	if (!slash || slash == parent)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, ENOENT,
				     "cannot create directory '%s'", path);
	*slash = '\0';
	if (mkdir_p(parent, mode, err) < 0)
		return -1;
	if (mkdir(path, mode) == 0)
		return sync_parent(path, err);
	if (errno != EEXIST)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot create directory '%s'", path);
	return 0;
}

int open_temp_at(int dirfd, const char *prefix, unsigned mode, char **tmp)
{
	static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "abcdefghijklmnopqrstuvwxyz0123456789";

	/* mkostemp's own bound on tries. */
	for (int tries = 0; tries < 238328; tries++) {
		unsigned char rnd[6];
		char suffix[7];
		int fd;

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -1;
		for (size_t i = 0; i < sizeof(rnd); i++)
			suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
		suffix[6] = '\0';
		*tmp = xasprintf("%s%s", prefix, suffix);
		fd = openat(
		    dirfd, *tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0)
			return fd;
		free(*tmp);
		*tmp = NULL;
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

int write_file_atomic_at(int dirfd, const char *dir, const char *name,
			 const void *data, size_t len, unsigned mode,
			 struct sbx_error **err)
{
	cleanup_free char *tmp = NULL;
	cleanup_free char *prefix = xasprintf("%s.tmp", name);
	int fd = open_temp_at(dirfd, prefix, mode, &tmp);
	int e;

	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot create a temporary file in '%s'",
				     dir);
	/* fchmod: the mode given, whatever the umask took away. */
	if (write_all(fd, data, len) < 0 || fchmod(fd, mode) < 0 ||
	    fsync(fd) < 0) {
		e = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot write '%s/%s'", dir, name);
	}
	if (close(fd) < 0 || renameat(dirfd, tmp, dirfd, name) < 0) {
		e = errno;
		unlinkat(dirfd, tmp, 0);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot write '%s/%s'", dir, name);
	}
	if (fsync(dirfd) < 0 && errno != EINVAL)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot sync '%s'", dir);
	return 0;
}

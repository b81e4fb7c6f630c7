/*
 * session-root.c - the workspace root (session.h): opening it with every
 * directory on the way checked, the quota lock, ROOT/KEY and the locks
 * kept in it, and the keys below ROOT; with the helpers the session
 * files share (session-layout.h).
 *
 * Below ROOT nothing is reached by path: every step is openat() (with
 * O_NOFOLLOW), mkdirat(), fstatat(AT_SYMLINK_NOFOLLOW) or unlinkat()
 * relative to a descriptor already checked.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"
#include "session/session-layout.h"
#include "session/session.h"
#include "workspace/tree.h"

/* The kernel's own bound on symlinks followed in one lookup. */
#define LINKS_MAX 40

/* ---- what the session files share (session-layout.h) ---- */

const char *session_shown(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s);

	strbuf_release(sb);
	strbuf_addstr(sb, "");
	text_add_escaped(sb, s, utf8_whole(s, n > 80 ? 80 : n));
	if (n > 80)
		strbuf_addstr(sb, "...");
	return sb->buf;
}

int session_set_kind(struct sbx_error **err, enum sbx_kind kind)
{
	if (err && *err)
		(*err)->kind = kind;
	return -1;
}

/* ---- the root ---- */

/* A directory on the way to ROOT: root's, and if writable by group or
 * others then sticky (as /tmp), so nobody else can rename what is in it. */
static int check_ancestor(int fd, const char *path, struct strbuf *root,
			  struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	int rc = 0;

	if (fstat(fd, &st) < 0)
		rc =
		    sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				  "cannot stat '%s'", session_shown(&sb, path));
	else if (st.st_uid != 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "workspace root '%s': its ancestor '%s' is "
				   "owned by uid %u, not root, who could "
				   "rename what is in it and redirect the "
				   "workspaces",
				   root->buf, session_shown(&sb, path),
				   (unsigned)st.st_uid);
	else if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "workspace root '%s': its ancestor '%s' is "
				   "writable by group or others (mode %04o) "
				   "and not sticky: they could rename what "
				   "is in it and redirect the workspaces",
				   root->buf, session_shown(&sb, path),
				   (unsigned)(st.st_mode & 07777));
	strbuf_release(&sb);
	return rc;
}

static int check_root(int fd, struct strbuf *root, struct sbx_error **err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot stat workspace root '%s'",
				     root->buf);
	if (st.st_uid != 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "workspace root '%s' is owned by uid %u, not "
			      "root",
			      root->buf, (unsigned)st.st_uid);
		if (err)
			sbx_error_hint(*err, "chown root:root it, or name "
					     "another");
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "workspace root '%s' is writable by group or "
			      "others (mode %04o)",
			      root->buf, (unsigned)(st.st_mode & 07777));
		if (err)
			sbx_error_hint(*err, "chmod go-w it");
		return -1;
	}
	return 0;
}

/*
 * Open the next component of a walk from fd, creating a missing directory
 * (0755).  -1 with errno: ELOOP for a symlink, ENOTDIR for anything else
 * that is not a directory.
 */
static int open_component(int fd, const char *name, bool *made)
{
	int sub =
	    openat(fd, name,
		   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (sub < 0 && errno == ENOENT) {
		if (mkdirat(fd, name, 0755) == 0)
			*made = true;
		else if (errno != EEXIST)
			return -1;
		sub = openat(fd, name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
				 O_NOCTTY);
	}
	if (sub < 0 && (errno == ELOOP || errno == ENOTDIR)) {
		bool link = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode);
		errno = link ? ELOOP : ENOTDIR;
	}
	return sub;
}

/*
 * Walk from "/" to ROOT, component by component, checking each directory
 * passed; a symlink on the way (not ROOT itself) is followed by putting
 * its target in front of what is left, since it sits in a directory just
 * checked and so cannot change.  *fdp: ROOT, opened.
 */
static int walk_to_root(const char *path, struct strbuf *root, int *fdp,
			struct sbx_error **err)
{
	struct strbuf rest = STRBUF_INIT, at = STRBUF_INIT, sb = STRBUF_INIT;
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int links = 0, rc = 0;

	strbuf_addstr(&rest, path);
	if (fd < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot open '/'");
	else
		rc = check_ancestor(fd, "/", root, err);
	while (rc == 0) {
		char *p = rest.buf, *name;
		size_t len;
		bool last, made = false;
		int sub;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			break;
		name = xstrndup(p, len);
		memmove(rest.buf, p + len, strlen(p + len) + 1);
		rest.len = strlen(rest.buf);
		last = strspn(rest.buf, "/") == rest.len;
		if (strcmp(name, ".") == 0) {
			free(name);
			continue;
		}
		sub = open_component(fd, name, &made);
		if (sub < 0 && errno == ELOOP && !last) {
			char target[PATH_MAX + 1];
			struct stat lst;
			ssize_t n;

			/* Its owner can point it elsewhere at any time (in a
			 * sticky directory such as /tmp too): only root's
			 * symlinks are followed, as fs.protected_symlinks
			 * would have it. */
			if (fstatat(fd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
			    lst.st_uid != 0) {
				rc = sbx_error_set(
				    err, SBX_E_UNAVAILABLE, 0,
				    "workspace root '%s': the symlink '%s' on "
				    "the way is owned by uid %u; only root's "
				    "symlinks are followed to it",
				    root->buf, name, (unsigned)lst.st_uid);
				free(name);
				break;
			}
			n = readlinkat(fd, name, target, PATH_MAX);

			if (n < 0 || ++links > LINKS_MAX) {
				rc = sbx_error_set(
				    err, SBX_E_UNAVAILABLE,
				    n < 0 ? errno : ELOOP,
				    "cannot resolve workspace root '%s'",
				    root->buf);
				free(name);
				break;
			}
			target[n] = '\0';
			strbuf_release(&sb);
			strbuf_addstr(&sb, target);
			strbuf_addch(&sb, '/');
			strbuf_addstr(&sb, rest.buf);
			strbuf_release(&rest);
			strbuf_addstr(&rest, sb.buf);
			if (target[0] == '/') {
				close(fd);
				fd = open("/",
					  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				strbuf_release(&at);
				if (fd < 0)
					rc = sbx_error_set(
					    err, SBX_E_UNAVAILABLE, errno,
					    "cannot open '/'");
			}
			free(name);
			continue;
		}
		if (sub < 0) {
			int e = errno;

			if (e == ELOOP || e == ENOTDIR)
				rc = sbx_error_set(
				    err, SBX_E_UNAVAILABLE, 0,
				    "workspace root '%s': '%s/%s' is %s",
				    root->buf, at.buf ? at.buf : "",
				    session_shown(&sb, name),
				    e == ELOOP ? "a symlink; name the "
						 "directory it points to"
					       : "not a directory");
			else
				rc = sbx_error_set(err, SBX_E_UNAVAILABLE, e,
						   "cannot open '%s/%s'",
						   at.buf ? at.buf : "",
						   session_shown(&sb, name));
			free(name);
			break;
		}
		if (made && fsync(fd) < 0 && errno != EINVAL)
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot sync '%s'", at.buf);
		close(fd);
		fd = sub;
		if (strcmp(name, "..") == 0) {
			char *slash = at.buf ? strrchr(at.buf, '/') : NULL;

			if (slash) {
				at.len = (size_t)(slash - at.buf);
				*slash = '\0';
			}
		} else {
			strbuf_addch(&at, '/');
			strbuf_addstr(&at, name);
		}
		free(name);
		if (rc == 0 && !last)
			rc = check_ancestor(fd, at.buf, root, err);
	}
	if (rc == 0)
		rc = check_root(fd, root, err);
	strbuf_release(&rest);
	strbuf_release(&at);
	strbuf_release(&sb);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*fdp = fd;
	return 0;
}

int session_root_open(struct session_root *r, const char *path,
		      struct sbx_error **err)
{
	struct strbuf root = STRBUF_INIT;
	size_t n = strlen(path);
	uint32_t cp;
	int rc;

	r->path = NULL;
	r->fd = r->lock_fd = -1;
	r->cancel = NULL;
	session_shown(&root, path);
	/* Messages below show r->path as it is: it must be clean text. */
	if (path[0] != '/' || utf8_first_invalid(path, n) >= 0 ||
	    text_find_control(path, n, &cp))
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "workspace root '%s' is not an absolute "
				   "path of printable UTF-8",
				   root.buf);
	else
		rc = walk_to_root(path, &root, &r->fd, err);
	strbuf_release(&root);
	if (rc == 0)
		r->path = xstrdup(path);
	return rc;
}

void session_root_close(struct session_root *r)
{
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	if (r->fd >= 0)
		close(r->fd);
	free(r->path);
	r->path = NULL;
	r->fd = r->lock_fd = -1;
}

/* The signal that stops r's waits, or 0: r->cancel's (none: never). */
static int cancelled(const struct session_root *r)
{
	return r->cancel ? atomic_load(r->cancel) : 0;
}

int session_lock_wait(const struct session_root *r, int fd, const char *dir,
		      const char *name, struct sbx_error **err)
{
	while (flock(fd, LOCK_EX) < 0) {
		int e = errno;

		if (e == EINTR && !cancelled(r))
			continue;
		if (e == EINTR)
			return sbx_error_set(err, SBX_E_CANCELLED, 0,
					     "interrupted by signal %d while "
					     "waiting for '%s/%s'",
					     cancelled(r), dir, name);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot lock '%s/%s'", dir, name);
	}
	return 0;
}

int session_lock(struct session_root *r, struct sbx_error **err)
{
	struct stat st;
	int fd;

	if (r->lock_fd >= 0)
		die_bug("session_lock: the lock is already held");
	fd = openat(r->fd, LOCK_NAME,
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
			O_NONBLOCK,
		    0600);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/" LOCK_NAME "'", r->path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/" LOCK_NAME "' is not a regular file",
				     r->path);
	}
	if (session_lock_wait(r, fd, r->path, LOCK_NAME, err) < 0) {
		close(fd);
		return -1;
	}
	r->lock_fd = fd;
	return 0;
}

void session_unlock(struct session_root *r)
{
	if (r->lock_fd >= 0)
		close(r->lock_fd); /* releases the flock */
	r->lock_fd = -1;
}

/* ---- ROOT/KEY ---- */

/* The message is printed as it is. */
int session_no_session(const char *key, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;

	sbx_error_set(err, SBX_E_NOT_FOUND, 0, "no session '%s'",
		      session_shown(&sb, key));
	if (err && *err)
		(*err)->errnum = ENOENT;
	strbuf_release(&sb);
	return -1;
}

int session_keydir_open(struct session_root *r, const char *key,
			struct sbx_error **err)
{
	struct stat st;
	int fd;

	if (!session_key_valid(key))
		return session_no_session(key, err);
	fd = openat(r->fd, key,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return session_no_session(key, err);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/%s' is not a directory (a symlink, "
				     "or a file); it was not made by sbxcat",
				     r->path, key);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/%s'", r->path, key);
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot stat '%s/%s'", r->path, key);
	}
	if (st.st_uid != 0 || (st.st_mode & 077)) {
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/%s' is owned by uid %u with mode "
				     "%04o; sbxcat makes it root's with mode "
				     "0700",
				     r->path, key, (unsigned)st.st_uid,
				     (unsigned)(st.st_mode & 07777));
	}
	return fd;
}

int session_keydir_lock(struct session_root *r, const char *key,
			struct sbx_error **err)
{
	int kfd = session_keydir_open(r, key, err);

	if (kfd < 0)
		return -1;
	if (session_lock_wait(r, kfd, r->path, key, err) < 0) {
		close(kfd);
		return -1;
	}
	return kfd;
}

/*
 * ROOT/KEY/exec.lock: held from an exec's start to its claim (procs.h),
 * so that the processes in the container's cgroup are that exec's alone.
 * A lock of its own, not ROOT/KEY's: stamping the record must not wait
 * for another exec's start.
 */
/* ROOT/KEY/NAME open for a lock, made root's, 0600, when missing. */
static int lock_file_open(struct session_root *r, const char *key,
			  const char *name, struct sbx_error **err)
{
	int kfd = session_keydir_open(r, key, err), fd;
	struct stat st;

	if (kfd < 0)
		return -1;
	fd = openat(kfd, name,
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	close(kfd);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/%s/%s'", r->path, key,
				     name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/%s/%s' is not a regular file of "
				     "root's",
				     r->path, key, name);
	}
	return fd;
}

/* ROOT/KEY/NAME opened (lock_file_open) and flocked, waiting. */
static int lock_file(struct session_root *r, const char *key, const char *name,
		     struct sbx_error **err)
{
	int fd = lock_file_open(r, key, name, err);

	if (fd >= 0 && session_lock_wait(r, fd, r->path, key, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int session_exec_lock(struct session_root *r, const char *key,
		      struct sbx_error **err)
{
	return lock_file(r, key, EXEC_LOCK_NAME, err);
}

/* Is the lock file open on fd still ROOT/KEY/NAME (not moved into the
 * trash by a purge while its opener waited)? */
static bool still_there(struct session_root *r, const char *key,
			const char *name, int fd)
{
	struct stat a, b;
	int kfd =
	    openat(r->fd, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool same;

	if (kfd < 0)
		return false;
	same = fstat(fd, &a) == 0 &&
	       fstatat(kfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	close(kfd);
	return same;
}

int session_open_lock(struct session_root *r, const char *key,
		      struct sbx_error **err)
{
	int fd = lock_file(r, key, OPEN_LOCK_NAME, err);

	if (fd >= 0 && !still_there(r, key, OPEN_LOCK_NAME, fd)) {
		close(fd);
		return sbx_error_set(err, SBX_E_CONFLICT, ESTALE,
				     "session '%s' was purged while this "
				     "waited for it",
				     key);
	}
	return fd;
}

bool session_open_busy(struct session_root *r, const char *key)
{
	struct sbx_error *err = NULL;
	int kfd = session_keydir_open(r, key, &err), fd;
	bool busy;

	sbx_error_free(&err);
	if (kfd < 0)
		return false;
	fd = openat(kfd, OPEN_LOCK_NAME,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	close(kfd);
	if (fd < 0)
		return false; /* never opened since it had one */
	busy = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd); /* releases what was taken, if anything */
	return busy;
}

int session_open_trylock(struct session_root *r, const char *key)
{
	struct sbx_error *err = NULL;
	int fd = lock_file_open(r, key, OPEN_LOCK_NAME, &err);

	sbx_error_free(&err);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int session_watch_lock_open(struct session_root *r, const char *key,
			    struct sbx_error **err)
{
	return lock_file_open(r, key, WATCH_LOCK_NAME, err);
}

void session_keydir_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the flock */
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int session_keys(struct session_root *r, char ***keys, size_t *n,
		 struct sbx_error **err)
{
	DIR *d =
	    tree_dir_of(openat(r->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	struct dirent *de;
	size_t alloc = 0;

	*keys = NULL;
	*n = 0;
	if (!d)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read '%s'", r->path);
	for (errno = 0; (de = readdir(d)); errno = 0) {
		struct stat st;

		if (!session_key_valid(de->d_name) ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (de->d_type == DT_UNKNOWN &&
		    (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			 0 ||
		     !S_ISDIR(st.st_mode)))
			continue;
		ALLOC_GROW(*keys, *n + 1, alloc);
		(*keys)[(*n)++] = xstrdup(de->d_name);
	}
	if (errno) {
		int e = errno;
		closedir(d);
		strv_free(*keys, *n);
		*keys = NULL;
		*n = 0;
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot read '%s'", r->path);
	}
	closedir(d);
	if (*n)
		qsort(*keys, *n, sizeof(**keys), cmp_str);
	return 0;
}

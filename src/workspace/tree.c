/*
 * tree.c - the iterative walk of a tree someone else owns, and the
 * removal of everything below a held directory (tree.h).  Used by
 * session_purge, session_workspace_size and workspace_rm.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "workspace/tree.h"

DIR *tree_dir_of(int fd)
{
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	int e = errno;

	if (!d && fd >= 0)
		close(fd);
	errno = e;
	return d;
}

bool tree_dot_or_dotdot(const char *s)
{
	return s[0] == '.' && (!s[1] || (s[1] == '.' && !s[2]));
}

int tree_walk_start(struct tree_walk *w, int fd, const char *top, enum sbx_kind kind,
		    struct sbx_error **err)
{
	struct stat st;

	memset(w, 0, sizeof(*w));
	w->top = top;
	w->kind = kind;
	if (fstat(fd, &st) < 0) {
		close(fd);
		fd = -1;
	}
	w->d = tree_dir_of(fd);
	if (!w->d)
		return sbx_error_set(err, kind, errno, "cannot read '%s'",
				     top);
	w->dev = st.st_dev;
	return 0;
}

void tree_walk_end(struct tree_walk *w)
{
	if (w->d)
		closedir(w->d);
	free(w->up);
	memset(w, 0, sizeof(*w));
}

static int mount_inside(const struct tree_walk *w, struct sbx_error **err)
{
	return sbx_error_set(err, w->kind, 0,
			     "'%s' has a mount point inside; unmount it first",
			     w->top);
}

/*
 * Open the directory name in dirfd, never through a symlink and never onto
 * another mount: openat2 with RESOLVE_NO_XDEV sees a bind mount of the
 * same file system too, where st_dev does not (EXDEV).  Where openat2 is
 * missing (a kernel before 5.6, valgrind) a plain openat, and the st_dev
 * check the caller makes.
 */
static int open_below(int dirfd, const char *name)
{
	struct open_how how;
	int tries = 0;
	long fd;

	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
	how.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS |
		      RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
	do
		fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	while (fd < 0 && (errno == EINTR || (errno == EAGAIN && ++tries < 16)));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(dirfd, name, (int)how.flags);
	return (int)fd;
}

int tree_walk_down(struct tree_walk *w, const char *name, struct stat *st,
		   struct sbx_error **err)
{
	struct stat here;
	int fd = open_below(dirfd(w->d), name);
	DIR *d;

	if (fd < 0 && errno == EXDEV)
		return mount_inside(w, err);
	if (fd < 0 || fstat(fd, st) < 0 || fstat(dirfd(w->d), &here) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return sbx_error_set(err, w->kind, e,
				     "cannot open a directory in '%s'", w->top);
	}
	if (st->st_dev != w->dev) {
		close(fd);
		return mount_inside(w, err);
	}
	d = tree_dir_of(fd);
	if (!d)
		return sbx_error_set(err, w->kind, errno,
				     "cannot read a directory in '%s'", w->top);
	ALLOC_GROW(w->up, w->depth + 1, w->alloc);
	w->up[w->depth].dev = here.st_dev;
	w->up[w->depth].ino = here.st_ino;
	w->up[w->depth].pos = telldir(w->d);
	w->depth++;
	closedir(w->d);
	w->d = d;
	return 0;
}

int tree_walk_up(struct tree_walk *w, bool resume, struct sbx_error **err)
{
	struct tree_level *l = &w->up[w->depth - 1];
	int fd = openat(dirfd(w->d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	DIR *d;

	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return sbx_error_set(err, w->kind, e, "cannot walk '%s'",
				     w->top);
	}
	if (st.st_dev != l->dev || st.st_ino != l->ino) {
		close(fd);
		return sbx_error_set(err, w->kind, 0,
				     "'%s' changed while it was walked (a "
				     "directory moved); try again",
				     w->top);
	}
	d = tree_dir_of(fd);
	if (!d)
		return sbx_error_set(err, w->kind, errno, "cannot walk '%s'",
				     w->top);
	if (resume)
		seekdir(d, l->pos);
	closedir(w->d);
	w->d = d;
	w->depth--;
	return 0;
}

/*
 * One entry of the directory being listed: unlinked, or removed as an
 * empty directory, or *down set when it is a directory with something in
 * it.  An entry gone meanwhile is fine.
 */
static int remove_entry(struct tree_walk *w, const struct dirent *de,
			unsigned long long *removed, bool *down,
			struct sbx_error **err)
{
	int dfd = dirfd(w->d);

	if (de->d_type != DT_DIR && unlinkat(dfd, de->d_name, 0) == 0)
		goto gone;
	if (de->d_type != DT_DIR && errno != EISDIR) {
		if (errno == ENOENT)
			return 0;
		if (errno == EBUSY)
			return mount_inside(w, err);
		return sbx_error_set(err, w->kind, errno,
				     "cannot remove a file in '%s'", w->top);
	}
	if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) == 0)
		goto gone;
	if (errno == ENOENT)
		return 0;
	if (errno == EBUSY)
		return mount_inside(w, err);
	if (errno != ENOTEMPTY && errno != EEXIST)
		return sbx_error_set(err, w->kind, errno,
				     "cannot remove a directory in '%s'",
				     w->top);
	*down = true;
	return 0;
gone:
	if (removed)
		(*removed)++;
	return 0;
}

/*
 * A directory that will not go is gone down into; when one is empty, the
 * walk climbs back and lists its parent again from the start (what was
 * removed is not listed again, so no position is trusted across removals,
 * which some file systems shift).
 */
int tree_empty(int fd, const char *top, enum sbx_kind kind,
	       const atomic_int *cancel, unsigned long long *removed,
	       struct sbx_error **err)
{
	struct tree_walk w;
	struct dirent *de;
	int rc = tree_walk_start(&w, fd, top, kind, err);

	while (rc == 0) {
		int sig = cancel ? atomic_load(cancel) : 0;
		bool down = false;

		if (sig) {
			rc = sbx_error_set(err, SBX_E_CANCELLED, 0,
					   "interrupted by signal %d while "
					   "removing '%s'",
					   sig, top);
			break;
		}
		for (errno = 0; (de = readdir(w.d)); errno = 0) {
			struct stat st;

			if (tree_dot_or_dotdot(de->d_name))
				continue;
			rc = remove_entry(&w, de, removed, &down, err);
			if (rc == 0 && down)
				rc = tree_walk_down(&w, de->d_name, &st, err);
			if (rc < 0 || down)
				break;
		}
		if (rc < 0 || down)
			continue;
		if (errno) {
			rc = sbx_error_set(err, kind, errno,
					   "cannot read a directory in '%s'",
					   top);
			break;
		}
		if (w.depth == 0)
			break;
		rc = tree_walk_up(&w, false, err);
	}
	tree_walk_end(&w);
	return rc;
}

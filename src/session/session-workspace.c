/*
 * session-workspace.c - a session's directories (session.h): the
 * workspace made, opened and measured, and ROOT/KEY purged through the
 * trash.
 *
 * The workspace is the sandbox's: it can plant symlinks to /etc, rename
 * directories while a walk runs, and build trees far deeper than any
 * stack; the two walks of it (removal, size: tree.h) iterate (no
 * recursion), keep 24 bytes per level, and check each ".." they climb
 * against the directory they came down from.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "session/session-layout.h"
#include "session/session.h"
#include "workspace/tree.h"

bool session_workspace_rel_valid(const char *rel, const char *key)
{
	size_t k = strlen(key), p = strlen(POOL_WS_NAME);

	if (strncmp(rel, key, k) == 0 && rel[k] == '/' &&
	    strcmp(rel + k + 1, WORKSPACE_NAME) == 0)
		return true;
	return strncmp(rel, POOL_WS_NAME, p) == 0 && rel[p] == '/' &&
	       session_pool_id_valid(rel + p + 1);
}

bool session_pool_id_valid(const char *id)
{
	return strlen(id) == POOL_ID_LEN &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyz234567") == POOL_ID_LEN;
}

/* The pooled workspace's ID of rec, or NULL for KEY/workspace. */
static const char *pool_id_of(const struct session_record *rec)
{
	size_t p = strlen(POOL_WS_NAME);

	if (rec->workspace && strncmp(rec->workspace, POOL_WS_NAME, p) == 0 &&
	    rec->workspace[p] == '/')
		return rec->workspace + p + 1;
	return NULL;
}

bool session_workspace_pooled(const struct session_record *rec)
{
	return pool_id_of(rec) != NULL;
}

char *session_workspace_path(const struct session_root *r,
			     const struct session_record *rec)
{
	if (pool_id_of(rec))
		return xasprintf("%s/%s", r->path, rec->workspace);
	return xasprintf("%s/%s/" WORKSPACE_NAME, r->path, rec->key);
}

/* The directory that holds rec's workspace (ROOT/KEY or ROOT/.sbxcat-ws),
 * checked, and the workspace's name in it. */
int session_ws_parent(struct session_root *r, const struct session_record *rec,
		      const char **name, struct sbx_error **err)
{
	const char *id = pool_id_of(rec);

	*name = WORKSPACE_NAME;
	if (rec->workspace &&
	    !session_workspace_rel_valid(rec->workspace, rec->key))
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "the record of '%s' names no workspace "
				     "of sbxcat's",
				     rec->key);
	*name = id ? id : WORKSPACE_NAME;
	if (id)
		return session_private_dir(r, POOL_WS_NAME, false, err);
	return session_keydir_open(r, rec->key, err);
}

/* -1 when the workspace (fd, name in pfd) has a disk budget's image
 * beside it (session-budget.h) but is not its mount: what is written
 * there would be bounded by nothing. */
static int budget_unmounted(int pfd, int fd, const char *name)
{
	char img[SESSION_POOL_ID_LEN + 8];
	struct stat st, pst;

	snprintf(img, sizeof(img), "%s.img", name);
	if (fstatat(pfd, img, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (fstat(fd, &st) < 0 || fstat(pfd, &pst) < 0)
		return -1;
	return st.st_dev == pst.st_dev ? -1 : 0;
}

int session_workspace_open(struct session_root *r,
			   const struct session_record *rec,
			   struct sbx_error **err)
{
	const char *name;
	int pfd = session_ws_parent(r, rec, &name, err), fd;

	if (pfd < 0)
		return -1;
	fd = openat(pfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		cleanup_free char *path = session_workspace_path(r, rec);

		close(pfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot open the workspace of '%s' (%s)",
				     rec->key, path);
	}
	if (budget_unmounted(pfd, fd, name) < 0) {
		cleanup_free char *path = session_workspace_path(r, rec);

		close(fd);
		close(pfd);
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the disk budget of '%s' is not mounted at '%s' "
			      "(the host restarted?); refused, so that no "
			      "write goes past it",
			      rec->key, path);
		sbx_error_hint(*err, "open the session again: its open "
				     "mounts it");
		return -1;
	}
	close(pfd);
	return fd;
}

/* Make ROOT/KEY/workspace: made under a name of this process's, given to
 * the uid, then renamed, so a crash never leaves one that is root's. */
static int make_workspace(struct session_root *r, const char *key, int kfd,
			  unsigned long uid, bool *created,
			  struct sbx_error **err)
{
	char tmp[64];
	int fd, e;

	snprintf(tmp, sizeof(tmp), WORKSPACE_NAME ".tmp%ld", (long)getpid());
	(void)unlinkat(kfd, tmp, AT_REMOVEDIR); /* a dead namesake's */
	if (mkdirat(kfd, tmp, 0755) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot create '%s/%s/%s'", r->path, key,
				     tmp);
	fd = openat(kfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, (uid_t)uid, (gid_t)uid) < 0 ||
	    fchmod(fd, 0755) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		unlinkat(kfd, tmp, AT_REMOVEDIR);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot give '%s/%s/%s' to uid %lu",
				     r->path, key, tmp, uid);
	}
	close(fd);
	if (renameat2(kfd, tmp, kfd, WORKSPACE_NAME, RENAME_NOREPLACE) < 0) {
		e = errno;
		unlinkat(kfd, tmp, AT_REMOVEDIR);
		if (e == EEXIST)
			return 0; /* another sbxcat made it just now */
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot create '%s/%s/" WORKSPACE_NAME "'",
				     r->path, key);
	}
	if (fsync(kfd) < 0 && errno != EINVAL)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot sync '%s/%s'", r->path, key);
	*created = true;
	return 0;
}

/* ROOT/KEY made when missing, opened and checked. */
static int keydir_make(struct session_root *r, const char *key,
		       struct sbx_error **err)
{
	if (mkdirat(r->fd, key, 0700) == 0) {
		if (fsync(r->fd) < 0 && errno != EINVAL)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "cannot sync '%s'", r->path);
	} else if (errno != EEXIST) {
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot create '%s/%s'", r->path, key);
	}
	return session_keydir_open(r, key, err);
}

int session_keydir_make(struct session_root *r, const char *key,
			struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	int kfd;

	if (!session_key_valid(key)) {
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "'%s' is not a session key",
			      session_shown(&sb, key));
		strbuf_release(&sb);
		return -1;
	}
	kfd = keydir_make(r, key, err);
	if (kfd < 0)
		return -1;
	close(kfd);
	return 0;
}

int session_workspace_make(struct session_root *r, const char *key,
			   unsigned long uid, bool *created,
			   struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	int kfd, fd, rc = 0;

	*created = false;
	if (!session_key_valid(key)) {
		rc = sbx_error_set(err, SBX_E_INVALID, 0,
				   "'%s' is not a session key",
				   session_shown(&sb, key));
		strbuf_release(&sb);
		return rc;
	}
	if (uid > 2147483647ul)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "sandbox uid %lu is out of range", uid);
	kfd = keydir_make(r, key, err);
	if (kfd < 0)
		return -1;
	fd = openat(kfd, WORKSPACE_NAME,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0)
		close(fd); /* there: the sandbox's, left as it is */
	else if (errno == ENOENT)
		rc = make_workspace(r, key, kfd, uid, created, err);
	else if (errno == ELOOP || errno == ENOTDIR)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "'%s/%s/" WORKSPACE_NAME "' is not a "
				   "directory (a symlink, or a file)",
				   r->path, key);
	else
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot open '%s/%s/" WORKSPACE_NAME "'",
				   r->path, key);
	close(kfd);
	return rc;
}

bool session_workspace_has_files(struct session_root *r, const char *key)
{
	struct sbx_error *err = NULL;
	int kfd = session_keydir_open(r, key, &err), fd;
	struct dirent *de;
	bool any = false;
	DIR *d;

	sbx_error_free(&err);
	if (kfd < 0)
		return false;
	fd = openat(kfd, WORKSPACE_NAME,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	close(kfd);
	if (fd < 0)
		return errno != ENOENT; /* there but unreadable: its own */
	d = tree_dir_of(fd);
	if (!d)
		return true;
	while (!any && (de = readdir(d)))
		any = !tree_dot_or_dotdot(de->d_name);
	closedir(d);
	return any;
}

/* ---- the trash ---- */

int session_private_dir(struct session_root *r, const char *name, bool make,
			struct sbx_error **err)
{
	struct stat st;
	int fd;

	if (make && mkdirat(r->fd, name, 0700) < 0 && errno != EEXIST)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot make '%s/%s'", r->path, name);
	fd = openat(r->fd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/%s'", r->path, name);
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 077)) {
		close(fd);
		return sbx_error_set(
		    err, SBX_E_UNAVAILABLE, 0,
		    "'%s/%s' is not a directory of root's "
		    "with mode 0700; it was not made by sbxcat",
		    r->path, name);
	}
	return fd;
}

static int trash_open(struct session_root *r, struct sbx_error **err)
{
	return session_private_dir(r, TRASH_NAME, true, err);
}

void session_trash_init(struct session_trash *t)
{
	t->fd = t->dir_fd = -1;
	t->name[0] = '\0';
}

void session_trash_release(struct session_trash *t)
{
	if (t->fd >= 0)
		close(t->fd); /* releases the flock */
	if (t->dir_fd >= 0)
		close(t->dir_fd);
	session_trash_init(t);
}

int session_trash_key(struct session_root *r, const char *key,
		      struct session_trash *t, struct sbx_error **err)
{
	struct session_trash mine;
	int kfd, tfd;

	if (!t)
		t = &mine;
	session_trash_init(t);
	kfd = session_keydir_open(r, key, err);
	if (kfd < 0)
		return -1;
	/* Held until the entry is emptied: session_trash_finish leaves an
	 * entry alone while someone holds it.  Without t the caller holds
	 * it already (a second flock of ours would wait for it for ever). */
	if (t != &mine && session_lock_wait(r, kfd, r->path, key, err) < 0) {
		close(kfd);
		return -1;
	}
	tfd = trash_open(r, err);
	if (tfd < 0) {
		close(kfd);
		return -1;
	}
	snprintf(t->name, sizeof(t->name), "%s.", key);
	random_hex(t->name + strlen(t->name), 8);
	t->fd = kfd;
	t->dir_fd = tfd;
	if (renameat(r->fd, key, tfd, t->name) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot move '%s/%s' into '%s/" TRASH_NAME "'",
			      r->path, key, r->path);
		session_trash_release(t);
		return -1;
	}
	if (fsync(r->fd) < 0 && errno != EINVAL) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot sync '%s'",
			      r->path);
		if (t == &mine)
			session_trash_release(t);
		return -1;
	}
	if (t == &mine)
		session_trash_release(t);
	return 0;
}

/* Empty the entry name of the trash (open on tfd) and remove it; fd is
 * the entry itself, consumed.  An entry already gone is done. */
static int trash_empty_at(struct session_root *r, int tfd, const char *name,
			  int fd, struct sbx_error **err)
{
	cleanup_free char *top =
	    xasprintf("%s/" TRASH_NAME "/%s", r->path, name);

	/* A disk budget's mount (session-budget.h) goes first: the walk
	 * never crosses a mount, and the image is removed with the rest. */
	if (session_budget_unmount_at(fd, top, WORKSPACE_NAME, err) < 0) {
		close(fd);
		return -1;
	}
	if (tree_empty(fd, top, SBX_E_UNAVAILABLE,
		       r->cancel, NULL, err) < 0)
		return -1;
	if (unlinkat(tfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot remove '%s'", top);
	return 0;
}

int session_trash_empty(struct session_root *r, struct session_trash *t,
			struct sbx_error **err)
{
	int fd = t->fd >= 0 ? fcntl(t->fd, F_DUPFD_CLOEXEC, 0) : -1;
	int rc;

	if (t->fd >= 0 && fd < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot open '%s/" TRASH_NAME "/%s'",
				   r->path, t->name);
	else
		rc = trash_empty_at(r, t->dir_fd, t->name, fd, err);
	session_trash_release(t);
	return rc;
}

int session_trash_finish(struct session_root *r, unsigned *finished,
			 struct sbx_error **err)
{
	DIR *d;
	struct dirent *de;
	int tfd, rc = 0;

	*finished = 0;
	tfd =
	    openat(r->fd, TRASH_NAME,
		   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (tfd < 0 && errno == ENOENT)
		return 0; /* nothing was ever purged */
	if (tfd >= 0)
		close(tfd);
	tfd = trash_open(r, err); /* checked as when it is made */
	if (tfd < 0)
		return -1;
	d = tree_dir_of(fcntl(tfd, F_DUPFD_CLOEXEC, 0));
	if (!d) {
		close(tfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read '%s/" TRASH_NAME "'",
				     r->path);
	}
	for (errno = 0; rc == 0 && (de = readdir(d)); errno = 0) {
		int fd;

		if (tree_dot_or_dotdot(de->d_name))
			continue;
		fd = openat(tfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
				O_NOCTTY);
		if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
			/* Only directories are moved here; a file is not
			 * sbxcat's, and a name of the trash is no one's. */
			if (unlinkat(tfd, de->d_name, 0) == 0)
				(*finished)++;
			continue;
		}
		if (fd < 0)
			continue; /* gone meanwhile */
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd); /* being emptied by whoever moved it */
			continue;
		}
		rc = trash_empty_at(r, tfd, de->d_name, fd, err);
		if (rc == 0)
			(*finished)++;
	}
	if (rc == 0 && errno)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot read '%s/" TRASH_NAME "'", r->path);
	closedir(d);
	close(tfd);
	return rc;
}

int session_purge(struct session_root *r, const char *key,
		  struct sbx_error **err)
{
	struct session_trash t;

	if (session_trash_key(r, key, &t, err) < 0)
		return -1;
	return session_trash_empty(r, &t, err);
}

/* A file with more than one link: its blocks are counted once, at the end. */
struct linked {
	dev_t dev;
	ino_t ino;
	blkcnt_t blocks;
};

static int cmp_linked(const void *a, const void *b)
{
	const struct linked *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/* Blocks of the tree below the walk's top, in 512-byte units. */
static int size_tree(struct tree_walk *w, const atomic_int *cancel,
		     unsigned long long *blocks, unsigned long long *files,
		     struct sbx_error **err)
{
	struct linked *links = NULL;
	size_t nlinks = 0, alloc = 0;
	struct dirent *de;
	int rc = 0;

	while (rc == 0) {
		bool down = false;

		if (cancel && atomic_load(cancel)) {
			rc = sbx_error_set(err, SBX_E_CANCELLED, 0,
					   "interrupted by signal %d",
					   atomic_load(cancel));
			break;
		}
		for (errno = 0; (de = readdir(w->d)); errno = 0) {
			struct stat st;

			if (tree_dot_or_dotdot(de->d_name))
				continue;
			if (fstatat(dirfd(w->d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* gone since it was listed */
			(*files)++;
			if (S_ISDIR(st.st_mode)) {
				struct sbx_error *skip = NULL;

				/* A mount point, or a directory the sandbox
				 * swapped meanwhile: counted, not entered (a
				 * failure here would let it hide its size). */
				if (st.st_dev != w->dev ||
				    tree_walk_down(w, de->d_name, &st, &skip) <
					0) {
					sbx_error_free(&skip);
					continue;
				}
				*blocks += (unsigned long long)st.st_blocks;
				down = true;
				break;
			}
			if (st.st_nlink > 1) {
				ALLOC_GROW(links, nlinks + 1, alloc);
				links[nlinks].dev = st.st_dev;
				links[nlinks].ino = st.st_ino;
				links[nlinks++].blocks = st.st_blocks;
			} else {
				*blocks += (unsigned long long)st.st_blocks;
			}
		}
		if (rc < 0 || down)
			continue;
		if (errno) {
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot read a directory in '%s'",
					   w->top);
			break;
		}
		if (w->depth == 0)
			break;
		rc = tree_walk_up(w, true, err);
	}
	if (nlinks)
		qsort(links, nlinks, sizeof(*links), cmp_linked);
	for (size_t i = 0; i < nlinks; i++)
		if (i == 0 || cmp_linked(&links[i], &links[i - 1]) != 0)
			*blocks += (unsigned long long)links[i].blocks;
	free(links);
	return rc;
}

int session_workspace_size(struct session_root *r,
			   const struct session_record *rec,
			   unsigned long long *bytes, unsigned long long *files,
			   struct sbx_error **err)
{
	cleanup_free char *top = session_workspace_path(r, rec);
	unsigned long long blocks = 0;
	struct tree_walk w;
	struct stat st;
	int fd = session_workspace_open(r, rec, err);
	int rc;

	*bytes = *files = 0;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot stat '%s'", top);
	}
	blocks = (unsigned long long)st.st_blocks;
	rc = tree_walk_start(&w, fd, top, SBX_E_UNAVAILABLE, err);
	if (rc == 0)
		rc = size_tree(&w, r->cancel, &blocks, files, err);
	tree_walk_end(&w);
	if (rc == 0)
		*bytes = blocks * 512;
	return rc;
}

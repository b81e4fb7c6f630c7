/*
 * session-budget.c - a workspace's disk budget (session-budget.h): the
 * sparse ext4 image, its loop device and its mount, made, undone,
 * measured and swept.
 *
 * Everything is reached from descriptors of directories of root's with
 * no access for others (ROOT/KEY, ROOT/.sbxcat-ws), which the sandbox
 * can neither rename nor write; the paths handed to mkfs.ext4, mount(2)
 * and umount2(2) go through those same directories.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/size.h"
#include "engine/engine.h"
#include "session/session-budget.h"
#include "session/session-layout.h"
#include "session/session.h"

#define EXT4_MAGIC 0xEF53
#define IMG_SUFFIX ".img"
/* What of mkfs.ext4's output a failure message carries. */
#define MKFS_SAID_MAX 512

const struct size_bounds session_budget_bounds = {.min = SESSION_BUDGET_MIN,
						  .max = SESSION_BUDGET_MAX,
						  .min_name =
						      "a disk budget's minimum",
						  .max_name = "ext4's bound"};

const char *session_budget_check(unsigned long long bytes,
				 unsigned long long inodes)
{
	if (bytes && (bytes < SESSION_BUDGET_MIN || bytes > SESSION_BUDGET_MAX))
		return "a disk budget is from 16 MiB to 16 TiB";
	if (inodes &&
	    (inodes < SESSION_INODES_MIN || inodes > SESSION_INODES_MAX))
		return "an inode budget is from 64 to 2147483648";
	return NULL;
}

/* Is DIR/name (pfd) a mount point: its device not its parent's?  1, 0
 * (or missing: 0), -1 with errno. */
static int mounted_at(int pfd, const char *name, struct stat *st)
{
	struct stat pst;

	if (fstat(pfd, &pst) < 0)
		return -1;
	if (fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	return S_ISDIR(st->st_mode) && st->st_dev != pst.st_dev;
}

/*
 * Is the file system of device dev a disk budget's: a loop device whose
 * backing file is DIR/name.img (DIR resolved: the kernel says the path
 * it resolves; after the image was removed, with " (deleted)")?
 */
static bool budget_dev(dev_t dev, const char *dir, const char *name)
{
	cleanup_free char *sys = xasprintf(
	    "/sys/dev/block/%u:%u/loop/backing_file", major(dev), minor(dev));
	cleanup_free char *real = realpath(dir, NULL);
	cleanup_free char *want = NULL;
	char file[PATH_MAX + 16];
	int fd = open(sys, O_RDONLY | O_CLOEXEC);
	ssize_t k;

	if (fd < 0 || !real) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	k = read(fd, file, sizeof(file) - 1);
	close(fd);
	if (k <= 0)
		return false;
	file[k] = '\0';
	file[strcspn(file, "\n")] = '\0';
	want = xasprintf("%s/%s" IMG_SUFFIX, real, name);
	return strcmp(file, want) == 0 ||
	       (strncmp(file, want, strlen(want)) == 0 &&
		strcmp(file + strlen(want), " (deleted)") == 0);
}

int session_budget_unmount_at(int pfd, const char *dir, const char *name,
			      struct sbx_error **err)
{
	cleanup_free char *path = xasprintf("%s/%s", dir, name);

	/* A mount stacked on a mount is undone to the bottom, at most a
	 * few: only root can mount here, so more is not sbxcat's. */
	for (int i = 0; i < 4; i++) {
		struct statfs fs;
		struct stat st;
		int m = mounted_at(pfd, name, &st), fd;

		if (m < 0)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "cannot look at '%s'", path);
		if (m == 0)
			return 0;
		fd = openat(pfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstatfs(fd, &fs) < 0) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
					     "cannot look at '%s'", path);
		}
		close(fd);
		if (fs.f_type != EXT4_MAGIC ||
		    !budget_dev(st.st_dev, dir, name))
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "'%s' is a mount point that is "
					     "not a disk budget's; left "
					     "alone",
					     path);
		if (umount2(path, UMOUNT_NOFOLLOW) < 0 &&
		    (errno != EBUSY ||
		     umount2(path, UMOUNT_NOFOLLOW | MNT_DETACH) < 0))
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "cannot unmount the disk budget "
					     "at '%s'",
					     path);
	}
	return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			     "'%s' is still a mount point after four unmounts",
			     path);
}

/* ---- mkfs.ext4 ---- */

/* mkfs at path: status 3 saying why, with the start of what it said. */
static int run_mkfs(const char *mkfs, const char *path,
		    const struct session_budget *b, unsigned long uid,
		    struct sbx_error **err)
{
	char owner[128], inodes[32], said[MKFS_SAID_MAX + 1];
	/* -Wwrite-strings: posix_spawn wants char *, the literals are
	 * const; arrays of the function's own. */
	char a_f[] = "-F", a_q[] = "-q", a_m[] = "-m", a_0[] = "0",
	     a_e[] = "-E", a_n[] = "-N", a_o[] = "-O", a_g[] = "-G",
	     a_1024[] = "1024", feat[] = "sparse_super2";
	char e_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
	     e_lc[] = "LC_ALL=C";
	char *argv[16];
	char *envp[] = {e_path, e_lc, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	size_t n = 0, got = 0;
	int out[2], rc, status;
	pid_t pid;

	/*
	 * What a budget costs the host before the sandbox writes a byte
	 * (issue 28: a 15t budget took 1.2 GB and 4 s): the inode tables
	 * and the journal are left unwritten (lazy_*_init: the kernel
	 * zeroes the tables in the background once mounted, the journal
	 * is written as it is used); two backups of the group descriptors
	 * instead of one in every group 3^n, 5^n, 7^n (sparse_super2);
	 * metadata packed in flex groups of 1024.  Measured with e2fsprogs
	 * 1.47 (st_blocks of the image): 16g 132 MiB -> 4 MiB, 15t 1242 MiB
	 * -> 27 MiB, and 0.3 s instead of 4.  (Without resize_inode 16g
	 * would take 0.2 MiB, but a full budget then still takes 850 KiB
	 * more after a write stopped at ENOSPC: its blocks stay.)
	 */
	snprintf(owner, sizeof(owner),
		 "root_owner=%lu:%lu,nodiscard,lazy_itable_init=1,"
		 "lazy_journal_init=1",
		 uid, uid);
	snprintf(inodes, sizeof(inodes), "%llu", b->inodes);
	argv[n++] = (char *)mkfs;
	argv[n++] = a_f;
	argv[n++] = a_q;
	argv[n++] = a_m;
	argv[n++] = a_0;
	argv[n++] = a_e;
	argv[n++] = owner;
	argv[n++] = a_o;
	argv[n++] = feat;
	argv[n++] = a_g;
	argv[n++] = a_1024;
	if (b->inodes) {
		argv[n++] = a_n;
		argv[n++] = inodes;
	}
	argv[n++] = (char *)path;
	argv[n] = NULL;

	if (pipe2(out, O_CLOEXEC) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot make a pipe for '%s'", mkfs);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, out[1], 2);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE); /* the service ignores it */
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
					  POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(&pid, mkfs, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(out[1]);
	if (rc != 0) {
		close(out[0]);
		sbx_error_set(err, SBX_E_UNAVAILABLE, rc,
			      "cannot run '%s' to make the disk budget", mkfs);
		sbx_error_hint(*err, "install e2fsprogs, or set SBXCAT_MKFS "
				     "to mkfs.ext4's path");
		return -1;
	}
	for (;;) {
		char buf[512];
		ssize_t k = read(out[0], buf, sizeof(buf));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k && got < MKFS_SAID_MAX; i++)
			said[got++] =
			    (buf[i] == '\n' || (unsigned char)buf[i] < 0x20)
				? ' '
				: buf[i];
	}
	said[got] = '\0';
	close(out[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "cannot wait for '%s'", mkfs);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s' failed (exit %d) making the disk "
				     "budget '%s'%s%s",
				     mkfs, WEXITSTATUS(status), path,
				     got ? ": " : "", said);
	return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			     "'%s' was killed by signal %d making '%s'", mkfs,
			     WTERMSIG(status), path);
}

/* ---- the loop device ---- */

/* A free loop device bound to imgfd with autoclear: its descriptor (and
 * name in dev), or -1. */
static int loop_attach(int imgfd, const char *img, char dev[32],
		       struct sbx_error **err)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), e = 0;

	if (ctl < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "no loop device for the disk budget "
			      "(/dev/loop-control)");
		sbx_error_hint(*err, "load the loop module, or unset "
				     "SANDBOXD_WORKSPACE_QUOTA");
		return -1;
	}
	/* Another process may take the free one between the two calls:
	 * EBUSY, and the next is asked for. */
	for (int tries = 0; tries < 16; tries++) {
		struct loop_config cfg;
		int n = ioctl(ctl, LOOP_CTL_GET_FREE), fd;

		if (n < 0) {
			e = errno;
			break;
		}
		snprintf(dev, 32, "/dev/loop%d", n);
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			e = errno;
			break;
		}
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (unsigned)imgfd;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		snprintf((char *)cfg.info.lo_file_name,
			 sizeof(cfg.info.lo_file_name), "%s", img);
		if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
			close(ctl);
			return fd;
		}
		e = errno;
		close(fd);
		if (e != EBUSY)
			break;
	}
	close(ctl);
	sbx_error_set(err, SBX_E_UNAVAILABLE, e,
		      "no loop device could be attached to '%s' for the disk "
		      "budget",
		      img);
	return -1;
}

/* ---- make ---- */

/* Is the directory at fd empty? */
static bool dir_empty(int pfd, const char *name)
{
	int fd =
	    openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	bool empty = true;
	DIR *d;

	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	while (empty && (de = readdir(d)))
		empty = strcmp(de->d_name, ".") == 0 ||
			strcmp(de->d_name, "..") == 0;
	closedir(d);
	return empty;
}

/* The image's directory, its path, the workspace's name in it. */
struct where {
	int pfd;
	char *dir, *img, *img_path, *ws_path;
	const char *name;
};

static void where_release(struct where *w)
{
	if (w->pfd >= 0)
		close(w->pfd);
	free(w->dir);
	free(w->img);
	free(w->img_path);
	free(w->ws_path);
}

static int where_of(struct session_root *r, const struct session_record *rec,
		    struct where *w, struct sbx_error **err)
{
	memset(w, 0, sizeof(*w));
	w->pfd = session_ws_parent(r, rec, &w->name, err);
	if (w->pfd < 0)
		return -1;
	w->dir = session_workspace_pooled(rec)
		     ? xasprintf("%s/" POOL_WS_NAME, r->path)
		     : xasprintf("%s/%s", r->path, rec->key);
	w->img = xasprintf("%s" IMG_SUFFIX, w->name);
	w->img_path = xasprintf("%s/%s", w->dir, w->img);
	w->ws_path = xasprintf("%s/%s", w->dir, w->name);
	return 0;
}

/* Is name img's temporary ("IMG.tmp" and digits, image_make's)? */
static bool tmp_of(const char *name, const char *img)
{
	size_t n = strlen(img);

	return strncmp(name, img, n) == 0 &&
	       strncmp(name + n, ".tmp", 4) == 0 && name[n + 4] &&
	       strspn(name + n + 4, "0123456789") == strlen(name + n + 4);
}

/* Remove every temporary of img in the directory pfd: what an open
 * killed during mkfs.ext4 left (the caller holds the workspace: its open
 * lock, or the pool's reservation, or nobody can be making it). */
static void drop_tmps(int pfd, const char *img)
{
	DIR *d = fdopendir(fcntl(pfd, F_DUPFD_CLOEXEC, 0));
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (tmp_of(de->d_name, img))
			(void)unlinkat(pfd, de->d_name, 0);
	closedir(d);
}

/* The image, made under a temporary name and renamed: a crash never
 * leaves a half-made one under the image's name. */
static int image_make(struct where *w, const struct session_budget *b,
		      const char *mkfs, unsigned long uid,
		      struct sbx_error **err)
{
	cleanup_free char *tmp = xasprintf("%s.tmp%ld", w->img, (long)getpid());
	cleanup_free char *tmp_path = xasprintf("%s/%s", w->dir, tmp);
	int fd, e;

	drop_tmps(w->pfd, w->img); /* a killed open's, a dead namesake's */
	fd = openat(w->pfd, tmp,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot make the disk budget's image "
				     "'%s'",
				     tmp_path);
	if (ftruncate(fd, (off_t)b->bytes) < 0) {
		e = errno;
		close(fd);
		unlinkat(w->pfd, tmp, 0);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot size the disk budget's image "
				     "'%s' to %llu bytes",
				     tmp_path, b->bytes);
	}
	close(fd);
	if (run_mkfs(mkfs, tmp_path, b, uid, err) < 0 ||
	    renameat(w->pfd, tmp, w->pfd, w->img) < 0) {
		if (!*err)
			sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				      "cannot rename '%s'", tmp_path);
		unlinkat(w->pfd, tmp, 0);
		return -1;
	}
	return 0;
}

/* Mount the image at the workspace. */
static int image_mount(struct where *w, struct sbx_error **err)
{
	char dev[32], target[64];
	struct stat st;
	int img, loop, ws, rc = -1, e;

	img = openat(w->pfd, w->img, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (img < 0 || fstat(img, &st) < 0) {
		e = errno;
		if (img >= 0)
			close(img);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot open the disk budget's image "
				     "'%s'",
				     w->img_path);
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
		close(img);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s' is not a regular file of root's "
				     "with mode 0600; it was not made by "
				     "sbxcat",
				     w->img_path);
	}
	loop = loop_attach(img, w->img_path, dev, err);
	close(img);
	if (loop < 0)
		return -1;
	ws = openat(w->pfd, w->name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ws < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot open '%s'",
			      w->ws_path);
		goto out;
	}
	/* The directory held, not its path: nothing can swap it between
	 * the check and the mount. */
	snprintf(target, sizeof(target), "/proc/self/fd/%d", ws);
	if (mount(dev, target, "ext4", MS_NODEV | MS_NOSUID, "") < 0)
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot mount the disk budget '%s' (%s) at '%s'",
			      w->img_path, dev, w->ws_path);
	else
		rc = 0;
	close(ws);
out:
	/* With autoclear the device goes with the unmount; without a
	 * mount, now. */
	close(loop);
	return rc;
}

/* mkfs.ext4 makes lost+found in the root, root's: not the sandbox's to
 * see, and a new workspace is empty (e2fsck makes it again if it needs
 * it). */
static int drop_lost_found(struct where *w, struct sbx_error **err)
{
	int fd = openat(w->pfd, w->name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", w->ws_path);
	if (unlinkat(fd, "lost+found", AT_REMOVEDIR) < 0 && errno != ENOENT) {
		int e = errno;
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot remove '%s/lost+found'",
				     w->ws_path);
	}
	close(fd);
	return 0;
}

int session_budget_make(struct session_root *r,
			const struct session_record *rec,
			const struct session_budget *b, const char *mkfs,
			unsigned long uid, bool *made, bool *unbudgeted,
			struct sbx_error **err)
{
	struct where w;
	struct stat st;
	int m, rc = -1;

	*made = *unbudgeted = false;
	if (where_of(r, rec, &w, err) < 0)
		return -1;
	m = mounted_at(w.pfd, w.name, &st);
	if (m != 0) {
		rc = m > 0 ? 0
			   : sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot look at '%s'", w.ws_path);
		goto out;
	}
	if (fstatat(w.pfd, w.img, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT) {
			sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				      "cannot look at '%s'", w.img_path);
			goto out;
		}
		if (!b->bytes) {
			rc = 0;
			goto out;
		}
		if (!dir_empty(w.pfd, w.name)) {
			/* Mounting over its files would hide them. */
			*unbudgeted = true;
			rc = 0;
			goto out;
		}
		if (image_make(&w, b, mkfs, uid, err) < 0)
			goto out;
		*made = true;
	}
	if (image_mount(&w, err) < 0)
		goto undo;
	if (!*made || drop_lost_found(&w, err) == 0) {
		rc = 0;
		goto out;
	}
	{
		struct sbx_error *e2 = NULL;

		if (session_budget_unmount_at(w.pfd, w.dir, w.name, &e2) < 0)
			sbx_error_chain(&e2, err), *err = e2;
	}
undo:
	if (*made)
		unlinkat(w.pfd, w.img, 0);
	*made = false;
out:
	where_release(&w);
	return rc;
}

/* where_of, and whether the workspace is a mount point (*st its stat):
 * 1 with *w held, else 0 or -1 with *w released. */
static int where_mounted(struct session_root *r,
			 const struct session_record *rec, struct where *w,
			 struct stat *st, struct sbx_error **err)
{
	int m;

	if (where_of(r, rec, w, err) < 0)
		return -1;
	m = mounted_at(w->pfd, w->name, st);
	if (m < 0)
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot look at '%s'", w->ws_path);
	if (m <= 0)
		where_release(w);
	return m;
}

int session_budget_seen(struct engine *e, struct session_root *r,
			const struct session_record *rec, const char *container,
			const char *work_dir, struct sbx_error **err)
{
	cleanup_free char *inside = NULL;
	struct engine_container_info inspect = {0};
	struct stat st, cst;
	struct where w;
	long long pid;
	int m, rc = -1;

	m = where_mounted(r, rec, &w, &st, err);
	if (m <= 0)
		return m;
	if (engine_container_info_get(e, container, &inspect, err) < 0)
		goto out;
	pid = inspect.state.pid;
	if (pid <= 0) {
		rc = 0;
		goto out;
	}
	/* The work dir in the container, where it binds the workspace,
	 * through its root as the kernel resolves it there. */
	inside = xasprintf("/proc/%lld/root%s", (long long)pid, work_dir);
	if (stat(inside, &cst) < 0 || cst.st_dev != st.st_dev) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the container does not see the disk budget "
			      "mounted at '%s': sbxcat runs in a mount "
			      "namespace other than the engine's, so the "
			      "engine bound the directory under the mount; "
			      "refused",
			      w.ws_path);
		sbx_error_hint(*err, "run sbxcat in the engine's mount "
				     "namespace (no PrivateTmp=, ProtectHome=, "
				     "ProtectSystem= in its systemd unit)");
		goto out;
	}
	rc = 0;
out:
	engine_container_info_release(&inspect);
	where_release(&w);
	return rc;
}

int session_budget_remove(struct session_root *r,
			  const struct session_record *rec,
			  struct sbx_error **err)
{
	struct where w;
	int rc = -1;

	if (where_of(r, rec, &w, err) < 0)
		return (*err)->errnum == ENOENT ? (sbx_error_free(err), 0) : -1;
	if (session_budget_unmount_at(w.pfd, w.dir, w.name, err) < 0)
		goto out;
	if (unlinkat(w.pfd, w.img, 0) < 0 && errno != ENOENT) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot remove '%s'", w.img_path);
		goto out;
	}
	drop_tmps(w.pfd, w.img);
	rc = 0;
out:
	where_release(&w);
	return rc;
}

int session_budget_image_bytes(struct session_root *r,
			       const struct session_record *rec,
			       unsigned long long *bytes,
			       struct sbx_error **err)
{
	struct where w;
	struct stat st;
	int rc = 0;

	*bytes = 0;
	if (where_of(r, rec, &w, err) < 0)
		return (*err)->errnum == ENOENT ? (sbx_error_free(err), 0) : -1;
	if (fstatat(w.pfd, w.img, &st, AT_SYMLINK_NOFOLLOW) == 0)
		*bytes = (unsigned long long)st.st_size;
	else if (errno != ENOENT)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot look at '%s'", w.img_path);
	where_release(&w);
	return rc;
}

bool session_budget_kept_by(struct session_root *r, const char *key,
			    const char *tenant)
{
	cleanup_free char *img = xasprintf("%s/workspace" IMG_SUFFIX, key);
	cleanup_free char *ws = xasprintf("%s/workspace", key);
	struct session_record rec;
	struct sbx_error *e = NULL;
	unsigned long long bytes = 0;
	struct stat st;
	bool own, kept = false;

	/* The cheap test first: most closed workspaces have no budget, and
	 * a pooled one claimed (ROOT/KEY has no workspace) is the rare
	 * case that needs its record to find its image. */
	own = fstatat(r->fd, img, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!own && fstatat(r->fd, ws, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return false;
	if (session_record_read(r, key, &rec, &e) < 0) {
		sbx_error_free(&e);
		return false;
	}
	if (strcmp(rec.tenant, tenant) == 0)
		kept = own ||
		       (session_budget_image_bytes(r, &rec, &bytes, &e) == 0 &&
			bytes > 0);
	sbx_error_free(&e);
	session_record_release(&rec);
	return kept;
}

int session_budget_usage(struct session_root *r,
			 const struct session_record *rec,
			 struct session_usage *u, struct sbx_error **err)
{
	struct statvfs vfs;
	struct where w;
	struct stat st;
	int m, fd, rc = -1;

	memset(u, 0, sizeof(*u));
	m = where_mounted(r, rec, &w, &st, err);
	if (m <= 0)
		return m;
	fd = openat(w.pfd, w.name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstatvfs(fd, &vfs) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot measure '%s'", w.ws_path);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	u->budget = true;
	u->bytes_allowed = (unsigned long long)vfs.f_blocks * vfs.f_frsize;
	u->bytes_used =
	    (unsigned long long)(vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize;
	u->inodes_allowed = vfs.f_files;
	u->inodes_used = vfs.f_files - vfs.f_ffree;
	if (fstatat(w.pfd, w.img, &st, AT_SYMLINK_NOFOLLOW) == 0)
		u->image_bytes = (unsigned long long)st.st_size;
	rc = 0;
out:
	where_release(&w);
	return rc;
}

/* ---- the sweep ---- */

/* Is path below dir (dir + "/" + something)? */
static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1];
}

/* Every loop device whose backing file is below real (ROOT resolved),
 * let go. */
static int sweep_loops(const char *real, unsigned *cleared,
		       struct sbx_error **err)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;

	if (!d)
		return errno == ENOENT
			   ? 0
			   : sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot read /sys/block");
	while ((de = readdir(d))) {
		char file[PATH_MAX + 16], dev[300];
		cleanup_free char *bf = NULL;
		ssize_t k;
		int fd;

		if (strncmp(de->d_name, "loop", 4) != 0 ||
		    strspn(de->d_name + 4, "0123456789") !=
			strlen(de->d_name + 4) ||
		    !de->d_name[4])
			continue;
		bf = xasprintf("/sys/block/%s/loop/backing_file", de->d_name);
		fd = open(bf, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* not attached */
		k = read(fd, file, sizeof(file) - 1);
		close(fd);
		if (k <= 0)
			continue;
		file[k] = '\0';
		file[strcspn(file, "\n")] = '\0';
		if (!below(file, real))
			continue;
		snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
		fd = open(dev, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* One that something else holds open (its mount) only
		 * gains autoclear, which ours have already. */
		if (ioctl(fd, LOOP_CLR_FD) == 0)
			(*cleared)++;
		close(fd);
	}
	closedir(d);
	return 0;
}

/* Images of ROOT/.sbxcat-ws whose workspace is gone. */
static int sweep_pool_images(struct session_root *r, unsigned *cleared,
			     struct sbx_error **err)
{
	int dir = session_private_dir(r, POOL_WS_NAME, false, err);
	struct dirent *de;
	DIR *d;

	if (dir < 0)
		return (*err)->errnum == ENOENT ? (sbx_error_free(err), 0) : -1;
	d = fdopendir(fcntl(dir, F_DUPFD_CLOEXEC, 0));
	if (!d) {
		close(dir);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read '%s/" POOL_WS_NAME "'",
				     r->path);
	}
	while ((de = readdir(d))) {
		char id[SESSION_POOL_ID_LEN + 1], img[SESSION_POOL_ID_LEN + 8];
		struct stat st;

		if (strlen(de->d_name) < SESSION_POOL_ID_LEN)
			continue;
		memcpy(id, de->d_name, SESSION_POOL_ID_LEN);
		id[SESSION_POOL_ID_LEN] = '\0';
		snprintf(img, sizeof(img), "%s" IMG_SUFFIX, id);
		if (strcmp(de->d_name, img) != 0 && !tmp_of(de->d_name, img))
			continue;
		if (!session_pool_id_valid(id) ||
		    fstatat(dir, id, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		    errno != ENOENT)
			continue;
		if (unlinkat(dir, de->d_name, 0) == 0)
			(*cleared)++;
	}
	closedir(d);
	close(dir);
	return 0;
}

int session_budget_sweep(struct session_root *r, unsigned *cleared,
			 struct sbx_error **err)
{
	cleanup_free char *real = realpath(r->path, NULL);

	*cleared = 0;
	if (!real)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot resolve '%s'", r->path);
	if (sweep_pool_images(r, cleared, err) < 0)
		return -1;
	return sweep_loops(real, cleared, err);
}

/* An image's apparent size added, when DIR/name (dfd) is one. */
static void add_image(int dfd, const char *name, unsigned *n,
		      unsigned long long *apparent)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode)) {
		(*n)++;
		*apparent += (unsigned long long)st.st_size;
	}
}

int session_budget_images(struct session_root *r, unsigned *n,
			  unsigned long long *apparent,
			  unsigned long long *host_free, struct sbx_error **err)
{
	struct statvfs vfs;
	char **keys = NULL;
	size_t nkeys = 0;
	int dir;

	*n = 0;
	*apparent = *host_free = 0;
	if (fstatvfs(r->fd, &vfs) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot measure '%s'", r->path);
	*host_free = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	if (session_keys(r, &keys, &nkeys, err) < 0)
		return -1;
	for (size_t i = 0; i < nkeys; i++) {
		int kfd =
		    openat(r->fd, keys[i],
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (kfd < 0)
			continue;
		add_image(kfd, WORKSPACE_NAME IMG_SUFFIX, n, apparent);
		close(kfd);
	}
	strv_free(keys, nkeys);
	dir = openat(r->fd, POOL_WS_NAME,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir >= 0) {
		DIR *d = fdopendir(fcntl(dir, F_DUPFD_CLOEXEC, 0));
		struct dirent *de;

		while (d && (de = readdir(d))) {
			size_t len = strlen(de->d_name);

			if (len > strlen(IMG_SUFFIX) &&
			    strcmp(de->d_name + len - strlen(IMG_SUFFIX),
				   IMG_SUFFIX) == 0)
				add_image(dir, de->d_name, n, apparent);
		}
		if (d)
			closedir(d);
		close(dir);
	}
	return 0;
}

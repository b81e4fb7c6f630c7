/*
 * procs.c - an exec's processes in a cgroup of their own, stopped from
 * the host (the contract is procs.h), and the OOM kill count of a cgroup.
 *
 * Everything read from /proc and the cgroup file system may vanish
 * between two reads: a process exits, a PID is reused, a group is
 * removed with its container.  A process that cannot be read means "not
 * this one"; a stopping loop lists the group again until it is empty, so a
 * process missed in one listing (forked after it) is caught in the next.
 *
 * Identity: a process is pinned with a pidfd, then checked, through
 * /proc/PID/cgroup, to be in the group still; a pinned process holds its
 * PID, so what /proc says of the PID is said of it.  A PID reused by a
 * process elsewhere is then not in the group, and is skipped.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "exec/procs.h"

/* Between two listings while waiting for processes to go. */
#define RELIST_MS 20
/* Moving rounds (or half the time) before the container's cgroup is
 * frozen for the claim, and the time it may take in all. */
#define CLAIM_ROUNDS 50
#define CLAIM_MS 4000
/*
 * Longer than an exec takes from making its group to its claim (the
 * engine's start, at most 10 s to report the process, the claim's 4 s):
 * an empty group younger than this may be a starting exec's.
 */
#define PROCS_START_S 30
/* How long a freeze may take to settle (a process in a long D state). */
#define FREEZE_WAIT_MS 1000
/* A cgroup.procs file is read whole: the pids limit keeps it small. */
#define PROCS_FILE_MAX (4u << 20)

struct proc {
	pid_t pid, ppid;
	unsigned long long start; /* clock ticks after boot */
	long threads;
	char state;
	unsigned long flags; /* the kernel's PF_* */
	bool dead;	     /* a zombie with no live thread, or exiting */
};

/*
 * /proc/PID/stat: "pid (comm) state ppid ... num_threads(20) ...
 * starttime(22)".  comm may hold spaces and parentheses: the fields
 * start after the last ')'.  0, or -1 when the process is gone.
 */
static int read_stat(int procfd, pid_t pid, struct proc *p)
{
	char path[32], buf[1024], *s;
	unsigned long long v[22];
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	s = strrchr(buf, ')');
	if (!s || s[1] != ' ' || !s[2])
		return -1;
	p->state = s[2];
	s += 3;
	/* Fields 4.. (ppid onwards), all numbers. */
	for (field = 4; field <= 22; field++) {
		char *end;
		while (*s == ' ')
			s++;
		errno = 0;
		if (*s == '-')
			v[field - 1] = (unsigned long long)strtoll(s, &end, 10);
		else
			v[field - 1] = strtoull(s, &end, 10);
		if (end == s || errno)
			return -1;
		s = end;
	}
	p->pid = pid;
	p->ppid = (pid_t)v[3];
	p->flags = (unsigned long)v[8];
	p->threads = (long)v[19];
	p->start = v[21];
	/*
	 * A zombie leader whose other threads still run (it called
	 * SYS_exit itself) is alive: its group can still act and still
	 * takes a signal.
	 */
	p->dead = p->state == 'X' || p->state == 'x' ||
		  (p->state == 'Z' && p->threads <= 1);
	return 0;
}

void procs_group_release(struct procs_group *g)
{
	free(g->dir);
	free(g->parent);
	free(g->rel);
	memset(g, 0, sizeof(*g));
}

/*
 * The cgroup lines of /proc/self/mountinfo, newly allocated (NULL when
 * it cannot be read), kept for CGROUP_MOUNTS_MS: the kernel makes the
 * whole table on each read, costly on a host with many overlay mounts,
 * and a cgroup hierarchy is mounted once.  The lock is held around
 * fork(2) (procs_watch's), so a child never finds it held.
 */
#define CGROUP_MOUNTS_MS 30000
static pthread_mutex_t mounts_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t mounts_once = PTHREAD_ONCE_INIT;
static char *mounts_kept;
static long long mounts_at;

static void mounts_prepare(void) { pthread_mutex_lock(&mounts_lock); }
static void mounts_release(void) { pthread_mutex_unlock(&mounts_lock); }
static void mounts_init(void)
{
	pthread_atfork(mounts_prepare, mounts_release, mounts_release);
}

static char *cgroup_mountinfo(void)
{
	char *data = NULL, *copy = NULL, *line, *save = NULL;
	struct strbuf sb = STRBUF_INIT;
	struct sbx_error *e = NULL;
	size_t len;

	pthread_once(&mounts_once, mounts_init);
	pthread_mutex_lock(&mounts_lock);
	if (mounts_kept && clock_now_ms() - mounts_at < CGROUP_MOUNTS_MS) {
		copy = xstrdup(mounts_kept);
		pthread_mutex_unlock(&mounts_lock);
		return copy;
	}
	if (read_file_limited("/proc/self/mountinfo", 16u << 20, &data, &len,
			      &e) < 0) {
		pthread_mutex_unlock(&mounts_lock);
		sbx_error_free(&e);
		return NULL;
	}
	for (line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (strstr(line, " - cgroup"))
			strbuf_addf(&sb, "%s\n", line);
	free(data);
	free(mounts_kept);
	mounts_kept = strbuf_detach(&sb, NULL);
	mounts_at = clock_now_ms();
	copy = xstrdup(mounts_kept);
	pthread_mutex_unlock(&mounts_lock);
	return copy;
}

/*
 * The mount point of a cgroup hierarchy and its root within the
 * hierarchy, from /proc/self/mountinfo: "id parent maj:min root
 * mountpoint opts [optional...] - fstype source superopts".  controller
 * NULL: cgroup2; else the v1 hierarchy with that option.
 */
static int cgroup_mount(const char *controller, char **mnt, char **root)
{
	char *data = cgroup_mountinfo(), *line, *save = NULL;
	int found = -1;

	if (!data)
		return -1;
	for (line = strtok_r(data, "\n", &save); line && found < 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[5], *right = strstr(line, " - "), *fs[3], *s, *o;
		char *osave = NULL;
		bool ok = true, has = false;

		if (!right)
			continue;
		*right = '\0';
		s = line;
		for (int i = 0; i < 5; i++) {
			f[i] = s;
			s = s ? strchr(s, ' ') : NULL;
			if (s)
				*s++ = '\0';
			ok = ok && f[i];
		}
		s = right + 3;
		for (int i = 0; i < 3; i++) {
			fs[i] = s;
			s = s ? strchr(s, ' ') : NULL;
			if (s)
				*s++ = '\0';
			ok = ok && fs[i];
		}
		if (!ok ||
		    strcmp(fs[0], controller ? "cgroup" : "cgroup2") != 0)
			continue;
		for (o = strtok_r(fs[2], ",", &osave); o && controller;
		     o = strtok_r(NULL, ",", &osave))
			has = has || strcmp(o, controller) == 0;
		if (controller && !has)
			continue;
		*root = xstrdup(f[3]);
		*mnt = xstrdup(f[4]);
		found = 0;
	}
	free(data);
	return found;
}

/*
 * pid's cgroup path in a hierarchy, from /proc/PID/cgroup
 * ("ID:controllers:path"; v2's line is "0::path"): controller NULL for
 * v2.  Newly allocated; NULL when there is none (or the process is gone).
 */
static char *proc_cgroup(pid_t pid, const char *controller)
{
	char path[64], *data = NULL, *line, *save = NULL, *found = NULL;
	size_t len;
	struct sbx_error *e = NULL;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (read_file_limited(path, 1u << 20, &data, &len, &e) < 0) {
		sbx_error_free(&e);
		return NULL;
	}
	for (line = strtok_r(data, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char *c = strchr(line, ':'), *p, *o, *osave = NULL;
		if (!c || !(p = strchr(c + 1, ':')))
			continue;
		*c = *p++ = '\0';
		if (!controller) {
			if (strcmp(line, "0") == 0 && c[1] == '\0')
				found = xstrdup(p);
			continue;
		}
		for (o = strtok_r(c + 1, ",", &osave); o && !found;
		     o = strtok_r(NULL, ",", &osave))
			if (strcmp(o, controller) == 0)
				found = xstrdup(p);
	}
	free(data);
	return found;
}

/* MNT + (REL less the mount's ROOT), or NULL when REL is outside it. */
static char *cgroup_dir(const char *mnt, const char *root, const char *rel)
{
	size_t rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);

	if (rlen) {
		if (strncmp(rel, root, rlen) != 0 ||
		    (rel[rlen] != '/' && rel[rlen]))
			return NULL;
		rel += rlen;
	}
	return xasprintf("%s%s%s", mnt, *rel == '/' ? "" : "/", rel);
}

/*
 * In mountinfo's text (left as it was), the v1 hierarchy mounted with
 * option ctl: its mount point and root (pointers into the text, valid
 * until it is freed; the fields end at a blank).  0, or -1 when none.
 */
static int v1_mount_of(const char *mountinfo, const char *ctl, char **mnt,
		       char **root)
{
	size_t cl = strlen(ctl);

	for (const char *l = mountinfo; l && *l;) {
		const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
		const char *dash = strstr(l, " - cgroup ");

		if (dash && dash < end) {
			/* "... - cgroup SOURCE SUPEROPTS": the options last. */
			const char *o = strchr(dash + 10, ' ');

			while (o && o < end) {
				o++;
				if ((size_t)(end - o) >= cl && !strncmp(o, ctl, cl) &&
				    (o + cl == end || o[cl] == ',')) {
					/* Fields 4 and 5: root, mount point. */
					const char *f = l;

					for (int i = 0; i < 3 && f; i++)
						f = strchr(f, ' '), f = f ? f + 1 : f;
					if (f) {
						const char *r_end = strchr(f, ' ');
						const char *m = r_end ? r_end + 1 : NULL;
						const char *m_end = m ? strchr(m, ' ') : NULL;

						if (m_end) {
							*root = xstrndup(f, (size_t)(r_end - f));
							*mnt = xstrndup(m, (size_t)(m_end - m));
							return 0;
						}
					}
				}
				o = memchr(o, ',', (size_t)(end - o));
			}
		}
		l = nl ? nl + 1 : NULL;
	}
	return -1;
}

int procs_v1_join_open(pid_t init_pid, int **fds, size_t *n,
		       struct sbx_error **err)
{
	char path[64], *data = NULL, *mounts = NULL, *line, *save = NULL;
	size_t len;
	int rc = 0;

	*fds = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)init_pid);
	if (read_file_limited(path, 1u << 20, &data, &len, err) < 0)
		return -1;
	if (!(mounts = cgroup_mountinfo())) {
		free(data);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read /proc/self/mountinfo");
	}
	for (line = strtok_r(data, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *c = strchr(line, ':'), *p, *comma, *mnt = NULL;
		char *root = NULL, *dir = NULL, *file;
		int fd;

		if (!c || !(p = strchr(c + 1, ':')))
			continue;
		*c = *p++ = '\0';
		/* v2's line (0::path) is the exec group's, not joined here. */
		if (strcmp(line, "0") == 0)
			continue;
		if ((comma = strchr(c + 1, ',')))
			*comma = '\0';
		if (v1_mount_of(mounts, c + 1, &mnt, &root) == 0)
			dir = cgroup_dir(mnt, root, p);
		free(mnt);
		free(root);
		if (!dir) {
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					   "the v1 cgroup '%s' of process %d "
					   "is not mounted here",
					   c + 1, (int)init_pid);
			break;
		}
		file = xasprintf("%s/cgroup.procs", dir);
		fd = open(file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot open '%s'", file);
		else {
			*fds = xrealloc(*fds, (*n + 1) * sizeof(**fds));
			(*fds)[(*n)++] = fd;
		}
		free(file);
		free(dir);
	}
	free(data);
	free(mounts);
	if (rc < 0) {
		for (size_t i = 0; i < *n; i++)
			close((*fds)[i]);
		free(*fds);
		*fds = NULL;
		*n = 0;
	}
	return rc;
}

static const char *controller_of(int version)
{
	return version == 1 ? "freezer" : NULL;
}

int procs_container_cgroup(pid_t init_pid, int want, int *version, char **dir,
			   char **rel, struct sbx_error **err)
{
	*dir = *rel = NULL;
	for (int v = 2; v >= 1; v--) {
		char *r, *mnt = NULL, *root = NULL, *d;

		if (want && v != want)
			continue;
		r = proc_cgroup(init_pid, controller_of(v));
		/* The root cgroup is the host's, never a container's. */
		if (!r || strcmp(r, "/") == 0 ||
		    cgroup_mount(controller_of(v), &mnt, &root) < 0) {
			free(r);
			continue;
		}
		d = cgroup_dir(mnt, root, r);
		free(mnt);
		free(root);
		if (!d || access(d, W_OK) < 0) {
			free(d);
			free(r);
			continue;
		}
		*version = v;
		*dir = d;
		*rel = r;
		return 0;
	}
	if (kill(init_pid, 0) < 0 && errno == ESRCH)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, ESRCH,
				     "the session's init (process %d) is gone",
				     (int)init_pid);
	return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			     "process %d is in no cgroup sbxcat can manage "
			     "here (cgroup2, or the v1 freezer, mounted and "
			     "writable), so a command's deadline could not be "
			     "enforced",
			     (int)init_pid);
}

int procs_group_create(pid_t init_pid, int want, long long start,
		       long long deadline, struct procs_group *g,
		       struct sbx_error **err)
{
	char *parent = NULL, *prel = NULL, hex[17];

	memset(g, 0, sizeof(*g));
	if (procs_container_cgroup(init_pid, want, &g->version, &parent, &prel,
				   err) < 0)
		return -1;
	random_hex(hex, 8);
	g->parent = parent;
	g->start = start;
	g->deadline = deadline;
	g->dir = xasprintf("%s/" PROCS_GROUP_PREFIX "%lld-%lld-%s", parent,
			   start, deadline, hex);
	g->rel = xasprintf("%s/" PROCS_GROUP_PREFIX "%lld-%lld-%s",
			   strcmp(prel, "/") ? prel : "", start, deadline, hex);
	free(prel);
	if (mkdir(g->dir, 0700) < 0) {
		int e = errno;
		sbx_error_set(err, SBX_E_UNAVAILABLE, e,
			      "cannot make the command's cgroup '%s'", g->dir);
		procs_group_release(g);
		return -1;
	}
	return 0;
}

/* DIR/cgroup.procs as PIDs; *n of them, *v newly allocated. */
static int list_procs(const char *dir, pid_t **v, size_t *n,
		      struct sbx_error **err)
{
	char *path = xasprintf("%s/cgroup.procs", dir), *data = NULL, *s;
	size_t len, alloc = 0;

	*v = NULL;
	*n = 0;
	if (read_file_limited(path, PROCS_FILE_MAX, &data, &len, err) < 0) {
		free(path);
		return -1;
	}
	free(path);
	for (s = data; *s;) {
		char *end;
		long p;

		errno = 0;
		p = strtol(s, &end, 10);
		if (end == s)
			break;
		if (!errno && p > 0 && p <= INT_MAX) {
			ALLOC_GROW(*v, *n + 1, alloc);
			(*v)[(*n)++] = (pid_t)p;
		}
		s = end + (*end == '\n');
	}
	free(data);
	return 0;
}

/* Write text to DIR/NAME; -1 with errno. */
static int write_knob(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW), e = 0;

	free(path);
	if (fd < 0)
		return -1;
	if (write_all(fd, text, strlen(text)) < 0)
		e = errno ? errno : EIO;
	close(fd);
	errno = e;
	return e ? -1 : 0;
}

static int move_pid(const char *dir, pid_t pid)
{
	char num[24];

	snprintf(num, sizeof(num), "%d\n", (int)pid);
	return write_knob(dir, "cgroup.procs", num);
}

static int open_proc(struct sbx_error **err)
{
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "opening /proc");
	return fd;
}

static void sleep_ms(long ms)
{
	poll(NULL, 0, (int)ms);
}

/* Is the group (DIR, of version) frozen now? */
static bool is_frozen(int version, const char *dir)
{
	char *path = xasprintf(
	    "%s/%s", dir, version == 1 ? "freezer.state" : "cgroup.events");
	char *data = NULL;
	size_t len;
	struct sbx_error *e = NULL;
	bool yes = false;

	if (read_file_limited(path, 64u << 10, &data, &len, &e) == 0)
		yes = version == 1 ? strncmp(data, "FROZEN", 6) == 0
				   : strstr(data, "frozen 1") != NULL;
	sbx_error_free(&e);
	free(data);
	free(path);
	return yes;
}

/*
 * Freeze DIR and wait (up to FREEZE_WAIT_MS) until it is; *was: it was
 * frozen already (by the engine's pause), so thaw must leave it so.
 */
static int freeze(int version, const char *dir, bool *was,
		  struct sbx_error **err)
{
	long long until = clock_now_ms() + FREEZE_WAIT_MS;

	*was = is_frozen(version, dir);
	if (*was)
		return 0;
	if (write_knob(dir, version == 1 ? "freezer.state" : "cgroup.freeze",
		       version == 1 ? "FROZEN" : "1") < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot freeze the cgroup '%s'", dir);
	while (!is_frozen(version, dir) && clock_now_ms() < until)
		sleep_ms(5);
	return 0;
}

static void thaw(int version, const char *dir, bool was)
{
	if (!was)
		write_knob(dir,
			   version == 1 ? "freezer.state" : "cgroup.freeze",
			   version == 1 ? "THAWED" : "0");
}

/*
 * The container's main process: init's earliest-started child among the
 * PIDs of its own cgroup (an orphan re-parented to init starts later
 * than the process init was started to run).  0 when there is none.
 */
static pid_t main_of(int procfd, pid_t init_pid, const pid_t *v, size_t n)
{
	pid_t best = 0;
	unsigned long long best_start = 0;

	for (size_t i = 0; i < n; i++) {
		struct proc p = {0};
		if (v[i] == init_pid || read_stat(procfd, v[i], &p) < 0 ||
		    p.ppid != init_pid)
			continue;
		if (!best || p.start < best_start ||
		    (p.start == best_start && p.pid < best)) {
			best = p.pid;
			best_start = p.start;
		}
	}
	return best;
}

/* One round: move what is not init or main; *left those still there. */
static int claim_round(const struct procs_group *g, int procfd, pid_t init_pid,
		       size_t *moved, size_t *left, struct sbx_error **err)
{
	pid_t *v = NULL, main_pid;
	size_t n = 0;
	int ret = 0;

	*left = 0;
	if (list_procs(g->parent, &v, &n, err) < 0)
		return -1;
	main_pid = main_of(procfd, init_pid, v, n);
	for (size_t i = 0; i < n; i++) {
		if (v[i] == init_pid || v[i] == main_pid)
			continue;
		(*left)++;
		if (move_pid(g->dir, v[i]) == 0) {
			(*moved)++;
		} else if (errno != ESRCH) {
			ret = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					    "cannot move process %d into the "
					    "command's cgroup '%s'",
					    (int)v[i], g->dir);
			break;
		}
	}
	free(v);
	return ret;
}

/*
 * What a claim could not move (processes that exit as they are moved are
 * listed a moment longer, and take no move): SIGKILL, each pinned and
 * checked to be in the container's own cgroup still.  Under the exec
 * lock they can only be this exec's.
 */
static void kill_unclaimed(const struct procs_group *g, int procfd,
			   pid_t init_pid)
{
	const char *slash = strrchr(g->rel, '/');
	char *prel = xstrndup(
	    g->rel, slash && slash != g->rel ? (size_t)(slash - g->rel) : 1);
	pid_t *v = NULL, main_pid;
	size_t n = 0;
	struct sbx_error *e = NULL;

	if (list_procs(g->parent, &v, &n, &e) < 0)
		n = 0;
	sbx_error_free(&e);
	main_pid = main_of(procfd, init_pid, v, n);
	for (size_t i = 0; i < n; i++) {
		int pfd;
		char *cg;

		if (v[i] == init_pid || v[i] == main_pid)
			continue;
		pfd = (int)syscall(SYS_pidfd_open, v[i], 0);
		if (pfd < 0)
			continue;
		cg = proc_cgroup(v[i], controller_of(g->version));
		if (cg && strcmp(cg, prel) == 0)
			syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		free(cg);
		close(pfd);
	}
	free(v);
	free(prel);
}

int procs_group_claim(const struct procs_group *g, pid_t init_pid,
		      size_t *moved, struct sbx_error **err)
{
	long long t0 = clock_now_ms();
	size_t left = 1, before = SIZE_MAX;
	bool frozen = false, was = false;
	int procfd = open_proc(err), ret = 0;

	*moved = 0;
	if (procfd < 0)
		return -1;
	/*
	 * Every move takes a process out; only what it forked before the
	 * move is left, so this ends unless they fork faster than it moves:
	 * then the container's cgroup is frozen (its processes cannot fork;
	 * the group, below it, is frozen with it, so moving keeps them
	 * frozen), until a round moves nothing more or the time is up.
	 */
	for (int round = 0; ret == 0; round++) {
		long long el;

		ret = claim_round(g, procfd, init_pid, moved, &left, err);
		if (ret < 0 || !left)
			break;
		el = clock_now_ms() - t0;
		if (frozen && (left >= before || el >= CLAIM_MS))
			break;
		before = left;
		if (!frozen &&
		    (round + 1 >= CLAIM_ROUNDS || el >= CLAIM_MS / 2)) {
			ret = freeze(g->version, g->parent, &was, err);
			frozen = ret == 0;
		}
	}
	if (ret == 0 && left)
		kill_unclaimed(g, procfd, init_pid);
	if (frozen)
		thaw(g->version, g->parent, was);
	close(procfd);
	return ret;
}

int procs_group_count(const struct procs_group *g, size_t *n,
		      struct sbx_error **err)
{
	pid_t *v = NULL;

	*n = 0;
	if (list_procs(g->dir, &v, n, err) < 0) {
		if ((*err)->errnum == ENOENT) {
			sbx_error_free(err);
			return 0;
		}
		return -1;
	}
	free(v);
	return 0;
}

/*
 * The PIDs signalled, for counting them once and sending TERM once each:
 * an open-addressing set, so that a fork bomb's thousands of PIDs cost a
 * lookup each, not a scan.  (A PID reused within the stop by a new
 * member is counted once and not sent TERM again: the KILL that follows
 * the grace reaches it.)
 */
struct seen {
	pid_t *v; /* 0: empty slot */
	size_t n, cap;
};

static size_t seen_slot(const struct seen *s, pid_t pid)
{
	size_t i = ((size_t)pid * 2654435761u) & (s->cap - 1);

	while (s->v[i] && s->v[i] != pid)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static bool seen_has(const struct seen *s, pid_t pid)
{
	return s->cap && s->v[seen_slot(s, pid)] == pid;
}

static void seen_add(struct seen *s, pid_t pid)
{
	if (seen_has(s, pid))
		return;
	if ((s->n + 1) * 2 > s->cap) {
		struct seen big = {.cap = s->cap ? s->cap * 2 : 1024};

		big.v = xcalloc(big.cap, sizeof(*big.v));
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i])
				big.v[seen_slot(&big, s->v[i])] = s->v[i];
		big.n = s->n;
		free(s->v);
		*s = big;
	}
	s->v[seen_slot(s, pid)] = pid;
	s->n++;
}

/*
 * Pin pid with a pidfd and check it is in g still, then signal it
 * through the pidfd (sig 0: only pin and check).  *p gets its stat;
 * *sent when the signal reached it.
 */
static int pin_and_signal(int procfd, const struct procs_group *g, pid_t pid,
			  int sig, struct proc *p, bool *sent,
			  struct sbx_error **err)
{
	char *cg;
	int pfd;

	*sent = false;
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0) {
		if (errno == ESRCH)
			return 0;
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot pin process %d to signal it "
				     "(pidfd_open, Linux 5.3 or later)",
				     (int)pid);
	}
	cg = proc_cgroup(pid, controller_of(g->version));
	if (cg && strcmp(cg, g->rel) == 0 && read_stat(procfd, pid, p) == 0 &&
	    !p->dead) {
		if (syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) == 0)
			*sent = true;
		else if (errno != ESRCH) {
			int e = errno;
			free(cg);
			close(pfd);
			return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
					     "signalling process %d", (int)pid);
		}
	}
	free(cg);
	close(pfd);
	return 0;
}

/*
 * sig to every member listed (once: only to those not in seen), each
 * pinned and checked; those reached into seen; *n listed.  Stops at
 * until_ms (0: no limit), so that one pass over a fork bomb's members
 * cannot outlast the grace.
 */
static int signal_all(int procfd, const struct procs_group *g, int sig,
		      struct seen *seen, bool once, long long until_ms,
		      size_t *n, struct sbx_error **err)
{
	pid_t *v = NULL;
	int ret = 0;

	if (list_procs(g->dir, &v, n, err) < 0)
		return -1;
	for (size_t i = 0; i < *n && ret == 0; i++) {
		struct proc p = {0};
		bool sent;

		if (once && seen_has(seen, v[i]))
			continue;
		if (until_ms && (i & 63) == 63 && clock_now_ms() >= until_ms)
			break;
		ret = pin_and_signal(procfd, g, v[i], sig, &p, &sent, err);
		if (ret == 0 && sent)
			seen_add(seen, v[i]);
	}
	free(v);
	return ret;
}

/*
 * The atomic kill: cgroup.kill (v2, Linux 5.14), which the kernel carries
 * out against concurrent forks; else freeze, KILL each member, thaw (a
 * KILL sent to a frozen process takes it the moment it thaws).
 */
static int kill_round(int procfd, const struct procs_group *g,
		      struct seen *seen, struct sbx_error **err)
{
	size_t n = 0;
	bool was;
	int ret;

	if (g->version == 2) {
		char *knob = xasprintf("%s/cgroup.kill", g->dir);
		bool has = access(knob, W_OK) == 0;

		free(knob);
		if (has) {
			/* Count what is there, then let the kernel kill it. */
			pid_t *v = NULL;

			ret = list_procs(g->dir, &v, &n, err);
			for (size_t i = 0; ret == 0 && i < n; i++)
				seen_add(seen, v[i]);
			free(v);
			if (ret == 0 &&
			    write_knob(g->dir, "cgroup.kill", "1") < 0 &&
			    errno != ENOENT)
				ret = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
						    "cannot kill the cgroup "
						    "'%s'",
						    g->dir);
			return ret;
		}
	}
	if (freeze(g->version, g->dir, &was, err) < 0)
		return -1;
	ret = signal_all(procfd, g, SIGKILL, seen, false, 0, &n, err);
	thaw(g->version, g->dir, was);
	return ret;
}

int procs_group_stop(const struct procs_group *g, long grace_ms,
		     long give_up_ms, size_t *killed, size_t *left,
		     struct sbx_error **err)
{
	struct seen seen = {0};
	long long t0 = clock_now_ms();
	unsigned kill_rounds = 0;
	int ret = 0, procfd = open_proc(err);

	*killed = *left = 0;
	if (procfd < 0)
		return -1;
	for (;;) {
		size_t n = 0;
		long long el;

		if (procs_group_count(g, &n, err) < 0) {
			ret = -1;
			break;
		}
		if (n == 0)
			break;
		el = clock_now_ms() - t0;
		if (kill_rounds && el >= give_up_ms) {
			*left = n;
			break;
		}
		if (el < grace_ms) {
			/* TERM once each: a process that handles it may be
			 * cleaning up; KILL comes after the grace. */
			ret = signal_all(procfd, g, SIGTERM, &seen, true,
					 t0 + grace_ms, &n, err);
		} else {
			ret = kill_round(procfd, g, &seen, err);
			kill_rounds++;
		}
		if (ret < 0)
			break;
		sleep_ms(kill_rounds ? RELIST_MS / 2 : RELIST_MS);
	}
	*killed = seen.n;
	free(seen.v);
	close(procfd);
	return ret;
}

int procs_group_remove(const struct procs_group *g)
{
	if (rmdir(g->dir) == 0 || errno == ENOENT)
		return 0;
	return -1;
}

/* "sbxcat-exec-START-DEADLINE-HEX": 0 with both, else -1. */
static int parse_name(const char *name, long long *start, long long *deadline)
{
	const char *s = name + strlen(PROCS_GROUP_PREFIX);
	char *end;

	if (strncmp(name, PROCS_GROUP_PREFIX, strlen(PROCS_GROUP_PREFIX)))
		return -1;
	errno = 0;
	*start = strtoll(s, &end, 10);
	if (errno || end == s || *end != '-')
		return -1;
	s = end + 1;
	*deadline = strtoll(s, &end, 10);
	if (errno || end == s || *end != '-')
		return -1;
	return 0;
}

static int expire(pid_t init_pid, long long now, long long max_s, long grace_ms,
		  long give_up_ms, size_t *busy, size_t *stopped,
		  struct sbx_error **err)
{
	int ret = 0;

	*busy = *stopped = 0;
	for (int v = 2; v >= 1; v--) {
		char *parent = NULL, *prel = NULL;
		struct dirent *de;
		DIR *d;
		int version;

		if (procs_container_cgroup(init_pid, v, &version, &parent,
					   &prel, err) < 0) {
			sbx_error_free(err);
			continue;
		}
		d = opendir(parent);
		while (d && (de = readdir(d))) {
			struct procs_group g = {.version = version};
			size_t n = 0, killed = 0, left = 0;
			long long limit;

			if (parse_name(de->d_name, &g.start, &g.deadline) < 0)
				continue;
			g.dir = xasprintf("%s/%s", parent, de->d_name);
			g.rel = xasprintf(
			    "%s/%s", strcmp(prel, "/") ? prel : "", de->d_name);
			limit = g.deadline;
			/* + 1: the name's deadline is rounded up as well */
			if (max_s > 0 && g.start + max_s + 1 < limit)
				limit = g.start + max_s + 1;
			/* An empty group within its deadline is an exec's that
			 * is starting (its command runs in the container's
			 * cgroup until its claim): busy, and left; one older
			 * than any start takes is one whose exec is over and
			 * whose leftovers ended: removed. */
			if (procs_group_count(&g, &n, err) < 0) {
				ret = -1;
			} else if (now < limit) {
				if (n || now < g.start + PROCS_START_S)
					(*busy)++;
				else
					procs_group_remove(&g);
			} else if (n &&
				   procs_group_stop(&g, grace_ms, give_up_ms,
						    &killed, &left, err) < 0) {
				ret = -1;
			} else {
				*stopped += killed;
				if (left)
					(*busy)++;
				else
					procs_group_remove(&g);
			}
			free(g.dir);
			free(g.rel);
			if (ret < 0)
				break;
		}
		if (d)
			closedir(d);
		free(parent);
		free(prel);
		if (ret < 0)
			break;
	}
	return ret;
}

/* The value of "key N" in a "key value" lines file. */
static int read_counter(const char *path, const char *key,
			unsigned long long *count, struct sbx_error **err)
{
	char *data = NULL, *s;
	size_t len, klen = strlen(key);
	int ret = -1;

	if (read_file_limited(path, 1u << 20, &data, &len, err) < 0)
		return -1;
	for (s = data; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
		if (strncmp(s, key, klen) == 0 && s[klen] == ' ') {
			char *end;
			errno = 0;
			*count = strtoull(s + klen + 1, &end, 10);
			if (!errno && end != s + klen + 1) {
				ret = 0;
				break;
			}
		}
	}
	if (ret < 0)
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "'%s' has no %s count",
			      path, key);
	free(data);
	return ret;
}

int procs_oom_kills(pid_t pid, unsigned long long *count,
		    struct sbx_error **err)
{
	char *cg = proc_cgroup(pid, "memory"), *mnt = NULL, *root = NULL, *dir,
	     *file;
	bool v2 = !cg;
	int ret;

	if (v2)
		cg = proc_cgroup(pid, NULL);
	if (!cg || cgroup_mount(v2 ? NULL : "memory", &mnt, &root) < 0 ||
	    !(dir = cgroup_dir(mnt, root, cg))) {
		free(cg);
		free(mnt);
		free(root);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "process %d is in no memory cgroup that "
				     "is mounted here",
				     (int)pid);
	}
	file = xasprintf("%s/%s", dir,
			 v2 ? "memory.events" : "memory.oom_control");
	ret = read_counter(file, "oom_kill", count, err);
	free(file);
	free(dir);
	free(mnt);
	free(root);
	free(cg);
	return ret;
}

unsigned long long procs_start_time(pid_t pid)
{
	struct proc p;
	int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int rc = procfd < 0 ? -1 : read_stat(procfd, pid, &p);

	if (procfd >= 0)
		close(procfd);
	/* A zombie (or one exiting) has no future. */
	return rc < 0 || p.dead || p.state == 'Z' ? 0 : p.start;
}

bool procs_frozen(pid_t pid)
{
	char *rel, *mnt = NULL, *root = NULL, *dir = NULL, *file;
	char buf[32] = "";
	bool frozen = false;
	int fd;
	ssize_t n;

	for (int v = 1; v <= 2 && !frozen; v++) {
		rel = proc_cgroup(pid, v == 1 ? "freezer" : NULL);
		if (!rel)
			continue;
		if (cgroup_mount(v == 1 ? "freezer" : NULL, &mnt, &root) == 0)
			dir = cgroup_dir(mnt, root, rel);
		free(rel);
		free(mnt);
		free(root);
		mnt = root = NULL;
		if (!dir)
			continue;
		file = xasprintf("%s/%s", dir, v == 1 ? "freezer.state"
						      : "cgroup.freeze");
		free(dir);
		dir = NULL;
		fd = open(file, O_RDONLY | O_CLOEXEC);
		free(file);
		if (fd < 0)
			continue; /* no such knob here (the root group) */
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			return true;
		buf[n] = '\0';
		frozen = v == 1 ? strncmp(buf, "THAWED", 6) != 0 : buf[0] != '0';
	}
	return frozen;
}

int procs_usable(struct sbx_error **err)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "this system cannot pin a process to "
				     "signal it (pidfd_open, Linux 5.3 or "
				     "later), so a command's deadline could "
				     "not be enforced");
	close(fd);
	return 0;
}

/* The kernel's PF_EXITING, in /proc/PID/stat's flags. */
#define PF_EXITING_FLAG 0x4ul

bool procs_exiting(pid_t pid)
{
	struct proc p = {0};
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	if (procfd < 0)
		return false;
	rc = read_stat(procfd, pid, &p);
	close(procfd);
	if (rc < 0)
		return errno == ENOENT || errno == ESRCH;
	return p.state == 'Z' || p.state == 'X' || p.state == 'x' ||
	       (p.flags & PF_EXITING_FLAG) != 0;
}

int procs_groups_expire(pid_t init_pid, long long now, long long max_s,
			long give_up_ms, size_t *busy, size_t *stopped,
			struct sbx_error **err)
{
	return expire(init_pid, now, max_s, 0, give_up_ms, busy, stopped, err);
}

/*
 * The watcher's life: it owns nothing of its caller's but lock (its own
 * open file description of the watch lock) and init (a pidfd of the
 * container's init).  Each second, every group past its deadline is
 * stopped (TERM, the grace, the kill); while none is left within its
 * deadline, it lets go of the lock, looks once more (an exec that found
 * the lock held counted on that look), and ends, unless that look found
 * one and the lock is still to be had.  It ends too when the container's
 * init does.
 */
static void watch(pid_t init_pid, int init, int lock, long long max_s,
		  long grace_ms, long give_up_ms)
{
	for (;;) {
		struct sbx_error *err = NULL;
		struct pollfd pf = {.fd = init, .events = POLLIN};
		size_t busy = 0, stopped = 0;

		expire(init_pid, (long long)time(NULL), max_s, grace_ms,
		       give_up_ms, &busy, &stopped, &err);
		sbx_error_free(&err);
		if (!busy) {
			flock(lock, LOCK_UN);
			expire(init_pid, (long long)time(NULL), max_s, grace_ms,
			       give_up_ms, &busy, &stopped, &err);
			sbx_error_free(&err);
			if (!busy || flock(lock, LOCK_EX | LOCK_NB) < 0)
				return;
		}
		if (poll(&pf, 1, 1000) > 0)
			return; /* the container's init is gone */
	}
}

/* The watcher, in the grandchild: detached, locked, or gone. */
static void watcher_main(pid_t init_pid, int init, int lock_fd, int report,
			 long long max_s, long grace_ms, long give_up_ms)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	char path[64];
	sigset_t none;
	pid_t me = getpid();
	int lock, fd;

	/* A description of its own: the caller's flock is not this one's. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", lock_fd);
	lock = open(path, O_RDWR | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0)
		me = 0; /* another watcher has the session */
	if (write(report, &me, sizeof(me)) != (ssize_t)sizeof(me) || !me)
		_exit(0);
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, "sbxcat-deadline", 0, 0, 0);
	/* Nothing of the caller's but the lock and the pidfd, moved to
	 * 3 and 4: its output, its engine and database connections close. */
	lock = fcntl(lock, F_DUPFD_CLOEXEC, 100);
	init = fcntl(init, F_DUPFD_CLOEXEC, 100);
	if (lock < 0 || init < 0 || dup2(lock, 3) < 0 || dup2(init, 4) < 0)
		_exit(1);
	for (fd = 0; fd < 3; fd++)
		close(fd);
	syscall(SYS_close_range, 5U, ~0U, 0U);
	fd = open("/dev/null", O_RDWR);
	if (fd == 0) {
		dup2(0, 1);
		dup2(0, 2);
	}
	if (chdir("/") < 0)
		_exit(1);
	watch(init_pid, 4, 3, max_s, grace_ms, give_up_ms);
	_exit(0);
}

int procs_watch(pid_t init_pid, int lock_fd, long long max_s, long grace_ms,
		long give_up_ms, pid_t *pid, struct sbx_error **err)
{
	int pfd[2], status, init;
	pid_t c, got = -1;
	ssize_t k;

	*pid = 0;
	init = (int)syscall(SYS_pidfd_open, init_pid, 0);
	if (init < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot pin the session's init (process "
				     "%d)",
				     (int)init_pid);
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		int e = errno;
		close(init);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e, "pipe");
	}
	c = fork();
	if (c == 0) {
		/* A session of its own, and a second fork, so that it is
		 * nobody's child and no terminal's. */
		setsid();
		if (fork() != 0)
			_exit(0);
		watcher_main(init_pid, init, lock_fd, pfd[1], max_s, grace_ms,
			     give_up_ms);
	}
	close(pfd[1]);
	close(init);
	if (c < 0) {
		int e = errno;
		close(pfd[0]);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot start the deadline's watcher");
	}
	do
		k = read(pfd[0], &got, sizeof(got));
	while (k < 0 && errno == EINTR);
	close(pfd[0]);
	while (waitpid(c, &status, 0) < 0 && errno == EINTR)
		;
	if (k != sizeof(got) || got < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "the deadline's watcher did not start");
	*pid = got;
	return 0;
}

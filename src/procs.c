/*
 * procs.c - an exec's processes found through /proc and stopped through
 * pidfds (the contract is procs.h), and the OOM kill count of a cgroup.
 *
 * Everything read from /proc may vanish between two reads: a process
 * exits, a PID is reused.  A file that cannot be opened or read (ENOENT,
 * ESRCH, EACCES) means "not this one" and the scan goes on; the stopping
 * loop scans again until a scan finds nothing, so a process missed in one
 * scan (forked after its parent was looked at) is caught in the next.
 *
 * Identity: a process is (PID, start time).  procs_stop() opens a pidfd on
 * a PID a scan returned, then reads the start time again through /proc:
 * if the pinned process is alive when the signal is sent, it held the PID
 * all along, so the start time read was its own.  A different start time
 * (the PID was reused) is skipped; a pinned process that died meanwhile
 * makes the signal fail with ESRCH, harmlessly.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "engine.h"
#include "error.h"
#include "fileio.h"
#include "hash.h"
#include "procs.h"

/* Read environ in pieces this big; memory stays bounded whatever it is. */
#define ENV_CHUNK (64u << 10)
/*
 * The kernel caps argv + environ at exec to 6 MiB (3/4 of _STK_LIM);
 * moving environ elsewhere (PR_SET_MM) needs CAP_SYS_RESOURCE, which a
 * session's container does not have.  Past this, stop reading.
 */
#define ENV_MAX (64u << 20)
/* Between two scans while waiting for processes to go. */
#define RESCAN_MS 20
/* SIGSTOP sweeps before each KILL round (see freeze()). */
#define FREEZE_ROUNDS 50

enum mark { MARK_NONE, MARK_OURS, MARK_OTHER };

struct proc {
	pid_t pid, ppid;
	unsigned long long start; /* clock ticks after boot */
	long threads;
	char state;
	unsigned long flags; /* the kernel's PF_* */
	bool dead; /* a zombie with no live thread, or exiting */
	enum mark mark;
	bool desc; /* root_pid or one of its descendants */
};

struct ns_id {
	dev_t dev;
	ino_t ino;
};

int procs_marker(char out[PROCS_MARKER_LEN + 1], struct sbx_error **err)
{
	unsigned char r[16];
	size_t got = 0;

	while (got < sizeof(r)) {
		ssize_t k = getrandom(r + got, sizeof(r) - got, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return sbx_error_set(err, SBX_EXIT_ENV, errno,
					     "getrandom");
		}
		got += (size_t)k;
	}
	memcpy(out, PROCS_MARKER_VAR "=", sizeof(PROCS_MARKER_VAR "=") - 1);
	hex_encode(out + sizeof(PROCS_MARKER_VAR "=") - 1, r, sizeof(r));
	return 0;
}

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

/* A streaming match of one NUL-separated entry against a string. */
struct entry_match {
	const char *want;
	size_t len, k;
	bool broken;
};

static void em_byte(struct entry_match *m, char c)
{
	if (m->broken)
		return;
	if (m->k < m->len && c == m->want[m->k])
		m->k++;
	else
		m->broken = true;
}

struct env_scan {
	struct entry_match ours, var; /* the marker; "SBXCAT_EXEC=" */
	bool found_ours, found_var;
};

static void env_entry_end(struct env_scan *e)
{
	if (!e->ours.broken && e->ours.k == e->ours.len)
		e->found_ours = true;
	/* "SBXCAT_EXEC=" matched as the entry's start, any value. */
	if (e->var.k == e->var.len)
		e->found_var = true;
	e->ours.k = e->var.k = 0;
	e->ours.broken = e->var.broken = false;
}

/*
 * Feed the environ at path, in chunks, to the scan.  *any: some byte was
 * read.  -1 when it cannot be opened or read (gone, no access).
 */
static int scan_environ(int procfd, const char *path, char *buf,
			struct env_scan *e, bool *any)
{
	size_t total = 0, at_entry = 0;
	int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);

	*any = false;
	if (fd < 0)
		return -1;
	while (total < ENV_MAX) {
		ssize_t n = read(fd, buf, ENV_CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		*any = true;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\0') {
				env_entry_end(e);
				at_entry = 0;
				continue;
			}
			em_byte(&e->ours, buf[i]);
			em_byte(&e->var, buf[i]);
			at_entry++;
		}
		total += (size_t)n;
	}
	close(fd);
	/* A last entry without its NUL (a process wrote over the area). */
	if (at_entry)
		env_entry_end(e);
	return 0;
}

/*
 * Which marker p's environment holds.  A zombie leader has no memory of
 * its own any more: its environment is read through a live thread.
 */
static enum mark read_mark(int procfd, const struct proc *p,
			   const char *marker, char *buf)
{
	struct env_scan e = {
	    .ours = {.want = marker, .len = strlen(marker)},
	    .var = {.want = PROCS_MARKER_VAR "=",
		    .len = sizeof(PROCS_MARKER_VAR "=") - 1},
	};
	char path[64];
	bool any = false;

	snprintf(path, sizeof(path), "%d/environ", (int)p->pid);
	scan_environ(procfd, path, buf, &e, &any);
	if (!any && p->threads > 1) {
		DIR *d;
		struct dirent *de;
		int tfd;

		snprintf(path, sizeof(path), "%d/task", (int)p->pid);
		tfd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		d = tfd >= 0 ? fdopendir(tfd) : NULL;
		if (!d && tfd >= 0)
			close(tfd);
		while (d && !any && (de = readdir(d))) {
			if (!isdigit((unsigned char)de->d_name[0]) ||
			    atoi(de->d_name) == p->pid)
				continue;
			snprintf(path, sizeof(path), "%d/task/%.16s/environ",
				 (int)p->pid, de->d_name);
			scan_environ(procfd, path, buf, &e, &any);
		}
		if (d)
			closedir(d);
	}
	if (e.found_ours)
		return MARK_OURS;
	return e.found_var ? MARK_OTHER : MARK_NONE;
}

static int ns_of(int procfd, pid_t pid, struct ns_id *ns)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "%d/ns/pid", (int)pid);
	if (fstatat(procfd, path, &st, 0) < 0)
		return -1;
	ns->dev = st.st_dev;
	ns->ino = st.st_ino;
	return 0;
}

/* Is pid the init of its PID namespace (NSpid's last field is 1)? */
static bool is_ns_init(pid_t pid)
{
	char path[32], *data = NULL, *line;
	size_t len;
	struct sbx_error *e = NULL;
	bool yes = false;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file_limited(path, 64u << 10, &data, &len, &e) < 0) {
		sbx_error_free(&e);
		return false;
	}
	line = strstr(data, "\nNSpid:");
	if (line) {
		char *last;
		line[strcspn(line + 1, "\n") + 1] = '\0';
		last = line + strcspn(line, "0123456789");
		while (last[strcspn(last, " \t")])
			last += strcspn(last, " \t") + 1;
		yes = strcmp(last, "1") == 0;
	}
	free(data);
	return yes;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static struct proc *lookup(struct proc *v, size_t n, pid_t pid)
{
	struct proc key = {.pid = pid};
	return bsearch(&key, v, n, sizeof(*v), cmp_proc);
}

/* One scan: the members, as struct proc (start time kept for pinning). */
static int scan(pid_t init_pid, pid_t root_pid, const char *marker,
		struct proc **out, size_t *nout, bool *init_gone,
		struct sbx_error **err)
{
	struct proc *v = NULL, *root;
	size_t n = 0, alloc = 0, k = 0;
	struct ns_id ns;
	int procfd;
	DIR *d;
	struct dirent *de;
	char *buf;
	bool grew;
	pid_t self = getpid();

	*init_gone = false;
	procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return sbx_error_set(err, SBX_EXIT_ENV, errno, "opening /proc");
	if (ns_of(procfd, init_pid, &ns) < 0) {
		int e = errno;
		close(procfd);
		*init_gone = e == ENOENT || e == ESRCH;
		return sbx_error_set(err, SBX_EXIT_ENV, e,
				     "the PID namespace of process %d",
				     (int)init_pid);
	}
	d = opendir("/proc");
	if (!d) {
		int e = errno;
		close(procfd);
		return sbx_error_set(err, SBX_EXIT_ENV, e, "reading /proc");
	}
	buf = xmalloc(ENV_CHUNK);
	errno = 0;
	while ((de = readdir(d))) {
		struct proc p = {0};
		struct ns_id pns;
		char *end;
		long pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		/*
		 * The namespace first: one stat for each process of the host
		 * outside it (a busy host has thousands).  A session cannot
		 * make a nested PID namespace (no CAP_SYS_ADMIN, and the
		 * default seccomp profile refuses new user namespaces), so
		 * root_pid's descendants are all in it too.
		 */
		if (ns_of(procfd, (pid_t)pid, &pns) < 0 || pns.dev != ns.dev ||
		    pns.ino != ns.ino)
			continue;
		if (read_stat(procfd, (pid_t)pid, &p) < 0)
			continue;
		if (!p.dead)
			p.mark = read_mark(procfd, &p, marker, buf);
		ALLOC_GROW(v, n + 1, alloc);
		v[n++] = p;
	}
	closedir(d);
	free(buf);
	qsort(v, n, sizeof(*v), cmp_proc);

	/*
	 * The descendants of root_pid.  root_pid comes from the engine and
	 * may be stale (the exec's process exited, its PID reused): it is
	 * taken only in the container's namespace, when it is not another
	 * exec's (marked by another marker), and, when it carries no marker
	 * at all, only if init_pid is truly a namespace's init (had the
	 * container gone and init_pid been reused on the host, a stale
	 * root_pid there must not take a host process tree with it).
	 */
	root = root_pid > 0 && root_pid != init_pid ? lookup(v, n, root_pid)
						     : NULL;
	if (root &&
	    (root->mark == MARK_OURS ||
	     (root->mark == MARK_NONE && is_ns_init(init_pid))))
		root->desc = true;
	close(procfd);
	do {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			struct proc *pp;
			if (v[i].desc || v[i].ppid == v[i].pid)
				continue;
			pp = lookup(v, n, v[i].ppid);
			if (pp && pp->desc) {
				v[i].desc = grew = true;
			}
		}
	} while (grew);

	for (size_t i = 0; i < n; i++) {
		struct proc *p = &v[i];
		if (p->dead || p->pid == init_pid || p->pid == self)
			continue;
		if (p->mark == MARK_OURS || p->desc)
			v[k++] = *p;
	}
	*out = v;
	*nout = k;
	return 0;
}

int procs_find(pid_t init_pid, pid_t root_pid, const char *marker,
	       pid_t **pids, size_t *n, struct sbx_error **err)
{
	struct proc *v;
	size_t k;
	bool gone;

	*pids = NULL;
	*n = 0;
	if (scan(init_pid, root_pid, marker, &v, &k, &gone, err) < 0)
		return -1;
	*pids = xcalloc(k ? k : 1, sizeof(**pids));
	for (size_t i = 0; i < k; i++)
		(*pids)[i] = v[i].pid;
	*n = k;
	free(v);
	return 0;
}

/* (pid, start) of the processes signalled, for counting them once. */
struct seen {
	struct proc *v;
	size_t n, alloc;
};

static bool seen_has(const struct seen *s, const struct proc *p)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].pid == p->pid && s->v[i].start == p->start)
			return true;
	return false;
}

/*
 * Pin p with a pidfd, check (through procfd, /proc) it is still the
 * process scanned, signal it through the pidfd.  *sent when the signal
 * reached it.
 */
static int pin_and_signal(int procfd, const struct proc *p, int sig,
			  bool *sent, struct sbx_error **err)
{
	struct proc now = {0};
	int pfd;

	*sent = false;
	pfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (pfd < 0) {
		if (errno == ESRCH)
			return 0;
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
				     "cannot pin process %d to signal it "
				     "(pidfd_open, Linux 5.3 or later)",
				     (int)p->pid);
	}
	if (read_stat(procfd, p->pid, &now) == 0 && now.start == p->start &&
	    !now.dead) {
		if (syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) == 0)
			*sent = true;
		else if (errno != ESRCH) {
			int e = errno;
			close(pfd);
			return sbx_error_set(err, SBX_EXIT_ENV, e,
					     "signalling process %d",
					     (int)p->pid);
		}
	}
	close(pfd);
	return 0;
}

static void sleep_ms(long ms)
{
	poll(NULL, 0, (int)ms);
}

static bool cannot_fork(const struct proc *p)
{
	return p->dead || p->state == 'T' || p->state == 't' ||
	       p->state == 'Z' || p->state == 'X';
}

/*
 * Before a KILL round: SIGSTOP every process found, re-scanning until a
 * scan finds every one of them stopped (or FREEZE_ROUNDS pass).  A
 * stopped process cannot fork, so a fork bomb cannot refill, from the
 * processes not yet killed, the slots that killing frees; KILL reaches
 * stopped processes.  *v and *n are the last scan's.
 */
static int freeze(int procfd, pid_t init_pid, pid_t root_pid,
		  const char *marker, long long until_ms, struct seen *seen,
		  struct proc **v, size_t *n, struct sbx_error **err)
{
	for (int round = 0; round < FREEZE_ROUNDS && engine_now_ms() < until_ms;
	     round++) {
		bool all = true, gone;

		for (size_t i = 0; i < *n; i++) {
			bool sent;
			if (cannot_fork(&(*v)[i]))
				continue;
			all = false;
			if (pin_and_signal(procfd, &(*v)[i], SIGSTOP, &sent,
					   err) < 0)
				return -1;
			if (sent && !seen_has(seen, &(*v)[i])) {
				ALLOC_GROW(seen->v, seen->n + 1, seen->alloc);
				seen->v[seen->n++] = (*v)[i];
			}
		}
		if (all)
			break;
		free(*v);
		*v = NULL;
		*n = 0;
		if (scan(init_pid, root_pid, marker, v, n, &gone, err) < 0) {
			if (!gone)
				return -1;
			sbx_error_free(err);
			*n = 0;
			return 0;
		}
	}
	return 0;
}

/*
 * While it stops a command, the stopper runs ahead of it: a fork bomb
 * keeps both CPUs busy with hundreds of runnable processes, and at an
 * even share a scan of /proc would take seconds while the bomb refills.
 * SCHED_RR at the lowest real-time priority (root only; the stopper
 * sleeps between rounds and gives up after give_up_ms, so it cannot hog
 * a CPU for long), else the best nice value it may have.  Undone after.
 */
struct boost {
	bool rt, niced;
	int policy, nice;
	struct sched_param param;
};

static void boost_begin(struct boost *b)
{
	struct sched_param rt = {.sched_priority = 1};

	memset(b, 0, sizeof(*b));
	b->policy = sched_getscheduler(0);
	sched_getparam(0, &b->param);
	if (b->policy >= 0 && sched_setscheduler(0, SCHED_RR, &rt) == 0) {
		b->rt = true;
		return;
	}
	errno = 0;
	b->nice = getpriority(PRIO_PROCESS, 0);
	if (errno == 0 && setpriority(PRIO_PROCESS, 0, -20) == 0)
		b->niced = true;
}

static void boost_end(const struct boost *b)
{
	if (b->rt)
		sched_setscheduler(0, b->policy, &b->param);
	if (b->niced)
		setpriority(PRIO_PROCESS, 0, b->nice);
}

static int stop_all(int procfd, pid_t init_pid, pid_t root_pid,
		    const char *marker, long grace_ms, long give_up_ms,
		    size_t *killed, size_t *left, struct sbx_error **err);

static int open_proc(struct sbx_error **err)
{
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		sbx_error_set(err, SBX_EXIT_ENV, errno, "opening /proc");
	return fd;
}

int procs_stop(pid_t init_pid, pid_t root_pid, const char *marker,
	       long grace_ms, long give_up_ms, size_t *killed, size_t *left,
	       struct sbx_error **err)
{
	struct boost b;
	int rc, procfd = open_proc(err);

	*killed = *left = 0;
	if (procfd < 0)
		return -1;
	boost_begin(&b);
	rc = stop_all(procfd, init_pid, root_pid, marker, grace_ms, give_up_ms,
		      killed, left, err);
	boost_end(&b);
	close(procfd);
	return rc;
}

static int stop_all(int procfd, pid_t init_pid, pid_t root_pid,
		    const char *marker, long grace_ms, long give_up_ms,
		    size_t *killed, size_t *left, struct sbx_error **err)
{
	struct seen seen = {0};
	long long t0 = engine_now_ms();
	bool kill_phase = false;
	unsigned kill_rounds = 0;
	int ret = 0;

	*killed = *left = 0;
	for (;;) {
		struct proc *v;
		size_t n;
		bool gone;
		long long el;

		if (scan(init_pid, root_pid, marker, &v, &n, &gone, err) < 0) {
			/*
			 * The container's init is gone: the kernel killed
			 * every process of its namespace with it.
			 */
			if (gone) {
				sbx_error_free(err);
				*left = 0;
			} else {
				ret = -1;
			}
			break;
		}
		if (n == 0) {
			free(v);
			*left = 0;
			break;
		}
		el = engine_now_ms() - t0;
		if (!kill_phase && el >= grace_ms)
			kill_phase = true;
		if (kill_rounds && el >= give_up_ms) {
			*left = n;
			free(v);
			break;
		}
		if (kill_phase)
			ret = freeze(procfd, init_pid, root_pid, marker,
				     t0 + give_up_ms, &seen, &v, &n, err);
		for (size_t i = 0; i < n && ret == 0; i++) {
			bool sent, known = seen_has(&seen, &v[i]);
			/* TERM once each; KILL every time it is still there. */
			if (!kill_phase && known)
				continue;
			ret = pin_and_signal(procfd, &v[i],
					     kill_phase ? SIGKILL : SIGTERM,
					     &sent, err);
			if (ret == 0 && sent && !known) {
				ALLOC_GROW(seen.v, seen.n + 1, seen.alloc);
				seen.v[seen.n++] = v[i];
			}
		}
		free(v);
		if (ret < 0)
			break;
		kill_rounds += kill_phase;
		sleep_ms(kill_phase ? RESCAN_MS / 2 : RESCAN_MS);
	}
	*killed = seen.n;
	free(seen.v);
	return ret;
}

/*
 * The mount point of the memory controller's hierarchy (v1 "cgroup" with
 * the memory option) or of cgroup2, and its root within the hierarchy,
 * from /proc/self/mountinfo: "id parent maj:min root mountpoint opts
 * [optional...] - fstype source superopts".
 */
static int cgroup_mount(bool v2, char **mnt, char **root)
{
	char *data = NULL, *line, *save = NULL;
	size_t len;
	struct sbx_error *e = NULL;
	int found = -1;

	if (read_file_limited("/proc/self/mountinfo", 16u << 20, &data, &len,
			      &e) < 0) {
		sbx_error_free(&e);
		return -1;
	}
	for (line = strtok_r(data, "\n", &save); line && found < 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[5], *right = strstr(line, " - "), *fs[3], *s, *o;
		char *osave = NULL;
		bool ok = true, mem = false;

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
		if (!ok || strcmp(fs[0], v2 ? "cgroup2" : "cgroup") != 0)
			continue;
		for (o = strtok_r(fs[2], ",", &osave); o && !v2;
		     o = strtok_r(NULL, ",", &osave))
			mem = mem || strcmp(o, "memory") == 0;
		if (!v2 && !mem)
			continue;
		*root = xstrdup(f[3]);
		*mnt = xstrdup(f[4]);
		found = 0;
	}
	free(data);
	return found;
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
		sbx_error_set(err, SBX_EXIT_ENV, 0, "'%s' has no %s count",
			      path, key);
	free(data);
	return ret;
}

int procs_oom_kills(pid_t pid, unsigned long long *count,
		    struct sbx_error **err)
{
	char path[64], *data = NULL, *line, *save = NULL;
	char *v1 = NULL, *v2 = NULL, *mnt = NULL, *root = NULL, *file;
	const char *cg, *rel;
	size_t len, rlen;
	bool use_v2;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (read_file_limited(path, 1u << 20, &data, &len, err) < 0)
		return sbx_error_wrap(err, "the cgroup of process %d",
				      (int)pid);
	/* "ID:controllers:path"; v2's line is "0::path". */
	for (line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *c = strchr(line, ':'), *p, *o, *osave = NULL;
		if (!c || !(p = strchr(c + 1, ':')))
			continue;
		*p++ = '\0';
		if (strcmp(line, "0") == 0 && c[1] == '\0') {
			v2 = p;
			continue;
		}
		for (o = strtok_r(c + 1, ",", &osave); o;
		     o = strtok_r(NULL, ",", &osave))
			if (strcmp(o, "memory") == 0)
				v1 = p;
	}
	use_v2 = !v1;
	cg = v1 ? v1 : v2;
	if (!cg || cgroup_mount(use_v2, &mnt, &root) < 0) {
		free(data);
		return sbx_error_set(err, SBX_EXIT_ENV, 0,
				     "process %d is in no memory cgroup that "
				     "is mounted here",
				     (int)pid);
	}
	/* The path is relative to the hierarchy's root; the mount may show
	 * only a subtree of it (root). */
	rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
	rel = cg;
	if (rlen && strncmp(cg, root, rlen) == 0 &&
	    (cg[rlen] == '/' || !cg[rlen]))
		rel = cg + rlen;
	file = xasprintf("%s%s%s/%s", mnt, *rel == '/' ? "" : "/", rel,
			 use_v2 ? "memory.events" : "memory.oom_control");
	ret = read_counter(file, "oom_kill", count, err);
	free(file);
	free(mnt);
	free(root);
	free(data);
	return ret;
}

int procs_signal(pid_t init_pid, pid_t root_pid, const char *marker, int sig,
		 size_t *n, struct sbx_error **err)
{
	struct proc *v = NULL;
	size_t nv = 0;
	bool gone;
	int ret = 0, procfd;

	*n = 0;
	if (scan(init_pid, root_pid, marker, &v, &nv, &gone, err) < 0) {
		if (!gone)
			return -1;
		sbx_error_free(err);
		return 0;
	}
	procfd = open_proc(err);
	if (procfd < 0) {
		free(v);
		return -1;
	}
	for (size_t i = 0; i < nv && ret == 0; i++) {
		bool sent;
		ret = pin_and_signal(procfd, &v[i], sig, &sent, err);
		*n += sent;
	}
	close(procfd);
	free(v);
	return ret;
}

int procs_usable(struct sbx_error **err)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (fd < 0)
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
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

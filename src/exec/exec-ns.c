/*
 * exec-ns.c - a command started in a container by the host, as runc exec
 * starts one (exec-ns.h).
 *
 * Two forks, both vfork-like (CLONE_VM | CLONE_VFORK: no copy of this
 * process's page tables, which is most of what a fork of a service of
 * many threads costs).  The first (A) writes itself into the exec's
 * cgroup and the container's v1 groups, joins the namespaces, and forks
 * the command's process (B, with CLONE_PARENT: the caller's child, born
 * in the container's PID namespace and in those groups); once B has
 * called execve, A says B's PID on the report pipe and exits, and only
 * then does the caller's thread go on.  B takes on the init's identity,
 * installs its seccomp filters and calls execve.  Both run on a copy of
 * nothing: the caller's memory, its other threads running, so from the
 * clone on they make system calls only (no malloc, no stdio, no glibc
 * set*id, which would wait for threads that are not theirs), on stacks
 * of their own, and write nothing but their own stacks (and errno, the
 * waiting thread's): everything they need is made beforehand, in struct
 * plan.
 *
 * The report pipe is close-on-exec: EOF once A has exited and B has
 * called execve; a failure before that comes as a struct report first.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "exec/exec-ns.h"
#include "exec/procs.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef RESOLVE_IN_ROOT
#define RESOLVE_IN_ROOT 0x10
#define RESOLVE_NO_MAGICLINKS 0x02
#endif

/* Bounds on what an init's files may hold. */
#define GROUPS_MAX 65536
#define FILTERS_MAX 32
#define PASSWD_MAX (1u << 20)
/* How long a start may take, from the fork to execve. */
#define START_MS 10000
/* How long the init may take to stop for its filters to be read. */
#define TRACE_STOP_MS 1000
/* A's and B's stacks: system calls only, but a sanitizer's frames are
 * larger. */
#define STACK_SIZE (256u << 10)
/* Filters kept per process: one entry per container's init. */
#define CACHE_N 64
/* The engine's default PATH (moby's DefaultPathEnv). */
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum stage {
	STAGE_FORKED = 1, /* A: B's pid follows */
	STAGE_CGROUP,
	STAGE_OOM,
	STAGE_SETNS,
	STAGE_FORK,
	STAGE_IDENTITY,
	STAGE_LSM,
	STAGE_CWD,
	STAGE_STDIO,
	STAGE_SECCOMP,
	STAGE_EXEC,
};

struct report {
	int stage;
	int err;
	pid_t pid;
};

static const char *const unfit_names[] = {
    [EXEC_NS_FIT] = "fit",	     [EXEC_NS_CGROUP] = "cgroup",
    [EXEC_NS_SECCOMP] = "seccomp",   [EXEC_NS_NAMESPACES] = "namespaces",
    [EXEC_NS_LSM] = "lsm",	     [EXEC_NS_IDENTITY] = "identity",
    [EXEC_NS_START] = "start",
};

const char *exec_ns_unfit_name(enum exec_ns_unfit why)
{
	return (unsigned)why < EXEC_NS_UNFIT_N ? unfit_names[why] : "start";
}

struct filters {
	struct sock_fprog prog[FILTERS_MAX]; /* oldest first */
	int n;
};

/* Everything the children need, made before the fork. */
struct plan {
	int pidfd, report;
	int v2;		/* the exec's group's cgroup.procs */
	char *stack_b;	/* the top of B's stack */
	int *v1;
	size_t nv1;
	char oom[24];
	size_t noom;
	/* B */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t ngroups;
	unsigned long long capbnd;
	int last_cap;
	bool nnp;
	mode_t umask;
	struct rlimit lim[RLIM_NLIMITS];
	char *lsm; /* what to write to attr/exec, or NULL */
	size_t nlsm;
	const struct filters *filters;
	const char *cwd;
	int in_rd, out_wr, err_wr;
	char **cands; /* execve's candidates, in order */
	char *const *argv;
	char **envp;
};

static int unfit(enum exec_ns_unfit *why, enum exec_ns_unfit w,
		 struct sbx_error **err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int unfit(enum exec_ns_unfit *why, enum exec_ns_unfit w,
		 struct sbx_error **err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*why = w;
	return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			     "the fast path cannot start a command here (%s): "
			     "%s",
			     exec_ns_unfit_name(w), msg);
}

/* ------------------------------------------------------------------ */
/* The children: system calls only, and through syscall(2) itself, so
 * that no interposer (a sanitizer's) takes a lock another thread held
 * at the fork. */

#define SYS(...) syscall(__VA_ARGS__)

/*
 * The children's functions are not a sanitizer's to watch: they run on
 * the caller's memory as no thread it knows of (ThreadSanitizer would
 * take them for the waiting thread, after the fact), and touch only
 * their own stacks and the plan the caller made before them.
 */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CHILD __attribute__((no_sanitize("thread", "address"), noinline))
#else
#define CHILD __attribute__((noinline))
#endif

/* The kernel's struct sigaction (x86-64, arm64 layout without
 * sa_restorer's use: SIG_DFL needs none). */
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long long mask;
};

CHILD static void say(int fd, int stage, int e, pid_t pid)
{
	struct report r = {.stage = stage, .err = e, .pid = pid};
	long w;

	do
		w = SYS(SYS_write, fd, &r, sizeof(r));
	while (w < 0 && errno == EINTR);
}

CHILD static __attribute__((noreturn)) void fail(const struct plan *pl, int stage)
{
	say(pl->report, stage, errno, 0);
	for (;;)
		SYS(SYS_exit_group, 127);
}

CHILD static long open_in(const char *path, int flags)
{
	return SYS(SYS_openat, AT_FDCWD, path, flags, 0);
}

CHILD static __attribute__((noreturn)) void child_b(const struct plan *pl)
{
	static const struct ksigaction dfl = {.handler = SIG_DFL};
	static const unsigned long long none = 0;
	struct __user_cap_header_struct hdr = {
	    .version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[2] = {{0}, {0}};
	long fd;
	int saw_eacces = 0, e;

	/* What the caller's threads had: no signal blocked or ignored
	 * (an execve keeps both). */
	for (int sig = 1; sig < 65; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			SYS(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(none));
	SYS(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
	if (SYS(SYS_setsid) < 0)
		fail(pl, STAGE_IDENTITY);
	for (int r = 0; r < RLIM_NLIMITS; r++)
		if (SYS(SYS_prlimit64, 0, r, &pl->lim[r], NULL) < 0)
			fail(pl, STAGE_IDENTITY);
	SYS(SYS_umask, pl->umask);
	for (int c = 0; c <= pl->last_cap && c < 64; c++)
		if (!(pl->capbnd >> c & 1) &&
		    SYS(SYS_prctl, PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			fail(pl, STAGE_IDENTITY);
	SYS(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (pl->lsm) {
		fd = open_in("/proc/thread-self/attr/exec", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || SYS(SYS_write, fd, pl->lsm, pl->nlsm) !=
				  (long)pl->nlsm)
			fail(pl, STAGE_LSM);
		SYS(SYS_close, fd);
	}
	if (SYS(SYS_setgroups, pl->ngroups, pl->groups) < 0 ||
	    SYS(SYS_setresgid, pl->gid, pl->gid, pl->gid) < 0 ||
	    SYS(SYS_setresuid, pl->uid, pl->uid, pl->uid) < 0)
		fail(pl, STAGE_IDENTITY);
	if (SYS(SYS_capset, &hdr, caps) < 0)
		fail(pl, STAGE_IDENTITY);
	if (pl->nnp && SYS(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(pl, STAGE_IDENTITY);
	if (SYS(SYS_chdir, pl->cwd) < 0)
		fail(pl, STAGE_CWD);
	fd = pl->in_rd >= 0 ? pl->in_rd : open_in("/dev/null", O_RDONLY);
	if (fd < 0 || SYS(SYS_dup2, fd, 0) < 0 ||
	    SYS(SYS_dup2, pl->out_wr, 1) < 0 ||
	    SYS(SYS_dup2, pl->err_wr, 2) < 0)
		fail(pl, STAGE_STDIO);
	/* Nothing of the caller's passes execve. */
	if (SYS(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		fail(pl, STAGE_STDIO);
	for (int i = 0; i < pl->filters->n; i++)
		if (SYS(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
			&pl->filters->prog[i]) < 0)
			fail(pl, STAGE_SECCOMP);
	/* execvp's rules over the candidates: a missing or unreadable one
	 * is passed over, EACCES remembered. */
	e = ENOENT;
	for (char **c = pl->cands; *c; c++) {
		SYS(SYS_execve, *c, pl->argv, pl->envp);
		if (errno == EACCES)
			saw_eacces = 1;
		else if (errno != ENOENT && errno != ENOTDIR) {
			e = errno;
			break;
		}
	}
	errno = saw_eacces && e == ENOENT ? EACCES : e;
	fail(pl, STAGE_EXEC);
}

CHILD static int child_b_entry(void *arg)
{
	child_b(arg);
}

/* A: B's PID said once B has called execve (or failed: its own word
 * came first). */
CHILD static int child_a(void *arg)
{
	const struct plan *pl = arg;
	long pid, fd;
	struct report rr = {.stage = STAGE_FORKED};

	if (SYS(SYS_write, pl->v2, "0", 1) != 1)
		fail(pl, STAGE_CGROUP);
	for (size_t i = 0; i < pl->nv1; i++)
		if (SYS(SYS_write, pl->v1[i], "0", 1) != 1)
			fail(pl, STAGE_CGROUP);
	if (pl->noom) {
		fd = open_in("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (fd < 0 ||
		    SYS(SYS_write, fd, pl->oom, pl->noom) != (long)pl->noom)
			fail(pl, STAGE_OOM);
		SYS(SYS_close, fd);
	}
	if (SYS(SYS_setns, pl->pidfd,
		CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWIPC | CLONE_NEWUTS |
		    CLONE_NEWNET | CLONE_NEWPID) < 0)
		fail(pl, STAGE_SETNS);
	/* B: in the PID namespace, a child of A's parent, on A's memory
	 * until its execve (A waits: CLONE_VFORK). */
	pid = clone(child_b_entry, pl->stack_b,
		    CLONE_VM | CLONE_VFORK | CLONE_PARENT | SIGCHLD,
		    (void *)pl);
	if (pid < 0)
		fail(pl, STAGE_FORK);
	rr.pid = (pid_t)pid;
	SYS(SYS_write, pl->report, &rr, sizeof(rr));
	for (;;)
		SYS(SYS_exit_group, 0);
}

/* ------------------------------------------------------------------ */
/* What the init has. */

struct init_status {
	unsigned uid[4], gid[4];
	gid_t *groups;
	size_t ngroups;
	unsigned long long cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	int nnp, seccomp;
	unsigned umask;
	bool have_umask;
};

static int status_read(pid_t pid, struct init_status *st, enum exec_ns_unfit *why,
		       struct sbx_error **err)
{
	char path[64], *data = NULL, *line, *save = NULL;
	size_t len;
	int got = 0;

	memset(st, 0, sizeof(*st));
	st->seccomp = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file_limited(path, 1u << 20, &data, &len, err) < 0) {
		*why = EXEC_NS_START;
		return -1;
	}
	for (line = strtok_r(data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		*v++ = '\0';
		if (!strcmp(line, "Uid"))
			got += sscanf(v, "%u %u %u %u", &st->uid[0], &st->uid[1],
				      &st->uid[2], &st->uid[3]) == 4;
		else if (!strcmp(line, "Gid"))
			got += sscanf(v, "%u %u %u %u", &st->gid[0], &st->gid[1],
				      &st->gid[2], &st->gid[3]) == 4;
		else if (!strcmp(line, "CapInh"))
			got += sscanf(v, "%llx", &st->cap_inh) == 1;
		else if (!strcmp(line, "CapPrm"))
			got += sscanf(v, "%llx", &st->cap_prm) == 1;
		else if (!strcmp(line, "CapEff"))
			got += sscanf(v, "%llx", &st->cap_eff) == 1;
		else if (!strcmp(line, "CapBnd"))
			got += sscanf(v, "%llx", &st->cap_bnd) == 1;
		else if (!strcmp(line, "CapAmb"))
			got += sscanf(v, "%llx", &st->cap_amb) == 1;
		else if (!strcmp(line, "NoNewPrivs"))
			got += sscanf(v, "%d", &st->nnp) == 1;
		else if (!strcmp(line, "Seccomp"))
			got += sscanf(v, "%d", &st->seccomp) == 1;
		else if (!strcmp(line, "Umask"))
			st->have_umask = sscanf(v, "%o", &st->umask) == 1;
		else if (!strcmp(line, "Groups")) {
			char *end;

			got++;
			for (;;) {
				unsigned long g;

				while (*v == ' ' || *v == '\t')
					v++;
				if (!*v)
					break;
				errno = 0;
				g = strtoul(v, &end, 10);
				if (end == v || errno || g > UINT_MAX ||
				    st->ngroups >= GROUPS_MAX)
					break;
				st->groups = xrealloc(
				    st->groups,
				    (st->ngroups + 1) * sizeof(*st->groups));
				st->groups[st->ngroups++] = (gid_t)g;
				v = end;
			}
		}
	}
	free(data);
	if (got != 10)
		return unfit(why, EXEC_NS_START, err,
			     "/proc/%d/status lacks a field", (int)pid);
	for (int i = 1; i < 4; i++)
		if (st->uid[i] != st->uid[0] || st->gid[i] != st->gid[0])
			return unfit(why, EXEC_NS_IDENTITY, err,
				     "process %d's user or group ids differ",
				     (int)pid);
	if (st->cap_inh || st->cap_prm || st->cap_eff || st->cap_amb)
		return unfit(why, EXEC_NS_IDENTITY, err,
			     "process %d holds capabilities", (int)pid);
	if (st->seccomp != 0 && st->seccomp != 2)
		return unfit(why, EXEC_NS_SECCOMP, err,
			     "process %d's seccomp mode is %d", (int)pid,
			     st->seccomp);
	if (st->seccomp == 2 && !st->nnp)
		return unfit(why, EXEC_NS_IDENTITY, err,
			     "process %d has seccomp filters without "
			     "no_new_privs",
			     (int)pid);
	return 0;
}

/*
 * The init's rlimits, from /proc/PID/limits (prlimit(2) on another
 * process needs CAP_SYS_RESOURCE, which a host may not give root): a
 * header, then one line per resource in the kernel's order, a name 25
 * wide, then soft and hard ("unlimited" or a number).
 */
static int limits_read(pid_t pid, struct rlimit *lim, enum exec_ns_unfit *why,
		       struct sbx_error **err)
{
	char path[64], *data = NULL, *line, *save = NULL;
	size_t len;
	int i = -1;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	if (read_file_limited(path, 1u << 16, &data, &len, err) < 0) {
		*why = EXEC_NS_START;
		return -1;
	}
	for (line = strtok_r(data, "\n", &save); line && i < RLIM_NLIMITS;
	     line = strtok_r(NULL, "\n", &save), i++) {
		rlim_t v[2];
		char *p;

		if (i < 0)
			continue; /* the header */
		if (strlen(line) < 26)
			break;
		p = line + 25;
		for (int k = 0; k < 2; k++) {
			char *end;

			while (*p == ' ')
				p++;
			if (!strncmp(p, "unlimited", 9)) {
				v[k] = RLIM_INFINITY;
				p += 9;
				continue;
			}
			errno = 0;
			v[k] = (rlim_t)strtoull(p, &end, 10);
			if (end == p || errno) {
				free(data);
				return unfit(why, EXEC_NS_START, err,
					     "%s: line %d unreadable", path,
					     i + 2);
			}
			p = end;
		}
		lim[i].rlim_cur = v[0];
		lim[i].rlim_max = v[1];
	}
	free(data);
	if (i < RLIM_NLIMITS)
		return unfit(why, EXEC_NS_START, err, "%s: %d limits of %d",
			     path, i < 0 ? 0 : i, RLIM_NLIMITS);
	return 0;
}

/* The same namespace as ours (user, time: never joined). */
static bool same_ns(pid_t pid, const char *ns)
{
	char path[64], self[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	snprintf(self, sizeof(self), "/proc/self/ns/%s", ns);
	if (stat(self, &b) < 0 && errno == ENOENT)
		return true; /* a kernel without that namespace */
	return stat(path, &a) == 0 && stat(self, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cache_entry {
	pid_t pid;
	unsigned long long start;
	struct filters *f;
	unsigned long long used;
} cache[CACHE_N];
static unsigned long long cache_clock;

static void filters_free(struct filters *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->n; i++)
		free(f->prog[i].filter);
	free(f);
}

/* Stopped, seized process pid: its filters, oldest first. */
static int filters_get(pid_t pid, struct filters *f)
{
	struct sock_filter *buf[FILTERS_MAX];
	long lens[FILTERS_MAX];
	int n = 0;

	for (;;) {
		long k = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)(long)n,
				NULL);

		if (k < 0) {
			if (errno == ENOENT)
				break;
			goto bad;
		}
		if (n == FILTERS_MAX || k == 0 || k > BPF_MAXINSNS) {
			errno = E2BIG;
			goto bad;
		}
		buf[n] = xcalloc((size_t)k, sizeof(struct sock_filter));
		lens[n] = k;
		n++;
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)(long)(n - 1),
			   buf[n - 1]) != k)
			goto bad;
	}
	/* Index 0 is the newest: installed last. */
	f->n = n;
	for (int i = 0; i < n; i++) {
		f->prog[i].len = (unsigned short)lens[n - 1 - i];
		f->prog[i].filter = buf[n - 1 - i];
	}
	return 0;
bad:
	for (int i = 0; i < n; i++)
		free(buf[i]);
	return -1;
}

/* The init's filters, read through a moment's ptrace-stop. */
static int filters_read(pid_t pid, struct filters **out,
			enum exec_ns_unfit *why, struct sbx_error **err)
{
	struct filters *f = xcalloc(1, sizeof(*f));
	long long until;
	int st = 0, e = 0, tries = 0;
	pid_t w;

	/* Another process of ours (the command line beside the service)
	 * may hold it for a moment. */
	while (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0) {
		e = errno;
		if (e != EPERM || ++tries >= 20) {
			free(f);
			return unfit(why, EXEC_NS_SECCOMP, err,
				     "cannot trace process %d to read its "
				     "seccomp filters: %s",
				     (int)pid, strerror(e));
		}
		usleep(1000);
	}
	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0) {
		e = errno;
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		free(f);
		return unfit(why, EXEC_NS_SECCOMP, err,
			     "cannot stop process %d: %s", (int)pid,
			     strerror(e));
	}
	until = clock_now_ms() + TRACE_STOP_MS;
	while ((w = waitpid(pid, &st, __WALL | WNOHANG)) == 0 &&
	       clock_now_ms() < until)
		usleep(100);
	if (w != pid || !WIFSTOPPED(st)) {
		/* Not stopped (frozen?), or gone: detached as we can. */
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		free(f);
		return unfit(why, EXEC_NS_SECCOMP, err,
			     "process %d did not stop to be read", (int)pid);
	}
	if (filters_get(pid, f) < 0) {
		e = errno;
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		free(f);
		return unfit(why, EXEC_NS_SECCOMP, err,
			     "cannot read process %d's seccomp filters: %s",
			     (int)pid, strerror(e));
	}
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	*out = f;
	return 0;
}

/* The cache's entry of (pid, start), or NULL; *lru the one to reuse.
 * Under cache_lock. */
static struct cache_entry *cache_find(pid_t pid, unsigned long long start,
				      struct cache_entry **lru)
{
	*lru = &cache[0];
	for (int i = 0; i < CACHE_N; i++) {
		if (cache[i].f && cache[i].pid == pid &&
		    cache[i].start == start && start)
			return &cache[i];
		if (cache[i].used < (*lru)->used)
			*lru = &cache[i];
	}
	return NULL;
}

/* The filters of pid, from the cache or read now; the cache's lock is
 * held until filters_done.  The reading (a ptrace-stop that may wait)
 * is done without the lock: a sandbox that keeps its own init from
 * being read slows its own commands only. */
static int filters_of(pid_t pid, const struct filters **out,
		      enum exec_ns_unfit *why, struct sbx_error **err)
{
	unsigned long long start = procs_start_time(pid);
	struct cache_entry *e, *lru;
	struct filters *f = NULL;

	pthread_mutex_lock(&cache_lock);
	cache_clock++;
	if ((e = cache_find(pid, start, &lru))) {
		e->used = cache_clock;
		*out = e->f;
		return 0;
	}
	pthread_mutex_unlock(&cache_lock);
	if (filters_read(pid, &f, why, err) < 0)
		return -1;
	pthread_mutex_lock(&cache_lock);
	cache_clock++;
	if ((e = cache_find(pid, start, &lru))) {
		/* Another thread read them meanwhile. */
		filters_free(f);
	} else {
		/* The least recently used entry makes room. */
		e = lru;
		filters_free(e->f);
		*e = (struct cache_entry){.pid = pid, .start = start, .f = f};
	}
	e->used = cache_clock;
	*out = e->f;
	return 0;
}

static void filters_done(void)
{
	pthread_mutex_unlock(&cache_lock);
}

/*
 * The label to put on the command: what the init's attr/current says,
 * NULL when there is no LSM or it is unconfined.
 */
static int lsm_label(pid_t pid, char **out, size_t *nout,
		     enum exec_ns_unfit *why, struct sbx_error **err)
{
	char path[64], buf[4096], aa[8] = "";
	ssize_t n;
	int fd;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/attr/current", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) /* EINVAL: no LSM that keeps one */
		return 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		n--;
	buf[n] = '\0';
	if (!n || !strcmp(buf, "unconfined"))
		return 0;
	fd = open("/sys/module/apparmor/parameters/enabled",
		  O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, aa, sizeof(aa) - 1) < 0)
			aa[0] = '\0';
		close(fd);
	}
	if (aa[0] == 'Y') {
		/* "docker-default (enforce)": the profile's name. */
		char *sp = strstr(buf, " (");

		if (sp)
			*sp = '\0';
		*out = xasprintf("exec %s", buf);
	} else if (access("/sys/fs/selinux/enforce", F_OK) == 0) {
		*out = xstrdup(buf);
	} else {
		return unfit(why, EXEC_NS_LSM, err,
			     "process %d's label '%.64s' is of an LSM sbxcat "
			     "cannot set",
			     (int)pid, buf);
	}
	*nout = strlen(*out);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The environment, as the engine's exec makes it. */

struct strvec {
	char **v;
	size_t n, alloc;
};

static void env_put(struct strvec *sv, const char *e)
{
	const char *eq = strchr(e, '=');
	size_t nl = eq ? (size_t)(eq - e) : strlen(e);

	for (size_t i = 0; i < sv->n; i++) {
		if (strncmp(sv->v[i], e, nl) || sv->v[i][nl] != '=')
			continue;
		free(sv->v[i]);
		if (eq) {
			sv->v[i] = xstrdup(e);
		} else {
			/* A name alone unsets it (moby's rule). */
			memmove(&sv->v[i], &sv->v[i + 1],
				(sv->n - i - 1) * sizeof(*sv->v));
			sv->n--;
		}
		return;
	}
	if (!eq)
		return;
	ALLOC_GROW(sv->v, sv->n + 2, sv->alloc);
	sv->v[sv->n++] = xstrdup(e);
	sv->v[sv->n] = NULL;
}

static const char *env_get(const struct strvec *sv, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < sv->n; i++)
		if (!strncmp(sv->v[i], name, nl) && sv->v[i][nl] == '=')
			return sv->v[i] + nl + 1;
	return NULL;
}

static void strvec_free(struct strvec *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
}

/* uid's home in the container's /etc/passwd, or "/" (runc's rule). */
static char *home_of(pid_t pid, unsigned uid)
{
	struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY |
					O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT |
					  RESOLVE_NO_MAGICLINKS};
	char path[64], *data, *line, *save = NULL, *home = NULL;
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int root, fd;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return xstrdup("/");
	fd = (int)syscall(SYS_openat2, root, "etc/passwd", &how, sizeof(how));
	close(root);
	if (fd < 0)
		return xstrdup("/");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return xstrdup("/");
	}
	data = xmalloc(PASSWD_MAX + 1);
	while (len < PASSWD_MAX &&
	       (n = read(fd, data + len, PASSWD_MAX - len)) > 0)
		len += (size_t)n;
	close(fd);
	data[len] = '\0';
	for (line = strtok_r(data, "\n", &save); line && !home;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[7], *s = line;
		int i;

		for (i = 0; i < 7 && s; i++) {
			f[i] = s;
			s = strchr(s, ':');
			if (s)
				*s++ = '\0';
		}
		if (i == 7 && *f[2] && strspn(f[2], "0123456789") ==
					   strlen(f[2]) &&
		    strtoul(f[2], NULL, 10) == uid && *f[5])
			home = xstrdup(f[5]);
	}
	free(data);
	return home ? home : xstrdup("/");
}

/*
 * execve's candidates for argv0: itself with a '/', else each of PATH.
 * Bounded whatever the request says (PATH and argv[0] are a client's): a
 * candidate PATH_MAX long or more is one execve would refuse
 * (ENAMETOOLONG) and is left out, and PATH's first CANDIDATES_MAX
 * elements are tried (a shell's lookup would take a lifetime past that).
 */
#define CANDIDATES_MAX 256
static char **candidates(const char *argv0, const char *path)
{
	struct strvec sv = {0};
	size_t alen = strlen(argv0), seen = 0;

	if (strchr(argv0, '/') || !path || alen >= PATH_MAX) {
		ALLOC_GROW(sv.v, 2, sv.alloc);
		sv.v[sv.n++] = xstrdup(argv0);
	} else {
		const char *p = path;

		for (;;) {
			size_t n = strcspn(p, ":");

			if (n + 1 + alen < PATH_MAX) {
				ALLOC_GROW(sv.v, sv.n + 2, sv.alloc);
				/* An empty element is the working directory. */
				sv.v[sv.n++] =
				    n ? xasprintf("%.*s/%s", (int)n, p, argv0)
				      : xstrdup(argv0);
			}
			if (!p[n] || ++seen >= CANDIDATES_MAX)
				break;
			p += n + 1;
		}
	}
	ALLOC_GROW(sv.v, sv.n + 1, sv.alloc);
	sv.v[sv.n] = NULL;
	return sv.v;
}

/* ------------------------------------------------------------------ */

static int cap_last(void)
{
	char buf[16] = "";
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n > 0 ? atoi(buf) : CAP_LAST_CAP;
}

/* fd moved to 3 or above (a daemon may run with 0..2 closed). */
static int above_stdio(int fd)
{
	int d;

	if (fd < 0 || fd > 2)
		return fd;
	d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return d;
}

static int pipe_pair(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	p[0] = above_stdio(p[0]);
	p[1] = above_stdio(p[1]);
	return p[0] >= 0 && p[1] >= 0 ? 0 : -1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Wait for child pid, up to wait_ms (0: not at all). */
static int reap(pid_t pid, long wait_ms, int *st)
{
	long long until = clock_now_ms() + wait_ms;
	pid_t w;

	for (;;) {
		w = waitpid(pid, st, __WALL | WNOHANG);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
		if (clock_now_ms() >= until)
			return -1;
		usleep(200);
	}
}

static void stage_text(struct exec_ns_proc *p, const struct exec_ns_req *req,
		       const struct report *r)
{
	const char *a0 = req->argv[0];

	if (r->stage == STAGE_CWD)
		snprintf(p->why, sizeof(p->why),
			 "chdir to cwd (\"%s\") failed: %s", req->cwd,
			 strerror(r->err));
	else if (r->err == ENOENT && !strchr(a0, '/'))
		snprintf(p->why, sizeof(p->why),
			 "exec: \"%s\": executable file not found in $PATH",
			 a0);
	else
		snprintf(p->why, sizeof(p->why), "exec: \"%s\": %s", a0,
			 strerror(r->err));
}

int exec_ns_start(const struct exec_ns_req *req, struct exec_ns_proc *p,
		  enum exec_ns_unfit *why, struct sbx_error **err)
{
	struct plan pl = {.pidfd = -1, .report = -1, .in_rd = -1,
			  .out_wr = -1, .err_wr = -1};
	struct init_status st = {0};
	struct strvec env = {0};
	char *stacks = NULL;
	int rep[2] = {-1, -1}, in[2] = {-1, -1}, out[2] = {-1, -1},
	    errp[2] = {-1, -1}, cg = -1, rc = -1, wst = 0;
	const struct filters *filters = NULL;
	struct filters *own = NULL;
	static const struct filters none = {.n = 0};
	char path[64], *home = NULL;
	struct report r = {0};
	pid_t a = -1, b = 0;
	long long until;

	*why = EXEC_NS_FIT;
	*p = (struct exec_ns_proc)EXEC_NS_PROC_INIT;
	if (!same_ns(req->init_pid, "user") || !same_ns(req->init_pid, "time"))
		return unfit(why, EXEC_NS_NAMESPACES, err,
			     "the container has a user or time namespace of "
			     "its own");
	if (status_read(req->init_pid, &st, why, err) < 0)
		goto out;
	if (lsm_label(req->init_pid, &pl.lsm, &pl.nlsm, why, err) < 0)
		goto out;
	pl.pidfd = (int)syscall(SYS_pidfd_open, req->init_pid, 0);
	if (pl.pidfd < 0) {
		unfit(why, EXEC_NS_START, err, "pidfd_open(%d): %s",
		      (int)req->init_pid, strerror(errno));
		goto out;
	}
	if (limits_read(req->init_pid, pl.lim, why, err) < 0)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj",
		 (int)req->init_pid);
	{
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, pl.oom, sizeof(pl.oom) - 1) : -1;

		if (fd >= 0)
			close(fd);
		pl.noom = n > 0 ? (size_t)n : 0;
	}
	if (procs_v1_join_open(req->init_pid, &pl.v1, &pl.nv1, err) < 0) {
		*why = EXEC_NS_CGROUP;
		goto out;
	}
	{
		char *procs = xasprintf("%s/cgroup.procs", req->group_dir);

		cg = open(procs, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (cg < 0)
			unfit(why, EXEC_NS_CGROUP, err, "cannot open '%s': %s",
			      procs, strerror(errno));
		free(procs);
		if (cg < 0)
			goto out;
	}
	if (st.seccomp == 2) {
		if (filters_of(req->init_pid, &filters, why, err) < 0)
			goto out;
		/* A copy of our own: the cache's entry may go meanwhile. */
		own = xcalloc(1, sizeof(*own));
		own->n = filters->n;
		for (int i = 0; i < own->n; i++) {
			size_t sz = filters->prog[i].len * sizeof(struct sock_filter);

			own->prog[i].len = filters->prog[i].len;
			own->prog[i].filter = xmalloc(sz);
			memcpy(own->prog[i].filter, filters->prog[i].filter, sz);
		}
		filters_done();
		filters = own;
	} else {
		filters = &none;
	}

	/* The environment and what execve tries. */
	env_put(&env, "PATH=" DEFAULT_PATH);
	{
		char *h = xasprintf("HOSTNAME=%s",
				    req->hostname ? req->hostname : "");
		env_put(&env, h);
		free(h);
	}
	for (size_t i = 0; i < req->ncfg; i++)
		env_put(&env, req->cfg_env[i]);
	for (size_t i = 0; i < req->nenv; i++)
		env_put(&env, req->env[i]);
	if (!env_get(&env, "HOME")) {
		char *h;

		home = home_of(req->init_pid, st.uid[0]);
		h = xasprintf("HOME=%s", home);
		env_put(&env, h);
		free(h);
	}
	if (!env.v)
		env_put(&env, "PATH=" DEFAULT_PATH);

	if (pipe_pair(rep) < 0 || pipe_pair(out) < 0 || pipe_pair(errp) < 0 ||
	    (req->want_stdin && pipe_pair(in) < 0)) {
		unfit(why, EXEC_NS_START, err, "pipe: %s", strerror(errno));
		goto out;
	}
	pl.report = rep[1];
	pl.uid = st.uid[0];
	pl.gid = st.gid[0];
	pl.groups = st.groups;
	pl.ngroups = st.ngroups;
	pl.capbnd = st.cap_bnd;
	pl.last_cap = cap_last();
	pl.nnp = st.nnp == 1;
	pl.umask = st.have_umask ? (mode_t)st.umask : 022;
	pl.filters = filters;
	pl.cwd = req->cwd;
	pl.in_rd = in[0];
	pl.out_wr = out[1];
	pl.err_wr = errp[1];
	pl.argv = req->argv;
	pl.envp = env.v;
	pl.cands = candidates(req->argv[0], env_get(&env, "PATH"));

	pl.v2 = cg;
	stacks = xmalloc(2 * STACK_SIZE);
	pl.stack_b = stacks + 2 * STACK_SIZE;
	/* A on our memory (no copy of this process's page tables) until it
	 * exits, which is after B's execve: this thread waits meanwhile. */
#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer must know of a process that runs on a copy of
	 * this one's memory: its fork, not a clone it cannot see (the
	 * cost of the copy is a sanitizer build's to pay). */
	a = fork();
	if (a == 0)
		child_a(&pl);
#else
	a = clone(child_a, stacks + STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD,
		  &pl);
#endif
	free(stacks);
	stacks = NULL;
	if (a < 0) {
		unfit(why, EXEC_NS_START, err, "clone: %s", strerror(errno));
		goto out;
	}
	close_fd(&rep[1]);
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&errp[1]);

	/* A's word (B's PID), then B's execve (EOF) or its failure. */
	until = clock_now_ms() + START_MS;
	r.stage = 0;
	for (;;) {
		struct report got;
		struct pollfd pfd = {.fd = rep[0], .events = POLLIN};
		long long left = until - clock_now_ms();
		ssize_t n;

		if (left <= 0) {
			unfit(why, EXEC_NS_START, err,
			      "the command was not started within %d s",
			      START_MS / 1000);
			break;
		}
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			break;
		n = read(rep[0], &got, sizeof(got));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == 0)
			break;
		if (n != (ssize_t)sizeof(got)) {
			unfit(why, EXEC_NS_START, err, "a short report");
			break;
		}
		if (got.stage == STAGE_FORKED)
			b = got.pid;
		else
			r = got;
	}
	reap(a, 2000, &wst);
	if (!*why && !r.stage && !b)
		unfit(why, EXEC_NS_START, err, "the joining process ended "
					       "without a word");
	if (*why) {
		if (b > 0) {
			kill(b, SIGKILL);
			reap(b, 2000, &wst);
		}
		goto out;
	}
	if (r.stage == STAGE_EXEC || r.stage == STAGE_CWD) {
		/* As the engine would say it: not started, nothing ran. */
		reap(b, 2000, &wst);
		p->exec_errno = r.err ? r.err : ENOENT;
		stage_text(p, req, &r);
		rc = 0;
		goto out;
	}
	if (r.stage) {
		static const enum exec_ns_unfit of[] = {
		    [STAGE_CGROUP] = EXEC_NS_CGROUP,
		    [STAGE_OOM] = EXEC_NS_START,
		    [STAGE_SETNS] = EXEC_NS_NAMESPACES,
		    [STAGE_FORK] = EXEC_NS_START,
		    [STAGE_IDENTITY] = EXEC_NS_IDENTITY,
		    [STAGE_LSM] = EXEC_NS_LSM,
		    [STAGE_STDIO] = EXEC_NS_START,
		    [STAGE_SECCOMP] = EXEC_NS_SECCOMP,
		};
		if (b > 0)
			reap(b, 2000, &wst);
		unfit(why,
		      r.stage < (int)(sizeof(of) / sizeof(of[0])) && of[r.stage]
			  ? of[r.stage]
			  : EXEC_NS_START,
		      err, "step %d failed: %s", r.stage, strerror(r.err));
		goto out;
	}
	p->pid = b;
	p->pidfd = (int)syscall(SYS_pidfd_open, b, 0);
	p->in_fd = in[1];
	in[1] = -1;
	p->out_fd[0] = out[0];
	p->out_fd[1] = errp[0];
	out[0] = errp[0] = -1;
	for (int i = 0; i < 2; i++)
		fcntl(p->out_fd[i], F_SETFL,
		      fcntl(p->out_fd[i], F_GETFL) | O_NONBLOCK);
	if (p->in_fd >= 0)
		fcntl(p->in_fd, F_SETFL, fcntl(p->in_fd, F_GETFL) | O_NONBLOCK);
	rc = 0;
out:
	free(stacks);
	filters_free(own);
	for (int i = 0; i < 2; i++) {
		close_fd(&rep[i]);
		close_fd(&in[i]);
		close_fd(&out[i]);
		close_fd(&errp[i]);
	}
	close_fd(&cg);
	close_fd(&pl.pidfd);
	for (size_t i = 0; i < pl.nv1; i++)
		close(pl.v1[i]);
	free(pl.v1);
	if (pl.cands) {
		for (char **c = pl.cands; *c; c++)
			free(*c);
		free(pl.cands);
	}
	free(pl.lsm);
	free(st.groups);
	free(home);
	strvec_free(&env);
	if (rc < 0 && !*why)
		*why = EXEC_NS_START;
	return rc;
}

int exec_ns_wait(struct exec_ns_proc *p, long wait_ms, int *status)
{
	int st = 0;

	if (p->pid <= 0 || reap(p->pid, wait_ms, &st) < 0)
		return -1;
	p->pid = 0;
	if (WIFEXITED(st))
		*status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		*status = 128 + WTERMSIG(st);
	else
		*status = 125;
	return 0;
}

void exec_ns_release(struct exec_ns_proc *p)
{
	close_fd(&p->pidfd);
	close_fd(&p->in_fd);
	close_fd(&p->out_fd[0]);
	close_fd(&p->out_fd[1]);
}

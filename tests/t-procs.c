/*
 * t-procs.c - an exec's processes found and stopped on this host, with
 * real processes and no engine: this test's own PID stands in for the
 * container's init (only its PID namespace is compared).  A shell carrying
 * the marker starts children every way a command can leave its process
 * group or its ancestry (setsid, a double fork, nohup, a process that
 * ignores TERM, one that scrubs its environment, one that hides its name
 * and turns non-dumpable, one whose main thread has exited); processes
 * with look-alike markers must be left alone.
 *
 * The test re-executes itself (--mode) for the processes a shell cannot
 * make.  It is a child subreaper, so orphans come back to it to be reaped
 * instead of to the machine's init.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "engine.h"
#include "error.h"
#include "procs.h"
#include "tap.h"

extern char **environ;

static void write_pid(const char *file)
{
	int fd = open(file, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		dprintf(fd, "%d\n", (int)getpid());
		close(fd);
	}
}

static void *park(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* The processes a shell cannot make. */
static int child_mode(const char *mode, const char *file, char **argv)
{
	if (strcmp(mode, "scrub") == 0) {
		/* /proc/PID/environ shows this memory: overwrite it. */
		for (char **e = environ; *e; e++)
			memset(*e, 'x', strlen(*e));
	} else if (strcmp(mode, "hide") == 0) {
		write_pid(file);
		file = NULL; /* about to be overwritten */
		prctl(PR_SET_DUMPABLE, 0);
		prctl(PR_SET_NAME, "kworker/0:1");
		for (char **a = argv; *a; a++)
			memset(*a, ' ', strlen(*a));
	} else if (strcmp(mode, "zleader") == 0) {
		pthread_t t;
		write_pid(file);
		pthread_create(&t, NULL, park, NULL);
		/* The leader exits, the thread group lives on. */
		syscall(SYS_exit, 0);
	}
	if (file)
		write_pid(file);
	park(NULL);
	return 0;
}

static char self[PATH_MAX];
static char path_env[] = "PATH=/usr/bin:/bin";

/* fork() after flushing: tap's skip() leaves its line buffered. */
static pid_t fork_flushed(void)
{
	fflush(stdout);
	return fork();
}

static pid_t spawn(const char *script, char *const env[], const char *file)
{
	pid_t pid = fork_flushed();
	if (pid < 0)
		bail_out("fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = {(char *)"sh", (char *)"-c", (char *)script,
				(char *)"sh", (char *)file, self, NULL};
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execve("/bin/sh", argv, env);
		_exit(127);
	}
	return pid;
}

/* The PIDs in file, once it holds want lines (up to 10 s). */
static size_t read_pids(const char *file, size_t want, pid_t *out)
{
	long long until = engine_now_ms() + 10000;
	size_t n = 0;

	while (engine_now_ms() < until) {
		FILE *f = fopen(file, "r");
		int v;
		n = 0;
		while (f && n < 64 && fscanf(f, "%d", &v) == 1)
			out[n++] = v;
		if (f)
			fclose(f);
		if (n >= want)
			break;
		usleep(20000);
	}
	return n;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static bool has(const pid_t *v, size_t n, pid_t p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return true;
	return false;
}

/* Alive, and not a zombie. */
static bool alive(pid_t pid)
{
	char path[64], buf[512], *s;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	s = strrchr(buf, ')');
	return s && s[1] == ' ' && s[2] != 'Z' && s[2] != 'X';
}

static void reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/*
 * Valgrind 3.19 does not know pidfd_open (syscall 434): procs_stop
 * refuses to signal without it, so under it the stopping is skipped and
 * the test cleans up by kill(2), which is fine for its own processes.
 */
static bool have_pidfd;
static const char no_pidfd[] = "pidfd_open is not available here (valgrind "
			       "< 3.20?); procs_stop is run by the plain and "
			       "the sanitizer builds";

static void kill_found(const char *marker, pid_t root)
{
	long long until = engine_now_ms() + 5000;
	struct sbx_error *err = NULL;
	pid_t *got;
	size_t n;

	do {
		got = NULL;
		n = 0;
		procs_find(getpid(), root, marker, &got, &n, &err);
		sbx_error_free(&err);
		for (size_t i = 0; i < n; i++)
			kill(got[i], SIGKILL);
		free(got);
		usleep(20000);
		reap_all();
	} while (n && engine_now_ms() < until);
}

/* procs_find until it returns exactly want (sorted), up to 5 s. */
static bool find_settles(const char *marker, pid_t root, const pid_t *want,
			 size_t nwant, pid_t **got, size_t *ngot)
{
	long long until = engine_now_ms() + 5000;
	struct sbx_error *err = NULL;

	for (;;) {
		*got = NULL;
		*ngot = 0;
		if (procs_find(getpid(), root, marker, got, ngot, &err) < 0) {
			diag("procs_find: %s", err->msg);
			sbx_error_free(&err);
			return false;
		}
		qsort(*got, *ngot, sizeof(pid_t), cmp_pid);
		if (*ngot == nwant &&
		    memcmp(*got, want, nwant * sizeof(pid_t)) == 0)
			return true;
		if (engine_now_ms() >= until)
			return false;
		free(*got);
		reap_all();
		usleep(50000);
	}
}

/* A shell carrying a new marker, given 300 ms to start its children. */
static pid_t spawn_marked(const char *script,
			  char marker[PROCS_MARKER_LEN + 1])
{
	char *env[] = {path_env, marker, NULL};
	struct sbx_error *err = NULL;
	pid_t root;

	if (procs_marker(marker, &err) < 0)
		bail_out("procs_marker: %s", err->msg);
	root = spawn(script, env, NULL);
	usleep(300000);
	return root;
}

/* procs_stop, or nskip skips and a clean-up when it cannot run here. */
static bool stop_or_skip(const char *marker, pid_t root, long grace,
			 int nskip, size_t *killed, size_t *left)
{
	struct sbx_error *err = NULL;
	int rc;

	if (!have_pidfd) {
		for (int i = 0; i < nskip; i++)
			skip(no_pidfd, "stop");
		kill_found(marker, root);
		return false;
	}
	rc = procs_stop(getpid(), root, marker, grace, 5000, killed, left,
			&err);
	if (rc < 0) {
		diag("procs_stop: %s", err->msg);
		sbx_error_free(&err);
		*left = 999;
	}
	return true;
}

static const char tree[] =
    "F=$1; SELF=$2\n"
    "sh -c 'echo $$ >>\"$1\"; exec sleep 1000' sh \"$F\" &\n"
    "setsid sh -c 'echo $$ >>\"$1\"; exec sleep 1000' sh \"$F\" &\n"
    "( sh -c 'echo $$ >>\"$1\"; exec sleep 1000' sh \"$F\" & )\n"
    "nohup sh -c 'echo $$ >>\"$1\"; exec sleep 1000' sh \"$F\" "
    ">/dev/null 2>&1 &\n"
    "sh -c 'trap \"\" TERM; echo $$ >>\"$1\"; exec sleep 1000' sh \"$F\" &\n"
    "( setsid sh -c 'trap \"\" TERM; echo $$ >>\"$1\"; exec sleep 1000' "
    "sh \"$F\" & )\n"
    "env -i sh -c 'echo $$ >>\"$1\"; exec sleep 1000' sh \"$F\" &\n"
    "\"$SELF\" --mode scrub \"$F\" &\n"
    "( \"$SELF\" --mode hide \"$F\" & )\n"
    "( \"$SELF\" --mode zleader \"$F\" & )\n"
    "echo $$ >>\"$F\"\n"
    "wait\n";
#define TREE_N 11

static void test_marker(void)
{
	char a[PROCS_MARKER_LEN + 1], b[PROCS_MARKER_LEN + 1];
	struct sbx_error *err = NULL;
	bool hex = true;

	ok(procs_marker(a, &err) == 0 && procs_marker(b, &err) == 0,
	   "marker: made");
	is_int((long long)strlen(a), (long long)PROCS_MARKER_LEN,
	       "marker: its length");
	ok(strncmp(a, "SBXCAT_EXEC=", 12) == 0, "marker: its name (%s)", a);
	for (const char *s = a + 12; *s; s++)
		hex = hex && strchr("0123456789abcdef", *s);
	ok(hex && strcmp(a, b) != 0, "marker: 32 hex digits, a new one each "
				     "time");
}

static void test_tree(const char *dir)
{
	char marker[PROCS_MARKER_LEN + 1], other[PROCS_MARKER_LEN + 1];
	char file[PATH_MAX], nfile[PATH_MAX], longer[PROCS_MARKER_LEN + 2];
	char shorter[PROCS_MARKER_LEN + 1], inside[PROCS_MARKER_LEN + 5];
	struct sbx_error *err = NULL;
	pid_t want[64], neg[64], negroot[5], root, *got;
	size_t nwant, nneg = 0, ngot, killed = 0, left = 0;
	long long t0, took;
	bool none_alive = true, negs_alive = true, settled;
	int fd;

	procs_marker(marker, &err);
	procs_marker(other, &err);
	snprintf(longer, sizeof(longer), "%sx", marker);
	snprintf(shorter, sizeof(shorter), "%.*s", (int)PROCS_MARKER_LEN - 1,
		 marker);
	snprintf(inside, sizeof(inside), "FOO=%s", marker);
	snprintf(file, sizeof(file), "%s/pids", dir);
	snprintf(nfile, sizeof(nfile), "%s/neg", dir);
	fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	close(fd);
	fd = open(nfile, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	close(fd);

	{
		char *env[] = {(char *)"PATH=/usr/bin:/bin",
			       (char *)"LC_ALL=C", marker, (char *)"HOME=/",
			       NULL};
		root = spawn(tree, env, file);
	}
	/* Look-alikes, none of them ours; the other marker's shell has a
	 * scrubbed child, to be left alone as root_pid's descendants are
	 * only taken from a root that is not another exec's. */
	{
		char *const envs[][3] = {
		    {path_env, longer, NULL},
		    {path_env, shorter, NULL},
		    {path_env, inside, NULL},
		    {path_env, other, NULL},
		};
		for (size_t i = 0; i < 4; i++)
			negroot[i] = spawn(
			    "env -i sh -c 'echo $$ >>\"$1\"; exec sleep 1000' "
			    "sh \"$1\" & echo $$ >>\"$1\"; wait",
			    envs[i], nfile);
		/* The marker in argv, not in the environment. */
		{
			char *env[] = {path_env, NULL};
			char script[256];
			snprintf(script, sizeof(script),
				 "\"$2\" --mode argv \"$1\" %s & wait", marker);
			negroot[4] = spawn(script, env, nfile);
		}
	}
	nwant = read_pids(file, TREE_N, want);
	is_int((long long)nwant, TREE_N, "tree: all %d processes started",
	       TREE_N);
	nneg = read_pids(nfile, 9, neg);
	is_int((long long)nneg, 9, "look-alikes: all started");
	qsort(want, nwant, sizeof(pid_t), cmp_pid);

	settled = find_settles(marker, root, want, nwant, &got, &ngot);
	ok(settled, "find: exactly the tree's %zu processes (found %zu)",
	   nwant, ngot);
	{
		bool stray = false;
		for (size_t i = 0; i < ngot; i++)
			if (has(neg, nneg, got[i])) {
				diag("look-alike %d found", (int)got[i]);
				stray = true;
			} else if (!has(want, nwant, got[i])) {
				diag("stray %d found", (int)got[i]);
				stray = true;
			}
		ok(!stray, "find: no look-alike, nothing else");
	}
	free(got);

	/* Without root_pid only the marker counts: the two scrubbed ones
	 * (env -i, and the one that overwrote its environment) are found
	 * through their ancestry alone. */
	got = NULL;
	procs_find(getpid(), 0, marker, &got, &ngot, &err);
	is_int((long long)ngot, (long long)nwant - 2,
	       "find: without root_pid, all but the two scrubbed ones");
	free(got);
	/* Another exec's shell as root_pid (a reused PID): its scrubbed
	 * child is not ours. */
	got = NULL;
	procs_find(getpid(), negroot[3], marker, &got, &ngot, &err);
	{
		bool stray = false;
		for (size_t i = 0; i < ngot; i++)
			stray = stray || has(neg, nneg, got[i]);
		ok(!stray && ngot == nwant - 2,
		   "find: a root_pid carrying another exec's marker brings "
		   "none of its tree (found %zu)",
		   ngot);
	}
	free(got);

	t0 = engine_now_ms();
	if (!stop_or_skip(marker, root, 300, 6, &killed, &left))
		goto out;
	took = engine_now_ms() - t0;
	is_int((long long)killed, (long long)nwant,
	       "stop: killed counts each process once");
	is_int((long long)left, 0, "stop: none left");
	ok(took >= 300 && took < 3000,
	   "stop: the TERM-ignoring ones needed KILL after the grace "
	   "(%lld ms)",
	   took);
	reap_all();
	for (size_t i = 0; i < nwant; i++)
		if (alive(want[i])) {
			diag("%d still alive", (int)want[i]);
			none_alive = false;
		}
	ok(none_alive, "stop: every one of them is gone");
	got = NULL;
	procs_find(getpid(), root, marker, &got, &ngot, &err);
	is_int((long long)ngot, 0, "stop: a fresh scan finds none");
	free(got);
	for (size_t i = 0; i < nneg; i++)
		if (!alive(neg[i])) {
			diag("look-alike %d was killed", (int)neg[i]);
			negs_alive = false;
		}
	ok(negs_alive, "stop: the look-alikes are untouched");
out:
	kill_found(marker, root); /* when stopping failed: leave nothing */
	for (size_t i = 0; i < nneg; i++)
		kill(neg[i], SIGKILL);
	usleep(100000);
	reap_all();
	sbx_error_free(&err);
}

/* A shell that ignores TERM and starts a TERM-ignoring child every 20 ms. */
static void test_spawner(void)
{
	char marker[PROCS_MARKER_LEN + 1];
	struct sbx_error *err = NULL;
	size_t killed = 0, left = 0, n = 0;
	pid_t root, *got = NULL;

	root = spawn_marked(
	    "trap '' TERM; while :; do sleep 1000 & sleep 0.02; done", marker);
	if (stop_or_skip(marker, root, 200, 2, &killed, &left)) {
		ok(left == 0 && killed >= 5,
		   "spawner: stopped while it forks (%zu killed, %zu left)",
		   killed, left);
		procs_find(getpid(), root, marker, &got, &n, &err);
		is_int((long long)n, 0, "spawner: a fresh scan finds none");
		free(got);
		kill_found(marker, root);
	}
	usleep(50000);
	reap_all();
	sbx_error_free(&err);
}

/*
 * A dead child nobody reaps (its parent exec'd sleep): a zombie under
 * root_pid.  It is no process to stop: finding it would have the stopping
 * loop signal it until it gave up.
 */
static void test_zombie(void)
{
	char marker[PROCS_MARKER_LEN + 1];
	struct sbx_error *err = NULL;
	size_t killed = 0, left = 0, n = 0;
	pid_t root, *got = NULL;

	root = spawn_marked("sh -c 'exit 0' & exec sleep 1000", marker);
	procs_find(getpid(), root, marker, &got, &n, &err);
	ok(n == 1 && got[0] == root,
	   "zombie: an unreaped dead child is not found (%zu found)", n);
	free(got);
	if (stop_or_skip(marker, root, 200, 1, &killed, &left))
		ok(killed == 1 && left == 0,
		   "zombie: stop kills the one live process (%zu killed, %zu "
		   "left)",
		   killed, left);
	kill_found(marker, root);
	usleep(50000);
	reap_all();
	sbx_error_free(&err);
}

static void test_errors(void)
{
	struct sbx_error *err = NULL;
	pid_t *got = NULL, dead;
	size_t n;
	int rc;

	dead = fork_flushed();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	rc = procs_find(dead, 0, "SBXCAT_EXEC=x", &got, &n, &err);
	ok(rc == -1 && err && err->status == SBX_EXIT_ENV,
	   "find: an init that is gone is status 3 (%s)",
	   err ? err->msg : "");
	sbx_error_free(&err);
	free(got);
	{
		size_t killed = 9, left = 9;
		rc = procs_stop(dead, 0, "SBXCAT_EXEC=x", 100, 100, &killed,
				&left, &err);
		ok(rc == 0 && killed == 0 && left == 0,
		   "stop: an init that is gone took its namespace with it");
		sbx_error_free(&err);
	}
}

static void test_oom(void)
{
	struct sbx_error *err = NULL;
	unsigned long long count = 12345;
	pid_t dead;
	int rc;

	if (procs_oom_kills(getpid(), &count, &err) < 0) {
		skip(err->msg, "oom_kills: no memory cgroup to read here");
		sbx_error_free(&err);
	} else {
		ok(count != 12345, "oom_kills: our own cgroup's count is %llu",
		   count);
	}
	dead = fork_flushed();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	rc = procs_oom_kills(dead, &count, &err);
	ok(rc == -1 && err && err->status == SBX_EXIT_ENV,
	   "oom_kills: a process gone is an error (%s)", err ? err->msg : "");
	sbx_error_free(&err);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/t-procs.XXXXXX";

	if (argc >= 3 && strcmp(argv[1], "--mode") == 0)
		return child_mode(argv[2], argc > 3 ? argv[3] : NULL, argv);
	if (!realpath(argv[0], self))
		bail_out("realpath %s: %s", argv[0], strerror(errno));
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		bail_out("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	if (!mkdtemp(dir))
		bail_out("mkdtemp: %s", strerror(errno));
	alarm(120); /* a test that hangs fails */
	{
		int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		have_pidfd = fd >= 0;
		if (fd >= 0)
			close(fd);
		else
			diag("%s: %s", no_pidfd, strerror(errno));
	}

	test_marker();
	if (geteuid() != 0)
		diag("not root: a non-dumpable process's environment cannot be "
		     "read; the tree may not be found whole");
	test_tree(dir);
	test_spawner();
	test_zombie();
	test_errors();
	test_oom();

	{
		char path[PATH_MAX + 8];
		snprintf(path, sizeof(path), "%s/pids", dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/neg", dir);
		unlink(path);
		rmdir(dir);
	}
	return done_testing();
}

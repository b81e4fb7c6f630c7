/*
 * t-procs.c - an exec's cgroup on this host, with real processes and real
 * cgroups, and no engine: for each back-end this machine has (cgroup2,
 * and the v1 freezer), a cgroup of the test's own stands in for a
 * container's, with an "init" and its "main" process in it.  "Commands"
 * are shells started in that cgroup, leaving it every way a process can
 * leave its parent's view (setsid, a double fork, a scrubbed environment,
 * ignoring TERM, a fork storm); the claim must take them all and nothing
 * of init's, a group's stop must end them all and nothing of another
 * group's, and expired groups must be stopped by procs_groups_expire and
 * by the watcher.
 *
 * Needs root (cgroup directories); skips otherwise.  Everything it makes
 * is below MNT/sbxcat-t-procs-PID-vN and removed at the end.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/alloc.h"
#include "engine/engine.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "exec/procs.h"
#include "tap.h"

static char ctr[2][PATH_MAX]; /* the stand-in container cgroups, v1, v2 */
static pid_t init_pid[2];

static pid_t fork_flushed(void)
{
	fflush(stdout);
	fflush(stderr);
	return fork();
}

static void reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static int join(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 16], num[24];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(num, sizeof(num), "%d\n", (int)pid);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = write(fd, num, strlen(num)) == (ssize_t)strlen(num) ? 0 : -1;
	close(fd);
	return rc;
}

/* The PIDs in DIR/cgroup.procs, at most max; how many. */
static size_t members(const char *dir, pid_t *v, size_t max)
{
	char path[PATH_MAX + 16];
	FILE *f;
	size_t n = 0;
	int p;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fscanf(f, "%d", &p) == 1)
		if (n < max)
			v[n++] = p;
		else
			n++;
	fclose(f);
	return n;
}

/* A child in dir running sh -c script (its own PID returned). */
static pid_t spawn_in(const char *dir, const char *script)
{
	pid_t c = fork_flushed();

	if (c == 0) {
		if (join(dir, getpid()) < 0)
			_exit(99);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(98);
	}
	return c;
}

/* init: in the cgroup, with main (the earliest child) beside it. */
static pid_t start_init(const char *dir)
{
	pid_t c = fork_flushed();

	if (c == 0) {
		pid_t m;
		if (join(dir, getpid()) < 0)
			_exit(99);
		m = fork();
		if (m == 0) {
			for (;;)
				pause();
		}
		for (;;) {
			if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
				pause();
		}
	}
	return c;
}

/* How many processes of the host run exactly "sleep ARG". */
static int sleeps(const char *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d))) {
		char path[300], buf[256];
		ssize_t k;
		int fd;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		k = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (k <= 0)
			continue;
		buf[k] = '\0';
		if (strcmp(buf, "sleep") == 0 && (size_t)k > 6 &&
		    strcmp(buf + 6, arg) == 0) {
			char st[64];
			snprintf(path, sizeof(path), "/proc/%s/stat",
				 de->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			k = fd >= 0 ? read(fd, st, sizeof(st) - 1) : -1;
			if (fd >= 0)
				close(fd);
			st[k > 0 ? k : 0] = '\0';
			/* a zombie is not running */
			if (!strstr(st, ") Z "))
				n++;
		}
	}
	if (d)
		closedir(d);
	return n;
}

/* Wait (up to ms) until want sleeps run as "sleep arg". */
static int sleeps_settle(const char *arg, int want, long ms)
{
	long long until = clock_now_ms() + ms;
	int n;

	while ((n = sleeps(arg)) != want && clock_now_ms() < until) {
		reap_all();
		usleep(20000);
	}
	return n;
}

static const char *vname(int v)
{
	return v == 2 ? "cgroup2" : "v1 freezer";
}

static void test_claim_and_stop(int v)
{
	struct procs_group g = PROCS_GROUP_INIT, h = PROCS_GROUP_INIT;
	struct sbx_error *err = NULL;
	char a[32], b[32], script[1024];
	const char *dir = ctr[v - 1];
	pid_t left[8], sh, other;
	size_t moved = 0, n = 0, killed = 0, rest = 9;
	long long now = (long long)time(NULL);
	int rc;

	snprintf(a, sizeof(a), "%d1", 700000 + (int)getpid() % 99999);
	snprintf(b, sizeof(b), "%d2", 700000 + (int)getpid() % 99999);
	/* Five ways out of a process group or an ancestry, and a scrubbed
	 * environment: none is a way out of a cgroup. */
	snprintf(script, sizeof(script),
		 "sleep %s & setsid sleep %s & (trap '' TERM; exec sleep %s) & "
		 "(sleep %s &) ; (env -i setsid sleep %s >/dev/null 2>&1 &); "
		 "exec env -i sleep %s",
		 a, a, a, a, a, a);
	sh = spawn_in(dir, script);
	other = spawn_in(dir, "exec sleep 1000000");
	(void)other;
	is_int(sleeps_settle(a, 6, 5000), 6, "%s: the command's six sleeps run",
	       vname(v));

	rc = procs_group_create(init_pid[v - 1], v, now, now + 300, &g, &err);
	ok(rc == 0, "%s: a group is made (%s)", vname(v),
	   err ? err->msg : g.dir);
	sbx_error_free(&err);
	if (rc < 0)
		return;
	ok(strstr(g.dir, "/" PROCS_GROUP_PREFIX) != NULL, "%s: named %s...",
	   vname(v), PROCS_GROUP_PREFIX);
	rc = procs_group_claim(&g, init_pid[v - 1], &moved, &err);
	ok(rc == 0 && moved >= 7, "%s: the claim moves every process (%zu)",
	   vname(v), moved);
	sbx_error_free(&err);
	n = members(dir, left, 8);
	ok(n == 2 &&
	       ((left[0] == init_pid[v - 1]) || (left[1] == init_pid[v - 1])),
	   "%s: the container's cgroup keeps its init and main alone (%zu)",
	   vname(v), n);

	/* A second group, claimed after: the other exec's. */
	rc = procs_group_create(init_pid[v - 1], v, now, now + 300, &h, &err);
	sbx_error_free(&err);
	if (rc == 0) {
		spawn_in(dir, "exec sleep 1000001");
		usleep(100000);
		rc = procs_group_claim(&h, init_pid[v - 1], &moved, &err);
		sbx_error_free(&err);
	}
	procs_group_count(&g, &n, &err);
	sbx_error_free(&err);
	ok(n >= 7, "%s: the group counts the command's processes (%zu)",
	   vname(v), n);

	rc = procs_group_stop(&g, 300, 5000, &killed, &rest, &err);
	ok(rc == 0 && rest == 0, "%s: stop: nothing left (%s)", vname(v),
	   err ? err->msg : "ok");
	sbx_error_free(&err);
	ok(killed >= 7, "%s: stop counts what it stopped (%zu)", vname(v),
	   killed);
	is_int(sleeps_settle(a, 0, 3000), 0,
	       "%s: no sleep of the command survives, setsid, double fork, "
	       "TERM ignored and scrubbed environment included",
	       vname(v));
	waitpid(sh, NULL, 0);
	is_int(sleeps("1000001"), 1,
	       "%s: another group's process is left alone", vname(v));
	ok(kill(init_pid[v - 1], 0) == 0, "%s: init is left alone", vname(v));
	ok(procs_group_remove(&g) == 0 && access(g.dir, F_OK) < 0,
	   "%s: the empty group is removed", vname(v));
	procs_group_count(&g, &n, &err);
	ok(n == 0 && !err, "%s: a group that is gone counts 0", vname(v));
	sbx_error_free(&err);

	/* A fork storm in h: the atomic kill ends it. */
	if (h.dir) {
		pid_t storm =
		    spawn_in(h.dir, "while :; do (sleep 1000002 &) ; done");
		usleep(300000);
		rc = procs_group_stop(&h, 0, 5000, &killed, &rest, &err);
		ok(rc == 0 && rest == 0,
		   "%s: a fork storm is stopped whole (%zu stopped)", vname(v),
		   killed);
		sbx_error_free(&err);
		waitpid(storm, NULL, 0);
		is_int(sleeps_settle("1000002", 0, 3000), 0,
		       "%s: ... nothing of it left", vname(v));
		is_int(sleeps("1000001"), 0, "%s: ... the other exec's too",
		       vname(v));
		procs_group_remove(&h);
	}
	procs_group_release(&g);
	procs_group_release(&h);
	reap_all();
}

static void test_expire(int v)
{
	struct procs_group old = PROCS_GROUP_INIT, young = PROCS_GROUP_INIT,
			   empty = PROCS_GROUP_INIT, done = PROCS_GROUP_INIT;
	struct sbx_error *err = NULL;
	size_t busy = 9, stopped = 9, moved;
	long long now = (long long)time(NULL);
	const char *dir = ctr[v - 1];
	int rc;

	rc = procs_group_create(init_pid[v - 1], v, now - 100, now - 1, &old,
				&err);
	sbx_error_free(&err);
	spawn_in(dir, "exec sleep 1000003");
	usleep(100000);
	procs_group_claim(&old, init_pid[v - 1], &moved, &err);
	sbx_error_free(&err);
	rc |= procs_group_create(init_pid[v - 1], v, now, now + 300, &young,
				 &err);
	sbx_error_free(&err);
	spawn_in(dir, "exec sleep 1000004");
	usleep(100000);
	procs_group_claim(&young, init_pid[v - 1], &moved, &err);
	sbx_error_free(&err);
	rc |= procs_group_create(init_pid[v - 1], v, now, now + 300, &empty,
				 &err);
	sbx_error_free(&err);
	/* Empty, within its deadline, made a minute ago: its exec is over. */
	rc |= procs_group_create(init_pid[v - 1], v, now - 60, now + 300, &done,
				 &err);
	sbx_error_free(&err);
	if (rc) {
		skip("the groups could not be made", "%s: expire", vname(v));
		return;
	}
	rc = procs_groups_expire(init_pid[v - 1], now, 300, 3000, &busy,
				 &stopped, &err);
	ok(rc == 0 && busy == 2 && stopped == 1,
	   "%s: expire stops the group past its deadline, counts the two "
	   "within it, one of them empty (busy %zu, stopped %zu)",
	   vname(v), busy, stopped);
	sbx_error_free(&err);
	is_int(sleeps_settle("1000003", 0, 3000), 0,
	       "%s: ... its process is gone", vname(v));
	is_int(sleeps("1000004"), 1, "%s: ... the young one's runs", vname(v));
	ok(access(old.dir, F_OK) < 0 && access(empty.dir, F_OK) == 0 &&
	       access(young.dir, F_OK) == 0,
	   "%s: ... the expired group is removed; an empty one within its "
	   "deadline (a starting exec's) is left",
	   vname(v));
	ok(access(done.dir, F_OK) < 0,
	   "%s: ... and an empty one older than any start is removed",
	   vname(v));
	/* The longest deadline shrank to 0 s: start + 0 is past. */
	rc = procs_groups_expire(init_pid[v - 1], now + 5, 1, 3000, &busy,
				 &stopped, &err);
	sbx_error_free(&err);
	ok(rc == 0 && busy == 0 && sleeps_settle("1000004", 0, 3000) == 0 &&
	       access(empty.dir, F_OK) < 0,
	   "%s: start + the configured longest deadline bounds a deadline "
	   "written longer",
	   vname(v));
	procs_group_release(&old);
	procs_group_release(&young);
	procs_group_release(&empty);
	procs_group_release(&done);
	reap_all();
}

/* Wait (up to ms) until dir is gone. */
static bool gone_within(const char *dir, long ms)
{
	long long until = clock_now_ms() + ms;

	while (access(dir, F_OK) == 0 && clock_now_ms() < until)
		usleep(20000);
	return access(dir, F_OK) < 0;
}

static void test_watch(int v)
{
	struct procs_group g = PROCS_GROUP_INIT, h = PROCS_GROUP_INIT;
	struct sbx_error *err = NULL;
	long long now = (long long)time(NULL);
	char lockpath[64];
	size_t moved;
	pid_t w = 0, w2 = 99;
	int rc, lock, lock2;
	bool ended = false;

	snprintf(lockpath, sizeof(lockpath), "/tmp/t-procs-watch.%d",
		 (int)getpid());
	lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	lock2 = open(lockpath, O_RDWR | O_CLOEXEC);
	if (lock < 0 || lock2 < 0 ||
	    procs_group_create(init_pid[v - 1], v, now, now + 2, &g, &err) <
		0) {
		skip(err ? err->msg : strerror(errno), "%s: watch", vname(v));
		sbx_error_free(&err);
		return;
	}
	spawn_in(ctr[v - 1], "trap '' TERM; exec sleep 1000005");
	usleep(100000);
	procs_group_claim(&g, init_pid[v - 1], &moved, &err);
	sbx_error_free(&err);
	rc = procs_watch(init_pid[v - 1], lock, 300, 200, 3000, &w, &err);
	ok(rc == 0 && w > 0 && kill(w, 0) == 0,
	   "%s: a watcher runs (%d), detached", vname(v), (int)w);
	sbx_error_free(&err);
	ok(w > 0 && getsid(w) > 0 && getsid(w) != getsid(0) && getsid(w) != w,
	   "%s: ... in a session of its own, not leading it", vname(v));
	/* Another exec of the session, with a group of its own and its own
	 * open of the lock: the running watcher takes its group too. */
	procs_group_create(init_pid[v - 1], v, now, now + 3, &h, &err);
	sbx_error_free(&err);
	spawn_in(ctr[v - 1], "trap '' TERM; exec sleep 1000006");
	usleep(100000);
	procs_group_claim(&h, init_pid[v - 1], &moved, &err);
	sbx_error_free(&err);
	rc = procs_watch(init_pid[v - 1], lock2, 300, 200, 3000, &w2, &err);
	ok(rc == 0 && w2 == 0,
	   "%s: one watcher a session: a second is not started (%d)", vname(v),
	   (int)w2);
	sbx_error_free(&err);
	is_int(sleeps("1000005") + sleeps("1000006"), 2,
	       "%s: before their deadlines both processes run", vname(v));
	is_int(sleeps_settle("1000005", 0, 8000), 0,
	       "%s: at the first deadline the watcher stops its process (TERM "
	       "ignored)",
	       vname(v));
	is_int(sleeps_settle("1000006", 0, 8000), 0,
	       "%s: ... and at the second, the other exec's", vname(v));
	ok(gone_within(g.dir, 3000) && gone_within(h.dir, 3000),
	   "%s: ... and removes both groups", vname(v));
	for (long long until = clock_now_ms() + 5000;
	     !ended && clock_now_ms() < until; usleep(20000))
		/* we are its reaper: reaped here, or by a reap_all before */
		ended = waitpid(w, NULL, WNOHANG) == w ||
			(kill(w, 0) < 0 && errno == ESRCH);
	ok(ended, "%s: with nothing left to watch, the watcher ends", vname(v));
	close(lock);
	close(lock2);
	unlink(lockpath);
	procs_group_release(&g);
	procs_group_release(&h);
	reap_all();
}

static void test_errors(void)
{
	struct sbx_error *err = NULL;
	int version;
	char *dir = NULL, *rel = NULL;
	pid_t dead = fork_flushed();
	int rc;

	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	rc = procs_container_cgroup(dead, 0, &version, &dir, &rel, &err);
	ok(rc < 0 && err && tap_status(err) == 3,
	   "a process gone has no cgroup (%s)", err ? err->msg : "");
	sbx_error_free(&err);
	free(dir);
	free(rel);
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
	ok(rc == -1 && err && tap_status(err) == 3,
	   "oom_kills: a process gone is an error (%s)", err ? err->msg : "");
	sbx_error_free(&err);
}

/* The hierarchy's mount point of version v, or NULL. */
static const char *mount_of(int v)
{
	static char mnt[2][PATH_MAX];
	FILE *f = fopen("/proc/self/mounts", "r");
	char src[256], dir[PATH_MAX], type[64], opts[512];

	while (f && fscanf(f, "%255s %4095s %63s %511s %*s %*s", src, dir, type,
			   opts) == 4) {
		if ((v == 2 && strcmp(type, "cgroup2") == 0) ||
		    (v == 1 && strcmp(type, "cgroup") == 0 &&
		     strstr(opts, "freezer"))) {
			snprintf(mnt[v - 1], sizeof(mnt[v - 1]), "%s", dir);
			fclose(f);
			return mnt[v - 1];
		}
	}
	if (f)
		fclose(f);
	return NULL;
}

static void kill_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	pid_t v[4096];

	while (d && (de = readdir(d))) {
		char sub[PATH_MAX];
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		kill_tree(sub);
	}
	if (d)
		closedir(d);
	for (int round = 0; round < 100; round++) {
		size_t n = members(dir, v, 4096);
		if (!n)
			break;
		for (size_t i = 0; i < n && i < 4096; i++)
			kill(v[i], SIGKILL);
		usleep(10000);
		reap_all();
	}
	rmdir(dir);
}

int main(void)
{
	int versions = 0;

	if (geteuid() != 0)
		skip_all("cgroups are made by root only");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		bail_out("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	alarm(180); /* a test that hangs fails */
	{
		int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		if (fd < 0)
			skip_all("pidfd_open is not available here (valgrind "
				 "< 3.20?); the plain and sanitizer builds run "
				 "this test");
		close(fd);
	}
	for (int v = 1; v <= 2; v++) {
		const char *m = mount_of(v);
		if (!m) {
			diag("no %s hierarchy is mounted here", vname(v));
			continue;
		}
		snprintf(ctr[v - 1], sizeof(ctr[v - 1]),
			 "%s/sbxcat-t-procs-%d-v%d", m, (int)getpid(), v);
		if (mkdir(ctr[v - 1], 0700) < 0) {
			diag("cannot make %s: %s", ctr[v - 1], strerror(errno));
			ctr[v - 1][0] = '\0';
			continue;
		}
		init_pid[v - 1] = start_init(ctr[v - 1]);
		usleep(100000);
		versions++;
	}
	if (!versions)
		skip_all("neither cgroup2 nor the v1 freezer can be used here");
	for (int v = 2; v >= 1; v--) {
		if (!ctr[v - 1][0]) {
			skip("not mounted here",
			     "%s: claim, stop, expire, "
			     "watch",
			     vname(v));
			continue;
		}
		test_claim_and_stop(v);
		test_expire(v);
		test_watch(v);
	}
	test_errors();
	test_oom();
	for (int v = 1; v <= 2; v++)
		if (ctr[v - 1][0])
			kill_tree(ctr[v - 1]);
	reap_all();
	return done_testing();
}

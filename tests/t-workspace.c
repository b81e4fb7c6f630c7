/*
 * t-workspace.c - workspace.c on host directories, no engine: path checks,
 * every way out of the workspace (.., absolute, symlinks to / and /etc, a
 * chain that leaves, a /proc magic link, a bind mount and a tmpfs in a
 * private mount namespace), device files, FIFOs and sockets, the read
 * limit (bytes read counted by the kernel, /proc/self/io), line slices
 * against a reference (a fuzzer), write, edit, stat and rm, a kernel
 * without openat2 (seccomp), and a race: a child swapping one name
 * between a file, a directory and symlinks out while every operation runs
 * on it thousands of times; nothing outside is read or changed.
 *
 * Run as root (it checks ownership and mounts in a namespace of its own);
 * everything lives under a mkdtemp directory in /tmp.  T_WORKSPACE_QUICK=1
 * makes the fuzzers smaller (for valgrind).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "tap.h"
#include "workspace/workspace.h"

#define SANDBOX_UID 10001
#define MAX_READ 4096
#define MAX_WRITE 4096
#define SENTINEL "SENTINEL-OUTSIDE-42"

static char tmpdir[] = "/tmp/t-workspace.XXXXXX";
static struct workspace w;
/* w's cancel flag (workspace.h): test_cancel sets it. */
static atomic_int cancel;
static bool quick;


/* tmpdir/rel holds data. */
/* Where line i (0-based) of l ends in l->buf, its newline included (0:
 * there is no such line), through workspace_lines_next. */
static size_t line_end_at(const struct workspace_lines *l, size_t i)
{
	const char *text;
	size_t pos = 0, len;

	for (size_t k = 0; workspace_lines_next(l, &pos, &text, &len); k++)
		if (k == i)
			return pos;
	return 0;
}

/* How many lines workspace_lines_next gives of l. */
static size_t lines_counted(const struct workspace_lines *l)
{
	const char *text;
	size_t pos = 0, len, n = 0;

	while (workspace_lines_next(l, &pos, &text, &len))
		n++;
	return n;
}

static size_t line_end(const struct workspace_lines *l)
{
	return line_end_at(l, 0);
}

static void put_n(const char *rel, const char *data, size_t len)
{
	char *p = tap_path(tmpdir, "%s", rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) < 0)
		bail_out("cannot write %s: %s", p, strerror(errno));
	free(p);
}

static void put(const char *rel, const char *data)
{
	put_n(rel, data, strlen(data));
}

/* tmpdir/rel's bytes, or NULL. */
static char *slurp(const char *rel, size_t *len)
{
	char *p = tap_path(tmpdir, "%s", rel);
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	ssize_t n;

	free(p);
	if (fd < 0)
		return NULL;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		strbuf_add(&sb, buf, (size_t)n);
	close(fd);
	strbuf_addstr(&sb, "");
	return strbuf_detach(&sb, len);
}

/* tmpdir/rel holds exactly want. */
static void has(const char *rel, const char *want, const char *name)
{
	char *s = slurp(rel, NULL);

	is_str(s, want, "%s", name);
	free(s);
}

/* A directory; the sandbox's when it is in the workspace (ws), as a
 * session's are: fs writes are made as the sandbox. */
static void mkd(const char *rel)
{
	char *p = tap_path(tmpdir, "%s", rel);

	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		bail_out("mkdir %s: %s", p, strerror(errno));
	if (strncmp(rel, "ws", 2) == 0 && (!rel[2] || rel[2] == '/') &&
	    chown(p, SANDBOX_UID, SANDBOX_UID) < 0)
		bail_out("chown %s: %s", p, strerror(errno));
	free(p);
}

static void lnk(const char *target, const char *rel)
{
	char *p = tap_path(tmpdir, "%s", rel);

	unlink(p);
	if (symlink(target, p) < 0)
		bail_out("symlink %s: %s", p, strerror(errno));
	free(p);
}

static bool lexists(const char *rel)
{
	char *p = tap_path(tmpdir, "%s", rel);
	struct stat st;
	bool r = lstat(p, &st) == 0;

	free(p);
	return r;
}

static int lst(const char *rel, struct stat *st)
{
	char *p = tap_path(tmpdir, "%s", rel);
	int r = lstat(p, st);

	free(p);
	return r;
}

/* A refusal with this status whose message holds want. */
static bool refused(int rc, struct sbx_error **err, int status,
		    const char *want, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static bool refused(int rc, struct sbx_error **err, int status,
		    const char *want, const char *fmt, ...)
{
	char name[256];
	va_list ap;
	bool r = rc < 0 && *err && tap_status(*err) == status &&
		 strstr((*err)->msg, want);

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (!ok(r, "%s", name))
		diag("rc %d, status %d, message: %s (wanted %d, '%s')", rc,
		     *err ? tap_status(*err) : -1, *err ? (*err)->msg : "(none)",
		     status, want);
	sbx_error_free(err);
	return r;
}

static bool refused_exact(int rc, struct sbx_error **err, const char *want,
			  const char *name)
{
	bool r = rc < 0 && *err && tap_status(*err) == 1 &&
		 strcmp((*err)->msg, want) == 0;

	if (!ok(r, "%s", name))
		diag("rc %d, message: %s\n  wanted: %s", rc,
		     *err ? (*err)->msg : "(none)", want);
	sbx_error_free(err);
	return r;
}

static bool done_ok(int rc, struct sbx_error **err, const char *name)
{
	bool r = ok(rc == 0 && !*err, "%s", name);

	if (!r)
		diag("rc %d, message: %s", rc, *err ? (*err)->msg : "(none)");
	sbx_error_free(err);
	return r;
}

/* A descriptor reading data (a memfd). */
static int mem_fd(const char *data, size_t len)
{
	int fd = memfd_create("t-workspace", MFD_CLOEXEC);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) != 0)
		bail_out("memfd: %s", strerror(errno));
	return fd;
}

static int ws_write(const char *rel, const char *data, size_t len,
		    unsigned long long *bytes, bool *created,
		    struct sbx_error **err)
{
	int fd = mem_fd(data, len);
	int rc = workspace_write(&w, rel, rel, fd, bytes, created, err);

	close(fd);
	return rc;
}

/* Bytes this process has read(2) so far (the kernel's count). */
static unsigned long long rchar(void)
{
	char buf[512];
	int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	const char *p;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "rchar: ");
	return p ? strtoull(p + 7, NULL, 10) : 0;
}

/* Bytes read since before (what reading /proc/self/io adds taken off). */
static unsigned long long read_since(unsigned long long before,
				     unsigned long long cost)
{
	return rchar() - before - cost;
}

/* What reading /proc/self/io itself adds to rchar. */
static unsigned long long rchar_cost(void)
{
	unsigned long long a = rchar(), b = rchar();

	return b - a;
}

static bool have_rchar;

/* ---- the workspace ---- */

static void setup(void)
{
	struct sbx_error *err = NULL;
	char *ws;
	int fd;

	if (!mkdtemp(tmpdir))
		bail_out("mkdtemp: %s", strerror(errno));
	mkd("ws");
	mkd("out");
	put("out/secret", SENTINEL "\n");
	put("out/victim", "victim\n");
	ws = tap_path(tmpdir, "ws");
	fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		bail_out("open %s: %s", ws, strerror(errno));
	if (workspace_init(&w, fd, ws, SANDBOX_UID, MAX_READ, MAX_WRITE,
			   &cancel, &err) < 0)
		bail_out("workspace_init: %s", err->msg);
	free(ws);
	have_rchar = rchar() > 0;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* ---- path checks ---- */

static void test_path_check(void)
{
	static const struct {
		const char *in;
		bool root;
		const char *want; /* NULL: refused */
		const char *msg;
	} cases[] = {
	    {"a/./b//c/", false, "a/b/c", NULL},
	    {"./a", false, "a", NULL},
	    {"...", false, "...", NULL},
	    {"..a/b..", false, "..a/b..", NULL},
	    {"", true, "", NULL},
	    {".", true, "", NULL},
	    {"./", true, "", NULL},
	    {"", false, NULL, "'' is the workspace itself"},
	    {".", false, NULL, "'.' is the workspace itself"},
	    {".//./", false, NULL, "is the workspace itself"},
	    {"a/..", true, NULL,
	     "'a/..' is outside the workspace: '..' is not allowed"},
	    {"../x", false, NULL,
	     "'../x' is outside the workspace: '..' is not allowed"},
	    {"a/../../b", false, NULL, "'..' is not allowed"},
	    {"/etc/passwd", false, NULL,
	     "'/etc/passwd' is outside the workspace: paths are relative to "
	     "it"},
	    {"//x", true, NULL, "paths are relative to it"},
	    {"a\nb/../c", false, NULL, "'a\\nb/../c' is outside"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct sbx_error *err = NULL;
		char *rel = NULL;
		int rc = workspace_path_check(cases[i].in, cases[i].root, &rel,
					      &err);

		if (cases[i].want) {
			ok(rc == 0, "path case %zu accepted", i);
			is_str(rel, cases[i].want, "path case %zu normalised",
			       i);
		} else {
			refused(rc, &err, 1, cases[i].msg,
				"path case %zu refused", i);
			ok(rel == NULL, "path case %zu: nothing returned", i);
		}
		free(rel);
		sbx_error_free(&err);
	}
	{
		char *longp = xmalloc(PATH_MAX + 10);
		struct sbx_error *err = NULL;
		char *rel = NULL;

		memset(longp, 'a', PATH_MAX + 9);
		longp[PATH_MAX + 9] = '\0';
		refused(workspace_path_check(longp, false, &rel, &err), &err,
			1, "byte limit", "a path over PATH_MAX");
		free(longp);
	}
}

/* ---- traversal ---- */

static void open_refused(const char *rel, const char *want, const char *name)
{
	struct sbx_error *err = NULL;
	struct stat st;
	int fd = workspace_open_file(&w, rel, rel, &st, &err);

	if (fd >= 0)
		close(fd);
	refused(fd, &err, 1, want, "%s", name);
}

static void test_traversal(void)
{
	struct sbx_error *err = NULL;
	struct workspace_lines l;
	char *out = tap_path(tmpdir, "out");
	struct stat st;
	int fd;

	mkd("ws/sub");
	mkd("ws/sub/deeper");
	put("ws/file.txt", "inside\n");
	lnk("/", "ws/to_root");
	lnk("/etc", "ws/to_etc");
	lnk("/etc/passwd", "ws/passwd");
	lnk("c2", "ws/c1");
	lnk("sub/c3", "ws/c2");
	lnk("../../out/secret", "ws/sub/c3");
	lnk("../file.txt", "ws/sub/ok");
	lnk("../ok", "ws/sub/deeper/ok2");
	lnk("/proc/self/root/etc/passwd", "ws/magic");
	lnk("/proc/self/cwd", "ws/magic_cwd");
	lnk(out, "ws/to_out");
	lnk("loop2", "ws/loop1");
	lnk("loop1", "ws/loop2");
	free(out);

	open_refused("to_root/etc/passwd",
		     "'to_root/etc/passwd' leads outside the workspace "
		     "(a symlink out of it, or onto another mount)",
		     "a symlink to / is refused, naming the path and why");
	open_refused("to_etc/passwd", "leads outside",
		     "a symlink to /etc is refused");
	open_refused("passwd", "leads outside",
		     "a symlink to /etc/passwd is refused");
	open_refused("c1", "'c1' leads outside",
		     "a chain of relative symlinks that leaves is refused");
	open_refused("sub/c3", "leads outside",
		     "a relative symlink up and out is refused");
	open_refused("magic", "leads outside",
		     "a planted /proc/self/root link is refused");
	open_refused("magic_cwd/out/secret", "leads outside",
		     "a planted /proc/self/cwd link is refused");
	open_refused("to_out/secret", "leads outside",
		     "a symlink to the outside directory is refused");
	open_refused("loop1", "cannot be followed",
		     "a symlink loop is refused");
	open_refused("nothing", "'nothing' does not exist",
		     "a missing file: does not exist");
	open_refused("file.txt/x", "is not a directory",
		     "a file as a directory is refused");
	open_refused("sub", "'sub' is a directory, not a regular file",
		     "a directory is not read");

	fd = workspace_open_file(&w, "sub/deeper/ok2", "sub/deeper/ok2", &st,
				 &err);
	ok(fd >= 0 && S_ISREG(st.st_mode) && st.st_size == 7,
	   "a relative symlink chain that stays beneath is followed");
	if (fd >= 0)
		close(fd);
	sbx_error_free(&err);
	done_ok(workspace_read_lines(&w, "sub/ok", "sub/ok", 1, 10, false, &l,
				     &err),
		&err, "read through a symlink that stays beneath");
	ok(l.n == 1 && l.len == 7 && memcmp(l.buf, "inside\n", 7) == 0,
	   "it reads the file inside");
	workspace_lines_release(&l);

	/* Magic links proper: a "workspace" whose tree holds some. */
	{
		struct workspace pw;
		int pfd = open("/proc/self", O_RDONLY | O_DIRECTORY);

		if (workspace_init(&pw, pfd, "/proc/self", 0, MAX_READ,
				   MAX_WRITE, NULL, &err) < 0) {
			ok(false, "workspace over /proc/self: %s", err->msg);
			sbx_error_free(&err);
		} else {
			fd = workspace_openat(&pw, "root/etc/passwd", O_RDONLY,
					      0, 0, "root/etc/passwd", &err);
			refused(fd, &err, 1, "'root/etc/passwd'",
				"/proc/self/root, a magic link, is not "
				"followed");
			fd =
			    workspace_openat(&pw, "cwd", O_RDONLY | O_DIRECTORY,
					     0, 0, "cwd", &err);
			refused(fd, &err, 1, "cannot be followed",
				"/proc/self/cwd: refused as a magic link");
			workspace_close(&pw);
		}
	}
}

static void test_special_files(void)
{
	struct sbx_error *err = NULL;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *p;
	int s;

	p = tap_path(tmpdir, "ws/fifo");
	if (mkfifo(p, 0666) < 0)
		bail_out("mkfifo: %s", strerror(errno));
	free(p);
	alarm(20); /* a FIFO opened for reading would block */
	open_refused("fifo", "'fifo' is a FIFO, not a regular file",
		     "a FIFO is refused, without blocking");
	{
		struct workspace_lines l;
		refused(workspace_read_lines(&w, "fifo", "fifo", 1, 10, false,
					     &l, &err),
			&err, 1, "is a FIFO",
			"read of a FIFO is refused");
	}
	alarm(0);

	p = tap_path(tmpdir, "ws/null");
	if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) < 0)
		bail_out("mknod: %s", strerror(errno));
	free(p);
	open_refused("null", "'null' is a device file, not a regular file",
		     "a character device is refused");
	p = tap_path(tmpdir, "ws/blk");
	if (mknod(p, S_IFBLK | 0600, makedev(7, 0)) < 0)
		bail_out("mknod: %s", strerror(errno));
	free(p);
	open_refused("blk", "is a device file", "a block device is refused");

	p = tap_path(tmpdir, "ws/sock");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		bail_out("socket %s: %s", p, strerror(errno));
	free(p);
	open_refused("sock", "'sock' is a socket, not a regular file",
		     "a socket is refused");
	close(s);
}

/* ---- read limits and lines ---- */

static void test_read_limit(void)
{
	struct sbx_error *err = NULL;
	struct workspace_lines l;
	unsigned long long before, cost, got;
	struct stat st;
	char *big = xmalloc(1 << 20), *lines;
	int fd;

	memset(big, 'x', 1 << 20);
	for (size_t i = 99; i < 1 << 20; i += 100)
		big[i] = '\n';
	put_n("ws/big", big, 1 << 20);
	put_n("ws/limit1", big, MAX_READ + 1);
	put_n("ws/limit0", big, MAX_READ);

	refused_exact(workspace_open_read(&w, "limit1", "limit1", &st, &err),
		      &err,
		      "'limit1' is 4097 bytes, over the 4096-byte read limit; "
		      "read a slice of its lines or use exec",
		      "read-bytes of max_read + 1 bytes: refused, the message");
	fd = workspace_open_read(&w, "limit0", "limit0", &st, &err);
	ok(fd >= 0 && st.st_size == MAX_READ,
	   "read-bytes of exactly max_read bytes is allowed");
	if (fd >= 0)
		close(fd);
	sbx_error_free(&err);

	if (!have_rchar) {
		skip("/proc/self/io not readable", "bytes read counted");
		skip("/proc/self/io not readable", "bytes read counted");
		skip("/proc/self/io not readable", "bytes read counted");
		skip("/proc/self/io not readable", "bytes read counted");
	} else {
		cost = rchar_cost();
		before = rchar();
		refused(workspace_open_read(&w, "big", "big", &st, &err), &err,
			1, "over the 4096-byte read limit",
			"read-bytes of 1 MiB refused");
		got = read_since(before, cost);
		ok(got < 512, "not a byte of it read (%llu bytes)", got);
		before = rchar();
		refused_exact(workspace_read_lines(&w, "big", "big", 1, 2000,
						   false, &l, &err),
			      &err,
			      "'big' is 1048576 bytes, over the 4096-byte read "
			      "limit; read a slice of its lines or use exec",
			      "read of 1 MiB without a slice: refused, the "
			      "message");
		got = read_since(before, cost);
		ok(got < 512, "not a byte of it read (%llu bytes)", got);
		before = rchar();
		done_ok(workspace_read_lines(&w, "big", "big", 3, 2, true, &l,
					     &err),
			&err, "a slice of 1 MiB");
		got = read_since(before, cost);
		ok(got <= 2 * 65536 + 512,
		   "a slice of 2 lines reads at most a block or two "
		   "(%llu bytes)",
		   got);
		workspace_lines_release(&l);
		before = rchar();
		done_ok(workspace_read_lines(&w, "limit0", "limit0", 1, 1,
					     false, &l, &err),
			&err, "a file of max_read bytes is read");
		/* + 16: reading /proc/self/io varies by a digit or two. */
		got = read_since(before, cost);
		ok(got <= MAX_READ + 16,
		   "whole, and no more than st_size + 1 bytes (%llu)", got);
		workspace_lines_release(&l);
	}

	done_ok(workspace_read_lines(&w, "big", "big", 3, 2, true, &l, &err),
		&err, "slice lines 3-4 of a file over the limit");
	ok(l.n == 2 && l.first == 3 && l.len == 200 && line_end(&l) == 100 &&
	       l.lines_left == -1 && l.more && !l.cut && l.size == 1 << 20,
	   "two lines shown, lines_left unknown, more follows");
	workspace_lines_release(&l);
	/* The end of a file 256 read limits long: past the default budget
	 * (test_read_budget), so the budget is widened here. */
	w.max_scan = 2 << 20;
	done_ok(
	    workspace_read_lines(&w, "big", "big", 10485, 5, true, &l, &err),
	    &err, "the last lines of the big file");
	ok(l.n == 2 && !l.more && l.lines_left == -1,
	   "the slice at the end: 2 lines (the last without newline), "
	   "nothing more (n %zu, more %d)",
	   l.n, l.more);
	workspace_lines_release(&l);
	refused_exact(
	    workspace_read_lines(&w, "big", "big", 10487, 5, true, &l, &err),
	    &err, "'big' has 10486 lines; line 10487 is past the end",
	    "a slice past the end of a big file: counted exactly");
	w.max_scan = (unsigned long long)MAX_READ * WORKSPACE_SCAN_FACTOR;
	done_ok(workspace_read_lines(&w, "big", "big", 1, 100, true, &l, &err),
		&err, "a slice of 100 lines of 100 bytes");
	ok(l.n == 40 && l.cut && l.more && l.len == 4000,
	   "it stops at the read limit: 40 lines, cut (n %zu, len %zu)", l.n,
	   l.len);
	workspace_lines_release(&l);
	memset(big, 'y', 10000);
	put_n("ws/longline", big, 10000);
	done_ok(workspace_read_lines(&w, "longline", "longline", 1, 5, true, &l,
				     &err),
		&err, "a line longer than the read limit");
	ok(l.n == 1 && l.len == MAX_READ && l.cut && l.more,
	   "shown cut at the limit");
	workspace_lines_release(&l);

	lines = xstrdup("l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n");
	put("ws/ten", lines);
	free(lines);
	done_ok(workspace_read_lines(&w, "ten", "ten", 3, 4, true, &l, &err),
		&err, "lines 3-6 of 10");
	ok(l.n == 4 && l.lines_left == 4 && l.more && !l.cut &&
	       memcmp(l.buf, "l3\nl4\nl5\nl6\n", l.len) == 0,
	   "lines_left is exact (4)");
	workspace_lines_release(&l);
	done_ok(workspace_read_lines(&w, "ten", "ten", 2, 1, true, &l, &err),
		&err, "limit 1");
	ok(l.n == 1 && l.lines_left == 8 && l.len == 3, "one line, 8 left");
	workspace_lines_release(&l);
	refused_exact(
	    workspace_read_lines(&w, "ten", "ten", 11, 1, true, &l, &err), &err,
	    "'ten' has 10 lines; line 11 is past the end",
	    "offset past the end");
	put("ws/one", "x");
	refused_exact(
	    workspace_read_lines(&w, "one", "one", 3, 1, true, &l, &err), &err,
	    "'one' has 1 line; line 3 is past the end",
	    "offset past the end of a one-line file");
	done_ok(workspace_read_lines(&w, "one", "one", 1, 10, false, &l, &err),
		&err, "a file without a trailing newline");
	ok(l.n == 1 && l.len == 1 && line_end(&l) == 1 && l.lines_left == 0 &&
	       !l.more,
	   "has a last line all the same");
	workspace_lines_release(&l);
	put("ws/empty", "");
	done_ok(
	    workspace_read_lines(&w, "empty", "empty", 1, 10, false, &l, &err),
	    &err, "an empty file, offset 1");
	ok(l.n == 0 && l.lines_left == 0 && !l.more && l.size == 0,
	   "no lines, none left");
	workspace_lines_release(&l);
	refused_exact(
	    workspace_read_lines(&w, "empty", "empty", 2, 10, false, &l, &err),
	    &err, "'empty' has 0 lines; line 2 is past the end",
	    "an empty file, offset 2");
	put("ws/crlf", "a\r\nb\r\n\r\n");
	done_ok(
	    workspace_read_lines(&w, "crlf", "crlf", 1, 10, false, &l, &err),
	    &err, "CRLF lines");
	ok(l.n == 3 && l.len == 5 && memcmp(l.buf, "a\nb\n\n", 5) == 0 &&
	       lines_counted(&l) == 3,
	   "CRLF ends a line as LF does (shown as LF): 3 lines");
	workspace_lines_release(&l);
	put("ws/cr", "a\rb\r\rc");
	done_ok(workspace_read_lines(&w, "cr", "cr", 2, 2, false, &l, &err),
		&err, "CR lines");
	ok(l.n == 2 && l.len == 3 && memcmp(l.buf, "b\n\n", 3) == 0 &&
	       l.lines_left == 1,
	   "a lone CR ends a line too: lines 2-3 of 4, 1 left");
	workspace_lines_release(&l);
	free(big);
}

/* The reference: the lines of data as a list, sliced by hand. */
static void check_slice_of(const char *data, size_t len, size_t fsize,
			   unsigned long long off, unsigned long long lim,
			   int round)
{
	struct sbx_error *err = NULL;
	struct workspace_lines l;
	size_t starts[512], total = 0, pos = 0;
	int rc;

	while (pos < len) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		starts[total++] = pos;
		pos = nl ? (size_t)(nl - data) + 1 : len;
	}
	starts[total] = len;
	rc = workspace_read_lines(&w, "fuzz", "fuzz", off, lim, true, &l, &err);
	if (off > total && !(off == 1 && total == 0)) {
		char want[128];
		snprintf(want, sizeof(want),
			 "'fuzz' has %zu line%s; line %llu is past the end",
			 total, total == 1 ? "" : "s", off);
		if (!(rc < 0 && err && strcmp(err->msg, want) == 0)) {
			ok(false, "fuzz round %d: past the end: %s", round,
			   err ? err->msg : "accepted");
			sbx_error_free(&err);
			return;
		}
		sbx_error_free(&err);
		return;
	}
	if (rc < 0) {
		ok(false, "fuzz round %d: %s", round, err->msg);
		sbx_error_free(&err);
		return;
	}
	{
		size_t first = (size_t)off - 1, n = 0, bytes = 0;
		bool cut = false, more;
		long long left;

		while (n < lim && first + n < total) {
			size_t ll = starts[first + n + 1] - starts[first + n];
			if (bytes + ll > MAX_READ) {
				cut = true;
				if (n == 0) {
					bytes = MAX_READ;
					n = 1;
				}
				break;
			}
			bytes += ll;
			n++;
		}
		more = cut || starts[first] + bytes < len;
		left = fsize > MAX_READ ? -1 : (long long)(total - first - n);
		if (l.n != n || l.len != bytes || l.cut != cut ||
		    l.more != more || l.lines_left != left ||
		    (bytes && memcmp(l.buf, data + starts[first], bytes)) ||
		    lines_counted(&l) != n ||
		    (n && line_end_at(&l, n - 1) != bytes)) {
			ok(false,
			   "fuzz round %d (size %zu, offset %llu, limit %llu):"
			   " n %zu/%zu len %zu/%zu cut %d/%d more %d/%d left "
			   "%lld/%lld",
			   round, len, off, lim, l.n, n, l.len, bytes, l.cut,
			   cut, l.more, more, l.lines_left, left);
		}
		for (size_t i = 0; i + 1 < n; i++)
			if (line_end_at(&l, i) !=
			    starts[first + i + 1] - starts[first]) {
				ok(false,
				   "fuzz round %d: line %zu ends at "
				   "%zu",
				   round, i, line_end_at(&l, i));
				break;
			}
	}
	workspace_lines_release(&l);
}

/* A file read whole ends its lines at CR, CRLF and LF alike (shown as
 * LF); one over the limit, read in a slice, at LF alone: the reference
 * reads data so before slicing it. */
static void check_slice(const char *data, size_t len, unsigned long long off,
			unsigned long long lim, int round)
{
	char *norm;
	size_t o = 0;

	if (len > MAX_READ) {
		check_slice_of(data, len, len, off, lim, round);
		return;
	}
	norm = xmalloc(len + 1);
	for (size_t i = 0; i < len; i++) {
		norm[o++] = data[i] == '\r' ? '\n' : data[i];
		if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n')
			i++;
	}
	check_slice_of(norm, o, len, off, lim, round);
	free(norm);
}

/*
 * read --offset within its budgets (issue 16 item 5): lines before the
 * offset are skipped within max_scan bytes read and budget_ms, holes not
 * read at all; an offset deeper than that is refused, saying where.
 */
static void test_read_budget(void)
{
	struct sbx_error *err = NULL;
	struct workspace_lines l;
	unsigned long long before, cost, got;
	const unsigned long long tib = 1ULL << 40;
	char *sparse = tap_path(tmpdir, "ws/sparse");
	char *islands = tap_path(tmpdir, "ws/islands");
	int fd;

	ok(w.max_scan == (unsigned long long)MAX_READ * WORKSPACE_SCAN_FACTOR &&
	       w.budget_ms == WORKSPACE_BUDGET_MS_DEFAULT,
	   "the budgets: %d read limits, %d ms", WORKSPACE_SCAN_FACTOR,
	   WORKSPACE_BUDGET_MS_DEFAULT);
	/* "big": 1 MiB of 100-byte lines, 256 read limits, 4 budgets. */
	refused_exact(
	    workspace_read_lines(&w, "big", "big", 10485, 5, true, &l, &err),
	    &err,
	    "'big' line 10485 is deeper than a read reaches: after its "
	    "budget of 262144 bytes read (64 times the read limit) it was on "
	    "line 2622, at byte 262144; read that part with exec (sed -n)",
	    "an offset past the bytes budget of a dense file: refused, where");
	done_ok(workspace_read_lines(&w, "big", "big", 2600, 1, true, &l, &err),
		&err, "an offset within the budget is read");
	ok(l.n == 1 && l.len == 100, "... its line (n %zu, len %zu)", l.n,
	   l.len);
	workspace_lines_release(&l);
	w.budget_ms = 0;
	refused(workspace_read_lines(&w, "big", "big", 3, 1, true, &l, &err),
		&err, 1,
		"line 3 is deeper than a read reaches: after its 0 s "
		"budget it was on line 1, at byte 0",
		"an offset past the time budget: refused, where");
	w.budget_ms = WORKSPACE_BUDGET_MS_DEFAULT;

	/* A file of 1 TiB, all hole but its last 4 bytes ("a\nb\n"). */
	fd = open(sparse, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)tib) < 0 ||
	    pwrite(fd, "a\nb\n", 4, (off_t)tib - 4) != 4) {
		skip("no sparse file of 1 TiB here", "holes skipped");
		skip("no sparse file of 1 TiB here", "holes skipped");
		skip("no sparse file of 1 TiB here", "holes skipped");
		skip("no sparse file of 1 TiB here", "holes skipped");
		skip("no sparse file of 1 TiB here", "holes skipped");
		if (fd >= 0)
			close(fd);
	} else {
		close(fd);
		cost = rchar_cost();
		before = rchar();
		done_ok(workspace_read_lines(&w, "sparse", "sparse", 2, 1, true,
					     &l, &err),
			&err, "line 2 of a 1 TiB sparse file");
		got = read_since(before, cost);
		ok(l.n == 1 && l.len == 2 && memcmp(l.buf, "b\n", 2) == 0 &&
		       !l.more,
		   "... is 'b', and nothing follows");
		ok(!have_rchar || got <= 65536 + 16,
		   "... having read at most a block, not the hole (%llu bytes)",
		   got);
		workspace_lines_release(&l);
		refused_exact(workspace_read_lines(&w, "sparse", "sparse", 3, 1,
						   true, &l, &err),
			      &err,
			      "'sparse' has 2 lines; line 3 is past the end",
			      "past its end: counted exactly");
		/* A hole at the end, after the last newline: a last line. */
		if (truncate(sparse, (off_t)(2 * tib)) == 0)
			refused_exact(
			    workspace_read_lines(&w, "sparse", "sparse", 4, 1,
						 true, &l, &err),
			    &err,
			    "'sparse' has 3 lines; line 4 is "
			    "past the end",
			    "a hole after the last newline is a line");
		else
			skip("no 2 TiB sparse file", "a trailing hole");
	}
	unlink(sparse);
	free(sparse);
	/* 32 newlines 1 MiB apart: only the data is read, not the holes
	 * after each (4 KiB blocks; 32 of them are half the budget). */
	fd = open(islands, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	for (int i = 0; fd >= 0 && i < 32; i++)
		if (pwrite(fd, "\n", 1, (off_t)i << 20) != 1)
			break;
	if (fd >= 0 && ftruncate(fd, 32 << 20) == 0) {
		close(fd);
		cost = rchar_cost();
		before = rchar();
		done_ok(workspace_read_lines(&w, "islands", "islands", 32, 1,
					     true, &l, &err),
			&err,
			"line 32 of islands of data in holes, within budget");
		got = read_since(before, cost);
		/* line 32: the zeros from 30 MiB + 1 to its newline at 31 MiB,
		 * shown cut at the read limit */
		ok(l.n == 1 && l.len == MAX_READ && l.cut &&
		       (!have_rchar || got < 256 << 10),
		   "... its line, cut at the limit, %llu bytes read", got);
		workspace_lines_release(&l);
	} else {
		if (fd >= 0)
			close(fd);
		skip("no sparse file", "islands");
		skip("no sparse file", "islands");
	}
	unlink(islands);
	free(islands);
}

static void test_lines_fuzz(void)
{
	int rounds = quick ? 150 : 1500;
	char *data = xmalloc(12000);

	for (int r = 0; r < rounds; r++) {
		size_t len = 0, want = tap_rand() % 3 ? tap_rand() % 600
						      : tap_rand() % 12000;
		int nlines = 0;

		while (len < want && nlines < 500) {
			size_t ll = tap_rand() % 8 ? tap_rand() % 40
						   : tap_rand() % 5000;
			for (size_t i = 0; i < ll && len < want; i++)
				data[len++] = tap_rand() % 7 ? 'a' : '\r';
			if (len < want) {
				data[len++] = '\n';
				nlines++;
			}
		}
		if (nlines >= 500)
			continue;
		put_n("ws/fuzz", data, len);
		for (int k = 0; k < 4; k++)
			check_slice(data, len, 1 + tap_rand() % (nlines + 3),
				    tap_rand() % 4 ? 1 + tap_rand() % 20
						   : 1 + tap_rand() % 600,
				    r);
	}
	ok(true, "read_lines fuzzer: %d files against a reference", rounds);
	free(data);
}

/* ---- write ---- */

static bool no_temp_in(const char *dir)
{
	char *cmd = xasprintf("find %s -name '.sbxcat-*' | grep -q .", dir);
	int rc = system(cmd);

	free(cmd);
	return rc != 0;
}

static void test_write(void)
{
	struct sbx_error *err = NULL;
	unsigned long long bytes;
	bool created;
	struct stat st, before;
	char *s, *big, *ws = tap_path(tmpdir, "ws"), *victim;
	mode_t old_umask = umask(077);

	done_ok(ws_write("new.txt", "hello\n", 6, &bytes, &created, &err), &err,
		"write a new file");
	ok(bytes == 6 && created, "6 bytes, created");
	has("ws/new.txt", "hello\n", "the content");
	ok(lst("ws/new.txt", &st) == 0 && st.st_uid == SANDBOX_UID &&
	       st.st_gid == SANDBOX_UID && (st.st_mode & 07777) == 0644,
	   "owned by the sandbox uid:uid, mode 0644 (umask 077 ignored)");

	s = tap_path(tmpdir, "ws/new.txt");
	chmod(s, 0750);
	free(s);
	done_ok(ws_write("new.txt", "again", 5, &bytes, &created, &err), &err,
		"replace a file");
	ok(bytes == 5 && !created, "5 bytes, not created");
	ok(lst("ws/new.txt", &st) == 0 && (st.st_mode & 07777) == 0750 &&
	       st.st_uid == SANDBOX_UID,
	   "its mode kept (0750)");

	done_ok(ws_write("a/b/c/d.txt", "deep", 4, &bytes, &created, &err),
		&err, "write makes the parent directories");
	ok(lst("ws/a", &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == SANDBOX_UID && st.st_gid == SANDBOX_UID &&
	       (st.st_mode & 07777) == 0755 && lst("ws/a/b/c", &st) == 0 &&
	       st.st_uid == SANDBOX_UID && (st.st_mode & 07777) == 0755,
	   "made uid:uid, 0755");
	done_ok(ws_write("sub/ok", "through", 7, &bytes, &created, &err), &err,
		"write at a symlink that stays inside");
	ok(lst("ws/sub/ok", &st) == 0 && S_ISREG(st.st_mode),
	   "the symlink is replaced by a file");
	has("ws/file.txt", "inside\n", "its target is not written through");

	victim = tap_path(tmpdir, "out/victim");
	lnk(victim, "ws/lout");
	lst("out/victim", &before);
	done_ok(ws_write("lout", "pwned", 5, &bytes, &created, &err), &err,
		"write at a symlink to a file outside");
	ok(lst("ws/lout", &st) == 0 && S_ISREG(st.st_mode),
	   "the symlink is replaced, not followed");
	has("out/victim", "victim\n", "the outside file is untouched");

	if (link(victim, s = tap_path(tmpdir, "ws/hard")) < 0)
		bail_out("link: %s", strerror(errno));
	free(s);
	done_ok(ws_write("hard", "pwned", 5, &bytes, &created, &err), &err,
		"write at a hard link to a file outside");
	has("out/victim", "victim\n",
	    "the hard link is replaced, not written through");
	ok(lst("out/victim", &st) == 0 && st.st_nlink == 1 &&
	       st.st_mtim.tv_nsec == before.st_mtim.tv_nsec &&
	       st.st_mtime == before.st_mtime,
	   "its mtime and link count as before");
	free(victim);

	big = xmalloc(MAX_WRITE + 1);
	memset(big, 'z', MAX_WRITE + 1);
	lst("ws/new.txt", &before);
	refused(ws_write("new.txt", big, MAX_WRITE + 1, &bytes, &created, &err),
		&err, 1,
		"'new.txt' would be over the 4096-byte write limit; nothing "
		"was written",
		"over max_write: refused");
	has("ws/new.txt", "again", "nothing changed");
	ok(lst("ws/new.txt", &st) == 0 && st.st_ino == before.st_ino,
	   "the very same file");
	refused(
	    ws_write("brand-new", big, MAX_WRITE + 1, &bytes, &created, &err),
	    &err, 1, "write limit", "over max_write: new file");
	ok(!lexists("ws/brand-new"), "not made");
	done_ok(ws_write("exact", big, MAX_WRITE, &bytes, &created, &err), &err,
		"exactly max_write bytes are written");
	free(big);

	refused(ws_write("sub", "x", 1, &bytes, &created, &err), &err,
		1, "'sub' is a directory",
		"write over a directory");
	refused(ws_write("file.txt/x", "x", 1, &bytes, &created, &err), &err,
		1, "not a directory", "write under a file");
	refused(ws_write("to_etc/sbxcat-test", "x", 1, &bytes, &created, &err),
		&err, 1, "leads outside",
		"write under a symlink to /etc");
	if (!ok(access("/etc/sbxcat-test", F_OK) < 0, "nothing made in /etc"))
		unlink("/etc/sbxcat-test"); /* a broken build made it */
	refused(ws_write("to_out/new/x", "x", 1, &bytes, &created, &err), &err,
		1, "leads outside",
		"write making directories under a symlink out");
	ok(!lexists("out/new"), "nothing made outside");
	lnk("nowhere/x", "ws/dangling");
	refused(ws_write("dangling/f", "x", 1, &bytes, &created, &err), &err,
		1, "cannot have its directories made",
		"write under a dangling symlink");
	refused(ws_write("", "x", 1, &bytes, &created, &err), &err,
		1, "is the workspace itself",
		"write of the workspace itself");
	refused(ws_write("../x", "x", 1, &bytes, &created, &err), &err,
		1, "'..' is not allowed", "write of ../x");
	ok(no_temp_in(ws), "no temporary file left behind");
	umask(old_umask);
	free(ws);
}

/* ---- edit ---- */

static int edit(const char *rel, const char *old, const char *new, bool all,
		size_t *count, unsigned long long *line, struct sbx_error **err)
{
	return workspace_edit(&w, rel, rel, old, strlen(old), new, strlen(new),
			      all, count, line, err);
}

static void test_edit(void)
{
	struct sbx_error *err = NULL;
	unsigned long long line;
	size_t count;
	struct stat st;
	char *s;

	put("ws/e.txt", "hello world\n");
	s = tap_path(tmpdir, "ws/e.txt");
	chmod(s, 0640);
	free(s);
	done_ok(edit("e.txt", "world", "there", false, &count, &line, &err),
		&err, "edit a unique occurrence");
	ok(count == 1 && line == 1, "1 replaced, on line 1");
	has("ws/e.txt", "hello there\n", "the content");
	ok(lst("ws/e.txt", &st) == 0 && (st.st_mode & 07777) == 0640 &&
	       st.st_uid == SANDBOX_UID && st.st_gid == SANDBOX_UID,
	   "mode kept, owned by the sandbox uid");
	refused_exact(edit("e.txt", "absent", "x", false, &count, &line, &err),
		      &err, "old text not found in 'e.txt'", "absent: refused");

	put("ws/m.txt", "1\n2\n3\nfoo\n5\n6\n7\n8\nfoo\n10\n11\nfoo\n");
	refused_exact(edit("m.txt", "foo", "bar", false, &count, &line, &err),
		      &err,
		      "old text matches 3 times in 'm.txt', on lines 4, 9 "
		      "and 12; give more context to make it unique, or "
		      "replace every occurrence",
		      "3 matches: refused, with their lines");
	has("ws/m.txt", "1\n2\n3\nfoo\n5\n6\n7\n8\nfoo\n10\n11\nfoo\n",
	    "nothing changed");
	done_ok(edit("m.txt", "foo", "bar", true, &count, &line, &err), &err,
		"--all");
	ok(count == 3 && line == 4, "3 replaced, the first on line 4");
	has("ws/m.txt", "1\n2\n3\nbar\n5\n6\n7\n8\nbar\n10\n11\nbar\n",
	    "all of them");

	put("ws/a.txt", "aaa");
	done_ok(edit("a.txt", "aa", "b", false, &count, &line, &err), &err,
		"'aa' in 'aaa' occurs once (no overlap)");
	has("ws/a.txt", "ba", "leftmost first");
	put("ws/a.txt", "aaaa");
	refused_exact(edit("a.txt", "aa", "b", false, &count, &line, &err),
		      &err,
		      "old text matches 2 times in 'a.txt', on line 1; "
		      "give more context to make it unique, or replace every "
		      "occurrence",
		      "'aa' in 'aaaa': twice, on one line");
	done_ok(edit("a.txt", "aa", "", true, &count, &line, &err), &err,
		"an empty --new, --all");
	s = slurp("ws/a.txt", NULL);
	ok(count == 2 && s && !*s, "both removed");
	free(s);
	{
		struct strbuf sb = STRBUF_INIT;
		for (int i = 1; i <= 12; i++)
			strbuf_addf(&sb, "x%d\n", i);
		put("ws/many", strbuf_str(&sb));
		strbuf_release(&sb);
	}
	refused_exact(edit("many", "x", "y", false, &count, &line, &err), &err,
		      "old text matches 12 times in 'many', on lines 1, 2, "
		      "3, 4, 5, 6, 7, 8, 9, 10, ...; give more context to make "
		      "it unique, or replace every occurrence",
		      "12 matches: 10 lines named, then ...");
	refused(edit("sub", "through", "x", false, &count, &line, &err), &err,
		1, "directory", "edit of a directory refused");
	lnk("file.txt", "ws/elink");
	refused(edit("elink", "inside", "x", false, &count, &line, &err), &err,
		1, "'elink' is a symbolic link, not a regular file",
		"edit of a symlink refused");
	refused(
	    edit("to_out/secret", "SENTINEL", "x", false, &count, &line, &err),
	    &err, 1, "leads outside", "edit under a symlink out");
	refused(edit("big", "x", "y", true, &count, &line, &err), &err,
		1,
		"'big' is 1048576 bytes, over the 4096-byte read limit",
		"edit of a file over max_read");
	{
		char *data = xmalloc(3000);
		memset(data, 'q', 3000);
		put_n("ws/grow", data, 3000);
		refused(edit("grow", "qq", "qqqq", true, &count, &line, &err),
			&err, 1, "over the 4096-byte write limit",
			"edit whose result is over max_write");
		s = slurp("ws/grow", NULL);
		ok(s && strlen(s) == 3000, "nothing changed");
		free(s);
		free(data);
	}
	refused(workspace_edit(&w, "e.txt", "e.txt", "", 0, "x", 1, false,
			       &count, &line, &err),
		&err, 2, "empty", "an empty --old: usage");
}

/* ---- stat ---- */

static void test_stat(void)
{
	struct sbx_error *err = NULL;
	struct stat st;
	char *target;

	done_ok(workspace_stat(&w, "file.txt", "file.txt", &st, &target, &err),
		&err, "stat of a file");
	ok(S_ISREG(st.st_mode) && st.st_size == 7 && !target,
	   "regular, 7 bytes, no target");
	done_ok(workspace_stat(&w, "sub", "sub", &st, &target, &err), &err,
		"stat of a directory");
	ok(S_ISDIR(st.st_mode), "a directory");
	done_ok(workspace_stat(&w, "sub/c3", "sub/c3", &st, &target, &err),
		&err, "stat of a symlink out");
	ok(S_ISLNK(st.st_mode), "the symlink itself (not followed)");
	is_str(target, "../../out/secret", "its target");
	free(target);
	done_ok(workspace_stat(&w, "", "", &st, &target, &err), &err,
		"stat of the workspace itself");
	ok(S_ISDIR(st.st_mode) && st.st_ino != 0 && !target, "a directory");
	done_ok(workspace_stat(&w, "sub/deeper/ok2/", "sub/deeper/ok2/", &st,
			       &target, &err),
		&err, "stat of a symlink to a symlink inside");
	is_str(target, "../ok", "its own target");
	free(target);
	refused(workspace_stat(&w, "to_etc/passwd", "to_etc/passwd", &st,
			       &target, &err),
		&err, 1, "leads outside",
		"stat under a symlink out");
	refused(workspace_stat(&w, "missing", "missing", &st, &target, &err),
		&err, 1, "'missing' does not exist",
		"stat of a missing path");
}

/* ---- rm ---- */

static void test_rm(void)
{
	struct sbx_error *err = NULL;
	unsigned long long removed;
	struct stat st;
	char *s;

	put("ws/gone.txt", "x");
	done_ok(workspace_rm(&w, "gone.txt", "gone.txt", false, &removed, &err),
		&err, "rm a file");
	ok(removed == 1 && !lexists("ws/gone.txt"), "removed, 1");
	mkd("ws/emptyd");
	done_ok(workspace_rm(&w, "emptyd", "emptyd", false, &removed, &err),
		&err, "rm an empty directory");
	ok(removed == 1 && !lexists("ws/emptyd"), "removed");
	mkd("ws/full");
	put("ws/full/f", "x");
	refused_exact(workspace_rm(&w, "full", "full", false, &removed, &err),
		      &err,
		      "'full' is a directory that is not empty; only a "
		      "recursive remove removes it",
		      "a non-empty directory without -r");
	ok(lexists("ws/full/f"), "left as it was");

	mkd("ws/tree");
	mkd("ws/tree/a");
	mkd("ws/tree/a/b");
	put("ws/tree/a/b/f1", "1");
	put("ws/tree/a/f2", "2");
	s = tap_path(tmpdir, "out");
	lnk(s, "ws/tree/a/b/to_out");
	free(s);
	s = tap_path(tmpdir, "out/secret");
	lnk(s, "ws/tree/secret_link");
	free(s);
	lnk("../../../../out", "ws/tree/a/b/rel_out");
	done_ok(workspace_rm(&w, "tree", "tree", true, &removed, &err), &err,
		"rm -r a tree with symlinks out inside");
	is_int((long long)removed, 8,
	       "8 entries removed (the top, 2 dirs, 2 files, 3 links)");
	ok(!lexists("ws/tree"), "the tree is gone");
	s = slurp("out/secret", NULL);
	ok(s && strcmp(s, SENTINEL "\n") == 0 && lexists("out/victim"),
	   "what the symlinks pointed at is still there");
	free(s);

	s = tap_path(tmpdir, "out");
	lnk(s, "ws/dirlink");
	free(s);
	done_ok(workspace_rm(&w, "dirlink", "dirlink", true, &removed, &err),
		&err, "rm -r of a symlink to a directory outside");
	ok(!lexists("ws/dirlink") && lexists("out/secret") && removed == 1,
	   "the link goes, not what it points at");
	refused(workspace_rm(&w, "to_out/victim", "to_out/victim", false,
			     &removed, &err),
		&err, 1, "leads outside", "rm under a symlink out");
	ok(lexists("out/victim"), "the outside file stays");
	refused(workspace_rm(&w, "", "", true, &removed, &err), &err,
		1, "is the workspace itself", "rm of the root");
	refused(workspace_rm(&w, "./", "./", true, &removed, &err), &err,
		1, "is the workspace itself", "rm of ./");
	refused(workspace_rm(&w, "nothing", "nothing", false, &removed, &err),
		&err, 1, "'nothing' does not exist",
		"rm of a missing path");
	ok(fstat(w.fd, &st) == 0 && st.st_nlink > 0, "the root is still there");
}

/* ---- the cancel flag ---- */

/* An error of kind cancelled whose message is want. */
static void cancelled(int rc, struct sbx_error **err, const char *want,
		      const char *name)
{
	bool r = rc < 0 && *err && (*err)->kind == SBX_E_CANCELLED &&
		 strcmp((*err)->msg, want) == 0;

	if (!ok(r, "%s", name))
		diag("rc %d, kind %d, message: %s\n  wanted: %s", rc,
		     *err ? (int)(*err)->kind : -1,
		     *err ? (*err)->msg : "(none)", want);
	sbx_error_free(err);
}

static void test_cancel(void)
{
	struct sbx_error *err = NULL;
	struct workspace_lines l;
	unsigned long long bytes, removed;
	bool created;

	mkd("ws/ctree");
	mkd("ws/ctree/a");
	put("ws/ctree/a/f", "x");
	atomic_store(&cancel, SIGTERM);
	cancelled(ws_write("c.txt", "data", 4, &bytes, &created, &err), &err,
		  "'c.txt' was being written when signal 15 came; nothing "
		  "was changed",
		  "write with the cancel flag up: cancelled");
	ok(!lexists("ws/c.txt"), "... nothing written");
	cancelled(workspace_read_lines(&w, "big", "big", 2, 1, true, &l, &err),
		  &err, "'big' was being read when signal 15 came",
		  "a slice of a big file: cancelled");
	workspace_lines_release(&l);
	cancelled(workspace_rm(&w, "ctree", "ctree", true, &removed, &err),
		  &err, "interrupted by signal 15 while removing 'ctree'",
		  "rm -r: cancelled, the signal named");
	ok(lexists("ws/ctree"), "... the tree's top still there");
	atomic_store(&cancel, 0);
	done_ok(workspace_rm(&w, "ctree", "ctree", true, &removed, &err), &err,
		"the flag down: rm -r removes it");
}

/* ---- mounts, in a mount namespace of a child's own ---- */

static void report(int fd, bool r, const char *name)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "%c%s\n", r ? '+' : '-', name);

	if (write(fd, line, (size_t)n) != n)
		_exit(9);
}

static bool child_refused(int rc, struct sbx_error **err, const char *want)
{
	bool r = rc < 0 && *err && strstr((*err)->msg, want);

	sbx_error_free(err);
	return r;
}

static void mount_checks(int fd)
{
	struct sbx_error *err = NULL;
	unsigned long long removed, bytes;
	struct workspace_lines l;
	struct stat st;
	char *target = NULL, *s;
	bool created;
	int mfd;

	mkd("ws/bind");
	mkd("ws/tmpfs");
	mkd("ws/holder");
	mkd("ws/holder/inner");
	put("ws/holder/before", "x");
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		dprintf(fd, "!unshare(CLONE_NEWNS): %s\n", strerror(errno));
		_exit(0);
	}
	s = tap_path(tmpdir, "out");
	if (mount(s, tap_path(tmpdir, "ws/bind"), NULL, MS_BIND, NULL) < 0 ||
	    mount("tmpfs", tap_path(tmpdir, "ws/tmpfs"), "tmpfs", 0, "size=1m") < 0 ||
	    mount("tmpfs", tap_path(tmpdir, "ws/holder/inner"), "tmpfs", 0, "size=1m") < 0) {
		dprintf(fd, "!mount: %s\n", strerror(errno));
		_exit(0);
	}
	put("ws/tmpfs/f", "on tmpfs\n");
	put("ws/holder/inner/keep", "keep\n");
	/* The held descriptor is of the mount it was opened in: open the
	 * workspace again in this namespace, where the mounts are. */
	{
		char *ws = tap_path(tmpdir, "ws");
		int wfd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		workspace_close(&w);
		if (workspace_init(&w, wfd, ws, SANDBOX_UID, MAX_READ,
				   MAX_WRITE, NULL, &err) < 0) {
			dprintf(fd, "-workspace_init: %s\n", err->msg);
			_exit(1);
		}
		free(ws);
	}

	mfd = workspace_open_file(&w, "bind/secret", "bind/secret", &st, &err);
	report(fd, child_refused(mfd, &err, "'bind/secret' leads outside"),
	       "a bind mount inside (same file system): read refused");
	report(fd,
	       child_refused(workspace_read_lines(&w, "tmpfs/f", "tmpfs/f", 1,
						  10, false, &l, &err),
			     &err, "leads outside"),
	       "a tmpfs mounted inside: read refused");
	report(fd,
	       child_refused(
		   workspace_stat(&w, "bind", "bind", &st, &target, &err), &err,
		   "leads outside"),
	       "stat of a mount point refused");
	mfd = mem_fd("x", 1);
	report(fd,
	       child_refused(workspace_write(&w, "bind/new", "bind/new", mfd,
					     &bytes, &created, &err),
			     &err, "leads outside") &&
		   !lexists("out/new"),
	       "write into a bind mount refused, nothing made");
	close(mfd);
	report(fd,
	       child_refused(
		   workspace_rm(&w, "bind", "bind", true, &removed, &err), &err,
		   "'bind' is a mount point") &&
		   lexists("out/secret"),
	       "rm -r of a bind mount refused, the outside intact");
	report(fd,
	       child_refused(
		   workspace_rm(&w, "tmpfs", "tmpfs", true, &removed, &err),
		   &err, "'tmpfs' is a mount point") &&
		   lexists("ws/tmpfs/f"),
	       "rm -r of a tmpfs mount point refused");
	report(fd,
	       child_refused(
		   workspace_rm(&w, "holder", "holder", true, &removed, &err),
		   &err, "'holder' has a mount point inside") &&
		   lexists("ws/holder/inner/keep"),
	       "rm -r of a tree holding a mount refused, the mount's files "
	       "kept");
	report(fd,
	       child_refused(workspace_edit(&w, "bind/victim", "bind/victim",
					    "victim", 6, "x", 1, true,
					    &(size_t){0},
					    &(unsigned long long){0}, &err),
			     &err, "leads outside"),
	       "edit inside a bind mount refused");
}

/*
 * Run fn(fd) in a child, fd the write end of a pipe; what it wrote (at
 * most 4 KiB) in buf, *status its wait status.
 */
static void in_child(void (*fn)(int fd), char buf[4096], int *status)
{
	size_t len = 0;
	ssize_t n;
	pid_t pid;
	int p[2];

	if (pipe(p) < 0)
		bail_out("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		bail_out("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		fn(p[1]);
		_exit(0);
	}
	close(p[1]);
	while (len < 4095 && (n = read(p[0], buf + len, 4095 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(p[0]);
	waitpid(pid, status, 0);
}

static void test_mounts(void)
{
	char buf[4096], *holder;
	int status;

	in_child(mount_checks, buf, &status);
	if (buf[0] == '!') {
		skip(buf + 1, "mount cases: cannot mount here (SKIPPED: %s)",
		     buf + 1);
		diag("SKIPPED the mount cases: %s", buf + 1);
		return;
	}
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && buf[0],
	   "the mount child ran");
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		ok(line[0] == '+', "%s", line + 1);
	/* The namespace went with the child. */
	holder = tap_path(tmpdir, "ws/holder");
	rm_rf(holder);
	free(holder);
}

/* ---- no openat2: a seccomp filter makes it ENOSYS ---- */

static void init_without_openat2(int fd)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		     offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(*f), f};
	struct sbx_error *err = NULL;
	struct workspace w2;
	char *ws = tap_path(tmpdir, "ws");
	int wfd = open(ws, O_RDONLY | O_DIRECTORY);

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		dprintf(fd, "!seccomp: %s", strerror(errno));
		return;
	}
	if (workspace_init(&w2, wfd, ws, 0, 1, 1, NULL, &err) == 0)
		dprintf(fd, "accepted");
	else
		dprintf(fd, "%d %s", tap_status(err), err->msg);
	workspace_close(&w2);
}

static void test_no_openat2(void)
{
	char buf[4096];
	int status;

	in_child(init_without_openat2, buf, &status);
	if (buf[0] == '!') {
		skip(buf + 1, "no openat2 (SKIPPED)");
		return;
	}
	is_str(
	    buf,
	    "3 sbxcat fs needs openat2 (Linux 5.6 or later); this kernel has "
	    "none, and sbxcat does not fall back to resolving paths itself",
	    "a kernel without openat2: status 3, no fallback");
}

/* ---- the race ---- */

enum { V_FILE, V_DIR, V_LINK_DIR, V_LINK_FILE, V_REL_OUT, V_LINK_ROOTISH, NV };

/* A fresh entry of kind v at ws/stage (whatever was there removed). */
static void make_variant(int v, const char *out)
{
	char *stage = tap_path(tmpdir, "ws/stage"), *p;

	rm_rf(stage);
	switch (v) {
	case V_FILE:
		put("ws/stage", "INSIDE-FILE\n");
		break;
	case V_DIR:
		mkdir(stage, 0755);
		put("ws/stage/secret", "INSIDE-DIR\n");
		break;
	case V_LINK_DIR:
		symlink(out, stage);
		break;
	case V_LINK_FILE:
		p = xasprintf("%s/secret", out);
		symlink(p, stage);
		free(p);
		break;
	case V_REL_OUT:
		symlink("../out", stage);
		break;
	default: /* "/": what a broken build would write is checked */
		symlink("../../../../../../../..", stage);
		break;
	}
	free(stage);
}

static void swapper(int iterations)
{
	char *race = tap_path(tmpdir, "ws/race"), *stage = tap_path(tmpdir, "ws/stage"), *out = tap_path(tmpdir, "out");

	for (int i = 0; iterations == 0 || i < iterations; i++) {
		make_variant(i % NV, out);
		if (renameat2(AT_FDCWD, stage, AT_FDCWD, race,
			      RENAME_EXCHANGE) < 0)
			rename(stage, race);
	}
	_exit(0);
}

struct outside {
	struct stat secret, victim, dir;
	char *secret_data, *victim_data;
};

static void outside_snapshot(struct outside *o)
{
	lst("out/secret", &o->secret);
	lst("out/victim", &o->victim);
	lst("out", &o->dir);
	o->secret_data = slurp("out/secret", NULL);
	o->victim_data = slurp("out/victim", NULL);
}

static bool same_time(const struct stat *a, const struct stat *b)
{
	return a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ino == b->st_ino;
}

static void test_race(void)
{
	static const char *paths[] = {"race", "race/secret"};
	struct outside before, after;
	struct sbx_error *err = NULL;
	int n = quick ? 300 : 5000, leaks = 0, reads = 0, writes = 0,
	    refusals = 0, edits = 0, rms = 0, status;
	pid_t pid;

	if (access("/secret", F_OK) == 0)
		bail_out("/secret exists: the race could not tell whether it "
			 "made it");
	outside_snapshot(&before);
	make_variant(V_FILE, NULL);
	{
		char *from = tap_path(tmpdir, "ws/stage"), *to = tap_path(tmpdir, "ws/race");
		rename(from, to);
		free(from);
		free(to);
	}
	pid = fork();
	if (pid == 0)
		swapper(0);
	for (int i = 0; i < n; i++) {
		const char *p = paths[i % 2];
		struct workspace_lines l;
		unsigned long long u;
		struct stat st;
		char *target;
		size_t count;
		bool created;
		int fd, rc;

		rc = workspace_read_lines(&w, p, p, 1, 10, false, &l, &err);
		if (rc == 0) {
			reads++;
			if (l.buf && memmem(l.buf, l.len, "SENTINEL", 8))
				leaks++;
			workspace_lines_release(&l);
		}
		refusals += rc < 0;
		sbx_error_free(&err);

		fd = workspace_open_read(&w, p, p, &st, &err);
		if (fd >= 0) {
			char buf[256];
			ssize_t got = read(fd, buf, sizeof(buf));
			if (got > 0 && memmem(buf, (size_t)got, "SENTINEL", 8))
				leaks++;
			reads++;
			close(fd);
		}
		sbx_error_free(&err);

		rc = edit(p, "SENTINEL", "PWNED", true, &count, &u, &err);
		if (rc == 0)
			leaks++;
		sbx_error_free(&err);
		/* What succeeds fsyncs twice (the file, its directory): one
		 * write or edit in two keeps the test under 20 s on a disk. */
		if (i % 4 < 2) {
			fd = mem_fd("WRITTEN\n", 8);
			rc = workspace_write(&w, p, p, fd, &u, &created, &err);
			writes += rc == 0;
			close(fd);
		} else {
			rc =
			    edit(p, "INSIDE", "INSIDE", true, &count, &u, &err);
			edits += rc == 0;
		}
		sbx_error_free(&err);

		rc = workspace_stat(&w, p, p, &st, &target, &err);
		free(target);
		sbx_error_free(&err);

		if (i % 4 == 3) {
			rc = workspace_rm(&w, p, p, i % 8 == 7, &u, &err);
			rms += rc == 0;
			sbx_error_free(&err);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	outside_snapshot(&after);
	diag("race: %d iterations, %d reads, %d writes, %d edits, %d removals "
	     "succeeded inside; %d reads refused",
	     n, reads, writes, edits, rms, refusals);
	is_int(leaks, 0, "race: nothing outside read or edited");
	ok(after.secret_data && strcmp(after.secret_data, SENTINEL "\n") == 0 &&
	       same_time(&before.secret, &after.secret),
	   "race: the sentinel's content and mtime unchanged");
	ok(after.victim_data && before.victim_data &&
	       strcmp(after.victim_data, before.victim_data) == 0 &&
	       same_time(&before.victim, &after.victim),
	   "race: the other outside file unchanged");
	ok(same_time(&before.dir, &after.dir),
	   "race: the outside directory unchanged (nothing made or removed)");
	if (!ok(access("/secret", F_OK) < 0,
		"race: nothing made at / through the symlink to it"))
		unlink("/secret"); /* a broken build made it */
	ok(reads > 0 && writes > 0,
	   "race: the operations did succeed inside meanwhile");
	{
		char *ws = tap_path(tmpdir, "ws");
		ok(no_temp_in(ws), "race: no temporary file left behind");
		free(ws);
	}
	free(before.secret_data);
	free(before.victim_data);
	free(after.secret_data);
	free(after.victim_data);
}

int main(void)
{
	quick = getenv("T_WORKSPACE_QUICK") != NULL;
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root (chown, mknod, mount)\n");
		return 0;
	}
	setup();
	test_path_check();
	test_traversal();
	test_special_files();
	test_read_limit();
	test_read_budget();
	test_lines_fuzz();
	test_write();
	test_edit();
	test_stat();
	test_rm();
	test_cancel();
	test_mounts();
	test_no_openat2();
	test_race();
	workspace_close(&w);
	rm_rf(tmpdir);
	return done_testing();
}

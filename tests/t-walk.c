/*
 * t-walk.c - walk_run (walk.h) on real directory trees in a temporary
 * directory: the bounds, breadth-first order, what is left out, symlinks
 * and other mounts listed but not descended, a directory swapped for a
 * symlink out between two levels (a problem, never followed), and a race
 * against a process swapping a directory and a symlink to / all along.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "tap.h"
#include "workspace/walk.h"
#include "workspace/workspace.h"

/* tests/ws-stub.c: openat2 missing (valgrind), plain openat instead */

static char root[64];
static char ws[128];
/* The workspaces' cancel flag (workspace.h): a test sets it. */
static atomic_int cancel;

static void mkfile(const char *rel)
{
	char p[4096];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", ws, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "x\n", 2) != 2)
		bail_out("cannot make %s: %s", p, strerror(errno));
	close(fd);
}

static void mkdir_ws(const char *rel)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", ws, rel);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		bail_out("cannot make %s: %s", p, strerror(errno));
}

static void rm_rf(const char *p)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", p);
	if (system(cmd) != 0)
		diag("could not remove %s", p);
}

static void fresh(struct workspace *w)
{
	struct sbx_error *err = NULL;
	int fd;

	rm_rf(ws);
	if (mkdir(ws, 0755) < 0)
		bail_out("mkdir %s: %s", ws, strerror(errno));
	fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || workspace_init(w, fd, ws, 0, 8 << 20, 64 << 20, &cancel,
				     &err) < 0) {
		if (err && tap_status(err) == 3) /* no openat2 (valgrind 3.19) */
			skip_all(err->msg);
		bail_out("workspace_init: %s", err ? err->msg : strerror(errno));
	}
}

static const struct walk_entry *find(const struct walk_result *r,
				     const char *path)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i].path, path) == 0)
			return &r->v[i];
	return NULL;
}

static bool quiet;

static int walk(const struct workspace *w, const char *start,
		const struct walk_opts *o, struct walk_result *r)
{
	struct sbx_error *err = NULL;
	int rc = walk_run(w, start, start, o, r, &err);

	if (rc < 0) {
		if (!quiet)
			diag("walk_run: %s (status %d)", err->msg, tap_status(err));
		rc = -tap_status(err);
		sbx_error_free(&err);
	}
	return rc;
}

/* The 3,000-file tree, 8 levels deep: 375 files at each level. */
static void test_entries_bound(void)
{
	struct workspace w;
	struct walk_opts o = {.recursive = true, .hidden = true};
	struct walk_result r;
	char dir[512] = "", p[512];
	bool bfs = true, sorted = true;

	fresh(&w);
	for (int d = 1; d <= 8; d++) {
		snprintf(p, sizeof(p), "%s%sd%d", dir, *dir ? "/" : "", d);
		mkdir_ws(p);
		for (int f = 0; f < 375; f++) {
			char fp[600];

			snprintf(fp, sizeof(fp), "%s%sf%03d", dir, *dir ? "/" : "",
				 f);
			mkfile(fp);
		}
		snprintf(dir, sizeof(dir), "%s", p);
	}
	is_int(walk(&w, "", &o, &r), 0, "walk of 3,000 files");
	ok(r.truncated, "truncated");
	is_str(r.why, "entries", "by entries");
	is_int((long long)r.visited, 2000, "2,000 visited");
	is_int((long long)r.n, 2000, "2,000 listed");
	for (size_t i = 1; i < r.n; i++) {
		if (r.v[i].depth < r.v[i - 1].depth)
			bfs = false;
		if (r.v[i].depth == r.v[i - 1].depth &&
		    strcmp(r.v[i - 1].path, r.v[i].path) > 0)
			sorted = false;
	}
	ok(bfs, "breadth-first: depths never go down");
	ok(sorted, "sorted by name within a level");
	ok(find(&r, "d1/d2/d3/d4/d5/f000") != NULL &&
	       find(&r, "d1/d2/d3/d4/d5/d6/f000") == NULL,
	   "the first five levels whole (5 * 376 = 1,880), then stopped");
	walk_result_release(&r);

	o.max_entries = 376;
	walk(&w, "", &o, &r);
	ok(!r.truncated || strcmp(r.why, "entries") != 0 || r.n == 376,
	   "max_entries 376: %zu", r.n);
	ok(r.truncated && r.n == 376, "exactly 376 and truncated");
	walk_result_release(&r);

	o.max_entries = 100000;
	o.max_depth = 8;
	walk(&w, "", &o, &r);
	ok(!r.truncated && r.n == 3008, "unbounded: all 3,008 entries (%zu)",
	   r.n);
	walk_result_release(&r);
	workspace_close(&w);
}

static void test_depth_bound(void)
{
	struct workspace w;
	struct walk_opts o = {.recursive = true, .hidden = true};
	struct walk_result r;
	unsigned maxd = 0;

	fresh(&w);
	mkdir_ws("a");
	mkdir_ws("a/b");
	mkdir_ws("a/b/c");
	mkdir_ws("a/b/c/d");
	mkdir_ws("a/b/c/d/e");
	mkdir_ws("a/b/c/d/e/f");
	/* f is at depth 6 and empty: no truncation */
	walk(&w, "", &o, &r);
	ok(!r.truncated, "an empty depth-6 directory is no truncation");
	is_int((long long)r.n, 6, "6 entries");
	walk_result_release(&r);

	mkfile("a/b/c/d/e/f/deep.txt");
	walk(&w, "", &o, &r);
	ok(r.truncated, "a depth-6 directory with an entry truncates");
	is_str(r.why, "depth", "by depth");
	for (size_t i = 0; i < r.n; i++)
		if (r.v[i].depth > maxd)
			maxd = r.v[i].depth;
	is_int(maxd, 6, "nothing deeper than 6");
	ok(!find(&r, "a/b/c/d/e/f/deep.txt"), "deep.txt not listed");
	walk_result_release(&r);

	o.max_depth = 7;
	walk(&w, "", &o, &r);
	ok(!r.truncated && find(&r, "a/b/c/d/e/f/deep.txt"),
	   "--max-depth 7 reaches it");
	walk_result_release(&r);

	/* Depth counts from the start. */
	o.max_depth = 2;
	walk(&w, "a/b/c", &o, &r);
	ok(find(&r, "a/b/c/d/e") && !find(&r, "a/b/c/d/e/f") && r.truncated,
	   "depth counts from the start: %zu entries", r.n);
	walk_result_release(&r);

	/* Not recursive: the start's own entries only. */
	o.recursive = false;
	o.max_depth = 0;
	walk(&w, "a", &o, &r);
	ok(r.n == 1 && strcmp(r.v[0].path, "a/b") == 0 && !r.truncated,
	   "ls a: a/b only");
	walk_result_release(&r);
	workspace_close(&w);
}

static bool prune_x(void *ctx, const struct walk_entry *e, bool *descend)
{
	(void)ctx;
	if (strcmp(e->name, "x") == 0)
		*descend = false;
	return e->type != WALK_DIR;
}

static void test_left_out(void)
{
	struct workspace w;
	struct walk_opts o = {.recursive = true, .hidden = true,
			      .spill = "large_tool_results"};
	struct walk_result r;
	struct sbx_error *err = NULL;

	fresh(&w);
	mkdir_ws("skills");
	mkfile("skills/s.md");
	mkdir_ws("large_tool_results");
	mkfile("large_tool_results/1.json");
	mkdir_ws("src");
	mkdir_ws("src/skills");
	mkfile("src/skills/k");
	mkfile(".env");
	mkdir_ws(".git");
	mkfile(".git/HEAD");
	mkfile(".sbxcat-AbC123");
	mkfile("src/.sbxcat-zzzzzz");
	mkfile("src/.sbxcat-long-name");
	mkdir_ws("uploads");
	mkfile("uploads/cv.pdf");
	mkdir_ws("uploads/more");
	mkfile("uploads/more/x.txt");
	mkfile("notuploads");
	mkdir_ws("x");
	mkfile("x/under-x");

	walk(&w, "", &o, &r);
	ok(!find(&r, "skills") && !find(&r, "skills/s.md"), "skills/ left out");
	ok(!find(&r, "large_tool_results") &&
	       !find(&r, "large_tool_results/1.json"),
	   "the spill directory left out");
	ok(find(&r, "src/skills/k") != NULL, "a skills/ deeper is listed");
	ok(find(&r, ".env") && find(&r, ".git/HEAD"), "hidden listed with hidden");
	ok(!find(&r, ".sbxcat-AbC123") && !find(&r, "src/.sbxcat-zzzzzz"),
	   "temporaries left out");
	ok(find(&r, "src/.sbxcat-long-name") != NULL,
	   "a longer .sbxcat- name is not a temporary");
	ok(find(&r, "uploads/cv.pdf")->upload &&
	       find(&r, "uploads/more/x.txt")->upload,
	   "uploads/ entries flagged");
	ok(!find(&r, "uploads")->upload && !find(&r, "notuploads")->upload &&
	       !find(&r, "src/skills/k")->upload,
	   "the others not");
	is_str(walk_type_name(find(&r, "uploads")->type), "dir", "type dir");
	is_str(walk_type_name(find(&r, ".env")->type), "file", "type file");
	ok(find(&r, ".env")->mode == 0644 && find(&r, ".env")->size == 2,
	   "mode and size");
	is_int((long long)r.visited, (long long)r.n, "visited counts what is listed");
	walk_result_release(&r);

	o.all = true;
	walk(&w, "", &o, &r);
	ok(find(&r, "skills/s.md") && find(&r, "large_tool_results/1.json"),
	   "--all lists both");
	ok(!find(&r, ".sbxcat-AbC123"), "temporaries even with --all");
	walk_result_release(&r);

	o.all = false;
	o.hidden = false;
	walk(&w, "", &o, &r);
	ok(!find(&r, ".env") && !find(&r, ".git") && !find(&r, ".git/HEAD"),
	   "hidden left out and not descended without hidden");
	walk_result_release(&r);

	/* ls skills: a start named explicitly is listed. */
	walk(&w, "skills", &o, &r);
	ok(r.n == 1 && strcmp(r.v[0].path, "skills/s.md") == 0,
	   "walk from skills lists it");
	walk_result_release(&r);

	o.want = prune_x;
	walk(&w, "", &o, &r);
	ok(!find(&r, "x/under-x") && find(&r, "src/skills/k") && !find(&r, "src"),
	   "want() drops directories and prunes x");
	walk_result_release(&r);
	o.want = NULL;

	/* A file as start. */
	o.recursive = false;
	walk(&w, "uploads/cv.pdf", &o, &r);
	ok(r.n == 1 && strcmp(r.v[0].path, "uploads/cv.pdf") == 0 &&
	       strcmp(r.v[0].name, "cv.pdf") == 0 && r.v[0].upload,
	   "ls of a file: that entry");
	walk_result_release(&r);
	o.recursive = true;
	ok(walk_run(&w, "uploads/cv.pdf", "uploads/cv.pdf", &o, &r, &err) < 0 &&
	       tap_status(err) == 1 && strstr(err->msg, "is not a directory"),
	   "ls -R of a file: '%s'", err ? err->msg : "");
	sbx_error_free(&err);
	ok(walk_run(&w, "nope", "nope", &o, &r, &err) < 0 && tap_status(err) == 1,
	   "a missing start is an error");
	sbx_error_free(&err);
	workspace_close(&w);
}

static bool swap_victim(void *ctx, const struct walk_entry *e, bool *descend)
{
	char a[512], b[512];

	(void)descend;
	if (strcmp(e->path, "victim") == 0) {
		snprintf(a, sizeof(a), "%s/victim", ws);
		snprintf(b, sizeof(b), "%s/victim.old", ws);
		if (rename(a, b) < 0 || symlink("/", a) < 0)
			diag("swap: %s", strerror(errno));
		(*(int *)ctx)++;
	}
	return true;
}

static void test_symlinks(void)
{
	struct workspace w;
	struct walk_opts o = {.recursive = true, .hidden = true};
	struct walk_result r;
	char p[512];
	int swapped = 0;
	bool outside = false;

	fresh(&w);
	mkdir_ws("real");
	mkfile("real/inside");
	snprintf(p, sizeof(p), "%s/root", ws);
	if (symlink("/", p) < 0)
		bail_out("symlink");
	snprintf(p, sizeof(p), "%s/todir", ws);
	if (symlink("real", p) < 0)
		bail_out("symlink");
	walk(&w, "", &o, &r);
	is_str(walk_type_name(find(&r, "root")->type), "symlink", "root@");
	is_str(walk_type_name(find(&r, "todir")->type), "symlink", "todir@");
	for (size_t i = 0; i < r.n; i++)
		if (!strncmp(r.v[i].path, "root/", 5) ||
		    !strncmp(r.v[i].path, "todir/", 6))
			outside = true;
	ok(!outside && r.n == 4, "neither symlink descended (%zu entries)", r.n);
	walk_result_release(&r);

	/* ls through a symlink that stays beneath: followed (the start). */
	o.recursive = false;
	walk(&w, "todir", &o, &r);
	ok(r.n == 1 && strcmp(r.v[0].path, "todir/inside") == 0,
	   "a start through a symlink beneath is listed");
	walk_result_release(&r);
	{
		struct sbx_error *err = NULL;

		ok(walk_run(&w, "root", "root", &o, &r, &err) < 0,
		   "a start leading out is refused: %s", err ? err->msg : "");
		sbx_error_free(&err);
	}

	/* A directory swapped for a symlink to / after it was listed and
	 * before it is opened: a problem, nothing of / listed. */
	mkdir_ws("victim");
	mkfile("victim/v");
	o.recursive = true;
	o.want = swap_victim;
	o.ctx = &swapped;
	walk(&w, "", &o, &r);
	is_int(swapped, 1, "the victim was swapped mid-walk");
	is_int((long long)r.nproblems, 1, "one problem");
	if (r.nproblems) {
		is_str(r.problems[0].path, "victim", "naming the directory");
		diag("why: %s", r.problems[0].why);
	}
	outside = false;
	for (size_t i = 0; i < r.n; i++)
		if (!strncmp(r.v[i].path, "victim/", 7))
			outside = true;
	ok(!outside, "nothing listed under the swapped victim");
	walk_result_release(&r);
	workspace_close(&w);
}

/* Another mount inside: in a child of its own mount namespace. */
static void test_other_mount(void)
{
	struct workspace w;
	pid_t pid;
	int status;

	fresh(&w);
	mkdir_ws("mnt");
	pid = fork();
	if (pid == 0) {
		struct walk_opts o = {.recursive = true, .hidden = true};
		struct walk_result r;
		char p[512];
		int bad = 0;

		snprintf(p, sizeof(p), "%s/mnt", ws);
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", p, "tmpfs", 0, "size=1m") < 0)
			_exit(77);
		mkfile("mnt/on-tmpfs");
		walk(&w, "", &o, &r);
		if (!find(&r, "mnt") || find(&r, "mnt/on-tmpfs"))
			bad = 1;
		walk_result_release(&r);
		_exit(bad);
	}
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		skip("no mount namespace here (unshare/mount refused)",
		     "another mount is listed, not descended");
	else
		ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "another mount is listed, not descended");
	workspace_close(&w);
}

/*
 * The race: a child exchanges sw (a directory) and a symlink to / as fast
 * as it can (renameat2 RENAME_EXCHANGE: sw is always there, one or the
 * other) while the walks run.  Every name listed must be one that exists
 * inside; a name of / (etc, usr, proc...) is a walk that went out.
 */
static void test_race(void)
{
	static const char *known[] = {"sw", "swap", "inside", "sub", "inner",
				      "other"};
	struct workspace w;
	struct walk_opts o = {.recursive = true, .hidden = true};
	pid_t pid;
	int bad = 0, problems = 0, runs = 0, refused = 0, inside = 0;
	char a[512], b[512];

	fresh(&w);
	mkdir_ws("sw");
	mkfile("sw/inside");
	mkdir_ws("sw/sub");
	mkfile("sw/sub/inner");
	mkfile("other");
	snprintf(a, sizeof(a), "%s/sw", ws);
	snprintf(b, sizeof(b), "%s/swap", ws);
	if (symlink("/", b) < 0)
		bail_out("symlink: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		for (;;)
			if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) < 0)
				_exit(1);
	}
	quiet = true;
	for (runs = 0; runs < 3000; runs++) {
		struct walk_result r;

		if (walk(&w, runs & 1 ? "" : "sw", &o, &r) < 0) {
			refused++; /* the start itself was the symlink */
			continue;
		}
		problems += (int)r.nproblems;
		if (find(&r, runs & 1 ? "sw/sub/inner" : "sw/inside"))
			inside++;
		for (size_t i = 0; i < r.n; i++) {
			bool k = false;

			for (size_t j = 0; j < sizeof(known) / sizeof(*known); j++)
				if (strcmp(r.v[i].name, known[j]) == 0)
					k = true;
			if (!k && bad++ < 5)
				diag("listed from outside: %s", r.v[i].path);
		}
		walk_result_release(&r);
	}
	quiet = false;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	is_int(bad, 0, "%d racing walks: nothing from outside", runs);
	diag("%d walks saw sw's files, %d had problems recorded, %d starts "
	     "refused", inside, problems, refused);
	ok(inside > 0 && problems + refused > 0, "the race was real both ways");
	workspace_close(&w);
}

static bool stop_now(void *ctx)
{
	(void)ctx;
	return true;
}

static void test_stop(void)
{
	struct workspace w;
	struct walk_opts o = {.recursive = true, .stop = stop_now};
	struct walk_result r;

	fresh(&w);
	mkdir_ws("a");
	mkfile("a/b");
	walk(&w, "", &o, &r);
	ok(r.stopped && find(&r, "a") && !find(&r, "a/b"),
	   "stop() is asked between directories");
	walk_result_release(&r);
	workspace_close(&w);
	/* The deadline (issue 16 item 5): a directory of 10,000 names is
	 * not read to its end once it has passed. */
	{
		struct walk_opts d = {.recursive = true, .deadline_ms = 1};
		char name[32];

		fresh(&w);
		mkdir_ws("many");
		for (int i = 0; i < 10000; i++) {
			snprintf(name, sizeof(name), "many/f%05d", i);
			mkfile(name);
		}
		walk(&w, "many", &d, &r);
		ok(r.stopped && r.n == 0,
		   "a deadline past: the walk stops while it reads a big "
		   "directory (stopped %d, %zu entries)",
		   r.stopped, r.n);
		walk_result_release(&r);
		d.deadline_ms = 0;
		walk(&w, "many", &d, &r);
		ok(!r.stopped && r.n == 2000, "no deadline: 2,000 entries");
		walk_result_release(&r);
		/* The cancel flag: the same place stops, as an error of kind
		 * cancelled naming the flag's value, the signal. */
		{
			struct sbx_error *err = NULL;
			struct walk_opts all = {.recursive = true,
						.max_entries = 100000};

			atomic_store(&cancel, SIGTERM);
			is_int(walk_run(&w, "many", "many", &all, &r, &err), -1,
			       "the cancel flag up: the walk fails");
			ok(err && err->kind == SBX_E_CANCELLED,
			   "... with kind cancelled");
			is_str(err ? err->msg : "",
			       "interrupted by signal 15 while listing 'many'",
			       "... naming the signal and the start");
			ok(r.n < 10000, "... before the end (%zu entries)",
			   r.n);
			sbx_error_free(&err);
			walk_result_release(&r);
			atomic_store(&cancel, 0);
			is_int(walk(&w, "many", &all, &r), 0,
			       "the flag down again: the walk runs");
			is_int((long long)r.n, 10000, "... to its end");
			walk_result_release(&r);
		}
		workspace_close(&w);
	}
}

int main(void)
{
	snprintf(root, sizeof(root), "/tmp/t-walk-XXXXXX");
	if (!mkdtemp(root))
		bail_out("mkdtemp: %s", strerror(errno));
	snprintf(ws, sizeof(ws), "%s/workspace", root);
	test_entries_bound();
	test_depth_bound();
	test_left_out();
	{
		struct workspace w;

		fresh(&w);
		walk_run(&w, "", "", &(struct walk_opts){0},
			 &(struct walk_result){0}, &(struct sbx_error *){NULL});
		workspace_close(&w);
	}
	test_symlinks();
	test_other_mount();
	test_race();
	test_stop();
	rm_rf(root);
	return done_testing();
}

/*
 * t-spool.c - the audit's spool (spool.h) on real files in a temporary
 * directory: append then replay in order, a torn last line and a flipped
 * byte kept aside (once, even when replayed again), a failing sink leaves
 * the spool whole, 8 processes appending at once, status, and the
 * directories refused (a symlink, group-writable, a file, read-only).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/spool.h"
#include "basic/alloc.h"
#include "basic/env.h"
#include "basic/error.h"
#include "basic/xjson.h"
#include "tap.h"

static char root[64];
static int ndir;

/* The spool's settings, as the configuration reads them from an
 * environment (audit_config_load). */
static struct sbx_env env = SBX_ENV_INIT;
static struct audit_config cfg;

static void tenv(const char *name, const char *value)
{
	struct sbx_error *err = NULL;

	sbx_env_set(&env, name, value);
	audit_config_release(&cfg);
	if (audit_config_load(&cfg, &env, &err) < 0)
		bail_out("audit_config_load: %s", err->msg);
}

/* A fresh spool in a new directory (SBXCAT_SPOOL_DIR). */
static char *fresh(struct spool *s)
{
	char *d = tap_path(root, "spool%d", ndir++);

	tenv("SBXCAT_SPOOL_DIR", d);
	spool_init(s, &cfg);
	return d;
}

static void make_row(struct audit_row *r, int i)
{
	char t[64];

	audit_row_init(r, AUDIT_WRITE);
	snprintf(t, sizeof(t), "file-%d.txt", i);
	audit_row_set(&r->target, t, strlen(t), AUDIT_TARGET_MAX);
	audit_row_set(&r->tenant, "acme", 4, AUDIT_TARGET_MAX);
	r->bytes = i;
	r->ok = true;
}

struct got {
	char (*ids)[37];
	long long *bytes;
	size_t n, alloc_ids, alloc_bytes;
	size_t calls;
	int fail_at; /* call number that fails (1-based), 0: never */
};

static int sink(void *arg, const struct audit_row *rows, size_t n,
		struct sbx_error **err)
{
	struct got *g = arg;

	g->calls++;
	if ((int)g->calls == g->fail_at)
		return sbx_error_set(err, 3, 0, "database went away");
	for (size_t i = 0; i < n; i++) {
		ALLOC_GROW(g->ids, g->n + 1, g->alloc_ids);
		ALLOC_GROW(g->bytes, g->n + 1, g->alloc_bytes);
		memcpy(g->ids[g->n], rows[i].id, 37);
		g->bytes[g->n++] = rows[i].bytes;
	}
	return 0;
}

static void got_reset(struct got *g)
{
	free(g->ids);
	free(g->bytes);
	memset(g, 0, sizeof(*g));
}

/* Append n rows; their ids into ids (may be NULL). */
static void append_n(struct spool *s, int from, int n, char (*ids)[37])
{
	for (int i = 0; i < n; i++) {
		struct audit_row r;
		struct sbx_error *err = NULL;

		make_row(&r, from + i);
		if (spool_append(s, &r, &err) < 0)
			bail_out("spool_append: %s", err->msg);
		if (ids)
			memcpy(ids[i], r.id, 37);
		audit_row_release(&r);
	}
}

static off_t file_size(const char *dir, const char *name)
{
	char *p = tap_path(dir, "%s", name);
	struct stat st;
	off_t n = stat(p, &st) == 0 ? st.st_size : -1;

	free(p);
	return n;
}

static long long lines_of(const char *dir, const char *name)
{
	char *p = tap_path(dir, "%s", name);
	FILE *f = fopen(p, "r");
	long long n = 0;
	int c;

	free(p);
	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static int replay(struct spool *s, struct got *g, unsigned long long *moved,
		  unsigned long long *kept, char **msg)
{
	struct sbx_error *err = NULL;
	int rc = spool_replay(s, true, sink, g, moved, kept, &err);

	if (msg)
		*msg = err ? xstrdup(err->msg) : NULL;
	sbx_error_free(&err);
	return rc;
}

static void test_round_trip(void)
{
	struct spool s;
	struct got g = {0};
	char ids[5][37];
	unsigned long long moved, kept;
	struct spool_status st;
	struct sbx_error *err = NULL;
	char *d = fresh(&s);
	bool order = true;
	struct stat sb;

	ok(!spool_pending(&s), "no spool yet: nothing pending");
	append_n(&s, 0, 5, ids);
	ok(stat(d, &sb) == 0 && (sb.st_mode & 07777) == 0700,
	   "the directory was made 0700");
	{
		char *p = tap_path(d, "audit.jsonl");

		ok(stat(p, &sb) == 0 && (sb.st_mode & 07777) == 0600,
		   "audit.jsonl is 0600");
		free(p);
	}
	ok(spool_pending(&s), "pending after appends");
	is_int(lines_of(d, "audit.jsonl"), 5, "5 lines");
	ok(spool_status(&s, &st, &err) == 0 && st.exists && st.rows == 5 &&
	       st.kept_aside == 0 && st.last_flush_us == 0,
	   "status: 5 rows, none kept, never flushed");
	is_int(replay(&s, &g, &moved, &kept, NULL), 0, "replay");
	is_int((long long)moved, 5, "5 rows moved");
	is_int((long long)kept, 0, "none kept aside");
	for (int i = 0; i < 5 && order; i++)
		order =
		    g.n == 5 && !strcmp(g.ids[i], ids[i]) && g.bytes[i] == i;
	ok(order, "the rows, in order, whole");
	is_int((long long)file_size(d, "audit.jsonl"), 0, "the file emptied");
	ok(!spool_pending(&s), "nothing pending after the replay");
	ok(spool_status(&s, &st, &err) == 0 && st.rows == 0 &&
	       st.last_flush_us > 0 && st.last_flush_rows == 5,
	   "status: no rows, last flush moved 5");
	got_reset(&g);
	is_int(replay(&s, &g, &moved, &kept, NULL), 0, "replay again");
	ok(moved == 0 && g.n == 0, "the second replay gives nothing");
	/* appending after a replay, on the same descriptor */
	append_n(&s, 10, 2, NULL);
	got_reset(&g);
	replay(&s, &g, &moved, &kept, NULL);
	ok(moved == 2 && g.n == 2 && g.bytes[0] == 10,
	   "appends after a replay land at the start of the file");
	got_reset(&g);
	spool_close(&s);
	free(d);
}

/* Oldest is the smallest created_us, not the first line's. */
static void test_status_oldest(void)
{
	struct spool s;
	struct spool_status st;
	struct sbx_error *err = NULL;
	char *d = fresh(&s);
	long long when[3] = {1796119200000000LL, 1796000000000000LL,
			     1796119300000000LL};

	for (int i = 0; i < 3; i++) {
		struct audit_row r;

		make_row(&r, i);
		r.created_us = when[i];
		if (spool_append(&s, &r, &err) < 0)
			bail_out("append: %s", err->msg);
		audit_row_release(&r);
	}
	ok(spool_status(&s, &st, &err) == 0 && st.rows == 3 &&
	       st.oldest_us == when[1],
	   "status: oldest is the smallest time, from the second line");
	spool_close(&s);
	free(d);
}

static void truncate_to(const char *dir, off_t n)
{
	char *p = tap_path(dir, "audit.jsonl");

	if (truncate(p, n) < 0)
		bail_out("truncate: %s", strerror(errno));
	free(p);
}

static void flip_byte(const char *dir, off_t at)
{
	char *p = tap_path(dir, "audit.jsonl");
	int fd = open(p, O_RDWR);
	char c;

	if (fd < 0 || pread(fd, &c, 1, at) != 1)
		bail_out("open %s", p);
	c ^= 0x04;
	if (pwrite(fd, &c, 1, at) != 1)
		bail_out("pwrite");
	close(fd);
	free(p);
}

static void test_torn(void)
{
	struct spool s;
	struct got g = {0};
	char ids[4][37];
	unsigned long long moved, kept;
	char *d = fresh(&s);
	off_t size;

	append_n(&s, 0, 4, ids);
	size = file_size(d, "audit.jsonl");
	truncate_to(d, size - 40); /* the last line torn mid-way */
	is_int(replay(&s, &g, &moved, &kept, NULL), 0, "replay a torn spool");
	ok(moved == 3 && g.n == 3 && !strcmp(g.ids[2], ids[2]),
	   "the 3 whole rows replayed");
	is_int((long long)kept, 1, "the torn line kept aside");
	is_int(lines_of(d, "kept-aside.jsonl"), 1, "kept-aside.jsonl: 1 line");
	is_int((long long)file_size(d, "audit.jsonl"), 0, "spool emptied");
	got_reset(&g);

	/* A torn line, then a later append glued onto it. */
	append_n(&s, 10, 2, ids);
	size = file_size(d, "audit.jsonl");
	truncate_to(d, size - 100);
	append_n(&s, 20, 2, ids + 2);
	is_int(replay(&s, &g, &moved, &kept, NULL), 0, "replay a glued line");
	ok(moved == 3 && g.n == 3 && !strcmp(g.ids[0], ids[0]) &&
	       !strcmp(g.ids[1], ids[2]) && !strcmp(g.ids[2], ids[3]),
	   "the row glued onto torn bytes is found and replayed");
	ok(kept == 1 && lines_of(d, "kept-aside.jsonl") == 2,
	   "only the torn bytes kept aside");
	got_reset(&g);
	spool_close(&s);
	free(d);
}

static void test_flipped(void)
{
	struct spool s;
	struct got g = {0};
	char ids[5][37];
	unsigned long long moved, kept;
	char *d = fresh(&s);
	off_t size, line;

	append_n(&s, 0, 5, ids);
	size = file_size(d, "audit.jsonl");
	line = size / 5;
	flip_byte(d, 2 * line + line / 2); /* inside the third line */
	is_int(replay(&s, &g, &moved, &kept, NULL), 0,
	       "replay with a flipped byte");
	ok(moved == 4 && g.n == 4 && !strcmp(g.ids[1], ids[1]) &&
	       !strcmp(g.ids[2], ids[3]),
	   "the 4 good rows replayed, in order, the bad one not handed on");
	ok(kept == 1 && lines_of(d, "kept-aside.jsonl") == 1,
	   "the flipped line kept aside");
	got_reset(&g);

	/* A byte changed inside a target: still JSON, still clean; only the
	 * sum tells. */
	append_n(&s, 0, 3, ids);
	{
		char *p = tap_path(d, "audit.jsonl"), *data = NULL;
		size_t len = 0;
		FILE *f = fopen(p, "r");
		char *hit;

		if (!f || getdelim(&data, &len, '\0', f) < 0)
			bail_out("read %s", p);
		fclose(f);
		hit = strstr(data, "file-1.txt");
		if (!hit)
			bail_out("no file-1.txt in the spool");
		flip_byte(d, hit - data); /* f -> b: "bile-1.txt" */
		free(data);
		free(p);
	}
	is_int(replay(&s, &g, &moved, &kept, NULL), 0,
	       "replay with a target edited in place");
	ok(moved == 2 && g.n == 2 && !strcmp(g.ids[0], ids[0]) &&
	       !strcmp(g.ids[1], ids[2]) && kept == 1,
	   "the edited row fails its sum: kept aside, not handed on");
	got_reset(&g);
	spool_close(&s);
	free(d);
}

/* Raw bytes appended to DIR/audit.jsonl, as a torn write would leave. */
static void append_raw(const char *dir, const char *bytes, size_t n)
{
	char *p = tap_path(dir, "audit.jsonl");
	int fd = open(p, O_WRONLY | O_APPEND | O_CREAT, 0600);

	if (fd < 0 || write(fd, bytes, n) != (ssize_t)n)
		bail_out("append to %s", p);
	close(fd);
	free(p);
}

/*
 * Torn bytes longer than the reader holds (200 KiB, no newline), then two
 * rows appended: each is a line of its own (spool_append ends the torn
 * line first), so both replay; the torn bytes are kept aside once, and
 * counted, however often the replay is tried.
 */
static void test_long_torn(void)
{
	struct spool s;
	struct got g = {0};
	struct spool_status st;
	struct sbx_error *err = NULL;
	unsigned long long moved, kept;
	char *d = fresh(&s), *junk = xmalloc(200 * 1024);
	char ids[2][37];

	memset(junk, 'x', 200 * 1024);
	append_n(&s, 0, 1, NULL);
	append_raw(d, junk, 200 * 1024);
	append_n(&s, 1, 2, ids);
	for (int i = 0; i < 3; i++) { /* the sink refuses: nothing leaves */
		g.calls = 0;
		g.fail_at = 1;
		replay(&s, &g, &moved, &kept, NULL);
	}
	is_int(lines_of(d, "kept-aside.jsonl"), 1,
	       "200 KiB of torn bytes: kept aside once in 3 failed replays");
	ok(spool_status(&s, &st, &err) == 0 && st.kept_aside == 1 &&
	       st.rows == 3,
	   "... and counted: status says 1 kept aside, 3 rows waiting");
	sbx_error_free(&err);
	got_reset(&g);
	is_int(replay(&s, &g, &moved, &kept, NULL), 0, "replay");
	ok(moved == 3 && g.n == 3 && !strcmp(g.ids[1], ids[0]) &&
	       !strcmp(g.ids[2], ids[1]),
	   "both rows appended after the torn bytes replayed (%llu of 3)",
	   moved);
	got_reset(&g);
	spool_close(&s);
	free(junk);
	free(d);
}

/* DIR/audit.jsonl's bytes (at most max), *n of them. */
static char *spool_bytes(const char *dir, size_t max, size_t *n)
{
	char *p = tap_path(dir, "audit.jsonl"), *buf = xmalloc(max);
	int fd = open(p, O_RDONLY);
	ssize_t k = fd < 0 ? -1 : read(fd, buf, max);

	if (k < 0)
		bail_out("read %s", p);
	close(fd);
	free(p);
	*n = (size_t)k;
	return buf;
}

/*
 * A spool of three rows cut at every offset, as a crash can leave it: the
 * replay hands on exactly the whole lines before the cut, in order, and
 * keeps the rest aside as one torn line (none when the cut falls after a
 * newline), never a half row.
 */
static void test_every_cut(void)
{
	struct spool s;
	char ids[3][37], *d = fresh(&s), *all, *p;
	size_t n, bad = 0, tries = 0;

	append_n(&s, 0, 3, ids);
	spool_close(&s);
	all = spool_bytes(d, 65536, &n);
	p = tap_path(d, "audit.jsonl");
	for (size_t cut = 0; cut <= n; cut++) {
		struct got g = {0};
		unsigned long long moved = 0, kept = 0, whole = 0;
		int fd = open(p, O_WRONLY | O_TRUNC);

		if (fd < 0 || write(fd, all, cut) != (ssize_t)cut)
			bail_out("write %s", p);
		close(fd);
		for (size_t i = 0; i < cut; i++)
			whole += all[i] == '\n';
		spool_init(&s, &cfg);
		if (replay(&s, &g, &moved, &kept, NULL) != 0 ||
		    moved != whole || g.n != whole ||
		    kept != (cut && all[cut - 1] != '\n' ? 1u : 0u))
			bad++;
		for (size_t i = 0; i < g.n && i < 3; i++)
			bad += strcmp(g.ids[i], ids[i]) != 0;
		spool_close(&s);
		got_reset(&g);
		tries++;
	}
	ok(bad == 0, "a spool of 3 rows cut at each of its %zu offsets: the "
		     "whole rows before the cut, in order, the rest kept aside "
		     "(%zu wrong)", tries, bad);
	free(p);
	free(all);
	free(d);
}

static void test_sink_fails(void)
{
	struct spool s;
	struct got g = {0};
	unsigned long long moved, kept;
	char *d = fresh(&s), *msg = NULL;
	off_t size;
	int rc;
	int n = SPOOL_BATCH + 5;

	append_n(&s, 0, n, NULL);
	/* a torn last line, which is kept aside by the failed replay */
	append_n(&s, n, 1, NULL);
	truncate_to(d, file_size(d, "audit.jsonl") - 10);
	size = file_size(d, "audit.jsonl");
	g.fail_at = 2;
	rc = replay(&s, &g, &moved, &kept, &msg);
	ok(rc < 0 && msg && strstr(msg, "database went away"),
	   "the sink failing on the second batch fails the replay (%s)",
	   msg ? msg : "no error");
	free(msg);
	ok(g.n == SPOOL_BATCH && moved == SPOOL_BATCH,
	   "the first batch (SPOOL_BATCH rows) was taken");
	is_int((long long)file_size(d, "audit.jsonl"), (long long)size,
	       "the spool is left as it was");
	is_int(lines_of(d, "kept-aside.jsonl"), 1, "the torn line kept aside");
	got_reset(&g);
	/* Replayed again (as after a crash before the truncate): everything
	 * is handed on again, the torn line not kept a second time. */
	is_int(replay(&s, &g, &moved, &kept, NULL), 0, "replay again");
	ok(moved == (unsigned long long)n && g.n == (size_t)n && g.calls == 2,
	   "all %d rows, in two batches", n);
	ok(kept == 1 && lines_of(d, "kept-aside.jsonl") == 1,
	   "the torn line counted, but kept aside only once");
	is_int((long long)file_size(d, "audit.jsonl"), 0, "spool emptied");
	got_reset(&g);
	spool_close(&s);
	free(d);
}

static void test_concurrent(void)
{
	enum { P = 8, N = 500 };
	struct spool s;
	struct got g = {0};
	unsigned long long moved, kept;
	char *d = fresh(&s);
	pid_t pids[P];
	int fails = 0;
	bool distinct = true;

	fflush(stdout);
	for (int p = 0; p < P; p++) {
		pids[p] = fork();
		if (pids[p] < 0)
			bail_out("fork: %s", strerror(errno));
		if (pids[p] == 0) {
			struct spool c;

			spool_init(&c, &cfg);
			for (int i = 0; i < N; i++) {
				struct audit_row r;
				struct sbx_error *err = NULL;

				make_row(&r, p * N + i);
				if (spool_append(&c, &r, &err) < 0)
					_exit(1);
				audit_row_release(&r);
			}
			spool_close(&c);
			_exit(0);
		}
	}
	for (int p = 0; p < P; p++) {
		int status;

		waitpid(pids[p], &status, 0);
		fails += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	is_int(fails, 0, "8 processes appended 500 rows each");
	is_int(lines_of(d, "audit.jsonl"), P * N, "4000 lines");
	is_int(replay(&s, &g, &moved, &kept, NULL), 0, "replay");
	ok(moved == P * N && kept == 0,
	   "4000 whole rows replayed, none kept "
	   "aside (%llu, %llu)",
	   moved, kept);
	{
		char *seen = xcalloc(P * N, 1);

		for (size_t i = 0; i < g.n; i++) {
			long long b = g.bytes[i];

			if (b < 0 || b >= P * N || seen[b]++)
				distinct = false;
		}
		free(seen);
	}
	ok(distinct && g.n == P * N, "each row exactly once");
	got_reset(&g);
	spool_close(&s);
	free(d);
}

static void expect_refused(const char *dir, const char *want, const char *name)
{
	struct spool s;
	struct audit_row r;
	struct sbx_error *err = NULL;
	int rc;

	tenv("SBXCAT_SPOOL_DIR", dir);
	spool_init(&s, &cfg);
	make_row(&r, 0);
	rc = spool_append(&s, &r, &err);
	ok(rc < 0 && err && tap_status(err) == 3 && strstr(err->msg, dir) &&
	       strstr(err->msg, want),
	   "%s: status 3 naming it (%s)", name, err ? err->msg : "accepted");
	sbx_error_free(&err);
	audit_row_release(&r);
	spool_close(&s);
}

static void test_refused(void)
{
	/* Arrays, not allocations: the forked child below exits with them
	 * in use, and valgrind would count them lost. */
	char real[128], link[128], gw[128], file[128], under[128], ro[128];
	int fd;

	snprintf(real, sizeof(real), "%s/real", root);
	snprintf(link, sizeof(link), "%s/link", root);
	snprintf(gw, sizeof(gw), "%s/gw", root);
	snprintf(file, sizeof(file), "%s/afile", root);
	snprintf(under, sizeof(under), "%s/afile/spool", root);
	snprintf(ro, sizeof(ro), "%s/ro", root);

	if (mkdir(real, 0700) < 0 || symlink(real, link) < 0 ||
	    mkdir(gw, 0700) < 0 || chmod(gw, 0770) < 0 || mkdir(ro, 0700) < 0)
		bail_out("setup: %s", strerror(errno));
	fd = open(file, O_WRONLY | O_CREAT, 0600);
	if (fd < 0)
		bail_out("setup: %s", strerror(errno));
	close(fd);
	expect_refused(link, "symbolic link", "a symlinked spool directory");
	expect_refused(gw, "writable by group or others",
		       "a group-writable spool directory");
	expect_refused(file, "not a directory", "a file where the dir is");
	expect_refused(under, "Not a directory",
		       "a spool directory under a file");
	if (chmod(gw, 0702) == 0)
		expect_refused(gw, "writable by group or others",
			       "a world-writable spool directory");
	{
		struct spool s;
		struct spool_status st;
		struct sbx_error *err = NULL;

		tenv("SBXCAT_SPOOL_DIR", link);
		spool_init(&s, &cfg);
		ok(spool_status(&s, &st, &err) < 0 && tap_status(err) == 3,
		   "status refuses a symlinked spool too");
		sbx_error_free(&err);
		spool_close(&s);
		tenv("SBXCAT_SPOOL_DIR", under);
		spool_init(&s, &cfg);
		ok(spool_status(&s, &st, &err) < 0 && tap_status(err) == 3,
		   "status on a path through a file: status 3");
		sbx_error_free(&err);
		spool_close(&s);
	}

	/* A read-only file system: a tmpfs mounted read-only in a mount
	 * namespace of a child's own (nothing of the host's is touched). */
	fflush(stdout);
	{
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			struct spool s;
			struct audit_row r;
			struct sbx_error *err = NULL;
			int rc;

			if (unshare(CLONE_NEWNS) < 0 ||
			    mount("none", "/", "none", MS_REC | MS_PRIVATE,
				  NULL) < 0 ||
			    mount("tmpfs", ro, "tmpfs", MS_RDONLY,
				  "mode=0700") < 0)
				_exit(77);
			tenv("SBXCAT_SPOOL_DIR", ro);
			spool_init(&s, &cfg);
			make_row(&r, 0);
			rc = spool_append(&s, &r, &err);
			if (rc < 0 && tap_status(err) == 3 &&
			    strstr(err->msg, ro) &&
			    strstr(err->msg, "audit.jsonl") &&
			    strstr(err->msg, "Read-only"))
				rc = 0;
			else
				fprintf(stderr, "# read-only: %s\n",
					err ? err->msg : "accepted");
			sbx_error_free(&err);
			audit_row_release(&r);
			spool_close(&s);
			_exit(rc == 0 ? 0 : 1);
		}
		waitpid(pid, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
			skip("no mount namespace here (not root?)",
			     "a read-only spool directory");
		else
			ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			   "a read-only spool directory: status 3 naming "
			   "DIR/audit.jsonl and why");
	}
}

/* A row that is not clean is refused before it reaches the file. */
static void test_unclean_row(void)
{
	struct spool s;
	struct audit_row r;
	struct sbx_error *err = NULL;
	char *d = fresh(&s);
	int rc;

	make_row(&r, 0);
	free(r.target);
	r.target = xstrdup("bad\nline");
	rc = spool_append(&s, &r, &err);
	ok(rc < 0 && strstr(err->msg, "'target'"),
	   "an unclean row is refused (%s)", err ? err->msg : "accepted");
	sbx_error_free(&err);
	audit_row_release(&r);
	spool_close(&s);
	free(d);
}

/* What spool_ready makes, and how it refuses (t-disk.sh does it on a
 * full disk). */
static void test_ready(void)
{
	struct spool s;
	struct spool_status st;
	struct audit_row r;
	struct sbx_error *err = NULL;
	char *d = fresh(&s), *p, *count;
	struct stat sb;
	int rc;

	/* A spool from before lost.count: its lost.jsonl's 3 lines count. */
	if (mkdir(d, 0700) < 0)
		bail_out("mkdir %s: %s", d, strerror(errno));
	append_raw(d, "", 0);
	p = tap_path(d, "lost.jsonl");
	{
		FILE *f = fopen(p, "w");

		if (!f || fputs("{}\n{}\n{}\n", f) < 0 || fclose(f) != 0)
			bail_out("cannot write %s", p);
	}
	free(p);
	tenv("SBXCAT_SPOOL_MIN_FREE", "0");
	tenv("SBXCAT_SPOOL_RESERVE", "100");
	spool_close(&s); /* the limits are read when a spool is made */
	spool_init(&s, &cfg);
	rc = spool_ready(&s, &err);
	ok(rc == 0, "spool_ready with no floor (%s)", err ? err->msg : "ok");
	sbx_error_free(&err);
	count = tap_path(d, "lost.count");
	ok(stat(count, &sb) == 0 && sb.st_size == 21,
	   "lost.count made, 21 bytes");
	p = tap_path(d, "audit.jsonl");
	if (stat(p, &sb) < 0)
		bail_out("stat %s: %s", p, strerror(errno));
	ok(sb.st_size == 0 && (long long)sb.st_blocks * 512 >= SPOOL_LINE_MAX,
	   "a reserve of 100 is taken as one line, %d bytes, allocated ahead "
	   "of the end (%lld allocated, size %lld)",
	   SPOOL_LINE_MAX, (long long)sb.st_blocks * 512,
	   (long long)sb.st_size);
	free(p);
	rc = spool_status(&s, &st, &err);
	ok(rc == 0 && st.lost == 3 && st.reserve == SPOOL_LINE_MAX &&
	       st.reserved >= SPOOL_LINE_MAX && st.min_free == 0,
	   "status: the 3 lost rows of lost.jsonl, the reserve and the floor");
	sbx_error_free(&err);
	make_row(&r, 0);
	ok(spool_note_lost(&s, &r) == 0, "a lost row is counted");
	audit_row_release(&r);
	spool_close(&s);
	spool_init(&s, &cfg);
	rc = spool_status(&s, &st, &err);
	ok(rc == 0 && st.lost == 4 && lines_of(d, "lost.jsonl") == 4,
	   "... 4 lost, in lost.count and lost.jsonl (%llu)", st.lost);
	sbx_error_free(&err);
	{
		char buf[32] = "";
		FILE *f = fopen(count, "r");

		if (f) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = '\0';
			fclose(f);
		}
		is_str(buf, "00000000000000000004\n", "lost.count says 4");
	}

	/* A floor no disk has: refused, naming the directory and both
	 * figures. */
	tenv("SBXCAT_SPOOL_MIN_FREE", "100000000000000000");
	spool_close(&s);
	spool_init(&s, &cfg);
	rc = spool_ready(&s, &err);
	ok(rc < 0 && tap_status(err) == 3 && strstr(err->msg, d) &&
	       strstr(err->msg, "bytes free, under the floor of "
				"100000000000000000 bytes "
				"(SBXCAT_SPOOL_MIN_FREE)"),
	   "a floor over the free space: status 3, saying so (%s)",
	   err ? err->msg : "accepted");
	sbx_error_free(&err);
	tenv("SBXCAT_SPOOL_MIN_FREE", "1e6");
	spool_close(&s);
	spool_init(&s, &cfg);
	rc = spool_ready(&s, &err);
	ok(rc < 0 && tap_status(err) == 2 &&
	       strstr(err->msg, "SBXCAT_SPOOL_MIN_FREE '1e6'"),
	   "a floor that is not a whole number: status 2 (%s)",
	   err ? err->msg : "accepted");
	sbx_error_free(&err);
	tenv("SBXCAT_SPOOL_MIN_FREE", NULL);
	tenv("SBXCAT_SPOOL_RESERVE", NULL);
	spool_close(&s);
	free(count);
	free(d);
}

int main(void)
{
	xjson_init();
	snprintf(root, sizeof(root), "/tmp/t-spool-XXXXXX");
	if (!mkdtemp(root))
		bail_out("mkdtemp: %s", strerror(errno));
	test_round_trip();
	test_status_oldest();
	test_torn();
	test_flipped();
	test_sink_fails();
	test_long_torn();
	test_every_cut();
	test_concurrent();
	test_refused();
	test_unclean_row();
	test_ready();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", root);
		if (system(cmd) != 0)
			diag("could not remove %s", root);
	}
	audit_config_release(&cfg);
	sbx_env_release(&env);
	return done_testing();
}

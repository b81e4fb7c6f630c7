/*
 * t-audit-writer.c - the service's audit writer (audit/audit-writer.h)
 * and its pool, on the real PostgreSQL tests/t-audit-writer.sh sets up:
 *
 *   t-audit-writer test URL FAULT_URL DIR
 *   t-audit-writer bench URL DIR THREADS ROWS
 *
 * URL is a migrated database of the shared test-bed; FAULT_URL one of a
 * cluster of the script's own, which T_AW_STOP and T_AW_START (shell
 * commands) stop and start again; DIR a directory for the spools.
 * (a) 32 threads x 50 rows: each row in the database once, fewer commits
 * than rows, the chains verify; (b) the database stopped under 8 threads:
 * every row spooled, then replayed by the writer itself; (c) neither sink
 * ready: audit_ready fails closed with the command line's message; (d)
 * stop with rows queued commits them; (e) the direct path (a caller commits
 * its own row while the writer is idle) beside the writer's groups: one
 * thread alone commits every row itself, threads of one shared session and
 * of their own at once take both paths, backends killed under them lose
 * nothing, and in each the chains verify and each thread's rows keep their
 * order in their chain.  The bench prints the wait of
 * audit_record through the writer beside a row inserted on a kept
 * connection.  Checks run on the main thread (tap is not thread-safe).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit-writer.h"
#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/auditq.h"
#include "audit/pq-dl.h"
#include "audit/spool.h"
#include "basic/alloc.h"
#include "basic/env.h"
#include "basic/error.h"
#include "svc/svc-audit.h"
#include "svc/svc.h"
#include "tap.h"

#define MAXT 32

static const char *URL, *FAULT_URL, *DIR_;

struct worker {
	pthread_t th;
	struct audit_writer *w;
	int id, rows;
	const char *tag;     /* the rows' tenant */
	const char *session; /* every row's session, else four of its own */
	int sleep_us;	 /* between rows */
	int ok, to_db, to_spool;
	char failed[512];
	double *waits; /* ms, per row (the bench) */
	double *ready; /* ms of audit_ready alone, per row */
};

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void config(struct audit_config *c, const char *url, const char *spool)
{
	memset(c, 0, sizeof(*c));
	c->db = url ? xstrdup(url) : NULL;
	c->spool_dir = tap_path(DIR_, "%s", spool);
	c->spool_min_free = SPOOL_MIN_FREE_DEFAULT;
	c->spool_reserve = SPOOL_RESERVE_DEFAULT;
}

static struct auditdb *connect_db(const char *url)
{
	struct sbx_error *err = NULL;
	struct auditdb *db;

	if (auditdb_connect(url, NULL, &db, &err) < 0)
		bail_out("connect: %s", err->msg);
	return db;
}

/* The first value of q's result as a number (-1: an error, said). */
static long long num(const char *url, const char *q)
{
	struct auditdb *db = connect_db(url);
	PGresult *r = sym_PQexec(auditdb_conn(db), q);
	long long v = -1;

	if (sym_PQresultStatus(r) == PGRES_TUPLES_OK && sym_PQntuples(r))
		v = strtoll(sym_PQgetvalue(r, 0, 0), NULL, 10);
	else
		diag("%s: %s", q, sym_PQresultErrorMessage(r));
	sym_PQclear(r);
	auditdb_close(db);
	return v;
}

static int verify(const char *url)
{
	struct auditdb *db = connect_db(url);
	struct sbx_error *err = NULL;
	json_t *rep = NULL;
	int rc = auditdb_verify(db, NULL, NULL, &rep, &err);

	if (rc < 0) {
		diag("verify: %s", err->msg);
		sbx_error_free(&err);
	} else if (rc) {
		char *d = json_dumps(rep, 0);
		diag("verify: %s", d);
		free(d);
	}
	json_decref(rep);
	auditdb_close(db);
	return rc;
}

/* Rows of tenant tag out of their thread's order in their chain: each
 * thread's rows (target /work/file-ID-I, bytes I) in a session follow
 * one another by seq as they were recorded. */
static long long out_of_order(const char *url, const char *tag)
{
	char q[512];

	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM (SELECT bytes, lag(bytes) OVER "
		 "(PARTITION BY session_key, split_part(target, '-', 2) "
		 "ORDER BY seq) AS p FROM sandbox_operations WHERE tenant = "
		 "'%s') t WHERE p >= bytes",
		 tag);
	return num(url, q);
}

/* One operation's row of worker k's i-th: its session one of four. */
static void make_row(struct audit_row *r, const struct worker *k, int i)
{
	char s[64], t[64];

	audit_row_init(r, AUDIT_READ);
	if (k->session)
		snprintf(s, sizeof(s), "%s", k->session);
	else
		snprintf(s, sizeof(s), "%s-%d-%d", k->tag, k->id, i % 4);
	snprintf(t, sizeof(t), "/work/file-%d-%d", k->id, i);
	audit_row_set(&r->tenant, k->tag, strlen(k->tag), AUDIT_ID_MAX);
	audit_row_set(&r->session_key, s, strlen(s), AUDIT_ID_MAX);
	audit_row_set_target(r, t, strlen(t));
	r->ok = true;
	r->bytes = i;
	r->duration_ms = 1;
}

static void note(struct worker *k, const char *what, struct sbx_error **err)
{
	if (!k->failed[0])
		snprintf(k->failed, sizeof(k->failed), "%s: %s", what,
			 *err ? (*err)->msg : "?");
	sbx_error_free(err);
}

static void *record_rows(void *arg)
{
	struct worker *k = arg;
	struct sbx_error *err = NULL;
	struct audit *a;
	char agent[32];

	snprintf(agent, sizeof(agent), "agent-%d", k->id % 3);
	if (audit_open_writer(&a, k->w, agent, NULL, &err) < 0) {
		note(k, "open", &err);
		return NULL;
	}
	for (int i = 0; i < k->rows; i++) {
		struct audit_row r;
		enum audit_where where;
		long long t0;

		make_row(&r, k, i);
		t0 = now_ns();
		if (audit_ready(a, &err) < 0) {
			note(k, "ready", &err);
		} else if (k->ready &&
			   (k->ready[i] = (double)(now_ns() - t0) / 1e6) < 0) {
			/* never */
		} else if (audit_record(a, &r, &where, &err) < 0) {
			note(k, "record", &err);
		} else {
			k->ok++;
			k->to_db += where == AUDIT_TO_DB;
			k->to_spool += where == AUDIT_TO_SPOOL;
		}
		if (k->waits)
			k->waits[i] = (double)(now_ns() - t0) / 1e6;
		audit_row_release(&r);
		if (k->sleep_us)
			usleep((useconds_t)k->sleep_us);
	}
	audit_close(a);
	return NULL;
}

static void run_workers(struct worker *k, int n)
{
	for (int i = 0; i < n; i++)
		if (pthread_create(&k[i].th, NULL, record_rows, &k[i]))
			bail_out("pthread_create");
}

/* Join them; the rows that went through, and where. */
static void join_workers(struct worker *k, int n, int *ok, int *db, int *sp)
{
	*ok = *db = *sp = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(k[i].th, NULL);
		if (k[i].failed[0])
			diag("thread %d: %s", i, k[i].failed);
		*ok += k[i].ok;
		*db += k[i].to_db;
		*sp += k[i].to_spool;
	}
}

static struct audit_writer *start(const struct audit_config *c)
{
	struct sbx_error *err = NULL;
	struct audit_writer *w;

	if (audit_writer_start(&w, c, &err) < 0)
		bail_out("audit_writer_start: %s", err->msg);
	return w;
}

static void setup(struct worker *k, int n, struct audit_writer *w,
		  const char *tag, int rows)
{
	memset(k, 0, sizeof(*k) * (size_t)n);
	for (int i = 0; i < n; i++) {
		k[i].w = w;
		k[i].id = i;
		k[i].tag = tag;
		k[i].rows = rows;
	}
}

static long long commits(const char *url)
{
	/* The statistics of other backends reach the view within a second
	 * of their transactions (PostgreSQL 15's pgstat). */
	usleep(1500 * 1000);
	return num(url, "SELECT xact_commit FROM pg_stat_database WHERE "
			"datname = current_database()");
}

/* (a) 32 threads x 50 rows, the database up. */
static void test_group(void)
{
	struct worker k[MAXT];
	struct audit_config c;
	struct audit_writer_stats st;
	struct audit_writer *w;
	long long before, after;
	int ok_, db, sp;

	config(&c, URL, "spool-a");
	before = commits(URL);
	w = start(&c);
	setup(k, MAXT, w, "group", 50);
	run_workers(k, MAXT);
	join_workers(k, MAXT, &ok_, &db, &sp);
	audit_writer_stats(w, &st);
	audit_writer_stop(w);
	after = commits(URL);
	is_int(ok_, MAXT * 50,
	       "(a) 32 threads x 50 rows: every record returned 0");
	is_int(db, MAXT * 50, "(a) ... every one with where = database");
	is_int(num(URL, "SELECT count(DISTINCT id) FROM sandbox_operations "
			"WHERE tenant = 'group'"),
	       MAXT * 50, "(a) every row in the database, by id");
	is_int(num(URL, "SELECT count(*) FROM sandbox_operations WHERE "
			"tenant = 'group'"),
	       MAXT * 50, "(a) ... once each");
	is_int((long long)st.written, MAXT * 50, "(a) written counts them");
	is_int((long long)(st.lost + st.spooled), 0,
	       "(a) none spooled or lost");
	ok(st.groups > 0 && st.groups < MAXT * 50 / 2,
	   "(a) %llu groups committed for %d rows", st.groups, MAXT * 50);
	ok(after - before < MAXT * 50 / 2,
	   "(a) the database counted %lld commits for %d rows", after - before,
	   MAXT * 50);
	is_int(verify(URL), 0, "(a) the chains verify");
	audit_config_release(&c);
}

static unsigned long long spooled_rows(const char *name);

/* The counts of tag's rows: every one of n returned 0 (to the
 * database when db_only), each in the database once, none out of its
 * thread's order, the chains verify. */
static void rows_hold(const char *url, const char *what, const char *tag, int n,
		      int ok_, int db, bool db_only)
{
	char q[256];

	is_int(ok_, n, "(%s) every record returned 0", what);
	if (db_only)
		is_int(db, n, "(%s) ... every one with where = database", what);
	snprintf(q, sizeof(q),
		 "SELECT count(DISTINCT id) * 1000000 + count(*) FROM "
		 "sandbox_operations WHERE tenant = '%s'",
		 tag);
	is_int(num(url, q), (long long)n * 1000000 + n,
	       "(%s) %d rows in the database, by id, once each", what, n);
	is_int(out_of_order(url, tag), 0,
	       "(%s) each thread's rows in their chain in the order made",
	       what);
	is_int(verify(url), 0, "(%s) the chains verify", what);
}

/* Up to 15 s for w's database to be up and spool dir name empty: the
 * 10 ms steps waited (1500: it was not), st as it was last. */
static int wait_replayed(struct audit_writer *w, const char *name,
			 struct audit_writer_stats *st)
{
	int i;

	for (i = 0; i < 1500; i++) {
		audit_writer_stats(w, st);
		if (st->db_up && spooled_rows(name) == 0)
			break;
		usleep(10000);
	}
	return i;
}

/* Kill every other backend of url's database (the writer's, the callers'
 * own): their next commit fails as on a server restart. */
static void kill_backends(const char *url)
{
	num(url, "SELECT count(pg_terminate_backend(pid)) FROM "
		 "pg_stat_activity WHERE datname = current_database() AND pid "
		 "<> pg_backend_pid()");
}

/* (e) the direct path beside the writer's groups. */
static void test_direct(void)
{
	struct worker k[16];
	struct audit_config c;
	struct audit_writer_stats st;
	struct audit_writer *w;
	int ok_, db, sp, i;

	/* One caller alone: the writer is idle at each of its rows. */
	config(&c, URL, "spool-e");
	w = start(&c);
	setup(k, 1, w, "solo", 100);
	k[0].session = "solo-s";
	run_workers(k, 1);
	join_workers(k, 1, &ok_, &db, &sp);
	audit_writer_stats(w, &st);
	rows_hold(URL, "e-solo", "solo", 100, ok_, db, true);
	is_int((long long)(st.direct * 1000 + st.groups), 100 * 1000,
	       "(e) a caller alone committed each of its rows itself, the "
	       "writer none (direct %llu, groups %llu)",
	       st.direct, st.groups);
	is_int((long long)st.written, 100, "(e) written counts them");

	/* 16 threads at once, half of them on one shared session, half on
	 * four sessions each, some pausing between rows: the idle writer's
	 * callers commit their own, the rest queue for its groups. */
	setup(k, 16, w, "mixed", 40);
	for (i = 0; i < 16; i++) {
		k[i].session = i % 2 ? NULL : "mixed-shared";
		k[i].sleep_us = (i % 4) * 700;
	}
	run_workers(k, 16);
	join_workers(k, 16, &ok_, &db, &sp);
	audit_writer_stats(w, &st);
	rows_hold(URL, "e-mixed", "mixed", 16 * 40, ok_, db, true);
	diag("mixed: direct %llu of %llu rows, %llu groups", st.direct - 100,
	     st.written - 100, st.groups);
	ok(st.direct > 100 && st.groups > 0,
	   "(e) both paths taken at once: %llu rows committed by their "
	   "callers, %llu by the writer in %llu groups",
	   st.direct - 100, st.written - st.direct, st.groups);
	is_int(num(URL, "SELECT nrows FROM audit_chains WHERE session_key = "
			"'mixed-shared'"),
	       8 * 40, "(e) the shared session's chain counts its 320 rows");

	/* Every backend killed, five times, under 6 threads (three on one
	 * session): a caller's own commit that fails goes to the writer,
	 * whose own may fail too and spool; nothing is lost or doubled,
	 * and the spool is replayed by the writer before any row after. */
	setup(k, 6, w, "killed", 60);
	for (i = 0; i < 6; i++) {
		k[i].session = i < 3 ? "killed-shared" : NULL;
		k[i].sleep_us = 2000;
	}
	run_workers(k, 6);
	for (i = 0; i < 5; i++) {
		usleep(60 * 1000);
		kill_backends(URL);
	}
	join_workers(k, 6, &ok_, &db, &sp);
	diag("killed: %d to the database, %d spooled", db, sp);
	i = wait_replayed(w, "spool-e", &st);
	ok(i < 1500, "(e) killed: the spool replayed by the writer (%d ms)",
	   i * 10);
	audit_writer_stop(w);
	rows_hold(URL, "e-killed", "killed", 6 * 60, ok_, db, false);
	is_int((long long)st.lost, 0, "(e) killed: none lost");
	audit_config_release(&c);
}

/* The rows of spool dir name waiting. */
static unsigned long long spooled_rows(const char *name)
{
	struct audit_config c;
	struct spool_status ss;
	struct sbx_error *err = NULL;
	struct spool sp;

	config(&c, NULL, name);
	spool_init(&sp, &c);
	if (spool_status(&sp, &ss, &err) < 0) {
		diag("spool_status: %s", err->msg);
		sbx_error_free(&err);
		ss.rows = (unsigned long long)-1;
	}
	spool_close(&sp);
	audit_config_release(&c);
	return ss.rows;
}

static int shell(const char *var)
{
	const char *cmd = getenv(var);

	if (!cmd)
		bail_out("%s is not set", var);
	return system(cmd);
}

/* Wait up to secs for st.written to reach n. */
static void wait_written(struct audit_writer *w, unsigned long long n, int secs)
{
	struct audit_writer_stats st;

	for (int i = 0; i < secs * 100; i++) {
		audit_writer_stats(w, &st);
		if (st.written + st.spooled >= n)
			return;
		usleep(10000);
	}
}

/* (b) the database stopped while 8 threads record, then started. */
static void test_outage(void)
{
	struct worker k[8];
	struct audit_config c;
	struct audit_writer_stats st;
	struct audit_writer *w;
	int ok_, db, sp, i;

	config(&c, FAULT_URL, "spool-b");
	w = start(&c);
	setup(k, 8, w, "outage", 150);
	for (i = 0; i < 8; i++)
		k[i].sleep_us = 3000;
	run_workers(k, 8);
	wait_written(w, 200, 30);
	is_int(shell("T_AW_STOP"), 0,
	       "(b) the fault cluster stopped under load");
	join_workers(k, 8, &ok_, &db, &sp);
	audit_writer_stats(w, &st);
	is_int(ok_, 8 * 150, "(b) every record returned 0 through the outage");
	ok(db > 0 && sp > 0, "(b) %d rows to the database, %d to the spool", db,
	   sp);
	is_int((long long)st.lost, 0, "(b) none lost");
	ok(!st.db_up, "(b) the writer says the database is down");
	is_int((long long)spooled_rows("spool-b"), sp,
	       "(b) the spool holds the rows it took");
	is_int(shell("T_AW_START"), 0, "(b) the fault cluster started again");
	i = wait_replayed(w, "spool-b", &st);
	ok(i < 1500, "(b) the writer replayed the spool by itself within %d ms",
	   i * 10);
	diag("written %llu (direct %llu), spooled %llu, replayed %llu, "
	     "groups %llu",
	     st.written, st.direct, st.spooled, st.replayed, st.groups);
	ok(st.direct > 0,
	   "(b) callers committed rows of their own before "
	   "the outage (%llu)",
	   st.direct);
	/* The spool empty, a caller alone commits its own rows again. */
	setup(k, 1, w, "outage-after", 20);
	run_workers(k, 1);
	join_workers(k, 1, &ok_, &db, &sp);
	audit_writer_stats(w, &st);
	ok(db == 20 && st.direct >= 20,
	   "(b) after the replay, rows committed by their caller again "
	   "(%d to the database, direct %llu)",
	   db, st.direct);
	audit_writer_stop(w);
	is_int(out_of_order(FAULT_URL, "outage"), 0,
	       "(b) each thread's rows in their chain in the order made, "
	       "the spooled ones replayed before the rows after them");
	is_int(num(FAULT_URL, "SELECT count(DISTINCT id) FROM "
			      "sandbox_operations WHERE tenant = 'outage'"),
	       8 * 150, "(b) every row in the database, by id");
	is_int(num(FAULT_URL, "SELECT count(*) FROM sandbox_operations WHERE "
			      "tenant = 'outage'"),
	       8 * 150, "(b) ... none doubled");
	is_int((long long)spooled_rows("spool-b"), 0, "(b) the spool is empty");
	is_int(verify(FAULT_URL), 0, "(b) the chains verify");
	audit_config_release(&c);
}

/* The message audit_ready gives on recorder a (NULL: it passed). */
static char *ready_msg(struct audit *a)
{
	struct sbx_error *err = NULL;
	char *m;

	if (audit_ready(a, &err) == 0)
		return NULL;
	m = xstrdup(err->msg);
	sbx_error_free(&err);
	return m;
}

/* audit_ready on the writer and on the command line's recorder, with
 * the spool's floor above any free space. */
static void ready_both(const char *url, char **wmsg, char **cmsg)
{
	struct audit_config c;
	struct sbx_error *err = NULL;
	struct audit_writer *w;
	struct audit *a;

	config(&c, url, "spool-c");
	c.spool_min_free = 1ULL << 62;
	w = start(&c);
	if (audit_open_writer(&a, w, NULL, NULL, &err) < 0)
		bail_out("audit_open_writer: %s", err->msg);
	*wmsg = ready_msg(a);
	audit_close(a);
	audit_writer_stop(w);
	if (audit_open(&a, &c, NULL, NULL, &err) < 0)
		bail_out("audit_open: %s", err->msg);
	*cmsg = ready_msg(a);
	audit_close(a);
	audit_config_release(&c);
}

/* msg with the free space it quotes ("has N bytes free") as "has N":
 * other tests write to the same file system between the two readings. */
static char *no_free_count(char *msg)
{
	char *p = msg ? strstr(msg, " has ") : NULL, *q;

	if (!p || !(q = strstr(p, " bytes free")))
		return msg;
	memmove(p + 6, q, strlen(q) + 1);
	p[5] = 'N';
	return msg;
}

/* (c) the spool not ready: fail closed, in the command line's words. */
static void test_closed(void)
{
	char *wm, *cm, *down, *conninfo;

	down = tap_path(DIR_, "no-such-socket-dir");
	conninfo = xasprintf("host=%s", down);
	ready_both(conninfo, &wm, &cm);
	free(conninfo);
	ok(wm && !strncmp(wm,
			  "audit record could not be written: database: ", 45),
	   "(c) database down, spool below its floor: audit_ready fails (%s)",
	   wm ? wm : "passed");
	is_str(no_free_count(wm), no_free_count(cm),
	       "(c) ... with the command line's message");
	free(wm);
	free(cm);
	ready_both(URL, &wm, &cm);
	ok(wm && strstr(wm, "should the database fail: spool"),
	   "(c) database up, spool below its floor: audit_ready fails (%s)",
	   wm ? wm : "passed");
	is_str(no_free_count(wm), no_free_count(cm),
	       "(c) ... with the command line's message");
	free(wm);
	free(cm);
	free(down);
}

/* (d) stop with rows queued: the writer held up by a lock on the
 * chains, threads queueing behind it, then stop. */
struct stopper {
	pthread_t th;
	struct audit_writer *w;
};

static void *stop_it(void *arg)
{
	struct stopper *s = arg;

	audit_writer_stop(s->w);
	return NULL;
}

/* Rows stuck behind a lock on the chains; stop called meanwhile, the
 * lock released 200 ms later: the writer's stop and the rows' counts. */
static void stop_behind_lock(const char *tag, int rows, struct worker *k,
			     int *ok_, int *db, int *sp)
{
	struct audit_config c;
	struct audit_writer_stats st;
	struct stopper s;
	struct auditdb *lk = connect_db(URL);
	PGresult *r;
	int i;

	config(&c, URL, tag);
	s.w = start(&c);
	r = sym_PQexec(auditdb_conn(lk), "BEGIN; LOCK TABLE audit_chains IN "
					 "EXCLUSIVE MODE");
	sym_PQclear(r);
	setup(k, 8, s.w, tag, rows);
	run_workers(k, 8);
	/* Until every thread is inside its first record: its row queued or
	 * in the group the lock holds (a loaded machine starts threads
	 * slowly). */
	for (i = 0; i < 1000; i++) {
		audit_writer_stats(s.w, &st);
		if (st.inside == 8)
			break;
		usleep(10000);
	}
	ok(st.inside == 8, "(d) %s: %zu records waiting behind a held lock",
	   tag, st.inside);
	pthread_create(&s.th, NULL, stop_it, &s);
	usleep(200 * 1000);
	r = sym_PQexec(auditdb_conn(lk), "COMMIT");
	sym_PQclear(r);
	auditdb_close(lk);
	join_workers(k, 8, ok_, db, sp);
	pthread_join(s.th, NULL);
	audit_config_release(&c);
}

static void test_stop(void)
{
	struct worker k[8];
	int ok_, db, sp, refused = 0, said = 0;

	/* One row a thread: every row was queued when stop was called. */
	stop_behind_lock("stop-a", 1, k, &ok_, &db, &sp);
	is_int(db, 8, "(d) stop committed every queued row (where = database)");
	is_int(num(URL, "SELECT count(*) FROM sandbox_operations WHERE "
			"tenant = 'stop-a'"),
	       8, "(d) ... and they are in the database");
	/* Five a thread: a row recorded after the writer stopped is
	 * refused, saying so; none is reported written and missing. */
	stop_behind_lock("stop-b", 5, k, &ok_, &db, &sp);
	for (int i = 0; i < 8; i++) {
		refused += k[i].rows - k[i].ok;
		said += k[i].ok == k[i].rows ||
			strstr(k[i].failed, "the audit's writer has stopped");
	}
	diag("stop-b: %d rows to the database, %d refused", db, refused);
	ok(db >= 8 && db + refused == 40 && sp == 0,
	   "(d) rows after stop refused: %d committed + %d refused = 40, "
	   "none spooled",
	   db, refused);
	is_int(said, 8, "(d) ... each refusal says the writer has stopped");
	is_int(num(URL, "SELECT count(*) FROM sandbox_operations WHERE "
			"tenant = 'stop-b'"),
	       db, "(d) ... and the committed ones are in the database");
}

/* The pool: a connection reused, a broken one dropped. */
static void test_pool(void)
{
	struct auditdb_pool *p = auditdb_pool_new(URL, NULL, 2);
	struct auditdb_pool_stats st;
	struct sbx_error *err = NULL;
	struct auditdb *a, *b;

	if (auditdb_pool_get(p, &a, &err) < 0)
		bail_out("pool: %s", err->msg);
	auditdb_pool_put(p, a);
	auditdb_pool_get(p, &b, &err);
	ok(a == b, "pool: a connection given back is handed out again");
	sym_PQclear(sym_PQexec(auditdb_conn(b), "BEGIN"));
	auditdb_pool_put(p, b);
	auditdb_pool_stats(p, &st);
	is_int((long long)(st.idle * 10 + st.dropped), 1,
	       "pool: one left inside a transaction is dropped, not kept");
	auditdb_pool_free(p);
}

/* Events: one session's rows after a seq, a tenant's own only. */
static void test_events(void)
{
	struct auditdb *db = connect_db(URL);
	struct auditq_events_req q = {.session = "group-3-1", .limit = 5};
	struct sbx_error *err = NULL;
	json_t *ev = NULL;
	long long latest, first;

	if (auditq_events(db, &q, &ev, &latest, &err) < 0)
		bail_out("events: %s", err->msg);
	is_int((long long)json_array_size(ev), 5, "events: at most limit");
	first =
	    json_integer_value(json_object_get(json_array_get(ev, 0), "seq"));
	ok(json_is_real(json_object_get(json_array_get(ev, 0), "at")) &&
	       json_is_integer(
		   json_object_get(json_array_get(ev, 0), "duration_ms")),
	   "events: at a float, duration_ms a number");
	is_int(latest,
	       num(URL, "SELECT head_seq FROM audit_chains WHERE session_key "
			"= 'group-3-1'"),
	       "events: latest_seq is the chain's head");
	json_decref(ev);
	q.after = first;
	q.limit = 1000;
	auditq_events(db, &q, &ev, &latest, &err);
	is_int((long long)json_array_size(ev), 12,
	       "events: after the first, the other 12 rows of the session");
	json_decref(ev);
	q.tenant = "other";
	auditq_events(db, &q, &ev, &latest, &err);
	is_int((long long)json_array_size(ev) * 1000 + latest, 0,
	       "events: another tenant sees no row and latest_seq 0");
	json_decref(ev);
	auditdb_close(db);
}

/* The svc hook: the service's writer and pool behind svc_audit_open and
 * svc_audit_events, a tenant seeing its own rows only. */
static void test_svc(void)
{
	struct sbx_env env = SBX_ENV_INIT;
	struct svc_call call = {.tenant = "acme"}, other = {.tenant = "other"};
	struct svc_audit_events_req req = {.key = "svc-1"};
	struct svc_audit_events_res res;
	struct audit_writer_stats st;
	struct sbx_error *err = NULL;
	struct audit_event ev = {.op = AUDIT_WRITE,
				 .tenant = "acme",
				 .session_key = "svc-1",
				 .target = "a.txt",
				 .ok = true,
				 .bytes = 3,
				 .results = AUDIT_NONE};
	struct svc s;
	struct audit *a;
	char *dir = tap_path(DIR_, "spool-svc");

	sbx_env_set(&env, "SBXCAT_DATABASE_URL", URL);
	sbx_env_set(&env, "SBXCAT_SPOOL_DIR", dir);
	svc_init(&s, &env);
	if (svc_audit_serve_start(&s, 2, &err) < 0)
		bail_out("svc_audit_serve_start: %s", err->msg);
	for (int i = 0; i < 3; i++) {
		if (svc_audit_open(&s, &call, &a, &err) < 0 ||
		    audit_ready(a, &err) < 0 || audit_event(a, &ev, &err) < 0)
			bail_out("svc recorder: %s", err->msg);
		svc_audit_close(&call, a);
	}
	svc_audit_writer_stats(&s, &st);
	is_int((long long)st.written, 3,
	       "svc: svc_audit_open's recorders are the writer's");
	req.after = 0;
	if (svc_audit_events(&s, &call, &req, &res, &err) < 0)
		bail_out("svc_audit_events: %s", err->msg);
	is_int((long long)res.count, 3,
	       "svc: events of the session, its tenant's call");
	is_int(res.latest_seq,
	       json_integer_value(
		   json_object_get(json_array_get(res.events, 2), "seq")),
	       "svc: latest_seq is the last event's seq");
	ok(json_integer_value(json_object_get(res.doc, "latest_seq")) ==
	       res.latest_seq,
	   "svc: the document says latest_seq");
	svc_audit_events_res_release(&res);
	svc_audit_events(&s, &other, &req, &res, &err);
	is_int((long long)res.count * 1000 + res.latest_seq, 0,
	       "svc: another tenant's call sees no event");
	svc_audit_events_res_release(&res);
	req.limit = SVC_AUDIT_EVENTS_MAX + 1;
	is_int(svc_audit_events(&s, &call, &req, &res, &err), -1,
	       "svc: a limit over %d refused", SVC_AUDIT_EVENTS_MAX);
	sbx_error_free(&err);
	svc_audit_serve_stop(&s);
	svc_release(&s);
	sbx_env_release(&env);
	free(dir);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double rank(double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)n + 0.999999);

	return v[i ? i - 1 : 0];
}

/* Prints the figures of v; returns the wall time per row, ms. */
static double report(const char *what, double *v, size_t n, double wall_s)
{
	qsort(v, n, sizeof(*v), cmp_double);
	printf("%s: p50 %.3f ms p95 %.3f ms; %.0f rows/s, %.3f ms of wall "
	       "time per row\n",
	       what, rank(v, n, 0.5), rank(v, n, 0.95), (double)n / wall_s,
	       wall_s * 1000 / (double)n);
	return wall_s * 1000 / (double)n;
}

/* The bench: THREADS threads x ROWS rows through the writer, beside a
 * row inserted alone on one kept connection. */
static int bench(int threads, int rows)
{
	struct worker *k = xcalloc((size_t)threads, sizeof(*k));
	size_t n = (size_t)threads * (size_t)rows, m = 0;
	double *all = xcalloc(n, sizeof(*all)), *one = xcalloc(n, sizeof(*one));
	struct audit_config c;
	struct audit_writer_stats st;
	struct audit_writer *w;
	struct auditdb *db = connect_db(URL);
	double p95w, p95k, roww, rowk;
	long long t0;
	int ok_, dbn, sp;

	config(&c, URL, "spool-bench");
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		struct worker one_k = {.id = 0, .tag = "kept"};
		struct sbx_error *err = NULL;
		struct audit_row r;
		size_t ins, skip;
		long long t = now_ns();

		make_row(&r, &one_k, (int)i);
		if (auditdb_insert(db, &r, 1, &ins, &skip, &err) < 0)
			bail_out("insert: %s", err->msg);
		one[i] = (double)(now_ns() - t) / 1e6;
		audit_row_release(&r);
	}
	rowk = report("one kept connection, a row per INSERT transaction, "
		      "1 thread",
		      one, n, (double)(now_ns() - t0) / 1e9);
	p95k = rank(one, n, 0.95);
	w = start(&c);
	setup(k, threads, w, "bench", rows);
	for (int i = 0; i < threads; i++) {
		k[i].waits = xcalloc((size_t)rows, sizeof(double));
		k[i].ready = xcalloc((size_t)rows, sizeof(double));
	}
	t0 = now_ns();
	run_workers(k, threads);
	join_workers(k, threads, &ok_, &dbn, &sp);
	for (int i = 0; i < threads; i++) {
		memcpy(all + m, k[i].waits, (size_t)rows * sizeof(double));
		memcpy(one + m, k[i].ready, (size_t)rows * sizeof(double));
		m += (size_t)rows;
		free(k[i].waits);
		free(k[i].ready);
	}
	audit_writer_stats(w, &st);
	printf("writer, %d threads: %d of %zu rows to the database in %llu "
	       "groups (%.1f rows a commit)\n",
	       threads, dbn, n, st.groups,
	       st.groups ? (double)st.written / (double)st.groups : 0.0);
	roww = report("writer, audit_ready + audit_record's wait", all, n,
		      (double)(now_ns() - t0) / 1e9);
	p95w = rank(all, n, 0.95);
	qsort(one, n, sizeof(*one), cmp_double);
	printf("... of which audit_ready: p50 %.3f ms p95 %.3f ms\n",
	       rank(one, n, 0.5), rank(one, n, 0.95));
	printf("cost per row: writer %.3f ms / kept connection %.3f ms = "
	       "%.2f\n",
	       roww, rowk, roww / rowk);
	printf("wait p95: writer %.3f ms / kept connection %.3f ms = %.2f; "
	       "target p95 <= 1 ms: %s\n",
	       p95w, p95k, p95w / p95k, p95w <= 1.0 ? "met" : "MISSED");
	audit_writer_stop(w);
	auditdb_close(db);
	audit_config_release(&c);
	free(k);
	free(all);
	free(one);
	return dbn == (int)n ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct sbx_error *err = NULL;

	if (pq_dl_load(&err) < 0)
		skip_all(err->msg);
	if (argc == 6 && !strcmp(argv[1], "bench")) {
		URL = argv[2];
		DIR_ = argv[3];
		return bench(atoi(argv[4]), atoi(argv[5]));
	}
	if (argc != 5 || strcmp(argv[1], "test"))
		bail_out("usage: t-audit-writer test URL FAULT_URL DIR");
	URL = argv[2];
	FAULT_URL = argv[3];
	DIR_ = argv[4];
	test_group();
	test_direct();
	test_events();
	test_pool();
	test_svc();
	test_closed();
	test_stop();
	if (strcmp(FAULT_URL, "-"))
		test_outage();
	else
		skip("no fault cluster", "(b) the database stopped under load");
	return done_testing();
}

/*
 * t-audit-follow-writer.c - rows for tests/t-audit-follow.sh and
 * bench/bench-audit-follow.sh, inserted by sbxcat's own insert
 * (auditdb_insert_fresh: the chain locked, hashed and advanced as every
 * writer of sbxcat does), and a bare LISTEN for the benchmark's baseline.
 *
 *   write URL TENANT SESSION AGENT N BATCH RATE TAG
 *	N rows in transactions of BATCH, at RATE rows a second (0: at
 *	once); row i has target TAG/i, op write when i is even else read,
 *	ok false when i % 7 == 3, agent AGENT ("-": none).  After each
 *	commit, a line per row: "TARGET COMMIT_US" (CLOCK_REALTIME).
 *   listen URL N
 *	LISTEN sbxcat_audit and print each of N notifications' arrival
 *	time (CLOCK_REALTIME microseconds), one a line.
 */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/pq-dl.h"
#include "basic/alloc.h"
#include "basic/error.h"

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void fail(const char *what, struct sbx_error *err)
{
	fprintf(stderr, "t-audit-follow-writer: %s: %s\n", what,
		err ? err->msg : "?");
	exit(1);
}

static int do_write(char **a)
{
	const char *url = a[0], *tenant = a[1], *session = a[2], *agent = a[3];
	long n = atol(a[4]), batch = atol(a[5]), rate = atol(a[6]);
	const char *tag = a[7];
	struct sbx_error *err = NULL;
	struct auditdb *db;
	struct audit_row *rows;
	long long start;

	if (batch < 1)
		batch = 1;
	if (auditdb_connect(url, NULL, &db, &err) < 0)
		fail("connect", err);
	rows = xcalloc((size_t)batch, sizeof(*rows));
	start = now_us();
	for (long i = 0; i < n; i += batch) {
		long m = n - i < batch ? n - i : batch;
		size_t ins;
		char t[128];

		if (rate > 0) {
			long long due = start + i * 1000000LL / rate,
				  left = due - now_us();
			if (left > 0)
				usleep((useconds_t)left);
		}
		for (long j = 0; j < m; j++) {
			struct audit_row *r = &rows[j];
			long k = i + j;

			audit_row_init(r, k % 2 ? AUDIT_READ : AUDIT_WRITE);
			snprintf(t, sizeof(t), "%s/%ld", tag, k);
			audit_row_set(&r->tenant, tenant, strlen(tenant),
				      AUDIT_TARGET_MAX);
			audit_row_set(&r->session_key, session, strlen(session),
				      AUDIT_TARGET_MAX);
			audit_row_set(&r->target, t, strlen(t),
				      AUDIT_TARGET_MAX);
			if (strcmp(agent, "-"))
				audit_row_set(&r->agent, agent, strlen(agent),
					      AUDIT_TARGET_MAX);
			r->ok = k % 7 != 3;
			r->duration_ms = 1;
		}
		if (auditdb_insert_fresh(db, rows, (size_t)m, &ins, &err) < 0)
			fail("insert", err);
		{
			long long at = now_us();

			for (long j = 0; j < m; j++)
				printf("%s %lld\n", rows[j].target, at);
		}
		fflush(stdout);
		for (long j = 0; j < m; j++)
			audit_row_release(&rows[j]);
	}
	free(rows);
	auditdb_close(db);
	return 0;
}

static int do_listen(char **a)
{
	struct sbx_error *err = NULL;
	struct auditdb *db;
	PGconn *c;
	long n = atol(a[1]), got = 0;

	if (auditdb_connect(a[0], NULL, &db, &err) < 0)
		fail("connect", err);
	c = auditdb_conn(db);
	sym_PQclear(sym_PQexec(c, "LISTEN sbxcat_audit"));
	printf("listening\n");
	fflush(stdout);
	while (got < n) {
		struct pollfd p = {.fd = sym_PQsocket(c), .events = POLLIN};
		PGnotify *nt;

		if (poll(&p, 1, 10000) <= 0)
			break;
		sym_PQconsumeInput(c);
		while ((nt = sym_PQnotifies(c))) {
			printf("%lld\n", now_us());
			sym_PQfreemem(nt);
			got++;
		}
		fflush(stdout);
	}
	auditdb_close(db);
	return 0;
}

int main(int argc, char **argv)
{
	struct sbx_error *err = NULL;

	if (pq_dl_load(&err) < 0)
		fail("libpq", err);
	if (argc == 10 && !strcmp(argv[1], "write"))
		return do_write(argv + 2);
	if (argc == 4 && !strcmp(argv[1], "listen"))
		return do_listen(argv + 2);
	fprintf(stderr, "usage: t-audit-follow-writer write URL TENANT "
			"SESSION AGENT N BATCH RATE TAG | listen URL N\n");
	return 2;
}

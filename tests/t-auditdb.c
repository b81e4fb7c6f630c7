/*
 * t-auditdb.c - auditdb.c against a real PostgreSQL (run by t-auditdb.sh,
 * which starts the test-bed cluster and passes one fresh database per
 * case as the arguments): migrations (twice, and two migrators at once),
 * every column of inserted rows through both the parameter and the COPY
 * path, replays, the chain catching an edited, a deleted, a forged and a
 * truncated row, the chain's encoding by version (rows of schema 1 after
 * the migration, a version unknown), agents deleted, the sweep and its prefix
 * rule, concurrent writers of one session, insert speed, and no password in
 * errors.
 */
#include "config.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "audit/audit.h"
#include "audit/auditdb.h"
#include "basic/error.h"
#include "audit/pq-dl.h"
#include "tap.h"

static char **urls;
static int nurls, next_url;
static unsigned long long idn;

static const char *newdb(void)
{
	if (next_url >= nurls)
		bail_out("t-auditdb.sh passed too few databases");
	return urls[next_url++];
}

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A row by hand (audit_row_init is the core helper's): strings static. */
static void mkrow(struct audit_row *r, const char *session, long long created)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%08x-0000-4000-8000-%012llx",
		 (unsigned)getpid(), ++idn);
	r->created_us = created;
	r->tenant = (char *)"acme";
	r->session_key = (char *)session;
	r->runtime = (char *)"python";
	r->op = AUDIT_READ;
	r->target = (char *)"/work/a.txt";
	r->ok = true;
	r->bytes = 10;
	r->results = AUDIT_NONE;
	r->duration_ms = 3;
	r->detail = (char *)"";
}

static struct auditdb *open_db(const char *url, bool migrate)
{
	struct sbx_error *err = NULL;
	struct auditdb *db;
	int n;

	if (auditdb_connect(url, NULL, &db, &err) < 0)
		bail_out("connect: %s", err->msg);
	if (migrate && auditdb_migrate(db, &n, &err) < 0)
		bail_out("migrate: %s", err->msg);
	return db;
}

/* The first value of sql's result (static), or "<error: ...>". */
static const char *sql(struct auditdb *db, const char *q)
{
	static char buf[4096];
	PGresult *res = sym_PQexec(auditdb_conn(db), q);
	ExecStatusType st = sym_PQresultStatus(res);

	if (st == PGRES_TUPLES_OK && sym_PQntuples(res) > 0)
		snprintf(buf, sizeof(buf), "%s",
			 sym_PQgetisnull(res, 0, 0) ? "NULL"
						    : sym_PQgetvalue(res, 0, 0));
	else if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		snprintf(buf, sizeof(buf), "%s", sym_PQcmdTuples(res));
	else
		snprintf(buf, sizeof(buf), "<error: %s>",
			 sym_PQresultErrorMessage(res));
	sym_PQclear(res);
	return buf;
}

static int insert(struct auditdb *db, struct audit_row *rows, size_t n,
		  size_t *ins, size_t *skip)
{
	struct sbx_error *err = NULL;
	int rc = auditdb_insert(db, rows, n, ins, skip, &err);
	if (rc < 0) {
		diag("insert: %s", err->msg);
		sbx_error_free(&err);
	}
	return rc;
}

/* verify: its return; *seq and *id of the first bad entry. */
static int verify(struct auditdb *db, long long *seq, char *id, size_t idlen)
{
	struct sbx_error *err = NULL;
	json_t *rep = NULL;
	int rc = auditdb_verify(db, NULL, NULL, &rep, &err);

	if (rc < 0) {
		diag("verify: %s", err->msg);
		sbx_error_free(&err);
		return -1;
	}
	json_t *bad = json_array_get(json_object_get(rep, "bad"), 0);
	if (seq)
		*seq = bad ? json_integer_value(json_object_get(bad, "seq")) : -1;
	if (id) {
		const char *s = json_string_value(json_object_get(bad, "id"));
		snprintf(id, idlen, "%s", s ? s : "null");
	}
	if (bad) {
		char *d = json_dumps(bad, 0);
		diag("verify: %s", d);
		free(d);
	}
	json_decref(rep);
	return rc;
}

static void test_migrate(void)
{
	struct sbx_error *err = NULL;
	struct auditdb *db = open_db(newdb(), false);
	int n = -1, have, known;
	json_t *st = NULL;

	ok(auditdb_migrate_status(db, &st, &err) == 0 &&
		   json_array_size(st) == (size_t)auditdb_nmigrations &&
		   json_is_null(json_object_get(json_array_get(st, 0), "applied_at")),
	   "migrate --status before: every migration pending");
	json_decref(st);
	ok(auditdb_migrate(db, &n, &err) == 0 && n == auditdb_nmigrations,
	   "migrate applies %d migration(s)", auditdb_nmigrations);
	ok(auditdb_migrate(db, &n, &err) == 0 && n == 0,
	   "migrate again applies 0");
	ok(auditdb_schema_version(db, &have, &known, &err) == 0 &&
	       have == auditdb_nmigrations && known == auditdb_nmigrations,
	   "schema version %d of %d", auditdb_nmigrations, auditdb_nmigrations);
	ok(auditdb_migrate_status(db, &st, &err) == 0, "migrate --status");
	json_t *m = json_array_get(st, 0);
	ok(json_integer_value(json_object_get(m, "version")) == 1 &&
		   json_is_string(json_object_get(m, "name")) &&
		   json_is_string(json_object_get(m, "applied_at")) &&
		   strlen(json_string_value(json_object_get(m, "applied_at"))) ==
			   27 &&
		   json_object_size(m) == 3,
	   "status: {version, name, applied_at RFC 3339}");
	json_decref(st);
	is_str(sql(db, "SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'"),
	       "1", "pg_trgm created");
	ok(!strncmp(sql(db, "INSERT INTO sandbox_operations (id, created_at, "
			    "tenant, session_key, runtime, op, target, ok, "
			    "duration_ms, detail, hash) VALUES (gen_random_uuid(), "
			    "now(), '', '', '', 'frob', '', true, 0, '', "
			    "decode(repeat('00', 32), 'hex'))"),
		     "<error", 6),
	   "the op CHECK refuses an op audit_op_name does not know");
	auditdb_close(db);
}

/*
 * Three migrators at once, three times (each on a fresh database): one
 * may be building an index CONCURRENTLY while another waits for the
 * lock, which must not be a deadlock (40P01).
 */
#define RACES 3
#define RACERS 3

static void test_migrate_race(void)
{
	const char *url = NULL;
	int applied[RACES] = {0}, fails = 0;

	for (int r = 0; r < RACES; r++) {
		pid_t pid[RACERS];

		url = newdb();
		for (int i = 0; i < RACERS; i++) {
			pid[i] = fork();
			if (pid[i] == 0) {
				struct sbx_error *err = NULL;
				struct auditdb *db;
				int n = 0;
				if (auditdb_connect(url, NULL, &db, &err) < 0 ||
				    auditdb_migrate(db, &n, &err) < 0) {
					fprintf(stderr, "# child: %s\n",
						err->msg);
					_exit(99);
				}
				auditdb_close(db);
				_exit(10 + n);
			}
		}
		for (int i = 0; i < RACERS; i++) {
			int st;
			waitpid(pid[i], &st, 0);
			if (WIFEXITED(st) && WEXITSTATUS(st) >= 10 &&
			    WEXITSTATUS(st) < 20)
				applied[r] += WEXITSTATUS(st) - 10;
			else
				fails++;
		}
	}
	is_int(fails, 0,
	       "three migrators at once, three times: all succeed");
	for (int r = 0; r < RACES; r++)
		is_int(applied[r], auditdb_nmigrations,
		       "the schema is applied once (race %d)", r + 1);
	struct auditdb *db = open_db(url, false);
	char n[16];
	snprintf(n, sizeof(n), "%d", auditdb_nmigrations);
	is_str(sql(db, "SELECT count(*) FROM schema_migrations"), n,
	       "one schema_migrations row a migration");
	auditdb_close(db);
}

static void test_insert(void)
{
	struct auditdb *db = open_db(newdb(), true);
	struct audit_row r[3], big[120];
	unsigned char h[3][32], zero[32] = { 0 };
	size_t ins = 0, skip = 0;
	char q[1024];

	mkrow(&r[0], "s1", 1700000000123456LL);
	r[0].agent = (char *)"agent-1";
	r[0].run = (char *)"run-1";
	r[0].op = AUDIT_EXECUTE;
	r[0].target = (char *)"echo 'a\\b' \"q\" é";
	r[0].ok = false;
	r[0].has_exit = true;
	r[0].exit_status = 2;
	r[0].bytes = AUDIT_NONE;
	r[0].results = 7;
	r[0].duration_ms = 1234;
	r[0].detail = (char *)"exit 2";
	mkrow(&r[1], "s1", 1700000001000000LL);
	mkrow(&r[2], "s2", 1); /* the epoch and a microsecond: the earliest */
	r[2].tenant = (char *)"";
	audit_chain_hash(zero, &r[0], AUDIT_CHAIN_VERSION, h[0]);
	audit_chain_hash(h[0], &r[1], AUDIT_CHAIN_VERSION, h[1]);
	audit_chain_hash(zero, &r[2], AUDIT_CHAIN_VERSION, h[2]);

	ok(insert(db, r, 3, &ins, &skip) == 0 && ins == 3 && skip == 0,
	   "insert 3 rows (%zu, %zu)", ins, skip);
	snprintf(
	    q, sizeof(q),
	    "SELECT concat_ws('|', id, (extract(epoch FROM created_at) * "
	    "1000000)::bigint, tenant, session_key, runtime, agent_id, run_id, "
	    "agent_ref, run_ref, op, target, ok, exit_status, "
	    "coalesce(bytes::text, 'N'), results, duration_ms, detail, "
	    "encode(hash, 'hex'), hash_version) FROM sandbox_operations "
	    "WHERE id = '%s'",
	    r[0].id);
	char want[1024], hx[65];
	for (int i = 0; i < 32; i++)
		sprintf(hx + 2 * i, "%02x", h[0][i]);
	snprintf(
	    want, sizeof(want),
	    "%s|1700000000123456|acme|s1|python|agent-1|run-1|agent-1|run-1|"
	    "execute|echo 'a\\b' \"q\" é|f|2|N|7|1234|exit 2|%s|%d",
	    r[0].id, hx, AUDIT_CHAIN_VERSION);
	is_str(sql(db, q), want, "every column of the row as given, hash chained");
	snprintf(q, sizeof(q),
		 "SELECT concat_ws('|', (extract(epoch FROM created_at) * "
		 "1000000)::bigint, agent_id IS NULL, run_id IS NULL, exit_status "
		 "IS NULL, results IS NULL, tenant = '') FROM sandbox_operations "
		 "WHERE id = '%s'",
		 r[2].id);
	is_str(sql(db, q), "1|t|t|t|t|t", "NULLs, empty tenant, time 1 us after 1970");
	is_str(sql(db, "SELECT concat_ws('|', (SELECT count(*) FROM agents), "
		       "(SELECT agent_id FROM runs WHERE id = 'run-1'))"),
	       "1|agent-1", "agent and run created");
	for (int i = 0; i < 32; i++)
		sprintf(hx + 2 * i, "%02x", h[1][i]);
	snprintf(want, sizeof(want), "2|%s|2", hx);
	is_str(sql(db, "SELECT concat_ws('|', nrows, encode(head, 'hex'), "
		       "head_seq) FROM audit_chains WHERE session_key = 's1'"),
	       want, "chain s1: 2 rows, head the second's hash and seq");

	ok(insert(db, r, 3, &ins, &skip) == 0 && ins == 0 && skip == 3,
	   "a replayed batch inserts nothing (%zu, %zu)", ins, skip);
	struct audit_row dup[3] = { r[0], r[0], r[0] };
	mkrow(&dup[1], "s1", 1700000002000000LL);
	dup[2] = dup[1];
	ok(insert(db, dup, 3, &ins, &skip) == 0 && ins == 1 && skip == 2,
	   "a row twice in a batch goes in once (%zu, %zu)", ins, skip);

	/* COPY: targets with what its text format escapes. */
	static const char *const odd[] = { "a\\b", "\\N", "x\\ty", "\\\\",
					   "tab\there", "nl\nx", "\\.", "" };
	for (int i = 0; i < 120; i++) {
		mkrow(&big[i], i % 3 ? "s3" : "s4", 1700000100000000LL + i);
		big[i].target = (char *)odd[i % 8];
		big[i].agent = i % 2 ? (char *)"agent-\\\"2" : NULL;
	}
	ok(insert(db, big, 120, &ins, &skip) == 0 && ins == 120,
	   "120 rows through COPY");
	int same = 0;
	for (int i = 0; i < 120; i++) {
		char *lit = sym_PQescapeLiteral(auditdb_conn(db), big[i].id, 36);
		char *t = sym_PQescapeLiteral(auditdb_conn(db), odd[i % 8],
					      strlen(odd[i % 8]));
		snprintf(q, sizeof(q),
			 "SELECT target = %s FROM sandbox_operations WHERE id = %s",
			 t, lit);
		same += !strcmp(sql(db, q), "t");
		sym_PQfreemem(lit);
		sym_PQfreemem(t);
	}
	is_int(same, 120, "COPY keeps backslashes, tabs, newlines, \\N, \\.");
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes");
	auditdb_close(db);
}

/* A database with chain s1 of 10 rows (a gap in seq after the 5th) and
 * s2 of 3; rows[] s1's, seqs[] theirs. */
static struct auditdb *chain_db(struct audit_row rows[10], long long seqs[10])
{
	struct auditdb *db = open_db(newdb(), true);
	struct audit_row other[3];
	size_t ins, skip;
	char q[256];

	for (int i = 0; i < 10; i++)
		mkrow(&rows[i], "s1", 1700000000000000LL + i);
	for (int i = 0; i < 3; i++)
		mkrow(&other[i], "s2", 1700000000000000LL + i);
	insert(db, rows, 5, &ins, &skip);
	sql(db, "SELECT nextval(pg_get_serial_sequence('sandbox_operations', "
		"'seq')) FROM generate_series(1, 3)");
	insert(db, other, 3, &ins, &skip);
	insert(db, rows + 5, 5, &ins, &skip);
	for (int i = 0; i < 10; i++) {
		snprintf(q, sizeof(q),
			 "SELECT seq FROM sandbox_operations WHERE id = '%s'",
			 rows[i].id);
		seqs[i] = atoll(sql(db, q));
	}
	return db;
}

static void test_chain(void)
{
	struct audit_row rows[10];
	long long seqs[10], seq;
	char q[1024], id[64];
	struct auditdb *db;

	db = chain_db(rows, seqs);
	ok(verify(db, &seq, NULL, 0) == 0, "verify passes on an intact chain");
	snprintf(q, sizeof(q),
		 "UPDATE sandbox_operations SET target = '/etc/shadow' WHERE id = '%s'",
		 rows[4].id);
	sql(db, q);
	ok(verify(db, &seq, id, sizeof(id)) == 1 && seq == seqs[4] &&
		   !strcmp(id, rows[4].id),
	   "an edited target: caught at that row (seq %lld)", seq);
	auditdb_close(db);

	db = chain_db(rows, seqs);
	snprintf(q, sizeof(q), "DELETE FROM sandbox_operations WHERE id = '%s'",
		 rows[4].id);
	sql(db, q);
	ok(verify(db, &seq, id, sizeof(id)) == 1 && seq == seqs[5] &&
		   !strcmp(id, rows[5].id),
	   "a middle row deleted: caught at the row after it (seq %lld)", seq);
	auditdb_close(db);

	db = chain_db(rows, seqs);
	snprintf(q, sizeof(q),
		 "INSERT INTO sandbox_operations (id, seq, created_at, tenant, "
		 "session_key, runtime, op, target, ok, duration_ms, detail, hash) "
		 "OVERRIDING SYSTEM VALUE VALUES ('%s', %lld, now(), 'acme', 's1', "
		 "'python', 'read', '/x', true, 1, '', decode(repeat('11', 32), 'hex'))",
		 "99999999-0000-4000-8000-000000000001", seqs[4] + 1);
	sql(db, q);
	ok(verify(db, &seq, id, sizeof(id)) == 1 && seq == seqs[4] + 1 &&
		   !strcmp(id, "99999999-0000-4000-8000-000000000001"),
	   "a forged row in the middle: caught at it (seq %lld)", seq);
	auditdb_close(db);

	db = chain_db(rows, seqs);
	snprintf(q, sizeof(q), "DELETE FROM sandbox_operations WHERE id = '%s'",
		 rows[9].id);
	sql(db, q);
	ok(verify(db, &seq, id, sizeof(id)) == 1 && seq == seqs[9] &&
		   !strcmp(id, "null"),
	   "the last row deleted: the head names it (seq %lld)", seq);
	auditdb_close(db);
}

/*
 * The chain's encoding by version: rows written by an sbxcat of schema 1
 * (before rows said which encoding their hash is of) are version 1 after
 * the migration and still verify, as does a row inserted after it on the
 * same chain; a row of a version this sbxcat does not know is named by
 * verify, not taken as verified.
 */
static void test_versions(void)
{
	struct sbx_error *err = NULL;
	struct auditdb *db = open_db(newdb(), false);
	const struct auditdb_migration *m1 = &auditdb_migrations[0];
	struct audit_row r[3];
	unsigned char prev[32] = {0}, h[32];
	char q[2048], hx[65], want[256];
	size_t ins, skip;
	json_t *rep = NULL;
	int n = 0, rc;

	/* Schema 1, as migration 1 left it, and two rows as 0.1.0 wrote
	 * them: no hash_version, hashes of encoding 1. */
	is_str(sql(db, m1->sql), "", "migration 1 alone");
	snprintf(
	    q, sizeof(q),
	    "INSERT INTO schema_migrations (version, name) VALUES (1, '%s')",
	    m1->name);
	is_str(sql(db, q), "1", "... recorded");
	sql(db, "INSERT INTO audit_chains (session_key, tenant, head, nrows, "
		"swept_hash, swept_rows) VALUES ('old', 'acme', "
		"decode(repeat('00', 32), 'hex'), 0, decode(repeat('00', 32), "
		"'hex'), 0)");
	for (int i = 0; i < 2; i++) {
		mkrow(&r[i], "old", 1700000000000000LL + i);
		ok(audit_chain_hash(prev, &r[i], 1, h) == 0,
		   "row %d hashed with encoding 1", i);
		for (int k = 0; k < 32; k++)
			sprintf(hx + 2 * k, "%02x", h[k]);
		snprintf(q, sizeof(q),
			 "INSERT INTO sandbox_operations (id, created_at, "
			 "tenant, session_key, runtime, op, target, ok, bytes, "
			 "duration_ms, detail, hash) VALUES ('%s', "
			 "'epoch'::timestamptz + %lld * interval '1 "
			 "microsecond', 'acme', 'old', 'python', 'read', "
			 "'/work/a.txt', true, 10, 3, '', decode('%s', 'hex'))",
			 r[i].id, r[i].created_us, hx);
		is_str(sql(db, q), "1", "... inserted as schema 1 had it");
		memcpy(prev, h, 32);
	}
	snprintf(
	    q, sizeof(q),
	    "UPDATE audit_chains SET head = decode('%s', 'hex'), nrows = "
	    "2, head_seq = (SELECT max(seq) FROM sandbox_operations) WHERE "
	    "session_key = 'old'",
	    hx);
	sql(db, q);

	ok(auditdb_migrate(db, &n, &err) == 0 && n == auditdb_nmigrations - 1,
	   "the later migrations applied over it (%d)", n);
	sbx_error_free(&err);
	is_str(sql(db, "SELECT string_agg(hash_version::text, ',') FROM "
		       "sandbox_operations"),
	       "1,1", "the old rows are version 1");
	ok(verify(db, NULL, NULL, 0) == 0, "... and verify as such");
	mkrow(&r[2], "old", 1700000000000002LL);
	ok(insert(db, &r[2], 1, &ins, &skip) == 0 && ins == 1,
	   "a row more on the old chain");
	snprintf(want, sizeof(want), "1,1,%d", AUDIT_CHAIN_VERSION);
	is_str(sql(db, "SELECT string_agg(hash_version::text, ',' ORDER BY "
		       "seq) FROM sandbox_operations"),
	       want, "... hashed with the version of now");
	ok(verify(db, NULL, NULL, 0) == 0, "the chain verifies across them");

	snprintf(q, sizeof(q),
		 "UPDATE sandbox_operations SET hash_version = 99 WHERE id = "
		 "'%s'",
		 r[1].id);
	sql(db, q);
	rc = auditdb_verify(db, NULL, NULL, &rep, &err);
	{
		json_t *bad = json_array_get(json_object_get(rep, "bad"), 0);
		const char *why =
		    json_string_value(json_object_get(bad, "why"));
		const char *id = json_string_value(json_object_get(bad, "id"));

		ok(rc == 1 &&
		       json_array_size(json_object_get(rep, "bad")) == 1 &&
		       id && !strcmp(id, r[1].id) && why &&
		       strstr(why, "version 99") &&
		       strstr(why, "does not know"),
		   "a row of a version unknown: named by verify (%s)",
		   why	 ? why
		   : err ? err->msg
			 : "none");
	}
	json_decref(rep);
	sbx_error_free(&err);
	auditdb_close(db);
}

/*
 * Migration 4 over a schema-3 database holding rows (issue 29): the rows
 * of version 1 (a target with a backslash as version 1 cleaned it) still
 * verify; new rows carry wire_id and hash_version 2, and verify; a row of
 * an older spool line (version 1) is hashed with version 1; the wire
 * id's index was built concurrently and is valid, and an INVALID one left
 * by a failed concurrent build is dropped and made again.
 */
static void test_schema3(void)
{
	struct sbx_error *err = NULL;
	struct auditdb *db = open_db(newdb(), false);
	struct audit_row r[4];
	unsigned char prev[32] = {0}, h[32];
	char q[2048], hx[65];
	size_t ins, skip;
	int n = 0;

	for (int i = 0; i < 3; i++) {
		const struct auditdb_migration *m = &auditdb_migrations[i];

		is_str(sql(db, m->sql), "", "migration %d by hand", i + 1);
		snprintf(q, sizeof(q),
			 "INSERT INTO schema_migrations (version, name) VALUES "
			 "(%d, '%s')",
			 m->version, m->name);
		sql(db, q);
	}
	sql(db, "INSERT INTO audit_chains (session_key, tenant, head, nrows, "
		"swept_hash, swept_rows) VALUES ('k3', 'acme', "
		"decode(repeat('00', 32), 'hex'), 0, decode(repeat('00', 32), "
		"'hex'), 0)");
	for (int i = 0; i < 2; i++) {
		mkrow(&r[i], "k3", 1700000000000000LL + i);
		/* version 1's clean: a tab escaped, a backslash as it was */
		r[i].target = (char *)(i ? "tab\\there.txt" : "a\\b");
		audit_chain_hash(prev, &r[i], 1, h);
		memcpy(prev, h, 32);
		for (int k = 0; k < 32; k++)
			sprintf(hx + 2 * k, "%02x", h[k]);
		snprintf(
		    q, sizeof(q),
		    "INSERT INTO sandbox_operations (id, created_at, "
		    "tenant, session_key, runtime, op, target, ok, bytes, "
		    "duration_ms, detail, hash, hash_version) VALUES ('%s', "
		    "'epoch'::timestamptz + %lld * interval '1 "
		    "microsecond', 'acme', 'k3', 'python', 'read', "
		    "E'%s', true, 10, 3, '', decode('%s', 'hex'), 1)",
		    r[i].id, r[i].created_us, i ? "tab\\\\there.txt" : "a\\\\b",
		    hx);
		is_str(sql(db, q), "1", "a row of schema 3, version 1");
	}
	snprintf(q, sizeof(q),
		 "UPDATE audit_chains SET head = decode('%s', 'hex'), nrows = "
		 "2, head_seq = (SELECT max(seq) FROM sandbox_operations)",
		 hx);
	sql(db, q);
	/* A concurrent build that failed (a unique index over duplicates)
	 * under the new index's name, as an interrupted migrate leaves one:
	 * INVALID. */
	sql(db, "ALTER TABLE sandbox_operations ADD COLUMN wire_id text "
		"COLLATE \"C\"");
	sql(db, "CREATE UNIQUE INDEX CONCURRENTLY sandbox_operations_wire ON "
		"sandbox_operations (tenant)");
	is_str(sql(db, "SELECT indisvalid FROM pg_index WHERE indexrelid = "
		       "'sandbox_operations_wire'::regclass"),
	       "f", "a failed concurrent build left its index INVALID");

	ok(auditdb_migrate(db, &n, &err) == 0 && n == auditdb_nmigrations - 3,
	   "migration 4 (and those after it) applied over schema 3 (%d; %s)",
	   n, err ? err->msg : "ok");
	sbx_error_free(&err);
	is_str(sql(db, "SELECT concat_ws('|', i.indisvalid, i.indisunique, "
		       "pg_get_indexdef(i.indexrelid)) FROM pg_index i WHERE "
		       "i.indexrelid = 'sandbox_operations_wire'::regclass"),
	       "t|f|CREATE INDEX sandbox_operations_wire ON ONLY "
	       "public.sandbox_operations USING btree (wire_id, created_at, "
	       "seq)",
	       "the INVALID index dropped, the wire id's made, valid");
	{
		char v[16];

		snprintf(v, sizeof(v), "%d", auditdb_nmigrations);
		is_str(sql(db, "SELECT max(version) FROM schema_migrations"),
		       v, "recorded: the latest schema");
	}
	ok(auditdb_migrate(db, &n, &err) == 0 && n == 0, "migrate again: none");
	sbx_error_free(&err);
	ok(verify(db, NULL, NULL, 0) == 0,
	   "the rows of version 1 verify after it");

	mkrow(&r[2], "k3", 1700000000000005LL);
	r[2].wire_id = (char *)"xc-rc1";
	r[2].target = (char *)"tab\\\\there.txt"; /* version 2's clean */
	r[2].op = AUDIT_REMOVE;
	mkrow(&r[3], "k3", 1700000000000006LL);
	r[3].version = 1; /* an old spool line replayed */
	r[3].target = (char *)"a\\b";
	ok(insert(db, &r[2], 2, &ins, &skip) == 0 && ins == 2,
	   "a new row (wire id, op remove) and an old spool line's");
	is_str(sql(db, "SELECT string_agg(concat_ws(':', hash_version, "
		       "coalesce(wire_id, '-'), op, target), ',' ORDER BY seq) "
		       "FROM sandbox_operations"),
	       "1:-:read:a\\b,1:-:read:tab\\there.txt,"
	       "2:xc-rc1:remove:tab\\\\there.txt,1:-:read:a\\b",
	       "hash_version 2 and its wire_id; the spool line's version 1");
	ok(verify(db, NULL, NULL, 0) == 0, "the chain verifies across them");
	{
		json_t *rep = NULL;
		int rc = auditdb_verify(db, "xc-rc1", NULL, &rep, &err);

		ok(rc == 0 &&
		       json_integer_value(json_object_get(rep, "chains")) == 1,
		   "verify --session by the wire id: its key's chain");
		json_decref(rep);
		sbx_error_free(&err);
	}
	sql(db, "UPDATE sandbox_operations SET wire_id = 'xc-other' WHERE "
		"wire_id = 'xc-rc1'");
	ok(verify(db, NULL, NULL, 0) == 1,
	   "version 2 covers wire_id: changed, the chain breaks");
	auditdb_close(db);
}

static void test_agent_delete(void)
{
	struct auditdb *db = open_db(newdb(), true);
	struct audit_row r[4];
	size_t ins, skip;

	for (int i = 0; i < 4; i++) {
		mkrow(&r[i], "s1", 1700000000000000LL + i);
		r[i].agent = (char *)"ag1";
		r[i].run = (char *)"run1";
	}
	insert(db, r, 4, &ins, &skip);
	is_str(sql(db, "DELETE FROM agents WHERE id = 'ag1'"), "1",
	       "the agent deleted");
	is_str(sql(db, "SELECT concat_ws('|', count(*) FILTER (WHERE agent_id "
		       "IS NULL), count(*) FILTER (WHERE agent_ref = 'ag1'), "
		       "(SELECT count(*) FROM runs WHERE agent_id IS NULL)) FROM "
		       "sandbox_operations"),
	       "4|4|1", "its rows stay with agent_id NULL, agent_ref kept");
	ok(verify(db, NULL, NULL, 0) == 0, "verify still passes");
	auditdb_close(db);
}

static void test_sweep(void)
{
	struct auditdb *db = open_db(newdb(), true);
	struct sbx_error *err = NULL;
	long long now = now_us(), old = now - 100LL * 86400 * 1000000;
	struct audit_row a[30], b[3], c[2];
	struct auditdb_swept sw;
	size_t ins, skip;

	for (int i = 0; i < 30; i++)
		mkrow(&a[i], "sa", i < 25 ? old + i : now + i);
	/* b: old, new, old (a replayed row arrives late): one held */
	mkrow(&b[0], "sb", old);
	mkrow(&b[1], "sb", now);
	mkrow(&b[2], "sb", old + 5);
	for (int i = 0; i < 2; i++)
		mkrow(&c[i], "sc", now);
	insert(db, a, 30, &ins, &skip);
	insert(db, b, 3, &ins, &skip);
	insert(db, c, 2, &ins, &skip);
	int rc = auditdb_sweep(db, now - 30LL * 86400 * 1000000, 10, &sw, &err);
	ok(rc == 0, "sweep: %s", err ? err->msg : "ok");
	sbx_error_free(&err);
	is_int((long long)sw.deleted, 26,
	       "exactly the old prefix rows removed");
	is_int((long long)sw.held, 1, "the old row behind a newer one held");
	is_str(sql(db, "SHOW statement_timeout"), "30s",
	       "after the sweep the session's statement timeout is 30 s again");
	is_str(sql(db, "SELECT concat_ws('|', (SELECT count(*) FROM "
		       "sandbox_operations), (SELECT string_agg(session_key || ':' "
		       "|| nrows || ':' || swept_rows, ',' ORDER BY session_key) "
		       "FROM audit_chains))"),
	       "9|sa:5:25,sb:2:1,sc:2:0", "rows left, chains' counts");
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes after the sweep");
	struct audit_row more;
	mkrow(&more, "sa", now + 100);
	insert(db, &more, 1, &ins, &skip);
	ok(verify(db, NULL, NULL, 0) == 0, "and after a row more");
	ok(auditdb_sweep(db, now + 1000000000LL, 4, &sw, &err) == 0 &&
	       sw.deleted == 10 && sw.held == 0,
	   "sweeping everything (%llu, %llu)", sw.deleted, sw.held);
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes on emptied chains");
	sql(db, "UPDATE audit_chains SET swept_hash = decode(repeat('22', 32), 'hex') "
		"WHERE session_key = 'sa'");
	ok(verify(db, NULL, NULL, 0) == 1, "an emptied chain's head is checked");
	auditdb_close(db);
}

/* Day partitions for the UTC days from..to days before today (migrate
 * makes yesterday's to a week ahead). */
static void make_days(struct auditdb *db, int from, int to)
{
	char q[256];

	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM generate_series(%d, %d) k, LATERAL "
		 "sbxcat_audit_day('sandbox_operations', (now() AT TIME ZONE "
		 "'UTC')::date - k)",
		 from, to);
	sql(db, q);
}

#define TS "('epoch'::timestamptz + %lld * interval '1 microsecond')"
#define DAY_US (86400LL * 1000000)

/* The day partitions whose days end by the cutoff. */
static const char *days_before(struct auditdb *db, long long cutoff)
{
	char q[512];

	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON "
		 "c.oid = i.inhrelid WHERE i.inhparent = "
		 "'sandbox_operations'::regclass AND c.relname ~ "
		 "'^sandbox_operations_[0-9]{8}$' AND (to_date(right("
		 "c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE "
		 "'UTC' <= " TS,
		 cutoff);
	return sql(db, q);
}

/* The rows older than the cutoff. */
static const char *old_rows(struct auditdb *db, long long cutoff)
{
	char q[256];

	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM sandbox_operations WHERE created_at "
		 "< " TS,
		 cutoff);
	return sql(db, q);
}

static int sweep(struct auditdb *db, long long cutoff, struct auditdb_swept *sw)
{
	struct sbx_error *err = NULL;
	int rc = auditdb_sweep(db, cutoff, 1000, sw, &err);

	if (rc < 0) {
		diag("sweep: %s", err->msg);
		sbx_error_free(&err);
	}
	return rc;
}

/*
 * Rows over eleven days in chains that cross days, a cutoff 5 days ago:
 * the five oldest days dropped whole, the cutoff's own day and the
 * default partition's old rows row by row, the chains' counts and
 * anchors right, verify before and after.
 */
static void test_sweep_days(void)
{
	struct auditdb *db = open_db(newdb(), true);
	long long now = now_us(), cutoff = now - 5 * DAY_US;
	struct audit_row r[200];
	struct auditdb_swept sw;
	char names[512] = "", q[1024];
	size_t n = 0, ins, skip;
	long long old = 0;
	int rc;

	make_days(db, 2, 10);
	/* Oldest first, so seq follows time.  x5's first rows are 20 days
	 * old: no day of theirs, the default partition holds them. */
	for (int j = 0; j < 3; j++)
		mkrow(&r[n++], "x5", now - 20 * DAY_US + j);
	for (int k = 10; k >= 0; k--)
		for (int j = 0; j < 4; j++) {
			long long t = now - k * DAY_US - (4 - j) * 1000;

			mkrow(&r[n++], "x1", t);
			if (k <= 8 && k >= 3)
				mkrow(&r[n++], "x2", t + 1);
			if (k >= 7)
				mkrow(&r[n++], "x3", t + 2);
			if (k == 0 || k == 9)
				mkrow(&r[n++], "x5", t + 3);
		}
	for (int j = 0; j < 3; j++)
		mkrow(&r[n++], "x4", now + j);
	for (size_t i = 0; i < n; i++)
		old += r[i].created_us < cutoff;
	ok(insert(db, r, n, &ins, &skip) == 0 && ins == n, "%zu rows in", n);
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes before");
	is_str(days_before(db, cutoff), "5",
	       "five day partitions end by the cutoff");
	is_str(sql(db, "SELECT count(*) FROM sandbox_operations_default"), "3",
	       "x5's oldest rows sit in the default partition");
	snprintf(
	    q, sizeof(q),
	    "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM "
	    "pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE "
	    "i.inhparent = 'sandbox_operations'::regclass AND c.relname "
	    "~ '^sandbox_operations_[0-9]{8}$' AND (to_date(right("
	    "c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC' "
	    "<= " TS,
	    cutoff);
	snprintf(names, sizeof(names), "%s", sql(db, q));

	ok(sweep(db, cutoff, &sw) == 0, "sweep");
	is_int((long long)sw.days, 5, "five days dropped whole");
	is_int((long long)(sw.days_split + sw.days_busy), 0,
	       "none split, none busy");
	is_int((long long)sw.deleted, old,
	       "every row older than the cutoff counted");
	is_int((long long)sw.held, 0, "none held");
	is_str(days_before(db, cutoff), "0",
	       "no day partition ending by the cutoff is left (pg_inherits)");
	{
		char *save = xstrdup(names), *tok, *sp = NULL;
		int gone = 0, all = 0;

		for (tok = strtok_r(save, ",", &sp); tok;
		     tok = strtok_r(NULL, ",", &sp)) {
			char t[160];

			snprintf(t, sizeof(t),
				 "SELECT to_regclass('%s') IS NULL", tok);
			all++;
			gone += !strcmp(sql(db, t), "t");
		}
		ok(all == 5 && gone == 5,
		   "their tables are gone (%d of %d: %s)", gone, all, names);
		free(save);
	}
	is_str(old_rows(db, cutoff), "0",
	       "no row older than the cutoff is left");
	snprintf(q, sizeof(q), "%zu", n - (size_t)old);
	is_str(sql(db, "SELECT count(*) FROM sandbox_operations"), q,
	       "every row from the cutoff on is kept");
	is_str(sql(db, "SELECT count(*) FROM sandbox_operations_default"), "0",
	       "the default partition's old rows swept row by row");
	is_str(sql(db, "SELECT count(*) FROM audit_chains c WHERE c.nrows <> "
		       "(SELECT count(*) FROM sandbox_operations o WHERE "
		       "o.session_key = c.session_key)"),
	       "0", "each chain's nrows is its rows left");
	snprintf(q, sizeof(q), "%lld", old);
	is_str(sql(db, "SELECT sum(swept_rows) FROM audit_chains"), q,
	       "the chains' swept_rows add up to the rows removed");
	is_str(sql(db, "SELECT string_agg(session_key || ':' || nrows || ':' "
		       "|| swept_rows, ',' ORDER BY session_key) FROM "
		       "audit_chains"),
	       "x1:20:24,x2:8:16,x3:0:16,x4:3:0,x5:4:7", "each chain's counts");
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes after");
	{
		struct audit_row m[3];

		mkrow(&m[0], "x1", now_us());
		mkrow(&m[1], "x3", now_us());
		mkrow(&m[2], "x2", now_us());
		insert(db, m, 3, &ins, &skip);
	}
	ok(verify(db, NULL, NULL, 0) == 0, "and after more rows");
	rc = sweep(db, cutoff, &sw);
	ok(rc == 0 && sw.deleted == 0 && sw.days == 0 && sw.held == 0,
	   "a second sweep finds nothing (%llu rows, %llu days)", sw.deleted,
	   sw.days);
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes after it");
	auditdb_close(db);
}

/*
 * A replayed row (its created_at days old, its seq the chain's newest)
 * in an old day: that day is not dropped (it would cut the chain in its
 * middle) but goes row by row, the row held; the days around it drop.
 */
static void test_sweep_replay(void)
{
	struct auditdb *db = open_db(newdb(), true);
	long long now = now_us(), cutoff = now - 5 * DAY_US;
	struct audit_row r[24], late;
	struct auditdb_swept sw;
	size_t n = 0, ins, skip;
	int rc;

	make_days(db, 2, 10);
	for (int j = 0; j < 3; j++) {
		mkrow(&r[n++], "r1", now - 8 * DAY_US + j);
		mkrow(&r[n++], "r2", now - 8 * DAY_US + j);
	}
	for (int j = 0; j < 3; j++)
		mkrow(&r[n++], "r1", now - 7 * DAY_US + j);
	for (int j = 0; j < 2; j++)
		mkrow(&r[n++], "r1", now + j);
	/* r3: two rows 9 days old, two 8 days old, then its own late row
	 * of 9 days ago, then one of now. */
	for (int j = 0; j < 2; j++) {
		mkrow(&r[n++], "r3", now - 9 * DAY_US + j);
		mkrow(&r[n++], "r3", now - 8 * DAY_US + 10 + j);
	}
	insert(db, r, n, &ins, &skip);
	mkrow(&r[0], "r3", now - 9 * DAY_US + 50);
	mkrow(&r[1], "r3", now);
	insert(db, r, 2, &ins, &skip);
	/* Sent late by a spool: the newest seq of r1, 9 days old. */
	mkrow(&late, "r1", now - 9 * DAY_US);
	insert(db, &late, 1, &ins, &skip);
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes before");
	ok(sweep(db, cutoff, &sw) == 0, "sweep");
	/* 9 days ago: late rows (r1's, r3's); 8 days ago: r3's rows of 9
	 * days ago come first; 7 days ago: r1's rows of 8 days ago do. */
	is_int((long long)sw.days_split, 3,
	       "the late rows' day and the days their chains cross go row by "
	       "row");
	is_int((long long)sw.days, 2, "the empty days are dropped");
	is_int((long long)sw.deleted, 14, "the other old rows removed");
	is_int((long long)sw.held, 1, "r1's late row held");
	is_str(old_rows(db, cutoff), "1",
	       "only it is left older than the cutoff");
	is_str(sql(db, "SELECT string_agg(session_key || ':' || nrows || ':' "
		       "|| swept_rows, ',' ORDER BY session_key) FROM "
		       "audit_chains"),
	       "r1:3:6,r2:0:3,r3:1:5", "each chain's counts");
	ok(verify(db, NULL, NULL, 0) == 0,
	   "verify passes after: nothing broken");
	rc = sweep(db, cutoff, &sw);
	ok(rc == 0 && sw.days_split == 1 && sw.deleted == 0 && sw.held == 1 &&
	       sw.days == 2,
	   "swept again: the late row's day split, the row held again, the "
	   "days emptied dropped (%llu, %llu)",
	   sw.days_split, sw.days);
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes");
	auditdb_close(db);
}

/*
 * Another connection reading the table (its lock held in an open
 * transaction): the day is left to the next sweep within the lock
 * timeout, its rows go row by row; the next sweep drops the day.
 */
static void test_sweep_lock(void)
{
	const char *url = newdb();
	struct auditdb *db = open_db(url, true), *other = open_db(url, false);
	long long now = now_us(), cutoff = now - 2 * DAY_US, t0;
	struct audit_row r[6];
	struct auditdb_swept sw;
	size_t ins, skip;
	int rc;

	make_days(db, 3, 3);
	for (int j = 0; j < 4; j++)
		mkrow(&r[j], "l1", now - 3 * DAY_US + j);
	for (int j = 4; j < 6; j++)
		mkrow(&r[j], "l1", now + j);
	insert(db, r, 6, &ins, &skip);
	sql(other, "BEGIN");
	is_str(sql(other, "SELECT count(*) FROM sandbox_operations"), "6",
	       "another connection reads the table in an open transaction");
	t0 = now_us();
	ok(sweep(db, cutoff, &sw) == 0, "sweep");
	t0 = now_us() - t0;
	ok(t0 < 12LL * 1000000, "it returned in %lld ms (lock timeout 5 s)",
	   t0 / 1000);
	ok(sw.days_busy == 1 && sw.days == 0,
	   "the day is left to the next sweep (busy %llu, dropped %llu)",
	   sw.days_busy, sw.days);
	is_int((long long)sw.deleted, 4, "its rows went row by row");
	sql(other, "COMMIT");
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes");
	rc = sweep(db, cutoff, &sw);
	ok(rc == 0 && sw.days == 1 && sw.deleted == 0,
	   "the lock gone, the next sweep drops the (empty) day (%llu)",
	   sw.days);
	is_str(sql(db, "SELECT string_agg(session_key || ':' || nrows || ':' "
		       "|| swept_rows, ',' ORDER BY session_key) FROM "
		       "audit_chains"),
	       "l1:2:4", "the chain's counts");
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes");
	auditdb_close(other);
	auditdb_close(db);
}

/*
 * Random chains over twelve days with rows sent late (old created_at,
 * new seq) among them, swept with a cutoff a day later each round, rows
 * added between: after each sweep every chain verifies, nothing older
 * than the cutoff is left but the rows held (the sweep's count is the
 * table's), and the chains' counts are their rows.
 */
static void test_sweep_fuzz(void)
{
	struct auditdb *db = open_db(newdb(), true);
	const char *chains[] = {"f1", "f2", "f3", "f4", "f5"};
	long long now = now_us();
	unsigned seed = (unsigned)getpid();
	struct auditdb_swept sw;
	struct audit_row r[40];
	size_t ins, skip;
	int bad = 0, rounds = 0;

	make_days(db, 2, 12);
	diag("sweep fuzz seed %u", seed);
	srand(seed);
	for (int round = 11; round >= 3; round--) {
		long long cutoff = now - round * DAY_US;
		char q[64], held[32];
		size_t n = 0;

		/* Rows of the days before the round's cutoff and after it, in
		 * time order, then a few late ones. */
		for (int k = 12; k >= 0; k--)
			for (int j = rand() % 3; j > 0; j--, n++)
				mkrow(&r[n], chains[rand() % 5],
				      now - k * DAY_US + (long long)n);
		for (int j = rand() % 3; j > 0; j--)
			mkrow(&r[n++], chains[rand() % 5],
			      now - (rand() % 12) * DAY_US - 7);
		if (insert(db, r, n, &ins, &skip) < 0 || sweep(db, cutoff, &sw) < 0) {
			bad++;
			break;
		}
		snprintf(held, sizeof(held), "%llu", sw.held);
		snprintf(q, sizeof(q), "%s", old_rows(db, cutoff));
		if (verify(db, NULL, NULL, 0) != 0 || strcmp(q, held) ||
		    strcmp(sql(db, "SELECT count(*) FROM audit_chains c WHERE "
				   "c.nrows <> (SELECT count(*) FROM "
				   "sandbox_operations o WHERE o.session_key "
				   "= c.session_key)"),
			   "0")) {
			diag("round %d: old rows %s, held %s", round, q, held);
			bad++;
		}
		rounds++;
	}
	ok(!bad && rounds == 9,
	   "9 rounds of random rows and late rows swept: chains verify, "
	   "only held rows are old, counts right (%d bad)",
	   bad);
	auditdb_close(db);
}

/* An empty database: nothing to drop, nothing deleted. */
static void test_sweep_empty(void)
{
	struct auditdb *db = open_db(newdb(), true);
	struct auditdb_swept sw;

	ok(sweep(db, now_us() - 5 * DAY_US, &sw) == 0 && sw.deleted == 0 &&
	       sw.days == 0 && sw.held == 0,
	   "an empty database: nothing");
	/* today's start: yesterday's day ends there */
	ok(sweep(db, now_us() / DAY_US * DAY_US, &sw) == 0 && sw.days == 1 &&
	       sw.deleted == 0,
	   "a cutoff at today's start: yesterday's empty day dropped");
	ok(verify(db, NULL, NULL, 0) == 0, "verify passes");
	auditdb_close(db);
}

static void test_concurrent(void)
{
	const char *url = newdb();
	struct auditdb *db = open_db(url, true);
	int fails = 0;
	pid_t pid[4];

	auditdb_close(db); /* the children would inherit it */

	for (int k = 0; k < 4; k++) {
		pid[k] = fork();
		if (pid[k] == 0) {
			struct auditdb *cdb = open_db(url, false);
			struct audit_row r[5];
			size_t ins, skip;
			idn = (unsigned long long)(k + 1) << 32;
			for (int i = 0; i < 200; i += 5) {
				for (int j = 0; j < 5; j++)
					mkrow(&r[j], "shared", now_us());
				if (insert(cdb, r, 5, &ins, &skip) < 0 || ins != 5)
					_exit(1);
			}
			auditdb_close(cdb);
			_exit(0);
		}
	}
	for (int k = 0; k < 4; k++) {
		int st;
		waitpid(pid[k], &st, 0);
		fails += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	db = open_db(url, false);
	is_int(fails, 0, "4 writers x 200 rows on one session");
	is_str(sql(db, "SELECT concat_ws('|', nrows, (SELECT count(*) FROM "
		       "sandbox_operations)) FROM audit_chains"),
	       "800|800", "800 rows, one chain");
	ok(verify(db, NULL, NULL, 0) == 0, "the chain is intact");
	auditdb_close(db);
}

static void test_speed(void)
{
	struct auditdb *db = open_db(newdb(), true);
	enum { BATCH = 10000, TOTAL = 100000 };
	struct audit_row *r = xcalloc(BATCH, sizeof(*r));
	size_t ins, skipped, total = 0;
	char sess[8][16];
	long long t0;

	for (int s = 0; s < 8; s++)
		snprintf(sess[s], sizeof(sess[s]), "speed-%d", s);
	t0 = now_us();
	for (int b = 0; b < TOTAL / BATCH; b++) {
		for (int i = 0; i < BATCH; i++) {
			mkrow(&r[i], sess[i % 8], now_us());
			r[i].agent = (char *)"bench-agent";
			r[i].run = (char *)(i % 2 ? "run-a" : "run-b");
		}
		if (insert(db, r, BATCH, &ins, &skipped) == 0)
			total += ins;
	}
	double secs = (double)(now_us() - t0) / 1e6;
	double rate = (double)total / secs;
	diag("inserted %zu rows in %.2f s: %.0f rows/s", total, secs, rate);
	is_int((long long)total, TOTAL, "100000 rows in batches of 10000");
	/* The rate is the benchmark's to judge (bench/bench-audit.sh, beside
	 * psql): a shared machine makes a timed test a coin toss. */
	t0 = now_us();
	ok(verify(db, NULL, NULL, 0) == 0, "verify of 100000 rows passes");
	diag("verify: %.2f s", (double)(now_us() - t0) / 1e6);
	free(r);
	auditdb_close(db);
}

static void test_password(void)
{
	static const char *const bad[] = {
		"host=/nonexistent-sbxcat user=u password=hunter2secret",
		"host=/nonexistent-sbxcat password = 'hunter2secret' junk",
		"postgresql://u:hunter2secret@/db?host=/nonexistent-sbxcat",
		"postgresql://u@/db?host=/nonexistent-sbxcat&password=hunter2secret",
		"host=/nonexistent-sbxcat password=hunter2secret port=notaport",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sbx_error *err = NULL;
		struct auditdb *db = NULL;
		int rc = auditdb_connect(bad[i], NULL, &db, &err);
		ok(rc < 0 && tap_status(err) == 3 &&
			   !strncmp(err->msg, "database unreachable: ", 22) &&
			   !strstr(err->msg, "hunter2") && !strchr(err->msg, '\n'),
		   "unreachable %zu: %s", i, err ? err->msg : "(none)");
		sbx_error_free(&err);
	}
}

/*
 * A connection started, then the caller busy for longer than the connect
 * timeout (a container made under load), then finished: the timeout
 * counts the wait, not the caller's work, so it connects.
 */
static void test_slow_caller(void)
{
	struct sbx_error *err = NULL;
	struct auditdb *db = NULL;
	int rc;

	/* A 2 s connect timeout, as PGCONNECT_TIMEOUT=2 configures it. */
	rc = auditdb_connect_start(urls[0], "2", &db, &err);
	ok(rc == 0, "connect started");
	sleep(3);
	rc = rc == 0 ? auditdb_connect_finish(db, &err) : -1;
	ok(rc == 0, "finished 3 s later, past a 2 s connect timeout: %s",
	   err ? err->msg : "connected");
	sbx_error_free(&err);
	auditdb_close(db);
}

int main(int argc, char **argv)
{
	struct sbx_error *err = NULL;

	if (argc < 2)
		skip_all("run by t-auditdb.sh (it starts the test-bed database)");
	if (pq_dl_load(&err) < 0)
		bail_out("libpq5 cannot be loaded (scripts/deps.sh installs "
			 "it): %s", err->msg);
	urls = argv + 1;
	nurls = argc - 1;
	test_password();
	test_slow_caller();
	test_migrate();
	test_migrate_race();
	test_insert();
	test_chain();
	test_versions();
	test_schema3();
	test_agent_delete();
	test_sweep();
	test_sweep_days();
	test_sweep_replay();
	test_sweep_lock();
	test_sweep_empty();
	test_sweep_fuzz();
	test_concurrent();
	test_speed();
	return done_testing();
}

/*
 * t-threads.c - the operations (svc/) driven from many threads at once,
 * as the service will drive them: each of T_THREADS threads opens
 * sessions of a tenant of its own, writes a file, reads it back, runs a
 * command that prints it, greps and lists the workspace, and closes the
 * session with its files; all at once, against the real engine and
 * database tests/t-threads.sh sets up.  Under ThreadSanitizer (make
 * check-tsan) any race it reports fails the run.
 *
 *   t-threads CATALOG RUNTIME ROUNDS
 *
 * The configuration comes from the environment, read once, as sbxcat's
 * main reads it.  Prints TAP; the script checks the rows after.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/env.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "catalog/catalog.h"
#include "svc/svc-exec.h"
#include "svc/svc-fs.h"
#include "svc/svc-session.h"
#include "svc/svc.h"
#include "tap.h"

#define T_THREADS 8

static struct svc S;
static struct catalog CAT;
static const char *RUNTIME, *TMPDIR_;
static int ROUNDS;
static atomic_int never; /* a cancel flag nobody raises */

struct worker {
	int id;
	pthread_t th;
	int done;	  /* rounds that went through */
	char failed[512]; /* the first failure, or "" */
};

static void fail(struct worker *w, const char *what, struct sbx_error **err)
{
	if (!w->failed[0])
		snprintf(w->failed, sizeof(w->failed), "%s: %s", what,
			 err && *err ? (*err)->msg : "wrong result");
	if (err)
		sbx_error_free(err);
}

/* A sink into a strbuf (exec's stdout). */
static int to_buf(void *arg, const void *buf, size_t len,
		  struct sbx_error **err)
{
	(void)err;
	strbuf_add(arg, buf, len);
	return 0;
}

static int count(void *arg, const void *e, struct sbx_error **err)
{
	(void)e, (void)err;
	(*(size_t *)arg)++;
	return 0;
}

static int count_entry(void *arg, const struct walk_entry *e,
		       struct sbx_error **err)
{
	return count(arg, e, err);
}

static int count_match(void *arg, const struct grep_match *m,
		       struct sbx_error **err)
{
	return count(arg, m, err);
}

/* One round: open, write, read, exec, grep, ls, close.  0 when all went
 * as they must. */
static int round_of(struct worker *w, int r, const struct svc_call *call)
{
	struct sbx_error *err = NULL;
	char subject[64], text[128], path[4096];
	struct svc_session_open_req oreq = {0};
	struct svc_session_open_res ores;
	char key[SESSION_KEY_MAX + 1];
	int fd, rc = -1;

	snprintf(subject, sizeof(subject), "subject-%d-%d", w->id, r);
	snprintf(text, sizeof(text), "hello from thread %d round %d\n", w->id,
		 r);
	oreq.scope = "run";
	oreq.subject = subject;
	oreq.cat = &CAT;
	oreq.runtime = RUNTIME;
	if (svc_session_open(&S, call, &oreq, &ores, &err) < 0) {
		fail(w, "open", &err);
		svc_session_open_res_release(&ores);
		return -1;
	}
	memcpy(key, ores.key, sizeof(key));
	svc_session_open_res_release(&ores);

	/* write: its bytes from a file of the thread's own */
	snprintf(path, sizeof(path), "%s/in-%d-%d", TMPDIR_, w->id, r);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || close(fd) < 0) {
		fail(w, "the input file", NULL);
		goto close;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	{
		struct svc_fs_write_req req = {.key = key,
					       .path = "notes/f.txt",
					       .in_fd = fd};
		struct svc_fs_write_res res;

		rc = svc_fs_write(&S, call, &req, &res, &err);
		if (rc == 0 && res.bytes != strlen(text))
			rc = -1;
		svc_fs_write_res_release(&res);
		close(fd);
		unlink(path);
		if (rc < 0) {
			fail(w, "write", &err);
			goto close;
		}
	}
	/* read */
	{
		struct svc_fs_read_req req = {.key = key,
					      .path = "notes/f.txt"};
		struct svc_fs_read_res res;

		rc = svc_fs_read(&S, call, &req, &res, &err);
		if (rc == 0 && (!res.text || !memmem(res.text, res.len, text,
						     strlen(text) - 1)))
			rc = -1;
		svc_fs_read_res_release(&res);
		if (rc < 0) {
			fail(w, "read", &err);
			goto close;
		}
	}
	/* exec: the command prints the file */
	{
		struct strbuf out = STRBUF_INIT;
		char *argv[] = {(char *)"cat", (char *)"notes/f.txt", NULL};
		struct svc_exec_req req = {
		    .key = key,
		    .argv = argv,
		    .argc = 2,
		    .in_fd = -1,
		    .out = {.fd = -1, .write = to_buf, .arg = &out},
		    .err = {.fd = -1, .write = to_buf, .arg = &out},
		    .timeout_ms = 30000,
		};
		struct svc_exec_res res;

		rc = svc_exec(&S, call, &req, &res, &err);
		if (rc == 0 && (res.end != SVC_EXEC_EXITED || res.exit_code ||
				strcmp(strbuf_str(&out), text) != 0))
			rc = -1;
		svc_exec_res_release(&res);
		strbuf_release(&out);
		if (rc < 0) {
			fail(w, "exec", &err);
			goto close;
		}
	}
	/* grep and ls */
	{
		size_t n = 0;
		struct svc_fs_grep_req req = {.key = key,
					      .pattern = "hello from thread",
					      .fixed = true,
					      .match = count_match,
					      .arg = &n};
		struct svc_fs_grep_res res;

		rc = svc_fs_grep(&S, call, &req, &res, &err);
		if (rc == 0 && n != 1)
			rc = -1;
		svc_fs_grep_res_release(&res);
		if (rc < 0) {
			fail(w, "grep", &err);
			goto close;
		}
	}
	{
		size_t n = 0;
		struct svc_fs_ls_req req = {.key = key,
					    .recursive = true,
					    .entry = count_entry,
					    .arg = &n};
		struct svc_fs_ls_res res;

		rc = svc_fs_ls(&S, call, &req, &res, &err);
		if (rc == 0 && n < 2) /* notes/ and notes/f.txt */
			rc = -1;
		svc_fs_ls_res_release(&res);
		if (rc < 0) {
			fail(w, "ls", &err);
			goto close;
		}
	}
	rc = 0;
close: {
	struct svc_session_close_req req = {.key = key, .purge = true};
	struct svc_session_close_res res;

	if (svc_session_close(&S, call, &req, &res, &err) < 0) {
		fail(w, "close", &err);
		rc = -1;
	}
	svc_session_close_res_release(&res);
}
	return rc;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char tenant[32], run[32];
	struct svc_call call = {0};

	snprintf(tenant, sizeof(tenant), "tenant%d", w->id);
	snprintf(run, sizeof(run), "run-%d", w->id);
	call.tenant = tenant;
	call.agent = "t-threads";
	call.run = run;
	call.cancel = &never;
	for (int r = 0; r < ROUNDS; r++) {
		if (round_of(w, r, &call) < 0)
			break;
		w->done++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	extern char **environ;
	struct sbx_env env;
	struct sbx_error *err = NULL;
	struct worker w[T_THREADS];

	if (argc != 4)
		bail_out("usage: t-threads CATALOG RUNTIME ROUNDS");
	xjson_init();
	RUNTIME = argv[2];
	ROUNDS = atoi(argv[3]);
	TMPDIR_ = getenv("T_THREADS_DIR") ? getenv("T_THREADS_DIR") : "/tmp";
	sbx_env_capture(&env, environ);
	svc_init(&S, &env);
	catalog_init(&CAT);
	if (catalog_load(&CAT, argv[1], &err) < 0 || !catalog_valid(&CAT))
		bail_out("catalogue %s: %s", argv[1], err ? err->msg : "invalid");

	for (int i = 0; i < T_THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		if (pthread_create(&w[i].th, NULL, work, &w[i]) != 0)
			bail_out("pthread_create");
	}
	for (int i = 0; i < T_THREADS; i++)
		pthread_join(w[i].th, NULL);
	for (int i = 0; i < T_THREADS; i++) {
		is_int(w[i].done, ROUNDS,
		       "thread %d: every round opened, wrote, read, ran, "
		       "grepped, listed and closed",
		       i);
		if (w[i].failed[0])
			diag("thread %d: %s", i, w[i].failed);
	}
	catalog_release(&CAT);
	svc_release(&S);
	sbx_env_release(&env);
	return done_testing();
}

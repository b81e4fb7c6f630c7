/*
 * svc-interp.c - persistent Python interpreters (svc-interp.h): the
 * driver's exec on a thread of its own, the reply lines read back under
 * their bounds, an execution's wait, deadline and row.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/text.h"
#include "basic/xjson.h"
#include "session/session.h"
#include "svc/svc-exec.h"
#include "svc/svc-interp.h"
#include "svc/svc-wire.h"

/* The driver, made from interp-driver.py at build time. */
static const char driver[] =
#include "svc/interp-driver.inc"
    ;

/*
 * What the exec runs: the driver comes on stdin (its length on a line,
 * then its bytes), so the command line, which the exec's row records,
 * stays short.  -c puts the current directory first on sys.path: taken
 * off before the driver imports anything (a json.py of the workspace
 * must not be the driver's json), put back for the code.
 */
#define BOOTSTRAP                                                              \
	"import sys;del sys.path[0];"                                          \
	"exec(sys.stdin.buffer.read(int(sys.stdin.buffer.readline())))"

/* How long the driver may take to say it is ready (the engine's start, a
 * cold python). */
#define READY_MS 30000
/* An interrupted execution that has not ended after this is stopped with
 * its interpreter. */
#define GRACE_MS 3000
/* A request is written within this, else the interpreter is stuck. */
#define WRITE_MS 5000
/* The longest the interpreter's exec may live; the driver ends itself
 * when idle long before. */
#define LIFETIME_MS (7ULL * 86400 * 1000)

struct line_q {
	json_t **v;
	size_t n, cap, head;
};

struct svc_interp {
	const struct svc *s;
	pthread_t th;
	bool th_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_int cancel; /* the exec's */
	int in_r, in_w;	   /* the exec's stdin: it reads in_r, we write in_w */

	char *key, *tenant, *agent, *run, *cwd_env;
	char **env;
	size_t nenv;
	char *runtime, *wire_id;
	void (*warn)(void *arg, const char *msg);
	void *warn_arg;

	/* The reply lines: the partial line, or skipping a long one. */
	struct strbuf part;
	bool skipping;

	/* Under mu. */
	bool ready, ended, failed_cwd;
	int exit_code;
	bool by_command;
	unsigned long long seq; /* of the execution running, 0: none */
	bool done;		/* its end line came */
	struct line_q q;
	unsigned long long bytes, other, max_output;
	bool cut, raised;
};

static void q_push(struct line_q *q, json_t *j)
{
	if (q->head + q->n == q->cap) {
		if (q->head) {
			memmove(q->v, q->v + q->head, q->n * sizeof(*q->v));
			q->head = 0;
		} else {
			q->cap = q->cap ? 2 * q->cap : 16;
			q->v = xrealloc(q->v, q->cap * sizeof(*q->v));
		}
	}
	q->v[q->head + q->n++] = j;
}

static json_t *q_pop(struct line_q *q)
{
	json_t *j;

	if (!q->n)
		return NULL;
	j = q->v[q->head++];
	if (!--q->n)
		q->head = 0;
	return j;
}

static void q_clear(struct line_q *q)
{
	json_t *j;

	while ((j = q_pop(q)))
		json_decref(j);
}

/* E2B's timestamp of a log line: RFC 3339, microseconds, UTC. */
static json_t *timestamp_now(void)
{
	struct timespec ts;
	struct tm tm;
	char buf[96];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
	return json_string(buf);
}

/* A string field of the driver's line, or NULL (not a string). */
static const char *str_of(json_t *o, const char *name)
{
	return json_string_value(json_object_get(o, name));
}

/* The same field as a new string, its NULs kept (binary written to fd 1
 * comes as text with U+0000 in it); *size adds its length. */
static json_t *copy_of(json_t *o, const char *name, size_t *size)
{
	json_t *v = json_object_get(o, name);

	if (!json_is_string(v))
		return NULL;
	*size += json_string_length(v);
	return json_stringn(json_string_value(v), json_string_length(v));
}

/* The formats a result line may carry besides text (E2B's Result). */
static const char *const formats[] = {"html", "markdown", "svg",       "png",
				      "jpeg", "latex",	  "javascript"};

/*
 * One reply line of the driver, under ip->mu: its shape checked and
 * re-made from the fields of the right types alone; what a line gives
 * of text counted against the execution's bound.  Lines outside an
 * execution are dropped (a subprocess the code left behind).
 */
static void take_line(struct svc_interp *ip, const char *p, size_t n)
{
	json_t *in = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
				NULL),
	       *out = NULL, *t;
	const char *type = str_of(in, "type");
	size_t size = 0;
	bool logs = false;

	if (!json_is_object(in) || !type)
		goto out;
	if (!strcmp(type, "ready")) {
		ip->ready = true;
		goto out;
	}
	if (!strcmp(type, "failed")) {
		ip->failed_cwd = true;
		goto out;
	}
	if (!ip->seq)
		goto out;
	if (!strcmp(type, "end")) {
		json_t *seq = json_object_get(in, "seq");

		if (json_is_integer(seq) &&
		    (unsigned long long)json_integer_value(seq) == ip->seq)
			ip->done = true;
		goto out;
	}
	if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		t = copy_of(in, "text", &size);
		if (!t)
			goto out;
		logs = true;
		out = xjson_pack("{s:s, s:o, s:o}", "type", type, "text", t,
				 "timestamp", timestamp_now());
	} else if (!strcmp(type, "result")) {
		out = json_object();
		json_object_set_new(out, "type", json_string("result"));
		t = copy_of(in, "text", &size);
		if (t)
			json_object_set_new(out, "text", t);
		for (size_t i = 0; i < sizeof(formats) / sizeof(*formats);
		     i++) {
			t = copy_of(in, formats[i], &size);
			if (t)
				json_object_set_new(out, formats[i], t);
		}
		json_object_set_new(out, "is_main_result",
				    json_boolean(json_is_true(json_object_get(
					in, "is_main_result"))));
	} else if (!strcmp(type, "error")) {
		json_t *name = copy_of(in, "name", &size),
		       *value = copy_of(in, "value", &size),
		       *tb = copy_of(in, "traceback", &size);

		if (!name || !value || !tb) {
			json_decref(name);
			json_decref(value);
			json_decref(tb);
			goto out;
		}
		out = xjson_pack("{s:s, s:o, s:o, s:o}", "type", "error",
				 "name", name, "value", value, "traceback", tb);
		ip->raised = true;
	} else if (!strcmp(type, "number_of_executions")) {
		json_t *c = json_object_get(in, "execution_count");

		if (!json_is_integer(c))
			goto out;
		out = xjson_pack("{s:s, s:I}", "type", "number_of_executions",
				 "execution_count", json_integer_value(c));
	}
	if (!out)
		goto out;
	/* stdout and stderr share the bound; results and errors have one
	 * of their own, so output cut never hides how the code ended. */
	if (logs ? ip->bytes + size > ip->max_output
		 : ip->other + size > ip->max_output) {
		ip->cut = true;
		json_decref(out);
		goto out;
	}
	if (logs)
		ip->bytes += size;
	else
		ip->other += size;
	q_push(&ip->q, out);
	pthread_cond_broadcast(&ip->cv);
out:
	json_decref(in);
}

/* The exec's stdout: the driver's lines, each at most
 * SVC_INTERP_LINE_MAX (a longer one is dropped whole). */
static int on_out(void *arg, const void *buf, size_t len,
		  struct sbx_error **err)
{
	struct svc_interp *ip = arg;
	const char *p = buf, *nl;

	(void)err;
	pthread_mutex_lock(&ip->mu);
	while (len) {
		size_t n;

		nl = memchr(p, '\n', len);
		n = nl ? (size_t)(nl - p) : len;
		if (!ip->skipping) {
			if (ip->part.len + n > SVC_INTERP_LINE_MAX) {
				ip->skipping = true;
				strbuf_reset(&ip->part);
			} else {
				strbuf_add(&ip->part, p, n);
			}
		}
		if (nl) {
			if (!ip->skipping)
				take_line(ip, ip->part.buf ? ip->part.buf : "",
					  ip->part.len);
			else if (ip->seq)
				ip->cut = true;
			ip->skipping = false;
			strbuf_reset(&ip->part);
			n++;
		}
		p += n;
		len -= n;
	}
	pthread_cond_broadcast(&ip->cv);
	pthread_mutex_unlock(&ip->mu);
	return 0;
}

/* The driver's own stderr (never the code's, which has pipes of its
 * own): dropped. */
static int on_err(void *arg, const void *buf, size_t len,
		  struct sbx_error **err)
{
	(void)arg, (void)buf, (void)len, (void)err;
	return 0;
}

static void *interp_main(void *arg)
{
	struct svc_interp *ip = arg;
	static char python[] = "python3", unbuffered[] = "-u", dash_c[] = "-c",
		    bootstrap[] = BOOTSTRAP;
	char *argv[] = {python, unbuffered, dash_c, bootstrap};
	struct svc_call call = {
	    .tenant = ip->tenant,
	    .agent = ip->agent,
	    .run = ip->run,
	    .cancel = &ip->cancel,
	    .warn = ip->warn,
	    .warn_arg = ip->warn_arg,
	};
	struct svc_exec_req req = {
	    .key = ip->key,
	    .argv = argv,
	    .argc = 4,
	    .in_fd = ip->in_r,
	    .out = {.fd = -1, .write = on_out, .arg = ip},
	    .err = {.fd = -1, .write = on_err, .arg = ip},
	    .timeout_ms = LIFETIME_MS,
	    .outlive = true,
	    /* The bound is each execution's (take_line), not the life's. */
	    .max_output = ~0ULL >> 1,
	    .env = (const char *const *)ip->env,
	    .nenv = ip->nenv,
	};
	struct svc_exec_res res;
	struct sbx_error *err = NULL;

	if (svc_exec(ip->s, &call, &req, &res, &err) < 0) {
		svc_warn(&call, "the interpreter: %s", err->msg);
		sbx_error_free(&err);
	}
	pthread_mutex_lock(&ip->mu);
	ip->ended = true;
	ip->exit_code = res.ended ? res.exit_code : -1;
	ip->by_command = res.by_command;
	pthread_cond_broadcast(&ip->cv);
	pthread_mutex_unlock(&ip->mu);
	svc_exec_res_release(&res);
	return NULL;
}

/* Write all of buf to the exec's stdin within WRITE_MS. */
static int write_in(struct svc_interp *ip, const char *buf, size_t len)
{
	long long until = clock_now_ms() + WRITE_MS;

	while (len) {
		ssize_t n = write(ip->in_w, buf, len);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		{
			struct pollfd pfd = {.fd = ip->in_w, .events = POLLOUT};
			long long left = until - clock_now_ms();

			if (left <= 0)
				return -1;
			poll(&pfd, 1, left > 100 ? 100 : (int)left);
		}
	}
	return 0;
}

static void interp_release(struct svc_interp *ip)
{
	if (ip->in_w >= 0)
		close(ip->in_w);
	if (ip->in_r >= 0)
		close(ip->in_r);
	for (size_t i = 0; i < ip->nenv; i++)
		free(ip->env[i]);
	free(ip->env);
	free(ip->key);
	free(ip->tenant);
	free(ip->agent);
	free(ip->run);
	free(ip->runtime);
	free(ip->wire_id);
	strbuf_release(&ip->part);
	q_clear(&ip->q);
	free(ip->q.v);
	pthread_mutex_destroy(&ip->mu);
	pthread_cond_destroy(&ip->cv);
	free(ip);
}

void svc_interp_free(struct svc_interp *ip)
{
	if (!ip)
		return;
	if (ip->th_started) {
		/* EOF on its stdin ends the driver; the cancel stops what is
		 * left (a driver busy in code, its subprocesses). */
		if (ip->in_w >= 0) {
			close(ip->in_w);
			ip->in_w = -1;
		}
		pthread_mutex_lock(&ip->mu);
		if (!ip->ended) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&ip->cv, &ip->mu, &ts);
		}
		pthread_mutex_unlock(&ip->mu);
		atomic_store(&ip->cancel, SVC_CANCEL_STOP);
		pthread_join(ip->th, NULL);
	}
	interp_release(ip);
}

bool svc_interp_alive(struct svc_interp *ip)
{
	bool alive;

	pthread_mutex_lock(&ip->mu);
	alive = !ip->ended;
	pthread_mutex_unlock(&ip->mu);
	return alive;
}

/* The session's runtime and wire id, for the rows of the executions. */
static int session_facts(struct svc_interp *ip, const struct svc_call *call,
			 struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct session_record rec;
	char wid[SESSION_WIRE_ID_MAX + 1];
	const char *w;
	int rc;

	memset(&rec, 0, sizeof(rec));
	rc = svc_root_open(ip->s, call, &root, err);
	if (rc == 0)
		rc = session_find(&root, ip->key, call->tenant, &rec, err);
	if (rc == 0) {
		ip->runtime = xstrdup(rec.runtime ? rec.runtime : "");
		free(ip->tenant);
		ip->tenant = rec.tenant ? xstrdup(rec.tenant) : NULL;
		w = svc_wire_id_of(&root, rec.key, wid);
		ip->wire_id = w ? xstrdup(w) : NULL;
	}
	session_record_release(&rec);
	session_root_close(&root);
	return rc;
}

static int wait_ms(struct svc_interp *ip, long long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_cond_timedwait(&ip->cv, &ip->mu, &ts);
}

int svc_interp_start(const struct svc *s, const struct svc_call *call,
		     const struct svc_interp_start_req *req,
		     struct svc_interp **out, enum svc_interp_fail *why,
		     struct sbx_error **err)
{
	struct svc_interp *ip = xcalloc(1, sizeof(*ip));
	json_t *conf;
	char *cs, head[32];
	long long idle = req->idle_s, until;
	int fds[2];
	bool ready, ended, failed_cwd;
	int code;

	*out = NULL;
	*why = SVC_INTERP_FAIL_ERROR;
	ip->s = s;
	ip->in_r = ip->in_w = -1;
	pthread_mutex_init(&ip->mu, NULL);
	pthread_cond_init(&ip->cv, NULL);
	strbuf_init(&ip->part);
	ip->key = xstrdup(req->key);
	ip->tenant = call->tenant ? xstrdup(call->tenant) : NULL;
	ip->agent = call->agent ? xstrdup(call->agent) : NULL;
	ip->run = call->run ? xstrdup(call->run) : NULL;
	ip->warn = req->warn;
	ip->warn_arg = req->warn_arg;
	if (session_facts(ip, call, err) < 0) {
		interp_release(ip);
		return -1;
	}
	if (!idle)
		idle = s->cfg.session.idle_timeout;
	conf = json_object();
	if (req->cwd)
		json_object_set_new(conf, "cwd", xjson_string(req->cwd));
	if (idle > 0)
		json_object_set_new(conf, "idle_s", json_integer(idle));
	cs = json_dumps(conf, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(conf);
	if (!cs)
		die_oom();
	ip->env = xcalloc(req->nenv + 1, sizeof(*ip->env));
	for (size_t i = 0; i < req->nenv; i++)
		ip->env[ip->nenv++] = xstrdup(req->env[i]);
	ip->env[ip->nenv++] = xasprintf("SBXCAT_INTERP_CONF=%s", cs);
	free(cs);

	if (pipe2(fds, O_CLOEXEC) < 0) {
		sbx_error_set(err, SBX_E_INTERNAL, errno, "pipe: %s",
			      strerror(errno));
		interp_release(ip);
		return -1;
	}
	ip->in_r = fds[0];
	ip->in_w = fds[1];
	fcntl(ip->in_w, F_SETFL, O_NONBLOCK);
	/* The pipe takes the driver before its reader starts (64 KiB). */
	snprintf(head, sizeof(head), "%zu\n", sizeof(driver) - 1);
	if (write_in(ip, head, strlen(head)) < 0 ||
	    write_in(ip, driver, sizeof(driver) - 1) < 0) {
		sbx_error_set(err, SBX_E_INTERNAL, errno,
			      "cannot hand the interpreter its driver");
		interp_release(ip);
		return -1;
	}
	if (pthread_create(&ip->th, NULL, interp_main, ip) != 0) {
		sbx_error_set(err, SBX_E_INTERNAL, 0,
			      "cannot start the interpreter's thread");
		interp_release(ip);
		return -1;
	}
	ip->th_started = true;

	until = clock_now_ms() + READY_MS;
	pthread_mutex_lock(&ip->mu);
	while (!ip->ready && !ip->ended && !ip->failed_cwd &&
	       clock_now_ms() < until && !svc_cancelled(call))
		wait_ms(ip, 100);
	ready = ip->ready;
	ended = ip->ended;
	failed_cwd = ip->failed_cwd;
	code = ip->exit_code;
	pthread_mutex_unlock(&ip->mu);
	if (ready) {
		*out = ip;
		return 0;
	}
	if (failed_cwd) {
		*why = SVC_INTERP_FAIL_CWD;
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "the interpreter cannot change to its working "
			      "directory");
	} else if (ended && (code == 127 || code == 126)) {
		*why = SVC_INTERP_FAIL_NO_PYTHON;
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "the session's runtime has no python3");
	} else if (ended) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the interpreter ended before it was ready "
			      "(status %d)",
			      code);
	} else {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the interpreter was not ready within %d s",
			      READY_MS / 1000);
	}
	svc_interp_free(ip);
	return -1;
}

/* The row's target: "python: " and the code's first non-blank line, at
 * most 200 characters of it. */
static void target_of(struct strbuf *sb, const char *code)
{
	const char *p = code;
	size_t n;

	while (*p) {
		n = strcspn(p, "\n");
		if (p[strspn(p, " \t\r")] != '\n' && p[strspn(p, " \t\r")])
			break;
		p += n + (p[n] == '\n');
	}
	n = strcspn(p, "\r\n");
	strbuf_addstr(sb, "python: ");
	if (n > 200) {
		/* Not inside a UTF-8 sequence. */
		n = 200;
		while (n && ((unsigned char)p[n] & 0xc0) == 0x80)
			n--;
		strbuf_add(sb, p, n);
		strbuf_addstr(sb, " ...");
	} else {
		strbuf_add(sb, p, n);
		if (p[n] && p[n + strspn(p + n, " \t\r\n")])
			strbuf_addstr(sb, " ...");
	}
}

static int record(struct svc_interp *ip, const struct svc_call *call,
		  const struct svc_interp_run_req *req,
		  const struct svc_interp_run_res *res, struct audit *au,
		  long long t0, const char *failed, struct sbx_error **err)
{
	struct strbuf target = STRBUF_INIT, detail = STRBUF_INIT;
	char secs[32];
	struct audit_event ev = {
	    .op = AUDIT_EXECUTE,
	    .tenant = ip->tenant,
	    .session_key = ip->key,
	    .wire_id = ip->wire_id,
	    .runtime = ip->runtime,
	    .bytes = (long long)res->bytes,
	    .results = AUDIT_NONE,
	    .duration_ms = clock_now_ms() - t0,
	};
	int rc;

	(void)call;
	target_of(&target, req->code);
	if (failed) {
		strbuf_addstr(&detail, failed);
	} else {
		switch (res->end) {
		case SVC_INTERP_DONE:
			strbuf_addstr(
			    &detail, res->raised ? "python: raised an exception"
						 : "python: ok");
			break;
		case SVC_INTERP_INTERRUPTED:
			strbuf_addf(&detail, "python: interrupted");
			break;
		case SVC_INTERP_KILLED:
			strbuf_addf(&detail,
				    "timeout after %s s, interpreter stopped",
				    svc_exec_seconds(secs, res->limit_ms));
			break;
		case SVC_INTERP_DIED:
			strbuf_addstr(&detail, "python: the interpreter ended");
			break;
		}
		if (res->cut)
			strbuf_addstr(&detail, ", output cut");
	}
	ev.ok = !failed && res->end == SVC_INTERP_DONE && !res->raised;
	ev.target = strbuf_str(&target);
	ev.detail = strbuf_str(&detail);
	rc = audit_event(au, &ev, err);
	strbuf_release(&target);
	strbuf_release(&detail);
	return rc;
}

int svc_interp_run(struct svc_interp *ip, const struct svc_call *call,
		   const struct svc_interp_run_req *req,
		   struct svc_interp_run_res *res, struct sbx_error **err)
{
	static atomic_ullong seqs;
	const struct session_config *cfg = &ip->s->cfg.session;
	struct audit *au = NULL;
	json_t *msg, *line;
	char *s;
	long long t0 = clock_now_ms(), deadline, kill_at = 0;
	unsigned long long seq = atomic_fetch_add(&seqs, 1) + 1;
	bool interrupted = false, stop = false;
	const char *failed = NULL;
	int rc;

	memset(res, 0, sizeof(*res));
	res->limit_ms = cfg->execute_timeout_s * 1000;
	if (req->timeout_ms && (long long)req->timeout_ms < res->limit_ms)
		res->limit_ms = (long long)req->timeout_ms;
	deadline = t0 + res->limit_ms;
	if (svc_audit_open(ip->s, call, &au, err) < 0)
		return -1;
	/* Code runs only when its row can be written. */
	if (audit_ready(au, err) < 0) {
		svc_audit_close(call, au);
		return -1;
	}

	pthread_mutex_lock(&ip->mu);
	q_clear(&ip->q);
	ip->seq = seq;
	ip->done = false;
	ip->bytes = ip->other = 0;
	ip->cut = ip->raised = false;
	ip->max_output = req->max_output ? req->max_output : cfg->max_output;
	pthread_mutex_unlock(&ip->mu);

	/* The driver's own deadline interrupts the code; ours stops the
	 * interpreter GRACE_MS after. */
	msg = xjson_pack("{s:I, s:s, s:O?, s:I}", "seq", (json_int_t)seq,
			 "code", req->code, "env", req->env, "timeout_ms",
			 (json_int_t)res->limit_ms);
	s = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(msg);
	if (!s)
		die_oom();
	rc = write_in(ip, s, strlen(s));
	if (rc == 0)
		rc = write_in(ip, "\n", 1);
	free(s);
	if (rc < 0)
		failed = "failed: the interpreter does not read";

	pthread_mutex_lock(&ip->mu);
	while (!failed) {
		long long now = clock_now_ms();

		line = q_pop(&ip->q);
		if (line) {
			int stopped;

			pthread_mutex_unlock(&ip->mu);
			stopped = stop ? 0 : req->emit(req->emit_arg, line);
			json_decref(line);
			pthread_mutex_lock(&ip->mu);
			if (stopped)
				stop = true;
			continue;
		}
		if (ip->done) {
			res->end = interrupted ? SVC_INTERP_INTERRUPTED
					       : SVC_INTERP_DONE;
			break;
		}
		if (ip->ended) {
			res->end =
			    kill_at ? SVC_INTERP_KILLED : SVC_INTERP_DIED;
			break;
		}
		/* At the deadline the driver interrupts the code itself (one
		 * signal: a second could land in the handler of the first);
		 * for a client gone, we ask it to. */
		if (!interrupted && now >= deadline) {
			interrupted = true;
			kill_at = now + GRACE_MS;
			continue;
		}
		if (!interrupted && (stop || svc_cancelled(call))) {
			char buf[64];
			int n = snprintf(buf, sizeof(buf),
					 "{\"interrupt\": %llu}\n", seq);

			interrupted = true;
			kill_at = now + GRACE_MS;
			pthread_mutex_unlock(&ip->mu);
			if (write_in(ip, buf, (size_t)n) < 0)
				kill_at = now;
			pthread_mutex_lock(&ip->mu);
			continue;
		}
		if (kill_at && now >= kill_at) {
			/* It did not stop: the interpreter goes, and with it
			 * everything it started. */
			atomic_store(&ip->cancel, SVC_CANCEL_STOP);
			while (!ip->ended)
				wait_ms(ip, 100);
			res->end = SVC_INTERP_KILLED;
			break;
		}
		wait_ms(ip, 50);
	}
	ip->seq = 0;
	res->bytes = ip->bytes + ip->other;
	res->cut = ip->cut;
	res->raised = ip->raised;
	/* What came after the end is no execution's. */
	q_clear(&ip->q);
	pthread_mutex_unlock(&ip->mu);

	rc = record(ip, call, req, res, au, t0, failed, err);
	svc_audit_close(call, au);
	if (failed && rc == 0)
		rc =
		    sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				  "the interpreter does not read its requests");
	return rc;
}

/*
 * e2b-process.c - envd's process service over Connect (e2b.h,
 * docs/e2b.md "Commands"): commands started and streamed, listed,
 * signalled and fed, on sbxcat's own exec (svc-exec.h), so every command
 * has its deadline, its cgroup and its one audit row.
 *
 * A Start holds its worker for the command's life: a thread of its own
 * runs svc_exec, whose output sinks queue the bytes (bounded: a slow
 * client slows the command's reading, never the service's memory), and
 * the worker, which alone may write the response (http.h's thread rule),
 * sends them as data events, a keepalive event when nothing came for a
 * while, and passes the client's going away to the command's cancel flag.
 * The processes that run are in e2b-procs.c's table, where List,
 * SendSignal, SendInput and CloseStdin find them.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/base64.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/xjson.h"
#include "serve/e2b-procs.h"
#include "serve/e2b.h"
#include "svc/svc-exec.h"

/* Output bytes in one data event (envd sends its reads, 32 KiB; a
 * client's message limit is commonly 4 MiB: far from either). */
#define DATA_MAX (64u << 10)
/* Output queued for the client before the command's reading waits. */
#define QUEUE_MAX (1u << 20)
/* How often the worker looks at the client and the clock. */
#define POLL_MS 100
/* A keepalive event after this much silence (the client's
 * Keepalive-Ping-Interval, in seconds, when less): proxies cut a stream
 * idle for a minute. */
#define KEEPALIVE_MS 15000
#define KEEPALIVE_HEADER "Keepalive-Ping-Interval"
/* Past the client's deadline by this much, the worker stops the command
 * itself (svc_exec's own deadline counts from when it starts it). */
#define DEADLINE_GRACE_MS 5000
/* What a request may carry. */
#define ARGS_MAX 4096
#define TAG_MAX 256
#define START_CAP (1u << 20)
#define INPUT_CAP ((1u << 20) + 4096)
/* The longest a SendInput waits for the command to read its stdin. */
#define INPUT_WAIT_MS 5000
#define BASH "/bin/bash"
#define SH "/bin/sh"

/* ---- requests' fields ---- */

static void refuse(struct e2b_req *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void refuse(struct e2b_req *e, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	e2b_connect_error(e, "invalid_argument", "%s", msg);
	free(msg);
}

/* A string of JSON without NUL (a C string holds it whole). */
static bool plain_string(json_t *v)
{
	return json_is_string(v) &&
	       strlen(json_string_value(v)) == json_string_length(v);
}

/* A method called as the other kind (a unary one as a stream, a stream
 * as unary): Connect's answer is 415, the content type naming the other
 * kind of call. */
static void wrong_kind(struct e2b_req *e, const char *type)
{
	e->w.answered = true;
	wire_json(&e->w, 415,
		  xjson_pack("{s:s, s:s+}", "code", "unimplemented", "message",
			     e->w.req->route, type));
}

static bool unary_only(struct e2b_req *e)
{
	if (!e->connect_stream)
		return true;
	wrong_kind(e, " is a unary method: send application/json");
	return false;
}

/* The process a request names ({pid} or {tag}): false once answered. */
static bool selector(struct e2b_req *e, unsigned *pid, const char **tag)
{
	json_t *s = e2b_field(e->w.body, "process", NULL);
	json_t *vp = json_is_object(s) ? e2b_field(s, "pid", NULL) : NULL;
	json_t *vt = json_is_object(s) ? e2b_field(s, "tag", NULL) : NULL;

	*pid = 0;
	*tag = NULL;
	if (json_is_null(vp))
		vp = NULL;
	if (json_is_null(vt))
		vt = NULL;
	if (!json_is_object(s) || (!vp && !vt)) {
		refuse(e, "process: a selector {\"pid\"} or {\"tag\"} is "
			  "required");
		return false;
	}
	if (vp && vt) {
		refuse(e, "process: pid and tag are one of: give one");
		return false;
	}
	if (vt) {
		if (!plain_string(vt)) {
			refuse(e, "process.tag is not a string");
			return false;
		}
		*tag = json_string_value(vt);
		return true;
	}
	/* uint32 in protobuf's JSON: a number, or its digits quoted. */
	if (json_is_integer(vp) && json_integer_value(vp) >= 0 &&
	    json_integer_value(vp) <= 0xffffffffLL) {
		*pid = (unsigned)json_integer_value(vp);
		return true;
	}
	if (json_is_string(vp)) {
		const char *d = json_string_value(vp);
		size_t n = strspn(d, "0123456789");

		if (n && n <= 10 && n == json_string_length(vp) &&
		    strtoull(d, NULL, 10) <= 0xffffffffULL) {
			*pid = (unsigned)strtoull(d, NULL, 10);
			return true;
		}
	}
	refuse(e, "process.pid is not a uint32");
	return false;
}

/* The process of the selector, with a reference; NULL once answered. */
static struct e2b_proc *find(struct e2b_req *e)
{
	struct e2b_proc *p;
	const char *tag;
	unsigned pid;

	if (!selector(e, &pid, &tag))
		return NULL;
	p = e2b_procs_get(e->id, pid, tag);
	if (!p) {
		if (tag)
			e2b_connect_error(e, "not_found",
					  "process with tag %s not found", tag);
		else
			e2b_connect_error(e, "not_found",
					  "process with pid %u not found", pid);
	}
	return p;
}

/* The same, one started with stdin; NULL once answered. */
static struct e2b_proc *find_stdin(struct e2b_req *e)
{
	struct e2b_proc *p = find(e);

	if (p && !p->has_stdin) {
		e2b_connect_error(e, "failed_precondition",
				  "Process %u was started without stdin "
				  "(Start's stdin: true)",
				  p->pid);
		e2b_procs_put(p);
		p = NULL;
	}
	return p;
}

/* protobuf's bytes in JSON: base64, standard or URL-safe, padded or
 * not.  -1 when it is none of them. */
static int bytes_of(json_t *v, struct strbuf *out)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), bad;

	for (int a = 0; a < 2; a++)
		for (int pad = 1; pad >= 0; pad--) {
			strbuf_reset(out);
			if (base64_decode(out, s, n,
					  a ? BASE64_URL : BASE64_STD, pad,
					  &bad) == 0)
				return 0;
		}
	return -1;
}

/* ---- Start ---- */

/* Output waiting for the client: one stream's bytes. */
struct chunk {
	struct chunk *next;
	int stream;
	size_t len, cap;
	char buf[];
};

/* A Start: its command's thread and its worker share this. */
struct start {
	const struct svc *s;
	struct svc_call call;
	struct svc_exec_req x;
	char **argv; /* x's */
	struct svc_exec_res r;
	struct sbx_error *err;
	int rc;
	struct e2b_proc *p;
	/* Asked for /bin/bash, which may not be there: /bin/sh then. */
	bool bash;
	const char *sandbox;

	pthread_mutex_t lock;
	pthread_cond_t more; /* output came, or the command ended */
	pthread_cond_t room; /* the queue has room, or drops */
	struct chunk *head, **tail, *last;
	size_t held;
	bool done; /* svc_exec returned */
	bool drop; /* the client is gone: output goes nowhere */
};

static int queue(struct start *st, int stream, const char *p, size_t n)
{
	pthread_mutex_lock(&st->lock);
	while (n && !st->drop) {
		struct chunk *c;
		size_t take;

		/* The worker empties the queue, or sets drop when its
		 * client is gone: its writes are bounded (http.h), so is
		 * this wait. */
		while (st->held >= QUEUE_MAX && !st->drop)
			pthread_cond_wait(&st->room, &st->lock);
		if (st->drop)
			break;
		c = st->head ? st->last : NULL;
		if (c && c->stream == stream && c->len < c->cap) {
			take = c->cap - c->len < n ? c->cap - c->len : n;
		} else {
			size_t cap = n < DATA_MAX ? n : DATA_MAX;

			cap = cap < 4096 ? 4096 : cap;
			c = xmalloc(sizeof(*c) + cap);
			c->next = NULL;
			c->stream = stream;
			c->len = 0;
			c->cap = cap;
			*st->tail = c;
			st->tail = &c->next;
			st->last = c;
			take = n < cap ? n : cap;
		}
		memcpy(c->buf + c->len, p, take);
		c->len += take;
		st->held += take;
		p += take;
		n -= take;
	}
	pthread_cond_signal(&st->more);
	pthread_mutex_unlock(&st->lock);
	return 0;
}

static int sink_out(void *arg, const void *p, size_t n, struct sbx_error **e)
{
	(void)e;
	return queue(arg, 0, p, n);
}

static int sink_err(void *arg, const void *p, size_t n, struct sbx_error **e)
{
	(void)e;
	return queue(arg, 1, p, n);
}

/* /bin/bash not found, nothing started: run it by /bin/sh instead. */
static bool bash_missing(const struct start *st)
{
	return st->bash && st->rc == 0 && st->r.ended &&
	       st->r.end == SVC_EXEC_EXITED && st->r.exit_code == 127 &&
	       !st->r.by_command && st->r.not_started;
}

/* argv's element type is char *; nothing writes it. */
static char sh_path[] = SH;

static void *start_thread(void *arg)
{
	struct start *st = arg;

	if (st->bash && e2b_procs_no_bash(st->sandbox))
		st->argv[0] = sh_path;
	st->rc = svc_exec(st->s, &st->call, &st->x, &st->r, &st->err);
	if (!strcmp(st->x.argv[0], BASH) && bash_missing(st)) {
		/* The test-bed's images are busybox: its sh takes bash's
		 * -l -c.  Learnt once per sandbox (one row says bash was
		 * not found). */
		e2b_procs_no_bash_set(st->sandbox);
		svc_exec_res_release(&st->r);
		sbx_error_free(&st->err);
		st->argv[0] = sh_path;
		st->rc = svc_exec(st->s, &st->call, &st->x, &st->r, &st->err);
	}
	pthread_mutex_lock(&st->lock);
	st->done = true;
	pthread_cond_signal(&st->more);
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

static json_t *event(const char *kind, json_t *v)
{
	return xjson_pack("{s:{s:o}}", "event", kind, v);
}

/* The end event: how the command ended, as envd's Go says it. */
static json_t *end_event(const struct start *st, bool killed)
{
	const struct svc_exec_res *r = &st->r;
	json_t *end;
	struct strbuf why = STRBUF_INIT;

	if (killed) {
		end = xjson_pack("{s:i, s:b, s:s}", "exitCode", -1, "exited",
				 false, "status", "signal: killed");
	} else if (r->not_started && !r->by_command) {
		end = xjson_pack("{s:i, s:b, s:s}", "exitCode", r->exit_code,
				 "exited", false, "status", "not started");
		strbuf_addf(&why, "the command could not be started: %s",
			    r->not_started);
	} else {
		char status[32];

		snprintf(status, sizeof(status), "exit status %d",
			 r->exit_code);
		end = xjson_pack("{s:i, s:b, s:s}", "exitCode", r->exit_code,
				 "exited", true, "status", status);
	}
	if (r->oom)
		strbuf_addf(&why,
			    "%sout of memory (the sandbox's limit: %lld "
			    "bytes)",
			    why.len ? "; " : "", r->memory_limit);
	if (r->cut[0] || r->cut[1])
		strbuf_addf(&why,
			    "%soutput cut at %llu bytes per stream (stdout "
			    "wrote %llu bytes, stderr %llu)",
			    why.len ? "; " : "", r->max_output, r->bytes[0],
			    r->bytes[1]);
	if (why.len)
		json_object_set_new(end, "error", xjson_text(strbuf_str(&why)));
	strbuf_release(&why);
	return event("end", end);
}

static void drop_queue(struct start *st)
{
	while (st->head) {
		struct chunk *c = st->head;

		st->head = c->next;
		free(c);
	}
	st->tail = &st->head;
	st->held = 0;
}

/* The client's keepalive interval, bounded by ours. */
static long long keepalive_ms(struct e2b_req *e)
{
	const char *h = http_header(e->w.req, KEEPALIVE_HEADER);
	long long s;

	if (!h || strspn(h, "0123456789") != strlen(h) || strlen(h) > 6)
		return KEEPALIVE_MS;
	s = strtoll(h, NULL, 10);
	return s > 0 && s * 1000 < KEEPALIVE_MS ? s * 1000 : KEEPALIVE_MS;
}

/*
 * The worker's part while the command runs: its output as data events,
 * keepalives, the client watched.  Returns with the command ended;
 * *gone when the client went away, *late when the worker stopped the
 * command past the client's deadline.
 */
static void pump(struct e2b_req *e, struct start *st, bool *gone, bool *late)
{
	long long now = clock_now_ms(), last = now;
	long long every = keepalive_ms(e);
	long long hard =
	    e->deadline_ms ? now + e->deadline_ms + DEADLINE_GRACE_MS : 0;

	pthread_mutex_lock(&st->lock);
	for (;;) {
		struct chunk *c = st->head;
		int why = atomic_load(e->w.req->gone);

		if (why && !st->drop) {
			*gone = true;
			http_gone_raise(&st->p->stop, why);
			st->drop = true;
			drop_queue(st);
			pthread_cond_broadcast(&st->room);
			continue;
		}
		if (c) {
			st->head = c->next;
			if (!st->head)
				st->tail = &st->head;
			st->held -= c->len;
			pthread_cond_broadcast(&st->room);
			pthread_mutex_unlock(&st->lock);
			e2b_stream_msg(
			    e, event("data",
				     xjson_pack("{s:o}",
						c->stream ? "stderr" : "stdout",
						xjson_base64(c->buf, c->len))));
			free(c);
			last = clock_now_ms();
			pthread_mutex_lock(&st->lock);
			continue;
		}
		if (st->done)
			break;
		now = clock_now_ms();
		if (!st->drop && now - last >= every) {
			pthread_mutex_unlock(&st->lock);
			e2b_stream_msg(e, event("keepalive", json_object()));
			last = now;
			pthread_mutex_lock(&st->lock);
			continue;
		}
		if (hard && now >= hard && !*late) {
			int zero = 0;

			*late = atomic_compare_exchange_strong(
			    &st->p->stop, &zero, SVC_CANCEL_STOP);
			hard = 0;
		}
		{
			struct timespec ts;
			long long wait = POLL_MS;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (wait % 1000) * 1000000;
			ts.tv_sec += wait / 1000 + ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&st->more, &st->lock, &ts);
		}
	}
	drop_queue(st);
	pthread_mutex_unlock(&st->lock);
}

/* How the stream ends, once the command has. */
static void start_answer(struct e2b_req *e, struct start *st, bool gone,
			 bool late)
{
	const struct svc_exec_res *r = &st->r;
	char secs[32];

	if (gone)
		return;
	if (late || (st->rc == 0 && r->end == SVC_EXEC_TIMED_OUT)) {
		e2b_stream_end(
		    e, "deadline_exceeded",
		    "the command ran past its deadline of %s s: "
		    "everything it started was stopped (%zu "
		    "processes)",
		    svc_exec_seconds(secs, late ? e->deadline_ms : r->limit_ms),
		    r->stopped);
		return;
	}
	/* Signalled before its exec began: killed all the same. */
	if (st->rc < 0 && !r->ended &&
	    atomic_load(&st->p->stop) == SVC_CANCEL_STOP) {
		e2b_stream_msg(e, end_event(st, true));
		e2b_stream_end(e, NULL, NULL);
		return;
	}
	if (st->rc < 0) {
		e2b_error(e, st->err);
		return;
	}
	switch (r->end) {
	case SVC_EXEC_EXITED:
		e2b_stream_msg(e, end_event(st, false));
		break;
	case SVC_EXEC_CANCELLED:
	case SVC_EXEC_STOPPED:
		if (atomic_load(&st->p->stop) != SVC_CANCEL_STOP)
			return; /* the client or the service went */
		e2b_stream_msg(e, end_event(st, true));
		break;
	default:
		return; /* its output's reader left: nobody to tell */
	}
	e2b_stream_end(e, NULL, NULL);
}

/* Start's cwd as svc_exec takes it: relative to the workspace, which
 * the sandbox sees as its home; NULL for the home itself.  False once
 * answered. */
static bool start_cwd(struct e2b_req *e, json_t *v, char **rel)
{
	const char *home = e2b_home(e), *c;
	size_t n = strlen(home);

	*rel = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!plain_string(v)) {
		refuse(e, "process.cwd is not a string");
		return false;
	}
	c = json_string_value(v);
	if (c[0] != '/') {
		*rel = *c ? xstrdup(c) : NULL;
		return true;
	}
	if (!strncmp(c, home, n) && (c[n] == '\0' || c[n] == '/')) {
		c += n;
		while (*c == '/')
			c++;
		*rel = *c ? xstrdup(c) : NULL;
		return true;
	}
	refuse(e,
	       "process.cwd: only the sandbox's home (%s) and what is "
	       "under it are served as a working directory",
	       home);
	return false;
}

/* "NAME=VALUE" of an object of strings into env (a later name replaces
 * an earlier one).  False once answered (naming a name, never a
 * value). */
static bool env_add(struct e2b_req *e, json_t *obj, const char *what,
		    char ***env, size_t *n)
{
	const char *name;
	json_t *v;

	if (!obj || json_is_null(obj))
		return true;
	if (!json_is_object(obj) ||
	    json_object_size(obj) > SVC_EXEC_ENV_COUNT_MAX) {
		refuse(e, "%s: an object of at most %d strings", what,
		       SVC_EXEC_ENV_COUNT_MAX);
		return false;
	}
	json_object_foreach(obj, name, v)
	{
		size_t i;

		if (!plain_string(v) || !*name || strchr(name, '=')) {
			refuse(e,
			       "%s: each name without '=', each value a "
			       "string without NUL",
			       what);
			return false;
		}
		for (i = 0; i < *n; i++)
			if (!strncmp((*env)[i], name, strlen(name)) &&
			    (*env)[i][strlen(name)] == '=')
				break;
		if (i == *n) {
			*env = xrealloc(*env, st_mult(*n + 1, sizeof(**env)));
			(*n)++;
		} else {
			explicit_bzero((*env)[i], strlen((*env)[i]));
			free((*env)[i]);
		}
		(*env)[i] = xasprintf("%s=%s", name, json_string_value(v));
	}
	return true;
}

static void env_free(char **env, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		explicit_bzero(env[i], strlen(env[i]));
		free(env[i]);
	}
	free(env);
}

/* Start's request into st->x (argv, env, cwd) and the config List
 * shows; false once answered. */
static bool start_req(struct e2b_req *e, struct start *st, char ***env,
		      size_t *nenv, char **cwd, json_t **config)
{
	json_t *proc = e2b_field(e->w.body, "process", NULL);
	json_t *cmd, *args, *v;
	struct sbx_error *err = NULL;
	size_t i;

	if (!json_is_object(proc)) {
		refuse(e, "process: a ProcessConfig {\"cmd\", \"args\", "
			  "\"envs\", \"cwd\"} is required");
		return false;
	}
	cmd = e2b_field(proc, "cmd", NULL);
	args = e2b_field(proc, "args", NULL);
	if (!plain_string(cmd) || !json_string_length(cmd)) {
		refuse(e, "process.cmd: a command is required (a string "
			  "without NUL)");
		return false;
	}
	if (json_is_null(args))
		args = NULL;
	if (args &&
	    (!json_is_array(args) || json_array_size(args) >= ARGS_MAX)) {
		refuse(e, "process.args: a list of fewer than %d strings",
		       ARGS_MAX);
		return false;
	}
	st->x.argc = 1 + (int)json_array_size(args);
	st->argv = xcalloc((size_t)st->x.argc + 1, sizeof(char *));
	st->x.argv = st->argv;
	st->argv[0] = (char *)json_string_value(cmd);
	json_array_foreach(args, i, v)
	{
		if (!plain_string(v)) {
			refuse(e,
			       "process.args[%zu] is not a string without "
			       "NUL",
			       i);
			return false;
		}
		st->argv[i + 1] = (char *)json_string_value(v);
	}
	st->bash = !strcmp(st->argv[0], BASH);
	/* E2B's HOME, then the sandbox's envVars, then the command's. */
	*env = xcalloc(1, sizeof(**env));
	(*env)[0] = xasprintf("HOME=%s", e2b_home(e));
	*nenv = 1;
	if (!env_add(e, e2b_sandbox_envs(e), "the sandbox's envVars", env,
		     nenv) ||
	    !env_add(e, e2b_field(proc, "envs", NULL), "process.envs", env,
		     nenv))
		return false;
	if (svc_exec_env_check((const char *const *)*env, *nenv, &err) < 0) {
		refuse(e, "process.envs: %s", err->msg);
		sbx_error_free(&err);
		return false;
	}
	st->x.env = (const char *const *)*env;
	st->x.nenv = *nenv;
	if (!start_cwd(e, e2b_field(proc, "cwd", NULL), cwd))
		return false;
	st->x.cwd = *cwd;
	/* What List shows: the command as asked, never an env's value
	 * (docs/e2b.md). */
	*config = xjson_pack("{s:O, s:o, s:o}", "cmd", cmd, "args",
			     args ? json_deep_copy(args) : json_array(), "envs",
			     json_object());
	v = e2b_field(proc, "cwd", NULL);
	if (plain_string(v))
		json_object_set_new(*config, "cwd", json_deep_copy(v));
	return true;
}

static void op_start(struct e2b_req *e)
{
	struct start st = {
	    .s = &e->w.snap->svc,
	    .call = e->w.call,
	    .lock = PTHREAD_MUTEX_INITIALIZER,
	    .more = PTHREAD_COND_INITIALIZER,
	    .room = PTHREAD_COND_INITIALIZER,
	    .sandbox = e->id,
	};
	json_t *tag = e2b_field(e->w.body, "tag", NULL);
	json_t *in = e2b_field(e->w.body, "stdin", NULL);
	json_t *pty = e2b_field(e->w.body, "pty", NULL);
	json_t *config = NULL;
	char **env = NULL, *cwd = NULL;
	size_t nenv = 0;
	int fds[2] = {-1, -1};
	bool gone = false, late = false;
	pthread_t t;

	st.tail = &st.head;
	if (!e->connect_stream) {
		wrong_kind(e, " is a server stream: send "
			      "application/connect+json");
		return;
	}
	if (pty && !json_is_null(pty)) {
		e2b_connect_error(e, "unimplemented",
				  "A PTY is not served: sbxcat's commands run "
				  "without a terminal");
		return;
	}
	if ((tag && !json_is_null(tag) &&
	     (!plain_string(tag) || json_string_length(tag) > TAG_MAX)) ||
	    (in && !json_is_null(in) && !json_is_boolean(in))) {
		refuse(e, "tag is a string of at most %d bytes, stdin a bool",
		       TAG_MAX);
		return;
	}
	if (!start_req(e, &st, &env, &nenv, &cwd, &config))
		goto out;
	if (json_is_true(in)) {
		if (pipe2(fds, O_CLOEXEC) < 0) {
			e2b_connect_error(e, "resource_exhausted",
					  "No pipe for the command's stdin: %s",
					  strerror(errno));
			goto out;
		}
		/* SendInput waits on it itself (bounded). */
		fcntl(fds[1], F_SETFL, O_NONBLOCK);
	}
	st.x.key = e->w.ws.key;
	st.x.in_fd = fds[0];
	st.x.out = (struct svc_sink){.fd = -1, .write = sink_out, .arg = &st};
	st.x.err = (struct svc_sink){.fd = -1, .write = sink_err, .arg = &st};
	/* The client's deadline, or the configured (svc_exec takes the
	 * less). */
	st.x.timeout_ms =
	    e->deadline_ms > 0 ? (unsigned long long)e->deadline_ms : 0;
	st.p = e2b_procs_add(e->id, steal_pointer(&config),
			     plain_string(tag) ? xstrdup(json_string_value(tag))
					       : NULL,
			     fds[1] >= 0, fds[1]);
	fds[1] = -1;
	if (!st.p) {
		e2b_connect_error(e, "resource_exhausted",
				  "The sandbox runs %d processes already",
				  E2B_PROCS_MAX);
		goto out;
	}
	st.call.cancel = &st.p->stop;
	if (e2b_stream_msg(
		e, event("start", xjson_pack("{s:I}", "pid",
					     (json_int_t)st.p->pid))) < 0)
		goto out;
	if (pthread_create(&t, NULL, start_thread, &st) != 0) {
		e2b_stream_end(e, "resource_exhausted",
			       "No thread for the command");
		goto out;
	}
	pump(e, &st, &gone, &late);
	pthread_join(t, NULL);
	start_answer(e, &st, gone, late);
out:
	if (st.p)
		e2b_procs_del(st.p);
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	json_decref(config);
	env_free(env, nenv);
	free(cwd);
	free(st.argv);
	sbx_error_free(&st.err);
	svc_exec_res_release(&st.r);
	pthread_cond_destroy(&st.more);
	pthread_cond_destroy(&st.room);
	pthread_mutex_destroy(&st.lock);
}

/* ---- the unary methods ---- */

static void op_list(struct e2b_req *e)
{
	if (!unary_only(e))
		return;
	e2b_connect_reply(
	    e, xjson_pack("{s:o}", "processes", e2b_procs_list(e->id)));
}

static void op_signal(struct e2b_req *e)
{
	json_t *sig;
	struct e2b_proc *p;

	if (!unary_only(e))
		return;
	sig = e2b_field(e->w.body, "signal", NULL);
	/* An enum in protobuf's JSON: its name, or its number. */
	if (!((json_is_string(sig) &&
	       (!strcmp(json_string_value(sig), "SIGNAL_SIGKILL") ||
		!strcmp(json_string_value(sig), "SIGNAL_SIGTERM"))) ||
	      (json_is_integer(sig) && (json_integer_value(sig) == 9 ||
					json_integer_value(sig) == 15)))) {
		refuse(e, "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM");
		return;
	}
	p = find(e);
	if (!p)
		return;
	/* Either stops the whole command, as its deadline does: sbxcat's
	 * exec stops every process it started (docs/e2b.md). */
	http_gone_raise(&p->stop, SVC_CANCEL_STOP);
	e2b_procs_put(p);
	e2b_connect_reply(e, json_object());
}

/* Write in[0..n) to p's stdin, waiting at most INPUT_WAIT_MS for the
 * command to read it.  Under p->in_lock.  Answers. */
static void input_write(struct e2b_req *e, struct e2b_proc *p, const char *in,
			size_t n)
{
	long long end = clock_now_ms() + INPUT_WAIT_MS;
	size_t done = 0;

	if (p->in_fd < 0) {
		if (p->in_closed)
			e2b_connect_error(e, "failed_precondition",
					  "The stdin of process %u is closed",
					  p->pid);
		else
			e2b_connect_error(e, "not_found",
					  "process with pid %u not found",
					  p->pid);
		return;
	}
	while (done < n) {
		ssize_t w = write(p->in_fd, in + done, n - done);
		long long left = end - clock_now_ms();

		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EPIPE) {
			e2b_connect_error(e, "not_found",
					  "process with pid %u not found: its "
					  "command no longer reads stdin",
					  p->pid);
			return;
		}
		if (w < 0 && errno != EAGAIN) {
			e2b_connect_error(e, "internal",
					  "Writing to the stdin of process %u "
					  "failed: %s",
					  p->pid, strerror(errno));
			return;
		}
		if (left <= 0 || svc_cancelled(&e->w.call)) {
			e2b_connect_error(
			    e, "resource_exhausted",
			    "Process %u took %zu of %zu bytes of "
			    "input in %d s: it is not reading its "
			    "stdin",
			    p->pid, done, n, INPUT_WAIT_MS / 1000);
			return;
		}
		poll(&(struct pollfd){.fd = p->in_fd, .events = POLLOUT}, 1,
		     left < POLL_MS ? (int)left : POLL_MS);
	}
	e2b_connect_reply(e, json_object());
}

static void op_input(struct e2b_req *e)
{
	json_t *input, *data;
	struct strbuf bytes = STRBUF_INIT;
	struct e2b_proc *p;

	if (!unary_only(e))
		return;
	input = e2b_field(e->w.body, "input", NULL);
	if (input && !json_is_null(input) && !json_is_object(input)) {
		refuse(e, "input: a ProcessInput {\"stdin\"} is expected");
		return;
	}
	data = json_is_object(input) ? e2b_field(input, "stdin", NULL) : NULL;
	if (json_is_object(input) && e2b_field(input, "pty", NULL) &&
	    !json_is_null(e2b_field(input, "pty", NULL))) {
		e2b_connect_error(e, "unimplemented",
				  "A PTY is not served: send stdin");
		return;
	}
	if (data && !json_is_null(data) &&
	    (!json_is_string(data) || bytes_of(data, &bytes) < 0)) {
		refuse(e, "input.stdin is not base64");
		goto out;
	}
	p = find_stdin(e);
	if (p) {
		pthread_mutex_lock(&p->in_lock);
		input_write(e, p, bytes.buf ? bytes.buf : "", bytes.len);
		pthread_mutex_unlock(&p->in_lock);
		e2b_procs_put(p);
	}
out:
	strbuf_release(&bytes);
}

static void op_close_stdin(struct e2b_req *e)
{
	struct e2b_proc *p;

	if (!unary_only(e))
		return;
	p = find_stdin(e);
	if (!p)
		return;
	/* The command sees EOF; closing twice is closing once. */
	pthread_mutex_lock(&p->in_lock);
	if (p->in_fd >= 0)
		close(p->in_fd);
	p->in_fd = -1;
	p->in_closed = true;
	pthread_mutex_unlock(&p->in_lock);
	e2b_connect_reply(e, json_object());
	e2b_procs_put(p);
}

static void not_served(struct e2b_req *e)
{
	const char *r = e->w.req->route;

	e2b_connect_error(
	    e, "unimplemented", "%s is not served by sbxcat: %s", r,
	    strstr(r, "/Connect")
		? "a command's events go to the Start that started it alone"
	    : strstr(r, "/Update") ? "no process has a PTY"
				   : "send input with SendInput");
}

const struct http_route e2b_process_routes[] = {
    E2B_ROUTE("POST", "/process.Process/Start", SLOW, START_CAP, op_start, ENVD,
	      CONNECT, .body = true),
    E2B_ROUTE("POST", "/process.Process/List", QUICK, 4096, op_list, ENVD,
	      CONNECT, .body = true),
    E2B_ROUTE("POST", "/process.Process/SendSignal", QUICK, 4096, op_signal,
	      ENVD, CONNECT, .body = true),
    E2B_ROUTE("POST", "/process.Process/SendInput", QUICK, INPUT_CAP, op_input,
	      ENVD, CONNECT, .body = true),
    E2B_ROUTE("POST", "/process.Process/CloseStdin", QUICK, 4096,
	      op_close_stdin, ENVD, CONNECT, .body = true),
    E2B_ROUTE("POST", "/process.Process/Connect", QUICK, 4096, not_served, ENVD,
	      CONNECT),
    E2B_ROUTE("POST", "/process.Process/StreamInput", QUICK, 4096, not_served,
	      ENVD, CONNECT),
    E2B_ROUTE("POST", "/process.Process/Update", QUICK, 4096, not_served, ENVD,
	      CONNECT),
};
const size_t e2b_process_nroutes =
    sizeof(e2b_process_routes) / sizeof(*e2b_process_routes);

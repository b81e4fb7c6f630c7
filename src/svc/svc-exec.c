/*
 * svc-exec.c - a command in a session (svc-exec.h): the lookup, the
 * cgroup claimed between the engine's start and the command's first
 * instruction, the stream, the deadline's stop-everything escalation, the
 * exit-status rules, OOM attribution and the row.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "basic/clock.h"
#include "basic/text.h"
#include "basic/util.h"
#include "engine/engine.h"
#include "exec/exec-io.h"
#include "exec/exec-ns.h"
#include "exec/procs.h"
#include "session/session-runs.h"
#include "session/session-engine.h"
#include "session/session.h"
#include "svc/svc-e2b.h"
#include "svc/svc-exec.h"
#include "svc/svc-int.h"
#include "svc/svc-wire.h"
#include "workspace/workspace.h"

enum {
	EXIT_CANNOT_INVOKE = 126,
	EXIT_NOT_FOUND = 127,
	EXIT_NONE = 125, /* the engine gave no exit code */
};

/* TERM, then the group's atomic kill after this, until that. */
#define STOP_GRACE_MS 2000
#define STOP_GIVE_UP_MS 6000
/* How long the engine may take to report the exec's process. */
#define PID_WAIT_MS 10000
/* After the kill, how long the stream's tail may take to drain. */
#define DRAIN_MS 2000
/* How often a run with an id looks whether it was asked to stop. */
#define RUN_STOP_POLL_MS 50
/* --timeout's bound: 7 days. */
#define SECONDS_MAX (7 * 86400ULL)

/* Commands started each way, and why the fast path was passed over
 * (svc_exec_stats). */
static atomic_ullong started_fast, started_engine;
static atomic_ullong fallbacks[EXEC_NS_UNFIT_N];

static const char *plural(unsigned long long n, const char *one,
			  const char *many)
{
	return n == 1 ? one : many;
}

/* The exec's exit code; 125 when the engine gives none. */
static int exit_code_of(const struct engine_exec_info *ei)
{
	return ei->has_exit_code ? ei->exit_code : EXIT_NONE;
}

/* Stop everything in the command's cgroup; warn of what could not be
 * stopped. */
static void stop_all(const struct svc_call *call, const struct procs_group *g,
		     size_t *killed)
{
	struct sbx_error *err = NULL;
	size_t left = 0;

	*killed = 0;
	if (procs_group_stop(g, STOP_GRACE_MS, STOP_GIVE_UP_MS, killed, &left,
			     &err) < 0) {
		svc_warn(call, "%s", err->msg);
		sbx_error_free(&err);
		return;
	}
	if (left)
		svc_warn(call, "%zu %s of the command could not be stopped",
			 left, plural(left, "process", "processes"));
	else
		procs_group_remove(g);
}

/* A pid the engine gave, 0 when none (or not one). */
static pid_t pid_of(long long pid)
{
	return pid > 0 && pid < (1 << 30) ? (pid_t)pid : 0;
}

/* The exec's record once its process has ended (it may lag the stream's
 * end by a moment). */
static int exec_finished(struct engine *e, const char *exec_id,
			 struct engine_exec_info *ei, struct sbx_error **err)
{
	long long until = clock_now_ms() + 2000;
	useconds_t nap = 1000;

	/* Usually a few ms: asked again soon, then less often (2 s in all,
	 * as before). */
	while (clock_now_ms() < until) {
		if (engine_exec_info_get(e, exec_id, ei, err) < 0)
			return -1;
		if (!ei->running)
			return 0;
		usleep(nap);
		if (nap < 20000)
			nap *= 2;
	}
	return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			     "the engine still reports the command running "
			     "after its output ended");
}

/*
 * 126 with Pid 0 from the engine: the command never started, and the
 * engine's reason came first on stdout (engine-container.c has what
 * dockerd says).  "not found" is 127, as a shell says; a command that
 * ran and exited 126 itself has a Pid and keeps its status.
 */
static int invoke_status(int code, const struct engine_exec_info *ei,
			 const struct exec_io_result *r)
{
	if (code != EXIT_CANNOT_INVOKE || pid_of(ei->pid) != 0)
		return code;
	if (r->nhead &&
	    (memmem(r->head, r->nhead, "executable file not found", 25) ||
	     memmem(r->head, r->nhead, "no such file or directory", 25)))
		return EXIT_NOT_FOUND;
	return code;
}

static bool utf8_valid(const char *s, size_t len);

/* The command as the audit's target: the shell string, or argv joined by
 * spaces, an argument with a blank or a quote in single quotes (as sh
 * would take it). */
static void command_text(struct strbuf *out, const struct svc_exec_req *req)
{
	if (req->shell) {
		strbuf_addstr(out, req->shell);
		return;
	}
	for (int i = 0; i < req->argc; i++) {
		const char *a = req->argv[i];

		if (i)
			strbuf_addch(out, ' ');
		if (*a && !a[strcspn(a, " \t\n'\"\\$`")]) {
			strbuf_addstr(out, a);
			continue;
		}
		strbuf_addch(out, '\'');
		for (; *a; a++) {
			if (*a == '\'')
				strbuf_addstr(out, "'\\''");
			else
				strbuf_addch(out, *a);
		}
		strbuf_addch(out, '\'');
	}
}

/* The exec's process, once the engine has started it: its inspect. */
static int exec_started(struct engine *e, const char *exec_id,
			struct engine_exec_info *ei, struct sbx_error **err)
{
	long long t0 = clock_now_ms(), until = t0 + PID_WAIT_MS;
	useconds_t nap = 1000;

	for (;;) {
		if (engine_exec_info_get(e, exec_id, ei, err) < 0)
			return -1;
		/* Before the engine has started it: not running, no pid,
		 * no exit code; once it ended (or could not start): an
		 * exit code. */
		if (pid_of(ei->pid) || ei->has_exit_code)
			return 0;
		if (clock_now_ms() >= until)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "the engine did not report the "
					     "command's process within %d s",
					     PID_WAIT_MS / 1000);
		/* The process shows within 100 ms or so (runc's start):
		 * asked every few ms meanwhile, so the command does not wait
		 * long past it; after that, an engine under load is not asked
		 * thousands of times. */
		usleep(nap);
		if (nap < (clock_now_ms() - t0 < 250 ? 4000 : 50000))
			nap *= 2;
	}
}

/*
 * Start the exec and put its processes in g, under the session's exec
 * lock: no other exec of the session starts between this one's start and
 * its claim, so what the container's cgroup holds then is this exec's.
 * 1 when the deadline passed while the lock was waited for: nothing was
 * started.  Once the start is asked for, the engine's reply is waited for
 * within the engine's own bound, not the command's deadline: a command
 * the engine started is always claimed (and then stopped at once by the
 * stream's deadline), never left running outside its group.
 */
static int start_claimed(struct engine *e, struct session_root *root,
			 const char *key, const char *exec_id, pid_t init_pid,
			 const struct procs_group *g, long long deadline_ms,
			 int *conn, struct strbuf *pre, struct sbx_error **err)
{
	struct engine_exec_info ei;
	size_t moved = 0;
	int lock = session_exec_lock(root, key, err), rc;

	if (lock < 0)
		return -1;
	if (clock_now_ms() >= deadline_ms) {
		session_keydir_unlock(lock);
		return 1;
	}
	rc = engine_exec_attach(e, exec_id, 0, conn, pre, err);
	if (rc == 0)
		rc = exec_started(e, exec_id, &ei, err);
	if (rc == 0)
		rc = procs_group_claim(g, init_pid, &moved, err);
	session_keydir_unlock(lock);
	return rc;
}

/* exec-io's writer when a sink is a callback: the request's sinks. */
static int sink_write(void *arg, int stream, const char *buf, size_t len)
{
	const struct svc_exec_req *req = arg;
	struct sbx_error *e = NULL;
	int en;

	if (svc_sink_write(stream == EXEC_IO_STDERR ? &req->err : &req->out,
			   buf, len, &e) == 0)
		return 0;
	en = e->errnum ? e->errnum : EIO;
	sbx_error_free(&e);
	errno = en;
	return -1;
}

/* Everything one exec holds, released by exec_end. */
struct run {
	const struct svc *s;
	const struct svc_call *call;
	const struct svc_exec_req *req;
	struct svc_exec_res *res;
	struct session_root root;
	struct session_record rec;
	struct engine engine;
	struct procs_group grp;
	struct audit *au;
	struct engine_container_info *inspect;
	struct engine_exec_info ei;
	char *exec_id;
	struct strbuf pre, detail;
	struct exec_io io;
	struct exec_io_result io_res;
	/* The fast path (exec-ns.h): the command's process and pipes. */
	bool fast;
	/* Not started by either path, as neither could (np.why says so). */
	bool unstartable;
	struct exec_ns_proc np;
	bool ran, exited, unrecorded;
	bool have_oom; /* oom_before was read */
	unsigned long long oom_before;
	long long t0, stop_next;
	int conn;
	int run_fd; /* ROOT/KEY/runs/ID held, or -1 */
	pid_t init_pid;
	char *cwd; /* the container's path of req->cwd */
};

/* sbxcat could not run it: the row's detail from *err. */
static int cannot_run(struct run *r, struct sbx_error **err)
{
	strbuf_reset(&r->detail);
	audit_detail_of(&r->detail, *err);
	return -1;
}

/*
 * req->cwd beneath the workspace, as every path of the workspace's is
 * (workspace.h: no "..", never out through a symlink, nor onto another
 * mount), and a directory: its path in the container (the workspace is
 * bind-mounted at the work dir) in r->cwd.  A relative cwd is relative
 * to the work dir; an absolute one must be under it (the host's path of
 * the workspace is not the sandbox's).  -1 with *err (invalid, reason
 * "bad working directory", naming the path as given).
 */
static int resolve_cwd(struct run *r, const char *cwd, struct sbx_error **err)
{
	const struct session_config *cfg = &r->s->cfg.session;
	const char *wd = session_work_dir(cfg, &r->rec);
	char *ws = session_workspace_path(&r->root, &r->rec);
	const char *rel = cwd;
	struct workspace w;
	struct strbuf shown = STRBUF_INIT;
	char *norm = NULL;
	size_t n = strlen(wd);
	int fd, dfd = -1;

	text_add_escaped(&shown, cwd, strlen(cwd));
	if (cwd[0] == '/') {
		if (strncmp(cwd, wd, n) == 0 && (!cwd[n] || cwd[n] == '/'))
			rel = cwd + n + strspn(cwd + n, "/");
		else
			rel = NULL;
	}
	if (!rel) {
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "working directory '%s' is outside the "
			      "workspace (%s)",
			      shown.buf, wd);
	} else if (workspace_path_check(*rel ? rel : ".", true, &norm, err) ==
		   0) {
		fd = session_workspace_open(&r->root, &r->rec, err);
		if (fd >= 0 && workspace_init(&w, fd, ws, 0, cfg->max_read,
					      cfg->max_write, NULL, err) == 0) {
			dfd = workspace_openat(&w, *norm ? norm : ".",
					       O_PATH | O_DIRECTORY, 0, 0,
					       shown.buf, err);
			workspace_close(&w);
		}
	}
	if (dfd >= 0) {
		close(dfd);
		r->cwd = *norm ? xasprintf("%s/%s", wd, norm) : xstrdup(wd);
	} else {
		sbx_error_wrap(err, "-w/cwd");
		(*err)->kind = SBX_E_INVALID;
		sbx_error_why(*err, SBX_R_BAD_CWD, 0, 0);
	}
	free(norm);
	free(ws);
	strbuf_release(&shown);
	return dfd >= 0 ? 0 : -1;
}

/*
 * The inspects of running containers this process made for the fast
 * path lately, so that a command does not wait for the engine to be asked
 * what it said a moment ago: an entry serves while its container's init
 * is the same process (PID and start time), its container is not frozen
 * (paused), the session is not idle enough to be paused or hibernated
 * meanwhile (those go through session_engine_wake, which wakes it), and
 * for INSPECT_KEEP_MS at most.  A command line's process never lives
 * long enough to use one.
 */
#define INSPECT_KEEP_N 256
#define INSPECT_KEEP_MS 10000
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept_inspect {
	char key[SESSION_KEY_MAX + 1];
	pid_t pid;
	unsigned long long start;
	long long at;
	struct engine_container_info *inspect;
} kept[INSPECT_KEEP_N];

/* Far enough from the pause and the hibernation to need no wake. */
static bool kept_usable(const struct session_config *c,
			const struct session_record *rec)
{
	long long idle = (long long)time(NULL) - rec->last_activity;

	return c->exec_path != SESSION_EXEC_ENGINE &&
	       (!c->pause_after || idle + 2 < c->pause_after) &&
	       (!c->evict_idle_after || idle + 2 < c->evict_idle_after);
}

/* A copy of the kept inspect of rec's container, or NULL. */
static struct engine_container_info *
inspect_cached(const struct session_config *c, const struct session_record *rec)
{
	struct engine_container_info *j = NULL;
	struct kept_inspect *k = NULL;
	pid_t pid = 0;
	unsigned long long start = 0;

	if (!kept_usable(c, rec))
		return NULL;
	pthread_mutex_lock(&kept_lock);
	for (int i = 0; i < INSPECT_KEEP_N; i++)
		if (kept[i].inspect && !strcmp(kept[i].key, rec->key)) {
			k = &kept[i];
			break;
		}
	if (k && clock_now_ms() - k->at < INSPECT_KEEP_MS) {
		pid = k->pid;
		start = k->start;
		j = xcalloc(1, sizeof(*j));
		engine_container_info_copy(j, k->inspect);
	}
	pthread_mutex_unlock(&kept_lock);
	if (j && (procs_start_time(pid) != start || procs_frozen(pid))) {
		engine_container_info_free(j);
		j = NULL;
	}
	return j;
}

/* Keep a copy of a running container's inspect (inspect_cached). */
static void inspect_keep(const struct session_config *c,
			 const struct session_record *rec,
			 const struct engine_container_info *inspect)
{
	pid_t pid = pid_of(inspect->state.pid);
	unsigned long long start = pid ? procs_start_time(pid) : 0;
	struct kept_inspect *slot = &kept[0];
	long long now = clock_now_ms();

	if (!start || !kept_usable(c, rec))
		return;
	pthread_mutex_lock(&kept_lock);
	for (int i = 0; i < INSPECT_KEEP_N; i++) {
		if (kept[i].inspect && !strcmp(kept[i].key, rec->key)) {
			slot = &kept[i];
			break;
		}
		if (!kept[i].inspect || kept[i].at < slot->at)
			slot = &kept[i];
	}
	if (slot->inspect && !strcmp(slot->key, rec->key) &&
	    slot->pid == pid && slot->start == start &&
	    now - slot->at < INSPECT_KEEP_MS) {
		pthread_mutex_unlock(&kept_lock);
		return; /* still fresh: the first one's age stands */
	}
	engine_container_info_free(slot->inspect);
	snprintf(slot->key, sizeof(slot->key), "%s", rec->key);
	slot->pid = pid;
	slot->start = start;
	slot->at = now;
	slot->inspect = xcalloc(1, sizeof(*slot->inspect));
	engine_container_info_copy(slot->inspect, inspect);
	pthread_mutex_unlock(&kept_lock);
}

/*
 * Start the command the fast way (exec-ns.h), in r->grp from its birth:
 * 0 with r->fast when it started (or could not, as the engine would
 * have refused it too: r->np.exec_errno); 0 without r->fast when the
 * fast path cannot be used here and the engine may be asked (counted by
 * reason); -1 with *err when it cannot and SBXCAT_EXEC_PATH=fast.
 */
static int fast_start(struct run *r, const char *cwd, struct sbx_error **err)
{
	const struct svc_exec_req *req = r->req;
	const char *sh[] = {"/bin/sh", "-c", req->shell, NULL};
	const char **argv = NULL;
	struct exec_ns_req nr = {
	    .init_pid = r->init_pid,
	    .group_dir = r->grp.dir,
	    .hostname = r->inspect->hostname,
	    .cfg_env = (const char *const *)r->inspect->env,
	    .ncfg = r->inspect->nenv,
	    .env = req->env,
	    .nenv = req->nenv,
	    .cwd = cwd,
	    .want_stdin = req->in_fd >= 0,
	};
	enum exec_ns_unfit why = EXEC_NS_FIT;
	int rc;

	if (r->grp.version != 2) {
		why = EXEC_NS_CGROUP;
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the fast path cannot start a command here "
			      "(cgroup): the container has no cgroup2 group");
		rc = -1;
	} else {
		if (!req->shell) {
			argv = xcalloc((size_t)req->argc + 1, sizeof(*argv));
			for (int i = 0; i < req->argc; i++)
				argv[i] = req->argv[i];
		}
		nr.argv = (char *const *)(req->shell ? sh : argv);
		rc = exec_ns_start(&nr, &r->np, &why, err);
		free(argv);
	}
	if (rc == 0) {
		r->fast = true;
		atomic_fetch_add(&started_fast, 1);
		return 0;
	}
	atomic_fetch_add(&fallbacks[why], 1);
	if (r->s->cfg.session.exec_path == SESSION_EXEC_FAST) {
		sbx_error_wrap(err, "SBXCAT_EXEC_PATH=fast");
		return -1;
	}
	sbx_error_free(err);
	return 0;
}

void svc_exec_stats(struct svc_exec_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->fast = atomic_load(&started_fast);
	st->engine = atomic_load(&started_engine);
	for (int i = EXEC_NS_FIT + 1; i < EXEC_NS_UNFIT_N &&
				      st->nfallback < SVC_EXEC_FALLBACK_MAX;
	     i++) {
		st->fallback[st->nfallback].reason =
		    exec_ns_unfit_name((enum exec_ns_unfit)i);
		st->fallback[st->nfallback].n = atomic_load(&fallbacks[i]);
		st->nfallback++;
	}
}

/*
 * A program name no system can start, PATH_MAX bytes or more: not
 * started, as the fast path says it (127 when PATH is searched, 126
 * otherwise), on both paths.  The engine is never given one: runc
 * repeats the name in its error on its stderr, a pipe the container's
 * shim was seen not to read while runc ran, so a name over the pipe's
 * 64 KiB blocked runc, and with it every later operation on the
 * container, `docker rm -f` among them, for good (docs/sessions.md).
 */
static bool unstartable_name(struct run *r)
{
	const char *a0 = r->req->shell ? NULL : r->req->argv[0];
	bool searched;

	if (!a0 || strlen(a0) < PATH_MAX)
		return false;
	searched = !strchr(a0, '/');
	r->np.exec_errno = searched ? ENOENT : ENAMETOOLONG;
	snprintf(r->np.why, sizeof(r->np.why), "exec: \"%.48s...\": %s", a0,
		 searched ? "executable file not found in $PATH"
			  : strerror(ENAMETOOLONG));
	r->unstartable = true;
	return true;
}

/* Up to the engine's exec created: the session found and running (a
 * paused one unpaused), its cgroup made, the audit ready.  -1 with *err (the
 * detail set). */
static int exec_prepare(struct run *r, struct sbx_error **err)
{
	const struct svc_config *cfg = &r->s->cfg;
	const struct svc_exec_req *req = r->req;
	size_t killed = 0, busy = 0;
	const char *sh[] = {"/bin/sh", "-c", req->shell};
	const char *ws;
	long long limit_ms, started, start_s, deadline_s;
	int rc;

	if (svc_root_open(r->s, r->call, &r->root, err) < 0 ||
	    session_find(&r->root, req->key, r->call->tenant, &r->rec, err) <
		0 ||
	    /* A sandbox its E2B client paused is not woken by an exec. */
	    svc_e2b_wake_check(&r->root, r->rec.key, err) < 0 ||
	    (req->cwd && resolve_cwd(r, req->cwd, err) < 0) ||
	    (req->run_id &&
	     (r->run_fd = session_run_begin(&r->root, r->rec.key, req->run_id,
					    err)) < 0) ||
	    svc_engine_open(r->s, r->call, &r->engine, err) < 0 ||
	    (!(r->inspect = inspect_cached(&cfg->session, &r->rec)) &&
	     session_engine_wake_info(&r->engine, &cfg->session, &r->root,
				      &r->rec, &r->inspect, err) < 0) ||
	    procs_usable(err) < 0)
		return cannot_run(r, err);
	inspect_keep(&cfg->session, &r->rec, r->inspect);
	r->init_pid = pid_of(r->inspect->state.pid);
	if (!r->init_pid) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the engine gives no process for session '%s'",
			      r->rec.key);
		return cannot_run(r, err);
	}
	if (procs_oom_kills(r->init_pid, &r->oom_before, err) == 0)
		r->have_oom = true;
	sbx_error_free(err);
	/* What an earlier exec left past its deadline (its watcher gone). */
	if (procs_groups_expire(r->init_pid, (long long)time(NULL),
				cfg->session.execute_timeout_s,
				STOP_GIVE_UP_MS, &busy, &killed, err) < 0) {
		svc_warn(r->call, "%s", (*err)->msg);
		sbx_error_free(err);
	}

	/* The work dir, where the container binds the workspace. */
	ws = r->cwd ? r->cwd : session_work_dir(&cfg->session, &r->rec);
	limit_ms = cfg->session.execute_timeout_s * 1000;
	if (req->timeout_ms &&
	    (req->outlive || (long long)req->timeout_ms < limit_ms))
		limit_ms = (long long)req->timeout_ms;
	r->res->limit_ms = limit_ms;
	/* A command runs only when its row can be written: it may change
	 * anything in the workspace. */
	if (audit_ready(r->au, err) < 0) {
		r->unrecorded = true;
		return cannot_run(r, err);
	}
	started = clock_now_ms();
	r->io.deadline_ms = started + limit_ms;
	/* The name's deadline a second late rather than early: whoever
	 * reads it must not stop the command before this exec would. */
	deadline_s = (long long)time(NULL) + (limit_ms + 999) / 1000 + 1;
	/* The expiry stops a group at its start plus the configured
	 * deadline when that is sooner: an outliving one's start is named
	 * so that it is not. */
	start_s = req->outlive ? deadline_s - cfg->session.execute_timeout_s
			       : (long long)time(NULL);
	rc = procs_group_create(r->init_pid, 0, start_s, deadline_s, &r->grp,
				err);
	if (rc == 0 && unstartable_name(r))
		return 0;
	if (rc == 0 && cfg->session.exec_path != SESSION_EXEC_ENGINE)
		rc = fast_start(r, ws, err);
	if (rc == 0 && !r->fast) {
		struct engine_exec_spec spec = {
		    .cmd = req->shell ? sh : (const char *const *)req->argv,
		    .ncmd = req->shell ? 3 : (size_t)req->argc,
		    .env = req->env,
		    .nenv = req->nenv,
		    .user = r->inspect->user,
		    .working_dir = ws,
		    .attach_stdin = req->in_fd >= 0,
		};

		rc = engine_exec_create_spec(&r->engine, r->inspect->id, &spec,
					     &r->exec_id, err);
		if (rc == 0)
			atomic_fetch_add(&started_engine, 1);
	}
	return rc < 0 ? cannot_run(r, err) : 0;
}

/* Once the stream ended: the exit status, its causes, what was left
 * running.  -1 with *err when the end cannot be told. */
static int exec_conclude(struct run *r, struct sbx_error **err)
{
	const struct svc_config *cfg = &r->s->cfg;
	struct svc_exec_res *res = r->res;
	unsigned long long oom_after = 0;
	size_t killed = 0;
	int code, rc;

	if (r->fast) {
		/* Its process ended (the stream's end waits for it). */
		if (exec_ns_wait(&r->np, 2000, &code) < 0) {
			sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				      "the command's process did not end");
			cannot_run(r, err);
			stop_all(r->call, &r->grp, &killed);
			return -1;
		}
	} else if (exec_finished(&r->engine, r->exec_id, &r->ei, err) < 0) {
		cannot_run(r, err);
		stop_all(r->call, &r->grp, &killed);
		return -1;
	} else {
		code = exit_code_of(&r->ei);
	}
	/* The container's init gone (killed, OOM): the engine may take a
	 * moment to say so; wait for it, so the reason is told.  With its
	 * init alive the container runs: the inspect made before the exec
	 * still says what it did (its limits), and the engine is not asked
	 * again. */
	if (procs_exiting(r->init_pid)) {
		engine_container_info_free(r->inspect);
		r->inspect = NULL;
		for (int i = 0; i < 40; i++) {
			if (session_engine_running_info(&r->engine,
							&cfg->session,
							r->rec.key,
							&r->inspect, err) < 0)
				break;
			engine_container_info_free(r->inspect);
			r->inspect = NULL;
			usleep(50000);
		}
		if (*err) {
			sbx_error_wrap(err, "the command did not finish");
			return cannot_run(r, err);
		}
		if (session_engine_running_info(&r->engine, &cfg->session,
						r->rec.key, &r->inspect,
						err) < 0) {
			/* The container died under the command. */
			sbx_error_wrap(err, "the command did not finish");
			return cannot_run(r, err);
		}
	}
	rc = r->fast ? code : invoke_status(code, &r->ei, &r->io_res);
	res->by_command = r->fast || pid_of(r->ei.pid) != 0;
	if (r->io_res.held) {
		if (code == EXIT_CANNOT_INVOKE && pid_of(r->ei.pid) == 0) {
			/* The engine's reason, not the command's output. */
			struct strbuf sb = STRBUF_INIT;
			size_t n = r->io_res.nhead;

			while (n && (r->io_res.head[n - 1] == '\n' ||
				     r->io_res.head[n - 1] == '\r'))
				n--;
			text_add_escaped(&sb, r->io_res.head, n);
			res->not_started = strbuf_detach(&sb, NULL);
		} else if (svc_sink_write(&r->req->out, r->io_res.head,
					  r->io_res.nhead, err) < 0) {
			sbx_error_free(err);
		}
	}
	strbuf_addf(&r->detail, "exit %d", rc);
	r->exited = true;
	res->ended = true;
	res->end = SVC_EXEC_EXITED;
	res->exit_code = rc;
	if (rc == 128 + 9 /* SIGKILL */ && r->have_oom &&
	    procs_oom_kills(r->init_pid, &oom_after, err) == 0 &&
	    oom_after > r->oom_before) {
		strbuf_addstr(&r->detail, ", out of memory");
		res->oom = true;
		res->memory_limit = r->inspect->host.memory;
	}
	sbx_error_free(err);
	/* What it left running runs on until the deadline, not longer. */
	if (procs_group_count(&r->grp, &res->left_running, err) < 0) {
		svc_warn(r->call, "%s", (*err)->msg);
		sbx_error_free(err);
		stop_all(r->call, &r->grp, &killed);
	} else if (res->left_running) {
		pid_t watcher = 0;
		int lock;

		strbuf_addf(&r->detail,
			    ", %zu left running until the deadline",
			    res->left_running);
		lock = session_watch_lock_open(&r->root, r->rec.key, err);
		if (lock < 0 ||
		    procs_watch(r->init_pid, lock,
				cfg->session.execute_timeout_s, STOP_GRACE_MS,
				STOP_GIVE_UP_MS, &watcher, err) < 0) {
			/* No watcher, no deadline: stop them now. */
			svc_warn(r->call,
				 "%s; stopping what the command left running",
				 (*err)->msg);
			sbx_error_free(err);
			stop_all(r->call, &r->grp, &killed);
		}
		if (lock >= 0)
			close(lock);
	} else {
		procs_group_remove(&r->grp);
	}
	return 0;
}

/* exec-io's stop: whether the run's file says stop, looked at every
 * RUN_STOP_POLL_MS at most. */
static bool run_stop_asked(void *arg)
{
	struct run *r = arg;
	long long now = clock_now_ms();

	if (now < r->stop_next)
		return false;
	r->stop_next = now + RUN_STOP_POLL_MS;
	return session_run_stop_asked(r->run_fd);
}

/* The command could not be started (on the fast path execve, or chdir,
 * failed in the container; or its name is one no path can start): as
 * the engine's exec says it, 127 not found or 126, by sbxcat. */
static int fast_not_started(struct run *r)
{
	struct svc_exec_res *res = r->res;
	struct strbuf sb = STRBUF_INIT;
	int code = r->np.exec_errno == ENOENT ? EXIT_NOT_FOUND
					      : EXIT_CANNOT_INVOKE;

	text_add_escaped(&sb, r->np.why, strlen(r->np.why));
	res->not_started = strbuf_detach(&sb, NULL);
	strbuf_addf(&r->detail, "exit %d", code);
	r->ran = r->exited = true;
	res->ended = true;
	res->end = SVC_EXEC_EXITED;
	res->exit_code = code;
	res->by_command = false;
	procs_group_remove(&r->grp);
	return 0;
}

/* The stream, from the claim to the end. */
static int exec_stream(struct run *r, struct sbx_error **err)
{
	const struct svc_exec_req *req = r->req;
	struct svc_exec_res *res = r->res;
	struct exec_io *io = &r->io;
	size_t killed = 0;
	char secs[32];
	int rc;

	if (r->unstartable || (r->fast && r->np.exec_errno))
		return fast_not_started(r);
	rc = r->fast ? 0
		     : start_claimed(&r->engine, &r->root, r->rec.key,
				     r->exec_id, r->init_pid, &r->grp,
				     io->deadline_ms, &r->conn, &r->pre, err);
	if (rc < 0) {
		/* Whatever it started and the claim reached is stopped. */
		cannot_run(r, err);
		stop_all(r->call, &r->grp, &killed);
		res->stopped = killed;
		return -1;
	}
	if (rc > 0) {
		/* The deadline came while the session's other execs held
		 * the start: timed out, as a command that had started would
		 * have; nothing ran. */
		strbuf_reset(&r->detail);
		strbuf_addf(&r->detail, "timeout after %s s, before it started",
			    svc_exec_seconds(secs, res->limit_ms));
		res->ended = true;
		res->end = SVC_EXEC_TIMED_OUT;
		return 0;
	}
	if (session_record_touch(&r->root, r->rec.key, err) < 0) {
		svc_warn(r->call, "%s", (*err)->msg);
		sbx_error_free(err);
	}
	r->ran = true;

	if (r->fast) {
		/* The pipes are the run's now: it closes stdin at its EOF. */
		io->pipes = true;
		io->conn = -1;
		io->pipe_out[EXEC_IO_STDOUT] = r->np.out_fd[0];
		io->pipe_out[EXEC_IO_STDERR] = r->np.out_fd[1];
		io->pipe_in = r->np.in_fd;
		r->np.in_fd = -1;
		io->pidfd = r->np.pidfd;
	} else {
		io->conn = r->conn;
		io->pre = r->pre.buf;
		io->npre = r->pre.len;
	}
	io->in_fd = req->in_fd;
	if (req->out.write || req->err.write) {
		io->write = sink_write;
		io->write_arg = (void *)req;
	} else {
		io->out_fd[EXEC_IO_STDOUT] = req->out.fd;
		io->out_fd[EXEC_IO_STDERR] = req->err.fd;
	}
	io->max_out = req->max_output ? req->max_output
				      : r->s->cfg.session.max_output;
	res->max_output = io->max_out;
	io->cancel = r->call->cancel;
	if (r->run_fd >= 0) {
		io->stop = run_stop_asked;
		io->stop_arg = r;
	}
	if (exec_io_run(io, &r->io_res, err) < 0 && !r->io_res.timed_out &&
	    !r->io_res.cancelled) {
		/* Our own output went away, or the connection broke: the
		 * command must not outlive us unbounded. */
		bool pipe = (*err)->errnum == EPIPE;

		strbuf_reset(&r->detail);
		strbuf_addstr(&r->detail, pipe ? "failed: output closed"
					       : "failed: stream broken");
		stop_all(r->call, &r->grp, &killed);
		res->stopped = killed;
		if (!pipe)
			return -1;
		sbx_error_free(err);
		res->ended = true;
		res->end = SVC_EXEC_OUTPUT_CLOSED;
		return 0;
	}
	sbx_error_free(err);

	if (r->io_res.timed_out || r->io_res.cancelled) {
		stop_all(r->call, &r->grp, &killed);
		res->stopped = killed;
		if (exec_io_drain(io, &r->io_res, clock_now_ms() + DRAIN_MS,
				  err) < 0)
			sbx_error_free(err);
		res->ended = true;
		if (r->io_res.stop_asked) {
			strbuf_addf(&r->detail,
				    "stopped by its run id, killed %zu",
				    killed);
			res->end = SVC_EXEC_STOPPED;
			return 0;
		}
		if (r->io_res.cancelled) {
			int why = r->call->cancel ? atomic_load(r->call->cancel)
						  : 0;

			if (why > 0)
				strbuf_addf(&r->detail,
					    "cancelled by a signal, killed %zu",
					    killed);
			else
				strbuf_addf(&r->detail,
					    "cancelled: %s, killed %zu",
					    svc_cancel_why(why), killed);
			res->end = SVC_EXEC_CANCELLED;
			return 0;
		}
		/* "timeout" first: the word the auditor's table shows and
		 * searches by (docs/audit.md). */
		strbuf_addf(&r->detail, "timeout after %s s, killed %zu",
			    svc_exec_seconds(secs, res->limit_ms), killed);
		res->end = SVC_EXEC_TIMED_OUT;
		return 0;
	}
	return exec_conclude(r, err);
}

/* The row, whatever happened, unless the audit was not ready. */
static int exec_record(struct run *r, struct sbx_error **err)
{
	struct strbuf target = STRBUF_INIT;
	struct svc_exec_res *res = r->res;
	const char *key = r->rec.key[0] ? r->rec.key : NULL;
	char wid[SESSION_WIRE_ID_MAX + 1];
	struct audit_event ev = {
	    .op = AUDIT_EXECUTE,
	    .tenant = key ? r->rec.tenant : r->call->tenant,
	    /* not found: the caller's row, never the key's chain */
	    .session_key = key,
	    .wire_id = key ? svc_wire_id_of(&r->root, key, wid) : NULL,
	    .asked_key = key ? NULL : r->req->key,
	    .runtime = r->rec.runtime,
	    .ok = r->exited && res->exit_code == 0,
	    .detail = strbuf_str(&r->detail),
	    .has_exit = r->exited,
	    .exit_status = res->exit_code,
	    .bytes = r->ran
			 ? (long long)(r->io_res.bytes[0] + r->io_res.bytes[1])
			 : AUDIT_NONE,
	    .results = AUDIT_NONE,
	    .duration_ms = clock_now_ms() - r->t0,
	};
	int rc;

	command_text(&target, r->req);
	ev.target = strbuf_str(&target);
	rc = audit_event(r->au, &ev, err);
	strbuf_release(&target);
	return rc;
}

/*
 * The command and the directory as the engine's API can carry them: text
 * (JSON strings are UTF-8).  -1 with *err (invalid) naming which, without
 * quoting it.
 */
static int command_check(const struct svc_exec_req *req, struct sbx_error **err)
{
	const char *what = NULL;
	int at = 0;

	if (req->shell && !utf8_valid(req->shell, strlen(req->shell)))
		what = "the shell string";
	for (int i = 0; !what && !req->shell && i < req->argc; i++)
		if (!utf8_valid(req->argv[i], strlen(req->argv[i]))) {
			what = "argument";
			at = i + 1;
		}
	if (!what && req->cwd && !utf8_valid(req->cwd, strlen(req->cwd)))
		what = "the working directory";
	if (!what)
		return 0;
	if (at)
		return sbx_error_set(
		    err, SBX_E_INVALID, 0,
		    "argument %d of the command is not valid "
		    "UTF-8: the engine's API carries text only",
		    at);
	return sbx_error_set(err, SBX_E_INVALID, 0,
			     "%s is not valid UTF-8: the engine's API carries "
			     "text only",
			     what);
}

int svc_exec(const struct svc *s, const struct svc_call *call,
	     const struct svc_exec_req *req, struct svc_exec_res *res,
	     struct sbx_error **err)
{
	return svc_exec_run(s, call, req, res, true, err);
}

int svc_exec_run(const struct svc *s, const struct svc_call *call,
		 const struct svc_exec_req *req, struct svc_exec_res *res,
		 bool row, struct sbx_error **err)
{
	struct run r = {
	    .s = s,
	    .call = call,
	    .req = req,
	    .res = res,
	    .root = SESSION_ROOT_INIT,
	    .engine = ENGINE_INIT,
	    .grp = PROCS_GROUP_INIT,
	    .pre = STRBUF_INIT,
	    .detail = STRBUF_INIT,
	    .conn = -1,
	    .run_fd = -1,
	    .np = EXEC_NS_PROC_INIT,
	};
	struct sbx_error *aerr = NULL;
	int rc;

	memset(res, 0, sizeof(*res));
	/* Refused before anything, with no row: the request is malformed
	 * (no value may reach a row). */
	if (svc_exec_env_check(req->env, req->nenv, err) < 0 ||
	    command_check(req, err) < 0)
		return -1;
	if (svc_audit_open(s, call, &r.au, err) < 0)
		return -1;
	r.t0 = clock_now_ms();
	rc = exec_prepare(&r, err);
	if (rc == 0)
		rc = exec_stream(&r, err);
	/* Its stoppers wait for this. */
	session_run_end(&r.root, r.rec.key, req->run_id, r.run_fd);
	for (int i = 0; i < 2; i++) {
		res->bytes[i] = r.io_res.bytes[i];
		res->cut[i] = r.io_res.cut[i];
	}
	if ((r.exec_id || r.fast || r.unstartable) && r.rec.key[0] &&
	    session_record_touch(&r.root, r.rec.key, &aerr) < 0)
		sbx_error_free(&aerr);
	if (row && !r.unrecorded && exec_record(&r, &aerr) < 0) {
		/* The command's own failure, if any, is said first. */
		sbx_error_chain(&aerr, err);
		*err = aerr;
		rc = -1;
	}
	if (!res->ended)
		res->by_command = false;
	svc_audit_close(call, r.au);
	strbuf_release(&r.detail);
	if (r.conn >= 0)
		close(r.conn);
	if (r.io.pipes && r.io.pipe_in >= 0)
		close(r.io.pipe_in);
	if (r.np.pid > 0) {
		/* Stopped with its group: reaped, killed first if need be. */
		int code;

		if (exec_ns_wait(&r.np, STOP_GIVE_UP_MS, &code) < 0) {
			kill(r.np.pid, SIGKILL);
			exec_ns_wait(&r.np, 2000, &code);
		}
	}
	exec_ns_release(&r.np);
	strbuf_release(&r.pre);
	/* Only an empty group goes (a watched one is its watcher's). */
	if (r.grp.dir)
		procs_group_remove(&r.grp);
	procs_group_release(&r.grp);
	free(r.exec_id);
	free(r.cwd);
	engine_container_info_free(r.inspect);
	session_record_release(&r.rec);
	svc_engine_close(s, &r.engine);
	session_root_close(&r.root);
	return rc;
}

void svc_exec_res_release(struct svc_exec_res *res)
{
	free(res->not_started);
	res->not_started = NULL;
}

int svc_exec_stop(const struct svc *s, const struct svc_call *call,
		  const char *key, const char *run_id, long long wait_ms,
		  bool *running, bool *ended, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct session_record rec;
	int rc;

	memset(&rec, 0, sizeof(rec));
	*running = false;
	*ended = true;
	rc = svc_root_open(s, call, &root, err);
	if (rc == 0)
		rc = session_find(&root, key, call->tenant, &rec, err);
	if (rc == 0)
		rc = session_run_stop(&root, rec.key, run_id, wait_ms, running,
				      ended, err);
	session_record_release(&rec);
	session_root_close(&root);
	return rc;
}

/* An environment entry's name, shown (it is the caller's, never a
 * value). */
static const char *env_name(struct strbuf *sb, const char *e, size_t n)
{
	strbuf_reset(sb);
	text_add_escaped(sb, e, n < 64 ? n : 64);
	if (n > 64)
		strbuf_addstr(sb, "...");
	return sb->buf ? sb->buf : "";
}

static bool env_name_valid(const char *e, size_t n)
{
	if (!n || (e[0] >= '0' && e[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((e[i] >= '0' && e[i] <= '9') ||
		      (e[i] >= 'a' && e[i] <= 'z') ||
		      (e[i] >= 'A' && e[i] <= 'Z') || e[i] == '_'))
			return false;
	return true;
}

static bool utf8_valid(const char *s, size_t len)
{
	uint32_t cp;

	for (size_t i = 0, k; i < len; i += k) {
		k = utf8_decode(s + i, len - i, &cp);
		if (!k || !cp)
			return false;
	}
	return true;
}

static int env_refuse(struct sbx_error **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int env_refuse(struct sbx_error **err, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	sbx_error_set(err, SBX_E_INVALID, 0, "%s", sb.buf);
	sbx_error_why(err ? *err : NULL, SBX_R_BAD_ENV, 0, 0);
	strbuf_release(&sb);
	return -1;
}

int svc_exec_env_check(const char *const *env, size_t n, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	size_t total = 0;
	int rc = 0;

	if (n > SVC_EXEC_ENV_COUNT_MAX)
		return env_refuse(err, "%zu environment variables; at most %d",
				  n, SVC_EXEC_ENV_COUNT_MAX);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *e = env[i], *eq = strchr(e, '=');
		size_t nl = eq ? (size_t)(eq - e) : 0, vl;

		if (!eq) {
			rc = env_refuse(err,
					"environment entry %zu has no '=': "
					"give NAME=VALUE",
					i + 1);
			break;
		}
		vl = strlen(eq + 1);
		total += nl + vl + 1;
		if (!env_name_valid(e, nl) || nl > SVC_EXEC_ENV_NAME_MAX)
			rc = env_refuse(err,
					"environment variable '%s': a name is "
					"1 to %d letters, digits and '_', not "
					"starting with a digit",
					env_name(&sb, e, nl),
					SVC_EXEC_ENV_NAME_MAX);
		else if (vl > SVC_EXEC_ENV_VALUE_MAX)
			rc = env_refuse(err,
					"environment variable '%s': its value "
					"is %zu bytes, over %d",
					env_name(&sb, e, nl), vl,
					SVC_EXEC_ENV_VALUE_MAX);
		else if (!utf8_valid(eq + 1, vl))
			rc = env_refuse(err,
					"environment variable '%s': its value "
					"is not valid UTF-8",
					env_name(&sb, e, nl));
		else if (total > SVC_EXEC_ENV_TOTAL_MAX)
			rc = env_refuse(err,
					"the environment is over %d bytes in "
					"all (at '%s')",
					SVC_EXEC_ENV_TOTAL_MAX,
					env_name(&sb, e, nl));
		for (size_t j = 0; j < i && rc == 0; j++)
			if (strncmp(env[j], e, nl + 1) == 0)
				rc = env_refuse(err,
						"environment variable '%s' is "
						"given twice",
						env_name(&sb, e, nl));
	}
	strbuf_release(&sb);
	return rc;
}

int svc_exec_seconds_parse(const char *s, unsigned long long *ms,
			   struct sbx_error **err)
{
	unsigned long long whole = 0, frac = 0;
	size_t i = 0, nd = 0, nf = 0;
	bool up = false;

	for (; s[i] >= '0' && s[i] <= '9'; i++, nd++)
		if (nd < 12)
			whole = whole * 10 + (unsigned long long)(s[i] - '0');
	if (s[i] == '.')
		for (i++; s[i] >= '0' && s[i] <= '9'; i++, nf++) {
			if (nf < 3)
				frac = frac * 10 +
				       (unsigned long long)(s[i] - '0');
			else if (s[i] != '0')
				up = true;
		}
	if (s[i] || (!nd && !nf) || nd > 12) {
		struct strbuf sb = STRBUF_INIT;

		text_add_escaped(&sb, s, strlen(s) < 32 ? strlen(s) : 32);
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "'%s' is not a number of seconds (digits, "
			      "with a fraction if need be: 30, 0.5)",
			      sb.buf ? sb.buf : "");
		strbuf_release(&sb);
		return -1;
	}
	for (; nf < 3; nf++)
		frac *= 10;
	*ms = whole * 1000 + frac + (up ? 1 : 0);
	if (*ms == 0)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "'%s' seconds: a deadline must be more "
				     "than 0",
				     s);
	if (*ms > SECONDS_MAX * 1000)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "'%s' seconds: at most %llu (7 days)", s,
				     SECONDS_MAX);
	return 0;
}

const char *svc_exec_seconds(char buf[32], long long ms)
{
	int n;

	if (ms % 1000 == 0)
		snprintf(buf, 32, "%lld", ms / 1000);
	else {
		n = snprintf(buf, 32, "%lld.%03lld", ms / 1000, ms % 1000);
		while (n > 0 && buf[n - 1] == '0')
			buf[--n] = '\0';
	}
	return buf;
}

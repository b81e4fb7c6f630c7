/*
 * cmd-exec.c - sbxcat exec KEY [-i] [--timeout S] [--max-output BYTES]
 * [--tenant T] -- CMD [ARG...] | -c STRING: run a command in a session,
 * with a deadline that holds (brief section 7, docs/sessions.md).
 *
 * The command runs as the session's user, in the workspace, with the
 * runtime's environment, in a cgroup of its own (procs.h) that every
 * process it starts is born in and cannot leave.  Its output is streamed
 * as it comes (exec-io.c) and its exit status is ours; sbxcat's own
 * failures are 125, as `docker exec` and timeout(1) do:
 *   124  the deadline passed: every process the command started stopped
 *   125  sbxcat could not run it (no such session, not running, engine)
 *   126  the command cannot be invoked; 127  not found
 * Nothing the command wrote is ever quoted in what sbxcat says, and
 * --verdict-fd gives the caller a channel the command cannot write.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "cli/cmd.h"
#include "engine/engine.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "session/exec-io.h"
#include "session/procs.h"
#include "session/session-engine.h"
#include "session/session.h"
#include "basic/sig.h"
#include "basic/util.h"
#include "basic/xjson.h"

enum {
	EXIT_TIMEOUT = 124,
	EXIT_CANNOT_RUN = 125,
	EXIT_CANNOT_INVOKE = 126,
	EXIT_NOT_FOUND = 127,
};

/* TERM, then the group's atomic kill after this, until that. */
#define STOP_GRACE_MS 2000
#define STOP_GIVE_UP_MS 6000
/* How long the engine may take to report the exec's process. */
#define PID_WAIT_MS 10000
/* After the kill, how long the stream's tail may take to drain. */
#define DRAIN_MS 2000

extern const struct cmd_entry cmd_exec_entry;

/* Print an error of sbxcat's own and give 125 (a usage error stays 2);
 * the audit's detail of it into detail. */
static int cannot_run(struct sbx_error **err, struct strbuf *detail)
{
	strbuf_reset(detail);
	audit_detail_of(detail, *err);
	if ((*err)->errnum == ECANCELED) {
		sbx_error_free(err);
		return sig_exit_status();
	}
	if ((*err)->kind == SBX_E_INVALID)
		return cmd_report(err);
	cmd_report(err);
	return EXIT_CANNOT_RUN;
}

static const char *plural(unsigned long long n, const char *one,
			  const char *many)
{
	return n == 1 ? one : many;
}

/* The exec's ExitCode; 125 when the engine gives none. */
static int exit_code_of(json_t *exec_inspect)
{
	json_t *ec = json_object_get(exec_inspect, "ExitCode");

	return json_is_integer(ec) ? (int)json_integer_value(ec)
				   : EXIT_CANNOT_RUN;
}

/* Stop everything in the command's cgroup; say on stderr what could not
 * be stopped. */
static void stop_all(const struct procs_group *g, size_t *killed)
{
	struct sbx_error *err = NULL;
	size_t left = 0;

	*killed = 0;
	if (procs_group_stop(g, STOP_GRACE_MS, STOP_GIVE_UP_MS, killed, &left,
			     &err) < 0) {
		fprintf(stderr, "sbxcat: warning: %s\n", err->msg);
		sbx_error_free(&err);
		return;
	}
	if (left)
		fprintf(stderr,
			"sbxcat: warning: %zu %s of the command could not be "
			"stopped\n",
			left, plural(left, "process", "processes"));
	else
		procs_group_remove(g);
}

static pid_t pid_of(json_t *j, const char *obj)
{
	json_t *o = obj ? json_object_get(j, obj) : j;
	json_int_t pid = json_integer_value(json_object_get(o, "Pid"));

	return pid > 0 && pid < (1 << 30) ? (pid_t)pid : 0;
}

/* The exec's record once its process has ended (it may lag the stream's
 * end by a moment). */
static int exec_finished(struct engine *e, const char *exec_id, json_t **ei,
			 struct sbx_error **err)
{
	for (int i = 0; i < 100; i++) {
		if (engine_exec_inspect(e, exec_id, ei, err) < 0)
			return -1;
		if (!json_is_true(json_object_get(*ei, "Running")))
			return 0;
		json_decref(*ei);
		*ei = NULL;
		usleep(20000);
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
static int invoke_status(int code, json_t *ei, const struct exec_io_result *r)
{
	if (code != EXIT_CANNOT_INVOKE || pid_of(ei, NULL) != 0)
		return code;
	if (r->nhead &&
	    (memmem(r->head, r->nhead, "executable file not found", 25) ||
	     memmem(r->head, r->nhead, "no such file or directory", 25)))
		return EXIT_NOT_FOUND;
	return code;
}

/* The command as the audit's target: -c's string, or argv joined by
 * spaces, an argument with a blank or a quote in single quotes (as sh
 * would take it). */
static void command_text(struct strbuf *out, const char *shell, char **argv,
			 int argc)
{
	if (shell) {
		strbuf_addstr(out, shell);
		return;
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

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

/*
 * What --verdict-fd gets: how the exec ended, from sbxcat, on a descriptor
 * the command cannot reach (nothing of sbxcat's is passed into the
 * container), so a command that prints sbxcat's words or exits 124 itself
 * cannot pass for sbxcat's verdict.
 */
struct verdict {
	int fd;		 /* -1: none asked for */
	bool by_command; /* the status is the command's own exit */
	bool timed_out, oom, cancelled;
	size_t stopped, left_running;
	unsigned long long bytes[2];
	bool cut[2];
};

static void verdict_write(const struct verdict *v, int status)
{
	json_t *j;
	char *text;

	if (v->fd < 0)
		return;
	j = xjson_pack(
	    "{s:s, s:i, s:b, s:b, s:b, s:I, s:I, "
	    "s:{s:I, s:I}, s:{s:b, s:b}}",
	    "by", v->by_command ? "command" : "sbxcat", "status", status,
	    "timed_out", v->timed_out, "oom", v->oom, "cancelled", v->cancelled,
	    "stopped", (json_int_t)v->stopped, "left_running",
	    (json_int_t)v->left_running, "bytes", "stdout",
	    (json_int_t)v->bytes[0], "stderr", (json_int_t)v->bytes[1], "cut",
	    "stdout", v->cut[0], "stderr", v->cut[1]);
	text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	if (!text)
		die_oom();
	if (write_all(v->fd, text, strlen(text)) < 0 ||
	    write_all(v->fd, "\n", 1) < 0)
		fprintf(stderr,
			"sbxcat: warning: cannot write the verdict to "
			"descriptor %d: %s\n",
			v->fd, strerror(errno));
	free(text);
}

/* --verdict-fd N: an open descriptor, for writing, not 0, 1 or 2. */
static int verdict_fd(const char *arg, int *fd)
{
	unsigned long long n;
	int rc = cmd_parse_count(&cmd_exec_entry, "--verdict-fd", arg, 1 << 20,
				 &n),
	    fl;

	if (rc)
		return rc;
	if (n < 3)
		return cmd_usage_error(
		    &cmd_exec_entry,
		    "--verdict-fd %llu: not stdin, stdout or "
		    "stderr (the command writes those)",
		    n);
	fl = fcntl((int)n, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
		return cmd_usage_error(&cmd_exec_entry,
				       "--verdict-fd %llu: not a descriptor "
				       "open for writing",
				       n);
	fcntl((int)n, F_SETFD, FD_CLOEXEC);
	*fd = (int)n;
	return 0;
}

/* The exec's process, once the engine has started it: its inspect. */
static int exec_started(struct engine *e, const char *exec_id, json_t **ei,
			struct sbx_error **err)
{
	long long until = clock_now_ms() + PID_WAIT_MS;
	useconds_t nap = 1000;

	for (;;) {
		if (engine_exec_inspect(e, exec_id, ei, err) < 0)
			return -1;
		/* Before the engine has started it: not running, no Pid,
		 * no ExitCode; once it ended (or could not start): an
		 * ExitCode. */
		if (pid_of(*ei, NULL) ||
		    json_is_integer(json_object_get(*ei, "ExitCode")))
			return 0;
		json_decref(*ei);
		*ei = NULL;
		if (clock_now_ms() >= until)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "the engine did not report the "
					     "command's process within %d s",
					     PID_WAIT_MS / 1000);
		/* Usually a few ms; an engine under load is not asked
		 * thousands of times meanwhile. */
		usleep(nap);
		if (nap < 50000)
			nap *= 2;
	}
}

/*
 * Start the exec and put its processes in g, under the session's exec
 * lock: no other exec of the session starts between this one's start and
 * its claim, so what the container's cgroup holds then is this exec's.
 */
static int start_claimed(struct engine *e, struct session_root *root,
			 const char *key, const char *exec_id, pid_t init_pid,
			 const struct procs_group *g, long long deadline_ms,
			 int *conn, struct strbuf *pre, struct sbx_error **err)
{
	json_t *ei = NULL;
	size_t moved = 0;
	int lock = session_exec_lock(root, key, err), rc;

	if (lock < 0)
		return -1;
	rc = engine_exec_attach(e, exec_id, deadline_ms, conn, pre, err);
	if (rc == 0)
		rc = exec_started(e, exec_id, &ei, err);
	if (rc == 0)
		rc = procs_group_claim(g, init_pid, &moved, err);
	json_decref(ei);
	session_keydir_unlock(lock);
	return rc;
}

static int run_exec(struct sbx_ctx *ctx, int argc, char **argv,
		    struct verdict *vd)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS,
	    {"interactive", no_argument, NULL, 'i'},
	    {"timeout", required_argument, NULL, 't'},
	    {"max-output", required_argument, NULL, 'm'},
	    {"tenant", required_argument, NULL, 'T'},
	    {"command", required_argument, NULL, 'c'},
	    {"verdict-fd", required_argument, NULL, 'V'},
	    {0}};
	struct sbx_error *err = NULL;
	struct session_config cfg = {0};
	struct session_root root = SESSION_ROOT_INIT;
	struct session_record rec = {0};
	struct engine engine = ENGINE_INIT;
	struct procs_group grp = PROCS_GROUP_INIT;
	json_t *inspect = NULL, *body = NULL, *cmdv, *ei = NULL;
	const char *tenant = NULL, *shell = NULL, *key = NULL, *user,
		   *cid = NULL;
	char *exec_id = NULL, *ws = NULL;
	bool interactive = false, have_oom = false;
	unsigned long long timeout_s = 0, max_out = 0, oom_before = 0,
			   oom_after = 0;
	struct strbuf pre = STRBUF_INIT, detail = STRBUF_INIT;
	struct exec_io io = {0};
	struct audit *au = NULL;
	bool ran = false, exited = false, unrecorded = false;
	struct exec_io_result res = {0};
	long long started, limit_s, t0, deadline_ms;
	pid_t init_pid, watcher = 0;
	size_t killed = 0, busy = 0;
	int c, rc = 0, conn = -1, code;
	char **cmd = NULL;
	int ncmd = 0;

	for (;;) {
		c = getopt_long(argc, argv,
				"+" COMMON_SHORTOPTS "it:m:c:", longopts, NULL);
		if (c == -1) {
			/* KEY may come before or among the options; what
			 * follows "--" (or a second operand) is the command. */
			if (optind < argc && !key &&
			    strcmp(argv[optind - 1], "--") != 0) {
				key = argv[optind++];
				continue;
			}
			break;
		}
		switch (c) {
		case 'i':
			interactive = true;
			break;
		case 't':
			if ((rc = cmd_parse_count(&cmd_exec_entry, "--timeout",
						  optarg, 7 * 86400ULL,
						  &timeout_s)))
				return rc;
			break;
		case 'm':
			if ((rc = cmd_parse_count(&cmd_exec_entry,
						  "--max-output", optarg,
						  1ULL << 40, &max_out)))
				return rc;
			break;
		case 'T':
			tenant = optarg;
			break;
		case 'c':
			shell = optarg;
			break;
		case 'V':
			if ((rc = verdict_fd(optarg, &vd->fd)))
				return rc;
			break;
		default:
			rc = cmd_common_option(ctx, &cmd_exec_entry, c, optarg);
			if (rc)
				return rc < 0 ? 0 : rc;
		}
	}
	if (!key && optind < argc)
		key = argv[optind++];
	cmd = argv + optind;
	ncmd = argc - optind;
	if (!key)
		return cmd_usage_error(&cmd_exec_entry,
				       "which session? KEY is missing");
	if (shell && ncmd)
		return cmd_usage_error(&cmd_exec_entry,
				       "give the command after -- or as -c "
				       "STRING, not both");
	if (!shell && !ncmd)
		return cmd_usage_error(&cmd_exec_entry,
				       "no command: give it after -- or as -c "
				       "STRING");
	tenant = cmd_tenant(tenant);
	if (cmd_audit_open(ctx, &au, &err) < 0)
		return cmd_report(&err);
	t0 = clock_now_ms();

	if (cmd_session_begin(ctx, &cfg, &root, &err) < 0 ||
	    session_find(&root, key, tenant, &rec, &err) < 0 ||
	    cmd_engine_begin(ctx, &engine, &err) < 0 ||
	    session_engine_running(&engine, &cfg, rec.key, &inspect, &err) <
		0 ||
	    procs_usable(&err) < 0) {
		rc = cannot_run(&err, &detail);
		goto out;
	}
	init_pid = pid_of(inspect, "State");
	if (!init_pid) {
		sbx_error_set(&err, SBX_E_UNAVAILABLE, 0,
			      "the engine gives no process for session '%s'",
			      rec.key);
		rc = cannot_run(&err, &detail);
		goto out;
	}
	if (procs_oom_kills(init_pid, &oom_before, &err) == 0)
		have_oom = true;
	sbx_error_free(&err);
	/* What an earlier exec left past its deadline (its watcher gone). */
	if (procs_groups_expire(init_pid, (long long)time(NULL),
				cfg.execute_timeout_s, STOP_GIVE_UP_MS, &busy,
				&killed, &err) < 0) {
		fprintf(stderr, "sbxcat: warning: %s\n", err->msg);
		sbx_error_free(&err);
	}
	killed = 0;

	cmdv = json_array();
	if (shell) {
		json_array_append_new(cmdv, json_string("/bin/sh"));
		json_array_append_new(cmdv, json_string("-c"));
		json_array_append_new(cmdv, xjson_string(shell));
	} else {
		for (int i = 0; i < ncmd; i++)
			json_array_append_new(cmdv, xjson_string(cmd[i]));
	}
	ws = session_workspace_path(&root, rec.key);
	user = json_string_value(
	    json_object_get(json_object_get(inspect, "Config"), "User"));
	body = xjson_pack("{s:b, s:b, s:b, s:b, s:o, s:s, s:s, s:b}",
			  "AttachStdin", interactive, "AttachStdout", 1,
			  "AttachStderr", 1, "Tty", 0, "Cmd", cmdv, "User",
			  user ? user : "", "WorkingDir", ws, "Privileged", 0);
	limit_s = cfg.execute_timeout_s;
	if (timeout_s && (long long)timeout_s < limit_s)
		limit_s = (long long)timeout_s;
	cid = json_string_value(json_object_get(inspect, "Id"));
	/* A command runs only when its row can be written: it may change
	 * anything in the workspace. */
	if (audit_ready(au, &err) < 0) {
		unrecorded = true;
		rc = cannot_run(&err, &detail);
		goto out;
	}
	started = clock_now_ms();
	deadline_ms = started + limit_s * 1000;
	/* The name's deadline a second late rather than early: whoever
	 * reads it must not stop the command before this exec would. */
	if (procs_group_create(init_pid, 0, (long long)time(NULL),
			       (long long)time(NULL) + limit_s + 1, &grp,
			       &err) < 0 ||
	    engine_exec_create(&engine, cid, body, &exec_id, &err) < 0) {
		rc = cannot_run(&err, &detail);
		goto out;
	}
	if (start_claimed(&engine, &root, rec.key, exec_id, init_pid, &grp,
			  deadline_ms, &conn, &pre, &err) < 0) {
		/* Whatever it started and the claim reached is stopped. */
		rc = cannot_run(&err, &detail);
		stop_all(&grp, &killed);
		vd->stopped = killed;
		goto out;
	}
	if (session_record_touch(&root, rec.key, &err) < 0) {
		fprintf(stderr, "sbxcat: warning: %s\n", err->msg);
		sbx_error_free(&err);
	}
	ran = true;

	signal(SIGPIPE, SIG_IGN);
	io.conn = conn;
	io.pre = pre.buf;
	io.npre = pre.len;
	io.in_fd = interactive ? STDIN_FILENO : -1;
	io.out_fd[EXEC_IO_STDOUT] = STDOUT_FILENO;
	io.out_fd[EXEC_IO_STDERR] = STDERR_FILENO;
	io.max_out = max_out ? max_out : cfg.max_output;
	io.deadline_ms = deadline_ms;
	io.cancel = sig_flag();
	fflush(stdout);
	if (exec_io_run(&io, &res, &err) < 0 && !res.timed_out &&
	    !res.cancelled) {
		/* Our own stdout or stderr went away, or the connection
		 * broke: the command must not outlive us unbounded. */
		bool pipe = err->errnum == EPIPE;
		strbuf_reset(&detail);
		strbuf_addstr(&detail, pipe ? "failed: output closed"
					    : "failed: stream broken");
		if (!pipe)
			cmd_report(&err);
		sbx_error_free(&err);
		stop_all(&grp, &killed);
		vd->stopped = killed;
		rc = pipe ? 128 + SIGPIPE : EXIT_CANNOT_RUN;
		goto out;
	}
	sbx_error_free(&err);

	if (res.timed_out || res.cancelled) {
		stop_all(&grp, &killed);
		vd->stopped = killed;
		if (exec_io_drain(&io, &res, clock_now_ms() + DRAIN_MS, &err) <
		    0)
			sbx_error_free(&err);
		if (res.cancelled) {
			strbuf_addf(&detail,
				    "cancelled by a signal, killed %zu",
				    killed);
			vd->cancelled = true;
			rc = sig_exit_status();
			goto out;
		}
		strbuf_addf(&detail, "timed out after %lld s, killed %zu",
			    limit_s, killed);
		fprintf(stderr,
			"sbxcat: command timed out after %lld s; stopped %zu "
			"%s; it wrote %llu %s to stdout and %llu %s to "
			"stderr\n",
			limit_s, killed, plural(killed, "process", "processes"),
			res.bytes[0], plural(res.bytes[0], "byte", "bytes"),
			res.bytes[1], plural(res.bytes[1], "byte", "bytes"));
		vd->timed_out = true;
		rc = EXIT_TIMEOUT;
		goto out;
	}

	if (exec_finished(&engine, exec_id, &ei, &err) < 0) {
		rc = cannot_run(&err, &detail);
		stop_all(&grp, &killed);
		goto out;
	}
	code = exit_code_of(ei);
	json_decref(inspect);
	inspect = NULL;
	/* The container's init gone (killed, OOM): the engine may take a
	 * moment to say so; wait for it, so the reason is told. */
	if (procs_exiting(init_pid)) {
		for (int i = 0; i < 40; i++) {
			if (session_engine_running(&engine, &cfg, rec.key,
						   &inspect, &err) < 0)
				break;
			json_decref(inspect);
			inspect = NULL;
			usleep(50000);
		}
		if (err) {
			sbx_error_wrap(&err, "the command did not finish");
			rc = cannot_run(&err, &detail);
			goto out;
		}
	}
	if (session_engine_running(&engine, &cfg, rec.key, &inspect, &err) <
	    0) {
		/* The container died under the command. */
		sbx_error_wrap(&err, "the command did not finish");
		rc = cannot_run(&err, &detail);
		goto out;
	}
	rc = invoke_status(code, ei, &res);
	vd->by_command = pid_of(ei, NULL) != 0;
	if (res.held) {
		if (code == EXIT_CANNOT_INVOKE && pid_of(ei, NULL) == 0) {
			/* The engine's reason, not the command's output. */
			struct strbuf sb = STRBUF_INIT;
			size_t n = res.nhead;
			while (n && (res.head[n - 1] == '\n' ||
				     res.head[n - 1] == '\r'))
				n--;
			text_add_escaped(&sb, res.head, n);
			fprintf(stderr,
				"sbxcat: the command could not be "
				"started: %s\n",
				strbuf_str(&sb));
			strbuf_release(&sb);
		} else {
			fwrite(res.head, 1, res.nhead, stdout);
		}
	}
	strbuf_addf(&detail, "exit %d", rc);
	exited = true;
	if (rc == 128 + SIGKILL && have_oom &&
	    procs_oom_kills(init_pid, &oom_after, &err) == 0 &&
	    oom_after > oom_before) {
		strbuf_addstr(&detail, ", out of memory");
		vd->oom = true;
		fprintf(stderr,
			"sbxcat: the command was killed by the out-of-memory "
			"killer (memory limit %lld bytes)\n",
			(long long)json_integer_value(json_object_get(
			    json_object_get(inspect, "HostConfig"), "Memory")));
	}
	sbx_error_free(&err);
	/* What it left running runs on until the deadline, not longer. */
	if (procs_group_count(&grp, &vd->left_running, &err) < 0) {
		fprintf(stderr, "sbxcat: warning: %s\n", err->msg);
		sbx_error_free(&err);
		stop_all(&grp, &killed);
	} else if (vd->left_running) {
		strbuf_addf(&detail, ", %zu left running until the deadline",
			    vd->left_running);
		int lock = session_watch_lock_open(&root, rec.key, &err);

		if (lock < 0 ||
		    procs_watch(init_pid, lock, cfg.execute_timeout_s,
				STOP_GRACE_MS, STOP_GIVE_UP_MS, &watcher,
				&err) < 0) {
			/* No watcher, no deadline: stop them now. */
			fprintf(stderr,
				"sbxcat: warning: %s; stopping what "
				"the command left running\n",
				err->msg);
			sbx_error_free(&err);
			stop_all(&grp, &killed);
		}
		if (lock >= 0)
			close(lock);
	} else {
		procs_group_remove(&grp);
	}
out:
	for (int i = 0; i < 2; i++)
		if (res.cut[i])
			fprintf(stderr,
				"sbxcat: %s cut at %llu bytes; the command "
				"wrote %llu bytes to it\n",
				i ? "stderr" : "stdout", io.max_out,
				res.bytes[i]);
	if (exec_id && rec.key[0] &&
	    session_record_touch(&root, rec.key, &err) < 0)
		sbx_error_free(&err);
	if (!unrecorded) {
		struct strbuf target = STRBUF_INIT;
		struct audit_event ev = {
		    .op = AUDIT_EXECUTE,
		    .tenant = rec.key[0] ? rec.tenant : tenant,
		    /* not found: the caller's row, never the key's chain */
		    .session_key = rec.key[0] ? rec.key : NULL,
		    .asked_key = rec.key[0] ? NULL : key,
		    .runtime = rec.runtime,
		    .ok = exited && rc == 0,
		    .detail = strbuf_str(&detail),
		    .has_exit = exited,
		    .exit_status = rc,
		    .bytes = ran ? (long long)(res.bytes[0] + res.bytes[1])
				 : AUDIT_NONE,
		    .results = AUDIT_NONE,
		    .duration_ms = clock_now_ms() - t0,
		};

		command_text(&target, shell, cmd, ncmd);
		ev.target = strbuf_str(&target);
		if (audit_event(au, &ev, &err) < 0) {
			/* Said on stderr; a command that succeeded is then
			 * 125, sbxcat's own failure (its own status kept
			 * otherwise, as a timeout's 124 is). */
			cmd_report(&err);
			if (!rc) {
				rc = EXIT_CANNOT_RUN;
				vd->by_command = false;
			}
		}
		strbuf_release(&target);
	}
	for (int i = 0; i < 2; i++) {
		vd->bytes[i] = res.bytes[i];
		vd->cut[i] = res.cut[i];
	}
	if (!exited)
		vd->by_command = false;
	cmd_audit_close(au);
	strbuf_release(&detail);
	if (conn >= 0)
		close(conn);
	strbuf_release(&pre);
	/* Only an empty group goes (a watched one is its watcher's). */
	if (grp.dir)
		procs_group_remove(&grp);
	procs_group_release(&grp);
	free(exec_id);
	free(ws);
	json_decref(body);
	json_decref(ei);
	json_decref(inspect);
	session_record_release(&rec);
	engine_release(&engine);
	session_root_close(&root);
	session_config_release(&cfg);
	return rc;
}

static int cmd_exec(struct sbx_ctx *ctx, int argc, char **argv)
{
	struct verdict vd = {.fd = -1};
	int rc = run_exec(ctx, argc, argv, &vd);

	verdict_write(&vd, rc);
	return rc;
}

const struct cmd_entry cmd_exec_entry = {
    .name = "exec",
    .usage = "KEY [-i] [--timeout S] [--max-output BYTES] [--tenant T] "
	     "[--verdict-fd FD] (-- CMD [ARG...] | -c STRING)",
    .summary = "run a command in a session, with a deadline that holds",
    .exec = cmd_exec,
    .epilog = "Exit status: the command's own; 124 when it was stopped at "
	      "its deadline; 125 when sbxcat could not run it; 126 when it "
	      "cannot be invoked; 127 when it is not found.  --verdict-fd FD "
	      "writes one JSON object to FD at the end, saying whether the "
	      "status is the command's or sbxcat's.",
};

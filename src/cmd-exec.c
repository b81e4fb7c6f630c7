/*
 * cmd-exec.c - sbxcat exec KEY [-i] [--timeout S] [--max-output BYTES]
 * [--tenant T] -- CMD [ARG...] | -c STRING: run a command in a session,
 * with a deadline that holds (brief section 7, docs/sessions.md).
 *
 * The command runs as the session's user, in the workspace, with the
 * runtime's environment and a marker (procs.h) every process it starts
 * inherits.  Its output is streamed as it comes (exec-io.c) and its exit
 * status is ours; sbxcat's own failures are 125, as `docker exec` and
 * timeout(1) do:
 *   124  the deadline passed: every process the command started stopped
 *   125  sbxcat could not run it (no such session, not running, engine)
 *   126  the command cannot be invoked; 127  not found
 * Nothing the command wrote is ever quoted in what sbxcat says.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "cmd.h"
#include "engine.h"
#include "error.h"
#include "exec-io.h"
#include "procs.h"
#include "session-engine.h"
#include "session.h"
#include "sig.h"
#include "util.h"
#include "xjson.h"

enum {
	EXIT_TIMEOUT = 124,
	EXIT_CANNOT_RUN = 125,
	EXIT_CANNOT_INVOKE = 126,
	EXIT_NOT_FOUND = 127,
};

/* TERM, then KILL after this; re-scanning and killing until that, then
 * the container is frozen for the rest (stop_all). */
#define STOP_GRACE_MS 2000
#define STOP_GIVE_UP_MS 4000
/* The engine's freeze can fail while processes fork: tried this often. */
#define PAUSE_TRIES 5
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
	if ((*err)->status == SBX_EXIT_USAGE)
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

/*
 * Stop the command's processes; say on stderr what could not be.  When
 * the scan is outrun (a fork bomb whose processes live for milliseconds:
 * reading their environments waits on their forks), the container is
 * frozen for a moment (pause), every process still carrying the marker
 * is sent SIGKILL while nothing can fork, and it is thawed: other execs'
 * processes are paused for that moment and never signalled.
 */
static void stop_all(struct engine *e, const char *id, pid_t init_pid,
		     pid_t exec_pid, const char *marker, size_t *killed)
{
	struct sbx_error *err = NULL;
	size_t left = 0, more = 0, n = 0;

	*killed = 0;
	if (procs_stop(init_pid, exec_pid, marker, STOP_GRACE_MS,
		       STOP_GIVE_UP_MS, killed, &left, &err) < 0)
		goto warn;
	if (!left)
		return;
	for (int i = 0; engine_container_pause(e, id, &err) < 0; i++) {
		if (i + 1 == PAUSE_TRIES)
			goto warn;
		sbx_error_free(&err);
		usleep(100000);
	}
	if (procs_signal(init_pid, exec_pid, marker, SIGKILL, &n, &err) < 0) {
		struct sbx_error *e2 = NULL;
		engine_container_unpause(e, id, &e2);
		sbx_error_free(&e2);
		goto warn;
	}
	if (engine_container_unpause(e, id, &err) < 0)
		goto warn;
	*killed += n;
	if (procs_stop(init_pid, exec_pid, marker, 0, STOP_GRACE_MS, &more,
		       &left, &err) < 0)
		goto warn;
	*killed += more;
	if (left)
		fprintf(stderr,
			"sbxcat: warning: %zu %s of the command could not be "
			"stopped\n",
			left, plural(left, "process", "processes"));
	return;
warn:
	fprintf(stderr, "sbxcat: warning: %s\n", err->msg);
	sbx_error_free(&err);
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
	return sbx_error_set(err, SBX_EXIT_ENV, 0,
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

static int cmd_exec(struct sbx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS,
	    {"interactive", no_argument, NULL, 'i'},
	    {"timeout", required_argument, NULL, 't'},
	    {"max-output", required_argument, NULL, 'm'},
	    {"tenant", required_argument, NULL, 'T'},
	    {"command", required_argument, NULL, 'c'},
	    {0}};
	struct sbx_error *err = NULL;
	struct session_config cfg = {0};
	struct session_root root = SESSION_ROOT_INIT;
	struct session_record rec = {0};
	struct engine engine = ENGINE_INIT;
	json_t *inspect = NULL, *body = NULL, *cmdv, *ei = NULL;
	const char *tenant = NULL, *shell = NULL, *key = NULL, *user,
		   *cid = NULL;
	char marker[PROCS_MARKER_LEN + 1], *exec_id = NULL, *ws = NULL;
	bool interactive = false, have_oom = false;
	unsigned long long timeout_s = 0, max_out = 0, oom_before = 0,
			   oom_after = 0;
	struct strbuf pre = STRBUF_INIT, detail = STRBUF_INIT;
	struct exec_io io = {0};
	struct audit *au = NULL;
	bool ran = false, exited = false, unrecorded = false;
	struct exec_io_result res = {0};
	long long started, limit_s, t0;
	pid_t init_pid;
	size_t killed = 0;
	int c, rc = 0, conn = -1, code;
	char **cmd = NULL;
	int ncmd = 0;

	for (;;) {
		c = getopt_long(argc, argv, "+" COMMON_SHORTOPTS "it:m:c:",
				longopts, NULL);
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
	t0 = engine_now_ms();

	if (cmd_session_begin(ctx, &cfg, &root, &err) < 0 ||
	    cmd_session_find(&root, key, tenant, &rec, &err) < 0 ||
	    cmd_engine_begin(&engine, &err) < 0 ||
	    session_engine_running(&engine, &cfg, rec.key, &inspect, &err) < 0 ||
	    procs_usable(&err) < 0 || procs_marker(marker, &err) < 0) {
		rc = cannot_run(&err, &detail);
		goto out;
	}
	init_pid = pid_of(inspect, "State");
	if (init_pid &&
	    procs_oom_kills(init_pid, &oom_before, &err) == 0)
		have_oom = true;
	sbx_error_free(&err);

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
	body = xjson_pack("{s:b, s:b, s:b, s:b, s:o, s:[s], s:s, s:s, s:b}",
			  "AttachStdin", interactive, "AttachStdout", 1,
			  "AttachStderr", 1, "Tty", 0, "Cmd", cmdv, "Env",
			  marker, "User", user ? user : "", "WorkingDir", ws,
			  "Privileged", 0);
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
	started = engine_now_ms();
	if (engine_exec_create(&engine, cid, body, &exec_id, &err) < 0 ||
	    engine_exec_attach(&engine, exec_id, started + limit_s * 1000,
			       &conn, &pre, &err) < 0) {
		rc = cannot_run(&err, &detail);
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
	io.deadline_ms = started + limit_s * 1000;
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
		if (engine_exec_inspect(&engine, exec_id, &ei, &err) == 0)
			stop_all(&engine, cid, init_pid, pid_of(ei, NULL),
				 marker, &killed);
		sbx_error_free(&err);
		rc = pipe ? 128 + SIGPIPE : EXIT_CANNOT_RUN;
		goto out;
	}
	sbx_error_free(&err);

	if (res.timed_out || res.cancelled) {
		if (engine_exec_inspect(&engine, exec_id, &ei, &err) < 0) {
			fprintf(stderr, "sbxcat: warning: %s\n", err->msg);
			sbx_error_free(&err);
		}
		stop_all(&engine, cid, init_pid, ei ? pid_of(ei, NULL) : 0,
			 marker, &killed);
		if (exec_io_drain(&io, &res, engine_now_ms() + DRAIN_MS,
				  &err) < 0)
			sbx_error_free(&err);
		if (res.cancelled) {
			strbuf_addf(&detail, "cancelled by a signal, killed %zu",
				    killed);
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
		rc = EXIT_TIMEOUT;
		goto out;
	}

	if (exec_finished(&engine, exec_id, &ei, &err) < 0) {
		rc = cannot_run(&err, &detail);
		goto out;
	}
	code = exit_code_of(ei);
	json_decref(inspect);
	inspect = NULL;
	/* The container's init gone (killed, OOM): the engine may take a
	 * moment to say so; wait for it, so the reason is told. */
	if (init_pid && procs_exiting(init_pid)) {
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
	if (session_engine_running(&engine, &cfg, rec.key, &inspect, &err) < 0) {
		/* The container died under the command. */
		sbx_error_wrap(&err, "the command did not finish");
		rc = cannot_run(&err, &detail);
		goto out;
	}
	rc = invoke_status(code, ei, &res);
	if (res.held) {
		if (code == EXIT_CANNOT_INVOKE && pid_of(ei, NULL) == 0) {
			/* The engine's reason, not the command's output. */
			struct strbuf sb = STRBUF_INIT;
			size_t n = res.nhead;
			while (n && (res.head[n - 1] == '\n' ||
				     res.head[n - 1] == '\r'))
				n--;
			text_add_escaped(&sb, res.head, n);
			fprintf(stderr, "sbxcat: the command could not be "
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
		fprintf(stderr,
			"sbxcat: the command was killed by the out-of-memory "
			"killer (memory limit %lld bytes)\n",
			(long long)json_integer_value(json_object_get(
			    json_object_get(inspect, "HostConfig"), "Memory")));
	}
	sbx_error_free(&err);
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
		    .duration_ms = engine_now_ms() - t0,
		};

		command_text(&target, shell, cmd, ncmd);
		ev.target = strbuf_str(&target);
		if (audit_event(au, &ev, &err) < 0) {
			/* Said on stderr; a command that succeeded is then
			 * 125, sbxcat's own failure (its own status kept
			 * otherwise, as a timeout's 124 is). */
			cmd_report(&err);
			if (!rc)
				rc = EXIT_CANNOT_RUN;
		}
		strbuf_release(&target);
	}
	cmd_audit_close(au);
	strbuf_release(&detail);
	if (conn >= 0)
		close(conn);
	strbuf_release(&pre);
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

const struct cmd_entry cmd_exec_entry = {
    .name = "exec",
    .usage = "KEY [-i] [--timeout S] [--max-output BYTES] [--tenant T] "
	     "(-- CMD [ARG...] | -c STRING)",
    .summary = "run a command in a session, with a deadline that holds",
    .exec = cmd_exec,
    .epilog = "Exit status: the command's own; 124 when it was stopped at "
	      "its deadline; 125 when sbxcat could not run it; 126 when it "
	      "cannot be invoked; 127 when it is not found.",
};

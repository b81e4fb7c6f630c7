/*
 * cmd-exec.c - sbxcat exec KEY [-i] [-e NAME=VALUE]... [-w DIR]
 * [--timeout S] [--max-output BYTES] [--run-id ID] [--tenant T]
 * -- CMD [ARG...] | -c STRING: run a command in a session, with a
 * deadline that holds (brief section 7, docs/sessions.md); and
 * sbxcat exec KEY --stop ID: stop the run of that id, from anywhere.
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
 *
 * An -e value reaches the command's environment and nothing else: it is
 * copied and then wiped from our own argv, so that neither `ps` of this
 * process nor of the deadline's watcher (a fork of it) shows it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/sig.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "cli/cmd.h"
#include "svc/svc-exec.h"

enum {
	EXIT_TIMEOUT = 124,
	EXIT_CANNOT_RUN = 125,
	EXIT_STOPPED = 128 + SIGKILL, /* stopped by its run id */
};

/* How long --stop waits for the run to end. */
#define STOP_WAIT_MS 15000

extern const struct cmd_entry cmd_exec_entry;

struct exec_env {
	char **v; /* copies of NAME=VALUE */
	size_t n;
};

struct exec_opts {
	bool interactive, has_verdict;
	unsigned long long max_out, verdict;
	bool has_max_out;
	const char *tenant, *shell, *timeout, *cwd, *run_id, *stop;
	struct exec_env env;
};

/*
 * -e NAME=VALUE: copied, and the value wiped from argv (what the kernel
 * shows as our command line); the checks are svc_exec_env_check's, but
 * the count is bounded here so that argv cannot grow the list without end.
 */
static int opt_env(const struct cmd_entry *cmd, const char *name,
		   const char *arg, void *field)
{
	struct exec_env *e = field;
	char *eq = strchr(arg, '=');

	if (e->n == SVC_EXEC_ENV_COUNT_MAX)
		return cmd_usage_error(cmd, "at most %d -e",
				       SVC_EXEC_ENV_COUNT_MAX);
	if (!eq)
		return cmd_usage_error(cmd,
				       "-e: give NAME=VALUE (environment entry "
				       "%zu has no '=')",
				       e->n + 1);
	e->v = xrealloc(e->v, st_mult(e->n + 1, sizeof(*e->v)));
	e->v[e->n++] = xstrdup(arg);
	/* getopt's optarg points into argv: the value goes from there. */
	memset(eq + 1, 0, strlen(eq + 1));
	return 0;
}

static void env_release(struct exec_env *e)
{
	for (size_t i = 0; i < e->n; i++) {
		explicit_bzero(e->v[i], strlen(e->v[i]));
		free(e->v[i]);
	}
	free(e->v);
	e->v = NULL;
	e->n = 0;
}

static const struct cmd_option exec_options[] = {
    CMD_FLAG("interactive", 'i', struct exec_opts, interactive, 0),
    CMD_CALL_L("env", 'e', struct exec_opts, env, opt_env, 0),
    CMD_STRING("workdir", 'w', struct exec_opts, cwd, 0),
    CMD_STRING("timeout", 0, struct exec_opts, timeout, 0),
    CMD_STRING("run-id", 0, struct exec_opts, run_id, 0),
    CMD_STRING("stop", 0, struct exec_opts, stop, 0),
    CMD_COUNT("max-output", struct exec_opts, max_out, has_max_out, 1ULL << 40,
	      0),
    CMD_STRING("tenant", 0, struct exec_opts, tenant, 0),
    CMD_STRING("command", 'c', struct exec_opts, shell, 0),
    CMD_COUNT("verdict-fd", struct exec_opts, verdict, has_verdict, 1 << 20, 0),
    CMD_OPTIONS_END,
};

static const char *plural(unsigned long long n, const char *one,
			  const char *many)
{
	return n == 1 ? one : many;
}

/*
 * What --verdict-fd gets: how the exec ended, from sbxcat, on a descriptor
 * the command cannot reach (nothing of sbxcat's is passed into the
 * container), so a command that prints sbxcat's words or exits 124 itself
 * cannot pass for sbxcat's verdict.
 */
static void verdict_write(int fd, const struct svc_exec_res *r, int status)
{
	json_t *j;
	char *text;

	if (fd < 0)
		return;
	j = xjson_pack(
	    "{s:s, s:i, s:b, s:b, s:b, s:I, s:I, "
	    "s:{s:I, s:I}, s:{s:b, s:b}}",
	    "by", r->by_command ? "command" : "sbxcat", "status", status,
	    "timed_out", r->ended && r->end == SVC_EXEC_TIMED_OUT, "oom",
	    r->oom, "cancelled",
	    r->ended &&
		(r->end == SVC_EXEC_CANCELLED || r->end == SVC_EXEC_STOPPED),
	    "stopped", (json_int_t)r->stopped, "left_running",
	    (json_int_t)r->left_running, "bytes", "stdout",
	    (json_int_t)r->bytes[0], "stderr", (json_int_t)r->bytes[1], "cut",
	    "stdout", r->cut[0], "stderr", r->cut[1]);
	text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	if (!text)
		die_oom();
	if (write_all(fd, text, strlen(text)) < 0 ||
	    write_all(fd, "\n", 1) < 0)
		fprintf(stderr,
			"sbxcat: warning: cannot write the verdict to "
			"descriptor %d: %s\n",
			fd, strerror(errno));
	free(text);
}

/* --verdict-fd N: an open descriptor, for writing, not 0, 1 or 2. */
static int verdict_check(unsigned long long n, int *fd)
{
	int fl;

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

/*
 * The options, KEY before or among them, and the command: what follows
 * "--" (or a second operand).  0, -1 after help, or an exit status.
 */
static int parse(struct sbx_ctx *ctx, int argc, char **argv,
		 struct exec_opts *o, const char **key, int *cmd_at)
{
	int at = 0, rc;

	*key = NULL;
	for (;;) {
		rc = cmd_options_parse_from(ctx, &cmd_exec_entry, exec_options,
					    0, "exec", o, argc, argv, true,
					    &at);
		if (rc)
			return rc;
		if (at < argc && !*key && strcmp(argv[at - 1], "--") != 0) {
			*key = argv[at++];
			continue;
		}
		break;
	}
	if (!*key && at < argc)
		*key = argv[at++];
	*cmd_at = at;
	return 0;
}

/* The exit status of an exec that ended, and what is said of it. */
static int ended(const struct svc_exec_res *r)
{
	char secs[32];

	switch (r->end) {
	case SVC_EXEC_TIMED_OUT:
		fprintf(stderr,
			"sbxcat: command timed out after %s s; stopped %zu "
			"%s; it wrote %llu %s to stdout and %llu %s to "
			"stderr\n",
			svc_exec_seconds(secs, r->limit_ms), r->stopped,
			plural(r->stopped, "process", "processes"), r->bytes[0],
			plural(r->bytes[0], "byte", "bytes"), r->bytes[1],
			plural(r->bytes[1], "byte", "bytes"));
		return EXIT_TIMEOUT;
	case SVC_EXEC_CANCELLED:
		return sig_exit_status();
	case SVC_EXEC_STOPPED:
		fprintf(stderr,
			"sbxcat: the command was stopped by its run id; "
			"stopped %zu %s\n",
			r->stopped, plural(r->stopped, "process", "processes"));
		return EXIT_STOPPED;
	case SVC_EXEC_OUTPUT_CLOSED:
		return 128 + SIGPIPE;
	case SVC_EXEC_EXITED:
	default:
		if (r->not_started)
			fprintf(stderr,
				"sbxcat: the command could not be started: "
				"%s\n",
				r->not_started);
		if (r->oom)
			fprintf(stderr,
				"sbxcat: the command was killed by the "
				"out-of-memory killer (memory limit %lld "
				"bytes)\n",
				r->memory_limit);
		return r->exit_code;
	}
}

/* sbxcat exec KEY --stop ID: idempotent, 0 whether or not it ran. */
static int stop_run(struct sbx_ctx *ctx, const char *key, const char *id)
{
	struct sbx_error *err = NULL;
	bool running, ended;

	if (svc_exec_stop(&ctx->svc, &ctx->call, key, id, STOP_WAIT_MS,
			  &running, &ended, &err) < 0)
		return cmd_report(&err);
	if (!running)
		printf(
		    "run %s of session %s is not running (it ended, or never "
		    "ran)\n",
		    id, key);
	else if (ended)
		printf("run %s of session %s stopped\n", id, key);
	else {
		fprintf(stderr,
			"sbxcat: run %s of session %s was asked to stop and "
			"has not ended after %d s\n",
			id, key, STOP_WAIT_MS / 1000);
		return 1;
	}
	return 0;
}

static int cmd_exec(struct sbx_ctx *ctx, int argc, char **argv)
{
	struct exec_opts o = {0};
	struct svc_exec_req req = {.in_fd = -1,
				   .out = SVC_SINK_FD(STDOUT_FILENO),
				   .err = SVC_SINK_FD(STDERR_FILENO)};
	struct svc_exec_res res;
	struct sbx_error *err = NULL;
	int verdict = -1, at, rc;

	memset(&res, 0, sizeof(res));
	rc = parse(ctx, argc, argv, &o, &req.key, &at);
	if (rc) {
		env_release(&o.env);
		return rc < 0 ? 0 : rc;
	}
	if (o.has_verdict && (rc = verdict_check(o.verdict, &verdict))) {
		env_release(&o.env);
		return rc;
	}
	req.shell = o.shell;
	req.argv = argv + at;
	req.argc = argc - at;
	if (!req.key)
		rc = cmd_usage_error(&cmd_exec_entry,
				     "which session? KEY is missing");
	else if (o.stop && (req.shell || req.argc || o.run_id || o.env.n ||
			    o.cwd || o.timeout || o.interactive))
		rc =
		    cmd_usage_error(&cmd_exec_entry,
				    "--stop ID takes KEY alone: no command and "
				    "no other option of a run");
	else if (o.stop)
		rc = cmd_setup(ctx, cmd_exec_entry.needs);
	else if (o.timeout &&
		 svc_exec_seconds_parse(o.timeout, &req.timeout_ms, &err) < 0)
		rc = cmd_usage_error(&cmd_exec_entry, "--timeout %s", err->msg);
	else if (req.shell && req.argc)
		rc = cmd_usage_error(&cmd_exec_entry,
				     "give the command after -- or as -c "
				     "STRING, not both");
	else if (!req.shell && !req.argc)
		rc = cmd_usage_error(&cmd_exec_entry,
				     "no command: give it after -- or as -c "
				     "STRING");
	else
		rc = cmd_setup(ctx, cmd_exec_entry.needs);
	sbx_error_free(&err);
	if (rc) {
		/* sbxcat's verdict, as every other end. */
		verdict_write(verdict, &res, rc);
		env_release(&o.env);
		return rc;
	}
	ctx->call.tenant = cmd_identity(o.tenant, "SBXCAT_TENANT");
	if (o.stop)
		return stop_run(ctx, req.key, o.stop); /* o.env is empty */
	req.in_fd = o.interactive ? STDIN_FILENO : -1;
	req.max_output = o.max_out;
	req.env = (const char *const *)o.env.v;
	req.nenv = o.env.n;
	req.cwd = o.cwd;
	req.run_id = o.run_id;
	/* A reader that leaves is EPIPE, not death: the command is stopped
	 * and the row says so. */
	signal(SIGPIPE, SIG_IGN);
	fflush(stdout);
	if (svc_exec(&ctx->svc, &ctx->call, &req, &res, &err) == 0) {
		rc = ended(&res);
	} else if (res.ended) {
		/* It ran, and its row could not be written: said, and a
		 * command that succeeded is then 125, sbxcat's own failure
		 * (its own status kept otherwise, as a timeout's 124 is). */
		rc = ended(&res);
		cmd_report(&err);
		if (!rc) {
			rc = EXIT_CANNOT_RUN;
			res.by_command = false;
		}
	} else if (err->kind == SBX_E_CANCELLED) {
		/* Ctrl-C before the command ran: nothing to say. */
		sbx_error_free(&err);
		rc = sig_exit_status();
	} else if (err->kind == SBX_E_INVALID) {
		rc = cmd_report(&err); /* a usage error stays 2 */
	} else {
		cmd_report(&err);
		rc = EXIT_CANNOT_RUN;
	}
	for (int i = 0; i < 2; i++)
		if (res.cut[i])
			fprintf(stderr,
				"sbxcat: %s cut at %llu bytes; the command "
				"wrote %llu bytes to it\n",
				i ? "stderr" : "stdout", res.max_output,
				res.bytes[i]);
	verdict_write(verdict, &res, rc);
	svc_exec_res_release(&res);
	env_release(&o.env);
	return rc;
}

const struct cmd_entry cmd_exec_entry = {
    .name = "exec",
    .usage =
	"KEY [-i] [-e NAME=VALUE]... [-w DIR] [--timeout S] "
	"[--max-output BYTES] [--run-id ID] [--tenant T] [--verdict-fd FD] "
	"(-- CMD [ARG...] | -c STRING) | KEY --stop ID [--tenant T]",
    .summary = "run a command in a session, with a deadline that holds",
    .exec = cmd_exec,
    .needs = CMD_NEEDS_CALL,
    .epilog = "Exit status: the command's own; 124 when it was stopped at "
	      "its deadline; 125 when sbxcat could not run it; 126 when it "
	      "cannot be invoked; 127 when it is not found; 137 when it was "
	      "stopped by its run id (--stop).  --timeout takes fractions "
	      "(0.2).  --verdict-fd FD "
	      "writes one JSON object to FD at the end, saying whether the "
	      "status is the command's or sbxcat's.",
};

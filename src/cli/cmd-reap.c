/*
 * cmd-reap.c - sbxcat reap: one pass of the lifetimes (idle sessions
 * stopped, stopped containers and unused workspaces removed, orphans and
 * stuck containers cleared), or --report, the largest workspaces.  The
 * pass is reap.c's; this file parses, and says what was done and why
 * (docs/lifetimes.md).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit.h"
#include "cli/cmd.h"
#include "engine/engine.h"
#include "basic/error.h"
#include "session/reap.h"
#include "session/session.h"
#include "basic/util.h"
#include "basic/xjson.h"

struct reap_opts {
	bool dry_run, report, have_limit;
	long long now;
	unsigned long long limit;
};

static int parse_options(struct sbx_ctx *ctx, int argc, char **argv,
			 struct reap_opts *o)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS,
	    {"dry-run", no_argument, NULL, 'n'},
	    {"now", required_argument, NULL, 'N'},
	    {"limit", required_argument, NULL, 'L'},
	    {"report", no_argument, NULL, 'R'},
	    {0}};
	int c, rc;

	memset(o, 0, sizeof(*o));
	o->now = (long long)time(NULL);
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts,
				NULL)) != -1) {
		switch (c) {
		case 'n':
			o->dry_run = true;
			break;
		case 'R':
			o->report = true;
			break;
		case 'N':
			if (reap_parse_time(optarg, &o->now) < 0)
				return cmd_usage_error(
				    &cmd_reap_entry,
				    "--now '%s': expected Unix seconds or an "
				    "RFC 3339 UTC time such as "
				    "2026-12-01T10:00:00Z",
				    optarg);
			break;
		case 'L':
			rc = cmd_parse_count(&cmd_reap_entry, "--limit", optarg,
					     1000000, &o->limit);
			if (rc)
				return rc;
			o->have_limit = true;
			break;
		default:
			rc = cmd_common_option(ctx, &cmd_reap_entry, c, optarg);
			if (rc)
				return rc;
		}
	}
	if (optind < argc)
		return cmd_usage_error(&cmd_reap_entry,
				       "unexpected operand '%s'", argv[optind]);
	if (o->report && o->dry_run)
		return cmd_usage_error(&cmd_reap_entry,
				       "--report takes no action; --dry-run "
				       "has nothing to do with it");
	if (!o->have_limit)
		o->limit = o->report ? REAP_REPORT_DEFAULT : REAP_LIMIT_DEFAULT;
	return 0;
}

/* s (from the engine or a directory name) as a message may show it. */
static const char *esc(struct strbuf *sb, const char *s)
{
	strbuf_release(sb);
	text_add_escaped(sb, s ? s : "", s ? strlen(s) : 0);
	return strbuf_str(sb);
}

static json_t *text_or_null(const char *s)
{
	return s ? xjson_text(s) : json_null();
}

/* What a line names: the session's key, or the container's name. */
static const char *subject(const struct reap_action *a)
{
	if (a->what == REAP_ORPHAN || a->what == REAP_STUCK)
		return a->container;
	return a->key;
}

static void print_action(const struct reap_pass *p,
			 const struct reap_action *a)
{
	static const char *const verbs[][2] = {
	    [REAP_STOP] = {"would stop", "stopped"},
	    [REAP_REMOVE] = {"would remove", "removed"},
	    [REAP_DELETE] = {"would delete", "deleted"},
	    [REAP_ORPHAN] = {"would remove orphan", "removed orphan"},
	    [REAP_STUCK] = {"would remove stuck", "removed stuck"},
	    [REAP_CLOSED] = {"closed", "closed"},
	};
	static const char *const infinitive[] = {
	    [REAP_STOP] = "stop",	     [REAP_REMOVE] = "remove",
	    [REAP_DELETE] = "delete",	     [REAP_ORPHAN] = "remove orphan",
	    [REAP_STUCK] = "remove stuck", [REAP_CLOSED] = "show",
	};
	struct strbuf sb = STRBUF_INIT;
	const char *who = esc(&sb, subject(a));

	if (a->error)
		fprintf(stderr, "sbxcat: cannot %s %s: %s\n",
			infinitive[a->what], who, a->error);
	else if (a->skipped)
		printf("%s %s\n", who, a->skipped);
	else
		printf("%s %s: %s\n", verbs[a->what][!p->dry_run], who,
		       a->reason);
	strbuf_release(&sb);
}

static json_t *pass_json(const struct reap_pass *p)
{
	json_t *acts = json_array();

	for (size_t i = 0; i < p->nacts; i++) {
		const struct reap_action *a = &p->acts[i];

		json_array_append_new(
		    acts,
		    xjson_pack("{s:s, s:o, s:o, s:o, s:s, s:I, s:b, s:o, s:o}",
			       "action", reap_what_name(a->what), "key",
			       text_or_null(a->key), "container",
			       text_or_null(a->container), "state",
			       text_or_null(a->state), "reason", a->reason,
			       "age_s", (json_int_t)a->age, "done", a->done, "error",
			       text_or_null(a->error), "skipped",
			       a->skipped ? json_string(a->skipped)
					  : json_null()));
	}
	return xjson_pack("{s:I, s:b, s:o, s:I}", "now", (json_int_t)p->now,
			  "dry_run", p->dry_run, "actions", acts, "left",
			  (json_int_t)p->left);
}

/* What record_action writes to: the recorder, and its first failure. */
struct recording {
	struct audit *au;
	struct sbx_error *err;
};

/*
 * The row of an action taken or tried (a skipped one and a closed session
 * are not actions), written as it ends (reap_pass.acted).  A row that
 * cannot be written stops the pass: nothing more is reaped unrecorded.
 */
static int record_action(const struct reap_action *a, long long ms,
			 void *arg)
{
	static const char *const detail[][2] = {
	    [REAP_STOP] = {"idle: container stopped",
			   "idle: container could not be stopped"},
	    [REAP_REMOVE] = {"stopped past its TTL: container removed",
			     "stopped past its TTL: container could not be "
			     "removed"},
	    [REAP_DELETE] = {"unused past the workspace TTL: deleted",
			     "unused past the workspace TTL: could not be "
			     "deleted"},
	    [REAP_ORPHAN] = {"orphan container removed",
			     "orphan container could not be removed"},
	    [REAP_STUCK] = {"stuck container removed",
			    "stuck container could not be removed"},
	    [REAP_CLOSED] = {"closed", "closed"},
	};
	struct recording *rec = arg;
	struct audit_event ev = {
	    .op = AUDIT_REAP,
	    .tenant = a->tenant,
	    .session_key = a->key,
	    .runtime = a->runtime,
	    .target = a->container ? a->container : a->key,
	    .ok = a->done && !a->error,
	    .duration_ms = ms,
	    .detail = detail[a->what][a->error != NULL],
	    .bytes = AUDIT_NONE,
	    .results = AUDIT_NONE,
	};

	if (a->what == REAP_CLOSED || (!a->done && !a->error))
		return 0;
	return audit_event(rec->au, &ev, &rec->err);
}

static int reap_pass_cmd(struct sbx_ctx *ctx, const struct reap_opts *o)
{
	struct sbx_error *err = NULL;
	struct session_config cfg = {0};
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	struct reap_pass p = {0};
	struct audit *au = NULL;
	struct recording rec = {0};
	int rc;

	if (!o->dry_run && cmd_audit_open(ctx, &au, &err) < 0)
		return cmd_report(&err);
	rec.au = au;
	if (au) {
		p.acted = record_action;
		p.acted_arg = &rec;
	}
	/* Nothing is reaped that could not be recorded. */
	if ((au && audit_ready(au, &err) < 0) ||
	    cmd_session_begin(ctx, &cfg, &root, &err) < 0 ||
	    cmd_engine_begin(ctx, &engine, &err) < 0 ||
	    reap_pass_run(&engine, &cfg, &root, o->now, (size_t)o->limit,
			  o->dry_run, &p, &err) < 0)
		goto out;
	if (rec.err)
		err = steal_pointer(&rec.err);
	for (size_t i = 0; i < p.nwarnings; i++)
		fprintf(stderr, "sbxcat: warning: %s\n", p.warnings[i]);
	if (ctx->json) {
		cmd_print_json(pass_json(&p));
		for (size_t i = 0; i < p.nacts; i++)
			if (p.acts[i].error)
				print_action(&p, &p.acts[i]);
	} else {
		for (size_t i = 0; i < p.nacts; i++)
			print_action(&p, &p.acts[i]);
	}
	if (p.left)
		fprintf(stderr,
			"sbxcat: %zu more action%s left for the next pass "
			"(--limit %llu)\n",
			p.left, p.left == 1 ? "" : "s", o->limit);
out:
	rc = err ? cmd_report(&err) : p.failed ? SBX_EXIT_FAIL : 0;
	sbx_error_free(&rec.err);
	cmd_audit_close(au);
	reap_pass_release(&p);
	engine_release(&engine);
	session_root_close(&root);
	session_config_release(&cfg);
	return rc;
}

static int reap_report_cmd(struct sbx_ctx *ctx, const struct reap_opts *o)
{
	struct sbx_error *err = NULL;
	struct session_config cfg = {0};
	struct session_root root = SESSION_ROOT_INIT;
	struct reap_usage *v = NULL;
	char **warnings = NULL;
	size_t n = 0, nwarnings = 0;
	int rc;

	if (cmd_session_begin(ctx, &cfg, &root, &err) < 0 ||
	    reap_report(&root, (size_t)o->limit, &v, &n, &warnings,
			&nwarnings, &err) < 0)
		goto out;
	for (size_t i = 0; i < nwarnings; i++)
		fprintf(stderr, "sbxcat: warning: %s\n", warnings[i]);
	if (ctx->json) {
		json_t *arr = json_array();

		for (size_t i = 0; i < n; i++)
			json_array_append_new(
			    arr, xjson_pack("{s:o, s:o, s:I, s:I}", "key",
					    xjson_text(v[i].key), "tenant",
					    text_or_null(v[i].tenant),
					    "bytes", (json_int_t)v[i].bytes,
					    "files", (json_int_t)v[i].files));
		cmd_print_json(arr);
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%llu\t%llu\t%s\t%s\n", v[i].bytes, v[i].files,
			       v[i].tenant ? v[i].tenant : "-", v[i].key);
	}
out:
	rc = err ? cmd_report(&err) : 0;
	reap_usage_free(v, n);
	strv_free(warnings, nwarnings);
	session_root_close(&root);
	session_config_release(&cfg);
	return rc;
}

static int cmd_reap(struct sbx_ctx *ctx, int argc, char **argv)
{
	struct reap_opts o;
	int rc = parse_options(ctx, argc, argv, &o);

	if (rc)
		return rc < 0 ? 0 : rc;
	return o.report ? reap_report_cmd(ctx, &o) : reap_pass_cmd(ctx, &o);
}

const struct cmd_entry cmd_reap_entry = {
    .name = "reap",
    .usage = "[--dry-run] [--now TIME] [--limit N] [--report] [--json]",
    .summary = "stop idle sessions, remove old containers and workspaces",
    .exec = cmd_reap,
    .epilog = "Lifetimes come from the environment (SANDBOXD_IDLE_TIMEOUT, "
	      "SANDBOXD_CONTAINER_TTL, SANDBOXD_WORKSPACE_TTL): see "
	      "docs/lifetimes.md and sbxcat(1).",
};

/*
 * cmd-reap.c - sbxcat reap: one pass of the lifetimes (idle sessions
 * paused, then stopped, stopped containers and unused workspaces removed,
 * orphans and stuck containers cleared), or --report, the largest workspaces.
 * The pass is reap.c's; this file parses, and says what was done and why
 * (docs/lifetimes.md).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/clock.h"
#include "basic/util.h"
#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "svc/svc-pool.h"
#include "svc/svc-reap.h"

struct reap_opts {
	bool dry_run, report, have_limit;
	const char *now;
	unsigned long long limit;
};

static const struct cmd_option reap_options[] = {
    CMD_FLAG("dry-run", 0, struct reap_opts, dry_run, 0),
    CMD_STRING("now", 0, struct reap_opts, now, 0),
    CMD_COUNT("limit", struct reap_opts, limit, have_limit, 1000000, 0),
    CMD_FLAG("report", 0, struct reap_opts, report, 0),
    CMD_OPTIONS_END,
};

/* s (from the engine or a directory name) as a message may show it. */
static const char *esc(struct strbuf *sb, const char *s)
{
	strbuf_release(sb);
	text_add_escaped(sb, s ? s : "", s ? strlen(s) : 0);
	return strbuf_str(sb);
}

/* What a line names: the session's key, or the container's name. */
static const char *subject(const svc_reap_action *a)
{
	if (a->what == SVC_REAP_ORPHAN || a->what == SVC_REAP_STUCK)
		return a->container;
	return a->key;
}

static void print_action(const svc_reap_pass *p, const svc_reap_action *a)
{
	static const char *const verbs[][2] = {
	    [SVC_REAP_PAUSE] = {"would pause", "paused"},
	    [SVC_REAP_STOP] = {"would stop", "stopped"},
	    [SVC_REAP_REMOVE] = {"would remove", "removed"},
	    [SVC_REAP_DELETE] = {"would delete", "deleted"},
	    [SVC_REAP_ORPHAN] = {"would remove orphan", "removed orphan"},
	    [SVC_REAP_STUCK] = {"would remove stuck", "removed stuck"},
	    [SVC_REAP_RELEASE] = {"would release", "released"},
	    [SVC_REAP_CLOSED] = {"closed", "closed"},
	};
	static const char *const infinitive[] = {
	    [SVC_REAP_PAUSE] = "pause",
	    [SVC_REAP_STOP] = "stop",
	    [SVC_REAP_REMOVE] = "remove",
	    [SVC_REAP_DELETE] = "delete",
	    [SVC_REAP_ORPHAN] = "remove orphan",
	    [SVC_REAP_STUCK] = "remove stuck",
	    [SVC_REAP_RELEASE] = "release",
	    [SVC_REAP_CLOSED] = "show",
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

static int reap_pass_cmd(struct sbx_ctx *ctx, const struct reap_opts *o,
			 long long now)
{
	struct svc_reap_req req = {.now = now,
				   .limit = (size_t)o->limit,
				   .dry_run = o->dry_run};
	struct svc_reap_res res;
	struct sbx_error *err = NULL;
	const svc_reap_pass *p = &res.pass;
	int rc = svc_reap(&ctx->svc, &ctx->call, &req, &res, &err);

	/* A row that could not be written stopped the pass: what it did is
	 * said, then why it stopped. */
	if (res.doc && ctx->json) {
		cmd_print_json(json_incref(res.doc));
		for (size_t i = 0; i < p->nacts; i++)
			if (p->acts[i].error)
				print_action(p, &p->acts[i]);
	} else if (res.doc) {
		for (size_t i = 0; i < p->nacts; i++)
			print_action(p, &p->acts[i]);
	}
	if (res.doc && p->left)
		fprintf(stderr,
			"sbxcat: %zu more action%s left for the next pass "
			"(--limit %llu)\n",
			p->left, p->left == 1 ? "" : "s", o->limit);
	rc = rc < 0 ? cmd_report(&err) : p->failed ? SBX_EXIT_FAIL : 0;
	svc_reap_res_release(&res);
	return rc;
}

/*
 * After a pass (not dry), the warm pool tidied, and filled when
 * SBXCAT_WARM_POOL asks for one: the refill of a host that has no
 * service, its reap run from cron.  A catalogue that does not load
 * leaves the pool as it is, said.
 */
static int reap_pool_cmd(struct sbx_ctx *ctx)
{
	struct svc_pool_res res;
	struct sbx_error *err = NULL;
	struct catalog cat;
	bool want = ctx->svc.cfg.session.npool > 0;
	int rc = 0;

	/* Without SBXCAT_WARM_POOL the pool is only drained (what an
	 * earlier setting left): no catalogue needed. */
	catalog_init(&cat);
	if (want && (catalog_load(&cat, cmd_catalog_path(ctx), &err) < 0 ||
		     !catalog_valid(&cat))) {
		fprintf(stderr,
			"sbxcat: the warm pool is not filled: the catalogue "
			"%s\n",
			err ? err->msg : "is invalid");
		sbx_error_free(&err);
		catalog_release(&cat);
		return SBX_EXIT_FAIL;
	}
	if (svc_pool_fill(&ctx->svc, &ctx->call, want ? &cat : NULL, &res,
			  &err) < 0)
		rc = cmd_report(&err);
	else if (!ctx->json && (res.made || res.drained || res.swept))
		printf("pool: %u made ready, %u drained, %u swept\n", res.made,
		       res.drained, res.swept);
	catalog_release(&cat);
	return rc;
}

static int reap_report_cmd(struct sbx_ctx *ctx, const struct reap_opts *o)
{
	struct svc_reap_report_req req = {.top = (size_t)o->limit};
	struct svc_reap_report_res res;
	struct sbx_error *err = NULL;

	if (svc_reap_report(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return cmd_report(&err);
	if (ctx->json) {
		cmd_print_json(json_incref(res.doc));
	} else {
		for (size_t i = 0; i < res.n; i++)
			printf("%llu\t%llu\t%s\t%s\n", res.v[i].bytes,
			       res.v[i].files,
			       res.v[i].tenant ? res.v[i].tenant : "-",
			       res.v[i].key);
	}
	/* The budgets' promise against the disk: on stderr, so the rows
	 * (and --json's document) stay as they are. */
	if (res.images)
		fprintf(stderr,
			"sbxcat: disk budgets: %u image%s promise %llu bytes; "
			"the host has %llu bytes free%s\n",
			res.images, res.images == 1 ? "" : "s",
			res.images_bytes, res.host_free,
			res.overcommitted
			    ? " (overcommitted: the images are sparse, and "
			      "full ones would not fit)"
			    : "");
	svc_reap_report_res_release(&res);
	return 0;
}

static int cmd_reap(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct reap_opts *o = opts;
	long long now = (long long)time(NULL);
	int rc;

	(void)nargs, (void)args;
	if (o->now && clock_parse_time(o->now, &now) < 0)
		return cmd_usage_error(&cmd_reap_entry,
				       "--now '%s': expected Unix seconds or "
				       "an RFC 3339 UTC time such as "
				       "2026-12-01T10:00:00Z",
				       o->now);
	if (o->report && o->dry_run)
		return cmd_usage_error(&cmd_reap_entry,
				       "--report takes no action; --dry-run "
				       "has nothing to do with it");
	if (!o->have_limit)
		o->limit = o->report ? SVC_REAP_REPORT_DEFAULT
				     : SVC_REAP_LIMIT_DEFAULT;
	if (o->report)
		return reap_report_cmd(ctx, o);
	rc = reap_pass_cmd(ctx, o, now);
	if (!o->dry_run && rc != SBX_EXIT_USAGE) {
		int prc = reap_pool_cmd(ctx);
		rc = rc ? rc : prc;
	}
	return rc;
}

const struct cmd_entry cmd_reap_entry = {
    .name = "reap",
    .usage = "[--dry-run] [--now TIME] [--limit N] [--report] [--json]",
    .summary = "pause and stop idle sessions, remove old containers and "
	       "workspaces",
    .options = reap_options,
    .opts_size = sizeof(struct reap_opts),
    .max_args = 0,
    .needs = CMD_NEEDS_CALL,
    .run = cmd_reap,
    .epilog = "Lifetimes come from the environment (SANDBOXD_PAUSE_AFTER, "
	      "SANDBOXD_IDLE_TIMEOUT, SANDBOXD_CONTAINER_TTL, "
	      "SANDBOXD_WORKSPACE_TTL): see "
	      "docs/lifetimes.md and sbxcat(1).",
};

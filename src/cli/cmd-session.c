/*
 * cmd-session.c - sbxcat session open|ls|show|close: one sibling
 * container per session, its workspace bind-mounted at the same path
 * (brief section 7, docs/sessions.md).
 *
 * The work is svc-session.c's; this file parses, calls it, and says what
 * it did: the key, the table, the fields, or the JSON document.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"
#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "svc/svc-session.h"

extern const struct cmd_entry cmd_session_open_entry, cmd_session_ls_entry,
    cmd_session_show_entry, cmd_session_close_entry, cmd_session_touch_entry;

/* ---- open ---- */

struct open_opts {
	const char *runtime, *tenant, *scope, *subject, *host, *durability;
	/* --label's arguments as given, checked by session_open */
	const char *label[SVC_SESSION_LABELS_MAX];
	size_t nlabel;
	const char *disk_quota, *disk_inodes;
	const char *work_dir;
};

static int opt_label(const struct cmd_entry *cmd, const char *name,
		     const char *arg, void *field)
{
	struct open_opts *o =
	    (struct open_opts *)((char *)field -
				 offsetof(struct open_opts, label));

	(void)name;
	if (o->nlabel == SVC_SESSION_LABELS_MAX)
		return cmd_usage_error(cmd, "at most %d --label",
				       SVC_SESSION_LABELS_MAX);
	o->label[o->nlabel++] = arg;
	return 0;
}

static const struct cmd_option open_options[] = {
    CMD_CALL("label", struct open_opts, label, opt_label, 0),
    CMD_STRING("durability", 0, struct open_opts, durability, 0),
    CMD_STRING("runtime", 'r', struct open_opts, runtime, 0),
    CMD_STRING("tenant", 0, struct open_opts, tenant, 0),
    CMD_STRING("scope", 0, struct open_opts, scope, 0),
    CMD_STRING("subject", 0, struct open_opts, subject, 0),
    CMD_STRING("host", 0, struct open_opts, host, 0),
    CMD_STRING("disk-quota", 0, struct open_opts, disk_quota, 0),
    CMD_STRING("disk-inodes", 0, struct open_opts, disk_inodes, 0),
    CMD_STRING("work-dir", 0, struct open_opts, work_dir, 0),
    CMD_OPTIONS_END,
};

/* The fields checked as the open will check them, in the words of our
 * options: status 2. */
static int check_fields(const struct sbx_ctx *ctx,
			const struct svc_session_open_req *req)
{
	const char *value, *why;
	const char *field =
	    svc_session_open_check(ctx->call.tenant, req, &value, &why);
	struct strbuf sb = STRBUF_INIT;

	if (!field)
		return 0;
	if (!why)
		return cmd_usage_error(&cmd_session_open_entry,
				       "--%s is required", field);
	text_add_escaped(&sb, value, strlen(value));
	fprintf(stderr, "sbxcat: --%s '%s': %s\n", field, strbuf_str(&sb), why);
	strbuf_release(&sb);
	return SBX_EXIT_USAGE;
}

/* The catalogue, without a word: what is wrong with it is the open's to
 * record first, then ours to say. */
static struct sbx_error *load_catalog(struct sbx_ctx *ctx, struct catalog *cat)
{
	struct sbx_error *err = NULL;

	catalog_init(cat);
	if (svc_config_check(ctx->svc.cfg.recipe_err, &err) < 0)
		return err;
	catalog_load(cat, cmd_catalog_path(ctx), &err);
	return err;
}

static int session_open(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct open_opts *o = opts;
	struct svc_session_open_req req = {
	    .scope = o->scope,
	    .subject = o->subject,
	    .host = o->host ? o->host : "",
	    .runtime = o->runtime,
	};
	struct svc_session_open_res res;
	struct sbx_error *err = NULL, *cat_err;
	struct catalog cat;
	int rc;

	(void)nargs, (void)args;
	ctx->call.tenant = cmd_identity(o->tenant, "SBXCAT_TENANT");
	rc = check_fields(ctx, &req);
	if (rc)
		return rc;
	/* Checked by the open (exit 2, naming the label). */
	req.labels = o->label;
	req.nlabels = o->nlabel;
	req.durability = o->durability;
	req.disk_quota = o->disk_quota;
	req.work_dir = o->work_dir;
	if (o->disk_inodes &&
	    (!text_parse_uint(o->disk_inodes, ~0ull, &req.disk_inodes) ||
	     !req.disk_inodes))
		return cmd_usage_error(&cmd_session_open_entry,
				       "--disk-inodes '%s': expected a whole "
				       "number above 0",
				       o->disk_inodes);
	cat_err = load_catalog(ctx, &cat);
	req.cat = cat_err ? NULL : &cat;
	req.cat_err = cat_err;
	cmd_prewarm_watch(&req.watch, true);
	if (svc_session_open(&ctx->svc, &ctx->call, &req, &res, &err) < 0) {
		if (res.catalog_invalid)
			cmd_print_diags(&cat);
		rc = cmd_report(&err);
	} else if (ctx->json) {
		cmd_print_json(steal_pointer(&res.doc));
	} else {
		printf("%s\n", res.key);
	}
	cmd_prewarm_unwatch(&req.watch);
	svc_session_open_res_release(&res);
	sbx_error_free(&cat_err);
	catalog_release(&cat);
	return rc;
}

/* ---- ls, show ---- */

struct key_opts {
	const char *tenant;
	bool purge;
};

static const struct cmd_option ls_options[] = {
    CMD_STRING("tenant", 0, struct key_opts, tenant, 0),
    CMD_OPTIONS_END,
};

static void print_ls(const struct svc_session_ls_res *res)
{
	bool tty = isatty(STDOUT_FILENO);

	/* A header off a terminal too, as audit ls has: a script skips a
	 * line, a person reading a log knows the columns. */
	if (tty)
		printf("%-51s  %-12s  %-12s  %-10s  %-20s  %s\n", "KEY",
		       "TENANT", "RUNTIME", "STATE", "CREATED",
		       "LAST ACTIVITY");
	else
		printf("KEY\tTENANT\tRUNTIME\tSTATE\tCREATED\tLAST "
		       "ACTIVITY\n");
	for (size_t i = 0; i < res->n; i++) {
		const struct svc_session_row *row = &res->rows[i];
		char created[32], active[32];

		cmd_rfc3339(created, row->rec.created);
		cmd_rfc3339(active, row->rec.last_activity);
		if (tty)
			printf("%-51s  %-12s  %-12s  %-10s  %-20s  %s\n",
			       row->rec.key, row->rec.tenant, row->rec.runtime,
			       row->state, created, active);
		else
			printf("%s\t%s\t%s\t%s\t%s\t%s\n", row->rec.key,
			       row->rec.tenant, row->rec.runtime, row->state,
			       created, active);
	}
}

static int session_ls(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct key_opts *o = opts;
	/* Only --json pays for the walk of every workspace. */
	struct svc_session_ls_req req = {.sizes = ctx->json};
	struct svc_session_ls_res res;
	struct sbx_error *err = NULL;

	(void)nargs, (void)args;
	ctx->call.tenant = cmd_identity(o->tenant, "SBXCAT_TENANT");
	if (svc_session_ls(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return cmd_report(&err);
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		print_ls(&res);
	svc_session_ls_res_release(&res);
	return 0;
}

/* Fields from the engine as "key: value" lines, keys and strings escaped
 * (State.Error, mount paths and tmpfs keys are the engine's text). */
static void print_fields(json_t *doc, const char *prefix)
{
	struct strbuf sb = STRBUF_INIT;
	const char *k;
	json_t *v;

	json_object_foreach(doc, k, v)
	{
		strbuf_reset(&sb);
		strbuf_addstr(&sb, prefix);
		text_add_escaped(&sb, k, strlen(k));
		if (json_is_object(v)) {
			strbuf_addch(&sb, '.');
			print_fields(v, sb.buf);
			continue;
		}
		strbuf_addstr(&sb, ": ");
		if (json_is_string(v)) {
			text_add_escaped(&sb, json_string_value(v),
					 json_string_length(v));
		} else {
			char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

			strbuf_addstr(&sb, d ? d : "?");
			free(d);
		}
		printf("%s\n", sb.buf);
	}
	strbuf_release(&sb);
}

static int session_show(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct key_opts *o = opts;
	struct svc_session_show_req req = {.key = args[0]};
	struct svc_session_show_res res;
	struct sbx_error *err = NULL;

	(void)nargs;
	ctx->call.tenant = cmd_identity(o->tenant, "SBXCAT_TENANT");
	if (svc_session_show(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return cmd_report(&err);
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		print_fields(res.doc, "");
	svc_session_show_res_release(&res);
	return 0;
}

/* ---- touch ---- */

static int session_touch(struct sbx_ctx *ctx, void *opts, int nargs,
			 char **args)
{
	const struct key_opts *o = opts;
	struct svc_session_touch_req req = {.key = args[0]};
	struct svc_session_touch_res res;
	struct sbx_error *err = NULL;
	int rc = 0;

	(void)nargs;
	ctx->call.tenant = cmd_identity(o->tenant, "SBXCAT_TENANT");
	if (svc_session_touch(&ctx->svc, &ctx->call, &req, &res, &err) < 0) {
		rc = cmd_report(&err);
	} else if (ctx->json) {
		cmd_print_json(steal_pointer(&res.doc));
	} else {
		const char *at =
		    json_string_value(json_object_get(res.doc, "expires_at"));

		/* The new expiry: what a caller keeping a session alive
		 * needs to know. */
		printf("%s\n", at ? at : "never");
	}
	svc_session_touch_res_release(&res);
	return rc;
}

/* ---- close ---- */

static const struct cmd_option close_options[] = {
    CMD_STRING("tenant", 0, struct key_opts, tenant, 0),
    CMD_FLAG("purge", 0, struct key_opts, purge, 0),
    CMD_OPTIONS_END,
};

static int session_close(struct sbx_ctx *ctx, void *opts, int nargs,
			 char **args)
{
	const struct key_opts *o = opts;
	struct svc_session_close_req req = {.key = args[0], .purge = o->purge};
	struct svc_session_close_res res;
	struct sbx_error *err = NULL;
	int rc = 0;

	(void)nargs;
	ctx->call.tenant = cmd_identity(o->tenant, "SBXCAT_TENANT");
	if (svc_session_close(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		rc = cmd_report(&err);
	else if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	svc_session_close_res_release(&res);
	return rc;
}

const struct cmd_entry cmd_session_open_entry = {
    .name = "open",
    .usage = "--tenant ORG --scope SCOPE --subject ID [--runtime ALIAS] "
	     "[--host NAME] [--label KEY=VALUE]... "
	     "[--durability ephemeral|persistent] [--disk-quota SIZE] "
	     "[--disk-inodes N] [--work-dir PATH] [--json]",
    .summary = "open (or adopt) the session of a subject; print its key",
    .options = open_options,
    .opts_size = sizeof(struct open_opts),
    .max_args = 0,
    .needs = CMD_NEEDS_CALL,
    .run = session_open,
    .parent = &cmd_session_entry,
};
const struct cmd_entry cmd_session_ls_entry = {
    .name = "ls",
    .usage = "[--tenant T] [--json]",
    .summary = "list the sessions and their containers' states",
    .options = ls_options,
    .opts_size = sizeof(struct key_opts),
    .max_args = 0,
    .needs = CMD_NEEDS_CALL,
    .run = session_ls,
    .parent = &cmd_session_entry,
};
const struct cmd_entry cmd_session_show_entry = {
    .name = "show",
    .usage = "KEY [--tenant T] [--json]",
    .summary = "one session: its record, limits as applied, workspace size",
    .options = ls_options,
    .opts_size = sizeof(struct key_opts),
    .min_args = 1,
    .max_args = 1,
    .missing = "which session? KEY is missing",
    .needs = CMD_NEEDS_CALL,
    .run = session_show,
    .parent = &cmd_session_entry,
};
const struct cmd_entry cmd_session_touch_entry = {
    .name = "touch",
    .usage = "KEY [--tenant T] [--json]",
    .summary = "mark a session active now; print when it expires",
    .options = ls_options,
    .opts_size = sizeof(struct key_opts),
    .min_args = 1,
    .max_args = 1,
    .missing = "which session? KEY is missing",
    .needs = CMD_NEEDS_CALL,
    .run = session_touch,
    .parent = &cmd_session_entry,
};
const struct cmd_entry cmd_session_close_entry = {
    .name = "close",
    .usage = "KEY [--purge] [--tenant T] [--json]",
    .summary = "remove (or stop) a session's container; --purge its files",
    .options = close_options,
    .opts_size = sizeof(struct key_opts),
    .min_args = 1,
    .max_args = 1,
    .missing = "which session? KEY is missing",
    .needs = CMD_NEEDS_CALL,
    .run = session_close,
    .parent = &cmd_session_entry,
};

static const struct cmd_entry *const session_verbs[] = {
    &cmd_session_open_entry,  &cmd_session_ls_entry,	&cmd_session_show_entry,
    &cmd_session_touch_entry, &cmd_session_close_entry,
};

const struct cmd_entry cmd_session_entry = {
    .name = "session",
    .usage = "open|ls|show|touch|close ...",
    .summary = "sibling containers, one per session",
    .verbs = session_verbs,
    .nverbs = sizeof(session_verbs) / sizeof(session_verbs[0]),
    .epilog = "Configuration comes from the environment "
	      "(SANDBOXD_WORKSPACE_ROOT, SANDBOXD_MAX_SESSIONS, ...): see "
	      "docs/sessions.md and sbxcat(1).",
};

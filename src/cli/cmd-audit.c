/*
 * cmd-audit.c - sbxcat audit VERB: the operation audit for operators and
 * auditors (brief section 8, docs/audit.md): migrate, status, flush, ls,
 * export, stats, sweep, verify, head.
 *
 * Each verb is an operation of svc/svc-audit.h; this file holds their
 * option tables, fills the requests, and says what happened, in text or
 * as the document --json prints.  Nothing here is an operation the audit
 * records: the audit does not audit itself.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"
#include "cli/cmd-audit-follow.h"
#include "cli/cmd.h"
#include "svc/svc-audit.h"

extern const struct cmd_entry cmd_audit_migrate_entry, cmd_audit_status_entry,
    cmd_audit_flush_entry, cmd_audit_ls_entry, cmd_audit_export_entry,
    cmd_audit_stats_entry, cmd_audit_sweep_entry, cmd_audit_verify_entry,
    cmd_audit_head_entry, cmd_audit_tail_entry;

/* The options of every verb (each verb's table names those it takes). */
struct audit_opts {
	svc_audit_filter f;	  /* ls, export, stats; verify, head */
	bool status;		  /* migrate */
	unsigned long long limit; /* ls */
	bool has_limit;
	const char *format;	 /* export */
	unsigned long long days; /* sweep */
	bool has_days;
	bool follow;		      /* ls */
	struct cmd_audit_lines lines; /* ls --follow, tail */
};

/* A text for a one-line message: escaped. */
static const char *shown(struct strbuf *sb, const char *s)
{
	strbuf_reset(sb);
	text_add_escaped(sb, s, strlen(s));
	return strbuf_str(sb);
}

/* "2026-12-01T10:00:00Z" from Unix microseconds; "never" for 0. */
static const char *when(char out[32], long long us)
{
	if (us <= 0)
		return strcpy(out, "never");
	cmd_rfc3339(out, us / 1000000);
	return out;
}

/* Say err, with this command line's words where the audit's error wants
 * them. */
static int report(struct sbx_error **err)
{
	if (svc_audit_needs_migrate(*err)) {
		sbx_error_hint(*err, "run: sbxcat audit migrate");
	} else if (svc_audit_needs_database(*err)) {
		char *m = xasprintf("%s (--db URI, SBXCAT_DATABASE_URL, or "
				    "libpq's PG* environment)",
				    (*err)->msg);

		free((*err)->msg);
		(*err)->msg = m;
	}
	return cmd_report(err);
}

/* ---- the options ---- */

/* A value its parser refused: a usage error naming the option, then sep
 * and the parser's message. */
static int refused(const struct cmd_entry *cmd, const char *name,
		   const char *sep, struct sbx_error **err)
{
	int rc = cmd_usage_error(cmd, "--%s%s%s", name, sep, (*err)->msg);

	sbx_error_free(err);
	return rc;
}

/* --op OP, repeated or a comma list: "--op 'x': not an operation ...",
 * "--op: which operation?". */
static int opt_ops(const struct cmd_entry *cmd, const char *name,
		   const char *arg, void *field)
{
	struct sbx_error *err = NULL;

	if (svc_audit_parse_ops(arg, field, &err) == 0)
		return 0;
	return refused(cmd, name, err->msg[0] == '\'' ? " " : ": ", &err);
}

/* --since TIME, --until TIME. */
static int opt_time(const struct cmd_entry *cmd, const char *name,
		    const char *arg, void *field)
{
	struct sbx_error *err = NULL;

	if (svc_audit_parse_time(arg, field, &err) == 0)
		return 0;
	return refused(cmd, name, ": ", &err);
}

/* --after CURSOR. */
static int opt_after(const struct cmd_entry *cmd, const char *name,
		     const char *arg, void *field)
{
	struct sbx_error *err = NULL;

	if (svc_audit_parse_cursor(arg, field, &err) == 0)
		return 0;
	return refused(cmd, name, ": ", &err);
}

#define CHAIN_OPTIONS                                                          \
	CMD_STRING("tenant", 0, struct audit_opts, f.tenant, 0),               \
	    CMD_STRING("session", 0, struct audit_opts, f.session, 0)
#define FILTER_OPTIONS                                                         \
	CHAIN_OPTIONS, CMD_CALL("op", struct audit_opts, f.ops, opt_ops, 0),   \
	    CMD_FLAG("failed", 0, struct audit_opts, f.failed, 0),             \
	    CMD_STRING("search", 0, struct audit_opts, f.search, 0),           \
	    CMD_CALL("since", struct audit_opts, f.since_us, opt_time, 0),     \
	    CMD_CALL("until", struct audit_opts, f.until_us, opt_time, 0)

static const struct cmd_option migrate_options[] = {
    CMD_FLAG("status", 0, struct audit_opts, status, 0),
    CMD_OPTIONS_END,
};
static const struct cmd_option ls_options[] = {
    FILTER_OPTIONS,
    CMD_COUNT("limit", struct audit_opts, limit, has_limit, SVC_AUDIT_LS_MAX,
	      0),
    CMD_CALL("after", struct audit_opts, f, opt_after, 0),
    CMD_FLAG("follow", 'f', struct audit_opts, follow, 0),
    CMD_CALL_L("lines", 'n', struct audit_opts, lines, cmd_audit_opt_lines, 0),
    CMD_OPTIONS_END,
};
static const struct cmd_option tail_options[] = {
    FILTER_OPTIONS,
    CMD_CALL_L("lines", 'n', struct audit_opts, lines, cmd_audit_opt_lines, 0),
    CMD_OPTIONS_END,
};
static const struct cmd_option export_options[] = {
    FILTER_OPTIONS,
    CMD_STRING("format", 0, struct audit_opts, format, 0),
    CMD_OPTIONS_END,
};
static const struct cmd_option stats_options[] = {
    FILTER_OPTIONS,
    CMD_OPTIONS_END,
};
static const struct cmd_option sweep_options[] = {
    CMD_COUNT("days", struct audit_opts, days, has_days, SVC_AUDIT_DAYS_MAX, 0),
    CMD_OPTIONS_END,
};
static const struct cmd_option chain_options[] = {
    CHAIN_OPTIONS,
    CMD_OPTIONS_END,
};

/*
 * --agent and --run are the common options every command takes (they
 * name the rows of the commands that record); here they filter, wherever
 * they stand on the command line, and a verb that does not filter refuses
 * them, so none is ignored and an export never comes out unfiltered by
 * mistake.
 */
static int no_identity(struct sbx_ctx *ctx, const struct cmd_entry *cmd)
{
	if (!ctx->audit_agent && !ctx->audit_run)
		return 0;
	return cmd_usage_error(cmd, "'%s' does not take --%s", cmd->name,
			       ctx->audit_agent ? "agent" : "run");
}

/* The filter's own checks, in this command line's words. */
static int filter_from(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
		       struct audit_opts *o)
{
	o->f.agent = ctx->audit_agent;
	o->f.run = ctx->audit_run;
	if (o->f.since_us && o->f.until_us && o->f.until_us <= o->f.since_us)
		return cmd_usage_error(cmd, "--until must come after --since");
	return 0;
}

static int chains_from(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
		       const struct audit_opts *o,
		       struct svc_audit_chains_req *req)
{
	int rc = no_identity(ctx, cmd);

	if (rc)
		return rc;
	if (o->f.tenant && o->f.session)
		return cmd_usage_error(cmd, "give --session or --tenant, "
					    "not both");
	req->session = o->f.session;
	req->tenant = o->f.tenant;
	return 0;
}

/* ---- migrate, status, flush ---- */

static int audit_migrate(struct sbx_ctx *ctx, void *opts, int nargs,
			 char **args)
{
	const struct audit_opts *o = opts;
	struct svc_audit_migrate_req req = {.status = o->status};
	struct svc_audit_migrate_res res;
	struct sbx_error *err = NULL;
	json_t *m;
	size_t i;
	int rc = no_identity(ctx, &cmd_audit_migrate_entry);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	if (svc_audit_migrate(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return report(&err);
	if (ctx->json) {
		cmd_print_json(steal_pointer(&res.doc));
	} else if (o->status) {
		json_array_foreach(res.doc, i, m)
		{
			const char *at = json_string_value(
			    json_object_get(m, "applied_at"));

			printf("%lld\t%s\t%s%s\n",
			       (long long)json_integer_value(
				   json_object_get(m, "version")),
			       json_string_value(json_object_get(m, "name")),
			       at ? "applied " : "pending", at ? at : "");
		}
	} else if (res.applied) {
		printf("applied %d %s (schema version %d)\n", res.applied,
		       res.applied == 1 ? "migration" : "migrations",
		       res.version);
	} else {
		printf("schema is up to date (version %d)\n", res.version);
	}
	svc_audit_migrate_res_release(&res);
	return 0;
}

static void print_status(const struct svc_audit_status_res *r)
{
	const svc_spool_status *ss = &r->spool;
	struct strbuf sb = STRBUF_INIT;
	char t1[32], t2[32];

	if (!r->configured)
		printf("database: none configured: the audit goes to the "
		       "spool alone\n");
	else if (!r->reachable)
		printf("database: unreachable (%s): %s\n", r->source,
		       r->db_error);
	else
		printf("database: reachable (%s), schema version %d of %d%s\n",
		       r->source, r->version, r->known,
		       r->version < r->known ? ": run `sbxcat audit migrate`"
					     : "");
	printf("spool: %s: %llu %s waiting%s%s\n", shown(&sb, r->spool_dir),
	       ss->rows, ss->rows == 1 ? "row" : "rows",
	       ss->rows ? ", the oldest from " : "",
	       ss->rows ? when(t1, ss->oldest_us) : "");
	if (ss->kept_aside)
		printf("kept aside: %llu damaged %s (see docs/audit.md)\n",
		       ss->kept_aside, ss->kept_aside == 1 ? "line" : "lines");
	if (ss->exists)
		printf("spool room: %llu bytes free, floor %llu "
		       "(SBXCAT_SPOOL_MIN_FREE)%s; %llu reserved ahead of its "
		       "end, reserve %llu (SBXCAT_SPOOL_RESERVE)\n",
		       ss->free, ss->min_free,
		       ss->free < ss->min_free ? ": BELOW, operations refused"
					       : "",
		       ss->reserved, ss->reserve);
	printf("last flush: %s", when(t2, ss->last_flush_us));
	if (ss->last_flush_us)
		printf(" (%llu %s)", ss->last_flush_rows,
		       ss->last_flush_rows == 1 ? "row" : "rows");
	printf("\nrows ever lost: %llu\n", ss->lost);
	strbuf_release(&sb);
}

static int audit_status(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct svc_audit_status_res res;
	struct sbx_error *err = NULL;
	int rc = no_identity(ctx, &cmd_audit_status_entry);

	(void)opts, (void)nargs, (void)args;
	if (rc)
		return rc;
	if (svc_audit_status(&ctx->svc, &ctx->call, &res, &err) < 0)
		return report(&err);
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		print_status(&res);
	svc_audit_status_res_release(&res);
	return 0;
}

static int audit_flush(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct svc_audit_flush_res res;
	struct sbx_error *err = NULL;
	int rc = no_identity(ctx, &cmd_audit_flush_entry);

	(void)opts, (void)nargs, (void)args;
	if (rc)
		return rc;
	if (svc_audit_flush(&ctx->svc, &ctx->call, &res, &err) < 0)
		return report(&err);
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		printf("flushed %llu %s (%llu already there), %llu %s kept "
		       "aside\n",
		       res.flushed, res.flushed == 1 ? "row" : "rows",
		       res.already, res.kept_aside,
		       res.kept_aside == 1 ? "line" : "lines");
	svc_audit_flush_res_release(&res);
	return 0;
}

/* ---- the table of rows ---- */

/* A cell cut to max characters on a terminal, "..." marking the cut. */
static void cut_cell(struct strbuf *sb, size_t max)
{
	size_t off = 0, n = 0;
	uint32_t cp;

	if (!max || utf8_chars(sb->buf, sb->len) <= max)
		return;
	while (off < sb->len && n < max - 3) {
		size_t k = utf8_decode(sb->buf + off, sb->len - off, &cp);

		off += k ? k : 1;
		n++;
	}
	strbuf_setlen(sb, off);
	strbuf_addstr(sb, "...");
}

/* The table's cells of row (cut as a terminal shows them when tty). */
static void row_cells(json_t *row, struct strbuf *cell, const size_t *cut,
		      size_t ncols, bool tty)
{
	for (size_t k = 0; k < ncols; k++) {
		strbuf_reset(&cell[k]);
		svc_audit_table_cell(k, row, &cell[k]);
		if (tty)
			cut_cell(&cell[k], cut[k]);
	}
}

/*
 * Rows as a table (svc_audit_table_*: the audit's columns): aligned on a
 * terminal, the long cells cut; tab-separated with a header otherwise.
 */
static void print_table(json_t *rows)
{
	size_t ncols = svc_audit_table_columns(), i;
	struct strbuf *cell = xcalloc(ncols, sizeof(*cell));
	const char **head = xcalloc(ncols, sizeof(*head));
	size_t *cut = xcalloc(ncols, sizeof(*cut));
	size_t *w = xcalloc(ncols, sizeof(*w));
	bool tty = isatty(STDOUT_FILENO);
	json_t *r;

	for (size_t k = 0; k < ncols; k++) {
		strbuf_init(&cell[k]);
		head[k] = svc_audit_table_head(k, &cut[k]);
		w[k] = strlen(head[k]);
	}
	if (tty)
		json_array_foreach(rows, i, r)
		{
			row_cells(r, cell, cut, ncols, tty);
			for (size_t k = 0; k < ncols; k++) {
				size_t n = utf8_chars(cell[k].buf, cell[k].len);

				if (n > w[k])
					w[k] = n;
			}
		}
	for (size_t k = 0; k < ncols; k++) {
		if (k == ncols - 1)
			puts(head[k]);
		else if (tty)
			printf("%-*s  ", (int)w[k], head[k]);
		else
			printf("%s\t", head[k]);
	}
	json_array_foreach(rows, i, r)
	{
		row_cells(r, cell, cut, ncols, tty);
		for (size_t k = 0; k < ncols; k++) {
			fputs(strbuf_str(&cell[k]), stdout);
			if (k == ncols - 1)
				break;
			if (tty)
				printf(
				    "%*s",
				    (int)(w[k] -
					  utf8_chars(cell[k].buf, cell[k].len) +
					  2),
				    "");
			else
				putchar('\t');
		}
		putchar('\n');
	}
	for (size_t k = 0; k < ncols; k++)
		strbuf_release(&cell[k]);
	free(cell);
	free(head);
	free(cut);
	free(w);
}

/* ---- ls, export, stats ---- */

/* ls's rows: a JSON line each with --json, else kept for the table. */
struct ls_out {
	bool json;
	json_t *rows;
};

static int ls_row(void *arg, json_t *row, struct sbx_error **err)
{
	struct ls_out *o = arg;
	char *line;

	(void)err;
	if (!o->json) {
		json_array_append(o->rows, row);
		return 0;
	}
	line = json_dumps(row, JSON_COMPACT);
	puts(line);
	free(line);
	return 0;
}

static int audit_ls(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct audit_opts *o = opts;
	struct ls_out out = {.json = ctx->json};
	struct svc_audit_ls_req req = {
	    .limit = o->has_limit ? (unsigned long)o->limit : 0,
	    .row = ls_row,
	    .row_arg = &out,
	};
	struct svc_audit_ls_res res;
	struct sbx_error *err = NULL;
	int rc = filter_from(ctx, &cmd_audit_ls_entry, o);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	if (o->follow && (o->has_limit || o->f.has_after))
		return cmd_usage_error(&cmd_audit_ls_entry,
				       "--follow does not take --%s (-n N: "
				       "the last N rows first)",
				       o->has_limit ? "limit" : "after");
	if (o->lines.given && !o->follow)
		return cmd_usage_error(&cmd_audit_ls_entry,
				       "-n/--lines goes with --follow (a page "
				       "is --limit N)");
	if (o->follow)
		return cmd_audit_follow(ctx, &o->f, o->lines.n, report);
	req.filter = o->f;
	out.rows = json_array();
	if (svc_audit_ls(&ctx->svc, &ctx->call, &req, &res, &err) < 0) {
		json_decref(out.rows);
		return report(&err);
	}
	if (ctx->json) {
		char *line = json_dumps(res.doc, JSON_COMPACT);

		puts(line);
		free(line);
	} else {
		print_table(out.rows);
		if (res.cursor)
			fprintf(stderr, "next page: --after %s\n", res.cursor);
	}
	svc_audit_ls_res_release(&res);
	json_decref(out.rows);
	return 0;
}

/* tail: ls --follow with the last rows first, as tail -f. */
static int audit_tail(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct audit_opts *o = opts;
	int rc = filter_from(ctx, &cmd_audit_tail_entry, o);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	return cmd_audit_follow(
	    ctx, &o->f, o->lines.given ? o->lines.n : CMD_AUDIT_TAIL_DEFAULT,
	    report);
}

static int audit_export(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct cmd_entry *cmd = &cmd_audit_export_entry;
	struct audit_opts *o = opts;
	struct svc_audit_export_req req = {.out = SVC_SINK_FD(STDOUT_FILENO)};
	struct svc_audit_export_res res;
	struct sbx_error *err = NULL;
	int rc = filter_from(ctx, cmd, o);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	if (!o->format)
		return cmd_usage_error(cmd, "--format csv or jsonl, which?");
	if (svc_audit_parse_format(o->format, &req.format, &err) < 0)
		return refused(cmd, "format", " ", &err);
	req.filter = o->f;
	/* The rows go to the descriptor: nothing may wait in stdio. */
	fflush(stdout);
	if (svc_audit_export(&ctx->svc, &ctx->call, &req, &res, &err) == 0)
		return 0;
	cmd_stdout_gone(err->errnum);
	return report(&err);
}

static void print_stats(json_t *st)
{
	json_t *ops = json_object_get(st, "ops"), *op, *slowest;
	const char *name;

	printf("%lld operations, %lld failed, since %s\n",
	       (long long)json_integer_value(json_object_get(st, "total")),
	       (long long)json_integer_value(json_object_get(st, "failed")),
	       json_string_value(json_object_get(st, "since")) ?: "?");
	printf("%-11s %9s %9s %9s %9s %9s\n", "OP", "COUNT", "FAILED",
	       "P50_MS", "P95_MS", "MAX_MS");
	json_object_foreach(ops, name, op)
	{
		printf(
		    "%-11s %9lld %9lld %9.0f %9.0f %9lld\n", name,
		    (long long)json_integer_value(json_object_get(op, "count")),
		    (long long)json_integer_value(
			json_object_get(op, "failed")),
		    json_number_value(json_object_get(op, "p50_ms")),
		    json_number_value(json_object_get(op, "p95_ms")),
		    (long long)json_integer_value(
			json_object_get(op, "max_ms")));
	}
	slowest = json_object_get(st, "slowest");
	if (json_array_size(slowest)) {
		printf("\nslowest:\n");
		print_table(slowest);
	}
}

static int audit_stats(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct audit_opts *o = opts;
	struct svc_audit_stats_req req;
	struct svc_audit_stats_res res;
	struct sbx_error *err = NULL;
	int rc = filter_from(ctx, &cmd_audit_stats_entry, o);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	req.filter = o->f;
	if (svc_audit_stats(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return report(&err);
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		print_stats(res.doc);
	svc_audit_stats_res_release(&res);
	return 0;
}

/* ---- sweep ---- */

static int audit_sweep(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct cmd_entry *cmd = &cmd_audit_sweep_entry;
	const struct audit_opts *o = opts;
	struct svc_audit_sweep_req req = {.days = o->has_days ? o->days : 0};
	struct svc_audit_sweep_res res;
	struct sbx_error *err = NULL;
	char t[32];
	int rc = no_identity(ctx, cmd);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	if (svc_audit_sweep(&ctx->svc, &ctx->call, &req, &res, &err) < 0) {
		/* OPERATION_RETENTION_DAYS set wrong: as a bad --days. */
		if (err->kind != SBX_E_INVALID)
			return report(&err);
		rc = cmd_usage_error(cmd, "%s", err->msg);
		sbx_error_free(&err);
		return rc;
	}
	if (ctx->json) {
		cmd_print_json(steal_pointer(&res.doc));
	} else {
		printf("deleted %llu %s older than %s (%llu %s)", res.deleted,
		       res.deleted == 1 ? "row" : "rows",
		       when(t, res.before_us), res.days,
		       res.days == 1 ? "day" : "days");
		if (res.held)
			printf("; %llu old %s held back behind newer ones in "
			       "their chain",
			       res.held, res.held == 1 ? "row" : "rows");
		putchar('\n');
	}
	svc_audit_sweep_res_release(&res);
	return 0;
}

/* ---- verify, head ---- */

static void print_verify(const struct svc_audit_verify_res *res)
{
	json_t *b, *doc = res->doc;
	long long chains =
	    (long long)json_integer_value(json_object_get(doc, "chains"));
	long long rows =
	    (long long)json_integer_value(json_object_get(doc, "rows"));
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	json_array_foreach(json_object_get(doc, "bad"), i, b)
	{
		long long seq = json_integer_value(json_object_get(b, "seq"));
		const char *id = json_string_value(json_object_get(b, "id"));
		const char *sess =
		    json_string_value(json_object_get(b, "session"));

		if (sess && *sess)
			printf("session %s: ", shown(&sb, sess));
		if (seq >= 0)
			printf("row %lld (id %s): ", seq, id ? id : "-");
		printf("%s\n",
		       json_string_value(json_object_get(b, "why")) ?: "");
	}
	printf("%s %lld %s, %lld %s\n", res->verified ? "verified" : "checked",
	       chains, chains == 1 ? "chain" : "chains", rows,
	       rows == 1 ? "row" : "rows");
	strbuf_release(&sb);
}

static int audit_verify(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct svc_audit_chains_req req;
	struct svc_audit_verify_res res;
	struct sbx_error *err = NULL;
	int rc = chains_from(ctx, &cmd_audit_verify_entry, opts, &req);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	if (svc_audit_verify(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return report(&err);
	rc = res.verified ? SBX_EXIT_OK : SBX_EXIT_FAIL;
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		print_verify(&res);
	svc_audit_verify_res_release(&res);
	return rc;
}

static int audit_head(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct svc_audit_chains_req req;
	struct svc_audit_head_res res;
	struct sbx_error *err = NULL;
	struct strbuf s1 = STRBUF_INIT, s2 = STRBUF_INIT;
	json_t *h;
	size_t i;
	int rc = chains_from(ctx, &cmd_audit_head_entry, opts, &req);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	if (svc_audit_head(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return report(&err);
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	json_array_foreach(res.doc, i, h)
	{
#define S(key) (json_string_value(json_object_get(h, key)) ?: "")
#define N(key) ((long long)json_integer_value(json_object_get(h, key)))
		printf("%s\t%s\t%lld\t%lld\t%s\t%lld\t%s\n",
		       shown(&s1, S("session")), shown(&s2, S("tenant")),
		       N("rows"), N("head_seq"), S("head"), N("swept_rows"),
		       S("swept_hash"));
#undef S
#undef N
	}
	strbuf_release(&s1);
	strbuf_release(&s2);
	svc_audit_head_res_release(&res);
	return 0;
}

/* ---- the table ---- */

#define FILTERS                                                                \
	"[--tenant T] [--session KEY] [--agent ID] [--run ID] [--op OP]... "   \
	"[--failed] [--search TEXT] [--since TIME] [--until TIME]"
#define VERB(n)                                                                \
	.name = #n, .run = audit_##n, .opts_size = sizeof(struct audit_opts),  \
	.needs = CMD_NEEDS_CALL, .parent = &cmd_audit_entry

const struct cmd_entry cmd_audit_migrate_entry = {
    VERB(migrate),
    .usage = "[--status] [--json]",
    .summary = "create or upgrade the audit's schema; --status lists "
	       "migrations",
    .options = migrate_options,
};
const struct cmd_entry cmd_audit_status_entry = {
    VERB(status),
    .usage = "[--json]",
    .summary = "database reachable, schema version, rows spooled, last "
	       "flush, rows lost",
};
const struct cmd_entry cmd_audit_flush_entry = {
    VERB(flush),
    .usage = "[--json]",
    .summary = "replay the spool into the database",
};
const struct cmd_entry cmd_audit_ls_entry = {
    VERB(ls),
    .usage = FILTERS " [--limit N] [--after CURSOR] [-f [-n N]] [--json]",
    .summary = "operations, newest first, a page at a time; -f: as they "
	       "commit",
    .options = ls_options,
};
const struct cmd_entry cmd_audit_tail_entry = {
    VERB(tail),
    .usage = FILTERS " [-n N] [--json]",
    .summary = "the last N operations (10), then each as it commits, "
	       "until Ctrl-C",
    .options = tail_options,
};
const struct cmd_entry cmd_audit_export_entry = {
    VERB(export),
    .usage = FILTERS " --format csv|jsonl",
    .summary = "every matching operation, streamed",
    .options = export_options,
};
const struct cmd_entry cmd_audit_stats_entry = {
    VERB(stats),
    .usage = FILTERS " [--json]",
    .summary = "counts per operation, failures, the slowest (default: "
	       "the last 24 hours)",
    .options = stats_options,
};
const struct cmd_entry cmd_audit_sweep_entry = {
    VERB(sweep),
    .usage = "[--days N] [--json]",
    .summary = "delete rows older than the retention, in small batches",
    .options = sweep_options,
};
const struct cmd_entry cmd_audit_verify_entry = {
    VERB(verify),
    .usage = "[--session KEY | --tenant T] [--json]",
    .summary = "recompute the hash chains; name the first bad row",
    .options = chain_options,
};
const struct cmd_entry cmd_audit_head_entry = {
    VERB(head),
    .usage = "[--session KEY | --tenant T] [--json]",
    .summary = "each chain's latest hash, to keep elsewhere",
    .options = chain_options,
};

static const struct cmd_entry *const audit_verbs[] = {
    &cmd_audit_migrate_entry, &cmd_audit_status_entry,
    &cmd_audit_flush_entry,   &cmd_audit_ls_entry,
    &cmd_audit_tail_entry,
    &cmd_audit_export_entry,  &cmd_audit_stats_entry,
    &cmd_audit_sweep_entry,   &cmd_audit_verify_entry,
    &cmd_audit_head_entry,
};

const struct cmd_entry cmd_audit_entry = {
    .name = "audit",
    .usage = "migrate|status|flush|ls|tail|export|stats|sweep|verify|head "
	     "...",
    .summary = "the operation audit in PostgreSQL",
    .verbs = audit_verbs,
    .nverbs = sizeof(audit_verbs) / sizeof(audit_verbs[0]),
    .epilog = "The database: --db URI, SBXCAT_DATABASE_URL, or libpq's "
	      "PG* environment and service file.  The spool: "
	      "SBXCAT_SPOOL_DIR (default /var/spool/sbxcat).  TIME: ISO "
	      "8601 (2026-12-01, 2026-12-01T10:00:00Z) or relative (2h, "
	      "7d).  See docs/audit.md.",
};

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
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/suggest.h"
#include "basic/text.h"
#include "cli/cmd-audit-follow.h"
#include "cli/cmd.h"
#include "cli/tty.h"
#include "svc/svc-audit.h"
#include "svc/svc-auditweb.h"

extern const struct cmd_entry cmd_audit_migrate_entry, cmd_audit_status_entry,
    cmd_audit_flush_entry, cmd_audit_ls_entry, cmd_audit_export_entry,
    cmd_audit_stats_entry, cmd_audit_sweep_entry, cmd_audit_verify_entry,
    cmd_audit_head_entry, cmd_audit_tail_entry, cmd_audit_web_entry;

/* The options of every verb (each verb's table names those it takes). */
struct audit_opts {
	svc_audit_filter f;	  /* ls, export, stats; verify, head */
	const char *since, *until; /* parsed once --local is known */
	bool local;		   /* local time in and out, not UTC */
	bool status;		  /* migrate */
	unsigned long long to;	  /* migrate --to */
	bool has_to;
	const char *reader;	  /* migrate --reader ROLE */
	unsigned long long limit; /* ls */
	bool has_limit;
	const char *format;	 /* export */
	unsigned long long days; /* sweep */
	bool has_days;
	const char *columns, *output, *color; /* ls: the table */
	bool no_pager;			      /* ls */
	bool follow;			      /* ls */
	struct cmd_audit_lines lines;	      /* ls --follow, tail */
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

/* --since TIME, --until TIME, read after every option (--local may
 * follow them). */
static int opt_time(const struct cmd_entry *cmd, const char *name,
		    const char *arg, bool local, long long *us)
{
	struct sbx_error *err = NULL;

	if (!arg || svc_audit_parse_time(arg, local, us, &err) == 0)
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
	    CMD_STRING("since", 0, struct audit_opts, since, 0),               \
	    CMD_STRING("until", 0, struct audit_opts, until, 0),               \
	    CMD_FLAG("local", 0, struct audit_opts, local, 0)

static const struct cmd_option migrate_options[] = {
    CMD_FLAG("status", 0, struct audit_opts, status, 0),
    CMD_COUNT("to", struct audit_opts, to, has_to, 1000, 0),
    CMD_STRING("reader", 0, struct audit_opts, reader, 0),
    CMD_OPTIONS_END,
};
static const struct cmd_option ls_options[] = {
    FILTER_OPTIONS,
    CMD_COUNT("limit", struct audit_opts, limit, has_limit, SVC_AUDIT_LS_MAX,
	      0),
    CMD_CALL("after", struct audit_opts, f, opt_after, 0),
    CMD_STRING("columns", 0, struct audit_opts, columns, 0),
    CMD_STRING("output", 'o', struct audit_opts, output, 0),
    CMD_STRING("color", 0, struct audit_opts, color, 0),
    CMD_FLAG("no-pager", 0, struct audit_opts, no_pager, 0),
    CMD_FLAG("follow", 'f', struct audit_opts, follow, 0),
    CMD_CALL_L("lines", 'n', struct audit_opts, lines, cmd_audit_opt_lines, 0),
    CMD_OPTIONS_END,
};
static const struct cmd_option tail_options[] = {
    FILTER_OPTIONS,
    CMD_STRING("columns", 0, struct audit_opts, columns, 0),
    CMD_STRING("output", 'o', struct audit_opts, output, 0),
    CMD_STRING("color", 0, struct audit_opts, color, 0),
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
	int rc = opt_time(cmd, "since", o->since, o->local, &o->f.since_us);

	if (!rc)
		rc = opt_time(cmd, "until", o->until, o->local, &o->f.until_us);
	if (rc)
		return rc;
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
	struct svc_audit_migrate_req req = {
	    .status = o->status, .to = o->has_to ? (int)o->to : 0};
	struct svc_audit_migrate_res res;
	struct sbx_error *err = NULL;
	json_t *m;
	size_t i;
	int rc = no_identity(ctx, &cmd_audit_migrate_entry);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	if (o->reader && o->status)
		return cmd_usage_error(&cmd_audit_migrate_entry,
				       "--reader does not go with --status");
	if (svc_audit_migrate(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return report(&err);
	/* The auditor's page's role: made once the tables are there. */
	if (o->reader &&
	    svc_auditweb_grant_reader(&ctx->svc, o->reader, &err) < 0) {
		svc_audit_migrate_res_release(&res);
		if (err->kind != SBX_E_INVALID)
			return report(&err);
		rc = cmd_usage_error(&cmd_audit_migrate_entry, "--reader %s",
				     err->msg);
		sbx_error_free(&err);
		return rc;
	}
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
	if (o->reader && !ctx->json)
		printf("role %s may read the audit (SELECT only); a login role "
		       "for the page: CREATE ROLE name LOGIN IN ROLE %s\n",
		       o->reader, o->reader);
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

/* An RFC 3339 UTC time of the audit's as local time with its offset
 * (--local), to the second: what the table shows. */
static void local_time(json_t *obj, const char *key)
{
	const char *ts = json_string_value(json_object_get(obj, key));
	char out[40];
	long long t;

	if (!ts || clock_parse_time(ts, &t) < 0)
		return;
	clock_format_local(out, t);
	json_object_set_new(obj, key, json_string(out));
}

/* At most this many columns in one table (--columns may name one twice). */
#define TABLE_MAX 32

/* How a table of rows is shown. */
struct table {
	const svc_audit_column *col[TABLE_MAX];
	size_t n;
	bool wide;    /* -o wide: whole cells, nothing cut */
	size_t width; /* the terminal's columns; 0: not one (nothing cut) */
	bool colour;  /* failed rows in red */
	bool local;   /* --local: times in the local zone */
};

/* Column k's header: with --local the time's says no zone (each cell
 * says its offset). */
static const char *head_of(const struct table *t, size_t k)
{
	const char *h = t->col[k]->head;

	return t->local && !strncmp(h, "TIME ", 5) ? "TIME" : h;
}

/* The usual table (every column with -o wide), on standard output as it
 * is now: called before a pager takes it. */
static void table_usual(struct table *t, bool wide, enum tty_when colour)
{
	const svc_audit_column *c;

	t->n = 0;
	t->wide = wide;
	t->local = false;
	for (size_t k = 0; (c = svc_audit_table_column(k)); k++)
		if ((wide || c->usual) && t->n < TABLE_MAX)
			t->col[t->n++] = c;
	t->width = tty_columns(STDOUT_FILENO);
	t->colour = tty_colour(STDOUT_FILENO, colour);
}

/* The column a terminal knows by name, or NULL. */
static const svc_audit_column *column_named(const char *name)
{
	const svc_audit_column *c;

	for (size_t k = 0; (c = svc_audit_table_column(k)); k++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* --columns LIST: the columns named, in that order; a name that is not
 * one refused, with the nearest as a suggestion, else the list. */
static int table_columns(struct table *t, const struct cmd_entry *cmd,
			 const char *list)
{
	const char *names[TABLE_MAX];
	const svc_audit_column *c;
	size_t nnames = 0;
	char *copy = xstrdup(list), *p = copy, *name;
	struct strbuf all = STRBUF_INIT, sb = STRBUF_INIT;
	int rc = 0;

	for (size_t k = 0; (c = svc_audit_table_column(k)); k++) {
		strbuf_addf(&all, "%s%s", k ? ", " : "", c->name);
		if (nnames < TABLE_MAX)
			names[nnames++] = c->name;
	}
	t->n = 0;
	while (!rc && (name = strsep(&p, ","))) {
		const char *near;

		c = column_named(name);
		if (c && t->n == TABLE_MAX)
			rc = cmd_usage_error(cmd, "--columns: at most %d",
					     TABLE_MAX);
		else if (c)
			t->col[t->n++] = c;
		else if ((near = suggest_word(name, names, nnames)))
			rc = cmd_usage_error(cmd,
					     "--columns: '%s' is not a column; "
					     "did you mean '%s'?",
					     shown(&sb, name), near);
		else
			rc = cmd_usage_error(cmd,
					     "--columns: '%s' is not a column "
					     "(the columns: %s)",
					     shown(&sb, name), all.buf);
	}
	free(copy);
	strbuf_release(&all);
	strbuf_release(&sb);
	return rc;
}

/* The table ls's options ask for: --columns, -o wide, --color. */
static int table_from(struct table *t, const struct cmd_entry *cmd,
		      const struct audit_opts *o)
{
	enum tty_when colour = TTY_AUTO;
	struct strbuf sb = STRBUF_INIT;
	bool wide = false;
	int rc = 0;

	if (o->output && !strcmp(o->output, "wide"))
		wide = true;
	else if (o->output)
		rc = cmd_usage_error(cmd, "-o '%s': expected wide",
				     shown(&sb, o->output));
	if (!rc && o->color && tty_parse_when(o->color, &colour) < 0)
		rc = cmd_usage_error(cmd,
				     "--color '%s': expected auto, always or "
				     "never",
				     shown(&sb, o->color));
	strbuf_release(&sb);
	if (rc)
		return rc;
	table_usual(t, wide, colour);
	return o->columns ? table_columns(t, cmd, o->columns) : 0;
}

/* The table's cells of row; an empty one "-" in an aligned table. */
static void row_cells(const struct table *t, json_t *row, struct strbuf *cell)
{
	for (size_t k = 0; k < t->n; k++) {
		strbuf_reset(&cell[k]);
		svc_audit_table_cell(t->col[k], row, !t->wide, &cell[k]);
		if (t->width && !cell[k].len)
			strbuf_addch(&cell[k], '-');
	}
}

/*
 * Widths that fit the terminal.  What gives, in turn, a column a cell at a
 * time, the widest first: the target (down to 16 columns), then the ids
 * (the session, agent, run, tenant, runtime: down to 12, their start and
 * end kept), then the detail (down to 16), then any of them down to its
 * header.  A column is never dropped or wrapped; the time, the op and the
 * numbers are never cut.  Past that (a very narrow terminal) lines are
 * longer than the terminal.
 */
static void fit(const struct table *t, size_t *w)
{
	static const struct {
		int cut; /* enum audit_cut; -1: any that cuts */
		size_t floor;
	} phases[] = {
	    {SVC_AUDIT_CUT_FIRST, 16},
	    {SVC_AUDIT_CUT_MIDDLE, 12},
	    {SVC_AUDIT_CUT_END, 16},
	    {-1, 0},
	};
	size_t total = 0;

	for (size_t k = 0; k < t->n; k++)
		total += w[k] + (k ? 2 : 0);
	for (size_t ph = 0; ph < sizeof(phases) / sizeof(phases[0]); ph++) {
		while (total > t->width) {
			size_t best = t->n;

			for (size_t k = 0; k < t->n; k++) {
				const svc_audit_column *c = t->col[k];
				size_t min = strlen(head_of(t, k));

				if (phases[ph].floor > min)
					min = phases[ph].floor;
				if ((int)c->cut == SVC_AUDIT_CUT_NEVER ||
				    (phases[ph].cut >= 0 &&
				     (int)c->cut != phases[ph].cut) ||
				    w[k] <= min)
					continue;
				if (best == t->n || w[k] > w[best])
					best = k;
			}
			if (best == t->n)
				break;
			w[best]--;
			total--;
		}
	}
}

/* The header of t at widths w (aligned on a terminal), appended. */
static void head_line(const struct table *t, const size_t *w,
		      struct strbuf *line)
{
	for (size_t k = 0; k < t->n; k++) {
		const char *h = head_of(t, k);

		if (k == t->n - 1)
			strbuf_addstr(line, h);
		else if (t->width)
			strbuf_addf(line, "%-*s  ", (int)w[k], h);
		else
			strbuf_addf(line, "%s\t", h);
	}
}

/* Row r's line at widths w (its cells cut to them on a terminal), red
 * when it failed and colour is on, appended. */
static void row_line(const struct table *t, const size_t *w,
		     struct strbuf *cell, json_t *r, struct strbuf *line)
{
	bool red = t->colour && !json_is_true(json_object_get(r, "ok"));

	row_cells(t, r, cell);
	if (red)
		strbuf_addstr(line, TTY_RED);
	for (size_t k = 0; k < t->n; k++) {
		if (t->width && !t->wide)
			tty_cut(&cell[k], w[k],
				(int)t->col[k]->cut != SVC_AUDIT_CUT_END);
		strbuf_add(line, cell[k].buf, cell[k].len);
		if (k == t->n - 1)
			break;
		if (t->width)
			strbuf_addf(line, "%*s",
				    (int)(w[k] -
					  tty_width(cell[k].buf, cell[k].len) +
					  2),
				    "");
		else
			strbuf_addch(line, '\t');
	}
	if (red)
		strbuf_addstr(line, TTY_RESET);
}

/*
 * Rows as a table (svc_audit_table_*: the audit's columns): on a
 * terminal aligned and fitted to its width (fit); otherwise a header and
 * tab-separated lines, whole.  Failed rows in red when colour.
 */
static void print_table(json_t *rows, const struct table *t)
{
	struct strbuf *cell = xcalloc(t->n ? t->n : 1, sizeof(*cell));
	size_t *w = xcalloc(t->n ? t->n : 1, sizeof(*w));
	struct strbuf line = STRBUF_INIT;
	json_t *r;
	size_t i;

	if (t->local)
		json_array_foreach(rows, i, r)
		{
			local_time(r, "created_at");
		}
	for (size_t k = 0; k < t->n; k++) {
		strbuf_init(&cell[k]);
		w[k] = strlen(head_of(t, k));
	}
	if (t->width) {
		json_array_foreach(rows, i, r)
		{
			row_cells(t, r, cell);
			for (size_t k = 0; k < t->n; k++) {
				size_t n = tty_width(cell[k].buf, cell[k].len);

				if (n > w[k])
					w[k] = n;
			}
		}
		if (!t->wide)
			fit(t, w);
	}
	head_line(t, w, &line);
	puts(line.buf);
	json_array_foreach(rows, i, r)
	{
		strbuf_reset(&line);
		row_line(t, w, cell, r, &line);
		puts(line.buf);
	}
	for (size_t k = 0; k < t->n; k++)
		strbuf_release(&cell[k]);
	strbuf_release(&line);
	free(cell);
	free(w);
}

/* ---- ls, export, stats ---- */

/* ls's rows, kept: printed once the page is whole (and a pager runs). */
static int ls_row(void *arg, json_t *row, struct sbx_error **err)
{
	(void)err;
	json_array_append(arg, row);
	return 0;
}

/* Rows the database does not have yet: said, or an auditor reads a page
 * without them as all there is. */
static void say_spooled(unsigned long long n)
{
	if (n)
		fprintf(stderr,
			"sbxcat: %llu %s waiting in the spool, not in this "
			"list (sbxcat audit flush)\n",
			n, n == 1 ? "row" : "rows");
}

/* ---- ls --follow, tail ---- */

/* The table one row at a time (cmd-audit-follow.c writes each line): the
 * widths are the widest cells seen so far, fitted to the terminal, since
 * the rows to come are not known. */
struct follow_table {
	const struct table *t;
	size_t *w;
	struct strbuf *cell;
	bool head;
};

static void follow_line(void *arg, json_t *row, struct strbuf *line)
{
	struct follow_table *ft = arg;
	const struct table *t = ft->t;

	if (t->local)
		local_time(row, "created_at");
	if (t->width) {
		row_cells(t, row, ft->cell);
		for (size_t k = 0; k < t->n; k++) {
			size_t n = tty_width(ft->cell[k].buf, ft->cell[k].len);

			if (n > ft->w[k])
				ft->w[k] = n;
		}
		if (!t->wide)
			fit(t, ft->w);
	}
	if (!ft->head) {
		head_line(t, ft->w, line);
		strbuf_addch(line, '\n');
		ft->head = true;
	}
	row_line(t, ft->w, ft->cell, row, line);
	strbuf_addch(line, '\n');
}

/* Follow with o's filter in table t, the last tail rows first. */
static int follow_run(struct sbx_ctx *ctx, const struct audit_opts *o,
		      const struct table *t, unsigned long tail)
{
	struct follow_table ft = {.t = t};
	int rc;

	ft.w = xcalloc(t->n ? t->n : 1, sizeof(*ft.w));
	ft.cell = xcalloc(t->n ? t->n : 1, sizeof(*ft.cell));
	for (size_t k = 0; k < t->n; k++) {
		strbuf_init(&ft.cell[k]);
		ft.w[k] = strlen(head_of(t, k));
	}
	rc = cmd_audit_follow(ctx, &o->f, tail, report, follow_line, &ft);
	for (size_t k = 0; k < t->n; k++)
		strbuf_release(&ft.cell[k]);
	free(ft.cell);
	free(ft.w);
	return rc;
}

static int ls_follow(struct sbx_ctx *ctx, const struct audit_opts *o,
		     const struct table *t)
{
	if (o->follow && (o->has_limit || o->f.has_after))
		return cmd_usage_error(&cmd_audit_ls_entry,
				       "--follow does not take --%s (-n N: "
				       "the last N rows first)",
				       o->has_limit ? "limit" : "after");
	if (!o->follow)
		return cmd_usage_error(&cmd_audit_ls_entry,
				       "-n/--lines goes with --follow (a page "
				       "is --limit N)");
	return follow_run(ctx, o, t, o->lines.n);
}

static int audit_ls(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct audit_opts *o = opts;
	json_t *rows = json_array(), *r;
	struct svc_audit_ls_req req = {
	    .limit = o->has_limit ? (unsigned long)o->limit : 0,
	    .row = ls_row,
	    .row_arg = rows,
	};
	struct svc_audit_ls_res res;
	struct sbx_error *err = NULL;
	struct table t;
	size_t i;
	int rc = filter_from(ctx, &cmd_audit_ls_entry, o);

	(void)nargs, (void)args;
	if (!rc)
		rc = table_from(&t, &cmd_audit_ls_entry, o);
	t.local = o->local;
	if (rc) {
		json_decref(rows);
		return rc;
	}
	if (o->follow || o->lines.given) {
		json_decref(rows);
		return ls_follow(ctx, o, &t);
	}
	req.filter = o->f;
	if (svc_audit_ls(&ctx->svc, &ctx->call, &req, &res, &err) < 0) {
		json_decref(rows);
		return report(&err);
	}
	tty_pager_start(!o->no_pager);
	if (ctx->json) {
		json_array_append(rows, res.doc);
		json_array_foreach(rows, i, r)
		{
			char *line = json_dumps(r, JSON_COMPACT);

			puts(line);
			free(line);
		}
	} else {
		print_table(rows, &t);
	}
	tty_pager_end();
	if (res.cursor && !ctx->json)
		fprintf(stderr, "next page: --after %s\n", res.cursor);
	say_spooled(res.spooled);
	svc_audit_ls_res_release(&res);
	json_decref(rows);
	return 0;
}

/* tail: ls --follow with the last rows first, as tail -f. */
static int audit_tail(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct audit_opts *o = opts;
	struct table t;
	int rc = filter_from(ctx, &cmd_audit_tail_entry, o);

	(void)nargs, (void)args;
	if (!rc)
		rc = table_from(&t, &cmd_audit_tail_entry, o);
	if (rc)
		return rc;
	t.local = o->local;
	return follow_run(ctx, o, &t,
			  o->lines.given ? o->lines.n : CMD_AUDIT_TAIL_DEFAULT);
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

static void print_stats(json_t *st, bool local)
{
	json_t *ops = json_object_get(st, "ops"), *op, *slowest;
	const char *name;

	if (local)
		local_time(st, "since");
	printf("%lld operations, %lld failed, since %s\n",
	       (long long)json_integer_value(json_object_get(st, "total")),
	       (long long)json_integer_value(json_object_get(st, "failed")),
	       json_string_value(json_object_get(st, "since")) ?: "?");
	printf("%-11s %9s %9s %9s %9s %9s\n", "OP", "COUNT", "FAILED", "P50_MS",
	       "P95_MS", "MAX_MS");
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
		/* The usual table, and how long each took. */
		static const char *const cols[] = {
		    "time", "agent", "run", "op", "target", "ms", "detail"};
		struct table t;

		table_usual(&t, false, TTY_AUTO);
		t.n = 0;
		for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
			t.col[t.n++] = column_named(cols[k]);
		printf("\nslowest:\n");
		t.local = local;
		print_table(slowest, &t);
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
		print_stats(res.doc, o->local);
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
		printf("deleted %llu %s (%llu %s dropped whole) older than %s "
		       "(%llu %s)",
		       res.deleted, res.deleted == 1 ? "row" : "rows",
		       res.days_dropped, res.days_dropped == 1 ? "day" : "days",
		       when(t, res.before_us), res.days,
		       res.days == 1 ? "day" : "days");
		if (res.days_split)
			printf("; %llu %s gone row by row (a replayed row "
			       "precedes its last in a chain)",
			       res.days_split,
			       res.days_split == 1 ? "day" : "days");
		if (res.days_busy)
			printf("; %llu %s left to the next sweep (in use "
			       "for 5 s)",
			       res.days_busy,
			       res.days_busy == 1 ? "day" : "days");
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
	"[--failed] [--search TEXT] [--since TIME] [--until TIME] [--local]"
#define VERB(n)                                                                \
	.name = #n, .run = audit_##n, .opts_size = sizeof(struct audit_opts),  \
	.needs = CMD_NEEDS_CALL, .parent = &cmd_audit_entry

const struct cmd_entry cmd_audit_migrate_entry = {
    VERB(migrate),
    .usage = "[--status] [--to N] [--reader ROLE] [--json]",
    .summary = "create or upgrade the audit's schema; --status lists "
	       "migrations; --reader makes a read-only role",
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
    .usage = FILTERS " [--limit N] [--after CURSOR] [-f [-n N]] [--json]"
		     " [--columns LIST | -o wide] [--color WHEN] [--no-pager]",
    .summary = "operations, newest first, a page at a time; -f: as they "
	       "commit",
    .options = ls_options,
};
const struct cmd_entry cmd_audit_tail_entry = {
    VERB(tail),
    .usage = FILTERS " [-n N] [--json] [--columns LIST | -o wide] "
		     "[--color WHEN]",
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
    &cmd_audit_migrate_entry, &cmd_audit_status_entry, &cmd_audit_flush_entry,
    &cmd_audit_ls_entry,      &cmd_audit_tail_entry,   &cmd_audit_export_entry,
    &cmd_audit_stats_entry,   &cmd_audit_sweep_entry,  &cmd_audit_verify_entry,
    &cmd_audit_head_entry,    &cmd_audit_web_entry,
};

const struct cmd_entry cmd_audit_entry = {
    .name = "audit",
    .usage = "migrate|status|flush|ls|tail|export|stats|sweep|verify|head|"
	     "web ...",
    .summary = "the operation audit in PostgreSQL",
    .verbs = audit_verbs,
    .nverbs = sizeof(audit_verbs) / sizeof(audit_verbs[0]),
    .epilog = "The database: --db URI, SBXCAT_DATABASE_URL, or libpq's "
	      "PG* environment and service file.  The spool: "
	      "SBXCAT_SPOOL_DIR (default /var/spool/sbxcat).  TIME: ISO "
	      "8601 (2026-12-01, 2026-12-01T10:00:00Z) or relative (2h, "
	      "7d).  See docs/audit.md.",
};

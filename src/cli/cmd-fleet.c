/*
 * cmd-fleet.c - sbxcat fleet VERB: the operator's view of the hosts that
 * serve together on one database (docs/fleet.md, "Commands"): ls, drain,
 * undrain, forget.
 *
 * Each verb is an operation of svc/svc-fleet.h; this file fills the
 * request and says what happened, in text or as the document --json
 * prints.  ls's table fits a terminal's width (COLUMNS wins) as audit
 * ls's does: what gives is the url, then the pool, then the host's name,
 * each cut with an ellipsis; off a terminal a header and tab-separated
 * lines, whole.  Every text from the table (a name, a url, a runtime) is
 * escaped: a row may have been written by hand.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"
#include "cli/cmd.h"
#include "cli/tty.h"
#include "svc/svc-audit.h"
#include "svc/svc-fleet.h"

extern const struct cmd_entry cmd_fleet_ls_entry, cmd_fleet_drain_entry,
    cmd_fleet_undrain_entry, cmd_fleet_forget_entry;

struct fleet_opts {
	bool force; /* forget */
};

static const struct cmd_option forget_options[] = {
    CMD_FLAG("force", 0, struct fleet_opts, force, 0),
    CMD_OPTIONS_END,
};

/* Say err, with the command line's words where it wants them. */
static int report(struct sbx_error **err)
{
	if (svc_audit_needs_database(*err)) {
		char *m = xasprintf("%s (--db URI, SBXCAT_DATABASE_URL, or "
				    "libpq's PG* environment): the fleet "
				    "lives in the audit's database",
				    (*err)->msg);

		free((*err)->msg);
		(*err)->msg = m;
	}
	return cmd_report(err);
}

/* ---- ls ---- */

enum { C_HOST, C_STATE, C_LEASE, C_SESSIONS, C_RESIDENT, C_POOL, C_URL, NCOL };

static const char *const heads[NCOL] = {
    "HOST", "STATE", "LEASE", "SESSIONS", "RESIDENT", "POOL", "URL",
};

/*
 * What gives when the table is too wide, in turn: the url down to 16
 * columns, the pool to 12, the host's name to 12, then the widest of them
 * a column at a time down to its header.  The state, the lease and the
 * counts are never cut; past that (a very narrow terminal) lines are
 * longer than the terminal.  A name and a url keep their start and end
 * (web-01 and web-11 differ at the end), the pool its start.
 */
static const struct {
	int col; /* -1: the widest that cuts */
	size_t floor;
} gives[] = {
    {C_URL, 16},
    {C_POOL, 12},
    {C_HOST, 12},
    {-1, 0},
};

static bool cuts(int k)
{
	return k == C_URL || k == C_POOL || k == C_HOST;
}

/* A span of seconds as the table says it: "4.1s" under ten seconds,
 * then whole seconds, minutes, hours, days (rounded down: a lease never
 * looks longer than it is). */
static void span(struct strbuf *sb, double s)
{
	long long n;

	if (!(s > 0))
		s = 0;
	if (s < 10) {
		strbuf_addf(sb, "%.1fs", (double)(long long)(s * 10) / 10);
		return;
	}
	n = s > 1e15 ? (long long)1e15 : (long long)s;
	if (n < 60)
		strbuf_addf(sb, "%llds", n);
	else if (n < 3600)
		strbuf_addf(sb, "%lldm", n / 60);
	else if (n < 86400)
		strbuf_addf(sb, "%lldh", n / 3600);
	else
		strbuf_addf(sb, "%lldd", n / 86400);
}

/* Keys of the pool, sorted (jsonb keeps its own order: shortest first). */
static int by_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "RUNTIME:READY,..." by runtime; "-" for none. */
static void pool_cell(struct strbuf *sb, json_t *pool)
{
	size_t n = json_is_object(pool) ? json_object_size(pool) : 0, i = 0;
	const char **keys = xcalloc(n ? n : 1, sizeof(*keys));
	const char *k;
	json_t *v;

	if (n)
		json_object_foreach(pool, k, v)
		{
			keys[i++] = k;
		}
	qsort(keys, i, sizeof(*keys), by_key);
	for (size_t j = 0; j < i; j++) {
		v = json_object_get(pool, keys[j]);
		if (j)
			strbuf_addch(sb, ',');
		text_add_escaped(sb, keys[j], strlen(keys[j]));
		if (json_is_integer(v))
			strbuf_addf(sb, ":%lld",
				    (long long)json_integer_value(v));
		else
			strbuf_addstr(sb, ":?");
	}
	if (!i)
		strbuf_addch(sb, '-');
	free(keys);
}

/* Host h's cells (doc its object: the pool parsed). */
static void host_cells(const svc_fleet_host *h, json_t *doc,
		       struct strbuf *cell)
{
	for (int k = 0; k < NCOL; k++)
		strbuf_reset(&cell[k]);
	text_add_escaped(&cell[C_HOST], h->name, strlen(h->name));
	strbuf_addstr(&cell[C_STATE], svc_fleet_state(h));
	if (h->alive) {
		span(&cell[C_LEASE], h->lease_left);
	} else {
		strbuf_addstr(&cell[C_LEASE], "dead ");
		span(&cell[C_LEASE], -h->lease_left);
	}
	strbuf_addf(&cell[C_SESSIONS], "%u/%u", h->placed, h->capacity);
	strbuf_addf(&cell[C_RESIDENT], "%u", h->resident);
	pool_cell(&cell[C_POOL], json_object_get(doc, "pool"));
	text_add_escaped(&cell[C_URL], h->url, strlen(h->url));
}

/* Widths w that fit width columns, as gives says. */
static void fit(size_t *w, size_t width)
{
	size_t total = 0;

	for (int k = 0; k < NCOL; k++)
		total += w[k] + (k ? 2 : 0);
	for (size_t g = 0; g < sizeof(gives) / sizeof(gives[0]); g++) {
		while (total > width) {
			int best = -1;

			for (int k = 0; k < NCOL; k++) {
				size_t min = strlen(heads[k]);

				if (gives[g].floor > min)
					min = gives[g].floor;
				if (!cuts(k) ||
				    (gives[g].col >= 0 && gives[g].col != k) ||
				    w[k] <= min)
					continue;
				if (best < 0 || w[k] > w[best])
					best = k;
			}
			if (best < 0)
				break;
			w[best]--;
			total--;
		}
	}
}

static void print_ls(const struct svc_fleet_ls_res *res)
{
	size_t width = tty_columns(STDOUT_FILENO), w[NCOL];
	struct strbuf cell[NCOL], line = STRBUF_INIT;

	for (int k = 0; k < NCOL; k++) {
		strbuf_init(&cell[k]);
		w[k] = strlen(heads[k]);
	}
	if (width) {
		for (size_t i = 0; i < res->n; i++) {
			host_cells(&res->hosts[i], json_array_get(res->doc, i),
				   cell);
			for (int k = 0; k < NCOL; k++) {
				size_t n = tty_width(cell[k].buf, cell[k].len);

				if (n > w[k])
					w[k] = n;
			}
		}
		fit(w, width);
	}
	for (size_t i = 0; i <= res->n; i++) {
		strbuf_reset(&line);
		if (i == 0) {
			for (int k = 0; k < NCOL; k++) {
				strbuf_reset(&cell[k]);
				strbuf_addstr(&cell[k], heads[k]);
			}
		} else {
			host_cells(&res->hosts[i - 1],
				   json_array_get(res->doc, i - 1), cell);
		}
		for (int k = 0; k < NCOL; k++) {
			if (width)
				tty_cut(&cell[k], w[k], k != C_POOL);
			strbuf_add(&line, cell[k].buf, cell[k].len);
			if (k == NCOL - 1)
				break;
			if (width)
				strbuf_addf(
				    &line, "%*s",
				    (int)(w[k] -
					  tty_width(cell[k].buf, cell[k].len) +
					  2),
				    "");
			else
				strbuf_addch(&line, '\t');
		}
		puts(line.buf);
	}
	for (int k = 0; k < NCOL; k++)
		strbuf_release(&cell[k]);
	strbuf_release(&line);
}

static int fleet_ls(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct svc_fleet_ls_res res;
	struct sbx_error *err = NULL;

	(void)opts, (void)nargs, (void)args;
	if (svc_fleet_ls(&ctx->svc, &ctx->call, &res, &err) < 0)
		return report(&err);
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		print_ls(&res);
	svc_fleet_ls_res_release(&res);
	return 0;
}

/* ---- drain, undrain, forget ---- */

static int drain(struct sbx_ctx *ctx, const char *host, bool on)
{
	struct svc_fleet_drain_req req = {.host = host, .on = on};
	struct svc_fleet_drain_res res;
	struct sbx_error *err = NULL;

	if (svc_fleet_drain(&ctx->svc, &ctx->call, &req, &res, &err) < 0)
		return report(&err);
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		printf("%s %s\n", on ? "draining" : "undrained", host);
	svc_fleet_drain_res_release(&res);
	return 0;
}

static int fleet_drain(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	(void)opts, (void)nargs;
	return drain(ctx, args[0], true);
}

static int fleet_undrain(struct sbx_ctx *ctx, void *opts, int nargs,
			 char **args)
{
	(void)opts, (void)nargs;
	return drain(ctx, args[0], false);
}

static int fleet_forget(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct fleet_opts *o = opts;
	struct svc_fleet_forget_req req = {.host = args[0], .force = o->force};
	struct svc_fleet_forget_res res;
	struct sbx_error *err = NULL;

	(void)nargs;
	if (svc_fleet_forget(&ctx->svc, &ctx->call, &req, &res, &err) < 0) {
		if (err->kind == SBX_E_CONFLICT && !err->hint)
			sbx_error_hint(err, "stop its sbxcat serve first (its "
					    "lease then ends), or forget it "
					    "anyway with --force");
		return report(&err);
	}
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		printf("forgot %s and %zu %s\n", args[0], res.sessions,
		       res.sessions == 1 ? "session" : "sessions");
	svc_fleet_forget_res_release(&res);
	return 0;
}

/* ---- the table ---- */

#define VERB(n)                                                                \
	.name = #n, .run = fleet_##n, .opts_size = sizeof(struct fleet_opts),  \
	.needs = CMD_NEEDS_CALL, .parent = &cmd_fleet_entry

const struct cmd_entry cmd_fleet_ls_entry = {
    VERB(ls),
    .usage = "[--json]",
    .summary = "the hosts: state, lease, sessions, pool, url",
};
const struct cmd_entry cmd_fleet_drain_entry = {
    VERB(drain),
    .usage = "HOST [--json]",
    .summary = "place no new session on HOST (its sessions stay)",
    .min_args = 1,
    .max_args = 1,
    .missing = "which host?",
};
const struct cmd_entry cmd_fleet_undrain_entry = {
    VERB(undrain),
    .usage = "HOST [--json]",
    .summary = "place sessions on HOST again",
    .min_args = 1,
    .max_args = 1,
    .missing = "which host?",
};
const struct cmd_entry cmd_fleet_forget_entry = {
    VERB(forget),
    .usage = "HOST [--force] [--json]",
    .summary = "remove a host gone for good, its sessions' rows with it",
    .options = forget_options,
    .min_args = 1,
    .max_args = 1,
    .missing = "which host?",
};

static const struct cmd_entry *const fleet_verbs[] = {
    &cmd_fleet_ls_entry,
    &cmd_fleet_drain_entry,
    &cmd_fleet_undrain_entry,
    &cmd_fleet_forget_entry,
};

const struct cmd_entry cmd_fleet_entry = {
    .name = "fleet",
    .usage = "ls|drain|undrain|forget ...",
    .summary = "the hosts serving on one database (SBXCAT_FLEET)",
    .verbs = fleet_verbs,
    .nverbs = sizeof(fleet_verbs) / sizeof(fleet_verbs[0]),
    .epilog = "The database: --db URI, SBXCAT_DATABASE_URL, or libpq's "
	      "PG* environment (the audit's).  HOST: the name a host "
	      "serves under (SBXCAT_FLEET).  See docs/fleet.md.",
};

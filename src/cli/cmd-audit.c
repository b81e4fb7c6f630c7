/*
 * cmd-audit.c - sbxcat audit VERB: the operation audit for operators and
 * auditors (brief section 8, docs/audit.md): migrate, status, flush, ls,
 * export, stats, sweep, verify, head.
 *
 * The work is auditdb.c's (schema, chains, sweep), auditq.c's (filtered
 * pages, export, stats) and spool.c's; this file parses, picks the
 * database and says what happened.  Nothing here is an operation: the
 * audit does not audit itself.
 */
#include "config.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "audit/audit.h"
#include "audit/auditdb.h"
#include "audit/auditq.h"
#include "cli/cmd.h"
#include "basic/error.h"
#include "audit/spool.h"
#include "basic/text.h"
#include "basic/xjson.h"

#define LS_LIMIT_DEFAULT 50
#define LS_LIMIT_MAX 10000
#define SWEEP_BATCH 10000
#define TABLE_TARGET_MAX 60 /* characters of a target on a terminal */
#define RETENTION_DAYS_DEFAULT 30

extern const struct cmd_entry cmd_audit_migrate_entry, cmd_audit_status_entry,
    cmd_audit_flush_entry, cmd_audit_ls_entry, cmd_audit_export_entry,
    cmd_audit_stats_entry, cmd_audit_sweep_entry, cmd_audit_verify_entry,
    cmd_audit_head_entry;

enum {
	OPT_STATUS = 256,
	OPT_TENANT,
	OPT_SESSION,
	OPT_OP,
	OPT_FAILED,
	OPT_SEARCH,
	OPT_SINCE,
	OPT_UNTIL,
	OPT_LIMIT,
	OPT_AFTER,
	OPT_FORMAT,
	OPT_DAYS,
};

/* The database every verb but status needs. */
static int open_db(struct sbx_ctx *ctx, struct auditdb **db,
		   struct sbx_error **err)
{
	const struct audit_config *c = &ctx->svc.cfg.audit;
	const char *conninfo = audit_config_db(c, NULL);

	if (!conninfo)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "no database configured (--db URI, "
				     "SBXCAT_DATABASE_URL, or libpq's PG* "
				     "environment)");
	return auditdb_connect(conninfo, c->connect_timeout, db, err);
}

/* The database, with the schema this binary knows (the query verbs). */
static int open_schema(struct sbx_ctx *ctx, struct auditdb **db,
		       struct sbx_error **err)
{
	int applied, known;

	if (open_db(ctx, db, err) < 0 ||
	    auditdb_schema_version(*db, &applied, &known, err) < 0)
		return -1;
	if (applied < known) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the audit's schema is at version %d of %d",
			      applied, known);
		sbx_error_hint(*err, "run: sbxcat audit migrate");
		return -1;
	}
	return 0;
}

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

/* ---- options ---- */

struct audit_args {
	struct auditq_filter f;
	bool status;			/* migrate --status */
	unsigned long long limit;	/* ls */
	const char *format;		/* export */
	unsigned long long days;	/* sweep */
	bool has_days;
	int noperands;
};

#define O_FILTERS (1u << 0)
#define O_PAGE (1u << 1)
#define O_FORMAT (1u << 2)
#define O_DAYS (1u << 3)
#define O_STATUS (1u << 4)
#define O_CHAIN (1u << 5) /* --session or --tenant, one of them */

static const struct option longopts[] = {
    COMMON_LONGOPTS,
    {"status", no_argument, NULL, OPT_STATUS},
    {"tenant", required_argument, NULL, OPT_TENANT},
    {"session", required_argument, NULL, OPT_SESSION},
    {"op", required_argument, NULL, OPT_OP},
    {"failed", no_argument, NULL, OPT_FAILED},
    {"search", required_argument, NULL, OPT_SEARCH},
    {"since", required_argument, NULL, OPT_SINCE},
    {"until", required_argument, NULL, OPT_UNTIL},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"after", required_argument, NULL, OPT_AFTER},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"days", required_argument, NULL, OPT_DAYS},
    {0}};

/* --op OP, repeated or a comma list. */
static int parse_ops(const struct cmd_entry *cmd, const char *arg,
		     unsigned *ops)
{
	char *copy = xstrdup(arg), *save = NULL, *w;
	int rc = 0;

	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int op = audit_op_parse(w);

		if (op < 0) {
			struct strbuf sb = STRBUF_INIT;

			rc = cmd_usage_error(cmd,
					     "--op '%s': not an operation "
					     "(write, edit, read, read_bytes, "
					     "ls_info, glob_info, grep_raw, "
					     "execute, open, close, reap)",
					     shown(&sb, w));
			strbuf_release(&sb);
			break;
		}
		*ops |= 1u << op;
	}
	if (!rc && !*ops)
		rc = cmd_usage_error(cmd, "--op: which operation?");
	free(copy);
	return rc;
}

static int parse_time(const struct cmd_entry *cmd, const char *opt,
		      const char *arg, long long *out)
{
	struct sbx_error *err = NULL;

	if (auditq_parse_time(arg, audit_now_us(), out, &err) == 0)
		return 0;
	cmd_usage_error(cmd, "%s: %s", opt, err->msg);
	sbx_error_free(&err);
	return SBX_EXIT_USAGE;
}

/*
 * Parse a verb's options (those in allowed, and the common ones).  Returns
 * 0, -1 after help, or an exit status.
 */
static int audit_options(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
			 unsigned allowed, int argc, char **argv,
			 struct audit_args *a)
{
	struct sbx_error *err = NULL;
	int c, rc, li;

	a->limit = LS_LIMIT_DEFAULT;
	for (;;) {
		unsigned need;

		li = -1;
		c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts, &li);
		if (c == -1)
			break;
		need = c == OPT_STATUS		      ? O_STATUS
		       : c == OPT_LIMIT || c == OPT_AFTER ? O_PAGE
		       : c == OPT_FORMAT		      ? O_FORMAT
		       : c == OPT_DAYS		      ? O_DAYS
		       : c == OPT_TENANT || c == OPT_SESSION
			   ? (allowed & O_CHAIN ? O_CHAIN : O_FILTERS)
		       : c == OPT_OP || c == OPT_FAILED || c == OPT_SEARCH ||
			       c == OPT_SINCE || c == OPT_UNTIL ||
			       c == OPT_AUDIT_AGENT || c == OPT_AUDIT_RUN
			   ? O_FILTERS
			   : 0;
		if (need && !(allowed & need)) {
			return cmd_usage_error(cmd, "'%s' does not take --%s",
					       cmd->name, longopts[li].name);
		}
		rc = 0;
		switch (c) {
		case OPT_STATUS:
			a->status = true;
			break;
		case OPT_TENANT:
			a->f.tenant = optarg;
			break;
		case OPT_SESSION:
			a->f.session = optarg;
			break;
		case OPT_OP:
			rc = parse_ops(cmd, optarg, &a->f.ops);
			break;
		case OPT_FAILED:
			a->f.failed = true;
			break;
		case OPT_SEARCH:
			a->f.search = optarg;
			break;
		case OPT_SINCE:
			rc = parse_time(cmd, "--since", optarg, &a->f.since_us);
			break;
		case OPT_UNTIL:
			rc = parse_time(cmd, "--until", optarg, &a->f.until_us);
			break;
		case OPT_LIMIT:
			rc = cmd_parse_count(cmd, "--limit", optarg,
					     LS_LIMIT_MAX, &a->limit);
			break;
		case OPT_AFTER:
			if (auditq_cursor_decode(optarg, &a->f.after_us,
						 &a->f.after_seq, &err) < 0) {
				rc = cmd_usage_error(cmd, "%s", err->msg);
				sbx_error_free(&err);
			}
			a->f.has_after = true;
			break;
		case OPT_FORMAT:
			a->format = optarg;
			break;
		case OPT_DAYS:
			rc = cmd_parse_count(cmd, "--days", optarg, 20000,
					     &a->days);
			a->has_days = true;
			break;
		default:
			rc = cmd_common_option(ctx, cmd, c, optarg);
		}
		if (rc)
			return rc;
	}
	if (optind < argc) {
		struct strbuf sb = STRBUF_INIT;

		rc = cmd_usage_error(cmd, "unexpected operand '%s'",
				     shown(&sb, argv[optind]));
		strbuf_release(&sb);
		return rc;
	}
	/* --agent and --run land in ctx wherever they stand (before the
	 * command, before the verb, after it): read them there, so none is
	 * ignored and an export never comes out unfiltered by mistake. */
	if ((ctx->audit_agent || ctx->audit_run) && !(allowed & O_FILTERS))
		return cmd_usage_error(cmd, "'%s' does not take --%s",
				       cmd->name,
				       ctx->audit_agent ? "agent" : "run");
	a->f.agent = ctx->audit_agent;
	a->f.run = ctx->audit_run;
	if ((allowed & O_CHAIN) && a->f.tenant && a->f.session)
		return cmd_usage_error(cmd, "give --session or --tenant, "
					    "not both");
	if (a->f.since_us && a->f.until_us && a->f.until_us <= a->f.since_us)
		return cmd_usage_error(cmd, "--until must come after --since");
	return 0;
}

/* ---- migrate ---- */

static int audit_migrate(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_migrate_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL;
	struct auditdb *db = NULL;
	json_t *st = NULL, *m;
	int rc = audit_options(ctx, cmd, O_STATUS, argc, argv, &a);
	int applied = 0, version = 0, known = 0;
	size_t i;

	if (rc)
		return rc < 0 ? 0 : rc;
	if (open_db(ctx, &db, &err) < 0)
		goto out;
	if (a.status) {
		if (auditdb_migrate_status(db, &st, &err) < 0)
			goto out;
		if (ctx->json) {
			cmd_print_json(st);
			st = NULL;
			goto out;
		}
		json_array_foreach(st, i, m)
		{
			const char *at = json_string_value(
			    json_object_get(m, "applied_at"));

			printf("%lld\t%s\t%s%s\n",
			       (long long)json_integer_value(
				   json_object_get(m, "version")),
			       json_string_value(json_object_get(m, "name")),
			       at ? "applied " : "pending", at ? at : "");
		}
		goto out;
	}
	if (auditdb_migrate(db, &applied, &err) < 0 ||
	    auditdb_schema_version(db, &version, &known, &err) < 0)
		goto out;
	if (ctx->json)
		cmd_print_json(xjson_pack("{s:i, s:i}", "applied", applied,
					  "schema_version", version));
	else if (applied)
		printf("applied %d %s (schema version %d)\n", applied,
		       applied == 1 ? "migration" : "migrations", version);
	else
		printf("schema is up to date (version %d)\n", version);
out:
	rc = err ? cmd_report(&err) : 0;
	json_decref(st);
	auditdb_close(db);
	return rc;
}

/* ---- status ---- */

static int audit_status(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_status_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL, *dberr = NULL;
	struct auditdb *db = NULL;
	struct spool sp;
	struct spool_status ss = {0};
	const char *source = NULL, *conninfo;
	int rc = audit_options(ctx, cmd, 0, argc, argv, &a);
	int version = 0, known = auditdb_nmigrations;
	char t1[32], t2[32];
	struct strbuf sb = STRBUF_INIT;
	json_t *doc;

	if (rc)
		return rc < 0 ? 0 : rc;
	conninfo = audit_config_db(&ctx->svc.cfg.audit, &source);
	if (conninfo &&
	    auditdb_connect(conninfo, ctx->svc.cfg.audit.connect_timeout, &db,
			    &dberr) == 0 &&
	    auditdb_schema_version(db, &version, &known, &dberr) < 0) {
		auditdb_close(db);
		db = NULL;
	}
	spool_init(&sp, &ctx->svc.cfg.audit);
	if (spool_status(&sp, &ss, &err) < 0)
		goto out;
	if (ctx->json) {
		/* The spool's directory is the environment's: any bytes. */
		doc = xjson_pack(
		    "{s:{s:b, s:s?, s:b, s:o, s:i, s:i}, "
		    "s:{s:b, s:I, s:o, s:I, s:o, s:I, s:I, s:I, s:I, s:I}, "
		    "s:I}",
		    "database", "configured", conninfo != NULL, "source",
		    source, "reachable", db != NULL, "error",
		    dberr ? xjson_text(dberr->msg) : json_null(),
		    "schema_version", version, "schema_known", known, "spool",
		    "exists", ss.exists, "rows", (json_int_t)ss.rows, "oldest",
		    cmd_time_json(ss.oldest_us / 1000000), "kept_aside",
		    (json_int_t)ss.kept_aside, "last_flush",
		    cmd_time_json(ss.last_flush_us / 1000000),
		    "last_flush_rows", (json_int_t)ss.last_flush_rows, "free",
		    (json_int_t)ss.free, "min_free", (json_int_t)ss.min_free,
		    "reserve", (json_int_t)ss.reserve, "reserved",
		    (json_int_t)ss.reserved, "lost", (json_int_t)ss.lost);
		xjson_set_path(json_object_get(doc, "spool"), "dir", sp.dir);
		cmd_print_json(doc);
		goto out;
	}
	if (!conninfo)
		printf("database: none configured: the audit goes to the "
		       "spool alone\n");
	else if (!db)
		printf("database: unreachable (%s): %s\n", source,
		       dberr->msg);
	else
		printf("database: reachable (%s), schema version %d of %d%s\n",
		       source, version, known,
		       version < known ? ": run `sbxcat audit migrate`" : "");
	printf("spool: %s: %llu %s waiting%s%s\n", shown(&sb, sp.dir), ss.rows,
	       ss.rows == 1 ? "row" : "rows",
	       ss.rows ? ", the oldest from " : "",
	       ss.rows ? when(t1, ss.oldest_us) : "");
	if (ss.kept_aside)
		printf("kept aside: %llu damaged %s (see docs/audit.md)\n",
		       ss.kept_aside, ss.kept_aside == 1 ? "line" : "lines");
	if (ss.exists)
		printf("spool room: %llu bytes free, floor %llu "
		       "(SBXCAT_SPOOL_MIN_FREE)%s; %llu reserved ahead of its "
		       "end, reserve %llu (SBXCAT_SPOOL_RESERVE)\n",
		       ss.free, ss.min_free,
		       ss.free < ss.min_free ? ": BELOW, operations refused"
					     : "",
		       ss.reserved, ss.reserve);
	printf("last flush: %s", when(t2, ss.last_flush_us));
	if (ss.last_flush_us)
		printf(" (%llu %s)", ss.last_flush_rows,
		       ss.last_flush_rows == 1 ? "row" : "rows");
	printf("\nrows ever lost: %llu\n", ss.lost);
out:
	rc = err ? cmd_report(&err) : 0;
	sbx_error_free(&dberr);
	strbuf_release(&sb);
	spool_close(&sp);
	auditdb_close(db);
	return rc;
}

/* ---- flush ---- */

struct flush_sink {
	struct auditdb *db;
	unsigned long long inserted, skipped;
};

static int flush_batch(void *arg, const struct audit_row *rows, size_t n,
		       struct sbx_error **err)
{
	struct flush_sink *fs = arg;
	size_t ins = 0, skip = 0;

	if (auditdb_insert(fs->db, rows, n, &ins, &skip, err) < 0)
		return -1;
	fs->inserted += ins;
	fs->skipped += skip;
	return 0;
}

static int audit_flush(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_flush_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL;
	struct flush_sink fs = {0};
	struct spool sp;
	unsigned long long moved = 0, kept = 0;
	int rc = audit_options(ctx, cmd, 0, argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	spool_init(&sp, &ctx->svc.cfg.audit);
	if (open_db(ctx, &fs.db, &err) < 0 ||
	    spool_replay(&sp, true, flush_batch, &fs, &moved, &kept, &err) < 0)
		goto out;
	if (ctx->json)
		cmd_print_json(xjson_pack("{s:I, s:I, s:I}", "flushed",
					  (json_int_t)fs.inserted, "already",
					  (json_int_t)fs.skipped, "kept_aside",
					  (json_int_t)kept));
	else
		printf("flushed %llu %s (%llu already there), %llu %s kept "
		       "aside\n",
		       fs.inserted, fs.inserted == 1 ? "row" : "rows",
		       fs.skipped, kept, kept == 1 ? "line" : "lines");
out:
	rc = err ? cmd_report(&err) : 0;
	spool_close(&sp);
	auditdb_close(fs.db);
	return rc;
}

/* ---- ls ---- */

/* One page row as a table line's fields. */
static void row_fields(json_t *r, char *v[8], struct strbuf sb[8])
{
	json_t *ex = json_object_get(r, "exit_status");
	json_t *b = json_object_get(r, "bytes");
	const char *ts = json_string_value(json_object_get(r, "created_at"));
	static const char *const keys[] = {NULL, "tenant", "session", "op",
					   "target"};

	for (int i = 0; i < 8; i++)
		strbuf_reset(&sb[i]);
	/* 2026-12-01T10:00:00.123456Z -> 2026-12-01 10:00:00 */
	strbuf_add(&sb[0], ts ? ts : "", ts && strlen(ts) >= 19 ? 19 : 0);
	if (sb[0].len > 10)
		sb[0].buf[10] = ' ';
	for (int i = 1; i < 5; i++) {
		const char *s = json_string_value(json_object_get(r, keys[i]));
		text_add_escaped(&sb[i], s ? s : "", s ? strlen(s) : 0);
	}
	if (json_is_true(json_object_get(r, "ok")))
		strbuf_addstr(&sb[5], "ok");
	else if (json_is_integer(ex))
		strbuf_addf(&sb[5], "exit %lld",
			    (long long)json_integer_value(ex));
	else
		strbuf_addstr(&sb[5], "failed");
	if (json_is_integer(b))
		strbuf_addf(&sb[6], "%lld", (long long)json_integer_value(b));
	else
		strbuf_addstr(&sb[6], "-");
	strbuf_addf(&sb[7], "%lld",
		    (long long)json_integer_value(
			json_object_get(r, "duration_ms")));
	for (int i = 0; i < 8; i++)
		v[i] = (char *)strbuf_str(&sb[i]);
}

/* A cell cut to max characters on a terminal, "..." marking the cut. */
static void cut_cell(struct strbuf *sb, size_t max)
{
	size_t off = 0, n = 0;
	uint32_t cp;

	if (utf8_chars(sb->buf, sb->len) <= max)
		return;
	while (off < sb->len && n < max - 3) {
		size_t k = utf8_decode(sb->buf + off, sb->len - off, &cp);

		off += k ? k : 1;
		n++;
	}
	strbuf_setlen(sb, off);
	strbuf_addstr(sb, "...");
}

static void print_table(json_t *rows)
{
	static const char *const head[8] = {"TIME (UTC)", "TENANT", "SESSION",
					    "OP",     "TARGET",	 "OK/EXIT",
					    "BYTES",  "MS"};
	struct strbuf sb[8];
	size_t w[8], i;
	bool tty = isatty(STDOUT_FILENO);
	json_t *r;
	char *v[8];

	for (int k = 0; k < 8; k++) {
		strbuf_init(&sb[k]);
		w[k] = strlen(head[k]);
	}
	if (tty)
		json_array_foreach(rows, i, r)
		{
			row_fields(r, v, sb);
			cut_cell(&sb[4], TABLE_TARGET_MAX);
			v[4] = (char *)strbuf_str(&sb[4]);
			for (int k = 0; k < 8; k++) {
				size_t n = utf8_chars(v[k], strlen(v[k]));
				if (n > w[k])
					w[k] = n;
			}
		}
	for (int k = 0; k < 8; k++) {
		if (k == 7)
			puts(head[k]);
		else if (tty)
			printf("%-*s  ", (int)w[k], head[k]);
		else
			printf("%s\t", head[k]);
	}
	json_array_foreach(rows, i, r)
	{
		row_fields(r, v, sb);
		if (tty) {
			cut_cell(&sb[4], TABLE_TARGET_MAX);
			v[4] = (char *)strbuf_str(&sb[4]);
		}
		for (int k = 0; k < 8; k++) {
			size_t n = utf8_chars(v[k], strlen(v[k]));

			fputs(v[k], stdout);
			if (k == 7)
				break;
			if (tty)
				printf("%*s", (int)(w[k] - n + 2), "");
			else
				putchar('\t');
		}
		putchar('\n');
	}
	for (int k = 0; k < 8; k++)
		strbuf_release(&sb[k]);
}

static int audit_ls(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_ls_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL;
	struct auditdb *db = NULL;
	json_t *rows = NULL, *r;
	char *cursor = NULL;
	int rc = audit_options(ctx, cmd, O_FILTERS | O_PAGE, argc, argv, &a);
	size_t i;

	if (rc)
		return rc < 0 ? 0 : rc;
	if (open_schema(ctx, &db, &err) < 0 ||
	    auditq_page(db, &a.f, a.limit, &rows, &cursor, &err) < 0)
		goto out;
	if (ctx->json) {
		json_array_foreach(rows, i, r)
		{
			char *line = json_dumps(r, JSON_COMPACT);
			puts(line);
			free(line);
		}
		printf("{\"next\":%s%s%s}\n", cursor ? "\"" : "",
		       cursor ? cursor : "null", cursor ? "\"" : "");
	} else {
		print_table(rows);
		if (cursor)
			fprintf(stderr, "next page: --after %s\n", cursor);
	}
out:
	rc = err ? cmd_report(&err) : 0;
	json_decref(rows);
	free(cursor);
	auditdb_close(db);
	return rc;
}

/* ---- export ---- */

static int audit_export(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_export_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL;
	struct auditdb *db = NULL;
	enum auditq_format fmt;
	unsigned long long count = 0;
	int rc = audit_options(ctx, cmd, O_FILTERS | O_FORMAT, argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (!a.format)
		return cmd_usage_error(cmd, "--format csv or jsonl, which?");
	if (strcmp(a.format, "csv") == 0) {
		fmt = AUDITQ_CSV;
	} else if (strcmp(a.format, "jsonl") == 0) {
		fmt = AUDITQ_JSONL;
	} else {
		struct strbuf sb = STRBUF_INIT;

		rc = cmd_usage_error(cmd, "--format '%s': csv or jsonl",
				     shown(&sb, a.format));
		strbuf_release(&sb);
		return rc;
	}
	fflush(stdout);
	if (open_schema(ctx, &db, &err) == 0)
		auditq_export(db, &a.f, fmt, STDOUT_FILENO, &count, &err);
	if (err)
		cmd_stdout_gone(err->errnum);
	rc = err ? cmd_report(&err) : 0;
	auditdb_close(db);
	return rc;
}

/* ---- stats ---- */

static int audit_stats(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_stats_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL;
	struct auditdb *db = NULL;
	json_t *st = NULL, *ops, *o, *slowest;
	const char *name;
	int rc = audit_options(ctx, cmd, O_FILTERS, argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (!a.f.since_us)
		a.f.since_us = (a.f.until_us ? a.f.until_us : audit_now_us()) -
			       86400LL * 1000000;
	if (open_schema(ctx, &db, &err) < 0 ||
	    auditq_stats(db, &a.f, &st, &err) < 0)
		goto out;
	if (ctx->json) {
		cmd_print_json(st);
		st = NULL;
		goto out;
	}
	printf("%lld operations, %lld failed, since %s\n",
	       (long long)json_integer_value(json_object_get(st, "total")),
	       (long long)json_integer_value(json_object_get(st, "failed")),
	       json_string_value(json_object_get(st, "since")) ?: "?");
	ops = json_object_get(st, "ops");
	printf("%-11s %9s %9s %9s %9s %9s\n", "OP", "COUNT", "FAILED",
	       "P50_MS", "P95_MS", "MAX_MS");
	json_object_foreach(ops, name, o)
	{
		printf("%-11s %9lld %9lld %9.0f %9.0f %9lld\n", name,
		       (long long)json_integer_value(json_object_get(o, "count")),
		       (long long)json_integer_value(
			   json_object_get(o, "failed")),
		       json_number_value(json_object_get(o, "p50_ms")),
		       json_number_value(json_object_get(o, "p95_ms")),
		       (long long)json_integer_value(
			   json_object_get(o, "max_ms")));
	}
	slowest = json_object_get(st, "slowest");
	if (json_array_size(slowest)) {
		printf("\nslowest:\n");
		print_table(slowest);
	}
out:
	rc = err ? cmd_report(&err) : 0;
	json_decref(st);
	auditdb_close(db);
	return rc;
}

/* ---- sweep ---- */

static int audit_sweep(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_sweep_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL;
	struct auditdb *db = NULL;
	unsigned long long deleted = 0, held = 0, days;
	int rc = audit_options(ctx, cmd, O_DAYS, argc, argv, &a);
	long long cutoff;
	char t[32];

	if (rc)
		return rc < 0 ? 0 : rc;
	days = RETENTION_DAYS_DEFAULT;
	if (a.has_days) {
		days = a.days;
	} else if (ctx->svc.cfg.retention_err) {
		return cmd_usage_error(cmd, "%s",
				       ctx->svc.cfg.retention_err->msg);
	} else if (ctx->svc.cfg.retention_days) {
		days = (unsigned long long)ctx->svc.cfg.retention_days;
	}
	cutoff = audit_now_us() - (long long)days * 86400 * 1000000;
	if (open_schema(ctx, &db, &err) < 0 ||
	    auditdb_sweep(db, cutoff, SWEEP_BATCH, &deleted, &held, &err) < 0)
		goto out;
	if (ctx->json) {
		cmd_print_json(xjson_pack("{s:I, s:I, s:o, s:I}", "deleted",
					  (json_int_t)deleted, "held",
					  (json_int_t)held, "before",
					  cmd_time_json(cutoff / 1000000),
					  "days", (json_int_t)days));
	} else {
		printf("deleted %llu %s older than %s (%llu %s)", deleted,
		       deleted == 1 ? "row" : "rows", when(t, cutoff), days,
		       days == 1 ? "day" : "days");
		if (held)
			printf("; %llu old %s held back behind newer ones in "
			       "their chain",
			       held, held == 1 ? "row" : "rows");
		putchar('\n');
	}
out:
	rc = err ? cmd_report(&err) : 0;
	auditdb_close(db);
	return rc;
}

/* ---- verify, head ---- */

static int audit_verify(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_verify_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL;
	struct auditdb *db = NULL;
	json_t *rep = NULL, *b;
	int rc = audit_options(ctx, cmd, O_CHAIN, argc, argv, &a), res = 0;
	size_t i;

	if (rc)
		return rc < 0 ? 0 : rc;
	if (open_db(ctx, &db, &err) < 0 ||
	    (res = auditdb_verify(db, a.f.session, a.f.tenant, &rep, &err)) <
		0)
		goto out;
	if (ctx->json) {
		cmd_print_json(rep);
		rep = NULL;
		goto out;
	}
	json_array_foreach(json_object_get(rep, "bad"), i, b)
	{
		struct strbuf sb = STRBUF_INIT;

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
		strbuf_release(&sb);
	}
	printf("%s %lld %s, %lld %s\n", res ? "checked" : "verified",
	       (long long)json_integer_value(json_object_get(rep, "chains")),
	       json_integer_value(json_object_get(rep, "chains")) == 1
		   ? "chain"
		   : "chains",
	       (long long)json_integer_value(json_object_get(rep, "rows")),
	       json_integer_value(json_object_get(rep, "rows")) == 1 ? "row"
								     : "rows");
out:
	rc = err ? cmd_report(&err) : res ? SBX_EXIT_FAIL : 0;
	json_decref(rep);
	auditdb_close(db);
	return rc;
}

static int audit_head(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_audit_head_entry;
	struct audit_args a = {0};
	struct sbx_error *err = NULL;
	struct auditdb *db = NULL;
	json_t *heads = NULL, *h;
	int rc = audit_options(ctx, cmd, O_CHAIN, argc, argv, &a);
	size_t i;

	if (rc)
		return rc < 0 ? 0 : rc;
	if (open_schema(ctx, &db, &err) < 0 ||
	    auditdb_heads(db, a.f.session, a.f.tenant, &heads, &err) < 0)
		goto out;
	if (ctx->json) {
		cmd_print_json(heads);
		heads = NULL;
		goto out;
	}
	json_array_foreach(heads, i, h)
	{
		struct strbuf s1 = STRBUF_INIT, s2 = STRBUF_INIT;

		printf("%s\t%s\t%lld\t%lld\t%s\t%lld\t%s\n",
		       shown(&s1, json_string_value(
				      json_object_get(h, "session"))
				      ?: ""),
		       shown(&s2, json_string_value(
				      json_object_get(h, "tenant"))
				      ?: ""),
		       (long long)json_integer_value(json_object_get(h, "rows")),
		       (long long)json_integer_value(
			   json_object_get(h, "head_seq")),
		       json_string_value(json_object_get(h, "head")) ?: "",
		       (long long)json_integer_value(
			   json_object_get(h, "swept_rows")),
		       json_string_value(json_object_get(h, "swept_hash"))
			   ?: "");
		strbuf_release(&s1);
		strbuf_release(&s2);
	}
out:
	rc = err ? cmd_report(&err) : 0;
	json_decref(heads);
	auditdb_close(db);
	return rc;
}

/* ---- the table ---- */

#define FILTERS                                                                \
	"[--tenant T] [--session KEY] [--agent ID] [--run ID] [--op OP]... "   \
	"[--failed] [--search TEXT] [--since TIME] [--until TIME]"

const struct cmd_entry cmd_audit_migrate_entry = {
    .name = "migrate",
    .usage = "[--status] [--json]",
    .summary = "create or upgrade the audit's schema; --status lists "
	       "migrations",
    .exec = audit_migrate,
    .parent = &cmd_audit_entry,
};
const struct cmd_entry cmd_audit_status_entry = {
    .name = "status",
    .usage = "[--json]",
    .summary = "database reachable, schema version, rows spooled, last "
	       "flush, rows lost",
    .exec = audit_status,
    .parent = &cmd_audit_entry,
};
const struct cmd_entry cmd_audit_flush_entry = {
    .name = "flush",
    .usage = "[--json]",
    .summary = "replay the spool into the database",
    .exec = audit_flush,
    .parent = &cmd_audit_entry,
};
const struct cmd_entry cmd_audit_ls_entry = {
    .name = "ls",
    .usage = FILTERS " [--limit N] [--after CURSOR] [--json]",
    .summary = "operations, newest first, a page at a time",
    .exec = audit_ls,
    .parent = &cmd_audit_entry,
};
const struct cmd_entry cmd_audit_export_entry = {
    .name = "export",
    .usage = FILTERS " --format csv|jsonl",
    .summary = "every matching operation, streamed",
    .exec = audit_export,
    .parent = &cmd_audit_entry,
};
const struct cmd_entry cmd_audit_stats_entry = {
    .name = "stats",
    .usage = FILTERS " [--json]",
    .summary = "counts per operation, failures, the slowest (default: "
	       "the last 24 hours)",
    .exec = audit_stats,
    .parent = &cmd_audit_entry,
};
const struct cmd_entry cmd_audit_sweep_entry = {
    .name = "sweep",
    .usage = "[--days N] [--json]",
    .summary = "delete rows older than the retention, in small batches",
    .exec = audit_sweep,
    .parent = &cmd_audit_entry,
};
const struct cmd_entry cmd_audit_verify_entry = {
    .name = "verify",
    .usage = "[--session KEY | --tenant T] [--json]",
    .summary = "recompute the hash chains; name the first bad row",
    .exec = audit_verify,
    .parent = &cmd_audit_entry,
};
const struct cmd_entry cmd_audit_head_entry = {
    .name = "head",
    .usage = "[--session KEY | --tenant T] [--json]",
    .summary = "each chain's latest hash, to keep elsewhere",
    .exec = audit_head,
    .parent = &cmd_audit_entry,
};

static const struct cmd_entry *const audit_verbs[] = {
    &cmd_audit_migrate_entry, &cmd_audit_status_entry,
    &cmd_audit_flush_entry,   &cmd_audit_ls_entry,
    &cmd_audit_export_entry,  &cmd_audit_stats_entry,
    &cmd_audit_sweep_entry,   &cmd_audit_verify_entry,
    &cmd_audit_head_entry,
};

const struct cmd_entry cmd_audit_entry = {
    .name = "audit",
    .usage = "migrate|status|flush|ls|export|stats|sweep|verify|head ...",
    .summary = "the operation audit in PostgreSQL",
    .verbs = audit_verbs,
    .nverbs = sizeof(audit_verbs) / sizeof(audit_verbs[0]),
    .epilog = "The database: --db URI, SBXCAT_DATABASE_URL, or libpq's "
	      "PG* environment and service file.  The spool: "
	      "SBXCAT_SPOOL_DIR (default /var/spool/sbxcat).  TIME: ISO "
	      "8601 (2026-12-01, 2026-12-01T10:00:00Z) or relative (2h, "
	      "7d).  See docs/audit.md.",
};

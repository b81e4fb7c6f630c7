/*
 * cmd-fs.c - sbxcat fs KEY VERB ...: the workspace operations, done on the
 * host side of the bind mount, never through the engine (brief section 7,
 * docs/workspace.md).
 *
 * The operations are svc/svc-fs.c's (the session, the workspace, the
 * audit row, the activity stamp, the JSON documents, streamed where they
 * can be big); this file parses the command line by one option table,
 * fills a request, calls one svc function and renders its result as text,
 * or prints (or lets it stream) its document.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/suggest.h"
#include "basic/text.h"
#include "cli/cmd.h"
#include "svc/svc-fs.h"

#define FS_DEPTH_MAX 64
#define FS_ENTRIES_MAX 10000000ULL
#define FS_COUNT_MAX 100000000ULL
#define FS_TIMEOUT_MAX 3600ULL
#define FS_LINE_MAX (1ULL << 62)

/*
 * The verbs, in the order help and messages list them: an identifier, the
 * name, how many operands (at least, at most), the usage after the name
 * (its first word is what is missing when an operand is) and a summary.
 * The verb table, the option bits, the help and the verb lists of
 * messages are all made from this one list.
 */
#define FS_VERBS(X)                                                            \
	X(write, "write", 1, 1, "PATH  (content from stdin)",                  \
	  "made atomically: a temporary renamed over PATH")                    \
	X(read, "read", 1, 1, "PATH [--offset LINE] [--limit N]",              \
	  "lines numbered like cat -n")                                        \
	X(read_bytes, "read-bytes", 1, 1, "PATH", "raw bytes to stdout")       \
	X(edit, "edit", 1, 1, "PATH --old TEXT --new TEXT [--all]",            \
	  "an exact replacement: one occurrence, or --all")                    \
	X(ls, "ls", 0, 1,                                                      \
	  "[PATH] [-R] [--all] [--max-depth N] [--max-entries N]",             \
	  "a directory's entries; -R breadth-first")                           \
	X(glob, "glob", 1, 1,                                                  \
	  "PATTERN [--hidden] [--all] [--max-depth N] [--max-entries N]",      \
	  "the paths that match; ** spans directories")                        \
	X(grep, "grep", 1, 2,                                                  \
	  "PATTERN [PATH] [--include GLOB] [-i] [-F] [--hidden] [--all] "      \
	  "[--max-count N] [--max-depth N] [--max-entries N] [--timeout S]",   \
	  "the lines that match (PCRE2, or -F a literal)")                     \
	X(stat, "stat", 1, 1, "PATH", "type, size, mode, owner, mtime, links") \
	X(rm, "rm", 1, 1, "PATH [-r]",                                         \
	  "a file, a symlink, an empty directory; "                            \
	  "-r a tree")

#define VERB_ENUM(id, name, min, max, usage, summary) V_##id,
enum { FS_VERBS(VERB_ENUM) FS_NVERBS };
#define VB(id) (1u << V_##id)
#define LISTINGS (VB(ls) | VB(glob) | VB(grep))

/* What the options fill; a verb is refused an option its bits lack. */
struct fs_opts {
	const char *tenant;
	unsigned long long offset, limit;
	bool has_offset, has_limit;
	const char *old, *new;
	bool all; /* edit: every occurrence; listings: skills/ and the spill */
	bool recursive, hidden;
	unsigned long long max_depth, max_entries;
	bool has_depth, has_entries;
	const char *include;
	bool icase, fixed;
	unsigned long long max_count, timeout_s;
	bool has_count, has_timeout;
};

static const struct cmd_option fs_options[] = {
    CMD_STRING("tenant", 0, struct fs_opts, tenant, 0),
    CMD_COUNT("offset", struct fs_opts, offset, has_offset, FS_LINE_MAX,
	      VB(read)),
    CMD_COUNT("limit", struct fs_opts, limit, has_limit, FS_LINE_MAX, VB(read)),
    CMD_STRING("old", 0, struct fs_opts, old, VB(edit)),
    CMD_STRING("new", 0, struct fs_opts, new, VB(edit)),
    CMD_FLAG("all", 0, struct fs_opts, all, VB(edit) | LISTINGS),
    /* -R and -r alike (ls -R, rm -r), one long name */
    CMD_FLAG("recursive", 'R', struct fs_opts, recursive, VB(ls) | VB(rm)),
    CMD_FLAG("recursive", 'r', struct fs_opts, recursive, VB(ls) | VB(rm)),
    CMD_FLAG("hidden", 0, struct fs_opts, hidden, VB(glob) | VB(grep)),
    CMD_COUNT("max-depth", struct fs_opts, max_depth, has_depth, FS_DEPTH_MAX,
	      LISTINGS),
    CMD_COUNT("max-entries", struct fs_opts, max_entries, has_entries,
	      FS_ENTRIES_MAX, LISTINGS),
    CMD_STRING("include", 0, struct fs_opts, include, VB(grep)),
    CMD_FLAG("ignore-case", 'i', struct fs_opts, icase, VB(grep)),
    CMD_FLAG("fixed-strings", 'F', struct fs_opts, fixed, VB(grep)),
    CMD_COUNT("max-count", struct fs_opts, max_count, has_count, FS_COUNT_MAX,
	      VB(grep)),
    CMD_COUNT("timeout", struct fs_opts, timeout_s, has_timeout, FS_TIMEOUT_MAX,
	      VB(grep)),
    CMD_OPTIONS_END,
};

/* One call of a verb: what the command line gave it. */
struct fs_call {
	struct sbx_ctx *ctx;
	const char *key;
	const struct fs_opts *o;
	const char *const *args; /* the operands */
	size_t nargs;
};

struct fs_verb {
	const char *name;
	unsigned min, max; /* operands */
	const char *usage;
	int (*run)(const struct fs_call *c, struct sbx_error **err);
};

/* ---- output helpers ---- */

/* A path for a one-line message or a listing: escaped. */
static const char *shown(struct strbuf *sb, const char *s)
{
	strbuf_reset(sb);
	text_add_escaped(sb, s, strlen(s));
	return strbuf_str(sb);
}

/* 2000 -> "2,000" */
static const char *grouped(char out[32], unsigned long long v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", v), o = 0;

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = 0;
	return out;
}

/* Bytes of a file's content for a display: raw to a pipe or a file,
 * printable only on a terminal. */
static void put_text(const char *s, size_t len)
{
	static int tty = -1;

	if (tty < 0)
		tty = isatty(STDOUT_FILENO);
	if (tty) {
		struct strbuf sb = STRBUF_INIT;

		text_add_printable(&sb, s, len);
		fwrite(sb.buf, 1, sb.len, stdout);
		strbuf_release(&sb);
	} else {
		fwrite(s, 1, len, stdout);
	}
}

/* The sink of what svc streams (a document, read-bytes' bytes): stdout,
 * whose errors cmd_close_stdout reports at the end. */
static int to_stdout(void *arg, const void *buf, size_t len,
		     struct sbx_error **err)
{
	(void)arg, (void)err;
	fwrite(buf, 1, len, stdout);
	return 0;
}
static const struct svc_sink stdout_sink = {.fd = -1, .write = to_stdout};

/* The JSON sink of a call: stdout with --json, else none (text). */
static const struct svc_sink *json_sink(const struct fs_call *c)
{
	return c->ctx->json ? &stdout_sink : NULL;
}

/* Print a result's document (borrowed). */
static void print_doc(json_t *doc)
{
	cmd_print_json(json_incref(doc));
}

static const char *truncation_line(char out[96], const char *why,
				   size_t entries, unsigned depth)
{
	char n[32];

	if (why && strcmp(why, "depth") == 0)
		snprintf(out, 96,
			 "listing stopped at depth %u; deeper entries are "
			 "not shown",
			 depth);
	else
		snprintf(out, 96,
			 "listing stopped at %s entries; not every file is "
			 "shown",
			 grouped(n, entries));
	return out;
}

static int print_entry(void *arg, const svc_fs_entry *e, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;

	(void)arg, (void)err;
	text_add_escaped(&sb, e->path, strlen(e->path));
	if (svc_fs_type_of(e) == SVC_FS_DIR)
		strbuf_addch(&sb, '/');
	else if (svc_fs_type_of(e) == SVC_FS_SYMLINK)
		strbuf_addch(&sb, '@');
	if (e->upload)
		strbuf_addstr(&sb, "\t(uploaded)");
	strbuf_addch(&sb, '\n');
	fwrite(sb.buf, 1, sb.len, stdout);
	strbuf_release(&sb);
	return 0;
}

static void print_problems(const svc_fs_problem *p, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		const char *path = shown(&sb, p[i].path);

		fprintf(stderr, "sbxcat: skipped '%s': %s\n",
			*path ? path : ".", p[i].why);
	}
	strbuf_release(&sb);
}

/* How a listing (ls, glob) ended, after its entries (text). */
static void listing_end(const struct svc_fs_listing *l)
{
	char line[96];

	if (l->out_of_time)
		printf("listing stopped after its %lld s budget; not every "
		       "file is shown\n",
		       l->budget_ms / 1000);
	else if (l->truncated)
		printf("%s\n", truncation_line(line, l->why, l->max_entries,
					       l->max_depth));
	print_problems(l->problems, l->nproblems);
}

static void bounds_from(const struct fs_opts *o, struct svc_fs_bounds *b)
{
	b->max_depth = o->max_depth;
	b->max_entries = o->max_entries;
	b->all = o->all;
}

/* ---- the verbs ---- */

/*
 * Each verb: its request from the command line, the one svc call, the
 * result rendered (text, or the document when --json and svc did not
 * stream it), the result released whatever happened.
 */
static int run_write(const struct fs_call *c, struct sbx_error **err)
{
	struct svc_fs_write_req req = {c->key, c->args[0], STDIN_FILENO};
	struct svc_fs_write_res res;
	struct strbuf sb = STRBUF_INIT;
	int rc = svc_fs_write(&c->ctx->svc, &c->ctx->call, &req, &res, err);

	if (rc == 0 && c->ctx->json)
		print_doc(res.doc);
	else if (rc == 0)
		printf("wrote %llu bytes to '%s'\n", res.bytes,
		       shown(&sb, req.path));
	strbuf_release(&sb);
	svc_fs_write_res_release(&res);
	return rc;
}

/* read's lines as cat -n numbers them, then what follows them. */
static void print_lines(const struct svc_fs_read_res *r)
{
	size_t pos = 0;

	for (size_t i = 0; i < r->n; i++) {
		const char *line = r->text + pos;
		const char *nl = memchr(line, '\n', r->len - pos);
		size_t len = nl ? (size_t)(nl - line) : r->len - pos;

		printf("%6llu\t", r->first + i);
		put_text(line, len);
		putchar('\n');
		pos += len + (nl != NULL);
	}
	if (r->cut)
		printf("... output stopped at the %llu-byte read limit; read "
		       "on with --offset %llu\n",
		       r->max_read, r->next);
	else if (r->lines_left > 0)
		printf("... %lld more line%s; read on with --offset %llu\n",
		       r->lines_left, r->lines_left == 1 ? "" : "s", r->next);
	else if (r->lines_left < 0 && r->more)
		printf("... more lines follow; read on with --offset %llu\n",
		       r->next);
}

static int run_read(const struct fs_call *c, struct sbx_error **err)
{
	struct svc_fs_read_req req = {
	    .key = c->key,
	    .path = c->args[0],
	    .offset = c->o->offset,
	    .limit = c->o->limit,
	    .json = json_sink(c),
	};
	struct svc_fs_read_res res;
	int rc = svc_fs_read(&c->ctx->svc, &c->ctx->call, &req, &res, err);

	if (rc == 0 && !req.json)
		print_lines(&res);
	svc_fs_read_res_release(&res);
	return rc;
}

static int run_read_bytes(const struct fs_call *c, struct sbx_error **err)
{
	struct svc_fs_read_bytes_req req = {c->key, c->args[0], c->ctx->json,
					    &stdout_sink};
	struct svc_fs_read_bytes_res res;
	int rc =
	    svc_fs_read_bytes(&c->ctx->svc, &c->ctx->call, &req, &res, err);

	if (rc == 0 && res.doc)
		print_doc(res.doc);
	svc_fs_read_bytes_res_release(&res);
	return rc;
}

static int run_edit(const struct fs_call *c, struct sbx_error **err)
{
	struct svc_fs_edit_req req = {c->key, c->args[0], c->o->old, c->o->new,
				      c->o->all};
	struct svc_fs_edit_res res;
	struct strbuf sb = STRBUF_INIT;
	int rc = svc_fs_edit(&c->ctx->svc, &c->ctx->call, &req, &res, err);

	if (rc == 0 && c->ctx->json)
		print_doc(res.doc);
	else if (rc == 0)
		printf("replaced %zu occurrence%s in '%s'\n", res.replaced,
		       res.replaced == 1 ? "" : "s", shown(&sb, req.path));
	strbuf_release(&sb);
	svc_fs_edit_res_release(&res);
	return rc;
}

static int run_ls(const struct fs_call *c, struct sbx_error **err)
{
	struct svc_fs_ls_req req = {
	    .key = c->key,
	    .path = c->nargs ? c->args[0] : NULL,
	    .recursive = c->o->recursive,
	    .json = json_sink(c),
	    .entry = print_entry,
	};
	struct svc_fs_ls_res res;
	int rc;

	bounds_from(c->o, &req.bounds);
	rc = svc_fs_ls(&c->ctx->svc, &c->ctx->call, &req, &res, err);
	if (rc == 0 && !req.json)
		listing_end(&res.l);
	svc_fs_ls_res_release(&res);
	return rc;
}

static int run_glob(const struct fs_call *c, struct sbx_error **err)
{
	struct svc_fs_glob_req req = {
	    .key = c->key,
	    .pattern = c->args[0],
	    .hidden = c->o->hidden,
	    .json = json_sink(c),
	    .entry = print_entry,
	};
	struct svc_fs_glob_res res;
	int rc;

	bounds_from(c->o, &req.bounds);
	rc = svc_fs_glob(&c->ctx->svc, &c->ctx->call, &req, &res, err);
	if (rc == 0 && !req.json)
		listing_end(&res.l);
	svc_fs_glob_res_release(&res);
	return rc;
}

/* path:line:text, as grep -n. */
static int print_match(void *arg, const svc_fs_match *m, struct sbx_error **err)
{
	struct strbuf *line = arg;

	(void)err;
	strbuf_reset(line);
	text_add_escaped(line, m->path, strlen(m->path));
	strbuf_addf(line, ":%llu:", m->line);
	fwrite(line->buf, 1, line->len, stdout);
	put_text(m->text, m->len);
	fputs(m->cut ? " [line cut]\n" : "\n", stdout);
	return 0;
}

/* What a search skipped and where it stopped, on stderr. */
static void grep_report(const struct svc_fs_grep_res *r)
{
	const svc_fs_grep_stats *st = &r->st;
	struct strbuf sb = STRBUF_INIT;
	char n[32], line[96];

	if (st->binary)
		strbuf_addf(&sb, "%llu binary file%s", st->binary,
			    st->binary == 1 ? "" : "s");
	if (st->too_big)
		strbuf_addf(&sb, "%s%llu file%s over the %llu-byte read limit",
			    sb.len ? ", " : "", st->too_big,
			    st->too_big == 1 ? "" : "s", r->max_read);
	if (st->unreadable)
		strbuf_addf(&sb, "%s%llu unreadable file%s", sb.len ? ", " : "",
			    st->unreadable, st->unreadable == 1 ? "" : "s");
	if (sb.len)
		fprintf(stderr, "sbxcat: skipped %s\n", sb.buf);
	if (st->limited)
		fprintf(stderr,
			"sbxcat: the pattern hit its match limit in %llu "
			"file%s; %s not searched to the end\n",
			st->limited, st->limited == 1 ? "" : "s",
			st->limited == 1 ? "it was" : "they were");
	if (st->truncated_matches)
		fprintf(stderr,
			"sbxcat: stopped at %s matches; not every match is "
			"shown\n",
			grouped(n, r->max_count));
	if (st->out_of_time)
		fprintf(stderr,
			"sbxcat: the search stopped after its %lld s budget; "
			"not every file was searched\n",
			r->budget_ms / 1000);
	if (st->truncated)
		fprintf(stderr, "sbxcat: %s\n",
			truncation_line(line, st->why, r->max_entries,
					r->max_depth));
	print_problems(st->problems, st->nproblems);
	strbuf_release(&sb);
}

static int run_grep(const struct fs_call *c, struct sbx_error **err)
{
	struct strbuf line = STRBUF_INIT;
	struct svc_fs_grep_req req = {
	    .key = c->key,
	    .pattern = c->args[0],
	    .path = c->nargs > 1 ? c->args[1] : NULL,
	    .include = c->o->include,
	    .icase = c->o->icase,
	    .fixed = c->o->fixed,
	    .hidden = c->o->hidden,
	    .max_count = c->o->max_count,
	    .timeout_s = c->o->timeout_s,
	    .json = json_sink(c),
	    .match = print_match,
	    .arg = &line,
	};
	struct svc_fs_grep_res res;
	int rc;

	bounds_from(c->o, &req.bounds);
	rc = svc_fs_grep(&c->ctx->svc, &c->ctx->call, &req, &res, err);
	strbuf_release(&line);
	if (rc == 0 && !req.json)
		grep_report(&res);
	svc_fs_grep_res_release(&res);
	return rc;
}

static int run_stat(const struct fs_call *c, struct sbx_error **err)
{
	struct svc_fs_stat_req req = {c->key, c->args[0]};
	struct svc_fs_stat_res res;
	struct strbuf sb = STRBUF_INIT;
	char t[32];
	int rc = svc_fs_stat(&c->ctx->svc, &c->ctx->call, &req, &res, err);

	if (rc == 0 && c->ctx->json) {
		print_doc(res.doc);
	} else if (rc == 0) {
		printf("path: %s\n", shown(&sb, res.path));
		printf("type: %s\nsize: %llu\nmode: %04o\nuid: %lu\ngid: %lu\n",
		       res.type, res.size, res.mode, res.uid, res.gid);
		cmd_rfc3339(t, res.mtime);
		printf("mtime: %s\nlinks: %llu\n", t, res.links);
		if (res.target)
			printf("target: %s\n", shown(&sb, res.target));
	}
	strbuf_release(&sb);
	svc_fs_stat_res_release(&res);
	return rc;
}

static int run_rm(const struct fs_call *c, struct sbx_error **err)
{
	struct svc_fs_rm_req req = {c->key, c->args[0], c->o->recursive};
	struct svc_fs_rm_res res;
	struct strbuf sb = STRBUF_INIT;
	int rc = svc_fs_rm(&c->ctx->svc, &c->ctx->call, &req, &res, err);

	if (rc == 0 && c->ctx->json)
		print_doc(res.doc);
	else if (rc == 0 && req.recursive)
		printf("removed '%s' (%llu entr%s)\n", shown(&sb, req.path),
		       res.removed, res.removed == 1 ? "y" : "ies");
	else if (rc == 0)
		printf("removed '%s'\n", shown(&sb, req.path));
	strbuf_release(&sb);
	svc_fs_rm_res_release(&res);
	return rc;
}

#define VERB_ROW(id, nm, mn, mx, us, sm) [V_##id] = {nm, mn, mx, us, run_##id},
static const struct fs_verb verbs[FS_NVERBS] = {FS_VERBS(VERB_ROW)};

/*
 * What the command line may say about a refusal that a module words
 * without flags: the flag that does what the message says.
 */
static const struct {
	unsigned verbs;
	enum sbx_reason why; /* err->why */
	const char *hint;
} hints[] = {
    {VB(edit), SBX_R_OLD_NOT_UNIQUE, "--all replaces every occurrence"},
    {VB(read) | VB(read_bytes), SBX_R_OVER_READ_LIMIT,
     "sbxcat fs KEY read PATH --offset LINE --limit N reads a slice"},
    {VB(rm), SBX_R_DIR_NOT_EMPTY, "-r removes it and all it holds"},
};

static void add_hint(unsigned verb, struct sbx_error *err)
{
	for (size_t i = 0; i < sizeof(hints) / sizeof(*hints); i++)
		if ((hints[i].verbs & verb) && !err->hint &&
		    err->why == hints[i].why)
			sbx_error_hint(err, "%s", hints[i].hint);
}

/* ---- parsing ---- */

/* "write, read, ..., rm": the verbs, for a message. */
static void add_verb_list(struct strbuf *sb)
{
	for (size_t i = 0; i < FS_NVERBS; i++)
		strbuf_addf(sb, "%s%s", i ? ", " : "", verbs[i].name);
}

/* The verb named word, or NULL after a usage error (*rc), with the
 * did-you-mean a command's verb gets (cmd.c). */
static const struct fs_verb *find_verb(const char *word, int *rc)
{
	const char *names[FS_NVERBS];
	struct strbuf list = STRBUF_INIT, sb = STRBUF_INIT;
	const char *near;

	for (size_t i = 0; i < FS_NVERBS; i++) {
		if (strcmp(verbs[i].name, word) == 0)
			return &verbs[i];
		names[i] = verbs[i].name;
	}
	add_verb_list(&list);
	near = suggest_word(word, names, FS_NVERBS);
	if (near)
		*rc =
		    cmd_usage_error(&cmd_fs_entry,
				    "'%s' is not an fs verb (%s); did you "
				    "mean '%s'?",
				    shown(&sb, word), strbuf_str(&list), near);
	else
		*rc = cmd_usage_error(&cmd_fs_entry,
				      "'%s' is not an fs verb (%s)",
				      shown(&sb, word), strbuf_str(&list));
	strbuf_release(&sb);
	strbuf_release(&list);
	return NULL;
}

/* An option given before the verb that takes its value as the next word
 * ("--tenant T"; "--tenant=T" is one word): the tables say which. */
static bool takes_value(const char *a)
{
	static const struct option common[] = {COMMON_LONGOPTS, {0}};

	if (a[0] != '-')
		return false;
	if (a[1] != '-')
		return strcmp(a, "-C") == 0; /* the one short option with one */
	for (const struct cmd_option *o = fs_options; o->name; o++)
		if (strcmp(a + 2, o->name) == 0)
			return o->kind != CMD_OPT_FLAG;
	for (const struct option *o = common; o->name; o++)
		if (strcmp(a + 2, o->name) == 0)
			return o->has_arg == required_argument;
	return false;
}

/*
 * The operands of v checked, and what the options must say for it.
 * Returns 0, or the exit status of a usage error.
 */
static int check_operands(const struct fs_verb *v, const struct fs_opts *o,
			  int nargs, char **args)
{
	const struct cmd_entry *cmd = &cmd_fs_entry;

	if ((unsigned)nargs > v->max)
		return cmd_usage_error(cmd, "%s: unexpected operand '%s'",
				       v->name, args[v->max]);
	if ((unsigned)nargs < v->min)
		return cmd_usage_error(cmd,
				       "%s: %.*s is missing (sbxcat fs "
				       "KEY %s %s)",
				       v->name, (int)strcspn(v->usage, " "),
				       v->usage, v->name, v->usage);
	if (v == &verbs[V_edit] && (!o->old || !*o->old))
		return cmd_usage_error(cmd, "edit needs --old TEXT, not empty");
	if (v == &verbs[V_edit] && !o->new)
		return cmd_usage_error(cmd, "edit needs --new TEXT (it may be "
					    "empty)");
	if (v == &verbs[V_grep] && !*args[0])
		return cmd_usage_error(cmd, "grep needs a pattern, not empty");
	return 0;
}

/*
 * The argv a verb is parsed from: "sbxcat", the options, the words after
 * VERB.  Options may come before KEY and between KEY and VERB too
 * (sbxcat fs --json KEY ls, sbxcat fs KEY --tenant T read x): they are
 * moved after the verb, where getopt sees them all.  *key and *verb (the
 * index of VERB in argv) are set when found, else left.  NULL when help
 * was asked for (-h or --help anywhere).
 */
static char **verb_argv(int argc, char **argv, const char **key, int *verb,
			int *n)
{
	char **args = xcalloc((size_t)argc + 1, sizeof(*args));

	*n = 0;
	for (int k = 1; k < argc && !*verb; k++) {
		if (strcmp(argv[k], "-h") == 0 ||
		    strcmp(argv[k], "--help") == 0) {
			free(args);
			return NULL;
		}
		if (argv[k][0] == '-' && argv[k][1]) {
			args[(*n)++] = argv[k];
			if (takes_value(argv[k]) && k + 1 < argc)
				args[(*n)++] = argv[++k];
		} else if (!*key) {
			*key = argv[k];
		} else {
			*verb = k;
		}
	}
	memmove(args + 1, args, (size_t)*n * sizeof(*args));
	args[0] = argv[0]; /* "sbxcat", for getopt's messages */
	(*n)++;
	for (int k = *verb ? *verb + 1 : argc; k < argc; k++)
		args[(*n)++] = argv[k];
	return args;
}

/* The verb named by the words before it, or NULL after a usage error. */
static const struct fs_verb *which_verb(const char *key, const char *word,
					int *rc)
{
	struct strbuf list = STRBUF_INIT;

	if (word)
		return find_verb(word, rc);
	if (!key) {
		*rc = cmd_usage_error(&cmd_fs_entry,
				      "which session? KEY is missing");
		return NULL;
	}
	add_verb_list(&list);
	*rc = cmd_usage_error(&cmd_fs_entry,
			      "which operation? VERB is missing (%s)",
			      strbuf_str(&list));
	strbuf_release(&list);
	return NULL;
}

static int fs_main(struct sbx_ctx *ctx, int argc, char **argv)
{
	const struct cmd_entry *cmd = &cmd_fs_entry;
	const struct fs_verb *v;
	struct fs_opts o = {0};
	struct sbx_error *err = NULL;
	const char *key = NULL;
	int nargs, verb = 0, first, rc = 0;
	char **args = verb_argv(argc, argv, &key, &verb, &nargs);

	if (!args) {
		cmd_print_help(stdout, cmd);
		return SBX_EXIT_OK;
	}
	v = which_verb(key, verb && key ? argv[verb] : NULL, &rc);
	if (v)
		rc = cmd_options_parse(ctx, cmd, fs_options, 1u << (v - verbs),
				       v->name, &o, nargs, args, &first);
	if (rc < 0) /* help, asked inside a group of short options (-Rh) */
		rc = SBX_EXIT_OK, v = NULL;
	if (v && !rc)
		rc = check_operands(v, &o, nargs - first, args + first);
	if (v && !rc)
		rc = cmd_setup(ctx, CMD_NEEDS_CALL);
	if (v && !rc) {
		struct fs_call c = {ctx, key, &o,
				    (const char *const *)args + first,
				    (size_t)(nargs - first)};

		ctx->call.tenant = cmd_identity(o.tenant, "SBXCAT_TENANT");
		if (v->run(&c, &err) < 0) {
			add_hint(1u << (v - verbs), err);
			rc = cmd_report(&err);
		}
	}
	free(args);
	return rc;
}

#define HELP_LINE(id, name, min, max, usage, summary)                          \
	"  " name " " usage "\n      " summary "\n"

const struct cmd_entry cmd_fs_entry = {
    .name = "fs",
    .usage = "KEY VERB [ARGS] [--tenant T] [--json]",
    .summary = "workspace files from the host side: the verbs below",
    .exec = fs_main,
    /* The verbs' lines, one string made from the list. */
    /* clang-format off */
    .epilog = "Verbs:\n" FS_VERBS(HELP_LINE)
	"Every verb takes --tenant T and --json; options may come before KEY "
	"too.\nPaths are relative to the workspace and resolved beneath it; "
	"see docs/workspace.md.",
    /* clang-format on */
};

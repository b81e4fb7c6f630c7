/*
 * cmd.c - the helpers every command shares (cmd.h): option parsing, help
 * and usage, dispatch to a command's verbs, error reports, the catalogue
 * every command loads, and the check of stdout at exit.
 *
 * This is the user-facing side: it prints.  The modules below it never do.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/sig.h"
#include "basic/suggest.h"
#include "basic/util.h"
#include "catalog/catalog.h"
#include "cli/cmd.h"

#ifndef SBXCAT_DATADIR
#define SBXCAT_DATADIR "/usr/local/share/sbxcat"
#endif

static const struct cmd_entry *root;

void cmd_set_root(const struct cmd_entry *r)
{
	root = r;
}

/* "sbxcat session open": the words that run cmd. */
static void add_full_name(struct strbuf *sb, const struct cmd_entry *cmd)
{
	if (cmd->parent) {
		add_full_name(sb, cmd->parent);
		strbuf_addch(sb, ' ');
	} else if (cmd != root) {
		strbuf_addstr(sb, "sbxcat ");
	}
	strbuf_addstr(sb, cmd->name);
}

static void print_usage_line(FILE *f, const struct cmd_entry *cmd)
{
	struct strbuf name = STRBUF_INIT;

	add_full_name(&name, cmd);
	fprintf(f, "usage: %s%s%s\n", strbuf_str(&name), *cmd->usage ? " " : "",
		cmd->usage);
	strbuf_release(&name);
}

void cmd_print_help(FILE *f, const struct cmd_entry *cmd)
{
	print_usage_line(f, cmd);
	if (cmd != root && cmd->summary)
		fprintf(f, "  %s\n", cmd->summary);
	if (cmd->nverbs)
		fprintf(f, "\n%s:\n", cmd == root ? "commands" : "verbs");
	for (size_t i = 0; i < cmd->nverbs; i++) {
		const struct cmd_entry *v = cmd->verbs[i];

		/* A long usage gets its own line: the summaries stay aligned.
		 */
		if (strlen(v->usage) > 22)
			fprintf(f, "  %-11s %s\n  %-11s %-22s %s\n", v->name,
				v->usage, "", "", v->summary);
		else
			fprintf(f, "  %-11s %-22s %s\n", v->name, v->usage,
				v->summary);
	}
	if (cmd->epilog)
		fprintf(f, "\n%s\n", cmd->epilog);
}

/* Usage after a mistake: the whole help when it lists choices. */
static void print_usage(FILE *f, const struct cmd_entry *cmd)
{
	if (!cmd)
		cmd = root;
	if (cmd->nverbs)
		cmd_print_help(f, cmd);
	else
		print_usage_line(f, cmd);
}

int cmd_usage_error(const struct cmd_entry *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("sbxcat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	print_usage(stderr, cmd);
	return SBX_EXIT_USAGE;
}

/* The verb of cmd closest to word, when close enough to be a typo. */
static const char *closest_verb(const struct cmd_entry *cmd, const char *word)
{
	const char **names = xcalloc(cmd->nverbs, sizeof(*names));
	const char *best;

	for (size_t i = 0; i < cmd->nverbs; i++)
		names[i] = cmd->verbs[i]->name;
	best = suggest_word(word, names, cmd->nverbs);
	free(names);
	return best;
}

/* The verb of cmd named word, or NULL after a usage error (*rc set). */
static const struct cmd_entry *find_verb(const struct cmd_entry *cmd,
					 const char *word, int *rc)
{
	struct strbuf what = STRBUF_INIT;
	const char *near;

	for (size_t i = 0; i < cmd->nverbs; i++)
		if (strcmp(word, cmd->verbs[i]->name) == 0)
			return cmd->verbs[i];
	if (cmd == root) {
		strbuf_addstr(&what, "an sbxcat command");
	} else {
		strbuf_addstr(&what, "a verb of '");
		add_full_name(&what, cmd);
		strbuf_addch(&what, '\'');
	}
	near = closest_verb(cmd, word);
	if (near)
		*rc = cmd_usage_error(cmd, "'%s' is not %s; did you mean '%s'?",
				      word, strbuf_str(&what), near);
	else
		*rc = cmd_usage_error(cmd, "'%s' is not %s", word,
				      strbuf_str(&what));
	strbuf_release(&what);
	return NULL;
}

int cmd_options_parse(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
		      const struct cmd_option *opts, unsigned verb,
		      const char *vname, void *out, int argc, char **argv,
		      int *first)
{
	*first = 0;
	return cmd_options_parse_from(ctx, cmd, opts, verb, vname, out, argc,
				      argv, false, first);
}

int cmd_options_parse_from(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
			   const struct cmd_option *opts, unsigned verb,
			   const char *vname, void *out, int argc, char **argv,
			   bool stop, int *first)
{
	static const struct option common[] = {COMMON_LONGOPTS};
	const size_t ncommon = sizeof(common) / sizeof(common[0]);
	struct strbuf shorts = STRBUF_INIT;
	struct option *longopts;
	size_t n = 0;
	int c, li, rc = 0;

	while (opts && opts[n].name)
		n++;
	longopts = xcalloc(n + ncommon + 1, sizeof(*longopts));
	if (stop)
		strbuf_addch(&shorts, '+');
	strbuf_addstr(&shorts, COMMON_SHORTOPTS);
	for (size_t i = 0; i < n; i++) {
		/* A name given twice is one long option with two letters (-R
		 * and -r): its first's, so getopt sees no ambiguity in it. */
		size_t f = 0;

		while (strcmp(opts[f].name, opts[i].name) != 0)
			f++;
		longopts[i].name = opts[i].name;
		longopts[i].has_arg = opts[i].kind == CMD_OPT_FLAG
					  ? no_argument
					  : required_argument;
		longopts[i].val =
		    opts[f].letter ? opts[f].letter : 256 + (int)f;
		if (opts[i].letter) {
			strbuf_addch(&shorts, (char)opts[i].letter);
			if (opts[i].kind != CMD_OPT_FLAG)
				strbuf_addch(&shorts, ':');
		}
	}
	memcpy(longopts + n, common, sizeof(common));
	/* From the start, a full reset (argv may be a new vector); else on
	 * from where an earlier call stopped. */
	optind = *first > 0 ? *first : 0;
	for (;;) {
		const struct cmd_option *o = NULL;

		li = -1;
		c = getopt_long(argc, argv, strbuf_str(&shorts), longopts, &li);
		if (c == -1)
			break;
		for (size_t i = 0; i < n && !o; i++)
			if (c ==
			    (opts[i].letter ? opts[i].letter : 256 + (int)i))
				o = &opts[i];
		if (!o) {
			rc = cmd_common_option(ctx, cmd, c, optarg);
			if (rc)
				break;
			continue;
		}
		if (o->verbs && verb && !(o->verbs & verb)) {
			rc = li >= 0 ? cmd_usage_error(cmd,
						       "'%s' does not take --%s",
						       vname, o->name)
				     : cmd_usage_error(cmd,
						       "'%s' does not take -%c",
						       vname, o->letter);
			break;
		}
		switch (o->kind) {
		case CMD_OPT_FLAG:
			*(bool *)((char *)out + o->offset) = true;
			break;
		case CMD_OPT_STRING:
			*(const char **)((char *)out + o->offset) = optarg;
			break;
		case CMD_OPT_COUNT: {
			char what[64];

			snprintf(what, sizeof(what), "--%s", o->name);
			rc = cmd_parse_count(
			    cmd, what, optarg, o->max,
			    (unsigned long long *)((char *)out + o->offset));
			if (!rc && o->given)
				*(bool *)((char *)out + o->given - 1) = true;
			break;
		}
		case CMD_OPT_CALL:
			rc = o->call(cmd, o->name, optarg,
				     (char *)out + o->offset);
			break;
		}
		if (rc)
			break;
	}
	free(longopts);
	strbuf_release(&shorts);
	*first = optind;
	return rc;
}

int cmd_setup(struct sbx_ctx *ctx, unsigned needs)
{
	struct sbx_error *err = NULL;

	if ((needs & CMD_NEEDS_UID) && ctx->svc.cfg.recipe_err)
		return cmd_config_error(ctx->svc.cfg.recipe_err);
	if ((needs & CMD_NEEDS_CATALOG) == CMD_NEEDS_CATALOG && !ctx->cat) {
		int rc;

		ctx->cat = xcalloc(1, sizeof(*ctx->cat));
		catalog_init(ctx->cat);
		rc = cmd_load_catalog(ctx, NULL, ctx->cat);
		if (rc)
			return rc;
	}
	if (needs & CMD_NEEDS_CALL) {
		/* --agent '' is given, and refused by the recorder as an id
		 * of no bytes; an empty variable is none. */
		ctx->call.agent = ctx->audit_agent
				      ? ctx->audit_agent
				      : cmd_identity(NULL, "SBXCAT_AGENT_ID");
		ctx->call.run = ctx->audit_run
				    ? ctx->audit_run
				    : cmd_identity(NULL, "SBXCAT_RUN_ID");
		if (ctx->call.agent &&
		    svc_id_check(ctx->audit_agent ? "--agent" : "SBXCAT_AGENT_ID",
				 ctx->call.agent, &err) < 0)
			return cmd_report(&err);
		if (ctx->call.run &&
		    svc_id_check(ctx->audit_run ? "--run" : "SBXCAT_RUN_ID",
				 ctx->call.run, &err) < 0)
			return cmd_report(&err);
		ctx->call.cancel = sig_flag();
		ctx->call.warn = cmd_warn;
		ctx->call.warn_arg = NULL;
	}
	return 0;
}

/* A command on its option table: parse, check the operands, set up,
 * run. */
static int run_entry(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
		     int argc, char **argv)
{
	void *opts = xcalloc(1, cmd->opts_size ? cmd->opts_size : 1);
	int first, nargs, rc;

	rc = cmd_options_parse(ctx, cmd, cmd->options, 0, cmd->name, opts,
			       argc, argv, &first);
	if (rc) {
		free(opts);
		return rc < 0 ? 0 : rc;
	}
	nargs = argc - first;
	if (nargs < cmd->min_args)
		rc = cmd->missing ? cmd_usage_error(cmd, "%s", cmd->missing)
				  : cmd_usage_error(cmd, "an operand is missing");
	else if (cmd->max_args >= 0 && nargs > cmd->max_args)
		rc = cmd->excess ? cmd_usage_error(cmd, "%s", cmd->excess)
				 : cmd_usage_error(cmd, "unexpected operand '%s'",
						   argv[first + cmd->max_args]);
	if (!rc)
		rc = cmd_setup(ctx, cmd->needs);
	if (!rc)
		rc = cmd->run(ctx, opts, nargs, argv + first);
	free(opts);
	return rc;
}

int cmd_dispatch(struct sbx_ctx *ctx, const struct cmd_entry *cmd, int argc,
		 char **argv)
{
	static const struct option longopts[] = {COMMON_LONGOPTS, {0}};
	const struct cmd_entry *verb;
	int c, rc = 0;

	optind = 0; /* reset getopt for this word's own options */
	/* getopt names argv[0] in its messages: "sbxcat: unrecognized
	 * option '--x'", as every other message of ours begins. */
	argv[0] = (char *)"sbxcat";
	if (!cmd->nverbs)
		return cmd->run ? run_entry(ctx, cmd, argc, argv)
				: cmd->exec(ctx, argc, argv);
	/* '+': stop at the verb; its own options follow it. */
	for (;;) {
		c = getopt_long(argc, argv, "+" COMMON_SHORTOPTS, longopts,
				NULL);
		if (c == -1)
			break;
		rc = cmd_common_option(ctx, cmd, c, optarg);
		if (rc)
			return rc < 0 ? 0 : rc;
	}
	if (optind >= argc)
		return cmd_usage_error(cmd, "'%s' needs a verb", cmd->name);
	verb = find_verb(cmd, argv[optind], &rc);
	if (!verb)
		return rc;
	return cmd_dispatch(ctx, verb, argc - optind, argv + optind);
}

int cmd_help_command(int argc, char **argv)
{
	const struct cmd_entry *cmd = root;
	int rc = 0;

	for (int i = 0; i < argc; i++) {
		if (!cmd->nverbs)
			return cmd_usage_error(cmd, "'%s' has no verbs",
					       cmd->name);
		cmd = find_verb(cmd, argv[i], &rc);
		if (!cmd)
			return rc;
	}
	cmd_print_help(stdout, cmd);
	return 0;
}

int cmd_common_option(struct sbx_ctx *ctx, const struct cmd_entry *cmd, int c,
		      const char *arg)
{
	struct sbx_error *err = NULL;

	switch (c) {
	case 'C':
		ctx->catalog_path = arg;
		return 0;
	case 'J':
		ctx->json = true;
		return 0;
	case 'U': {
		unsigned long uid;

		if (recipe_parse_uid(arg, &uid, &err) < 0)
			return cmd_report(&err);
		svc_config_set_uid(&ctx->svc.cfg, uid);
		return 0;
	}
	case OPT_AUDIT_DB:
		ctx->svc.cfg.audit.db_override = arg;
		ctx->svc.cfg.audit.db_override_source = "--db";
		return 0;
	case OPT_AUDIT_AGENT:
		ctx->audit_agent = arg;
		return 0;
	case OPT_AUDIT_RUN:
		ctx->audit_run = arg;
		return 0;
	case 'h':
		cmd_print_help(stdout, cmd ? cmd : root);
		return -1;
	default:
		/* getopt_long already said which option was wrong. */
		print_usage(stderr, cmd);
		return SBX_EXIT_USAGE;
	}
}

void cmd_print_json(json_t *doc)
{
	json_dumpf(doc, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(doc);
}

int cmd_kind_exit(int kind)
{
	switch ((enum sbx_kind)kind) {
	case SBX_E_NOT_FOUND:
	case SBX_E_CONFLICT:
	case SBX_E_REFUSED:
	case SBX_E_BAD_DATA:
		return SBX_EXIT_FAIL;
	case SBX_E_INVALID:
		return SBX_EXIT_USAGE;
	case SBX_E_CANCELLED:
		/* A cancel the caller asked for without a signal (none
		 * yet): as an interrupt. */
		return sig_caught() ? sig_exit_status() : 128 + SIGINT;
	case SBX_E_UNAVAILABLE:
	case SBX_E_TIMEOUT:
	case SBX_E_INTERNAL:
	default:
		return SBX_EXIT_ENV;
	}
}

int cmd_exit_status(const struct sbx_error *err)
{
	return cmd_kind_exit(err->kind);
}

const char *cmd_identity(const char *opt, const char *var)
{
	const char *v = opt ? opt : getenv(var);

	return v && *v ? v : NULL;
}

void cmd_warn(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "sbxcat: warning: %s\n", msg);
}

int cmd_report(struct sbx_error **err)
{
	int status = cmd_exit_status(*err);

	if ((*err)->prev)
		cmd_report(&(*err)->prev); /* what came first, first */
	fprintf(stderr, "sbxcat: %s\n", (*err)->msg);
	if ((*err)->hint)
		fprintf(stderr, "hint: %s\n", (*err)->hint);
	sbx_error_free(err);
	return status;
}

void cmd_stdout_gone(int e)
{
	if (e == EPIPE) {
		/* As git's check_pipe: the reader left; die as if the
		 * write had killed us, which it would have by default. */
		signal(SIGPIPE, SIG_DFL);
		raise(SIGPIPE);
	}
}

int cmd_close_stdout(int rc)
{
	bool failed = ferror(stdout) != 0;
	int e = 0;

	/* fflush and fclose set errno; ferror alone keeps no reason, so a
	 * flush is tried even after an error to learn it. */
	if (fflush(stdout) != 0) {
		failed = true;
		e = errno;
	}
	if (fclose(stdout) != 0 && !failed) {
		failed = true;
		e = errno;
	}
	if (!failed)
		return rc;
	cmd_stdout_gone(e);
	if (e)
		fprintf(stderr, "sbxcat: write error on standard output: %s\n",
			strerror(e));
	else
		fprintf(stderr, "sbxcat: write error on standard output\n");
	return rc > SBX_EXIT_ENV ? rc : SBX_EXIT_ENV;
}

int cmd_config_error(const struct sbx_error *area)
{
	struct sbx_error *err = NULL;

	return svc_config_check(area, &err) < 0 ? cmd_report(&err) : 0;
}

const char *cmd_catalog_path(const struct sbx_ctx *ctx)
{
	static const char local[] = "catalog/sandbox_runtimes.json";

	if (ctx->catalog_path)
		return ctx->catalog_path;
	if (ctx->svc.cfg.catalog_path)
		return ctx->svc.cfg.catalog_path;
	if (access(local, F_OK) == 0)
		return local;
	return SBXCAT_DATADIR "/sandbox_runtimes.json";
}

void cmd_print_diags(const struct catalog *cat)
{
	for (size_t i = 0; i < cat->ndiags; i++) {
		char *line = catalog_diag_format(cat, &cat->diags[i]);

		fprintf(stderr, "%s\n", line);
		free(line);
	}
}

int cmd_load_catalog(struct sbx_ctx *ctx, const char *path, struct catalog *cat)
{
	struct sbx_error *err = NULL;

	if (ctx->svc.cfg.recipe_err)
		return cmd_config_error(ctx->svc.cfg.recipe_err);
	if (!path)
		path = cmd_catalog_path(ctx);
	if (catalog_load(cat, path, &err) < 0)
		return cmd_report(&err);
	if (catalog_valid(cat))
		return 0;
	cmd_print_diags(cat);
	fprintf(stderr, "sbxcat: '%s' has %zu error%s; nothing was done\n",
		path, cat->ndiags, cat->ndiags == 1 ? "" : "s");
	return SBX_EXIT_FAIL;
}

const struct runtime *cmd_runtime_arg(const struct sbx_ctx *ctx, int nargs,
				      char **args)
{
	return nargs ? cmd_find_runtime(ctx->cat, args[0])
		     : catalog_default(ctx->cat);
}

const struct runtime *cmd_find_runtime(const struct catalog *cat,
				       const char *alias)
{
	const struct runtime *rt = catalog_find(cat, alias);

	if (!rt) {
		fprintf(stderr,
			"sbxcat: no runtime '%s' in '%s'; it has:", alias,
			cat->path);
		for (size_t i = 0; i < cat->n; i++)
			fprintf(stderr, " %s", cat->rt[i].alias);
		fputc('\n', stderr);
	}
	return rt;
}

int cmd_parse_count(const struct cmd_entry *cmd, const char *opt,
		    const char *arg, unsigned long long max,
		    unsigned long long *out)
{
	char *end;
	unsigned long long v = 0;

	errno = 0;
	if (*arg >= '0' && *arg <= '9')
		v = strtoull(arg, &end, 10);
	if (v == 0 || errno || *end || v > max)
		return cmd_usage_error(cmd, "%s '%s': expected a number from 1 "
					    "to %llu",
				       opt, arg, max);
	*out = v;
	return 0;
}

void cmd_rfc3339(char out[32], long long t)
{
	clock_format_time(out, t);
}

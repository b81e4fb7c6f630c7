/*
 * sbxcat.c - main, the global options and the command table.
 *
 * Everything user-facing that is common to the commands lives here: where
 * the catalogue comes from, how an error is printed, usage.  The commands
 * themselves are in cmd-*.c, one file each.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "cmd.h"
#include "error.h"
#include "util.h"

#ifndef SBXCAT_DATADIR
#define SBXCAT_DATADIR "/usr/local/share/sbxcat"
#endif

static const struct cmd_entry *const cmd_table[] = {
    &cmd_check_entry,	 &cmd_list_entry,    &cmd_dockerfile_entry,
    &cmd_generate_entry, &cmd_tag_entry,     &cmd_briefing_entry,
    &cmd_prewarm_entry,	 &cmd_compose_entry,
};
#define NCMDS (sizeof(cmd_table) / sizeof(cmd_table[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: sbxcat [-C CATALOG] [--json] [--sandbox-uid UID] "
		   "COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < NCMDS; i++)
		/* A long usage gets its own line: the summaries stay aligned.
		 */
		if (strlen(cmd_table[i]->usage) > 22)
			fprintf(f, "  %-11s %s\n  %-11s %-22s %s\n",
				cmd_table[i]->name, cmd_table[i]->usage, "", "",
				cmd_table[i]->summary);
		else
			fprintf(f, "  %-11s %-22s %s\n", cmd_table[i]->name,
				cmd_table[i]->usage, cmd_table[i]->summary);
	fprintf(f, "\nThe catalogue is -C FILE, else $SBXCAT_CATALOG, else "
		   "./catalog/sandbox_runtimes.json,\nelse " SBXCAT_DATADIR
		   "/sandbox_runtimes.json.  See sbxcat(1).\n");
}

int cmd_usage_error(const struct cmd_entry *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("sbxcat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd)
		fprintf(stderr, "usage: sbxcat %s %s\n", cmd->name, cmd->usage);
	else
		usage(stderr);
	return SBX_EXIT_USAGE;
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
	case 'U':
		if (recipe_parse_uid(arg, &ctx->recipe.sandbox_uid, &err) < 0)
			return cmd_report(&err);
		sbx_error_free(&ctx->uid_error);
		return 0;
	case 'h':
		if (cmd)
			printf("usage: sbxcat %s %s\n  %s\n", cmd->name,
			       cmd->usage, cmd->summary);
		else
			usage(stdout);
		return -1;
	default:
		/* getopt_long already said which option was wrong. */
		if (cmd)
			fprintf(stderr, "usage: sbxcat %s %s\n", cmd->name,
				cmd->usage);
		else
			usage(stderr);
		return SBX_EXIT_USAGE;
	}
}

int cmd_parse_common(struct sbx_ctx *ctx, const struct cmd_entry *cmd, int argc,
		     char **argv)
{
	static const struct option longopts[] = {COMMON_LONGOPTS, {0}};
	int c;

	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts,
				NULL)) != -1) {
		int rc = cmd_common_option(ctx, cmd, c, optarg);
		if (rc)
			return rc;
	}
	return 0;
}

void cmd_print_json(json_t *doc)
{
	json_dumpf(doc, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(doc);
}

int cmd_report(struct sbx_error **err)
{
	int status = (*err)->status;
	fprintf(stderr, "sbxcat: %s\n", (*err)->msg);
	if ((*err)->hint)
		fprintf(stderr, "hint: %s\n", (*err)->hint);
	sbx_error_free(err);
	return status;
}

const char *cmd_catalog_path(const struct sbx_ctx *ctx)
{
	const char *env = getenv("SBXCAT_CATALOG");
	static const char local[] = "catalog/sandbox_runtimes.json";

	if (ctx->catalog_path)
		return ctx->catalog_path;
	if (env && *env)
		return env;
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

	if (ctx->uid_error)
		return cmd_report(&ctx->uid_error);
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

int cmd_runtime_operand(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
			int argc, char **argv, bool may_default,
			struct catalog *cat, const struct runtime **rt)
{
	int rc = cmd_parse_common(ctx, cmd, argc, argv);

	catalog_init(cat);
	if (rc)
		return rc;
	if (argc - optind > 1 || (!may_default && argc - optind != 1))
		return cmd_usage_error(cmd, "expected %sone ALIAS",
				       may_default ? "at most " : "");
	rc = cmd_load_catalog(ctx, NULL, cat);
	if (rc)
		return rc;
	*rt = optind < argc ? cmd_find_runtime(cat, argv[optind])
			    : catalog_default(cat);
	return *rt ? 0 : SBX_EXIT_FAIL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS, {"version", no_argument, NULL, 'V'}, {0}};
	struct sbx_ctx ctx = {0};
	struct sbx_error *err = NULL;
	const char *uid = getenv("SANDBOXD_SANDBOX_UID");
	int c;

	ctx.recipe.sandbox_uid = SANDBOX_UID_DEFAULT;
	if (uid && recipe_parse_uid(uid, &ctx.recipe.sandbox_uid, &err) < 0) {
		sbx_error_wrap(&err, "SANDBOXD_SANDBOX_UID");
		ctx.uid_error = err;
		err = NULL;
	}

	/* '+': stop at the command name; its own options follow it. */
	while ((c = getopt_long(argc, argv, "+" COMMON_SHORTOPTS, longopts,
				NULL)) != -1) {
		int rc;
		if (c == 'V') {
			printf("sbxcat %s\n", PACKAGE_VERSION);
			return 0;
		}
		rc = cmd_common_option(&ctx, NULL, c, optarg);
		if (rc)
			return rc < 0 ? 0 : rc;
	}
	if (optind >= argc)
		return cmd_usage_error(NULL, "no command given");
	if (strcmp(argv[optind], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < NCMDS; i++) {
		if (strcmp(argv[optind], cmd_table[i]->name) == 0) {
			int rc;

			argc -= optind;
			argv += optind;
			optind =
			    0; /* reset getopt for the command's own parse */
			rc = cmd_table[i]->exec(&ctx, argc, argv);
			sbx_error_free(&ctx.uid_error);
			return rc;
		}
	}
	return cmd_usage_error(NULL, "'%s' is not an sbxcat command",
			       argv[optind]);
}

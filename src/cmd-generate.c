/*
 * cmd-generate.c - sbxcat generate [-o DIR]: write DIR/ALIAS/Dockerfile for
 * every built runtime.
 *
 * Each file is replaced atomically and only when its bytes change, so a
 * regeneration leaves timestamps alone; nothing else in DIR is touched
 * (a runtime removed from the catalogue keeps its old directory: deleting
 * files the operator may have put there is not this command's call).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "catalog.h"
#include "cmd.h"
#include "error.h"
#include "util.h"

#define GENERATE_DIR_DEFAULT "dockerfiles"

static int write_one(struct sbx_ctx *ctx, const char *dir,
		     const struct runtime *rt, json_t *report)
{
	struct sbx_error *err = NULL;
	cleanup_free char *sub = xasprintf("%s/%s", dir, rt->alias);
	cleanup_free char *path = xasprintf("%s/Dockerfile", sub);
	cleanup_free char *tag = recipe_tag(rt, &ctx->recipe);
	cleanup_free char *df = NULL;
	size_t len;
	bool changed = false;

	df = recipe_dockerfile(rt, &ctx->recipe, &len);
	if (mkdir_p(sub, 0755, &err) < 0 ||
	    write_file_atomic(path, df, len, 0644, &changed, &err) < 0)
		return cmd_report(&err);
	if (report)
		json_array_append_new(report,
				      json_pack("{s:s, s:s, s:s, s:b}", "alias",
						rt->alias, "path", path, "tag",
						tag, "changed", changed));
	else
		printf("%s: %s (%s)\n", path, changed ? "written" : "up to date",
		       tag);
	return 0;
}

static int cmd_generate(struct sbx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		COMMON_LONGOPTS, {"output", required_argument, NULL, 'o'}, {0}};
	const char *dir = GENERATE_DIR_DEFAULT;
	struct catalog cat;
	json_t *report = NULL;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS "o:", longopts,
				NULL)) != -1) {
		if (c == 'o') {
			dir = optarg;
			continue;
		}
		rc = cmd_common_option(ctx, &cmd_generate_entry, c, optarg);
		if (rc)
			return rc < 0 ? 0 : rc;
	}
	if (optind < argc)
		return cmd_usage_error(&cmd_generate_entry, "too many arguments");

	catalog_init(&cat);
	rc = cmd_load_catalog(ctx, NULL, &cat);
	if (ctx->json && rc == 0)
		report = json_array();
	for (size_t i = 0; rc == 0 && i < cat.n; i++)
		if (cat.rt[i].base_image)
			rc = write_one(ctx, dir, &cat.rt[i], report);
	if (report) {
		if (rc == 0) {
			json_dumpf(report, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
		}
		json_decref(report);
	}
	catalog_release(&cat);
	return rc;
}

const struct cmd_entry cmd_generate_entry = {
	.name = "generate",
	.usage = "[-o DIR]",
	.summary = "write DIR/ALIAS/Dockerfile for every built runtime",
	.exec = cmd_generate,
};

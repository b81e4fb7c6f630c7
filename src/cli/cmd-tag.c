/*
 * cmd-tag.c - sbxcat tag ALIAS: the content-hash image tag.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "basic/xjson.h"

static int cmd_tag(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct runtime *rt = cmd_runtime_arg(ctx, nargs, args);
	char *tag;

	(void)opts;
	if (!rt)
		return SBX_EXIT_FAIL;
	tag = recipe_tag(rt, &ctx->svc.cfg.recipe);
	if (ctx->json)
		cmd_print_json(
		    xjson_pack("{s:s, s:s}", "alias", rt->alias, "tag", tag));
	else
		puts(tag);
	free(tag);
	return 0;
}

const struct cmd_entry cmd_tag_entry = {
    .name = "tag",
    .usage = "ALIAS",
    .summary = "print the content-hash image tag of a runtime",
    .min_args = 1,
    .max_args = 1,
    .missing = "expected one ALIAS",
    .excess = "expected one ALIAS",
    .needs = CMD_NEEDS_CATALOG,
    .run = cmd_tag,
};

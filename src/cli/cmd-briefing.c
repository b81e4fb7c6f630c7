/*
 * cmd-briefing.c - sbxcat briefing [ALIAS]: the model briefing (markdown).
 *
 * An alias the catalogue does not ship prints nothing on stdout: a prompt
 * that guesses at a runtime is worse than one that says nothing.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "catalog/briefing.h"
#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "basic/xjson.h"

static int cmd_briefing(struct sbx_ctx *ctx, void *opts, int nargs,
			char **args)
{
	const struct runtime *rt = cmd_runtime_arg(ctx, nargs, args);
	char *md;

	(void)opts;
	if (!rt)
		return SBX_EXIT_FAIL;
	md = briefing_markdown(rt, rt == catalog_default(ctx->cat));
	if (ctx->json)
		cmd_print_json(xjson_pack("{s:s, s:s}", "alias", rt->alias,
					  "markdown", md));
	else
		fputs(md, stdout);
	free(md);
	return 0;
}

const struct cmd_entry cmd_briefing_entry = {
    .name = "briefing",
    .usage = "[ALIAS]",
    .summary = "print the model briefing of a runtime (default: the first)",
    .max_args = 1,
    .excess = "expected at most one ALIAS",
    .needs = CMD_NEEDS_CATALOG,
    .run = cmd_briefing,
};

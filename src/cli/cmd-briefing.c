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

static int cmd_briefing(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct catalog *cat = ctx->cat;
	const struct runtime *rt =
	    nargs ? cmd_find_runtime(cat, args[0]) : catalog_default(cat);
	int rc = rt ? 0 : SBX_EXIT_FAIL;

	(void)opts;
	if (rc == 0) {
		char *md = briefing_markdown(rt, rt == catalog_default(cat));
		if (ctx->json) {
			json_t *o = xjson_pack("{s:s, s:s}", "alias", rt->alias,
					       "markdown", md);
			cmd_print_json(o);
		} else {
			fputs(md, stdout);
		}
		free(md);
	}
	return rc;
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

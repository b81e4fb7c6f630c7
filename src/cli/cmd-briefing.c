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

static int cmd_briefing(struct sbx_ctx *ctx, int argc, char **argv)
{
	struct catalog cat;
	const struct runtime *rt = NULL;
	int rc = cmd_runtime_operand(ctx, &cmd_briefing_entry, argc, argv, true,
				     &cat, &rt);

	if (rc == 0) {
		char *md = briefing_markdown(rt, rt == catalog_default(&cat));
		if (ctx->json) {
			json_t *o = xjson_pack("{s:s, s:s}", "alias", rt->alias,
					       "markdown", md);
			cmd_print_json(o);
		} else {
			fputs(md, stdout);
		}
		free(md);
	}
	catalog_release(&cat);
	return rc < 0 ? 0 : rc;
}

const struct cmd_entry cmd_briefing_entry = {
    .name = "briefing",
    .usage = "[ALIAS]",
    .summary = "print the model briefing of a runtime (default: the first)",
    .exec = cmd_briefing,
};

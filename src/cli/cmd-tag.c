/*
 * cmd-tag.c - sbxcat tag ALIAS: the content-hash image tag.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "basic/xjson.h"

static int cmd_tag(struct sbx_ctx *ctx, int argc, char **argv)
{
	struct catalog cat;
	const struct runtime *rt = NULL;
	int rc = cmd_runtime_operand(ctx, &cmd_tag_entry, argc, argv, false,
				     &cat, &rt);

	if (rc == 0) {
		char *tag = recipe_tag(rt, &ctx->recipe);
		if (ctx->json)
			cmd_print_json(xjson_pack("{s:s, s:s}", "alias",
						  rt->alias, "tag", tag));
		else
			puts(tag);
		free(tag);
	}
	catalog_release(&cat);
	return rc < 0 ? 0 : rc;
}

const struct cmd_entry cmd_tag_entry = {
    .name = "tag",
    .usage = "ALIAS",
    .summary = "print the content-hash image tag of a runtime",
    .exec = cmd_tag,
};

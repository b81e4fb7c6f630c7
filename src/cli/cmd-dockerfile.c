/*
 * cmd-dockerfile.c - sbxcat dockerfile ALIAS: print the generated Dockerfile.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "basic/error.h"
#include "basic/xjson.h"

static int cmd_dockerfile(struct sbx_ctx *ctx, void *opts, int nargs,
			  char **args)
{
	const struct runtime *rt = cmd_runtime_arg(ctx, nargs, args);
	size_t len;
	char *df, *tag;

	(void)opts;
	if (!rt)
		return SBX_EXIT_FAIL;
	if (!rt->base_image) {
		fprintf(stderr,
			"sbxcat: runtime '%s' uses the ready-made image '%s'; "
			"it has no Dockerfile\n",
			rt->alias, rt->image);
		return SBX_EXIT_FAIL;
	}
	df = recipe_dockerfile(rt, &ctx->svc.cfg.recipe, &len);
	tag = recipe_tag_of(rt, df, len);
	if (ctx->json)
		cmd_print_json(xjson_pack("{s:s, s:s, s:s%}", "alias", rt->alias,
					  "tag", tag, "dockerfile", df, len));
	else
		fwrite(df, 1, len, stdout);
	free(tag);
	free(df);
	return 0;
}

const struct cmd_entry cmd_dockerfile_entry = {
    .name = "dockerfile",
    .usage = "ALIAS",
    .summary = "print the generated Dockerfile of a runtime",
    .min_args = 1,
    .max_args = 1,
    .missing = "expected one ALIAS",
    .excess = "expected one ALIAS",
    .needs = CMD_NEEDS_CATALOG,
    .run = cmd_dockerfile,
};

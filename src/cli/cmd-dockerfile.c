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

static int cmd_dockerfile(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct catalog *cat = ctx->cat;
	const struct runtime *rt =
	    nargs ? cmd_find_runtime(cat, args[0]) : catalog_default(cat);
	int rc = rt ? 0 : SBX_EXIT_FAIL;

	(void)opts;
	if (rc == 0 && !rt->base_image) {
		fprintf(stderr,
			"sbxcat: runtime '%s' uses the ready-made image '%s'; "
			"it has no Dockerfile\n",
			rt->alias, rt->image);
		rc = SBX_EXIT_FAIL;
	} else if (rc == 0) {
		size_t len;
		char *df = recipe_dockerfile(rt, &ctx->svc.cfg.recipe, &len);
		char *tag = recipe_tag_of(rt, df, len);
		if (ctx->json)
			cmd_print_json(xjson_pack("{s:s, s:s, s:s%}", "alias",
						  rt->alias, "tag", tag,
						  "dockerfile", df, len));
		else
			fwrite(df, 1, len, stdout);
		free(tag);
		free(df);
	}
	return rc;
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

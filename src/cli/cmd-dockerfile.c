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

static int cmd_dockerfile(struct sbx_ctx *ctx, int argc, char **argv)
{
	struct catalog cat;
	const struct runtime *rt = NULL;
	int rc = cmd_runtime_operand(ctx, &cmd_dockerfile_entry, argc, argv,
				     false, &cat, &rt);

	if (rc == 0 && !rt->base_image) {
		fprintf(stderr,
			"sbxcat: runtime '%s' uses the ready-made image '%s'; "
			"it has no Dockerfile\n",
			rt->alias, rt->image);
		rc = SBX_EXIT_FAIL;
	} else if (rc == 0) {
		size_t len;
		char *df = recipe_dockerfile(rt, &ctx->recipe, &len);
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
	catalog_release(&cat);
	return rc < 0 ? 0 : rc;
}

const struct cmd_entry cmd_dockerfile_entry = {
    .name = "dockerfile",
    .usage = "ALIAS",
    .summary = "print the generated Dockerfile of a runtime",
    .exec = cmd_dockerfile,
};

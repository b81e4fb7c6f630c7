/*
 * cmd-list.c - sbxcat list: the runtimes as a table (or JSON).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "basic/util.h"
#include "basic/xjson.h"

enum {
	COL_ALIAS,
	COL_KIND,
	COL_FROM,
	COL_TAG,
	COL_PKGS,
	COL_MEM,
	COL_NET,
	NCOL
};

static int cmd_list(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	static const char *const head[NCOL] = {
	    "ALIAS", "KIND", "IMAGE/BASE", "TAG", "PKGS", "MEM", "NETWORK"};
	const struct catalog *cat = ctx->cat;
	char *(*cells)[NCOL];
	size_t width[NCOL];
	json_t *arr = NULL;

	(void)opts, (void)nargs, (void)args;

	cells = xcalloc(cat->n, sizeof(*cells));
	for (size_t c = 0; c < NCOL; c++)
		width[c] = strlen(head[c]);
	if (ctx->json)
		arr = json_array();
	for (size_t i = 0; i < cat->n; i++) {
		const struct runtime *rt = &cat->rt[i];
		char *tag = recipe_tag(rt, &ctx->svc.cfg.recipe);

		if (arr) {
			json_array_append_new(
			    arr, xjson_pack(
				     "{s:s, s:s, s:s, s:s, s:i, s:o, s:b, s:b}",
				     "alias", rt->alias, "kind",
				     rt->image ? "image" : "built",
				     rt->image ? "image" : "base_image",
				     rt->image ? rt->image : rt->base_image,
				     "tag", tag, "packages", (int)rt->npackages,
				     "mem_limit",
				     rt->mem_limit ? xjson_string(rt->mem_limit)
						   : json_null(),
				     "needs_network", rt->needs_network,
				     "default", i == 0));
			free(tag);
			continue;
		}
		cells[i][COL_ALIAS] =
		    xasprintf("%s%s", rt->alias, i ? "" : " *");
		cells[i][COL_KIND] = xstrdup(rt->image ? "image" : "built");
		cells[i][COL_FROM] =
		    xstrdup(rt->image ? rt->image : rt->base_image);
		cells[i][COL_TAG] = tag;
		cells[i][COL_PKGS] = xasprintf("%zu", rt->npackages);
		cells[i][COL_MEM] =
		    xstrdup(rt->mem_limit ? rt->mem_limit : "-");
		cells[i][COL_NET] = xstrdup(rt->needs_network ? "yes" : "no");
		for (size_t c = 0; c < NCOL; c++)
			if (strlen(cells[i][c]) > width[c])
				width[c] = strlen(cells[i][c]);
	}
	if (arr) {
		cmd_print_json(arr);
	} else {
		for (size_t c = 0; c < NCOL; c++)
			printf("%-*s%s", c + 1 < NCOL ? (int)width[c] : 0,
			       head[c], c + 1 < NCOL ? "  " : "\n");
		for (size_t i = 0; i < cat->n; i++)
			for (size_t c = 0; c < NCOL; c++) {
				printf("%-*s%s",
				       c + 1 < NCOL ? (int)width[c] : 0,
				       cells[i][c], c + 1 < NCOL ? "  " : "\n");
				free(cells[i][c]);
			}
		printf("(* the default runtime)\n");
	}
	free(cells);
	return 0;
}

const struct cmd_entry cmd_list_entry = {
    .name = "list",
    .usage = "",
    .summary = "list the runtimes: alias, kind, base, tag, mem, network",
    .max_args = 0,
    .excess = "too many arguments",
    .needs = CMD_NEEDS_CATALOG,
    .run = cmd_list,
};

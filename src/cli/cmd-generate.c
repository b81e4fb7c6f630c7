/*
 * cmd-generate.c - sbxcat generate [-o DIR]: write DIR/ALIAS/Dockerfile for
 * every built runtime.
 *
 * Files are replaced atomically and only when their bytes change, so a
 * regeneration leaves timestamps alone; they are written as one batch
 * (atomic_batch, fileio.h says exactly what a failure half-way leaves: an
 * error before the renames, or Ctrl-C, leaves every old file in place and
 * no temporary file).  A Dockerfile that is a symbolic link is written
 * through, like compose's files.  Nothing else in DIR is touched: a runtime
 * removed from the catalogue keeps its old directory, since deleting files
 * the operator may have put there is not this command's call.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "basic/error.h"
#include "basic/sig.h"
#include "basic/util.h"
#include "basic/xjson.h"

#define GENERATE_DIR_DEFAULT "dockerfiles"

struct generated {
	char *path, *tag;
	bool changed;
};

static int generate(struct sbx_ctx *ctx, const struct catalog *cat,
		    const char *dir, struct generated *out,
		    struct sbx_error **err)
{
	struct atomic_batch batch = ATOMIC_BATCH_INIT;

	for (size_t i = 0; i < cat->n; i++) {
		const struct runtime *rt = &cat->rt[i];
		cleanup_free char *sub = NULL;
		cleanup_free char *df = NULL;
		size_t len;

		if (!rt->base_image)
			continue;
		sub = xasprintf("%s%s%s", dir,
				dir[strlen(dir) - 1] == '/' ? "" : "/",
				rt->alias);
		out[i].path = xasprintf("%s/Dockerfile", sub);
		df = recipe_dockerfile(rt, &ctx->svc.cfg.recipe, &len);
		out[i].tag = recipe_tag_of(rt, df, len);
		if (mkdir_p(sub, 0755, err) < 0 ||
		    atomic_batch_add(&batch, out[i].path, df, len, 0644,
				     &out[i].changed, err) < 0) {
			atomic_batch_abort(&batch);
			return -1;
		}
	}
	return atomic_batch_commit(&batch, err);
}

struct generate_opts {
	const char *dir;
};

static const struct cmd_option generate_options[] = {
    CMD_STRING("output", 'o', struct generate_opts, dir, 0),
    CMD_OPTIONS_END,
};

static int cmd_generate(struct sbx_ctx *ctx, void *opts, int nargs,
			char **args)
{
	const struct generate_opts *go = opts;
	const char *dir = go->dir ? go->dir : GENERATE_DIR_DEFAULT;
	struct sbx_error *err = NULL;
	struct generated *out;
	const struct catalog *cat;
	json_t *report = NULL;
	int rc = 0;

	(void)nargs, (void)args;
	if (!*dir)
		return cmd_usage_error(&cmd_generate_entry,
				       "-o needs a directory");
	rc = cmd_setup(ctx, CMD_NEEDS_CATALOG);
	if (rc)
		return rc;
	cat = ctx->cat;
	out = xcalloc(cat->n, sizeof(*out));
	if (generate(ctx, cat, dir, out, &err) < 0 && sig_caught()) {
		/* Interrupted: main re-raises the signal; nothing to say. */
		sbx_error_free(&err);
		rc = sig_exit_status();
	} else if (err) {
		rc = cmd_report(&err);
	}
	if (ctx->json && rc == 0)
		report = json_array();
	for (size_t i = 0; i < cat->n; i++) {
		if (rc == 0 && out[i].path && report) {
			json_t *o =
			    xjson_pack("{s:s}", "alias", cat->rt[i].alias);

			xjson_set_path(o, "path", out[i].path);
			json_object_set_new(o, "tag", xjson_string(out[i].tag));
			json_object_set_new(o, "changed",
					    json_boolean(out[i].changed));
			json_array_append_new(report, o);
		} else if (rc == 0 && out[i].path)
			printf("%s: %s (%s)\n", out[i].path,
			       out[i].changed ? "written" : "up to date",
			       out[i].tag);
		free(out[i].path);
		free(out[i].tag);
	}
	if (report)
		cmd_print_json(report);
	free(out);
	return rc;
}

const struct cmd_entry cmd_generate_entry = {
    .name = "generate",
    .usage = "[-o DIR]",
    .summary = "write DIR/ALIAS/Dockerfile for every built runtime",
    .options = generate_options,
    .opts_size = sizeof(struct generate_opts),
    .max_args = 0,
    .excess = "too many arguments",
    .run = cmd_generate,
};

/*
 * cmd-check.c - sbxcat check [CATALOG]: validate, report every error.
 *
 * --json prints an array of diagnostics ([] when valid), or, when the file
 * cannot be read at all, one object {"file", "error", "status"}: a reader
 * of the output must never mistake "could not look" for "valid".
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "basic/alloc.h"
#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "basic/error.h"
#include "basic/xjson.h"

/* catalog_diags_json, checked: one object per diagnostic, none dropped. */
static json_t *diags_json(const struct catalog *cat)
{
	json_t *arr = catalog_diags_json(cat);

	if (json_array_size(arr) != cat->ndiags)
		die_bug("check --json: %zu diagnostics, %zu in JSON",
			cat->ndiags, json_array_size(arr));
	return arr;
}

static int report_unreadable(const char *path, struct sbx_error **err)
{
	json_t *o = json_object();

	xjson_set_path(o, "file", path);
	json_object_set_new(o, "error", xjson_text((*err)->msg));
	json_object_set_new(o, "status", json_integer(cmd_exit_status(*err)));
	cmd_print_json(o);
	return cmd_report(err);
}

static int cmd_check(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct catalog cat;
	struct sbx_error *err = NULL;
	const char *path = nargs ? args[0] : cmd_catalog_path(ctx);
	int rc;

	(void)opts;
	catalog_init(&cat);
	if (catalog_load(&cat, path, &err) < 0)
		return ctx->json ? report_unreadable(path, &err)
				 : cmd_report(&err);
	if (ctx->json) {
		cmd_print_json(diags_json(&cat));
	} else {
		cmd_print_diags(&cat);
		if (catalog_valid(&cat))
			printf("%s: %zu runtime%s, valid\n", path, cat.n,
			       cat.n == 1 ? "" : "s");
		else
			fprintf(stderr, "%s: %zu error%s\n", path, cat.ndiags,
				cat.ndiags == 1 ? "" : "s");
	}
	rc = catalog_valid(&cat) ? SBX_EXIT_OK : SBX_EXIT_FAIL;
	catalog_release(&cat);
	return rc;
}

const struct cmd_entry cmd_check_entry = {
    .name = "check",
    .usage = "[CATALOG]",
    .summary = "validate the catalogue; every error, file:line:col",
    .max_args = 1,
    .excess = "too many arguments",
    .run = cmd_check,
};

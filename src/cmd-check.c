/*
 * cmd-check.c - sbxcat check [CATALOG]: validate, report every error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "catalog.h"
#include "cmd.h"
#include "error.h"

static int cmd_check(struct sbx_ctx *ctx, int argc, char **argv)
{
	struct catalog cat;
	struct sbx_error *err = NULL;
	const char *path;
	int rc = cmd_parse_common(ctx, &cmd_check_entry, argc, argv);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (argc - optind > 1)
		return cmd_usage_error(&cmd_check_entry, "too many arguments");
	path = optind < argc ? argv[optind] : cmd_catalog_path(ctx);

	catalog_init(&cat);
	if (catalog_load(&cat, path, &err) < 0)
		return cmd_report(&err);
	if (ctx->json) {
		cmd_print_json(catalog_diags_json(&cat));
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
    .exec = cmd_check,
};

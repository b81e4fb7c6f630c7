/*
 * sbxcat.c - main, the global options and the command table.
 *
 * The commands themselves are in cmd-*.c, one file each; what they share
 * (usage, dispatch to verbs, error reports, the catalogue) is in cmd.c.
 * main sets up what the whole program relies on before any command runs:
 * signals (sig.h), jansson's allocator (xjson.h), and at the end re-raises
 * a caught signal and checks that stdout really took the output.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "basic/sig.h"
#include "basic/util.h"
#include "basic/xjson.h"

#ifndef SBXCAT_DATADIR
#define SBXCAT_DATADIR "/usr/local/share/sbxcat"
#endif

static const struct cmd_entry *const cmd_table[] = {
    &cmd_check_entry,	 &cmd_list_entry,    &cmd_dockerfile_entry,
    &cmd_generate_entry, &cmd_tag_entry,     &cmd_briefing_entry,
    &cmd_prewarm_entry,	 &cmd_compose_entry, &cmd_session_entry,
    &cmd_exec_entry,	 &cmd_fs_entry,     &cmd_reap_entry,
    &cmd_serve_entry,
    &cmd_audit_entry,
    &cmd_fleet_entry,
};

static const struct cmd_entry sbxcat_root = {
    .name = "sbxcat",
    .usage = "[-C CATALOG] [--json] [--sandbox-uid UID] COMMAND [ARGS]",
    .verbs = cmd_table,
    .nverbs = sizeof(cmd_table) / sizeof(cmd_table[0]),
    .epilog = "The catalogue is -C FILE, else $SBXCAT_CATALOG, else "
	      "./catalog/sandbox_runtimes.json,\nelse " SBXCAT_DATADIR
	      "/sandbox_runtimes.json.  See sbxcat(1).",
};

/* Everything between the start-up and the checks at exit. */
static int run(struct sbx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS, {"version", no_argument, NULL, 'V'}, {0}};
	int c, rc;

	/* '+': stop at the command name; its own options follow it. */
	for (;;) {
		c = getopt_long(argc, argv, "+" COMMON_SHORTOPTS, longopts,
				NULL);
		if (c == -1)
			break;
		if (c == 'V') {
			printf("sbxcat %s\n", PACKAGE_VERSION);
			return 0;
		}
		rc = cmd_common_option(ctx, NULL, c, optarg);
		if (rc)
			return rc < 0 ? 0 : rc;
	}
	if (optind >= argc)
		return cmd_usage_error(NULL, "no command given");
	if (strcmp(argv[optind], "help") == 0)
		return cmd_help_command(argc - optind - 1, argv + optind + 1);
	/* The root's verbs are the commands: dispatch from the root, with
	 * argv[0] standing for the program name. */
	return cmd_dispatch(ctx, &sbxcat_root, argc - optind + 1,
			    argv + optind - 1);
}

int main(int argc, char **argv)
{
	struct sbx_ctx ctx = {0};
	int rc;

	sig_init();
	xjson_init();
	cmd_set_root(&sbxcat_root);
	sbx_env_capture(&ctx.env, environ);
	svc_init(&ctx.svc, &ctx.env);
	rc = run(&ctx, argc, argv);
	if (ctx.cat) {
		catalog_release(ctx.cat);
		free(ctx.cat);
	}
	svc_release(&ctx.svc);
	sbx_env_release(&ctx.env);
	sig_reraise();
	return cmd_close_stdout(rc);
}

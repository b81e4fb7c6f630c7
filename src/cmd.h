/*
 * cmd.h - what every subcommand shares: the command descriptor, the global
 * options, and the few helpers that talk to the user on its behalf.
 *
 * Each src/cmd-NAME.c exports one `const struct cmd_entry cmd_NAME_entry`
 * and src/sbxcat.c lists them all in its command table.
 */
#ifndef SBX_CMD_H
#define SBX_CMD_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>

#include "recipe.h"

struct catalog;
struct sbx_error;

struct sbx_ctx {
	const char *catalog_path; /* -C or SBXCAT_CATALOG; NULL: default */
	bool json;
	struct recipe_opts recipe;
	/* An invalid SANDBOXD_SANDBOX_UID, reported only by the commands that
	 * load the catalogue (help, --version and check do not need it) and
	 * forgotten when --sandbox-uid overrides it. */
	struct sbx_error *uid_error;
};

struct cmd_entry {
	const char *name;
	const char *usage;   /* arguments after the name */
	const char *summary; /* one line for `sbxcat help` */
	int (*exec)(struct sbx_ctx *ctx, int argc, char **argv);
};

/* Options every command accepts, before or after its name. */
#define COMMON_SHORTOPTS "C:h"
#define COMMON_LONGOPTS                                                        \
	{"catalog", required_argument, NULL, 'C'},                             \
	    {"json", no_argument, NULL, 'J'},                                  \
	    {"sandbox-uid", required_argument, NULL, 'U'},                     \
	{                                                                      \
		"help", no_argument, NULL, 'h'                                 \
	}

/*
 * Handle a common option returned by getopt_long; returns 0 when handled,
 * or an exit status (2 after printing usage) when the option is unknown.
 * -h prints the command's usage and returns -1: exit 0.
 */
int cmd_common_option(struct sbx_ctx *ctx, const struct cmd_entry *cmd, int c,
		      const char *arg);
/*
 * Parse the options of a command that has only the common ones.  Returns
 * 0 with optind at the first operand, -1 after printing help (exit 0), or
 * an exit status.
 */
int cmd_parse_common(struct sbx_ctx *ctx, const struct cmd_entry *cmd, int argc,
		     char **argv);
int cmd_usage_error(const struct cmd_entry *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print a JSON document (stolen) on stdout, indented, with a newline. */
void cmd_print_json(json_t *doc);

/* Print an error as "sbxcat: message" and return its exit status. */
int cmd_report(struct sbx_error **err);

/* Print the catalogue's diagnostics on stderr, one per line. */
void cmd_print_diags(const struct catalog *cat);

/*
 * Load the catalogue (path overrides the global choice when not NULL).
 * Returns 0 when valid; otherwise prints the diagnostics and returns the
 * exit status (1 invalid, 3 unreadable).
 */
int cmd_load_catalog(struct sbx_ctx *ctx, const char *path,
		     struct catalog *cat);

/* Find alias, or print why not and return NULL. */
const struct runtime *cmd_find_runtime(const struct catalog *cat,
				       const char *alias);

/*
 * The shape shared by the commands that act on one runtime: common options,
 * one ALIAS operand (optional when may_default: then the default runtime),
 * a valid catalogue, the runtime found.  Returns 0 with *rt set, -1 after
 * printing help, or an exit status.  The caller releases cat either way.
 */
int cmd_runtime_operand(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
			int argc, char **argv, bool may_default,
			struct catalog *cat, const struct runtime **rt);

/* The path the catalogue is read from, resolved as brief section 2 says. */
const char *cmd_catalog_path(const struct sbx_ctx *ctx);

extern const struct cmd_entry cmd_check_entry;
extern const struct cmd_entry cmd_list_entry;
extern const struct cmd_entry cmd_dockerfile_entry;
extern const struct cmd_entry cmd_generate_entry;
extern const struct cmd_entry cmd_tag_entry;
extern const struct cmd_entry cmd_briefing_entry;
extern const struct cmd_entry cmd_prewarm_entry;
extern const struct cmd_entry cmd_compose_entry;

#endif

/*
 * cmd.h - what every subcommand shares: the command descriptor, the global
 * options, and the few helpers that talk to the user on its behalf (in
 * src/cli/cmd.c).
 *
 * Each src/cmd-NAME.c exports one `const struct cmd_entry cmd_NAME_entry`
 * and src/cli/sbxcat.c lists them all in its command table, the verbs of its
 * root entry.  A command with verbs (`sbxcat session open|ls|close`) has no
 * exec of its own but a table of verbs, each a cmd_entry whose parent is
 * the command: cmd_dispatch() parses the common options between the two
 * words, finds the verb (or says which it is not, with a did-you-mean) and
 * runs it; `sbxcat help session` and `sbxcat session --help` list them.
 *
 * Thread rule: the command line runs one command on one thread; nothing
 * here is for a thread of the service.
 */
#ifndef SBX_CMD_H
#define SBX_CMD_H

#include <getopt.h>
#include <stddef.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "basic/env.h"
#include "catalog/recipe.h"
#include "svc/svc.h"

struct catalog;
struct cmd_entry;
struct sbx_error;

/* Exit statuses shared by every command (brief section 2). */
enum {
	SBX_EXIT_OK = 0,
	SBX_EXIT_FAIL = 1,  /* the thing checked failed; refused */
	SBX_EXIT_USAGE = 2, /* bad command line, bad setting */
	SBX_EXIT_ENV = 3,   /* environment: unreadable file, engine, database */
};

/*
 * The one map from an error's kind to an exit status: not found,
 * conflict, refused and bad data 1; invalid 2; unavailable, timed out and
 * internal 3; cancelled 128 + the signal caught (sig.h).
 */
int cmd_kind_exit(int kind);
int cmd_exit_status(const struct sbx_error *err);

struct sbx_ctx {
	/* The environment, copied once at start; the service built from it
	 * (its configuration, read once: svc/svc-config.h). */
	struct sbx_env env;
	struct svc svc;
	const char *catalog_path; /* -C; NULL: the configuration's */
	bool json;
	/* --agent, --run: whom the audit's rows name (NULL: the
	 * environment's); --db goes into the configuration (svc-config.h). */
	const char *audit_agent, *audit_run;
	/* What cmd_setup made (CMD_NEEDS_CATALOG, CMD_NEEDS_CALL). */
	struct catalog *cat;
	struct svc_call call;
};

/*
 * One option of a command's table (struct cmd_entry's options): the
 * dispatcher builds getopt's tables from it, fills the command's options
 * structure, and refuses an option the verb does not take.
 */
enum cmd_opt_kind {
	CMD_OPT_FLAG,	/* bool at offset, set true */
	CMD_OPT_STRING, /* const char * at offset: the last one given */
	CMD_OPT_COUNT,	/* unsigned long long at offset, 1 to max (digits) */
	CMD_OPT_CALL,	/* call(...) parses each one given into offset */
};
struct cmd_option {
	const char *name; /* the long name, without "--" */
	int letter;	  /* its short form, or 0 */
	enum cmd_opt_kind kind;
	size_t offset;
	/* COUNT: 1 + the offset of a bool set when given (0: none). */
	size_t given;
	unsigned long long max; /* COUNT */
	/* CALL: parse arg (--name's value) into field, each time it is
	 * given (a list adds to it); 0, or an exit status after a usage
	 * error. */
	int (*call)(const struct cmd_entry *cmd, const char *name,
		    const char *arg, void *field);
	/* The verbs that take it, as bits of the command's own numbering of
	 * them (cmd_options_parse's verb); 0: every one. */
	unsigned verbs;
};
#define CMD_FLAG(n, l, type, field, v)                                         \
	{.name = (n), .letter = (l), .kind = CMD_OPT_FLAG,                     \
	 .offset = offsetof(type, field), .verbs = (v)}
#define CMD_STRING(n, l, type, field, v)                                       \
	{.name = (n), .letter = (l), .kind = CMD_OPT_STRING,                   \
	 .offset = offsetof(type, field), .verbs = (v)}
#define CMD_COUNT(n, type, field, has, mx, v)                                  \
	{.name = (n), .kind = CMD_OPT_COUNT, .offset = offsetof(type, field),  \
	 .given = offsetof(type, has) + 1, .max = (mx), .verbs = (v)}
#define CMD_CALL(n, type, field, fn, v)                                        \
	{                                                                      \
		.name = (n), .kind = CMD_OPT_CALL,                             \
		.offset = offsetof(type, field), .call = (fn), .verbs = (v)    \
	}
/* As CMD_CALL, with a short form. */
#define CMD_CALL_L(n, l, type, field, fn, v)                                   \
	{                                                                      \
		.name = (n), .letter = (l), .kind = CMD_OPT_CALL,              \
		.offset = offsetof(type, field), .call = (fn), .verbs = (v)    \
	}
#define CMD_OPTIONS_END {.name = NULL}

/* What a command needs done before its run (struct cmd_entry's needs),
 * after its options parsed: the dispatcher does it, in this order. */
enum {
	/* SANDBOXD_SANDBOX_UID valid unless --sandbox-uid replaced it. */
	CMD_NEEDS_UID = 1 << 0,
	/* ctx->cat: the catalogue loaded and valid (-C, SBXCAT_CATALOG or
	 * the default search); exit 1 or 3 with its diagnostics if not. */
	CMD_NEEDS_CATALOG = 1 << 1 | CMD_NEEDS_UID,
	/* ctx->call: the identity (--agent, --run, SBXCAT_AGENT_ID,
	 * SBXCAT_RUN_ID; the command sets the tenant), the signal flag as
	 * the cancel, warnings to stderr. */
	CMD_NEEDS_CALL = 1 << 2,
};

struct cmd_entry {
	const char *name;
	const char *usage;   /* arguments after the name */
	const char *summary; /* one line for `sbxcat help` */
	/* A command built on its option table: run gets the options
	 * structure (opts_size bytes, zeroed, filled from options) and the
	 * operands, min_args to max_args of them (max_args -1: any);
	 * missing, when set, is the message for too few.  Help (-h) and
	 * usage errors are the dispatcher's; needs (CMD_NEEDS_*) is done
	 * first.  run returns the exit status. */
	const struct cmd_option *options;
	size_t opts_size;
	int min_args, max_args;
	const char *missing;
	const char *excess; /* for too many: else "unexpected operand 'X'" */
	unsigned needs;
	int (*run)(struct sbx_ctx *ctx, void *opts, int nargs, char **args);
	/* argv[1..] are what follows the command's (or verb's) name; argv[0]
	 * is "sbxcat", the name getopt's messages begin with; getopt is reset. */
	int (*exec)(struct sbx_ctx *ctx, int argc, char **argv);
	/* A command with verbs: exec is NULL and verbs[0..nverbs) are its
	 * verbs, each with parent pointing back here. */
	const struct cmd_entry *const *verbs;
	size_t nverbs;
	const struct cmd_entry *parent;
	const char *epilog; /* a paragraph after the verbs in its help */
};

/*
 * The root entry: name "sbxcat", its verbs the command table.  main sets
 * it once before anything else here runs.
 */
void cmd_set_root(const struct cmd_entry *root);

/*
 * Run cmd with argv[0] its name: its exec, or for a command with verbs the
 * verb named after its common options.  Returns the exit status (0 after
 * printing help).
 */
int cmd_dispatch(struct sbx_ctx *ctx, const struct cmd_entry *cmd, int argc,
		 char **argv);

/*
 * `sbxcat help [COMMAND [VERB]]`: argv are the words after "help".  Prints
 * the help of what they name on stdout and returns 0, or 2 with a message.
 */
int cmd_help_command(int argc, char **argv);

/* The help of cmd: its usage, summary, verbs and epilog. */
void cmd_print_help(FILE *f, const struct cmd_entry *cmd);

/*
 * At exit: flush and close stdout as git does.  A write error (a full disk,
 * /dev/full) prints "sbxcat: write error on standard output: REASON" and
 * makes the status 3 (rc when worse); a closed pipe (EPIPE, with SIGPIPE
 * ignored by whoever started us) kills the program by SIGPIPE, quietly.
 */
int cmd_close_stdout(int rc);

/* A write to standard output failed with e: on EPIPE die by SIGPIPE, as
 * cmd_close_stdout does (the reader left; not an error); else return. */
void cmd_stdout_gone(int e);

/* Options every command accepts, before or after its name.  Commands'
 * own long options without a short form take values from 256 up; the
 * common ones are above OPT_COMMON. */
#define OPT_COMMON 0x1000
enum { OPT_AUDIT_DB = OPT_COMMON + 1, OPT_AUDIT_AGENT, OPT_AUDIT_RUN };
#define COMMON_SHORTOPTS "C:h"
#define COMMON_LONGOPTS                                                        \
	{"catalog", required_argument, NULL, 'C'},                             \
	    {"json", no_argument, NULL, 'J'},                                  \
	    {"sandbox-uid", required_argument, NULL, 'U'},                     \
	    {"db", required_argument, NULL, OPT_AUDIT_DB},                     \
	    {"agent", required_argument, NULL, OPT_AUDIT_AGENT},               \
	    {"run", required_argument, NULL, OPT_AUDIT_RUN},                   \
	{                                                                      \
		"help", no_argument, NULL, 'h'                                 \
	}

/*
 * Handle a common option returned by getopt_long; returns 0 when handled,
 * or an exit status (2 after printing usage) when the option is unknown.
 * -h prints the command's help (the root's when cmd is NULL) and returns
 * -1: exit 0.
 */
int cmd_common_option(struct sbx_ctx *ctx, const struct cmd_entry *cmd, int c,
		      const char *arg);
/*
 * Parse argv (argv[0] "sbxcat") by the table opts and the common options
 * into out, for verb (a bit of opts' verbs; 0 for a command without
 * verbs), named vname in the message for an option it does not take
 * ("'read' does not take --all").  Returns 0 with *first the index of the
 * first operand (getopt moves them to the end), -1 after printing help
 * (exit 0), or an exit status after a usage error.
 */
int cmd_options_parse(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
		      const struct cmd_option *opts, unsigned verb,
		      const char *vname, void *out, int argc, char **argv,
		      int *first);

/* The same, from argv[*first] on (0: from the start), stopping at the
 * first operand when stop (as getopt's '+'): for a command whose operands
 * and options mix in a way of its own (exec: KEY among the options, the
 * command after it). */
int cmd_options_parse_from(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
			   const struct cmd_option *opts, unsigned verb,
			   const char *vname, void *out, int argc, char **argv,
			   bool stop, int *first);

/* The set-up needs asks for (CMD_NEEDS_*): 0, or an exit status after
 * saying why not. */
int cmd_setup(struct sbx_ctx *ctx, unsigned needs);

int cmd_usage_error(const struct cmd_entry *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * An option's whole number from 1 to max, digits only; else a usage
 * error naming opt (returns 2).
 */
int cmd_parse_count(const struct cmd_entry *cmd, const char *opt,
		    const char *arg, unsigned long long max,
		    unsigned long long *out);

/*
 * Print a JSON document (stolen) on stdout, indented, with a newline.  Paths
 * and untrusted text go into documents through xjson.h.
 */
void cmd_print_json(json_t *doc);

/* Unix seconds as RFC 3339 UTC ("2026-12-01T10:00:00Z"); "-" for 0 or
 * less (the documents' times are svc_time_json's). */
void cmd_rfc3339(char out[32], long long t);

/* opt, else the environment's var; NULL when neither or empty (the
 * identity of a call: --agent, SBXCAT_AGENT_ID; --tenant, SBXCAT_TENANT). */
const char *cmd_identity(const char *opt, const char *var);
/* A warning on stderr ("sbxcat: warning: MSG"): struct svc_call's warn. */
void cmd_warn(void *arg, const char *msg);

/* Print an error as "sbxcat: message" and return its exit status
 * (cmd_exit_status). */
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
/* The runtime the operand names (args[0]), else, with none, the
 * catalogue's default: ctx->cat's (CMD_NEEDS_CATALOG); NULL after saying
 * why. */
const struct runtime *cmd_runtime_arg(const struct sbx_ctx *ctx, int nargs,
				      char **args);

/*
 * The display `sbxcat prewarm` draws (cmd-prewarm.c), for another
 * command's prewarm (session open's, when the engine lacks the image):
 * on stderr, live on a terminal, plain lines otherwise, the missing image
 * said first; with report, the report on stderr at the end.
 * cmd_prewarm_watch fills w; cmd_prewarm_unwatch frees what it made.
 */
struct svc_prewarm_watch;
void cmd_prewarm_watch(struct svc_prewarm_watch *w, bool report);
void cmd_prewarm_unwatch(struct svc_prewarm_watch *w);

/*
 * A configuration area's error (svc-config.h: recipe_err, ...) said as
 * any error is, its exit status returned; 0 when the area is configured.
 * An invalid SANDBOXD_SANDBOX_UID is reported this way only by the
 * commands that need the recipe (help, --version and check do not), and
 * forgotten when --sandbox-uid replaces it.
 */
int cmd_config_error(const struct sbx_error *area);

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
extern const struct cmd_entry cmd_session_entry;
extern const struct cmd_entry cmd_exec_entry;
extern const struct cmd_entry cmd_fs_entry;
extern const struct cmd_entry cmd_reap_entry;
extern const struct cmd_entry cmd_serve_entry;
extern const struct cmd_entry cmd_audit_entry;
extern const struct cmd_entry cmd_fleet_entry;

#endif

/*
 * t-cmd.c - the command layer (src/cli/cmd.c) with a fake command table: a
 * command with verbs dispatches to them, parses common options between the
 * words, prints its usage with exit 2 when the verb is missing, suggests
 * the nearest verb for a typo, and `help CMD [VERB]` lists and describes
 * them.  No real command has verbs yet, so this is where they are tested.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "tap.h"
#include "basic/util.h"

static char called[64];
static int called_argc;

static int exec_open(struct sbx_ctx *ctx, int argc, char **argv)
{
	snprintf(called, sizeof(called), "open %s %s", argv[0],
		 ctx->json ? "json" : "text");
	called_argc = argc;
	return 0;
}

static int exec_ls(struct sbx_ctx *ctx, int argc, char **argv)
{
	snprintf(called, sizeof(called), "ls");
	return 7;
}

/* A command on an option table: what the dispatcher filled. */
struct plain_opts {
	bool flag, has_n;
	const char *name;
	unsigned long long n;
};
static const struct cmd_option plain_options[] = {
    CMD_FLAG("flag", 'f', struct plain_opts, flag, 0),
    CMD_STRING("name", 0, struct plain_opts, name, 0),
    CMD_COUNT("n", struct plain_opts, n, has_n, 10, 0),
    CMD_OPTIONS_END,
};

static int run_plain(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct plain_opts *o = opts;

	(void)ctx;
	snprintf(called, sizeof(called), "plain f=%d name=%s n=%llu/%d %s",
		 o->flag, o->name ? o->name : "-", o->n, o->has_n,
		 nargs ? args[0] : "-");
	return 5;
}

extern const struct cmd_entry fake_session, fake_open, fake_ls;
static const struct cmd_entry *const session_verbs[] = {&fake_open, &fake_ls};
const struct cmd_entry fake_session = {
    .name = "session",
    .usage = "VERB [ARGS]",
    .summary = "manage sessions",
    .verbs = session_verbs,
    .nverbs = 2,
};
const struct cmd_entry fake_open = {.name = "open",
				    .usage = "ALIAS",
				    .summary = "open a session",
				    .exec = exec_open,
				    .parent = &fake_session};
const struct cmd_entry fake_ls = {.name = "ls",
				  .usage = "",
				  .summary = "list sessions",
				  .exec = exec_ls,
				  .parent = &fake_session};
static const struct cmd_entry fake_plain = {
    .name = "plain",
    .usage = "[X]",
    .summary = "no verbs",
    .options = plain_options,
    .opts_size = sizeof(struct plain_opts),
    .max_args = 1,
    .excess = "at most one X",
    .run = run_plain,
};
static const struct cmd_entry *const table[] = {&fake_plain, &fake_session};
static const struct cmd_entry root = {
    .name = "sbxcat",
    .usage = "COMMAND [ARGS]",
    .verbs = table,
    .nverbs = 2,
    .epilog = "epilog text",
};

struct result {
	int rc;
	char out[4096], err[4096];
};

static void slurp(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
}

/* Run `sbxcat WORDS...` (help when the first word is "help"), capturing
 * stdout and stderr. */
static struct result run(const char *words)
{
	static struct result r;
	struct sbx_ctx ctx = {0};
	char *copy = xstrdup(words), *argv[16];
	int argc = 0, o = dup(1), e = dup(2);
	FILE *fo = tmpfile(), *fe = tmpfile();

	argv[argc++] = (char *)"sbxcat";
	for (char *w = strtok(copy, " "); w && argc < 15; w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc] = NULL;
	called[0] = '\0';
	fflush(stdout);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	if (argc > 1 && strcmp(argv[1], "help") == 0)
		r.rc = cmd_help_command(argc - 2, argv + 2);
	else
		r.rc = cmd_dispatch(&ctx, &root, argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(o, 1);
	dup2(e, 2);
	close(o);
	close(e);
	slurp(fileno(fo), r.out, sizeof(r.out));
	slurp(fileno(fe), r.err, sizeof(r.err));
	fclose(fo);
	fclose(fe);
	free(copy);
	return r;
}

int main(void)
{
	struct result r;

	cmd_set_root(&root);

	r = run("session open x");
	is_int(r.rc, 0, "a verb runs");
	is_str(called, "open sbxcat text",
	       "the verb gets argv from its name on, argv[0] \"sbxcat\" for getopt's messages");
	is_int(called_argc, 2, "and its operands");
	r = run("session --json open x");
	is_str(called, "open sbxcat json",
	       "common options between command and verb are parsed");
	r = run("session ls");
	is_int(r.rc, 7, "the verb's exit status is the command's");

	r = run("session");
	is_int(r.rc, 2, "a command without its verb exits 2");
	ok(strstr(r.err, "sbxcat: 'session' needs a verb\n"
			 "usage: sbxcat session VERB [ARGS]\n") == r.err,
	   "and says so with its usage");
	ok(strstr(r.err, "\nverbs:\n  open ") && strstr(r.err, "\n  ls "),
	   "the usage lists the verbs");
	ok(r.out[0] == '\0', "usage errors go to stderr only");

	r = run("session opne");
	is_int(r.rc, 2, "an unknown verb exits 2");
	ok(strstr(r.err, "sbxcat: 'opne' is not a verb of 'sbxcat session'; "
			 "did you mean 'open'?\n") == r.err,
	   "an unknown verb: did you mean");
	r = run("session zzzzzz");
	ok(strstr(r.err, "sbxcat: 'zzzzzz' is not a verb of 'sbxcat "
			 "session'\n") == r.err,
	   "no suggestion when nothing is close");
	r = run("sesion ls");
	ok(strstr(r.err, "sbxcat: 'sesion' is not an sbxcat command; did you "
			 "mean 'session'?\n") == r.err,
	   "an unknown command: did you mean");

	r = run("help session");
	is_int(r.rc, 0, "help session exits 0");
	is_str(
	    r.out,
	    "usage: sbxcat session VERB [ARGS]\n  manage sessions\n\nverbs:\n"
	    "  open        ALIAS                  open a session\n"
	    "  ls                                 list sessions\n",
	    "help session lists the verbs");
	r = run("session --help");
	is_str(r.out, run("help session").out,
	       "session --help is the same as help session");
	r = run("help session open");
	is_str(r.out, "usage: sbxcat session open ALIAS\n  open a session\n",
	       "help session open describes the verb");
	r = run("help plain");
	is_str(r.out, "usage: sbxcat plain [X]\n  no verbs\n",
	       "help of a command without verbs");
	r = run("plain --help");
	is_int(r.rc, 0, "--help of a command without verbs exits 0");
	r = run("help plain x");
	is_int(r.rc, 2, "help of a verb of a command without verbs exits 2");
	r = run("help");
	ok(strstr(r.out,
		  "usage: sbxcat COMMAND [ARGS]\n\ncommands:\n  plain ") ==
		   r.out &&
	       strstr(r.out, "\n\nepilog text\n"),
	   "help lists the commands and the epilog");
	r = run("help nope");
	is_int(r.rc, 2, "help of an unknown command exits 2");
	/* A command on its option table. */
	r = run("plain --name x a -f --n 3");
	is_int(r.rc, 5, "an option-table command runs; its status is its own");
	is_str(called, "plain f=1 name=x n=3/1 a",
	       "options among operands fill its structure");
	r = run("plain");
	is_str(called, "plain f=0 name=- n=0/0 -",
	       "none given: zeroed, and a count's given flag stays down");
	r = run("plain --n 11");
	ok(r.rc == 2 && strstr(r.err, "--n '11': expected a number from 1 to 10") &&
	       !called[0],
	   "a count over its maximum: usage error, not run (%s)", r.err);
	r = run("plain a b");
	ok(r.rc == 2 && strstr(r.err, "sbxcat: at most one X\n") && !called[0],
	   "too many operands: its own message, not run");
	r = run("plain --bogus");
	ok(r.rc == 2 && strstr(r.err, "usage: sbxcat plain [X]") && !called[0],
	   "an unknown option: usage, not run");
	/* The kinds' exit statuses: the map and the tests' own agree. */
	for (int k = SBX_E_INTERNAL; k <= SBX_E_CANCELLED; k++) {
		struct sbx_error e = {.kind = (enum sbx_kind)k};

		is_int(cmd_kind_exit(k), tap_status(&e),
		       "kind '%s' exits as the tests expect",
		       sbx_kind_name((enum sbx_kind)k));
	}
	is_int(cmd_kind_exit(SBX_E_NOT_FOUND), SBX_EXIT_FAIL,
	       "not found: status 1");
	is_int(cmd_kind_exit(SBX_E_INVALID), SBX_EXIT_USAGE,
	       "invalid: status 2");
	is_int(cmd_kind_exit(SBX_E_UNAVAILABLE), SBX_EXIT_ENV,
	       "unavailable: status 3");
	return done_testing();
}

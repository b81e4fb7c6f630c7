/*
 * cmd-audit-web.c - sbxcat audit web: the auditor's page (serve/
 * auditweb.h, docs/audit.md "The auditor's page").  This file reads the
 * command line and the environment, owns the signals (SIGTERM and SIGINT
 * stop it) and waits; the page is serve/'s.  It needs the audit's
 * database and nothing else: no Docker socket, no workspace root.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "cli/cmd.h"
#include "serve/auditweb.h"

#define AUDIT_WEB_LISTEN "tcp:127.0.0.1:8091"
#define AUDIT_WEB_GRACE_MS 5000

extern const struct cmd_entry cmd_audit_web_entry;

struct web_opts {
	const char *listen, *auditors;
};

static const struct cmd_option web_options[] = {
    CMD_STRING("listen", 0, struct web_opts, listen, 0),
    CMD_STRING("auditors", 0, struct web_opts, auditors, 0),
    CMD_OPTIONS_END,
};

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	got_term = sig;
}

static void handle_signals(void)
{
	struct sigaction sa = {0};

	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int audit_web(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct cmd_entry *cmd = &cmd_audit_web_entry;
	struct web_opts *o = opts;
	struct auditpage_config c = {.svc = &ctx->svc, .log_fd = STDERR_FILENO};
	struct sbx_error *err = NULL;
	struct auditpage *ap;
	char *down = NULL;

	(void)nargs, (void)args;
	if (ctx->audit_agent || ctx->audit_run)
		return cmd_usage_error(cmd, "'web' does not take --%s",
				       ctx->audit_agent ? "agent" : "run");
	c.listen = o->listen
		       ? o->listen
		       : sbx_env_nonempty(&ctx->env, "SBXCAT_AUDIT_WEB_LISTEN");
	if (!c.listen)
		c.listen = AUDIT_WEB_LISTEN;
	if (strncmp(c.listen, "unix:", 5) && strncmp(c.listen, "tcp:", 4))
		return cmd_usage_error(cmd,
				       "--listen '%s': expected unix:PATH or "
				       "tcp:HOST:PORT",
				       c.listen);
	c.auditors_file =
	    o->auditors ? o->auditors
			: sbx_env_nonempty(&ctx->env, "SBXCAT_AUDITORS_FILE");
	if (!c.auditors_file)
		return cmd_usage_error(cmd, "which auditors? --auditors FILE "
					    "(SBXCAT_AUDITORS_FILE)");
	c.service_token = sbx_env_nonempty(&ctx->env, "SANDBOXD_TOKEN");
	handle_signals();
	if (auditpage_start(&ap, &c, &down, &err) < 0) {
		/* A bad file, a role that may write, no database
		 * configured: 2 (the kind invalid); an address that cannot
		 * be listened on: 3. */
		return cmd_report(&err);
	}
	if (down) {
		fprintf(stderr,
			"sbxcat audit web: the database does not answer now "
			"(%s): serving 503 until it does\n",
			down);
		free(down);
	}
	if (!strncmp(c.listen, "tcp:", 4))
		fprintf(stderr, "sbxcat audit web: listening on %s (port %u)\n",
			c.listen, auditpage_port(ap));
	else
		fprintf(stderr, "sbxcat audit web: listening on %s\n",
			c.listen);
	while (!got_term)
		pause();
	fprintf(stderr, "sbxcat audit web: stopping\n");
	auditpage_stop(ap, AUDIT_WEB_GRACE_MS);
	return 0;
}

const struct cmd_entry cmd_audit_web_entry = {
    .name = "web",
    .run = audit_web,
    .opts_size = sizeof(struct web_opts),
    .needs = CMD_NEEDS_CALL,
    .parent = &cmd_audit_entry,
    .usage = "--auditors FILE [--listen tcp:HOST:PORT|unix:PATH]",
    .summary = "the auditor's page: a read-only web view of the audit",
    .options = web_options,
    .epilog = "The auditors file (SBXCAT_AUDITORS_FILE): 'TENANT TOKEN' "
	      "or '* TOKEN' lines, mode 600. The address: --listen or "
	      "SBXCAT_AUDIT_WEB_LISTEN (default tcp:127.0.0.1:8091). The "
	      "database: as every audit verb's, with a role that can only "
	      "read (sbxcat audit migrate --reader ROLE). See docs/audit.md, "
	      "\"The auditor's page\".",
};

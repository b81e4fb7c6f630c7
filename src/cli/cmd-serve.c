/*
 * cmd-serve.c - sbxcat serve: the sandbox service (serve/serve.h,
 * docs/serve.md).  This file reads the command line and the environment,
 * owns the signals (SIGTERM and SIGINT drain and stop, SIGHUP reloads)
 * and waits; the service is serve/'s.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/env.h"
#include "basic/error.h"
#include "basic/text.h"
#include "cli/cmd.h"
#include "serve/http.h"
#include "serve/serve.h"

#define LISTEN_MAX 8

struct serve_opts {
	const char *listen[LISTEN_MAX];
	size_t nlisten;
	const char *token_file, *tenants, *grace, *metrics_token_file;
	const char *tls_cert, *tls_key;
};

static int opt_listen(const struct cmd_entry *cmd, const char *name,
		      const char *arg, void *field)
{
	struct serve_opts *o =
	    (struct serve_opts *)((char *)field - offsetof(struct serve_opts,
							   listen));

	if (strncmp(arg, "unix:", 5) != 0 && strncmp(arg, "tcp:", 4) != 0 &&
	    !http_listen_is_tls(arg))
		return cmd_usage_error(cmd,
				       "--listen '%s': expected unix:PATH, "
				       "tcp:HOST:PORT or https:HOST:PORT",
				       arg);
	if (o->nlisten == LISTEN_MAX)
		return cmd_usage_error(cmd, "at most %d --listen", LISTEN_MAX);
	o->listen[o->nlisten++] = arg;
	return 0;
}

static const struct cmd_option serve_options[] = {
    CMD_CALL("listen", struct serve_opts, listen, opt_listen, 0),
    CMD_STRING("token-file", 0, struct serve_opts, token_file, 0),
    CMD_STRING("tenants", 0, struct serve_opts, tenants, 0),
    CMD_STRING("metrics-token-file", 0, struct serve_opts, metrics_token_file,
	       0),
    CMD_STRING("grace", 0, struct serve_opts, grace, 0),
    CMD_STRING("tls-cert", 0, struct serve_opts, tls_cert, 0),
    CMD_STRING("tls-key", 0, struct serve_opts, tls_key, 0),
    CMD_OPTIONS_END,
};

static volatile sig_atomic_t got_term, got_hup;

static void on_term(int sig)
{
	got_term = sig;
}

static void on_hup(int sig)
{
	got_hup = 1;
}

static void handle_signals(void)
{
	struct sigaction sa = {0};

	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* A whole number of seconds from the environment (or the default);
 * -1 and a message when it is not one. */
static long long env_seconds(const struct sbx_env *env, const char *name,
			     long long def)
{
	const char *v = sbx_env_nonempty(env, name);
	unsigned long long n;

	if (!v)
		return def;
	if (!text_parse_uint(v, 1000000000ULL, &n)) {
		fprintf(stderr, "sbxcat: %s '%s' is not a whole number of "
				"seconds\n",
			name, v);
		return -1;
	}
	return (long long)n;
}

/* The addresses: --listen, else SANDBOXD_HOST/SANDBOXD_PORT. */
static char *default_listen(const struct sbx_env *env)
{
	const char *host = sbx_env_nonempty(env, "SANDBOXD_HOST");
	const char *port = sbx_env_nonempty(env, "SANDBOXD_PORT");

	return xasprintf("tcp:%s:%s", host ? host : "127.0.0.1",
			 port ? port : "8080");
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void wait_for_signals(struct serve *sv)
{
	while (!got_term) {
		pause();
		if (got_hup) {
			struct sbx_error *err = NULL;

			got_hup = 0;
			if (serve_reload(sv, &err) < 0) {
				/* What could not be read, each part. */
				for (const struct sbx_error *e = err->prev; e;
				     e = e->prev)
					fprintf(stderr,
						"sbxcat serve: reload: %s\n",
						e->msg);
				fprintf(stderr, "sbxcat serve: reload: %s\n",
					err->msg);
				sbx_error_free(&err);
			} else {
				fprintf(stderr, "sbxcat serve: reloaded the "
						"configuration\n");
			}
		}
	}
}

/* https: listeners and the certificate and key: each needs the other. */
static int check_tls(const struct serve_config *c)
{
	const char *https = NULL;

	for (size_t i = 0; i < c->nlisten; i++)
		if (http_listen_is_tls(c->listen[i]))
			https = c->listen[i];
	if (https && (!c->tls_cert_file || !c->tls_key_file))
		return cmd_usage_error(&cmd_serve_entry,
				       "--listen %s needs --tls-cert and "
				       "--tls-key (SBXCAT_TLS_CERT, "
				       "SBXCAT_TLS_KEY)",
				       https);
	if (!https && (c->tls_cert_file || c->tls_key_file))
		return cmd_usage_error(&cmd_serve_entry,
				       "--tls-cert and --tls-key "
				       "(SBXCAT_TLS_CERT, SBXCAT_TLS_KEY) need "
				       "a --listen https:HOST:PORT");
	return 0;
}

/* The service's settings from the options and the environment: the
 * exit status of a bad one, or 0. */
static int settings(struct sbx_ctx *ctx, const struct serve_opts *o,
		    struct serve_config *c, long long *grace)
{
	const struct sbx_env *env = &ctx->env;
	long long interval = env_seconds(env, "SANDBOXD_CLEANUP_INTERVAL", 300);
	long long workers = env_seconds(env, "SANDBOXD_MAX_WORKERS", 32);
	const char *token = sbx_env_nonempty(env, "SANDBOXD_TOKEN");
	int rc;

	*grace = env_seconds(env, "SBXCAT_SERVE_GRACE", 30);
	if (interval < 0 || *grace < 0 || workers < 0)
		return SBX_EXIT_USAGE;
	if (o->grace) {
		unsigned long long g;

		if (!text_parse_uint(o->grace, 3600, &g))
			return cmd_usage_error(&cmd_serve_entry,
					       "--grace '%s': expected 0 to "
					       "3600 seconds",
					       o->grace);
		*grace = (long long)g;
	}
	c->env = env;
	c->catalog_path = cmd_catalog_path(ctx);
	c->listen = o->listen;
	c->nlisten = o->nlisten;
	/* sandboxd's name, and the one the shipped compose files use. */
	c->token = token ? token : sbx_env_nonempty(env, "SANDBOXD_API_TOKEN");
	c->token_file = o->token_file
			    ? o->token_file
			    : sbx_env_nonempty(env, "SBXCAT_SERVE_TOKEN_FILE");
	c->tenants_file = o->tenants
			      ? o->tenants
			      : sbx_env_nonempty(env, "SBXCAT_SERVE_TENANTS");
	c->metrics_token_file =
	    o->metrics_token_file
		? o->metrics_token_file
		: sbx_env_nonempty(env, "SBXCAT_SERVE_METRICS_TOKEN_FILE");
	c->policy_file = sbx_env_nonempty(env, "SANDBOXD_POLICY_OVERRIDES");
	c->tls_cert_file = o->tls_cert
			       ? o->tls_cert
			       : sbx_env_nonempty(env, "SBXCAT_TLS_CERT");
	c->tls_key_file =
	    o->tls_key ? o->tls_key : sbx_env_nonempty(env, "SBXCAT_TLS_KEY");
	rc = check_tls(c);
	if (rc)
		return rc;
	c->default_tenant = sbx_env_nonempty(env, "SBXCAT_SERVE_TENANT");
	/* --agent/--run (SBXCAT_AGENT_ID, SBXCAT_RUN_ID), checked by
	 * cmd_setup (CMD_NEEDS_CALL): the agent and run of a request that
	 * names neither, by header or its session's default. */
	c->default_agent = ctx->call.agent;
	c->default_run = ctx->call.run;
	c->log_fd = STDERR_FILENO;
	c->cleanup_interval_s = (unsigned)interval;
	c->workers = (unsigned)workers;
	return 0;
}

static int cmd_serve(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	struct serve_opts *o = opts;
	cleanup_free char *deflt = NULL;
	struct serve_config c = {0};
	struct sbx_error *err = NULL;
	struct serve *sv;
	long long grace;
	int rc = settings(ctx, o, &c, &grace);

	(void)nargs, (void)args;
	if (rc)
		return rc;
	if (!c.nlisten) {
		deflt = default_listen(&ctx->env);
		c.listen = (const char *const *)&deflt;
		c.nlisten = 1;
	}
	raise_nofile();
	handle_signals();
	if (serve_start(&sv, &c, &err) < 0)
		return cmd_report(&err);
	fprintf(stderr, "sbxcat serve: listening on");
	for (size_t i = 0; i < c.nlisten; i++)
		fprintf(stderr, " %s", c.listen[i]);
	fprintf(stderr, "\n");
	wait_for_signals(sv);
	fprintf(stderr, "sbxcat serve: stopping (grace %lld s)\n", grace);
	serve_stop(sv, (unsigned)grace * 1000);
	fprintf(stderr, "sbxcat serve: stopped\n");
	return 0;
}

const struct cmd_entry cmd_serve_entry = {
    .name = "serve",
    .usage = "[--listen unix:PATH|tcp:HOST:PORT|https:HOST:PORT]... "
	     "[--tls-cert FILE --tls-key FILE] [--token-file FILE] "
	     "[--tenants FILE] [--metrics-token-file FILE] [--grace SECONDS]",
    .summary = "the sandbox service: sandboxd's HTTP wire",
    .options = serve_options,
    .opts_size = sizeof(struct serve_opts),
    .max_args = 0,
    .needs = CMD_NEEDS_UID | CMD_NEEDS_CALL,
    .run = cmd_serve,
    .epilog = "The service token comes from SANDBOXD_TOKEN or --token-file "
	      "(SBXCAT_SERVE_TOKEN_FILE); TCP is refused without one. "
	      "SANDBOXD_HOST and SANDBOXD_PORT give the default address "
	      "(127.0.0.1:8080). --metrics-token-file "
	      "(SBXCAT_SERVE_METRICS_TOKEN_FILE) names a token that reads "
	      "/metrics and nothing else. Tokens come in X-Sandbox-Token or "
	      "Authorization: Bearer. The audit's agent and run of a request: "
	      "its X-Sandbox-Agent and X-Sandbox-Run headers, else its "
	      "session's (POST /sessions' agent and run), else --agent and "
	      "--run. https:HOST:PORT serves TLS with --tls-cert (PEM, the "
	      "chain after the certificate) and --tls-key (PEM, mode 600), "
	      "or SBXCAT_TLS_CERT and SBXCAT_TLS_KEY. SIGTERM drains and "
	      "stops, SIGHUP reloads the catalogue, the policy, the metrics "
	      "token and the TLS certificate and key. See docs/serve.md and "
	      "sbxcat(1).",
};

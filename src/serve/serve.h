/*
 * serve.h - `sbxcat serve`: the sandbox service, speaking sandboxd's wire
 * (shared/design/sandboxd-wire.md, docs/serve.md) over the HTTP server of
 * http.h, with the operations of svc/ behind every route.
 *
 * What it keeps while it runs: the configuration and the catalogue as a
 * snapshot (struct serve_snap) that a request holds for its length and
 * SIGHUP or PUT /policy replace (requests in flight keep the one they
 * began with); the service token and the tenants' tokens (as SHA-256);
 * the ids being opened now (a second open of one is a conflict); the runs
 * in flight by run_id (so a stop finds its run); the reaper's thread.
 * What it keeps on disk, so a restart finds it: the sessions' records and
 * their tokens' hashes (session/session-wire.h), the audit's spool, and
 * the policy overrides (SANDBOXD_POLICY_OVERRIDES).
 *
 * Thread rule: serve_start, serve_reload and serve_stop are called by one
 * thread (the command's); handlers run on the HTTP server's workers, any
 * number at once; what they share here is under serve's mutex, or
 * atomic.
 */
#ifndef SBX_SERVE_H
#define SBX_SERVE_H

#include <stdbool.h>
#include <stddef.h>

struct sbx_env;
struct sbx_error;

struct serve_config {
	const struct sbx_env *env;
	const char *catalog_path;
	/* "unix:PATH", "tcp:HOST:PORT", "https:HOST:PORT" */
	const char *const *listen;
	size_t nlisten;
	/* The service token itself, or the file that holds it (its first
	 * line; refused when group or others may read it).  Neither: no
	 * service token, and no TCP. */
	const char *token, *token_file;
	const char *tenants_file; /* NULL: none */
	/* The scrape-only token's file (the token file's rules), read at
	 * start and at every reload; NULL: none. */
	const char *metrics_token_file;
	const char *policy_file;  /* SANDBOXD_POLICY_OVERRIDES, or NULL */
	/* The https: listeners' certificate (PEM, its chain after it) and
	 * key (PEM, not encrypted, a file neither group nor others may
	 * read), read at start and at every reload; NULL: none. */
	const char *tls_cert_file, *tls_key_file;
	/* SBXCAT_SERVE_TENANT: the tenant of an open naming none; NULL:
	 * such an open is no tenant's (SVC_WIRE_NO_TENANT). */
	const char *default_tenant;
	/* `serve --agent`/`--run` (SBXCAT_AGENT_ID, SBXCAT_RUN_ID): the
	 * agent and run of a request that names neither by header nor by
	 * its session's default; NULL: none.  The caller checks them
	 * (svc_id_check, naming the flag); serve_start refuses a bad one
	 * too. */
	const char *default_agent, *default_run;
	unsigned cleanup_interval_s; /* 0: no reaper */
	int log_fd;		     /* the access log and warnings */
	/* HTTP limits (http.h; 0: its defaults). */
	size_t max_body_bytes;
	unsigned max_connections, idle_timeout_s, request_timeout_s;
	unsigned workers;
};

struct serve;
/* Read the tokens, the catalogue and the policy, and listen: -1 with
 * *err saying what (nothing then listens). */
int serve_start(struct serve **sv, const struct serve_config *c,
		struct sbx_error **err);
/* SIGHUP: the catalogue, the policy, the metrics token and the TLS
 * certificate and key read again;
 * what cannot be read keeps the one in use: -1 with *err saying why
 * (and /metrics and /healthz say the reload failed). */
int serve_reload(struct serve *sv, struct sbx_error **err);
/* SIGTERM: stop accepting, finish within grace_ms (then stop what still
 * runs), the audit's rows written, everything freed. */
void serve_stop(struct serve *sv, unsigned grace_ms);

#endif

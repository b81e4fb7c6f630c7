/*
 * serve-int.h - what the files of the service share (serve.c, wire.c,
 * wire-ops.c, wire-json.c); private to src/serve.
 *
 * Thread rule: as serve.h: struct serve's mutable members under its
 * mutex (lock), counters atomic; a snapshot is read-only once made and
 * freed by its last holder.
 */
#ifndef SBX_SERVE_INT_H
#define SBX_SERVE_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "catalog/catalog.h"
#include "serve/http.h"
#include "serve/serve.h"
#include "svc/svc-session.h"
#include "svc/svc-wire.h"
#include "svc/svc.h"

struct strbuf;

/* The policy a request sees: the configuration (svc), the catalogue,
 * and what PUT /policy changed (overrides, a PolicyUpdate object). */
struct serve_snap {
	atomic_int refs;
	struct svc svc;
	struct catalog cat;
	struct sbx_error *cat_err; /* the catalogue could not be read */
	json_t *overrides;
	char *default_runtime; /* NULL: the catalogue's first */
};

struct serve_tenant {
	char hash[65]; /* SHA-256 of the token, hex */
	char *tenant;
};

/* A run in flight: its session's key and its id, together. */
struct serve_run {
	char key[SVC_SESSION_KEY_MAX + 1];
	char id[33];
	atomic_int *cancel;
};

/* A session's token, known good (or bad, for a while) without a look at
 * its record (serve_token_check). */
struct serve_token {
	char id[65];
	char hash[65];
	long long at; /* when it was learnt: the oldest is forgotten first */
};

/* A session's usage, sampled at (serve_usage_get). */
struct serve_usage {
	char key[SVC_SESSION_KEY_MAX + 1];
	long long at;
	struct svc_wire_usage u;
};

struct serve {
	const struct sbx_env *env;
	char *catalog_path, *policy_file, *default_tenant;
	char *metrics_token_file; /* NULL: no scrape-only token */
	char *tls_cert_file, *tls_key_file; /* NULL: no https: */
	char service_hash[65];	  /* "" when no service token */
	char *default_agent, *default_run; /* serve_config's, or NULL */
	struct serve_tenant *tenants;
	size_t ntenants;
	struct http_server *http;
	int log_fd;
	/* What every snapshot shares: the audit's writer and pool, started
	 * once on this svc (svc_audit_serve_start). */
	struct svc base;
	bool base_audit;

	pthread_mutex_t lock;
	struct serve_snap *snap;
	char **opening; /* ids being opened now */
	size_t nopening, aopening;
	struct serve_run *runs;
	size_t nruns, aruns;
	/* Session tokens known good and known bad (bad ones for
	 * TOKEN_BAD_MS), and the lookups of the others in this second. */
	struct serve_token *good, *bad;
	size_t ngood, agood, nbad, abad;
	long long miss_second;
	unsigned misses;
	/* Usage samples, SERVE_USAGE_MS each. */
	struct serve_usage *usage;
	size_t nusage, ausage;
	/* The route table with the caps set at start (write's). */
	struct http_route *routes;

	/* The reaper. */
	pthread_t reaper;
	bool reaper_started;
	pthread_cond_t wake;
	bool stopping;
	unsigned interval_s;

	/* The warm pool's refill, off the request path: woken by every
	 * open (serve_pool_kick) and a reload, else every few seconds. */
	pthread_t pooler;
	bool pooler_started, pool_kicked;
	bool pool_reloaded; /* a snapshot the pool was not tidied under */
	pthread_cond_t pool_wake;
	atomic_ullong pool_fills, pool_made;

	/* /healthz's session counts, kept HEALTH_CACHE_MS: a probe that
	 * needs no token must not make each request list the engine. */
	long long health_at;
	size_t health_running, health_open;

	/* Under lock: the scrape-only token's hash ("" when none: read
	 * again at reload); whether the last reload (or the start) read
	 * everything, and when one last did (Unix seconds). */
	char metrics_hash[65];
	bool reload_ok;
	double reload_ok_at;
	double started_at; /* Unix seconds, at serve_start */

	/* The E2B front's settings (docs/e2b.md), read once at start:
	 * SBXCAT_E2B_TEMPLATES "NAME=ALIAS,..." (templates naming
	 * runtimes), SBXCAT_E2B_MAX_TIMEOUT and
	 * SBXCAT_E2B_PAUSED_RETENTION (seconds), SBXCAT_E2B_DOMAIN (the
	 * Sandbox's domain; NULL: null). */
	struct serve_e2b_template {
		char *name, *runtime;
	} * e2b_templates;
	size_t ne2b_templates;
	long long e2b_max_timeout, e2b_retention;
	char *e2b_domain;

	/* The fleet (serve-fleet.c): NULL without SBXCAT_FLEET; its
	 * lease's thread; whether its row says it drains. */
	struct svc_fleet *fleet;
	pthread_t fleeter;
	bool fleet_started;
	pthread_cond_t fleet_wake;
	atomic_bool fleet_draining;
	/* Since when its lease has been renewed without a failure (ms; 0:
	 * the last renewal failed): the lease's thread's alone. */
	long long fleet_ok_since;
	atomic_ullong fleet_forwards, fleet_unreachable;
	/* Counters for /metrics. */
	atomic_ullong engine_errors, reaps, reap_failures, opens, closes;
};

/* The snapshot in use, held (serve_snap_put releases it). */
struct serve_snap *serve_snap_get(struct serve *sv);
void serve_snap_put(struct serve_snap *snap);
/* A new snapshot from the environment, the catalogue and overrides (a
 * PolicyUpdate, borrowed; NULL: none): -1 when the overrides cannot be
 * applied (*err says which field). */
int serve_snap_make(struct serve *sv, json_t *overrides,
		    struct serve_snap **out, struct sbx_error **err);
/* Put snap in use (taking the caller's reference). */
void serve_snap_set(struct serve *sv, struct serve_snap *snap);

/* Wake the pool's refill (an open may have claimed a container). */
void serve_pool_kick(struct serve *sv);

/* Who a request's token (wire.c: X-Sandbox-Token, else Authorization:
 * Bearer) says it is.  SERVE_METRICS, the scrape-only token, reads
 * /metrics and nothing else. */
enum serve_who { SERVE_NOBODY, SERVE_SERVICE, SERVE_TENANT, SERVE_METRICS };
struct serve_auth {
	enum serve_who who;
	const char *tenant; /* SERVE_TENANT's, borrowed from serve */
};
void serve_auth(struct serve *sv, const char *token, struct serve_auth *a);

/* The ids being opened: 0 when id was not and now is, -1 when it is. */
int serve_opening_add(struct serve *sv, const char *id);
void serve_opening_del(struct serve *sv, const char *id);
/* The runs in flight, by session key and run id together (a run id
 * names a run of its session only): a run registered with its cancel
 * flag (-1: that session runs that id already); stop sets it
 * (SVC_CANCEL_STOP) when the run is there (true). */
int serve_run_add(struct serve *sv, const char *key, const char *id,
		  atomic_int *cancel);
void serve_run_del(struct serve *sv, const char *key, const char *id);
bool serve_run_stop(struct serve *sv, const char *key, const char *id);

/*
 * Whether token is one of session id's, quickly enough for
 * libmicrohttpd's thread (wire_admit): 1 yes, 0 no, -1 cannot tell now.
 * Known tokens are in memory (learnt at open, and from a lookup); a
 * token not known is looked up in the session's record, at most
 * TOKEN_LOOKUPS_PER_S a second over the whole service (past it: -1),
 * and a bad one remembered for TOKEN_BAD_MS.  The worker checks the
 * record again: a token of a session closed meanwhile is still refused.
 */
int serve_token_check(struct serve *sv, const char *id, const char *token);
void serve_token_remember(struct serve *sv, const char *id, const char *token);
void serve_token_forget(struct serve *sv, const char *id);

/* A session's usage sampled less than SERVE_USAGE_MS ago (true), and
 * one to keep. */
#define SERVE_USAGE_MS 5000
bool serve_usage_get(struct serve *sv, const char *key,
		     struct svc_wire_usage *u);
void serve_usage_put(struct serve *sv, const char *key,
		     const struct svc_wire_usage *u);

/* The routes (wire.c). */
extern const struct http_route serve_routes[];
extern const size_t serve_nroutes;

/* The sandboxd policy document of snap (GET /policy). */
json_t *serve_policy_json(const struct serve_snap *snap);
/* Check a PolicyUpdate: 0, or -1 with status (400: an unknown alias,
 * why its detail; 422: field, the top-level field, and why). */
int serve_policy_check(const struct serve_snap *snap, json_t *upd,
		       int *status, struct strbuf *field, struct strbuf *why);
/* Merge upd into overrides (new reference). */
json_t *serve_policy_merge(json_t *overrides, json_t *upd);

/* The metrics of the service beyond the HTTP server's. */
void serve_metrics(struct serve *sv, struct strbuf *out);
/* The last reload's outcome (the start's until SIGHUP): whether it
 * read everything, and when one last did (Unix seconds). */
void serve_reload_state(struct serve *sv, bool *ok, double *ok_at);

/* A file of secrets (serve.c): a regular file, not a symlink, that
 * neither group nor others may read, at most max bytes. */
int serve_read_secret_file(const char *path, size_t max, char **data,
			   struct sbx_error **err);

#endif

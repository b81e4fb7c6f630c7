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

struct serve_run {
	char id[33];
	atomic_int *cancel;
};

struct serve {
	const struct sbx_env *env;
	char *catalog_path, *policy_file, *default_tenant;
	char service_hash[65]; /* "" when no service token */
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

/* Who a request's X-Sandbox-Token says it is. */
enum serve_who { SERVE_NOBODY, SERVE_SERVICE, SERVE_TENANT };
struct serve_auth {
	enum serve_who who;
	const char *tenant; /* SERVE_TENANT's, borrowed from serve */
};
void serve_auth(struct serve *sv, const char *token, struct serve_auth *a);

/* The ids being opened: 0 when id was not and now is, -1 when it is. */
int serve_opening_add(struct serve *sv, const char *id);
void serve_opening_del(struct serve *sv, const char *id);
/* The runs in flight: a run registered with its cancel flag; stop sets
 * it (SVC_CANCEL_STOP) when the run is there (true). */
int serve_run_add(struct serve *sv, const char *id, atomic_int *cancel);
void serve_run_del(struct serve *sv, const char *id);
bool serve_run_stop(struct serve *sv, const char *id);

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

#endif

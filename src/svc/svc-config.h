/*
 * svc-config.h - the configuration, read once at start into one structure
 * (docs/hacking.md "Configuration"; each variable and its default is in
 * docs/sessions.md, docs/audit.md, docs/prewarm.md and sbxcat(1)).
 *
 * svc_config_load reads every setting from an environment copy
 * (basic/env.h) and never fails as a whole: a setting that is wrong
 * leaves its area's error set (session_err, engine_err, ...), and the
 * first operation that needs the area reports it, so a bad
 * SANDBOXD_MEM_LIMIT does not stop `sbxcat check`.  The caller may then
 * override what its own options say (svc_config_set_uid, ...).
 *
 * Per-request identity (tenant, agent, run) is never here: it is a
 * parameter of each call (svc.h, struct svc_call).
 *
 * Thread rule: loaded by one thread, then read-only.
 */
#ifndef SBX_SVC_CONFIG_H
#define SBX_SVC_CONFIG_H

#include "audit/audit.h"
#include "basic/env.h"
#include "catalog/recipe.h"
#include "engine/engine.h"
#include "session/session.h"

struct sbx_error;

struct svc_config {
	/* The catalogue: SBXCAT_CATALOG (NULL: the default search). */
	char *catalog_path;
	/* Recipes: SANDBOXD_SANDBOX_UID. */
	struct recipe_opts recipe;
	struct sbx_error *recipe_err;
	/* The deployment: SBXCAT_DEPLOYMENT_ID (checked), else "default". */
	char *deployment;
	struct sbx_error *deployment_err;
	/* Sessions, workspaces, lifetimes: SANDBOXD_*, SBXCAT_KEY_SECRET*,
	 * SBXCAT_SESSION_NETWORK. */
	struct session_config session;
	struct sbx_error *session_err;
	/* The Docker engine: DOCKER_*, SBXCAT_ENGINE_*. */
	struct engine_config engine;
	struct sbx_error *engine_err;
	/* The audit: the database, the spool, on or off. */
	struct audit_config audit;
	struct sbx_error *audit_err;
	/* The registry prewarm pulls built runtimes from (docs/prewarm.md
	 * "Through a registry"): SBXCAT_REGISTRY ("HOST:PORT", checked;
	 * NULL: none; set and invalid, registry_err says why),
	 * SBXCAT_REGISTRY_AUTH_FILE (the credentials' file,
	 * read when used; NULL: none), SBXCAT_REGISTRY_IDLE (seconds a
	 * transfer may be silent). */
	char *registry, *registry_auth_file;
	long registry_idle_ms;
	struct sbx_error *registry_err;
	/* The audit's retention: OPERATION_RETENTION_DAYS (0: unset). */
	long long retention_days;
	struct sbx_error *retention_err;
};

/*
 * The session area's settings, and the limits every sandbox gets, under
 * svc's names: the front ends (serve/'s policy) read them and name
 * nothing of session/ (tests/layers.py).
 */
typedef struct session_config svc_session_config;
extern const long long svc_sandbox_nano_cpus;
extern const long long svc_sandbox_pids_limit;

void svc_config_load(struct svc_config *c, const struct sbx_env *env);
void svc_config_release(struct svc_config *c);

/*
 * The error of an area, as a new error the caller owns (a copy: the
 * configuration stays as it is for the next call), or 0 when the area is
 * configured.  Returns -1 with *err set.
 */
int svc_config_check(const struct sbx_error *area, struct sbx_error **err);

/* A registry push and pull take a transfer silent this long for a stall. */
#define SVC_REGISTRY_IDLE_SECONDS 120

/*
 * Is s a registry's address as sbxcat takes one: HOST:PORT, HOST a DNS
 * name or an IPv4 address, PORT 1 to 65535 (what the engine reads as a
 * registry and never as a Docker Hub user)?  what names it in the
 * message ("SBXCAT_REGISTRY", "--push"); the error is kind.
 */
int svc_registry_check(const char *s, const char *what, enum sbx_kind kind,
		       struct sbx_error **err);

/* An override from the caller's own options (a --sandbox-uid): the uid,
 * with any error of SANDBOXD_SANDBOX_UID forgotten. */
void svc_config_set_uid(struct svc_config *c, unsigned long uid);

#endif

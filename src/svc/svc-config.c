/*
 * svc-config.c - the configuration read once (svc-config.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "basic/util.h"
#include "catalog/deployment.h"
#include "session/session-engine.h"
#include "svc/svc-config.h"

const long long svc_sandbox_nano_cpus = SESSION_NANO_CPUS;
const long long svc_sandbox_pids_limit = SESSION_PIDS_LIMIT;

/* OPERATION_RETENTION_DAYS: a whole number of days, 1 to 20000, as
 * `audit sweep --days` takes one (digits only, leading zeros allowed). */
static int retention_load(struct svc_config *c, const struct sbx_env *env,
			  struct sbx_error **err)
{
	const char *v = sbx_env_nonempty(env, "OPERATION_RETENTION_DAYS");
	unsigned long long x = 0;

	c->retention_days = 0;
	if (!v)
		return 0;
	if (text_parse_uint(v, 20000, &x) && x >= 1) {
		c->retention_days = (long long)x;
		return 0;
	}
	{
		struct strbuf sb = STRBUF_INIT;

		text_add_escaped(&sb, v, strlen(v));
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "OPERATION_RETENTION_DAYS '%s': expected a "
			      "number from 1 to 20000",
			      strbuf_str(&sb));
		strbuf_release(&sb);
	}
	return -1;
}

int svc_registry_check(const char *s, const char *what, enum sbx_kind kind,
		       struct sbx_error **err)
{
	const char *colon = strrchr(s, ':');
	size_t hlen = colon ? (size_t)(colon - s) : 0;
	unsigned long long port = 0;
	bool good = colon && hlen >= 1 && hlen <= 253 &&
		    text_parse_uint(colon + 1, 65535, &port) && port >= 1;

	/* Labels of letters, digits and '-', not at either end, joined by
	 * single dots: an IPv4 address is such a name too. */
	for (size_t i = 0; good && i < hlen; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');
		bool edge = i == 0 || s[i - 1] == '.';
		bool last = i + 1 == hlen || s[i + 1] == '.';

		if (c == '.')
			good = !edge && !last;
		else if (c == '-')
			good = !edge && !last;
		else
			good = alnum;
	}
	if (good)
		return 0;
	{
		struct strbuf sb = STRBUF_INIT;
		size_t n = strlen(s);

		text_add_escaped(&sb, s, utf8_whole(s, n > 80 ? 80 : n));
		sbx_error_set(err, kind, 0,
			      "%s '%s%s': expected HOST:PORT, a host name or "
			      "IPv4 address and a port (e.g. 10.0.0.5:5000)",
			      what, strbuf_str(&sb), n > 80 ? "..." : "");
		strbuf_release(&sb);
	}
	return -1;
}

/* SBXCAT_REGISTRY and the settings that go with it. */
static void registry_load(struct svc_config *c, const struct sbx_env *env)
{
	const char *reg = sbx_env_nonempty(env, "SBXCAT_REGISTRY");
	const char *auth = sbx_env_nonempty(env, "SBXCAT_REGISTRY_AUTH_FILE");
	const char *idle = sbx_env_nonempty(env, "SBXCAT_REGISTRY_IDLE");
	unsigned long long x = 0;

	c->registry_idle_ms = SVC_REGISTRY_IDLE_SECONDS * 1000L;
	c->registry_auth_file = auth ? xstrdup(auth) : NULL;
	/* Kept even when invalid: set, it is used, and then refused. */
	c->registry = reg ? xstrdup(reg) : NULL;
	if (reg && svc_registry_check(reg, "SBXCAT_REGISTRY", SBX_E_UNAVAILABLE,
				      &c->registry_err) < 0)
		return;
	if (!idle)
		return;
	if (text_parse_uint(idle, 86400, &x) && x >= 1) {
		c->registry_idle_ms = (long)x * 1000L;
		return;
	}
	{
		struct strbuf sb = STRBUF_INIT;

		text_add_escaped(
		    &sb, idle,
		    utf8_whole(idle, strlen(idle) > 80 ? 80 : strlen(idle)));
		sbx_error_set(&c->registry_err, SBX_E_UNAVAILABLE, 0,
			      "SBXCAT_REGISTRY_IDLE '%s': expected a number of "
			      "seconds from 1 to 86400",
			      strbuf_str(&sb));
		strbuf_release(&sb);
	}
}

void svc_config_load(struct svc_config *c, const struct sbx_env *env)
{
	const char *catalog = sbx_env_nonempty(env, "SBXCAT_CATALOG");
	const char *uid = sbx_env_get(env, "SANDBOXD_SANDBOX_UID");
	const char *dep = sbx_env_nonempty(env, "SBXCAT_DEPLOYMENT_ID");

	memset(c, 0, sizeof(*c));
	c->catalog_path = catalog ? xstrdup(catalog) : NULL;
	c->recipe.sandbox_uid = SANDBOX_UID_DEFAULT;
	if (uid && recipe_parse_uid(uid, &c->recipe.sandbox_uid,
				    &c->recipe_err) < 0)
		sbx_error_wrap(&c->recipe_err, "SANDBOXD_SANDBOX_UID");
	c->deployment = xstrdup(dep ? dep : DEPLOYMENT_DEFAULT);
	if (deployment_check(c->deployment, &c->deployment_err) < 0) {
		free(c->deployment);
		c->deployment = xstrdup(DEPLOYMENT_DEFAULT);
	}
	if (session_config_load(&c->session, env, &c->session_err) < 0)
		memset(&c->session, 0, sizeof(c->session));
	if (engine_config_load(&c->engine, env, &c->engine_err) < 0)
		engine_config_defaults(&c->engine);
	audit_config_load(&c->audit, env, &c->audit_err);
	retention_load(c, env, &c->retention_err);
	registry_load(c, env);
}

void svc_config_release(struct svc_config *c)
{
	free(c->catalog_path);
	sbx_error_free(&c->recipe_err);
	free(c->deployment);
	sbx_error_free(&c->deployment_err);
	session_config_release(&c->session);
	sbx_error_free(&c->session_err);
	engine_config_release(&c->engine);
	sbx_error_free(&c->engine_err);
	audit_config_release(&c->audit);
	sbx_error_free(&c->audit_err);
	sbx_error_free(&c->retention_err);
	free(c->registry);
	free(c->registry_auth_file);
	sbx_error_free(&c->registry_err);
	memset(c, 0, sizeof(*c));
}

int svc_config_check(const struct sbx_error *area, struct sbx_error **err)
{
	if (!area)
		return 0;
	sbx_error_set(err, area->kind, 0, "%s", area->msg);
	(*err)->errnum = area->errnum;
	(*err)->http = area->http;
	(*err)->reason = area->reason;
	if (area->hint)
		sbx_error_hint(*err, "%s", area->hint);
	return -1;
}

void svc_config_set_uid(struct svc_config *c, unsigned long uid)
{
	c->recipe.sandbox_uid = uid;
	sbx_error_free(&c->recipe_err);
}

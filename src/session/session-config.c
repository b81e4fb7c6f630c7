/*
 * session-config.c - the session settings from the environment
 * (session_config_load, session.h), and the durations they are written
 * in; sizes are basic/size.h's, the one grammar of every door.  Every
 * value is checked as it is read: a bad one is an invalid error naming
 * the variable.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "basic/alloc.h"
#include "basic/env.h"
#include "basic/error.h"
#include "basic/size.h"
#include "basic/text.h"
#include "catalog/catalog.h"
#include "catalog/deployment.h"
#include "session/session-budget.h"
#include "session/session-layout.h"
#include "session/session.h"

/* Status 2: VAR 'VALUE': expected. */
static int bad_value(struct sbx_error **err, const char *var, const char *v,
		     const char *expected)
{
	struct strbuf sb = STRBUF_INIT;
	int rc = sbx_error_set(err, SBX_E_INVALID, 0, "%s '%s': %s", var,
			       session_shown(&sb, v), expected);

	strbuf_release(&sb);
	return rc;
}

/* A variable's value; NULL when unset or empty (the default applies). */
static const char *env(const struct sbx_env *e, const char *name)
{
	return sbx_env_nonempty(e, name);
}

static int env_uint(const struct sbx_env *e, const char *var,
		    unsigned long long min, unsigned long long max,
		    unsigned long long *out, struct sbx_error **err)
{
	const char *v = env(e, var);
	unsigned long long x = 0;

	if (!v)
		return 0;
	if (text_parse_uint(v, max, &x) && x >= min) {
		*out = x;
		return 0;
	}
	{
		char expected[96];

		snprintf(expected, sizeof(expected),
			 "expected a whole number from %llu to %llu", min, max);
		return bad_value(err, var, v, expected);
	}
}

/* A size in the one grammar of sizes (basic/size.h), within b. */
static int env_size(const struct sbx_env *e, const char *var,
		    const struct size_bounds *b, unsigned long long *out,
		    struct sbx_error **err)
{
	const char *v = env(e, var);
	cleanup_free char *why = NULL;

	if (!v)
		return 0;
	why = size_parse(v, b, out);
	if (why)
		return sbx_error_set(err, SBX_E_INVALID, 0, "%s: %s", var, why);
	return 0;
}

static int env_bool(const struct sbx_env *e, const char *var, bool *out,
		    struct sbx_error **err)
{
	static const char *const no[] = {"0", "false", "no"};
	static const char *const yes[] = {"1", "true", "yes"};
	const char *v = env(e, var);

	if (!v)
		return 0;
	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
	}
	return bad_value(err, var, v,
			 "expected 1, true or yes (stop containers on close, "
			 "keep them), or 0, false or no (remove them)");
}

/* SANDBOXD_WORKSPACE_QUOTA, SANDBOXD_WORKSPACE_INODES and SBXCAT_MKFS,
 * within session-budget.h's bounds. */
static int budget_from_env(const struct sbx_env *e, struct session_config *c,
			   struct sbx_error **err)
{
	const char *mkfs = env(e, "SBXCAT_MKFS");
	unsigned long long kept = SESSION_KEPT_BUDGETS_DEFAULT;

	if (env_size(e, "SANDBOXD_WORKSPACE_QUOTA", &session_budget_bounds,
		     &c->disk_quota, err) < 0 ||
	    env_uint(e, "SANDBOXD_WORKSPACE_INODES", SESSION_INODES_MIN,
		     SESSION_INODES_MAX, &c->disk_inodes, err) < 0 ||
	    env_uint(e, "SANDBOXD_MAX_KEPT_BUDGETS_PER_TENANT", 1, 100000,
		     &kept, err) < 0)
		return -1;
	c->max_kept_budgets = (unsigned)kept;
	if (mkfs && mkfs[0] != '/')
		return bad_value(err, "SBXCAT_MKFS", mkfs,
				 "an absolute path (no search of PATH)");
	c->mkfs = xstrdup(mkfs ? mkfs : SESSION_MKFS_DEFAULT);
	return 0;
}

/*
 * The workspace root as configured: an absolute path of valid UTF-8
 * without control characters, no "." or ".." component (what the engine
 * binds must be what was checked), not "/" itself.  Repeated and trailing
 * slashes are dropped.
 */
static int root_from_env(const struct sbx_env *e, struct session_config *c,
			 struct sbx_error **err)
{
	const char *v = env(e, "SANDBOXD_WORKSPACE_ROOT");
	struct strbuf sb = STRBUF_INIT;
	uint32_t cp;
	size_t n;

	if (!v) {
		c->root = xstrdup(SESSION_ROOT_DEFAULT);
		return 0;
	}
	n = strlen(v);
	if (v[0] != '/' || n >= PATH_MAX || utf8_first_invalid(v, n) >= 0 ||
	    text_find_control(v, n, &cp))
		return bad_value(err, "SANDBOXD_WORKSPACE_ROOT", v,
				 "expected an absolute path, in UTF-8, "
				 "without control characters");
	for (const char *p = v; *p;) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if ((len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.')) {
			strbuf_release(&sb);
			return bad_value(err, "SANDBOXD_WORKSPACE_ROOT", v,
					 "expected a path without '.' or "
					 "'..' components");
		}
		if (len) {
			strbuf_addch(&sb, '/');
			strbuf_add(&sb, p, len);
		}
		p += len;
	}
	if (!sb.len)
		return bad_value(err, "SANDBOXD_WORKSPACE_ROOT", v,
				 "expected a directory below '/', not '/' "
				 "itself");
	c->root = strbuf_detach(&sb, NULL);
	return 0;
}

/*
 * A Docker network name as the engine accepts one
 * ([a-zA-Z0-9][a-zA-Z0-9_.-]*), but never "host": a session never shares
 * the host's network namespace (brief section 7).
 */
static int network_from_env(const struct sbx_env *e, struct session_config *c,
			    struct sbx_error **err)
{
	const char *v = env(e, "SBXCAT_SESSION_NETWORK");
	size_t n;

	if (!v) {
		c->network = xstrdup("bridge");
		return 0;
	}
	n = strlen(v);
	if (n > 128 ||
	    !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
		    "WXYZ0123456789",
		    v[0]) ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789_.-") != n)
		return bad_value(err, "SBXCAT_SESSION_NETWORK", v,
				 "expected a network name: 1 to 128 of "
				 "letters, digits, '_', '.', '-', beginning "
				 "with a letter or a digit");
	if (strcmp(v, "host") == 0)
		return bad_value(err, "SBXCAT_SESSION_NETWORK", v,
				 "a session never joins the host's network "
				 "namespace");
	c->network = xstrdup(v);
	return 0;
}

/* SBXCAT_EXEC_PATH: auto, fast or engine. */
static int exec_path_from_env(const struct sbx_env *e, struct session_config *c,
			      struct sbx_error **err)
{
	static const char *const names[] = {"auto", "fast", "engine"};
	const char *v = env(e, "SBXCAT_EXEC_PATH");

	c->exec_path = SESSION_EXEC_AUTO;
	if (!v)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(v, names[i]) == 0) {
			c->exec_path = (enum session_exec_path)i;
			return 0;
		}
	return bad_value(err, "SBXCAT_EXEC_PATH", v,
			 "expected auto, fast or engine");
}

/* The file SBXCAT_KEY_SECRET_FILE names: never through a symlink. */
static int secret_from_file(struct session_config *c, const char *path,
			    struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = session_shown(&sb, path);
	cleanup_free char *what = xasprintf("SBXCAT_KEY_SECRET_FILE '%s'", p);
	int fd, rc;

	fd = open(path,
		  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ELOOP)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "%s is a symlink; name the file itself",
				   what);
	else if (fd < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot open %s", what);
	else
		rc = session_secret_from_fd(c, fd, what, err);
	strbuf_release(&sb);
	return rc;
}

static int secret_from_env(const struct sbx_env *e, struct session_config *c,
			   struct sbx_error **err)
{
	const char *v = sbx_env_get(e, "SBXCAT_KEY_SECRET");
	const char *f = sbx_env_get(e, "SBXCAT_KEY_SECRET_FILE");

	/* Set but empty is a mistake (a template left blank), not "no
	 * secret": keys would silently become guessable. */
	if (v && f)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "SBXCAT_KEY_SECRET and "
				     "SBXCAT_KEY_SECRET_FILE are both set; "
				     "set one");
	if (v && !*v)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "SBXCAT_KEY_SECRET is set but empty");
	if (f && !*f)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "SBXCAT_KEY_SECRET_FILE is set but empty");
	if (f)
		return secret_from_file(c, f, err);
	if (v) {
		c->secret_len = strlen(v);
		c->secret = xmalloc(c->secret_len);
		memcpy(c->secret, v, c->secret_len);
	}
	return 0;
}

/* A duration in whole seconds, 1 to 10 years. */
static int env_seconds(const struct sbx_env *e, const char *var, long long *out,
		       struct sbx_error **err)
{
	unsigned long long v = (unsigned long long)*out;

	if (env_uint(e, var, 1, 10ull * 366 * 86400, &v, err) < 0)
		return -1;
	*out = (long long)v;
	return 0;
}

/* SANDBOXD_PAUSE_AFTER: as a duration, but 0 (pausing off) too. */
static int pause_from_env(const struct sbx_env *e, struct session_config *c,
			  struct sbx_error **err)
{
	unsigned long long v = (unsigned long long)c->pause_after;

	if (env_uint(e, "SANDBOXD_PAUSE_AFTER", 0, 10ull * 366 * 86400, &v,
		     err) < 0)
		return -1;
	c->pause_after = (long long)v;
	return 0;
}

/* The spill directory: one name at the workspace's top, not hidden by
 * accident of a slash or a dot-dot. */
static int spill_from_env(const struct sbx_env *e, struct session_config *c,
			  struct sbx_error **err)
{
	const char *v = env(e, "SANDBOXD_SPILL_DIR");
	uint32_t cp;

	if (!v)
		v = "large_tool_results";
	if (strchr(v, '/') || strcmp(v, ".") == 0 || strcmp(v, "..") == 0 ||
	    strlen(v) > 255 || text_find_control(v, strlen(v), &cp) != 0 ||
	    utf8_first_invalid(v, strlen(v)) >= 0)
		return bad_value(err, "SANDBOXD_SPILL_DIR", v,
				 "expected one directory name at the "
				 "workspace's top, such as large_tool_results");
	c->spill = xstrdup(v);
	return 0;
}

/*
 * SANDBOXD_WORK_DIR: an absolute path in the container, written once
 * (no "//", ".", "..", trailing "/"), since clients' paths are compared
 * with it as text; not "/" (the image's root), and not on what the
 * container gets besides its workspace (/tmp, its tmpfs) or from the
 * kernel (/proc, /sys, /dev), where a bind would hide or be hidden.
 */
const char *session_check_work_dir(const char *v)
{
	static const char *const theirs[] = {"/tmp", "/proc", "/sys", "/dev"};
	const char *p;
	uint32_t cp;

	if (v[0] != '/' || !v[1])
		return "expected an absolute path other than /, such as "
		       "/workspace";
	if (strlen(v) > SESSION_WORK_DIR_MAX ||
	    text_find_control(v, strlen(v), &cp) != 0 ||
	    utf8_first_invalid(v, strlen(v)) >= 0)
		return "expected at most 255 bytes of text without control "
		       "characters";
	for (p = v; *p; p += strcspn(p, "/")) {
		size_t n;

		p++;
		n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return "expected a path written once: no empty, . or "
			       ".. part, no / at its end";
	}
	for (size_t i = 0; i < sizeof(theirs) / sizeof(*theirs); i++) {
		size_t n = strlen(theirs[i]);

		if (strncmp(v, theirs[i], n) == 0 && (!v[n] || v[n] == '/'))
			return "expected a path outside /tmp, /proc, /sys "
			       "and /dev";
	}
	return NULL;
}

static int work_dir_from_env(const struct sbx_env *e,
			     struct session_config *c, struct sbx_error **err)
{
	const char *v = env(e, "SANDBOXD_WORK_DIR"), *why;

	if (!v)
		v = SESSION_WORK_DIR_DEFAULT;
	why = session_check_work_dir(v);
	if (why)
		return bad_value(err, "SANDBOXD_WORK_DIR", v, why);
	c->work_dir = xstrdup(v);
	return 0;
}

/*
 * One "ALIAS=N" or "ALIAS@WORK_DIR=N" of SBXCAT_WARM_POOL into c->pool,
 * or why not.  A work dir that is the configuration's is none (the
 * sessions that ask for it adopt the plain pool's).  The work dir is
 * before the last '=': a work dir may hold '=' (and '@'), never ','.
 */
static const char *pool_one(struct session_config *c, const char *item,
			    size_t len, size_t *alloc)
{
	const char *eq = memrchr(item, '=', len);
	const char *at = eq ? memchr(item, '@', (size_t)(eq - item)) : NULL;
	const char *why = NULL;
	unsigned long long n;
	char *alias, *num, *msg, *wd = NULL;

	if (!eq)
		return "expected ALIAS=COUNT or ALIAS@WORK_DIR=COUNT, "
		       "comma-separated";
	alias = xstrndup(item, (size_t)((at ? at : eq) - item));
	num = xstrndup(eq + 1, len - (size_t)(eq - item) - 1);
	if (at)
		wd = xstrndup(at + 1, (size_t)(eq - at - 1));
	msg = catalog_check_alias(alias);
	if (msg)
		why = "an alias is not a runtime alias";
	else if (!text_parse_uint(num, SESSION_POOL_MAX, &n))
		why = "a count is not a whole number from 0 to 64";
	else if (wd && session_check_work_dir(wd))
		why = "a work dir is not one SANDBOXD_WORK_DIR could be";
	free(msg);
	free(num);
	if (!why && wd && c->work_dir && strcmp(wd, c->work_dir) == 0) {
		free(wd);
		wd = NULL;
	}
	for (size_t i = 0; !why && i < c->npool; i++)
		if (strcmp(c->pool[i].alias, alias) == 0 &&
		    session_work_dir_same(c->pool[i].work_dir, wd))
			why = "a runtime is named twice for one work dir";
	if (why) {
		free(alias);
		free(wd);
		return why;
	}
	ALLOC_GROW(c->pool, c->npool + 1, *alloc);
	c->pool[c->npool].alias = alias;
	c->pool[c->npool].work_dir = wd;
	c->pool[c->npool++].count = (unsigned)n;
	return NULL;
}

static int pool_from_env(const struct sbx_env *e, struct session_config *c,
			 struct sbx_error **err)
{
	const char *v = env(e, "SBXCAT_WARM_POOL"), *p, *why = NULL;
	size_t alloc = 0;

	for (p = v; p && *p && !why;) {
		size_t len = strcspn(p, ",");

		why = pool_one(c, p, len, &alloc);
		p += len + (p[len] == ',');
	}
	return why ? bad_value(err, "SBXCAT_WARM_POOL", v, why) : 0;
}

int session_config_load(struct session_config *c, const struct sbx_env *e,
			struct sbx_error **err)
{
	unsigned long long per_tenant = 10, max = 20, timeout = 300;
	unsigned long long max_open = 0;
	const char *dep = env(e, "SBXCAT_DEPLOYMENT_ID");

	memset(c, 0, sizeof(*c));
	c->mem_limit = 1ull << 30;
	c->max_output = 10ull << 20;
	c->max_read = 8ull << 20;
	c->max_write = 64ull << 20;
	c->idle_timeout = 1800;
	/* Pause and unpause take about 7.5 ms each here (issue 19): five
	 * idle minutes cost an exec that comes back next to nothing. */
	c->pause_after = 300;
	c->container_ttl = 86400;
	if (root_from_env(e, c, err) < 0 ||
	    env_uint(e, "SANDBOXD_MAX_SESSIONS_PER_TENANT", 1, 100000,
		     &per_tenant, err) < 0 ||
	    env_uint(e, "SANDBOXD_MAX_SESSIONS", 1, 100000, &max, err) < 0 ||
	    env_size(e, "SANDBOXD_MEM_LIMIT", &size_memory, &c->mem_limit,
		     err) < 0 ||
	    env_uint(e, "SANDBOXD_EXECUTE_TIMEOUT", 1, 7 * 86400, &timeout,
		     err) < 0 ||
	    env_size(e, "SANDBOXD_MAX_OUTPUT_BYTES", &size_bytes,
		     &c->max_output, err) < 0 ||
	    env_bool(e, "SANDBOXD_PERSIST_CONTAINERS", &c->persist_containers,
		     err) < 0 ||
	    network_from_env(e, c, err) < 0 ||
	    exec_path_from_env(e, c, err) < 0 ||
	    env_size(e, "SANDBOXD_MAX_READ_BYTES", &size_bytes, &c->max_read,
		     err) < 0 ||
	    env_size(e, "SANDBOXD_MAX_WRITE_BYTES", &size_bytes, &c->max_write,
		     err) < 0 ||
	    spill_from_env(e, c, err) < 0 ||
	    work_dir_from_env(e, c, err) < 0 ||
	    env_seconds(e, "SANDBOXD_IDLE_TIMEOUT", &c->idle_timeout, err) <
		0 ||
	    pause_from_env(e, c, err) < 0 ||
	    env_seconds(e, "SANDBOXD_CONTAINER_TTL", &c->container_ttl, err) <
		0 ||
	    env_seconds(e, "SANDBOXD_WORKSPACE_TTL", &c->workspace_ttl, err) <
		0 ||
	    pool_from_env(e, c, err) < 0 ||
	    env_seconds(e, "SANDBOXD_EVICT_IDLE_AFTER", &c->evict_idle_after,
			err) < 0 ||
	    env_uint(e, "SANDBOXD_MAX_OPEN_SESSIONS", 1, 1000000, &max_open,
		     err) < 0 ||
	    budget_from_env(e, c, err) < 0)
		goto fail;
	if (max_open && max_open < max) {
		/* Every resident session is open: a bound below the
		 * resident ceiling could never be met. */
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "SANDBOXD_MAX_OPEN_SESSIONS (%llu) must be at "
			      "least SANDBOXD_MAX_SESSIONS (%llu): the open "
			      "sessions count the resident ones",
			      max_open, max);
		goto fail;
	}
	if (c->workspace_ttl && c->workspace_ttl <= c->idle_timeout) {
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "SANDBOXD_WORKSPACE_TTL (%lld s) must be longer "
			      "than SANDBOXD_IDLE_TIMEOUT (%lld s): a "
			      "workspace is deleted only once its session "
			      "has been stopped as idle",
			      c->workspace_ttl, c->idle_timeout);
		goto fail;
	}
	if (dep && deployment_check(dep, err) < 0) {
		/* A bad value, as the rest. */
		session_set_kind(err, SBX_E_INVALID);
		goto fail;
	}
	c->deployment = xstrdup(dep ? dep : DEPLOYMENT_DEFAULT);
	if (secret_from_env(e, c, err) < 0)
		goto fail;
	c->max_per_tenant = (unsigned)per_tenant;
	c->max_sessions = (unsigned)max;
	c->max_open = (unsigned)max_open;
	c->execute_timeout_s = (long)timeout;
	return 0;
fail:
	session_config_release(c);
	return -1;
}

void session_config_release(struct session_config *c)
{
	free(c->mkfs);
	free(c->root);
	free(c->network);
	free(c->deployment);
	free(c->spill);
	free(c->work_dir);
	for (size_t i = 0; i < c->npool; i++) {
		free(c->pool[i].alias);
		free(c->pool[i].work_dir);
	}
	free(c->pool);
	if (c->secret)
		OPENSSL_cleanse(c->secret, c->secret_len);
	free(c->secret);
	memset(c, 0, sizeof(*c));
}

/*
 * serve.c - the service's state (serve.h, serve-int.h): its tokens, the
 * snapshot of its policy, the ids being opened and the runs in flight,
 * the reaper's thread; start, reload and stop.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/env.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "basic/size.h"
#include "basic/util.h"
#include "serve/e2b.h"
#include "serve/serve-fleet.h"
#include "serve/serve-int.h"
#include "serve/wire.h"
#include "svc/svc-audit.h"
#include "svc/svc-pool.h"
#include "svc/svc-reap.h"
#include "svc/svc-wire.h"

#define TOKEN_FILE_MAX 4096
#define TENANTS_FILE_MAX (1 << 20)
#define POLICY_FILE_MAX (1 << 20)
/* Engine handles kept between requests: one per worker at most. */
#define ENGINES_KEPT 48
/* Session tokens kept known good: 8 of each open session (as many as a
 * session keeps, SESSION_WIRE_TOKENS) for some thousands of sessions;
 * past it the oldest learnt is forgotten (and looked up again). */
#define TOKENS_GOOD 8192
/* Wrong tokens remembered, each for TOKEN_BAD_MS: a client repeating one
 * costs no lookup. */
#define TOKENS_BAD 1024
#define TOKEN_BAD_MS 10000
/* Lookups of tokens not known, a second, over the service: each reads a
 * session's record on libmicrohttpd's thread (well under a millisecond
 * on a local disk), so a flood of made-up tokens costs that thread at
 * most a few per cent, and answers 503 with Retry-After past it. */
#define TOKEN_LOOKUPS_PER_S 100
/* Sessions whose usage is kept. */
#define USAGE_KEPT 1024

/* The wall clock in Unix seconds: what /metrics' timestamps say. */
static double clock_real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- snapshots ---- */

struct serve_snap *serve_snap_get(struct serve *sv)
{
	struct serve_snap *snap;

	pthread_mutex_lock(&sv->lock);
	snap = sv->snap;
	atomic_fetch_add(&snap->refs, 1);
	pthread_mutex_unlock(&sv->lock);
	return snap;
}

void serve_snap_put(struct serve_snap *snap)
{
	if (!snap || atomic_fetch_sub(&snap->refs, 1) != 1)
		return;
	svc_release(&snap->svc);
	catalog_release(&snap->cat);
	sbx_error_free(&snap->cat_err);
	json_decref(snap->overrides);
	free(snap->default_runtime);
	free(snap);
}

void serve_snap_set(struct serve *sv, struct serve_snap *snap)
{
	struct serve_snap *old;

	pthread_mutex_lock(&sv->lock);
	old = sv->snap;
	sv->snap = snap;
	pthread_mutex_unlock(&sv->lock);
	serve_snap_put(old);
}

/* What an override names, applied to the snapshot's configuration. */
static void apply_uint(json_t *o, const char *name, unsigned *to)
{
	json_t *v = json_object_get(o, name);

	if (v && json_is_integer(v))
		*to = (unsigned)json_integer_value(v);
}

static void apply_ll(json_t *o, const char *name, long long *to)
{
	json_t *v = json_object_get(o, name);

	if (v && json_is_integer(v))
		*to = (long long)json_integer_value(v);
}

static int apply_overrides(struct serve_snap *snap, json_t *o,
			   struct sbx_error **err)
{
	svc_session_config *c = &snap->svc.cfg.session;
	cleanup_free char *why = NULL;
	json_t *v;

	if (!o)
		return 0;
	apply_uint(o, "max_sessions", &c->max_sessions);
	apply_uint(o, "max_sessions_per_tenant", &c->max_per_tenant);
	apply_ll(o, "idle_timeout", &c->idle_timeout);
	apply_ll(o, "workspace_ttl", &c->workspace_ttl);
	apply_ll(o, "container_ttl", &c->container_ttl);
	if ((v = json_object_get(o, "execute_timeout")) && json_is_integer(v))
		c->execute_timeout_s = (long)json_integer_value(v);
	if ((v = json_object_get(o, "max_read_bytes")) && json_is_integer(v))
		c->max_read = (unsigned long long)json_integer_value(v);
	if ((v = json_object_get(o, "mem_limit")) && json_is_string(v) &&
	    (why =
		 size_parse(json_string_value(v), &size_memory, &c->mem_limit)))
		return sbx_error_set(err, SBX_E_INVALID, 0, "mem_limit: %s",
				     why);
	if ((v = json_object_get(o, "default_runtime")) && json_is_string(v))
		snap->default_runtime = xstrdup(json_string_value(v));
	return 0;
}

/* Each runtime's mem_limit of the overrides' "runtimes", checked as
 * the catalogue checks its own (a file edited by hand too). */
static int apply_runtimes(struct serve_snap *snap, json_t *o,
			  struct sbx_error **err)
{
	json_t *rts = json_object_get(o, "runtimes"), *v;
	const char *alias;

	json_object_foreach(rts, alias, v)
	{
		json_t *m = json_object_get(v, "mem_limit");
		unsigned long long bytes;
		cleanup_free char *why = NULL;

		if (!json_is_string(m))
			continue;
		why = size_parse(json_string_value(m), &size_memory, &bytes);
		if (why)
			return sbx_error_set(err, SBX_E_INVALID, 0,
					     "runtimes.%s.mem_limit: %s", alias,
					     why);
		for (size_t i = 0; i < snap->cat.n; i++)
			if (strcmp(snap->cat.rt[i].alias, alias) == 0) {
				free(snap->cat.rt[i].mem_limit);
				snap->cat.rt[i].mem_limit =
				    xstrdup(json_string_value(m));
			}
	}
	return 0;
}

int serve_snap_make(struct serve *sv, json_t *overrides,
		    struct serve_snap **out, struct sbx_error **err)
{
	struct serve_snap *snap = xcalloc(1, sizeof(*snap));
	struct sbx_error *secret_err = NULL;

	atomic_init(&snap->refs, 1);
	svc_init(&snap->svc, sv->env);
	/* Every request makes a key: the secret read once, not per request
	 * (a root that cannot be opened now is each request's to say). */
	if (svc_key_secret_load(&snap->svc, &secret_err) < 0)
		sbx_error_free(&secret_err);
	catalog_init(&snap->cat);
	if (svc_config_check(snap->svc.cfg.recipe_err, &snap->cat_err) == 0)
		catalog_load(&snap->cat, sv->catalog_path, &snap->cat_err);
	if (!snap->cat_err && !catalog_valid(&snap->cat)) {
		char *d = catalog_diag_format(&snap->cat, &snap->cat.diags[0]);

		sbx_error_set(&snap->cat_err, SBX_E_BAD_DATA, 0, "%s", d);
		free(d);
	}
	/* The audit's writer and pool are the service's, not the
	 * snapshot's: svc_release leaves them. */
	snap->svc.writer = sv->base.writer;
	snap->svc.pool = sv->base.pool;
	snap->svc.engines = sv->base.engines;
	snap->overrides = overrides ? json_incref(overrides) : NULL;
	if (apply_overrides(snap, overrides, err) < 0 ||
	    apply_runtimes(snap, overrides, err) < 0) {
		serve_snap_put(snap);
		return -1;
	}
	*out = snap;
	return 0;
}

/* ---- tokens ---- */

void serve_auth(struct serve *sv, const char *token, struct serve_auth *a)
{
	char hash[65], scrape_hash[65];
	bool service = false, scrape = false;
	const char *tenant = NULL;

	a->who = SERVE_NOBODY;
	a->tenant = NULL;
	if (!token)
		return;
	sha256_hex(token, strlen(token), hash);
	if (sv->service_hash[0])
		service = CRYPTO_memcmp(hash, sv->service_hash, 64) == 0;
	/* Every tenant compared, whichever matches. */
	for (size_t i = 0; i < sv->ntenants; i++)
		if (CRYPTO_memcmp(hash, sv->tenants[i].hash, 64) == 0)
			tenant = sv->tenants[i].tenant;
	/* The scrape token changes at a reload: a copy, under the lock. */
	pthread_mutex_lock(&sv->lock);
	memcpy(scrape_hash, sv->metrics_hash, sizeof(scrape_hash));
	pthread_mutex_unlock(&sv->lock);
	if (scrape_hash[0])
		scrape = CRYPTO_memcmp(hash, scrape_hash, 64) == 0;
	if (service)
		a->who = SERVE_SERVICE;
	else if (tenant) {
		a->who = SERVE_TENANT;
		a->tenant = tenant;
	} else if (scrape) {
		a->who = SERVE_METRICS;
	}
}

/* A file of secrets: a regular file, not a symlink, that neither group
 * nor others may read. */
static int read_secret_file(const char *path, size_t max, char **data,
			    struct sbx_error **err)
{
	struct stat st;
	size_t len;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	int rc;

	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "'%s' is not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "'%s' may be read by group or others "
				     "(mode %04o): chmod 600 it",
				     path, (unsigned)(st.st_mode & 07777));
	}
	rc = read_fd_limited(fd, path, max, data, &len, err);
	close(fd);
	return rc;
}

int serve_read_secret_file(const char *path, size_t max, char **data,
			   struct sbx_error **err)
{
	return read_secret_file(path, max, data, err);
}

static int set_service_token(struct serve *sv, const struct serve_config *c,
			     struct sbx_error **err)
{
	cleanup_free char *data = NULL;
	const char *tok = c->token;

	if (!tok && c->token_file) {
		if (read_secret_file(c->token_file, TOKEN_FILE_MAX, &data,
				     err) < 0)
			return -1;
		data[strcspn(data, "\r\n")] = '\0';
		tok = data;
	}
	if (!tok)
		return 0;
	if (strlen(tok) < 16)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "the service token is shorter than 16 "
				     "characters");
	sha256_hex(tok, strlen(tok), sv->service_hash);
	if (data)
		explicit_bzero(data, strlen(data));
	return 0;
}

/*
 * The scrape-only token's hash into hash, from its file (the token
 * file's rules: its first line, at least 16 characters, a file neither
 * group nor others may read).  It may not be the service's or a
 * tenant's token: a scrape configuration would then hold more than it
 * says.
 */
static int read_metrics_token(struct serve *sv, char hash[65],
			      struct sbx_error **err)
{
	cleanup_free char *data = NULL;
	bool other = false;

	if (read_secret_file(sv->metrics_token_file, TOKEN_FILE_MAX, &data,
			     err) < 0)
		return -1;
	data[strcspn(data, "\r\n")] = '\0';
	if (strlen(data) < 16)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "'%s': the metrics token is shorter than "
				     "16 characters",
				     sv->metrics_token_file);
	sha256_hex(data, strlen(data), hash);
	explicit_bzero(data, strlen(data));
	if (sv->service_hash[0])
		other = CRYPTO_memcmp(hash, sv->service_hash, 64) == 0;
	for (size_t i = 0; i < sv->ntenants; i++)
		other |= CRYPTO_memcmp(hash, sv->tenants[i].hash, 64) == 0;
	if (other) {
		explicit_bzero(hash, 65);
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "'%s': the metrics token is the service's "
				     "or a tenant's token",
				     sv->metrics_token_file);
	}
	return 0;
}

/* One line of the tenants file: "TENANT TOKEN" or "TENANT sha256:HEX". */
static int tenant_line(struct serve *sv, char *line, unsigned lineno,
		       const char *path, size_t *alloc, struct sbx_error **err)
{
	char *sp = strpbrk(line, " \t");
	const char *tok;
	struct serve_tenant *t;

	if (!*line || *line == '#')
		return 0;
	if (!sp)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s:%u: not 'TENANT TOKEN'", path, lineno);
	*sp = '\0';
	tok = sp + 1 + strspn(sp + 1, " \t");
	if (!svc_wire_name_valid(line) || !*tok || strlen(tok) < 16)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s:%u: not 'TENANT TOKEN' (a tenant of "
				     "[A-Za-z0-9._-], a token of at least 16 "
				     "characters)",
				     path, lineno);
	ALLOC_GROW(sv->tenants, sv->ntenants + 1, *alloc);
	t = &sv->tenants[sv->ntenants++];
	t->tenant = xstrdup(line);
	if (strncmp(tok, "sha256:", 7) == 0 && strlen(tok + 7) == 64)
		snprintf(t->hash, sizeof(t->hash), "%s", tok + 7);
	else
		sha256_hex(tok, strlen(tok), t->hash);
	return 0;
}

static int load_tenants(struct serve *sv, const char *path,
			struct sbx_error **err)
{
	cleanup_free char *data = NULL;
	char *line, *save = NULL;
	size_t alloc = 0;
	unsigned n = 0;

	if (!path)
		return 0;
	if (read_secret_file(path, TENANTS_FILE_MAX, &data, err) < 0)
		return -1;
	for (line = data; line; line = save) {
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (tenant_line(sv, line, ++n, path, &alloc, err) < 0)
			return -1;
	}
	explicit_bzero(data, strlen(data));
	return 0;
}

/* ---- the ids being opened, the runs in flight ---- */

int serve_opening_add(struct serve *sv, const char *id)
{
	int rc = 0;

	pthread_mutex_lock(&sv->lock);
	for (size_t i = 0; i < sv->nopening; i++)
		if (strcmp(sv->opening[i], id) == 0)
			rc = -1;
	if (rc == 0) {
		ALLOC_GROW(sv->opening, sv->nopening + 1, sv->aopening);
		sv->opening[sv->nopening++] = xstrdup(id);
	}
	pthread_mutex_unlock(&sv->lock);
	return rc;
}

void serve_opening_del(struct serve *sv, const char *id)
{
	pthread_mutex_lock(&sv->lock);
	for (size_t i = 0; i < sv->nopening; i++)
		if (strcmp(sv->opening[i], id) == 0) {
			free(sv->opening[i]);
			sv->opening[i] = sv->opening[--sv->nopening];
			break;
		}
	pthread_mutex_unlock(&sv->lock);
}

static bool run_is(const struct serve_run *r, const char *key, const char *id)
{
	return strcmp(r->key, key) == 0 && strcmp(r->id, id) == 0;
}

int serve_run_add(struct serve *sv, const char *key, const char *id,
		  atomic_int *cancel)
{
	int rc = 0;

	pthread_mutex_lock(&sv->lock);
	for (size_t i = 0; i < sv->nruns; i++)
		if (run_is(&sv->runs[i], key, id))
			rc = -1;
	if (rc == 0) {
		struct serve_run *r;

		ALLOC_GROW(sv->runs, sv->nruns + 1, sv->aruns);
		r = &sv->runs[sv->nruns++];
		snprintf(r->key, sizeof(r->key), "%s", key);
		snprintf(r->id, sizeof(r->id), "%s", id);
		r->cancel = cancel;
	}
	pthread_mutex_unlock(&sv->lock);
	return rc;
}

void serve_run_del(struct serve *sv, const char *key, const char *id)
{
	pthread_mutex_lock(&sv->lock);
	for (size_t i = 0; i < sv->nruns; i++)
		if (run_is(&sv->runs[i], key, id)) {
			sv->runs[i] = sv->runs[--sv->nruns];
			break;
		}
	pthread_mutex_unlock(&sv->lock);
}

bool serve_run_stop(struct serve *sv, const char *key, const char *id)
{
	bool found = false;

	pthread_mutex_lock(&sv->lock);
	for (size_t i = 0; i < sv->nruns; i++)
		if (run_is(&sv->runs[i], key, id)) {
			http_gone_raise(sv->runs[i].cancel, SVC_CANCEL_STOP);
			found = true;
		}
	pthread_mutex_unlock(&sv->lock);
	return found;
}

/* ---- session tokens known, usage sampled ---- */

static struct serve_token *token_find(struct serve_token *t, size_t n,
				      const char *id, const char *hash)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].id, id) == 0 &&
		    CRYPTO_memcmp(t[i].hash, hash, 64) == 0)
			return &t[i];
	return NULL;
}

/* Learn (id, hash) into t (under sv->lock), the oldest forgotten past
 * max. */
static void token_add(struct serve_token **t, size_t *n, size_t *alloc,
		      size_t max, const char *id, const char *hash)
{
	struct serve_token *e = token_find(*t, *n, id, hash);

	if (!e && *n >= max) {
		e = &(*t)[0];
		for (size_t i = 1; i < *n; i++)
			if ((*t)[i].at < e->at)
				e = &(*t)[i];
	}
	if (!e) {
		ALLOC_GROW(*t, *n + 1, *alloc);
		e = &(*t)[(*n)++];
	}
	snprintf(e->id, sizeof(e->id), "%s", id);
	memcpy(e->hash, hash, sizeof(e->hash));
	e->at = clock_now_ms();
}

/* Forget every entry of id in t (under sv->lock). */
static void token_drop(struct serve_token *t, size_t *n, const char *id)
{
	for (size_t i = 0; i < *n;)
		if (strcmp(t[i].id, id) == 0)
			t[i] = t[--*n];
		else
			i++;
}

int serve_token_check(struct serve *sv, const char *id, const char *token)
{
	char hash[65];
	struct serve_token *e;
	struct serve_snap *snap;
	struct svc_wire_session ws;
	struct svc_call any = {0};
	struct sbx_error *err = NULL;
	long long now = clock_now_ms();
	int rc;

	/* No X-Access-Token: refused (strlen(NULL) took the process). */
	if (!token || strlen(id) >= sizeof(e->id))
		return 0;
	sha256_hex(token, strlen(token), hash);
	pthread_mutex_lock(&sv->lock);
	if (token_find(sv->good, sv->ngood, id, hash)) {
		pthread_mutex_unlock(&sv->lock);
		return 1;
	}
	e = token_find(sv->bad, sv->nbad, id, hash);
	if (e && now - e->at < TOKEN_BAD_MS) {
		pthread_mutex_unlock(&sv->lock);
		return 0;
	}
	if (now / 1000 != sv->miss_second) {
		sv->miss_second = now / 1000;
		sv->misses = 0;
	}
	if (sv->misses >= TOKEN_LOOKUPS_PER_S) {
		pthread_mutex_unlock(&sv->lock);
		return -1;
	}
	sv->misses++;
	pthread_mutex_unlock(&sv->lock);

	snap = serve_snap_get(sv);
	rc = svc_wire_auth(&snap->svc, &any, id, token, &ws, &err);
	if (rc == 0)
		svc_wire_session_release(&ws);
	serve_snap_put(snap);
	if (rc < 0 && err->kind != SBX_E_REFUSED) {
		/* The record could not be read: nothing learnt. */
		sbx_error_free(&err);
		return -1;
	}
	/* Not one of ours: one of another host's (its row keeps the
	 * hashes), to be forwarded there. */
	if (rc < 0 && serve_fleet_on(sv)) {
		int f = serve_fleet_token(sv, id, hash);

		if (f < 0) {
			sbx_error_free(&err);
			return -1;
		}
		if (f == 1) {
			sbx_error_free(&err);
			rc = 0;
		}
	}
	sbx_error_free(&err);
	pthread_mutex_lock(&sv->lock);
	if (rc == 0)
		token_add(&sv->good, &sv->ngood, &sv->agood, TOKENS_GOOD, id,
			  hash);
	else
		token_add(&sv->bad, &sv->nbad, &sv->abad, TOKENS_BAD, id, hash);
	pthread_mutex_unlock(&sv->lock);
	explicit_bzero(hash, sizeof(hash));
	return rc == 0;
}

/*
 * Learn the tokens of the sessions open now, from their records, so a
 * session that outlived a restart is never a miss: a miss is then a token
 * no session has, and the bound on lookups falls on whoever sends those,
 * not on the sessions' own clients.  Nothing learnt when the sessions
 * cannot be listed (each is then learnt at its first request).
 */
static void token_warm(struct serve *sv, struct serve_snap *snap)
{
	struct svc_wire_list_res l;
	struct sbx_error *err = NULL;
	struct svc_call any = {0};

	if (svc_wire_list(&snap->svc, &any, &l, &err) < 0) {
		sbx_error_free(&err);
		return;
	}
	pthread_mutex_lock(&sv->lock);
	for (size_t i = 0; i < l.n; i++) {
		const struct svc_wire_session *ws = &l.rows[i];

		if (strlen(ws->wire.id) >= sizeof(sv->good[0].id))
			continue;
		for (size_t k = 0; k < ws->wire.ntokens; k++)
			if (strlen(ws->wire.tokens[k]) == 64)
				token_add(&sv->good, &sv->ngood, &sv->agood,
					  TOKENS_GOOD, ws->wire.id,
					  ws->wire.tokens[k]);
	}
	pthread_mutex_unlock(&sv->lock);
	svc_wire_list_res_release(&l);
}

void serve_token_remember(struct serve *sv, const char *id, const char *token)
{
	char hash[65];

	if (strlen(id) >= sizeof(sv->good[0].id))
		return;
	sha256_hex(token, strlen(token), hash);
	pthread_mutex_lock(&sv->lock);
	/* A token just minted was bad a moment ago (a session not open). */
	token_drop(sv->bad, &sv->nbad, id);
	token_add(&sv->good, &sv->ngood, &sv->agood, TOKENS_GOOD, id, hash);
	pthread_mutex_unlock(&sv->lock);
}

void serve_token_forget(struct serve *sv, const char *id)
{
	pthread_mutex_lock(&sv->lock);
	token_drop(sv->good, &sv->ngood, id);
	pthread_mutex_unlock(&sv->lock);
}

bool serve_usage_get(struct serve *sv, const char *key,
		     struct svc_wire_usage *u)
{
	long long now = clock_now_ms();
	bool found = false;

	pthread_mutex_lock(&sv->lock);
	for (size_t i = 0; i < sv->nusage; i++)
		if (strcmp(sv->usage[i].key, key) == 0 &&
		    now - sv->usage[i].at < SERVE_USAGE_MS) {
			*u = sv->usage[i].u;
			found = true;
		}
	pthread_mutex_unlock(&sv->lock);
	return found;
}

void serve_usage_put(struct serve *sv, const char *key,
		     const struct svc_wire_usage *u)
{
	long long now = clock_now_ms();
	struct serve_usage *e = NULL;

	pthread_mutex_lock(&sv->lock);
	for (size_t i = 0; i < sv->nusage && !e; i++)
		if (strcmp(sv->usage[i].key, key) == 0 ||
		    now - sv->usage[i].at >= SERVE_USAGE_MS)
			e = &sv->usage[i];
	if (!e && sv->nusage < USAGE_KEPT) {
		ALLOC_GROW(sv->usage, sv->nusage + 1, sv->ausage);
		e = &sv->usage[sv->nusage++];
	}
	if (e) {
		snprintf(e->key, sizeof(e->key), "%s", key);
		e->at = now;
		e->u = *u;
	}
	pthread_mutex_unlock(&sv->lock);
}

/* ---- the reaper ---- */

static void reaper_warn(void *arg, const char *msg)
{
	struct serve *sv = arg;
	struct strbuf sb = STRBUF_INIT;

	strbuf_addf(&sb, "sbxcat serve: reap: %s\n", msg);
	if (sv->log_fd >= 0 && write_all(sv->log_fd, sb.buf, sb.len) < 0) {
		/* nowhere else to say it */
	}
	strbuf_release(&sb);
}

static void reap_once(struct serve *sv)
{
	struct serve_snap *snap = serve_snap_get(sv);
	struct svc_call call = {.warn = reaper_warn, .warn_arg = sv};
	struct svc_reap_req req = {.now = (long long)time(NULL),
				   .limit = SVC_REAP_LIMIT_DEFAULT};
	struct svc_reap_res res;
	struct sbx_error *err = NULL;

	if (svc_reap(&snap->svc, &call, &req, &res, &err) < 0) {
		atomic_fetch_add(&sv->reap_failures, 1);
		reaper_warn(sv, err->msg);
		sbx_error_free(&err);
	}
	atomic_fetch_add(&sv->reaps, 1);
	svc_reap_res_release(&res);
	serve_snap_put(snap);
}

static void *reaper_main(void *arg)
{
	struct serve *sv = arg;

	pthread_mutex_lock(&sv->lock);
	while (!sv->stopping) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += sv->interval_s;
		if (pthread_cond_timedwait(&sv->wake, &sv->lock, &ts) !=
			ETIMEDOUT ||
		    sv->stopping)
			continue;
		pthread_mutex_unlock(&sv->lock);
		reap_once(sv);
		serve_fleet_reconcile(sv);
		pthread_mutex_lock(&sv->lock);
	}
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

/* ---- the warm pool's refill ---- */

/* Seconds between refills when nothing wakes it. */
#define POOL_CHECK_S 5

static void pool_once(struct serve *sv)
{
	struct serve_snap *snap = serve_snap_get(sv);
	struct svc_call call = {.warn = reaper_warn, .warn_arg = sv};
	struct svc_pool_res res;
	struct sbx_error *err = NULL;
	bool again;

	/* Without a pool: drained once (what an earlier setting left),
	 * then nothing until a reload. */
	pthread_mutex_lock(&sv->lock);
	again = sv->pool_reloaded;
	sv->pool_reloaded = false;
	pthread_mutex_unlock(&sv->lock);
	if (!snap->svc.cfg.session.npool && !again) {
		serve_snap_put(snap);
		return;
	}
	if (svc_pool_fill(&snap->svc, &call,
			  snap->svc.cfg.session.npool ? &snap->cat : NULL, &res,
			  &err) < 0) {
		reaper_warn(sv, err->msg);
		sbx_error_free(&err);
	}
	atomic_fetch_add(&sv->pool_fills, 1);
	atomic_fetch_add(&sv->pool_made, res.made);
	serve_snap_put(snap);
}

void serve_pool_kick(struct serve *sv)
{
	pthread_mutex_lock(&sv->lock);
	sv->pool_kicked = true;
	pthread_cond_broadcast(&sv->pool_wake);
	pthread_mutex_unlock(&sv->lock);
}

static void *pooler_main(void *arg)
{
	struct serve *sv = arg;

	pthread_mutex_lock(&sv->lock);
	while (!sv->stopping) {
		struct timespec ts;

		sv->pool_kicked = false;
		pthread_mutex_unlock(&sv->lock);
		pool_once(sv);
		pthread_mutex_lock(&sv->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += POOL_CHECK_S;
		while (!sv->stopping && !sv->pool_kicked &&
		       pthread_cond_timedwait(&sv->pool_wake, &sv->lock, &ts) !=
			   ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

/* ---- start, reload, stop ---- */

static json_t *load_policy(const char *path, struct sbx_error **err)
{
	cleanup_free char *data = NULL;
	json_error_t jerr;
	size_t len;
	json_t *j;

	if (!path || access(path, F_OK) != 0)
		return NULL;
	if (read_file_limited(path, POLICY_FILE_MAX, &data, &len, err) < 0)
		return NULL;
	j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		sbx_error_set(err, SBX_E_BAD_DATA, 0,
			      "%s:%d: not a JSON object of policy: %s", path,
			      jerr.line, jerr.text);
	}
	return j;
}

static void serve_free(struct serve *sv)
{
	for (size_t i = 0; i < sv->ntenants; i++)
		free(sv->tenants[i].tenant);
	free(sv->tenants);
	for (size_t i = 0; i < sv->nopening; i++)
		free(sv->opening[i]);
	free(sv->opening);
	free(sv->runs);
	free(sv->good);
	free(sv->bad);
	free(sv->usage);
	free(sv->routes);
	serve_snap_put(sv->snap);
	if (sv->base_audit)
		svc_audit_serve_stop(&sv->base);
	svc_engines_stop(&sv->base);
	svc_release(&sv->base);
	free(sv->catalog_path);
	free(sv->policy_file);
	free(sv->default_tenant);
	free(sv->metrics_token_file);
	free(sv->tls_cert_file);
	free(sv->tls_key_file);
	free(sv->default_agent);
	free(sv->default_run);
	for (size_t i = 0; i < sv->ne2b_templates; i++) {
		free(sv->e2b_templates[i].name);
		free(sv->e2b_templates[i].runtime);
	}
	free(sv->e2b_templates);
	free(sv->e2b_domain);
	pthread_mutex_destroy(&sv->lock);
	pthread_cond_destroy(&sv->wake);
	pthread_cond_destroy(&sv->pool_wake);
	explicit_bzero(sv->service_hash, sizeof(sv->service_hash));
	explicit_bzero(sv->metrics_hash, sizeof(sv->metrics_hash));
	free(sv);
}

/* The TLS certificate and key files read (the key as a secret): a
 * certificate chain is a few KiB. */
#define TLS_FILE_MAX (1 << 20)
static int read_tls(const struct serve *sv, char **cert, char **key,
		    struct sbx_error **err)
{
	size_t len;

	*cert = *key = NULL;
	if (read_file_limited(sv->tls_cert_file, TLS_FILE_MAX, cert, &len,
			      err) < 0 ||
	    read_secret_file(sv->tls_key_file, TLS_FILE_MAX, key, err) < 0) {
		free(*cert);
		*cert = NULL;
		return -1;
	}
	return 0;
}

static void tls_free(char *cert, char *key)
{
	free(cert);
	if (key)
		explicit_bzero(key, strlen(key));
	free(key);
}

static int check_listen(const struct serve *sv, const struct serve_config *c,
			struct sbx_error **err)
{
	for (size_t i = 0; i < c->nlisten; i++)
		if ((strncmp(c->listen[i], "tcp:", 4) == 0 ||
		     http_listen_is_tls(c->listen[i])) &&
		    !sv->service_hash[0])
			return sbx_error_set(
			    err, SBX_E_REFUSED, 0,
			    "refusing to listen on %s without a service token "
			    "(SANDBOXD_TOKEN or a token file)",
			    c->listen[i]);
	if (!c->nlisten)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "nowhere to listen");
	return 0;
}

static int start_http(struct serve *sv, const struct serve_config *c,
		      struct sbx_error **err)
{
	struct http_listen *ls = xcalloc(c->nlisten, sizeof(*ls));
	struct http_config hc = {
	    .listen = ls,
	    .nlisten = c->nlisten,
	    .nroutes = serve_nroutes + e2b_nroutes(),
	    .arg = sv,
	    .admit = wire_admit,
	    .refusal = e2b_refusal,
	    /* What a path no route matches may send, dropped. */
	    .max_body_bytes = c->max_body_bytes ? c->max_body_bytes : 4096,
	    .max_connections = c->max_connections,
	    .idle_timeout_s = c->idle_timeout_s,
	    .request_timeout_s = c->request_timeout_s,
	    .slow_workers = c->workers,
	    .log_fd = c->log_fd,
	};
	char *cert = NULL, *key = NULL;
	int rc;

	/* The table with write's cap: base64 of SANDBOXD_MAX_WRITE_BYTES
	 * (read once, at start, as every setting). */
	sv->routes =
	    xcalloc(serve_nroutes + e2b_nroutes(), sizeof(*sv->routes));
	memcpy(sv->routes, serve_routes, serve_nroutes * sizeof(*sv->routes));
	/* E2B's routes after sandboxd's (serve/e2b.h): no path is both. */
	e2b_routes_copy(sv->routes + serve_nroutes);
	e2b_fs_caps(sv->routes + serve_nroutes, e2b_nroutes(),
		    sv->snap->svc.cfg.session.max_write);
	for (size_t i = 0; i < serve_nroutes; i++) {
		const struct wire_needs *n = sv->routes[i].needs;

		if (n->write_cap)
			sv->routes[i].max_body =
			    wire_write_cap(sv->snap->svc.cfg.session.max_write);
	}
	hc.routes = sv->routes;
	for (size_t i = 0; i < c->nlisten; i++)
		ls[i].spec = c->listen[i];
	if (sv->tls_cert_file && read_tls(sv, &cert, &key, err) < 0) {
		free(ls);
		return -1;
	}
	hc.tls_cert_pem = cert;
	hc.tls_key_pem = key;
	rc = http_server_start(&sv->http, &hc, err);
	tls_free(cert, key);
	free(ls);
	return rc;
}

/* ---- the E2B front's settings ---- */

#define E2B_MAX_TIMEOUT_DEFAULT 86400
#define E2B_RETENTION_DEFAULT (7 * 86400)
/* A template's name: what E2B's aliases are, bounded. */
#define E2B_TEMPLATE_NAME_MAX 64

static bool template_name_valid(const char *s, size_t n)
{
	if (!n || n > E2B_TEMPLATE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '-' ||
		      s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

/* SECONDS of NAME: digits, 1 to max; def when unset. */
static int e2b_seconds(struct serve *sv, const char *name, long long def,
		       long long max, long long *out, struct sbx_error **err)
{
	const char *v = sbx_env_get(sv->env, name);
	char *end;

	*out = def;
	if (!v)
		return 0;
	errno = 0;
	*out = strtoll(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno || *out < 1 ||
	    *out > max)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s: not a number of seconds from 1 to "
				     "%lld",
				     name, max);
	return 0;
}

/* SBXCAT_E2B_TEMPLATES: "NAME=ALIAS[,NAME=ALIAS...]"; an alias the
 * catalogue lacks is refused at create, naming what exists (the
 * catalogue may change at a reload). */
static int e2b_config(struct serve *sv, struct sbx_error **err)
{
	const char *t = sbx_env_get(sv->env, "SBXCAT_E2B_TEMPLATES");
	const char *d = sbx_env_get(sv->env, "SBXCAT_E2B_DOMAIN");
	size_t alloc = 0;

	if (e2b_seconds(sv, "SBXCAT_E2B_MAX_TIMEOUT", E2B_MAX_TIMEOUT_DEFAULT,
			365LL * 86400, &sv->e2b_max_timeout, err) < 0 ||
	    e2b_seconds(sv, "SBXCAT_E2B_PAUSED_RETENTION",
			E2B_RETENTION_DEFAULT, 3650LL * 86400,
			&sv->e2b_retention, err) < 0)
		return -1;
	if (d && *d) {
		if (strlen(d) > 253 || strspn(d, "abcdefghijklmnopqrstuvwxyz"
						 "0123456789.-:") != strlen(d))
			return sbx_error_set(err, SBX_E_INVALID, 0,
					     "SBXCAT_E2B_DOMAIN: not a host "
					     "name");
		sv->e2b_domain = xstrdup(d);
	}
	while (t && *t) {
		size_t n = strcspn(t, ","), eq = strcspn(t, "=");

		if (eq >= n || !template_name_valid(t, eq) ||
		    !template_name_valid(t + eq + 1, n - eq - 1))
			return sbx_error_set(err, SBX_E_INVALID, 0,
					     "SBXCAT_E2B_TEMPLATES: not "
					     "NAME=ALIAS[,NAME=ALIAS...]");
		ALLOC_GROW(sv->e2b_templates, sv->ne2b_templates + 1, alloc);
		sv->e2b_templates[sv->ne2b_templates].name = xstrndup(t, eq);
		sv->e2b_templates[sv->ne2b_templates++].runtime =
		    xstrndup(t + eq + 1, n - eq - 1);
		t += n + (t[n] == ',');
	}
	return 0;
}

int serve_start(struct serve **out, const struct serve_config *c,
		struct sbx_error **err)
{
	struct serve *sv = xcalloc(1, sizeof(*sv));
	struct serve_snap *snap;
	json_t *pol;

	sv->env = c->env;
	sv->log_fd = c->log_fd;
	sv->catalog_path = c->catalog_path ? xstrdup(c->catalog_path) : NULL;
	sv->policy_file = c->policy_file ? xstrdup(c->policy_file) : NULL;
	/* Opt-in: without it an open naming no tenant is no tenant's. */
	sv->default_tenant =
	    c->default_tenant ? xstrdup(c->default_tenant) : NULL;
	sv->metrics_token_file =
	    c->metrics_token_file ? xstrdup(c->metrics_token_file) : NULL;
	sv->tls_cert_file = c->tls_cert_file ? xstrdup(c->tls_cert_file) : NULL;
	sv->tls_key_file = c->tls_key_file ? xstrdup(c->tls_key_file) : NULL;
	sv->default_agent = c->default_agent ? xstrdup(c->default_agent) : NULL;
	sv->default_run = c->default_run ? xstrdup(c->default_run) : NULL;
	sv->interval_s = c->cleanup_interval_s;
	sv->started_at = clock_real_s();
	sv->reload_ok = true; /* the start read everything, or stops */
	sv->reload_ok_at = sv->started_at;
	pthread_mutex_init(&sv->lock, NULL);
	pthread_cond_init(&sv->wake, NULL);
	pthread_cond_init(&sv->pool_wake, NULL);
	sv->pool_reloaded = true; /* the first pass tidies, pool or not */
	svc_init(&sv->base, sv->env);
	if (sv->default_tenant && !svc_wire_name_valid(sv->default_tenant)) {
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "SBXCAT_SERVE_TENANT: not a tenant of the wire's "
			      "pattern [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
		goto fail;
	}
	if ((sv->default_agent &&
	     svc_id_check("the default agent", sv->default_agent, err) < 0) ||
	    (sv->default_run &&
	     svc_id_check("the default run", sv->default_run, err) < 0))
		goto fail;
	if (e2b_config(sv, err) < 0 || set_service_token(sv, c, err) < 0 ||
	    load_tenants(sv, c->tenants_file, err) < 0 ||
	    (sv->metrics_token_file &&
	     read_metrics_token(sv, sv->metrics_hash, err) < 0) ||
	    check_listen(sv, c, err) < 0)
		goto fail;
	pol = load_policy(sv->policy_file, err);
	if (*err)
		goto fail;
	if (serve_snap_make(sv, pol, &snap, err) < 0) {
		json_decref(pol);
		goto fail;
	}
	json_decref(pol);
	if (snap->cat_err) {
		sbx_error_set(err, snap->cat_err->kind, 0, "%s",
			      snap->cat_err->msg);
		serve_snap_put(snap);
		goto fail;
	}
	sv->snap = snap;
	if (svc_audit_serve_start(&sv->base, 0, err) < 0)
		goto fail;
	sv->base_audit = true;
	snap->svc.writer = sv->base.writer;
	snap->svc.pool = sv->base.pool;
	svc_engines_start(&sv->base, ENGINES_KEPT);
	snap->svc.engines = sv->base.engines;
	token_warm(sv, snap);
	if (serve_fleet_start(sv, err) < 0)
		goto fail;
	if (start_http(sv, c, err) < 0)
		goto fail;
	if (sv->interval_s &&
	    pthread_create(&sv->reaper, NULL, reaper_main, sv) == 0)
		sv->reaper_started = true;
	if (pthread_create(&sv->pooler, NULL, pooler_main, sv) == 0)
		sv->pooler_started = true;
	*out = sv;
	return 0;
fail:
	serve_fleet_stop(sv);
	serve_free(sv);
	return -1;
}

void serve_reload_state(struct serve *sv, bool *ok, double *ok_at)
{
	pthread_mutex_lock(&sv->lock);
	*ok = sv->reload_ok;
	*ok_at = sv->reload_ok_at;
	pthread_mutex_unlock(&sv->lock);
}

/* The scrape token read again at a reload: the one in use kept when its
 * file cannot be read (-1, *err saying why). */
static int reload_metrics_token(struct serve *sv, struct sbx_error **err)
{
	char hash[65];

	if (!sv->metrics_token_file)
		return 0;
	if (read_metrics_token(sv, hash, err) < 0) {
		sbx_error_wrap(err, "the metrics token is kept as it was");
		return -1;
	}
	pthread_mutex_lock(&sv->lock);
	memcpy(sv->metrics_hash, hash, sizeof(hash));
	pthread_mutex_unlock(&sv->lock);
	explicit_bzero(hash, sizeof(hash));
	return 0;
}

/* The TLS certificate and key read again and served on every https:
 * listener; a bad pair keeps the one in use. */
static int reload_tls(struct serve *sv, struct sbx_error **err)
{
	char *cert, *key;
	int rc;

	if (!sv->tls_cert_file)
		return 0;
	if (read_tls(sv, &cert, &key, err) < 0)
		rc = -1;
	else
		rc = http_server_tls_reload(sv->http, cert, key, err);
	tls_free(cert, key);
	if (rc < 0)
		sbx_error_wrap(err, "the TLS certificate is kept as it was");
	return rc;
}

int serve_reload(struct serve *sv, struct sbx_error **err)
{
	struct serve_snap *snap, *cur = serve_snap_get(sv);
	struct sbx_error *pol_err = NULL, *tok_err = NULL, *tls_err = NULL;
	json_t *pol = load_policy(sv->policy_file, &pol_err);
	int rc = -1, tok_rc = reload_metrics_token(sv, &tok_err);
	int tls_rc = reload_tls(sv, &tls_err);

	/* A policy file that is missing or cannot be read: the policy in
	 * use stays (the catalogue is read again all the same). */
	if (pol_err || !pol) {
		json_decref(pol);
		pol = json_incref(cur->overrides);
	}
	if (serve_snap_make(sv, pol, &snap, err) < 0)
		goto out;
	if (snap->cat_err) {
		sbx_error_set(err, snap->cat_err->kind, 0,
			      "the catalogue is kept as it was: %s",
			      snap->cat_err->msg);
		serve_snap_put(snap);
		goto out;
	}
	serve_snap_set(sv, snap);
	pthread_mutex_lock(&sv->lock);
	sv->pool_reloaded = true;
	pthread_mutex_unlock(&sv->lock);
	serve_pool_kick(sv); /* a new tag drains the old one's pool */
	rc = 0;
out:
	if (pol_err) {
		/* Said after what the catalogue's reading said, if anything. */
		sbx_error_wrap(&pol_err, "the policy is kept as it was");
		if (*err)
			sbx_error_chain(err, &pol_err);
		else
			*err = steal_pointer(&pol_err);
		rc = -1;
	}
	if (tok_rc < 0) {
		if (*err)
			sbx_error_chain(err, &tok_err);
		else
			*err = steal_pointer(&tok_err);
		rc = -1;
	}
	if (tls_rc < 0) {
		if (*err)
			sbx_error_chain(err, &tls_err);
		else
			*err = steal_pointer(&tls_err);
		rc = -1;
	}
	pthread_mutex_lock(&sv->lock);
	sv->reload_ok = rc == 0;
	if (rc == 0)
		sv->reload_ok_at = clock_real_s();
	pthread_mutex_unlock(&sv->lock);
	json_decref(pol);
	serve_snap_put(cur);
	return rc;
}

void serve_stop(struct serve *sv, unsigned grace_ms)
{
	if (!sv)
		return;
	http_server_stop(sv->http, grace_ms);
	e2b_code_stop();
	pthread_mutex_lock(&sv->lock);
	sv->stopping = true;
	pthread_cond_broadcast(&sv->wake);
	pthread_cond_broadcast(&sv->pool_wake);
	pthread_mutex_unlock(&sv->lock);
	if (sv->reaper_started)
		pthread_join(sv->reaper, NULL);
	if (sv->pooler_started)
		pthread_join(sv->pooler, NULL);
	serve_fleet_stop(sv);
	serve_free(sv);
}

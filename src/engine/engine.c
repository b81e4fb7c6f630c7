/*
 * engine.c - the engine client's configuration (DOCKER_HOST, TLS,
 * deadlines from the environment) and the API version negotiation (see
 * engine.h).  Requests go through engine-http.c; the calls themselves are
 * in engine-image.c (and engine-container.c to come).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/env.h"
#include "engine/engine-http.h"
#include "basic/error.h"

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Seconds (fractions allowed) from the environment, as milliseconds. */
static int env_ms(const struct sbx_env *env, const char *name,
		  long dflt_seconds, long *ms, struct sbx_error **err)
{
	const char *v = sbx_env_nonempty(env, name);
	char *end;
	double d;

	*ms = dflt_seconds * 1000;
	if (!v)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (*end || errno || !(d > 0) || d > 86400.0 * 365)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "%s '%s': expected a number of seconds",
				     name, v);
	*ms = (long)(d * 1000);
	if (*ms < 1)
		*ms = 1;
	return 0;
}

static char *xstrdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void engine_config_defaults(struct engine_config *c)
{
	memset(c, 0, sizeof(*c));
	c->request_ms = ENGINE_REQUEST_SECONDS * 1000L;
	c->stall_ms = ENGINE_STALL_SECONDS * 1000L;
}

int engine_config_load(struct engine_config *c, const struct sbx_env *env,
		       struct sbx_error **err)
{
	const char *certdir = sbx_env_nonempty(env, "DOCKER_CERT_PATH");

	engine_config_defaults(c);
	c->host = xstrdup_or_null(sbx_env_nonempty(env, "DOCKER_HOST"));
	c->tls_verify = sbx_env_nonempty(env, "DOCKER_TLS_VERIFY") != NULL;
	c->tls = c->tls_verify || sbx_env_nonempty(env, "DOCKER_TLS");
	if (certdir) {
		c->cert_dir = xstrdup(certdir);
	} else {
		const char *home = sbx_env_get(env, "HOME");
		c->cert_dir = xasprintf("%s/.docker", home ? home : "");
	}
	c->trace = xstrdup_or_null(sbx_env_nonempty(env, "SBXCAT_ENGINE_TRACE"));
	if (env_ms(env, "SBXCAT_ENGINE_TIMEOUT", ENGINE_REQUEST_SECONDS,
		   &c->request_ms, err) < 0 ||
	    env_ms(env, "SBXCAT_ENGINE_STALL", ENGINE_STALL_SECONDS,
		   &c->stall_ms, err) < 0) {
		engine_config_release(c);
		return -1;
	}
	return 0;
}

void engine_config_release(struct engine_config *c)
{
	free(c->host);
	free(c->cert_dir);
	free(c->trace);
	memset(c, 0, sizeof(*c));
}

static char *file_if_readable(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	if (access(p, R_OK) == 0)
		return p;
	free(p);
	return NULL;
}

static int init_tcp(struct engine *e, const struct engine_config *c,
		    const char *hostport, struct sbx_error **err)
{
	const char *certdir = c->cert_dir ? c->cert_dir : "";
	cleanup_free char *hp = xstrdup(hostport);
	size_t n = strlen(hp);

	while (n > 0 && hp[n - 1] == '/')
		hp[--n] = '\0';
	if (!n || strchr(hp, '/'))
		return sbx_error_set(
		    err, SBX_E_UNAVAILABLE, 0,
		    "DOCKER_HOST '%s': expected tcp://HOST:PORT", e->host);
	e->tls_verify = c->tls_verify;
	e->tls = c->tls;
	if (e->tls) {
		e->ca = file_if_readable(certdir, "ca.pem");
		e->cert = file_if_readable(certdir, "cert.pem");
		e->key = file_if_readable(certdir, "key.pem");
		if (e->tls_verify && !e->ca)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "DOCKER_TLS_VERIFY is set but "
					     "'%s/ca.pem' cannot be read",
					     certdir);
	}
	/* The ports the docker CLI assumes when none is given. */
	if (hp[n - 1] == ']' || !strchr(hp, ':'))
		e->base = xasprintf("%s://%s:%d", e->tls ? "https" : "http", hp,
				    e->tls ? 2376 : 2375);
	else
		e->base = xasprintf("%s://%s", e->tls ? "https" : "http", hp);
	return 0;
}

int engine_init(struct engine *e, const struct engine_config *c,
		const char *host, struct sbx_error **err)
{
	struct engine_config dflt;

	memset(e, 0, sizeof(*e));
	e->trace_fd = -1;
	if (!c) {
		engine_config_defaults(&dflt);
		c = &dflt;
	}
	if (!host)
		host = c->host;
	if (!host || !*host)
		host = ENGINE_DEFAULT_HOST;
	e->host = xstrdup(host);
	if (curl_dl_load(err) < 0)
		return -1;
	e->request_ms = c->request_ms;
	e->stall_ms = c->stall_ms;
	if (starts_with(host, "unix://")) {
		if (!host[7])
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "DOCKER_HOST '%s': no socket path",
					     host);
		e->sock = xstrdup(host + 7);
		e->base = xstrdup("http://localhost");
	} else if (starts_with(host, "tcp://")) {
		if (init_tcp(e, c, host + 6, err) < 0)
			return -1;
	} else {
		return sbx_error_set(
		    err, SBX_E_UNAVAILABLE, 0,
		    "DOCKER_HOST '%s': sbxcat reaches an engine "
		    "over unix:// or tcp:// only",
		    host);
	}
	if (c->trace) {
		e->trace_fd = open(
		    c->trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (e->trace_fd < 0)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "SBXCAT_ENGINE_TRACE: cannot open "
					     "'%s'",
					     c->trace);
	}
	return 0;
}

void engine_copy(struct engine *dst, const struct engine *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->host = xstrdup(src->host);
	dst->sock = xstrdup_or_null(src->sock);
	dst->base = xstrdup(src->base);
	dst->tls = src->tls;
	dst->tls_verify = src->tls_verify;
	dst->ca = xstrdup_or_null(src->ca);
	dst->cert = xstrdup_or_null(src->cert);
	dst->key = xstrdup_or_null(src->key);
	memcpy(dst->api, src->api, sizeof(dst->api));
	dst->request_ms = src->request_ms;
	dst->stall_ms = src->stall_ms;
	dst->stream_ms = src->stream_ms;
	dst->cancel = src->cancel;
	dst->trace_fd =
	    src->trace_fd >= 0 ? fcntl(src->trace_fd, F_DUPFD_CLOEXEC, 0) : -1;
}

void engine_release(struct engine *e)
{
	free(e->host);
	free(e->sock);
	free(e->base);
	free(e->ca);
	free(e->cert);
	free(e->key);
	if (e->curl)
		sym_curl_easy_cleanup(e->curl);
	if (e->ping)
		sym_curl_easy_cleanup(e->ping);
	if (e->trace_fd >= 0)
		close(e->trace_fd);
	memset(e, 0, sizeof(*e));
	e->trace_fd = -1;
}

static int parse_api(const char *s, int *major, int *minor)
{
	char tail;
	return s && sscanf(s, "%d.%d%c", major, minor, &tail) == 2 ? 0 : -1;
}

static int api_cmp(int amaj, int amin, int bmaj, int bmin)
{
	if (amaj != bmaj)
		return amaj < bmaj ? -1 : 1;
	return amin < bmin ? -1 : amin > bmin;
}

int engine_negotiate(struct engine *e, struct engine_version *v,
		     struct sbx_error **err)
{
	struct engine_version local;
	struct call c;
	json_t *j = NULL;
	const char *api, *minapi, *version;
	int smaj, smin, mmaj = 0, mmin = 0, rc = -1;

	if (!v)
		v = &local;
	memset(v, 0, sizeof(*v));
	call_init(&c, e, "GET", "/version", false);
	if (call_json(&c, &j, err) < 0) {
		/* Whatever the reply, this engine cannot be used: status 3. */
		if (err && *err && sbx_kind_refusal((*err)->kind)) {
			(*err)->kind = SBX_E_UNAVAILABLE;
			sbx_error_wrap(err,
				       "the Docker engine at %s refused "
				       "GET /version",
				       e->host);
		}
		goto out;
	}
	api = json_string_value(json_object_get(j, "ApiVersion"));
	minapi = json_string_value(json_object_get(j, "MinAPIVersion"));
	version = json_string_value(json_object_get(j, "Version"));
	if (parse_api(api, &smaj, &smin) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the server at %s does not answer GET /version "
			      "like a Docker engine (no ApiVersion)",
			      e->host);
		goto out;
	}
	snprintf(v->server_api, sizeof(v->server_api), "%s", api);
	snprintf(v->min_api, sizeof(v->min_api), "%s", minapi ? minapi : "");
	snprintf(v->version, sizeof(v->version), "%s", version ? version : "");
	if (api_cmp(smaj, smin, ENGINE_API_MIN_MAJOR, ENGINE_API_MIN_MINOR) <
	    0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the Docker engine at %s speaks API %s (Docker "
			      "%s); sbxcat needs API %d.%d or later (Docker "
			      "20.10)",
			      e->host, api, version ? version : "unknown",
			      ENGINE_API_MIN_MAJOR, ENGINE_API_MIN_MINOR);
		goto out;
	}
	/*
	 * The oldest version both sides speak: the replies sbxcat reads were
	 * written against 1.41, and an engine that retired 1.41 names its
	 * own oldest, whose replies still carry every field read here.
	 */
	if (parse_api(minapi, &mmaj, &mmin) == 0 &&
	    api_cmp(mmaj, mmin, ENGINE_API_MIN_MAJOR, ENGINE_API_MIN_MINOR) > 0)
		snprintf(e->api, sizeof(e->api), "%d.%d", mmaj, mmin);
	else
		snprintf(e->api, sizeof(e->api), "%d.%d", ENGINE_API_MIN_MAJOR,
			 ENGINE_API_MIN_MINOR);
	snprintf(v->api, sizeof(v->api), "%s", e->api);
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	return rc;
}

/*
 * engine.c - the Docker Engine client (see engine.h).
 *
 * One curl easy handle per struct engine, reset between calls so that the
 * connection to the engine is kept and reused (a no-op prewarm is a few
 * inspect requests on one connection).  A second handle, used only for
 * pings while a stream is silent, lets a build's progress callback ask
 * whether the engine is still there without touching the transfer it is
 * called from.
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

#include "curl-dl.h"
#include "engine.h"
#include "error.h"
#include "tar.h"
#include "util.h"

/* An error reply or a plain JSON answer larger than this is refused. */
#define REPLY_MAX (8u << 20)
/* Of an error reply to a streamed call, this much is kept. */
#define ERROR_BODY_MAX (64u << 10)
/* Raw text of one output line kept before escapes are removed. */
#define TEXT_LINE_MAX 1024
#define PING_MIN_MS 1000
#define PING_MAX_MS 10000

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Seconds (fractions allowed) from the environment, as milliseconds. */
static int env_ms(const char *name, long dflt_seconds, long *ms,
		  struct sbx_error **err)
{
	const char *v = getenv(name);
	char *end;
	double d;

	*ms = dflt_seconds * 1000;
	if (!v || !*v)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (*end || errno || !(d > 0) || d > 86400.0 * 365)
		return sbx_error_set(err, SBX_EXIT_ENV, 0,
				     "%s '%s': expected a number of seconds",
				     name, v);
	*ms = (long)(d * 1000);
	if (*ms < 1)
		*ms = 1;
	return 0;
}

static char *file_if_readable(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	if (access(p, R_OK) == 0)
		return p;
	free(p);
	return NULL;
}

static int init_tcp(struct engine *e, const char *hostport,
		    struct sbx_error **err)
{
	const char *verify = getenv("DOCKER_TLS_VERIFY");
	const char *tls = getenv("DOCKER_TLS");
	const char *certdir = getenv("DOCKER_CERT_PATH");
	cleanup_free char *hp = xstrdup(hostport);
	cleanup_free char *dflt = NULL;
	size_t n = strlen(hp);

	while (n > 0 && hp[n - 1] == '/')
		hp[--n] = '\0';
	if (!n || strchr(hp, '/'))
		return sbx_error_set(
		    err, SBX_EXIT_ENV, 0,
		    "DOCKER_HOST '%s': expected tcp://HOST:PORT", e->host);
	e->tls_verify = verify && *verify;
	e->tls = e->tls_verify || (tls && *tls);
	if (e->tls) {
		if (!certdir || !*certdir) {
			const char *home = getenv("HOME");
			dflt = xasprintf("%s/.docker", home ? home : "");
			certdir = dflt;
		}
		e->ca = file_if_readable(certdir, "ca.pem");
		e->cert = file_if_readable(certdir, "cert.pem");
		e->key = file_if_readable(certdir, "key.pem");
		if (e->tls_verify && !e->ca)
			return sbx_error_set(err, SBX_EXIT_ENV, 0,
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

int engine_init(struct engine *e, const char *host, struct sbx_error **err)
{
	const char *trace = getenv("SBXCAT_ENGINE_TRACE");

	memset(e, 0, sizeof(*e));
	e->trace_fd = -1;
	if (!host)
		host = getenv("DOCKER_HOST");
	if (!host || !*host)
		host = ENGINE_DEFAULT_HOST;
	e->host = xstrdup(host);
	if (curl_dl_load(err) < 0)
		return -1;

	if (env_ms("SBXCAT_ENGINE_TIMEOUT", ENGINE_REQUEST_SECONDS,
		   &e->request_ms, err) < 0 ||
	    env_ms("SBXCAT_ENGINE_STALL", ENGINE_STALL_SECONDS, &e->stall_ms,
		   err) < 0)
		return -1;
	if (starts_with(host, "unix://")) {
		if (!host[7])
			return sbx_error_set(err, SBX_EXIT_ENV, 0,
					     "DOCKER_HOST '%s': no socket path",
					     host);
		e->sock = xstrdup(host + 7);
		e->base = xstrdup("http://localhost");
	} else if (starts_with(host, "tcp://")) {
		if (init_tcp(e, host + 6, err) < 0)
			return -1;
	} else {
		return sbx_error_set(
		    err, SBX_EXIT_ENV, 0,
		    "DOCKER_HOST '%s': sbxcat reaches an engine "
		    "over unix:// or tcp:// only",
		    host);
	}
	if (trace && *trace) {
		e->trace_fd = open(
		    trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (e->trace_fd < 0)
			return sbx_error_set(err, SBX_EXIT_ENV, errno,
					     "SBXCAT_ENGINE_TRACE: cannot open "
					     "'%s'",
					     trace);
	}
	return 0;
}

static char *xstrdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
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
		curl_easy_cleanup(e->curl);
	if (e->ping)
		curl_easy_cleanup(e->ping);
	if (e->trace_fd >= 0)
		close(e->trace_fd);
	memset(e, 0, sizeof(*e));
	e->trace_fd = -1;
}

/* One request and what came back. */
struct call {
	struct engine *e;
	void *h; /* the CURL * it runs on */
	const char *method;
	char *what; /* "GET /version", for messages */
	char *url;
	long timeout_ms;    /* 0: none */
	long status;	    /* HTTP status, 0 before the headers */
	struct strbuf body; /* the reply, unless streamed into stream */
	bool body_over;	    /* the reply was larger than body_max */
	size_t body_max;
	struct engine_stream *stream; /* a 2xx reply goes here */
	struct tar *upload;
	long long last_rx, last_ping;
	char *stall_why; /* the stream went silent and the ping failed */
	char errbuf[CURL_ERROR_SIZE];
};

/* Path bytes of a reference kept as they are; anything else %-encoded. */
static void add_path_escaped(struct strbuf *sb, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("/:@._-", c)) {
			strbuf_addch(sb, c);
		} else {
			strbuf_addch(sb, '%');
			strbuf_addch(sb, hex[c >> 4]);
			strbuf_addch(sb, hex[c & 15]);
		}
	}
}

static void add_query_escaped(struct strbuf *sb, const char *s)
{
	char *q = curl_easy_escape(NULL, s, 0);
	if (!q)
		die_oom();
	strbuf_addstr(sb, q);
	curl_free(q);
}

/* filters={"KEY":["VALUE", ...]} (values ORed), escaped for a query. */
static void add_filter_values(struct strbuf *sb, const char *key,
			      const char *const *values, size_t n)
{
	json_t *vals = json_array();
	json_t *f;
	char *s;

	for (size_t i = 0; i < n; i++)
		json_array_append_new(vals, json_string(values[i]));
	f = json_pack("{s:o}", key, vals);
	s = json_dumps(f, JSON_COMPACT);

	strbuf_addstr(sb, "filters=");
	add_query_escaped(sb, s);
	free(s);
	json_decref(f);
}

static void add_filter(struct strbuf *sb, const char *key, const char *value)
{
	add_filter_values(sb, key, &value, 1);
}

static CURL *handle(void **slot)
{
	if (!*slot)
		*slot = curl_easy_init();
	if (!*slot)
		die_oom();
	return *slot;
}

/*
 * method path: path starts with '/' and may carry a query; versioned
 * prefixes the negotiated API version.
 */
static void call_init(struct call *c, struct engine *e, const char *method,
		      const char *path, bool versioned)
{
	size_t plen = strcspn(path, "?");

	memset(c, 0, sizeof(*c));
	c->e = e;
	c->h = handle(&e->curl);
	c->method = method;
	c->what = xasprintf("%s %.*s", method, (int)plen, path);
	if (versioned && e->api[0])
		c->url = xasprintf("%s/v%s%s", e->base, e->api, path);
	else
		c->url = xasprintf("%s%s", e->base, path);
	c->timeout_ms = e->request_ms;
	c->body_max = REPLY_MAX;
	strbuf_init(&c->body);
}

static void call_release(struct call *c)
{
	free(c->what);
	free(c->url);
	free(c->stall_why);
	strbuf_release(&c->body);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
	struct call *c = ud;
	size_t n = size * nmemb;

	c->last_rx = now_ms();
	if (!c->status)
		curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
	if (c->stream && c->status >= 200 && c->status < 300) {
		engine_stream_feed(c->stream, p, n);
		return n;
	}
	if (c->body.len + n > c->body_max) {
		c->body_over = true;
		/* An error reply is still worth its first part. */
		if (c->stream) {
			strbuf_add(&c->body, p, c->body_max - c->body.len);
			return n;
		}
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	}
	strbuf_add(&c->body, p, n);
	return n;
}

static size_t on_upload(char *buf, size_t size, size_t nmemb, void *ud)
{
	return tar_read(ud, buf, size * nmemb);
}

static int on_seek(void *ud, curl_off_t offset, int origin)
{
	if (offset != 0 || origin != SEEK_SET)
		return CURL_SEEKFUNC_CANTSEEK;
	tar_rewind(ud);
	return CURL_SEEKFUNC_OK;
}

static int ping_for_stall(struct call *c);

/*
 * Called about once a second even when nothing moves: the place where a
 * cancel is noticed and where a silent stream is checked.
 */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct call *c = ud;
	long long now;

	if (c->e->cancel && *c->e->cancel)
		return 1;
	if (!c->stream || c->e->stall_ms <= 0)
		return 0;
	now = now_ms();
	if (now - c->last_rx < c->e->stall_ms ||
	    now - c->last_ping < c->e->stall_ms)
		return 0;
	c->last_ping = now;
	return ping_for_stall(c) < 0 ? 1 : 0;
}

static void trace(struct call *c)
{
	char *line;
	const char *path;

	if (c->e->trace_fd < 0)
		return;
	path = c->url + strlen(c->e->base);
	line = xasprintf("%s %s\n", c->method, path);
	/* One write with O_APPEND: lines of concurrent calls do not mix. */
	if (write(c->e->trace_fd, line, strlen(line)) < 0) {
		/* a trace is a debugging aid; losing a line is acceptable */
	}
	free(line);
}

static const char *unreachable_hint(int oserr)
{
	switch (oserr) {
	case ENOENT:
		return "is the Docker engine running?  DOCKER_HOST names "
		       "another one (unix:///PATH/docker.sock)";
	case EACCES:
	case EPERM:
		return "the socket is open to its owner and group only: run as "
		       "root or as a member of the socket's group (usually "
		       "'docker')";
	case ECONNREFUSED:
		return "nothing answers there: is the Docker engine running?";
	default:
		return "is the Docker engine running?  DOCKER_HOST names "
		       "another one";
	}
}

static int unreachable(struct call *c, long oserr, struct sbx_error **err)
{
	const char *why = oserr ? strerror((int)oserr)
				: (c->errbuf[0] ? c->errbuf : "no answer");
	int rc = sbx_error_set(err, SBX_EXIT_ENV, 0,
			       "cannot reach the Docker engine at %s: %s\n"
			       "hint: %s",
			       c->e->host, why, unreachable_hint((int)oserr));
	if (err && *err)
		(*err)->errnum = (int)oserr;
	return rc;
}

static int cancelled(struct sbx_error **err)
{
	int rc = sbx_error_set(err, SBX_EXIT_FAIL, 0, "cancelled");
	if (err && *err)
		(*err)->errnum = ECANCELED;
	return rc;
}

/* The engine's own words from an error reply: {"message": "..."}. */
static char *reply_message(struct call *c)
{
	json_t *j =
	    json_loadb(c->body.buf ? c->body.buf : "", c->body.len, 0, NULL);
	const char *m = json_string_value(json_object_get(j, "message"));
	char *out;

	if (m) {
		out = xstrdup(m);
	} else {
		size_t n = c->body.len;
		const char *b = c->body.buf ? c->body.buf : "";
		while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r' ||
				 b[n - 1] == ' '))
			n--;
		if (n > 500)
			n = utf8_whole(b, 500);
		out = n ? xstrndup(b, n) : xstrdup("(no message)");
	}
	json_decref(j);
	return out;
}

static int reply_error(struct call *c, struct sbx_error **err)
{
	cleanup_free char *m = reply_message(c);
	return sbx_error_set(err, SBX_EXIT_FAIL, 0,
			     "the Docker engine answered HTTP %ld: %s",
			     c->status, m);
}

/* Set up c->h for c, run it, and turn transport failures into errors. */
static int run(struct call *c, struct sbx_error **err)
{
	struct engine *e = c->e;
	CURL *h = c->h;
	struct curl_slist *headers = NULL;
	CURLcode rc;
	long oserr = 0;
	double connect_time = 0;

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST,
			 strcmp(c->method, "GET") && strcmp(c->method, "POST")
			     ? c->method
			     : NULL);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)ENGINE_CONNECT_SECONDS * 1000);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "sbxcat/" PACKAGE_VERSION);
	/* An http_proxy meant for the internet must not see engine traffic. */
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	if (e->sock)
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, e->sock);
	if (e->tls) {
		if (e->ca)
			curl_easy_setopt(h, CURLOPT_CAINFO, e->ca);
		if (e->cert)
			curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert);
		if (e->key)
			curl_easy_setopt(h, CURLOPT_SSLKEY, e->key);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER,
				 e->tls_verify ? 1L : 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST,
				 e->tls_verify ? 2L : 0L);
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
	if (c->upload) {
		/* Unknown length up front: chunked, and no 100-continue wait.
		 */
		headers = curl_slist_append(headers,
					    "Content-Type: application/x-tar");
		headers =
		    curl_slist_append(headers, "Transfer-Encoding: chunked");
		headers = curl_slist_append(headers, "Expect:");
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(h, CURLOPT_READDATA, c->upload);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, c->upload);
	} else if (strcmp(c->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	if (headers)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

	c->last_rx = now_ms();
	c->last_ping = c->last_rx;
	c->errbuf[0] = '\0';
	trace(c);
	rc = curl_easy_perform(h);
	curl_slist_free_all(headers);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
	curl_easy_getinfo(h, CURLINFO_CONNECT_TIME, &connect_time);

	switch (rc) {
	case CURLE_OK:
		return 0;
	case CURLE_ABORTED_BY_CALLBACK:
		if (c->stall_why)
			return sbx_error_set(err, SBX_EXIT_ENV, 0,
					     "the Docker engine at %s stopped "
					     "answering during %s: %s",
					     e->host, c->what, c->stall_why);
		return cancelled(err);
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return unreachable(c, oserr, err);
	case CURLE_OPERATION_TIMEDOUT:
		if (connect_time <= 0 && !c->status)
			return unreachable(c, oserr ? oserr : ETIMEDOUT, err);
		if (c->stream)
			return sbx_error_set(err, SBX_EXIT_ENV, 0,
					     "%s did not finish within %ld s",
					     c->what, c->timeout_ms / 1000);
		return sbx_error_set(err, SBX_EXIT_ENV, 0,
				     "the Docker engine at %s did not answer "
				     "%s within %ld s",
				     e->host, c->what, c->timeout_ms / 1000);
	case CURLE_WRITE_ERROR:
		if (c->body_over)
			return sbx_error_set(err, SBX_EXIT_ENV, 0,
					     "the Docker engine's reply to %s "
					     "is over %zu bytes",
					     c->what, c->body_max);
		break;
	default:
		break;
	}
	return sbx_error_set(err, SBX_EXIT_ENV, 0,
			     "the Docker engine at %s broke off %s: %s",
			     e->host, c->what,
			     c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
}

/* A plain request whose 2xx reply is JSON; *out is a new reference. */
static int call_json(struct call *c, json_t **out, struct sbx_error **err)
{
	json_error_t jerr;

	*out = NULL;
	if (run(c, err) < 0)
		return -1;
	if (c->status < 200 || c->status >= 300)
		return reply_error(c, err);
	*out =
	    json_loadb(c->body.buf ? c->body.buf : "", c->body.len, 0, &jerr);
	if (!*out)
		return sbx_error_set(err, SBX_EXIT_ENV, 0,
				     "the Docker engine's reply to %s is not "
				     "JSON: %s",
				     c->what, jerr.text);
	return 0;
}

static int ping_on(struct engine *e, void **slot, long timeout_ms,
		   struct sbx_error **err)
{
	struct call c;
	int rc;

	call_init(&c, e, "GET", "/_ping", false);
	c.h = handle(slot);
	c.timeout_ms = timeout_ms;
	rc = run(&c, err);
	if (rc == 0 && (c.status < 200 || c.status >= 300))
		rc = reply_error(&c, err);
	call_release(&c);
	return rc;
}

int engine_ping(struct engine *e, struct sbx_error **err)
{
	return ping_on(e, &e->curl, e->request_ms, err);
}

static int ping_for_stall(struct call *c)
{
	struct sbx_error *perr = NULL;
	long t = c->e->stall_ms;

	if (t < PING_MIN_MS)
		t = PING_MIN_MS;
	if (t > PING_MAX_MS)
		t = PING_MAX_MS;
	if (ping_on(c->e, &c->e->ping, t, &perr) == 0)
		return 0; /* alive, only quiet: a long step */
	if (perr && perr->errnum == ECANCELED) {
		sbx_error_free(&perr);
		return -1;
	}
	c->stall_why = xasprintf("nothing for %ld s, and GET /_ping failed: %s",
				 c->e->stall_ms / 1000,
				 perr ? perr->msg : "unknown error");
	/* Keep the first line: the hint is about connecting, not this. */
	c->stall_why[strcspn(c->stall_why, "\n")] = '\0';
	sbx_error_free(&perr);
	return -1;
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
		if (err && *err && (*err)->status == SBX_EXIT_FAIL) {
			(*err)->status = SBX_EXIT_ENV;
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
		sbx_error_set(err, SBX_EXIT_ENV, 0,
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
		sbx_error_set(err, SBX_EXIT_ENV, 0,
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

int engine_image_inspect(struct engine *e, const char *ref, bool *present,
			 char **id, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	json_t *j = NULL;
	int rc = -1;

	*present = false;
	if (id)
		*id = NULL;
	strbuf_addstr(&path, "/images/");
	add_path_escaped(&path, ref);
	strbuf_addstr(&path, "/json");
	call_init(&c, e, "GET", strbuf_str(&path), true);
	if (run(&c, err) < 0)
		goto out;
	if (c.status == 404) {
		rc = 0;
		goto out;
	}
	if (c.status < 200 || c.status >= 300) {
		reply_error(&c, err);
		goto out;
	}
	*present = true;
	j = json_loadb(c.body.buf ? c.body.buf : "", c.body.len, 0, NULL);
	if (id && json_string_value(json_object_get(j, "Id")))
		*id = xstrdup(json_string_value(json_object_get(j, "Id")));
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

/* Is s "REPO:TAG" for one of repos[]?  A digest is not a tag. */
static bool tag_in(const char *s, const char *const *repos, size_t nrepos)
{
	const char *colon = strrchr(s, ':');

	if (!colon || strchr(colon, '/') || strchr(s, '@'))
		return false;
	for (size_t i = 0; i < nrepos; i++)
		if (strlen(repos[i]) == (size_t)(colon - s) &&
		    strncmp(s, repos[i], (size_t)(colon - s)) == 0)
			return true;
	return false;
}

int engine_image_tags(struct engine *e, const char *const *repos, size_t nrepos,
		      char ***tags, size_t *n, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	json_t *j = NULL, *img;
	size_t i, alloc = 0;
	int rc = -1;

	*tags = NULL;
	*n = 0;
	if (nrepos == 0)
		return 0;
	strbuf_addstr(&path, "/images/json?");
	add_filter_values(&path, "reference", repos, nrepos);
	call_init(&c, e, "GET", strbuf_str(&path), true);
	if (call_json(&c, &j, err) < 0)
		goto out;
	json_array_foreach(j, i, img)
	{
		json_t *t;
		size_t k;
		json_array_foreach(json_object_get(img, "RepoTags"), k, t)
		{
			const char *s = json_string_value(t);
			/* The filter is a pattern: match exactly here. */
			if (!s || !tag_in(s, repos, nrepos))
				continue;
			ALLOC_GROW(*tags, *n + 1, alloc);
			(*tags)[(*n)++] = xstrdup(s);
		}
	}
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

int engine_image_remove(struct engine *e, const char *ref, bool *conflict,
			struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	int rc = -1;

	*conflict = false;
	strbuf_addstr(&path, "/images/");
	add_path_escaped(&path, ref);
	call_init(&c, e, "DELETE", strbuf_str(&path), true);
	if (run(&c, err) < 0)
		goto out;
	if (c.status == 409)
		*conflict = true;
	else if ((c.status < 200 || c.status >= 300) && c.status != 404) {
		reply_error(&c, err);
		goto out;
	}
	rc = 0;
out:
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

int engine_containers_using(struct engine *e, const char *image, char ***names,
			    size_t *n, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	json_t *j = NULL, *ct;
	size_t i, alloc = 0;
	int rc = -1;

	*names = NULL;
	*n = 0;
	strbuf_addstr(&path, "/containers/json?all=1&");
	add_filter(&path, "ancestor", image);
	call_init(&c, e, "GET", strbuf_str(&path), true);
	if (call_json(&c, &j, err) < 0)
		goto out;
	json_array_foreach(j, i, ct)
	{
		const char *name = json_string_value(
		    json_array_get(json_object_get(ct, "Names"), 0));
		const char *cid = json_string_value(json_object_get(ct, "Id"));
		ALLOC_GROW(*names, *n + 1, alloc);
		if (name)
			(*names)[(*n)++] =
			    xstrdup(name[0] == '/' ? name + 1 : name);
		else
			(*names)[(*n)++] = xstrndup(cid ? cid : "?", 12);
	}
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

/* The body of a streamed call: the reply or, on an error line, failure. */
static int run_stream(struct call *c, struct engine_stream *s,
		      struct sbx_error **err)
{
	c->stream = s;
	c->timeout_ms = c->e->stream_ms;
	c->body_max = ERROR_BODY_MAX;
	if (run(c, err) < 0)
		return -1;
	if (c->status < 200 || c->status >= 300)
		return reply_error(c, err);
	engine_stream_finish(s);
	if (s->error)
		return sbx_error_set(err, SBX_EXIT_FAIL, 0, "%s", s->error);
	return 0;
}

int engine_image_pull(struct engine *e, const char *ref,
		      struct engine_stream *s, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	cleanup_free char *name = NULL;
	const char *at = strchr(ref, '@');
	const char *slash = strrchr(ref, '/');
	const char *colon = strrchr(ref, ':');
	const char *tag;
	struct call c;
	int rc;

	/* fromImage=NAME&tag=TAG|DIGEST, as the docker CLI sends it: a
	 * NAME alone would pull every tag. */
	if (at) {
		name = xstrndup(ref, (size_t)(at - ref));
		tag = at + 1;
	} else if (colon && (!slash || colon > slash)) {
		name = xstrndup(ref, (size_t)(colon - ref));
		tag = colon + 1;
	} else {
		name = xstrdup(ref);
		tag = "latest";
	}
	strbuf_addstr(&path, "/images/create?fromImage=");
	add_query_escaped(&path, name);
	strbuf_addstr(&path, "&tag=");
	add_query_escaped(&path, tag);
	call_init(&c, e, "POST", strbuf_str(&path), true);
	rc = run_stream(&c, s, err);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

int engine_build(struct engine *e, struct tar *context, const char *tag,
		 bool nocache, struct engine_stream *s, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	int rc;

	/* rm/forcerm: no intermediate container survives, even a failed one. */
	strbuf_addstr(&path, "/build?t=");
	add_query_escaped(&path, tag);
	strbuf_addstr(&path, "&rm=1&forcerm=1");
	if (nocache)
		strbuf_addstr(&path, "&nocache=1");
	call_init(&c, e, "POST", strbuf_str(&path), true);
	tar_rewind(context);
	c.upload = context;
	rc = run_stream(&c, s, err);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

/* The stream decoder. */

static void tail_add(struct engine_tail *t, const char *line)
{
	size_t slot;

	if (t->n < ENGINE_TAIL_LINES) {
		slot = (t->first + t->n) % ENGINE_TAIL_LINES;
		t->n++;
	} else {
		slot = t->first;
		t->first = (t->first + 1) % ENGINE_TAIL_LINES;
	}
	snprintf(t->line[slot], ENGINE_TAIL_WIDTH, "%s", line);
}

const char *engine_tail_line(const struct engine_tail *t, size_t i)
{
	return t->line[(t->first + i) % ENGINE_TAIL_LINES];
}

/*
 * Terminal escapes out (a RUN's stderr comes wrapped in colour codes),
 * other control characters out, tabs as spaces; cut to fit out[w] at a
 * character boundary, "..." marking the cut.
 */
static void clean_line(char *out, size_t w, const char *in, size_t len,
		       bool truncated)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)in[i];
		if (ch == 0x1b) {
			if (i + 1 < len && in[i + 1] == '[') {
				i += 2;
				while (i < len &&
				       !((unsigned char)in[i] >= 0x40 &&
					 (unsigned char)in[i] <= 0x7e))
					i++;
			}
			continue;
		}
		if (ch == '\t')
			ch = ' ';
		else if (ch < 0x20 || ch == 0x7f)
			continue;
		if (o + 1 >= w) {
			truncated = true;
			break;
		}
		out[o++] = (char)ch;
	}
	if (truncated) {
		o = o + 4 > w ? w - 4 : o;
		o = utf8_whole(out, o);
		memcpy(out + o, "...", 3);
		o += 3;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

static bool bookkeeping(const char *line)
{
	return starts_with(line, " ---> ") ||
	       starts_with(line, "Removing intermediate container ") ||
	       starts_with(line, "Successfully built ") ||
	       starts_with(line, "Successfully tagged ");
}

static void output_line(struct engine_stream *s, const char *line)
{
	int step, nsteps, at = 0;

	if (!*line)
		return;
	if (sscanf(line, "Step %d/%d :%n", &step, &nsteps, &at) == 2 &&
	    at > 0) {
		s->step = step;
		s->nsteps = nsteps;
		snprintf(s->step_text, sizeof(s->step_text), "%s",
			 line + at + (line[at] == ' '));
		/* The tail is the failing step's output, not the build's. */
		s->tail.first = s->tail.n = 0;
		if (s->on_step)
			s->on_step(s->ctx, step, nsteps, s->step_text);
		return;
	}
	if (bookkeeping(line)) {
		if (!s->image_id && starts_with(line, "Successfully built "))
			s->image_id =
			    xstrdup(line + strlen("Successfully built "));
		return;
	}
	tail_add(&s->tail, line);
	if (s->on_line)
		s->on_line(s->ctx, line);
}

static void on_text_line(void *ctx, const char *line, size_t len,
			 bool truncated)
{
	char clean[ENGINE_TAIL_WIDTH];

	clean_line(clean, sizeof(clean), line, len, truncated);
	output_line(ctx, clean);
}

static void on_json_line(void *ctx, const char *line, size_t len,
			 bool truncated)
{
	struct engine_stream *s = ctx;
	json_t *j, *v;
	const char *str;

	while (len > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (len == 0)
		return;
	s->lines++;
	if (truncated) {
		s->bad_lines++;
		output_line(s, "[sbxcat: a line of over 1 MiB from the engine "
			       "was skipped]");
		return;
	}
	j = json_loadb(line, len, 0, NULL);
	if (!json_is_object(j)) {
		s->bad_lines++;
		json_decref(j);
		return;
	}
	v = json_object_get(j, "stream");
	if (json_is_string(v))
		lines_feed(&s->text, json_string_value(v),
			   json_string_length(v));
	str = json_string_value(json_object_get(j, "status"));
	if (str) {
		const char *id = json_string_value(json_object_get(j, "id"));
		const char *prog =
		    json_string_value(json_object_get(j, "progress"));
		char *msg =
		    xasprintf("%s%s%s%s%s", id ? id : "", id ? ": " : "", str,
			      prog ? " " : "", prog ? prog : "");
		on_text_line(s, msg, strlen(msg), false);
		free(msg);
	}
	str =
	    json_string_value(json_object_get(json_object_get(j, "aux"), "ID"));
	if (str && !s->image_id)
		s->image_id = xstrdup(str);
	str = json_string_value(
	    json_object_get(json_object_get(j, "errorDetail"), "message"));
	if (!str)
		str = json_string_value(json_object_get(j, "error"));
	if (str && !s->error) {
		/* Output before the error line is part of its story. */
		lines_finish(&s->text);
		s->error = xstrdup(str);
	}
	json_decref(j);
}

void engine_stream_init(struct engine_stream *s)
{
	memset(s, 0, sizeof(*s));
	lines_init(&s->json, ENGINE_JSON_LINE_MAX, on_json_line, s);
	lines_init(&s->text, TEXT_LINE_MAX, on_text_line, s);
}

void engine_stream_feed(struct engine_stream *s, const char *data, size_t len)
{
	lines_feed(&s->json, data, len);
}

void engine_stream_finish(struct engine_stream *s)
{
	lines_finish(&s->json);
	lines_finish(&s->text);
}

void engine_stream_release(struct engine_stream *s)
{
	lines_release(&s->json);
	lines_release(&s->text);
	free(s->error);
	free(s->image_id);
	memset(s, 0, sizeof(*s));
}

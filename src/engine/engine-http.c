/*
 * engine-http.c - the engine's request runner (see engine-http.h): curl
 * handle set-up, the request and its reply, and the mapping of what went
 * wrong to an error.
 *
 * One curl easy handle per struct engine, reset between calls so that the
 * connection to the engine is kept and reused (a no-op prewarm is a few
 * inspect requests on one connection).  A second handle, used only for
 * pings while a stream is silent, lets a build's progress callback ask
 * whether the engine is still there without touching the transfer it is
 * called from.
 *
 * Every option set is checked: a CURLOPT_UNIX_SOCKET_PATH that did not
 * take would send the request to localhost:80 instead of the engine.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine-http.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "engine/tar.h"
#include "basic/text.h"
#include "basic/xjson.h"

/* An error reply or a plain JSON answer larger than this is refused. */
#define REPLY_MAX (8u << 20)
/* Of an error reply to a streamed call, this much is kept. */
#define ERROR_BODY_MAX (64u << 10)
#define PING_MIN_MS 1000
#define PING_MAX_MS 10000

/* s with every byte but letters, digits and those in keep %-encoded. */
static void add_escaped(struct strbuf *sb, const char *s, const char *keep)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr(keep, c)) {
			strbuf_addch(sb, c);
		} else {
			strbuf_addch(sb, '%');
			strbuf_addch(sb, hex[c >> 4]);
			strbuf_addch(sb, hex[c & 15]);
		}
	}
}

void engine_add_path_escaped(struct strbuf *sb, const char *s)
{
	add_escaped(sb, s, "/:@._-");
}

/*
 * Neither '/' nor '.' is let through, so an id of "../../images/x" (or
 * "..") cannot become a dot segment that curl resolves into another
 * endpoint; the engine decodes %2E and %2F back and answers for the name
 * as given (no such container).
 */
void engine_add_segment_escaped(struct strbuf *sb, const char *s)
{
	add_escaped(sb, s, "_-");
}

void engine_add_query_escaped(struct strbuf *sb, const char *s)
{
	char *q = sym_curl_easy_escape(NULL, s, 0);
	if (!q)
		die_oom();
	strbuf_addstr(sb, q);
	sym_curl_free(q);
}

void engine_add_filter_values(struct strbuf *sb, const char *key,
			      const char *const *values, size_t n)
{
	json_t *vals = json_array();
	json_t *f;
	char *s;

	for (size_t i = 0; i < n; i++)
		json_array_append_new(vals, xjson_string(values[i]));
	f = xjson_pack("{s:o}", key, vals);
	s = json_dumps(f, JSON_COMPACT);
	if (!s)
		die_oom();
	strbuf_addstr(sb, "filters=");
	engine_add_query_escaped(sb, s);
	free(s);
	json_decref(f);
}

static CURL *handle(void **slot)
{
	if (!*slot)
		*slot = sym_curl_easy_init();
	if (!*slot)
		die_oom();
	return *slot;
}

void call_init(struct call *c, struct engine *e, const char *method,
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

void call_release(struct call *c)
{
	free(c->what);
	free(c->url);
	free(c->stall_why);
	free(c->header_value);
	strbuf_release(&c->body);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
	struct call *c = ud;
	size_t n = size * nmemb;

	c->last_rx = clock_now_ms();
	if (!c->status)
		sym_curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
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

/* Keeps the value of c->want_header (the last one, when repeated). */
static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	struct call *c = ud;
	size_t n = size * nmemb, k = strlen(c->want_header);

	if (n > k && p[k] == ':' && strncasecmp(p, c->want_header, k) == 0) {
		const char *v = p + k + 1, *end = p + n;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && strchr(" \t\r\n", end[-1]))
			end--;
		free(c->header_value);
		c->header_value = xstrndup(v, (size_t)(end - v));
	}
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

	if (c->e->cancel && atomic_load(c->e->cancel))
		return 1;
	now = clock_now_ms();
	if (c->idle_ms > 0 && now - c->last_rx >= c->idle_ms) {
		c->idle = true;
		return 1;
	}
	if (!c->stream || c->e->stall_ms <= 0)
		return 0;
	if (now - c->last_rx < c->e->stall_ms ||
	    now - c->last_ping < c->e->stall_ms)
		return 0;
	c->last_ping = now;
	return ping_for_stall(c) < 0 ? 1 : 0;
}

void engine_trace(struct engine *e, const char *method, const char *path)
{
	char *line;

	if (e->trace_fd < 0)
		return;
	line = xasprintf("%s %s\n", method, path);
	/* One write with O_APPEND: lines of concurrent calls do not mix. */
	if (write(e->trace_fd, line, strlen(line)) < 0) {
		/* a trace is a debugging aid; losing a line is acceptable */
	}
	free(line);
}

static void trace(struct call *c)
{
	engine_trace(c->e, c->method, c->url + strlen(c->e->base));
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
	char buf[128];
	/* strerror_r: strerror's buffer may be another thread's. */
	const char *why = oserr ? strerror_r((int)oserr, buf, sizeof(buf))
				: (c->errbuf[0] ? c->errbuf : "no answer");
	int rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			       "cannot reach the Docker engine at %s: %s",
			       c->e->host, why);
	if (err && *err) {
		(*err)->errnum = (int)oserr;
		sbx_error_hint(*err, "%s", unreachable_hint((int)oserr));
	}
	return rc;
}

static int cancelled(struct sbx_error **err)
{
	int rc = sbx_error_set(err, SBX_E_CANCELLED, 0, "cancelled");
	if (err && *err)
		(*err)->errnum = ECANCELED;
	return rc;
}

/*
 * The engine's own words from an error reply ({"message": "..."}),
 * escaped: a message can quote a build's output or a sandbox's file name.
 */
static char *reply_message(const char *body, size_t len)
{
	const char *b = body ? body : "";
	json_t *j = json_loadb(b, len, 0, NULL);
	json_t *m = json_object_get(j, "message");
	struct strbuf sb = STRBUF_INIT;

	if (json_is_string(m)) {
		text_add_escaped(&sb, json_string_value(m),
				 json_string_length(m));
	} else {
		size_t n = len;
		while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r' ||
				 b[n - 1] == ' '))
			n--;
		if (n > 500)
			n = utf8_whole(b, 500);
		if (n)
			text_add_escaped(&sb, b, n);
		else
			strbuf_addstr(&sb, "(no message)");
	}
	json_decref(j);
	return strbuf_detach(&sb, NULL);
}

/* An engine's refusal, by its status: the name it says is missing, the
 * state it says forbids the request, or the request refused. */
static enum sbx_kind engine_http_kind(long status)
{
	if (status == 404)
		return SBX_E_NOT_FOUND;
	if (status == 409)
		return SBX_E_CONFLICT;
	return SBX_E_REFUSED;
}

int engine_reply_error(long status, const char *body, size_t len,
		       struct sbx_error **err)
{
	cleanup_free char *m = reply_message(body, len);
	int rc = sbx_error_set(err, engine_http_kind(status), 0,
			       "the Docker engine answered HTTP %ld: %s",
			       status, m);
	if (err && *err)
		(*err)->http = (int)status;
	return rc;
}

int call_reply_error(struct call *c, struct sbx_error **err)
{
	return engine_reply_error(c->status, c->body.buf, c->body.len, err);
}

/*
 * Options are set through these, one per kind of value: curl_easy_setopt
 * takes its value through "...", and the compile-time check curl.h offers
 * is off (curl-dl.h), so each helper checks that the option takes its kind
 * of value (curl numbers options by kind), and the first failure is kept
 * with the option's name.
 */
struct setter {
	CURL *h;
	const char *failed; /* the first option that did not take */
	CURLcode rc;
};

static void opt_done(struct setter *s, const char *name, CURLcode rc)
{
	if (rc != CURLE_OK && !s->failed) {
		s->failed = name;
		s->rc = rc;
	}
}

static bool opt_kind(CURLoption o, long kind)
{
	return o >= kind && o < kind + 10000;
}

static void opt_long(struct setter *s, CURLoption o, const char *name, long v)
{
	opt_done(s, name,
		 opt_kind(o, CURLOPTTYPE_LONG)
		     ? sym_curl_easy_setopt(s->h, o, v)
		     : CURLE_BAD_FUNCTION_ARGUMENT);
}

static void opt_ptr(struct setter *s, CURLoption o, const char *name,
		    const void *v)
{
	opt_done(s, name,
		 opt_kind(o, CURLOPTTYPE_OBJECTPOINT)
		     ? sym_curl_easy_setopt(s->h, o, v)
		     : CURLE_BAD_FUNCTION_ARGUMENT);
}

/* Callbacks, each of its own type. */
static void opt_fn(struct setter *s, CURLoption o, const char *name,
		   curl_write_callback write_fn, curl_read_callback read_fn,
		   curl_seek_callback seek_fn,
		   curl_xferinfo_callback xferinfo_fn)
{
	CURLcode rc = CURLE_BAD_FUNCTION_ARGUMENT;

	if ((o == CURLOPT_WRITEFUNCTION || o == CURLOPT_HEADERFUNCTION) &&
	    write_fn)
		rc = sym_curl_easy_setopt(s->h, o, write_fn);
	else if (o == CURLOPT_READFUNCTION && read_fn)
		rc = sym_curl_easy_setopt(s->h, o, read_fn);
	else if (o == CURLOPT_SEEKFUNCTION && seek_fn)
		rc = sym_curl_easy_setopt(s->h, o, seek_fn);
	else if (o == CURLOPT_XFERINFOFUNCTION && xferinfo_fn)
		rc = sym_curl_easy_setopt(s->h, o, xferinfo_fn);
	opt_done(s, name, rc);
}

#define OPT_LONG(s, o, v) opt_long(s, o, #o, v)
#define OPT_PTR(s, o, v) opt_ptr(s, o, #o, v)
#define OPT_WRITE(s, fn)                                                       \
	opt_fn(s, CURLOPT_WRITEFUNCTION, "CURLOPT_WRITEFUNCTION", fn, NULL,    \
	       NULL, NULL)
#define OPT_HEADER(s, fn)                                                      \
	opt_fn(s, CURLOPT_HEADERFUNCTION, "CURLOPT_HEADERFUNCTION", fn, NULL,  \
	       NULL, NULL)
#define OPT_READ(s, fn)                                                        \
	opt_fn(s, CURLOPT_READFUNCTION, "CURLOPT_READFUNCTION", NULL, fn,      \
	       NULL, NULL)
#define OPT_SEEK(s, fn)                                                        \
	opt_fn(s, CURLOPT_SEEKFUNCTION, "CURLOPT_SEEKFUNCTION", NULL, NULL,    \
	       fn, NULL)
#define OPT_XFERINFO(s, fn)                                                    \
	opt_fn(s, CURLOPT_XFERINFOFUNCTION, "CURLOPT_XFERINFOFUNCTION", NULL,  \
	       NULL, NULL, fn)

/* Set up c->h for c; the headers list, if any, is returned to free. */
static struct curl_slist *setup(struct call *c, struct setter *s)
{
	struct engine *e = c->e;
	struct curl_slist *headers = NULL;

	bool head = strcmp(c->method, "HEAD") == 0;

	OPT_PTR(s, CURLOPT_URL, c->url);
	/* A HEAD through CUSTOMREQUEST would wait for the Content-Length
	 * bytes that never come: NOBODY is curl's own HEAD. */
	if (head)
		OPT_LONG(s, CURLOPT_NOBODY, 1L);
	OPT_PTR(s, CURLOPT_CUSTOMREQUEST,
		strcmp(c->method, "GET") && strcmp(c->method, "POST") && !head
		    ? c->method
		    : NULL);
	OPT_LONG(s, CURLOPT_NOSIGNAL, 1L);
	OPT_PTR(s, CURLOPT_ERRORBUFFER, c->errbuf);
	OPT_LONG(s, CURLOPT_CONNECTTIMEOUT_MS,
		 (long)ENGINE_CONNECT_SECONDS * 1000);
	OPT_LONG(s, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	OPT_PTR(s, CURLOPT_USERAGENT, "sbxcat/" PACKAGE_VERSION);
	/* An http_proxy meant for the internet must not see engine traffic. */
	OPT_PTR(s, CURLOPT_PROXY, "");
	if (e->sock)
		OPT_PTR(s, CURLOPT_UNIX_SOCKET_PATH, e->sock);
	if (e->tls) {
		if (e->ca)
			OPT_PTR(s, CURLOPT_CAINFO, e->ca);
		if (e->cert)
			OPT_PTR(s, CURLOPT_SSLCERT, e->cert);
		if (e->key)
			OPT_PTR(s, CURLOPT_SSLKEY, e->key);
		OPT_LONG(s, CURLOPT_SSL_VERIFYPEER, e->tls_verify ? 1L : 0L);
		OPT_LONG(s, CURLOPT_SSL_VERIFYHOST, e->tls_verify ? 2L : 0L);
	}
	OPT_WRITE(s, on_data);
	OPT_PTR(s, CURLOPT_WRITEDATA, c);
	OPT_LONG(s, CURLOPT_NOPROGRESS, 0L);
	OPT_XFERINFO(s, on_progress);
	OPT_PTR(s, CURLOPT_XFERINFODATA, c);
	if (c->want_header) {
		OPT_HEADER(s, on_header);
		OPT_PTR(s, CURLOPT_HEADERDATA, c);
	}
	if (c->upload) {
		/* Unknown length up front: chunked, no 100-continue wait. */
		headers = sym_curl_slist_append(
		    headers, "Content-Type: application/x-tar");
		headers = sym_curl_slist_append(headers,
						"Transfer-Encoding: chunked");
		headers = sym_curl_slist_append(headers, "Expect:");
		if (!headers)
			die_oom();
		OPT_LONG(s, CURLOPT_POST, 1L);
		OPT_READ(s, on_upload);
		OPT_PTR(s, CURLOPT_READDATA, c->upload);
		OPT_SEEK(s, on_seek);
		OPT_PTR(s, CURLOPT_SEEKDATA, c->upload);
		OPT_PTR(s, CURLOPT_HTTPHEADER, headers);
	} else if (c->json_body) {
		headers = sym_curl_slist_append(
		    headers, "Content-Type: application/json");
		headers = sym_curl_slist_append(headers, "Expect:");
		if (!headers)
			die_oom();
		OPT_PTR(s, CURLOPT_POSTFIELDS, c->json_body);
		OPT_LONG(s, CURLOPT_POSTFIELDSIZE, (long)strlen(c->json_body));
		OPT_PTR(s, CURLOPT_HTTPHEADER, headers);
	} else if (strcmp(c->method, "POST") == 0) {
		OPT_PTR(s, CURLOPT_POSTFIELDS, "");
		OPT_LONG(s, CURLOPT_POSTFIELDSIZE, 0L);
	}
	if (c->extra_header) {
		headers = sym_curl_slist_append(headers, c->extra_header);
		if (!headers)
			die_oom();
		OPT_PTR(s, CURLOPT_HTTPHEADER, headers);
	}
	return headers;
}

int call_run(struct call *c, struct sbx_error **err)
{
	struct engine *e = c->e;
	struct setter s = {c->h, NULL, CURLE_OK};
	struct curl_slist *headers;
	CURLcode rc;
	long oserr = 0;
	double connect_time = 0;

	sym_curl_easy_reset(c->h);
	headers = setup(c, &s);
	if (s.failed) {
		sym_curl_slist_free_all(headers);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "cannot set %s for %s: %s", s.failed,
				     c->what, sym_curl_easy_strerror(s.rc));
	}
	c->last_rx = clock_now_ms();
	c->last_ping = c->last_rx;
	c->errbuf[0] = '\0';
	trace(c);
	rc = sym_curl_easy_perform(c->h);
	sym_curl_slist_free_all(headers);
	/* These three are of the types curl documents; a failure leaves 0. */
	sym_curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
	sym_curl_easy_getinfo(c->h, CURLINFO_OS_ERRNO, &oserr);
	sym_curl_easy_getinfo(c->h, CURLINFO_CONNECT_TIME, &connect_time);

	switch (rc) {
	case CURLE_OK:
		return 0;
	case CURLE_ABORTED_BY_CALLBACK:
		if (c->idle)
			return sbx_error_set(err, SBX_E_TIMEOUT, 0,
					     "the Docker engine sent nothing "
					     "for %ld s during %s",
					     (c->idle_ms + 999) / 1000,
					     c->what);
		if (c->stall_why)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
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
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "%s did not finish within %ld s",
					     c->what, c->timeout_ms / 1000);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "the Docker engine at %s did not answer "
				     "%s within %ld s",
				     e->host, c->what, c->timeout_ms / 1000);
	case CURLE_WRITE_ERROR:
		if (c->body_over)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
					     "the Docker engine's reply to %s "
					     "is over %zu bytes",
					     c->what, c->body_max);
		break;
	default:
		break;
	}
	return sbx_error_set(
	    err, SBX_E_UNAVAILABLE, 0, "the Docker engine at %s broke off %s: %s",
	    e->host, c->what,
	    c->errbuf[0] ? c->errbuf : sym_curl_easy_strerror(rc));
}

int call_json(struct call *c, json_t **out, struct sbx_error **err)
{
	json_error_t jerr;

	*out = NULL;
	if (call_run(c, err) < 0)
		return -1;
	if (c->status < 200 || c->status >= 300)
		return call_reply_error(c, err);
	*out =
	    json_loadb(c->body.buf ? c->body.buf : "", c->body.len, 0, &jerr);
	if (!*out)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "the Docker engine's reply to %s is not "
				     "JSON: %s",
				     c->what, jerr.text);
	return 0;
}

int call_stream(struct call *c, struct engine_stream *s, struct sbx_error **err)
{
	c->stream = s;
	c->timeout_ms = c->e->stream_ms;
	c->body_max = ERROR_BODY_MAX;
	if (call_run(c, err) < 0)
		return -1;
	if (c->status < 200 || c->status >= 300)
		return call_reply_error(c, err);
	engine_stream_finish(s);
	if (s->error)
		return sbx_error_set(err, SBX_E_REFUSED, 0, "%s", s->error);
	return 0;
}

int call_simple(struct engine *e, const char *method, const char *path,
		const long *accept, long *status, struct sbx_error **err)
{
	struct call c;
	int rc;

	call_init(&c, e, method, path, true);
	rc = call_run(&c, err);
	if (status)
		*status = c.status;
	if (rc == 0 && (c.status < 200 || c.status >= 300)) {
		rc = -1;
		for (size_t i = 0; accept && accept[i]; i++)
			if (accept[i] == c.status)
				rc = 0;
		if (rc < 0)
			call_reply_error(&c, err);
	}
	call_release(&c);
	return rc;
}

static int ping_on(struct engine *e, void **slot, long timeout_ms,
		   struct sbx_error **err)
{
	struct call c;
	int rc;

	call_init(&c, e, "GET", "/_ping", false);
	c.h = handle(slot);
	c.timeout_ms = timeout_ms;
	rc = call_run(&c, err);
	if (rc == 0 && (c.status < 200 || c.status >= 300))
		rc = call_reply_error(&c, err);
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
	/* The message alone: the hint is about connecting, not this. */
	c->stall_why = xasprintf("nothing for %ld s, and GET /_ping failed: %s",
				 c->e->stall_ms / 1000,
				 perr ? perr->msg : "unknown error");
	sbx_error_free(&perr);
	return -1;
}

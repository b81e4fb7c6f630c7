/*
 * auditweb-serve.c - `sbxcat audit web` (auditweb.h): the auditors and their
 * logins, who asks (the admit hook), the route table, the JSON API, the
 * live stream and the export; the pages are auditweb-html.c's.
 *
 * Bounds (each a constant below, docs/audit.md "The auditor's page"):
 * a page of the log 200 rows, a timeline's 1000 events, a chart's 31
 * days, 4 live streams an auditor and 64 in all (each at most an hour),
 * 1024 logins at once (the oldest dropped), a login's body 1 KiB, a
 * query string 4 KiB.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "basic/text.h"
#include "basic/xjson.h"
#include "serve/auditweb-int.h"
#include "serve/auditweb.h"
#include "serve/serve-int.h"
#include "svc/svc-wire.h"

#define AW_AUDITORS_MAX 4096	       /* lines of the auditors file */
#define AW_AUDITORS_FILE_MAX (1 << 20) /* its bytes */
#define AW_LOGINS_MAX 1024
#define AW_LOGIN_MS (8LL * 3600 * 1000)
#define AW_LOGIN_BODY_MAX 1024
#define AW_QUERY_MAX 4096
#define AW_PAGE_DEFAULT 50
#define AW_PAGE_MAX 200
#define AW_TIMELINE_DEFAULT 500
#define AW_TIMELINE_MAX 1000
#define AW_CHART_DEFAULT_US (24LL * 3600 * 1000000)
#define AW_STREAMS_AUDITOR 4
#define AW_STREAMS_MAX 64
#define AW_STREAM_MS (3600LL * 1000)
#define AW_KEEPALIVE_MS 15000
#define AW_COOKIE "sbxcat_audit"

struct aw_auditor {
	char *tenant; /* NULL: every tenant ("*") */
	char hash[65];
	unsigned streams;
};

struct aw_login {
	char hash[65]; /* SHA-256 of the cookie's id */
	int auditor;
	long long made_ms;
};

struct auditpage {
	struct svc_auditweb *w;
	struct http_server *http;
	struct aw_auditor *aud;
	size_t naud;
	pthread_mutex_t lock; /* logins, streams */
	struct aw_login logins[AW_LOGINS_MAX];
	size_t nlogins;
	unsigned streams;
};

/* Every response's headers (docs/audit.md): no inline script or style,
 * nothing from elsewhere, no framing, no referrer. */
static const char *const aw_headers[] = {
    "Content-Security-Policy: default-src 'none'; script-src 'self'; "
    "style-src 'self'; img-src 'self'; connect-src 'self'; form-action "
    "'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options: nosniff",
    "Referrer-Policy: no-referrer",
    /* Every answer is an auditor's view of the audit, or the server's
     * refusal: none is to be kept (the assets are small). */
    "Cache-Control: no-store",
};

/* What a route declares (http_route.needs). */
struct aw_needs {
	bool api;  /* JSON errors (else HTML) */
	bool open; /* no login needed */
};
static const struct aw_needs NEED_API = {.api = true};
static const struct aw_needs NEED_PAGE = {.api = false};
static const struct aw_needs NEED_OPEN_API = {.api = true, .open = true};
static const struct aw_needs NEED_OPEN_PAGE = {.open = true};

/* ---- the auditors ---- */

static int auditor_line(struct auditpage *ap, char *line, unsigned lineno,
			const char *path, size_t *alloc, const char *service,
			struct sbx_error **err)
{
	char *sp = strpbrk(line, " \t");
	const char *tok;
	struct aw_auditor *a;

	if (!*line || *line == '#')
		return 0;
	if (!sp)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s:%u: not 'TENANT TOKEN' or '* TOKEN'",
				     path, lineno);
	*sp = '\0';
	tok = sp + 1 + strspn(sp + 1, " \t");
	if ((strcmp(line, "*") && !svc_wire_name_valid(line)) || !*tok ||
	    strlen(tok) < 16)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s:%u: not 'TENANT TOKEN' or '* TOKEN' "
				     "(a tenant of [A-Za-z0-9._-], a token of "
				     "at least 16 characters)",
				     path, lineno);
	if (ap->naud == AW_AUDITORS_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s: more than %d auditors", path,
				     AW_AUDITORS_MAX);
	ALLOC_GROW(ap->aud, ap->naud + 1, *alloc);
	a = &ap->aud[ap->naud++];
	memset(a, 0, sizeof(*a));
	a->tenant = strcmp(line, "*") ? xstrdup(line) : NULL;
	if (strncmp(tok, "sha256:", 7) == 0 && strlen(tok + 7) == 64)
		snprintf(a->hash, sizeof(a->hash), "%s", tok + 7);
	else
		sha256_hex(tok, strlen(tok), a->hash);
	if (service && CRYPTO_memcmp(a->hash, service, 64) == 0)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s:%u: that is the service's token "
				     "(SANDBOXD_TOKEN): an auditor needs a "
				     "token of its own",
				     path, lineno);
	return 0;
}

static int load_auditors(struct auditpage *ap, const char *path,
			 const char *service_token, struct sbx_error **err)
{
	cleanup_free char *data = NULL;
	char *line, *save = NULL, service[65], *sh = NULL;
	size_t alloc = 0;
	unsigned n = 0;

	if (service_token && *service_token) {
		sha256_hex(service_token, strlen(service_token), service);
		sh = service;
	}
	if (serve_read_secret_file(path, AW_AUDITORS_FILE_MAX, &data, err) < 0)
		return -1;
	for (line = data; line; line = save) {
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (auditor_line(ap, line, ++n, path, &alloc, sh, err) < 0) {
			explicit_bzero(data, strlen(data));
			return -1;
		}
	}
	explicit_bzero(data, strlen(data));
	if (!ap->naud)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "%s: no auditor ('TENANT TOKEN' or '* "
				     "TOKEN' lines)",
				     path);
	return 0;
}

/* The auditor of a token, or -1: every line compared, in constant
 * time. */
static int auditor_of_token(const struct auditpage *ap, const char *tok)
{
	char h[65];
	int found = -1;

	sha256_hex(tok, strlen(tok), h);
	for (size_t i = 0; i < ap->naud; i++)
		if (CRYPTO_memcmp(h, ap->aud[i].hash, 64) == 0 && found < 0)
			found = (int)i;
	return found;
}

/* ---- logins ---- */

/* The cookie's value in a Cookie header, or NULL (out holds it). */
static const char *cookie_value(const char *hdr, char out[64])
{
	const char *p = hdr;

	while (p && *p) {
		p += strspn(p, " ;");
		if (!strncmp(p, AW_COOKIE "=", strlen(AW_COOKIE "="))) {
			size_t n;

			p += strlen(AW_COOKIE "=");
			n = strcspn(p, "; ");
			if (n == 0 || n >= 64)
				return NULL;
			memcpy(out, p, n);
			out[n] = '\0';
			return out;
		}
		p = strchr(p, ';');
	}
	return NULL;
}

static int login_find(struct auditpage *ap, const char *id)
{
	long long now = clock_now_ms();
	int found = -1;
	char h[65];

	sha256_hex(id, strlen(id), h);
	pthread_mutex_lock(&ap->lock);
	for (size_t i = 0; i < ap->nlogins; i++)
		if (CRYPTO_memcmp(h, ap->logins[i].hash, 64) == 0 &&
		    now - ap->logins[i].made_ms < AW_LOGIN_MS && found < 0)
			found = ap->logins[i].auditor;
	pthread_mutex_unlock(&ap->lock);
	return found;
}

/* A new login of auditor: its cookie's id into id (33 bytes). */
static void login_add(struct auditpage *ap, int auditor, char id[33])
{
	long long now = clock_now_ms();
	struct aw_login *l;
	size_t oldest = 0;

	random_hex(id, 16);
	id[32] = '\0';
	pthread_mutex_lock(&ap->lock);
	/* Expired ones go first; a full table loses its oldest. */
	for (size_t i = 0; i < ap->nlogins;)
		if (now - ap->logins[i].made_ms >= AW_LOGIN_MS)
			ap->logins[i] = ap->logins[--ap->nlogins];
		else
			i++;
	if (ap->nlogins == AW_LOGINS_MAX) {
		for (size_t i = 1; i < ap->nlogins; i++)
			if (ap->logins[i].made_ms < ap->logins[oldest].made_ms)
				oldest = i;
		l = &ap->logins[oldest];
	} else {
		l = &ap->logins[ap->nlogins++];
	}
	sha256_hex(id, 32, l->hash);
	l->auditor = auditor;
	l->made_ms = now;
	pthread_mutex_unlock(&ap->lock);
}

static void login_drop(struct auditpage *ap, const char *id)
{
	char h[65];

	sha256_hex(id, strlen(id), h);
	pthread_mutex_lock(&ap->lock);
	for (size_t i = 0; i < ap->nlogins; i++)
		if (CRYPTO_memcmp(h, ap->logins[i].hash, 64) == 0) {
			ap->logins[i] = ap->logins[--ap->nlogins];
			break;
		}
	pthread_mutex_unlock(&ap->lock);
}

/* Who asks: a Bearer token, else the login cookie (memory only). */
static void aw_admit(void *arg, const struct http_route *rt,
		     const struct http_request *req, struct http_admit *a)
{
	struct auditpage *ap = arg;
	const char *auth = http_header(req, "Authorization");
	const char *cookie = http_header(req, "Cookie");
	char id[64];
	int who = -1;

	(void)rt;
	if (auth && !strncasecmp(auth, "Bearer ", 7))
		who = auditor_of_token(ap, auth + 7);
	else if (cookie && cookie_value(cookie, id))
		who = login_find(ap, id);
	a->who = who + 1;
	if (who >= 0)
		snprintf(a->caller, sizeof(a->caller), "auditor-%d", who);
}

/* The server's own refusals (404, 405, 413, 429, 503...) as the API's
 * errors. */
static char *aw_refusal(void *arg, const struct http_route *rt,
			const char *path, int status, const char *detail)
{
	json_t *doc = xjson_pack("{s:s}", "error", detail ? detail : "");
	char *s = json_dumps(doc, JSON_COMPACT);

	(void)arg, (void)rt, (void)path, (void)status;
	json_decref(doc);
	if (!s)
		die_oom();
	return s;
}

/* ---- answers ---- */

static void give_html(struct http_response *res, int status, struct strbuf *sb)
{
	free(res->body);
	res->status = status;
	res->body = strbuf_detach(sb, &res->body_len);
	res->content_type = "text/html; charset=utf-8";
}

static void fail(struct http_request *req, struct http_response *res,
		 int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(struct http_request *req, struct http_response *res,
		 int status, const char *fmt, ...)
{
	const struct aw_needs *n = req->needs;
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	if (!n || n->api) {
		http_respond_json(
		    res, status, xjson_pack("{s:o}", "error", xjson_text(msg)));
	} else {
		struct strbuf sb = STRBUF_INIT;

		aw_page_error(&sb, status, msg);
		give_html(res, status, &sb);
	}
	if (status == 503)
		res->retry_after = "5";
	free(msg);
}

/* A failed read: a bad value 400, the database 503. */
static void fail_err(struct http_request *req, struct http_response *res,
		     struct sbx_error **err)
{
	if ((*err)->kind == SBX_E_INVALID)
		fail(req, res, 400, "%s", (*err)->msg);
	else
		fail(req, res, 503, "the audit database is unavailable: %s",
		     (*err)->msg);
	sbx_error_free(err);
}

static void redirect(struct http_response *res, const char *to)
{
	res->status = 303;
	http_response_header(res, "Location", to);
}

static void give_json(struct http_response *res, json_t *doc)
{
	http_respond_json(res, 200, doc);
}

/* The auditor asking, or -1 having answered (pages to /login, the API
 * 401). */
static int auth(struct auditpage *ap, struct http_request *req,
		struct http_response *res, struct aw_who *who)
{
	const struct aw_needs *n = req->needs;
	int i = req->who - 1;

	if (i < 0 || (size_t)i >= ap->naud) {
		if (n->api)
			fail(req, res, 401,
			     "log in first: POST /login, or "
			     "Authorization: Bearer TOKEN with an auditor's "
			     "token");
		else
			redirect(res, "/login");
		return -1;
	}
	who->tenant = ap->aud[i].tenant;
	snprintf(req->tenant, sizeof(req->tenant), "%s",
		 who->tenant ? who->tenant : "*");
	return i;
}

/* ---- a request's filter ---- */

static const char *param(struct http_request *req, const char *name)
{
	const char *v = http_query(req, name);

	return v && *v ? v : NULL;
}

/* The query's filter: 0, or -1 having answered (400 naming the
 * parameter, 403 another tenant's). */
static int parse_query(struct http_request *req, struct http_response *res,
		       const struct aw_who *who, struct aw_query *q,
		       unsigned long def_limit, unsigned long max_limit)
{
	struct sbx_error *err = NULL;
	const char *name, *value, *v;
	unsigned long long n;
	size_t total = 0;

	memset(q, 0, sizeof(*q));
	for (size_t i = 0; http_query_nth(req, i, &name, &value); i++)
		total += strlen(name) + (value ? strlen(value) : 0) + 2;
	if (total > AW_QUERY_MAX) {
		fail(req, res, 414, "the query is longer than %d bytes",
		     AW_QUERY_MAX);
		return -1;
	}
	q->tenant_asked = param(req, "tenant");
	if (who->tenant && q->tenant_asked &&
	    strcmp(q->tenant_asked, who->tenant)) {
		fail(req, res, 403, "this auditor token is for tenant '%s'",
		     who->tenant);
		return -1;
	}
	q->f.tenant = who->tenant ? who->tenant : q->tenant_asked;
	q->f.session = param(req, "session");
	q->f.agent = param(req, "agent");
	q->f.run = param(req, "run");
	q->f.search = param(req, "q");
	if ((v = param(req, "op"))) {
		q->op_text = v;
		if (svc_audit_parse_ops(v, &q->f.ops, &err) < 0)
			goto bad_op;
	}
	if ((v = param(req, "failed"))) {
		if (!strcmp(v, "1") || !strcmp(v, "on") || !strcmp(v, "true"))
			q->f.failed = true;
		else if (strcmp(v, "0") && strcmp(v, "false")) {
			fail(req, res, 400, "failed: 1 or 0");
			return -1;
		}
	}
	if ((q->since = param(req, "since")) &&
	    svc_audit_parse_time(q->since, false, &q->f.since_us, &err) < 0)
		goto bad_since;
	if ((q->until = param(req, "until")) &&
	    svc_audit_parse_time(q->until, false, &q->f.until_us, &err) < 0)
		goto bad_until;
	if (q->f.since_us && q->f.until_us && q->f.until_us <= q->f.since_us) {
		fail(req, res, 400, "until: the window ends before it starts");
		return -1;
	}
	if ((q->after = param(req, "after")) &&
	    svc_audit_parse_cursor(q->after, &q->f, &err) < 0)
		goto bad_after;
	q->limit = def_limit;
	if ((v = param(req, "limit"))) {
		if (!text_parse_uint(v, max_limit, &n) || n < 1) {
			fail(req, res, 400, "limit: 1 to %lu", max_limit);
			return -1;
		}
		q->limit = (unsigned long)n;
	}
	if ((v = param(req, "by"))) {
		if (strcmp(v, "tenant") && strcmp(v, "agent")) {
			fail(req, res, 400, "by: tenant or agent");
			return -1;
		}
		q->by_agent = !strcmp(v, "agent");
	}
	return 0;
bad_op:
	fail(req, res, 400, "op: %s", err->msg);
	goto out;
bad_since:
	fail(req, res, 400, "since: %s", err->msg);
	goto out;
bad_until:
	fail(req, res, 400, "until: %s", err->msg);
	goto out;
bad_after:
	fail(req, res, 400, "after: %s", err->msg);
out:
	sbx_error_free(&err);
	return -1;
}

/* ---- the log ---- */

static void h_ops(void *arg, struct http_request *req,
		  struct http_response *res)
{
	struct auditpage *ap = arg;
	struct sbx_error *err = NULL;
	struct aw_query q;
	struct aw_who who;
	json_t *rows;
	char *next;

	if (auth(ap, req, res, &who) < 0 ||
	    parse_query(req, res, &who, &q, AW_PAGE_DEFAULT, AW_PAGE_MAX) < 0)
		return;
	if (svc_auditweb_page(ap->w, &q.f, q.limit, &rows, &next, &err) < 0)
		return fail_err(req, res, &err);
	give_json(res, xjson_pack("{s:o, s:o}", "rows", rows, "next",
				  next ? json_string(next) : json_null()));
	free(next);
}

static void h_log_page(void *arg, struct http_request *req,
		       struct http_response *res)
{
	struct auditpage *ap = arg;
	struct strbuf sb = STRBUF_INIT;
	struct sbx_error *err = NULL;
	struct aw_query q;
	struct aw_who who;
	json_t *rows;
	char *next;

	if (auth(ap, req, res, &who) < 0 ||
	    parse_query(req, res, &who, &q, AW_PAGE_DEFAULT, AW_PAGE_MAX) < 0)
		return;
	if (svc_auditweb_page(ap->w, &q.f, q.limit, &rows, &next, &err) < 0)
		return fail_err(req, res, &err);
	aw_page_log(&sb, &who, &q, rows, next);
	give_html(res, 200, &sb);
	json_decref(rows);
	free(next);
}

/* ---- a session ---- */

/* The session of the path's {id}, of the auditor's tenant: *info, or -1
 * having answered (404 for none, as for another tenant's). */
static int session_of(struct auditpage *ap, struct http_request *req,
		      struct http_response *res, const struct aw_who *who,
		      json_t **info)
{
	struct sbx_error *err = NULL;
	const char *id = req->nparams ? req->params[0] : "";
	int rc;

	snprintf(req->session, sizeof(req->session), "%s", id);
	rc = svc_auditweb_session(ap->w, id, who->tenant, info, &err);
	if (rc < 0) {
		fail_err(req, res, &err);
		return -1;
	}
	if (rc == 1) {
		fail(req, res, 404, "no such session");
		return -1;
	}
	return 0;
}

static const char *key_of(json_t *info)
{
	return json_string_value(json_object_get(info, "session"));
}

static void h_session(void *arg, struct http_request *req,
		      struct http_response *res)
{
	struct auditpage *ap = arg;
	struct aw_who who;
	json_t *info;

	if (auth(ap, req, res, &who) < 0 ||
	    session_of(ap, req, res, &who, &info) < 0)
		return;
	give_json(res, info);
}

static void h_timeline(void *arg, struct http_request *req,
		       struct http_response *res)
{
	struct auditpage *ap = arg;
	struct sbx_error *err = NULL;
	unsigned long long after = 0, limit = AW_TIMELINE_DEFAULT;
	const char *v;
	struct aw_who who;
	json_t *info, *events;
	long long next;

	if (auth(ap, req, res, &who) < 0)
		return;
	if ((v = param(req, "after")) &&
	    !text_parse_uint(v, (1ULL << 62), &after))
		return fail(req, res, 400, "after: a seq (0 or more)");
	if ((v = param(req, "limit")) &&
	    (!text_parse_uint(v, AW_TIMELINE_MAX, &limit) || !limit))
		return fail(req, res, 400, "limit: 1 to %d", AW_TIMELINE_MAX);
	if (session_of(ap, req, res, &who, &info) < 0)
		return;
	if (svc_auditweb_timeline(ap->w, key_of(info), who.tenant,
				  (long long)after, (unsigned long)limit,
				  &events, &next, &err) < 0) {
		json_decref(info);
		return fail_err(req, res, &err);
	}
	json_object_del(info, "rows");
	json_object_set_new(info, "events", events);
	json_object_set_new(info, "next",
			    next < 0 ? json_null() : json_integer(next));
	give_json(res, info);
}

static void h_files(void *arg, struct http_request *req,
		    struct http_response *res)
{
	struct auditpage *ap = arg;
	struct sbx_error *err = NULL;
	struct aw_who who;
	json_t *info, *files;
	bool trunc;
	int rc;

	if (auth(ap, req, res, &who) < 0 ||
	    session_of(ap, req, res, &who, &info) < 0)
		return;
	rc = svc_auditweb_files(ap->w, key_of(info), who.tenant, &files, &trunc,
				&err);
	json_decref(info);
	if (rc < 0)
		return fail_err(req, res, &err);
	give_json(res,
		  xjson_pack("{s:o, s:b}", "files", files, "truncated", trunc));
}

static void h_chain(void *arg, struct http_request *req,
		    struct http_response *res)
{
	struct auditpage *ap = arg;
	struct sbx_error *err = NULL;
	struct aw_who who;
	json_t *info, *chain;
	int rc;

	if (auth(ap, req, res, &who) < 0 ||
	    session_of(ap, req, res, &who, &info) < 0)
		return;
	rc = svc_auditweb_chain(ap->w, key_of(info), who.tenant, &chain, &err);
	json_decref(info);
	if (rc < 0)
		return fail_err(req, res, &err);
	give_json(res, chain);
}

static void h_session_page(void *arg, struct http_request *req,
			   struct http_response *res)
{
	struct auditpage *ap = arg;
	struct strbuf sb = STRBUF_INIT;
	struct sbx_error *err = NULL;
	unsigned long long after = 0;
	const char *v;
	struct aw_who who;
	json_t *info, *events = NULL, *files = NULL, *chain = NULL;
	long long next = -1;
	bool trunc = false;

	if (auth(ap, req, res, &who) < 0)
		return;
	if ((v = param(req, "after")) &&
	    !text_parse_uint(v, (1ULL << 62), &after))
		return fail(req, res, 400, "after: a seq (0 or more)");
	if (session_of(ap, req, res, &who, &info) < 0)
		return;
	if (svc_auditweb_timeline(ap->w, key_of(info), who.tenant,
				  (long long)after, AW_TIMELINE_DEFAULT,
				  &events, &next, &err) < 0 ||
	    svc_auditweb_files(ap->w, key_of(info), who.tenant, &files, &trunc,
			       &err) < 0 ||
	    svc_auditweb_chain(ap->w, key_of(info), who.tenant, &chain, &err) <
		0) {
		json_decref(info);
		json_decref(events);
		json_decref(files);
		return fail_err(req, res, &err);
	}
	aw_page_session(&sb, &who, info, events, next, req->params[0], files,
			trunc, chain);
	give_html(res, 200, &sb);
	json_decref(info);
	json_decref(events);
	json_decref(files);
	json_decref(chain);
}

/* ---- the chart ---- */

static int chart_of(struct auditpage *ap, struct http_request *req,
		    struct http_response *res, json_t **chart)
{
	struct sbx_error *err = NULL;
	struct aw_query q;
	struct aw_who who;

	if (auth(ap, req, res, &who) < 0 ||
	    parse_query(req, res, &who, &q, 1, 1) < 0)
		return -1;
	/* The window: the last 24 hours unless said; a cursor does not
	 * narrow a chart. */
	q.f.has_after = false;
	if (!q.f.until_us &&
	    svc_audit_parse_time("now", false, &q.f.until_us, &err) < 0) {
		fail_err(req, res, &err);
		return -1;
	}
	if (!q.f.since_us)
		q.f.since_us = q.f.until_us - AW_CHART_DEFAULT_US;
	if (q.f.since_us < 0)
		q.f.since_us = 0;
	if (svc_auditweb_chart(ap->w, &q.f, q.by_agent, chart, &err) < 0) {
		fail_err(req, res, &err);
		return -1;
	}
	return 0;
}

static void h_chart(void *arg, struct http_request *req,
		    struct http_response *res)
{
	json_t *chart;

	if (chart_of(arg, req, res, &chart) == 0)
		give_json(res, chart);
}

static void h_chart_svg(void *arg, struct http_request *req,
			struct http_response *res)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *chart;

	if (chart_of(arg, req, res, &chart) < 0)
		return;
	aw_chart_svg(&sb, chart);
	json_decref(chart);
	res->status = 200;
	res->body = strbuf_detach(&sb, &res->body_len);
	res->content_type = "image/svg+xml";
}

/* ---- live ---- */

struct live {
	struct http_request *req;
	struct strbuf sb;
	bool was_up;
};

static int live_send(struct live *l, struct sbx_error **err)
{
	int rc = http_stream_write(l->req, l->sb.buf, l->sb.len);

	strbuf_reset(&l->sb);
	if (rc < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, EPIPE,
				     "the client went away");
	return 0;
}

static int live_row(void *arg, json_t *row, struct sbx_error **err)
{
	struct live *l = arg;
	char *s = json_dumps(row, JSON_COMPACT);

	if (!s)
		die_oom();
	strbuf_addf(&l->sb, "event: op\ndata: %s\n\n", s);
	free(s);
	return live_send(l, err);
}

static int live_tick(void *arg, bool up, struct sbx_error **err)
{
	struct live *l = arg;

	if (!up)
		strbuf_addstr(&l->sb,
			      "event: error\ndata: {\"error\":\"the audit "
			      "database is unavailable\"}\n\n");
	else if (!l->was_up)
		strbuf_addstr(&l->sb, "event: ready\ndata: {}\n\n");
	strbuf_addstr(&l->sb, ": keepalive\n\n");
	l->was_up = up;
	return live_send(l, err);
}

static void h_live(void *arg, struct http_request *req,
		   struct http_response *res)
{
	struct auditpage *ap = arg;
	struct svc_auditweb_live_req lq = {
	    .cancel = req->gone,
	    .max_ms = AW_STREAM_MS,
	    .tick_ms = AW_KEEPALIVE_MS,
	    .row = live_row,
	    .tick = live_tick,
	};
	struct live l = {.req = req, .sb = STRBUF_INIT, .was_up = true};
	struct sbx_error *err = NULL;
	struct aw_query q;
	struct aw_who who;
	bool full;
	int i;

	if ((i = auth(ap, req, res, &who)) < 0 ||
	    parse_query(req, res, &who, &q, 1, 1) < 0)
		return;
	q.f.has_after = false;
	pthread_mutex_lock(&ap->lock);
	full = ap->aud[i].streams >= AW_STREAMS_AUDITOR ||
	       ap->streams >= AW_STREAMS_MAX;
	if (!full) {
		ap->aud[i].streams++;
		ap->streams++;
	}
	pthread_mutex_unlock(&ap->lock);
	if (full) {
		fail(req, res, 429,
		     "too many live streams: %d an auditor, %d in all",
		     AW_STREAMS_AUDITOR, AW_STREAMS_MAX);
		res->retry_after = "10";
		return;
	}
	lq.filter = q.f;
	lq.arg = &l;
	http_response_header(res, "X-Accel-Buffering", "no");
	if (http_stream_start(req, 200, "text/event-stream") == 0) {
		strbuf_addstr(&l.sb, "retry: 3000\n: live\n\n");
		if (live_send(&l, &err) == 0 &&
		    svc_auditweb_live(ap->w, &lq, &err) < 0 && err &&
		    err->errnum != EPIPE) {
			strbuf_reset(&l.sb);
			strbuf_addstr(&l.sb, "event: error\ndata: ");
			{
				json_t *e = xjson_pack("{s:o}", "error",
						       xjson_text(err->msg));
				char *s = json_dumps(e, JSON_COMPACT);

				strbuf_addstr(&l.sb, s ? s : "{}");
				free(s);
				json_decref(e);
			}
			strbuf_addstr(&l.sb, "\n\n");
			http_stream_write(req, l.sb.buf, l.sb.len);
		}
		sbx_error_free(&err);
	}
	strbuf_release(&l.sb);
	pthread_mutex_lock(&ap->lock);
	ap->aud[i].streams--;
	ap->streams--;
	pthread_mutex_unlock(&ap->lock);
}

/* ---- export ---- */

struct export
{
	struct http_request *req;
	const char *type;
	bool started;
};

/* The stream starts with the first bytes: an export that fails before
 * any is still a plain error. */
static int export_write(void *arg, const void *buf, size_t len,
			struct sbx_error **err)
{
	struct export *x = arg;

	if (!x->started) {
		x->started = true;
		if (http_stream_start(x->req, 200, x->type) < 0)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, EPIPE,
					     "the client went away");
	}
	if (http_stream_write(x->req, buf, len) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, EPIPE,
				     "the client went away");
	return 0;
}

static void h_export(void *arg, struct http_request *req,
		     struct http_response *res)
{
	struct auditpage *ap = arg;
	struct export x = {.req = req};
	struct svc_sink out = {.fd = -1, .write = export_write, .arg = &x};
	struct sbx_error *err = NULL;
	unsigned long long rows;
	const char *fmt;
	struct aw_query q;
	struct aw_who who;
	bool csv;

	if (auth(ap, req, res, &who) < 0 ||
	    parse_query(req, res, &who, &q, 1, 1) < 0)
		return;
	fmt = param(req, "format");
	if (!fmt || (strcmp(fmt, "csv") && strcmp(fmt, "jsonl")))
		return fail(req, res, 400, "format: csv or jsonl");
	csv = !strcmp(fmt, "csv");
	x.type = csv ? "text/csv; charset=utf-8" : "application/x-ndjson";
	http_response_header(
	    res, "Content-Disposition",
	    csv ? "attachment; filename=\"sbxcat-audit.csv\""
		: "attachment; filename=\"sbxcat-audit.jsonl\"");
	if (svc_auditweb_export(ap->w, &q.f, fmt, &out, &rows, &err) == 0) {
		/* No row and no header (JSON lines): an empty answer. */
		if (!x.started)
			http_stream_start(req, 200, x.type);
		return;
	}
	if (x.started) {
		/* Cut short: the connection is closed without the chunked
		 * answer's last chunk, so the client knows it is not whole
		 * (the server aborts a stream whose client is gone; the flag
		 * is the server's, raised here as its own writes would). */
		http_gone_raise((atomic_int *)req->gone, HTTP_GONE_CLIENT);
		sbx_error_free(&err);
		return;
	}
	fail_err(req, res, &err);
}

/* ---- health, login, assets ---- */

static void h_healthz(void *arg, struct http_request *req,
		      struct http_response *res)
{
	struct auditpage *ap = arg;
	struct sbx_error *err = NULL;

	if (svc_auditweb_ping(ap->w, &err) < 0)
		return fail_err(req, res, &err);
	res->status = 200;
	res->body = xstrdup("ok\n");
	res->body_len = 3;
	res->content_type = "text/plain; charset=utf-8";
}

static void h_login_page(void *arg, struct http_request *req,
			 struct http_response *res)
{
	struct strbuf sb = STRBUF_INIT;

	(void)arg, (void)req;
	aw_page_login(&sb, NULL);
	give_html(res, 200, &sb);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The form's field name (application/x-www-form-urlencoded), decoded,
 * or NULL. */
static char *form_field(const char *body, size_t len, const char *name)
{
	size_t nl = strlen(name);
	const char *p = body, *end = body + len;

	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;

		if ((size_t)(e - p) > nl && !strncmp(p, name, nl) &&
		    p[nl] == '=') {
			struct strbuf sb = STRBUF_INIT;

			for (const char *c = p + nl + 1; c < e; c++) {
				int hi, lo;

				if (*c == '+')
					strbuf_addch(&sb, ' ');
				else if (*c == '%' && e - c >= 3 &&
					 (hi = hexval(c[1])) >= 0 &&
					 (lo = hexval(c[2])) >= 0) {
					strbuf_addch(&sb, hi * 16 + lo);
					c += 2;
				} else
					strbuf_addch(&sb, *c);
			}
			return strbuf_detach(&sb, NULL);
		}
		p = e + 1;
	}
	return NULL;
}

static void h_login(void *arg, struct http_request *req,
		    struct http_response *res)
{
	struct auditpage *ap = arg;
	char *tok = form_field(req->body, req->body_len, "token");
	struct strbuf sb = STRBUF_INIT;
	char id[33], cookie[160];
	int who = -1;

	if (tok) {
		tok[strcspn(tok, "\r\n")] = '\0';
		if (*tok)
			who = auditor_of_token(ap, tok);
		explicit_bzero(tok, strlen(tok));
		free(tok);
	}
	if (who < 0) {
		aw_page_login(&sb, "That token is not an auditor's.");
		give_html(res, 401, &sb);
		return;
	}
	login_add(ap, who, id);
	snprintf(cookie, sizeof(cookie),
		 AW_COOKIE "=%s; HttpOnly; SameSite=Strict; Path=/; "
			   "Max-Age=%lld",
		 id, AW_LOGIN_MS / 1000);
	http_response_header(res, "Set-Cookie", cookie);
	explicit_bzero(id, sizeof(id));
	explicit_bzero(cookie, sizeof(cookie));
	redirect(res, "/");
}

static void h_logout(void *arg, struct http_request *req,
		     struct http_response *res)
{
	struct auditpage *ap = arg;
	const char *cookie = http_header(req, "Cookie");
	char id[64];

	if (cookie && cookie_value(cookie, id))
		login_drop(ap, id);
	http_response_header(res, "Set-Cookie",
			     AW_COOKIE "=; HttpOnly; SameSite=Strict; Path=/; "
				       "Max-Age=0");
	redirect(res, "/login");
}

static void h_static(void *arg, struct http_request *req,
		     struct http_response *res)
{
	(void)arg;
	for (size_t i = 0; i < aw_nassets; i++)
		if (!strcmp(req->path, aw_assets[i].path)) {
			res->status = 200;
			res->body = xmalloc(aw_assets[i].len + 1);
			memcpy(res->body, aw_assets[i].data, aw_assets[i].len);
			res->body_len = aw_assets[i].len;
			res->content_type = aw_assets[i].type;
			return;
		}
	fail(req, res, 404, "no such file");
}

/* ---- the routes ---- */

#define GET(p, h, pool, n)                                                     \
	{                                                                      \
		"GET", p, h, pool, 0, &n                                       \
	}
static const struct http_route aw_routes[] = {
    GET("/", h_log_page, HTTP_POOL_QUICK, NEED_PAGE),
    GET("/session/{id}", h_session_page, HTTP_POOL_SLOW, NEED_PAGE),
    GET("/login", h_login_page, HTTP_POOL_QUICK, NEED_OPEN_PAGE),
    {"POST", "/login", h_login, HTTP_POOL_QUICK, AW_LOGIN_BODY_MAX,
     &NEED_OPEN_PAGE},
    {"POST", "/logout", h_logout, HTTP_POOL_QUICK, AW_LOGIN_BODY_MAX,
     &NEED_OPEN_PAGE},
    GET("/healthz", h_healthz, HTTP_POOL_QUICK, NEED_OPEN_API),
    GET("/static/app.js", h_static, HTTP_POOL_QUICK, NEED_OPEN_API),
    GET("/static/app.css", h_static, HTTP_POOL_QUICK, NEED_OPEN_API),
    GET("/chart.svg", h_chart_svg, HTTP_POOL_QUICK, NEED_API),
    GET("/api/ops", h_ops, HTTP_POOL_QUICK, NEED_API),
    GET("/api/sessions/{id}", h_session, HTTP_POOL_QUICK, NEED_API),
    GET("/api/sessions/{id}/timeline", h_timeline, HTTP_POOL_QUICK, NEED_API),
    GET("/api/sessions/{id}/files", h_files, HTTP_POOL_QUICK, NEED_API),
    GET("/api/sessions/{id}/chain", h_chain, HTTP_POOL_SLOW, NEED_API),
    GET("/api/chart", h_chart, HTTP_POOL_QUICK, NEED_API),
    GET("/api/live", h_live, HTTP_POOL_SLOW, NEED_API),
    GET("/api/export", h_export, HTTP_POOL_SLOW, NEED_API),
};

static void auditpage_free(struct auditpage *ap)
{
	if (!ap)
		return;
	svc_auditweb_free(ap->w);
	for (size_t i = 0; i < ap->naud; i++)
		free(ap->aud[i].tenant);
	free(ap->aud);
	explicit_bzero(ap->logins, sizeof(ap->logins));
	pthread_mutex_destroy(&ap->lock);
	free(ap);
}

int auditpage_start(struct auditpage **out, const struct auditpage_config *c,
		    char **down, struct sbx_error **err)
{
	struct auditpage *ap = xcalloc(1, sizeof(*ap));
	struct http_listen ls = {.spec = c->listen};
	struct http_config hc = {
	    .listen = &ls,
	    .nlisten = 1,
	    .routes = aw_routes,
	    .nroutes = sizeof(aw_routes) / sizeof(aw_routes[0]),
	    .arg = ap,
	    .admit = aw_admit,
	    .refusal = aw_refusal,
	    .headers = aw_headers,
	    .nheaders = sizeof(aw_headers) / sizeof(aw_headers[0]),
	    .max_body_bytes = AW_LOGIN_BODY_MAX,
	    .max_header_bytes = 16384,
	    .max_connections = 256,
	    /* Every live stream holds a slow worker for its hour. */
	    .slow_workers = AW_STREAMS_MAX + 8,
	    .log_fd = c->log_fd,
	};
	struct sbx_error *e = NULL;

	*out = NULL;
	*down = NULL;
	pthread_mutex_init(&ap->lock, NULL);
	if (!c->auditors_file) {
		auditpage_free(ap);
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "no auditors file (--auditors FILE, "
				     "SBXCAT_AUDITORS_FILE)");
	}
	if (load_auditors(ap, c->auditors_file, c->service_token, err) < 0 ||
	    svc_auditweb_new(c->svc, &ap->w, err) < 0) {
		auditpage_free(ap);
		return -1;
	}
	if (svc_auditweb_check(ap->w, &e) < 0) {
		if (e->kind == SBX_E_INVALID) {
			*err = e;
			auditpage_free(ap);
			return -1;
		}
		/* Down now: the page says 503 until it answers. */
		*down = xstrdup(e->msg);
		sbx_error_free(&e);
	}
	if (http_server_start(&ap->http, &hc, err) < 0) {
		auditpage_free(ap);
		return -1;
	}
	*out = ap;
	return 0;
}

unsigned auditpage_port(struct auditpage *ap)
{
	return http_server_port(ap->http, 0);
}

void auditpage_stop(struct auditpage *ap, unsigned grace_ms)
{
	if (!ap)
		return;
	http_server_stop(ap->http, grace_ms);
	auditpage_free(ap);
}

/*
 * http-route.c - the route table (a method and a template matched segment
 * by segment), the request's own copies of its headers and query, and the
 * response helpers of http.h.
 *
 * The headers and query are copied out of libmicrohttpd's connection pool
 * on its thread, before the request is handed to a worker: the worker
 * then reads only memory of the request's own, whatever libmicrohttpd
 * does meanwhile.  Values are kept as the bytes the client sent (any
 * byte but NUL); nothing here reads them as text.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "basic/xjson.h"
#include "serve/http-int.h"
#include "serve/mhd-dl.h"

/* Whether template t matches the path's segments; params into r. */
static bool match_segments(const char *t, struct http_req *r, const char *seg,
			   size_t nseg)
{
	size_t i = 0, np = 0;
	const char *s = seg;

	while (*t == '/')
		t++;
	for (;;) {
		const char *end = strchrnul(t, '/');
		size_t tl = end - t;
		if (i == nseg)
			return false;
		if (tl >= 2 && t[0] == '{' && t[tl - 1] == '}') {
			if (!*s || np == HTTP_PARAMS_MAX)
				return false;
			r->pub.params[np++] = s;
		} else if (strlen(s) != tl || memcmp(s, t, tl)) {
			return false;
		}
		s += strlen(s) + 1;
		i++;
		if (!*end)
			break;
		t = end + 1;
	}
	r->pub.nparams = np;
	return i == nseg;
}

/* Split a copy of the path at '/' into NUL-separated segments. */
static size_t split(struct http_req *r)
{
	const char *p = r->path;
	size_t n = 1;

	while (*p == '/')
		p++;
	free(r->segs);
	r->segs = xstrdup(p);
	for (char *q = r->segs; *q; q++)
		if (*q == '/') {
			*q = 0;
			n++;
		}
	return n;
}

const struct http_route *http_route_match(struct http_server *srv,
					  struct http_req *r, int *status)
{
	const struct http_config *c = &srv->cfg;
	size_t nseg = split(r);

	*status = 404;
	for (size_t i = 0; i < c->nroutes; i++) {
		const struct http_route *rt = &c->routes[i];
		if (!match_segments(rt->path, r, r->segs, nseg))
			continue;
		if (strcmp(rt->method, r->method)) {
			*status = 405;
			continue;
		}
		r->route_index = i;
		r->pub.route = rt->path;
		return rt;
	}
	r->pub.nparams = 0;
	memset(r->pub.params, 0, sizeof(r->pub.params));
	return NULL;
}

struct copy_ctx {
	struct http_req *r;
	struct http_kv **kv;
	size_t *n, alloc;
};

static enum MHD_Result copy_one(void *cls, enum MHD_ValueKind kind,
				const char *key, const char *value)
{
	struct copy_ctx *x = cls;

	ALLOC_GROW(*x->kv, *x->n + 1, x->alloc);
	(*x->kv)[*x->n].name = xstrdup(key ? key : "");
	(*x->kv)[*x->n].value = xstrdup(value ? value : "");
	(*x->n)++;
	if (kind == MHD_HEADER_KIND)
		x->r->hdr_bytes = st_add(
		    x->r->hdr_bytes, st_add(strlen(key ? key : ""),
					    strlen(value ? value : "") + 4));
	return MHD_YES;
}

void http_req_copy(struct http_req *r, struct MHD_Connection *mc)
{
	struct copy_ctx h = {r, &r->hdr, &r->nhdr, 0};
	struct copy_ctx q = {r, &r->query, &r->nquery, 0};

	sym_MHD_get_connection_values(mc, MHD_HEADER_KIND, copy_one, &h);
	sym_MHD_get_connection_values(mc, MHD_GET_ARGUMENT_KIND, copy_one, &q);
}

static void kv_free(struct http_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].name);
		free(kv[i].value);
	}
	free(kv);
}

void http_req_free(struct http_req *r)
{
	if (!r)
		return;
	kv_free(r->hdr, r->nhdr);
	kv_free(r->query, r->nquery);
	strbuf_release(&r->body);
	free(r->method);
	free(r->path);
	free(r->segs);
	free(r->res.body);
	for (size_t i = 0; i < r->res.nheaders; i++)
		free(r->res.headers[i]);
	http_stream_release(r);
	free(r);
}

int http_response_header(struct http_response *res, const char *name,
			 const char *value)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";

	if (res->nheaders >= HTTP_RESPONSE_HEADERS || !*name)
		return -1;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr(tchar, *p))
			return -1;
	for (const char *p = value; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			return -1;
	res->headers[res->nheaders++] = xasprintf("%s: %s", name, value);
	return 0;
}

const char *http_header(const struct http_request *req, const char *name)
{
	const struct http_req *r = req->priv;

	for (size_t i = 0; i < r->nhdr; i++)
		if (!strcasecmp(r->hdr[i].name, name))
			return r->hdr[i].value;
	return NULL;
}

const char *http_header_at(const struct http_request *req, const char *name,
			   size_t n)
{
	const struct http_req *r = req->priv;

	for (size_t i = 0; i < r->nhdr; i++)
		if (!strcasecmp(r->hdr[i].name, name) && n-- == 0)
			return r->hdr[i].value;
	return NULL;
}

bool http_header_nth(const struct http_request *req, size_t n,
		     const char **name, const char **value)
{
	const struct http_req *r = req->priv;

	if (n >= r->nhdr)
		return false;
	*name = r->hdr[n].name;
	*value = r->hdr[n].value;
	return true;
}

bool http_query_nth(const struct http_request *req, size_t n, const char **name,
		    const char **value)
{
	const struct http_req *r = req->priv;

	if (n >= r->nquery)
		return false;
	*name = r->query[n].name;
	*value = r->query[n].value;
	return true;
}

const char *http_query(const struct http_request *req, const char *name)
{
	const struct http_req *r = req->priv;

	for (size_t i = 0; i < r->nquery; i++)
		if (!strcmp(r->query[i].name, name))
			return r->query[i].value;
	return NULL;
}

const char *http_query_at(const struct http_request *req, const char *name,
			  size_t n)
{
	const struct http_req *r = req->priv;

	for (size_t i = 0; i < r->nquery; i++)
		if (!strcmp(r->query[i].name, name) && n-- == 0)
			return r->query[i].value;
	return NULL;
}

void http_respond_json(struct http_response *res, int status, json_t *doc)
{
	char *s = json_dumps(doc, JSON_COMPACT);

	json_decref(doc);
	if (!s)
		die_oom();
	free(res->body);
	res->status = status;
	res->body = s;
	res->body_len = strlen(s);
	res->content_type = NULL;
}

void http_respond_detail(struct http_response *res, int status, const char *fmt,
			 ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	http_respond_json(res, status,
			  xjson_pack("{s:o}", "detail", xjson_text(msg)));
	free(msg);
}

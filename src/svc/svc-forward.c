/*
 * svc-forward.c - a request forwarded to the host its session lives on
 * (svc_fleet_forward, svc-fleet-host.h), over libcurl (loaded on first
 * use, engine/curl-dl.h).
 *
 * One easy handle per forward, taken from the member's idle ones (so a
 * peer's connection is kept alive between requests) and given back
 * reset.  The answer is passed on as it comes: the status and headers
 * once the peer's header block is whole, then the body's bytes; nothing
 * of it is held here.  Bounded: the connect (2 s), the whole request
 * (the fleet's forward timeout), a header block (64 headers of 8 KiB),
 * and the caller's cancel flag, looked at by libcurl's progress callback
 * at least once a second.  No redirect is followed; only http and https.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "engine/curl-dl.h"
#include "svc/svc-fleet-int.h"

#define FORWARD_CONNECT_MS 2000L
#define HEADERS_MAX 64
#define HEADER_BYTES_MAX 8192

struct fwd {
	const struct svc_forward_req *req;
	int status;
	char *headers[HEADERS_MAX];
	size_t nheaders;
	bool answered, failed;
};

static void headers_clear(struct fwd *w)
{
	for (size_t i = 0; i < w->nheaders; i++)
		free(w->headers[i]);
	w->nheaders = 0;
}

/* The header block is whole: pass it on. */
static int answer(struct fwd *w)
{
	if (w->answered)
		return 0;
	w->answered = true;
	if (w->req->head(w->req->arg, w->status,
			 (const char *const *)w->headers, w->nheaders) < 0) {
		w->failed = true;
		return -1;
	}
	return 0;
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct fwd *w = arg;
	size_t len = size * n, end = len;

	if (w->answered)
		return len; /* trailers: not passed on */
	while (end && (buf[end - 1] == '\n' || buf[end - 1] == '\r'))
		end--;
	if (len >= 5 && !memcmp(buf, "HTTP/", 5)) {
		/* A status line: a new answer (after a 1xx, say). */
		const char *sp = memchr(buf, ' ', end);

		headers_clear(w);
		w->status = sp ? atoi(sp + 1) : 0;
		return len;
	}
	if (!end) {
		/* The blank line: a 1xx's ends, or the answer's does. */
		if (w->status >= 200 && answer(w) < 0)
			return 0;
		return len;
	}
	if (end > HEADER_BYTES_MAX || w->nheaders == HEADERS_MAX)
		return 0; /* more than any answer of ours: refused */
	w->headers[w->nheaders++] = xstrndup(buf, end);
	return len;
}

static size_t on_data(char *buf, size_t size, size_t n, void *arg)
{
	struct fwd *w = arg;
	size_t len = size * n;

	if (answer(w) < 0)
		return 0;
	if (len && w->req->data(w->req->arg, buf, len) < 0) {
		w->failed = true;
		return 0;
	}
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	struct fwd *w = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return w->req->cancel && atomic_load(w->req->cancel) ? 1 : 0;
}

static CURL *handle_get(struct svc_fleet *f)
{
	CURL *h = NULL;

	pthread_mutex_lock(&f->lock);
	if (f->nhandles)
		h = f->handles[--f->nhandles];
	pthread_mutex_unlock(&f->lock);
	return h ? h : sym_curl_easy_init();
}

static void handle_put(struct svc_fleet *f, CURL *h, bool keep)
{
	if (keep) {
		sym_curl_easy_reset(h);
		pthread_mutex_lock(&f->lock);
		if (f->nhandles < FORWARD_HANDLES_MAX) {
			f->handles[f->nhandles++] = h;
			h = NULL;
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (h)
		sym_curl_easy_cleanup(h);
}

void svc_forward_free(struct svc_fleet *f)
{
	for (size_t i = 0; i < f->nhandles; i++)
		sym_curl_easy_cleanup(f->handles[i]);
	f->nhandles = 0;
}

int svc_fleet_forward(struct svc_fleet *f, const struct svc_forward_req *req,
		      bool *answered, struct sbx_error **err)
{
	struct fwd w = {.req = req};
	struct curl_slist *hl = NULL;
	char *url, hop[FLEET_NAME_MAX + 32];
	CURL *h;
	CURLcode rc;
	int ret = 0;

	*answered = false;
	if (curl_dl_load(err) < 0)
		return -1;
	h = handle_get(f);
	if (!h)
		return sbx_error_set(err, SBX_E_INTERNAL, 0,
				     "forward: no libcurl handle");
	url = xasprintf("%s%s", req->url, req->path);
	for (size_t i = 0; i < req->nheaders; i++)
		hl = sym_curl_slist_append(hl, req->headers[i]);
	/* No 100-continue round trip; a forwarded request is never
	 * forwarded again (the peer answers it as its own). */
	hl = sym_curl_slist_append(hl, "Expect:");
	snprintf(hop, sizeof(hop), "X-Sbxcat-Fleet-Hop: %s", f->cfg.name);
	hl = sym_curl_slist_append(hl, hop);
	sym_curl_easy_setopt(h, CURLOPT_URL, url);
	sym_curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	sym_curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->body_len || !strcmp(req->method, "POST") ||
	    !strcmp(req->method, "PUT") || !strcmp(req->method, "PATCH")) {
		sym_curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				     (curl_off_t)req->body_len);
		sym_curl_easy_setopt(h, CURLOPT_POSTFIELDS,
				     req->body ? req->body : "");
	} else if (!strcmp(req->method, "HEAD")) {
		sym_curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	}
	sym_curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	sym_curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	sym_curl_easy_setopt(h, CURLOPT_HEADERDATA, &w);
	sym_curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	sym_curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
	sym_curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	sym_curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	sym_curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
	sym_curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, FORWARD_CONNECT_MS);
	sym_curl_easy_setopt(
	    h, CURLOPT_TIMEOUT,
	    (long)(req->timeout_s ? req->timeout_s : f->cfg.forward_timeout_s));
	/* The body as it comes, not in curl's 16 KiB lumps' time. */
	sym_curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	rc = sym_curl_easy_perform(h);
	/* An answer with no body (a 204) has its header block only. */
	if (rc == CURLE_OK && !w.answered && w.status >= 200)
		answer(&w);
	*answered = w.answered;
	if (rc != CURLE_OK && !w.failed) {
		enum sbx_kind k = SBX_E_UNAVAILABLE;

		if (rc == CURLE_ABORTED_BY_CALLBACK)
			k = SBX_E_CANCELLED;
		else if (rc == CURLE_OPERATION_TIMEDOUT && w.answered)
			k = SBX_E_TIMEOUT;
		ret = sbx_error_set(
		    err, k, 0, "%s%s", sym_curl_easy_strerror(rc),
		    w.answered ? " (part way through the answer)" : "");
	} else if (w.failed) {
		ret = sbx_error_set(err, SBX_E_CANCELLED, 0,
				    "the client stopped taking the answer");
	}
	headers_clear(&w);
	sym_curl_slist_free_all(hl);
	free(url);
	handle_put(f, h, ret == 0);
	return ret;
}

/*
 * serve-fleet.c - the service as a host of a fleet (docs/fleet.md): its
 * lease's thread, placement of a new session, a request for a session
 * of another host forwarded there, the sessions' list gathered from every
 * live host, and the rows of the sessions it opens and closes.
 *
 * What a forward costs: one more hop (the client's request is read
 * whole here, as any request is, then sent on a kept-alive connection to
 * the owner, whose answer comes back as it comes: a small answer with a
 * length is held whole, anything else streamed).  The owner checks the
 * client's token itself; the forwarding host checks only that the token
 * is one of the session's (the fleet's row keeps its hashes), so a client
 * with no token never makes a host read a body for another.
 *
 * Thread rule: serve.h's; the fleet's thread is the only one renewing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/xjson.h"
#include "serve/serve-fleet.h"
#include "serve/wire-status.h"
#include "serve/wire.h"
#include "svc/svc-fleet-host.h"
#include "svc/svc-pool.h"

/* The header a forwarded request carries: never forwarded again. */
#define HOP_HEADER "X-Sbxcat-Fleet-Hop"
/* An answer with a length up to this is held whole (and answered with
 * its length); a longer one, or one without, is streamed. */
#define HOLD_MAX (1 << 20)
/* Placement's tries: a host that refuses (its own ceiling) is skipped. */
#define PLACE_TRIES 3
/* A list's answer from a peer, at most. */
#define LIST_MAX (16 << 20)
/* A peer's list answers within this (a peer that accepts and says
 * nothing must not hold every list for the forward timeout). */
#define LIST_TIMEOUT_S 10
/* Sessions a drain hibernates per lease, at most. */
#define DRAIN_PER_LEASE 8

bool serve_fleet_on(const struct serve *sv)
{
	return sv->fleet != NULL;
}

static bool hopped(const struct http_request *req)
{
	return http_header(req, HOP_HEADER) != NULL;
}

/* ---- the lease's thread ---- */

static void fleet_warn(struct serve *sv, const char *what,
		       const struct sbx_error *err)
{
	char *m = xasprintf("fleet: %s: %s\n", what, err->msg);

	if (sv->log_fd >= 0 && write(sv->log_fd, m, strlen(m)) < 0) {
		/* nowhere else to say it */
	}
	free(m);
}

static unsigned capacity_of(const struct serve_snap *snap)
{
	const svc_session_config *c = &snap->svc.cfg.session;

	return c->max_open ? c->max_open : c->max_sessions;
}

/* The pool's ready containers by runtime, as placement prefers them. */
static char *pool_json(const struct serve_snap *snap)
{
	struct svc_call call = {0};
	struct sbx_error *err = NULL;
	json_t *o = NULL;
	char *s;

	if (!snap->svc.cfg.session.npool ||
	    svc_pool_ready(&snap->svc, &call, &o, &err) < 0)
		o = json_object();
	sbx_error_free(&err);
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static void lease_once(struct serve *sv, unsigned tick)
{
	struct serve_snap *snap = serve_snap_get(sv);
	struct svc_call call = {.warn = NULL};
	struct sbx_error *err = NULL;
	size_t resident = 0, open = 0, n = 0;
	bool draining = false;
	char *pool = pool_json(snap);

	/* Counted at most every ten seconds, shared with /healthz. */
	wire_session_counts(sv, &snap->svc, 10000, &resident, &open);
	if (svc_fleet_renew(sv->fleet, capacity_of(snap), (unsigned)resident,
			    pool, &draining, &err) < 0) {
		fleet_warn(sv, "the lease could not be renewed", err);
		sv->fleet_ok_since = 0;
	} else if (!sv->fleet_ok_since) {
		sv->fleet_ok_since = clock_now_ms();
	}
	sbx_error_free(&err);
	free(pool);
	atomic_store(&sv->fleet_draining, draining);
	if (draining &&
	    svc_fleet_drain_pass(&snap->svc, &call,
				 svc_fleet_config(sv->fleet)->drain_idle_s,
				 DRAIN_PER_LEASE, &n, &err) < 0)
		fleet_warn(sv, "the drain's pass", err);
	sbx_error_free(&err);
	/* Now and then: the dead hosts' sessions given up, this host's
	 * rows reconciled (the reaper does it after each pass too).  Only
	 * by a host that has itself renewed for the give-up's time without a
	 * failure: after the database was away, the hosts coming back are
	 * not dead, only not back yet. */
	if (tick % 10 == 0) {
		long long up = sv->fleet_ok_since
				   ? clock_now_ms() - sv->fleet_ok_since
				   : -1;

		if (up >= 0 &&
		    up >= (long long)svc_fleet_config(sv->fleet)->give_up_s *
			      1000 &&
		    svc_fleet_give_up(sv->fleet, &n, &err) < 0)
			fleet_warn(sv, "giving dead hosts' sessions up", err);
		sbx_error_free(&err);
		serve_fleet_reconcile(sv);
	}
	serve_snap_put(snap);
}

static void *fleet_main(void *arg)
{
	struct serve *sv = arg;
	unsigned every_ms = svc_fleet_config(sv->fleet)->lease_s * 1000 / 3;

	pthread_mutex_lock(&sv->lock);
	for (unsigned tick = 1; !sv->stopping; tick++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += every_ms / 1000;
		ts.tv_nsec += (long)(every_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!sv->stopping &&
		       pthread_cond_timedwait(&sv->fleet_wake, &sv->lock,
					      &ts) != ETIMEDOUT)
			;
		if (sv->stopping)
			break;
		pthread_mutex_unlock(&sv->lock);
		lease_once(sv, tick);
		pthread_mutex_lock(&sv->lock);
	}
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

void serve_fleet_reconcile(struct serve *sv)
{
	struct serve_snap *snap;
	struct svc_call call = {0};
	struct sbx_error *err = NULL;
	size_t closed = 0;

	if (!sv->fleet)
		return;
	snap = serve_snap_get(sv);
	call.agent = "sbxcat-fleet";
	if (svc_fleet_reconcile(sv->fleet, &snap->svc, &call, false, &closed,
				&err) < 0)
		fleet_warn(sv, "reconciling with the fleet", err);
	sbx_error_free(&err);
	serve_snap_put(snap);
}

int serve_fleet_start(struct serve *sv, struct sbx_error **err)
{
	struct svc_fleet_config c;
	struct svc_call call = {.agent = "sbxcat-fleet"};
	bool first = false;
	size_t closed = 0;
	int rc;

	if (svc_fleet_config_load(&c, sv->env, err) < 0)
		return -1;
	if (!c.name) {
		svc_fleet_config_release(&c);
		return 0;
	}
	rc = svc_fleet_join(&sv->snap->svc, &c, capacity_of(sv->snap),
			    &sv->fleet, &first, err);
	svc_fleet_config_release(&c);
	if (rc < 0)
		return -1;
	/* New to the fleet: what it holds is adopted; back in it: what the
	 * fleet gave up while it was away is closed. */
	if (svc_fleet_reconcile(sv->fleet, &sv->snap->svc, &call, first,
				&closed, err) < 0) {
		svc_fleet_leave(sv->fleet);
		sv->fleet = NULL;
		return -1;
	}
	pthread_cond_init(&sv->fleet_wake, NULL);
	if (pthread_create(&sv->fleeter, NULL, fleet_main, sv) == 0)
		sv->fleet_started = true;
	return 0;
}

void serve_fleet_stop(struct serve *sv)
{
	if (!sv->fleet)
		return;
	if (sv->fleet_started) {
		pthread_mutex_lock(&sv->lock);
		sv->stopping = true;
		pthread_cond_broadcast(&sv->fleet_wake);
		pthread_mutex_unlock(&sv->lock);
		pthread_join(sv->fleeter, NULL);
		sv->fleet_started = false;
	}
	pthread_cond_destroy(&sv->fleet_wake);
	svc_fleet_leave(sv->fleet);
	sv->fleet = NULL;
}

/* ---- tokens of another host's sessions ---- */

int serve_fleet_token(struct serve *sv, const char *id, const char *hash)
{
	svc_fleet_where w;
	struct sbx_error *err = NULL;
	int rc;

	if (!sv->fleet || !svc_wire_name_valid(id))
		return 0;
	rc = svc_fleet_where_is(sv->fleet, id, &w, &err);
	sbx_error_free(&err);
	if (rc < 0)
		return -1;
	if (rc == 0 || !strcmp(w.host, svc_fleet_name(sv->fleet)))
		return 0;
	for (size_t i = 0; i < w.ntokens; i++)
		if (strlen(w.tokens[i]) == 64 &&
		    CRYPTO_memcmp(w.tokens[i], hash, 64) == 0)
			return 1;
	return 0;
}

/* ---- forwarding ---- */

/* Percent-encoding of a query's name or value (RFC 3986 unreserved
 * kept). */
static void add_encoded(struct strbuf *sb, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
			strbuf_addch(sb, *p);
			continue;
		}
		strbuf_addch(sb, '%');
		strbuf_addch(sb, hex[*p >> 4]);
		strbuf_addch(sb, hex[*p & 15]);
	}
}

/* The path as the client sent it, with its query. */
static char *path_of(const struct http_request *req)
{
	struct strbuf sb = STRBUF_INIT;
	const char *name, *value;

	strbuf_addstr(&sb, req->path);
	for (size_t i = 0; http_query_nth(req, i, &name, &value); i++) {
		strbuf_addch(&sb, i ? '&' : '?');
		add_encoded(&sb, name);
		if (value) {
			strbuf_addch(&sb, '=');
			add_encoded(&sb, value);
		}
	}
	return strbuf_detach(&sb, NULL);
}

/* Headers that are the connection's, not the request's (RFC 9110 7.6.1),
 * or that libcurl sets itself. */
static bool hop_by_hop(const char *name)
{
	static const char *const drop[] = {
	    "Connection",
	    "Keep-Alive",
	    "Proxy-Connection",
	    "Proxy-Authorization",
	    "TE",
	    "Trailer",
	    "Transfer-Encoding",
	    "Upgrade",
	    "Content-Length",
	    "Expect",
	    HOP_HEADER,
	    "Date",
	    "Server",
	};

	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (!strcasecmp(name, drop[i]))
			return true;
	return false;
}

/* The client's headers, "Name: value", for the peer; with id_header,
 * that header says id (and the client's own of that name is dropped). */
static char **headers_of(const struct http_request *req, size_t *n,
			 const char *id_header, const char *id)
{
	const char *name, *value;
	size_t k = 0, a = 0;
	char **v = NULL;

	for (size_t i = 0; http_header_nth(req, i, &name, &value); i++) {
		if (hop_by_hop(name) ||
		    (id_header && !strcasecmp(name, id_header)))
			continue;
		ALLOC_GROW(v, k + 1, a);
		v[k++] = xasprintf("%s: %s", name, value ? value : "");
	}
	ALLOC_GROW(v, k + 1, a);
	if (id_header)
		v[k++] = xasprintf("%s: %s", id_header, id);
	*n = k;
	return v;
}

/* The headers an answer had so far, dropped (an owner's that did not
 * come whole, a refused host's before the next one's). */
static void headers_drop(struct http_response *res)
{
	for (size_t i = 0; i < res->nheaders; i++)
		free(res->headers[i]);
	res->nheaders = 0;
}

/* The owner's answer, passed on. */
struct relay {
	struct wire_req *w;
	int status;
	bool streaming;
	long long length; /* -1: none given */
	struct strbuf body;
	char *type;
};

static int relay_head(void *arg, int status, const char *const *h, size_t n)
{
	struct relay *rl = arg;

	rl->status = status;
	rl->length = -1;
	for (size_t i = 0; i < n; i++) {
		const char *colon = strchr(h[i], ':');
		char name[64];
		const char *v;

		if (!colon || (size_t)(colon - h[i]) >= sizeof(name))
			continue;
		memcpy(name, h[i], (size_t)(colon - h[i]));
		name[colon - h[i]] = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		if (!strcasecmp(name, "Content-Length")) {
			rl->length = strtoll(v, NULL, 10);
			continue;
		}
		if (hop_by_hop(name))
			continue;
		/* A header that does not pass (more than the server keeps,
		 * a byte it would not send) is dropped. */
		http_response_header(rl->w->res, name, v);
	}
	if (rl->length < 0 || rl->length > HOLD_MAX) {
		if (http_stream_start(rl->w->req, status, NULL) < 0)
			return -1;
		rl->streaming = true;
	}
	return 0;
}

static int relay_data(void *arg, const void *buf, size_t len)
{
	struct relay *rl = arg;

	if (rl->streaming)
		return http_stream_write(rl->w->req, buf, len);
	if (rl->body.len + len > HOLD_MAX)
		return -1; /* more than its length said */
	strbuf_add(&rl->body, buf, len);
	return 0;
}

/* Forward w's request to host at url; answered either way (whatever the
 * owner said, or 503 when it could not be reached): false when nothing
 * of the owner's answer came. */
static bool forward(struct wire_req *w, const char *host, const char *url,
		    const char *id, const char *body, size_t body_len,
		    const char *id_header, const struct serve_fleet_front *f)
{
	struct relay rl = {.w = w, .body = STRBUF_INIT};
	size_t nh = 0;
	char **h = headers_of(w->req, &nh, id_header, id);
	char *path = path_of(w->req);
	struct svc_forward_req fr = {
	    .url = url,
	    .method = w->req->method,
	    .path = path,
	    .headers = (const char *const *)h,
	    .nheaders = nh,
	    .body = body,
	    .body_len = body_len,
	    .cancel = w->req->gone,
	    .head = relay_head,
	    .data = relay_data,
	    .arg = &rl,
	};
	struct sbx_error *err = NULL;
	bool answered = false, reached = true;

	atomic_fetch_add(&w->sv->fleet_forwards, 1);
	if (svc_fleet_forward(w->sv->fleet, &fr, &answered, &err) < 0 &&
	    !answered) {
		/* Nothing of the owner's answer went out: say why. */
		atomic_fetch_add(&w->sv->fleet_unreachable, 1);
		svc_fleet_uncache(w->sv->fleet, id);
		headers_drop(w->res);
		f->unreachable(w, id, host, err->msg);
		reached = false;
	} else if (!rl.streaming) {
		w->answered = true;
		w->res->status = rl.status;
		free(w->res->body);
		w->res->body_len = rl.body.len;
		w->res->body = strbuf_detach(&rl.body, NULL);
		if (!w->res->body_len) {
			free(w->res->body);
			w->res->body = NULL;
		}
	} else {
		w->answered = true;
	}
	sbx_error_free(&err);
	strbuf_release(&rl.body);
	strv_free(h, nh);
	free(path);
	return reached;
}

/* Whether id's session is open here (answered here without asking the
 * fleet); *kept: only its closed record and workspace are, which the
 * fleet's row says is ours, or another host's (re-placed there while
 * this one was away). */
static bool here(struct wire_req *w, const char *id, bool *kept)
{
	struct svc_call any = {0};
	struct svc_wire_session ws;
	struct sbx_error *err = NULL;
	bool found = svc_wire_find(&w->snap->svc, &any, id, &ws, &err) == 0;
	bool open = found && ws.open;

	*kept = found && !open;
	if (found)
		svc_wire_session_release(&ws);
	sbx_error_free(&err);
	return open;
}

bool serve_fleet_route(struct wire_req *w, const char *id,
		       const struct serve_fleet_front *f)
{
	svc_fleet_where where;
	struct sbx_error *err = NULL;
	bool kept = false;
	int rc;

	if (!w->sv->fleet || !id || hopped(w->req) ||
	    !svc_wire_name_valid(id) || here(w, id, &kept))
		return false;
	rc = svc_fleet_where_is(w->sv->fleet, id, &where, &err);
	if (rc < 0 && kept) {
		/* Its workspace is here: answered here, as without a fleet. */
		sbx_error_free(&err);
		return false;
	}
	if (rc < 0) {
		sbx_error_wrap(&err, "where session %s lives", id);
		f->error(w, err, id, NULL);
		sbx_error_free(&err);
		return true;
	}
	if (rc == 0 || !strcmp(where.host, svc_fleet_name(w->sv->fleet)))
		return false; /* not in the fleet, or ours: answered here */
	snprintf(w->req->session, sizeof(w->req->session), "%s", id);
	if (!where.alive) {
		atomic_fetch_add(&w->sv->fleet_unreachable, 1);
		f->unreachable(w, id, where.host, "its lease lapsed");
		return true;
	}
	/* Answered either way: the owner's answer, or 503. */
	forward(w, where.host, where.url, id, w->req->body, w->req->body_len,
		NULL, f);
	return true;
}

/* ---- placement ---- */

int serve_fleet_place(struct wire_req *w, const char *id, const char *tenant,
		      const char *runtime, const char *id_header,
		      const struct serve_fleet_front *f)
{
	const char *exclude[PLACE_TRIES];
	size_t nexclude = 0;
	const svc_session_config *sc = &w->snap->svc.cfg.session;
	const char *counted = svc_tenant_counted(tenant) ? tenant : NULL;
	char *body = NULL;

	if (!w->sv->fleet)
		return 0;
	for (int tries = 0; tries < PLACE_TRIES; tries++) {
		svc_fleet_where where;
		struct sbx_error *err = NULL;
		bool placed = false, reached;

		if (svc_fleet_place(w->sv->fleet, id, counted,
				    counted ? sc->max_per_tenant : 0, runtime,
				    exclude, nexclude, &where, &placed,
				    &err) < 0) {
			f->error(w, err, id, tenant);
			sbx_error_free(&err);
			break;
		}
		if (!strcmp(where.host, svc_fleet_name(w->sv->fleet))) {
			for (size_t i = 0; i < nexclude; i++)
				free((char *)exclude[i]);
			free(body);
			return 0; /* here: the caller opens it */
		}
		if (hopped(w->req)) {
			/* Sent here as its host, but the fleet says
			 * another: never a second hop, and a row placed
			 * just now is taken back (else it would hold a
			 * slot of that host's and of the tenant's until
			 * that host's reconcile, a minute on). */
			if (placed && svc_fleet_unplace(w->sv->fleet, id,
							where.host, &err) < 0)
				fleet_warn(w->sv, "taking a placement back",
					   err);
			sbx_error_free(&err);
			sbx_error_set(&err, SBX_E_CONFLICT, 0,
				      "session %s is placed on host %s, not "
				      "here",
				      id, where.host);
			f->error(w, err, id, tenant);
			sbx_error_free(&err);
			break;
		}
		if (!where.alive) {
			f->unreachable(w, id, where.host, "its lease lapsed");
			break;
		}
		/* The body with the id the placement used (an open that
		 * named none got one here), or the body as sent and the id
		 * in its header. */
		if (!body && !id_header) {
			json_t *b = json_deep_copy(w->body);

			json_object_set_new(b, "session_id", json_string(id));
			body = json_dumps(b, JSON_COMPACT);
			json_decref(b);
		}
		if (body)
			reached = forward(w, where.host, where.url, id, body,
					  strlen(body), NULL, f);
		else
			reached =
			    forward(w, where.host, where.url, id, w->req->body,
				    w->req->body_len, id_header, f);
		/* The chosen host could not be reached: the placement is
		 * taken back here.  It refused it on its own ceiling: it
		 * took it back itself.  Either way the next host, if the
		 * row was new. */
		if (placed && !reached &&
		    svc_fleet_unplace(w->sv->fleet, id, where.host, &err) < 0)
			sbx_error_free(&err);
		if (!placed ||
		    (reached && w->res->status != 429 &&
		     w->res->status != 503) ||
		    http_streaming(w->req) || tries + 1 == PLACE_TRIES)
			break;
		exclude[nexclude++] = xstrdup(where.host);
		w->answered = false;
		headers_drop(w->res);
		free(w->res->body);
		w->res->body = NULL;
		w->res->body_len = 0;
	}
	for (size_t i = 0; i < nexclude; i++)
		free((char *)exclude[i]);
	free(body);
	return 1;
}

void serve_fleet_opened(struct wire_req *w, const char *id, bool ok)
{
	struct svc_call any = {0};
	struct svc_wire_session ws;
	struct sbx_error *err = NULL;

	if (!w->sv->fleet)
		return;
	if (svc_wire_find(&w->snap->svc, &any, id, &ws, &err) == 0) {
		const char *t[SVC_WIRE_TOKENS_MAX] = {0};

		for (size_t i = 0; i < ws.wire.ntokens; i++)
			t[i] = ws.wire.tokens[i];
		if (ws.open && svc_fleet_opened(w->sv->fleet, id, t,
						ws.wire.ntokens, &err) < 0)
			fleet_warn(w->sv, "a session's row", err);
		svc_wire_session_release(&ws);
	} else if (!ok) {
		/* Nothing of it here: the placement is taken back. */
		sbx_error_free(&err);
		if (svc_fleet_unplace(w->sv->fleet, id, NULL, &err) < 0)
			fleet_warn(w->sv, "taking a placement back", err);
	}
	sbx_error_free(&err);
}

void serve_fleet_closed(struct wire_req *w, const char *id, bool purged)
{
	struct sbx_error *err = NULL;
	int rc;

	if (!w->sv->fleet)
		return;
	rc = purged ? svc_fleet_unplace(w->sv->fleet, id, NULL, &err)
		    : svc_fleet_kept(w->sv->fleet, id, &err);
	if (rc < 0)
		fleet_warn(w->sv, "a closed session's row", err);
	sbx_error_free(&err);
}

const char *serve_fleet_given_id(struct wire_req *w, const char *header)
{
	const char *id = http_header(w->req, header);
	svc_fleet_where where;
	struct sbx_error *err = NULL;
	bool kept = false;
	int rc;

	if (!w->sv->fleet || !id || !hopped(w->req) || !svc_wire_name_valid(id))
		return NULL;
	/* Only a placement of this host's still in progress: a client's
	 * header (a hop header can be forged) names an id it cannot take. */
	svc_fleet_uncache(w->sv->fleet, id);
	rc = svc_fleet_where_is(w->sv->fleet, id, &where, &err);
	sbx_error_free(&err);
	if (rc != 1 || strcmp(where.host, svc_fleet_name(w->sv->fleet)) ||
	    strcmp(where.state, "placing") || here(w, id, &kept) || kept)
		return NULL;
	return id;
}

/* ---- the list, from every live host ---- */

static int list_head(void *arg, int status, const char *const *h, size_t n)
{
	struct relay *rl = arg;

	(void)h, (void)n;
	rl->status = status;
	return 0;
}

static int list_data(void *arg, const void *buf, size_t len)
{
	struct relay *rl = arg;

	if (rl->body.len + len > LIST_MAX)
		return -1;
	strbuf_add(&rl->body, buf, len);
	return 0;
}

void serve_fleet_list(struct wire_req *w, json_t *rows, const char *key)
{
	struct svc_fleet_peer *peers = NULL;
	struct sbx_error *err = NULL;
	size_t npeers = 0, nh = 0;
	char **h;
	char *path;

	if (!w->sv->fleet || hopped(w->req))
		return;
	if (svc_fleet_peers(w->sv->fleet, &peers, &npeers, &err) < 0) {
		fleet_warn(w->sv, "the list's hosts", err);
		sbx_error_free(&err);
		return;
	}
	h = headers_of(w->req, &nh, NULL, NULL);
	path = path_of(w->req);
	for (size_t i = 0; i < npeers; i++) {
		struct relay rl = {.w = w, .body = STRBUF_INIT};
		struct svc_forward_req fr = {
		    .url = peers[i].url,
		    .method = "GET",
		    .path = path,
		    .headers = (const char *const *)h,
		    .nheaders = nh,
		    .cancel = w->req->gone,
		    .timeout_s = LIST_TIMEOUT_S,
		    .head = list_head,
		    .data = list_data,
		    .arg = &rl,
		};
		bool answered = false;
		json_t *doc = NULL, *more;

		if (svc_fleet_forward(w->sv->fleet, &fr, &answered, &err) ==
			0 &&
		    rl.status == 200)
			doc = json_loadb(rl.body.buf ? rl.body.buf : "",
					 rl.body.len, 0, NULL);
		more = key ? json_object_get(doc, key) : doc;
		if (json_is_array(more))
			json_array_extend(rows, more);
		else {
			char *m = xasprintf(
			    "host %s answered no list (%s)", peers[i].name,
			    err ? err->msg : "no list in its answer");
			struct sbx_error *e = NULL;

			sbx_error_set(&e, SBX_E_UNAVAILABLE, 0, "%s", m);
			fleet_warn(w->sv, "the list", e);
			sbx_error_free(&e);
			free(m);
		}
		json_decref(doc);
		sbx_error_free(&err);
		strbuf_release(&rl.body);
	}
	strv_free(h, nh);
	free(path);
	free(peers);
}

/*
 * http-metrics.c - what the server counts (http_metrics, in Prometheus'
 * text format 0.0.4) and the access log (one line per request).
 *
 * Label values come from the route table and a fixed list of methods,
 * never from the client: a client sending a thousand made-up methods or
 * paths adds no series ("-" for a path no route matches, "OTHER" for a
 * method outside the list).  The log line likewise: the route template,
 * never the path; tenant and session as the handler set them, each byte
 * outside printable ASCII as '?'; never a header or a body.
 */
#include "config.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve/http-int.h"

static const double bucket_le[HTTP_NBUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

static const char *const methods[] = {"GET",	 "HEAD",    "POST",
				      "PUT",	 "DELETE",  "PATCH",
				      "OPTIONS", "CONNECT", "TRACE"};

static const char *const refusal_names[REFUSED_N] = {
    "413", "431", "503", "timeout", "mhd", "path", "admit", "429"};

void http_stats_init(struct http_stats *st, size_t nroutes)
{
	size_t n = st_add(nroutes, 1);

	pthread_mutex_init(&st->lock, NULL);
	st->buckets = xcalloc(st_mult(n, HTTP_NBUCKETS), sizeof(*st->buckets));
	st->total = xcalloc(n, sizeof(*st->total));
	st->sum = xcalloc(n, sizeof(*st->sum));
}

void http_stats_release(struct http_stats *st)
{
	if (!st->total)
		return;
	free(st->counts);
	free(st->buckets);
	free(st->total);
	free(st->sum);
	pthread_mutex_destroy(&st->lock);
}

const char *http_method_label(const struct http_req *r)
{
	if (r->route)
		return r->route->method;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (r->method && !strcmp(r->method, methods[i]))
			return methods[i];
	return "OTHER";
}

static void count_status(struct http_stats *st, size_t route,
			 const char *method, int status)
{
	for (size_t i = 0; i < st->ncounts; i++) {
		struct http_count *c = &st->counts[i];
		if (c->route == route && c->status == status &&
		    !strcmp(c->method, method)) {
			c->n++;
			return;
		}
	}
	ALLOC_GROW(st->counts, st->ncounts + 1, st->alloc);
	st->counts[st->ncounts++] =
	    (struct http_count){route, method, status, 1};
}

void http_stats_count(struct http_server *srv, const struct http_req *r,
		      long long dur_ms)
{
	struct http_stats *st = &srv->stats;
	size_t route = r->route ? r->route_index : srv->cfg.nroutes;
	double secs = dur_ms / 1000.0;
	size_t b = 0;

	while (b < HTTP_NBUCKETS && secs > bucket_le[b])
		b++;
	pthread_mutex_lock(&st->lock);
	count_status(st, route, http_method_label(r), r->status);
	if (b < HTTP_NBUCKETS)
		st->buckets[route * HTTP_NBUCKETS + b]++;
	st->total[route]++;
	st->sum[route] += secs;
	pthread_mutex_unlock(&st->lock);
}

void http_stats_refused(struct http_server *srv, enum http_refusal why)
{
	atomic_fetch_add(&srv->stats.refused[why], 1);
}

static const char *route_label(struct http_server *srv, size_t i)
{
	return i < srv->cfg.nroutes ? srv->cfg.routes[i].path : "-";
}

static void emit_requests(struct http_server *srv, struct strbuf *out)
{
	struct http_stats *st = &srv->stats;

	strbuf_addstr(out, "# HELP sbxcat_http_requests_total HTTP requests "
			   "answered, by route template, method and status.\n"
			   "# TYPE sbxcat_http_requests_total counter\n");
	for (size_t i = 0; i < st->ncounts; i++) {
		const struct http_count *c = &st->counts[i];
		strbuf_addf(out,
			    "sbxcat_http_requests_total{route=\"%s\","
			    "method=\"%s\",status=\"%d\"} %llu\n",
			    route_label(srv, c->route), c->method, c->status,
			    c->n);
	}
}

static void emit_histogram(struct http_server *srv, struct strbuf *out)
{
	struct http_stats *st = &srv->stats;

	strbuf_addstr(out,
		      "# HELP sbxcat_http_request_duration_seconds Time from "
		      "a request's first line to its response, by route "
		      "template.\n"
		      "# TYPE sbxcat_http_request_duration_seconds "
		      "histogram\n");
	for (size_t i = 0; i <= srv->cfg.nroutes; i++) {
		const char *rl = route_label(srv, i);
		unsigned long long cum = 0;
		for (size_t b = 0; b < HTTP_NBUCKETS; b++) {
			cum += st->buckets[i * HTTP_NBUCKETS + b];
			strbuf_addf(out,
				    "sbxcat_http_request_duration_seconds_"
				    "bucket{route=\"%s\",le=\"%g\"} %llu\n",
				    rl, bucket_le[b], cum);
		}
		strbuf_addf(out,
			    "sbxcat_http_request_duration_seconds_bucket{"
			    "route=\"%s\",le=\"+Inf\"} %llu\n"
			    "sbxcat_http_request_duration_seconds_sum{route="
			    "\"%s\"} %.6f\n"
			    "sbxcat_http_request_duration_seconds_count{route="
			    "\"%s\"} %llu\n",
			    rl, st->total[i], rl, st->sum[i], rl, st->total[i]);
	}
}

void http_metrics(struct http_server *srv, struct strbuf *out)
{
	struct http_stats *st = &srv->stats;

	pthread_mutex_lock(&st->lock);
	emit_requests(srv, out);
	emit_histogram(srv, out);
	pthread_mutex_unlock(&st->lock);
	strbuf_addf(out,
		    "# HELP sbxcat_http_connections HTTP connections open.\n"
		    "# TYPE sbxcat_http_connections gauge\n"
		    "sbxcat_http_connections %u\n",
		    atomic_load(&srv->nconn));
	strbuf_addstr(out, "# HELP sbxcat_http_refused_total Requests and "
			   "connections refused before any handler, by "
			   "reason.\n"
			   "# TYPE sbxcat_http_refused_total counter\n");
	for (size_t i = 0; i < REFUSED_N; i++)
		strbuf_addf(out,
			    "sbxcat_http_refused_total{reason=\"%s\"} %llu\n",
			    refusal_names[i], atomic_load(&st->refused[i]));
}

/* s for the log: bytes outside printable ASCII as '?', at most max; "-"
 * when empty or NULL. */
static void add_field(struct strbuf *sb, const char *s, size_t max)
{
	size_t i;

	strbuf_addch(sb, ' ');
	if (!s || !*s) {
		strbuf_addch(sb, '-');
		return;
	}
	for (i = 0; s[i] && i < max; i++) {
		unsigned char c = s[i];
		strbuf_addch(sb, c > 0x20 && c < 0x7f ? c : '?');
	}
}

static void add_time(struct strbuf *sb)
{
	struct timespec ts;
	struct tm tm;
	char buf[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	strbuf_addf(sb, "%s.%03ldZ", buf, ts.tv_nsec / 1000000);
}

void http_log(struct http_server *srv, const char *method, const char *route,
	      int status, long long dur_ms, const char *tenant,
	      const char *session)
{
	struct strbuf sb = STRBUF_INIT;
	ssize_t n;

	if (srv->cfg.log_fd < 0)
		return;
	add_time(&sb);
	add_field(&sb, method, 16);
	add_field(&sb, route, 256);
	if (status)
		strbuf_addf(&sb, " %d", status);
	else
		strbuf_addstr(&sb, " -");
	strbuf_addf(&sb, " %lldms", dur_ms);
	add_field(&sb, tenant, 128);
	add_field(&sb, session, 64);
	strbuf_addch(&sb, '\n');
	/* One write: lines from many threads do not interleave (a pipe
	 * keeps writes of up to PIPE_BUF whole). */
	n = write(srv->cfg.log_fd, sb.buf, sb.len);
	(void)n;
	strbuf_release(&sb);
}

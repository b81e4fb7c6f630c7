/*
 * http-metrics.c - what the server counts (http_metrics, in Prometheus'
 * text format 0.0.4), the format's escaping for every family of the
 * service (http_metric_family, http_metric_label), and the access log
 * (one line per request).
 *
 * Label values come from the route table and a fixed list of methods,
 * never from the client: a client sending a thousand made-up methods or
 * paths adds no series ("-" for a path no route matches, "OTHER" for a
 * method outside the list).  Every series of a route carries its method
 * as well as its template: GET and POST /sessions are one template, and
 * the format allows a label set once per family.  The log line likewise:
 * the route template, never the path; tenant and session as the handler
 * set them, each byte outside printable ASCII as '?'; never a header or
 * a body.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve/http-int.h"

static const double bucket_le[HTTP_NBUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

static const char *const methods[] = {"GET",	 "HEAD",    "POST",
				      "PUT",	 "DELETE",  "PATCH",
				      "OPTIONS", "CONNECT", "TRACE"};

enum { NMETHODS = sizeof(methods) / sizeof(methods[0]) };

static const char *const refusal_names[REFUSED_N] = {
    "413", "431", "503", "timeout", "mhd", "path", "admit", "429"};

/* The histogram's rows: one per route (its method is the route's), then
 * one per method for a request no route took (404, 405), "OTHER" last. */
static size_t hist_rows(size_t nroutes)
{
	return st_add(nroutes, NMETHODS + 1);
}

void http_stats_init(struct http_stats *st, size_t nroutes)
{
	size_t n = hist_rows(nroutes);

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
	for (size_t i = 0; i < NMETHODS; i++)
		if (r->method && !strcmp(r->method, methods[i]))
			return methods[i];
	return "OTHER";
}

/* The histogram's row of r (hist_rows). */
static size_t hist_row(const struct http_server *srv, const struct http_req *r)
{
	size_t i = 0;

	if (r->route)
		return r->route_index;
	while (i < NMETHODS && !(r->method && !strcmp(r->method, methods[i])))
		i++;
	return srv->cfg.nroutes + i;
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
	size_t row = hist_row(srv, r);
	double secs = dur_ms / 1000.0;
	size_t b = 0;

	while (b < HTTP_NBUCKETS && secs > bucket_le[b])
		b++;
	pthread_mutex_lock(&st->lock);
	count_status(st, route, http_method_label(r), r->status);
	if (b < HTTP_NBUCKETS)
		st->buckets[row * HTTP_NBUCKETS + b]++;
	st->total[row]++;
	st->sum[row] += secs;
	pthread_mutex_unlock(&st->lock);
}

void http_stats_refused(struct http_server *srv, enum http_refusal why)
{
	atomic_fetch_add(&srv->stats.refused[why], 1);
}

/* s escaped as the text format wants it: a backslash and a newline in
 * HELP, and a double quote too in a label's value. */
static void add_escaped(struct strbuf *out, const char *s, bool quote)
{
	for (const char *p = s; *p; p++)
		if (*p == '\\')
			strbuf_addstr(out, "\\\\");
		else if (*p == '\n')
			strbuf_addstr(out, "\\n");
		else if (*p == '"' && quote)
			strbuf_addstr(out, "\\\"");
		else
			strbuf_addch(out, *p);
}

void http_metric_family(struct strbuf *out, const char *name, const char *type,
			const char *help)
{
	strbuf_addf(out, "# HELP %s ", name);
	add_escaped(out, help, false);
	strbuf_addf(out, "\n# TYPE %s %s\n", name, type);
}

void http_metric_label(struct strbuf *out, const char *name, const char *value)
{
	if (out->len && out->buf[out->len - 1] != '{')
		strbuf_addch(out, ',');
	strbuf_addf(out, "%s=\"", name);
	add_escaped(out, value, true);
	strbuf_addch(out, '"');
}

/* The labels of histogram row i: {route="...",method="..." */
static void row_labels(struct http_server *srv, struct strbuf *out,
		       const char *series, size_t i)
{
	size_t n = srv->cfg.nroutes;

	strbuf_addf(out, "%s{", series);
	http_metric_label(out, "route", i < n ? srv->cfg.routes[i].path : "-");
	http_metric_label(out, "method",
			  i < n		     ? srv->cfg.routes[i].method
			  : i - n < NMETHODS ? methods[i - n]
					     : "OTHER");
}

static void emit_requests(struct http_server *srv, struct strbuf *out)
{
	struct http_stats *st = &srv->stats;

	http_metric_family(out, "sbxcat_http_requests_total", "counter",
			   "HTTP requests answered, by route template, method "
			   "and status (route \"-\": no route matched).");
	for (size_t i = 0; i < st->ncounts; i++) {
		const struct http_count *c = &st->counts[i];
		size_t n = srv->cfg.nroutes;

		strbuf_addstr(out, "sbxcat_http_requests_total{");
		http_metric_label(out, "route",
				  c->route < n ? srv->cfg.routes[c->route].path
					       : "-");
		http_metric_label(out, "method", c->method);
		strbuf_addf(out, ",status=\"%d\"} %llu\n", c->status, c->n);
	}
}

static void emit_histogram(struct http_server *srv, struct strbuf *out)
{
	struct http_stats *st = &srv->stats;

	http_metric_family(out, "sbxcat_http_request_duration_seconds",
			   "histogram",
			   "Time from a request's first line to its response, "
			   "by route template and method.");
	for (size_t i = 0; i < hist_rows(srv->cfg.nroutes); i++) {
		unsigned long long cum = 0;

		/* Every route's series from the start; a method no route
		 * took once it has been seen. */
		if (i >= srv->cfg.nroutes && !st->total[i])
			continue;
		for (size_t b = 0; b < HTTP_NBUCKETS; b++) {
			cum += st->buckets[i * HTTP_NBUCKETS + b];
			row_labels(srv, out,
				   "sbxcat_http_request_duration_"
				   "seconds_bucket",
				   i);
			strbuf_addf(out, ",le=\"%g\"} %llu\n", bucket_le[b],
				    cum);
		}
		row_labels(srv, out,
			   "sbxcat_http_request_duration_seconds_bucket", i);
		strbuf_addf(out, ",le=\"+Inf\"} %llu\n", st->total[i]);
		row_labels(srv, out, "sbxcat_http_request_duration_seconds_sum",
			   i);
		strbuf_addf(out, "} %.6f\n", st->sum[i]);
		row_labels(srv, out,
			   "sbxcat_http_request_duration_seconds_count", i);
		strbuf_addf(out, "} %llu\n", st->total[i]);
	}
}

void http_metrics(struct http_server *srv, struct strbuf *out)
{
	struct http_stats *st = &srv->stats;

	pthread_mutex_lock(&st->lock);
	emit_requests(srv, out);
	emit_histogram(srv, out);
	pthread_mutex_unlock(&st->lock);
	http_metric_family(out, "sbxcat_http_connections", "gauge",
			   "HTTP connections open.");
	strbuf_addf(out, "sbxcat_http_connections %u\n",
		    atomic_load(&srv->nconn));
	http_metric_family(out, "sbxcat_http_refused_total", "counter",
			   "Requests and connections refused before any "
			   "handler, by reason.");
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

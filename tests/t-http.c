/*
 * t-http.c - an HTTP server (serve/http.h) with a route table of test
 * handlers, for tests/t-http.sh to drive with real clients:
 *
 *   GET|POST /echo/{x}     quick: the request back as JSON (method, route,
 *                          params, body in base64, query "q", header
 *                          "X-Echo"); the
 *                          log's tenant from X-Tenant, session {x}
 *   GET /sleep/{secs}      slow: sleeps up to secs seconds, looking at
 *                          req->gone every 10 ms; says on stderr what it
 *                          saw ("sleep: gone=1 why=REASON after=MS
 *                          at=EPOCH_MS", REASON http.h's HTTP_GONE_*)
 *   GET /big/{bytes}       quick: a body of that many bytes
 *   GET /metrics           quick: http_metrics
 *   GET /inflight          quick: http_server_inflight (this one too)
 *   PUT /only-put          quick: 204 (GET there is 405)
 *   POST /capped/{x}       quick, a body of at most 1 KiB: echo
 *   POST /keyed/{x}        quick, admitted only with "X-Key: good" (else
 *                          401 "No key", the body never read): echo
 *   GET /odd\"q/{x}        quick: echo (a route label with a backslash
 *                          and a double quote, for /metrics' escaping)
 *   GET /stream/{bytes}    slow: a streamed response (text/plain):
 *                          "first\n"; then, with X-Release: FILE, waits
 *                          (up to 10 s, or until gone) for FILE to exist
 *                          and writes "released\n" (or "timeout\n");
 *                          then bytes bytes of 'a' + i % 26 in pieces of
 *                          X-Piece bytes (64 KiB), then "end\n"; says on
 *                          stderr what it saw ("stream: rc=RC wrote=N
 *                          gone=WHY after=MS")
 *
 * The admit hook: every request's caller is its X-Caller header (none:
 * no caller); ?slow=1 sends a quick route to the slow pool; /keyed's
 * needs the key.
 *
 *   t-http [-u PATH] [-t HOST:PORT]... [-p PORTFILE] [-l LOGFILE]
 *          [-b BODY] [-H HEADERS] [-c CONNS] [-i IDLE_S] [-r REQUEST_S]
 *          [-q QUICK] [-s SLOW] [-Q DEPTH] [-g GRACE_MS] [-n NOFILE]
 *          [-w WRITE_S] [-S HOST:PORT -C CERT -K KEY]
 *
 * -S listens on https:HOST:PORT with the PEM files CERT and KEY; SIGHUP
 * reads them again (http_server_tls_reload) and says on stderr
 * "t-http: reload ok" or "t-http: reload failed: WHY".
 *
 * Serves until SIGTERM or SIGINT, then stops with the grace and exits 0.
 * PORTFILE gets the bound port of each -t and -S, one a line, once it
 * serves.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/xjson.h"
#include "serve/http.h"

static _Atomic(struct http_server *) SRV;

static json_t *text_or_null(const char *s)
{
	return s ? xjson_text(s) : json_null();
}

static void echo(void *arg, struct http_request *req, struct http_response *res)
{
	json_t *params = json_array();
	const char *tenant = http_header(req, "X-Tenant");

	for (size_t i = 0; i < req->nparams; i++)
		json_array_append_new(params, xjson_text(req->params[i]));
	if (tenant)
		snprintf(req->tenant, sizeof(req->tenant), "%s", tenant);
	if (req->nparams)
		snprintf(req->session, sizeof(req->session), "%s",
			 req->params[0]);
	http_respond_json(
	    res, 200,
	    xjson_pack("{s:o,s:s,s:o,s:o,s:o,s:I,s:o,s:o}", "method",
		       xjson_text(req->method), "route", req->route, "path",
		       xjson_text(req->path), "params", params, "body",
		       xjson_base64(req->body, req->body_len), "body_len",
		       (json_int_t)req->body_len, "query",
		       text_or_null(http_query(req, "q")), "header",
		       text_or_null(http_header(req, "X-Echo"))));
}

static void sleep_handler(void *arg, struct http_request *req,
			  struct http_response *res)
{
	long long start = clock_now_ms(),
		  end = start + atoll(req->params[0]) * 1000;
	struct timespec ten = {0, 10 * 1000000L};
	int gone = 0;

	while (clock_now_ms() < end && !(gone = atomic_load(req->gone)))
		nanosleep(&ten, NULL);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(stderr, "sleep: gone=%d why=%d after=%lld at=%lld\n",
		gone != 0, gone, clock_now_ms() - start,
		now.tv_sec * 1000LL + now.tv_nsec / 1000000);
	http_respond_json(res, 200,
			  xjson_pack("{s:b,s:I}", "gone", gone, "slept_ms",
				     (json_int_t)(clock_now_ms() - start)));
}

static bool released(struct http_request *req)
{
	const char *file = http_header(req, "X-Release");
	long long end = clock_now_ms() + 10000;
	struct timespec ten = {0, 10 * 1000000L};

	if (!file)
		return true;
	while (clock_now_ms() < end && !atomic_load(req->gone)) {
		if (!access(file, F_OK))
			return true;
		nanosleep(&ten, NULL);
	}
	return false;
}

static void stream(void *arg, struct http_request *req,
		   struct http_response *res)
{
	size_t n = strtoull(req->params[0], NULL, 10), wrote = 0;
	const char *piece_h = http_header(req, "X-Piece");
	size_t piece = piece_h ? strtoull(piece_h, NULL, 10) : 64 << 10;
	long long start = clock_now_ms();
	char *buf;
	int rc;

	if (!piece)
		piece = 1;
	http_response_header(res, "X-Streamed", "yes");
	if (http_stream_start(req, 200, "text/plain") < 0 ||
	    http_stream_start(req, 200, "text/plain") == 0) {
		fprintf(stderr, "stream: http_stream_start misbehaved\n");
		return;
	}
	rc = http_stream_write(req, "first\n", 6);
	if (!rc && http_header(req, "X-Release")) {
		const char *s = released(req) ? "released\n" : "timeout\n";
		if (!atomic_load(req->gone))
			rc = http_stream_write(req, s, strlen(s));
	}
	buf = xmalloc(piece);
	while (!rc && wrote < n) {
		size_t k = n - wrote < piece ? n - wrote : piece;

		for (size_t i = 0; i < k; i++)
			buf[i] = 'a' + (wrote + i) % 26;
		rc = http_stream_write(req, buf, k);
		if (!rc)
			wrote += k;
	}
	free(buf);
	if (!rc && !atomic_load(req->gone))
		rc = http_stream_write(req, "end\n", 4);
	fprintf(stderr, "stream: rc=%d wrote=%zu gone=%d after=%lld\n", rc,
		wrote, atomic_load(req->gone), clock_now_ms() - start);
}

static void big(void *arg, struct http_request *req, struct http_response *res)
{
	size_t n = strtoull(req->params[0], NULL, 10);

	res->status = 200;
	res->body = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		res->body[i] = 'a' + i % 26;
	res->body_len = n;
	res->content_type = "application/octet-stream";
}

static void metrics(void *arg, struct http_request *req,
		    struct http_response *res)
{
	struct strbuf sb = STRBUF_INIT;

	http_metrics(atomic_load(&SRV), &sb);
	res->status = 200;
	res->body = strbuf_detach(&sb, &res->body_len);
	res->content_type = "text/plain; version=0.0.4";
}

/* The requests queued or running now, this one included. */
static void inflight(void *arg, struct http_request *req,
		     struct http_response *res)
{
	res->status = 200;
	res->body = xasprintf("%u\n", http_server_inflight(atomic_load(&SRV)));
	res->body_len = strlen(res->body);
	res->content_type = "text/plain";
}

static void only_put(void *arg, struct http_request *req,
		     struct http_response *res)
{
	res->status = 204;
}

static const char NEED_KEY[] = "X-Key";

static const struct http_route ROUTES[] = {
    {"GET", "/echo/{x}", echo, HTTP_POOL_QUICK, 0, NULL},
    {"POST", "/echo/{x}", echo, HTTP_POOL_QUICK, 0, NULL},
    {"GET", "/sleep/{secs}", sleep_handler, HTTP_POOL_SLOW, 0, NULL},
    {"GET", "/big/{bytes}", big, HTTP_POOL_QUICK, 0, NULL},
    {"GET", "/metrics", metrics, HTTP_POOL_QUICK, 0, NULL},
    {"GET", "/inflight", inflight, HTTP_POOL_QUICK, 0, NULL},
    {"PUT", "/only-put", only_put, HTTP_POOL_QUICK, 0, NULL},
    {"POST", "/capped/{x}", echo, HTTP_POOL_QUICK, 1024, NULL},
    {"POST", "/keyed/{x}", echo, HTTP_POOL_QUICK, 0, NEED_KEY},
    /* A template whose label needs the text format's escapes. */
    {"GET", "/odd\\\"q/{x}", echo, HTTP_POOL_QUICK, 0, NULL},
    {"GET", "/stream/{bytes}", stream, HTTP_POOL_SLOW, 0, NULL},
};

/* Who asks (http.h's admit hook), from the headers alone. */
static void admit(void *arg, const struct http_route *rt,
		  const struct http_request *req, struct http_admit *a)
{
	const char *caller = http_header(req, "X-Caller");
	const char *slow = http_query(req, "slow");
	const char *key = http_header(req, "X-Key");

	if (caller)
		snprintf(a->caller, sizeof(a->caller), "%s", caller);
	if (slow && !strcmp(slow, "1"))
		a->pool = HTTP_POOL_SLOW;
	if (rt->needs == NEED_KEY && !(key && !strcmp(key, "good"))) {
		a->status = 401;
		a->detail = "No key";
	}
}

static void write_ports(const char *file, struct http_server *srv,
			const struct http_listen *ls, size_t n)
{
	char *tmp = xasprintf("%s.tmp", file);
	FILE *f = fopen(tmp, "w");

	if (!f) {
		perror(tmp);
		exit(2);
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(ls[i].spec, "unix:", 5))
			fprintf(f, "%u\n", http_server_port(srv, i));
	if (fclose(f) || rename(tmp, file)) {
		perror(file);
		exit(2);
	}
	free(tmp);
}

static void free_specs(struct http_listen *ls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)ls[i].spec);
}

static int read_pem(const char *cert_file, const char *key_file, char **cert,
		    char **key)
{
	struct sbx_error *err = NULL;
	size_t len;

	*cert = *key = NULL;
	if (!cert_file || !key_file ||
	    read_file_limited(cert_file, 1 << 20, cert, &len, &err) < 0 ||
	    read_file_limited(key_file, 1 << 20, key, &len, &err) < 0) {
		fprintf(stderr, "t-http: reload failed: %s\n",
			err ? err->msg : "-C and -K are both needed");
		sbx_error_free(&err);
		free(*cert);
		return -1;
	}
	return 0;
}

static void raise_nofile(rlim_t want)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		perror("setrlimit");
}

int main(int argc, char **argv)
{
	struct http_listen ls[8];
	struct http_config c = {.routes = ROUTES,
				.nroutes = sizeof(ROUTES) / sizeof(ROUTES[0]),
				.listen = ls,
				.admit = admit,
				.log_fd = -1};
	const char *portfile = NULL, *cert_file = NULL, *key_file = NULL;
	char *cert = NULL, *key = NULL;
	unsigned grace = 5000;
	struct sbx_error *err = NULL;
	struct http_server *srv;
	sigset_t set;
	int opt, sig;

	xjson_init();
	while ((opt = getopt(argc, argv,
			     "u:t:S:C:K:p:l:b:H:c:i:r:q:s:Q:g:n:w:")) != -1) {
		char *spec = NULL;
		switch (opt) {
		case 'u':
			spec = xasprintf("unix:%s", optarg);
			break;
		case 't':
			spec = xasprintf("tcp:%s", optarg);
			break;
		case 'S':
			spec = xasprintf("https:%s", optarg);
			break;
		case 'C':
			cert_file = optarg;
			break;
		case 'K':
			key_file = optarg;
			break;
		case 'p':
			portfile = optarg;
			break;
		case 'l':
			c.log_fd = open(
			    optarg, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			    0644);
			break;
		case 'b':
			c.max_body_bytes = strtoull(optarg, NULL, 10);
			break;
		case 'H':
			c.max_header_bytes = strtoull(optarg, NULL, 10);
			break;
		case 'c':
			c.max_connections = atoi(optarg);
			break;
		case 'i':
			c.idle_timeout_s = atoi(optarg);
			break;
		case 'r':
			c.request_timeout_s = atoi(optarg);
			break;
		case 'q':
			c.quick_workers = atoi(optarg);
			break;
		case 's':
			c.slow_workers = atoi(optarg);
			break;
		case 'Q':
			c.queue_depth = atoi(optarg);
			break;
		case 'w':
			c.write_timeout_s = atoi(optarg);
			break;
		case 'g':
			grace = atoi(optarg);
			break;
		case 'n':
			raise_nofile(strtoull(optarg, NULL, 10));
			break;
		default:
			return 2;
		}
		if (spec && c.nlisten < 8)
			ls[c.nlisten++].spec = spec;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits it */
	if (cert_file && read_pem(cert_file, key_file, &cert, &key) < 0)
		return 1;
	c.tls_cert_pem = cert;
	c.tls_key_pem = key;
	if (http_server_start(&srv, &c, &err) < 0) {
		fprintf(stderr, "t-http: %s\n", err->msg);
		sbx_error_free(&err);
		free_specs(ls, c.nlisten);
		free(cert);
		free(key);
		return 1;
	}
	atomic_store(&SRV, srv);
	if (portfile)
		write_ports(portfile, srv, ls, c.nlisten);
	fprintf(stderr, "t-http: serving\n");
	free(cert);
	free(key);
	while (!sigwait(&set, &sig) && sig == SIGHUP) {
		if (read_pem(cert_file, key_file, &cert, &key) < 0)
			continue;
		if (http_server_tls_reload(srv, cert, key, &err) < 0) {
			fprintf(stderr, "t-http: reload failed: %s\n",
				err->msg);
			sbx_error_free(&err);
		} else {
			fprintf(stderr, "t-http: reload ok\n");
		}
		free(cert);
		free(key);
	}
	fprintf(stderr, "t-http: stopping (%u in flight)\n",
		http_server_inflight(srv));
	http_server_stop(srv, grace);
	fprintf(stderr, "t-http: stopped\n");
	free_specs(ls, c.nlisten);
	return 0;
}

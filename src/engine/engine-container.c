/*
 * engine-container.c - the engine's container and exec calls (see
 * engine.h): create, start, stop, kill, unpause, remove, inspect, list,
 * the archive stat, exec create and inspect through the request runner of
 * engine-http.c, and the exec's hijacked connection, which curl cannot
 * hand over, on a socket of its own.
 *
 * What dockerd 20.10.24 (API 1.41) answers for an exec that cannot start,
 * checked with curl against the test-bed (the exec command maps these to
 * 127 "not found" and 126 "cannot be invoked"):
 * - POST /exec/ID/start still answers 101 (or 200 without the upgrade):
 *   the failure is not in the HTTP reply.
 * - The runtime's message is in the stream, as one frame of type 1
 *   (stdout, not stderr), ending "\r\n", e.g.
 *   `OCI runtime exec failed: exec failed: unable to start container
 *   process: exec: "nonexistentcmd": executable file not found in $PATH:
 *   unknown`; for an absolute path that does not exist the text has
 *   `stat /nonexistent/x: no such file or directory`; for a file without
 *   the x bit, or a directory, `exec: "/etc/passwd": permission denied`;
 *   for a User missing from /etc/passwd `unable to find user NAME: no
 *   matching entries in passwd file` (no "OCI runtime" prefix).
 * - GET /exec/ID/json then says ExitCode 126 for all of these, with
 *   "Pid": 0 (the process never ran) and Running false.  The docker CLI
 *   passes that 126 on, even for "not found".  A command that ran and
 *   itself exited 126 or 127 (`sh -c nonexist` gives 127 and "sh:
 *   nonexist: not found" on stderr) has a Pid other than 0.
 * So: Pid 0 with ExitCode 126 means the command never started; the
 * stdout frame says why ("executable file not found" or "no such file or
 * directory": 127; anything else: 126).  Starting an exec a second time
 * is refused the same way, after the 101, in a stdout frame: "Error:
 * Exec command ID has already run" (or "is already running" while the
 * engine has not yet recorded the first run's end).  What fails in the
 * HTTP reply itself: a missing exec (404), which is also what an exec
 * gets whose container stopped between its create and its start (the
 * engine drops a stopped container's execs); creating an exec in a
 * container not running is 409 "Container ID is not running".
 */
#include "config.h"

#include <ctype.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "engine/engine-http.h"
#include "basic/clock.h"
#include "basic/error.h"

/* The reply headers of the hijacked exec start are refused past this. */
#define ATTACH_HEADERS_MAX (16u << 10)
/* Of an error reply's body on that connection, this much is read. */
#define ATTACH_BODY_MAX (64u << 10)
/* The longest a poll sleeps before *cancel is looked at again. */
#define CANCEL_POLL_MS 250

/* "/containers/ID" then suffix, the id escaped. */
static void container_path(struct strbuf *sb, const char *id,
			   const char *suffix)
{
	strbuf_addstr(sb, "/containers/");
	engine_add_segment_escaped(sb, id);
	strbuf_addstr(sb, suffix);
}

/* A POST of body whose 2xx reply is {"Id": ...}: *id a copy of it. */
static int post_for_id(struct engine *e, const char *path, json_t *body,
		       char **id, struct sbx_error **err)
{
	struct call c;
	json_t *j = NULL;
	char *js = json_dumps(body, JSON_COMPACT);
	const char *v;
	int rc = -1;

	*id = NULL;
	if (!js)
		die_oom();
	call_init(&c, e, "POST", path, true);
	c.json_body = js;
	if (call_json(&c, &j, err) < 0)
		goto out;
	v = json_string_value(json_object_get(j, "Id"));
	if (!v || !*v) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the Docker engine's reply to %s has no Id",
			      c.what);
		goto out;
	}
	*id = xstrdup(v);
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	free(js);
	return rc;
}

static int get_json(struct engine *e, const char *path, json_t **out,
		    struct sbx_error **err)
{
	struct call c;
	int rc;

	call_init(&c, e, "GET", path, true);
	rc = call_json(&c, out, err);
	call_release(&c);
	return rc;
}

int engine_container_create(struct engine *e, const char *name,
			    json_t *body, char **id, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	int rc;

	strbuf_addstr(&path, "/containers/create");
	if (name) {
		strbuf_addstr(&path, "?name=");
		engine_add_query_escaped(&path, name);
	}
	rc = post_for_id(e, strbuf_str(&path), body, id, err);
	strbuf_release(&path);
	return rc;
}

/* POST /containers/ID/SUFFIX, where the statuses in accept[] succeed. */
static int container_post(struct engine *e, const char *id,
			  const char *suffix, const long *accept,
			  struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	int rc;

	container_path(&path, id, suffix);
	rc = call_simple(e, "POST", strbuf_str(&path), accept, NULL, err);
	strbuf_release(&path);
	return rc;
}

int engine_container_start(struct engine *e, const char *id,
			   struct sbx_error **err)
{
	static const long accept[] = {304, 0};
	return container_post(e, id, "/start", accept, err);
}

int engine_container_stop(struct engine *e, const char *id, int seconds,
			  struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	int rc;

	if (seconds < 0)
		seconds = 0;
	container_path(&path, id, "/stop");
	strbuf_addf(&path, "?t=%d", seconds);
	call_init(&c, e, "POST", strbuf_str(&path), true);
	/* The engine waits up to t seconds before it kills and answers. */
	if (c.timeout_ms > 0)
		c.timeout_ms += (long)seconds * 1000;
	rc = call_run(&c, err);
	if (rc == 0 && c.status != 304 && (c.status < 200 || c.status >= 300))
		rc = call_reply_error(&c, err);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

int engine_container_kill(struct engine *e, const char *id, const char *sig,
			  struct sbx_error **err)
{
	struct strbuf suffix = STRBUF_INIT;
	int rc;

	strbuf_addstr(&suffix, "/kill?signal=");
	engine_add_query_escaped(&suffix, sig ? sig : "KILL");
	rc = container_post(e, id, strbuf_str(&suffix), NULL, err);
	strbuf_release(&suffix);
	return rc;
}

int engine_container_rename(struct engine *e, const char *id, const char *name,
			    struct sbx_error **err)
{
	size_t n = strlen(name);
	char *suffix;
	int rc;

	/* The engine's own rule for a name; nothing that needs escaping. */
	if (n < 2 || n > 128 || !isalnum((unsigned char)name[0]) ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") != n)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "'%s' is not a container name", name);
	suffix = xasprintf("/rename?name=%s", name);
	rc = container_post(e, id, suffix, NULL, err);
	free(suffix);
	return rc;
}

int engine_container_pause(struct engine *e, const char *id,
			   struct sbx_error **err)
{
	return container_post(e, id, "/pause", NULL, err);
}

/*
 * dockerd 20.10 answers an unpause before its own state says so: the
 * containerd event that clears State.Paused is handled after the reply
 * (and a pause's event handled late sets it again for a moment), and an
 * exec meanwhile is refused as paused.  The state is read until it says
 * not paused, for at most UNPAUSE_SETTLE_MS.
 */
#define UNPAUSE_SETTLE_MS 5000

static int wait_unpaused(struct engine *e, const char *id,
			 struct sbx_error **err)
{
	long long until = clock_now_ms() + UNPAUSE_SETTLE_MS;
	useconds_t nap = 1000;

	for (;;) {
		json_t *j = NULL;
		bool paused;

		if (engine_container_inspect(e, id, &j, err) < 0)
			return -1;
		paused = json_is_true(
		    json_object_get(json_object_get(j, "State"), "Paused"));
		json_decref(j);
		if (!paused)
			return 0;
		if (clock_now_ms() >= until)
			return sbx_error_set(
			    err, SBX_E_TIMEOUT, 0,
			    "container %.12s still paused %d ms after the "
			    "engine unpaused it",
			    id, UNPAUSE_SETTLE_MS);
		usleep(nap);
		if (nap < 50000)
			nap *= 2;
	}
}

int engine_container_unpause(struct engine *e, const char *id,
			     struct sbx_error **err)
{
	struct sbx_error *uerr = NULL;
	json_t *j = NULL;
	bool not_paused;

	if (container_post(e, id, "/unpause", NULL, &uerr) == 0)
		return wait_unpaused(e, id, err);
	/*
	 * dockerd 20.10 answers "Container ID is not paused" with HTTP 500,
	 * not 409, which also means any failure: the container's own state
	 * tells whether there was nothing to do.
	 */
	not_paused = uerr->http && uerr->http != 404 &&
		     engine_container_inspect(e, id, &j, NULL) == 0 &&
		     json_is_false(json_object_get(
			 json_object_get(j, "State"), "Paused"));
	json_decref(j);
	if (not_paused) {
		sbx_error_free(&uerr);
		return 0;
	}
	if (err) {
		sbx_error_free(err);
		*err = uerr;
	} else {
		sbx_error_free(&uerr);
	}
	return -1;
}

int engine_container_remove(struct engine *e, const char *id, bool force,
			    bool *gone, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	int rc;

	if (gone)
		*gone = false;
	container_path(&path, id, force ? "?force=1&v=0" : "?v=0");
	call_init(&c, e, "DELETE", strbuf_str(&path), true);
	rc = call_run(&c, err);
	if (rc == 0 && c.status == 404) {
		if (gone)
			*gone = true;
	} else if (rc == 0 && (c.status < 200 || c.status >= 300)) {
		/*
		 * 409 is also "You cannot remove a running container" (without
		 * force): only the engine's words tell the two apart
		 * ("removal of container ID is already in progress").
		 */
		bool in_progress =
		    c.status == 409 && c.body.buf &&
		    strstr(c.body.buf, "already in progress") != NULL;
		if (!in_progress)
			rc = call_reply_error(&c, err);
	}
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

int engine_container_inspect(struct engine *e, const char *id, json_t **out,
			     struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	int rc;

	container_path(&path, id, "/json");
	rc = get_json(e, strbuf_str(&path), out, err);
	strbuf_release(&path);
	return rc;
}

int engine_container_stats(struct engine *e, const char *id, json_t **out,
			   struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	int rc;

	container_path(&path, id, "/stats?stream=false&one-shot=true");
	rc = get_json(e, strbuf_str(&path), out, err);
	strbuf_release(&path);
	return rc;
}

int engine_container_list(struct engine *e, const char *const *labels,
			  size_t nlabels, json_t **out, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	int rc;

	strbuf_addstr(&path, "/containers/json?all=1");
	if (nlabels) {
		/* The engine ANDs the values of "label". */
		strbuf_addch(&path, '&');
		engine_add_filter_values(&path, "label", labels, nlabels);
	}
	rc = get_json(e, strbuf_str(&path), out, err);
	if (rc == 0 && !json_is_array(*out)) {
		json_decref(*out);
		*out = NULL;
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "the Docker engine's reply to GET "
				   "/containers/json is not an array");
	}
	strbuf_release(&path);
	return rc;
}

/* X-Docker-Container-Path-Stat: base64 of {name,size,mode,mtime,linkTarget}. */
static int parse_path_stat(const char *b64, unsigned long *mode, char **link,
			   struct sbx_error **err)
{
	size_t n = strlen(b64), pad = 0;
	unsigned char *raw;
	int len;
	json_t *j, *m;
	const char *target;

	while (n > 0 && b64[n - 1] == '=' && pad < 2) {
		pad++;
		n--;
	}
	n += pad;
	raw = xmalloc(st_add(n / 4 * 3, 4));
	len = n % 4 ? -1
		    : EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
	if (len >= 0 && (size_t)len >= pad)
		len -= (int)pad;
	j = len < 0 ? NULL : json_loadb((char *)raw, (size_t)len, 0, NULL);
	free(raw);
	m = json_object_get(j, "mode");
	if (!json_is_integer(m) || json_integer_value(m) < 0) {
		json_decref(j);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "the Docker engine's "
				     "X-Docker-Container-Path-Stat header is "
				     "not base64 JSON with a mode");
	}
	if (mode)
		*mode = (unsigned long)json_integer_value(m);
	target = json_string_value(json_object_get(j, "linkTarget"));
	if (link)
		*link = target && *target ? xstrdup(target) : NULL;
	json_decref(j);
	return 0;
}

int engine_container_stat(struct engine *e, const char *id, const char *path,
			  bool *exists, unsigned long *mode, char **link,
			  struct sbx_error **err)
{
	struct strbuf p = STRBUF_INIT;
	struct call c;
	json_t *j = NULL;
	int rc = -1;

	*exists = false;
	if (mode)
		*mode = 0;
	if (link)
		*link = NULL;
	container_path(&p, id, "/archive?path=");
	engine_add_query_escaped(&p, path);
	call_init(&c, e, "HEAD", strbuf_str(&p), true);
	c.want_header = "X-Docker-Container-Path-Stat";
	if (call_run(&c, err) < 0)
		goto out;
	if (c.status >= 200 && c.status < 300) {
		if (!c.header_value) {
			sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				      "the Docker engine's reply to %s has no "
				      "X-Docker-Container-Path-Stat header",
				      c.what);
			goto out;
		}
		if (parse_path_stat(c.header_value, mode, link, err) < 0)
			goto out;
		*exists = true;
		rc = 0;
	} else if (c.status == 404) {
		/*
		 * A HEAD reply has no body to say whether the path or the
		 * container is missing ("Could not find the file" / "No such
		 * container"): the container's own inspect tells, and gives
		 * the error its message.
		 */
		strbuf_release(&p);
		container_path(&p, id, "/json");
		rc = get_json(e, strbuf_str(&p), &j, err);
	} else {
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "the Docker engine answered HTTP %ld to %s",
			      c.status, c.what);
		if (err && *err)
			(*err)->http = (int)c.status;
	}
out:
	json_decref(j);
	call_release(&c);
	strbuf_release(&p);
	return rc;
}

int engine_exec_create(struct engine *e, const char *id, json_t *body,
		       char **exec_id, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	int rc;

	container_path(&path, id, "/exec");
	rc = post_for_id(e, strbuf_str(&path), body, exec_id, err);
	strbuf_release(&path);
	return rc;
}

int engine_exec_inspect(struct engine *e, const char *exec_id, json_t **out,
			struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	int rc;

	strbuf_addstr(&path, "/exec/");
	engine_add_segment_escaped(&path, exec_id);
	strbuf_addstr(&path, "/json");
	rc = get_json(e, strbuf_str(&path), out, err);
	strbuf_release(&path);
	return rc;
}

/*
 * The hijacked connection.  Everything up to the end of the reply's
 * headers runs on a non-blocking socket, each wait a poll(2) bounded by
 * the deadline and cut into CANCEL_POLL_MS slices for *cancel.
 */
struct attach {
	struct engine *e;
	int fd;
	long long deadline; /* monotonic ms; 0: none */
	const char *what;   /* "POST /exec/ID/start", for messages */
};

static int attach_cancelled(struct sbx_error **err)
{
	int rc = sbx_error_set(err, SBX_E_CANCELLED, 0, "cancelled");
	if (err && *err)
		(*err)->errnum = ECANCELED;
	return rc;
}

/*
 * Wait for events on a->fd: 1 ready, 0 deadline passed, -1 and *err on
 * cancel or a poll failure.
 */
static int attach_wait(struct attach *a, short events, struct sbx_error **err)
{
	for (;;) {
		struct pollfd p = {a->fd, events, 0};
		long long left = CANCEL_POLL_MS;
		int n;

		if (a->e->cancel && atomic_load(a->e->cancel))
			return attach_cancelled(err);
		if (a->deadline) {
			long long now = clock_now_ms();
			if (now >= a->deadline)
				return 0;
			if (a->deadline - now < left)
				left = a->deadline - now;
		}
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "poll during %s", a->what);
		if (n > 0)
			return 1;
	}
}

static int attach_timeout(struct attach *a, const char *during,
			  struct sbx_error **err)
{
	int rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			       "the Docker engine at %s did not answer %s "
			       "in time (%s)",
			       a->e->host, a->what, during);
	if (err && *err)
		(*err)->errnum = ETIMEDOUT;
	return rc;
}

static int attach_broke(struct attach *a, int errnum, const char *during,
			struct sbx_error **err)
{
	return sbx_error_set(err, SBX_E_UNAVAILABLE, errnum,
			     "the Docker engine at %s broke off %s (%s)",
			     a->e->host, a->what, during);
}

static int unreachable(struct attach *a, int errnum, struct sbx_error **err)
{
	char buf[128];
	int rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			       "cannot reach the Docker engine at %s: %s",
			       a->e->host, strerror_r(errnum, buf, sizeof(buf)));
	if (err && *err) {
		(*err)->errnum = errnum;
		sbx_error_hint(*err, "is the Docker engine running?  "
				     "DOCKER_HOST names another one");
	}
	return rc;
}

/* connect(2) a non-blocking socket to addr within the deadline. */
static int attach_connect(struct attach *a, int family,
			  const struct sockaddr *addr, socklen_t len,
			  struct sbx_error **err)
{
	int so = 0, r;
	socklen_t solen = sizeof(so);

	a->fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (a->fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot make a socket for %s", a->what);
	if (connect(a->fd, addr, len) == 0)
		return 0;
	/* A unix socket whose backlog is full says EAGAIN. */
	if (errno != EINPROGRESS && errno != EAGAIN)
		return unreachable(a, errno, err);
	r = attach_wait(a, POLLOUT, err);
	if (r < 0)
		return -1;
	if (r == 0)
		return unreachable(a, ETIMEDOUT, err);
	if (getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &so, &solen) < 0)
		so = errno;
	if (so == EAGAIN) {
		/* AF_UNIX cannot finish a connect later: try once more. */
		if (connect(a->fd, addr, len) == 0)
			return 0;
		so = errno;
	}
	return so ? unreachable(a, so, err) : 0;
}

static int connect_unix(struct attach *a, struct sbx_error **err)
{
	struct sockaddr_un sun;
	size_t n = strlen(a->e->sock);

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (n >= sizeof(sun.sun_path))
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "the socket path '%s' is longer than a "
				     "unix socket address allows",
				     a->e->sock);
	memcpy(sun.sun_path, a->e->sock, n);
	return attach_connect(a, AF_UNIX, (struct sockaddr *)&sun,
			      (socklen_t)sizeof(sun), err);
}

/*
 * e->base is http://HOST:PORT (engine.c always adds the port); HOST may be
 * a bracketed IPv6 address.  Name resolution is getaddrinfo's and not
 * bounded by the deadline: DOCKER_HOST names an address in practice.
 */
static int connect_tcp(struct attach *a, struct sbx_error **err)
{
	const char *hp = a->e->base + strlen("http://");
	const char *colon = strrchr(hp, ':');
	cleanup_free char *host = NULL;
	struct addrinfo hints, *res = NULL, *ai;
	int gai, rc = -1;

	if (strncmp(a->e->base, "http://", 7) != 0 || !colon || colon == hp)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "DOCKER_HOST '%s': expected "
				     "tcp://HOST:PORT",
				     a->e->host);
	if (hp[0] == '[' && colon[-1] == ']')
		host = xstrndup(hp + 1, (size_t)(colon - hp - 2));
	else
		host = xstrndup(hp, (size_t)(colon - hp));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	gai = getaddrinfo(host, colon + 1, &hints, &res);
	if (gai != 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "cannot reach the Docker engine at %s: %s",
				     a->e->host, gai_strerror(gai));
	for (ai = res; ai; ai = ai->ai_next) {
		struct sbx_error *one = NULL;
		if (a->fd >= 0) {
			close(a->fd);
			a->fd = -1;
		}
		rc = attach_connect(a, ai->ai_family, ai->ai_addr,
				    ai->ai_addrlen, ai->ai_next ? &one : err);
		sbx_error_free(&one);
		if (rc == 0)
			break;
	}
	freeaddrinfo(res);
	return rc;
}

static int send_all(struct attach *a, const char *p, size_t n,
		    struct sbx_error **err)
{
	while (n > 0) {
		ssize_t w = send(a->fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return attach_broke(a, errno, "sending the request",
					    err);
		w = attach_wait(a, POLLOUT, err);
		if (w < 0)
			return -1;
		if (w == 0)
			return attach_timeout(a, "sending the request", err);
	}
	return 0;
}

/*
 * One read into sb (at most up to max bytes in all), waiting for it:
 * 0 with bytes added or *eof set, -1 and *err on a failure or the
 * deadline.
 */
static int recv_some(struct attach *a, struct strbuf *sb, size_t max,
		     bool *eof, const char *during, struct sbx_error **err)
{
	char buf[4096];
	ssize_t n;
	size_t room = max - sb->len;

	*eof = false;
	for (;;) {
		n = recv(a->fd, buf, room < sizeof(buf) ? room : sizeof(buf),
			 0);
		if (n > 0) {
			strbuf_add(sb, buf, (size_t)n);
			return 0;
		}
		if (n == 0) {
			*eof = true;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return attach_broke(a, errno, during, err);
		n = attach_wait(a, POLLIN, err);
		if (n < 0)
			return -1;
		if (n == 0)
			return attach_timeout(a, during, err);
	}
}

/* The value of header name in the header block hdr, or NULL. */
static char *header_get(const char *hdr, const char *name)
{
	size_t k = strlen(name);
	const char *p = strstr(hdr, "\r\n");

	while (p && p[2] != '\r' && p[2] != '\0') {
		const char *line = p + 2, *end = strstr(line, "\r\n");
		if (!end)
			break;
		if ((size_t)(end - line) > k && line[k] == ':' &&
		    strncasecmp(line, name, k) == 0) {
			const char *v = line + k + 1;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
				end--;
			return xstrndup(v, (size_t)(end - v));
		}
		p = end;
	}
	return NULL;
}

/*
 * Decode a chunked body in place (as far as it goes): what an error
 * reply's message needs, not a general decoder.  Returns true once the
 * last chunk was seen.
 */
static bool dechunk(struct strbuf *in, struct strbuf *out)
{
	const char *p = in->buf ? in->buf : "";
	const char *end = p + in->len;

	strbuf_release(out);
	while (p < end) {
		char *e;
		const char *crlf;
		unsigned long n;

		crlf = memchr(p, '\n', (size_t)(end - p));
		if (!crlf)
			return false;
		errno = 0;
		n = strtoul(p, &e, 16);
		if (e == p || errno)
			return true; /* not chunked after all: keep what we have */
		p = crlf + 1;
		if (n == 0)
			return true;
		if (n > (size_t)(end - p)) {
			strbuf_add(out, p, (size_t)(end - p));
			return false;
		}
		strbuf_add(out, p, n);
		p += n;
		if (p < end && *p == '\r')
			p++;
		if (p < end && *p == '\n')
			p++;
	}
	return false;
}

/* The body of an error reply (hdr its headers, sb what followed them). */
static int error_reply(struct attach *a, long status, const char *hdr,
		       struct strbuf *sb, struct sbx_error **err)
{
	cleanup_free char *clen = header_get(hdr, "Content-Length");
	cleanup_free char *te = header_get(hdr, "Transfer-Encoding");
	bool chunked = te && strcasecmp(te, "chunked") == 0;
	struct strbuf body = STRBUF_INIT;
	size_t want = ATTACH_BODY_MAX;
	bool eof = false;
	int rc;

	if (clen) {
		char *e;
		unsigned long long n;
		errno = 0;
		n = strtoull(clen, &e, 10);
		if (!errno && e != clen && !*e && n < want)
			want = (size_t)n;
	}
	/* A message cut short by the deadline or a break is still told. */
	while (sb->len < want && !eof) {
		if (chunked && dechunk(sb, &body))
			break;
		if (recv_some(a, sb, ATTACH_BODY_MAX, &eof, "reading an error",
			      NULL) < 0)
			break;
	}
	if (chunked) {
		dechunk(sb, &body);
		rc = engine_reply_error(status, body.buf, body.len, err);
	} else {
		rc = engine_reply_error(status, sb->buf,
					sb->len < want ? sb->len : want, err);
	}
	strbuf_release(&body);
	return rc;
}

static char *attach_request(struct engine *e, const char *exec_id,
			    char **what)
{
	static const char body[] = "{\"Detach\":false,\"Tty\":false}";
	struct strbuf path = STRBUF_INIT, req = STRBUF_INIT;
	const char *host = e->base + strcspn(e->base, ":") + 3;

	strbuf_addstr(&path, "/exec/");
	engine_add_segment_escaped(&path, exec_id);
	strbuf_addstr(&path, "/start");
	*what = xasprintf("POST %s", strbuf_str(&path));
	engine_trace(e, "POST", strbuf_str(&path));
	strbuf_addf(&req,
		    "POST /v%s%s HTTP/1.1\r\n"
		    "Host: %s\r\n"
		    "User-Agent: sbxcat/" PACKAGE_VERSION "\r\n"
		    "Content-Type: application/json\r\n"
		    "Content-Length: %zu\r\n"
		    "Connection: Upgrade\r\n"
		    "Upgrade: tcp\r\n"
		    "\r\n%s",
		    e->api[0] ? e->api : "1.41", strbuf_str(&path), host,
		    sizeof(body) - 1, body);
	strbuf_release(&path);
	return strbuf_detach(&req, NULL);
}

int engine_exec_attach(struct engine *e, const char *exec_id,
		       long long deadline_ms, int *fd, struct strbuf *pre,
		       struct sbx_error **err)
{
	struct attach a = {e, -1, 0, NULL};
	struct strbuf sb = STRBUF_INIT;
	cleanup_free char *req = NULL, *what = NULL, *hdr = NULL;
	long long now = clock_now_ms(), reply_by = deadline_ms, connect_by;
	const char *end = NULL;
	long status;
	bool eof = false;
	int rc = -1, flags;

	*fd = -1;
	if (e->tls)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "the Docker engine at %s speaks TLS: "
				     "sbxcat runs commands with stdin over "
				     "unix:// and plain tcp:// engines only",
				     e->host);
	/* No deadline given: the headers still come within request_ms. */
	if (!reply_by && e->request_ms > 0)
		reply_by = now + e->request_ms;
	connect_by = now + (long long)ENGINE_CONNECT_SECONDS * 1000;
	if (reply_by && reply_by < connect_by)
		connect_by = reply_by;
	req = attach_request(e, exec_id, &what);
	a.what = what;

	/* Connecting has its own, shorter bound, as every request has. */
	a.deadline = connect_by;
	if ((e->sock ? connect_unix(&a, err) : connect_tcp(&a, err)) < 0)
		goto out;
	a.deadline = reply_by;
	if (send_all(&a, req, strlen(req), err) < 0)
		goto out;

	while (!end) {
		size_t from = sb.len > 3 ? sb.len - 3 : 0;
		if (sb.len >= ATTACH_HEADERS_MAX) {
			sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				      "the Docker engine's reply to %s has "
				      "headers over %u bytes",
				      a.what, ATTACH_HEADERS_MAX);
			goto out;
		}
		if (recv_some(&a, &sb, ATTACH_HEADERS_MAX, &eof,
			      "reading the reply's headers", err) < 0)
			goto out;
		end = sb.len >= 4 ? strstr(sb.buf + from, "\r\n\r\n") : NULL;
		if (!end && eof) {
			attach_broke(&a, 0, "before the end of the reply's "
					    "headers", err);
			goto out;
		}
	}
	hdr = xstrndup(sb.buf, (size_t)(end - sb.buf) + 4);
	/* "HTTP/1.1 101 UPGRADED" */
	if (strncmp(hdr, "HTTP/1.", 7) != 0 || !hdr[7] || hdr[8] != ' ' ||
	    strspn(hdr + 9, "0123456789") != 3 ||
	    (hdr[12] != ' ' && hdr[12] != '\r')) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the reply of the server at %s to %s is not "
			      "HTTP/1",
			      e->host, a.what);
		goto out;
	}
	status = strtol(hdr + 9, NULL, 10);
	/* What came after the headers: the stream, or an error's body. */
	{
		struct strbuf rest = STRBUF_INIT;
		size_t hl = strlen(hdr);
		strbuf_add(&rest, sb.buf + hl, sb.len - hl);
		strbuf_release(&sb);
		sb = rest;
	}
	if (status != 101 && status != 200) {
		error_reply(&a, status, hdr, &sb, err);
		goto out;
	}
	flags = fcntl(a.fd, F_GETFL);
	if (flags < 0 || fcntl(a.fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot make the connection of %s blocking",
			      a.what);
		goto out;
	}
	strbuf_add(pre, sb.buf ? sb.buf : "", sb.len);
	*fd = a.fd;
	a.fd = -1;
	rc = 0;
out:
	if (a.fd >= 0)
		close(a.fd);
	strbuf_release(&sb);
	return rc;
}

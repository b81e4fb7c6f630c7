/*
 * engine.h - a client of the Docker Engine HTTP API (brief section 6).
 *
 * libcurl over the engine's unix socket (or tcp://, with TLS when
 * DOCKER_TLS_VERIFY or DOCKER_TLS is set); never prints.  The API version
 * is negotiated once from the unversioned GET /version and every later
 * request names it.
 *
 * Deadlines: connecting has ENGINE_CONNECT_SECONDS; a plain request has
 * request_ms for the whole exchange; a streamed one (build, pull) has
 * stream_ms (0: none) and, whenever the stream has been silent for
 * stall_ms, the engine is pinged on a second connection: a build step may
 * be quiet for an hour, but an engine that does not answer its ping has
 * stopped, and the call fails instead of hanging.  A call also fails soon
 * (within about a second) after *cancel becomes non-zero.
 *
 * Errors: status 3 when the engine cannot be reached, breaks off or stops
 * answering; status 1 when it answered and refused (its own message and
 * the HTTP status are in the error), or a build or pull failed inside a
 * successful reply.  A cancelled call fails with errnum ECANCELED.
 *
 * Ownership: a struct engine owns its strings and curl handles and is used
 * by one thread at a time; engine_copy() gives another thread its own,
 * without a request.  Strings and string vectors returned are newly
 * allocated: free() them, and strv_free() (util.h) a vector.
 */
#ifndef SBX_ENGINE_H
#define SBX_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "lines.h"

struct sbx_error;
struct tar;

#define ENGINE_DEFAULT_HOST "unix:///var/run/docker.sock"
/* Docker 20.10 (Debian bookworm's docker.io) speaks 1.41. */
#define ENGINE_API_MIN_MAJOR 1
#define ENGINE_API_MIN_MINOR 41

#define ENGINE_CONNECT_SECONDS 10
#define ENGINE_REQUEST_SECONDS 60 /* SBXCAT_ENGINE_TIMEOUT overrides */
#define ENGINE_STALL_SECONDS 30	  /* SBXCAT_ENGINE_STALL overrides */

/*
 * One line of a streamed reply is kept up to this size.  The engine cuts a
 * build's output into messages of at most a few kB, so only a runaway
 * line is ever cut; the cap is what keeps memory constant.
 */
#define ENGINE_JSON_LINE_MAX (1u << 20)
/* The last lines of a step kept for a failure report, and their width. */
#define ENGINE_TAIL_LINES 20
#define ENGINE_TAIL_WIDTH 240

struct engine {
	char *host; /* as configured: unix:///path, tcp://host:port */
	char *sock; /* unix socket path; NULL for tcp */
	char *base; /* http://localhost, https://host:port */
	bool tls, tls_verify;
	char *ca, *cert, *key; /* files from DOCKER_CERT_PATH, or NULL */
	char api[16];	       /* "1.41" once negotiated, else "" */
	long request_ms, stall_ms, stream_ms;
	const volatile sig_atomic_t *cancel; /* may be NULL */
	int trace_fd; /* SBXCAT_ENGINE_TRACE: one line per request, or -1 */
	void *curl, *ping; /* CURL *, made on first use */
};

struct engine_version {
	char api[16];	     /* negotiated */
	char server_api[16]; /* the engine's newest */
	char min_api[16];    /* the engine's oldest */
	char version[64];    /* e.g. 20.10.24+dfsg1 */
};

/*
 * Configure from host, or DOCKER_HOST when host is NULL, or the default
 * socket.  No request is made.  Status 3 for a host sbxcat cannot use.
 */
int engine_init(struct engine *e, const char *host, struct sbx_error **err);
/* GET /version: pick the API version; refuse an engine older than 1.41. */
int engine_negotiate(struct engine *e, struct engine_version *v,
		     struct sbx_error **err);
/* dst: the same engine, version and deadlines, with its own handles. */
void engine_copy(struct engine *dst, const struct engine *src);
void engine_release(struct engine *e);

int engine_ping(struct engine *e, struct sbx_error **err);

/* Is ref present locally?  *id (may be NULL) gets its image ID. */
int engine_image_inspect(struct engine *e, const char *ref, bool *present,
			 char **id, struct sbx_error **err);
/*
 * The tags "repo:tag" of the images in any of the repositories repos[]
 * (exact names), in one request: listing images costs the engine ~15 ms
 * however narrow the filter, so a caller asks once for all it needs.
 */
int engine_image_tags(struct engine *e, const char *const *repos, size_t nrepos,
		      char ***tags, size_t *n, struct sbx_error **err);
/*
 * Remove a tag (or an image ID).  A refusal because a container uses it
 * sets *conflict and is not an error; an image already gone is success.
 */
int engine_image_remove(struct engine *e, const char *ref, bool *conflict,
			struct sbx_error **err);
/* Names of the containers, running or not, created from image (or from
 * an image built on it). */
int engine_containers_using(struct engine *e, const char *image, char ***names,
			    size_t *n, struct sbx_error **err);

/*
 * The decoder of a streamed reply: newline-delimited JSON, any line cut
 * anywhere by the transport.  It keeps the build step, the last lines of
 * the current step's output (terminal escapes removed), the error line's
 * message and the built image's ID.  on_step and on_line, when set, are
 * called from the thread running the call, on each step and each line of
 * output (line at most ENGINE_TAIL_WIDTH-1 bytes).  Memory is constant.
 */
struct engine_tail {
	char line[ENGINE_TAIL_LINES][ENGINE_TAIL_WIDTH];
	size_t first, n;
};

struct engine_stream {
	void (*on_step)(void *ctx, int step, int nsteps, const char *text);
	void (*on_line)(void *ctx, const char *line);
	void *ctx;

	int step, nsteps; /* 0 until the engine names a step */
	char step_text[ENGINE_TAIL_WIDTH];
	struct engine_tail tail;
	char *error;	/* the error line's message, or NULL */
	char *image_id; /* a build's aux.ID, or NULL */
	unsigned long long lines, bad_lines;

	struct lines json, text; /* private */
};

void engine_stream_init(struct engine_stream *s);
void engine_stream_feed(struct engine_stream *s, const char *data, size_t len);
void engine_stream_finish(struct engine_stream *s);
void engine_stream_release(struct engine_stream *s);
/* Line i (0: oldest) of the tail. */
const char *engine_tail_line(const struct engine_tail *t, size_t i);

/*
 * Pull ref (POST /images/create) or build context under tag (POST /build,
 * the tar streamed as it is read).  Both read the whole reply through s;
 * an error line in it fails the call (status 1) with its message, s->tail
 * keeping the output that led to it.  The tag is applied by the engine
 * only when every step succeeded.
 */
int engine_image_pull(struct engine *e, const char *ref,
		      struct engine_stream *s, struct sbx_error **err);
int engine_build(struct engine *e, struct tar *context, const char *tag,
		 bool nocache, struct engine_stream *s, struct sbx_error **err);

#endif

/*
 * engine.h - a client of the Docker Engine HTTP API (brief section 6).
 *
 * libcurl over the engine's unix socket (or tcp://, with TLS when
 * DOCKER_TLS_VERIFY or DOCKER_TLS is set); never prints.  The API version
 * is negotiated once from the unversioned GET /version and every later
 * request names it.  The code: configuration and negotiation in engine.c,
 * the request runner (curl set-up, error mapping) in engine-http.c, the
 * image calls in engine-image.c, the stream decoder in engine-stream.c
 * (its interface: engine-stream.h, included here).
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
 * successful reply.  A cancelled call fails with errnum ECANCELED.  An
 * error from a reply carries its HTTP status in err->http (404: no such
 * thing, 409: a conflict, 304: nothing to do), so callers branch on the
 * field, never on the message; a hint, when there is something to do, is
 * in err->hint, not in the message.  Text from the engine in a message is
 * escaped (text_add_escaped): it is safe to print.
 *
 * Threads: a struct engine owns its strings and curl handles and is used
 * by one thread at a time; engine_copy() gives another thread its own,
 * without a request.  The one thing shared is *cancel, a C11 atomic (for
 * the program, sig_flag() of sig.h) that any thread may set.
 *
 * Ownership: strings and string vectors returned are newly allocated:
 * free() them, and strv_free() (util.h) a vector; a struct engine_image
 * is freed with engine_image_release().
 *
 * Thread rule: as said above: a struct engine is one thread's at a time
 * (engine_copy for another).
 */
#ifndef SBX_ENGINE_H
#define SBX_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/engine-stream.h"

struct sbx_error;
struct strbuf;
struct tar;

#define ENGINE_DEFAULT_HOST "unix:///var/run/docker.sock"
/* Docker 20.10 (Debian bookworm's docker.io) speaks 1.41. */
#define ENGINE_API_MIN_MAJOR 1
#define ENGINE_API_MIN_MINOR 41

#define ENGINE_CONNECT_SECONDS 10
#define ENGINE_REQUEST_SECONDS 60 /* SBXCAT_ENGINE_TIMEOUT overrides */
#define ENGINE_STALL_SECONDS 30	  /* SBXCAT_ENGINE_STALL overrides */

struct engine {
	char *host; /* as configured: unix:///path, tcp://host:port */
	char *sock; /* unix socket path; NULL for tcp */
	char *base; /* http://localhost, https://host:port */
	bool tls, tls_verify;
	char *ca, *cert, *key; /* files from DOCKER_CERT_PATH, or NULL */
	char api[16];	       /* "1.41" once negotiated, else "" */
	long request_ms, stall_ms, stream_ms;
	const atomic_int *cancel; /* may be NULL */
	int trace_fd; /* SBXCAT_ENGINE_TRACE: one line per request, or -1 */
	void *curl, *ping; /* CURL *, made on first use */
};
/* An engine not yet configured: engine_release() of it is safe (and
 * closes no descriptor: {0} would make trace_fd standard input). */
#define ENGINE_INIT {.trace_fd = -1}

struct engine_version {
	char api[16];	     /* negotiated */
	char server_api[16]; /* the engine's newest */
	char min_api[16];    /* the engine's oldest */
	char version[64];    /* e.g. 20.10.24+dfsg1 */
};

/*
 * The engine's configuration, read once (svc/svc-config.h): DOCKER_HOST (NULL:
 * the default socket), DOCKER_TLS_VERIFY, DOCKER_TLS, DOCKER_CERT_PATH
 * (else $HOME/.docker), SBXCAT_ENGINE_TIMEOUT and SBXCAT_ENGINE_STALL
 * (seconds; a bad one is unavailable naming the variable),
 * SBXCAT_ENGINE_TRACE.
 */
struct sbx_env;
struct engine_config {
	char *host;
	bool tls, tls_verify;
	char *cert_dir;
	long request_ms, stall_ms;
	char *trace;
};
void engine_config_defaults(struct engine_config *c);
int engine_config_load(struct engine_config *c, const struct sbx_env *env,
		       struct sbx_error **err);
void engine_config_release(struct engine_config *c);

/*
 * Configure from c (NULL: the defaults), host overriding c's when not
 * NULL.  No request is made.  Unavailable for a host sbxcat cannot use.
 */
int engine_init(struct engine *e, const struct engine_config *c,
		const char *host, struct sbx_error **err);
/* GET /version: pick the API version; refuse an engine older than 1.41. */
int engine_negotiate(struct engine *e, struct engine_version *v,
		     struct sbx_error **err);
/* dst: the same engine, version and deadlines, with its own handles. */
void engine_copy(struct engine *dst, const struct engine *src);
void engine_release(struct engine *e);

int engine_ping(struct engine *e, struct sbx_error **err);

/* What an inspect tells of an image. */
struct engine_image {
	char *id;
	char **tags; /* RepoTags */
	size_t ntags;
	char **label_keys, **label_values; /* Config.Labels */
	size_t nlabels;
};
void engine_image_release(struct engine_image *img);
/* The value of label key, or NULL. */
const char *engine_image_label(const struct engine_image *img, const char *key);

/* Is ref present locally?  *img (may be NULL) is filled when it is. */
int engine_image_inspect(struct engine *e, const char *ref, bool *present,
			 struct engine_image *img, struct sbx_error **err);
/*
 * The tags "repo:tag" of the images in any of the repositories repos[]
 * (exact names), in one request: listing images costs the engine ~15 ms
 * however narrow the filter, so a caller asks once for all it needs.
 */
int engine_image_tags(struct engine *e, const char *const *repos, size_t nrepos,
		      char ***tags, size_t *n, struct sbx_error **err);
/* Tag the image ref as tag ("REPO:TAG"); an absent ref is HTTP 404. */
int engine_image_tag(struct engine *e, const char *ref, const char *tag,
		     struct sbx_error **err);
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

/* What a build is asked for besides its context. */
struct engine_build_args {
	const char *const *tags; /* "REPO:TAG", each applied on success */
	size_t ntags;
	const char *const *label_keys, *const *label_values; /* on the image */
	size_t nlabels;
	bool nocache;
};

/*
 * How a transfer with a registry is made: the X-Registry-Auth value
 * (base64url of the engine's AuthConfig JSON; NULL: none, or "{}" for a
 * push, which the engine requires) and how long its stream may be silent
 * (0: no bound but the engine's stream_ms).  A silent stream fails with
 * kind timeout (a registry that accepts and never answers: the engine
 * waits for it, and answers its ping meanwhile).  auth may hold a
 * password: it is sent in that header alone, never traced nor put into a
 * message.
 */
struct engine_xfer {
	const char *auth;
	long idle_ms;
};

/*
 * Pull ref (POST /images/create) or build context (POST /build, the tar
 * streamed as it is read).  Both read the whole reply through s; an error
 * line in it fails the call (status 1) with its message, s->tail keeping
 * the output that led to it.  The tags are applied by the engine only when
 * every step succeeded.  x may be NULL (no auth, no idle bound).  A ref
 * the registry does not have is an error with err->http 404.
 */
int engine_image_pull(struct engine *e, const char *ref,
		      const struct engine_xfer *x, struct engine_stream *s,
		      struct sbx_error **err);
/*
 * Push the local tag ref ("HOST:PORT/REPO:TAG") to its registry (POST
 * /images/{name}/push?tag=TAG).  The engine answers 200 and reports a
 * failure inside the stream (an error line): it fails the call, as a
 * pull's does.
 */
int engine_image_push(struct engine *e, const char *ref,
		      const struct engine_xfer *x, struct engine_stream *s,
		      struct sbx_error **err);
/*
 * Does ref's registry have ref (GET /distribution/{name}/json: the engine
 * asks the registry for the manifest)?  *digest (may be NULL) the
 * manifest's digest when it has.  An answer the engine maps to 404 (the
 * registry's MANIFEST_UNKNOWN, NAME_UNKNOWN) is *present false; anything
 * else it cannot learn (the registry unreachable, refused credentials)
 * is an error carrying the engine's words.
 */
int engine_distribution_inspect(struct engine *e, const char *ref,
				const struct engine_xfer *x, bool *present,
				char **digest, struct sbx_error **err);
int engine_build(struct engine *e, struct tar *context,
		 const struct engine_build_args *a, struct engine_stream *s,
		 struct sbx_error **err);

/*
 * Containers and execs (engine-container.c).  Bodies and replies are JSON
 * as the Engine API defines them; callers above engine/ use the typed
 * ones below (engine-spec.c) instead, so nothing here knows what a
 * session is and nothing above knows the API's keys.  A missing
 * container or exec is an error with err->http 404; a name already taken
 * is 409.  Container ids and names go into paths escaped.
 */

/* POST /containers/create?name=NAME: *id the new container's id. */
int engine_container_create(struct engine *e, const char *name,
			    json_t *body, char **id, struct sbx_error **err);
/* POST /containers/{id}/start: one already running (304) is success. */
int engine_container_start(struct engine *e, const char *id,
			   struct sbx_error **err);
/* POST /containers/{id}/stop?t=SECONDS: one already stopped is success. */
int engine_container_stop(struct engine *e, const char *id, int seconds,
			  struct sbx_error **err);
/* POST /containers/{id}/kill?signal=SIG (e.g. "KILL"); one not running
 * is an error with err->http 409. */
int engine_container_kill(struct engine *e, const char *id, const char *sig,
			  struct sbx_error **err);
/* POST /containers/{id}/rename?name=NAME: a name the engine takes
 * ([a-zA-Z0-9][a-zA-Z0-9_.-]+); one taken by another container is an
 * error with err->http 409. */
int engine_container_rename(struct engine *e, const char *id, const char *name,
			    struct sbx_error **err);
/* POST /containers/{id}/pause: freeze every process (cgroup freezer). */
int engine_container_pause(struct engine *e, const char *id,
			   struct sbx_error **err);
/* POST /containers/{id}/unpause: one not paused is success.  Returns once
 * the engine's own state says not paused (an exec is refused until then),
 * or a timeout error after 5 s of it saying paused. */
int engine_container_unpause(struct engine *e, const char *id,
			     struct sbx_error **err);
/*
 * DELETE /containers/{id}?force=&v=0: one already gone (404) or already
 * being removed (409 "removal in progress") is success, *gone saying
 * which (may be NULL): true only when it was gone already.
 */
int engine_container_remove(struct engine *e, const char *id, bool force,
			    bool *gone, struct sbx_error **err);
/* GET /containers/{id}/json: *out a new reference. */
int engine_container_inspect(struct engine *e, const char *id, json_t **out,
			     struct sbx_error **err);
/* GET /containers/{id}/stats?stream=false&one-shot=true: one sample, no
 * wait for a second (so no CPU rate). */
int engine_container_stats(struct engine *e, const char *id, json_t **out,
			   struct sbx_error **err);
/*
 * GET /containers/json?all=1&filters={"label":[labels...]}: every
 * container, running or not, carrying all of labels[] ("KEY=VALUE" or
 * "KEY"); *out a new reference to the array.
 */
int engine_container_list(struct engine *e, const char *const *labels,
			  size_t nlabels, json_t **out, struct sbx_error **err);
/*
 * HEAD /containers/{id}/archive?path=PATH: does path exist in the
 * container's file system (created or running)?  *mode its mode bits as
 * the engine reports them (Go's os.FileMode; may be NULL), *link the
 * symlink target or NULL (may be NULL; free it).
 */
int engine_container_stat(struct engine *e, const char *id, const char *path,
			  bool *exists, unsigned long *mode, char **link,
			  struct sbx_error **err);

/* POST /containers/{id}/exec with body: *exec_id the new exec's id. */
int engine_exec_create(struct engine *e, const char *id, json_t *body,
		       char **exec_id, struct sbx_error **err);
/* GET /exec/{id}/json: *out a new reference (ExitCode, Running, Pid). */
int engine_exec_inspect(struct engine *e, const char *exec_id, json_t **out,
			struct sbx_error **err);

/*
 * The typed containers and execs (engine-spec.c): what sbxcat asks of a
 * container or an exec, and what it reads back, as structures; the API's
 * JSON keys are built and read there alone (tests/t-engine-keys.sh), so a
 * caller never names one.  A spec's strings are borrowed from the
 * caller for the call; an info's and a summary's are owned: free with
 * the matching _release (a zeroed one is released safely).
 */

/* KEY=VALUE pairs: labels, a tmpfs's path and options. */
struct engine_labels {
	char **keys, **values;
	size_t n;
};
void engine_labels_release(struct engine_labels *l);
/* The value of key, or NULL. */
const char *engine_labels_get(const struct engine_labels *l, const char *key);

/* A bind mount as created (source on the host, target in the
 * container; read-write, rprivate). */
struct engine_bind {
	const char *source, *target;
};

/* What a container is made of (POST /containers/create).  Besides
 * these, every container sbxcat makes is unprivileged, publishes no
 * port, has a private IPC and cgroup namespace, no restart policy, no
 * auto-removal, no device and no added capability, no tty nor stdin. */
struct engine_container_spec {
	const char *image, *user, *working_dir;
	const char *const *entrypoint, *const *cmd;
	size_t nentrypoint, ncmd;
	const char *const *env; /* KEY=VALUE */
	size_t nenv;
	const char *const *label_keys, *const *label_values;
	size_t nlabels;
	const struct engine_bind *mounts;
	size_t nmounts;
	const char *tmpfs_path, *tmpfs_opts; /* one tmpfs (path NULL: none) */
	bool init;
	const char *const *cap_drop, *const *security_opt;
	size_t ncap_drop, nsecurity_opt;
	long long pids_limit, nano_cpus, memory, memory_swap;
	const char *network_mode;
	const char *stop_signal;
};
/* The create body of s (new reference): what the engine is sent. */
json_t *engine_container_spec_json(const struct engine_container_spec *s);
/* POST /containers/create?name=NAME of s: *id the new container's id. */
int engine_container_create_spec(struct engine *e, const char *name,
				 const struct engine_container_spec *s,
				 char **id, struct sbx_error **err);

/* A mount as the inspect reports it. */
struct engine_mount {
	char *type, *source, *destination;
};

/* What sbxcat reads of a container's inspect (GET /containers/{id}/json).
 * A string the engine did not give is NULL, a number 0, a flag false. */
struct engine_container_info {
	char *id, *name; /* Name as the engine gives it: "/" first */
	struct {
		char *status; /* "running", "exited", ... */
		bool running, paused, oom_killed;
		long long pid, exit_code;
		bool has_exit_code;
		char *error, *started_at, *finished_at;
	} state;
	/* Config */
	char *image, *user, *hostname, *working_dir;
	char **env; /* KEY=VALUE */
	size_t nenv;
	struct engine_labels labels;
	/* HostConfig: the limits as the engine applied them */
	struct {
		bool init, privileged, readonly_rootfs;
		char **cap_drop, **security_opt;
		size_t ncap_drop, nsecurity_opt;
		long long pids_limit, nano_cpus, memory, memory_swap;
		struct engine_labels tmpfs;
		char *network_mode;
	} host;
	struct engine_mount *mounts;
	size_t nmounts;
};
void engine_container_info_release(struct engine_container_info *ci);
/* dst a deep copy of src, its own in every string (release it). */
void engine_container_info_copy(struct engine_container_info *dst,
				const struct engine_container_info *src);
/* Release and free a newly allocated one (NULL: nothing). */
void engine_container_info_free(struct engine_container_info *ci);
/* ci from an inspect's reply. */
void engine_container_info_parse(json_t *j, struct engine_container_info *ci);
/* GET /containers/{id}/json into ci. */
int engine_container_info_get(struct engine *e, const char *id,
			      struct engine_container_info *ci,
			      struct sbx_error **err);

/* One container of a list (GET /containers/json). */
struct engine_container_summary {
	char *id, *name;   /* Names[0], "/" first */
	char *state;	   /* "running", "exited", ... */
	long long created; /* Unix seconds */
	struct engine_labels labels;
};
void engine_container_summaries_free(struct engine_container_summary *v,
				     size_t n);
/* engine_container_list, typed: *v (n of them) newly allocated. */
int engine_container_list_info(struct engine *e, const char *const *labels,
			       size_t nlabels,
			       struct engine_container_summary **v, size_t *n,
			       struct sbx_error **err);

/* A sample of a container's use (engine_container_stats); -1: not
 * given. */
struct engine_container_usage {
	long long memory, memory_cache, memory_limit, pids;
};
int engine_container_usage_get(struct engine *e, const char *id,
			       struct engine_container_usage *u,
			       struct sbx_error **err);

/* What an exec runs (POST /containers/{id}/exec): output attached both
 * ways, no tty, never privileged. */
struct engine_exec_spec {
	const char *const *cmd;
	size_t ncmd;
	const char *const *env; /* KEY=VALUE, besides the container's */
	size_t nenv;
	const char *user; /* NULL: "" (the container's) */
	const char *working_dir;
	bool attach_stdin;
};
/* The create body of s (new reference). */
json_t *engine_exec_spec_json(const struct engine_exec_spec *s);
int engine_exec_create_spec(struct engine *e, const char *id,
			    const struct engine_exec_spec *s, char **exec_id,
			    struct sbx_error **err);

/* What an exec's inspect (GET /exec/{id}/json) says. */
struct engine_exec_info {
	long long pid; /* a host pid; 0 before it started or when it never
			* could */
	bool running;
	bool has_exit_code; /* once it ended, or could not start */
	int exit_code;
};
void engine_exec_info_parse(json_t *j, struct engine_exec_info *ei);
int engine_exec_info_get(struct engine *e, const char *exec_id,
			 struct engine_exec_info *ei, struct sbx_error **err);

/*
 * POST /exec/{id}/start {"Detach":false,"Tty":false} on a connection of
 * its own, hijacked (Upgrade: tcp, reply 101; an engine answering 200
 * without upgrading is accepted too): *fd is the connected socket
 * (blocking, close-on-exec), carrying the multiplexed output one way and
 * the command's stdin the other (shutdown(SHUT_WR) is its EOF).  Bytes of
 * the stream that came with the reply's headers are in *pre (a strbuf
 * the caller releases), to be decoded before anything read from *fd.
 * Works over unix:// and plain tcp:// engines; a TLS engine is refused
 * (status 3).  deadline_ms (monotonic, clock_now_ms(); 0: the engine's
 * request_ms from now) bounds connecting and the reply's headers.  An
 * exec that cannot start still attaches: see engine-container.c.
 */
int engine_exec_attach(struct engine *e, const char *exec_id,
		       long long deadline_ms, int *fd, struct strbuf *pre,
		       struct sbx_error **err);

#endif

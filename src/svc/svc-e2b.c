/*
 * svc-e2b.c - an E2B sandbox's record and lifecycle (svc-e2b.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "engine/engine.h"
#include "session/session-engine.h"
#include "session/session.h"
#include "svc/svc-e2b.h"
#include "svc/svc-exec.h"
#include "svc/svc-int.h"
#include "svc/svc-session.h"

#define RECORD_NAME "e2b.json"
#define RECORD_VERSION 1

void svc_e2b_release(struct svc_e2b *e)
{
	json_decref(e->metadata);
	json_decref(e->envs);
	memset(e, 0, sizeof(*e));
}

void svc_e2b_sandbox_release(struct svc_e2b_sandbox *sb)
{
	svc_wire_session_release(&sb->ws);
	svc_e2b_release(&sb->e);
	sb->state = NULL;
}

/* A string of the record or a request: valid UTF-8, no NUL inside. */
static bool plain_string(const json_t *v, size_t max)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	return s && n <= max && strlen(s) == n && utf8_first_invalid(s, n) < 0;
}

const char *svc_e2b_metadata_check(const json_t *m)
{
	const char *k;
	json_t *v;

	if (!json_is_object(m))
		return "metadata is not an object of strings";
	if (json_object_size(m) > SVC_E2B_META_KEYS)
		return "metadata has more than 64 keys";
	json_object_foreach((json_t *)m, k, v)
	{
		size_t n = strlen(k);

		if (!n || n > SVC_E2B_META_KEY_MAX ||
		    utf8_first_invalid(k, n) >= 0)
			return "a metadata key is empty, over 256 bytes or not "
			       "UTF-8";
		if (!json_is_string(v))
			return "a metadata value is not a string";
		if (!plain_string(v, SVC_E2B_META_VALUE_MAX))
			return "a metadata value is over 2048 bytes, holds NUL "
			       "or is not UTF-8";
	}
	return NULL;
}

int svc_e2b_envs_check(const json_t *m, struct sbx_error **err)
{
	const char **env;
	size_t n = 0, i = 0;
	const char *k;
	json_t *v;
	int rc;

	if (!json_is_object(m))
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "envVars is not an object of strings");
	if (json_object_size(m) > SVC_EXEC_ENV_COUNT_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "envVars has more than %d entries",
				     SVC_EXEC_ENV_COUNT_MAX);
	n = json_object_size(m);
	env = xcalloc(n + 1, sizeof(*env));
	json_object_foreach((json_t *)m, k, v)
	{
		if (!json_is_string(v) ||
		    !plain_string(v, SVC_EXEC_ENV_VALUE_MAX)) {
			for (size_t j = 0; j < i; j++)
				free((char *)env[j]);
			free(env);
			return sbx_error_set(err, SBX_E_INVALID, 0,
					     "envVars '%.64s' is not a string",
					     k);
		}
		env[i++] = xasprintf("%s=%s", k, json_string_value(v));
	}
	rc = svc_exec_env_check(env, i, err);
	for (size_t j = 0; j < i; j++)
		free((char *)env[j]);
	free(env);
	return rc;
}

/* ---- the record ---- */

static json_t *record_json(const struct svc_e2b *e)
{
	json_t *j = xjson_pack(
	    "{s:i, s:s, s:O, s:O, s:b, s:i, s:I, s:I, s:b, s:b, s:I, s:I, s:I}",
	    "version", RECORD_VERSION, "template", e->template_id, "metadata",
	    e->metadata, "envVars", e->envs, "autoPause", e->auto_pause,
	    "allowInternet", e->allow_internet, "startedMs",
	    (json_int_t)e->started_ms, "endAt", (json_int_t)e->end_at, "paused",
	    e->paused, "hibernated", e->hibernated, "pausedAt",
	    (json_int_t)e->paused_at, "heldUntil", (json_int_t)e->held_until,
	    "retention", (json_int_t)e->retention);

	/* Absent: true (the record's first form). */
	if (!e->auto_pause_memory)
		json_object_set_new(j, "autoPauseMemory", json_false());
	return j;
}

static bool int_of(json_t *j, const char *name, long long *out)
{
	json_t *v = json_object_get(j, name);

	if (!json_is_integer(v) || json_integer_value(v) < -1)
		return false;
	*out = json_integer_value(v);
	return true;
}

static int record_parse(const char *data, size_t len, struct svc_e2b *e)
{
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *t, *m, *v;
	long long ver = 0, ai = 0;
	struct sbx_error *err = NULL;
	int rc = -1;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(j) || !int_of(j, "version", &ver) ||
	    ver != RECORD_VERSION)
		goto out;
	t = json_object_get(j, "template");
	m = json_object_get(j, "metadata");
	v = json_object_get(j, "envVars");
	if (!json_is_string(t) || !plain_string(t, SVC_E2B_TEMPLATE_MAX) ||
	    svc_e2b_metadata_check(m) || svc_e2b_envs_check(v, &err) < 0 ||
	    !json_is_boolean(json_object_get(j, "autoPause")) ||
	    !json_is_boolean(json_object_get(j, "paused")) ||
	    !json_is_boolean(json_object_get(j, "hibernated")) ||
	    !int_of(j, "allowInternet", &ai) || ai > 1 ||
	    !int_of(j, "startedMs", &e->started_ms) ||
	    !int_of(j, "endAt", &e->end_at) ||
	    !int_of(j, "pausedAt", &e->paused_at) ||
	    !int_of(j, "heldUntil", &e->held_until) ||
	    !int_of(j, "retention", &e->retention))
		goto out;
	strcpy(e->template_id, json_string_value(t));
	e->metadata = json_incref(m);
	e->envs = json_incref(v);
	e->allow_internet = (int)ai;
	e->auto_pause = json_is_true(json_object_get(j, "autoPause"));
	e->auto_pause_memory =
	    !json_is_false(json_object_get(j, "autoPauseMemory"));
	e->paused = json_is_true(json_object_get(j, "paused"));
	e->hibernated = json_is_true(json_object_get(j, "hibernated"));
	rc = 0;
out:
	sbx_error_free(&err);
	json_decref(j);
	if (rc < 0)
		svc_e2b_release(e);
	return rc;
}

/* The record of key read from its directory kfd. */
static int read_at(int kfd, const char *key, struct svc_e2b *e,
		   struct sbx_error **err)
{
	cleanup_free char *data = NULL;
	size_t len;
	int fd =
	    openat(kfd, RECORD_NAME,
		   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	int rc;

	memset(e, 0, sizeof(*e));
	if (fd < 0 && errno == ENOENT)
		return sbx_error_set(err, SBX_E_NOT_FOUND, ENOENT,
				     "session '%s' is no E2B sandbox", key);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open %s of session '%s'",
				     RECORD_NAME, key);
	rc = read_fd_limited(fd, RECORD_NAME, SVC_E2B_RECORD_MAX, &data, &len,
			     err);
	close(fd);
	if (rc < 0)
		return -1;
	if (record_parse(data, len, e) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "%s of session '%s' is not an E2B record",
				     RECORD_NAME, key);
	return 0;
}

static int write_at(struct session_root *root, int kfd, const char *key,
		    const struct svc_e2b *e, struct sbx_error **err)
{
	cleanup_free char *dir = xasprintf("%s/%s", root->path, key);
	json_t *j = record_json(e);
	char *text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	int rc;

	json_decref(j);
	if (!text)
		die_oom();
	rc = write_file_atomic_at(kfd, dir, RECORD_NAME, text, strlen(text),
				  0600, err);
	free(text);
	return rc;
}

/*
 * ROOT/KEY for a read, without its flock: the record is replaced
 * atomically, so a read sees one whole version (as the reaper reads
 * session.json), and a reader never waits behind the reaper's or an
 * open's hold of the lock.  Never through a symlink; ROOT is root's and
 * closed to others (session_root_open), so what is in it is root's.
 */
static int keydir_read_open(struct session_root *root, const char *key,
			    struct sbx_error **err)
{
	int fd;

	if (!session_key_valid(key))
		return sbx_error_set(err, SBX_E_NOT_FOUND, ENOENT,
				     "no session '%s'", key);
	fd = openat(root->fd, key,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_set(
		    err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_UNAVAILABLE,
		    errno, "no session '%s'", key);
	return fd;
}

static int read_root(struct session_root *root, const char *key,
		     struct svc_e2b *e, struct sbx_error **err)
{
	int kfd = keydir_read_open(root, key, err), rc;

	memset(e, 0, sizeof(*e));
	if (kfd < 0)
		return -1;
	rc = read_at(kfd, key, e, err);
	close(kfd);
	return rc;
}

int svc_e2b_read(const struct svc *s, const struct svc_call *call,
		 const char *key, struct svc_e2b *e, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	int rc = -1;

	memset(e, 0, sizeof(*e));
	if (svc_root_open(s, call, &root, err) == 0)
		rc = read_root(&root, key, e, err);
	session_root_close(&root);
	return rc;
}

int svc_e2b_wake_check(struct session_root *root, const char *key,
		       struct sbx_error **err)
{
	struct svc_e2b e;
	int rc = read_root(root, key, &e, err);

	if (rc < 0) {
		if ((*err)->errnum != ENOENT)
			return -1;
		sbx_error_free(err);
		return 0; /* no E2B sandbox */
	}
	rc = e.paused ? sbx_error_set(err, SBX_E_CONFLICT, 0,
				      "session '%s' is paused by its E2B "
				      "client: connect resumes it",
				      key)
		      : 0;
	svc_e2b_release(&e);
	return rc;
}

/*
 * Change key's record under ROOT/KEY's flock: read, change (which may
 * refuse: -1), write.  e gets what was written.
 */
static int record_update(const struct svc *s, const struct svc_call *call,
			 const char *key,
			 int (*change)(struct svc_e2b *e, void *arg,
				       struct sbx_error **err),
			 void *arg, struct svc_e2b *e, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct svc_e2b cur;
	int kfd = -1, rc = -1;

	if (svc_root_open(s, call, &root, err) < 0 ||
	    (kfd = session_keydir_lock(&root, key, err)) < 0 ||
	    read_at(kfd, key, &cur, err) < 0)
		goto out;
	if (change(&cur, arg, err) == 0 &&
	    write_at(&root, kfd, key, &cur, err) == 0) {
		svc_e2b_release(e);
		*e = cur;
		memset(&cur, 0, sizeof(cur));
		rc = 0;
	}
	svc_e2b_release(&cur);
out:
	if (kfd >= 0)
		session_keydir_unlock(kfd);
	session_root_close(&root);
	return rc;
}

/* ---- rows ---- */

/* The row of a lifecycle operation on sb (op, an "e2b ..." detail) on the
 * recorder made ready before it acted (svc_audit_begin), then closed. */
static void row(const struct svc_call *call, struct audit *au,
		const struct svc_e2b_sandbox *sb, enum audit_op op,
		const char *detail, long long started, struct sbx_error **err)
{
	svc_audit_row(au, op, sb->ws.rec.tenant, sb->ws.key, sb->ws.wire.id,
		      sb->ws.rec.runtime, sb->ws.wire.id, started, detail, err);
	svc_audit_close(call, au);
}

/* ---- find, list ---- */

int svc_e2b_find(const struct svc *s, const struct svc_call *call,
		 const char *id, bool with_state, struct svc_e2b_sandbox *sb,
		 struct sbx_error **err)
{
	memset(sb, 0, sizeof(*sb));
	if (svc_wire_find(s, call, id, &sb->ws, err) < 0)
		return -1;
	if (!sb->ws.open) {
		svc_e2b_sandbox_release(sb);
		return sbx_error_set(err, SBX_E_NOT_FOUND, ENOENT,
				     "no sandbox '%s'", id);
	}
	if (svc_e2b_read(s, call, sb->ws.key, &sb->e, err) < 0 ||
	    (with_state &&
	     svc_wire_state(s, call, &sb->ws, &sb->state, err) < 0)) {
		svc_e2b_sandbox_release(sb);
		return -1;
	}
	return 0;
}

int svc_e2b_list(const struct svc *s, const struct svc_call *call,
		 struct svc_e2b_list_res *res, struct sbx_error **err)
{
	struct svc_wire_list_res l;
	size_t alloc = 0;

	memset(res, 0, sizeof(*res));
	if (svc_wire_list(s, call, &l, err) < 0)
		return -1;
	for (size_t i = 0; i < l.n; i++) {
		struct svc_e2b e;
		struct sbx_error *e2 = NULL;

		if (svc_e2b_read(s, call, l.rows[i].key, &e, &e2) < 0) {
			if (e2->errnum != ENOENT)
				svc_warn(call, "%s", e2->msg);
			sbx_error_free(&e2);
			continue;
		}
		ALLOC_GROW(res->rows, res->n + 1, alloc);
		res->rows[res->n].ws = l.rows[i];
		memset(&l.rows[i], 0, sizeof(l.rows[i]));
		res->rows[res->n].e = e;
		res->rows[res->n++].state = l.states[i];
	}
	svc_wire_list_res_release(&l);
	return 0;
}

void svc_e2b_list_res_release(struct svc_e2b_list_res *res)
{
	for (size_t i = 0; i < res->n; i++)
		svc_e2b_sandbox_release(&res->rows[i]);
	free(res->rows);
	memset(res, 0, sizeof(*res));
}

/* ---- create ---- */

int svc_e2b_create(const struct svc *s, const struct svc_call *call,
		   const struct svc_e2b_create_req *req,
		   struct svc_e2b_create_res *res, struct sbx_error **err)
{
	struct svc_wire_open_req o = {
	    .id = req->id,
	    .runtime = req->runtime,
	    .cat = req->cat,
	    .cat_err = req->cat_err,
	    .default_agent = req->default_agent,
	    .default_run = req->default_run,
	    .work_dir = req->work_dir,
	};
	struct session_root root = SESSION_ROOT_INIT;
	struct svc_e2b *e = &res->e;
	struct timespec ts;
	int kfd = -1;

	memset(res, 0, sizeof(*res));
	if (strlen(req->template_id) > SVC_E2B_TEMPLATE_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "template id over %d bytes",
				     SVC_E2B_TEMPLATE_MAX);
	if (svc_wire_open(s, call, &o, &res->open, err) < 0) {
		svc_e2b_create_res_release(res);
		return -1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(e->template_id, sizeof(e->template_id), "%s",
		 req->template_id);
	e->metadata =
	    req->metadata ? json_deep_copy(req->metadata) : json_object();
	e->envs = req->envs ? json_deep_copy(req->envs) : json_object();
	if (!e->metadata || !e->envs)
		die_oom();
	e->auto_pause = req->auto_pause;
	e->auto_pause_memory = req->auto_pause_memory;
	e->allow_internet = req->allow_internet;
	e->started_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	e->end_at = (long long)ts.tv_sec + req->timeout_s;
	e->retention = req->retention;
	if (svc_root_open(s, call, &root, err) == 0 &&
	    (kfd = session_keydir_lock(&root, res->open.open.key, err)) >= 0 &&
	    write_at(&root, kfd, res->open.open.key, e, err) == 0) {
		session_keydir_unlock(kfd);
		session_root_close(&root);
		return 0;
	}
	if (kfd >= 0)
		session_keydir_unlock(kfd);
	session_root_close(&root);
	/* No record, no sandbox: what was opened goes again. */
	{
		struct svc_session_close_req c = {.key = res->open.open.key,
						  .purge = true};
		struct svc_session_close_res r;
		struct sbx_error *cerr = NULL;

		if (svc_session_close(s, call, &c, &r, &cerr) < 0)
			svc_warn(call, "%s", cerr->msg);
		svc_session_close_res_release(&r);
		sbx_error_free(&cerr);
	}
	svc_e2b_create_res_release(res);
	return -1;
}

void svc_e2b_create_res_release(struct svc_e2b_create_res *res)
{
	svc_wire_open_res_release(&res->open);
	svc_e2b_release(&res->e);
}

/* ---- pause, connect, timeout, kill ---- */

struct pause_arg {
	bool memory, already;
	long long now;
};

static int pause_change(struct svc_e2b *e, void *arg, struct sbx_error **err)
{
	struct pause_arg *p = arg;

	if (e->paused) {
		p->already = true;
		return sbx_error_set(err, SBX_E_CONFLICT, 0,
				     "the sandbox is paused already");
	}
	e->paused = true;
	e->hibernated = !p->memory;
	e->paused_at = p->now;
	e->held_until = p->now + e->retention;
	return 0;
}

static int unpause_change(struct svc_e2b *e, void *arg, struct sbx_error **err)
{
	(void)arg;
	(void)err;
	e->paused = e->hibernated = false;
	e->paused_at = e->held_until = 0;
	return 0;
}

/* The container frozen, or (memory false) hibernated: marked and
 * stopped under the session's open lock, as hibernation does it. */
static int freeze(const struct svc *s, const struct svc_call *call,
		  struct svc_e2b_sandbox *sb, bool memory, long long now,
		  struct sbx_error **err)
{
	struct engine engine = ENGINE_INIT;
	struct session_root root = SESSION_ROOT_INIT;
	const char *state = NULL;
	int lock = -1, rc = -1;

	if (svc_wire_state(s, call, &sb->ws, &state, err) < 0 ||
	    svc_engine_open(s, call, &engine, err) < 0)
		goto out;
	if (!sb->ws.rec.container || strcmp(state, "closed") == 0) {
		sbx_error_set(err, SBX_E_NOT_FOUND, ENOENT,
			      "the sandbox's container is gone");
		goto out;
	}
	if (memory && strcmp(state, "running") == 0) {
		rc = engine_container_pause(&engine, sb->ws.rec.container, err);
		goto out;
	}
	if (memory || strcmp(state, svc_wire_hibernated) == 0 ||
	    strcmp(state, "exited") == 0) {
		/* Paused by the reaper, or down already: as it is. */
		rc = 0;
		goto out;
	}
	if (svc_root_open(s, call, &root, err) < 0 ||
	    (lock = session_open_lock(&root, sb->ws.key, err)) < 0 ||
	    session_hibernate_mark(&root, sb->ws.key, now, err) < 0)
		goto out;
	rc = session_engine_stop(&engine, sb->ws.rec.container, state, err);
	if (rc < 0) {
		struct sbx_error *e2 = NULL;

		session_hibernate_clear(&root, sb->ws.key, &e2);
		sbx_error_free(&e2);
	}
out:
	if (lock >= 0)
		session_keydir_unlock(lock);
	session_root_close(&root);
	svc_engine_close(s, &engine);
	return rc;
}

static int pause_do(const struct svc *s, const struct svc_call *call,
		    struct svc_e2b_sandbox *sb, bool memory, long long now,
		    bool *already, struct sbx_error **err)
{
	struct pause_arg p = {.memory = memory, .now = now};

	*already = false;
	/* The record first: from then on no auto-wake unpauses it. */
	if (record_update(s, call, sb->ws.key, pause_change, &p, &sb->e, err) <
	    0) {
		*already = p.already;
		return -1;
	}
	if (freeze(s, call, sb, memory, now, err) < 0) {
		struct sbx_error *e2 = NULL;
		struct svc_e2b back = {0};

		record_update(s, call, sb->ws.key, unpause_change, NULL, &back,
			      &e2);
		svc_e2b_release(&back);
		sbx_error_free(&e2);
		return -1;
	}
	return 0;
}

int svc_e2b_pause(const struct svc *s, const struct svc_call *call,
		  struct svc_e2b_sandbox *sb, bool memory, long long now,
		  bool *already, struct sbx_error **err)
{
	long long started = clock_now_ms();
	struct audit *au;

	*already = false;
	if (svc_audit_begin(s, call, &au, err) < 0)
		return -1;
	pause_do(s, call, sb, memory, now, already, err);
	if (*already) {
		svc_audit_close(call, au);
		return -1; /* nothing done: no row */
	}
	row(call, au, sb, AUDIT_OPEN,
	    memory ? "e2b pause" : "e2b pause, memory dropped", started, err);
	return *err ? -1 : 0;
}

struct end_arg {
	long long end_at;
	bool only_later;
};

static int end_change(struct svc_e2b *e, void *arg, struct sbx_error **err)
{
	struct end_arg *a = arg;

	(void)err;
	if (!a->only_later || a->end_at > e->end_at)
		e->end_at = a->end_at;
	return 0;
}

static int connect_change(struct svc_e2b *e, void *arg, struct sbx_error **err)
{
	unpause_change(e, NULL, err);
	return end_change(e, arg, err);
}

/* The container back: a hibernated one woken by an open (its row), a
 * paused one unpaused. */
static int thaw(const struct svc *s, const struct svc_call *call,
		struct svc_e2b_sandbox *sb, const struct catalog *cat,
		struct sbx_error **err)
{
	struct engine engine = ENGINE_INIT;
	const char *state = NULL;
	int rc = -1;

	if (svc_wire_state(s, call, &sb->ws, &state, err) < 0)
		return -1;
	if (strcmp(state, "running") == 0)
		return 0;
	if (strcmp(state, "paused") == 0) {
		if (svc_engine_open(s, call, &engine, err) == 0)
			rc = engine_container_unpause(
			    &engine, sb->ws.rec.container, err);
		svc_engine_close(s, &engine);
		return rc;
	}
	{
		struct svc_session_open_req o = {
		    .scope = SVC_WIRE_KEY_SCOPE,
		    .subject = sb->ws.wire.id,
		    .host = "",
		    .cat = cat,
		    .runtime = sb->ws.rec.runtime,
		    .name = sb->ws.wire.id,
		};
		struct svc_session_open_res res;
		struct svc_call c = *call;

		c.tenant = sb->ws.rec.tenant;
		rc = svc_session_open(s, &c, &o, &res, err);
		svc_session_open_res_release(&res);
	}
	return rc;
}

int svc_e2b_connect(const struct svc *s, const struct svc_call *call,
		    struct svc_e2b_sandbox *sb, long long end_at,
		    const struct catalog *cat, bool *resumed,
		    char token[SVC_WIRE_TOKEN_LEN + 1], struct sbx_error **err)
{
	struct end_arg a = {.end_at = end_at, .only_later = true};
	struct session_root root = SESSION_ROOT_INIT;
	char hash[SESSION_WIRE_HASH_HEX + 1];
	long long started = clock_now_ms();
	struct audit *au;
	int rc;

	*resumed = sb->e.paused;
	token[0] = '\0';
	if (svc_audit_begin(s, call, &au, err) < 0)
		return -1;
	svc_wire_token_new(token, hash);
	rc = svc_root_open(s, call, &root, err);
	if (rc == 0)
		rc = session_wire_add_token(&root, sb->ws.key, sb->ws.wire.id,
					    hash, NULL, NULL, err);
	session_root_close(&root);
	explicit_bzero(hash, sizeof(hash));
	/* Whatever stopped it (a client's pause, hibernation under
	 * pressure, the reaper's idle pause), connect gives it back. */
	if (rc < 0 || thaw(s, call, sb, cat, err) < 0 ||
	    record_update(s, call, sb->ws.key, connect_change, &a, &sb->e,
			  err) < 0) {
		explicit_bzero(token, SVC_WIRE_TOKEN_LEN + 1);
		row(call, au, sb, AUDIT_OPEN,
		    *resumed ? "e2b resume" : "e2b connect", started, err);
		return -1;
	}
	row(call, au, sb, AUDIT_OPEN, *resumed ? "e2b resume" : "e2b connect",
	    started, err);
	return *err ? -1 : 0;
}

int svc_e2b_set_end(const struct svc *s, const struct svc_call *call,
		    struct svc_e2b_sandbox *sb, long long end_at,
		    struct sbx_error **err)
{
	struct end_arg a = {.end_at = end_at};
	long long started = clock_now_ms();
	struct audit *au;

	if (svc_audit_begin(s, call, &au, err) < 0)
		return -1;
	record_update(s, call, sb->ws.key, end_change, &a, &sb->e, err);
	row(call, au, sb, AUDIT_OPEN, "e2b timeout", started, err);
	return *err ? -1 : 0;
}

int svc_e2b_kill(const struct svc *s, const struct svc_call *call,
		 struct svc_e2b_sandbox *sb, struct sbx_error **err)
{
	struct svc_session_close_req c = {.key = sb->ws.key, .purge = true};
	struct svc_session_close_res r;
	int rc = svc_session_close(s, call, &c, &r, err);

	svc_session_close_res_release(&r);
	return rc;
}

/* ---- the reaper's step ---- */

/* How stale an E2B sandbox's stamp may grow before the step renews it:
 * half the shortest idle rule that would stop or hibernate it. */
static long long hold_after(const struct svc *s)
{
	long long t = s->cfg.session.idle_timeout;
	long long h = s->cfg.session.evict_idle_after;

	if (h > 0 && (t <= 0 || h < t))
		t = h;
	return t > 0 ? t / 2 : 0;
}

/* One sandbox of the step: 1 when an action was taken. */
static int reap_one(const struct svc *s, const struct svc_call *call,
		    struct session_root *root, const char *key, long long now,
		    long long hold)
{
	struct svc_e2b_sandbox sb = {0};
	struct svc_call any = *call;
	struct sbx_error *err = NULL;
	int acted = 0;
	bool already;

	any.tenant = NULL;
	if (read_root(root, key, &sb.e, &err) < 0) {
		if (err->errnum != ENOENT)
			svc_warn(call, "%s", err->msg);
		goto out;
	}
	snprintf(sb.ws.key, sizeof(sb.ws.key), "%s", key);
	if (session_find(root, key, NULL, &sb.ws.rec, &err) < 0 ||
	    session_wire_read(root, key, &sb.ws.wire, &err) < 0) {
		if (err->errnum != ENOENT)
			svc_warn(call, "%s", err->msg);
		goto out;
	}
	if (!sb.ws.wire.ntokens)
		goto out; /* closed already: nothing to end */
	sb.ws.has_wire = sb.ws.open = true;
	sb.ws.marked = session_hibernated(root, key, NULL, NULL) > 0;
	if ((sb.e.paused && now >= sb.e.held_until) ||
	    (!sb.e.paused && now >= sb.e.end_at && !sb.e.auto_pause)) {
		acted = 1;
		svc_e2b_kill(s, &any, &sb, &err);
	} else if (!sb.e.paused && now >= sb.e.end_at) {
		long long started = clock_now_ms();
		struct audit *au;

		acted = 1;
		if (svc_audit_begin(s, &any, &au, &err) == 0) {
			pause_do(s, &any, &sb, sb.e.auto_pause_memory, now,
				 &already, &err);
			row(&any, au, &sb, AUDIT_REAP,
			    sb.e.auto_pause_memory
				? "e2b timeout: paused"
				: "e2b timeout: paused, memory dropped",
			    started, &err);
		}
	} else if (hold && now - sb.ws.rec.last_activity >= hold) {
		/* Only its deadline ends it: the idle rules see it busy. */
		session_record_touch(root, key, &err);
	}
	if (err)
		svc_warn(call, "sandbox %s: %s", sb.ws.wire.id, err->msg);
out:
	sbx_error_free(&err);
	svc_e2b_sandbox_release(&sb);
	return acted;
}

int svc_e2b_reap(const struct svc *s, const struct svc_call *call,
		 long long now, size_t limit, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	char **keys = NULL;
	size_t n = 0, acted = 0;
	long long hold = hold_after(s);

	if (svc_root_open(s, call, &root, err) < 0 ||
	    session_keys(&root, &keys, &n, err) < 0) {
		session_root_close(&root);
		return -1;
	}
	for (size_t i = 0; i < n && acted < limit; i++)
		acted += (size_t)reap_one(s, call, &root, keys[i], now, hold);
	strv_free(keys, n);
	session_root_close(&root);
	return 0;
}

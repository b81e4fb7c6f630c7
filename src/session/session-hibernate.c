/*
 * session-hibernate.c - hibernation (docs/sessions.md, "Hibernation"):
 * its mark, ROOT/KEY/hibernated (session.h), and, with the quota lock
 * held by an open that needs room, the choice and the stop of the least
 * recently used idle session, and the close of the one hibernated
 * longest (session-engine.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "basic/util.h"
#include "session/session-engine.h"
#include "session/session-layout.h"
#include "session/session-wire.h"
#include "session/session.h"

/* The mark holds one Unix time: 20 digits and a newline at most. */
#define MARK_MAX 32

/* ---- the mark ---- */

int session_hibernated(struct session_root *r, const char *key,
		       long long *since, struct sbx_error **err)
{
	struct sbx_error *e2 = NULL;
	cleanup_free char *path = NULL, *data = NULL;
	unsigned long long t = 0;
	size_t len = 0;
	int kfd = session_keydir_open(r, key, &e2), fd;

	if (since)
		*since = 0;
	if (kfd < 0) {
		bool gone = e2->errnum == ENOENT;

		if (gone)
			sbx_error_free(&e2);
		else if (err)
			*err = e2;
		else
			sbx_error_free(&e2);
		return gone ? 0 : -1;
	}
	fd = openat(kfd, HIBERNATED_NAME,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	close(kfd);
	if (fd < 0 && errno == ENOENT)
		return 0;
	path = xasprintf("%s/%s/" HIBERNATED_NAME, r->path, key);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", path);
	if (read_fd_limited(fd, path, MARK_MAX, &data, &len, &e2) == 0) {
		/* A mark that does not read as a time is still a mark: the
		 * longest asleep, the first closed for room. */
		if (len && data[len - 1] == '\n')
			data[--len] = '\0';
		if (since && text_parse_uint(data, 1ull << 62, &t))
			*since = (long long)t;
	}
	sbx_error_free(&e2);
	close(fd);
	return 1;
}

int session_hibernate_mark(struct session_root *r, const char *key,
			   long long now, struct sbx_error **err)
{
	cleanup_free char *dir = xasprintf("%s/%s", r->path, key);
	char text[MARK_MAX];
	int kfd = session_keydir_open(r, key, err);
	int rc;

	if (kfd < 0)
		return -1;
	snprintf(text, sizeof(text), "%lld\n", now);
	rc = write_file_atomic_at(kfd, dir, HIBERNATED_NAME, text, strlen(text),
				  0600, err);
	close(kfd);
	return rc;
}

int session_hibernate_clear(struct session_root *r, const char *key,
			    struct sbx_error **err)
{
	int kfd = session_keydir_open(r, key, err);
	int rc = 0;

	if (kfd < 0)
		return -1;
	if (unlinkat(kfd, HIBERNATED_NAME, 0) < 0 && errno != ENOENT)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot remove '%s/%s/" HIBERNATED_NAME "'",
				   r->path, key);
	close(kfd);
	return rc;
}

const char *session_state_marked(struct session_root *r, const char *key,
				 const char *state)
{
	if (state && strcmp(state, "exited") == 0 &&
	    session_hibernated(r, key, NULL, NULL) > 0)
		return SESSION_STATE_HIBERNATED;
	return state;
}

/* ---- the candidates ---- */

struct cand {
	struct session_record rec;
	char *id;	   /* the container's */
	const char *state; /* static: session_state_word */
	long long since;   /* the mark's time */
};

static void cands_free(struct cand *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		session_record_release(&v[i].rec);
		free(v[i].id);
	}
	free(v);
}

static int by_stamp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->rec.last_activity != b->rec.last_activity)
		return a->rec.last_activity < b->rec.last_activity ? -1 : 1;
	return strcmp(a->rec.key, b->rec.key);
}

static int by_since(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->since != b->since)
		return a->since < b->since ? -1 : 1;
	return strcmp(a->rec.key, b->rec.key);
}

/*
 * The sessions but except's (NULL: none), oldest first: with asleep,
 * the hibernated ones (by their marks' times); else those whose
 * container is running or paused, idle (by their records) since now -
 * c->evict_idle_after or longer.  A record that does not read is
 * nobody's to take.
 */
static int candidates(struct engine *e, const struct session_config *c,
		      struct session_root *r, const char *except, bool asleep,
		      long long now, struct cand **v, size_t *n,
		      struct sbx_error **err)
{
	struct session_list by_key = {0};
	char **keys = NULL;
	size_t nkeys = 0, alloc = 0;
	int rc = -1;

	*v = NULL;
	*n = 0;
	if (session_engine_list(e, c, &by_key, err) < 0 ||
	    session_keys(r, &keys, &nkeys, err) < 0)
		goto out;
	for (size_t i = 0; i < nkeys; i++) {
		const struct engine_container_summary *sum =
		    session_list_find(&by_key, keys[i]);
		const char *state = session_state_word(sum ? sum->state : NULL);
		const char *id = sum ? sum->id : NULL;
		struct cand x = {0};
		struct sbx_error *e2 = NULL;

		if (!sum || !id || (except && strcmp(keys[i], except) == 0))
			continue;
		if (asleep
			? session_hibernated(r, keys[i], &x.since, NULL) <= 0 ||
			      strcmp(state, "exited") != 0
			: strcmp(state, "running") != 0 &&
			      strcmp(state, "paused") != 0)
			continue;
		if (session_record_read(r, keys[i], &x.rec, &e2) < 0) {
			sbx_error_free(&e2);
			continue;
		}
		if (!asleep &&
		    now - x.rec.last_activity < c->evict_idle_after) {
			session_record_release(&x.rec);
			continue;
		}
		x.id = xstrdup(id);
		x.state = state;
		ALLOC_GROW(*v, *n + 1, alloc);
		(*v)[(*n)++] = x;
	}
	if (*n)
		qsort(*v, *n, sizeof(**v), asleep ? by_since : by_stamp);
	rc = 0;
out:
	strv_free(keys, nkeys);
	session_list_release(&by_key);
	return rc;
}

void session_evicted_release(struct session_evicted *v)
{
	free(v->tenant);
	free(v->runtime);
	free(v->container);
	memset(v, 0, sizeof(*v));
}

static void evicted_of(const struct session_config *c, const struct cand *x,
		       struct session_evicted *out)
{
	session_evicted_release(out);
	memcpy(out->key, x->rec.key, sizeof(out->key));
	out->tenant = xstrdup(x->rec.tenant);
	out->runtime = xstrdup(x->rec.runtime);
	out->container = session_container_name(c, x->rec.key);
	out->stamp = x->rec.last_activity;
	out->since = x->since;
}

/* ---- hibernate ---- */

/*
 * x hibernated, with its open lock and ROOT/KEY's flock held: 1 done, 0
 * left (its stamp moved, a command runs in it), -1 with *err (out names
 * it).
 */
static int hibernate_locked(struct engine *e, const struct session_config *c,
			    struct session_root *r, const struct cand *x,
			    long long now, struct session_evicted *out,
			    struct sbx_error **err)
{
	struct session_record rec;
	struct sbx_error *e2 = NULL;
	int busy;

	if (session_record_read(r, x->rec.key, &rec, &e2) < 0) {
		sbx_error_free(&e2);
		return 0;
	}
	busy = rec.last_activity != x->rec.last_activity;
	session_record_release(&rec);
	if (busy)
		return 0; /* active since it was chosen */
	busy = session_engine_busy(e, x->id, now, c->execute_timeout_s, &e2);
	sbx_error_free(&e2);
	if (busy != 0)
		return 0; /* a command runs, or the engine cannot say */
	evicted_of(c, x, out);
	/* The mark first: a crash before the stop leaves a mark beside a
	 * live container, which means nothing (session.h). */
	if (session_hibernate_mark(r, x->rec.key, now, err) < 0)
		return -1;
	if (session_engine_stop(e, x->id, x->state, err) == 0)
		return 1;
	session_hibernate_clear(r, x->rec.key, &e2);
	sbx_error_free(&e2);
	return sbx_error_wrap(err, "cannot hibernate session '%s'", x->rec.key);
}

int session_hibernate_lru(struct engine *e, const struct session_config *c,
			  struct session_root *r, const char *except,
			  long long now, struct session_evicted *out,
			  bool *done, struct sbx_error **err)
{
	struct cand *v = NULL;
	size_t n = 0;
	int rc = 0;

	*done = false;
	session_evicted_release(out);
	if (!c->evict_idle_after)
		return 0;
	if (candidates(e, c, r, except, false, now, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && rc == 0; i++) {
		int ofd = session_open_trylock(r, v[i].rec.key);
		int kfd;

		if (ofd < 0)
			continue; /* being opened or closed: in use */
		kfd = session_keydir_lock(r, v[i].rec.key, err);
		rc = kfd < 0 ? -1
			     : hibernate_locked(e, c, r, &v[i], now, out, err);
		session_keydir_unlock(kfd);
		session_keydir_unlock(ofd);
	}
	cands_free(v, n);
	*done = rc > 0;
	return rc < 0 ? -1 : 0;
}

/* ---- close the longest asleep ---- */

int session_close_asleep(struct engine *e, const struct session_config *c,
			 struct session_root *r, const char *except,
			 struct session_evicted *out, bool *done,
			 struct sbx_error **err)
{
	struct cand *v = NULL;
	size_t n = 0;
	int rc = 0;

	*done = false;
	session_evicted_release(out);
	if (candidates(e, c, r, except, true, 0, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && !*done && rc == 0; i++) {
		const char *key = v[i].rec.key, *what;
		int ofd = session_open_trylock(r, key);

		if (ofd < 0)
			continue; /* being woken or closed */
		evicted_of(c, &v[i], out);
		if (v[i].rec.durability == SESSION_EPHEMERAL) {
			/* As svc_session_close closes an ephemeral session:
			 * purged; the entry is left in the trash, emptied
			 * out of the quota lock. */
			struct session_trash t;

			session_trash_init(&t);
			out->purged = true;
			if (session_engine_close(e, c, key, false, &what, err) <
				0 ||
			    session_trash_key(r, key, &t, err) < 0)
				rc = -1;
			else
				*done = true;
			session_trash_release(&t);
			session_keydir_unlock(ofd);
			continue;
		}
		/* As svc_session_close closes a session, the quota lock
		 * held: the container, the mark, the stamp, the tokens. */
		if (session_engine_close(e, c, key, c->persist_containers,
					 &what, err) < 0 ||
		    session_hibernate_clear(r, key, err) < 0 ||
		    session_record_touch(r, key, err) < 0 ||
		    session_wire_drop_tokens(r, key, false, err) < 0)
			rc = -1;
		else
			*done = true;
		session_keydir_unlock(ofd);
	}
	cands_free(v, n);
	return rc;
}

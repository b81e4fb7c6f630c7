/*
 * reap.c - one pass of the reaper: what this deployment's containers and
 * sbxcat's records say, the actions that follow, and taking them (see
 * reap.h for the rules, docs/lifetimes.md for why).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/clock.h"
#include "basic/error.h"
#include "basic/util.h"
#include "catalog/deployment.h"
#include "engine/engine.h"
#include "exec/procs.h"
#include "session/reap.h"
#include "session/session-budget.h"
#include "session/session-engine.h"
#include "session/session-wire.h"
#include "session/session.h"

/* Seconds an idle session's container is given to stop (its StopSignal
 * is SIGKILL, so it never needs them); as session close. */

const char *reap_what_name(enum reap_what w)
{
	switch (w) {
	case REAP_PAUSE:
		return "pause";
	case REAP_STOP:
		return "stop";
	case REAP_REMOVE:
		return "remove";
	case REAP_DELETE:
		return "delete";
	case REAP_ORPHAN:
		return "remove-orphan";
	case REAP_STUCK:
		return "remove-stuck";
	case REAP_RELEASE:
		return "release";
	case REAP_CLOSED:
		return "closed";
	}
	return "?";
}

/* ---- time ---- */

void reap_add_duration(struct strbuf *sb, long long s)
{
	static const struct {
		long long n;
		char unit;
	} units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
	size_t i;

	if (s < 0)
		s = 0;
	for (i = 0; i + 1 < sizeof(units) / sizeof(units[0]); i++)
		if (s >= units[i].n)
			break;
	strbuf_addf(sb, "%lld%c", s / units[i].n, units[i].unit);
	if (i + 1 < sizeof(units) / sizeof(units[0])) {
		long long next = s % units[i].n / units[i + 1].n;
		if (next)
			strbuf_addf(sb, " %lld%c", next, units[i + 1].unit);
	}
}

/* ---- what the engine holds ---- */

struct ctr {
	const char *id, *name, *state; /* borrowed from list */
	char key[SESSION_KEY_MAX + 1];
	long long created;
	bool claimed; /* a session's container: decided with its record */
};

/*
 * The containers of this deployment from the engine's list: the filter
 * asks for the label, and its exact value is checked again here (a
 * filter is the engine's to get wrong; what is not ours is never
 * touched).
 */
static void our_containers(const struct engine_container_summary *list,
			   size_t nlist, const struct session_config *c,
			   struct ctr **v, size_t *n)
{
	size_t i, alloc = 0;

	*v = NULL;
	*n = 0;
	for (i = 0; i < nlist; i++) {
		const struct engine_container_summary *s = &list[i];
		const char *dep =
		    engine_labels_get(&s->labels, DEPLOYMENT_LABEL);
		const char *id = s->id;
		const char *name = s->name;
		struct ctr *x;
		char key[SESSION_KEY_MAX + 1];

		/* A session's container has the name made of its key and
		 * the key label of that key, or, claimed from the pool, the
		 * pool's label.  The deployment label alone is not enough:
		 * prewarm puts it on the images it builds, and every
		 * container run from one inherits it. */
		if (!dep || strcmp(dep, c->deployment) != 0 || !id || !name ||
		    !session_container_key_of(c, &s->labels, name, key))
			continue;
		ALLOC_GROW(*v, *n + 1, alloc);
		x = &(*v)[(*n)++];
		x->id = id;
		x->name = name + (*name == '/');
		x->state = session_state_word(s->state);
		memcpy(x->key, key, sizeof(x->key));
		x->created = s->created;
		x->claimed = false;
	}
}

static bool is_state(const char *state, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(state, *set) == 0)
			return true;
	return false;
}

static const char *const stuck_states[] = {"created", "dead", "removing",
					   NULL};

/* ---- the plan ---- */

static struct reap_action *add_action(struct reap_pass *p, enum reap_what w,
				      const char *key, const struct ctr *x,
				      long long since)
{
	struct reap_action *a;

	ALLOC_GROW(p->acts, p->nacts + 1, p->alloc);
	a = &p->acts[p->nacts++];
	memset(a, 0, sizeof(*a));
	a->what = w;
	a->key = key ? xstrdup(key) : NULL;
	if (x) {
		a->container = xstrdup(x->name);
		a->id = xstrdup(x->id);
		a->state = xstrdup(x->state);
	}
	a->since = since;
	a->age = p->now - since;
	a->stamp = -1;
	return a;
}

static char *reason(const char *what, long long age, const char *limit_name,
		    long long limit)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addf(&sb, "%s for ", what);
	reap_add_duration(&sb, age);
	strbuf_addf(&sb, " (%s ", limit_name);
	reap_add_duration(&sb, limit);
	strbuf_addch(&sb, ')');
	return strbuf_detach(&sb, NULL);
}

static void warn(struct reap_pass *p, char *msg)
{
	ALLOC_GROW(p->warnings, p->nwarnings + 1, p->walloc);
	p->warnings[p->nwarnings++] = msg;
}

/* When an exited container stopped: State.FinishedAt, or 0 when the
 * engine does not say (it reports year 1 for "never"). */
static int finished_at(struct engine *e, const struct ctr *x, long long *t,
		       bool *gone, struct sbx_error **err)
{
	struct engine_container_info j;
	const char *f;

	*t = 0;
	*gone = false;
	if (engine_container_info_get(e, x->id, &j, err) < 0) {
		if ((*err)->http != 404)
			return -1;
		sbx_error_free(err);
		*gone = true;
		return 0;
	}
	f = j.state.finished_at;
	if (!f || clock_parse_time(f, t) < 0 || *t < 0)
		*t = 0;
	engine_container_info_release(&j);
	return 0;
}

/* The session's container: named after it and labelled with its key. */
static struct ctr *session_ctr(struct ctr *v, size_t n, const char *name,
			       const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0 && strcmp(v[i].key, key) == 0)
			return &v[i];
	return NULL;
}

static int decide_session(struct engine *e, const struct session_config *c,
			  struct session_root *r, struct reap_pass *p,
			  const struct session_record *rec, struct ctr *v,
			  size_t n, struct sbx_error **err)
{
	cleanup_free char *name = session_container_name(c, rec->key);
	struct ctr *x = session_ctr(v, n, name, rec->key);
	long long idle = p->now - rec->last_activity;
	struct reap_action *a = NULL;

	if (x)
		x->claimed = true;
	if (rec->durability == SESSION_EPHEMERAL && idle > c->idle_timeout) {
		/* Reaped, an ephemeral session keeps nothing: whatever its
		 * container's state (hibernated, paused, running), it goes
		 * with its workspace, as its close would take them. */
		a = add_action(p, REAP_DELETE, rec->key, x, rec->last_activity);
		a->ephemeral = true;
		a->reason = reason("ephemeral, idle", a->age, "idle timeout",
				   c->idle_timeout);
	} else if (c->workspace_ttl && idle > c->workspace_ttl &&
		   (!x || !session_state_live(x->state))) {
		a = add_action(p, REAP_DELETE, rec->key, x, rec->last_activity);
		a->reason = reason("unused", a->age, "workspace TTL",
				   c->workspace_ttl);
	} else if (!x) {
		if (rec->container) {
			a = add_action(p, REAP_CLOSED, rec->key, NULL,
				       rec->last_activity);
			a->reason = xstrdup("its container is gone");
		}
	} else if (session_state_live(x->state)) {
		if (idle > c->idle_timeout) {
			a = add_action(p, REAP_STOP, rec->key, x,
				       rec->last_activity);
			a->reason = reason("idle", a->age, "idle timeout",
					   c->idle_timeout);
		} else if (c->pause_after && c->pause_after < c->idle_timeout &&
			   idle > c->pause_after &&
			   strcmp(x->state, "running") == 0) {
			/* (a paused one stays so; a restarting one is
			 * left to settle) */
			a = add_action(p, REAP_PAUSE, rec->key, x,
				       rec->last_activity);
			a->reason = reason("idle", a->age, "pause after",
					   c->pause_after);
		}
	} else if (strcmp(session_state_marked(r, rec->key, x->state),
			  SESSION_STATE_HIBERNATED) == 0) {
		/* Hibernated: its container is the session's until the idle
		 * timeout closes it (the container TTL counts from then). */
		if (idle > c->idle_timeout) {
			a = add_action(p, REAP_RELEASE, rec->key, x,
				       rec->last_activity);
			a->reason = reason("hibernated, idle", a->age,
					   "idle timeout", c->idle_timeout);
		}
	} else if (strcmp(x->state, "exited") == 0 &&
		   p->now - rec->last_activity > c->container_ttl) {
		/* (its age counts from no earlier than the last activity:
		 * only then is the inspect worth making) */
		long long fin;
		bool gone;

		if (finished_at(e, x, &fin, &gone, err) < 0) {
			/* One container the engine cannot describe does not
			 * stop the pass: it is said, and left for the next. */
			warn(p, xasprintf("cannot inspect %s: %s", x->name,
					  (*err)->msg));
			sbx_error_free(err);
			return 0;
		}
		if (fin < rec->last_activity)
			fin = rec->last_activity;
		if (!gone && p->now - fin > c->container_ttl) {
			a = add_action(p, REAP_REMOVE, rec->key, x, fin);
			a->reason = reason("stopped", a->age, "container TTL",
					   c->container_ttl);
		}
	} else if (is_state(x->state, stuck_states) &&
		   p->now - x->created > c->idle_timeout) {
		struct strbuf sb = STRBUF_INIT;

		a = add_action(p, REAP_STUCK, rec->key, x, x->created);
		strbuf_addstr(&sb, "created for ");
		reap_add_duration(&sb, a->age);
		strbuf_addf(&sb, " (state %s)", x->state);
		a->reason = strbuf_detach(&sb, NULL);
	}
	if (a) {
		a->stamp = rec->last_activity;
		a->tenant = rec->tenant ? xstrdup(rec->tenant) : NULL;
		a->runtime = rec->runtime ? xstrdup(rec->runtime) : NULL;
	}
	return 0;
}

/* A container no record decided: an orphan, or stuck, or left. */
static void decide_container(const struct session_config *c,
			     struct reap_pass *p, const struct ctr *x,
			     bool has_record)
{
	struct strbuf sb = STRBUF_INIT;
	struct reap_action *a;

	if (p->now - x->created <= c->idle_timeout)
		return;
	if (!has_record) {
		a = add_action(p, REAP_ORPHAN, x->key, x, x->created);
		strbuf_addstr(&sb, "no workspace behind it, created ");
		reap_add_duration(&sb, a->age);
		strbuf_addstr(&sb, " ago");
	} else if (is_state(x->state, stuck_states)) {
		a = add_action(p, REAP_STUCK, x->key, x, x->created);
		strbuf_addstr(&sb, "created for ");
		reap_add_duration(&sb, a->age);
		strbuf_addf(&sb, " (state %s)", x->state);
	} else {
		return;
	}
	a->reason = strbuf_detach(&sb, NULL);
}

static int key_cmp(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* Closed last; the rest oldest first, then by key and container. */
static int action_cmp(const void *pa, const void *pb)
{
	const struct reap_action *a = pa, *b = pb;
	int r;

	if ((a->what == REAP_CLOSED) != (b->what == REAP_CLOSED))
		return a->what == REAP_CLOSED ? 1 : -1;
	if (a->what != REAP_CLOSED && a->since != b->since)
		return a->since < b->since ? -1 : 1;
	r = key_cmp(a->key, b->key);
	return r ? r : key_cmp(a->container, b->container);
}

/* a's session's id on the wire, for its row, while its files are
 * there: a session the command line opened has none. */
static void wire_id_of(struct session_root *r, struct reap_action *a)
{
	struct session_wire w;
	struct sbx_error *err = NULL;

	if (a->key && session_wire_read(r, a->key, &w, &err) == 0 && w.id[0])
		a->wire_id = xstrdup(w.id);
	sbx_error_free(&err);
}

static void action_release(struct reap_action *a)
{
	free(a->key);
	free(a->tenant);
	free(a->runtime);
	free(a->container);
	free(a->id);
	free(a->state);
	free(a->reason);
	free(a->wire_id);
	free(a->error);
}

/* Keep the first limit actions (the closed ones all); count the rest. */
static void apply_limit(struct reap_pass *p, size_t limit)
{
	size_t nact = 0, out = 0;

	for (size_t i = 0; i < p->nacts; i++) {
		struct reap_action *a = &p->acts[i];

		if (a->what != REAP_CLOSED && nact++ >= limit) {
			action_release(a);
			p->left++;
			continue;
		}
		p->acts[out++] = *a;
	}
	p->nacts = out;
}

/* ---- acting ---- */

static void failed(struct reap_pass *p, struct reap_action *a,
		   struct sbx_error **err)
{
	a->error = xstrdup(*err ? (*err)->msg : "failed");
	sbx_error_free(err);
	p->failed++;
}

static int remove_ctr(struct engine *e, const struct reap_action *a,
		      bool force, struct sbx_error **err)
{
	bool gone;

	return engine_container_remove(e, a->id, force, &gone, err);
}

/*
 * A session's action, under ROOT/KEY's flock, taken only when the record
 * still carries the stamp it was decided on.  Without force: a stopped
 * container that something started behind sbxcat's back is not killed.
 */
static void act_session(struct engine *e, struct session_root *r,
			struct reap_pass *p, struct reap_action *a)
{
	struct sbx_error *err = NULL;
	struct session_record rec;
	int kfd = session_keydir_lock(r, a->key, &err);
	int rc = 0;

	if (kfd < 0) {
		failed(p, a, &err);
		return;
	}
	if (session_record_read(r, a->key, &rec, &err) < 0) {
		if (err->errnum == ENOENT) {
			sbx_error_free(&err);
			a->skipped = "was closed during the pass; left alone";
		} else {
			failed(p, a, &err);
		}
		session_keydir_unlock(kfd);
		return;
	}
	if (rec.last_activity != a->stamp) {
		a->skipped = "became active during the pass; left alone";
		goto out;
	}
	if ((a->what == REAP_STOP || a->what == REAP_PAUSE ||
	     (a->what == REAP_DELETE && a->state &&
	      session_state_live(a->state))) &&
	    session_engine_busy(e, a->id, p->now, p->exec_timeout_s, &err) !=
		0) {
		if (err)
			failed(p, a, &err);
		else
			a->skipped = "has a command running (exec); left alone";
		goto out;
	}
	switch (a->what) {
	case REAP_PAUSE:
		rc = engine_container_pause(e, a->id, &err);
		break;
	case REAP_STOP:
		rc = session_engine_stop(e, a->id, a->state, &err);
		break;
	case REAP_REMOVE:
		rc = remove_ctr(e, a, false, &err);
		break;
	case REAP_RELEASE:
		/* Closed as an idle session is: its container stays stopped
		 * (the container TTL removes it), its tokens go below. */
		break;
	case REAP_DELETE:
		/* (a live container only for an ephemeral session's: the
		 * workspace TTL's waits for a stopped one) */
		if (a->id)
			rc = remove_ctr(e, a,
					is_state(a->state, stuck_states) ||
					    session_state_live(a->state),
					&err);
		/* Moved into the trash under the lock; emptied after it
		 * (reap_pass_run's end). */
		if (rc == 0)
			rc = session_trash_key(r, a->key, NULL, &err);
		break;
	default:
		die_bug("act_session: not a session's action");
	}
	/* A session stopped, removed or released is closed: its tokens on
	 * the service's wire go with it (session-wire.h), and hibernation's
	 * mark (one a crash left beside a live container too).  A paused
	 * one is open still. */
	if (rc == 0 && (a->what == REAP_STOP || a->what == REAP_REMOVE ||
			a->what == REAP_RELEASE))
		rc = session_wire_drop_tokens(r, a->key, true, &err);
	if (rc == 0 && (a->what == REAP_STOP || a->what == REAP_REMOVE ||
			a->what == REAP_RELEASE))
		rc = session_hibernate_clear(r, a->key, &err);
	if (rc < 0)
		failed(p, a, &err);
	else
		a->done = true;
out:
	session_record_release(&rec);
	session_keydir_unlock(kfd);
}

static void act(struct engine *e, struct session_root *r, struct reap_pass *p,
		struct reap_action *a)
{
	struct sbx_error *err = NULL;

	/* An open of the key in progress (its create and start run outside
	 * the quota lock this pass holds, under ROOT/KEY's open lock) is
	 * the open's: a container it is starting, or claimed from the pool
	 * and not yet recorded, is never taken from under it. */
	if (a->key && a->what != REAP_CLOSED && session_open_busy(r, a->key)) {
		a->skipped = "is being opened; left alone";
		return;
	}
	switch (a->what) {
	case REAP_PAUSE:
	case REAP_STOP:
	case REAP_REMOVE:
	case REAP_DELETE:
	case REAP_RELEASE:
		act_session(e, r, p, a);
		break;
	case REAP_ORPHAN:
	case REAP_STUCK:
		if (remove_ctr(e, a, true, &err) < 0)
			failed(p, a, &err);
		else
			a->done = true;
		break;
	case REAP_CLOSED:
		break;
	}
}

/* ---- the pass ---- */

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool have_key(char **keys, size_t n, const char *key)
{
	return key && bsearch(&key, keys, n, sizeof(*keys), cmp_strp) != NULL;
}

/* A tidy-up of the pass that failed: a warning, counted as a failed
 * action (exit 1: what cannot be removed needs a person). */
static void warn_failed(struct reap_pass *p, struct sbx_error **err)
{
	warn(p, xstrdup((*err)->msg));
	sbx_error_free(err);
	p->failed++;
}

/*
 * Empty the trash, the lock released: the workspaces this pass deleted,
 * and any a crash left half-emptied (a purge killed after its rename).
 * A failure is a warning, and counted as a failed action (exit 1: files
 * that cannot be removed need a person); the next pass tries again.
 */
static void finish_trash(struct session_root *r, struct reap_pass *p)
{
	struct sbx_error *err = NULL;
	unsigned n = 0;

	if (session_trash_finish(r, &n, &err) < 0)
		warn_failed(p, &err);
}

/*
 * A disk budget left by an open killed after its mount (ROOT/KEY with no
 * record; session-budget.h): unmounted, its image removed, unless an
 * open of the key is in progress now.  A failure is a warning.
 */
static void drop_budget(struct session_root *r, struct reap_pass *p,
			const char *key)
{
	struct session_record rec = {0};
	struct sbx_error *err = NULL;

	if (session_open_busy(r, key))
		return;
	snprintf(rec.key, sizeof(rec.key), "%s", key);
	if (session_budget_remove(r, &rec, &err) < 0)
		warn_failed(p, &err);
}

/* Loop devices still attached to files below ROOT, images of the pool
 * without their workspace (session_budget_sweep). */
static void sweep_budgets(struct session_root *r, struct reap_pass *p)
{
	struct sbx_error *err = NULL;
	unsigned n = 0;

	if (session_budget_sweep(r, &n, &err) < 0)
		warn_failed(p, &err);
}

int reap_pass_run(struct engine *e, const struct session_config *c,
		  struct session_root *r, long long now, size_t limit,
		  bool dry_run, struct reap_pass *p, struct sbx_error **err)
{
	cleanup_free char *label =
	    xasprintf("%s=%s", DEPLOYMENT_LABEL, c->deployment);
	const char *labels[] = {label};
	struct engine_container_summary *list = NULL;
	size_t nlist = 0;
	struct ctr *v = NULL;
	char **keys = NULL, **known = NULL;
	size_t n = 0, nkeys = 0, nknown = 0;
	int rc = -1;

	int (*acted)(const struct reap_action *, long long, void *) = p->acted;
	void *acted_arg = p->acted_arg;

	memset(p, 0, sizeof(*p));
	p->acted = acted; /* the caller's, kept */
	p->acted_arg = acted_arg;
	p->now = now;
	p->exec_timeout_s = c->execute_timeout_s;
	p->dry_run = dry_run;
	if (session_lock(r, err) < 0)
		return -1;
	if (engine_container_list_info(e, labels, 1, &list, &nlist, err) < 0 ||
	    session_keys(r, &keys, &nkeys, err) < 0)
		goto out;
	our_containers(list, nlist, c, &v, &n);
	known = xcalloc(nkeys ? nkeys : 1, sizeof(*known));

	for (size_t i = 0; i < nkeys; i++) {
		struct session_record rec;

		if (session_record_read(r, keys[i], &rec, err) < 0) {
			/* No record: a half-made directory, and a container
			 * of its key an orphan.  A damaged one: neither
			 * acted on nor an orphan; said. */
			if ((*err)->errnum != ENOENT) {
				warn(p, xstrdup((*err)->msg));
				known[nknown++] = keys[i];
			} else {
				/* Under the lock no open is half-way: an
				 * open or a purge was interrupted. */
				warn(p, xasprintf("'%s/%s' has no session "
						  "record (an interrupted "
						  "open or purge); left "
						  "alone",
						  r->path, keys[i]));
				if (!dry_run)
					drop_budget(r, p, keys[i]);
			}
			sbx_error_free(err);
			continue;
		}
		known[nknown++] = keys[i];
		rc = decide_session(e, c, r, p, &rec, v, n, err);
		session_record_release(&rec);
		if (rc < 0)
			goto out;
		rc = -1;
	}
	/* keys[] is sorted, and known[] a subsequence of it. */
	for (size_t i = 0; i < n; i++)
		if (!v[i].claimed)
			decide_container(c, p, &v[i],
					 have_key(known, nknown, v[i].key));

	if (p->nacts)
		qsort(p->acts, p->nacts, sizeof(*p->acts), action_cmp);
	apply_limit(p, limit);
	for (size_t i = 0; !dry_run && i < p->nacts; i++) {
		long long t0 = clock_now_ms();

		wire_id_of(r, &p->acts[i]);
		act(e, r, p, &p->acts[i]);
		if (p->acted &&
		    p->acted(&p->acts[i], clock_now_ms() - t0, p->acted_arg) <
			0) {
			for (size_t j = i + 1; j < p->nacts; j++)
				if (p->acts[j].what != REAP_CLOSED) {
					p->acts[j].skipped =
					    "left: its audit row could not "
					    "be written";
					p->left++;
				}
			break;
		}
	}
	if (!dry_run)
		sweep_budgets(r, p);
	rc = 0;
out:
	session_unlock(r);
	if (!dry_run)
		finish_trash(r, p);
	free(known);
	strv_free(keys, nkeys);
	free(v);
	engine_container_summaries_free(list, nlist);
	return rc;
}

void reap_pass_release(struct reap_pass *p)
{
	for (size_t i = 0; i < p->nacts; i++)
		action_release(&p->acts[i]);
	free(p->acts);
	strv_free(p->warnings, p->nwarnings);
	memset(p, 0, sizeof(*p));
}

/* ---- report ---- */

static int usage_cmp(const void *pa, const void *pb)
{
	const struct reap_usage *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return strcmp(a->key, b->key);
}

/* A workspace's size: its budget's numbers (constant time) when it has
 * one, else the walk's. */
static int report_size(struct session_root *r, const struct session_record *rec,
		       struct reap_usage *u, struct sbx_error **err)
{
	struct session_usage d;

	if (session_budget_usage(r, rec, &d, err) == 0 && d.budget) {
		u->bytes = d.bytes_used;
		u->files = d.inodes_used;
		u->bytes_allowed = d.bytes_allowed;
		u->files_allowed = d.inodes_allowed;
		return 0;
	}
	sbx_error_free(err);
	return session_workspace_size(r, rec, &u->bytes, &u->files, err);
}

int reap_report(struct session_root *r, size_t top, struct reap_usage **v,
		size_t *n, char ***warnings, size_t *nwarnings,
		struct sbx_error **err)
{
	char **keys = NULL;
	size_t nkeys = 0, alloc = 0, walloc = 0;

	*v = NULL;
	*n = 0;
	*warnings = NULL;
	*nwarnings = 0;
	if (session_keys(r, &keys, &nkeys, err) < 0)
		return -1;
	for (size_t i = 0; i < nkeys; i++) {
		struct session_record rec;
		struct reap_usage u = {0};
		int rc;

		/* Without a record (one half made, or unreadable: said by
		 * the size's error if it matters), KEY/workspace. */
		if (session_record_read(r, keys[i], &rec, err) == 0) {
			u.tenant = xstrdup(rec.tenant);
		} else {
			sbx_error_free(err);
			memset(&rec, 0, sizeof(rec));
			snprintf(rec.key, sizeof(rec.key), "%s", keys[i]);
		}
		rc = report_size(r, &rec, &u, err);
		session_record_release(&rec);
		if (rc < 0) {
			if ((*err)->errnum != ENOENT) {
				ALLOC_GROW(*warnings, *nwarnings + 1, walloc);
				(*warnings)[(*nwarnings)++] =
				    xstrdup((*err)->msg);
			}
			sbx_error_free(err);
			free(u.tenant);
			continue;
		}
		sbx_error_free(err);
		u.key = xstrdup(keys[i]);
		ALLOC_GROW(*v, *n + 1, alloc);
		(*v)[(*n)++] = u;
	}
	strv_free(keys, nkeys);
	if (*n)
		qsort(*v, *n, sizeof(**v), usage_cmp);
	while (*n > top) {
		(*n)--;
		free((*v)[*n].key);
		free((*v)[*n].tenant);
	}
	return 0;
}

void reap_usage_free(struct reap_usage *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].key);
		free(v[i].tenant);
	}
	free(v);
}

/*
 * session-engine.c - a session's container: what it is made of, opening
 * it under the quota lock, inspecting, waking (unpausing), listing and
 * closing it (see session-engine.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/error.h"
#include "basic/size.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "catalog/catalog.h"
#include "catalog/deployment.h"
#include "engine/engine.h"
#include "exec/procs.h"
#include "session/session-budget.h"
#include "session/session-engine.h"

/* Where the idle program is looked for in an image, in order. */
static const char *const sleep_paths[] = {"/bin/sleep", "/usr/bin/sleep"};

char *session_container_name(const struct session_config *c, const char *key)
{
	return xasprintf("sbxcat-%s-%s", c->deployment, key);
}

const char *session_outcome_name(enum session_outcome o)
{
	switch (o) {
	case SESSION_CREATED:
		return "created";
	case SESSION_ADOPTED:
		return "adopted";
	case SESSION_RESTARTED:
		return "restarted";
	case SESSION_CLAIMED:
		return "claimed";
	case SESSION_WOKEN:
		return "woken";
	}
	return "?";
}

static unsigned long long mem_limit(const struct session_spec *s)
{
	unsigned long long bytes;
	cleanup_free char *why = NULL;

	/* The catalogue's check (the same parser) accepted it; a parse that
	 * still fails falls back to the service default, never no limit. */
	if (s->rt->mem_limit &&
	    !(why = size_parse(s->rt->mem_limit, &size_memory, &bytes)))
		return bytes;
	return s->cfg->mem_limit;
}

void session_container_spec(const struct session_spec *s,
			    struct engine_container_spec *out,
			    struct session_container_store *st)
{
	static const char *const cap_drop[] = {"ALL"};
	static const char *const security_opt[] = {"no-new-privileges"};
	static const char *const idle[] = {SESSION_IDLE_SECONDS};
	static const char *const pool_keys[] = {
	    DEPLOYMENT_LABEL, SESSION_LABEL_POOL, SESSION_LABEL_RUNTIME,
	    SESSION_LABEL_CREATED, SESSION_LABEL_WORK_DIR};
	static const char *const keys[] = {
	    DEPLOYMENT_LABEL,	   SESSION_LABEL_TENANT,
	    SESSION_LABEL_KEY,	   SESSION_LABEL_RUNTIME,
	    SESSION_LABEL_CREATED, SESSION_LABEL_WORK_DIR};
	unsigned long long mem = mem_limit(s);
	const char *wd = s->work_dir ? s->work_dir : s->cfg->work_dir;
	const char **values = st->label_values;
	size_t n = 0;

	memset(st, 0, sizeof(*st));
	st->user = s->uid ? xasprintf("%lu:%lu", s->uid, s->uid) : xstrdup("");
	st->tmpfs =
	    xasprintf(SESSION_TMPFS_OPTS ",uid=%lu,gid=%lu", s->uid, s->uid);
	st->env = xcalloc(s->rt->nenv + 1, sizeof(*st->env));
	for (size_t i = 0; i < s->rt->nenv; i++)
		st->env[st->nenv++] =
		    xasprintf("%s=%s", s->rt->env[i].name, s->rt->env[i].value);
	/* A work dir asked for at open is the sandbox's home too (E2B's
	 * /home/user): after the runtime's, so it wins over theirs. */
	if (s->work_dir)
		st->env[st->nenv++] = xasprintf("HOME=%s", s->work_dir);
	st->created = xasprintf("%lld", s->created);
	/* A pooled container is made before any key or tenant asks; its
	 * name (sbxcat-DEPLOYMENT-KEY once claimed) and sbxcat's record
	 * say whose it is. */
	values[n++] = s->cfg->deployment;
	if (s->pool_id) {
		values[n++] = s->pool_id;
	} else {
		values[n++] = s->tenant;
		values[n++] = s->key;
	}
	values[n++] = s->rt->alias;
	values[n++] = st->created;
	if (s->work_dir)
		values[n++] = s->work_dir;
	/* The workspace at the work dir, never at its host path: a
	 * sandbox learns nothing of ROOT or its key (session.h). */
	st->mount.source = s->workspace;
	st->mount.target = wd;
	*out = (struct engine_container_spec){
	    .image = s->image,
	    .user = st->user,
	    .working_dir = wd,
	    .entrypoint = &s->sleep,
	    .nentrypoint = 1,
	    .cmd = idle,
	    .ncmd = 1,
	    .env = (const char *const *)st->env,
	    .nenv = st->nenv,
	    .label_keys = s->pool_id ? pool_keys : keys,
	    .label_values = st->label_values,
	    .nlabels = n,
	    .mounts = &st->mount,
	    .nmounts = 1,
	    .tmpfs_path = "/tmp",
	    .tmpfs_opts = st->tmpfs,
	    .init = true,
	    .cap_drop = cap_drop,
	    .ncap_drop = 1,
	    .security_opt = security_opt,
	    .nsecurity_opt = 1,
	    .pids_limit = SESSION_PIDS_LIMIT,
	    .nano_cpus = SESSION_NANO_CPUS,
	    .memory = (long long)mem,
	    .memory_swap = (long long)mem,
	    .network_mode = s->rt->needs_network ? s->cfg->network : "none",
	    .stop_signal = "SIGKILL",
	};
}

void session_container_spec_release(struct session_container_store *st)
{
	free(st->user);
	free(st->tmpfs);
	free(st->created);
	strv_free(st->env, st->nenv);
	memset(st, 0, sizeof(*st));
}

static const char *label_of(const struct engine_labels *labels, const char *key)
{
	return engine_labels_get(labels, key);
}

const char *
session_container_work_dir(const struct engine_container_info *inspect)
{
	return label_of(&inspect->labels, SESSION_LABEL_WORK_DIR);
}

bool session_container_current(const struct session_config *c,
			       const struct engine_container_info *inspect)
{
	const char *wd = session_container_work_dir(inspect);

	if (!wd)
		wd = c->work_dir;
	for (size_t i = 0; i < inspect->nmounts; i++) {
		const char *d = inspect->mounts[i].destination;

		if (d && strcmp(d, wd) == 0)
			return true;
	}
	return false;
}

char *session_pool_container_name(const struct session_config *c,
				  const char *id)
{
	return xasprintf("sbxcat-%s-pool_%s", c->deployment, id);
}

bool session_container_key_of(const struct session_config *c,
			      const struct engine_labels *labels,
			      const char *name, char key[SESSION_KEY_MAX + 1])
{
	const char *dep = label_of(labels, DEPLOYMENT_LABEL);
	const char *k = label_of(labels, SESSION_LABEL_KEY);
	const char *pool = label_of(labels, SESSION_LABEL_POOL);
	size_t dl = strlen(c->deployment);

	key[0] = '\0';
	if (!dep || strcmp(dep, c->deployment) != 0 || !name)
		return false;
	name += *name == '/';
	/* sbxcat-DEPLOYMENT-KEY, whoever made it */
	if (strncmp(name, "sbxcat-", 7) != 0 ||
	    strncmp(name + 7, c->deployment, dl) != 0 || name[7 + dl] != '-')
		return false;
	name += 7 + dl + 1;
	if (!session_key_valid(name))
		return false; /* pool_ID, or not a name of sbxcat's */
	/* A cold open's container carries its key; a pooled one carries
	 * its pool's ID and is the key's by its name, given at the claim. */
	if ((k && strcmp(k, name) != 0) || (!k && !pool) ||
	    (pool && !session_pool_id_valid(pool)))
		return false;
	memcpy(key, name, strlen(name) + 1);
	return true;
}

/* Is this container ours: this deployment's session of key? */
static bool ours(const struct engine_labels *labels, const char *name,
		 const struct session_config *c, const char *key)
{
	char k[SESSION_KEY_MAX + 1];

	return session_container_key_of(c, labels, name, k) &&
	       strcmp(k, key) == 0;
}

const char *session_state_word(const char *s)
{
	static const char *const known[] = {"created", "running", "paused",
					    "restarting", "removing", "exited",
					    "dead"};

	for (size_t i = 0; s && i < sizeof(known) / sizeof(*known); i++)
		if (strcmp(s, known[i]) == 0)
			return known[i];
	return "unknown";
}

const char *session_state(const struct engine_container_info *inspect)
{
	if (!inspect)
		return "closed";
	return session_state_word(inspect->state.status);
}

int session_engine_inspect(struct engine *e, const struct session_config *c,
			   const char *key,
			   struct engine_container_info **inspect,
			   struct sbx_error **err)
{
	char *name = session_container_name(c, key);
	struct engine_container_info *j = xcalloc(1, sizeof(*j));
	int rc = engine_container_info_get(e, name, j, err);

	*inspect = NULL;
	if (rc < 0 && (*err)->http == 404) {
		sbx_error_free(err);
		free(name);
		free(j);
		return 0;
	}
	if (rc < 0) {
		free(j);
		j = NULL;
	}
	if (rc == 0 && !ours(&j->labels, j->name, c, key)) {
		engine_container_info_free(j);
		rc = sbx_error_set(err, SBX_E_CONFLICT, 0,
				   "a container named '%s' exists that is not "
				   "this deployment's session '%s'; sbxcat "
				   "leaves it alone",
				   name, key);
		sbx_error_hint(*err, "remove or rename that container");
	}
	free(name);
	if (rc == 0)
		*inspect = j;
	return rc;
}

/* One word for a container that is not running: "OOMKilled" when the
 * kernel killed it for memory, else its state ("exited", "dead"...). */
static const char *stopped_word(const struct engine_container_info *inspect)
{
	if (inspect->state.oom_killed)
		return "OOMKilled";
	return session_state(inspect);
}

static bool is_paused(const struct engine_container_info *inspect)
{
	return inspect->state.paused;
}

/* *inspect (the session's, or NULL when gone) running and not paused, or
 * session_engine_running's refusal (*inspect released then). */
static int check_running(const struct session_config *c, const char *key,
			 struct engine_container_info **inspect,
			 struct sbx_error **err)
{
	if (*inspect && !session_container_current(c, *inspect)) {
		/* Said as a container that is down, so the open, or the
		 * service's heal, makes it again (session_engine_adopt);
		 * a command there would start where the workspace is not. */
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' is not running at the work dir "
			      "(its container binds the workspace elsewhere)",
			      key);
		sbx_error_why(*err, SBX_R_NOT_RUNNING, 0, 0);
		sbx_error_hint(*err, "sbxcat session open makes its container "
				     "again; the files are kept");
		engine_container_info_free(*inspect);
		*inspect = NULL;
		return -1;
	}
	if (!*inspect) {
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' is not running (its container is "
			      "gone)",
			      key);
		sbx_error_why(*err, SBX_R_GONE, 0, 0);
		return -1;
	}
	if (strcmp(session_state(*inspect), "running") == 0 &&
	    !is_paused(*inspect))
		return 0;
	sbx_error_set(err, SBX_E_CONFLICT, 0, "session '%s' is not running (%s)",
		      key, stopped_word(*inspect));
	sbx_error_why(*err, SBX_R_NOT_RUNNING, 0, 0);
	sbx_error_hint(*err, "sbxcat session open starts it again");
	engine_container_info_free(*inspect);
	*inspect = NULL;
	return -1;
}

int session_engine_running_info(struct engine *e,
				const struct session_config *c, const char *key,
				struct engine_container_info **inspect,
				struct sbx_error **err)
{
	if (session_engine_inspect(e, c, key, inspect, err) < 0)
		return -1;
	return check_running(c, key, inspect, err);
}

/* The stamp that makes a reaper's pass that decided on the old one leave
 * the session alone.  One that cannot be written loses only that guard:
 * the operation's own stamps say the failure. */
static void wake_stamp(struct session_root *r, const char *key, bool *done)
{
	struct sbx_error *err = NULL;

	if (*done)
		return;
	*done = true;
	if (session_record_touch(r, key, &err) < 0)
		sbx_error_free(&err);
}

int session_engine_wake_info(struct engine *e, const struct session_config *c,
			     struct session_root *r,
			     const struct session_record *rec,
			     struct engine_container_info **inspect,
			     struct sbx_error **err)
{
	bool stamped = false;
	const char *id;

	long long idle = (long long)time(NULL) - rec->last_activity;

	/* Idle long enough to be paused, or hibernated: stamped before the
	 * look, so a pause (or a hibernation, which decides on the stamp
	 * under the same flock) is either done before it or not at all. */
	if ((c->pause_after && idle >= c->pause_after) ||
	    (c->evict_idle_after && idle >= c->evict_idle_after))
		wake_stamp(r, rec->key, &stamped);
	if (session_engine_inspect(e, c, rec->key, inspect, err) < 0)
		return -1;
	if (*inspect && is_paused(*inspect)) {
		wake_stamp(r, rec->key, &stamped);
		id = (*inspect)->id;
		if (engine_container_unpause(e, id ? id : "", err) < 0) {
			engine_container_info_free(*inspect);
			*inspect = NULL;
			return sbx_error_wrap(
			    err, "cannot unpause session '%s'", rec->key);
		}
		engine_container_info_free(*inspect);
		if (session_engine_inspect(e, c, rec->key, inspect, err) < 0)
			return -1;
	}
	return check_running(c, rec->key, inspect, err);
}

int session_engine_list(struct engine *e, const struct session_config *c,
			struct session_list *l, struct sbx_error **err)
{
	char *label = xasprintf("%s=%s", DEPLOYMENT_LABEL,
				c->deployment);
	const char *labels[] = {label};
	int rc =
	    engine_container_list_info(e, labels, 1, &l->all, &l->nall, err);

	free(label);
	l->v = NULL;
	l->n = 0;
	if (rc < 0)
		return rc;
	l->v = xcalloc(l->nall ? l->nall : 1, sizeof(*l->v));
	for (size_t i = 0; i < l->nall; i++) {
		struct session_list_entry *x = &l->v[l->n];

		if (session_container_key_of(c, &l->all[i].labels,
					     l->all[i].name, x->key)) {
			x->sum = &l->all[i];
			l->n++;
		}
	}
	return 0;
}

const struct engine_container_summary *
session_list_find(const struct session_list *l, const char *key)
{
	/* The last of a key's, as a later one took its place before. */
	for (size_t i = l->n; i-- > 0;)
		if (strcmp(l->v[i].key, key) == 0)
			return l->v[i].sum;
	return NULL;
}

void session_list_release(struct session_list *l)
{
	engine_container_summaries_free(l->all, l->nall);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

bool session_state_live(const char *state)
{
	return state && (strcmp(state, "running") == 0 ||
			 strcmp(state, "paused") == 0 ||
			 strcmp(state, "restarting") == 0);
}

/* The state of key's container in l, or NULL. */
static const char *state_in(const struct session_list *l, const char *key)
{
	const struct engine_container_summary *sum = session_list_find(l, key);

	return sum ? sum->state : NULL;
}

/* Is key's container live in l (session_engine_list)? */
static bool live_in(const struct session_list *l, const char *key)
{
	return session_state_live(state_in(l, key));
}

/* Is key's container exited in by_key, and the session marked: is it
 * hibernated? */
static bool asleep_in(struct session_root *r, const struct session_list *l,
		      const char *key)
{
	const char *st = state_in(l, key);

	return st && strcmp(st, "exited") == 0 &&
	       session_hibernated(r, key, NULL, NULL) > 0;
}

/* Count the sessions of the records under r whose container is live,
 * all and tenant's, but key's; their keys into *seen; the hibernated
 * ones into *asleep. */
static int count_records(struct session_root *r,
			 const struct session_list *by_key, const char *key,
			 const char *tenant, const char *kept_of, unsigned *all,
			 unsigned *mine, unsigned *asleep, unsigned *kept,
			 json_t *seen, struct sbx_error **err)
{
	char **keys = NULL;
	size_t n = 0;

	if (session_keys(r, &keys, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct session_record rec;
		struct sbx_error *e2 = NULL;

		if (strcmp(keys[i], key) == 0)
			continue;
		if (!live_in(by_key, keys[i])) {
			bool a = asleep_in(r, by_key, keys[i]);

			*asleep += a;
			/* Closed, its workspace kept with its budget. */
			*kept += kept_of && !a &&
				 session_budget_kept_by(r, keys[i], kept_of);
			continue;
		}
		/* A live container whose record cannot be read is the
		 * reaper's to judge; it is not a session of anyone's. */
		if (session_record_read(r, keys[i], &rec, &e2) < 0) {
			sbx_error_free(&e2);
			continue;
		}
		(*all)++;
		*mine += tenant && strcmp(rec.tenant, tenant) == 0;
		json_object_set_new(seen, keys[i], json_true());
		session_record_release(&rec);
	}
	strv_free(keys, n);
	return 0;
}

int session_quota_count(struct engine *e, struct session_root *r,
			const struct session_config *c, const char *key,
			const char *tenant, const char *kept_of,
			struct session_count *n, struct sbx_error **err)
{
	struct session_held *held = NULL;
	struct session_pool_entry *pool = NULL;
	size_t nheld = 0, npool = 0;
	struct session_list by_key = {0};
	json_t *seen = json_object();
	int rc = -1;

	memset(n, 0, sizeof(*n));
	/* The reservations first: an open that ends meanwhile (its
	 * container made, its record written, then its reservation
	 * removed) is then in the list of live containers taken after.
	 * Listed after them, it could be in neither, and an open racing
	 * it would get its slot. */
	if (session_reservations(r, &held, &nheld, err) < 0 ||
	    session_engine_list(e, c, &by_key, err) < 0 ||
	    count_records(r, &by_key, key, tenant, kept_of, &n->all, &n->mine,
			  &n->hibernated, &n->kept, seen, err) < 0 ||
	    session_pool_list(r, &pool, &npool, err) < 0)
		goto out;
	n->open = n->all; /* the live records */
	for (size_t i = 0; i < nheld; i++) {
		if (strcmp(held[i].key, key) == 0 ||
		    json_object_get(seen, held[i].key))
			continue;
		n->all++;
		n->open += held[i].tenant != NULL; /* not a fill of the pool */
		n->mine += tenant && held[i].tenant &&
			   strcmp(held[i].tenant, tenant) == 0;
	}
	n->open += n->hibernated;
	n->pooled = (unsigned)npool;
	n->all += n->pooled;
	rc = 0;
out:
	session_pool_list_free(pool, npool);
	session_held_free(held, nheld);
	session_list_release(&by_key);
	json_decref(seen);
	return rc;
}

int session_quota_refuse(const struct session_config *c, const char *tenant,
			 const struct session_count *n, struct sbx_error **err)
{
	if (tenant && n->mine >= c->max_per_tenant) {
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "tenant '%s' already holds %u of %u "
			      "sessions; close one first",
			      tenant, n->mine, c->max_per_tenant);
		sbx_error_why(*err, SBX_R_TENANT_QUOTA, n->mine,
			      c->max_per_tenant);
		return -1;
	}
	if (n->all >= c->max_sessions) {
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "the host holds its ceiling of %u sessions",
			      c->max_sessions);
		sbx_error_why(*err, SBX_R_HOST_QUOTA, n->all, c->max_sessions);
		return -1;
	}
	return 0;
}

int session_open_refuse(const struct session_config *c,
			const struct session_count *n, struct sbx_error **err)
{
	if (!c->max_open || n->open < c->max_open)
		return 0;
	sbx_error_set(err, SBX_E_REFUSED, 0,
		      "the host holds its ceiling of %u open sessions and "
		      "all of them are in use; close one first",
		      c->max_open);
	sbx_error_why(*err, SBX_R_OPEN_QUOTA, n->open, c->max_open);
	return -1;
}

/* Why a container is not running, from its inspect: "OOMKilled",
 * "exited, exit status 1", the engine's error. */
static char *not_running_why(const struct engine_container_info *inspect)
{
	const char *error = inspect->state.error;
	struct strbuf sb = STRBUF_INIT;

	if (inspect->state.oom_killed)
		return xstrdup(stopped_word(inspect));
	strbuf_addf(&sb, "%s, exit status %lld", stopped_word(inspect),
		    inspect->state.exit_code);
	if (error && *error) {
		strbuf_addstr(&sb, ": ");
		text_add_escaped(&sb, error, strlen(error));
	}
	return strbuf_detach(&sb, NULL);
}

/* Start id and make sure its idle process stays up. */
static int start_checked(struct engine *e, const char *id,
			 struct sbx_error **err)
{
	struct engine_container_info j;
	const char *state;

	if (engine_container_start(e, id, err) < 0)
		return -1;
	if (engine_container_info_get(e, id, &j, err) < 0)
		return -1;
	state = session_state(&j);
	if (strcmp(state, "running") != 0) {
		char *why = not_running_why(&j);
		engine_container_info_release(&j);
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "the session's container stopped at once (%s)",
			      why);
		free(why);
		return -1;
	}
	engine_container_info_release(&j);
	return 0;
}

/* Create the container, finding the image's sleep first. */
static int create_new(struct engine *e, struct session_spec *s, char **id,
		      struct sbx_error **err)
{
	char *name = s->pool_id
			 ? session_pool_container_name(s->cfg, s->pool_id)
			 : session_container_name(s->cfg, s->key);
	struct sbx_error *e2 = NULL;
	int rc = -1;

	for (size_t i = 0; i < sizeof(sleep_paths) / sizeof(sleep_paths[0]); i++) {
		bool exists = false;
		struct engine_container_spec spec;
		struct session_container_store store;

		s->sleep = sleep_paths[i];
		session_container_spec(s, &spec, &store);
		rc = engine_container_create_spec(e, name, &spec, id, err);
		session_container_spec_release(&store);
		if (rc < 0)
			break;
		rc = engine_container_stat(e, *id, s->sleep, &exists, NULL,
					   NULL, err);
		if (rc == 0 && exists)
			break;
		/* Not this one: remove the container, try the next. */
		engine_container_remove(e, *id, true, NULL, &e2);
		sbx_error_free(&e2);
		free(*id);
		*id = NULL;
		if (rc < 0)
			break;
		rc = -1;
	}
	if (rc < 0 && !*err)
		sbx_error_set(err, SBX_E_BAD_DATA, 0,
			      "image '%s' has no /bin/sleep or /usr/bin/sleep "
			      "for the session's idle process",
			      s->image);
	if (rc < 0 && (*err)->hint == NULL && (*err)->http == 0 &&
	    (*err)->kind == SBX_E_BAD_DATA)
		sbx_error_hint(*err, "use an image that has a sleep program, "
				     "or build the runtime from a base_image");
	free(name);
	return rc;
}

int session_engine_adopt(struct engine *e, struct session_spec *s,
			 enum session_outcome *outcome, char **id,
			 bool *adopted, struct sbx_error **err)
{
	struct engine_container_info *j = NULL;
	const char *state, *rt, *img;

	*id = NULL;
	*adopted = false;
	if (session_engine_inspect(e, s->cfg, s->key, &j, err) < 0)
		return -1;
	if (!j)
		return 0;
	rt = label_of(&j->labels, SESSION_LABEL_RUNTIME);
	img = j->image;
	if (!rt || strcmp(rt, s->rt->alias) != 0) {
		struct strbuf sb = STRBUF_INIT;
		text_add_escaped(&sb, rt ? rt : "?", strlen(rt ? rt : "?"));
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' runs runtime '%s', not '%s'",
			      s->key, strbuf_str(&sb), s->rt->alias);
		sbx_error_hint(*err, "close it first to open it with "
				     "another runtime");
		strbuf_release(&sb);
		engine_container_info_free(j);
		return -1;
	}
	*id = xstrdup(j->id ? j->id : "");
	state = session_state(j);
	if (!session_container_current(s->cfg, j) ||
	    !session_work_dir_same(session_container_work_dir(j), s->work_dir))
		/* An older sbxcat's (the workspace at its host path) or
		 * another work dir's: removed below, and a new one made as
		 * for a session without one (its slot counted again); the
		 * files are the host's, so nothing is lost. */
		state = "dead";
	/* A stopped container keeps the image it was made from. */
	free(s->image_used);
	s->image_used = xstrdup(img ? img : s->image);
	if (strcmp(state, "running") == 0 || strcmp(state, "restarting") == 0 ||
	    strcmp(state, "paused") == 0) {
		bool paused = strcmp(state, "paused") == 0;

		engine_container_info_free(j);
		*outcome = SESSION_ADOPTED;
		*adopted = true;
		return paused ? engine_container_unpause(e, *id, err) : 0;
	}
	if (strcmp(state, "exited") == 0 || strcmp(state, "created") == 0) {
		engine_container_info_free(j);
		return 0; /* to start again: session_engine_launch */
	}
	/* dead, removing, or not current: nothing to start; a new one is
	 * made. */
	engine_container_info_free(j);
	free(s->image_used);
	s->image_used = NULL;
	if (engine_container_remove(e, *id, true, NULL, err) < 0)
		return -1;
	free(*id);
	*id = NULL;
	return 0;
}

int session_engine_launch(struct engine *e, struct session_spec *s,
			  enum session_outcome *outcome, char **id,
			  struct sbx_error **err)
{
	struct sbx_error *e2 = NULL;
	bool adopted;
	int rc;

	if (*id) {
		*outcome = SESSION_RESTARTED;
		return start_checked(e, *id, err);
	}
	*outcome = SESSION_CREATED;
	rc = create_new(e, s, id, err);
	if (rc < 0 && *err && (*err)->http == 409) {
		/* Made meanwhile by an sbxcat on another root sharing this
		 * engine: adopt it if it is ours (inspect refuses if not).
		 * Once: a name the engine holds while it removes the
		 * container answers 409 to create and 404 to inspect. */
		sbx_error_free(err);
		if (session_engine_adopt(e, s, outcome, id, &adopted, err) < 0)
			return -1;
		if (adopted)
			return 0;
		if (!*id)
			return sbx_error_set(err, SBX_E_CONFLICT, 0,
					     "the container of session '%s' "
					     "is being removed; try again",
					     s->key);
		*outcome = SESSION_RESTARTED;
		return start_checked(e, *id, err);
	}
	if (rc == 0 && start_checked(e, *id, err) < 0) {
		engine_container_remove(e, *id, true, NULL, &e2);
		sbx_error_free(&e2);
		free(*id);
		*id = NULL;
		rc = -1;
	}
	return rc;
}

int session_engine_pool_make(struct engine *e, struct session_spec *s,
			     char **id, struct sbx_error **err)
{
	struct sbx_error *e2 = NULL;

	*id = NULL;
	if (create_new(e, s, id, err) < 0)
		return -1;
	if (start_checked(e, *id, err) == 0)
		return 0;
	engine_container_remove(e, *id, true, NULL, &e2);
	sbx_error_free(&e2);
	free(*id);
	*id = NULL;
	return -1;
}

int session_engine_claim(struct engine *e, const struct session_config *c,
			 const char *id, const char *pool_id,
			 const char *work_dir, const char *key,
			 struct sbx_error **err)
{
	cleanup_free char *name = session_container_name(c, key);
	struct engine_container_info ci, *j = &ci;
	const char *got, *state;
	int rc;

	if (engine_container_info_get(e, id, j, err) < 0)
		return -1;
	got = label_of(&j->labels, SESSION_LABEL_POOL);
	state = session_state(j);
	rc = 0;
	/* One an older sbxcat made binds its workspace elsewhere: not
	 * taken (its caller discards it and opens cold). */
	if (!got || strcmp(got, pool_id) != 0 ||
	    !session_container_current(c, j) ||
	    !session_work_dir_same(session_container_work_dir(j), work_dir) ||
	    strcmp(state, "running") != 0 || j->state.paused)
		rc = sbx_error_set(err, SBX_E_CONFLICT, 0,
				   "pooled container %.12s is not pool %s's, "
				   "running at the work dir",
				   id, pool_id);
	engine_container_info_release(j);
	if (rc == 0)
		rc = engine_container_rename(e, id, name, err);
	return rc;
}

int session_engine_stop(struct engine *e, const char *id, const char *state,
			struct sbx_error **err)
{
	/* A paused container's processes cannot take the SIGTERM. */
	if (strcmp(state, "paused") == 0 &&
	    engine_container_unpause(e, id, err) < 0)
		return -1;
	return engine_container_stop(e, id, SESSION_STOP_SECONDS, err);
}

int session_engine_busy(struct engine *e, const char *id, long long now,
			long long exec_timeout_s, struct sbx_error **err)
{
	struct engine_container_info j;
	long long pid;
	size_t busy = 0, stopped = 0;
	int rc = 0;

	if (engine_container_info_get(e, id, &j, err) < 0)
		return -1;
	pid = j.state.pid;
	engine_container_info_release(&j);
	if (pid > 0 && pid < (1 << 30))
		rc = procs_groups_expire((pid_t)pid, now, exec_timeout_s,
					 SESSION_STOP_GIVE_UP_MS, &busy,
					 &stopped, err);
	return rc < 0 ? -1 : busy > 0;
}

int session_engine_close(struct engine *e, const struct session_config *c,
			 const char *key, bool stop_only, const char **what,
			 struct sbx_error **err)
{
	struct engine_container_info *j = NULL;
	const char *id, *state;
	bool gone = false;
	int rc;

	if (session_engine_inspect(e, c, key, &j, err) < 0)
		return -1;
	*what = "gone";
	if (!j)
		return 0;
	id = j->id ? j->id : "";
	state = session_state(j);
	if (stop_only && (session_state_live(state) ||
			  strcmp(state, "exited") == 0)) {
		rc = session_engine_stop(e, id, state, err);
		*what = "stopped";
	} else {
		rc = engine_container_remove(e, id, true, &gone, err);
		*what = gone ? "gone" : "removed";
	}
	engine_container_info_free(j);
	return rc;
}

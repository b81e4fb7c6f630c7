/*
 * svc-pool.c - the warm pool as an operation (svc-pool.h): the pool
 * tidied (entries of tags no longer current drained, containers and
 * workspaces nobody holds removed) and filled to what SBXCAT_WARM_POOL
 * asks, one container at a time, each counted and reserved under the
 * quota lock like an open and made outside it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/xjson.h"
#include "catalog/catalog.h"
#include "catalog/deployment.h"
#include "catalog/recipe.h"
#include "engine/engine.h"
#include "session/session-budget.h"
#include "session/session-engine.h"
#include "session/session.h"
#include "svc/svc-pool.h"

static void warn_free(const struct svc_call *call, struct sbx_error **err)
{
	if (*err)
		svc_warn(call, "pool: %s", (*err)->msg);
	sbx_error_free(err);
}

/* The tag rt's pooled containers must run now: its content tag, or its
 * image. */
static char *current_tag(const struct svc *s, const struct runtime *rt)
{
	return recipe_tag(rt, &s->cfg.recipe);
}

/* Is e's runtime and work dir one the pool keeps, of the tag it has
 * now? */
static bool entry_current(const struct svc *s, const struct catalog *cat,
			  const struct session_pool_entry *e)
{
	const struct session_config *c = &s->cfg.session;
	const struct runtime *rt = cat ? catalog_find(cat, e->runtime) : NULL;
	bool wanted = false;
	char *tag;

	for (size_t i = 0; i < c->npool; i++)
		wanted |=
		    strcmp(c->pool[i].alias, e->runtime) == 0 &&
		    session_work_dir_same(c->pool[i].work_dir, e->work_dir) &&
		    c->pool[i].count > 0;
	if (!rt || !wanted)
		return false;
	tag = current_tag(s, rt);
	wanted = strcmp(tag, e->image) == 0;
	free(tag);
	return wanted;
}

/* Under the quota lock: the entries no longer current taken out of the
 * pool into *old. */
static int take_stale(const struct svc *s, const struct catalog *cat,
		      struct session_root *root,
		      struct session_pool_entry **old, size_t *nold,
		      struct sbx_error **err)
{
	struct session_pool_entry *v = NULL;
	size_t n = 0, alloc = 0;

	*old = NULL;
	*nold = 0;
	if (session_pool_list(root, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (entry_current(s, cat, &v[i]))
			continue;
		if (session_pool_drop(root, v[i].id, err) < 0)
			break;
		ALLOC_GROW(*old, *nold + 1, alloc);
		(*old)[(*nold)++] = v[i];
		memset(&v[i], 0, sizeof(v[i]));
	}
	session_pool_list_free(v, n);
	return *err ? -1 : 0;
}

/* Is id named by an entry, a reservation held, or a record? */
static bool id_held(const char *id, const struct session_pool_entry *v,
		    size_t n, const struct session_held *h, size_t nh,
		    json_t *named)
{
	char fill[SESSION_KEY_MAX + 1];

	snprintf(fill, sizeof(fill), "pool-%s", id);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].id, id) == 0)
			return true;
	for (size_t i = 0; i < nh; i++)
		if (strcmp(h[i].pool, id) == 0 || strcmp(h[i].key, fill) == 0)
			return true;
	return json_object_get(named, id) != NULL;
}

/* The pooled workspaces the records name: {ID: true}. */
static json_t *named_by_records(struct session_root *root)
{
	json_t *named = json_object();
	struct sbx_error *err = NULL;
	char **keys = NULL;
	size_t n = 0;

	if (session_keys(root, &keys, &n, &err) < 0) {
		sbx_error_free(&err);
		return named;
	}
	for (size_t i = 0; i < n; i++) {
		struct session_record rec;

		if (session_record_read(root, keys[i], &rec, &err) == 0 &&
		    session_workspace_pooled(&rec))
			json_object_set_new(
			    named, strchr(rec.workspace, '/') + 1, json_true());
		sbx_error_free(&err);
		session_record_release(&rec);
	}
	strv_free(keys, n);
	return named;
}

/* A pooled container not claimed: "sbxcat-DEPLOYMENT-pool_ID", labelled
 * with that ID; its ID, or NULL. */
static const char *unclaimed_id(const struct session_config *c,
				const struct engine_container_summary *sum)
{
	const char *id = engine_labels_get(&sum->labels, SESSION_LABEL_POOL);
	const char *dep = engine_labels_get(&sum->labels, DEPLOYMENT_LABEL);
	const char *name = sum->name;
	char *want;
	bool is;

	if (!id || !dep || !name || strcmp(dep, c->deployment) != 0 ||
	    !session_pool_id_valid(id))
		return NULL;
	want = session_pool_container_name(c, id);
	is = strcmp(name + (*name == '/'), want) == 0;
	free(want);
	return is ? id : NULL;
}

/*
 * Under the quota lock: the pool's containers and workspaces that nobody
 * holds (no entry, no reservation, no record), older than the grace, into
 * ctrs and ids to remove after.  A fill or a claim in progress holds a
 * reservation naming its ID; a crash between leaves them for this.
 */
static int find_strays(const struct svc *s, struct engine *e,
		       struct session_root *root, long long now, char ***ctrs,
		       size_t *nctrs, char ***ids, size_t *nids,
		       struct sbx_error **err)
{
	const struct session_config *c = &s->cfg.session;
	struct session_pool_entry *v = NULL;
	struct session_held *h = NULL;
	size_t n = 0, nh = 0, nws = 0, ac = 0, ai = 0, i;
	char *label = xasprintf("%s=%s", DEPLOYMENT_LABEL, c->deployment);
	const char *labels[] = {label};
	struct engine_container_summary *list = NULL;
	size_t nlist = 0;
	json_t *named = NULL;
	char **ws = NULL;
	int rc = -1;

	*ctrs = *ids = NULL;
	*nctrs = *nids = 0;
	if (session_pool_list(root, &v, &n, err) < 0 ||
	    session_reservations(root, &h, &nh, err) < 0 ||
	    session_pool_ws_ids(root, &ws, &nws, err) < 0 ||
	    engine_container_list_info(e, labels, 1, &list, &nlist, err) < 0)
		goto out;
	named = named_by_records(root);
	for (i = 0; i < nlist; i++) {
		const char *id = unclaimed_id(c, &list[i]);
		long long created = list[i].created;

		if (!id || now - created <= SVC_POOL_GRACE ||
		    id_held(id, v, n, h, nh, named))
			continue;
		ALLOC_GROW(*ctrs, *nctrs + 1, ac);
		(*ctrs)[(*nctrs)++] = xstrdup(list[i].id ? list[i].id : "");
	}
	for (i = 0; i < nws; i++) {
		struct stat st;
		char *p = xasprintf("%s/.sbxcat-ws/%s", root->path, ws[i]);
		bool young = lstat(p, &st) == 0 &&
			     now - (long long)st.st_mtime <= SVC_POOL_GRACE;

		free(p);
		if (young || id_held(ws[i], v, n, h, nh, named))
			continue;
		ALLOC_GROW(*ids, *nids + 1, ai);
		(*ids)[(*nids)++] = xstrdup(ws[i]);
	}
	rc = 0;
out:
	free(label);
	engine_container_summaries_free(list, nlist);
	json_decref(named);
	strv_free(ws, nws);
	session_held_free(h, nh);
	session_pool_list_free(v, n);
	return rc;
}

/* Drain and sweep: under the lock the decisions, outside it the removals. */
static int tidy(const struct svc *s, const struct svc_call *call,
		const struct catalog *cat, struct engine *e,
		struct session_root *root, struct svc_pool_res *res,
		struct sbx_error **err)
{
	struct session_pool_entry *old = NULL;
	size_t nold = 0, nctrs = 0, nids = 0;
	char **ctrs = NULL, **ids = NULL;
	struct sbx_error *e2 = NULL;
	int rc;

	if (session_lock(root, err) < 0)
		return -1;
	rc = take_stale(s, cat, root, &old, &nold, err);
	if (rc == 0)
		rc = find_strays(s, e, root, (long long)time(NULL), &ctrs,
				 &nctrs, &ids, &nids, err);
	session_unlock(root);
	for (size_t i = 0; i < nold; i++) {
		if (engine_container_remove(e, old[i].container, true, NULL,
					    &e2) < 0 ||
		    session_pool_ws_remove(root, old[i].id, &e2) < 0)
			warn_free(call, &e2);
		res->drained++;
	}
	for (size_t i = 0; i < nctrs; i++) {
		if (engine_container_remove(e, ctrs[i], true, NULL, &e2) < 0)
			warn_free(call, &e2);
		res->swept++;
	}
	for (size_t i = 0; i < nids; i++) {
		if (session_pool_ws_remove(root, ids[i], &e2) < 0)
			warn_free(call, &e2);
		res->swept++;
	}
	session_pool_list_free(old, nold);
	strv_free(ctrs, nctrs);
	strv_free(ids, nids);
	return rc;
}

/* How many entries rt has now for work_dir. */
static unsigned have(struct session_root *root, const char *alias,
		     const char *work_dir, struct sbx_error **err)
{
	struct session_pool_entry *v = NULL;
	size_t n = 0;
	unsigned k = 0;

	if (session_pool_list(root, &v, &n, err) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		k += strcmp(v[i].runtime, alias) == 0 &&
		     session_work_dir_same(v[i].work_dir, work_dir);
	session_pool_list_free(v, n);
	return k;
}

/* Without e: the pooled workspace ID given the configured disk budget
 * (none when none is: session-budget.h), before its container is made.
 * With e: its container seen to see it (session_budget_seen). */
static int pool_budget(const struct svc *s, struct engine *e,
		       struct session_root *root, const char *id,
		       const char *container, unsigned long uid,
		       const char *work_dir, struct sbx_error **err)
{
	const struct session_config *c = &s->cfg.session;
	struct session_budget b = {c->disk_quota, c->disk_inodes};
	struct session_record rec = {0};
	cleanup_free char *rel = xasprintf(".sbxcat-ws/%s", id);
	bool made, unbudgeted;

	if (!b.bytes)
		return 0;
	snprintf(rec.key, sizeof(rec.key), "pool-%s", id);
	rec.workspace = rel;
	if (!e)
		return session_budget_make(root, &rec, &b, c->mkfs, uid, &made,
					   &unbudgeted, err);
	return session_budget_seen(e, root, &rec, container,
				   work_dir ? work_dir : c->work_dir, err);
}

/*
 * One container for rt's pool: counted and reserved ("pool-ID", no
 * tenant) under the lock, made outside it, its entry written last.  1
 * made; 0 no room (the host's ceiling); -1 an error.
 */
static int make_one(const struct svc *s, const struct svc_call *call,
		    struct engine *e, struct session_root *root,
		    const struct runtime *rt, const char *image,
		    const char *work_dir, struct sbx_error **err)
{
	struct session_pool_entry ent = {0};
	struct session_reservation slot;
	struct session_spec spec = {0};
	struct session_count n;
	char key[SESSION_KEY_MAX + 1];
	char *ws = NULL;
	int rc;

	session_reservation_init(&slot);
	session_pool_new_id(ent.id);
	snprintf(key, sizeof(key), "pool-%s", ent.id);
	if (session_lock(root, err) < 0)
		return -1;
	rc = session_quota_count(e, root, &s->cfg.session, key, NULL, NULL,
				 &n, err);
	if (rc == 0 && n.all >= s->cfg.session.max_sessions)
		rc = 1;
	if (rc == 0)
		rc = session_reserve(root, key, NULL, ent.id, &slot, err);
	session_unlock(root);
	if (rc)
		return rc > 0 ? 0 : -1;
	ws = xasprintf("%s/.sbxcat-ws/%s", root->path, ent.id);
	spec.cfg = &s->cfg.session;
	spec.rt = rt;
	spec.image = image;
	spec.pool_id = ent.id;
	spec.workspace = ws;
	spec.work_dir = work_dir;
	spec.uid = s->cfg.recipe.sandbox_uid;
	spec.created = (long long)time(NULL);
	rc = session_pool_ws_make(root, spec.uid, ent.id, err);
	if (rc == 0)
		rc = pool_budget(s, NULL, root, ent.id, NULL, spec.uid,
				 work_dir, err);
	if (rc == 0)
		rc = session_engine_pool_make(e, &spec, &ent.container, err);
	if (rc == 0)
		rc = pool_budget(s, e, root, ent.id, ent.container, spec.uid,
				 work_dir, err);
	if (rc == 0) {
		ent.runtime = xstrdup(rt->alias);
		ent.image = xstrdup(image);
		ent.work_dir = work_dir ? xstrdup(work_dir) : NULL;
		ent.created = spec.created;
		rc = session_pool_add(root, &ent, err);
	}
	if (rc < 0) {
		struct sbx_error *e2 = NULL;

		if (ent.container)
			engine_container_remove(e, ent.container, true, NULL,
						&e2);
		sbx_error_free(&e2);
		session_pool_ws_remove(root, ent.id, &e2);
		sbx_error_free(&e2);
	}
	session_reserve_release(&slot);
	session_pool_entry_release(&ent);
	free(ws);
	(void)call;
	return rc < 0 ? -1 : 1;
}

/* Fill rt's pool for want->work_dir to want->count; the image must be
 * in the engine already (the pool never builds: that is prewarm's). */
static int fill_one(const struct svc *s, const struct svc_call *call,
		    struct engine *e, struct session_root *root,
		    const struct runtime *rt,
		    const struct session_pool_want *want,
		    struct svc_pool_res *res, struct sbx_error **err)
{
	char *image = current_tag(s, rt);
	bool present = false;
	int rc = engine_image_inspect(e, image, &present, NULL, err);
	unsigned k = rc == 0 ? have(root, rt->alias, want->work_dir, err) : 0;

	if (rc == 0 && !*err && !present) {
		svc_warn(call,
			 "pool: runtime '%s' has no image %s yet (sbxcat "
			 "prewarm builds it); its pool stays empty",
			 rt->alias, image);
		res->missing++;
	}
	while (rc == 0 && !*err && present && k < want->count) {
		rc = make_one(s, call, e, root, rt, image, want->work_dir, err);
		if (rc <= 0) {
			res->full |= rc == 0;
			break;
		}
		res->made++;
		k++;
		rc = 0;
	}
	free(image);
	return *err ? -1 : 0;
}

int svc_pool_fill(const struct svc *s, const struct svc_call *call,
		  const struct catalog *cat, struct svc_pool_res *res,
		  struct sbx_error **err)
{
	const struct session_config *c = &s->cfg.session;
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (svc_root_open(s, call, &root, err) < 0 ||
	    svc_engine_open(s, call, &engine, err) < 0 ||
	    tidy(s, call, cat, &engine, &root, res, err) < 0)
		goto out;
	rc = 0;
	for (size_t i = 0; rc == 0 && cat && i < c->npool && !res->full; i++) {
		const struct runtime *rt = catalog_find(cat, c->pool[i].alias);

		if (!rt) {
			svc_warn(call,
				 "pool: SBXCAT_WARM_POOL names '%s', which "
				 "is not in the catalogue",
				 c->pool[i].alias);
			continue;
		}
		rc = fill_one(s, call, &engine, &root, rt, &c->pool[i], res,
			      err);
	}
out:
	svc_engine_close(s, &engine);
	session_root_close(&root);
	return rc;
}

int svc_pool_ready(const struct svc *s, const struct svc_call *call,
		   json_t **by_runtime, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct session_pool_entry *v = NULL;
	size_t n = 0;
	int rc = -1;

	*by_runtime = NULL;
	if (svc_root_open(s, call, &root, err) < 0 ||
	    session_pool_list(&root, &v, &n, err) < 0)
		goto out;
	*by_runtime = json_object();
	for (size_t i = 0; i < n; i++) {
		json_int_t k = json_integer_value(
		    json_object_get(*by_runtime, v[i].runtime));
		json_object_set_new(*by_runtime, v[i].runtime,
				    json_integer(k + 1));
	}
	rc = 0;
out:
	session_pool_list_free(v, n);
	session_root_close(&root);
	return rc;
}

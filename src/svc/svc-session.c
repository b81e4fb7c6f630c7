/*
 * svc-session.c - sessions as operations (svc-session.h): the recorder,
 * the root, the lock and the engine around session/ (the host side:
 * keys, records, workspaces) and session-engine.c (the container), and
 * the rows of open and close.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/text.h"
#include "basic/xjson.h"
#include "catalog/catalog.h"
#include "catalog/recipe.h"
#include "engine/engine.h"
#include "exec/procs.h"
#include "session/session-budget.h"
#include "session/session-wire.h"
#include "svc/svc-fleet-host.h"
#include "svc/svc-int.h"
#include "svc/svc-session.h"
#include "svc/svc-wire.h"

/* ---- open ---- */

const char *svc_session_open_check(const char *tenant,
				   const struct svc_session_open_req *req,
				   const char **value, const char **why)
{
	const struct {
		const char *name, *value;
		const char *(*check)(const char *);
	} f[] = {
	    {"tenant", tenant, session_check_tenant},
	    {"scope", req->scope, session_check_scope},
	    {"subject", req->subject, session_check_subject},
	    {"host", req->host ? req->host : "", session_check_host},
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		*value = f[i].value;
		*why = f[i].value ? f[i].check(f[i].value) : NULL;
		if (!f[i].value || *why)
			return f[i].name;
	}
	*value = req->work_dir;
	*why = req->work_dir ? session_check_work_dir(req->work_dir) : NULL;
	if (*why)
		return "work_dir";
	*value = *why = NULL;
	return NULL;
}

const char *svc_session_work_dir(const struct svc *s,
				 const struct session_record *rec)
{
	return session_work_dir(&s->cfg.session, rec);
}

/* The work dir an open asks for as the record keeps it: NULL for the
 * configuration's. */
static const char *open_work_dir(const struct svc *s,
				 const struct svc_session_open_req *req)
{
	if (!req->work_dir ||
	    strcmp(req->work_dir, s->cfg.session.work_dir) == 0)
		return NULL;
	return req->work_dir;
}

/* The fields, checked: invalid, naming the field. */
static int check_fields(const char *tenant,
			const struct svc_session_open_req *req,
			struct sbx_error **err)
{
	const char *value, *why;
	const char *field = svc_session_open_check(tenant, req, &value, &why);
	struct strbuf sb = STRBUF_INIT;

	if (!field)
		return 0;
	if (!why)
		return sbx_error_set(err, SBX_E_INVALID, 0, "%s is required",
				     field);
	text_add_escaped(&sb, value, strlen(value));
	sbx_error_set(err, SBX_E_INVALID, 0, "%s '%s': %s", field,
		      strbuf_str(&sb), why);
	strbuf_release(&sb);
	return -1;
}

/* What an open asks to keep in the record: its labels and durability,
 * checked (open_kept_parse). */
struct open_kept {
	struct session_labels labels;
	bool labels_set, durability_set;
	enum session_durability durability;
};

static int open_kept_parse(const struct svc_session_open_req *req,
			   struct open_kept *k, struct sbx_error **err)
{
	memset(k, 0, sizeof(*k));
	if (req->durability) {
		k->durability_set = true;
		if (session_durability_parse(req->durability, &k->durability) <
		    0) {
			struct strbuf sb = STRBUF_INIT;

			text_add_escaped(&sb, req->durability,
					 strlen(req->durability));
			sbx_error_set(err, SBX_E_INVALID, 0,
				      "durability '%s' is neither ephemeral "
				      "nor persistent",
				      strbuf_str(&sb));
			strbuf_release(&sb);
			return -1;
		}
	}
	for (size_t i = 0; i < req->nlabels && !*err; i++)
		session_labels_parse(&k->labels, req->labels[i], err);
	if (!*err)
		session_labels_from_json(&k->labels, req->labels_json, err);
	if (*err) {
		sbx_error_why(*err, SBX_R_BAD_LABELS, 0, 0);
		return -1;
	}
	k->labels_set = req->nlabels ||
			(req->labels_json && !json_is_null(req->labels_json));
	return 0;
}

/*
 * The budget of the open: the configured one, or less when the request
 * asks (a request is hostile: never above what is configured, always
 * within session-budget.h's bounds).
 */
static int open_budget(const struct svc *s,
		       const struct svc_session_open_req *req,
		       struct session_budget *b, struct sbx_error **err)
{
	const struct session_config *c = &s->cfg.session;
	const char *why;

	b->bytes = c->disk_quota;
	b->inodes = c->disk_inodes;
	if (req->disk_quota) {
		unsigned long long x;
		cleanup_free char *bad =
		    size_parse(req->disk_quota, &session_budget_bounds, &x);

		if (bad)
			return sbx_error_set(err, SBX_E_INVALID, 0,
					     "disk quota %s", bad);
		if (c->disk_quota && x > c->disk_quota)
			return sbx_error_set(err, SBX_E_INVALID, 0,
					     "disk quota '%s' is over "
					     "SANDBOXD_WORKSPACE_QUOTA (%llu "
					     "bytes)",
					     req->disk_quota, c->disk_quota),
			       sbx_error_why(*err, SBX_R_OVER_CEILING, x,
					     c->disk_quota),
			       -1;
		if (!c->disk_quota && x > SESSION_BUDGET_ASK_MAX)
			return sbx_error_set(
			    err, SBX_E_INVALID, 0,
			    "disk quota '%s' is over 1g, the most an open may "
			    "ask while SANDBOXD_WORKSPACE_QUOTA is unset",
			    req->disk_quota),
			       sbx_error_why(*err, SBX_R_OVER_CEILING, x,
					     SESSION_BUDGET_ASK_MAX),
			       -1;
		b->bytes = x;
	}
	if (req->disk_inodes) {
		if (c->disk_inodes && req->disk_inodes > c->disk_inodes)
			return sbx_error_set(err, SBX_E_INVALID, 0,
					     "disk inodes %llu is over "
					     "SANDBOXD_WORKSPACE_INODES (%llu)",
					     req->disk_inodes, c->disk_inodes),
			       sbx_error_why(*err, SBX_R_OVER_CEILING,
					     req->disk_inodes, c->disk_inodes),
			       -1;
		if (!b->bytes)
			return sbx_error_set(err, SBX_E_INVALID, 0,
					     "disk inodes need a disk quota "
					     "(--disk-quota, or "
					     "SANDBOXD_WORKSPACE_QUOTA)");
		b->inodes = req->disk_inodes;
	}
	why = session_budget_check(b->bytes, b->inodes);
	if (why)
		return sbx_error_set(err, SBX_E_INVALID, 0, "%s", why);
	return 0;
}

/*
 * The runtime the open asks for, or why not (the catalogue unreadable or
 * invalid, no such runtime), the error's reason the row's.
 */
static const struct runtime *
find_runtime(const struct svc_session_open_req *req,
	     struct svc_session_open_res *res, struct sbx_error **err)
{
	const struct catalog *cat = req->cat;
	const struct runtime *rt;
	struct strbuf sb = STRBUF_INIT;

	if (req->cat_err || !cat) {
		if (req->cat_err)
			svc_config_check(req->cat_err, err);
		else
			sbx_error_set(err, SBX_E_INTERNAL, 0,
				      "no catalogue was given");
		sbx_error_reason(*err, "the catalogue is invalid");
		return NULL;
	}
	if (!catalog_valid(cat)) {
		res->catalog_invalid = true;
		sbx_error_set(err, SBX_E_BAD_DATA, 0,
			      "'%s' has %zu error%s; nothing was done",
			      cat->path, cat->ndiags,
			      cat->ndiags == 1 ? "" : "s");
		sbx_error_reason(*err, "the catalogue is invalid");
		return NULL;
	}
	rt = req->runtime ? catalog_find(cat, req->runtime)
			  : catalog_default(cat);
	if (rt)
		return rt;
	for (size_t i = 0; i < cat->n; i++)
		strbuf_addf(&sb, " %s", cat->rt[i].alias);
	sbx_error_set(
	    err, SBX_E_NOT_FOUND, 0, "no runtime '%s' in '%s'; it has:%s",
	    req->runtime ? req->runtime : "", cat->path, sb.buf ? sb.buf : "");
	sbx_error_reason(*err, "no such runtime");
	strbuf_release(&sb);
	return NULL;
}

/* The image of rt, prewarmed first when the engine lacks it. */
static int ensure_image(const struct svc *s, const struct svc_call *call,
			struct engine *e, const struct runtime *rt,
			const char *image, const struct svc_prewarm_watch *w,
			struct sbx_error **err)
{
	const struct runtime *one[] = {rt};
	struct svc_prewarm_req req = {
	    .runtimes = one, .n = 1, .jobs = 1, .watch = *w};
	struct svc_prewarm_res res;
	bool present = false;
	int rc = 0;

	if (engine_image_inspect(e, image, &present, NULL, err) < 0)
		return -1;
	if (present)
		return 0;
	svc_prewarm_on(s, call, e, &req, image, &res);
	if (res.cancelled || res.failed)
		rc = sbx_error_set(
		    err, res.cancelled ? SBX_E_CANCELLED : res.failed_kind, 0,
		    "cannot open a session of '%s': %s", rt->alias,
		    res.jobs[0].error ? res.jobs[0].error
				      : "its prewarm failed");
	svc_prewarm_res_release(&res);
	return rc;
}

/* The key, under the configured secret or, without one, ROOT's. */
int svc_session_key_of(const struct svc *s, struct session_root *root,
		       const char *tenant, const char *scope,
		       const char *subject, const char *host,
		       char key[SESSION_KEY_MAX + 1], struct sbx_error **err)
{
	const struct session_config *c = &s->cfg.session;
	/* Only the secret: the configuration itself stays as it was read,
	 * shared by every call. */
	struct session_config mine = {0};
	int rc;

	if (c->secret) {
		mine.secret = xmalloc(c->secret_len);
		memcpy(mine.secret, c->secret, c->secret_len);
		mine.secret_len = c->secret_len;
	}
	rc = session_secret_load(&mine, root, err);
	if (rc == 0)
		session_key(&mine, tenant, scope, subject, host, key);
	session_config_release(&mine);
	return rc;
}

static int make_key(const struct svc *s, const struct svc_call *call,
		    const struct svc_session_open_req *req,
		    struct session_root *root, char key[SESSION_KEY_MAX + 1],
		    struct sbx_error **err)
{
	if (req->name)
		return svc_session_key_of(s, root, SVC_WIRE_KEY_TENANT,
					  SVC_WIRE_KEY_SCOPE, req->name, "",
					  key, err);
	return svc_session_key_of(s, root, call->tenant, req->scope,
				  req->subject, req->host ? req->host : "",
				  key, err);
}

/* The record already there (*old zeroed when none): the tenant's, or a
 * conflict. */
static int read_old(const struct svc_call *call,
		    const struct svc_session_open_req *req,
		    struct session_root *root, const char *key,
		    struct session_record *old, struct sbx_error **err)
{
	if (session_record_read(root, key, old, err) < 0) {
		if ((*err)->errnum != ENOENT)
			return -1;
		sbx_error_free(err);
		memset(old, 0, sizeof(*old));
		return 0;
	}
	if (strcmp(old->tenant, call->tenant) == 0)
		return 0;
	if (req->name)
		/* An id is one name on the service, whoever holds it. */
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' is another tenant's", key);
	else
		/* Keys fold the tenant in: only a forged record gets here. */
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "the record of session '%s' names another tenant",
			      key);
	session_record_release(old);
	return -1;
}

/* The details of the rows of make_room: a session hibernated (op reap,
 * as the reaper's stops), one closed (op close, as session close's). */
#define HIBERNATED_DETAIL "hibernated: container stopped to make room"
#define HIBERNATED_FAILED "hibernated: container could not be stopped"
#define ASLEEP_CLOSED "closed to make room: hibernated the longest"
#define ASLEEP_PURGED                                                          \
	"closed to make room: hibernated the longest; purged: ephemeral"

/*
 * With the quota lock held, room made for key's open where the
 * configuration allows it (docs/sessions.md, "Hibernation"), each
 * session taken written in its own row as it is taken (a row that
 * cannot be written fails the open: nothing more is done unrecorded).
 * Nobody is evicted for a tenant at its own ceiling.  Over
 * SANDBOXD_MAX_OPEN_SESSIONS (an open that adds a session: not the wake
 * of a hibernated one) the sessions hibernated longest are closed, when
 * there are enough of them; else the open is refused.  At
 * SANDBOXD_MAX_SESSIONS with SANDBOXD_EVICT_IDLE_AFTER set, the least
 * recently used idle session is hibernated.  n follows.
 */
static int make_room(const struct svc *s, const struct svc_call *call,
		     struct engine *e, struct session_root *root,
		     struct audit *au, const char *key, bool waking,
		     struct session_count *n, struct sbx_error **err)
{
	const struct session_config *c = &s->cfg.session;
	struct session_evicted ev = {0};
	char wid[SESSION_WIRE_ID_MAX + 1];
	bool done = true;
	long long t0;
	int rc = 0;

	if (svc_tenant_counted(call->tenant) && n->mine >= c->max_per_tenant)
		return 0; /* refused by session_quota_refuse */
	if (c->max_open && !waking && n->open >= c->max_open) {
		if (n->open - c->max_open + 1 > n->hibernated)
			return session_open_refuse(c, n, err);
		while (rc == 0 && done && n->open >= c->max_open) {
			t0 = clock_now_ms();
			rc = session_close_asleep(e, c, root, key, &ev, &done,
						  err);
			if (ev.key[0])
				svc_audit_row(au, AUDIT_CLOSE, ev.tenant,
					      ev.key,
					      svc_wire_id_of(root, ev.key, wid),
					      ev.runtime, ev.key, t0,
					      *err	  ? NULL
					      : ev.purged ? ASLEEP_PURGED
							  : ASLEEP_CLOSED,
					      err);
			rc = *err ? -1 : rc;
			if (rc == 0 && done) {
				n->open--;
				n->hibernated--;
			}
		}
		if (rc == 0)
			rc = session_open_refuse(c, n, err);
	}
	if (rc == 0 && c->evict_idle_after && n->all >= c->max_sessions) {
		t0 = clock_now_ms();
		rc = session_hibernate_lru(
		    e, c, root, key, (long long)time(NULL), &ev, &done, err);
		if (ev.key[0])
			svc_audit_row(
			    au, AUDIT_REAP, ev.tenant, ev.key,
			    svc_wire_id_of(root, ev.key, wid), ev.runtime,
			    ev.container, t0,
			    *err ? HIBERNATED_FAILED : HIBERNATED_DETAIL, err);
		rc = *err ? -1 : rc;
		if (rc == 0 && done) {
			n->all--;
			n->hibernated++;
		}
	}
	session_evicted_release(&ev);
	return rc;
}

/* An open that would make one budget more than the tenant may keep. */
static int kept_refuse(const struct session_config *c, const char *tenant,
		       unsigned kept, struct sbx_error **err)
{
	const char *t = svc_wire_tenant(tenant);

	sbx_error_set(err, SBX_E_REFUSED, 0,
		      "%s%s%s keeps %u of %u closed workspaces with a disk "
		      "budget (SANDBOXD_MAX_KEPT_BUDGETS_PER_TENANT); purge "
		      "one before opening another with a budget",
		      t ? "tenant '" : "the sessions opened without a tenant",
		      t ? t : "", t ? "'" : "", kept, c->max_kept_budgets);
	sbx_error_why(*err, SBX_R_KEPT_BUDGETS, kept, c->max_kept_budgets);
	return -1;
}

/*
 * Count and reserve under the quota lock: the only part of an open that
 * other opens wait for.  With may_claim, a container of the runtime's
 * image is taken from the pool into *claim (*claimed): it was counted
 * as pooled and becomes the session.  A cold open the host has no room
 * for takes a pooled container out into *evict (*evicted) to remove
 * after: the pool yields to demand, before any session is hibernated
 * (make_room).  waking: key's session is hibernated, so open already.
 * new_budget: the open makes a disk budget its workspace did not have,
 * refused when the tenant keeps SANDBOXD_MAX_KEPT_BUDGETS_PER_TENANT
 * closed workspaces with theirs (before anything is made room for).
 */
static int reserve_slot(const struct svc *s, const struct svc_call *call,
			struct engine *e, struct session_root *root,
			struct audit *au, const char *key, const char *runtime,
			const char *image, const char *work_dir, bool may_claim,
			bool waking, bool new_budget,
			struct session_reservation *v,
			struct session_pool_entry *claim, bool *claimed,
			struct session_pool_entry *evict, bool *evicted,
			struct sbx_error **err)
{
	const struct session_config *c = &s->cfg.session;
	/* The tenant a per-tenant ceiling counts: none for a wire session
	 * opened without one (sandboxd's rule), whose reservation still
	 * names it (an open, not a fill of the pool). */
	const char *counted =
	    svc_tenant_counted(call->tenant) ? call->tenant : NULL;
	struct session_count n;
	int rc;

	*claimed = *evicted = false;
	if (session_lock(root, err) < 0)
		return -1;
	rc = session_quota_count(e, root, c, key, counted,
				 new_budget ? call->tenant : NULL, &n, err);
	if (rc == 0 && new_budget && call->tenant &&
	    n.kept >= c->max_kept_budgets)
		rc = kept_refuse(c, call->tenant, n.kept, err);
	if (rc == 0 && may_claim && n.pooled)
		rc = session_pool_take(root, runtime, image, work_dir, claim,
				       claimed, err);
	if (rc == 0 && *claimed)
		n.all--;
	else if (rc == 0 && n.pooled && n.all == c->max_sessions &&
		 n.mine < c->max_per_tenant)
		rc = session_pool_take(root, NULL, NULL, NULL, evict, evicted,
				       err);
	if (rc == 0 && *evicted)
		n.all--;
	if (rc == 0)
		rc = make_room(s, call, e, root, au, key, waking, &n, err);
	if (rc == 0)
		rc = session_quota_refuse(c, counted, &n, err);
	if (rc == 0)
		rc = session_reserve(root, key, call->tenant,
				     *claimed ? claim->id : NULL, v, err);
	if (rc < 0 && *claimed) {
		/* Refused: the container goes back to the pool unused. */
		struct sbx_error *e2 = NULL;

		if (session_pool_add(root, claim, &e2) < 0)
			svc_warn(call, "%s", e2->msg);
		sbx_error_free(&e2);
		session_pool_entry_release(claim);
		*claimed = false;
	}
	session_unlock(root);
	return rc;
}

/* A pooled container removed with its workspace (taken out of the pool
 * already); what fails is said, and left to the reaper. */
static void pool_discard(const struct svc_call *call, struct engine *e,
			 struct session_root *root,
			 struct session_pool_entry *p)
{
	struct sbx_error *err = NULL;

	if (engine_container_remove(e, p->container, true, NULL, &err) < 0 ||
	    session_pool_ws_remove(root, p->id, &err) < 0)
		svc_warn(call, "%s", err->msg);
	sbx_error_free(&err);
	session_pool_entry_release(p);
}

/* The pooled container of p made key's (its workspace as made, renamed
 * to the session's name); false, the container discarded, when not. */
static bool claim_pooled(const struct svc *s, const struct svc_call *call,
			 struct engine *e, struct session_root *root,
			 const char *key, struct session_pool_entry *p)
{
	struct sbx_error *err = NULL;

	if (session_pool_ws_fresh(root, p->id, s->cfg.recipe.sandbox_uid,
				  &err) == 0 &&
	    session_engine_claim(e, &s->cfg.session, p->container, p->id,
				 p->work_dir, key, &err) == 0)
		return true;
	svc_warn(call, "a pooled container was not taken: %s", err->msg);
	sbx_error_free(&err);
	pool_discard(call, e, root, p);
	return false;
}

/* The workspace a new container binds: the record's when there is one,
 * else ROOT/KEY/workspace, made now. */
static int workspace_for(const struct svc *s, const struct svc_call *call,
			 struct session_root *root,
			 const struct session_record *old,
			 const struct session_budget *b,
			 struct svc_session_open_res *res, bool *budget_made,
			 struct sbx_error **err)
{
	struct session_record here = {0};
	bool made, unbudgeted;

	*budget_made = false;
	if (old->key[0] && session_workspace_pooled(old)) {
		/* A pooled workspace: it must still be there (its budget
		 * mounted: session_budget_make mounts it again after a
		 * restart of the host). */
		int fd;

		if (session_budget_make(root, old, b, s->cfg.session.mkfs,
					s->cfg.recipe.sandbox_uid, budget_made,
					&unbudgeted, err) < 0)
			return -1;
		fd = session_workspace_open(root, old, err);
		if (fd < 0)
			return -1;
		close(fd);
		return 0;
	}
	if (session_workspace_make(root, res->key, s->cfg.recipe.sandbox_uid,
				   &made, err) < 0)
		return -1;
	/* The budget is mounted before the container is made: what the
	 * engine binds is the budget's file system. */
	memcpy(here.key, res->key, sizeof(here.key));
	if (session_budget_make(root, &here, b, s->cfg.session.mkfs,
				s->cfg.recipe.sandbox_uid, budget_made,
				&unbudgeted, err) < 0)
		return -1;
	if (unbudgeted)
		svc_warn(call,
			 "the workspace of '%s' has files from before its "
			 "disk budget was configured: it has none (purge it "
			 "to have one)",
			 res->key);
	return 0;
}

/*
 * A reopen that asks for a disk budget: the workspace's is the one it
 * was made with (its image's size), and a different one asked for is a
 * conflict, never silently ignored.  (--disk-inodes is not compared:
 * ext4 rounds an inode count up to its groups.)
 */
static int budget_kept(struct session_root *root,
		       const struct session_record *old,
		       unsigned long long want, struct sbx_error **err)
{
	unsigned long long have;

	if (session_budget_image_bytes(root, old, &have, err) < 0)
		return -1;
	if (have == want)
		return 0;
	if (have)
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' has a disk budget of %llu bytes, "
			      "not %llu; close it with --purge to change it",
			      old->key, have, want);
	else
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' has no disk budget; close it with "
			      "--purge to give it one",
			      old->key);
	sbx_error_why(*err, SBX_R_BUDGET_DIFFERS, have, want);
	return -1;
}

/*
 * The container just launched sees the workspace's budget
 * (session_budget_seen); when it does not, it is removed: fail closed.
 */
static int budget_seen(const struct svc *s, const struct svc_call *call,
		       struct engine *e, struct session_root *root,
		       const struct session_record *rec, const char *container,
		       struct sbx_error **err)
{
	struct sbx_error *e2 = NULL;

	if (session_budget_seen(e, root, rec, container,
				session_work_dir(&s->cfg.session, rec),
				err) == 0)
		return 0;
	if (engine_container_remove(e, container, true, NULL, &e2) < 0)
		svc_warn(call, "%s", e2->msg);
	sbx_error_free(&e2);
	return -1;
}

/* A budget made by an open that then failed goes with it (the reaper
 * would find it, with no record, but nothing is left now). */
static void budget_undo(const struct svc_call *call, struct session_root *root,
			const struct session_record *rec)
{
	struct sbx_error *e2 = NULL;

	if (session_budget_remove(root, rec, &e2) < 0)
		svc_warn(call, "%s", e2->msg);
	sbx_error_free(&e2);
}

/*
 * With ROOT/KEY's open lock held: a record already there read (it must
 * be the tenant's); the container adopted, or, with a slot reserved, its
 * workspace made and the container restarted or made; the record written.
 */
static int open_key(const struct svc *s, const struct svc_call *call,
		    const struct svc_session_open_req *req,
		    const struct open_kept *kept, struct engine *e,
		    struct session_root *root, struct audit *au,
		    const struct runtime *rt, const char *image,
		    const struct session_budget *b,
		    struct svc_session_open_res *res, struct sbx_error **err)
{
	const struct session_config *c = &s->cfg.session;
	struct session_record rec = {0}, old = {0};
	struct session_spec spec = {0};
	struct session_reservation slot;
	struct session_pool_entry pool = {0}, evict = {0};
	struct sbx_error *e2 = NULL;
	bool adopted, claimed = false, evicted = false, waking;
	bool budget_made = false;
	unsigned long long old_image = 0;
	int rc = -1;

	session_reservation_init(&slot);
	if (read_old(call, req, root, res->key, &old, err) < 0)
		goto out;
	if (old.key[0] && kept->durability_set &&
	    old.durability != kept->durability) {
		/* What happens to the files at close is the session's
		 * promise: a reopen does not change it behind its back. */
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' is %s, not %s; close it with "
			      "--purge before opening it %s",
			      res->key, session_durability_name(old.durability),
			      session_durability_name(kept->durability),
			      session_durability_name(kept->durability));
		sbx_error_why(*err, SBX_R_DURABILITY_DIFFERS, 0, 0);
		goto out;
	}
	if (old.key[0] && req->work_dir &&
	    strcmp(session_work_dir(c, &old), req->work_dir) != 0) {
		/* Where the sandbox's files are is its promise too: its
		 * programs and paths name it. */
		struct strbuf sb = STRBUF_INIT;

		text_add_escaped(&sb, session_work_dir(c, &old),
				 strlen(session_work_dir(c, &old)));
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' has its work dir at '%s'; close "
			      "it with --purge to open it at another",
			      res->key, strbuf_str(&sb));
		strbuf_release(&sb);
		goto out;
	}
	if (old.key[0] && req->disk_quota &&
	    budget_kept(root, &old, b->bytes, err) < 0)
		goto out;
	if (b->bytes && old.key[0] &&
	    session_budget_image_bytes(root, &old, &old_image, err) < 0)
		goto out;
	memcpy(rec.key, res->key, sizeof(rec.key));
	rec.workspace = old.workspace ? xstrdup(old.workspace) : NULL;
	rec.work_dir =
	    old.key[0] ? (old.work_dir ? xstrdup(old.work_dir) : NULL)
		       : (open_work_dir(s, req) ? xstrdup(open_work_dir(s, req))
						: NULL);
	res->workspace = session_workspace_path(root, &rec);

	spec.cfg = &s->cfg.session;
	spec.rt = rt;
	spec.image = image;
	spec.key = res->key;
	spec.tenant = call->tenant;
	spec.scope = req->scope;
	spec.workspace = res->workspace;
	spec.work_dir = rec.work_dir;
	spec.uid = s->cfg.recipe.sandbox_uid;
	spec.created = old.created ? old.created : (long long)time(NULL);
	if (session_engine_adopt(e, &spec, &res->outcome, &res->container,
				 &adopted, err) < 0)
		goto out;
	/* A hibernated session's stopped container is started again: a wake,
	 * which adds no open session. */
	waking = !adopted && res->container &&
		 session_hibernated(root, res->key, NULL, NULL) > 0;
	if (!adopted &&
	    (reserve_slot(
		 s, call, e, root, au, res->key, rt->alias, image, rec.work_dir,
		 !old.key[0] && !res->container &&
		     !session_workspace_has_files(root, res->key) &&
		     b->bytes == c->disk_quota && b->inodes == c->disk_inodes,
		 waking, b->bytes && !old_image, &slot, &pool, &claimed, &evict,
		 &evicted, err) < 0))
		goto out;
	if (evicted)
		pool_discard(call, e, root, &evict);
	if (claimed && claim_pooled(s, call, e, root, res->key, &pool)) {
		free(rec.workspace);
		rec.workspace = xasprintf(".sbxcat-ws/%s", pool.id);
		free(res->workspace);
		res->workspace = session_workspace_path(root, &rec);
		res->container = steal_pointer(&pool.container);
		res->outcome = SESSION_CLAIMED;
		free(spec.image_used);
		spec.image_used = steal_pointer(&pool.image);
		spec.created = (long long)time(NULL);
	} else if (!adopted) {
		if (workspace_for(s, call, root, &old, b, res, &budget_made,
				  err) < 0)
			goto out;
		if (session_engine_launch(e, &spec, &res->outcome,
					  &res->container, err) < 0 ||
		    budget_seen(s, call, e, root, &rec, res->container,
				err) < 0) {
			if (budget_made)
				budget_undo(call, root, &rec);
			goto out;
		}
	}

	rec.tenant = xstrdup(call->tenant);
	rec.scope = xstrdup(req->scope);
	rec.runtime = xstrdup(rt->alias);
	rec.image = xstrdup(spec.image_used ? spec.image_used : image);
	rec.container = xstrdup(res->container);
	rec.created = spec.created;
	rec.last_activity = (long long)time(NULL);
	session_labels_copy(&rec.labels,
			    kept->labels_set ? &kept->labels : &old.labels);
	rec.durability = kept->durability_set ? kept->durability
			 : old.key[0]	      ? old.durability
					      : SESSION_PERSISTENT;
	/* The record first, the reservation after: in between the session
	 * is counted twice, never not at all. */
	if (session_record_write(root, &rec, err) < 0)
		goto out;
	/* Awake: the mark goes (a stale one beside a live container too).
	 * One that stays is stale: the container runs. */
	if (session_hibernate_clear(root, res->key, &e2) < 0)
		svc_warn(call, "%s", e2->msg);
	sbx_error_free(&e2);
	if (waking && res->outcome == SESSION_RESTARTED)
		res->outcome = SESSION_WOKEN;
	res->image = steal_pointer(&rec.image);
	res->created = spec.created;
	res->last_activity = rec.last_activity;
	res->labels = rec.labels;
	session_labels_init(&rec.labels);
	res->durability = rec.durability;
	res->work_dir = xstrdup(session_work_dir(c, &rec));
	rc = 0;
out:
	session_pool_entry_release(&pool);
	session_reserve_release(&slot);
	session_record_release(&rec);
	session_record_release(&old);
	free(spec.image_used);
	return rc;
}

/* When a session of last activity last expires: last plus the idle
 * timeout, as RFC 3339; null without an idle timeout or a stamp. */
static json_t *expires_json(const struct svc *s, long long last)
{
	long long idle = s->cfg.session.idle_timeout;

	if (idle <= 0 || last <= 0)
		return json_null();
	return svc_time_json(last + idle);
}

void svc_session_add_kept(const struct svc *s, json_t *doc,
			  const struct session_labels *labels,
			  enum session_durability d, long long last)
{
	json_object_set_new(doc, "expires_at", expires_json(s, last));
	json_object_set_new(doc, "durability",
			    json_string(session_durability_name(d)));
	json_object_set_new(doc, "labels", session_labels_json(labels));
}

static json_t *open_json(const struct svc *s,
			 const struct svc_session_open_res *res)
{
	json_t *doc =
	    xjson_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:s}", "key", res->key,
		       "container", res->container, "name",
		       json_string(res->name), "runtime", res->runtime, "image",
		       res->image, "created", svc_time_json(res->created),
		       "outcome", session_outcome_name(res->outcome));

	xjson_set_path(doc, "workspace", res->workspace);
	if (res->work_dir &&
	    strcmp(res->work_dir, s->cfg.session.work_dir) != 0)
		xjson_set_path(doc, "work_dir", res->work_dir);
	svc_session_add_kept(s, doc, &res->labels, res->durability,
			     res->last_activity);
	return doc;
}

int svc_session_open(const struct svc *s, const struct svc_call *call,
		     const struct svc_session_open_req *req,
		     struct svc_session_open_res *res, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	const struct runtime *rt;
	struct audit *au = NULL;
	struct open_kept kept = {0};
	struct session_budget budget;
	char *image = NULL;
	int ofd = -1;
	long long started = clock_now_ms();

	memset(res, 0, sizeof(*res));
	if (check_fields(call->tenant, req, err) < 0 ||
	    open_kept_parse(req, &kept, err) < 0 ||
	    open_budget(s, req, &budget, err) < 0 ||
	    svc_audit_open(s, call, &au, err) < 0) {
		session_labels_release(&kept.labels);
		return -1;
	}
	rt = find_runtime(req, res, err);
	if (!rt) {
		/* Refused before a key could be made: the row has none. */
		svc_audit_row(au, AUDIT_OPEN, call->tenant, "", req->name,
			      req->runtime, req->runtime, started, NULL, err);
		svc_audit_close(call, au);
		session_labels_release(&kept.labels);
		return -1;
	}
	res->runtime = rt->alias;
	/* A session is opened only when its row can be written: before the
	 * root is made or an image built; without it, nothing to record in. */
	if (audit_ready(au, err) < 0) {
		svc_audit_close(call, au);
		session_labels_release(&kept.labels);
		return -1;
	}
	if (svc_root_open(s, call, &root, err) < 0 ||
	    make_key(s, call, req, &root, res->key, err) < 0)
		goto out;
	image = recipe_tag(rt, &s->cfg.recipe);
	if (svc_engine_open(s, call, &engine, err) < 0 ||
	    ensure_image(s, call, &engine, rt, image, &req->watch, err) < 0)
		goto out;
	for (int tries = 0; ofd < 0 && tries < 3; tries++) {
		sbx_error_free(err);
		if (session_keydir_make(&root, res->key, err) < 0)
			goto out;
		ofd = session_open_lock(&root, res->key, err);
		if (ofd < 0 && (*err)->errnum != ESTALE)
			goto out;
	}
	if (ofd < 0 || open_key(s, call, req, &kept, &engine, &root, au, rt,
				image, &budget, res, err) < 0)
		goto out;
	res->name = session_container_name(&s->cfg.session, res->key);
	res->doc = open_json(s, res);
out:
	session_keydir_unlock(ofd);
	svc_audit_row(au, AUDIT_OPEN, call->tenant, res->key, req->name,
		      rt->alias, rt->alias, started,
		      *err ? NULL : session_outcome_name(res->outcome), err);
	svc_audit_close(call, au);
	free(image);
	session_labels_release(&kept.labels);
	svc_engine_close(s, &engine);
	session_root_close(&root);
	return *err ? -1 : 0;
}

void svc_session_open_res_release(struct svc_session_open_res *res)
{
	free(res->container);
	free(res->name);
	free(res->image);
	free(res->workspace);
	free(res->work_dir);
	session_labels_release(&res->labels);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- ls, show ---- */

static json_t *row_json(const struct svc *s, const struct session_record *r,
			const char *state)
{
	json_t *doc =
	    xjson_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "key", r->key,
		       "tenant", r->tenant, "runtime", r->runtime, "state",
		       state, "created", svc_time_json(r->created),
		       "last_activity", svc_time_json(r->last_activity));

	svc_session_add_kept(s, doc, &r->labels, r->durability,
			     r->last_activity);
	return doc;
}

/* The size of key's workspace, into doc (0 and a warning when the walk
 * fails). */
static void add_size(const struct svc_call *call, struct session_root *root,
		     const struct session_record *rec,
		     unsigned long long *bytes, unsigned long long *files,
		     json_t *doc)
{
	struct sbx_error *err = NULL;

	if (session_workspace_size(root, rec, bytes, files, &err) < 0) {
		svc_warn(call, "%s", err->msg);
		sbx_error_free(&err);
	}
	json_object_set_new(doc, "workspace_bytes",
			    json_integer((json_int_t)*bytes));
	json_object_set_new(doc, "workspace_files",
			    json_integer((json_int_t)*files));
}

/* The disk budget of rec's workspace into doc's "disk" (session-budget.h:
 * statvfs, constant time): bytes and inodes used and allowed, or null
 * without a budget (a warning when it cannot be measured). */
static void add_disk(const struct svc_call *call, struct session_root *root,
		     const struct session_record *rec, json_t *doc)
{
	struct sbx_error *err = NULL;
	struct session_usage u;

	if (session_budget_usage(root, rec, &u, &err) < 0) {
		if (err->errnum != ENOENT)
			svc_warn(call, "%s", err->msg);
		sbx_error_free(&err);
	}
	json_object_set_new(
	    doc, "disk",
	    u.budget ? xjson_pack("{s:I, s:I, s:I, s:I, s:I}", "budget_bytes",
				  (json_int_t)u.image_bytes, "bytes_used",
				  (json_int_t)u.bytes_used, "bytes_allowed",
				  (json_int_t)u.bytes_allowed, "inodes_used",
				  (json_int_t)u.inodes_used, "inodes_allowed",
				  (json_int_t)u.inodes_allowed)
		     : json_null());
}

/* The row of keys[i] into res when it is the caller's to see; a record
 * half made or damaged is said, and skipped. */
static void ls_row(const struct svc *s, const struct svc_call *call,
		   const struct svc_session_ls_req *req,
		   struct session_root *root, const struct session_list *by_key,
		   const char *key, struct svc_session_ls_res *res,
		   size_t *alloc)
{
	struct sbx_error *err = NULL;
	struct svc_session_row *row;
	const struct engine_container_summary *sum;
	json_t *j;
	struct session_record r;

	if (session_record_read(root, key, &r, &err) < 0) {
		if (err->errnum != ENOENT)
			svc_warn(call, "%s", err->msg);
		sbx_error_free(&err);
		return;
	}
	if (call->tenant && strcmp(r.tenant, call->tenant) != 0) {
		session_record_release(&r);
		return;
	}
	ALLOC_GROW(res->rows, res->n + 1, *alloc);
	row = &res->rows[res->n++];
	memset(row, 0, sizeof(*row));
	row->rec = r;
	row->state = "closed";
	sum = session_list_find(by_key, key);
	if (sum && sum->state)
		row->state = session_state_marked(
		    root, key, session_state_word(sum->state));
	j = row_json(s, &row->rec, row->state);
	/* Only a caller that asks pays for the walk of every workspace. */
	if (req->sizes)
		add_size(call, root, &row->rec, &row->bytes, &row->files, j);
	add_disk(call, root, &row->rec, j);
	json_array_append_new(res->doc, j);
}

int svc_session_ls(const struct svc *s, const struct svc_call *call,
		   const struct svc_session_ls_req *req,
		   struct svc_session_ls_res *res, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	struct session_list by_key = {0};
	char **keys = NULL;
	size_t nkeys = 0, alloc = 0;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (svc_root_open(s, call, &root, err) < 0 ||
	    session_keys(&root, &keys, &nkeys, err) < 0 ||
	    svc_engine_open(s, call, &engine, err) < 0 ||
	    session_engine_list(&engine, &s->cfg.session, &by_key, err) < 0)
		goto out;
	res->doc = json_array();
	for (size_t i = 0; i < nkeys; i++)
		ls_row(s, call, req, &root, &by_key, keys[i], res, &alloc);
	rc = 0;
out:
	session_list_release(&by_key);
	strv_free(keys, nkeys);
	svc_engine_close(s, &engine);
	session_root_close(&root);
	return rc;
}

void svc_session_ls_res_release(struct svc_session_ls_res *res)
{
	for (size_t i = 0; i < res->n; i++)
		session_record_release(&res->rows[i].rec);
	free(res->rows);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, xjson_text(v[i]));
	return a;
}

/* The limits as the engine applied them, from its inspect. */
static json_t *limits_json(const struct engine_container_info *inspect)
{
	json_t *mounts = json_array(), *tmpfs = json_object();

	for (size_t i = 0; i < inspect->nmounts; i++) {
		const struct engine_mount *m = &inspect->mounts[i];
		json_t *o = json_object();

		if (m->type)
			json_object_set_new(o, "type", xjson_text(m->type));
		xjson_set_path(o, "source", m->source ?: "");
		xjson_set_path(o, "target", m->destination ?: "");
		json_array_append_new(mounts, o);
	}
	for (size_t i = 0; i < inspect->host.tmpfs.n; i++)
		json_object_set_new(tmpfs, inspect->host.tmpfs.keys[i],
				    xjson_text(inspect->host.tmpfs.values[i]));
	return xjson_pack(
	    "{s:o*, s:b, s:o, s:o, s:I, s:I, s:I, s:I, s:o, s:o*, "
	    "s:o, s:b, s:b}",
	    "user", inspect->user ? xjson_text(inspect->user) : NULL, "init",
	    inspect->host.init, "cap_drop",
	    strv_json(inspect->host.cap_drop, inspect->host.ncap_drop),
	    "security_opt",
	    strv_json(inspect->host.security_opt, inspect->host.nsecurity_opt),
	    "pids_limit", (json_int_t)inspect->host.pids_limit, "nano_cpus",
	    (json_int_t)inspect->host.nano_cpus, "memory",
	    (json_int_t)inspect->host.memory, "memory_swap",
	    (json_int_t)inspect->host.memory_swap, "tmpfs", tmpfs,
	    "network_mode",
	    inspect->host.network_mode ? xjson_text(inspect->host.network_mode)
				       : NULL,
	    "mounts", mounts, "privileged", inspect->host.privileged,
	    "readonly_rootfs", inspect->host.readonly_rootfs);
}

/* What the engine says of the container (inspect NULL: none), after the
 * record's fields. */
static void show_container(const struct svc_call *call,
			   struct session_root *root,
			   const struct engine_container_info *inspect,
			   struct svc_session_show_res *res)
{
	json_t *doc = res->doc;
	long long pid = inspect ? inspect->state.pid : 0;
	const char *e = inspect ? inspect->state.error : NULL;
	struct sbx_error *err = NULL;
	unsigned long long ooms;

	json_object_set_new(doc, "container",
			    inspect && inspect->id ? xjson_text(inspect->id)
						   : json_null());
	json_object_set_new(doc, "image", xjson_text(res->rec.image));
	xjson_set_path(doc, "workspace", res->workspace);
	add_size(call, root, &res->rec, &res->bytes, &res->files, doc);
	add_disk(call, root, &res->rec, doc);
	json_object_set_new(doc, "oom_killed",
			    json_boolean(inspect && inspect->state.oom_killed));
	if (pid > 0 && pid < (1 << 30) &&
	    procs_oom_kills((pid_t)pid, &ooms, &err) == 0)
		json_object_set_new(doc, "oom_kills",
				    json_integer((json_int_t)ooms));
	else
		json_object_set_new(doc, "oom_kills", json_null());
	sbx_error_free(&err);
	json_object_set_new(
	    doc, "exit_code",
	    inspect && inspect->state.has_exit_code
		? json_integer((json_int_t)inspect->state.exit_code)
		: json_null());
	json_object_set_new(doc, "error",
			    e && *e ? xjson_text(e) : json_null());
	json_object_set_new(doc, "limits",
			    inspect ? limits_json(inspect) : json_null());
}

int svc_session_show(const struct svc *s, const struct svc_call *call,
		     const struct svc_session_show_req *req,
		     struct svc_session_show_res *res, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	struct engine_container_info *inspect = NULL;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (svc_root_open(s, call, &root, err) < 0 ||
	    session_find(&root, req->key, call->tenant, &res->rec, err) < 0 ||
	    svc_engine_open(s, call, &engine, err) < 0 ||
	    session_engine_inspect(&engine, &s->cfg.session, res->rec.key,
				   &inspect, err) < 0)
		goto out;
	res->state =
	    session_state_marked(&root, res->rec.key, session_state(inspect));
	res->workspace = session_workspace_path(&root, &res->rec);
	res->doc = row_json(s, &res->rec, res->state);
	show_container(call, &root, inspect, res);
	rc = 0;
out:
	engine_container_info_free(inspect);
	svc_engine_close(s, &engine);
	session_root_close(&root);
	return rc;
}

void svc_session_show_res_release(struct svc_session_show_res *res)
{
	session_record_release(&res->rec);
	free(res->workspace);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- close ---- */

/* Under the quota lock only the container and, with purge, the rename
 * into the trash: emptying a tree of a million files would hold every
 * other open of the host.  The trash is emptied after. */
static int close_session(const struct svc *s, struct engine *e,
			 struct session_root *root,
			 const struct session_record *rec, bool purge,
			 const char **what, struct sbx_error **err)
{
	const char *key = rec->key;
	struct session_trash trash;
	int rc = -1, ofd;

	session_trash_init(&trash);
	/* An open of the key in progress finishes first; one that waits
	 * for it finds what this leaves. */
	ofd = session_open_lock(root, key, err);
	if (ofd < 0)
		return -1;
	if (session_lock(root, err) < 0) {
		session_keydir_unlock(ofd);
		return -1;
	}
	if (session_engine_close(e, &s->cfg.session, key,
				 s->cfg.session.persist_containers && !purge,
				 what, err) < 0 ||
	    (purge && session_trash_key(root, key, &trash, err) < 0) ||
	    (!purge && session_hibernate_clear(root, key, err) < 0) ||
	    (!purge && session_record_touch(root, key, err) < 0) ||
	    (!purge && session_wire_drop_tokens(root, key, false, err) < 0)) {
		session_unlock(root);
		goto out;
	}
	session_unlock(root);
	if (purge && session_trash_empty(root, &trash, err) < 0)
		goto out;
	/* A pooled workspace is not below ROOT/KEY: removed after it (a
	 * crash between leaves it to the pool's sweep, no record naming
	 * it). */
	if (purge && session_workspace_pooled(rec) &&
	    session_pool_ws_remove(root, strchr(rec->workspace, '/') + 1, err) <
		0)
		goto out;
	rc = 0;
out:
	session_keydir_unlock(ofd);
	session_trash_release(&trash);
	return rc;
}

int svc_session_close(const struct svc *s, const struct svc_call *call,
		      const struct svc_session_close_req *req,
		      struct svc_session_close_res *res, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	struct session_record r = {0};
	struct audit *au = NULL;
	char wid[SESSION_WIRE_ID_MAX + 1];
	const char *wire_id = NULL;
	long long started = clock_now_ms();

	memset(res, 0, sizeof(*res));
	res->container = "gone";
	res->purged = req->purge;
	if (svc_audit_begin(s, call, &au, err) < 0)
		return -1;
	if (svc_root_open(s, call, &root, err) < 0 ||
	    session_find(&root, req->key, call->tenant, &r, err) < 0)
		goto out;
	/* Read before the close, which may delete the session's files. */
	wire_id = svc_wire_id_of(&root, r.key, wid);
	/* An ephemeral session keeps nothing once closed. */
	res->purged = req->purge || r.durability == SESSION_EPHEMERAL;
	if (svc_engine_open(s, call, &engine, err) < 0 ||
	    close_session(s, &engine, &root, &r, res->purged, &res->container,
			  err) < 0)
		goto out;
	memcpy(res->key, r.key, sizeof(res->key));
	res->doc = xjson_pack("{s:s, s:s, s:b}", "key", r.key, "container",
			      res->container, "purged", res->purged);
out:
	/* A key not found is the target alone: the row is the caller's,
	 * never on the key's chain. */
	svc_audit_row(au, AUDIT_CLOSE, r.key[0] ? r.tenant : call->tenant,
		      r.key[0] ? r.key : "", wire_id, r.runtime, req->key,
		      started,
		      !res->purged ? res->container
		      : req->purge ? "purged"
				   : "purged: ephemeral",
		      err);
	svc_audit_close(call, au);
	session_record_release(&r);
	svc_engine_close(s, &engine);
	session_root_close(&root);
	return *err ? -1 : 0;
}

/* ---- touch ---- */

int svc_session_touch(const struct svc *s, const struct svc_call *call,
		      const struct svc_session_touch_req *req,
		      struct svc_session_touch_res *res, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct session_record r = {0};
	struct audit *au = NULL;
	char wid[SESSION_WIRE_ID_MAX + 1];
	long long started = clock_now_ms();

	memset(res, 0, sizeof(*res));
	if (svc_audit_begin(s, call, &au, err) < 0)
		return -1;
	if (svc_root_open(s, call, &root, err) < 0 ||
	    session_find(&root, req->key, call->tenant, &r, err) < 0 ||
	    session_record_stamp(&root, r.key, &res->last_activity, err) < 0)
		goto out;
	memcpy(res->key, r.key, sizeof(res->key));
	res->doc = xjson_pack("{s:s, s:o, s:o}", "key", r.key, "last_activity",
			      svc_time_json(res->last_activity), "expires_at",
			      expires_json(s, res->last_activity));
out:
	svc_audit_row(au, AUDIT_OPEN, r.key[0] ? r.tenant : call->tenant,
		      r.key[0] ? r.key : "",
		      r.key[0] ? svc_wire_id_of(&root, r.key, wid) : NULL,
		      r.runtime, req->key, started, *err ? NULL : "touched",
		      err);
	svc_audit_close(call, au);
	session_record_release(&r);
	session_root_close(&root);
	return *err ? -1 : 0;
}

void svc_session_touch_res_release(struct svc_session_touch_res *res)
{
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

void svc_session_close_res_release(struct svc_session_close_res *res)
{
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* ---- a draining host's pass (svc-fleet-host.h) ---- */

#define DRAIN_DETAIL "hibernated: its host drains"
#define DRAIN_FAILED                                                           \
	"hibernated: its host drains; container could not be "                 \
	"stopped"

int svc_fleet_drain_pass(const struct svc *s, const struct svc_call *call,
			 unsigned idle_s, size_t limit, size_t *n,
			 struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	/* Hibernation's choice with the drain's idle time: the least
	 * recently used idle session, one at a time. */
	struct session_config c = s->cfg.session;
	struct audit *au = NULL;
	char wid[SESSION_WIRE_ID_MAX + 1];
	int rc = 0;

	*n = 0;
	c.evict_idle_after = idle_s ? idle_s : 1;
	if (svc_root_open(s, call, &root, err) < 0 ||
	    svc_engine_open(s, call, &engine, err) < 0 ||
	    svc_audit_begin(s, call, &au, err) < 0) {
		svc_engine_close(s, &engine);
		session_root_close(&root);
		return -1;
	}
	while (rc == 0 && *n < limit) {
		struct session_evicted ev = {0};
		bool done = false;
		long long t0 = clock_now_ms();

		if (session_lock(&root, err) < 0) {
			rc = -1;
			break;
		}
		rc = session_hibernate_lru(&engine, &c, &root, NULL,
					   (long long)time(NULL), &ev, &done,
					   err);
		session_unlock(&root);
		if (ev.key[0])
			svc_audit_row(au, AUDIT_REAP, ev.tenant, ev.key,
				      svc_wire_id_of(&root, ev.key, wid),
				      ev.runtime, ev.container, t0,
				      *err ? DRAIN_FAILED : DRAIN_DETAIL, err);
		rc = *err ? -1 : rc;
		session_evicted_release(&ev);
		if (rc < 0 || !done)
			break;
		(*n)++;
	}
	svc_audit_close(call, au);
	svc_engine_close(s, &engine);
	session_root_close(&root);
	return rc;
}

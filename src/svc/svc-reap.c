/*
 * svc-reap.c - the reaper's pass and report as operations (svc-reap.h):
 * the recorder, the root and the engine around reap.c, and the rows.
 */
#include "config.h"

#include <string.h>

#include "audit/audit.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "engine/engine.h"
#include "session/session-budget.h"
#include "session/session.h"
#include "svc/svc-e2b.h"
#include "svc/svc-reap.h"

_Static_assert(SVC_REAP_PAUSE == REAP_PAUSE && SVC_REAP_STOP == REAP_STOP &&
		   SVC_REAP_REMOVE == REAP_REMOVE &&
		   SVC_REAP_DELETE == REAP_DELETE &&
		   SVC_REAP_ORPHAN == REAP_ORPHAN &&
		   SVC_REAP_STUCK == REAP_STUCK &&
		   SVC_REAP_RELEASE == REAP_RELEASE &&
		   SVC_REAP_CLOSED == REAP_CLOSED,
	       "svc-reap.h's actions are reap.h's");

static json_t *text_or_null(const char *s)
{
	return s ? xjson_text(s) : json_null();
}

static json_t *pass_json(const struct reap_pass *p)
{
	json_t *acts = json_array();

	for (size_t i = 0; i < p->nacts; i++) {
		const struct reap_action *a = &p->acts[i];

		json_array_append_new(
		    acts,
		    xjson_pack("{s:s, s:o, s:o, s:o, s:s, s:I, s:b, s:o, s:o}",
			       "action", reap_what_name(a->what), "key",
			       text_or_null(a->key), "container",
			       text_or_null(a->container), "state",
			       text_or_null(a->state), "reason", a->reason,
			       "age_s", (json_int_t)a->age, "done", a->done,
			       "error", text_or_null(a->error), "skipped",
			       a->skipped ? json_string(a->skipped)
					  : json_null()));
	}
	return xjson_pack("{s:I, s:b, s:o, s:I}", "now", (json_int_t)p->now,
			  "dry_run", p->dry_run, "actions", acts, "left",
			  (json_int_t)p->left);
}

/* What record_action writes to: the recorder, and its first failure. */
struct recording {
	struct audit *au;
	struct sbx_error *err;
};

/*
 * The row of an action taken or tried (a skipped one and a closed session
 * are not actions), written as it ends (reap_pass.acted).  A row that
 * cannot be written stops the pass: nothing more is reaped unrecorded.
 */
static int record_action(const struct reap_action *a, long long ms,
			 void *arg)
{
	static const char *const detail[][2] = {
	    [REAP_PAUSE] = {"idle: container paused",
			    "idle: container could not be paused"},
	    [REAP_STOP] = {"idle: container stopped",
			   "idle: container could not be stopped"},
	    [REAP_REMOVE] = {"stopped past its TTL: container removed",
			     "stopped past its TTL: container could not be "
			     "removed"},
	    [REAP_DELETE] = {"unused past the workspace TTL: deleted",
			     "unused past the workspace TTL: could not be "
			     "deleted"},
	    [REAP_ORPHAN] = {"orphan container removed",
			     "orphan container could not be removed"},
	    [REAP_STUCK] = {"stuck container removed",
			    "stuck container could not be removed"},
	    [REAP_RELEASE] = {"idle: hibernated session closed",
			      "idle: hibernated session could not be closed"},
	    [REAP_CLOSED] = {"closed", "closed"},
	};
	static const char *const ephemeral[2] = {
	    "ephemeral, idle: deleted",
	    "ephemeral, idle: could not be deleted"};
	struct recording *rec = arg;
	struct audit_event ev = {
	    .op = AUDIT_REAP,
	    .tenant = a->tenant,
	    .session_key = a->key,
	    .wire_id = a->wire_id,
	    .runtime = a->runtime,
	    .target = a->container ? a->container : a->key,
	    .ok = a->done && !a->error,
	    .duration_ms = ms,
	    .detail = a->ephemeral ? ephemeral[a->error != NULL]
				   : detail[a->what][a->error != NULL],
	    .bytes = AUDIT_NONE,
	    .results = AUDIT_NONE,
	};

	if (a->what == REAP_CLOSED || (!a->done && !a->error))
		return 0;
	return audit_event(rec->au, &ev, &rec->err);
}

int svc_reap(const struct svc *s, const struct svc_call *call,
	     const struct svc_reap_req *req, struct svc_reap_res *res,
	     struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	struct recording rec = {0};
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (!req->dry_run && svc_audit_open(s, call, &rec.au, err) < 0)
		return -1;
	if (rec.au) {
		res->pass.acted = record_action;
		res->pass.acted_arg = &rec;
	}
	/* Nothing is reaped that could not be recorded. */
	if (rec.au && audit_ready(rec.au, err) < 0)
		goto out;
	/* E2B's deadlines first (svc-e2b.h): a sandbox past its endAt is
	 * ended by it, the others kept out of the idle rules below. */
	if (!req->dry_run) {
		struct sbx_error *e2 = NULL;

		if (svc_e2b_reap(s, call, req->now, req->limit, &e2) < 0)
			svc_warn(call, "%s", e2->msg);
		sbx_error_free(&e2);
	}
	if (svc_root_open(s, call, &root, err) < 0 ||
	    svc_engine_open(s, call, &engine, err) < 0 ||
	    reap_pass_run(&engine, &s->cfg.session, &root, req->now, req->limit,
			  req->dry_run, &res->pass, err) < 0)
		goto out;
	for (size_t i = 0; i < res->pass.nwarnings; i++)
		svc_warn(call, "%s", res->pass.warnings[i]);
	res->doc = pass_json(&res->pass);
	if (rec.err) {
		*err = steal_pointer(&rec.err);
		goto out;
	}
	rc = 0;
out:
	sbx_error_free(&rec.err);
	svc_audit_close(call, rec.au);
	svc_engine_close(s, &engine);
	session_root_close(&root);
	return rc;
}

void svc_reap_res_release(struct svc_reap_res *res)
{
	reap_pass_release(&res->pass);
	json_decref(res->doc);
	res->doc = NULL;
}

int svc_reap_report(const struct svc *s, const struct svc_call *call,
		    const struct svc_reap_report_req *req,
		    struct svc_reap_report_res *res, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	char **warnings = NULL;
	size_t nwarnings = 0;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (svc_root_open(s, call, &root, err) < 0 ||
	    reap_report(&root, req->top, &res->v, &res->n, &warnings,
			&nwarnings, err) < 0)
		goto out;
	for (size_t i = 0; i < nwarnings; i++)
		svc_warn(call, "%s", warnings[i]);
	if (session_budget_images(&root, &res->images, &res->images_bytes,
				  &res->host_free, err) < 0)
		goto out;
	res->overcommitted = res->images_bytes > res->host_free;
	res->doc = json_array();
	for (size_t i = 0; i < res->n; i++) {
		const struct reap_usage *u = &res->v[i];

		json_array_append_new(
		    res->doc,
		    xjson_pack("{s:o, s:o, s:I, s:I, s:o}", "key",
			       xjson_text(u->key), "tenant",
			       text_or_null(u->tenant), "bytes",
			       (json_int_t)u->bytes, "files",
			       (json_int_t)u->files, "disk",
			       u->bytes_allowed
				   ? xjson_pack("{s:I, s:I}", "bytes_allowed",
						(json_int_t)u->bytes_allowed,
						"inodes_allowed",
						(json_int_t)u->files_allowed)
				   : json_null()));
	}
	rc = 0;
out:
	strv_free(warnings, nwarnings);
	session_root_close(&root);
	return rc;
}

void svc_reap_report_res_release(struct svc_reap_report_res *res)
{
	reap_usage_free(res->v, res->n);
	res->v = NULL;
	res->n = 0;
	json_decref(res->doc);
	res->doc = NULL;
}

/*
 * svc-prewarm.c - prewarm as an operation (svc-prewarm.h): the engine and
 * the deployment around prewarm.c, progress handed to the caller's
 * callback, the outcome tallied and reported as JSON.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/xjson.h"
#include "catalog/catalog.h"
#include "engine/engine.h"
#include "svc/svc-prewarm.h"

_Static_assert(SVC_PREWARM_WAITING == PREWARM_WAITING &&
		   SVC_PREWARM_CHECKING == PREWARM_CHECKING &&
		   SVC_PREWARM_PULLING == PREWARM_PULLING &&
		   SVC_PREWARM_BUILDING == PREWARM_BUILDING &&
		   SVC_PREWARM_CACHED == PREWARM_CACHED &&
		   SVC_PREWARM_PULLED == PREWARM_PULLED &&
		   SVC_PREWARM_BUILT == PREWARM_BUILT &&
		   SVC_PREWARM_FAILED == PREWARM_FAILED &&
		   SVC_PREWARM_CANCELLED == PREWARM_CANCELLED,
	       "svc-prewarm.h's states are prewarm.h's");

const char *svc_prewarm_state_name(enum prewarm_state st)
{
	return prewarm_state_name(st);
}

/* prewarm_run's notify: the snapshot, handed on as an UPDATE. */
static void notify(void *ctx, const struct prewarm *p,
		   const struct prewarm_snap *snap,
		   const struct prewarm_event *events, size_t nevents,
		   unsigned long long lost)
{
	const struct svc_prewarm_watch *w = ctx;
	struct svc_prewarm_progress pr = {
	    .phase = SVC_PREWARM_UPDATE,
	    .jobs = p->jobs,
	    .n = p->n,
	    .snap = snap,
	    .events = events,
	    .nevents = nevents,
	    .lost = lost,
	};

	w->progress(w->arg, &pr);
}

static void tell(const struct svc_prewarm_watch *w, enum svc_prewarm_phase ph,
		 const struct prewarm *p, const char *image)
{
	struct svc_prewarm_progress pr = {
	    .phase = ph, .jobs = p->jobs, .n = p->n, .image = image};

	if (w->progress)
		w->progress(w->arg, &pr);
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, xjson_text(v[i]));
	return a;
}

static json_t *report_json(const struct prewarm *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->n; i++) {
		const struct prewarm_job *j = &p->jobs[i];
		json_t *kept = json_array();

		for (size_t k = 0; k < j->nkept; k++)
			json_array_append_new(
			    kept,
			    xjson_pack("{s:o, s:o}", "tag",
				       xjson_text(j->kept[k].tag), "reason",
				       xjson_text(j->kept[k].why)));
		json_array_append_new(
		    arr,
		    xjson_pack(
			"{s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, "
			"s:o, s:o}",
			"alias", j->rt->alias, "kind",
			j->dockerfile ? "built" : "image", "tag", j->tag,
			"result", prewarm_state_name(j->state), "ms",
			(json_int_t)j->ms, "error",
			j->error ? xjson_text(j->error) : json_null(), "step",
			j->failed_step ? xjson_text(j->failed_step)
				       : json_null(),
			"output", strv_json(j->output, j->noutput), "removed",
			strv_json(j->removed, j->nremoved), "kept", kept));
	}
	return arr;
}

/* The outcome as a whole: failures, their kind, a cancel. */
static void tally(const struct svc_call *call, struct svc_prewarm_res *res)
{
	res->cancelled = svc_cancelled(call);
	res->failed_kind = SBX_E_REFUSED;
	for (size_t i = 0; i < res->n; i++) {
		const struct prewarm_job *j = &res->jobs[i];

		if (j->state == PREWARM_CANCELLED)
			res->cancelled = true;
		if (j->state != PREWARM_FAILED)
			continue;
		res->failed++;
		if (j->error_kind == SBX_E_UNAVAILABLE ||
		    j->error_kind == SBX_E_TIMEOUT ||
		    j->error_kind == SBX_E_INTERNAL)
			res->failed_kind = SBX_E_UNAVAILABLE;
	}
}

/* One build or pull per CPU, up to the bound. */
static unsigned default_jobs(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		return 1;
	return cpus > SVC_PREWARM_JOBS_MAX ? SVC_PREWARM_JOBS_MAX
					   : (unsigned)cpus;
}

void svc_prewarm_on(const struct svc *s, const struct svc_call *call,
		    const struct engine *e, const struct svc_prewarm_req *req,
		    const char *image, struct svc_prewarm_res *res)
{
	struct prewarm *p = xcalloc(1, sizeof(*p));

	memset(res, 0, sizeof(*res));
	prewarm_init(p);
	p->deployment = s->cfg.deployment;
	for (size_t i = 0; i < req->n; i++)
		prewarm_add(p, req->runtimes[i], &s->cfg.recipe);
	p->concurrency = req->jobs ? req->jobs : default_jobs();
	p->force = req->force;
	p->timeout_ms =
	    (req->timeout_s ? req->timeout_s : PREWARM_TIMEOUT_SECONDS) * 1000L;
	p->engine = e;
	p->cancel = call ? call->cancel : NULL;
	if (req->watch.progress) {
		p->notify = notify;
		p->ctx = (void *)&req->watch;
		p->tick_ms = req->watch.tick_ms;
	}
	tell(&req->watch, SVC_PREWARM_START, p, image);
	prewarm_run(p);
	res->run = p;
	res->jobs = p->jobs;
	res->n = p->n;
	tally(call, res);
	res->doc = report_json(p);
	tell(&req->watch, SVC_PREWARM_DONE, p, image);
}

int svc_prewarm(const struct svc *s, const struct svc_call *call,
		const struct svc_prewarm_req *req, struct svc_prewarm_res *res,
		struct sbx_error **err)
{
	struct engine engine = ENGINE_INIT;

	memset(res, 0, sizeof(*res));
	/* Refused before the engine is asked (docs/prewarm.md). */
	if (svc_config_check(s->cfg.deployment_err, err) < 0)
		return -1;
	if (svc_engine_open(s, call, &engine, err) < 0) {
		svc_engine_close(s, &engine);
		return -1;
	}
	svc_prewarm_on(s, call, &engine, req, NULL, res);
	svc_engine_close(s, &engine);
	return 0;
}

void svc_prewarm_res_release(struct svc_prewarm_res *res)
{
	if (res->run) {
		prewarm_release(res->run);
		free(res->run);
	}
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

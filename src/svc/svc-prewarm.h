/*
 * svc-prewarm.h - prewarm as an operation (svc.h, engine/prewarm.h): build
 * or pull the runtimes named, several at a time, telling a progress
 * callback how it goes; the result per runtime and the JSON report.
 *
 * The progress and the result are prewarm's own structures (prewarm.h),
 * read-only to the caller: a job's fixed fields (rt, tag, dockerfile)
 * from the start, its outcome (state, ms, error, failed_step, output,
 * removed, kept) once the run is over; what changes while it runs comes
 * as snapshots.  Drawing them (a live display, plain lines) is the
 * caller's.
 *
 * Thread rule: as svc.h.  The callback runs on the calling thread only,
 * never under the lock prewarm's workers need, so one that blocks (a
 * terminal that does not drain) delays only itself; it must not call
 * back into the operation.
 */
#ifndef SBX_SVC_PREWARM_H
#define SBX_SVC_PREWARM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "engine/prewarm.h"
#include "svc/svc.h"

struct runtime;

/* At most this many builds or pulls at once. */
#define SVC_PREWARM_JOBS_MAX 64

/*
 * A prewarm's jobs, their live fields and events, and a job's state,
 * under svc's names (prewarm.h's; svc-prewarm.c checks the values are
 * its): what the command line uses, so that it names nothing of engine/
 * (tests/layers.py).
 */
typedef struct prewarm_job svc_prewarm_job;
typedef struct prewarm_snap svc_prewarm_snap;
typedef struct prewarm_event svc_prewarm_event;
typedef enum prewarm_state svc_prewarm_state;
#define SVC_PREWARM_WAITING ((svc_prewarm_state)0)
#define SVC_PREWARM_CHECKING ((svc_prewarm_state)1)
#define SVC_PREWARM_PULLING ((svc_prewarm_state)2)
#define SVC_PREWARM_BUILDING ((svc_prewarm_state)3)
#define SVC_PREWARM_PUSHING ((svc_prewarm_state)4)
#define SVC_PREWARM_CACHED ((svc_prewarm_state)5)
#define SVC_PREWARM_PULLED ((svc_prewarm_state)6)
#define SVC_PREWARM_BUILT ((svc_prewarm_state)7)
#define SVC_PREWARM_PUSHED ((svc_prewarm_state)8)
#define SVC_PREWARM_PRESENT ((svc_prewarm_state)9)
#define SVC_PREWARM_FAILED ((svc_prewarm_state)10)
#define SVC_PREWARM_CANCELLED ((svc_prewarm_state)11)
/* Whether the state is an outcome (cached ... cancelled). */
static inline bool svc_prewarm_done(svc_prewarm_state s)
{
	return prewarm_done(s);
}

enum svc_prewarm_phase {
	SVC_PREWARM_START,  /* before any work: jobs[] (fixed fields), image */
	SVC_PREWARM_UPDATE, /* a worker reported, or a tick: snap, events */
	SVC_PREWARM_DONE,   /* every job has its outcome: jobs[] whole */
};

/* What a progress callback hears. */
struct svc_prewarm_progress {
	enum svc_prewarm_phase phase;
	const struct prewarm_job *jobs; /* n, in the request's order */
	size_t n;
	/* UPDATE: snap[i], the live fields of jobs[i]; the events since the
	 * last update, and how many were dropped because the callback fell
	 * behind (snap still has every job's latest state). */
	const struct prewarm_snap *snap;
	const struct prewarm_event *events;
	size_t nevents;
	unsigned long long lost;
	/* START of a prewarm a session open makes: the image the engine
	 * lacks (else NULL). */
	const char *image;
};

struct svc_prewarm_watch {
	void (*progress)(void *arg, const struct svc_prewarm_progress *pr);
	void *arg;
	long tick_ms; /* an UPDATE at least this often; 0: on news only */
};

struct svc_prewarm_req {
	/* The runtimes, borrowed from their catalogue, which outlives the
	 * result. */
	const struct runtime *const *runtimes;
	size_t n;
	unsigned jobs;	/* at once; 0: one per CPU (SVC_PREWARM_JOBS_MAX) */
	bool force;	/* build (without the layer cache) and pull even
			   what is present */
	long timeout_s; /* per build or pull; 0: PREWARM_TIMEOUT_SECONDS */
	/* --push REGISTRY ("HOST:PORT", checked here): push every built
	 * runtime there, and pull none from SBXCAT_REGISTRY; NULL: pull
	 * from SBXCAT_REGISTRY when it is set (docs/prewarm.md). */
	const char *push;
	struct svc_prewarm_watch watch; /* progress NULL: none */
};

struct svc_prewarm_res {
	const struct prewarm_job *jobs; /* n: each runtime's outcome */
	size_t n;
	size_t failed; /* jobs that failed */
	/* The call's cancel stopped it (a job cancelled, or the flag set by
	 * the end). */
	bool cancelled;
	/* With failed: unavailable when a runtime failed for want of what
	 * serves it (its kind unavailable, timed out or internal: the
	 * engine, the disk), else refused (a build that failed, an image
	 * that cannot be pulled). */
	enum sbx_kind failed_kind;
	/* [{alias, kind, tag, result, ms, error, step, output, removed,
	 * kept, notes}, ...], in the request's order. */
	json_t *doc;
	struct prewarm *run; /* private */
};

/*
 * Prewarm the runtimes of req: the deployment (SBXCAT_DEPLOYMENT_ID),
 * the registry (SBXCAT_REGISTRY, SBXCAT_REGISTRY_AUTH_FILE, req->push)
 * and the engine configured, the engine's API negotiated, then every
 * runtime worked through; one runtime's failure never stops the others.
 * Returns 0 once every runtime has its outcome, failed or cancelled ones
 * included (res says so); -1 when it could not start (the deployment,
 * the registry's settings or credentials, the engine; cancelled: errnum
 * ECANCELED).  The credentials go into the engine's X-Registry-Auth
 * header and nowhere else: no message names more than the file.
 */
int svc_prewarm(const struct svc *s, const struct svc_call *call,
		const struct svc_prewarm_req *req, struct svc_prewarm_res *res,
		struct sbx_error **err);
void svc_prewarm_res_release(struct svc_prewarm_res *res);

/* The same on an engine already negotiated (session open's), image what
 * START names.  Never fails. */
struct engine;
void svc_prewarm_on(const struct svc *s, const struct svc_call *call,
		    const struct engine *e, const struct svc_prewarm_req *req,
		    const char *image, struct svc_prewarm_res *res);

/* "cached", "built", ...: the words of the report (prewarm.h). */
const char *svc_prewarm_state_name(enum prewarm_state st);

#endif

/*
 * prewarm.h - build or pull what the catalogue names, several at a time
 * (brief section 6); never prints.
 *
 * A struct prewarm holds one job per runtime, in catalogue order.
 * prewarm_run() works through them on up to `concurrency` threads, each
 * with its own copy of the engine client, and returns when every job has
 * an outcome: one runtime's failure never stops the others, and a cancel
 * (*cancel non-zero) aborts the calls in flight and leaves the jobs not
 * yet started as cancelled.
 *
 * Progress: notify, when set, is called from the thread in prewarm_run()
 * only, without any lock held, whenever workers reported something (and
 * every tick_ms when set).  It gets a snapshot of every job's live fields
 * (snap[i] for jobs[i]) and the events since its last call (a job's state
 * or step changed), copied under the lock: so a display that blocks (a
 * paused terminal, a full pipe) delays only the display, never a worker,
 * a build or the stall detector.  It may read the jobs' fixed fields (rt,
 * tag, dockerfile) but must not call into prewarm.  Job fields marked
 * "live" change while the run goes on: read the snapshot instead; they
 * are stable after prewarm_run().
 *
 * Deployments: several deployments (dev and prod checkouts, sandbox uids)
 * may share one engine and build the same aliases.  An image is built
 * with the label io.sbxcat.deployment=ID, and each deployment marks the
 * content tags it uses with a claim tag "sbxcat/ALIAS:HASH.ID" beside the
 * content tag "sbxcat/ALIAS:HASH"; the sweep of superseded tags removes a
 * content tag only when no other deployment claims it (docs/prewarm.md).
 *
 * Thread rule: a struct prewarm belongs to the thread that runs it; the
 * workers prewarm_run() starts and that thread share the jobs' live
 * fields under the lock; *cancel is a C11 atomic any thread may set (a
 * call's cancel flag, the signal flag on the command line).
 *
 * Ownership: the jobs borrow their runtimes from the catalogue, which must
 * outlive the struct prewarm; everything else is owned and freed by
 * prewarm_release().
 */
#ifndef SBX_PREWARM_H
#define SBX_PREWARM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "catalog/deployment.h"
#include "engine/engine.h"

struct runtime;
struct recipe_opts;
struct sbx_error;

/* A build or pull has an hour; a catalogue's whole install fits in one. */
#define PREWARM_TIMEOUT_SECONDS 3600
/* Events kept between two calls of notify; more are counted (lost). */
#define PREWARM_EVENTS_MAX 256

enum prewarm_state {
	PREWARM_WAITING,
	PREWARM_CHECKING,
	PREWARM_PULLING,
	PREWARM_BUILDING,
	PREWARM_PUSHING,
	/* outcomes */
	PREWARM_CACHED,
	PREWARM_PULLED,
	PREWARM_BUILT,
	PREWARM_PUSHED,	 /* --push: the registry has it now */
	PREWARM_PRESENT, /* --push: the registry had it already */
	PREWARM_FAILED,
	PREWARM_CANCELLED,
};

static inline bool prewarm_done(enum prewarm_state s)
{
	return s >= PREWARM_CACHED;
}

/* "cached", "built", ...: the words of the report. */
const char *prewarm_state_name(enum prewarm_state s);

struct prewarm_kept {
	char *tag, *why;
};

struct prewarm_job {
	const struct runtime *rt; /* borrowed */
	char *tag;		  /* the content tag, or the image */
	char *claim;		  /* this deployment's claim tag, or NULL */
	char *dockerfile;	  /* NULL for an image entry */
	size_t dflen;

	enum prewarm_state state;	   /* live */
	int step, nsteps;		   /* live */
	char step_text[ENGINE_TAIL_WIDTH]; /* live */
	char current[ENGINE_TAIL_WIDTH];   /* live: the last output line */
	long long started_ms; /* live; monotonic, 0 until started */

	long long ms; /* how long it took, in milliseconds */
	char *error;  /* why it failed or was cancelled, else NULL */
	enum sbx_kind error_kind;
	char *failed_step; /* "step 3/4 : RUN ...", or NULL */
	char **output;	   /* the failing step's last lines */
	size_t noutput;
	char **removed; /* superseded tags removed */
	size_t nremoved, aremoved;
	struct prewarm_kept *kept; /* superseded tags kept, and why */
	size_t nkept, akept;
	/* What the registry had to do with it: "pulled from R", "not in R,
	 * built", "already in R as REF", ... */
	char **notes;
	size_t nnotes, anotes;
};

/* A job's live fields, as notify sees them. */
struct prewarm_snap {
	enum prewarm_state state;
	int step, nsteps;
	char step_text[ENGINE_TAIL_WIDTH];
	char current[ENGINE_TAIL_WIDTH];
	long long started_ms;
	long long ms;
};

/* A job changed state or build step. */
struct prewarm_event {
	size_t job;
	enum prewarm_state state;
	int step, nsteps;
	char step_text[ENGINE_TAIL_WIDTH];
};

struct prewarm;
/* lost: events dropped since the last call because the queue was full
 * (the display fell behind); snap still has every job's latest state. */
typedef void (*prewarm_notify_fn)(void *ctx, const struct prewarm *p,
				  const struct prewarm_snap *snap,
				  const struct prewarm_event *events,
				  size_t nevents, unsigned long long lost);

struct prewarm {
	struct prewarm_job *jobs;
	size_t n, alloc;

	unsigned concurrency;	     /* at least 1 */
	bool force;		     /* build (without the layer cache) and pull
					even what is present */
	long timeout_ms;	     /* per build or pull; 0: none */
	const struct engine *engine; /* negotiated; copied per worker */
	const atomic_int *cancel;    /* may be NULL */
	const char *deployment; /* checked id; DEPLOYMENT_DEFAULT */
	prewarm_notify_fn notify;
	void *ctx;
	long tick_ms; /* 0: no ticks */
	/*
	 * Registries (docs/prewarm.md "Through a registry"), each "HOST:PORT"
	 * or NULL.  registry: a built runtime the engine lacks is pulled as
	 * REGISTRY/sbxcat/ALIAS:HASH and tagged as its content tag, and built
	 * only when the registry does not have it.  push: every built
	 * runtime, once present (cached or built), is pushed as
	 * PUSH/sbxcat/ALIAS:HASH unless the registry has that tag already
	 * (--force: pushed anyway).  auth: the X-Registry-Auth value for
	 * both (NULL: none; it may hold a password, and goes nowhere else);
	 * idle_ms: how long a transfer's stream may be silent (0: no bound).
	 * All borrowed.
	 */
	const char *registry, *push, *auth;
	long idle_ms;

	pthread_mutex_t lock; /* private from here on */
	pthread_cond_t cond;  /* on CLOCK_MONOTONIC */
	size_t next, finished;
	struct prewarm_event events[PREWARM_EVENTS_MAX];
	size_t nevents;
	unsigned long long events_lost;
	char **tags; /* the built runtimes' repositories' tags at the start */
	size_t ntags;
	bool tags_known;
};

void prewarm_init(struct prewarm *p);
/* Add a runtime; set p->deployment first. */
void prewarm_add(struct prewarm *p, const struct runtime *rt,
		 const struct recipe_opts *o);
void prewarm_run(struct prewarm *p);
void prewarm_release(struct prewarm *p);

#endif

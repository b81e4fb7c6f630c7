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
 * Progress: notify, when set, is called with the prewarm lock held, from a
 * worker when a job changes state or build step, and from the thread in
 * prewarm_run() every tick_ms with job NULL.  It may read any job but must
 * not call into prewarm.  Job fields marked "live" change while the run
 * goes on and are only stable inside notify or after prewarm_run().
 *
 * Ownership: the jobs borrow their runtimes from the catalogue, which must
 * outlive the struct prewarm; everything else is owned and freed by
 * prewarm_release().
 */
#ifndef SBX_PREWARM_H
#define SBX_PREWARM_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine.h"

struct runtime;
struct recipe_opts;

/* A build or pull has an hour; a catalogue's whole install fits in one. */
#define PREWARM_TIMEOUT_SECONDS 3600

enum prewarm_state {
	PREWARM_WAITING,
	PREWARM_CHECKING,
	PREWARM_PULLING,
	PREWARM_BUILDING,
	/* outcomes */
	PREWARM_CACHED,
	PREWARM_PULLED,
	PREWARM_BUILT,
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
	char *dockerfile;	  /* NULL for an image entry */
	size_t dflen;

	enum prewarm_state state;	   /* live */
	int step, nsteps;		   /* live */
	char step_text[ENGINE_TAIL_WIDTH]; /* live */
	char current[ENGINE_TAIL_WIDTH];   /* live: the last output line */
	long long started_ms;		   /* monotonic; 0 until started */

	double seconds;
	char *error; /* why it failed or was cancelled, else NULL */
	int error_status;
	char *failed_step; /* "step 3/4 : RUN ...", or NULL */
	char **output;	   /* the failing step's last lines */
	size_t noutput;
	char **removed; /* superseded tags removed */
	size_t nremoved, aremoved;
	struct prewarm_kept *kept; /* superseded tags kept, and why */
	size_t nkept, akept;
};

struct prewarm;
typedef void (*prewarm_notify_fn)(void *ctx, const struct prewarm *p,
				  const struct prewarm_job *job);

struct prewarm {
	struct prewarm_job *jobs;
	size_t n, alloc;

	unsigned concurrency;	     /* at least 1 */
	bool force;		     /* build (without the layer cache) and pull
					even what is present */
	long timeout_ms;	     /* per build or pull; 0: none */
	const struct engine *engine; /* negotiated; copied per worker */
	const volatile sig_atomic_t *cancel;
	prewarm_notify_fn notify;
	void *ctx;
	long tick_ms; /* 0: no ticks */

	pthread_mutex_t lock; /* private from here on */
	pthread_cond_t cond;
	size_t next, finished;
	char **tags; /* the built runtimes' repositories' tags at the start */
	size_t ntags;
	bool tags_known;
};

void prewarm_init(struct prewarm *p);
void prewarm_add(struct prewarm *p, const struct runtime *rt,
		 const struct recipe_opts *o);
void prewarm_run(struct prewarm *p);
void prewarm_release(struct prewarm *p);

#endif

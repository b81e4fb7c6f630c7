/*
 * svc-pool.h - the warm pool as an operation (svc.h; session.h's pool,
 * docs/sessions.md): tidy it and fill it.
 *
 * svc_pool_fill first tidies: the entries of runtimes SBXCAT_WARM_POOL no
 * longer names, or of tags no longer current in cat (a catalogue
 * change), are taken out of the pool and their containers and workspaces
 * removed; pooled containers and workspaces that nobody holds (no entry,
 * no reservation, no record naming them: a crash between steps) and
 * older than SVC_POOL_GRACE seconds are removed.  Then it fills each
 * runtime's pool to its count, one container at a time, each counted
 * toward the host's ceiling and reserved under the quota lock like an
 * open, and made outside it; at the host's ceiling it stops.  A runtime
 * whose image is not in the engine is said and left empty (the pool
 * never builds).  What goes wrong with one container goes to call->warn;
 * -1 only when the pool could not be looked at (the root, the engine,
 * the lock).  Sessions are never touched: a claimed container is a
 * session's (its record names it), never the pool's.
 *
 * Thread rule: as svc.h; fills in several threads or processes are
 * ordered by the quota lock.
 */
#ifndef SBX_SVC_POOL_H
#define SBX_SVC_POOL_H

#include <jansson.h>
#include <stdbool.h>

#include "svc/svc.h"

struct catalog;

#define SVC_POOL_GRACE 120

struct svc_pool_res {
	unsigned made;	  /* containers made ready */
	unsigned drained; /* taken out for a tag no longer current */
	unsigned swept;	  /* containers and workspaces nobody held */
	unsigned missing; /* runtimes without their image */
	bool full;	  /* the host's ceiling stopped the fill */
};
int svc_pool_fill(const struct svc *s, const struct svc_call *call,
		  const struct catalog *cat, struct svc_pool_res *res,
		  struct sbx_error **err);

/* The pool's containers ready now, {runtime: count} (new reference). */
int svc_pool_ready(const struct svc *s, const struct svc_call *call,
		   json_t **by_runtime, struct sbx_error **err);

#endif

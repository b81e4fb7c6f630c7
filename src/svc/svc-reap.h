/*
 * svc-reap.h - the lifetimes as operations (svc.h, session/reap.h): one
 * pass of the reaper, each action it takes recorded as it ends; and the
 * largest workspaces.
 *
 * Thread rule: as svc.h: calls share nothing; one pass at a time per host
 * is the quota lock's business (reap.h), not the caller's.
 */
#ifndef SBX_SVC_REAP_H
#define SBX_SVC_REAP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "session/reap.h"
#include "svc/svc.h"

/*
 * A pass's limits when none is given, its actions and their kinds, under
 * svc's names (reap.h's; svc-reap.c checks the values are its): what the
 * command line and the service use, so that they name nothing of
 * session/ (tests/layers.py).
 */
enum {
	SVC_REAP_LIMIT_DEFAULT = REAP_LIMIT_DEFAULT,
	SVC_REAP_REPORT_DEFAULT = REAP_REPORT_DEFAULT,
};
typedef struct reap_action svc_reap_action;
typedef struct reap_pass svc_reap_pass;
typedef enum reap_what svc_reap_what;
#define SVC_REAP_PAUSE ((svc_reap_what)0)
#define SVC_REAP_STOP ((svc_reap_what)1)
#define SVC_REAP_REMOVE ((svc_reap_what)2)
#define SVC_REAP_DELETE ((svc_reap_what)3)
#define SVC_REAP_ORPHAN ((svc_reap_what)4)
#define SVC_REAP_STUCK ((svc_reap_what)5)
#define SVC_REAP_RELEASE ((svc_reap_what)6)
#define SVC_REAP_CLOSED ((svc_reap_what)7)

struct svc_reap_req {
	long long now; /* Unix seconds every age is measured from */
	size_t limit;  /* at most this many actions (REAP_LIMIT_DEFAULT) */
	bool dry_run;  /* decide, take nothing, record nothing */
};
struct svc_reap_res {
	struct reap_pass pass; /* what was done, and why (reap.h) */
	json_t *doc;	       /* {now, dry_run, actions: [...], left} */
};
/*
 * One pass.  Not dry: a recorder first (nothing is reaped that could not
 * be recorded), then every action taken or tried gets its row as it ends;
 * a row that cannot be written stops the pass (*err, res->pass holding
 * what was done).  The pass's warnings go to call->warn.  -1 when the pass
 * could not look (the configuration, the root, the engine, the lock).
 */
int svc_reap(const struct svc *s, const struct svc_call *call,
	     const struct svc_reap_req *req, struct svc_reap_res *res,
	     struct sbx_error **err);
void svc_reap_res_release(struct svc_reap_res *res);

struct svc_reap_report_req {
	size_t top; /* REAP_REPORT_DEFAULT */
};
struct svc_reap_report_res {
	struct reap_usage *v; /* largest first */
	size_t n;
	json_t *doc; /* [{key, tenant, bytes, files, disk}, ...] */
	/* The disk budgets' images: how many, their apparent sizes summed,
	 * and the host's free bytes on ROOT's file system; overcommitted
	 * when they promise more than it has. */
	unsigned images;
	unsigned long long images_bytes, host_free;
	bool overcommitted;
};
/* The largest workspaces (no engine, no lock, no row); problems with one
 * go to call->warn. */
int svc_reap_report(const struct svc *s, const struct svc_call *call,
		    const struct svc_reap_report_req *req,
		    struct svc_reap_report_res *res, struct sbx_error **err);
void svc_reap_report_res_release(struct svc_reap_report_res *res);

#endif

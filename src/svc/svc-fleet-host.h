/*
 * svc-fleet-host.h - a serving host as a member of the fleet
 * (docs/fleet.md): its settings, its registration and lease, placement
 * of a new session, where a session lives, reconciliation with the
 * table, and a request forwarded to the host a session lives on.  The
 * administrator's commands are svc-fleet.h's.
 *
 * Settings (read by svc_fleet_config_load from the environment):
 *   SBXCAT_FLEET             this host's name: the wire's name pattern;
 *                            unset: no fleet (one host, as ever)
 *   SBXCAT_FLEET_URL         http://HOST:PORT its peers reach it at
 *   SBXCAT_FLEET_LEASE       the lease, seconds (3 to 300; 6)
 *   SBXCAT_FLEET_GIVE_UP     seconds after a host's lease lapsed before
 *                            the fleet gives its sessions up (600)
 *   SBXCAT_FLEET_DRAIN_IDLE  a draining host hibernates a session idle
 *                            this long, seconds (30)
 *   SBXCAT_FLEET_FORWARD_TIMEOUT  a forwarded request's bound, seconds
 *                            (1 to 86400; 3700: an exec's longest)
 *
 * Thread rule: a struct svc_fleet is shared by the service's threads:
 * every function may be called from any number of them at once (its
 * database connections are a pool; its caches and easy handles under
 * its lock), but svc_fleet_join and svc_fleet_leave by one.
 */
#ifndef SBX_SVC_FLEET_HOST_H
#define SBX_SVC_FLEET_HOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "audit/fleetdb.h"
#include "svc/svc.h"

struct sbx_env;
struct sbx_error;

struct svc_fleet_config {
	char *name; /* NULL: no fleet */
	char *url;
	unsigned lease_s, give_up_s, drain_idle_s, forward_timeout_s;
};
/* 0, or -1 with *err naming the variable (the caller stops: exit 2). */
int svc_fleet_config_load(struct svc_fleet_config *c, const struct sbx_env *env,
			  struct sbx_error **err);
void svc_fleet_config_release(struct svc_fleet_config *c);

/* Where a session lives (fleetdb.h's). */
typedef struct fleetdb_where svc_fleet_where;
enum { SVC_FLEET_NAME_MAX = FLEET_NAME_MAX };

struct svc_fleet;
/*
 * Join: the fleet's database reached (the audit's: s's), the host
 * registered.  A live row of the same name held by another process is
 * waited out for up to one lease (a restart right after a crash), then
 * refused (SBX_E_CONFLICT).  *first: the name is new to the fleet.
 */
int svc_fleet_join(const struct svc *s, const struct svc_fleet_config *c,
		   unsigned capacity, struct svc_fleet **f, bool *first,
		   struct sbx_error **err);
/* The lease renewed with the host's load (resident sessions, the pool
 * as {"RUNTIME": ready}); *draining the row's flag.  Registers again
 * when the row was lost (the lease lapsed and a forget removed it). */
int svc_fleet_renew(struct svc_fleet *f, unsigned capacity, unsigned resident,
		    const char *pool_json, bool *draining,
		    struct sbx_error **err);
/* Leave (the lease ended now) and free: NULL does nothing. */
void svc_fleet_leave(struct svc_fleet *f);
const char *svc_fleet_name(const struct svc_fleet *f);
const struct svc_fleet_config *svc_fleet_config(const struct svc_fleet *f);

/* Placement of id (fleetdb_place): *w the host, *placed whether the row
 * is new. */
int svc_fleet_place(struct svc_fleet *f, const char *id, const char *tenant,
		    unsigned max_per_tenant, const char *runtime,
		    const char *const *exclude, size_t nexclude,
		    svc_fleet_where *w, bool *placed, struct sbx_error **err);
/* id's row on this host: open (with its tokens' hashes), kept, or taken
 * back (on the host named; NULL: this one). */
int svc_fleet_opened(struct svc_fleet *f, const char *id,
		     const char *const *tokens, size_t ntokens,
		     struct sbx_error **err);
int svc_fleet_kept(struct svc_fleet *f, const char *id, struct sbx_error **err);
int svc_fleet_unplace(struct svc_fleet *f, const char *id, const char *host,
		      struct sbx_error **err);
/* Where id lives: 1 and *w, 0 none; a positive answer is cached for a
 * second or two (a session moves only when its host died). */
int svc_fleet_where_is(struct svc_fleet *f, const char *id, svc_fleet_where *w,
		       struct sbx_error **err);
/* Forget what the cache knows of id (its session closed, or its host did
 * not answer). */
void svc_fleet_uncache(struct svc_fleet *f, const char *id);
/* The live hosts but this one, for a list's fan-out: names and urls
 * (malloc'd, svc_fleet_peers_free). */
struct svc_fleet_peer {
	char name[FLEET_NAME_MAX + 1];
	char url[FLEET_URL_MAX + 1];
};
int svc_fleet_peers(struct svc_fleet *f, struct svc_fleet_peer **v, size_t *n,
		    struct sbx_error **err);

/*
 * Reconcile (the reaper's, at start and after each pass): the wire
 * sessions open on this host against the table (fleetdb_reconcile);
 * adopt (the host is new to the fleet) gives those with no row one;
 * else a session the fleet gave up on (no row, or another host's) is
 * closed here (svc_session_close: its workspace kept; its row op close,
 * by call's agent, the service's "sbxcat-fleet").  *closed: how many.
 */
int svc_fleet_reconcile(struct svc_fleet *f, const struct svc *s,
			const struct svc_call *call, bool adopt, size_t *closed,
			struct sbx_error **err);
/* The rows of hosts dead longer than give_up_s deleted. */
int svc_fleet_give_up(struct svc_fleet *f, size_t *n, struct sbx_error **err);

/*
 * A request forwarded to a peer (svc-forward.c): method, path (with its
 * query) and body to url, with the client's headers (each "Name: value";
 * hop-by-hop ones and Host's port dropped by the caller), bounded by the
 * fleet's forward timeout and the call's cancel flag.  The answer comes
 * to head (once: status and headers, "Name: value") and data (the body
 * as it comes); either returning -1 stops it.  -1 with *err: the peer
 * could not be reached (SBX_E_UNAVAILABLE, before head: nothing was
 * answered), timed out, or the caller stopped it.  *answered: head was
 * called.
 */
struct svc_forward_req {
	const char *url, *method, *path;
	const char *const *headers;
	size_t nheaders;
	const char *body;
	size_t body_len;
	const atomic_int *cancel;
	unsigned timeout_s; /* 0: the fleet's forward timeout */
	int (*head)(void *arg, int status, const char *const *headers,
		    size_t n);
	int (*data)(void *arg, const void *buf, size_t len);
	void *arg;
};
int svc_fleet_forward(struct svc_fleet *f, const struct svc_forward_req *req,
		      bool *answered, struct sbx_error **err);

/* What a draining host does each lease: sessions idle for drain_idle_s
 * hibernated (their row: op reap, detail "hibernated: its host
 * drains"), at most limit of them.  *n: how many. */
int svc_fleet_drain_pass(const struct svc *s, const struct svc_call *call,
			 unsigned idle_s, size_t limit, size_t *n,
			 struct sbx_error **err);

#endif

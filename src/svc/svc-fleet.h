/*
 * svc-fleet.h - the operator's verbs over the fleet's tables (fleetdb.h,
 * docs/fleet.md "Commands"): the hosts listed (ls), a host drained or
 * undrained (drain), a host gone for good forgotten with its sessions'
 * rows (forget).
 *
 * Each call connects to the audit's database (the configuration's, with
 * the caller's --db; the service's pool when it has one) for itself and
 * gives it back before it returns.  A host is named by the wire's pattern
 * ([A-Za-z0-9][A-Za-z0-9._-]{0,63}): anything else is invalid before the
 * database is asked.  A host the fleet does not have is SBX_E_NOT_FOUND
 * with a hint, "did you mean 'NAME'?" over the fleet's names, or the
 * names themselves.  A database without the fleet's tables (migration 6)
 * is SBX_E_UNAVAILABLE, svc_fleet_needs_migrate; none configured as the
 * audit's verbs say (svc_audit_needs_database).
 *
 * None writes an audit row: the audit records a session's operations,
 * each an op of the CHECK on sandbox_operations.op, and has none for the
 * fleet's administration (nor for its own: migrate, sweep).
 *
 * Ownership: res->doc and res->hosts are the caller's, released by
 * svc_fleet_*_res_release; a call that fails leaves res with nothing to
 * release (releasing it is harmless).
 *
 * Thread rule: as svc.h: calls share nothing; any number may run at once.
 */
#ifndef SBX_SVC_FLEET_H
#define SBX_SVC_FLEET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "audit/fleetdb.h"
#include "svc/svc.h"

struct sbx_error;

/* A host's row as fleetdb_hosts reads it (name, url, capacity, resident,
 * placed, pool_json, draining, alive, lease_left, epoch, renewed_at). */
typedef struct fleetdb_host svc_fleet_host;

/* Whether err is a database without the fleet's tables. */
bool svc_fleet_needs_migrate(const struct sbx_error *err);

/* A host's state in one word: "dead" (its lease is past), else
 * "draining" or "alive".  Static. */
const char *svc_fleet_state(const svc_fleet_host *h);

/*
 * ls: every host, by name, with what the database computes of it (alive,
 * its lease's seconds left, the sessions placed on it).  doc: [{"name",
 * "url", "state", "alive", "draining", "lease_left_ms" (milliseconds,
 * negative: lapsed that long ago), "capacity", "resident", "placed", "pool"
 * (its object: {"RUNTIME": ready}), "epoch", "renewed_at"}].
 */
struct svc_fleet_ls_res {
	svc_fleet_host *hosts;
	size_t n;
	json_t *doc;
};
int svc_fleet_ls(const struct svc *s, const struct svc_call *call,
		 struct svc_fleet_ls_res *res, struct sbx_error **err);
void svc_fleet_ls_res_release(struct svc_fleet_ls_res *res);

/* drain (on) or undrain: placement skips a draining host at once; the
 * flag outlives the host's restarts.  doc {"host", "draining"}. */
struct svc_fleet_drain_req {
	const char *host;
	bool on;
};
struct svc_fleet_drain_res {
	json_t *doc;
};
int svc_fleet_drain(const struct svc *s, const struct svc_call *call,
		    const struct svc_fleet_drain_req *req,
		    struct svc_fleet_drain_res *res, struct sbx_error **err);
void svc_fleet_drain_res_release(struct svc_fleet_drain_res *res);

/* forget: the host's row and its sessions' rows deleted; while its lease
 * runs SBX_E_CONFLICT unless force.  doc {"host", "forgotten": true,
 * "sessions": the rows that went with it}. */
struct svc_fleet_forget_req {
	const char *host;
	bool force;
};
struct svc_fleet_forget_res {
	size_t sessions;
	json_t *doc;
};
int svc_fleet_forget(const struct svc *s, const struct svc_call *call,
		     const struct svc_fleet_forget_req *req,
		     struct svc_fleet_forget_res *res, struct sbx_error **err);
void svc_fleet_forget_res_release(struct svc_fleet_forget_res *res);

#endif

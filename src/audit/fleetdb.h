/*
 * fleetdb.h - the fleet's tables in the shared database (migration 6,
 * audit-schema.c; docs/fleet.md): the hosts that serve, each with a
 * lease, and the host each wire session lives on.
 *
 * A host registers (fleetdb_register) and renews its lease every third of
 * it (fleetdb_renew); a host whose lease is past is not alive: placement
 * skips it and its sessions answer 503.  Placement (fleetdb_place) is one
 * transaction: the tenant's advisory lock, its fleet-wide count against
 * the ceiling, the best live host with room, the row inserted 'placing';
 * the host's open then makes it 'open' (fleetdb_opened) or takes it back
 * (fleetdb_forget).  A session's rows name hosts by name; a host reaches
 * another at its url.
 *
 * Every function takes a connection of the caller's (auditdb.h) and runs
 * its statements there; -1 with *err (SBX_E_UNAVAILABLE: the database)
 * unless it says otherwise.
 *
 * Thread rule: as auditdb.h (one connection, one thread at a time).
 */
#ifndef SBX_FLEETDB_H
#define SBX_FLEETDB_H

#include <stdbool.h>
#include <stddef.h>

struct auditdb;
struct sbx_error;

#define FLEET_NAME_MAX 64
#define FLEET_URL_MAX 256
/* A session's token hashes a row keeps (SESSION_WIRE_TOKENS). */
#define FLEET_TOKENS_MAX 8

/* What a host says of itself at each renewal. */
struct fleetdb_self {
	const char *name;      /* the wire's name pattern */
	const char *url;       /* http://HOST:PORT peers reach it at */
	const char *instance;  /* this process's (random hex) */
	unsigned capacity;     /* its ceiling of sessions (max_sessions) */
	unsigned resident;     /* sessions open on it now (its own count) */
	const char *pool_json; /* {"RUNTIME": ready, ...} (NULL: {}) */
	unsigned lease_s;      /* the lease's length */
};

/*
 * Register self: the row made, or taken over when its lease is past or
 * it is this instance's already.  *first: the name was new to the fleet
 * (its local sessions are to be adopted, not reconciled away);
 * *draining: the row's flag (a drain outlives a restart).  A live row of
 * another instance: -1 SBX_E_CONFLICT naming the host and its url (two
 * processes would serve one name); *retry_ms, when not NULL, how long
 * that lease still runs.
 */
int fleetdb_register(struct auditdb *db, const struct fleetdb_self *self,
		     bool *first, bool *draining, long long *retry_ms,
		     struct sbx_error **err);
/* Renew the lease and the load: *draining as above.  -1 SBX_E_CONFLICT
 * when the row is gone or another instance's (the host was forgotten,
 * or its name taken after its lease lapsed): it must register again. */
int fleetdb_renew(struct auditdb *db, const struct fleetdb_self *self,
		  bool *draining, struct sbx_error **err);
/* A host stopping cleanly: its lease ends now (placement skips it at
 * once); its rows stay for its return. */
int fleetdb_leave(struct auditdb *db, const struct fleetdb_self *self,
		  struct sbx_error **err);

/* Placement. */
struct fleetdb_place_req {
	const char *id;
	const char *tenant;	 /* NULL: counted by no tenant's ceiling */
	unsigned max_per_tenant; /* the fleet-wide ceiling (0: none) */
	const char *runtime;	 /* preferred where its pool has one ready */
	/* Hosts not to place on (they refused it just now). */
	const char *const *exclude;
	size_t nexclude;
};
struct fleetdb_where {
	char host[FLEET_NAME_MAX + 1];
	char url[FLEET_URL_MAX + 1];
	bool alive;    /* its lease runs */
	char state[8]; /* "placing", "open", "kept" */
	char tenant[FLEET_NAME_MAX + 16];
	bool has_tenant;
	/* Its tokens' SHA-256, hex (fleetdb_opened's). */
	char tokens[FLEET_TOKENS_MAX][65];
	size_t ntokens;
};
/*
 * Place id: 0 with *w the chosen host (*placed true: the row is new,
 * 'placing'), or the host it is on already (*placed false: a row of a
 * live host, any state; a dead host's row is given up and replaced).
 * Refusals, SBX_E_REFUSED: the tenant holds max_per_tenant open sessions
 * across the fleet (SBX_R_TENANT_QUOTA, n, max); no live host that
 * drains not has room (SBX_R_HOST_QUOTA, n the sessions open, max the
 * live hosts' capacity).  SBX_E_UNAVAILABLE "no host of the fleet is
 * alive" when none is.
 */
int fleetdb_place(struct auditdb *db, const struct fleetdb_place_req *req,
		  struct fleetdb_where *w, bool *placed,
		  struct sbx_error **err);
/* id's row on host made 'open' (after its open) with its tokens' hashes
 * (at most FLEET_TOKENS_MAX), or 'kept' (closed, its workspace kept);
 * nothing when the row names another host. */
int fleetdb_opened(struct auditdb *db, const char *id, const char *host,
		   const char *const *tokens, size_t ntokens,
		   struct sbx_error **err);
int fleetdb_kept(struct auditdb *db, const char *id, const char *host,
		 struct sbx_error **err);
/* id's row deleted if it names host (a placement undone, a purge). */
int fleetdb_forget(struct auditdb *db, const char *id, const char *host,
		   struct sbx_error **err);
/* Where id lives: 1 and *w, or 0 when the fleet has no row of it. */
int fleetdb_lookup(struct auditdb *db, const char *id, struct fleetdb_where *w,
		   struct sbx_error **err);

/*
 * Reconcile host with the table (its reaper, at start and after each
 * pass): ids[n] are the sessions open on it, tenants[n] their tenants
 * (NULL: none).  Rows naming host that none of ids is, placed more than
 * a minute ago (an open in flight is left alone), are deleted; a row of
 * one of ids still 'placing' becomes 'open'; with adopt, ids with no row
 * get one naming host; the ids
 * whose row names another host, or (adopt false) that have no row, are
 * returned in *gone (the fleet gave them up: the caller closes them),
 * *ngone of them, the array and its strings malloc'd.
 */
int fleetdb_reconcile(struct auditdb *db, const char *host,
		      const char *const *ids, const char *const *tenants,
		      size_t n, bool adopt, char ***gone, size_t *ngone,
		      struct sbx_error **err);
/* The rows of hosts whose lease lapsed more than give_up_s ago deleted:
 * the fleet gives their sessions up.  *n: how many. */
int fleetdb_give_up(struct auditdb *db, unsigned give_up_s, size_t *n,
		    struct sbx_error **err);

/* The live hosts but self, by name: names and urls, *n of each
 * (strv_free). */
int fleetdb_peers(struct auditdb *db, const char *self, char ***names,
		  char ***urls, size_t *n, struct sbx_error **err);

/* The hosts, for `fleet ls`. */
struct fleetdb_host {
	char name[FLEET_NAME_MAX + 1];
	char url[FLEET_URL_MAX + 1];
	unsigned capacity, resident;
	unsigned placed; /* its rows 'placing' or 'open' */
	char *pool_json; /* malloc'd */
	bool draining, alive;
	double lease_left; /* seconds; negative: lapsed that long ago */
	long long epoch;
	char renewed_at[40]; /* RFC 3339, UTC */
};
int fleetdb_hosts(struct auditdb *db, struct fleetdb_host **rows, size_t *n,
		  struct sbx_error **err);
void fleetdb_hosts_free(struct fleetdb_host *rows, size_t n);
/* Drain (or undrain) host: 0, or -1 SBX_E_NOT_FOUND for no such host. */
int fleetdb_drain(struct auditdb *db, const char *host, bool on,
		  struct sbx_error **err);
/* Whether the database has the fleet's tables (migration 6). */
int fleetdb_ready(struct auditdb *db, bool *ready, struct sbx_error **err);
/* After a statement of the fleet's failed: when the reason is that the
 * tables are not there, *err says so instead (fleetdb_no_tables: the
 * server's "relation does not exist" is no help to an operator); else it
 * stays.  Returns -1.  (fleetdb-admin.c) */
int fleetdb_failed(struct auditdb *db, struct sbx_error **err);
/*
 * Forget host, gone for good: its row deleted, its sessions' rows with it
 * (ON DELETE CASCADE), *sessions of them.  -1 SBX_E_NOT_FOUND for no such
 * host; SBX_E_CONFLICT while its lease runs, unless force (a host still
 * serving would register again at its next renewal).  (fleetdb-admin.c)
 */
int fleetdb_forget_host(struct auditdb *db, const char *host, bool force,
			size_t *sessions, struct sbx_error **err);
/* The reason (struct sbx_error's) of an error of fleetdb-admin.c's that
 * is the database without migration 6: "... run `sbxcat audit migrate`". */
extern const char fleetdb_no_tables[];

#endif

/*
 * serve-fleet.h - the service as a host of a fleet (serve-fleet.c,
 * docs/fleet.md); private to src/serve.
 *
 * Thread rule: serve.h's.  start and stop by serve_start's and
 * serve_stop's thread; the rest on any worker.
 */
#ifndef SBX_SERVE_FLEET_H
#define SBX_SERVE_FLEET_H

#include <jansson.h>
#include <stdbool.h>

struct serve;
struct sbx_error;
struct wire_req;

/* With SBXCAT_FLEET: join the fleet (reconciled), and start the lease's
 * thread; without, nothing.  -1 with *err (serve stops). */
int serve_fleet_start(struct serve *sv, struct sbx_error **err);
/* The thread stopped, the fleet left (the lease ended now). */
void serve_fleet_stop(struct serve *sv);
bool serve_fleet_on(const struct serve *sv);
/* This host's sessions against the fleet's table (after a reap). */
void serve_fleet_reconcile(struct serve *sv);
/* Whether hash (a token's SHA-256, hex) is one of id's, a session of
 * another host: 1 yes, 0 no (or no such session, or ours), -1 the
 * database cannot say. */
int serve_fleet_token(struct serve *sv, const char *id, const char *hash);
/* How a front says what the fleet refuses, in its own shapes: an error
 * (placement's refusals, the database), and a session whose host cannot
 * be reached (503, with Retry-After). */
struct serve_fleet_front {
	void (*error)(struct wire_req *w, const struct sbx_error *err,
		      const char *id, const char *tenant);
	void (*unreachable)(struct wire_req *w, const char *id,
			    const char *host, const char *why);
};
/* A request for session id (a path's, a header's): forwarded to its
 * host when it lives on another (true: answered, the owner's answer or
 * 503 when that host is unreachable); false: answered here. */
bool serve_fleet_route(struct wire_req *w, const char *id,
		       const struct serve_fleet_front *f);
/* An open of id: placed (0: here, the caller opens it) or answered (1:
 * forwarded to the chosen host, or refused: the fleet-wide ceiling).
 * id_header: NULL, the id goes in the body's session_id; else in that
 * header (a front whose open names no id: the host that places makes
 * it). */
int serve_fleet_place(struct wire_req *w, const char *id, const char *tenant,
		      const char *runtime, const char *id_header,
		      const struct serve_fleet_front *f);
/* The id a placing host gave a forwarded open in header (NULL: none, or
 * not a placement of this host's in progress: the header came from a
 * client, or is stale). */
const char *serve_fleet_given_id(struct wire_req *w, const char *header);
/* After an open here: the row open with its tokens, or taken back when
 * nothing of id is here. */
void serve_fleet_opened(struct wire_req *w, const char *id, bool ok);
/* After a close here: the row kept, or gone with a purge. */
void serve_fleet_closed(struct wire_req *w, const char *id, bool purged);
/* The list's rows of every other live host appended to rows: each
 * host's answer to the same request is an object whose key holds an
 * array (key NULL: the answer is the array). */
void serve_fleet_list(struct wire_req *w, json_t *rows, const char *key);

#endif

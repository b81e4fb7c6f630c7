/*
 * session-wire.h - what the service (`sbxcat serve`, sandboxd's wire)
 * keeps of a session besides sbxcat's record: the id its clients name it
 * by and the hashes of the tokens it minted for it (docs/serve.md,
 * "Sessions and tokens").  ROOT/KEY/wire.json, root's, 0600, replaced
 * atomically under ROOT/KEY's flock, like the record: the sandbox cannot
 * reach it, and a restart of the service finds it.
 *
 * A token is never stored: only its SHA-256, in hex.  A session holds at
 * most SESSION_WIRE_TOKENS of them (each reuse mints one more; the
 * oldest goes first).  Closing a session (by the service, by `sbxcat
 * session close`, by the reaper) drops its tokens: a token of a closed
 * session is worth nothing, and the id stays for the service's reads of
 * the workspace that is kept.
 *
 * The record also keeps the agent and run a client named at open (ours,
 * docs/serve.md "Agent and run"): the defaults of the session's
 * requests that name none.  Both are optional ("" when none).
 *
 * Thread rule: as session.h: nothing is kept in memory; what is shared
 * is the file, ordered by ROOT/KEY's flock.
 */
#ifndef SBX_SESSION_WIRE_H
#define SBX_SESSION_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "session/session.h"

#define SESSION_WIRE_ID_MAX 64
#define SESSION_WIRE_TOKENS 8
#define SESSION_WIRE_HASH_HEX 64
/* An agent or run id's bytes at most: the audit's (AUDIT_ID_MAX, which
 * svc/ checks is the same). */
#define SESSION_WIRE_WHO_MAX 200

struct session_wire {
	char id[SESSION_WIRE_ID_MAX + 1];
	char tokens[SESSION_WIRE_TOKENS][SESSION_WIRE_HASH_HEX + 1];
	size_t ntokens;
	/* The session's default agent and run, "" for none. */
	char agent[SESSION_WIRE_WHO_MAX + 1], run[SESSION_WIRE_WHO_MAX + 1];
};

/* sandboxd's id pattern: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
bool session_wire_id_valid(const char *s);

/* Read ROOT/KEY/wire.json: status 1, errnum ENOENT, when the session has
 * none (opened by the command line); status 3 when it does not parse. */
int session_wire_read(struct session_root *r, const char *key,
		      struct session_wire *w, struct sbx_error **err);
/*
 * Add hash (64 hex digits) to the tokens of KEY, named id, dropping the
 * oldest past SESSION_WIRE_TOKENS; a file of another id is refused
 * (conflict).  agent and run (checked by the caller; NULL: not given)
 * become the session's defaults: a session that held no token (a new
 * open) takes them as they are, none for NULL; one that is open (a
 * reuse) keeps its own where NULL.  Under ROOT/KEY's flock.
 */
int session_wire_add_token(struct session_root *r, const char *key,
			   const char *id, const char *hash, const char *agent,
			   const char *run, struct sbx_error **err);
/* Drop every token of KEY (nothing when it has no file).  Under ROOT/KEY's
 * flock unless locked says the caller holds it. */
int session_wire_drop_tokens(struct session_root *r, const char *key,
			     bool locked, struct sbx_error **err);

#endif

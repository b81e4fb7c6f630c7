/*
 * svc-e2b.h - what the service keeps of an E2B sandbox beyond its wire
 * session, and its lifecycle as E2B means it (docs/e2b.md, "Control
 * plane" and "Lifecycle").
 *
 * An E2B sandbox is a session opened on the wire (svc-wire.h) whose id
 * is the sandboxID, with a record of its own beside the wire's:
 * ROOT/KEY/e2b.json, root's, 0600, replaced atomically under ROOT/KEY's
 * flock as wire.json is.  A wire session without it is not an E2B
 * sandbox: nothing here lists it or acts on it.  The record holds the
 * template the client named, its metadata and envVars (bounded:
 * SVC_E2B_META_*, svc_exec_env_check's rules), autoPause, when it
 * started (milliseconds: the list's order) and its deadline endAt (Unix
 * seconds), and whether its client paused it (or its deadline did, with
 * autoPause), when, and until when that pause is held.
 *
 * The lifecycle: endAt is absolute; connect and /timeout move it.  The
 * reaper's pass (svc_reap) calls svc_e2b_reap first: a sandbox past its
 * endAt is killed (closed and its workspace purged) or, with autoPause,
 * paused; a paused one past its hold is killed; every other is kept out
 * of the idle rules (its activity stamp renewed), so only its deadline
 * ends it.  A pause keeps memory (docker pause) or, with memory false,
 * hibernates (the mark and a stop: session.h).
 *
 * Ownership: a struct svc_e2b owns its JSON (svc_e2b_release); a struct
 * svc_e2b_sandbox its session and record.
 *
 * Thread rule: as svc.h.
 */
#ifndef SBX_SVC_E2B_H
#define SBX_SVC_E2B_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "svc/svc-wire.h"
#include "svc/svc.h"

/* Metadata: at most this many keys, of these many bytes each. */
#define SVC_E2B_META_KEYS 64
#define SVC_E2B_META_KEY_MAX 256
#define SVC_E2B_META_VALUE_MAX 2048
#define SVC_E2B_TEMPLATE_MAX 128
/* The record's bytes at most: metadata and envVars at their bounds. */
#define SVC_E2B_RECORD_MAX (512 << 10)

struct svc_e2b {
	char template_id[SVC_E2B_TEMPLATE_MAX + 1];
	json_t *metadata; /* an object of strings, never NULL once read */
	json_t *envs;	  /* an object of strings, never NULL once read */
	bool auto_pause;
	bool auto_pause_memory; /* autoPause keeps memory (else hibernates) */
	int allow_internet; /* as asked: 1, 0, -1 not given */
	long long started_ms, end_at;
	/* Paused by its client, or by its deadline with autoPause; held
	 * (no idle rule stops it) until held_until, then killed. */
	bool paused, hibernated;
	long long paused_at, held_until;
	long long retention; /* a pause's hold, seconds (held_until's) */
};
void svc_e2b_release(struct svc_e2b *e);

/* Metadata as E2B takes it: an object of at most SVC_E2B_META_KEYS
 * strings, keys 1 to SVC_E2B_META_KEY_MAX bytes, values at most
 * SVC_E2B_META_VALUE_MAX, valid UTF-8 without NUL.  NULL, or a static
 * why. */
const char *svc_e2b_metadata_check(const json_t *m);
/* envVars: an object of strings, svc_exec_env_check's rules. */
int svc_e2b_envs_check(const json_t *m, struct sbx_error **err);

/* A sandbox: its wire session, its record, its container's state
 * (svc_wire_state's words; NULL when not looked at). */
struct svc_e2b_sandbox {
	struct svc_wire_session ws;
	struct svc_e2b e;
	const char *state;
};
void svc_e2b_sandbox_release(struct svc_e2b_sandbox *sb);

/* The sandbox id as call->tenant sees it: open on the wire and E2B's
 * (its record), else not found (ENOENT).  with_state: its container's
 * state looked at (one inspect). */
int svc_e2b_find(const struct svc *s, const struct svc_call *call,
		 const char *id, bool with_state, struct svc_e2b_sandbox *sb,
		 struct sbx_error **err);
/* Its record alone, by key (any tenant): not found (ENOENT) without. */
int svc_e2b_read(const struct svc *s, const struct svc_call *call,
		 const char *key, struct svc_e2b *e, struct sbx_error **err);

/*
 * create: a new id (serve's e2b_id_new gives it), the session opened on
 * the wire with it (svc_wire_open, no reuse: its row is the open's),
 * then the record written; a record that cannot be written closes the
 * session again.  metadata and envs are borrowed (checked by the
 * caller).
 */
struct svc_e2b_create_req {
	const char *id, *template_id, *runtime;
	const struct catalog *cat;
	const struct sbx_error *cat_err;
	const json_t *metadata, *envs;
	bool auto_pause, auto_pause_memory;
	int allow_internet;
	long long timeout_s, retention;
	const char *default_agent, *default_run;
	const char *work_dir; /* NULL: the configured */
};
struct svc_e2b_create_res {
	struct svc_wire_open_res open;
	struct svc_e2b e;
};
int svc_e2b_create(const struct svc *s, const struct svc_call *call,
		   const struct svc_e2b_create_req *req,
		   struct svc_e2b_create_res *res, struct sbx_error **err);
void svc_e2b_create_res_release(struct svc_e2b_create_res *res);

/* Every sandbox call->tenant sees, each with its state (one list of the
 * engine); in no order. */
struct svc_e2b_list_res {
	struct svc_e2b_sandbox *rows;
	size_t n;
};
int svc_e2b_list(const struct svc *s, const struct svc_call *call,
		 struct svc_e2b_list_res *res, struct sbx_error **err);
void svc_e2b_list_res_release(struct svc_e2b_list_res *res);

/*
 * pause: memory kept (docker pause) or not (hibernated: marked and
 * stopped); held until now + the record's retention.  A sandbox its
 * client paused already: a conflict (*already).  Its row: op open,
 * detail "e2b pause" (or "e2b pause, memory dropped").
 */
int svc_e2b_pause(const struct svc *s, const struct svc_call *call,
		  struct svc_e2b_sandbox *sb, bool memory, long long now,
		  bool *already, struct sbx_error **err);
/*
 * connect: endAt set to end_at when later than it is (E2B's connect
 * never shortens); a paused sandbox unpaused, a hibernated one woken
 * (its row the open's, outcome woken), *resumed saying so; a new token
 * minted into token (only hashes are kept, so the one of the create
 * cannot be given again; the earlier stay good, SESSION_WIRE_TOKENS of
 * them).  Its row: op open, detail "e2b connect" or "e2b resume".
 */
int svc_e2b_connect(const struct svc *s, const struct svc_call *call,
		    struct svc_e2b_sandbox *sb, long long end_at,
		    const struct catalog *cat, bool *resumed,
		    char token[SVC_WIRE_TOKEN_LEN + 1], struct sbx_error **err);
/* /timeout and /refreshes: endAt set (shortened too).  Row: op open,
 * detail "e2b timeout". */
int svc_e2b_set_end(const struct svc *s, const struct svc_call *call,
		    struct svc_e2b_sandbox *sb, long long end_at,
		    struct sbx_error **err);
/* kill: closed and its workspace purged (svc_session_close: its row). */
int svc_e2b_kill(const struct svc *s, const struct svc_call *call,
		 struct svc_e2b_sandbox *sb, struct sbx_error **err);

/*
 * What an exec checks before it wakes a session's container (svc-exec.c):
 * a sandbox its E2B client paused stays paused until its client connects
 * (no front's auto-wake unpauses it): refused (conflict) then; 0 for
 * every other session.  root is the caller's, open.
 */
struct session_root;
int svc_e2b_wake_check(struct session_root *root, const char *key,
		       struct sbx_error **err);

/*
 * The reaper's step (svc_reap calls it before its pass, not dry): every
 * E2B sandbox past its endAt killed, or paused (autoPause: its row op
 * reap, detail "e2b timeout: paused"); every paused one past its hold
 * killed; every other's activity stamped when older than half the
 * shortest idle rule, so the pass's idle rules leave it alone.  At most
 * limit actions; problems with one go to call->warn.
 */
int svc_e2b_reap(const struct svc *s, const struct svc_call *call,
		 long long now, size_t limit, struct sbx_error **err);

#endif

/*
 * svc-wire.h - sessions as the service's wire names them (`sbxcat
 * serve`, docs/serve.md): by a client's id ([A-Za-z0-9][A-Za-z0-9._-]
 * {0,63}, session/session-wire.h) rather than by (tenant, scope,
 * subject), reached with a token minted at open.
 *
 * The key of an id is session_key of (SVC_WIRE_KEY_TENANT,
 * SVC_WIRE_KEY_SCOPE, id, ""): a function of the id and the key secret
 * alone, so a request that names only the id finds its session, and the
 * same id reopened finds its workspace.  The record's tenant is the
 * tenant that opened it, and the tenant rule (session_find) holds: a call
 * of another tenant sees no such session, and may not open the id while
 * the first tenant's workspace is kept (the id is taken).
 *
 * Tokens: 32 bytes from getrandom, base64url without padding (43
 * characters); only their SHA-256 is stored (ROOT/KEY/wire.json), so a
 * reuse mints a new token (earlier ones stay valid, up to
 * SESSION_WIRE_TOKENS) and a restart of the service keeps them.  Checked
 * against each stored hash in constant time.
 *
 * Thread rule: as svc.h.
 */
#ifndef SBX_SVC_WIRE_H
#define SBX_SVC_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "session/session-engine.h"
#include "session/session-wire.h"
#include "session/session.h"
#include "svc/svc-session.h"
#include "svc/svc.h"

#define SVC_WIRE_KEY_TENANT "sandboxd"
#define SVC_WIRE_KEY_SCOPE "conversation"
#define SVC_WIRE_TOKEN_LEN 43
enum { SVC_WIRE_ID_MAX = SESSION_WIRE_ID_MAX }; /* a wire id's bytes */
enum { SVC_WIRE_TOKENS_MAX = SESSION_WIRE_TOKENS }; /* tokens a session keeps */

/*
 * The record's tenant of a session opened on the wire without one
 * (sandboxd's tenant null): a tenant name no client can give (the wire's
 * pattern has no '@'), so the session is no tenant's.  No per-tenant
 * ceiling counts it (as sandboxd: the host's ceiling does), a tenant's
 * token never sees it, and the wire shows its tenant as null
 * (svc_wire_tenant).
 */
#define SVC_WIRE_NO_TENANT "none@sandboxd"

/* A record's tenant as the wire shows it: NULL for SVC_WIRE_NO_TENANT. */
const char *svc_wire_tenant(const char *tenant);

/* Whether a per-tenant ceiling counts tenant's opens: not for NULL (the
 * host's administrator) nor SVC_WIRE_NO_TENANT. */
bool svc_tenant_counted(const char *tenant);

/* A name of the wire's pattern (a session id, a tenant):
 * [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
bool svc_wire_name_valid(const char *s);

/*
 * The id on the wire of the session KEY (its wire.json's), in out, for
 * its audit rows; NULL for a session the command line opened, or whose
 * file cannot be read (the row is then written without it: an audit row
 * is never lost for the want of it).
 */
const char *svc_wire_id_of(struct session_root *root, const char *key,
			   char out[SESSION_WIRE_ID_MAX + 1]);

/*
 * The id on the wire of the session whose key (sbxcat's name of it, the
 * audit's session column) is name, in out; NULL when name is not the key
 * of a session the service opened.  Lets a route that reads the audit
 * take either name; the session is then found by its id, as the caller
 * may see it (svc_wire_find, svc_wire_auth).
 */
const char *svc_wire_alias(const struct svc *s, const struct svc_call *call,
			   const char *name, char out[SESSION_WIRE_ID_MAX + 1]);

/* A new token and its hash. */
void svc_wire_token_new(char token[SVC_WIRE_TOKEN_LEN + 1],
			char hash[SESSION_WIRE_HASH_HEX + 1]);
/*
 * A session by its id, as call->tenant may see it: its record, what the
 * service keeps of it (the wire record: id and token hashes; none for a
 * session the command line opened), and whether it is open on the wire
 * (it holds a token).  Not found (ENOENT) for an id with no record, or
 * another tenant's.
 */
struct svc_wire_session {
	char key[SESSION_KEY_MAX + 1];
	struct session_record rec;
	struct session_wire wire;
	bool has_wire, open;
	/* Hibernation's mark is there (session.h): hibernated, unless the
	 * container runs (svc_wire_state says which). */
	bool marked;
};
int svc_wire_find(const struct svc *s, const struct svc_call *call,
		  const char *id, struct svc_wire_session *ws,
		  struct sbx_error **err);
void svc_wire_session_release(struct svc_wire_session *ws);

/* Whether token is one of the open session id's (any tenant): 0 and *ws
 * filled, or -1 refused (a wrong token, no session, a closed one: the
 * caller cannot tell which) or another error (the record unreadable). */
int svc_wire_auth(const struct svc *s, const struct svc_call *call,
		  const char *id, const char *token,
		  struct svc_wire_session *ws, struct sbx_error **err);

/*
 * Open (or reuse) the session id.  Refusals, in res->refused (err's kind
 * conflict or not found): an id open and no reuse (SVC_WIRE_EXISTS); a
 * reuse naming another runtime than the open one's (SVC_WIRE_RUNTIME,
 * res->open_runtime says which); an attach with neither an open session
 * nor a kept workspace (SVC_WIRE_NOTHING); the id another tenant's
 * (SVC_WIRE_EXISTS).  Else svc_session_open's errors.  res->token is the
 * new token.
 */
enum svc_wire_refusal {
	SVC_WIRE_OK,
	SVC_WIRE_EXISTS,
	SVC_WIRE_RUNTIME,
	SVC_WIRE_NOTHING,
};
struct svc_wire_open_req {
	const char *id;
	const char *runtime; /* NULL: the open one's, else the default */
	bool reuse, attach;
	const struct catalog *cat;
	const struct sbx_error *cat_err;
	/* As svc_session_open_req's labels_json and durability: none
	 * keeps a reopened session's; a durability other than the
	 * session's is a conflict (reason SBX_R_DURABILITY_DIFFERS). */
	const json_t *labels;
	const char *durability;
	/* The disk budget asked for (svc_session_open_req's). */
	const char *disk_quota;
	unsigned long long disk_inodes;
	/* The session's work dir (svc_session_open_req's: NULL, the
	 * configuration's; a reuse asking another is a conflict). */
	const char *work_dir;
	/* The agent and run the session's requests that name none take
	 * (NULL: not given: a new open has none, a reuse keeps its own);
	 * refused as svc_id_check refuses them, "agent: ..." or "run: ...".
	 * The open's own row is call->agent's and call->run's; where the
	 * call names none, a reused session's defaults, else these
	 * defaults (the service's: serve --agent/--run; NULL: none). */
	const char *agent, *run;
	const char *default_agent, *default_run;
};
struct svc_wire_open_res {
	struct svc_session_open_res open;
	char token[SVC_WIRE_TOKEN_LEN + 1];
	bool reused;
	bool marked; /* the id's session had hibernation's mark */
	enum svc_wire_refusal refused;
	char open_runtime[64];
};
int svc_wire_open(const struct svc *s, const struct svc_call *call,
		  const struct svc_wire_open_req *req,
		  struct svc_wire_open_res *res, struct sbx_error **err);
void svc_wire_open_res_release(struct svc_wire_open_res *res);

/* The state of ws's container in one of the engine's words
 * (session_state: "running", "exited", ..., "closed" without one), or
 * "hibernated" (svc_wire_hibernated: exited, and marked), from one
 * inspect: no walk of the workspace. */
extern const char svc_wire_hibernated[];
int svc_wire_state(const struct svc *s, const struct svc_call *call,
		   const struct svc_wire_session *ws, const char **state,
		   struct sbx_error **err);

/* What a session's container uses now, from one sample of the engine's
 * stats: -1 for what it does not say.  cpu_percent is always -1 (one
 * sample has no rate). */
struct svc_wire_usage {
	long long memory_bytes, memory_limit_bytes, pids;
	double cpu_percent;
	/* The workspace's disk budget (statvfs), -1 without one. */
	long long disk_bytes, disk_limit_bytes, disk_inodes, disk_limit_inodes;
};
int svc_wire_usage(const struct svc *s, const struct svc_call *call,
		   const struct svc_wire_session *ws, struct svc_wire_usage *u,
		   struct sbx_error **err);

/* The sessions open on the wire that call->tenant sees, sorted by key,
 * each with its container's state (session_state_word: "running",
 * "exited", "closed", ..., or "hibernated"). */
struct svc_wire_list_res {
	struct svc_wire_session *rows;
	const char **states;
	size_t n;
};
int svc_wire_list(const struct svc *s, const struct svc_call *call,
		  struct svc_wire_list_res *res, struct sbx_error **err);
void svc_wire_list_res_release(struct svc_wire_list_res *res);

#endif

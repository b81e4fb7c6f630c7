/*
 * svc-session.h - sessions as operations (svc.h; session/session.h and
 * session/session-engine.h below): open (or adopt) one, list them, show
 * one, close one.  Open and close write their audit row, refused and
 * failed ones too; ls and show write none.
 *
 * call is required: every call sees the sessions of call->tenant only
 * (NULL: every tenant; an open needs one); another tenant's session
 * reads exactly like none (session_find).  Waits for a lock and for the
 * engine end when call->cancel is set.
 *
 * Ownership: a result owns what it points to (records, strings, doc):
 * svc_session_*_res_release frees it; a caller that keeps doc takes it
 * (steal_pointer).  Thread rule: as svc.h: calls share nothing but the
 * host's files, ordered by the quota lock and ROOT/KEY's (session.h).
 */
#ifndef SBX_SVC_SESSION_H
#define SBX_SVC_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "session/session-engine.h"
#include "session/session.h"
#include "svc/svc-prewarm.h"
#include "svc/svc.h"

struct catalog;

/*
 * open: the session of (call->tenant, scope, subject, host) on a runtime
 * of cat (runtime NULL: its default), its image prewarmed first when the
 * engine lacks it (watch hears that prewarm).  The fields are checked as
 * session.h says (invalid, naming the field).  cat_err, when set, is why
 * the catalogue could not be read (cat then NULL): the open is refused,
 * and recorded, with a copy of it.
 */
/* How many labels an open takes (session-labels.h). */
enum { SVC_SESSION_LABELS_MAX = SESSION_LABELS_MAX };
/* A session key's length at most (session.h). */
enum { SVC_SESSION_KEY_MAX = SESSION_KEY_MAX };

struct svc_session_open_req {
	const char *scope, *subject, *host; /* host NULL: "" */
	const struct catalog *cat;
	const struct sbx_error *cat_err;
	const char *runtime;
	struct svc_prewarm_watch watch;
	/* The session's id on the service's wire (session/session-wire.h),
	 * or NULL.  With one, the key is of the id alone (svc-wire.h),
	 * whichever tenant opens it, so the service finds the session from
	 * the id; the record's tenant still decides who reaches it: another
	 * tenant's open of it is a conflict. */
	const char *name;
	/* The session's labels, as nlabels "KEY=VALUE" strings (the
	 * command line's) or labels_json, an object of strings (the
	 * wire's; NULL or null: none given), each checked here
	 * (session-labels.h; invalid, naming the label).  Given, they
	 * replace those the session had; none given: a new session has
	 * none, a reopen keeps its own. */
	const char *const *labels;
	size_t nlabels;
	const json_t *labels_json;
	/* "ephemeral" or "persistent" (else invalid): a new session's, and
	 * a reopen of one of the other durability is a conflict (reason
	 * SBX_R_DURABILITY_DIFFERS).  NULL: a new session is
	 * persistent, a reopen keeps its own. */
	const char *durability;
	/* The workspace's disk budget (docs/sessions.md, "Disk budgets"):
	 * a size ("64m") and an inode count, NULL and 0 for the configured
	 * ones; at most those when they are set.  Hostile: bounded by
	 * session-budget.h. */
	const char *disk_quota;
	unsigned long long disk_inodes;
	/* Where the sandbox sees its workspace and its commands start, and
	 * its HOME (E2B's /home/user): checked as SANDBOXD_WORK_DIR is
	 * (invalid, field "work_dir"); NULL or the configuration's: the
	 * configuration's (no HOME set).  A new session's; a reopen keeps
	 * its own, and one asking another is a conflict. */
	const char *work_dir;
};
/* The open's refusals say why (error.h): SBX_R_DURABILITY_DIFFERS,
 * SBX_R_BUDGET_DIFFERS (a reopen asking another disk budget than the
 * workspace has; conflicts), SBX_R_BAD_LABELS, SBX_R_OVER_CEILING (a
 * disk budget over SANDBOXD_WORKSPACE_QUOTA or _INODES, n of max;
 * invalid), SBX_R_KEPT_BUDGETS (the closed workspaces with a budget
 * the tenant keeps, n of max; refused). */
struct svc_session_open_res {
	char key[SESSION_KEY_MAX + 1];
	char *container;     /* its id */
	char *name;	     /* sbxcat-DEPLOYMENT-KEY */
	const char *runtime; /* the alias, borrowed from the catalogue */
	char *image;	     /* what the container runs */
	char *workspace;     /* ROOT/KEY/workspace */
	long long created, last_activity;
	enum session_outcome outcome;
	struct session_labels labels; /* as recorded */
	enum session_durability durability;
	char *work_dir; /* the session's (svc_session_work_dir) */
	/* {key, container, name, runtime, image, created, outcome,
	 * workspace, labels, durability, expires_at; work_dir when not the
	 * configuration's} */
	json_t *doc;
	/* Failed: the catalogue had diagnostics (cat->diags), the caller's
	 * to show before the error. */
	bool catalog_invalid;
};
/*
 * The field of an open that is missing or malformed, as svc_session_open
 * checks them (tenant, scope, subject, host, in that order): its name,
 * *value what it was, *why what is wrong (NULL: missing); NULL when
 * every one is good.  For a caller that names the fields its own way.
 */
const char *svc_session_open_check(const char *tenant,
				   const struct svc_session_open_req *req,
				   const char **value, const char **why);
/* The key of (tenant, scope, subject, host) under the key secret (the
 * configured one, else ROOT's, made on first use). */
int svc_session_key_of(const struct svc *s, struct session_root *root,
		       const char *tenant, const char *scope,
		       const char *subject, const char *host,
		       char key[SESSION_KEY_MAX + 1], struct sbx_error **err);
/* The work dir of the session rec records (as svc_wire_find and the
 * others read it): where its sandbox sees its workspace; borrowed from
 * rec or the configuration. */
const char *svc_session_work_dir(const struct svc *s,
				 const struct session_record *rec);
int svc_session_open(const struct svc *s, const struct svc_call *call,
		     const struct svc_session_open_req *req,
		     struct svc_session_open_res *res, struct sbx_error **err);
void svc_session_open_res_release(struct svc_session_open_res *res);

/* ls: the sessions that have a record, sorted by key; with sizes, each
 * workspace walked for its size (a walk that fails: 0, and a warning). */
struct svc_session_ls_req {
	bool sizes;
};
struct svc_session_row {
	struct session_record rec;
	/* The container's state in one of the engine's words, or "closed"
	 * (a static string: session_state_word). */
	const char *state;
	unsigned long long bytes, files; /* with sizes */
};
struct svc_session_ls_res {
	struct svc_session_row *rows;
	size_t n;
	/* [{key, tenant, runtime, state, created, last_activity,
	 * expires_at, durability, labels, workspace_bytes and
	 * workspace_files with sizes}, ...] */
	json_t *doc;
};
int svc_session_ls(const struct svc *s, const struct svc_call *call,
		   const struct svc_session_ls_req *req,
		   struct svc_session_ls_res *res, struct sbx_error **err);
void svc_session_ls_res_release(struct svc_session_ls_res *res);

/* show: one session, its record, its container as the engine reports it
 * (limits as applied, OOM kills), its workspace and size. */
struct svc_session_show_req {
	const char *key;
};
struct svc_session_show_res {
	struct session_record rec;
	const char *state; /* session_state: "closed" without a container */
	char *workspace;
	unsigned long long bytes, files;
	/* {key, tenant, runtime, state, created, last_activity, expires_at,
	 * durability, labels, container, image, workspace, workspace_bytes,
	 * workspace_files, oom_killed, oom_kills, exit_code, error, limits}:
	 * every field, in the order the text shows them. */
	json_t *doc;
};
int svc_session_show(const struct svc *s, const struct svc_call *call,
		     const struct svc_session_show_req *req,
		     struct svc_session_show_res *res, struct sbx_error **err);
void svc_session_show_res_release(struct svc_session_show_res *res);

/*
 * What a session keeps of its open, into doc: labels (exactly as given),
 * durability, and expires_at, when a session of last activity last
 * expires: last plus the idle timeout (the reaper's stop, or an
 * ephemeral session's deletion), RFC 3339; null without an idle timeout
 * or a stamp.
 */
void svc_session_add_kept(const struct svc *s, json_t *doc,
			  const struct session_labels *labels,
			  enum session_durability d, long long last);

/*
 * touch: the session's activity stamped now (as an operation on it
 * stamps it), which puts off its idle pause, stop and expiry; its row
 * is op open, detail "touched".  Nothing is asked of the engine: a
 * paused or hibernated session stays so until an operation needs its
 * container.
 */
struct svc_session_touch_req {
	const char *key;
};
struct svc_session_touch_res {
	char key[SESSION_KEY_MAX + 1];
	long long last_activity;
	json_t *doc; /* {key, last_activity, expires_at} */
};
int svc_session_touch(const struct svc *s, const struct svc_call *call,
		      const struct svc_session_touch_req *req,
		      struct svc_session_touch_res *res,
		      struct sbx_error **err);
void svc_session_touch_res_release(struct svc_session_touch_res *res);

/* close: the container removed (stopped only when the configuration
 * persists containers, and not purge); with purge, ROOT/KEY too.  An
 * ephemeral session is always purged. */
struct svc_session_close_req {
	const char *key;
	bool purge;
};
struct svc_session_close_res {
	char key[SESSION_KEY_MAX + 1];
	const char *container; /* "removed", "stopped" or "gone" (static) */
	bool purged;
	json_t *doc; /* {key, container, purged} */
};
int svc_session_close(const struct svc *s, const struct svc_call *call,
		      const struct svc_session_close_req *req,
		      struct svc_session_close_res *res,
		      struct sbx_error **err);
void svc_session_close_res_release(struct svc_session_close_res *res);

#endif

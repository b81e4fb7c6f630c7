/*
 * error.h - the error object passed down and wrapped on the way up.
 *
 * A leaf creates an error with sbx_error_set(), which returns -1 so the
 * leaf can `return sbx_error_set(err, KIND, ...)`.  Callers either pass -1
 * on or add context with sbx_error_wrap(), which prefixes "context: " to
 * the message.  Only cli/ prints errors.  The error owns its message;
 * sbx_error_free() frees both and resets the pointer.
 *
 * Every error has a kind, set where the failure is found: what went wrong
 * in the words a caller needs to decide what to do, never a caller's
 * status.  The command line maps a kind to an exit status once
 * (cli/cmd.c, cmd_exit_status), the service to an HTTP status once.
 *
 * Thread rule: an error belongs to the thread that made it; nothing here
 * keeps state.
 */
#ifndef SBX_ERROR_H
#define SBX_ERROR_H

#include <stdbool.h>

enum sbx_kind {
	/* A fault of sbxcat's own or the host's that no request explains. */
	SBX_E_INTERNAL = 0,
	/* What was named does not exist, or is not the caller's to see. */
	SBX_E_NOT_FOUND,
	/* It exists, or is in a state, that forbids the request (a session
	 * not running, text that matches twice, a name taken). */
	SBX_E_CONFLICT,
	/* A quota, a limit or a rule refuses it (a path outside the
	 * workspace, a file over the read limit, a tenant's ceiling); also
	 * the engine refusing a request for what it is. */
	SBX_E_REFUSED,
	/* Content read was checked and is not what it must be (a compose
	 * file, a catalogue, an audit row, an archive member). */
	SBX_E_BAD_DATA,
	/* The request itself is malformed: a bad value, a bad setting. */
	SBX_E_INVALID,
	/* What serves the request did not: the engine, the database, the
	 * disk, a file sbxcat needs. */
	SBX_E_UNAVAILABLE,
	/* It ran out of time. */
	SBX_E_TIMEOUT,
	/* The caller's cancel flag stopped it (a signal, a client gone). */
	SBX_E_CANCELLED,
	SBX_E_COUNT /* not a kind: how many there are */
};

/* "internal", "not found", ...: the kind's name. */
const char *sbx_kind_name(enum sbx_kind kind);
/* Whether the kind refuses the request for what it asks (not found,
 * conflict, refused, bad data, invalid) rather than failing to serve it:
 * the audit's "refused:" against "failed:". */
bool sbx_kind_refusal(enum sbx_kind kind);

/*
 * The refusals a caller branches on, named once here so that the layer
 * that refuses and the front end that words the refusal (serve/ speaks
 * sandboxd's texts; it may not see workspace/ or session/) share a
 * constant, never a string they both spell.  Each has a text, the few
 * words the audit's detail column says (sbx_reason_text), and may carry
 * numbers in the error's n and max (said at each below).  A reason no
 * caller branches on stays a text of its own (struct sbx_error.reason).
 */
enum sbx_reason {
	SBX_R_NONE = 0,
	/* workspace/: a path's refusals */
	SBX_R_NOT_FOUND,
	SBX_R_A_DIRECTORY,
	SBX_R_NOT_A_DIRECTORY,
	SBX_R_NOT_REGULAR,
	SBX_R_OUTSIDE,
	SBX_R_OVER_READ_LIMIT, /* n: the file's bytes; max: the limit */
	SBX_R_PAST_END,	       /* n: the file's lines; max: the line asked */
	SBX_R_OLD_NOT_FOUND,
	SBX_R_OLD_NOT_UNIQUE, /* n: how many times the old text matches */
	SBX_R_DIR_NOT_EMPTY,
	/* session/: n of max sessions held (the tenant's, the host's, the
	 * open ones) */
	SBX_R_TENANT_QUOTA,
	SBX_R_HOST_QUOTA,
	SBX_R_OPEN_QUOTA,
	SBX_R_NOT_RUNNING, /* the session's container is stopped */
	SBX_R_GONE,	   /* the session's container is removed */
	SBX_R_RUN_RUNNING, /* a run of that id runs already */
	/* svc/ */
	SBX_R_DURABILITY_DIFFERS,
	SBX_R_BUDGET_DIFFERS, /* n: the workspace's budget in bytes (0:
			       * none); max: the one asked */
	SBX_R_BAD_LABELS,
	SBX_R_OVER_CEILING, /* n: the budget asked; max: the ceiling */
	SBX_R_BAD_CWD,
	SBX_R_BAD_ENV,
	SBX_R_KEPT_BUDGETS, /* n: the closed workspaces with a budget kept;
			      max: SANDBOXD_MAX_KEPT_BUDGETS_PER_TENANT */
	SBX_R_COUNT
};

/* The reason's few words ("outside the workspace"); NULL for none. */
const char *sbx_reason_text(enum sbx_reason why);

struct sbx_error {
	enum sbx_kind kind;
	int errnum; /* errno of the cause, 0 if none */
	int http; /* HTTP status of an engine reply (404, 409, 304...), or 0 */
	char *msg;
	char *hint; /* what the user can do about it, or NULL; printed apart */
	/* Why, in a few words of sbxcat's own and never text from outside
	 * ("outside the workspace"): a static string, or NULL.  The audit's
	 * detail column says this, never msg (which quotes paths). */
	const char *reason;
	/* The reason as a constant when it is one callers branch on (then
	 * reason is its text), and its numbers; SBX_R_NONE and 0 else. */
	enum sbx_reason why;
	unsigned long long n, max;
	/* An error that came first and is said first (sbx_error_chain), or
	 * NULL: an operation that failed and then could not record it. */
	struct sbx_error *prev;
};

/* errnum, when non-zero, appends ": strerror(errnum)". Returns -1. */
int sbx_error_set(struct sbx_error **err, enum sbx_kind kind, int errnum,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Prefix context to an existing error.  Returns -1. */
int sbx_error_wrap(struct sbx_error **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Set the error's hint (a copy of the formatted text), replacing any. */
void sbx_error_hint(struct sbx_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Set the error's reason (a static string: see struct sbx_error). */
static inline void sbx_error_reason(struct sbx_error *err, const char *why)
{
	if (err) {
		err->reason = why;
		err->why = SBX_R_NONE;
	}
}
/* Set the error's reason to a constant (its text too) and its numbers
 * (0 where the reason has none). */
void sbx_error_why(struct sbx_error *err, enum sbx_reason why,
		   unsigned long long n, unsigned long long max);
void sbx_error_free(struct sbx_error **err);
/* Put *earlier (taken, may be NULL) before *later: *later keeps its kind,
 * and is said after it.  Nothing when *later is NULL (then *earlier stays). */
void sbx_error_chain(struct sbx_error **later, struct sbx_error **earlier);

#endif

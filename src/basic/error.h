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
};

/* "internal", "not found", ...: the kind's name. */
const char *sbx_kind_name(enum sbx_kind kind);
/* Whether the kind refuses the request for what it asks (not found,
 * conflict, refused, bad data, invalid) rather than failing to serve it:
 * the audit's "refused:" against "failed:". */
bool sbx_kind_refusal(enum sbx_kind kind);

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
	if (err)
		err->reason = why;
}
void sbx_error_free(struct sbx_error **err);
/* Put *earlier (taken, may be NULL) before *later: *later keeps its kind,
 * and is said after it.  Nothing when *later is NULL (then *earlier stays). */
void sbx_error_chain(struct sbx_error **later, struct sbx_error **earlier);

#endif

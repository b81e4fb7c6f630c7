/*
 * error.h - the error object passed down and wrapped on the way up.
 *
 * A leaf creates an error with sbx_error_set(), which returns -1 so the
 * leaf can `return sbx_error_set(err, ...)`.  Callers either pass -1 on or
 * add context with sbx_error_wrap(), which prefixes "context: " to the
 * message.  Only main() and the cmd-*.c files print errors.  The error owns
 * its message; sbx_error_free() frees both and resets the pointer.
 */
#ifndef SBX_ERROR_H
#define SBX_ERROR_H

/* Exit statuses shared by every command (brief section 2). */
enum {
	SBX_EXIT_OK = 0,
	SBX_EXIT_FAIL = 1,  /* the thing checked failed */
	SBX_EXIT_USAGE = 2, /* bad command line */
	SBX_EXIT_ENV = 3,   /* environment: unreadable file, engine, database */
};

struct sbx_error {
	int status; /* one of SBX_EXIT_* */
	int errnum; /* errno of the cause, 0 if none */
	int http; /* HTTP status of an engine reply (404, 409, 304...), or 0 */
	char *msg;
	char *hint; /* what the user can do about it, or NULL; printed apart */
	/* Why, in a few words of sbxcat's own and never text from outside
	 * ("outside the workspace"): a static string, or NULL.  The audit's
	 * detail column says this, never msg (which quotes paths). */
	const char *reason;
};

/* errnum, when non-zero, appends ": strerror(errnum)". Returns -1. */
int sbx_error_set(struct sbx_error **err, int status, int errnum,
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

#endif

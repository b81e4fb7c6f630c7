/*
 * wire-status.h - an error of svc/ as sandboxd answers it: the HTTP
 * status of its kind and reason, from one table, and sandboxd's text,
 * built from the error's facts (its reason constant and numbers,
 * error.h), never read back out of its message.
 *
 * The message (err->msg) is the command line's: it names keys and host
 * paths a client must not see, so a text here quotes it only for an
 * error that has no words of sandboxd's (an engine's failure, say).
 *
 * Thread rule: nothing here keeps state.
 */
#ifndef SBX_WIRE_STATUS_H
#define SBX_WIRE_STATUS_H

#include <stdbool.h>

#include "basic/error.h"

/* What a text names besides the error's facts, as the client gave it;
 * NULL (or false) for what the route does not have. */
struct wire_subject {
	const char *tenant;	/* the tenant that asked */
	const char *session;	/* the session's id on the wire */
	const char *path;	/* a file operation's path */
	bool dir;		/* ... which names a directory (ls) */
	const char *old;	/* edit's old_string */
	const char *durability; /* what an open asked for */
	const char *run;	/* run's run_id */
	bool waking;		/* a hibernated session woken (429's text) */
	/* What failed, said before an error of no words of sandboxd's
	 * ("Could not start sandbox"): the call's upstream, so a failure
	 * of sbxcat's side (5xx) is sandboxd's 502. */
	const char *failing;
	/* The call was the audit's: a 502 is the database's, not counted
	 * as the engine's. */
	bool audit;
};

/* The HTTP status of err: its reason's row, else an engine's reply
 * (err->http) is 502, else its kind's row.  Every kind has one. */
int wire_status(const struct sbx_error *err);
/* {"detail": TEXT}'s text for err (free it). */
char *wire_error_text(const struct sbx_error *err,
		      const struct wire_subject *sub);
/* A failed read's content, a failed edit's error (200 answers, in the
 * words sandboxd's clients and models know; free them). */
char *wire_read_text(const struct sbx_error *err,
		     const struct wire_subject *sub);
char *wire_edit_text(const struct sbx_error *err,
		     const struct wire_subject *sub);

/* The service's log line of an error a client is not told (its
 * message names host paths and keys): the route, the session, the
 * message (escaped). */
struct wire_req;
void wire_log_error(const struct wire_req *w, const struct sbx_error *err);
/* msg with the session's host workspace as the work dir, the workspace
 * root, and the session's key as its id: what a client may read.  A new
 * string. */
char *wire_said(const struct wire_req *w, const char *msg);

/* Answer err: wire_status with {"detail": wire_error_text}.  sub may be
 * NULL; its session defaults to the route's. */
struct wire_req;
void wire_error(struct wire_req *w, const struct sbx_error *err,
		const struct wire_subject *sub);

#endif

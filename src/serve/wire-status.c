/*
 * wire-status.c - the one map from an svc/ error to sandboxd's answer
 * (wire-status.h): the status table, and the texts of sandboxd-wire.md
 * section 3 built from the error's reason and numbers.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "basic/xjson.h"
#include "serve/wire-status.h"
#include "serve/wire.h"

/*
 * A kind's status when its reason has none of its own.  An upstream
 * that did not serve (the engine, the database, the disk) is 502, a
 * fault of sbxcat's own or of data it holds 500: one status each, for
 * every route.
 */
static const int kind_status[SBX_E_COUNT] = {
    [SBX_E_INTERNAL] = 500,
    [SBX_E_NOT_FOUND] = 404,
    [SBX_E_CONFLICT] = 409,
    [SBX_E_REFUSED] = 403,
    [SBX_E_BAD_DATA] = 500,
    [SBX_E_INVALID] = 422,
    [SBX_E_UNAVAILABLE] = 502,
    [SBX_E_TIMEOUT] = 504,
    /* The client went away (nobody reads it) or the service stops. */
    [SBX_E_CANCELLED] = 503,
};

/* The reasons whose status is not their kind's (0: the kind's). */
static const int reason_status[SBX_R_COUNT] = {
    /* A path the client named that is not there, or not a file (a
     * directory for ls): sandboxd's 404 "No such file". */
    [SBX_R_NOT_FOUND] = 404,
    [SBX_R_A_DIRECTORY] = 404,
    [SBX_R_NOT_A_DIRECTORY] = 404,
    [SBX_R_NOT_REGULAR] = 404,
    /* The request's own fault, as sandboxd words it. */
    [SBX_R_OUTSIDE] = 400,
    [SBX_R_OVER_READ_LIMIT] = 400,
    /* The ceilings of sessions: a client backs off and retries. */
    [SBX_R_TENANT_QUOTA] = 429,
    [SBX_R_HOST_QUOTA] = 429,
    [SBX_R_OPEN_QUOTA] = 429,
    [SBX_R_KEPT_BUDGETS] = 429,
    /* run on a session whose container is not there (section 9). */
    [SBX_R_NOT_RUNNING] = 410,
    [SBX_R_GONE] = 410,
};

int wire_status(const struct sbx_error *err)
{
	if (!err)
		return 500;
	if ((unsigned)err->why < SBX_R_COUNT && reason_status[err->why])
		return reason_status[err->why];
	/* The engine answered, refusing: its fault for this service's
	 * client, who asked nothing of the engine. */
	if (err->http)
		return 502;
	if ((unsigned)err->kind < SBX_E_COUNT)
		return kind_status[err->kind];
	return 500;
}

static const struct wire_subject none;

/* The message, after what failed when the route says it. */
/*
 * An error with no words of sandboxd's.  The message is the command
 * line's: it names host paths (the workspace, a budget's image, a
 * temporary file with the service's pid), keys and an engine's own text,
 * none of which a client is to see (issue 28, item 1), so the text is
 * said from the facts alone: what failed, the kind's words, the reason,
 * the engine's status.  wire_error writes the message to the service's
 * log.  A request's own mistake (invalid) keeps its message: it is about
 * the values the client sent, and wire_error says it through wire_said.
 */
static char *plain(const struct sbx_error *err, const struct wire_subject *s)
{
	static const char *const what[SBX_E_COUNT] = {
	    [SBX_E_INTERNAL] = "an internal error",
	    [SBX_E_NOT_FOUND] = "something it needs was not found",
	    [SBX_E_CONFLICT] = "something of the session's is in the way",
	    [SBX_E_REFUSED] = "it was refused",
	    [SBX_E_BAD_DATA] = "the data it met is not what it should be",
	    [SBX_E_INVALID] = "a value is not valid",
	    [SBX_E_UNAVAILABLE] = "the container engine or the host failed",
	    [SBX_E_TIMEOUT] = "it ran out of time",
	    [SBX_E_CANCELLED] = "it was cancelled",
	};
	struct strbuf sb = STRBUF_INIT;
	const char *why;

	if (err->kind == SBX_E_INVALID)
		return s->failing ? xasprintf("%s: %s", s->failing, err->msg)
				  : xstrdup(err->msg);
	why = (unsigned)err->kind < SBX_E_COUNT && what[err->kind]
		  ? what[err->kind]
		  : what[SBX_E_INTERNAL];
	if (s->failing)
		strbuf_addf(&sb, "%s: ", s->failing);
	strbuf_addstr(&sb, err->reason ? err->reason : why);
	if (err->http)
		strbuf_addf(&sb, " (the engine answered HTTP %d)", err->http);
	return strbuf_detach(&sb, NULL);
}

static const char *or_unknown(const char *s)
{
	return s ? s : "";
}

/* The ceilings' texts: n of max sessions held. */
static char *quota_text(const struct sbx_error *err,
			const struct wire_subject *s)
{
	switch (err->why) {
	case SBX_R_TENANT_QUOTA:
		return xasprintf("Tenant '%s' already holds %llu of %llu "
				 "sessions. Release an idle session before "
				 "opening another.",
				 or_unknown(s->tenant), err->n, err->max);
	case SBX_R_HOST_QUOTA:
		return xasprintf("Session limit of %llu reached. Release an "
				 "idle session before opening another.",
				 err->max);
	case SBX_R_OPEN_QUOTA:
		return xasprintf("Service holds its ceiling of %llu open "
				 "sessions and all of them are in use. Close "
				 "one before opening another.",
				 err->max);
	default:
		return NULL;
	}
}

char *wire_error_text(const struct sbx_error *err, const struct wire_subject *s)
{
	char *q;

	if (!s)
		s = &none;
	q = quota_text(err, s);
	if (q && s->waking) {
		char *w = xasprintf("Cannot wake session %s: %s",
				    or_unknown(s->session), q);
		free(q);
		return w;
	}
	if (q)
		return q;
	switch (err->why) {
	case SBX_R_DURABILITY_DIFFERS:
		if (!s->durability)
			break;
		return xasprintf("Session %s is %s. Close it with purge before "
				 "opening it %s.",
				 or_unknown(s->session),
				 strcmp(s->durability, "ephemeral") == 0
				     ? "persistent"
				     : "ephemeral",
				 s->durability);
	case SBX_R_BUDGET_DIFFERS:
		if (!err->n)
			return xasprintf("Session %s has no disk budget. Close "
					 "it with purge to give it one.",
					 or_unknown(s->session));
		return xasprintf("Session %s has a disk budget of %llu bytes, "
				 "not %llu. Close it with purge to change it.",
				 or_unknown(s->session), err->n, err->max);
	case SBX_R_RUN_RUNNING:
		if (!s->run)
			break;
		return xasprintf("Run %s is running already", s->run);
	case SBX_R_NOT_RUNNING:
		return xstrdup("The sandbox is gone: its container is stopped");
	case SBX_R_GONE:
		return xstrdup(
		    "The sandbox is gone: its container was removed");
	case SBX_R_OUTSIDE:
		if (!s->path)
			break;
		return xasprintf("Path '%s' is outside the workspace", s->path);
	case SBX_R_OVER_READ_LIMIT:
		return xasprintf("File is %llu bytes, over the %llu-byte read "
				 "limit",
				 err->n, err->max);
	default:
		break;
	}
	/* What the client named is not there: sandboxd's words for the
	 * file or the directory of the archive's routes. */
	if (s->path && wire_status(err) == 404)
		return xasprintf("No such %s: %s",
				 s->dir ? "directory" : "file", s->path);
	return plain(err, s);
}

char *wire_read_text(const struct sbx_error *err, const struct wire_subject *s)
{
	if (!s)
		s = &none;
	switch (err->why) {
	case SBX_R_NOT_FOUND:
	case SBX_R_A_DIRECTORY:
	case SBX_R_NOT_REGULAR:
	case SBX_R_NOT_A_DIRECTORY:
		return xasprintf("Error: File '%s' not found",
				 or_unknown(s->path));
	case SBX_R_PAST_END:
		return xstrdup("[End of file]");
	case SBX_R_OUTSIDE:
		return xasprintf("Error: Path '%s' is outside the workspace",
				 or_unknown(s->path));
	case SBX_R_OVER_READ_LIMIT:
		return xasprintf("[Error: File is %llu bytes, over the "
				 "%llu-byte read limit. Read a slice with "
				 "execute() instead, e.g. \"sed -n '1,200p' "
				 "%s\".]",
				 err->n, err->max, or_unknown(s->path));
	default:
		return xasprintf("[Error reading file: %s]", err->msg);
	}
}

char *wire_edit_text(const struct sbx_error *err, const struct wire_subject *s)
{
	if (!s)
		s = &none;
	switch (err->why) {
	case SBX_R_NOT_FOUND:
	case SBX_R_A_DIRECTORY:
		return xasprintf("File '%s' not found", or_unknown(s->path));
	case SBX_R_OLD_NOT_FOUND:
		return xasprintf("String '%s' not found in file",
				 or_unknown(s->old));
	case SBX_R_OLD_NOT_UNIQUE:
		return xasprintf("String '%s' found %llu times. Use "
				 "replace_all=True to replace all, or provide "
				 "more context.",
				 or_unknown(s->old), err->n);
	default:
		return xasprintf("Failed to edit file: %s", err->msg);
	}
}

void wire_error(struct wire_req *w, const struct sbx_error *err,
		const struct wire_subject *sub)
{
	struct wire_subject s = sub ? *sub : none;
	int status = wire_status(err);
	char *text;

	if (!s.session)
		s.session = w->ws.wire.id[0]	? w->ws.wire.id
			    : w->req->params[0] ? w->req->params[0]
						: NULL;
	if (!s.tenant)
		s.tenant = w->call.tenant;
	/* What failed is the call's upstream (the sandbox's start, the
	 * audit's read): sandboxd's 502, whatever the kind. */
	if (s.failing && status >= 500)
		status = 502;
	if (status == 502 && !s.audit)
		atomic_fetch_add(&w->sv->engine_errors, 1);
	text = wire_error_text(err, &s);
	if (err->kind == SBX_E_INVALID) {
		char *t = wire_said(w, text);

		free(text);
		text = t;
	} else if (status >= 500) {
		wire_log_error(w, err);
	}
	wire_json(w, status, xjson_pack("{s:o}", "detail", xjson_text(text)));
	free(text);
}

void wire_log_error(const struct wire_req *w, const struct sbx_error *err)
{
	struct strbuf sb = STRBUF_INIT;
	const char *id = w->ws.wire.id[0]	 ? w->ws.wire.id
			 : w->req->session[0] ? w->req->session
					      : "-";

	strbuf_addf(&sb, "sbxcat serve: %s %s (%s): ", w->req->method,
		    w->req->route ? w->req->route : "-", id);
	text_add_escaped(&sb, err->msg, strlen(err->msg));
	strbuf_addch(&sb, '\n');
	if (w->sv->log_fd >= 0 && write_all(w->sv->log_fd, sb.buf, sb.len) < 0) {
		/* nowhere else to say it */
	}
	strbuf_release(&sb);
}

char *wire_said(const struct wire_req *w, const char *msg)
{
	const char *wd = w->ws.key[0]
			     ? svc_session_work_dir(&w->snap->svc, &w->ws.rec)
			     : w->snap->svc.cfg.session.work_dir;
	const char *root = w->snap->svc.cfg.session.root;
	size_t nroot = root ? strlen(root) : 0;
	cleanup_free char *ws = NULL;
	struct strbuf sb = STRBUF_INIT;
	const char *p = msg;

	if (w->ws.key[0])
		ws = w->ws.rec.workspace
			 ? xasprintf("%s/%s", root, w->ws.rec.workspace)
			 : xasprintf("%s/%s/workspace", root, w->ws.key);
	while (*p) {
		if (ws && strncmp(p, ws, strlen(ws)) == 0) {
			strbuf_addstr(&sb, wd ? wd : "/workspace");
			p += strlen(ws);
		} else if (nroot && strncmp(p, root, nroot) == 0) {
			strbuf_addstr(&sb, "(the workspace root)");
			p += nroot;
		} else if (w->ws.key[0] &&
			   strncmp(p, w->ws.key, strlen(w->ws.key)) == 0) {
			strbuf_addstr(&sb, w->ws.wire.id[0] ? w->ws.wire.id
							    : "(session)");
			p += strlen(w->ws.key);
		} else {
			strbuf_addch(&sb, *p++);
		}
	}
	return strbuf_detach(&sb, NULL);
}

/*
 * cmd-audit-follow.c - `sbxcat audit ls --follow` and `sbxcat audit tail`
 * (docs/audit.md, "Following"): the rows a filter matches printed as
 * they commit, each once (svc_audit_follow), until Ctrl-C, SIGTERM or
 * the reader leaving, which are its ordinary end (status 0, as tail -f
 * and journalctl -f end).
 *
 * Each row is written and flushed as it comes: a JSON line with --json,
 * else the line cmd-audit.c's table makes of it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/sig.h"
#include "cli/cmd-audit-follow.h"

int cmd_audit_opt_lines(const struct cmd_entry *cmd, const char *name,
			const char *arg, void *field)
{
	struct cmd_audit_lines *l = field;
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (!*arg || *end || *arg < '0' || *arg > '9' || errno ||
	    v > SVC_AUDIT_LS_MAX)
		return cmd_usage_error(cmd,
				       "--%s '%s': a number of rows, 0 to %d",
				       name, arg, SVC_AUDIT_LS_MAX);
	l->n = v;
	l->given = true;
	return 0;
}

struct follow_out {
	bool json;
	void (*line)(void *arg, json_t *row, struct strbuf *out);
	void *line_arg;
	struct strbuf buf;
};

/* Write buf whole and flush it: -1 with the errno (EPIPE: the reader
 * left) as the error. */
static int put(struct strbuf *buf, struct sbx_error **err)
{
	if (fwrite(buf->buf, 1, buf->len, stdout) != buf->len ||
	    fflush(stdout) != 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "writing the output");
	return 0;
}

static int follow_row(void *arg, json_t *row, struct sbx_error **err)
{
	struct follow_out *o = arg;

	strbuf_reset(&o->buf);
	if (o->json) {
		char *text = json_dumps(row, JSON_COMPACT);

		strbuf_addstr(&o->buf, text);
		strbuf_addch(&o->buf, '\n');
		free(text);
	} else {
		o->line(o->line_arg, row, &o->buf);
	}
	return put(&o->buf, err);
}

/* The reader left: what stdio still holds is dropped and standard
 * output points at /dev/null, so closing it at exit reports nothing. */
static void stdout_drop(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	__fpurge(stdout);
	clearerr(stdout);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
}

int cmd_audit_follow(struct sbx_ctx *ctx, const svc_audit_filter *f,
		     unsigned long tail, int (*report)(struct sbx_error **err),
		     void (*line)(void *arg, json_t *row, struct strbuf *out),
		     void *line_arg)
{
	struct follow_out o = {.json = ctx->json,
			       .line = line,
			       .line_arg = line_arg,
			       .buf = STRBUF_INIT};
	struct svc_audit_follow_req req = {.filter = *f,
					   .tail = tail,
					   .out_fd = STDOUT_FILENO,
					   .row = follow_row,
					   .row_arg = &o};
	struct sbx_error *err = NULL;
	int rc = 0;

	/* A reader that leaves is an ordinary end: EPIPE, not death. */
	signal(SIGPIPE, SIG_IGN);
	fflush(stdout);
	if (svc_audit_follow(&ctx->svc, &ctx->call, &req, &err) < 0) {
		if (err->errnum == EPIPE) {
			sbx_error_free(&err);
			stdout_drop();
		} else {
			rc = report(&err);
		}
	}
	/* Ctrl-C and SIGTERM end a follow as they end tail -f: status 0,
	 * not death by the signal. */
	if (sig_caught() == SIGINT || sig_caught() == SIGTERM)
		sig_forget();
	strbuf_release(&o.buf);
	return rc;
}

/*
 * cmd-audit-follow.c - `sbxcat audit ls --follow` and `sbxcat audit tail`
 * (docs/audit.md, "Following"): the rows a filter matches printed as
 * they commit, each once (svc_audit_follow), until Ctrl-C, SIGTERM or
 * the reader leaving, which are its ordinary end (status 0, as tail -f
 * and journalctl -f end).
 *
 * Each row is written and flushed as it comes: a JSON line with --json,
 * else the table's cells (svc_audit_table_*), tab-separated under one
 * header off a terminal; on one, padded to the widest cell seen so far
 * (the rows to come are not known, so the widths only grow).
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
#include "basic/text.h"
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
	bool json, tty, head;
	size_t ncols;
	size_t *w;
	struct strbuf *cell, line;
};

/* Write line whole and flush it: -1 with the errno (EPIPE: the reader
 * left) as the error. */
static int put(struct strbuf *line, struct sbx_error **err)
{
	if (fwrite(line->buf, 1, line->len, stdout) != line->len ||
	    fflush(stdout) != 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "writing the output");
	return 0;
}

static void add_cells(struct follow_out *o, struct strbuf *cells)
{
	for (size_t k = 0; k < o->ncols; k++) {
		size_t n = utf8_chars(cells[k].buf, cells[k].len);

		strbuf_add(&o->line, cells[k].buf, cells[k].len);
		if (k == o->ncols - 1)
			break;
		if (!o->tty) {
			strbuf_addch(&o->line, '\t');
			continue;
		}
		if (n > o->w[k])
			o->w[k] = n;
		for (size_t i = n; i < o->w[k] + 2; i++)
			strbuf_addch(&o->line, ' ');
	}
	strbuf_addch(&o->line, '\n');
}

static int follow_row(void *arg, json_t *row, struct sbx_error **err)
{
	struct follow_out *o = arg;
	char *text;

	strbuf_reset(&o->line);
	if (o->json) {
		text = json_dumps(row, JSON_COMPACT);
		strbuf_addstr(&o->line, text);
		strbuf_addch(&o->line, '\n');
		free(text);
		return put(&o->line, err);
	}
	for (size_t k = 0; k < o->ncols; k++) {
		size_t cut;

		strbuf_reset(&o->cell[k]);
		svc_audit_table_cell(k, row, &o->cell[k]);
		svc_audit_table_head(k, &cut);
		if (o->tty && cut &&
		    utf8_chars(o->cell[k].buf, o->cell[k].len) > cut) {
			size_t off = 0;

			for (size_t n = 0; n < cut - 3 && off < o->cell[k].len;
			     n++) {
				uint32_t cp;
				size_t l =
				    utf8_decode(o->cell[k].buf + off,
						o->cell[k].len - off, &cp);
				off += l ? l : 1;
			}
			strbuf_setlen(&o->cell[k], off);
			strbuf_addstr(&o->cell[k], "...");
		}
	}
	if (!o->head) {
		struct strbuf *h = xcalloc(o->ncols, sizeof(*h));
		size_t cut;

		for (size_t k = 0; k < o->ncols; k++) {
			strbuf_init(&h[k]);
			strbuf_addstr(&h[k], svc_audit_table_head(k, &cut));
		}
		add_cells(o, h);
		for (size_t k = 0; k < o->ncols; k++)
			strbuf_release(&h[k]);
		free(h);
		o->head = true;
	}
	add_cells(o, o->cell);
	return put(&o->line, err);
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
		     unsigned long tail, int (*report)(struct sbx_error **err))
{
	struct follow_out o = {.json = ctx->json,
			       .tty = isatty(STDOUT_FILENO),
			       .ncols = svc_audit_table_columns(),
			       .line = STRBUF_INIT};
	struct svc_audit_follow_req req = {.filter = *f,
					   .tail = tail,
					   .out_fd = STDOUT_FILENO,
					   .row = follow_row,
					   .row_arg = &o};
	struct sbx_error *err = NULL;
	int rc = 0;

	o.w = xcalloc(o.ncols, sizeof(*o.w));
	o.cell = xcalloc(o.ncols, sizeof(*o.cell));
	for (size_t k = 0; k < o.ncols; k++) {
		size_t cut;

		strbuf_init(&o.cell[k]);
		o.w[k] = strlen(svc_audit_table_head(k, &cut));
	}
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
	for (size_t k = 0; k < o.ncols; k++)
		strbuf_release(&o.cell[k]);
	free(o.cell);
	free(o.w);
	strbuf_release(&o.line);
	return rc;
}

/*
 * cmd-audit-follow.h - `audit ls --follow` and `audit tail`
 * (cmd-audit-follow.c), called from cmd-audit.c's option tables and
 * verbs.
 */
#ifndef SBX_CMD_AUDIT_FOLLOW_H
#define SBX_CMD_AUDIT_FOLLOW_H

#include "cli/cmd.h"
#include "svc/svc-audit.h"

#define CMD_AUDIT_TAIL_DEFAULT 10 /* rows `audit tail` shows first */

/* -n/--lines N: 0 to SVC_AUDIT_LS_MAX rows into an unsigned long; the
 * field's bool after it is set (a CMD_CALL parser). */
struct cmd_audit_lines {
	unsigned long n;
	bool given;
};
int cmd_audit_opt_lines(const struct cmd_entry *cmd, const char *name,
			const char *arg, void *field);

/*
 * Print the rows f matches as they commit, the last tail first, until a
 * signal or the reader leaves (both status 0): a JSON line each with
 * --json, else the lines line appends (cmd-audit.c's table, a header
 * before the first row).  An error goes to report (cmd-audit.c's, which
 * adds its hints) for the exit status.
 */
int cmd_audit_follow(struct sbx_ctx *ctx, const svc_audit_filter *f,
		     unsigned long tail, int (*report)(struct sbx_error **err),
		     void (*line)(void *arg, json_t *row, struct strbuf *out),
		     void *line_arg);

#endif

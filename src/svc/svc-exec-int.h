/*
 * svc-exec-int.h - svc_exec for svc/ alone: an operation of svc/ that runs
 * its work as a command in the container (svc-inside.c) and writes the
 * row of its own op, not the command's "execute" row.  Never for a front
 * end: every command a client asks for is svc_exec's, with its row.
 */
#ifndef SBX_SVC_EXEC_INT_H
#define SBX_SVC_EXEC_INT_H

#include <stdbool.h>

#include "svc/svc-exec.h"

/* svc_exec; row false: no "execute" row (the caller writes its own, and
 * checked the audit was ready before: this checks it again). */
int svc_exec_run(const struct svc *s, const struct svc_call *call,
		 const struct svc_exec_req *req, struct svc_exec_res *res,
		 bool row, struct sbx_error **err);

/*
 * The end every file operation of svc/ shares (svc-fs.c, svc-inside.c),
 * after its row is written (aerr: the row's failure, or NULL): the
 * session's activity stamped when found (refused operations too), the
 * row's failure chained after the operation's own, the audit closed, the
 * record and the root released.  0, or -1 with *err.
 */
struct audit;
struct session_record;
struct session_root;
int svc_op_settle(struct session_root *root, struct session_record *rec,
		  bool found, const struct svc_call *call, struct audit *au,
		  struct sbx_error *aerr, struct sbx_error **err);

#endif

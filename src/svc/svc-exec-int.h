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

#endif

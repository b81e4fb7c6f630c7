/*
 * svc-int.h - what the files of svc/ share among themselves and no front
 * end calls: an operation of svc/ that runs its work as a command in the
 * container (svc-inside.c) without the command's "execute" row; the
 * recorder made ready before acting and the row written after
 * (svc-session.c, svc-e2b.c); and the beginning and end every file
 * operation has (svc-fs.c, svc-inside.c).  Defined in svc-exec.c and
 * svc-op.c.
 */
#ifndef SBX_SVC_INT_H
#define SBX_SVC_INT_H

#include <stdbool.h>

#include "audit/audit.h"
#include "session/session.h"
#include "svc/svc-exec.h"

/* svc_exec; row false: no "execute" row (the caller writes its own, and
 * checked the audit was ready before: this checks it again).  Never for
 * a front end: every command a client asks for is svc_exec's, with its
 * row. */
int svc_exec_run(const struct svc *s, const struct svc_call *call,
		 const struct svc_exec_req *req, struct svc_exec_res *res,
		 bool row, struct sbx_error **err);

/* The call's recorder in *au, ready to write; else -1 with *err and
 * nothing open (the operation fails closed: never done unrecorded). */
int svc_audit_begin(const struct svc *s, const struct svc_call *call,
		    struct audit **au, struct sbx_error **err);
/*
 * The row of a session's operation (open, close, an E2B lifecycle step),
 * ok unless *err, no bytes or results.  When it cannot be written the
 * audit's error takes *err's place, the operation's own chained before it
 * (sbx_error_chain), to be said first.
 */
void svc_audit_row(struct audit *au, enum audit_op op, const char *tenant,
		   const char *key, const char *wire_id, const char *runtime,
		   const char *target, long long started, const char *detail,
		   struct sbx_error **err);

/*
 * A file operation on a session (svc-fs.c's on the host, svc-inside.c's
 * in the container), embedded first in each one's own state.
 */
struct svc_op {
	const struct svc *s;
	const struct svc_call *call;
	const char *key; /* as asked, "" for none */
	enum audit_op kind;
	struct audit *au;
	bool unrecorded; /* no row: the recorder could not open or is not
			    ready */
	bool found;	 /* the session: its activity is stamped */
	long long started;
	struct session_root root;
	struct session_record rec;
	long long bytes, results; /* the row's; AUDIT_NONE until set */
	const char *detail;	  /* the row's, when it went well */
};

/*
 * The beginning: the recorder opened, the root opened (its lock waits end
 * on the call's cancel), the session found as the caller's.  0, or -1
 * with *err; svc_op_end in either case.
 */
int svc_op_begin(struct svc_op *o, const struct svc *s,
		 const struct svc_call *call, const char *key,
		 enum audit_op kind, struct sbx_error **err);
/* Nothing is read or changed unless its row will be written: after the
 * operation's own checks, before it acts.  0, or -1 with *err. */
int svc_op_ready(struct svc_op *o, struct sbx_error **err);
/*
 * The end: the row (target as the row shows it; how the operation went is
 * *err; a failure of the row is said after the operation's own), the
 * session's activity stamped when found (refused operations too: an agent
 * that keeps trying is not idle), the recorder closed, the record and the
 * root released.  0, or -1 with *err.
 */
int svc_op_end(struct svc_op *o, const char *target, struct sbx_error **err);

/* The audit's database for a call (svc-audit.c): the service's pool's,
 * else a connection of the call's own; "no database configured" as
 * svc_audit_needs_database says.  close gives it back (NULL: nothing). */
struct auditdb;
int svc_audit_db_open(const struct svc *s, struct auditdb **db,
		      struct sbx_error **err);
void svc_audit_db_close(const struct svc *s, struct auditdb *db);

#endif

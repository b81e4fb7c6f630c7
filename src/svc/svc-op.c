/*
 * svc-op.c - the bookkeeping svc/'s operations share (svc-int.h): the
 * recorder made ready before acting and a session operation's row after
 * it; and the beginning and the end every file operation has (svc-fs.c's
 * on the host and svc-inside.c's in the container differ in what they do
 * between them, not in how a session is found, recorded and released).
 */
#include "config.h"

#include <string.h>

#include "audit/audit.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "session/session-wire.h"
#include "session/session.h"
#include "svc/svc-int.h"
#include "svc/svc-wire.h"
#include "svc/svc.h"

int svc_audit_begin(const struct svc *s, const struct svc_call *call,
		    struct audit **au, struct sbx_error **err)
{
	if (svc_audit_open(s, call, au, err) < 0)
		return -1;
	if (audit_ready(*au, err) < 0) {
		svc_audit_close(call, *au);
		*au = NULL;
		return -1;
	}
	return 0;
}

void svc_audit_row(struct audit *au, enum audit_op op, const char *tenant,
		   const char *key, const char *wire_id, const char *runtime,
		   const char *target, long long started, const char *detail,
		   struct sbx_error **err)
{
	struct sbx_error *aerr = NULL;
	struct audit_event ev = {
	    .op = op,
	    .tenant = tenant,
	    .session_key = key,
	    .wire_id = wire_id,
	    .runtime = runtime,
	    .target = target,
	    .ok = !*err,
	    .why = *err,
	    .detail = detail,
	    .bytes = AUDIT_NONE,
	    .results = AUDIT_NONE,
	    .duration_ms = clock_now_ms() - started,
	};

	if (audit_event(au, &ev, &aerr) == 0)
		return;
	sbx_error_chain(&aerr, err);
	*err = aerr;
}

int svc_op_begin(struct svc_op *o, const struct svc *s,
		 const struct svc_call *call, const char *key,
		 enum audit_op kind, struct sbx_error **err)
{
	memset(o, 0, sizeof(*o));
	o->s = s;
	o->call = call;
	o->key = key ? key : "";
	o->kind = kind;
	o->root = (struct session_root)SESSION_ROOT_INIT;
	o->bytes = o->results = AUDIT_NONE;
	if (svc_audit_open(s, call, &o->au, err) < 0) {
		o->unrecorded = true;
		return -1;
	}
	o->started = clock_now_ms();
	if (svc_root_open(s, call, &o->root, err) < 0)
		return -1;
	/* The waits for a lock (the activity stamp's) end on the call's
	 * cancel too. */
	o->root.cancel = call ? call->cancel : NULL;
	if (session_find(&o->root, o->key, call ? call->tenant : NULL, &o->rec,
			 err) < 0)
		return -1;
	o->found = true;
	return 0;
}

int svc_op_ready(struct svc_op *o, struct sbx_error **err)
{
	if (audit_ready(o->au, err) < 0) {
		o->unrecorded = true;
		return -1;
	}
	return 0;
}

/*
 * The row: the session's tenant, key and runtime (or, for a session not
 * found, the caller's tenant and no key: the key asked for goes to the
 * detail, never onto another tenant's chain).
 */
static void record(struct svc_op *o, const char *target,
		   const struct sbx_error *why, struct sbx_error **aerr)
{
	char wid[SESSION_WIRE_ID_MAX + 1];
	struct audit_event ev = {
	    .op = o->kind,
	    .tenant =
		o->found ? o->rec.tenant : (o->call ? o->call->tenant : NULL),
	    .session_key = o->found ? o->rec.key : NULL,
	    .wire_id =
		o->found ? svc_wire_id_of(&o->root, o->rec.key, wid) : NULL,
	    .asked_key = o->found ? NULL : o->key,
	    .runtime = o->found ? o->rec.runtime : NULL,
	    .target = target,
	    .ok = !why,
	    .why = why,
	    .detail = o->detail, /* the failure says why instead */
	    .bytes = o->bytes,
	    .results = o->results,
	    .duration_ms = clock_now_ms() - o->started,
	};

	audit_event(o->au, &ev, aerr);
}

int svc_op_end(struct svc_op *o, const char *target, struct sbx_error **err)
{
	struct sbx_error *aerr = NULL;

	if (!o->unrecorded)
		record(o, target, *err, &aerr);
	if (o->found) {
		struct sbx_error *terr = NULL;

		if (session_record_touch(&o->root, o->rec.key, &terr) < 0 &&
		    !*err)
			*err = terr;
		else
			sbx_error_free(&terr);
	}
	if (aerr) {
		/* The operation's own failure, if any, is said first. */
		sbx_error_chain(&aerr, err);
		*err = aerr;
	}
	svc_audit_close(o->call, o->au);
	session_record_release(&o->rec);
	session_root_close(&o->root);
	return *err ? -1 : 0;
}

/*
 * svc-wire.c - sessions by the service's ids, and their tokens
 * (svc-wire.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "audit/audit.h"
#include "basic/alloc.h"
#include "basic/base64.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/util.h"
#include "engine/engine.h"
#include "session/session-budget.h"
#include "session/session-engine.h"
#include "svc/svc-wire.h"

const char svc_wire_hibernated[] = SESSION_STATE_HIBERNATED;
/* The wire record keeps the ids the audit takes. */
_Static_assert(SESSION_WIRE_WHO_MAX == AUDIT_ID_MAX, "agent and run: bytes");

const char *svc_wire_tenant(const char *tenant)
{
	return tenant && strcmp(tenant, SVC_WIRE_NO_TENANT) == 0 ? NULL
								  : tenant;
}

bool svc_tenant_counted(const char *tenant)
{
	return svc_wire_tenant(tenant) != NULL;
}

bool svc_wire_name_valid(const char *s)
{
	return session_wire_id_valid(s);
}

void svc_wire_token_new(char token[SVC_WIRE_TOKEN_LEN + 1],
			char hash[SESSION_WIRE_HASH_HEX + 1])
{
	struct strbuf sb = STRBUF_INIT;
	unsigned char raw[32];

	/* 256 bits: 43 base64url digits, the last of 4 bits. */
	random_bytes(raw, sizeof(raw));
	base64_encode(&sb, raw, sizeof(raw), BASE64_URL, false);
	explicit_bzero(raw, sizeof(raw));
	memcpy(token, sb.buf, SVC_WIRE_TOKEN_LEN);
	token[SVC_WIRE_TOKEN_LEN] = '\0';
	explicit_bzero(sb.buf, sb.len);
	strbuf_release(&sb);
	sha256_hex(token, strlen(token), hash);
}

void svc_wire_session_release(struct svc_wire_session *ws)
{
	session_record_release(&ws->rec);
	memset(ws, 0, sizeof(*ws));
}

/* The session of key as call may see it, into ws (root open). */
static int find_at(struct session_root *root, const struct svc_call *call,
		   const char *key, struct svc_wire_session *ws,
		   struct sbx_error **err)
{
	memset(ws, 0, sizeof(*ws));
	memcpy(ws->key, key, sizeof(ws->key));
	if (session_find(root, key, call->tenant, &ws->rec, err) < 0)
		return -1;
	ws->marked = session_hibernated(root, key, NULL, NULL) > 0;
	if (session_wire_read(root, key, &ws->wire, err) < 0) {
		if ((*err)->errnum != ENOENT) {
			svc_wire_session_release(ws);
			return -1;
		}
		sbx_error_free(err);
		return 0;
	}
	ws->has_wire = true;
	ws->open = ws->wire.ntokens > 0;
	return 0;
}

static int find_id(const struct svc *s, const struct svc_call *call,
		   struct session_root *root, const char *id,
		   struct svc_wire_session *ws, struct sbx_error **err)
{
	char key[SESSION_KEY_MAX + 1];

	memset(ws, 0, sizeof(*ws));
	if (!session_wire_id_valid(id))
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "not a session id");
	if (svc_root_open(s, call, root, err) < 0 ||
	    svc_session_key_of(s, root, SVC_WIRE_KEY_TENANT,
			       SVC_WIRE_KEY_SCOPE, id, "", key, err) < 0)
		return -1;
	return find_at(root, call, key, ws, err);
}

const char *svc_wire_id_of(struct session_root *root, const char *key,
			   char out[SESSION_WIRE_ID_MAX + 1])
{
	struct session_wire w;
	struct sbx_error *err = NULL;

	out[0] = '\0';
	if (key && key[0] && session_wire_read(root, key, &w, &err) == 0)
		memcpy(out, w.id, sizeof(w.id));
	sbx_error_free(&err);
	return out[0] ? out : NULL;
}

const char *svc_wire_alias(const struct svc *s, const struct svc_call *call,
			   const char *name, char out[SESSION_WIRE_ID_MAX + 1])
{
	struct session_root root = SESSION_ROOT_INIT;
	char key[SESSION_KEY_MAX + 1];
	struct sbx_error *err = NULL;
	bool same = false;

	out[0] = '\0';
	/* The key's wire record names an id whose key is this one: a
	 * directory named like a key is no alias of anything else. */
	if (session_key_valid(name) && svc_root_open(s, call, &root, &err) == 0 &&
	    svc_wire_id_of(&root, name, out) &&
	    svc_session_key_of(s, &root, SVC_WIRE_KEY_TENANT, SVC_WIRE_KEY_SCOPE,
			       out, "", key, &err) == 0)
		same = strcmp(key, name) == 0;
	session_root_close(&root);
	sbx_error_free(&err);
	if (!same)
		out[0] = '\0';
	return same ? out : NULL;
}

int svc_wire_find(const struct svc *s, const struct svc_call *call,
		  const char *id, struct svc_wire_session *ws,
		  struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	int rc = find_id(s, call, &root, id, ws, err);

	session_root_close(&root);
	return rc;
}

int svc_wire_auth(const struct svc *s, const struct svc_call *call,
		  const char *id, const char *token,
		  struct svc_wire_session *ws, struct sbx_error **err)
{
	struct svc_call any = *call;
	char hash[SESSION_WIRE_HASH_HEX + 1];
	bool ok = false;

	any.tenant = NULL;
	if (!token || svc_wire_find(s, &any, id, ws, err) < 0) {
		if (*err && (*err)->kind != SBX_E_NOT_FOUND &&
		    (*err)->kind != SBX_E_INVALID)
			return -1;
		sbx_error_free(err);
		return sbx_error_set(err, SBX_E_REFUSED, 0, "not a token of "
							    "the session");
	}
	sha256_hex(token, strlen(token), hash);
	/* Every stored hash compared, whichever matches. */
	for (size_t i = 0; i < ws->wire.ntokens; i++)
		ok |= CRYPTO_memcmp(hash, ws->wire.tokens[i],
				    SESSION_WIRE_HASH_HEX) == 0;
	if (ok && ws->open)
		return 0;
	svc_wire_session_release(ws);
	return sbx_error_set(err, SBX_E_REFUSED, 0,
			     "not a token of the session");
}

/* What an open of an id already known decides before it opens. */
static int open_check(const struct svc_wire_open_req *req,
		      struct svc_wire_session *ws, struct svc_wire_open_res *res,
		      const char **runtime, struct sbx_error **err)
{
	if (ws->open && !(req->reuse || req->attach)) {
		res->refused = SVC_WIRE_EXISTS;
		return sbx_error_set(err, SBX_E_CONFLICT, 0,
				     "session exists: %s", req->id);
	}
	if (ws->open && req->runtime &&
	    strcmp(req->runtime, ws->rec.runtime) != 0) {
		res->refused = SVC_WIRE_RUNTIME;
		snprintf(res->open_runtime, sizeof(res->open_runtime), "%s",
			 ws->rec.runtime);
		return sbx_error_set(err, SBX_E_CONFLICT, 0,
				     "session %s is open on runtime '%s'",
				     req->id, ws->rec.runtime);
	}
	if (!req->runtime)
		*runtime = ws->rec.runtime;
	res->reused = ws->open;
	res->marked = ws->marked;
	return 0;
}

/* The id's session before the open: its record when it has one (the
 * caller's tenant's, else the id is taken). */
static int open_before(const struct svc *s, const struct svc_call *call,
		       const struct svc_wire_open_req *req,
		       struct svc_wire_session *ws,
		       struct svc_wire_open_res *res, const char **runtime,
		       struct sbx_error **err)
{
	struct svc_call any = *call;

	any.tenant = NULL;
	if (svc_wire_find(s, &any, req->id, ws, err) < 0) {
		if ((*err)->kind != SBX_E_NOT_FOUND)
			return -1;
		sbx_error_free(err);
		if (req->attach) {
			res->refused = SVC_WIRE_NOTHING;
			return sbx_error_set(err, SBX_E_NOT_FOUND, 0,
					     "nothing to attach to: %s",
					     req->id);
		}
		return 0;
	}
	if (strcmp(ws->rec.tenant, call->tenant) != 0) {
		res->refused = SVC_WIRE_EXISTS;
		return sbx_error_set(err, SBX_E_CONFLICT, 0,
				     "session exists: %s", req->id);
	}
	return open_check(req, ws, res, runtime, err);
}

int svc_wire_open(const struct svc *s, const struct svc_call *call,
		  const struct svc_wire_open_req *req,
		  struct svc_wire_open_res *res, struct sbx_error **err)
{
	struct svc_wire_session ws = {0};
	struct svc_session_open_req o = {
	    .scope = SVC_WIRE_KEY_SCOPE,
	    .subject = req->id,
	    .host = "",
	    .cat = req->cat,
	    .cat_err = req->cat_err,
	    .runtime = req->runtime,
	    .name = req->id,
	    .labels_json = req->labels,
	    .durability = req->durability,
	    .disk_quota = req->disk_quota,
	    .disk_inodes = req->disk_inodes,
	    .work_dir = req->work_dir,
	};
	struct session_root root = SESSION_ROOT_INIT;
	struct svc_call c = *call;
	char hash[SESSION_WIRE_HASH_HEX + 1];
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (!session_wire_id_valid(req->id))
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "not a session id");
	if ((req->agent && svc_id_check("agent", req->agent, err) < 0) ||
	    (req->run && svc_id_check("run", req->run, err) < 0))
		return -1;
	/* Who opens: the call's, else the reused session's defaults (its
	 * record, read once here), else the service's. */
	if (!c.agent)
		c.agent = req->default_agent;
	if (!c.run)
		c.run = req->default_run;
	if (open_before(s, &c, req, &ws, res, &o.runtime, err) < 0)
		goto out;
	if (ws.open && !call->agent && ws.wire.agent[0])
		c.agent = ws.wire.agent;
	if (ws.open && !call->run && ws.wire.run[0])
		c.run = ws.wire.run;
	if (svc_session_open(s, &c, &o, &res->open, err) < 0)
		goto out;
	svc_wire_token_new(res->token, hash);
	if (svc_root_open(s, call, &root, err) < 0 ||
	    session_wire_add_token(&root, res->open.key, req->id, hash,
				   req->agent, req->run, err) < 0)
		goto out;
	rc = 0;
out:
	explicit_bzero(hash, sizeof(hash));
	session_root_close(&root);
	svc_wire_session_release(&ws);
	return rc;
}

void svc_wire_open_res_release(struct svc_wire_open_res *res)
{
	svc_session_open_res_release(&res->open);
	explicit_bzero(res->token, sizeof(res->token));
}

int svc_wire_list(const struct svc *s, const struct svc_call *call,
		  struct svc_wire_list_res *res, struct sbx_error **err)
{
	struct svc_session_ls_req lreq = {0};
	struct svc_session_ls_res ls;
	struct session_root root = SESSION_ROOT_INIT;
	size_t alloc = 0;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (svc_session_ls(s, call, &lreq, &ls, err) < 0)
		return -1;
	if (svc_root_open(s, call, &root, err) < 0)
		goto out;
	for (size_t i = 0; i < ls.n; i++) {
		struct svc_wire_session ws = {0};
		struct sbx_error *e = NULL;

		/* The record ls read (the tenant's: ls filtered), and only the
		 * wire's file beside it. */
		if (session_wire_read(&root, ls.rows[i].rec.key, &ws.wire, &e) <
		    0) {
			if (e->errnum != ENOENT)
				svc_warn(call, "%s", e->msg);
			sbx_error_free(&e);
			continue;
		}
		if (!ws.wire.ntokens)
			continue;
		ws.rec = ls.rows[i].rec;
		memset(&ls.rows[i].rec, 0, sizeof(ls.rows[i].rec));
		memcpy(ws.key, ws.rec.key, sizeof(ws.key));
		ws.has_wire = ws.open = true;
		ws.marked =
		    strcmp(ls.rows[i].state, SESSION_STATE_HIBERNATED) == 0;
		ALLOC_GROW(res->rows, res->n + 1, alloc);
		res->states = xrealloc(res->states,
				       alloc * sizeof(*res->states));
		res->rows[res->n] = ws;
		res->states[res->n++] = ls.rows[i].state;
	}
	rc = 0;
out:
	session_root_close(&root);
	svc_session_ls_res_release(&ls);
	return rc;
}

void svc_wire_list_res_release(struct svc_wire_list_res *res)
{
	for (size_t i = 0; i < res->n; i++)
		svc_wire_session_release(&res->rows[i]);
	free(res->rows);
	free(res->states);
	memset(res, 0, sizeof(*res));
}

int svc_wire_state(const struct svc *s, const struct svc_call *call,
		   const struct svc_wire_session *ws, const char **state,
		   struct sbx_error **err)
{
	struct engine engine = ENGINE_INIT;
	struct engine_container_info *inspect = NULL;
	int rc = -1;

	if (svc_engine_open(s, call, &engine, err) == 0 &&
	    session_engine_inspect(&engine, &s->cfg.session, ws->key, &inspect,
				   err) == 0) {
		*state = session_state(inspect); /* static */
		if (ws->marked && strcmp(*state, "exited") == 0)
			*state = SESSION_STATE_HIBERNATED;
		rc = 0;
	}
	engine_container_info_free(inspect);
	svc_engine_close(s, &engine);
	return rc;
}

/* The disk budget's numbers into u (-1 without one, or when they cannot
 * be had: usage is a sample, never an error). */
static void disk_usage(const struct svc *s, const struct svc_call *call,
		       const struct svc_wire_session *ws,
		       struct svc_wire_usage *u)
{
	struct session_root root = SESSION_ROOT_INIT;
	struct sbx_error *err = NULL;
	struct session_usage d = {0};

	u->disk_bytes = u->disk_limit_bytes = -1;
	u->disk_inodes = u->disk_limit_inodes = -1;
	if (svc_root_open(s, call, &root, &err) == 0 &&
	    session_budget_usage(&root, &ws->rec, &d, &err) == 0 && d.budget) {
		u->disk_bytes = (long long)d.bytes_used;
		u->disk_limit_bytes = (long long)d.bytes_allowed;
		u->disk_inodes = (long long)d.inodes_used;
		u->disk_limit_inodes = (long long)d.inodes_allowed;
	}
	sbx_error_free(&err);
	session_root_close(&root);
}

int svc_wire_usage(const struct svc *s, const struct svc_call *call,
		   const struct svc_wire_session *ws, struct svc_wire_usage *u,
		   struct sbx_error **err)
{
	struct engine engine = ENGINE_INIT;
	struct engine_container_usage st;
	int rc = -1;

	u->memory_bytes = u->memory_limit_bytes = u->pids = -1;
	u->cpu_percent = -1;
	disk_usage(s, call, ws, u);
	if (!ws->rec.container)
		return 0;
	if (svc_engine_open(s, call, &engine, err) < 0 ||
	    engine_container_usage_get(&engine, ws->rec.container, &st, err) <
		0)
		goto out;
	u->memory_bytes = st.memory;
	/* As docker stats shows it: the page cache is not the sandbox's. */
	if (st.memory_cache > 0 && u->memory_bytes >= st.memory_cache)
		u->memory_bytes -= st.memory_cache;
	u->memory_limit_bytes = st.memory_limit;
	u->pids = st.pids;
	rc = 0;
out:
	svc_engine_close(s, &engine);
	return rc;
}

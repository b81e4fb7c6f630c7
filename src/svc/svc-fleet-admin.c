/*
 * svc-fleet-admin.c - the operator's fleet verbs (svc-fleet.h) around
 * fleetdb-admin.c: the host's name checked, the audit's database, the
 * suggestion for a host the fleet does not have, and the documents
 * `--json` prints.
 */
#include "config.h"

#include <string.h>

#include "audit/auditdb.h"
#include "audit/fleetdb.h"
#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/suggest.h"
#include "basic/text.h"
#include "basic/xjson.h"
#include "svc/svc-fleet.h"
#include "svc/svc-int.h"
#include "svc/svc-wire.h"

/* The hosts a hint lists when none is near the name asked. */
#define HINT_HOSTS 8

bool svc_fleet_needs_migrate(const struct sbx_error *err)
{
	return err && err->reason == fleetdb_no_tables;
}

const char *svc_fleet_state(const svc_fleet_host *h)
{
	if (!h->alive)
		return "dead";
	return h->draining ? "draining" : "alive";
}

/* A host's name as the wire names things: else invalid, the name quoted
 * (escaped, cut: it may be anything a command line was given). */
static int check_host(const char *host, struct sbx_error **err)
{
	char *q;

	if (host && svc_wire_name_valid(host))
		return 0;
	q = text_quote_short(host ? host : "");
	sbx_error_set(err, SBX_E_INVALID, 0,
		      "host %s: not a host's name (letters, digits, '.', '_' "
		      "and '-', at most 64, a letter or digit first)",
		      q);
	free(q);
	return -1;
}

/* *err is "no host 'X' in the fleet": its hint the name of the fleet's
 * nearest to host, else (a few of) the names, else that it has none. */
static void hint_hosts(struct auditdb *db, const char *host,
		       struct sbx_error *err)
{
	struct sbx_error *e = NULL;
	struct fleetdb_host *rows;
	const char **names;
	const char *near;
	struct strbuf sb = STRBUF_INIT;
	size_t n;

	if (fleetdb_hosts(db, &rows, &n, &e) < 0) {
		sbx_error_free(&e);
		return;
	}
	names = xcalloc(n ? n : 1, sizeof(*names));
	for (size_t i = 0; i < n; i++)
		names[i] = rows[i].name;
	/* The names are the table's: escaped, a row may be hand-made. */
	near = suggest_word(host, names, n);
	if (near) {
		text_add_escaped(&sb, near, strlen(near));
		sbx_error_hint(err, "did you mean '%s'?", sb.buf);
	} else if (!n) {
		sbx_error_hint(err, "the fleet has no host");
	} else {
		for (size_t i = 0; i < n && i < HINT_HOSTS; i++) {
			if (i)
				strbuf_addstr(&sb, ", ");
			text_add_escaped(&sb, names[i], strlen(names[i]));
		}
		if (n > HINT_HOSTS)
			strbuf_addf(&sb, ", and %zu more (sbxcat fleet ls)",
				    n - HINT_HOSTS);
		sbx_error_hint(err, "the fleet's hosts: %s", sb.buf);
	}
	strbuf_release(&sb);
	free(names);
	fleetdb_hosts_free(rows, n);
}

/* A host's pool as its object; the text the table holds is jsonb's, so
 * JSON, but anything else is shown as null rather than trusted. */
static json_t *pool_of(const char *text)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;

	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j ? j : json_null();
}

static json_t *host_json(const svc_fleet_host *h)
{
	/* Whole milliseconds: a real would print as -130.12799999999999,
	 * and the database's microseconds are noise to an operator. */
	double ms = h->lease_left * 1000.0;
	json_int_t left = ms > 9e15    ? (json_int_t)9e15
			  : ms < -9e15 ? (json_int_t)-9e15
				       : (json_int_t)ms;

	return xjson_pack(
	    "{s:s, s:s, s:s, s:b, s:b, s:I, s:I, s:I, s:I, s:o, "
	    "s:I, s:s}",
	    "name", h->name, "url", h->url, "state", svc_fleet_state(h),
	    "alive", h->alive, "draining", h->draining, "lease_left_ms", left,
	    "capacity", (json_int_t)h->capacity, "resident",
	    (json_int_t)h->resident, "placed", (json_int_t)h->placed, "pool",
	    pool_of(h->pool_json), "epoch", (json_int_t)h->epoch, "renewed_at",
	    h->renewed_at);
}

int svc_fleet_ls(const struct svc *s, const struct svc_call *call,
		 struct svc_fleet_ls_res *res, struct sbx_error **err)
{
	struct auditdb *db = NULL;
	int rc = -1;

	(void)call;
	memset(res, 0, sizeof(*res));
	if (svc_audit_db_open(s, &db, err) < 0 ||
	    fleetdb_hosts(db, &res->hosts, &res->n, err) < 0)
		goto out;
	res->doc = json_array();
	for (size_t i = 0; i < res->n; i++)
		json_array_append_new(res->doc, host_json(&res->hosts[i]));
	rc = 0;
out:
	svc_audit_db_close(s, db);
	return rc;
}

void svc_fleet_ls_res_release(struct svc_fleet_ls_res *res)
{
	fleetdb_hosts_free(res->hosts, res->n);
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/* A verb on one host: its name checked, the database (*db NULL on
 * error).  host_end, whatever that did: an unknown host's hint, the
 * database given back; rc passed on. */
static int host_begin(const struct svc *s, const char *host,
		      struct auditdb **db, struct sbx_error **err)
{
	*db = NULL;
	if (check_host(host, err) < 0)
		return -1;
	return svc_audit_db_open(s, db, err);
}

static int host_end(const struct svc *s, struct auditdb *db, const char *host,
		    int rc, struct sbx_error **err)
{
	if (rc < 0 && db && (*err)->kind == SBX_E_NOT_FOUND)
		hint_hosts(db, host, *err);
	svc_audit_db_close(s, db);
	return rc;
}

int svc_fleet_drain(const struct svc *s, const struct svc_call *call,
		    const struct svc_fleet_drain_req *req,
		    struct svc_fleet_drain_res *res, struct sbx_error **err)
{
	struct auditdb *db;
	int rc = host_begin(s, req->host, &db, err);

	(void)call;
	memset(res, 0, sizeof(*res));
	if (rc == 0)
		rc = fleetdb_drain(db, req->host, req->on, err);
	if (host_end(s, db, req->host, rc, err) < 0)
		return -1;
	res->doc =
	    xjson_pack("{s:s, s:b}", "host", req->host, "draining", req->on);
	return 0;
}

void svc_fleet_drain_res_release(struct svc_fleet_drain_res *res)
{
	json_decref(res->doc);
	res->doc = NULL;
}

int svc_fleet_forget(const struct svc *s, const struct svc_call *call,
		     const struct svc_fleet_forget_req *req,
		     struct svc_fleet_forget_res *res, struct sbx_error **err)
{
	struct auditdb *db;
	int rc = host_begin(s, req->host, &db, err);

	(void)call;
	memset(res, 0, sizeof(*res));
	if (rc == 0)
		rc = fleetdb_forget_host(db, req->host, req->force,
					 &res->sessions, err);
	if (host_end(s, db, req->host, rc, err) < 0)
		return -1;
	res->doc = xjson_pack("{s:s, s:b, s:I}", "host", req->host, "forgotten",
			      1, "sessions", (json_int_t)res->sessions);
	return 0;
}

void svc_fleet_forget_res_release(struct svc_fleet_forget_res *res)
{
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

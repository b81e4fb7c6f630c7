/*
 * wire-policy.c - GET and PUT /policy (sandboxd-wire.md section 2,
 * ServicePolicy and PolicyUpdate) and the service's own metrics.
 */
#include "config.h"

#include <string.h>

#include "basic/alloc.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "serve/wire.h"
#include "svc/svc-audit.h"
#include "svc/svc-pool.h"

/* The fields a PolicyUpdate may change here: sbxcat's settings of the
 * same name (docs/serve.md says which of sandboxd's are not). */
enum kind { UINT0, UINT1, SIZE, ALIAS };
static const struct {
	const char *name;
	enum kind kind;
} fields[] = {
    {"default_runtime", ALIAS},	 {"max_sessions", UINT0},
    {"max_sessions_per_tenant", UINT0}, {"idle_timeout", UINT0},
    {"workspace_ttl", UINT0},	 {"container_ttl", UINT0},
    {"execute_timeout", UINT1},	 {"max_read_bytes", UINT1},
    {"mem_limit", SIZE},
};

static json_t *num_or_null(long long v)
{
	return v > 0 ? json_integer((json_int_t)v) : json_null();
}

static json_t *runtime_json(const struct serve_snap *snap,
			    const struct runtime *rt, const char *mem)
{
	cleanup_free char *image =
	    rt->image ? xstrdup(rt->image)
		      : xasprintf("%s + %zu package(s)", rt->base_image,
				  rt->npackages);

	return xjson_pack(
	    "{s:s, s:s, s:s, s:b, s:s, s:s, s:f, s:n, s:i, s:s, s:n}", "alias",
	    rt->alias, "image", image, "description",
	    rt->description ? rt->description : "", "builds",
	    rt->base_image != NULL, "mem_limit", rt->mem_limit ? rt->mem_limit : mem,
	    "memswap_limit", rt->mem_limit ? rt->mem_limit : mem, "cpus",
	    (double)SESSION_NANO_CPUS / 1e9, "cpu_shares", "pids_limit",
	    (json_int_t)SESSION_PIDS_LIMIT, "network_mode",
	    rt->needs_network ? snap->svc.cfg.session.network : "none",
	    "oci_runtime");
}

json_t *serve_policy_json(const struct serve_snap *snap)
{
	const struct session_config *c = &snap->svc.cfg.session;
	const struct runtime *def =
	    snap->default_runtime ? catalog_find(&snap->cat, snap->default_runtime)
				  : catalog_default(&snap->cat);
	char mem[32];
	json_t *rts = json_array(), *doc;

	snprintf(mem, sizeof(mem), "%llum", c->mem_limit >> 20);
	for (size_t i = 0; i < snap->cat.n; i++)
		json_array_append_new(rts,
				      runtime_json(snap, &snap->cat.rt[i], mem));
	doc = xjson_pack("{s:o, s:s?, s:i, s:n, s:i, s:n, s:s, s:s, s:f, s:n, "
			 "s:i, s:s, s:n, s:s}",
			 "runtimes", rts, "default_runtime",
			 def ? def->alias : NULL, "max_sessions",
			 (json_int_t)c->max_sessions, "max_open_sessions",
			 "max_sessions_per_tenant",
			 (json_int_t)c->max_per_tenant, "evict_idle_after",
			 "mem_limit", mem, "memswap_limit", mem, "cpus",
			 (double)SESSION_NANO_CPUS / 1e9, "cpu_shares",
			 "pids_limit", (json_int_t)SESSION_PIDS_LIMIT,
			 "network_mode", "none", "oci_runtime", "work_dir",
			 c->work_dir);
	json_object_set_new(doc, "idle_timeout", json_integer(c->idle_timeout));
	json_object_set_new(doc, "execute_timeout",
			    json_integer(c->execute_timeout_s));
	json_object_set_new(doc, "max_read_bytes",
			    json_integer((json_int_t)c->max_read));
	json_object_set_new(doc, "persist_containers",
			    json_boolean(c->persist_containers));
	json_object_set_new(doc, "sandbox_uid",
			    json_integer((json_int_t)snap->svc.cfg.recipe.sandbox_uid));
	json_object_set_new(doc, "workspace_ttl", num_or_null(c->workspace_ttl));
	json_object_set_new(doc, "container_ttl", num_or_null(c->container_ttl));
	json_object_set_new(doc, "tmpfs_size", json_string("64m"));
	json_object_set_new(doc, "prewarm", json_true());
	json_object_set_new(doc, "buildkit", json_false());
	return doc;
}

static int field_kind(const char *name)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strcmp(fields[i].name, name) == 0)
			return (int)fields[i].kind;
	return -1;
}

static bool value_ok(const struct serve_snap *snap, int kind, json_t *v,
		     int *status)
{
	*status = 422;
	switch (kind) {
	case UINT0:
	case UINT1:
		return json_is_integer(v) &&
		       json_integer_value(v) >= (kind == UINT1 ? 1 : 0) &&
		       json_integer_value(v) <= 0x7fffffff;
	case SIZE: {
		unsigned long long bytes;
		struct sbx_error *err = NULL;
		bool good = json_is_string(v) &&
			    svc_parse_size(json_string_value(v), &bytes, &err) == 0;

		sbx_error_free(&err);
		return good;
	}
	case ALIAS:
		if (!json_is_string(v))
			return false;
		*status = 400;
		return catalog_find(&snap->cat, json_string_value(v)) != NULL;
	}
	return false;
}

/* "runtimes": {alias: {"mem_limit": str}} of aliases the catalogue has. */
static int runtimes_check(const struct serve_snap *snap, json_t *v,
			  int *status, struct strbuf *why)
{
	const char *alias, *k;
	json_t *o, *x;

	if (!json_is_object(v))
		goto bad;
	json_object_foreach(v, alias, o)
	{
		if (!catalog_find(&snap->cat, alias)) {
			*status = 400;
			strbuf_addf(why, "Unknown runtime '%s'", alias);
			return -1;
		}
		if (!json_is_object(o))
			goto bad;
		json_object_foreach(o, k, x)
		{
			unsigned long long bytes;
			struct sbx_error *err = NULL;

			if (strcmp(k, "mem_limit") != 0 || !json_is_string(x))
				goto bad;
			if (svc_parse_size(json_string_value(x), &bytes, &err) <
			    0) {
				sbx_error_free(&err);
				goto bad;
			}
		}
	}
	return 0;
bad:
	*status = 422;
	strbuf_addstr(why, "runtimes");
	return -1;
}

int serve_policy_check(const struct serve_snap *snap, json_t *upd,
		       int *status, struct strbuf *why)
{
	const char *k;
	json_t *v;

	json_object_foreach(upd, k, v)
	{
		int kind = field_kind(k);

		if (strcmp(k, "runtimes") == 0) {
			if (runtimes_check(snap, v, status, why) < 0)
				return -1;
			continue;
		}
		if (json_is_null(v))
			continue; /* absent: unchanged */
		if (kind < 0 || !value_ok(snap, kind, v, status)) {
			if (kind < 0)
				*status = 422;
			if (*status == 400)
				strbuf_addf(why, "Unknown runtime '%s'",
					    json_string_value(v));
			else
				strbuf_addstr(why, k);
			return -1;
		}
	}
	return 0;
}

json_t *serve_policy_merge(json_t *overrides, json_t *upd)
{
	json_t *m = overrides ? json_deep_copy(overrides) : json_object();
	const char *k;
	json_t *v;

	json_object_foreach(upd, k, v) if (!json_is_null(v))
	    json_object_set(m, k, v);
	return m;
}

/* sbxcat_pool_ready{runtime}: each SBXCAT_WARM_POOL runtime's
 * containers ready now (its entries, a read of small files). */
static void pool_gauges(struct serve *sv, struct strbuf *out)
{
	struct serve_snap *snap = serve_snap_get(sv);
	const struct session_config *c = &snap->svc.cfg.session;
	struct svc_call call = {0};
	struct sbx_error *err = NULL;
	json_t *ready = NULL;

	if (c->npool && svc_pool_ready(&snap->svc, &call, &ready, &err) == 0) {
		strbuf_addstr(out, "# HELP sbxcat_pool_ready Containers of the "
				   "warm pool ready to be claimed\n"
				   "# TYPE sbxcat_pool_ready gauge\n");
		for (size_t i = 0; i < c->npool; i++)
			strbuf_addf(
			    out, "sbxcat_pool_ready{runtime=\"%s\"} %lld\n",
			    c->pool[i].alias,
			    (long long)json_integer_value(
				json_object_get(ready, c->pool[i].alias)));
	}
	sbx_error_free(&err);
	json_decref(ready);
	serve_snap_put(snap);
}

void serve_metrics(struct serve *sv, struct strbuf *out)
{
	const struct {
		const char *name, *help;
		atomic_ullong *v;
	} c[] = {
	    {"sbxcat_engine_errors_total",
	     "Requests that failed because the engine did", &sv->engine_errors},
	    {"sbxcat_reaper_passes_total", "Reaper passes run", &sv->reaps},
	    {"sbxcat_reaper_failures_total", "Reaper passes that failed",
	     &sv->reap_failures},
	    {"sbxcat_session_opens_total", "Session opens asked for",
	     &sv->opens},
	    {"sbxcat_session_closes_total", "Session closes asked for",
	     &sv->closes},
	    {"sbxcat_pool_fills_total", "Refills of the warm pool run",
	     &sv->pool_fills},
	    {"sbxcat_pool_made_total", "Containers the warm pool made ready",
	     &sv->pool_made},
	};

	struct audit_writer_stats st;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		strbuf_addf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n",
			    c[i].name, c[i].help, c[i].name, c[i].name,
			    (unsigned long long)atomic_load(c[i].v));
	pool_gauges(sv, out);
	if (!svc_audit_writer_stats(&sv->base, &st))
		return;
	strbuf_addstr(out, "# HELP sbxcat_audit_rows_total Audit rows by where "
			   "they went\n# TYPE sbxcat_audit_rows_total counter\n");
	strbuf_addf(out, "sbxcat_audit_rows_total{to=\"database\"} %llu\n",
		    st.written);
	strbuf_addf(out, "sbxcat_audit_rows_total{to=\"spool\"} %llu\n",
		    st.spooled);
	strbuf_addf(out, "sbxcat_audit_rows_total{to=\"replayed\"} %llu\n",
		    st.replayed);
	strbuf_addf(out, "sbxcat_audit_rows_total{to=\"lost\"} %llu\n",
		    st.lost);
	strbuf_addf(out,
		    "# HELP sbxcat_audit_groups_total Audit transactions "
		    "committed\n# TYPE sbxcat_audit_groups_total counter\n"
		    "sbxcat_audit_groups_total %llu\n"
		    "# HELP sbxcat_audit_queued Audit rows waiting\n"
		    "# TYPE sbxcat_audit_queued gauge\nsbxcat_audit_queued %zu\n"
		    "# HELP sbxcat_audit_database_up Whether the audit's "
		    "database answers\n# TYPE sbxcat_audit_database_up gauge\n"
		    "sbxcat_audit_database_up %d\n",
		    st.groups, st.queued, st.db_up ? 1 : 0);
}

/*
 * wire-policy.c - GET and PUT /policy (sandboxd-wire.md section 2,
 * ServicePolicy and PolicyUpdate) and the service's own metrics.
 */
#include "config.h"

#include <string.h>

#include "basic/alloc.h"
#include "basic/size.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "serve/wire.h"
#include "svc/svc-audit.h"
#include "svc/svc-exec.h"
#include "svc/svc-pool.h"

/*
 * The fields of a PolicyUpdate sbxcat takes (docs/serve.md, "Policy"):
 * its settings of the same name.  A size is basic/size.h's, the grammar
 * and bounds the catalogue and the environment take, so nothing PUT here
 * is refused later by the engine.  memswap_limit and tmpfs_size are
 * sizes sbxcat fixes in its hardening: a bad one is said as bad, a good
 * one as fixed.
 */
enum kind { UINT0, UINT1, SIZE, FIXED_SWAP, FIXED_TMPFS, ALIAS };
static const struct {
	const char *name;
	enum kind kind;
} fields[] = {
    {"default_runtime", ALIAS},	 {"max_sessions", UINT0},
    {"max_sessions_per_tenant", UINT0}, {"idle_timeout", UINT0},
    {"workspace_ttl", UINT0},	 {"container_ttl", UINT0},
    {"execute_timeout", UINT1},	 {"max_read_bytes", UINT1},
    {"mem_limit", SIZE},	 {"memswap_limit", FIXED_SWAP},
    {"tmpfs_size", FIXED_TMPFS},
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
	    rt->base_image != NULL, "mem_limit",
	    rt->mem_limit ? rt->mem_limit : mem, "memswap_limit",
	    rt->mem_limit ? rt->mem_limit : mem, "cpus",
	    (double)svc_sandbox_nano_cpus / 1e9, "cpu_shares", "pids_limit",
	    (json_int_t)svc_sandbox_pids_limit, "network_mode",
	    rt->needs_network ? snap->svc.cfg.session.network : "none",
	    "oci_runtime");
}

json_t *serve_policy_json(const struct serve_snap *snap)
{
	const svc_session_config *c = &snap->svc.cfg.session;
	const struct runtime *def =
	    snap->default_runtime ? catalog_find(&snap->cat, snap->default_runtime)
				  : catalog_default(&snap->cat);
	char mem[SIZE_FORMAT_MAX];
	json_t *rts = json_array(), *doc;

	size_format(c->mem_limit, mem);
	for (size_t i = 0; i < snap->cat.n; i++)
		json_array_append_new(rts,
				      runtime_json(snap, &snap->cat.rt[i], mem));
	doc = xjson_pack(
	    "{s:o, s:s?, s:i, s:n, s:i, s:n, s:s, s:s, s:f, s:n, "
	    "s:i, s:s, s:n, s:s}",
	    "runtimes", rts, "default_runtime", def ? def->alias : NULL,
	    "max_sessions", (json_int_t)c->max_sessions, "max_open_sessions",
	    "max_sessions_per_tenant", (json_int_t)c->max_per_tenant,
	    "evict_idle_after", "mem_limit", mem, "memswap_limit", mem, "cpus",
	    (double)svc_sandbox_nano_cpus / 1e9, "cpu_shares", "pids_limit",
	    (json_int_t)svc_sandbox_pids_limit, "network_mode", "none",
	    "oci_runtime", "work_dir", c->work_dir);
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

/* Why v is not a value of kind, into why; true when it is one. */
static bool value_ok(int kind, json_t *v, struct strbuf *why)
{
	cleanup_free char *bad = NULL;
	unsigned long long bytes;

	switch (kind) {
	case UINT0:
	case UINT1:
		if (json_is_integer(v) &&
		    json_integer_value(v) >= (kind == UINT1 ? 1 : 0) &&
		    json_integer_value(v) <= 0x7fffffff)
			return true;
		strbuf_addf(why, "expected a whole number from %d to %d",
			    kind == UINT1 ? 1 : 0, 0x7fffffff);
		return false;
	case SIZE:
	case FIXED_SWAP:
	case FIXED_TMPFS:
		if (!json_is_string(v)) {
			strbuf_addstr(why, "expected a size as a string, such "
					   "as '2g' or '512m'");
			return false;
		}
		/* /tmp's tmpfs is not a memory limit: any size of a byte
		 * and up is one (and sbxcat fixes it anyway). */
		bad = size_parse(
		    json_string_value(v),
		    kind == FIXED_TMPFS ? &size_bytes : &size_memory, &bytes);
		if (bad)
			strbuf_addstr(why, bad);
		else if (kind == FIXED_SWAP)
			strbuf_addstr(why, "sbxcat fixes it: a sandbox's swap "
					   "limit is its memory limit (no "
					   "swap)");
		else if (kind == FIXED_TMPFS)
			strbuf_addstr(why, "sbxcat fixes it: /tmp is a tmpfs "
					   "of 64m");
		return !bad && kind == SIZE;
	}
	return false;
}

/* "runtimes": {alias: {"mem_limit": size}} of aliases the catalogue
 * has; memswap_limit as at the top. */
static int runtimes_check(const struct serve_snap *snap, json_t *v, int *status,
			  struct strbuf *why)
{
	const char *alias, *k;
	json_t *o, *x;

	*status = 422;
	if (!json_is_object(v)) {
		strbuf_addstr(why, "expected an object of runtimes' "
				   "changes");
		return -1;
	}
	json_object_foreach(v, alias, o)
	{
		if (!catalog_find(&snap->cat, alias)) {
			*status = 400;
			strbuf_addf(why, "Unknown runtime '%s'", alias);
			return -1;
		}
		if (!json_is_object(o)) {
			strbuf_addf(why, "%s: expected an object", alias);
			return -1;
		}
		json_object_foreach(o, k, x)
		{
			int kind = strcmp(k, "mem_limit") == 0 ? SIZE
				   : strcmp(k, "memswap_limit") == 0
				       ? FIXED_SWAP
				       : -1;

			if (json_is_null(x))
				continue; /* absent: unchanged */
			strbuf_addf(why, "%s.%s: ", alias, k);
			if (kind < 0) {
				strbuf_addstr(why, "not a field sbxcat's "
						   "policy can change");
				return -1;
			}
			if (!value_ok(kind, x, why))
				return -1;
			strbuf_reset(why);
		}
	}
	return 0;
}

int serve_policy_check(const struct serve_snap *snap, json_t *upd, int *status,
		       struct strbuf *field, struct strbuf *why)
{
	const char *k;
	json_t *v;

	json_object_foreach(upd, k, v)
	{
		int kind = field_kind(k);

		*status = 422;
		strbuf_reset(field);
		strbuf_addstr(field, k);
		if (strcmp(k, "runtimes") == 0) {
			if (runtimes_check(snap, v, status, why) < 0)
				return -1;
			continue;
		}
		if (json_is_null(v))
			continue; /* absent: unchanged */
		if (kind < 0) {
			strbuf_addstr(why, "not a field sbxcat's policy can "
					   "change (docs/serve.md, Policy)");
			return -1;
		}
		if (kind == ALIAS) {
			if (!json_is_string(v)) {
				strbuf_addstr(why, "expected a runtime's "
						   "alias");
				return -1;
			}
			if (!catalog_find(&snap->cat, json_string_value(v))) {
				*status = 400;
				strbuf_addf(why, "Unknown runtime '%s'",
					    json_string_value(v));
				return -1;
			}
			continue;
		}
		if (!value_ok(kind, v, why))
			return -1;
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
	const svc_session_config *c = &snap->svc.cfg.session;
	struct svc_call call = {0};
	struct sbx_error *err = NULL;
	json_t *ready = NULL;

	if (c->npool && svc_pool_ready(&snap->svc, &call, &ready, &err) == 0) {
		http_metric_family(out, "sbxcat_pool_ready", "gauge",
				   "Containers of the warm pool ready to be "
				   "claimed, by runtime.");
		for (size_t i = 0; i < c->npool; i++) {
			strbuf_addstr(out, "sbxcat_pool_ready{");
			http_metric_label(out, "runtime", c->pool[i].alias);
			strbuf_addf(
			    out, "} %lld\n",
			    (long long)json_integer_value(
				json_object_get(ready, c->pool[i].alias)));
		}
	}
	sbx_error_free(&err);
	json_decref(ready);
	serve_snap_put(snap);
}

/* What the process is: sbxcat_build_info, process_start_time_seconds,
 * and whether the configuration's last reload (SIGHUP; the start until
 * then) read everything. */
static void process_metrics(struct serve *sv, struct strbuf *out)
{
	bool ok;
	double ok_at;

	serve_reload_state(sv, &ok, &ok_at);
	http_metric_family(out, "sbxcat_build_info", "gauge",
			   "Always 1; the labels say which sbxcat serves.");
	strbuf_addstr(out, "sbxcat_build_info{");
	http_metric_label(out, "version", PACKAGE_VERSION);
	strbuf_addstr(out, "} 1\n");
	http_metric_family(out, "process_start_time_seconds", "gauge",
			   "When the service started, in seconds since the "
			   "Unix epoch.");
	strbuf_addf(out, "process_start_time_seconds %.3f\n", sv->started_at);
	http_metric_family(out, "sbxcat_config_last_reload_successful", "gauge",
			   "Whether the last reload (SIGHUP; the start until "
			   "then) read the catalogue, the policy file and the "
			   "metrics token: 1 yes, 0 a part of them is kept as "
			   "it was.");
	strbuf_addf(out, "sbxcat_config_last_reload_successful %d\n", ok);
	http_metric_family(out,
			   "sbxcat_config_last_reload_success_timestamp_"
			   "seconds",
			   "gauge",
			   "When a reload (or the start) last read everything, "
			   "in seconds since the Unix epoch.");
	strbuf_addf(out,
		    "sbxcat_config_last_reload_success_timestamp_seconds "
		    "%.3f\n",
		    ok_at);
}

/* How commands were started (docs/sessions.md "How a command is
 * started"). */
static void exec_counters(struct strbuf *out)
{
	struct svc_exec_stats st;

	svc_exec_stats(&st);
	http_metric_family(out, "sbxcat_exec_started_total", "counter",
			   "Commands started: the fast way (the host joins "
			   "the container itself) or through the engine.");
	strbuf_addf(out,
		    "sbxcat_exec_started_total{path=\"fast\"} %llu\n"
		    "sbxcat_exec_started_total{path=\"engine\"} %llu\n",
		    st.fast, st.engine);
	http_metric_family(out, "sbxcat_exec_fallback_total", "counter",
			   "Commands the fast way could not start, by why: "
			   "each went to the engine instead (or was refused, "
			   "under SBXCAT_EXEC_PATH=fast).");
	for (size_t i = 0; i < st.nfallback; i++)
		strbuf_addf(out,
			    "sbxcat_exec_fallback_total{reason=\"%s\"} %llu\n",
			    st.fallback[i].reason, st.fallback[i].n);
}

void serve_metrics(struct serve *sv, struct strbuf *out)
{
	const struct {
		const char *name, *help;
		atomic_ullong *v;
	} c[] = {
	    {"sbxcat_engine_errors_total",
	     "Failures of the container engine: requests answered 502 for "
	     "it, and reads of a session's state or usage, or of the "
	     "sessions' list, it did not answer.",
	     &sv->engine_errors},
	    {"sbxcat_reaper_passes_total", "Passes of the reaper run.",
	     &sv->reaps},
	    {"sbxcat_reaper_failures_total",
	     "Passes of the reaper that failed.", &sv->reap_failures},
	    {"sbxcat_session_opens_total",
	     "Session opens asked for (POST /sessions that reached its "
	     "operation).",
	     &sv->opens},
	    {"sbxcat_session_closes_total",
	     "Session closes asked for (DELETE /sessions/{id} that reached "
	     "its operation).",
	     &sv->closes},
	    {"sbxcat_pool_fills_total", "Refills of the warm pool run.",
	     &sv->pool_fills},
	    {"sbxcat_pool_made_total", "Containers the warm pool made ready.",
	     &sv->pool_made},
	    {"sbxcat_fleet_forwards_total",
	     "Requests forwarded to the host of the fleet their session lives "
	     "on.",
	     &sv->fleet_forwards},
	    {"sbxcat_fleet_unreachable_total",
	     "Requests answered 503 because their session's host could not "
	     "be reached (its lease lapsed, or it did not answer).",
	     &sv->fleet_unreachable},
	};

	svc_writer_stats st;

	process_metrics(sv, out);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		http_metric_family(out, c[i].name, "counter", c[i].help);
		strbuf_addf(out, "%s %llu\n", c[i].name,
			    (unsigned long long)atomic_load(c[i].v));
	}
	exec_counters(out);
	pool_gauges(sv, out);
	http_metric_family(out, "sbxcat_fleet_draining", "gauge",
			   "1 when this host's row in the fleet says it "
			   "drains; 0 otherwise, and without a fleet.");
	strbuf_addf(out, "sbxcat_fleet_draining %d\n",
		    atomic_load(&sv->fleet_draining) ? 1 : 0);
	if (!svc_audit_writer_stats(&sv->base, &st))
		return;
	http_metric_family(out, "sbxcat_audit_rows_total", "counter",
			   "Audit rows by where they went: committed to the "
			   "database, written to the spool, replayed from the "
			   "spool, lost.");
	strbuf_addf(out,
		    "sbxcat_audit_rows_total{to=\"database\"} %llu\n"
		    "sbxcat_audit_rows_total{to=\"spool\"} %llu\n"
		    "sbxcat_audit_rows_total{to=\"replayed\"} %llu\n"
		    "sbxcat_audit_rows_total{to=\"lost\"} %llu\n",
		    st.written, st.spooled, st.replayed, st.lost);
	http_metric_family(out, "sbxcat_audit_groups_total", "counter",
			   "Audit transactions committed.");
	strbuf_addf(out, "sbxcat_audit_groups_total %llu\n", st.groups);
	http_metric_family(out, "sbxcat_audit_queued", "gauge",
			   "Audit rows waiting for the writer.");
	strbuf_addf(out, "sbxcat_audit_queued %zu\n", st.queued);
	http_metric_family(out, "sbxcat_audit_database_up", "gauge",
			   "Whether the audit's database answers: 1 yes, 0 no "
			   "(rows then go to the spool).");
	strbuf_addf(out, "sbxcat_audit_database_up %d\n", st.db_up ? 1 : 0);
}

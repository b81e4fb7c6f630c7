/*
 * engine-spec.c - the typed containers and execs of engine.h: a
 * container's and an exec's create body built from a spec, an inspect,
 * a list and an exec's inspect read into structures.  The Engine API's
 * JSON keys live here (and in engine-container.c's own calls) and
 * nowhere above engine/: tests/t-engine-keys.sh holds it, so a second
 * way to start a command can slot in beside the engine's without a
 * caller knowing the API's words.
 *
 * The bodies are byte for byte what the callers built before (keys in
 * the same order: jansson keeps insertion order), so the engine sees
 * the same requests.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "basic/alloc.h"
#include "basic/xjson.h"
#include "engine/engine.h"

static json_t *strv_json(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, xjson_string(v[i]));
	return a;
}

json_t *engine_container_spec_json(const struct engine_container_spec *s)
{
	json_t *labels = json_object(), *mounts = json_array(), *tmpfs, *host;

	for (size_t i = 0; i < s->nlabels; i++)
		json_object_set_new(
		    labels, s->label_keys[i],
		    xjson_string(s->label_values[i] ? s->label_values[i] : ""));
	for (size_t i = 0; i < s->nmounts; i++)
		json_array_append_new(
		    mounts,
		    xjson_pack("{s:s, s:s, s:s, s:b, s:{s:s}}", "Type", "bind",
			       "Source", s->mounts[i].source, "Target",
			       s->mounts[i].target, "ReadOnly", 0,
			       "BindOptions", "Propagation", "rprivate"));
	tmpfs = json_object();
	if (s->tmpfs_path)
		json_object_set_new(tmpfs, s->tmpfs_path,
				    xjson_string(s->tmpfs_opts));
	host = xjson_pack(
	    "{s:b, s:o, s:o, s:I, s:I, s:I, s:I, s:o, s:s, s:o, "
	    "s:b, s:b, s:s, s:s, s:{s:s}, s:b, s:[], s:[]}",
	    "Init", s->init, "CapDrop", strv_json(s->cap_drop, s->ncap_drop),
	    "SecurityOpt", strv_json(s->security_opt, s->nsecurity_opt),
	    "PidsLimit", (json_int_t)s->pids_limit, "NanoCpus",
	    (json_int_t)s->nano_cpus, "Memory", (json_int_t)s->memory,
	    "MemorySwap", (json_int_t)s->memory_swap, "Tmpfs", tmpfs,
	    "NetworkMode", s->network_mode, "Mounts", mounts, "Privileged", 0,
	    "PublishAllPorts", 0, "IpcMode", "private", "CgroupnsMode",
	    "private", "RestartPolicy", "Name", "no", "AutoRemove", 0,
	    "Devices", "CapAdd");
	return xjson_pack(
	    "{s:s, s:s, s:o, s:o, s:s, s:o, s:o, s:b, s:b, s:b, s:b, "
	    "s:o, s:s}",
	    "Image", s->image, "User", s->user ? s->user : "", "Entrypoint",
	    strv_json(s->entrypoint, s->nentrypoint), "Cmd",
	    strv_json(s->cmd, s->ncmd), "WorkingDir", s->working_dir, "Env",
	    strv_json(s->env, s->nenv), "Labels", labels, "Tty", 0, "OpenStdin",
	    0, "AttachStdout", 0, "AttachStderr", 0, "HostConfig", host,
	    "StopSignal", s->stop_signal);
}

int engine_container_create_spec(struct engine *e, const char *name,
				 const struct engine_container_spec *s,
				 char **id, struct sbx_error **err)
{
	json_t *body = engine_container_spec_json(s);
	int rc = engine_container_create(e, name, body, id, err);

	json_decref(body);
	return rc;
}

void engine_labels_release(struct engine_labels *l)
{
	strv_free(l->keys, l->n);
	strv_free(l->values, l->n);
	memset(l, 0, sizeof(*l));
}

const char *engine_labels_get(const struct engine_labels *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->keys[i], key) == 0)
			return l->values[i];
	return NULL;
}

/* An object's string members (others skipped) into l. */
static void labels_of(json_t *o, struct engine_labels *l)
{
	const char *k;
	json_t *v;
	size_t n = json_object_size(o);

	memset(l, 0, sizeof(*l));
	if (!n)
		return;
	l->keys = xcalloc(n, sizeof(*l->keys));
	l->values = xcalloc(n, sizeof(*l->values));
	json_object_foreach(o, k, v)
	{
		if (!json_is_string(v))
			continue;
		l->keys[l->n] = xstrdup(k);
		l->values[l->n++] = xstrdup(json_string_value(v));
	}
}

static char *str_dup0(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static char *str_of(json_t *o, const char *key)
{
	return str_dup0(json_string_value(json_object_get(o, key)));
}

static long long int_of(json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* An array's strings (others skipped). */
static char **strv_of(json_t *a, size_t *n)
{
	char **v;
	json_t *x;
	size_t i;

	*n = 0;
	if (!json_array_size(a))
		return NULL;
	v = xcalloc(json_array_size(a), sizeof(*v));
	json_array_foreach(a, i, x)
	{
		if (json_is_string(x))
			v[(*n)++] = xstrdup(json_string_value(x));
	}
	return v;
}

void engine_container_info_parse(json_t *j, struct engine_container_info *ci)
{
	json_t *st = json_object_get(j, "State");
	json_t *cfg = json_object_get(j, "Config");
	json_t *hc = json_object_get(j, "HostConfig");
	json_t *m, *ec = json_object_get(st, "ExitCode");
	size_t i;

	memset(ci, 0, sizeof(*ci));
	ci->id = str_of(j, "Id");
	ci->name = str_of(j, "Name");
	ci->state.status = str_of(st, "Status");
	ci->state.running = json_is_true(json_object_get(st, "Running"));
	ci->state.paused = json_is_true(json_object_get(st, "Paused"));
	ci->state.oom_killed = json_is_true(json_object_get(st, "OOMKilled"));
	ci->state.pid = int_of(st, "Pid");
	ci->state.has_exit_code = json_is_integer(ec);
	ci->state.exit_code = (long long)json_integer_value(ec);
	ci->state.error = str_of(st, "Error");
	ci->state.started_at = str_of(st, "StartedAt");
	ci->state.finished_at = str_of(st, "FinishedAt");
	ci->image = str_of(cfg, "Image");
	ci->user = str_of(cfg, "User");
	ci->hostname = str_of(cfg, "Hostname");
	ci->working_dir = str_of(cfg, "WorkingDir");
	ci->env = strv_of(json_object_get(cfg, "Env"), &ci->nenv);
	labels_of(json_object_get(cfg, "Labels"), &ci->labels);
	ci->host.init = json_is_true(json_object_get(hc, "Init"));
	ci->host.privileged = json_is_true(json_object_get(hc, "Privileged"));
	ci->host.readonly_rootfs =
	    json_is_true(json_object_get(hc, "ReadonlyRootfs"));
	ci->host.cap_drop =
	    strv_of(json_object_get(hc, "CapDrop"), &ci->host.ncap_drop);
	ci->host.security_opt = strv_of(json_object_get(hc, "SecurityOpt"),
					&ci->host.nsecurity_opt);
	ci->host.pids_limit = int_of(hc, "PidsLimit");
	ci->host.nano_cpus = int_of(hc, "NanoCpus");
	ci->host.memory = int_of(hc, "Memory");
	ci->host.memory_swap = int_of(hc, "MemorySwap");
	labels_of(json_object_get(hc, "Tmpfs"), &ci->host.tmpfs);
	ci->host.network_mode = str_of(hc, "NetworkMode");
	if (json_array_size(json_object_get(j, "Mounts")))
		ci->mounts =
		    xcalloc(json_array_size(json_object_get(j, "Mounts")),
			    sizeof(*ci->mounts));
	json_array_foreach(json_object_get(j, "Mounts"), i, m)
	{
		struct engine_mount *x = &ci->mounts[ci->nmounts++];

		x->type = str_of(m, "Type");
		x->source = str_of(m, "Source");
		x->destination = str_of(m, "Destination");
	}
}

void engine_container_info_release(struct engine_container_info *ci)
{
	free(ci->id);
	free(ci->name);
	free(ci->state.status);
	free(ci->state.error);
	free(ci->state.started_at);
	free(ci->state.finished_at);
	free(ci->image);
	free(ci->user);
	free(ci->hostname);
	free(ci->working_dir);
	strv_free(ci->env, ci->nenv);
	engine_labels_release(&ci->labels);
	strv_free(ci->host.cap_drop, ci->host.ncap_drop);
	strv_free(ci->host.security_opt, ci->host.nsecurity_opt);
	engine_labels_release(&ci->host.tmpfs);
	free(ci->host.network_mode);
	for (size_t i = 0; i < ci->nmounts; i++) {
		free(ci->mounts[i].type);
		free(ci->mounts[i].source);
		free(ci->mounts[i].destination);
	}
	free(ci->mounts);
	memset(ci, 0, sizeof(*ci));
}

static char **strv_dup(char *const *v, size_t n)
{
	char **d = n ? xcalloc(n, sizeof(*d)) : NULL;

	for (size_t i = 0; i < n; i++)
		d[i] = xstrdup(v[i]);
	return d;
}

static void labels_copy(struct engine_labels *dst,
			const struct engine_labels *src)
{
	dst->keys = strv_dup(src->keys, src->n);
	dst->values = strv_dup(src->values, src->n);
	dst->n = src->n;
}

void engine_container_info_copy(struct engine_container_info *dst,
				const struct engine_container_info *src)
{
	*dst = *src;
	dst->id = str_dup0(src->id);
	dst->name = str_dup0(src->name);
	dst->state.status = str_dup0(src->state.status);
	dst->state.error = str_dup0(src->state.error);
	dst->state.started_at = str_dup0(src->state.started_at);
	dst->state.finished_at = str_dup0(src->state.finished_at);
	dst->image = str_dup0(src->image);
	dst->user = str_dup0(src->user);
	dst->hostname = str_dup0(src->hostname);
	dst->working_dir = str_dup0(src->working_dir);
	dst->env = strv_dup(src->env, src->nenv);
	labels_copy(&dst->labels, &src->labels);
	dst->host.cap_drop = strv_dup(src->host.cap_drop, src->host.ncap_drop);
	dst->host.security_opt =
	    strv_dup(src->host.security_opt, src->host.nsecurity_opt);
	labels_copy(&dst->host.tmpfs, &src->host.tmpfs);
	dst->host.network_mode = str_dup0(src->host.network_mode);
	dst->mounts =
	    src->nmounts ? xcalloc(src->nmounts, sizeof(*dst->mounts)) : NULL;
	for (size_t i = 0; i < src->nmounts; i++) {
		dst->mounts[i].type = str_dup0(src->mounts[i].type);
		dst->mounts[i].source = str_dup0(src->mounts[i].source);
		dst->mounts[i].destination =
		    str_dup0(src->mounts[i].destination);
	}
	/* A copy of its own: a cache shared by threads must not share a
	 * reference count with the caller's. */
}

void engine_container_info_free(struct engine_container_info *ci)
{
	if (!ci)
		return;
	engine_container_info_release(ci);
	free(ci);
}

int engine_container_info_get(struct engine *e, const char *id,
			      struct engine_container_info *ci,
			      struct sbx_error **err)
{
	json_t *j = NULL;

	memset(ci, 0, sizeof(*ci));
	if (engine_container_inspect(e, id, &j, err) < 0)
		return -1;
	engine_container_info_parse(j, ci);
	json_decref(j);
	return 0;
}

void engine_container_summaries_free(struct engine_container_summary *v,
				     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].id);
		free(v[i].name);
		free(v[i].state);
		engine_labels_release(&v[i].labels);
	}
	free(v);
}

int engine_container_list_info(struct engine *e, const char *const *labels,
			       size_t nlabels,
			       struct engine_container_summary **v, size_t *n,
			       struct sbx_error **err)
{
	json_t *arr = NULL, *s;
	size_t i;

	*v = NULL;
	*n = 0;
	if (engine_container_list(e, labels, nlabels, &arr, err) < 0)
		return -1;
	if (json_array_size(arr))
		*v = xcalloc(json_array_size(arr), sizeof(**v));
	json_array_foreach(arr, i, s)
	{
		struct engine_container_summary *x = &(*v)[(*n)++];

		x->id = str_of(s, "Id");
		x->name = str_dup0(json_string_value(
		    json_array_get(json_object_get(s, "Names"), 0)));
		x->state = str_of(s, "State");
		x->created = int_of(s, "Created");
		labels_of(json_object_get(s, "Labels"), &x->labels);
	}
	json_decref(arr);
	return 0;
}

static long long stat_num(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(json_object_get(o, a), b);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

int engine_container_usage_get(struct engine *e, const char *id,
			       struct engine_container_usage *u,
			       struct sbx_error **err)
{
	json_t *st = NULL;

	u->memory = u->memory_cache = u->memory_limit = u->pids = -1;
	if (engine_container_stats(e, id, &st, err) < 0)
		return -1;
	u->memory = stat_num(st, "memory_stats", "usage");
	u->memory_cache = stat_num(json_object_get(st, "memory_stats"), "stats",
				   "inactive_file");
	u->memory_limit = stat_num(st, "memory_stats", "limit");
	u->pids = stat_num(st, "pids_stats", "current");
	json_decref(st);
	return 0;
}

json_t *engine_exec_spec_json(const struct engine_exec_spec *s)
{
	json_t *body = xjson_pack(
	    "{s:b, s:b, s:b, s:b, s:o, s:s, s:s, s:b}", "AttachStdin",
	    s->attach_stdin, "AttachStdout", 1, "AttachStderr", 1, "Tty", 0,
	    "Cmd", strv_json(s->cmd, s->ncmd), "User", s->user ? s->user : "",
	    "WorkingDir", s->working_dir, "Privileged", 0);

	if (s->nenv)
		json_object_set_new(body, "Env", strv_json(s->env, s->nenv));
	return body;
}

int engine_exec_create_spec(struct engine *e, const char *id,
			    const struct engine_exec_spec *s, char **exec_id,
			    struct sbx_error **err)
{
	json_t *body = engine_exec_spec_json(s);
	int rc = engine_exec_create(e, id, body, exec_id, err);

	json_decref(body);
	return rc;
}

void engine_exec_info_parse(json_t *j, struct engine_exec_info *ei)
{
	json_t *ec = json_object_get(j, "ExitCode");

	ei->pid = int_of(j, "Pid");
	ei->running = json_is_true(json_object_get(j, "Running"));
	ei->has_exit_code = json_is_integer(ec);
	ei->exit_code = (int)json_integer_value(ec);
}

int engine_exec_info_get(struct engine *e, const char *exec_id,
			 struct engine_exec_info *ei, struct sbx_error **err)
{
	json_t *j = NULL;

	memset(ei, 0, sizeof(*ei));
	if (engine_exec_inspect(e, exec_id, &j, err) < 0)
		return -1;
	engine_exec_info_parse(j, ei);
	json_decref(j);
	return 0;
}

/*
 * cmd-session.c - sbxcat session open|ls|show|close: one sibling
 * container per session, its workspace bind-mounted at the same path
 * (brief section 7, docs/sessions.md).
 *
 * The work is session.c's (the host side: keys, the workspace root,
 * records, the lock) and session-engine.c's (the container); this file
 * parses, decides what to say, and says it.  Also here: what exec shares
 * with these verbs (cmd_session_begin, cmd_engine_begin,
 * cmd_session_find).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "catalog/deployment.h"
#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "engine/engine.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "engine/prewarm.h"
#include "session/procs.h"
#include "session/session-engine.h"
#include "session/session.h"
#include "basic/sig.h"
#include "basic/util.h"
#include "basic/xjson.h"

extern const struct cmd_entry cmd_session_open_entry, cmd_session_ls_entry,
    cmd_session_show_entry, cmd_session_close_entry;

int cmd_session_begin(struct sbx_ctx *ctx, struct session_config *cfg,
		      struct session_root *root, struct sbx_error **err)
{
	memset(root, 0, sizeof(*root));
	root->fd = root->lock_fd = -1;
	if (ctx->uid_error) {
		*err = ctx->uid_error;
		ctx->uid_error = NULL;
		return -1;
	}
	if (session_config_load(cfg, &ctx->env, err) < 0)
		return -1;
	if (deployment_check(cfg->deployment, err) < 0)
		return -1;
	return session_root_open(root, cfg->root, err);
}

int cmd_engine_begin(struct sbx_ctx *ctx, struct engine *e,
		     struct sbx_error **err)
{
	memset(e, 0, sizeof(*e));
	e->trace_fd = -1;
	if (svc_config_check(ctx->svc.cfg.engine_err, err) < 0 ||
	    engine_init(e, &ctx->svc.cfg.engine, NULL, err) < 0)
		return -1;
	e->cancel = sig_flag();
	return engine_negotiate(e, NULL, err);
}

const char *cmd_tenant(const char *opt)
{
	const char *t = opt ? opt : getenv("SBXCAT_TENANT");

	return t && *t ? t : NULL;
}

/* ---- open ---- */

static int check_field(const struct cmd_entry *cmd, const char *opt, const char *value,
		       const char *(*check)(const char *))
{
	const char *why;

	if (!value)
		return cmd_usage_error(cmd, "%s is required", opt);
	why = check(value);
	if (why) {
		struct strbuf sb = STRBUF_INIT;
		text_add_escaped(&sb, value, strlen(value));
		fprintf(stderr, "sbxcat: %s '%s': %s\n", opt, strbuf_str(&sb),
			why);
		strbuf_release(&sb);
		return SBX_EXIT_USAGE;
	}
	return 0;
}

/* The image of rt, prewarmed first when the engine lacks it. */
static int ensure_image(struct sbx_ctx *ctx, struct engine *e,
			const struct runtime *rt, const char *image,
			struct sbx_error **err)
{
	bool present = false;
	char *why = NULL;
	int rc;

	if (engine_image_inspect(e, image, &present, NULL, err) < 0)
		return -1;
	if (present)
		return 0;
	fprintf(stderr, "sbxcat: the engine has no %s yet; prewarming '%s'\n",
		image, rt->alias);
	rc = cmd_prewarm_one(ctx, e, rt, &why);
	if (rc != 0) {
		sbx_error_set(err, rc == SBX_EXIT_ENV ? SBX_E_UNAVAILABLE
			      : rc > 128 ? SBX_E_CANCELLED
					 : SBX_E_REFUSED,
			      0, "cannot open a session of '%s': %s",
			      rt->alias, why ? why : "its prewarm failed");
		free(why);
		return -1;
	}
	free(why);
	return 0;
}

/*
 * The audit row of open or close.  The operation's own error (*err) is
 * reported first when recording fails too: then the audit's error takes
 * its place (status 3).
 */
static void session_audit(struct audit *au, enum audit_op op,
			  const char *tenant, const char *key,
			  const char *runtime, const char *target,
			  long long started, const struct sbx_error *why,
			  const char *detail, struct sbx_error **err)
{
	struct sbx_error *aerr = NULL;
	struct audit_event ev = {
	    .op = op,
	    .tenant = tenant,
	    .session_key = key,
	    .runtime = runtime,
	    .target = target,
	    .ok = !why,
	    .why = why,
	    .detail = detail,
	    .bytes = AUDIT_NONE,
	    .results = AUDIT_NONE,
	    .duration_ms = clock_now_ms() - started,
	};

	if (audit_event(au, &ev, &aerr) == 0)
		return;
	if (*err)
		cmd_report(err);
	*err = aerr;
}

static int session_open(struct sbx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS,
	    {"runtime", required_argument, NULL, 'r'},
	    {"tenant", required_argument, NULL, 'T'},
	    {"scope", required_argument, NULL, 'S'},
	    {"subject", required_argument, NULL, 'B'},
	    {"host", required_argument, NULL, 'H'},
	    {0}};
	const char *alias = NULL, *tenant = NULL, *scope = NULL,
		   *subject = NULL, *host = "";
	struct sbx_error *err = NULL;
	struct session_config cfg = {0};
	struct session_root root = SESSION_ROOT_INIT;
	struct session_record rec = {0}, old = {0};
	struct engine engine = ENGINE_INIT;
	struct catalog cat;
	const struct runtime *rt;
	struct session_spec spec = {0};
	enum session_outcome outcome;
	char key[SESSION_KEY_MAX + 1] = "", *image = NULL, *ws = NULL,
				       *id = NULL;
	bool locked = false, made, unrecorded = false;
	struct audit *au = NULL;
	long long started = clock_now_ms();
	int c, rc;

	for (;;) {
		c = getopt_long(argc, argv, COMMON_SHORTOPTS "r:", longopts,
				NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'r':
			alias = optarg;
			break;
		case 'T':
			tenant = optarg;
			break;
		case 'S':
			scope = optarg;
			break;
		case 'B':
			subject = optarg;
			break;
		case 'H':
			host = optarg;
			break;
		default:
			rc = cmd_common_option(ctx, &cmd_session_open_entry, c,
					       optarg);
			if (rc)
				return rc < 0 ? 0 : rc;
		}
	}
	if (optind < argc)
		return cmd_usage_error(&cmd_session_open_entry,
				       "unexpected operand '%s'", argv[optind]);
	tenant = cmd_tenant(tenant);
	if ((rc = check_field(&cmd_session_open_entry, "--tenant", tenant, session_check_tenant)) ||
	    (rc = check_field(&cmd_session_open_entry, "--scope", scope, session_check_scope)) ||
	    (rc = check_field(&cmd_session_open_entry, "--subject", subject, session_check_subject)) ||
	    (rc = check_field(&cmd_session_open_entry, "--host", host, session_check_host)))
		return rc;

	if (cmd_audit_open(ctx, &au, &err) < 0)
		return cmd_report(&err);
	catalog_init(&cat);
	rc = cmd_load_catalog(ctx, NULL, &cat);
	rt = rc ? NULL
		: alias ? cmd_find_runtime(&cat, alias)
			: catalog_default(&cat);
	if (!rt) {
		/* Refused before a key could be made: the row has none. */
		struct sbx_error why = {.kind = rc == SBX_EXIT_ENV ? SBX_E_UNAVAILABLE
						 : rc ? SBX_E_BAD_DATA
						      : SBX_E_NOT_FOUND,
					.reason = rc ? "the catalogue is invalid"
						     : "no such runtime"};

		if (!rc)
			rc = SBX_EXIT_FAIL;
		session_audit(au, AUDIT_OPEN, tenant, "", alias, alias, started,
			      &why, NULL, &err);
		if (err)
			rc = cmd_report(&err);
		cmd_audit_close(au);
		catalog_release(&cat);
		return rc;
	}
	/* A session is opened only when its row can be written: before the
	 * root is made or an image built. */
	if (audit_ready(au, &err) < 0) {
		unrecorded = true; /* nothing to record it in */
		goto out;
	}
	if (cmd_session_begin(ctx, &cfg, &root, &err) < 0 ||
	    session_secret_load(&cfg, &root, &err) < 0)
		goto out;
	session_key(&cfg, tenant, scope, subject, host, key);
	image = recipe_tag(rt, &ctx->recipe);
	if (cmd_engine_begin(ctx, &engine, &err) < 0 ||
	    ensure_image(ctx, &engine, rt, image, &err) < 0)
		goto out;

	if (session_lock(&root, &err) < 0)
		goto out;
	locked = true;
	if (session_workspace_make(&root, key, ctx->recipe.sandbox_uid, &made,
				   &err) < 0)
		goto out;
	ws = session_workspace_path(&root, key);
	if (session_record_read(&root, key, &old, &err) < 0) {
		if (err->errnum != ENOENT)
			goto out;
		sbx_error_free(&err);
	} else if (strcmp(old.tenant, tenant) != 0) {
		/* Keys fold the tenant in: only a forged record gets here. */
		sbx_error_set(&err, SBX_E_UNAVAILABLE, 0,
			      "the record of session '%s' names another tenant",
			      key);
		goto out;
	}

	spec.cfg = &cfg;
	spec.rt = rt;
	spec.image = image;
	spec.key = key;
	spec.tenant = tenant;
	spec.scope = scope;
	spec.workspace = ws;
	spec.uid = ctx->recipe.sandbox_uid;
	spec.created = old.created ? old.created : (long long)time(NULL);
	if (session_engine_open(&engine, &spec, &outcome, &id, &err) < 0)
		goto out;

	memcpy(rec.key, key, sizeof(rec.key));
	rec.tenant = xstrdup(tenant);
	rec.scope = xstrdup(scope);
	rec.runtime = xstrdup(rt->alias);
	rec.image = xstrdup(spec.image_used ? spec.image_used : image);
	rec.container = xstrdup(id);
	rec.created = spec.created;
	rec.last_activity = (long long)time(NULL);
	if (session_record_write(&root, &rec, &err) < 0)
		goto out;
	session_unlock(&root);
	locked = false;

	if (ctx->json) {
		cleanup_free char *name = session_container_name(&cfg, key);
		json_t *doc = xjson_pack(
		    "{s:s, s:s, s:o, s:s, s:s, s:o, s:s}", "key", key,
		    "container", id, "name", json_string(name), "runtime",
		    rt->alias, "image", rec.image, "created",
		    cmd_time_json(spec.created), "outcome",
		    session_outcome_name(outcome));
		xjson_set_path(doc, "workspace", ws);
		cmd_print_json(doc);
	} else {
		printf("%s\n", key);
	}
out:
	if (locked)
		session_unlock(&root);
	if (!unrecorded)
		session_audit(au, AUDIT_OPEN, tenant, key, rt->alias, rt->alias,
			      started, err,
			      err ? NULL : session_outcome_name(outcome), &err);
	rc = err ? cmd_report(&err) : 0;
	cmd_audit_close(au);
	session_record_release(&rec);
	session_record_release(&old);
	free(spec.image_used);
	free(id);
	free(ws);
	free(image);
	engine_release(&engine);
	session_root_close(&root);
	session_config_release(&cfg);
	catalog_release(&cat);
	return rc;
}

/* ---- ls, show ---- */

static json_t *row_json(const struct session_record *r, const char *state)
{
	return xjson_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "key", r->key,
			  "tenant", r->tenant, "runtime", r->runtime, "state",
			  state, "created", cmd_time_json(r->created),
			  "last_activity", cmd_time_json(r->last_activity));
}

/* workspace_bytes and workspace_files of key into doc (0 and a warning
 * when the walk fails). */
static void add_size(struct session_root *root, const char *key, json_t *doc)
{
	struct sbx_error *err = NULL;
	unsigned long long bytes = 0, files = 0;

	if (session_workspace_size(root, key, &bytes, &files, &err) < 0) {
		fprintf(stderr, "sbxcat: warning: %s\n", err->msg);
		sbx_error_free(&err);
	}
	json_object_set_new(doc, "workspace_bytes",
			    json_integer((json_int_t)bytes));
	json_object_set_new(doc, "workspace_files",
			    json_integer((json_int_t)files));
}

static int session_ls(struct sbx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS, {"tenant", required_argument, NULL, 'T'}, {0}};
	const char *tenant = NULL;
	struct sbx_error *err = NULL;
	struct session_config cfg = {0};
	struct session_root root = SESSION_ROOT_INIT;
	struct engine engine = ENGINE_INIT;
	json_t *by_key = NULL, *arr = json_array();
	char **keys = NULL;
	size_t nkeys = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts,
				NULL)) != -1) {
		if (c == 'T') {
			tenant = optarg;
			continue;
		}
		rc = cmd_common_option(ctx, &cmd_session_ls_entry, c, optarg);
		if (rc) {
			json_decref(arr);
			return rc < 0 ? 0 : rc;
		}
	}
	if (optind < argc) {
		json_decref(arr);
		return cmd_usage_error(&cmd_session_ls_entry,
				       "unexpected operand '%s'", argv[optind]);
	}
	tenant = cmd_tenant(tenant);
	if (cmd_session_begin(ctx, &cfg, &root, &err) < 0 ||
	    session_keys(&root, &keys, &nkeys, &err) < 0 ||
	    cmd_engine_begin(ctx, &engine, &err) < 0 ||
	    session_engine_list(&engine, &cfg, &by_key, &err) < 0)
		goto out;
	for (size_t i = 0; i < nkeys; i++) {
		struct session_record r;
		json_t *c_, *st;
		const char *state = "closed";

		if (session_record_read(&root, keys[i], &r, &err) < 0) {
			/* A half-made or damaged one: say so, go on. */
			if (err->errnum != ENOENT)
				fprintf(stderr, "sbxcat: warning: %s\n",
					err->msg);
			sbx_error_free(&err);
			continue;
		}
		if (!tenant || strcmp(r.tenant, tenant) == 0) {
			c_ = json_object_get(by_key, keys[i]);
			st = json_object_get(c_, "State");
			json_t *row;

			if (json_is_string(st))
				state = session_state_word(
				    json_string_value(st));
			row = row_json(&r, state);
			/* Only --json pays for the walk of every workspace. */
			if (ctx->json)
				add_size(&root, r.key, row);
			json_array_append_new(arr, row);
		}
		session_record_release(&r);
	}
	if (ctx->json) {
		cmd_print_json(arr);
		arr = NULL;
	} else {
		size_t i;
		json_t *row;
		bool tty = isatty(STDOUT_FILENO);

		if (tty)
			printf("%-51s  %-12s  %-12s  %-10s  %-20s  %s\n", "KEY",
			       "TENANT", "RUNTIME", "STATE", "CREATED",
			       "LAST ACTIVITY");
		json_array_foreach(arr, i, row)
		{
			const char *f[6] = {"key",   "tenant",	"runtime",
					    "state", "created", "last_activity"};
			const char *v[6];
			for (int k = 0; k < 6; k++) {
				v[k] = json_string_value(
				    json_object_get(row, f[k]));
				if (!v[k])
					v[k] = "-";
			}
			if (tty)
				printf("%-51s  %-12s  %-12s  %-10s  %-20s  "
				       "%s\n",
				       v[0], v[1], v[2], v[3], v[4], v[5]);
			else
				printf("%s\t%s\t%s\t%s\t%s\t%s\n", v[0], v[1],
				       v[2], v[3], v[4], v[5]);
		}
	}
out:
	rc = err ? cmd_report(&err) : 0;
	json_decref(arr);
	json_decref(by_key);
	strv_free(keys, nkeys);
	engine_release(&engine);
	session_root_close(&root);
	session_config_release(&cfg);
	return rc;
}

/* Parse the options of a verb taking KEY and --tenant (and more). */
static int key_verb_options(struct sbx_ctx *ctx, const struct cmd_entry *cmd,
			    int argc, char **argv, const char **tenant,
			    bool *purge, const char **key)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS,
	    {"tenant", required_argument, NULL, 'T'},
	    {"purge", no_argument, NULL, 'P'},
	    {0}};
	int c, rc;

	*tenant = NULL;
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts,
				NULL)) != -1) {
		if (c == 'T') {
			*tenant = optarg;
		} else if (c == 'P' && purge) {
			*purge = true;
		} else {
			if (c == 'P')
				c = '?';
			rc = cmd_common_option(ctx, cmd, c, optarg);
			if (rc)
				return rc;
		}
	}
	if (optind >= argc)
		return cmd_usage_error(cmd, "which session? KEY is missing");
	if (optind + 1 < argc)
		return cmd_usage_error(cmd, "unexpected operand '%s'",
				       argv[optind + 1]);
	*key = argv[optind];
	*tenant = cmd_tenant(*tenant);
	return 0;
}

static json_t *limits_json(json_t *inspect)
{
	json_t *hc = json_object_get(inspect, "HostConfig");
	json_t *mounts = json_array(), *m;
	size_t i;

	json_array_foreach(json_object_get(inspect, "Mounts"), i, m)
	{
		json_t *o = xjson_pack(
		    "{s:O*}", "type", json_object_get(m, "Type"));
		xjson_set_path(o, "source",
			       json_string_value(json_object_get(m, "Source"))
				   ?: "");
		xjson_set_path(
		    o, "target",
		    json_string_value(json_object_get(m, "Destination")) ?: "");
		json_array_append_new(mounts, o);
	}
	return xjson_pack(
	    "{s:O*, s:O*, s:O*, s:O*, s:O*, s:O*, s:O*, s:O*, s:O*, s:O*, "
	    "s:o, s:O*, s:O*}",
	    "user",
	    json_object_get(json_object_get(inspect, "Config"), "User"),
	    "init", json_object_get(hc, "Init"), "cap_drop",
	    json_object_get(hc, "CapDrop"), "security_opt",
	    json_object_get(hc, "SecurityOpt"), "pids_limit",
	    json_object_get(hc, "PidsLimit"), "nano_cpus",
	    json_object_get(hc, "NanoCpus"), "memory",
	    json_object_get(hc, "Memory"), "memory_swap",
	    json_object_get(hc, "MemorySwap"), "tmpfs",
	    json_object_get(hc, "Tmpfs"), "network_mode",
	    json_object_get(hc, "NetworkMode"), "mounts", mounts, "privileged",
	    json_object_get(hc, "Privileged"), "readonly_rootfs",
	    json_object_get(hc, "ReadonlyRootfs"));
}

/* Fields from the engine as "key: value" lines, keys and strings escaped
 * (State.Error, mount paths and tmpfs keys are the engine's text). */
static void print_fields(json_t *doc, const char *prefix)
{
	struct strbuf sb = STRBUF_INIT;
	const char *k;
	json_t *v;

	json_object_foreach(doc, k, v)
	{
		strbuf_reset(&sb);
		strbuf_addstr(&sb, prefix);
		text_add_escaped(&sb, k, strlen(k));
		if (json_is_object(v)) {
			strbuf_addch(&sb, '.');
			print_fields(v, sb.buf);
			continue;
		}
		strbuf_addstr(&sb, ": ");
		if (json_is_string(v)) {
			text_add_escaped(&sb, json_string_value(v),
					 json_string_length(v));
		} else {
			char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

			strbuf_addstr(&sb, d ? d : "?");
			free(d);
		}
		printf("%s\n", sb.buf);
	}
	strbuf_release(&sb);
}

static int session_show(struct sbx_ctx *ctx, int argc, char **argv)
{
	const char *tenant, *key;
	struct sbx_error *err = NULL;
	struct session_config cfg = {0};
	struct session_root root = SESSION_ROOT_INIT;
	struct session_record r = {0};
	struct engine engine = ENGINE_INIT;
	json_t *inspect = NULL, *doc, *st;
	unsigned long long ooms;
	int rc = key_verb_options(ctx, &cmd_session_show_entry, argc, argv,
				  &tenant, NULL, &key);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (cmd_session_begin(ctx, &cfg, &root, &err) < 0 ||
	    session_find(&root, key, tenant, &r, &err) < 0 ||
	    cmd_engine_begin(ctx, &engine, &err) < 0 ||
	    session_engine_inspect(&engine, &cfg, r.key, &inspect, &err) < 0)
		goto out;
	doc = row_json(&r, session_state(inspect));
	json_object_set_new(doc, "container",
			    inspect ? json_incref(json_object_get(inspect, "Id"))
				    : json_null());
	json_object_set_new(doc, "image", xjson_text(r.image));
	{
		char *ws = session_workspace_path(&root, r.key);
		xjson_set_path(doc, "workspace", ws);
		free(ws);
	}
	add_size(&root, r.key, doc);
	st = json_object_get(inspect, "State");
	json_object_set_new(doc, "oom_killed",
			    json_boolean(json_is_true(
				json_object_get(st, "OOMKilled"))));
	{
		json_int_t pid =
		    json_integer_value(json_object_get(st, "Pid"));
		if (pid > 0 && procs_oom_kills((pid_t)pid, &ooms, &err) == 0)
			json_object_set_new(doc, "oom_kills",
					    json_integer((json_int_t)ooms));
		else
			json_object_set_new(doc, "oom_kills", json_null());
		sbx_error_free(&err);
	}
	json_object_set_new(doc, "exit_code",
			    inspect ? json_incref(json_object_get(st, "ExitCode"))
				    : json_null());
	{
		const char *e = json_string_value(json_object_get(st, "Error"));
		json_object_set_new(doc, "error",
				    e && *e ? xjson_text(e) : json_null());
	}
	json_object_set_new(doc, "limits",
			    inspect ? limits_json(inspect) : json_null());
	if (ctx->json) {
		cmd_print_json(doc);
	} else {
		print_fields(doc, "");
		json_decref(doc);
	}
out:
	rc = err ? cmd_report(&err) : 0;
	json_decref(inspect);
	session_record_release(&r);
	engine_release(&engine);
	session_root_close(&root);
	session_config_release(&cfg);
	return rc;
}

/* ---- close ---- */

static int session_close(struct sbx_ctx *ctx, int argc, char **argv)
{
	const char *tenant, *key, *what = "gone";
	struct sbx_error *err = NULL;
	struct session_config cfg = {0};
	struct session_root root = SESSION_ROOT_INIT;
	struct session_record r = {0};
	struct engine engine = ENGINE_INIT;
	bool purge = false, locked = false, unrecorded = false;
	struct audit *au = NULL;
	struct session_trash trash;
	long long started = clock_now_ms();
	int rc = key_verb_options(ctx, &cmd_session_close_entry, argc, argv,
				  &tenant, &purge, &key);

	if (rc)
		return rc < 0 ? 0 : rc;
	session_trash_init(&trash);
	if (cmd_audit_open(ctx, &au, &err) < 0)
		return cmd_report(&err);
	if (audit_ready(au, &err) < 0) {
		unrecorded = true;
		goto out;
	}
	if (cmd_session_begin(ctx, &cfg, &root, &err) < 0 ||
	    session_find(&root, key, tenant, &r, &err) < 0 ||
	    cmd_engine_begin(ctx, &engine, &err) < 0)
		goto out;
	if (session_lock(&root, &err) < 0)
		goto out;
	locked = true;
	if (session_engine_close(&engine, &cfg, r.key,
				 cfg.persist_containers && !purge, &what,
				 &err) < 0)
		goto out;
	/* Under the lock only the rename into the trash: emptying a tree of
	 * a million files would hold every other open of the host. */
	if (purge && session_trash_key(&root, r.key, &trash, &err) < 0)
		goto out;
	if (!purge && session_record_touch(&root, r.key, &err) < 0)
		goto out;
	session_unlock(&root);
	locked = false;
	if (purge && session_trash_empty(&root, &trash, &err) < 0)
		goto out;
	if (ctx->json)
		cmd_print_json(xjson_pack("{s:s, s:s, s:b}", "key", r.key,
					  "container", what, "purged", purge));
out:
	if (locked)
		session_unlock(&root);
	if (!unrecorded)
		/* A key not found is the target alone: the row is the
		 * caller's, never on the key's chain. */
		session_audit(au, AUDIT_CLOSE, r.key[0] ? r.tenant : tenant,
			      r.key[0] ? r.key : "", r.runtime, key, started,
			      err, purge ? "purged" : what, &err);
	rc = err ? cmd_report(&err) : 0;
	cmd_audit_close(au);
	session_trash_release(&trash);
	session_record_release(&r);
	engine_release(&engine);
	session_root_close(&root);
	session_config_release(&cfg);
	return rc;
}

const struct cmd_entry cmd_session_open_entry = {
    .name = "open",
    .usage = "--tenant ORG --scope SCOPE --subject ID [--runtime ALIAS] "
	     "[--host NAME] [--json]",
    .summary = "open (or adopt) the session of a subject; print its key",
    .exec = session_open,
    .parent = &cmd_session_entry,
};
const struct cmd_entry cmd_session_ls_entry = {
    .name = "ls",
    .usage = "[--tenant T] [--json]",
    .summary = "list the sessions and their containers' states",
    .exec = session_ls,
    .parent = &cmd_session_entry,
};
const struct cmd_entry cmd_session_show_entry = {
    .name = "show",
    .usage = "KEY [--tenant T] [--json]",
    .summary = "one session: its record, limits as applied, workspace size",
    .exec = session_show,
    .parent = &cmd_session_entry,
};
const struct cmd_entry cmd_session_close_entry = {
    .name = "close",
    .usage = "KEY [--purge] [--tenant T] [--json]",
    .summary = "remove (or stop) a session's container; --purge its files",
    .exec = session_close,
    .parent = &cmd_session_entry,
};

static const struct cmd_entry *const session_verbs[] = {
    &cmd_session_open_entry,
    &cmd_session_ls_entry,
    &cmd_session_show_entry,
    &cmd_session_close_entry,
};

const struct cmd_entry cmd_session_entry = {
    .name = "session",
    .usage = "open|ls|show|close ...",
    .summary = "sibling containers, one per session",
    .verbs = session_verbs,
    .nverbs = sizeof(session_verbs) / sizeof(session_verbs[0]),
    .epilog = "Configuration comes from the environment "
	      "(SANDBOXD_WORKSPACE_ROOT, SANDBOXD_MAX_SESSIONS, ...): see "
	      "docs/sessions.md and sbxcat(1).",
};

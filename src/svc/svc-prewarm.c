/*
 * svc-prewarm.c - prewarm as an operation (svc-prewarm.h): the engine and
 * the deployment around prewarm.c, progress handed to the caller's
 * callback, the outcome tallied and reported as JSON.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/base64.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "basic/xjson.h"
#include "catalog/catalog.h"
#include "engine/engine.h"
#include "svc/svc-prewarm.h"

_Static_assert(SVC_PREWARM_WAITING == PREWARM_WAITING &&
		   SVC_PREWARM_CHECKING == PREWARM_CHECKING &&
		   SVC_PREWARM_PULLING == PREWARM_PULLING &&
		   SVC_PREWARM_BUILDING == PREWARM_BUILDING &&
		   SVC_PREWARM_PUSHING == PREWARM_PUSHING &&
		   SVC_PREWARM_CACHED == PREWARM_CACHED &&
		   SVC_PREWARM_PULLED == PREWARM_PULLED &&
		   SVC_PREWARM_BUILT == PREWARM_BUILT &&
		   SVC_PREWARM_PUSHED == PREWARM_PUSHED &&
		   SVC_PREWARM_PRESENT == PREWARM_PRESENT &&
		   SVC_PREWARM_FAILED == PREWARM_FAILED &&
		   SVC_PREWARM_CANCELLED == PREWARM_CANCELLED,
	       "svc-prewarm.h's states are prewarm.h's");

const char *svc_prewarm_state_name(enum prewarm_state st)
{
	return prewarm_state_name(st);
}

/* prewarm_run's notify: the snapshot, handed on as an UPDATE. */
static void notify(void *ctx, const struct prewarm *p,
		   const struct prewarm_snap *snap,
		   const struct prewarm_event *events, size_t nevents,
		   unsigned long long lost)
{
	const struct svc_prewarm_watch *w = ctx;
	struct svc_prewarm_progress pr = {
	    .phase = SVC_PREWARM_UPDATE,
	    .jobs = p->jobs,
	    .n = p->n,
	    .snap = snap,
	    .events = events,
	    .nevents = nevents,
	    .lost = lost,
	};

	w->progress(w->arg, &pr);
}

static void tell(const struct svc_prewarm_watch *w, enum svc_prewarm_phase ph,
		 const struct prewarm *p, const char *image)
{
	struct svc_prewarm_progress pr = {
	    .phase = ph, .jobs = p->jobs, .n = p->n, .image = image};

	if (w->progress)
		w->progress(w->arg, &pr);
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, xjson_text(v[i]));
	return a;
}

static json_t *report_json(const struct prewarm *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->n; i++) {
		const struct prewarm_job *j = &p->jobs[i];
		json_t *kept = json_array();

		for (size_t k = 0; k < j->nkept; k++)
			json_array_append_new(
			    kept,
			    xjson_pack("{s:o, s:o}", "tag",
				       xjson_text(j->kept[k].tag), "reason",
				       xjson_text(j->kept[k].why)));
		json_array_append_new(
		    arr,
		    xjson_pack(
			"{s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, "
			"s:o, s:o, s:o}",
			"alias", j->rt->alias, "kind",
			j->dockerfile ? "built" : "image", "tag", j->tag,
			"result", prewarm_state_name(j->state), "ms",
			(json_int_t)j->ms, "error",
			j->error ? xjson_text(j->error) : json_null(), "step",
			j->failed_step ? xjson_text(j->failed_step)
				       : json_null(),
			"output", strv_json(j->output, j->noutput), "removed",
			strv_json(j->removed, j->nremoved), "kept", kept,
			"notes", strv_json(j->notes, j->nnotes)));
	}
	return arr;
}

/* The outcome as a whole: failures, their kind, a cancel. */
static void tally(const struct svc_call *call, struct svc_prewarm_res *res)
{
	res->cancelled = svc_cancelled(call);
	res->failed_kind = SBX_E_REFUSED;
	for (size_t i = 0; i < res->n; i++) {
		const struct prewarm_job *j = &res->jobs[i];

		if (j->state == PREWARM_CANCELLED)
			res->cancelled = true;
		if (j->state != PREWARM_FAILED)
			continue;
		res->failed++;
		if (j->error_kind == SBX_E_UNAVAILABLE ||
		    j->error_kind == SBX_E_TIMEOUT ||
		    j->error_kind == SBX_E_INTERNAL)
			res->failed_kind = SBX_E_UNAVAILABLE;
	}
}

/* One build or pull per CPU, up to the bound. */
static unsigned default_jobs(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		return 1;
	return cpus > SVC_PREWARM_JOBS_MAX ? SVC_PREWARM_JOBS_MAX
					   : (unsigned)cpus;
}

/* A credentials file is a few hundred bytes; this is not one. */
#define REGISTRY_AUTH_MAX (64u << 10)

/* Free a string that may hold a password, wiped first. */
static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static int auth_error(const char *path, struct sbx_error **err, const char *fmt,
		      ...) __attribute__((format(printf, 3, 4)));
static int auth_error(const char *path, struct sbx_error **err, const char *fmt,
		      ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	char *why;

	va_start(ap, fmt);
	why = xvasprintf(fmt, ap);
	va_end(ap);
	text_add_escaped(&sb, path, strlen(path));
	sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
		      "SBXCAT_REGISTRY_AUTH_FILE '%s': %s", strbuf_str(&sb),
		      why);
	strbuf_release(&sb);
	free(why);
	return -1;
}

/*
 * The user and password (or identity token) for registry out of a
 * docker-config-style file: {"auths": {"HOST:PORT": {"auth":
 * base64("USER:PASSWORD")} or {"username", "password"} or
 * {"identitytoken"}}}, the key as the registry is named (an http:// or
 * https:// in front of it is allowed).  *entry a new reference, or NULL
 * when the file has none for registry.
 */
static json_t *auths_entry(json_t *j, const char *registry)
{
	json_t *auths = json_object_get(j, "auths");
	const char *pre[] = {"", "http://", "https://"};

	for (size_t i = 0; i < 3; i++) {
		cleanup_free char *key = xasprintf("%s%s", pre[i], registry);
		json_t *e = json_object_get(auths, key);
		if (json_is_object(e))
			return e;
	}
	return NULL;
}

/*
 * The X-Registry-Auth value for registry from SBXCAT_REGISTRY_AUTH_FILE
 * (*out NULL when none is configured).  The file is either the
 * docker-config JSON above or one line USER:PASSWORD (the password is
 * everything after the first ':').  It is refused when group or others
 * may read or write it, or it is not a regular file.  Messages name the
 * file and what is wrong with it, never a byte of its content (a JSON
 * parser's message quotes the text it stopped at: not used).
 */
static int registry_auth(const struct svc_config *c, const char *registry,
			 char **out, struct sbx_error **err)
{
	const char *path = c->registry_auth_file;
	struct strbuf js = STRBUF_INIT, enc = STRBUF_INIT, dec = STRBUF_INIT;
	char *data = NULL, *user = NULL, *pass = NULL, *token = NULL;
	json_t *j = NULL, *doc = NULL;
	size_t len = 0, bad = 0;
	struct stat st;
	int fd, rc = -1;

	*out = NULL;
	if (!path)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		char buf[128];
		return auth_error(path, err, "cannot open it: %s",
				  strerror_r(errno, buf, sizeof(buf)));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return auth_error(path, err, "%s", "not a regular file");
	}
	if (st.st_mode & 077) {
		close(fd);
		return auth_error(path, err,
				  "group or others may read or write it (mode "
				  "%04o): it holds a password; chmod 600 it",
				  (unsigned)(st.st_mode & 07777));
	}
	if (read_fd_limited(fd, path, REGISTRY_AUTH_MAX, &data, &len, err) <
	    0) {
		close(fd);
		return -1;
	}
	close(fd);
	if (len > 0 && data[strspn(data, " \t\r\n")] == '{') {
		json_t *e;
		json_error_t jerr;

		j = json_loadb(data, len, 0, &jerr);
		if (!j) {
			auth_error(path, err, "not valid JSON (line %d)",
				   jerr.line);
			goto out;
		}
		e = auths_entry(j, registry);
		if (!e) {
			auth_error(path, err, "no entry in \"auths\" for %s",
				   registry);
			goto out;
		}
		if (json_is_string(json_object_get(e, "identitytoken"))) {
			token = xstrdup(json_string_value(
			    json_object_get(e, "identitytoken")));
		} else if (json_is_string(json_object_get(e, "auth"))) {
			const char *a =
			    json_string_value(json_object_get(e, "auth"));
			char *colon;
			if (base64_decode(&dec, a, strlen(a), BASE64_STD, true,
					  &bad) < 0 ||
			    memchr(dec.buf, 0, dec.len) ||
			    !(colon = strchr(strbuf_str(&dec), ':'))) {
				auth_error(path, err,
					   "the \"auth\" of %s is not base64 "
					   "of USER:PASSWORD",
					   registry);
				goto out;
			}
			user = xstrndup(dec.buf, (size_t)(colon - dec.buf));
			pass = xstrdup(colon + 1);
		} else if (json_is_string(json_object_get(e, "username")) &&
			   json_is_string(json_object_get(e, "password"))) {
			user = xstrdup(
			    json_string_value(json_object_get(e, "username")));
			pass = xstrdup(
			    json_string_value(json_object_get(e, "password")));
		} else {
			auth_error(path, err,
				   "the entry for %s has no \"auth\", "
				   "\"username\" and \"password\", or "
				   "\"identitytoken\"",
				   registry);
			goto out;
		}
	} else {
		size_t n = strcspn(data, "\r\n");
		char *colon = memchr(data, ':', n);

		if (!colon || colon == data || memchr(data, 0, len)) {
			auth_error(path, err, "%s",
				   "expected USER:PASSWORD on its first line, "
				   "or a docker config's JSON");
			goto out;
		}
		user = xstrndup(data, (size_t)(colon - data));
		pass = xstrndup(colon + 1, n - (size_t)(colon - data) - 1);
	}
	if (token)
		doc = xjson_pack("{s:s, s:s}", "identitytoken", token,
				 "serveraddress", registry);
	else
		doc = xjson_pack("{s:o, s:o, s:s}", "username",
				 xjson_string(user), "password",
				 xjson_string(pass), "serveraddress", registry);
	{
		char *d = json_dumps(doc, JSON_COMPACT);
		if (!d)
			die_oom();
		strbuf_addstr(&js, d);
		wipe_free(d);
	}
	/* As the docker CLI encodes it: URL-safe, padded. */
	base64_encode(&enc, js.buf, js.len, BASE64_URL, true);
	*out = strbuf_detach(&enc, NULL);
	rc = 0;
out:
	if (js.buf)
		explicit_bzero(js.buf, js.len);
	if (dec.buf)
		explicit_bzero(dec.buf, dec.len);
	strbuf_release(&js);
	strbuf_release(&dec);
	strbuf_release(&enc);
	/* jansson's copies are freed unwiped: the JSON lives no longer
	 * than this call. */
	json_decref(doc);
	json_decref(j);
	if (data)
		explicit_bzero(data, len);
	free(data);
	wipe_free(user);
	wipe_free(pass);
	wipe_free(token);
	return rc;
}

/* The registry side of a prewarm: where it pulls from or pushes to, and
 * the credentials for it (new, wiped by reg_release). */
struct reg {
	const char *registry, *push;
	char *auth;
	long idle_ms;
};

static int reg_setup(const struct svc *s, const char *push, struct reg *r,
		     struct sbx_error **err)
{
	const struct svc_config *c = &s->cfg;

	memset(r, 0, sizeof(*r));
	if (push && svc_registry_check(push, "--push", SBX_E_INVALID, err) < 0)
		return -1;
	/* The settings are refused only where they are used. */
	if (!push && !c->registry)
		return 0;
	if (svc_config_check(c->registry_err, err) < 0)
		return -1;
	r->push = push;
	/* A push goes from the host that builds: it pulls nothing. */
	r->registry = push ? NULL : c->registry;
	r->idle_ms = c->registry_idle_ms;
	return registry_auth(c, push ? push : c->registry, &r->auth, err);
}

static void reg_release(struct reg *r)
{
	wipe_free(r->auth);
	memset(r, 0, sizeof(*r));
}

static void prewarm_with(const struct svc *s, const struct svc_call *call,
			 const struct engine *e,
			 const struct svc_prewarm_req *req, const char *image,
			 const struct reg *r, struct svc_prewarm_res *res)
{
	struct prewarm *p = xcalloc(1, sizeof(*p));

	memset(res, 0, sizeof(*res));
	prewarm_init(p);
	p->deployment = s->cfg.deployment;
	for (size_t i = 0; i < req->n; i++)
		prewarm_add(p, req->runtimes[i], &s->cfg.recipe);
	p->concurrency = req->jobs ? req->jobs : default_jobs();
	p->force = req->force;
	p->timeout_ms =
	    (req->timeout_s ? req->timeout_s : PREWARM_TIMEOUT_SECONDS) * 1000L;
	p->engine = e;
	p->cancel = call ? call->cancel : NULL;
	p->registry = r->registry;
	p->push = r->push;
	p->auth = r->auth;
	p->idle_ms = r->idle_ms;
	if (req->watch.progress) {
		p->notify = notify;
		p->ctx = (void *)&req->watch;
		p->tick_ms = req->watch.tick_ms;
	}
	tell(&req->watch, SVC_PREWARM_START, p, image);
	prewarm_run(p);
	res->run = p;
	res->jobs = p->jobs;
	res->n = p->n;
	tally(call, res);
	res->doc = report_json(p);
	tell(&req->watch, SVC_PREWARM_DONE, p, image);
}

void svc_prewarm_on(const struct svc *s, const struct svc_call *call,
		    const struct engine *e, const struct svc_prewarm_req *req,
		    const char *image, struct svc_prewarm_res *res)
{
	struct sbx_error *err = NULL;
	struct reg r;

	/* A registry that cannot be used is said, and the image built as
	 * without one: a session open waits for a build rather than fail. */
	if (reg_setup(s, req->push, &r, &err) < 0) {
		svc_warn(call, "%s; building without the registry", err->msg);
		sbx_error_free(&err);
		reg_release(&r);
	}
	prewarm_with(s, call, e, req, image, &r, res);
	reg_release(&r);
}

int svc_prewarm(const struct svc *s, const struct svc_call *call,
		const struct svc_prewarm_req *req, struct svc_prewarm_res *res,
		struct sbx_error **err)
{
	struct engine engine = ENGINE_INIT;
	struct reg r;

	memset(res, 0, sizeof(*res));
	/* Refused before the engine is asked (docs/prewarm.md). */
	if (svc_config_check(s->cfg.deployment_err, err) < 0)
		return -1;
	if (reg_setup(s, req->push, &r, err) < 0) {
		reg_release(&r);
		return -1;
	}
	if (svc_engine_open(s, call, &engine, err) < 0) {
		svc_engine_close(s, &engine);
		reg_release(&r);
		return -1;
	}
	prewarm_with(s, call, &engine, req, NULL, &r, res);
	svc_engine_close(s, &engine);
	reg_release(&r);
	return 0;
}

void svc_prewarm_res_release(struct svc_prewarm_res *res)
{
	if (res->run) {
		prewarm_release(res->run);
		free(res->run);
	}
	json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

/*
 * engine-image.c - the engine's image calls: inspect, list tags, tag,
 * remove, pull and build (see engine.h), and the containers made from an
 * image.  Each is a request through the runner in engine-http.c.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine-http.h"
#include "basic/error.h"
#include "engine/tar.h"
#include "basic/xjson.h"

static char *xstrdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void engine_image_release(struct engine_image *img)
{
	free(img->id);
	strv_free(img->tags, img->ntags);
	strv_free(img->label_keys, img->nlabels);
	strv_free(img->label_values, img->nlabels);
	memset(img, 0, sizeof(*img));
}

const char *engine_image_label(const struct engine_image *img, const char *key)
{
	for (size_t i = 0; i < img->nlabels; i++)
		if (strcmp(img->label_keys[i], key) == 0)
			return img->label_values[i];
	return NULL;
}

static void image_from_json(struct engine_image *img, json_t *j)
{
	json_t *v;
	const char *key;
	size_t i, alloc = 0;

	img->id = xstrdup_or_null(json_string_value(json_object_get(j, "Id")));
	json_array_foreach(json_object_get(j, "RepoTags"), i, v)
	{
		if (!json_is_string(v))
			continue;
		ALLOC_GROW(img->tags, img->ntags + 1, alloc);
		img->tags[img->ntags++] = xstrdup(json_string_value(v));
	}
	alloc = 0;
	json_object_foreach(
	    json_object_get(json_object_get(j, "Config"), "Labels"), key, v)
	{
		size_t a2 = alloc;
		if (!json_is_string(v))
			continue;
		ALLOC_GROW(img->label_keys, img->nlabels + 1, alloc);
		ALLOC_GROW(img->label_values, img->nlabels + 1, a2);
		img->label_keys[img->nlabels] = xstrdup(key);
		img->label_values[img->nlabels++] =
		    xstrdup(json_string_value(v));
	}
}

int engine_image_inspect(struct engine *e, const char *ref, bool *present,
			 struct engine_image *img, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	json_t *j = NULL;
	int rc = -1;

	*present = false;
	if (img)
		memset(img, 0, sizeof(*img));
	strbuf_addstr(&path, "/images/");
	engine_add_path_escaped(&path, ref);
	strbuf_addstr(&path, "/json");
	call_init(&c, e, "GET", strbuf_str(&path), true);
	if (call_run(&c, err) < 0)
		goto out;
	if (c.status == 404) {
		rc = 0;
		goto out;
	}
	if (c.status < 200 || c.status >= 300) {
		call_reply_error(&c, err);
		goto out;
	}
	*present = true;
	j = json_loadb(c.body.buf ? c.body.buf : "", c.body.len, 0, NULL);
	if (img)
		image_from_json(img, j);
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

/* Is s "REPO:TAG" for one of repos[]?  A digest is not a tag. */
static bool tag_in(const char *s, const char *const *repos, size_t nrepos)
{
	const char *colon = strrchr(s, ':');

	if (!colon || strchr(colon, '/') || strchr(s, '@'))
		return false;
	for (size_t i = 0; i < nrepos; i++)
		if (strlen(repos[i]) == (size_t)(colon - s) &&
		    strncmp(s, repos[i], (size_t)(colon - s)) == 0)
			return true;
	return false;
}

int engine_image_tags(struct engine *e, const char *const *repos, size_t nrepos,
		      char ***tags, size_t *n, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	json_t *j = NULL, *img;
	size_t i, alloc = 0;
	int rc = -1;

	*tags = NULL;
	*n = 0;
	if (nrepos == 0)
		return 0;
	strbuf_addstr(&path, "/images/json?");
	engine_add_filter_values(&path, "reference", repos, nrepos);
	call_init(&c, e, "GET", strbuf_str(&path), true);
	if (call_json(&c, &j, err) < 0)
		goto out;
	json_array_foreach(j, i, img)
	{
		json_t *t;
		size_t k;
		json_array_foreach(json_object_get(img, "RepoTags"), k, t)
		{
			const char *s = json_string_value(t);
			/* The filter is a pattern: match exactly here. */
			if (!s || !tag_in(s, repos, nrepos))
				continue;
			ALLOC_GROW(*tags, *n + 1, alloc);
			(*tags)[(*n)++] = xstrdup(s);
		}
	}
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

int engine_image_tag(struct engine *e, const char *ref, const char *tag,
		     struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	const char *colon = strrchr(tag, ':');
	cleanup_free char *repo =
	    colon ? xstrndup(tag, (size_t)(colon - tag)) : xstrdup(tag);
	int rc;

	strbuf_addstr(&path, "/images/");
	engine_add_path_escaped(&path, ref);
	strbuf_addstr(&path, "/tag?repo=");
	engine_add_query_escaped(&path, repo);
	strbuf_addstr(&path, "&tag=");
	engine_add_query_escaped(&path, colon ? colon + 1 : "latest");
	rc = call_simple(e, "POST", strbuf_str(&path), NULL, NULL, err);
	strbuf_release(&path);
	return rc;
}

int engine_image_remove(struct engine *e, const char *ref, bool *conflict,
			struct sbx_error **err)
{
	static const long accept[] = {404, 409, 0};
	struct strbuf path = STRBUF_INIT;
	long status = 0;
	int rc;

	strbuf_addstr(&path, "/images/");
	engine_add_path_escaped(&path, ref);
	rc = call_simple(e, "DELETE", strbuf_str(&path), accept, &status, err);
	*conflict = rc == 0 && status == 409;
	strbuf_release(&path);
	return rc;
}

int engine_containers_using(struct engine *e, const char *image, char ***names,
			    size_t *n, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	json_t *j = NULL, *ct;
	size_t i, alloc = 0;
	int rc = -1;

	*names = NULL;
	*n = 0;
	strbuf_addstr(&path, "/containers/json?all=1&");
	engine_add_filter_values(&path, "ancestor", &image, 1);
	call_init(&c, e, "GET", strbuf_str(&path), true);
	if (call_json(&c, &j, err) < 0)
		goto out;
	json_array_foreach(j, i, ct)
	{
		const char *name = json_string_value(
		    json_array_get(json_object_get(ct, "Names"), 0));
		const char *cid = json_string_value(json_object_get(ct, "Id"));
		ALLOC_GROW(*names, *n + 1, alloc);
		if (name)
			(*names)[(*n)++] =
			    xstrdup(name[0] == '/' ? name + 1 : name);
		else
			(*names)[(*n)++] = xstrndup(cid ? cid : "?", 12);
	}
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

/* ref as the engine's NAME and TAG (or DIGEST) parameters: a NAME alone
 * would pull (or push) every tag. */
static void split_ref(const char *ref, char **name, const char **tag)
{
	const char *at = strchr(ref, '@');
	const char *slash = strrchr(ref, '/');
	const char *colon = strrchr(ref, ':');

	if (at) {
		*name = xstrndup(ref, (size_t)(at - ref));
		*tag = at + 1;
	} else if (colon && (!slash || colon > slash)) {
		*name = xstrndup(ref, (size_t)(colon - ref));
		*tag = colon + 1;
	} else {
		*name = xstrdup(ref);
		*tag = "latest";
	}
}

/* The registry's side of a call: its header and its idle bound. */
static void xfer_apply(struct call *c, const struct engine_xfer *x,
		       char **header, bool push)
{
	*header = NULL;
	if (x && x->auth)
		*header = xasprintf("X-Registry-Auth: %s", x->auth);
	else if (push)
		/* base64url("{}"): the engine refuses a push without one. */
		*header = xstrdup("X-Registry-Auth: e30=");
	c->extra_header = *header;
	c->idle_ms = x ? x->idle_ms : 0;
}

/* The header's copy, wiped: it may hold a password. */
static void header_free(char *h)
{
	if (h) {
		explicit_bzero(h, strlen(h));
		free(h);
	}
}

/* A transfer with a registry: POST path (released here), streamed. */
static int xfer_post(struct engine *e, struct strbuf *path,
		     const struct engine_xfer *x, bool push,
		     struct engine_stream *s, struct sbx_error **err)
{
	struct call c;
	char *header;
	int rc;

	call_init(&c, e, "POST", strbuf_str(path), true);
	xfer_apply(&c, x, &header, push);
	rc = call_stream(&c, s, err);
	call_release(&c);
	header_free(header);
	strbuf_release(path);
	return rc;
}

int engine_image_pull(struct engine *e, const char *ref,
		      const struct engine_xfer *x, struct engine_stream *s,
		      struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	cleanup_free char *name = NULL;
	const char *tag;

	split_ref(ref, &name, &tag);
	strbuf_addstr(&path, "/images/create?fromImage=");
	engine_add_query_escaped(&path, name);
	strbuf_addstr(&path, "&tag=");
	engine_add_query_escaped(&path, tag);
	return xfer_post(e, &path, x, false, s, err);
}

int engine_image_push(struct engine *e, const char *ref,
		      const struct engine_xfer *x, struct engine_stream *s,
		      struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	cleanup_free char *name = NULL;
	const char *tag;

	split_ref(ref, &name, &tag);
	strbuf_addstr(&path, "/images/");
	engine_add_path_escaped(&path, name);
	strbuf_addstr(&path, "/push?tag=");
	engine_add_query_escaped(&path, tag);
	return xfer_post(e, &path, x, true, s, err);
}

int engine_distribution_inspect(struct engine *e, const char *ref,
				const struct engine_xfer *x, bool *present,
				char **digest, struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	char *header;
	json_t *j = NULL;
	int rc = -1;

	*present = false;
	if (digest)
		*digest = NULL;
	strbuf_addstr(&path, "/distribution/");
	engine_add_path_escaped(&path, ref);
	strbuf_addstr(&path, "/json");
	call_init(&c, e, "GET", strbuf_str(&path), true);
	/* A plain request, but one the registry answers: the idle bound
	 * holds for it too (its reply comes whole, once the registry has). */
	xfer_apply(&c, x, &header, false);
	if (call_run(&c, err) < 0)
		goto out;
	if (c.status == 404) {
		rc = 0;
		goto out;
	}
	if (c.status < 200 || c.status >= 300) {
		call_reply_error(&c, err);
		goto out;
	}
	j = json_loadb(c.body.buf ? c.body.buf : "", c.body.len, 0, NULL);
	*present = true;
	if (digest) {
		const char *d = json_string_value(json_object_get(
		    json_object_get(j, "Descriptor"), "digest"));
		*digest = d ? xstrdup(d) : NULL;
	}
	rc = 0;
out:
	json_decref(j);
	call_release(&c);
	header_free(header);
	strbuf_release(&path);
	return rc;
}

int engine_build(struct engine *e, struct tar *context,
		 const struct engine_build_args *a, struct engine_stream *s,
		 struct sbx_error **err)
{
	struct strbuf path = STRBUF_INIT;
	struct call c;
	int rc;

	/* rm/forcerm: no intermediate container survives, even a failed one. */
	strbuf_addstr(&path, "/build?");
	for (size_t i = 0; i < a->ntags; i++) {
		strbuf_addstr(&path, "t=");
		engine_add_query_escaped(&path, a->tags[i]);
		strbuf_addch(&path, '&');
	}
	strbuf_addstr(&path, "rm=1&forcerm=1");
	if (a->nlabels) {
		json_t *labels = json_object();
		char *js;
		for (size_t i = 0; i < a->nlabels; i++)
			json_object_set_new(labels, a->label_keys[i],
					    xjson_string(a->label_values[i]));
		js = json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS);
		if (!js)
			die_oom();
		strbuf_addstr(&path, "&labels=");
		engine_add_query_escaped(&path, js);
		free(js);
		json_decref(labels);
	}
	if (a->nocache)
		strbuf_addstr(&path, "&nocache=1");
	call_init(&c, e, "POST", strbuf_str(&path), true);
	tar_rewind(context);
	c.upload = context;
	rc = call_stream(&c, s, err);
	call_release(&c);
	strbuf_release(&path);
	return rc;
}

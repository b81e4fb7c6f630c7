/*
 * prewarm.c - the scheduling of builds and pulls (see prewarm.h).
 *
 * Presence is decided by the content tag alone: the tag is a hash of the
 * Dockerfile, and the engine applies it only when every step succeeded,
 * so a present tag is a complete image of exactly this recipe and there is
 * nothing to send.  That is also why a cancelled or failed build cannot
 * leave a half-made image under the tag.
 *
 * Workers hold the lock only to change a job's live fields and queue an
 * event; all output is the business of prewarm_run()'s thread, which
 * copies what changed under the lock and calls notify outside it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/clock.h"
#include "catalog/catalog.h"
#include "basic/error.h"
#include "engine/prewarm.h"
#include "catalog/recipe.h"
#include "engine/tar.h"
#include "basic/text.h"
#include "basic/util.h"

/* The hex digits of a content tag (recipe_tag_of). */
#define CONTENT_HEX 12

const char *prewarm_state_name(enum prewarm_state s)
{
	switch (s) {
	case PREWARM_WAITING:
		return "waiting";
	case PREWARM_CHECKING:
		return "checking";
	case PREWARM_PULLING:
		return "pulling";
	case PREWARM_BUILDING:
		return "building";
	case PREWARM_PUSHING:
		return "pushing";
	case PREWARM_CACHED:
		return "cached";
	case PREWARM_PULLED:
		return "pulled";
	case PREWARM_BUILT:
		return "built";
	case PREWARM_PUSHED:
		return "pushed";
	case PREWARM_PRESENT:
		return "present";
	case PREWARM_FAILED:
		return "failed";
	case PREWARM_CANCELLED:
		return "cancelled";
	}
	return "?";
}

void prewarm_init(struct prewarm *p)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->concurrency = 1;
	p->timeout_ms = PREWARM_TIMEOUT_SECONDS * 1000L;
	p->deployment = DEPLOYMENT_DEFAULT;
	pthread_mutex_init(&p->lock, NULL);
	/* Ticks are intervals: a clock set back must not stretch them. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
}

void prewarm_add(struct prewarm *p, const struct runtime *rt,
		 const struct recipe_opts *o)
{
	struct prewarm_job *job;

	ALLOC_GROW(p->jobs, p->n + 1, p->alloc);
	job = &p->jobs[p->n++];
	memset(job, 0, sizeof(*job));
	job->rt = rt;
	job->dockerfile = recipe_dockerfile(rt, o, &job->dflen);
	job->tag = recipe_tag_of(rt, job->dockerfile, job->dflen);
	if (job->dockerfile)
		job->claim = xasprintf("%s.%s", job->tag, p->deployment);
}

static void job_release(struct prewarm_job *job)
{
	free(job->tag);
	free(job->claim);
	free(job->dockerfile);
	free(job->error);
	free(job->failed_step);
	strv_free(job->output, job->noutput);
	strv_free(job->removed, job->nremoved);
	for (size_t i = 0; i < job->nkept; i++) {
		free(job->kept[i].tag);
		free(job->kept[i].why);
	}
	free(job->kept);
	strv_free(job->notes, job->nnotes);
}

void prewarm_release(struct prewarm *p)
{
	for (size_t i = 0; i < p->n; i++)
		job_release(&p->jobs[i]);
	free(p->jobs);
	strv_free(p->tags, p->ntags);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	memset(p, 0, sizeof(*p));
}

/* Under the lock: queue an event for the display and wake it. */
static void queue_event(struct prewarm *p, struct prewarm_job *job)
{
	struct prewarm_event *ev;

	if (p->nevents == PREWARM_EVENTS_MAX) {
		p->events_lost++;
	} else {
		ev = &p->events[p->nevents++];
		ev->job = (size_t)(job - p->jobs);
		ev->state = job->state;
		ev->step = job->step;
		ev->nsteps = job->nsteps;
		snprintf(ev->step_text, sizeof(ev->step_text), "%s",
			 job->step_text);
	}
	pthread_cond_broadcast(&p->cond);
}

static void set_state(struct prewarm *p, struct prewarm_job *job,
		      enum prewarm_state s)
{
	pthread_mutex_lock(&p->lock);
	job->state = s;
	queue_event(p, job);
	pthread_mutex_unlock(&p->lock);
}

struct stream_ctx {
	struct prewarm *p;
	struct prewarm_job *job;
};

static void on_step(void *ctx, int step, int nsteps, const char *text)
{
	struct stream_ctx *sc = ctx;

	pthread_mutex_lock(&sc->p->lock);
	sc->job->step = step;
	sc->job->nsteps = nsteps;
	snprintf(sc->job->step_text, sizeof(sc->job->step_text), "%s", text);
	sc->job->current[0] = '\0';
	queue_event(sc->p, sc->job);
	pthread_mutex_unlock(&sc->p->lock);
}

/* Every output line passes here; the display picks it up on its tick. */
static void on_line(void *ctx, const char *line)
{
	struct stream_ctx *sc = ctx;

	pthread_mutex_lock(&sc->p->lock);
	snprintf(sc->job->current, sizeof(sc->job->current), "%s", line);
	pthread_mutex_unlock(&sc->p->lock);
}

/*
 * Record a failure: the message, and from a stream what led to it.  The
 * outcome is returned, not stored: the state changes under the lock.
 */
static enum prewarm_state fail(struct prewarm_job *job, struct sbx_error **err,
			       const struct engine_stream *s)
{
	bool cancel = (*err)->errnum == ECANCELED;

	if (cancel && s && s->step)
		job->error =
		    xasprintf("cancelled at step %d/%d", s->step, s->nsteps);
	else if (cancel)
		job->error = xstrdup("cancelled");
	else if (s && s->bad_lines)
		/* A hostile or broken stream: say so beside its error. */
		job->error = xasprintf("%s (%llu line%s of the engine's reply "
				       "could not be read)",
				       (*err)->msg, s->bad_lines,
				       s->bad_lines == 1 ? "" : "s");
	else
		job->error = xstrdup((*err)->msg);
	job->error_kind = (*err)->kind;
	sbx_error_free(err);
	if (s && !cancel) {
		if (s->step)
			job->failed_step = xasprintf("step %d/%d : %s", s->step,
						     s->nsteps, s->step_text);
		job->noutput = s->tail.n;
		job->output =
		    xcalloc(s->tail.n ? s->tail.n : 1, sizeof(char *));
		for (size_t i = 0; i < s->tail.n; i++)
			job->output[i] = xstrdup(engine_tail_line(&s->tail, i));
	}
	return cancel ? PREWARM_CANCELLED : PREWARM_FAILED;
}

static void keep(struct prewarm_job *job, const char *tag, char *why)
{
	ALLOC_GROW(job->kept, job->nkept + 1, job->akept);
	job->kept[job->nkept].tag = xstrdup(tag);
	job->kept[job->nkept].why = why;
	job->nkept++;
}

static void note(struct prewarm_job *job, char *text)
{
	ALLOC_GROW(job->notes, job->nnotes + 1, job->anotes);
	job->notes[job->nnotes++] = text;
}

static void note_removed(struct prewarm_job *job, const char *tag)
{
	ALLOC_GROW(job->removed, job->nremoved + 1, job->aremoved);
	job->removed[job->nremoved++] = xstrdup(tag);
}

/* The first line of an error, for a one-line reason. */
static char *first_line(struct sbx_error **err)
{
	char *s = xstrdup((*err)->msg);
	s[strcspn(s, "\n")] = '\0';
	sbx_error_free(err);
	return s;
}

static char *repo_of(const char *tag)
{
	return xstrndup(tag, (size_t)(strrchr(tag, ':') - tag));
}

/*
 * The tags of every built runtime's repository, in one request before the
 * work starts (the engine takes ~15 ms to list images, an inspect ~1 ms):
 * what a no-op run costs is then one list, not one per runtime.  A tag an
 * older recipe left is in it; the one a build adds is the current one and
 * never superseded.  Read-only once the workers run.
 */
static void known_tags(struct prewarm *p)
{
	struct sbx_error *err = NULL;
	struct engine e;
	char **repos = xcalloc(p->n ? p->n : 1, sizeof(*repos));
	size_t nrepos = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->jobs[i].dockerfile)
			repos[nrepos++] = repo_of(p->jobs[i].tag);
	engine_copy(&e, p->engine);
	e.cancel = p->cancel;
	if (engine_image_tags(&e, (const char *const *)repos, nrepos, &p->tags,
			      &p->ntags, &err) == 0)
		p->tags_known = true;
	/* Failing that, each runtime asks for its own repository. */
	sbx_error_free(&err);
	engine_release(&e);
	strv_free(repos, nrepos);
}

/* The content hash of "REPO:HASH" or "REPO:HASH.ID", and the ID (or ""). */
static bool parse_tag(const char *tag, char hash[CONTENT_HEX + 1],
		      const char **id)
{
	const char *t = strrchr(tag, ':') + 1;

	if (strspn(t, "0123456789abcdef") < CONTENT_HEX)
		return false;
	if (t[CONTENT_HEX] == '\0')
		*id = "";
	else if (t[CONTENT_HEX] == '.' && t[CONTENT_HEX + 1])
		*id = t + CONTENT_HEX + 1;
	else
		return false;
	memcpy(hash, t, CONTENT_HEX);
	hash[CONTENT_HEX] = '\0';
	return true;
}

/* The tags of repo from the list made at the start, or asked for now. */
static int repo_tags(struct prewarm *p, struct engine *e, const char *repo,
		     char ***tags, size_t *ntags, struct sbx_error **err)
{
	const char *repos[1] = {repo};
	size_t alloc = 0, len = strlen(repo);

	*tags = NULL;
	*ntags = 0;
	if (!p->tags_known)
		return engine_image_tags(e, repos, 1, tags, ntags, err);
	for (size_t i = 0; i < p->ntags; i++) {
		if (strncmp(p->tags[i], repo, len) != 0 ||
		    p->tags[i][len] != ':')
			continue;
		ALLOC_GROW(*tags, *ntags + 1, alloc);
		(*tags)[(*ntags)++] = xstrdup(p->tags[i]);
	}
	return 0;
}

static bool has_tag(char **tags, size_t n, const char *tag)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(tags[i], tag) == 0)
			return true;
	return false;
}

/*
 * Whose is an unclaimed content tag?  The deployment that built it, by
 * its label; an image with no label was built before deployments were
 * told apart, and is the default deployment's.
 */
static bool built_by(struct engine *e, const char *tag, const char *dep)
{
	struct sbx_error *err = NULL;
	struct engine_image img;
	bool present = false, mine = false;
	const char *label;

	if (engine_image_inspect(e, tag, &present, &img, &err) < 0) {
		sbx_error_free(&err);
		return false;
	}
	if (!present)
		return false;
	label = engine_image_label(&img, DEPLOYMENT_LABEL);
	mine = strcmp(label ? label : DEPLOYMENT_DEFAULT, dep) == 0;
	engine_image_release(&img);
	return mine;
}

/* Remove tag unless a container uses it; false when it was kept. */
static bool remove_unused(struct engine *e, struct prewarm_job *job,
			  const char *tag, const char *report_as)
{
	struct sbx_error *err = NULL;
	char **users = NULL;
	size_t nusers = 0;
	bool conflict = false, removed = false;

	if (engine_containers_using(e, tag, &users, &nusers, &err) < 0)
		keep(job, report_as, first_line(&err));
	else if (nusers)
		keep(job, report_as,
		     nusers == 1
			 ? xasprintf("used by container '%s'", users[0])
			 : xasprintf("used by container '%s' and %zu more",
				     users[0], nusers - 1));
	else if (engine_image_remove(e, tag, &conflict, &err) < 0)
		keep(job, report_as, first_line(&err));
	else if (conflict)
		keep(job, report_as,
		     xstrdup("the engine refused: a container uses it"));
	else
		removed = true;
	strv_free(users, nusers);
	return removed;
}

/*
 * One superseded recipe hash of this runtime: give up this deployment's
 * claim on it, and remove its content tag when no other deployment claims
 * it.  Containers reference an image by ID, and removing a tag that
 * another tag shares only untags it, whoever uses it: so the containers
 * are asked first, and the engine's own refusal (409) is the backstop for
 * a container made in between.
 */
static void sweep_hash(struct prewarm *p, struct engine *e,
		       struct prewarm_job *job, const char *repo,
		       const char *hash, char **tags, size_t ntags)
{
	cleanup_free char *content = xasprintf("%s:%s", repo, hash);
	cleanup_free char *claim =
	    xasprintf("%s:%s.%s", repo, hash, p->deployment);
	const char *other = NULL;
	bool has_content = has_tag(tags, ntags, content);
	bool own = has_tag(tags, ntags, claim);
	char h[CONTENT_HEX + 1];
	const char *id;

	for (size_t i = 0; i < ntags && !other; i++)
		if (parse_tag(tags[i], h, &id) && strcmp(h, hash) == 0 && *id &&
		    strcmp(id, p->deployment) != 0)
			other = id;
	if (other) {
		/* Shared: let go of it, leave it to the others. */
		if (own && remove_unused(e, job, claim, content))
			keep(job, content,
			     xasprintf("used by deployment '%s'", other));
		return;
	}
	if (!own && !(has_content && built_by(e, content, p->deployment)))
		return; /* another deployment's, or nobody's to decide */
	if (has_content) {
		/* The claim goes with the content tag: one container check. */
		if (!remove_unused(e, job, content, content))
			return;
		if (own)
			remove_unused(e, job, claim, claim);
	} else if (!remove_unused(e, job, claim, claim)) {
		return;
	}
	note_removed(job, has_content ? content : claim);
}

/*
 * The superseded recipes of this runtime (tags of sbxcat/ALIAS other than
 * the current content tag and its claims) that this deployment may let go.
 * Tags that are neither content nor claim tags were not made by sbxcat:
 * they stay.
 */
static void sweep(struct prewarm *p, struct engine *e, struct prewarm_job *job)
{
	struct sbx_error *err = NULL;
	cleanup_free char *repo = repo_of(job->tag);
	char **tags = NULL, **done = NULL;
	size_t ntags = 0, ndone = 0, adone = 0;
	char cur[CONTENT_HEX + 1], h[CONTENT_HEX + 1];
	const char *id;

	if (!parse_tag(job->tag, cur, &id))
		return;
	if (repo_tags(p, e, repo, &tags, &ntags, &err) < 0) {
		keep(job, repo, first_line(&err));
		return;
	}
	for (size_t i = 0; i < ntags; i++) {
		if (!parse_tag(tags[i], h, &id) || strcmp(h, cur) == 0 ||
		    has_tag(done, ndone, h))
			continue;
		ALLOC_GROW(done, ndone + 1, adone);
		done[ndone++] = xstrdup(h);
		sweep_hash(p, e, job, repo, h, tags, ntags);
	}
	strv_free(done, ndone);
	strv_free(tags, ntags);
}

static enum prewarm_state pull(struct prewarm *p, struct engine *e,
			       struct prewarm_job *job)
{
	enum prewarm_state out = PREWARM_PULLED;
	struct sbx_error *err = NULL;
	struct engine_stream s;
	struct stream_ctx sc = {p, job};

	set_state(p, job, PREWARM_PULLING);
	engine_stream_init(&s);
	s.on_line = on_line;
	s.ctx = &sc;
	if (engine_image_pull(e, job->tag, NULL, &s, &err) < 0) {
		sbx_error_wrap(&err, "cannot pull '%s'", job->tag);
		out = fail(job, &err, &s);
	}
	engine_stream_release(&s);
	return out;
}

/*
 * --force rebuilt a present tag: the image it named is now untagged by
 * this deployment.  Removed unless it still has a tag (another
 * deployment's claim) or a container; why it stays is reported.
 */
static void remove_replaced(struct engine *e, struct prewarm_job *job,
			    const char *old_id)
{
	struct sbx_error *err = NULL;
	struct engine_image img;
	bool present = false;
	cleanup_free char *what = xasprintf("%.19s (replaced)", old_id);

	if (engine_image_inspect(e, old_id, &present, &img, &err) < 0) {
		keep(job, what, first_line(&err));
		return;
	}
	if (present && img.ntags)
		keep(job, what, xasprintf("still tagged '%s'", img.tags[0]));
	else if (present && remove_unused(e, job, old_id, what))
		note_removed(job, what);
	engine_image_release(&img);
}

static enum prewarm_state build(struct prewarm *p, struct engine *e,
				struct prewarm_job *job, const char *old_id)
{
	enum prewarm_state out = PREWARM_BUILT;
	struct sbx_error *err = NULL;
	struct engine_stream s;
	struct stream_ctx sc = {p, job};
	struct tar ctx;
	struct engine_image img = {0};
	bool present = false;
	const char *tags[2] = {job->tag, job->claim};
	const char *lkey = DEPLOYMENT_LABEL, *lval = p->deployment;
	struct engine_build_args a = {tags, 2, &lkey, &lval, 1, p->force};

	set_state(p, job, PREWARM_BUILDING);
	tar_init(&ctx);
	engine_stream_init(&s);
	s.on_step = on_step;
	s.on_line = on_line;
	s.ctx = &sc;
	/* The context is the Dockerfile alone: recipes copy nothing in. */
	if (tar_add(&ctx, "Dockerfile", job->dockerfile, job->dflen, 0644,
		    &err) < 0) {
		out = fail(job, &err, NULL);
		goto out;
	}
	tar_finish(&ctx);
	if (engine_build(e, &ctx, &a, &s, &err) < 0) {
		/* A step's own failure speaks for itself; the rest get context.
		 */
		if (!s.error)
			sbx_error_wrap(&err, "cannot build '%s'", job->tag);
		out = fail(job, &err, &s);
		goto out;
	}
	/* Trust the image list, not the stream: the tag must be there. */
	if (engine_image_inspect(e, job->tag, &present, &img, &err) < 0) {
		sbx_error_wrap(&err, "cannot inspect '%s' after building it",
			       job->tag);
		out = fail(job, &err, NULL);
		goto out;
	}
	if (!present) {
		out = PREWARM_FAILED;
		job->error_kind = SBX_E_REFUSED;
		job->error = xasprintf("the engine reported success but has no "
				       "image '%s'",
				       job->tag);
		goto out;
	}
	if (old_id && img.id && strcmp(old_id, img.id) != 0)
		remove_replaced(e, job, old_id);
	sweep(p, e, job);
out:
	engine_image_release(&img);
	engine_stream_release(&s);
	tar_release(&ctx);
	return out;
}

/*
 * A present content tag this deployment has not claimed yet (built by
 * another deployment, or before claims): claim it.  false when the tag
 * went in between (another deployment's sweep): then it is built.
 */
static bool claim(struct prewarm *p, struct engine *e, struct prewarm_job *job,
		  enum prewarm_state *out)
{
	struct sbx_error *err = NULL;

	if (p->tags_known && has_tag(p->tags, p->ntags, job->claim))
		return true;
	if (engine_image_tag(e, job->tag, job->claim, &err) == 0)
		return true;
	if (err && err->http == 404) {
		sbx_error_free(&err);
		return false;
	}
	sbx_error_wrap(&err, "cannot claim '%s'", job->tag);
	*out = fail(job, &err, NULL);
	return true;
}

/*
 * The value of a label the Dockerfile's LABEL line sets (key="value",
 * recipe.c), or NULL: what a pulled image must carry to be this recipe.
 */
static char *dockerfile_label(const char *df, const char *key)
{
	cleanup_free char *pat = xasprintf(" %s=\"", key);
	const char *line = strstr(df, "\nLABEL ");
	const char *v, *end, *eol;

	if (!line)
		return NULL;
	eol = strchr(line + 1, '\n');
	v = strstr(line, pat);
	if (!v || (eol && v > eol))
		return NULL;
	v += strlen(pat);
	end = strchr(v, '"');
	return end ? xstrndup(v, (size_t)(end - v)) : NULL;
}

/* Does img carry the recipe's labels?  NULL if so, else why not. */
static char *labels_mismatch(const struct prewarm_job *job,
			     const struct engine_image *img)
{
	static const char *const keys[] = {"io.sbxcat.runtime",
					   "io.sbxcat.recipe"};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		cleanup_free char *want =
		    dockerfile_label(job->dockerfile, keys[i]);
		const char *got = engine_image_label(img, keys[i]);

		if (want && (!got || strcmp(got, want) != 0)) {
			struct strbuf sb = STRBUF_INIT;
			if (got)
				text_add_escaped(&sb, got, strlen(got));
			return xasprintf("its label %s is %s%s%s, the recipe's "
					 "is '%s'",
					 keys[i], got ? "'" : "",
					 got ? strbuf_str(&sb) : "missing",
					 got ? "'" : "", want);
		}
	}
	return NULL;
}

/*
 * A transfer with a registry failed: the runtime fails, naming the
 * registry.  The registry is what serves the runtime here, so its
 * failures are "unavailable" (exit 3), as the engine's are; the engine's
 * own refusal of the request keeps its kind.
 */
static enum prewarm_state registry_fail(struct prewarm_job *job,
					struct sbx_error **err,
					const struct engine_stream *s)
{
	if ((*err)->errnum != ECANCELED && (*err)->kind == SBX_E_REFUSED)
		(*err)->kind = SBX_E_UNAVAILABLE;
	if ((*err)->kind == SBX_E_TIMEOUT)
		sbx_error_hint(*err, "is the registry answering?");
	return fail(job, err, s);
}

/* Untag ref, a registry's name for an image that has its own tags. */
static void untag(struct engine *e, const char *ref)
{
	struct sbx_error *err = NULL;
	bool conflict = false;

	/* Only a name goes: the image keeps its content tag. */
	if (engine_image_remove(e, ref, &conflict, &err) < 0)
		sbx_error_free(&err);
}

/*
 * Pull the content tag from p->registry and give the image its local
 * name (content tag and claim), as if built here.  *absent when the
 * registry does not have it: nothing is done, and the caller builds.
 */
static enum prewarm_state pull_registry(struct prewarm *p, struct engine *e,
					struct prewarm_job *job, bool *absent)
{
	enum prewarm_state out = PREWARM_PULLED;
	struct sbx_error *err = NULL;
	struct engine_xfer x = {p->auth, p->idle_ms};
	cleanup_free char *remote = xasprintf("%s/%s", p->registry, job->tag);
	cleanup_free char *why = NULL;
	struct engine_stream s;
	struct stream_ctx sc = {p, job};
	struct engine_image img = {0};
	bool present = false;

	*absent = false;
	set_state(p, job, PREWARM_PULLING);
	engine_stream_init(&s);
	s.on_line = on_line;
	s.ctx = &sc;
	if (engine_image_pull(e, remote, &x, &s, &err) < 0) {
		if (err->http == 404) {
			*absent = true;
			note(job, xasprintf("not in %s, built (%s)",
					    p->registry, err->msg));
			sbx_error_free(&err);
			goto out;
		}
		sbx_error_wrap(&err, "cannot pull '%s' from the registry %s",
			       remote, p->registry);
		out = registry_fail(job, &err, &s);
		goto out;
	}
	/* Trust the engine's image, not the stream: the tag must be there,
	 * and be this recipe (the tag is a hash of it; the labels say so). */
	if (engine_image_inspect(e, remote, &present, &img, &err) < 0) {
		sbx_error_wrap(&err, "cannot inspect '%s' after pulling it",
			       remote);
		out = fail(job, &err, NULL);
		goto out;
	}
	if (!present || (why = labels_mismatch(job, &img))) {
		out = PREWARM_FAILED;
		job->error_kind = SBX_E_REFUSED;
		job->error = present ? xasprintf("the image '%s' from the "
						 "registry %s is not this "
						 "runtime's recipe: %s",
						 remote, p->registry, why)
				     : xasprintf("the engine reported the pull "
						 "done but has no image '%s'",
						 remote);
		untag(e, remote);
		goto out;
	}
	if (engine_image_tag(e, remote, job->tag, &err) < 0 ||
	    engine_image_tag(e, remote, job->claim, &err) < 0) {
		sbx_error_wrap(&err, "cannot tag '%s' as '%s'", remote,
			       job->tag);
		out = fail(job, &err, NULL);
		untag(e, remote);
		goto out;
	}
	untag(e, remote);
	note(job, xasprintf("pulled from %s", p->registry));
	if (s.bad_lines)
		note(job,
		     xasprintf("%llu line%s of the engine's progress could "
			       "not be read",
			       s.bad_lines, s.bad_lines == 1 ? "" : "s"));
	sweep(p, e, job);
out:
	engine_image_release(&img);
	engine_stream_release(&s);
	return out;
}

/*
 * Push a present built runtime to p->push as PUSH/sbxcat/ALIAS:HASH.
 * The registry is asked first: a content tag it has is this recipe by
 * construction, so it is left as it is (--force pushes anyway).  After
 * the push the registry is asked again: trust what it has, not what the
 * stream said.
 */
static enum prewarm_state push(struct prewarm *p, struct engine *e,
			       struct prewarm_job *job)
{
	enum prewarm_state out = PREWARM_PUSHED;
	struct sbx_error *err = NULL;
	struct engine_xfer x = {p->auth, p->idle_ms};
	cleanup_free char *remote = xasprintf("%s/%s", p->push, job->tag);
	struct engine_stream s;
	struct stream_ctx sc = {p, job};
	bool present = false, tagged = false;

	set_state(p, job, PREWARM_PUSHING);
	engine_stream_init(&s);
	s.on_line = on_line;
	s.ctx = &sc;
	if (!p->force) {
		if (engine_distribution_inspect(e, remote, &x, &present, NULL,
						&err) < 0) {
			sbx_error_wrap(&err,
				       "cannot ask the registry %s for '%s'",
				       p->push, remote);
			out = registry_fail(job, &err, NULL);
			goto out;
		}
		if (present) {
			note(job,
			     xasprintf("already in %s as %s", p->push, remote));
			out = PREWARM_PRESENT;
			goto out;
		}
	}
	if (engine_image_tag(e, job->tag, remote, &err) < 0) {
		sbx_error_wrap(&err, "cannot tag '%s' as '%s'", job->tag,
			       remote);
		out = fail(job, &err, NULL);
		goto out;
	}
	tagged = true;
	if (engine_image_push(e, remote, &x, &s, &err) < 0) {
		sbx_error_wrap(&err, "cannot push '%s' to the registry %s",
			       remote, p->push);
		out = registry_fail(job, &err, &s);
		goto out;
	}
	if (engine_distribution_inspect(e, remote, &x, &present, NULL, &err) <
	    0) {
		sbx_error_wrap(&err,
			       "cannot ask the registry %s for '%s' after "
			       "pushing it",
			       p->push, remote);
		out = registry_fail(job, &err, NULL);
		goto out;
	}
	if (!present) {
		out = PREWARM_FAILED;
		job->error_kind = SBX_E_UNAVAILABLE;
		job->error = xasprintf("the engine reported the push done, but "
				       "the registry %s has no '%s'%s",
				       p->push, remote,
				       s.bad_lines ? " (lines of the engine's "
						     "reply could not be read)"
						   : "");
		goto out;
	}
	note(job, xasprintf("pushed to %s as %s", p->push, remote));
out:
	if (tagged)
		untag(e, remote);
	engine_stream_release(&s);
	return out;
}

static enum prewarm_state run_job(struct prewarm *p, struct engine *e,
				  struct prewarm_job *job)
{
	enum prewarm_state out = PREWARM_CACHED;
	struct sbx_error *err = NULL;
	struct engine_image img = {0};
	bool present = false;

	if (engine_image_inspect(e, job->tag, &present, &img, &err) < 0) {
		sbx_error_wrap(&err, "cannot inspect '%s'", job->tag);
		return fail(job, &err, NULL);
	}
	if (present && !p->force && job->dockerfile && !claim(p, e, job, &out))
		present = false;
	if (present && !p->force) {
		/* Retry what an earlier run had to keep, once unused. */
		if (job->dockerfile && out == PREWARM_CACHED)
			sweep(p, e, job);
	} else if (job->dockerfile) {
		bool absent = true;
		/* --force builds: it is how a host refreshes a recipe. */
		if (p->registry && !p->force && !present)
			out = pull_registry(p, e, job, &absent);
		if (absent)
			out = build(p, e, job, present ? img.id : NULL);
	} else {
		out = pull(p, e, job);
	}
	engine_image_release(&img);
	if (p->push && job->dockerfile &&
	    (out == PREWARM_CACHED || out == PREWARM_BUILT)) {
		if (out == PREWARM_BUILT)
			note(job, xstrdup("built here"));
		out = push(p, e, job);
	}
	return out;
}

static bool cancelled(const struct prewarm *p)
{
	return p->cancel && atomic_load(p->cancel);
}

static void *worker(void *arg)
{
	struct prewarm *p = arg;
	struct engine e;

	engine_copy(&e, p->engine);
	e.stream_ms = p->timeout_ms;
	e.cancel = p->cancel;
	for (;;) {
		struct prewarm_job *job;
		enum prewarm_state out = PREWARM_CANCELLED;
		bool cancel;

		pthread_mutex_lock(&p->lock);
		if (p->next >= p->n) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		job = &p->jobs[p->next++];
		cancel = cancelled(p);
		job->started_ms = clock_now_ms();
		job->state = cancel ? PREWARM_CANCELLED : PREWARM_CHECKING;
		if (cancel)
			job->error = xstrdup("not started");
		else
			queue_event(p, job);
		pthread_mutex_unlock(&p->lock);

		if (!cancel)
			out = run_job(p, &e, job);

		pthread_mutex_lock(&p->lock);
		job->state = out;
		job->ms = clock_now_ms() - job->started_ms;
		p->finished++;
		queue_event(p, job);
		pthread_mutex_unlock(&p->lock);
	}
	engine_release(&e);
	return NULL;
}

/* Under the lock: copy what notify may read. */
static size_t take_snapshot(struct prewarm *p, struct prewarm_snap *snap,
			    struct prewarm_event *events,
			    unsigned long long *lost)
{
	size_t n = p->nevents;

	for (size_t i = 0; i < p->n; i++) {
		const struct prewarm_job *j = &p->jobs[i];
		snap[i].state = j->state;
		snap[i].step = j->step;
		snap[i].nsteps = j->nsteps;
		memcpy(snap[i].step_text, j->step_text, sizeof(j->step_text));
		memcpy(snap[i].current, j->current, sizeof(j->current));
		snap[i].started_ms = j->started_ms;
		snap[i].ms = j->ms;
	}
	memcpy(events, p->events, n * sizeof(*events));
	p->nevents = 0;
	*lost = p->events_lost;
	p->events_lost = 0;
	return n;
}

void prewarm_run(struct prewarm *p)
{
	unsigned nthreads = p->concurrency ? p->concurrency : 1;
	struct prewarm_snap *snap = xcalloc(p->n ? p->n : 1, sizeof(*snap));
	struct prewarm_event *events =
	    xcalloc(PREWARM_EVENTS_MAX, sizeof(*events));
	pthread_t *tids;
	unsigned started = 0;
	bool more = true;

	if (nthreads > p->n)
		nthreads = (unsigned)p->n;
	known_tags(p);
	tids = xcalloc(nthreads ? nthreads : 1, sizeof(*tids));
	for (unsigned i = 0; i < nthreads; i++) {
		if (pthread_create(&tids[i], NULL, worker, p) != 0)
			break;
		started++;
	}
	/* No thread at all (resource limits): do the work here, in order. */
	if (started == 0 && p->n > 0)
		worker(p);

	/* The display's loop: the lock is never held while notify runs. */
	pthread_mutex_lock(&p->lock);
	while (more) {
		size_t nev;
		unsigned long long lost;

		if (p->nevents == 0 && p->finished < p->n) {
			if (p->tick_ms > 0) {
				struct timespec ts;
				clock_gettime(CLOCK_MONOTONIC, &ts);
				ts.tv_nsec += (p->tick_ms % 1000) * 1000000L;
				ts.tv_sec += p->tick_ms / 1000 +
					     ts.tv_nsec / 1000000000L;
				ts.tv_nsec %= 1000000000L;
				pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			} else {
				pthread_cond_wait(&p->cond, &p->lock);
			}
		}
		more = p->finished < p->n;
		nev = take_snapshot(p, snap, events, &lost);
		pthread_mutex_unlock(&p->lock);
		if (p->notify)
			p->notify(p->ctx, p, snap, events, nev, lost);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	free(snap);
	free(events);
}

/*
 * prewarm.c - the scheduling of builds and pulls (see prewarm.h).
 *
 * Presence is decided by the content tag alone: the tag is a hash of the
 * Dockerfile, and the engine applies it only when every step succeeded,
 * so a present tag is a complete image of exactly this recipe and there is
 * nothing to send.  That is also why a cancelled or failed build cannot
 * leave a half-made image under the tag.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"
#include "error.h"
#include "prewarm.h"
#include "recipe.h"
#include "tar.h"
#include "util.h"

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
	case PREWARM_CACHED:
		return "cached";
	case PREWARM_PULLED:
		return "pulled";
	case PREWARM_BUILT:
		return "built";
	case PREWARM_FAILED:
		return "failed";
	case PREWARM_CANCELLED:
		return "cancelled";
	}
	return "?";
}

void prewarm_init(struct prewarm *p)
{
	memset(p, 0, sizeof(*p));
	p->concurrency = 1;
	p->timeout_ms = PREWARM_TIMEOUT_SECONDS * 1000L;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
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
}

static void job_release(struct prewarm_job *job)
{
	free(job->tag);
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

/* Under the lock: change what the display sees, and tell it. */
static void set_state(struct prewarm *p, struct prewarm_job *job,
		      enum prewarm_state s)
{
	pthread_mutex_lock(&p->lock);
	job->state = s;
	if (p->notify)
		p->notify(p->ctx, p, job);
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
	if (sc->p->notify)
		sc->p->notify(sc->p->ctx, sc->p, sc->job);
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
	else
		job->error = xstrdup((*err)->msg);
	job->error_status = (*err)->status;
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

/*
 * Remove the other tags of this runtime's repository: an older recipe's
 * image, superseded by the current tag.  Containers reference an image by
 * ID, and removing a tag that another tag shares only untags it, whoever
 * uses it: so the containers are asked first, and the engine's own refusal
 * (409) is the backstop for a container made in between.
 */
static void sweep(struct prewarm *p, struct engine *e, struct prewarm_job *job)
{
	struct sbx_error *err = NULL;
	cleanup_free char *repo = repo_of(job->tag);
	const char *repos[1] = {repo};
	char **tags = NULL;
	size_t ntags = 0;

	if (p->tags_known) {
		size_t alloc = 0;
		for (size_t i = 0; i < p->ntags; i++) {
			if (strncmp(p->tags[i], repo, strlen(repo)) != 0 ||
			    p->tags[i][strlen(repo)] != ':')
				continue;
			ALLOC_GROW(tags, ntags + 1, alloc);
			tags[ntags++] = xstrdup(p->tags[i]);
		}
	} else if (engine_image_tags(e, repos, 1, &tags, &ntags, &err) < 0) {
		keep(job, repo, first_line(&err));
		return;
	}
	for (size_t i = 0; i < ntags; i++) {
		char **users = NULL;
		size_t nusers = 0;
		bool conflict = false;

		if (strcmp(tags[i], job->tag) == 0)
			continue;
		if (engine_containers_using(e, tags[i], &users, &nusers, &err) <
		    0) {
			keep(job, tags[i], first_line(&err));
			continue;
		}
		if (nusers) {
			keep(job, tags[i],
			     nusers == 1
				 ? xasprintf("used by container '%s'", users[0])
				 : xasprintf("used by container '%s' and %zu "
					     "more",
					     users[0], nusers - 1));
		} else if (engine_image_remove(e, tags[i], &conflict, &err) <
			   0) {
			keep(job, tags[i], first_line(&err));
		} else if (conflict) {
			keep(
			    job, tags[i],
			    xstrdup("the engine refused: a container uses it"));
		} else {
			ALLOC_GROW(job->removed, job->nremoved + 1,
				   job->aremoved);
			job->removed[job->nremoved++] = xstrdup(tags[i]);
		}
		strv_free(users, nusers);
	}
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
	if (engine_image_pull(e, job->tag, &s, &err) < 0) {
		sbx_error_wrap(&err, "cannot pull '%s'", job->tag);
		out = fail(job, &err, &s);
	}
	engine_stream_release(&s);
	return out;
}

static enum prewarm_state build(struct prewarm *p, struct engine *e,
				struct prewarm_job *job, const char *old_id)
{
	enum prewarm_state out = PREWARM_BUILT;
	struct sbx_error *err = NULL;
	struct engine_stream s;
	struct stream_ctx sc = {p, job};
	struct tar ctx;
	cleanup_free char *id = NULL;
	bool present = false;

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
	if (engine_build(e, &ctx, job->tag, p->force, &s, &err) < 0) {
		/* A step's own failure speaks for itself; the rest get context.
		 */
		if (!s.error)
			sbx_error_wrap(&err, "cannot build '%s'", job->tag);
		out = fail(job, &err, &s);
		goto out;
	}
	/* Trust the image list, not the stream: the tag must be there. */
	if (engine_image_inspect(e, job->tag, &present, &id, &err) < 0) {
		sbx_error_wrap(&err, "cannot inspect '%s' after building it",
			       job->tag);
		out = fail(job, &err, NULL);
		goto out;
	}
	if (!present) {
		out = PREWARM_FAILED;
		job->error_status = SBX_EXIT_FAIL;
		job->error = xasprintf("the engine reported success but has no "
				       "image '%s'",
				       job->tag);
		goto out;
	}
	/* --force rebuilt a present tag: its old image is now untagged. */
	if (old_id && id && strcmp(old_id, id) != 0) {
		char **users = NULL;
		size_t nusers = 0;
		bool conflict = false;
		if (engine_containers_using(e, old_id, &users, &nusers, &err) ==
			0 &&
		    nusers == 0)
			engine_image_remove(e, old_id, &conflict, &err);
		sbx_error_free(&err);
		strv_free(users, nusers);
	}
	sweep(p, e, job);
out:
	engine_stream_release(&s);
	tar_release(&ctx);
	return out;
}

static enum prewarm_state run_job(struct prewarm *p, struct engine *e,
				  struct prewarm_job *job)
{
	struct sbx_error *err = NULL;
	cleanup_free char *old_id = NULL;
	bool present = false;

	if (engine_image_inspect(e, job->tag, &present, &old_id, &err) < 0) {
		sbx_error_wrap(&err, "cannot inspect '%s'", job->tag);
		return fail(job, &err, NULL);
	}
	if (present && !p->force) {
		/* Retry what an earlier run had to keep, once unused. */
		if (job->dockerfile)
			sweep(p, e, job);
		return PREWARM_CACHED;
	}
	if (job->dockerfile)
		return build(p, e, job, present ? old_id : NULL);
	return pull(p, e, job);
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
		cancel = p->cancel && *p->cancel;
		job->started_ms = now_ms();
		job->state = cancel ? PREWARM_CANCELLED : PREWARM_CHECKING;
		if (cancel)
			job->error = xstrdup("not started");
		if (p->notify && !cancel)
			p->notify(p->ctx, p, job);
		pthread_mutex_unlock(&p->lock);

		if (!cancel)
			out = run_job(p, &e, job);

		pthread_mutex_lock(&p->lock);
		job->state = out;
		job->seconds = (double)(now_ms() - job->started_ms) / 1000.0;
		p->finished++;
		if (p->notify)
			p->notify(p->ctx, p, job);
		pthread_cond_signal(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
	engine_release(&e);
	return NULL;
}

void prewarm_run(struct prewarm *p)
{
	unsigned nthreads = p->concurrency ? p->concurrency : 1;
	pthread_t *tids;
	unsigned started = 0;

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

	pthread_mutex_lock(&p->lock);
	while (p->finished < p->n) {
		if (p->tick_ms > 0) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (p->tick_ms % 1000) * 1000000L;
			ts.tv_sec +=
			    p->tick_ms / 1000 + ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			if (p->notify)
				p->notify(p->ctx, p, NULL);
		} else {
			pthread_cond_wait(&p->cond, &p->lock);
		}
	}
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
}

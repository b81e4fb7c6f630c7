/*
 * svc.c - what every operation shares (svc.h): the service's set-up,
 * warnings, sinks.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit-writer.h"
#include "audit/audit.h"
#include "basic/clock.h"
#include "basic/util.h"
#include "engine/engine.h"
#include "session/session.h"
#include "svc/svc.h"

void svc_init(struct svc *s, const struct sbx_env *env)
{
	svc_config_load(&s->cfg, env);
	s->writer = NULL;
	s->pool = NULL;
	s->engines = NULL;
}

void svc_release(struct svc *s)
{
	svc_config_release(&s->cfg);
}

const char *svc_cancel_why(int value)
{
	switch (value) {
	case SVC_CANCEL_GONE:
		return "the client went away";
	case SVC_CANCEL_STOP:
		return "stopped by request";
	case SVC_CANCEL_SHUTDOWN:
		return "the service stopped";
	default:
		return "a signal";
	}
}

void svc_warn(const struct svc_call *call, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (!call || !call->warn)
		return;
	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	call->warn(call->warn_arg, msg);
	free(msg);
}

int svc_sink_write(const struct svc_sink *s, const void *buf, size_t len,
		   struct sbx_error **err)
{
	const char *p = buf;

	if (s->write)
		return s->write(s->arg, buf, len, err);
	while (len) {
		ssize_t n = write(s->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "cannot write the output");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int svc_root_open(const struct svc *s, const struct svc_call *call,
		  struct session_root *root, struct sbx_error **err)
{
	const struct svc_config *c = &s->cfg;

	root->path = NULL;
	root->fd = root->lock_fd = -1;
	if (svc_config_check(c->recipe_err, err) < 0 ||
	    svc_config_check(c->session_err, err) < 0 ||
	    svc_config_check(c->deployment_err, err) < 0)
		return -1;
	if (session_root_open(root, c->session.root, err) < 0)
		return -1;
	root->cancel = call ? call->cancel : NULL;
	return 0;
}

struct svc_engines {
	pthread_mutex_t lock;
	struct engine *v;
	size_t n, max;
};

void svc_engines_start(struct svc *s, size_t max)
{
	struct svc_engines *p = xcalloc(1, sizeof(*p));

	pthread_mutex_init(&p->lock, NULL);
	p->v = xcalloc(max ? max : 1, sizeof(*p->v));
	p->max = max ? max : 1;
	s->engines = p;
}

void svc_engines_stop(struct svc *s)
{
	struct svc_engines *p = s->engines;

	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		engine_release(&p->v[i]);
	free(p->v);
	pthread_mutex_destroy(&p->lock);
	free(p);
	s->engines = NULL;
}

/* A kept handle into e: true when there was one. */
static bool engine_take(const struct svc *s, struct engine *e)
{
	struct svc_engines *p = s->engines;
	bool got = false;

	if (!p)
		return false;
	pthread_mutex_lock(&p->lock);
	if (p->n) {
		*e = p->v[--p->n];
		got = true;
	}
	pthread_mutex_unlock(&p->lock);
	return got;
}

void svc_engine_close(const struct svc *s, struct engine *e)
{
	struct svc_engines *p = s->engines;
	bool kept = false;

	/* Only a handle that negotiated (it answered) is worth keeping. */
	if (p && e->api[0]) {
		pthread_mutex_lock(&p->lock);
		if (p->n < p->max) {
			e->cancel = NULL;
			p->v[p->n++] = *e;
			kept = true;
		}
		pthread_mutex_unlock(&p->lock);
	}
	if (!kept)
		engine_release(e);
	memset(e, 0, sizeof(*e));
	e->trace_fd = -1;
}

int svc_engine_open(const struct svc *s, const struct svc_call *call,
		    struct engine *e, struct sbx_error **err)
{
	if (svc_config_check(s->cfg.engine_err, err) < 0)
		return -1;
	if (engine_take(s, e)) {
		e->cancel = call ? call->cancel : NULL;
		return 0;
	}
	memset(e, 0, sizeof(*e));
	e->trace_fd = -1;
	if (svc_config_check(s->cfg.engine_err, err) < 0 ||
	    engine_init(e, &s->cfg.engine, NULL, err) < 0)
		return -1;
	e->cancel = call ? call->cancel : NULL;
	return engine_negotiate(e, NULL, err);
}

int svc_key_secret_load(struct svc *s, struct sbx_error **err)
{
	struct session_root root = SESSION_ROOT_INIT;
	int rc = svc_root_open(s, NULL, &root, err);

	if (rc == 0)
		rc = session_secret_load(&s->cfg.session, &root, err);
	session_root_close(&root);
	return rc;
}

int svc_audit_open(const struct svc *s, const struct svc_call *call,
		   struct audit **a, struct sbx_error **err)
{
	const char *agent = call ? call->agent : NULL;
	const char *run = call ? call->run : NULL;

	/* The call's ids first, then the switch (SBXCAT_AUDIT): the order
	 * audit_open always had. */
	if ((s->writer ? audit_open_writer(a, s->writer, agent, run, err)
		       : audit_open(a, &s->cfg.audit, agent, run, err)) < 0)
		return -1;
	if (svc_config_check(s->cfg.audit_err, err) < 0) {
		audit_close(*a);
		*a = NULL;
		return -1;
	}
	return 0;
}

void svc_audit_close(const struct svc_call *call, struct audit *a)
{
	struct sbx_error *w = NULL;

	if (!a)
		return;
	if (audit_warning(a, &w) < 0) {
		svc_warn(call, "%s", w->msg);
		sbx_error_free(&w);
	}
	audit_close(a);
}

int svc_id_check(const char *what, const char *id, struct sbx_error **err)
{
	return audit_id_check(what, id, err);
}

json_t *svc_time_json(long long t)
{
	char buf[32];

	if (t <= 0)
		return json_null();
	clock_format_time(buf, t);
	return json_string(buf);
}

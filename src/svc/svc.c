/*
 * svc.c - what every operation shares (svc.h): the service's set-up,
 * warnings, sinks.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/util.h"
#include "svc/svc.h"

void svc_init(struct svc *s, const struct sbx_env *env)
{
	svc_config_load(&s->cfg, env);
}

void svc_release(struct svc *s)
{
	svc_config_release(&s->cfg);
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

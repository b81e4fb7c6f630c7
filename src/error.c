/*
 * error.c - construction and wrapping of struct sbx_error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"

int sbx_error_set(struct sbx_error **err, int status, int errnum,
		  const char *fmt, ...)
{
	va_list ap;
	char *msg;
	struct sbx_error *e;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	if (errnum) {
		char *full = xasprintf("%s: %s", msg, strerror(errnum));
		free(msg);
		msg = full;
	}
	if (!err) {
		free(msg);
		return -1;
	}
	if (*err)
		sbx_error_free(err);
	e = xcalloc(1, sizeof(*e));
	e->status = status;
	e->errnum = errnum;
	e->msg = msg;
	*err = e;
	return -1;
}

int sbx_error_wrap(struct sbx_error **err, const char *fmt, ...)
{
	va_list ap;
	char *ctx, *full;

	if (!err || !*err)
		return -1;
	va_start(ap, fmt);
	ctx = xvasprintf(fmt, ap);
	va_end(ap);
	full = xasprintf("%s: %s", ctx, (*err)->msg);
	free(ctx);
	free((*err)->msg);
	(*err)->msg = full;
	return -1;
}

void sbx_error_hint(struct sbx_error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	free(err->hint);
	va_start(ap, fmt);
	err->hint = xvasprintf(fmt, ap);
	va_end(ap);
}

void sbx_error_free(struct sbx_error **err)
{
	if (!err || !*err)
		return;
	free((*err)->hint);
	free((*err)->msg);
	free(*err);
	*err = NULL;
}

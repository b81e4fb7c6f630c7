/*
 * error.c - construction and wrapping of struct sbx_error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/alloc.h"
#include "basic/error.h"

int sbx_error_set(struct sbx_error **err, enum sbx_kind kind, int errnum,
		  const char *fmt, ...)
{
	va_list ap;
	char *msg;
	struct sbx_error *e;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	if (errnum) {
		char buf[128];
		/* strerror_r, not strerror: its buffer is the caller's. */
		char *full = xasprintf("%s: %s", msg,
				       strerror_r(errnum, buf, sizeof(buf)));
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
	e->kind = kind;
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
	sbx_error_free(&(*err)->prev);
	free((*err)->hint);
	free((*err)->msg);
	free(*err);
	*err = NULL;
}

void sbx_error_chain(struct sbx_error **later, struct sbx_error **earlier)
{
	struct sbx_error **end;

	if (!later || !*later || !earlier || !*earlier)
		return;
	for (end = &(*later)->prev; *end; end = &(*end)->prev)
		;
	*end = *earlier;
	*earlier = NULL;
}

const char *sbx_kind_name(enum sbx_kind kind)
{
	static const char *const names[] = {
	    [SBX_E_INTERNAL] = "internal",
	    [SBX_E_NOT_FOUND] = "not found",
	    [SBX_E_CONFLICT] = "conflict",
	    [SBX_E_REFUSED] = "refused",
	    [SBX_E_BAD_DATA] = "bad data",
	    [SBX_E_INVALID] = "invalid",
	    [SBX_E_UNAVAILABLE] = "unavailable",
	    [SBX_E_TIMEOUT] = "timed out",
	    [SBX_E_CANCELLED] = "cancelled",
	};

	if ((unsigned)kind >= sizeof(names) / sizeof(names[0]))
		return "internal";
	return names[kind];
}

bool sbx_kind_refusal(enum sbx_kind kind)
{
	switch (kind) {
	case SBX_E_NOT_FOUND:
	case SBX_E_CONFLICT:
	case SBX_E_REFUSED:
	case SBX_E_BAD_DATA:
	case SBX_E_INVALID:
		return true;
	default:
		return false;
	}
}

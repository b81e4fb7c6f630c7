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

const char *sbx_reason_text(enum sbx_reason why)
{
	/* The audit's detail column says these: they are the words rows
	 * written before the constants existed say. */
	static const char *const texts[SBX_R_COUNT] = {
	    [SBX_R_NOT_FOUND] = "not found",
	    [SBX_R_A_DIRECTORY] = "a directory",
	    [SBX_R_NOT_A_DIRECTORY] = "not a directory",
	    [SBX_R_NOT_REGULAR] = "not a regular file",
	    [SBX_R_OUTSIDE] = "outside the workspace",
	    [SBX_R_OVER_READ_LIMIT] = "over the read limit",
	    [SBX_R_PAST_END] = "past the end",
	    [SBX_R_OLD_NOT_FOUND] = "old text not found",
	    [SBX_R_OLD_NOT_UNIQUE] = "old text not unique",
	    [SBX_R_DIR_NOT_EMPTY] = "directory not empty",
	    [SBX_R_TENANT_QUOTA] = "tenant quota",
	    [SBX_R_HOST_QUOTA] = "host quota",
	    [SBX_R_OPEN_QUOTA] = "open quota",
	    [SBX_R_NOT_RUNNING] = "not running",
	    [SBX_R_GONE] = "container gone",
	    [SBX_R_RUN_RUNNING] = "run running",
	    [SBX_R_DURABILITY_DIFFERS] = "durability differs",
	    [SBX_R_BUDGET_DIFFERS] = "disk budget differs",
	    [SBX_R_BAD_LABELS] = "bad labels",
	    [SBX_R_OVER_CEILING] = "over the ceiling",
	    [SBX_R_BAD_CWD] = "bad working directory",
	    [SBX_R_BAD_ENV] = "bad environment",
	    [SBX_R_KEPT_BUDGETS] = "kept budgets",
	};

	if ((unsigned)why >= SBX_R_COUNT)
		return NULL;
	return texts[why];
}

void sbx_error_why(struct sbx_error *err, enum sbx_reason why,
		   unsigned long long n, unsigned long long max)
{
	if (!err)
		return;
	err->why = why;
	err->reason = sbx_reason_text(why);
	err->n = n;
	err->max = max;
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

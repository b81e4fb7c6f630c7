/*
 * tap.c - TAP output for the C tests (see tap.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "tap.h"

static int count, planned = -1;

void plan(int n)
{
	planned = n;
	printf("1..%d\n", n);
}

static bool vresult(bool cond, const char *fmt, va_list ap)
{
	count++;
	printf("%sok %d - ", cond ? "" : "not ", count);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vresult(cond, fmt, ap);
	va_end(ap);
	return cond;
}

/* Print a multi-line value as TAP comment lines. */
static void diag_value(const char *label, const char *v)
{
	printf("#   %s:", label);
	if (!v) {
		printf(" (null)\n");
		return;
	}
	printf("\n");
	for (const char *p = v; *p;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);
		printf("#     |%.*s|\n", n, p);
		p += n + (nl ? 1 : 0);
	}
}

bool is_int(long long got, long long want, const char *fmt, ...)
{
	va_list ap;
	bool cond = got == want;
	va_start(ap, fmt);
	vresult(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		printf("#   got: %lld\n#   expected: %lld\n", got, want);
	return cond;
}

bool is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list ap;
	bool cond = (got && want) ? strcmp(got, want) == 0 : got == want;
	va_start(ap, fmt);
	vresult(cond, fmt, ap);
	va_end(ap);
	if (!cond) {
		diag_value("got", got);
		diag_value("expected", want);
	}
	return cond;
}

void skip(const char *why, const char *fmt, ...)
{
	va_list ap;
	count++;
	printf("ok %d - ", count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", why);
}

void diag(const char *fmt, ...)
{
	va_list ap;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void bail_out(const char *fmt, ...)
{
	va_list ap;
	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(1);
}

void skip_all(const char *why)
{
	if (count)
		bail_out("cannot go on: %s", why);
	printf("1..0 # SKIP %s\n", why);
	fflush(stdout);
	exit(0);
}

int done_testing(void)
{
	if (planned < 0)
		printf("1..%d\n", count);
	fflush(stdout);
	return 0;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

uint32_t tap_rand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

char *tap_path(const char *dir, const char *fmt, ...)
{
	va_list ap;
	char *rel, *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&rel, fmt, ap);
	va_end(ap);
	if (n < 0 || asprintf(&p, "%s/%s", dir, rel) < 0)
		bail_out("out of memory");
	free(rel);
	return p;
}

int tap_status(const struct sbx_error *err)
{
	switch (err->kind) {
	case SBX_E_NOT_FOUND:
	case SBX_E_CONFLICT:
	case SBX_E_REFUSED:
	case SBX_E_BAD_DATA:
		return 1;
	case SBX_E_INVALID:
		return 2;
	case SBX_E_CANCELLED:
		return 130;
	default:
		return 3;
	}
}

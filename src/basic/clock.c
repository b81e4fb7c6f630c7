/*
 * clock.c - the monotonic clock of clock.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/clock.h"

long long clock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int clock_parse_time(const char *s, long long *t)
{
	struct tm tm = {0}, back;
	int y, mo, d, h, mi, se;
	const char *p;
	time_t tt;

	if (*s >= '0' && *s <= '9' && strspn(s, "0123456789") == strlen(s)) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno || v > (1ull << 40))
			return -1;
		*t = (long long)v;
		return 0;
	}
	if (strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' ||
	    digits(s + 5, 2, &mo) || s[7] != '-' || digits(s + 8, 2, &d) ||
	    (s[10] != 'T' && s[10] != 't') || digits(s + 11, 2, &h) ||
	    s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
	    digits(s + 17, 2, &se))
		return -1;
	p = s + 19;
	if (*p == '.') {
		size_t n = strspn(p + 1, "0123456789");
		if (n == 0)
			return -1;
		p += 1 + n;
	}
	if (strcmp(p, "Z") != 0 && strcmp(p, "z") != 0 &&
	    strcmp(p, "+00:00") != 0)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	tt = timegm(&tm);
	/* timegm normalises Feb 30 into March: a date that does not exist
	 * does not come back as itself. */
	if (!gmtime_r(&tt, &back) || back.tm_year != y - 1900 ||
	    back.tm_mon != mo - 1 || back.tm_mday != d || back.tm_hour != h ||
	    back.tm_min != mi || back.tm_sec != se)
		return -1;
	*t = (long long)tt;
	return 0;
}

void clock_format_time(char out[32], long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm))
		snprintf(out, 32, "-");
	else
		strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void clock_format_local(char out[40], long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	long off, a;
	size_t n;

	if (t <= 0 || !localtime_r(&tt, &tm)) {
		snprintf(out, 40, "-");
		return;
	}
	n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	off = tm.tm_gmtoff;
	a = off < 0 ? -off : off;
	n += (size_t)snprintf(out + n, 40 - n, "%c%02ld:%02ld",
			      off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
	if (a % 60)
		snprintf(out + n, 40 - n, ":%02ld", a % 60);
}

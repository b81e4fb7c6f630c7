/*
 * audit-time.c - the times of --since and --until (auditq.h,
 * auditq_parse_time): ISO 8601 dates and times, a time ago ("2h", "2h
 * ago", "3 days ago"), and days as people say them ("today",
 * "yesterday", "tuesday", "last tuesday"), in UTC or in the local zone.
 *
 * The local zone is libc's (TZ, else /etc/localtime): localtime_r's
 * tm_gmtoff says the offset at an instant, and a local time is turned
 * back into an instant by trying the offsets around it (local_to_utc),
 * not by mktime, whose tm_isdst guess picks either side of an autumn
 * hour.  So a local time the clocks passed twice is its first pass (for
 * --since, the inclusive reading), and one they skipped (the spring
 * hour) is the moment they jumped to, the first one at or after it.
 *
 * TIME + N UNIT and TIME - N UNIT move TIME (any of the above) by the
 * clock, or, for days and weeks in the local zone, by the calendar:
 * "tuesday + 1 day" is Wednesday's start however long Tuesday was.
 *
 * "N days ago" is N times 24 hours before now; "yesterday" is the
 * calendar day, which is 23 or 25 hours long across a change of
 * daylight saving time; a day the zone skipped whole (Apia's 2011-12-30)
 * starts where the next one does.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "audit/audit.h"
#include "audit/auditq.h"
#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"

#define TIME_FORMS                                                             \
	"use a date or time (2026-12-01, 2026-12-01T10:00, "                   \
	"2026-12-01T10:00:00Z, 2026-12-01T10:00:00.250+02:00; no zone is "     \
	"UTC, or local time with --local), a time ago (30s, 15m, 2h, 7d, "     \
	"2w, '2h ago', '3 days ago'), or a day (now, today, yesterday, "       \
	"tuesday, 'last tuesday'), each maybe + or - a time ('tuesday + 1 "    \
	"day')"

/* The value is named cut short (text_quote_short): a 10 MB argument
 * gives a one-line message, not a 40 MB one. */
__attribute__((format(printf, 3, 4))) static int
time_error(struct sbx_error **err, const char *s, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	char *q = text_quote_short(s);
	va_list ap;
	int ret;

	strbuf_addstr(&sb, q);
	free(q);
	strbuf_addstr(&sb, ": ");
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	ret = sbx_error_set(err, SBX_E_INVALID, 0, "%s; " TIME_FORMS,
			    strbuf_str(&sb));
	strbuf_release(&sb);
	return ret;
}

/* ---- the calendar ---- */

static bool leap(long y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int month_days(long y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30,
				   31, 31, 30, 31, 30, 31};

	return m == 2 && leap(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d and back (proleptic Gregorian; Howard
 * Hinnant's days_from_civil and civil_from_days). */
static long long days_from_civil(long y, int m, int d)
{
	long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return (long long)era * 146097 + doe - 719468;
}

static void civil_from_days(long long z, long *y, int *m, int *d)
{
	long long era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (long)(yoe + era * 400 + (*m <= 2));
}

/* ---- the local zone ---- */

/* The local zone's offset from UTC at instant t, in seconds. */
static bool offset_at(long long t, long *off)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm))
		return false;
	*off = tm.tm_gmtoff;
	return true;
}

/*
 * The instant whose local time is u (a local time as seconds counted as
 * if it were UTC): the first such instant when the clocks passed u twice,
 * the first instant at or after u when they skipped it.  Offsets change
 * far less often than once a day and are within a day of UTC, so the
 * offsets a day either side and at u are the only candidates.
 */
static bool local_to_utc(long long u, long long *out)
{
	long offs[3], off;
	long long lo, hi;
	bool found = false;

	if (!offset_at(u - 86400, &offs[0]) || !offset_at(u, &offs[1]) ||
	    !offset_at(u + 86400, &offs[2]))
		return false;
	for (int i = 0; i < 3; i++) {
		long long t = u - offs[i];

		if (offset_at(t, &off) && off == offs[i] &&
		    (!found || t < *out)) {
			*out = t;
			found = true;
		}
	}
	if (found)
		return true;
	/* Skipped: the first instant whose local time is at or after u,
	 * between one whose local time is before (u - a day + an offset
	 * under a day) and one whose is after. */
	lo = u - 86400;
	hi = u + 86400;
	while (hi - lo > 1) {
		long long mid = lo + (hi - lo) / 2;

		if (!offset_at(mid, &off))
			return false;
		if (mid + off >= u)
			hi = mid;
		else
			lo = mid;
	}
	*out = hi;
	return true;
}

/* The date (and weekday, 0 Sunday) of instant now_s, in the zone. */
static bool date_of(long long now_s, bool local, long *y, int *mo, int *d,
		    int *wday)
{
	long long days;

	if (local) {
		time_t tt = (time_t)now_s;
		struct tm tm;

		if (!localtime_r(&tt, &tm))
			return false;
		*y = tm.tm_year + 1900L;
		*mo = tm.tm_mon + 1;
		*d = tm.tm_mday;
		*wday = tm.tm_wday;
		return true;
	}
	days = now_s / 86400 - (now_s % 86400 < 0);
	civil_from_days(days, y, mo, d);
	*wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
	return true;
}

/* y-m-d h:mi:s (+frac us), in the zone, as Unix microseconds, and when
 * local the wall time asked for into *wall (local_to_utc's u: a shift
 * by days starts from it, not from the instant a skipped time became);
 * false when the local zone cannot say (*out untouched). */
static bool civil_to_us(long y, int mo, int d, int h, int mi, int sec,
			long long frac, bool local, long long *out,
			long long *wall)
{
	long long u = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
		      sec,
		  t = u;

	if (local && !local_to_utc(u, &t))
		return false;
	if (local)
		*wall = u;
	*out = t * 1000000 + frac;
	return true;
}

/* ---- ISO 8601 ---- */

/* Exactly n digits at *p, advancing it; else *bad (and 0).  Once *bad,
 * neither this nor expect() reads or moves. */
static int digits(const char **p, int n, bool *bad)
{
	int v = 0;

	for (int i = 0; i < n && !*bad; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			*bad = true;
		v = v * 10 + ((*p)[i] - '0');
	}
	if (*bad)
		return 0;
	*p += n;
	return v;
}

static void expect(const char **p, char c, bool *bad)
{
	if (!*bad && **p != c)
		*bad = true;
	else if (!*bad)
		(*p)++;
}

static int parse_iso(const char *s, const char *name, bool local,
		     long long *out_us, long long *wall, struct sbx_error **err)
{
	const char *p = s;
	long y;
	int mo, d, h = 0, mi = 0, sec = 0, zone = 0;
	bool bad = false, zoned = false;
	long long frac = 0, us;

	y = digits(&p, 4, &bad);
	expect(&p, '-', &bad);
	mo = digits(&p, 2, &bad);
	expect(&p, '-', &bad);
	d = digits(&p, 2, &bad);
	if (!bad && (*p == 'T' || *p == 't' || *p == ' ')) {
		p++;
		h = digits(&p, 2, &bad);
		expect(&p, ':', &bad);
		mi = digits(&p, 2, &bad);
		if (!bad && *p == ':') {
			p++;
			sec = digits(&p, 2, &bad);
			if (!bad && (*p == '.' || *p == ',')) {
				/* Up to nanoseconds, rounded up to the
				 * microsecond: created_at >= t and < t hold
				 * exactly when they hold for ceil(t), as
				 * created_at has whole microseconds. */
				int nd = 0;
				bool rest = false;

				for (p++; *p >= '0' && *p <= '9'; p++, nd++) {
					if (nd < 6)
						frac = frac * 10 + (*p - '0');
					else if (*p != '0')
						rest = true;
				}
				if (nd == 0 || nd > 9)
					goto bad;
				for (int i = nd; i < 6; i++)
					frac *= 10;
				frac += rest;
			}
		}
		if (!bad && (*p == 'Z' || *p == 'z')) {
			p++;
			zoned = true;
		} else if (!bad && (*p == '+' || *p == '-')) {
			int sign = *p == '-' ? -1 : 1, zh, zm = 0;

			p++;
			zh = digits(&p, 2, &bad);
			if (!bad && *p == ':')
				p++;
			if (!bad && (p[-1] == ':' || (*p >= '0' && *p <= '9')))
				zm = digits(&p, 2, &bad);
			if (!bad && (zh > 23 || zm > 59))
				return time_error(err, name,
						  "zone offset out of range");
			zone = sign * (zh * 60 + zm);
			zoned = true;
		}
	}
	if (bad || *p)
		goto bad;
	if (mo < 1 || mo > 12)
		return time_error(err, name, "month %d out of range", mo);
	if (d < 1 || d > month_days(y, mo))
		return time_error(
		    err, name, "day %d out of range for %04ld-%02d", d, y, mo);
	if (h > 23 || mi > 59 || sec > 59)
		return time_error(err, name, "time of day out of range");
	if (!civil_to_us(y, mo, d, h, mi, sec, frac, local && !zoned, &us,
			 wall))
		return time_error(err, name, "the local zone cannot say");
	us -= zone * 60000000LL;
	if (us <= AUDIT_US_MIN)
		return time_error(err, name, "before 1970");
	if (us > AUDIT_US_MAX) /* a zone or a fraction past 9999-12-31 */
		return time_error(err, name, "after 9999");
	*out_us = us;
	return 0;
bad:
	return time_error(err, name, "not a time");
}

/* ---- words ---- */

/* The words of s, split at runs of spaces: at most max, else 0. */
static size_t split(const char *s, const char *w[], size_t len[], size_t max)
{
	size_t n = 0;

	while (*s) {
		size_t k = strcspn(s, " ");

		if (n == max)
			return 0;
		w[n] = s;
		len[n++] = k;
		s += k;
		s += strspn(s, " ");
	}
	return n;
}

static bool word_is(const char *w, size_t len, const char *name)
{
	return len == strlen(name) && !strncasecmp(w, name, len);
}

/* The unit a word names, in seconds; 0 for none, -1 for a month or a
 * year (no fixed length).  A single letter is lower case only, as
 * before ("M" would be a month to some). */
static long long unit_of(const char *w, size_t len)
{
	static const struct {
		const char *names;
		long long s;
	} units[] = {
	    {" s sec secs second seconds ", 1},
	    {" m min mins minute minutes ", 60},
	    {" h hr hrs hour hours ", 3600},
	    {" d day days ", 86400},
	    {" w wk wks week weeks ", 7 * 86400},
	    {" mo mon month months y yr yrs year years ", -1},
	};

	if (len == 0 || len > 8)
		return 0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		for (const char *n = units[i].names; *n; n++) {
			const char *e;

			if (*n == ' ')
				continue;
			e = strchr(n, ' ');
			if ((size_t)(e - n) == len &&
			    (len == 1 ? !strncmp(n, w, len)
				      : !strncasecmp(n, w, len)))
				return units[i].s;
			n = e;
		}
	return 0;
}

/* "N" "UNIT" ["ago"], N digits and UNIT a unit word, either as one word
 * ("2h") or two ("2 hours"), "ago" only when ago: *v units of *per
 * seconds; an N past 2^63 is too_far.  -2: not this form. */
static int parse_span(const char *s, const char *w[], const size_t len[],
		      size_t n, bool ago, const char *too_far, long long *v,
		      long long *per, struct sbx_error **err)
{
	size_t nd = strspn(w[0], "0123456789"), i = 1;
	const char *unit;
	size_t ulen;

	if (nd == 0)
		return -2;
	if (nd < len[0]) {
		unit = w[0] + nd;
		ulen = len[0] - nd;
	} else if (n > 1) {
		unit = w[1];
		ulen = len[1];
		i = 2;
	} else {
		return -2;
	}
	if (n > i + 1 ||
	    (n == i + 1 && (!ago || !word_is(w[i], len[i], "ago"))))
		return -2;
	*per = unit_of(unit, ulen);
	if (*per < 0)
		return time_error(err, s,
				  "months and years have no fixed length: "
				  "say days or weeks, or give a date");
	if (*per == 0)
		return -2;
	*v = 0;
	for (size_t k = 0; k < nd; k++)
		if (__builtin_mul_overflow(*v, 10, v) ||
		    __builtin_add_overflow(*v, w[0][k] - '0', v))
			return time_error(err, s, "%s", too_far);
	return 0;
}

/* A time ago ("2h", "3 days ago"): N units before now. */
static int parse_ago(const char *s, const char *w[], const size_t len[],
		     size_t n, long long now_us, long long *out,
		     struct sbx_error **err)
{
	long long v, per, ago, t;
	int r = parse_span(s, w, len, n, true, "too far back", &v, &per, err);

	if (r)
		return r;
	if (__builtin_mul_overflow(v, per * 1000000, &ago) ||
	    __builtin_sub_overflow(now_us, ago, &t) || t <= 0)
		return time_error(err, s, "too far back");
	*out = t;
	return 0;
}

static const char *const weekdays[] = {"sunday",    "monday",	"tuesday",
				       "wednesday", "thursday", "friday",
				       "saturday"};

/* A weekday's name, whole or its first three letters ("tue"): 0..6,
 * else -1. */
static int weekday_of(const char *w, size_t len)
{
	for (int i = 0; i < 7; i++)
		if (word_is(w, len, weekdays[i]) ||
		    (len == 3 && !strncasecmp(w, weekdays[i], 3)))
			return i;
	return -1;
}

/* "now", "today", "yesterday", WEEKDAY, "last" WEEKDAY: the start of the
 * day (or now).  -2: not this form. */
static int parse_day(const char *s, const char *w[], const size_t len[],
		     size_t n, long long now_us, bool local, long long *out,
		     long long *wall, struct sbx_error **err)
{
	long y;
	int mo, d, wday, back, wd;

	if (n == 1 && word_is(w[0], len[0], "now")) {
		*out = now_us;
		return 0;
	}
	wd = n == 2 && word_is(w[0], len[0], "last") ? weekday_of(w[1], len[1])
	     : n == 1				     ? weekday_of(w[0], len[0])
						     : -1;
	if (n == 1 && word_is(w[0], len[0], "today"))
		back = 0;
	else if (n == 1 && word_is(w[0], len[0], "yesterday"))
		back = 1;
	else if (wd >= 0)
		back = -1;
	else
		return -2;
	if (now_us <= 0 ||
	    !date_of(now_us / 1000000, local, &y, &mo, &d, &wday))
		return time_error(err, s, "the local zone cannot say");
	if (back < 0) /* the most recent one before today: today's, a
		       * week ago */
		back = (wday - wd + 6) % 7 + 1;
	civil_from_days(days_from_civil(y, mo, d) - back, &y, &mo, &d);
	if (!civil_to_us(y, mo, d, 0, 0, 0, 0, local, out, wall))
		return time_error(err, s, "the local zone cannot say");
	if (*out <= AUDIT_US_MIN)
		return time_error(err, s, "before 1970");
	return 0;
}

/* A date or time, a time ago or a day (s NUL-terminated; whole, what
 * the caller gave, for messages); *wall as civil_to_us says, else -1. */
static int parse_base(const char *s, const char *whole, long long now_us,
		      bool local, long long *out, long long *wall,
		      struct sbx_error **err)
{
	const char *w[4];
	size_t len[4], n;
	int r;

	*wall = -1;
	/* A date: 4 digits and '-'. */
	if (strspn(s, "0123456789") == 4 && s[4] == '-')
		return parse_iso(s, whole, local, out, wall, err);
	/* Words: spaces between them, none before or after. */
	n = split(s, w, len, 4);
	if (!n || *s == ' ' || s[strlen(s) - 1] == ' ')
		return time_error(err, whole, "not a time");
	r = parse_ago(whole, w, len, n, now_us, out, err);
	if (r == -2)
		r = parse_day(whole, w, len, n, now_us, local, out, wall, err);
	if (r == -2)
		return time_error(err, whole, "not a time");
	return r;
}

/*
 * t moved by sign * v units of per seconds: days and weeks, when local,
 * on the calendar (the same local time of day, "tuesday + 1 day" being
 * Wednesday's midnight across a change of daylight saving time; from
 * wall, the local time asked for, when there is one), other units and
 * UTC by the clock.
 */
static int shift(const char *s, long long t, long long wall, int sign,
		 long long v, long long per, bool local, long long *out,
		 struct sbx_error **err)
{
	long long span, r;
	long off;

	/* 10,000 years is past any time a row can hold. */
	if (__builtin_mul_overflow(v, per, &span) ||
	    span > 10000LL * 366 * 86400)
		return time_error(err, s, "out of range");
	span *= sign;
	if (local && per % 86400 == 0) {
		if (wall < 0 && offset_at(t / 1000000, &off))
			wall = t / 1000000 + off;
		if (wall < 0 || !local_to_utc(wall + span, &r))
			return time_error(err, s, "the local zone cannot say");
		r = r * 1000000 + t % 1000000;
	} else {
		r = t + span * 1000000;
	}
	if (r <= AUDIT_US_MIN)
		return time_error(err, s, "before 1970");
	if (r > AUDIT_US_MAX)
		return time_error(err, s, "after 9999");
	*out = r;
	return 0;
}

int auditq_parse_time_in(const char *s, long long now_us, bool local,
			 long long *out_us, struct sbx_error **err)
{
	size_t n = strlen(s), at = n;
	const char *w[4];
	size_t len[4];
	long long t = 0, wall, v, per;
	char *base;
	int r;

	/* TIME + N UNIT, TIME - N UNIT: the last " + " or " - " (a date's
	 * '-' and a zone's '+' have no blank either side). */
	for (size_t i = n >= 3 ? n - 3 : 0; i > 0 && at == n; i--)
		if (s[i] == ' ' && (s[i + 1] == '+' || s[i + 1] == '-') &&
		    s[i + 2] == ' ')
			at = i;
	if (at == n) {
		r = parse_base(s, s, now_us, local, &t, &wall, err);
		if (r == 0)
			*out_us = t;
		return r;
	}
	base = xstrndup(s, at);
	r = parse_base(base, s, now_us, local, &t, &wall, err);
	free(base);
	if (r)
		return r;
	n = split(s + at + 3, w, len, 4);
	if (!n || s[at + 3] == ' ' || s[strlen(s) - 1] == ' ')
		return time_error(err, s, "not a time");
	r = parse_span(s, w, len, n, false, "out of range", &v, &per, err);
	if (r == -2)
		return time_error(err, s, "not a time");
	if (r)
		return r;
	r = shift(s, t, wall, s[at + 1] == '-' ? -1 : 1, v, per, local, &t,
		  err);
	if (r == 0)
		*out_us = t;
	return r;
}

int auditq_parse_time(const char *s, long long now_us, long long *out_us,
		      struct sbx_error **err)
{
	return auditq_parse_time_in(s, now_us, false, out_us, err);
}

/*
 * t-auditq.c - what auditq.c does without a database: --since/--until
 * times (hand cases, and a fuzzer against timegm(3) as the reference) and
 * the cursor (hand cases, a round trip over random values, and a fuzzer:
 * whatever decode accepts is exactly what encode makes of its numbers),
 * and the shape of the page SQL (every value a $n parameter).
 */
#include "config.h"

#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "audit/audit.h"
#include "audit/auditq.h"

/* 9999-12-31T23:59:59.999999Z */
#define US_9999 (253402300799LL * 1000000 + 999999)
#include "basic/error.h"
#include "tap.h"

#define NOW 1780000000123456LL /* 2026-05-28T20:26:40.123456Z */

static long long tm_us(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = {.tm_year = y - 1900,
			.tm_mon = mo - 1,
			.tm_mday = d,
			.tm_hour = h,
			.tm_min = mi,
			.tm_sec = s};

	return (long long)timegm(&tm) * 1000000;
}

static void time_ok(const char *s, long long want)
{
	struct sbx_error *err = NULL;
	long long got = -7;
	int r = auditq_parse_time(s, NOW, &got, &err);

	if (r) {
		ok(0, "'%s' parses (%s)", s, err ? err->msg : "?");
		sbx_error_free(&err);
		return;
	}
	is_int(got, want, "'%s'", s);
}

static void time_bad(const char *s, const char *why)
{
	struct sbx_error *err = NULL;
	long long got = -7;
	int r = auditq_parse_time(s, NOW, &got, &err);

	if (!ok(r == -1 && err && tap_status(err) == 2 && got == -7 &&
		    strstr(err->msg, why) && strstr(err->msg, "2026-12-01") &&
		    strstr(err->msg, "7d"),
		"'%s' refused: %s", s, why))
		diag("got %d %lld: %s", r, got, err ? err->msg : "(no error)");
	sbx_error_free(&err);
}

static void hand_times(void)
{
	long long d = tm_us(2026, 12, 1, 0, 0, 0);

	time_ok("2026-12-01", d);
	time_ok("2026-12-01T10:00", d + 36000000000LL);
	time_ok("2026-12-01t10:00", d + 36000000000LL);
	time_ok("2026-12-01 10:00", d + 36000000000LL);
	time_ok("2026-12-01T10:00:00Z", d + 36000000000LL);
	time_ok("2026-12-01T10:00:00z", d + 36000000000LL);
	time_ok("2026-12-01T10:00:00+02:00", d + 28800000000LL);
	time_ok("2026-12-01T10:00:00+0200", d + 28800000000LL);
	time_ok("2026-12-01T10:00:00+02", d + 28800000000LL);
	time_ok("2026-12-01T10:00-05:30", d + 36000000000LL + 19800000000LL);
	time_ok("2026-12-01T00:00:00+23:59", d - (23 * 60 + 59) * 60000000LL);
	time_ok("2026-12-01T10:00:00.5Z", d + 36000500000LL);
	time_ok("2026-12-01T10:00:00,5Z", d + 36000500000LL);
	time_ok("2026-12-01T10:00:00.000001Z", d + 36000000001LL);
	time_ok("2026-12-01T10:00:00.123456789+02:00",
		d + 28800123457LL); /* rounded up to the microsecond */
	time_ok("2026-12-01T10:00:00.123456000Z", d + 36000123456LL);
	time_ok("2026-12-01T10:00:00.999999999Z", d + 36001000000LL);
	time_ok("2024-02-29", tm_us(2024, 2, 29, 0, 0, 0));
	time_ok("2000-02-29T23:59:59Z", tm_us(2000, 2, 29, 23, 59, 59));
	time_ok("1970-01-01T00:00:00.000001Z", 1);
	time_ok("9999-12-31T23:59:59.999999Z",
		tm_us(9999, 12, 31, 23, 59, 59) + 999999);
	time_ok("0s", NOW);
	time_ok("30s", NOW - 30000000LL);
	time_ok("15m", NOW - 900000000LL);
	time_ok("2h", NOW - 7200000000LL);
	time_ok("7d", NOW - 7 * 86400000000LL);
	time_ok("2w", NOW - 14 * 86400000000LL);
	time_ok("0007d", NOW - 7 * 86400000000LL);

	time_bad("", "not a time");
	time_bad("2026-13-01", "month 13 out of range");
	time_bad("2026-00-10", "month 0 out of range");
	time_bad("2026-02-30", "day 30 out of range for 2026-02");
	time_bad("2025-02-29", "day 29 out of range for 2025-02");
	time_bad("1900-02-29", "day 29 out of range");
	time_bad("2026-04-31", "day 31 out of range");
	time_bad("2026-12-00", "day 0 out of range");
	time_bad("2026-12-01T24:00", "time of day out of range");
	time_bad("2026-12-01T10:60", "time of day out of range");
	time_bad("2026-12-01T10:00:60Z", "time of day out of range");
	time_bad("2026-12-01T10:00:00+24:00", "zone offset out of range");
	time_bad("2026-12-01T10:00:00+02:60", "zone offset out of range");
	time_bad("1969-12-31T23:59:59Z", "before 1970");
	time_bad("1970-01-01", "before 1970");
	time_bad("1970-01-01T01:00+01:00", "before 1970");
	/* past 9999 through a zone or a fraction rounded up: refused, not
	 * a time no row can hold (which aborted the cursor's formatting) */
	time_bad("9999-12-31T23:59:59-23:59", "after 9999");
	time_bad("9999-12-31T23:59:59.9999999Z", "after 9999");
	time_bad("9999-12-31T23:30-00:31", "after 9999");
	time_bad("2026-12-1", "not a time");
	time_bad("26-12-01", "not a time");
	time_bad("2026/12/01", "not a time");
	time_bad("2026-12-01Z", "not a time");
	time_bad("2026-12-01T", "not a time");
	time_bad("2026-12-01T10", "not a time");
	time_bad("2026-12-01T10:0", "not a time");
	time_bad("2026-12-01T10:00:0", "not a time");
	time_bad("2026-12-01T10:00.5", "not a time");
	time_bad("2026-12-01T10:00:00.", "not a time");
	time_bad("2026-12-01T10:00:00.1234567890Z", "not a time");
	time_bad("2026-12-01T10:00:00+2", "not a time");
	time_bad("2026-12-01T10:00:00+02:0", "not a time");
	time_bad("2026-12-01T10:00:00Z ", "not a time");
	time_bad(" 2026-12-01", "not a time");
	time_bad("2026-12-01T10:00:00ZZ", "not a time");
	time_bad("+2026-12-01", "not a time");
	time_bad("2h ", "not a time");
	time_bad("h", "not a time");
	time_bad("-2h", "not a time");
	time_bad("+2h", "not a time");
	time_bad("2H", "not a time");
	time_bad("2y", "months and years have no fixed length");
	time_bad("3 months ago", "months and years have no fixed length");
	time_bad("2hm", "not a time");
	time_bad("1.5h", "not a time");
	time_bad("9223372036854775808s", "too far back");
	time_bad("99999999999999999999999d", "too far back");
	time_bad("9223372036854w", "too far back");
	time_bad("1780000001s", "too far back"); /* before 1970 */
	time_bad("2026-12-01\t", "not a time");

	/* The text is named, escaped. */
	{
		struct sbx_error *err = NULL;
		long long v;

		auditq_parse_time("bad\x1b[31m\xff", NOW, &v, &err);
		ok(err && strstr(err->msg, "'bad\\x1b[31m\\xff'") &&
		       !strchr(err->msg, '\x1b'),
		   "the text is named, escaped: %s", err ? err->msg : "");
		sbx_error_free(&err);
	}
}

/* ---- time as people say it ---- */

static void when_ok(const char *s, long long now, bool local, long long want)
{
	struct sbx_error *err = NULL;
	long long got = -7;

	if (auditq_parse_time_in(s, now, local, &got, &err)) {
		ok(0, "'%s' parses (%s)", s, err ? err->msg : "?");
		sbx_error_free(&err);
		return;
	}
	is_int(got, want, "'%s'%s", s, local ? " (local)" : "");
}

/* Refused at now (local or not), naming why; nothing written. */
static void when_bad(const char *s, long long now, bool local, const char *why)
{
	struct sbx_error *err = NULL;
	long long got = -7;
	int r = auditq_parse_time_in(s, now, local, &got, &err);

	if (!ok(r == -1 && err && tap_status(err) == 2 && got == -7 &&
		    strstr(err->msg, why),
		"'%s'%s at %lld refused: %s", s, local ? " (local)" : "", now,
		why))
		diag("got %d %lld: %s", r, got, err ? err->msg : "(no error)");
	sbx_error_free(&err);
}

/* TZ set for the local zone (tzset: localtime_r need not read TZ
 * again); false, said, when the system has no such zone. */
static bool zone(const char *tz)
{
	char path[128];

	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", tz);
	setenv("TZ", tz, 1);
	tzset();
	if (access(path, R_OK) == 0 || !strcmp(tz, "UTC"))
		return true;
	diag("no zone %s on this system (tzdata)", tz);
	return false;
}

#define H_US 3600000000LL
#define D_US 86400000000LL

/* NOW is Thursday 2026-05-28T20:26:40.123456Z. */
static void words_utc(void)
{
	long long today = tm_us(2026, 5, 28, 0, 0, 0);

	when_ok("now", NOW, false, NOW);
	when_ok("NOW", NOW, false, NOW);
	when_ok("today", NOW, false, today);
	when_ok("Today", NOW, false, today);
	when_ok("yesterday", NOW, false, today - D_US);
	when_ok("wednesday", NOW, false, today - D_US);
	when_ok("tuesday", NOW, false, today - 2 * D_US);
	when_ok("tue", NOW, false, today - 2 * D_US);
	when_ok("last tuesday", NOW, false, today - 2 * D_US);
	when_ok("Last  Tue", NOW, false, today - 2 * D_US);
	when_ok("sunday", NOW, false, today - 4 * D_US);
	when_ok("friday", NOW, false, today - 6 * D_US);
	/* today's name: the one before today, a week ago */
	when_ok("thursday", NOW, false, today - 7 * D_US);
	when_ok("last thursday", NOW, false, today - 7 * D_US);
	/* at midnight itself, today is now and thursday a week before */
	when_ok("today", today, false, today);
	when_ok("yesterday", today, false, today - D_US);
	when_ok("thursday", today, false, today - 7 * D_US);
	when_ok("today", today - 1, false, today - D_US);

	when_ok("2h ago", NOW, false, NOW - 2 * H_US);
	when_ok("2 h ago", NOW, false, NOW - 2 * H_US);
	when_ok("2h AGO", NOW, false, NOW - 2 * H_US);
	when_ok("1 day ago", NOW, false, NOW - D_US);
	when_ok("1 days ago", NOW, false, NOW - D_US);
	when_ok("3 days ago", NOW, false, NOW - 3 * D_US);
	when_ok("3 days", NOW, false, NOW - 3 * D_US);
	when_ok("3days", NOW, false, NOW - 3 * D_US);
	when_ok("1 hour ago", NOW, false, NOW - H_US);
	when_ok("5 Hours ago", NOW, false, NOW - 5 * H_US);
	when_ok("3 weeks ago", NOW, false, NOW - 21 * D_US);
	when_ok("1 week ago", NOW, false, NOW - 7 * D_US);
	when_ok("2wk", NOW, false, NOW - 14 * D_US);
	when_ok("2w ago", NOW, false, NOW - 14 * D_US);
	when_ok("90 seconds ago", NOW, false, NOW - 90000000LL);
	when_ok("1 second ago", NOW, false, NOW - 1000000LL);
	when_ok("45 sec ago", NOW, false, NOW - 45000000LL);
	when_ok("10 min ago", NOW, false, NOW - 600000000LL);
	when_ok("10 mins ago", NOW, false, NOW - 600000000LL);
	when_ok("1 minute ago", NOW, false, NOW - 60000000LL);
	when_ok("2 hrs ago", NOW, false, NOW - 2 * H_US);
	when_ok("0 seconds ago", NOW, false, NOW);

	/* TIME + N UNIT, TIME - N UNIT */
	when_ok("tuesday + 1 day", NOW, false, today - D_US);
	when_ok("last tue + 1d", NOW, false, today - D_US);
	when_ok("today - 1 week", NOW, false, today - 7 * D_US);
	when_ok("now - 2h", NOW, false, NOW - 2 * H_US);
	when_ok("yesterday + 12 hours", NOW, false, today - 12 * H_US);
	when_ok("2026-12-01 + 1d", NOW, false, tm_us(2026, 12, 2, 0, 0, 0));
	when_ok("2026-12-01 10:00 + 90 min", NOW, false,
		tm_us(2026, 12, 1, 11, 30, 0));
	when_ok("2026-12-01T10:00:00.5Z - 1s", NOW, false,
		tm_us(2026, 12, 1, 9, 59, 59) + 500000);
	when_ok("2h ago + 1h", NOW, false, NOW - H_US);
	time_bad("today + 1 month", "months and years have no fixed length");
	time_bad("today + 2", "not a time");
	time_bad("today +1d", "not a time");
	time_bad("today + 1d ago", "not a time");
	time_bad("today + 1d + 1d", "not a time");
	time_bad("today +  1d", "not a time");
	time_bad("today + 1d ", "not a time");
	time_bad(" + 1d", "not a time");
	time_bad("+ 1d", "not a time");
	time_bad("today + ", "not a time");
	time_bad("todayx + 1d", "not a time");
	time_bad("1970-01-02 - 2d", "before 1970");
	time_bad("9999-12-31 + 1d", "after 9999");
	time_bad("today + 99999999999999999999d", "out of range");
	time_bad("today + 9999999 weeks", "out of range");
	time_bad("today - 9999999 weeks", "out of range");

	time_bad("ago", "not a time");
	time_bad("2 ago", "not a time");
	time_bad("2h ago ago", "not a time");
	time_bad("2hago", "not a time");
	time_bad("hours ago", "not a time");
	time_bad("2 hours before", "not a time");
	time_bad("last", "not a time");
	time_bad("last week", "not a time");
	time_bad("last 2h", "not a time");
	time_bad("next tuesday", "not a time");
	time_bad("tues", "not a time");
	time_bad("tuesday ", "not a time");
	time_bad(" today", "not a time");
	time_bad("to day", "not a time");
	time_bad("today\t", "not a time");
	time_bad("yesterday 10:00", "not a time");
	time_bad("2\thours", "not a time");
	time_bad("2 H", "not a time");
	time_bad("2 M ago", "not a time");
	time_bad("1780000001 seconds ago", "too far back");
	time_bad("2 years ago", "months and years have no fixed length");
	time_bad("1mo", "months and years have no fixed length");
	/* before 1970 by the calendar */
	when_bad("yesterday", 1000000, false, "before 1970");
}

/* The table leaves utc and why out where they are false and NULL. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
/*
 * The local zone, across changes of daylight saving time: in zone, at
 * now (UTC y, m, d, h), text means want (UTC y, m, d, h, mi; -1 for the
 * refusals, why said); local unless utc.
 */
static const struct {
	const char *zone;
	int now[4];
	const char *text;
	int want[5];
	bool utc;
	const char *why;
} local_cases[] = {
    /* clang-format off */
    /* Berlin: 2026-03-29 02:00 CET -> 03:00 CEST at 01:00Z; 2026-10-25
     * 03:00 CEST -> 02:00 CET at 01:00Z.  Sunday 14:00 CEST: */
    {"Europe/Berlin", {2026, 3, 29, 12}, "today", {2026, 3, 28, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "today", {2026, 3, 29, 0, 0}, true},
    {"Europe/Berlin", {2026, 3, 29, 12}, "yesterday", {2026, 3, 27, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "saturday", {2026, 3, 27, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "sunday", {2026, 3, 21, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "monday", {2026, 3, 22, 23, 0}},
    /* "1 day ago" is 24 hours, not the calendar's day */
    {"Europe/Berlin", {2026, 3, 29, 12}, "1 day ago", {2026, 3, 28, 12, 0}},
    /* "+ 1 day" is the calendar's, "+ 24h" the clock's */
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-28 + 1 day", {2026, 3, 28, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-29 + 1 day", {2026, 3, 29, 22, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-29 + 24h", {2026, 3, 29, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "saturday + 1d", {2026, 3, 28, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-30 - 1 week", {2026, 3, 22, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-28T02:30 + 1d", {2026, 3, 29, 1, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-29 + 24h", {2026, 3, 30, 0, 0}, true},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-29T01:59", {2026, 3, 29, 0, 59}},
    /* skipped: the moment the clocks jumped to */
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-29T02:00", {2026, 3, 29, 1, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-29T02:30", {2026, 3, 29, 1, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-03-29T03:00", {2026, 3, 29, 1, 0}},
    /* passed twice: the first pass */
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-10-25T02:30", {2026, 10, 25, 0, 30}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-10-25T01:59", {2026, 10, 24, 23, 59}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-10-25T03:00", {2026, 10, 25, 2, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-12-01", {2026, 11, 30, 23, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-07-01", {2026, 6, 30, 22, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-07-01 10:00", {2026, 7, 1, 8, 0}},
    /* a zone given is the zone, local or not */
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-07-01T10:00Z", {2026, 7, 1, 10, 0}},
    {"Europe/Berlin", {2026, 3, 29, 12}, "2026-07-01T10:00+05:00", {2026, 7, 1, 5, 0}},
    /* autumn: Sunday 2026-10-25 is 25 hours long; Monday 13:00 CET */
    {"Europe/Berlin", {2026, 10, 26, 12}, "yesterday", {2026, 10, 24, 22, 0}},
    {"Europe/Berlin", {2026, 10, 26, 12}, "today", {2026, 10, 25, 23, 0}},
    {"Europe/Berlin", {2026, 10, 26, 12}, "saturday", {2026, 10, 23, 22, 0}},
    /* Berlin was UTC+1 in 1970 */
    {"Europe/Berlin", {2026, 10, 26, 12}, "1970-01-01T00:30", {-1}, .why = "before 1970"},
    /* New York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01
     * 02:00 EDT -> 01:00 EST (06:00Z).  Tuesday 08:00 EDT: */
    {"America/New_York", {2026, 3, 10, 12}, "today", {2026, 3, 10, 4, 0}},
    {"America/New_York", {2026, 3, 10, 12}, "yesterday", {2026, 3, 9, 4, 0}},
    {"America/New_York", {2026, 3, 10, 12}, "sunday", {2026, 3, 8, 5, 0}},
    {"America/New_York", {2026, 3, 10, 12}, "tuesday", {2026, 3, 3, 5, 0}},
    {"America/New_York", {2026, 3, 10, 12}, "last tuesday", {2026, 3, 3, 5, 0}},
    {"America/New_York", {2026, 3, 10, 12}, "2026-03-08T02:30", {2026, 3, 8, 7, 0}},
    {"America/New_York", {2026, 3, 10, 12}, "2026-11-01T01:30", {2026, 11, 1, 5, 30}},
    {"America/New_York", {2026, 3, 10, 12}, "2026-11-01T02:00", {2026, 11, 1, 7, 0}},
    /* Tuesday 23:00 EDT: the UTC date is already Wednesday */
    {"America/New_York", {2026, 3, 11, 3}, "today", {2026, 3, 10, 4, 0}},
    {"America/New_York", {2026, 3, 11, 3}, "today", {2026, 3, 11, 0, 0}, true},
    {"America/New_York", {2026, 3, 11, 3}, "wednesday", {2026, 3, 4, 5, 0}},
    {"America/New_York", {2026, 3, 11, 3}, "wednesday", {2026, 3, 4, 0, 0}, true},
    {"America/New_York", {2026, 3, 11, 3}, "9999-12-31T23:59", {-1}, .why = "after 9999"},
    /* Sao Paulo, 2018-11-04: midnight skipped (00:00 -03 -> 01:00 -02),
     * so the day starts at 01:00 */
    {"America/Sao_Paulo", {2018, 11, 4, 15}, "today", {2018, 11, 4, 3, 0}},
    {"America/Sao_Paulo", {2018, 11, 4, 15}, "2018-11-04", {2018, 11, 4, 3, 0}},
    {"America/Sao_Paulo", {2018, 11, 4, 15}, "yesterday", {2018, 11, 3, 3, 0}},
    /* a day on from the day before: midnight asked for, 01:00 given */
    {"America/Sao_Paulo", {2018, 11, 4, 15}, "yesterday + 1 day", {2018, 11, 4, 3, 0}},
    {"America/Sao_Paulo", {2018, 11, 4, 15}, "2018-11-05 - 1 day", {2018, 11, 4, 3, 0}},
    {"America/Sao_Paulo", {2018, 11, 4, 15}, "2018-11-04 + 1 day", {2018, 11, 5, 2, 0}},
    {"UTC", {2026, 5, 28, 20}, "today", {2026, 5, 28, 0, 0}},
    {"UTC", {2026, 5, 28, 20}, "2026-12-01T10:00", {2026, 12, 1, 10, 0}},
};
/* clang-format on */
#pragma GCC diagnostic pop

static void words_local(void)
{
	for (size_t i = 0; i < sizeof(local_cases) / sizeof(*local_cases);
	     i++) {
		const int *n = local_cases[i].now, *w = local_cases[i].want;
		long long now = tm_us(n[0], n[1], n[2], n[3], 0, 0);

		if (!zone(local_cases[i].zone)) {
			skip("no tzdata", "%s in %s", local_cases[i].text,
			     local_cases[i].zone);
			continue;
		}
		if (w[0] < 0)
			when_bad(local_cases[i].text, now, true,
				 local_cases[i].why);
		else
			when_ok(local_cases[i].text, now, !local_cases[i].utc,
				tm_us(w[0], w[1], w[2], w[3], w[4], 0));
	}
	zone("UTC");
}

/* One local time (in the zone set) against mktime(3): the earliest
 * instant that is that local time, or, when none is (skipped), the
 * first instant at or after it.  True when it agrees. */
static bool local_case(int y, int mo, int d, int h, int mi, int *twice,
		       int *gaps)
{
	struct sbx_error *err = NULL;
	long long got = -7, want = -1;
	char buf[40];
	bool good = true;

	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d", y, mo, d, h, mi);
	for (int dst = 0; dst < 2; dst++) {
		struct tm tm = {.tm_year = y - 1900,
				.tm_mon = mo - 1,
				.tm_mday = d,
				.tm_hour = h,
				.tm_min = mi,
				.tm_isdst = dst},
			  back;
		time_t t = mktime(&tm);

		if (t == (time_t)-1 || !localtime_r(&t, &back) ||
		    back.tm_year != y - 1900 || back.tm_mon != mo - 1 ||
		    back.tm_mday != d || back.tm_hour != h || back.tm_min != mi)
			continue;
		if (want >= 0 && want != (long long)t * 1000000)
			++*twice;
		if (want < 0 || (long long)t * 1000000 < want)
			want = (long long)t * 1000000;
	}
	if (auditq_parse_time_in(buf, NOW, true, &got, &err)) {
		diag("%s %s: %s", getenv("TZ"), buf, err->msg);
		good = false;
	} else if (want >= 0 && got != want) {
		diag("%s %s: got %lld, want %lld", getenv("TZ"), buf, got,
		     want);
		good = false;
	} else if (want < 0) {
		time_t t = (time_t)(got / 1000000), t1 = t - 1;
		struct tm a, b;
		long long req = tm_us(y, mo, d, h, mi, 0) / 1000000;

		++*gaps;
		localtime_r(&t, &a);
		localtime_r(&t1, &b);
		if (t + a.tm_gmtoff < req || t1 + b.tm_gmtoff >= req) {
			diag("%s %s: %lld not the gap's end", getenv("TZ"), buf,
			     got);
			good = false;
		}
	}
	sbx_error_free(&err);
	return good;
}

/* A day word at now (in the zone set): its first moment, the right day. */
static bool day_case(long long now, int w)
{
	static const char *const wd[] = {"sunday",    "monday",	  "tuesday",
					 "wednesday", "thursday", "friday",
					 "saturday"};
	const char *word = w == 7 ? "today" : w == 8 ? "yesterday" : wd[w];
	struct sbx_error *err = NULL;
	time_t tn = (time_t)(now / 1000000), tg, tp;
	struct tm n, g, p;
	long long got, nd, gd, pd, want;

	if (auditq_parse_time_in(word, now, true, &got, &err)) {
		diag("%s %s at %lld: %s", getenv("TZ"), word, now, err->msg);
		sbx_error_free(&err);
		return false;
	}
	tg = (time_t)(got / 1000000);
	tp = tg - 1;
	localtime_r(&tn, &n);
	localtime_r(&tg, &g);
	localtime_r(&tp, &p);
	nd = tm_us(n.tm_year + 1900, n.tm_mon + 1, n.tm_mday, 0, 0, 0) / D_US;
	gd = tm_us(g.tm_year + 1900, g.tm_mon + 1, g.tm_mday, 0, 0, 0) / D_US;
	pd = tm_us(p.tm_year + 1900, p.tm_mon + 1, p.tm_mday, 0, 0, 0) / D_US;
	/* the day meant: today, the one before, the weekday's last */
	want = w == 7	? nd
	       : w == 8 ? nd - 1
			: nd - ((n.tm_wday - w + 6) % 7 + 1);
	/* its first moment: the first second whose date is that day or, if
	 * the zone skipped it (Apia, 2011-12-30), later */
	if (got % 1000000 || gd < want || pd >= want || gd > want + 1) {
		diag("%s %s at %lld: %lld", getenv("TZ"), word, now, got);
		return false;
	}
	/* + 1 day on the calendar: the next day's first moment, however
	 * long the day (a day skipped whole aside) */
	if (gd == want) {
		char plus[32];
		long long next, want_next;

		snprintf(plus, sizeof(plus), "%s + 1 day", word);
		if (auditq_parse_time_in(plus, now, true, &next, &err) ||
		    auditq_parse_time_in(w == 8 ? "today" : "now + 1 week", now,
					 true, &want_next, &err)) {
			diag("%s: %s", plus, err->msg);
			sbx_error_free(&err);
			return false;
		}
		tg = (time_t)(next / 1000000);
		localtime_r(&tg, &g);
		gd = tm_us(g.tm_year + 1900, g.tm_mon + 1, g.tm_mday, 0, 0, 0) /
		     D_US;
		if ((w == 8 && next != want_next) || gd < want + 1 ||
		    gd > want + 2 || g.tm_hour > 2) {
			diag("%s at %lld (%s): %lld", plus, now, getenv("TZ"),
			     next);
			return false;
		}
	}
	return true;
}

/* Local times and days in zones with odd changes: random ones, and every
 * change of offset from 1971 to 2037 walked across in 7-minute steps. */
static void fuzz_local(void)
{
	static const char *const zones[] = {
	    "Europe/Berlin",	 "America/New_York",
	    "America/Sao_Paulo", "Australia/Lord_Howe", /* half-hour changes */
	    "Asia/Kolkata",	 "Pacific/Chatham",
	    "America/St_Johns",	 "Pacific/Apia" /* skipped 2011-12-30 whole */};
	int bad = 0, gaps = 0, twice = 0, changes = 0, days = 0;

	for (size_t z = 0; z < sizeof(zones) / sizeof(*zones); z++) {
		long long t = tm_us(1971, 1, 1, 12, 0, 0) / 1000000;
		long long end = tm_us(2037, 12, 31, 12, 0, 0) / 1000000;
		long prev;
		struct tm tm;
		time_t tt = (time_t)t;

		if (!zone(zones[z]))
			continue;
		localtime_r(&tt, &tm);
		prev = tm.tm_gmtoff;
		for (; t < end; t += 86400) {
			long long lo = t - 86400, hi = t;
			long before = prev;

			tt = (time_t)t;
			localtime_r(&tt, &tm);
			if (tm.tm_gmtoff == prev)
				continue;
			prev = tm.tm_gmtoff;
			changes++;
			while (hi - lo > 1) { /* the change's instant */
				long long mid = lo + (hi - lo) / 2;

				tt = (time_t)mid;
				localtime_r(&tt, &tm);
				if (tm.tm_gmtoff == before)
					lo = mid;
				else
					hi = mid;
			}
			for (long long u =
				 hi + (before < prev ? before : prev) - 7200;
			     u < hi + (before > prev ? before : prev) + 7200;
			     u += 420) {
				int y, mo, d;
				long long day = u / 86400, sec = u % 86400;
				struct tm c;
				time_t ct = (time_t)(day * 86400);

				gmtime_r(&ct, &c);
				y = c.tm_year + 1900;
				mo = c.tm_mon + 1;
				d = c.tm_mday;
				if (!local_case(y, mo, d, (int)(sec / 3600),
						(int)(sec / 60 % 60), &twice,
						&gaps) &&
				    bad++ > 5)
					break;
			}
			/* the days around the change */
			for (long long n = hi - 2 * 86400; n < hi + 2 * 86400;
			     n += 3 * 3600 + 17 * 60, days++)
				if (!day_case(n * 1000000, days % 9) &&
				    bad++ > 5)
					break;
		}
	}
	for (int i = 0; i < 20000 && bad < 5; i++) {
		if (!zone(zones[tap_rand() % 8]))
			continue;
		if (!local_case(1971 + (int)(tap_rand() % 66),
				1 + tap_rand() % 12, 1 + (int)(tap_rand() % 28),
				tap_rand() % 24, tap_rand() % 60, &twice,
				&gaps) ||
		    !day_case((long long)(50000000 + tap_rand() % 2000000000u) *
				  1000000,
			      (int)(tap_rand() % 9)))
			bad++;
	}
	is_int(bad, 0,
	       "local times across %d changes of offset and 20000 random "
	       "ones agree with mktime (%d passed twice, %d skipped); %d days "
	       "start where they do",
	       changes, twice, gaps, days + 20000);
	ok(gaps > 1000 && twice > 1000,
	   "the fuzzer met skipped and doubled times");
	zone("UTC");
}

/* What a hostile caller can give: huge, long, not UTF-8. */
static void hostile(void)
{
	size_t big = 10 << 20;
	char *s = xmalloc(big + 8);
	struct sbx_error *err = NULL;
	long long v = -7;
	int r;

	memset(s, '9', big);
	strcpy(s + big, "d");
	r = auditq_parse_time(s, NOW, &v, &err);
	ok(r == -1 && err && strstr(err->msg, "too far back") &&
	       strlen(err->msg) < 600 && v == -7,
	   "10 MB of digits: too far back, a short message (%zu bytes)",
	   err ? strlen(err->msg) : 0);
	sbx_error_free(&err);

	memset(s, 'a', big);
	s[big] = 0;
	r = auditq_parse_time_in(s, NOW, true, &v, &err);
	ok(r == -1 && err && strstr(err->msg, "'aaaa") &&
	       strstr(err->msg, "...") && strlen(err->msg) < 600,
	   "10 MB of letters: not a time, named cut short");
	sbx_error_free(&err);

	for (size_t i = 0; i < big; i++)
		s[i] = i % 2 ? ' ' : '1';
	r = auditq_parse_time(s, NOW, &v, &err);
	ok(r == -1 && err && strstr(err->msg, "not a time"),
	   "5 million words: not a time");
	sbx_error_free(&err);

	memcpy(s, "2026-12-01T", 11);
	memset(s + 11, '0', big - 11);
	r = auditq_parse_time(s, NOW, &v, &err);
	ok(r == -1 && err && strstr(err->msg, "not a time"),
	   "a 10 MB date: not a time");
	sbx_error_free(&err);
	free(s);

	r = auditq_parse_time("\xff\xfe days ago", NOW, &v, &err);
	ok(r == -1 && err && strstr(err->msg, "'\\xff\\xfe days ago'"),
	   "not UTF-8: named escaped (%s)", err ? err->msg : "");
	sbx_error_free(&err);
	r = auditq_parse_time("2 d\xc3\xa4ys ago", NOW, &v, &err);
	ok(r == -1 && err && strstr(err->msg, "not a time"),
	   "a unit with a letter beyond ASCII: not a time");
	sbx_error_free(&err);
	/* The text ends at its NUL: a command line cannot hold one. */
	when_ok("2h\0garbage", NOW, false, NOW - 2 * H_US);
	time_bad("9223372036854775807 weeks ago", "too far back");
	time_bad("18446744073709551616 seconds ago", "too far back");
	/* leading zeros are no number's size */
	when_ok("0000000000000000000000000000000000000001 weeks ago", NOW,
		false, NOW - 7 * D_US);
}

/* The reference: the grammar as a regex, the calendar from timegm. */
static bool ref_base(const char *s, long long *out)
{
	static regex_t rel, rel_word, day, abs_re;
	static bool compiled;
	regmatch_t m[12];
	int v[11] = {0};
	long long frac = 0;

	if (!compiled) {
		if (regcomp(&rel, "^([0-9]+) *([smhdw])( +[Aa][Gg][Oo])?$",
			    REG_EXTENDED) ||
		    regcomp(&rel_word,
			    "^([0-9]+) *(secs?|seconds?|mins?|minutes?|hrs?|"
			    "hours?|days?|wks?|weeks?)( +ago)?$",
			    REG_EXTENDED | REG_ICASE) ||
		    regcomp(&day,
			    "^(now|today|yesterday|(last +)?(sun|mon|tue|wed|"
			    "thu|fri|sat|sunday|monday|tuesday|wednesday|"
			    "thursday|friday|saturday))$",
			    REG_EXTENDED | REG_ICASE) ||
		    regcomp(&abs_re,
			    "^([0-9]{4})-([0-9]{2})-([0-9]{2})([Tt ]([0-9]{2}):"
			    "([0-9]{2})(:([0-9]{2})([.,]([0-9]{1,9}))?)?"
			    "([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)?)?$",
			    REG_EXTENDED))
			bail_out("regcomp");
		compiled = true;
	}
	if (!regexec(&rel, s, 3, m, 0) || !regexec(&rel_word, s, 3, m, 0)) {
		__int128 n = 0, t;
		static const long long unit[] = {1, 60, 3600, 86400, 604800};
		char u = (char)(s[m[2].rm_so] | 0x20);

		for (const char *p = s; *p >= '0' && *p <= '9'; p++) {
			n = n * 10 + (*p - '0');
			if (n > (__int128)1 << 80)
				return false;
		}
		t = NOW - n * unit[strchr("smhdw", u) - "smhdw"] * 1000000;
		if (t <= 0)
			return false;
		*out = (long long)t;
		return true;
	}
	if (!regexec(&day, s, 4, m, 0)) {
		/* By stepping back a day at a time with gmtime_r/timegm. */
		static const char *const wd[] = {"sun", "mon", "tue", "wed",
						 "thu", "fri", "sat"};
		const char *w = s + m[1].rm_so;
		time_t t = (time_t)(NOW / 1000000);
		struct tm tm;
		int back = 0;

		if (!strcasecmp(w, "now")) {
			*out = NOW;
			return true;
		}
		gmtime_r(&t, &tm);
		if (!strcasecmp(w, "yesterday"))
			back = 1;
		else if (strcasecmp(w, "today"))
			for (back = 1; back <= 7; back++)
				if (!strncasecmp(
					s + m[3].rm_so,
					wd[(tm.tm_wday + 7 - back) % 7], 3))
					break;
		tm.tm_mday -= back;
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		*out = (long long)timegm(&tm) * 1000000;
		return true;
	}
	if (regexec(&abs_re, s, 12, m, 0))
		return false;
	{
		static const int groups[] = {1, 2, 3, 5, 6, 8};
		for (int g = 0; g < 6; g++)
			if (m[groups[g]].rm_so >= 0)
				v[g] = atoi(s + m[groups[g]].rm_so);
	}
	if (m[10].rm_so >= 0) {
		int nd = m[10].rm_eo - m[10].rm_so;
		char d[10] = "000000000";

		memcpy(d, s + m[10].rm_so, (size_t)nd);
		frac = atoll(d) / 1000 + (atoll(d) % 1000 != 0);
	}
	{
		struct tm tm = {.tm_year = v[0] - 1900,
				.tm_mon = v[1] - 1,
				.tm_mday = v[2],
				.tm_hour = v[3],
				.tm_min = v[4],
				.tm_sec = v[5]};
		long long t;
		int zone = 0;

		t = timegm(&tm);
		if (tm.tm_year != v[0] - 1900 || tm.tm_mon != v[1] - 1 ||
		    tm.tm_mday != v[2] || tm.tm_hour != v[3] ||
		    tm.tm_min != v[4] || tm.tm_sec != v[5] || v[1] < 1)
			return false;
		if (m[11].rm_so >= 0 && strchr("+-", s[m[11].rm_so])) {
			const char *z = s + m[11].rm_so + 1;
			int zh = (z[0] - '0') * 10 + z[1] - '0', zm = 0;

			if (z[2])
				zm = atoi(z + (z[2] == ':' ? 3 : 2));
			if (zh > 23 || zm > 59)
				return false;
			zone = (s[m[11].rm_so] == '-' ? -1 : 1) *
			       (zh * 3600 + zm * 60);
		}
		t = (t - zone) * 1000000 + frac;
		if (t <= 0)
			return false;
		*out = t;
		return true;
	}
}

/* TIME + N UNIT or TIME - N UNIT (UTC: by the clock), else TIME. */
static bool ref_time(const char *s, long long *out)
{
	static regex_t span, span_word;
	static bool compiled;
	static const long long unit[] = {1, 60, 3600, 86400, 604800};
	const char *at = NULL;
	regmatch_t m[3];
	__int128 n = 0, t;
	long long base;
	char *left;
	bool good;

	if (!compiled) {
		if (regcomp(&span, "^([0-9]+) *([smhdw])$", REG_EXTENDED) ||
		    regcomp(&span_word,
			    "^([0-9]+) *(secs?|seconds?|mins?|minutes?|hrs?|"
			    "hours?|days?|wks?|weeks?)$",
			    REG_EXTENDED | REG_ICASE))
			bail_out("regcomp");
		compiled = true;
	}
	for (const char *p = s; (p = strpbrk(p, "+-")); p++)
		if (p > s && p[-1] == ' ' && p[1] == ' ')
			at = p - 1;
	if (!at)
		return ref_base(s, out);
	left = strndup(s, (size_t)(at - s));
	good = ref_base(left, &base);
	free(left);
	if (!good || (regexec(&span, at + 3, 3, m, 0) &&
		      regexec(&span_word, at + 3, 3, m, 0)))
		return false;
	for (const char *p = at + 3; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > (__int128)1 << 80)
			return false;
	}
	n *= unit[strchr("smhdw", at[3 + m[2].rm_so] | 0x20) - "smhdw"] *
	     1000000;
	t = at[1] == '-' ? base - n : base + n;
	if (t <= 0 || t > US_9999)
		return false;
	*out = (long long)t;
	return true;
}

/* Random valid times in every form, against timegm. */
static void fuzz_times(void)
{
	int bad = 0;

	for (int i = 0; i < 20000; i++) {
		int y = 1971 + (int)(tap_rand() % 8028), mo = 1 + tap_rand() % 12,
		    dim = mo == 2 ? ((y % 4 == 0 && y % 100) || y % 400 == 0
					 ? 29
					 : 28)
				  : (mo == 4 || mo == 6 || mo == 9 || mo == 11)
				      ? 30
				      : 31,
		    d = 1 + (int)(tap_rand() % (unsigned)dim),
		    h = tap_rand() % 24, mi = tap_rand() % 60,
		    s = tap_rand() % 60, form = tap_rand() % 6,
		    zh = tap_rand() % 24, zm = tap_rand() % 60,
		    sign = tap_rand() % 2 ? 1 : -1;
		long frac = (long)(tap_rand() % 1000000);
		char buf[80];
		long long want = tm_us(y, mo, d, h, mi, s), got;
		struct sbx_error *err = NULL;

		switch (form) {
		case 0:
			snprintf(buf, sizeof(buf), "%04d-%02d-%02d", y, mo, d);
			want = tm_us(y, mo, d, 0, 0, 0);
			break;
		case 1:
			snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d",
				 y, mo, d, h, mi);
			want = tm_us(y, mo, d, h, mi, 0);
			break;
		case 2:
			snprintf(buf, sizeof(buf),
				 "%04d-%02d-%02dT%02d:%02d:%02dZ", y, mo, d, h,
				 mi, s);
			break;
		case 3:
			snprintf(buf, sizeof(buf),
				 "%04d-%02d-%02dT%02d:%02d:%02d.%06ld", y, mo,
				 d, h, mi, s, frac);
			want += frac;
			break;
		default:
			snprintf(buf, sizeof(buf),
				 "%04d-%02d-%02d %02d:%02d:%02d.%06ld%c%02d:%02d",
				 y, mo, d, h, mi, s, frac, sign > 0 ? '+' : '-',
				 zh, zm);
			want += frac - sign * (zh * 3600LL + zm * 60) * 1000000;
			break;
		}
		if (auditq_parse_time(buf, NOW, &got, &err) || got != want) {
			if (bad++ < 5)
				diag("'%s': got %lld, want %lld (%s)", buf, got,
				     want, err ? err->msg : "");
		}
		sbx_error_free(&err);
	}
	is_int(bad, 0, "20000 random valid times agree with timegm");

	/* Garbage from the times' own alphabet, and valid times mutated:
	 * accepted exactly when the reference (a regex of the grammar, then
	 * timegm) accepts, with the same value. */
	bad = 0;
	int accepted = 0, words = 0, offsets = 0;
	for (int i = 0; i < 200000; i++) {
		static const char abc[] = "0123456789-:T.Z+smhdw 0120-,";
		char buf[48];
		int n = (int)(tap_rand() % 28);
		long long got = -7, want;
		struct sbx_error *err = NULL;
		int r;

		if (tap_rand() % 3 == 2) {
			static const char *const tok[] = {
			    "2",      "15",
			    "0",      "h",
			    "m",      "s",
			    "d",      "w",
			    "H",      "M",
			    "hours",  "Day",
			    "days",   "ago",
			    "AGO",    "last",
			    "tue",    "Tuesday",
			    "friday", "yesterday",
			    "today",  "now",
			    "mins",   "sec",
			    "wk",     "hr",
			    "x",      "-",
			    " ",      " ",
			    "  ",     "2026-12-01",
			    "Z",      "month",
			    "\xff",   "minute",
			    "weeks",  "9999999999999999999999",
			    " + ",    " - ",
			    "+",      " +",
			    "1d",     "3 hours"};
			size_t at = 0;

			buf[0] = 0;
			for (unsigned k = 1 + tap_rand() % 4; k > 0; k--) {
				const char *t =
				    tok[tap_rand() %
					(sizeof(tok) / sizeof(*tok))];

				if (at + strlen(t) + 1 >= sizeof(buf))
					break;
				memcpy(buf + at, t, strlen(t) + 1);
				at += strlen(t);
			}
			/* half of them with an offset, mostly well formed */
			if (tap_rand() % 2 && at < 30) {
				static const char *const span[] = {
				    "1d", "3 hours", "2", "15m", "0 s", "1 week",
				    "2 months", "x", "99999999999999999d"};

				snprintf(buf + at, sizeof(buf) - at, "%s%s",
					 tap_rand() % 4 ? (tap_rand() % 2 ? " + "
									  : " - ")
							: "+ ",
					 span[tap_rand() % 9]);
			}
		} else if (tap_rand() % 2) {
			snprintf(buf, sizeof(buf),
				 "2026-%02u-%02uT1%u:%u%u:%u%u.%u%c0%u:%u0",
				 tap_rand() % 14, tap_rand() % 33,
				 tap_rand() % 10, tap_rand() % 7,
				 tap_rand() % 10, tap_rand() % 7,
				 tap_rand() % 10, tap_rand() % 10,
				 "+-"[tap_rand() % 2], tap_rand() % 10,
				 tap_rand() % 7);
			for (unsigned k = tap_rand() % 3; k > 0; k--) {
				size_t at = tap_rand() % strlen(buf);
				if (tap_rand() % 2)
					buf[at] = abc[tap_rand() %
						      (sizeof(abc) - 1)];
				else
					memmove(buf + at, buf + at + 1,
						strlen(buf + at));
			}
		} else {
			for (int k = 0; k < n; k++)
				buf[k] = abc[tap_rand() % (sizeof(abc) - 1)];
			buf[n] = 0;
		}
		r = auditq_parse_time(buf, NOW, &got, &err);
		accepted += r == 0;
		words += r == 0 && strpbrk(buf, "adenoty");
		offsets += r == 0 && (strstr(buf, " + ") || strstr(buf, " - "));
		if (ref_time(buf, &want)) {
			if ((r || got != want) && bad++ < 5)
				diag("'%s': got %d %lld, want %lld", buf, r,
				     got, want);
		} else if ((r != -1 || !err || tap_status(err) != 2) &&
			   bad++ < 5) {
			diag("'%s' accepted as %lld", buf, got);
		}
		sbx_error_free(&err);
	}
	is_int(bad, 0, "200000 garbage times: refused, or exactly right");
	ok(accepted > 1000 && words > 500 && offsets > 100,
	   "the fuzzer reached valid times too (%d, %d with words, %d with "
	   "an offset)",
	   accepted, words, offsets);
}

static void cursor_bad(const char *s, const char *why)
{
	struct sbx_error *err = NULL;
	long long a = -7, b = -7;
	int r = auditq_cursor_decode(s, &a, &b, &err);

	if (!ok(r == -1 && err && tap_status(err) == 2 && a == -7 && b == -7 &&
		    !strcmp(err->msg, "not a cursor sbxcat printed"),
		"cursor refused: %s", why))
		diag("got %d %lld %lld", r, a, b);
	sbx_error_free(&err);
}

/* base64url, no padding, of text: how a forger would make a cursor. */
static void b64url(const char *text, char *out)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t n = strlen(text), i;
	const unsigned char *t = (const unsigned char *)text;

	for (i = 0; i + 2 < n; i += 3) {
		*out++ = abc[t[i] >> 2];
		*out++ = abc[(t[i] & 3) << 4 | t[i + 1] >> 4];
		*out++ = abc[(t[i + 1] & 15) << 2 | t[i + 2] >> 6];
		*out++ = abc[t[i + 2] & 63];
	}
	if (n - i == 1) {
		*out++ = abc[t[i] >> 2];
		*out++ = abc[(t[i] & 3) << 4];
	} else if (n - i == 2) {
		*out++ = abc[t[i] >> 2];
		*out++ = abc[(t[i] & 3) << 4 | t[i + 1] >> 4];
		*out++ = abc[(t[i + 1] & 15) << 2];
	}
	*out = 0;
}

static void forged_bad(const char *text, const char *why)
{
	char c[200];

	b64url(text, c);
	cursor_bad(c, why);
}

static long long rand_ll(void)
{
	unsigned long long v =
	    (unsigned long long)tap_rand() << 32 | tap_rand();

	switch (tap_rand() % 4) {
	case 0: return (long long)(v >> 1);
	case 1: return (long long)(v % 1000);
	case 2: return (long long)(v % 4000000000000000LL);
	default: return (long long)(v >> (1 + tap_rand() % 63));
	}
}

static void cursors(void)
{
	char c[64], f[200];
	long long a, b;
	struct sbx_error *err = NULL;
	int bad = 0;

	auditq_cursor_encode(1780000000123456LL, 42, c);
	b64url("1:1780000000123456:42", f);
	is_str(c, f, "a cursor is base64url of 1:CREATED_US:SEQ");
	ok(auditq_cursor_decode(c, &a, &b, &err) == 0 &&
	       a == 1780000000123456LL && b == 42,
	   "and decodes back");
	/* created_at ends with 9999 (the schema's CHECK) */
	auditq_cursor_encode(US_9999, LLONG_MAX, c);
	ok(strlen(c) < 64 && auditq_cursor_decode(c, &a, &b, &err) == 0 &&
	       a == US_9999 && b == LLONG_MAX,
	   "the largest cursor fits and round-trips (%zu characters)",
	   strlen(c));
	auditq_cursor_encode(US_9999 + 1, 1, c);
	cursor_bad(c, "a time past the year 9999");
	auditq_cursor_encode(LLONG_MAX, 1, c);
	cursor_bad(c, "the largest time");
	auditq_cursor_encode(0, 0, c);
	ok(auditq_cursor_decode(c, &a, &b, &err) == 0 && a == 0 && b == 0,
	   "(0, 0) round-trips");
	sbx_error_free(&err);

	cursor_bad("", "empty");
	cursor_bad("!!!!", "not base64url");
	forged_bad("2:1780000000123456:42", "another version");
	forged_bad("0:1780000000123456:42", "version 0");
	forged_bad("1:1780000000123456:42:", "trailing colon");
	forged_bad("1:1780000000123456:42x", "trailing junk");
	forged_bad("1:1780000000123456:42 ", "trailing blank");
	forged_bad("1:1780000000123456", "one number");
	forged_bad("1:1780000000123456:", "empty seq");
	forged_bad("1::42", "empty time");
	forged_bad("1:-1780000000123456:42", "negative time");
	forged_bad("1:1780000000123456:-42", "negative seq");
	forged_bad("1:+1780000000123456:42", "a plus sign");
	forged_bad("1:01780000000123456:42", "a leading zero");
	forged_bad("1:1780000000123456:00", "a zero written twice");
	forged_bad("1:9223372036854775808:42", "time overflow");
	forged_bad("1:42:9223372036854775808", "seq overflow");
	forged_bad("1:42:99999999999999999999999999", "seq overflow, long");
	forged_bad(" 1:42:42", "a leading blank");
	forged_bad("1:42:42\n", "a newline");
	forged_bad("1:0x2a:42", "hexadecimal");
	auditq_cursor_encode(1780000000123456LL, 42, c);
	snprintf(f, sizeof(f), "%s=", c);
	cursor_bad(f, "padding added");
	snprintf(f, sizeof(f), "%sA", c);
	cursor_bad(f, "a character appended");
	snprintf(f, sizeof(f), "%s", c);
	f[0] = '+';
	cursor_bad(f, "standard base64's +");
	f[0] = '/';
	cursor_bad(f, "standard base64's /");
	snprintf(f, sizeof(f), " %s", c);
	cursor_bad(f, "a leading blank");
	/* "1:42:42" is 7 bytes: 10 characters, the last holding 2 spare
	 * bits; setting one is another string of the same bytes. */
	b64url("1:42:42", f);
	{
		const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrs"
				  "tuvwxyz0123456789-_";
		size_t last = strlen(f) - 1;
		const char *p = strchr(abc, f[last]);

		f[last] = abc[(p - abc) | 1];
		cursor_bad(f, "spare bits set");
	}
	memset(f, 'A', 100);
	f[100] = 0;
	cursor_bad(f, "too long");

	for (int i = 0; i < 100000; i++) {
		long long x = rand_ll() % (US_9999 + 1), y = rand_ll();

		auditq_cursor_encode(x, y, c);
		if (auditq_cursor_decode(c, &a, &b, &err) || a != x || b != y) {
			if (bad++ < 5)
				diag("(%lld, %lld) -> %s -> (%lld, %lld)", x,
				     y, c, a, b);
		}
		sbx_error_free(&err);
	}
	is_int(bad, 0, "100000 random cursors round-trip");

	/* Decode accepts only what encode makes: random strings, and valid
	 * cursors with a character changed, added or removed. */
	bad = 0;
	for (int i = 0; i < 300000; i++) {
		static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
					  "klmnopqrstuvwxyz0123456789-_=+/. ";
		char s[80], again[64];
		size_t n;

		if (i % 3 == 0) {
			n = tap_rand() % 70;
			for (size_t k = 0; k < n; k++)
				s[k] = abc[tap_rand() % (sizeof(abc) - 1)];
			s[n] = 0;
		} else if (i % 3 == 1) {
			char text[64];

			/* forged texts near the real format */
			snprintf(text, sizeof(text), "%c:%s%lld:%s%lld%s",
				 "120"[tap_rand() % 3],
				 tap_rand() % 8 ? "" : "0", rand_ll(),
				 tap_rand() % 8 ? "" : "-", rand_ll(),
				 tap_rand() % 8 ? "" : "x");
			b64url(text, s);
		} else {
			auditq_cursor_encode(rand_ll(), rand_ll(), s);
			n = strlen(s);
			switch (tap_rand() % 3) {
			case 0:
				s[tap_rand() % n] =
				    abc[tap_rand() % (sizeof(abc) - 1)];
				break;
			case 1:
				s[n] = abc[tap_rand() % (sizeof(abc) - 1)];
				s[n + 1] = 0;
				break;
			default:
				memmove(s + tap_rand() % n,
					s + tap_rand() % n + 1, 1);
				s[n - 1] = 0;
			}
		}
		if (auditq_cursor_decode(s, &a, &b, &err) == 0) {
			auditq_cursor_encode(a, b, again);
			if ((strcmp(again, s) || a < 0 || b < 0) && bad++ < 5)
				diag("'%s' accepted as (%lld, %lld)", s, a, b);
		} else if ((!err || tap_status(err) != 2) && bad++ < 5) {
			diag("'%s': no status 2 error", s);
		}
		sbx_error_free(&err);
	}
	is_int(bad, 0, "300000 strings: decode accepts only encode's output");
}

/* The page SQL: values as parameters only, never in the statement. */
static void page_sql(void)
{
	struct auditq_filter f = {
	    .tenant = "acme'; DROP TABLE x; --",
	    .session = "s1",
	    .agent = "ag",
	    .run = "rn",
	    .ops = 1u << AUDIT_WRITE | 1u << AUDIT_EXECUTE,
	    .failed = true,
	    .search = "50%_off\\",
	    .since_us = 1780000000000001LL,
	    .until_us = 1790000000000000LL,
	    .has_after = true,
	    .after_us = 1785000000123456LL,
	    .after_seq = 99,
	};
	struct auditq_sql q;
	bool found[12] = {0};

	auditq_page_sql(&f, 7, &q);
	is_int(q.nparams, 12, "every filter is a parameter (the session twice: key or wire id)");
	ok(!strstr(q.sql, "acme") && !strstr(q.sql, "50%") &&
	       !strstr(q.sql, "s1") && !strstr(q.sql, "2026"),
	   "no value in the statement");
	for (int i = 0; i < q.nparams; i++) {
		static const char *const want[] = {
		    "acme'; DROP TABLE x; --",
		    "s1",
		    "ag",
		    "rn",
		    "{write,execute}",
		    "%50\\%\\_off\\\\%",
		    "2026-05-28 20:26:40.000001+00",
		    "2026-09-21 14:13:20.000000+00",
		    "2026-07-25 17:20:00.123456+00",
		    "99",
		    "7"};
		for (int k = 0; k < 11; k++)
			if (!strcmp(q.params[i], want[k]))
				found[k] = true;
	}
	{
		int all = 1;
		for (int k = 0; k < 11; k++)
			all &= found[k];
		ok(all, "the parameters: the values, the pattern escaped, "
			"times to the microsecond in UTC");
	}
	ok(strstr(q.sql, "ORDER BY created_at DESC, seq DESC LIMIT $12") &&
	       strstr(q.sql, "(session_key = $2::text OR wire_id = $3::text)") &&
	       strstr(q.sql, "(created_at, seq) < ($10::timestamptz, "
			     "$11::bigint)") &&
	       strstr(q.sql, "op = ANY($6::text[])") &&
	       strstr(q.sql, "LIKE $7::text ESCAPE E'\\\\'") &&
	       strstr(q.sql, "NOT ok"),
	   "keyset, order, ops and search as agreed");
	diag("%s", q.sql);
	auditq_sql_free(&q);

	f = (struct auditq_filter){.ops = 1u << AUDIT_READ};
	auditq_page_sql(&f, 50, &q);
	ok(q.nparams == 2 && strstr(q.sql, "op = $1::text") &&
	       !strcmp(q.params[0], "read"),
	   "one op is an equality (index order)");
	auditq_sql_free(&q);
	f = (struct auditq_filter){0};
	auditq_page_sql(&f, 50, &q);
	ok(q.nparams == 1 && !strstr(q.sql, "WHERE"), "no filter, no WHERE");
	auditq_sql_free(&q);
}

int main(void)
{
	/* Every test but the local zone's is UTC whatever the machine's. */
	zone("UTC");
	hand_times();
	words_utc();
	words_local();
	fuzz_local();
	hostile();
	fuzz_times();
	cursors();
	page_sql();
	return done_testing();
}

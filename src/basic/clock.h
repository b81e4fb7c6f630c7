/*
 * clock.h - the clocks every layer measures on.  Thread rule: none needed
 * (no state).
 */
#ifndef SBX_CLOCK_H
#define SBX_CLOCK_H

/* CLOCK_MONOTONIC in milliseconds: what deadlines and durations are
 * measured on. */
long long clock_now_ms(void);

/*
 * Unix seconds, or RFC 3339 UTC ("2026-12-01T10:00:00Z", fractional
 * seconds allowed, "Z" or "+00:00"), into *t.  Returns 0, or -1 for
 * anything else (a date that does not exist included).
 */
int clock_parse_time(const char *s, long long *t);

/* Unix seconds t as RFC 3339 UTC ("2026-12-01T10:00:00Z") into out; "-"
 * for 0 or less (no time). */
void clock_format_time(char out[32], long long t);

/* Unix seconds t as RFC 3339 in the local zone (libc's: TZ, else
 * /etc/localtime), with its offset then ("2026-12-01T11:00:00+01:00";
 * an offset of whole seconds, as some zones had before 1972, as
 * "+00:53:28"); "-" for 0 or less. */
void clock_format_local(char out[40], long long t);

#endif

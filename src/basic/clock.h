/*
 * clock.h - the clocks every layer measures on.  Thread rule: none needed
 * (no state).
 */
#ifndef SBX_CLOCK_H
#define SBX_CLOCK_H

/* CLOCK_MONOTONIC in milliseconds: what deadlines and durations are
 * measured on. */
long long clock_now_ms(void);

#endif

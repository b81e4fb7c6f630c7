/*
 * clock.c - the monotonic clock of clock.h.
 */
#include "config.h"

#include <time.h>

#include "basic/clock.h"

long long clock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

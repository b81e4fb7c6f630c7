/*
 * size.c - sizes in bytes, one grammar for every door (size.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "basic/alloc.h"
#include "basic/size.h"
#include "basic/text.h"

/* Docker's own floor for a container's memory (6 MiB, its
 * linuxMinMemory): below it the engine refuses the container. */
const struct size_bounds size_memory = {
    .min = 6ull << 20, .max = SIZE_LARGEST, .min_name = "Docker's minimum"};
const struct size_bounds size_bytes = {.min = 1, .max = SIZE_LARGEST};

/* 15 digits: 999999999999999g is still a number that fits, and checked
 * before it is multiplied. */
#define DIGITS_MAX 15

/* The value quoted, made only when there is a message. */
#define QUOTED(s) (q ? q : (q = text_quote_short(s)))

char *size_parse(const char *s, const struct size_bounds *b,
		 unsigned long long *bytes)
{
	cleanup_free char *q = NULL;
	unsigned long long v = 0, mult = 1;
	char bound[SIZE_FORMAT_MAX];
	size_t digits = 0;

	while (digits <= DIGITS_MAX && s[digits] >= '0' && s[digits] <= '9')
		digits++;
	if (digits == 0 || digits > DIGITS_MAX ||
	    (s[digits] &&
	     (!strchr("bkmgBKMG", s[digits]) || s[digits + 1] != '\0')))
		return xasprintf("%s is not a size: 1 to 15 digits and an "
				 "optional unit b, k, m or g (such as '2g' or "
				 "'512m')",
				 QUOTED(s));
	for (size_t i = 0; i < digits; i++)
		v = v * 10 + (unsigned long long)(s[i] - '0');
	switch (s[digits] | 0x20) {
	case 'k':
		mult = 1ull << 10;
		break;
	case 'm':
		mult = 1ull << 20;
		break;
	case 'g':
		mult = 1ull << 30;
		break;
	}
	if (v == 0)
		return xasprintf("%s must be greater than zero", QUOTED(s));
	if (v > b->max / mult) {
		if (b->max == SIZE_LARGEST && !b->max_name)
			return xasprintf("%s is too large", QUOTED(s));
		size_format(b->max, bound);
		return xasprintf("%s is over %s of %s", QUOTED(s),
				 b->max_name ? b->max_name : "the maximum",
				 bound);
	}
	if (v * mult < b->min) {
		size_format(b->min, bound);
		return xasprintf("%s is below %s of %s", QUOTED(s),
				 b->min_name ? b->min_name : "the minimum",
				 bound);
	}
	*bytes = v * mult;
	return NULL;
}

void size_format(unsigned long long bytes, char buf[SIZE_FORMAT_MAX])
{
	static const char units[] = "gmk";
	unsigned shift = 30;

	for (size_t i = 0; i < 3; i++, shift -= 10)
		if (bytes && bytes % (1ull << shift) == 0) {
			snprintf(buf, SIZE_FORMAT_MAX, "%llu%c", bytes >> shift,
				 units[i]);
			return;
		}
	snprintf(buf, SIZE_FORMAT_MAX, "%llu", bytes);
}

/*
 * suggest.c - edit distance and the nearest known word (suggest.h).
 */
#include "config.h"

#include <string.h>

#include "basic/alloc.h"
#include "basic/suggest.h"

size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *row = xcalloc(st_add(lb, 1), sizeof(*row));
	size_t d;

	/* One row of the table at a time: row[j] is the distance between
	 * a[0..i) and b[0..j). */
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t here = row[j];
			size_t sub =
			    prev + ((a[i - 1] | 0x20) != (b[j - 1] | 0x20));
			size_t ins = row[j - 1] + 1, del = here + 1;

			row[j] = sub < ins ? (sub < del ? sub : del)
					   : (ins < del ? ins : del);
			prev = here;
		}
	}
	d = row[lb];
	free(row);
	return d;
}

const char *suggest_word(const char *word, const char *const *words, size_t n)
{
	const char *best = NULL;
	size_t bestd = (size_t)-1;
	size_t limit = strlen(word) / 3 < 2 ? 2 : strlen(word) / 3;

	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, words[i]);

		if (d < bestd) {
			bestd = d;
			best = words[i];
		}
	}
	return bestd <= limit ? best : NULL;
}

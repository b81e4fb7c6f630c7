/*
 * suggest.h - "did you mean": the known word nearest to a mistyped one.
 * For unknown commands and verbs (cmd.c); catalog.c's unknown fields can
 * use the same.
 *
 * Thread rule: none needed (no state).
 */
#ifndef SBX_SUGGEST_H
#define SBX_SUGGEST_H

#include <stddef.h>

/* Levenshtein distance between a and b, ASCII letters case folded. */
size_t edit_distance(const char *a, const char *b);

/*
 * The word of words[0..n) nearest to word, when near enough to be a typo
 * of it (at most 2 edits, or a third of its length if more); else NULL.
 */
const char *suggest_word(const char *word, const char *const *words, size_t n);

#endif

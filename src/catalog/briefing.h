/*
 * briefing.h - the paragraph a model is told about its runtime.
 *
 * Composed from the catalogue entry alone, never stored beside it, so it
 * cannot disagree with what was built.  Returns a new string (markdown).
 *
 * Thread rule: none needed (no state).
 */
#ifndef SBX_BRIEFING_H
#define SBX_BRIEFING_H

struct runtime;

char *briefing_markdown(const struct runtime *rt, int is_default);

#endif

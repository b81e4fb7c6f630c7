/*
 * jsonpos.h - where each value of a JSON document starts.
 *
 * jansson parses and decodes the catalogue but keeps no positions; this
 * scanner walks the same bytes once more and builds a tree of line/column
 * positions (columns count characters, as jansson's do) so every catalogue
 * error can point at the value it is about.  It also keeps every member of
 * an object in document order, duplicates included, which jansson drops.
 *
 * Each object is indexed by key as it is scanned, so finding a member and
 * finding the duplicates of an object of n keys cost O(1) and O(n): a
 * catalogue of the 4 MiB limit is checked in linear time.
 *
 * Only call it on a buffer jansson accepted.  jpos_scan() returns a tree the
 * caller frees with jpos_free(); lookups return borrowed pointers into it.
 *
 * Thread rule: none needed (no state).
 */
#ifndef SBX_JSONPOS_H
#define SBX_JSONPOS_H

#include <stddef.h>

struct jpos;

struct jpos_member {
	char *key; /* decoded, NUL-terminated (a key with NUL is cut there) */
	int kline, kcol;
	struct jpos *val;
	size_t first; /* index of the first member with this key: itself
			 unless the key is a duplicate */
};

struct jpos {
	int line, col;
	char kind; /* '{', '[' or 'v' for any scalar */
	size_t n;
	struct jpos_member *members; /* kind '{' */
	struct jpos **items;	     /* kind '[' */
	size_t *slots; /* kind '{': hash of keys to 1 + last member index */
	size_t nslots; /* a power of two, at least twice n; 0 when n is 0 */
};

struct jpos *jpos_scan(const char *buf, size_t len);
void jpos_free(struct jpos *p);
/* The i-th item of an array, or NULL. */
const struct jpos *jpos_item(const struct jpos *p, size_t i);
/* The last member named key (the one jansson keeps), or NULL. */
const struct jpos_member *jpos_member(const struct jpos *p, const char *key);

#endif

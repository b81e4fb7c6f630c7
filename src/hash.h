/*
 * hash.h - SHA-256 as hex, the content hash behind image tags; and the
 * string hash of the in-memory tables (jsonpos's keys, compose's anchors).
 */
#ifndef SBX_HASH_H
#define SBX_HASH_H

#include <stddef.h>

/* SHA-256 of data as 64 lowercase hex digits plus NUL, into out[65]. */
void sha256_hex(const void *data, size_t len, char out[65]);

/*
 * FNV-1a of a NUL-terminated string, for open-addressing tables of names
 * from one input file.  Not keyed: a file can collide its own names, which
 * costs it time bounded by its own size limit, and gains nothing else.
 */
size_t hash_str(const char *s);

#endif

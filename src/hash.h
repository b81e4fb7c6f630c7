/*
 * hash.h - SHA-256 as hex, the content hash behind image tags.
 */
#ifndef SBX_HASH_H
#define SBX_HASH_H

#include <stddef.h>

/* SHA-256 of data as 64 lowercase hex digits plus NUL, into out[65]. */
void sha256_hex(const void *data, size_t len, char out[65]);

#endif

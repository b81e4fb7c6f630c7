/*
 * hash.h - SHA-256 (the content hash behind image tags, the spool's sums,
 * the audit's chain, session keys) and HMAC-SHA256; random bytes (UUIDs,
 * key secrets, unique names); and the string hash of the in-memory tables
 * (jsonpos's keys, compose's anchors).
 *
 * Thread rule: none needed (no state; random bytes come from getrandom).
 */
#ifndef SBX_HASH_H
#define SBX_HASH_H

#include <stddef.h>

/*
 * SHA-256 of data into out.  libcrypto's own SHA-256 code, called without
 * its provider machinery: EVP's first digest in a process loads
 * openssl.cnf and the default provider, about 3 ms a process here, paid by
 * every command that writes an audit row.
 */
void sha256(const void *data, size_t len, unsigned char out[32]);

/* data's n bytes as 2n lowercase hex digits plus NUL, into out. */
void hex_encode(char *out, const void *data, size_t n);

/*
 * n bytes from getrandom(2) (the kernel's CSPRNG), into out.  A failure
 * is fatal: Linux >= 3.17 always has it, and sbxcat needs 5.6.
 */
void random_bytes(void *out, size_t n);

/* n random bytes as 2n lowercase hex digits plus NUL, into out; n <= 64. */
void random_hex(char *out, size_t n);

/* SHA-256 of data as 64 lowercase hex digits plus NUL, into out[65]. */
void sha256_hex(const void *data, size_t len, char out[65]);

/* HMAC-SHA256 (RFC 2104) of data under key, into out. */
void hmac_sha256(const void *key, size_t klen, const void *data, size_t len,
		 unsigned char out[32]);

/*
 * FNV-1a of a NUL-terminated string, for open-addressing tables of names
 * from one input file.  Not keyed: a file can collide its own names, which
 * costs it time bounded by its own size limit, and gains nothing else.
 */
size_t hash_str(const char *s);

#endif

/*
 * hash.c - SHA-256 through libcrypto, FNV-1a for tables (hash.h).
 */
#include "config.h"

#include <openssl/evp.h>
#include <stdint.h>

#include "alloc.h"
#include "hash.h"

void sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	static const char hex[] = "0123456789abcdef";

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
		die_oom(); /* only fails on allocation */
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

size_t hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

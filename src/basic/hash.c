/*
 * hash.c - SHA-256 and HMAC-SHA256 through libcrypto's SHA-256 functions,
 * FNV-1a for tables (hash.h).
 */
#include "config.h"

/* SHA256_Init and friends are deprecated in OpenSSL 3 in favour of EVP,
 * whose first use costs a process about 3 ms (hash.h); they remain, and
 * are the same code EVP runs in the end. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "basic/alloc.h"
#include "basic/hash.h"

void sha256(const void *data, size_t len, unsigned char out[32])
{
	SHA256_CTX c;

	if (!SHA256_Init(&c) || !SHA256_Update(&c, data, len) ||
	    !SHA256_Final(out, &c))
		die_bug("SHA-256 failed");
}

void hex_encode(char *out, const void *data, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b = data;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = '\0';
}

void sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[32];

	sha256(data, len, md);
	hex_encode(out, md, sizeof(md));
}

void hmac_sha256(const void *key, size_t klen, const void *data, size_t len,
		 unsigned char out[32])
{
	unsigned char k[SHA256_CBLOCK] = {0}, pad[SHA256_CBLOCK], inner[32];
	SHA256_CTX c;

	/* A key longer than a block is hashed first (RFC 2104, 2). */
	if (klen > sizeof(k))
		sha256(key, klen, k);
	else if (klen)
		memcpy(k, key, klen);
	for (size_t i = 0; i < sizeof(k); i++)
		pad[i] = k[i] ^ 0x36;
	if (!SHA256_Init(&c) || !SHA256_Update(&c, pad, sizeof(pad)) ||
	    !SHA256_Update(&c, data, len) || !SHA256_Final(inner, &c))
		die_bug("SHA-256 failed");
	for (size_t i = 0; i < sizeof(k); i++)
		pad[i] = k[i] ^ 0x5c;
	if (!SHA256_Init(&c) || !SHA256_Update(&c, pad, sizeof(pad)) ||
	    !SHA256_Update(&c, inner, sizeof(inner)) || !SHA256_Final(out, &c))
		die_bug("SHA-256 failed");
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(pad, sizeof(pad));
	OPENSSL_cleanse(&c, sizeof(c));
}

size_t hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

void random_bytes(void *out, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = getrandom((unsigned char *)out + got, n - got, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			die_bug("getrandom: %s", strerror(errno));
		got += (size_t)k;
	}
}

void random_hex(char *out, size_t n)
{
	unsigned char b[64];

	if (n > sizeof(b))
		die_bug("random_hex: %zu bytes", n);
	random_bytes(b, n);
	hex_encode(out, b, n);
	OPENSSL_cleanse(b, n);
}

/*
 * base64.c - RFC 4648 base64, strict (base64.h).
 */
#include "config.h"

#include <stdint.h>

#include "basic/alloc.h"
#include "basic/base64.h"

static const char alphabet[2][65] = {
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
};

void base64_encode(struct strbuf *out, const void *data, size_t len,
		   enum base64_alphabet a, bool pad)
{
	const unsigned char *t = data;
	const char *abc = alphabet[a];

	for (size_t i = 0; i < len; i += 3) {
		size_t left = len - i;
		uint32_t v = (uint32_t)t[i] << 16;

		if (left > 1)
			v |= (uint32_t)t[i + 1] << 8;
		if (left > 2)
			v |= t[i + 2];
		strbuf_addch(out, abc[v >> 18 & 63]);
		strbuf_addch(out, abc[v >> 12 & 63]);
		if (left > 1)
			strbuf_addch(out, abc[v >> 6 & 63]);
		else if (pad)
			strbuf_addch(out, '=');
		if (left > 2)
			strbuf_addch(out, abc[v & 63]);
		else if (pad)
			strbuf_addch(out, '=');
	}
}

/* The value of c in the alphabet, or -1. */
static int digit(char c, enum base64_alphabet a)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (a == BASE64_URL ? '-' : '+'))
		return 62;
	if (c == (a == BASE64_URL ? '_' : '/'))
		return 63;
	return -1;
}

int base64_decode(struct strbuf *out, const char *s, size_t len,
		  enum base64_alphabet a, bool pad, size_t *bad)
{
	size_t n = len, i;
	uint32_t acc = 0;
	int bits = 0;

	/* The digits: all but the padding, which only ends a quantum. */
	if (pad) {
		if (len % 4) {
			*bad = len;
			return -1;
		}
		while (n > 0 && len - n < 2 && s[n - 1] == '=')
			n--;
	} else if (len % 4 == 1) {
		*bad = len;
		return -1;
	}
	for (i = 0; i < n; i++) {
		int d = digit(s[i], a);

		if (d < 0) {
			*bad = i;
			return -1;
		}
		acc = (acc << 6 | (uint32_t)d) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			strbuf_addch(out, (int)(acc >> bits & 0xff));
		}
	}
	/* What encoding never writes: a lone digit, bits left set. */
	if (n % 4 == 1 || (acc & ((1u << bits) - 1))) {
		*bad = n ? n - 1 : 0;
		return -1;
	}
	return 0;
}

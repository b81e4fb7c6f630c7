/*
 * base64.h - RFC 4648 base64, in the standard alphabet (section 4) or the
 * URL-safe one (section 5), with padding or without.  The decoder is
 * strict: only the alphabet's characters, padding exactly as the encoder
 * writes it (or none), no whitespace, and the unused bits of the last
 * character zero, so a string decodes only when it is what encoding its
 * bytes gives.  Linear in its input, whatever the input.
 *
 * Thread rule: nothing is kept; any thread may call these at once.
 */
#ifndef SBX_BASE64_H
#define SBX_BASE64_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf;

enum base64_alphabet { BASE64_STD, BASE64_URL };

/* data[0..len) encoded, appended to out. */
void base64_encode(struct strbuf *out, const void *data, size_t len,
		   enum base64_alphabet a, bool pad);
/* s[0..len) decoded, appended to out: 0, or -1 with *bad the offset of
 * the first character that cannot be there (len when the length is
 * wrong); out then holds what came before it. */
int base64_decode(struct strbuf *out, const char *s, size_t len,
		  enum base64_alphabet a, bool pad, size_t *bad);

#endif

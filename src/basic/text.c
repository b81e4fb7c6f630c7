/*
 * text.c - UTF-8 validity, control characters, and untrusted text made safe
 * to print (see text.h).
 */
#include "config.h"

#include <string.h>

#include "basic/alloc.h"
#include "basic/text.h"

size_t utf8_decode(const char *str, size_t len, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t need;
	uint32_t c, min;

	if (len == 0)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xE0) == 0xC0) {
		need = 1, c = s[0] & 0x1F, min = 0x80;
	} else if ((s[0] & 0xF0) == 0xE0) {
		need = 2, c = s[0] & 0x0F, min = 0x800;
	} else if ((s[0] & 0xF8) == 0xF0) {
		need = 3, c = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len <= need)
		return 0;
	for (size_t k = 1; k <= need; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[k] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return need + 1;
}

long utf8_first_invalid(const char *s, size_t len)
{
	uint32_t cp;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_decode(s + i, len - i, &cp);
		if (n == 0)
			return (long)i;
		i += n;
	}
	return -1;
}

size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

size_t utf8_whole(const char *s, size_t len)
{
	size_t i = len, need;
	unsigned char c;

	/* Walk back over at most three continuation bytes to a lead byte. */
	while (i > 0 && len - i < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i == 0)
		return len;
	c = (unsigned char)s[i - 1];
	if (c < 0x80)
		return len;
	if ((c & 0xE0) == 0xC0)
		need = 2;
	else if ((c & 0xF0) == 0xE0)
		need = 3;
	else if ((c & 0xF8) == 0xF0)
		need = 4;
	else
		return len; /* not UTF-8 at all: leave it to the caller */
	return len - (i - 1) >= need ? len : i - 1;
}

size_t text_find_control(const char *s, size_t len, uint32_t *cp)
{
	size_t chars = 0;

	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t n = utf8_decode(s + i, len - i, &c);

		chars++;
		if (n == 0) {
			i++;
			continue;
		}
		if (text_is_control(c)) {
			*cp = c;
			return chars;
		}
		i += n;
	}
	return 0;
}

/*
 * The length of the escape sequence that starts at s[0..len) with the
 * introducer intro (ESC, or a C1 control of n bytes), so a display can drop
 * it whole.  String sequences (OSC, DCS, SOS, PM, APC) run to ST (ESC \ or
 * U+009C) or, for OSC, BEL; CSI runs to its final byte; a two-byte escape
 * takes one more character.  An unterminated sequence runs to the end: the
 * rest of a line after a broken escape is not worth showing.
 */
static size_t escape_len(const char *s, size_t len, uint32_t intro, size_t n)
{
	size_t i = n;
	uint32_t kind = intro;

	if (intro == 0x1B) {
		if (i >= len)
			return i;
		/* ESC [ is CSI, ESC ] OSC, ESC P DCS, ESC X SOS, ESC ^ PM,
		 * ESC _ APC: the 7-bit forms of the C1 introducers. */
		switch (s[i]) {
		case '[':
			kind = 0x9B;
			break;
		case ']':
			kind = 0x9D;
			break;
		case 'P':
			kind = 0x90;
			break;
		case 'X':
			kind = 0x98;
			break;
		case '^':
			kind = 0x9E;
			break;
		case '_':
			kind = 0x9F;
			break;
		default:
			/* Intermediate bytes, then one final byte. */
			while (i < len && (unsigned char)s[i] >= 0x20 &&
			       (unsigned char)s[i] <= 0x2F)
				i++;
			return i < len ? i + 1 : i;
		}
		i++;
	}
	if (kind == 0x9B) {
		while (i < len && !((unsigned char)s[i] >= 0x40 &&
				    (unsigned char)s[i] <= 0x7E))
			i++;
		return i < len ? i + 1 : i;
	}
	if (kind == 0x90 || kind == 0x98 || kind == 0x9D || kind == 0x9E ||
	    kind == 0x9F) {
		while (i < len) {
			if (s[i] == '\a' && kind == 0x9D)
				return i + 1;
			if (s[i] == 0x1B && i + 1 < len && s[i + 1] == '\\')
				return i + 2;
			if ((unsigned char)s[i] == 0xC2 && i + 1 < len &&
			    (unsigned char)s[i + 1] == 0x9C)
				return i + 2;
			i++;
		}
		return i;
	}
	return n;
}

void text_add_printable(struct strbuf *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t n = utf8_decode(s + i, len - i, &c);

		if (n == 0) {
			strbuf_addstr(out, "\xEF\xBF\xBD"); /* U+FFFD */
			i++;
			continue;
		}
		if (c == 0x1B || c == 0x9B || c == 0x9D || c == 0x90 ||
		    c == 0x98 || c == 0x9E || c == 0x9F) {
			i += escape_len(s + i, len - i, c, n);
			continue;
		}
		if (c == '\t')
			strbuf_addch(out, ' ');
		else if (!text_is_control(c) && !text_is_bidi(c))
			strbuf_add(out, s + i, n);
		i += n;
	}
}

void text_add_escaped(struct strbuf *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t n = utf8_decode(s + i, len - i, &c);

		if (n == 0) {
			strbuf_addf(out, "\\x%02x", (unsigned char)s[i]);
			i++;
			continue;
		}
		if (c == '\n')
			strbuf_addstr(out, "\\n");
		else if (c == '\r')
			strbuf_addstr(out, "\\r");
		else if (c == '\t')
			strbuf_addstr(out, "\\t");
		else if (c == '\\')
			strbuf_addstr(out, "\\\\");
		else if (c < 0x20 || c == 0x7F)
			strbuf_addf(out, "\\x%02x", (unsigned)c);
		else if (text_is_control(c) || text_is_bidi(c))
			strbuf_addf(out, "\\u%04x", (unsigned)c);
		else
			strbuf_add(out, s + i, n);
		i += n;
	}
}

const char *text_find(const char *hay, size_t len, const char *needle, size_t n)
{
	size_t w = n < 128 ? 256 : st_mult(n, 2), off = 0;

	if (n == 0)
		return hay;
	while (off + n <= len) {
		size_t span = len - off < w ? len - off : w;
		const char *p = memmem(hay + off, span, needle, n);

		if (p)
			return p;
		if (off + span >= len)
			break;
		off += span - (n - 1);
		if (w < (SIZE_MAX >> 2))
			w *= 2;
	}
	return NULL;
}

bool text_parse_uint(const char *s, unsigned long long max,
		     unsigned long long *out)
{
	unsigned long long x = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (*s < '0' || *s > '9' || x > (max - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*out = x;
	return true;
}

bool text_add_utf8_lossy(struct strbuf *out, const char *s, size_t len)
{
	bool lossy = false;

	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_decode(s + i, len - i, &cp);

		if (n == 0) {
			strbuf_addstr(out, "\xEF\xBF\xBD"); /* U+FFFD */
			lossy = true;
			i++;
			continue;
		}
		strbuf_add(out, s + i, n);
		i += n;
	}
	return lossy;
}

/* ---- text files ---- */

/* windows-1252's 0x80-0x9F (WHATWG): the five cp1252 leaves undefined
 * are the C1 controls of their own number, so every byte has one
 * character and no two bytes the same. */
static const uint16_t cp1252_high[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
    0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
};

static void add_cp(struct strbuf *out, uint32_t c)
{
	char b[4];

	if (c < 0x80) {
		strbuf_addch(out, (int)c);
		return;
	}
	if (c < 0x800) {
		b[0] = (char)(0xC0 | (c >> 6));
		b[1] = (char)(0x80 | (c & 0x3F));
		strbuf_add(out, b, 2);
	} else if (c < 0x10000) {
		b[0] = (char)(0xE0 | (c >> 12));
		b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		b[2] = (char)(0x80 | (c & 0x3F));
		strbuf_add(out, b, 3);
	} else {
		b[0] = (char)(0xF0 | (c >> 18));
		b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((c >> 6) & 0x3F));
		b[3] = (char)(0x80 | (c & 0x3F));
		strbuf_add(out, b, 4);
	}
}

enum text_encoding text_sniff(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	if (len >= 2 && u[0] == 0xFF && u[1] == 0xFE)
		return TEXT_UTF16LE;
	if (len >= 2 && u[0] == 0xFE && u[1] == 0xFF)
		return TEXT_UTF16BE;
	if (utf8_first_invalid(s, len) >= 0)
		return TEXT_SINGLE_BYTE;
	if (len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF)
		return TEXT_UTF8_BOM;
	return TEXT_UTF8;
}

const char *text_encoding_name(enum text_encoding enc)
{
	switch (enc) {
	case TEXT_UTF8:
		return "UTF-8";
	case TEXT_UTF8_BOM:
		return "UTF-8 with a byte order mark";
	case TEXT_UTF16LE:
		return "UTF-16LE";
	case TEXT_UTF16BE:
		return "UTF-16BE";
	case TEXT_SINGLE_BYTE:
		break;
	}
	return "windows-1252";
}

static void decode_utf16(struct strbuf *out, const unsigned char *u, size_t len,
			 bool be)
{
	size_t i = 2; /* past the byte order mark */

	while (i + 1 < len) {
		uint32_t c = be ? (uint32_t)(u[i] << 8 | u[i + 1])
				: (uint32_t)(u[i + 1] << 8 | u[i]);

		i += 2;
		if (c >= 0xD800 && c <= 0xDBFF && i + 1 < len) {
			uint32_t lo = be ? (uint32_t)(u[i] << 8 | u[i + 1])
					 : (uint32_t)(u[i + 1] << 8 | u[i]);

			if (lo >= 0xDC00 && lo <= 0xDFFF) {
				i += 2;
				add_cp(out, 0x10000 + ((c - 0xD800) << 10) +
						(lo - 0xDC00));
				continue;
			}
		}
		add_cp(out, c >= 0xD800 && c <= 0xDFFF ? 0xFFFD : c);
	}
	if (i < len)
		add_cp(out, 0xFFFD); /* an odd last byte */
}

void text_decode(struct strbuf *out, const char *s, size_t len,
		 enum text_encoding enc)
{
	const unsigned char *u = (const unsigned char *)s;

	switch (enc) {
	case TEXT_UTF8:
		strbuf_add(out, s, len);
		return;
	case TEXT_UTF8_BOM:
		strbuf_add(out, s + 3, len - 3);
		return;
	case TEXT_UTF16LE:
	case TEXT_UTF16BE:
		decode_utf16(out, u, len, enc == TEXT_UTF16BE);
		return;
	case TEXT_SINGLE_BYTE:
		break;
	}
	strbuf_grow(out, len);
	for (size_t i = 0; i < len; i++)
		add_cp(out, u[i] >= 0x80 && u[i] < 0xA0
				? cp1252_high[u[i] - 0x80]
				: u[i]);
}

/* The windows-1252 byte of c, or -1 when it has none. */
static int cp1252_byte(uint32_t c)
{
	if (c < 0x80 || (c >= 0xA0 && c <= 0xFF))
		return (int)c;
	for (int k = 0; k < 32; k++)
		if (cp1252_high[k] == c)
			return 0x80 + k;
	return -1;
}

bool text_encode(struct strbuf *out, const char *u, size_t len,
		 enum text_encoding enc)
{
	size_t keep = out->len;

	if (utf8_first_invalid(u, len) >= 0)
		return false;
	if (enc == TEXT_UTF8 || enc == TEXT_UTF8_BOM) {
		strbuf_add(out, u, len);
		return true;
	}
	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t n = utf8_decode(u + i, len - i, &c);
		unsigned char b[4];
		int k;

		i += n;
		if (enc == TEXT_SINGLE_BYTE) {
			k = cp1252_byte(c);
			if (k < 0) {
				strbuf_setlen(out, keep);
				return false;
			}
			strbuf_addch(out, k);
			continue;
		}
		if (c >= 0x10000) {
			uint32_t hi = 0xD800 + ((c - 0x10000) >> 10);
			uint32_t lo = 0xDC00 + ((c - 0x10000) & 0x3FF);

			b[0] = (unsigned char)(hi >> 8),
			b[1] = (unsigned char)hi;
			b[2] = (unsigned char)(lo >> 8),
			b[3] = (unsigned char)lo;
			k = 4;
		} else {
			b[0] = (unsigned char)(c >> 8), b[1] = (unsigned char)c;
			k = 2;
		}
		for (int j = 0; j < k; j += 2) {
			unsigned char pair[2] = {b[j], b[j + 1]};

			if (enc == TEXT_UTF16LE)
				pair[0] = b[j + 1], pair[1] = b[j];
			strbuf_add(out, pair, 2);
		}
	}
	return true;
}

char *text_quote_short(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	size_t len = strlen(s), cut = 0;

	for (size_t chars = 0; cut < len && chars < 60; chars++) {
		uint32_t cp;
		size_t n = utf8_decode(s + cut, len - cut, &cp);

		cut += n ? n : 1;
	}
	strbuf_addch(&sb, '\'');
	text_add_escaped(&sb, s, cut);
	if (cut < len)
		strbuf_addstr(&sb, "...");
	strbuf_addch(&sb, '\'');
	return strbuf_detach(&sb, NULL);
}

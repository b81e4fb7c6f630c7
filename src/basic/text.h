/*
 * text.h - the program's one definition of valid UTF-8 and of a control
 * character, and the two ways untrusted text is made safe to show.
 *
 * Text from a catalogue, a build, an image or a sandbox is hostile: it can
 * carry terminal escapes (ESC [ ..., or the single C1 byte CSI, U+009B),
 * line breaks that split one message into two, invalid UTF-8 that a
 * terminal resynchronises in its own way, and bidirectional overrides that
 * make a line read other than it is.  Everything that prints such text goes
 * through text_add_printable() (a display: controls removed) or
 * text_add_escaped() (a message that must show every byte: controls
 * escaped).  Both append to a strbuf the caller owns.
 *
 * Thread rule: none needed (no state).
 */
#ifndef SBX_TEXT_H
#define SBX_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strbuf;

/*
 * Decode the UTF-8 sequence at s[0..len): its length in bytes with *cp set,
 * or 0 when it is not valid UTF-8 (a stray continuation byte, a sequence
 * cut short, an overlong form, a surrogate, a code point past U+10FFFF).
 */
size_t utf8_decode(const char *s, size_t len, uint32_t *cp);

/* Offset of the first byte of s that does not start valid UTF-8, or -1. */
long utf8_first_invalid(const char *s, size_t len);

/* Number of code points in s (continuation bytes not counted). */
size_t utf8_chars(const char *s, size_t len);

/* The length of s[0..len) without a UTF-8 sequence cut short at its end. */
size_t utf8_whole(const char *s, size_t len);

/* Append s[0..len) with each byte that is not valid UTF-8 as U+FFFD
 * (NUL bytes kept); true when any was replaced. */
bool text_add_utf8_lossy(struct strbuf *out, const char *s, size_t len);

/*
 * Text files.  How a file's bytes are read as text (docs/serve.md,
 * "Text"), the way sandboxd reads them: a UTF-16 byte order mark
 * (FF FE, FE FF) makes it UTF-16 of that order; otherwise valid UTF-8 is
 * UTF-8 (a UTF-8 byte order mark, EF BB BF, not part of the text); any
 * other bytes are single-byte text, windows-1252 as the WHATWG Encoding
 * standard defines it (latin-1 but for 0x80-0x9F, which are the
 * typographic characters of cp1252, and the five bytes cp1252 leaves
 * undefined the C1 controls of the same number), a bijection of the 256
 * bytes onto 256 characters.  NUL bytes are text (U+0000).
 */
enum text_encoding {
	TEXT_UTF8,     /* valid UTF-8, no byte order mark: the bytes as is */
	TEXT_UTF8_BOM, /* valid UTF-8 after its byte order mark */
	TEXT_UTF16LE,
	TEXT_UTF16BE,
	TEXT_SINGLE_BYTE, /* windows-1252 */
};

/* How s[0..len) is read as text (above). */
enum text_encoding text_sniff(const char *s, size_t len);

/* The encoding's name for people ("UTF-8", "UTF-16LE", "windows-1252"). */
const char *text_encoding_name(enum text_encoding enc);

/*
 * Append s[0..len), read as enc, as UTF-8: a byte order mark dropped; in
 * UTF-16 an unpaired surrogate and an odd last byte as U+FFFD.  What is
 * appended is valid UTF-8 (it may hold U+0000), at most 3 bytes per byte
 * of s (windows-1252's U+20AC, three bytes, from one).
 */
void text_decode(struct strbuf *out, const char *s, size_t len,
		 enum text_encoding enc);

/*
 * Append the UTF-8 text u[0..len) encoded as enc (TEXT_UTF16LE/BE
 * without a byte order mark, TEXT_SINGLE_BYTE; TEXT_UTF8 and
 * TEXT_UTF8_BOM as is): false, with out as it was, when u is not valid
 * UTF-8 or holds a character enc cannot encode.  For every byte string
 * b, encoding text_decode(b, TEXT_SINGLE_BYTE) gives b back.
 */
bool text_encode(struct strbuf *out, const char *u, size_t len,
		 enum text_encoding enc);

/*
 * A control character: C0 (U+0000-U+001F), DEL (U+007F) and C1
 * (U+0080-U+009F).  C1 counts: U+009B is a CSI to many terminals and YAML
 * reads U+0085 as a line break.
 */
static inline bool text_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

/* A bidirectional embedding, override or isolate (U+202A-E, U+2066-9). */
static inline bool text_is_bidi(uint32_t cp)
{
	return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * The first control character of s: its position in characters (1-based)
 * with *cp set, or 0 when there is none.  An invalid byte counts as one
 * character and is not a control character (utf8_first_invalid finds it).
 */
size_t text_find_control(const char *s, size_t len, uint32_t *cp);

/*
 * Append s for a display: terminal escape sequences (ESC or C1 introduced:
 * CSI, OSC, DCS, SOS, PM, APC, and two-byte escapes) removed whole, a tab as
 * a space, every other control character and bidirectional control removed,
 * each byte that is not valid UTF-8 replaced by U+FFFD.  What is appended
 * is valid UTF-8 with no control character.
 */
void text_add_printable(struct strbuf *out, const char *s, size_t len);

/*
 * Append s for a one-line message: \n, \r, \t and \\ as such, other C0 and
 * DEL as \xNN, C1 and bidirectional controls as \uNNNN, each invalid byte
 * as \xNN.  What is appended is valid UTF-8 with no control character, and
 * distinct inputs give distinct outputs.
 */
void text_add_escaped(struct strbuf *out, const char *s, size_t len);
/* A value quoted for a message: in single quotes, escaped as
 * text_add_escaped escapes (so a message stays one line), cut after 60
 * characters with "..." (so a 10 kB string stays readable).  A new
 * string. */
char *text_quote_short(const char *s);

/*
 * memmem(hay, len, needle, n), in windows that start small and double
 * until the match (each overlapping the last by n - 1 bytes): the work of
 * a call is proportional to the distance to its match, not to what is
 * left of hay.  Finding every match of a 1-byte needle in 8 MiB is then
 * linear under AddressSanitizer too, whose memmem checks the whole
 * haystack on every call (quadratic: minutes where plain takes 0.2 s).
 */
const char *text_find(const char *hay, size_t len, const char *needle,
		      size_t n);

/*
 * s as a whole number: one or more ASCII digits and nothing else (no
 * sign, no blank; leading zeros allowed), at most max.  False for
 * anything else, *out then untouched; never overflows, however long s.
 */
bool text_parse_uint(const char *s, unsigned long long max,
		     unsigned long long *out);

#endif

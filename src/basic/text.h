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

/*
 * xjson.h - jansson the way sbxcat uses it: allocation through alloc.h,
 * packing that cannot fail quietly, and text and paths that always make a
 * JSON string.
 *
 * jansson reports a failed pack (a format that does not match its
 * arguments, a string that is not UTF-8) by returning NULL, and
 * json_array_append_new() and json_object_set_new() then drop the value
 * without a word: `check --json` once printed `[]` ("valid") for a file it
 * could not describe.  xjson_pack() treats that NULL as the bug it is.
 * Strings that are not known to be UTF-8 (paths, error messages that quote
 * them) go through xjson_text() or xjson_set_path() instead of "s".
 *
 * A path in JSON (every command, docs/sbxcat.1 "JSON"): the member KEY is
 * the path as a string when it is valid UTF-8.  Otherwise KEY holds the
 * path with each invalid byte replaced by U+FFFD, for people, and
 * KEY_base64 holds the exact bytes in base64 (RFC 4648, padded), for
 * programs: KEY_base64 is present exactly when KEY is not the path itself.
 *
 * Ownership as in jansson: every json_t * returned is a new reference.
 *
 * Thread rule: xjson_init() once, by main, before any other thread; then
 * any thread may use the rest.
 */
#ifndef SBX_XJSON_H
#define SBX_XJSON_H

#include <jansson.h>

/* Route jansson's allocations through xmalloc/free; call once, first. */
void xjson_init(void);

/* json_pack, or a fatal error naming the format and jansson's reason. */
json_t *xjson_pack(const char *fmt, ...);

/* A JSON string of s, which must be valid UTF-8 (catalogue values, which
 * the catalogue checked): a fatal error otherwise, never a silent NULL. */
json_t *xjson_string(const char *s);

/* A JSON string of s, each byte that is not valid UTF-8 as U+FFFD. */
json_t *xjson_text(const char *s);

/* A JSON string of data's bytes in base64 (RFC 4648, padded). */
json_t *xjson_base64(const void *data, size_t len);

/* Set obj[key] to path as the header says (and obj[key_base64]). */
void xjson_set_path(json_t *obj, const char *key, const char *path);

#endif

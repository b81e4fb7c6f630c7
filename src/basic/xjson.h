/*
 * xjson.h - jansson the way sbxcat uses it: allocation through alloc.h,
 * packing that cannot fail quietly, and text and paths that always make a
 * JSON string.
 *
 * jansson reports a failed pack (a format that does not match its
 * arguments, a string that is not UTF-8, a NULL "o") by returning NULL,
 * and json_array_append_new() and json_object_set_new() then drop the
 * value without a word: `check --json` once printed `[]` ("valid") for a
 * file it could not describe.  And a service must not end on what a
 * client or a workspace holds: a latin-1 file's text once reached
 * json_pack as "s" and the process aborted.  So xjson_pack() never
 * returns NULL and never ends the process on its arguments' contents: a
 * string that is not UTF-8 is packed with each invalid byte as U+FFFD,
 * a NULL "o" or "s" as null or "" (xjson.c, the pack walker).  Only a
 * format the code itself gets wrong (a literal in the source, which no
 * input reaches) is fatal.  Text known to come from outside (paths,
 * file contents, error messages that quote them) still goes through
 * xjson_text(), xjson_textn() or xjson_set_path() on purpose, so that
 * what it becomes is decided where it is made, not by the fallback.

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

/* json_pack, its strings made valid (above); fatal only on a format
 * that does not parse (a bug in the source). */
json_t *xjson_pack(const char *fmt, ...);

/* A JSON string of s, which should be valid UTF-8 (catalogue values,
 * which the catalogue checked); each invalid byte as U+FFFD if not. */
json_t *xjson_string(const char *s);

/* A JSON string of s, each byte that is not valid UTF-8 as U+FFFD. */
json_t *xjson_text(const char *s);

/* The same of s[0..len), which may hold NUL bytes (kept: U+0000). */
json_t *xjson_textn(const char *s, size_t len);

/* A JSON string of data's bytes in base64 (RFC 4648, padded). */
json_t *xjson_base64(const void *data, size_t len);

/* Set obj[key] to path as the header says (and obj[key_base64]). */
void xjson_set_path(json_t *obj, const char *key, const char *path);

#endif

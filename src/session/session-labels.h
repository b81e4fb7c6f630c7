/*
 * session-labels.h - a session's labels (docs/sessions.md, "Labels"):
 * KEY=VALUE pairs a caller attaches at open, kept in sbxcat's record
 * (never on the container) and given back exactly by show, ls and the
 * service's SessionInfo.
 *
 * Bounds, because every label comes from a client: a key is 1 to 63
 * bytes of [A-Za-z0-9._/-], the first a letter or a digit, and never in
 * sbxcat's own namespace (SESSION_LABEL_RESERVED, any case: the
 * container labels sbxcat sets); a value is 0 to 256 bytes of valid
 * UTF-8 without a control character (text.h: C0, DEL, C1) or a
 * bidirectional control; at most 32 labels, each key once.
 *
 * Ownership: a struct session_labels owns its strings (kept sorted by
 * key); session_labels_release frees them.  session_labels_json returns
 * a new reference.  Thread rule: none kept; a set belongs to one thread.
 */
#ifndef SBX_SESSION_LABELS_H
#define SBX_SESSION_LABELS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct sbx_error;

#define SESSION_LABELS_MAX 32
#define SESSION_LABEL_KEY_MAX 63
#define SESSION_LABEL_VALUE_MAX 256
/* The prefix of sbxcat's own container labels (session.h's
 * SESSION_LABEL_*, the deployment's): refused in a user's key. */
#define SESSION_LABEL_RESERVED "io.sbxcat"

struct session_labels {
	char **keys, **values;
	size_t n;
};
#define SESSION_LABELS_INIT                                                    \
	{                                                                      \
		NULL, NULL, 0                                                  \
	}

void session_labels_init(struct session_labels *l);
void session_labels_release(struct session_labels *l);
/* dst (released first) becomes a copy of src. */
void session_labels_copy(struct session_labels *dst,
			 const struct session_labels *src);
bool session_labels_equal(const struct session_labels *a,
			  const struct session_labels *b);

/* NULL when acceptable, else a static message saying what is wrong. */
const char *session_label_check_key(const char *key);
const char *session_label_check_value(const char *value, size_t len);

/*
 * Add key=value (checked as above; len is value's length, which must
 * hold no NUL): invalid, naming the label, when either is wrong, the key
 * is already there, or the set is full.
 */
int session_labels_add(struct session_labels *l, const char *key,
		       const char *value, size_t len, struct sbx_error **err);
/* Add one "KEY=VALUE" (the first '=' splits; VALUE may be empty). */
int session_labels_parse(struct session_labels *l, const char *arg,
			 struct sbx_error **err);
/* Add every member of a JSON object of strings (NULL or null: none);
 * invalid, naming the label, for anything else. */
int session_labels_from_json(struct session_labels *l, const json_t *obj,
			     struct sbx_error **err);
/* {KEY: VALUE, ...}, a new reference. */
json_t *session_labels_json(const struct session_labels *l);

#endif

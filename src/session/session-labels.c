/*
 * session-labels.c - a session's labels (session-labels.h): the checks
 * of a key and a value, the sorted set, and its JSON both ways.  Every
 * label is a client's, so each one is bounded and checked before it is
 * kept, and again when a record is read back.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"
#include "session/session-labels.h"

void session_labels_init(struct session_labels *l)
{
	memset(l, 0, sizeof(*l));
}

void session_labels_release(struct session_labels *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->keys[i]);
		free(l->values[i]);
	}
	free(l->keys);
	free(l->values);
	session_labels_init(l);
}

void session_labels_copy(struct session_labels *dst,
			 const struct session_labels *src)
{
	session_labels_release(dst);
	if (!src->n)
		return;
	dst->keys = xcalloc(src->n, sizeof(*dst->keys));
	dst->values = xcalloc(src->n, sizeof(*dst->values));
	for (size_t i = 0; i < src->n; i++) {
		dst->keys[i] = xstrdup(src->keys[i]);
		dst->values[i] = xstrdup(src->values[i]);
	}
	dst->n = src->n;
}

bool session_labels_equal(const struct session_labels *a,
			  const struct session_labels *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->keys[i], b->keys[i]) != 0 ||
		    strcmp(a->values[i], b->values[i]) != 0)
			return false;
	return true;
}

static bool key_char(char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '.' || c == '_' || c == '/' || c == '-');
}

const char *session_label_check_key(const char *key)
{
	size_t len = strlen(key);
	size_t rlen = strlen(SESSION_LABEL_RESERVED);

	if (len == 0)
		return "a label's key is empty";
	if (len > SESSION_LABEL_KEY_MAX)
		return "a label's key is longer than 63 bytes";
	for (size_t i = 0; i < len; i++)
		if (!key_char(key[i], i == 0))
			return "a label's key is [A-Za-z0-9._/-], starting "
			       "with a letter or a digit";
	/* Any case: io.SBXCAT.tenant reads as sbxcat's own to a person. */
	if (strncasecmp(key, SESSION_LABEL_RESERVED, rlen) == 0 &&
	    (key[rlen] == '\0' || key[rlen] == '.' || key[rlen] == '/' ||
	     key[rlen] == '-' || key[rlen] == '_'))
		return "keys in 'io.sbxcat' are sbxcat's own labels";
	return NULL;
}

const char *session_label_check_value(const char *value, size_t len)
{
	uint32_t cp;

	if (len > SESSION_LABEL_VALUE_MAX)
		return "a label's value is longer than 256 bytes";
	if (memchr(value, '\0', len))
		return "a label's value holds a NUL";
	if (utf8_first_invalid(value, len) >= 0)
		return "a label's value is not valid UTF-8";
	if (text_find_control(value, len, &cp))
		return "a label's value holds a control character";
	for (size_t i = 0; i < len;) {
		size_t n = utf8_decode(value + i, len - i, &cp);

		if (text_is_bidi(cp))
			return "a label's value holds a bidirectional control";
		i += n;
	}
	return NULL;
}

/* The label named in an error: escaped, cut to what a line can hold. */
static int label_error(struct sbx_error **err, const char *key, const char *why)
{
	struct strbuf sb = STRBUF_INIT;
	size_t len = strlen(key);

	text_add_escaped(&sb, key, len > 80 ? 80 : len);
	if (len > 80)
		strbuf_addstr(&sb, "...");
	sbx_error_set(err, SBX_E_INVALID, 0, "label '%s': %s", strbuf_str(&sb),
		      why);
	strbuf_release(&sb);
	return -1;
}

int session_labels_add(struct session_labels *l, const char *key,
		       const char *value, size_t len, struct sbx_error **err)
{
	const char *why = session_label_check_key(key);
	size_t at = 0;

	if (!why)
		why = session_label_check_value(value, len);
	if (why)
		return label_error(err, key, why);
	while (at < l->n && strcmp(l->keys[at], key) < 0)
		at++;
	if (at < l->n && strcmp(l->keys[at], key) == 0)
		return label_error(err, key, "given twice");
	if (l->n >= SESSION_LABELS_MAX)
		return label_error(err, key, "a session has at most 32 labels");
	l->keys = xrealloc(l->keys, st_mult(l->n + 1, sizeof(*l->keys)));
	l->values = xrealloc(l->values, st_mult(l->n + 1, sizeof(*l->values)));
	memmove(l->keys + at + 1, l->keys + at, (l->n - at) * sizeof(*l->keys));
	memmove(l->values + at + 1, l->values + at,
		(l->n - at) * sizeof(*l->values));
	l->keys[at] = xstrdup(key);
	l->values[at] = xstrndup(value, len);
	l->n++;
	return 0;
}

int session_labels_parse(struct session_labels *l, const char *arg,
			 struct sbx_error **err)
{
	const char *eq = strchr(arg, '=');
	cleanup_free char *key = NULL;

	if (!eq)
		return label_error(err, arg, "not KEY=VALUE");
	key = xstrndup(arg, (size_t)(eq - arg));
	return session_labels_add(l, key, eq + 1, strlen(eq + 1), err);
}

int session_labels_from_json(struct session_labels *l, const json_t *obj,
			     struct sbx_error **err)
{
	const char *k;
	json_t *v;

	if (!obj || json_is_null(obj))
		return 0;
	if (!json_is_object(obj))
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "labels are not an object of strings");
	if (json_object_size(obj) > SESSION_LABELS_MAX)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "a session has at most 32 labels, not %zu",
				     json_object_size(obj));
	/* jansson's iteration does not change the object: the cast is for
	 * its macro's signature only. */
	json_object_foreach((json_t *)obj, k, v)
	{
		if (!json_is_string(v))
			return label_error(err, k, "its value is not a string");
		if (strlen(k) > SESSION_LABEL_KEY_MAX)
			return label_error(err, k,
					   "a label's key is longer "
					   "than 63 bytes");
		if (session_labels_add(l, k, json_string_value(v),
				       json_string_length(v), err) < 0)
			return -1;
	}
	return 0;
}

json_t *session_labels_json(const struct session_labels *l)
{
	json_t *o = json_object();

	for (size_t i = 0; i < l->n; i++)
		json_object_set_new(o, l->keys[i], json_string(l->values[i]));
	return o;
}

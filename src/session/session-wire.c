/*
 * session-wire.c - ROOT/KEY/wire.json: a session's id on the service's
 * wire and its tokens' hashes (session-wire.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "session/session-layout.h"
#include "session/session-wire.h"

#define WIRE_NAME "wire.json"
#define WIRE_MAX 4096

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

bool session_wire_id_valid(const char *s)
{
	size_t n;

	if (!s || !is_alnum(s[0]))
		return false;
	for (n = 1; s[n]; n++)
		if (n >= SESSION_WIRE_ID_MAX ||
		    !(is_alnum(s[n]) || s[n] == '.' || s[n] == '_' ||
		      s[n] == '-'))
			return false;
	return true;
}

static bool is_hash(const char *s)
{
	size_t n;

	for (n = 0; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') ||
		      (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == SESSION_WIRE_HASH_HEX;
}

/* An agent or run id as the file may hold one: 1 to SESSION_WIRE_WHO_MAX
 * bytes of UTF-8 without a control character (svc/ checked it fully
 * before it was written). */
static bool who_valid(const char *s)
{
	size_t n = strlen(s);
	uint32_t cp;

	return n && n <= SESSION_WIRE_WHO_MAX && utf8_first_invalid(s, n) < 0 &&
	       !text_find_control(s, n, &cp);
}

/* The optional "agent" or "run" of the file into out: false when it is
 * there and not one. */
static bool who_parse(json_t *j, const char *name, char *out, size_t *seen)
{
	json_t *v = json_object_get(j, name);

	if (!v)
		return true;
	(*seen)++;
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v) ||
	    !who_valid(json_string_value(v)))
		return false;
	strcpy(out, json_string_value(v));
	return true;
}

static int wire_parse(const char *data, size_t len, struct session_wire *w)
{
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *id, *tokens, *v;
	size_t i, keys = 2;
	int rc = -1;

	memset(w, 0, sizeof(*w));
	if (!j || !json_is_object(j))
		goto out;
	id = json_object_get(j, "id");
	tokens = json_object_get(j, "tokens");
	if (!json_is_string(id) || !session_wire_id_valid(json_string_value(id)) ||
	    !json_is_array(tokens) || json_array_size(tokens) > SESSION_WIRE_TOKENS)
		goto out;
	if (!who_parse(j, "agent", w->agent, &keys) ||
	    !who_parse(j, "run", w->run, &keys) || json_object_size(j) != keys)
		goto out;
	strcpy(w->id, json_string_value(id));
	json_array_foreach(tokens, i, v)
	{
		if (!json_is_string(v) || !is_hash(json_string_value(v)))
			goto out;
		strcpy(w->tokens[w->ntokens++], json_string_value(v));
	}
	rc = 0;
out:
	json_decref(j);
	return rc;
}

static int wire_read_at(struct session_root *r, int kfd, const char *key,
			struct session_wire *w, struct sbx_error **err)
{
	cleanup_free char *path = xasprintf("%s/%s/" WIRE_NAME, r->path, key);
	cleanup_free char *data = NULL;
	size_t len;
	int fd = openat(kfd, WIRE_NAME,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	int rc;

	memset(w, 0, sizeof(*w));
	if (fd < 0 && errno == ENOENT) {
		sbx_error_set(err, SBX_E_NOT_FOUND, ENOENT,
			      "session '%s' has no id on the service", key);
		return -1;
	}
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", path);
	rc = read_fd_limited(fd, path, WIRE_MAX, &data, &len, err);
	close(fd);
	if (rc < 0)
		return session_set_kind(err, SBX_E_UNAVAILABLE);
	if (wire_parse(data, len, w) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s' is not the service's record of a "
				     "session",
				     path);
	return 0;
}

static int wire_write_at(struct session_root *r, int kfd, const char *key,
			 const struct session_wire *w, struct sbx_error **err)
{
	cleanup_free char *dir = xasprintf("%s/%s", r->path, key);
	json_t *tokens = json_array();
	json_t *j;
	char *text;
	size_t i;
	int rc;

	for (i = 0; i < w->ntokens; i++)
		json_array_append_new(tokens, xjson_string(w->tokens[i]));
	j = xjson_pack("{s:s, s:o}", "id", w->id, "tokens", tokens);
	/* Absent when none: a file without them is the older form. */
	if (w->agent[0])
		json_object_set_new(j, "agent", xjson_string(w->agent));
	if (w->run[0])
		json_object_set_new(j, "run", xjson_string(w->run));
	text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(j);
	if (!text)
		die_oom();
	rc = write_file_atomic_at(kfd, dir, WIRE_NAME, text, strlen(text), 0600,
				  err);
	free(text);
	return rc;
}

int session_wire_read(struct session_root *r, const char *key,
		      struct session_wire *w, struct sbx_error **err)
{
	int kfd = session_keydir_open(r, key, err);
	int rc;

	memset(w, 0, sizeof(*w));
	if (kfd < 0)
		return -1;
	rc = wire_read_at(r, kfd, key, w, err);
	close(kfd);
	return rc;
}

/* The default of a session from what an open gave (NULL: not given). */
static void who_set(char *dst, const char *given, bool was_open)
{
	if (given)
		snprintf(dst, SESSION_WIRE_WHO_MAX + 1, "%s", given);
	else if (!was_open)
		dst[0] = '\0';
}

int session_wire_add_token(struct session_root *r, const char *key,
			   const char *id, const char *hash, const char *agent,
			   const char *run, struct sbx_error **err)
{
	struct session_wire w;
	int kfd = session_keydir_open(r, key, err);
	int rc = -1;

	if (kfd < 0)
		return -1;
	if (!session_wire_id_valid(id) || !is_hash(hash) ||
	    (agent && !who_valid(agent)) || (run && !who_valid(run))) {
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "not a session id, token "
			      "hash, agent or run");
		goto out;
	}
	if (session_lock_wait(r, kfd, r->path, key, err) < 0)
		goto out;
	if (wire_read_at(r, kfd, key, &w, err) < 0) {
		if ((*err)->errnum != ENOENT)
			goto out;
		sbx_error_free(err);
		memset(&w, 0, sizeof(w));
		strcpy(w.id, id);
	} else if (strcmp(w.id, id) != 0) {
		sbx_error_set(err, SBX_E_CONFLICT, 0,
			      "session '%s' has another id on the service", key);
		goto out;
	}
	who_set(w.agent, agent, w.ntokens > 0);
	who_set(w.run, run, w.ntokens > 0);
	if (w.ntokens == SESSION_WIRE_TOKENS) {
		memmove(w.tokens[0], w.tokens[1],
			sizeof(w.tokens[0]) * (SESSION_WIRE_TOKENS - 1));
		w.ntokens--;
	}
	strcpy(w.tokens[w.ntokens++], hash);
	rc = wire_write_at(r, kfd, key, &w, err);
out:
	close(kfd); /* the flock goes with it */
	return rc;
}

int session_wire_drop_tokens(struct session_root *r, const char *key,
			     bool locked, struct sbx_error **err)
{
	struct session_wire w;
	int kfd = session_keydir_open(r, key, err);
	int rc = -1;

	if (kfd < 0)
		return -1;
	if (!locked && session_lock_wait(r, kfd, r->path, key, err) < 0)
		goto out;
	if (wire_read_at(r, kfd, key, &w, err) < 0) {
		if ((*err)->errnum == ENOENT) {
			sbx_error_free(err);
			rc = 0;
		}
		goto out;
	}
	rc = 0;
	if (w.ntokens) {
		w.ntokens = 0;
		rc = wire_write_at(r, kfd, key, &w, err);
	}
out:
	close(kfd);
	return rc;
}

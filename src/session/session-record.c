/*
 * session-record.c - sbxcat's record of a session, ROOT/KEY/session.json
 * (session.h): read and checked member by member, written atomically
 * under ROOT/KEY's flock, stamped; and session_find, the tenant rule of
 * every operation on a session.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "basic/xjson.h"
#include "catalog/catalog.h"
#include "session/session-layout.h"
#include "session/session.h"

#define RECORD_MAX (64 * 1024)
/* Version 1 had no workspace member: its workspace is KEY/workspace.
 * Version 2 had no labels nor durability: none, and persistent.
 * Version 4 is 3 with a work_dir member: a record without one is still
 * written as version 3, so an older sbxcat reads it. */
#define RECORD_VERSION 4
/* Year 9999: a time past it in a record is not a time. */
#define TIME_MAX 253402300799LL

/* ---- records ---- */

void session_record_release(struct session_record *r)
{
	free(r->tenant);
	free(r->scope);
	free(r->runtime);
	free(r->image);
	free(r->container);
	free(r->workspace);
	free(r->work_dir);
	session_labels_release(&r->labels);
	memset(r, 0, sizeof(*r));
}

const char *session_durability_name(enum session_durability d)
{
	return d == SESSION_EPHEMERAL ? "ephemeral" : "persistent";
}

const char *session_work_dir(const struct session_config *c,
			     const struct session_record *rec)
{
	return rec && rec->work_dir ? rec->work_dir : c->work_dir;
}

int session_durability_parse(const char *s, enum session_durability *d)
{
	if (strcmp(s, "persistent") == 0)
		*d = SESSION_PERSISTENT;
	else if (strcmp(s, "ephemeral") == 0)
		*d = SESSION_EPHEMERAL;
	else
		return -1;
	return 0;
}

static bool is_container_id(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* What is wrong with a record (static or allocated into *msg), or NULL. */
static const char *record_problem(const struct session_record *rec, char **msg)
{
	*msg = NULL;
	if (!session_key_valid(rec->key))
		return "'key' is not a session key";
	if (!rec->tenant || session_check_tenant(rec->tenant))
		return "'tenant' is not a tenant";
	if (!rec->scope || session_check_scope(rec->scope))
		return "'scope' is not a scope";
	if (!rec->runtime || (*msg = catalog_check_alias(rec->runtime)))
		return "'runtime' is not a runtime alias";
	if (!rec->image || (*msg = catalog_check_image_ref(rec->image)))
		return "'image' is not an image reference";
	if (rec->container && !is_container_id(rec->container))
		return "'container' is not a container id";
	if (rec->workspace &&
	    !session_workspace_rel_valid(rec->workspace, rec->key))
		return "'workspace' is neither KEY/workspace nor a pool's "
		       "workspace";
	if (rec->created < 0 || rec->created > TIME_MAX ||
	    rec->last_activity < 0 || rec->last_activity > TIME_MAX)
		return "'created' or 'last_activity' is not a time";
	if (rec->work_dir && session_check_work_dir(rec->work_dir))
		return "'work_dir' is not a work dir";
	return NULL;
}

static int record_parse(const char *data, size_t len, const char *key,
			struct session_record *rec, const char **why)
{
	json_error_t jerr;
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	json_t *v = NULL;
	const char *name = NULL;
	char *msg = NULL;
	json_int_t version = 0;
	unsigned seen = 0;
	bool has_labels = false, has_durability = false;
	struct sbx_error *lerr = NULL;

	memset(rec, 0, sizeof(*rec));
	*why = "not JSON";
	if (!j)
		return -1;
	*why = "not an object of the members of a record";
	if (!json_is_object(j))
		goto fail;
	json_object_foreach(j, name, v)
	{
		char **str = NULL;
		long long *num = NULL;

		seen++; /* duplicates are refused: 10 members are all 10 */
		if (strcmp(name, "version") == 0 && json_is_integer(v))
			version = json_integer_value(v);
		else if (strcmp(name, "key") == 0 && json_is_string(v) &&
			 json_string_length(v) <= SESSION_KEY_MAX)
			strcpy(rec->key, json_string_value(v));
		else if (strcmp(name, "tenant") == 0)
			str = &rec->tenant;
		else if (strcmp(name, "scope") == 0)
			str = &rec->scope;
		else if (strcmp(name, "runtime") == 0)
			str = &rec->runtime;
		else if (strcmp(name, "image") == 0)
			str = &rec->image;
		else if (strcmp(name, "container") == 0 && !json_is_null(v))
			str = &rec->container;
		else if (strcmp(name, "workspace") == 0)
			str = &rec->workspace;
		else if (strcmp(name, "work_dir") == 0)
			str = &rec->work_dir;
		else if (strcmp(name, "created") == 0)
			num = &rec->created;
		else if (strcmp(name, "last_activity") == 0)
			num = &rec->last_activity;
		else if (strcmp(name, "labels") == 0 && json_is_object(v)) {
			has_labels = true;
			/* Checked as an open checks them: a record is root's,
			 * but what it holds came from a client. */
			if (session_labels_from_json(&rec->labels, v, &lerr) <
			    0) {
				sbx_error_free(&lerr);
				*why = "'labels' are not labels";
				goto fail;
			}
		} else if (strcmp(name, "durability") == 0 &&
			   json_is_string(v)) {
			has_durability = true;
			if (session_durability_parse(json_string_value(v),
						     &rec->durability) < 0) {
				*why = "'durability' is neither persistent "
				       "nor ephemeral";
				goto fail;
			}
		} else if (strcmp(name, "container") != 0)
			goto fail;
		if (str) {
			/* A string with a NUL inside is no field of ours. */
			if (!json_is_string(v) ||
			    strlen(json_string_value(v)) !=
				json_string_length(v))
				goto fail;
			*str = xstrdup(json_string_value(v));
		}
		if (num) {
			if (!json_is_integer(v))
				goto fail;
			*num = json_integer_value(v);
		}
	}
	*why = "not of version 1, 2, 3 or 4";
	if (version < 1 || version > RECORD_VERSION)
		goto fail;
	*why = "missing a member";
	if (seen != (version == 1   ? 9u
		     : version == 2 ? 10u
		     : version == 3 ? 12u
				    : 13u) ||
	    (version >= 4) != (rec->work_dir != NULL) ||
	    (version >= 2) != (rec->workspace != NULL) ||
	    (version >= 3) != has_labels || (version >= 3) != has_durability)
		goto fail;
	*why = record_problem(rec, &msg);
	free(msg);
	if (*why)
		goto fail;
	*why = "for another key";
	if (strcmp(rec->key, key) != 0)
		goto fail;
	if (!rec->workspace)
		rec->workspace = xasprintf("%s/" WORKSPACE_NAME, rec->key);
	json_decref(j);
	return 0;
fail:
	json_decref(j);
	session_record_release(rec);
	return -1;
}

static int record_read_at(struct session_root *r, int kfd, const char *key,
			  struct session_record *rec, struct sbx_error **err)
{
	cleanup_free char *path = xasprintf("%s/%s/" RECORD_NAME, r->path, key);
	cleanup_free char *data = NULL;
	const char *why;
	size_t len;
	int fd =
	    openat(kfd, RECORD_NAME,
		   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	int rc;

	memset(rec, 0, sizeof(*rec));
	if (fd < 0 && errno == ENOENT)
		return session_no_session(key, err);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", path);
	rc = read_fd_limited(fd, path, RECORD_MAX, &data, &len, err);
	close(fd);
	if (rc < 0)
		return session_set_kind(err, SBX_E_UNAVAILABLE);
	if (record_parse(data, len, key, rec, &why) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s' is not a session record: %s", path,
				     why);
	return 0;
}

int session_record_read(struct session_root *r, const char *key,
			struct session_record *rec, struct sbx_error **err)
{
	int kfd = session_keydir_open(r, key, err);
	int rc;

	memset(rec, 0, sizeof(*rec));
	if (kfd < 0)
		return -1;
	rc = record_read_at(r, kfd, key, rec, err);
	close(kfd);
	return rc;
}

static int record_write_at(struct session_root *r, int kfd,
			   const struct session_record *rec,
			   struct sbx_error **err)
{
	cleanup_free char *dir = xasprintf("%s/%s", r->path, rec->key);
	cleanup_free char *msg = NULL;
	const char *why = record_problem(rec, &msg);
	struct strbuf sb = STRBUF_INIT;
	json_t *j;
	char *text;
	int rc;

	if (why)
		return sbx_error_set(
		    err, SBX_E_INVALID, 0, "cannot record session '%s': %s%s%s",
		    rec->key, why, msg ? ": " : "", msg ? msg : "");
	cleanup_free char *ws = rec->workspace
				    ? xstrdup(rec->workspace)
				    : xasprintf("%s/" WORKSPACE_NAME, rec->key);
	j = xjson_pack(
	    "{s:i, s:s, s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:s, "
	    "s:o, s:s}",
	    "version", rec->work_dir ? RECORD_VERSION : 3, "key", rec->key,
	    "tenant", rec->tenant, "scope", rec->scope, "runtime", rec->runtime,
	    "image", rec->image, "container",
	    rec->container ? xjson_string(rec->container) : json_null(),
	    "created", (json_int_t)rec->created, "last_activity",
	    (json_int_t)rec->last_activity, "workspace", ws, "labels",
	    session_labels_json(&rec->labels), "durability",
	    session_durability_name(rec->durability));
	if (rec->work_dir)
		json_object_set_new(j, "work_dir", xjson_string(rec->work_dir));
	text = json_dumps(j, JSON_SORT_KEYS);
	json_decref(j);
	if (!text)
		die_oom();
	strbuf_addstr(&sb, text);
	strbuf_addch(&sb, '\n');
	free(text);
	rc = write_file_atomic_at(kfd, dir, RECORD_NAME, sb.buf, sb.len, 0600,
				  err);
	strbuf_release(&sb);
	return rc;
}

int session_record_write(struct session_root *r,
			 const struct session_record *rec,
			 struct sbx_error **err)
{
	int kfd = session_keydir_open(r, rec->key, err);
	int rc;

	if (kfd < 0)
		return -1;
	rc = session_lock_wait(r, kfd, r->path, rec->key, err);
	if (rc == 0)
		rc = record_write_at(r, kfd, rec, err);
	close(kfd);
	return rc;
}

int session_record_touch(struct session_root *r, const char *key,
			 struct sbx_error **err)
{
	return session_record_stamp(r, key, NULL, err);
}

int session_record_stamp(struct session_root *r, const char *key,
			 long long *stamp, struct sbx_error **err)
{
	struct session_record rec;
	int kfd = session_keydir_open(r, key, err);
	int rc;

	if (kfd < 0)
		return -1;
	rc = session_lock_wait(r, kfd, r->path, key, err);
	if (rc == 0)
		rc = record_read_at(r, kfd, key, &rec, err);
	if (rc == 0) {
		long long now = (long long)time(NULL);

		/* Stamped this second already: nothing to write (many fs
		 * calls a second would each cost two fsyncs). */
		if (rec.last_activity != now) {
			rec.last_activity = now;
			rc = record_write_at(r, kfd, &rec, err);
		}
		if (stamp)
			*stamp = rec.last_activity;
		session_record_release(&rec);
	}
	close(kfd);
	return rc;
}

int session_find(struct session_root *root, const char *key, const char *tenant,
		 struct session_record *rec, struct sbx_error **err)
{
	memset(rec, 0, sizeof(*rec));
	if (session_key_valid(key) &&
	    session_record_read(root, key, rec, err) < 0 &&
	    (*err)->errnum != ENOENT)
		return -1; /* a record that cannot be read: not "no session" */
	if (!session_key_valid(key) || *err ||
	    (tenant && strcmp(rec->tenant, tenant) != 0)) {
		struct strbuf sb = STRBUF_INIT;

		/* Another tenant's session reads exactly like none. */
		sbx_error_free(err);
		session_record_release(rec);
		text_add_escaped(&sb, key, strlen(key));
		sbx_error_set(err, SBX_E_NOT_FOUND, 0, "no session '%s'",
			      strbuf_str(&sb));
		(*err)->errnum = ENOENT;
		sbx_error_reason(*err, "no such session");
		strbuf_release(&sb);
		return -1;
	}
	return 0;
}

/*
 * session-pool.c - the warm pool on the host (session.h): the workspaces
 * of pooled containers, ROOT/.sbxcat-ws/ID, and the pool's entries,
 * ROOT/.sbxcat-pool/ID.json, one per container ready to be claimed.
 *
 * An entry is taken (removed) under the quota lock by the open that
 * claims its container, so a container is claimed at most once; nothing
 * ever writes an entry for a container that was claimed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/xjson.h"
#include "catalog/catalog.h"
#include "session/session-layout.h"
#include "session/session.h"
#include "workspace/tree.h"

#define ENTRY_MAX (16 * 1024)

void session_pool_entry_release(struct session_pool_entry *e)
{
	free(e->runtime);
	free(e->image);
	free(e->container);
	free(e->work_dir);
	memset(e, 0, sizeof(*e));
}

void session_pool_new_id(char id[SESSION_POOL_ID_LEN + 1])
{
	static const char digits[] = "abcdefghijklmnopqrstuvwxyz234567";
	unsigned char b[SESSION_POOL_ID_LEN];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (errno != EINTR)
			die_oom(); /* no randomness: nothing safe to do */
	}
	for (size_t i = 0; i < SESSION_POOL_ID_LEN; i++)
		id[i] = digits[b[i] & 31];
	id[SESSION_POOL_ID_LEN] = '\0';
}

/* ---- workspaces ---- */

int session_pool_ws_make(struct session_root *r, unsigned long uid,
			 const char *id, struct sbx_error **err)
{
	int dir = session_private_dir(r, POOL_WS_NAME, true, err), fd, e;

	if (dir < 0)
		return -1;
	if (mkdirat(dir, id, 0755) < 0) {
		e = errno;
		close(dir);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot make '%s/" POOL_WS_NAME "/%s'",
				     r->path, id);
	}
	fd = openat(dir, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, (uid_t)uid, (gid_t)uid) < 0 ||
	    fchmod(fd, 0755) < 0 || fsync(dir) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		unlinkat(dir, id, AT_REMOVEDIR);
		close(dir);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot give '%s/" POOL_WS_NAME
				     "/%s' to uid %lu",
				     r->path, id, uid);
	}
	close(fd);
	close(dir);
	return 0;
}

int session_pool_ws_fresh(struct session_root *r, const char *id,
			  unsigned long uid, struct sbx_error **err)
{
	int dir = session_private_dir(r, POOL_WS_NAME, false, err), fd;
	struct stat st;
	struct dirent *de;
	DIR *d;
	bool empty = true;

	if (dir < 0)
		return -1;
	fd = openat(dir, id,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	close(dir);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot open '%s/" POOL_WS_NAME "/%s'",
				     r->path, id);
	}
	d = tree_dir_of(fd);
	if (!d)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read '%s/" POOL_WS_NAME "/%s'",
				     r->path, id);
	while (empty && (de = readdir(d)))
		empty = tree_dot_or_dotdot(de->d_name);
	closedir(d);
	if (!empty || st.st_uid != (uid_t)uid || st.st_gid != (gid_t)uid ||
	    (st.st_mode & 07777) != 0755)
		return sbx_error_set(err, SBX_E_CONFLICT, 0,
				     "the pooled workspace '%s/" POOL_WS_NAME
				     "/%s' is not empty and uid %lu's (0755)",
				     r->path, id, uid);
	return 0;
}

int session_pool_ws_remove(struct session_root *r, const char *id,
			   struct sbx_error **err)
{
	int dir = session_private_dir(r, POOL_WS_NAME, false, err), fd, rc;
	cleanup_free char *top = NULL, *dir_path = NULL, *img = NULL;

	if (dir < 0)
		return (*err)->errnum == ENOENT ? (sbx_error_free(err), 0) : -1;
	fd = openat(dir, id,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		close(dir);
		if (e == ENOENT)
			return 0;
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot open '%s/" POOL_WS_NAME "/%s'",
				     r->path, id);
	}
	top = xasprintf("%s/" POOL_WS_NAME "/%s", r->path, id);
	dir_path = xasprintf("%s/" POOL_WS_NAME, r->path);
	img = xasprintf("%s.img", id);
	/* Its disk budget's mount first (session-budget.h); then never
	 * following a symlink, never crossing a mount (tree.h). */
	rc = session_budget_unmount_at(dir, dir_path, id, err);
	if (rc == 0) {
		close(fd);
		fd = openat(dir, id,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
				O_NOCTTY);
		if (fd < 0)
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot open '%s'", top);
	}
	if (rc == 0)
		rc = tree_empty(fd, top, SBX_E_UNAVAILABLE, r->cancel, NULL,
				err);
	else if (fd >= 0)
		close(fd);
	if (rc == 0 && unlinkat(dir, id, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot remove '%s'", top);
	if (rc == 0 && unlinkat(dir, img, 0) < 0 && errno != ENOENT)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot remove '%s/%s'", dir_path, img);
	close(dir);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of a private directory of ROOT that pass valid (sorted). */
static int names_in(struct session_root *r, const char *name,
		    bool (*valid)(const char *), char ***v, size_t *n,
		    struct sbx_error **err)
{
	int dir = openat(r->fd, name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	size_t alloc = 0;
	struct dirent *de;
	DIR *d;

	*v = NULL;
	*n = 0;
	if (dir < 0 && errno == ENOENT)
		return 0;
	if (dir >= 0)
		close(dir);
	dir = session_private_dir(r, name, false, err);
	if (dir < 0)
		return -1;
	d = tree_dir_of(dir);
	if (!d)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read '%s/%s'", r->path, name);
	while ((de = readdir(d)))
		if (valid(de->d_name)) {
			ALLOC_GROW(*v, *n + 1, alloc);
			(*v)[(*n)++] = xstrdup(de->d_name);
		}
	closedir(d);
	if (*n)
		qsort(*v, *n, sizeof(**v), cmp_str);
	return 0;
}

int session_pool_ws_ids(struct session_root *r, char ***ids, size_t *n,
			struct sbx_error **err)
{
	return names_in(r, POOL_WS_NAME, session_pool_id_valid, ids, n, err);
}

/* ---- entries ---- */

static bool entry_name_valid(const char *s)
{
	size_t n = strlen(s);
	char id[SESSION_POOL_ID_LEN + 1];

	if (n != SESSION_POOL_ID_LEN + 5 ||
	    strcmp(s + SESSION_POOL_ID_LEN, ".json"))
		return false;
	memcpy(id, s, SESSION_POOL_ID_LEN);
	id[SESSION_POOL_ID_LEN] = '\0';
	return session_pool_id_valid(id);
}

static bool is_container_id(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static int entry_parse(const char *data, size_t len, const char *id,
		       struct session_pool_entry *e)
{
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	const char *rid = NULL, *rt = NULL, *img = NULL, *ctr = NULL;
	const char *wd = NULL;
	json_int_t version = 0, created = -1;
	char *msg = NULL;
	int rc = -1;

	memset(e, 0, sizeof(*e));
	if (j &&
	    json_unpack(j, "{s:I, s:s, s:s, s:s, s:s, s:I, s?s !}", "version",
			&version, "id", &rid, "runtime", &rt, "image", &img,
			"container", &ctr, "created", &created, "work_dir",
			&wd) == 0 &&
	    version == 1 && strcmp(rid, id) == 0 &&
	    (!wd || !session_check_work_dir(wd)) &&
	    !(msg = catalog_check_alias(rt)) &&
	    !(msg = catalog_check_image_ref(img)) && is_container_id(ctr) &&
	    created >= 0) {
		snprintf(e->id, sizeof(e->id), "%s", id);
		e->runtime = xstrdup(rt);
		e->image = xstrdup(img);
		e->container = xstrdup(ctr);
		e->work_dir = wd ? xstrdup(wd) : NULL;
		e->created = created;
		rc = 0;
	}
	free(msg);
	json_decref(j);
	return rc;
}

int session_pool_add(struct session_root *r, const struct session_pool_entry *e,
		     struct sbx_error **err)
{
	int dir = session_private_dir(r, POOL_NAME, true, err), rc;
	cleanup_free char *dirp = xasprintf("%s/" POOL_NAME, r->path);
	cleanup_free char *name = xasprintf("%s.json", e->id);
	json_t *j;
	char *text;

	if (dir < 0)
		return -1;
	j = xjson_pack("{s:i, s:s, s:s, s:s, s:s, s:I}", "version", 1, "id",
		       e->id, "runtime", e->runtime, "image", e->image,
		       "container", e->container, "created",
		       (json_int_t)e->created);
	/* Only when not the configuration's: an older sbxcat reads the
	 * others still. */
	if (e->work_dir)
		json_object_set_new(j, "work_dir", xjson_string(e->work_dir));
	text = json_dumps(j, JSON_SORT_KEYS);
	json_decref(j);
	if (!text)
		die_oom();
	rc = write_file_atomic_at(dir, dirp, name, text, strlen(text), 0600,
				  err);
	free(text);
	close(dir);
	return rc;
}

/* The entry of name (ID.json) in dir, or -1 (not ours, or gone). */
static int entry_read(int dir, const char *name, struct session_pool_entry *e)
{
	char id[SESSION_POOL_ID_LEN + 1];
	char *data = NULL;
	size_t len;
	struct sbx_error *err = NULL;
	int fd =
	    openat(dir, name,
		   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	int rc;

	if (fd < 0)
		return -1;
	rc = read_fd_limited(fd, name, ENTRY_MAX, &data, &len, &err);
	close(fd);
	sbx_error_free(&err);
	if (rc < 0)
		return -1;
	memcpy(id, name, SESSION_POOL_ID_LEN);
	id[SESSION_POOL_ID_LEN] = '\0';
	rc = entry_parse(data, len, id, e);
	free(data);
	return rc;
}

int session_pool_list(struct session_root *r, struct session_pool_entry **v,
		      size_t *n, struct sbx_error **err)
{
	char **names = NULL;
	size_t nn = 0, alloc = 0;
	int dir;

	*v = NULL;
	*n = 0;
	if (names_in(r, POOL_NAME, entry_name_valid, &names, &nn, err) < 0)
		return -1;
	if (!nn)
		return 0;
	dir = session_private_dir(r, POOL_NAME, false, err);
	if (dir < 0) {
		strv_free(names, nn);
		return -1;
	}
	for (size_t i = 0; i < nn; i++) {
		struct session_pool_entry e;

		if (entry_read(dir, names[i], &e) < 0) {
			/* Not an entry sbxcat wrote: nobody's to claim. */
			(void)unlinkat(dir, names[i], 0);
			continue;
		}
		ALLOC_GROW(*v, *n + 1, alloc);
		(*v)[(*n)++] = e;
	}
	close(dir);
	strv_free(names, nn);
	return 0;
}

void session_pool_list_free(struct session_pool_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		session_pool_entry_release(&v[i]);
	free(v);
}

int session_pool_drop(struct session_root *r, const char *id,
		      struct sbx_error **err)
{
	int dir = session_private_dir(r, POOL_NAME, false, err);
	cleanup_free char *name = xasprintf("%s.json", id);
	int rc = 0;

	if (dir < 0)
		return (*err)->errnum == ENOENT ? (sbx_error_free(err), 0) : -1;
	if (unlinkat(dir, name, 0) < 0 && errno != ENOENT)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot remove '%s/" POOL_NAME "/%s'",
				   r->path, name);
	else if (fsync(dir) < 0 && errno != EINVAL)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot sync '%s/" POOL_NAME "'", r->path);
	close(dir);
	return rc;
}

int session_pool_take(struct session_root *r, const char *runtime,
		      const char *image, const char *work_dir,
		      struct session_pool_entry *out, bool *found,
		      struct sbx_error **err)
{
	struct session_pool_entry *v = NULL;
	size_t n = 0, best = 0;
	int rc;

	*found = false;
	memset(out, 0, sizeof(*out));
	if (session_pool_list(r, &v, &n, err) < 0)
		return -1;
	/* The oldest of the runtime's current tag. */
	for (size_t i = 0; i < n; i++)
		if ((!runtime || strcmp(v[i].runtime, runtime) == 0) &&
		    (!image || strcmp(v[i].image, image) == 0) &&
		    (!runtime || (!work_dir && !v[i].work_dir) ||
		     (work_dir && v[i].work_dir &&
		      strcmp(work_dir, v[i].work_dir) == 0)) &&
		    (!*found || v[i].created < v[best].created)) {
			best = i;
			*found = true;
		}
	rc = 0;
	if (*found) {
		rc = session_pool_drop(r, v[best].id, err);
		if (rc == 0) {
			*out = v[best];
			memset(&v[best], 0, sizeof(v[best]));
		} else {
			*found = false;
		}
	}
	session_pool_list_free(v, n);
	return rc;
}

/*
 * session-reserve.c - the reservations of opens in progress (session.h):
 * ROOT/.sbxcat-open/KEY, made under the quota lock once the count allowed
 * the open, flocked by the open until its record is written, then
 * removed.  A reservation nobody holds (its open died: a kill -9 between
 * the count and the start) is stale: the next count removes it.
 *
 * A file holds two lines: the tenant, so a count can charge the tenant
 * whose open it is without reading anything else, and the pooled
 * container the open claimed (empty when none), so the reaper leaves a
 * container between its claim and its record alone.  The pool's own
 * fills reserve too, as "pool-ID" with no tenant: they count toward the
 * host, not a tenant.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "session/session-layout.h"
#include "session/session.h"
#include "workspace/tree.h"

void session_reservation_init(struct session_reservation *v)
{
	v->fd = v->dir_fd = -1;
	v->key[0] = '\0';
}

/* Is name, open in dir, held by an open?  A stale one is removed. */
static bool held(int dir, const char *name)
{
	int fd =
	    openat(dir, name,
		   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return false; /* gone meanwhile, or not a file of ours */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return errno == EWOULDBLOCK;
	}
	/* Nobody holds it, and a new one of the key is made only under
	 * the quota lock the caller holds: the name is this stale one. */
	(void)unlinkat(dir, name, 0);
	close(fd);
	return false;
}

int session_reserve(struct session_root *r, const char *key, const char *tenant,
		    const char *pool, struct session_reservation *v,
		    struct sbx_error **err)
{
	int dir, fd = -1, tries;
	size_t len;
	char *line;

	session_reservation_init(v);
	if (!session_key_valid(key) ||
	    (tenant && session_check_tenant(tenant)) ||
	    (pool && !session_pool_id_valid(pool)))
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "cannot reserve an open of '%s'", key);
	dir = session_private_dir(r, OPEN_NAME, true, err);
	if (dir < 0)
		return -1;
	for (tries = 0; tries < 2 && fd < 0; tries++) {
		fd = openat(dir, key,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				O_CLOEXEC | O_NOCTTY,
			    0600);
		if (fd < 0 && errno == EEXIST && held(dir, key)) {
			close(dir);
			return sbx_error_set(err, SBX_E_CONFLICT, EBUSY,
					     "session '%s' is being opened",
					     key);
		}
	}
	line = xasprintf("%s\n%s\n", tenant ? tenant : "", pool ? pool : "");
	len = strlen(line);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 ||
	    write(fd, line, len) != (ssize_t)len) {
		int e = errno;

		free(line);
		if (fd >= 0) {
			unlinkat(dir, key, 0);
			close(fd);
		}
		close(dir);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot make '%s/" OPEN_NAME "/%s'",
				     r->path, key);
	}
	free(line);
	v->fd = fd;
	v->dir_fd = dir;
	snprintf(v->key, sizeof(v->key), "%s", key);
	return 0;
}

void session_reserve_release(struct session_reservation *v)
{
	if (v->fd >= 0) {
		/* Removed before it is let go: a count in between sees it
		 * held, and counts it once more, never one too few. */
		(void)unlinkat(v->dir_fd, v->key, 0);
		close(v->fd);
	}
	if (v->dir_fd >= 0)
		close(v->dir_fd);
	session_reservation_init(v);
}

/* The tenant (its first line; NULL when none or not a tenant) and the
 * pooled container (its second) a reservation names. */
static void lines_of(int dir, const char *name, struct session_held *h)
{
	char buf[SESSION_TENANT_MAX + SESSION_POOL_ID_LEN + 4];
	int fd =
	    openat(dir, name,
		   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	ssize_t n;
	char *nl, *pool;

	h->tenant = NULL;
	h->pool[0] = '\0';
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	nl = strchr(buf, '\n');
	if (!nl)
		return;
	*nl = '\0';
	pool = nl + 1;
	if (*buf && !session_check_tenant(buf))
		h->tenant = xstrdup(buf);
	nl = strchr(pool, '\n');
	if (nl) {
		*nl = '\0';
		if (session_pool_id_valid(pool))
			memcpy(h->pool, pool, SESSION_POOL_ID_LEN + 1);
	}
}

int session_reservations(struct session_root *r, struct session_held **v,
			 size_t *n, struct sbx_error **err)
{
	size_t alloc = 0;
	struct dirent *de;
	DIR *d;
	int dir;

	*v = NULL;
	*n = 0;
	dir =
	    openat(r->fd, OPEN_NAME,
		   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (dir < 0 && errno == ENOENT)
		return 0; /* no open was ever reserved */
	if (dir >= 0)
		close(dir);
	dir = session_private_dir(r, OPEN_NAME, false, err);
	if (dir < 0)
		return -1;
	d = tree_dir_of(fcntl(dir, F_DUPFD_CLOEXEC, 0));
	if (!d) {
		close(dir);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read '%s/" OPEN_NAME "'", r->path);
	}
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (!session_key_valid(de->d_name)) {
			/* Not a name sbxcat makes here: nobody's. */
			if (!tree_dot_or_dotdot(de->d_name))
				(void)unlinkat(dir, de->d_name, 0);
			continue;
		}
		if (!held(dir, de->d_name))
			continue;
		ALLOC_GROW(*v, *n + 1, alloc);
		/* A key: at most SESSION_KEY_MAX bytes. */
		memcpy((*v)[*n].key, de->d_name, strlen(de->d_name) + 1);
		lines_of(dir, de->d_name, &(*v)[(*n)++]);
		errno = 0;
	}
	closedir(d);
	close(dir);
	return 0;
}

void session_held_free(struct session_held *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].tenant);
	free(v);
}

/*
 * http-listen.c - the listening sockets of the server: "unix:PATH",
 * "tcp:HOST:PORT" and "https:HOST:PORT" (TCP too; see http.h), made here
 * and handed to libmicrohttpd (MHD_OPTION_LISTEN_SOCKET), one daemon each.
 *
 * A unix socket is made with mode 0660 (fchmod before bind: Linux takes
 * the new file's mode from the socket's inode, less the umask, so no
 * other user can connect in the moment before the chmod that undoes the
 * umask).  A socket file already there is replaced only when nobody
 * listens on it (connect fails with ECONNREFUSED: a server that died);
 * a live one, or a file that is not a socket, is refused.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/error.h"
#include "serve/http-int.h"

#define LISTEN_BACKLOG 511

/* Whether a unix socket at path has a listener. */
static bool unix_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return true;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ||
	       errno != ECONNREFUSED;
	close(fd);
	return live;
}

static int unix_clear(const char *path, const struct sockaddr_un *sa,
		      struct sbx_error **err)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot listen on 'unix:%s'", path);
	}
	if (!S_ISSOCK(st.st_mode))
		return sbx_error_set(err, SBX_E_CONFLICT, 0,
				     "cannot listen on 'unix:%s': a file that "
				     "is not a socket is there",
				     path);
	if (unix_live(sa))
		return sbx_error_set(err, SBX_E_CONFLICT, 0,
				     "cannot listen on 'unix:%s': another "
				     "server listens there",
				     path);
	if (unlink(path) < 0 && errno != ENOENT)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot remove the stale socket '%s'",
				     path);
	return 0;
}

static int listen_unix(struct http_listener *l, const char *path,
		       struct sbx_error **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (!*path || strlen(path) >= sizeof(sa.sun_path))
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "cannot listen on '%s': the path is "
				     "empty or too long",
				     l->spec);
	strcpy(sa.sun_path, path);
	if (unix_clear(path, &sa, err) < 0)
		return -1;
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l->fd < 0 || fchmod(l->fd, 0660) < 0 ||
	    bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot listen on '%s'", l->spec);
	l->unix_path = xstrdup(path);
	if (chmod(path, 0660) < 0 || listen(l->fd, LISTEN_BACKLOG) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot listen on '%s'", l->spec);
	return 0;
}

/* "HOST:PORT" or "[V6]:PORT" into host and port (allocated). */
static int split_hostport(const char *s, char **host, char **port)
{
	const char *colon;

	if (*s == '[') {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':')
			return -1;
		*host = xstrndup(s + 1, end - s - 1);
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', colon - s))
			return -1;
		*host = xstrndup(s, colon - s);
	}
	*port = xstrdup(colon + 1);
	if (!**host || !**port || strspn(*port, "0123456789") != strlen(*port))
		return -1;
	return 0;
}

static int bind_tcp(struct http_listener *l, const struct addrinfo *ai,
		    struct sbx_error **err)
{
	int one = 1;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	l->fd = socket(ai->ai_family,
		       SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l->fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot listen on '%s'", l->spec);
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(l->fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(l->fd, LISTEN_BACKLOG) < 0 ||
	    getsockname(l->fd, (struct sockaddr *)&ss, &len) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot listen on '%s'", l->spec);
	if (ss.ss_family == AF_INET6)
		l->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	else
		l->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

static int listen_tcp(struct http_listener *l, const char *hostport,
		      struct sbx_error **err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	cleanup_free char *host = NULL, *port = NULL;
	struct addrinfo *res;
	int rc;

	if (split_hostport(hostport, &host, &port) < 0 || atol(port) > 65535)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "cannot listen on '%s': not "
				     "tcp:HOST:PORT or tcp:[V6]:PORT (or "
				     "https:)",
				     l->spec);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "cannot listen on '%s': %s", l->spec,
				     gai_strerror(rc));
	rc = bind_tcp(l, res, err);
	freeaddrinfo(res);
	return rc;
}

int http_listen_open(struct http_listener *l, struct sbx_error **err)
{
	l->fd = -1;
	if (!strncmp(l->spec, "unix:", 5))
		return listen_unix(l, l->spec + 5, err);
	if (!strncmp(l->spec, "tcp:", 4))
		return listen_tcp(l, l->spec + 4, err);
	if (http_listen_is_tls(l->spec))
		return listen_tcp(l, l->spec + 6, err);
	return sbx_error_set(err, SBX_E_INVALID, 0,
			     "cannot listen on '%s': not unix:PATH, "
			     "tcp:HOST:PORT or https:HOST:PORT",
			     l->spec);
}

void http_listen_close(struct http_listener *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	if (l->unix_path)
		unlink(l->unix_path);
	free(l->unix_path);
	l->unix_path = NULL;
}

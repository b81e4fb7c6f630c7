/*
 * util.c - allocation that cannot fail, growable strings, whole-file reads,
 * atomic file replacement and SHA-256.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "error.h"
#include "util.h"

void die_oom(void)
{
	fputs("sbxcat: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die_oom();
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		die_oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die_oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		die_oom();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		die_oom();
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *p;
	if (vasprintf(&p, fmt, ap) < 0)
		die_oom();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	va_start(ap, fmt);
	p = xvasprintf(fmt, ap);
	va_end(ap);
	return p;
}

void strbuf_init(struct strbuf *sb)
{
	sb->buf = NULL;
	sb->len = 0;
	sb->alloc = 0;
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	strbuf_init(sb);
}

static void strbuf_grow(struct strbuf *sb, size_t extra)
{
	ALLOC_GROW(sb->buf, sb->len + extra + 1, sb->alloc);
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *p;
	strbuf_grow(sb, 0);
	sb->buf[sb->len] = '\0';
	p = sb->buf;
	if (len)
		*len = sb->len;
	strbuf_init(sb);
	return p;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	strbuf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;
	strbuf_add(sb, &ch, 1);
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	char *p = xvasprintf(fmt, ap);
	strbuf_addstr(sb, p);
	free(p);
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

const char *strbuf_str(struct strbuf *sb)
{
	strbuf_grow(sb, 0);
	sb->buf[sb->len] = '\0';
	return sb->buf;
}

void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int read_file_limited(const char *path, size_t max, char **data, size_t *len,
		      struct sbx_error **err)
{
	struct stat st;
	struct strbuf sb = STRBUF_INIT;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
				     "cannot open '%s'", path);
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_set(err, SBX_EXIT_ENV, e, "cannot stat '%s'",
				     path);
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return sbx_error_set(err, SBX_EXIT_ENV, EISDIR,
				     "cannot read '%s'", path);
	}
	if (S_ISREG(st.st_mode) && (size_t)st.st_size > max) {
		close(fd);
		return sbx_error_set(
		    err, SBX_EXIT_FAIL, 0,
		    "'%s' is %lld bytes, over the limit of %zu bytes", path,
		    (long long)st.st_size, max);
	}
	for (;;) {
		char chunk[65536];
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			strbuf_release(&sb);
			return sbx_error_set(err, SBX_EXIT_ENV, e,
					     "cannot read '%s'", path);
		}
		if (n == 0)
			break;
		/* A pipe or a file that grew after fstat: same limit. */
		if (sb.len + (size_t)n > max) {
			close(fd);
			strbuf_release(&sb);
			return sbx_error_set(
			    err, SBX_EXIT_FAIL, 0,
			    "'%s' is over the limit of %zu bytes", path, max);
		}
		strbuf_add(&sb, chunk, (size_t)n);
	}
	close(fd);
	*data = strbuf_detach(&sb, len);
	return 0;
}

/* True when path already holds exactly data. */
static bool file_has_content(const char *path, const void *data, size_t len)
{
	char *old = NULL;
	size_t oldlen = 0;
	bool same;

	if (read_file_limited(path, len, &old, &oldlen, NULL) < 0)
		return false;
	same = oldlen == len && memcmp(old, data, len) == 0;
	free(old);
	return same;
}

static int fsync_dir(const char *dir, struct sbx_error **err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
				     "cannot open '%s'", dir);
	if (fsync(fd) < 0 && errno != EINVAL) {
		int e = errno;
		close(fd);
		return sbx_error_set(err, SBX_EXIT_ENV, e, "cannot sync '%s'",
				     dir);
	}
	close(fd);
	return 0;
}

/* Write data to a new temporary file beside path; *tmp names it. */
static int write_temp(const char *path, const void *data, size_t len,
		      unsigned mode, bool sync, char **tmp,
		      struct sbx_error **err)
{
	struct stat st;
	const char *p = data;
	size_t left = len;
	int fd, e;

	if (stat(path, &st) == 0)
		mode = st.st_mode & 07777;
	*tmp = xasprintf("%s.tmpXXXXXX", path);
	fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		free(*tmp);
		*tmp = NULL;
		return sbx_error_set(
		    err, SBX_EXIT_ENV, e,
		    "cannot create a temporary file beside '%s'", path);
	}
	while (left > 0) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		p += n;
		left -= (size_t)n;
	}
	if (fchmod(fd, mode) < 0 || (sync && fsync(fd) < 0))
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(*tmp);
	free(*tmp);
	*tmp = NULL;
	return sbx_error_set(err, SBX_EXIT_ENV, e, "cannot write '%s'", path);
}

int write_file_atomic(const char *path, const void *data, size_t len,
		      unsigned mode, bool *changed, struct sbx_error **err)
{
	cleanup_free char *tmp = NULL;
	cleanup_free char *dircopy = xstrdup(path);

	if (changed)
		*changed = false;
	if (file_has_content(path, data, len))
		return 0;
	if (write_temp(path, data, len, mode, true, &tmp, err) < 0)
		return -1;
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return sbx_error_set(err, SBX_EXIT_ENV, e, "cannot write '%s'",
				     path);
	}
	if (changed)
		*changed = true;
	return fsync_dir(dirname(dircopy), err);
}

int atomic_batch_add(struct atomic_batch *b, const char *path, const void *data,
		     size_t len, unsigned mode, bool *changed,
		     struct sbx_error **err)
{
	char *tmp = NULL;

	*changed = false;
	if (file_has_content(path, data, len))
		return 0;
	if (write_temp(path, data, len, mode, false, &tmp, err) < 0)
		return -1;
	ALLOC_GROW(b->files, b->n + 1, b->alloc);
	b->files[b->n].path = xstrdup(path);
	b->files[b->n].tmp = tmp;
	b->n++;
	*changed = true;
	return 0;
}

/*
 * syncfs() once per file system the paths live on (almost always one: a
 * directory the files share), so every byte and rename before is durable.
 */
static int sync_filesystems(const struct atomic_batch *b, bool tmp,
			    struct sbx_error **err)
{
	dev_t *seen = xcalloc(b->n, sizeof(*seen));
	size_t nseen = 0;
	int rc = 0;

	for (size_t i = 0; i < b->n && rc == 0; i++) {
		const char *path = tmp ? b->files[i].tmp : b->files[i].path;
		struct stat st;
		size_t k;
		int fd;

		if (stat(path, &st) < 0) {
			rc = sbx_error_set(err, SBX_EXIT_ENV, errno,
					   "cannot stat '%s'", path);
			break;
		}
		for (k = 0; k < nseen && seen[k] != st.st_dev; k++)
			;
		if (k < nseen)
			continue;
		seen[nseen++] = st.st_dev;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || syncfs(fd) < 0)
			rc = sbx_error_set(err, SBX_EXIT_ENV, errno,
					   "cannot sync '%s'", path);
		if (fd >= 0)
			close(fd);
	}
	free(seen);
	return rc;
}

int atomic_batch_commit(struct atomic_batch *b, struct sbx_error **err)
{
	int rc = 0;

	if (b->n && sync_filesystems(b, true, err) < 0)
		rc = -1;
	for (size_t i = 0; i < b->n && rc == 0; i++) {
		if (rename(b->files[i].tmp, b->files[i].path) < 0) {
			rc = sbx_error_set(err, SBX_EXIT_ENV, errno,
					   "cannot write '%s'",
					   b->files[i].path);
			break;
		}
		free(b->files[i].tmp);
		b->files[i].tmp = NULL;
	}
	if (rc == 0 && b->n && sync_filesystems(b, false, err) < 0)
		rc = -1;
	atomic_batch_abort(b);
	return rc;
}

void atomic_batch_abort(struct atomic_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		if (b->files[i].tmp)
			unlink(b->files[i].tmp);
		free(b->files[i].tmp);
		free(b->files[i].path);
	}
	free(b->files);
	b->files = NULL;
	b->n = b->alloc = 0;
}

int mkdir_p(const char *path, unsigned mode, struct sbx_error **err)
{
	cleanup_free char *parent = NULL;
	char *slash;

	/* The whole path first: usually it exists or only its last part is
	 * missing, so one call, not one per component. */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
				     "cannot create directory '%s'", path);
	parent = xstrdup(path);
	slash = strrchr(parent, '/');
	while (slash && slash > parent && slash[1] == '\0') {
		*slash = '\0'; /* "a/b/" names a/b */
		slash = strrchr(parent, '/');
	}
	if (!slash || slash == parent)
		return sbx_error_set(err, SBX_EXIT_ENV, ENOENT,
				     "cannot create directory '%s'", path);
	*slash = '\0';
	if (mkdir_p(parent, mode, err) < 0)
		return -1;
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
				     "cannot create directory '%s'", path);
	return 0;
}

void sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	static const char hex[] = "0123456789abcdef";

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
		die_oom(); /* only fails on allocation */
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

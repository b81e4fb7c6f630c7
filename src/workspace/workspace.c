/*
 * workspace.c - the workspace operations of `sbxcat fs` (workspace.h):
 * every path resolved by the kernel beneath a held directory descriptor
 * with openat2, every file read through a descriptor whose fstat was
 * checked, every write a temporary file renamed within a held directory.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "workspace/tree.h"
#include "workspace/workspace.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define RESOLVE_ALWAYS                                                         \
	(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

/* openat2 says EAGAIN when a rename anywhere raced the lookup. */
#define RESOLVE_TRIES 16
/* A name that keeps changing under a remove or a mkdir: give up after. */
#define RACE_TRIES 8
#define BLOCK 65536
/* Line numbers named when the old text of an edit is not unique. */
#define LINES_NAMED 10

#define NO_OPENAT2                                                             \
	"sbxcat fs needs openat2 (Linux 5.6 or later); this kernel has none, " \
	"and sbxcat does not fall back to resolving paths itself"

/* s escaped for a message (newly allocated). */
static char *quote(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	text_add_escaped(&sb, s, strlen(s));
	strbuf_addstr(&sb, "");
	return strbuf_detach(&sb, NULL);
}

/* A refusal naming the user's path: "'PATH' WHY". */
static int refuse(struct sbx_error **err, int status, int errnum,
		  const char *shown, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int refuse(struct sbx_error **err, int status, int errnum,
		  const char *shown, const char *fmt, ...)
{
	cleanup_free char *q = quote(shown);
	cleanup_free char *why = NULL;
	va_list ap;

	va_start(ap, fmt);
	why = xvasprintf(fmt, ap);
	va_end(ap);
	return sbx_error_set(err, status, errnum, "'%s' %s", q, why);
}

/* A refusal (status 1) with its reason for the audit (error.h). */
#define refuse_r(err, why, shown, ...)                                         \
	(refuse(err, SBX_E_REFUSED, 0, shown, __VA_ARGS__),                    \
	 sbx_error_reason(*(err), why), -1)
/* A refusal whose reason callers branch on (error.h), with its numbers. */
#define refuse_why(err, why, n, max, shown, ...)                               \
	(refuse(err, SBX_E_REFUSED, 0, shown, __VA_ARGS__),                    \
	 sbx_error_why(*(err), why, n, max), -1)

/* The status of a failed system call: the machine's fault, or the path's. */
static int status_of(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
	case EIO:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
	case EROFS:
		return SBX_E_UNAVAILABLE;
	default:
		return SBX_E_REFUSED;
	}
}

/* openat2 beneath dirfd; -1 with errno set. */
static int beneath(int dirfd, const char *path, uint64_t flags, uint64_t mode,
		   uint64_t resolve)
{
	struct open_how how;

	memset(&how, 0, sizeof(how));
	how.flags = flags | O_CLOEXEC;
	how.mode = mode;
	how.resolve = resolve | RESOLVE_ALWAYS;
	for (int tries = 0;; tries++) {
		long fd = syscall(SYS_openat2, dirfd, *path ? path : ".", &how,
				  sizeof(how));

		if (fd >= 0)
			return (int)fd;
		if (errno == EINTR ||
		    (errno == EAGAIN && tries < RESOLVE_TRIES))
			continue;
		return -1;
	}
}

/* The refusal of a failed open, its errno kept in errnum (the message
 * says why in words, so no strerror is added to it). */
static int open_refusal(int e, const char *shown, struct sbx_error **err)
{
	switch (e) {
	case EXDEV:
		return refuse_why(
		    err, SBX_R_OUTSIDE, 0, 0, shown,
		    "leads outside the workspace (a symlink out of "
		    "it, or onto another mount)");
	case ELOOP:
		return refuse_r(err, "symlink not followed", shown,
			      "cannot be followed: a symlink loop, a magic "
			      "link, or a symlink where none is allowed");
	case ENOENT:
		return refuse_why(err, SBX_R_NOT_FOUND, 0, 0, shown,
				  "does not exist");
	case ENOTDIR:
		return refuse_why(
		    err, SBX_R_NOT_A_DIRECTORY, 0, 0, shown,
		    "is not a directory, or one of its parents is "
		    "not");
	case EACCES:
	case EPERM:
		return refuse_r(err, "permission denied", shown,
			      "cannot be opened: permission denied");
	case EAGAIN:
		return refuse_r(err, "changed while looked up", shown,
			      "kept changing while it was looked up (renames "
			      "raced it); try again");
	case EISDIR:
		return refuse_why(err, SBX_R_A_DIRECTORY, 0, 0, shown,
				  "is a directory");
	case ENAMETOOLONG:
		return refuse_r(err, "name too long", shown,
			      "has a name that is too long");
	case ENOSYS:
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, NO_OPENAT2);
	default:
		return refuse(err, status_of(e), e, shown, "cannot be opened");
	}
}

static int open_error(int e, const char *shown, struct sbx_error **err)
{
	int rc = open_refusal(e, shown, err);

	if (err && *err)
		(*err)->errnum = e;
	return rc;
}

int workspace_init(struct workspace *w, int fd, const char *path,
		   unsigned long uid, unsigned long long max_read,
		   unsigned long long max_write, const atomic_int *cancel,
		   struct sbx_error **err)
{
	struct stat st;
	int probe, e;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->path = xstrdup(path);
	w->uid = uid;
	w->max_read = max_read;
	w->max_write = max_write;
	w->cancel = cancel;
	w->budget_ms = WORKSPACE_BUDGET_MS_DEFAULT;
	if (__builtin_mul_overflow(max_read, WORKSPACE_SCAN_FACTOR,
				   &w->max_scan))
		w->max_scan = ULLONG_MAX;
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		e = fstat(fd, &st) < 0 ? errno : ENOTDIR;
		sbx_error_set(err, SBX_E_UNAVAILABLE, e,
			      "cannot use the workspace '%s'", path);
		workspace_close(w);
		return -1;
	}
	w->dev = st.st_dev;
	probe = beneath(fd, ".", O_PATH | O_DIRECTORY, 0, 0);
	if (probe < 0) {
		e = errno;
		if (e == ENOSYS)
			sbx_error_set(err, SBX_E_UNAVAILABLE, 0, NO_OPENAT2);
		else
			sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				      "cannot open the workspace '%s'", path);
		workspace_close(w);
		return -1;
	}
	close(probe);
	return 0;
}

void workspace_close(struct workspace *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	free(w->path);
	w->path = NULL;
}

/*
 * path's components appended to sb joined by '/', "." and empty ones
 * dropped; true when one of them is "..".
 */
static bool join_components(struct strbuf *sb, const char *path)
{
	bool dotdot = false;

	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");

		dotdot = dotdot || (n == 2 && p[0] == '.' && p[1] == '.');
		if (n && !(n == 1 && p[0] == '.')) {
			if (sb->len && sb->buf[sb->len - 1] != '/')
				strbuf_addch(sb, '/');
			strbuf_add(sb, p, n);
		}
		p += n + (p[n] == '/');
	}
	return dotdot;
}

char *workspace_path_shown(const char *path)
{
	struct strbuf sb = STRBUF_INIT;

	if (*path == '/')
		strbuf_addch(&sb, '/');
	join_components(&sb, path);
	if (!sb.len)
		strbuf_addch(&sb, '.');
	return strbuf_detach(&sb, NULL);
}

/* workspace_path_check naming shown (the user's spelling) in messages. */
static int check_path(const char *path, const char *shown, bool may_be_root,
		      char **rel, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	size_t len = strlen(path);

	*rel = NULL;
	if (path[0] == '/')
		return refuse_why(
		    err, SBX_R_OUTSIDE, 0, 0, shown,
		    "is outside the workspace: paths are relative to "
		    "it");
	if (len >= PATH_MAX)
		return sbx_error_set(err, SBX_E_REFUSED, 0,
				     "a path of %zu bytes is over the %d-byte "
				     "limit",
				     len, PATH_MAX - 1),
		       sbx_error_reason(*err, "path too long"), -1;
	if (join_components(&sb, path)) {
		strbuf_release(&sb);
		return refuse_why(
		    err, SBX_R_OUTSIDE, 0, 0, shown,
		    "is outside the workspace: '..' is not allowed");
	}
	if (!sb.len && !may_be_root)
		return refuse_r(err, "the workspace itself", shown,
			      "is the workspace itself; name something in it");
	strbuf_addstr(&sb, "");
	*rel = strbuf_detach(&sb, NULL);
	return 0;
}

int workspace_path_check(const char *path, bool may_be_root, char **rel,
			 struct sbx_error **err)
{
	return check_path(path, path, may_be_root, rel, err);
}

int workspace_openat(const struct workspace *w, const char *rel, uint64_t flags,
		     uint64_t mode, uint64_t resolve, const char *shown,
		     struct sbx_error **err)
{
	int fd = beneath(w->fd, rel, flags, mode, resolve);

	return fd >= 0 ? fd : open_error(errno, shown, err);
}

static const char *type_name(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device file";
	if (S_ISLNK(m))
		return "a symbolic link";
	return "of an unknown type";
}

/*
 * pathfd (an O_PATH descriptor, consumed) reopened for reading when it is
 * a regular file: through /proc/self/fd, which reopens that very inode,
 * checked again after the open.
 */
static int reopen_regular(int pathfd, const char *shown, struct stat *st,
			  struct sbx_error **err)
{
	char proc[64];
	struct stat again;
	int fd, e;

	if (fstat(pathfd, st) < 0) {
		e = errno;
		close(pathfd);
		return refuse(err, status_of(e), e, shown,
			      "cannot be examined");
	}
	if (!S_ISREG(st->st_mode)) {
		close(pathfd);
		return refuse_why(err, SBX_R_NOT_REGULAR, 0, 0, shown,
				  "is %s, not a regular file",
				  type_name(st->st_mode));
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
	/* O_NONBLOCK: a lease the sandbox holds on its own file is not
	 * waited for (lease-break-time) */
	fd = open(proc, O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	e = errno;
	close(pathfd);
	if (fd < 0 && e == ENOENT)
		return refuse(err, SBX_E_UNAVAILABLE, e, shown,
			      "cannot be reopened through %s (is /proc "
			      "mounted?)",
			      proc);
	if (fd < 0)
		return refuse(err, status_of(e), e, shown,
			      "cannot be opened for reading");
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev ||
	    again.st_ino != st->st_ino || !S_ISREG(again.st_mode)) {
		close(fd);
		return refuse_r(err, "changed while opened", shown,
			      "changed while it was opened; try again");
	}
	*st = again;
	return fd;
}

int workspace_open_file(const struct workspace *w, const char *rel,
			const char *shown, struct stat *st,
			struct sbx_error **err)
{
	int pathfd = workspace_openat(w, rel, O_PATH, 0, 0, shown, err);

	return pathfd < 0 ? -1 : reopen_regular(pathfd, shown, st, err);
}

static int over_read_limit(const struct workspace *w, const char *shown,
			   const struct stat *st, const char *what,
			   struct sbx_error **err)
{
	return refuse_why(err, SBX_R_OVER_READ_LIMIT,
			  (unsigned long long)st->st_size, w->max_read, shown,
			  "is %llu bytes, over the %llu-byte read limit; %s",
			  (unsigned long long)st->st_size, w->max_read, what);
}

#define READ_ON "read a slice of its lines or use exec"

int workspace_open_read(const struct workspace *w, const char *rel,
			const char *shown, struct stat *st,
			struct sbx_error **err)
{
	int fd = workspace_open_file(w, rel, shown, st, err);

	if (fd >= 0 && (unsigned long long)st->st_size > w->max_read) {
		close(fd);
		return over_read_limit(w, shown, st, READ_ON, err);
	}
	return fd;
}

/* read(2) into buf until len bytes or the end; -1 with errno set (EINTR
 * when w's cancel flag is up). */
static ssize_t read_upto(const struct workspace *w, int fd, char *buf,
			 size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR && !workspace_cancelled(w))
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* A regular file's bytes, st_size of them and no more (fd consumed). */
static int read_whole(const struct workspace *w, int fd, const char *shown,
		      const struct stat *st, char **data, size_t *len,
		      struct sbx_error **err)
{
	size_t size = (size_t)st->st_size;
	char *buf = xmalloc(st_add(size, 1));
	ssize_t n = read_upto(w, fd, buf, size);
	int e = errno;

	close(fd);
	if (n < 0) {
		free(buf);
		if (e == EINTR && workspace_cancelled(w))
			return refuse(err, SBX_E_CANCELLED, 0, shown,
				      "was being read when signal %d came",
				      workspace_cancelled(w));
		return refuse(err, status_of(e), e, shown, "cannot be read");
	}
	buf[n] = '\0';
	*data = buf;
	*len = (size_t)n;
	return 0;
}

static int past_end(const char *shown, unsigned long long lines,
		    unsigned long long offset, struct sbx_error **err)
{
	return refuse_why(err, SBX_R_PAST_END, lines, offset, shown,
			  "has %llu line%s; line %llu is past the end", lines,
			  lines == 1 ? "" : "s", offset);
}

static size_t count_newlines(const char *s, size_t len)
{
	size_t n = 0;

	for (const char *p = s, *end = s + len;
	     p < end && (p = memchr(p, '\n', (size_t)(end - p))); p++)
		n++;
	return n;
}

static size_t count_lines(const char *s, size_t len)
{
	return count_newlines(s, len) + (len && s[len - 1] != '\n');
}

/*
 * Line ends as sandboxd's read splits them (Python's str.splitlines):
 * CRLF and a lone CR end a line as LF does, and the lines are shown
 * joined with LF.  In place; the new length.
 */
static size_t lf_line_ends(char *data, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\r') {
			data[o++] = data[i];
			continue;
		}
		data[o++] = '\n';
		if (i + 1 < len && data[i + 1] == '\n')
			i++;
	}
	data[o] = '\0';
	return o;
}

/* The slice of a file read whole: data becomes l->buf. */
static int slice_whole(char *data, size_t len, const char *shown,
		       unsigned long long offset, unsigned long long limit,
		       struct workspace_lines *l, struct sbx_error **err)
{
	size_t total = count_lines(data, len), from = 0, pos;

	if (offset > total && !(offset == 1 && total == 0)) {
		free(data);
		return past_end(shown, total, offset, err);
	}
	for (unsigned long long i = 1; i < offset; i++)
		from = (size_t)((char *)memchr(data + from, '\n', len - from) -
				data) +
		       1;
	memmove(data, data + from, len - from);
	len -= from;
	l->buf = data;
	for (pos = 0; l->n < limit && pos < len; l->n++) {
		const char *nl = memchr(data + pos, '\n', len - pos);

		pos = nl ? (size_t)(nl - data) + 1 : len;
	}
	l->len = pos;
	l->buf[pos] = '\0';
	l->lines_left = (long long)(total - (offset - 1) - l->n);
	l->more = l->lines_left > 0;
	return 0;
}

struct reader {
	const struct workspace *w;
	int fd;
	char *blk;
	size_t pos, len;
	bool eof;
	unsigned long long at;	     /* the file offset after blk */
	unsigned long long data_end; /* where the data at `at` ends (a
					hole starts), when skip_hole knew */
};

/* Read up to want more bytes into r->blk (empty); r->eof at the end. */
static int refill(struct reader *r, size_t want, const char *shown,
		  struct sbx_error **err)
{
	int sig = workspace_cancelled(r->w);
	ssize_t n;

	if (sig)
		return refuse(err, SBX_E_CANCELLED, 0, shown,
			      "was being read when signal %d came", sig);
	n = read_upto(r->w, r->fd, r->blk, want);
	if (n < 0)
		return refuse(err, status_of(errno), errno, shown,
			      "cannot be read");
	r->pos = 0;
	r->len = (size_t)n;
	r->eof = n == 0;
	r->at += (unsigned long long)n;
	return 0;
}

/*
 * Move r past a hole at its offset (SEEK_DATA): a hole reads as zeros,
 * which hold no newline, so it is skipped unread.  true when one was
 * skipped (its zeros are part of the current line).  r->data_end is where
 * the data reached ends (SEEK_HOLE), so that a read stops there rather
 * than read the next hole's zeros.  A file system without SEEK_DATA says
 * every byte is data; nothing is skipped then.
 */
static bool skip_hole(struct reader *r)
{
	off_t data = lseek(r->fd, (off_t)r->at, SEEK_DATA);
	off_t end;
	bool skipped;

	r->data_end = ULLONG_MAX;
	if (data >= 0) {
		skipped = (unsigned long long)data != r->at;
		r->at = (unsigned long long)data;
		end = lseek(r->fd, data, SEEK_HOLE);
		if (end > data)
			r->data_end = (unsigned long long)end;
		/* SEEK_HOLE moved the offset: back to the data */
		if (lseek(r->fd, data, SEEK_SET) < 0)
			r->data_end = ULLONG_MAX;
		return skipped;
	}
	if (errno != ENXIO)
		return false;
	/* No data from here on: the rest, if any, is one hole. */
	end = lseek(r->fd, 0, SEEK_END);
	if (end < 0 || (unsigned long long)end <= r->at)
		return false;
	r->at = (unsigned long long)end;
	return true;
}

/* The refusal of an offset the budget did not reach. */
static int too_deep(const struct workspace *w, const char *shown,
		    unsigned long long offset, unsigned long long line,
		    unsigned long long at, unsigned long long scanned,
		    bool out_of_time, struct sbx_error **err)
{
	if (out_of_time)
		return refuse_r(err, "offset beyond the read budget", shown,
				"line %llu is deeper than a read reaches: "
				"after its %lld s budget it was on line %llu, "
				"at byte %llu; read that part with exec "
				"(sed -n)",
				offset, w->budget_ms / 1000, line, at);
	return refuse_r(err, "offset beyond the read budget", shown,
			"line %llu is deeper than a read reaches: after its "
			"budget of %llu bytes read (%d times the read limit) "
			"it was on line %llu, at byte %llu; read that part "
			"with exec (sed -n)",
			offset, scanned, WORKSPACE_SCAN_FACTOR, line, at);
}

/*
 * The slice of a file too big to read whole: block by block, lines before
 * offset skipped (counted, not kept; holes not even read), within the
 * budgets, then lines kept up to limit or max_read bytes, then at most one
 * byte more to learn whether anything follows.
 */
static int slice_stream(const struct workspace *w, int fd, const char *shown,
			unsigned long long offset, unsigned long long limit,
			struct workspace_lines *l, struct sbx_error **err)
{
	struct reader r = {w, fd, xmalloc(BLOCK), 0, 0, false, 0, ULLONG_MAX};
	struct strbuf sb = STRBUF_INIT;
	unsigned long long line = 1, scanned = 0;
	long long deadline = clock_now_ms() + w->budget_ms;
	bool partial = false;
	size_t last = 0; /* the end of the last whole line kept, in sb */
	int rc = 0;

	while (rc == 0 && line < offset) {
		const char *nl;

		if (r.pos == r.len) {
			bool late = clock_now_ms() >= deadline;

			if (late || scanned >= w->max_scan) {
				rc = too_deep(w, shown, offset, line, r.at,
					      scanned, late, err);
				break;
			}
			if (skip_hole(&r))
				partial = true;
			rc = refill(&r,
				    r.data_end - r.at < BLOCK
					? (size_t)(r.data_end - r.at)
					: BLOCK,
				    shown, err);
			if (rc < 0)
				break;
			scanned += r.len;
		}
		if (r.eof) {
			rc = past_end(shown, line - 1 + partial, offset, err);
			break;
		}
		nl = memchr(r.blk + r.pos, '\n', r.len - r.pos);
		partial = !nl;
		if (nl)
			line++;
		r.pos = nl ? (size_t)(nl - r.blk) + 1 : r.len;
	}
	while (rc == 0 && l->n < limit) {
		const char *nl;
		size_t take;

		if (r.pos == r.len && (rc = refill(&r, BLOCK, shown, err)) < 0)
			break;
		if (r.eof) {
			if (sb.len > last)
				l->n++, last = sb.len;
			else if (l->n == 0)
				rc = past_end(shown, offset - 1, offset, err);
			break;
		}
		nl = memchr(r.blk + r.pos, '\n', r.len - r.pos);
		take = nl ? (size_t)(nl - r.blk) + 1 - r.pos : r.len - r.pos;
		if (sb.len + take > w->max_read) {
			/* A first line longer than the limit is shown cut;
			 * otherwise the slice ends before the line that
			 * does not fit. */
			l->cut = l->more = true;
			if (l->n == 0) {
				strbuf_add(&sb, r.blk + r.pos,
					   (size_t)w->max_read - sb.len);
				l->n++;
				last = sb.len;
			} else {
				sb.len = last;
			}
			break;
		}
		strbuf_add(&sb, r.blk + r.pos, take);
		r.pos += take;
		if (nl)
			l->n++, last = sb.len;
	}
	if (rc == 0 && !l->cut && !r.eof) {
		if (r.pos == r.len)
			rc = refill(&r, 1, shown, err);
		l->more = rc == 0 && r.pos < r.len;
	}
	free(r.blk);
	close(fd);
	if (rc < 0) {
		strbuf_release(&sb);
		return -1;
	}
	strbuf_setlen(&sb, last);
	strbuf_addstr(&sb, "");
	l->buf = strbuf_detach(&sb, NULL);
	l->len = last;
	l->lines_left = -1;
	return 0;
}

/* data[0..*len) (NUL-terminated, owned) as text read as enc (text.h,
 * "Text files"): data itself when it is UTF-8 already, else a new buffer
 * of the UTF-8 (data freed), *len its length. */
static char *as_text(char *data, size_t *len, enum text_encoding enc)
{
	struct strbuf sb = STRBUF_INIT;

	if (enc == TEXT_UTF8)
		return data;
	text_decode(&sb, data, *len, enc);
	strbuf_addstr(&sb, "");
	free(data);
	return strbuf_detach(&sb, len);
}

/*
 * The lines of a slice_stream as text.  Only these bytes were read, not
 * the file: UTF-8 when they are (a sequence cut at the read limit
 * dropped, a byte order mark dropped at the file's start), else
 * windows-1252.  UTF-16 is not recognised here: a file over the read
 * limit is one sandboxd would not read at all.
 */
static void stream_as_text(struct workspace_lines *l)
{
	size_t whole = l->cut ? utf8_whole(l->buf, l->len) : l->len;
	enum text_encoding enc = TEXT_SINGLE_BYTE;

	if (utf8_first_invalid(l->buf, whole) < 0) {
		l->len = whole;
		l->buf[whole] = '\0';
		enc = l->first == 1 && text_sniff(l->buf, whole) == TEXT_UTF8_BOM
			  ? TEXT_UTF8_BOM
			  : TEXT_UTF8;
	}
	l->buf = as_text(l->buf, &l->len, enc);
}

int workspace_read_lines(const struct workspace *w, const char *rel,
			 const char *shown, unsigned long long offset,
			 unsigned long long limit, bool sliced,
			 struct workspace_lines *out, struct sbx_error **err)
{
	struct stat st;
	char *data;
	size_t len;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	if (offset == 0)
		offset = 1;
	out->first = offset;
	fd = workspace_open_file(w, rel, shown, &st, err);
	if (fd < 0)
		return -1;
	out->size = (unsigned long long)st.st_size;
	if ((unsigned long long)st.st_size > w->max_read) {
		if (!sliced) {
			close(fd);
			return over_read_limit(w, shown, &st, READ_ON, err);
		}
		rc = slice_stream(w, fd, shown, offset, limit, out, err);
		if (rc == 0)
			stream_as_text(out);
	} else {
		rc = read_whole(w, fd, shown, &st, &data, &len, err);
		if (rc == 0) {
			data = as_text(data, &len, text_sniff(data, len));
			len = lf_line_ends(data, len);
			rc = slice_whole(data, len, shown, offset, limit, out,
					 err);
		}
	}
	if (rc < 0)
		workspace_lines_release(out);
	return rc;
}

void workspace_lines_release(struct workspace_lines *l)
{
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

bool workspace_lines_next(const struct workspace_lines *l, size_t *pos,
			  const char **text, size_t *len)
{
	const char *nl;

	if (*pos >= l->len)
		return false;
	*text = l->buf + *pos;
	nl = memchr(*text, '\n', l->len - *pos);
	*len = nl ? (size_t)(nl - *text) : l->len - *pos;
	*pos += *len + (nl != NULL);
	return true;
}

/* rel split at its last slash: the directory ("" for the top) and name. */
static char *split(const char *rel, const char **name)
{
	const char *slash = strrchr(rel, '/');

	*name = slash ? slash + 1 : rel;
	return slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup("");
}

/*
 * A write that failed with e: a full disk (ENOSPC, EDQUOT) says what it
 * means here, that the sandbox's share is used up and nothing changed.
 */
static int write_failed(const struct workspace *w, int e, const char *shown,
			const char *what, struct sbx_error **err)
{
	struct statvfs vfs;
	struct statx stx;

	/* A workspace that is a file system's root of its own is a disk
	 * budget's (docs/sessions.md, "Disk budgets"): say that it is the
	 * budget that is used up, and how big it is. */
	if ((e == ENOSPC || e == EDQUOT) &&
	    statx(w->fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0 &&
	    (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) &&
	    fstatvfs(w->fd, &vfs) == 0)
		return refuse(err, SBX_E_UNAVAILABLE, e, shown,
			      "cannot be %s: the workspace's disk budget "
			      "(%llu bytes, %llu inodes) is used up; nothing "
			      "was changed",
			      what,
			      (unsigned long long)vfs.f_blocks * vfs.f_frsize,
			      (unsigned long long)vfs.f_files);
	if (e == ENOSPC || e == EDQUOT)
		return refuse(err, SBX_E_UNAVAILABLE, e, shown,
			      "cannot be %s: the file system has no room left "
			      "for the sandbox (host-side writes stop where "
			      "its own stop; the root reserve is not theirs); "
			      "nothing was changed",
			      what);
	if (e == EACCES || e == EPERM)
		return refuse_r(err, "permission denied", shown,
				"cannot be %s: the sandbox may not write there "
				"(host-side writes are made as the sandbox)",
				what);
	return refuse(err, status_of(e), e, shown, "cannot be %s", what);
}

/*
 * Writes as the sandbox.  Every block and inode a host-side write puts in
 * a workspace is allocated as the sandbox's own writes are: this thread's
 * file-system uid and gid set to the workspace's (setfsuid and setfsgid
 * act on the calling thread alone) and CAP_SYS_RESOURCE dropped from its
 * effective set, so the file system's root reserve (ext4's -m), which the
 * sandbox cannot touch, is not touched by fs write or edit either, and a
 * directory the sandbox cannot write is not written.  Reads stay root's.
 */
struct as_sandbox {
	uid_t uid;
	gid_t gid;
	bool cap; /* CAP_SYS_RESOURCE was effective, and dropped */
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
};

static bool sys_resource(const struct __user_cap_data_struct *caps)
{
	return caps[CAP_TO_INDEX(CAP_SYS_RESOURCE)].effective &
	       CAP_TO_MASK(CAP_SYS_RESOURCE);
}

/* This thread's capabilities, read (set false) or set. */
static int thread_caps(bool set, struct __user_cap_data_struct *caps)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};

	return (int)syscall(set ? SYS_capset : SYS_capget, &h, caps);
}

/* Back to what as_sandbox saved: fsuid first (it gives back the
 * capabilities a change of fsuid away from 0 took), then fsgid, then the
 * effective capabilities.  Not getting back is a bug: die. */
static void as_self(const struct as_sandbox *saved)
{
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];

	setfsuid(saved->uid);
	setfsgid(saved->gid);
	if ((uid_t)setfsuid((uid_t)-1) != saved->uid ||
	    (gid_t)setfsgid((gid_t)-1) != saved->gid)
		die_bug("cannot return to file-system uid %u, gid %u",
			(unsigned)saved->uid, (unsigned)saved->gid);
	if (saved->cap &&
	    (thread_caps(true, (struct __user_cap_data_struct *)saved->caps) <
		 0 ||
	     thread_caps(false, caps) < 0 || !sys_resource(caps)))
		die_bug("cannot take CAP_SYS_RESOURCE back");
}

/* Become the sandbox for the writes that follow (as_self after): each
 * change read back, as setfsuid(2) says to check it (a second call with
 * an invalid id returns the current one). */
static int as_sandbox(const struct workspace *w, struct as_sandbox *saved,
		      const char *shown, struct sbx_error **err)
{
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	uid_t uid = (uid_t)w->uid;
	gid_t gid = (gid_t)w->uid;

	memset(saved, 0, sizeof(*saved));
	saved->uid = (uid_t)setfsuid((uid_t)-1);
	saved->gid = (gid_t)setfsgid((gid_t)-1);
	if (thread_caps(false, saved->caps) < 0)
		return refuse(err, SBX_E_UNAVAILABLE, errno, shown,
			      "cannot be written: this thread's capabilities "
			      "cannot be read");
	memcpy(caps, saved->caps, sizeof(caps));
	if (sys_resource(caps)) {
		caps[CAP_TO_INDEX(CAP_SYS_RESOURCE)].effective &=
		    ~CAP_TO_MASK(CAP_SYS_RESOURCE);
		if (thread_caps(true, caps) < 0 ||
		    thread_caps(false, caps) < 0 || sys_resource(caps))
			return refuse(err, SBX_E_UNAVAILABLE, errno, shown,
				      "cannot be written: CAP_SYS_RESOURCE "
				      "cannot be dropped for it");
		saved->cap = true;
	}
	setfsgid(gid);
	setfsuid(uid);
	if ((gid_t)setfsgid((gid_t)-1) != gid ||
	    (uid_t)setfsuid((uid_t)-1) != uid) {
		as_self(saved);
		return refuse(err, SBX_E_UNAVAILABLE, 0, shown,
			      "cannot be written as the sandbox (uid %u, gid "
			      "%u): setfsuid or setfsgid did not take",
			      (unsigned)uid, (unsigned)gid);
	}
	return 0;
}

/*
 * The directory prefix (a path beneath the workspace), made as comp in
 * parent (the held directory prefix's parent resolved to) when missing:
 * the uid's, 0755.
 */
static int make_one(const struct workspace *w, int parent, const char *prefix,
		    const char *comp, const char *shown, bool *made,
		    struct sbx_error **err)
{
	for (int tries = 0; tries < RACE_TRIES; tries++) {
		int fd = beneath(w->fd, prefix, O_RDONLY | O_DIRECTORY, 0, 0);

		if (fd >= 0)
			return fd;
		if (errno != ENOENT)
			return open_error(errno, shown, err);
		if (mkdirat(parent, comp, 0755) < 0) {
			if (errno == EEXIST)
				continue; /* made meanwhile, or a dangling
					     symlink: look again */
			return write_failed(w, errno, shown,
					    "written: its directories cannot "
					    "be made",
					    err);
		}
		/* What was just made, not what may have been swapped in. */
		fd = beneath(parent, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
			     0, RESOLVE_NO_SYMLINKS);
		if (fd < 0)
			continue;
		if (fchown(fd, (uid_t)w->uid, (gid_t)w->uid) < 0 ||
		    fchmod(fd, 0755) < 0) {
			int e = errno;
			close(fd);
			return refuse(err, status_of(e), e, shown,
				      "cannot have its directories made");
		}
		(void)fsync(parent);
		*made = true;
		return fd;
	}
	return refuse_r(err, "cannot make directories", shown,
		      "cannot have its directories made: one on the way keeps "
		      "changing, or is a symlink that leads nowhere");
}

/*
 * Every directory of dir made as needed, one held descriptor at a time;
 * *made_from the offset in dir of the first component this call made
 * (every one after it was made too), or NOTHING_MADE.
 */
#define NOTHING_MADE ((size_t)-1)
static int make_dirs_as(const struct workspace *w, const char *dir,
			const char *shown, size_t *made_from,
			struct sbx_error **err)
{
	cleanup_free char *prefix = xstrdup(dir);
	size_t i = 0, len = strlen(dir);
	int fd =
	    workspace_openat(w, "", O_RDONLY | O_DIRECTORY, 0, 0, shown, err);

	while (fd >= 0 && i < len) {
		size_t j = i + strcspn(dir + i, "/");
		bool made = false;
		int next;

		prefix[j] = '\0';
		next = make_one(w, fd, prefix, prefix + i, shown, &made, err);
		prefix[j] = dir[j];
		if (made && *made_from == NOTHING_MADE)
			*made_from = i;
		close(fd);
		fd = next;
		i = j + 1;
	}
	return fd;
}

/* make_dirs_as as the sandbox: its directories are its blocks. */
static int make_dirs(const struct workspace *w, const char *dir,
		     const char *shown, size_t *made_from,
		     struct sbx_error **err)
{
	struct as_sandbox saved;
	int fd;

	if (as_sandbox(w, &saved, shown, err) < 0)
		return -1;
	fd = make_dirs_as(w, dir, shown, made_from, err);
	as_self(&saved);
	return fd;
}

/*
 * Remove what make_dirs made of dir, deepest first, each only while it is
 * empty (what the sandbox put there meanwhile stays, and so does its
 * directory): a write refused leaves the workspace as it was.
 */
static void unmake_dirs(const struct workspace *w, const char *dir,
			size_t made_from)
{
	cleanup_free char *p = xstrdup(dir);

	while (made_from != NOTHING_MADE) {
		char *slash = strrchr(p, '/');
		const char *comp = slash ? slash + 1 : p;
		int pfd;

		if ((size_t)(comp - p) < made_from)
			break;
		if (slash)
			*slash = '\0';
		pfd = beneath(w->fd, slash ? p : "", O_RDONLY | O_DIRECTORY, 0,
			      0);
		if (pfd < 0)
			break;
		if (unlinkat(pfd, comp, AT_REMOVEDIR) < 0) {
			close(pfd);
			break;
		}
		(void)fsync(pfd);
		close(pfd);
		if (!slash)
			break;
	}
}

/*
 * The held directory of rel (made when make and missing); *name points at
 * rel's last component.
 */
static int open_parent(const struct workspace *w, const char *rel,
		       const char *shown, size_t *made_from, const char **name,
		       struct sbx_error **err)
{
	cleanup_free char *dir = split(rel, name);
	int fd = beneath(w->fd, dir, O_RDONLY | O_DIRECTORY, 0, 0);

	if (fd >= 0)
		return fd;
	if (errno == ENOENT && made_from)
		return make_dirs(w, dir, shown, made_from, err);
	return open_error(errno, shown, err);
}

/* Copy in_fd to its end into fd, at most max_write bytes. */
static int copy_in(const struct workspace *w, int fd, int in_fd,
		   const char *shown, unsigned long long *total,
		   struct sbx_error **err)
{
	cleanup_free char *buf = xmalloc(BLOCK);

	for (;;) {
		int sig = workspace_cancelled(w);
		ssize_t n;

		if (sig)
			return refuse(err, SBX_E_CANCELLED, 0, shown,
				      "was being written when signal %d came; "
				      "nothing was changed",
				      sig);
		n = read(in_fd, buf, BLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return refuse(err, SBX_E_UNAVAILABLE, errno, shown,
				      "cannot be written: its content cannot "
				      "be read");
		if (n == 0)
			return 0;
		if (*total + (size_t)n > w->max_write)
			return refuse_r(err, "over the write limit", shown,
				      "would be over the %llu-byte write "
				      "limit; nothing was written",
				      w->max_write);
		if (write_all(fd, buf, (size_t)n) < 0)
			return write_failed(w, errno, shown, "written", err);
		*total += (size_t)n;
	}
}

/*
 * Make name in the held directory pfd: the bytes of in_fd (when >= 0) or
 * data, in a temporary file there that is flushed, given to the uid and
 * mode, then renamed over name.  On failure the temporary goes and name
 * is as it was.
 */
static int put_file_as(const struct workspace *w, int pfd, const char *name,
		       const char *shown, int in_fd, const char *data,
		       size_t len, unsigned mode, unsigned long long *bytes,
		       struct sbx_error **err)
{
	cleanup_free char *tmp = NULL;
	unsigned long long total = 0;
	int fd = open_temp_at(pfd, ".sbxcat-", 0600, &tmp);
	int e;

	if (fd < 0)
		return write_failed(w, errno, shown, "written", err);
	if (in_fd >= 0) {
		if (copy_in(w, fd, in_fd, shown, &total, err) < 0)
			goto fail;
	} else {
		if (write_all(fd, data, len) < 0) {
			write_failed(w, errno, shown, "written", err);
			goto fail;
		}
		total = len;
	}
	/* Owner and mode before fsync: what a crash leaves after the rename
	 * is the sandbox's file, not a root-owned one. */
	if (fchown(fd, (uid_t)w->uid, (gid_t)w->uid) < 0 ||
	    fchmod(fd, mode) < 0 || fsync(fd) < 0) {
		write_failed(w, errno, shown, "written", err);
		goto fail;
	}
	e = close(fd);
	fd = -1;
	if (e < 0 || renameat(pfd, tmp, pfd, name) < 0) {
		e = errno;
		if (e == EISDIR)
			(void)refuse_why(err, SBX_R_A_DIRECTORY, 0, 0, shown,
					 "is a directory");
		else
			write_failed(w, e, shown, "written", err);
		goto fail;
	}
	if (fsync(pfd) < 0 && errno != EINVAL)
		return refuse(err, status_of(errno), errno, shown,
			      "was written, but its directory cannot be "
			      "flushed");
	*bytes = total;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(pfd, tmp, 0);
	return -1;
}

/* put_file_as as the sandbox: on a full disk it stops where the
 * sandbox's own writes stop. */
static int put_file(const struct workspace *w, int pfd, const char *name,
		    const char *shown, int in_fd, const char *data, size_t len,
		    unsigned mode, unsigned long long *bytes,
		    struct sbx_error **err)
{
	struct as_sandbox saved;
	int rc;

	if (as_sandbox(w, &saved, shown, err) < 0)
		return -1;
	rc = put_file_as(w, pfd, name, shown, in_fd, data, len, mode, bytes,
			 err);
	as_self(&saved);
	return rc;
}

int workspace_write(const struct workspace *w, const char *rel,
		    const char *shown, int in_fd, unsigned long long *bytes,
		    bool *created, struct sbx_error **err)
{
	cleanup_free char *norm = NULL;
	const char *name;
	unsigned mode = 0644;
	size_t made_from = NOTHING_MADE;
	struct stat st;
	int pfd, rc;

	*bytes = 0;
	*created = false;
	if (check_path(rel, shown, false, &norm, err) < 0)
		return -1;
	pfd = open_parent(w, norm, shown, &made_from, &name, err);
	if (pfd < 0)
		goto undo;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode)) {
			close(pfd);
			return refuse_why(err, SBX_R_A_DIRECTORY, 0, 0, shown,
					  "is a directory");
		}
		if (S_ISREG(st.st_mode))
			mode = st.st_mode & 0777;
	} else if (errno == ENOENT) {
		*created = true;
	} else {
		int e = errno;
		close(pfd);
		return open_error(e, shown, err);
	}
	rc = put_file(w, pfd, name, shown, in_fd, NULL, 0, mode, bytes, err);
	close(pfd);
	if (rc == 0)
		return 0;
undo:
	if (made_from != NOTHING_MADE) {
		cleanup_free char *dir = split(norm, &name);

		unmake_dirs(w, dir, made_from);
	}
	return -1;
}

/* "4", "4 and 9", "4, 9 and 12", or ten of them and ", ...". */
static void add_line_list(struct strbuf *sb, const unsigned long long *lines,
			  size_t n, bool more)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			strbuf_addstr(sb, i == n - 1 && !more ? " and " : ", ");
		strbuf_addf(sb, "%llu", lines[i]);
	}
	if (more)
		strbuf_addstr(sb, ", ...");
}

static int not_unique(const char *shown, size_t count,
		      const unsigned long long *lines, size_t nlines, bool more,
		      struct sbx_error **err)
{
	cleanup_free char *q = quote(shown);
	struct strbuf sb = STRBUF_INIT;
	int rc;

	add_line_list(&sb, lines, nlines, more);
	rc = sbx_error_set(err, SBX_E_CONFLICT, 0,
			   "old text matches %zu times in '%s', on line%s %s; "
			   "give more context to make it unique, or replace "
			   "every occurrence",
			   count, q, nlines > 1 ? "s" : "", strbuf_str(&sb));
	sbx_error_why(*err, SBX_R_OLD_NOT_UNIQUE, count, 0);
	strbuf_release(&sb);
	return rc;
}

/*
 * The occurrences of old in data (non-overlapping, leftmost first): how
 * many, the first one's line, and the first LINES_NAMED lines they are on.
 * Nothing is allocated: a file of a million occurrences costs a scan.
 */
struct occurrences {
	size_t count;
	unsigned long long first_line;
	unsigned long long lines[LINES_NAMED];
	size_t nlines;
	bool more; /* on more lines than are named */
};

static void find_all(const char *data, size_t len, const char *old,
		     size_t oldlen, struct occurrences *o)
{
	unsigned long long at = 1;
	size_t from = 0, counted = 0;
	const char *p;

	memset(o, 0, sizeof(*o));
	while (from + oldlen <= len &&
	       (p = text_find(data + from, len - from, old, oldlen))) {
		size_t pos = (size_t)(p - data);

		at += count_newlines(data + counted, pos - counted);
		counted = pos;
		if (!o->count)
			o->first_line = at;
		if (!o->nlines || o->lines[o->nlines - 1] != at) {
			if (o->nlines < LINES_NAMED)
				o->lines[o->nlines++] = at;
			else
				o->more = true;
		}
		o->count++;
		from = pos + oldlen;
	}
}

static int old_not_found(const char *shown, struct sbx_error **err)
{
	cleanup_free char *q = quote(shown);

	sbx_error_set(err, SBX_E_NOT_FOUND, 0, "old text not found in '%s'", q);
	sbx_error_why(*err, SBX_R_OLD_NOT_FOUND, 0, 0);
	return -1;
}

/*
 * The edit of data: every occurrence of old replaced in *res, which is
 * sized first and refused over max_write before it is allocated.
 */
static int replace(const struct workspace *w, const char *data, size_t len,
		   const char *shown, const char *old, size_t oldlen,
		   const char *new, size_t newlen, bool all, struct strbuf *res,
		   size_t *count, unsigned long long *line,
		   struct sbx_error **err)
{
	struct occurrences o;
	size_t from = 0, added, size;
	const char *p;

	find_all(data, len, old, oldlen, &o);
	*count = o.count;
	*line = o.first_line;
	if (o.count == 0)
		return old_not_found(shown, err);
	if (o.count > 1 && !all)
		return not_unique(shown, o.count, o.lines, o.nlines, o.more,
				  err);
	/* len - count * oldlen + count * newlen; the occurrences do not
	 * overlap, so the first part cannot go below 0.  A size that wraps
	 * is over any limit (refused, not fatal: st_mult would abort, and
	 * the refusal must still have its audit row). */
	if (__builtin_mul_overflow(o.count, newlen, &added) ||
	    __builtin_add_overflow(len - o.count * oldlen, added, &size))
		size = SIZE_MAX;
	if (size > w->max_write)
		return refuse_r(err, "over the write limit", shown,
				"would be %s%zu bytes after the edit, over the "
				"%llu-byte write limit",
				size == SIZE_MAX ? "at least " : "", size,
				w->max_write);
	strbuf_grow(res, size);
	for (size_t i = 0; i < o.count; i++) {
		p = text_find(data + from, len - from, old, oldlen);
		strbuf_add(res, data + from, (size_t)(p - data) - from);
		strbuf_add(res, new, newlen);
		from = (size_t)(p - data) + oldlen;
	}
	strbuf_add(res, data + from, len - from);
	return 0;
}

/*
 * The edit of a file that is not UTF-8 (text.h, "Text files"), in its
 * own encoding, so that nothing but what is replaced changes.
 *
 * windows-1252 is a bijection of bytes and characters: old and new are
 * encoded to it and replaced as bytes (the same lines, the same
 * occurrences as in the text read shows).  An old it cannot encode is
 * in no such file; a new it cannot encode is refused (the file would
 * have to change encoding: a write does that).  An old or new that is
 * not UTF-8 at all (bytes from the command line) is taken as bytes.
 *
 * UTF-16 is decoded, edited as UTF-8, encoded again with its byte order
 * mark; a file that does not decode and encode back to its own bytes
 * (an unpaired surrogate, an odd length) is refused rather than
 * repaired by an edit of something else.
 */
static int replace_encoded(const struct workspace *w, const char *data,
			   size_t len, enum text_encoding enc,
			   const char *shown, const char *old, size_t oldlen,
			   const char *new, size_t newlen, bool all,
			   struct strbuf *res, size_t *count,
			   unsigned long long *line, struct sbx_error **err)
{
	struct strbuf o = STRBUF_INIT, n = STRBUF_INIT, t = STRBUF_INIT;
	struct strbuf back = STRBUF_INIT;
	int rc = -1;

	if (enc == TEXT_SINGLE_BYTE) {
		bool old_text = utf8_first_invalid(old, oldlen) < 0;
		bool new_text = utf8_first_invalid(new, newlen) < 0;

		if (old_text && !text_encode(&o, old, oldlen, enc)) {
			rc = old_not_found(shown, err);
			goto out;
		}
		if (new_text && !text_encode(&n, new, newlen, enc)) {
			rc = refuse_r(err, "new text not encodable", shown,
				      "is %s text, which cannot hold every "
				      "character of the new text; nothing was "
				      "changed (write the file whole to change "
				      "its encoding)",
				      text_encoding_name(enc));
			goto out;
		}
		rc = replace(w, data, len, shown, old_text ? o.buf : old,
			     old_text ? o.len : oldlen, new_text ? n.buf : new,
			     new_text ? n.len : newlen, all, res, count, line,
			     err);
		goto out;
	}
	text_decode(&t, data, len, enc);
	strbuf_add(&back, data, 2); /* the byte order mark */
	if (!text_encode(&back, t.buf ? t.buf : "", t.len, enc) ||
	    back.len != len || memcmp(back.buf, data, len) != 0) {
		rc = refuse_r(err, "not valid text", shown,
			      "is not valid %s (an unpaired surrogate or an "
			      "odd length); edit it with exec",
			      text_encoding_name(enc));
		goto out;
	}
	strbuf_reset(&back);
	rc = replace(w, t.buf ? t.buf : "", t.len, shown, old, oldlen, new,
		     newlen, all, &back, count, line, err);
	if (rc < 0)
		goto out;
	strbuf_add(res, data, 2);
	if (!text_encode(res, back.buf ? back.buf : "", back.len, enc)) {
		rc = refuse_r(err, "new text not encodable", shown,
			      "cannot hold the new text, which is not UTF-8; "
			      "nothing was changed");
		goto out;
	}
	if (res->len > w->max_write)
		rc = refuse_r(err, "over the write limit", shown,
			      "would be %zu bytes after the edit, over the "
			      "%llu-byte write limit",
			      res->len, w->max_write);
out:
	strbuf_release(&o);
	strbuf_release(&n);
	strbuf_release(&t);
	strbuf_release(&back);
	return rc;
}

int workspace_edit(const struct workspace *w, const char *rel,
		   const char *shown, const char *old, size_t oldlen,
		   const char *new, size_t newlen, bool all, size_t *count,
		   unsigned long long *line, struct sbx_error **err)
{
	cleanup_free char *norm = NULL;
	cleanup_free char *data = NULL;
	struct strbuf res = STRBUF_INIT;
	unsigned long long bytes;
	enum text_encoding enc = TEXT_UTF8;
	const char *name;
	struct stat st;
	size_t len;
	int pfd, fd, rc;

	*count = 0;
	*line = 0;
	if (oldlen == 0)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "old text is empty");
	if (check_path(rel, shown, false, &norm, err) < 0)
		return -1;
	pfd = open_parent(w, norm, shown, NULL, &name, err);
	if (pfd < 0)
		return -1;
	/* The name itself, not a symlink's target: what is read is what the
	 * rename below replaces. */
	fd = beneath(pfd, name, O_PATH | O_NOFOLLOW, 0, 0);
	if (fd < 0) {
		rc = open_error(errno, shown, err);
		goto out;
	}
	fd = reopen_regular(fd, shown, &st, err);
	if (fd < 0) {
		rc = -1;
		goto out;
	}
	if ((unsigned long long)st.st_size > w->max_read) {
		close(fd);
		rc = over_read_limit(w, shown, &st, "edit it with exec", err);
		goto out;
	}
	rc = read_whole(w, fd, shown, &st, &data, &len, err);
	if (rc == 0)
		enc = text_sniff(data, len);
	/* UTF-8, its byte order mark kept: the bytes are the text. */
	if (rc == 0 && (enc == TEXT_UTF8 || enc == TEXT_UTF8_BOM))
		rc = replace(w, data, len, shown, old, oldlen, new, newlen, all,
			     &res, count, line, err);
	else if (rc == 0)
		rc = replace_encoded(w, data, len, enc, shown, old, oldlen, new,
				     newlen, all, &res, count, line, err);
	if (rc == 0)
		rc = put_file(w, pfd, name, shown, -1, res.buf ? res.buf : "",
			      res.len, st.st_mode & 0777, &bytes, err);
	if (rc < 0)
		*count = 0;
out:
	strbuf_release(&res);
	close(pfd);
	return rc;
}

int workspace_stat(const struct workspace *w, const char *rel,
		   const char *shown, struct stat *st, char **target,
		   struct sbx_error **err)
{
	cleanup_free char *norm = NULL;
	size_t size = 256;
	int fd;

	*target = NULL;
	if (check_path(rel, shown, true, &norm, err) < 0)
		return -1;
	/* O_PATH | O_NOFOLLOW: a symlink at the end is itself what is
	 * opened; a mount there is refused (RESOLVE_NO_XDEV). */
	fd = workspace_openat(w, norm, O_PATH | O_NOFOLLOW, 0, 0, shown, err);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		return refuse(err, status_of(e), e, shown,
			      "cannot be examined");
	}
	while (S_ISLNK(st->st_mode)) {
		char *buf = xmalloc(size);
		ssize_t n = readlinkat(fd, "", buf, size);

		if (n >= 0 && (size_t)n < size) {
			buf[n] = '\0';
			*target = buf;
			break;
		}
		free(buf);
		if (n < 0) {
			int e = errno;
			close(fd);
			return refuse(err, status_of(e), e, shown,
				      "is a symlink that cannot be read");
		}
		size = st_mult(size, 2);
	}
	close(fd);
	return 0;
}

/* A directory at name in pfd emptied (from a held descriptor) and removed. */
static int rm_tree(const struct workspace *w, int pfd, const char *name,
		   const char *shown, unsigned long long *removed,
		   struct sbx_error **err)
{
	cleanup_free char *q = NULL;
	int fd = beneath(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0,
			 RESOLVE_NO_SYMLINKS);

	if (fd < 0 && errno == EXDEV)
		return refuse_r(err, "a mount point", shown,
			      "is a mount point; it is not removed");
	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR || errno == ENOENT
			   ? 1 /* swapped: look again */
			   : open_error(errno, shown, err);
	q = quote(shown);
	if (tree_empty(fd, q, SBX_E_REFUSED, w->cancel, removed, err) < 0)
		return -1;
	return 1;
}

int workspace_rm(const struct workspace *w, const char *rel, const char *shown,
		 bool recursive, unsigned long long *removed,
		 struct sbx_error **err)
{
	cleanup_free char *norm = NULL;
	const char *name;
	int pfd, rc = 1;

	*removed = 0;
	if (check_path(rel, shown, false, &norm, err) < 0)
		return -1;
	pfd = open_parent(w, norm, shown, NULL, &name, err);
	if (pfd < 0)
		return -1;
	/* rc 1: the name changed under us; look at it again. */
	for (int tries = 0; rc == 1 && tries < RACE_TRIES; tries++) {
		struct stat st;

		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = open_error(errno, shown, err);
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(pfd, name, 0) == 0)
				rc = 0;
			else if (errno == EBUSY)
				rc = refuse_r(err, "a mount point", shown,
					    "is a mount point; it is not "
					    "removed");
			else if (errno != EISDIR && errno != ENOENT)
				rc = refuse(err, status_of(errno), errno, shown,
					    "cannot be removed");
			continue;
		}
		if (st.st_dev != w->dev) {
			rc = refuse_r(err, "a mount point", shown,
				    "is a mount point; it is not removed");
			break;
		}
		if (unlinkat(pfd, name, AT_REMOVEDIR) == 0) {
			rc = 0;
			continue;
		}
		if (errno == EBUSY) {
			rc = refuse_r(err, "a mount point", shown,
				    "is a mount point; it is not removed");
		} else if (errno == ENOTEMPTY || errno == EEXIST) {
			if (!recursive)
				rc = refuse_why(
				    err, SBX_R_DIR_NOT_EMPTY, 0, 0, shown,
				    "is a directory that is not "
				    "empty; only a recursive remove "
				    "removes it");
			else
				rc = rm_tree(w, pfd, name, shown, removed, err);
		} else if (errno != ENOTDIR && errno != ENOENT) {
			rc = refuse(err, status_of(errno), errno, shown,
				    "cannot be removed");
		}
	}
	if (rc == 1)
		rc = refuse_r(err, "changed while removed", shown,
			    "kept changing while it was removed; try again");
	if (rc == 0) {
		(*removed)++;
		(void)fsync(pfd);
	}
	close(pfd);
	return rc;
}

int workspace_mkdir(const struct workspace *w, const char *rel,
		    const char *shown, bool *created, struct sbx_error **err)
{
	cleanup_free char *norm = NULL;
	size_t made_from = NOTHING_MADE;
	int fd;

	*created = false;
	if (check_path(rel, shown, false, &norm, err) < 0)
		return -1;
	fd = beneath(w->fd, norm, O_RDONLY | O_DIRECTORY, 0, 0);
	if (fd < 0 && errno != ENOENT)
		return open_error(errno, shown, err);
	if (fd < 0)
		fd = make_dirs(w, norm, shown, &made_from, err);
	if (fd < 0)
		return -1;
	close(fd);
	*created = made_from != NOTHING_MADE;
	return 0;
}

/* rename(2)'s refusals in the workspace's words. */
static int move_error(int e, const char *shown, struct sbx_error **err)
{
	switch (e) {
	case EXDEV:
	case EBUSY:
		return refuse_r(err, "a mount point", shown,
				"is on or is another mount; it is not moved");
	case EINVAL:
		return refuse_r(err, "into itself", shown,
				"cannot be moved into itself");
	case ENOTEMPTY:
	case EEXIST:
		return refuse_why(err, SBX_R_DIR_NOT_EMPTY, 0, 0, shown,
				  "is a directory that is not empty");
	default:
		return open_error(e, shown, err);
	}
}

int workspace_move(const struct workspace *w, const char *from,
		   const char *shown_from, const char *to, const char *shown_to,
		   struct sbx_error **err)
{
	cleanup_free char *nfrom = NULL, *nto = NULL;
	const char *sname, *dname;
	struct as_sandbox saved;
	int sfd, dfd = -1, rc = -1, e;

	if (check_path(from, shown_from, false, &nfrom, err) < 0 ||
	    check_path(to, shown_to, false, &nto, err) < 0)
		return -1;
	sfd = open_parent(w, nfrom, shown_from, NULL, &sname, err);
	if (sfd < 0)
		return -1;
	dfd = open_parent(w, nto, shown_to, NULL, &dname, err);
	if (dfd < 0)
		goto out;
	if (as_sandbox(w, &saved, shown_from, err) < 0)
		goto out;
	rc = renameat(sfd, sname, dfd, dname);
	e = errno;
	as_self(&saved);
	if (rc < 0) {
		struct stat st;

		/* Which side a missing or bad name is. */
		rc = move_error(e,
				e == ENOENT && fstatat(sfd, sname, &st,
						       AT_SYMLINK_NOFOLLOW) == 0
				    ? shown_to
				: e == ENOTEMPTY || e == EEXIST || e == EISDIR
				    ? shown_to
				    : shown_from,
				err);
	} else {
		(void)fsync(dfd);
		if (sfd != dfd)
			(void)fsync(sfd);
	}
out:
	close(sfd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

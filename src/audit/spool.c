/*
 * spool.c - the audit's local append-only spool and its replay (spool.h).
 *
 * Everything is reached from the directory's descriptor, opened with
 * O_NOFOLLOW and checked to be ours and writable by us alone, so nobody
 * else can read the rows, swap a file for a symlink, or feed a replay
 * rows of their own.
 *
 * A line: audit_row_json's object, compact, with ',"sum":"HEX"}' last,
 * HEX the SHA-256 of the bytes before ',"sum":'.  A clean row fits a line
 * with room to spare (SPOOL_LINE_MAX is 64 KiB): target 512 and names
 * (tenant, session, runtime) 3 x 512 characters of at most 4 bytes each
 * in UTF-8 (a '"' or '\' escaped by JSON is 2), detail 200 x 4, agent,
 * run and wire id 200 bytes each, doubled at worst by JSON escapes, plus the
 * keys, id, time, numbers and sum: under 11 KiB.
 *
 * What a crash can leave, and what replay makes of it:
 * - A torn last line (no newline): set aside.  A later append then glues
 *   its whole line onto the torn bytes; replay finds the row after the
 *   torn bytes (a line can hold '{"id":"' only at its start: inside a JSON
 *   string the quotes are escaped) and sets aside only what precedes it.
 * - A crash after the sink took a batch and before the truncate: the same
 *   rows are handed on again; their UUIDs make that a no-op downstream.
 * - A crash after a bad line was appended to kept-aside.jsonl and before
 *   the truncate (or a sink failing after it): the next replay meets the
 *   same bad line again.  Each kept-aside entry carries a key, the SHA-256
 *   of the spool's first line, the bad line's offset and its bytes, and an
 *   entry whose key is already there is not written again: a line is never
 *   kept aside twice.  After a truncate the first line is a new row with a
 *   new UUID, so a later bad line never takes an earlier one's key (unless
 *   the whole prefix is identical garbage, which carries no row).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "audit/audit.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "audit/spool.h"
#include "basic/text.h"
#include "basic/xjson.h"

#define SPOOL_FILE "audit.jsonl"
#define KEPT_FILE "kept-aside.jsonl"
#define LOST_FILE "lost.jsonl"
#define COUNT_FILE "lost.count"
#define COUNT_LEN 21 /* 20 digits and a newline */
#define FLUSH_FILE "flush.json"
#define SUM_KEY ",\"sum\":\""
#define SUM_LEN (sizeof(SUM_KEY) - 1 + 64 + 2) /* ,"sum":"HEX"} */
#define ROW_START "{\"id\":\""
/* A glued line (torn bytes, then a whole line) is held whole up to this. */
#define HOLD_MAX (2 * SPOOL_LINE_MAX)

/* A full disk: the floor, the reserve, lost.count (at the end). */
static int read_limits(struct spool *s, struct sbx_error **err);
static int keep_reserve(struct spool *s, int fd, struct sbx_error **err);
static int spool_room(struct spool *s, struct spool_status *st,
		      struct sbx_error **err);

void spool_init(struct spool *s, const struct audit_config *c)
{
	s->dir = xstrdup(c->spool_dir ? c->spool_dir : SPOOL_DEFAULT_DIR);
	s->dirfd = -1;
	s->fd = -1;
	s->count_fd = -1;
	s->limits_err = NULL;
	s->min_free = c->spool_min_free;
	s->reserve = c->spool_reserve;
	/* A reserve holds at least one line of the longest kind. */
	if (s->reserve && s->reserve < SPOOL_LINE_MAX)
		s->reserve = SPOOL_LINE_MAX;
	/* Said by the first call that needs the limits (spool.h). */
	if (c->limits_err)
		sbx_error_set(&s->limits_err, c->limits_err->kind, 0, "%s",
			      c->limits_err->msg);
}

void spool_close(struct spool *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->count_fd >= 0)
		close(s->count_fd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->dir);
	s->dir = NULL;
	sbx_error_free(&s->limits_err);
	s->fd = s->dirfd = s->count_fd = -1;
}

/* The directory or DIR/NAME, escaped for a message (a static buffer per
 * call site would do, but error paths are rare: allocate). */
static char *shown(const struct spool *s, const char *name)
{
	struct strbuf sb = STRBUF_INIT;

	text_add_escaped(&sb, s->dir, strlen(s->dir));
	if (name) {
		strbuf_addch(&sb, '/');
		strbuf_addstr(&sb, name);
	}
	return strbuf_detach(&sb, NULL);
}

static int fail(const struct spool *s, const char *name, int errnum,
		struct sbx_error **err, const char *what)
{
	char *p = shown(s, name);

	sbx_error_set(err, SBX_E_UNAVAILABLE, errnum, "spool %s '%s'%s%s",
		      name ? "file" : "directory", p, what ? ": " : "",
		      what ? what : "");
	free(p);
	return -1;
}

/* The directory's parent, flushed so a directory just made survives. */
static void sync_parent(const char *dir)
{
	char *p = xstrdup(dir), *slash;
	int fd;

	slash = strrchr(p, '/');
	while (slash && slash > p && slash[1] == '\0') {
		*slash = '\0';
		slash = strrchr(p, '/');
	}
	if (!slash)
		strcpy(p, ".");
	else if (slash == p)
		p[1] = '\0';
	else
		*slash = '\0';
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(p);
}

/*
 * Open the directory (made 0700 when missing and create).  *missing (may
 * be NULL) is set when it does not exist and create is false: then 0.
 */
static int open_dir(struct spool *s, bool create, bool *missing,
		    struct sbx_error **err)
{
	struct stat st;
	int fd;

	if (missing)
		*missing = false;
	if (s->dirfd >= 0)
		return 0;
	for (;;) {
		fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				      O_CLOEXEC | O_NOCTTY);
		if (fd >= 0 || errno != ENOENT)
			break;
		if (!create) {
			if (missing)
				*missing = true;
			return 0;
		}
		if (mkdir(s->dir, 0700) < 0 && errno != EEXIST)
			return fail(s, NULL, errno, err, "cannot make it");
		sync_parent(s->dir);
	}
	if (fd < 0) {
		if (errno == ELOOP)
			return fail(s, NULL, 0, err,
				    "is a symbolic link (refused)");
		/* O_DIRECTORY fails first on a symlink: ENOTDIR, not ELOOP */
		if (errno == ENOTDIR) {
			struct stat ls;

			if (lstat(s->dir, &ls) < 0)
				return fail(s, NULL, errno, err, NULL);
			if (S_ISLNK(ls.st_mode))
				return fail(s, NULL, 0, err,
					    "is a symbolic link (refused)");
			return fail(s, NULL, 0, err, "is not a directory");
		}
		return fail(s, NULL, errno, err, NULL);
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		return fail(s, NULL, errno, err, NULL);
	}
	if (st.st_uid != geteuid()) {
		char why[96];

		close(fd);
		snprintf(why, sizeof(why), "owned by uid %u, not by us (%u)",
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return fail(s, NULL, 0, err, why);
	}
	if (st.st_mode & 022) {
		char why[96];

		close(fd);
		snprintf(why, sizeof(why),
			 "writable by group or others (mode %04o)",
			 (unsigned)(st.st_mode & 07777));
		return fail(s, NULL, 0, err, why);
	}
	s->dirfd = fd;
	return 0;
}

/* A file of the spool: a regular file of ours, else refused. */
static int check_file(struct spool *s, const char *name, int fd,
		      struct sbx_error **err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return fail(s, name, errno, err, NULL);
	if (!S_ISREG(st.st_mode))
		return fail(s, name, 0, err, "is not a regular file");
	if (st.st_uid != geteuid())
		return fail(s, name, 0, err, "is not owned by us");
	return 0;
}

/* openat for a file of the spool; ENOENT and !create: -1 with errno. */
static int open_file(struct spool *s, const char *name, int flags, bool create,
		     struct sbx_error **err)
{
	flags |= O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
	for (;;) {
		int fd = openat(s->dirfd, name, flags);

		if (fd < 0 && errno == ENOENT && create) {
			fd = openat(s->dirfd, name, flags | O_CREAT | O_EXCL,
				    0600);
			if (fd < 0 && errno == EEXIST)
				continue;
			if (fd >= 0 && fsync(s->dirfd) < 0) {
				int e = errno;

				close(fd);
				return fail(s, NULL, e, err, "fsync");
			}
		}
		if (fd < 0) {
			int e = errno;

			if (e == ENOENT && !create)
				return -1;
			if (e == ELOOP)
				fail(s, name, 0, err,
				     "is a symbolic link (refused)");
			else
				fail(s, name, e, err, NULL);
			errno = e;
			return -1;
		}
		if (check_file(s, name, fd, err) < 0) {
			close(fd);
			errno = EPERM;
			return -1;
		}
		return fd;
	}
}

int spool_open(struct spool *s, struct sbx_error **err)
{
	int fd;

	if (s->fd >= 0)
		return 0;
	if (open_dir(s, true, NULL, err) < 0)
		return -1;
	/* read too: torn_tail */
	fd = open_file(s, SPOOL_FILE, O_RDWR | O_APPEND, true, err);
	if (fd < 0)
		return -1;
	s->fd = fd;
	return 0;
}

static int lock(int fd, int how)
{
	while (flock(fd, how) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* The row as a spool line, newline included. */
static void spool_line(struct strbuf *line, const struct audit_row *r)
{
	json_t *j = audit_row_json(r);
	char *text = json_dumps(j, JSON_COMPACT);
	size_t n;
	char sum[65];

	json_decref(j);
	if (!text)
		die_oom();
	n = strlen(text);
	if (n < 2 || text[n - 1] != '}')
		die_bug("audit_row_json gave no object");
	sha256_hex(text, n - 1, sum);
	strbuf_add(line, text, n - 1);
	strbuf_addstr(line, SUM_KEY);
	strbuf_addstr(line, sum);
	strbuf_addstr(line, "\"}\n");
	free(text);
}

/* Whether the file ends in something other than a newline. */
static bool torn_tail(int fd)
{
	struct stat st;
	char c;

	return fstat(fd, &st) == 0 && st.st_size > 0 &&
	       pread(fd, &c, 1, st.st_size - 1) == 1 && c != '\n';
}

int spool_append(struct spool *s, const struct audit_row *r,
		 struct sbx_error **err)
{
	struct strbuf line = STRBUF_INIT;
	struct iovec iov[2];
	ssize_t n;
	int e;

	if (audit_row_check(r, err) < 0)
		return sbx_error_wrap(err, "audit row not spooled");
	if (spool_open(s, err) < 0)
		return -1;
	spool_line(&line, r);
	if (line.len > SPOOL_LINE_MAX) /* cannot happen: see the top */
		die_bug("a clean row made a spool line of %zu bytes", line.len);
	if (lock(s->fd, LOCK_SH) < 0) {
		strbuf_release(&line);
		return fail(s, SPOOL_FILE, errno, err, "flock");
	}
	/* One write: appenders never interleave, and a short one (a full
	 * disk) leaves a line without its newline, which replay sets aside.
	 * The next append ends such a line first, so its row is never glued
	 * onto torn bytes. */
	iov[0].iov_base = (void *)"\n";
	iov[0].iov_len = 0;
	if (torn_tail(s->fd)) {
		/* Under the shared lock another append may be half-way
		 * through: look again with the appenders kept out. */
		if (lock(s->fd, LOCK_EX) < 0) {
			strbuf_release(&line);
			return fail(s, SPOOL_FILE, errno, err, "flock");
		}
		iov[0].iov_len = torn_tail(s->fd) ? 1 : 0;
	}
	iov[1].iov_base = line.buf;
	iov[1].iov_len = line.len;
	n = writev(s->fd, iov, 2);
	e = errno;
	if (n >= 0) /* the row's bytes written */
		n = n < (ssize_t)iov[0].iov_len ? 0
						: n - (ssize_t)iov[0].iov_len;
	if (n == (ssize_t)line.len && fsync(s->fd) < 0) {
		e = errno;
		n = -2;
	}
	flock(s->fd, LOCK_UN);
	if (n == (ssize_t)line.len) {
		strbuf_release(&line);
		return 0;
	}
	if (n == -2) {
		fail(s, SPOOL_FILE, e, err, "fsync");
	} else if (n < 0) {
		fail(s, SPOOL_FILE, e, err, "write");
	} else {
		char why[96];

		snprintf(why, sizeof(why), "short write (%zd of %zu bytes)", n,
			 line.len);
		fail(s, SPOOL_FILE, 0, err, why);
	}
	strbuf_release(&line);
	return -1;
}

unsigned long long spool_pending(struct spool *s)
{
	struct stat st;
	bool missing;

	if (s->fd >= 0)
		return fstat(s->fd, &st) == 0 && st.st_size > 0
			   ? (unsigned long long)st.st_size
			   : 0;
	if (open_dir(s, false, &missing, NULL) < 0 || missing)
		return 0;
	return fstatat(s->dirfd, SPOOL_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		       S_ISREG(st.st_mode) && st.st_size > 0
		   ? (unsigned long long)st.st_size
		   : 0;
}

/*
 * Lines of a file in bounded memory.  A line longer than HOLD_MAX is
 * handed over cut (its first HOLD_MAX bytes, trunc set) and the rest of
 * it skipped.  Empty lines are handed over too (n 0, nl set).
 */
struct reader {
	int fd;
	char *buf;
	size_t off, len, cap;
	bool eof, skipping;
	unsigned long long pos;	  /* file offset of buf[off] */
	unsigned long long limit; /* stop after this many bytes (status) */
};

struct line {
	const char *p;
	size_t n;
	bool nl, trunc;
	unsigned long long at;
};

static void reader_init(struct reader *rd, int fd)
{
	memset(rd, 0, sizeof(*rd));
	rd->fd = fd;
	rd->cap = HOLD_MAX + 65536;
	rd->buf = xmalloc(rd->cap);
	rd->limit = ULLONG_MAX;
}

static void reader_release(struct reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
}

/* 1: a line; 0: the end; -1: a read error (errno). */
static int reader_next(struct reader *rd, struct line *l)
{
	for (;;) {
		char *nl = memchr(rd->buf + rd->off, '\n', rd->len - rd->off);
		size_t have =
		    nl ? (size_t)(nl - (rd->buf + rd->off)) : rd->len - rd->off;

		if (rd->skipping) {
			rd->pos += have + (nl ? 1 : 0);
			rd->off += have + (nl ? 1 : 0);
			if (nl)
				rd->skipping = false;
		} else if (nl || have >= HOLD_MAX || (rd->eof && have)) {
			l->p = rd->buf + rd->off;
			l->at = rd->pos;
			l->nl = nl && have <= HOLD_MAX;
			l->trunc = have > HOLD_MAX || (!nl && have >= HOLD_MAX);
			l->n = have > HOLD_MAX ? HOLD_MAX : have;
			if (l->trunc) {
				rd->off += l->n;
				rd->pos += l->n;
				rd->skipping = true;
			} else {
				rd->off += have + (nl ? 1 : 0);
				rd->pos += have + (nl ? 1 : 0);
			}
			return 1;
		}
		if (rd->eof)
			return 0;
		if (rd->off > 0) {
			memmove(rd->buf, rd->buf + rd->off, rd->len - rd->off);
			rd->len -= rd->off;
			rd->off = 0;
		}
		{
			size_t want = rd->cap - rd->len;
			unsigned long long left =
			    rd->limit - (rd->pos + rd->len);
			ssize_t k;

			if (want > left)
				want = (size_t)left;
			if (want == 0) {
				rd->eof = true;
				continue;
			}
			k = read(rd->fd, rd->buf + rd->len, want);
			if (k < 0) {
				if (errno == EINTR)
					continue;
				return -1;
			}
			if (k == 0)
				rd->eof = true;
			rd->len += (size_t)k;
		}
	}
}

/*
 * A value of a quick line (quick_object): a string of printable ASCII
 * with nothing to unescape, an integer of at most 18 digits, true, false
 * or null, as jansson would make it; NULL for anything else.
 */
static json_t *quick_value(const char **pp, const char *e)
{
	const char *p = *pp, *q;

	if (p >= e)
		return NULL;
	if (*p == '"') {
		for (q = ++p; q < e && *q != '"'; q++)
			if (*q < 0x20 || *q > 0x7e || *q == '\\')
				return NULL;
		if (q == e)
			return NULL;
		*pp = q + 1;
		return json_stringn_nocheck(p, (size_t)(q - p));
	}
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		long long v = 0;
		bool neg = *p == '-';

		q = neg ? p + 1 : p;
		p = q;
		while (q < e && *q >= '0' && *q <= '9' && q - p < 19)
			v = v * 10 + (*q++ - '0');
		/* No digits, a leading zero, too long, or a fraction or
		 * exponent (a real to jansson). */
		if (q == p || (*p == '0' && q - p > 1) || q - p > 18 ||
		    (q < e && *q != ',' && *q != '}'))
			return NULL;
		*pp = q;
		return json_integer(neg ? -v : v);
	}
	if (e - p >= 4 && !memcmp(p, "true", 4)) {
		*pp = p + 4;
		return json_true();
	}
	if (e - p >= 5 && !memcmp(p, "false", 5)) {
		*pp = p + 5;
		return json_false();
	}
	if (e - p >= 4 && !memcmp(p, "null", 4)) {
		*pp = p + 4;
		return json_null();
	}
	return NULL;
}

/*
 * The object of a line as this sbxcat's spool_line writes it, up to its
 * sum (p[0..n)): '{', then each of audit_columns' keys in order with its
 * value (quick_value's kinds), compact.  It is the object json_loadb
 * makes of such a line without its "sum", in a third of the time: the
 * parse was most of a flush's own CPU, which on a busy machine the
 * server's COPY waits for.  NULL for any other line (escapes, non-ASCII
 * text, an older line without wire_id, another order), which json_loadb
 * then reads: what is accepted and how is json_loadb's either way.
 */
static json_t *quick_object(const char *p, size_t n)
{
	const char *e = p + n;
	json_t *j, *v;

	if (n < 2 || *p++ != '{')
		return NULL;
	j = json_object();
	for (size_t k = 0; k < audit_ncolumns; k++) {
		const char *key = audit_columns[k].key;
		size_t kl = strlen(key);

		if (k && (p >= e || *p++ != ','))
			goto no;
		if ((size_t)(e - p) < kl + 3 || p[0] != '"' ||
		    memcmp(p + 1, key, kl) || p[kl + 1] != '"' ||
		    p[kl + 2] != ':')
			goto no;
		p += kl + 3;
		v = quick_value(&p, e);
		if (!v)
			goto no;
		json_object_set_new_nocheck(j, key, v);
	}
	if (p == e)
		return j;
no:
	json_decref(j);
	return NULL;
}

/* Verify a whole line (without its newline) and parse its row.  -1 with
 * *why (allocated) when it is not one. */
static int verify_line(const char *p, size_t n, struct audit_row *r, char **why)
{
	struct sbx_error *err = NULL;
	char sum[65];
	json_error_t jerr;
	json_t *j;
	size_t body;

	if (n < SUM_LEN + 2 ||
	    memcmp(p + n - SUM_LEN, SUM_KEY, sizeof(SUM_KEY) - 1) ||
	    memcmp(p + n - 2, "\"}", 2)) {
		*why = xstrdup("no sum at the end");
		return -1;
	}
	body = n - SUM_LEN;
	sha256_hex(p, body, sum);
	if (memcmp(sum, p + body + sizeof(SUM_KEY) - 1, 64)) {
		*why = xstrdup("sum does not match");
		return -1;
	}
	j = quick_object(p, body);
	if (!j) {
		j = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
		if (!j) {
			*why = xasprintf("not JSON: %s", jerr.text);
			return -1;
		}
		json_object_del(j, "sum");
	}
	if (audit_row_from_json(j, r, &err) < 0) {
		*why = xasprintf("not a row: %s", err->msg);
		sbx_error_free(&err);
		json_decref(j);
		return -1;
	}
	json_decref(j);
	return 0;
}

struct replay {
	struct spool *s;
	int kfd;	/* kept-aside.jsonl, -1 until a bad line */
	char first[65]; /* SHA-256 of the spool's first line */
	char **keys;	/* kept-aside entries' keys (64 hex, no NUL) */
	size_t nkeys, akeys;
	struct audit_row *rows;
	size_t nrows, arows;
	unsigned long long kept;
	bool dirty; /* something appended to kept-aside: fsync it */
	struct reader rd;
	/*
	 * The hand-over between the thread that reads (everything above
	 * is its own until it is joined) and the one that sinks: a batch
	 * read and waiting (ready, nready; NULL: none), the reader done,
	 * the sinker gone (the reader stops at its next batch).
	 */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct audit_row *ready;
	size_t nready;
	bool done, stop;
	int rc; /* the reader's: 0, or -1 with rerr */
	struct sbx_error *rerr;
};

#define KEY_AT "{\"key\":\""

/* Open kept-aside.jsonl and read the keys already in it. */
static int kept_open(struct replay *rp, struct sbx_error **err)
{
	struct reader rd;
	struct line l;
	int fd, k;

	fd = open_file(rp->s, KEPT_FILE, O_RDWR | O_APPEND, true, err);
	if (fd < 0)
		return -1;
	reader_init(&rd, fd);
	while ((k = reader_next(&rd, &l)) > 0) {
		/* an entry longer than the reader holds comes cut: its key
		 * is at its start all the same */
		if ((!l.nl && !l.trunc) || l.n < sizeof(KEY_AT) - 1 + 64 ||
		    memcmp(l.p, KEY_AT, sizeof(KEY_AT) - 1))
			continue;
		ALLOC_GROW(rp->keys, rp->nkeys + 1, rp->akeys);
		rp->keys[rp->nkeys++] = xstrndup(l.p + sizeof(KEY_AT) - 1, 64);
	}
	reader_release(&rd);
	if (k < 0) {
		int e = errno;

		close(fd);
		return fail(rp->s, KEPT_FILE, e, err, "read");
	}
	rp->kfd = fd;
	return 0;
}

/* Set p[0..n) (at offset at of the spool) aside, once. */
static int keep_aside(struct replay *rp, const char *p, size_t n,
		      unsigned long long at, bool trunc, const char *why,
		      struct sbx_error **err)
{
	struct strbuf key_in = STRBUF_INIT;
	char key[65];
	json_t *j;
	char *text;
	bool seen = false;
	int rc = 0;

	rp->kept++;
	if (rp->kfd < 0 && kept_open(rp, err) < 0)
		return -1;
	strbuf_addf(&key_in, "%s\n%llu\n", rp->first, at);
	strbuf_add(&key_in, p, n);
	sha256_hex(key_in.buf, key_in.len, key);
	strbuf_release(&key_in);
	for (size_t i = 0; i < rp->nkeys && !seen; i++)
		seen = !memcmp(rp->keys[i], key, 64);
	if (seen)
		return 0;
	/* "key" first: kept_open finds it at a fixed place. */
	j = xjson_pack("{s:s, s:I, s:I, s:b, s:o, s:o}", "key", key, "kept_us",
		       (json_int_t)audit_now_us(), "offset", (json_int_t)at,
		       "cut", (int)trunc, "why", xjson_text(why), "base64",
		       xjson_base64(p, n));
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!text)
		die_oom();
	{
		struct strbuf sb = STRBUF_INIT;

		strbuf_addstr(&sb, text);
		strbuf_addch(&sb, '\n');
		if (write_all(rp->kfd, sb.buf, sb.len) < 0)
			rc = fail(rp->s, KEPT_FILE, errno, err, "write");
		strbuf_release(&sb);
	}
	free(text);
	if (rc == 0) {
		ALLOC_GROW(rp->keys, rp->nkeys + 1, rp->akeys);
		rp->keys[rp->nkeys++] = xstrndup(key, 64);
		rp->dirty = true;
	}
	return rc;
}

static void rows_free(struct audit_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		audit_row_release(&rows[i]);
	free(rows);
}

/* The reader's batch handed over (waiting while the last one is still
 * there); false when the sinker has stopped. */
static bool hand_over(struct replay *rp)
{
	bool go;

	pthread_mutex_lock(&rp->mu);
	while (rp->ready && !rp->stop)
		pthread_cond_wait(&rp->cv, &rp->mu);
	go = !rp->stop;
	if (go && rp->nrows) {
		rp->ready = rp->rows;
		rp->nready = rp->nrows;
		rp->rows = NULL;
		rp->nrows = rp->arows = 0;
		pthread_cond_broadcast(&rp->cv);
	}
	pthread_mutex_unlock(&rp->mu);
	return go;
}

/* One line of the spool: a row onto the batch, or set aside. */
static int take_line(struct replay *rp, const struct line *l,
		     struct sbx_error **err)
{
	const char *p = l->p;
	size_t n = l->n;
	unsigned long long at = l->at;

	for (;;) {
		struct audit_row r;
		char *why = NULL;
		const char *start = NULL;
		int rc;

		if (l->trunc)
			why = xstrdup("longer than a spool line");
		else if (!l->nl)
			why = xstrdup("no newline at the end (a torn write)");
		else if (verify_line(p, n, &r, &why) == 0) {
			ALLOC_GROW(rp->rows, rp->nrows + 1, rp->arows);
			rp->rows[rp->nrows++] = r;
			return 0;
		}
		/* Torn bytes with a whole line glued on: the row starts at
		 * the last '{"id":"'. */
		if (l->nl && !l->trunc)
			for (size_t i = n; i-- > 1;)
				if (p[i] == '{' &&
				    n - i >= sizeof(ROW_START) - 1 &&
				    !memcmp(p + i, ROW_START,
					    sizeof(ROW_START) - 1)) {
					start = p + i;
					break;
				}
		if (start) {
			char *w = xasprintf("%s; a row follows", why);

			free(why);
			why = w;
		}
		rc = keep_aside(rp, p, start ? (size_t)(start - p) : n, at,
				l->trunc, why, err);
		free(why);
		if (rc < 0 || !start)
			return rc;
		at += (unsigned long long)(start - p);
		n -= (size_t)(start - p);
		p = start;
	}
}

/*
 * The reader thread: the lines read, verified (their sums) and parsed
 * into batches of SPOOL_BATCH rows, bad ones kept aside.  Parsing is most
 * of a replay's own CPU (the JSON, the SHA-256 of each line): done here,
 * it overlaps the sink's work on the batch before (the database's COPY),
 * and at most two batches are held.
 */
static void *read_lines(void *arg)
{
	struct replay *rp = arg;
	struct line l;
	bool first = true;
	int k, rc = -1;

	while ((k = reader_next(&rp->rd, &l)) > 0) {
		if (l.n == 0 && l.nl)
			continue;
		if (first) {
			sha256_hex(l.p, l.n, rp->first);
			first = false;
		}
		if (take_line(rp, &l, &rp->rerr) < 0)
			goto out;
		if (rp->nrows >= SPOOL_BATCH && !hand_over(rp)) {
			rc = 0; /* the sinker's error is the one said */
			goto out;
		}
	}
	if (k < 0) {
		fail(rp->s, SPOOL_FILE, errno, &rp->rerr, "read");
		goto out;
	}
	hand_over(rp);
	rc = 0;
out:
	pthread_mutex_lock(&rp->mu);
	rp->rc = rc;
	rp->done = true;
	pthread_cond_broadcast(&rp->cv);
	pthread_mutex_unlock(&rp->mu);
	return NULL;
}

/* The batches to the sink as the reader hands them over: 0 when the
 * reader read every line and the sink took every row. */
static int sink_batches(struct replay *rp, spool_sink sink, void *arg,
			unsigned long long *moved, struct sbx_error **err)
{
	for (;;) {
		struct audit_row *rows;
		size_t n;
		int rc;

		pthread_mutex_lock(&rp->mu);
		while (!rp->ready && !rp->done)
			pthread_cond_wait(&rp->cv, &rp->mu);
		rows = rp->ready;
		n = rp->nready;
		rp->ready = NULL;
		rp->nready = 0;
		pthread_cond_broadcast(&rp->cv);
		if (!rows && rp->rc < 0) {
			*err = rp->rerr;
			rp->rerr = NULL;
			pthread_mutex_unlock(&rp->mu);
			return -1;
		}
		pthread_mutex_unlock(&rp->mu);
		if (!rows)
			return 0;
		rc = sink(arg, rows, n, err);
		rows_free(rows, n);
		if (rc < 0) {
			pthread_mutex_lock(&rp->mu);
			rp->stop = true;
			pthread_cond_broadcast(&rp->cv);
			pthread_mutex_unlock(&rp->mu);
			return -1;
		}
		*moved += n;
	}
}

static int write_flush(struct spool *s, unsigned long long rows,
		       struct sbx_error **err)
{
	long long us;
	char when[32];
	json_t *j;
	char *text;
	int rc;

	us = audit_now_us();
	audit_time_format(when, us);
	j = xjson_pack("{s:s, s:I, s:I}", "flushed_at", when, "flushed_us",
		       (json_int_t)us, "rows", (json_int_t)rows);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!text)
		die_oom();
	{
		char *d = shown(s, NULL);

		rc = write_file_atomic_at(s->dirfd, d, FLUSH_FILE, text,
					  strlen(text), 0600, err);
		free(d);
	}
	free(text);
	return rc;
}

int spool_replay(struct spool *s, bool wait, spool_sink sink, void *arg,
		 unsigned long long *moved, unsigned long long *kept,
		 struct sbx_error **err)
{
	struct replay rp = {.s = s, .kfd = -1};
	pthread_t th;
	bool missing;
	int fd, te, rc = -1;

	*moved = *kept = 0;
	if (open_dir(s, false, &missing, err) < 0)
		return -1;
	if (missing)
		return 0;
	fd = open_file(s, SPOOL_FILE, O_RDWR, false, err);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (lock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		int e = errno;

		close(fd);
		if (e == EWOULDBLOCK)
			return 0;
		return fail(s, SPOOL_FILE, e, err, "flock");
	}
	reader_init(&rp.rd, fd);
	pthread_mutex_init(&rp.mu, NULL);
	pthread_cond_init(&rp.cv, NULL);
	te = pthread_create(&th, NULL, read_lines, &rp);
	if (te) {
		fail(s, NULL, te, err, "cannot start the replay's reader");
		goto out;
	}
	rc = sink_batches(&rp, sink, arg, moved, err);
	pthread_join(th, NULL);
	if (rc < 0)
		goto out;
	rc = -1;
	/* Kept aside durably before the lines leave the spool. */
	if (rp.dirty && fsync(rp.kfd) < 0) {
		fail(s, KEPT_FILE, errno, err, "fsync");
		goto out;
	}
	if (rp.rd.pos > 0 && (ftruncate(fd, 0) < 0 || fsync(fd) < 0)) {
		fail(s, SPOOL_FILE, errno, err, "truncate");
		goto out;
	}
	/* The truncate freed the reserve with the rows: take it again for
	 * the appenders that counted on it (as far as there is room). */
	if (rp.rd.pos > 0 && read_limits(s, NULL) == 0)
		(void)keep_reserve(s, fd, NULL);
	/* The rows are in and out of the spool: a flush.json that cannot be
	 * written only leaves `audit status` with an older last flush. */
	if (write_flush(s, *moved, err) < 0)
		sbx_error_free(err);
	rc = 0;
out:
	*kept = rp.kept;
	reader_release(&rp.rd);
	rows_free(rp.rows, rp.nrows);
	rows_free(rp.ready, rp.nready);
	sbx_error_free(&rp.rerr);
	pthread_cond_destroy(&rp.cv);
	pthread_mutex_destroy(&rp.mu);
	strv_free(rp.keys, rp.nkeys);
	if (rp.kfd >= 0)
		close(rp.kfd);
	close(fd); /* releases the flock */
	return rc;
}

/* Whole lines of DIR/NAME (0 when missing); oldest row's time when asked. */
static int count_lines(struct spool *s, const char *name,
		       unsigned long long *lines, long long *oldest,
		       struct sbx_error **err)
{
	static const char pre[] = "{\"id\":\"";
	static const char mid[] = "\",\"created_at\":\"";
	const size_t at = sizeof(pre) - 1 + 36 + sizeof(mid) - 1;
	struct reader rd;
	struct line l;
	struct stat st;
	int fd, k;

	*lines = 0;
	fd = open_file(s, name, O_RDONLY, false, err);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return fail(s, name, errno, err, NULL);
	}
	reader_init(&rd, fd);
	/* No lock: what is read is a snapshot up to the size seen now; an
	 * append meanwhile is not counted, a truncate meanwhile ends it. */
	rd.limit = (unsigned long long)st.st_size;
	while ((k = reader_next(&rd, &l)) > 0) {
		long long us;
		struct audit_row r;
		char *why = NULL;

		/* A torn last line is not one yet.  A line longer than the
		 * reader holds is a kept-aside entry (of a long bad line),
		 * but in the spool (oldest asked) damage, not a row. */
		if ((!l.nl && !(l.trunc && !oldest)) || l.n == 0 ||
		    (l.trunc && oldest))
			continue;
		(*lines)++;
		if (!oldest)
			continue;
		/* The time sits at a fixed place in a line spool_append
		 * wrote; only a line that does not look like one is
		 * parsed whole. */
		if (l.n > at + 27 && !memcmp(l.p, pre, sizeof(pre) - 1) &&
		    !memcmp(l.p + sizeof(pre) - 1 + 36, mid, sizeof(mid) - 1) &&
		    l.p[at + 27] == '"') {
			char t[28];

			memcpy(t, l.p + at, 27);
			t[27] = '\0';
			if (audit_time_parse(t, &us) &&
			    (*oldest == 0 || us < *oldest))
				*oldest = us;
			continue;
		}
		if (verify_line(l.p, l.n, &r, &why) == 0) {
			if (*oldest == 0 || r.created_us < *oldest)
				*oldest = r.created_us;
			audit_row_release(&r);
		}
		free(why);
	}
	reader_release(&rd);
	close(fd);
	if (k < 0)
		return fail(s, name, errno, err, "read");
	return 0;
}

int spool_status(struct spool *s, struct spool_status *st,
		 struct sbx_error **err)
{
	bool missing;
	char *data = NULL;
	size_t len;
	int fd;

	memset(st, 0, sizeof(*st));
	if (read_limits(s, err) < 0 || open_dir(s, false, &missing, err) < 0)
		return -1;
	st->min_free = s->min_free;
	st->reserve = s->reserve;
	if (missing)
		return 0;
	st->exists = true;
	if (count_lines(s, SPOOL_FILE, &st->rows, &st->oldest_us, err) < 0 ||
	    count_lines(s, KEPT_FILE, &st->kept_aside, NULL, err) < 0 ||
	    count_lines(s, LOST_FILE, &st->lost, NULL, err) < 0 ||
	    spool_room(s, st, err) < 0)
		return -1;
	fd = open_file(s, FLUSH_FILE, O_RDONLY, false, err);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (read_fd_limited(fd, FLUSH_FILE, 4096, &data, &len, err) == 0) {
		json_t *j = json_loadb(data, len, 0, NULL);
		json_t *us = json_object_get(j, "flushed_us");
		json_t *rows = json_object_get(j, "rows");

		if (json_is_integer(us) && json_is_integer(rows) &&
		    json_integer_value(rows) >= 0) {
			st->last_flush_us = json_integer_value(us);
			st->last_flush_rows =
			    (unsigned long long)json_integer_value(rows);
		}
		json_decref(j);
		free(data);
	} else {
		sbx_error_free(err);
	}
	close(fd);
	return 0;
}

/* ---- a full disk (docs/audit.md, "A full disk") ---- */

/* The floor and the reserve as configured: 0, or -1 with their error (a
 * copy: each call that needs them says it). */
static int read_limits(struct spool *s, struct sbx_error **err)
{
	if (!s->limits_err)
		return 0;
	return sbx_error_set(err, s->limits_err->kind, 0, "%s",
			     s->limits_err->msg);
}

/*
 * The blocks ext4 keeps back from everyone, root included, on the file
 * system of dev (its reserved_clusters: 2% and at most 4096 clusters, for
 * its own metadata when extents split), which statvfs counts as free for
 * root; 0 when it is not ext4 or sysfs does not say.  A cluster is taken
 * as one block (no bigalloc).
 */
static unsigned long long ext4_kept(dev_t dev)
{
	char link[64], target[PATH_MAX], path[PATH_MAX + 64], buf[32];
	const char *name;
	ssize_t n;
	int fd;

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev),
		 minor(dev));
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = '\0';
	name = strrchr(target, '/');
	name = name ? name + 1 : target;
	snprintf(path, sizeof(path), "/sys/fs/ext4/%s/reserved_clusters", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

/* Bytes free for us on the directory's file system (opened): root may
 * use the file system's root reserve, nobody ext4's own. */
static int dir_free(struct spool *s, unsigned long long *bytes,
		    struct sbx_error **err)
{
	struct statvfs v;
	struct stat st;
	unsigned long long blocks;

	if (fstatvfs(s->dirfd, &v) < 0)
		return fail(s, NULL, errno, err, "statvfs");
	blocks = geteuid() == 0 ? v.f_bfree : v.f_bavail;
	if (geteuid() == 0 && fstat(s->dirfd, &st) == 0) {
		unsigned long long kept = ext4_kept(st.st_dev);

		blocks = blocks > kept ? blocks - kept : 0;
	}
	*bytes = blocks * v.f_frsize;
	return 0;
}

/* What is allocated beyond a file's end (st_blocks counts 512 bytes). */
static unsigned long long ahead(const struct stat *st)
{
	unsigned long long alloc = (unsigned long long)st->st_blocks * 512;
	unsigned long long size = (unsigned long long)st->st_size;

	return alloc > size ? alloc - size : 0;
}

/* s->reserve bytes allocated ahead of audit.jsonl's end (fd): appends
 * then need no new block.  A file system without fallocate has the floor
 * alone. */
static int keep_reserve(struct spool *s, int fd, struct sbx_error **err)
{
	struct stat st;
	int rc;

	if (!s->reserve)
		return 0;
	if (fstat(fd, &st) < 0)
		return fail(s, SPOOL_FILE, errno, err, NULL);
	rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, st.st_size, (off_t)s->reserve);
	if (rc == 0 || errno == EOPNOTSUPP || errno == ENOSYS)
		return 0;
	return fail(s, SPOOL_FILE, errno, err,
		    "no room for its reserve ahead of its end "
		    "(SBXCAT_SPOOL_RESERVE)");
}

/* lost.count's value (0 when unreadable: it only ever grows from it). */
static unsigned long long count_read(int fd)
{
	char buf[COUNT_LEN + 1];
	ssize_t n = pread(fd, buf, COUNT_LEN, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

/* Rewrite lost.count in place: the same 21 bytes in its one block. */
static int count_write(int fd, unsigned long long n)
{
	char buf[COUNT_LEN + 1];

	snprintf(buf, sizeof(buf), "%020llu\n", n);
	return pwrite(fd, buf, COUNT_LEN, 0) == COUNT_LEN && fsync(fd) == 0
		   ? 0
		   : -1;
}

/* DIR/lost.count open (the directory opened), made when missing with the
 * losses lost.jsonl already lists. */
static int count_open(struct spool *s, struct sbx_error **err)
{
	struct stat st;
	int fd, e;

	if (s->count_fd >= 0)
		return 0;
	fd = open_file(s, COUNT_FILE, O_RDWR, true, err);
	if (fd < 0)
		return -1;
	if (lock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0)
		goto fail;
	if (st.st_size != COUNT_LEN) {
		unsigned long long n = count_read(fd);

		if (st.st_size == 0 &&
		    count_lines(s, LOST_FILE, &n, NULL, NULL) < 0)
			n = 0;
		if (count_write(fd, n) < 0 ||
		    (st.st_size > COUNT_LEN && ftruncate(fd, COUNT_LEN) < 0))
			goto fail;
	}
	flock(fd, LOCK_UN);
	s->count_fd = fd;
	return 0;
fail:
	e = errno;
	close(fd);
	return fail(s, COUNT_FILE, e, err, NULL);
}

int spool_ready(struct spool *s, struct sbx_error **err)
{
	unsigned long long avail;

	if (read_limits(s, err) < 0 || open_dir(s, true, NULL, err) < 0 ||
	    dir_free(s, &avail, err) < 0)
		return -1;
	if (avail < s->min_free) {
		char *p = shown(s, NULL);

		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "spool directory '%s' has %llu bytes free, "
			      "under the floor of %llu bytes "
			      "(SBXCAT_SPOOL_MIN_FREE): nothing is done that "
			      "could not be recorded",
			      p, avail, s->min_free);
		sbx_error_reason(*err, "spool below its floor");
		sbx_error_hint(*err, "free space on the spool's file system "
				     "(docs/audit.md, \"A full disk\")");
		free(p);
		return -1;
	}
	if (spool_open(s, err) < 0 || count_open(s, err) < 0 ||
	    keep_reserve(s, s->fd, err) < 0)
		return -1;
	return 0;
}

int spool_note_lost(struct spool *s, const struct audit_row *r)
{
	struct strbuf line = STRBUF_INIT;
	char t[32];
	int fd, rc = -1;

	if (open_dir(s, true, NULL, NULL) < 0)
		return -1;
	/* Counted first, where a full disk cannot stop it. */
	if (count_open(s, NULL) == 0 && lock(s->count_fd, LOCK_EX) == 0) {
		rc = count_write(s->count_fd, count_read(s->count_fd) + 1);
		flock(s->count_fd, LOCK_UN);
	}
	/* Then which row, as far as the disk allows. */
	fd = open_file(s, LOST_FILE, O_WRONLY | O_APPEND, true, NULL);
	if (fd < 0)
		return rc;
	audit_time_format(t, r->created_us);
	strbuf_addf(&line,
		    "{\"id\":\"%s\",\"created_at\":\"%s\",\"op\":\"%s\"}\n",
		    r->id, t, audit_op_name(r->op));
	if (write(fd, line.buf, line.len) == (ssize_t)line.len)
		fsync(fd);
	close(fd);
	strbuf_release(&line);
	return rc;
}

/* What spool_status says of the room: free, reserved ahead, lost.count. */
static int spool_room(struct spool *s, struct spool_status *st,
		      struct sbx_error **err)
{
	struct stat fs;
	int fd;

	if (dir_free(s, &st->free, err) < 0)
		return -1;
	fd = open_file(s, SPOOL_FILE, O_RDONLY, false, err);
	if (fd < 0 && errno != ENOENT)
		return -1;
	if (fd >= 0) {
		if (fstat(fd, &fs) == 0)
			st->reserved = ahead(&fs);
		close(fd);
	}
	fd = open_file(s, COUNT_FILE, O_RDONLY, false, err);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	{
		unsigned long long n = count_read(fd);

		/* lost.jsonl may have missed a line the count has. */
		if (n > st->lost)
			st->lost = n;
	}
	close(fd);
	return 0;
}

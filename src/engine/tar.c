/*
 * tar.c - the deterministic ustar writer (see tar.h).
 *
 * Layout per POSIX.1-1988 ustar: a 512-byte header, the data, zeros up to
 * the next 512-byte boundary; the archive ends with two zero blocks.  The
 * header is made only when reading reaches its entry, so the archive never
 * exists in one piece: memory is the files themselves plus one block.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "engine/tar.h"
#include "basic/util.h"

#define NAME_MAX_USTAR 100
#define PREFIX_MAX_USTAR 155
/* The size field holds 11 octal digits. */
#define SIZE_LIMIT ((size_t)1 << 33)
#define END_BYTES (2 * TAR_BLOCK)

void tar_init(struct tar *t)
{
	memset(t, 0, sizeof(*t));
}

void tar_release(struct tar *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->entries[i].name);
		free(t->entries[i].data);
	}
	free(t->entries);
	tar_init(t);
}

/* Each component non-empty and neither "." nor "..". */
static bool canonical(const char *name)
{
	const char *p = name;

	if (*name == '\0' || *name == '/')
		return false;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

/* Is dir a directory that path implies: "a" of "a/b" (not of "ab")? */
static bool is_parent(const char *dir, const char *path)
{
	size_t n = strlen(dir);
	return strncmp(dir, path, n) == 0 && path[n] == '/';
}

/*
 * Where to split name into ustar prefix and name: 0 when the whole fits in
 * the name field, else the index of the '/' that separates them, or -1.
 */
static long split_point(const char *name)
{
	size_t len = strlen(name);

	if (len <= NAME_MAX_USTAR)
		return 0;
	/* The first '/' that leaves at most 100 bytes after it. */
	for (size_t i = len - NAME_MAX_USTAR - 1; i < len; i++)
		if (name[i] == '/' && i > 0 && i <= PREFIX_MAX_USTAR)
			return (long)i;
	return -1;
}

int tar_add(struct tar *t, const char *name, const void *data, size_t len,
	    unsigned mode, struct sbx_error **err)
{
	struct tar_entry *e;

	if (t->finished)
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "cannot add '%s': the archive is finished",
				     name);
	if (!canonical(name))
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "cannot add '%s' to the archive: not a "
				     "plain relative path",
				     name);
	if (split_point(name) < 0)
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "cannot add '%s' to the archive: the name "
				     "does not fit a ustar header",
				     name);
	if (len >= SIZE_LIMIT)
		return sbx_error_set(
		    err, SBX_E_BAD_DATA, 0,
		    "cannot add '%s' to the archive: %zu bytes "
		    "is over the ustar limit",
		    name, len);
	for (size_t i = 0; i < t->n; i++) {
		const char *other = t->entries[i].name;
		if (strcmp(other, name) == 0)
			return sbx_error_set(err, SBX_E_BAD_DATA, 0,
					     "cannot add '%s' to the archive "
					     "twice",
					     name);
		/* Either one would be a directory the other is a file at. */
		if (is_parent(other, name) || is_parent(name, other))
			return sbx_error_set(err, SBX_E_BAD_DATA, 0,
					     "cannot add '%s' to the archive: "
					     "'%s' is in it, and a path cannot "
					     "be a file and a directory",
					     name, other);
	}
	ALLOC_GROW(t->entries, t->n + 1, t->alloc);
	e = &t->entries[t->n++];
	e->name = xstrdup(name);
	e->mode = (mode & 0111) ? 0755 : 0644;
	e->data = xmalloc(len);
	if (len)
		memcpy(e->data, data, len);
	e->len = len;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct tar_entry *x = a, *y = b;
	return strcmp(x->name, y->name);
}

void tar_finish(struct tar *t)
{
	if (t->n)
		qsort(t->entries, t->n, sizeof(*t->entries), cmp_entry);
	t->finished = true;
	tar_rewind(t);
}

static size_t padded(size_t len)
{
	return (len + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
}

static size_t entry_bytes(const struct tar_entry *e)
{
	return TAR_BLOCK + padded(e->len);
}

size_t tar_size(const struct tar *t)
{
	size_t total = END_BYTES;
	for (size_t i = 0; i < t->n; i++)
		total += entry_bytes(&t->entries[i]);
	return total;
}

void tar_rewind(struct tar *t)
{
	t->cur = 0;
	t->off = 0;
	t->header_ready = false;
}

/* An octal field of width w: w-1 digits and a NUL, as GNU tar writes. */
static void octal(char *field, size_t w, unsigned long long v)
{
	char tmp[24];
	snprintf(tmp, sizeof(tmp), "%0*llo", (int)(w - 1), v);
	memcpy(field, tmp, w - 1);
	field[w - 1] = '\0';
}

static void make_header(char *h, const struct tar_entry *e)
{
	long split = split_point(e->name);
	unsigned sum = 0;

	memset(h, 0, TAR_BLOCK);
	if (split == 0) {
		memcpy(h, e->name, strlen(e->name));
	} else {
		memcpy(h + 345, e->name, (size_t)split);
		memcpy(h, e->name + split + 1, strlen(e->name + split + 1));
	}
	octal(h + 100, 8, e->mode);
	octal(h + 108, 8, 0);	     /* uid */
	octal(h + 116, 8, 0);	     /* gid */
	octal(h + 124, 12, e->len);  /* size */
	octal(h + 136, 12, 0);	     /* mtime: the epoch, always */
	memset(h + 148, ' ', 8);     /* checksum counts as spaces */
	h[156] = '0';		     /* regular file */
	memcpy(h + 257, "ustar", 6); /* magic, NUL included */
	memcpy(h + 263, "00", 2);    /* version */
	memcpy(h + 265, "root", 4);  /* uname */
	memcpy(h + 297, "root", 4);  /* gname */
	octal(h + 329, 8, 0);	     /* devmajor */
	octal(h + 337, 8, 0);	     /* devminor */
	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += (unsigned char)h[i];
	/* Six digits, NUL, space: the form every tar reads. */
	snprintf(h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

size_t tar_read(struct tar *t, void *buf, size_t n)
{
	char *out = buf;
	size_t done = 0;

	if (!t->finished)
		return 0;
	while (done < n) {
		size_t chunk;

		if (t->cur < t->n) {
			const struct tar_entry *e = &t->entries[t->cur];
			size_t total = entry_bytes(e);

			if (t->off == total) {
				t->cur++;
				t->off = 0;
				t->header_ready = false;
				continue;
			}
			if (t->off < TAR_BLOCK) {
				if (!t->header_ready) {
					make_header(t->header, e);
					t->header_ready = true;
				}
				chunk = TAR_BLOCK - t->off;
				if (chunk > n - done)
					chunk = n - done;
				memcpy(out + done, t->header + t->off, chunk);
			} else if (t->off < TAR_BLOCK + e->len) {
				size_t at = t->off - TAR_BLOCK;
				chunk = e->len - at;
				if (chunk > n - done)
					chunk = n - done;
				memcpy(out + done, e->data + at, chunk);
			} else {
				chunk = total - t->off;
				if (chunk > n - done)
					chunk = n - done;
				memset(out + done, 0, chunk);
			}
			t->off += chunk;
			done += chunk;
			continue;
		}
		/* The two zero blocks that end the archive. */
		if (t->off >= END_BYTES)
			break;
		chunk = END_BYTES - t->off;
		if (chunk > n - done)
			chunk = n - done;
		memset(out + done, 0, chunk);
		t->off += chunk;
		done += chunk;
	}
	return done;
}

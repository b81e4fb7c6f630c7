/*
 * tar.h - a deterministic ustar archive, produced piece by piece.
 *
 * The build context sbxcat sends to the engine: the same files always give
 * the same bytes, so nothing about the machine (clock, owner, umask, the
 * order files were added in) reaches the engine.  Every entry is a regular
 * file with mtime 0, owner root/root (uid and gid 0), mode 0644 or 0755;
 * entries are sorted by name, bytewise.  Parent directories are implied,
 * as tar and the engine both allow.
 *
 * tar_add() copies the name and the data.  Once tar_finish() has run, the
 * archive is read with tar_read() in pieces of any size (curl's read
 * callback), without ever being assembled in one buffer; tar_rewind()
 * starts again.  tar_release() frees everything.
 *
 * Thread rule: a struct tar is used by one thread at a time.
 */
#ifndef SBX_TAR_H
#define SBX_TAR_H

#include <stdbool.h>
#include <stddef.h>

struct sbx_error;

#define TAR_BLOCK 512

struct tar_entry {
	char *name;
	unsigned mode; /* 0644 or 0755 */
	char *data;
	size_t len;
};

struct tar {
	struct tar_entry *entries;
	size_t n, alloc;
	bool finished;
	/* read position: entry cur, offset off within its header+data+pad */
	size_t cur, off;
	char header[TAR_BLOCK]; /* of entry cur, made when reading reaches it */
	bool header_ready;
};

void tar_init(struct tar *t);
void tar_release(struct tar *t);

/*
 * Add a regular file.  mode is reduced to 0755 when any execute bit is set,
 * else 0644.  Refused (status 1): an empty, absolute or non-canonical name
 * ("a//b", "./a", "a/../b", a trailing '/'), one that does not fit the
 * ustar name and prefix fields, a duplicate, a name that clashes with an
 * entry's implied directory (a file "a" and a file "a/b": "a" would be a
 * file and a directory; extractors differ in which wins), or data of
 * 8 GiB or more.
 */
int tar_add(struct tar *t, const char *name, const void *data, size_t len,
	    unsigned mode, struct sbx_error **err);

/* Sort the entries and make the archive readable.  No tar_add() after. */
void tar_finish(struct tar *t);

/* Total size of the archive in bytes (a multiple of 512). */
size_t tar_size(const struct tar *t);

/* Copy up to n next bytes into buf; 0 at the end. */
size_t tar_read(struct tar *t, void *buf, size_t n);
void tar_rewind(struct tar *t);

#endif

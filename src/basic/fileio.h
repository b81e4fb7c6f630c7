/*
 * fileio.h - whole-file reads with a size limit, atomic replacement of one
 * file or of many, mkdir -p.  Sits on alloc.h, error.h and sig.h.
 *
 * Replacing a file (write_file_atomic, atomic_batch):
 * - A symbolic link is written through: the file it points to (followed
 *   link by link, a dangling link naming the file to create) is replaced,
 *   its temporary file made in the target's directory, and the link stays
 *   a link.  generate and compose behave the same (docs/sbxcat.1).
 * - The replaced file keeps its mode, owner and group (scripts/setup runs
 *   as root in a user's checkout).  When the owner or group cannot be kept
 *   (not root, file owned by someone else) nothing is written: silently
 *   taking a file over is worse than refusing.
 * - A file that already holds exactly the bytes is not touched (its
 *   timestamps stay), and *changed says so.
 * - Only the files written are flushed (each temporary file, then each
 *   distinct directory once after the renames); never a whole file system.
 * - Temporary files are named TARGET.tmpXXXXXX and removed on every error,
 *   on abort, and when a signal was caught (sig.h) before the renames.
 *
 * Thread rule: none needed (no state; descriptors are the caller's).
 */
#ifndef SBX_FILEIO_H
#define SBX_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

struct sbx_error;

/*
 * Read a whole file, refusing files larger than max bytes before reading
 * them.  On success *data is NUL-terminated and owned by the caller.
 * Errors: status 3 (unreadable), or 1 when the file is too large.
 */
int read_file_limited(const char *path, size_t max, char **data, size_t *len,
		      struct sbx_error **err);

/* The same on a file already open (path names it in messages). */
int read_fd_limited(int fd, const char *path, size_t max, char **data,
		    size_t *len, struct sbx_error **err);

/*
 * Replace path with data atomically: a temporary file beside the target,
 * fsync, rename over the target, fsync of the directory.  A new file gets
 * mode.  A failure leaves the old file (or none) as it was.
 */
int write_file_atomic(const char *path, const void *data, size_t len,
		      unsigned mode, bool *changed, struct sbx_error **err);

/*
 * The same for dirfd/name, reached only through the descriptor: the
 * temporary file is made there with O_EXCL | O_NOFOLLOW, the file is
 * renamed over name (a symbolic link name is replaced, not written
 * through), owner and mode are the caller's and mode's, and dirfd is
 * fsynced.  dir names the directory in messages.
 */
int write_file_atomic_at(int dirfd, const char *dir, const char *name,
			 const void *data, size_t len, unsigned mode,
			 struct sbx_error **err);

/*
 * Many files replaced as one step.  add writes a temporary file beside each
 * target (nothing when the target already holds the bytes) and starts its
 * write-back; commit waits for each temporary file's data (fdatasync), then
 * renames each over its target, then syncs each distinct directory once.
 *
 * What a failure leaves: an error in add, or a signal caught before commit
 * renames anything, leaves every target as it was and no temporary file
 * (after abort, which a failed commit calls itself).  A rename that fails
 * half-way (the disk full of inodes, a target turned into a directory)
 * leaves the targets renamed before it new and the rest old: each file is
 * whole, old or new, never a mix of both within one file.  A crash after
 * commit returned 0 loses nothing.
 */
struct atomic_batch {
	struct atomic_file {
		char *path, *tmp; /* path: the resolved target */
	} * files;
	size_t n, alloc;
};
#define ATOMIC_BATCH_INIT                                                      \
	{                                                                      \
		NULL, 0, 0                                                     \
	}
int atomic_batch_add(struct atomic_batch *b, const char *path, const void *data,
		     size_t len, unsigned mode, bool *changed,
		     struct sbx_error **err);
/* Errors: unavailable, or cancelled when a signal was caught first. */
int atomic_batch_commit(struct atomic_batch *b, struct sbx_error **err);
void atomic_batch_abort(struct atomic_batch *b);

/*
 * The file a write to path lands on: path with symbolic links in its last
 * component followed (at most 40), relative links read from the link's
 * directory.  A dangling link gives the missing target.  Caller frees.
 */
char *resolve_link(const char *path, struct sbx_error **err);

/* write(2) until all of data is written; -1 with errno set otherwise. */
int write_all(int fd, const void *data, size_t len);

/*
 * Open a new file PREFIXXXXXXX (six random letters and digits) in dirfd,
 * O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC with mode; *tmp
 * names it (newly allocated).  -1 with errno set when none could be made.
 */
int open_temp_at(int dirfd, const char *prefix, unsigned mode, char **tmp);

/* mkdir -p; existing directories are fine.  Each directory made is flushed
 * in its parent, so it survives a crash with the files later put in it. */
int mkdir_p(const char *path, unsigned mode, struct sbx_error **err);

#endif

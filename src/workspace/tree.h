/*
 * tree.h - walking and emptying a directory tree that someone else (a
 * sandbox) owns and may change while it is walked; never prints.
 *
 * A walk goes down and back up iteratively with one directory open at a
 * time (a 10,000-deep tree would need 10,000 descriptors), each level
 * remembered as the identity of the directory above it and where its
 * listing stopped.  Going up is openat(".."), checked against that
 * identity: if a directory was moved meanwhile, the walk stops instead of
 * wandering out of the tree.  Down is openat(O_NOFOLLOW | O_DIRECTORY) and
 * only on the top's device: a symlink is never followed and a mount is
 * never crossed.
 *
 * Ownership: tree_walk_start takes fd (closed by tree_walk_end, or at once
 * on failure); top is borrowed, for messages only (the caller escapes it
 * when it came from outside).  Errors carry the kind given to
 * tree_walk_start (unavailable for sbxcat's own tree, refused for a
 * workspace); a cancel, SBX_E_CANCELLED.
 *
 * Thread rule: a struct tree_walk belongs to the thread that started it;
 * nothing here keeps state outside it, so walks run at once on different
 * threads.  The cancel flag may be set by any thread.
 */
#ifndef SBX_TREE_H
#define SBX_TREE_H

#include <dirent.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct sbx_error;

struct tree_level {
	dev_t dev;
	ino_t ino;
	long pos; /* telldir() of the entry gone down into */
};

struct tree_walk {
	const char *top; /* for messages */
	enum sbx_kind kind; /* of every error */
	dev_t dev;	 /* the top's: never left */
	DIR *d;		 /* the directory being listed */
	struct tree_level *up;
	size_t depth, alloc;
};

/* fdopendir(fd), or NULL with fd closed and errno kept (also for fd < 0). */
DIR *tree_dir_of(int fd);

/* "." or "..". */
bool tree_dot_or_dotdot(const char *s);

int tree_walk_start(struct tree_walk *w, int fd, const char *top, enum sbx_kind kind,
		    struct sbx_error **err);
void tree_walk_end(struct tree_walk *w);
/* Into the directory name of the one being listed; *st its fstat. */
int tree_walk_down(struct tree_walk *w, const char *name, struct stat *st,
		   struct sbx_error **err);
/* Back to the directory above; resume: where its listing stopped. */
int tree_walk_up(struct tree_walk *w, bool resume, struct sbx_error **err);

/*
 * Remove everything below the directory fd (consumed), not the directory
 * itself.  A mount point inside stops it ("'TOP' has a mount point inside;
 * unmount it first"); what was removed before stays removed.  *removed,
 * when not NULL, is increased by every entry removed.  cancel (NULL:
 * none) is polled between directories: when non-zero (a signal number)
 * the removal stops, "interrupted by signal N while removing 'TOP'".
 */
int tree_empty(int fd, const char *top, enum sbx_kind kind,
	       const atomic_int *cancel, unsigned long long *removed,
	       struct sbx_error **err);

#endif

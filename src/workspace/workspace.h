/*
 * workspace.h - the workspace operations of `sbxcat fs`, done on the host
 * side of the bind mount, race-free against the sandbox that owns the
 * files; never prints.  brief section 7, docs/workspace.md.
 *
 * Everything the sandbox can change is hostile: names, types, sizes,
 * symlinks, and all of them can change between two system calls.  So:
 *
 *   - A workspace is a held directory descriptor (ROOT/KEY/workspace,
 *     from session_workspace_open()); no path is ever built from the
 *     workspace's own path and opened.
 *   - A user path is checked lexically first (workspace_path_check):
 *     relative, no ".." component, no NUL, at most PATH_MAX bytes; "." and
 *     empty components and repeated slashes are dropped.
 *   - Then it is resolved by the kernel, beneath the held descriptor, with
 *     openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV).
 *     A symlink that stays beneath is followed; one that leads out,
 *     through a magic link, or onto another mount is refused (EXDEV,
 *     ELOOP), naming the path and why.  EAGAIN (a rename raced the
 *     lookup) is retried a few times, then refused.  A kernel without
 *     openat2 (ENOSYS, Linux < 5.6) is unavailable; there is no fallback.
 *   - A file to read is opened O_PATH first, fstat()ed, refused unless
 *     regular (device files, FIFOs, sockets, directories: refused, naming
 *     the type), and only then reopened for reading through
 *     /proc/self/fd/N, which reopens that very inode: nothing but a
 *     regular file is ever opened for reading.  Every size check is an
 *     fstat() of the descriptor that is then read.
 *   - Writes go to a temporary file made (O_EXCL) in the target's own
 *     directory, held as a descriptor, then renameat() within it: the name
 *     is replaced, never written through (a symlink or a hard link at the
 *     target is replaced, not followed).  Directories made on the way are
 *     made with mkdirat() relative to their held parent.  What write and
 *     edit make is the sandbox uid's (fchown on the descriptor).
 *
 * Errors carry their kind (error.h): refused or not found for what the
 * request asks (the message names the path as the caller gave it, escaped,
 * and says why; err->reason says it in a few words for the audit),
 * conflict for an edit whose text is not unique, unavailable for the
 * machine, cancelled when the workspace's cancel flag stopped it.
 * Messages say what the operation met in its own words, never a command
 * line's flag ("old text not found in 'f'", not "'--old' text ...").
 *
 * Cancellation: every loop that can run long (a read, a write's copy, a
 * walk, a search, a removal) polls the workspace's cancel flag (given to
 * workspace_init; NULL: never) and stops with kind SBX_E_CANCELLED, its
 * message naming the flag's value, a signal number ("interrupted by
 * signal 15 while listing 'd'").
 *
 * Thread rule: a struct workspace (its descriptor and budgets) belongs to
 * the thread that uses it; nothing here keeps state outside the caller's
 * structures, so calls on different workspaces, or on different struct
 * workspace of one directory, run at once.  Writes change the calling
 * thread's file-system uid and capabilities around each write and give
 * them back before returning (see "Writes are the sandbox's" in
 * docs/workspace.md): no other thread's are touched.  The cancel flag may
 * be set by any thread.
 */
#ifndef SBX_WORKSPACE_H
#define SBX_WORKSPACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct sbx_error;

struct workspace {
	int fd;		       /* ROOT/KEY/workspace, O_DIRECTORY, held */
	dev_t dev;	       /* its filesystem */
	unsigned long uid;     /* owner of what write/edit make (gid = uid) */
	unsigned long long max_read;  /* SANDBOXD_MAX_READ_BYTES */
	unsigned long long max_write; /* SANDBOXD_MAX_WRITE_BYTES */
	/* The budgets of a verb that reads (docs/workspace.md, "Budgets"):
	 * workspace_init sets the defaults, a caller may change them. */
	long long budget_ms;	     /* WORKSPACE_BUDGET_MS_DEFAULT */
	unsigned long long max_scan; /* bytes read to reach --offset:
					WORKSPACE_SCAN_FACTOR * max_read */
	char *path;	       /* the workspace's path, for messages only */
	/* The caller's cancel flag (NULL: none): non-zero, a signal
	 * number, stops what runs long (see above). */
	const atomic_int *cancel;
};

/* The cancel flag's value: 0 to go on, else the signal number. */
static inline int workspace_cancelled(const struct workspace *w)
{
	return w->cancel ? atomic_load(w->cancel) : 0;
}

/* The wall-clock budget of every verb that reads, grep's included. */
#define WORKSPACE_BUDGET_MS_DEFAULT 20000
/* read --offset reads at most this many read limits to find its line:
 * 512 MiB at the default 8 MiB, a fraction of a second from the page
 * cache, a few seconds from a disk. */
#define WORKSPACE_SCAN_FACTOR 64

/*
 * Take fd (from session_workspace_open; owned from here on, closed by
 * workspace_close even on failure) and check that openat2 with
 * RESOLVE_BENEATH works on this kernel (unavailable: "sbxcat fs needs
 * openat2 (Linux 5.6 or later); this kernel has none, and sbxcat does not
 * fall back to resolving paths itself").  cancel is borrowed: it must
 * outlive w.
 */
int workspace_init(struct workspace *w, int fd, const char *path,
		   unsigned long uid, unsigned long long max_read,
		   unsigned long long max_write, const atomic_int *cancel,
		   struct sbx_error **err);
void workspace_close(struct workspace *w);

/*
 * Check a user path and normalise it into *rel (newly allocated; "" for
 * the workspace itself: "", ".", "./", "a/.." is refused, not "").
 * Refused: absolute, a ".." component, a NUL (never reaches
 * here from argv, but from JSON it could), over PATH_MAX bytes.
 * may_be_root: "" (or ".") allowed, for ls, glob, grep; write, edit, rm
 * and read of the workspace itself are refused.
 */
int workspace_path_check(const char *path, bool may_be_root, char **rel,
			 struct sbx_error **err);
/*
 * path normalised as workspace_path_check normalises it ("./a//b" is
 * "a/b", the workspace itself "."), whether or not it would pass: a ".."
 * or a leading "/" is kept, so what was asked is still said.  For the
 * audit's target.  Newly allocated.
 */
char *workspace_path_shown(const char *path);

/*
 * openat2 beneath the workspace: rel as workspace_path_check returned it,
 * flags as open(2)'s (O_CLOEXEC added), resolve as above plus what the
 * caller adds (RESOLVE_NO_SYMLINKS).  Returns the descriptor or -1; shown
 * is the path to name in messages (the user's spelling).
 */
int workspace_openat(const struct workspace *w, const char *rel,
		     uint64_t flags, uint64_t mode, uint64_t resolve,
		     const char *shown, struct sbx_error **err);

/*
 * Open rel for reading: a regular file (see above), *st its fstat.  No
 * size check here.
 */
int workspace_open_file(const struct workspace *w, const char *rel,
			const char *shown, struct stat *st,
			struct sbx_error **err);

/*
 * read-bytes: open rel and check its size against max_read before a byte
 * is read: "'data.csv' is 52428800 bytes, over the 8388608-byte read
 * limit; read a slice of its lines or use exec" (refused, reason "over
 * the read limit").  Returns the descriptor (the caller copies it out and
 * closes it).
 */
int workspace_open_read(const struct workspace *w, const char *rel,
			const char *shown, struct stat *st,
			struct sbx_error **err);

/*
 * read: lines offset .. offset+limit-1 (1-based) of a text file.
 *
 * Memory: at most max_read bytes of the file and a block (64 KiB), whatever
 * offset, limit and the file are; the lines are not indexed (iterate them
 * with workspace_lines_next).
 *
 * A file of at most max_read bytes is read whole (one fstat-checked read
 * of st_size bytes, and no more), its lines counted, so lines_left is
 * exact.  A larger file without a slice (offset 1, limit the default,
 * given == false) is refused as read-bytes is; with a slice, it is read
 * in blocks only up to the end of the last line shown, plus one byte to
 * learn whether more follows (lines_left is then unknown: -1, and more
 * says whether anything follows).  The lines before offset are skipped
 * without being kept, holes (SEEK_DATA) without being read (a hole is
 * zeros: no newline), and within w->max_scan bytes read and w->budget_ms:
 * an offset deeper than that is refused, saying at which line and byte
 * the budget ran out ("'big' line 9000000 is deeper than a read reaches:
 * ..."); an offset past the end is refused too ("'f' has 12 lines; line
 * 20 is past the end").  What is shown is at most max_read
 * bytes in all: a slice that would show more stops early (cut = true).
 * A line is shown without its newline; a file not ending in a newline
 * has a last line all the same.
 *
 * The lines are text: a file read whole is decoded first (text.h, "Text
 * files": UTF-8, UTF-16 by its byte order mark, else windows-1252) and
 * split after, CRLF and a lone CR ending a line as LF does (shown as LF,
 * as sandboxd joins the lines it split); a slice of a file over the read
 * limit splits at LF alone.  So l->buf is valid UTF-8 (NUL bytes kept as U+0000), at
 * most 3 bytes for each byte of the file; a slice of a file over the read
 * limit decodes the bytes it kept (UTF-8 when they are, else
 * windows-1252).  l->size is the file's size in bytes.
 */
struct workspace_lines {
	char *buf;	  /* the bytes of the lines shown, newlines kept */
	size_t len;
	size_t n;	  /* lines shown */
	unsigned long long first; /* the first one's number (= offset) */
	long long lines_left;	  /* after the last shown; -1 unknown */
	bool more;		  /* something follows the last shown */
	bool cut;		  /* stopped at max_read bytes shown */
	unsigned long long size;  /* the file's st_size */
};
int workspace_read_lines(const struct workspace *w, const char *rel,
			 const char *shown, unsigned long long offset,
			 unsigned long long limit, bool sliced,
			 struct workspace_lines *out, struct sbx_error **err);
void workspace_lines_release(struct workspace_lines *l);
/*
 * The line of l at *pos (0 for the first), without its newline, in *text
 * and *len (borrowed from l->buf); *pos moves to the next.  false after
 * the last of l->n lines.
 */
bool workspace_lines_next(const struct workspace_lines *l, size_t *pos,
			  const char **text, size_t *len);

/*
 * write: the bytes read from in_fd (to its EOF) become rel, atomically:
 * parent directories made (the uid's, 0755) as needed, a temporary
 * ".sbxcat-XXXXXX" in the target's directory written, fsync'd, fchown'd
 * to uid:uid, given the old file's mode (permission bits only) or 0644,
 * then renamed over rel.  Over max_write bytes: refused, the temporary
 * removed, nothing changed.  A directory at rel is refused.  *bytes is
 * what was written; *created whether rel did not exist.
 */
int workspace_write(const struct workspace *w, const char *rel,
		    const char *shown, int in_fd, unsigned long long *bytes,
		    bool *created, struct sbx_error **err);

/*
 * edit: replace old (oldlen > 0 bytes) by new in rel (a regular file of at
 * most max_read bytes), every occurrence when all, else only when there is
 * exactly one.  Not found when old is absent ("old text not found in
 * 'PATH'", reason "old text not found"); a conflict when, without all, it
 * is found more than once ("old text matches 3 times in 'PATH', on lines
 * 4, 9 and 12; give more context to make it unique, or replace every
 * occurrence", reason "old text not unique"; at most 10 line numbers,
 * then "...").  An empty old is invalid ("old text is empty").
 * Occurrences do not overlap (leftmost first, as str.replace).  The
 * result is written as workspace_write writes (same directory, the
 * uid's, the old mode), over max_write refused.  *count is how many were
 * replaced; *line the first one's line number.
 *
 * Text (text.h, "Text files"): old and new are text; a file that is
 * UTF-8 (its byte order mark kept) is edited as bytes, one that is not is
 * edited in its own encoding and written back in it, nothing but the
 * replacement changed: windows-1252 by old and new encoded to it (a new
 * it cannot hold refused, reason "new text not encodable"; an old or new
 * that is not UTF-8 taken as bytes), UTF-16 decoded, edited, encoded
 * again (one that does not decode to itself refused, reason "not valid
 * text").
 *
 * Memory: the file (at most max_read bytes) and the result (UTF-16: and
 * the text decoded and the result encoded), whose size is
 * computed from the count before it is built and refused over max_write
 * before a byte of it is allocated: at most max_read + max_write, whatever
 * old, new and the file are.  Counting the occurrences allocates nothing.
 */
int workspace_edit(const struct workspace *w, const char *rel,
		   const char *shown, const char *old, size_t oldlen,
		   const char *new, size_t newlen, bool all, size_t *count,
		   unsigned long long *line, struct sbx_error **err);

/*
 * stat: rel's lstat (the last component not followed; its directory
 * resolved beneath); *target the symlink's target when it is one (newly
 * allocated, else NULL).
 */
int workspace_stat(const struct workspace *w, const char *rel,
		   const char *shown, struct stat *st, char **target,
		   struct sbx_error **err);

/*
 * rm: unlink rel (a file, symlink, or any non-directory), or rmdir it
 * when an empty directory; a non-empty directory needs recursive (else
 * refused: "'PATH' is a directory that is not empty; only a recursive
 * remove removes it").  The tree
 * is removed from held descriptors, never following a symlink (a swapped
 * in symlink is unlinked as a symlink) and never crossing a mount
 * (refused).  *removed counts what was removed.
 */
int workspace_rm(const struct workspace *w, const char *rel,
		 const char *shown, bool recursive, unsigned long long *removed,
		 struct sbx_error **err);

/*
 * mkdir: rel and every missing directory above it made, as write makes
 * its parents (the uid's, 0755, each resolved beneath the held
 * workspace); *created false when rel was a directory already (not an
 * error: the caller says which).
 */
int workspace_mkdir(const struct workspace *w, const char *rel,
		    const char *shown, bool *created, struct sbx_error **err);

/*
 * move: from renamed to to, as rename(2) does (a file or an empty
 * directory at to replaced; to's directory must exist), both parents
 * resolved beneath the held workspace, as the sandbox (its permissions
 * apply), never crossing a mount; the last components are not followed.
 */
int workspace_move(const struct workspace *w, const char *from,
		   const char *shown_from, const char *to, const char *shown_to,
		   struct sbx_error **err);

#endif

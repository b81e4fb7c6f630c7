/*
 * walk.h - bounded breadth-first listings of a workspace (ls, ls -R, glob,
 * and the files grep visits), and the glob matcher; never prints.  brief
 * section 7, docs/workspace.md.
 *
 * The walk goes level by level from a start directory beneath the
 * workspace, each directory opened with workspace_openat() (beneath, no
 * magic links, no other mount) and read with getdents through that
 * descriptor; entries of one directory are sorted by name (bytewise).  It
 * never follows a symlink into a directory: a symlink is an entry of type
 * "symlink", listed, not descended.  A directory on another filesystem
 * (a mount inside) is listed, not descended.
 *
 * Bounds: depth (the start's entries are depth 1; default 6) and entries
 * visited (default 2,000: every entry the walk reports counts, files and
 * directories alike, whether or not want() keeps it).  When a bound stops
 * the walk, truncated is set and why says which ("entries" or "depth").
 * Only a depth-6 directory that has entries sets truncated for depth.
 *
 * Left out (neither listed nor counted nor descended) unless opts.all:
 * "skills" and opts.spill at the workspace's top.  Hidden entries (a name
 * starting with '.') are listed by ls; grep and glob skip them unless
 * opts.hidden.  The temporary files of workspace_write (".sbxcat-" then 6
 * characters) are always left out.  Entries under "uploads/" at the top
 * have upload set: a person put them there.
 *
 * A directory that cannot be opened or read (EACCES, a race, ELOOP) is
 * recorded in problems and skipped; only the start refusing is an error.
 * The workspace's cancel flag (workspace.h) stops the walk between
 * directories and every 4096 names, an error of kind SBX_E_CANCELLED
 * ("interrupted by signal N while listing 'SHOWN'"); a deadline or the
 * caller's stop() only ends it early (stopped).
 *
 * Thread rule: nothing here keeps state outside the caller's structures
 * (the glob matcher included); a walk_result belongs to its caller.
 */
#ifndef SBX_WALK_H
#define SBX_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct sbx_error;
struct workspace;

#define WALK_DEPTH_DEFAULT 6
#define WALK_ENTRIES_DEFAULT 2000

enum walk_type {
	WALK_FILE,
	WALK_DIR,
	WALK_SYMLINK,
	WALK_OTHER, /* device, FIFO, socket */
};
const char *walk_type_name(enum walk_type t); /* "file", "dir", ... */

struct walk_entry {
	char *path; /* relative to the workspace, no leading "./" */
	const char *name; /* its last component, inside path */
	enum walk_type type;
	unsigned long long size; /* st_size */
	long long mtime;	 /* Unix seconds */
	unsigned mode;		 /* st_mode & 07777 */
	unsigned depth;		 /* 1 for the start's own entries */
	bool upload;
};

struct walk_problem {
	char *path; /* the directory */
	char *why;  /* "permission denied", ... */
};

/* Append a problem: path, and why in a few words from errnum (else msg,
 * else "cannot be read"); free a list of them. */
void walk_problem_add(struct walk_problem **v, size_t *n, size_t *alloc,
		      const char *path, int errnum, const char *msg);
void walk_problems_free(struct walk_problem *v, size_t n);

struct walk_opts {
	unsigned max_depth;  /* 0: WALK_DEPTH_DEFAULT */
	size_t max_entries;  /* 0: WALK_ENTRIES_DEFAULT */
	bool recursive;	     /* false: the start's own entries only */
	bool hidden;	     /* descend into and report dot entries */
	bool all;	     /* skills/ and the spill directory too */
	const char *spill;   /* the spill directory's name */
	/* Only the entries' types are needed (grep): size, mtime and mode
	 * are left 0 for what readdir's d_type already names. */
	bool types_only;
	/* Called for each entry in walk order; return false to leave it
	 * out of the result (it still counts against max_entries).  NULL:
	 * keep all.  May prune: set *descend false for a directory (never
	 * true: whether it may be descended at all is the walk's). */
	bool (*want)(void *ctx, const struct walk_entry *e, bool *descend);
	void *ctx;
	/* Checked between directories: true stops the walk (grep's
	 * deadline), setting stopped. */
	bool (*stop)(void *ctx);
	/* clock_now_ms() past which the walk stops (stopped set), checked
	 * between directories and every 4096 names read; 0: none. */
	long long deadline_ms;
};

struct walk_result {
	struct walk_entry *v;
	size_t n, alloc;
	size_t visited;
	bool truncated;
	const char *why; /* "entries" or "depth", when truncated */
	bool stopped;
	struct walk_problem *problems;
	size_t nproblems, aproblems;
};

/*
 * Walk from start (a workspace_path_check()ed path; "" the workspace).
 * A start that is not a directory is refused ("'PATH' is not a
 * directory"), unless it is a file and opts.recursive is false: then the
 * result is that one entry (ls of a file).  On an error res holds what
 * was found before it (walk_result_release it either way).
 */
int walk_run(const struct workspace *w, const char *start, const char *shown,
	     const struct walk_opts *opts, struct walk_result *res,
	     struct sbx_error **err);
void walk_result_release(struct walk_result *res);

/*
 * Glob matching of a whole relative path: "*" any run of characters but
 * '/', "?" one character but '/', "[...]" a class ("[!...]" or "[^...]"
 * negated, ranges, "]" first taken literally), "\" escapes the next
 * character, and a component that is exactly "**" any number (zero or
 * more) of whole components.  Characters are bytes.  A leading '.' of a
 * component is matched only by a pattern character that is a literal
 * '.' unless hidden.  No backtracking blow-up: linear in practice, at
 * most O(len(pattern) * len(path)).
 */
bool glob_match(const char *pattern, const char *path, bool hidden);
/* Whether a directory at path could contain a match (for pruning). */
bool glob_may_descend(const char *pattern, const char *dir, bool hidden);
/* A syntax check: NULL, or a static message ("unterminated [ class"). */
const char *glob_check(const char *pattern);

#endif

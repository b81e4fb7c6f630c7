/*
 * grep.h - `sbxcat fs grep`: search the files of a workspace, bounded and
 * fast; never prints.  brief section 7, docs/workspace.md.
 *
 * The files come from walk_run() (recursive, the same bounds as listings:
 * 6 levels, 2,000 entries by default, hidden files skipped unless
 * opts.hidden, skills/ and the spill directory unless opts.all), in walk
 * order, filtered by opts.include (a glob_match() pattern matched against
 * the file's name, or its whole path when the pattern holds a '/').  Only
 * regular files are searched; a symlink is not followed.
 *
 * Each file is opened with workspace_open_file() and read with read(2)
 * (never mmap: the sandbox may truncate it meanwhile), at most max_read
 * bytes (a larger file is skipped and counted in too_big).  A file with a
 * NUL byte is binary: skipped and counted.
 *
 * Matching is per line, as grep's: a line matches when the pattern
 * matches somewhere in it (without its newline).
 *   - fixed and !icase: memmem() over the whole buffer.
 *   - otherwise PCRE2 (8-bit, UTF with PCRE2_MATCH_INVALID_UTF, so any
 *     bytes are a valid subject; fixed adds PCRE2_LITERAL, icase
 *     PCRE2_CASELESS), JIT-compiled, run over the whole buffer with
 *     PCRE2_MULTILINE; a match that runs past its line's end is checked
 *     again on that line alone.  Match and depth limits (and a JIT stack
 *     of bounded size) make a hostile pattern stop: a file where the limit
 *     is hit is abandoned and counted in limited, and the search goes on.
 * The pattern is compiled once; a syntax error is invalid, with PCRE2's
 * message and offset.
 *
 * Bounds: max_count matches in all (default 1,000), then the search stops
 * (truncated_matches); a wall-clock budget (default 20 s), checked between
 * files and every 4096 matches, stops it too (out_of_time).  The
 * workspace's cancel flag (workspace.h), polled as often, stops it with
 * an error of kind SBX_E_CANCELLED ("interrupted by signal N while
 * searching 'SHOWN'"): what was emitted before stays emitted.
 *
 * Thread rule: a struct grep (the compiled pattern, its match data, JIT
 * stack and read buffer) belongs to one thread at a time: grep_new one
 * per thread.  The one thing shared, whether this PCRE2's JIT has the bug
 * described in grep.c, is the library's and probed once, atomically.
 */
#ifndef SBX_GREP_H
#define SBX_GREP_H

#include <stdbool.h>
#include <stddef.h>

#include "workspace/walk.h"
#include "workspace/workspace.h"

struct sbx_error;

#define GREP_MAX_COUNT_DEFAULT 1000
/* every fs verb's: one budget */
#define GREP_BUDGET_MS_DEFAULT WORKSPACE_BUDGET_MS_DEFAULT
#define GREP_LINE_MAX 1000 /* bytes of a line shown; longer ones cut */

struct grep_opts {
	const char *pattern;
	bool fixed, icase;
	const char *include; /* NULL: every file */
	struct walk_opts walk; /* depth, entries, hidden, all, spill */
	unsigned long long max_count; /* 0: GREP_MAX_COUNT_DEFAULT */
	long long budget_ms;	      /* 0: GREP_BUDGET_MS_DEFAULT */
	unsigned long long max_read;  /* per file */
};

struct grep_match {
	const char *path;	 /* relative to the workspace */
	unsigned long long line; /* 1-based */
	const char *text;	 /* the line, cut to GREP_LINE_MAX bytes */
	size_t len;
	bool cut;
};

struct grep_stats {
	unsigned long long files;    /* searched */
	unsigned long long binary;   /* skipped: a NUL byte */
	unsigned long long too_big;  /* skipped: over max_read */
	unsigned long long unreadable; /* skipped: could not open/read */
	unsigned long long limited;  /* abandoned: PCRE2 limit hit */
	unsigned long long matches;
	bool truncated_matches;
	bool out_of_time;
	bool truncated; /* the walk hit a bound */
	const char *why; /* the walk's: "entries" or "depth" */
	/* the walk's problems and the unreadable files, for the report */
	struct walk_problem *problems;
	size_t nproblems, aproblems;
};

struct grep;
/* Compile (invalid: a bad pattern or include glob). */
int grep_new(const struct grep_opts *o, struct grep **g,
	     struct sbx_error **err);
void grep_free(struct grep *g);

/*
 * Search from start (a workspace_path_check()ed path; a regular file is
 * searched alone).  emit is called for each match in order; a negative
 * return stops the search and is returned.  The start refusing is an
 * error (refused, not found); everything else is counted in st.
 */
int grep_run(struct grep *g, const struct workspace *w, const char *start,
	     const char *shown,
	     int (*emit)(void *ctx, const struct grep_match *m), void *ctx,
	     struct grep_stats *st, struct sbx_error **err);
void grep_stats_release(struct grep_stats *st);

/* Exposed for its test: the line matches of buf[0..len) as grep_run
 * would find them, calling emit with path "". */
int grep_buffer(struct grep *g, const char *buf, size_t len,
		int (*emit)(void *ctx, const struct grep_match *m), void *ctx,
		struct grep_stats *st);

#endif

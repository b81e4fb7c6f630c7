/*
 * util.h - memory, strings, buffers and files shared by every module.
 *
 * Ownership: x*alloc and xstrdup/xasprintf return memory the caller frees
 * with free().  Running out of memory is fatal here and nowhere else, so no
 * other function has an allocation error path.  A struct strbuf owns its
 * bytes; strbuf_release() frees them, strbuf_detach() hands them over.
 */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

struct sbx_error;

/* Out of memory: say so and abort.  For allocations made by libraries. */
__attribute__((noreturn)) void die_oom(void);

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

/* Grow an array of elements of size sz so it holds at least want. */
#define ALLOC_GROW(p, want, alloc)                                             \
	do {                                                                   \
		if ((want) > (alloc)) {                                        \
			(alloc) = (alloc) ? (alloc)*2 : 8;                     \
			if ((alloc) < (want))                                  \
				(alloc) = (want);                              \
			(p) = xrealloc((p), (alloc) * sizeof(*(p)));           \
		}                                                              \
	} while (0)

static inline void cleanup_freep(void *p)
{
	void **pp = p;
	free(*pp);
}
#define cleanup_free __attribute__((cleanup(cleanup_freep)))

static inline void *steal_pointer(void *pp)
{
	void **ptr = pp;
	void *v = *ptr;
	*ptr = NULL;
	return v;
}

struct strbuf {
	char *buf; /* always NUL-terminated once initialised by use */
	size_t len;
	size_t alloc;
};
#define STRBUF_INIT                                                            \
	{                                                                      \
		NULL, 0, 0                                                     \
	}

void strbuf_init(struct strbuf *sb);
void strbuf_release(struct strbuf *sb);
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, int c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
const char *strbuf_str(struct strbuf *sb);

/* Free n strings and the array that holds them. */
void strv_free(char **v, size_t n);

#include "text.h"

/*
 * Read a whole file, refusing files larger than max bytes before reading
 * them.  On success *data is NUL-terminated and owned by the caller.
 * Errors: status 3 (unreadable), or 1 when the file is too large.
 */
int read_file_limited(const char *path, size_t max, char **data, size_t *len,
		      struct sbx_error **err);

/*
 * Replace path with data atomically: a temporary file in the same
 * directory, fsync, rename over path, fsync of the directory.  The mode of
 * an existing file is kept; a new file gets mode.  *changed is set to false
 * (and nothing written) when the file already holds exactly these bytes.
 */
int write_file_atomic(const char *path, const void *data, size_t len,
		      unsigned mode, bool *changed, struct sbx_error **err);

/*
 * Many files replaced as one step: each add writes a temporary file beside
 * its target (nothing when the target already holds the bytes); commit
 * flushes them all with one syncfs(), renames each over its target and
 * flushes again.  One flush for a thousand files instead of two thousand
 * fsyncs: generate's 1,000 Dockerfiles went from 1.5 s to tens of ms.
 * abort (or a failed commit) removes every temporary file not yet renamed.
 */
struct atomic_batch {
	struct atomic_file {
		char *path, *tmp;
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
int atomic_batch_commit(struct atomic_batch *b, struct sbx_error **err);
void atomic_batch_abort(struct atomic_batch *b);

/* mkdir -p; existing directories are fine. */
int mkdir_p(const char *path, unsigned mode, struct sbx_error **err);

/* SHA-256 of data as 64 lowercase hex digits plus NUL, into out[65]. */
void sha256_hex(const void *data, size_t len, char out[65]);

#endif

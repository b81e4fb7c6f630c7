/*
 * alloc.h - memory that cannot fail, checked size arithmetic, growable
 * strings.  The bottom layer: it depends on nothing else in sbxcat.
 *
 * Ownership: x*alloc and xstrdup/xasprintf return memory the caller frees
 * with free().  Running out of memory is fatal here and nowhere else, so no
 * other function has an allocation error path.  A size that does not fit
 * in size_t (st_add, st_mult, ALLOC_GROW, strbuf_grow) is fatal the same
 * way: such a size comes from a bug or from hostile input, never from a
 * request worth serving.  A struct strbuf owns its bytes; strbuf_release()
 * frees them, strbuf_detach() hands them over.
 *
 * The fatal paths write to file descriptor 2 themselves (no stdio: it may
 * need the memory that just ran out) and abort().
 *
 * Thread rule: none needed (no state; a failed allocation ends the process
 * from any thread).
 */
#ifndef SBX_ALLOC_H
#define SBX_ALLOC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Out of memory: say so and abort.  For allocations made by libraries. */
__attribute__((noreturn)) void die_oom(void);

/*
 * A bug or an impossible state: "sbxcat: fatal: MESSAGE" on stderr, then
 * abort().  Not for anything a user or an input can cause that has a
 * better answer than a crash.
 */
__attribute__((noreturn, format(printf, 1, 2))) void die_bug(const char *fmt,
							     ...);

/* a + b and a * b, fatal when the result does not fit in size_t. */
static inline size_t st_add(size_t a, size_t b)
{
	size_t r;

	if (__builtin_add_overflow(a, b, &r))
		die_bug("size overflow: %zu + %zu", a, b);
	return r;
}

static inline size_t st_mult(size_t a, size_t b)
{
	size_t r;

	if (__builtin_mul_overflow(a, b, &r))
		die_bug("size overflow: %zu * %zu", a, b);
	return r;
}

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

/*
 * The new capacity of an array that holds alloc elements and must hold
 * want: double (at least 8), or want itself when doubling is not enough
 * or would overflow.  Callers multiply it by the element size with
 * st_mult(), so an element count past SIZE_MAX / size is fatal too.
 */
static inline size_t alloc_nr(size_t alloc, size_t want)
{
	size_t n = alloc ? (alloc <= SIZE_MAX / 2 ? alloc * 2 : want) : 8;

	return n < want ? want : n;
}

/* Grow an array p of alloc elements so it holds at least want. */
#define ALLOC_GROW(p, want, alloc)                                             \
	do {                                                                   \
		if ((want) > (alloc)) {                                        \
			(alloc) = alloc_nr((alloc), (want));                   \
			(p) = xrealloc((p), st_mult((alloc), sizeof(*(p))));   \
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
/* Make room for extra more bytes (and the NUL); fatal past SIZE_MAX. */
void strbuf_grow(struct strbuf *sb, size_t extra);
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, int c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
const char *strbuf_str(struct strbuf *sb);
/* Empty it, keeping its memory. */
static inline void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = 0;
}

/* Keep the first len bytes (len <= sb->len). */
static inline void strbuf_setlen(struct strbuf *sb, size_t len)
{
	sb->len = len;
	if (sb->buf)
		sb->buf[len] = 0;
}

/* Free n strings and the array that holds them. */
void strv_free(char **v, size_t n);

#endif

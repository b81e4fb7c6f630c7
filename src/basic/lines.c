/*
 * lines.c - assemble lines from a stream of pieces (see lines.h).
 */
#include "config.h"

#include <string.h>

#include "basic/lines.h"

void lines_init(struct lines *l, size_t max, lines_fn fn, void *ctx)
{
	strbuf_init(&l->buf);
	l->max = max;
	l->truncated = false;
	l->pending = false;
	l->fn = fn;
	l->ctx = ctx;
}

void lines_release(struct lines *l)
{
	strbuf_release(&l->buf);
}

/* Keep what fits under the cap; remember that the rest was dropped. */
static void keep(struct lines *l, const char *p, size_t n)
{
	size_t room = l->max > l->buf.len ? l->max - l->buf.len : 0;

	l->pending = true;
	if (n > room) {
		n = room;
		l->truncated = true;
	}
	if (n)
		strbuf_add(&l->buf, p, n);
}

static void emit(struct lines *l)
{
	char *s;
	size_t len;

	strbuf_str(&l->buf); /* allocates an empty line's buffer */
	s = l->buf.buf;
	len = l->buf.len;
	/* A "\r" cut off by the cap is not there to strip; one kept is. */
	if (len && s[len - 1] == '\r')
		s[--len] = '\0';
	l->fn(l->ctx, s, len, l->truncated);
	/* Keep the allocation: the next line is likely as long. */
	l->buf.len = 0;
	l->truncated = false;
	l->pending = false;
}

void lines_feed(struct lines *l, const char *data, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;

		keep(l, data, n);
		if (!nl)
			return;
		emit(l);
		data += n + 1;
		len -= n + 1;
	}
}

void lines_finish(struct lines *l)
{
	if (l->pending)
		emit(l);
}

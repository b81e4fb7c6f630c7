/*
 * lines.h - split a byte stream that arrives in arbitrary pieces into
 * lines, in constant memory.
 *
 * The Docker engine streams newline-delimited JSON and a line can span any
 * number of curl write callbacks; a build can print gigabytes.  A struct
 * lines keeps at most max bytes of the line being assembled: the rest of a
 * longer line is dropped and the line is handed over marked truncated, so
 * memory stays bounded whatever arrives.  The callback gets the line
 * without its "\n" (and without a "\r" before it), NUL-terminated, in a
 * buffer it must not keep.  lines_release() frees the buffer.
 *
 * Thread rule: a struct lines is used by one thread at a time.
 */
#ifndef SBX_LINES_H
#define SBX_LINES_H

#include <stdbool.h>
#include <stddef.h>

#include "basic/text.h"
#include "basic/util.h"

typedef void (*lines_fn)(void *ctx, const char *line, size_t len,
			 bool truncated);

struct lines {
	struct strbuf buf;
	size_t max;	/* longest line kept, in bytes */
	bool truncated; /* the line being assembled lost bytes */
	bool pending;	/* bytes of an unfinished line were seen */
	lines_fn fn;
	void *ctx;
};

void lines_init(struct lines *l, size_t max, lines_fn fn, void *ctx);
void lines_feed(struct lines *l, const char *data, size_t len);
/* End of stream: hand over a last line that had no newline. */
void lines_finish(struct lines *l);
void lines_release(struct lines *l);

#endif

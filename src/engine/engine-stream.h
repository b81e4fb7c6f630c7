/*
 * engine-stream.h - the decoder of the engine's streamed replies (a
 * build's or a pull's progress); never prints, makes no request.
 *
 * A streamed reply is newline-delimited JSON, any line cut anywhere by the
 * transport.  The decoder keeps the build step, the last lines of the
 * current step's output and the error line's message.  Everything it keeps
 * or hands on is safe to print: output lines are made printable
 * (text_add_printable: escapes, C0 and C1 controls and bidirectional
 * overrides removed), the error message is escaped (text_add_escaped).
 * It does not keep the built image's ID: "Successfully built X" and the
 * aux line can be printed by any RUN step, so callers inspect the tag.
 *
 * on_step and on_line, when set, are called from the thread feeding the
 * decoder, on each step and each line of output (line at most
 * ENGINE_TAIL_WIDTH-1 bytes).  Memory is constant whatever arrives.
 * A struct engine_stream is used by one thread at a time.
 *
 * Thread rule: as said above, a struct engine_stream is one thread's at a
 * time.
 */
#ifndef SBX_ENGINE_STREAM_H
#define SBX_ENGINE_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "basic/lines.h"

/*
 * One line of a streamed reply is kept up to this size.  The engine cuts a
 * build's output into messages of at most a few kB, so only a runaway
 * line is ever cut; the cap is what keeps memory constant.
 */
#define ENGINE_JSON_LINE_MAX (1u << 20)
/* The last lines of a step kept for a failure report, and their width. */
#define ENGINE_TAIL_LINES 20
#define ENGINE_TAIL_WIDTH 240

struct engine_tail {
	char line[ENGINE_TAIL_LINES][ENGINE_TAIL_WIDTH];
	size_t first, n;
};

struct engine_stream {
	void (*on_step)(void *ctx, int step, int nsteps, const char *text);
	void (*on_line)(void *ctx, const char *line);
	void *ctx;

	int step, nsteps; /* 0 until the engine names a step */
	char step_text[ENGINE_TAIL_WIDTH];
	struct engine_tail tail;
	char *error; /* the error line's message, escaped, or NULL */
	unsigned long long lines, bad_lines;

	struct lines json, text; /* private */
};

void engine_stream_init(struct engine_stream *s);
void engine_stream_feed(struct engine_stream *s, const char *data, size_t len);
void engine_stream_finish(struct engine_stream *s);
void engine_stream_release(struct engine_stream *s);
/* Line i (0: oldest) of the tail. */
const char *engine_tail_line(const struct engine_tail *t, size_t i);

/*
 * in[0..len) for a display in out[w]: printable (see above), tabs as
 * spaces, trailing blanks dropped, cut at a character boundary with "..."
 * marking the cut (or truncated: the input was cut already).
 */
void engine_clean_line(char *out, size_t w, const char *in, size_t len,
		       bool truncated);

#endif

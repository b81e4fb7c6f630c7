/*
 * engine-stream.c - the decoder of streamed replies (see engine-stream.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/engine-stream.h"
#include "basic/text.h"
#include "basic/util.h"

/* Raw text of one output line kept before it is made printable. */
#define TEXT_LINE_MAX 1024

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void tail_add(struct engine_tail *t, const char *line)
{
	size_t slot;

	if (t->n < ENGINE_TAIL_LINES) {
		slot = (t->first + t->n) % ENGINE_TAIL_LINES;
		t->n++;
	} else {
		slot = t->first;
		t->first = (t->first + 1) % ENGINE_TAIL_LINES;
	}
	snprintf(t->line[slot], ENGINE_TAIL_WIDTH, "%s", line);
}

const char *engine_tail_line(const struct engine_tail *t, size_t i)
{
	return t->line[(t->first + i) % ENGINE_TAIL_LINES];
}

void engine_clean_line(char *out, size_t w, const char *in, size_t len,
		       bool truncated)
{
	struct strbuf sb = STRBUF_INIT;
	size_t o;

	/* A cut input may end inside a character: not an invalid byte. */
	if (truncated)
		len = utf8_whole(in, len);
	text_add_printable(&sb, in, len);
	o = sb.len;
	if (o + 1 > w) {
		truncated = true;
		o = w - 1;
	}
	if (truncated) {
		o = o + 4 > w ? w - 4 : o;
		o = utf8_whole(sb.buf, o);
	}
	while (o > 0 && sb.buf[o - 1] == ' ')
		o--;
	memcpy(out, sb.buf ? sb.buf : "", o);
	if (truncated) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	strbuf_release(&sb);
}

static bool bookkeeping(const char *line)
{
	return starts_with(line, " ---> ") ||
	       starts_with(line, "Removing intermediate container ") ||
	       starts_with(line, "Successfully built ") ||
	       starts_with(line, "Successfully tagged ");
}

static void output_line(struct engine_stream *s, const char *line)
{
	int step, nsteps, at = 0;

	if (!*line)
		return;
	if (sscanf(line, "Step %d/%d :%n", &step, &nsteps, &at) == 2 &&
	    at > 0) {
		s->step = step;
		s->nsteps = nsteps;
		snprintf(s->step_text, sizeof(s->step_text), "%s",
			 line + at + (line[at] == ' '));
		/* The tail is the failing step's output, not the build's. */
		s->tail.first = s->tail.n = 0;
		if (s->on_step)
			s->on_step(s->ctx, step, nsteps, s->step_text);
		return;
	}
	if (bookkeeping(line))
		return;
	tail_add(&s->tail, line);
	if (s->on_line)
		s->on_line(s->ctx, line);
}

static void on_text_line(void *ctx, const char *line, size_t len,
			 bool truncated)
{
	char clean[ENGINE_TAIL_WIDTH];

	engine_clean_line(clean, sizeof(clean), line, len, truncated);
	output_line(ctx, clean);
}

static void on_json_line(void *ctx, const char *line, size_t len,
			 bool truncated)
{
	struct engine_stream *s = ctx;
	json_t *j, *v;
	const char *str;

	while (len > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (len == 0)
		return;
	s->lines++;
	if (truncated) {
		s->bad_lines++;
		output_line(s, "[sbxcat: a line of over 1 MiB from the engine "
			       "was skipped]");
		return;
	}
	j = json_loadb(line, len, 0, NULL);
	if (!json_is_object(j)) {
		s->bad_lines++;
		json_decref(j);
		return;
	}
	v = json_object_get(j, "stream");
	if (json_is_string(v))
		lines_feed(&s->text, json_string_value(v),
			   json_string_length(v));
	str = json_string_value(json_object_get(j, "status"));
	if (str) {
		const char *id = json_string_value(json_object_get(j, "id"));
		const char *prog =
		    json_string_value(json_object_get(j, "progress"));
		char *msg =
		    xasprintf("%s%s%s%s%s", id ? id : "", id ? ": " : "", str,
			      prog ? " " : "", prog ? prog : "");
		on_text_line(s, msg, strlen(msg), false);
		free(msg);
	}
	v = json_object_get(json_object_get(j, "errorDetail"), "message");
	if (!json_is_string(v))
		v = json_object_get(j, "error");
	if (json_is_string(v) && !s->error) {
		struct strbuf sb = STRBUF_INIT;
		/* Output before the error line is part of its story. */
		lines_finish(&s->text);
		/* A message names the command and may quote its output. */
		text_add_escaped(&sb, json_string_value(v),
				 json_string_length(v));
		s->error = strbuf_detach(&sb, NULL);
	}
	json_decref(j);
}

void engine_stream_init(struct engine_stream *s)
{
	memset(s, 0, sizeof(*s));
	lines_init(&s->json, ENGINE_JSON_LINE_MAX, on_json_line, s);
	lines_init(&s->text, TEXT_LINE_MAX, on_text_line, s);
}

void engine_stream_feed(struct engine_stream *s, const char *data, size_t len)
{
	lines_feed(&s->json, data, len);
}

void engine_stream_finish(struct engine_stream *s)
{
	lines_finish(&s->json);
	lines_finish(&s->text);
}

void engine_stream_release(struct engine_stream *s)
{
	lines_release(&s->json);
	lines_release(&s->text);
	free(s->error);
	memset(s, 0, sizeof(*s));
}

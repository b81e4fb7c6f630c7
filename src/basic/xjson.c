/*
 * xjson.c - packing that cannot take the process down, lossless paths,
 * jansson on xmalloc (xjson.h).
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <string.h>

#include <openssl/evp.h>

#include "basic/alloc.h"
#include "basic/text.h"
#include "basic/xjson.h"

void xjson_init(void)
{
	json_set_alloc_funcs(xmalloc, free);
}

/*
 * ---- the pack walker ----
 *
 * jansson refuses a pack whose strings are not UTF-8, or whose "o" is
 * NULL (json_string() of such a string, passed on), and by then it has
 * consumed every "o" argument: a retry with a copy of the arguments would
 * use freed values.  So the arguments are walked first, with a copy of
 * the va_list, nothing consumed (check); only when one of them would fail
 * is the value built here (build), from the same walk: strings with each
 * invalid byte as U+FFFD, a NULL "o" or "O" as null.
 *
 * The grammar is the subset of jansson's the program uses: { } [ ] with
 * ',' ':' and blanks ignored; s (with s? s*, s# s% lengths and + to
 * concatenate), n, b, i, I, f, o, O (with ? and *).  Anything else is a
 * format no input can make (every format is a literal in the source),
 * and stays fatal: die_bug names it.
 */
struct walk {
	const char *fmt, *p;
	va_list ap;
	bool build;
	bool bad; /* check: an argument jansson would refuse */
};

static char walk_next(struct walk *w)
{
	while (*w->p == ' ' || *w->p == '\t' || *w->p == '\n' || *w->p == ',' ||
	       *w->p == ':')
		w->p++;
	return *w->p;
}

static void walk_bug(const struct walk *w, const char *what)
{
	die_bug("xjson_pack(\"%s\"): %s at offset %td", w->fmt, what,
		w->p - w->fmt);
}

/*
 * A string argument (the 's' already read): its text made valid UTF-8
 * into sb (build), or checked (sets w->bad).  *null when s? or s* got
 * NULL; *omit when it was s*.
 */
static void walk_string(struct walk *w, struct strbuf *sb, bool *null,
			bool *omit)
{
	char mod = w->p[1];

	*null = *omit = false;
	if (mod == '?' || mod == '*') {
		const char *s = va_arg(w->ap, const char *);

		w->p += 2;
		if (!s) {
			*null = true;
			*omit = mod == '*';
			return;
		}
		if (w->build)
			text_add_utf8_lossy(sb, s, strlen(s));
		else if (utf8_first_invalid(s, strlen(s)) >= 0)
			w->bad = true;
		return;
	}
	w->p++;
	for (;;) {
		const char *s = va_arg(w->ap, const char *);
		size_t len;

		if (*w->p == '#') {
			len = (size_t)va_arg(w->ap, int);
			w->p++;
		} else if (*w->p == '%') {
			len = va_arg(w->ap, size_t);
			w->p++;
		} else {
			len = s ? strlen(s) : 0;
		}
		if (!s) {
			/* A NULL "s": jansson refuses it; it is the
			 * empty string here. */
			w->bad = true;
		} else if (w->build) {
			text_add_utf8_lossy(sb, s, len);
		} else if (utf8_first_invalid(s, len) >= 0) {
			w->bad = true;
		}
		if (*w->p != '+')
			return;
		w->p++;
	}
}

static json_t *walk_value(struct walk *w);

static json_t *walk_object(struct walk *w)
{
	json_t *o = w->build ? json_object() : NULL;

	w->p++;
	while (walk_next(w) != '}') {
		struct strbuf key = STRBUF_INIT;
		bool null, omit, optional;
		json_t *v;

		if (*w->p != 's')
			walk_bug(w, "an object key that is not 's'");
		walk_string(w, &key, &null, &omit);
		if (null)
			walk_bug(w, "a NULL object key");
		walk_next(w);
		optional = *w->p && w->p[1] == '*';
		v = walk_value(w);
		if (w->build && v)
			json_object_set_new(o, strbuf_str(&key), v);
		else if (w->build && !optional)
			json_object_set_new(o, strbuf_str(&key), json_null());
		strbuf_release(&key);
	}
	w->p++;
	return o;
}

static json_t *walk_array(struct walk *w)
{
	json_t *a = w->build ? json_array() : NULL;

	w->p++;
	while (walk_next(w) != ']') {
		json_t *v = walk_value(w);

		if (w->build && v)
			json_array_append_new(a, v);
	}
	w->p++;
	return a;
}

/* "o" and "O", with "?" and "*": the value (build), or NULL. */
static json_t *walk_json(struct walk *w)
{
	bool steal = *w->p == 'o';
	char mod = w->p[1];
	json_t *v = va_arg(w->ap, json_t *);

	w->p += (mod == '?' || mod == '*') ? 2 : 1;
	if (!v) {
		if (mod != '?' && mod != '*')
			w->bad = true;
		/* o* omits; o? and a NULL o are null */
		return w->build && mod != '*' ? json_null() : NULL;
	}
	if (!w->build)
		return NULL;
	return steal ? v : json_incref(v);
}

/*
 * One value of the format at w->p and its arguments.  Build: the value
 * (NULL only for a "*" that omits it); check: NULL.
 */
static json_t *walk_value(struct walk *w)
{
	struct strbuf sb = STRBUF_INIT;
	bool null, omit;
	json_t *v = NULL;

	switch (walk_next(w)) {
	case '{':
		return walk_object(w);
	case '[':
		return walk_array(w);
	case 's':
		walk_string(w, &sb, &null, &omit);
		if (w->build && !omit)
			v = null ? json_null()
				 : json_stringn(sb.buf ? sb.buf : "", sb.len);
		strbuf_release(&sb);
		return v;
	case 'n':
		w->p++;
		return w->build ? json_null() : NULL;
	case 'b': {
		int b = va_arg(w->ap, int);

		w->p++;
		return w->build ? json_boolean(b) : NULL;
	}
	case 'i': {
		int i = va_arg(w->ap, int);

		w->p++;
		return w->build ? json_integer(i) : NULL;
	}
	case 'I': {
		json_int_t i = va_arg(w->ap, json_int_t);

		w->p++;
		return w->build ? json_integer(i) : NULL;
	}
	case 'f': {
		double f = va_arg(w->ap, double);

		w->p++;
		return w->build ? json_real(f) : NULL;
	}
	case 'o':
	case 'O':
		return walk_json(w);
	case '\0':
		walk_bug(w, "the format ends early");
		break;
	default:
		walk_bug(w, "a format character the walker does not know");
	}
	return NULL;
}

/* Walk fmt with ap (a copy the caller owns): the value, or NULL when
 * checking. */
static json_t *walk(const char *fmt, va_list ap, bool build, bool *bad)
{
	struct walk w = {.fmt = fmt, .p = fmt, .build = build};
	json_t *v;

	va_copy(w.ap, ap);
	v = walk_value(&w);
	if (walk_next(&w) != '\0')
		walk_bug(&w, "more than one value");
	va_end(w.ap);
	*bad = w.bad;
	return v;
}

json_t *xjson_pack(const char *fmt, ...)
{
	json_error_t jerr;
	json_t *j;
	va_list ap;
	bool bad;

	jerr.text[0] = '\0';
	va_start(ap, fmt);
	walk(fmt, ap, false, &bad);
	if (bad)
		j = walk(fmt, ap, true, &bad);
	else
		j = json_vpack_ex(&jerr, 0, fmt, ap);
	va_end(ap);
	/* The walk found nothing jansson refuses: a failure now is a
	 * format the walker and jansson read differently, a bug. */
	if (!j)
		die_bug("json_pack(\"%s\"): %s", fmt, jerr.text);
	return j;
}

json_t *xjson_string(const char *s)
{
	return xjson_text(s);
}

json_t *xjson_textn(const char *s, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *j;

	text_add_utf8_lossy(&sb, s, len);
	j = json_stringn(sb.buf ? sb.buf : "", sb.len);
	strbuf_release(&sb);
	if (!j)
		die_oom(); /* valid UTF-8 by construction: only memory */
	return j;
}

json_t *xjson_text(const char *s)
{
	return xjson_textn(s, strlen(s));
}

json_t *xjson_base64(const void *data, size_t len)
{
	char *b64 = xmalloc(st_add(st_mult(st_add(len, 2) / 3, 4), 1));
	json_t *j;

	if (len > INT_MAX)
		die_oom(); /* EVP_EncodeBlock counts in int */
	EVP_EncodeBlock((unsigned char *)b64, data, (int)len);
	j = xjson_string(b64);
	free(b64);
	return j;
}

void xjson_set_path(json_t *obj, const char *key, const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	bool lossy = text_add_utf8_lossy(&sb, path, strlen(path));

	json_object_set_new(obj, key,
			    xjson_textn(sb.buf ? sb.buf : "", sb.len));
	strbuf_release(&sb);
	if (lossy) {
		char *k = xasprintf("%s_base64", key);

		json_object_set_new(obj, k, xjson_base64(path, strlen(path)));
		free(k);
	}
}

/*
 * xjson.c - checked packing, lossless paths, jansson on xmalloc (xjson.h).
 */
#include "config.h"

#include <limits.h>
#include <string.h>

#include <openssl/evp.h>

#include "basic/alloc.h"
#include "basic/text.h"
#include "basic/xjson.h"

void xjson_init(void)
{
	json_set_alloc_funcs(xmalloc, free);
}

json_t *xjson_pack(const char *fmt, ...)
{
	json_error_t jerr;
	json_t *j;
	va_list ap;

	va_start(ap, fmt);
	j = json_vpack_ex(&jerr, 0, fmt, ap);
	va_end(ap);
	if (!j)
		die_bug("json_pack(\"%s\"): %s", fmt, jerr.text);
	return j;
}

json_t *xjson_string(const char *s)
{
	json_t *j = json_string(s);

	if (!j)
		die_bug("a string that should be UTF-8 is not: '%s'", s);
	return j;
}

/* s with each invalid byte as U+FFFD; *lossy says whether any was. */
static char *utf8_lossy(const char *s, bool *lossy)
{
	struct strbuf sb = STRBUF_INIT;
	size_t len = strlen(s);

	*lossy = false;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_decode(s + i, len - i, &cp);

		if (n == 0) {
			strbuf_addstr(&sb, "\xEF\xBF\xBD");
			*lossy = true;
			i++;
			continue;
		}
		strbuf_add(&sb, s + i, n);
		i += n;
	}
	return strbuf_detach(&sb, NULL);
}

json_t *xjson_text(const char *s)
{
	bool lossy;
	char *v = utf8_lossy(s, &lossy);
	json_t *j = xjson_string(v);

	free(v);
	return j;
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
	bool lossy;
	char *v = utf8_lossy(path, &lossy);

	json_object_set_new(obj, key, xjson_string(v));
	free(v);
	if (lossy) {
		char *k = xasprintf("%s_base64", key);

		json_object_set_new(obj, k, xjson_base64(path, strlen(path)));
		free(k);
	}
}

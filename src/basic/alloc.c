/*
 * alloc.c - allocation that cannot fail, the fatal paths, growable strings
 * (alloc.h).  Depends on libc only.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"

/* Write all of s to stderr's descriptor; nothing to do if that fails. */
static void write_stderr(const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, s, len);

		if (n < 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

void die_oom(void)
{
	static const char msg[] = "sbxcat: out of memory\n";

	write_stderr(msg, sizeof(msg) - 1);
	abort();
}

void die_bug(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	memcpy(buf, "sbxcat: fatal: ", 15);
	va_start(ap, fmt);
	n = vsnprintf(buf + 15, sizeof(buf) - 16, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(buf) - 17)
		n = (int)(sizeof(buf) - 17); /* truncated: keep the newline */
	buf[15 + n] = '\n';
	write_stderr(buf, 15 + (size_t)n + 1);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die_oom();
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		die_oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die_oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die_oom();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		die_oom();
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *p;

	if (vasprintf(&p, fmt, ap) < 0)
		die_oom();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = xvasprintf(fmt, ap);
	va_end(ap);
	return p;
}

void strbuf_init(struct strbuf *sb)
{
	sb->buf = NULL;
	sb->len = 0;
	sb->alloc = 0;
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	strbuf_init(sb);
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	ALLOC_GROW(sb->buf, st_add(st_add(sb->len, extra), 1), sb->alloc);
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *p;

	strbuf_grow(sb, 0);
	sb->buf[sb->len] = '\0';
	p = sb->buf;
	if (len)
		*len = sb->len;
	strbuf_init(sb);
	return p;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	strbuf_grow(sb, len);
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;

	strbuf_add(sb, &ch, 1);
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	char *p = xvasprintf(fmt, ap);

	strbuf_addstr(sb, p);
	free(p);
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

const char *strbuf_str(struct strbuf *sb)
{
	strbuf_grow(sb, 0);
	sb->buf[sb->len] = '\0';
	return sb->buf;
}

void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * multipart.c - multipart/form-data split into parts (multipart.h):
 * the delimiter found with memmem, headers read line by line within
 * their bounds, Content-Disposition's and Content-Type's parameters.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/alloc.h"
#include "basic/multipart.h"

/* RFC 9110's tchar. */
static bool tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *ows(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/*
 * The next parameter of a header value at *pp (";" NAME "=" VALUE, with
 * optional white space): 1 with *name (its length in *nlen, pointing
 * into the value) and *value (a new string, quotes and escapes undone),
 * 0 at the end, -1 with *why.
 */
static int param_next(const char **pp, const char *end, const char **name,
		      size_t *nlen, char **value, const char **why)
{
	const char *p = ows(*pp, end);
	char *v;
	size_t n = 0;

	if (p == end)
		return 0;
	if (*p != ';') {
		*why = "a header's parameters are not separated by ';'";
		return -1;
	}
	p = ows(p + 1, end);
	if (p == end)
		return 0; /* a trailing ';', as clients send */
	*name = p;
	while (p < end && tchar((unsigned char)*p))
		p++;
	*nlen = (size_t)(p - *name);
	p = ows(p, end);
	if (!*nlen || p == end || *p != '=') {
		*why = "a header's parameter is not NAME=VALUE";
		return -1;
	}
	p = ows(p + 1, end);
	/* The value is at most as long as what is left. */
	v = xmalloc(st_add((size_t)(end - p), 1));
	if (p < end && *p == '"') {
		for (p++; p < end && *p != '"'; p++) {
			if (*p == '\\' && p + 1 < end)
				p++;
			v[n++] = *p;
		}
		if (p == end) {
			free(v);
			*why =
			    "a header's quoted parameter has no closing quote";
			return -1;
		}
		p++;
	} else {
		while (p < end && tchar((unsigned char)*p))
			v[n++] = *p++;
		if (!n) {
			free(v);
			*why = "a header's parameter has no value";
			return -1;
		}
	}
	v[n] = '\0';
	*value = v;
	*pp = p;
	return 1;
}

static bool is_name(const char *name, size_t nlen, const char *want)
{
	return nlen == strlen(want) && !strncasecmp(name, want, nlen);
}

int multipart_boundary(const char *content_type,
		       char out[MULTIPART_BOUNDARY_MAX + 1], const char **why)
{
	static const char type[] = "multipart/form-data";
	const char *p = content_type, *end, *name;
	char *value;
	size_t nlen, n;
	bool found = false;
	int rc;

	if (!p || strncasecmp(p, type, strlen(type)) != 0) {
		*why = "the body is not multipart/form-data";
		return -1;
	}
	p += strlen(type);
	end = p + strlen(p);
	if (p < end && *p != ';' && *p != ' ' && *p != '\t') {
		*why = "the body is not multipart/form-data";
		return -1;
	}
	while ((rc = param_next(&p, end, &name, &nlen, &value, why)) == 1) {
		if (!is_name(name, nlen, "boundary")) {
			free(value);
			continue;
		}
		if (found) {
			free(value);
			*why = "multipart/form-data names two boundaries";
			return -1;
		}
		found = true;
		n = strlen(value);
		if (!n || n > MULTIPART_BOUNDARY_MAX || value[n - 1] == ' ' ||
		    strspn(value,
			   "0123456789abcdefghijklmnopqrstuvwxyz"
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ") != n) {
			free(value);
			*why = "the multipart boundary is not 1 to 70 of RFC "
			       "2046's characters";
			return -1;
		}
		memcpy(out, value, n + 1);
		free(value);
	}
	if (rc < 0)
		return -1;
	if (!found) {
		*why = "multipart/form-data without a boundary";
		return -1;
	}
	return 0;
}

/* A header line's bytes: tab and printable, UTF-8's bytes too; no
 * other control character. */
static bool line_clean(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

/* Content-Disposition: form-data; name=...; filename=... into part. */
static int disposition(struct multipart_part *part, const char *p,
		       const char *end, const char **why)
{
	static const char fd[] = "form-data";
	const char *name;
	char *value;
	size_t nlen;
	int rc;

	if (part->name) {
		*why = "a part has two Content-Disposition headers";
		return -1;
	}
	if ((size_t)(end - p) < strlen(fd) || strncasecmp(p, fd, strlen(fd)) ||
	    (p + strlen(fd) < end && p[strlen(fd)] != ';' &&
	     p[strlen(fd)] != ' ' && p[strlen(fd)] != '\t')) {
		*why = "a part's Content-Disposition is not form-data";
		return -1;
	}
	p += strlen(fd);
	while ((rc = param_next(&p, end, &name, &nlen, &value, why)) == 1) {
		char **slot = NULL;

		if (is_name(name, nlen, "name"))
			slot = &part->name;
		else if (is_name(name, nlen, "filename"))
			slot = &part->filename;
		if (!slot) {
			free(value);
			continue;
		}
		if (*slot) {
			free(value);
			*why = "a part's Content-Disposition names a "
			       "parameter twice";
			return -1;
		}
		*slot = value;
	}
	if (rc < 0)
		return -1;
	if (!part->name) {
		*why = "a part has no name";
		return -1;
	}
	return 0;
}

/*
 * The header block of a part at body[*at..len): its lines to the empty
 * one, within MULTIPART_HEADER_BYTES and _LINES; *at then past it.
 */
static int headers(struct multipart_part *part, const char *body, size_t len,
		   size_t *at, const char **why)
{
	size_t start = *at, lines = 0;
	size_t limit = len - start < MULTIPART_HEADER_BYTES
			   ? len - start
			   : MULTIPART_HEADER_BYTES;
	const char *p = body + start, *end = p + limit;

	for (;;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		const char *colon;

		if (!eol) {
			*why = limit == MULTIPART_HEADER_BYTES
				   ? "a part's headers are over 8 KiB"
				   : "a part's headers have no end";
			return -1;
		}
		if (eol == p)
			break;
		if (++lines > MULTIPART_HEADER_LINES) {
			*why = "a part has more than 16 header lines";
			return -1;
		}
		if (!line_clean(p, (size_t)(eol - p))) {
			*why = "a part's header holds a control character";
			return -1;
		}
		if (*p == ' ' || *p == '\t') {
			*why = "a part's header is folded";
			return -1;
		}
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p) {
			*why = "a part's header line is not NAME: VALUE";
			return -1;
		}
		for (const char *c = p; c < colon; c++)
			if (!tchar((unsigned char)*c)) {
				*why = "a part's header name is not a token";
				return -1;
			}
		if (is_name(p, (size_t)(colon - p), "Content-Disposition")) {
			if (disposition(part, ows(colon + 1, eol), eol, why) <
			    0)
				return -1;
		} else if (is_name(p, (size_t)(colon - p), "Content-Type")) {
			const char *v = ows(colon + 1, eol);

			if (part->type) {
				*why = "a part has two Content-Type headers";
				return -1;
			}
			part->type = xstrndup(v, (size_t)(eol - v));
		}
		p = eol + 2;
	}
	if (!part->name) {
		*why = "a part has no Content-Disposition with a name";
		return -1;
	}
	*at = (size_t)(p + 2 - body);
	return 0;
}

/*
 * What follows "--" BOUNDARY at body[at..len): 1 a part (its delimiter
 * line's end in *next), 2 the close delimiter, 0 neither (content).
 */
static int after_boundary(const char *body, size_t len, size_t at, size_t *next)
{
	if (len - at >= 2 && body[at] == '-' && body[at + 1] == '-')
		return 2;
	while (at < len && (body[at] == ' ' || body[at] == '\t'))
		at++;
	if (len - at >= 2 && body[at] == '\r' && body[at + 1] == '\n') {
		*next = at + 2;
		return 1;
	}
	return 0;
}

/* The next delimiter from body[from..): CRLF "--" BOUNDARY followed by
 * a delimiter line's end or "--": its offset and kind, or 0. */
static int next_delimiter(const char *body, size_t len, size_t from,
			  const char *dash, size_t dlen, size_t *pos,
			  size_t *next)
{
	while (from <= len && len - from >= dlen) {
		const char *hit = memmem(body + from, len - from, dash, dlen);
		int kind;

		if (!hit)
			return 0;
		*pos = (size_t)(hit - body);
		kind = after_boundary(body, len, *pos + dlen, next);
		if (kind)
			return kind;
		from = *pos + 1;
	}
	return 0;
}

void multipart_release(struct multipart *mp)
{
	for (size_t i = 0; i < mp->n; i++) {
		free(mp->parts[i].name);
		free(mp->parts[i].filename);
		free(mp->parts[i].type);
	}
	free(mp->parts);
	mp->parts = NULL;
	mp->n = mp->alloc = 0;
}

int multipart_parse(struct multipart *mp, const char *body, size_t len,
		    const char *boundary, size_t max_parts, const char **why)
{
	size_t blen = strlen(boundary), dlen = blen + 4, at, pos, start;
	char dash[MULTIPART_BOUNDARY_MAX + 5];
	int kind;

	if (!blen || blen > MULTIPART_BOUNDARY_MAX) {
		*why = "the multipart boundary is not 1 to 70 characters";
		return -1;
	}
	memcpy(dash, "\r\n--", 4);
	memcpy(dash + 4, boundary, blen);
	/* The first delimiter: at the very start, or after a preamble. */
	if (len >= blen + 2 && !memcmp(body, "--", 2) &&
	    !memcmp(body + 2, boundary, blen) &&
	    (kind = after_boundary(body, len, blen + 2, &at)) != 0)
		;
	else
		kind = next_delimiter(body, len, 0, dash, dlen, &pos, &at);
	if (!kind) {
		*why = "the body has no multipart boundary line";
		return -1;
	}
	while (kind == 1) {
		struct multipart_part *part;

		if (mp->n >= max_parts) {
			*why = "the body has too many parts";
			return -1;
		}
		ALLOC_GROW(mp->parts, mp->n + 1, mp->alloc);
		part = &mp->parts[mp->n++];
		memset(part, 0, sizeof(*part));
		if (headers(part, body, len, &at, why) < 0)
			return -1;
		/* The content's CRLF before its delimiter may be the very
		 * CRLF that ended the headers (an empty part). */
		start = at;
		kind = next_delimiter(body, len, at - 2, dash, dlen, &pos, &at);
		if (!kind) {
			*why = "the body ends before its closing boundary";
			return -1;
		}
		part->data = body + start;
		part->len = pos > start ? pos - start : 0;
	}
	return 0;
}

/*
 * multipart.h - a multipart/form-data body (RFC 7578 over RFC 2046's
 * multipart syntax) split into its parts: pure parsing of a body already
 * in memory, no I/O, bounded in memory and time whatever the bytes.
 *
 * What a body may be: an optional preamble, then parts each opened by a
 * delimiter line ("--" BOUNDARY, optional spaces or tabs, CRLF), a
 * header block of at most MULTIPART_HEADER_BYTES in at most
 * MULTIPART_HEADER_LINES lines ended by an empty line, and the content,
 * which runs to the next CRLF "--" BOUNDARY that a delimiter or the
 * closing "--" follows (a CRLF "--" BOUNDARY followed by anything else
 * is content, as Go's mime/multipart reads it); the close delimiter
 * ("--" BOUNDARY "--") is required, what follows it ignored.  Every part
 * must carry Content-Disposition: form-data with a name.  Header lines
 * end in CRLF, hold no control character but tab (so no NUL, no bare LF
 * or CR, no folded line) and are "Name: value"; a parameter is a token
 * or a quoted string (backslash escapes), each named once.
 *
 * The cost is linear in the body: the delimiter is found with memmem,
 * each byte is looked at a bounded number of times, and at most
 * max_parts parts are kept (each a few small strings).
 *
 * Ownership: a struct multipart owns its parts' strings (name, filename,
 * type); a part's data points into the body given to multipart_parse,
 * which must outlive it.  multipart_release frees what it owns (also
 * after a failed parse).
 *
 * Thread rule: none; a struct multipart is its caller's.
 */
#ifndef SBX_MULTIPART_H
#define SBX_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

/* RFC 2046: a boundary is 1 to 70 characters. */
#define MULTIPART_BOUNDARY_MAX 70
/* One part's header block, and its lines: a form's part has two or
 * three short headers; the bound keeps a hostile block cheap. */
#define MULTIPART_HEADER_BYTES 8192
#define MULTIPART_HEADER_LINES 16

struct multipart_part {
	char *name;	  /* Content-Disposition's name (never NULL) */
	char *filename;	  /* its filename, as sent, or NULL */
	char *type;	  /* the part's Content-Type, or NULL */
	const char *data; /* the content, inside the body */
	size_t len;
};

struct multipart {
	struct multipart_part *parts;
	size_t n, alloc;
};

#define MULTIPART_INIT                                                         \
	{                                                                      \
		NULL, 0, 0                                                     \
	}

/*
 * The boundary of a Content-Type: multipart/form-data (its boundary
 * parameter, a token or a quoted string, 1 to MULTIPART_BOUNDARY_MAX of
 * RFC 2046's characters, not ending in a space) into out.  0, or -1 with
 * *why (a static string) for another type or a missing or bad boundary.
 */
int multipart_boundary(const char *content_type,
		       char out[MULTIPART_BOUNDARY_MAX + 1], const char **why);

/*
 * Split body[0..len) at boundary into mp's parts (mp initialised with
 * MULTIPART_INIT), keeping at most max_parts of them.  0, or -1 with
 * *why (a static string) saying what is wrong; mp then holds what was
 * parsed before it, to be released.
 */
int multipart_parse(struct multipart *mp, const char *body, size_t len,
		    const char *boundary, size_t max_parts, const char **why);

void multipart_release(struct multipart *mp);

#endif

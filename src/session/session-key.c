/*
 * session-key.c - a session's key (session.h): the checks of the fields
 * it folds in, the key itself, and the key secret (the configured one's
 * file, and ROOT/.sbxcat-key-secret made on first use).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "basic/text.h"
#include "session/session-layout.h"
#include "session/session.h"

/* A secret is one line; a file much larger than that is not a secret. */
#define SECRET_FILE_MAX 4096

static const char *const scopes[] = {"run", "conversation", "channel", "user",
				     "agent"};

const char *session_check_scope(const char *s)
{
	for (size_t i = 0; i < sizeof(scopes) / sizeof(*scopes); i++)
		if (strcmp(s, scopes[i]) == 0)
			return NULL;
	return "expected one of run, conversation, channel, user, agent";
}

static bool is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9');
}

/*
 * A tenant is 1 to 128 bytes of [A-Za-z0-9._@-] beginning with a letter
 * or a digit: what organisation ids, e-mail-like ids and domain names are
 * made of, safe in a label and a message, and never an option ("-x").
 */
const char *session_check_tenant(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SESSION_TENANT_MAX)
		return "expected 1 to 128 bytes";
	if (!is_alnum(s[0]) ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789._@-") != n)
		return "expected letters, digits, '.', '_', '@' and '-', "
		       "beginning with a letter or a digit";
	return NULL;
}

/* A subject is anybody's id (a chat thread, a user): any text, 1 to 1024
 * bytes of valid UTF-8 without a control character. */
const char *session_check_subject(const char *s)
{
	size_t n = strlen(s);
	uint32_t cp;

	if (n == 0 || n > SESSION_SUBJECT_MAX)
		return "expected 1 to 1024 bytes";
	if (utf8_first_invalid(s, n) >= 0)
		return "expected valid UTF-8";
	if (text_find_control(s, n, &cp))
		return "expected no control characters";
	return NULL;
}

/* A host name, or nothing: 0 to 253 bytes of [A-Za-z0-9.-]. */
const char *session_check_host(const char *s)
{
	size_t n = strlen(s);

	if (n > SESSION_HOST_MAX)
		return "expected at most 253 bytes";
	if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789.-") != n)
		return "expected letters, digits, '.' and '-'";
	return NULL;
}

bool session_key_valid(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= SESSION_KEY_MAX &&
	       strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[0]) &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* A field of the key's input: its length (4 bytes, big-endian), then it. */
static void add_field(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s);
	unsigned char len[4] = {(unsigned char)(n >> 24),
				(unsigned char)(n >> 16),
				(unsigned char)(n >> 8), (unsigned char)n};

	strbuf_add(sb, len, 4);
	strbuf_add(sb, s, n);
}

void session_key(const struct session_config *c, const char *tenant,
		 const char *scope, const char *subject, const char *host,
		 char key[SESSION_KEY_MAX + 1])
{
	static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
	struct strbuf in = STRBUF_INIT;
	unsigned char md[32];
	char org[9];
	size_t n = 0, k;

	add_field(&in, "docker");
	add_field(&in, scope);
	add_field(&in, tenant);
	add_field(&in, host ? host : "");
	add_field(&in, subject);
	if (c && c->secret)
		hmac_sha256(c->secret, c->secret_len, in.buf, in.len, md);
	else
		sha256(in.buf, in.len, md);
	strbuf_release(&in);

	for (const char *t = tenant; *t && n < 8; t++) {
		char ch = *t >= 'A' && *t <= 'Z' ? (char)(*t + 32) : *t;

		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
			org[n++] = ch;
	}
	if (!n)
		org[n++] = 'x';
	org[n] = '\0';
	k = (size_t)snprintf(key, SESSION_KEY_MAX + 1, "xc-%s-%s-", org, scope);
	if (k + 26 > SESSION_KEY_MAX)
		die_bug("session key of scope '%s' too long", scope);
	/* 26 digits of 5 bits: the first 130 bits of md, big-endian. */
	for (size_t i = 0; i < 26; i++) {
		size_t bit = i * 5;
		unsigned v = ((unsigned)md[bit / 8] << 8 | md[bit / 8 + 1]) >>
			     (11 - bit % 8);

		key[k++] = b32[v & 31];
	}
	key[k] = '\0';
}

int session_secret_from_fd(struct session_config *c, int fd, const char *what,
			   struct sbx_error **err)
{
	char *data = NULL;
	size_t len = 0, line;
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot stat %s", what);
	else if (!S_ISREG(st.st_mode))
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "%s is not a regular file", what);
	else if (st.st_uid != 0 && st.st_uid != geteuid())
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "%s is owned by uid %u, neither root nor "
				   "this user",
				   what, (unsigned)st.st_uid);
	else if (st.st_mode & 077)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "%s is accessible by group or others (mode "
				   "%04o); chmod 600 it",
				   what, (unsigned)(st.st_mode & 07777));
	else if (read_fd_limited(fd, what, SECRET_FILE_MAX, &data, &len, err) <
		 0)
		rc = session_set_kind(err, SBX_E_UNAVAILABLE);
	else
		rc = 0;
	close(fd);
	if (rc == 0) {
		line = strcspn(data, "\n");
		if (line > 0 && data[line - 1] == '\r')
			line--;
		if (line == 0 || memchr(data, '\0', line))
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s: %s",
					   what,
					   line ? "the first line holds a NUL "
						  "byte"
						: "the first line is empty");
	}
	if (rc == 0) {
		c->secret = xmalloc(line);
		memcpy(c->secret, data, line);
		c->secret_len = line;
	}
	if (data) {
		OPENSSL_cleanse(data, len);
		free(data);
	}
	return rc;
}

/* ---- the key secret made on first use ---- */

/*
 * Make ROOT/.sbxcat-key-secret when missing: 32 random bytes as one line
 * of hex, written to a name of this call's own, fsync'd, then linked to
 * the secret's name.  link(2), unlike rename(2), fails when the name
 * exists: of two first uses racing, one links and the other finds the
 * winner's file, so both use one secret.
 */
static int secret_make(struct session_root *r, struct sbx_error **err)
{
	char line[65], tmp[sizeof(SECRET_NAME) + 18];
	ssize_t n;
	int fd, rc = 0;

	/* SECRET_NAME "." then 16 random hex digits: two first uses (threads
	 * or processes) never make the same temporary. */
	random_hex(tmp + sizeof(SECRET_NAME), 8);
	memcpy(tmp, SECRET_NAME ".", sizeof(SECRET_NAME));
	fd = openat(r->fd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot make the key secret '%s/%s'",
				     r->path, tmp);
	random_hex(line, 32);
	line[64] = '\n';
	n = write(fd, line, sizeof(line));
	OPENSSL_cleanse(line, sizeof(line));
	if (n != (ssize_t)sizeof(line) || fchmod(fd, 0600) < 0 || fsync(fd) < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, n < 0 ? errno : EIO,
				   "cannot write the key secret '%s/%s'",
				   r->path, tmp);
	close(fd);
	if (rc == 0 && linkat(r->fd, tmp, r->fd, SECRET_NAME, 0) < 0 &&
	    errno != EEXIST)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot make the key secret '%s/%s'",
				   r->path, SECRET_NAME);
	unlinkat(r->fd, tmp, 0);
	if (rc == 0 && fsync(r->fd) < 0 && errno != EINVAL)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot sync '%s'", r->path);
	return rc;
}

int session_secret_load(struct session_config *c, struct session_root *r,
			struct sbx_error **err)
{
	cleanup_free char *what = NULL;
	int fd;

	if (c->secret)
		return 0; /* the environment's or SBXCAT_KEY_SECRET_FILE's */
	what = xasprintf("the key secret '%s/" SECRET_NAME "'", r->path);
	for (int i = 0; i < 2; i++) {
		fd = openat(r->fd, SECRET_NAME,
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
				O_NOCTTY);
		if (fd >= 0)
			return session_secret_from_fd(c, fd, what, err);
		if (errno != ENOENT || i)
			break;
		if (secret_make(r, err) < 0)
			return -1;
	}
	if (errno == ELOOP)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "%s is a symlink; sbxcat makes it a "
				     "file of root's, mode 0600",
				     what);
	return sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot open %s",
			     what);
}

/*
 * session.c - a session on the host (session.h): the configuration from
 * the environment, the field checks, the key, the workspace root and what
 * is below it (ROOT/KEY, its workspace and sbxcat's record), the quota
 * lock, and the two walks of a tree the sandbox owns (removal, size).
 *
 * Below ROOT nothing is reached by path: every step is openat() (with
 * O_NOFOLLOW), mkdirat(), fstatat(AT_SYMLINK_NOFOLLOW) or unlinkat()
 * relative to a descriptor already checked.  The workspace is the
 * sandbox's: it can plant symlinks to /etc, rename directories while a
 * walk runs, and build trees far deeper than any stack; the walks iterate
 * (no recursion), keep 24 bytes per level, and check each ".." they climb
 * against the directory they came down from.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "basic/alloc.h"
#include "basic/env.h"
#include "catalog/deployment.h"
#include "catalog/catalog.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "session/session.h"
#include "basic/sig.h"
#include "basic/text.h"
#include "workspace/tree.h"
#include "basic/xjson.h"

#define RECORD_NAME "session.json"
#define RECORD_MAX (64 * 1024)
#define RECORD_VERSION 1
#define LOCK_NAME ".sbxcat.lock"
#define EXEC_LOCK_NAME "exec.lock"
#define WATCH_LOCK_NAME "watch.lock"
#define SECRET_NAME ".sbxcat-key-secret"
#define TRASH_NAME ".sbxcat-trash"
#define WORKSPACE_NAME "workspace"
/* A secret is one line; a file much larger than that is not a secret. */
#define SECRET_FILE_MAX 4096
/* Docker refuses a memory limit under 6 MiB. */
#define MEM_MIN (6ull << 20)
/* The kernel's own bound on symlinks followed in one lookup. */
#define LINKS_MAX 40
/* Year 9999: a time past it in a record is not a time. */
#define TIME_MAX 253402300799LL

static const char *const scopes[] = {"run", "conversation", "channel", "user",
				     "agent"};

/* s escaped for a message, cut to 80 bytes ("..." says so), in sb. */
static const char *shown(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s);

	strbuf_release(sb);
	strbuf_addstr(sb, "");
	text_add_escaped(sb, s, utf8_whole(s, n > 80 ? 80 : n));
	if (n > 80)
		strbuf_addstr(sb, "...");
	return sb->buf;
}

/* Change the kind of an error just set (err may be NULL). */
static int set_kind(struct sbx_error **err, enum sbx_kind kind)
{
	if (err && *err)
		(*err)->kind = kind;
	return -1;
}

/* Status 2: VAR 'VALUE': expected. */
static int bad_value(struct sbx_error **err, const char *var, const char *v,
		     const char *expected)
{
	struct strbuf sb = STRBUF_INIT;
	int rc = sbx_error_set(err, SBX_E_INVALID, 0, "%s '%s': %s", var,
			       shown(&sb, v), expected);

	strbuf_release(&sb);
	return rc;
}

/* A variable's value; NULL when unset or empty (the default applies). */
static const char *env(const struct sbx_env *e, const char *name)
{
	return sbx_env_nonempty(e, name);
}

static int env_uint(const struct sbx_env *e, const char *var, unsigned long long min,
		    unsigned long long max, unsigned long long *out,
		    struct sbx_error **err)
{
	const char *v = env(e, var);
	unsigned long long x = 0;
	size_t n;

	if (!v)
		return 0;
	n = strlen(v);
	if (strspn(v, "0123456789") == n && n <= 19) {
		for (size_t i = 0; i < n; i++)
			x = x * 10 + (unsigned long long)(v[i] - '0');
		if (x >= min && x <= max) {
			*out = x;
			return 0;
		}
	}
	{
		char expected[96];

		snprintf(expected, sizeof(expected),
			 "expected a whole number from %llu to %llu", min, max);
		return bad_value(err, var, v, expected);
	}
}

static int env_size(const struct sbx_env *e, const char *var, unsigned long long min,
		    unsigned long long *out, struct sbx_error **err)
{
	const char *v = env(e, var);
	unsigned long long x;

	if (!v)
		return 0;
	if (session_parse_size(v, &x, err) < 0)
		return sbx_error_wrap(err, "%s", var);
	if (x < min) {
		char expected[64];

		snprintf(expected, sizeof(expected), "at least %llu bytes",
			 min);
		return bad_value(err, var, v, expected);
	}
	*out = x;
	return 0;
}

static int env_bool(const struct sbx_env *e, const char *var, bool *out, struct sbx_error **err)
{
	static const char *const no[] = {"0", "false", "no"};
	static const char *const yes[] = {"1", "true", "yes"};
	const char *v = env(e, var);

	if (!v)
		return 0;
	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
	}
	return bad_value(err, var, v,
			 "expected 1, true or yes (stop containers on close, "
			 "keep them), or 0, false or no (remove them)");
}

/*
 * The workspace root as configured: an absolute path of valid UTF-8
 * without control characters, no "." or ".." component (what the engine
 * binds must be what was checked), not "/" itself.  Repeated and trailing
 * slashes are dropped.
 */
static int root_from_env(const struct sbx_env *e, struct session_config *c, struct sbx_error **err)
{
	const char *v = env(e, "SANDBOXD_WORKSPACE_ROOT");
	struct strbuf sb = STRBUF_INIT;
	uint32_t cp;
	size_t n;

	if (!v) {
		c->root = xstrdup(SESSION_ROOT_DEFAULT);
		return 0;
	}
	n = strlen(v);
	if (v[0] != '/' || n >= PATH_MAX || utf8_first_invalid(v, n) >= 0 ||
	    text_find_control(v, n, &cp))
		return bad_value(err, "SANDBOXD_WORKSPACE_ROOT", v,
				 "expected an absolute path, in UTF-8, "
				 "without control characters");
	for (const char *p = v; *p;) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if ((len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.')) {
			strbuf_release(&sb);
			return bad_value(err, "SANDBOXD_WORKSPACE_ROOT", v,
					 "expected a path without '.' or "
					 "'..' components");
		}
		if (len) {
			strbuf_addch(&sb, '/');
			strbuf_add(&sb, p, len);
		}
		p += len;
	}
	if (!sb.len)
		return bad_value(err, "SANDBOXD_WORKSPACE_ROOT", v,
				 "expected a directory below '/', not '/' "
				 "itself");
	c->root = strbuf_detach(&sb, NULL);
	return 0;
}

/*
 * A Docker network name as the engine accepts one
 * ([a-zA-Z0-9][a-zA-Z0-9_.-]*), but never "host": a session never shares
 * the host's network namespace (brief section 7).
 */
static int network_from_env(const struct sbx_env *e, struct session_config *c, struct sbx_error **err)
{
	const char *v = env(e, "SBXCAT_SESSION_NETWORK");
	size_t n;

	if (!v) {
		c->network = xstrdup("bridge");
		return 0;
	}
	n = strlen(v);
	if (n > 128 ||
	    !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
		    "WXYZ0123456789",
		    v[0]) ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789_.-") != n)
		return bad_value(err, "SBXCAT_SESSION_NETWORK", v,
				 "expected a network name: 1 to 128 of "
				 "letters, digits, '_', '.', '-', beginning "
				 "with a letter or a digit");
	if (strcmp(v, "host") == 0)
		return bad_value(err, "SBXCAT_SESSION_NETWORK", v,
				 "a session never joins the host's network "
				 "namespace");
	c->network = xstrdup(v);
	return 0;
}

/*
 * The secret from the file open on fd (consumed), "what" naming it in
 * messages: a regular file (not a FIFO that would block), owned by root
 * or this user, with no access for group or others; its first line, not
 * empty.  No message carries any of its bytes.
 */
static int secret_from_fd(struct session_config *c, int fd, const char *what,
			  struct sbx_error **err)
{
	char *data = NULL;
	size_t len = 0, line;
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot stat %s",
				   what);
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
		rc = set_kind(err, SBX_E_UNAVAILABLE);
	else
		rc = 0;
	close(fd);
	if (rc == 0) {
		line = strcspn(data, "\n");
		if (line > 0 && data[line - 1] == '\r')
			line--;
		if (line == 0 || memchr(data, '\0', line))
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s: %s", what,
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

/* The file SBXCAT_KEY_SECRET_FILE names: never through a symlink. */
static int secret_from_file(struct session_config *c, const char *path,
			    struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = shown(&sb, path);
	cleanup_free char *what = xasprintf("SBXCAT_KEY_SECRET_FILE '%s'", p);
	int fd, rc;

	fd = open(path,
		  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ELOOP)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "%s is a symlink; name the file itself",
				   what);
	else if (fd < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot open %s",
				   what);
	else
		rc = secret_from_fd(c, fd, what, err);
	strbuf_release(&sb);
	return rc;
}

static int secret_from_env(const struct sbx_env *e, struct session_config *c, struct sbx_error **err)
{
	const char *v = sbx_env_get(e, "SBXCAT_KEY_SECRET");
	const char *f = sbx_env_get(e, "SBXCAT_KEY_SECRET_FILE");

	/* Set but empty is a mistake (a template left blank), not "no
	 * secret": keys would silently become guessable. */
	if (v && f)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "SBXCAT_KEY_SECRET and "
				     "SBXCAT_KEY_SECRET_FILE are both set; "
				     "set one");
	if (v && !*v)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "SBXCAT_KEY_SECRET is set but empty");
	if (f && !*f)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "SBXCAT_KEY_SECRET_FILE is set but empty");
	if (f)
		return secret_from_file(c, f, err);
	if (v) {
		c->secret_len = strlen(v);
		c->secret = xmalloc(c->secret_len);
		memcpy(c->secret, v, c->secret_len);
	}
	return 0;
}

/* A duration in whole seconds, 1 to 10 years. */
static int env_seconds(const struct sbx_env *e, const char *var, long long *out,
		       struct sbx_error **err)
{
	unsigned long long v = (unsigned long long)*out;

	if (env_uint(e, var, 1, 10ull * 366 * 86400, &v, err) < 0)
		return -1;
	*out = (long long)v;
	return 0;
}

/* The spill directory: one name at the workspace's top, not hidden by
 * accident of a slash or a dot-dot. */
static int spill_from_env(const struct sbx_env *e, struct session_config *c, struct sbx_error **err)
{
	const char *v = env(e, "SANDBOXD_SPILL_DIR");

	if (!v)
		v = "large_tool_results";
	if (strchr(v, '/') || strcmp(v, ".") == 0 || strcmp(v, "..") == 0 ||
	    strlen(v) > 255 || text_find_control(v, strlen(v), NULL) != 0 ||
	    utf8_first_invalid(v, strlen(v)) >= 0)
		return bad_value(err, "SANDBOXD_SPILL_DIR", v,
				 "expected one directory name at the "
				 "workspace's top, such as large_tool_results");
	c->spill = xstrdup(v);
	return 0;
}

int session_config_load(struct session_config *c, const struct sbx_env *e,
			struct sbx_error **err)
{
	unsigned long long per_tenant = 10, max = 20, timeout = 300;
	const char *dep = env(e, "SBXCAT_DEPLOYMENT_ID");

	memset(c, 0, sizeof(*c));
	c->mem_limit = 1ull << 30;
	c->max_output = 10ull << 20;
	c->max_read = 8ull << 20;
	c->max_write = 64ull << 20;
	c->idle_timeout = 1800;
	c->container_ttl = 86400;
	if (root_from_env(e, c, err) < 0 ||
	    env_uint(e, "SANDBOXD_MAX_SESSIONS_PER_TENANT", 1, 100000, &per_tenant,
		     err) < 0 ||
	    env_uint(e, "SANDBOXD_MAX_SESSIONS", 1, 100000, &max, err) < 0 ||
	    env_size(e, "SANDBOXD_MEM_LIMIT", MEM_MIN, &c->mem_limit, err) < 0 ||
	    env_uint(e, "SANDBOXD_EXECUTE_TIMEOUT", 1, 7 * 86400, &timeout, err) <
		0 ||
	    env_size(e, "SANDBOXD_MAX_OUTPUT_BYTES", 1, &c->max_output, err) < 0 ||
	    env_bool(e, "SANDBOXD_PERSIST_CONTAINERS", &c->persist_containers,
		     err) < 0 ||
	    network_from_env(e, c, err) < 0 ||
	    env_size(e, "SANDBOXD_MAX_READ_BYTES", 1, &c->max_read, err) < 0 ||
	    env_size(e, "SANDBOXD_MAX_WRITE_BYTES", 1, &c->max_write, err) < 0 ||
	    spill_from_env(e, c, err) < 0 ||
	    env_seconds(e, "SANDBOXD_IDLE_TIMEOUT", &c->idle_timeout, err) < 0 ||
	    env_seconds(e, "SANDBOXD_CONTAINER_TTL", &c->container_ttl, err) <
		0 ||
	    env_seconds(e, "SANDBOXD_WORKSPACE_TTL", &c->workspace_ttl, err) < 0)
		goto fail;
	if (c->workspace_ttl && c->workspace_ttl <= c->idle_timeout) {
		sbx_error_set(err, SBX_E_INVALID, 0,
			      "SANDBOXD_WORKSPACE_TTL (%lld s) must be longer "
			      "than SANDBOXD_IDLE_TIMEOUT (%lld s): a "
			      "workspace is deleted only once its session "
			      "has been stopped as idle",
			      c->workspace_ttl, c->idle_timeout);
		goto fail;
	}
	if (dep && deployment_check(dep, err) < 0) {
		set_kind(err, SBX_E_INVALID); /* a bad value, as the rest */
		goto fail;
	}
	c->deployment = xstrdup(dep ? dep : DEPLOYMENT_DEFAULT);
	if (secret_from_env(e, c, err) < 0)
		goto fail;
	c->max_per_tenant = (unsigned)per_tenant;
	c->max_sessions = (unsigned)max;
	c->execute_timeout_s = (long)timeout;
	return 0;
fail:
	session_config_release(c);
	return -1;
}

void session_config_release(struct session_config *c)
{
	free(c->root);
	free(c->network);
	free(c->deployment);
	free(c->spill);
	if (c->secret)
		OPENSSL_cleanse(c->secret, c->secret_len);
	free(c->secret);
	memset(c, 0, sizeof(*c));
}

int session_parse_size(const char *s, unsigned long long *bytes,
		       struct sbx_error **err)
{
	unsigned long long whole = 0, frac = 0, scale = 1, mult = 1, v;
	const char *p = s;
	size_t digits = 0, fdigits = 0;
	int shift = 0;

	for (; *p >= '0' && *p <= '9'; p++, digits++)
		if (__builtin_mul_overflow(whole, 10, &whole) ||
		    __builtin_add_overflow(whole, (unsigned)(*p - '0'), &whole))
			goto bad;
	if (*p == '.') {
		/* 18 digits: the fraction times 2^40 stays in 64 bits. */
		for (p++; *p >= '0' && *p <= '9'; p++, fdigits++) {
			if (fdigits == 18)
				goto bad;
			frac = frac * 10 + (unsigned)(*p - '0');
			scale *= 10;
		}
		if (!fdigits)
			goto bad;
	}
	if (!digits)
		goto bad;
	if (*p) {
		const char *u = strchr("bkmgt", *p | 0x20);

		if (!u || p[1])
			goto bad;
		shift = 10 * (int)(u - "bkmgt");
	}
	/* A fraction of a byte is no size. */
	if (fdigits && shift == 0)
		goto bad;
	mult = 1ull << shift;
	if (__builtin_mul_overflow(whole, mult, &v) ||
	    __builtin_add_overflow(v, frac * mult / scale, &v))
		goto bad;
	if (v == 0 || v > (1ull << 62))
		goto bad;
	*bytes = v;
	return 0;
bad : {
	struct strbuf sb = STRBUF_INIT;
	int rc = sbx_error_set(err, SBX_E_INVALID, 0,
			       "invalid size '%s': expected a number above "
			       "0 and at most 2^62 bytes with an optional "
			       "unit b, k, m, g or t (powers of 1024), such "
			       "as 512m or 1.5g",
			       shown(&sb, s));
	strbuf_release(&sb);
	return rc;
}
}

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

/* ---- the root ---- */

/* A directory on the way to ROOT: root's, and if writable by group or
 * others then sticky (as /tmp), so nobody else can rename what is in it. */
static int check_ancestor(int fd, const char *path, struct strbuf *root,
			  struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	int rc = 0;

	if (fstat(fd, &st) < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot stat '%s'",
				   shown(&sb, path));
	else if (st.st_uid != 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "workspace root '%s': its ancestor '%s' is "
				   "owned by uid %u, not root, who could "
				   "rename what is in it and redirect the "
				   "workspaces",
				   root->buf, shown(&sb, path),
				   (unsigned)st.st_uid);
	else if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "workspace root '%s': its ancestor '%s' is "
				   "writable by group or others (mode %04o) "
				   "and not sticky: they could rename what "
				   "is in it and redirect the workspaces",
				   root->buf, shown(&sb, path),
				   (unsigned)(st.st_mode & 07777));
	strbuf_release(&sb);
	return rc;
}

static int check_root(int fd, struct strbuf *root, struct sbx_error **err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot stat workspace root '%s'",
				     root->buf);
	if (st.st_uid != 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "workspace root '%s' is owned by uid %u, not "
			      "root",
			      root->buf, (unsigned)st.st_uid);
		if (err)
			sbx_error_hint(*err, "chown root:root it, or name "
					     "another");
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			      "workspace root '%s' is writable by group or "
			      "others (mode %04o)",
			      root->buf, (unsigned)(st.st_mode & 07777));
		if (err)
			sbx_error_hint(*err, "chmod go-w it");
		return -1;
	}
	return 0;
}

/*
 * Open the next component of a walk from fd, creating a missing directory
 * (0755).  -1 with errno: ELOOP for a symlink, ENOTDIR for anything else
 * that is not a directory.
 */
static int open_component(int fd, const char *name, bool *made)
{
	int sub =
	    openat(fd, name,
		   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (sub < 0 && errno == ENOENT) {
		if (mkdirat(fd, name, 0755) == 0)
			*made = true;
		else if (errno != EEXIST)
			return -1;
		sub = openat(fd, name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
				 O_NOCTTY);
	}
	if (sub < 0 && (errno == ELOOP || errno == ENOTDIR)) {
		bool link = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode);
		errno = link ? ELOOP : ENOTDIR;
	}
	return sub;
}

/*
 * Walk from "/" to ROOT, component by component, checking each directory
 * passed; a symlink on the way (not ROOT itself) is followed by putting
 * its target in front of what is left, since it sits in a directory just
 * checked and so cannot change.  *fdp: ROOT, opened.
 */
static int walk_to_root(const char *path, struct strbuf *root, int *fdp,
			struct sbx_error **err)
{
	struct strbuf rest = STRBUF_INIT, at = STRBUF_INIT, sb = STRBUF_INIT;
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int links = 0, rc = 0;

	strbuf_addstr(&rest, path);
	if (fd < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot open '/'");
	else
		rc = check_ancestor(fd, "/", root, err);
	while (rc == 0) {
		char *p = rest.buf, *name;
		size_t len;
		bool last, made = false;
		int sub;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			break;
		name = xstrndup(p, len);
		memmove(rest.buf, p + len, strlen(p + len) + 1);
		rest.len = strlen(rest.buf);
		last = strspn(rest.buf, "/") == rest.len;
		if (strcmp(name, ".") == 0) {
			free(name);
			continue;
		}
		sub = open_component(fd, name, &made);
		if (sub < 0 && errno == ELOOP && !last) {
			char target[PATH_MAX + 1];
			struct stat lst;
			ssize_t n;

			/* Its owner can point it elsewhere at any time (in a
			 * sticky directory such as /tmp too): only root's
			 * symlinks are followed, as fs.protected_symlinks
			 * would have it. */
			if (fstatat(fd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
			    lst.st_uid != 0) {
				rc = sbx_error_set(
				    err, SBX_E_UNAVAILABLE, 0,
				    "workspace root '%s': the symlink '%s' on "
				    "the way is owned by uid %u; only root's "
				    "symlinks are followed to it",
				    root->buf, name, (unsigned)lst.st_uid);
				free(name);
				break;
			}
			n = readlinkat(fd, name, target, PATH_MAX);

			if (n < 0 || ++links > LINKS_MAX) {
				rc = sbx_error_set(
				    err, SBX_E_UNAVAILABLE, n < 0 ? errno : ELOOP,
				    "cannot resolve workspace root '%s'",
				    root->buf);
				free(name);
				break;
			}
			target[n] = '\0';
			strbuf_release(&sb);
			strbuf_addstr(&sb, target);
			strbuf_addch(&sb, '/');
			strbuf_addstr(&sb, rest.buf);
			strbuf_release(&rest);
			strbuf_addstr(&rest, sb.buf);
			if (target[0] == '/') {
				close(fd);
				fd = open("/",
					  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				strbuf_release(&at);
				if (fd < 0)
					rc = sbx_error_set(err, SBX_E_UNAVAILABLE,
							   errno,
							   "cannot open '/'");
			}
			free(name);
			continue;
		}
		if (sub < 0) {
			int e = errno;

			if (e == ELOOP || e == ENOTDIR)
				rc = sbx_error_set(
				    err, SBX_E_UNAVAILABLE, 0,
				    "workspace root '%s': '%s/%s' is %s",
				    root->buf, at.buf ? at.buf : "",
				    shown(&sb, name),
				    e == ELOOP ? "a symlink; name the "
						 "directory it points to"
					       : "not a directory");
			else
				rc = sbx_error_set(
				    err, SBX_E_UNAVAILABLE, e, "cannot open '%s/%s'",
				    at.buf ? at.buf : "", shown(&sb, name));
			free(name);
			break;
		}
		if (made && fsync(fd) < 0 && errno != EINVAL)
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot sync '%s'", at.buf);
		close(fd);
		fd = sub;
		if (strcmp(name, "..") == 0) {
			char *slash = at.buf ? strrchr(at.buf, '/') : NULL;

			if (slash) {
				at.len = (size_t)(slash - at.buf);
				*slash = '\0';
			}
		} else {
			strbuf_addch(&at, '/');
			strbuf_addstr(&at, name);
		}
		free(name);
		if (rc == 0 && !last)
			rc = check_ancestor(fd, at.buf, root, err);
	}
	if (rc == 0)
		rc = check_root(fd, root, err);
	strbuf_release(&rest);
	strbuf_release(&at);
	strbuf_release(&sb);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*fdp = fd;
	return 0;
}

int session_root_open(struct session_root *r, const char *path,
		      struct sbx_error **err)
{
	struct strbuf root = STRBUF_INIT;
	size_t n = strlen(path);
	uint32_t cp;
	int rc;

	r->path = NULL;
	r->fd = r->lock_fd = -1;
	shown(&root, path);
	/* Messages below show r->path as it is: it must be clean text. */
	if (path[0] != '/' || utf8_first_invalid(path, n) >= 0 ||
	    text_find_control(path, n, &cp))
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "workspace root '%s' is not an absolute "
				   "path of printable UTF-8",
				   root.buf);
	else
		rc = walk_to_root(path, &root, &r->fd, err);
	strbuf_release(&root);
	if (rc == 0)
		r->path = xstrdup(path);
	return rc;
}

void session_root_close(struct session_root *r)
{
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	if (r->fd >= 0)
		close(r->fd);
	free(r->path);
	r->path = NULL;
	r->fd = r->lock_fd = -1;
}

/*
 * flock(fd, LOCK_EX), waiting for it; a caught signal ends the wait with
 * its exit status.  DIR/NAME is the file, for messages.  fd stays open.
 */
static int lock_wait(int fd, const char *dir, const char *name,
		     struct sbx_error **err)
{
	while (flock(fd, LOCK_EX) < 0) {
		int e = errno;

		if (e == EINTR && !sig_caught())
			continue;
		if (e == EINTR)
			return sbx_error_set(err, SBX_E_CANCELLED, 0,
					     "interrupted by signal %d while "
					     "waiting for '%s/%s'",
					     sig_caught(), dir, name);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot lock '%s/%s'", dir, name);
	}
	return 0;
}

int session_lock(struct session_root *r, struct sbx_error **err)
{
	struct stat st;
	int fd;

	if (r->lock_fd >= 0)
		die_bug("session_lock: the lock is already held");
	fd = openat(r->fd, LOCK_NAME,
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
			O_NONBLOCK,
		    0600);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/" LOCK_NAME "'", r->path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/" LOCK_NAME "' is not a regular file",
				     r->path);
	}
	if (lock_wait(fd, r->path, LOCK_NAME, err) < 0) {
		close(fd);
		return -1;
	}
	r->lock_fd = fd;
	return 0;
}

void session_unlock(struct session_root *r)
{
	if (r->lock_fd >= 0)
		close(r->lock_fd); /* releases the flock */
	r->lock_fd = -1;
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

	random_hex(tmp + sizeof(SECRET_NAME) + 1, 8);
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
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot sync '%s'",
				   r->path);
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
			return secret_from_fd(c, fd, what, err);
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
	return sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot open %s", what);
}

char *session_workspace_path(const struct session_root *r, const char *key)
{
	return xasprintf("%s/%s/" WORKSPACE_NAME, r->path, key);
}

/* ---- ROOT/KEY ---- */

/* Status 1, errnum ENOENT, and the message the CLI prints as it is. */
static int no_session(const char *key, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;

	sbx_error_set(err, SBX_E_NOT_FOUND, 0, "no session '%s'",
		      shown(&sb, key));
	if (err && *err)
		(*err)->errnum = ENOENT;
	strbuf_release(&sb);
	return -1;
}

/*
 * ROOT/KEY, opened: a directory of root's with no access for group or
 * others (the sandbox must not reach the record), never through a
 * symlink.  A missing one (or a key that is not a key) is no_session.
 */
static int open_keydir(struct session_root *r, const char *key,
		       struct sbx_error **err)
{
	struct stat st;
	int fd;

	if (!session_key_valid(key))
		return no_session(key, err);
	fd = openat(r->fd, key,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return no_session(key, err);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/%s' is not a directory (a symlink, "
				     "or a file); it was not made by sbxcat",
				     r->path, key);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/%s'", r->path, key);
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot stat '%s/%s'", r->path, key);
	}
	if (st.st_uid != 0 || (st.st_mode & 077)) {
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/%s' is owned by uid %u with mode "
				     "%04o; sbxcat makes it root's with mode "
				     "0700",
				     r->path, key, (unsigned)st.st_uid,
				     (unsigned)(st.st_mode & 07777));
	}
	return fd;
}

int session_workspace_open(struct session_root *r, const char *key,
			   struct sbx_error **err)
{
	int kfd = open_keydir(r, key, err), fd;

	if (kfd < 0)
		return -1;
	fd = openat(kfd, WORKSPACE_NAME,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;

		close(kfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot open the workspace of '%s' "
				     "(%s/%s/" WORKSPACE_NAME ")",
				     key, r->path, key);
	}
	close(kfd);
	return fd;
}

/* Make ROOT/KEY/workspace: made under a name of this process's, given to
 * the uid, then renamed, so a crash never leaves one that is root's. */
static int make_workspace(struct session_root *r, const char *key, int kfd,
			  unsigned long uid, bool *created,
			  struct sbx_error **err)
{
	char tmp[64];
	int fd, e;

	snprintf(tmp, sizeof(tmp), WORKSPACE_NAME ".tmp%ld", (long)getpid());
	(void)unlinkat(kfd, tmp, AT_REMOVEDIR); /* a dead namesake's */
	if (mkdirat(kfd, tmp, 0755) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot create '%s/%s/%s'", r->path, key,
				     tmp);
	fd = openat(kfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, (uid_t)uid, (gid_t)uid) < 0 ||
	    fchmod(fd, 0755) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		unlinkat(kfd, tmp, AT_REMOVEDIR);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot give '%s/%s/%s' to uid %lu",
				     r->path, key, tmp, uid);
	}
	close(fd);
	if (renameat2(kfd, tmp, kfd, WORKSPACE_NAME, RENAME_NOREPLACE) < 0) {
		e = errno;
		unlinkat(kfd, tmp, AT_REMOVEDIR);
		if (e == EEXIST)
			return 0; /* another sbxcat made it just now */
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e,
				     "cannot create '%s/%s/" WORKSPACE_NAME "'",
				     r->path, key);
	}
	if (fsync(kfd) < 0 && errno != EINVAL)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot sync '%s/%s'", r->path, key);
	*created = true;
	return 0;
}

int session_workspace_make(struct session_root *r, const char *key,
			   unsigned long uid, bool *created,
			   struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	int kfd, fd, rc = 0;

	*created = false;
	if (!session_key_valid(key)) {
		rc =
		    sbx_error_set(err, SBX_E_INVALID, 0,
				  "'%s' is not a session key", shown(&sb, key));
		strbuf_release(&sb);
		return rc;
	}
	if (uid > 2147483647ul)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "sandbox uid %lu is out of range", uid);
	if (mkdirat(r->fd, key, 0700) == 0) {
		if (fsync(r->fd) < 0 && errno != EINVAL)
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "cannot sync '%s'", r->path);
	} else if (errno != EEXIST) {
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot create '%s/%s'", r->path, key);
	}
	kfd = open_keydir(r, key, err);
	if (kfd < 0)
		return -1;
	fd = openat(kfd, WORKSPACE_NAME,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0)
		close(fd); /* there: the sandbox's, left as it is */
	else if (errno == ENOENT)
		rc = make_workspace(r, key, kfd, uid, created, err);
	else if (errno == ELOOP || errno == ENOTDIR)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "'%s/%s/" WORKSPACE_NAME "' is not a "
				   "directory (a symlink, or a file)",
				   r->path, key);
	else
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot open '%s/%s/" WORKSPACE_NAME "'",
				   r->path, key);
	close(kfd);
	return rc;
}

/* ---- records ---- */

void session_record_release(struct session_record *r)
{
	free(r->tenant);
	free(r->scope);
	free(r->runtime);
	free(r->image);
	free(r->container);
	memset(r, 0, sizeof(*r));
}

static bool is_container_id(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* What is wrong with a record (static or allocated into *msg), or NULL. */
static const char *record_problem(const struct session_record *rec, char **msg)
{
	*msg = NULL;
	if (!session_key_valid(rec->key))
		return "'key' is not a session key";
	if (!rec->tenant || session_check_tenant(rec->tenant))
		return "'tenant' is not a tenant";
	if (!rec->scope || session_check_scope(rec->scope))
		return "'scope' is not a scope";
	if (!rec->runtime || (*msg = catalog_check_alias(rec->runtime)))
		return "'runtime' is not a runtime alias";
	if (!rec->image || (*msg = catalog_check_image_ref(rec->image)))
		return "'image' is not an image reference";
	if (rec->container && !is_container_id(rec->container))
		return "'container' is not a container id";
	if (rec->created < 0 || rec->created > TIME_MAX ||
	    rec->last_activity < 0 || rec->last_activity > TIME_MAX)
		return "'created' or 'last_activity' is not a time";
	return NULL;
}

static int record_parse(const char *data, size_t len, const char *key,
			struct session_record *rec, const char **why)
{
	json_error_t jerr;
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	json_t *v = NULL;
	const char *name = NULL;
	char *msg = NULL;
	json_int_t version = 0;
	unsigned seen = 0;

	memset(rec, 0, sizeof(*rec));
	*why = "not JSON";
	if (!j)
		return -1;
	*why = "not an object of the members of a record";
	if (!json_is_object(j))
		goto fail;
	json_object_foreach(j, name, v)
	{
		char **str = NULL;
		long long *num = NULL;

		seen++; /* duplicates are refused: 9 members are all 9 */
		if (strcmp(name, "version") == 0 && json_is_integer(v))
			version = json_integer_value(v);
		else if (strcmp(name, "key") == 0 && json_is_string(v) &&
			 json_string_length(v) <= SESSION_KEY_MAX)
			strcpy(rec->key, json_string_value(v));
		else if (strcmp(name, "tenant") == 0)
			str = &rec->tenant;
		else if (strcmp(name, "scope") == 0)
			str = &rec->scope;
		else if (strcmp(name, "runtime") == 0)
			str = &rec->runtime;
		else if (strcmp(name, "image") == 0)
			str = &rec->image;
		else if (strcmp(name, "container") == 0 && !json_is_null(v))
			str = &rec->container;
		else if (strcmp(name, "created") == 0)
			num = &rec->created;
		else if (strcmp(name, "last_activity") == 0)
			num = &rec->last_activity;
		else if (strcmp(name, "container") != 0)
			goto fail;
		if (str) {
			/* A string with a NUL inside is no field of ours. */
			if (!json_is_string(v) ||
			    strlen(json_string_value(v)) !=
				json_string_length(v))
				goto fail;
			*str = xstrdup(json_string_value(v));
		}
		if (num) {
			if (!json_is_integer(v))
				goto fail;
			*num = json_integer_value(v);
		}
	}
	*why = "not of version 1";
	if (version != RECORD_VERSION)
		goto fail;
	*why = "missing a member";
	if (seen != 9)
		goto fail;
	*why = record_problem(rec, &msg);
	free(msg);
	if (*why)
		goto fail;
	*why = "for another key";
	if (strcmp(rec->key, key) != 0)
		goto fail;
	json_decref(j);
	return 0;
fail:
	json_decref(j);
	session_record_release(rec);
	return -1;
}

static int record_read_at(struct session_root *r, int kfd, const char *key,
			  struct session_record *rec, struct sbx_error **err)
{
	cleanup_free char *path = xasprintf("%s/%s/" RECORD_NAME, r->path, key);
	cleanup_free char *data = NULL;
	const char *why;
	size_t len;
	int fd =
	    openat(kfd, RECORD_NAME,
		   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	int rc;

	memset(rec, 0, sizeof(*rec));
	if (fd < 0 && errno == ENOENT)
		return no_session(key, err);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", path);
	rc = read_fd_limited(fd, path, RECORD_MAX, &data, &len, err);
	close(fd);
	if (rc < 0)
		return set_kind(err, SBX_E_UNAVAILABLE);
	if (record_parse(data, len, key, rec, &why) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s' is not a session record: %s", path,
				     why);
	return 0;
}

int session_record_read(struct session_root *r, const char *key,
			struct session_record *rec, struct sbx_error **err)
{
	int kfd = open_keydir(r, key, err);
	int rc;

	memset(rec, 0, sizeof(*rec));
	if (kfd < 0)
		return -1;
	rc = record_read_at(r, kfd, key, rec, err);
	close(kfd);
	return rc;
}

static int record_write_at(struct session_root *r, int kfd,
			   const struct session_record *rec,
			   struct sbx_error **err)
{
	cleanup_free char *dir = xasprintf("%s/%s", r->path, rec->key);
	cleanup_free char *msg = NULL;
	const char *why = record_problem(rec, &msg);
	struct strbuf sb = STRBUF_INIT;
	json_t *j;
	char *text;
	int rc;

	if (why)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "cannot record session '%s': %s%s%s",
				     rec->key, why, msg ? ": " : "",
				     msg ? msg : "");
	j = xjson_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:o, s:I, s:I}",
		       "version", RECORD_VERSION, "key", rec->key, "tenant",
		       rec->tenant, "scope", rec->scope, "runtime",
		       rec->runtime, "image", rec->image, "container",
		       rec->container ? xjson_string(rec->container)
				      : json_null(),
		       "created", (json_int_t)rec->created, "last_activity",
		       (json_int_t)rec->last_activity);
	text = json_dumps(j, JSON_SORT_KEYS);
	json_decref(j);
	if (!text)
		die_oom();
	strbuf_addstr(&sb, text);
	strbuf_addch(&sb, '\n');
	free(text);
	rc = write_file_atomic_at(kfd, dir, RECORD_NAME, sb.buf, sb.len, 0600,
				  err);
	strbuf_release(&sb);
	return rc;
}

int session_keydir_lock(struct session_root *r, const char *key,
			struct sbx_error **err)
{
	int kfd = open_keydir(r, key, err);

	if (kfd < 0)
		return -1;
	if (lock_wait(kfd, r->path, key, err) < 0) {
		close(kfd);
		return -1;
	}
	return kfd;
}

/*
 * ROOT/KEY/exec.lock: held from an exec's start to its claim (procs.h),
 * so that the processes in the container's cgroup are that exec's alone.
 * A lock of its own, not ROOT/KEY's: stamping the record must not wait
 * for another exec's start.
 */
/* ROOT/KEY/NAME open for a lock, made root's, 0600, when missing. */
static int lock_file_open(struct session_root *r, const char *key,
			  const char *name, struct sbx_error **err)
{
	int kfd = open_keydir(r, key, err), fd;
	struct stat st;

	if (kfd < 0)
		return -1;
	fd = openat(kfd, name,
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	close(kfd);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/%s/%s'", r->path, key,
				     name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/%s/%s' is not a regular file of "
				     "root's",
				     r->path, key, name);
	}
	return fd;
}

int session_exec_lock(struct session_root *r, const char *key,
		      struct sbx_error **err)
{
	int fd = lock_file_open(r, key, EXEC_LOCK_NAME, err);

	if (fd >= 0 && lock_wait(fd, r->path, key, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int session_watch_lock_open(struct session_root *r, const char *key,
			    struct sbx_error **err)
{
	return lock_file_open(r, key, WATCH_LOCK_NAME, err);
}

void session_keydir_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the flock */
}

int session_record_write(struct session_root *r,
			 const struct session_record *rec,
			 struct sbx_error **err)
{
	int kfd = open_keydir(r, rec->key, err);
	int rc;

	if (kfd < 0)
		return -1;
	rc = lock_wait(kfd, r->path, rec->key, err);
	if (rc == 0)
		rc = record_write_at(r, kfd, rec, err);
	close(kfd);
	return rc;
}

int session_record_touch(struct session_root *r, const char *key,
			 struct sbx_error **err)
{
	struct session_record rec;
	int kfd = open_keydir(r, key, err);
	int rc;

	if (kfd < 0)
		return -1;
	rc = lock_wait(kfd, r->path, key, err);
	if (rc == 0)
		rc = record_read_at(r, kfd, key, &rec, err);
	if (rc == 0) {
		long long now = (long long)time(NULL);

		/* Stamped this second already: nothing to write (many fs
		 * calls a second would each cost two fsyncs). */
		if (rec.last_activity != now) {
			rec.last_activity = now;
			rc = record_write_at(r, kfd, &rec, err);
		}
		session_record_release(&rec);
	}
	close(kfd);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int session_keys(struct session_root *r, char ***keys, size_t *n,
		 struct sbx_error **err)
{
	DIR *d =
	    tree_dir_of(openat(r->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	struct dirent *de;
	size_t alloc = 0;

	*keys = NULL;
	*n = 0;
	if (!d)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read '%s'", r->path);
	for (errno = 0; (de = readdir(d)); errno = 0) {
		struct stat st;

		if (!session_key_valid(de->d_name) ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (de->d_type == DT_UNKNOWN &&
		    (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			 0 ||
		     !S_ISDIR(st.st_mode)))
			continue;
		ALLOC_GROW(*keys, *n + 1, alloc);
		(*keys)[(*n)++] = xstrdup(de->d_name);
	}
	if (errno) {
		int e = errno;
		closedir(d);
		strv_free(*keys, *n);
		*keys = NULL;
		*n = 0;
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e, "cannot read '%s'",
				     r->path);
	}
	closedir(d);
	if (*n)
		qsort(*keys, *n, sizeof(**keys), cmp_str);
	return 0;
}

/* ---- the trash ---- */

/* ROOT/.sbxcat-trash, made when missing: root's, 0700, not a symlink. */
static int trash_open(struct session_root *r, struct sbx_error **err)
{
	struct stat st;
	int fd;

	if (mkdirat(r->fd, TRASH_NAME, 0700) < 0 && errno != EEXIST)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot make '%s/" TRASH_NAME "'",
				     r->path);
	fd = openat(r->fd, TRASH_NAME,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s/" TRASH_NAME "'",
				     r->path);
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 077)) {
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "'%s/" TRASH_NAME "' is not a directory "
				     "of root's with mode 0700; it was not "
				     "made by sbxcat",
				     r->path);
	}
	return fd;
}

void session_trash_init(struct session_trash *t)
{
	t->fd = t->dir_fd = -1;
	t->name[0] = '\0';
}

void session_trash_release(struct session_trash *t)
{
	if (t->fd >= 0)
		close(t->fd); /* releases the flock */
	if (t->dir_fd >= 0)
		close(t->dir_fd);
	session_trash_init(t);
}

int session_trash_key(struct session_root *r, const char *key,
		      struct session_trash *t, struct sbx_error **err)
{
	struct session_trash mine;
	int kfd, tfd;

	if (!t)
		t = &mine;
	session_trash_init(t);
	kfd = open_keydir(r, key, err);
	if (kfd < 0)
		return -1;
	/* Held until the entry is emptied: session_trash_finish leaves an
	 * entry alone while someone holds it.  Without t the caller holds
	 * it already (a second flock of ours would wait for it for ever). */
	if (t != &mine && lock_wait(kfd, r->path, key, err) < 0) {
		close(kfd);
		return -1;
	}
	tfd = trash_open(r, err);
	if (tfd < 0) {
		close(kfd);
		return -1;
	}
	snprintf(t->name, sizeof(t->name), "%s.", key);
	random_hex(t->name + strlen(t->name), 8);
	t->fd = kfd;
	t->dir_fd = tfd;
	if (renameat(r->fd, key, tfd, t->name) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot move '%s/%s' into '%s/" TRASH_NAME "'",
			      r->path, key, r->path);
		session_trash_release(t);
		return -1;
	}
	if (fsync(r->fd) < 0 && errno != EINVAL) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "cannot sync '%s'",
			      r->path);
		if (t == &mine)
			session_trash_release(t);
		return -1;
	}
	if (t == &mine)
		session_trash_release(t);
	return 0;
}

/* Empty the entry name of the trash (open on tfd) and remove it; fd is
 * the entry itself, consumed.  An entry already gone is done. */
static int trash_empty_at(struct session_root *r, int tfd, const char *name,
			  int fd, struct sbx_error **err)
{
	cleanup_free char *top =
	    xasprintf("%s/" TRASH_NAME "/%s", r->path, name);

	if (tree_empty(fd, top, SBX_E_UNAVAILABLE, NULL, err) < 0)
		return -1;
	if (unlinkat(tfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot remove '%s'", top);
	return 0;
}

int session_trash_empty(struct session_root *r, struct session_trash *t,
			struct sbx_error **err)
{
	int fd = t->fd >= 0 ? fcntl(t->fd, F_DUPFD_CLOEXEC, 0) : -1;
	int rc;

	if (t->fd >= 0 && fd < 0)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot open '%s/" TRASH_NAME "/%s'",
				   r->path, t->name);
	else
		rc = trash_empty_at(r, t->dir_fd, t->name, fd, err);
	session_trash_release(t);
	return rc;
}

int session_trash_finish(struct session_root *r, unsigned *finished,
			 struct sbx_error **err)
{
	DIR *d;
	struct dirent *de;
	int tfd, rc = 0;

	*finished = 0;
	tfd =
	    openat(r->fd, TRASH_NAME,
		   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (tfd < 0 && errno == ENOENT)
		return 0; /* nothing was ever purged */
	if (tfd >= 0)
		close(tfd);
	tfd = trash_open(r, err); /* checked as when it is made */
	if (tfd < 0)
		return -1;
	d = tree_dir_of(fcntl(tfd, F_DUPFD_CLOEXEC, 0));
	if (!d) {
		close(tfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot read '%s/" TRASH_NAME "'",
				     r->path);
	}
	for (errno = 0; rc == 0 && (de = readdir(d)); errno = 0) {
		int fd;

		if (tree_dot_or_dotdot(de->d_name))
			continue;
		fd = openat(tfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
				O_NOCTTY);
		if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
			/* Only directories are moved here; a file is not
			 * sbxcat's, and a name of the trash is no one's. */
			if (unlinkat(tfd, de->d_name, 0) == 0)
				(*finished)++;
			continue;
		}
		if (fd < 0)
			continue; /* gone meanwhile */
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd); /* being emptied by whoever moved it */
			continue;
		}
		rc = trash_empty_at(r, tfd, de->d_name, fd, err);
		if (rc == 0)
			(*finished)++;
	}
	if (rc == 0 && errno)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				   "cannot read '%s/" TRASH_NAME "'", r->path);
	closedir(d);
	close(tfd);
	return rc;
}

int session_purge(struct session_root *r, const char *key,
		  struct sbx_error **err)
{
	struct session_trash t;

	if (session_trash_key(r, key, &t, err) < 0)
		return -1;
	return session_trash_empty(r, &t, err);
}

/* A file with more than one link: its blocks are counted once, at the end. */
struct linked {
	dev_t dev;
	ino_t ino;
	blkcnt_t blocks;
};

static int cmp_linked(const void *a, const void *b)
{
	const struct linked *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/* Blocks of the tree below the walk's top, in 512-byte units. */
static int size_tree(struct tree_walk *w, unsigned long long *blocks,
		     unsigned long long *files, struct sbx_error **err)
{
	struct linked *links = NULL;
	size_t nlinks = 0, alloc = 0;
	struct dirent *de;
	int rc = 0;

	while (rc == 0) {
		bool down = false;

		if (sig_caught()) {
			rc = sbx_error_set(err, SBX_E_CANCELLED, 0,
					   "interrupted by signal %d",
					   sig_caught());
			break;
		}
		for (errno = 0; (de = readdir(w->d)); errno = 0) {
			struct stat st;

			if (tree_dot_or_dotdot(de->d_name))
				continue;
			if (fstatat(dirfd(w->d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* gone since it was listed */
			(*files)++;
			if (S_ISDIR(st.st_mode)) {
				struct sbx_error *skip = NULL;

				/* A mount point, or a directory the sandbox
				 * swapped meanwhile: counted, not entered (a
				 * failure here would let it hide its size). */
				if (st.st_dev != w->dev ||
				    tree_walk_down(w, de->d_name, &st, &skip) <
					0) {
					sbx_error_free(&skip);
					continue;
				}
				*blocks += (unsigned long long)st.st_blocks;
				down = true;
				break;
			}
			if (st.st_nlink > 1) {
				ALLOC_GROW(links, nlinks + 1, alloc);
				links[nlinks].dev = st.st_dev;
				links[nlinks].ino = st.st_ino;
				links[nlinks++].blocks = st.st_blocks;
			} else {
				*blocks += (unsigned long long)st.st_blocks;
			}
		}
		if (rc < 0 || down)
			continue;
		if (errno) {
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot read a directory in '%s'",
					   w->top);
			break;
		}
		if (w->depth == 0)
			break;
		rc = tree_walk_up(w, true, err);
	}
	if (nlinks)
		qsort(links, nlinks, sizeof(*links), cmp_linked);
	for (size_t i = 0; i < nlinks; i++)
		if (i == 0 || cmp_linked(&links[i], &links[i - 1]) != 0)
			*blocks += (unsigned long long)links[i].blocks;
	free(links);
	return rc;
}

int session_workspace_size(struct session_root *r, const char *key,
			   unsigned long long *bytes, unsigned long long *files,
			   struct sbx_error **err)
{
	cleanup_free char *top = NULL;
	unsigned long long blocks = 0;
	struct tree_walk w;
	struct stat st;
	int kfd = open_keydir(r, key, err);
	int fd, rc;

	*bytes = *files = 0;
	if (kfd < 0)
		return -1;
	top = xasprintf("%s/%s/" WORKSPACE_NAME, r->path, key);
	fd = openat(kfd, WORKSPACE_NAME,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	close(kfd);
	if (fd < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot open '%s'", top);
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e, "cannot stat '%s'",
				     top);
	}
	blocks = (unsigned long long)st.st_blocks;
	rc = tree_walk_start(&w, fd, top, SBX_E_UNAVAILABLE, err);
	if (rc == 0)
		rc = size_tree(&w, &blocks, files, err);
	tree_walk_end(&w);
	if (rc == 0)
		*bytes = blocks * 512;
	return rc;
}

int session_find(struct session_root *root, const char *key,
		 const char *tenant, struct session_record *rec,
		 struct sbx_error **err)
{
	memset(rec, 0, sizeof(*rec));
	if (session_key_valid(key) &&
	    session_record_read(root, key, rec, err) < 0 &&
	    (*err)->errnum != ENOENT)
		return -1; /* a record that cannot be read: not "no session" */
	if (!session_key_valid(key) || *err ||
	    (tenant && strcmp(rec->tenant, tenant) != 0)) {
		struct strbuf sb = STRBUF_INIT;

		/* Another tenant's session reads exactly like none. */
		sbx_error_free(err);
		session_record_release(rec);
		text_add_escaped(&sb, key, strlen(key));
		sbx_error_set(err, SBX_E_NOT_FOUND, 0, "no session '%s'",
			      strbuf_str(&sb));
		(*err)->errnum = ENOENT;
		sbx_error_reason(*err, "no such session");
		strbuf_release(&sb);
		return -1;
	}
	return 0;
}

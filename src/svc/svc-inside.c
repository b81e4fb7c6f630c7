/*
 * svc-inside.c - file operations served from inside a session's
 * container (svc-inside.h, docs/e2b.md, "Where files are"): each one a fixed
 * /bin/sh script run by exec as the session's user, its paths as
 * arguments, its answer parsed as hostile.
 *
 * Why exec and not the engine's archive API: the daemon reads and writes
 * an archive as root, so /etc/shadow would be given to a sandbox whose
 * user cannot read it, and a write would land as root's; a command as
 * the container's User is the sandbox's own view, its permissions,
 * its mounts (/tmp's tmpfs, /proc), nothing more.
 *
 * The scripts use only what busybox and coreutils both have, in the
 * forms both take: test, printf (a shell builtin in ash and dash), find
 * -mindepth/-maxdepth/-print0, xargs -0, stat -c, head -c, readlink,
 * mktemp, chmod, cat, mv -f, rm -rf, mkdir -p.  They say how they ended
 * by their exit status (the SX_* below), never by text another program
 * printed, so a container's own "stat" cannot make one path look like
 * another's error.
 *
 * An entry's answer comes in two streams: on stdout, for each path,
 * "PATH\0TARGET\0" (TARGET empty unless a symlink's, from readlink), as
 * find gave it; on stderr, stat -c's "MODEHEX SIZE UID GID MTIME USER
 * GROUP PATH\n" of the same paths in the same order.  A path may hold a
 * newline, so a record is taken only when its PATH is, byte for byte,
 * the one stdout says comes next (or one of the few after it: a path
 * that went between the two programs has no record); a record that
 * matches none is skipped, never given to another path.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/text.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "session/session.h"
#include "svc/svc-inside.h"
#include "svc/svc-int.h"
#include "svc/svc-wire.h"

/* How a script ended (its exit status). */
enum {
	SX_OK = 0,
	SX_EXISTED = 3, /* mkdir: a directory already */
	SX_CREATED = 4, /* write: a new file */
	SX_NOENT = 10,
	SX_ACCES = 11,
	SX_ISDIR = 12,
	SX_NOTDIR = 13,
	SX_EXIST = 14,
	SX_TOOBIG = 15, /* read: the size on stderr */
	SX_NOTREG = 16,
};

/* Each operation's deadline: a stat is milliseconds, a listing of the
 * bound's entries a few seconds on a slow disk. */
#define INSIDE_TIMEOUT_MS 60000ULL
/* A listing's paths at most (its stat lines: twice that): paths are a
 * few tens of bytes each, so SVC_INSIDE_LIST_MAX of them fit many times
 * over, and a call holds 12 MiB at worst; past it the listing says
 * "output". */
#define LIST_BYTES (4ULL << 20)
/* What a script that answers one entry may print. */
#define ONE_BYTES (64ULL << 10)
/* How many paths ahead a record may be matched (the paths between had
 * none: they went while listed). */
#define LOOK_AHEAD 16

/* The scripts are shell text, laid out as such. */
/* clang-format off */
/*
 * What every script starts with.  why PATH: PATH does not exist as test
 * sees it; the nearest ancestor that does says why (not a directory, not
 * searchable: permission, else not found).  E: the entry emitter (run by
 * sh -c, so xargs can run it too), emit: E on its arguments.
 */
#define PRELUDE                                                                \
	"why() {\n"                                                            \
	"  a=$1\n"                                                             \
	"  while :; do\n"                                                      \
	"    a=${a%/*}; [ -n \"$a\" ] || a=/\n"                                \
	"    if [ -e \"$a\" ]; then\n"                                         \
	"      [ -d \"$a\" ] || exit 13\n"                                     \
	"      [ -x \"$a\" ] || exit 11\n"                                     \
	"      exit 10\n"                                                      \
	"    fi\n"                                                             \
	"    [ \"$a\" != / ] || exit 10\n"                                     \
	"  done\n"                                                             \
	"}\n"                                                                  \
	"E='[ $# -gt 0 ] || exit 0\n"                                          \
	"for f; do\n"                                                          \
	"  if [ -L \"$f\" ]; then\n"                                           \
	"    printf \"%s\\0%s\\0\" \"$f\" \"$(readlink -- \"$f\")\"\n"         \
	"  else\n"                                                             \
	"    printf \"%s\\0\\0\" \"$f\"\n"                                     \
	"  fi\n"                                                               \
	"done\n"                                                               \
	"stat -c \"%f %s %u %g %Y %U %G %n\" -- \"$@\" 3>&2 2>/dev/null >&3'\n" \
	"emit() { sh -c \"$E\" sh \"$@\"; }\n"

static const char script_stat[] = PRELUDE
    "p=$1\n"
    "[ -e \"$p\" ] || [ -L \"$p\" ] || why \"$p\"\n"
    "emit \"$p\"\n";

/* $1 the directory, $2 the depth, $3 the bytes of paths at most. */
static const char script_ls[] = PRELUDE
    "p=$1\n"
    "[ -e \"$p\" ] || why \"$p\"\n"
    "[ -d \"$p\" ] || exit 13\n"
    "[ -r \"$p\" ] && [ -x \"$p\" ] || exit 11\n"
    "find \"$p\" -mindepth 1 -maxdepth \"$2\" -print0 2>/dev/null |\n"
    "  head -c \"$3\" | xargs -0 sh -c \"$E\" sh\n"
    "exit 0\n";

/* $1 the file, $2 the read limit: its size checked first, and never more
 * than one byte past the limit read (a file that grows, a /proc file
 * whose size says 0). */
static const char script_read[] = PRELUDE
    "p=$1\n"
    "[ -e \"$p\" ] || why \"$p\"\n"
    "[ -d \"$p\" ] && exit 12\n"
    "[ -f \"$p\" ] || exit 16\n"
    "[ -r \"$p\" ] || exit 11\n"
    "s=$(stat -L -c %s -- \"$p\" 2>/dev/null) || exit 20\n"
    "if [ \"$s\" -gt \"$2\" ]; then printf %s \"$s\" >&2; exit 15; fi\n"
    "exec head -c \"$(($2 + 1))\" -- \"$p\"\n";

/* $1 the file, its bytes on stdin: a temporary file beside it renamed
 * over it (its mode kept), or, where the directory is not writable but
 * the file is (or the file is a symlink, written through), in place. */
static const char script_write[] = PRELUDE
    "p=$1\n"
    "d=${p%/*}; [ -n \"$d\" ] || d=/\n"
    "[ -e \"$d\" ] || why \"$p\"\n"
    "[ -d \"$d\" ] || exit 13\n"
    "[ -d \"$p\" ] && exit 12\n"
    "c=4\n"
    "if [ -e \"$p\" ] || [ -L \"$p\" ]; then c=0; [ -w \"$p\" ] || exit 11; "
    "fi\n"
    "t=\n"
    "if [ ! -L \"$p\" ] && [ -w \"$d\" ] && [ -x \"$d\" ]; then\n"
    "  t=$(mktemp \"$d/.sbxcat-XXXXXXXX\" 2>/dev/null) || t=\n"
    "fi\n"
    "if [ -n \"$t\" ]; then\n"
    "  if [ $c = 0 ]; then m=$(stat -c %a -- \"$p\" 2>/dev/null) || m=644\n"
    "  else m=644; fi\n"
    "  chmod \"$m\" \"$t\" 2>/dev/null\n"
    "  if cat >\"$t\" && mv -f -- \"$t\" \"$p\" 2>/dev/null; then :; else\n"
    "    rm -f -- \"$t\"; exit 20\n"
    "  fi\n"
    "else\n"
    "  [ $c = 0 ] || exit 11\n"
    "  cat >\"$p\" 2>/dev/null || exit 20\n"
    "fi\n"
    "emit \"$p\"\n"
    "exit $c\n";

static const char script_mkdir[] = PRELUDE
    "p=$1\n"
    "if [ -d \"$p\" ]; then emit \"$p\"; exit 3; fi\n"
    "a=$p\n"
    "while [ ! -e \"$a\" ] && [ ! -L \"$a\" ]; do\n"
    "  a=${a%/*}; [ -n \"$a\" ] || a=/\n"
    "done\n"
    "[ \"$a\" = \"$p\" ] && exit 14\n"
    "[ -d \"$a\" ] || exit 13\n"
    "[ -w \"$a\" ] && [ -x \"$a\" ] || exit 11\n"
    "mkdir -p -- \"$p\" 2>/dev/null || exit 20\n"
    "emit \"$p\"\n";

static const char script_rm[] = PRELUDE
    "p=$1\n"
    "[ -e \"$p\" ] || [ -L \"$p\" ] || why \"$p\"\n"
    "d=${p%/*}; [ -n \"$d\" ] || d=/\n"
    "[ -w \"$d\" ] && [ -x \"$d\" ] || exit 11\n"
    "rm -rf -- \"$p\" 2>/dev/null\n"
    "if [ -e \"$p\" ] || [ -L \"$p\" ]; then exit 11; fi\n"
    "exit 0\n";

static const char script_rename[] = PRELUDE
    "a=$1 b=$2\n"
    "[ -e \"$a\" ] || [ -L \"$a\" ] || why \"$a\"\n"
    "if [ -d \"$b\" ] && [ ! -L \"$b\" ]; then exit 14; fi\n"
    "db=${b%/*}; [ -n \"$db\" ] || db=/\n"
    "[ -e \"$db\" ] || why \"$b\"\n"
    "[ -d \"$db\" ] || exit 13\n"
    "da=${a%/*}; [ -n \"$da\" ] || da=/\n"
    "[ -w \"$da\" ] && [ -x \"$da\" ] && [ -w \"$db\" ] && [ -x \"$db\" ] || "
    "exit 11\n"
    "mv -f -- \"$a\" \"$b\" 2>/dev/null || exit 20\n"
    "emit \"$b\"\n";
/* clang-format on */

/* ---- paths ---- */

int svc_inside_path(const char *path, char **norm, struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT, shown = STRBUF_INIT;
	const char *why = NULL, *p;
	size_t len;
	uint32_t cp;

	*norm = NULL;
	if (!path || !*path)
		return sbx_error_set(err, SBX_E_INVALID, 0,
				     "a path is required");
	len = strlen(path);
	if (path[0] != '/')
		why = "must be absolute";
	else if (len > SVC_INSIDE_PATH_MAX)
		why = "is longer than 4096 bytes";
	else if (utf8_first_invalid(path, len) >= 0)
		why = "is not valid UTF-8";
	else if (text_find_control(path, len, &cp) != 0)
		why = "holds a control character";
	if (why) {
		text_add_escaped(&shown, path, len > 200 ? 200 : len);
		sbx_error_set(err, SBX_E_INVALID, 0, "path '%s%s' %s",
			      strbuf_str(&shown), len > 200 ? "..." : "", why);
		strbuf_release(&shown);
		return -1;
	}
	/* Lexically: "." goes, ".." takes the last part off (never above
	 * "/"), empty parts go.  The container resolves symlinks itself,
	 * as the sandbox's own programs do. */
	for (p = path; *p;) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.')) {
			p += n;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			char *slash = sb.len ? strrchr(sb.buf, '/') : NULL;

			strbuf_setlen(&sb,
				      slash ? (size_t)(slash - sb.buf) : 0);
		} else {
			strbuf_addch(&sb, '/');
			strbuf_add(&sb, p, n);
		}
		p += n;
	}
	if (!sb.len)
		strbuf_addch(&sb, '/');
	*norm = strbuf_detach(&sb, NULL);
	return 0;
}

/* ---- entries ---- */

void svc_inside_entry_release(struct svc_inside_entry *e)
{
	free(e->path);
	free(e->name);
	free(e->owner);
	free(e->group);
	free(e->target);
	memset(e, 0, sizeof(*e));
}

static void entries_free(struct svc_inside_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		svc_inside_entry_release(&v[i]);
	free(v);
}

json_t *svc_inside_entry_json(const struct svc_inside_entry *e)
{
	return xjson_pack(
	    "{s:o, s:o, s:s, s:I, s:i, s:I, s:I, s:o, s:o, s:I, s:o}", "path",
	    xjson_string(e->path), "name", xjson_string(e->name), "type",
	    e->type, "size", (json_int_t)e->size, "mode", (int)e->mode, "uid",
	    (json_int_t)e->uid, "gid", (json_int_t)e->gid, "owner",
	    e->owner ? xjson_string(e->owner) : json_null(), "group",
	    e->group ? xjson_string(e->group) : json_null(), "mtime",
	    (json_int_t)e->mtime, "target",
	    e->target ? xjson_string(e->target) : json_null());
}

static const char *type_of(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "char-device";
	case S_IFBLK:
		return "block-device";
	default:
		return "other";
	}
}

/* The next token of [*p, end) up to a space: its bounds, *p past the
 * space.  False when there is no space before end or a newline first. */
static bool token(const char **p, const char *end, const char **t, size_t *n)
{
	const char *s = *p, *q = s;

	while (q < end && *q != ' ' && *q != '\n')
		q++;
	if (q == end || *q != ' ' || q == s)
		return false;
	*t = s;
	*n = (size_t)(q - s);
	*p = q + 1;
	return true;
}

/* Digits (base 10 or 16) of exactly [t, t+n) into *v, at most max. */
static bool number(const char *t, size_t n, int base, unsigned long long max,
		   unsigned long long *v)
{
	unsigned long long x = 0;

	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		int d;

		if (t[i] >= '0' && t[i] <= '9')
			d = t[i] - '0';
		else if (base == 16 && t[i] >= 'a' && t[i] <= 'f')
			d = t[i] - 'a' + 10;
		else
			return false;
		if (x >
		    (max - (unsigned long long)d) / (unsigned long long)base)
			return false;
		x = x * (unsigned long long)base + (unsigned long long)d;
	}
	*v = x;
	return true;
}

/* A user or group name as the container printed it: text without a
 * control character, else none ("UNKNOWN" is stat's none). */
static char *name_of(const char *t, size_t n)
{
	uint32_t cp;

	if (n == 7 && memcmp(t, "UNKNOWN", 7) == 0)
		return NULL;
	if (n > 256 || utf8_first_invalid(t, n) >= 0 ||
	    text_find_control(t, n, &cp) != 0)
		return NULL;
	return xstrndup(t, n);
}

/*
 * The record at *p of [*p, end) if it is path's: its fields into e and
 * *p past its newline.  False (nothing changed) when it is not.
 */
static bool record_of(const char **p, const char *end, const char *path,
		      size_t plen, struct svc_inside_entry *e)
{
	const char *q = *p, *t[7];
	size_t n[7];
	unsigned long long mode, size, uid, gid, mt;
	bool neg;

	for (int i = 0; i < 7; i++)
		if (!token(&q, end, &t[i], &n[i]))
			return false;
	if ((size_t)(end - q) < plen + 1 || memcmp(q, path, plen) != 0 ||
	    q[plen] != '\n')
		return false;
	neg = n[4] > 1 && t[4][0] == '-';
	if (!number(t[0], n[0], 16, 0xffffffffULL, &mode) ||
	    !number(t[1], n[1], 10, (unsigned long long)INT64_MAX, &size) ||
	    !number(t[2], n[2], 10, 0xffffffffULL, &uid) ||
	    !number(t[3], n[3], 10, 0xffffffffULL, &gid) ||
	    !number(t[4] + neg, n[4] - neg, 10, (unsigned long long)INT64_MAX,
		    &mt))
		return false;
	e->type = type_of((unsigned)mode);
	e->mode = (unsigned)mode & 07777;
	e->size = size;
	e->uid = (unsigned long)uid;
	e->gid = (unsigned long)gid;
	e->mtime = neg ? -(long long)mt : (long long)mt;
	e->owner = name_of(t[5], n[5]);
	e->group = name_of(t[6], n[6]);
	*p = q + plen + 1;
	return true;
}

/* One "PATH\0TARGET\0" of the names' stream. */
struct named {
	const char *path, *target;
	size_t plen, tlen;
};

/*
 * The entries of the two streams (the file's header says how), at most
 * max into *v; *more when there were more whole names than that,
 * *skipped the names left out for not being text.
 */
static void entries_parse(const struct strbuf *names, const struct strbuf *recs,
			  size_t max, struct svc_inside_entry **v, size_t *n,
			  bool *more, size_t *skipped)
{
	struct named *nv = NULL;
	size_t nn = 0, alloc = 0, valloc = 0;
	const char *p = names->buf, *end = names->buf + names->len;
	const char *r = recs->buf, *rend = recs->buf + recs->len;

	*v = NULL;
	*n = 0;
	*more = false;
	*skipped = 0;
	while (p < end) {
		const char *z1 = memchr(p, '\0', (size_t)(end - p)), *z2;

		if (!z1)
			break;
		z2 = memchr(z1 + 1, '\0', (size_t)(end - z1 - 1));
		if (!z2)
			break; /* cut: the last one is not whole */
		ALLOC_GROW(nv, nn + 1, alloc);
		nv[nn++] = (struct named){p, z1 + 1, (size_t)(z1 - p),
					  (size_t)(z2 - z1 - 1)};
		p = z2 + 1;
	}
	for (size_t k = 0; k < nn && r < rend;) {
		struct svc_inside_entry e = {0};
		bool later = false;
		const char *slash;

		if (!record_of(&r, rend, nv[k].path, nv[k].plen, &e)) {
			/* Not k's: a later path's (k had none), or nobody's. */
			for (size_t j = k + 1; j < nn && j <= k + LOOK_AHEAD;
			     j++) {
				const char *q = r;
				struct svc_inside_entry x = {0};

				later = record_of(&q, rend, nv[j].path,
						  nv[j].plen, &x);
				svc_inside_entry_release(&x);
				if (later)
					break;
			}
			if (later) {
				k++;
			} else {
				const char *nl =
				    memchr(r, '\n', (size_t)(rend - r));
				r = nl ? nl + 1 : rend;
			}
			continue;
		}
		if (utf8_first_invalid(nv[k].path, nv[k].plen) >= 0 ||
		    memchr(nv[k].path, '\0', nv[k].plen)) {
			(*skipped)++;
			svc_inside_entry_release(&e);
			k++;
			continue;
		}
		if (*n == max) {
			*more = true;
			svc_inside_entry_release(&e);
			break;
		}
		e.path = xstrndup(nv[k].path, nv[k].plen);
		slash = strrchr(e.path, '/');
		e.name = xstrdup(slash && slash[1] ? slash + 1 : e.path);
		if (nv[k].tlen &&
		    utf8_first_invalid(nv[k].target, nv[k].tlen) < 0)
			e.target = xstrndup(nv[k].target, nv[k].tlen);
		ALLOC_GROW(*v, *n + 1, valloc);
		(*v)[(*n)++] = e;
		k++;
	}
	free(nv);
}

/* ---- the operation's frame: the session, the row ---- */

struct inside_op {
	struct svc_op op;   /* the session, the recorder, the row's counts */
	const char *target; /* the path as given (the row cleans it) */
	char *norm, *norm2; /* the paths checked */
};

static int op_begin(struct inside_op *o, const struct svc *s,
		    const struct svc_call *call, const char *key,
		    enum audit_op op, const char *target, const char *path,
		    const char *path2, struct sbx_error **err)
{
	int rc;

	memset(o, 0, sizeof(*o));
	o->target = target ? target : "";
	rc = svc_op_begin(&o->op, s, call, key, op, err);
	o->op.detail = "inside the container";
	if (rc < 0 || svc_inside_path(path, &o->norm, err) < 0 ||
	    (path2 && svc_inside_path(path2, &o->norm2, err) < 0))
		return -1;
	return svc_op_ready(&o->op, err);
}

static int op_end(struct inside_op *o, struct sbx_error **err)
{
	int rc = svc_op_end(&o->op, o->target, err); /* target may be norm */

	free(o->norm);
	free(o->norm2);
	return rc;
}

/* ---- running a script ---- */

/* One stream kept up to cap bytes (the rest counted: cut). */
struct kept {
	struct strbuf sb;
	size_t cap;
	bool cut;
};

static int keep(void *arg, const void *buf, size_t len, struct sbx_error **err)
{
	struct kept *k = arg;
	size_t room = k->cap > k->sb.len ? k->cap - k->sb.len : 0;

	(void)err;
	if (len > room)
		k->cut = true;
	strbuf_add(&k->sb, buf, len < room ? len : room);
	return 0;
}

struct ran {
	struct kept out, err;
	int code; /* the script's exit status */
};

static void ran_release(struct ran *r)
{
	strbuf_release(&r->out.sb);
	strbuf_release(&r->err.sb);
}

/*
 * script with args as $1..., stdin in_fd (or -1), as the session's user;
 * stdout and stderr kept up to their caps.  0 with r->code when it ran to
 * its exit; -1 with *err when it could not run or did not end (deadline,
 * cancel: SBX_E_TIMEOUT, SBX_E_CANCELLED).
 */
static int run_script(struct inside_op *o, const char *script,
		      const char *const *args, size_t nargs, int in_fd,
		      size_t cap_out, size_t cap_err, struct ran *r,
		      struct sbx_error **err)
{
	char *argv[8];
	struct svc_exec_req req = {0};
	struct svc_exec_res res;
	int argc = 0, rc;

	memset(r, 0, sizeof(*r));
	strbuf_init(&r->out.sb);
	strbuf_init(&r->err.sb);
	r->out.cap = cap_out;
	r->err.cap = cap_err;
	argv[argc++] = (char *)"/bin/sh";
	argv[argc++] = (char *)"-c";
	argv[argc++] = (char *)script;
	argv[argc++] = (char *)"sh";
	for (size_t i = 0; i < nargs && argc < 8; i++)
		argv[argc++] = (char *)args[i];
	req.key = o->op.rec.key;
	req.argv = argv;
	req.argc = argc;
	req.in_fd = in_fd;
	req.out = (struct svc_sink){.fd = -1, .write = keep, .arg = &r->out};
	req.err = (struct svc_sink){.fd = -1, .write = keep, .arg = &r->err};
	req.timeout_ms = INSIDE_TIMEOUT_MS;
	req.max_output = (cap_out > cap_err ? cap_out : cap_err) + 1;
	rc = svc_exec_run(o->op.s, o->op.call, &req, &res, false, err);
	if (rc == 0 && res.ended && res.end == SVC_EXEC_EXITED &&
	    !res.by_command && (res.exit_code == 126 || res.exit_code == 127))
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "the container of '%s' cannot run /bin/sh "
				   "for a file operation",
				   o->op.rec.key);
	else if (rc == 0 && res.ended && res.end == SVC_EXEC_TIMED_OUT)
		rc =
		    sbx_error_set(err, SBX_E_TIMEOUT, 0,
				  "the file operation in '%s' took longer than "
				  "%llu s",
				  o->op.rec.key, INSIDE_TIMEOUT_MS / 1000);
	else if (rc == 0 && res.ended && res.end != SVC_EXEC_EXITED)
		rc = sbx_error_set(err, SBX_E_CANCELLED, 0,
				   "the file operation in '%s' was stopped",
				   o->op.rec.key);
	else if (rc == 0 && !res.ended)
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "the file operation in '%s' did not run",
				   o->op.rec.key);
	if (rc == 0)
		r->code = res.exit_code;
	svc_exec_res_release(&res);
	return rc;
}

/* A script's refusal as the error svc-inside.h says; -1.  what is the
 * path it is about (its normalised form). */
static int refusal(int code, const char *what, struct sbx_error **err)
{
	struct strbuf shown = STRBUF_INIT;
	int rc;

	text_add_escaped(&shown, what, strlen(what));
	switch (code) {
	case SX_NOENT:
		rc =
		    sbx_error_set(err, SBX_E_NOT_FOUND, 0,
				  "'%s': no such file or directory", shown.buf);
		(*err)->errnum = ENOENT;
		sbx_error_why(*err, SBX_R_NOT_FOUND, 0, 0);
		break;
	case SX_ACCES:
		rc = sbx_error_set(err, SBX_E_REFUSED, 0,
				   "'%s': permission denied (as the sandbox's "
				   "user)",
				   shown.buf);
		(*err)->errnum = EACCES;
		sbx_error_reason(*err, "permission denied");
		break;
	case SX_ISDIR:
		rc = sbx_error_set(err, SBX_E_CONFLICT, 0,
				   "'%s' is a directory", shown.buf);
		(*err)->errnum = EISDIR;
		sbx_error_why(*err, SBX_R_A_DIRECTORY, 0, 0);
		break;
	case SX_NOTDIR:
		rc = sbx_error_set(err, SBX_E_CONFLICT, 0,
				   "'%s': a part of it is not a directory",
				   shown.buf);
		(*err)->errnum = ENOTDIR;
		sbx_error_why(*err, SBX_R_NOT_A_DIRECTORY, 0, 0);
		break;
	case SX_EXIST:
		rc = sbx_error_set(err, SBX_E_CONFLICT, 0, "'%s' exists",
				   shown.buf);
		(*err)->errnum = EEXIST;
		sbx_error_reason(*err, "exists");
		break;
	case SX_NOTREG:
		rc = sbx_error_set(err, SBX_E_CONFLICT, 0,
				   "'%s' is not a regular file", shown.buf);
		sbx_error_why(*err, SBX_R_NOT_REGULAR, 0, 0);
		break;
	default:
		rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				   "'%s': the container could not do it "
				   "(status %d)",
				   shown.buf, code);
		sbx_error_reason(*err, "the container's tools failed");
		break;
	}
	strbuf_release(&shown);
	return rc;
}

/* The one entry a script emitted for path into e; -1 (unavailable) when
 * it gave none (its stat could not say). */
static int one_entry(const struct ran *r, const char *path,
		     struct svc_inside_entry *e, struct sbx_error **err)
{
	struct svc_inside_entry *v = NULL;
	size_t n = 0, skipped = 0;
	bool more = false;

	entries_parse(&r->out.sb, &r->err.sb, 1, &v, &n, &more, &skipped);
	if (n == 1 && strcmp(v[0].path, path) == 0) {
		*e = v[0];
		free(v);
		return 0;
	}
	entries_free(v, n);
	return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			     "the container's stat gave no answer for a path");
}

/* ---- the operations ---- */

int svc_inside_stat(const struct svc *s, const struct svc_call *call,
		    const struct svc_inside_stat_req *req,
		    struct svc_inside_stat_res *res, struct sbx_error **err)
{
	struct inside_op o;
	struct ran r = {0};

	memset(res, 0, sizeof(*res));
	if (op_begin(&o, s, call, req->key, AUDIT_STAT, req->path, req->path,
		     NULL, err) == 0 &&
	    run_script(&o, script_stat, (const char *const[]){o.norm}, 1, -1,
		       ONE_BYTES, ONE_BYTES, &r, err) == 0) {
		o.target = o.norm;
		if (r.code != SX_OK)
			refusal(r.code, o.norm, err);
		else
			one_entry(&r, o.norm, &res->e, err);
	}
	ran_release(&r);
	return op_end(&o, err);
}

void svc_inside_stat_res_release(struct svc_inside_stat_res *res)
{
	svc_inside_entry_release(&res->e);
}

int svc_inside_ls(const struct svc *s, const struct svc_call *call,
		  const struct svc_inside_ls_req *req,
		  struct svc_inside_ls_res *res, struct sbx_error **err)
{
	struct inside_op o;
	struct ran r = {0};
	char depth[16], bytes[32];
	bool more = false;

	memset(res, 0, sizeof(*res));
	res->depth = req->depth ? req->depth : 1;
	res->max_entries =
	    req->max_entries && req->max_entries < SVC_INSIDE_LIST_MAX
		? req->max_entries
		: SVC_INSIDE_LIST_MAX;
	if (op_begin(&o, s, call, req->key, AUDIT_LS_INFO, req->path, req->path,
		     NULL, err) < 0)
		return op_end(&o, err);
	o.target = o.norm;
	if (res->depth > SVC_INSIDE_DEPTH_MAX) {
		sbx_error_set(err, SBX_E_INVALID, 0, "depth %u is over %d",
			      res->depth, SVC_INSIDE_DEPTH_MAX);
		return op_end(&o, err);
	}
	snprintf(depth, sizeof(depth), "%u", res->depth);
	snprintf(bytes, sizeof(bytes), "%llu", LIST_BYTES);
	if (run_script(&o, script_ls,
		       (const char *const[]){o.norm, depth, bytes}, 3, -1,
		       LIST_BYTES, LIST_BYTES * 2, &r, err) == 0) {
		if (r.code != SX_OK) {
			refusal(r.code, o.norm, err);
		} else {
			entries_parse(&r.out.sb, &r.err.sb, res->max_entries,
				      &res->entries, &res->n, &more,
				      &res->skipped);
			if (more) {
				res->truncated = true;
				res->why = "entries";
			} else if (r.out.cut || r.err.cut ||
				   r.out.sb.len >= LIST_BYTES) {
				res->truncated = true;
				res->why = "output";
			}
			o.op.results = (long long)res->n;
			o.op.detail = res->truncated
					  ? "inside the container, truncated"
					  : "inside the container";
		}
	}
	ran_release(&r);
	return op_end(&o, err);
}

void svc_inside_ls_res_release(struct svc_inside_ls_res *res)
{
	entries_free(res->entries, res->n);
	memset(res, 0, sizeof(*res));
}

int svc_inside_read(const struct svc *s, const struct svc_call *call,
		    const struct svc_inside_read_req *req,
		    struct svc_inside_read_res *res, struct sbx_error **err)
{
	struct inside_op o;
	struct ran r = {0};
	unsigned long long max = s->cfg.session.max_read, size = 0;
	char lim[32];

	memset(res, 0, sizeof(*res));
	res->max_read = max;
	if (op_begin(&o, s, call, req->key, AUDIT_READ_BYTES, req->path,
		     req->path, NULL, err) < 0)
		return op_end(&o, err);
	o.target = o.norm;
	snprintf(lim, sizeof(lim), "%llu", max);
	if (run_script(&o, script_read, (const char *const[]){o.norm, lim}, 2,
		       -1, (size_t)max + 1, ONE_BYTES, &r, err) == 0) {
		if (r.code == SX_TOOBIG ||
		    (r.code == SX_OK && r.out.sb.len > max)) {
			if (r.code == SX_TOOBIG &&
			    !number(r.err.sb.buf, r.err.sb.len, 10,
				    (unsigned long long)INT64_MAX, &size))
				size = max + 1;
			if (r.code == SX_OK)
				size = r.out.sb.len;
			sbx_error_set(err, SBX_E_REFUSED, 0,
				      "'%s' is %llu bytes, over the read limit "
				      "of %llu (SANDBOXD_MAX_READ_BYTES)",
				      o.norm, size, max);
			sbx_error_why(*err, SBX_R_OVER_READ_LIMIT, size, max);
		} else if (r.code != SX_OK) {
			refusal(r.code, o.norm, err);
		} else {
			res->len = r.out.sb.len;
			res->data = strbuf_detach(&r.out.sb, NULL);
			o.op.bytes = (long long)res->len;
		}
	}
	ran_release(&r);
	return op_end(&o, err);
}

void svc_inside_read_res_release(struct svc_inside_read_res *res)
{
	free(res->data);
	memset(res, 0, sizeof(*res));
}

int svc_inside_write(const struct svc *s, const struct svc_call *call,
		     const struct svc_inside_write_req *req,
		     struct svc_inside_write_res *res, struct sbx_error **err)
{
	struct inside_op o;
	struct ran r = {0};
	unsigned long long max = s->cfg.session.max_write;
	int fd = -1;

	memset(res, 0, sizeof(*res));
	if (op_begin(&o, s, call, req->key, AUDIT_WRITE, req->path, req->path,
		     NULL, err) < 0)
		return op_end(&o, err);
	o.target = o.norm;
	if (req->len > max) {
		sbx_error_set(err, SBX_E_REFUSED, EFBIG,
			      "%zu bytes are over the write limit of %llu "
			      "(SANDBOXD_MAX_WRITE_BYTES)",
			      req->len, max);
		sbx_error_reason(*err, "over the write limit");
		return op_end(&o, err);
	}
	if (!strcmp(o.norm, "/")) {
		refusal(SX_ISDIR, o.norm, err);
		return op_end(&o, err);
	}
	/* The bytes as exec's stdin: a memory file, read to its end. */
	fd = memfd_create("sbxcat-inside", MFD_CLOEXEC);
	if (fd < 0 || write_all(fd, req->data, req->len) < 0 ||
	    lseek(fd, 0, SEEK_SET) < 0) {
		sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
			      "cannot hold the bytes to write");
	} else if (run_script(&o, script_write, (const char *const[]){o.norm},
			      1, fd, ONE_BYTES, ONE_BYTES, &r, err) == 0) {
		if (r.code != SX_OK && r.code != SX_CREATED) {
			refusal(r.code, o.norm, err);
		} else if (one_entry(&r, o.norm, &res->e, err) == 0) {
			res->created = r.code == SX_CREATED;
			o.op.bytes = (long long)req->len;
			o.op.detail = res->created
					  ? "inside the container, created"
					  : "inside the container, replaced";
		}
	}
	if (fd >= 0)
		close(fd);
	ran_release(&r);
	return op_end(&o, err);
}

void svc_inside_write_res_release(struct svc_inside_write_res *res)
{
	svc_inside_entry_release(&res->e);
}

int svc_inside_mkdir(const struct svc *s, const struct svc_call *call,
		     const struct svc_inside_mkdir_req *req,
		     struct svc_inside_mkdir_res *res, struct sbx_error **err)
{
	struct inside_op o;
	struct ran r = {0};

	memset(res, 0, sizeof(*res));
	/* No op of its own in the audit (a migration): a write, said so. */
	if (op_begin(&o, s, call, req->key, AUDIT_WRITE, req->path, req->path,
		     NULL, err) == 0 &&
	    run_script(&o, script_mkdir, (const char *const[]){o.norm}, 1, -1,
		       ONE_BYTES, ONE_BYTES, &r, err) == 0) {
		o.target = o.norm;
		if (r.code != SX_OK && r.code != SX_EXISTED) {
			refusal(r.code, o.norm, err);
		} else if (one_entry(&r, o.norm, &res->e, err) == 0) {
			res->created = r.code == SX_OK;
			o.op.detail =
			    res->created
				? "inside the container, mkdir"
				: "inside the container, mkdir: existed";
		}
	}
	ran_release(&r);
	return op_end(&o, err);
}

void svc_inside_mkdir_res_release(struct svc_inside_mkdir_res *res)
{
	svc_inside_entry_release(&res->e);
}

int svc_inside_rm(const struct svc *s, const struct svc_call *call,
		  const struct svc_inside_rm_req *req, struct sbx_error **err)
{
	struct inside_op o;
	struct ran r = {0};

	if (op_begin(&o, s, call, req->key, AUDIT_REMOVE, req->path, req->path,
		     NULL, err) < 0)
		return op_end(&o, err);
	o.target = o.norm;
	if (!strcmp(o.norm, "/")) {
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "'/' is the container's root: not removed");
		sbx_error_reason(*err, "the root");
	} else if (run_script(&o, script_rm, (const char *const[]){o.norm}, 1,
			      -1, ONE_BYTES, ONE_BYTES, &r, err) == 0 &&
		   r.code != SX_OK) {
		refusal(r.code, o.norm, err);
	}
	ran_release(&r);
	return op_end(&o, err);
}

int svc_inside_rename(const struct svc *s, const struct svc_call *call,
		      const struct svc_inside_rename_req *req,
		      struct svc_inside_rename_res *res, struct sbx_error **err)
{
	struct inside_op o;
	struct ran r = {0};
	char *target = NULL;

	memset(res, 0, sizeof(*res));
	if (op_begin(&o, s, call, req->key, AUDIT_WRITE, req->from, req->from,
		     req->to, err) < 0)
		return op_end(&o, err);
	/* Both paths in the row: a rename is a write of both. */
	target = xasprintf("%s -> %s", o.norm, o.norm2);
	o.target = target;
	if (!strcmp(o.norm, "/") || !strcmp(o.norm2, "/")) {
		sbx_error_set(err, SBX_E_REFUSED, 0,
			      "'/' is the container's root: not renamed");
		sbx_error_reason(*err, "the root");
	} else if (run_script(&o, script_rename,
			      (const char *const[]){o.norm, o.norm2}, 2, -1,
			      ONE_BYTES, ONE_BYTES, &r, err) == 0) {
		if (r.code != SX_OK)
			refusal(r.code,
				r.code == SX_EXIST || r.code == SX_NOTDIR
				    ? o.norm2
				    : o.norm,
				err);
		else if (one_entry(&r, o.norm2, &res->e, err) == 0)
			o.op.detail = "inside the container, renamed";
	}
	ran_release(&r);
	op_end(&o, err);
	free(target);
	return *err ? -1 : 0;
}

void svc_inside_rename_res_release(struct svc_inside_rename_res *res)
{
	svc_inside_entry_release(&res->e);
}

/*
 * e2b-fs.c - envd's filesystem service over Connect (Stat, ListDir,
 * MakeDir, Move, Remove; the watchers answered unimplemented) and its
 * REST routes, GET and POST /files and GET /health (e2b.h,
 * docs/e2b.md, "Files").
 *
 * Where a path is served: the sandbox sees its workspace at its home
 * (e2b_home, /home/user).  A path under it, absolute or relative to it,
 * is a workspace path served on the host by svc-fs.h's operations (read
 * and write of bytes, stat, ls, rm, mkdir, move), each writing its audit
 * row, every component resolved beneath the workspace (a symlink is
 * never followed out of it).  Any other path, and any path
 * with a ".." component (which the sandbox's kernel, not a string
 * operation, must resolve: a symlink before it may lead anywhere), is
 * the container's own and served inside it by svc-inside.h's operations
 * (one exec of a fixed script as the sandbox's user, each its own row).
 *
 * Who acts: sbxcat runs every operation as the sandbox's one user.  The
 * user a request names (?username= on /files, Authorization: Basic
 * USER: on Connect) is "user" (E2B's default), the runtime's account
 * ("sandbox"), or none; "root" is refused as permission denied (no sudo:
 * sbxcat's hardening), any other name as invalid.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/base64.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/multipart.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "serve/e2b.h"
#include "svc/svc-fs.h"
#include "svc/svc-inside.h"

/* ListDir's depth and entries: E2B bounds neither; a listing past
 * these is refused (out_of_range: not resource_exhausted, which the SDK
 * reads as a rate limit to wait out), never cut short silently. */
#define LIST_DEPTH_MAX 10
#define LIST_ENTRIES_MAX 10000
/* Files one upload writes (each its own write and audit row). */
#define UPLOAD_PARTS_MAX 1000
/* What an upload's body holds beside the files' bytes: boundaries and
 * part headers (multipart.h bounds each part's to 8 KiB). */
#define UPLOAD_SLACK (64 << 10)
#define CAP_NONE (4 << 10)
#define CAP_FIELDS (64 << 10)
/* The runtime's account (catalog/recipe.c's useradd). */
#define RUNTIME_USER "sandbox"

/* ---- who ---- */

/* The user a request names: false once answered. */
static bool user_ok(struct e2b_req *e, const char *user)
{
	if (!user || !*user || !strcmp(user, "user") ||
	    !strcmp(user, RUNTIME_USER))
		return true;
	if (!strcmp(user, "root")) {
		if (e->n->dialect == E2B_CONNECT)
			e2b_connect_error(e, "permission_denied",
					  "Operations as root are not served: "
					  "every operation runs as the "
					  "sandbox's user (no sudo)");
		else
			e2b_rest_error(e, 403,
				       "Operations as root are not served: "
				       "every operation runs as the "
				       "sandbox's user (no sudo)");
		return false;
	}
	if (e->n->dialect == E2B_CONNECT)
		e2b_connect_error(e, "invalid_argument",
				  "Unknown user: 'user' is the sandbox's");
	else
		e2b_rest_error(e, 400, "Unknown user: 'user' is the sandbox's");
	return false;
}

/* Connect's user: Authorization: Basic base64("USER:"). */
static bool connect_user(struct e2b_req *e)
{
	const char *h = http_header(e->w.req, "Authorization");
	struct strbuf sb = STRBUF_INIT;
	size_t bad, n;
	bool okay;

	if (!h || strncasecmp(h, "Basic ", 6) != 0)
		return true;
	h += 6;
	n = strlen(h);
	if (n > 1024 || base64_decode(&sb, h, n, BASE64_STD, true, &bad) < 0 ||
	    memchr(sb.buf ? sb.buf : "", '\0', sb.len)) {
		strbuf_release(&sb);
		e2b_connect_error(e, "invalid_argument",
				  "Authorization: Basic is not base64 of "
				  "USER:");
		return false;
	}
	strbuf_addch(&sb, '\0');
	sb.buf[strcspn(sb.buf, ":")] = '\0';
	okay = user_ok(e, sb.buf);
	strbuf_release(&sb);
	return okay;
}

/* ---- paths ---- */

struct place {
	char *abs;   /* the sandbox's path, clean ("a//b/./c" is "a/b/c") */
	char *rel;   /* under home: the workspace's path ("." home) */
	bool inside; /* not under home: the container's */
};

static void place_release(struct place *p)
{
	free(p->abs);
	free(p->rel);
	memset(p, 0, sizeof(*p));
}

/*
 * Where given (absolute, or relative to home; "" home) is: 0, or -1
 * with *why.  Only "." and empty components are removed; a ".." leaves
 * the path to the container.
 */
static int place_of(const struct e2b_req *e, const char *given, size_t len,
		    struct place *p, const char **why)
{
	const char *home = e2b_home(e);
	struct strbuf sb = STRBUF_INIT;
	const char *s, *c;
	size_t hl = strlen(home);
	bool dotdot = false;

	memset(p, 0, sizeof(*p));
	if (strlen(given) != len) {
		*why = "a path holds a NUL";
		return -1;
	}
	if (len > 4096) {
		*why = "a path is over 4096 bytes";
		return -1;
	}
	if (given[0] != '/')
		strbuf_addstr(&sb, home);
	for (s = given; *s; s = c) {
		size_t n;

		s += strspn(s, "/");
		c = s + strcspn(s, "/");
		n = (size_t)(c - s);
		if (!n || (n == 1 && *s == '.'))
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.')
			dotdot = true;
		strbuf_addch(&sb, '/');
		strbuf_add(&sb, s, n);
	}
	if (!sb.len)
		strbuf_addch(&sb, '/');
	p->abs = strbuf_detach(&sb, NULL);
	if (!dotdot && !strncmp(p->abs, home, hl) &&
	    (p->abs[hl] == '/' || !p->abs[hl]))
		p->rel = xstrdup(p->abs[hl] ? p->abs + hl + 1 : ".");
	else
		p->inside = true;
	return 0;
}

/* A string field of a Connect message as a place: false once answered. */
static bool field_place(struct e2b_req *e, const char *json_name,
			const char *proto_name, bool required, struct place *p)
{
	json_t *v = e2b_field(e->w.body, json_name, proto_name);
	const char *why;

	if (v && !json_is_string(v)) {
		e2b_connect_error(e, "invalid_argument", "%s is not a string",
				  json_name);
		return false;
	}
	if (required && (!v || !json_string_length(v))) {
		e2b_connect_error(e, "invalid_argument", "%s is required",
				  json_name);
		return false;
	}
	if (place_of(e, v ? json_string_value(v) : "",
		     v ? json_string_length(v) : 0, p, &why) < 0) {
		e2b_connect_error(e, "invalid_argument", "%s: %s", json_name,
				  why);
		return false;
	}
	return true;
}

/* ---- EntryInfo ---- */

static const char *type_name(enum svc_fs_type t)
{
	switch (t) {
	case SVC_FS_FILE:
		return "FILE_TYPE_FILE";
	case SVC_FS_DIR:
		return "FILE_TYPE_DIRECTORY";
	case SVC_FS_SYMLINK:
		return "FILE_TYPE_SYMLINK";
	default:
		return "FILE_TYPE_UNSPECIFIED";
	}
}

/* Go's FileMode.String(), which envd sends: "drwxr-xr-x", "Lrwxrwxrwx". */
static void permissions(char out[11], char kind, unsigned mode)
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = kind;
	for (int i = 0; i < 9; i++)
		out[1 + i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = '\0';
}

static const char *owner_name(const struct e2b_req *e, unsigned long id)
{
	if (id == 0)
		return "root";
	if (id == e->w.snap->svc.cfg.recipe.sandbox_uid)
		return "user";
	return NULL;
}

/* An EntryInfo: name, type, path, size, mode, permissions, owner,
 * group (the names given, else from the ids), modifiedTime,
 * symlinkTarget when there is one. */
static json_t *entry_info_named(const struct e2b_req *e, const char *abs,
				enum svc_fs_type type, unsigned long long size,
				unsigned mode, unsigned long uid,
				unsigned long gid, const char *oname,
				const char *gname, long long mtime,
				const char *target)
{
	const char *slash = strrchr(abs, '/');
	const char *owner = oname ? oname : owner_name(e, uid);
	const char *group = gname ? gname : owner_name(e, gid);
	char perms[11], when[32], ubuf[24], gbuf[24], size_s[24];
	json_t *o;

	permissions(perms,
		    type == SVC_FS_DIR	     ? 'd'
		    : type == SVC_FS_SYMLINK ? 'L'
		    : type == SVC_FS_FILE    ? '-'
					     : '?',
		    mode);
	clock_format_time(when, mtime);
	if (!owner) {
		snprintf(ubuf, sizeof(ubuf), "%lu", uid);
		owner = ubuf;
	}
	if (!group) {
		snprintf(gbuf, sizeof(gbuf), "%lu", gid);
		group = gbuf;
	}
	/* int64 is a decimal string in protobuf's JSON. */
	snprintf(size_s, sizeof(size_s), "%llu", size);
	o = xjson_pack("{s:o, s:s, s:o, s:s, s:I, s:s, s:s, s:s}", "name",
		       xjson_text(slash && slash[1] ? slash + 1 : abs), "type",
		       type_name(type), "path", xjson_text(abs), "size", size_s,
		       "mode", (json_int_t)mode, "permissions", perms, "owner",
		       owner, "group", group);
	if (strcmp(when, "-"))
		json_object_set_new(o, "modifiedTime", json_string(when));
	if (target)
		json_object_set_new(o, "symlinkTarget", xjson_text(target));
	return o;
}

/* An EntryInfo: name, type, path, size, mode, permissions, owner,
 * group, modifiedTime, symlinkTarget when there is one. */
static json_t *entry_info(const struct e2b_req *e, const char *abs,
			  enum svc_fs_type type, unsigned long long size,
			  unsigned mode, unsigned long uid, unsigned long gid,
			  long long mtime, const char *target)
{
	return entry_info_named(e, abs, type, size, mode, uid, gid, NULL, NULL,
				mtime, target);
}
/* The joined path of a workspace path under home. */
static char *home_abs(const struct e2b_req *e, const char *rel)
{
	if (!strcmp(rel, "."))
		return xstrdup(e2b_home(e));
	return xasprintf("%s/%s", e2b_home(e), rel);
}

static enum svc_fs_type stat_type(const char *t)
{
	if (!strcmp(t, "file"))
		return SVC_FS_FILE;
	if (!strcmp(t, "dir"))
		return SVC_FS_DIR;
	if (!strcmp(t, "symlink"))
		return SVC_FS_SYMLINK;
	return SVC_FS_OTHER;
}

static int no_entry(void *arg, const svc_fs_entry *en, struct sbx_error **err)
{
	(void)arg;
	(void)en;
	(void)err;
	return 0;
}

/* Stat of a home path: 0 with *info, or -1 with *err.  The home itself
 * is the workspace, which stat does not name: a look at it (a listing
 * of one entry, its ls_info row) finds it, a directory of the user's. */
static int home_stat(struct e2b_req *e, const struct place *p, json_t **info,
		     struct sbx_error **err)
{
	struct svc_fs_stat_req r = {.key = e->w.ws.key, .path = p->rel};
	struct svc_fs_stat_res sr = {0};
	int rc;

	if (!strcmp(p->rel, ".")) {
		struct svc_fs_ls_req lr = {
		    .key = e->w.ws.key,
		    .path = ".",
		    .bounds = {.max_entries = 1, .all = true},
		    .entry = no_entry,
		};
		struct svc_fs_ls_res lres = {0};
		unsigned long uid = e->w.snap->svc.cfg.recipe.sandbox_uid;

		rc = svc_fs_ls(&e->w.snap->svc, &e->w.call, &lr, &lres, err);
		svc_fs_ls_res_release(&lres);
		if (rc == 0)
			*info = entry_info(e, p->abs, SVC_FS_DIR, 0, 0755, uid,
					   uid, 0, NULL);
		return rc;
	}
	rc = svc_fs_stat(&e->w.snap->svc, &e->w.call, &r, &sr, err);

	if (rc == 0)
		*info =
		    entry_info(e, p->abs, stat_type(sr.type), sr.size, sr.mode,
			       sr.uid, sr.gid, sr.mtime, sr.target);
	svc_fs_stat_res_release(&sr);
	return rc;
}

/* ---- the container's paths (svc-inside.h) ---- */

static json_t *inside_info(const struct e2b_req *e,
			   const struct svc_inside_entry *en)
{
	return entry_info_named(e, en->path, stat_type(en->type), en->size,
				en->mode, en->uid, en->gid, en->owner,
				en->group, en->mtime, en->target);
}

static int inside_stat(struct e2b_req *e, const struct place *p, json_t **info,
		       struct sbx_error **err)
{
	struct svc_inside_stat_req r = {.key = e->w.ws.key, .path = p->abs};
	struct svc_inside_stat_res sr = {0};
	int rc = svc_inside_stat(&e->w.snap->svc, &e->w.call, &r, &sr, err);

	if (rc == 0)
		*info = inside_info(e, &sr.e);
	svc_inside_stat_res_release(&sr);
	return rc;
}

/* ListDir of a container's path: the answer given. */
static void inside_list(struct e2b_req *e, const struct place *p,
			unsigned depth)
{
	struct svc_inside_ls_req r = {.key = e->w.ws.key,
				      .path = p->abs,
				      .depth = depth,
				      .max_entries = LIST_ENTRIES_MAX};
	struct svc_inside_ls_res lr = {0};
	struct sbx_error *err = NULL;

	if (svc_inside_ls(&e->w.snap->svc, &e->w.call, &r, &lr, &err) < 0) {
		e2b_error(e, err);
	} else if (lr.truncated) {
		e2b_connect_error(e, "out_of_range",
				  "'%s' holds more than this sbxcat lists (%s "
				  "bound): list a smaller tree",
				  p->abs, lr.why ? lr.why : "a");
	} else {
		json_t *a = json_array();

		for (size_t i = 0; i < lr.n; i++)
			json_array_append_new(a,
					      inside_info(e, &lr.entries[i]));
		e2b_connect_reply(e, xjson_pack("{s:o}", "entries", a));
	}
	sbx_error_free(&err);
	svc_inside_ls_res_release(&lr);
}

/* ---- Connect: filesystem.Filesystem ---- */

static void fs_stat(struct e2b_req *e)
{
	struct place p;
	struct sbx_error *err = NULL;
	json_t *info;

	if (!connect_user(e) || !field_place(e, "path", NULL, false, &p))
		return;
	if ((p.inside ? inside_stat(e, &p, &info, &err)
		      : home_stat(e, &p, &info, &err)) == 0)
		e2b_connect_reply(e, xjson_pack("{s:o}", "entry", info));
	else
		e2b_error(e, err);
	sbx_error_free(&err);
	place_release(&p);
}

struct listing {
	const struct e2b_req *e;
	const char *base; /* the listed directory's sandbox path */
	const char *rel;  /* and its workspace path ("." home) */
	json_t *entries;
};

static int list_entry(void *arg, const svc_fs_entry *en, struct sbx_error **err)
{
	struct listing *l = arg;
	cleanup_free char *abs = home_abs(l->e, en->path);

	(void)err;
	json_array_append_new(
	    l->entries,
	    entry_info(l->e, abs, svc_fs_type_of(en), en->size, en->mode,
		       l->e->w.snap->svc.cfg.recipe.sandbox_uid,
		       l->e->w.snap->svc.cfg.recipe.sandbox_uid, en->mtime,
		       NULL));
	return 0;
}

static void fs_list(struct e2b_req *e)
{
	struct svc_fs_ls_req r = {0};
	struct svc_fs_ls_res lr = {0};
	struct sbx_error *err = NULL;
	struct listing l = {.e = e};
	json_t *d = e2b_field(e->w.body, "depth", NULL);
	json_int_t depth = 1;
	struct place p;

	if (d && !json_is_null(d)) {
		/* uint32: a number, or its decimal string. */
		if (json_is_integer(d))
			depth = json_integer_value(d);
		else if (json_is_string(d) &&
			 strspn(json_string_value(d), "0123456789") ==
			     json_string_length(d) &&
			 json_string_length(d) && json_string_length(d) < 11)
			depth = strtoll(json_string_value(d), NULL, 10);
		else
			depth = -1;
		if (depth < 0) {
			e2b_connect_error(e, "invalid_argument",
					  "depth is not a uint32");
			return;
		}
	}
	if (!depth) /* proto3's default: a field not set */
		depth = 1;
	if (depth > LIST_DEPTH_MAX) {
		e2b_connect_error(e, "invalid_argument",
				  "depth %lld is over %d: this sbxcat lists at "
				  "most %d levels",
				  (long long)depth, LIST_DEPTH_MAX,
				  LIST_DEPTH_MAX);
		return;
	}
	if (!connect_user(e) || !field_place(e, "path", NULL, false, &p))
		return;
	if (p.inside) {
		inside_list(e, &p, (unsigned)depth);
		goto out;
	}
	l.entries = json_array();
	r.key = e->w.ws.key;
	r.path = p.rel;
	r.recursive = depth > 1;
	r.bounds.max_depth = (unsigned long long)depth;
	r.bounds.max_entries = LIST_ENTRIES_MAX;
	r.bounds.all = true;
	r.entry = list_entry;
	r.arg = &l;
	if (svc_fs_ls(&e->w.snap->svc, &e->w.call, &r, &lr, &err) < 0)
		e2b_error(e, err);
	else if (lr.l.truncated && lr.l.why && !strcmp(lr.l.why, "entries"))
		e2b_connect_error(e, "out_of_range",
				  "'%s' holds more than %d entries: list a "
				  "smaller tree",
				  p.abs, LIST_ENTRIES_MAX);
	else if (lr.l.out_of_time)
		e2b_connect_error(e, "deadline_exceeded",
				  "listing '%s' took too long", p.abs);
	else {
		e2b_connect_reply(e, xjson_pack("{s:O}", "entries", l.entries));
	}
	json_decref(l.entries);
	sbx_error_free(&err);
	svc_fs_ls_res_release(&lr);
out:
	place_release(&p);
}

static void fs_remove(struct e2b_req *e)
{
	struct svc_fs_rm_req r = {.recursive = true};
	struct svc_fs_rm_res rr = {0};
	struct sbx_error *err = NULL;
	struct place p;

	if (!connect_user(e) || !field_place(e, "path", NULL, true, &p))
		return;
	r.key = e->w.ws.key;
	r.path = p.rel;
	if (p.inside) {
		struct svc_inside_rm_req ir = {.key = e->w.ws.key,
					       .path = p.abs};

		if (svc_inside_rm(&e->w.snap->svc, &e->w.call, &ir, &err) == 0)
			e2b_connect_reply(e, json_object());
		else
			e2b_error(e, err);
	} else if (!strcmp(p.rel, "."))
		e2b_connect_error(e, "invalid_argument",
				  "'%s' is the home itself: not removed",
				  p.abs);
	else if (svc_fs_rm(&e->w.snap->svc, &e->w.call, &r, &rr, &err) == 0)
		e2b_connect_reply(e, json_object());
	else
		e2b_error(e, err);
	sbx_error_free(&err);
	svc_fs_rm_res_release(&rr);
	place_release(&p);
}

/* The EntryInfo of a stat taken after a change (type NULL: none could
 * be read: the path and name alone). */
static json_t *after_info(const struct e2b_req *e, const char *abs,
			  const struct svc_fs_stat_res *st)
{
	if (!st->type)
		return entry_info(e, abs, SVC_FS_OTHER, 0, 0,
				  e->w.snap->svc.cfg.recipe.sandbox_uid,
				  e->w.snap->svc.cfg.recipe.sandbox_uid, 0,
				  NULL);
	return entry_info(e, abs, stat_type(st->type), st->size, st->mode,
			  st->uid, st->gid, st->mtime, st->target);
}

static void fs_make_dir(struct e2b_req *e)
{
	struct svc_fs_mkdir_req r = {0};
	struct svc_fs_mkdir_res mr = {0};
	struct sbx_error *err = NULL;
	struct place p;

	if (!connect_user(e) || !field_place(e, "path", NULL, true, &p))
		return;
	r.key = e->w.ws.key;
	r.path = p.rel;
	if (p.inside) {
		struct svc_inside_mkdir_req ir = {.key = e->w.ws.key,
						  .path = p.abs};
		struct svc_inside_mkdir_res imr = {0};

		if (svc_inside_mkdir(&e->w.snap->svc, &e->w.call, &ir, &imr,
				     &err) < 0)
			e2b_error(e, err);
		else if (!imr.created)
			e2b_connect_error(e, "already_exists",
					  "'%s' exists already", p.abs);
		else
			e2b_connect_reply(e,
					  xjson_pack("{s:o}", "entry",
						     inside_info(e, &imr.e)));
		svc_inside_mkdir_res_release(&imr);
	} else if (!strcmp(p.rel, "."))
		e2b_connect_error(e, "already_exists", "'%s' exists already",
				  p.abs);
	else if (svc_fs_mkdir(&e->w.snap->svc, &e->w.call, &r, &mr, &err) < 0)
		e2b_error(e, err);
	else if (!mr.created)
		/* envd's answer, which the SDK reads as false. */
		e2b_connect_error(e, "already_exists", "'%s' exists already",
				  p.abs);
	else
		e2b_connect_reply(e, xjson_pack("{s:o}", "entry",
						after_info(e, p.abs, &mr.st)));
	sbx_error_free(&err);
	svc_fs_mkdir_res_release(&mr);
	place_release(&p);
}

static void fs_move(struct e2b_req *e)
{
	struct svc_fs_move_req r = {0};
	struct svc_fs_move_res mr = {0};
	struct sbx_error *err = NULL;
	struct place src, dst;

	if (!connect_user(e) || !field_place(e, "source", NULL, true, &src))
		return;
	if (!field_place(e, "destination", NULL, true, &dst))
		goto out;
	r.key = e->w.ws.key;
	r.from = src.rel;
	r.to = dst.rel;
	/* One side outside: the container sees both. */
	if (src.inside || dst.inside) {
		struct svc_inside_rename_req ir = {
		    .key = e->w.ws.key, .from = src.abs, .to = dst.abs};
		struct svc_inside_rename_res irr = {0};

		if (svc_inside_rename(&e->w.snap->svc, &e->w.call, &ir, &irr,
				      &err) < 0)
			e2b_error(e, err);
		else
			e2b_connect_reply(e,
					  xjson_pack("{s:o}", "entry",
						     inside_info(e, &irr.e)));
		svc_inside_rename_res_release(&irr);
	} else if (!strcmp(src.rel, ".") || !strcmp(dst.rel, "."))
		e2b_connect_error(e, "invalid_argument",
				  "The home itself is not moved, nor moved "
				  "onto");
	else if (svc_fs_move(&e->w.snap->svc, &e->w.call, &r, &mr, &err) < 0)
		e2b_error(e, err);
	else
		e2b_connect_reply(e,
				  xjson_pack("{s:o}", "entry",
					     after_info(e, dst.abs, &mr.st)));
	sbx_error_free(&err);
	svc_fs_move_res_release(&mr);
	place_release(&dst);
out:
	place_release(&src);
}

/* What is not served: a clear unimplemented, never a hang. */
static void fs_watch(struct e2b_req *e)
{
	e2b_connect_error(e, "unimplemented",
			  "Watching a directory is not served by sbxcat: "
			  "list it again to see changes");
}

/* ---- REST: /files ---- */

/* ?username=: false once answered. */
static bool rest_user(struct e2b_req *e)
{
	return user_ok(e, http_query(e->w.req, "username"));
}

/* A REST path: ?path= (required) as a place; false once answered. */
static bool query_place(struct e2b_req *e, const char *given, struct place *p)
{
	const char *why;

	if (place_of(e, given, strlen(given), p, &why) < 0) {
		e2b_rest_error(e, 400, "Invalid path: %s", why);
		return false;
	}
	return true;
}

/* A workspace error as envd's /files says it: 404 missing, 400 a
 * directory or a bad path, 507 no space, else the front's map. */
static void files_error(struct e2b_req *e, const struct place *p,
			const struct sbx_error *err)
{
	if (err->why == SBX_R_NOT_FOUND)
		e2b_rest_error(e, 404, "File not found: '%s'", p->abs);
	else if (err->why == SBX_R_A_DIRECTORY ||
		 err->why == SBX_R_NOT_A_DIRECTORY ||
		 err->why == SBX_R_NOT_REGULAR)
		e2b_rest_error(e, 400, "Invalid path: '%s' is not a file",
			       p->abs);
	else if (err->why == SBX_R_OUTSIDE)
		e2b_rest_error(e, 400,
			       "Invalid path: '%s' leaves the home (a "
			       "symlink is not followed out of it)",
			       p->abs);
	else if (err->why == SBX_R_OVER_READ_LIMIT)
		e2b_rest_error(e, 413,
			       "'%s' is %llu bytes, over the read limit of "
			       "%llu (SANDBOXD_MAX_READ_BYTES)",
			       p->abs, err->n, err->max);
	else if (err->errnum == EFBIG)
		e2b_rest_error(e, 413, "'%s' is over the write limit", p->abs);
	else if (err->errnum == EACCES)
		e2b_rest_error(e, 403, "'%s': permission denied", p->abs);
	else if (err->errnum == ENOSPC || err->errnum == EDQUOT)
		e2b_rest_error(e, 507, "Not enough disk space for '%s'",
			       p->abs);
	else
		e2b_error(e, err);
}

struct collect {
	struct strbuf sb;
	unsigned long long max;
};

static int collect_out(void *arg, const void *buf, size_t len,
		       struct sbx_error **err)
{
	struct collect *c = arg;

	if (c->sb.len + len > c->max)
		return sbx_error_set(err, SBX_E_REFUSED, EFBIG,
				     "the file grew past the read limit");
	strbuf_add(&c->sb, buf, len);
	return 0;
}

/* 200 with *data's len bytes (taken: *data NULL after). */
static void bytes_answer(struct e2b_req *e, char **data, size_t len)
{
	e->w.answered = true;
	e->w.res->status = 200;
	e->w.res->content_type = "application/octet-stream";
	free(e->w.res->body);
	e->w.res->body = *data;
	e->w.res->body_len = len;
	*data = NULL;
}

static void files_get(struct e2b_req *e)
{
	const char *given = http_query(e->w.req, "path");
	struct collect c = {STRBUF_INIT, e->w.snap->svc.cfg.session.max_read};
	struct svc_sink out = {.fd = -1, .write = collect_out, .arg = &c};
	struct svc_fs_read_bytes_req r = {.out = &out};
	struct svc_fs_read_bytes_res res = {0};
	struct sbx_error *err = NULL;
	struct place p;

	if (!rest_user(e))
		return;
	if (!given || !*given) {
		e2b_rest_error(e, 400, "Invalid path: ?path= is required");
		return;
	}
	if (!query_place(e, given, &p))
		return;
	r.key = e->w.ws.key;
	r.path = p.rel;
	if (p.inside) {
		struct svc_inside_read_req ir = {.key = e->w.ws.key,
						 .path = p.abs};
		struct svc_inside_read_res irr = {0};

		if (svc_inside_read(&e->w.snap->svc, &e->w.call, &ir, &irr,
				    &err) == 0)
			bytes_answer(e, &irr.data, irr.len);
		else
			files_error(e, &p, err);
		svc_inside_read_res_release(&irr);
	} else if (svc_fs_read_bytes(&e->w.snap->svc, &e->w.call, &r, &res,
				     &err) == 0) {
		size_t len = c.sb.len;
		char *data = strbuf_detach(&c.sb, NULL);

		bytes_answer(e, &data, len);
		free(data);
	} else {
		files_error(e, &p, err);
	}
	strbuf_release(&c.sb);
	sbx_error_free(&err);
	svc_fs_read_bytes_res_release(&res);
	place_release(&p);
}

/* One file of an upload: its place and bytes. */
struct upload {
	struct place p;
	const char *data;
	size_t len;
};

/* The directory of an absolute path (a new string; "/" for a top one). */
static char *dir_of(const char *abs)
{
	const char *slash = strrchr(abs, '/');

	return slash && slash != abs ? xstrndup(abs, (size_t)(slash - abs))
				     : xstrdup("/");
}

/* Write one container's file: its parents made first when missing (as
 * envd makes them), each step its own row. */
static int upload_inside(struct e2b_req *e, struct upload *u, json_t *done)
{
	struct svc_inside_write_req r = {.key = e->w.ws.key,
					 .path = u->p.abs,
					 .data = u->data,
					 .len = u->len};
	struct svc_inside_write_res wr = {0};
	struct sbx_error *err = NULL;
	int rc = svc_inside_write(&e->w.snap->svc, &e->w.call, &r, &wr, &err);

	if (rc < 0 && err->why == SBX_R_NOT_FOUND) {
		cleanup_free char *dir = dir_of(u->p.abs);
		struct svc_inside_mkdir_req mr = {.key = e->w.ws.key,
						  .path = dir};
		struct svc_inside_mkdir_res mres = {0};

		sbx_error_free(&err);
		rc = svc_inside_mkdir(&e->w.snap->svc, &e->w.call, &mr, &mres,
				      &err);
		svc_inside_mkdir_res_release(&mres);
		if (rc == 0) {
			svc_inside_write_res_release(&wr);
			rc = svc_inside_write(&e->w.snap->svc, &e->w.call, &r,
					      &wr, &err);
		}
	}
	if (rc < 0) {
		files_error(e, &u->p, err);
	} else {
		const char *slash = strrchr(u->p.abs, '/');

		json_array_append_new(
		    done,
		    xjson_pack("{s:o, s:s, s:o}", "name",
			       xjson_text(slash ? slash + 1 : u->p.abs), "type",
			       "file", "path", xjson_text(u->p.abs)));
	}
	sbx_error_free(&err);
	svc_inside_write_res_release(&wr);
	return rc;
}

/* Write one file: 0 with its entry appended, or -1 answered. */
static int upload_one(struct e2b_req *e, struct upload *u, json_t *done)
{
	struct svc_fs_write_req r = {.key = e->w.ws.key, .path = u->p.rel};
	struct svc_fs_write_res wr = {0};
	struct sbx_error *err = NULL;
	int rc = -1;

	if (u->p.inside)
		return upload_inside(e, u, done);
	r.in_fd = memfd_create("sbxcat-upload", MFD_CLOEXEC);
	if (r.in_fd < 0 || write_all(r.in_fd, u->data, u->len) < 0 ||
	    lseek(r.in_fd, 0, SEEK_SET) < 0) {
		e2b_rest_error(e, 500, "Cannot hold the upload: %s",
			       strerror(errno));
	} else if (svc_fs_write(&e->w.snap->svc, &e->w.call, &r, &wr, &err) <
		   0) {
		files_error(e, &u->p, err);
	} else {
		const char *slash = strrchr(u->p.abs, '/');

		json_array_append_new(
		    done,
		    xjson_pack("{s:o, s:s, s:o}", "name",
			       xjson_text(slash ? slash + 1 : u->p.abs), "type",
			       "file", "path", xjson_text(u->p.abs)));
		rc = 0;
	}
	if (r.in_fd >= 0)
		close(r.in_fd);
	sbx_error_free(&err);
	svc_fs_write_res_release(&wr);
	return rc;
}

/*
 * The files of a multipart body: every part named "file" (others are
 * ignored, as a form's other fields), its path ?path= when given (then
 * exactly one file), else its filename.  0, or -1 answered.
 */
static int upload_parts(struct e2b_req *e, const char *given,
			struct multipart *mp, struct upload **out, size_t *n)
{
	const char *type = http_header(e->w.req, "Content-Type");
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
	const char *why;
	struct upload *v;

	if (multipart_boundary(type, boundary, &why) < 0 ||
	    multipart_parse(mp, e->w.req->body ? e->w.req->body : "",
			    e->w.req->body_len, boundary, UPLOAD_PARTS_MAX,
			    &why) < 0) {
		e2b_rest_error(e, 400, "Invalid multipart body: %s", why);
		return -1;
	}
	v = *out = xcalloc(mp->n ? mp->n : 1, sizeof(*v));
	*n = 0;
	for (size_t i = 0; i < mp->n; i++) {
		const struct multipart_part *pt = &mp->parts[i];
		const char *path = given ? given : pt->filename;

		if (strcmp(pt->name, "file") != 0)
			continue;
		if (given && *n) {
			e2b_rest_error(e, 400,
				       "Invalid multipart body: ?path= names "
				       "one file, the body holds more");
			return -1;
		}
		if (!path || !*path) {
			e2b_rest_error(e, 400,
				       "Invalid multipart body: part %zu has "
				       "no filename and no ?path= is given",
				       i + 1);
			return -1;
		}
		if (!query_place(e, path, &v[*n].p))
			return -1;
		v[*n].data = pt->data;
		v[*n].len = pt->len;
		++*n;
	}
	if (!*n) {
		e2b_rest_error(e, 400,
			       "Invalid multipart body: no part named 'file'");
		return -1;
	}
	return 0;
}

static void files_post(struct e2b_req *e)
{
	const char *given = http_query(e->w.req, "path");
	const char *type = http_header(e->w.req, "Content-Type");
	const char *enc = http_header(e->w.req, "Content-Encoding");
	unsigned long long max = e->w.snap->svc.cfg.session.max_write;
	struct multipart mp = MULTIPART_INIT;
	struct upload *v = NULL;
	size_t n = 0;
	json_t *done = NULL;

	if (!rest_user(e))
		return;
	if (given && !*given)
		given = NULL;
	if (enc && strcasecmp(enc, "identity") != 0) {
		e2b_rest_error(e, 415,
			       "Content-Encoding '%s' is not served: send the "
			       "bytes as they are",
			       enc);
		return;
	}
	if (type && !strncasecmp(type, "application/octet-stream", 24)) {
		if (!given) {
			e2b_rest_error(e, 400,
				       "Invalid path: an octet-stream upload "
				       "needs ?path=");
			return;
		}
		v = xcalloc(1, sizeof(*v));
		if (!query_place(e, given, &v->p))
			goto out;
		v->data = e->w.req->body ? e->w.req->body : "";
		v->len = e->w.req->body_len;
		n = 1;
	} else if (upload_parts(e, given, &mp, &v, &n) < 0) {
		goto out;
	}
	/* Every file checked before one is written: a refused upload
	 * changes nothing. */
	for (size_t i = 0; i < n; i++) {
		if (v[i].len > max) {
			e2b_rest_error(
			    e, 413,
			    "'%s' is %zu bytes, over the write limit "
			    "of %llu (SANDBOXD_MAX_WRITE_BYTES)",
			    v[i].p.abs, v[i].len, max);
			goto out;
		}
		if (!v[i].p.inside && !strcmp(v[i].p.rel, ".")) {
			e2b_rest_error(e, 400,
				       "Invalid path: '%s' is the home "
				       "directory",
				       v[i].p.abs);
			goto out;
		}
	}
	done = json_array();
	for (size_t i = 0; i < n; i++)
		if (upload_one(e, &v[i], done) < 0)
			goto out;
	e2b_rest_json(e, 200, done);
	done = NULL;
out:
	json_decref(done);
	for (size_t i = 0; v && i < n; i++)
		place_release(&v[i].p);
	free(v);
	multipart_release(&mp);
}

/* envd's health: 204, no body, no token. */
static void health(struct e2b_req *e)
{
	e2b_rest_empty(e, 204);
}

#define FS(method, pool, op)                                                   \
	E2B_ROUTE("POST", "/filesystem.Filesystem/" method, pool, CAP_FIELDS,  \
		  op, ENVD, CONNECT, .body = true)

const struct http_route e2b_fs_routes[] = {
    E2B_ROUTE("GET", "/health", QUICK, CAP_NONE, health, NONE, REST),
    /* POST's cap is set at start from SANDBOXD_MAX_WRITE_BYTES
     * (e2b_fs_caps). */
    E2B_ROUTE("GET", "/files", QUICK, CAP_NONE, files_get, ENVD, REST),
    E2B_ROUTE("POST", "/files", SLOW, CAP_NONE, files_post, ENVD, REST),
    FS("Stat", QUICK, fs_stat),
    FS("ListDir", SLOW, fs_list),
    FS("MakeDir", SLOW, fs_make_dir),
    FS("Move", SLOW, fs_move),
    FS("Remove", SLOW, fs_remove),
    FS("WatchDir", QUICK, fs_watch),
    FS("CreateWatcher", QUICK, fs_watch),
    FS("GetWatcherEvents", QUICK, fs_watch),
    FS("RemoveWatcher", QUICK, fs_watch),
};
const size_t e2b_fs_nroutes = sizeof(e2b_fs_routes) / sizeof(*e2b_fs_routes);

void e2b_fs_caps(struct http_route *rt, size_t n, unsigned long long max_write)
{
	for (size_t i = 0; i < n; i++)
		if (rt[i].handler == e2b_handle &&
		    !strcmp(rt[i].method, "POST") &&
		    !strcmp(rt[i].path, "/files"))
			rt[i].max_body =
			    st_add(max_write > SIZE_MAX - UPLOAD_SLACK
				       ? SIZE_MAX - UPLOAD_SLACK
				       : (size_t)max_write,
				   UPLOAD_SLACK);
}

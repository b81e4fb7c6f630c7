/*
 * svc-inside.h - file operations on paths OUTSIDE a session's workspace
 * ("/", /tmp/x, /etc/os-release), served from inside its container
 * (docs/e2b.md, "Where files are").  The E2B front calls them for paths that
 * are not under the sandbox's work dir; what is under it stays the
 * host-side workspace's (svc-fs.h).
 *
 * How: each operation is one exec in the container (the exec machinery
 * of svc-exec.c: the session found under the caller's tenant, a paused
 * container unpaused, a deadline, output capped), as the session's user
 * (the container's User), running /bin/sh -c with a fixed script and the
 * paths as its arguments (never interpolated into the script), with only
 * POSIX tools a busybox image has as well as a coreutils one (test,
 * find, stat -c, head -c, mkdir -p, rm -rf, mv, mktemp).  So the
 * container's permissions hold as for any of its processes: what its
 * user may not read, it is not given.  Never the engine's archive API
 * (the daemon reads as root) nor the host's /proc/PID/root.
 *
 * Everything the container answers is hostile until checked: names are
 * matched byte for byte against the list find gave (a name with a
 * newline cannot forge another entry's fields), numbers parsed in range,
 * every stream capped, a name that is not valid UTF-8 left out of a
 * listing and counted (the wire carries text only; the engine's API
 * too, so such a path cannot be named either: refused, invalid).
 *
 * Paths: absolute, at most SVC_INSIDE_PATH_MAX bytes, valid UTF-8, no
 * NUL, no control character; "." and ".." components and repeated
 * slashes are normalised lexically ("/a/../b" is "/b"; nothing climbs
 * above "/").  The normalised path is what the row's target says (the
 * sandbox's path, as svc-fs.c's rows name a workspace path).
 *
 * Errors: kind and reason as svc-fs.h's, plus errnum:
 *   not found            SBX_E_NOT_FOUND, SBX_R_NOT_FOUND, ENOENT
 *   permission denied    SBX_E_REFUSED, errnum EACCES ("permission denied")
 *   a directory          SBX_E_CONFLICT, SBX_R_A_DIRECTORY, EISDIR
 *   not a directory      SBX_E_CONFLICT, SBX_R_NOT_A_DIRECTORY, ENOTDIR
 *   exists (rename onto a directory, mkdir of a file)
 *                        SBX_E_CONFLICT, errnum EEXIST
 *   over the read limit  SBX_E_REFUSED, SBX_R_OVER_READ_LIMIT (n, max)
 *   over the write limit SBX_E_REFUSED, errnum EFBIG
 *   a bad path           SBX_E_INVALID
 *   the container's tools could not do it (no stat, a script failure)
 *                        SBX_E_UNAVAILABLE
 *
 * Each operation writes its one audit row (op read/write/ls/stat/rm/
 * mkdir/mv as the host-side ones, target the path as the sandbox sees
 * it), refusals included, and stamps the session's activity.
 *
 * Ownership: requests borrowed for the call; results the caller's,
 * released with their _res_release whether the call succeeded or not.
 * Thread rule: as svc.h.
 */
#ifndef SBX_SVC_INSIDE_H
#define SBX_SVC_INSIDE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "svc/svc.h"

struct sbx_error;

/* A path's bytes at most (Linux's PATH_MAX). */
#define SVC_INSIDE_PATH_MAX 4096
/* A listing's entries at most, and its depth. */
#define SVC_INSIDE_LIST_MAX 10000
#define SVC_INSIDE_DEPTH_MAX 32

/* One entry: a stat's answer, a listing's element. */
struct svc_inside_entry {
	char *path;	  /* absolute, as the sandbox sees it */
	char *name;	  /* its last component ("/" for the root) */
	const char *type; /* "file", "dir", "symlink", "fifo", "socket",
			     "char-device", "block-device", "other" */
	unsigned long long size;
	unsigned mode; /* permission bits (07777) */
	unsigned long uid, gid;
	char *owner, *group; /* the container's names, or NULL */
	long long mtime;     /* seconds since the epoch */
	char *target;	     /* a symlink's, else NULL */
};
/* The entry as JSON: {path, name, type, size, mode, uid, gid, owner,
 * group, mtime, target}. */
json_t *svc_inside_entry_json(const struct svc_inside_entry *e);

/* ---- stat: a path's lstat, as the session's user sees it ---- */
struct svc_inside_stat_req {
	const char *key, *path;
};
struct svc_inside_stat_res {
	struct svc_inside_entry e;
};
int svc_inside_stat(const struct svc *s, const struct svc_call *call,
		    const struct svc_inside_stat_req *req,
		    struct svc_inside_stat_res *res, struct sbx_error **err);
void svc_inside_stat_res_release(struct svc_inside_stat_res *res);

/* ---- ls: a directory's entries, to a depth ---- */
struct svc_inside_ls_req {
	const char *key, *path;
	unsigned depth;	    /* 0: 1 (the directory's own entries) */
	size_t max_entries; /* 0 or over: SVC_INSIDE_LIST_MAX */
};
struct svc_inside_ls_res {
	struct svc_inside_entry *entries; /* in find's order */
	size_t n;
	bool truncated;	    /* a bound stopped it: why says which */
	const char *why;    /* "entries", "output", "time" or NULL */
	size_t skipped;	    /* names left out: not valid UTF-8 */
	size_t max_entries; /* the bound that applied */
	unsigned depth;	    /* the depth that applied */
};
int svc_inside_ls(const struct svc *s, const struct svc_call *call,
		  const struct svc_inside_ls_req *req,
		  struct svc_inside_ls_res *res, struct sbx_error **err);
void svc_inside_ls_res_release(struct svc_inside_ls_res *res);

/* ---- read: a regular file's bytes, at most the read limit ---- */
struct svc_inside_read_req {
	const char *key, *path;
};
struct svc_inside_read_res {
	char *data; /* len bytes (and a NUL after them) */
	size_t len;
	unsigned long long max_read; /* the limit that applied */
};
/* A file over SANDBOXD_MAX_READ_BYTES is refused by its size, before
 * reading; one that grows past it while read (or claims size 0, as a
 * /proc file) is cut at the limit and refused: never more is taken. */
int svc_inside_read(const struct svc *s, const struct svc_call *call,
		    const struct svc_inside_read_req *req,
		    struct svc_inside_read_res *res, struct sbx_error **err);
void svc_inside_read_res_release(struct svc_inside_read_res *res);

/* ---- write: the bytes become the file (atomically where it can) ---- */
struct svc_inside_write_req {
	const char *key, *path;
	const void *data; /* len bytes, at most SANDBOXD_MAX_WRITE_BYTES */
	size_t len;
};
struct svc_inside_write_res {
	struct svc_inside_entry e; /* the file written */
	bool created;
};
/* The parent must exist (as E2B's envd, the caller makes it first with
 * svc_inside_mkdir when it wants).  Written to a temporary file beside
 * it, renamed over it; where the directory is not writable but the file
 * is, written in place. */
int svc_inside_write(const struct svc *s, const struct svc_call *call,
		     const struct svc_inside_write_req *req,
		     struct svc_inside_write_res *res, struct sbx_error **err);
void svc_inside_write_res_release(struct svc_inside_write_res *res);

/* ---- mkdir: a directory and its parents (mkdir -p) ---- */
struct svc_inside_mkdir_req {
	const char *key, *path;
};
struct svc_inside_mkdir_res {
	struct svc_inside_entry e;
	bool created; /* false: it was a directory already */
};
int svc_inside_mkdir(const struct svc *s, const struct svc_call *call,
		     const struct svc_inside_mkdir_req *req,
		     struct svc_inside_mkdir_res *res, struct sbx_error **err);
void svc_inside_mkdir_res_release(struct svc_inside_mkdir_res *res);

/* ---- rm: a file, a symlink, a directory and all it holds ---- */
struct svc_inside_rm_req {
	const char *key, *path; /* "/" refused */
};
int svc_inside_rm(const struct svc *s, const struct svc_call *call,
		  const struct svc_inside_rm_req *req, struct sbx_error **err);

/* ---- rename: from becomes to (replacing a file, never a directory) ---- */
struct svc_inside_rename_req {
	const char *key, *from, *to;
};
struct svc_inside_rename_res {
	struct svc_inside_entry e; /* what is at `to` now */
};
int svc_inside_rename(const struct svc *s, const struct svc_call *call,
		      const struct svc_inside_rename_req *req,
		      struct svc_inside_rename_res *res,
		      struct sbx_error **err);
void svc_inside_rename_res_release(struct svc_inside_rename_res *res);

/*
 * The path checked and normalised as above into *norm (the caller's, to
 * free).  -1 with *err (invalid) otherwise.  For a front end deciding
 * where a path goes before it calls an operation.
 */
int svc_inside_path(const char *path, char **norm, struct sbx_error **err);

void svc_inside_entry_release(struct svc_inside_entry *e);

#endif

/*
 * svc-fs.h - the workspace operations (brief section 7, docs/workspace.md)
 * as the service layer offers them (svc.h): one function per verb of
 * `sbxcat fs`, each doing the whole transaction:
 *
 *   the recorder opened (a bad agent or run id: no row), the session
 *   found under the caller's tenant (call->tenant; another tenant's key
 *   reads exactly like none), its workspace opened and the path checked,
 *   the recorder ready (else nothing is read or changed and no row is
 *   written: fail closed), the operation, its one audit row (a refused
 *   request's too: the key asked for goes to its detail, never onto
 *   another tenant's chain), and the session's activity stamped (every
 *   request on a session that exists, refused ones included).
 *
 * Which audit op and target each verb's row names is decided here (the
 * table in svc-fs.c), as is what a verb may name (the workspace itself for
 * ls, glob and grep; a pattern for glob and grep).
 *
 * Output.  A verb whose output an input can make big streams it: read,
 * ls, glob and grep write their JSON document to req->json as it is made
 * (when req->json is set), byte for byte what a document printed whole
 * with JSON_INDENT(2) and a newline is, holding one element at a time,
 * never the document; without it they give the caller what a text
 * rendering needs (read: the lines in res; ls, glob: each entry to
 * req->entry, in order, after the walk; grep: each match to req->match as
 * it is found).  read-bytes writes the file's bytes to req->out, or with
 * req->json_doc puts them, base64, in res->doc.  The others fill res and
 * res->doc, the document `--json` prints.
 *
 * Errors carry their kind (error.h) and the module's own words (no
 * command-line flag).  When the row of an operation that failed cannot be
 * written either, *err is the audit's, the operation's chained before it
 * (sbx_error_chain: the row is what no door may lose).
 *
 * Ownership: requests are borrowed for the call; results are the
 * caller's, released with their _res_release (which decrefs doc) whether
 * the call succeeded or not (a call that fails may have filled some of
 * it); what a callback is given is borrowed for the callback's time.
 *
 * Thread rule: as svc.h: every call makes its own recorder, root and
 * workspace; calls on different threads share nothing.  Two calls on one
 * workspace at once are as safe as the workspace module makes them
 * (workspace.h).
 */
#ifndef SBX_SVC_FS_H
#define SBX_SVC_FS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "svc/svc.h"
#include "workspace/grep.h"
#include "workspace/walk.h"

struct sbx_error;

/*
 * A listing's entry, a grep's match, a walk's problem and a grep's
 * counts under svc's names: what the front ends (cli/, serve/) use, so
 * that they name nothing of workspace/ (tests/layers.py).  The fields
 * are walk.h's and grep.h's.
 */
typedef struct walk_entry svc_fs_entry;
typedef struct walk_problem svc_fs_problem;
typedef struct grep_match svc_fs_match;
typedef struct grep_stats svc_fs_grep_stats;
/* An entry's type. */
enum svc_fs_type {
	SVC_FS_FILE = WALK_FILE,
	SVC_FS_DIR = WALK_DIR,
	SVC_FS_SYMLINK = WALK_SYMLINK,
	SVC_FS_OTHER = WALK_OTHER,
};
static inline enum svc_fs_type svc_fs_type_of(const svc_fs_entry *e)
{
	return (enum svc_fs_type)e->type;
}

/* read's lines when no --offset/--limit is given. */
#define SVC_FS_READ_LIMIT_DEFAULT 2000ULL

/* ---- write: the bytes of a descriptor become PATH, atomically ---- */
struct svc_fs_write_req {
	const char *key, *path;
	int in_fd; /* read to its end */
};
struct svc_fs_write_res {
	char *path; /* normalised ("a//b" is "a/b") */
	unsigned long long bytes;
	bool created;
	json_t *doc; /* {path, bytes, created} */
};
int svc_fs_write(const struct svc *s, const struct svc_call *call,
		 const struct svc_fs_write_req *req,
		 struct svc_fs_write_res *res, struct sbx_error **err);
void svc_fs_write_res_release(struct svc_fs_write_res *res);

/* ---- read: numbered lines of a text file ---- */
struct svc_fs_read_req {
	const char *key, *path;
	/* 0: the defaults (line 1; SVC_FS_READ_LIMIT_DEFAULT lines); either
	 * given makes the read a slice, which a file over the read limit
	 * allows (workspace.h, workspace_read_lines). */
	unsigned long long offset, limit;
	const struct svc_sink *json; /* the document, streamed; NULL: text */
};
struct svc_fs_read_res {
	/* Text only (json NULL): the lines shown, each but perhaps the last
	 * ending in a newline, the first numbered first. */
	char *text;
	size_t len, n;
	unsigned long long first;
	/* Both: what follows them. */
	long long lines_left;	 /* -1: not counted (a slice of a big file) */
	bool more, cut;		 /* cut: stopped at the read limit */
	unsigned long long next; /* the offset that reads on */
	unsigned long long max_read; /* the read limit that applied */
};
int svc_fs_read(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_read_req *req, struct svc_fs_read_res *res,
		struct sbx_error **err);
void svc_fs_read_res_release(struct svc_fs_read_res *res);

/* ---- read-bytes: a file's bytes, as they are ---- */
struct svc_fs_read_bytes_req {
	const char *key, *path;
	/* json_doc: the bytes go into res->doc (base64, at most the read
	 * limit of them held); else to out as they are read. */
	bool json_doc;
	const struct svc_sink *out;
};
struct svc_fs_read_bytes_res {
	unsigned long long bytes;
	json_t *doc; /* {path, bytes, content_base64}; json_doc only */
};
int svc_fs_read_bytes(const struct svc *s, const struct svc_call *call,
		      const struct svc_fs_read_bytes_req *req,
		      struct svc_fs_read_bytes_res *res,
		      struct sbx_error **err);
void svc_fs_read_bytes_res_release(struct svc_fs_read_bytes_res *res);

/* ---- edit: an exact replacement, once or every occurrence ---- */
struct svc_fs_edit_req {
	const char *key, *path;
	const char *old, *new; /* old not empty; new may be */
	bool all;	       /* every occurrence (else exactly one) */
};
struct svc_fs_edit_res {
	char *path;
	size_t replaced;
	unsigned long long line; /* the first one's */
	json_t *doc;		 /* {path, replaced, line} */
};
int svc_fs_edit(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_edit_req *req, struct svc_fs_edit_res *res,
		struct sbx_error **err);
void svc_fs_edit_res_release(struct svc_fs_edit_res *res);

/* ---- listings: ls and glob ---- */

/* The bounds of a walk; 0: the defaults (walk.h). */
struct svc_fs_bounds {
	unsigned long long max_depth, max_entries;
	bool all; /* skills/ and the spill directory too */
};

/* How a listing ended, for its text (the JSON says the same). */
struct svc_fs_listing {
	size_t n;	  /* entries listed */
	bool truncated;	  /* a bound stopped it: why "entries" or "depth" */
	bool out_of_time; /* the time budget stopped it: why "time" */
	const char *why;
	unsigned max_depth; /* the bounds that applied */
	size_t max_entries;
	long long budget_ms;
	/* Directories that could not be read, skipped (walk.h). */
	svc_fs_problem *problems;
	size_t nproblems;
};

struct svc_fs_ls_req {
	const char *key, *path; /* path NULL: the workspace */
	bool recursive;
	struct svc_fs_bounds bounds;
	const struct svc_sink *json; /* the document, streamed */
	/* Text (json NULL): each entry, in walk order; returns 0, or -1
	 * with *err set to stop (the call then fails with it). */
	int (*entry)(void *arg, const svc_fs_entry *e, struct sbx_error **err);
	void *arg;
};
struct svc_fs_ls_res {
	struct svc_fs_listing l;
};
int svc_fs_ls(const struct svc *s, const struct svc_call *call,
	      const struct svc_fs_ls_req *req, struct svc_fs_ls_res *res,
	      struct sbx_error **err);
void svc_fs_ls_res_release(struct svc_fs_ls_res *res);

struct svc_fs_glob_req {
	const char *key, *pattern; /* walk.h's glob_match syntax */
	bool hidden;		   /* dot files too */
	struct svc_fs_bounds bounds;
	const struct svc_sink *json;
	int (*entry)(void *arg, const svc_fs_entry *e, struct sbx_error **err);
	void *arg;
};
struct svc_fs_glob_res {
	struct svc_fs_listing l;
};
int svc_fs_glob(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_glob_req *req, struct svc_fs_glob_res *res,
		struct sbx_error **err);
void svc_fs_glob_res_release(struct svc_fs_glob_res *res);

/* ---- grep: the lines that match, file by file ---- */
struct svc_fs_grep_req {
	const char *key, *pattern; /* not empty */
	const char *path;	   /* where; NULL: the workspace */
	const char *include;	   /* a glob of names (or paths); NULL: all */
	bool icase, fixed, hidden;
	unsigned long long max_count; /* 0: GREP_MAX_COUNT_DEFAULT */
	unsigned long long timeout_s; /* 0: the budget's default */
	struct svc_fs_bounds bounds;
	const struct svc_sink *json;
	/* Text (json NULL): each match as it is found; returns as entry. */
	int (*match)(void *arg, const svc_fs_match *m, struct sbx_error **err);
	void *arg;
};
struct svc_fs_grep_res {
	/* What was searched and skipped (grep.h), problems included; why
	 * "entries", "depth", "matches" or "time" when cut short. */
	svc_fs_grep_stats st;
	const char *why;
	/* The bounds that applied. */
	unsigned long long max_count, max_read;
	unsigned max_depth;
	size_t max_entries;
	long long budget_ms;
};
int svc_fs_grep(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_grep_req *req, struct svc_fs_grep_res *res,
		struct sbx_error **err);
void svc_fs_grep_res_release(struct svc_fs_grep_res *res);

/* ---- stat: a path's lstat ---- */
struct svc_fs_stat_req {
	const char *key, *path;
};
struct svc_fs_stat_res {
	char *path;
	const char *type; /* "file", "dir", "symlink", "fifo", "socket",
			     "char-device", "block-device", "other" */
	unsigned long long size, links;
	unsigned mode; /* permission bits */
	unsigned long uid, gid;
	long long mtime;
	char *target; /* a symlink's, else NULL */
	json_t *doc;  /* {path, type, size, mode, uid, gid, mtime, links,
			 target} */
};
int svc_fs_stat(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_stat_req *req, struct svc_fs_stat_res *res,
		struct sbx_error **err);
void svc_fs_stat_res_release(struct svc_fs_stat_res *res);

/* ---- rm: a file, a symlink, a directory (a full one recursively) ---- */
struct svc_fs_rm_req {
	const char *key, *path;
	bool recursive;
};
struct svc_fs_rm_res {
	char *path;
	unsigned long long removed; /* entries */
	json_t *doc;		    /* {path, removed} */
};
int svc_fs_rm(const struct svc *s, const struct svc_call *call,
	      const struct svc_fs_rm_req *req, struct svc_fs_rm_res *res,
	      struct sbx_error **err);
void svc_fs_rm_res_release(struct svc_fs_rm_res *res);

/* ---- mkdir: a directory and its parents (E2B's MakeDir) ---- */
struct svc_fs_mkdir_req {
	const char *key, *path;
};
struct svc_fs_mkdir_res {
	char *path;
	bool created; /* false: it was a directory already */
	/* The directory's stat after (type NULL: it could not be read). */
	struct svc_fs_stat_res st;
};
int svc_fs_mkdir(const struct svc *s, const struct svc_call *call,
		 const struct svc_fs_mkdir_req *req,
		 struct svc_fs_mkdir_res *res, struct sbx_error **err);
void svc_fs_mkdir_res_release(struct svc_fs_mkdir_res *res);

/* ---- move: a rename within the workspace (E2B's Move) ---- */
struct svc_fs_move_req {
	const char *key, *from, *to;
};
struct svc_fs_move_res {
	char *from, *to; /* normalised */
	/* What is at to after (lstat; type NULL: it could not be read). */
	struct svc_fs_stat_res st;
};
int svc_fs_move(const struct svc *s, const struct svc_call *call,
		const struct svc_fs_move_req *req, struct svc_fs_move_res *res,
		struct sbx_error **err);
void svc_fs_move_res_release(struct svc_fs_move_res *res);

#endif

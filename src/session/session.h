/*
 * session.h - what a session is on the host: its key, the configuration
 * that governs it, its workspace and sbxcat's own record of it, and the
 * lock that decides quotas; never prints, never talks to the engine
 * (session-engine.c, session-engine.h, does that).  brief section 7,
 * docs/sessions.md.
 *
 * Keys: "xc-" ORG8 "-" SCOPE "-" 26 base32 digits ([a-z2-7]) = 130 bits of
 * HMAC-SHA256(secret, fields) when a secret is configured
 * (SBXCAT_KEY_SECRET, or the first line of the file SBXCAT_KEY_SECRET_FILE
 * names, else ROOT/.sbxcat-key-secret, made on first use by
 * session_secret_load), else of SHA-256(fields).  fields is an unambiguous
 * encoding of "docker", scope, tenant, host and subject, in that order, each as
 * its length (4 bytes, big-endian) then its bytes.  The 26 digits are the
 * digest's first 130 bits, most significant first.  ORG8
 * is the tenant lowercased with every byte outside [a-z0-9] dropped, cut
 * to 8 ("x" when nothing is left).  At most 3+8+1+12+1+26 = 51 characters.
 *
 * Layout on the host:
 *   ROOT/                   SANDBOXD_WORKSPACE_ROOT, root's, not writable
 *                           by group or others, not a symlink
 *   ROOT/.sbxcat.lock       flock()ed by every sbxcat that decides a quota
 *   ROOT/.sbxcat-key-secret the key secret made on first use (0600)
 *   ROOT/.sbxcat-trash/     purged ROOT/KEYs being emptied (0700)
 *   ROOT/KEY/               root's, 0700: the sandbox cannot reach it
 *   ROOT/KEY/session.json   sbxcat's record (below), replaced atomically
 *   ROOT/KEY/workspace/     the sandbox uid's, 0755; bind-mounted at the
 *                           same path in the container
 *
 * Everything below ROOT is reached from a directory descriptor of ROOT
 * with O_NOFOLLOW: a KEY that is not a key, or a ROOT/KEY that is a
 * symlink or not root's, is refused.
 *
 * The module's files, one concern each: session-config.c (the
 * configuration, sizes and durations), session-key.c (field checks, keys,
 * the key secret), session-root.c (the root, the quota lock, ROOT/KEY and
 * its locks, the keys), session-record.c (the record, session_find),
 * session-workspace.c (the workspace, its size, the trash and purge).
 *
 * Thread rule: nothing here keeps state; a struct session_config is
 * read-only once loaded (any number of threads may share one), while a
 * struct session_root, a record and a trash entry belong to one thread
 * at a time.  What is shared between threads and processes is the file
 * system, ordered by the flocks below (the quota lock, ROOT/KEY's); an
 * flock is the open file's, so two threads of one process must each hold
 * their own session_root to exclude each other.
 */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sbx_error;

#define SESSION_KEY_MAX 64
#define SESSION_ROOT_DEFAULT "/srv/sandboxd/workspaces"
#define SESSION_LABEL_TENANT "io.sbxcat.tenant"
#define SESSION_LABEL_KEY "io.sbxcat.key"
#define SESSION_LABEL_RUNTIME "io.sbxcat.runtime"
#define SESSION_LABEL_CREATED "io.sbxcat.created"
#define SESSION_TENANT_MAX 128
#define SESSION_SUBJECT_MAX 1024
#define SESSION_HOST_MAX 253

/*
 * The configuration, from the environment (each variable named in
 * docs/sessions.md with its default).  session_config_load() validates
 * every value it reads: a bad one is status 2 naming the variable.
 */
struct session_config {
	char *root;		     /* SANDBOXD_WORKSPACE_ROOT */
	unsigned max_per_tenant;     /* SANDBOXD_MAX_SESSIONS_PER_TENANT 10 */
	unsigned max_sessions;	     /* SANDBOXD_MAX_SESSIONS 20 */
	unsigned long long mem_limit; /* SANDBOXD_MEM_LIMIT "1g", bytes */
	long execute_timeout_s;	      /* SANDBOXD_EXECUTE_TIMEOUT 300 */
	unsigned long long max_output; /* SANDBOXD_MAX_OUTPUT_BYTES 10 MiB */
	bool persist_containers;       /* SANDBOXD_PERSIST_CONTAINERS */
	char *network;		       /* SBXCAT_SESSION_NETWORK "bridge" */
	char *deployment;	       /* SBXCAT_DEPLOYMENT_ID "default" */
	unsigned char *secret;	       /* NULL: keys are plain SHA-256 */
	size_t secret_len;
	/* Workspace operations (docs/workspace.md). */
	unsigned long long max_read;  /* SANDBOXD_MAX_READ_BYTES 8 MiB */
	unsigned long long max_write; /* SANDBOXD_MAX_WRITE_BYTES 64 MiB */
	char *spill; /* SANDBOXD_SPILL_DIR "large_tool_results": one name */
	/* Lifetimes (docs/lifetimes.md), seconds; 0 workspace_ttl: kept. */
	long long idle_timeout;	 /* SANDBOXD_IDLE_TIMEOUT 1800 */
	/* SANDBOXD_PAUSE_AFTER 300: an idle session's container is paused
	 * (reap.h); 0, or at or past the idle timeout: never paused. */
	long long pause_after;
	long long container_ttl; /* SANDBOXD_CONTAINER_TTL 86400 */
	long long workspace_ttl; /* SANDBOXD_WORKSPACE_TTL unset */
};

struct sbx_env;
int session_config_load(struct session_config *c, const struct sbx_env *e,
			struct sbx_error **err);
void session_config_release(struct session_config *c);

/*
 * Parse a memory size as the catalogue and compose write it ("512m",
 * "1g", "1.5g", "1073741824", suffixes b k m g t, either case, powers of
 * 1024): status 2 for anything else, or 0, or over 2^62.
 */
int session_parse_size(const char *s, unsigned long long *bytes,
		       struct sbx_error **err);

/*
 * Field checks: NULL when acceptable, else a static message.  scope: run,
 * conversation, channel, user or agent.  tenant: 1 to 128 bytes of
 * [A-Za-z0-9._@-], the first a letter or a digit.  subject: 1 to 1024
 * bytes of valid UTF-8 without a control character (text.h: C0, DEL, C1).
 * host: 0 to 253 bytes of [A-Za-z0-9.-].
 */
const char *session_check_scope(const char *s);
const char *session_check_tenant(const char *s);
const char *session_check_subject(const char *s);
const char *session_check_host(const char *s);
/* A string of the key's shape: [a-z0-9][a-z0-9-]*, at most 64. */
bool session_key_valid(const char *s);

/* The key of (tenant, scope, subject, host), into key[SESSION_KEY_MAX+1]. */
void session_key(const struct session_config *c, const char *tenant,
		 const char *scope, const char *subject, const char *host,
		 char key[SESSION_KEY_MAX + 1]);

/* sbxcat's record of a session (ROOT/KEY/session.json). */
struct session_record {
	char key[SESSION_KEY_MAX + 1];
	char *tenant, *scope, *runtime, *image;
	char *container; /* id, or NULL before the first create */
	long long created, last_activity; /* Unix seconds */
};
void session_record_release(struct session_record *r);

/* The held workspace root; SESSION_ROOT_INIT before it is opened, so
 * session_root_close may be called on any path. */
struct session_root {
	char *path;
	int fd; /* O_DIRECTORY of ROOT */
	int lock_fd;
	/* What ends a wait for a lock here when it becomes non-zero (a
	 * signal number, kept in the error): the call's cancel flag (svc.h).
	 * NULL after session_root_open: then the signal caught (sig.h), for
	 * callers that do not set it yet. */
	const atomic_int *cancel;
};
#define SESSION_ROOT_INIT {.path = NULL, .fd = -1, .lock_fd = -1}

/*
 * Open ROOT, creating it (and its parents, 0755) when missing; refuse a
 * ROOT that is a symlink, not a directory, not owned by root (uid 0), or
 * writable by group or others (status 3, saying which and what to do).
 * Every directory on the way from / is checked too: root's, and not
 * writable by group or others unless sticky (as /tmp), since whoever can
 * rename a component can redirect the bind mounts the engine makes by
 * path.  A symlink on the way (not ROOT itself) is followed, and what it
 * leads to checked the same way.  path must be absolute, printable UTF-8.
 */
int session_root_open(struct session_root *r, const char *path,
		      struct sbx_error **err);
void session_root_close(struct session_root *r);

/* flock(LOCK_EX) ROOT/.sbxcat.lock (created 0600, never through a
 * symlink); unlock releases it.  A cancel (r->cancel) ends the wait with
 * a cancelled error. */
int session_lock(struct session_root *r, struct sbx_error **err);
void session_unlock(struct session_root *r);

/*
 * The key secret when the configuration has none (neither
 * SBXCAT_KEY_SECRET nor SBXCAT_KEY_SECRET_FILE): ROOT/.sbxcat-key-secret,
 * made on first use (32 bytes from getrandom as one line of hex, root's,
 * 0600, made atomically: two first uses racing end with one file) and
 * read as SBXCAT_KEY_SECRET_FILE is (refused, status 3, when a symlink,
 * not a regular file, not root's or this user's, or open to group or
 * others).  Sets c->secret; nothing when it is already set.
 */
int session_secret_load(struct session_config *c, struct session_root *r,
			struct sbx_error **err);

/*
 * Open ROOT/KEY/workspace (O_RDONLY | O_DIRECTORY, never through a
 * symlink; ROOT/KEY checked as every other use of it) and return its
 * descriptor; a key without a directory is "no session 'KEY'" (status 1,
 * ENOENT), a missing workspace status 3.
 */
int session_workspace_open(struct session_root *r, const char *key,
			   struct sbx_error **err);

/* "ROOT/KEY/workspace", newly allocated. */
char *session_workspace_path(const struct session_root *r, const char *key);

/*
 * Make ROOT/KEY (root's, 0700) and ROOT/KEY/workspace (uid:uid, 0755)
 * when missing; check them when present (ROOT/KEY a directory of root's,
 * not a symlink; workspace a directory, not a symlink).  *created says
 * whether the workspace was made now.
 */
int session_workspace_make(struct session_root *r, const char *key,
			   unsigned long uid, bool *created,
			   struct sbx_error **err);

/*
 * Read ROOT/KEY/session.json.  A key with no directory or no record is
 * status 1 with errnum ENOENT ("no session 'KEY'"); a record that does
 * not parse is status 3 naming the file.  The record is one JSON object
 * of exactly the members version (1), key, tenant, scope, runtime, image,
 * container (a 64-hex id or null), created and last_activity, at most 64
 * KiB; every member is checked as when it was written, and key must name
 * the directory it is in.
 */
int session_record_read(struct session_root *r, const char *key,
			struct session_record *rec, struct sbx_error **err);
/*
 * The record of the session key as tenant may see it: tenant NULL sees
 * every session; another tenant's session is "no session 'KEY'" (not
 * found, errnum ENOENT, reason "no such session") exactly as a key that
 * does not exist or is not a key at all, so a caller cannot learn which.
 * A record that exists but cannot be read is that error, not "no
 * session".  This is the tenant-isolation rule of every operation on a
 * session.
 */
int session_find(struct session_root *root, const char *key,
		 const char *tenant, struct session_record *rec,
		 struct sbx_error **err);
/* Write it atomically (temporary file in ROOT/KEY, fsync, rename). */
int session_record_write(struct session_root *r,
			 const struct session_record *rec,
			 struct sbx_error **err);
/* Set last_activity to now and write the record back, unless it says
 * this very second already (under an flock of
 * ROOT/KEY, which session_record_write takes too, so a touch never puts
 * back a record a concurrent write replaced). */
int session_record_touch(struct session_root *r, const char *key,
			 struct sbx_error **err);
/*
 * flock(LOCK_EX) ROOT/KEY, the lock session_record_write and
 * session_record_touch take: while it is held no stamp lands.  Returns
 * the descriptor that holds it (session_keydir_unlock releases it); a
 * missing ROOT/KEY is "no session 'KEY'" (status 1, ENOENT); a caught
 * cancel (r->cancel) ends the wait with a cancelled error.
 */
int session_keydir_lock(struct session_root *r, const char *key,
			struct sbx_error **err);
void session_keydir_unlock(int fd);
/*
 * flock(LOCK_EX) ROOT/KEY/exec.lock (made root's, 0600, when missing),
 * which an exec holds from its start to its claim (procs.h); released
 * with session_keydir_unlock.  Errors as session_keydir_lock's.
 */
int session_exec_lock(struct session_root *r, const char *key,
		      struct sbx_error **err);
/*
 * ROOT/KEY/watch.lock open (not locked; made as exec.lock is): the lock
 * the session's one deadline watcher holds (procs_watch).
 */
int session_watch_lock_open(struct session_root *r, const char *key,
			    struct sbx_error **err);
/* The keys that have a directory under ROOT, sorted; *keys newly
 * allocated (strv_free). */
int session_keys(struct session_root *r, char ***keys, size_t *n,
		 struct sbx_error **err);
/*
 * The trash: ROOT/.sbxcat-trash (root's, 0700), where a purge moves
 * ROOT/KEY so that the quota lock is held only for a rename, however big
 * the tree (docs/sessions.md).
 *
 * session_trash_key renames ROOT/KEY (checked as every use of it) to
 * ROOT/.sbxcat-trash/KEY.<16 hex>, under an flock of the directory moved
 * (ROOT/KEY's own, so no stamp lands meanwhile), and makes the trash when
 * missing; call it with the quota lock held.  With t, the entry stays
 * held in *t for session_trash_empty, to call after unlocking: it empties
 * it without following any symlink or crossing a mount (tree.h), removes
 * it and releases *t, whatever the outcome.  Without t, the caller holds
 * ROOT/KEY's flock already (session_keydir_lock, as reap does) and the
 * entry is left for session_trash_finish.  A missing ROOT/KEY is "no session
 * 'KEY'" (status 1, ENOENT).
 *
 * session_trash_finish empties and removes every entry of the trash that
 * nobody holds (left by a crash, or by session_trash_key without t),
 * counting them into *finished; an entry held by another process is left
 * to it.  A mount point inside an entry stops it (status 3): what is
 * left stays in the trash until a later call.
 */
struct session_trash {
	int fd;				 /* the entry, flocked */
	int dir_fd;			 /* ROOT/.sbxcat-trash */
	char name[SESSION_KEY_MAX + 18]; /* KEY.<16 hex> */
};
void session_trash_init(struct session_trash *t);
void session_trash_release(struct session_trash *t);
int session_trash_key(struct session_root *r, const char *key,
		      struct session_trash *t, struct sbx_error **err);
int session_trash_empty(struct session_root *r, struct session_trash *t,
			struct sbx_error **err);
int session_trash_finish(struct session_root *r, unsigned *finished,
			 struct sbx_error **err);
/* session_trash_key and session_trash_empty at once (for a caller that
 * does not hold the quota lock). */
int session_purge(struct session_root *r, const char *key,
		  struct sbx_error **err);
/* Bytes used by ROOT/KEY/workspace (st_blocks * 512, not following
 * symlinks, not crossing mounts); entries counted into *files. */
int session_workspace_size(struct session_root *r, const char *key,
			   unsigned long long *bytes, unsigned long long *files,
			   struct sbx_error **err);

#endif

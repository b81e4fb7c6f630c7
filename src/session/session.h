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
 *   ROOT/KEY/hibernated     hibernation's mark (below), root's, 0600
 *   ROOT/KEY/workspace/     the sandbox uid's, 0755; bind-mounted at the
 *                           work dir (SANDBOXD_WORK_DIR) in the container
 *   ROOT/.sbxcat-ws/        root's, 0700: the workspaces of the warm pool
 *   ROOT/.sbxcat-ws/ID/     a pooled container's workspace (ID: 26 of
 *                           [a-z2-7]), the sandbox uid's, 0755, at the
 *                           work dir in its container; the record of
 *                           the session that claims it names it
 *   ROOT/.sbxcat-open/      root's, 0700: the reservations of opens in
 *                           progress (session_reserve)
 *   ROOT/KEY/workspace.img  a disk budget's image (session-budget.h),
 *                           root's, 0600, mounted at ROOT/KEY/workspace
 *   ROOT/.sbxcat-ws/ID.img  the same for a pooled workspace
 *
 * Everything below ROOT is reached from a directory descriptor of ROOT
 * with O_NOFOLLOW: a KEY that is not a key, or a ROOT/KEY that is a
 * symlink or not root's, is refused.
 *
 * The module's files, one concern each: session-config.c (the
 * configuration, sizes and durations), session-key.c (field checks, keys,
 * the key secret), session-root.c (the root, the quota lock, ROOT/KEY and
 * its locks, the keys), session-record.c (the record, session_find),
 * session-workspace.c (the workspace, its size, the trash and purge),
 * session-reserve.c (the reservations of opens in progress),
 * session-pool.c (the warm pool's entries and workspaces),
 * session-hibernate.c (hibernation: its mark here, the rest in
 * session-engine.h), session-budget.c (disk budgets: session-budget.h).
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

#include "session/session-labels.h"

struct sbx_error;

#define SESSION_KEY_MAX 64
#define SESSION_ROOT_DEFAULT "/srv/sandboxd/workspaces"
#define SESSION_WORK_DIR_DEFAULT "/workspace"
#define SESSION_WORK_DIR_MAX 255
#define SESSION_LABEL_TENANT "io.sbxcat.tenant"
#define SESSION_LABEL_KEY "io.sbxcat.key"
#define SESSION_LABEL_RUNTIME "io.sbxcat.runtime"
#define SESSION_LABEL_CREATED "io.sbxcat.created"
#define SESSION_TENANT_MAX 128
#define SESSION_SUBJECT_MAX 1024
#define SESSION_HOST_MAX 253
#define SESSION_LABEL_POOL "io.sbxcat.pool"
/* A container made with a work dir other than the configuration's
 * (session_work_dir) carries it here; one without it binds at the
 * configuration's. */
#define SESSION_LABEL_WORK_DIR "io.sbxcat.work-dir"
/* A pooled container's ID: 26 of [a-z2-7] (130 random bits). */
#define SESSION_POOL_ID_LEN 26
/* The most containers SBXCAT_WARM_POOL keeps ready for one runtime. */
#define SESSION_POOL_MAX 64

/*
 * The configuration, from the environment (each variable named in
 * docs/sessions.md with its default).  session_config_load() validates
 * every value it reads: a bad one is status 2 naming the variable.
 */
struct session_config {
	char *root;		     /* SANDBOXD_WORKSPACE_ROOT */
	/* SANDBOXD_WORK_DIR "/workspace": where a sandbox sees its
	 * workspace and its commands start.  Nothing of the host's
	 * layout (ROOT, the key) reaches a sandbox or a client: paths
	 * they are given and give are under this. */
	char *work_dir;
	unsigned max_per_tenant;     /* SANDBOXD_MAX_SESSIONS_PER_TENANT 10 */
	unsigned max_sessions;	     /* SANDBOXD_MAX_SESSIONS 20 */
	unsigned long long mem_limit; /* SANDBOXD_MEM_LIMIT "1g", bytes */
	long execute_timeout_s;	      /* SANDBOXD_EXECUTE_TIMEOUT 300 */
	unsigned long long max_output; /* SANDBOXD_MAX_OUTPUT_BYTES 10 MiB */
	bool persist_containers;       /* SANDBOXD_PERSIST_CONTAINERS */
	char *network;		       /* SBXCAT_SESSION_NETWORK "bridge" */
	/* SBXCAT_EXEC_PATH: how exec starts a command (docs/sessions.md
	 * "How a command is started"): auto (the host joins the container
	 * itself, the engine when it cannot), fast (never the engine:
	 * refused when the host cannot), engine (always the engine). */
	enum session_exec_path {
		SESSION_EXEC_AUTO,
		SESSION_EXEC_FAST,
		SESSION_EXEC_ENGINE,
	} exec_path;
	char *deployment;	       /* SBXCAT_DEPLOYMENT_ID "default" */
	unsigned char *secret;	       /* NULL: keys are plain SHA-256 */
	size_t secret_len;
	/* Workspace operations (docs/workspace.md). */
	unsigned long long max_read;  /* SANDBOXD_MAX_READ_BYTES 8 MiB */
	unsigned long long max_write; /* SANDBOXD_MAX_WRITE_BYTES 64 MiB */
	char *spill; /* SANDBOXD_SPILL_DIR "large_tool_results": one name */
	/* SBXCAT_WARM_POOL "ALIAS=N,...": containers kept ready per
	 * runtime (docs/sessions.md); none by default. */
	struct session_pool_want {
		char *alias;
		/* "ALIAS@/home/user=N": containers for sessions with that
		 * work dir; NULL: the configuration's. */
		char *work_dir;
		unsigned count; /* 0 to SESSION_POOL_MAX */
	} * pool;
	size_t npool;
	/* Lifetimes (docs/lifetimes.md), seconds; 0 workspace_ttl: kept. */
	long long idle_timeout;	 /* SANDBOXD_IDLE_TIMEOUT 1800 */
	/* SANDBOXD_PAUSE_AFTER 300: an idle session's container is paused
	 * (reap.h); 0, or at or past the idle timeout: never paused. */
	long long pause_after;
	long long container_ttl; /* SANDBOXD_CONTAINER_TTL 86400 */
	long long workspace_ttl; /* SANDBOXD_WORKSPACE_TTL unset */
	/* Hibernation (docs/sessions.md): SANDBOXD_EVICT_IDLE_AFTER, seconds
	 * (0, unset: an open at the host's ceiling is refused, nothing is
	 * hibernated); SANDBOXD_MAX_OPEN_SESSIONS (0, unset: no bound; else
	 * at least max_sessions), the sessions open, hibernated included. */
	long long evict_idle_after;
	unsigned max_open;
	/* Disk budgets (session-budget.h, docs/sessions.md):
	 * SANDBOXD_WORKSPACE_QUOTA, bytes (0, unset: none) and
	 * SANDBOXD_WORKSPACE_INODES (0, unset: mkfs.ext4's ratio), each
	 * workspace's unless its open asks for less; SBXCAT_MKFS, the
	 * program that makes them ("/sbin/mkfs.ext4"). */
	unsigned long long disk_quota, disk_inodes;
	char *mkfs;
	/* SANDBOXD_MAX_KEPT_BUDGETS_PER_TENANT (20): the closed workspaces
	 * of a tenant that keep a disk budget (its image and mount), past
	 * which an open that makes another budget is refused. */
	unsigned max_kept_budgets;
};

struct sbx_env;
int session_config_load(struct session_config *c, const struct sbx_env *e,
			struct sbx_error **err);
void session_config_release(struct session_config *c);

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
/* A work dir, SANDBOXD_WORK_DIR's rule (an absolute path other than /,
 * written once, at most SESSION_WORK_DIR_MAX bytes of text, outside /tmp,
 * /proc, /sys and /dev). */
const char *session_check_work_dir(const char *s);
/* A string of the key's shape: [a-z0-9][a-z0-9-]*, at most 64. */
bool session_key_valid(const char *s);

/* The key of (tenant, scope, subject, host), into key[SESSION_KEY_MAX+1]. */
void session_key(const struct session_config *c, const char *tenant,
		 const char *scope, const char *subject, const char *host,
		 char key[SESSION_KEY_MAX + 1]);

/*
 * What happens to a session's workspace when it ends: persistent (the
 * default, as before) keeps it after close and the reaper's stop, until
 * SANDBOXD_WORKSPACE_TTL; ephemeral deletes ROOT/KEY (record and files)
 * at close and when the reaper reaps it (idle past the idle timeout).
 * Hibernation keeps either (it only stops the container).
 */
enum session_durability {
	SESSION_PERSISTENT = 0,
	SESSION_EPHEMERAL,
};
const char *session_durability_name(enum session_durability d);
/* "persistent" or "ephemeral": 0, else -1. */
int session_durability_parse(const char *s, enum session_durability *d);

/* sbxcat's record of a session (ROOT/KEY/session.json). */
struct session_record {
	char key[SESSION_KEY_MAX + 1];
	char *tenant, *scope, *runtime, *image;
	char *container; /* id, or NULL before the first create */
	long long created, last_activity; /* Unix seconds */
	/* The workspace directory, relative to ROOT: "KEY/workspace" (a
	 * cold open's) or ".sbxcat-ws/ID" (a pooled container's, made
	 * before the key was known).  Set by every read; NULL when written
	 * means KEY/workspace. */
	char *workspace;
	/* The caller's labels and the durability asked for at open (a
	 * record of version 1 or 2: none, persistent). */
	struct session_labels labels;
	enum session_durability durability;
	/* Where the sandbox sees its workspace, its commands' start and
	 * (not the configuration's) its HOME, when the open asked for one
	 * other than the configuration's (record version 4); NULL: the
	 * configuration's (session_work_dir). */
	char *work_dir;
};
/* rec's work dir: its own, else the configuration's. */
const char *session_work_dir(const struct session_config *c,
			     const struct session_record *rec);
/* Two work dirs as records, pools and labels keep them (NULL: the
 * configuration's): the same? */
bool session_work_dir_same(const char *a, const char *b);
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

/* The shape of a record's workspace: "KEY/workspace" of this key, or
 * ".sbxcat-ws/ID" (ID as session_pool_id_valid: 26 of [a-z2-7]). */
bool session_workspace_rel_valid(const char *rel, const char *key);
bool session_pool_id_valid(const char *id);
/* Has ROOT/KEY/workspace anything in it (a reopen: its files come
 * back, so it takes no pooled container)?  One that cannot be read
 * counts as having files. */
bool session_workspace_has_files(struct session_root *r, const char *key);
/* Does rec name a pooled workspace (.sbxcat-ws/ID)? */
bool session_workspace_pooled(const struct session_record *rec);

/*
 * Open the workspace rec names (O_RDONLY | O_DIRECTORY, never through a
 * symlink; ROOT/KEY or ROOT/.sbxcat-ws checked as every other use of
 * them: root's, no access for group or others) and return its
 * descriptor; a key without a directory is "no session 'KEY'" (status 1,
 * ENOENT), a missing workspace status 3.
 */
int session_workspace_open(struct session_root *r,
			   const struct session_record *rec,
			   struct sbx_error **err);

/* "ROOT/" rec->workspace, newly allocated. */
char *session_workspace_path(const struct session_root *r,
			     const struct session_record *rec);

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
 * container (a 64-hex id or null), created and last_activity; version 2
 * adds workspace, version 3 (what is written) labels (an object of
 * strings, session-labels.h) and durability; at most 64 KiB; every
 * member is checked as when it was written, and key must name the
 * directory it is in.
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
/* session_record_touch, the stamp it leaves into *stamp (when not NULL). */
int session_record_stamp(struct session_root *r, const char *key,
			 long long *stamp, struct sbx_error **err);
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
/*
 * Reservations: an open that the count allowed holds a reservation from
 * the count (under the quota lock) until its record is written, so the
 * create and start run outside the lock while the slot stays taken.
 * session_reserve makes ROOT/.sbxcat-open/KEY (root's, 0600) naming the
 * tenant (NULL: a fill of the pool, KEY "pool-ID") and the pooled
 * container's ID the open claimed (or NULL) and holds its flock; call it with
 * the quota lock held.  A reservation of the key that someone holds is a
 * conflict ("session 'KEY' is being opened"); one nobody holds (its open died)
 * is replaced. session_reserve_release removes it and lets it go.
 *
 * session_reservations lists the reservations held now (with the quota
 * lock held), removing every stale one: a reservation left by a process
 * killed between the count and the start is released by the next count.
 */
struct session_reservation {
	int fd, dir_fd;
	char key[SESSION_KEY_MAX + 1];
};
void session_reservation_init(struct session_reservation *v);
int session_reserve(struct session_root *r, const char *key, const char *tenant,
		    const char *pool, struct session_reservation *v,
		    struct sbx_error **err);
void session_reserve_release(struct session_reservation *v);
struct session_held {
	char key[SESSION_KEY_MAX + 1];
	char *tenant; /* NULL: a fill of the pool's, or unreadable */
	char pool[SESSION_POOL_ID_LEN + 1]; /* the claimed container, or "" */
};
int session_reservations(struct session_root *r, struct session_held **v,
			 size_t *n, struct sbx_error **err);
void session_held_free(struct session_held *v, size_t n);

/*
 * Make ROOT/KEY (root's, 0700) when missing, checked as every use of it;
 * no workspace in it.
 */
int session_keydir_make(struct session_root *r, const char *key,
			struct sbx_error **err);
/*
 * flock(LOCK_EX) ROOT/KEY/open.lock (made as exec.lock is), which an open
 * holds from its first look at the key to its record, and a close from
 * before the quota lock to its end: two opens of one key take turns, and
 * the second adopts what the first made.  A lock won after a purge moved
 * ROOT/KEY away is refused (errnum ESTALE): make ROOT/KEY again and
 * retry.  Released with session_keydir_unlock.  Taken before the quota
 * lock, never while holding it (the reaper only tries it).
 */
int session_open_lock(struct session_root *r, const char *key,
		      struct sbx_error **err);
/* Is an open (or close) of key holding its open lock now?  Never waits:
 * for the reaper, which holds the quota lock. */
bool session_open_busy(struct session_root *r, const char *key);
/* ROOT/KEY/open.lock taken without waiting, with the quota lock held
 * (hibernation takes a session so): its descriptor (released with
 * session_keydir_unlock), or -1 when an open or close holds it, or it
 * cannot be opened. */
int session_open_trylock(struct session_root *r, const char *key);

/*
 * Hibernation's mark (docs/sessions.md, "Hibernation"): ROOT/KEY/
 * hibernated, root's, 0600, holding the Unix time it was made at, one
 * line, replaced atomically.  A session is hibernated when it has the
 * mark and its container exists, stopped (session_state_marked,
 * session-engine.h): a mark beside a live container (a crash between the
 * mark and the stop, or between a wake's start and its clear) is stale
 * and means nothing.  The mark is made and cleared under the session's
 * open lock (session_open_lock, or session_open_trylock by hibernation)
 * or, by the reaper, under the quota lock with no open of the key in
 * progress; read without a lock.
 *
 * session_hibernated: 1 (and *since, when not NULL, its time: 0 when it
 * does not read as one) when the mark is there, 0 when not (nor
 * ROOT/KEY), -1 when it cannot be looked at.  session_hibernate_clear
 * removes it; one already gone is done.
 */
int session_hibernated(struct session_root *r, const char *key,
		       long long *since, struct sbx_error **err);
int session_hibernate_mark(struct session_root *r, const char *key,
			   long long now, struct sbx_error **err);
int session_hibernate_clear(struct session_root *r, const char *key,
			    struct sbx_error **err);

/*
 * The warm pool on the host (docs/sessions.md): containers made and
 * started before any key asks, each with its workspace
 * ROOT/.sbxcat-ws/ID (the sandbox uid's, 0755) and, once it runs, its
 * entry ROOT/.sbxcat-pool/ID.json (root's, 0600: version, id, runtime,
 * image, container, created).  An open claims one by taking its entry
 * under the quota lock (session_pool_take removes it: a container is
 * claimed at most once); an entry that does not read is removed.
 */
struct session_pool_entry {
	char id[SESSION_POOL_ID_LEN + 1];
	char *runtime, *image, *container;
	char *work_dir; /* the container's, NULL: the configuration's */
	long long created;
};
void session_pool_entry_release(struct session_pool_entry *e);
/* A new ID from getrandom. */
void session_pool_new_id(char id[SESSION_POOL_ID_LEN + 1]);
/* Make ROOT/.sbxcat-ws/ID, the uid's (0755), empty. */
int session_pool_ws_make(struct session_root *r, unsigned long uid,
			 const char *id, struct sbx_error **err);
/* Is it still as made: empty, the uid's, 0755?  Else a conflict. */
int session_pool_ws_fresh(struct session_root *r, const char *id,
			  unsigned long uid, struct sbx_error **err);
/* Empty and remove it (never following a symlink or crossing a mount);
 * one already gone is done. */
int session_pool_ws_remove(struct session_root *r, const char *id,
			   struct sbx_error **err);
/* The IDs of ROOT/.sbxcat-ws, sorted (strv_free). */
int session_pool_ws_ids(struct session_root *r, char ***ids, size_t *n,
			struct sbx_error **err);
int session_pool_add(struct session_root *r, const struct session_pool_entry *e,
		     struct sbx_error **err);
int session_pool_list(struct session_root *r, struct session_pool_entry **v,
		      size_t *n, struct sbx_error **err);
void session_pool_list_free(struct session_pool_entry *v, size_t n);
/* Remove ID's entry (one gone is done). */
int session_pool_drop(struct session_root *r, const char *id,
		      struct sbx_error **err);
/* With the quota lock held: the oldest entry of runtime made from image
 * for work_dir (NULL: the configuration's) taken out of the pool into
 * *out (*found false when there is none); runtime NULL: any entry at
 * all, whatever its image and work dir. */
int session_pool_take(struct session_root *r, const char *runtime,
		      const char *image, const char *work_dir,
		      struct session_pool_entry *out, bool *found,
		      struct sbx_error **err);

/* Bytes used by the workspace rec names (st_blocks * 512, not following
 * symlinks, not crossing mounts); entries counted into *files. */
int session_workspace_size(struct session_root *r,
			   const struct session_record *rec,
			   unsigned long long *bytes, unsigned long long *files,
			   struct sbx_error **err);

#endif

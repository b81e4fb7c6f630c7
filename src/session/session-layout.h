/*
 * session-layout.h - the names below the workspace root and the helpers
 * the files of the session module share (session-config.c, session-key.c,
 * session-root.c, session-record.c, session-workspace.c, runs.c,
 * session-budget.c); private to
 * them, not part of the module's interface (session.h).
 *
 * Thread rule: as session.h: nothing here keeps state.
 */
#ifndef SBX_SESSION_LAYOUT_H
#define SBX_SESSION_LAYOUT_H

#include "basic/error.h"
#include "session/session.h"

struct strbuf;

/* The layout of session.h, by name. */
#define RECORD_NAME "session.json"
#define LOCK_NAME ".sbxcat.lock"
#define EXEC_LOCK_NAME "exec.lock"
#define WATCH_LOCK_NAME "watch.lock"
#define OPEN_LOCK_NAME "open.lock"
#define HIBERNATED_NAME "hibernated"
#define SECRET_NAME ".sbxcat-key-secret"
#define TRASH_NAME ".sbxcat-trash"
#define WORKSPACE_NAME "workspace"
#define POOL_WS_NAME ".sbxcat-ws"
#define OPEN_NAME ".sbxcat-open"
#define POOL_NAME ".sbxcat-pool"
#define POOL_ID_LEN SESSION_POOL_ID_LEN

/* s escaped for a message, cut to 80 bytes ("..." says so), in sb
 * (released first). */
const char *session_shown(struct strbuf *sb, const char *s);

/* Change the kind of an error just set (err may be NULL).  Returns -1. */
int session_set_kind(struct sbx_error **err, enum sbx_kind kind);

/* "no session 'KEY'": not found, errnum ENOENT.  Returns -1. */
int session_no_session(const char *key, struct sbx_error **err);

/*
 * ROOT/KEY, opened: a directory of root's with no access for group or
 * others (the sandbox must not reach the record), never through a
 * symlink.  A missing one (or a key that is not a key) is
 * session_no_session.  Returns the descriptor, or -1.
 */
int session_keydir_open(struct session_root *r, const char *key,
			struct sbx_error **err);

/*
 * ROOT/NAME, a directory of sbxcat's (root's, 0700, not a symlink),
 * made when missing when make: its descriptor, or -1.  A missing one
 * without make is errno ENOENT, status 3.
 */
int session_private_dir(struct session_root *r, const char *name, bool make,
			struct sbx_error **err);

/*
 * flock(fd, LOCK_EX), waiting for it; a cancel (r->cancel, session.h)
 * ends the wait with a cancelled error.  DIR/NAME is the file, for
 * messages.  fd stays open.
 */
int session_lock_wait(const struct session_root *r, int fd, const char *dir,
		      const char *name, struct sbx_error **err);

/*
 * The secret from the file open on fd (consumed), "what" naming it in
 * messages: a regular file (not a FIFO that would block), owned by root
 * or this user, with no access for group or others; its first line, not
 * empty, into c->secret.  No message carries any of its bytes.
 */
int session_secret_from_fd(struct session_config *c, int fd, const char *what,
			   struct sbx_error **err);

/*
 * The directory that holds rec's workspace (ROOT/KEY or ROOT/.sbxcat-ws),
 * opened and checked as every use of it, and the workspace's name in it
 * (*name, static or rec's).  Returns the descriptor, or -1.
 */
int session_ws_parent(struct session_root *r, const struct session_record *rec,
		      const char **name, struct sbx_error **err);

/*
 * Unmount DIR/name (pfd open on DIR) when it is a mount point of a disk
 * budget (session-budget.h: ext4 on a loop device whose backing file is
 * DIR/name.img), lazily when busy; not a mount point, or missing: done.
 * Any other mount there is an error, and left alone.
 */
int session_budget_unmount_at(int pfd, const char *dir, const char *name,
			      struct sbx_error **err);

#endif

/*
 * session-budget.h - a workspace's disk budget (docs/sessions.md, "Disk
 * budgets"): the kernels sbxcat runs on have no quota support, so a
 * budget is a file system of the workspace's own, a sparse ext4 image
 * beside the workspace (ROOT/KEY/workspace.img, ROOT/.sbxcat-ws/ID.img:
 * root's, 0600, outside every workspace) made by mkfs.ext4 at the
 * budget's size and inode count with no blocks reserved for root, on a
 * loop device of its own (LOOP_CTL_GET_FREE, LOOP_CONFIGURE with
 * LO_FLAGS_AUTOCLEAR: the device goes with the last unmount, or with the
 * process when it dies before the mount), mounted nodev,nosuid at the
 * workspace before its container is created.  mkfs.ext4 is run with
 * posix_spawn and a fixed argument vector and environment, never a shell.
 *
 * The budget lives as long as the workspace: a close that keeps the
 * workspace keeps its mount (its files are in it, and host-side file
 * operations on a closed session must see them, and stay bounded); a
 * purge, the reaper's delete and the pool's removals unmount (lazily when
 * busy), and the image goes with ROOT/KEY (or beside the pooled
 * workspace).  What a crash leaves, the reaper's pass clears
 * (session_budget_sweep and the trash: a mount in the trash, an image
 * beside no record, a loop device still attached to a file under ROOT).
 *
 * Thread rule: nothing here keeps state; calls on different workspaces
 * may run at once.
 */
#ifndef SBX_SESSION_BUDGET_H
#define SBX_SESSION_BUDGET_H

#include <stdbool.h>

#include "basic/size.h"

struct engine;
struct sbx_error;
struct session_record;
struct session_root;

/* The bounds of a budget, configured or asked for: below 16 MiB ext4's
 * journal and tables leave a sandbox next to nothing; 16 TiB is ext4's
 * own bound with 4 KiB blocks.  Inodes: 64 to 2^31. */
#define SESSION_BUDGET_MIN (16ull << 20)
#define SESSION_BUDGET_MAX (16ull << 40)
#define SESSION_INODES_MIN 64ull
#define SESSION_INODES_MAX (1ull << 31)
#define SESSION_MKFS_DEFAULT "/sbin/mkfs.ext4"

/* A budget's size as basic/size.h parses it: 16m to 16384g. */
extern const struct size_bounds session_budget_bounds;

/* With no SANDBOXD_WORKSPACE_QUOTA, the most a request may ask: a
 * hostile client's budget is bounded by something the host chose, and
 * 1g is small beside a host's disk (issue 28: "15t" was taken). */
#define SESSION_BUDGET_ASK_MAX (1ull << 30)

/* SANDBOXD_MAX_KEPT_BUDGETS_PER_TENANT's default: twice the default
 * per-tenant ceiling of sessions, so a tenant may close all its
 * sessions and open as many new ones before it must purge. */
#define SESSION_KEPT_BUDGETS_DEFAULT 20

/* A budget: bytes 0 is none (inodes then mean nothing); inodes 0 is
 * mkfs.ext4's own ratio. */
struct session_budget {
	unsigned long long bytes, inodes;
};

/* NULL when the values are within the bounds above, else a static
 * message. */
const char *session_budget_check(unsigned long long bytes,
				 unsigned long long inodes);

/*
 * Give the workspace rec names (made already) its budget: when it is a
 * mount point already, nothing; when its image is there (a host that
 * restarted), the image mounted again; else, with b->bytes, the image
 * made (under a temporary name, renamed once mkfs.ext4 succeeded), and
 * mounted (*made: the image was made now).  A workspace that has files
 * and no image (made before a budget was configured) is left as it is
 * and *unbudgeted set.  On any
 * failure nothing of this call stays: the mount undone, an image made
 * now removed.  mkfs: the program's path (SBXCAT_MKFS).
 */
int session_budget_make(struct session_root *r,
			const struct session_record *rec,
			const struct session_budget *b, const char *mkfs,
			unsigned long uid, bool *made, bool *unbudgeted,
			struct sbx_error **err);

/*
 * Does the running container (its id) see rec's budget at work_dir,
 * where it binds the workspace?  The engine binds the path in its own mount
 * namespace: when sbxcat runs in another (systemd's PrivateTmp=,
 * ProtectHome=, ProtectSystem= make one), the engine binds the empty
 * directory under the mount, bounded by nothing.  Refused (status 3)
 * then, saying so; a workspace without a budget, or a container with no
 * process, is done.
 */
int session_budget_seen(struct engine *e, struct session_root *r,
			const struct session_record *rec, const char *container,
			const char *work_dir, struct sbx_error **err);

/* Unmount rec's workspace when it is a budget's mount (lazily when
 * busy) and remove its image; none is done.  The directory stays. */
int session_budget_remove(struct session_root *r,
			  const struct session_record *rec,
			  struct sbx_error **err);

/* What statvfs says of a budgeted workspace, in constant time. */
struct session_usage {
	bool budget; /* false: no budget, the rest 0 */
	unsigned long long bytes_used, bytes_allowed;
	unsigned long long inodes_used, inodes_allowed;
	unsigned long long image_bytes; /* the image's apparent size */
};
/* The apparent size of rec's budget image into *bytes (0: it has none),
 * mounted or not. */
int session_budget_image_bytes(struct session_root *r,
			       const struct session_record *rec,
			       unsigned long long *bytes,
			       struct sbx_error **err);
/* Does key's workspace, a session of tenant's, keep a budget (its
 * image)?  Asked of closed sessions only (session_quota_count); what
 * cannot be read is not counted. */
bool session_budget_kept_by(struct session_root *r, const char *key,
			    const char *tenant);
int session_budget_usage(struct session_root *r,
			 const struct session_record *rec,
			 struct session_usage *u, struct sbx_error **err);

/*
 * The reaper's sweep, under the quota lock: every loop device attached
 * to a file below ROOT is let go (LOOP_CLR_FD: one that nothing holds is
 * detached now, one mounted is detached by its unmount), and every image
 * of ROOT/.sbxcat-ws without its workspace is removed.  *cleared counts
 * what was done.
 */
int session_budget_sweep(struct session_root *r, unsigned *cleared,
			 struct sbx_error **err);

/*
 * The images below ROOT (ROOT/KEY/workspace.img, ROOT/.sbxcat-ws/ID.img):
 * how many, their apparent sizes summed (what the budgets promise) and
 * the host's free bytes on ROOT's file system (statvfs, f_bavail).
 */
int session_budget_images(struct session_root *r, unsigned *n,
			  unsigned long long *apparent,
			  unsigned long long *host_free,
			  struct sbx_error **err);

#endif

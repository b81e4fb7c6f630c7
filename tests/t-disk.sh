#!/bin/sh
# t-disk.sh - a full disk (issue 16, item 3; docs/audit.md "A full disk",
# docs/workspace.md "Writes are the sandbox's"), for real: an ext4 of
# 64 MiB with a 5% root reserve on a loop device of this test's own,
# holding the workspace root and the audit's spool, sessions on the
# test-bed engine bind-mounting workspaces from it.
#
#   - The sandbox fills the disk by exec: it stops at the root reserve.
#   - Host-side fs write, edit and a write that makes directories are then
#     refused (ENOSPC, exit 3, saying so), nothing half-written, and the
#     reserve is intact (statvfs); another tenant's reads and exec still
#     run, each with its row in the spool.
#   - An exec that started while there was room, then saw the disk filled
#     completely by root (this test), still has its row: it lands in the
#     spool's reserve, allocated ahead of the spool's end.
#   - Below the spool's floor nothing runs, changes or is read: exec --
#     mv a b exits 125 and the mv did not happen; fs verbs and session
#     open exit 3, naming the spool directory, bytes free and the floor.
#   - With the reserve off, a row an exec could not write is counted in
#     lost.count (rewritten in place on the full disk): audit status says
#     "rows ever lost: 1", not 0.
#   - Adversarial: writes into a directory the sandbox made read-only are
#     refused (they are the sandbox's), reads of a file it made unreadable
#     still work; a floor that is not a number; the default floor (64 MiB)
#     on this small disk.
#
# Mounts: only the test's own, at $T/disk, unmounted (and its loop device
# detached) at exit after this deployment's containers are removed.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
PATH=$PATH:/usr/sbin:/sbin
for c in mkfs.ext4 dumpe2fs losetup mount umount pgrep; do
	command -v "$c" >/dev/null 2>&1 ||
		skip_all "$c is missing (apt-get install e2fsprogs mount procps)"
done
sb_init disktest tk
IMG=$T/disk.img MNT=$T/disk LOOP=""
disk_cleanup() {
	# The containers first: each one's bind mount keeps the disk busy.
	# shellcheck disable=SC2046
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP") \
		>/dev/null 2>&1
	if mountpoint -q "$MNT" 2>/dev/null; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	sb_cleanup
}
trap disk_cleanup EXIT
truncate -s 64M "$IMG" && mkfs.ext4 -F -q -m 5 "$IMG" ||
	bail_out "cannot make an ext4 image"
LOOP=$(losetup -f --show "$IMG") || skip_all "no loop device (losetup -f failed)"
mkdir "$MNT" && mount "$LOOP" "$MNT" || bail_out "cannot mount $LOOP"
DEVNAME=${LOOP##*/}
RBLOCKS=$(dumpe2fs -h "$LOOP" 2>/dev/null | awk -F: '/^Reserved block count/ { print $2 + 0 }')
KEPT=$(cat "/sys/fs/ext4/$DEVNAME/reserved_clusters" 2>/dev/null || echo 0)
diag "disk: $LOOP, root reserve $RBLOCKS blocks, ext4's own $KEPT"

# The workspace root and the spool on the disk: root's, 0755 and 0700.
ROOT=$MNT/root SPOOL=$MNT/spool
mkdir "$ROOT" && chmod 755 "$ROOT" || exit 1
SANDBOXD_WORKSPACE_ROOT=$ROOT SBXCAT_SPOOL_DIR=$SPOOL
# A floor below the root reserve (3.2 MiB here), above ext4's leftovers.
SBXCAT_SPOOL_MIN_FREE=1048576
export SANDBOXD_WORKSPACE_ROOT SBXCAT_SPOOL_DIR SBXCAT_SPOOL_MIN_FREE
unset SBXCAT_SPOOL_RESERVE SANDBOXD_MAX_WRITE_BYTES SANDBOXD_MAX_READ_BYTES

f() { sbx fs "$K" "$@"; }
ex() { sbx exec "$@" </dev/null; }
# Blocks of 1 KiB: free for root (statvfs's f_bfree less ext4's own), and
# free for everyone else (f_bavail).
rootfree() { echo $(($(stat -f -c %f "$MNT") - KEPT)); }
userfree() { stat -f -c %a "$MNT"; }
spooled() { wc -l <"$1/audit.jsonl" | tr -d ' '; }
lastop() { tail -n 1 "$1/audit.jsonl" | jq -r '.op + " " + .target'; }
# ahead FILE: bytes allocated past FILE's end.
ahead() { set -- $(stat -c '%b %B %s' "$1"); echo $(($1 * $2 - $3)); }
# wait_running MARK: until the exec's own sh -c, its last argument MARK,
# runs (seen from the host; not sbxcat, whose arguments hold MARK too),
# at most 30 s: the exec then is past audit_ready.
wait_running() {
	wr_i=0
	while ! pgrep -f "^sh -c .* $1\$" >/dev/null; do
		wr_i=$((wr_i + 1))
		[ $wr_i -gt 150 ] && return 1
		sleep 0.2
	done
}
# fill_as_root NAME: the disk filled completely, root reserve included.
# (In blocks of 64 KiB, then of 1 KiB for what a short last write left.)
fill_as_root() {
	dd if=/dev/zero of="$MNT/$1" bs=64k >/dev/null 2>&1
	dd if=/dev/zero of="$MNT/$1.tail" bs=1k >/dev/null 2>&1
	sync
}
unfill() { rm -f "$MNT/$1" "$MNT/$1.tail"; sync; }

open_s acme run disk-main
K=$key
is "$rc" 0 "session open, its workspace on the loop-mounted ext4"
open_s other run disk-other
K2=$key
[ -n "$K" ] && [ -n "$K2" ] || bail_out "session open failed: $(err)"
WS=$(ws "$K")
is "$(stat -c %m "$WS" 2>/dev/null || df --output=target "$WS" | tail -n 1)" "$MNT" \
	"the workspace is on the test's disk"

# -- With room: writes as the sandbox.
printf 'keep\n' >"$T/keep.in"
f write a.txt <"$T/keep.in"
is "$rc:$(stat -c %u:%g "$WS/a.txt")" "0:10001:10001" "fs write with room: exit 0, the sandbox's file"
ex "$K" -c 'cat a.txt >seen.txt && cat seen.txt'
is "$rc:$(out):$(cat "$WS/seen.txt")" "0:keep:keep" \
	"the engine sees the loop mount: what fs wrote, exec reads, and what exec wrote is on the disk"
ok "$([ "$(ahead "$SPOOL/audit.jsonl")" -ge 1048576 ] && echo 0 || echo 1)" \
	"the spool holds 1 MiB allocated ahead of its end ($(ahead "$SPOOL/audit.jsonl") bytes)"
is "$(stat -c %s "$SPOOL/lost.count"):$(cat "$SPOOL/lost.count")" "21:00000000000000000000" \
	"lost.count made while there is room: 21 bytes, 0"

ex "$K" -c 'mkdir ro && chmod 555 ro && echo s >secret && chmod 000 secret'
f write ro/x.txt <"$T/keep.in"
is "$rc:$([ -e "$WS/ro/x.txt" ] && echo made || echo none)" "1:none" \
	"fs write into a directory the sandbox made read-only: refused (exit 1), as its own write would be"
like "$(err)" "the sandbox may not write there" "... saying why"
f write ro/sub/y.txt <"$T/keep.in"
is "$rc:$([ -e "$WS/ro/sub" ] && echo made || echo none)" "1:none" "... and a directory is not made in it either"
f read secret
is "$rc" 0 "fs read of a file the sandbox made unreadable (0000): still read (reads are root's)"
f edit secret --old s --new t
is "$rc:$(stat -c %a:%u "$WS/secret")" "0:0:10001" "fs edit of it: done, its mode (0000) and owner kept"

# -- The sandbox fills the disk: it stops at the root reserve.
ex "$K" -c 'cat /dev/zero >fill; echo "status $?"; dd if=/dev/zero of=fill.tail bs=1k 2>/dev/null'
like "$(out)" "status [1-9]" "the sandbox fills the disk by exec until its writes fail"
sync
u0=$(userfree) r0=$(rootfree)
diag "after the sandbox's fill: $u0 blocks free for users, $r0 for root"
ok "$([ "$u0" -le 64 ] && echo 0 || echo 1)" "the sandbox used all it may ($u0 blocks left to users)"
ok "$([ "$r0" -ge $((RBLOCKS - 64)) ] && echo 0 || echo 1)" \
	"the root reserve is untouched by the sandbox ($r0 blocks free for root, reserve $RBLOCKS)"

# -- Host-side writes stop where the sandbox's own stop.
head -c 2097152 /dev/urandom >"$T/big"
f write big.bin <"$T/big"
sync
r1=$(rootfree)
is "$rc:$([ -e "$WS/big.bin" ] && echo made || echo none)" "3:none" \
	"fs write of 2 MiB on the full disk: refused (exit 3), no file"
like "$(err)" "no room left for the sandbox.*nothing was changed.*No space left on device" "... saying why (ENOSPC)"
is "$(find "$WS" -name '.sbxcat-*' | wc -l | tr -d ' ')" 0 "... no temporary file left behind"
ok "$([ "$r1" -ge $((r0 - 64)) ] && echo 0 || echo 1)" \
	"... and the root reserve is intact ($r0 -> $r1 blocks free for root)"
head -c 100000 /dev/zero | tr '\0' 'x' >"$T/new"
f edit a.txt --old keep --new "$(cat "$T/new")"
is "$rc:$(head -c 10 "$WS/a.txt")" "3:keep" "fs edit that grows a file: refused (exit 3), the file as it was"
f write d1/d2/d3/f.txt <"$T/big"
is "$rc:$([ -e "$WS/d1" ] && echo made || echo none)" "3:none" \
	"fs write that must make directories: refused, none of them left"
sbx fs "$K2" write y.txt <"$T/big"
is "$rc" 3 "another tenant's fs write is refused too (one file system; per-workspace budgets are a later issue)"
n0=$(spooled "$SPOOL")
sbx fs "$K2" ls
is "$rc" 0 "another tenant's fs ls still works"
ex "$K2" -- echo hello
is "$rc:$(out)" "0:hello" "another tenant's exec still runs"
ex "$K" -- true
is "$rc" 0 "the filler's own exec runs"
is "$(spooled "$SPOOL"):$(lastop "$SPOOL")" "$((n0 + 3)):execute true" \
	"... and every one of those has its row in the spool"
is "$(rootfree | awk -v r="$r0" '{ print ($1 >= r - 64) }')" 1 "the rows took nothing of the reserve"

# -- An exec that started with room, and the disk filled while it ran.
: >"$WS/hold"
n0=$(spooled "$SPOOL")
bounded exec "$K" -- sh -c 'while [ -e hold ]; do sleep 1; done; echo done' "wait-a-$sfx" \
	</dev/null >"$T/bg.out" 2>"$T/bg.err" &
bg=$!
if wait_running "wait-a-$sfx"; then
	fill_as_root rootfill
	diag "filled by root: $(rootfree) blocks free for root"
	rm -f "$WS/hold"
	wait "$bg"
	brc=$?
	is "$brc:$(cat "$T/bg.out")" "0:done" "an exec that started with room ends well after root filled the disk"
	[ "$brc" = 0 ] || diag "its stderr: $(cat "$T/bg.err")"
	is "$(spooled "$SPOOL"):$(lastop "$SPOOL" | cut -d' ' -f1)" "$((n0 + 1)):execute" \
		"... and its row is in the spool: it landed in the reserve allocated ahead of the spool's end"
else
	kill "$bg" 2>/dev/null
	ok 1 "the waiting exec was seen running"
	fill_as_root rootfill
fi

# -- Below the floor: nothing runs, changes or is read.
diag "now $(rootfree) blocks free for root; the floor is $SBXCAT_SPOOL_MIN_FREE bytes"
n0=$(spooled "$SPOOL")
ex "$K" -- mv a.txt b.txt
is "$rc:$([ -e "$WS/a.txt" ] && echo a)$([ -e "$WS/b.txt" ] && echo b)" "125:a" \
	"below the floor: exec -- mv a b exits 125 and the mv did not happen"
like "$(err)" "spool directory '$SPOOL' has [0-9]+ bytes free, under the floor of 1048576 bytes \(SBXCAT_SPOOL_MIN_FREE\)" \
	"... naming the spool directory, the bytes free and the floor"
f read a.txt
is "$rc:$(out)" "3:" "fs read: exit 3, nothing read"
like "$(err)" "under the floor of 1048576 bytes" "... the same message"
f ls
is "$rc" 3 "fs ls: exit 3"
f rm a.txt
is "$rc:$(cat "$WS/a.txt")" "3:keep" "fs rm: exit 3, the file kept"
ex "$K2" -- touch other.txt
is "$rc:$([ -e "$(ws "$K2")/other.txt" ] && echo ran || echo not-run)" "125:not-run" "another tenant's exec: 125, not run"
nk=$(ls "$ROOT" | wc -l)
open_s acme run disk-never
is "$rc:$(ls "$ROOT" | wc -l)" "3:$nk" "session open: exit 3, no session made"
is "$(spooled "$SPOOL")" "$n0" "none of the refused operations wrote a row (none ran)"
sbx audit status
like "$(out)" "BELOW, operations refused" "audit status says the spool is below its floor"
like "$(out)" "rows ever lost: 0" "... and no row was lost"
sbx audit status --json
is "$(jq -c '[.spool.min_free, .spool.reserve, (.spool.free < .spool.min_free), .spool.reserved >= 1000000, .lost]' "$T/out")" \
	"[1048576,1048576,true,true,0]" "audit status --json: free, floor, reserve, reserved, lost"

# -- Adversarial: the floor's configuration.
SBXCAT_SPOOL_MIN_FREE=12x sbx fs "$K" ls
is "$rc" 2 "SBXCAT_SPOOL_MIN_FREE=12x: a usage error (exit 2)"
like "$(err)" "SBXCAT_SPOOL_MIN_FREE '12x': expected a whole number of bytes" "... saying so"
unfill rootfill
SBXCAT_SPOOL_MIN_FREE= sbx fs "$K" ls
is "$rc" 3 "the default floor (64 MiB) on this 64 MiB disk: refused"
like "$(err)" "under the floor of 67108864 bytes" "... naming the default"
f ls
is "$rc" 0 "room again (root's fill removed): fs ls works"

# -- The reserve off: a row the full disk refused is counted.
SP2=$MNT/spool2
: >"$WS/hold"
SBXCAT_SPOOL_DIR=$SP2 SBXCAT_SPOOL_RESERVE=0 bounded exec "$K" -- \
	sh -c 'while [ -e hold ]; do sleep 1; done' "wait-b-$sfx" \
	</dev/null >"$T/bg.out" 2>"$T/bg.err" &
bg=$!
if wait_running "wait-b-$sfx"; then
	ino=$(stat -c %i "$SP2/lost.count")
	fill_as_root rootfill2
	rm -f "$WS/hold"
	wait "$bg"
	brc=$?
	is "$brc" 125 "reserve off, disk filled during the exec: the row cannot be written, exit 125"
	diag "its stderr: $(cat "$T/bg.err")"
	like "$(grep -v '^hint' "$T/bg.err")" "audit record could not be written" "... saying so"
	SBXCAT_SPOOL_DIR=$SP2 sbx audit status
	like "$(out)" "rows ever lost: 1" "audit status counts the lost row: rows ever lost: 1"
	is "$(cat "$SP2/lost.count"):$(stat -c %i:%s "$SP2/lost.count")" "00000000000000000001:$ino:21" \
		"... counted in lost.count, rewritten in place (same inode, 21 bytes) on the full disk"
	unfill rootfill2
	SBXCAT_SPOOL_DIR=$SP2 sbx audit status --json
	is "$(jq .lost "$T/out")" 1 "... and still 1 once there is room again"
else
	kill "$bg" 2>/dev/null
	ok 1 "the second waiting exec was seen running"
fi

sb_done

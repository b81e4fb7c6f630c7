#!/bin/sh
# t-budget.sh - disk budgets per workspace (issue 20; docs/sessions.md,
# "Disk budgets"), for real: sessions on the test-bed engine whose
# workspaces are ext4 images of their own on loop devices.
#
#   - A sandbox filling its budget with dd stops at it (No space left on
#     device, the file about the budget's size); another session on the
#     same root still writes.
#   - fs write past the budget is refused, naming the budget, and changes
#     nothing (the old file intact, no temporary left).
#   - Inodes stop near their budget; a deleted file held open still
#     counts; session show and ls --json give bytes and inodes used and
#     allowed.
#   - The workspace's own root, a mount point now, still works for fs
#     (write, ls, rm) and for the size walk.
#   - close keeps the budget (files and mount); close --purge leaves no
#     mount (/proc/self/mountinfo), no loop device (/sys/block/loop*) and
#     no image.
#   - A crash's leftovers (a mount and an image with no record, a loop
#     device attached by hand to an image under ROOT) are cleaned by reap.
#   - SBXCAT_MKFS=/nonexistent: open refused, saying why, nothing left.
#   - sbxcat in a mount namespace the engine does not share: the
#     container would not see the budget; open refused, nothing left.
#   - Per-session budgets: bounds, and never over the configured one.
#
# Mounts and loop devices: only those of files under this test's $ROOT are
# ever unmounted or detached (at exit too).
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
for c in mkfs.ext4 losetup mountpoint; do
	command -v "$c" >/dev/null 2>&1 ||
		skip_all "$c is missing (apt-get install e2fsprogs mount)"
done
[ -e /dev/loop-control ] || skip_all "no /dev/loop-control: no loop device can be had"
# A loop device must be attachable here (a container may forbid it).
probe=$(mktemp) && truncate -s 1M "$probe"
if ! pl=$(losetup -f --show "$probe" 2>/dev/null); then
	rm -f "$probe"
	skip_all "no loop device can be attached here (losetup -f failed)"
fi
losetup -d "$pl"
rm -f "$probe"

sb_init budgettest tq

# Everything mounted below $T, unmounted; every loop device of a file
# below $T, detached: the test's own, never another's.
mine_mounts() {
	awk -v t="$T/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo
}
mine_loops() {
	for b in /sys/block/loop*/loop/backing_file; do
		[ -r "$b" ] || continue
		case "$(cat "$b" 2>/dev/null)" in
		"$T"/*) d=${b%/loop/backing_file}; echo "/dev/${d##*/}" ;;
		esac
	done
}
budget_cleanup() {
	# shellcheck disable=SC2046
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP") \
		>/dev/null 2>&1
	for m in $(mine_mounts | sort -r); do umount -l "$m" 2>/dev/null; done
	for l in $(mine_loops); do losetup -d "$l" 2>/dev/null; done
	sb_cleanup
}
trap budget_cleanup EXIT

f() { sbx fs "$K" "$@"; }
ex() { sbx exec "$@" </dev/null; }
nmounts() { mine_mounts | wc -l | tr -d ' '; }
# nloops [N]: how many loop devices of the test's files are attached,
# once at most N (0) are or 10 s have passed: a loop device goes with
# the last user of its file system, and a container just removed may hold
# it a moment longer (its mount namespace is torn down after the engine
# answers). What holds one past that is said.
nloops() {
	nl_i=0
	while [ "$(mine_loops | wc -l)" -gt "${1:-0}" ] && [ $nl_i -lt 100 ]; do
		sleep 0.1
		nl_i=$((nl_i + 1))
	done
	if [ $nl_i -ge 100 ]; then
		for l in $(mine_loops); do
			mm=$(cat "/sys/block/${l#/dev/}/dev")
			diag "$l: $(cat "/sys/block/${l#/dev/}/loop/backing_file"), autoclear $(cat "/sys/block/${l#/dev/}/loop/autoclear")"
			for pp in /proc/[0-9]*; do
				grep -q " $mm " "$pp/mountinfo" 2>/dev/null &&
					diag "  mounted in the namespace of ${pp#/proc/} ($(cat "$pp/comm"))"
			done
		done
	fi
	mine_loops | wc -l | tr -d ' '
}
nimages() { find "$ROOT" -name '*.img*' 2>/dev/null | wc -l | tr -d ' '; }

SANDBOXD_WORKSPACE_QUOTA=32m SANDBOXD_WORKSPACE_INODES=2048
export SANDBOXD_WORKSPACE_QUOTA SANDBOXD_WORKSPACE_INODES

# -- Open: the workspace is a mount of its own image.
open_s acme run budget-a
K=$key
[ -n "$K" ] || bail_out "session open with a budget failed: $(err)"
WS=$(ws "$K")
ok "$(mountpoint -q "$WS" && echo 0 || echo 1)" "the workspace is a mount point"
is "$(stat -c '%U %a' "$ROOT/$K/workspace.img")" "root 600" \
	"its image ROOT/KEY/workspace.img is root's, 0600, outside the workspace"
is "$(stat -c '%u:%g %a' "$WS")" "10001:10001 755" "the mount's root is the sandbox's, 0755"
is "$(find "$WS" -mindepth 1 | wc -l | tr -d ' ')" "0" "a new workspace is empty (no lost+found)"
opts=$(awk -v m="$WS" '$5 == m { print $6 }' /proc/self/mountinfo)
like "$opts" "nosuid" "mounted nosuid"
like "$opts" "nodev" "mounted nodev"
is "$(stat -c %s "$ROOT/$K/workspace.img")" "33554432" "the image's apparent size is the budget"
ok "$([ "$(($(stat -c %b "$ROOT/$K/workspace.img") * 512))" -lt 8388608 ] && echo 0 || echo 1)" \
	"the image is sparse"

sbx session show "$K" --json
is "$rc:$(jq -r .disk.budget_bytes "$T/out")" "0:33554432" "session show: the budget's bytes"
is "$(jq -r '.disk.bytes_allowed > 24000000 and .disk.bytes_allowed <= 33554432' "$T/out")" "true" \
	"session show: bytes allowed, what ext4 leaves of it ($(jq -r .disk.bytes_allowed "$T/out"))"
is "$(jq -r '.disk.inodes_allowed >= 2048 and .disk.inodes_allowed < 4096' "$T/out")" "true" \
	"session show: inodes allowed ($(jq -r .disk.inodes_allowed "$T/out"))"

# -- The workspace's own root still works for fs and the size walk.
printf 'hello\n' >"$T/h.in"
f write h.txt <"$T/h.in"
is "$rc:$(cat "$WS/h.txt")" "0:hello" "fs write into the budget's root"
f ls .
like "$(out)" "h.txt" "fs ls of the workspace's root"
f rm h.txt
is "$rc:$([ -e "$WS/h.txt" ] && echo there || echo gone)" "0:gone" "fs rm in the budget's root"
sbx session ls --json
is "$rc:$(jq -r --arg k "$K" '.[] | select(.key == $k) | .disk.bytes_allowed > 0' "$T/out")" "0:true" \
	"session ls --json carries the budget"

# -- The sandbox fills it: dd stops at the budget.
ex "$K" -c 'dd if=/dev/zero of=big bs=1M count=64 2>err.txt; echo $?; cat err.txt'
like "$(out)" "No space left on device" "dd in the container past the budget: No space left on device"
sz=$(stat -c %s "$WS/big")
ok "$([ "$sz" -gt 20000000 ] && [ "$sz" -le 33554432 ] && echo 0 || echo 1)" \
	"the file stops near the budget ($sz bytes of 32 MiB)"

# -- Another session on the same root still writes.
open_s acme run budget-b
K2=$key
ex "$K2" -c 'dd if=/dev/zero of=x bs=1M count=4 2>/dev/null && echo wrote'
is "$rc:$(out)" "0:wrote" "another session on the same root still writes"

# -- fs write past the budget: refused, naming it, nothing changed.
printf 'old\n' >"$T/old.in"
ex "$K" -c 'rm big; dd if=/dev/zero of=fill bs=1M count=64 2>/dev/null; echo old > keep.txt; true'
head -c 4194304 /dev/zero >"$T/four.in"
f write keep.txt <"$T/four.in"
is "$rc" 3 "fs write past the budget: refused (exit 3)"
like "$(err)" "disk budget" "... the message names the budget"
is "$(cat "$WS/keep.txt")" "old" "... the old file is intact"
is "$(find "$WS" -name '.sbxcat-*' | wc -l | tr -d ' ')" "0" "... no temporary file left"
f edit keep.txt --old old --new "$(head -c 100000 /dev/zero | tr '\0' x)"
like "$rc:$(err)" "^3:.*disk budget" "fs edit past the budget: refused (exit 3), naming the budget"
is "$(cat "$WS/keep.txt")" "old" "... the file unchanged"

# -- Deleted but open: still counted.
ex "$K" -c 'rm -f fill; sync'
sbx session show "$K" --json
before=$(jq -r .disk.bytes_used "$T/out")
ex "$K" -c 'dd if=/dev/zero of=held bs=1M count=8 2>/dev/null; (exec 3<held; rm held; sleep 30) >/dev/null 2>&1 & sleep 0.5; sync'
sbx session show "$K" --json
after=$(jq -r .disk.bytes_used "$T/out")
ok "$([ $((after - before)) -gt 7000000 ] && echo 0 || echo 1)" \
	"a deleted file held open still counts ($before -> $after bytes used)"
[ "$(state "$K")" = running ] ||
	diag "the session's container is not running: $(insp "$K" '{{json .State}}')"

# -- Inodes stop near their budget.
ex "$K" -c 'i=0; while [ $i -lt 5000 ]; do echo -n >f$i 2>/dev/null || break; i=$((i+1)); done; echo $i'
n=$(out)
[ -n "$n" ] || { diag "exit $rc: $(err)"; n=0; }
ok "$([ "$n" -ge 1500 ] && [ "$n" -le 4096 ] && echo 0 || echo 1)" \
	"inodes stop near their budget of 2048 ($n files made)"
f write deep/er/x.txt <"$T/h.in"
like "$rc:$(err)" "^3:.*disk budget" "fs write that makes directories with no inode left: refused (exit 3), naming the budget"
is "$([ -e "$WS/deep" ] && echo made || echo none)" "none" "... no directory of it left"
ex "$K" -c 'rm -f f*'

# -- close keeps it; close --purge leaves nothing.
sbx session close "$K"
is "$rc:$(mountpoint -q "$WS" && echo mounted):$(cat "$WS/keep.txt")" "0:mounted:old" \
	"close keeps the workspace, its files and its budget"
open_s acme run budget-a
is "$rc:$key:$(cat "$WS/keep.txt")" "0:$K:old" "a reopen finds its files in the budget"
open_s acme run budget-a --disk-quota 16m
is "$rc" 1 "a reopen asking another disk budget is refused (exit 1), never silently ignored"
like "$(err)" "has a disk budget of 33554432 bytes, not 16777216; close it with --purge" "... saying both"
open_s acme run budget-a --disk-quota 32m
is "$rc:$key" "0:$K" "a reopen asking the budget it has is taken"
sbx session close "$K" --purge
is "$rc" 0 "close --purge"
is "$(awk -v m="$WS" '$5 == m' /proc/self/mountinfo | wc -l | tr -d ' ')" 0 "... no mount left at the workspace"
is "$(nloops 1)" 1 "... no loop device left but the other session's"
is "$([ -e "$ROOT/$K" ] && echo there || echo gone):$(find "$ROOT" -name 'workspace.img' | wc -l | tr -d ' ')" \
	"gone:1" "... no image left but the other session's"
sbx session close "$K2" --purge
is "$rc:$(nmounts):$(nloops):$(nimages)" "0:0:0:0" "both purged: no mount, no loop device, no image"

# -- an ephemeral session's budget goes with it: at close, and when the
# reaper deletes it idle.
open_s acme run budget-e --durability ephemeral
KE=$key
sbx exec "$KE" -- sh -c 'echo x >e.txt'
sbx session close "$KE"
is "$rc:$([ -e "$ROOT/$KE" ] && echo there || echo gone)" "0:gone" "an ephemeral budgeted session closed: its directory gone"
is "$(nmounts):$(nloops):$(nimages)" "0:0:0" "... no mount, no loop device, no image left"
open_s acme run budget-f --durability ephemeral
KF=$key
N=$(date +%s)
sb_stamp "$KF" $((N - 100000))
SANDBOXD_IDLE_TIMEOUT=60 sbx reap --now "$N"
is "$rc:$([ -e "$ROOT/$KF" ] && echo there || echo gone)" "0:gone" "an ephemeral budgeted session reaped idle: its directory gone"
is "$(nmounts):$(nloops):$(nimages)" "0:0:0" "... no mount, no loop device, no image left"

# -- mkfs missing: refused, nothing left.
SBXCAT_MKFS=/nonexistent open_s acme run budget-c
is "$rc" 3 "SBXCAT_MKFS=/nonexistent: open refused (exit 3)"
like "$(err)" "cannot run '/nonexistent' to make the disk budget" "... saying why"
is "$(nmounts):$(nloops):$(nimages):$(ndep)" "0:0:0:0" "... no mount, loop device, image or container left"

# -- sbxcat in a mount namespace of its own (systemd's PrivateTmp= makes
# one): the engine would bind the directory under the mount, so the open
# is refused, and nothing is left.
if unshare -m --propagation slave true 2>/dev/null; then
	unshare -m --propagation slave timeout -s KILL 60 "$S" -C "$CAT" session open \
		--tenant acme --scope run --subject budget-ns --runtime "$RA" >"$T/out" 2>"$T/err"
	rc=$?
	is "$rc" 3 "open from a mount namespace the engine does not share: refused (exit 3)"
	like "$(err)" "does not see the disk budget" "... saying why"
	sleep 0.5
	is "$(nmounts):$(nloops):$(nimages):$(ndep)" "0:0:0:0" "... no mount, loop device, image or container left"
else
	skip "unshare -m is not allowed here" "open from a mount namespace of its own"
fi

# -- A mount at a workspace that is not a budget's (an ext4 of someone
# else's, its image outside ROOT) is never unmounted: the purge stops.
SANDBOXD_WORKSPACE_QUOTA= SANDBOXD_WORKSPACE_INODES= open_s acme run budget-other
KO=$key
truncate -s 16M "$T/other.img" && mkfs.ext4 -F -q "$T/other.img" &&
	LOOPO=$(losetup -f --show "$T/other.img") && mount "$LOOPO" "$(ws "$KO")" ||
	bail_out "cannot mount an ext4 of the test's own"
sbx session close "$KO" --purge
like "$rc:$(err)" "^3:.*is a mount point that is not a disk budget's; left alone" \
	"purge of a workspace with another's ext4 mounted on it: stops, saying so"
is "$(awk -v k="/$KO." 'index($5, k) && index($5, "/workspace")' /proc/self/mountinfo | wc -l | tr -d ' ')" 1 \
	"... and that mount is left alone"
umount "$(awk -v k="/$KO." 'index($5, k) && index($5, "/workspace") { print $5 }' /proc/self/mountinfo)"
losetup -d "$LOOPO"
sbx reap
is "$rc:$(ls "$ROOT/.sbxcat-trash" 2>/dev/null | wc -l | tr -d ' ')" "0:0" "unmounted, the next reap finishes the purge"

# -- Per-session budgets.
open_s acme run budget-d --disk-quota 64m
is "$rc" 2 "--disk-quota over SANDBOXD_WORKSPACE_QUOTA: refused (exit 2)"
like "$(err)" "over SANDBOXD_WORKSPACE_QUOTA" "... saying so"
open_s acme run budget-d --disk-quota 1m
is "$rc" 2 "--disk-quota 1m: under the bound, refused"
open_s acme run budget-d --disk-inodes 99999999999
is "$rc" 2 "--disk-inodes over the bound: refused"
open_s acme run budget-d --disk-quota 20m --disk-inodes 512 --json
K3=$key
sbx session show "$K3" --json
is "$rc:$(jq -r '.disk.bytes_allowed <= 20971520 and .disk.inodes_allowed < 1024' "$T/out")" "0:true" \
	"--disk-quota 20m --disk-inodes 512: the session's own budget"

# -- A crash's leftovers: cleaned by reap.
# A killed open: the mount and image stay, no record.
sbx session close "$K3"
rm "$ROOT/$K3/session.json"
cp --sparse=always "$ROOT/$K3/workspace.img" "$ROOT/$K3/stray.img" 2>/dev/null
LOOPH=$(losetup -f --show "$ROOT/$K3/stray.img")
diag "by hand: $LOOPH on $ROOT/$K3/stray.img"
# An open killed during mkfs.ext4: its temporary image; and a pooled
# workspace's, its workspace gone.
: >"$ROOT/$K3/workspace.img.tmp99999"
mkdir -p "$ROOT/.sbxcat-ws" && chmod 700 "$ROOT/.sbxcat-ws"
FAKE=abcdefghijklmnopqrstuvwxyz
: >"$ROOT/.sbxcat-ws/$FAKE.img" && : >"$ROOT/.sbxcat-ws/$FAKE.img.tmp4242"
sbx reap
is "$rc" 0 "reap"
is "$(ls "$ROOT/$K3" "$ROOT/.sbxcat-ws" | grep -c 'img')" 1 \
	"reap: a killed open's temporary image removed, and a pooled one's without its workspace (only stray.img, not sbxcat's name, is left)"
is "$(nmounts):$(nloops):$([ -e "$ROOT/$K3/workspace.img" ] && echo img || echo none)" \
	"0:0:none" "reap: the mount of a workspace without a record undone, its image removed, the loop attached by hand detached"
rm -f "$ROOT/$K3/stray.img"

# An open killed for real while mkfs.ext4 runs (a stand-in that waits):
# its temporary image is left, with no record; reap removes it.
cat >"$T/slowmkfs" <<'SH'
#!/bin/sh
echo $$ >"$0.pid"
exec sleep 60
SH
chmod 755 "$T/slowmkfs"
SBXCAT_MKFS=$T/slowmkfs "$S" -C "$CAT" session open --tenant acme --scope run \
	--subject budget-killed --runtime "$RA" >/dev/null 2>&1 &
OPID=$!
i=0
while [ ! -s "$T/slowmkfs.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -KILL "$OPID"
wait "$OPID" 2>/dev/null
[ -s "$T/slowmkfs.pid" ] && kill -KILL "$(cat "$T/slowmkfs.pid")" 2>/dev/null
is "$(find "$ROOT" -name 'workspace.img.tmp*' | wc -l | tr -d ' ')" 1 \
	"an open killed during mkfs.ext4 leaves its temporary image"
sbx reap
is "$rc:$(nmounts):$(nloops):$(nimages)" "0:0:0:0" "reap removes it: no mount, loop device or image"

# A purge killed between the trash's rename and its emptying: a mount in
# the trash.
SBXCAT_MKFS= open_s acme run budget-e
K4=$key
tb_docker rm -f "$(ctr "$K4")" >/dev/null 2>&1
mkdir -p "$ROOT/.sbxcat-trash" && chmod 700 "$ROOT/.sbxcat-trash"
mv "$ROOT/$K4" "$ROOT/.sbxcat-trash/$K4.0000000000000000"
is "$(nmounts)" 1 "a mount left in the trash (a purge killed half-way)"
sbx reap
is "$rc:$(nmounts):$(nloops):$(nimages)" "0:0:0:0" "reap: the trash's mount undone, its loop device gone, its image removed"

# -- A host that restarted: the image is there, its mount is not.
open_s acme run budget-f
K5=$key
W5=$(ws "$K5")
printf 'kept\n' >"$T/k.in"
sbx fs "$K5" write k.txt <"$T/k.in"
tb_docker rm -f "$(ctr "$K5")" >/dev/null 2>&1
umount "$W5"
sbx fs "$K5" read k.txt
like "$rc:$(err)" "^3:.*disk budget .* is not mounted" \
	"fs on a workspace whose budget is not mounted: refused (exit 3), nothing written past it"
open_s acme run budget-f
sbx fs "$K5" read k.txt
is "$rc:$(cat "$W5/k.txt"):$(mountpoint -q "$W5" && echo mounted)" "0:kept:mounted" \
	"a reopen mounts the image again: the files are back"
sbx session close "$K5" --purge

# -- The warm pool makes its workspaces with the default budget; a
# claimed one keeps it, and its purge leaves nothing.
SBXCAT_WARM_POOL=$RA=1 sbx reap
PID1=$(ls "$ROOT/.sbxcat-ws" 2>/dev/null | grep -v '\.img$' | head -n 1)
is "$rc:$([ -n "$PID1" ] && mountpoint -q "$ROOT/.sbxcat-ws/$PID1" && echo mounted)" "0:mounted" \
	"a pooled workspace is a budget's mount"
is "$(stat -c '%U %a %s' "$ROOT/.sbxcat-ws/$PID1.img" 2>/dev/null)" "root 600 33554432" \
	"... its image beside it, root's, 0600, the default budget"
SBXCAT_WARM_POOL=$RA=1 open_s acme run budget-g --json
K6=$key
is "$rc:$(jq -r .outcome "$T/out")" "0:claimed" "an open claims the pooled container"
sbx session show "$K6" --json
is "$(jq -r .disk.budget_bytes "$T/out")" 33554432 "... its budget is the pool's"
sbx session close "$K6" --purge
is "$rc:$([ -e "$ROOT/.sbxcat-ws/$PID1" ] || [ -e "$ROOT/.sbxcat-ws/$PID1.img" ] && echo left)" "0:" \
	"its purge removes the pooled workspace and its image"
# shellcheck disable=SC2046
tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP") >/dev/null 2>&1
SBXCAT_WARM_POOL= sbx reap
rm -f "$ROOT"/.sbxcat-pool/*.json
SBXCAT_WARM_POOL= sbx reap
is "$(nmounts):$(nloops):$(nimages)" "0:0:0" "the pool's leftovers swept: no mount, loop device or image"

# -- What a budget costs the host up front (issue 28): the image's blocks
# as the kernel counts them (st_blocks), just after the open.
img_kib() { echo $(($(stat -c %b "$ROOT/$1/workspace.img") / 2)); }
SANDBOXD_WORKSPACE_QUOTA=16g open_s acme run budget-cost16
K16=$key
is "$rc" 0 "a budget of 16g opens"
c16=$(img_kib "$K16")
ok $((c16 > 8192)) "... its image holds ${c16} KiB of the host's disk (at most 8 MiB)"
SANDBOXD_WORKSPACE_QUOTA=16383g open_s acme run budget-costmax
KMAX=$key
if [ "$rc" -eq 0 ]; then
	cmax=$(img_kib "$KMAX")
	ok $((cmax > 65536)) "a budget of 16383g holds ${cmax} KiB of the host's disk (at most 64 MiB)"
	sbx session close "$KMAX" --purge
else
	skip "the root's file system holds no file of 16383g ($(err))" "the largest budget's cost"
fi
sbx session close "$K16" --purge
is "$rc" 0 "... purged"

# -- No ceiling configured: what an open may ask is bounded (1g).
SANDBOXD_WORKSPACE_QUOTA= SANDBOXD_WORKSPACE_INODES= open_s acme run budget-noceil --disk-quota 15360g
is "$rc" 2 "no SANDBOXD_WORKSPACE_QUOTA: a budget of 15360g is refused (exit 2)"
like "$(err)" "over 1g, the most an open may ask while SANDBOXD_WORKSPACE_QUOTA is unset" "... saying why"
SANDBOXD_WORKSPACE_QUOTA= SANDBOXD_WORKSPACE_INODES= open_s acme run budget-noceil --disk-quota 1025m
is "$rc" 2 "... and one of 1025m"
SANDBOXD_WORKSPACE_QUOTA= SANDBOXD_WORKSPACE_INODES= open_s acme run budget-noceil --disk-quota 1t
like "$rc:$(err)" "^2:.*'1t' is not a size" "a size outside the one grammar ('1t') is refused"
is "$(nimages)" 0 "... no image made for any of them"

# -- Closed workspaces that keep a budget count against a limit of their
# own per tenant (SANDBOXD_MAX_KEPT_BUDGETS_PER_TENANT).
kq() { SANDBOXD_WORKSPACE_QUOTA= SANDBOXD_WORKSPACE_INODES= SANDBOXD_MAX_KEPT_BUDGETS_PER_TENANT=2 "$@"; }
kq open_s kq run kept-1 --disk-quota 16m
KK1=$key
kq sbx session close "$KK1"
kq open_s kq run kept-2 --disk-quota 16m
KK2=$key
kq sbx session close "$KK2"
is "$(find "$ROOT/$KK1" "$ROOT/$KK2" -name workspace.img | wc -l | tr -d ' ')" 2 \
	"two closed sessions keep their budgets"
kq open_s kq run kept-3 --disk-quota 16m
is "$rc" 1 "a third budget while two are kept: refused (exit 1)"
like "$(err)" "tenant 'kq' keeps 2 of 2 closed workspaces with a disk budget" "... saying so"
kq open_s kq run kept-3
is "$rc" 0 "an open without a budget is not refused"
kq sbx session close "$key" --purge
kq open_s other run kept-x --disk-quota 16m
is "$rc" 0 "another tenant's budget is not refused"
kq sbx session close "$key" --purge
kq open_s kq run kept-1 --disk-quota 16m
is "$rc" 0 "reopening a kept budget makes none: not refused"
kq sbx session close "$KK1"
kq sbx session close "$KK2" --purge
kq open_s kq run kept-3 --disk-quota 16m
is "$rc" 0 "a purge frees its place: the next budget opens"
kq sbx session close "$key" --purge
kq sbx session close "$KK1" --purge

# -- The service's wire: disk_quota and disk_inodes at open, and usage.
TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SOCK=$T/serve.sock
SANDBOXD_TOKEN=$TOKEN "$S" -C "$CAT" serve --listen "unix:$SOCK" 2>>"$T/log" &
SPID=$!
sb_serve_wait "$SOCK"
sb_wire POST /sessions "{\"session_id\": \"wq-$sfx\", \"runtime\": \"$RSMALL\", \"disk_quota\": \"20m\", \"disk_inodes\": 512}"
is "$st" 200 "POST /sessions with disk_quota and disk_inodes"
sb_wire GET "/sessions/wq-$sfx?usage=true"
is "$st:$(jq -r '.usage.disk_limit_bytes <= 20971520 and .usage.disk_limit_inodes < 1024 and .usage.disk_bytes >= 0' "$T/w")" \
	"200:true" "?usage=true gives the disk's bytes and inodes, used and allowed"
sb_wire POST /sessions "{\"session_id\": \"wq-$sfx\", \"runtime\": \"$RSMALL\", \"reuse\": true, \"disk_quota\": \"24m\"}"
is "$st:$(jq -r .detail "$T/w" | grep -c 'has a disk budget of 20971520 bytes, not 25165824')" "409:1" \
	"a reuse asking another disk_quota: 409, saying both"
is "$(jq -r .detail "$T/w")" \
	"Session wq-$sfx has a disk budget of 20971520 bytes, not 25165824. Close it with purge to change it." \
	"... in the wire's words, from the refusal's numbers: the session's id, never its key"
sb_wire POST /sessions "{\"session_id\": \"wr-$sfx\", \"runtime\": \"$RSMALL\", \"disk_quota\": \"1t\"}"
is "$st" 422 "disk_quota not a size: 422"
sb_wire POST /sessions "{\"session_id\": \"wr-$sfx\", \"runtime\": \"$RSMALL\", \"disk_quota\": \"64m\"}"
is "$st" 422 "disk_quota over the configured budget: 422"
sb_wire POST /sessions "{\"session_id\": \"ws-$sfx\", \"runtime\": \"$RSMALL\", \"disk_inodes\": \"x\"}"
is "$st" 422 "disk_inodes not a number: 422"
sb_wire DELETE "/sessions/wq-$sfx"
sb_serve_stop

# -- reap --report: the budgets against the host's free space.
open_s acme run budget-h
KH=$key
sbx reap --report --json
is "$rc:$(jq -r --arg k "$KH" '.[] | select(.key == $k) | .disk.bytes_allowed > 0 and .bytes < 33554432' "$T/out")" "0:true" \
	"reap --report --json: a budgeted workspace's numbers are its file system's"
like "$(err)" "disk budgets: [0-9]+ images? promise [0-9]+ bytes; the host has [0-9]+ bytes free$" \
	"reap --report: the images' apparent size against the host's free space"
# A budget bigger than the host's free space (sparse: made at once).
big=$(($(stat -f -c '%a' "$ROOT") * $(stat -f -c '%S' "$ROOT") / 1073741824 * 2 + 2))g
SANDBOXD_WORKSPACE_QUOTA=$big open_s acme run budget-i
is "$rc" 0 "a budget of $big, more than the host has free: made (sparse)"
sbx reap --report
like "$(err)" "overcommitted" "reap --report says the budgets overcommit the disk"

sb_done

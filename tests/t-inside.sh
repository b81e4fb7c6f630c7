#!/bin/sh
# t-inside.sh - file operations on paths outside the workspace, served from
# inside the container as the session's user (issue 30, svc-inside.h,
# docs/e2b.md, "Where files are"), on the real engine and the real PostgreSQL,
# through tests/inside-drv (the svc functions, one per run): stat and list
# "/" (bin, etc, proc), read /etc/hostname, write/read /tmp/x, mkdir -p,
# rename, remove; a file only root can read is a clear permission error for
# the session's user (and never given by the host's root); names with
# newlines, spaces, UTF-8 round-trip, latin-1 ones are left out of a
# listing (counted) and refused as a path; a fuzz of hostile names never
# gives one name another's fields; 20000 entries are cut at the bound with
# "truncated"; a 100 MB file is refused at the read limit without being
# read (the time and the bytes the exec moved say so); every operation's
# row in PostgreSQL, its target the sandbox's path.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
DRV=$PWD/tests/inside-drv
sb_init t-inside ti
[ -x "$DRV" ] || skip_all "tests/inside-drv is not built"

DB=""
if pgbed_start >/dev/null 2>&1; then
	DB=t_inside_$$
	URL=$(pgbed_newdb "$DB") || DB=""
fi
[ -n "$DB" ] || skip_all "no PostgreSQL test-bed (the rows are part of what is checked)"
ti_cleanup() { pgbed_dropdb "$DB" 2>/dev/null; sb_cleanup; }
trap ti_cleanup EXIT
SBXCAT_DATABASE_URL=$URL
export SBXCAT_DATABASE_URL
"$S" audit migrate >/dev/null 2>&1 || bail_out "audit migrate failed"
sql() { psql -X -A -t -q -d "$URL" -c "$1" 2>/dev/null; }

SANDBOXD_PAUSE_AFTER=0
export SANDBOXD_PAUSE_AFTER
"$S" -C "$CAT" prewarm "$RA" >/dev/null 2>&1
ok $? "the runtime's image is built"
open_s acme run inside-1 --work-dir /home/user
is "$rc" 0 "a session at /home/user ($(err))"
K=$key
UID_IN=$(bounded exec "$K" -- id -u)
is "$UID_IN" 10001 "its commands run as the sandbox uid"

# d OP PATH [ARG]: the driver as tenant acme on $K; stdout in $T/out.
d() { op=$1; shift; timeout -s KILL 120 "$DRV" acme "$op" "$K" "$@" >"$T/out" 2>"$T/err"; rc=$?; }
j() { jq -r "$1" "$T/out" 2>/dev/null; }

# -- stat and list "/".
d stat /
is "$rc:$(j .type):$(j .path):$(j .name)" "0:dir:/:/" "stat / is a directory"
d ls /
is "$rc" 0 "ls / ($(head -c 200 "$T/out"))"
for n in bin etc proc tmp home; do
	is "$(j ".entries[] | select(.path == \"/$n\") | .type")" dir "... lists /$n, a directory"
done
is "$(j '.entries[] | select(.path == "/etc") | .owner')" root "... /etc's owner is root, by name"
is "$(j .truncated)" false "... not truncated"
d stat /etc/passwd
is "$rc:$(j .type):$(j .uid):$(j .mode)" "0:file:0:420" "stat /etc/passwd: a file, root's, 0644"
d stat /bin/sh
is "$rc:$(j .type):$(j .target)" "0:symlink:busybox" "stat /bin/sh: a symlink to busybox"
d stat /nonexistent/x
is "$rc:$(j .error):$(j .errnum)" "1:not found:2" "stat of a missing path: not found (ENOENT)"
d stat relative
is "$rc:$(j .error)" "1:invalid" "a relative path is invalid"
d ls /etc/passwd
is "$rc:$(j .error):$(j .errnum)" "1:conflict:20" "ls of a file: not a directory (ENOTDIR)"

# -- read.
d read /etc/hostname
is "$rc" 0 "read /etc/hostname"
is "$(cat "$T/out")" "$(tb_docker exec "$(ctr "$K")" cat /etc/hostname)" "... the container's hostname"
d read /etc
is "$rc:$(j .error):$(j .errnum)" "1:conflict:21" "read of a directory: EISDIR"
d read /dev/null
is "$rc:$(j .error)" "1:conflict" "read of a device: not a regular file"
d read /proc/version
is "$rc:$(head -c 5 "$T/out")" "0:Linux" "read of /proc/version (its size says 0): its text"

# -- write, read back, mkdir -p, rename, remove.
printf 'one\ntwo\n' >"$T/in"
d write /tmp/x <"$T/in"
is "$rc:$(j .created):$(j .size):$(j .uid)" "0:true:8:10001" "write /tmp/x: created, 8 bytes, the sandbox's"
is "$(tb_docker exec "$(ctr "$K")" cat /tmp/x)" "$(printf 'one\ntwo')" "... the container has the bytes"
printf 'three\n' >"$T/in"
d write /tmp/x <"$T/in"
is "$rc:$(j .created):$(j .size)" "0:false:6" "write again: replaced"
d read /tmp/x
is "$rc:$(cat "$T/out")" "0:three" "read /tmp/x gives them back"
head -c 300000 /dev/urandom >"$T/bin"
d write /tmp/bin <"$T/bin"
is "$rc:$(j .size)" "0:300000" "a 300 kB binary file written"
d read /tmp/bin
cmp -s "$T/out" "$T/bin"; ok $? "... and read back byte for byte"
d write /nonexistent/dir/x </dev/null
is "$rc:$(j .error)" "1:not found" "write under a missing directory: not found"
d write /etc/passwd </dev/null
is "$rc:$(j .errnum)" "1:13" "write to /etc/passwd: permission denied (EACCES)"
is "$(tb_docker exec "$(ctr "$K")" head -c 5 /etc/passwd)" "root:" "... and /etc/passwd is untouched"
d mkdir /tmp/a/b/c
is "$rc:$(j .created):$(j .type)" "0:true:dir" "mkdir -p /tmp/a/b/c"
d mkdir /tmp/a/b/c
is "$rc:$(j .created)" "0:false" "mkdir again: it was there"
d mkdir /tmp/x/y
is "$rc:$(j .error):$(j .errnum)" "1:conflict:20" "mkdir under a file: ENOTDIR"
d mkdir /tmp/x
is "$rc:$(j .errnum)" "1:17" "mkdir of a file: EEXIST"
d mkdir /etc/nope
is "$rc:$(j .errnum)" "1:13" "mkdir in /etc: permission denied"
d rename /tmp/x /tmp/a/b/moved
is "$rc:$(j .path):$(j .size)" "0:/tmp/a/b/moved:6" "rename /tmp/x to /tmp/a/b/moved"
d stat /tmp/x
is "$rc:$(j .error)" "1:not found" "... /tmp/x is gone"
d rename /tmp/a/b/moved /tmp/a
is "$rc:$(j .errnum)" "1:17" "rename onto a directory: EEXIST"
d rename /tmp/a /home/user/fromtmp
is "$rc:$(j .type)" "0:dir" "rename a directory from /tmp into the workspace"
[ -f "$ROOT/$K/workspace/fromtmp/b/moved" ] || [ -n "$(find "$ROOT" -path '*fromtmp/b/moved' 2>/dev/null)" ]
ok $? "... the host sees it in the workspace"
d rm /home/user/fromtmp
is "$rc" 0 "rm -r of a directory"
d stat /home/user/fromtmp
is "$rc:$(j .error)" "1:not found" "... gone"
d rm /etc
is "$rc:$(j .errnum)" "1:13" "rm /etc: permission denied"
d rm /
is "$rc:$(j .error)" "1:refused" "rm /: refused"
d stat /tmp/../etc/./passwd
is "$rc:$(j .path)" "0:/etc/passwd" "a path with . and .. is normalised"
d stat /../../etc
is "$rc:$(j .path)" "0:/etc" "... and never climbs above /"

# -- permission: a file only root can read.
tb_docker exec -u 0 "$(ctr "$K")" sh -c 'echo topsecret >/tmp/rootonly; chmod 600 /tmp/rootonly; mkdir -p /tmp/rootdir; echo s >/tmp/rootdir/f; chmod 700 /tmp/rootdir'
d read /tmp/rootonly
is "$rc:$(j .error):$(j .errnum)" "1:refused:13" "read of a root-only file: permission denied (EACCES)"
grep -q topsecret "$T/out"; ok $((! $?)) "... and not one byte of it"
grep -q "permission denied" "$T/out"; ok $? "... said clearly ($(j .message))"
d stat /tmp/rootdir/f
is "$rc:$(j .errnum)" "1:13" "stat under a root-only directory: permission denied"
d ls /tmp/rootdir
is "$rc:$(j .errnum)" "1:13" "ls of a root-only directory: permission denied"

# -- names: newlines, spaces, UTF-8 round-trip; latin-1 left out, counted.
tb_docker exec -u 10001 "$(ctr "$K")" sh -c 'mkdir /tmp/n && cd /tmp/n &&
	printf a >"$(printf "new\nline")" && printf bb >"with space" && printf ccc >"ünï€ode" &&
	printf dddd >"$(printf "lat\351n")" && printf e >"-dash" && printf ff >"$(printf "zz\n81a4 9 0 0 0 root root zz")"'
d ls /tmp/n
is "$rc:$(j .n):$(j .skipped)" "0:5:1" "ls of hostile names: 5 listed, the latin-1 one left out and counted"
is "$(jq -r '.entries[] | select(.name == "new\nline") | .size' "$T/out")" 1 "... a name with a newline keeps its own size"
is "$(jq -r '.entries[] | select(.name == "with space") | .size' "$T/out")" 2 "... a name with a space"
is "$(jq -r '.entries[] | select(.name == "ünï€ode") | .size' "$T/out")" 3 "... UTF-8"
is "$(jq -r '.entries[] | select(.name == "-dash") | .size' "$T/out")" 1 "... a name starting with -"
is "$(jq -r '.entries[] | select(.name | startswith("zz\n81a4")) | .size' "$T/out")" 2 "... a name holding a record's line keeps its own size"
is "$(jq -r '[.entries[] | select(.size == 9)] | length' "$T/out")" 0 "... and the line it holds forges nothing"
d read "$(printf '/tmp/n/new\nline')"
is "$rc" 1 "a path with a newline is refused (a control character)"
d read "/tmp/n/with space"
is "$rc:$(cat "$T/out")" "0:bb" "a path with a space reads"
d read "/tmp/n/ünï€ode"
is "$rc:$(cat "$T/out")" "0:ccc" "a UTF-8 path reads"
d read "$(printf '/tmp/n/lat\351n')"
is "$rc:$(j .error)" "1:invalid" "a latin-1 path is refused as invalid"
d read "/tmp/n/-dash"
is "$rc:$(cat "$T/out")" "0:e" "a name starting with - is a path, not an option"
d read '/tmp/n/$(id)'
is "$rc:$(j .error)" "1:not found" "a path with \$(...) is a path: not run"

# A fuzz: random printable names, each a file of its own size; every one
# listed gets exactly its own size.
tb_docker exec -u 10001 "$(ctr "$K")" sh -c 'mkdir /tmp/fz && cd /tmp/fz && i=1 &&
	while [ $i -le 60 ]; do
		n=$(head -c 24 /dev/urandom | tr -dc "a-zA-Z0-9 ._%\$\\\\\"'"'"'\`;|&<>*?!#=-" | head -c 12)
		[ -n "$n" ] && [ ! -e "./$n" ] && head -c $i /dev/zero >"./$n"
		i=$((i + 1))
	done'
d ls /tmp/fz
want=$(tb_docker exec "$(ctr "$K")" sh -c 'ls -A /tmp/fz | wc -l' | tr -d ' ')
is "$rc:$(j .n)" "0:$want" "a fuzz of $want names with shell characters: all listed"
bad=0
for i in $(seq 0 $(($(j .n) - 1))); do
	p=$(jq -r ".entries[$i].path" "$T/out")
	sz=$(jq -r ".entries[$i].size" "$T/out")
	real=$(tb_docker exec "$(ctr "$K")" stat -c %s -- "$p" 2>/dev/null)
	[ "$sz" = "$real" ] || { bad=$((bad + 1)); diag "'$p': $sz, not $real"; }
done
is "$bad" 0 "... each with its own size"

# -- bounds: 20000 entries cut at 10000; a 100 MB file refused unread.
tb_docker exec -u 10001 "$(ctr "$K")" sh -c 'mkdir /tmp/many && cd /tmp/many && seq 1 20000 | xargs touch'
d ls /tmp/many
is "$rc:$(j .n):$(j .truncated):$(j .why)" "0:10000:true:entries" "20000 entries: cut at 10000, truncated (entries)"
SANDBOXD_MAX_READ_BYTES=1048576 d read /tmp/bin
is "$rc:$(wc -c <"$T/out" | tr -d ' ')" "0:300000" "a 300 kB file is under a 1 MiB limit"
tb_docker exec -u 10001 "$(ctr "$K")" sh -c 'truncate -s 100M /tmp/big 2>/dev/null || dd if=/dev/zero of=/tmp/big bs=1M count=0 seek=100 2>/dev/null'
t0=$(now)
d read /tmp/big
t1=$(now)
is "$rc:$(j .error)" "1:refused" "a 100 MB file is refused"
grep -q "over the read limit" "$T/out"; ok $? "... at the read limit ($(j .message))"
lt "$(elapsed "$t0" "$t1")" 10; ok $? "... without reading it ($(elapsed "$t0" "$t1") s)"

# -- the same on GNU coreutils, findutils and dash (the host's own, with
# their libraries, in an image of their own): no busybox in it.
cu_image() {
	cu=$T/cu
	mkdir -p "$cu/bin" "$cu/etc" "$cu/tmp" "$cu/home" "$cu/proc" "$cu/dev" "$cu/sys" || return 1
	for b in dash stat find xargs head readlink mktemp chmod cat mv rm mkdir sleep id ls touch seq truncate; do
		p=$(command -v "$b") || return 1
		cp "$p" "$cu/bin/" || return 1
		for l in $(ldd "$p" | awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
			mkdir -p "$cu$(dirname "$l")" && cp -L "$l" "$cu$l" || return 1
		done
	done
	ln -s dash "$cu/bin/sh"
	printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:10001:10001::/home/user:/bin/sh\n' >"$cu/etc/passwd"
	printf 'root:x:0:\nsandbox:x:10001:\n' >"$cu/etc/group"
	chmod 1777 "$cu/tmp"
	tar -C "$cu" --owner=0 --group=0 --numeric-owner -c . | tb_docker import - "sbxcat/ti-cu-$sfx:1" >/dev/null
}
if command -v ldd >/dev/null && cu_image; then
	RCU=ti-cu-$sfx
	jq --arg a "$RCU" --arg i "sbxcat/ti-cu-$sfx:1" '. + [{"alias": $a, "description": "GNU coreutils, no busybox", "image": $i}]' \
		"$CAT" >"$CAT.new" && mv "$CAT.new" "$CAT"
	open_s acme run inside-cu --runtime "$RCU" --work-dir /home/user
	is "$rc" 0 "a session on the coreutils image ($(err))"
	KB=$K
	K=$key
	is "$(bounded exec "$K" -- sh -c 'id -u; stat --version | head -1')" \
		"$(printf '10001\n%s' "$(stat --version | head -1)")" "... as the sandbox uid, with GNU stat"
	d stat /
	is "$rc:$(j .type)" "0:dir" "coreutils: stat /"
	d ls /
	is "$rc:$(j '[.entries[] | select(.path == "/bin" or .path == "/etc" or .path == "/proc") | .type] | join(",")')" \
		"0:dir,dir,dir" "coreutils: ls / lists bin, etc, proc"
	d stat /bin/sh
	is "$rc:$(j .type):$(j .target):$(j .owner)" "0:symlink:dash:root" "coreutils: a symlink, its target, its owner's name"
	d read /etc/hostname
	is "$rc:$(cat "$T/out")" "0:$(tb_docker exec "$(ctr "$K")" cat /etc/hostname)" "coreutils: read /etc/hostname"
	printf 'cu\n' >"$T/in"
	d write /tmp/x <"$T/in"
	is "$rc:$(j .created):$(j .size):$(j .mode)" "0:true:3:420" "coreutils: write /tmp/x (0644)"
	d read /tmp/x
	is "$rc:$(cat "$T/out")" "0:cu" "coreutils: read it back"
	d mkdir /tmp/a/b
	is "$rc:$(j .created)" "0:true" "coreutils: mkdir -p"
	d rename /tmp/x /tmp/a/b/y
	is "$rc:$(j .path)" "0:/tmp/a/b/y" "coreutils: rename"
	d rm /tmp/a
	is "$rc" 0 "coreutils: rm -r"
	d stat /tmp/a
	is "$rc:$(j .error)" "1:not found" "coreutils: ... gone"
	tb_docker exec -u 0 "$(ctr "$K")" sh -c 'echo s >/tmp/ro; chmod 600 /tmp/ro'
	d read /tmp/ro
	is "$rc:$(j .errnum)" "1:13" "coreutils: a root-only file is permission denied"
	tb_docker exec -u 10001 "$(ctr "$K")" sh -c 'mkdir /tmp/n && cd /tmp/n &&
		printf a >"$(printf "new\nline")" && printf bb >"with space" && printf ccc >"ünï€ode" &&
		printf dddd >"$(printf "lat\351n")" && printf ff >"$(printf "zz\n81a4 9 0 0 0 root root zz")"'
	d ls /tmp/n
	is "$rc:$(j .n):$(j .skipped):$(j '[.entries[].size] | sort | map(tostring) | join(",")')" "0:4:1:1,2,2,3" \
		"coreutils: hostile names listed with their own sizes, latin-1 counted"
	tb_docker exec -u 10001 "$(ctr "$K")" truncate -s 100M /tmp/big
	d read /tmp/big
	is "$rc:$(j .error)" "1:refused" "coreutils: a 100 MB file refused at the limit"
	K=$KB
else
	skip "no host coreutils image could be made (ldd, tar)" "the coreutils half"
fi

# -- the rows.
sql "SELECT op || ' ' || ok || ' ' || target FROM sandbox_operations WHERE session_key = '$K' ORDER BY created_at, seq" >"$T/rows"
grep -qx "stat true /" "$T/rows"; ok $? "a row for stat / (op stat, target the sandbox's path)"
grep -qx "ls_info true /" "$T/rows"; ok $? "a row for ls / (ls_info)"
grep -qx "read_bytes true /etc/hostname" "$T/rows"; ok $? "a row for read /etc/hostname (read_bytes)"
grep -qx "write true /tmp/x" "$T/rows"; ok $? "a row for write /tmp/x"
grep -qx "write true /tmp/x -> /tmp/a/b/moved" "$T/rows"; ok $? "a row for the rename (write, both paths)"
grep -qx "remove true /home/user/fromtmp" "$T/rows"; ok $? "a row for rm (remove)"
grep -qx "read_bytes false /tmp/rootonly" "$T/rows"; ok $? "a refused read's row (ok false)"
is "$(sql "SELECT count(*) FROM sandbox_operations WHERE session_key = '$K' AND op = 'execute'")" 1 \
	"one execute row, the test's own id -u: each operation writes its own one row, not exec's"
is "$(sql "SELECT detail FROM sandbox_operations WHERE session_key = '$K' AND target = '/tmp/rootonly'")" \
	"refused: permission denied" "... its detail says why"
sb_done

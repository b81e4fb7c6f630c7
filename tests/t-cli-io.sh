#!/bin/sh
# t-cli-io.sh - what the commands do with the world around them (issue 7):
# a stdout that fails (exit 3 with the reason, or death by SIGPIPE), paths
# that are not UTF-8 in every --json output, a JSON answer even when the
# catalogue cannot be read, death by the signal that stopped a command, and
# atomic writes that keep owner and group, write through symbolic links and
# leave no temporary file after a failure or Ctrl-C.
set -u
. "$srcdir/tests/tap.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
T=$(mktemp -d)
trap 'chmod -R u+w "$T"; rm -rf "$T"' EXIT
cd "$T" || exit 1
unset SBXCAT_CATALOG SANDBOXD_SANDBOX_UID
install -m 644 "$srcdir/tests/golden/everyfield.json" cat.json
# Two built runtimes, "full" then "zed", for the batch cases.
jq '. + [.[0] | .alias = "zed"]' cat.json >cat2.json
NUL8=$(printf 'bad\377name')   # a name that is not UTF-8
temps() { find "$@" -name '*.tmp??????' | wc -l; }
# Run with SIGINT at its default: a background job of a script starts with
# it ignored (and dash's set -m needs a terminal).
# Use as: perl -e "$DFL_INT" COMMAND... & (no function: the pid must be
# the command's own).
DFL_INT='$SIG{INT} = "DEFAULT"; exec @ARGV or die'


# --- stdout that cannot be written ---------------------------------------
full_msg="sbxcat: write error on standard output: No space left on device"
for cmd in "check cat.json" "check --json cat.json" "-C cat.json list" \
	"-C cat.json list --json" "-C cat.json dockerfile full" \
	"-C cat.json dockerfile --json full" "-C cat.json tag full" \
	"-C cat.json briefing" "-C cat.json briefing --json" \
	"-C cat.json generate --json -o gen.d" "help" "help check" \
	"check --help" "--version" "-C cat.json compose --print"; do
	# shellcheck disable=SC2086
	"$S" $cmd >/dev/full 2>err
	is "$? $(cat err)" "3 $full_msg" "sbxcat $cmd >/dev/full exits 3 with the reason"
done
"$S" check --json "$srcdir/tests/cases/many-errors.json" >/dev/full 2>err
is $? 3 "a write error outranks a failed check (1 -> 3)"

# A reader that leaves, with SIGPIPE ignored by the parent: death by
# SIGPIPE, quietly, as git does.  The output is larger than a pipe holds.
jq '[range(1000) as $i | .[1] | .alias = "r\($i)"]' cat.json >big.json
mkfifo pipe
(trap '' PIPE; exec "$S" -C big.json list --json >pipe 2>err) &
pid=$!
true <pipe
wait $pid
is "$? $(cat err)" "141 " "a closed pipe with SIGPIPE ignored: death by SIGPIPE, nothing said"

# --- paths that are not UTF-8 go into JSON losslessly ----------------------
b64() { printf '%s' "$1" | base64 -w0; }
cp "$srcdir/tests/cases/unknown-field.json" "$NUL8.json"
"$S" check --json "$NUL8.json" >out 2>err
is $? 1 "check --json of an invalid catalogue with a non-UTF-8 name exits 1"
is "$(jq -r '.[0].file_base64' out)" "$(b64 "$NUL8.json")" \
	"its diagnostics carry the exact name in file_base64"
is "$(jq -r '.[0].file' out)" "bad�name.json" "and a readable file with U+FFFD"
is "$(jq -r '.[0].message' out)" "'mem_limt': unknown field; did you mean 'mem_limit'?" \
	"and the diagnostic itself"
"$S" check --json cat.json >out; is "$(jq -c '[.[] | has("file_base64")] | length' out)" 0 \
	"a valid catalogue is still []"
"$S" check --json "$NUL8-missing.json" >out 2>err
is $? 3 "check --json of a missing file exits 3"
is "$(jq -c '[.status, (.error | startswith("cannot open")), .file_base64]' out)" \
	"[3,true,\"$(b64 "$NUL8-missing.json")\"]" \
	"and still prints JSON: an error object naming the file"
"$S" check --json . >out 2>err
is "$(jq -c '[.file, .status]' out)" '[".",3]' "check --json of a directory: an error object"

"$S" -C cat.json generate --json -o "$NUL8" >out 2>err
is $? 0 "generate --json into a non-UTF-8 directory exits 0"
is "$(jq -r '.[0].path_base64' out | base64 -d)" "$NUL8/full/Dockerfile" \
	"generate --json gives the exact path in path_base64"
is "$(jq -r '.[0] | [.alias, .changed] | @tsv' out)" "full	true" "and the rest of the entry"

cp "$srcdir/compose/docker-compose.yml" "$NUL8.yml"
"$S" -C cat.json compose --check --json "$NUL8.yml" >out 2>err
is $? 1 "compose --check --json of a stale non-UTF-8 file exits 1"
is "$(jq -r '.[0] | [.state, (.path_base64 | @base64d == "'"$NUL8.yml"'")] | @tsv' out 2>/dev/null ||
	jq -r '.[0] | [.state, .path_base64] | @tsv' out)" "stale	true" \
	"compose --check --json reports it, with the exact name"
"$S" -C cat.json compose --json "$NUL8-none.yml" >out 2>err
is "$(jq -r '.[0] | [.state, .path_base64] | @tsv' out)" "error	$(b64 "$NUL8-none.yml")" \
	"compose --json reports an unreadable non-UTF-8 file as an error"

# --- signals: death by the signal, not an exit status ----------------------
# A catalogue that is a FIFO with no writer blocks the read; the signal
# interrupts it.  DFL_INT: background jobs start with SIGINT ignored, and
# sbxcat, like any well-behaved tool, leaves such a signal alone.
mkfifo block.json
for sig in TERM:15 INT:2 HUP:1; do
	rm -f st st.pid
	spawn_status st "$S" check block.json >/dev/null 2>&1 &
	pid=$(spawn_pid st); sleep 0.3; kill -"${sig%:*}" "$pid"
	# Bounded: a signal lost to the read would hold the test for good.
	n=0; while [ ! -s st ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	[ -s st ] || { kill -KILL "$pid"; echo "still running after 10 s" >st; }
	wait $!
	is "$(cat st)" "signal ${sig#*:}" "SIG${sig%:*}: sbxcat dies by the signal (not exit $((128 + ${sig#*:})))"
done
# The signal at any moment of the start, before the read has begun too
# (it was once recorded there and then lost to a read that never ended).
early=""
for d in 0 0.001 0.002 0.004 0.006 0.008 0.01 0.015 0.02 0.03 0.04 0.05; do
	rm -f st st.pid
	spawn_status st "$S" check block.json >/dev/null 2>&1 &
	pid=$(spawn_pid st); sleep "$d"; kill -TERM "$pid"
	n=0; while [ ! -s st ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	[ -s st ] || { kill -KILL "$pid"; early="$early $d"; }
	wait $!
	[ "$(cat st)" = "signal 15" ] || early="$early $d:$(cat st)"
done
is "${early:-none}" none "SIGTERM 0 to 50 ms after the start: dies by it every time"
(trap '' INT; exec "$S" check block.json >/dev/null 2>&1) &
pid=$!; sleep 0.3; kill -INT $pid; sleep 0.2
kill -0 $pid 2>/dev/null; ok $? "a SIGINT ignored at start stays ignored (nohup, background jobs)"
kill -TERM $pid; wait $pid

# Ctrl-C in the middle of a batch: strace holds each fdatasync for 3 s.
"$S" -C cat2.json generate -o sig.d >/dev/null
echo stale >sig.d/full/Dockerfile; echo stale >sig.d/zed/Dockerfile
if command -v strace >/dev/null &&
	strace -qq -o /dev/null -e inject=fdatasync:delay_enter=1 true 2>/dev/null; then
	for sig in INT TERM; do
		perl -e "$DFL_INT" strace -f -qq -o /dev/null -e trace=fdatasync \
			-e inject=fdatasync:delay_enter=3000000 \
			"$S" -C cat2.json generate -o sig.d >out 2>err &
		spid=$!; sleep 1
		kill -$sig "$(pgrep -P $spid)"; wait $spid; rc=$?
		is "$rc" "$( [ $sig = INT ] && echo 130 || echo 143)" "SIG$sig during generate's batch: death by the signal"
		is "$(temps sig.d)" 0 "SIG$sig during the batch leaves no temporary file"
		is "$(cat sig.d/full/Dockerfile sig.d/zed/Dockerfile)" "stale
stale" "SIG$sig before the renames leaves every old file"
		is "$(cat out err)" "" "and says nothing"
	done
else
	for n in 1 2 3 4 5 6 7 8; do skip "strace cannot inject delays here" "Ctrl-C during generate's batch ($n)"; done
fi

# --- atomic writes: failures, owner, symbolic links ------------------------
"$S" -C cat2.json generate -o fail.d >/dev/null
echo old >fail.d/full/Dockerfile
rm -r fail.d/zed/Dockerfile; mkdir fail.d/zed/Dockerfile
"$S" -C cat2.json generate -o fail.d >out 2>err
is "$? $(cat err)" "3 sbxcat: cannot write 'fail.d/zed/Dockerfile': Is a directory" \
	"a target that is a directory fails the batch with exit 3"
is "$(cat fail.d/full/Dockerfile)" old "a failed batch leaves the files before it as they were"
is "$(temps fail.d)" 0 "a failed batch leaves no temporary file"
rmdir fail.d/zed/Dockerfile
if [ "$(id -u)" -eq 0 ] && mkdir ro.d && mount -t tmpfs -o size=1m tmpfs ro.d 2>/dev/null; then
	mkdir -p ro.d/full ro.d/zed; echo old >ro.d/full/Dockerfile
	mount -o remount,ro ro.d 2>/dev/null || mount -o remount,ro,bind ro.d
	"$S" -C cat2.json generate -o ro.d >out 2>err
	is $? 3 "a read-only directory for the files fails with exit 3"
	is "$(temps ro.d)" 0 "and leaves no temporary file"
	umount ro.d
elif [ "$(id -u)" -ne 0 ]; then
	mkdir -p ro.d/full ro.d/zed; chmod 555 ro.d/zed
	"$S" -C cat2.json generate -o ro.d >out 2>err
	is $? 3 "a read-only directory for the second file fails with exit 3"
	is "$(temps ro.d)" 0 "and leaves the first file's temporary file removed"
else
	skip "cannot mount a tmpfs here" "read-only directory: exit 3"
	skip "cannot mount a tmpfs here" "read-only directory: no temporary file"
fi

if [ "$(id -u)" -eq 0 ]; then
	"$S" -C cat.json generate -o own.d >/dev/null
	echo stale >own.d/full/Dockerfile
	chown 1234:1234 own.d/full/Dockerfile; chmod 640 own.d/full/Dockerfile
	"$S" -C cat.json generate -o own.d >/dev/null
	is "$(stat -c '%u:%g %a' own.d/full/Dockerfile)" "1234:1234 640" \
		"generate run as root keeps a rewritten file's owner, group and mode"
	cp "$srcdir/compose/docker-compose.yml" own.yml; chown 1234:1234 own.yml
	"$S" -C cat.json compose own.yml >/dev/null
	is "$(stat -c '%u:%g' own.yml)" "1234:1234" "compose run as root keeps the owner and group"
	cmp -s own.yml "$srcdir/compose/docker-compose.yml"; is $? 1 "(and did rewrite it)"
	# Someone else's file in a directory we may write: the owner cannot be
	# kept, so nothing is replaced (exit 3) and no temporary file stays.
	chmod 755 "$T"	# the other user must reach the catalogue and the file
	mkdir nobody.d; cp "$srcdir/compose/docker-compose.yml" nobody.d/c.yml
	chown 65534:65534 nobody.d; chown 1234:1234 nobody.d/c.yml; chmod 666 nobody.d/c.yml
	cp nobody.d/c.yml nobody.orig
	setpriv --reuid 65534 --regid 65534 --clear-groups "$S" -C "$PWD/cat.json" \
		compose nobody.d/c.yml >out 2>err
	is $? 3 "compose as another user: the owner cannot be kept, exit 3"
	grep -q "cannot keep the owner and group of '.*nobody.d/c.yml' (1234:1234): Operation not permitted" err
	ok $? "and says why" || diag "$(cat err)"
	cmp -s nobody.d/c.yml nobody.orig && [ "$(stat -c %u nobody.d/c.yml)" = 1234 ]
	ok $? "and the file is untouched"
	is "$(ls -A nobody.d | grep -vc '^c.yml$')" 0 "and no temporary file stays"
else
	for n in 1 2 3 4 5 6 7; do skip "not root: cannot chown" "owner kept ($n)"; done
fi

# A symbolic link is written through, for generate and compose alike.
"$S" -C cat.json generate -o link.d >/dev/null
mkdir real; echo stale >real/Dockerfile
ln -sf ../../real/Dockerfile link.d/full/Dockerfile
"$S" -C cat.json generate -o link.d >/dev/null
[ -L link.d/full/Dockerfile ]; ok $? "generate leaves a symbolic link a link"
"$S" -C cat.json dockerfile full | cmp -s - real/Dockerfile; ok $? "and writes the file it points to"
is "$(temps link.d real)" 0 "with no temporary file left in either directory"
ln -sf ../../real/new-Dockerfile link.d/full/Dockerfile
"$S" -C cat.json generate -o link.d >/dev/null
[ -L link.d/full/Dockerfile ] && [ -f real/new-Dockerfile ]; ok $? "a dangling link: its target is created"
cp "$srcdir/compose/docker-compose.yml" real/compose.yml
ln -s real/compose.yml link.yml
"$S" -C cat.json compose link.yml >/dev/null
[ -L link.yml ]; ok $? "compose leaves a symbolic link a link"
cmp -s real/compose.yml "$srcdir/compose/docker-compose.yml"; is $? 1 "and writes the file it points to"
"$S" -C cat.json compose --check link.yml >/dev/null; ok $? "which is then up to date"
# A directory generate makes is flushed in its parent (its entry there),
# each one: seen as mkdir(D) = 0, then an fsync of an fd opened on D's
# parent before the next mkdir.
if command -v strace >/dev/null; then
	strace -f -qq -o mk.trace -e trace=mkdir,openat,fsync \
		"$S" -C cat.json generate -o "$T/mk/a/b" >/dev/null
	awk '
		/mkdir\(".*"[^)]*\) = 0/ {
			if (want != "") bad = bad " " want
			d = $0; sub(/^[^"]*"/, "", d); sub(/".*/, "", d)
			want = d; sub(/\/[^\/]*$/, "", want); made++; next
		}
		/openat\(/ && want != "" {
			p = $0; sub(/^[^"]*"/, "", p); sub(/".*/, "", p)
			if (p == want) { fd = $NF; opened = 1 }
			next
		}
		/fsync\(/ && opened && want != "" {
			f = $0; sub(/^[^(]*\(/, "", f); sub(/\).*/, "", f)
			if (f == fd) { want = ""; opened = 0 }
		}
		END { if (want != "") bad = bad " " want; print made + 0, (bad == "" ? "ok" : "unflushed:" bad) }
	' mk.trace >mk.out
	is "$(cat mk.out)" "4 ok" "generate flushes the parent of each of the 4 directories it makes"
else
	skip "no strace" "generate flushes the parent of each directory it makes"
fi

done_testing

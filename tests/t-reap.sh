#!/bin/sh
# t-reap.sh - sbxcat reap against the real engine (issue 9, "Reaper";
# docs/lifetimes.md): --now drives the idle stop (files kept), the
# container TTL (container removed, workspace kept) and the workspace TTL
# (ROOT/KEY gone, never while the session runs); --dry-run changes nothing
# and says what and why; --limit bounds the actions, oldest first; --json;
# containers of another deployment or without labels survive every pass,
# whatever their names; an orphan and a stuck `created` container are
# removed once older than the idle timeout and left while younger; a
# workspace whose container went behind sbxcat's back shows as closed; a
# session stamped while the reaper waits for its lock is left alone;
# --report; exit statuses.
#
# Records are re-stamped the way only root can (a temporary file renamed
# over session.json, every other member kept), so ages are exact.
# Go templates for docker inspect are single-quoted on purpose.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
sb_init t-reap tr
command -v flock >/dev/null || skip_all "flock(1) (util-linux) is missing: the race cannot be held open"

unset SANDBOXD_IDLE_TIMEOUT SANDBOXD_CONTAINER_TTL SANDBOXD_WORKSPACE_TTL
# The idle pause is tests/t-pause.sh's: here sessions go straight from
# running to stopped, as before it.
SANDBOXD_PAUSE_AFTER=0
export SANDBOXD_PAUSE_AFTER
IMG=sbxcat-test/busybox:1
N0=$(date +%s)
H2=$((N0 + 7200))

stamp() { sb_stamp "$@"; }
# reap ARGS...: status in $rc, stdout in $T/out, stderr in $T/err.
reap() { sbx reap "$@"; }
lines() { wc -l <"$T/out" | tr -d ' '; }
gone() { ! tb_docker inspect "$1" >/dev/null 2>&1; }

# -- Containers that are not ours, made first so every pass sees them old:
# a name of our shape without labels, another deployment's label (the
# filter's prefix and suffix cases), our key label under a near value.
F1=sbxcat-$DEP-xc-foreign-$sfx
F2=tr-other-$sfx
F3=tr-suffix-$sfx
F4=tr-running-$sfx
sb_names="$F1 $F2 $F3 $F4"
tb_docker create --name "$F1" "$IMG" true >/dev/null &&
	tb_docker create --name "$F2" --label "io.sbxcat.deployment=${DEP}x" \
		--label io.sbxcat.key=xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa "$IMG" true >/dev/null &&
	tb_docker create --name "$F3" --label "io.sbxcat.deployment=$DEP-other" "$IMG" true >/dev/null &&
	tb_docker run -d --name "$F4" --label "io.sbxcat.deployment= $DEP" "$IMG" sleep 3600 >/dev/null
ok $? "four foreign containers made (no label; ${DEP}x; $DEP-other; ' $DEP', running)"
foreign_alive() {
	for f in $F1 $F2 $F3 $F4; do tb_docker inspect "$f" >/dev/null 2>&1 || return 1; done
	[ "$(tb_docker inspect -f '{{.State.Status}}' "$F4")" = running ]
}

# -- Three sessions, idle for 2h 5m, 2h 3m 20s and 2h 1m 40s at N0+2h.
open_s acme run s1; K1=$key
open_s acme run s2; K2=$key
open_s acme run s3; K3=$key
[ -n "$K1" ] && [ -n "$K2" ] && [ -n "$K3" ]; ok $? "three sessions open"
stamp "$K1" $((N0 - 300)) && stamp "$K2" $((N0 - 200)) && stamp "$K3" $((N0 - 100))
ok $? "their records re-stamped"
echo kept >"$(ws "$K1")/notes.txt"

reap
is "$rc:$(out)" "0:" "reap now: nothing to do, no output, exit 0"

reap --dry-run --now "$H2"
is "$rc" 0 "--dry-run exits 0"
is "$(out)" "would stop $K1: idle for 2h 5m (idle timeout 30m)
would stop $K2: idle for 2h 3m (idle timeout 30m)
would stop $K3: idle for 2h 1m (idle timeout 30m)" "--dry-run says what and why, oldest first"
is "$(state "$K1"):$(state "$K2"):$(state "$K3")" running:running:running "--dry-run stopped nothing"

# --now as RFC 3339: the same instant.
reap --dry-run --now "$(date -u -d "@$H2" +%Y-%m-%dT%H:%M:%SZ)"
is "$(sed -n 1p "$T/out")" "would stop $K1: idle for 2h 5m (idle timeout 30m)" "--now takes RFC 3339 UTC"

reap --dry-run --now "$H2" --limit 1 --json
is "$rc" 0 "--dry-run --limit 1 --json exits 0"
is "$(jq -c '[.now, .dry_run, .left, (.actions | length)]' "$T/out")" "[$H2,true,2,1]" \
	"--json: now, dry_run, left (2 over the limit), one action"
is "$(jq -c '.actions[0] | [.action, .key, .container, .age_s, .done, .error, .reason]' "$T/out")" \
	"[\"stop\",\"$K1\",\"$(ctr "$K1")\",7500,false,null,\"idle for 2h 5m (idle timeout 30m)\"]" \
	"--json: the oldest action, with its key, container, age, reason"

reap --now "$H2" --limit 2
is "$rc" 0 "reap --limit 2 exits 0"
is "$(out)" "stopped $K1: idle for 2h 5m (idle timeout 30m)
stopped $K2: idle for 2h 3m (idle timeout 30m)" "--limit 2: the two oldest stopped"
grep -q "1 more action left" "$T/err"; ok $? "... and stderr says one is left"
is "$(state "$K1"):$(state "$K2"):$(state "$K3")" exited:exited:running "the two oldest stopped, the third still runs"
is "$(cat "$(ws "$K1")/notes.txt")" kept "an idle stop keeps the files"

sleep 1 # K3 stops a second after the others: the TTL pass orders by it
reap --now "$H2"
is "$rc:$(out)" "0:stopped $K3: idle for 2h 1m (idle timeout 30m)" "the next pass stops the third"
reap --now "$H2"
is "$rc:$(out)" "0:" "then nothing: stopped containers are young for the container TTL"

# -- The container TTL: 1 day after the later of FinishedAt and the stamp.
D2=$((N0 + 2 * 86400))
reap --now "$D2" --dry-run
n=0
for k in "$K1" "$K2" "$K3"; do grep -qx "would remove $k: stopped for 1d 23h (container TTL 1d)" "$T/out" && n=$((n + 1)); done
is "$n:$(lines)" 3:3 "--dry-run: would remove the three, stopped for 1d 23h"
reap --now "$D2"
is "$rc" 0 "reap at +2d exits 0"
# Oldest first by when each stopped: K1 and K2 in one second, then K3.
is "$(sed -n 3p "$T/out")" "removed $K3: stopped for 1d 23h (container TTL 1d)" "the last stopped is removed last"
is "$(sort "$T/out")" "$(printf 'removed %s: stopped for 1d 23h (container TTL 1d)\n' "$K1" "$K2" "$K3" | sort)" \
	"stopped containers past their TTL removed"
gone "$(ctr "$K1")" && gone "$(ctr "$K2")" && gone "$(ctr "$K3")"; ok $? "... their containers are gone"
is "$(cat "$(ws "$K1")/notes.txt")" kept "... the workspace stays (the workspace TTL is unset)"
foreign_alive; ok $? "the foreign containers survive"

reap
is "$rc" 0 "a pass with records whose containers are gone exits 0"
is "$(out)" "$(printf 'closed %s: its container is gone\n' "$K1" "$K2" "$K3" | sort)" \
	"... and shows them as closed, in key order"

# -- The workspace TTL: a bad one is refused; a running session's
# workspace is never deleted, however old.
SANDBOXD_WORKSPACE_TTL=1000 reap --dry-run
is "$rc" 2 "a workspace TTL not above the idle timeout exits 2"
open_s acme run s4; K4=$key
stamp "$K4" "$N0"
D31=$((N0 + 31 * 86400))
export SANDBOXD_WORKSPACE_TTL=2592000
reap --now "$D31" --dry-run
grep -qx "would delete $K1: unused for 31d (workspace TTL 30d)" "$T/out"; ok $? "--dry-run: would delete, unused for 31d"
grep -qx "would stop $K4: idle for 31d (idle timeout 30m)" "$T/out"; ok $? "--dry-run: the running one would only be stopped"
[ -d "$ROOT/$K1" ]; ok $? "--dry-run deleted nothing"
touch "$(ws "$K2")/pinned" && chattr +i "$(ws "$K2")/pinned" 2>/dev/null
pinned=$?
reap --now "$D31"
if [ $pinned -eq 0 ]; then
	# Deleting is a rename into the trash under the lock, then emptying
	# it after: the session is gone, the file that cannot go is said.
	is "$rc" 1 "a delete that cannot be emptied (an immutable file) exits 1"
	grep -q "^sbxcat: warning: cannot remove a file in '$ROOT/.sbxcat-trash/$K2\.[0-9a-f]\{16\}': Operation not permitted" "$T/err"
	ok $? "... a warning naming its entry in the trash" || diag "$(cat "$T/err")"
	[ ! -e "$ROOT/$K2" ] && [ -e "$(echo "$ROOT"/.sbxcat-trash/"$K2".*/workspace/pinned)" ]
	ok $? "... ROOT/KEY moved into the trash, the rest kept there"
	chattr -i "$ROOT"/.sbxcat-trash/"$K2".*/workspace/pinned
else
	skip "chattr +i is not supported here" "a failing delete exits 1"
fi
[ ! -e "$ROOT/$K1" ] && [ ! -e "$ROOT/$K3" ]; ok $? "the other workspaces past their TTL are deleted (the rest still done)"
grep -qx "deleted $K3: unused for 31d (workspace TTL 30d)" "$T/out"; ok $? "... and says so"
grep -qx "stopped $K4: idle for 31d (idle timeout 30m)" "$T/out"; ok $? "the running session is stopped, not deleted"
[ -d "$(ws "$K4")" ]; ok $? "... its workspace stays"
reap --now "$D31"
[ ! -e "$ROOT/$K4" ]; ok $? "once stopped, the next pass deletes it"
if [ $pinned -eq 0 ]; then
	is "$(find "$ROOT/.sbxcat-trash" -mindepth 1 | wc -l | tr -d ' ')" 0 \
		"the next pass finishes the trash the failed one left"
fi
# What a purge killed after its rename leaves: an entry of the trash that
# nobody holds, half emptied.  Any pass finishes it.
mkdir -p "$ROOT/.sbxcat-trash/xc-acme-run-crashed.0123456789abcdef/workspace/a/b" &&
	touch "$ROOT/.sbxcat-trash/xc-acme-run-crashed.0123456789abcdef/workspace/a/b/f" &&
	ln -s /etc "$ROOT/.sbxcat-trash/xc-acme-run-crashed.0123456789abcdef/workspace/etc" &&
	chmod 700 "$ROOT/.sbxcat-trash"
reap --dry-run
[ -d "$ROOT/.sbxcat-trash/xc-acme-run-crashed.0123456789abcdef" ]; ok $? "--dry-run leaves the trash alone"
reap
is "$rc:$(find "$ROOT/.sbxcat-trash" -mindepth 1 | wc -l | tr -d ' ')" "0:0" "reap finishes a trash entry a crash left behind"
[ -f /etc/passwd ]; ok $? "... without following its symlinks"
unset SANDBOXD_WORKSPACE_TTL
foreign_alive; ok $? "the foreign containers survive"

# -- A container removed behind sbxcat's back: closed, not lost.
open_s acme run s5; K5=$key
tb_docker rm -f "$(ctr "$K5")" >/dev/null
reap
is "$rc:$(out)" "0:closed $K5: its container is gone" "a container removed by hand shows its session as closed"
[ -d "$(ws "$K5")" ]; ok $? "... and the workspace stays"

# -- Orphans and stuck containers: left while young, removed once older
# than the idle timeout.  One running orphan (a session's name and labels,
# a key nobody has) and K5's container stuck in `created`.  Not ours: a
# container with the deployment label and no key, and one run from the
# runtime's prewarmed image, which carries the deployment label prewarm
# puts on the images it builds (a container inherits its image's labels).
GHOST=xc-ghost-run-aaaaaaaaaaaaaaaaaaaaaaaaaa
ORPH=$(ctr "$GHOST") NOKEY=tr-nokey-$sfx FROMIMG=tr-fromimage-$sfx
tb_docker run -d --name "$ORPH" --label "io.sbxcat.deployment=$DEP" \
	--label "io.sbxcat.key=$GHOST" "$IMG" sleep 3600 >/dev/null &&
	tb_docker create --name "$NOKEY" --label "io.sbxcat.deployment=$DEP" "$IMG" true >/dev/null &&
	tb_docker create --name "$(ctr "$K5")" --label "io.sbxcat.deployment=$DEP" \
		--label "io.sbxcat.key=$K5" "$IMG" true >/dev/null &&
	tb_docker run -d --name "$FROMIMG" "$(sbx tag "$RA"; cat "$T/out")" sleep 3600 >/dev/null
ok $? "an orphan, a keyless container, a stuck created container and one from the prewarmed image made"
is "$(tb_docker inspect -f '{{index .Config.Labels "io.sbxcat.deployment"}}' "$FROMIMG")" "$DEP" \
	"... the one from the prewarmed image carries the deployment label"
reap
is "$rc:$(out)" "0:" "young orphans and a young stuck container are left alone"
tb_docker inspect "$ORPH" "$NOKEY" "$(ctr "$K5")" >/dev/null 2>&1; ok $? "... all three still there"
NOW=$(date +%s)
reap --now $((NOW + 3700))
is "$rc" 0 "reap an hour later exits 0"
grep -Eqx "removed orphan $ORPH: no workspace behind it, created 1h( 1m)? ago" "$T/out"
ok $? "the orphan is removed, saying why"
grep -Eqx "removed stuck $(ctr "$K5"): created for 1h( 1m)? \(state created\)" "$T/out"
ok $? "the stuck created container is removed by force"
gone "$ORPH" && gone "$(ctr "$K5")"; ok $? "... both are gone"
tb_docker inspect "$NOKEY" "$FROMIMG" >/dev/null 2>&1
ok $? "the keyless container and the one from the prewarmed image survive (not sessions)"
cat "$T/out" "$T/err" | grep -q "$NOKEY\|$FROMIMG"
ok $((!$?)) "... and the pass never named them"
tb_docker rm -f "$NOKEY" "$FROMIMG" >/dev/null 2>&1
foreign_alive; ok $? "the foreign containers survive"
cat "$T/out" "$T/err" | grep -q "tr-other\|tr-suffix\|tr-running\|xc-foreign"
ok $((!$?)) "no pass ever named a foreign container"

# -- The race: K6 is stamped while the reaper waits for ROOT/K6's lock.
open_s acme run s6; K6=$key
N6=$(date +%s)
stamp "$K6" "$N6"
sb_hold "$K6"
bounded reap --now $((N6 + 7200)) >"$T/race.out" 2>"$T/race.err" &
reaper=$!
sb_blocked
ok $? "the reaper waits for ROOT/KEY's lock (a blocked waiter in /proc/locks)"
stamp "$K6" $((N6 + 60))
sb_release
wait $reaper
is "$?" 0 "the reaper exits 0"
grep -qx "$K6 became active during the pass; left alone" "$T/race.out"
ok $? "the reaper says it left the session alone"
grep -q "^stopped $K6" "$T/race.out"
ok $((!$?)) "... and did not stop it"
is "$(state "$K6")" running "... and its container still runs"
reap --now $((N6 + 7200))
grep -qx "stopped $K6: idle for 1h 59m (idle timeout 30m)" "$T/out"
ok $? "without the stamp, the same pass stops it"

# -- A session whose command runs longer than the idle timeout (exec
# stamps when it starts and ends, not while it runs) is not stopped.
open_s acme run s7; K7=$key
sbx exec "$K7" -- sleep 6 >/dev/null 2>&1 &
execer=$!
sb_exec_started "$K7"
# idle_busy KEY DESC: KEY stamped two hours ago (sb_idle_busy).
idle_busy() { sb_idle_busy "$1" 7200 "$2"; }
idle_busy "$K7" "an idle-looking session with an exec running is left alone, saying why"
N7=$N
is "$(state "$K7")" running "... and its container still runs"
wait $execer
reap --now $((N7 + 7200))
grep -q "^stopped $K7: idle for" "$T/out"
ok $? "once the command ended, the session idles and is stopped"

# -- The reaper never trusts "a command is running" past its deadline
# (issue 16): a command left a process running after it exited, and the
# watcher that was to stop it at the deadline died (killed here, as a
# crash would).  Once the deadline has passed, the pass stops what is left
# and the session idles out.
open_s acme run s8; K8=$key
d8=9$(($(printf '%d' "0x$sfx") % 900000 + 100000))
sbx exec "$K8" --timeout 30 -c "sleep $d8 >/dev/null 2>&1 &"
is "$rc:$(pgrep -cf "^sleep $d8\$")" "0:1" "a command left a process behind"
for w in $(pgrep -x sbxcat-deadline); do
	tr '\0' ' ' <"/proc/$w/cmdline" 2>/dev/null | grep -q "$K8" && kill -9 "$w"
done
idle_busy "$K8" "within its deadline, the session is left alone"
N8=$N
is "$(pgrep -cf "^sleep $d8\$")" 1 "... and so is the process"
# The pass's clock past the deadline (30 s) stands for waiting it out.
reap --now $((N8 + 60))
grep -q "^stopped $K8: idle for" "$T/out"
ok $? "past the deadline (its watcher gone), the session idles out: $(grep "$K8" "$T/out")"
is "$(pgrep -cf "^sleep $d8\$")" 0 "... and the process it left is gone"
# Without a watcher's help either, a process that rewrites what the old
# marker was (SBXCAT_EXEC) no longer keeps the engine's exec running for
# ever: the deadline stops it, so the session can idle out.
open_s acme run s9; K9=$key
sbx exec "$K9" --timeout 2 -- env SBXCAT_EXEC=x sleep "${d8}9"
is "$rc:$(pgrep -cf "^sleep ${d8}9\$")" "124:0" "the exec's own process with a rewritten environment is stopped at the deadline"
N9=$(date +%s)
stamp "$K9" $((N9 - 7200))
reap --now "$N9"
grep -q "^stopped $K9: idle for" "$T/out"
ok $? "... and the session idles out"

# -- --report and session ls --json: sizes.
head -c 1048576 /dev/zero >"$(ws "$K6")/big"
echo a >"$(ws "$K6")/a"
reap --report
is "$rc" 0 "--report exits 0"
b6=$(out | awk -F'\t' -v k="$K6" '$4 == k { print $1 }')
f6=$(out | awk -F'\t' -v k="$K6" '$4 == k { print $2 }')
is "$(out | head -1 | cut -f3,4)" "acme	$K6" "--report: the largest workspace first, with its tenant"
[ "${b6:-0}" -ge 1048576 ]; ok $? "--report: its bytes ($b6)"
is "$f6" 2 "--report: its files"
reap --report --limit 1 --json
is "$(jq -c '[length, .[0].key, .[0].tenant, .[0].files]' "$T/out")" "[1,\"$K6\",\"acme\",2]" "--report --limit 1 --json"
sbx session ls --json
is "$(jq -c --arg k "$K6" '.[] | select(.key == $k) | [.workspace_bytes >= 1048576, .workspace_files]' "$T/out")" \
	"[true,2]" "session ls --json gives workspace_bytes and workspace_files"

# -- Exit statuses.
reap --now yesterday
is "$rc" 2 "--now that is not a time exits 2"
reap --now 2026-02-30T10:00:00Z
is "$rc" 2 "--now of a date that does not exist exits 2"
reap --limit 0
is "$rc" 2 "--limit 0 exits 2"
reap extra
is "$rc" 2 "an operand exits 2"
DOCKER_HOST=unix://$T/no.sock reap
is "$rc" 3 "an unreachable engine exits 3"
DOCKER_HOST=unix://$T/no.sock reap --report
is "$rc" 0 "--report needs no engine"

# -- An open in progress is the open's: a session whose stopped container
# an open is starting (held 3 s in its start by a slow engine) is left
# alone by a pass that would delete it (unused past the workspace TTL),
# and the open then succeeds.
open_s acme run being-opened
KB=$key
tb_docker stop -t 0 "$(ctr "$KB")" >/dev/null
SLOW=$T/slow.sock
python3 "$srcdir/tests/stallproxy.py" "$SLOW" "${DOCKER_HOST#unix://}" "/$(insp "$KB" '{{.Id}}')/start" 3 &
SPX=$!
n=0
while [ ! -S "$SLOW" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
DOCKER_HOST=unix://$SLOW bounded session open --runtime "$RA" --tenant acme --scope run \
	--subject being-opened >"$T/bo.out" 2>"$T/bo.err" &
BOPID=$!
n=0
while [ ! -s "$SLOW.held" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
ok $((n >= 100)) "an open is held in the start of a stopped session's container"
stamp "$KB" $((N0 - 90000))
SANDBOXD_WORKSPACE_TTL=3600 reap --json
is "$(jq -r --arg k "$KB" '.actions[] | select(.key == $k) | .skipped' "$T/out")" "is being opened; left alone" \
	"a pass that would delete it leaves it alone: it is being opened"
wait "$BOPID"
is "$?:$(state "$KB")" "0:running" "... and the open succeeds, its container running"
kill -TERM "$SPX"
wait "$SPX" 2>/dev/null

foreign_alive; ok $? "the foreign containers survived every pass"
sb_done

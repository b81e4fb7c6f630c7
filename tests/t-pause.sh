#!/bin/sh
# t-pause.sh - idle sessions paused before they are stopped (issue 19,
# point 2; docs/lifetimes.md): SANDBOXD_PAUSE_AFTER checked (status 2
# naming it); a pass pauses a running session idle past it and not past
# the idle timeout (the engine's State.Paused), says so (text, --json,
# --dry-run) and writes its row; host-side fs leaves it paused; exec
# unpauses it and runs; session open unpauses it; a session with a
# command running is not paused; one whose stamp moves while the pass
# waits for its lock is left alone; a paused session past the idle
# timeout is stopped; 0, or a delay at the idle timeout, never pauses;
# the service's GET /sessions/{id} calls a paused session alive and its
# exec unpauses it.
#
# Ages are exact: records are re-stamped as root (a temporary file
# renamed over session.json) and the pass's clock is --now.
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
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
sb_init t-pause tp
command -v flock >/dev/null || skip_all "flock(1) (util-linux) is missing: the race cannot be held open"
command -v curl >/dev/null || skip_all "curl is missing"

DB=""
SPID=""
trap 'sb_serve_stop; [ -n "$DB" ] && pgbed_dropdb "$DB" 2>/dev/null; sb_cleanup' EXIT
if pgbed_start; then
	DB=t_pause_$$
	URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
	SBXCAT_DATABASE_URL=$URL
	export SBXCAT_DATABASE_URL
	sbx audit migrate
	is "$rc" 0 "the test's database migrated"
fi
# rows DETAIL KEY: the ok reap rows of KEY with that detail ("-" without
# a database).
rows() {
	[ -n "$DB" ] || { echo -; return; }
	pgbed_psql "$DB" -c "SELECT count(*) FROM sandbox_operations WHERE op = 'reap'
		AND ok AND detail = '$1' AND session_key = '$2' AND target = '$(ctr "$2")'"
}
need_db() { [ -n "$DB" ] || { skip "no PostgreSQL test-bed" "$1"; return 1; }; }

unset SANDBOXD_CONTAINER_TTL SANDBOXD_WORKSPACE_TTL
SANDBOXD_PAUSE_AFTER=1 SANDBOXD_IDLE_TIMEOUT=60
export SANDBOXD_PAUSE_AFTER SANDBOXD_IDLE_TIMEOUT

stamp() { sb_stamp "$@"; }
activity() { jq -r .last_activity "$ROOT/$1/session.json"; }
reap() { sbx reap "$@"; }
paused() { insp "$1" '{{.State.Status}} {{.State.Paused}}'; }

# -- The variable.
for v in abc -1 1.5 ' 2' 999999999999; do
	SANDBOXD_PAUSE_AFTER=$v reap --dry-run
	is "$rc" 2 "SANDBOXD_PAUSE_AFTER='$v' exits 2"
	grep -q "^sbxcat: SANDBOXD_PAUSE_AFTER '" "$T/err"
	ok $? "... naming the variable" || diag "$(cat "$T/err")"
done

# -- A pass pauses an idle session.
open_s acme run p1; K1=$key
[ -n "$K1" ]; ok $? "a session open"
echo kept >"$(ws "$K1")/a.txt" && chown 10001:10001 "$(ws "$K1")/a.txt"
N=$(date +%s)
stamp "$K1" "$N"
reap --now "$N"
is "$rc:$(out):$(paused "$K1")" "0::running false" "idle for no time: nothing done"
reap --dry-run --now $((N + 5))
is "$rc:$(out)" "0:would pause $K1: idle for 5s (pause after 1s)" "--dry-run: would pause, saying why"
is "$(paused "$K1")" "running false" "... and pauses nothing"
reap --now $((N + 5)) --json
is "$rc" 0 "the pass exits 0"
is "$(jq -c --arg k "$K1" '[.actions[] | select(.key == $k) | .action, .done, .error, .skipped, .age_s, .reason]' "$T/out")" \
	'["pause",true,null,null,5,"idle for 5s (pause after 1s)"]' "--json: the action pause, done"
is "$(paused "$K1")" "paused true" "the engine says State.Paused"
if need_db "the pause is one reap row, ok, naming its container"; then
	is "$(rows 'idle: container paused' "$K1")" 1 "the pause is one reap row, ok, naming its container"
fi
sbx session show "$K1" --json
is "$(jq -r .state "$T/out")" paused "session show: paused"
reap --now $((N + 30))
is "$rc:$(out):$(paused "$K1")" "0::paused true" "a paused session within the idle timeout is left as it is"

# -- Host-side fs does not unpause; exec does.
sbx fs "$K1" read a.txt
is "$rc:$(out | cut -f2)" "0:kept" "fs read on a paused session works"
is "$(paused "$K1")" "paused true" "... and leaves it paused"
stamp "$K1" $((N - 100))
sbx exec "$K1" -- cat a.txt
is "$rc:$(out)" "0:kept" "exec on a paused session runs, its output right"
is "$(paused "$K1")" "running false" "... having unpaused it"
a=$(activity "$K1")
[ "$a" -ge "$N" ]; ok $? "... and stamped it (last activity $a, was $((N - 100)))"

# -- session open unpauses.
stamp "$K1" "$N"
reap --now $((N + 5))
is "$(paused "$K1")" "paused true" "paused again"
open_s acme run p1 --json
is "$rc:$(jq -r .key "$T/out"):$(jq -r .outcome "$T/out")" "0:$K1:adopted" "session open of a paused session adopts it"
is "$(paused "$K1")" "running false" "... unpaused"

# -- A paused session past the idle timeout is stopped.
stamp "$K1" "$N"
reap --now $((N + 5))
is "$(paused "$K1")" "paused true" "paused once more"
reap --now $((N + 120))
is "$rc:$(out)" "0:stopped $K1: idle for 2m (idle timeout 1m)" "past the idle timeout the paused session is stopped"
is "$(state "$K1")" exited "... its container exited"
if need_db "the stop is its row"; then
	is "$(rows 'idle: container stopped' "$K1"):$(rows 'idle: container paused' "$K1")" 1:3 \
		"the stop is its row, beside the three pauses"
fi

# -- 0 never pauses; nor does a delay at or past the idle timeout.
open_s acme run p2; K2=$key
N=$(date +%s)
stamp "$K2" "$N"
SANDBOXD_PAUSE_AFTER=0 reap --now $((N + 30))
is "$rc:$(out):$(paused "$K2")" "0::running false" "SANDBOXD_PAUSE_AFTER=0 never pauses"
SANDBOXD_PAUSE_AFTER=60 reap --now $((N + 59))
is "$rc:$(out):$(paused "$K2")" "0::running false" "a delay equal to the idle timeout never pauses"
SANDBOXD_PAUSE_AFTER=0 reap --now $((N + 61))
is "$rc:$(out)" "0:stopped $K2: idle for 1m 1s (idle timeout 1m)" "SANDBOXD_PAUSE_AFTER=0: the idle timeout still stops"

# -- A session with a command running is not paused.
open_s acme run p3; K3=$key
sbx exec "$K3" -- sleep 3 >/dev/null 2>&1 &
execer=$!
sb_exec_started "$K3"
sb_idle_busy "$K3" 10 "a session with a command running is left alone, saying why"
is "$(paused "$K3")" "running false" "... not paused"
wait $execer
N=$(date +%s)
stamp "$K3" $((N - 10))
reap --now "$N"
is "$rc:$(out):$(paused "$K3")" "0:paused $K3: idle for 10s (pause after 1s):paused true" \
	"once the command ended, the pass pauses it"

# -- The stamp moves while the pass waits for ROOT/KEY's lock.
open_s acme run p4; K4=$key
N=$(date +%s)
stamp "$K4" "$N"
sb_hold "$K4"
bounded reap --now $((N + 5)) >"$T/race.out" 2>"$T/race.err" &
reaper=$!
sb_blocked
ok $? "the pass waits for ROOT/KEY's lock"
stamp "$K4" $((N + 1))
sb_release
wait $reaper
is "$?:$(cat "$T/race.out")" "0:$K4 became active during the pass; left alone" \
	"a stamp that moved meanwhile: the session is left alone, saying so"
is "$(paused "$K4")" "running false" "... not paused"

# -- The service: a paused session is alive, its exec unpauses it.
TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SOCK=$T/serve.sock
SANDBOXD_TOKEN=$TOKEN "$S" -C "$CAT" serve --listen "unix:$SOCK" 2>>"$T/log" &
SPID=$!
sb_serve_wait "$SOCK"
wire() { sb_wire "$@"; }
SID=pause-$sfx
wire POST /sessions "{\"session_id\": \"$SID\", \"runtime\": \"$RA\"}"
KW=$(sb_wire_key "$SID")
[ "$st" = 200 ] && [ -n "$KW" ] && [ "$KW" != null ]
ok $? "the service opens a session ($st)" || diag "$(cat "$T/w" "$T/log")"
N=$(date +%s)
stamp "$KW" "$N"
reap --now $((N + 5))
is "$rc:$(grep "$KW" "$T/out"):$(paused "$KW")" "0:paused $KW: idle for 5s (pause after 1s):paused true" \
	"the pass pauses it"
wire GET "/sessions/$SID"
is "$st:$(jq -c '[.alive, .state]' "$T/w")" '200:[true,"running"]' "GET /sessions/{id}: a paused session is alive, its state running"
sleep 1 # /healthz's counts stand for a second
wire GET /healthz
is "$(jq -r .sessions "$T/w")" 1 "/healthz counts it as resident"
wire POST "/sessions/$SID/exec" '{"command": "echo woke"}'
is "$st:$(jq -c '[.output, .exit_code]' "$T/w")" '200:["woke\n",0]' "exec through the service runs"
is "$(paused "$KW")" "running false" "... having unpaused it"
sb_serve_stop

sb_done

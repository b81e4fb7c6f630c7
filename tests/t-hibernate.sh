#!/bin/sh
# t-hibernate.sh - hibernation and the bound on open sessions (issue 19,
# point 2; docs/sessions.md, "Hibernation") on the real engine:
# SANDBOXD_EVICT_IDLE_AFTER and SANDBOXD_MAX_OPEN_SESSIONS checked (status
# 2 naming them); at SANDBOXD_MAX_SESSIONS an open hibernates the least
# recently used idle session (its container stopped, its record, files and
# tokens kept, its mark ROOT/KEY/hibernated; "hibernated" in session
# show/ls and on the wire, alive false), never one with a command
# running, idle less than the delay or being opened; without the delay
# the open is refused as before; session open of a hibernated key wakes
# it; through the service an exec wakes it (its output and files right),
# or, with nothing to evict, is 429 "Cannot wake session ..."; over
# SANDBOXD_MAX_OPEN_SESSIONS a new key's open closes the session
# hibernated longest, else is 429 with sandboxd's words (status 1 on the
# command line); /healthz's open_sessions and open_limit; the reaper
# releases a hibernated session past the idle timeout; every hibernation
# and every close for room has its audit row (the spool's).
#
# Ages are exact: records are re-stamped as root (sb_stamp).
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
sb_init t-hibernate th
command -v curl >/dev/null || skip_all "curl is missing"
command -v flock >/dev/null || skip_all "flock(1) (util-linux) is missing: an open in progress cannot be held"

SPID=""
trap 'sb_serve_stop; sb_cleanup' EXIT

unset SANDBOXD_CONTAINER_TTL SANDBOXD_WORKSPACE_TTL SANDBOXD_EVICT_IDLE_AFTER \
	SANDBOXD_MAX_OPEN_SESSIONS
SANDBOXD_MAX_SESSIONS=2 SANDBOXD_PAUSE_AFTER=0 SANDBOXD_IDLE_TIMEOUT=600
SANDBOXD_CLEANUP_INTERVAL=3600
export SANDBOXD_MAX_SESSIONS SANDBOXD_PAUSE_AFTER SANDBOXD_IDLE_TIMEOUT \
	SANDBOXD_CLEANUP_INTERVAL
EV=60

stamp() { sb_stamp "$@"; }
activity() { jq -r .last_activity "$ROOT/$1/session.json"; }
# op KEY: session open of subject KEY by acme, hibernating (SANDBOXD_EVICT_IDLE_AFTER=60).
hopen() { SANDBOXD_EVICT_IDLE_AFTER=$EV open_s acme run "$@" --runtime "$RSMALL"; }
# rows OP DETAIL KEY: the spool's ok rows of KEY with that op and detail.
rows() {
	jq -c --arg op "$1" --arg d "$2" --arg k "$3" \
		'select(.op == $op and .detail == $d and .session == $k and .ok)' \
		"$T/spool/audit.jsonl" 2>/dev/null | wc -l | tr -d ' '
}
HIB='hibernated: container stopped to make room'
marked() { [ -f "$ROOT/$1/hibernated" ]; }

# -- The variables.
for v in abc 0 -1 1.5; do
	SANDBOXD_EVICT_IDLE_AFTER=$v sbx reap --dry-run
	is "$rc" 2 "SANDBOXD_EVICT_IDLE_AFTER='$v' exits 2"
	grep -q "^sbxcat: SANDBOXD_EVICT_IDLE_AFTER '" "$T/err"
	ok $? "... naming the variable" || diag "$(cat "$T/err")"
done
for v in abc 0 -3; do
	SANDBOXD_MAX_OPEN_SESSIONS=$v sbx reap --dry-run
	is "$rc" 2 "SANDBOXD_MAX_OPEN_SESSIONS='$v' exits 2"
	grep -q "^sbxcat: SANDBOXD_MAX_OPEN_SESSIONS '" "$T/err"
	ok $? "... naming the variable" || diag "$(cat "$T/err")"
done
SANDBOXD_MAX_OPEN_SESSIONS=1 sbx reap --dry-run
is "$rc" 2 "SANDBOXD_MAX_OPEN_SESSIONS below SANDBOXD_MAX_SESSIONS exits 2"
grep -q "SANDBOXD_MAX_OPEN_SESSIONS (1) must be at least SANDBOXD_MAX_SESSIONS (2)" "$T/err"
ok $? "... naming both" || diag "$(cat "$T/err")"

# -- At the ceiling, the least recently used idle session is hibernated.
hopen h1; K1=$key
hopen h2; K2=$key
[ -n "$K1" ] && [ -n "$K2" ]; ok $? "two sessions open, the host's ceiling"
echo kept >"$(ws "$K1")/a.txt" && chown 10001:10001 "$(ws "$K1")/a.txt"
C1=$(insp "$K1" '{{.Id}}')
N=$(date +%s)
stamp "$K1" $((N - 300))
stamp "$K2" $((N - 200))
hopen h3 --json; K3=$key
is "$rc:$(jq -r .outcome "$T/out" 2>/dev/null)" "0:created" "a third open at the ceiling opens" || diag "$(cat "$T/err")"
is "$(state "$K1"):$(state "$K2"):$(state "$K3")" "exited:running:running" \
	"... having stopped the least recently used idle session's container"
is "$(insp "$K1" '{{.Id}}')" "$C1" "... the same container, kept"
is "$(activity "$K1")" $((N - 300)) "its record is kept, its last activity as it was"
is "$(stat -c '%u %a' "$ROOT/$K1/hibernated" 2>/dev/null)" "0 600" "its mark ROOT/KEY/hibernated is root's, 0600"
m=$(cat "$ROOT/$K1/hibernated")
[ "$m" -ge "$N" ] 2>/dev/null; ok $? "... holding the time it was made ($m)"
sbx session show "$K1" --json
is "$rc:$(jq -r .state "$T/out")" "0:hibernated" "session show: hibernated"
sbx session ls --json
is "$(jq -r --arg k "$K1" '.[] | select(.key == $k) | .state' "$T/out")" hibernated "session ls: hibernated"
is "$(rows reap "$HIB" "$K1")" 1 "the hibernation is one reap row, ok, of its session"
is "$(jq -r --arg k "$K1" 'select(.op == "reap" and .session == $k) | .target' "$T/spool/audit.jsonl")" \
	"$(ctr "$K1")" "... naming its container"

# -- Without SANDBOXD_EVICT_IDLE_AFTER the open is refused, as before.
stamp "$K2" $((N - 200))
stamp "$K3" $((N - 200))
open_s acme run h4 --runtime "$RSMALL"
is "$rc:$(err)" "1:sbxcat: the host holds its ceiling of 2 sessions" \
	"without SANDBOXD_EVICT_IDLE_AFTER an open at the ceiling is refused"
is "$(state "$K2"):$(state "$K3")" "running:running" "... nothing hibernated"

# -- Never chosen: a session being opened, one with a command running,
# one idle less than the delay.
flock "$ROOT/$K2/open.lock" sh -c "touch '$T/held'; while [ ! -e '$T/release' ]; do sleep 0.05; done" &
holder=$!
n=0; while [ ! -e "$T/held" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
stamp "$K3" "$N"
hopen h4
is "$rc:$(err)" "1:sbxcat: the host holds its ceiling of 2 sessions" \
	"an open whose only idle candidate is being opened is refused"
is "$(state "$K2")" running "... the session being opened is left running"
touch "$T/release"; wait $holder
sbx exec "$K2" -- sleep 4 >/dev/null 2>&1 &
execer=$!
sb_exec_started "$K2"
sleep 0.5 # the exec's stamp at its claim lands before ours
stamp "$K2" $((N - 200))
hopen h4
is "$rc:$(err)" "1:sbxcat: the host holds its ceiling of 2 sessions" \
	"an open whose idle candidate runs a command is refused"
is "$(state "$K2"):$(activity "$K2")" "running:$((N - 200))" \
	"... the session with the command running left running, its stamp the idle one"
wait $execer
N=$(date +%s)
stamp "$K2" $((N - EV + 5))
stamp "$K3" $((N - EV + 5))
hopen h4
is "$rc:$(state "$K2"):$(state "$K3")" "1:running:running" \
	"sessions idle less than SANDBOXD_EVICT_IDLE_AFTER are not hibernated"

# -- session open of a hibernated key wakes it.
stamp "$K3" $((N - 100))
hopen h1 --json
is "$rc:$(jq -r .key "$T/out"):$(jq -r .outcome "$T/out")" "0:$K1:woken" "session open of a hibernated session wakes it"
is "$(state "$K1"):$(insp "$K1" '{{.Id}}')" "running:$C1" "... its own container started again"
marked "$K1"; ok $((!$?)) "... its mark gone"
is "$(state "$K3")" exited "... the least recently used idle session hibernated for it"
is "$(rows reap "$HIB" "$K3")" 1 "... with its row"
sbx exec "$K1" -- cat a.txt
is "$rc:$(out)" "0:kept" "the woken session's files are there"
sbx session close "$K3"
is "$rc:$(state "$K3")" "0:" "session close of a hibernated session removes its container"
marked "$K3"; ok $((!$?)) "... and its mark"
sbx session close "$K1" && sbx session close "$K2"

# -- The service.
TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SOCK=$T/serve.sock
serve() {
	sb_serve_stop
	rm -f "$SOCK"
	SANDBOXD_TOKEN=$TOKEN SANDBOXD_EVICT_IDLE_AFTER=$EV SANDBOXD_MAX_OPEN_SESSIONS=$1 \
		"$S" -C "$CAT" serve --listen "unix:$SOCK" 2>>"$T/log" &
	SPID=$!
	sb_serve_wait "$SOCK"
}
wire() { sb_wire "$@"; }
# wopen ID: POST /sessions; its key in $kw, its token in $tw.
wopen() {
	wire POST /sessions "{\"session_id\": \"$1\", \"runtime\": \"$RSMALL\"}"
	kw=$(sb_wire_key "$1") tw=$(jq -r .token "$T/w" 2>/dev/null)
}
wstate() { wire GET "/sessions/$1"; jq -c '[.state, .alive]' "$T/w"; }
ntokens() { jq '.tokens | length' "$ROOT/$1/wire.json"; }
serve 3
W1=w1-$sfx W2=w2-$sfx W3=w3-$sfx W4=w4-$sfx W5=w5-$sfx
wopen "$W1"; KW1=$kw TW1=$tw
is "$st" 200 "the service opens $W1" || diag "$(cat "$T/w" "$T/log")"
wopen "$W2"; KW2=$kw TW2=$tw
is "$st" 200 "... and $W2"
wire POST "/sessions/$W1/write" '{"path": "note.txt", "content_b64": "aGVsbG8K"}'
is "$st" 200 "a file written into $W1"
N=$(date +%s)
stamp "$KW1" $((N - 300))
stamp "$KW2" $((N - 200))
wopen "$W3"; KW3=$kw
is "$st" 200 "at the ceiling, $W3 opens" || diag "$(cat "$T/w")"
is "$(state "$KW1")" exited "... $W1, the least recently used, hibernated"
is "$(wstate "$W1")" '["hibernated",false]' "GET /sessions/{id}: state hibernated, alive false"
wire GET "/sessions/$W1" "" "$TW1"
is "$st:$(ntokens "$KW1")" "200:1" "... its token still good, kept"
wire GET /sessions
is "$(jq -c --arg id "$W1" '[.sessions[] | select(.session_id == $id) | .state, .alive]' "$T/w"):$(jq .open_limit "$T/w")" \
	'["hibernated",false]:3' "the list: hibernated, open_limit 3"
sleep 1 # /healthz's counts stand for a second
wire GET /healthz
is "$(jq -c '[.sessions, .limit, .open_sessions, .open_limit]' "$T/w")" '[2,2,3,3]' \
	"/healthz: 2 resident of 2, 3 open of 3 (the hibernated one counted)"
is "$(rows reap "$HIB" "$KW1")" 1 "the hibernation by the service is its row"

# -- An operation wakes a hibernated session.
stamp "$KW2" $((N - 200))
wire POST "/sessions/$W1/exec" '{"command": "cat note.txt; id -u"}'
is "$st:$(jq -c '[.output, .exit_code]' "$T/w")" '200:["hello\n10001\n",0]' \
	"exec on the hibernated session runs, its output and files right"
is "$(wstate "$W1"):$(state "$KW1")" '["running",true]:running' "... it is awake"
marked "$KW1"; ok $((!$?)) "... its mark gone"
is "$(state "$KW2"):$(rows reap "$HIB" "$KW2")" "exited:1" "... $W2, idle, hibernated for it, with its row"

# -- Nothing to evict: 429.
wire POST "/sessions/$W2/exec" '{"command": "echo no"}'
is "$st" 429 "exec on a hibernated session with a full host and nothing idle: 429"
case $(jq -r .detail "$T/w") in "Cannot wake session $W2: "?*) r=0 ;; *) r=1 ;; esac
ok $r "... \"Cannot wake session $W2: ...\"" || diag "$(cat "$T/w")"
wire POST /sessions "{\"session_id\": \"$W2\", \"reuse\": true}"
case $st:$(jq -r .detail "$T/w") in "429:Cannot wake session $W2: "?*) r=0 ;; *) r=1 ;; esac
ok $r "... and so is its reuse (POST /sessions)" || diag "$st $(cat "$T/w")"
is "$(wstate "$W2")" '["hibernated",false]' "... it stays hibernated"

# -- SANDBOXD_MAX_OPEN_SESSIONS: a new key closes the one hibernated longest.
N=$(date +%s)
stamp "$KW3" $((N - 200))
wopen "$W4"; KW4=$kw
is "$st" 200 "at 3 open sessions of 3, a new id opens" || diag "$(cat "$T/w")"
tb_docker inspect "$(ctr "$KW2")" >/dev/null 2>&1
ok $((!$?)) "... $W2, hibernated the longest, closed: its container removed"
wire GET "/sessions/$W2"
is "$st" 404 "... no longer a session ($st)"
wire GET "/sessions/$W2" "" "$TW2"
is "$st:$(ntokens "$KW2")" "401:0" "... its tokens dropped"
[ -f "$ROOT/$KW2/session.json" ] && ! marked "$KW2"
ok $? "... its record kept as a close keeps it, its mark gone"
is "$(rows close 'closed to make room: hibernated the longest' "$KW2")" 1 "... the close is its row"
is "$(wstate "$W3"):$(rows reap "$HIB" "$KW3")" '["hibernated",false]:1' \
	"... and $W3, idle, hibernated to give the host room, with its row"

# -- ... else 429 (the ceiling at the resident one's: nothing to close).
serve 2
wopen "$W5"
is "$st:$(jq -r .detail "$T/w")" \
	"429:Service holds its ceiling of 2 open sessions and all of them are in use. Close one before opening another." \
	"over SANDBOXD_MAX_OPEN_SESSIONS with too few hibernated: 429 in sandboxd's words"
is "$(wstate "$W3")" '["hibernated",false]' "... nothing closed for nothing"
SANDBOXD_MAX_OPEN_SESSIONS=2 hopen h9
is "$rc:$(err)" "1:sbxcat: the host holds its ceiling of 2 open sessions and all of them are in use; close one first" \
	"the command line: status 1, plainly"
sb_serve_stop

# -- The reaper releases a hibernated session past the idle timeout.
N=$(date +%s)
stamp "$KW1" "$N"
stamp "$KW4" "$N"
stamp "$KW3" $((N - 700))
sbx reap --now "$N"
is "$rc:$(grep "$KW3" "$T/out")" "0:released $KW3: hibernated, idle for 11m 40s (idle timeout 10m)" \
	"a hibernated session idle past the idle timeout is released"
marked "$KW3"; ok $((!$?)) "... its mark gone"
is "$(ntokens "$KW3"):$(state "$KW3")" "0:exited" "... its tokens dropped, its container stopped as an idle one's"
is "$(rows reap 'idle: hibernated session closed' "$KW3")" 1 "... the release is its row"
is "$(state "$KW1"):$(state "$KW4")" "running:running" "... the active sessions untouched"

# What a hibernation costs an open (the audit's own durations).
diag "hibernations took $(jq -r --arg d "$HIB" 'select(.op == "reap" and .detail == $d) | .duration_ms' "$T/spool/audit.jsonl" | tr '\n' ' ')ms; every open that succeeded took $(jq -r 'select(.op == "open" and .ok) | .duration_ms' "$T/spool/audit.jsonl" | tr '\n' ' ')ms"

# -- Every hibernation has its row: five in this test.
is "$(jq -c --arg d "$HIB" 'select(.op == "reap" and .detail == $d)' "$T/spool/audit.jsonl" | wc -l | tr -d ' ')" 5 \
	"every hibernation is one row, none more"

sb_done

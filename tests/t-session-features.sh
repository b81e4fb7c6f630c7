#!/bin/sh
# t-session-features.sh - a session's labels, expiry and durability (issue
# 20) against the real engine, through the command line as
# docs/sessions.md states them: labels round-trip exactly through open,
# show (text and JSON) and ls --json, unicode and empty values included,
# never with sbxcat's own container labels; bad labels are refused (exit
# 2) naming the label, before anything is made; a reopen keeps or
# replaces them; expires_at is the last activity plus the idle timeout,
# and session touch (its audit row: op open, detail touched) and exec
# move it; an ephemeral session's workspace is gone after close and after
# the reaper reaps it, kept through hibernation; a persistent one's kept;
# a reopen of another durability is a conflict (exit 1).
#
# Everything runs under a deployment id and a workspace root of this
# run's own (sessionbed.sh).
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
sb_init t-session-features tf

SANDBOXD_IDLE_TIMEOUT=600
export SANDBOXD_IDLE_TIMEOUT
# A second setting of the idle pause would pause sessions under the test.
SANDBOXD_PAUSE_AFTER=0
export SANDBOXD_PAUSE_AFTER
# rows OP DETAIL KEY: the spool's ok rows of KEY with that op and detail.
rows() {
	jq -c --arg op "$1" --arg d "$2" --arg k "$3" \
		'select(.op == $op and .detail == $d and .session == $k and .ok)' \
		"$T/spool/audit.jsonl" 2>/dev/null | wc -l | tr -d ' '
}
# epoch RFC3339: Unix seconds.
epoch() { date -u -d "$1" +%s 2>/dev/null || echo bad; }
# A value with unicode, quotes, '=' and a backslash at its end.
# shellcheck disable=SC1003
CAFE=$(printf 'caf\303\251 \360\237\220\210 = "q" \\')

# -- Labels: given at open, given back exactly.
open_s acme run lab-1 --label env=prod --label "team=$CAFE" --label empty= \
	--label "a/b.c_d-e=x=y" --json
KL=$key
is "$rc" 0 "open with four labels exits 0"
WANT=$(jq -cn --arg c "$CAFE" '{"a/b.c_d-e": "x=y", empty: "", env: "prod", team: $c}')
is "$(jq -cS .labels "$T/out")" "$WANT" "open --json gives the labels exactly"
sbx session show "$KL" --json
is "$(jq -cS .labels "$T/out")" "$WANT" "show --json gives them exactly (unicode, an empty value, '=' in a value)"
is "$(jq -r '.labels | keys[] | select(startswith("io.sbxcat"))' "$T/out")" "" \
	"show gives none of sbxcat's own labels"
tb_docker inspect -f '{{index .Config.Labels "io.sbxcat.tenant"}}' "$(ctr "$KL")" >"$T/lab"
is "$(cat "$T/lab")" acme "(the container does carry sbxcat's io.sbxcat.tenant)"
is "$(insp "$KL" '{{index .Config.Labels "env"}}')" "" "a user's label is not put on the container"
sbx session ls --json
is "$(jq -cS --arg k "$KL" '.[] | select(.key == $k) | .labels' "$T/out")" "$WANT" \
	"ls --json gives them exactly"
is "$(jq -r --arg k "$KL" '[.[] | select(.key == $k) | .labels | keys[] | select(startswith("io."))] | length' "$T/out")" 0 \
	"ls gives none of sbxcat's own labels"
sbx session show "$KL"
# (the text escapes as every message does: a backslash doubled)
grep -qxF "labels.team: $(printf '%s' "$CAFE" | sed 's/\\/\\\\/g')" "$T/out"
ok $? "show's text has labels.team: ..., unicode as it is"
grep -qxF "labels.empty: " "$T/out"; ok $? "show's text has the empty one"

# A reopen without labels keeps them; with labels, they replace them.
open_s acme run lab-1 --json
is "$(jq -cS .labels "$T/out")" "$WANT" "a reopen without --label keeps the labels"
open_s acme run lab-1 --label only=one --json
is "$(jq -cS .labels "$T/out")" '{"only":"one"}' "a reopen with --label replaces them"
sbx session show "$KL" --json
is "$(jq -cS .labels "$T/out")" '{"only":"one"}' "... and show says so"

# A label with nothing: {} everywhere.
open_s acme run lab-0 --json
K0=$key
is "$(jq -c .labels "$T/out")" '{}' "a session without labels has {}"

# Bad labels: refused, exit 2, the label named, nothing made.
n0=$(ndep)
bad() {
	want=$1
	shift
	open_s acme run lab-bad "$@"
	is "$rc" 2 "refused (exit 2): $want"
	grep -qF -- "$want" "$T/err"
	ok $? "... the message names it ($(head -n 1 "$T/err"))"
}
bad "label 'io.sbxcat.tenant': keys in 'io.sbxcat' are sbxcat's own labels" --label io.sbxcat.tenant=evil
bad "label 'IO.SBXCAT.key'" --label IO.SBXCAT.key=evil
bad "label 'a b'" --label "a b=c"
bad "label '.x'" --label ".x=1"
bad "label 'nl': a label's value holds a control character" --label "nl=$(printf 'a\nb')"
bad "label 'esc'" --label "esc=$(printf 'a\033[2Jb')"
bad "label 'bidi'" --label "bidi=$(printf 'a\342\200\256b')"
bad "label 'bin': a label's value is not valid UTF-8" --label "bin=$(printf 'a\377b')"
bad "label 'long': a label's value is longer than 256 bytes" --label "long=$(head -c 257 /dev/zero | tr '\0' v)"
bad "a label's key is longer than 63 bytes" --label "$(head -c 64 /dev/zero | tr '\0' k)=1"
bad "label 'novalue': not KEY=VALUE" --label novalue
bad "label 'twice': given twice" --label twice=1 --label twice=2
set --
i=0
while [ $i -lt 33 ]; do set -- "$@" --label "k$i=v"; i=$((i + 1)); done
bad "at most 32 --label" "$@"
set --
i=0
while [ $i -lt 32 ]; do set -- "$@" --label "k$i=v"; i=$((i + 1)); done
open_s acme run lab-32 "$@" --json
is "$rc:$(jq '.labels | length' "$T/out")" "0:32" "32 labels are taken"
K32=$key
is "$(ndep)" "$((n0 + 1))" "the refused opens made no container"
bad "durability 'forever' is neither ephemeral nor persistent" --durability forever

# -- Expiry: the last activity plus the idle timeout.
sbx session show "$K0" --json
la=$(epoch "$(jq -r .last_activity "$T/out")")
ex=$(epoch "$(jq -r .expires_at "$T/out")")
is "$((ex - la))" 600 "expires_at is last_activity + SANDBOXD_IDLE_TIMEOUT (600 s)"
jq -r .expires_at "$T/out" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
ok $? "expires_at is RFC 3339, UTC"
sbx session ls --json
is "$(jq -r --arg k "$K0" '.[] | select(.key == $k) | .expires_at' "$T/out")" \
	"$(date -u -d "@$ex" +%Y-%m-%dT%H:%M:%SZ)" "ls --json gives the same expires_at"
SANDBOXD_IDLE_TIMEOUT=60 sbx session show "$K0" --json
is "$(($(epoch "$(jq -r .expires_at "$T/out")") - la))" 60 "it follows the idle timeout in force"

# touch: the stamp moves to now, and with it the expiry.
OLD=$(($(date +%s) - 500))
sb_stamp "$K0" "$OLD"
sbx session show "$K0" --json
is "$(epoch "$(jq -r .expires_at "$T/out")")" $((OLD + 600)) "a session idle for 500 s expires in 100 s"
t0=$(date +%s)
sbx session touch "$K0"
t1=$(date +%s)
is "$rc" 0 "session touch exits 0"
ex=$(epoch "$(out)")
[ "$ex" != bad ] && [ "$ex" -ge $((t0 + 600)) ] && [ "$ex" -le $((t1 + 600)) ]
ok $? "touch prints the new expires_at, now + 600 s ($(out))"
is "$(jq -r .last_activity "$ROOT/$K0/session.json")" "$((ex - 600))" "the record's last activity is now"
is "$(rows open touched "$K0")" 1 "touch wrote its audit row (op open, detail touched)"
sbx session touch "$K0" --json
is "$(jq -r '[.key, (.expires_at | type), (.last_activity | type)] | join(" ")' "$T/out")" \
	"$K0 string string" "touch --json gives key, last_activity, expires_at"
sbx session touch xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa
is "$rc" 1 "touch of no session exits 1"
grep -q "no session" "$T/err"; ok $? "... saying no session"
sbx session touch "$K0" --tenant other
is "$rc" 1 "touch of another tenant's session exits 1 (as none)"
# Any operation extends it too: exec.
sb_stamp "$K0" "$OLD"
sbx exec "$K0" -- true
sbx session show "$K0" --json
[ "$(epoch "$(jq -r .expires_at "$T/out")")" -ge $((t0 + 600)) ]
ok $? "an exec moves expires_at on as well"

# -- Durability.
sbx session show "$K0" --json
is "$(jq -r .durability "$T/out")" persistent "the default durability is persistent"
open_s acme run eph-1 --durability ephemeral --json
KE=$key
is "$rc:$(jq -r .durability "$T/out")" "0:ephemeral" "open --durability ephemeral"
sbx session show "$KE" --json
is "$(jq -r .durability "$T/out")" ephemeral "show gives durability ephemeral"
WSE=$(jq -r .workspace "$T/out")
sbx exec "$KE" -c "echo kept > notes.txt"
[ -f "$WSE/notes.txt" ]; ok $? "the ephemeral session wrote a file in its workspace"
open_s acme run eph-1 --durability persistent
is "$rc" 1 "a reopen asking persistent of an ephemeral session exits 1 (conflict)"
grep -q "is ephemeral, not persistent" "$T/err"; ok $? "... saying why ($(head -n 1 "$T/err"))"
open_s acme run eph-1 --json
is "$rc:$(jq -r .durability "$T/out")" "0:ephemeral" "a reopen without --durability keeps it"
sbx session close "$KE" --json
is "$rc:$(jq -r .purged "$T/out")" "0:true" "closing an ephemeral session purges it"
[ ! -e "$WSE" ] && [ ! -e "$ROOT/$KE" ]
ok $? "its workspace and ROOT/KEY are gone"
is "$(tb_docker ps -aq --filter "name=$(ctr "$KE")" | wc -l | tr -d ' ')" 0 "its container is gone"
sbx session show "$KE"
is "$rc" 1 "show of it afterwards: no session"
is "$(rows close 'purged: ephemeral' "$KE")" 1 "the close's row says purged: ephemeral"

# A persistent one keeps its files after close.
open_s acme run per-1 --durability persistent --json
KP=$key
WSP=$(jq -r .workspace "$T/out")
sbx exec "$KP" -c "echo kept > notes.txt"
sbx session close "$KP" --json
is "$rc:$(jq -r .purged "$T/out")" "0:false" "closing a persistent session does not purge"
is "$(cat "$WSP/notes.txt" 2>/dev/null)" kept "its workspace is kept, file and all"
open_s acme run per-1 --durability ephemeral
is "$rc" 1 "a reopen asking ephemeral of a closed persistent session exits 1"
grep -q "is persistent, not ephemeral" "$T/err"; ok $? "... saying why"

# The reaper: an ephemeral session idle past the idle timeout goes whole;
# a persistent one is stopped and keeps its files.
open_s acme run eph-2 --durability ephemeral --json
KE2=$key
WSE2=$(jq -r .workspace "$T/out")
open_s acme run per-2 --json
KP2=$key
WSP2=$(jq -r .workspace "$T/out")
sbx exec "$KE2" -c "echo x > f"
sbx exec "$KP2" -c "echo x > f"
OLD=$(($(date +%s) - 700))
sb_stamp "$KE2" "$OLD"
sb_stamp "$KP2" "$OLD"
sbx reap --dry-run
grep -q "would delete $KE2: ephemeral, idle for" "$T/out"; ok $? "reap --dry-run would delete the ephemeral session ($(grep "$KE2" "$T/out"))"
sbx reap
is "$rc" 0 "reap exits 0"
grep -q "deleted $KE2: ephemeral, idle" "$T/out"; ok $? "reap deleted the idle ephemeral session"
grep -q "stopped $KP2: idle" "$T/out"; ok $? "reap stopped the idle persistent one"
[ ! -e "$WSE2" ] && [ ! -e "$ROOT/$KE2" ]; ok $? "the ephemeral workspace is gone"
is "$(tb_docker ps -aq --filter "name=$(ctr "$KE2")" | wc -l | tr -d ' ')" 0 "its (running) container is removed"
[ -f "$WSP2/f" ]; ok $? "the persistent workspace is kept"
is "$(rows reap 'ephemeral, idle: deleted' "$KE2")" 1 "the reap's row says ephemeral, idle: deleted"

# ... but never from under a command of sbxcat's running in it.
open_s acme run eph-busy --durability ephemeral
KB=$key
bounded exec "$KB" -- sleep 6 >/dev/null 2>&1 &
bpid=$!
sb_exec_started "$KB"
sb_idle_busy "$KB" 700 "an idle ephemeral session with a command running is left alone"
[ -d "$ROOT/$KB/workspace" ]; ok $? "... its workspace kept meanwhile"
wait "$bpid"
sbx session close "$KB"

# Hibernation keeps an ephemeral session's workspace (it only stops the
# container); its next open wakes it with its files.
sbx session close "$KL" --purge
sbx session close "$K0" --purge
sbx session close "$K32" --purge
sbx session close "$KP2" --purge
open_s acme run eph-3 --durability ephemeral --runtime "$RSMALL" --json
KE3=$key
WSE3=$(jq -r .workspace "$T/out")
sbx exec "$KE3" -c "echo asleep > f"
sb_stamp "$KE3" $(($(date +%s) - 120))
SANDBOXD_MAX_SESSIONS=1 SANDBOXD_EVICT_IDLE_AFTER=60 open_s acme run eph-4 --runtime "$RSMALL"
is "$rc" 0 "an open at the ceiling of 1 hibernates the idle ephemeral session"
K4=$key
sbx session show "$KE3" --json
is "$(jq -r .state "$T/out")" hibernated "the ephemeral session is hibernated"
is "$(cat "$WSE3/f" 2>/dev/null)" asleep "its workspace is kept through hibernation"
sbx session close "$K4"
SANDBOXD_MAX_SESSIONS=1 SANDBOXD_EVICT_IDLE_AFTER=60 open_s acme run eph-3 --runtime "$RSMALL" --json
is "$rc:$(jq -r .outcome "$T/out")" "0:woken" "its open wakes it"
sbx exec "$KE3" -- cat f
is "$(out)" asleep "with its files"
sbx session close "$KE3"
[ ! -e "$WSE3" ]; ok $? "and its close deletes them"

# SANDBOXD_MAX_OPEN_SESSIONS closes the session hibernated longest to make
# room: an ephemeral one is purged then, as its close would.
open_s acme run eph-5 --durability ephemeral --runtime "$RSMALL"
KE5=$key
sbx exec "$KE5" -c "echo asleep > f"
sb_stamp "$KE5" $(($(date +%s) - 120))
SANDBOXD_MAX_SESSIONS=1 SANDBOXD_EVICT_IDLE_AFTER=60 open_s acme run eph-6 --runtime "$RSMALL"
K6=$key
sbx session show "$KE5" --json
is "$(jq -r .state "$T/out")" hibernated "(eph-5 hibernated for eph-6)"
SANDBOXD_MAX_SESSIONS=2 SANDBOXD_MAX_OPEN_SESSIONS=2 SANDBOXD_EVICT_IDLE_AFTER=60 \
	open_s acme run eph-7 --runtime "$RSMALL"
is "$rc" 0 "an open over SANDBOXD_MAX_OPEN_SESSIONS closes the hibernated one"
K7=$key
[ ! -e "$ROOT/$KE5" ]; ok $? "the ephemeral session closed to make room is purged"
is "$(rows close 'closed to make room: hibernated the longest; purged: ephemeral' "$KE5")" 1 \
	"... its row says so"
is "$(tb_docker ps -aq --filter "name=$(ctr "$KE5")" | wc -l | tr -d ' ')" 0 "... its container removed"
sbx reap
is "$(find "$ROOT/.sbxcat-trash" -mindepth 1 -maxdepth 1 | wc -l | tr -d ' ')" 0 \
	"the next reap empties what it left in the trash"
sbx session close "$K6"
sbx session close "$K7"

sb_done

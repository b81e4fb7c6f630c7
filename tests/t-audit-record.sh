#!/bin/sh
# t-audit-record.sh - an unambiguous record, found by what the platform
# knows (issue 29, items 2 and 6), on the test-bed's engine and PostgreSQL
# through a real `sbxcat serve` and the command line: a wire session's rows
# (open, every op, a command the command line ran on its key, the reaper's,
# close) carry its wire id, and `audit ls`, `audit export`, `audit verify`
# and `audit head` find them by the wire id as by sbxcat's key; the
# service's events name them; a file named with a tab and one named with a
# backslash and a t are stored differently and both found by --search;
# fs rm is op remove; --op takes the wire's names (exec, exists); a command
# stopped at its deadline is 'timeout', not ok, found by --failed.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init auditrec ar
sb_audit_db t_audit_rec_$$
# jn FILE: how many rows audit ls --json printed (a JSON line each, then
# the page's summary); jr FILTER FILE: FILTER over them as one array.
jn() { jq -s 'map(select(has("id"))) | length' "$1"; }
jr() { jq -rs "map(select(has(\"id\"))) | $1" "$2"; }

is "$(out)" "applied 7 migrations (schema version 7)" "... to schema 7"

TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN
export SANDBOXD_TOKEN
# The day a week ahead, made by migrate, dropped: the service makes it
# again at its start (its reaper's upkeep of the audit's days).
AHEAD=sandbox_operations_$(q "SELECT to_char((now() AT TIME ZONE 'UTC')::date + 7, 'YYYYMMDD')")
q "DROP TABLE $AHEAD" >/dev/null
sb_serve_start || { sed 's/^/# /' "$T/log"; bail_out "sbxcat serve did not start"; }
i=0
while [ "$(q "SELECT to_regclass('$AHEAD') IS NOT NULL")" != t ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
is "$(q "SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass('$AHEAD')")" 1 \
	"sbxcat serve makes the audit's day a week ahead at its start ($AHEAD)"

# -- A wire session: the platform's id, its ops through the wire.
WID=xc-rc1
WT=$(api "$TOKEN" /sessions "{\"session_id\": \"$WID\", \"runtime\": \"$RA\"}" | jq -r .token)
[ -n "$WT" ] && [ "$WT" != null ] || bail_out "the wire session did not open: $(tail -n 3 "$T/log")"
K=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import wirehost; print(wirehost.key_of(sys.argv[2], sys.argv[3]))' \
	"$srcdir/tests" "$ROOT" "$WID")
ok $([ -n "$K" ] && [ "$K" != "$WID" ] && [ "$K" != None ]; echo $?) "the wire session's key is not its id ($K)"
# A file named tab<TAB>here.txt, one named tab\there.txt (backslash, t).
api "$WT" "/sessions/$WID/write" '{"path": "tab\there.txt", "content_b64": "YQo="}' >/dev/null
api "$WT" "/sessions/$WID/write" '{"path": "tab\\there.txt", "content_b64": "Ygo="}' >/dev/null
is "$(cat "$ROOT/$K/workspace/tab	here.txt" "$ROOT/$K/workspace/tab\\there.txt" 2>&1 | tr -d '\n')" ab \
	"the pair written through the wire: two files"
api "$WT" "/sessions/$WID/exec" '{"command": "echo hi"}' >/dev/null
api "$WT" "/sessions/$WID/exists" '{"path": "nothing.txt"}' >/dev/null
api "$WT" "/sessions/$WID/exec" '{"command": "sleep 30", "timeout_seconds": 1}' >"$T/to.json"
# The command line on the same session, by its key: its row carries the
# id too (it is the session's, whichever door).
sbx fs "$K" stat "tab	here.txt"
is "$rc" 0 "fs stat on the wire session's key from the command line"

# Events, before the close: the wire's names, found by the wire's id.
api "$WT" "/sessions/$WID/events" >"$T/ev.json"
is "$(jq -r '[.events[].op] | join(",")' "$T/ev.json")" "open,write,write,exec,exists,exec,exists" \
	"GET /sessions/ID/events: every op of the session, the wire's names"
is "$(jq -r '[.events[] | select(.op == "exec")][1].detail' "$T/ev.json" | cut -c1-20)" "timeout after 1 s, k" \
	"... the exec stopped at its deadline says timeout"

# The events by sbxcat's key: the same session's, with the same tokens.
api "$TOKEN" "/sessions/$K/events" >"$T/evk.json"
is "$(jq -c '[.events[].seq]' "$T/evk.json")" "$(jq -c '[.events[].seq]' "$T/ev.json")" \
	"GET /sessions/KEY/events with the service token: the same events as by its id"
is "$(jq -r '[.events[].target] | map(select(contains("'"$K"'"))) | length' "$T/evk.json")" 0 \
	"... and no event names the key"
is "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Sandbox-Token: $WT" "http://127.0.0.1:$PORT/sessions/$K/events")" 401 \
	"... the session's own token, which came with its id: 401 by the key (checked before any lookup)"
OT=$(api "$TOKEN" /sessions "{\"session_id\": \"xc-other\", \"runtime\": \"$RA\"}" | jq -r .token)
is "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Sandbox-Token: $OT" "http://127.0.0.1:$PORT/sessions/$K/events")" 401 \
	"... another session's token: 401, as by the id"
is "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Sandbox-Token: $TOKEN" "http://127.0.0.1:$PORT/sessions/${K%?}0/events")" 404 \
	"... a key of no session: 404"
is "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Sandbox-Token: $TOKEN" -d '{"command": "true"}' "http://127.0.0.1:$PORT/sessions/$K/exec")" 404 \
	"... only the events take the key: exec by it is 404 (no session of that id)"
curl -s -o /dev/null -X DELETE -H "X-Sandbox-Token: $OT" "http://127.0.0.1:$PORT/sessions/xc-other"

curl -s -o /dev/null -X DELETE -H "X-Sandbox-Token: $WT" "http://127.0.0.1:$PORT/sessions/$WID"

# -- Every row of the session carries the id, hashed with version 2.
is "$(q "SELECT concat_ws('|', count(*), count(wire_id), bool_and(wire_id = '$WID'),
	min(hash_version), max(hash_version), string_agg(op, ',' ORDER BY seq))
	FROM sandbox_operations WHERE session_key = '$K'")" \
	"8|8|t|2|2|open,write,write,execute,stat,execute,stat,close" \
	"open, each op, the command line's stat and close: 8 rows, each with the wire id, hash_version 2"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id = '$K' OR session_key = '$WID'")" 0 \
	"the columns are not mixed: the key is never a wire id, the id never a key"

# -- Found by either name: ls, export, verify, head.
for name in "$WID" "$K"; do
	sbx audit ls --session "$name" --json
	is "$rc:$(jn "$T/out"):$(jr '[.[].wire_id] | unique | join(",")' "$T/out")" "0:8:$WID" \
		"audit ls --session $name: the 8 rows, each naming the wire id"
	sbx audit export --session "$name" --format csv
	is "$rc:$(($(wc -l <"$T/out") - 1)):$(head -n 1 "$T/out" | tr ',' '\n' | tail -n 1)" "0:8:wire_id" \
		"audit export --session $name --format csv: 8 rows, a wire_id column"
	sbx audit export --session "$name" --format jsonl
	is "$rc:$(jq -s 'length' "$T/out"):$(jq -rs '[.[].wire_id] | unique | join(",")' "$T/out")" "0:8:$WID" \
		"audit export --session $name --format jsonl: 8 rows with the wire id"
	sbx audit verify --session "$name"
	is "$rc:$(tail -n 1 "$T/out")" "0:verified 1 chain, 8 rows" "audit verify --session $name: the session's chain"
	sbx audit head --session "$name"
	is "$rc:$(cut -f1 "$T/out")" "0:$K" "audit head --session $name: the key's chain"
done
sbx audit ls --session xc-nobody --json
is "$rc:$(jn "$T/out")" "0:0" "audit ls --session of an id nobody used: no row"
sbx audit verify --session xc-nobody
is "$rc" 1 "audit verify --session of an id nobody used: exit 1 (no chain)"

# -- The tab and the backslash: stored differently, both found.
is "$(q "SELECT string_agg(target, ' ' ORDER BY seq) FROM sandbox_operations
	WHERE session_key = '$K' AND op = 'write'")" 'tab\there.txt tab\\there.txt' \
	"the file named with a tab and the one with a backslash and a t: stored as two strings"
sbx audit ls --session "$WID" --op write --search there.txt --json
is "$rc:$(jr '[.[].target] | sort | join(" ")' "$T/out")" '0:tab\\there.txt tab\there.txt' \
	"--search there.txt: both files of the pair"
sbx audit ls --session "$WID" --op write --search 'tab\t' --json
is "$rc:$(jr '[.[].target] | join(" ")' "$T/out")" '0:tab\there.txt' \
	"--search of the stored form of a tab (backslash t): the tab's file alone"
sbx audit ls --session "$WID" --op write --search 'tab\\t' --json
is "$rc:$(jr '[.[].target] | join(" ")' "$T/out")" '0:tab\\there.txt' \
	"--search of the stored form of a backslash (two of them): the backslash's file alone"
sbx audit ls --session "$WID" --op write --search '\' --json
is "$rc:$(jn "$T/out")" "0:2" "--search of a lone backslash: both (each stored form holds one)"

# -- --op takes the wire's names.
sbx audit ls --session "$WID" --op exec --json
is "$rc:$(jr '[.[].op] | unique | join(",")' "$T/out"):$(jn "$T/out")" "0:execute:2" \
	"--op exec: the audit's execute rows"
sbx audit ls --session "$WID" --op exists,exec --json
is "$rc:$(jn "$T/out")" "0:4" "--op exists,exec: stat and execute"
sbx audit ls --op rm
is "$rc" 2 "--op rm: not an operation (usage error)"
like_err() { case $(err) in *"$1"*) ok 0 "$2" ;; *) ok 1 "$2"; diag "$(err)" ;; esac; }
like_err "remove" "... the message lists remove"

# -- A command stopped at its deadline: timeout, not ok, --failed finds it.
is "$(q "SELECT concat_ws('|', ok, coalesce(exit_status::text, '-'), detail ~ '^timeout after 1 s, killed [0-9]+$')
	FROM sandbox_operations WHERE session_key = '$K' AND target = 'sleep 30'")" "f|-|t" \
	"the wire's exec past its timeout: detail 'timeout after 1 s, killed N', not ok"
sbx audit ls --session "$WID" --failed --json
is "$rc:$(jr '[.[] | select(.detail | startswith("timeout"))] | length' "$T/out")" "0:1" \
	"--failed finds it"
open_s acme run record-cli
KC=$key
sbx exec "$KC" --timeout 0.5 -- sleep 30
is "$rc" 124 "the command line's exec past its timeout: 124"
is "$(q "SELECT concat_ws('|', ok, detail ~ '^timeout after 0.5 s, killed [0-9]+$', wire_id IS NULL)
	FROM sandbox_operations WHERE session_key = '$KC' AND op = 'execute'")" "f|t|t" \
	"... recorded 'timeout after 0.5 s, killed N', not ok, no wire id"

# -- fs rm is op remove.
sbx fs "$KC" write gone.txt </dev/null
sbx fs "$KC" rm gone.txt
is "$rc:$(q "SELECT concat_ws('|', op, target, ok, results, detail) FROM sandbox_operations
	WHERE session_key = '$KC' ORDER BY seq DESC LIMIT 1")" "0:remove|gone.txt|t|1|removed" \
	"fs rm: op remove"
sbx audit ls --session "$KC" --op remove --json
is "$rc:$(jr '[.[] | .op + " " + .target] | join(",")' "$T/out")" "0:remove gone.txt" \
	"--op remove: the removal alone"
sbx audit ls --session "$KC" --op write --json
is "$rc:$(jr '[.[] | .op + " " + .target] | join(",")' "$T/out")" "0:write gone.txt" \
	"--op write: no longer the removal"

# -- The reaper's rows of a wire session carry its id.
WT2=$(api "$TOKEN" /sessions "{\"session_id\": \"xc-rc2\", \"runtime\": \"$RA\"}" | jq -r .token)
K2=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import wirehost; print(wirehost.key_of(sys.argv[2], sys.argv[3]))' \
	"$srcdir/tests" "$ROOT" xc-rc2)
sb_serve_stop
sbx reap --now $(($(date +%s) + 7200))
is "$rc:$(q "SELECT concat_ws('|', count(*) > 0, bool_and(wire_id = 'xc-rc2')) FROM sandbox_operations
	WHERE session_key = '$K2' AND op = 'reap'")" "0:t|t" "the reaper's row of a wire session: its wire id"
[ -n "$WT2" ] || diag "no token for xc-rc2"

sbx audit verify
is "$rc" 0 "audit verify: every chain ($(tail -n 1 "$T/out"))"
sb_done

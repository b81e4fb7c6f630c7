#!/bin/sh
# t-audit-e2e.sh - the operation audit end to end (issue 10): sessions on the
# test-bed's engine, their operations recorded in the test-bed's private
# PostgreSQL (tests/pgbed.sh), one row per operation with the right fields,
# refused and failed ones too; agents and runs; a path, never a payload
# (the sentinel); the spool when the database is gone, and nothing lost
# when it is stopped in the middle of 1,000 operations (a cluster of this
# test's own, stopped with pg_ctl -m immediate); a torn spool; both sinks
# unwritable (the write refused before the file changes); audit status,
# ls and verify through the command line.
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
sb_init audittest ta
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_audit_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
crash_cleanup() { :; }
trap 'crash_cleanup; pgbed_dropdb "$DB" 2>/dev/null; sb_cleanup' EXIT
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE PGSERVICEFILE \
	SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT OPERATION_RETENTION_DAYS
SBXCAT_DATABASE_URL=$URL SBXCAT_SPOOL_DIR=$T/spool
export SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR

# like GOT TEXT NAME: GOT holds TEXT.
like() {
	case $1 in
	*"$2"*) ok 0 "$3" ;;
	*) ok 1 "$3"; printf '%s\n' "$1" | sed 's/^/#   got: /' ;;
	esac
}
TAB=$(printf '\t')
# q SQL: one value (or rows, | separated) from the test's database.
q() { pgbed_psql "$DB" -c "$1"; }
nrows() { q "SELECT count(*) FROM sandbox_operations"; }
# last: the newest row's fields, | separated.
last() {
	q "SELECT op, target, ok, coalesce(exit_status::text, '-'),
	          coalesce(bytes::text, '-'), coalesce(results::text, '-'), detail
	   FROM sandbox_operations ORDER BY seq DESC LIMIT 1"
}
spooled() { cat "$SBXCAT_SPOOL_DIR"/audit.jsonl 2>/dev/null | wc -l | tr -d ' '; }

# -- Schema.
sbx audit migrate
is "$rc:$(out)" "0:applied 7 migrations (schema version 7)" "audit migrate: applies the schema"
sbx audit migrate
is "$rc:$(out)" "0:schema is up to date (version 7)" "audit migrate again: nothing to do"

# -- Session events and every fs verb: exactly one row each, right fields.
n0=$(nrows)
open_s acme run audit-main
K=$key
is "$rc" 0 "session open"
[ -n "$K" ] || { echo "Bail out! session open failed: $(err)"; exit 1; }
is "$(($(nrows) - n0))" 1 "session open writes one row"
is "$(q "SELECT op, tenant, session_key, runtime, target, ok FROM sandbox_operations ORDER BY seq DESC LIMIT 1")" \
	"open|acme|$K|$RA|$RA|t" "... op open, the tenant, the key, the runtime"
WS=$ROOT/$K/workspace
[ -d "$WS" ] || WS=$(jq -r .workspace "$T/out" 2>/dev/null)

# one LABEL EXPECT ARGS...: run sbxcat fs K ARGS; one row more; last row.
one() {
	one_l=$1 one_e=$2; shift 2
	one_n=$(nrows)
	sbx fs "$K" "$@" </dev/null
	is "$(($(nrows) - one_n)):$(last)" "1:$one_e" "$one_l: one row ($one_e)"
}
printf 'hello\nworld\n' >"$T/in.txt"
one_n=$(nrows)
sbx fs "$K" write a.txt <"$T/in.txt"
is "$(($(nrows) - one_n)):$(last)" "1:write|a.txt|t|-|12|-|created" "fs write: one row"
one "fs read" "read|a.txt|t|-|12|2|" read a.txt
one "fs read-bytes" "read_bytes|a.txt|t|-|12|-|" read-bytes a.txt
one "fs edit" "edit|a.txt|t|-|-|1|" edit a.txt --old hello --new howdy
one "fs ls" "ls_info|.|t|-|-|1|" ls
one "fs glob" "glob_info|*.txt|t|-|-|1|" glob '*.txt'
one "fs grep (target: where, never the pattern)" "grep_raw|.|t|-|-|1|" grep howdy
one "fs stat" "stat|a.txt|t|-|12|1|" stat a.txt
one "fs rm" "remove|a.txt|t|-|-|1|removed" rm a.txt

# -- Refused and failed operations are rows too, not ok, in sbxcat's words.
one "fs read ../x" "read|../x|f|-|-|-|refused: outside the workspace" read ../x
one "fs read nosuch" "read|nosuch|f|-|-|-|refused: not found" read nosuch
one "fs read /etc/passwd" "read|/etc/passwd|f|-|-|-|refused: outside the workspace" read /etc/passwd
one "fs edit, --old absent" "edit|b.txt|f|-|-|-|refused: not found" edit b.txt --old x --new y
one "fs grep, a pattern that does not compile" "grep_raw|.|f|-|-|-|refused: invalid request" grep 'a(('
n1=$(nrows)
sbx fs nosuchkey read a.txt
is "$rc:$(($(nrows) - n1))" "1:1" "an unknown session: refused, and recorded"
is "$(last)" "read|a.txt|f|-|-|-|refused: no such session; session asked: nosuchkey" \
	"... as refused: no such session, naming the key asked for in the detail"
is "$(q "SELECT session_key FROM sandbox_operations ORDER BY seq DESC LIMIT 1")" "" \
	"... and not as that key's row: no session_key"

# -- Whose chain.  A key someone can compute (here: the secret leaked) is
# asked for before its owner opens it, and after, by another tenant: every
# refused row is the caller's, none is on the key's chain, and the chain
# is the owner's for verify --tenant and head --tenant.
LEAK=leaked-$sfx
KV=$(/usr/bin/python3 -c 'import base64, hashlib, hmac, struct, sys
sec, t, sc, sub = sys.argv[1:5]
b = b"".join(struct.pack(">I", len(x.encode())) + x.encode() for x in ("docker", sc, t, "", sub))
d = hmac.new(sec.encode(), b, hashlib.sha256).digest()
print("xc-%s-%s-%s" % (t[:8], sc, base64.b32encode(d).decode().lower()[:26]))' "$LEAK" victim run owned-$sfx)
n1=$(nrows)
SBXCAT_KEY_SECRET=$LEAK sbx fs "$KV" stat a.txt --tenant mallory
r1=$rc
SBXCAT_KEY_SECRET=$LEAK sbx fs "$KV" stat a.txt
SBXCAT_KEY_SECRET=$LEAK sbx exec "$KV" --tenant mallory -- true
SBXCAT_KEY_SECRET=$LEAK sbx session close "$KV" --tenant mallory
is "$r1:$(($(nrows) - n1))" "1:4" "four refused requests on a key nobody opened yet: four rows"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE session_key = '$KV'"):$(q "SELECT count(*) FROM audit_chains WHERE session_key = '$KV'")" \
	"0:0" "... none on the key's chain, and no chain made for it"
is "$(q "SELECT string_agg(tenant || '/' || op || '/' || detail, ',' ORDER BY seq) FROM sandbox_operations WHERE seq > (SELECT max(seq) - 4 FROM sandbox_operations)")" \
	"mallory/stat/refused: no such session; session asked: $KV,/stat/refused: no such session; session asked: $KV,mallory/execute/refused: no such session; session asked: $KV,mallory/close/refused: no such session" \
	"... each under the caller's own tenant (none given: none), the key asked for in the detail"
is "$(q "SELECT target FROM sandbox_operations ORDER BY seq DESC LIMIT 1")" "$KV" "... close's target is the key asked for"
SBXCAT_KEY_SECRET=$LEAK open_s victim run "owned-$sfx"
is "$rc:$key" "0:$KV" "the owner opens the key that was asked for"
SBXCAT_KEY_SECRET=$LEAK sbx fs "$KV" ls
SBXCAT_KEY_SECRET=$LEAK sbx fs "$KV" stat a.txt --tenant mallory
is "$rc" 1 "another tenant asking for it now: refused"
is "$(q "SELECT string_agg(DISTINCT tenant, ',') FROM sandbox_operations WHERE session_key = '$KV'"):$(q "SELECT tenant FROM audit_chains WHERE session_key = '$KV'")" \
	"victim:victim" "the key's rows and chain are the owner's alone"
sbx audit verify --tenant victim
is "$rc:$(tail -n 1 "$T/out")" "0:verified 1 chain, 2 rows" "audit verify --tenant of the owner: its chain"
sbx audit head --tenant victim
is "$rc:$(cut -f1,2 "$T/out")" "0:$KV${TAB}victim" "audit head --tenant of the owner: its chain"
sbx audit head --tenant mallory
grep -q "$KV" "$T/out"; ok $((!$?)) "audit head --tenant of the other tenant: not that chain"
sbx audit ls --tenant mallory --json
is "$(grep -c "session asked: $KV" "$T/out")" 3 "audit ls --tenant of the other tenant: its attempts, naming the key"
n1=$(nrows)
sbx fs "$K" read
is "$rc:$(($(nrows) - n1))" "2:0" "a usage error is not an operation: no row"

# -- exec.
n1=$(nrows)
sbx exec "$K" -c 'echo out; exit 2' </dev/null
is "$rc:$(($(nrows) - n1))" "2:1" "exec exiting 2: one row"
is "$(last)" "execute|echo out; exit 2|f|2|4|-|exit 2" "... not ok, exit_status 2, bytes of output, detail 'exit 2'"
sbx exec "$K" -- true </dev/null
is "$(last)" "execute|true|t|0|0|-|exit 0" "exec true: ok, exit 0"
sbx exec "$K" --timeout 1 -- sleep 30 </dev/null
is "$rc" 124 "exec past its timeout: 124"
last | grep -q '^execute|sleep 30|f|-|0|-|timeout after 1 s, killed [0-9]*$'
ok $? "... recorded as 'timeout after 1 s, killed N', not ok, no exit status ($(last))"

# -- Agents and runs: tied, and the rows outlive the agent.
sbx --agent agent-7 --run run-42 fs "$K" ls
is "$(q "SELECT agent_id, run_id FROM sandbox_operations ORDER BY seq DESC LIMIT 1")" \
	"agent-7|run-42" "--agent/--run: the row names them"
SBXCAT_AGENT_ID=agent-8 SBXCAT_RUN_ID=run-43 sbx fs "$K" ls
is "$(q "SELECT agent_id, run_id FROM sandbox_operations ORDER BY seq DESC LIMIT 1")" \
	"agent-8|run-43" "SBXCAT_AGENT_ID/SBXCAT_RUN_ID: likewise"
q "DELETE FROM runs WHERE agent_id = 'agent-7'; DELETE FROM agents WHERE id = 'agent-7'" >/dev/null
is "$(q "SELECT count(*), count(agent_id) FROM sandbox_operations WHERE agent_ref = 'agent-7'")" \
	"1|0" "the agent deleted: its row is kept, agent_id NULL"
sbx audit verify
is "$rc" 0 "audit verify passes after the agent is gone ($(out | tail -n 1))"
sbx --agent "$(printf 'a\tb')" fs "$K" ls
is "$rc" 2 "an agent id with a control character: usage error"

# -- A path, never a payload.
SECRET=sentinel-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'key=%s\n' "$SECRET" >"$T/secret.in"
# Each operation's status, and the rows they add: the operations really
# handled the secret, so zero hits below means something.
n_s=$(nrows) sp_s=$(spooled) rcs=
sec() { sbx "$@"; rcs="$rcs$rc "; }
sec fs "$K" write secret.env <"$T/secret.in"
sec fs "$K" read secret.env
like "$(out)" "$SECRET" "the sentinel: fs read shows it (the operation saw the secret)"
sec fs "$K" read-bytes secret.env
sec fs "$K" grep "$SECRET"
like "$(out)" "$SECRET" "... and so does fs grep"
sec fs "$K" grep -F "$SECRET" secret.env
sec exec "$K" -- cat secret.env </dev/null
like "$(out)" "$SECRET" "... and exec cat"
sec exec "$K" -c 'cat secret.env >&2; exit 3' </dev/null
like "$(err)" "$SECRET" "... and a failing command printing it on stderr"
sec fs "$K" edit secret.env --old "$SECRET" --new "$SECRET-2"
sec fs "$K" edit secret.env --old "nothere-$SECRET" --new x
# and a few through the spool: the database unreachable
SBXCAT_DATABASE_URL="host=$T/nowhere user=sbxcat dbname=x" sec fs "$K" read secret.env
SBXCAT_DATABASE_URL="host=$T/nowhere user=sbxcat dbname=x" sec fs "$K" grep "$SECRET"
is "$rcs" "0 0 0 0 0 0 3 0 1 0 0 " "the sentinel's 11 operations exit as they should"
is "$(($(nrows) - n_s)):$(($(spooled) - sp_s))" "9:2" "... 9 rows in the database, 2 in the spool"
hits=$(pgbed_psql "$DB" -c "SELECT count(*) FROM (SELECT t::text FROM sandbox_operations t UNION ALL SELECT t::text FROM audit_chains t UNION ALL SELECT t::text FROM agents t UNION ALL SELECT t::text FROM runs t) x(v) WHERE v LIKE '%$SECRET%'")
is "$hits" 0 "the sentinel: in no column of any table"
hits=$(cat "$SBXCAT_SPOOL_DIR"/* 2>/dev/null | grep -c "$SECRET")
is "$hits" 0 "the sentinel: nowhere in the spool ($(spooled) rows spooled)"

# -- The spool replayed by the next operation that reaches the database.
s0=$(spooled)
ok "$([ "$s0" -ge 2 ] && echo 0 || echo 1)" "rows went to the spool while the database was unreachable ($s0)"
n1=$(nrows)
sbx fs "$K" ls
is "$(spooled):$(($(nrows) - n1))" "0:$((s0 + 1))" "the next operation replays the spool first, then its own row"
sbx audit verify
is "$rc" 0 "audit verify after the replay"

# -- audit status.
sbx audit status
like "$(out)" "database: reachable" "audit status: reachable"
like "$(out)" "rows ever lost: 0" "... rows ever lost: 0"
env -u SBXCAT_DATABASE_URL "$S" audit status >"$T/out" 2>"$T/err"
like "$(out)" "none configured" "without a database: says the audit goes to the spool alone"
odd=$T/spool-$(printf '\377\033')x
mkdir "$odd"
env -u SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR="$odd" "$S" audit status --json >"$T/out" 2>"$T/err"
is "$?:$(jq -r .spool.dir_base64 "$T/out" | base64 -d)" "0:$odd" \
	"audit status --json: a spool directory that is not UTF-8, exactly (dir_base64)"
env -u SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR="$odd" "$S" audit status >"$T/out" 2>"$T/err"
like "$(grep '^spool' "$T/out")" 'spool-\xff\x1bx: 0 rows' "... and escaped on a terminal's text"

# -- Both sinks unwritable: fs write refused before the file changes.
printf 'before\n' >"$T/b.in"
sbx fs "$K" write keep.txt <"$T/b.in"
touch -d '2020-01-01' "$WS/keep.txt"
m0=$(stat -c '%Y %s' "$WS/keep.txt")
: >"$T/notadir"
SBXCAT_DATABASE_URL="host=$T/nowhere user=sbxcat dbname=x" SBXCAT_SPOOL_DIR=$T/notadir \
	sbx fs "$K" write keep.txt <"$T/in.txt"
is "$rc" 3 "database and spool both unwritable: fs write exits 3"
like "$(err)" "audit record could not be written" "... saying the audit record could not be written"
is "$(stat -c '%Y %s' "$WS/keep.txt"):$(cat "$WS/keep.txt")" "$m0:before" "... and the file is unchanged"
SBXCAT_DATABASE_URL="host=$T/nowhere user=sbxcat dbname=x" SBXCAT_SPOOL_DIR=$T/notadir \
	sbx fs "$K" rm keep.txt
is "$rc:$(cat "$WS/keep.txt")" "3:before" "... and fs rm is refused too, the file kept"
# nowhere: both sinks unwritable, for the commands below.
nowhere() {
	SBXCAT_DATABASE_URL="host=$T/nowhere user=sbxcat dbname=x" \
		SBXCAT_SPOOL_DIR=$T/notadir sbx "$@"
}
nowhere fs "$K" edit keep.txt --old before --new after
is "$rc:$(cat "$WS/keep.txt")" "3:before" "... fs edit is refused, the file unchanged"
nowhere exec "$K" -- touch ran.txt </dev/null
is "$rc:$([ -e "$WS/ran.txt" ] && echo ran || echo not-run)" "125:not-run" \
	"... exec exits 125 and the command is not run"
like "$(err)" "audit record could not be written" "... saying why"
nk=$(ls "$ROOT" | wc -l)
nowhere session open --runtime "$RA" --tenant acme --scope run --subject never-opened
is "$rc:$(ls "$ROOT" | wc -l)" "3:$nk" "... session open exits 3 and makes no session"
nowhere session close "$K"
crc=$rc
sbx session show "$K" --json
is "$crc:$(jq -r .state "$T/out")" 3:running "... session close exits 3 and the session keeps running"

# -- A torn last line is kept aside; the rest flushes.
SBXCAT_DATABASE_URL="host=$T/nowhere user=sbxcat dbname=x" sbx fs "$K" ls
SBXCAT_DATABASE_URL="host=$T/nowhere user=sbxcat dbname=x" sbx fs "$K" ls
printf '{"id":"0000' >>"$SBXCAT_SPOOL_DIR/audit.jsonl"
n1=$(nrows)
sbx audit flush
is "$rc:$(($(nrows) - n1))" "0:2" "flush with a torn last line: the 2 whole rows go in"
like "$(out)" "1 line kept aside" "... and the torn line is kept aside ($(out))"
sbx audit flush
like "$(out)" "flushed 0 rows" "a second flush: nothing"

# -- audit ls through the command line.
sbx audit ls --session "$K" --op execute --json
is "$(grep -c '"op":"execute"' "$T/out")" 5 "audit ls --op execute --session: the 5 execs"
sbx audit ls --session "$K" --limit 3 --json
cur=$(tail -n 1 "$T/out" | jq -r .next)
ok "$([ "$cur" != null ] && [ -n "$cur" ] && echo 0 || echo 1)" "a full page ends with a cursor"
sbx audit ls --session "$K" --limit 3 --after "$cur" --json
is "$(head -n 3 "$T/out" | jq -s 'length')" 3 "--after CURSOR: the next page"
sbx audit ls --after garbage
is "$rc" 2 "--after garbage: usage error"
# --agent and --run filter wherever they stand on the command line.
nag=
for where in after before-verb before-command; do
	case $where in
	after) sbx audit ls --agent agent-8 --json ;;
	before-verb) sbx audit --agent agent-8 ls --json ;;
	*) sbx --agent agent-8 audit ls --json ;;
	esac
	nag="$nag$rc/$(grep -c '"op":' "$T/out") "
done
is "$nag" "0/1 0/1 0/1 " "audit ls --agent: the agent's one row, after the verb, before it, before audit"
sbx audit --run no-such-run export --format csv
is "$rc:$(wc -l <"$T/out")" "0:1" "audit --run NOPE export: the header alone, not every row"
sbx --agent agent-8 audit sweep
is "$rc" 2 "--agent before a verb that does not filter: usage error"

# -- The other verbs through the command line.
sbx audit migrate --status
is "$rc:$(cut -f1,2 "$T/out")" "0:1${TAB}audit tables
2${TAB}hash version
3${TAB}stat op
4${TAB}wire id and remove op
5${TAB}follow
6${TAB}fleet
7${TAB}rows by day" "audit migrate --status: migrations 1 to 7, applied"
like "$(out)" "applied 20" "... with when"
sbx audit head --session "$K"
is "$rc:$(cut -f1 "$T/out")" "0:$K" "audit head --session: the session's chain"
is "$(cut -f5 "$T/out" | tr -d '0-9a-f' | wc -c):$(cut -f5 "$T/out" | wc -c)" "1:65" "... its head, 64 hex digits"
sbx audit export --session "$K" --format csv
is "$rc:$(($(wc -l <"$T/out") - 1))" "0:$(q "SELECT count(*) FROM sandbox_operations WHERE session_key = '$K'")" \
	"audit export --format csv: a header and every row of the session"
sbx audit export --session "$K" --format jsonl
is "$(jq -s 'length' "$T/out")" "$(q "SELECT count(*) FROM sandbox_operations WHERE session_key = '$K'")" \
	"audit export --format jsonl: every row, one JSON object a line"
# The reader gone (SIGPIPE ignored, as some services start us): a quiet
# end by SIGPIPE, as any writer's, not "writing the output: Broken pipe".
S="$S" sh -c 'trap "" PIPE; sleep 0.2; "$S" audit export --format csv 2>"$0/pipe.err"; echo $? >"$0/pipe.rc"' "$T" | true
is "$(cat "$T/pipe.rc"):$(cat "$T/pipe.err")" "141:" \
	"audit export into a closed pipe: killed by SIGPIPE, no error printed"
sbx audit export --format xml
is "$rc" 2 "audit export --format xml: usage error"
sbx audit stats --json
is "$rc:$(jq '.total > 0 and (.ops | has("execute"))' "$T/out")" "0:true" "audit stats --json: counts per op"
sbx audit ls --since 2x
is "$rc" 2 "audit ls --since 2x: usage error"
sbx audit sweep --days 1
like "$rc:$(out)" "0:deleted 0 rows" "audit sweep --days 1: nothing is a day old yet"
# A day partition three days old (empty): dropped whole, and said so.
q "SELECT sbxcat_audit_day('sandbox_operations', (now() AT TIME ZONE 'UTC')::date - 3)" >/dev/null
day=sandbox_operations_$(q "SELECT to_char((now() AT TIME ZONE 'UTC')::date - 3, 'YYYYMMDD')")
sbx audit sweep --days 1 --json
is "$rc:$(jq -c '[.deleted, .days_dropped, .days_split, .days_busy, .held]' "$T/out"):$(q "SELECT to_regclass('$day') IS NULL")" \
	"0:[0,1,0,0,0]:t" "audit sweep --json: the old empty day dropped whole (days_dropped 1), its table gone"
sbx audit sweep --days 1
like "$rc:$(out)" "0:deleted 0 rows (0 days dropped whole) older than" "audit sweep: the rows and the days dropped whole"
# Tampering, seen by verify through the command line, naming the row.
seq=$(q "SELECT seq FROM sandbox_operations WHERE session_key = '$K' AND op = 'read' ORDER BY seq LIMIT 1")
q "UPDATE sandbox_operations SET target = 'innocent.txt' WHERE seq = $seq" >/dev/null
sbx audit verify --session "$K"
is "$rc" 1 "an UPDATE of one row's target: audit verify exits 1"
like "$(out)" "row $seq " "... naming the row ($(head -n 1 "$T/out"))"
sbx audit verify --session "$KV"
is "$rc" 0 "... another session's chain still verifies ($(tail -n 1 "$T/out"))"
sbx audit verify --tenant nobody-else
is "$rc:$(out)" "1:no chain: no row of this tenant is recorded
checked 0 chains, 0 rows" "verify --tenant that matches no chain: exit 1, saying so"

# -- reap: each action's row written as the action ends, with its time.
nowhere reap --now $(($(date +%s) + 7200))
crc=$rc
sbx session show "$K" --json
is "$crc:$(jq -r .state "$T/out")" 3:running "reap with both sinks unwritable: exit 3, nothing reaped"
sbx reap --now $(($(date +%s) + 7200))
is "$rc:$(q "SELECT count(*), bool_and(ok), min(duration_ms) > 0, min(target) = 'sbxcat-$DEP-$K'
	FROM sandbox_operations WHERE op = 'reap' AND session_key = '$K'
	AND detail = 'idle: container stopped'")" "0:1|t|t|t" \
	"reap two hours on: the idle session's stop is one row, ok, its container, its time"

# -- The database stopped (immediate) in the middle of 1,000 operations,
# on a cluster of this test's own: every row spooled, nothing lost.
PGC_RUN=$T/pgc-run PGC_DATA=$T/pgc-data
chmod 711 "$T"
crash_cleanup() { (PGB_RUN=$PGC_RUN PGB_DATA=$PGC_DATA; pgb_stop) >/dev/null 2>&1; }
if (PGB_RUN=$PGC_RUN PGB_DATA=$PGC_DATA; mkdir -p "$PGB_RUN" && pgb_start) 2>"$T/pgc.err"; then
	CURL="host=$PGC_RUN user=sbxcat dbname=postgres"
	SBXCAT_SPOOL_DIR=$T/spool2
	SBXCAT_DATABASE_URL=$CURL sbx audit migrate
	is "$rc" 0 "crash cluster: migrated"
	fails=0
	for i in $(seq 1 1000); do
		if [ "$i" = 400 ]; then
			pgc_u=$(stat -c %U "$PGC_DATA/data")
			pgb_as "$pgc_u" "$PGB_BIN/pg_ctl" -D "$PGC_DATA/data" -m immediate -w stop >/dev/null 2>&1
		fi
		SBXCAT_DATABASE_URL=$CURL "$S" -C "$CAT" fs "$K" stat in-$i.txt >/dev/null 2>"$T/err" </dev/null
		[ $? = 1 ] || fails=$((fails + 1))
	done
	is "$fails" 0 "1,000 operations (a refusal each), the database stopped at the 400th: every one ended as a refusal, none failed"
	sp=$(wc -l <"$SBXCAT_SPOOL_DIR/audit.jsonl" | tr -d ' ')
	(PGB_RUN=$PGC_RUN PGB_DATA=$PGC_DATA; pgb_start) 2>>"$T/pgc.err"
	cq() { PGCONNECT_TIMEOUT=10 "$PGB_BIN/psql" -X -q -A -t "$CURL" -c "$1"; }
	indb=$(cq "SELECT count(*) FROM sandbox_operations")
	is "$((indb + sp >= 1000))" 1 "before the flush: $indb rows in the database, $sp spooled"
	SBXCAT_DATABASE_URL=$CURL sbx audit flush
	is "$rc" 0 "flush after the restart ($(out))"
	is "$(cq "SELECT count(*) FROM sandbox_operations")" 1000 "exactly 1,000 rows: every operation, once"
	is "$(cq "SELECT count(DISTINCT target) FROM sandbox_operations WHERE target LIKE 'in-%'")" 1000 "... one per operation"
	SBXCAT_DATABASE_URL=$CURL sbx audit flush
	like "$(out)" "flushed 0 rows" "a second flush adds nothing"
	SBXCAT_DATABASE_URL=$CURL sbx audit status
	like "$(out)" "rows ever lost: 0" "audit status: rows ever lost: 0"
	SBXCAT_DATABASE_URL=$CURL sbx audit verify
	is "$rc" 0 "audit verify on the crash cluster ($(out | tail -n 1))"
	crash_cleanup
else
	diag "the crash cluster did not start: $(cat "$T/pgc.err")"
	for i in 1 2 3 4 5 6 7 8 9; do
		skip "no private cluster for the crash test" "crash test $i"
	done
fi
sb_done

#!/bin/sh
# t-audit-follow.sh - `audit ls --follow` and `audit tail` (issue 29) on the
# real PostgreSQL: every row exactly once, compared with `audit ls --json`
# afterwards, under parallel writers (sbxcat's own insert, by
# tests/t-audit-follow-writer), with two transactions committed out of seq
# order (psql, holding the lower seq open), a read of 20,000 rows whose
# connection is killed while they are being printed, across a database restart (a
# cluster of this test's own, stopped with pg_ctl -m immediate and -m fast,
# as t-audit-writer.sh does; only that one is ever stopped), with every
# filter, in JSON lines; Ctrl-C, SIGTERM and the reader leaving end it
# with status 0.
set -u
: "${srcdir:?srcdir must name the source tree}"
TAB=$(printf '\t')
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
B=${SBXCAT%/sbxcat}
W=$B/tests/t-audit-follow-writer
[ -x "$W" ] || skip_all "tests/t-audit-follow-writer is not built"
command -v psql >/dev/null || skip_all "no psql"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
T=$(mktemp -d)
chmod 711 "$T"
DB=t_audit_follow_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
unset SBXCAT_DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE \
	PGSERVICEFILE SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT SBXCAT_SPOOL_DIR
export SBXCAT_SPOOL_DIR=$T/spool

PORT=$((20000 + ($$ + 7) % 20000))
pgbed_own "$T" "$PORT"
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; sh "$T/pgc.sh" stop fast; pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT

SBXCAT_DATABASE_URL=$URL "$SBXCAT" audit migrate >/dev/null 2>&1 ||
	bail_out "the test's database cannot be migrated"

# follow NAME URL ARGS...: `sbxcat ARGS` in the background, its rows to
# $T/NAME.out, stderr to $T/NAME.err, how it ended to $T/NAME.st.
follow() {
	f_name=$1 f_url=$2
	shift 2
	SBXCAT_DATABASE_URL=$f_url spawn_status "$T/$f_name.st" "$SBXCAT" "$@" \
		>"$T/$f_name.out" 2>"$T/$f_name.err" &
	pids="$pids $(spawn_pid "$T/$f_name.st")"
}
# lines FILE: its line count.
lines() { wc -l <"$1" | tr -d ' '; }
# wait_lines FILE N: until FILE has N lines (at most 30 s).
wait_lines() {
	wl_n=0
	while [ "$(lines "$1")" -lt "$2" ] && [ $wl_n -lt 300 ]; do sleep 0.1; wl_n=$((wl_n + 1)); done
}
# stop NAME SIG: send SIG, wait for it to end (10 s), print how it ended.
stop() {
	kill -"$2" "$(cat "$T/$1.st.pid")" 2>/dev/null
	st_n=0
	while [ ! -s "$T/$1.st" ] && [ $st_n -lt 100 ]; do sleep 0.1; st_n=$((st_n + 1)); done
	cat "$T/$1.st" 2>/dev/null || echo "still running"
}
# ids FILE: the "id" of each JSON line, sorted (duplicates kept).
ids() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    print(json.loads(l)["id"])' "$1" | sort; }
# ls_ids URL ARGS...: ids of `audit ls --json ARGS` (the last line is the
# page's {"next"}), sorted.
ls_ids() {
	l_url=$1
	shift
	SBXCAT_DATABASE_URL=$l_url "$SBXCAT" audit ls --json --limit 10000 "$@" |
		python3 -c 'import json,sys
for l in sys.stdin:
    j = json.loads(l)
    if "id" in j: print(j["id"])' | sort
}

# -- Options.
SBXCAT_DATABASE_URL=$URL "$SBXCAT" audit ls -n 3 >"$T/o" 2>&1
is "$?" 2 "ls -n without --follow: usage error"
SBXCAT_DATABASE_URL=$URL "$SBXCAT" audit ls --follow --limit 3 >"$T/o" 2>&1
is "$?:$(head -1 "$T/o")" "2:sbxcat: --follow does not take --limit (-n N: the last N rows first)" "ls --follow --limit: usage error"
SBXCAT_DATABASE_URL=$URL "$SBXCAT" audit tail -n x >"$T/o" 2>&1
is "$?" 2 "tail -n x: usage error"
SBXCAT_DATABASE_URL=$URL "$SBXCAT" audit tail -n 10001 >"$T/o" 2>&1
is "$?" 2 "tail -n 10001: usage error"

# -- History, then followers of every filter, then parallel writers.
"$W" write "$URL" acme hist a1 20 5 0 hist >/dev/null || bail_out "writer"
ls_ids "$URL" >"$T/hist.ids"
is "$(lines "$T/hist.ids")" 20 "20 rows of history"
SBXCAT_DATABASE_URL=$URL timeout --preserve-status -s INT 3 "$SBXCAT" audit tail -n 2 --columns op,target >"$T/o" 2>&1
is "$?:$(cat "$T/o")" "0:OP${TAB}TARGET
write${TAB}hist/18
read${TAB}hist/19" "tail -n 2 --columns op,target: the table's columns"
follow all "$URL" audit ls --follow --json
follow tail "$URL" audit tail -n 3 --json
follow tail0 "$URL" audit tail -n 0 --json
follow tenant "$URL" audit ls -f --json --tenant other
follow session "$URL" audit ls -f --json --session p2
follow agent "$URL" --agent a3 audit ls -f --json
follow op "$URL" audit ls -f --json --op read
follow failed "$URL" audit ls -f --json --failed
follow search "$URL" audit ls -f --json --search 'w2/1'
follow both "$URL" audit ls -f --json --session p1 --op write --failed
follow table "$URL" audit ls -f
sleep 1
# Two writers on one session (its chain's lock) and four on others, in
# transactions of 1, 3 and 7 rows: commits interleave across sessions.
"$W" write "$URL" acme p1 a1 300 1 0 w1 >"$T/w1" &
wp1=$!
"$W" write "$URL" acme p1 a2 300 3 0 w2 >"$T/w2" &
wp2=$!
"$W" write "$URL" other p2 a3 300 7 0 w3 >"$T/w3" &
wp3=$!
"$W" write "$URL" acme p3 - 300 1 0 w4 >"$T/w4" &
wp4=$!
"$W" write "$URL" other p4 a3 300 3 0 w5 >"$T/w5" &
wp5=$!
"$W" write "$URL" acme p5 a1 300 1 0 w6 >"$T/w6" &
wp6=$!
wrc=0
for p in $wp1 $wp2 $wp3 $wp4 $wp5 $wp6; do wait "$p" || wrc=1; done
is "$wrc:$(cat "$T"/w? | wc -l | tr -d ' ')" "0:1800" "six writers committed 1,800 rows"
ls_ids "$URL" >"$T/every.ids"
comm -23 "$T/every.ids" "$T/hist.ids" >"$T/new.ids"
wait_lines "$T/all.out" 1800
sleep 1.5 # a row twice would come now
ids "$T/all.out" >"$T/all.ids"
is "$(lines "$T/all.out")" 1800 "ls --follow printed 1,800 rows"
is "$(sort -u "$T/all.ids" | wc -l | tr -d ' ')" 1800 "... each once"
ok "$(cmp -s "$T/all.ids" "$T/new.ids"; echo $?)" "... exactly the rows audit ls lists, none of the history"
python3 -c 'import json,sys
for l in open(sys.argv[1]): json.loads(l)' "$T/all.out"
ok $? "--json: every line parses alone"
# the follower's order is the commits': each writer's rows in its order
python3 -c 'import json,sys
last = {}
for l in open(sys.argv[1]):
    t = json.loads(l)["target"].split("/")
    if last.get(t[0], -1) >= int(t[1]): sys.exit(1)
    last[t[0]] = int(t[1])' "$T/all.out"
ok $? "each writer's rows in the order it committed them"
SBXCAT_DATABASE_URL=$URL "$SBXCAT" audit verify >"$T/o" 2>&1
is "$?" 0 "the chains verify (the rows are sbxcat's)"

wait_lines "$T/tail.out" 1803
sleep 0.5
ids "$T/tail.out" >"$T/tail.ids"
head -3 "$T/tail.out" | python3 -c 'import json,sys
print(" ".join(json.loads(l)["target"] for l in sys.stdin))' >"$T/o"
is "$(cat "$T/o")" "hist/17 hist/18 hist/19" "tail -n 3: the last three rows first, oldest first"
is "$(lines "$T/tail.out"):$(sort -u "$T/tail.ids" | wc -l | tr -d ' ')" "1803:1803" "... then every new row once"
wait_lines "$T/tail0.out" 1800
is "$(lines "$T/tail0.out")" 1800 "tail -n 0: the new rows only"

# check_filter NAME ARGS...: the follower's rows are audit ls's with the
# same filter, less the history.
check_filter() {
	cf=$1
	shift
	ls_ids "$URL" "$@" | comm -23 - "$T/hist.ids" >"$T/$cf.want"
	ids "$T/$cf.out" >"$T/$cf.got"
	ok "$(cmp -s "$T/$cf.got" "$T/$cf.want"; echo $?)" "ls -f $*: $(lines "$T/$cf.want") rows, audit ls's"
	[ -s "$T/$cf.want" ] || diag "(no row matched $*: the case holds nothing)"
}
sleep 0.5
check_filter tenant --tenant other
check_filter session --session p2
check_filter agent --agent a3
check_filter op --op read
check_filter failed --failed
check_filter search --search 'w2/1'
check_filter both --session p1 --op write --failed
like "$(head -1 "$T/table.out")" "^TIME.*TARGET" "the table: one header"
is "$(lines "$T/table.out")" 1801 "... then a line a row"

for n in all tail tail0 tenant session agent op failed search both; do
	stop "$n" INT >/dev/null
done
is "$(cat "$T/all.st") $(cat "$T/tenant.st")" "exit 0 exit 0" "SIGINT ends it, status 0"
is "$(stop table TERM)" "exit 0" "SIGTERM ends it, status 0"
is "$(cat "$T/all.err")" "" "nothing on stderr"

# -- The reader leaves: status 0, at once, though no row comes.
SBXCAT_DATABASE_URL=$URL spawn_status "$T/pipe.st" sh -c "'$SBXCAT' audit tail -n 5 | head -n 2 >'$T/pipe.out'" &
n=0
while [ ! -s "$T/pipe.st" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
is "$(cat "$T/pipe.st" 2>/dev/null)" "exit 0" "tail | head -n 2: ends when head leaves, status 0"
SBXCAT_DATABASE_URL=$URL sh -c "'$SBXCAT' audit tail -n 5 2>'$T/pipe2.err'; echo \$? >'$T/pipe2.rc'" | head -n 1 >/dev/null
is "$(cat "$T/pipe2.rc"):$(cat "$T/pipe2.err")" "0:" "... the exit status 0 is sbxcat's own, nothing said"

# -- Commits out of seq order: the lower seq committed last is not skipped.
ins() { # ins TARGET: the INSERT of a row sbxcat's insert would write
	printf "INSERT INTO sandbox_operations (id, created_at, tenant, session_key, runtime, op, target, ok, duration_ms, detail, hash) VALUES (gen_random_uuid(), now(), 'acme', 'oo-%s', 'python', 'read', '%s', true, 1, '', decode(repeat('00', 32), 'hex')) RETURNING seq;\n" "$1" "$1"
}
follow oo "$URL" audit ls -f --json --search oo/
follow ootail "$URL" audit tail -n 0 --json --search oo/
sleep 1
mkfifo "$T/a.in"
psql -qAtX "$URL" <"$T/a.in" >"$T/a.out" 2>&1 &
pa=$!
exec 3>"$T/a.in"
printf 'BEGIN;\n' >&3
ins oo/late >&3
n=0
while [ ! -s "$T/a.out" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
printf 'BEGIN;\n%sCOMMIT;\n' "$(ins oo/early)" | psql -qAtX "$URL" >"$T/b.out" 2>&1
sa=$(head -1 "$T/a.out") sb=$(head -1 "$T/b.out")
ok "$([ "$sa" -lt "$sb" ] 2>/dev/null; echo $?)" "the held row's seq ($sa) is below the committed one's ($sb)"
wait_lines "$T/oo.out" 1
sleep 1.5 # past a fallback read: seq > $sb is what a naive follower keeps
printf 'COMMIT;\n' >&3
exec 3>&-
wait "$pa"
wait_lines "$T/oo.out" 2
sleep 1
python3 -c 'import json,sys
print(" ".join(json.loads(l)["target"] for l in open(sys.argv[1])))' "$T/oo.out" >"$T/o"
is "$(cat "$T/o")" "oo/early oo/late" "the later seq shown at its commit, the earlier at its own, later: none skipped"
is "$(lines "$T/ootail.out")" 2 "... the same for tail"
stop oo INT >/dev/null
stop ootail INT >/dev/null

# -- A read cut while its rows are being printed: the connection is
# killed while the follower is blocked writing to a reader that waits;
# the rows it printed are not printed again, the rest are.
slow='import os, sys, time
open(sys.argv[2], "w").write(str(os.getpid()))
while not os.path.exists(sys.argv[1]): time.sleep(0.05)
for l in sys.stdin.buffer: sys.stdout.buffer.write(l)'
SBXCAT_DATABASE_URL=$URL spawn_status "$T/cut.st" sh -c "{ '$SBXCAT' audit ls -f --json --search cut 2>'$T/cut.err'; echo \$? >'$T/cut.rc'; } | python3 -c '$slow' '$T/go' '$T/slow.pid' >'$T/cut.out'" &
pids="$pids $(spawn_pid "$T/cut.st")"
sleep 1
"$W" write "$URL" acme cut1 - 20000 20000 0 cut >/dev/null || bail_out "writer"
n=0
bpid=""
while [ -z "$bpid" ] && [ $n -lt 100 ]; do
	sleep 0.1
	n=$((n + 1))
	bpid=$(psql -qAtX "$URL" -c "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'WITH d AS MATERIALIZED%' AND datname = current_database()")
done
ok "$([ -n "$bpid" ]; echo $?)" "the follower is blocked in the middle of a read of 20,000 rows"
psql -qAtX "$URL" -c "SELECT pg_terminate_backend($bpid)" >/dev/null
"$W" write "$URL" acme cut2 - 50 5 0 cut2 >/dev/null
touch "$T/go"
wait_lines "$T/cut.out" 20050
sleep 1.5
ids "$T/cut.out" >"$T/cut.ids"
SBXCAT_DATABASE_URL=$URL "$SBXCAT" audit export --format jsonl --search cut >"$T/cut.all"
ids "$T/cut.all" >"$T/cut.want"
is "$(lines "$T/cut.ids"):$(sort -u "$T/cut.ids" | wc -l | tr -d ' ')" "20050:20050" "the cut read: 20,050 rows, each once"
ok "$(cmp -s "$T/cut.ids" "$T/cut.want"; echo $?)" "... audit ls's rows"
like "$(cat "$T/cut.err")" "connection was lost" "... and stderr said the connection was lost"
kill "$(cat "$T/slow.pid")" 2>/dev/null # its reader gone, the follower ends
n=0
while [ ! -s "$T/cut.rc" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
is "$(cat "$T/cut.rc" 2>/dev/null)" "0" "... and ended, status 0, when its reader left"

# -- Across a restart of the database (a cluster of this test's own).
if sh "$T/pgc.sh" start 2>"$T/pgc.err"; then
	FURL="host=$T/pgc-run port=$PORT user=sbxcat dbname=postgres"
	SBXCAT_DATABASE_URL=$FURL "$SBXCAT" audit migrate >/dev/null 2>&1 ||
		bail_out "the test's own cluster cannot be migrated"
	"$W" write "$FURL" acme r0 - 10 1 0 r0 >/dev/null
	ls_ids "$FURL" >"$T/rhist.ids"
	follow r "$FURL" audit ls -f --json
	follow rf "$FURL" audit ls -f --json --session r2
	sleep 1
	"$W" write "$FURL" acme r1 - 400 2 400 r1 >"$T/r1.w" 2>/dev/null &
	wr=$!
	sleep 0.5
	sh "$T/pgc.sh" stop immediate
	wait "$wr"
	sleep 1
	sh "$T/pgc.sh" start 2>>"$T/pgc.err" || bail_out "the cluster did not start again"
	"$W" write "$FURL" acme r2 - 200 3 0 r2 >/dev/null || bail_out "writer after the restart"
	sleep 1.5
	sh "$T/pgc.sh" stop fast
	sh "$T/pgc.sh" start 2>>"$T/pgc.err" || bail_out "the cluster did not start again"
	"$W" write "$FURL" acme r2 - 100 3 0 r3 >/dev/null || bail_out "writer after the second restart"
	ls_ids "$FURL" | comm -23 - "$T/rhist.ids" >"$T/rnew.ids"
	wait_lines "$T/r.out" "$(lines "$T/rnew.ids")"
	sleep 1.5
	ids "$T/r.out" >"$T/r.ids"
	ok "$([ "$(lines "$T/rnew.ids")" -gt 300 ]; echo $?)" "rows before, and after two restarts: $(lines "$T/rnew.ids")"
	is "$(lines "$T/r.ids"):$(sort -u "$T/r.ids" | wc -l | tr -d ' ')" "$(lines "$T/rnew.ids"):$(lines "$T/rnew.ids")" "across the restarts: each row once"
	ok "$(cmp -s "$T/r.ids" "$T/rnew.ids"; echo $?)" "... exactly the rows the database kept"
	ls_ids "$FURL" --session r2 >"$T/rf.want"
	ids "$T/rf.out" >"$T/rf.got"
	ok "$(cmp -s "$T/rf.got" "$T/rf.want"; echo $?)" "... and a filtered follower's rows are audit ls's"
	like "$(cat "$T/r.err")" "reconnecting in" "stderr says it is reconnecting"
	like "$(cat "$T/r.err")" "reconnected \(the server restarted" "... and that it reconnected to a restarted server"
	is "$(stop r INT)" "exit 0" "SIGINT after the restarts: status 0"
	stop rf INT >/dev/null
else
	skip "the test's own cluster did not start: $(cat "$T/pgc.err")" "across a restart"
fi
done_testing

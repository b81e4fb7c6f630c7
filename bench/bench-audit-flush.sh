#!/bin/sh
# bench/bench-audit-flush.sh - `audit flush` into the table partitioned by
# day (migration 7) beside psql's `\copy` of the same rows into the same
# table (issue 32: flush / \copy speed >= 0.9), on the test-bed's private
# PostgreSQL (tests/pgbed.sh).  No engine needed.
#
# The spool: SBXCAT_BENCH_FLUSH_ROWS rows (200,000) spread over the last
# SBXCAT_BENCH_FLUSH_DAYS UTC days (4), 400 sessions, 10 agents and 50 runs,
# a tenth failed, and one row in a thousand 40 days old (a day with no
# partition: the default partition's); made by generate_series in a
# scratch database, exported as jsonl, oldest first, each line given its
# "sum" as src/audit/spool.c does.  The target: one freshly migrated
# database, a partition made for each day of the rows (as migrate and the
# service make them ahead), its agents and runs kept between runs.
#
# A first flush (not timed) into the emptied table: its chains verified,
# the rows it wrote dumped as CSV of the columns the flush writes (hash
# included).  Then rounds on the same table, each emptied (TRUNCATE
# sandbox_operations, audit_chains) before: `sbxcat audit flush` of the
# spool (its time, and its own CPU) and psql `\copy sandbox_operations
# (COLUMNS) FROM 'rows.csv' CSV` of those same rows, in turn first.  Both
# are whole processes (a new connection each), timed by /usr/bin/time,
# each checked to leave exactly the spool's rows in the table (a count
# after each), the flush to say so and to empty the spool.  Speed ratio
# = psql's time / flush's time, the median of the rounds' (each round's
# two runs side by side, on a machine shared with other work); the ratio
# of the medians beside it; target >= 0.9.
#   SBXCAT_BENCH_FLUSH_RUNS   rounds, median shown (5)
# It takes about 3 minutes on 2 cores.  Everything made (the databases, the
# temporary directory) is removed at the end.  A missed target exits 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$here/..}
S=${SBXCAT:-$here/../sbxcat}
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"

NS=${SBXCAT_BENCH_FLUSH_ROWS:-200000}
ND=${SBXCAT_BENCH_FLUSH_DAYS:-4}
NR=${SBXCAT_BENCH_FLUSH_RUNS:-5}
for v in "$NS" "$ND" "$NR"; do
	case $v in '' | *[!0-9]* | 0*) echo "bench-audit-flush: sizes are positive numbers, not '$v'"; exit 1 ;; esac
done
PSQL=$PGB_BIN/psql
[ -x "$PSQL" ] || { echo "bench-audit-flush: no psql at $PSQL (apt-get install postgresql-client-15)"; exit 1; }
command -v python3 >/dev/null || { echo "bench-audit-flush: needs python3 (the spool's sums)"; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-audit-flush: needs GNU time (/usr/bin/time)"; exit 1; }
pgbed_start || { echo "bench-audit-flush: no PostgreSQL test-bed (reason above)"; exit 1; }

unset SBXCAT_DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD \
	PGSERVICE PGSERVICEFILE PGOPTIONS SBXCAT_AGENT_ID SBXCAT_RUN_ID OPERATION_RETENTION_DAYS
SBXCAT_AUDIT=off
export SBXCAT_AUDIT
T=$(mktemp -d) || exit 1
DBP=bench_flush_$$_
bf_cleanup() {
	for d in gen dst; do pgbed_dropdb "$DBP$d" 2>/dev/null; done
	rm -rf "$T"
}
trap bf_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
umask 077
SBXCAT_SPOOL_DIR=$T/spool-setup
export SBXCAT_SPOOL_DIR

fail() { echo "bench-audit-flush: $*"; exit 1; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
# med FILE: the median of the numbers in FILE.
med() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
q() {
	q_db=$DBP$1
	shift
	pgbed_psql "$q_db" "$@" || fail "SQL on $q_db failed"
}
newdb() {
	U=$(pgbed_newdb "$DBP$1") || fail "cannot make the database $DBP$1"
	SBXCAT_DATABASE_URL=$U "$S" audit migrate >/dev/null || fail "audit migrate failed on $DBP$1"
}
# timed OUT CMD...: CMD's wall seconds appended to OUT, its CPU (user +
# sys) to OUT.cpu; its stdout in $T/out; a failure stops the bench.
timed() {
	t_out=$1
	shift
	/usr/bin/time -f '%e %U %S' -o "$T/time" "$@" >"$T/out" 2>"$T/err" ||
		{ echo "bench-audit-flush: '$*' failed:"; cat "$T/err"; exit 1; }
	awk '{ print $1 }' "$T/time" >>"$t_out"
	awk '{ print $2 + $3 }' "$T/time" >>"$t_out.cpu"
}
echo "PostgreSQL $(pgbed_psql postgres -c 'SHOW server_version') at $(pgbed_url); sbxcat: $S"
echo "load average at the start: $(cut -d ' ' -f 1-3 /proc/loadavg) ($(nproc) cores)"

# ---- the spool
OPS="(ARRAY['write','edit','read','read_bytes','ls_info','glob_info','grep_raw','execute','open','close','reap'])[1 + i % 11]"
# Row i's time: the last ND days up to now, oldest first; every 1000th
# 40 days old (no partition: the default one).
AT="CASE WHEN i % 1000 = 500 THEN now() - interval '40 days'
	ELSE now() - ($NS - i) * interval '1 second' * ($ND * 86400 - 60) / $NS END"
newdb gen
UG=$U
q gen -c "INSERT INTO sandbox_operations (id, created_at, tenant, session_key, runtime,
	agent_ref, run_ref, op, target, ok, exit_status, bytes, results, duration_ms, detail, hash)
	SELECT gen_random_uuid(), $AT, 'tenant-' || i % 4, 'spool-' || i % 400, 'python',
	  'agent-' || i % 10, 'run-' || i % 50, $OPS, '/work/src/file' || i % 5000 || '.c',
	  i % 10 <> 0, CASE WHEN i % 11 = 7 THEN CASE WHEN i % 10 <> 0 THEN 0 ELSE 2 END END,
	  i % 100000, CASE WHEN i % 11 IN (2, 4, 5, 6) THEN i % 50 END, i % 997,
	  CASE WHEN i % 11 = 7 THEN 'exit ' || CASE WHEN i % 10 <> 0 THEN 0 ELSE 2 END
	       WHEN i % 10 = 0 THEN 'refused: not found' ELSE '' END,
	  decode(repeat('00', 32), 'hex')
	FROM generate_series(1, $NS) i" >/dev/null
SBXCAT_DATABASE_URL=$UG "$S" audit export --format jsonl >"$T/rows.jsonl" || fail "export jsonl failed"
# Oldest first (export is newest first), without "seq", "sum" last.
tac "$T/rows.jsonl" | python3 "$here/spool_lines.py" >"$T/spool.jsonl" || fail "making the spool failed"
[ "$(wc -l <"$T/spool.jsonl")" = "$NS" ] || fail "the spool does not hold $NS rows"
pgbed_dropdb "${DBP}gen"
rm -f "$T/rows.jsonl"

# ---- the target: migrated, a partition for each day of the rows
newdb dst
UD=$U
q dst -c "SELECT count(*) FROM generate_series(0, $ND) k
	WHERE sbxcat_audit_day('sandbox_operations', (now() AT TIME ZONE 'UTC')::date - k)" >/dev/null
NP=$(q dst -c "SELECT count(*) FROM pg_inherits WHERE inhparent = 'sandbox_operations'::regclass")
NI=$(q dst -c "SELECT count(*) FROM pg_indexes WHERE tablename = 'sandbox_operations'")
COLS=$(q dst -c "SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute
	WHERE attrelid = 'sandbox_operations'::regclass AND attnum > 0 AND NOT attisdropped
	  AND attname NOT IN ('seq', 'xact')")
echo "a spool of $NS rows ($(($(wc -c <"$T/spool.jsonl") / 1024)) KiB) over $ND days; sandbox_operations: $NP partitions, $NI indexes"

empty() { q dst -c "TRUNCATE sandbox_operations, audit_chains" >/dev/null; }
count() { q dst -c "SELECT count(*) FROM sandbox_operations"; }
# flush_once OUT: the spool flushed into the emptied table (timed into
# OUT, unless OUT is -), checked.
flush_once() {
	empty
	rm -rf "$T/sp"
	{ mkdir "$T/sp" && cp "$T/spool.jsonl" "$T/sp/audit.jsonl"; } || fail "cannot copy the spool"
	if [ "$1" = - ]; then
		SBXCAT_AUDIT=on SBXCAT_DATABASE_URL=$UD SBXCAT_SPOOL_DIR=$T/sp \
			"$S" audit flush >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "flush failed"; }
	else
		SBXCAT_AUDIT=on SBXCAT_DATABASE_URL=$UD SBXCAT_SPOOL_DIR=$T/sp \
			timed "$1" "$S" audit flush
	fi
	got=$(cat "$T/out")
	[ "$got" = "flushed $NS rows (0 already there), 0 lines kept aside" ] || fail "flush said: $got"
	[ "$(count)" = "$NS" ] || fail "flush left $(count) rows, not $NS"
	[ -s "$T/sp/audit.jsonl" ] && fail "the spool is not empty after the flush"
}
copy_once() {
	empty
	timed "$T/copy" "$PSQL" -X -q -v ON_ERROR_STOP=1 "$UD" \
		-c "\\copy sandbox_operations ($COLS) FROM '$T/rows.csv' CSV"
	[ "$(count)" = "$NS" ] || fail "\\copy left $(count) rows, not $NS"
}
# A first flush, not timed: the chains verified, the rows it wrote dumped
# for \copy.
flush_once -
SBXCAT_DATABASE_URL=$UD "$S" audit verify >"$T/verify" 2>&1 ||
	{ cat "$T/verify"; fail "the chains do not verify after the flush"; }
nd=$(q dst -c "SELECT count(*) FROM sandbox_operations_default")
q dst -c "\\copy (SELECT $COLS FROM sandbox_operations ORDER BY seq) TO '$T/rows.csv' CSV"
# Rounds of both, in turn first (a machine growing busier or quieter
# then favours neither); each round's ratio kept.
i=1
while [ "$i" -le "$NR" ]; do
	if [ $((i % 2)) = 1 ]; then
		flush_once "$T/flush"
		copy_once
	else
		copy_once
		flush_once "$T/flush"
	fi
	paste "$T/flush" "$T/copy" | tail -n 1 | awk '{ printf "%.3f\n", $2 / $1 }' >>"$T/ratio"
	i=$((i + 1))
done
f=$(med "$T/flush") c=$(med "$T/copy")
r=$(calc %.2f "$(med "$T/ratio")")
if awk -v a="$r" 'BEGIN { exit !(a >= 0.9) }'; then v=ok; else v=MISSED; fi
printf 'flush: %s rows (%s in the default partition), %s rounds, the same table emptied before each\n' "$NS" "$nd" "$NR"
printf 'sbxcat audit flush: median %s s, %.0f rows/s; its own CPU (user+sys) %s s\n' \
	"$f" "$(calc %f "$NS / $f")" "$(med "$T/flush.cpu")"
printf 'psql \\copy of the same rows (CSV, the columns flush writes): median %s s, %.0f rows/s; its CPU %s s\n' \
	"$c" "$(calc %f "$NS / $c")" "$(med "$T/copy.cpu")"
printf 'each round, flush s / \\copy s / speed ratio: %s\n' \
	"$(paste "$T/flush" "$T/copy" "$T/ratio" | awk '{ printf "%s%s/%s/%s", (NR > 1 ? ", " : ""), $1, $2, $3 }')"
printf 'flush speed / \\copy speed (\\copy time / flush time, median of the rounds) = %s; of the medians %s (target >= 0.9) %s\n' \
	"$r" "$(calc %.2f "$c / $f")" "$v"
echo "load average at the end: $(cut -d ' ' -f 1-3 /proc/loadavg)"
[ "$v" = ok ]

#!/bin/sh
# t-audit-partition.sh - migration 7 (rows by day) on the real PostgreSQL:
# applied online, no row lost, changed or doubled.
# (a) a schema-2 database with rows of hash_version 1 over 20 days on 6
#     chains (tests/t-audit-part schema2): every column of every row the
#     same after migrate --to 6 and after 7 (md5 in seq order), verify
#     passes, each day's rows in that day's partition, none in the default,
#     the indexes and the notify trigger under their names; new rows take
#     the next seq and verify.
# (b) 60,000 rows written by sbxcat's insert at schema 6, migrated while
#     a writer inserts a row a call (counting its commits and retries,
#     timing each call), a reader runs `audit ls` and the sweep of before
#     migration 7 deletes old rows: count = before + committed - swept,
#     every row kept unchanged, ids unique, verify passes, the longest
#     insert under 3 s.
# (c) the migrate killed (SIGKILL) in the middle of the copy, its server
#     process ended too (as a restart would): the copy resumes where it
#     was, nothing lost or doubled, verify passes.
# (d) two migrates at once: one applies 7, the other finds it done.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
B=${SBXCAT%/sbxcat}
P=$B/tests/t-audit-part
[ -x "$P" ] || skip_all "tests/t-audit-part is not built"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
unset SBXCAT_DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE \
	PGSERVICEFILE SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT SBXCAT_SPOOL_DIR
T=$(mktemp -d)
export SBXCAT_SPOOL_DIR=$T/spool
D=t_apart_$$
dbs=""
pids=""
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; for d in $dbs; do pgbed_dropdb "$d" 2>/dev/null; done; rm -rf "$T"' EXIT

# newdb NAME [TEMPLATE]: a database of the test's own (a copy of TEMPLATE).
newdb() {
	dbs="$dbs $1"
	if [ -n "${2:-}" ]; then
		pgbed_psql postgres -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" \
			-c "CREATE DATABASE $1 TEMPLATE $2" >/dev/null || return 1
		pgbed_url "$1"
	else
		pgbed_newdb "$1"
	fi
}
q() { pgbed_psql "$@"; }
sbx() { u=$1; shift; SBXCAT_DATABASE_URL=$u "$SBXCAT" "$@"; }
now_ms() { date +%s%3N; }

# The columns every schema since 2 has, each row's md5 in seq order.
COLS2="id, seq, created_at, tenant, session_key, runtime, agent_id, run_id,
	agent_ref, run_ref, op, target, ok, exit_status, bytes, results,
	duration_ms, detail, hash, hash_version"
sum2() {
	q "$1" -c "SELECT count(*) || ':' || md5(string_agg(md5(ROW($COLS2)::text), '' ORDER BY seq)) FROM sandbox_operations"
}
# Every column, since schema 5 (xact), of the rows whose seq <= $2.
sumall() {
	q "$1" -c "SELECT count(*) || ':' || md5(string_agg(md5(o::text), '' ORDER BY seq)) FROM (SELECT id, seq, created_at, tenant, session_key, runtime, agent_id, run_id, agent_ref, run_ref, op, target, ok, exit_status, bytes, results, duration_ms, detail, hash, hash_version, wire_id, xact FROM sandbox_operations WHERE seq <= $2) o"
}
verified() { sbx "$1" audit verify >/dev/null 2>"$T/verify.err"; }
# The partitioned table's checks: each row in its day's partition, none
# in the default; prints "ROWDAYS:PARTS_WITH_ROWS:MISPLACED:DEFAULT".
placed() {
	q "$1" -c "SELECT count(DISTINCT (created_at AT TIME ZONE 'UTC')::date) || ':' || count(DISTINCT tableoid) || ':' || count(*) FILTER (WHERE tableoid::regclass::text <> 'sandbox_operations_' || to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYYMMDD')) || ':' || (SELECT count(*) FROM sandbox_operations_default) FROM sandbox_operations"
}
shape() {
	q "$1" -c "SELECT (SELECT relkind::text FROM pg_class WHERE oid = 'sandbox_operations'::regclass) || ':' || (to_regclass('sandbox_operations_p') IS NULL) || ':' || (to_regclass('sbxcat_partitioning') IS NULL) || ':' || (to_regprocedure('sbxcat_audit_mirror()') IS NULL) || ':' || (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'sandbox_operations'::regclass AND tgname = 'sandbox_operations_notify')"
}
indexes() {
	q "$1" -c "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'sandbox_operations'::regclass"
}

# ---- (a) schema 2, hash_version 1, 20 days ----
ua=$(newdb "${D}_a") || bail_out "the test-bed runs but cannot make a database"
"$P" schema2 "$ua" 20 6 3000 || bail_out "cannot make the schema-2 database"
is "$(q "${D}_a" -c "SELECT max(version) || ':' || count(DISTINCT hash_version) || ':' || min(hash_version) FROM schema_migrations, sandbox_operations")" \
	"2:1:1" "(a) a schema-2 database, every row hash_version 1"
before=$(sum2 "${D}_a")
like "$before" '^3000:' "(a) 3000 rows before"
sbx "$ua" audit migrate --to 6 >/dev/null 2>"$T/err" || diag "$(cat "$T/err")"
is "$(sum2 "${D}_a")" "$before" "(a) migrate --to 6: every column of every row the same"
verified "$ua"
ok $? "(a) at schema 6 the chains of version 1 verify $(cat "$T/verify.err")"
idx6=$(indexes "${D}_a")
maxseq=$(q "${D}_a" -c "SELECT max(seq) FROM sandbox_operations")
t0=$(now_ms)
out=$(sbx "$ua" audit migrate 2>&1)
is "$out" "applied 1 migration (schema version 7)" "(a) migrate: 7 applied"
diag "(a) migration 7 of 3000 rows: $(($(now_ms) - t0)) ms"
is "$(sum2 "${D}_a")" "$before" "(a) after migration 7: every column of every row the same"
is "$(q "${D}_a" -c "SELECT count(*) FROM sandbox_operations WHERE wire_id IS NOT NULL OR xact IS NOT NULL")" \
	0 "(a) the old rows' later columns are NULL, as before"
verified "$ua"
ok $? "(a) verify passes after it $(cat "$T/verify.err")"
is "$(shape "${D}_a")" "p:true:true:true:1" \
	"(a) sandbox_operations partitioned; the copy's table, progress and trigger gone; the notify trigger there"
pl=$(placed "${D}_a")
like "$pl" '^2[01]:2[01]:0:0$' "(a) each day's rows in that day's partition, none misplaced, none in the default ($pl)"
days=${pl%%:*}
is "$(q "${D}_a" -c "SELECT count(*) FROM pg_inherits WHERE inhparent = 'sandbox_operations'::regclass AND inhrelid IN (SELECT DISTINCT tableoid FROM sandbox_operations)")" \
	"$days" "(a) pg_inherits: one partition per day with rows"
is "$(q "${D}_a" -c "SELECT count(*) FROM pg_inherits WHERE inhparent = 'sandbox_operations'::regclass AND inhrelid::regclass::text ~ '^sandbox_operations_[0-9]{8}$' AND to_date(right(inhrelid::regclass::text, 8), 'YYYYMMDD') BETWEEN (now() AT TIME ZONE 'UTC')::date - 1 AND (now() AT TIME ZONE 'UTC')::date + 7")" \
	9 "(a) the days from yesterday to a week ahead made"
is "$(indexes "${D}_a")" "$idx6" "(a) the indexes keep their names"
"$P" fill "$ua" 50 1 2 || bail_out "cannot add rows"
is "$(q "${D}_a" -c "SELECT min(seq) - $maxseq || ':' || count(*) FROM sandbox_operations WHERE seq > $maxseq")" \
	"1:50" "(a) new rows: the next seq on"
is "$(sum2 "${D}_a" | sed 's/:.*//')" 3050 "(a) ... beside the old ones"
verified "$ua"
ok $? "(a) verify passes with the new rows $(cat "$T/verify.err")"

# ---- the schema-6 database of (b) and (c): N rows by sbxcat ----
# (three batches of the copy's 20,000 at least, for (c) to stop in one)
N=${T_APART_ROWS:-60000}
base=${D}_base
ub=$(newdb "$base") || bail_out "cannot make a database"
sbx "$ub" audit migrate --to 6 >/dev/null 2>&1 || bail_out "migrate --to 6 failed"
t0=$(now_ms)
"$P" fill "$ub" "$N" 20 40 || bail_out "cannot fill the schema-6 database"
diag "$N rows by auditdb_insert: $(($(now_ms) - t0)) ms"

# ---- (b) writers, a reader and a sweep during the migration ----
u=$(newdb "${D}_b" "$base") || bail_out "cannot copy the database"
db=${D}_b
q "$db" -c "CREATE TABLE snap AS SELECT id, md5(o::text) AS h, created_at FROM sandbox_operations o"
n0=$(q "$db" -c "SELECT count(*) FROM sandbox_operations")
top=$(q "$db" -c "SELECT max(seq) FROM sandbox_operations")
"$P" write "$u" "$T/stop" >"$T/writer" 2>&1 &
pids="$pids $!"
wpid=$!
(
	i=0
	while [ ! -e "$T/stop" ] && [ $i -lt 2000 ]; do
		if ! sbx "$u" audit ls --limit 50 >/dev/null 2>>"$T/reader.err"; then
			echo x >>"$T/reader.fail"
		fi
		echo x >>"$T/reader.n"
		i=$((i + 1))
	done
) &
pids="$pids $!"
rpid=$!
i=0
while [ "$(q "$db" -c "SELECT count(*) FROM sandbox_operations WHERE tenant = 'tw'")" -lt 20 ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
# The sweep once the copy has begun (it copies oldest first: the rows it
# deletes are mostly copied ones, the mirror trigger's delete).
cutoff=$(( ($(date +%s) - 18 * 86400) * 1000000 ))
(
	i=0
	while [ $i -lt 300 ] && [ "$(q "$db" -c "SELECT to_regclass('sbxcat_partitioning') IS NOT NULL AND (SELECT at_seq IS NOT NULL FROM sbxcat_partitioning)" 2>/dev/null)" != t ]; do
		sleep 0.05
		i=$((i + 1))
	done
	"$P" sweep "$u" "$cutoff" >"$T/swept" 2>&1
) &
pids="$pids $!"
spid=$!
t0=$(now_ms)
out=$(sbx "$u" audit migrate 2>&1)
tb=$(($(now_ms) - t0))
is "$out" "applied 1 migration (schema version 7)" "(b) migrate under load: 7 applied"
diag "(b) migration 7 of $N rows with a writer, a reader and a sweep: $tb ms"
wait "$spid"
sleep 0.5
touch "$T/stop"
wait "$wpid"
wait "$rpid"
diag "(b) writer: $(cat "$T/writer")"
committed=$(sed -n 's/^committed \([0-9]*\) .*/\1/p' "$T/writer")
swept=$(cat "$T/swept")
diag "(b) the sweep deleted $swept rows; the reader ran $(wc -l <"$T/reader.n") times, $(cat "$T/reader.fail" 2>/dev/null | wc -l) failed"
ok "$([ -n "$committed" ] && [ "$committed" -gt 0 ] && echo 0 || echo 1)" "(b) the writer committed rows during the migration ($committed)"
case $swept in '' | *[!0-9]*) ok 1 "(b) the sweep ran: $swept" ;; *) ok 0 "(b) the sweep ran ($swept rows deleted)" ;; esac
is "$(q "$db" -c "SELECT count(*) || ':' || count(DISTINCT id) FROM sandbox_operations")" \
	"$((n0 + committed - swept)):$((n0 + committed - swept))" \
	"(b) count = before + committed - swept, each row once"
is "$(q "$db" -c "SELECT count(*) FROM sandbox_operations WHERE tenant = 'tw'")" "$committed" \
	"(b) every row the writer committed is there"
is "$(q "$db" -c "SELECT count(*) FROM snap s LEFT JOIN sandbox_operations o ON o.id = s.id WHERE o.id IS NULL")" \
	"$swept" "(b) the old rows missing are the swept ones"
is "$(q "$db" -c "SELECT count(*) FROM snap s LEFT JOIN sandbox_operations o ON o.id = s.id WHERE o.id IS NULL AND s.created_at >= 'epoch'::timestamptz + $cutoff * interval '1 microsecond'")" \
	0 "(b) ... all of them older than the cutoff"
is "$(q "$db" -c "SELECT count(*) FROM snap s JOIN sandbox_operations o ON o.id = s.id WHERE md5(o::text) <> s.h")" \
	0 "(b) every old row kept is unchanged (every column)"
is "$(q "$db" -c "SELECT count(*) FROM sandbox_operations WHERE seq > $top AND tenant <> 'tw'")" 0 \
	"(b) no row appeared that nobody wrote"
verified "$u"
ok $? "(b) verify passes after it $(cat "$T/verify.err")"
pl=$(placed "$db")
like "$pl" ':0:0$' "(b) every row in its day's partition, none in the default ($pl)"
is "$(shape "$db")" "p:true:true:true:1" "(b) the swap done"
maxms=$(sed -n 's/.* max_ms \([0-9.]*\) .*/\1/p' "$T/writer")
ok "$(awk -v m="$maxms" 'BEGIN { exit !(m != "" && m < 3000) }'; echo $?)" \
	"(b) the longest insert during the migration: $maxms ms (< 3000)"
maxend=$(sed -n 's/.* max_end_ms \([0-9]*\).*/\1/p' "$T/writer")
diag "(b) the longest insert ended $((maxend - t0)) ms after the migrate began (it took $tb ms)"
if grep -q '^error' "$T/writer"; then
	diag "(b) the writer's errors, each retried: $(grep '^error' "$T/writer" | tr '\n' ' ')"
fi
ok "$([ ! -s "$T/reader.fail" ] && echo 0 || echo 1)" "(b) audit ls never failed during it" ||
	diag "$(grep -v '^next page' "$T/reader.err" | head -5)"

# ---- (c) the migrate killed in the middle of the copy, then again ----
u=$(newdb "${D}_c" "$base") || bail_out "cannot copy the database"
db=${D}_c
sumc=$(sumall "$db" 1000000000000)
spawn_status "$T/mig" env SBXCAT_DATABASE_URL="$u" "$SBXCAT" audit migrate >/dev/null 2>&1 &
mpid=$(spawn_pid "$T/mig")
pids="$pids $mpid"
i=0
while [ $i -lt 300 ]; do
	c=$(q "$db" -c "SELECT CASE WHEN to_regclass('sbxcat_partitioning') IS NULL THEN 0 ELSE (SELECT count(*) FROM sandbox_operations_p) END" 2>/dev/null)
	[ "${c:-0}" -ge 20000 ] && break
	sleep 0.05
	i=$((i + 1))
done
kill -9 "$mpid"
# PostgreSQL notices a vanished client only when it next writes to it:
# the copy's server process goes on (to the end, with the lock held);
# ended too, as a restart of the server would end it.
q "$db" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'CALL sbxcat_audit_partition_copy%'" >"$T/term"
j=0
while [ "$(q "$db" -c "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'CALL sbxcat_audit_partition_copy%' AND pid <> pg_backend_pid()")" != 0 ] && [ $j -lt 100 ]; do
	sleep 0.1
	j=$((j + 1))
done
mid=$(q "$db" -c "SELECT (SELECT relkind::text FROM pg_class WHERE oid = 'sandbox_operations'::regclass) || ':' || (SELECT count(*) FROM sandbox_operations_p) || ':' || (SELECT at_seq IS NOT NULL FROM sbxcat_partitioning) || ':' || (SELECT count(*) FROM schema_migrations WHERE version = 7)" 2>&1)
diag "(c) killed after $i polls; its server process ended: $(cat "$T/term"); copied so far: $mid"
like "$mid" '^r:[0-9]+:true:0$' "(c) interrupted in the copy: the old table in place, part copied, progress kept, 7 not recorded"
copied=$(echo "$mid" | cut -d: -f2)
ok "$([ "$copied" -ge 20000 ] && [ "$copied" -lt "$N" ] && echo 0 || echo 1)" "(c) ... in the middle: $copied of $N copied"
out=$(sbx "$u" audit migrate 2>&1)
is "$out" "applied 1 migration (schema version 7)" "(c) migrate again: it completes"
is "$(sumall "$db" 1000000000000)" "$sumc" "(c) every row once and unchanged (count and md5 of every column)"
is "$(q "$db" -c "SELECT count(*) - count(DISTINCT id) FROM sandbox_operations")" 0 "(c) no id twice"
verified "$u"
ok $? "(c) verify passes $(cat "$T/verify.err")"
is "$(shape "$db")" "p:true:true:true:1" "(c) the swap done"

# ---- (d) two migrates at once ----
u=$(newdb "${D}_d") || bail_out "cannot make a database"
db=${D}_d
sbx "$u" audit migrate --to 6 >/dev/null 2>&1 || bail_out "migrate --to 6 failed"
"$P" fill "$u" 5000 5 8 || bail_out "cannot fill"
sumd=$(sumall "$db" 1000000000000)
sbx "$u" audit migrate >"$T/m1" 2>&1 &
p1=$!
sbx "$u" audit migrate >"$T/m2" 2>&1 &
p2=$!
pids="$pids $p1 $p2"
wait "$p1"
r1=$?
wait "$p2"
r2=$?
is "$r1:$r2" "0:0" "(d) both migrates exit 0"
is "$(sort "$T/m1" "$T/m2" | tr '\n' '|')" "applied 1 migration (schema version 7)|schema is up to date (version 7)|" \
	"(d) one applied 7, the other found it done"
is "$(q "$db" -c "SELECT count(*) FROM schema_migrations WHERE version = 7")" 1 "(d) recorded once"
is "$(sumall "$db" 1000000000000)" "$sumd" "(d) every row once and unchanged"
verified "$u"
ok $? "(d) verify passes $(cat "$T/verify.err")"
done_testing

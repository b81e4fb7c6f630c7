#!/bin/sh
# t-audit-flush.sh - `audit flush` into sandbox_operations partitioned by
# day (migration 7), on the test-bed's PostgreSQL: a spool of rows over
# four UTC days (each with its partition) and a few 40 days old (the
# default partition's), more rows than a batch (SPOOL_BATCH, 10,000);
# a crash after part of it went in (its first 12,000 lines flushed first)
# then the whole spool: only the rest goes in; the same spool again:
# nothing; a constraint the server holds failing a row of the second
# batch: the first batch in, nothing of the second, the spool kept byte
# for byte, and a flush after the constraint goes finishing it; the
# database unreachable: the spool kept.  Every count is SQL's, per
# partition, every value checked against the rows the spool was made
# from, and the chains verify after each step.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
S=${SBXCAT:-./sbxcat}
command -v python3 >/dev/null || skip_all "needs python3 (the spool's sums)"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_audit_flush_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
T=$(mktemp -d) || bail_out "mktemp"
trap 'pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE PGSERVICEFILE PGOPTIONS \
	SBXCAT_AGENT_ID SBXCAT_RUN_ID OPERATION_RETENTION_DAYS
SBXCAT_AUDIT=on SBXCAT_DATABASE_URL=$URL SBXCAT_SPOOL_DIR=$T/spool
export SBXCAT_AUDIT SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR
umask 077

q() { pgbed_psql "$DB" -c "$1"; }
nrows() { q "SELECT count(*) FROM sandbox_operations"; }
# The rows of each partition, "name:count" a line (those holding any).
parts() {
	q "SELECT c.relname || ':' || count(*) FROM sandbox_operations o
	   JOIN pg_class c ON c.oid = o.tableoid GROUP BY c.relname ORDER BY c.relname"
}
verify() { "$S" audit verify >"$T/verify.out" 2>&1; echo $?; }
# flush: `audit flush`, its exit status in rc and its output in out.
flush() {
	"$S" audit flush >"$T/out" 2>&1
	rc=$?
	out=$(cat "$T/out")
}
spool_put() {
	rm -rf "$T/spool"
	mkdir -m 700 "$T/spool" && cp "$1" "$T/spool/audit.jsonl" || bail_out "cannot make the spool"
}

"$S" audit migrate >/dev/null || bail_out "audit migrate failed"
# A partition for each of the last four UTC days (migrate makes
# yesterday onwards).
q "SELECT count(*) FROM generate_series(0, 3) k
   WHERE sbxcat_audit_day('sandbox_operations', (now() AT TIME ZONE 'UTC')::date - k)" >/dev/null

# The rows, made here, exported as a spool (oldest first), then the table
# emptied: 25,000 over the last 3.5 days, every 5,000th 40 days old.
N=25000
q "INSERT INTO sandbox_operations (id, created_at, tenant, session_key, runtime,
	agent_ref, run_ref, op, target, ok, bytes, duration_ms, detail, hash)
   SELECT gen_random_uuid(),
	  CASE WHEN i % 5000 = 0 THEN now() - interval '40 days'
	       ELSE now() - ($N - i) * interval '12 seconds' END,
	  'tenant-' || i % 3, 'flush-' || i % 50, 'python', 'agent-' || i % 5,
	  'run-' || i % 7, 'read',
	  CASE WHEN i % 100 = 7 THEN '/work/caf' || chr(233) || chr(34) || 'q' || i ELSE '/work/f' || i END,
	  i % 9 <> 0, i, i % 100, '',
	  decode(repeat('00', 32), 'hex')
   FROM generate_series(1, $N) i" >/dev/null
"$S" audit export --format jsonl >"$T/rows.jsonl" || bail_out "audit export failed"
tac "$T/rows.jsonl" | python3 "$srcdir/bench/spool_lines.py" >"$T/all.jsonl" ||
	bail_out "making the spool failed"
WANT=$(parts)
# Every value of every row, to compare after the flush: lines with text
# to unescape or beyond ASCII are parsed by jansson, the others without it.
rowsum() {
	q "SELECT md5(string_agg(concat_ws('|', id, created_at, tenant, session_key, runtime,
	   agent_ref, run_ref, op, target, ok, exit_status, bytes, results, duration_ms, detail,
	   wire_id), ',' ORDER BY id)) FROM sandbox_operations"
}
SUM=$(rowsum)
[ -n "$SUM" ] || bail_out "cannot sum the rows"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE target LIKE '%' || chr(34) || 'q%'")" 250 \
	"250 rows with a quote and an e-acute in their target"
q "TRUNCATE sandbox_operations, audit_chains" >/dev/null
is "$(wc -l <"$T/all.jsonl" | tr -d ' ')" "$N" "the spool holds $N rows"
like "$WANT" "^sandbox_operations_default:5\$" "of which 5 in the default partition"
is "$(printf '%s\n' "$WANT" | grep -c '_20[0-9]*:')" 4 "and the rest over 4 days' partitions"

# -- A flush cut short: its first 12,000 lines went in, then the whole.
head -n 12000 "$T/all.jsonl" >"$T/head.jsonl"
spool_put "$T/head.jsonl"
flush
is "$rc:$out" "0:flushed 12000 rows (0 already there), 0 lines kept aside" "the first 12,000 lines flushed"
spool_put "$T/all.jsonl"
flush
is "$rc:$out" "0:flushed 13000 rows (12000 already there), 0 lines kept aside" \
	"the whole spool then: the 12,000 there are skipped (their id and time), the rest go in"
is "$(nrows)" "$N" "the table holds each row once"
is "$(rowsum)" "$SUM" "every value as it was (targets with a quote and an e-acute among them)"
is "$(parts)" "$WANT" "each row in its day's partition, the old ones in the default one"
is "$(verify)" 0 "the chains verify"
is "$(q "SELECT sum(nrows) FROM audit_chains")" "$N" "the chains count every row"
[ -s "$T/spool/audit.jsonl" ]
is "$?" 1 "the spool is empty after the flush"

# -- The same spool once more: nothing goes in.
spool_put "$T/all.jsonl"
flush
is "$rc:$out" "0:flushed 0 rows ($N already there), 0 lines kept aside" "the same spool again: nothing goes in"
is "$(nrows):$(verify)" "$N:0" "still $N rows, the chains verify"

# -- A row the server refuses in the second batch (a constraint of the
# test's own): the first batch stays, nothing of the second, the spool
# is kept byte for byte.
q "TRUNCATE sandbox_operations, audit_chains" >/dev/null
q "ALTER TABLE sandbox_operations ADD CONSTRAINT t_refused CHECK (target <> '/work/f15555')" >/dev/null
spool_put "$T/all.jsonl"
sum0=$(cksum <"$T/spool/audit.jsonl")
flush
is "$rc" 3 "a row refused by the server in the second batch: the flush fails"
like "$out" "t_refused" "and says the constraint"
is "$(nrows)" 10000 "the first batch (10,000 rows) committed, nothing of the second"
is "$(cksum <"$T/spool/audit.jsonl")" "$sum0" "the spool is kept as it was"
is "$(verify)" 0 "the chains verify"
q "ALTER TABLE sandbox_operations DROP CONSTRAINT t_refused" >/dev/null
flush
is "$rc:$out" "0:flushed 15000 rows (10000 already there), 0 lines kept aside" \
	"after the constraint goes, the flush finishes"
is "$(nrows):$(verify)" "$N:0" "$N rows, the chains verify"
is "$(parts)" "$WANT" "each row in its partition"

# -- The database unreachable: the spool kept.
spool_put "$T/head.jsonl"
SBXCAT_DATABASE_URL="host=$T/nowhere dbname=x connect_timeout=2" "$S" audit flush >"$T/out" 2>&1
rc=$?
is "$rc" 3 "the database unreachable: the flush fails"
is "$(cksum <"$T/spool/audit.jsonl")" "$(cksum <"$T/head.jsonl")" "the spool is kept"
done_testing

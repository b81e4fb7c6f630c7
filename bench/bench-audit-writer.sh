#!/bin/sh
# bench/bench-audit-writer.sh - the service's audit writer (issue 18) on
# the test-bed's private PostgreSQL (tests/pgbed.sh): THREADS threads
# each recording ROWS rows through audit_open_writer/audit_ready/
# audit_record (the wait of each, p50 and p95, and the wall time per row),
# beside rows inserted one per transaction on one kept connection
# (auditdb_insert of one row: what the command line's recorder does once
# connected), in the same run; then one thread through the writer, the
# cost with nothing to group.  The issue's target: p95 <= 1 ms for the
# audit's cost per operation.  Sizes (environment):
#   SBXCAT_BENCH_WRITER_THREADS  threads       (32)
#   SBXCAT_BENCH_WRITER_ROWS     rows a thread (200)
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$here/..}
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
S=${SBXCAT:-$here/../sbxcat}
BIN=${S%/sbxcat}/tests/t-audit-writer
NT=${SBXCAT_BENCH_WRITER_THREADS:-32}
NR=${SBXCAT_BENCH_WRITER_ROWS:-200}
[ -x "$BIN" ] || { echo "bench-audit-writer: $BIN is not built (make tests/t-audit-writer)"; exit 1; }
pgbed_start || { echo "bench-audit-writer: no PostgreSQL test-bed (reason above)"; exit 1; }
unset SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR SBXCAT_AUDIT
T=$(mktemp -d)
DB=bench_writer_$$
trap 'pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT
URL=$(pgbed_newdb "$DB") || { echo "bench-audit-writer: cannot make a database"; exit 1; }
SBXCAT_DATABASE_URL=$URL "$S" audit migrate >/dev/null || exit 1
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
echo "-- $NT threads x $NR rows"
"$BIN" bench "$URL" "$T" "$NT" "$NR" || rc=1
echo "-- 1 thread x $((NR * 4)) rows"
"$BIN" bench "$URL" "$T" 1 $((NR * 4)) || rc=1
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc

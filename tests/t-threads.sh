#!/bin/sh
# t-threads.sh - the operations from eight threads at once (tests/t-threads.c):
# sessions opened, files written, read, grepped and listed, commands run
# and sessions closed, each thread a tenant of its own, on the test-bed's
# engine and PostgreSQL.  Every round must go through, every operation
# leave its one row, and the chains verify.  make check-tsan runs this
# under ThreadSanitizer, where any race it reports fails the run.
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
BIN=$PWD/tests/t-threads
[ -x "$BIN" ] || skip_all "tests/t-threads is not built"
sb_init threadtest tt
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_threads_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
trap 'pgbed_dropdb "$DB" 2>/dev/null; sb_cleanup' EXIT
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE PGSERVICEFILE \
	SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT OPERATION_RETENTION_DAYS
SBXCAT_DATABASE_URL=$URL T_THREADS_DIR=$T
export SBXCAT_DATABASE_URL T_THREADS_DIR
q() { pgbed_psql "$DB" -c "$1"; }

sbx audit migrate
is "$rc" 0 "the test's database migrated"

ROUNDS=2
# Bounded: a deadlock must fail the test, not hang it.
timeout -s KILL 300 "$BIN" "$CAT" "$RSMALL" $ROUNDS >"$T/tap" 2>"$T/stderr"
rc=$?
is "$rc" 0 "eight threads, $ROUNDS rounds each: the run ends well (66: a ThreadSanitizer report)"
sed 's/^/# /' "$T/tap"
if grep -q 'ThreadSanitizer\|AddressSanitizer\|runtime error' "$T/stderr"; then
	ok 1 "no sanitizer report"
	sed 's/^/# /' "$T/stderr" | head -80
else
	ok 0 "no sanitizer report"
fi
n=$(grep -c '^ok ' "$T/tap")
is "$n" 8 "every thread did all its rounds"
grep -q '^not ok' "$T/tap"
ok $((!$?)) "no thread failed"

# One row per operation: open, write, read, execute, grep_raw, ls_info,
# close, for 8 threads and $ROUNDS rounds; each tenant's own.
is "$(q "SELECT count(*) FROM sandbox_operations WHERE tenant LIKE 'tenant%'")" \
	$((8 * ROUNDS * 7)) "every operation of every thread has its row"
is "$(q "SELECT count(DISTINCT tenant) FROM sandbox_operations WHERE tenant LIKE 'tenant%'")" \
	8 "the rows name eight tenants"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE tenant LIKE 'tenant%' AND NOT ok")" \
	0 "every row says the operation went well"
sbx audit verify
is "$rc" 0 "the chains of every session verify" || { out; err; } | sed 's/^/# /'
is "$(ndep)" 0 "every session's container is gone"
sb_done

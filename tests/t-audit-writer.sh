#!/bin/sh
# t-audit-writer.sh - the service's audit writer and pool (tests/t-audit-
# writer.c) on the real PostgreSQL: a database of the shared test-bed
# (tests/pgbed.sh), and for the outage a cluster of this test's own (its
# own directory, socket directory and port), stopped with pg_ctl -m
# immediate while eight threads record and started again; only that one
# is ever stopped.  make check-tsan runs this under ThreadSanitizer too.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
B=${SBXCAT%/sbxcat}
BIN=$B/tests/t-audit-writer
[ -x "$BIN" ] || skip_all "tests/t-audit-writer is not built"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
T=$(mktemp -d)
chmod 711 "$T"
DB=t_audit_writer_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
unset SBXCAT_DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE \
	PGSERVICEFILE SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT SBXCAT_SPOOL_DIR

# The fault cluster: pgbed.sh's functions on a directory of our own, with
# a port of our own on its socket.
PORT=$((20000 + $$ % 20000))
pgbed_own "$T" "$PORT"
T_AW_START="sh $T/pgc.sh start 2>>$T/pgc.err" T_AW_STOP="sh $T/pgc.sh stop"
export T_AW_START T_AW_STOP
trap 'sh "$T/pgc.sh" stop fast; pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT
FURL=-
if sh "$T/pgc.sh" start 2>"$T/pgc.err"; then
	FURL="host=$T/pgc-run port=$PORT user=sbxcat dbname=postgres"
	SBXCAT_DATABASE_URL=$FURL "$SBXCAT" audit migrate >/dev/null 2>&1 ||
		bail_out "the fault cluster cannot be migrated"
else
	echo "# the fault cluster did not start: $(cat "$T/pgc.err")"
fi
SBXCAT_DATABASE_URL=$URL "$SBXCAT" audit migrate >/dev/null 2>&1 ||
	bail_out "the test's database cannot be migrated"
# Bounded: a deadlock must fail the test, not hang it.
timeout -s KILL 300 ${SBXCAT_TEST_WRAP:-} "$BIN" test "$URL" "$FURL" "$T"

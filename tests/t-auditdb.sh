#!/bin/sh
# t-auditdb.sh - auditdb.c against the private PostgreSQL (tests/pgbed.sh):
# starts it when needed, makes the databases the C test tests/t-auditdb
# uses (one per case), runs it, and drops them.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/pgbed.sh"
B=${SBXCAT%/sbxcat}
pgbed_start || skip_all "no PostgreSQL test-bed (see the reason above)"
dbs=""
trap 'for d in $dbs; do pgbed_dropdb "$d" 2>/dev/null; done' EXIT
i=0
while [ $i -lt 20 ]; do
	u=$(pgbed_newdb "t_auditdb_$$_$i") || bail_out "the test-bed runs but cannot create a database"
	dbs="$dbs t_auditdb_$$_$i"
	set -- "$@" "$u"
	i=$((i + 1))
done
${SBXCAT_TEST_WRAP:-} "$B/tests/t-auditdb" "$@"
exit $?

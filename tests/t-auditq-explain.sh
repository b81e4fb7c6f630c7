#!/bin/sh
# t-auditq-explain.sh - the page query's plans on 1,000,000 rows: no
# sequential scan of sandbox_operations for any filter, alone or in pairs,
# with and without --after (tests/t-auditq-db explain; AUDITQ_ROWS to
# change the count).  The database is this run's own, dropped at the end
# (SBXCAT_KEEP_EXPLAIN_DB=1 keeps it for `t-auditq-db bench URL`).
srcdir=${srcdir:-.}
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/pgbed.sh"
pgbed_start || skip_all "no PostgreSQL test-bed (pgbed_start said why on stderr)"
db=t_auditq_explain_$$
url=$(pgbed_newdb "$db") || bail_out "the test-bed runs but cannot create the database $db"
if [ "${SBXCAT_KEEP_EXPLAIN_DB:-}" = 1 ]; then
	echo "# kept: $url" >&2
else
	trap 'pgbed_dropdb "$db" 2>/dev/null' EXIT # a million rows: never left
fi
./tests/t-auditq-db explain "$url"

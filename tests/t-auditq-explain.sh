#!/bin/sh
# t-auditq-explain.sh - the page query's plans on 1,000,000 rows: no
# sequential scan of sandbox_operations for any filter, alone or in pairs,
# with and without --after (tests/t-auditq-db explain; AUDITQ_ROWS to
# change the count).  The database is kept for `t-auditq-db bench`.
srcdir=${srcdir:-.}
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/pgbed.sh"
pgbed_start || skip_all "no PostgreSQL test-bed (pgbed_start said why on stderr)"
url=$(pgbed_newdb t_auditq_explain) || skip_all "cannot create the database t_auditq_explain"
exec ./tests/t-auditq-db explain "$url"

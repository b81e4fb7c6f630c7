#!/bin/sh
# t-auditq-db.sh - auditq.c against the private PostgreSQL (tests/pgbed.sh):
# tests/t-auditq-db rows on a fresh database of its own.
srcdir=${srcdir:-.}
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/pgbed.sh"
pgbed_start || skip_all "no PostgreSQL test-bed (pgbed_start said why on stderr)"
db=t_auditq_rows_$$
url=$(pgbed_newdb "$db") || bail_out "the test-bed runs but cannot create the database $db"
trap 'pgbed_dropdb "$db" 2>/dev/null' EXIT
./tests/t-auditq-db rows "$url"

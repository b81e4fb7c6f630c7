#!/bin/sh
# t-serve-limits.sh - what no client of `sbxcat serve` may do to the others
# (issue 28): tests/serve_limits.py against a real service on the real
# engine: no byte of a body read before its token authenticates (the
# service's peak memory while tokenless clients send 60 MiB bodies), each
# route's body cap and the bounds on parsing a body, a 60 MiB write that
# reads back identical, one session's flood of ?usage=true while another
# tenant's reads are served, runs addressed by session and id together,
# paths holding %00 or %2F, and GET /'s docs_url and openapi_url.
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
command -v python3 >/dev/null || skip_all "python3 is missing"
command -v curl >/dev/null || skip_all "curl is missing"
[ -r /proc/self/status ] || skip_all "no /proc: the service's memory cannot be read"
sb_init serve-limits sx
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_serve_limits_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
SPID=""
trap '[ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null; pgbed_dropdb "$DB" 2>/dev/null; sb_cleanup' EXIT
SBXCAT_DATABASE_URL=$URL
export SBXCAT_DATABASE_URL
sbx audit migrate
is "$rc" 0 "the test's database migrated"

TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
TA=ta-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
TB=tb-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'acme %s\nbeta %s\n' "$TA" "$TB" >"$T/tenants"
chmod 600 "$T/tenants"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SANDBOXD_TOKEN=$TOKEN SANDBOXD_EXECUTE_TIMEOUT=60
export SANDBOXD_TOKEN SANDBOXD_EXECUTE_TIMEOUT
unset SANDBOXD_MAX_WRITE_BYTES
"$S" -C "$CAT" serve --listen "tcp:127.0.0.1:$PORT" --tenants "$T/tenants" 2>"$T/log" &
SPID=$!
n=0
until curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; do
	[ $n -lt 100 ] && kill -0 "$SPID" 2>/dev/null || bail_out "the service did not start: $(tail -3 "$T/log")"
	sleep 0.1
	n=$((n + 1))
done
ok 0 "sbxcat serve starts"

SERVE_HOST=127.0.0.1 SERVE_PORT=$PORT SERVE_TOKEN=$TOKEN SERVE_TOKEN_A=$TA SERVE_TOKEN_B=$TB \
SERVE_PID=$SPID SERVE_PREFIX=x$$- SERVE_MAX_WRITE=$((64 << 20)) \
	timeout -s KILL 600 python3 "$srcdir/tests/serve_limits.py" >"$T/limits.tap" 2>"$T/limits.err"
rc=$?
is "$rc" 0 "the limits script ran to its end"
sed 's/^/# /' "$T/limits.err" | head -20
grep '^ok \|^not ok\|^#' "$T/limits.tap" | sed 's/^/# /'
nf=$(grep -c '^not ok ' "$T/limits.tap")
nw=$(grep -c '^ok ' "$T/limits.tap")
is "$nf" 0 "every limit held ($nw cases)"
ok $((nw < 40)) "the cases ran ($nw of them)"
kill -0 "$SPID" 2>/dev/null
ok $? "the service is still the same process"
if grep -q -e "$TOKEN" -e "$TA" -e "$TB" "$T/log"; then ok 1 "the log never holds a token"; else ok 0 "the log never holds a token"; fi
kill -TERM "$SPID"
wait "$SPID"
is "$?" 0 "the service exits 0 on SIGTERM"
SPID=""
sb_done

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
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
[ -r /proc/self/status ] || skip_all "no /proc: the service's memory cannot be read"
sb_init serve-limits sx
sb_audit_db t_serve_limits_$$

TOKEN=svc-$(sb_rand) TA=ta-$(sb_rand) TB=tb-$(sb_rand)
printf 'acme %s\nbeta %s\n' "$TA" "$TB" >"$T/tenants"
chmod 600 "$T/tenants"
PORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN SANDBOXD_EXECUTE_TIMEOUT=60
export SANDBOXD_TOKEN SANDBOXD_EXECUTE_TIMEOUT
unset SANDBOXD_MAX_WRITE_BYTES
sb_serve_start --tenants "$T/tenants" || bail_out "the service did not start: $(tail -3 "$T/log")"
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

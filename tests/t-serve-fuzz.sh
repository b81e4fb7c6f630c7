#!/bin/sh
# t-serve-fuzz.sh - no request ends `sbxcat serve` (docs/serve.md, "Text";
# issue 28 item 2): a real service, a session whose workspace is filled
# host side with random bytes under random names, and every route driven
# with random and hostile values by tests/serve_fuzz.py (http.client); the
# service's pid the same and alive at the end, /healthz answering, the
# audit's chains whole.  SERVE_FUZZ_SEED=N repeats a run; SERVE_FUZZ_N
# sets how many random requests (400).
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
sb_init sfuzz fz
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_serve_fuzz_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
SPID=""
stop_server() {
	[ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
	SPID=""
}
trap 'stop_server; pgbed_dropdb "$DB" 2>/dev/null; sb_cleanup' EXIT
SBXCAT_DATABASE_URL=$URL
export SBXCAT_DATABASE_URL
sbx audit migrate
is "$rc" 0 "the test's database migrated"

TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SANDBOXD_TOKEN=$TOKEN SANDBOXD_MAX_READ_BYTES=65536 SANDBOXD_EXECUTE_TIMEOUT=20
export SANDBOXD_TOKEN SANDBOXD_MAX_READ_BYTES SANDBOXD_EXECUTE_TIMEOUT

"$S" -C "$CAT" serve --listen "tcp:127.0.0.1:$PORT" 2>>"$T/log" &
SPID=$!
n=0
while [ $n -lt 100 ]; do
	curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.1
	n=$((n + 1))
done
curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1
ok $? "sbxcat serve starts and answers /healthz" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }

SEED=${SERVE_FUZZ_SEED:-$$}
diag "the fuzzer's seed: $SEED (SERVE_FUZZ_SEED=$SEED repeats it)"
SERVE_HOST=127.0.0.1 SERVE_PORT=$PORT SERVE_TOKEN=$TOKEN SERVE_PID=$SPID SERVE_ROOT=$ROOT \
SERVE_SBXCAT=$S SERVE_CAT=$CAT SERVE_PREFIX=f$$- SERVE_FUZZ_SEED=$SEED SERVE_FUZZ_N=${SERVE_FUZZ_N:-400} \
	timeout -s KILL 900 python3 "$srcdir/tests/serve_fuzz.py" >"$T/fuzz.tap" 2>"$T/fuzz.err"
rc=$?
is "$rc" 0 "the fuzzer ran to its end"
sed 's/^/# /' "$T/fuzz.err" | tail -20
nw=$(grep -c '^ok ' "$T/fuzz.tap")
nf=$(grep -c '^not ok ' "$T/fuzz.tap")
grep '^not ok\|^#' "$T/fuzz.tap" | head -80 | sed 's/^/# /'
is "$nf" 0 "every fuzzer check passed ($nw passed)"
ok $((nw < 30)) "the fuzzer's checks ran ($nw of them)"

kill -0 "$SPID" 2>/dev/null
ok $? "the service's process is the one started (pid $SPID), alive"
grep -a 'fatal\|abort\|out of memory\|Sanitizer\|runtime error' "$T/log" | head -5 | sed 's/^/# /'
grep -aq 'sbxcat: fatal\|sbxcat: out of memory\|ERROR: [A-Za-z]*Sanitizer\|runtime error:' "$T/log"
ok $((! $?)) "its log holds no fatal error (nor a sanitizer's report)" ||
	sed -n '/ERROR: [A-Za-z]*Sanitizer\|runtime error:/,+40p' "$T/log" | head -60 | sed 's/^/# /'
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")" 200 "/healthz answers at the end"
sbx audit verify
is "$rc" 0 "the audit's chains verify after the fuzz" || err | head -5 | sed 's/^/# /'
stop_server
sb_done

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
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init sfuzz fz
sb_audit_db t_serve_fuzz_$$

TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN SANDBOXD_MAX_READ_BYTES=65536 SANDBOXD_EXECUTE_TIMEOUT=20
export SANDBOXD_TOKEN SANDBOXD_MAX_READ_BYTES SANDBOXD_EXECUTE_TIMEOUT

sb_serve_start
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
sb_serve_stop
sb_done

#!/bin/sh
# t-conformance.sh - the platform's client, call by call (issue 28, "Tests"):
# a real `sbxcat serve` on the test-bed's engine, the audit in the
# PostgreSQL test-bed (the events route reads it), and tests/conformance.py
# walking every call RemoteSandbox and WorkspaceArchive make, with their
# exact bodies, each answer checked against the client's pydantic model.
# Then what the walk cannot see from outside: the service's process is the
# one that started (no request ended it), no token in its log, the audit's
# chains, and case 20 (a session the reaper took) on a second service.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init conformance cf
sb_audit_db t_conf_$$

# The deployment's settings where the walk depends on them; the write
# limit and the work dir are left at their defaults (docs/serve.md), which
# is what the platform runs with.
TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
unset SANDBOXD_MAX_WRITE_BYTES SANDBOXD_WORK_DIR SANDBOXD_IDLE_TIMEOUT \
	SANDBOXD_CLEANUP_INTERVAL SANDBOXD_EVICT_IDLE_AFTER SANDBOXD_MAX_OPEN_SESSIONS \
	SANDBOXD_POLICY_OVERRIDES SBXCAT_SERVE_TENANT
SANDBOXD_TOKEN=$TOKEN SANDBOXD_MAX_READ_BYTES=65536 SANDBOXD_EXECUTE_TIMEOUT=60
SANDBOXD_MAX_SESSIONS_PER_TENANT=2 SBXCAT_SERVE_GRACE=5
export SANDBOXD_TOKEN SANDBOXD_MAX_READ_BYTES SANDBOXD_EXECUTE_TIMEOUT \
	SANDBOXD_MAX_SESSIONS_PER_TENANT SBXCAT_SERVE_GRACE

sb_serve_start
ok $? "sbxcat serve starts on the real engine and answers /healthz" ||
	{ sed 's/^/# /' "$T/log"; bail_out "no service"; }
PID0=$SPID

# A runtime whose sandbox cannot start (an image without sleep or sh): the
# walk's 502.
BROKEN=""
sb_nosleep_image && BROKEN=$RNOSLEEP
[ -n "$BROKEN" ] || diag "no image without sleep could be made: the 502 case is left out"

# The walk: its TAP lines are this test's, numbered on from here.
conf() {
	CONF_HOST=127.0.0.1 CONF_PORT=$PORT CONF_TOKEN=$TOKEN CONF_RT=$RA CONF_RT2=$RSMALL \
	CONF_RUNTIMES=$(jq -r '[.[].alias] | sort | join(",")' "$CAT") CONF_MAX_READ=65536 \
	CONF_EXEC_TIMEOUT=60 CONF_TENANT_MAX=2 CONF_ROOT=$ROOT CONF_PREFIX=xc-$sfx- \
	CONF_COUNT=$T/count CONF_SERVER_PID=$SPID CONF_RT_BROKEN=$BROKEN \
		timeout -s KILL 600 python3 "$srcdir/tests/conformance.py" >"$T/conf.tap" 2>"$T/conf.err"
	crc=$?
	# Renumbered after this script's own lines, so the driver sees one
	# stream; the walk's names are kept.
	awk -v s="$tap_n" '
		/^(not )?ok [0-9]+ / { i = index($0, "ok "); rest = substr($0, i + 3); sub(/^[0-9]+/, "", rest);
			print substr($0, 1, i + 2) (s + (++k)) rest; next }
		{ print }' "$T/conf.tap"
	tap_n=$((tap_n + $(grep -c '^\(not \)\?ok ' "$T/conf.tap")))
	sed 's/^/# stderr: /' "$T/conf.err" | head -20
}
conf
is "$crc" 0 "the walk ran to its end"
nf=$(grep -c '^not ok ' "$T/conf.tap")
diag "the walk: $(grep -c '^ok ' "$T/conf.tap") passed, $nf failed"

# No request ended the service: the process that started is the one that
# answers.
kill -0 "$PID0" 2>/dev/null
ok $? "the service's process ($PID0) is alive after the walk: no request ended it" ||
	tail -n 20 "$T/log" | sed 's/^/# log: /'
st=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")
is "$st" 200 "... and still answers"

# The access log never holds a token; the audit has the walk's rows and
# its chains verify.
if grep -q -e "$TOKEN" "$T/log"; then ok 1 "the log never holds the service token"; else ok 0 "the log never holds the service token"; fi
nrows=$(pgbed_psql "$DB" -c "SELECT count(*) FROM sandbox_operations")
ok $((nrows < 30)) "the walk's operations have their audit rows ($nrows)"
sbx audit verify
is "$rc" 0 "the audit's chains verify"
sb_serve_stop

# Case 20: a service that reaps sessions idle 2 s, every second.
SANDBOXD_IDLE_TIMEOUT=2 SANDBOXD_CLEANUP_INTERVAL=1
export SANDBOXD_IDLE_TIMEOUT SANDBOXD_CLEANUP_INTERVAL
sb_serve_start
ok $? "a service with a reaper every second" || tail -n 20 "$T/log" | sed 's/^/# /'
RS=xc-$sfx-idle
RT=$(curl -s -H "X-Sandbox-Token: $TOKEN" -H 'Content-Type: application/json' \
	-d "{\"session_id\":\"$RS\",\"runtime\":null,\"tenant\":null,\"reuse\":false}" \
	"http://127.0.0.1:$PORT/sessions" | jq -r .token)
curl -s -H "X-Sandbox-Token: $RT" -H 'Content-Type: application/json' \
	-d '{"path":"kept.txt","content_b64":"a2VwdAo="}' "http://127.0.0.1:$PORT/sessions/$RS/write" >/dev/null
n=0
while [ $n -lt 60 ]; do
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Sandbox-Token: $RT" \
		"http://127.0.0.1:$PORT/sessions/$RS")" = 401 ] && break
	sleep 0.25
	n=$((n + 1))
done
CONF_PHASE=reaped CONF_SID=$RS CONF_STOKEN=$RT
export CONF_PHASE CONF_SID CONF_STOKEN
conf
is "$crc" 0 "case 20 ran to its end"
sb_serve_stop
sb_done

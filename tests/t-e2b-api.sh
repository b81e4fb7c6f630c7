#!/bin/sh
# t-e2b-api.sh - E2B's control plane on a real `sbxcat serve` (docs/e2b.md,
# "Control plane" and "Lifecycle"), on the real engine and PostgreSQL:
# every route's shape as the E2B SDK's models require it, create, get and
# list (metadata and state filters, keyset paging by X-Next-Token while a
# sandbox is made meanwhile), tenants that never see each other's
# sandboxes, pause (204, then 409; memory false hibernates), connect (201
# resumed, then 200; a new token), timeout and refreshes, kill; a deadline
# the reaper acts on (kill, or pause with autoPause), a paused sandbox held
# past the idle rules until its retention; unknown templates named;
# hostile inputs refused with their 400/404 and never a 5xx, the service
# the same process throughout; the audit's rows in PostgreSQL.  The HTTP
# side is tests/e2b_api.py.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init e2b-api ea
sb_audit_db t_e2b_api_$$

TOKEN=svc-$(sb_rand)
KA=e2b_$(sb_rand) KB=e2b_$(sb_rand)
PORT=$(sb_free_port)
printf 'acme %s\nbeta %s\n' "$KA" "$KB" >"$T/tenants"
chmod 600 "$T/tenants"
# The reaper every second; idle rules short, so that a test sees them
# pass over the sandboxes they must leave alone.
IDLE=3 RETENTION=14
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=1 SANDBOXD_IDLE_TIMEOUT=$IDLE
SANDBOXD_PAUSE_AFTER=0 SBXCAT_E2B_PAUSED_RETENTION=$RETENTION
SBXCAT_E2B_TEMPLATES="code-interpreter-v1=$RSMALL,base=$RSMALL,small=$RSMALL"
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL SANDBOXD_IDLE_TIMEOUT \
	SANDBOXD_PAUSE_AFTER SBXCAT_E2B_PAUSED_RETENTION SBXCAT_E2B_TEMPLATES

# Bad settings are refused at start, naming the variable.
for bad in SBXCAT_E2B_TEMPLATES=x SBXCAT_E2B_TEMPLATES==a SBXCAT_E2B_MAX_TIMEOUT=0 \
	SBXCAT_E2B_MAX_TIMEOUT=1e9 SBXCAT_E2B_PAUSED_RETENTION=-1 SBXCAT_E2B_DOMAIN=a/b; do
	env "$bad" timeout 10 "$S" -C "$CAT" serve --listen "unix:$T/no.sock" >"$T/o" 2>&1
	rc=$?
	is "$rc" 2 "serve with $bad is refused (exit 2)"
	grep -q "${bad%%=*}" "$T/o"
	ok $? "... naming ${bad%%=*}" || sed 's/^/# /' "$T/o"
done

cat >"$T/sql" <<EOF
#!/bin/sh
. "$srcdir/tests/pgbed.sh"
pgbed_psql "$DB" -tA -c "\$1"
EOF
chmod +x "$T/sql"
E2B_PORT=$PORT E2B_TOKEN=$TOKEN E2B_KEY_A=$KA E2B_KEY_B=$KB E2B_ROOT=$ROOT
E2B_DEP=$DEP E2B_SQL=$T/sql E2B_TEMPLATE=small E2B_TAG=t$sfx
E2B_RETENTION=$RETENTION E2B_IDLE=$IDLE E2B_SEED=${E2B_SEED:-$$}
PYTHONPATH=$srcdir/tests
export E2B_PORT E2B_TOKEN E2B_KEY_A E2B_KEY_B E2B_ROOT E2B_DEP E2B_SQL \
	E2B_TEMPLATE E2B_TAG E2B_RETENTION E2B_IDLE E2B_SEED PYTHONPATH

# phase NAME: e2b_api.py's phase, its TAP folded into this test's.
phase() {
	timeout -s KILL 600 python3 "$srcdir/tests/e2b_api.py" "$1" >"$T/$1.tap" 2>"$T/$1.err"
	p_rc=$?
	is "$p_rc" 0 "the $1 phase ran to its end"
	sed 's/^/# /' "$T/$1.err" | head -20
	np=$(grep -c '^ok ' "$T/$1.tap")
	nf=$(grep -c '^not ok ' "$T/$1.tap")
	grep -A12 '^not ok' "$T/$1.tap" | head -120 | sed 's/^/# /'
	is "$nf" 0 "every case of the $1 phase passed ($np passed)"
	ok $((np < 1)) "the $1 phase's cases ran ($np of them)"
}

sb_serve_start --tenants "$T/tenants"
ok $? "sbxcat serve starts" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }
PID0=$SPID
phase shapes
phase lifecycle
phase fuzz
# E2B's paths no route serves, and refusals before any handler, in
# E2B's shape: the SDK reads "message" (else it says [object Object]).
for p in /sandboxes/x/unknown /v2/nothing /v1/x/y /templates/q/z/w; do
	got=$(curl -s -H "X-API-KEY: $TOKEN" "http://127.0.0.1:$PORT$p")
	is "$(printf '%s' "$got" | jq -c '[.code, (.message | type)]')" '[404,"string"]' \
		"GET $p: 404 in E2B's shape"
done
got=$(curl -s -X PUT -H "X-API-KEY: $TOKEN" "http://127.0.0.1:$PORT/v2/sandboxes")
is "$(printf '%s' "$got" | jq -c '.code')" 405 "PUT /v2/sandboxes: 405 in E2B's shape"
got=$(curl -s -H "X-API-KEY: nope" "http://127.0.0.1:$PORT/v2/sandboxes")
is "$(printf '%s' "$got" | jq -c '[.code, .message]')" '[401,"Invalid API key"]' \
	"a bad key at admit: 401 in E2B's shape"
got=$(curl -s -H 'Content-Type: application/json' -d '{}' \
	"http://127.0.0.1:$PORT/process.Process/Nope")
is "$(printf '%s' "$got" | jq -c '.code')" '"unimplemented"' \
	"an unknown Connect method: unimplemented, Connect's shape"
got=$(curl -s "http://127.0.0.1:$PORT/sessions/zz")
is "$(printf '%s' "$got" | jq -c 'keys')" '["detail"]' "sandboxd's paths keep their shape"
kill -0 "$SPID" 2>/dev/null
ok $? "the service is still running after all of it" ||
	grep -A40 'Sanitizer\|runtime error' "$T/log" | head -80 | sed 's/^/# /'
is "$SPID" "$PID0" "... the same process"
sb_serve_stop
sb_done

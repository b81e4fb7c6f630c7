#!/bin/sh
# t-e2b-process.sh - envd's process service through `sbxcat serve`
# (docs/e2b.md "Commands"), on the real engine and PostgreSQL: Start's
# stream (start, data, end, the end-stream frame), exit codes, stderr,
# envs and cwd, the deadline (deadline_exceeded, nothing left running),
# stdin fed and closed, List, SendSignal, a client that goes away,
# hostile envelopes and fields (each its Connect code, never a 5xx, the
# service alive), and every command's audit row.  The Connect side is
# tests/e2b_process.py.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init e2b-process ep
sb_audit_db t_e2b_process_$$

TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0 SANDBOXD_MAX_OUTPUT_BYTES=400000 SANDBOXD_MAX_WORKERS=140
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL SANDBOXD_MAX_OUTPUT_BYTES SANDBOXD_MAX_WORKERS

sb_serve_start
ok $? "sbxcat serve starts" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }

# The sandbox: made through the control plane (POST /v2/sandboxes).
sb_e2b_create "$TOKEN" 2>"$T/open.json"
ok $? "a sandbox is made" || { sed 's/^/# /' "$T/open.json"; bail_out "no sandbox"; }
SID=$E2B_SID ATOK=$E2B_TOK
KEY=$(sb_wire_key "$SID")
CTR=$(ctr "$KEY")
[ "$(state "$KEY")" = running ]
ok $? "its container runs"

cat >"$T/sql" <<SQL
#!/bin/sh
. "$srcdir/tests/pgbed.sh"
pgbed_psql "$DB" -c "\$1"
SQL
chmod +x "$T/sql"
SERVE_PORT=$PORT SANDBOX_ID=$SID ACCESS_TOKEN=$ATOK SERVE_ROOT=$ROOT CONTAINER=$CTR
DOCKER=${DOCKER:-docker} E2B_SQL=$T/sql SERVE_PID=$SPID FUZZ_SEED=${FUZZ_SEED:-$$}
PYTHONPATH=$srcdir/tests
export SERVE_PORT SANDBOX_ID ACCESS_TOKEN SERVE_ROOT CONTAINER DOCKER E2B_SQL SERVE_PID \
	FUZZ_SEED PYTHONPATH
timeout -s KILL 600 python3 "$srcdir/tests/e2b_process.py" >"$T/py.tap" 2>"$T/py.err"
is "$?" 0 "the Connect side ran to its end"
sed 's/^/# /' "$T/py.err" | head -20
sed 's/^/# /' "$T/py.tap"
np=$(grep -c '^ok ' "$T/py.tap")
nf=$(grep -c '^not ok ' "$T/py.tap")
is "$nf" 0 "every case of the Connect side passed ($np passed)"
ok $((np < 60)) "its cases ran ($np of them)"
kill -0 "$SPID" 2>/dev/null
ok $? "the service runs, the same process"
sb_serve_stop
sb_done

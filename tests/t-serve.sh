#!/bin/sh
# t-serve.sh - `sbxcat serve` through real HTTP clients (docs/serve.md):
# sandboxd's wire checked by tests/serve_wire.py (http.client) on loopback
# TCP, curl on the unix socket, and the service's life: every operation's
# row in PostgreSQL, the access log without a token, SIGHUP with a broken
# catalogue, a client gone mid-exec, SIGTERM with a request in flight,
# SIGKILL and a restart that finds its sessions and tokens.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init serve sv
sb_audit_db t_serve_$$

TOKEN=svc-$(sb_rand) TA=ta-$(sb_rand) TB=tb-$(sb_rand)
printf 'acme %s\nbeta %s\n' "$TA" "$TB" >"$T/tenants"
chmod 600 "$T/tenants"
PORT=$(sb_free_port)
SOCK=$T/serve.sock
SANDBOXD_TOKEN=$TOKEN SANDBOXD_MAX_READ_BYTES=65536 SANDBOXD_EXECUTE_TIMEOUT=60
SANDBOXD_POLICY_OVERRIDES=$T/policy.json SBXCAT_SERVE_GRACE=10
export SANDBOXD_TOKEN SANDBOXD_MAX_READ_BYTES SANDBOXD_EXECUTE_TIMEOUT \
	SANDBOXD_POLICY_OVERRIDES SBXCAT_SERVE_GRACE
SERVE_CAT=$T/serve-cat.json
cp "$CAT" "$SERVE_CAT"

# start_server: the service on TCP and the unix socket, with the tenants.
start_server() { sb_serve_start --listen "unix:$SOCK" --tenants "$T/tenants"; }
start_server
ok $? "sbxcat serve starts and answers /healthz" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }

# Refusals at start.
SANDBOXD_TOKEN='' timeout 10 "$S" -C "$CAT" serve --listen tcp:127.0.0.1:1 >"$T/o" 2>&1
rc=$?
ok $((rc == 0)) "TCP without a service token is refused (status $rc)"
grep -q "without a service token" "$T/o"
ok $? "... saying why"
chmod 644 "$T/tenants"
timeout 10 "$S" -C "$CAT" serve --listen "unix:$T/other.sock" --tenants "$T/tenants" >"$T/o" 2>&1
rc=$?
chmod 600 "$T/tenants"
ok $((rc == 0)) "a tenants file others may read is refused (status $rc)"
grep -q "group or others" "$T/o"
ok $? "... saying why"

SERVE_HOST=127.0.0.1 SERVE_PORT=$PORT SERVE_TOKEN=$TOKEN SERVE_RT=$RA SERVE_RT2=$RSMALL \
SERVE_RUNTIMES=$(jq -r '[.[].alias] | sort | join(",")' "$CAT") SERVE_MAX_READ=65536 \
SERVE_EXEC_TIMEOUT=60 SERVE_TENANT_A=acme SERVE_TENANT_B=beta SERVE_TOKEN_A=$TA \
SERVE_TOKEN_B=$TB SERVE_ROOT=$ROOT SERVE_PREFIX=w$$- SERVE_FUZZ_SEED=${SERVE_FUZZ_SEED:-$$} \
	timeout -s KILL 300 python3 "$srcdir/tests/serve_wire.py" >"$T/wire.tap" 2>"$T/wire.err"
rc=$?
is "$rc" 0 "the wire's conformance script ran to its end"
diag "the fuzzer's seed: ${SERVE_FUZZ_SEED:-$$} (SERVE_FUZZ_SEED=N repeats it)"
sed 's/^/# /' "$T/wire.err" | head -20
nw=$(grep -c '^ok ' "$T/wire.tap")
nf=$(grep -c '^not ok ' "$T/wire.tap")
grep '^not ok\|^#' "$T/wire.tap" | head -60 | sed 's/^/# /'
is "$nf" 0 "every wire case passed ($nw passed)"
ok $((nw < 110)) "the wire cases ran ($nw of them)"

# The unix socket, with curl.
st=$(curl -s -o "$T/o" -w '%{http_code}' --unix-socket "$SOCK" http://x/healthz)
is "$st" 200 "the unix socket answers"
is "$(stat -c %a "$SOCK")" 660 "the socket is 0660"

# The audit: every operation's row, no payload.
nrows=$(q "SELECT count(*) FROM sandbox_operations WHERE tenant = 'none@sandboxd'")
ok $((nrows < 60)) "the wire's operations have their rows ($nrows)"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE detail LIKE '%x\\n%' OR target LIKE '%l1%'")" 0 \
	"no row holds a file's contents"
sbx audit verify
is "$rc" 0 "the chains verify"

# The access log: one line per request, never a token.
if grep -q -e "$TOKEN" -e "$TA" -e "$TB" "$T/log"; then ok 1 "the log never holds a token"; else ok 0 "the log never holds a token"; fi
grep -q 'POST /sessions/{id}/exec 200' "$T/log"
ok $? "the log names the route template and the status"

# SIGHUP: a broken catalogue is kept out, a good one taken.
echo '[{"alias": "broken"' >"$T/serve-cat.json"
kill -HUP "$SPID"
sleep 1
grep -q "reload: the catalogue is kept" "$T/log"
ok $? "SIGHUP with a broken catalogue keeps the old one and says why"
is "$(curl -s "http://127.0.0.1:$PORT/healthz" | jq -r '.runtimes | length')" 4 "... the runtimes are as they were"
jq '. + [{"alias": "extra", "description": "added", "image": "sbxcat-test/busybox:1"}]' "$CAT" >"$T/serve-cat.json"
kill -HUP "$SPID"
sleep 1
is "$(curl -s "http://127.0.0.1:$PORT/healthz" | jq -r '.runtimes | length')" 5 "SIGHUP with a good catalogue takes it"

# A session for the life tests.
curl -s -H "X-Sandbox-Token: $TOKEN" -d '{"session_id": "life"}' "http://127.0.0.1:$PORT/sessions" >"$T/open.json"
LT=$(jq -r .token "$T/open.json")
ok $((${#LT} < 43)) "a session for the life tests"
# A client gone mid-exec: the command is stopped, and the row says so.
python3 - "$PORT" "$LT" <<'PY'
import socket, sys, time, json
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
body = json.dumps({"command": "sleep 40; echo never"})
s.sendall(("POST /sessions/life/exec HTTP/1.1\r\nHost: x\r\nX-Sandbox-Token: %s\r\n"
           "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (sys.argv[2], len(body), body)).encode())
time.sleep(2)
s.close()
PY
sleep 2
curl -s -H "X-Sandbox-Token: $LT" -d '{"command": "ps -o args | grep -c \"^sleep 40\" || true"}' \
	"http://127.0.0.1:$PORT/sessions/life/exec" >"$T/o"
is "$(jq -r .output "$T/o" | tr -d '\n')" 0 "a client gone mid-exec: its command is stopped"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE op = 'execute' AND detail LIKE 'cancelled: the client went away%'")" 1 \
	"... and its row says the client went away"

# SIGTERM with a request in flight: it finishes, the service exits 0.
# (The exec outlasts the pause before the signal by 2 s: a loaded
# machine starts curl slowly.)
curl -s -H "X-Sandbox-Token: $LT" -d '{"command": "sleep 4; echo done"}' \
	"http://127.0.0.1:$PORT/sessions/life/exec" >"$T/inflight" &
CPID=$!
sleep 1.5
kill -TERM "$SPID"
wait "$SPID"
rc=$?
SPID=""
wait "$CPID"
is "$rc" 0 "SIGTERM: the service exits 0"
is "$(jq -r .output "$T/inflight" | tr -d '\n')" done "... after the request in flight finished"
[ ! -e "$SOCK" ]
ok $? "... and its unix socket is gone"

# SIGKILL and a restart: the session and its token are found again.
start_server
ok $? "the service starts again"
kill -KILL "$SPID"
wait "$SPID" 2>/dev/null
SPID=""
start_server
ok $? "... and again after SIGKILL (the stale socket replaced)"
# Made-up tokens on made-up ids, hundreds a second, while the session's
# own client asks: its token was learnt at the start (from its record), so
# the bound on lookups (100 a second) falls on the flood, never on it.
python3 - "$PORT" "$LT" >"$T/flood" 2>&1 <<'PY'
import http.client, os, sys, threading, time
port, lt = int(sys.argv[1]), sys.argv[2]
codes = {}
stop = time.time() + 2.5
def flood():
    while time.time() < stop:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/sessions/f%s/exec" % os.urandom(6).hex(), body=b"{}",
                  headers={"X-Sandbox-Token": os.urandom(16).hex()})
        st = c.getresponse().status
        codes[st] = codes.get(st, 0) + 1
        c.close()
ts = [threading.Thread(target=flood) for _ in range(4)]
[t.start() for t in ts]
time.sleep(1)
own = []
for _ in range(5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/sessions/life", headers={"X-Sandbox-Token": lt})
    own.append(c.getresponse().status)
    c.close()
[t.join() for t in ts]
print("flood", sorted(codes.items()), "own", own)
PY
like "$(cat "$T/flood")" "own \\[200, 200, 200, 200, 200\\]" \
	"a flood of made-up tokens after a restart: the session's own client answered 200 each time"
like "$(cat "$T/flood")" "\\(503, [0-9]" "... while the flood met the bound on lookups (503)"
st=$(curl -s -o "$T/o" -w '%{http_code}' -H "X-Sandbox-Token: $LT" -d '{"command": "echo alive"}' \
	"http://127.0.0.1:$PORT/sessions/life/exec")
is "$st" 200 "the session's token still works after SIGKILL and a restart"
is "$(jq -r .output "$T/o" | tr -d '\n')" alive "... on the same session"
curl -s -X DELETE -H "X-Sandbox-Token: $LT" "http://127.0.0.1:$PORT/sessions/life?purge=true" >/dev/null
sb_serve_stop

# The reaper inside (case 20), and SIGTERM past the grace: a service whose
# sessions are idle after 2 s, reaped every second, with a grace of 1 s.
SANDBOXD_IDLE_TIMEOUT=2 SANDBOXD_CLEANUP_INTERVAL=1 SBXCAT_SERVE_GRACE=1
export SANDBOXD_IDLE_TIMEOUT SANDBOXD_CLEANUP_INTERVAL SBXCAT_SERVE_GRACE
start_server
ok $? "a service with a reaper every second" || tail -n 20 "$T/log" | sed 's/^/# /'
IT=$(api "$TOKEN" /sessions '{"session_id": "idle1"}' | jq -r .token)
api "$IT" /sessions/idle1/write '{"path": "kept.txt", "content_b64": "a2VwdAo="}' >/dev/null
n=0
while [ $n -lt 40 ]; do
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Sandbox-Token: $IT" "http://127.0.0.1:$PORT/sessions/idle1")" = 401 ] && break
	sleep 0.25
	n=$((n + 1))
done
is "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Sandbox-Token: $IT" "http://127.0.0.1:$PORT/sessions/idle1")" 401 \
	"a session idle past SANDBOXD_IDLE_TIMEOUT is reaped by the service: its token is worth nothing"
is "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Sandbox-Token: $IT" -d '{"path": "kept.txt"}' "http://127.0.0.1:$PORT/sessions/idle1/read")" 401 \
	"... its operations are refused (a client degrades)"
nreap=$(q "SELECT count(*) FROM sandbox_operations WHERE op = 'reap' AND ok AND target LIKE '%'")
ok $((nreap < 1)) "... and the reap has its row ($nreap)"
IT=$(api "$TOKEN" /sessions '{"session_id": "idle1", "reuse": true}' | jq -r .token)
is "$(api "$IT" /sessions/idle1/read_bytes '{"path": "kept.txt"}' | jq -r .content_b64)" a2VwdAo= \
	"a reuse after the reaper finds the files"
api "$IT" /sessions/idle1/exec '{"command": "sleep 30"}' >"$T/late" &
CPID=$!
sleep 1
t0=$(date +%s)
kill -TERM "$SPID"
wait "$SPID"
rc=$?
SPID=""
t1=$(date +%s)
wait "$CPID"
is "$rc" 0 "SIGTERM with an exec past the grace: the service exits 0"
ok $((t1 - t0 > 6)) "... within the grace and a little more ($((t1 - t0)) s)"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE op = 'execute' AND detail LIKE 'cancelled: the service stopped%'")" 1 \
	"... the exec stopped, its row saying the service stopped"
sb_done

#!/bin/sh
# t-fleet-death.sh - a fleet of two `sbxcat serve` hosts (tests/fleetbed.sh)
# on one private PostgreSQL database (issue 31, "Tests"): a host killed with
# SIGKILL and what the fleet does of it, counted in the fleet's tables,
# each engine's containers and the audit's rows: its lease lapses within
# seconds; its sessions answer 503 "... unreachable" through the other
# host at once, never a hang; new opens go to the live host, and a re-open
# of one of its ids is placed there; back, its reconcile closes its copy
# of that session and keeps its others, and nothing of the other host is
# touched.  Then every route forwarded: the platform's client
# (tests/conformance.py) walked against a host that owns none of its
# sessions.  Placement, the ceiling, drain and the rest are t-fleet.sh's.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/fleettest.sh
. "$srcdir/tests/fleettest.sh"
t0=$(date +%s)

ft_init t_fleet_death_$$
fleetbed_need 2 --no-registry
lap "the bed"
FB_CAT=$CAT
K=3
SBXCAT_FLEET_LEASE=3 SANDBOXD_MAX_SESSIONS_PER_TENANT=$K
export SBXCAT_FLEET_LEASE SANDBOXD_MAX_SESSIONS_PER_TENANT
fleetbed_serve 1 || bail_out "no serve on h1"
fleetbed_serve 2 || bail_out "no serve on h2"
PID2=$FB_SPID_2

# d1, d2 on h1 (h2 drains meanwhile), e1 on h2.
q "UPDATE fleet_hosts SET draining = true WHERE name = 'h2'"
is "$(open 1 d1) $(open 1 d2)" "200 200" "d1 and d2 open through h1"
q "UPDATE fleet_hosts SET draining = (name = 'h1')"
is "$(open 2 e1)" 200 "e1 opens through h2"
q "UPDATE fleet_hosts SET draining = false"
is "$(host_of d1) $(host_of d2) $(host_of e1)" "h1 h1 h2" "d1 and d2 live on h1, e1 on h2"
D1=$(tok d1) D2=$(tok d2) E1=$(tok e1)
KEY1=$(key_of 1 d1)
h2_ctrs() { fb_docker 2 ps -a --no-trunc --format '{{.ID}} {{.Names}} {{.State}}' | sort; }
h2_rows() { q "SELECT wire_id, state, tokens FROM fleet_sessions WHERE host = 'h2' ORDER BY 1"; }
c2=$(h2_ctrs) r2=$(h2_rows)
lap "three sessions"

# ---- h1 dies ----
fleetbed_serve_kill 1
tk=$(date +%s.%N)
ts=$(date +%s.%N)
st=$(api 2 "$D1" POST /sessions/d1/exec '{"command": "echo x"}')
el=$(secs_since "$ts")
is "$st" 503 "at once, an exec on d1 through h2: 503 (${el} s)"
grep -q "lives on host h1, which is unreachable" "$T/b"
ok $? "... \"lives on host h1, which is unreachable\"" || sed 's/^/# /' "$T/b"
ok "$(awk -v e="$el" 'BEGIN { print !(e < 3) }')" "... answered in ${el} s: well under the forward timeout, no hang"
lapsed() { [ "$(q "SELECT lease_until < now() FROM fleet_hosts WHERE name = 'h1'")" = t ]; }
wait_for 10 lapsed
ok $? "h1's lease lapses in the table ($(secs_since "$tk") s after the kill; the lease is 3 s)"
for m in "GET /sessions/d1" "POST /sessions/d1/exec" "POST /sessions/d2/read" "DELETE /sessions/d2"; do
	ts=$(date +%s.%N)
	case $m in
	*exec) st=$(api 2 "$D1" ${m% *} "${m#* }" '{"command": "echo x"}') ;;
	*read) st=$(api 2 "$D2" ${m% *} "${m#* }" '{"path": "x"}') ;;
	*d2) st=$(api 2 "$D2" ${m% *} "${m#* }") ;;
	*) st=$(api 2 "$D1" ${m% *} "${m#* }") ;;
	esac
	el=$(secs_since "$ts")
	ok "$(awk -v e="$el" -v s="$st" 'BEGIN { print !(s == 503 && e < 2) }')" \
		"$m through h2 once the lease lapsed: $st in ${el} s"
	grep -q "lives on host h1, which is unreachable" "$T/b" || diag "$(cat "$T/b")"
done
is "$(open 2 n1) $(host_of n1)" "200 h2" "a new open through h2 goes to h2, the live host"
is "$(open 1 n2 2>/dev/null)" 000 "(h1 answers nothing)"
is "$(open 2 d1) $(host_of d1)" "200 h2" "d1 re-opened through h2 is placed on h2"
is "$(engines_of d1)" "h1 h2" "... its container on h2's engine (h1's copy still runs: its serve is dead)"
D1B=$(tok d1)
lap "the death"

# ---- h1 returns ----
fleetbed_serve 1
ok $? "h1's serve starts again"
closed_here() { [ -z "$(ctr 1 "$KEY1")" ]; }
wait_for 15 closed_here
ok $? "h1's reconcile closes its copy of d1 (its container no longer runs on h1's engine)"
closed_row() {
	[ "$(q "SELECT count(*) FROM sandbox_operations WHERE session_key = '$KEY1' AND op = 'close' AND ok
		AND agent_ref = 'sbxcat-fleet'")" -ge 1 ]
}
wait_for 10 closed_row
ok $? "... an audit row of its close, of h1's key of d1, by the agent sbxcat-fleet" ||
	q "SELECT op, ok, detail FROM sandbox_operations WHERE session_key = '$KEY1'" | sed 's/^/# /'
diag "its close: $(q "SELECT detail, agent_ref FROM sandbox_operations WHERE session_key = '$KEY1' AND op = 'close'")"
is "$(host_of d1) $(host_of d2)" "h2 h1" "d1's row names h2 still, d2's h1"
for k in 1 2; do
	is "$(api $k "$D2" POST /sessions/d2/exec '{"command": "echo back"}') $(jq -r .output "$T/b")" "200 back" \
		"d2, kept by h1, answers through h$k with its old token"
	is "$(api $k "$D1B" POST /sessions/d1/exec '{"command": "echo moved"}') $(jq -r .output "$T/b")" "200 moved" \
		"d1 answers from h2 through h$k with its new token"
	is "$(api $k "$D1" POST /sessions/d1/exec '{"command": "echo old"}')" 401 \
		"... and d1's old token is refused through h$k"
done
is "$(api 1 "$E1" POST /sessions/e1/exec '{"command": "echo e"}') $(jq -r .output "$T/b")" "200 e" \
	"e1 answers through h1"
missing=$(printf '%s\n' "$c2" | while read -r line; do
	h2_ctrs | grep -qxF "$line" || echo "$line"; done)
is "$missing" "" "every container h2's engine had before the death is there, in its state"
missing=$(printf '%s\n' "$r2" | while read -r line; do
	h2_rows | grep -qxF "$line" || echo "$line"; done)
is "$missing" "" "every row of h2's from before is there, unchanged"
is "$FB_SPID_2" "$PID2" "h2's serve is the process that started"
lap "the return"
# ---- every route forwarded: the platform's client through h1, which
# owns none of its sessions (h1 drains: each is placed on h2) ----
q "UPDATE fleet_hosts SET draining = true WHERE name = 'h1'"
before1=$(fb_docker 1 ps -aq | wc -l)
fb_in 1 env CONF_HOST="$(fb_ip 1)" CONF_PORT=8080 CONF_TOKEN="$TOKEN" CONF_RT=fb CONF_RT2=fb2 \
	CONF_RUNTIMES=fb,fb2 CONF_MAX_READ=65536 CONF_EXEC_TIMEOUT=60 CONF_TENANT_MAX=$K \
	CONF_ROOT="$FB_DATA/h2/root" CONF_PREFIX=xc- CONF_COUNT="$T/count" CONF_SERVER_PID="$PID2" \
	timeout -s KILL 300 python3 "$srcdir/tests/conformance.py" >"$T/conf.tap" 2>"$T/conf.err"
is "$?" 0 "the platform's client (conformance.py) walked through h1 to its end"
np=$(grep -c '^ok ' "$T/conf.tap") nf=$(grep -c '^not ok ' "$T/conf.tap")
diag "the walk through h1: $np passed, $nf failed"
grep -A6 '^not ok' "$T/conf.tap" | head -60 | sed 's/^/# /'
sed 's/^/# stderr: /' "$T/conf.err" | head -10
# PUT /policy is the host's it is sent to (h1's here), and the open after
# it is placed on h2: the one case that cannot hold through a non-owner.
nf=$(grep '^not ok ' "$T/conf.tap" | grep -vc "the host's ceiling still holds")
is "$nf" 0 "every case of the walk passed through the non-owner (but PUT /policy's ceiling, h1's own)"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id LIKE 'xc-%' AND op = 'open'") \
$(q "SELECT count(*) FROM fleet_sessions WHERE wire_id LIKE 'xc-%' AND host <> 'h2'")" "$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id LIKE 'xc-%' AND op = 'open'") 0" \
	"no session of the walk was ever placed on h1"
is "$(fb_docker 1 ps -aq | wc -l)" "$before1" "h1's engine made no container for the walk"
nfw=$(grep -c ' xc-' "$FB_RUN/h2/serve.log")
ok $((nfw == 0)) "h2's access log has the walk's requests ($nfw lines)"
q "UPDATE fleet_hosts SET draining = false WHERE name = 'h1'"
lap "the walk"
kill -0 "$PID2" && kill -0 "$FB_SPID_1"
ok $? "both serves alive after the walk"
diag "wall time: $(($(date +%s) - t0)) s"
done_testing

#!/bin/sh
# t-fleet.sh - a fleet of two `sbxcat serve` hosts (tests/fleetbed.sh: a
# dockerd and a serve each, in namespaces of their own) on one private
# PostgreSQL database (issue 31, "Tests"), counting what the components
# hold: the fleet's tables, each engine's containers, the audit's rows.
#   - the settings' errors: a bad SBXCAT_FLEET, no SBXCAT_FLEET_URL, a bad
#     URL, a database without migration 6: serve exits 2, saying why;
#   - placement: opens through one host spread over both, the least
#     loaded first, each session's container on the engine of the host its
#     row names and on no other; a host whose warm pool has the runtime
#     ready is preferred even when it is the more loaded;
#   - the tenant's fleet-wide ceiling under opens fired at once through
#     both hosts: exactly the ceiling succeeds, the rest 429, three times;
#   - every route forwarded: the platform's client (tests/conformance.py)
#     walked against a host that owns none of its sessions; answers through
#     the non-owner byte for byte the owner's; a wrong token stops at the
#     non-owner (the owner never hears of it);
#   - drain: opens go elsewhere, the draining host's idle sessions
#     hibernate (state, container, audit row), undrain places there again;
#   - hostile requests (a forged hop header, ids not in the fleet, one
#     session's token on another's id): no 5xx, no crash;
#   - a host without SBXCAT_FLEET: no fleet row, answers as one host.
# The death of a host is t-fleet-death.sh's.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/fleettest.sh
. "$srcdir/tests/fleettest.sh"
t0=$(date +%s)

ft_init t_fleet_$$
fleetbed_need 2 --no-registry
lap "the bed"
FB_CAT=$CAT
K=3
TA=acme-$(ft_rand)
printf 'acme %s\n' "$TA" >"$T/tenants"
chmod 600 "$T/tenants"
SBXCAT_FLEET_LEASE=3 SBXCAT_FLEET_DRAIN_IDLE=1 SANDBOXD_MAX_SESSIONS_PER_TENANT=$K
export SBXCAT_FLEET_LEASE SBXCAT_FLEET_DRAIN_IDLE SANDBOXD_MAX_SESSIONS_PER_TENANT

# ---- the settings' errors: serve stops at once, exit 2, saying why ----
# bad_start WHAT PATTERN VAR=VALUE...: serve with these, in h1's namespace,
# exits $want (2: a usage error; 3: the environment's, sbxcat(1)).
want=2
bad_start() {
	b_what=$1 b_pat=$2
	shift 2
	fb_in 1 env DOCKER_HOST="$(fb_docker_host 1)" SANDBOXD_WORKSPACE_ROOT="$T/eroot" \
		SBXCAT_SPOOL_DIR="$T/espool" "$@" timeout 20 "$S" -C "$CAT" serve \
		--listen "unix:$T/e.sock" >"$T/e.out" 2>&1
	b_rc=$?
	is "$b_rc" $want "$b_what: serve exits $want"
	grep -q -- "$b_pat" "$T/e.out"
	ok $? "... saying so ($b_pat)" || sed 's/^/# /' "$T/e.out"
}
mkdir -p "$T/eroot" "$T/espool" && chmod 755 "$T/eroot"
bad_start "SBXCAT_FLEET 'h 1'" "SBXCAT_FLEET 'h 1'" SBXCAT_FLEET='h 1' SBXCAT_FLEET_URL=http://10.0.0.1:80
bad_start "SBXCAT_FLEET of 65 characters" "SBXCAT_FLEET '" \
	SBXCAT_FLEET="$(printf 'h%.0s' $(seq 65))" SBXCAT_FLEET_URL=http://10.0.0.1:80
bad_start "SBXCAT_FLEET without SBXCAT_FLEET_URL" "SBXCAT_FLEET_URL is not" SBXCAT_FLEET=h1
for u in ftp://h:1 http://h http://h:0 http://h:99999 http://u@h:80 http://h:80/p 'http://h :80'; do
	bad_start "SBXCAT_FLEET_URL '$u'" "SBXCAT_FLEET_URL '" SBXCAT_FLEET=h1 SBXCAT_FLEET_URL="$u"
done
bad_start "SBXCAT_FLEET_LEASE=2" "SBXCAT_FLEET_LEASE '2'" SBXCAT_FLEET=h1 \
	SBXCAT_FLEET_URL=http://10.0.0.1:80 SBXCAT_FLEET_LEASE=2
DB2=t_fleet_old_$$
URL2=$(pgbed_newdb "$DB2") && SBXCAT_DATABASE_URL=$URL2 "$S" audit migrate >/dev/null 2>&1 &&
	pgbed_psql "$DB2" -c "DROP TABLE fleet_sessions, fleet_hosts" \
		-c "DROP FUNCTION sbxcat_fleet_place" -c "DELETE FROM schema_migrations WHERE version = 6"
ok $? "a second database at schema version 5 (migration 6 taken back)"
want=3
bad_start "a database without migration 6" "no fleet tables: run .sbxcat audit migrate" \
	SBXCAT_FLEET=h1 SBXCAT_FLEET_URL=http://10.0.0.1:80 SBXCAT_DATABASE_URL="$URL2"
is "$(pgbed_psql "$DB2" -c "SELECT to_regclass('fleet_hosts') IS NULL")" t "... and made no table there"
is "$(q 'SELECT count(*) FROM fleet_hosts')" 0 "no start refused left a host's row"
lap "the settings' errors"

# ---- the fleet: h1, and h2 with a warm pool of fb ----
fleetbed_serve 1 --tenants "$T/tenants" || bail_out "no serve on h1"
SBXCAT_WARM_POOL=fb=1
export SBXCAT_WARM_POOL
fleetbed_serve 2 --tenants "$T/tenants" || bail_out "no serve on h2"
unset SBXCAT_WARM_POOL
PID1=$FB_SPID_1 PID2=$FB_SPID_2
is "$(q "SELECT string_agg(name || ' ' || url || ' ' || (lease_until > now()), ',' ORDER BY name) FROM fleet_hosts")" \
	"h1 $(fb_url 1) true,h2 $(fb_url 2) true" "both hosts joined: their rows, urls, live leases"

# ---- placement: spread, least loaded first ----
n=0
for i in 1 2 3 4; do
	st=$(open 1 p$i fb2)
	[ "$st" = 200 ] && n=$((n + 1))
done
is "$n" 4 "four opens through h1 answer 200"
is "$(q "SELECT host || ' ' || count(*) FROM fleet_sessions GROUP BY host ORDER BY host" | tr '\n' ,)" \
	"h1 2,h2 2," "the least loaded first: two on each host"
is "$(q "SELECT count(*) FROM fleet_sessions WHERE state = 'open' AND array_length(tokens, 1) = 1")" 4 \
	"each row open, with its token's hash"
bad=""
for i in 1 2 3 4; do
	h=$(host_of p$i) e=$(engines_of p$i)
	[ "$e" = "$h" ] || bad="$bad p$i:row=$h,engines=$e"
done
is "$bad" "" "each session's container runs on its row's host's engine and on no other"
for k in 1 2; do
	is "$(fb_docker $k ps -q --filter label=io.sbxcat.key --filter label=io.sbxcat.runtime=fb2 | wc -l)" 2 \
		"h$k's engine runs two sessions' containers"
done

# ---- drain by the table: opens go elsewhere ----
q "UPDATE fleet_hosts SET draining = true WHERE name = 'h1'"
for i in 5 6; do open 1 p$i fb2 >/dev/null; done
is "$(host_of p5) $(host_of p6)" "h2 h2" "h1 drains: two opens through h1 both go to h2"
q "UPDATE fleet_hosts SET draining = false WHERE name = 'h1'"

# ---- the pool first: h2 (4 sessions, h1 2) has fb ready ----
pool_ready() { [ "$(q "SELECT pool ->> 'fb' FROM fleet_hosts WHERE name = 'h2'")" = 1 ]; }
wait_for 30 pool_ready
ok $? "h2's row shows its pool's fb ready ($(q "SELECT pool FROM fleet_hosts WHERE name = 'h2'"))"
is "$(q "SELECT pool FROM fleet_hosts WHERE name = 'h1'")" "{}" "h1's shows no pool"
st=$(open 1 pool1 fb)
is "$st $(host_of pool1)" "200 h2" "an open of fb through h1 goes to h2, the more loaded, for its pool"
is "$(engines_of pool1)" h2 "... its container on h2's engine"
is "$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id = 'pool1' AND op = 'open' AND ok
	AND detail = 'claimed'")" 1 "... claimed from the pool (its audit row)"
st=$(open 1 p7 fb2)
is "$st $(host_of p7)" "200 h1" "an open of fb2 (no pool) goes to h1, the least loaded"
lap "placement"

# ---- the tenant's fleet-wide ceiling, opens fired at once ----
M=16
for round in 1 2 3; do
	fb_in 1 timeout -s KILL 120 python3 "$srcdir/tests/fleet_race.py" "$TA" "r$round-" $M \
		"$(fb_url 1)" "$(fb_url 2)" >"$T/race" 2>"$T/race.err"
	n200=$(awk '$2 == 200' "$T/race" | wc -l) n429=$(awk '$2 == 429' "$T/race" | wc -l)
	is "$n200 $n429" "$K $((M - K))" \
		"round $round: $M opens of acme at once through h1 and h2: exactly $K answer 200, the rest 429" ||
		sed 's/^/# /' "$T/race" "$T/race.err"
	is "$(awk '$2 == 429' "$T/race" | grep -c "Tenant 'acme' already holds $K of $K sessions. Release an idle session")" \
		$((M - K)) "... each 429 with sandboxd's text"
	is "$(q "SELECT count(*) FROM fleet_sessions WHERE tenant = 'acme' AND state = 'open'")" $K \
		"... the table holds exactly $K open rows of acme"
	is "$(($(fb_docker 1 ps -q --filter label=io.sbxcat.tenant=acme | wc -l) + \
		$(fb_docker 2 ps -q --filter label=io.sbxcat.tenant=acme | wc -l)))" $K \
		"... and the two engines $K containers of acme between them"
	# Closed (purged) through the other host than the one that answered.
	n=0
	for id in $(awk '$2 == 200 { print $1 }' "$T/race"); do
		st=$(api 2 "$TA" DELETE "/sessions/$id?purge=true")
		[ "$st" = 204 ] && n=$((n + 1))
	done
	is "$n $(q "SELECT count(*) FROM fleet_sessions WHERE tenant = 'acme'")" "$K 0" \
		"... each purged with the tenant's token through h2: 204, its row gone"
done
lap "the race"


# ---- drain: h1's idle sessions hibernate, opens go to h2 ----
on1=$(q "SELECT wire_id FROM fleet_sessions WHERE host = 'h1' ORDER BY 1" | tr '\n' ' ')
n1=$(echo $on1 | wc -w)
diag "h1's sessions: $on1"
q "UPDATE fleet_hosts SET draining = true WHERE name = 'h1'"
all_asleep() {
	for id in $on1; do
		[ "$(api 2 "$TOKEN" GET "/sessions/$id")" = 200 ] || return 1
		[ "$(jq -r .state "$T/b")" = hibernated ] || return 1
	done
}
wait_for 20 all_asleep
ok $? "h1 drains: its $n1 idle sessions are hibernated within seconds (GET through h2: state hibernated)"
bad=""
for id in $on1; do
	key=$(key_of 1 "$id")
	[ -z "$(ctr 1 "$key")" ] && [ -n "$(ctr 1 "$key" -a)" ] || bad="$bad $id"
done
is "$bad" "" "... each one's container on h1's engine stopped, not removed"
reaped() {
	[ "$(q "SELECT count(DISTINCT wire_id) FROM sandbox_operations WHERE op = 'reap' AND ok
		AND detail = 'hibernated: its host drains'")" = "$n1" ]
}
wait_for 10 reaped
ok $? "... each with an audit row: op reap, \"hibernated: its host drains\"" ||
	q "SELECT wire_id, op, detail FROM sandbox_operations WHERE op = 'reap'" | sed 's/^/# /'
st=$(open 1 dr1 fb2)
is "$st $(host_of dr1)" "200 h2" "an open through the draining h1 is placed on h2"
st=$(api 2 "$(tok p1)" POST /sessions/p1/exec '{"command": "echo awake"}')
is "$st $(jq -r .output "$T/b")" "200 awake" "a hibernated session of h1 wakes for an exec sent to h2"
q "UPDATE fleet_hosts SET draining = false WHERE name = 'h1'"
st=$(open 2 dr2 fb2)
is "$st $(host_of dr2)" "200 h1" "undrained: an open through h2 is placed on h1 again (the less loaded)"
lap "drain"

# ---- through the non-owner, answers as the owner's; a wrong token stops there ----
T5=$(tok p5)
cmpr() {
	c_what=$1 c_m=$2 c_p=$3 c_b=${4:-}
	s1=$(api 1 "$T5" "$c_m" "$c_p" "$c_b")
	cp "$T/b" "$T/b1"
	s2=$(api 2 "$T5" "$c_m" "$c_p" "$c_b")
	if [ "$s1" = "$s2" ] && cmp -s "$T/b1" "$T/b"; then ok 0 "$c_what: h1 answers as h2 does ($s1), byte for byte"
	else ok 1 "$c_what: h1 answers as h2 does"; diag "h1 $s1 $(head -c 200 "$T/b1")"; diag "h2 $s2 $(head -c 200 "$T/b")"; fi
}
is "$(host_of p5)" h2 "p5 lives on h2"
api 2 "$T5" POST /sessions/p5/write '{"path": "f.txt", "content": "one\ntwo\n"}' >/dev/null
cmpr "exec" POST /sessions/p5/exec '{"command": "printf \"%s\\n\" a b; exit 3"}'
cmpr "read" POST /sessions/p5/read '{"path": "f.txt", "offset": 0, "limit": 10}'
cmpr "read_bytes" POST /sessions/p5/read_bytes '{"path": "f.txt"}'
cmpr "exists" POST /sessions/p5/exists '{"path": "f.txt"}'
cmpr "ls" POST /sessions/p5/ls '{"path": "/workspace"}'
cmpr "glob" POST /sessions/p5/glob '{"pattern": "*.txt", "path": "/workspace"}'
cmpr "grep" POST /sessions/p5/grep '{"pattern": "two", "path": "/workspace"}'
cmpr "a missing file" POST /sessions/p5/read_bytes '{"path": "nope"}'
cmpr "a bad body" POST /sessions/p5/exec '{"command": 3}'
lines() { grep -c "p5" "$FB_RUN/h2/serve.log"; }
l0=$(lines)
st=$(api 1 "wrong-$(ft_rand)" POST /sessions/p5/exec '{"command": "echo no"}')
is "$st" 401 "a wrong token on h2's session through h1: 401"
st=$(api 1 "$(tok p1)" POST /sessions/p5/exec '{"command": "echo no"}')
is "$st" 401 "h1's session p1's token on h2's p5 through h1: 401"
st=$(api 1 "$T5" POST /sessions/p1/exec '{"command": "echo no"}')
is "$st" 401 "h2's p5's token on h1's p1 through h1: 401"
sleep 0.3
is "$(lines)" "$l0" "... and neither reached h2 (its access log has no line for them)"
api 1 "$TOKEN" GET /sessions >/dev/null
is "$(jq -r '[.sessions[].session_id] | sort | join(" ")' "$T/b")" \
	"$(q "SELECT string_agg(wire_id, ' ' ORDER BY wire_id) FROM fleet_sessions WHERE state = 'open'")" \
	"GET /sessions through h1 lists every open session of both hosts"
lap "forwarded answers"

# ---- hostile ----
hostile() {
	h_what=$1
	shift
	h_st=$(fb_curl 1 -s -o "$T/h" -w '%{http_code}' "$@")
	case $h_st in
	5??) ok 1 "$h_what: no 5xx ($h_st)"; sed 's/^/# /' "$T/h" ;;
	000) ok 1 "$h_what: answered" ;;
	*) ok 0 "$h_what: $h_st" ;;
	esac
}
HOP='X-Sbxcat-Fleet-Hop: 1'
hostile "a forged hop header on h2's session (its token)" -H "$HOP" -H "X-Sandbox-Token: $T5" \
	-d '{"command": "echo x"}' http://x/sessions/p5/exec
hostile "a forged hop header with the service token" -H "$HOP" -H "X-Sandbox-Token: $TOKEN" http://x/sessions/p5
hostile "a forged hop header on the list" -H "$HOP" -H "X-Sandbox-Token: $TOKEN" http://x/sessions
hostile "a forged hop header on an open" -H "$HOP" -H "X-Sandbox-Token: $TOKEN" -d '{"session_id": "hop1"}' http://x/sessions
hostile "a forged hop header on a close" -H "$HOP" -H "X-Sandbox-Token: $TOKEN" -X DELETE http://x/sessions/p5
is "$(api 2 "$T5" POST /sessions/p5/exec '{"command": "echo still"}') $(jq -r .output "$T/b")" "200 still" \
	"... p5 is still open on h2"
hostile "an id not in the fleet" -H "X-Sandbox-Token: $TOKEN" http://x/sessions/nosuch
hostile "an exec on an id not in the fleet" -H "X-Sandbox-Token: $TOKEN" -d '{"command": "id"}' http://x/sessions/nosuch/exec
hostile "an id of 65 characters" -H "X-Sandbox-Token: $TOKEN" "http://x/sessions/$(printf 'a%.0s' $(seq 65))"
hostile "an id with a dot dot" -H "X-Sandbox-Token: $TOKEN" "http://x/sessions/..%2fp5"
hostile "a header of 8 KiB" -H "X-Sandbox-Token: $T5" -H "X-Junk: $(head -c 8192 /dev/zero | tr '\0' a)" http://x/sessions/p5
hostile "two hop headers" -H "$HOP" -H "$HOP" -H "X-Sandbox-Token: $T5" http://x/sessions/p5
# A forged hop on an open that placement puts on h2 (h1 drains): h1 never
# sends it on (409), and leaves no row placing it on h2.
q "UPDATE fleet_hosts SET draining = true WHERE name = 'h1'"
st=$(fb_curl 1 -s -o "$T/h" -w '%{http_code}' -H "$HOP" -H "X-Sandbox-Token: $TOKEN" \
	-d '{"session_id": "hop2"}' http://x/sessions)
is "$st" 409 "a forged hop header on an open placed on h2: 409, not sent on"
is "$(q "SELECT count(*) FROM fleet_sessions WHERE wire_id = 'hop2'")" 0 "... and no row of it left placing"
is "$(open 1 hop2) $(host_of hop2)" "200 h2" "... the id opens on h2 after it"
q "UPDATE fleet_hosts SET draining = false WHERE name = 'h1'"
is "$FB_SPID_1 $FB_SPID_2" "$PID1 $PID2" "both serves are the processes that started"
kill -0 "$PID1" && kill -0 "$PID2"
ok $? "... and alive: no request ended either"
lap "hostile"

# ---- a host without SBXCAT_FLEET: nothing of the fleet ----
fleetbed_serve_stop 1
is "$FB_SERVE_STATUS" 0 "h1's serve stops on SIGTERM (status 0)"
is "$(q "SELECT lease_until <= now() FROM fleet_hosts WHERE name = 'h1'")" t "... its lease ended at once"
snap() { q "SELECT name, url, instance, renewed_at, lease_until, epoch FROM fleet_hosts WHERE name = 'h1'
	UNION ALL SELECT wire_id, host, state, placed_at, NULL, NULL FROM fleet_sessions ORDER BY 1"; }
before=$(snap)
FB_FLEET=0 fleetbed_serve 1 --tenants "$T/tenants"
ok $? "h1 serves again without SBXCAT_FLEET"
st=$(open 1 one1 fb2)
is "$st" 200 "an open on the single host answers 200"
is "$(engines_of one1)" h1 "... on its own engine"
is "$(api 1 "$(tok one1)" POST /sessions/one1/exec '{"command": "echo one"}') $(jq -r .output "$T/b")" "200 one" \
	"... and an exec in it"
is "$(api 1 "$T5" GET /sessions/p5)" 401 "h2's session is not known to it: 401 for its token"
is "$(api 1 "$TOKEN" GET /sessions/p5)" 404 "... 404 for the service token (nothing forwarded)"
is "$(snap)" "$before" "no fleet row written or changed: no row of one1, h1's host row untouched"
is "$(awk '/listening on/ { n = 0 } /fleet: / { n++ } END { print n + 0 }' "$FB_RUN/h1/serve.log")" 0 \
	"its log says nothing of a fleet"
is "$(api 1 "$(tok one1)" DELETE /sessions/one1?purge=true)" 204 "... and a close"
lap "a single host"
diag "wall time: $(($(date +%s) - t0)) s"
done_testing

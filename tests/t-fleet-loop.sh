#!/bin/sh
# t-fleet-loop.sh - two hosts of a fleet on loopback (docs/fleet.md): two
# `sbxcat serve` on one engine (the test-bed's) with their own roots, key
# secrets and spools, on the test's own database, each answering for the
# other's sessions.  Quick and without namespaces, so `make check-tsan`
# runs it: the lease's threads, placement from many workers at once, the
# forwarder's kept handles and the cache of where sessions live, under a
# concurrent load (tests/fleet_loop.py).  The multi-engine scenarios (a
# host killed, drain, racing tenants through hosts in their own network
# namespaces) are t-fleet.sh's and t-fleet-death.sh's.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init fleet-loop fl
sb_audit_db t_fleet_loop_$$

TOKEN=svc-$(sb_rand)
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0 SBXCAT_FLEET_LEASE=3
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL SBXCAT_FLEET_LEASE
PA=$(sb_free_port) PB=$(sb_free_port)

# serve_host NAME PORT: a host of the fleet, its root and spool its own.
serve_host() {
	mkdir -p "$T/$1/root" "$T/$1/spool" && chmod 755 "$T/$1/root"
	SANDBOXD_WORKSPACE_ROOT=$T/$1/root SBXCAT_SPOOL_DIR=$T/$1/spool \
		SBXCAT_FLEET=$1 SBXCAT_FLEET_URL=http://127.0.0.1:$2 \
		"$S" -C "$CAT" serve --listen "tcp:127.0.0.1:$2" 2>>"$T/$1.log" &
}
# dump FILE: FILE as TAP comments, ended by a newline even when FILE is
# not (a response body), so the next result line stays a line of its own.
dump() { sed 's/^/# /' "$1"; [ -z "$(tail -c 1 "$1")" ] || echo; }
up() {
	n=0
	while [ $n -lt 150 ]; do
		curl -sf "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
stop_hosts() {
	for p in ${PIDA:-} ${PIDB:-}; do kill "$p" 2>/dev/null; done
	for p in ${PIDA:-} ${PIDB:-}; do wait "$p" 2>/dev/null; done
}
trap 'stop_hosts; pgbed_dropdb "$DB" 2>/dev/null; sb_cleanup' EXIT

# Settings refused before anything listens: exit 2, naming the variable.
for bad in "SBXCAT_FLEET=-a" "SBXCAT_FLEET=a/b" "SBXCAT_FLEET_URL=ftp://x:1" \
	"SBXCAT_FLEET_URL=http://x" "SBXCAT_FLEET_URL=http://u@x:1" \
	"SBXCAT_FLEET_LEASE=1" "SBXCAT_FLEET_LEASE=x"; do
	env SBXCAT_FLEET=h SBXCAT_FLEET_URL=http://127.0.0.1:1 "$bad" \
		timeout 10 "$S" -C "$CAT" serve --listen "unix:$T/no.sock" >"$T/o" 2>&1
	rc=$?
	is "$rc" 2 "serve with $bad: refused (exit 2)"
	grep -q "${bad%%=*}" "$T/o"
	ok $? "... naming ${bad%%=*}" || dump "$T/o"
done
SBXCAT_FLEET=h timeout 10 "$S" -C "$CAT" serve --listen "unix:$T/no.sock" >"$T/o" 2>&1
is "$?" 2 "SBXCAT_FLEET without SBXCAT_FLEET_URL: refused"
grep -q "SBXCAT_FLEET_URL" "$T/o"
ok $? "... saying so"
# A database never migrated: the message says what to run.
NODB=$(pgbed_newdb "t_fleet_loop_nodb_$$") || bail_out "no second database"
SBXCAT_DATABASE_URL=$NODB SBXCAT_FLEET=h SBXCAT_FLEET_URL=http://127.0.0.1:1 \
	timeout 20 "$S" -C "$CAT" serve --listen "unix:$T/no.sock" >"$T/o" 2>&1
rc=$?
pgbed_dropdb "t_fleet_loop_nodb_$$" 2>/dev/null
is "$rc" 3 "a database without the fleet's tables: serve stops (exit 3)"
grep -q "audit migrate" "$T/o"
ok $? "... saying to run sbxcat audit migrate" || dump "$T/o"

serve_host a "$PA"
PIDA=$!
serve_host b "$PB"
PIDB=$!
up "$PA" && up "$PB"
ok $? "two hosts of a fleet serve" || { sed 's/^/# /' "$T/a.log" "$T/b.log"; bail_out "no fleet"; }
is "$(q "SELECT string_agg(name || ' ' || url, ',' ORDER BY name) FROM fleet_hosts WHERE lease_until > now()")" \
	"a http://127.0.0.1:$PA,b http://127.0.0.1:$PB" "both registered, alive, at their urls"

# A second process claiming a live host's name is refused (after waiting
# out one lease), and the first keeps its row.
mkdir -p "$T/a2/root" && chmod 755 "$T/a2/root"
SANDBOXD_WORKSPACE_ROOT=$T/a2/root SBXCAT_SPOOL_DIR=$T/a2 SBXCAT_FLEET=a \
	SBXCAT_FLEET_URL=http://127.0.0.1:1 timeout 30 "$S" -C "$CAT" serve \
	--listen "unix:$T/a2.sock" >"$T/o" 2>&1
is "$?" 1 "a second 'a' on another root: refused (a conflict)"
grep -q "host 'a' is in the fleet already" "$T/o"
ok $? "... saying host a is alive at its url" || dump "$T/o"
is "$(q "SELECT url FROM fleet_hosts WHERE name = 'a'")" "http://127.0.0.1:$PA" "... and a's row is a's still"

cat >"$T/sql" <<EOF
#!/bin/sh
. "$srcdir/tests/pgbed.sh"
pgbed_psql "$DB" -c "\$1"
EOF
chmod +x "$T/sql"
PYTHONPATH=$srcdir/tests timeout -s KILL 300 python3 "$srcdir/tests/fleet_loop.py" \
	"http://127.0.0.1:$PA" "http://127.0.0.1:$PB" "$TOKEN" "$T/sql" "$RSMALL" >"$T/py.tap" 2>"$T/py.err"
is "$?" 0 "the load ran to its end"
sed 's/^/# /' "$T/py.err" | head -20
np=$(grep -c '^ok ' "$T/py.tap")
nf=$(grep -c '^not ok ' "$T/py.tap")
grep -A20 '^not ok' "$T/py.tap" | head -60 | sed 's/^/# /'
[ "$nf" -eq 0 ] || grep -h "POST /sessions " "$T/a.log" "$T/b.log" | head -40 | sed "s/^/# log: /"
is "$nf" 0 "every check of the load passed ($np passed)"
ok $((np < 10)) "the load's checks ran ($np of them)"

kill -0 "$PIDA" && kill -0 "$PIDB"
ok $? "both hosts still serve"
# A session of a's, to reach through b once a has stopped: the load's
# closes may have left a none (placement is free to have put every
# survivor on b), so with b drained one is opened, which placement puts
# on a.
sid=$(q "SELECT wire_id FROM fleet_sessions WHERE host = 'a' AND state = 'open' LIMIT 1")
if [ -z "$sid" ]; then
	sid=on-a-$sfx
	"$S" -C "$CAT" fleet drain b >"$T/o" 2>&1 || sed 's/^/# drain: /' "$T/o"
	curl -s -o "$T/o" -H "X-Sandbox-Token: $TOKEN" -H "Content-Type: application/json" \
		-d "{\"session_id\": \"$sid\", \"runtime\": \"$RSMALL\"}" "http://127.0.0.1:$PB/sessions"
	"$S" -C "$CAT" fleet undrain b >"$T/o" 2>&1 || sed 's/^/# undrain: /' "$T/o"
fi
is "$(q "SELECT host || ' ' || state FROM fleet_sessions WHERE wire_id = '$sid'")" "a open" \
	"a session of a's is open ($sid)"
kill -TERM "$PIDA"
wait "$PIDA"
is "$?" 0 "host a stops with status 0"
PIDA=""
is "$(q "SELECT lease_until <= now() FROM fleet_hosts WHERE name = 'a'")" "t" "... its lease ended as it stopped"
code=$(curl -s -o "$T/o" -w '%{http_code}' -H "X-Sandbox-Token: $TOKEN" \
	-d '{"command": "true"}' "http://127.0.0.1:$PB/sessions/$sid/exec")
is "$code" 503 "a's session $sid through b: 503"
grep -q "lives on host a, which is unreachable" "$T/o"
ok $? "... saying host a is unreachable" || dump "$T/o"
serve_host a "$PA"
PIDA=$!
up "$PA"
ok $? "host a serves again (its row taken back at once)"
code=$(curl -s -o "$T/o" -w '%{http_code}' -H "X-Sandbox-Token: $TOKEN" \
	-d '{"command": "echo back"}' "http://127.0.0.1:$PB/sessions/$sid/exec")
is "$code" 200 "a's session through b works again"
done_testing

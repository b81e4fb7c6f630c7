#!/bin/sh
# t-serve-load.sh - `sbxcat serve` under load and under faults, through
# real HTTP clients (tests/serve_load.py): 32 clients x 50 mixed operations
# with every one answered right and recorded exactly once; the database
# stopped under load (a cluster of this test's own: rows spooled, replayed
# by the service itself, counts exact, none lost or doubled); the engine
# taken away and given back (through a proxy of the test-bed's socket:
# clear 502s, recovery without a restart of the service).
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init serve-load sl
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"

# The fault cluster: pgbed.sh's functions on a directory of our own, with
# a port of our own on its socket (as t-audit-writer.sh).
PGPORT_OWN=$((20000 + ($$ + 7) % 20000))
pgbed_own "$T" "$PGPORT_OWN"
chmod 711 "$T"
sh "$T/pgc.sh" start 2>"$T/pgc.err" || skip_all "the test's own PostgreSQL did not start: $(cat "$T/pgc.err")"
SPID="" PXPID=""
trap 'kill -KILL $SPID $PXPID 2>/dev/null; sh "$T/pgc.sh" stop fast; sb_cleanup' EXIT
FURL="host=$T/pgc-run port=$PGPORT_OWN user=sbxcat dbname=postgres"
SBXCAT_DATABASE_URL=$FURL
export SBXCAT_DATABASE_URL
q() { "$PGB_BIN/psql" -X -q -A -t -h "$T/pgc-run" -p "$PGPORT_OWN" -U sbxcat -d postgres -c "$1" 2>&1; }
PGB_BIN=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
sbx audit migrate
is "$rc" 0 "the test's own database migrated"

# The engine, through a proxy the test can take away.
ESOCK=$T/engine.sock
proxy_start() {
	python3 "$srcdir/tests/sockproxy.py" "$ESOCK" /run/sbxcat-testbed/docker.sock &
	PXPID=$!
	n=0
	while [ ! -S "$ESOCK" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
}
proxy_stop() { kill -TERM "$PXPID" 2>/dev/null; wait "$PXPID" 2>/dev/null; PXPID=""; }
proxy_start

TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN
export SANDBOXD_TOKEN
# The service alone reaches the engine through the proxy; the test's own
# docker client (its clean-up) goes to the engine itself.
DOCKER_HOST=unix://$ESOCK "$S" -C "$CAT" serve --listen "tcp:127.0.0.1:$PORT" 2>"$T/log" &
SPID=$!
n=0
until curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; do
	[ $n -lt 100 ] && kill -0 "$SPID" 2>/dev/null || bail_out "the service did not start: $(tail -3 "$T/log")"
	sleep 0.1
	n=$((n + 1))
done
SERVE_HOST=127.0.0.1 SERVE_PORT=$PORT SERVE_TOKEN=$TOKEN SERVE_PREFIX=l$$-
export SERVE_HOST SERVE_PORT SERVE_TOKEN SERVE_PREFIX
# rows_settled WANT: the rows in the database, once they stop changing
# (the writer commits in groups; a replay runs by itself), at most 30 s.
rows_settled() {
	rs_n=0 rs_last=-1
	while [ $rs_n -lt 60 ]; do
		rs_now=$(q "SELECT count(*) FROM sandbox_operations")
		[ "$rs_now" = "$1" ] && break
		[ "$rs_now" = "$rs_last" ] && [ $rs_n -gt 20 ] && break
		rs_last=$rs_now
		sleep 0.5
		rs_n=$((rs_n + 1))
	done
	echo "$rs_now"
}

# 32 clients x 50 operations.
before=$(q "SELECT count(*) FROM sandbox_operations")
timeout -s KILL 300 python3 "$srcdir/tests/serve_load.py" mixed 32 50 >"$T/load.tap" 2>&1
grep -v '^1\.\.' "$T/load.tap" | sed 's/^ok [0-9]* - /# /; s/^not ok [0-9]* - /# FAILED: /'
grep -q '^not ok' "$T/load.tap"
ok $((!$?)) "32 clients x 50 operations: no error" ||
	q "SELECT op, exit_status, detail FROM sandbox_operations WHERE NOT ok OR exit_status <> 0 LIMIT 5" | sed 's/^/# /'
ops=$(sed -n 's/^# ops //p' "$T/load.tap")
ok $((${ops:-0} < 1600)) "... every operation answered (${ops:-0})"
got=$(rows_settled $((before + ops)))
is "$got" $((before + ops)) "every operation recorded exactly once"
is "$(q "SELECT count(*) - count(DISTINCT id) FROM sandbox_operations")" 0 "no row doubled"

# The database stopped under load: rows spooled, replayed, counts exact.
before=$(q "SELECT count(*) FROM sandbox_operations")
FAULT_STOP="sh $T/pgc.sh stop" FAULT_START="sh $T/pgc.sh start 2>>$T/pgc.err" \
	timeout -s KILL 300 python3 "$srcdir/tests/serve_load.py" outage 8 80 >"$T/outage.tap" 2>&1
grep -v '^1\.\.' "$T/outage.tap" | sed 's/^ok [0-9]* - /# /; s/^not ok [0-9]* - /# FAILED: /'
grep -q '^not ok' "$T/outage.tap"
ok $((!$?)) "the database stopped under load: every operation still answered right"
ops=$(sed -n 's/^# ops //p' "$T/outage.tap")
curl -s -H "X-Sandbox-Token: $TOKEN" "http://127.0.0.1:$PORT/metrics" >"$T/metrics"
spooled=$(sed -n 's/^sbxcat_audit_rows_total{to="spool"} //p' "$T/metrics")
ok $((${spooled:-0} == 0)) "... rows went to the spool meanwhile (${spooled:-0})"
got=$(rows_settled $((before + ops)))
is "$got" $((before + ops)) "... and the service replayed them by itself: every row, once"
is "$(q "SELECT count(*) - count(DISTINCT id) FROM sandbox_operations")" 0 "... none doubled"
is "$(sed -n 's/^sbxcat_audit_rows_total{to="lost"} //p' "$T/metrics")" 0 "... none lost"
sbx audit verify
is "$rc" 0 "... and the chains verify"

# The engine away and back.
ENGINE_STOP="kill -TERM $PXPID" ENGINE_START="python3 $srcdir/tests/sockproxy.py $ESOCK /run/sbxcat-testbed/docker.sock >/dev/null 2>&1 & echo \$! >$T/pxpid; sleep 0.5" \
	timeout -s KILL 120 python3 "$srcdir/tests/serve_load.py" engine >"$T/engine.tap" 2>&1
PXPID=$(cat "$T/pxpid" 2>/dev/null)
grep -v '^1\.\.' "$T/engine.tap" | sed 's/^ok [0-9]* - /# /; s/^not ok [0-9]* - /# FAILED: /'
grep -q '^not ok' "$T/engine.tap"
ok $((!$?)) "the engine away: clear errors; back: recovery without a restart"
n=$(grep -c '^ok' "$T/engine.tap")
ok $((n < 7)) "... every step of it ran ($n)"
# Its sessions are this deployment's: the clean-up at exit removes them
# through the engine itself.
kill -TERM "$SPID"
wait "$SPID"
is "$?" 0 "the service stops cleanly after it all"
SPID=""
sb_done

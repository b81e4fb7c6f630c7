#!/bin/sh
# t-serve-who.sh - who acted, through `sbxcat serve` (docs/serve.md, "Agent
# and run"), on the real engine and PostgreSQL: the X-Sandbox-Agent and
# X-Sandbox-Run headers name the rows (found by `audit ls --agent/--run`),
# POST /sessions' agent and run are the session's defaults and survive a
# restart of the service, a header overrides them, `serve --agent/--run`
# is the default of the rest, the events show them; bad values are 422
# naming the header and run and record nothing; random bytes as values
# never bring the service down.  The HTTP side is tests/serve_who.py.
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
sb_init serve-who sw
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_serve_who_$$
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
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL

# Refused at start, naming where the bad value came from.
for bad in "--agent=" "--run=$(printf 'r%.0s' $(seq 201))" "--agent=a$(printf '\001')b"; do
	timeout 10 "$S" -C "$CAT" serve "$bad" --listen "unix:$T/no.sock" >"$T/o" 2>&1
	rc=$?
	is "$rc" 2 "serve ${bad%%=*} with a bad id is refused (exit 2)"
	grep -q -- "${bad%%=*}: an id" "$T/o"
	ok $? "... naming ${bad%%=*}" || sed 's/^/# /' "$T/o"
done
SBXCAT_AGENT_ID=$(printf 'x\033y') timeout 10 "$S" -C "$CAT" serve --listen "unix:$T/no.sock" >"$T/o" 2>&1
is "$?" 2 "a bad SBXCAT_AGENT_ID is refused by serve too"
grep -q "SBXCAT_AGENT_ID: an id" "$T/o"
ok $? "... naming it"

# start_server [OPTIONS...]: in the background, until /healthz answers.
start_server() {
	"$S" -C "$CAT" serve --listen "tcp:127.0.0.1:$PORT" "$@" 2>>"$T/log" &
	SPID=$!
	n=0
	while [ $n -lt 100 ]; do
		python3 -c "import http.client,sys; c=http.client.HTTPConnection('127.0.0.1',$PORT,timeout=2); c.request('GET','/healthz'); sys.exit(c.getresponse().status!=200)" 2>/dev/null && return 0
		kill -0 "$SPID" 2>/dev/null || return 1
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
cat >"$T/sql" <<EOF
#!/bin/sh
. "$srcdir/tests/pgbed.sh"
pgbed_psql "$DB" -c "\$1"
EOF
chmod +x "$T/sql"
WHO_SQL=$T/sql WHO_STATE=$T/state.json SERVE_PORT=$PORT SERVE_TOKEN=$TOKEN SERVE_ROOT=$ROOT
SERVE_PREFIX=v$$- SBXCAT=$S WHO_FUZZ_SEED=${WHO_FUZZ_SEED:-$$} PYTHONPATH=$srcdir/tests
export WHO_SQL WHO_STATE SERVE_PORT SERVE_TOKEN SERVE_ROOT SERVE_PREFIX SBXCAT WHO_FUZZ_SEED PYTHONPATH

# phase NAME: serve_who.py's phase, its TAP folded into this test's.
phase() {
	timeout -s KILL 300 python3 "$srcdir/tests/serve_who.py" "$1" >"$T/$1.tap" 2>"$T/$1.err"
	p_rc=$?
	is "$p_rc" 0 "the $1 phase ran to its end"
	sed 's/^/# /' "$T/$1.err" | head -20
	grep '^# fuzz' "$T/$1.tap" | while read -r line; do diag "${line#\# }"; done
	np=$(grep -c '^ok ' "$T/$1.tap")
	nf=$(grep -c '^not ok ' "$T/$1.tap")
	grep -A20 '^not ok' "$T/$1.tap" | head -60 | sed 's/^/# /'
	is "$nf" 0 "every case of the $1 phase passed ($np passed)"
	ok $((np < 1)) "the $1 phase's cases ran ($np of them)"
}

start_server --agent serve-agent --run serve-run
ok $? "sbxcat serve --agent --run starts" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }
phase phase1
phase fuzz
kill -0 "$SPID" 2>/dev/null
ok $? "the service is still running after the fuzz"
kill -TERM "$SPID"
wait "$SPID"
is "$?" 0 "the service stops with status 0"
SPID=""
start_server
ok $? "the service starts again, without --agent and --run"
phase phase2
stop_server
sb_done

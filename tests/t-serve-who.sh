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
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init serve-who sw
sb_audit_db t_serve_who_$$

TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
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

sb_serve_start --agent serve-agent --run serve-run
ok $? "sbxcat serve --agent --run starts" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }
phase phase1
phase fuzz
kill -0 "$SPID" 2>/dev/null
ok $? "the service is still running after the fuzz"
kill -TERM "$SPID"
wait "$SPID"
is "$?" 0 "the service stops with status 0"
SPID=""
sb_serve_start
ok $? "the service starts again, without --agent and --run"
phase phase2
sb_serve_stop
sb_done

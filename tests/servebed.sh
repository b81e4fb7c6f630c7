# tests/servebed.sh - what the tests of `sbxcat serve` share, on top of
# sessionbed.sh (sourced here with tap.sh, testbed.sh and pgbed.sh): the
# test's own audit database, the service started on a TCP port of its
# own, and a request to it.  Skips the whole test without python3 or curl.
#
#   set -u
#   : "${srcdir:?srcdir must name the source tree}"
#   . "$srcdir/tests/servebed.sh"
#   sb_init serve sv            # sessionbed.sh's: the engine, $T, $CAT...
#   sb_audit_db t_serve_$$      # $DB migrated; the EXIT trap
#   TOKEN=svc-$(sb_rand) PORT=$(sb_free_port)
#   SANDBOXD_TOKEN=$TOKEN; export SANDBOXD_TOKEN
#   sb_serve_start --tenants "$T/tenants" || bail_out "no service"
#   api "$TOKEN" /sessions '{"session_id": "a"}'
#
# The variables set here are the sourcing test's to use:
# shellcheck disable=SC2034

# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
command -v python3 >/dev/null || skip_all "python3 is missing"
command -v curl >/dev/null || skip_all "curl is missing"

# sb_rand: 32 random hex digits, a token's secret.
sb_rand() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
# sb_free_port: a TCP port free on 127.0.0.1 when asked.
sb_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# sb_audit_db NAME: the test's own database NAME on the PostgreSQL
# test-bed, migrated (one check), in $DB, $URL
# and SBXCAT_DATABASE_URL (exported); SPID emptied, and the EXIT trap then
# stops the service, drops the database and removes the rest (sb_cleanup).
# Skips the whole test when no test-bed can be reached or started.
sb_audit_db() {
	pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
	DB=$1
	URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
	SPID=""
	trap 'sb_serve_stop; pgbed_dropdb "$DB" 2>/dev/null; sb_cleanup' EXIT
	SBXCAT_DATABASE_URL=$URL
	export SBXCAT_DATABASE_URL
	sbx audit migrate
	is "$rc" 0 "the test's database migrated"
}
# q SQL: SQL on the test's database $DB, its rows unaligned.
q() { pgbed_psql "$DB" -c "$1"; }

# sb_serve_start [SERVE OPTIONS...]: sbxcat serve on the catalogue
# $SERVE_CAT ($CAT unless set), listening on tcp:127.0.0.1:$PORT and
# whatever the options add, in the background ($SPID), its stderr (the
# access log) appended to $T/log; 0 once /healthz answers, 1 if the
# service died or did not answer within 10 s.
sb_serve_start() {
	"$S" -C "${SERVE_CAT:-$CAT}" serve --listen "tcp:127.0.0.1:$PORT" "$@" 2>>"$T/log" &
	SPID=$!
	sb_n=0
	while [ $sb_n -lt 100 ]; do
		curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && return 0
		kill -0 "$SPID" 2>/dev/null || return 1
		sleep 0.1
		sb_n=$((sb_n + 1))
	done
	return 1
}
# api TOKEN PATH [BODY]: the service's answer on $PORT (a POST with BODY).
api() { curl -s -H "X-Sandbox-Token: $1" ${3:+-d "$3"} "http://127.0.0.1:$PORT$2"; }
# sb_e2b_create KEY [TEMPLATE]: an E2B sandbox made through the E2B
# front's control plane with API key KEY (POST /v2/sandboxes; TEMPLATE a
# runtime's alias, else "base": the default runtime), for an hour: its id in E2B_SID,
# its envdAccessToken in E2B_TOK; 1 (the answer on stderr) when none.
sb_e2b_create() {
	sb_doc=$(curl -s -H "X-API-KEY: $1" -H 'Content-Type: application/json' \
		-d "{\"timeout\": 3600, \"templateID\": \"${2:-base}\"}" \
		"http://127.0.0.1:$PORT/v2/sandboxes")
	E2B_SID=$(printf '%s' "$sb_doc" | jq -r '.sandboxID // empty')
	E2B_TOK=$(printf '%s' "$sb_doc" | jq -r '.envdAccessToken // empty')
	[ -n "$E2B_SID" ] && [ -n "$E2B_TOK" ] && return 0
	printf '%s\n' "$sb_doc" >&2
	return 1
}

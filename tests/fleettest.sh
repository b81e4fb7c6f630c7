# tests/fleettest.sh - what the fleet's scenario tests (t-fleet.sh,
# t-fleet-death.sh) share on top of tests/fleetbed.sh: the test's own
# database, migrated; a catalogue; the service's token; a request to a
# host; where a session lives (its row, its key, its container).
#
#   set -u
#   . "$srcdir/tests/fleettest.sh"   # tap.sh, testbed.sh, pgbed.sh, fleetbed.sh
#   ft_init t_fleet_$$              # $T, $DB, $CAT, $TOKEN; the EXIT trap
#   fleetbed_need 2
#   fleetbed_serve 1; fleetbed_serve 2
#   st=$(api 1 "$TOKEN" POST /sessions '{"session_id": "a"}')  # body: $T/b
#
# The variables set here are the sourcing test's to use:
# shellcheck disable=SC2034

# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
# shellcheck source=tests/fleetbed.sh
. "$srcdir/tests/fleetbed.sh"
PATH=$PATH:$TB_PATH
S=${SBXCAT:?SBXCAT must name the built binary}
for ft_c in jq python3 curl; do
	command -v $ft_c >/dev/null || skip_all "$ft_c is missing (sh scripts/deps.sh test)"
done

ft_rand() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

# ft_cleanup: (the serves' logs copied to FT_KEEP_LOGS when set) the bed, the database, the test's directory (the EXIT trap).
ft_cleanup() {
	if [ -n "${FT_KEEP_LOGS:-}" ] && [ -n "${FB_RUN:-}" ]; then
		mkdir -p "$FT_KEEP_LOGS"
		for ft_k in 1 2 3; do
			cp "$FB_RUN/h$ft_k/serve.log" "$FT_KEEP_LOGS/h$ft_k.log" 2>/dev/null
		done
	fi
	fleetbed_stop
	[ -z "${DB:-}" ] || pgbed_dropdb "$DB" 2>/dev/null
	[ -z "${DB2:-}" ] || pgbed_dropdb "$DB2" 2>/dev/null
	[ -z "${T:-}" ] || rm -rf "$T"
}

# ft_init DB: $T, the database DB (migrated: one check) in
# SBXCAT_DATABASE_URL, the catalogue $CAT (fb: the base image; fb2: the
# same with 64m of memory), the service token $TOKEN, nothing else of the
# caller's environment that serve reads; the EXIT trap.
ft_init() {
	ft_lap=$(date +%s.%N)
	T=$(mktemp -d /tmp/sbxcat-fleet.XXXXXX) || exit 1
	DB=$1 DB2=""
	trap ft_cleanup EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	unset SBXCAT_CATALOG SBXCAT_KEY_SECRET SBXCAT_KEY_SECRET_FILE SBXCAT_DEPLOYMENT_ID \
		SBXCAT_TENANT SANDBOXD_WORKSPACE_ROOT SBXCAT_SPOOL_DIR SBXCAT_WARM_POOL \
		SBXCAT_SERVE_TENANTS SBXCAT_FLEET SBXCAT_FLEET_URL SBXCAT_FLEET_LEASE \
		SBXCAT_FLEET_GIVE_UP SBXCAT_FLEET_DRAIN_IDLE SBXCAT_FLEET_FORWARD_TIMEOUT \
		SANDBOXD_MAX_OPEN_SESSIONS SANDBOXD_IDLE_TIMEOUT SANDBOXD_EVICT_IDLE_AFTER \
		SANDBOXD_POLICY_OVERRIDES SBXCAT_SERVE_TENANT PGHOST PGPORT PGDATABASE PGUSER
	pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
	SBXCAT_DATABASE_URL=$(pgbed_newdb "$DB") || bail_out "the PostgreSQL test-bed cannot make a database"
	export SBXCAT_DATABASE_URL
	"$S" audit migrate >"$T/migrate" 2>&1
	is "$?" 0 "the test's own database $DB is migrated" || sed 's/^/# /' "$T/migrate"
	CAT=$T/cat.json
	cat >"$CAT" <<'JSON'
[
  {"alias": "fb", "description": "the base", "image": "sbxcat-test/busybox:1"},
  {"alias": "fb2", "description": "the base, 64m", "image": "sbxcat-test/busybox:1",
   "mem_limit": "64m"}
]
JSON
	TOKEN=svc-$(ft_rand)
	SANDBOXD_TOKEN=$TOKEN SANDBOXD_MAX_SESSIONS=40 SANDBOXD_MAX_SESSIONS_PER_TENANT=40
	SANDBOXD_MAX_READ_BYTES=65536 SANDBOXD_EXECUTE_TIMEOUT=60
	export SANDBOXD_TOKEN SANDBOXD_MAX_SESSIONS SANDBOXD_MAX_SESSIONS_PER_TENANT \
		SANDBOXD_MAX_READ_BYTES SANDBOXD_EXECUTE_TIMEOUT
}

# q SQL: its rows on the test's database, unaligned, '|' between fields.
q() { pgbed_psql "$DB" -c "$1"; }

# api K TOKEN METHOD PATH [BODY]: host K's answer over its unix socket:
# the status printed, the body in $T/b.
api() {
	a_k=$1 a_tok=$2 a_m=$3 a_p=$4
	shift 4
	fb_curl "$a_k" -s -o "$T/b" -w '%{http_code}' -X "$a_m" -H "X-Sandbox-Token: $a_tok" \
		-H 'Content-Type: application/json' ${1:+--data-binary "$1"} "http://x$a_p"
}

# open K ID [RUNTIME] [TOKEN]: open ID through host K; the status printed,
# the session's token in $T/tok.ID.
open() {
	o_st=$(api "$1" "${4:-$TOKEN}" POST /sessions \
		"{\"session_id\": \"$2\"${3:+, \"runtime\": \"$3\"}}")
	[ "$o_st" != 200 ] || jq -r .token "$T/b" >"$T/tok.$2"
	echo "$o_st"
}
tok() { cat "$T/tok.$1"; }

# host_of ID: the host its fleet row names (nothing without a row).
host_of() { q "SELECT host FROM fleet_sessions WHERE wire_id = '$1'"; }

# key_of K ID: the key of session ID on host K (its directory under the
# host's workspace root names it in wire.json); nothing when it has none.
key_of() {
	for ko_f in "$FB_DATA/h$1"/root/*/wire.json; do
		[ -f "$ko_f" ] || continue
		[ "$(jq -r .id "$ko_f" 2>/dev/null)" = "$2" ] || continue
		ko_d=${ko_f%/wire.json}
		echo "${ko_d##*/}"
		return 0
	done
}

# ctr K KEY [ps options]: the containers of key KEY on host K's engine
# (by name, sbxcat-DEPLOYMENT-KEY: a container claimed from the warm pool
# has no key label).
ctr() {
	c_k=$1 c_key=$2
	shift 2
	fb_docker "$c_k" ps -q "$@" --filter "name=^/?sbxcat-${SBXCAT_DEPLOYMENT_ID:-fb-$FB_BED}-$c_key\$" 2>/dev/null
}

# engines_of ID: on which engines session ID has a running container,
# e.g. "h2" (found by its key on each host).
engines_of() {
	e_out=""
	for e_k in $(seq 1 "$FB_N"); do
		for e_h in $(seq 1 "$FB_N"); do
			e_key=$(key_of "$e_h" "$1")
			[ -n "$e_key" ] && [ -n "$(ctr "$e_k" "$e_key")" ] && e_out="$e_out h$e_k"
		done
	done
	echo "${e_out# }" | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# wait_for SECONDS CMD...: until CMD succeeds, at most SECONDS (tenths).
wait_for() {
	w_n=0 w_lim=$(($1 * 10))
	shift
	while [ $w_n -lt $w_lim ]; do
		"$@" && return 0
		sleep 0.1
		w_n=$((w_n + 1))
	done
	return 1
}

# lap NAME: the seconds since the last lap (or ft_init), as a diag.
lap() {
	diag "$1: $(secs_since "$ft_lap") s"
	ft_lap=$(date +%s.%N)
}

# secs_since T0: seconds (decimal) since T0 (date +%s.%N).
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

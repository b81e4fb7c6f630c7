# shellcheck shell=sh
# bench/sessionbench.sh - what the session benchmarks share (sourced by
# bench-session.sh and bench-fs.sh): the test-bed engine and base image,
# root, a temporary directory with a workspace root of its own, a
# deployment id of this run's, a catalogue of one runtime built from the
# base image (prewarmed), `sx` to run sbxcat on it, the timing helpers
# (now, elapsed, ratio, stats/med/p95, time1), and the removal of all of
# it at exit.  Call sb_bench_init NAME PREFIX after setting here.
# cleanup is called indirectly (trap):
# shellcheck disable=SC2317
srcdir=${srcdir:-$here/..}
S=${SBXCAT:-$here/../sbxcat}
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"

# sb_bench_init NAME PREFIX: NAME names the benchmark in messages, PREFIX
# its runtime's alias.  Sets T, DEP, RT, sfx; exits 1 when something is
# missing.
sb_bench_init() {
	testbed_docker || { echo "$1: no Docker engine (reason above)"; exit 1; }
	testbed_base_image || { echo "$1: no base image (reason above)"; exit 1; }
	[ "$(id -u)" = 0 ] || { echo "$1: needs root (the workspace root must be root's)"; exit 1; }
	SB_NAME=$1
	sfx=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
	T=$(mktemp -d)
	DEP=$1-$$
	RT=$2-$sfx
	trap sb_bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	cd "$T" || exit 1
	unset SBXCAT_CATALOG SBXCAT_ENGINE_TRACE SBXCAT_KEY_SECRET SBXCAT_KEY_SECRET_FILE \
		SBXCAT_TENANT SBXCAT_SESSION_NETWORK SANDBOXD_PERSIST_CONTAINERS SANDBOXD_MEM_LIMIT \
		SANDBOXD_MAX_READ_BYTES SANDBOXD_MAX_WRITE_BYTES SANDBOXD_SPILL_DIR
	mkdir -m 755 root
	# The audit's spool in the bench's own directory; no database unless
	# a bench sets one.
	unset SBXCAT_DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER \
		PGSERVICE PGSERVICEFILE SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT
	SBXCAT_SPOOL_DIR=$T/spool
	export SBXCAT_SPOOL_DIR
	SANDBOXD_WORKSPACE_ROOT=$T/root SBXCAT_DEPLOYMENT_ID=$DEP
	export SANDBOXD_WORKSPACE_ROOT SBXCAT_DEPLOYMENT_ID
	cat >cat.json <<JSON
[{"alias": "$RT", "description": "bench", "base_image": "sbxcat-test/busybox:1"}]
JSON
	sx prewarm "$RT" >/dev/null 2>&1 || { echo "$1: prewarm of the bench runtime failed"; exit 1; }
}

sb_bench_cleanup() {
	# shellcheck disable=SC2046
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP") \
		>/dev/null 2>&1
	testbed_remove_mine "$sfx"
	rm -rf "$T"
}

sx() { "$S" -C cat.json "$@"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# stats FILE: "median p95" of the seconds in FILE, one a line (p95 is the
# nearest rank: with 20 runs, the 19th).
stats() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		r = int(0.95 * NR + 0.999999); if (r < 1) r = 1
		printf "%.4f %.4f", m, v[r] }'
}
med() { stats "$1" | cut -d ' ' -f 1; }
p95() { stats "$1" | cut -d ' ' -f 2; }
# time1 FILE CMD...: append CMD's wall time to FILE (its stdout to
# $T/last.out); a failure stops the bench.
time1() {
	t_f=$1
	shift
	t0=$(now)
	"$@" >"$T/last.out" 2>"$T/last.err" || {
		echo "$SB_NAME: '$*' failed:"; cat "$T/last.err"; exit 1; }
	t1=$(now)
	{ elapsed "$t0" "$t1"; echo; } >>"$t_f"
}

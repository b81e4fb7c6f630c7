#!/bin/sh
# bench/bench-e2b.sh - the E2B front (issue 30) through the real E2B SDK
# (e2b 2.51.0, installed by tests/e2b/sdk.sh), on the test-bed engine,
# the audit on to the test-bed PostgreSQL; each figure beside its
# reference in the same run, a ratio of medians of at least 20 runs
# (bench/e2b_bench.mjs times them):
#  (1) commands.run("true") through the E2B front (a Connect stream of
#      process.Process/Start, `/bin/bash -l -c true` as the SDK sends it)
#      beside POST /sessions/ID/exec `true` through sandboxd's front of
#      the same service, alternately (target: ratio <= 1.1); beside them,
#      held to no target, the command the SDK sends through sandboxd's
#      front, for where the time goes;
#  (2) Sandbox.create() then commands.run("true") through a service with
#      a warm pool (SBXCAT_WARM_POOL=RUNTIME@/home/user=4: E2B's work
#      dir) beside `docker run -d` + `docker exec NAME true` with
#      bench-session.sh's flags (target <= 0.3).
# The runtime is tests/e2b/image.sh's image (busybox, bash, python3).  A
# missed target exits 1; so does a failure.  When node is missing or the
# npm registry cannot be reached, it says so and measures nothing (exit
# 0).  Everything made here is removed at the end.  SBXCAT_BENCH_RUNS:
# runs of each figure (20, never fewer); SBXCAT_BENCH_POOL: the pool (4).
# cleanup is called indirectly (trap):
# shellcheck disable=SC2317
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$here/..}
E2B_DIR=${E2B_SDK_DIR:-$(pwd)/tests/e2b}
# shellcheck source=bench/sessionbench.sh
. "$here/sessionbench.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
# shellcheck source=tests/e2b/sdk.sh
. "$srcdir/tests/e2b/sdk.sh"
# shellcheck source=tests/e2b/image.sh
. "$srcdir/tests/e2b/image.sh"
e2b_sdk_install "$E2B_DIR"
case $? in
0) ;;
1) echo "bench-e2b: SKIPPED, nothing measured: $E2B_SDK_WHY"; exit 0 ;;
*) echo "bench-e2b: $E2B_SDK_WHY"; exit 1 ;;
esac
e2b_sdk_usable "$E2B_DIR" e2b || { echo "bench-e2b: SKIPPED, nothing measured: $E2B_SDK_WHY"; exit 0; }
sb_bench_init bench-e2b be
e2b_image || { echo "bench-e2b: no E2B test image (reason above)"; exit 1; }
pgbed_start || { echo "bench-e2b: no PostgreSQL test-bed (reason above)"; exit 1; }
DB=bench_e2b_$$
PS=""
e2b_cleanup() {
	[ -n "$PS" ] && kill -TERM "$PS" 2>/dev/null && wait "$PS" 2>/dev/null
	pgbed_dropdb "$DB" 2>/dev/null
	sb_bench_cleanup
}
trap e2b_cleanup EXIT
URL=$(pgbed_newdb "$DB") || { echo "bench-e2b: cannot make a database"; exit 1; }
SBXCAT_DATABASE_URL=$URL "$S" audit migrate >/dev/null || { echo "bench-e2b: audit migrate failed"; exit 1; }
# The bench's runtime is the E2B image (the SDK runs /bin/bash).
cat >cat.json <<JSON
[{"alias": "$RT", "description": "bench: bash and python3", "image": "$E2B_IMAGE"}]
JSON

N=${SBXCAT_BENCH_RUNS:-20}
[ "$N" -ge 20 ] 2>/dev/null || N=20
POOL=${SBXCAT_BENCH_POOL:-4}
missed=0
verdict() {
	if awk -v v="$1" -v t="$3" "BEGIN { exit !(v $2 t) }"; then v=ok; else v=MISSED; missed=1; fi
}
compare() {
	c_r=$(ratio "$(med "$3")" "$(med "$5")")
	verdict "$c_r" "$6" "$7"
	printf '%s: %s median %s s p95 %s s; %s median %s s p95 %s s: ratio %s (target %s %s) %s\n' \
		"$1" "$2" "$(med "$3")" "$(p95 "$3")" "$4" "$(med "$5")" "$(p95 "$5")" "$c_r" "$6" "$7" "$v"
}

TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
KEY=e2b_$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
printf 'bench %s\n' "$KEY" >"$T/tenants"
chmod 600 "$T/tenants"
SANDBOXD_TOKEN=$TOKEN SANDBOXD_MAX_SESSIONS=200 SANDBOXD_MAX_SESSIONS_PER_TENANT=200
SANDBOXD_MAX_OPEN_SESSIONS=400 SANDBOXD_PAUSE_AFTER=86400 SANDBOXD_CLEANUP_INTERVAL=0
export SANDBOXD_TOKEN SANDBOXD_MAX_SESSIONS SANDBOXD_MAX_SESSIONS_PER_TENANT \
	SANDBOXD_MAX_OPEN_SESSIONS SANDBOXD_PAUSE_AFTER SANDBOXD_CLEANUP_INTERVAL
unset SBXCAT_WARM_POOL SANDBOXD_EVICT_IDLE_AFTER
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SERVE_URL=http://127.0.0.1:$PORT
E2B_MODULES=$E2B_DIR/node_modules E2B_API_URL=$SERVE_URL E2B_SANDBOX_URL=$SERVE_URL
E2B_API_KEY=$KEY SERVE_TOKEN=$TOKEN OUT=$T IMG=$E2B_IMAGE PREFIX=e$$-
export E2B_MODULES E2B_API_URL E2B_SANDBOX_URL E2B_API_KEY SERVE_URL SERVE_TOKEN OUT IMG PREFIX \
	RT DEP DOCKER
unset E2B_DOMAIN E2B_DEBUG

# serve [ENV=VALUE...]: the service on $PORT, in the background ($PS).
serve() {
	env "$@" SBXCAT_DATABASE_URL="$URL" "$S" -C cat.json serve --listen "tcp:127.0.0.1:$PORT" \
		--tenants "$T/tenants" 2>>"$T/log" &
	PS=$!
	n=0
	until curl -sf "$SERVE_URL/healthz" >/dev/null 2>&1; do
		[ $n -lt 100 ] || { echo "bench-e2b: the service did not start:"; tail -5 "$T/log"; exit 1; }
		sleep 0.1
		n=$((n + 1))
	done
}
stop() { kill -TERM "$PS" 2>/dev/null && wait "$PS" 2>/dev/null; PS=""; }
drive() {
	timeout -s KILL 1800 node "$here/e2b_bench.mjs" "$@" >"$T/drive.out" 2>&1 ||
		{ echo "bench-e2b: the driver failed ($*):"; sed 's/^/    /' "$T/drive.out" | tail -5; exit 1; }
}

echo "engine: $DOCKER_HOST; client: node $(node --version), e2b $(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$E2B_DIR/node_modules/e2b/package.json"); the audit on; $N runs each; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

# (1) the two fronts of one service, no pool.
serve SBXCAT_SPOOL_DIR="$T/spool-1"
drive exec "$N"
compare "(1) a command, true" 'commands.run("true") (E2B front)' exec.e2b \
	"POST /sessions/ID/exec (sandboxd's front)" exec.wire "<=" 1.1
printf '    where the time goes: the command the SDK sends, /bin/bash -l -c true, through sandboxd'"'"'s front: median %s s p95 %s s (E2B front / it: %s)\n' \
	"$(med exec.wirebash)" "$(p95 exec.wirebash)" "$(ratio "$(med exec.e2b)" "$(med exec.wirebash)")"
stop

# (2) create -> first command with a warm pool.
# An E2B sandbox's work dir is /home/user: the pool's containers are made there.
serve SBXCAT_WARM_POOL="$RT@/home/user=$POOL" SBXCAT_SPOOL_DIR="$T/spool-2"
drive first "$N" "$POOL"
compare "(2) create -> first command (SBXCAT_WARM_POOL=$RT@/home/user=$POOL)" \
	"Sandbox.create + commands.run" first.e2b "docker run -d + docker exec" first.docker "<=" 0.3
if grep -q '^# gauge 1' "$T/drive.out"; then
	echo "    sbxcat_pool_ready seen: runs waited for it to be $POOL again ($(sed -n 's/^# refill_timeouts //p' "$T/drive.out") waits cut at 15 s)"
else
	echo "    no sbxcat_pool_ready in /metrics: 0.5 s between runs"
fi
stop
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $missed

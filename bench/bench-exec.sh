#!/bin/sh
# bench/bench-exec.sh - exec at the speed of a fork (issue 33): `sbxcat
# serve` on the test-bed engine, the audit on to the test-bed PostgreSQL,
# through clients that keep their HTTP connection (bench/exec_bench.py),
# each figure beside its reference in the same run as a ratio of medians
# of at least 20 runs:
#  (1) exec `true` through the service (POST /sessions/{id}/exec) beside
#      the engine API's own exec on the session's container (create, start
#      reading the whole stream, inspect, on its unix socket), done by the
#      bench itself (target: ratio <= 0.15);
#  (2) `sbxcat exec KEY -- true` (the command line) beside `docker exec
#      CONTAINER true` (target <= 0.3);
#  (3) open -> first command (POST /sessions, then exec `true`) through a
#      service with a warm pool (SBXCAT_WARM_POOL=RUNTIME=4) beside `docker
#      run -d` + `docker exec` with bench-session.sh's flags (target <= 0.1;
#      bench-fast.sh's (1) is the same figure with issue 19's 0.3);
#  (4) 32 clients (threads, each its own kept connection and its own
#      session) running `true` through the service: execs/s, the median of
#      the rounds (target >= 500/s), every exec recorded (the rows counted
#      in the database after the run: rows == execs + opens).
# Everything runs twice: with SBXCAT_EXEC_PATH=auto (the default: the fast
# path, the engine when it cannot) and with SBXCAT_EXEC_PATH=engine (every
# command through the engine, as before issue 33), printed side by side:
# what the fast path gains.  The targets hold for auto alone.  Beside each
# figure, the commands the service started each way over it (/metrics'
# sbxcat_exec_started_total{path="fast"} and {path="engine"}, n/a for a
# service that has no such counter, and sbxcat_exec_fallback_total's
# reasons; for the command line, which has no /metrics, the engine's own
# exec_create events on its session's container).  Beside (4), for where
# the time goes: the CPU the service, its PostgreSQL backends, the engine
# and the client used over the counted rounds, a counted exec, and the
# service's own time of an exec (its access log).
# The pool's service runs first and alone, and is stopped before the other
# starts (no pool, no reaper).  A missed target exits 1.  Everything made
# here (the services, their containers and workspaces, the runtime's
# image, the databases) is removed at the end.  Sizes (environment):
# SBXCAT_BENCH_RUNS (20, never fewer: runs of (1)-(3), rounds of (4)),
# SBXCAT_BENCH_EXEC_OPS (the most execs of one client in one round of
# (4), 10; fewer when a first round, not counted, says a round would take
# more than about a second).
# cleanup is called indirectly (trap):
# shellcheck disable=SC2317
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$here/..}
# shellcheck source=bench/sessionbench.sh
. "$here/sessionbench.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
command -v python3 >/dev/null || { echo "bench-exec: python3 is missing"; exit 1; }
sb_bench_init bench-exec bx
pgbed_start || { echo "bench-exec: no PostgreSQL test-bed (reason above)"; exit 1; }
MODES="auto engine"
PP="" PA="" EV="" DBS=""
stop_service() { kill -TERM "$1" 2>/dev/null && wait "$1" 2>/dev/null; }
exec_cleanup() {
	[ -n "$PP" ] && stop_service "$PP"
	[ -n "$PA" ] && stop_service "$PA"
	[ -n "$EV" ] && kill "$EV" 2>/dev/null
	for m in $MODES; do
		for d in "$DEP-$m-pool" "$DEP-$m"; do
			# shellcheck disable=SC2046
			tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$d") \
				>/dev/null 2>&1
		done
	done
	for d in $DBS; do pgbed_dropdb "$d" 2>/dev/null; done
	sb_bench_cleanup
}
trap exec_cleanup EXIT
newdb() {
	n_url=$(pgbed_newdb "$1") || { echo "bench-exec: cannot make a database" >&2; exit 1; }
	SBXCAT_DATABASE_URL=$n_url "$S" audit migrate >/dev/null ||
		{ echo "bench-exec: audit migrate failed" >&2; exit 1; }
	echo "$n_url"
}
IMG=$(sx tag "$RT")

N=${SBXCAT_BENCH_RUNS:-20}
[ "$N" -ge 20 ] 2>/dev/null || N=20
POOL=4
missed=0
verdict() {
	if awk -v v="$1" -v t="$3" "BEGIN { exit !(v $2 t) }"; then v=ok; else v=MISSED; missed=1; fi
}
lo5() { sort -n "$1" | awk '{ v[NR] = $1 } END { r = int(0.05 * NR); if (r < 1) r = 1; printf "%.0f", v[r] }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f", s * 1000 }'; }

TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SANDBOXD_TOKEN=$TOKEN SANDBOXD_MAX_SESSIONS=200 SANDBOXD_MAX_SESSIONS_PER_TENANT=200
SANDBOXD_MAX_OPEN_SESSIONS=400 SANDBOXD_PAUSE_AFTER=86400 SANDBOXD_CLEANUP_INTERVAL=0
export SANDBOXD_TOKEN SANDBOXD_MAX_SESSIONS SANDBOXD_MAX_SESSIONS_PER_TENANT \
	SANDBOXD_MAX_OPEN_SESSIONS SANDBOXD_PAUSE_AFTER SANDBOXD_CLEANUP_INTERVAL
unset SBXCAT_WARM_POOL SANDBOXD_EVICT_IDLE_AFTER SBXCAT_EXEC_PATH
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# up PORT LOG: wait until the service on PORT answers /healthz (10 s).
up() {
	u_n=0
	until python3 -c "import http.client,sys; c=http.client.HTTPConnection('127.0.0.1',$1,timeout=2); c.request('GET','/healthz'); sys.exit(c.getresponse().status!=200)" 2>/dev/null; do
		[ $u_n -lt 100 ] || { echo "bench-exec: a service did not start:"; tail -5 "$2"; exit 1; }
		sleep 0.1
		u_n=$((u_n + 1))
	done
}
SERVE_TOKEN=$TOKEN ENGINE_SOCK=${DOCKER_HOST#unix://}
SX=$(printf '%s\n-C\n%s' "$S" "$T/cat.json")
export SERVE_TOKEN ENGINE_SOCK IMG RT DEP DOCKER SX
# drive MODE ARGS...: the driver, its "# key value" lines in $O/drive.out.
drive() {
	python3 "$here/exec_bench.py" "$@" >"$O/drive.out" ||
		{ echo "bench-exec: the driver failed ($*, SBXCAT_EXEC_PATH=$M)"; exit 1; }
}
said() { sed -n "s/^# $1 //p" "$O/drive.out"; }
paths() { echo "fast $(said path_fast), engine $(said path_engine)"; }

# settled [WANT]: the rows of $db, once they are WANT or stop changing (30 s).
settled() {
	st_n=0 st_last=-1
	while [ $st_n -lt 60 ]; do
		st_now=$(pgbed_psql "$db" -c "SELECT count(*) FROM sandbox_operations")
		[ "$st_now" = "${1:-}" ] && break
		[ "$st_now" = "$st_last" ] && [ $st_n -gt 4 ] && break
		st_last=$st_now
		sleep 0.5
		st_n=$((st_n + 1))
	done
	echo "$st_now"
}
echo "engine: $DOCKER_HOST; client for comparison: $DOCKER; the audit on, to the test-bed PostgreSQL; $N runs each; $(nproc) CPUs; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

for M in $MODES; do
	O=$T/$M
	mkdir -p "$O"
	OUT=$O PREFIX=x$$-$M-
	export OUT PREFIX
	echo "-- SBXCAT_EXEC_PATH=$M"

	# (3) the pooled service alone: its own deployment, root, spool, database.
	DBS="$DBS bench_exec_${M}_pool_$$"
	url=$(newdb "bench_exec_${M}_pool_$$") || exit 1
	mkdir -m 755 "$T/root-$M-pool"
	port=$(freeport)
	SBXCAT_EXEC_PATH=$M SBXCAT_WARM_POOL=$RT=$POOL SBXCAT_DATABASE_URL=$url \
		SBXCAT_SPOOL_DIR=$T/spool-$M-pool SANDBOXD_WORKSPACE_ROOT=$T/root-$M-pool \
		SBXCAT_DEPLOYMENT_ID=$DEP-$M-pool \
		"$S" -C cat.json serve --listen "tcp:127.0.0.1:$port" 2>"$O/log-pool" &
	PP=$!
	up "$port" "$O/log-pool"
	SERVE_PORT_P=$port SERVE_ROOT_P=$T/root-$M-pool drive first "$N" "$POOL"
	paths >"$O/first.paths"
	echo "    $M: fallbacks in (3): $(said fallbacks)" >"$O/first.why"
	said pooled >"$O/first.pooled"
	stop_service "$PP"
	PP=""
	# shellcheck disable=SC2046
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP-$M-pool") \
		>/dev/null 2>&1

	# (1), (2), (4): the service without a pool.
	DBS="$DBS bench_exec_${M}_$$"
	url=$(newdb "bench_exec_${M}_$$") || exit 1
	db=bench_exec_${M}_$$
	mkdir -m 755 "$T/root-$M"
	port=$(freeport)
	SBXCAT_EXEC_PATH=$M SBXCAT_DATABASE_URL=$url SBXCAT_SPOOL_DIR=$T/spool-$M \
		SANDBOXD_WORKSPACE_ROOT=$T/root-$M SBXCAT_DEPLOYMENT_ID=$DEP-$M \
		"$S" -C cat.json serve --listen "tcp:127.0.0.1:$port" 2>"$O/log" &
	PA=$!
	up "$port" "$O/log"
	SERVE_PORT_A=$port SERVE_ROOT_A=$T/root-$M
	export SERVE_PORT_A SERVE_ROOT_A

	# (1) and (2): the command line's session in the default root, the
	# audit to the spool (as bench-session.sh's (b)).
	key=$(sx session open --runtime "$RT" --tenant bench --scope run --subject "cli-$M") ||
		{ echo "bench-exec: session open failed"; exit 1; }
	cc=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["container"])' \
		"$T/root/$key/session.json") || { echo "bench-exec: no container in $key's record"; exit 1; }
	# The command line has no /metrics: the engine's own exec_create
	# events on its session's container say how many went through it
	# (followed live: the engine keeps only its last 256 events).
	"${DOCKER:-docker}" events --filter "container=$cc" --filter event=exec_create \
		--format '{{.ID}}' >"$O/cli.events" &
	EV=$!
	sleep 1
	SBXCAT_EXEC_PATH=$M drive exec "$N" "$key"
	paths >"$O/exec.paths"
	echo "    $M: fallbacks in (1): $(said fallbacks)" >"$O/exec.why"
	sleep 1
	kill "$EV"
	wait "$EV" 2>/dev/null
	EV=""
	ne=$(wc -l <"$O/cli.events")
	echo "fast $((N + 2 - ne)) (the rest), engine $ne (the engine's exec_create events on the session's container)" \
		>"$O/cli.paths"

	# (4) 32 clients, 32 sessions.  A round of K execs a client, K from
	# a first round of one each (not counted) so that a round takes about
	# a second, at most SBXCAT_BENCH_EXEC_OPS: a service whose execs take
	# seconds under 32 clients (the engine's path) ends in minutes too.
	K=${SBXCAT_BENCH_EXEC_OPS:-10}
	before=$(settled)
	pgpids=$(pgbed_psql "$db" -c "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
	# The engine: dockerd (the test-bed's pid file) and its containerd.
	engpids=""
	if [ -r "$TB_RUN/docker.pid" ]; then
		engpids="$(cat "$TB_RUN/docker.pid") $(ps -o pid= --ppid "$(cat "$TB_RUN/docker.pid")")"
	fi
	l0=$(wc -l <"$O/log")
	CPU_SERVICE=$PA CPU_PG=$pgpids CPU_ENGINE=$engpids drive load 32 "$K" "$N"
	# The service's own time of each exec of the phase (its access log).
	tail -n +"$((l0 + 1))" "$O/log" | awk '$3 == "/sessions/{id}/exec" && $4 == 200 { sub("ms", "", $5); print $5 / 1000 }' >"$O/load.served"
	paths >"$O/load.paths"
	errs=$(said errors)
	sed -n 's/^# error /    error: /p' "$O/drive.out"
	want=$((before + $(said made) + $(said opens)))
	got=$(settled "$want")
	echo "$((got - before)) $((want - before)) $errs" >"$O/load.rows"
	# ms an exec: CPU seconds over the rounds' execs.
	per() { awk -v c="$1" -v n="$(said execs)" 'BEGIN { printf "%.1f", n ? c * 1000 / n : 0 }'; }
	printf 'over the rounds (%s s): CPU a counted exec: the service %s ms, its children (the commands, and the fast path'"'"'s forks) %s ms, its PostgreSQL backends %s ms, the engine (dockerd, containerd) %s ms, the client %s ms; the service'"'"'s access log: an exec %s ms median, p95 %s ms; fallbacks: %s' \
		"$(said wall)" "$(per "$(said cpu_service)")" "$(per "$(said cpu_children)")" "$(per "$(said cpu_pg)")" "$(per "$(said cpu_engine)")" \
		"$(per "$(said cpu_client)")" "$(ms "$(med "$O/load.served")")" "$(ms "$(p95 "$O/load.served")")" \
		"$(said fallbacks)" >"$O/load.cpu"
	said k >"$O/load.k"
	stop_service "$PA"
	PA=""
	# shellcheck disable=SC2046
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP-$M") \
		>/dev/null 2>&1
done

# Side by side.  fig MODE FILE: "median p95" in ms.
fig() { printf '%s ms (p95 %s)' "$(ms "$(med "$T/$1/$2")")" "$(ms "$(p95 "$T/$1/$2")")"; }
# row LABEL SIDE REF TARGET: both modes' figures and ratios; the verdict
# on auto's.
row() {
	echo "$1"
	for M in $MODES; do
		r=$(ratio "$(med "$T/$M/$2")" "$(med "$T/$M/$3")")
		if [ "$M" = auto ]; then verdict "$r" "<=" "$4"; else v="(comparison)"; fi
		printf '    %-6s %s beside %s: ratio %s (target <= %s) %s; paths: %s\n' "$M:" \
			"$(fig "$M" "$2")" "$(fig "$M" "$3")" "$r" "$4" "$v" "$(cat "$T/$M/$5.paths")"
	done
}
echo "-- side by side (SBXCAT_EXEC_PATH=auto, then engine), medians of $N runs"
row "(1) exec true: the service beside the engine API's exec (kept connection)" exec.serve exec.engine 0.15 exec
cat "$T/auto/exec.why" "$T/engine/exec.why"
row "(2) sbxcat exec KEY -- true beside docker exec CONTAINER true" exec.cli exec.docker 0.3 cli
row "(3) open -> first command, SBXCAT_WARM_POOL=$RT=$POOL, beside docker run -d + docker exec" \
	first.serve first.docker 0.1 first
for M in $MODES; do
	printf '    %-6s the pool served %s of %s opens\n' "$M:" "$(cat "$T/$M/first.pooled")" "$N"
done
cat "$T/auto/first.why" "$T/engine/first.why"
echo "(4) 32 clients, each its own session, running true through the service, $N rounds"
for M in $MODES; do
	# shellcheck disable=SC2046
	set -- $(cat "$T/$M/load.rows")
	r=$(med "$T/$M/load.rate")
	if [ "$M" = auto ]; then verdict "$r" ">=" 500; else v="(comparison)"; fi
	if [ "$3" = 0 ] && [ "$1" = "$2" ]; then rv=ok; else rv=MISSED; [ "$M" = auto ] && missed=1; fi
	printf '    %-6s %s execs a client a round: median %.0f execs/s, 5th percentile %s/s (target >= 500/s) %s; rows %s of %s expected (the execs and opens), %s errors: %s; paths: %s\n' \
		"$M:" "$(cat "$T/$M/load.k")" "$r" "$(lo5 "$T/$M/load.rate")" "$v" "$1" "$2" "$3" "$rv" \
		"$(cat "$T/$M/load.paths")"
	printf '           %s\n' "$(cat "$T/$M/load.cpu")"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $missed

#!/bin/sh
# bench/bench-fleet.sh - a fleet of `sbxcat serve` hosts (issue 31) on the
# fleet's test bed (tests/fleetbed.sh: two hosts, each a network namespace
# with a dockerd of its own, and the PostgreSQL test-bed they share),
# measured side by side, as ratios, in one run.  The client
# (bench/fleet_bench.py, http.client on kept connections) runs in the
# bed's registry namespace: a third machine on the bed's bridge, so a
# direct request and a forwarded one both cross the bridge from it.
#  (1) exec `true` on a session living on h2, sent to h2 directly and
#      through h1 (which forwards it), alternately: p50 and p95 of each,
#      and the ratio forwarded / direct of the medians (target <= 1.1);
#      beside it, the same with `exists` (a cheap route): what one hop
#      costs, in ms;
#  (2) placement: sbxcat_fleet_place itself (the SQL function, one round
#      trip) timed by pgbench on a database of its own with 3 hosts' rows
#      and 5,000 sessions' rows, one client and then 4 racing: p50, p95,
#      p99 (target p95 <= 5 ms); and an open through serve with the fleet
#      on (h1, alone in the fleet) and through a serve without it on the
#      same engine, alternately: the placement's share of an open;
#  (3) a burst of opens (each followed by its DELETE with purge), 8 at a
#      time, through h1 with h1 alone in the fleet, and through both hosts
#      (the clients split) with both in it, rounds alternated: opens/s of
#      each and the ratio two / one (target >= 1.6); beside it, where the
#      time goes: how busy the machine's CPUs were, and the CPU the
#      engines, the serves and PostgreSQL used.
# A missed target exits 1; a machine that cannot run the bed (not root, a
# tool or a kernel feature missing) skips, saying why.  Everything made
# here (the bed: namespaces, engines, serves, containers; the two
# databases) is removed at the end.  Sizes (environment):
# SBXCAT_BENCH_RUNS (20: the open's runs; the exec's, the hop's and
# pgbench's are multiples), SBXCAT_BENCH_BURST (40 opens a round).
# cleanup is called indirectly (trap):
# shellcheck disable=SC2317
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$here/..}
S=${SBXCAT:-$here/../sbxcat}
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
# shellcheck source=tests/fleetbed.sh
. "$srcdir/tests/fleetbed.sh"
PATH=$PATH:$TB_PATH
skip() { echo "bench-fleet: SKIPPED, nothing measured: $*"; exit 0; }
for c in python3 jq; do
	command -v $c >/dev/null || skip "$c is missing (sh scripts/deps.sh test)"
done
[ -x "$PGB_BIN/pgbench" ] || skip "no pgbench in $PGB_BIN (postgresql-15)"

N=${SBXCAT_BENCH_RUNS:-20}
[ "$N" -ge 20 ] || N=20
NEXEC=$((N * 2)) NHOP=$((N * 5))
BURST=${SBXCAT_BENCH_BURST:-40}
T=$(mktemp -d)
DB=bench_fleet_$$ DBP=bench_fleet_place_$$
PLAIN=""
cleanup() {
	[ -n "$PLAIN" ] && kill -TERM "$PLAIN" 2>/dev/null && wait "$PLAIN" 2>/dev/null
	fleetbed_stop
	pgbed_dropdb "$DB" 2>/dev/null
	pgbed_dropdb "$DBP" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cd "$T" || exit 1
unset SBXCAT_CATALOG SBXCAT_ENGINE_TRACE SBXCAT_KEY_SECRET SBXCAT_KEY_SECRET_FILE \
	SBXCAT_TENANT SBXCAT_AUDIT SBXCAT_FLEET SBXCAT_FLEET_URL SBXCAT_REGISTRY \
	SBXCAT_DEPLOYMENT_ID SANDBOXD_PERSIST_CONTAINERS SANDBOXD_MEM_LIMIT
missed=0
verdict() {
	if awk -v v="$1" -v t="$3" "BEGIN { exit !(v $2 t) }"; then v=ok; else v=MISSED; missed=1; fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# pct FILE SCALE: "p50 p95 p99" of FILE's numbers times SCALE (nearest
# rank; the median of an even count is the mean of the middle two).
pct() {
	sort -n "$1" | awk -v k="$2" '{ v[NR] = $1 * k } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		r = int(0.95 * NR + 0.999999); if (r < 1) r = 1
		s = int(0.99 * NR + 0.999999); if (s < 1) s = 1
		printf "%.2f %.2f %.2f", m, v[r], v[s] }'
}
# cpu_now: the machine's busy and total jiffies (all CPUs).
cpu_now() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
# cpus PID...: user + system CPU seconds of the PIDs (those still there).
cpus() {
	for c_p; do cat "/proc/$c_p/stat" 2>/dev/null; done |
		awk -v hz="$(getconf CLK_TCK)" '{ u += $14 + $15 } END { printf "%.2f", u / hz }'
}

pgbed_start || { echo "bench-fleet: no PostgreSQL test-bed (reason above)"; exit 1; }
URL=$(pgbed_newdb "$DB") || { echo "bench-fleet: cannot make a database"; exit 1; }
URLP=$(pgbed_newdb "$DBP") || { echo "bench-fleet: cannot make a database"; exit 1; }
for u in "$URL" "$URLP"; do
	SBXCAT_DATABASE_URL=$u "$S" audit migrate >/dev/null ||
		{ echo "bench-fleet: audit migrate failed"; exit 1; }
done
q() { pgbed_psql "$DB" -c "$1"; }
qp() { pgbed_psql "$DBP" -c "$1"; }

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"

# (2a) first, on its own database (no bed yet, the machine quieter):
# placement as the SQL function.  10 live hosts of capacity 1,000 (one
# with the runtime's pool ready), 5,000 sessions of 100 tenants over them
# (1,000 open, 4,000 kept: a kept one is never counted); each call a new
# random id of one of the tenants, their fleet-wide ceiling 1,000.
# Beside it, in the same run: a bare round trip (SELECT 1), the floor of
# the machine; the function without waiting for its commit's WAL flush
# (synchronous_commit off: what the disk's fsync costs); 4 clients racing.
qp "INSERT INTO fleet_hosts (name, url, instance, capacity, pool, lease_until)
	SELECT 'p' || i, 'http://10.0.0.' || i || ':8080', 'bench', 1000,
		CASE WHEN i = 1 THEN '{\"fb\": 2}' ELSE '{}' END::jsonb, now() + interval '1 day'
	FROM generate_series(1, 10) i;
	INSERT INTO fleet_sessions (wire_id, tenant, host, state, runtime)
	SELECT 'seed-' || i, 't' || (i % 100), 'p' || (1 + i % 10),
		CASE WHEN i % 5 = 0 THEN 'open' ELSE 'kept' END, 'fb'
	FROM generate_series(1, 5000) i" >/dev/null ||
	{ echo "bench-fleet: cannot fill the placement's database"; exit 1; }
cat >place.sql <<'SQL'
\set id random(1, 1000000000)
\set t random(0, 99)
SELECT * FROM sbxcat_fleet_place('pb-' || :id, 't' || :t, 1000, 'fb', NULL);
SQL
echo 'SELECT 1;' >floor.sql
# place NAME SCRIPT CLIENTS CALLS [OPTIONS]: pgbench's per-call latencies
# (microseconds) in place.NAME, on the seeded rows (the calls' own rows
# removed before, the table vacuumed).
place() {
	qp "DELETE FROM fleet_sessions WHERE wire_id LIKE 'pb-%'" >/dev/null &&
		qp "VACUUM ANALYZE fleet_sessions" >/dev/null || exit 1
	rm -f pl.*
	PGOPTIONS=${5:-} "$PGB_BIN/pgbench" -n -f "$2" -c "$3" -j "$(($3 < 2 ? 1 : 2))" -t "$4" -l \
		--log-prefix=pl "$(pgbed_url "$DBP")" >pgbench.out 2>&1 ||
		{ echo "bench-fleet: pgbench failed:"; tail -5 pgbench.out; exit 1; }
	cat pl.* | awk '{ print $3 }' >"place.$1"
}
NPL=$((N * 50))
place warm place.sql 1 "$((N * 5))"
place floor floor.sql 1 "$NPL"
place one place.sql 1 "$NPL"
place async place.sql 1 "$NPL" "-c synchronous_commit=off"
place four place.sql 4 "$((NPL / 4))"
# shellcheck disable=SC2046
set -- $(pct place.one 0.001) $(pct place.floor 0.001) $(pct place.async 0.001) $(pct place.four 0.001)
verdict "$2" "<=" 5
printf '(2) placement, sbxcat_fleet_place (one round trip, its commit durable) on 10 hosts and 5000 sessions (1000 open), %s calls, one client: p50 %s ms p95 %s ms p99 %s ms (target p95 <= 5 ms) %s\n' \
	"$NPL" "$1" "$2" "$3" "$v"
printf '    beside it: SELECT 1 (the round trip alone) p50 %s ms p95 %s ms p99 %s ms; the function with synchronous_commit off (no wait for the WAL flush) p50 %s ms p95 %s ms p99 %s ms; 4 clients racing p50 %s ms p95 %s ms p99 %s ms\n' \
	"$4" "$5" "$6" "$7" "$8" "$9" "${10}" "${11}" "${12}"

# The bed: two hosts and the registry (whose namespace is the client's).
ts=$(date +%s.%N)
fleetbed_start 2
case $? in
0) ;;
2) skip "no fleet test bed: $FB_WHY" ;;
*) echo "bench-fleet: the fleet test bed failed to start: $FB_WHY"; exit 1 ;;
esac
echo "the bed: 2 hosts, started in $(awk -v a="$ts" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SANDBOXD_TOKEN=$TOKEN SBXCAT_DATABASE_URL=$URL SANDBOXD_CLEANUP_INTERVAL=0
SANDBOXD_MAX_SESSIONS=200 SANDBOXD_MAX_SESSIONS_PER_TENANT=200
export SANDBOXD_TOKEN SBXCAT_DATABASE_URL SANDBOXD_CLEANUP_INTERVAL SANDBOXD_MAX_SESSIONS \
	SANDBOXD_MAX_SESSIONS_PER_TENANT
CAT=$T/cat.json
echo '[{"alias": "fb", "description": "the bench", "image": "sbxcat-test/busybox:1"}]' >"$CAT"
export CAT
for k in 1 2; do
	fleetbed_serve $k || { echo "bench-fleet: no serve on h$k"; exit 1; }
done
OUT=$T PREFIX=bf$$
export TOKEN OUT PREFIX
# drive MODE ARGS: the client, in the registry's namespace.
drive() {
	nsenter --net="$FB_RUN/reg/netns" env -u http_proxy -u https_proxy -u HTTP_PROXY \
		-u HTTPS_PROXY -u all_proxy -u ALL_PROXY python3 "$here/fleet_bench.py" "$@" \
		>drive.out || { echo "bench-fleet: the driver failed ($*)"; exit 1; }
}
# metric K NAME: a value of host K's /metrics.
metric() {
	fb_curl "$1" -s -H "X-Sandbox-Token: $TOKEN" http://x/metrics | awk -v n="$2" '$1 == n { print $2 }'
}
# opens K: host K's opens so far (0 while its serve is down).
opens() { o_n=$(metric "$1" sbxcat_session_opens_total); echo "${o_n:-0}"; }
# open_on K ID: open ID through host K; prints its token.
open_on() {
	fb_curl "$1" -s -H "X-Sandbox-Token: $TOKEN" -d "{\"session_id\": \"$2\"}" http://x/sessions |
		jq -r .token
}

# (1) a session living on h2: opened through h2 until placement puts one
# there (it prefers the less loaded host: the second try at most).
sid="" tok=""
for i in 1 2 3 4; do
	t=$(open_on 2 "bf$$-exec$i")
	[ "$(q "SELECT host FROM fleet_sessions WHERE wire_id = 'bf$$-exec$i'")" = h2 ] &&
		{ sid=bf$$-exec$i tok=$t; break; }
done
case $sid:$tok in :* | *: | *:null) echo "bench-fleet: no session on h2"; exit 1 ;; esac
drive exec "$NEXEC" "$sid" "$tok"
# The runs are pairs (one of each, in turn): the median of the pairs'
# ratios holds however the machine's speed drifts over the run.
pairs() { paste "$1" "$2" | awk '{ print $1 / $2 }' >pairs && pct pairs 1 | cut -d' ' -f1; }
rp=$(pairs exec.fwd exec.direct)
# shellcheck disable=SC2046
set -- $(pct exec.direct 1000) $(pct exec.fwd 1000)
verdict "$rp" "<=" 1.1
printf '(1) exec true on a session of h2, %s runs each: direct p50 %s ms p95 %s ms; through h1 (forwarded) p50 %s ms p95 %s ms: forwarded / direct, the median of the pairs'"'"' ratios %s (target <= 1.1) %s; the ratio of the medians %s, of the p95s %s\n' \
	"$NEXEC" "$1" "$2" "$4" "$5" "$rp" "$v" "$(ratio "$4" "$1")" "$(ratio "$5" "$2")"
# Where the time goes, from the hosts' access logs (a line per request,
# its duration in ms): h2 logs every exec, the direct and the forwarded
# ones in the driver's order (a round: forwarded first in even rounds,
# direct first in odd ones; 5 rounds of warm-up), h1 the forwarded ones.
acc() { awk '$2 == "POST" && $3 == "/sessions/{id}/exec" { sub(/ms$/, "", $5); print $5 }' "$FB_RUN/h$1/serve.log"; }
acc 2 | awk '{ r = int((NR - 1) / 2); if (r < 5) next
	if (((NR - 1) % 2 == 0) == (r % 2 == 0)) print >"own.fwd"; else print >"own.direct" }'
acc 1 | awk 'NR > 5' >edge.fwd
paste edge.fwd own.fwd | awk '{ print $1 - $2 }' >edge.extra
if [ "$(wc -l <edge.fwd)" = "$NEXEC" ] && [ "$(wc -l <own.direct)" = "$NEXEC" ]; then
	# shellcheck disable=SC2046
	set -- $(pct own.direct 1) $(pct own.fwd 1) $(pct edge.extra 1)
	printf '    where the time goes (the hosts'"'"' access logs, ms): h2'"'"'s own exec p50 %s p95 %s on the direct ones, p50 %s p95 %s on the forwarded ones; h1'"'"'s time beyond h2'"'"'s on a forwarded one (the hop inside the fleet) p50 %s p95 %s\n' \
		"$1" "$2" "$4" "$5" "$7" "$8"
else
	echo "    (the access logs hold $(wc -l <edge.fwd) forwarded and $(wc -l <own.direct) direct execs, not $NEXEC each: no breakdown)"
fi
drive hop "$NHOP" "$sid" "$tok"
# shellcheck disable=SC2046
set -- $(pct hop.direct 1000) $(pct hop.fwd 1000)
printf '    one hop, on exists (a cheap route), %s runs each: direct p50 %s ms p95 %s ms; forwarded p50 %s ms p95 %s ms (the pairs'"'"' ratio %s): the hop costs %s ms at the median, %s ms at p95\n' \
	"$NHOP" "$1" "$2" "$4" "$5" "$(pairs hop.fwd hop.direct)" "$(awk -v a="$4" -v b="$1" 'BEGIN { printf "%.2f", a - b }')" \
	"$(awk -v a="$5" -v b="$2" 'BEGIN { printf "%.2f", a - b }')"
fb_curl 2 -s -X DELETE -H "X-Sandbox-Token: $TOKEN" "http://x/sessions/$sid?purge=true" >/dev/null

# (2b) an open with placement and without: h1 alone in the fleet, beside
# a serve of no fleet on h1's engine and namespace (a deployment, root
# and spool of its own), alternately.
fleetbed_serve_stop 2
mkdir -p "$FB_DATA/h1/root-plain" "$FB_DATA/h1/spool-plain" && chmod 755 "$FB_DATA/h1/root-plain"
(
	DOCKER_HOST=$(fb_docker_host 1) SANDBOXD_WORKSPACE_ROOT=$FB_DATA/h1/root-plain
	SBXCAT_SPOOL_DIR=$FB_DATA/h1/spool-plain SBXCAT_DEPLOYMENT_ID=fb-$FB_BED-plain
	export DOCKER_HOST SANDBOXD_WORKSPACE_ROOT SBXCAT_SPOOL_DIR SBXCAT_DEPLOYMENT_ID
	exec nsenter --net="$(fb_netns 1)" "$S" -C "$CAT" serve \
		--listen "tcp:$(fb_ip 1):8081" --listen "unix:$FB_RUN/h1/plain.sock"
) </dev/null >"$FB_RUN/h1/plain.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
PLAIN=$!
n=0
until curl -sf --max-time 2 --unix-socket "$FB_RUN/h1/plain.sock" http://x/healthz >/dev/null 2>&1; do
	[ $n -lt 100 ] || { echo "bench-fleet: the serve without a fleet did not start:"; tail -5 "$FB_RUN/h1/plain.log"; exit 1; }
	sleep 0.1
	n=$((n + 1))
done
drive open "$N" "$(fb_url 1)" "http://$(fb_ip 1):8081"
# shellcheck disable=SC2046
set -- $(pct open.a 1000) $(pct open.b 1000)
printf '    an open through serve (h1, its engine, alone in the fleet), %s runs each: with SBXCAT_FLEET p50 %s ms p95 %s ms p99 %s ms; without p50 %s ms p95 %s ms p99 %s ms: difference p50 %s ms, p95 %s ms; with / without, the median of the pairs'"'"' ratios %s, the ratio of the medians %s\n' \
	"$N" "$1" "$2" "$3" "$4" "$5" "$6" "$(awk -v a="$1" -v b="$4" 'BEGIN { printf "%.1f", a - b }')" \
	"$(awk -v a="$2" -v b="$5" 'BEGIN { printf "%.1f", a - b }')" "$(pairs open.a open.b)" "$(ratio "$1" "$4")"
kill -TERM "$PLAIN" && wait "$PLAIN"
PLAIN=""

# (3) the burst: BURST opens 8 at a time through h1 alone in the fleet,
# then through h1 and h2 (4 clients each) with both in it; three rounds
# of each, alternated (h2's serve stopped and started between).
# engines SERVES: the pids of the bed's engines (dockerd, containerd, the
# shims; the registry, idle), all that runs with the bed's paths but the
# serves.
engines() {
	for e_p in $(fb_pids "$FB_RUN/"); do
		case " $1 " in *" $e_p "*) ;; *) echo "$e_p" ;; esac
	done
}
for side in one two one two one two; do
	if [ $side = two ]; then
		fleetbed_serve 2 || { echo "bench-fleet: no serve on h2"; exit 1; }
		urls="$(fb_url 1) $(fb_url 2)"
	else
		fb_serve_pid 2 >/dev/null && fleetbed_serve_stop 2
		urls=$(fb_url 1)
	fi
	o1=$(opens 1) o2=$(opens 2)
	pg=$(q "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
	srv="$(fb_serve_pid 1) $(fb_serve_pid 2)"
	eng=$(engines "$srv")
	# shellcheck disable=SC2086
	c0="$(cpu_now) $(cpus $eng) $(cpus $srv) $(cpus $pg)"
	# shellcheck disable=SC2086
	drive burst $side "$BURST" 8 1 $urls
	# shellcheck disable=SC2086
	c1="$(cpu_now) $(cpus $eng) $(cpus $srv) $(cpus $pg)"
	cat burst.rate.$side >>rate.$side
	cat burst.open.$side >>open.$side
	errs=$(sed -n 's/^# errors //p' drive.out)
	[ "$errs" = 0 ] || { echo "bench-fleet: $errs opens of the burst failed:"; sed -n 's/^# error /    /p' drive.out; exit 1; }
	echo "$c0 $c1 $(($(opens 1) - o1)) $(($(opens 2) - o2))" >>cpu.$side
done
r1=$(pct rate.one 1 | cut -d' ' -f1) r2=$(pct rate.two 1 | cut -d' ' -f1)
r=$(ratio "$r2" "$r1")
verdict "$r" ">=" 1.6
printf '(3) a burst of %s opens (each then closed with purge), 8 at a time, 3 rounds each: through h1 alone %s opens/s (rounds %s); through h1 and h2 %s opens/s (rounds %s): ratio %s (target >= 1.6) %s\n' \
	"$BURST" "$r1" "$(tr '\n' ' ' <rate.one | awk '{ for (i = 1; i <= NF; i++) printf "%s%.1f", (i > 1 ? ", " : ""), $i }')" \
	"$r2" "$(tr '\n' ' ' <rate.two | awk '{ for (i = 1; i <= NF; i++) printf "%s%.1f", (i > 1 ? ", " : ""), $i }')" "$r" "$v"
# Where the time goes: the machine's CPUs (all of its work, the other
# users' too) and what the bed's long-lived processes used of them; the
# rest is the engines' short-lived runc and whatever else runs here.
for side in one two; do
	# shellcheck disable=SC2046
	set -- $(pct open.$side 1000)
	awk -v s=$side -v p50="$1" -v p95="$2" -v hz="$(getconf CLK_TCK)" -v ncpu="$(nproc)" '
		{ busy += $6 - $1; tot += $7 - $2; e += $8 - $3; sv += $9 - $4; pg += $10 - $5
		  h1 += $11; h2 += $12; n++ }
		END { b = busy / hz / n
		printf "    %s: an open p50 %s ms p95 %s ms; a round: the machine'"'"'s %d CPUs %.0f%% busy (%.1f CPU s), of which the engines (dockerd, containerd, shims) %.1f, the serves %.1f, PostgreSQL'"'"'s backends %.1f: the bed'"'"'s long-lived processes %.0f%%; opens on h1 %d, on h2 %d\n",
			s == "one" ? "one host" : "two hosts", p50, p95, ncpu, 100 * busy / tot, b,
			e / n, sv / n, pg / n, 100 * (e + sv + pg) / n / b, h1, h2 }' cpu.$side
done
# The opens' parallelism: the rate times a lone open's time (2b's, without
# the fleet): 8 at once on one engine buy what over one at a time?
printf '    a lone open took %s ms (above, without the fleet): 8 at a time, the opens went %s times as fast as one at a time through one host, %s times through two\n' \
	"$(pct open.b 1000 | cut -d' ' -f1)" "$(awk -v r="$r1" -v t="$(pct open.b 1 | cut -d' ' -f1)" 'BEGIN { printf "%.2f", r * t }')" \
	"$(awk -v r="$r2" -v t="$(pct open.b 1 | cut -d' ' -f1)" 'BEGIN { printf "%.2f", r * t }')"
busy1=$(awk '{ b += $6 - $1; t += $7 - $2 } END { printf "%.0f", 100 * b / t }' cpu.one)
[ "$busy1" -ge 90 ] &&
	echo "    the one host's burst kept the machine's CPUs ${busy1}% busy already: a second host on the same CPUs and the same PostgreSQL has no CPU to add a rate with, so this ratio says what this machine has left, not what a second machine adds"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $missed

#!/bin/sh
# bench/bench-compose.sh - `sbxcat compose --check` on the three shipped
# compose files beside `docker-compose -f FILE config -q` on the same
# files: the drift check runs in every `make check`, and the validation a
# user would otherwise reach for is compose's own.  Both are timed over
# many runs (wall time, mean per run over all three files) and shown as a
# ratio.  Target (issue 3): at least 20 times faster.
set -u
S=${SBXCAT:?SBXCAT must name the built binary}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
FILES="compose/docker-compose.yml compose/docker-compose-dev.yml compose/docker-compose-prod.yml"
SBX_RUNS=${SBX_RUNS:-300}
DC_RUNS=${DC_RUNS:-5}
DC=$(command -v docker-compose) || {
	echo "bench-compose: docker-compose not found (apt-get install docker-compose); nothing to compare with"
	exit 1
}
# Stand-ins for the secrets the dev and prod files insist on.
export SANDBOXD_IMAGE=example/sandboxd:bench SANDBOXD_API_TOKEN=stand-in POSTGRES_PASSWORD=stand-in
unset SBXCAT_CATALOG

# Both must succeed on these files, or the timing means nothing.
"$S" compose --check $FILES >/dev/null || { echo "bench-compose: sbxcat compose --check fails"; exit 1; }
for f in $FILES; do "$DC" -f "$f" config -q || { echo "bench-compose: docker-compose config -q $f fails"; exit 1; }; done

now() { date +%s%N; }

start=$(now)
i=0
while [ $i -lt "$SBX_RUNS" ]; do
	"$S" compose --check $FILES >/dev/null
	i=$((i + 1))
done
sbx_ns=$(( ($(now) - start) / SBX_RUNS ))

start=$(now)
i=0
while [ $i -lt "$DC_RUNS" ]; do
	for f in $FILES; do "$DC" -f "$f" config -q; done
	i=$((i + 1))
done
dc_ns=$(( ($(now) - start) / DC_RUNS ))

awk -v s="$sbx_ns" -v d="$dc_ns" -v sr="$SBX_RUNS" -v dr="$DC_RUNS" 'BEGIN {
	printf "sbxcat compose --check (3 files)      %9.2f ms   (mean of %d runs)\n", s / 1e6, sr
	printf "docker-compose config -q (3 files)    %9.2f ms   (mean of %d runs)\n", d / 1e6, dr
	printf "ratio: sbxcat is %.0fx faster; target 20x: %s\n", d / s, (d / s >= 20) ? "met" : "MISSED"
	exit (d / s >= 20) ? 0 : 1
}'

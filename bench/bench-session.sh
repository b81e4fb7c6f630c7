#!/bin/sh
# bench/bench-session.sh - sbxcat sessions beside the docker CLI (issue 8),
# on the test-bed engine, medians and p95 of 20 runs each:
#  (a) `sbxcat session open` (create, start, workspace) against `docker run
#      -d` with the same flags and the same kind of bind mount (target: ratio
#      of medians <= 1.0);
#  (b) `sbxcat exec KEY -- true` against `docker exec CONTAINER true`
#      (target <= 1.0);
#  (c) open to first command (open, then exec true), beside the medians the
#      hosted sandboxes publish (Daytona 0.11 s, E2B 0.44 s);
#  (d) 16 sessions opened at once: sessions per second.
#  (e) `session open --disk-quota 1g --disk-inodes 65536` (a disk budget:
#      mkfs.ext4 of a sparse image, a loop device, a mount) against the same
#      open without one and against `docker run -d` of (a) (target: ratio of
#      medians against docker run -d <= 1.2: a budget may cost the open a
#      little; skipped when no loop device or mkfs.ext4 can be had).
# sbxcat talks to the engine directly; the CLI goes through its own client,
# so both ratios should be at or below 1.  A missed target exits 1.
# Everything made here (containers labelled with this run's deployment id,
# workspaces, the runtime's image) is removed at the end.
# first is called indirectly (time1):
# shellcheck disable=SC2317
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/sessionbench.sh
. "$here/sessionbench.sh"
sb_bench_init bench-session bs
SANDBOXD_MAX_SESSIONS=200 SANDBOXD_MAX_SESSIONS_PER_TENANT=200
export SANDBOXD_MAX_SESSIONS SANDBOXD_MAX_SESSIONS_PER_TENANT
IMG=$(sx tag "$RT")

N=${SBXCAT_BENCH_RUNS:-20}	# runs of each measurement
verdict() {
	if awk -v v="$1" -v t="$3" "BEGIN { exit !(v $2 t) }"; then v=ok; else v=MISSED; missed=1; fi
}
missed=0
# compare LABEL NAME FILE DOCKER-NAME DOCKER-FILE: both medians and p95s,
# and the ratio of the medians against the target, 1.0.
compare() {
	c_r=$(ratio "$(med "$3")" "$(med "$5")")
	verdict "$c_r" "<=" 1.0
	printf '%s: %s median %s s p95 %s s; %s median %s s p95 %s s: ratio %s (target <= 1.0) %s\n' \
		"$1" "$2" "$(med "$3")" "$(p95 "$3")" "$4" "$(med "$5")" "$(p95 "$5")" "$c_r" "$v"
}

echo "engine: $DOCKER_HOST; client for comparison: $DOCKER"

# (a) open vs docker run -d with the same flags and a bind mount of a
# workspace made the same way (root's directory, the uid's workspace).
i=1
while [ $i -le "$N" ]; do
	time1 a.sbx sx session open --runtime "$RT" --tenant bench --scope run --subject "a-$i"
	ws=$T/docker/d-$i/workspace
	t0=$(now)
	if ! { mkdir -p "$ws" && chmod 700 "$T/docker/d-$i" && chown 10001:10001 "$ws"; }; then
		echo "bench-session: cannot make $ws"; exit 1
	fi
	tb_docker run -d --name "bs-$sfx-$i" --init --user 10001:10001 --cap-drop ALL \
		--security-opt no-new-privileges --pids-limit 512 --cpus 2 \
		--memory 1g --memory-swap 1g --tmpfs /tmp:size=64m --network none \
		--label "io.sbxcat.deployment=$DEP" --label io.sbxcat.tenant=bench \
		--label "io.sbxcat.key=d-$i" --label "io.sbxcat.runtime=$RT" \
		--label "io.sbxcat.created=$(date +%s)" \
		--mount "type=bind,source=$ws,target=$ws" -w "$ws" \
		--entrypoint /bin/sleep "$IMG" 2147483647 >/dev/null ||
		{ echo "bench-session: docker run failed"; exit 1; }
	t1=$(now)
	elapsed "$t0" "$t1" >>a.docker
	echo >>a.docker
	i=$((i + 1))
done
compare "(a) open" "sbxcat session open" a.sbx "docker run -d" a.docker

# (b) exec true in one session vs docker exec true in one container.
K=$(sx session open --runtime "$RT" --tenant bench --scope run --subject a-1)
i=1
while [ $i -le "$N" ]; do
	time1 b.sbx sx exec "$K" -- true
	time1 b.docker tb_docker exec "bs-$sfx-1" true
	i=$((i + 1))
done
compare "(b) exec" "sbxcat exec -- true" b.sbx "docker exec true" b.docker

# (c) open to first command: a new session, then exec true in it.
first() {
	f_k=$(sx session open --runtime "$RT" --tenant bench --scope run --subject "c-$1") &&
		sx exec "$f_k" -- true
}
i=1
while [ $i -le "$N" ]; do
	time1 c.sbx first $i
	i=$((i + 1))
done
printf '(c) open to first command: sbxcat median %s s p95 %s s (published medians: Daytona 0.11 s, E2B 0.44 s)\n' \
	"$(med c.sbx)" "$(p95 c.sbx)"

# (d) 16 sessions opened at once, 20 times.
i=1
while [ $i -le "$N" ]; do
	t0=$(now)
	j=1
	while [ $j -le 16 ]; do
		sx session open --runtime "$RT" --tenant "burst-$i" --scope run --subject "d-$j" \
			>"d.$i.$j.out" 2>"d.$i.$j.err" &
		j=$((j + 1))
	done
	wait
	t1=$(now)
	[ "$(cat d."$i".*.out | wc -l | tr -d ' ')" = 16 ] ||
		{ echo "bench-session: a burst of 16 opens did not give 16 sessions:"; cat d."$i".*.err; exit 1; }
	awk -v e="$(elapsed "$t0" "$t1")" 'BEGIN { printf "%.4f\n", 16 / e }' >>d.rate
	# Close this burst's sessions so every burst starts from the same count.
	# shellcheck disable=SC2046
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.tenant=burst-$i" \
		--filter "label=io.sbxcat.deployment=$DEP") >/dev/null 2>&1
	i=$((i + 1))
done
# A rate's bad tail is its low end: the 5th percentile, not the 95th.
printf '(d) 16 opens at once: median %s sessions/s, 5th percentile %s sessions/s\n' "$(med d.rate)" \
	"$(sort -n d.rate | awk '{ v[NR] = $1 } END { r = int(0.05 * NR); if (r < 1) r = 1; printf "%.3f", v[r] }')"

# (e) an open with a disk budget, each purged after (so nothing mounted
# is left for the end's removal of the root).
if command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /sbin/mkfs.ext4 ]; then
	i=1
	while [ $i -le "$N" ]; do
		time1 e.sbx sx session open --runtime "$RT" --tenant bench --scope run \
			--subject "e-$i" --disk-quota 1g --disk-inodes 65536
		e_k=$(cat "$T/last.out")
		sx session close "$e_k" --purge >/dev/null 2>&1 ||
			{ echo "bench-session: close --purge of a budgeted session failed"; exit 1; }
		i=$((i + 1))
	done
	e_r=$(ratio "$(med e.sbx)" "$(med a.docker)")
	verdict "$e_r" "<=" 1.2
	printf '(e) open with a 1g budget: median %s s p95 %s s; without one %s s (ratio %s); docker run -d %s s: ratio %s (target <= 1.2) %s\n' \
		"$(med e.sbx)" "$(p95 e.sbx)" "$(med a.sbx)" "$(ratio "$(med e.sbx)" "$(med a.sbx)")" \
		"$(med a.docker)" "$e_r" "$v"
else
	echo "(e) open with a budget: skipped (no mkfs.ext4: apt-get install e2fsprogs)"
fi
exit $missed

#!/bin/sh
# bench/bench-prewarm.sh - sbxcat prewarm beside the docker CLI, as ratios
# (issue 4), on the test-bed engine:
#  (a) a no-op prewarm of 20 cached runtimes against a shell loop of
#      `docker build` of the same Dockerfiles with a warm layer cache
#      (target <= 0.05): presence is one inspect per tag, no build at all;
#  (b) a cold prewarm of 4 runtimes whose setup sleeps 2 s, -j 4 against
#      -j 1 (target <= 0.4);
#  (c) sbxcat's peak RSS during a build that prints 50 MB (target under
#      10 MiB), beside the docker CLI's for the same build.
# Needs GNU time (/usr/bin/time, Debian package `time`).  Every image made
# here is removed at the end.
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$here/..}
S=${SBXCAT:-$here/../sbxcat}
. "$srcdir/tests/testbed.sh"
testbed_docker || { echo "bench-prewarm: no Docker engine (reason above)"; exit 1; }
testbed_base_image || { echo "bench-prewarm: no base image (reason above)"; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-prewarm: needs GNU time (apt-get install time)"; exit 1; }

sfx=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
T=$(mktemp -d)
cleanup() {
	testbed_remove_mine "$sfx"
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 1
unset SBXCAT_ENGINE_TRACE
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# verdict VALUE OP TARGET: sets $v to ok or MISSED (and $missed); no
# subshell, so that a miss reaches the exit status.
verdict() {
	if awk -v v="$1" -v t="$3" "BEGIN { exit !(v $2 t) }"; then v=ok; else v=MISSED; missed=1; fi
}
missed=0

# catalogue FILE COUNT PREFIX SETUP: COUNT runtimes named PREFIX-i-SFX.
catalogue() {
	{
		echo "["
		i=1
		while [ $i -le "$2" ]; do
			[ $i -gt 1 ] && echo ","
			printf '{"alias": "%s-%d-%s", "description": "bench", "base_image": "sbxcat-test/busybox:1", "setup_commands": ["%s"]}\n' \
				"$3" $i "$sfx" "$(echo "$4" | sed "s/@/$i/g")"
			i=$((i + 1))
		done
		echo "]"
	} >"$1"
}

echo "engine: $DOCKER_HOST; client for comparison: $DOCKER (DOCKER_BUILDKIT=0)"

# (a) no-op prewarm of 20 cached runtimes vs 20 warm docker builds.  The
# docker loop runs once untimed first: builds that ran at the same time
# can each make their own copy of a shared layer, and the legacy builder's
# cache then misses for some of them once; the timed loop must be all hits.
catalogue a.json 20 bpa "echo runtime @ $sfx"
"$S" -C a.json prewarm -j 4 >/dev/null 2>&1 || { echo "(a) the cold prewarm failed"; exit 1; }
mkdir -p ctx
dloop() {
	i=1
	while [ $i -le 20 ]; do
		tb_docker build -q -t "$("$S" -C a.json tag "bpa-$i-$sfx")" -f "ctx/Dockerfile.$i" ctx >/dev/null 2>&1 ||
			{ echo "(a) docker build $i failed"; exit 1; }
		i=$((i + 1))
	done
}
i=1
while [ $i -le 20 ]; do
	"$S" -C a.json dockerfile "bpa-$i-$sfx" >"ctx/Dockerfile.$i"
	i=$((i + 1))
done
dloop
idsa=$(tb_docker images -q --no-trunc "sbxcat/bpa-*-$sfx" | sort)
t0=$(now); dloop; t1=$(now)
loop=$(elapsed "$t0" "$t1")
[ "$(tb_docker images -q --no-trunc "sbxcat/bpa-*-$sfx" | sort)" = "$idsa" ] ||
	echo "(a) note: the timed docker loop was not all cache hits"
best=""
for run in 1 2 3; do
	t0=$(now); "$S" -C a.json prewarm >a.out 2>&1; rc=$?; t1=$(now)
	[ $rc -eq 0 ] && [ "$(grep -c ' cached ' a.out)" = 20 ] ||
		{ echo "(a) the no-op prewarm did not find all 20 cached"; cat a.out; exit 1; }
	t=$(elapsed "$t0" "$t1")
	[ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }' && best=$t
done
ra=$(ratio "$best" "$loop")
verdict "$ra" "<=" 0.05
printf '(a) no-op, 20 cached runtimes: sbxcat prewarm %s s (best of 3), docker build loop %s s: ratio %s (target <= 0.05) %s\n' \
	"$best" "$loop" "$ra" "$v"

# (b) cold: 4 runtimes that sleep 2 s, -j 4 vs -j 1 (fresh recipes each:
# every runtime's sleep is its own layer).  Beside it the docker CLI doing
# the same, 4 builds in a row vs 4 at once: the engine's own parallelism on
# this machine, which bounds any client's.
catalogue b1.json 4 bpb1 "sleep 2; echo one @ $sfx"
catalogue b4.json 4 bpb4 "sleep 2; echo four @ $sfx"
t0=$(now); "$S" -C b1.json prewarm -j 1 >b1.out 2>&1; rc1=$?; t1=$(now)
j1=$(elapsed "$t0" "$t1")
t0=$(now); "$S" -C b4.json prewarm -j 4 >b4.out 2>&1; rc4=$?; t1=$(now)
j4=$(elapsed "$t0" "$t1")
[ $rc1 -eq 0 ] && [ $rc4 -eq 0 ] && [ "$(cat b1.out b4.out | grep -c ' built ')" = 8 ] ||
	{ echo "(b) a cold prewarm did not build all 4"; cat b1.out b4.out; exit 1; }
rb=$(ratio "$j4" "$j1")
verdict "$rb" "<=" 0.4
catalogue d1.json 4 bpd1 "sleep 2; echo docker one @ $sfx"
catalogue d4.json 4 bpd4 "sleep 2; echo docker four @ $sfx"
i=1
while [ $i -le 4 ]; do
	"$S" -C d1.json dockerfile "bpd1-$i-$sfx" >"ctx/Dockerfile.d1.$i"
	"$S" -C d4.json dockerfile "bpd4-$i-$sfx" >"ctx/Dockerfile.d4.$i"
	i=$((i + 1))
done
t0=$(now)
for i in 1 2 3 4; do
	tb_docker build -q -t "$("$S" -C d1.json tag "bpd1-$i-$sfx")" -f "ctx/Dockerfile.d1.$i" ctx >/dev/null 2>&1
done
t1=$(now)
dj1=$(elapsed "$t0" "$t1")
t0=$(now)
for i in 1 2 3 4; do
	tb_docker build -q -t "$("$S" -C d4.json tag "bpd4-$i-$sfx")" -f "ctx/Dockerfile.d4.$i" ctx >/dev/null 2>&1 &
done
wait
t1=$(now)
dj4=$(elapsed "$t0" "$t1")
printf '(b) cold, 4 runtimes sleeping 2 s: sbxcat -j 4 %s s, -j 1 %s s: ratio %s (target <= 0.4) %s\n' \
	"$j4" "$j1" "$rb" "$v"
printf '    docker CLI, same builds: 4 at once %s s, 4 in a row %s s: ratio %s\n' \
	"$dj4" "$dj1" "$(ratio "$dj4" "$dj1")"

# (c) peak RSS while a build streams 50 MB of output (100-byte lines),
# beside the same recipe printing nothing: the difference is what the
# output costs; the rest is the shared libraries every libcurl + OpenSSL
# process maps here.
big="head -c 52428800 /dev/zero | tr '\\\\\\\\0' x | fold -w 99"
catalogue c.json 1 bpc "$big; echo big @ $sfx"
catalogue q.json 1 bpq "true; echo quiet @ $sfx"
catalogue c2.json 1 bpe "$big; echo big for docker @ $sfx"
"$S" -C c.json dockerfile "bpc-1-$sfx" | grep -q 'fold -w 99' || { echo "(c) bad recipe"; exit 1; }
t0=$(now)
/usr/bin/time -f %M -o c.rss "$S" -C c.json prewarm >c.out 2>&1 ||
	{ echo "(c) the 50 MB build failed"; cat c.out; exit 1; }
t1=$(now)
/usr/bin/time -f %M -o q.rss "$S" -C q.json prewarm >q.out 2>&1 ||
	{ echo "(c) the quiet build failed"; cat q.out; exit 1; }
"$S" -C c2.json dockerfile "bpe-1-$sfx" >ctx/Dockerfile.big
/usr/bin/time -f %M -o d.rss "$DOCKER" build -t "$("$S" -C c2.json tag "bpe-1-$sfx")" \
	-f ctx/Dockerfile.big ctx >/dev/null 2>&1 || { echo "(c) docker build of the 50 MB build failed"; exit 1; }
mib() { awk -v k="$(tail -n 1 "$1")" 'BEGIN { printf "%.1f", k / 1024 }'; }
verdict "$(mib c.rss)" "<" 10
printf '(c) peak RSS, a build printing 50 MB (%s s): sbxcat %s MiB (target < 10 MiB) %s\n' \
	"$(elapsed "$t0" "$t1")" "$(mib c.rss)" "$v"
printf '    the same build printing nothing: sbxcat %s MiB; docker build of the 50 MB build: %s MiB\n' \
	"$(mib q.rss)" "$(mib d.rss)"
exit $missed

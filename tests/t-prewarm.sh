#!/bin/sh
# t-prewarm.sh - sbxcat prewarm against the real engine: a first run
# builds, a second finds everything cached and sends no build at all, a
# changed env var rebuilds that runtime alone, a failing setup command
# fails its runtime and only it, image entries are cached or fail with the
# engine's message, superseded tags go unless a container uses them, and
# Ctrl-C cancels cleanly.
#
# Every alias carries this run's suffix, so tests sharing the engine never
# touch each other's images; everything made here is removed at the end.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}

testbed_docker || skip_all "no Docker engine could be reached or started (reason above)"
testbed_base_image || skip_all "no base image sbxcat-test/busybox:1 (reason above)"

sfx=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
A=tp-a-$sfx B=tp-b-$sfx C=tp-c-$sfx
D=tp-d-$sfx E=tp-e-$sfx F=tp-f-$sfx
Q=tp-q-$sfx Z=tp-z-$sfx
T=$(mktemp -d)
cleanup() {
	tb_docker rm -f "tp-ctr-$sfx" >/dev/null 2>&1
	# Every alias ends in $sfx; a failed build's cached step names it too.
	testbed_remove_mine "$sfx"
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 1
unset SBXCAT_DEPLOYMENT_ID SBXCAT_CATALOG SBXCAT_ENGINE_STALL SBXCAT_ENGINE_TIMEOUT
# Every request sbxcat sends, one line each: how "no build" is proven.
SBXCAT_ENGINE_TRACE=$T/trace; export SBXCAT_ENGINE_TRACE

# three BVAL CVAL: the three-runtime catalogue, with B's and C's env vars.
three() {
	cat >cat.json <<JSON
[
  {"alias": "$A", "description": "first", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo setting up $A"]},
  {"alias": "$B", "description": "second", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo setting up $B"], "env_vars": {"MODE": "$1"}},
  {"alias": "$C", "description": "third", "base_image": "sbxcat-test/busybox:1",
   "env_vars": {"MODE": "$2"}}
]
JSON
}
# pw [ARGS]: prewarm cat.json; status in $rc, report in out, log in err.
pw() {
	: >"$T/trace"
	"$S" -C cat.json prewarm "$@" >out 2>err
	rc=$?
}
result() { awk -v a="$1" '$1 == a { print $2 }' out; }
builds() { grep -c '^POST /v[0-9.]*/build' "$T/trace"; }
tag() { "$S" -C cat.json tag "$1"; }
present() { tb_docker image inspect "$1" >/dev/null 2>&1; }
ids() { for a in $A $B $C; do tb_docker image inspect -f '{{.Id}} {{.Created}}' "$(tag "$a")"; done; }

three one one
pw
is "$rc" 0 "first prewarm exits 0"
is "$(result "$A") $(result "$B") $(result "$C")" "built built built" "first prewarm builds all three"
is "$(builds)" 3 "first prewarm sends three builds"
present "$(tag "$A")" && present "$(tag "$B")" && present "$(tag "$C")"
ok $? "the three content tags exist in the engine"
is "$(tail -n 1 out)" "3 runtimes: 3 built" "the report ends with the counts"
grep -q "^$A: step [0-9]*/[0-9]* : RUN echo setting up $A\$" err
ok $? "without a terminal, progress is plain lines naming the step"
grep -q "$(printf '\033')" err; ok $((!$?)) "without a terminal, no escape sequences"
before=$(ids)

# Second run: nothing to do, and nothing sent that could build.
since=$(date +%s.%N)
pw
until=$(date +%s.%N)
is "$rc" 0 "second prewarm exits 0"
is "$(result "$A") $(result "$B") $(result "$C")" "cached cached cached" "second prewarm reports all cached"
is "$(builds)" 0 "second prewarm sends no build request"
is "$(grep -c '^POST\|^DELETE' "$T/trace")" 0 "second prewarm sends nothing but reads"
is "$(ids)" "$before" "image IDs and creation times are unchanged"
# The engine's own record agrees: no image event of ours in that window
# (a build would tag, and the first run's builds show the check works).
is "$(tb_docker events --since "$since" --until "$until" --filter type=image |
	grep -c "$sfx")" 0 "the engine logged no image event for the second run"
is "$(tb_docker events --since 0 --until "$since" --filter type=image --filter event=tag |
	grep -c "$sfx")" 6 "the engine logged the first run's three content tags and three claims"

# A changed env var: a new tag for that runtime, a build of it alone.
oldB=$(tag "$B")
three two one
pw
is "$rc" 0 "prewarm after an env change exits 0"
is "$(result "$A") $(result "$B") $(result "$C")" "cached built cached" "only the changed runtime is rebuilt"
is "$(builds)" 1 "exactly one build request"
grep -q "^POST /v[0-9.]*/build?t=sbxcat%2F$B%3A" "$T/trace"; ok $? "the build is of the changed runtime"
[ "$(tag "$B")" != "$oldB" ]; ok $? "the changed env var names a new tag"
present "$oldB"; ok $((!$?)) "the superseded tag is removed"
grep -q "^    removed superseded $oldB\$" out; ok $? "the report says the superseded tag was removed"
present "$(tag "$B")"; ok $? "the new tag is present"

# A superseded tag in use by a container is kept, until it is not.
oldC=$(tag "$C")
tb_docker create --name "tp-ctr-$sfx" --network none "$oldC" true >/dev/null
three two two
pw
is "$(result "$C")" "built" "C is rebuilt after its env change"
present "$oldC"; ok $? "a superseded tag a container uses is kept"
grep -q "^    kept superseded $oldC: used by container 'tp-ctr-$sfx'\$" out
ok $? "the report says which container keeps it"
tb_docker rm "tp-ctr-$sfx" >/dev/null
pw
is "$(result "$C")" "cached" "C is cached on the next run"
present "$oldC"; ok $((!$?)) "once unused, the superseded tag is removed by the next run"
is "$(builds)" 0 "removing it needs no build"

# Choosing runtimes, and usage errors.
pw "$A"
is "$(grep -c ' cached ' out)" 1 "prewarm ALIAS does that runtime only"
pw "nope-$sfx"
is "$rc" 1 "an unknown alias exits 1"
pw -j 0
is "$rc" 2 "-j 0 is a usage error"
pw -j 2 --force "$A"
is "$rc:$(result "$A")" "0:built" "--force builds a present tag again"
is "$(builds)" 1 "--force sends the build"
grep -q '^POST /v[0-9.]*/build?.*&nocache=1' "$T/trace"; ok $? "--force builds without the layer cache"

# A failing setup command fails its runtime, and only it.
cat >cat.json <<JSON
[
  {"alias": "$D", "description": "ok", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo building $D"]},
  {"alias": "$F", "description": "fails", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo first step fine $sfx", "echo about to fail; echo on stderr >&2; exit 7"]},
  {"alias": "$E", "description": "ok too", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo building $E"]}
]
JSON
pw -j 3
is "$rc" 1 "a failed build exits 1"
is "$(result "$D") $(result "$F") $(result "$E")" "built failed built" "the failure stops neither of the others"
grep -q "^    The command '/bin/sh -c echo about to fail; echo on stderr >&2; exit 7' returned a non-zero code: 7\$" out
ok $? "the failure carries the engine's message"
grep -q "^    at step [0-9]*/[0-9]* : RUN echo about to fail" out; ok $? "the report names the failing step"
grep -q "^    | about to fail\$" out && grep -q "^    | on stderr\$" out
ok $? "the report shows the failing step's output, stderr included"
grep -q "first step fine" out; ok $((!$?)) "earlier steps' output is left out"
present "$(tag "$F")"; ok $((!$?)) "a failed build leaves no tag"
is "$(tail -n 1 out)" "3 runtimes: 2 built, 1 failed" "the report counts the failure"
pw --json
is "$rc" 1 "--json: a failed build still exits 1"
is "$(wc -c <err)" 0 "--json: nothing on stderr"
is "$(jq -r '.[] | .alias + " " + .result' out | tr '\n' ' ')" "$D cached $F failed $E cached " \
	"--json: one object per runtime, in catalogue order"
is "$(jq -r ".[] | select(.alias == \"$F\") | .error" out)" \
	"The command '/bin/sh -c echo about to fail; echo on stderr >&2; exit 7' returned a non-zero code: 7" \
	"--json: the error message"
# stdout and stderr reach the engine by separate pipes: either order.
is "$(jq -c ".[] | select(.alias == \"$F\") | .output | sort" out)" '["about to fail","on stderr"]' \
	"--json: the failing step's output"

# Image entries: present is cached; absent and unpullable fails with the
# engine's message (the registry is a closed port on loopback).
cat >cat.json <<JSON
[
  {"alias": "$Z", "description": "ready", "image": "sbxcat-test/busybox:1"},
  {"alias": "$Q", "description": "nowhere", "image": "127.0.0.1:9/sbxcat-test/absent-$sfx:1"}
]
JSON
pw
is "$rc" 1 "an unpullable image exits 1"
is "$(result "$Z") $(result "$Q")" "cached failed" "a local image is cached, an unpullable one failed"
grep -q "^    cannot pull '127.0.0.1:9/sbxcat-test/absent-$sfx:1': the Docker engine answered HTTP 500: .*connection refused" out
ok $? "the failure carries the engine's message"
is "$(grep -c '^POST /v[0-9.]*/images/create?fromImage=127.0.0.1%3A9%2Fsbxcat-test%2Fabsent' "$T/trace")" 1 \
	"the absent image is pulled, the present one is not"

# Ctrl-C: the build in flight is abandoned, the report says what finished.
cat >cat.json <<JSON
[
  {"alias": "$A", "description": "quick", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo setting up $A"]},
  {"alias": "$Q", "description": "slow", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo slow-$sfx; sleep 60"]}
]
JSON
: >"$T/trace"
# A background job of a script starts with SIGINT ignored, and sbxcat keeps
# a signal ignored on entry ignored (as nohup expects): restore the default
# the way a terminal's foreground job has it.
perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' "$S" -C cat.json prewarm -j 2 >out 2>err &
pid=$!
n=0
while ! grep -q "^$Q: step [0-9]*/[0-9]* : RUN echo slow" err && [ $n -lt 200 ]; do sleep 0.1; n=$((n + 1)); done
sleep 1
start=$(date +%s)
kill -INT $pid
wait $pid
rc=$?
took=$(( $(date +%s) - start ))
is "$rc" 130 "Ctrl-C exits 130"
[ "$took" -le 3 ]; ok $? "Ctrl-C ends it promptly (${took} s)"
is "$(result "$A") $(result "$Q")" "cached cancelled" "the report says what finished and what was cancelled"
grep -q "^    cancelled at step [0-9]*/[0-9]*$" out; ok $? "the report says where the build was cancelled"
present "$(tag "$Q")"; ok $((!$?)) "the cancelled build left no tag"
n=0
while tb_docker ps -a --no-trunc --format '{{.Command}}' | grep -q "slow-$sfx" && [ $n -lt 50 ]; do
	sleep 0.2; n=$((n + 1))
done
tb_docker ps -a --no-trunc --format '{{.Command}}' | grep -q "slow-$sfx"
ok $((!$?)) "the engine removed the cancelled build's container"

# On a terminal: a live display that redraws in place.
if command -v script >/dev/null; then
	cat >cat.json <<JSON
[{"alias": "$Z", "description": "ready", "image": "sbxcat-test/busybox:1"}]
JSON
	script -qec "'$S' -C cat.json prewarm" /dev/null >tty.out 2>&1
	grep -q "$(printf '\033\\[K')" tty.out; ok $? "on a terminal, lines are redrawn in place"
	grep -q "$Z *cached" tty.out; ok $? "on a terminal, the report follows the display"
else
	skip "no script(1) for a terminal" "the live display (2 tests)"
fi
done_testing

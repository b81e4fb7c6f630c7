#!/bin/sh
# t-exec-features.sh - issue 20's exec features against the real engine
# (docs/sessions.md, "An exec's environment, directory, deadline and id"):
# -e NAME=VALUE reaches the command and nothing else (never the audit's
# rows, never our own command line as ps sees it); -w DIR beneath the
# workspace and nowhere else; fractional --timeout; --run-id and --stop
# from another process, idempotent.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
sb_init t-exec-features tf

open_s acme run xf-main
K=$key
[ -n "$K" ] || bail_out "session open failed: $(err)"
sbx session show "$K" --json
WS=$(jq -r .workspace "$T/out")
SECRET=s3cr3t-$sfx
# The path asked for (SBXCAT_EXEC_PATH; t-exec*-engine.sh) is the one taken.
[ "${SBXCAT_EXEC_PATH:-auto}" = engine ] && want=engine || want=fast
is "$(sb_exec_path "$K")" "$want" "commands start on the $want path (SBXCAT_EXEC_PATH=${SBXCAT_EXEC_PATH:-auto})"

# -- -e NAME=VALUE
sbx exec "$K" -e A=one -e EMPTY= -e "U=é x
y" -- sh -c 'printf "%s|%s|%s|%s" "$A" "${EMPTY-unset}" "$U" "$SBX_T"'
is "$rc:$(out)" "0:one||é x
y|tv-$sfx" "-e values reach the command exactly, beside the runtime's own"
sbx exec "$K" -e SBX_T=mine -- sh -c 'printf %s "$SBX_T"'
is "$rc:$(out)" "0:mine" "-e overrides the runtime's variable of that name"
sbx exec "$K" -- sh -c 'printf %s "${A-unset}"'
is "$rc:$(out)" "0:unset" "an -e of one exec is not seen by the next"
sbx exec "$K" -c 'printf %s "$B"' -e B=shell
is "$rc:$(out)" "0:shell" "-e with -c STRING"

for bad in "1X=v" "A-B=v" "=v" "NOEQUALS" "A B=v"; do
	sbx exec "$K" -e "$bad" -- true
	is "$rc" 2 "-e '$bad' is refused as a usage error"
done
grep -q "environment" "$T/err"
ok $? "the refusal says it is the environment" || diag "$(err)"
sbx exec "$K" -e "A=$SECRET" -e "A=$SECRET" -- true
is "$rc" 2 "a name given twice is refused"
grep -q "'A' is given twice" "$T/err" && ! grep -q "$SECRET" "$T/err"
ok $? "the refusal names the name and never the value" || diag "$(err)"
big=$(head -c 40000 /dev/zero | tr '\0' x)
sbx exec "$K" -e "BIG=$big" -- true
is "$rc" 2 "a value over 32 KiB is refused"
! grep -q xxxxxxxxxxxxxxxx "$T/err"
ok $? "the refusal does not quote the value" || diag "$(head -c 300 "$T/err")"
sbx exec "$K" -e "$(printf 'BAD=\377\376')" -- true
is "$rc" 2 "a value that is not UTF-8 is refused"
i=0 many=""
while [ $i -lt 129 ]; do many="$many -e V$i=x" i=$((i + 1)); done
# shellcheck disable=SC2086
sbx exec "$K" $many -- true
is "$rc" 2 "129 -e are refused (at most 128)"

# The value never in a row, nor in our own command line while it runs.
# (Compared by its digest: the command itself is a row's target.)
want=$(printf %s "$SECRET" | md5sum)
sbx exec "$K" -e "S=$SECRET" -- sh -c 'printf %s "$S" | md5sum'
is "$rc:$(out)" "0:$want" "the secret reaches the command"
"$S" -C "$CAT" exec "$K" -e "S=$SECRET" -- sleep 3 >/dev/null 2>&1 &
xp=$!
sb_exec_started "$K"
# (A pattern that is not the value itself: grep's own command line.)
seen=$(grep -la -- "s3cr3[t]-$sfx" /proc/[0-9]*/cmdline 2>/dev/null | tr '\n' ' ')
is "$seen" "" "no process's command line shows the value while it runs (sbxcat's, its deadline watcher's)"
for p in $seen; do diag "$p: $(tr '\0' ' ' <"$p") ($(cat "${p%cmdline}comm"))"; done
wait $xp
is "$?" 0 "that exec ends well"
if grep -raq -- "$SECRET" "$T/spool" 2>/dev/null; then r=1; else r=0; fi
[ -d "$T/spool" ] && [ -n "$(find "$T/spool" -type f)" ] || r=2
is "$r" 0 "the audit's spool holds rows and none holds the value"

# -- -w DIR
mkdir -p "$WS/sub/deeper" && chown -R 10001:10001 "$WS/sub" && : >"$WS/afile" || bail_out "cannot make the test's directories"
ln -s / "$WS/toroot"
ln -s sub "$WS/tosub"
sbx exec "$K" -w sub -- pwd
is "$rc:$(out)" "0:/workspace/sub" "-w sub: the command runs there (the container's path, under /workspace)"
sbx exec "$K" -w /workspace/sub/deeper -- pwd
is "$rc:$(out)" "0:/workspace/sub/deeper" "-w with the workspace's absolute path in the container"
sbx exec "$K" -w sub/../sub -- pwd
is "$rc:$(out)" "2:" "-w with a '..' is refused, as every workspace path with one is"
sbx exec "$K" -w tosub -- pwd
is "$rc" 0 "-w through a symlink that stays inside the workspace"
sbx exec "$K" -w . -- pwd
is "$rc:$(out)" "0:/workspace" "-w . is the workspace"
for bad in /etc / ../.. "$WS/.." toroot afile nosuch "$ROOT" "$WS" "$WS/sub" /workspace/.. /workspacex; do
	sbx exec "$K" -w "$bad" -- pwd
	is "$rc:$(out)" "2:" "-w '$bad' is refused (status 2) and runs nothing"
done
sbx exec "$K" -w /etc -- pwd
grep -q "working directory" "$T/err"
ok $? "the refusal says it is the working directory" || diag "$(err)"

# -- bytes the engine's API cannot carry (JSON is text): refused, never a crash
sbx exec "$K" -- printf "$(printf 'a\377')"
is "$rc" 2 "an argument that is not UTF-8 is a usage error (not an abort)"
grep -q "argument 2 of the command is not valid UTF-8" "$T/err"
ok $? "... naming the argument" || diag "$(err)"
sbx exec "$K" -c "$(printf 'echo \377')"
is "$rc" 2 "a shell string that is not UTF-8 is a usage error"
mkdir "$WS/$(printf 'd\377')"
sbx exec "$K" -w "$(printf 'd\377')" -- pwd
is "$rc" 2 "a working directory that is not UTF-8 is a usage error"

# -- fractional deadlines
t0=$(now)
sbx exec "$K" --timeout 0.5 -- sleep 5
t1=$(now)
is "$rc" 124 "--timeout 0.5 stops sleep 5 with 124"
lt "$(elapsed "$t0" "$t1")" 3
ok $? "within 3 s (took $(elapsed "$t0" "$t1") s)"
grep -q "timed out after 0.5 s" "$T/err"
ok $? "it says 'timed out after 0.5 s'" || diag "$(err)"
sbx exec "$K" --timeout .2 -- sleep 5
is "$rc" 124 "--timeout .2"
sbx exec "$K" --timeout 2.5 -- true
is "$rc" 0 "--timeout 2.5 with a quick command"
for bad in 0 0.0 -1 1e3 nan inf abc "" 1.2.3 0x10 604801 " 1"; do
	sbx exec "$K" --timeout "$bad" -- true
	is "$rc" 2 "--timeout '$bad' is a usage error"
done

# -- --run-id and --stop
t0=$(now)
"$S" -C "$CAT" exec "$K" --run-id job-1 -- sleep 30 >/dev/null 2>"$T/job.err" &
jp=$!
sb_exec_started "$K"
sbx exec "$K" --run-id job-1 -- true
is "$rc" 125 "a second exec with a run id in flight is refused"
grep -q "running already" "$T/err"
ok $? "it says the run is running already" || diag "$(err)"
sbx exec "$K" --stop job-1
is "$rc:$(out)" "0:run job-1 of session $K stopped" "--stop from another process stops it"
wait $jp
jrc=$?
t1=$(now)
is "$jrc" 137 "the stopped exec ends with 137"
lt "$(elapsed "$t0" "$t1")" 15
ok $? "at once, not at a deadline (took $(elapsed "$t0" "$t1") s)"
grep -q "stopped by its run id" "$T/job.err"
ok $? "the stopped exec says why" || diag "$(cat "$T/job.err")"
sbx exec "$K" -- ps -o args
! grep -q "sleep 30" "$T/out"
ok $? "nothing of it is left running in the container" || diag "$(out)"
sbx exec "$K" --stop job-1
is "$rc:$(out)" "0:run job-1 of session $K is not running (it ended, or never ran)" "a stop again is 0 (idempotent)"
sbx exec "$K" --stop never-was
is "$rc" 0 "a stop of an id that never ran is 0"
grep -raq "stopped by its run id" "$T/spool"
ok $? "the run's row says it was stopped by its id"
sbx exec "$K" --run-id job-1 -- true
is "$rc" 0 "the id can be used again once it ended"
for bad in ../x "a/b" "" "$(head -c 65 /dev/zero | tr '\0' a)"; do
	sbx exec "$K" --run-id "$bad" -- true
	r1=$rc
	sbx exec "$K" --stop "$bad"
	is "$r1:$rc" "2:2" "run id '$bad' is refused by exec and by --stop"
done
sbx exec "$K" --stop job-1 -- true
is "$rc" 2 "--stop with a command is a usage error"
sbx exec "$K" --stop job-1 --tenant other
is "$rc" 1 "--stop of another tenant's session is refused"
ls "$ROOT/$K/runs" >"$T/runs" 2>/dev/null
is "$(cat "$T/runs")" "" "no run's file is left behind"
[ "$(stat -c %a:%u "$ROOT/$K/runs")" = 700:0 ]
ok $? "the runs' directory is root's, 0700"

# A stale run file (its exec killed) does not block the id.
"$S" -C "$CAT" exec "$K" --run-id job-2 -- sleep 30 >/dev/null 2>&1 &
jp=$!
sb_exec_started "$K"
kill -KILL $jp
wait $jp 2>/dev/null
sbx exec "$K" --stop job-2
is "$rc" 0 "a stop of a run whose exec was killed: 0"
sbx exec "$K" --run-id job-2 -- true
is "$rc" 0 "its id is free again"

sb_done

#!/bin/sh
# t-prewarm-io.sh - what prewarm prints of a build, and when it prints it:
# a RUN's C1 controls, raw CSI bytes, ESC and OSC sequences and bidi
# overrides reach neither the progress lines, the report nor the JSON; a
# RUN printing "Successfully built deadbeef" changes nothing; a stderr that
# never drains holds up the display only, not the builds; SIGTERM ends a
# prewarm promptly with no worker left behind.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}

testbed_docker || skip_all "no Docker engine could be reached or started (reason above)"
testbed_base_image || skip_all "no base image sbxcat-test/busybox:1 (reason above)"
command -v python3 >/dev/null || skip_all "no python3 to look for control bytes"

sfx=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
T=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	testbed_remove_mine "$sfx"
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 1
unset SBXCAT_CATALOG SBXCAT_ENGINE_STALL SBXCAT_ENGINE_TIMEOUT SBXCAT_ENGINE_TRACE SBXCAT_DEPLOYMENT_ID
present() { tb_docker image inspect "$1" >/dev/null 2>&1; }
# controls FILE: the unsafe sequences in FILE, named; empty when clean.
controls() {
	python3 - "$1" <<'PY'
import re, sys
data = open(sys.argv[1], "rb").read()
found = set()
for name, pat in [("ESC", rb"\x1b"), ("raw CSI 0x9b", rb"(?<![\xc2])\x9b"),
                  ("C1", rb"\xc2[\x80-\x9f]"), ("bidi", rb"\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]"),
                  ("C0", rb"[\x00-\x08\x0b-\x1f\x7f]")]:
    if re.search(pat, data):
        found.add(name)
print(" ".join(sorted(found)))
PY
}

# A RUN that prints every kind of hostile byte, then fails; one that
# pretends to be the builder.  Octal escapes: the catalogue stays ASCII.
H=tpio-h-$sfx P=tpio-p-$sfx
cat >cat.json <<JSON
[
  {"alias": "$H", "description": "hostile", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["printf 'c1 \\\\302\\\\233 31mred \\\\302\\\\205 nel\\\\n'; printf 'raw \\\\233 2J \\\\233 1m bold\\\\n'; printf 'esc \\\\033[2J\\\\033[H osc \\\\033]0;title\\\\007 \\\\033]8;;http://x\\\\033\\\\\\\\ link\\\\n'; printf 'bidi \\\\342\\\\200\\\\256 evil \\\\342\\\\201\\\\246 iso\\\\n' >&2; printf 'dcs \\\\302\\\\220 x \\\\302\\\\234 y $sfx\\\\n'; exit 3"]},
  {"alias": "$P", "description": "spoofs", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo Successfully built deadbeef; echo Successfully tagged sbxcat/x:deadbeef"]}
]
JSON
"$S" -C cat.json check >/dev/null 2>&1; ok $? "the hostile catalogue is a valid catalogue"
"$S" -C cat.json prewarm >out 2>err
rc=$?
is "$rc" 1 "the hostile build fails, the spoofing one does not"
is "$(awk -v a="$H" '$1 == a {print $2}' out) $(awk -v a="$P" '$1 == a {print $2}' out)" "failed built" \
	"the results"
# U+009B is a CSI: " 31m" is its sequence.  A raw 0x9B is not UTF-8: the
# engine itself sends it as U+FFFD.
grep -q "^    | c1 red  nel\$" out && grep -q "^    | esc  osc   link\$" out &&
	grep -q "^    | bidi  evil  iso\$" out && grep -q "^    | dcs  y $sfx\$" out
ok $? "the report keeps the hostile step's text around the controls"
is "$(controls out)" "" "the report holds no control sequence (ESC, C1, raw CSI, bidi, C0)"
is "$(controls err)" "" "the progress lines hold no control sequence"
"$S" -C cat.json prewarm --json >out.json 2>err
jq -r '.[] | (.error // ""), (.step // ""), (.output[])' out.json >json.txt
is "$(controls json.txt)" "" "the JSON report's strings hold no control sequence"
grep -q deadbeef out; ok $((!$?)) "a RUN printing 'Successfully built deadbeef' leaves no trace in the report"
present "$("$S" -C cat.json tag "$P")"; ok $? "the spoofing runtime's real content tag is present"
present deadbeef; ok $((!$?)) "and no image 'deadbeef' was made or named"

# A stderr that never drains: a FIFO whose 64 KiB buffer is full, held
# open by this shell and never read.  Every write to stderr blocks; the
# builds must still finish.
cat >cat.json <<JSON
[
  {"alias": "tpio-1-$sfx", "description": "one", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo one $sfx"]},
  {"alias": "tpio-2-$sfx", "description": "two", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo two $sfx"]},
  {"alias": "tpio-3-$sfx", "description": "three", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo three $sfx"]}
]
JSON
mkfifo fifo
exec 3<>fifo
dd if=/dev/zero bs=4096 count=16 >&3 2>/dev/null
"$S" -C cat.json prewarm -j 3 >out 2>fifo &
pw=$!
pids="$pids $pw"
n=0 all=1
while [ $n -lt 600 ]; do
	all=0
	for a in tpio-1-$sfx tpio-2-$sfx tpio-3-$sfx; do
		present "$("$S" -C cat.json tag "$a")" || all=1
	done
	[ $all = 0 ] && break
	sleep 0.1; n=$((n + 1))
done
ok $all "with stderr blocked, all three builds finish (in $((n / 10)) s)"
kill -0 $pw 2>/dev/null; ok $? "meanwhile prewarm itself waits on its stderr"
cat <&3 >/dev/null &
drain=$!
pids="$pids $drain"
wait $pw
is "$?" 0 "once stderr drains, prewarm finishes and exits 0"
is "$(tail -n 1 out)" "3 runtimes: 3 built" "and reports the three builds"
kill $drain 2>/dev/null
exec 3>&-

# SIGTERM during a build: prompt, with every worker joined (the process
# ends only after prewarm_run joined them), and then death by SIGTERM, so a
# parent sees the signal, not an exit status that looks like it.
cat >cat.json <<JSON
[
  {"alias": "tpio-s-$sfx", "description": "slow", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo slow-$sfx; sleep 60"]},
  {"alias": "tpio-t-$sfx", "description": "slow too", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo slow-$sfx; sleep 61"]}
]
JSON
rm -f st st.pid
spawn_status st "$S" -C cat.json prewarm -j 2 >out 2>err &
parent=$!
pw=$(spawn_pid st)
n=0
while [ "$(grep -c ': step [0-9]*/[0-9]* : RUN echo slow' err)" -lt 2 ] && [ $n -lt 300 ]; do
	sleep 0.1; n=$((n + 1))
done
sleep 1
start=$(date +%s)
kill -TERM "$pw"
wait $parent
took=$(( $(date +%s) - start ))
is "$(cat st)" "signal 15" "SIGTERM: prewarm stops, then dies by SIGTERM"
[ "$took" -le 3 ]; ok $? "SIGTERM ends it promptly, both workers stopped (${took} s)"
is "$(awk '$2 == "cancelled"' out | wc -l)" 2 "the report says both builds were cancelled"
done_testing

#!/bin/sh
# t-exec-escape.sh - what a sandbox tries against the fast path (issue 33,
# "the sandbox cannot interfere with it"; docs/sessions.md), every command
# run through it (SBXCAT_EXEC_PATH=fast) unless said otherwise:
#   - see the mechanism: no process of sbxcat's is in the container's PID
#     namespace, none is named in its /proc;
#   - kill or signal it: `kill -9 -1` and a kill of every pid it sees end
#     the container's own processes and nothing else (a host process of
#     the sandbox's very uid lives on; so do the service and the next exec);
#   - ptrace it: the sandbox can attach only to its own init, and then the
#     fast path cannot read the init's seccomp filters: a service that read
#     them before keeps them (fast, confined); one new to the container
#     runs the exec through the engine, confined, counted in its /metrics
#     (sbxcat_exec_fallback_total{reason="seccomp"}); sbxcat exec under
#     auto runs confined, under fast it is refused and nothing runs; once
#     let go, the fast path is back;
#   - connect to it: the container's /proc/net/unix holds no socket of the
#     service's or the engine's;
#   - replace it: the command's mounts are its init's, nothing of sbxcat's
#     is mounted but the workspace;
#   - setuid: a set-user-ID root binary planted in the workspace and one
#     of its own run with its uid (no_new_privs);
#   - leave its cgroup: refused, and the host sees it in its sbxcat-exec-
#     group;
#   - outlive the deadline (setsid, double fork, env -i, re-parenting, left
#     behind after the command exits): from the host, nothing is left;
#   - read a host descriptor: the command has 0, 1 and 2, pipes or
#     /dev/null, seen from inside and from the host.
# And the service with SBXCAT_EXEC_PATH=engine counts path="engine" only.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
command -v curl >/dev/null || skip_all "curl is missing"
sb_init t-exec-escape tx
unset SBXCAT_EXEC_PATH SBXCAT_WARM_POOL SANDBOXD_WORKSPACE_QUOTA SANDBOXD_WORKSPACE_INODES
SANDBOXD_PAUSE_AFTER=0
export SANDBOXD_PAUSE_AFTER
SPID=""
SPID2=""
trap 'sb_serve_stop; [ -n "$SPID2" ] && kill -KILL "$SPID2" 2>/dev/null; sb_cleanup' EXIT

# The sandbox's tools: a static binary (busybox has no ptrace tool).
HELPER=$T/t-exec-ptrace
if ! ${CC:-cc} -static -O2 -o "$HELPER" "$srcdir/tests/t-exec-ptrace.c" 2>"$T/cc.err"; then
	diag "$(cat "$T/cc.err")"
	HELPER=""
fi

# The service, its exec path auto (the default), on a socket of its own.
TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SOCK=$T/serve.sock
SANDBOXD_TOKEN=$TOKEN "$S" -C "$CAT" serve --listen "unix:$SOCK" 2>>"$T/log" &
SPID=$!
sb_serve_wait "$SOCK"
SID=esc-$sfx
sb_wire POST /sessions "{\"session_id\": \"$SID\", \"runtime\": \"$RA\"}"
K=$(sb_wire_key "$SID")
[ "$st" = 200 ] && [ -n "$K" ] || bail_out "the service opens no session ($st): $(cat "$T/w" "$T/log")"
WS=$(ws "$K")
IPID=$(insp "$K" '{{.State.Pid}}')
# metric SERIES: its value in the service's /metrics (0 when absent).
metric() {
	curl -s --unix-socket "$SOCK" -H "X-Sandbox-Token: $TOKEN" http://x/metrics |
		awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }'
}
FAST='sbxcat_exec_started_total{path="fast"}'
ENGINE='sbxcat_exec_started_total{path="engine"}'
SECCOMP='sbxcat_exec_fallback_total{reason="seccomp"}'
# wexec COMMAND: through the service; the output in $T/w, $st.
wexec() { sb_wire POST "/sessions/$SID/exec" "$(jq -nc --arg c "$1" '{command: $c, timeout_seconds: 30}')"; }
# fx ARGS...: sbxcat exec on the fast path.
fx() { SBXCAT_EXEC_PATH=fast sbx exec "$K" "$@" </dev/null; }
KEYS='^(Uid|CapEff|NoNewPrivs|Seccomp):'
CONFINED='Uid:	10001	10001	10001	10001
CapEff:	0000000000000000
NoNewPrivs:	1
Seccomp:	2'

f0=$(metric "$FAST") e0=$(metric "$ENGINE")
wexec 'echo hello'
is "$st:$(jq -c '[.output, .exit_code]' "$T/w")" '200:["hello\n",0]' "the service runs a command"
is "$(metric "$FAST"):$(metric "$ENGINE")" "$((f0 + 1)):$e0" "... on the fast path (auto), counted path=\"fast\""
fx -c "grep -E '$KEYS' /proc/self/status"
is "$rc:$(out)" "0:$CONFINED" "a command on the fast path: uid 10001, no capabilities, no_new_privs, seccomp"

# -- See the mechanism.
cns=$(readlink "/proc/$IPID/ns/pid")
seen=""
for p in $(pgrep -x sbxcat) $(pgrep -x sbxcat-deadline) $SPID; do
	[ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$cns" ] && seen="$seen $p"
done
is "${seen:-none}" none "no process of sbxcat's is in the container's PID namespace"
fx -c 'for p in /proc/[0-9]*; do echo "${p#/proc/} $(cat $p/comm) $(tr "\0" " " <$p/cmdline)"; done'
grep -i sbxcat "$T/out" >"$T/seen"
is "$rc:$(cat "$T/seen")" "0:" "... nor named in the container's /proc ($(wc -l <"$T/out" | tr -d ' ') processes)"

d=5$(($(printf '%d' "0x$sfx") % 900000 + 100000))

# -- Connect to it.
sino() { for f in /proc/"$1"/fd/*; do readlink "$f"; done 2>/dev/null | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p'; }
fx -- cat /proc/net/unix
theirs=""
for i in $(sino "$SPID") $(sino "$(pgrep -xo dockerd)"); do
	awk -v i="$i" '$7 == i { f = 1 } END { exit !f }' "$T/out" && theirs="$theirs $i"
done
is "$rc:${theirs:-none}" "0:none" "no socket of the service's or the engine's is in the container's /proc/net/unix"
is "$(awk 'NR > 1 && $8 != "" { print $8 }' "$T/out")" "" "... nor any socket with a path"

# -- Replace it.
fx -c 'cat /proc/self/mountinfo; echo ==; cat /proc/1/mountinfo'
awk '/^==$/ { exit } { print }' "$T/out" >"$T/m.self"
awk 'f { print } /^==$/ { f = 1 }' "$T/out" >"$T/m.init"
cmp -s "$T/m.self" "$T/m.init"; ok $? "the command's mounts are its init's, line for line ($(wc -l <"$T/m.self" | tr -d ' ') mounts)"
is "$(awk -v t="$T" -v b="$(dirname "$(readlink -f "$S")")" 'index($4, t) == 1 || index($4, b) == 1 { print $5 }' "$T/m.self")" \
	/workspace "... and of the test's and sbxcat's directories, only the workspace is mounted"

# -- setuid.
if [ -n "$HELPER" ]; then
	cp "$HELPER" "$WS/suid-root" && chown 0:0 "$WS/suid-root" && chmod 4755 "$WS/suid-root"
	cp "$HELPER" "$WS/tep" && chmod 755 "$WS/tep"
	fx -- ./suid-root ids
	is "$rc:$(out)" "0:uid 10001 10001 10001 gid 10001 10001 10001" "a set-user-ID root binary runs with the sandbox's ids"
	fx -c 'cp tep mine && chmod u+s mine && ./mine ids; chown 0 mine 2>/dev/null && echo chowned; grep NoNewPrivs /proc/self/status'
	is "$(out)" "uid 10001 10001 10001 gid 10001 10001 10001
NoNewPrivs:	1" "chmod u+s of its own: its own ids; chown to root refused; NoNewPrivs 1"
else
	skip "no static C build here" "setuid"
fi

# -- Leave its cgroup, and outlive the deadline.
nsl() { pgrep -cf "^sleep ${d}$1\$"; }
settle() {
	st_n=0
	while [ "$(nsl "$1")" != "$2" ] && [ $st_n -lt 100 ]; do sleep 0.2; st_n=$((st_n + 1)); done
	nsl "$1"
}
# (Once the exec's group holds the command: on the engine's path the claim
# comes a few milliseconds after the start, procs.h.)
fx --timeout 5 -c "n=0; while ! grep -q sbxcat-exec- /proc/\$\$/cgroup && [ \$n -lt 50 ]; do sleep 0.1; n=\$((n + 1)); done
sleep ${d}2 >/dev/null 2>&1 & p=\$!
for f in \$(find /sys/fs/cgroup -name cgroup.procs 2>/dev/null); do
	echo \$p 2>/dev/null >\"\$f\" && echo \"moved by \$f\"; echo \$\$ 2>/dev/null >\"\$f\" && echo \"moved by \$f\"
done; sed -n 's/^0:://p' /proc/\$p/cgroup"
case $(out) in *"moved by"*) r=1 ;; /sbxcat-exec-*) r=0 ;; *) r=1 ;; esac
ok $r "writing its pids to every cgroup.procs it sees: refused ($(out | tr '\n' ' '))"
hp=$(pgrep -f "^sleep ${d}2\$")
case $(sed -n 's/^0:://p' "/proc/$hp/cgroup" 2>/dev/null) in
*/sbxcat-exec-[0-9]*-[0-9]*-*) r=0 ;; *) r=1 ;; esac
ok $r "... the host sees what it left in its sbxcat-exec- group ($(sed -n 's/^0:://p' "/proc/$hp/cgroup" 2>/dev/null))"
fx --timeout 2 -c "sleep ${d}3 & setsid sleep ${d}4 & (trap '' HUP; exec sleep ${d}5) >/dev/null 2>&1 &
(sleep ${d}6 &); (env -i setsid sleep ${d}7 >/dev/null 2>&1 &); exec env -i SBXCAT_EXEC=y sleep ${d}8"
is "$rc" 124 "a command past its deadline: 124"
is "$(settle "[3-8]" 0)" 0 "... its children, setsid, HUP-proof, double-forked, scrubbed and re-parented processes are all gone from the host"
is "$(settle 2 0)" 0 "... and what the earlier command left behind is gone at its deadline"

# -- Read a host descriptor.
# The shell's, listed by a child of its (a glob, $(...) or redirection in
# the shell itself would add a descriptor of its own to the list).
fx -c 'sh -c "ls -l /proc/\$PPID/fd"; true'
awk '$(NF - 1) == "->" { print $(NF - 2), $NF }' "$T/out" >"$T/fds"
mv "$T/fds" "$T/out"
is "$(awk '{ print $1 }' "$T/out" | tr '\n' ' ')" "0 1 2 " "the command has descriptors 0, 1 and 2 only"
is "$(awk '$2 !~ /^pipe:\[[0-9]+\]$/ && $2 != "/dev/null"' "$T/out")" "" "... each a pipe or /dev/null ($(awk '{ print $2 }' "$T/out" | tr '\n' ' '))"
SBXCAT_EXEC_PATH=fast bounded exec "$K" -i --timeout 20 -- sleep "${d}9" </dev/null >/dev/null 2>&1 &
xp=$!
n=0
while [ -z "$(pgrep -f "^sleep ${d}9\$")" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
hp=$(pgrep -f "^sleep ${d}9\$")
hfd=$(for f in /proc/"$hp"/fd/*; do echo "${f##*/} $(readlink "$f")"; done 2>/dev/null)
kill "$hp" 2>/dev/null
wait "$xp"
is "$(printf '%s\n' "$hfd" | awk '{ print $1 }' | tr '\n' ' ')" "0 1 2 " "from the host too: 0, 1 and 2 only"
is "$(printf '%s\n' "$hfd" | awk '$2 !~ /^pipe:\[[0-9]+\]$/ && $2 != "/dev/null"')" "" "... each a pipe or /dev/null"

# -- ptrace: the sandbox attaches to its own init.
if [ -n "$HELPER" ]; then
	SBXCAT_EXEC_PATH=fast bounded exec "$K" --timeout 40 -- ./tep seize 1 "${d}" </dev/null >"$T/tr.out" 2>"$T/tr.err" &
	trp=$!
	n=0
	while ! grep -q . "$T/tr.out" && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	is "$(cat "$T/tr.out")" attached "the sandbox ptraces its own init"
	# A service that read the filters before keeps them (per container and
	# process, by the init's start time: docs/sessions.md): fast, confined.
	f0=$(metric "$FAST")
	wexec "grep -E '$KEYS' /proc/self/status"
	is "$st:$(jq -r .exit_code "$T/w"):$(jq -r .output "$T/w")" "200:0:$CONFINED" "auto, a service that knew the filters: the exec runs, confined"
	is "$(metric "$FAST")" "$((f0 + 1))" "... on the fast path, with the filters it kept"
	# A service that meets the container now cannot read them: the engine.
	SOCK1=$SOCK SPID1=$SPID SOCK=$T/serve2.sock
	SANDBOXD_TOKEN=$TOKEN "$S" -C "$CAT" serve --listen "unix:$SOCK" 2>>"$T/log" &
	SPID2=$!
	sb_serve_wait "$SOCK"
	wexec "grep -E '$KEYS' /proc/self/status"
	is "$st:$(jq -r .exit_code "$T/w"):$(jq -r .output "$T/w")" "200:0:$CONFINED" "auto, a service new to the container: the exec still runs, confined"
	is "$(metric "$SECCOMP"):$(metric "$ENGINE"):$(metric "$FAST")" "1:1:0" \
		"... through the engine: /metrics counts a fallback for seccomp and path=\"engine\""
	SBXCAT_EXEC_PATH=auto sbx exec "$K" -c "grep -E '$KEYS' /proc/self/status"
	is "$rc:$(out)" "0:$CONFINED" "sbxcat exec, auto: runs, confined"
	rm -f "$WS/ran-fast"
	fx -c 'touch ran-fast'
	[ "$rc" != 0 ] && [ ! -e "$WS/ran-fast" ]; ok $? "fast: refused, nothing ran ($rc: $(err))"
	kill "$(pgrep -f "^\./tep seize 1 ${d}\$")" 2>/dev/null
	wait "$trp"
	wexec 'echo back'
	is "$st:$(jq -r .output "$T/w" | tr -d '\n'):$(metric "$FAST")" "200:back:1" "once let go, the fast path is back (the new service's first fast exec)"
	kill "$SPID2" && wait "$SPID2"
	SPID2=""
	SOCK=$SOCK1 SPID=$SPID1
else
	skip "no static C build here" "ptrace"
fi

# -- Kill or signal it.
setpriv --reuid=10001 --regid=10001 --clear-groups sleep "${d}0" &
hpid=$!
fx -c "sleep ${d}1 & sleep 0.2; kill -9 -1; for p in /proc/[0-9]*; do p=\${p#/proc/}; [ \$p = \$\$ ] || kill -9 \$p 2>/dev/null; done; sleep 0.2; echo survived"
# The container's main process is one of the sandbox's own: killed, the
# container stops (as it does on the engine's path) and the command with it.
diag "kill -9 -1: exit $rc, $(out) $(err)"
is "$(pgrep -cf "^sleep ${d}1\$")" 0 "kill -9 -1 and a kill of every pid it sees: its own processes are killed"
kill -0 "$hpid" 2>/dev/null; ok $? "... a host process of the sandbox's uid (10001) lives on"
kill -0 "$SPID" 2>/dev/null; ok $? "... the service lives on"
wexec 'echo again'
is "$st:$(jq -c '[.output, .exit_code]' "$T/w")" '200:["again\n",0]' "... and the next exec through the service runs"
kill "$hpid" 2>/dev/null
wait "$hpid" 2>/dev/null

# -- The service with SBXCAT_EXEC_PATH=engine: the engine's path alone.
sb_serve_stop
SBXCAT_EXEC_PATH=engine SANDBOXD_TOKEN=$TOKEN "$S" -C "$CAT" serve --listen "unix:$SOCK" 2>>"$T/log" &
SPID=$!
sb_serve_wait "$SOCK"
for i in 1 2 3; do wexec "echo e$i"; done
is "$st:$(jq -r .output "$T/w")" "200:e3" "SBXCAT_EXEC_PATH=engine: the service runs commands"
is "$(metric "$ENGINE"):$(metric "$FAST")" "3:0" "... counted path=\"engine\" only"
is "$(curl -s --unix-socket "$SOCK" -H "X-Sandbox-Token: $TOKEN" http://x/metrics | awk '/^sbxcat_exec_fallback_total/ { s += $2 } END { print s + 0 }')" 0 \
	"... and no fallback"
sb_serve_stop

sb_done

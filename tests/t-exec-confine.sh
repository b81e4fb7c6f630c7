#!/bin/sh
# t-exec-confine.sh - the fast path confines a command exactly as the
# engine's exec does (issue 33, "Confinement identical to the engine's
# exec, proved"; docs/sessions.md).  On every kind of container sbxcat
# makes (a built runtime, a ready-made image, one claimed from the warm
# pool, one with a disk budget, one on a network) the same probe runs
# through the engine's exec (SBXCAT_EXEC_PATH=engine) and through the fast
# path (SBXCAT_EXEC_PATH=fast), and every field is compared: the ids,
# groups and capability sets, no_new_privs and seccomp from
# /proc/self/status, the LSM label, every namespace (and that they are the
# container's init's), the cgroup (an sbxcat-exec- group under the
# container's, on both), the rlimits, the environment (with -e), the
# working directory (with and without -w), the umask, oom_score_adj, the
# session, process group, parent and terminal; and the seccomp filters
# themselves, read from the host with tests/t-seccomp-dump: the fast
# path's are the container init's byte for byte, and decide every input
# tried as the engine's exec's do (whose bytes differ from one exec to the
# next: runc has libseccomp build them anew each time).  That the two paths really differ is
# checked too: an engine exec's process is a child of the engine's shim,
# a fast one's is not, and the engine keeps no exec record for it.
#
# A difference fails its line and shows both values: the fast path is to
# be fixed, never this test.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
DUMP=$PWD/tests/t-seccomp-dump
[ -x "$DUMP" ] || skip_all "tests/t-seccomp-dump is not built"
sb_init t-exec-confine tc
unset SBXCAT_EXEC_PATH SBXCAT_WARM_POOL SANDBOXD_WORKSPACE_QUOTA SANDBOXD_WORKSPACE_INODES
SANDBOXD_PAUSE_AFTER=0
export SANDBOXD_PAUSE_AFTER

# A budget's mounts and loop devices: only those of files below $T.
PATH=$PATH:/usr/sbin:/sbin
mine_mounts() { awk -v t="$T/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo; }
mine_loops() {
	for b in /sys/block/loop*/loop/backing_file; do
		[ -r "$b" ] || continue
		case "$(cat "$b" 2>/dev/null)" in
		"$T"/*) d=${b%/loop/backing_file}; echo "/dev/${d##*/}" ;;
		esac
	done
}
confine_cleanup() {
	# shellcheck disable=SC2046
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP") >/dev/null 2>&1
	for m in $(mine_mounts | sort -r); do umount -l "$m" 2>/dev/null; done
	for l in $(mine_loops); do losetup -d "$l" 2>/dev/null; done
	sb_cleanup
}
trap confine_cleanup EXIT

# The probe: one "FIELD VALUE" line each (a field of several lines repeats
# its name), about the probe's shell itself ($$), once the exec's cgroup
# has claimed it (the engine's exec is moved there a few milliseconds
# after it starts: procs.h).  The descriptors are listed by the shell's
# own glob, not by a command substitution's child: that child can list its
# parent between the pipe's making and the parent's closing of its write
# end (a descriptor 4 seen 1 time in 120 under load, on either path).
# shellcheck disable=SC2016
probe='n=0
while ! grep -q sbxcat-exec- /proc/$$/cgroup && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
for f in Uid Gid Groups CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp Seccomp_filters; do
	v=$(sed -n "s/^$f:[[:space:]]*//p" /proc/$$/status | tr "\t" " ")
	echo "$f ${v:-absent}"
done
if a=$(cat /proc/$$/attr/current 2>/dev/null); then echo "attr $a"; else echo "attr unreadable"; fi
for n in /proc/$$/ns/*; do echo "ns.${n##*/} $(readlink "$n")"; done
for n in /proc/1/ns/*; do echo "initns.${n##*/} $(readlink "$n")"; done
sed "s/^/cgroup /" /proc/$$/cgroup
sed -n "s/^0::/initcg /p" /proc/1/cgroup
sed "s/^/limits /" /proc/$$/limits
env | sort | sed "s/^/env /"
echo "cwd $(readlink /proc/$$/cwd)"
echo "pwd $PWD"
echo "umask $(umask)"
echo "oom_score_adj $(cat /proc/$$/oom_score_adj)"
set -- $(cat /proc/$$/stat)
echo "ppid $4"
if [ "$5" = $$ ]; then echo "pgrp leader"; else echo "pgrp other"; fi
if [ "$6" = $$ ]; then echo "session leader"; else echo "session other"; fi
echo "tty $7"
fds=""; for f in /proc/$$/fd/*; do fds="$fds${f##*/} "; done
echo "fds $fds"'

# probe KEY PATH OUT [EXEC OPTIONS...]: the probe through PATH into OUT.
probe() {
	pr_k=$1 pr_p=$2 pr_o=$3
	shift 3
	SBXCAT_EXEC_PATH=$pr_p bounded exec "$pr_k" -e "SBX_CONF=v-$sfx" "$@" --timeout 30 \
		-- sh -c "$probe" </dev/null >"$pr_o" 2>"$pr_o.err"
	pr_rc=$?
	[ "$pr_rc" = 0 ] || diag "$pr_p probe: exit $pr_rc: $(cat "$pr_o.err")"
	return "$pr_rc"
}
# field FILE NAME: the value(s) of NAME in a probe's output.
field() { awk -v f="$2" '$1 == f { sub(/^[^ ]* ?/, ""); print }' "$1"; }
# normcg: the random part of an exec's group name (START-DEADLINE-RANDOM)
# made the same on both sides.
normcg() { sed 's/sbxcat-exec-[0-9]*-[0-9]*-[0-9a-zA-Z]*/sbxcat-exec-N/'; }

d=6$(($(printf '%d' "0x$sfx") % 900000 + 100000))
sl_n=0
# sleeper KEY PATH: an exec of `sleep UNIQUE` through PATH in the
# background, its host pid in $hp (empty when not seen within 10 s).
sleeper() {
	sl_n=$((sl_n + 1))
	sl_arg=$d$sl_n
	SBXCAT_EXEC_PATH=$2 bounded exec "$1" --timeout 20 -- sleep "$sl_arg" </dev/null >/dev/null 2>"$T/sleeper.err" &
	sl_pid=$!
	hp="" sl_i=0
	while [ -z "$hp" ] && [ $sl_i -lt 100 ]; do
		hp=$(pgrep -f "^sleep $sl_arg\$")
		[ -n "$hp" ] || sleep 0.1
		sl_i=$((sl_i + 1))
	done
}
sleeper_end() {
	[ -n "$hp" ] && kill "$hp" 2>/dev/null
	wait "$sl_pid" 2>/dev/null
}
# parent_comm PID: the host's name of PID's parent.
parent_comm() { ps -o comm= -p "$(ps -o ppid= -p "$1" | tr -d ' ')" 2>/dev/null; }

# compare KIND KEY: the whole comparison on session KEY.
compare() {
	c_kind=$1 c_k=$2
	if ! probe "$c_k" engine "$T/e.out" || ! probe "$c_k" fast "$T/f.out"; then
		ok 1 "$c_kind: the probe runs through both paths"
		return
	fi
	for f in Uid Gid Groups CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp Seccomp_filters \
		attr limits env cwd pwd umask oom_score_adj ppid pgrp session tty fds; do
		is "$(field "$T/f.out" $f)" "$(field "$T/e.out" $f)" "$c_kind: $f"
	done
	# Sanity on the engine's side: what the container gives (a field
	# compared equal but wrong on both would be a bug of the container's).
	is "$(field "$T/e.out" CapEff):$(field "$T/e.out" NoNewPrivs):$(field "$T/e.out" Seccomp)" \
		"0000000000000000:1:2" "$c_kind: the engine's exec has no capabilities, no_new_privs, a seccomp filter"
	case " $(field "$T/e.out" env | tr '\n' ' ') " in
	*" SBX_CONF=v-$sfx "*) r=0 ;; *) r=1 ;; esac
	ok $r "$c_kind: -e NAME=VALUE is in the environment"
	for n in $(awk '$1 ~ /^ns\./ { print substr($1, 4) }' "$T/e.out" "$T/f.out" | sort -u); do
		is "$(field "$T/f.out" "ns.$n")" "$(field "$T/e.out" "ns.$n")" "$c_kind: namespace $n"
	done
	# Every namespace the container's init has, the fast path's command
	# has (the *_for_children ones are what the init's children get).
	nsbad=""
	for n in $(awk '$1 ~ /^initns\./ { print substr($1, 8) }' "$T/f.out"); do
		[ "$(field "$T/f.out" "ns.$n")" = "$(field "$T/f.out" "initns.$n")" ] || nsbad="$nsbad $n"
	done
	is "${nsbad:-none}" none "$c_kind: the fast path's namespaces are the container's init's"
	is "$(field "$T/f.out" cgroup | normcg)" "$(field "$T/e.out" cgroup | normcg)" "$c_kind: cgroup (the exec's group's name normalised)"
	for p in e f; do
		cg=$(field "$T/$p.out" cgroup | sed -n 's/^0:://p')
		icg=$(field "$T/$p.out" initcg)
		case $cg in "${icg%/}"/sbxcat-exec-[0-9]*-[0-9]*-*) r=0 ;; *) r=1 ;; esac
		[ $p = e ] && pn=engine || pn=fast
		ok $r "$c_kind: the $pn path's command is in an sbxcat-exec- group under the container's ($cg; container: $icg)"
	done
	[ "$(field "$T/f.out" cgroup | sed -n 's/^0:://p')" != "$(field "$T/e.out" cgroup | sed -n 's/^0:://p')" ]
	ok $? "$c_kind: ... each exec a group of its own"

	# The working directory with -w (a directory made by the sandbox).
	SBXCAT_EXEC_PATH=engine bounded exec "$c_k" -- mkdir -p "sub-$sfx/d" </dev/null >/dev/null 2>&1
	for p in engine fast; do
		# shellcheck disable=SC2016
		SBXCAT_EXEC_PATH=$p bounded exec "$c_k" -w "sub-$sfx/d" -- \
			sh -c 'echo "$(readlink /proc/$$/cwd) $PWD"' </dev/null >"$T/$p.w" 2>&1
	done
	is "$(cat "$T/fast.w")" "$(cat "$T/engine.w")" "$c_kind: cwd with -w"
	is "$(cat "$T/engine.w")" "/workspace/sub-$sfx/d /workspace/sub-$sfx/d" "$c_kind: ... which is the directory under the work dir"

	# The seccomp filters, from the host, and which path ran the command.
	sleeper "$c_k" engine
	if [ -n "$hp" ]; then
		"$DUMP" "$hp" >"$T/e.bpf" 2>"$T/e.bpf.err"
		e_rc=$? e_par=$(parent_comm "$hp")
	else
		e_rc=no-process e_par=""
	fi
	sleeper_end
	sleeper "$c_k" fast
	if [ -n "$hp" ]; then
		"$DUMP" "$hp" >"$T/f.bpf" 2>"$T/f.bpf.err"
		f_rc=$? f_par=$(parent_comm "$hp")
	else
		f_rc=no-process f_par=""
	fi
	sleeper_end
	"$DUMP" "$(insp "$c_k" '{{.State.Pid}}')" >"$T/i.bpf" 2>"$T/i.bpf.err"
	i_rc=$?
	is "$e_rc:$f_rc:$i_rc" 0:0:0 "$c_kind: the filters of both commands and of the container's init read from the host" ||
		diag "$(cat "$T/e.bpf.err" "$T/f.bpf.err" "$T/i.bpf.err" "$T/sleeper.err" 2>/dev/null)"
	# The same decision for every input: runc has libseccomp make a new
	# program at each exec, laid out differently each time (two engine
	# execs of one container differ byte for byte), so bytes cannot be
	# compared across the paths.
	"$DUMP" --same "$T/e.bpf" "$T/f.bpf" >"$T/same.out" 2>"$T/same.err"
	ok $? "$c_kind: seccomp: the fast path's filters decide as the engine's ($(cat "$T/same.out" "$T/same.err"))" ||
		{ diag "engine: $(cut -c1-160 "$T/e.bpf")"; diag "fast:   $(cut -c1-160 "$T/f.bpf")"; }
	# The fast path installs the init's own programs: those, byte for byte.
	if cmp -s "$T/f.bpf" "$T/i.bpf"; then
		ok 0 "$c_kind: seccomp: the fast path's filters are the container init's, byte for byte ($(sed -n 's/^filter 0: \([0-9]*\) insns.*/\1/p' "$T/i.bpf") instructions)"
	else
		ok 1 "$c_kind: seccomp: the fast path's filters are the container init's, byte for byte"
		diag "init: $(cut -c1-160 "$T/i.bpf")"
		diag "fast: $(cut -c1-160 "$T/f.bpf")"
	fi
	grep -q '^filters: [1-9]' "$T/e.bpf"; ok $? "$c_kind: ... and there is one"
	case $e_par in containerd-shim*) r=0 ;; *) r=1 ;; esac
	ok $r "$c_kind: the engine's command is a child of the engine's shim ($e_par)"
	case $f_par in containerd-shim* | runc* | "") r=1 ;; *) r=0 ;; esac
	ok $r "$c_kind: the fast path's command is not the engine's ($f_par)"
	diag "$c_kind: compared at $(($(date +%s) - sb_t0)) s"
}

# -- A built runtime.
open_s acme run conf-built
[ -n "$key" ] || bail_out "session open failed: $(err)"
compare built "$key"
sbx session close "$key"

# -- A ready-made image.
open_s acme run conf-image --runtime "$RSMALL"
[ -n "$key" ] || bail_out "session open of the image runtime failed: $(err)"
compare image "$key"
sbx session close "$key"

# -- A networked runtime, on an internal network of the test's own.
NET=tc-net-$sfx
if tb_docker network create --internal "$NET" >/dev/null; then
	sb_networks=$NET
	SBXCAT_SESSION_NETWORK=$NET open_s acme run conf-net --runtime "$RNET"
	[ -n "$key" ] || bail_out "session open of the networked runtime failed: $(err)"
	is "$(insp "$key" '{{.HostConfig.NetworkMode}}')" "$NET" "networked: the container is on the test's network"
	compare networked "$key"
	sbx session close "$key"
else
	skip "docker network create failed" "networked: the comparison"
fi

# -- A container claimed from the warm pool.
"$S" -C "$CAT" prewarm "$RA" >/dev/null 2>&1
SBXCAT_WARM_POOL=$RA=1 sbx reap
is "$rc:$(grep '^pool:' "$T/out")" "0:pool: 1 made ready, 0 drained, 0 swept" "pooled: a warm pool of one made ready"
SBXCAT_WARM_POOL=$RA=1 open_s acme run conf-pool --json
is "$(jq -r .outcome "$T/out")" claimed "pooled: the session is claimed from the pool"
[ -n "$key" ] || bail_out "session open from the pool failed: $(err)"
compare pooled "$key"
sbx session close "$key"

# -- A disk budget: the workspace an ext4 image of its own.
if ! command -v mkfs.ext4 >/dev/null 2>&1 || [ ! -e /dev/loop-control ]; then
	skip "no mkfs.ext4 or no /dev/loop-control" "budgeted: the comparison"
else
	SANDBOXD_WORKSPACE_QUOTA=32m SANDBOXD_WORKSPACE_INODES=2048 open_s acme run conf-budget
	if [ -z "$key" ]; then
		skip "open with a disk budget failed here: $(err)" "budgeted: the comparison"
	else
		mountpoint -q "$(ws "$key")"; ok $? "budgeted: the workspace is a mount of its own"
		compare budgeted "$key"
		sbx session close "$key" --purge
	fi
fi

sb_done

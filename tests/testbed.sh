# tests/testbed.sh - a Docker engine and a base image for sbxcat's shell tests.
#
# Source it from a POSIX-sh test script:
#   . "$srcdir/tests/testbed.sh"
#   testbed_docker     || skip "no Docker engine"      # reason is on stderr
#   testbed_base_image || skip "no base image"
#   tb_docker run --rm --network none sbxcat-test/busybox:1 true
#
# testbed_docker exports DOCKER_HOST, DOCKER (the client) and DOCKER_BUILDKIT=0.
# It uses the first engine that answers among $DOCKER_HOST, the test-bed's own
# engine and the system one; failing those, as root, it starts the test-bed
# engine and leaves it running for the next tests (make -j runs several at
# once). testbed_stop stops that engine, and only that one. There is no
# registry here: the base image is made with `docker import`, never pulled,
# and kept in the engine's persistent data-root.
#
# Every engine started here (the test-bed, and t-engine's and t-testbed's
# own) runs in a network namespace of its own, bound at RUN/netns, with only
# its socket on the file system. A dockerd in the host's namespace would
# share the host's docker0 and iptables with a system engine; with --bridge
# none it even deletes that docker0 (Moby removes the default bridge when it
# is disabled), leaving the system engine unable to start a container on its
# default network. In its own namespace the engine keeps its defaults: a
# real bridge network (its own docker0, iptables rules and ip_forward), and
# no route off the machine, since the namespace has no uplink.
#
# Run as a script: sh tests/testbed.sh start|stop|status (see the end).
#
# SBXCAT_TESTBED_RUN and SBXCAT_TESTBED_DATA move the test-bed (absolute
# paths without blanks; defaults /run/sbxcat-testbed, /var/lib/sbxcat-testbed).

TB_RUN=${SBXCAT_TESTBED_RUN:-/run/sbxcat-testbed}
TB_DATA=${SBXCAT_TESTBED_DATA:-/var/lib/sbxcat-testbed}
TB_SOCK=$TB_RUN/docker.sock
TB_IMAGE=sbxcat-test/busybox:1
# dockerd, ip and umount live in sbin, which a user's PATH may lack.
TB_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

tb_say() { echo "testbed: $*" >&2; }
# Bounded: an engine that stops answering fails the call that waited on
# it, after 5 minutes, rather than holding the whole suite.
tb_docker() { timeout -k 10 "${TB_DOCKER_WAIT:-300}" "${DOCKER:-docker}" "$@"; }

# tb_client HOST: set $DOCKER to a client that can talk to the engine at HOST.
# /usr/bin/docker (docker.io 20.10) matches the engine's API 1.41; the Docker
# 28 CLI in /usr/local/bin also negotiates down to 1.41, so it is the fallback.
tb_client() {
	for tb_c in "${DOCKER:-}" /usr/bin/docker "$(command -v docker)"; do
		# shellcheck disable=SC2015
		[ -n "$tb_c" ] && [ -x "$tb_c" ] || continue
		DOCKER_HOST=$1 "$tb_c" version --format '{{.Server.APIVersion}}' \
			>/dev/null 2>&1 || continue
		DOCKER=$tb_c; export DOCKER; return 0
	done
	return 1
}

# tb_ping HOST: does the engine at HOST answer GET /version?
tb_ping() {
	case $1 in
	unix://*) curl -sf --max-time 5 --unix-socket "${1#unix://}" \
		http://localhost/version 2>/dev/null | grep -q '"ApiVersion"' ;;
	*) tb_client "$1" ;;	# tcp://, ssh://: let a client deal with TLS etc.
	esac
}

# tb_locked CMD...: run CMD in a subshell holding the test-bed lock, so tests
# started together neither start two engines nor import the image twice.
tb_locked() {
	tb_lock=$TB_RUN/lock
	mkdir -p "$TB_RUN" 2>/dev/null && [ -w "$TB_RUN" ] ||
		tb_lock=${TMPDIR:-/tmp}/sbxcat-testbed.lock	# not root: system engine
	( flock -w 120 9 || { tb_say "timed out waiting for $tb_lock"; exit 1; }
	  "$@" ) 9>>"$tb_lock"
}

# The engine at RUN keeps its socket, pid file, log, exec root and network
# namespace there (RUN/docker.sock, docker.pid, dockerd.log, exec/, netns),
# and its data root in DATA/docker. The tb_dockerd_* functions below are the
# one way the tests start and stop an engine.

# tb_dockerd_pid RUN: print the pid of the dockerd running at RUN. The
# command line check keeps a stale pidfile (/run is not a tmpfs here: it
# survives a reboot) or a reused pid from pointing at someone else's
# process; a zombie has an empty command line and so counts as exited.
tb_dockerd_pid() {
	tb_pid=$(cat "$1/docker.pid" 2>/dev/null) || return 1
	case $tb_pid in '' | *[!0-9]*) return 1 ;; esac
	tb_cmd=$({ tr '\0' ' ' <"/proc/$tb_pid/cmdline"; } 2>/dev/null) || return 1
	case $tb_cmd in "dockerd "*" --exec-root $1/exec "*) ;; *) return 1 ;; esac
	echo "$tb_pid"
}

# tb_netns_up FILE: make FILE a network namespace of its own (bound there
# by unshare, so it lives with no process in it) with its loopback up. A
# namespace already bound there is kept; after a reboot FILE is a plain file.
tb_netns_up() {
	if ! nsenter --net="$1" true 2>/dev/null; then
		{ : >>"$1" && unshare --net="$1" true; } || {
			tb_say "cannot make a network namespace at $1 (unshare --net)"
			return 1; }
	fi
	nsenter --net="$1" ip link set lo up
}

# tb_dockerd_start RUN DATA [DOCKERD-ARGS...]: start a dockerd in the network
# namespace RUN/netns (made here when missing), without waiting for it; its
# output goes to RUN/dockerd.log.
#  --config-file: ignore /etc/docker (a daemon.json meant for a system engine
#    could clash) and keep the trust key.json out of it.
#  No network flags: the engine's defaults (bridge, iptables, ip-forward)
#    act on its own namespace only.
tb_dockerd_start() {
	tb_r=$1 tb_d=$2
	shift 2
	mkdir -p "$tb_r/exec" "$tb_d/docker" || return 1
	PATH=$TB_PATH tb_netns_up "$tb_r/netns" || return 1
	# A killed engine stays a zombie for a while (init reaps lazily) and a
	# new one would trust its pidfile, wait 15 s and fail; same for its
	# containerd.
	tb_dockerd_pid "$tb_r" >/dev/null || rm -f "$tb_r/docker.pid"
	tb_cpid=$tb_r/exec/containerd/containerd.pid
	grep -qs containerd "/proc/$(cat "$tb_cpid" 2>/dev/null)/cmdline" ||
		rm -f "$tb_cpid"
	echo "{\"deprecated-key-path\": \"$tb_d/key.json\"}" >"$tb_r/daemon.json"
	# Double fork + setsid: the engine outlives the test, is reaped by init
	# rather than by the test's `wait`, and holds none of the test's fds:
	# not the harness's output pipe, and not fd 9, the lock. nsenter execs
	# dockerd, so the pid and command line are dockerd's own.
	( cd / && PATH=$TB_PATH exec setsid nohup nsenter --net="$tb_r/netns" \
		dockerd --data-root "$tb_d/docker" --exec-root "$tb_r/exec" \
		--pidfile "$tb_r/docker.pid" -H "unix://$tb_r/docker.sock" \
		--config-file "$tb_r/daemon.json" "$@" \
		</dev/null >"$tb_r/dockerd.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- & )
}

# tb_dockerd_wait RUN: wait up to 30 s for the engine at RUN to answer; on
# failure say so with the end of its log.
tb_dockerd_wait() {
	tb_n=0
	while [ $tb_n -lt 300 ]; do
		tb_ping "unix://$1/docker.sock" && return 0
		# Give up early when the engine died (the pidfile comes a bit late).
		[ $tb_n -gt 20 ] && ! tb_dockerd_pid "$1" >/dev/null && break
		sleep 0.1; tb_n=$((tb_n + 1))
	done
	tb_say "the engine did not answer on $1/docker.sock; $1/dockerd.log ends:"
	tail -n 5 "$1/dockerd.log" >&2
	return 1
}

# tb_mounts_under DIR...: the mount points at or below each DIR, deepest
# first. (mountinfo writes a blank in a path as \040: paths have none.)
tb_mounts_under() {
	for tb_dir in "$@"; do
		awk -v d="${tb_dir%/}/" '
			{ m = $5 "/"; if (substr(m, 1, length(d)) == d) print $5 }' \
			/proc/self/mountinfo
	done | sort -ru
}

# tb_dockerd_stop RUN DATA: SIGTERM the engine at RUN and wait for it (it
# gives running containers up to 15 s to stop), then unmount what it left
# (its data root is bind-mounted onto itself, and a killed engine leaves
# container mounts and namespace files) and remove its network namespace.
# Nothing is unmounted while a dockerd of RUN still runs.
tb_dockerd_stop() {
	if tb_pid=$(tb_dockerd_pid "$1"); then
		kill -CONT "$tb_pid" 2>/dev/null
		kill "$tb_pid" || return 1
		tb_n=0
		while tb_dockerd_pid "$1" >/dev/null; do
			[ $tb_n -ge 400 ] && { tb_say "dockerd $tb_pid did not exit in 40 s"; return 1; }
			sleep 0.1; tb_n=$((tb_n + 1))
		done
	fi
	# One with a lost pidfile still counts.
	# shellcheck disable=SC2013
	for tb_f in $(grep -lsF -- "$1/exec" /proc/[0-9]*/cmdline); do
		case $({ tr '\0' ' ' <"$tb_f"; } 2>/dev/null) in
		"dockerd "*" --exec-root $1/exec "*)
			tb_say "a dockerd of $1 runs without its pidfile (${tb_f%/cmdline}): not unmounting"
			return 1 ;;
		esac
	done
	for tb_m in $(tb_mounts_under "$1" "$2"); do
		PATH=$TB_PATH umount -l "$tb_m" || return 1
	done
	rm -f "$1/netns" "$1/docker.pid"
}

# The test-bed engine: the one at TB_RUN.
tb_engine_pid() { tb_dockerd_pid "$TB_RUN"; }

# tb_engine_shared: the test-bed engine runs in our network namespace: an
# sbxcat before namespaces started it, with --bridge none.
tb_engine_shared() {
	tb_epid=$(tb_engine_pid) || return 1
	[ "$(readlink "/proc/$tb_epid/ns/net" 2>/dev/null)" = "$(readlink /proc/self/ns/net)" ]
}

# tb_start (under the lock): start the test-bed engine unless it already
# runs, then wait up to 30 s for its socket to answer. An engine an older
# sbxcat started in the host's namespace is stopped and started anew in a
# namespace of its own (same data root: the images stay).
tb_start() {
	if tb_engine_shared; then
		tb_say "the test-bed engine at $TB_RUN runs in the host's network namespace (started by an older sbxcat): restarting it in a namespace of its own"
		tb_dockerd_stop "$TB_RUN" "$TB_DATA" || return 1
	fi
	tb_ping "unix://$TB_SOCK" && return 0	# another test started it meanwhile
	if ! tb_engine_pid >/dev/null; then
		tb_dockerd_start "$TB_RUN" "$TB_DATA" || return 1
	fi
	tb_dockerd_wait "$TB_RUN"
}

testbed_docker() {
	DOCKER_BUILDKIT=0; export DOCKER_BUILDKIT	# no buildx: legacy builder
	if [ -n "${DOCKER_HOST:-}" ]; then
		tb_ping "$DOCKER_HOST" && tb_client "$DOCKER_HOST" &&
			{ export DOCKER_HOST; return 0; }
		tb_say "DOCKER_HOST=$DOCKER_HOST does not answer; trying others"
	fi
	# An engine an older sbxcat started in our namespace is restarted
	# (by tb_start) rather than used.
	if tb_ping "unix://$TB_SOCK" && { [ "$(id -u)" != 0 ] || ! tb_engine_shared; } &&
		tb_client "unix://$TB_SOCK"; then
		DOCKER_HOST=unix://$TB_SOCK; export DOCKER_HOST; return 0
	fi
	if tb_ping unix:///var/run/docker.sock && tb_client unix:///var/run/docker.sock; then
		DOCKER_HOST=unix:///var/run/docker.sock; export DOCKER_HOST; return 0
	fi
	if [ "$(id -u)" != 0 ]; then
		tb_say "no Docker engine answers (${DOCKER_HOST:+$DOCKER_HOST, }$TB_SOCK, /var/run/docker.sock) and only root can start one"
		return 1
	fi
	if ! PATH=$PATH:/usr/sbin:/sbin command -v dockerd >/dev/null; then
		tb_say "no Docker engine answers and dockerd is missing (apt-get install docker.io)"
		return 1
	fi
	tb_locked tb_start || return 1
	tb_client "unix://$TB_SOCK" || {
		tb_say "no docker client can talk to the engine on $TB_SOCK"; return 1; }
	DOCKER_HOST=unix://$TB_SOCK; export DOCKER_HOST
}

# tb_import (under the lock): build the base image from busybox-static.
# busybox --list names busybox itself: linking that name would replace the
# binary with a symlink to itself ("too many levels of symbolic links").
tb_import() {
	tb_docker image inspect "$TB_IMAGE" >/dev/null 2>&1 && return 0
	tb_root=$(mktemp -d) || return 1
	trap 'rm -rf "$tb_root"' EXIT	# we are in tb_locked's subshell
	mkdir -p "$tb_root/bin" "$tb_root/etc" "$tb_root/tmp" "$tb_root/home" &&
	chmod 755 "$tb_root" "$tb_root/bin" "$tb_root/etc" "$tb_root/home" &&
	chmod 1777 "$tb_root/tmp" &&
	cp /bin/busybox "$tb_root/bin/" || return 1
	# One process for the 270 links (an ln each takes seconds on a busy
	# machine); perl-base is essential on Debian.
	# shellcheck disable=SC2046
	perl -e '$d = shift; for (grep { $_ ne "busybox" } @ARGV) {
		symlink("busybox", "$d/$_") or die "$d/$_: $!\n" }' \
		"$tb_root/bin" $(/bin/busybox --list) || return 1
	echo 'root:x:0:0:root:/root:/bin/sh' >"$tb_root/etc/passwd"
	echo 'root:x:0:' >"$tb_root/etc/group"
	chmod 644 "$tb_root/etc/passwd" "$tb_root/etc/group"
	# Owner 0 in the image even when a non-root user runs the tests.
	tar -C "$tb_root" --owner=0 --group=0 --numeric-owner -c . |
		tb_docker import - "$TB_IMAGE" >/dev/null
}

testbed_base_image() {
	testbed_docker || return 1
	tb_docker image inspect "$TB_IMAGE" >/dev/null 2>&1 && return 0
	# The dynamically linked busybox package would not run in the image.
	if ! dpkg-query -W -f '${Status}' busybox-static 2>/dev/null |
		grep -q ' installed' || [ ! -x /bin/busybox ]; then
		tb_say "busybox-static is missing (apt-get install busybox-static): cannot make $TB_IMAGE"
		return 1
	fi
	tb_locked tb_import || { tb_say "docker import of $TB_IMAGE failed"; return 1; }
}

# testbed_stop: stop the test-bed engine (under the lock, so it cannot race
# a start), unmount what it left and remove its network namespace.
testbed_stop() {
	[ -d "$TB_RUN" ] || return 0
	tb_locked tb_dockerd_stop "$TB_RUN" "$TB_DATA"
}

# testbed_remove_mine SUFFIX: remove the images a test or benchmark made,
# named sbxcat/*SUFFIX:*, and the untagged images a failed build of theirs
# left in the layer cache (their command or labels name the suffix).
testbed_remove_mine() {
	for tb_ref in $(tb_docker images --format '{{.Repository}}:{{.Tag}}' |
		grep "^sbxcat/.*$1:"); do
		tb_docker rmi -f "$tb_ref" >/dev/null 2>&1
	done
	for tb_id in $(tb_docker images -q --filter dangling=true); do
		tb_docker image inspect -f '{{.ContainerConfig.Cmd}} {{.Config.Labels}}' \
			"$tb_id" 2>/dev/null | grep -q "$1" &&
			tb_docker rmi "$tb_id" >/dev/null 2>&1
	done
	return 0
}

# As a script: start the test-bed engine (and its base image) and print the
# DOCKER_HOST to reach it, stop it, or say whether it runs.
case ${0##*/} in
testbed.sh)
	case ${1:-} in
	start)
		[ "$(id -u)" = 0 ] || { tb_say "only root can start the test-bed engine"; exit 3; }
		DOCKER_HOST=unix://$TB_SOCK; export DOCKER_HOST
		tb_locked tb_start && testbed_base_image || exit 1
		echo "DOCKER_HOST=$DOCKER_HOST" ;;
	stop) testbed_stop ;;
	status)
		if tb_pid=$(tb_engine_pid); then
			echo "testbed: dockerd $tb_pid, DOCKER_HOST=unix://$TB_SOCK, network namespace $TB_RUN/netns"
		else
			echo "testbed: not running"; exit 1
		fi ;;
	*) echo "usage: sh tests/testbed.sh start|stop|status" >&2; exit 2 ;;
	esac ;;
esac

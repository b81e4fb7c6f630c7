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

TB_RUN=/run/sbxcat-testbed
TB_SOCK=$TB_RUN/docker.sock
TB_PIDFILE=$TB_RUN/docker.pid
TB_DATA=/var/lib/sbxcat-testbed
TB_IMAGE=sbxcat-test/busybox:1

tb_say() { echo "testbed: $*" >&2; }
tb_docker() { "${DOCKER:-docker}" "$@"; }

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

# tb_engine_pid: print the pid of the running test-bed dockerd. The command
# line check keeps a stale pidfile (/run is not a tmpfs here: it survives a
# reboot) or a reused pid from pointing at someone else's process; a zombie
# has an empty command line and so counts as exited.
tb_engine_pid() {
	tb_pid=$(cat "$TB_PIDFILE" 2>/dev/null) || return 1
	case $tb_pid in '' | *[!0-9]*) return 1 ;; esac
	tr '\0' ' ' <"/proc/$tb_pid/cmdline" 2>/dev/null |
		grep -q "dockerd .*--exec-root $TB_RUN/exec" || return 1
	echo "$tb_pid"
}

# tb_start (under the lock): start the test-bed engine unless it already runs,
# then wait up to 30 s for its socket to answer.
#  --bridge none --iptables=false --ip-forward=false: no docker0, no iptables
#    rules or sysctl left on the host, no clash with a system engine's
#    docker0; containers and build RUN steps on the default network get
#    loopback only (tests send nothing off the machine), while --network none
#    and `docker network create --internal` still work. Without iptables an
#    internal network's containers still get a default route via the host
#    bridge: only net.ipv4.ip_forward=0 (the default here) keeps them local.
#  --config-file: ignore /etc/docker (a daemon.json meant for a system engine
#    could clash with our flags) and keep the trust key.json out of it.
tb_start() {
	tb_ping "unix://$TB_SOCK" && return 0	# another test started it meanwhile
	if ! tb_engine_pid >/dev/null; then
		rm -f "$TB_PIDFILE"
		# A killed engine's containerd can linger as a zombie (init here
		# reaps lazily); dockerd would trust its pidfile, wait 15 s, and fail.
		tb_cpid=$TB_RUN/exec/containerd/containerd.pid
		grep -qs containerd "/proc/$(cat "$tb_cpid" 2>/dev/null)/cmdline" ||
			rm -f "$tb_cpid"
		mkdir -p "$TB_RUN/exec" "$TB_DATA/docker" || return 1
		echo "{\"deprecated-key-path\": \"$TB_DATA/key.json\"}" \
			>"$TB_RUN/daemon.json"
		# Double fork + setsid: the engine outlives the test, is reaped by
		# init rather than by the test's `wait`, and holds none of the test's
		# fds: not the harness's output pipe, and not fd 9, the lock.
		( cd / && PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		  exec setsid nohup dockerd --data-root "$TB_DATA/docker" \
			--exec-root "$TB_RUN/exec" --pidfile "$TB_PIDFILE" \
			-H "unix://$TB_SOCK" --config-file "$TB_RUN/daemon.json" \
			--bridge none --iptables=false --ip-forward=false \
			</dev/null >"$TB_RUN/dockerd.log" 2>&1 \
			3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- & )
	fi
	tb_n=0
	while [ $tb_n -lt 300 ]; do
		tb_ping "unix://$TB_SOCK" && return 0
		# Give up early when the engine died (the pidfile comes a bit late).
		[ $tb_n -gt 20 ] && ! tb_engine_pid >/dev/null && break
		sleep 0.1; tb_n=$((tb_n + 1))
	done
	tb_say "the test-bed engine did not answer on $TB_SOCK; $TB_RUN/dockerd.log ends:"
	tail -n 5 "$TB_RUN/dockerd.log" >&2
	return 1
}

testbed_docker() {
	DOCKER_BUILDKIT=0; export DOCKER_BUILDKIT	# no buildx: legacy builder
	if [ -n "${DOCKER_HOST:-}" ]; then
		tb_ping "$DOCKER_HOST" && tb_client "$DOCKER_HOST" &&
			{ export DOCKER_HOST; return 0; }
		tb_say "DOCKER_HOST=$DOCKER_HOST does not answer; trying others"
	fi
	for tb_h in "unix://$TB_SOCK" unix:///var/run/docker.sock; do
		if tb_ping "$tb_h" && tb_client "$tb_h"; then
			DOCKER_HOST=$tb_h; export DOCKER_HOST; return 0
		fi
	done
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
	for tb_a in $(/bin/busybox --list); do
		[ "$tb_a" = busybox ] || ln -s busybox "$tb_root/bin/$tb_a" || return 1
	done
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

# tb_stop (under the lock, so it cannot race a start): SIGTERM our dockerd
# and wait for it; it gives running containers up to 15 s to stop.
tb_stop() {
	tb_pid=$(tb_engine_pid) || return 0	# not running, or not ours
	kill "$tb_pid" || return 1
	tb_n=0
	while tb_engine_pid >/dev/null; do
		[ $tb_n -ge 400 ] && { tb_say "dockerd $tb_pid did not exit in 40 s"; return 1; }
		sleep 0.1; tb_n=$((tb_n + 1))
	done
}

testbed_stop() {
	[ -e "$TB_PIDFILE" ] || return 0
	tb_locked tb_stop
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

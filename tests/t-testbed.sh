#!/bin/sh
# t-testbed.sh - the test-bed engine leaves the host's Docker alone.
#
# A dockerd started in the host's network namespace with --bridge none
# deletes the host's docker0, and the system engine then cannot start a
# container on its default network until it is restarted. tests/testbed.sh
# therefore runs every engine in a namespace of its own. This test starts
# the test-bed beside a running "system" engine and checks that engine's
# docker0, iptables rules and default network before, during and after.
#
# It never touches the real host: the host is simulated by a network
# namespace of the test's own, where a stand-in system dockerd runs with its
# default bridge (data, exec root, pid file and socket under the test's
# temporary directory). The test-bed is started from inside that namespace
# through tb_start, the code path testbed_docker takes, so it makes its own
# nested namespace there. When a real system engine answers at
# /var/run/docker.sock, its docker0 is only read, before and after.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
PATH=$PATH:$TB_PATH

[ "$(id -u)" = 0 ] || skip_all "needs root to make network namespaces and start dockerd"
for c in dockerd unshare nsenter ip iptables flock curl; do
	command -v "$c" >/dev/null ||
		skip_all "needs $c (sh scripts/deps.sh test installs it)"
done
[ -x /bin/busybox ] || skip_all "needs busybox-static for the base image"

T=$(mktemp -d /tmp/sbxcat-testbed.XXXXXX) || exit 1
chmod 755 "$T"
H=$T/host	# the stand-in system engine; H/netns is the stand-in host
B=$T/tb		# the test-bed engine started from inside it
cleanup() {
	tb_dockerd_stop "$B" "$B/data" 2>/dev/null
	tb_dockerd_stop "$H" "$H/data" 2>/dev/null
	# Whatever still runs from this directory (a shim, a container's
	# process), by pid; then whatever is still mounted there.
	for p in $(grep -ls "$T/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
		[ "$p" != $$ ] && kill -9 "$p" 2>/dev/null
	done
	for m in $(tb_mounts_under "$T"); do umount -l "$m"; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# in_host CMD...: run CMD in the stand-in host's network namespace.
in_host() { nsenter --net="$H/netns" "$@"; }
hd() { DOCKER_HOST=unix://$H/docker.sock "$DOCKER" "$@"; }
bd() { DOCKER_HOST=unix://$B/docker.sock "$DOCKER" "$@"; }
# bridge_of NETNS: docker0's index, MAC and IPv4 address there (an empty
# line when it is missing): a docker0 deleted and made again differs.
bridge_of() {
	nsenter --net="$1" ip -o link show docker0 2>/dev/null | awk '{print $1, $(NF-2)}' | tr -d '\n'
	echo " $(nsenter --net="$1" ip -o -4 addr show docker0 2>/dev/null | awk '{print $4}')"
}
# rules_of NETNS: its iptables rules, filter and nat, without counters.
rules_of() { nsenter --net="$1" sh -c 'iptables -S; iptables -t nat -S'; }
# sleeper NAME CLIENT: start a container NAME that stops at once on SIGTERM
# (busybox sleep as pid 1 would make the engine wait 10 s).
sleeper() {
	s_name=$1
	shift
	"$@" run -d --name "$s_name" "$TB_IMAGE" sh -c 'trap exit TERM; sleep 600 & wait' >/dev/null
}
# ip_of NAME CLIENT: the address of container NAME on the default network.
ip_of() {
	i_name=$1
	shift
	"$@" inspect -f '{{.NetworkSettings.IPAddress}}' "$i_name" 2>/dev/null
}

# A real system engine: only looked at.
sys_before=""
if tb_ping unix:///var/run/docker.sock; then
	sys_before=$(bridge_of /proc/self/ns/net)
fi

# The stand-in system engine, with the engine's default bridge network.
if ! tb_dockerd_start "$H" "$H/data" || ! tb_dockerd_wait "$H" ||
	! tb_client "unix://$H/docker.sock" ||
	! ( DOCKER_HOST=unix://$H/docker.sock; export DOCKER_HOST; tb_import ); then
	skip_all "the stand-in system engine could not be started in a namespace of its own or given the base image (see above)"
fi
host_br=$(bridge_of "$H/netns")
host_rules=$(rules_of "$H/netns")
case $host_br in
[0-9]*": 02:42:"*" "[0-9]*/[0-9]*) ok 0 "the stand-in system engine has its docker0 ($host_br)" ;;
*) ok 1 "the stand-in system engine has its docker0 (got '$host_br')" ;;
esac
sleeper tbt-c1 hd
c1=$(ip_of tbt-c1 hd)
[ -n "$c1" ]; ok $? "a container on the stand-in's default network runs (${c1:-no address})"

# The test-bed, started as testbed_docker starts it, from inside the
# stand-in host's namespace.
in_host env -u DOCKER_HOST SBXCAT_TESTBED_RUN="$B" SBXCAT_TESTBED_DATA="$B/data" \
	sh -c '. "$srcdir/tests/testbed.sh" && tb_locked tb_start'
ok $? "the test-bed starts beside the stand-in system engine"
bpid=$(tb_dockerd_pid "$B")
bns=$(readlink "/proc/$bpid/ns/net" 2>/dev/null)
hns="net:[$(stat -L -c %i "$H/netns")]"
[ -n "$bpid" ] && [ "$bns" = "net:[$(stat -L -c %i "$B/netns" 2>/dev/null)]" ] &&
	[ "$bns" != "$hns" ] && [ "$bns" != "$(readlink /proc/self/ns/net)" ]
ok $? "the test-bed dockerd runs in a network namespace of its own ($bns)"
is "$(bridge_of "$H/netns")" "$host_br" "with the test-bed running, the stand-in's docker0 is intact"
is "$(rules_of "$H/netns")" "$host_rules" "with the test-bed running, the stand-in's iptables rules are unchanged"
sleeper tbt-c2 hd
c2=$(ip_of tbt-c2 hd)
hd exec tbt-c2 ping -c 1 -W 5 "$c1" >/dev/null 2>&1
ok $? "with the test-bed running, a new container on the stand-in's default network (${c2:-no address}) reaches the other ($c1)"

# The test-bed keeps the engine's defaults in its namespace, and that
# namespace has no route off the machine.
case $(bridge_of "$B/netns") in
*" "[0-9]*/[0-9]*) ok 0 "the test-bed has a docker0 of its own" ;;
*) ok 1 "the test-bed has a docker0 of its own" ;;
esac
is "$(bd network inspect -f '{{.Driver}}' bridge 2>&1)" bridge "the test-bed's default network is a bridge network"
nsenter --net="$B/netns" iptables -t nat -S DOCKER >/dev/null 2>&1
ok $? "the test-bed has iptables rules of its own (nat chain DOCKER)"
nsenter --net="$B/netns" ip route get 192.0.2.1 >/dev/null 2>&1
ok $((!$?)) "the test-bed's namespace has no route off the machine"
is "$(nsenter --net="$B/netns" ip -o link show | awk -F': ' '{print $2}' |
	grep -v '^lo$\|^docker0$\|^veth' | tr '\n' ' ')" "" \
	"the test-bed's namespace has no link but lo, docker0 and its veths"
if ( DOCKER_HOST=unix://$B/docker.sock; export DOCKER_HOST; tb_import ); then
	sleeper tbt-b1 bd
	b1=$(ip_of tbt-b1 bd)
	bd run --rm "$TB_IMAGE" ping -c 1 -W 5 "$b1" >/dev/null 2>&1
	ok $? "two containers on the test-bed's default network reach each other (${b1:-no address})"
else
	ok 1 "the base image is imported into the test-bed"
fi

# Stopped (with a container running), the test-bed leaves no mount and no
# namespace behind, and the stand-in still works.
in_host env -u DOCKER_HOST SBXCAT_TESTBED_RUN="$B" SBXCAT_TESTBED_DATA="$B/data" \
	sh -c '. "$srcdir/tests/testbed.sh" && testbed_stop'
ok $? "testbed_stop stops the test-bed"
[ -n "$bpid" ] && ! tb_dockerd_pid "$B" >/dev/null
ok $? "the test-bed dockerd is gone"
is "$(tb_mounts_under "$B" | tr '\n' ' ')" "" "the stopped test-bed leaves nothing mounted (its data root, netns files)"
[ ! -e "$B/netns" ]; ok $? "testbed_stop removes the test-bed's namespace"
is "$(bridge_of "$H/netns")" "$host_br" "after the test-bed, the stand-in's docker0 is intact"
is "$(rules_of "$H/netns")" "$host_rules" "after the test-bed, the stand-in's iptables rules are unchanged"
hd run --rm "$TB_IMAGE" ping -c 1 -W 5 "$c1" >/dev/null 2>&1
ok $? "after the test-bed, a new container on the stand-in's default network reaches the other"

# A killed engine leaves its data root bind-mounted onto itself; stop still
# cleans up.
in_host env -u DOCKER_HOST SBXCAT_TESTBED_RUN="$B" SBXCAT_TESTBED_DATA="$B/data" \
	sh -c '. "$srcdir/tests/testbed.sh" && tb_locked tb_start' &&
	kill -9 "$(tb_dockerd_pid "$B")"
ok $? "the test-bed starts again and is killed"
n=0
while tb_dockerd_pid "$B" >/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ -n "$(tb_mounts_under "$B/data")" ]
ok $? "the killed test-bed left its data root mounted"
in_host env -u DOCKER_HOST SBXCAT_TESTBED_RUN="$B" SBXCAT_TESTBED_DATA="$B/data" \
	sh -c '. "$srcdir/tests/testbed.sh" && testbed_stop'
is "$?:$(tb_mounts_under "$B" | tr '\n' ' ')" "0:" "testbed_stop after a kill leaves nothing mounted"
[ ! -e "$B/netns" ]; ok $? "testbed_stop after a kill removes the namespace"

if [ -n "$sys_before" ]; then
	is "$(bridge_of /proc/self/ns/net)" "$sys_before" "the real system engine's docker0 is intact"
else
	skip "no system engine answers at /var/run/docker.sock" "the real system engine's docker0 is intact"
fi
hd rm -f tbt-c1 tbt-c2 >/dev/null 2>&1
done_testing

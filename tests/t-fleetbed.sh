#!/bin/sh
# t-fleetbed.sh - the fleet's test bed (tests/fleetbed.sh) holds what the
# fleet tests rely on: two engines that are two engines, each with the base
# image; hosts that reach each other and the registry over the bed's bridge
# while the host's own namespace sees none of it (its links, addresses and
# routes unchanged); an image pushed from one engine and pulled by the
# other; a serve per host, on its own engine, in its own namespace, with
# its fleet name, answering over its unix socket and over TCP from the
# other host; a serve killed and started again; a second bed beside the
# first; and nothing left once the bed stops: no process with the bed's
# paths, no mount, no namespace, no cgroup, no directory, no interface.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/fleetbed.sh
. "$srcdir/tests/fleetbed.sh"
PATH=$PATH:$TB_PATH
S=${SBXCAT:?SBXCAT must name the built binary}
command -v jq >/dev/null || skip_all "jq is missing (apt-get install jq)"
t0=$(date +%s)

# The host's namespace as it was: compared at the end.
host_view() { ip -o link | awk '{ print $2, $3 }'; ip -o addr | awk '{ print $2, $4 }'; ip route; }
host_view >/dev/null 2>&1 || skip_all "ip cannot read this namespace"
before=$(host_view)

T=$(mktemp -d /tmp/sbxcat-fleetbed.XXXXXX) || exit 1
B2=t-fleetbed-two-$$
cleanup() {
	fleetbed_stop
	sh "$srcdir/tests/fleetbed.sh" stop "$B2" 2>/dev/null
	[ -n "${DB:-}" ] && pgbed_dropdb "$DB" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# What the bed refuses: nothing is made for any of it.
(fleetbed_start 0) 2>/dev/null
is "$?" 1 "fleetbed_start 0 is refused"
(fleetbed_start 2 --name ../x) 2>/dev/null
is "$?" 1 "a bed name with a slash is refused"
[ ! -e "$FB_BASE_RUN/../x" ] && [ ! -e "$FB_BASE_RUN/x" ]
ok $? "... and made nothing"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'. "$1/tests/testbed.sh"; . "$1/tests/fleetbed.sh"
		 fleetbed_start 2 --name t-fleetbed-user; echo "$? $FB_WHY"' sh "$srcdir" >"$T/user" 2>&1
	like "$(cat "$T/user")" '^2 needs root' "not root: fleetbed_start says why, with 2 (a skip)"
else
	skip "no setpriv" "not root: fleetbed_start says why, with 2 (a skip)"
fi

ts=$(date +%s.%N)
fleetbed_need 2
diag "fleetbed_start 2: $(awk -v a="$ts" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
is "$FB_N" 2 "the bed has two hosts"
is "$FB_RUN" "$FB_BASE_RUN/t-fleetbed" "the bed is named after the test"

# Two engines, distinct.
id1=$(curl -s --max-time 10 --unix-socket "$(fb_sock 1)" http://x/info | jq -r .ID)
id2=$(curl -s --max-time 10 --unix-socket "$(fb_sock 2)" http://x/info | jq -r .ID)
like "$id1" '^[A-Z0-9:]{20,}$' "h1's engine answers on $(fb_sock 1)"
like "$id2" '^[A-Z0-9:]{20,}$' "h2's engine answers on $(fb_sock 2)"
[ "$id1" != "$id2" ]
ok $? "they are two engines (two IDs)"
root1=$(fb_docker 1 info -f '{{.DockerRootDir}}') root2=$(fb_docker 2 info -f '{{.DockerRootDir}}')
is "$root1 $root2" "$FB_DATA/h1/docker $FB_DATA/h2/docker" "each with its own data root"
for k in 1 2; do
	pid=$(cat "$FB_RUN/h$k/docker.pid")
	is "$(readlink "/proc/$pid/ns/net")" "$(nsenter --net="$(fb_netns $k)" readlink /proc/self/ns/net)" \
		"h$k's engine runs in h$k's namespace"
done
img1=$(fb_docker 1 image inspect -f '{{.Id}}' "$TB_IMAGE" 2>/dev/null)
img2=$(fb_docker 2 image inspect -f '{{.Id}}' "$TB_IMAGE" 2>/dev/null)
like "$img1" '^sha256:' "h1 has the base image $TB_IMAGE"
is "$img2" "$img1" "h2 has it, the same image"

# The bridge: hosts and registry reach each other; nothing else.
fb_in 1 busybox ping -c 1 -W 2 "$(fb_ip 2)" >/dev/null 2>&1
ok $? "h1's namespace reaches h2's address"
st=$(fb_in 2 curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$FB_REGISTRY/v2/")
is "$st" 200 "h2's namespace reaches the registry at $FB_REGISTRY"
is "$(fb_in 1 ip route | grep -c '^default')" 0 "h1 has no route off the bed"
is "$(fb_in 1 ip -o -4 addr show eth0 | awk '{ print $4 }')" "$(fb_ip 1)/24" "h1's eth0 has its address"
# The host's namespace: no interface, address or route of the bed.
ip -o addr | grep -q "$FB_NET\." || ip route | grep -q "$FB_NET\."
ok $((!$?)) "the host's namespace has no address or route in $FB_NET.0/24"
is "$(host_view)" "$before" "the host's links, addresses and routes are as they were"

# The registry: an image only h1 has, pushed by h1, pulled by h2.
probe=$FB_REGISTRY/fleetbed-probe:$$
mkdir "$T/probe" && echo "probe $$" >"$T/probe/p"
tar -C "$T/probe" --owner=0 --group=0 -c . | fb_docker 1 import - "$probe" >/dev/null
fb_docker 2 image inspect "$probe" >/dev/null 2>&1
ok $((!$?)) "h2 does not have the probe image before the pull"
fb_docker 1 push "$probe" >"$T/push" 2>&1
ok $? "h1's engine pushes $probe" || sed 's/^/# /' "$T/push"
fb_docker 2 pull "$probe" >"$T/pull" 2>&1
ok $? "h2's engine pulls it" || sed 's/^/# /' "$T/pull"
is "$(fb_docker 2 image inspect -f '{{.Id}}' "$probe" 2>/dev/null)" \
	"$(fb_docker 1 image inspect -f '{{.Id}}' "$probe")" "the same image ID on both"
is "$(fb_docker 2 image inspect -f '{{index .RepoDigests 0}}' "$probe" 2>/dev/null)" \
	"$(fb_docker 1 image inspect -f '{{index .RepoDigests 0}}' "$probe")" "the same digest on both"
fb_in 1 curl -s --max-time 5 "http://$FB_REGISTRY/v2/_catalog" | grep -q '"fleetbed-probe"'
ok $? "the registry's catalogue lists it"
[ -d "$FB_DATA/reg/docker/registry/v2/repositories/fleetbed-probe" ]
ok $? "stored in the bed's own registry storage"

# A serve per host, on the database every host shares when there is one
# (the PostgreSQL test-bed's socket is a file: reached from any namespace).
unset SBXCAT_CATALOG SBXCAT_KEY_SECRET SBXCAT_KEY_SECRET_FILE SBXCAT_DATABASE_URL \
	SBXCAT_DEPLOYMENT_ID SBXCAT_TENANT SANDBOXD_WORKSPACE_ROOT SBXCAT_SPOOL_DIR
DB=""
if (. "$srcdir/tests/pgbed.sh"; pgbed_start) 2>"$T/pg"; then
	. "$srcdir/tests/pgbed.sh"
	DB=t_fleetbed_$$
	SBXCAT_DATABASE_URL=$(pgbed_newdb "$DB") || bail_out "the PostgreSQL test-bed cannot make a database"
	export SBXCAT_DATABASE_URL
	fb_in 1 timeout 60 "$S" audit migrate >"$T/mig" 2>&1
	ok $? "from h1's namespace, sbxcat reaches the database (audit migrate)" || sed 's/^/# /' "$T/mig"
	is "$(pgbed_psql "$DB" -c 'SELECT count(*) FROM fleet_hosts')" 0 "the fleet's tables are there, empty"
else
	diag "no PostgreSQL test-bed ($(cat "$T/pg")): the serves run as single hosts"
	skip "no PostgreSQL test-bed" "from h1's namespace, sbxcat reaches the database"
	skip "no PostgreSQL test-bed" "the fleet's tables are there"
	FB_FLEET=0
fi
TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL
CAT=$T/cat.json
echo '[{"alias": "fb", "description": "the base", "image": "sbxcat-test/busybox:1"}]' >"$CAT"
for k in 1 2; do
	fleetbed_serve $k
	ok $? "fleetbed_serve $k: h$k's serve answers /healthz" || sed 's/^/# /' "$FB_RUN/h$k/serve.log"
done
for k in 1 2; do
	eval "pid=\$FB_SPID_$k"
	is "$(readlink "/proc/$pid/ns/net")" "$(nsenter --net="$(fb_netns $k)" readlink /proc/self/ns/net)" \
		"h$k's serve runs in h$k's namespace"
	env=$(tr '\0' '\n' <"/proc/$pid/environ")
	n=$(printf '%s\n' "$env" | grep -cxF -e "SBXCAT_FLEET=h$k" -e "SBXCAT_FLEET_URL=$(fb_url $k)" \
		-e "DOCKER_HOST=$(fb_docker_host $k)" -e "SANDBOXD_WORKSPACE_ROOT=$FB_DATA/h$k/root" \
		-e "SANDBOXD_TOKEN=$TOKEN")
	is "$n" 5 "h$k's serve has its fleet name and URL, its engine, its root and the caller's token"
done
is "$(fb_curl 1 -s -o /dev/null -w '%{http_code}' http://x/healthz) $(fb_curl 2 -s -o /dev/null -w '%{http_code}' http://x/healthz)" \
	"200 200" "fb_curl: both answer /healthz over their unix sockets"
st=$(fb_in 2 curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$(fb_url 1)/healthz")
is "$st" 200 "h1's serve answers over TCP from inside h2's namespace"
st=$(fb_in 1 curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$(fb_url 2)/healthz")
is "$st" 200 "h2's serve answers over TCP from inside h1's namespace"
# Once serve joins a fleet (a binary that knows SBXCAT_FLEET_URL), each
# host registers its name and URL; before that, serve ignores SBXCAT_FLEET.
if [ -z "$DB" ] || [ "${FB_FLEET:-1}" = 0 ]; then
	skip "no database" "both hosts registered in the fleet"
elif ! grep -q SBXCAT_FLEET_URL "$S"; then
	skip "this sbxcat has no fleet yet (SBXCAT_FLEET ignored)" "both hosts registered in the fleet"
else
	n=0
	while [ $n -lt 50 ] && [ "$(pgbed_psql "$DB" -c 'SELECT count(*) FROM fleet_hosts')" -lt 2 ]; do
		sleep 0.1; n=$((n + 1))
	done
	is "$(pgbed_psql "$DB" -c "SELECT name || ' ' || url FROM fleet_hosts ORDER BY name")" \
		"$(printf 'h1 %s\nh2 %s' "$(fb_url 1)" "$(fb_url 2)")" "both hosts registered in the fleet, with their URLs"
fi
# A session opened through h2 lives on one engine, the one of the host
# it was placed on (h2 itself without a fleet), under its cgroup parent.
st=$(fb_curl 2 -s -o "$T/open" -w '%{http_code}' -H "X-Sandbox-Token: $TOKEN" \
	-H 'Content-Type: application/json' -d '{"session_id": "fbt"}' http://x/sessions)
is "$st" 200 "a session opens through h2's serve" || sed 's/^/# /' "$T/open"
owner=h2
[ -n "$DB" ] && [ "${FB_FLEET:-1}" != 0 ] && grep -q SBXCAT_FLEET_URL "$S" &&
	owner=$(pgbed_psql "$DB" -c "SELECT host FROM fleet_sessions WHERE wire_id = 'fbt'")
n1=$(fb_docker 1 ps -q --filter label=io.sbxcat.deployment | wc -l)
n2=$(fb_docker 2 ps -q --filter label=io.sbxcat.deployment | wc -l)
case $owner in h1) want="1 0" ;; *) want="0 1" ;; esac
is "$n1 $n2" "$want" "its container runs on $owner's engine (where it was placed), none on the other"
cid=$(fb_docker "${owner#h}" ps -q --filter label=io.sbxcat.deployment | head -1)
cpid=$(fb_docker "${owner#h}" inspect -f '{{.State.Pid}}' "$cid" 2>/dev/null)
grep -q "/fleetbed-t-fleetbed-$owner/" "/proc/$cpid/cgroup" 2>/dev/null
ok $? "under $owner's cgroup parent"

# The death test's moves: SIGKILL, then the serve starts again; SIGTERM.
old=$FB_SPID_2
fleetbed_serve_kill 2
[ ! -d "/proc/$old" ]
ok $? "fleetbed_serve_kill 2: gone, reaped ($FB_SERVE_STATUS)"
st=$(fb_in 1 curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$(fb_url 2)/healthz")
is "$st" 000 "h2 no longer answers"
fleetbed_serve 2
ok $? "h2's serve starts again (over its stale socket)"
[ "$FB_SPID_2" != "$old" ]
ok $? "... a new process"
fleetbed_serve_stop 1
is "$FB_SERVE_STATUS" 0 "fleetbed_serve_stop 1: SIGTERM, status 0"
fleetbed_logs 5 >"$T/logs"
grep -q '^# h1/dockerd.log:' "$T/logs" && grep -q '^# h2/serve.log:' "$T/logs"
ok $? "fleetbed_logs shows the engines' and the serves' logs"
[ ! -e "$FB_RUN/h1/serve.sock" ]
ok $? "its unix socket removed"

# A second bed beside this one: same addresses, its own namespaces.
(
	fleetbed_start 1 --name "$B2" --no-registry --no-image || { echo "$FB_WHY" >&2; exit 1; }
	fb_in 1 ip -o -4 addr show eth0 | grep -q "$(fb_ip 1)/24"
) 2>"$T/b2"
ok $? "a second bed $B2 starts beside it" || sed 's/^/# /' "$T/b2"
[ -S "$FB_BASE_RUN/$B2/h1/docker.sock" ]
ok $? "... with its own engine"
# Its subshell ended without stopping it: a crashed run's leftovers.
old2=$(cat "$FB_BASE_RUN/$B2/h1/docker.pid")
(
	fleetbed_start 1 --name "$B2" --no-registry --no-image || { echo "$FB_WHY" >&2; exit 1; }
	[ "$(cat "$FB_RUN/h1/docker.pid")" != "$old2" ] && [ -z "$(fb_cmdline "$old2")" ]
) 2>"$T/b2"
ok $? "started again over a crashed run's leftovers, it stops them first" || sed 's/^/# /' "$T/b2"
grep -q "left behind" "$T/b2"
ok $? "... and says so"
sh "$srcdir/tests/fleetbed.sh" stop "$B2"
ok $? "sh tests/fleetbed.sh stop $B2"
[ ! -e "$FB_BASE_RUN/$B2" ] && [ ! -e "$FB_BASE_DATA/$B2" ]
ok $? "... removed it"
is "$(curl -s --max-time 10 --unix-socket "$(fb_sock 1)" http://x/info | jq -r .ID)" "$id1" \
	"this bed's engines still answer"
fb_in 1 busybox ping -c 1 -W 2 "$(fb_ip 2)" >/dev/null 2>&1
ok $? "and its hosts still reach each other"

# Nothing left.
ts=$(date +%s.%N)
fleetbed_stop
ok $? "fleetbed_stop"
diag "fleetbed_stop: $(awk -v a="$ts" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
left=$(grep -lsF -e "$FB_RUN" -e "$FB_DATA" /proc/[0-9]*/cmdline | while read -r f; do
	p=${f#/proc/} p=${p%/cmdline}
	c=$({ tr '\0' ' ' <"$f"; } 2>/dev/null) && [ -n "$c" ] && echo "$p: $c"
done | grep -v "grep -lsF")
is "$left" "" "no process has the bed's paths in its command line"
is "$(tb_mounts_under "$FB_RUN" "$FB_DATA" "$FB_BASE_RUN/$B2" "$FB_BASE_DATA/$B2")" "" "no mount under the bed's dirs"
[ ! -e "$FB_RUN" ] && [ ! -e "$FB_DATA" ]
ok $? "the bed's dirs are gone"
is "$(find /sys/fs/cgroup -maxdepth 2 -name 'fleetbed-t-fleetbed*' 2>/dev/null)" "" "no cgroup parent left"
is "$(host_view)" "$before" "the host's links, addresses and routes are as they were"
fleetbed_stop
ok $? "fleetbed_stop again does nothing"

diag "wall time: $(($(date +%s) - t0)) s"
done_testing

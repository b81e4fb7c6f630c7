# tests/fleetbed.sh - a fleet on one machine for sbxcat's fleet tests: N
# hosts, each a network namespace with a dockerd of its own (and, on
# demand, an `sbxcat serve`), and a private registry, joined by a bridge
# that lives in a namespace of its own.
#
#   set -u
#   . "$srcdir/tests/tap.sh"; . "$srcdir/tests/testbed.sh"
#   . "$srcdir/tests/fleetbed.sh"
#   trap fleetbed_stop EXIT           # before the start: a failed start too
#   fleetbed_need 2                   # fleetbed_start, else skip_all/bail_out
#   fb_docker 1 run --rm sbxcat-test/busybox:1 true
#   SANDBOXD_TOKEN=...; export SANDBOXD_TOKEN   # TCP needs a service token
#   fleetbed_serve 1 --tenants "$T/tenants" || bail_out "no serve on h1"
#   fleetbed_serve 2
#   fb_curl 1 -s http://x/healthz     # h1's serve, over its unix socket
#   fb_in 2 curl -s "$(fb_url 1)/healthz"   # from inside h2's namespace
#   fleetbed_serve_kill 2; fleetbed_serve 2   # h2's serve dies and returns
#
# With servebed.sh (sb_init: $S, $T, $CAT; sb_audit_db: the database all
# the hosts share), the EXIT trap set after sb_audit_db's, naming all:
#   sb_init fleet-x fx; sb_audit_db t_fleet_x_$$
#   trap 'fleetbed_stop; pgbed_dropdb "$DB"; sb_cleanup' EXIT
#   fleetbed_need 3
#
# fleetbed_start N [--name BED] [--no-registry] [--no-image]
#   N (1 to 9; the fleet tests use 2 or 3) hosts h1..hN.  BED names the bed
#   (default: the test's name, ${0##*/} without .sh), so two tests running
#   at once (make -j2) never share one; a bed of that name left by a crash
#   is stopped first.  Everything lives under FB_RUN=/run/sbxcat-fleetbed/BED
#   (sockets, pid files, logs, namespaces, exec roots) and
#   FB_DATA=/var/lib/sbxcat-fleetbed/BED (data roots, workspace roots,
#   spools, the registry's storage); both are removed by fleetbed_stop.
#   - the bridge: br0 in the namespace FB_RUN/br.netns.  Nothing is added
#     to the host's namespace: no interface, no address, no route; the
#     host's docker0 and engine are never touched.
#   - host K: the namespace FB_RUN/hK/netns, its eth0 (a veth whose peer is
#     on br0) at 10.231.0.(10+K)/24 and no other route; a dockerd entered
#     with nsenter --net (tests/testbed.sh's tb_dockerd_start: its own
#     --data-root FB_DATA/hK/docker, --exec-root, --pidfile, log
#     FB_RUN/hK/dockerd.log), its socket FB_RUN/hK/docker.sock, its
#     containers under the cgroup parent fleetbed-BED-hK, told that the
#     bed's registry is plain HTTP (--insecure-registry); the base image
#     sbxcat-test/busybox:1 (testbed.sh's, imported once and loaded into
#     the others: the same image ID on every host), unless --no-image.
#     The engines start in parallel.
#   - the registry: Debian's docker-registry (2.8) in the namespace
#     FB_RUN/reg/netns at FB_REGISTRY=10.231.0.2:5000, plain HTTP, no
#     auth, its config FB_RUN/reg/config.yml, storage FB_DATA/reg, log
#     FB_RUN/reg/registry.log; unless --no-registry.
#   The hosts' and the registry's namespaces reach each other over the
#   bridge, and nothing else.  Returns 0; 2 when this machine cannot run a
#   bed (not root, a tool or a kernel feature missing); 1 when a part of it
#   failed to start; FB_WHY then says why.  Exports FB_BED, FB_N, FB_RUN,
#   FB_DATA, FB_REGISTRY, and per host FB_IP_K, FB_URL_K, FB_DOCKER_HOST_K
#   (for a Python client, say); sets DOCKER (a client, testbed.sh's
#   tb_client).  fleetbed_need N [OPTIONS]: the same, with skip_all on 2
#   and bail_out on 1 (tests/tap.sh).
# fb_ip K, fb_url K (http://IP:8080), fb_netns K, fb_sock K (the engine's
#   socket), fb_docker_host K (unix://...), fb_serve_sock K, fb_dir K
#   (FB_RUN/hK), fb_data K (FB_DATA/hK): print them.
# fb_docker K ARGS...: the docker client on host K's engine.
# fb_in K CMD...: CMD inside host K's network namespace (proxies unset);
#   it reaches every host's IP and the registry, and nothing else.
# fb_curl K CURL-ARGS...: curl to host K's serve over its unix socket from
#   the caller's namespace (the URL's host part is ignored: http://x/PATH).
# fleetbed_serve K [SERVE ARGS...]
#   `sbxcat serve` ($S, else $SBXCAT; -C $FB_CAT, else $CAT when set) for
#   host K, inside its namespace, in the background (its pid in FB_SPID_K
#   and FB_RUN/hK/serve.pid; a child of the caller, so `wait` gives its
#   status), stdout and stderr appended to FB_RUN/hK/serve.log, listening
#   on tcp:IP_K:8080 and unix:FB_RUN/hK/serve.sock, with
#   DOCKER_HOST=fb_docker_host K, SANDBOXD_WORKSPACE_ROOT=FB_DATA/hK/root,
#   SBXCAT_SPOOL_DIR=FB_DATA/hK/spool (so each host has its sessions, key
#   secret and spool: sessionbed.sh's sb_init per host), SBXCAT_FLEET=hK
#   and SBXCAT_FLEET_URL=fb_url K (FB_FLEET=0: neither, a single host's
#   serve).  The rest of the caller's environment passes through:
#   SANDBOXD_TOKEN (needed: TCP is refused without it), SBXCAT_DATABASE_URL
#   (the PostgreSQL test-bed's socket is a file: it is reached from any
#   namespace), SBXCAT_KEY_SECRET (set it for one secret fleet-wide),
#   SBXCAT_DEPLOYMENT_ID (else fb-BED), SANDBOXD_*, SBXCAT_FLEET_LEASE...
#   Returns 0 once /healthz answers on the unix socket, 1 (the log's end on
#   stderr) when serve died or did not answer within FB_SERVE_WAIT seconds
#   (default 20).
# fleetbed_serve_stop K: SIGTERM, up to FB_STOP_WAIT seconds (default 15),
#   then SIGKILL; FB_SERVE_STATUS is then its status when it was our child.
# fleetbed_serve_kill K: SIGKILL (the death test), reaped; the stale unix
#   socket stays (serve replaces it when it starts again).
# fleetbed_logs [LINES]: the end (20 lines) of every log of the bed (the
#   engines', the registry's, the serves'), as TAP comments: for a failure.
# fleetbed_stop: stop and remove everything the bed started (serves, every
#   engine's containers, the engines, the registry, whatever still runs
#   with the bed's paths in its command line, mounts, the cgroup parents,
#   the namespaces and with them the veths and the bridge, FB_RUN and
#   FB_DATA); idempotent, every wait bounded; safe in an EXIT trap after a
#   failed or partial start.
#
# Run as a script: sh tests/fleetbed.sh start N [BED] | stop BED | stop-all |
# status (see the end).
#
# SBXCAT_FLEETBED_RUN and SBXCAT_FLEETBED_DATA move the beds (absolute
# paths without blanks; defaults /run/sbxcat-fleetbed, /var/lib/sbxcat-fleetbed).
#
# The variables set here are the sourcing test's to use:
# shellcheck disable=SC2034

FB_BASE_RUN=${SBXCAT_FLEETBED_RUN:-/run/sbxcat-fleetbed}
FB_BASE_DATA=${SBXCAT_FLEETBED_DATA:-/var/lib/sbxcat-fleetbed}
FB_NET=10.231.0
FB_REGISTRY=$FB_NET.2:5000
FB_PORT=8080

fb_say() { echo "fleetbed: $*" >&2; }

fb_dir() { echo "$FB_RUN/h$1"; }
fb_data() { echo "$FB_DATA/h$1"; }
fb_ip() { echo "$FB_NET.$((10 + $1))"; }
fb_url() { echo "http://$FB_NET.$((10 + $1)):$FB_PORT"; }
fb_netns() { echo "$FB_RUN/h$1/netns"; }
fb_sock() { echo "$FB_RUN/h$1/docker.sock"; }
fb_docker_host() { echo "unix://$FB_RUN/h$1/docker.sock"; }
fb_serve_sock() { echo "$FB_RUN/h$1/serve.sock"; }
fb_docker() {
	fb_k=$1
	shift
	DOCKER_HOST=unix://$FB_RUN/h$fb_k/docker.sock "${DOCKER:-docker}" "$@"
}
# fb_in: the bed's traffic never goes through a proxy the caller set.
fb_in() {
	fb_k=$1
	shift
	PATH=$PATH:$TB_PATH nsenter --net="$FB_RUN/h$fb_k/netns" \
		env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY \
		-u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY "$@"
}
fb_curl() {
	fb_k=$1
	shift
	curl --max-time 60 --unix-socket "$FB_RUN/h$fb_k/serve.sock" "$@"
}

# fb_name BED: set FB_BED, FB_RUN, FB_DATA for the bed BED (checked: it
# becomes a path and part of a cgroup's name).
fb_name() {
	case $1 in
	'' | *[!A-Za-z0-9._-]* | .* | -*)
		FB_WHY="bad bed name '$1' (letters, digits, . _ -)"; return 1 ;;
	esac
	[ ${#1} -le 40 ] || { FB_WHY="bed name '$1' longer than 40"; return 1; }
	FB_BED=$1 FB_RUN=$FB_BASE_RUN/$1 FB_DATA=$FB_BASE_DATA/$1
	export FB_BED FB_RUN FB_DATA
}

# fb_cmdline PID: its command line, blanks for NULs (empty for a zombie).
fb_cmdline() { { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null; }

# fb_pids STRING: the pids (but ours) whose command line holds STRING;
# read again after the grep, which lists itself.
fb_pids() {
	# shellcheck disable=SC2013
	for fb_f in $(grep -lsF -- "$1" /proc/[0-9]*/cmdline); do
		fb_p=${fb_f#/proc/}
		fb_p=${fb_p%/cmdline}
		[ "$fb_p" != $$ ] || continue
		case $(fb_cmdline "$fb_p") in *"$1"*) echo "$fb_p" ;; esac
	done
}

# fb_check OPTIONS: can this machine run a bed? (2 and FB_WHY when not.)
fb_check() {
	[ "$(id -u)" = 0 ] || { FB_WHY="needs root (network namespaces, dockerd)"; return 2; }
	for fb_c in dockerd containerd unshare nsenter ip curl flock umount perl; do
		PATH=$PATH:$TB_PATH command -v "$fb_c" >/dev/null || {
			FB_WHY="needs $fb_c (sh scripts/deps.sh test installs it)"; return 2; }
	done
	if [ "$fb_reg" = 1 ] && ! command -v docker-registry >/dev/null; then
		FB_WHY="needs docker-registry, Debian's registry 2.8 (sh scripts/deps.sh test installs it)"
		return 2
	fi
	if [ "$fb_img" = 1 ] && [ ! -x /bin/busybox ]; then
		FB_WHY="needs busybox-static for the base image (sh scripts/deps.sh test)"
		return 2
	fi
	unshare --net true 2>/dev/null || {
		FB_WHY="the kernel refuses a network namespace (unshare --net)"; return 2; }
	return 0
}

# fb_netns_make FILE: a network namespace at FILE (testbed.sh's).
fb_netns_make() {
	PATH=$PATH:$TB_PATH tb_netns_up "$1" || {
		FB_WHY="cannot make a network namespace at $1"; return 2; }
}

# fb_join NAME NETNS IP: NETNS joined to the bridge: a veth NAME on br0,
# its peer eth0 in NETNS at IP/24, up.
fb_join() {
	PATH=$PATH:$TB_PATH
	nsenter --net="$FB_RUN/br.netns" ip link add "$1" type veth peer name eth0 netns "$2" || {
		FB_WHY="cannot make a veth pair (the kernel's veth module?)"; return 2; }
	nsenter --net="$FB_RUN/br.netns" ip link set "$1" master br0 up &&
	nsenter --net="$2" ip addr add "$3/24" dev eth0 &&
	nsenter --net="$2" ip link set eth0 up || {
		FB_WHY="cannot put $1 on the bridge at $3"; return 1; }
}

# fb_registry_start: docker-registry in FB_RUN/reg/netns, as testbed.sh
# starts an engine (double fork, setsid: not the caller's child, none of
# its fds).
fb_registry_start() {
	fb_r=$FB_RUN/reg
	mkdir -p "$FB_DATA/reg" && chmod 700 "$FB_DATA/reg" || return 1
	cat >"$fb_r/config.yml" <<EOF
# The fleet test bed's registry (tests/fleetbed.sh): plain HTTP, no auth,
# on the bed's bridge only.
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $FB_DATA/reg
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: $FB_REGISTRY
  secret: $(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
health:
  storagedriver:
    enabled: false
EOF
	( cd / && PATH=$PATH:$TB_PATH exec setsid nohup nsenter --net="$fb_r/netns" \
		env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY \
		docker-registry serve "$fb_r/config.yml" \
		</dev/null >"$fb_r/registry.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- & )
}

# fb_registry_wait: until GET /v2/ answers (10 s at most).
fb_registry_wait() {
	fb_n=0
	while [ $fb_n -lt 100 ]; do
		nsenter --net="$FB_RUN/reg/netns" curl -sf --noproxy '*' --max-time 2 \
			"http://$FB_REGISTRY/v2/" >/dev/null 2>&1 && return 0
		sleep 0.1
		fb_n=$((fb_n + 1))
	done
	FB_WHY="the registry did not answer at $FB_REGISTRY; $FB_RUN/reg/registry.log ends: $(tail -n 3 "$FB_RUN/reg/registry.log" 2>/dev/null)"
	return 1
}

# fb_image: the base image on every engine: imported on h1 (testbed.sh's
# tb_import), saved once, loaded into the others in parallel.
fb_image() {
	( DOCKER_HOST=$(fb_docker_host 1); export DOCKER_HOST; tb_import ) || {
		FB_WHY="docker import of $TB_IMAGE on h1 failed"; return 1; }
	[ "$FB_N" -gt 1 ] || return 0
	fb_docker 1 save -o "$FB_DATA/base.tar" "$TB_IMAGE" || {
		FB_WHY="docker save of $TB_IMAGE on h1 failed"; return 1; }
	fb_k=2 fb_jobs=""
	while [ $fb_k -le "$FB_N" ]; do
		fb_docker $fb_k load -q -i "$FB_DATA/base.tar" >/dev/null &
		fb_jobs="$fb_jobs $!"
		fb_k=$((fb_k + 1))
	done
	fb_rc=0
	for fb_j in $fb_jobs; do wait "$fb_j" || fb_rc=1; done
	rm -f "$FB_DATA/base.tar"
	[ $fb_rc = 0 ] || FB_WHY="docker load of $TB_IMAGE failed"
	return $fb_rc
}

fleetbed_start() {
	FB_WHY=""
	case ${1:-} in [1-9]) ;; *) FB_WHY="fleetbed_start N: N from 1 to 9, not '${1:-}'"; return 1 ;; esac
	fb_want=$1
	shift
	fb_bed=${0##*/}
	fb_bed=${fb_bed%.sh} fb_reg=1 fb_img=1
	while [ $# -gt 0 ]; do
		case $1 in
		--name) fb_bed=${2:-}; shift ;;
		--no-registry) fb_reg=0 ;;
		--no-image) fb_img=0 ;;
		*) FB_WHY="fleetbed_start: unknown option $1"; return 1 ;;
		esac
		shift
	done
	fb_name "$fb_bed" || return 1
	fb_check || return $?
	# A bed of this name left by a crashed run.
	if [ -e "$FB_RUN" ] || [ -e "$FB_DATA" ]; then
		fb_say "a bed $FB_BED was left behind: stopping it first"
		fleetbed_stop
	fi
	FB_N=$fb_want
	export FB_N FB_REGISTRY
	mkdir -p "$FB_RUN" "$FB_DATA" && chmod 755 "$FB_RUN" "$FB_DATA" || {
		FB_WHY="cannot make $FB_RUN and $FB_DATA"; return 1; }
	echo "$FB_N" >"$FB_RUN/hosts"

	# The bridge, in a namespace of its own.
	fb_netns_make "$FB_RUN/br.netns" || return $?
	PATH=$PATH:$TB_PATH nsenter --net="$FB_RUN/br.netns" \
		ip link add br0 type bridge forward_delay 0 stp_state 0 || {
		FB_WHY="cannot make a bridge (the kernel's bridge module?)"; return 2; }
	PATH=$PATH:$TB_PATH nsenter --net="$FB_RUN/br.netns" ip link set br0 up || return 1

	if [ $fb_reg = 1 ]; then
		mkdir -p "$FB_RUN/reg" &&
			fb_netns_make "$FB_RUN/reg/netns" || return $?
		fb_join vreg "$FB_RUN/reg/netns" "${FB_REGISTRY%:*}" || return $?
		fb_registry_start || { FB_WHY="cannot start docker-registry"; return 1; }
	fi

	fb_k=1
	while [ $fb_k -le "$FB_N" ]; do
		mkdir -p "$FB_RUN/h$fb_k" "$FB_DATA/h$fb_k" &&
			fb_netns_make "$FB_RUN/h$fb_k/netns" || return $?
		fb_join "vh$fb_k" "$FB_RUN/h$fb_k/netns" "$(fb_ip $fb_k)" || return $?
		eval "FB_IP_$fb_k=\$(fb_ip $fb_k) FB_URL_$fb_k=\$(fb_url $fb_k)"
		eval "FB_DOCKER_HOST_$fb_k=\$(fb_docker_host $fb_k)"
		export "FB_IP_$fb_k" "FB_URL_$fb_k" "FB_DOCKER_HOST_$fb_k"
		# Proxies unset: the registry is reached directly.
		( unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
		  tb_dockerd_start "$FB_RUN/h$fb_k" "$FB_DATA/h$fb_k" \
			--cgroup-parent "fleetbed-$FB_BED-h$fb_k" \
			--insecure-registry "$FB_REGISTRY" ) || {
			FB_WHY="cannot start dockerd for h$fb_k"; return 1; }
		fb_k=$((fb_k + 1))
	done
	# The engines start side by side; meanwhile the registry.
	if [ $fb_reg = 1 ]; then fb_registry_wait || return 1; fi
	fb_k=1
	while [ $fb_k -le "$FB_N" ]; do
		tb_dockerd_wait "$FB_RUN/h$fb_k" || {
			FB_WHY="the engine of h$fb_k did not answer (its log is above)"; return 1; }
		fb_k=$((fb_k + 1))
	done
	tb_client "$(fb_docker_host 1)" || {
		FB_WHY="no docker client talks to the engine of h1"; return 1; }
	if [ $fb_img = 1 ]; then fb_image || return 1; fi
	return 0
}

fleetbed_need() {
	fleetbed_start "$@"
	case $? in
	0) return 0 ;;
	2) skip_all "no fleet test bed: $FB_WHY" ;;
	*) bail_out "the fleet test bed failed to start: $FB_WHY" ;;
	esac
}

# fb_serve_pid K: the pid of host K's serve while it runs (its command line
# names its unix socket: a reused pid or a zombie does not count).
fb_serve_pid() {
	fb_sp=$(cat "$FB_RUN/h$1/serve.pid" 2>/dev/null) || return 1
	case $fb_sp in '' | *[!0-9]*) return 1 ;; esac
	case $(fb_cmdline "$fb_sp") in *" unix:$FB_RUN/h$1/serve.sock "*) echo "$fb_sp" ;; *) return 1 ;; esac
}

fleetbed_serve() {
	fb_k=$1
	shift
	fb_h=$FB_RUN/h$fb_k fb_d=$FB_DATA/h$fb_k
	[ -S "$fb_h/docker.sock" ] || { fb_say "no host h$fb_k in bed ${FB_BED:-?}"; return 1; }
	if fb_serve_pid "$fb_k" >/dev/null; then
		fb_say "the serve of h$fb_k runs already"; return 1
	fi
	mkdir -p "$fb_d/root" "$fb_d/spool" && chmod 755 "$fb_d/root" || return 1
	fb_bin=${S:-${SBXCAT:-}}
	[ -n "$fb_bin" ] || { fb_say "fleetbed_serve: \$S or \$SBXCAT must name sbxcat"; return 1; }
	fb_cat=${FB_CAT:-${CAT:-}}
	# The hosts' namespaces have their own loopback: a database on the
	# machine's is out of their reach (the PostgreSQL test-bed's socket,
	# a file, is not).
	case ${SBXCAT_DATABASE_URL:-} in
	*127.0.0.1* | *localhost* | *'[::1]'*)
		fb_say "SBXCAT_DATABASE_URL names the loopback, which h$fb_k's namespace cannot reach: use a unix socket (tests/pgbed.sh's)" ;;
	esac
	(
		DOCKER_HOST=unix://$fb_h/docker.sock
		SANDBOXD_WORKSPACE_ROOT=$fb_d/root SBXCAT_SPOOL_DIR=$fb_d/spool
		SBXCAT_DEPLOYMENT_ID=${SBXCAT_DEPLOYMENT_ID:-fb-$FB_BED}
		export DOCKER_HOST SANDBOXD_WORKSPACE_ROOT SBXCAT_SPOOL_DIR SBXCAT_DEPLOYMENT_ID
		if [ "${FB_FLEET:-1}" = 0 ]; then
			unset SBXCAT_FLEET SBXCAT_FLEET_URL
		else
			SBXCAT_FLEET=h$fb_k SBXCAT_FLEET_URL=$(fb_url "$fb_k")
			export SBXCAT_FLEET SBXCAT_FLEET_URL
		fi
		unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
		# nsenter execs serve (no fork for a network namespace): $! is
		# serve's own pid.
		PATH=$PATH:$TB_PATH exec nsenter --net="$fb_h/netns" \
			"$fb_bin" ${fb_cat:+-C "$fb_cat"} serve \
			--listen "tcp:$(fb_ip "$fb_k"):$FB_PORT" --listen "unix:$fb_h/serve.sock" "$@"
	) </dev/null >>"$fb_h/serve.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	fb_sp=$!
	echo "$fb_sp" >"$fb_h/serve.pid"
	eval "FB_SPID_$fb_k=$fb_sp"
	fb_n=0 fb_lim=$((${FB_SERVE_WAIT:-20} * 10))
	while [ $fb_n -lt $fb_lim ]; do
		curl -sf --max-time 2 --unix-socket "$fb_h/serve.sock" http://x/healthz \
			>/dev/null 2>&1 && return 0
		[ $fb_n -gt 5 ] && ! fb_serve_pid "$fb_k" >/dev/null && break
		sleep 0.1
		fb_n=$((fb_n + 1))
	done
	fb_say "the serve of h$fb_k did not answer on $fb_h/serve.sock; $fb_h/serve.log ends:"
	tail -n 8 "$fb_h/serve.log" >&2
	return 1
}

# fb_serve_end K SIGNAL WAIT: send SIGNAL to host K's serve, wait up to
# WAIT seconds, then SIGKILL; reap it (FB_SERVE_STATUS) when ours.
fb_serve_end() {
	FB_SERVE_STATUS=""
	fb_sp=$(fb_serve_pid "$1") || {
		# Exited already: still reap a child of ours.
		fb_sp=$(cat "$FB_RUN/h$1/serve.pid" 2>/dev/null) &&
			case $fb_sp in '' | *[!0-9]*) ;; *) wait "$fb_sp" 2>/dev/null; FB_SERVE_STATUS=$? ;; esac
		rm -f "$FB_RUN/h$1/serve.pid"
		return 0; }
	kill -CONT "$fb_sp" 2>/dev/null
	kill "-$2" "$fb_sp" 2>/dev/null
	fb_n=0
	while fb_serve_pid "$1" >/dev/null; do
		if [ $fb_n -ge $(($3 * 10)) ]; then
			fb_say "the serve of h$1 ($fb_sp) outlived SIG$2 by $3 s: SIGKILL"
			kill -KILL "$fb_sp" 2>/dev/null
			fb_n=0
			set -- "$1" KILL 5
			continue
		fi
		sleep 0.1
		fb_n=$((fb_n + 1))
	done
	wait "$fb_sp" 2>/dev/null
	FB_SERVE_STATUS=$?
	rm -f "$FB_RUN/h$1/serve.pid"
}
fleetbed_serve_stop() { fb_serve_end "$1" TERM "${FB_STOP_WAIT:-15}"; }
fleetbed_serve_kill() { fb_serve_end "$1" KILL 5; }

fleetbed_logs() {
	for fb_l in "$FB_RUN"/h[0-9]/*.log "$FB_RUN"/reg/*.log; do
		[ -s "$fb_l" ] || continue
		echo "# ${fb_l#"$FB_RUN"/}:"
		tail -n "${1:-20}" "$fb_l" | sed 's/^/#   /'
	done
}

# fb_cgroup_rm NAME: the cgroup parent NAME's directories (empty once the
# containers are gone), v1 and v2.
fb_cgroup_rm() {
	for fb_cg in /sys/fs/cgroup/"$1" /sys/fs/cgroup/*/"$1"; do
		[ -d "$fb_cg" ] || continue
		# Children first (a leftover container's, say).
		find "$fb_cg" -depth -type d -exec rmdir {} + 2>/dev/null
	done
}

fleetbed_stop() {
	[ -n "${FB_RUN:-}" ] && [ -n "${FB_DATA:-}" ] || return 0
	[ -e "$FB_RUN" ] || [ -e "$FB_DATA" ] || return 0
	fb_hosts=""
	for fb_h in "$FB_RUN"/h[0-9] "$FB_DATA"/h[0-9]; do
		[ -d "$fb_h" ] || continue
		case " $fb_hosts " in *" ${fb_h##*/h} "*) ;; *) fb_hosts="$fb_hosts ${fb_h##*/h}" ;; esac
	done
	# The serves, side by side: SIGTERM, 5 s, SIGKILL.
	for fb_k in $fb_hosts; do
		fb_sp=$(fb_serve_pid "$fb_k") && kill -TERM "$fb_sp" 2>/dev/null
	done
	for fb_k in $fb_hosts; do fb_serve_end "$fb_k" TERM 5; done
	# Each engine: its containers removed at once (a SIGTERM'd engine
	# would give each 15 s), then stopped (testbed.sh's), side by side.
	fb_jobs=""
	for fb_k in $fb_hosts; do
		(
			fb_s=$FB_RUN/h$fb_k/docker.sock
			if [ -S "$fb_s" ] && tb_ping "unix://$fb_s"; then
				# shellcheck disable=SC2046
				fb_ids=$(curl -s --max-time 10 --unix-socket "$fb_s" \
					'http://x/containers/json?all=1' | grep -o '"Id":"[0-9a-f]*"' | cut -d'"' -f4)
				for fb_id in $fb_ids; do
					curl -s --max-time 20 --unix-socket "$fb_s" -X DELETE \
						"http://x/containers/$fb_id?force=1&v=1" >/dev/null
				done
			fi
			tb_dockerd_stop "$FB_RUN/h$fb_k" "$FB_DATA/h$fb_k" >/dev/null 2>&1 ||
				tb_dockerd_stop "$FB_RUN/h$fb_k" "$FB_DATA/h$fb_k"
		) &
		fb_jobs="$fb_jobs $!"
	done
	for fb_j in $fb_jobs; do wait "$fb_j"; done
	# Whatever still runs with the bed's paths (the registry, a shim, an
	# engine that lost its pidfile): SIGTERM, 3 s, SIGKILL.
	fb_n=0
	while [ $fb_n -lt 50 ]; do
		fb_left=$(fb_pids "$FB_RUN/"; fb_pids "$FB_DATA/")
		[ -n "$fb_left" ] || break
		if [ $fb_n -lt 30 ]; then
			# shellcheck disable=SC2086
			kill -TERM $fb_left 2>/dev/null
		else
			# shellcheck disable=SC2086
			kill -KILL $fb_left 2>/dev/null
		fi
		sleep 0.1
		fb_n=$((fb_n + 1))
	done
	# Mounts (the namespaces' binds, data roots, container mounts), the
	# cgroup parents, the dirs.  The namespaces go with their last
	# reference, and with them the veths and the bridge.
	for fb_m in $(tb_mounts_under "$FB_RUN" "$FB_DATA"); do
		PATH=$PATH:$TB_PATH umount -l "$fb_m" 2>/dev/null
	done
	for fb_k in $fb_hosts; do fb_cgroup_rm "fleetbed-$FB_BED-h$fb_k"; done
	rm -rf "$FB_RUN" "$FB_DATA"
	[ ! -e "$FB_RUN" ] && [ ! -e "$FB_DATA" ] || {
		fb_say "could not remove $FB_RUN or $FB_DATA"; return 1; }
	return 0
}

# As a script: start a bed and print how to reach it, stop one, stop all
# (after a crashed run), or list them.
case ${0##*/} in
fleetbed.sh)
	: "${srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
	# shellcheck source=tests/testbed.sh
	. "$srcdir/tests/testbed.sh"
	case ${1:-} in
	start)
		fleetbed_start "${2:-}" --name "${3:-fleetbed}" || { fb_say "$FB_WHY"; fleetbed_stop; exit 1; }
		k=1
		while [ $k -le "$FB_N" ]; do
			echo "h$k: ip $(fb_ip $k), DOCKER_HOST=$(fb_docker_host $k), netns $(fb_netns $k)"
			k=$((k + 1))
		done
		echo "registry: $FB_REGISTRY; stop: sh $0 stop $FB_BED" ;;
	stop)
		fb_name "${2:-}" || { fb_say "usage: sh $0 stop BED ($FB_WHY)"; exit 2; }
		fleetbed_stop ;;
	stop-all)
		rc=0
		for b in "$FB_BASE_RUN"/* "$FB_BASE_DATA"/*; do
			[ -d "$b" ] || continue
			fb_name "${b##*/}" && fleetbed_stop || rc=1
		done
		exit $rc ;;
	status)
		for b in "$FB_BASE_RUN"/*; do
			[ -d "$b" ] && echo "${b##*/}: $(cat "$b/hosts" 2>/dev/null) hosts"
		done ;;
	*) echo "usage: sh $0 start N [BED] | stop BED | stop-all | status" >&2; exit 2 ;;
	esac ;;
esac

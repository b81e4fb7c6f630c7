# tests/sessionbed.sh - what t-session.sh and t-exec.sh share: the engine,
# a workspace root and a deployment of the test's own, a catalogue FROM the
# test-bed's base image, and the helpers that read a session back from the
# engine and from the host (docs/sessions.md, CLI.md of issue 8).
#
#   . "$srcdir/tests/tap.sh"; . "$srcdir/tests/testbed.sh"
#   . "$srcdir/tests/sessionbed.sh"
#   sb_init t-session ts       # skips the whole test when there is no engine
#
# After sb_init: $S (sbxcat), $T (the test's temporary directory, also the
# current directory), $ROOT (SANDBOXD_WORKSPACE_ROOT), $DEP
# (SBXCAT_DEPLOYMENT_ID, unique to this run), $sfx, $CAT (the catalogue)
# and its runtimes:
#   $RA      base_image sbxcat-test/busybox:1 with env SBX_T=tv-$sfx (built;
#            the first, so the default), memory the service default
#   $RSMALL  image sbxcat-test/busybox:1, mem_limit 64m
#   $RNET    image sbxcat-test/busybox:1, mem_limit 96m, needs_network
#   $RNOSLEEP image sbxcat/PREFIX-nosleep-$sfx:1 (made by sb_nosleep_image)
# Everything the test made is removed at exit: every container labelled
# io.sbxcat.deployment=$DEP, the names in $sb_names, the networks in
# $sb_networks, the images named after $sfx, and $T.
#
# The variables set here are the sourcing test's to use:
# shellcheck disable=SC2034

# sb_init NAME PREFIX
sb_init() {
	S=${SBXCAT:?SBXCAT must name the built binary}
	command -v jq >/dev/null || skip_all "jq is missing (apt-get install jq): the JSON output cannot be read"
	testbed_docker || skip_all "no Docker engine could be reached or started (reason above)"
	testbed_base_image || skip_all "no base image sbxcat-test/busybox:1 (reason above)"
	[ "$(id -u)" = 0 ] || skip_all "sessions need root: the workspace root must be root's and workspaces are given to uid 10001"

	sb_t0=$(date +%s)
	sfx=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	T=$(mktemp -d) || exit 1
	ROOT=$T/root
	DEP=$1-$$
	RA=$2-a-$sfx RSMALL=$2-small-$sfx RNET=$2-net-$sfx RNOSLEEP=$2-nosleep-$sfx
	NOSLEEP_IMAGE=sbxcat/$RNOSLEEP:1
	CAT=$T/cat.json
	sb_names="" sb_networks=""
	trap sb_cleanup EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir "$ROOT" && chmod 755 "$ROOT" || exit 1
	cd "$T" || exit 1

	# Only what the test sets: nothing of the caller's environment.
	unset SBXCAT_CATALOG SBXCAT_ENGINE_TRACE SBXCAT_KEY_SECRET \
		SBXCAT_KEY_SECRET_FILE SBXCAT_TENANT SBXCAT_SESSION_NETWORK \
		SANDBOXD_PERSIST_CONTAINERS SANDBOXD_EXECUTE_TIMEOUT \
		SANDBOXD_MAX_OUTPUT_BYTES SANDBOXD_MEM_LIMIT SANDBOXD_SANDBOX_UID
	# The audit: the spool alone, in the test's own directory (never
	# /var/spool/sbxcat, never a database of the caller's); t-audit-e2e.sh
	# sets its own database.
	unset SBXCAT_DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER \
		PGSERVICE PGSERVICEFILE SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT
	SBXCAT_SPOOL_DIR=$T/spool
	export SBXCAT_SPOOL_DIR
	SANDBOXD_WORKSPACE_ROOT=$ROOT SBXCAT_DEPLOYMENT_ID=$DEP
	# Room for every session a test opens; the quota checks set their own.
	SANDBOXD_MAX_SESSIONS=100 SANDBOXD_MAX_SESSIONS_PER_TENANT=100
	export SANDBOXD_WORKSPACE_ROOT SBXCAT_DEPLOYMENT_ID SANDBOXD_MAX_SESSIONS \
		SANDBOXD_MAX_SESSIONS_PER_TENANT

	cat >"$CAT" <<JSON
[
  {"alias": "$RA", "description": "built from the test-bed base",
   "base_image": "sbxcat-test/busybox:1", "env_vars": {"SBX_T": "tv-$sfx"}},
  {"alias": "$RSMALL", "description": "64m of memory", "image": "sbxcat-test/busybox:1",
   "mem_limit": "64m"},
  {"alias": "$RNET", "description": "with a network", "image": "sbxcat-test/busybox:1",
   "mem_limit": "96m", "needs_network": true},
  {"alias": "$RNOSLEEP", "description": "busybox without its applet links",
   "image": "$NOSLEEP_IMAGE"}
]
JSON
	"$S" -C "$CAT" check >/dev/null || { diag "the test catalogue is invalid"; exit 1; }
}

# sb_done: the plan, with the wall time (the budget is about 90 s on 2 cores).
sb_done() {
	diag "wall time: $(($(date +%s) - sb_t0)) s"
	done_testing
}

sb_cleanup() {
	# shellcheck disable=SC2046,SC2086
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP") \
		$sb_names >/dev/null 2>&1
	for sb_n in $sb_networks; do tb_docker network rm "$sb_n" >/dev/null 2>&1; done
	testbed_remove_mine "$sfx"
	[ -n "${T:-}" ] && rm -rf "$T"
}

# bounded ARGS...: sbxcat on the test's catalogue, killed (status 137, so
# never mistaken for its own 124) if it runs past 60 s: a deadline sbxcat
# fails to enforce must fail the test, not hang it.
bounded() { timeout -s KILL 60 "$S" -C "$CAT" "$@"; }
# sbx ARGS...: bounded, status in $rc, stdout in $T/out, stderr in $T/err.
sbx() {
	bounded "$@" >"$T/out" 2>"$T/err"
	rc=$?
}
out() { cat "$T/out"; }
# stderr without the "hint:" lines that follow some errors (checked apart);
# -a: a message may quote bytes that are not UTF-8 (getopt quotes them raw).
err() { grep -av '^hint: ' "$T/err"; }

# open_s TENANT SCOPE SUBJECT [OPTIONS...]: session open (of $RA unless
# OPTIONS say --runtime); the key in $key, the status in $rc.
open_s() {
	os_t=$1 os_s=$2 os_j=$3
	shift 3
	case " $* " in *" --runtime "*) ;; *) set -- --runtime "$RA" "$@" ;; esac
	sbx session open --tenant "$os_t" --scope "$os_s" --subject "$os_j" "$@"
	key=""
	[ $rc -eq 0 ] && case " $* " in
	*" --json "*) key=$(jq -r .key "$T/out") ;;
	*) key=$(out) ;;
	esac
}

# The engine's view of a session.
ctr() { echo "sbxcat-$DEP-$1"; }
insp() { tb_docker inspect -f "$2" "$(ctr "$1")" 2>/dev/null; }
state() { insp "$1" '{{.State.Status}}'; }
# ndep [FILTER...]: how many containers of this deployment (any state).
ndep() {
	tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP" "$@" | wc -l | tr -d ' '
}
# nrunning: this deployment's containers the quotas count.
nrunning() {
	{ tb_docker ps -q --filter "label=io.sbxcat.deployment=$DEP" --filter status=running
	  tb_docker ps -q --filter "label=io.sbxcat.deployment=$DEP" --filter status=paused
	  tb_docker ps -q --filter "label=io.sbxcat.deployment=$DEP" --filter status=restarting
	} | wc -l | tr -d ' '
}
ws() { echo "$ROOT/$1/workspace"; }

# cgfile KEY CONTROLLER FILE: the path of FILE in the container's cgroup
# of CONTROLLER (pids, memory), cgroup v1 or v2, seen from the host.
cgfile() {
	cg_pid=$(insp "$1" '{{.State.Pid}}')
	cg_path=$(awk -F: -v c="$2" '$2 == c { print $3 }' "/proc/$cg_pid/cgroup")
	if [ -n "$cg_path" ]; then
		echo "/sys/fs/cgroup/$2$cg_path/$3"
	else
		echo "/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' "/proc/$cg_pid/cgroup")/$3"
	fi
}

# cgdir KEY: the container's cgroup2 directory seen from the host (where
# exec makes its groups, procs.h), else its v1 freezer one.
cgdir() {
	cg_pid=$(insp "$1" '{{.State.Pid}}')
	cg_path=$(awk -F: '$1 == "0" { print $3 }' "/proc/$cg_pid/cgroup")
	cg_mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -n "$cg_path" ] && [ "$cg_path" != / ] && [ -n "$cg_mnt" ]; then
		echo "$cg_mnt$cg_path"
	else
		echo "/sys/fs/cgroup/freezer$(awk -F: '$2 == "freezer" { print $3 }' "/proc/$cg_pid/cgroup")"
	fi
}

# sb_exec_path KEY: which path sbxcat exec took for a command in KEY,
# "engine" or "fast", as the host sees it: the engine's command is a child
# of its shim (SBXCAT_EXEC_PATH, docs/sessions.md).
sb_exec_path() {
	sb_arg=4$(od -An -N3 -tu4 /dev/urandom | tr -d ' \n')
	timeout -s KILL 60 "$S" -C "$CAT" exec "$1" --timeout 20 -- sleep "$sb_arg" </dev/null >/dev/null 2>&1 &
	sb_xp=$! sb_n=0 sb_hp=""
	while [ -z "$sb_hp" ] && [ $sb_n -lt 100 ]; do
		sb_hp=$(pgrep -f "^sleep $sb_arg\$") || sleep 0.1
		sb_n=$((sb_n + 1))
	done
	sb_pp=$(ps -o ppid= -p "$sb_hp" 2>/dev/null | tr -d ' ')
	case $(ps -o comm= -p "${sb_pp:-0}" 2>/dev/null) in
	containerd-shim*) echo engine ;;
	"") echo unknown ;;
	*) echo fast ;;
	esac
	kill "$sb_hp" 2>/dev/null
	wait "$sb_xp" 2>/dev/null
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# lt A B: is the number A below B?
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# sb_nosleep_image: an image holding /bin/busybox and nothing else (no
# applet links, so neither /bin/sleep nor /bin/sh), as $NOSLEEP_IMAGE.
sb_nosleep_image() {
	ns_dir=$T/nosleep
	mkdir -p "$ns_dir/bin" && cp /bin/busybox "$ns_dir/bin/" &&
		tar -C "$ns_dir" --owner=0 --group=0 --numeric-owner -c . |
		tb_docker import - "$NOSLEEP_IMAGE" >/dev/null
}

KEY_RE='^xc-[a-z0-9]{1,8}-(run|conversation|channel|user|agent)-[a-z2-7]{26}$'
RFC3339_RE='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$'

# The reaper's tests (t-reap.sh, t-pause.sh): records re-stamped, the
# race with ROOT/KEY's lock held open, a pass beside a running command.
# sb_stamp KEY T: the record's last_activity set to T, atomically, as root.
sb_stamp() {
	jq -c --argjson t "$2" '.last_activity = $t' "$ROOT/$1/session.json" >"$ROOT/$1/.stamp" &&
		mv "$ROOT/$1/.stamp" "$ROOT/$1/session.json"
}
# sb_hold KEY: ROOT/KEY's flock held by a child until sb_release.
sb_hold() {
	rm -f "$T/held" "$T/release"
	sb_ino=$(stat -c %i "$ROOT/$1")
	flock "$ROOT/$1" sh -c "touch '$T/held'; while [ ! -e '$T/release' ]; do sleep 0.05; done" &
	sb_holder=$!
	sb_n=0
	while [ ! -e "$T/held" ] && [ $sb_n -lt 100 ]; do sleep 0.05; sb_n=$((sb_n + 1)); done
}
# sb_blocked: 0 once a waiter is blocked on sb_hold's lock (/proc/locks),
# within 10 s.
sb_blocked() {
	sb_n=0
	while [ $sb_n -lt 200 ]; do
		grep -q -- "-> FLOCK .*:$sb_ino " /proc/locks && return 0
		sleep 0.05
		sb_n=$((sb_n + 1))
	done
	return 1
}
sb_release() { touch "$T/release"; wait "$sb_holder"; }
# sb_exec_started KEY: wait (5 s at most) until one exec's command runs:
# a process in one of the container's exec groups (either way of starting
# it, docs/sessions.md "How a command is started": the fast way has no
# exec of the engine's to show).
sb_exec_started() {
	sb_d=$(cgdir "$1")
	sb_n=0
	while [ $sb_n -lt 100 ]; do
		# (A cgroup file's size is 0 to stat: it is read.)
		for sb_g in "$sb_d"/sbxcat-exec-*; do
			[ -n "$(cat "$sb_g/cgroup.procs" 2>/dev/null)" ] && return 0
		done
		sleep 0.05
		sb_n=$((sb_n + 1))
	done
	return 1
}
# sb_idle_busy KEY AGE DESC: KEY stamped AGE seconds ago, a pass now
# (`sbxcat reap --now`); DESC: the pass leaves it alone for its running
# command.  The time in $N.  An exec stamps the record once its command
# is claimed, which may land after this stamp: the pass then rightly says
# it became active (the stamp landed while it planned) or does not name
# the session at all (it landed before: the session was not idle), and
# the stamp is made again.
sb_idle_busy() {
	sb_n=0
	while :; do
		N=$(date +%s)
		sb_stamp "$1" $((N - $2))
		sbx reap --now "$N"
		{ grep -qx "$1 became active during the pass; left alone" "$T/out" ||
			! grep -q "$1" "$T/out"; } && [ $sb_n -lt 5 ] || break
		sb_n=$((sb_n + 1))
		sleep 0.2
	done
	grep -qx "$1 has a command running (exec); left alone" "$T/out"
	ok $? "$3" || diag "the pass said: $(cat "$T/out" "$T/err")"
}

# The service's tests (t-pause.sh, t-hibernate.sh): `sbxcat serve` on a
# unix socket, spoken to with curl.
# sb_serve_stop: the service $SPID killed and waited for (so nothing of
# it holds its socket when the next starts); SPID emptied.
sb_serve_stop() {
	[ -n "${SPID:-}" ] && kill -KILL "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
	SPID=""
}
# sb_serve_wait SOCK: until /healthz answers on unix:SOCK (10 s at most).
sb_serve_wait() {
	sb_n=0
	while [ $sb_n -lt 100 ] && ! curl -sf --unix-socket "$1" http://x/healthz >/dev/null 2>&1; do
		sleep 0.1
		sb_n=$((sb_n + 1))
	done
}
# sb_wire_key ID: the key of the wire's session ID, as the host knows it
# (ROOT/KEY/wire.json names the id): the wire never says it (issue 28).
sb_wire_key() {
	for sb_wf in "$ROOT"/*/wire.json; do
		[ "$(jq -r .id "$sb_wf" 2>/dev/null)" = "$1" ] || continue
		sb_wf=${sb_wf%/wire.json}; echo "${sb_wf##*/}"; return 0
	done
	return 1
}

# sb_wire METHOD PATH [BODY [TOKEN]]: a request to the service on $SOCK
# with TOKEN ($TOKEN by default); the response body in $T/w, the status in
# $st.
sb_wire() {
	st=$(curl -s -o "$T/w" -w '%{http_code}' --unix-socket "$SOCK" -X "$1" \
		-H "X-Sandbox-Token: ${4:-$TOKEN}" -H 'Content-Type: application/json' \
		${3:+--data "$3"} "http://x$2")
}

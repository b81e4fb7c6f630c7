#!/bin/sh
# t-deploy-fleet.sh - the fleet's deployment (docs/fleet.md, "Deployment"):
#
# 1. the Swarm stack file, as docker-compose reads it: a global service;
#    the Docker socket, the workspace root and the spool bind-mounted at
#    the same path on the node and in the container; no option that
#    `docker stack deploy` ignores (a hardening claimed and not had); no
#    secret in the environment; every variable it sets documented in
#    docs/fleet.md; and the checker itself catches a copy with unequal
#    paths and one claiming security_opt;
# 2. the systemd drop-in with the unit, through `systemd-analyze verify`
#    (the commands pointed at the built sbxcat), and the drop-in's
#    promises: ordering, EnvironmentFile, Restart=always, and no setting
#    that makes a mount namespace;
# 3. a real Swarm: a private dockerd of this test's own in a network
#    namespace of its own (never the test-bed's engine, never the
#    system's), `docker swarm init`, the image made by
#    contrib/fleet/mkimage.sh (docker import), the shipped stack deployed
#    with its paths moved under the test's directory and a small override;
#    then the service is global with one task running, the task and the
#    serve container it made have the socket, root and spool at equal
#    paths, serve runs in the host's PID namespace with its secrets as
#    files (0400, not in its environment), answers /healthz on the node's
#    port, opens a session and runs an exec in it (which needs the host's
#    PID namespace and cgroups: the reason serve is not the task itself),
#    and its audit row reaches the database named by the libpq service
#    file secret; sbxcat-node refuses a disk budget and a missing root;
#    `docker stack rm` stops serve and removes its container.
#
# Everything is removed in the EXIT trap: the stack, the swarm, the
# engine (its mounts and namespace), the test's database and directory.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
. "$srcdir/tests/pgbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
STACK=$srcdir/contrib/fleet/sbxcat-stack.yml
UNIT=$srcdir/contrib/sbxcat-serve.service
DROPIN=$srcdir/contrib/systemd/sbxcat-serve.service.d/fleet.conf
DOC=$srcdir/docs/fleet.md
t0=$(date +%s)

T=$(mktemp -d /tmp/sbxcat-deploy-fleet.XXXXXX)
chmod 755 "$T"
sfx=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
R=$T/run D=$T/data DB=t_deploy_fleet_$sfx
STACKNAME=fleet$sfx NODE=sbxcat-serve-$sfx
dbmade=""
engine=""
cleanup() {
	if [ -n "$engine" ]; then
		d() { DOCKER_HOST=unix://$R/docker.sock "$DOCKER" "$@"; }
		d stack rm "$STACKNAME" >/dev/null 2>&1
		d swarm leave --force >/dev/null 2>&1
		# shellcheck disable=SC2046
		d rm -f $(d ps -aq) >/dev/null 2>&1
		tb_dockerd_stop "$R" "$D"
	fi
	[ -n "$dbmade" ] && pgbed_dropdb "$DB" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# ---------------------------------------------------------------- 1. compose
DC=$(command -v docker-compose) || DC=""
PY=""
if [ -n "$DC" ]; then
	# docker-compose 1.x is Python with PyYAML; else python3 for the YAML.
	PY=$(sed -n '1s/^#! *\([^ ]*\).*/\1/p' "$DC")
	if [ -z "$PY" ] || ! "$PY" -c 'import yaml' 2>/dev/null; then
		PY=python3
		"$PY" -c 'import yaml' 2>/dev/null || PY=""
	fi
fi
cat >"$T/facts.py" <<'EOF'
# The facts of a stack as `docker-compose config` wrote it (stdin), one a
# line: what the test asserts.
import re, sys, yaml
cfg = yaml.safe_load(sys.stdin)
svc = cfg["services"]["serve"]
env = svc.get("environment") or {}
if isinstance(env, list):
    env = dict(e.split("=", 1) for e in env)
print("mode", (svc.get("deploy") or {}).get("mode"))
print("restart", ((svc.get("deploy") or {}).get("restart_policy") or {}).get("condition"))
binds = {}
for v in svc.get("volumes") or []:
    if isinstance(v, str):
        src, _, rest = v.partition(":")
        v = {"type": "bind", "source": src, "target": rest.split(":")[0]}
    if v.get("type") == "bind":
        binds[v["target"]] = v["source"]
sock = env.get("DOCKER_HOST", "unix:///var/run/docker.sock")[len("unix://"):]
for what, path in (("socket", sock), ("root", env.get("SANDBOXD_WORKSPACE_ROOT")),
                   ("spool", env.get("SBXCAT_SPOOL_DIR", "/var/spool/sbxcat"))):
    print(what, "same" if path in binds and binds[path] == path else
          "MISSING" if path not in binds else "UNEQUAL:%s->%s" % (binds[path], path))
print("unequal", " ".join(sorted(t for t, s in binds.items() if s != t)) or "none")
# What `docker stack deploy` ignores (20.10: "Ignoring unsupported
# options"; pid, privileged, devices, security_opt measured): claiming one
# claims a hardening the node never applies.
ignored = ["security_opt", "pid", "privileged", "devices", "network_mode",
           "userns_mode", "cgroup_parent", "restart", "ipc", "shm_size",
           "links", "external_links", "build", "container_name"]
print("ignored", " ".join(k for k in ignored if k in svc) or "none")
print("secretenv", " ".join(k for k in env if re.search(
    r"TOKEN|PASSWORD|SECRET|^SBXCAT_DATABASE_URL$", k)) or "none")
modes = {s["source"]: s.get("mode") for s in svc.get("secrets") or [] if isinstance(s, dict)}
print("tokenmode", oct(modes.get("sbxcat_token") or 0))
print("fleet", env.get("SBXCAT_FLEET"))
print("fleeturl", env.get("SBXCAT_FLEET_URL"))
cmd = svc.get("command") or []
lis = [cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a == "--listen"]
print("listenport", ",".join(l.rsplit(":", 1)[1] for l in lis) or "none")
print("vars", " ".join(sorted(env)))
EOF
# facts FILE: the facts of the stack FILE, in $T/facts (1: compose refused it).
facts() {
	"$DC" -f "$1" config >"$T/config.yml" 2>"$T/config.err" &&
		"$PY" "$T/facts.py" <"$T/config.yml" >"$T/facts"
}
fact() { sed -n "s/^$1 //p" "$T/facts"; }

if [ -z "$DC" ] || [ -z "$PY" ]; then
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		skip "no docker-compose (apt-get install docker-compose) or no PyYAML" "the stack file's check $i"
	done
else
	facts "$STACK"
	ok $? "docker-compose config parses contrib/fleet/sbxcat-stack.yml"
	is "$(fact mode):$(fact restart)" "global:any" "a global service, restarted whatever ended it"
	is "$(fact socket) $(fact root) $(fact spool)" "same same same" \
		"the socket, the workspace root and the spool are bind-mounted at their node's paths"
	is "$(fact unequal)" none "no bind mount moves a path"
	is "$(fact ignored)" none "no option that docker stack deploy ignores (no hardening claimed and not had)"
	is "$(fact secretenv)" none "no token, password or database URL in the environment: they are secrets"
	is "$(fact tokenmode)" 0o400 "the token's secret is a file only its owner reads (serve refuses others)"
	is "$(fact fleet)" "{{.Node.Hostname}}" "SBXCAT_FLEET is the node's hostname (a Swarm template)"
	port=$(fact listenport)
	is "$(fact fleeturl)" "http://{{.Node.Hostname}}:$port" \
		"SBXCAT_FLEET_URL is the node's name and the port serve listens on ($port)"
	undoc=""
	for v in $(fact vars); do
		grep -q "\`$v\`" "$DOC" || undoc="$undoc $v"
	done
	is "${undoc:-none}" none "every variable the stack sets is documented in docs/fleet.md"
	# The checker catches what it is there for (on the YAML itself: compose
	# would only write it back).
	sed 's|^\(        target: \)/srv/sbxcat/workspaces$|\1/workspaces|' "$STACK" >"$T/bad1.yml"
	"$PY" "$T/facts.py" <"$T/bad1.yml" >"$T/facts"
	is "$(fact root)" "MISSING" "a copy whose root is mounted elsewhere in the container is caught"
	sed 's|^    stop_grace_period:|    security_opt: ["no-new-privileges:true"]\n&|' "$STACK" >"$T/bad2.yml"
	"$PY" "$T/facts.py" <"$T/bad2.yml" >"$T/facts"
	is "$(fact ignored)" "security_opt" "a copy claiming security_opt (which Swarm ignores) is caught"
fi

# ---------------------------------------------------------------- 2. systemd
U=$T/units
mkdir -p "$U/sbxcat-serve.service.d"
abs=$(cd "$(dirname "$S")" && pwd)/$(basename "$S")
sed "s|/usr/local/bin/sbxcat|$abs|g" "$UNIT" >"$U/sbxcat-serve.service"
sed "s|/usr/local/bin/sbxcat|$abs|g" "$DROPIN" >"$U/sbxcat-serve.service.d/fleet.conf"
if ! command -v systemd-analyze >/dev/null; then
	diag "SKIPPING systemd-analyze verify: systemd-analyze is not installed (apt-get install systemd)"
	skip "no systemd-analyze" "systemd-analyze verify accepts the unit with its fleet drop-in"
	skip "no systemd-analyze" "a drop-in with a bad directive is reported"
else
	SYSTEMD_UNIT_PATH=$U: systemd-analyze verify --man=no "$U/sbxcat-serve.service" \
		>"$T/verify.out" 2>&1
	rc=$?
	is "$rc:$(cat "$T/verify.out")" "0:" "systemd-analyze verify accepts the unit with its fleet drop-in, saying nothing"
	printf 'Restart=sometimes\n' >>"$U/sbxcat-serve.service.d/fleet.conf"
	SYSTEMD_UNIT_PATH=$U: systemd-analyze verify --man=no "$U/sbxcat-serve.service" \
		>"$T/verify.out" 2>&1
	grep -q 'fleet.conf:.*restart' "$T/verify.out"
	ok $? "a drop-in with a bad directive is reported (the check reads the drop-in)"
fi
# directive FILE KEY: the values of KEY= in FILE, one line, blank separated.
directive() { sed -n "s/^$2=//p" "$1" | tr '\n' ' ' | sed 's/ *$//'; }
after=$(directive "$DROPIN" After)
case " $after " in
*" docker.service "*) case " $after " in
	*" network-online.target "*) r=0 ;; *) r=1 ;; esac ;;
*) r=1 ;;
esac
ok $r "the drop-in orders serve after docker.service and network-online.target (After=$after)"
is "$(directive "$DROPIN" EnvironmentFile)" /etc/sbxcat/fleet.env "the fleet's settings come from /etc/sbxcat/fleet.env"
is "$(directive "$DROPIN" Restart):$(directive "$DROPIN" StartLimitIntervalSec)" "always:0" \
	"a fleet host is restarted whatever ended it, with no start limit"
# Every one of these sets up a mount namespace (systemd.exec(5)), which
# would hide a disk budget's mount from the engine; PrivateNetwork= would
# hide the fleet; MemoryDenyWriteExecute= would stop grep's PCRE2 JIT.
bad=""
for k in PrivateTmp ProtectSystem ProtectHome ProtectKernelTunables ProtectKernelModules \
	ProtectKernelLogs ProtectControlGroups ProtectHostname ProtectClock ProtectProc ProcSubset \
	PrivateDevices PrivateMounts PrivateNetwork ReadOnlyPaths ReadWritePaths InaccessiblePaths \
	TemporaryFileSystem BindPaths BindReadOnlyPaths RootDirectory RootImage MountAPIVFS \
	MemoryDenyWriteExecute DevicePolicy DynamicUser; do
	grep -q "^$k=" "$UNIT" "$DROPIN" && bad="$bad $k"
done
is "${bad:-none}" none "neither the unit nor the drop-in sets up a mount namespace (nor hides the network)"
undoc=""
for v in $(sed -n 's/^#\{0,1\}\([A-Z][A-Z_]*\)=.*/\1/p' "$srcdir/contrib/systemd/fleet.env"); do
	grep -q "\`$v\`" "$DOC" || undoc="$undoc $v"
done
is "${undoc:-none}" none "every variable of contrib/systemd/fleet.env is documented in docs/fleet.md"

# ---------------------------------------------------------------- 3. Swarm
swarm_skip() {
	diag "SKIPPING the real Swarm: $1"
	skip "$1" "a real Swarm runs the stack"
	diag "wall time: $(($(date +%s) - t0)) s"
	done_testing
}
[ "$(id -u)" = 0 ] || swarm_skip "not root: a private dockerd needs root"
for c in dockerd nsenter unshare ip curl jq busybox perl; do
	PATH=$TB_PATH command -v $c >/dev/null || swarm_skip "$c is missing"
done
tb_dockerd_start "$R" "$D" || swarm_skip "cannot start a private dockerd (reason above)"
engine=yes
tb_dockerd_wait "$R" || swarm_skip "the private dockerd did not answer (its log's end above)"
DOCKER_HOST=unix://$R/docker.sock
export DOCKER_HOST
tb_client "$DOCKER_HOST" || swarm_skip "no docker client speaks to the private engine"
N="nsenter --net=$R/netns"
# Swarm wants a non-loopback address to advertise: a veth pair inside the
# engine's own namespace (no dummy links in this kernel), an address only
# this namespace has.
{ PATH=$TB_PATH $N ip link add sw0 type veth peer name sw1 &&
	PATH=$TB_PATH $N ip addr add 10.251.7.1/24 dev sw0 &&
	PATH=$TB_PATH $N ip link set sw0 up && PATH=$TB_PATH $N ip link set sw1 up; } ||
	swarm_skip "cannot make a veth pair in the engine's namespace"
"$DOCKER" swarm init --advertise-addr 10.251.7.1 >"$T/init.out" 2>&1 ||
	swarm_skip "docker swarm init failed: $(tail -n 1 "$T/init.out")"
ok 0 "a one-node swarm on the private engine"
node=$("$DOCKER" info --format '{{.Name}}')
diag "swarm up at $(($(date +%s) - t0)) s"

# The images: the sessions' base, and sbxcat's with a catalogue of one
# runtime of that base.
diag "images at $(($(date +%s) - t0)) s"
(tb_import) || swarm_skip "cannot import the busybox base image"
cat >"$T/cat.json" <<'JSON'
[{"alias": "bb", "description": "the test's busybox", "image": "sbxcat-test/busybox:1"}]
JSON
IMG=sbxcat-fleet-test:$sfx
sh "$srcdir/contrib/fleet/mkimage.sh" -C "$T/cat.json" "$S" "$IMG" >"$T/mkimage.out" 2>&1
ok $? "contrib/fleet/mkimage.sh makes the image with docker import" || sed "s/^/# /" "$T/mkimage.out"

# The database: the test's own on the PostgreSQL test-bed, reached through
# its socket directory (bound into serve's container), named by a libpq
# service file that is a Swarm secret.
PGDIR=""
if [ -z "${SBXCAT_TEST_DATABASE_URL:-}" ] && pgbed_start && URL=$(pgbed_newdb "$DB"); then
	dbmade=yes
	SBXCAT_DATABASE_URL=$URL "$S" audit migrate >/dev/null 2>&1
	ok $? "the test's database migrated"
	PGDIR=$PGB_RUN
	{ echo "[sbxcat]"; printf '%s\n' "$URL" | tr ' ' '\n'; } >"$T/pg_service.conf"
else
	diag "no PostgreSQL test-bed of our own: the audit goes to the spool; its check is skipped"
	printf '[sbxcat]\nhost=%s\ndbname=none\nconnect_timeout=1\n' "$T/no-pg" >"$T/pg_service.conf"
fi
TOKEN=fleet-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$TOKEN" | "$DOCKER" secret create sbxcat_token - >/dev/null &&
	"$DOCKER" secret create sbxcat_pg_service "$T/pg_service.conf" >/dev/null
ok $? "the secrets made"

# The shipped stack, its node paths moved under $T (the same path on both
# sides still) and serve's port (in --listen and the URL) moved, and the
# test's override (environment and image only: compose would append a
# `command` to the stack's, not replace it).
mkdir -p "$T/ws" "$T/spool"
chmod 700 "$T/spool"
PORT=18080
sed -e "s|/var/run/docker.sock|$R/docker.sock|g" -e "s|/srv/sbxcat/workspaces|$T/ws|g" \
	-e "s|/var/spool/sbxcat|$T/spool|g" -e "s|:8080\"|:$PORT\"|g" "$STACK" >"$T/stack.yml"
cat >"$T/override.yml" <<EOF
version: "3.8"
services:
  serve:
    image: $IMG
    environment:
      SBXCAT_NODE_NAME: $NODE
      SBXCAT_NODE_BINDS: "${PGDIR:+$PGDIR:ro}"
      SANDBOXD_MAX_SESSIONS: "4"
EOF
diag "deploy at $(($(date +%s) - t0)) s"
"$DOCKER" stack deploy -c "$T/stack.yml" -c "$T/override.yml" "$STACKNAME" >"$T/deploy.out" 2>&1
rc=$?
is "$rc:$(grep -ci 'ignoring unsupported' "$T/deploy.out")" "0:0" \
	"docker stack deploy takes the stack, ignoring no option of it"
SVC=${STACKNAME}_serve
is "$("$DOCKER" service inspect --format '{{if .Spec.Mode.Global}}global{{else}}replicated{{end}}' "$SVC")" \
	global "the service is global"

# Up to 40 s for the task to run and serve (it made) to answer /healthz.
healthz() { $N curl -s --max-time 2 "http://127.0.0.1:$PORT/healthz" 2>/dev/null; }
n=0
while [ $n -lt 200 ]; do
	healthz | grep -q '"status":"ok"' && break
	sleep 0.2; n=$((n + 1))
done
diag "serve answered (or not) at $(($(date +%s) - t0)) s"
tasks=$("$DOCKER" service ps --filter desired-state=running --format '{{.Node}} {{.CurrentState}}' "$SVC")
case $tasks in
"$node Running"*) is "$(printf '%s\n' "$tasks" | wc -l | tr -d ' ')" 1 "one task runs, on the node" ;;
*) ok 1 "one task runs, on the node (tasks: $tasks)"
   "$DOCKER" service ps --no-trunc "$SVC" | sed 's/^/# /'
   "$DOCKER" service logs "$SVC" 2>&1 | tail -n 10 | sed 's/^/# /'
   "$DOCKER" logs "$NODE" 2>&1 | tail -n 5 | sed 's/^/# /' ;;
esac
like "$(healthz)" '"status":"ok"' "sbxcat serve answers /healthz on the node's port" ||
	"$DOCKER" logs "$NODE" 2>&1 | tail -n 5 | sed 's/^/# serve: /'
like "$($N curl -s --max-time 2 "http://10.251.7.1:$PORT/healthz")" '"runtimes":\["bb"\]' \
	"... and on the node's address, with the image's catalogue"

# mounts CONTAINER: "SOURCE TARGET" of each bind mount.
mounts() { "$DOCKER" inspect --format '{{range .Mounts}}{{if eq .Type "bind"}}{{.Source}} {{.Destination}}{{"\n"}}{{end}}{{end}}' "$1"; }
# equal CONTAINER PATH...: the PATHs each mounted at the same path.
equal() {
	c=$1
	shift
	mounts "$c" >"$T/mounts"
	for p in "$@"; do
		grep -qx "$p $p" "$T/mounts" || { echo "$p not at its path: $(tr '\n' ';' <"$T/mounts")"; return; }
	done
	echo same
}
task=$("$DOCKER" ps -q --filter "label=com.docker.swarm.service.name=$SVC")
is "$(equal "$task" "$R/docker.sock" "$T/ws" "$T/spool")" same \
	"the task's container has the socket, the root and the spool at their node's paths"
is "$(equal "$NODE" "$R/docker.sock" "$T/ws" "$T/spool" /sys/fs/cgroup)" same \
	"serve's container has them too, and the host's cgroup tree"
is "$("$DOCKER" inspect --format '{{.HostConfig.PidMode}} {{.HostConfig.NetworkMode}} {{index .Config.Labels "io.sbxcat.node"}}' "$NODE")" \
	"host host 1" "serve's container is in the host's PID namespace and network, labelled"
is "$("$DOCKER" exec "$NODE" /bin/busybox stat -c '%a %u' /run/secrets/sbxcat_token /run/secrets/sbxcat_pg_service | tr '\n' ' ')" \
	"400 0 400 0 " "serve's secrets are files of root's, mode 0400"
"$DOCKER" inspect --format '{{json .Config.Env}}' "$NODE" >"$T/env"
grep -q "$TOKEN" "$T/env"
ok $((!$?)) "the token is not in serve's environment (nor in the engine's record of it)"
like "$(tr ',' '\n' <"$T/env" | grep SBXCAT_FLEET=)" "SBXCAT_FLEET=$node\"" \
	"serve's SBXCAT_FLEET is the node's hostname ($node)"

# A session and an exec, through the deployed serve.
api() { $N curl -s --max-time 30 -H "X-Sandbox-Token: $TOKEN" -H 'Content-Type: application/json' \
	-d "$2" "http://127.0.0.1:$PORT$1"; }
like "$(api /sessions '{"session_id": "f1", "runtime": "bb"}')" '"alive":true' "a session opens"
like "$(api /sessions/f1/exec '{"command": "echo fleet-$((6 * 7))"}')" '"output":"fleet-42\\n","exit_code":0' \
	"an exec runs in it (serve sees the session's processes: the host's PID namespace and cgroups)"
is "$($N curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'X-Sandbox-Token: wrong-token-0123456789' \
	"http://127.0.0.1:$PORT/sessions")" 401 "a wrong token is refused"
if [ -n "$dbmade" ]; then
	is "$(pgbed_psql "$DB" -c "SELECT count(*) FROM sandbox_operations WHERE wire_id = 'f1' AND op = 'execute'")" 1 \
		"the exec's audit row is in the database the service file secret names"
else
	skip "no database of our own" "the exec's audit row is in the database"
fi
if "$S" fleet ls --help >/dev/null 2>&1 && [ -n "$dbmade" ]; then
	is "$(pgbed_psql "$DB" -c "SELECT name || ' ' || url FROM fleet_hosts")" \
		"$node http://$node:$PORT" "the host registered in the fleet under the node's name and URL"
else
	skip "this sbxcat has no fleet command yet (or no database)" "the host registered in the fleet"
fi

# sbxcat-node refuses what it cannot give serve (a plain run of the image,
# its own settings).
node_run() {
	"$DOCKER" run --rm --entrypoint /usr/local/bin/sbxcat-node \
		--mount "type=bind,source=$R/docker.sock,target=$R/docker.sock" \
		-e "DOCKER_HOST=unix://$R/docker.sock" -e "SBXCAT_NODE_NAME=never-$sfx" "$@" \
		"$IMG" serve >"$T/node.out" 2>&1
	echo "$?:$(tail -n 1 "$T/node.out")"
}
like "$(node_run --mount "type=bind,source=$T/ws,target=$T/ws" -e "SANDBOXD_WORKSPACE_ROOT=$T/ws" \
	-e "SBXCAT_SPOOL_DIR=$T/ws" -e SANDBOXD_WORKSPACE_QUOTA=1g)" '^1:.*disk budget needs the host.s mount namespace' \
	"sbxcat-node refuses a disk budget, saying why"
like "$(node_run -e "SANDBOXD_WORKSPACE_ROOT=$T/ws" -e "SBXCAT_SPOOL_DIR=$T/spool")" \
	"^1:.*$T/ws: no such directory here" "sbxcat-node refuses a root not mounted at its path"
like "$(node_run --mount "type=bind,source=$T/ws,target=$T/ws" -e "SANDBOXD_WORKSPACE_ROOT=$T/ws" \
	-e "SBXCAT_SPOOL_DIR=$T/ws" -e "SBXCAT_NODE_NAME=$("$DOCKER" inspect --format '{{.Name}}' "$task" | tr -d /)")" \
	'^1:.*is not sbxcat-node.s .*not touched' "sbxcat-node leaves a container of its name that is not its own"
is "$("$DOCKER" inspect --format '{{.State.Running}}' "$task")" true "... which still runs"

diag "stack rm at $(($(date +%s) - t0)) s"
# stack rm: the task stops serve (SIGTERM, its grace) and removes it.
"$DOCKER" stack rm "$STACKNAME" >/dev/null 2>&1
n=0
while [ $n -lt 150 ] && "$DOCKER" inspect "$NODE" >/dev/null 2>&1; do
	sleep 0.2; n=$((n + 1))
done
"$DOCKER" inspect "$NODE" >/dev/null 2>&1
ok $((!$?)) "docker stack rm stops serve and removes its container"

diag "wall time: $(($(date +%s) - t0)) s"
done_testing

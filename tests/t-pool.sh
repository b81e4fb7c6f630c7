#!/bin/sh
# t-pool.sh - the warm pool (issue 19, docs/sessions.md) on the real
# engine: `sbxcat reap` fills it to SBXCAT_WARM_POOL; an open claims a
# pooled container, which then passes the inspection a cold one passes,
# with its workspace bound at the work dir (/workspace) in the container,
# empty and the sandbox uid's; two claims never get one container; a
# closed session's container never comes back; a reopen with files takes
# its own workspace, not the pool's; a catalogue change drains the pool;
# strays nobody holds are swept; the pool counts toward the host.
# Go templates for docker inspect are single-quoted on purpose.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
sb_init t-pool tp

npool() { ls "$ROOT/.sbxcat-pool" 2>/dev/null | grep -c '\.json$'; }
pooled() { tb_docker ps -q --filter "label=io.sbxcat.deployment=$DEP" --filter label=io.sbxcat.pool | wc -l | tr -d ' '; }
SANDBOXD_PAUSE_AFTER=0
export SANDBOXD_PAUSE_AFTER

# -- The configuration.
for bad in "$RA" "$RA=x" "$RA=65" "$RA=1,$RA=2" "Bad Alias=1" "=1"; do
	SBXCAT_WARM_POOL=$bad sbx reap
	is "$rc" 2 "SBXCAT_WARM_POOL '$bad' is refused (exit 2)"
	grep -q SBXCAT_WARM_POOL "$T/err"; ok $? "... naming the variable"
done

# The runtime's image first (the pool never builds).
"$S" -C "$CAT" prewarm "$RA" >/dev/null 2>&1
ok $? "the runtime's image is built"

# -- Fill: sbxcat reap makes the pool ready.
SBXCAT_WARM_POOL=$RA=2
export SBXCAT_WARM_POOL
sbx reap
is "$rc" 0 "sbxcat reap with a pool exits 0"
grep -q "pool: 2 made ready" "$T/out"; ok $? "... and says it made 2 ready ($(out | tr '\n' ' '))"
is "$(npool)" 2 "two entries in ROOT/.sbxcat-pool"
is "$(pooled)" 2 "two pooled containers in the engine"
is "$(stat -c '%u %a' "$ROOT/.sbxcat-pool" "$ROOT/.sbxcat-ws" | tr '\n' ' ')" "0 700 0 700 " \
	"ROOT/.sbxcat-pool and ROOT/.sbxcat-ws are root's, 0700"
sbx reap
is "$(npool):$(pooled)" "2:2" "a second reap keeps the pool at its count"

# -- Claim.
P1=$(tb_docker ps -q --no-trunc --filter "label=io.sbxcat.deployment=$DEP" --filter label=io.sbxcat.pool | sort)
open_s acme run pooled-1 --json
K1=$key
is "$rc:$(jq -r .outcome "$T/out")" "0:claimed" "an open with a pool ready claims a pooled container"
C1=$(jq -r .container "$T/out")
echo "$P1" | grep -qx "$C1"; ok $? "... one that was in the pool"
is "$(npool)" 1 "... and its entry is gone from the pool"
is "$(insp "$K1" '{{.Id}}')" "$C1" "the container now has the session's name"
W1=$(jq -r .workspace "$T/out")
case $W1 in "$ROOT/.sbxcat-ws/"*) r=0 ;; *) r=1 ;; esac
ok $r "its workspace is the pooled one, ROOT/.sbxcat-ws/ID ($W1)"
is "$(jq -r .workspace "$ROOT/$K1/session.json")" "${W1#"$ROOT/"}" "the record names that workspace"
is "$(insp "$K1" '{{range .Mounts}}{{.Source}}={{.Destination}}{{end}}')" "$W1=/workspace" \
	"the pooled workspace is bound at the work dir, /workspace, in the container"
is "$(stat -c '%u:%g %a' "$W1")" "10001:10001 755" "... the sandbox uid's, 0755"
is "$(ls -A "$W1" | wc -l | tr -d ' ')" 0 "... and empty at the claim"
# The hardening a cold session has, field by field.
is "$(insp "$K1" '{{.HostConfig.Init}} {{.HostConfig.CapDrop}} {{.HostConfig.SecurityOpt}} {{.HostConfig.PidsLimit}} {{.HostConfig.NanoCpus}} {{.HostConfig.NetworkMode}} {{.HostConfig.Privileged}} {{.Config.User}}')" \
	"true [ALL] [no-new-privileges] 512 2000000000 none false 10001:10001" \
	"a claimed container has every field of a cold one's hardening"
is "$(insp "$K1" '{{index .Config.Labels "io.sbxcat.deployment"}} {{index .Config.Labels "io.sbxcat.runtime"}}')" "$DEP $RA" \
	"... its deployment and runtime labels"
# The inside: exec, fs, as on a cold session.
sbx exec "$K1" -- sh -c 'id -u; pwd; echo hi >made.txt'
is "$rc:$(out | tr '\n' ' ')" "0:10001 /workspace " "exec runs as the sandbox uid in the workspace, at /workspace"
sbx fs "$K1" read-bytes made.txt
is "$rc:$(out)" "0:hi" "fs reads what exec wrote, host side"
sbx session show "$K1" --json
is "$(jq -r '.state + " " + .workspace' "$T/out")" "running $W1" "session show: running, the pooled workspace"
sbx session ls --json
is "$(jq -r --arg k "$K1" '.[] | select(.key == $k) | .state' "$T/out")" running "session ls lists it"

# -- Two claims at once never get one container: 6 opens on a pool of 2.
sbx reap
is "$(npool)" 2 "the pool refilled by reap"
n=1
while [ $n -le 6 ]; do
	bounded session open --runtime "$RA" --tenant acme --scope run --subject "race-$n" --json \
		>"$T/race.$n" 2>"$T/race.$n.err" &
	n=$((n + 1))
done
wait
is "$(cat "$T"/race.[1-6] | jq -r .outcome | sort | uniq -c | tr -s ' ' | sed 's/^ //' | tr '\n' ,)" \
	"2 claimed,4 created," "6 opens racing for a pool of 2: 2 claimed, 4 made cold"
is "$(cat "$T"/race.[1-6] | jq -r .container | sort -u | wc -l | tr -d ' ')" 6 \
	"... six containers, no two the same"
is "$(npool)" 0 "... and the pool is empty"

# -- A closed session's container never comes back.
sbx session close "$K1" --purge
is "$rc" 0 "the claimed session closed with --purge"
[ ! -e "$W1" ]; ok $? "... its pooled workspace is gone"
tb_docker inspect "$C1" >/dev/null 2>&1; ok $((!$?)) "... and its container"
sbx reap
open_s acme run pooled-1 --json
is "$rc:$(jq -r .outcome "$T/out")" "0:claimed" "the same key opened again claims a new pooled container"
[ "$(jq -r .container "$T/out")" != "$C1" ]; ok $? "... never the closed one's"
K1=$key

# -- A reopen with files takes its own workspace back, not the pool's.
open_s acme run own --json
KO=$key
[ "$(jq -r .outcome "$T/out")" = claimed ] && WO=$(jq -r .workspace "$T/out")
sbx exec "$KO" -- sh -c 'echo mine >keep.txt'
sbx session close "$KO"
sbx reap
np=$(npool)
open_s acme run own --json
is "$rc:$(jq -r .outcome "$T/out"):$(jq -r .workspace "$T/out")" "0:created:$WO" \
	"a reopen of a closed pooled session gets a container on its own workspace"
is "$(npool)" "$np" "... and takes nothing from the pool"
sbx fs "$KO" read-bytes keep.txt
is "$(out)" mine "... its files are there"
# A key whose cold workspace has files but no container: a cold one on it
# (a runtime without a pool, so that workspace is ROOT/KEY/workspace).
open_s acme run cold-files --runtime "$RSMALL"
KC=$key
sbx session close "$KC"
tb_docker rm -f "$(ctr "$KC")" >/dev/null
echo old >"$ROOT/$KC/workspace/old.txt"
rm "$ROOT/$KC/session.json"
open_s acme run cold-files --json
is "$rc:$(jq -r .outcome "$T/out")" "0:created" "a key whose workspace has files gets a cold container on it, of a runtime with a pool"
is "$(jq -r .workspace "$T/out")" "$ROOT/$KC/workspace" "... on its own workspace"
is "$(npool)" "$np" "... not a pooled one"

# -- The pool counts toward the host's ceiling, and yields to a cold open.
used=$(nrunning)
SANDBOXD_MAX_SESSIONS=$used sbx session open --runtime "$RSMALL" --tenant acme --scope run --subject yield --json
is "$rc:$(jq -r .outcome "$T/out")" "0:created" "at the ceiling with a pool, a cold open of another runtime still opens"
[ "$rc" = 0 ] || diag "$(cat "$T/err")"
is "$(npool)" "$((np - 1))" "... a pooled container made way for it"
is "$(nrunning)" "$used" "... the host stays at its ceiling"

# -- A catalogue change drains the pool of the old tag.
sbx reap
before=$(ls "$ROOT/.sbxcat-pool")
jq --arg a "$RA" 'map(if .alias == $a then .env_vars.SBX_T = "changed" else . end)' "$CAT" >"$T/cat2.json"
"$S" -C "$T/cat2.json" prewarm "$RA" >/dev/null 2>&1
"$S" -C "$T/cat2.json" reap >"$T/out" 2>"$T/err"
grep -q "drained" "$T/out"; ok $? "a reap after a catalogue change drains the old tag's pool ($(out | tr '\n' ' '))"
after=$(ls "$ROOT/.sbxcat-pool")
common=$(printf '%s\n%s\n' "$before" "$after" | sort | uniq -d | wc -l | tr -d ' ')
is "$common" 0 "... none of the old entries is left"
NEWTAG=$("$S" -C "$T/cat2.json" tag "$RA")
is "$(tb_docker ps --filter "label=io.sbxcat.deployment=$DEP" --filter "name=sbxcat-$DEP-pool_" --format '{{.Image}}' | sort -u)" \
	"$NEWTAG" "... and every pooled container runs the new tag"
CAT=$T/cat2.json

# -- Strays: a pooled container and a workspace nobody holds are swept.
id=$(ls "$ROOT/.sbxcat-pool" | head -1)
id=${id%.json}
rm "$ROOT/.sbxcat-pool/$id.json"
mkdir "$ROOT/.sbxcat-ws/abcdefghijklmnopqrstuvwxyz"
touch -d '-1 hour' "$ROOT/.sbxcat-ws/abcdefghijklmnopqrstuvwxyz"
sbx reap
is "$(tb_docker ps -aq --filter "name=sbxcat-$DEP-pool_$id" | wc -l | tr -d ' ')" 1 \
	"a pooled container without its entry is left while young (the grace)"
[ ! -e "$ROOT/.sbxcat-ws/abcdefghijklmnopqrstuvwxyz" ]; ok $? "an old workspace nobody names is swept"
[ -e "$ROOT/$KC/workspace/old.txt" ] && [ -e "$WO/keep.txt" ]
ok $? "... sessions' workspaces untouched"

# -- The service: it fills the pool by itself, an open claims, and the
# pool is refilled off the request path.
SOCK=$T/serve.sock
TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SANDBOXD_TOKEN=$TOKEN "$S" -C "$CAT" serve --listen "unix:$SOCK" 2>"$T/serve.log" &
SPID=$!
api() { curl -s --unix-socket "$SOCK" -H "X-Sandbox-Token: $1" ${3:+-d "$3"} "http://x$2"; }
ready() { api "$TOKEN" /metrics | awk -v r="sbxcat_pool_ready{runtime=\"$RA\"}" '$1 == r { print $2 }'; }
n=0
while [ "$(ready)" != 2 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
is "$(ready)" 2 "sbxcat serve fills the pool by itself (sbxcat_pool_ready)"
claims() { cat "$T"/spool/* 2>/dev/null | grep -c '"claimed"'; }
claims0=$(claims)
api "$TOKEN" /sessions '{"session_id": "pool-wire-1"}' >"$T/o"
WT=$(jq -r .token "$T/o")
is "${#WT}" 43 "POST /sessions opens a session"
is "$(api "$WT" /sessions/pool-wire-1/exec '{"command": "echo $((6*7)); id -u"}' | jq -r .output | tr '\n' ' ' | sed 's/ *$//')" \
	"42 10001" "... that runs a command at once, as the sandbox uid"
is "$(claims)" "$((claims0 + 1))" "... its open's row says it claimed a pooled container"
# Its workspace is the pool's (ROOT/.sbxcat-ws/ID), at the work dir in the
# container: the wire names files there and takes absolute paths there.
PW=$(api "$WT" /sessions/pool-wire-1/exec '{"command": "pwd"}' | jq -r .output | tr -d '\n')
is "$PW" /workspace "... in the pool's workspace, at /workspace"
is "$(api "$WT" /sessions/pool-wire-1/write '{"path": "w.txt", "content_b64": "cG9vbAo="}' | jq -r .path)" \
	"$PW/w.txt" "... a write through the wire names the file at the container's path"
is "$(api "$WT" /sessions/pool-wire-1/read_bytes "{\"path\": \"$PW/w.txt\"}" | jq -r .content_b64)" cG9vbAo= \
	"... and a read of that absolute path finds it"
n=0
while [ "$(ready)" != 2 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
is "$(ready)" 2 "... and the pool is refilled without another request"
kill -TERM "$SPID"
wait "$SPID"
rc=$?
is "$rc" 0 "the service stops"
[ "$rc" = 0 ] || sed 's/^/# serve: /' "$T/serve.log" | tail -60

# -- The pool turned off: the next reap drains what it left.
SBXCAT_WARM_POOL='' sbx reap
is "$rc:$(npool)" "0:0" "with SBXCAT_WARM_POOL unset, reap drains the pool"
is "$(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP" --filter "name=sbxcat-$DEP-pool_" | wc -l | tr -d ' ')" 1 \
	"... leaving only the young stray of the grace"

sb_done

#!/bin/sh
# t-session.sh - sbxcat session open/ls/show/close against the real engine
# (issue 8, "Conformance tests"; the CLI as docs/sessions.md states it):
# the configuration and the workspace root it refuses; keys (format,
# deterministic, host/scope/secret folded in); a live session inspected
# field by field as the engine reports it, and read back by session show;
# the workspace on the host; quotas under races (11 opens for one tenant,
# 16 at once for the last 2 slots, one key opened by 8 processes at once,
# an open that goes on while another is held in its create, a reservation
# left by a kill -9 between the count and the start released);
# reopening a stopped and a removed container; close and close --purge
# whatever state the container is in; an image without sleep refused; a
# networked runtime on an internal network of the test's own.
#
# Everything runs under a deployment id and a workspace root of this run's
# own; every container carrying that id is removed at the end.  What runs
# inside a session (exec) is t-exec.sh's.
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
sb_init t-session ts

# -- The configuration: a bad value is a usage error naming the variable.
for kv in SANDBOXD_MAX_SESSIONS=ten SANDBOXD_MAX_SESSIONS_PER_TENANT=-1 \
	SANDBOXD_MEM_LIMIT=lots SANDBOXD_EXECUTE_TIMEOUT=soon \
	SANDBOXD_MAX_OUTPUT_BYTES=12x SANDBOXD_PERSIST_CONTAINERS=maybe \
	SANDBOXD_SANDBOX_UID=nobody; do
	env "$kv" "$S" -C "$CAT" session ls >/dev/null 2>"$T/err"
	r=$?
	is "$r" 2 "session ls with $kv exits 2"
	grep -q "${kv%%=*}" "$T/err"; ok $? "... and names ${kv%%=*}"
done

# -- The workspace root: refused when a symlink, writable by others, not
# root's, or below a directory others can write to (not sticky); refused
# before any container is made.
mkdir -m 755 "$T/real" "$T/r777" "$T/notroot" "$T/open" "$T/sticky"
chmod 777 "$T/r777" "$T/open"
chmod 1777 "$T/sticky"
chown 10002:10002 "$T/notroot"
mkdir -m 755 "$T/open/root" "$T/sticky/root"
ln -s "$T/real" "$T/link"
for bad in link r777 notroot open/root; do
	SANDBOXD_WORKSPACE_ROOT=$T/$bad open_s acme run refused
	is "$rc" 3 "a workspace root that is $bad is refused (exit 3)"
	grep -q "$T/$bad" "$T/err"; ok $? "... and the message names it"
done
is "$(ndep)" 0 "a refused root leaves no container"

# -- The first open: the image is absent, so open prewarms it first.
tb_docker image inspect "$("$S" -C "$CAT" tag "$RA")" >/dev/null 2>&1
ok $((!$?)) "the built runtime's image is absent before the first open"
t0=$(date +%s)
open_s acme run subject-1
t1=$(date +%s)
K1=$key
is "$rc" 0 "session open exits 0"
is "$(wc -l <"$T/out" | tr -d ' ')" 1 "open prints one line"
echo "$K1" | grep -Eq "$KEY_RE"; ok $? "the key has the format xc-ORG8-SCOPE-<26 base32> ($K1)"
case $K1 in xc-acme-run-*) r=0 ;; *) r=1 ;; esac
ok $r "the readable prefix is xc-acme-run-"
[ ${#K1} -le 64 ]; ok $? "the key is at most 64 characters"
grep -q "$RA" "$T/err" && grep -q built "$T/err"
ok $? "open prewarmed the absent image and said so on stderr"
IMG=$("$S" -C "$CAT" tag "$RA")
tb_docker image inspect "$IMG" >/dev/null 2>&1; ok $? "the runtime's content tag is now in the engine"
is "$(state "$K1")" running "the container is running"
WS1=$(ws "$K1")

# -- Keys: the same fields, the same key (and the container is adopted).
open_s acme run subject-1 --json
is "$rc:$key" "0:$K1" "the same (tenant, scope, subject, host) gives the same key"
is "$(jq -r .outcome "$T/out")" adopted "opening an open key adopts it"
is "$(jq -r .container "$T/out")" "$(insp "$K1" '{{.Id}}')" "--json: container is the engine's id"
is "$(jq -r .name "$T/out")" "$(ctr "$K1")" "--json: name is sbxcat-DEPLOYMENT-KEY"
is "$(jq -r .workspace "$T/out")" "$WS1" "--json: workspace is ROOT/KEY/workspace"
is "$(jq -r .runtime "$T/out"):$(jq -r .image "$T/out")" "$RA:$IMG" "--json: runtime and image (the content tag)"
jq -r .created "$T/out" | grep -Eq "$RFC3339_RE"; ok $? "--json: created is RFC 3339 UTC"
open_s acme run subject-1 --runtime "$RSMALL"
is "$rc:$(err)" "1:sbxcat: session '$K1' runs runtime '$RA', not '$RSMALL'" \
	"the same key asked for with another runtime is refused, not adopted"
is "$(insp "$K1" '{{index .Config.Labels "io.sbxcat.runtime"}}')" "$RA" "... and its container is left as it was"
is "$(ndep)" 1 "adopting made no second container"
open_s acme run subject-1 --host other-host
Khost=$key
[ "$rc" = 0 ] && [ "$Khost" != "$K1" ]; ok $? "a different host gives a different key"
open_s acme conversation subject-1 --runtime "$RA"
Kscope=$key
case $Kscope in xc-acme-conversation-*) r=0 ;; *) r=1 ;; esac
[ "$rc" = 0 ] && [ "$Kscope" != "$K1" ]; ok $(($? + r)) "a different scope gives a different key, named in it"
open_s acme run subject-2
[ "$rc" = 0 ] && [ "$key" != "$K1" ]; ok $? "a different subject gives a different key"
# ORG8: lowercased, bytes outside [a-z0-9] dropped, cut to 8.
open_s "Acme-Corp.International" run subject-1
case $key in xc-acmecorp-run-*) r=0 ;; *) r=1 ;; esac
is "$rc:$r" "0:0" "the org part is the tenant lowercased, [a-z0-9] only, cut to 8 ($key)"
# Without a configured secret, one is made on first use, in the root, and
# keys are HMACs under it: not the plain SHA-256 anyone can compute.
SECF=$ROOT/.sbxcat-key-secret
is "$(stat -c '%u %a %s' "$SECF" 2>&1)" "0 600 65" "the first open made ROOT/.sbxcat-key-secret: root's, 0600, one line"
plain=$(/usr/bin/python3 -c 'import base64, hashlib, struct, sys
t, sc, sub, h = sys.argv[1:5]
b = b"".join(struct.pack(">I", len(x.encode())) + x.encode() for x in ("docker", sc, t, h, sub))
org = "".join(c for c in t.lower() if c.isascii() and c.isalnum())[:8] or "x"
print("xc-%s-%s-%s" % (org, sc, base64.b32encode(hashlib.sha256(b).digest()).decode().lower()[:26]))' acme run subject-1 "")
[ -n "$plain" ] && [ "$K1" != "$plain" ]; ok $? "the key is not the SHA-256 of its public fields ($plain)"
SBXCAT_KEY_SECRET=$(head -n 1 "$SECF") open_s acme run subject-1
is "$rc:$key" "0:$K1" "... it is the HMAC under the secret made (the same key given that secret)"
chmod 644 "$SECF"
open_s acme run subject-1
is "$rc" 3 "a made secret others can read is refused (exit 3)"
grep -q "$SECF.*group or others" "$T/err"; ok $? "... naming the file"
chmod 600 "$SECF"
# A secret changes every key; the same secret from a file gives the same.
SBXCAT_KEY_SECRET=first-secret-$sfx open_s acme run subject-1
Ksec=$key
[ "$rc" = 0 ] && [ "$Ksec" != "$K1" ]; ok $? "SBXCAT_KEY_SECRET gives a different key"
echo "first-secret-$sfx" >"$T/secret"
chmod 644 "$T/secret"
SBXCAT_KEY_SECRET_FILE=$T/secret open_s acme run subject-1
is "$rc" 3 "a secret file others can read is refused"
chmod 600 "$T/secret"
SBXCAT_KEY_SECRET_FILE=$T/secret open_s acme run subject-1
is "$rc:$key" "0:$Ksec" "SBXCAT_KEY_SECRET_FILE with the same secret gives the same key"
SBXCAT_KEY_SECRET=second-secret-$sfx open_s acme run subject-1
[ "$rc" = 0 ] && [ "$key" != "$Ksec" ] && [ "$key" != "$K1" ]; ok $? "another secret, another key"
# A session opened under an earlier secret keeps working by its key: its
# record holds it.
sbx exec "$Ksec" -- true
is "$rc" 0 "exec on a key made under another secret still works"
sbx fs "$Ksec" ls
is "$rc" 0 "... and so does fs"
sbx session show "$Ksec" --json
is "$rc:$(jq -r .key "$T/out")" "0:$Ksec" "... and session show"
# --runtime defaults to the first runtime.
sbx session open --tenant acme --scope agent --subject default-runtime
Kdef=$(out)
is "$rc:$(insp "$Kdef" '{{index .Config.Labels "io.sbxcat.runtime"}}')" "0:$RA" \
	"without --runtime, the catalogue's first runtime"

# -- The container as the engine reports it: one inspect, read with jq.
tb_docker inspect "$(ctr "$K1")" >"$T/inspect.json"
f() { jq -r ".[0] | $1" "$T/inspect.json"; }
is "$(f .Config.User)" "10001:10001" "User is the sandbox uid"
is "$(f .HostConfig.Init)" true "Init (PID 1 reaps zombies)"
is "$(f '.HostConfig.CapDrop | tojson')" '["ALL"]' "CapDrop is ALL"
is "$(f '.HostConfig.CapAdd // [] | length')" 0 "CapAdd is empty"
f '.HostConfig.SecurityOpt // [] | .[]' | grep -Eqx 'no-new-privileges([:=]true)?'
ok $? "SecurityOpt has no-new-privileges"
f '.HostConfig.SecurityOpt // [] | .[]' | grep -q unconfined
ok $((!$?)) "SecurityOpt names nothing unconfined (the default seccomp profile holds)"
is "$(f .HostConfig.PidsLimit)" 512 "PidsLimit is 512"
is "$(f .HostConfig.NanoCpus)" 2000000000 "NanoCpus is 2 CPUs"
is "$(f .HostConfig.Memory)" 1073741824 "Memory is SANDBOXD_MEM_LIMIT's default, 1g"
is "$(f .HostConfig.MemorySwap)" "$(f .HostConfig.Memory)" "MemorySwap equals Memory: no swap"
is "$(f '.HostConfig.Tmpfs // {} | keys | join(" ")')" /tmp "one tmpfs, at /tmp"
f '.HostConfig.Tmpfs["/tmp"]' | grep -Eq '(^|,)size=64m(,|$)'; ok $? "... of size=64m"
f '.HostConfig.Tmpfs["/tmp"]' | grep -Eq '(^|,)mode=1777,uid=10001,gid=10001$'; ok $? "... of mode=1777, the sandbox user's"
f '.HostConfig.Tmpfs["/tmp"]' | grep -Eq '^rw,noexec,nosuid,nodev,'; ok $? "... noexec, nosuid, nodev"
is "$(f .HostConfig.NetworkMode)" none "NetworkMode is none"
is "$(f '.NetworkSettings.Networks | keys | join(" ")')" none "attached to the none network alone"
is "$(f '.Config.Labels["io.sbxcat.deployment"]')" "$DEP" "label io.sbxcat.deployment"
is "$(f '.Config.Labels["io.sbxcat.tenant"]')" acme "label io.sbxcat.tenant"
is "$(f '.Config.Labels["io.sbxcat.key"]')" "$K1" "label io.sbxcat.key"
is "$(f '.Config.Labels["io.sbxcat.runtime"]')" "$RA" "label io.sbxcat.runtime"
c=$(f '.Config.Labels["io.sbxcat.created"]')
[ "$c" -ge "$t0" ] 2>/dev/null && [ "$c" -le "$t1" ]; ok $? "label io.sbxcat.created is the Unix time of the open ($c)"
is "$(f '.Mounts | map(.Type + " " + .Source + " " + .Destination + " " + (.RW | tostring)) | join(";")')" \
	"bind $WS1 /workspace true" "exactly one mount: the workspace, bound at the work dir /workspace, writable"
is "$(f '.HostConfig.Binds | tojson')" null "no Binds (Mounts refuses a missing source)"
is "$(f '.HostConfig.Mounts // [] | length')" 1 "one HostConfig.Mounts entry"
is "$(f .Config.WorkingDir)" /workspace "WorkingDir is the work dir, /workspace"
is "$(f .Config.Image)" "$IMG" "the image is the runtime's content tag"
f '.Config.Env // [] | .[]' | grep -qx "SBX_T=tv-$sfx"; ok $? "the runtime's env vars are set"
f '[.Path] + .Args | join(" ")' | grep -q sleep; ok $? "the main process is sleep, not the image's CMD"
is "$(f .HostConfig.Privileged)" false "not privileged"
is "$(f '[.HostConfig.Devices, .HostConfig.DeviceCgroupRules, .HostConfig.DeviceRequests] | map(. // [] | length) | join(":")')" \
	"0:0:0" "no devices"
for m in PidMode IpcMode UTSMode UsernsMode NetworkMode; do
	v=$(f ".HostConfig.$m")
	[ "$v" != host ]; ok $? "$m is not host ($v)"
done
is "$(f '.HostConfig.PortBindings // {} | length')" 0 "no published ports"
grep -q 'docker\.sock' "$T/inspect.json"
ok $((!$?)) "docker.sock appears nowhere in the container's configuration"

# -- The workspace on the host.
is "$(stat -c '%u %a' "$ROOT/$K1")" "0 700" "ROOT/KEY is root's, mode 0700"
is "$(stat -c '%u %g %F' "$WS1")" "10001 10001 directory" "the workspace is the sandbox uid's"
is "$(stat -c '%u' "$ROOT/$K1/session.json")" 0 "ROOT/KEY/session.json is root's record"

# -- session show: the limits read back from the engine.
head -c 100000 /dev/zero >"$WS1/blob"
chown 10001:10001 "$WS1/blob"
sbx session show "$K1" --json
is "$rc" 0 "session show --json exits 0"
cp "$T/out" "$T/show.json"
j() { jq -r "$1" "$T/show.json"; }
is "$(j .key):$(j .tenant):$(j .runtime):$(j .state)" "$K1:acme:$RA:running" "show: key, tenant, runtime, state"
is "$(j .container):$(j .image):$(j .workspace)" "$(insp "$K1" '{{.Id}}'):$IMG:$WS1" "show: container, image, workspace"
j .created | grep -Eq "$RFC3339_RE" && j .last_activity | grep -Eq "$RFC3339_RE"
ok $? "show: created and last_activity are RFC 3339"
[ "$(j .workspace_bytes)" -ge 100000 ] && [ "$(j .workspace_files)" -ge 1 ]
ok $? "show: workspace_bytes and workspace_files count the workspace ($(j .workspace_bytes), $(j .workspace_files))"
is "$(j .oom_killed)" false "show: oom_killed false"
j .oom_kills | grep -Eq '^(null|[0-9]+)$'; ok $? "show: oom_kills a count or null"
is "$(j '.limits.user'):$(j '.limits.init'):$(j '.limits.cap_drop|join(",")')" "10001:10001:true:ALL" \
	"show limits: user, init, cap_drop"
j '.limits.security_opt|join(",")' | grep -q no-new-privileges; ok $? "show limits: no-new-privileges"
is "$(j '.limits.pids_limit'):$(j '.limits.nano_cpus'):$(j '.limits.memory'):$(j '.limits.memory_swap')" \
	"512:2000000000:1073741824:1073741824" "show limits: pids, cpus, memory = memory_swap"
j '.limits.tmpfs["/tmp"]' | grep -q 'size=64m'; ok $? "show limits: tmpfs /tmp 64m"
is "$(j '.limits.network_mode'):$(j '.limits.privileged')" "none:false" "show limits: network none, not privileged"
is "$(j '.limits.mounts|map(.type+" "+.source+" "+.target)|join(";")')" "bind $WS1 /workspace" "show limits: the one mount, the workspace at /workspace"
sbx session show "$K1"
grep -q "^key: $K1\$" "$T/out" && grep -q '^state: running$' "$T/out"
ok $? "show without --json: field: value lines"

# -- session ls, and tenants.
sbx session ls --json
is "$(jq -r ".[] | select(.key == \"$K1\") | .tenant + \" \" + .runtime + \" \" + .state" "$T/out")" \
	"acme $RA running" "ls --json: the session with its tenant, runtime, state"
jq -r ".[] | select(.key == \"$K1\") | .created, .last_activity" "$T/out" | grep -Ecv "$RFC3339_RE" | grep -qx 0
ok $? "ls --json: created and last_activity are RFC 3339"
sbx session ls --tenant Acme-Corp.International --json
is "$(jq -r '[.[] | .tenant] | unique | join(",")' "$T/out")" "Acme-Corp.International" "ls --tenant lists that tenant's sessions alone"
sbx session ls
grep -q "$K1" "$T/out"; ok $? "ls prints a row per session"
sbx session show "$K1" --tenant someone-else
is "$rc:$(err)" "1:sbxcat: no session '$K1'" "show of another tenant's key: exactly like an unknown key"
SBXCAT_TENANT=someone-else sbx session close "$K1"
is "$rc:$(state "$K1")" "1:running" "close under SBXCAT_TENANT of another tenant refuses and touches nothing"
sbx session show xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa
is "$rc:$(err)" "1:sbxcat: no session 'xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa'" "show of an unknown key exits 1"
# An engine not yet configured is released without closing a descriptor
# (once, {0} made its trace descriptor standard input).
for v in show close; do
	env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=close -o "$T/close.log" "$S" -C "$CAT" session "$v" xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa </dev/null >/dev/null 2>&1
	! grep -q 'close(0)' "$T/close.log"; ok $? "session $v of an unknown key does not close standard input"
done
sbx session show ../../etc
[ "$rc" = 1 ] || [ "$rc" = 2 ]; ok $? "a key that would leave the root is refused ($rc)"

# -- Quotas.  The per-tenant one: 10 opens, the 11th refused.
SANDBOXD_MAX_SESSIONS_PER_TENANT=10; export SANDBOXD_MAX_SESSIONS_PER_TENANT
n=1 good=0
while [ $n -le 10 ]; do
	open_s quota run "q-$n"
	[ "$rc" = 0 ] && good=$((good + 1))
	[ $n = 1 ] && Kq1=$key
	n=$((n + 1))
done
is "$good" 10 "ten opens for one tenant succeed"
open_s quota run q-11
is "$rc" 1 "the eleventh open of the tenant exits 1"
is "$(err)" "sbxcat: tenant 'quota' already holds 10 of 10 sessions; close one first" "... with the message"
is "$(ndep --filter label=io.sbxcat.tenant=quota)" 10 "... and makes no container"
open_s quota run q-1
is "$rc:$key" "0:$Kq1" "adopting a running session of a full tenant needs no slot"
sbx session close "$Kq1"
open_s quota run q-11
is "$rc" 0 "after one close the tenant can open again"
SANDBOXD_MAX_SESSIONS_PER_TENANT=100

# The host's ceiling: 16 opens at once for the last 2 slots.
used=$(nrunning)
SANDBOXD_MAX_SESSIONS=$((used + 2))
n=1
while [ $n -le 16 ]; do
	bounded session open --runtime "$RA" --tenant race --scope run --subject "r-$n" \
		>"$T/race.$n.out" 2>"$T/race.$n.err" &
	n=$((n + 1))
done
wait
n=1 good=0 refused=0
while [ $n -le 16 ]; do
	if [ -s "$T/race.$n.out" ]; then
		good=$((good + 1))
	elif [ "$(cat "$T/race.$n.err")" = "sbxcat: the host holds its ceiling of $SANDBOXD_MAX_SESSIONS sessions" ]; then
		refused=$((refused + 1))
	else
		diag "race $n: $(cat "$T/race.$n.err")"
	fi
	n=$((n + 1))
done
is "$good:$refused" "2:14" "16 opens racing for 2 slots: exactly 2 open, 14 refused with the message"
is "$(ndep --filter label=io.sbxcat.tenant=race)" 2 "... and exactly 2 containers exist for them"
is "$(nrunning)" "$SANDBOXD_MAX_SESSIONS" "the host is at its ceiling, not over it"
SANDBOXD_MAX_SESSIONS=100

# One key opened by 8 processes at once: one container, one key.
n=1
while [ $n -le 8 ]; do
	bounded session open --runtime "$RA" --tenant same --scope run --subject same \
		--json >"$T/same.$n.out" 2>"$T/same.$n.err" &
	n=$((n + 1))
done
wait
is "$(cat "$T"/same.*.out | jq -r .key | sort -u | wc -l | tr -d ' ')" 1 "8 opens of one key at once print one key"
is "$(cat "$T"/same.*.out | jq -r .key | wc -l | tr -d ' ')" 8 "... all 8 succeed"
is "$(cat "$T"/same.*.out | jq -r .outcome | sort | uniq -c | tr -s ' ' | sed 's/^ //' | tr '\n' ,)" \
	"7 adopted,1 created," "... one created it, seven adopted it"
is "$(ndep --filter label=io.sbxcat.tenant=same)" 1 "... and the engine holds exactly one container"

# Opens side by side: only the count and the reservation are under the
# quota lock.  An open held in its create by a slow engine (a proxy that
# holds POST /containers/create 4 s) does not hold up another open.
SLOW=$T/slow.sock
python3 "$srcdir/tests/stallproxy.py" "$SLOW" "${DOCKER_HOST#unix://}" /containers/create 4 &
SPX=$!
n=0
while [ ! -S "$SLOW" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
DOCKER_HOST=unix://$SLOW bounded session open --runtime "$RA" --tenant side --scope run \
	--subject slow >"$T/slow.out" 2>"$T/slow.err" &
SLOWPID=$!
n=0
while [ ! -s "$SLOW.held" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
ok $((n >= 100)) "an open is held in its create by the slow engine"
ls "$ROOT/.sbxcat-open" >"$T/held.ls" 2>/dev/null
is "$(wc -l <"$T/held.ls" | tr -d ' ')" 1 "... holding one reservation in ROOT/.sbxcat-open"
t0=$(now)
open_s side run fast
t1=$(now)
is "$rc" 0 "meanwhile another open succeeds"
lt "$(elapsed "$t0" "$t1")" 3
ok $? "... without waiting for the held one ($(elapsed "$t0" "$t1") s, the hold 4 s)"
wait "$SLOWPID"
is "$?" 0 "the held open then succeeds too"
is "$(ls "$ROOT/.sbxcat-open" | wc -l | tr -d ' ')" 0 "... and no reservation is left"

# A reservation left by a kill -9 between the count and the start: the
# next count releases it.  The host at its ceiling but for one slot, an
# open held in its create is killed; its slot is not lost.
used=$(nrunning)
SANDBOXD_MAX_SESSIONS=$((used + 1))
: >"$SLOW.held"
rm -f "$SLOW.held"
DOCKER_HOST=unix://$SLOW "$S" -C "$CAT" session open --runtime "$RA" --tenant side --scope run \
	--subject killed >/dev/null 2>&1 &
KPID=$!
n=0
while [ ! -s "$SLOW.held" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null
ls "$ROOT/.sbxcat-open" >"$T/held.ls" 2>/dev/null
is "$(wc -l <"$T/held.ls" | tr -d ' ')" 1 "an open killed between its count and its start leaves its reservation behind"
open_s side run after-kill
is "$rc" 0 "the next open takes the slot: the dead open's reservation was released"
is "$(ls "$ROOT/.sbxcat-open" | wc -l | tr -d ' ')" 0 "... and removed"
open_s side run over
is "$rc:$(err)" "1:sbxcat: the host holds its ceiling of $SANDBOXD_MAX_SESSIONS sessions" \
	"... and the host is at its ceiling again, not over it"
kill -TERM "$SPX"
wait "$SPX" 2>/dev/null
SANDBOXD_MAX_SESSIONS=100

# -- Reopen: a stopped container is started again, a removed one made again,
# on the same workspace.
echo "kept-$sfx" >"$WS1/kept"
id1=$(insp "$K1" '{{.Id}}')
tb_docker stop -t 1 "$(ctr "$K1")" >/dev/null
sbx session ls --json
is "$(jq -r ".[] | select(.key == \"$K1\") | .state" "$T/out")" exited "ls shows a stopped session as exited"
open_s acme run subject-1 --json
is "$rc:$(jq -r .outcome "$T/out"):$(insp "$K1" '{{.Id}}')" "0:restarted:$id1" "reopening a stopped container restarts it"
is "$(state "$K1"):$(cat "$WS1/kept")" "running:kept-$sfx" "... running, its files there"
tb_docker rm -f "$(ctr "$K1")" >/dev/null
sbx session ls --json
is "$(jq -r ".[] | select(.key == \"$K1\") | .state" "$T/out")" closed "ls shows a session whose container is gone as closed"
open_s acme run subject-1 --json
is "$rc:$(jq -r .outcome "$T/out")" "0:created" "reopening a removed container creates it again"
[ "$(insp "$K1" '{{.Id}}')" != "$id1" ]; ok $? "... a new container"
is "$(jq -r .workspace "$T/out"):$(cat "$WS1/kept")" "$WS1:kept-$sfx" "... on the same workspace, files kept"

# SANDBOXD_PERSIST_CONTAINERS: close only stops.
SANDBOXD_PERSIST_CONTAINERS=1 sbx session close "$K1" --json
is "$rc:$(jq -r .container "$T/out"):$(jq -r .purged "$T/out")" "0:stopped:false" \
	"close with SANDBOXD_PERSIST_CONTAINERS stops the container"
is "$(state "$K1")" exited "... which is left exited"
open_s acme run subject-1 --json
is "$rc:$(jq -r .outcome "$T/out")" "0:restarted" "... and restarted by the next open"
sbx session close "$K1"
is "$rc:$(out):$(err)" "0::" "close exits 0 and prints nothing"
tb_docker inspect "$(ctr "$K1")" >/dev/null 2>&1; ok $((!$?)) "close removes the container"
is "$(cat "$WS1/kept")" "kept-$sfx" "close without --purge keeps the workspace"
sbx session show "$K1" --json
is "$rc:$(jq -r .state "$T/out")" "0:closed" "show of a closed session says closed"

# A container of the session's name without our labels is never adopted.
tb_docker create --name "$(ctr "$K1")" --network none sbxcat-test/busybox:1 true >/dev/null
sb_names="$sb_names $(ctr "$K1")"
open_s acme run subject-1
is "$rc" 1 "a foreign container with the session's name is refused (exit 1)"
is "$(insp "$K1" '{{.State.Status}} {{len .Config.Labels}}')" "created 0" "... and left as it was"
tb_docker rm -f "$(ctr "$K1")" >/dev/null

# -- close --purge whatever the state: paused, exited, created.
open_s acme user purge-paused
Kp=$key
tb_docker pause "$(ctr "$Kp")" >/dev/null
sbx session ls --json
is "$(jq -r ".[] | select(.key == \"$Kp\") | .state" "$T/out")" paused "ls shows a paused session as paused"
sbx session close "$Kp" --purge --json
is "$rc:$(jq -r .container "$T/out"):$(jq -r .purged "$T/out")" "0:removed:true" "close --purge of a paused container"
tb_docker inspect "$(ctr "$Kp")" >/dev/null 2>&1; ok $((!$?)) "... removes it"
[ ! -e "$ROOT/$Kp" ]; ok $? "... and ROOT/KEY with its workspace and record"
sbx session ls --json
jq -e ".[] | select(.key == \"$Kp\")" "$T/out" >/dev/null; ok $((!$?)) "... and ls no longer lists it"
sbx session close "$Kp" --purge
is "$rc:$(err)" "1:sbxcat: no session '$Kp'" "closing a purged session: no session"

open_s acme user purge-exited
Kx=$key
tb_docker stop -t 1 "$(ctr "$Kx")" >/dev/null
sbx session close "$Kx" --purge
is "$rc" 0 "close --purge of an exited container"
tb_docker inspect "$(ctr "$Kx")" >/dev/null 2>&1; ok $((!$?)) "... removes it"

open_s acme user purge-created
Kc=$key
tb_docker rm -f "$(ctr "$Kc")" >/dev/null
tb_docker create --name "$(ctr "$Kc")" --network none \
	--label "io.sbxcat.deployment=$DEP" --label io.sbxcat.tenant=acme \
	--label "io.sbxcat.key=$Kc" --label "io.sbxcat.runtime=$RA" \
	--label "io.sbxcat.created=$(date +%s)" "$IMG" sleep 1000 >/dev/null
sbx session ls --json
is "$(jq -r ".[] | select(.key == \"$Kc\") | .state" "$T/out")" created "ls shows a container stuck in created"
sbx session close "$Kc" --purge
is "$rc" 0 "close --purge of a container in created"
tb_docker inspect "$(ctr "$Kc")" >/dev/null 2>&1; ok $((!$?)) "... removes it"
[ ! -e "$ROOT/$Kc" ]; ok $? "... and its directory"

is "$(ls -A "$ROOT/.sbxcat-trash" | wc -l | tr -d ' ')" 0 "every purge above left nothing in the trash"

# -- close --purge holds the quota lock only to move ROOT/KEY into the
# trash; the tree is deleted after the lock is released.  The lock is
# asked for once ROOT/KEY has left the root: it must be free while the
# deletion still runs (the trash still holds the entry).
open_s acme user purge-big
Kb=$key
t0=$(now)
# Hard links: a name costs no inode, so 120,000 of them are made in a few
# seconds even on a loaded machine (creating as many files took 90 s).
/usr/bin/python3 -c 'import os, sys
for f in range(3):
    src = "%s/f%d" % (sys.argv[1], f)
    open(src, "w").close()
    for d in range(8):
        p = "%s/d%d-%d" % (sys.argv[1], f, d)
        os.mkdir(p)
        for i in range(5000):
            os.link(src, "%s/%d" % (p, i))' "$(ws "$Kb")"
ok $? "120,000 names made in the workspace ($(elapsed "$t0" "$(now)") s)"
bounded session close "$Kb" --purge >"$T/pb.out" 2>"$T/pb.err" &
pb=$!
n=0
while [ -e "$ROOT/$Kb" ] && [ $n -lt 6000 ]; do sleep 0.01; n=$((n + 1)); done
t1=$(now)
flock -w 120 "$ROOT/.sbxcat.lock" true
t2=$(now)
during=$(ls -A "$ROOT/.sbxcat-trash" 2>/dev/null | wc -l | tr -d ' ')
wait $pb
prc=$?
t3=$(now)
is "$prc" 0 "close --purge of 120,000 names exits 0"
is "$during" 1 "the quota lock was free while the purge was still deleting (its entry in the trash)"
diag "lock taken $(elapsed "$t1" "$t2") s after ROOT/KEY left; the deletion went on $(elapsed "$t2" "$t3") s after that"
is "$(ls -A "$ROOT/.sbxcat-trash" | wc -l | tr -d ' '):$(test -e "$ROOT/$Kb"; echo $?)" "0:1" \
	"... and once it ends, nothing is left in the trash or the root"

# -- /tmp is a tmpfs of mode 1777 whatever the image's /tmp is (a busybox
# root imported with /tmp 0755): the sandbox user can write it.
IMG755=sbxcat/ts-tmp755-$sfx:1
r755=$T/tmp755
mkdir -p "$r755/bin" "$r755/etc" "$r755/tmp" && chmod 755 "$r755/tmp" &&
	cp /bin/busybox "$r755/bin/" &&
	for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$r755/bin/$a"; done &&
	echo 'root:x:0:0:root:/root:/bin/sh' >"$r755/etc/passwd" &&
	tar -C "$r755" --owner=0 --group=0 --numeric-owner -c . | tb_docker import - "$IMG755" >/dev/null
ok $? "an image whose /tmp is 0755 (imported busybox root)"
cat >"$T/cat755.json" <<JSON
[{"alias": "ts-tmp755", "description": "/tmp 0755 in the image", "image": "$IMG755"}]
JSON
timeout -s KILL 60 "$S" -C "$T/cat755.json" session open --tenant acme --scope run --subject tmp755 >"$T/out" 2>"$T/err"
K755=$(out)
timeout -s KILL 60 "$S" -C "$T/cat755.json" exec "$K755" -c 'echo hi > /tmp/w && cat /tmp/w && id -u && stat -c "%u %a" /tmp' >"$T/out" 2>"$T/err"
# The mode is runc's to decide (1.1 copies the image's 0755 over mode=).
is "$?:$(out | head -n 3 | tr '\n' ' ' | sed 's/ [0-7]* $//')" "0:hi 10001 10001" \
	"the sandbox user writes /tmp: a tmpfs it owns ($(out | tail -n 1))" ||
	diag "$(cat "$T/err")"
timeout -s KILL 60 "$S" -C "$T/cat755.json" exec "$K755" -c 'grep " /tmp " /proc/mounts' >"$T/out" 2>"$T/err"
out | grep -Eq ',nosuid(,|$)' && out | grep -Eq ',nodev(,|$)' && out | grep -Eq ',noexec(,|$)'
ok $? "... mounted noexec,nosuid,nodev ($(out))"

# -- An image without sleep is refused at open, leaving nothing behind.
if sb_nosleep_image; then
	open_s acme run nosleep --runtime "$RNOSLEEP"
	is "$rc" 1 "an image runtime without sleep is refused (exit 1)"
	grep -q sleep "$T/err"; ok $? "... saying it has no sleep"
	diag "$(err)"
	is "$(ndep --filter "label=io.sbxcat.runtime=$RNOSLEEP")" 0 "... and leaves no container"
else
	skip "docker import failed" "an image runtime without sleep is refused"
fi

# -- Memory: SANDBOXD_MEM_LIMIT, and a runtime's own mem_limit.
SANDBOXD_MEM_LIMIT=512m open_s acme agent memory
is "$(insp "$key" '{{.HostConfig.Memory}}:{{.HostConfig.MemorySwap}}')" "536870912:536870912" \
	"SANDBOXD_MEM_LIMIT=512m sets Memory and MemorySwap"

# -- A networked runtime joins SBXCAT_SESSION_NETWORK, and nothing else.
NET=ts-net-$sfx
if tb_docker network create --internal "$NET" >/dev/null; then
	sb_networks=$NET
	SBXCAT_SESSION_NETWORK=$NET; export SBXCAT_SESSION_NETWORK
	open_s acme run net-1 --runtime "$RNET"
	Kn1=$key
	open_s acme run net-2 --runtime "$RNET"
	Kn2=$key
	open_s acme run net-none
	Knone=$key
	unset SBXCAT_SESSION_NETWORK
	is "$(insp "$Kn1" '{{.HostConfig.NetworkMode}}')" "$NET" "a networked runtime's NetworkMode is SBXCAT_SESSION_NETWORK"
	is "$(insp "$Kn1" '{{len .NetworkSettings.Networks}}{{range $k, $v := .NetworkSettings.Networks}} {{$k}}{{end}}')" \
		"1 $NET" "... and it is on that network alone"
	is "$(insp "$Kn1" '{{.HostConfig.Memory}}:{{.HostConfig.MemorySwap}}')" "100663296:100663296" \
		"the runtime's mem_limit (96m) sets Memory and MemorySwap"
	is "$(insp "$Knone" '{{.HostConfig.NetworkMode}}')" none "a runtime without needs_network stays on none"
	ip2=$(insp "$Kn2" "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}")
	# The listener writes what it gets to a file of its workspace, read
	# host-side: the end of a short exec's output stream is the engine's
	# to lose under load, and that is not what is tested here.
	bounded exec "$Kn2" --timeout 15 -c "nc -l -p 8080 > got.txt" >"$T/nc.out" 2>"$T/nc.err" &
	lpid=$!
	sbx exec "$Kn1" --timeout 15 -c "i=0; while [ \$i -lt 30 ]; do echo hello-$sfx | nc -w 2 $ip2 8080 && exit 0; i=\$((i + 1)); sleep 0.2; done; exit 1"
	wait $lpid
	is "$rc:$(cat "$(ws "$Kn2")/got.txt" 2>/dev/null)" "0:hello-$sfx" "two sessions on the network reach each other"
	sbx exec "$Kn1" -c "awk 'NR > 2 { print \$1 }' /proc/net/dev | sort | tr '\n' ' '"
	is "$(out)" "eth0: lo: " "... through one interface besides lo"
else
	skip "docker network create --internal failed" "a networked runtime joins SBXCAT_SESSION_NETWORK"
fi

sb_done

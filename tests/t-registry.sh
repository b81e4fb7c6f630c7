#!/bin/sh
# t-registry.sh - images built once and pulled everywhere else, on a real
# docker-registry and two real engines (tests/fleetbed.sh): prewarm --push
# on h1 builds and pushes; the registry lists it; h2's prewarm with
# SBXCAT_REGISTRY pulls it and builds nothing (no build request, no
# container, the engine's events a pull, the image ID h1's); again, it
# does nothing; a runtime the registry lacks is built and says so; the
# registry behind a password: the credentials' file refused while others
# may read it, used when it is private, and the password in no output, no
# log, no process's arguments or environment; a registry that stalls ends
# in a timeout naming it, not a hang; a stopped one in a clear error; a
# hostile push stream (a 2 MiB line, lines not JSON, an escape sequence)
# is bounded and reported (tests/fake-engine.py: no real engine sends one).
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
. "$srcdir/tests/fleetbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
srcdir=$(cd "$srcdir" && pwd)
PY=$(command -v /usr/bin/python3 python3 | head -n 1)

T=$(mktemp -d)
stall_pid="" fake_pid=""
cleanup() {
	[ -z "$stall_pid" ] || kill "$stall_pid" 2>/dev/null
	[ -z "$fake_pid" ] || kill "$fake_pid" 2>/dev/null
	fleetbed_stop
	rm -rf "$T"
}
trap cleanup EXIT
fleetbed_need 2
R=$FB_REGISTRY
cd "$T" || exit 1
unset SBXCAT_DEPLOYMENT_ID SANDBOXD_SANDBOX_UID SBXCAT_CATALOG SBXCAT_REGISTRY SBXCAT_REGISTRY_AUTH_FILE \
	SBXCAT_REGISTRY_IDLE SBXCAT_ENGINE_STALL SBXCAT_ENGINE_TIMEOUT
SBXCAT_ENGINE_TRACE=$T/trace; export SBXCAT_ENGINE_TRACE
# The password the registry will want; it must appear nowhere.
PW=pw-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')

A=rg-a B=rg-b C=rg-c
cat >cat.json <<JSON
[
  {"alias": "$A", "description": "pushed from h1", "base_image": "sbxcat-test/busybox:1",
   "setup_commands": ["echo building $A"]},
  {"alias": "$B", "description": "never pushed", "base_image": "sbxcat-test/busybox:1",
   "env_vars": {"WHO": "$B"}},
  {"alias": "$C", "description": "another image under its tag", "base_image": "sbxcat-test/busybox:1"}
]
JSON
# No sandbox account: A's build runs one container (its setup command),
# B's none; the bed's 2 cores are shared with the rest of the suite.
SANDBOXD_SANDBOX_UID=0; export SANDBOXD_SANDBOX_UID
TA=$("$S" -C cat.json tag $A) TC=$("$S" -C cat.json tag $C)
HA=${TA##*:}

# pw K [ARGS]: prewarm cat.json on host K's engine; rc, out, err.
pw() {
	k=$1
	shift
	: >"$T/trace"
	DOCKER_HOST=$(fb_docker_host "$k") "$S" -C cat.json prewarm "$@" >out 2>err
	rc=$?
	cat out err >>all-output
}
result() { awk -v a="$1" '$1 == a { print $2 }' out; }
sent() { grep -c "$1" "$T/trace"; }
# The registry's own answers, from inside the bed.
reg_get() { fb_in 1 curl -s --max-time 5 "http://$R$1"; }
id_of() { fb_docker "$1" image inspect -f '{{.Id}}' "$2" 2>/dev/null; }
untag_h2() { fb_docker 2 rmi "$1" "$1.default" >/dev/null 2>&1; }

# --- h1 builds once and pushes --------------------------------------------
pw 1 --push "$R" $A
is "$rc" 0 "prewarm --push exits 0"
is "$(result $A)" pushed "h1: the runtime is pushed"
grep -q "^    built here\$" out && grep -q "^    pushed to $R as $R/$TA\$" out
ok $? "h1: the report says it was built here and pushed under its content tag"
is "$(sent '^POST /v[0-9.]*/build')" 1 "h1: one build"
is "$(sent "^POST /v[0-9.]*/images/$R/sbxcat/$A/push?tag=$HA\$")" 1 \
	"h1: one push, of the content tag, through the Engine API"
is "$(fb_docker 1 images -q "$R/sbxcat/$A")" "" "h1: the registry's name is not left as a tag"
like "$(reg_get /v2/_catalog)" "\"sbxcat/$A\"" "the registry's catalogue lists sbxcat/$A"
like "$(reg_get "/v2/sbxcat/$A/tags/list")" "\"$HA\"" "the registry's tags list has the content tag"

pw 1 --push "$R" $A
is "$rc:$(result $A)" "0:present" "a second push: the registry has it already"
grep -q "^    already in $R as $R/$TA\$" out; ok $? "the report says it is already there"
is "$(sent 'push\|/build')" 0 "a second push sends no build and no push"

# --- h2 pulls and builds nothing -------------------------------------------
t0=$(date +%s)
SBXCAT_REGISTRY=$R pw 2 $A
t1=$(($(date +%s) + 1))
is "$rc:$(result $A)" "0:pulled" "h2: the runtime is pulled"
grep -q "^    pulled from $R\$" out; ok $? "h2: the report says from where"
is "$(sent '^POST /v[0-9.]*/build')" 0 "h2: no build request"
is "$(id_of 2 "$TA")" "$(id_of 1 "$TA")" "h2's image is h1's (same image ID)"
is "$(id_of 2 "$TA.default")" "$(id_of 1 "$TA")" "h2 claims it as a build would"
is "$(fb_docker 2 images -q "$R/sbxcat/$A")" "" "h2: the registry's name is not left as a tag"
fb_docker 2 events --since "$t0" --until "$t1" --format '{{.Type}} {{.Action}}' >events 2>&1
grep -q '^image pull$' events; ok $? "h2's engine saw a pull"
is "$(grep -c '^container ' events)" 0 "h2's engine ran no container: nothing was built"

SBXCAT_REGISTRY=$R pw 2 $A
is "$rc:$(result $A)" "0:cached" "h2 again: cached, nothing to do"
is "$(sent '^POST')" 0 "h2 again: no POST at all (no pull, no build, no tag)"

# --- a runtime the registry does not have ------------------------------------
SBXCAT_REGISTRY=$R pw 2 $B
is "$rc:$(result $B)" "0:built" "not in the registry: built on h2"
grep -q "^    not in $R, built (.*manifest unknown" out
ok $? "and the report says so, with the engine's words"

# --- another image under the content tag ----------------------------------
# Pushed by hand: the base image, not the recipe's build, named as rg-c's.
fb_docker 1 tag sbxcat-test/busybox:1 "$R/$TC" &&
	fb_docker 1 push "$R/$TC" >/dev/null 2>&1 && fb_docker 1 rmi "$R/$TC" >/dev/null
ok $? "an image that is not rg-c's recipe is pushed under rg-c's tag"
SBXCAT_REGISTRY=$R pw 2 $C
is "$rc:$(result $C)" "1:failed" "h2: the pulled image is refused, exit 1"
like "$(cat out)" "the image '$R/$TC' from the registry $R is not this runtime's recipe: its label io.sbxcat.runtime is missing" \
	"because it lacks the recipe's labels"
is "$(fb_docker 2 images -q "sbxcat/$C"; fb_docker 2 images -q "$R/sbxcat/$C")" "" \
	"and it is given no name on h2"

# --- bad settings ---------------------------------------------------------
pw 1 --push "http://$R" $A
is "$rc" 2 "--push with a URL is a usage error"
like "$(cat err)" "--push 'http://$R': expected HOST:PORT" "and says what it wants"
bad=""
for r in :5000 host host:0 host:65536 '[::1]:5000' a..b:1 -a:1 "$R/x" "$R "; do
	pw 1 --push "$r" $A
	[ "$rc" = 2 ] && [ "$(sent .)" = 0 ] || bad="$bad '$r':$rc"
done
is "$bad" "" "every --push that is not HOST:PORT is a usage error, before the engine is asked"
SBXCAT_REGISTRY="$R/x" pw 2 $A
is "$rc" 3 "a bad SBXCAT_REGISTRY is refused (exit 3)"
is "$(grep -c '^POST' "$T/trace")" 0 "before anything is sent"

# --- the registry behind a password --------------------------------------
reg_stop() {
	for p in $(fb_pids "$FB_RUN/reg/"); do kill "$p" 2>/dev/null; done
	n=0
	while [ -n "$(fb_pids "$FB_RUN/reg/")" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
}
reg_stop
HASH=$("$PY" -W ignore -c 'import crypt, sys
print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=32)))' "$PW")
echo "fleet:$HASH" >"$FB_RUN/reg/htpasswd"
# Its access log on: the password must not be in it either.
sed 's/disabled: true/disabled: false/' "$FB_RUN/reg/config.yml" >"$FB_RUN/reg/auth.yml"
cat >>"$FB_RUN/reg/auth.yml" <<EOF
auth:
  htpasswd:
    realm: sbxcat-test
    path: $FB_RUN/reg/htpasswd
EOF
( cd / && PATH=$PATH:$TB_PATH exec setsid nohup nsenter --net="$FB_RUN/reg/netns" \
	docker-registry serve "$FB_RUN/reg/auth.yml" </dev/null >>"$FB_RUN/reg/registry.log" 2>&1 & )
n=0
until [ "$(fb_in 1 curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$R/v2/_catalog")" = 401 ] ||
	[ $n -ge 100 ]; do sleep 0.1; n=$((n + 1)); done
[ $n -lt 100 ] || bail_out "the registry with a password did not start: $(tail -n 3 "$FB_RUN/reg/registry.log")"
ok 0 "the registry now wants a password"

untag_h2 "$TA"
SBXCAT_REGISTRY=$R pw 2 $A
is "$rc:$(result $A)" "3:failed" "no credentials: the runtime fails, exit 3"
like "$(cat out)" "from the registry $R: .*no basic auth credentials" "naming the registry and why"

printf 'fleet:%s\n' "$PW" >auth
chmod 644 auth
SBXCAT_REGISTRY=$R SBXCAT_REGISTRY_AUTH_FILE=$T/auth pw 2 $A
is "$rc" 3 "a credentials file others may read is refused"
like "$(cat err)" "SBXCAT_REGISTRY_AUTH_FILE '$T/auth': group or others may read or write it \\(mode 0644\\)" \
	"saying why"
is "$(grep -c '^POST' "$T/trace")" 0 "before anything is sent"
chmod 600 auth
SBXCAT_REGISTRY=$R SBXCAT_REGISTRY_AUTH_FILE=$T/auth pw 2 $A
is "$rc:$(result $A)" "0:pulled" "USER:PASSWORD file: pulled through the password"

# A docker config's JSON, for h2's push of the runtime it built.
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$R" "$(printf 'fleet:%s' "$PW" | base64 -w0)" >config.json
chmod 600 config.json
SBXCAT_REGISTRY_AUTH_FILE=$T/config.json pw 2 --push "$R" $B
is "$rc:$(result $B)" "0:pushed" "docker config file: pushed through the password"
printf '{"auths": {"x": 1}, "pw": "%s"' "$PW" >bad.json
chmod 600 bad.json
SBXCAT_REGISTRY_AUTH_FILE=$T/bad.json pw 1 --push "$R" $B
like "$rc:$(cat err)" "^3:sbxcat: SBXCAT_REGISTRY_AUTH_FILE '$T/bad.json': not valid JSON" \
	"a broken file: its name and the fault, not its text"

# --- a registry that stalls ---------------------------------------------------
reg_stop
cat >stall.py <<'EOF'
# Accepts and never answers, for 60 s at most.
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
host, port = sys.argv[1].rsplit(":", 1)
s.bind((host, int(port)))
s.listen(64)
s.settimeout(0.5)
held, end = [], time.time() + 60
while time.time() < end:
    try:
        held.append(s.accept()[0])
    except socket.timeout:
        pass
EOF
PATH=$PATH:$TB_PATH nsenter --net="$FB_RUN/reg/netns" "$PY" stall.py "$R" </dev/null >/dev/null 2>&1 &
stall_pid=$!
n=0
until fb_in 1 "$PY" -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)' \
	"${R%:*}" "${R#*:}" 2>/dev/null || [ $n -ge 50 ]; do sleep 0.1; n=$((n + 1)); done

untag_h2 "$TA"
(
	SBXCAT_REGISTRY=$R SBXCAT_REGISTRY_IDLE=2 SBXCAT_REGISTRY_AUTH_FILE=$T/auth
	export SBXCAT_REGISTRY SBXCAT_REGISTRY_IDLE SBXCAT_REGISTRY_AUTH_FILE
	exec env DOCKER_HOST="$(fb_docker_host 2)" "$S" -C "$T/cat.json" prewarm $A >out 2>err
) &
ppid=$!
sleep 1
# While it waits on the registry: its arguments, its environment, everyone's.
{ tr '\0' ' ' <"/proc/$ppid/cmdline"; tr '\0' '\n' <"/proc/$ppid/environ"; ps -eo args; } >procs 2>&1
s0=$(date +%s)
n=0
while kill -0 "$ppid" 2>/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
kill -0 "$ppid" 2>/dev/null && { kill "$ppid"; diag "prewarm still ran after 30 s"; }
wait "$ppid"
rc=$?
cat out err >>all-output
took=$(($(date +%s) - s0 + 1))
is "$rc:$(result $A)" "3:failed" "a stalled registry: the runtime fails, exit 3"
like "$(cat out)" "from the registry $R: the Docker engine sent nothing for 2 s" \
	"with a timeout naming the registry"
[ "$took" -le 10 ]; ok $? "within the idle bound, not a hang (${took}s)"
grep -q 'SBXCAT_REGISTRY_AUTH_FILE' procs; ok $? "the process listing was read"

SBXCAT_REGISTRY_IDLE=2 pw 1 --push "$R" $A
is "$rc:$(result $A)" "3:failed" "a push to a stalled registry fails, exit 3"
like "$(cat out)" "cannot ask the registry $R for '$R/$TA': the Docker engine sent nothing for 2 s" \
	"bounded as well"

# --- a stopped registry ---------------------------------------------------
kill "$stall_pid"; wait "$stall_pid" 2>/dev/null; stall_pid=""
SBXCAT_REGISTRY=$R pw 2 $A
is "$rc:$(result $A)" "3:failed" "a stopped registry: the runtime fails, exit 3"
like "$(cat out)" "cannot pull '$R/$TA' from the registry $R: .*connection refused" \
	"naming the registry and why"

# --- the password, nowhere ------------------------------------------------
cat "$FB_RUN"/h*/dockerd.log "$FB_RUN/reg/registry.log" >logs 2>/dev/null
grep -q 'GET /v2/' logs; ok $? "the engines' and the registry's logs were read"
for f in all-output "$T/trace" logs procs events; do
	grep -qF -- "$PW" "$f" && diag "the password is in $f"
done
! grep -qF -- "$PW" all-output "$T/trace" logs procs events
ok $? "the password is in no output, trace, engine or registry log, process listing"

# --- a hostile push stream -------------------------------------------------
mkdir -p fake
"$PY" "$srcdir/tests/fake-engine.py" "$T/fake.sock" hostile "$T/fake" </dev/null >fake/log 2>&1 &
fake_pid=$!
n=0
until [ -S "$T/fake.sock" ] || [ $n -ge 50 ]; do sleep 0.1; n=$((n + 1)); done
cat >hostile.json <<JSON
[
  {"alias": "hs-ok", "description": "d", "base_image": "sbxcat-test/busybox:1"},
  {"alias": "hs-err", "description": "d", "base_image": "sbxcat-test/busybox:1"}
]
JSON
DOCKER_HOST=unix://$T/fake.sock SBXCAT_REGISTRY_AUTH_FILE=$T/auth \
	"$S" -C hostile.json prewarm --push 10.9.9.9:5000 >out 2>err
rc=$?
is "$rc:$(result hs-ok):$(result hs-err)" "3:failed:failed" "a hostile push stream: both fail, exit 3"
grep -q "push done, but the registry 10.9.9.9:5000 has no .*could not be read" out
ok $? "a stream that claims success is checked against the registry"
grep -q "denied: .*x1b\[31mred (3 lines of the engine's reply could not be read)" out
ok $? "the in-band error is reported, escaped, with the unreadable lines counted"
grep -q "a line of over 1 MiB from the engine was skipped" out; ok $? "the 2 MiB line was skipped"
grep -q "$(printf '\033')" out; ok $((!$?)) "no escape sequence reaches the output"
# The engine's request log: the credentials went in X-Registry-Auth, once
# per request to the registry, and nowhere else.
hdr=$(grep -m1 'X-Registry-Auth:' fake/requests | sed 's/.*: //')
is "$(printf '%s' "$hdr" | tr '_-' '/+' | base64 -d 2>/dev/null)" \
	"{\"username\":\"fleet\",\"password\":\"$PW\",\"serveraddress\":\"10.9.9.9:5000\"}" \
	"X-Registry-Auth carries the credentials for the registry"
grep -v 'X-Registry-Auth:' fake/requests | grep -qF -- "$PW"
ok $((!$?)) "the password is in no other line of the engine's request log"
is "$(grep -c 'X-Registry-Auth:' fake/requests)" "$(grep -c 'push?\|/distribution/' fake/requests)" \
	"the header goes with the registry's requests only"

done_testing

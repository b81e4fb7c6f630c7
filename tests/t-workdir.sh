#!/bin/sh
# t-workdir.sh - the sandbox sees its workspace at the work dir
# (SANDBOXD_WORK_DIR, default /workspace), never at its host path (issue
# 28, item 1; docs/serve.md, "Paths"): with a real `sbxcat serve` and the
# command line on the real engine, commands start there, the wire answers
# and takes /workspace paths (never ROOT/KEY/workspace), no host path, key
# or process id reaches a client or a sandbox (answers, a failed open's
# 502, events, the container's environment), SANDBOXD_WORK_DIR=/work moves
# all of it, a pooled container binds the same work dir, and a container
# an older sbxcat made (the workspace at its host path) is made again at
# the next open or heal, its files kept.
# Go templates for docker inspect are single-quoted on purpose.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init t-workdir wd
DB=""
if pgbed_start >/dev/null 2>&1; then
	DB=t_workdir_$$
	URL=$(pgbed_newdb "$DB") || DB=""
fi
SPID=""
# wd_cleanup: what a budgeted session could leave if the test stops
# midway (its mount, its loop device), then sessionbed's.
wd_cleanup() {
	sb_serve_stop
	for m in $(awk -v t="$T/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	for b in /sys/block/loop*/loop/backing_file; do
		[ -r "$b" ] || continue
		case "$(cat "$b" 2>/dev/null)" in
		"$T"/*) d=${b%/loop/backing_file}; losetup -d "/dev/${d##*/}" 2>/dev/null ;;
		esac
	done
	[ -n "$DB" ] && pgbed_dropdb "$DB" 2>/dev/null
	sb_cleanup
}
trap wd_cleanup EXIT
if [ -n "$DB" ]; then
	SBXCAT_DATABASE_URL=$URL
	export SBXCAT_DATABASE_URL
	sbx audit migrate
	is "$rc" 0 "the test's database migrated"
else
	diag "no PostgreSQL test-bed: the events are not checked (reason: pgbed_start failed)"
fi
SANDBOXD_PAUSE_AFTER=0
export SANDBOXD_PAUSE_AFTER

TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
SOCK=$T/serve.sock
SANDBOXD_TOKEN=$TOKEN
export SANDBOXD_TOKEN
"$S" -C "$CAT" prewarm "$RA" >/dev/null 2>&1
ok $? "the runtime's image is built"

# start_server [VAR=VALUE...]: sbxcat serve with these settings, its
# stderr (the access log and warnings) appended to $T/log.
start_server() {
	env "$@" "$S" -C "$CAT" serve --listen "tcp:127.0.0.1:$PORT" \
		--listen "unix:$SOCK" 2>>"$T/log" &
	SPID=$!
	sb_serve_wait "$SOCK"
	# (this one, not one left running: a second cannot listen and exits)
	curl -sf --unix-socket "$SOCK" http://x/healthz >/dev/null && sleep 0.2 && kill -0 "$SPID"
}

# wire PHASE: the wire's checks of tests below (python, http.client on
# TCP), each line "ok<TAB>what" or "not ok<TAB>what<TAB>why" made a test.
wire() {
	WD_PHASE=$1 WD_FAIL=${WD_FAIL:-} WD_PORT=$PORT WD_TOKEN=$TOKEN WD_ROOT=$ROOT WD_SPID=$SPID \
		WD_RT=$RA WD_RNOSLEEP=$RNOSLEEP WD_T=$T \
		timeout -s KILL 120 python3 - >"$T/wire.out" 2>"$T/wire.err" <<'PY'
import base64, http.client, json, os, re, sys

E = os.environ
sys.path.insert(0, os.path.join(E["srcdir"], "tests"))
from wirehost import key_of  # noqa: E402
PHASE, ROOT, T = E["WD_PHASE"], E["WD_ROOT"], E["WD_T"]
state_file = os.path.join(T, "wire-state.json")
state = json.load(open(state_file)) if os.path.exists(state_file) else {}


def say(cond, what, why=None):
    print("%s\t%s%s" % ("ok" if cond else "not ok", what,
                        "" if cond else "\t" + repr(why)[:600]))


def req(method, path, body=None, token=E["WD_TOKEN"]):
    c = http.client.HTTPConnection("127.0.0.1", int(E["WD_PORT"]), timeout=60)
    h = {"X-Sandbox-Token": token} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body)
        h["Content-Type"] = "application/json"
    c.request(method, path, data, h)
    r = c.getresponse()
    raw = r.read().decode("utf-8", "replace")
    c.close()
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        doc = raw
    return r.status, doc, raw



def op(sid, tok, name, **body):
    return req("POST", "/sessions/%s/%s" % (sid, name), body, tok)


def opened(sid, **extra):
    body = {"session_id": sid}
    body.update(extra)
    st, doc, raw = req("POST", "/sessions", body)
    if st != 200:
        return None, None, (st, raw)
    return doc["token"], key_of(ROOT, sid), None


def clean(raw, key, what):
    """No host path, no key in an answer (the raw body)."""
    say(ROOT not in raw and (not key or key not in raw),
        "%s: no host path, no key in the answer" % what, raw)


WD = E.get("WD_WORK_DIR", "/workspace")


def phase_main():
    st, pol, raw = req("GET", "/policy")
    say(st == 200 and pol["work_dir"] == WD, "GET /policy: work_dir is %s" % WD, pol)
    clean(raw, None, "GET /policy")
    sid = "wd-main"
    tok, key, why = opened(sid)
    say(tok is not None, "a session opens", why)
    state["main"] = {"tok": tok, "key": key}
    st, d, raw = op(sid, tok, "exec", command="pwd")
    say(st == 200 and d["output"] == WD + "\n" and d["exit_code"] == 0,
        "exec pwd prints the work dir", d)
    st, d, raw = op(sid, tok, "exec", command="ls -d %s && ls %s >/dev/null && echo fine" % (WD, WD))
    say(st == 200 and d["exit_code"] == 0 and d["output"].endswith("fine\n"),
        "ls %s works in a command" % WD, d)
    st, d, raw = op(sid, tok, "exec", command="env; cat /proc/self/cmdline; hostname; id")
    say(st == 200 and ROOT not in d["output"] and key not in d["output"],
        "the sandbox's environment holds no host path and no key", d)
    st, d, raw = op(sid, tok, "write", path="notes/a.txt",
                    content_b64=base64.b64encode(b"x\n").decode())
    say(st == 200 and d == {"path": WD + "/notes/a.txt", "error": None} or
        (st == 200 and d.get("path") == WD + "/notes/a.txt" and d.get("error") is None),
        "write notes/a.txt answers %s/notes/a.txt" % WD, d)
    clean(raw, key, "write")
    st, d, raw = op(sid, tok, "edit", path="notes/a.txt", old_string="x", new_string="y")
    say(st == 200 and d.get("path") == WD + "/notes/a.txt" and d.get("occurrences") == 1,
        "edit answers %s/notes/a.txt" % WD, d)
    clean(raw, key, "edit")
    st, d, raw = op(sid, tok, "edit", path=WD + "/notes/a.txt", old_string="y", new_string="z")
    say(st == 200 and d.get("path") == WD + "/notes/a.txt",
        "edit of the absolute %s/notes/a.txt answers it" % WD, d)
    st, d, raw = op(sid, tok, "write", path=WD + "/abs.txt",
                    content_b64=base64.b64encode(b"abs\n").decode())
    say(st == 200 and d.get("path") == WD + "/abs.txt" and d.get("error") is None,
        "write of an absolute path under the work dir works", d)
    st, d, raw = op(sid, tok, "exec", command="cat %s/abs.txt notes/a.txt" % WD)
    say(st == 200 and d["output"] == "abs\nz\n", "... the sandbox sees what was written, where it was answered", d)
    host = os.path.join(ROOT, key, "workspace")
    bad = [host + "/host.txt", host, "/workspacex/y.txt", WD + "x",
           WD + "/../etc/z.txt", "/etc/wd.txt", "/"]
    if WD != "/workspace":
        bad.append("/workspace/old.txt")
    for p in bad:
        st, d, raw = op(sid, tok, "write", path=p,
                        content_b64=base64.b64encode(b"no\n").decode())
        say(st == 200 and d.get("path") is None and d.get("error"),
            "write of %r is refused (outside the workspace)" % p.replace(ROOT, "ROOT"), d)
        # (the path as the client gave it may be said back)
        clean(raw.replace(json.dumps(p)[1:-1], "").replace(p, ""), key, "a refused write")
    say(not os.path.exists(os.path.join(host, "host.txt")) and
        not any(n.startswith("host") for n in os.listdir(host)),
        "... and nothing was written", os.listdir(host))
    st, d, raw = op(sid, tok, "read", path=host + "/abs.txt")
    say(st == 200 and d.get("content", "").startswith("Error:") and "abs\n" not in d["content"],
        "a read of the host path is refused", d)
    clean(raw.replace(host + "/abs.txt", ""), key, "a read of the host path")
    st, d, raw = op(sid, tok, "read_bytes", path=WD + "/abs.txt")
    say(st == 200 and base64.b64decode(d["content_b64"]) == b"abs\n",
        "read_bytes of %s/abs.txt" % WD, d)
    for name, body in (("ls", {"path": WD}), ("ls", {"path": "."}),
                       ("glob", {"pattern": "**/*.txt"}),
                       ("grep", {"pattern": "abs"}), ("exists", {"path": WD + "/abs.txt"}),
                       ("read", {"path": "notes/a.txt"})):
        st, d, raw = op(sid, tok, name, **body)
        say(st == 200, "%s %s answers" % (name, json.dumps(body)), (st, raw))
        clean(raw, key, name)
    st, d, raw = op(sid, tok, "ls", path=WD)
    say(st == 200 and any(e["path"] == WD + "/notes" for e in d),
        "ls %s rows are under %s" % (WD, WD), d)
    # generation B's run and its cwd
    op(sid, tok, "exec", command="mkdir -p sub/deeper")
    for cwd, want in (("sub", WD + "/sub"), (WD + "/sub/deeper", WD + "/sub/deeper"),
                      (WD, WD), (".", WD)):
        st, d, raw = op(sid, tok, "run", argv=["pwd"], cwd=cwd)
        say(st == 200 and d["stdout"] == want + "\n",
            "run pwd with cwd %r runs in %s" % (cwd, want), d)
    st, d, raw = op(sid, tok, "run", argv=["pwd"])
    say(st == 200 and d["stdout"] == WD + "\n", "run pwd without cwd runs in the work dir", d)
    for cwd in (host + "/sub", "/tmp", "/workspacex", "../"):
        st, d, raw = op(sid, tok, "run", argv=["pwd"], cwd=cwd)
        say(st == 422, "run with cwd %r is 422" % cwd.replace(ROOT, "ROOT"), (st, d))
        clean(raw.replace(cwd, ""), key, "a refused cwd")
    st, d, raw = op(sid, tok, "run", argv=["sh", "-c", "env; pwd"], env={"A": "b"})
    say(st == 200 and ROOT not in d["stdout"] and key not in d["stdout"],
        "run's environment holds no host path and no key", d)
    if E.get("WD_EVENTS"):
        st, d, raw = req("GET", "/sessions/%s/events" % sid, token=tok)
        say(st == 200 and len(d["events"]) > 5, "the session's events are there", (st, raw[:300]))
        # (less the targets this test gave itself: the host paths it tried)
        for e in d["events"]:
            if e["target"] in bad + [host + "/abs.txt"]:
                e["target"] = "(given)"
        raw = json.dumps(d)
        hits = [e for e in d["events"] if ROOT in json.dumps(e) or key in json.dumps(e)]
        say(not hits, "the events hold no host path and no key", hits)
        closes = [e for e in d["events"] if e["op"] == "close"]
        if closes:
            say(all(e["target"] == sid for e in closes),
                "a close's event names the session by its id", closes)


def phase_fail():
    pid = E["WD_SPID"]
    cases = {"nosleep": ("an image without sleep", {"session_id": "wd-nosleep", "runtime": E["WD_RNOSLEEP"]}),
             "budget": ("a disk budget that cannot be made", {"session_id": "wd-budget", "disk_quota": "64m"})}
    for what, body in (cases[E["WD_FAIL"]],):
        st, d, raw = req("POST", "/sessions", body)
        say(st == 502 and d["detail"].startswith("Could not start sandbox: "),
            "%s: 502 Could not start sandbox" % what, (st, raw))
        say(ROOT not in raw and "/tmp" not in raw and "workspace" not in raw,
            "... its detail holds no host path", raw)
        say(not re.search(r"\b%s\b" % pid, raw) and "pid" not in raw.lower(),
            "... nor the service's process id", raw)
        say(not re.search(r"xc-[a-z0-9]+-[a-z]+-[a-z2-7]{26}", raw), "... nor a session key", raw)


def phase_moved():
    # the main session, its container made under /workspace: healed here
    m = state["main"]
    st, d, raw = op("wd-main", m["tok"], "exec", command="pwd; cat abs.txt")
    say(st == 200 and d["output"] == WD + "\nabs\n",
        "an earlier session's exec runs at the new work dir, its files kept", d)
    st, d, raw = op("wd-main", m["tok"], "write", path="n.txt",
                    content_b64=base64.b64encode(b"n\n").decode())
    say(st == 200 and d.get("path") == WD + "/n.txt", "write answers the new work dir", d)


def phase_pool():
    tok, key, why = opened("wd-pooled")
    say(tok is not None, "a session opens with a warm pool", why)
    state["pooled"] = {"tok": tok, "key": key}
    st, d, raw = op("wd-pooled", tok, "exec", command="pwd; ls %s" % WD)
    say(st == 200 and d["output"] == WD + "\n" and d["exit_code"] == 0,
        "the pooled session's exec starts in %s" % WD, d)
    st, d, raw = op("wd-pooled", tok, "write", path="p.txt",
                    content_b64=base64.b64encode(b"p\n").decode())
    say(st == 200 and d.get("path") == WD + "/p.txt", "... and its write answers %s/p.txt" % WD, d)
    st, d, raw = op("wd-pooled", tok, "exec", command="cat %s/p.txt" % WD)
    say(st == 200 and d["output"] == "p\n", "... which the sandbox reads there", d)
    clean(raw, key, "the pooled session's exec")


def phase_old():
    # wd-old's container was remade by the test the old way (bound at
    # its host path); its next exec heals it.
    o = state["old"]
    st, d, raw = op("wd-old", o["tok"], "exec", command="pwd; cat kept.txt")
    say(st == 200 and d["output"] == WD + "\nkept\n" and d["exit_code"] == 0,
        "an old-style container's session: exec makes it again, at %s, its files kept" % WD, d)
    clean(raw, o["key"], "the healed exec")


def phase_reuse():
    o = state["old"]
    tok, key, why = opened("wd-old", reuse=True)
    say(tok is not None, "a reuse open of an old-style container's session", why)
    st, d, raw = op("wd-old", tok, "exec", command="pwd; cat kept.txt")
    say(st == 200 and d["output"] == WD + "\nkept\n",
        "... made it again at %s, its files kept" % WD, d)


def phase_gone():
    # wd-main's container removed behind sbxcat's back: run answers that
    # the sandbox is gone (sandboxd's 410), saying it without the key
    m = state["main"]
    st, d, raw = op("wd-main", m["tok"], "run", argv=["pwd"])
    say(st == 410 and d["detail"].startswith("The sandbox is gone: "),
        "run on a session whose container was removed: 410, the sandbox is gone", (st, raw))
    clean(raw, m["key"], "the refused run")


if PHASE == "open-old":
    tok, key, why = opened("wd-old")
    say(tok is not None, "a session for the old-style container", why)
    state["old"] = {"tok": tok, "key": key}
    st, d, raw = op("wd-old", tok, "write", path="kept.txt",
                    content_b64=base64.b64encode(b"kept\n").decode())
    say(st == 200 and d.get("error") is None, "... a file written in it", d)
    print("KEY\t" + key)
else:
    {"main": phase_main, "fail": phase_fail, "moved": phase_moved,
     "pool": phase_pool, "old": phase_old, "reuse": phase_reuse, "gone": phase_gone}[PHASE]()
json.dump(state, open(state_file, "w"))
PY
	wrc=$?
	is "$wrc" 0 "the wire's checks of phase $1 ran to their end"
	sed 's/^/# /' "$T/wire.err" | head -20
	while IFS='	' read -r wst wwhat wwhy; do
		case $wst in
		ok) ok 0 "$wwhat" ;;
		"not ok") ok 1 "$wwhat"; diag "$wwhy" ;;
		esac
	done <"$T/wire.out"
}
wire_key() { awk -F'\t' '$1 == "KEY" { print $2 }' "$T/wire.out"; }

# mounts KEY: the container's binds as "SOURCE:DESTINATION" lines.
mounts() { insp "$1" '{{range .Mounts}}{{.Source}}:{{.Destination}}{{"\n"}}{{end}}' | grep -v '^$'; }

# -- The default work dir, /workspace.
sb_nosleep_image
start_server
ok $? "sbxcat serve starts" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }
WD_EVENTS=${DB:+1}
export WD_EVENTS
wire main
KM=$(jq -r .main.key "$T/wire-state.json")
is "$(insp "$KM" '{{.Config.WorkingDir}}')" /workspace "the container's WorkingDir is /workspace"
is "$(mounts "$KM")" "$ROOT/$KM/workspace:/workspace" "its one bind: the workspace at /workspace"
insp "$KM" '{{json .Config.Env}}' >"$T/env"
if grep -q -e "$ROOT" -e "$KM" "$T/env"; then
	ok 1 "the Env the engine got holds no host path and no key"; diag "$(cat "$T/env")"
else
	ok 0 "the Env the engine got holds no host path and no key"
fi
insp "$KM" '{{json .Config.Cmd}} {{json .Config.Entrypoint}} {{.Config.Hostname}} {{.Config.Domainname}}' >"$T/cfg"
if grep -q -e "$ROOT" -e "$KM" "$T/cfg"; then
	ok 1 "its command and host name hold no host path and no key"; diag "$(cat "$T/cfg")"
else
	ok 0 "its command and host name hold no host path and no key"
fi

# -- The command line: sbxcat exec starts in the work dir, -w relative to it.
sbx exec "$KM" -- pwd
is "$rc:$(out)" "0:/workspace" "sbxcat exec KEY -- pwd prints /workspace"
sbx exec "$KM" -w sub -- pwd
is "$rc:$(out)" "0:/workspace/sub" "sbxcat exec -w sub runs in /workspace/sub"
sbx exec "$KM" -w /workspace/sub/deeper -- pwd
is "$rc:$(out)" "0:/workspace/sub/deeper" "sbxcat exec -w /workspace/sub/deeper (absolute under the work dir)"
sbx exec "$KM" -w "$ROOT/$KM/workspace/sub" -- pwd
is "$rc" 2 "sbxcat exec -w with the host path is refused (exit 2)"
grep -q "outside the workspace (/workspace)" "$T/err"
ok $? "... saying it is outside the workspace, the work dir named ($(err | head -1))"
sbx exec "$KM" -w /tmp -- pwd
is "$rc" 2 "sbxcat exec -w /tmp is refused (exit 2)"
sbx exec "$KM" -- sh -c 'echo "$PWD"; env'
if [ "$rc" = 0 ] && ! grep -q -e "$ROOT" -e "$KM" "$T/out"; then
	ok 0 "sbxcat exec's command sees no host path and no key in its environment"
else
	ok 1 "sbxcat exec's command sees no host path and no key in its environment"; diag "$(out)"
fi

# -- /proc/self/mountinfo: a bind's root column is its source's path on
# its file system.  A workspace with a disk budget is a file system of its
# own, so its sandbox sees "/" there; one without shows the host's path
# (docs/serve.md says so).
sbx exec "$KM" -- cat /proc/self/mountinfo
grep -q "$ROOT" "$T/out" && diag "without a disk budget the sandbox's mountinfo names the host path (as documented)"
SANDBOXD_WORKSPACE_QUOTA=32m sbx session open --tenant acme --scope run --subject wd-budgeted --runtime "$RA" --json
if [ "$rc" = 0 ]; then
	KB=$(jq -r .key "$T/out")
	sbx exec "$KB" -- sh -c 'cat /proc/self/mountinfo; pwd; df /workspace'
	if [ "$rc" = 0 ] && ! grep -q -e "$ROOT" -e "$KB" "$T/out" && grep -qx /workspace "$T/out"; then
		ok 0 "with a disk budget the sandbox's mountinfo holds no host path and no key"
	else
		ok 1 "with a disk budget the sandbox's mountinfo holds no host path and no key"; diag "$(out)"
	fi
	sbx session close "$KB" --purge
	is "$rc" 0 "... and the budgeted session closes (its mount gone)"
else
	skip "no disk budget here ($(err | head -1))" "with a disk budget the sandbox's mountinfo holds no host path"
fi

# -- An open that fails: its 502 says what failed, no path, key or pid.
WD_FAIL=nosleep wire fail
sb_serve_stop
start_server SANDBOXD_WORKSPACE_QUOTA=1g SBXCAT_MKFS=/bin/false
ok $? "sbxcat serve starts with a disk budget whose mkfs fails"
WD_FAIL=budget wire fail
grep -q "sbxcat serve: POST /sessions (wd-budget): .*$ROOT" "$T/log"
ok $? "the service's log keeps the whole message of the failed open"

# -- The old way: a container bound at the workspace's host path (as an
# sbxcat before the work dir made it), labelled as ours.
sb_serve_stop
start_server
wire open-old
KO=$(wire_key)
ID0=$(insp "$KO" '{{.Id}}')
# old_style KEY: the session's container made again the old way, running.
old_style() {
	os_img=$(insp "$1" '{{.Config.Image}}')
	os_lbl=$(insp "$1" '{{range $k, $v := .Config.Labels}}--label {{$k}}={{$v}} {{end}}')
	tb_docker rm -f "$(ctr "$1")" >/dev/null
	# shellcheck disable=SC2086
	tb_docker run -d --name "$(ctr "$1")" $os_lbl --init --cap-drop ALL \
		--mount "type=bind,source=$ROOT/$1/workspace,target=$ROOT/$1/workspace" \
		-w "$ROOT/$1/workspace" -u 10001:10001 "$os_img" sleep 2147483647 >/dev/null
}
old_style "$KO"
is "$(mounts "$KO")" "$ROOT/$KO/workspace:$ROOT/$KO/workspace" "an old-style container: the workspace at its host path"
ID1=$(insp "$KO" '{{.Id}}')
wire old
ID2=$(insp "$KO" '{{.Id}}')
[ "$ID2" != "$ID1" ] && [ "$ID2" != "$ID0" ]
ok $? "... the heal made a new container"
is "$(mounts "$KO")" "$ROOT/$KO/workspace:/workspace" "... bound at /workspace"
# The command line: exec refuses it, open makes it again.
open_s acme conversation wd-cli --json
KC=$key
echo kept >"$ROOT/$KC/workspace/kept.txt"
old_style "$KC"
ID1=$(insp "$KC" '{{.Id}}')
sbx exec "$KC" -- pwd
is "$rc" 125 "sbxcat exec on an old-style container is refused (exit 125: sbxcat could not run it)"
grep -q "not running at the work dir" "$T/err"
ok $? "... saying it does not run at the work dir ($(err | head -1))"
grep -q "^hint: sbxcat session open" "$T/err"
ok $? "... with a hint to open it again"
open_s acme conversation wd-cli --json
is "$rc:$(jq -r .outcome "$T/out")" "0:created" "sbxcat session open makes it again (outcome created)"
[ "$(insp "$KC" '{{.Id}}')" != "$ID1" ]
ok $? "... a new container"
is "$(mounts "$KC")" "$ROOT/$KC/workspace:/workspace" "... bound at /workspace"
sbx exec "$KC" -- cat /workspace/kept.txt
is "$rc:$(out)" "0:kept" "... its files kept"
sb_serve_stop

# A stopped old-style container (a session healed by its open).
old_style "$KO"
tb_docker stop -t 0 "$(ctr "$KO")" >/dev/null
start_server
wire old
is "$(mounts "$KO")" "$ROOT/$KO/workspace:/workspace" "a stopped old-style container is made again at the heal, at /workspace"
old_style "$KO"
wire reuse
is "$(mounts "$KO")" "$ROOT/$KO/workspace:/workspace" "a reuse open makes an old-style container again, at /workspace"

# -- A warm pool: its containers bind the same work dir.
sb_serve_stop
start_server SBXCAT_WARM_POOL="$RA=1"
n=0
while [ $n -lt 100 ] && [ "$(tb_docker ps -q --filter "label=io.sbxcat.deployment=$DEP" --filter label=io.sbxcat.pool | wc -l)" -lt 1 ]; do
	sleep 0.2
	n=$((n + 1))
done
PC=$(tb_docker ps -q --no-trunc --filter "label=io.sbxcat.deployment=$DEP" --filter label=io.sbxcat.pool | head -1)
[ -n "$PC" ]
ok $? "the service fills its warm pool"
is "$(tb_docker inspect -f '{{range .Mounts}}{{.Destination}}{{end}} {{.Config.WorkingDir}}' "$PC")" \
	"/workspace /workspace" "a pooled container binds its workspace at /workspace and starts there"
wire pool
KP=$(jq -r .pooled.key "$T/wire-state.json")
is "$(insp "$KP" '{{.Id}}')" "$PC" "the session claimed the pooled container"
sb_serve_stop

# -- SANDBOXD_WORK_DIR=/work moves all of it.
for bad in relative / /work/ //work /work/../x /work/./x /tmp/w /proc /dev/x "/a$(printf '\001')b"; do
	env SANDBOXD_WORK_DIR="$bad" "$S" -C "$CAT" exec "$KM" -- pwd >"$T/out" 2>"$T/err"
	is "$?" 2 "SANDBOXD_WORK_DIR '$bad' is refused (exit 2)"
	grep -q "^sbxcat: SANDBOXD_WORK_DIR '" "$T/err"
	ok $? "... naming the variable ($(head -1 "$T/err"))"
done
# A control character in a one-name setting was a crash (NULL code point).
env SANDBOXD_SPILL_DIR="a$(printf '\001')b" "$S" -C "$CAT" exec "$KM" -- pwd >"$T/out" 2>"$T/err"
is "$?" 2 "SANDBOXD_SPILL_DIR with a control character is refused (exit 2), never a crash"
SANDBOXD_WORK_DIR=/work
export SANDBOXD_WORK_DIR
start_server
ok $? "sbxcat serve starts with SANDBOXD_WORK_DIR=/work"
WD_WORK_DIR=/work
export WD_WORK_DIR
wire moved
is "$(mounts "$KM")" "$ROOT/$KM/workspace:/work" "the earlier session's container was made again, bound at /work"
is "$(insp "$KM" '{{.Config.WorkingDir}}')" /work "... and starts there"
sbx exec "$KM" -- pwd
is "$rc:$(out)" "0:/work" "sbxcat exec KEY -- pwd prints /work"
sbx exec "$KM" -w sub -- pwd
is "$rc:$(out)" "0:/work/sub" "sbxcat exec -w sub runs in /work/sub"
sbx exec "$KM" -w /workspace/sub -- pwd
is "$rc" 2 "... and -w /workspace/sub is outside the workspace now"
curl -s -H "X-Sandbox-Token: $TOKEN" -X DELETE "http://127.0.0.1:$PORT/sessions/wd-main?purge=true" >/dev/null
jq 'del(.main)' "$T/wire-state.json" >"$T/ws.json" && mv "$T/ws.json" "$T/wire-state.json"
wire main
KM=$(jq -r .main.key "$T/wire-state.json")
tb_docker rm -f "$(ctr "$KM")" >/dev/null
wire gone
sb_serve_stop
sb_done

#!/usr/bin/env python3
"""e2b_process.py - envd's process service through `sbxcat serve`
(docs/e2b.md "Commands"), spoken as the Connect protocol with its JSON
codec by hand: every envelope built here and every frame of an answer
read back whole (flags, length, JSON), so a wrong byte fails a check.
tests/t-e2b-process.sh starts the service and a sandbox.  Prints TAP.

Environment: SERVE_PORT, SANDBOX_ID, ACCESS_TOKEN (the sandbox's),
SERVE_ROOT, CONTAINER (the sandbox's container, for the engine's view of
its processes), DOCKER (the engine's client), E2B_SQL (a command that runs
its argument as SQL on the test's database), SERVE_PID, FUZZ_SEED.
"""
import base64
import http.client
import json
import os
import random
import socket
import subprocess
import threading
import time

from taplib import diag, ok, plan
from wirehost import key_of

E = os.environ
PORT, SID, TOK = int(E["SERVE_PORT"]), E["SANDBOX_ID"], E["ACCESS_TOKEN"]
SVC = "/process.Process/"
AGENT, RUN = "agent-e2b", "run-e2b-%d" % os.getpid()


def b64(s):
    return base64.b64encode(s if isinstance(s, bytes) else s.encode()).decode()


def envelope(obj, flags=0):
    b = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return bytes([flags]) + len(b).to_bytes(4, "big") + b


def headers(ctype, extra=None):
    h = {"Content-Type": ctype, "E2b-Sandbox-Id": SID,
         "E2b-Sandbox-Port": "49983", "X-Access-Token": TOK,
         "X-Sandbox-Agent": AGENT, "X-Sandbox-Run": RUN,
         "Connect-Protocol-Version": "1"}
    h.update(extra or {})
    return h


def frames(data):
    """The envelopes of a stream answer: [(flags, obj)], or raises when a
    frame is cut, its JSON bad, or bytes follow the end-stream frame."""
    out, i = [], 0
    while i < len(data):
        if len(data) - i < 5:
            raise ValueError("a cut envelope head at %d" % i)
        flags, n = data[i], int.from_bytes(data[i + 1:i + 5], "big")
        if len(data) - i - 5 < n:
            raise ValueError("a cut envelope at %d" % i)
        out.append((flags, json.loads(data[i + 5:i + 5 + n])))
        i += 5 + n
        if flags & 2 and i != len(data):
            raise ValueError("bytes after the end-stream frame")
    return out


def post(method, body, ctype, extra=None, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    c.request("POST", SVC + method, body=body, headers=headers(ctype, extra))
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheader("Content-Type"), data


def early(method, length):
    """A request announcing length bytes of body, none sent: the status
    the service answers from the headers alone (0: none)."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    head = "POST %s%s HTTP/1.1\r\nHost: x\r\n" % (SVC, method)
    for k, v in headers("application/json").items():
        head += "%s: %s\r\n" % (k, v)
    head += "Content-Length: %d\r\n\r\n" % length
    s.sendall(head.encode())
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    if not data.startswith(b"HTTP/1."):
        return 0, data
    return int(data.split(b" ", 2)[1]), data


def start(body, deadline_ms=None, raw=None, extra=None):
    """A Start: (status, frames or the raw bytes when they do not
    parse, seconds)."""
    h = dict(extra or {})
    if deadline_ms is not None:
        h["Connect-Timeout-Ms"] = str(deadline_ms)
    t0 = time.time()
    st, ct, data = post("Start", raw if raw is not None else envelope(body),
                        "application/connect+json", h)
    try:
        fr = frames(data)
    except ValueError as e:
        fr = "%s: %r" % (e, data[:300])
    return st, fr, time.time() - t0


def unary(method, obj, ctype="application/json", raw=None):
    st, ct, data = post(method, raw if raw is not None else json.dumps(obj).encode(), ctype)
    try:
        return st, json.loads(data) if data else None
    except ValueError:
        return st, data


def run(cmd, **kw):
    """The SDK's commands.run: /bin/bash -l -c cmd."""
    body = {"process": {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]}}
    for k in ("envs", "cwd"):
        if k in kw:
            body["process"][k] = kw.pop(k)
    body.update(kw.pop("fields", {}))
    return start(body, **kw)


def events(fr):
    """The messages' events and the end-stream frame's object."""
    if isinstance(fr, str) or not fr or fr[-1][0] != 2:
        return None, None
    return [f[1]["event"] for f in fr[:-1]], fr[-1][1]


def output(evs, which):
    return b"".join(base64.b64decode(e["data"][which]) for e in evs
                    if "data" in e and which in e["data"])


def end_of(evs):
    ends = [e["end"] for e in evs if "end" in e]
    return ends[0] if len(ends) == 1 else None


def engine_procs(marker):
    """The container's processes whose command line holds marker, as the
    engine sees them (docker top)."""
    r = subprocess.run([E.get("DOCKER", "docker"), "top", E["CONTAINER"],
                        "-o", "pid,args"], capture_output=True, text=True)
    return [line for line in r.stdout.splitlines()[1:] if marker in line]


def gone_within(marker, seconds):
    end = time.time() + seconds
    while engine_procs(marker) and time.time() < end:
        time.sleep(0.2)
    return not engine_procs(marker)


def code_of(st, fr):
    """A stream's error code (its end-stream frame's), or None."""
    evs, last = events(fr)
    if last is None:
        return None
    return (last.get("error") or {}).get("code")


def alive():
    try:
        os.kill(int(E["SERVE_PID"]), 0)
        return True
    except OSError:
        return False


def sql(q):
    return subprocess.run([E["E2B_SQL"], q], capture_output=True, text=True,
                          check=True).stdout.strip()


def basics():
    st, fr, _ = run("echo hello")
    evs, last = events(fr)
    ok(st == 200 and evs is not None, "Start answers 200 with a whole stream of envelopes", fr)
    if evs is None:
        return
    ok("start" in evs[0] and isinstance(evs[0]["start"].get("pid"), int)
       and evs[0]["start"]["pid"] > 0, "the first event is start {pid}", evs[:1])
    ok(any(e.get("data", {}).get("stdout") == b64("hello\n") for e in evs),
       "a data event carries stdout 'hello\\n' in base64", evs)
    end = end_of(evs)
    ok(end == {"exitCode": 0, "exited": True, "status": "exit status 0"},
       "the end event: exitCode 0, exited, 'exit status 0'", end)
    ok("end" in evs[-1] and last == {}, "the end event is last, then the end-stream frame {}", fr)
    ok(all(f[0] == 0 for f in fr[:-1]) and fr[-1][0] == 2,
       "messages have flags 0, the end-stream frame 0x02", [f[0] for f in fr])

    st, fr, _ = run("echo out; exit 3")
    evs, last = events(fr)
    end = end_of(evs or [])
    ok(end and end["exitCode"] == 3 and end["status"] == "exit status 3" and last == {},
       "a non-zero exit: exitCode 3, 'exit status 3', no error frame", fr)

    st, fr, _ = run("echo oops >&2; echo fine")
    evs, _ = events(fr)
    ok(evs and output(evs, "stderr") == b"oops\n" and output(evs, "stdout") == b"fine\n",
       "stderr and stdout come in data events of their own", evs)

    st, fr, _ = run("mkdir -p sub/dir && echo made")
    st, fr, _ = run('echo "$FOO|$BAR|$HOME"; pwd', envs={"FOO": "bar", "BAR": "b z"},
                    cwd="/home/user/sub/dir")
    evs, _ = events(fr)
    out = output(evs or [], "stdout").decode(errors="replace").splitlines()
    ok(len(out) == 2 and out[0] == "bar|b z|/home/user" and out[1].endswith("/sub/dir"),
       "envs reach the command, HOME is /home/user, cwd is the directory asked", out)
    st, fr, _ = run("pwd", cwd="sub")
    evs, _ = events(fr)
    ok(output(evs or [], "stdout").decode().strip().endswith("/sub"),
       "a relative cwd is under the home", fr)
    st, fr, _ = start({"process": {"cmd": "/bin/sh", "args": ["-c", "printf %s \"$0\"", "x"]}})
    evs, _ = events(fr)
    ok(output(evs or [], "stdout") == b"x", "cmd and args are argv, no shell between", fr)

    st, fr, _ = start({"process": {"cmd": "/no/such/program"}})
    evs, last = events(fr)
    end = end_of(evs or [])
    ok(end and end["exitCode"] == 127 and end["exited"] is False and end["status"] == "not started"
       and "could not be started" in end.get("error", "") and last == {},
       "a program that is not there: exitCode 127, 'not started', the reason in error", fr)
    st, fr, _ = run("true", cwd="/home/user/no/such/dir")
    evs, last = events(fr)
    ok(code_of(st, fr) == "invalid_argument" and evs and "start" in evs[0],
       "a cwd that is not a directory: the stream ends invalid_argument", fr)

    # Large output: more than one data event, bounded in size.
    st, fr, _ = run("head -c 300000 /dev/zero")
    evs, _ = events(fr)
    sizes = [len(base64.b64decode(e["data"]["stdout"])) for e in evs or [] if "data" in e]
    ok(sum(sizes) == 300000 and max(sizes) <= 65536 and len(sizes) >= 5,
       "300000 bytes of stdout come whole, in data events of at most 64 KiB", sizes[:10])


def limits():
    st, fr, _ = run("head -c 500000 /dev/zero; echo e >&2")
    evs, last = events(fr)
    end = end_of(evs or [])
    ok(len(output(evs or [], "stdout")) == 400000 and output(evs or [], "stderr") == b"e\n",
       "output past SANDBOXD_MAX_OUTPUT_BYTES is cut per stream (400000 of 500000)",
       str(fr)[:300])
    ok(end and end["exitCode"] == 0 and "output cut at 400000 bytes per stream" in end.get("error", "")
       and "stdout wrote 500000 bytes" in end["error"],
       "... and the end event's error says so", end)
    st, fr, _ = run("sleep 2.5; echo woke", extra={"Keepalive-Ping-Interval": "1"})
    evs, last = events(fr)
    kinds = [list(e)[0] for e in evs or []]
    ok(kinds.count("keepalive") >= 1 and kinds[0] == "start" and kinds[-1] == "end"
       and all(e["keepalive"] == {} for e in evs if "keepalive" in e),
       "a silent command's stream carries keepalive events {} (Keepalive-Ping-Interval: 1)", kinds)


def deadline():
    m = "sleep 3%d" % random.randint(100, 999)
    st, fr, secs = run(m, deadline_ms=1500)
    evs, last = events(fr)
    ok(st == 200 and code_of(st, fr) == "deadline_exceeded",
       "past Connect-Timeout-Ms the stream ends with deadline_exceeded", fr)
    ok(1.3 < secs < 8, "... at about the deadline (%.1f s)" % secs)
    ok(evs and "start" in evs[0] and not end_of(evs), "... after its start event, with no end event", evs)
    ok(gone_within(m, 5), "... and nothing it started runs in the container", engine_procs(m))


def background(body, **kw):
    """A Start in a thread: its result lands in the returned dict."""
    res = {}

    def go():
        res["r"] = start(body, **kw)
    t = threading.Thread(target=go)
    t.start()
    res["t"] = t
    return res


def listed(pred, seconds=30):
    end = time.time() + seconds
    while time.time() < end:
        st, doc = unary("List", {})
        if st == 200:
            for p in doc.get("processes", []):
                if pred(p):
                    return p
        time.sleep(0.2)
    return None


def interactive():
    tag = "cat-%d" % random.randint(1000, 9999)
    bg = background({"process": {"cmd": "/bin/sh", "args": ["-c", "cat; echo done"]},
                     "stdin": True, "tag": tag})
    p = listed(lambda p: p.get("tag") == tag)
    ok(p and p["config"]["cmd"] == "/bin/sh" and p["config"]["args"] == ["-c", "cat; echo done"]
       and isinstance(p["pid"], int), "List shows the running process: config, pid, tag", p)
    if not p:
        bg["t"].join()
        return
    pid = p["pid"]
    st, doc = unary("SendInput", {"process": {"pid": pid}, "input": {"stdin": b64("abc")}})
    ok(st == 200 and doc == {}, "SendInput 'abc' to it: 200 {}", (st, doc))
    st, doc = unary("SendInput", {"process": {"pid": str(pid)}, "input": {"stdin": "ZGVm"}})
    ok(st == 200, "SendInput by a pid given as a string (protobuf's JSON)", (st, doc))
    st, doc = unary("CloseStdin", {"process": {"tag": tag}})
    ok(st == 200 and doc == {}, "CloseStdin by tag: 200 {}", (st, doc))
    bg["t"].join(60)
    st, fr, _ = bg["r"]
    evs, last = events(fr)
    ok(evs and output(evs, "stdout") == b"abcdef" + b"done\n" and end_of(evs)["exitCode"] == 0,
       "cat ends at the closed stdin with the input it was sent", fr)
    st, doc = unary("List", {})
    ok(st == 200 and not [q for q in doc["processes"] if q["pid"] == pid],
       "an ended process is no longer listed", doc)
    st, doc = unary("SendInput", {"process": {"pid": pid}, "input": {"stdin": "YQ=="}})
    ok(st == 404 and doc.get("code") == "not_found", "SendInput to it now: not_found", (st, doc))

    st, fr, secs = start({"process": {"cmd": "/bin/sh", "args": ["-c", "echo hi"]}, "stdin": True})
    evs, last = events(fr)
    ok(evs and output(evs, "stdout") == b"hi\n" and end_of(evs)["exitCode"] == 0 and secs < 10,
       "stdin given but never closed: a command that does not read it ends all the same", fr)

    # Started without stdin.
    m = "sleep 4%d" % random.randint(100, 999)
    bg = background({"process": {"cmd": "/bin/sh", "args": ["-c", m]}, "tag": "nostdin"})
    p = listed(lambda p: p.get("tag") == "nostdin")
    st, doc = unary("SendInput", {"process": {"tag": "nostdin"}, "input": {"stdin": "YQ=="}})
    ok(st == 400 and doc.get("code") == "failed_precondition",
       "SendInput to a process started without stdin: failed_precondition", (st, doc))
    ok(engine_procs(m), "the command runs in the container (engine's view)", m)
    st, doc = unary("SendSignal", {"process": {"pid": p["pid"] if p else 0},
                                   "signal": "SIGNAL_SIGKILL"})
    ok(st == 200 and doc == {}, "SendSignal SIGNAL_SIGKILL: 200 {}", (st, doc))
    bg["t"].join(60)
    st, fr, _ = bg["r"]
    evs, last = events(fr)
    end = end_of(evs or [])
    ok(end == {"exitCode": -1, "exited": False, "status": "signal: killed"} and last == {},
       "the killed command's stream ends with 'signal: killed', exitCode -1", fr)
    ok(gone_within(m, 5), "... and nothing of it runs in the container", engine_procs(m))
    st, doc = unary("SendSignal", {"process": {"pid": p["pid"] if p else 0}, "signal": 15})
    ok(st == 404 and doc.get("code") == "not_found",
       "SendSignal (as the number 15) to it now: not_found (the SDK's kill false)", (st, doc))


def read_frame(r):
    """One envelope off a streamed response: (flags, obj)."""
    head = r.read(5)
    n = int.from_bytes(head[1:5], "big")
    return head[0], json.loads(r.read(n))


def streaming():
    m = "m6%d" % random.randint(100, 999)
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    t0 = time.time()
    c.request("POST", SVC + "Start", body=envelope(
        {"process": {"cmd": "/bin/sh", "args": ["-c", "echo early; sleep 6; echo late # " + m]}}),
        headers=headers("application/connect+json"))
    r = c.getresponse()
    f1 = read_frame(r)
    t1 = time.time() - t0
    f2 = read_frame(r)
    t2 = time.time() - t0
    ok(r.status == 200 and "start" in f1[1]["event"] and t1 < 3,
       "the start event arrives while the command runs (%.1f s)" % t1, f1)
    ok(f2[1]["event"].get("data", {}).get("stdout") == b64("early\n") and t2 < 3,
       "... and its first output as it comes (%.1f s)" % t2, f2)
    ok(engine_procs(m), "... the command still running", m)
    rest = frames(r.read())
    t3 = time.time() - t0
    evs = [f[1]["event"] for f in rest[:-1]]
    ok(output(evs, "stdout") == b"late\n" and end_of(evs)["exitCode"] == 0 and rest[-1] == (2, {})
       and t3 > 6, "the rest once it ends (%.1f s): 'late', end, the end-stream frame" % t3, rest)
    c.close()

    # A client that leaves mid-stream, after the start event.
    m = "sleep 7%d" % random.randint(100, 999)
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    c.request("POST", SVC + "Start", body=envelope(
        {"process": {"cmd": "/bin/sh", "args": ["-c", m]}}),
        headers=headers("application/connect+json"))
    r = c.getresponse()
    f1 = read_frame(r)
    end = time.time() + 20
    while not engine_procs(m) and time.time() < end:
        time.sleep(0.2)
    ok("start" in f1[1]["event"] and engine_procs(m), "a streamed command runs, its start event read", f1)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    ok(gone_within(m, 10), "its client gone mid-stream, everything it started is stopped",
       engine_procs(m))


def table_full():
    """64 processes at once in a sandbox; the 65th refused."""
    m = "mfull%d" % random.randint(100, 999)
    body = {"process": {"cmd": "/bin/sh", "args": ["-c", "sleep 120 # " + m]}}
    bgs = [background(body, deadline_ms=150000) for _ in range(64)]
    mine = lambda: [p for p in unary("List", {})[1]["processes"]
                    if m in " ".join(p["config"]["args"])]
    end = time.time() + 120
    while len(mine()) < 64 and time.time() < end:
        time.sleep(0.5)
    ok(len(mine()) == 64, "64 processes run in one sandbox at once", len(mine()))
    st, fr, _ = start(body)
    evs, last = events(fr)
    ok(code_of(st, fr) == "resource_exhausted" and evs == [],
       "the 65th Start: resource_exhausted, no start event", fr)
    pids = sorted(p["pid"] for p in mine())
    ok(len(set(pids)) == 64, "... their pids all differ", pids[:5])
    for pid in pids:
        unary("SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGTERM"})
    for bg in bgs:
        bg["t"].join(120)
    ends = [end_of(events(bg["r"][1])[0] or []) for bg in bgs]
    ok(all(e and e["status"] == "signal: killed" for e in ends),
       "SIGNAL_SIGTERM stops each of them: 'signal: killed'", ends[:3])
    ok(not mine() and gone_within(m, 10), "... none listed, none left in the container")


def client_gone():
    m = "sleep 5%d" % random.randint(100, 999)
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    body = envelope({"process": {"cmd": "/bin/sh", "args": ["-c", m]}})
    head = "POST %sStart HTTP/1.1\r\nHost: x\r\n" % SVC
    for k, v in headers("application/connect+json").items():
        head += "%s: %s\r\n" % (k, v)
    head += "Content-Length: %d\r\n\r\n" % len(body)
    s.sendall(head.encode() + body)
    end = time.time() + 30
    while not engine_procs(m) and time.time() < end:
        time.sleep(0.2)
    ok(engine_procs(m), "a Start whose client will go: its command runs", m)
    s.close()
    ok(gone_within(m, 10), "the client gone, everything the command started is stopped",
       engine_procs(m))
    ok(not listed(lambda p: m in " ".join(p["config"]["args"]), 3),
       "... and it is not listed any more")


def hostile():
    cases = [
        ("a short envelope", b"\x00\x00\x00"),
        ("a wrong length", b"\x00\x00\x00\x00\x09{}"),
        ("a length past the body", b"\x00\x00\x00\x10\x00{}"),
        ("two envelopes", envelope({}) + envelope({})),
        ("an end-stream flag", envelope({}, 2)),
    ]
    for name, raw in cases:
        st, fr, _ = start(None, raw=raw)
        ok(st == 200 and code_of(st, fr) == "invalid_argument",
           "Start with %s: invalid_argument" % name, (st, fr))
    st, fr, _ = start(None, raw=envelope({}, 1))
    ok(st == 200 and code_of(st, fr) in ("unimplemented", "internal", "invalid_argument"),
       "Start with a compressed flag: refused (%s)" % code_of(st, fr), fr)
    st, fr, _ = start(None, raw=envelope(b"{not json"))
    ok(code_of(st, fr) == "invalid_argument", "Start with bad JSON: invalid_argument", fr)

    for name, body in [
        ("no process", {}),
        ("no cmd", {"process": {"args": ["x"]}}),
        ("args with NUL", {"process": {"cmd": "/bin/echo", "args": ["a\u0000b"]}}),
        ("cmd with NUL", {"process": {"cmd": "/bin/ec\u0000ho"}}),
        ("args not a list", {"process": {"cmd": "/bin/echo", "args": "x"}}),
        ("an arg a number", {"process": {"cmd": "/bin/echo", "args": [1]}}),
        ("too many envs", {"process": {"cmd": "/bin/true",
                                       "envs": {"V%d" % i: "x" for i in range(200)}}}),
        ("a huge env value", {"process": {"cmd": "/bin/true", "envs": {"BIG": "x" * 40000}}}),
        ("an env name with '='", {"process": {"cmd": "/bin/true", "envs": {"A=B": "x"}}}),
        ("a bad env name", {"process": {"cmd": "/bin/true", "envs": {"1A": "x"}}}),
        ("an env value with NUL", {"process": {"cmd": "/bin/true", "envs": {"A": "x\u0000y"}}}),
        ("cwd outside the home", {"process": {"cmd": "/bin/true", "cwd": "/etc"}}),
        ("cwd with ..", {"process": {"cmd": "/bin/true", "cwd": "/home/user/../../etc"}}),
        ("stdin not a bool", {"process": {"cmd": "/bin/true"}, "stdin": "yes"}),
        ("a tag too long", {"process": {"cmd": "/bin/true"}, "tag": "t" * 300}),
    ]:
        st, fr, _ = start(body)
        ok(st == 200 and code_of(st, fr) == "invalid_argument",
           "Start with %s: invalid_argument" % name, (st, str(fr)[:300]))
    st, fr, _ = start({"process": {"cmd": "/bin/true"}, "pty": {"size": {"cols": 80, "rows": 24}}})
    ok(code_of(st, fr) == "unimplemented", "Start with a pty: unimplemented", fr)

    st, ct, data = post("Start", json.dumps({"process": {"cmd": "/bin/true"}}).encode(),
                        "application/json")
    ok(st == 415, "Start called unary (application/json): 415", (st, data[:200]))
    st, ct, data = post("Start", envelope({"process": {"cmd": "/bin/true"}}), "application/proto")
    ok(st == 415, "Start as application/proto: 415", (st, data[:200]))
    st, ct, data = post("List", envelope({}), "application/connect+json")
    ok(st == 415, "List called as a stream: 415", (st, data[:200]))
    st, doc = unary("List", None, ctype="application/proto", raw=b"")
    ok(st == 415, "List as application/proto: 415", (st, doc))

    sel = [("an unknown pid", {"pid": 999999}, 404, "not_found"),
           ("an unknown tag", {"tag": "nope"}, 404, "not_found"),
           ("a pid as digits", {"pid": "999998"}, 404, "not_found"),
           ("a pid as a word", {"pid": "abc"}, 400, "invalid_argument"),
           ("a negative pid", {"pid": -1}, 400, "invalid_argument"),
           ("a huge pid", {"pid": 2 ** 40}, 400, "invalid_argument"),
           ("a pid of 11 digits", {"pid": "12345678901"}, 400, "invalid_argument"),
           ("a fractional pid", {"pid": 1.5}, 400, "invalid_argument"),
           ("pid and tag", {"pid": 1, "tag": "x"}, 400, "invalid_argument"),
           ("no selector", {}, 400, "invalid_argument")]
    for name, s, want_st, want in sel:
        for method, extra in [("SendSignal", {"signal": "SIGNAL_SIGTERM"}),
                              ("SendInput", {"input": {"stdin": "YQ=="}}),
                              ("CloseStdin", {})]:
            body = dict(extra, process=s)
            st, doc = unary(method, body)
            ok(st == want_st and isinstance(doc, dict) and doc.get("code") == want,
               "%s with %s: %d %s" % (method, name, want_st, want), (st, doc))
    for sig in ["SIGNAL_UNSPECIFIED", "SIGHUP", 1, None, "sigkill"]:
        st, doc = unary("SendSignal", {"process": {"pid": 1}, "signal": sig})
        ok(st == 400 and doc.get("code") == "invalid_argument",
           "SendSignal with signal %r: invalid_argument" % (sig,), (st, doc))
    for bad in ["not base64!", "YQ", "Y===", 5, "YQ==\n"]:
        st, doc = unary("SendInput", {"process": {"pid": 1}, "input": {"stdin": bad}})
        want = bad == "YQ"  # unpadded base64 is protobuf JSON's too
        ok((st == 404) if want else (st == 400 and doc.get("code") == "invalid_argument"),
           "SendInput with stdin %r: %s" % (bad, "valid, no such pid" if want else "invalid_argument"),
           (st, doc))
    st, doc = unary("SendInput", {"process": {"pid": 1}, "input": {"pty": "YQ=="}})
    ok(st == 501 and doc.get("code") == "unimplemented", "SendInput to a pty: unimplemented", (st, doc))
    for m in ["Connect", "Update", "StreamInput"]:
        st, doc = unary(m, {"process": {"pid": 1}})
        ok(st == 501 and doc.get("code") == "unimplemented" and doc.get("message"),
           "%s: unimplemented, with a message" % m, (st, doc))
    st, fr, _ = (lambda r: (r[0], frames(r[2]) if r[0] == 200 else r[2], 0))(
        post("Connect", envelope({"process": {"pid": 1}}), "application/connect+json"))
    ok(code_of(st, fr) == "unimplemented", "Connect as a stream: its end-stream frame says unimplemented", fr)
    st, data = early("SendInput", (1 << 20) + 8192)
    ok(st == 413, "a SendInput body past its cap: 413 before it is read", (st, data[:200]))
    st, data = early("Start", (1 << 20) + 8192)
    ok(st == 413, "a Start body past its cap: 413 before it is read", (st, data[:200]))
    st, doc = unary("List", {}, raw=b"[1,2]")
    ok(st == 400 and doc.get("code") == "invalid_argument", "List of a JSON array: invalid_argument", (st, doc))
    ok(alive(), "the service is alive after the hostile inputs")


def fuzz():
    rnd = random.Random(int(E.get("FUZZ_SEED", "1")))
    diag("fuzz seed %s" % E.get("FUZZ_SEED", "1"))
    methods = ["Start", "List", "SendSignal", "SendInput", "CloseStdin", "Connect"]
    atoms = [None, True, 0, -1, 2 ** 33, "", "x", "SIGNAL_SIGKILL", [], {}, "YQ==", "\u0000",
             1.5, "/bin/true", ["-c", "true"]]
    fields = ["process", "pid", "tag", "signal", "input", "stdin", "cmd", "args",
              "envs", "cwd", "pty"]

    def value(d=0):
        r = rnd.random()
        if d < 3 and r < 0.3:
            return {rnd.choice(fields): value(d + 1) for _ in range(rnd.randint(0, 3))}
        return rnd.choice(atoms)
    bad5 = []
    for i in range(150):
        m = rnd.choice(methods)
        doc = value()
        body = json.dumps(doc).encode()
        if rnd.random() < 0.2:
            body = bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 40)))
        stream = m in ("Start", "Connect") and rnd.random() < 0.8
        if stream:
            if rnd.random() < 0.7:
                body = envelope(body, rnd.choice([0, 0, 0, 1, 2, 0x80]))
            st, ct, data = post(m, body, "application/connect+json",
                                {"Connect-Timeout-Ms": "3000"}, timeout=30)
        else:
            st, ct, data = post(m, body, "application/json", timeout=30)
        if st >= 500 and st != 501:
            bad5.append((m, body[:80], st, data[:120]))
    ok(not bad5, "150 random requests: no 5xx but unimplemented's 501", bad5[:5])
    ok(alive(), "the service is alive after the fuzz")


def audit():
    key = key_of(E["SERVE_ROOT"], SID)
    end = time.time() + 20
    rows = []
    while time.time() < end:
        out = sql("SELECT concat_ws(chr(31), op, target, ok, coalesce(exit_status::text, '-'), "
                  "detail, coalesce(agent_ref, '-'), coalesce(run_ref, '-')) "
                  "FROM sandbox_operations WHERE session_key = '%s' "
                  "AND op = 'execute' ORDER BY seq" % key)
        rows = [line.split("\x1f") for line in out.splitlines() if line]
        if any("echo hello" in r[1] for r in rows) and any("signal" not in r[4] and
                                                           "sleep 4" in r[1] for r in rows):
            break
        time.sleep(0.2)
    bash = [r for r in rows if r[1].startswith("/bin/bash ")]
    ok(len(bash) == 1 and bash[0][1] == "/bin/bash -l -c 'echo hello'" and bash[0][3] == "127",
       "the sandbox has no /bin/bash: one row says so (exit 127), the first command's", bash)
    hello = [r for r in rows if r[1] == "/bin/sh -l -c 'echo hello'"]
    ok(hello and hello[-1][0] == "execute" and hello[-1][2] == "t" and hello[-1][3] == "0"
       and hello[-1][5] == AGENT and hello[-1][6] == RUN,
       "echo hello's row: execute, its command as the target, ok, exit 0, the headers' agent and run",
       rows[:8])
    three = [r for r in rows if "exit 3" in r[1]]
    ok(three and three[-1][2] == "f" and three[-1][3] == "3", "exit 3's row: not ok, exit 3", three)
    dl = [r for r in rows if "sleep 3" in r[1]]
    ok(dl and dl[-1][4].startswith("timeout after 1.5 s"), "the deadline's row: timeout after 1.5 s", dl)
    k = [r for r in rows if "sleep 4" in r[1]]
    ok(k and "stopped by request" in k[-1][4], "the killed command's row: stopped by request", k)
    g = [r for r in rows if "sleep 5" in r[1]]
    ok(g and "the client went away" in g[-1][4], "the abandoned command's row: the client went away", g)
    g = [r for r in rows if "sleep 7" in r[1]]
    ok(g and "the client went away" in g[-1][4], "the command left mid-stream: its row says the client went away", g)
    ok(not [r for r in rows if "V199" in r[1] or "BIG" in r[1]],
       "refused requests wrote no row")


def main():
    basics()
    limits()
    deadline()
    interactive()
    streaming()
    client_gone()
    hostile()
    table_full()
    fuzz()
    audit()
    plan()


main()

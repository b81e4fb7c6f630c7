#!/usr/bin/env python3
"""serve_bench.py - the driver of bench/bench-serve.sh: `sbxcat serve`
through http.client clients that keep their connection, beside the
engine's own API and the docker CLI.  Each mode writes the seconds of
each run, one a line, to files in OUT (the shell prints the medians and
p95s) and prints "# key value" lines for the shell.

  serve_bench.py exec N          exec `true`: the service (A), the engine
                                 API (create, start, inspect) on the
                                 session's own container, `docker exec`
  serve_bench.py read N          the same small read through A (audit on)
                                 and B (SBXCAT_AUDIT=off), alternately
  serve_bench.py load A|B C S K R  C threads, each its own kept
                                 connection, on S sessions of A or B, K
                                 reads each, R rounds: operations/s of each
                                 round, and the client's CPU seconds
  serve_bench.py open N          a cold POST /sessions on A beside
                                 `docker run -d` with bench-session.sh's
                                 flags, alternately

Environment: SERVE_PORT_A, SERVE_PORT_B, SERVE_TOKEN, SERVE_ROOT_A (the
workspace root of A, where the session's record names its container),
ENGINE_SOCK, DOCKER (the CLI), IMG, DEP, RT, OUT, PREFIX.
"""
import base64
import http.client
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from wirehost import key_of  # noqa: E402

E = os.environ
TOKEN = E["SERVE_TOKEN"]
OUT = E["OUT"]
P = E.get("PREFIX", "b")
now = time.perf_counter


def fail(msg):
    print("serve_bench: " + msg, file=sys.stderr)
    sys.exit(1)


class Service:
    """One client of the service on one kept connection."""

    def __init__(self, port):
        self.port = port
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def req(self, path, body, token=TOKEN, want=200, headers=None):
        data = json.dumps(body).encode()
        h = {"X-Sandbox-Token": token, "Content-Type": "application/json"}
        h.update(headers or {})
        self.c.request("POST", path, body=data, headers=h)
        r = self.c.getresponse()
        out = r.read()
        if r.status != want:
            fail("POST %s on :%d: %d %s" % (path, self.port, r.status, out[:300]))
        return json.loads(out) if out else None

    def open(self, sid):
        d = self.req("/sessions", {"session_id": sid})
        return d["session"], d["token"]


class UnixConnection(http.client.HTTPConnection):
    """http.client on the engine's unix socket."""

    def __init__(self, path):
        super().__init__("localhost", timeout=120)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(self.path)


class Engine:
    """The engine API's exec as a client that keeps its connection: create
    and inspect on the kept one; start on a connection of its own, since
    the engine hijacks that one and closes it when the command ends."""

    def __init__(self, path):
        self.path = path
        self.c = UnixConnection(path)

    def call(self, conn, method, url, body=None, want=(200, 201)):
        hdr = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, url, body=json.dumps(body).encode() if body is not None else None, headers=hdr)
        r = conn.getresponse()
        out = r.read()  # the whole response: for start, the multiplexed stream to its end
        if r.status not in want:
            fail("engine %s %s: %d %s" % (method, url, r.status, out[:300]))
        return out

    def exec_true(self, cid):
        d = json.loads(self.call(self.c, "POST", "/containers/%s/exec" % cid,
                                 {"AttachStdout": True, "AttachStderr": True, "Cmd": ["true"]}))
        eid = d["Id"]
        s = UnixConnection(self.path)
        self.call(s, "POST", "/exec/%s/start" % eid, {"Detach": False, "Tty": False})
        s.close()
        st = json.loads(self.call(self.c, "GET", "/exec/%s/json" % eid))
        if st["ExitCode"] != 0 or st["Running"]:
            fail("engine exec: %s" % st)


def write_times(name, ts):
    with open(os.path.join(OUT, name), "w") as f:
        for t in ts:
            f.write("%.6f\n" % t)


def container_of(session):
    # The wire never says the host's key (issue 28): the host's files do.
    key = key_of(E["SERVE_ROOT_A"], session["session_id"])
    with open(os.path.join(E["SERVE_ROOT_A"], key, "session.json")) as f:
        return json.load(f)["container"]


def mode_exec(n):
    a = Service(int(E["SERVE_PORT_A"]))
    s, tok = a.open(P + "exec")
    cid = container_of(s)
    eng = Engine(E["ENGINE_SOCK"])
    path = "/sessions/%s/exec" % s["session_id"]
    ts, te, tc = [], [], []
    for i in range(n + 2):  # two rounds to warm up, not counted
        t0 = now()
        d = a.req(path, {"command": "true"}, tok)
        t1 = now()
        if d["exit_code"] != 0:
            fail("service exec true: %s" % d)
        eng.exec_true(cid)
        t2 = now()
        subprocess.run([E["DOCKER"], "exec", cid, "true"], check=True)
        t3 = now()
        if i >= 2:
            ts.append(t1 - t0)
            te.append(t2 - t1)
            tc.append(t3 - t2)
    write_times("exec.serve", ts)
    write_times("exec.engine", te)
    write_times("exec.cli", tc)
    print("# container %s" % cid)


def put_file(svc, sid, tok, path, content):
    svc.req("/sessions/%s/write" % sid,
            {"path": path, "content_b64": base64.b64encode(content).decode()}, tok)


def mode_read(n):
    sides = []
    for name, port in (("on", E["SERVE_PORT_A"]), ("off", E["SERVE_PORT_B"])):
        svc = Service(int(port))
        s, tok = svc.open(P + "read")
        put_file(svc, s["session_id"], tok, "small.txt", b"hello\n")
        sides.append((name, svc, "/sessions/%s/read" % s["session_id"], tok, []))
    for i in range(n + 5):
        for name, svc, path, tok, ts in sides if i % 2 else reversed(sides):
            t0 = now()
            d = svc.req(path, {"path": "small.txt"}, tok)
            t1 = now()
            if d.get("content") != "hello":
                fail("read through %s: %s" % (name, d))
            if i >= 5:
                ts.append(t1 - t0)
    for name, _, _, _, ts in sides:
        write_times("read." + name, ts)


def mode_who(n):
    """The same small read on service A, alternately with X-Sandbox-Agent
    and X-Sandbox-Run (a run's ids, as the platform's client sends them)
    and without (no agent, no run): who.with, who.without."""
    svc = Service(int(E["SERVE_PORT_A"]))
    s, tok = svc.open(P + "who")
    put_file(svc, s["session_id"], tok, "small.txt", b"hello\n")
    path = "/sessions/%s/read" % s["session_id"]
    who = {"X-Sandbox-Agent": "agent-bench-7f3a", "X-Sandbox-Run": "run-" + "5c" * 16}
    sides = [("with", who, []), ("without", None, [])]
    for i in range(n + 5):
        for name, headers, ts in sides if i % 2 else reversed(sides):
            t0 = now()
            d = svc.req(path, {"path": "small.txt"}, tok, headers=headers)
            t1 = now()
            if d.get("content") != "hello":
                fail("read %s agent and run: %s" % (name, d))
            if i >= 5:
                ts.append(t1 - t0)
    for name, _, ts in sides:
        write_times("who." + name, ts)


def load_rounds(port, targets, req, good, k, rounds, ready=None):
    """len(targets) clients (threads, each its own kept connection), client
    i POSTing req to targets[i] (path, token) k times in each of rounds
    rounds, all starting together: (the operations/s of each round, the
    errors, the answers good(answer) found right).  ready() runs once the
    clients are set up, before the first round."""
    clients = len(targets)
    start = threading.Barrier(clients + 1)
    end = threading.Barrier(clients + 1)
    errors, done = [], [0]
    lock = threading.Lock()

    def worker(i):
        c = Service(port)
        path, tok = targets[i]
        body = json.dumps(req).encode()
        hdr = {"X-Sandbox-Token": tok, "Content-Type": "application/json"}
        for _ in range(rounds):
            start.wait()
            n = 0
            for _ in range(k):
                try:
                    c.c.request("POST", path, body=body, headers=hdr)
                    r = c.c.getresponse()
                    out = r.read()
                    if r.status == 200 and good(json.loads(out)):
                        n += 1
                    else:
                        with lock:
                            errors.append((r.status, out[:200]))
                except Exception as e:  # a transport error is an error too
                    with lock:
                        errors.append(repr(e))
                    c = Service(port)
            with lock:
                done[0] += n
            end.wait()

    th = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    [t.start() for t in th]
    if ready:
        ready()
    rates = []
    for _ in range(rounds):
        start.wait()
        t0 = now()
        end.wait()
        rates.append(clients * k / (now() - t0))
    [t.join() for t in th]
    return rates, errors, done[0]


def mode_load(side, clients, nsess, k, rounds):
    port = int(E["SERVE_PORT_" + side])
    svc = Service(port)
    sessions = []
    for i in range(nsess):
        s, tok = svc.open("%sload%s%d" % (P, side, i))
        put_file(svc, s["session_id"], tok, "small.txt", b"hello\n")
        sessions.append(("/sessions/%s/read" % s["session_id"], tok))
    targets = [sessions[i % nsess] for i in range(clients)]
    rates, errors, done = load_rounds(port, targets, {"path": "small.txt"},
                                      lambda d: d.get("content") == "hello", k, rounds)
    write_times("load.rate." + side, rates)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print("# client_cpu %.2f" % (ru.ru_utime + ru.ru_stime))
    print("# errors %d" % len(errors))
    for e in errors[:5]:
        print("# error %s" % (e,))
    print("# reads %d" % done)
    print("# opens %d" % nsess)
    print("# writes %d" % nsess)


def docker_run(name, key, d):
    """`docker run -d` with bench-session.sh's flags, on a workspace made
    the same way (d root's and 0700, d/workspace the sandbox uid's)."""
    docker, img, dep, rt = E["DOCKER"], E["IMG"], E["DEP"], E["RT"]
    ws = os.path.join(d, "workspace")
    os.makedirs(ws)
    os.chmod(d, 0o700)
    os.chown(ws, 10001, 10001)
    subprocess.run([docker, "run", "-d", "--name", name, "--init", "--user", "10001:10001",
                    "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pids-limit", "512",
                    "--cpus", "2", "--memory", "1g", "--memory-swap", "1g", "--tmpfs", "/tmp:size=64m",
                    "--network", "none", "--label", "io.sbxcat.deployment=" + dep,
                    "--label", "io.sbxcat.tenant=bench", "--label", "io.sbxcat.key=" + key,
                    "--label", "io.sbxcat.runtime=" + rt, "--label", "io.sbxcat.created=%d" % time.time(),
                    "--mount", "type=bind,source=%s,target=%s" % (ws, ws), "-w", ws,
                    "--entrypoint", "/bin/sleep", img, "2147483647"],
                   check=True, stdout=subprocess.DEVNULL)


def mode_open(n):
    a = Service(int(E["SERVE_PORT_A"]))
    rt = E["RT"]
    ts, td = [], []
    for i in range(1, n + 2):  # the first round warms up, not counted
        t0 = now()
        s, _ = a.open("%sopen%d" % (P, i))
        t1 = now()
        if not s["alive"]:
            fail("open %d: %s" % (i, s))
        t2 = now()
        docker_run("%s-%d" % (rt, i), "d-%d" % i, os.path.join(OUT, "docker", "d-%d" % i))
        t3 = now()
        if i > 1:
            ts.append(t1 - t0)
            td.append(t3 - t2)
    write_times("open.serve", ts)
    write_times("open.docker", td)


def main():
    m, a = sys.argv[1], [x if x in ("A", "B") else int(x) for x in sys.argv[2:]]
    {"exec": mode_exec, "read": mode_read, "who": mode_who, "load": mode_load,
     "open": mode_open}[m](*a)


if __name__ == "__main__":  # bench/fast_bench.py imports it
    main()

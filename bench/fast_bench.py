#!/usr/bin/env python3
"""fast_bench.py - the driver of bench/bench-fast.sh (issue 19, fast
sessions): `sbxcat serve` through http.client clients that keep their
connection, beside the docker CLI and the engine's own API.  Each mode
writes the seconds (or rates) of each run, one a line, to files in OUT
(the shell prints the medians) and prints "# key value" lines for the
shell.  The first run of each mode warms up and is not counted.

  fast_bench.py up PORT          wait until the service on PORT answers
                                 /healthz (at most 10 s)
  fast_bench.py first N SIZE     open -> first command (`true`) on the
                                 pooled service P (pool of SIZE for RT)
                                 beside `docker run -d` + `docker exec`
  fast_bench.py reopen N         a session of C paused through the engine
                                 API, reopened (reuse), beside `docker
                                 start` of a stopped container
  fast_bench.py burst N          16 concurrent cold opens on C beside 16
                                 concurrent create+start of the session's
                                 own container body through the engine API
                                 (N rounds each, alternately)
  fast_bench.py open N           a cold open on C beside `docker run -d`
                                 (serve_bench.py's mode, SERVE_PORT_A = C)

Between the runs of `first` the pool is waited for: while GET /metrics
has a gauge sbxcat_pool_ready{runtime="RT"}, until it is SIZE again (at
most 15 s); without one, 0.5 s.

Environment: serve_bench.py's (SERVE_TOKEN, OUT, PREFIX, ENGINE_SOCK,
DOCKER, IMG, DEP, RT), and SERVE_PORT_P, SERVE_ROOT_P (the pooled
service and its workspace root), SERVE_PORT_A, SERVE_ROOT_A (the cold
service C).
"""
import calendar
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_bench as sb  # noqa: E402  (its Service, engine client, docker_run)

E = os.environ
P = E.get("PREFIX", "f")
RT = E["RT"]
now = sb.now
BURST = 16


def call(svc, method, path, token=sb.TOKEN, want=(200, 204)):
    """A request other than serve_bench's POST on a service's kept
    connection: (status, body)."""
    svc.c.request(method, path, headers={"X-Sandbox-Token": token})
    r = svc.c.getresponse()
    out = r.read()
    if r.status not in want:
        sb.fail("%s %s on :%d: %d %s" % (method, path, svc.port, r.status, out[:300]))
    return out


def close(svc, sid):
    call(svc, "DELETE", "/sessions/%s?purge=true" % sid)


def engine(eng, method, url, body=None, want=(200, 201, 204, 304)):
    return eng.call(eng.c, method, url, body, want)


def inspect(eng, cid):
    return json.loads(engine(eng, "GET", "/containers/%s/json" % cid))


def docker(*args):
    subprocess.run([E["DOCKER"]] + list(args), check=True, stdout=subprocess.DEVNULL)


def container_of(root, sid_key):
    try:
        with open(os.path.join(root, sid_key, "session.json")) as f:
            return json.load(f).get("container")
    except (OSError, ValueError):
        return None


def rfc3339(s):
    """The engine's time (nanoseconds, Z) as epoch seconds."""
    base, _, frac = s.rstrip("Z").partition(".")
    t = calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))
    return t + (float("0." + frac) if frac else 0.0)


def pool_ready(svc):
    """sbxcat_pool_ready{runtime="RT"} of the service's /metrics, or None
    when it has no such gauge."""
    text = call(svc, "GET", "/metrics").decode()
    for line in text.splitlines():
        if line.startswith("sbxcat_pool_ready{") and ('runtime="%s"' % RT) in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def wait_pool(svc, size, seen):
    """Wait until the pool is refilled; counts in seen (gauge, timeouts)."""
    v = pool_ready(svc)
    if v is None:
        time.sleep(0.5)
        return
    seen["gauge"] = 1
    t_end = now() + 15
    while v < size and now() < t_end:
        time.sleep(0.02)
        v = pool_ready(svc)
    if v < size:
        seen["timeouts"] += 1


def mode_up(port):
    t_end = now() + 10
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        if now() > t_end:
            sb.fail("the service on :%d did not answer /healthz in 10 s" % port)
        time.sleep(0.1)


def mode_first(n, size):
    svc = sb.Service(int(E["SERVE_PORT_P"]))
    eng = sb.Engine(E["ENGINE_SOCK"])
    seen = {"gauge": 0, "timeouts": 0}
    pooled = unknown = 0
    ts, td = [], []
    # The pool's first fill, before any run (at most 60 s with a gauge).
    t_end = now() + 60
    while now() < t_end:
        v = pool_ready(svc)
        if v is None or v >= size:
            break
        time.sleep(0.1)
    for i in range(n + 1):
        sid = "%sfirst%d" % (P, i)
        wait_pool(svc, size, seen)
        w0 = time.time()
        t0 = now()
        s, tok = svc.open(sid)
        d = svc.req("/sessions/%s/exec" % sid, {"command": "true"}, tok)
        t1 = now()
        if d["exit_code"] != 0:
            sb.fail("exec true in %s: %s" % (sid, d))
        cid = container_of(E["SERVE_ROOT_P"], sb.key_of(E["SERVE_ROOT_P"], sid))
        if i == 0:
            pass
        elif cid is None:
            unknown += 1
        elif rfc3339(inspect(eng, cid)["Created"]) < w0:
            pooled += 1  # made before the open was asked for
        close(svc, sid)
        wait_pool(svc, size, seen)  # the claim's refill, not in docker's time
        name = "%s-first-%d" % (RT, i)
        t2 = now()
        sb.docker_run(name, "first-%d" % i, os.path.join(sb.OUT, "docker", "first-%d" % i))
        docker("exec", name, "true")
        t3 = now()
        docker("rm", "-f", name)
        if i > 0:
            ts.append(t1 - t0)
            td.append(t3 - t2)
    sb.write_times("first.serve", ts)
    sb.write_times("first.docker", td)
    print("# gauge %d" % seen["gauge"])
    print("# refill_timeouts %d" % seen["timeouts"])
    print("# pooled %d" % pooled)
    print("# unknown %d" % unknown)


def mode_reopen(n):
    svc = sb.Service(int(E["SERVE_PORT_A"]))
    eng = sb.Engine(E["ENGINE_SOCK"])
    sid = P + "reopen"
    s, _ = svc.open(sid)
    cid = container_of(E["SERVE_ROOT_A"], sb.key_of(E["SERVE_ROOT_A"], sid))
    if cid is None:
        sb.fail("the record of %s names no container" % sid)
    name = "%s-reopen" % RT
    sb.docker_run(name, "reopen", os.path.join(sb.OUT, "docker", "reopen"))
    ts, td = [], []
    still = 0
    for i in range(n + 1):
        engine(eng, "POST", "/containers/%s/pause" % cid)
        t0 = now()
        r = svc.req("/sessions", {"session_id": sid, "reuse": True})
        t1 = now()
        if not r["session"]["alive"]:
            sb.fail("reopen of a paused session: %s" % r)
        if inspect(eng, cid)["State"]["Status"] != "running":
            still += 1  # the open left it paused: the figure is not one
            engine(eng, "POST", "/containers/%s/unpause" % cid)
        docker("stop", "-t", "0", name)
        t2 = now()
        docker("start", name)
        t3 = now()
        if i > 0:
            ts.append(t1 - t0)
            td.append(t3 - t2)
    close(svc, sid)
    docker("rm", "-f", name)
    sb.write_times("reopen.serve", ts)
    sb.write_times("reopen.docker", td)
    print("# still_paused %d" % still)


def spec_of(eng, svc):
    """The session's own container body: the fields session_container_body
    (src/session/session-engine.c) sets, read back from the inspect of a
    session's container."""
    sid = P + "spec"
    s, _ = svc.open(sid)
    cid = container_of(E["SERVE_ROOT_A"], sb.key_of(E["SERVE_ROOT_A"], sid))
    if cid is None:
        sb.fail("the record of %s names no container" % sid)
    j = inspect(eng, cid)
    close(svc, sid)
    cfg, host = j["Config"], j["HostConfig"]
    body = {k: cfg.get(k) for k in ("Image", "User", "Entrypoint", "Cmd", "WorkingDir", "Env", "Labels", "Tty",
                                    "OpenStdin", "AttachStdout", "AttachStderr", "StopSignal")}
    body["HostConfig"] = {k: host.get(k) for k in (
        "Init", "CapDrop", "SecurityOpt", "PidsLimit", "NanoCpus", "Memory", "MemorySwap", "Tmpfs", "NetworkMode",
        "Mounts", "Privileged", "PublishAllPorts", "IpcMode", "CgroupnsMode", "RestartPolicy", "AutoRemove")}
    if len(body["HostConfig"]["Mounts"] or []) != 1:
        sb.fail("a session's container with %s mounts, not one" % body["HostConfig"]["Mounts"])
    return body


def engine_one(body, d, name):
    """One create+start of body on its own workspace d/workspace (made as
    the session's is), through the engine API on a kept connection."""
    ws = os.path.join(d, "workspace")
    os.makedirs(ws)
    os.chmod(d, 0o700)
    os.chown(ws, 10001, 10001)
    b = json.loads(json.dumps(body))
    b["WorkingDir"] = ws
    b["Labels"]["io.sbxcat.key"] = name
    m = b["HostConfig"]["Mounts"][0]
    m["Source"] = m["Target"] = ws
    return b


def burst(work, clean):
    """BURST threads, each set up first (its own connection), then work(j)
    between two barriers: the rate, and the errors (clean(j) after)."""
    start, end = threading.Barrier(BURST + 1), threading.Barrier(BURST + 1)
    errors = []

    def run(j):
        ok = False
        try:
            step = work(j)
            ok = True
        except BaseException as e:  # sb.fail is SystemExit: a thread reports it
            errors.append(repr(e))
        finally:
            start.wait()
        try:
            if ok:
                step()
        except BaseException as e:
            errors.append(repr(e))
        end.wait()
        try:
            clean(j)
        except BaseException as e:
            errors.append("cleaning: " + repr(e))

    th = [threading.Thread(target=run, args=(j,)) for j in range(BURST)]
    [t.start() for t in th]
    start.wait()
    t0 = now()
    end.wait()
    rate = BURST / (now() - t0)
    [t.join() for t in th]
    return rate, errors


def mode_burst(n):
    svc = sb.Service(int(E["SERVE_PORT_A"]))
    eng = sb.Engine(E["ENGINE_SOCK"])
    body = spec_of(eng, svc)
    rs, re_ = [], []
    errors = []

    def service_round(r):
        conns = {}

        def work(j):
            c = conns[j] = sb.Service(svc.port)
            c.c.connect()
            return lambda: c.open("%sb%d-%d" % (P, r, j))

        def clean(j):
            close(conns[j], "%sb%d-%d" % (P, r, j))
        return burst(work, clean)

    def engine_round(r):
        ids = {}

        def work(j):
            c = sb.Engine(E["ENGINE_SOCK"])
            c.c.connect()
            name = "%s-b%d-%d" % (RT, r, j)
            d = os.path.join(sb.OUT, "engine", "b%d-%d" % (r, j))

            def step():
                b = engine_one(body, d, name)
                out = c.call(c.c, "POST", "/containers/create?name=" + name, b)
                ids[j] = (c, json.loads(out)["Id"], d)
                c.call(c.c, "POST", "/containers/%s/start" % ids[j][1], None, (204,))
            return step

        def clean(j):
            if j in ids:
                c, cid, d = ids[j]
                c.call(c.c, "DELETE", "/containers/%s?force=true" % cid, None, (204,))
                shutil.rmtree(d)
        return burst(work, clean)

    for r in range(n + 1):
        sides = [(service_round, rs), (engine_round, re_)]
        for f, out in sides if r % 2 else reversed(sides):
            rate, errs = f(r)
            errors += errs
            if r > 0:
                out.append(rate)
    sb.write_times("burst.serve", rs)
    sb.write_times("burst.engine", re_)
    print("# errors %d" % len(errors))
    for e in errors[:5]:
        print("# error %s" % e)
    print("# body %s" % json.dumps(body, sort_keys=True))


def main():
    m, a = sys.argv[1], [int(x) for x in sys.argv[2:]]
    if m == "open":
        sb.mode_open(*a)
        return
    {"up": mode_up, "first": mode_first, "reopen": mode_reopen, "burst": mode_burst}[m](*a)


if __name__ == "__main__":  # bench/exec_bench.py imports it
    main()

#!/usr/bin/env python3
"""exec_bench.py - the driver of bench/bench-exec.sh (issue 33, exec at
the speed of a fork): `sbxcat serve` through http.client clients that keep
their connection, beside the engine's own API (on its unix socket) and the
docker CLI.  Each mode writes the seconds (or rates) of each run, one a
line, to files in OUT (the shell prints the medians) and prints "# key
value" lines for the shell, among them the commands the service started
each way over the mode (its /metrics' sbxcat_exec_started_total{path=...},
"n/a" while it has no such counter).

  exec_bench.py exec N KEY      exec `true` alternately: through the service
                                (A's session SID, kept connection), the
                                engine API's own exec on that session's
                                container (create, start, inspect), `sbxcat
                                exec KEY -- true` (the CLI, on the session
                                KEY it opened) and `docker exec CONTAINER
                                true`; the first two rounds warm up
  exec_bench.py first N SIZE    open -> first command on the pooled service
                                (fast_bench.py's mode, SERVE_PORT_P)
  exec_bench.py load C K R      C clients (threads, each its own kept
                                connection and its own session, opened
                                first) each running K execs of `true` in
                                each of R rounds on A: execs/s of each round

Environment: serve_bench.py's and fast_bench.py's (SERVE_PORT_A,
SERVE_ROOT_A, SERVE_TOKEN, OUT, PREFIX, ENGINE_SOCK, DOCKER, IMG, DEP, RT,
SERVE_PORT_P, SERVE_ROOT_P), and SX (the sbxcat command line with its
catalogue, one word per line) for the CLI.
"""
import os
import resource
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_bench as sb  # noqa: E402  (Service, Engine, write_times)

E = os.environ
P = E.get("PREFIX", "x")
now = sb.now
PATHS = ("fast", "engine")


def started(port):
    """{path: count} of sbxcat_exec_started_total on the service's
    /metrics (a path the service does not count is missing), and
    {"why:" + reason: count} of sbxcat_exec_fallback_total."""
    svc = sb.Service(port)
    svc.c.request("GET", "/metrics", headers={"X-Sandbox-Token": sb.TOKEN})
    text = svc.c.getresponse().read().decode()
    svc.c.close()
    out = {}
    for line in text.splitlines():
        for p in PATHS:
            if line.startswith('sbxcat_exec_started_total{path="%s"}' % p):
                out[p] = int(float(line.rsplit(" ", 1)[1]))
        if line.startswith('sbxcat_exec_fallback_total{reason="'):
            why = line.split('"')[1]
            out["why:" + why] = int(float(line.rsplit(" ", 1)[1]))
    return out


def print_paths(before, after):
    for p in PATHS:
        if p in before and p in after:
            print("# path_%s %d" % (p, after[p] - before[p]))
        else:
            print("# path_%s n/a" % p)
    why = ["%s %d" % (k[4:], after[k] - before.get(k, 0)) for k in sorted(after)
           if k.startswith("why:") and after[k] > before.get(k, 0)]
    print("# fallbacks %s" % (", ".join(why) or "none"))


# The processes whose CPU the load's rounds are measured in: the
# environment's CPU_SERVICE, CPU_PG and CPU_ENGINE (pids, blank-separated),
# and this one.
CPU_OF = ("service", "children", "pg", "engine", "client")
HZ = os.sysconf("SC_CLK_TCK")


def cpu():
    """{who: user + system CPU seconds so far} of CPU_OF's processes (one
    gone meanwhile counts 0)."""
    out = {}
    for who in CPU_OF[:4]:
        # children: the service's reaped children's (the fast path's
        # forks and the commands), cutime + cstime
        var, at = ("SERVICE", 13) if who == "children" else (who.upper(), 11)
        t = 0
        for pid in E.get("CPU_" + var, "").split():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    st = f.read().rsplit(")", 1)[1].split()
                t += int(st[at]) + int(st[at + 1])
            except (OSError, IndexError, ValueError):
                pass
        out[who] = t / HZ
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out["client"] = ru.ru_utime + ru.ru_stime
    return out


def run(argv):
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sb.fail("%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr[-300:]))


def mode_exec(n, key):
    port = int(E["SERVE_PORT_A"])
    a = sb.Service(port)
    s, tok = a.open(P + "exec")
    cid = sb.container_of(s)
    eng = sb.Engine(E["ENGINE_SOCK"])
    sx = E["SX"].split("\n")
    path = "/sessions/%s/exec" % s["session_id"]
    ts, te, tc, td = [], [], [], []
    m0 = started(port)
    for i in range(n + 2):  # two rounds to warm up, not counted
        t0 = now()
        d = a.req(path, {"command": "true"}, tok)
        t1 = now()
        if d["exit_code"] != 0:
            sb.fail("service exec true: %s" % d)
        eng.exec_true(cid)
        t2 = now()
        run(sx + ["exec", key, "--", "true"])
        t3 = now()
        run([E["DOCKER"], "exec", cid, "true"])
        t4 = now()
        if i >= 2:
            ts.append(t1 - t0)
            te.append(t2 - t1)
            tc.append(t3 - t2)
            td.append(t4 - t3)
    print_paths(m0, started(port))
    sb.write_times("exec.serve", ts)
    sb.write_times("exec.engine", te)
    sb.write_times("exec.cli", tc)
    sb.write_times("exec.docker", td)
    print("# container %s" % cid)


def mode_first(n, size):
    import fast_bench as fb  # its RT, its pool's waits, docker_run
    port = int(E["SERVE_PORT_P"])
    m0 = started(port)
    fb.mode_first(n, size)
    print_paths(m0, started(port))


def mode_load(clients, kmax, rounds):
    """As the doc says; k, the execs of a client in a round, from a first
    round of one exec each (not counted): as many as take about a second
    at that round's rate, at least 1 and at most kmax."""
    port = int(E["SERVE_PORT_A"])
    svc = sb.Service(port)
    sessions = []
    for i in range(clients):
        s, tok = svc.open("%sload%d" % (P, i))
        sessions.append(("/sessions/%s/exec" % s["session_id"], tok))
    rate, werrors, wdone = sb.load_rounds(port, sessions, {"command": "true"},
                                          lambda d: d.get("exit_code") == 0, 1, 1)
    k = max(1, min(kmax, int(rate[0] / clients)))
    m0, c0 = {}, {}

    def ready():
        m0.update(started(port))
        c0.update(cpu())
        c0["t"] = now()
    rates, errors, done = sb.load_rounds(port, sessions, {"command": "true"},
                                         lambda d: d.get("exit_code") == 0, k, rounds, ready)
    c1 = cpu()
    print("# wall %.2f" % (now() - c0["t"]))
    for who in CPU_OF:
        print("# cpu_%s %.2f" % (who, c1[who] - c0[who]))
    print_paths(m0, started(port))
    errors += werrors
    sb.write_times("load.rate", rates)
    print("# errors %d" % len(errors))
    for e in errors[:5]:
        print("# error %s" % (e,))
    print("# execs %d" % done)
    print("# made %d" % (done + wdone))
    print("# opens %d" % clients)
    print("# k %d" % k)


def main():
    m = sys.argv[1]
    if m == "exec":
        mode_exec(int(sys.argv[2]), sys.argv[3])
        return
    a = [int(x) for x in sys.argv[2:]]
    {"first": mode_first, "load": mode_load}[m](*a)


main()

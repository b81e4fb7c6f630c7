#!/usr/bin/env python3
"""fleet_bench.py - the driver of bench/bench-fleet.sh: clients of a fleet
of `sbxcat serve` hosts (tests/fleetbed.sh), each on http.client
connections it keeps.  It runs in a namespace of the bed that is neither
host (the registry's), so a direct request and a forwarded one both cross
the bed's bridge once from the client.  Each mode writes the seconds of
each run, one a line, to files in OUT (the shell prints the percentiles)
and prints "# key value" lines for the shell.

  fleet_bench.py exec N SID TOK   exec `true` on SID (a session of h2):
                                  to h2 directly and through h1 (which
                                  forwards it), alternately: exec.direct,
                                  exec.fwd
  fleet_bench.py hop N SID TOK    the same with `exists` of a small file
                                  written first (a cheap route):
                                  hop.direct, hop.fwd
  fleet_bench.py open N URL-A URL-B  a cold POST /sessions (a new id
                                  each time) on A and on B alternately,
                                  each closed with purge after: open.a,
                                  open.b
  fleet_bench.py burst LABEL TOTAL CONC ROUNDS URL...  CONC threads, thread
                                  i on URL[i % len], TOTAL opens in all,
                                  each followed by its DELETE with purge,
                                  ROUNDS times: opens/s of each round
                                  (burst.rate.LABEL) and each open's
                                  seconds (burst.open.LABEL)

Environment: FB_URL_1, FB_URL_2 (the hosts), TOKEN (the service's), OUT,
PREFIX (of the ids made here).
"""
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

E = os.environ
TOKEN = E["TOKEN"]
OUT = E["OUT"]
P = E.get("PREFIX", "fb")
now = time.perf_counter


def fail(msg):
    print("fleet_bench: " + msg, file=sys.stderr)
    sys.exit(1)


class Host:
    """One client of one host on one kept connection."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.url = url
        self.c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)

    def call(self, method, path, body=None, token=TOKEN, want=200):
        data = json.dumps(body).encode() if body is not None else None
        h = {"X-Sandbox-Token": token}
        if data is not None:
            h["Content-Type"] = "application/json"
        self.c.request(method, path, body=data, headers=h)
        r = self.c.getresponse()
        out = r.read()
        if r.status not in (want if isinstance(want, tuple) else (want,)):
            raise RuntimeError("%s %s on %s: %d %s" % (method, path, self.url, r.status, out[:300]))
        return json.loads(out) if out else None

    def open(self, sid):
        return self.call("POST", "/sessions", {"session_id": sid})

    def purge(self, sid):
        self.call("DELETE", "/sessions/%s?purge=true" % sid, want=(200, 204))


def write_times(name, ts):
    with open(os.path.join(OUT, name), "w") as f:
        for t in ts:
            f.write("%.6f\n" % t)


def side_by_side(n, warm, sides, one):
    """n counted rounds after warm ones, the sides in turn, the first side
    first in even rounds and last in odd ones."""
    for i in range(n + warm):
        for name, h, ts in sides if i % 2 else reversed(sides):
            t0 = now()
            one(name, h)
            t1 = now()
            if i >= warm:
                ts.append(t1 - t0)


def mode_calls(kind, n, sid, tok):
    direct, fwd = Host(E["FB_URL_2"]), Host(E["FB_URL_1"])
    if kind == "exec":
        path, body = "/sessions/%s/exec" % sid, {"command": "true"}
    else:
        direct.call("POST", "/sessions/%s/write" % sid,
                    {"path": "small.txt", "content_b64": "aGVsbG8K"}, tok)
        path, body = "/sessions/%s/exists" % sid, {"path": "small.txt"}

    def one(name, h):
        d = h.call("POST", path, body, tok)
        if kind == "exec" and d.get("exit_code") != 0:
            fail("exec true %s: %s" % (name, d))
        if kind == "hop" and d.get("exists") is not True:
            fail("exists small.txt %s: %s" % (name, d))

    sides = [("direct", direct, []), ("fwd", fwd, [])]
    side_by_side(int(n), 5, sides, one)
    for name, _, ts in sides:
        write_times("%s.%s" % (kind, name), ts)


def mode_open(n, url_a, url_b):
    sides = [("a", Host(url_a), []), ("b", Host(url_b), [])]
    seq = 0
    for i in range(int(n) + 2):  # two rounds to warm up, not counted
        for name, h, ts in sides if i % 2 else reversed(sides):
            seq += 1
            sid = "%s-o%s%d" % (P, name, seq)
            t0 = now()
            d = h.open(sid)
            t1 = now()
            if not d["session"]["alive"]:
                fail("open %s: %s" % (sid, d))
            h.purge(sid)  # not timed: the open alone
            if i >= 2:
                ts.append(t1 - t0)
    for name, _, ts in sides:
        write_times("open." + name, ts)


def mode_burst(label, total, conc, rounds, *urls):
    total, conc, rounds = int(total), int(conc), int(rounds)
    start = threading.Barrier(conc + 1)
    end = threading.Barrier(conc + 1)
    lock = threading.Lock()
    left = [0]
    errors, lat = [], []

    def worker(i):
        h = Host(urls[i % len(urls)])
        for r in range(rounds):
            start.wait()
            while True:
                with lock:
                    if left[0] == 0:
                        break
                    left[0] -= 1
                    k = left[0]
                sid = "%s-%s%d-%d" % (P, label, r, k)
                try:
                    t0 = now()
                    h.open(sid)
                    t1 = now()
                    h.purge(sid)
                    with lock:
                        lat.append(t1 - t0)
                except Exception as e:  # counted, and the connection anew
                    with lock:
                        errors.append(repr(e))
                    h = Host(urls[i % len(urls)])
            end.wait()

    th = [threading.Thread(target=worker, args=(i,)) for i in range(conc)]
    [t.start() for t in th]
    rates = []
    for _ in range(rounds):
        left[0] = total
        start.wait()
        t0 = now()
        end.wait()
        rates.append(total / (now() - t0))
    [t.join() for t in th]
    write_times("burst.rate." + label, rates)
    write_times("burst.open." + label, lat)
    print("# errors %d" % len(errors))
    for e in errors[:5]:
        print("# error %s" % e)


def main():
    m, a = sys.argv[1], sys.argv[2:]
    if m in ("exec", "hop"):
        mode_calls(m, *a)
    elif m == "open":
        mode_open(*a)
    elif m == "burst":
        mode_burst(*a)
    else:
        fail("unknown mode " + m)


if __name__ == "__main__":
    main()

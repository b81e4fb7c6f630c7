"""The load of t-fleet-loop.sh: two hosts of a fleet on loopback, hit at
once from many threads.  Opens through both hosts at once (the rows say
each host got some; every open answered), then every session's operations
through the host that does NOT hold it and through the one that does
(exec, write, read, ls, the events, the session), compared; a wrong token
through the other host; the lists of both hosts hold every session; closes
through the other host, and the rows follow.

argv: URL_A URL_B SERVICE_TOKEN SQL (a script running its argument as SQL
on the test's database, printing the rows) RUNTIME (one that needs no
build)."""
import base64
import http.client
import json
import subprocess
import sys
import threading
import urllib.parse

from taplib import ok, diag, plan

A, B, TOKEN, SQL, RUNTIME = sys.argv[1:6]
HOSTS = {"a": A, "b": B}
N = 16
THREADS = 8


def sql(q):
    return subprocess.run([SQL, q], capture_output=True, text=True,
                          check=False).stdout.strip()


class Client:
    """A kept-alive connection per thread and host."""

    def __init__(self):
        self.conns = {}

    def req(self, url, method, path, body=None, token=TOKEN, headers=None):
        u = urllib.parse.urlsplit(url)
        c = self.conns.get(url)
        if c is None:
            c = self.conns[url] = http.client.HTTPConnection(
                u.hostname, u.port, timeout=150)
        h = {"X-Sandbox-Token": token}
        if body is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        data = None if body is None else json.dumps(body)
        try:
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException) as e:
            self.conns.pop(url, None)
            return 0, str(e).encode()
        return r.status, raw


def in_threads(fn, items):
    out = {}
    lock = threading.Lock()
    items = list(items)

    def work(part):
        cl = Client()
        for it in part:
            r = fn(cl, it)
            with lock:
                out[it] = r

    ts = [threading.Thread(target=work, args=(items[i::THREADS],))
          for i in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


ids = ["lp-%02d" % i for i in range(N)]


def open_one(cl, sid):
    via = A if int(sid[-2:]) % 2 else B
    st, raw = cl.req(via, "POST", "/sessions",
                     {"session_id": sid, "runtime": RUNTIME})
    try:
        return st, json.loads(raw)
    except ValueError:
        return st, raw


opened = in_threads(open_one, ids)
ok(all(v[0] == 200 for v in opened.values()),
   "%d opens at once through both hosts: every one 200" % N,
   {k: v for k, v in opened.items() if v[0] != 200})
tokens = {k: v[1]["token"] for k, v in opened.items() if v[0] == 200}
rows = dict(line.split("|") for line in
            sql("SELECT wire_id, host FROM fleet_sessions WHERE state = "
                "'open'").splitlines() if "|" in line)
ok(sorted(rows) == ids, "the fleet's table holds every session open",
   rows)
per = {h: sum(1 for v in rows.values() if v == h) for h in HOSTS}
ok(per["a"] > 0 and per["b"] > 0,
   "placement used both hosts (a %d, b %d)" % (per["a"], per["b"]))
ok(sql("SELECT count(*) FROM fleet_sessions WHERE cardinality(tokens) = 1")
   == str(N), "each row keeps its token's hash")


def other(sid):
    return B if rows.get(sid) == "a" else A


def own(sid):
    return A if rows.get(sid) == "a" else B


def ops(cl, sid):
    """Every check of one session, through the other host and its own."""
    bad = []
    tok = tokens[sid]
    data = ("hello %s\n" % sid).encode()
    st, raw = cl.req(other(sid), "POST", "/sessions/%s/write" % sid,
                     {"path": "/workspace/f.txt",
                      "content_b64": base64.b64encode(data).decode()},
                     token=tok)
    if st != 200:
        bad.append(("write", st, raw[:200]))
    for via in (other(sid), own(sid)):
        st, raw = cl.req(via, "POST", "/sessions/%s/exec" % sid,
                         {"command": "cat /workspace/f.txt; echo $((6*7))"},
                         token=tok)
        try:
            out = json.loads(raw)
        except ValueError:
            out = {}
        if st != 200 or out.get("output") != data.decode() + "42\n":
            bad.append(("exec", via, st, raw[:200]))
        st, raw = cl.req(via, "POST", "/sessions/%s/read_bytes" % sid,
                         {"path": "/workspace/f.txt"}, token=tok)
        if st != 200 or json.loads(raw).get("content_b64") != \
                base64.b64encode(data).decode():
            bad.append(("read_bytes", via, st, raw[:200]))
    a = cl.req(other(sid), "POST", "/sessions/%s/ls" % sid,
               {"path": "/workspace"}, token=tok)
    b = cl.req(own(sid), "POST", "/sessions/%s/ls" % sid,
               {"path": "/workspace"}, token=tok)
    if a != b or a[0] != 200:
        bad.append(("ls differs", a, b))
    st, raw = cl.req(other(sid), "GET", "/sessions/%s" % sid, token=tok)
    if st != 200 or json.loads(raw).get("session_id") != sid:
        bad.append(("get", st, raw[:200]))
    st, raw = cl.req(other(sid), "GET", "/sessions/%s/events?after=0" % sid,
                     token=tok)
    if st != 200 or not json.loads(raw).get("events"):
        bad.append(("events", st, raw[:200]))
    # Another session's token, and none, through the other host.
    wrong = tokens[ids[(ids.index(sid) + 1) % N]]
    st, _ = cl.req(other(sid), "POST", "/sessions/%s/exec" % sid,
                   {"command": "true"}, token=wrong)
    if st != 401:
        bad.append(("another's token", st))
    st, _ = cl.req(other(sid), "POST", "/sessions/%s/exec" % sid,
                   {"command": "true"}, token="x" * 43)
    if st != 401:
        bad.append(("a made-up token", st))
    return bad


done = in_threads(ops, ids)
ok(all(not v for v in done.values()),
   "every session's operations through both hosts at once, in %d threads"
   % THREADS, {k: v for k, v in done.items() if v})

cl = Client()
for name, url in HOSTS.items():
    st, raw = cl.req(url, "GET", "/sessions")
    got = sorted(s["session_id"] for s in json.loads(raw)["sessions"]) \
        if st == 200 else raw
    ok(got == ids, "GET /sessions on %s lists both hosts' sessions" % name,
       got)

# A request naming a hop is answered where it lands: never forwarded.
sid = ids[0]
st, raw = cl.req(other(sid), "POST", "/sessions/%s/exec" % sid,
                 {"command": "true"}, token=TOKEN,
                 headers={"X-Sbxcat-Fleet-Hop": "x"})
ok(st == 404, "a forged hop header: answered there (404), not forwarded",
   (st, raw))
# An id the fleet does not have, through either host.
for name, url in HOSTS.items():
    st, _ = cl.req(url, "POST", "/sessions/nope-%s/exec" % name,
                   {"command": "true"}, token=TOKEN)
    ok(st == 404, "an id the fleet has not, on %s: 404" % name, st)


def close(cl, sid):
    purge = "?purge=true" if int(sid[-2:]) % 2 else ""
    return cl.req(other(sid), "DELETE", "/sessions/%s%s" % (sid, purge),
                  token=tokens[sid])[0]


closed = in_threads(close, ids[: N // 2])
ok(all(v == 204 for v in closed.values()),
   "closes through the other host: 204", closed)
ok(sql("SELECT count(*) FROM fleet_sessions WHERE state = 'kept'")
   == str(N // 4), "a close keeps its row as kept")
ok(sql("SELECT count(*) FROM fleet_sessions WHERE state = 'open'")
   == str(N - N // 2), "a purge removes it; the others stay open")
kept = [s for s in ids[: N // 2] if int(s[-2:]) % 2 == 0][0]
st, raw = cl.req(other(kept), "POST", "/workspaces/%s/read" % kept,
                 {"path": "f.txt"})
ok(st == 200 and "hello" in json.loads(raw).get("content", ""),
   "a kept workspace read through the other host", (st, raw[:200]))
plan()

#!/usr/bin/env python3
"""serve_load.py - `sbxcat serve` under load and faults, through real HTTP
clients (http.client, one kept connection per client).  Prints TAP and,
last, a line "# ops N" with the operations that were answered 200.

  serve_load.py mixed CLIENTS OPS      CLIENTS threads x OPS mixed operations
  serve_load.py outage CLIENTS OPS     the same while FAULT_STOP runs, then
                                       FAULT_START (the database's outage)
  serve_load.py engine                 the engine's outage (ENGINE_STOP,
                                       ENGINE_START): clear 502s, recovery
Environment: SERVE_HOST, SERVE_PORT, SERVE_TOKEN, SERVE_PREFIX.
"""
import base64
import http.client
import json
import os
import subprocess
import sys
import threading
import time

from taplib import ok, plan

E = os.environ
HOST, PORT, TOKEN, P = E["SERVE_HOST"], int(E["SERVE_PORT"]), E["SERVE_TOKEN"], E["SERVE_PREFIX"]


class Client:
    def __init__(self):
        self.c = http.client.HTTPConnection(HOST, PORT, timeout=120)

    def req(self, method, path, body=None, token=TOKEN):
        for attempt in (0, 1):
            try:
                self.c.request(method, path, body=json.dumps(body) if body is not None else None,
                               headers={"X-Sandbox-Token": token, "Content-Type": "application/json"})
                r = self.c.getresponse()
                data = r.read()
                return r.status, (json.loads(data) if data else None)
            except (http.client.HTTPException, ConnectionError, OSError):
                # The server closed a kept connection (idle): one new one.
                self.c.close()
                self.c = http.client.HTTPConnection(HOST, PORT, timeout=120)
                if attempt:
                    raise


def open_sessions(k):
    c = Client()
    out = []
    for i in range(k):
        st, doc = c.req("POST", "/sessions", {"session_id": "%sl%d" % (P, i), "reuse": True})
        if st != 200:
            return None, (st, doc)
        out.append((doc["session"]["session_id"], doc["token"]))
    return out, None


def one_op(c, sid, tok, i, j):
    """One of six operations; returns None when its answer is right."""
    path = "c%d/f%d.txt" % (i, j % 5)
    k = j % 6
    if k == 0:
        st, d = c.req("POST", "/sessions/%s/write" % sid,
                      {"path": path, "content_b64": base64.b64encode(b"v%d\n" % j).decode()}, tok)
        return None if st == 200 and d["error"] is None else (st, d)
    if k == 1:
        st, d = c.req("POST", "/sessions/%s/read" % sid, {"path": "shared.txt"}, tok)
        return None if st == 200 and d["content"] == "hello" else (st, d)
    if k == 2:
        st, d = c.req("POST", "/sessions/%s/exists" % sid, {"path": "shared.txt"}, tok)
        return None if st == 200 and d["exists"] is True else (st, d)
    if k == 3:
        st, d = c.req("POST", "/sessions/%s/ls" % sid, {"path": "."}, tok)
        return None if st == 200 and isinstance(d, list) else (st, d)
    if k == 4:
        st, d = c.req("POST", "/sessions/%s/exec" % sid, {"command": "echo %d" % j}, tok)
        return None if st == 200 and d["output"] == "%d\n" % j and d["exit_code"] == 0 else (st, d)
    st, d = c.req("POST", "/sessions/%s/read_bytes" % sid, {"path": "shared.txt"}, tok)
    return None if st == 200 and base64.b64decode(d["content_b64"]) == b"hello\n" else (st, d)


def load(clients, ops, sessions, during=None):
    errors, done = [], [0]
    lock = threading.Lock()

    def worker(i):
        c = Client()
        sid, tok = sessions[i % len(sessions)]
        for j in range(ops):
            try:
                bad = one_op(c, sid, tok, i, j)
            except Exception as e:  # a transport error is an error too
                bad = repr(e)
            with lock:
                # Every operation answered 200 has its row, right or not.
                if bad is None or (isinstance(bad, tuple) and bad[0] == 200):
                    done[0] += 1
                if bad is not None:
                    errors.append(bad)

    th = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    t0 = time.time()
    [t.start() for t in th]
    if during:
        during()
    [t.join() for t in th]
    return done[0], errors, time.time() - t0


def main():
    mode = sys.argv[1]
    if mode == "engine":
        return engine()
    clients, ops = int(sys.argv[2]), int(sys.argv[3])
    sessions, why = open_sessions(min(8, clients))
    ok(sessions is not None, "the sessions for the load open", why)
    if not sessions:
        return
    c = Client()
    for sid, tok in sessions:
        c.req("POST", "/sessions/%s/write" % sid,
              {"path": "shared.txt", "content_b64": base64.b64encode(b"hello\n").decode()}, tok)
    during = None
    if mode == "outage":
        def during():
            # Early: the fast path runs the whole load in a second or two.
            time.sleep(0.3)
            subprocess.run(E["FAULT_STOP"], shell=True, check=False)
    done, errors, el = load(clients, ops, sessions, during)
    ok(not errors, "%d clients x %d operations: every one answered right (%d in %.1f s, %.0f/s)"
       % (clients, ops, done, el, done / el), errors[:5])
    if mode == "outage":
        subprocess.run(E["FAULT_START"], shell=True, check=False)
    print("# ops %d" % (done + len(sessions) * 2))


def engine():
    c = Client()
    sessions = []
    for name in ("eng-a", "eng-b"):
        st, doc = c.req("POST", "/sessions", {"session_id": P + name})
        sessions.append((doc["session"]["session_id"], doc["token"])
                        if st == 200 else None)
    ok(None not in sessions, "two new sessions before the engine's outage",
       sessions)
    (sid, tok), (sid2, tok2) = sessions
    # The first one's state read just now (the fast path keeps it a few
    # seconds: docs/sessions.md "How a command is started").
    st, d = c.req("POST", "/sessions/%s/exec" % sid, {"command": "true"}, tok)
    subprocess.run(E["ENGINE_STOP"], shell=True, check=False)
    st, d = c.req("POST", "/sessions", {"session_id": P + "eng-new"})
    ok(st == 502 and d["detail"].startswith("Could not start sandbox: "),
       "an open while the engine is away: 502 saying why", (st, d))
    st, d = c.req("POST", "/sessions/%s/exec" % sid, {"command": "echo x"}, tok)
    ok(st == 200 and d["exit_code"] == 0 and d["output"] == "x\n",
       "an exec while the engine is away, in a session whose container was "
       "seen running a moment ago: it runs (no engine asked)", (st, d))
    # The second's state was never read by an exec: the engine is asked.
    st, d = c.req("POST", "/sessions/%s/exec" % sid2, {"command": "echo x"}, tok2)
    ok(st == 200 and d["exit_code"] == 1 and d["output"].startswith("Error: "),
       "an exec while the engine is away that must ask it: sandboxd's "
       "Error: output, exit 1", (st, d))
    st, d = c.req("POST", "/sessions/%s/read" % sid, {"path": "shared.txt"}, tok)
    ok(st == 200, "a host-side read needs no engine", (st, d))
    subprocess.run(E["ENGINE_START"], shell=True, check=False)
    time.sleep(0.5)
    st, d = c.req("POST", "/sessions/%s/exec" % sid, {"command": "echo back"}, tok)
    ok(st == 200 and d["output"] == "back\n", "the engine back: exec works without a restart of the service", (st, d))
    st, d = c.req("POST", "/sessions", {"session_id": P + "eng-new"})
    ok(st == 200, "... and so does an open", (st, d))
    for s in (sid, sid2, P + "eng-new"):
        c.req("DELETE", "/sessions/%s?purge=true" % s)


main()
plan()

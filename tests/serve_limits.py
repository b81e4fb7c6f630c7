#!/usr/bin/env python3
"""serve_limits.py - what no client of `sbxcat serve` may do to the others
(issue 28, items 3, 5, 6, 7, 8, 10), through real HTTP clients against a
running service on the real engine (tests/t-serve-limits.sh starts it).
Prints TAP.

Environment: SERVE_HOST, SERVE_PORT, SERVE_TOKEN (the service's),
SERVE_TOKEN_A, SERVE_TOKEN_B (tenants acme and beta), SERVE_PID (the
service's pid: its peak memory is read from /proc), SERVE_PREFIX (a prefix
for session ids, unique to the run), SERVE_MAX_WRITE (the write limit).
"""
import base64
import hashlib
import http.client
import json
import os
import socket
import sys
import threading
import time

import taplib
from taplib import ok, diag, plan

E = os.environ
HOST, PORT, TOKEN = E["SERVE_HOST"], int(E["SERVE_PORT"]), E["SERVE_TOKEN"]
TA, TB = E["SERVE_TOKEN_A"], E["SERVE_TOKEN_B"]
PID = int(E["SERVE_PID"])
P = E["SERVE_PREFIX"]
MAX_WRITE = int(E["SERVE_MAX_WRITE"])
MiB = 1 << 20


def req(method, path, body=None, token=None, raw=None, timeout=300):
    c = http.client.HTTPConnection(HOST, PORT, timeout=timeout)
    h = {"Content-Type": "application/json"}
    if token is not None:
        h["X-Sandbox-Token"] = token
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    try:
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read()
    except (BrokenPipeError, ConnectionResetError) as e:
        # the service cut the request (a body over a cap it saw late)
        return None, {"error": str(e)}, None
    c.close()
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        doc = None
    return r.status, doc, r


def hwm():
    """The service's peak resident memory, in bytes (VmHWM)."""
    with open("/proc/%d/status" % PID) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return -1


def conn():
    s = socket.create_connection((HOST, PORT))
    s.settimeout(30)
    return s


def response_of(s, wait=10.0):
    """What the server answered on s (status, raw), or (None, why)."""
    s.settimeout(wait)
    raw = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            raw += d
            if b"\r\n\r\n" in raw and b"Connection: close" not in raw:
                break
    except socket.timeout:
        if not raw:
            return None, "timeout"
    except (ConnectionResetError, BrokenPipeError):
        if not raw:
            return None, "reset"
    if not raw.startswith(b"HTTP/"):
        return None, "closed"
    return int(raw.split(b" ", 2)[1]), raw


def headers_only(method, path, length, token=None, extra=b""):
    """The headers of a body of length bytes and none of it: what the
    service answers before a byte of the body (status, raw)."""
    s = conn()
    h = b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" % (
        method.encode(), path.encode())
    if token:
        h += b"X-Sandbox-Token: " + token.encode() + b"\r\n"
    h += b"Content-Length: %d\r\n" % length + extra + b"\r\n"
    s.sendall(h)
    st, raw = response_of(s, 5.0)
    s.close()
    return st, raw


CHUNK = b"A" * MiB


def flood_one(path, length, token, out, i, chunked=False, body=None):
    """Send a body of length bytes (CHUNK's, or body's) as fast as the
    service takes it; what it answered into out[i]."""
    try:
        s = conn()
        h = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" % path.encode()
        if token:
            h += b"X-Sandbox-Token: " + token.encode() + b"\r\n"
        if chunked:
            h += b"Transfer-Encoding: chunked\r\n\r\n"
        else:
            h += b"Content-Length: %d\r\n\r\n" % length
        s.sendall(h)
        sent = 0
        try:
            while sent < length:
                piece = body[sent:sent + MiB] if body is not None else CHUNK[:min(MiB, length - sent)]
                if chunked:
                    s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                else:
                    s.sendall(piece)
                sent += len(piece)
            if chunked:
                s.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        out[i] = response_of(s, 10.0)[0]
        s.close()
    except OSError as e:
        out[i] = "error: %s" % e


def flood(n_clients, *args, **kw):
    out = [None] * n_clients
    th = [threading.Thread(target=flood_one, args=args + (out, i), kwargs=kw) for i in range(n_clients)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return out


def open_session(sid, tenant):
    st, doc, _ = req("POST", "/sessions", {"session_id": sid, "tenant": tenant, "reuse": False}, TOKEN)
    if st != 200:
        diag("open %s: %s %s" % (sid, st, doc))
        return None
    return doc["token"]


# ---- the index (item 5) ------------------------------------------------------

st, doc, _ = req("GET", "/")
ok(st == 200 and doc.get("docs_url") == "/docs" and doc.get("openapi_url") == "/openapi.json"
   and "ui_url" in doc and doc["ui_url"] is None,
   "GET /: docs_url \"/docs\", openapi_url \"/openapi.json\" (strings, as sandboxd), ui_url null", doc)
eps = doc.get("endpoints") or []
ok(eps == sorted(set(eps)) and "/docs" in eps and "/openapi.json" in eps and "/sessions/{id}/write" in eps,
   "GET /'s endpoints: each path once, sorted, /docs and /openapi.json among them", eps)
st, doc, _ = req("GET", "/openapi.json")
paths = (doc or {}).get("paths", {})
ok(st == 200 and doc.get("openapi", "").startswith("3.") and "post" in paths.get("/sessions/{id}/write", {})
   and "get" in paths.get("/sessions/{id}", {}) and "delete" in paths.get("/sessions/{id}", {}),
   "GET /openapi.json: an OpenAPI document listing every route and its methods", st)
ok(all(any(k in paths.get(p, {}) for k in ("get", "post", "put", "delete")) for p in doc.get("paths", {})) if doc else False,
   "... each path with at least one method")
st, _, r = req("GET", "/docs")
ok(st == 200 and r.getheader("Content-Type", "").startswith("text/html"), "GET /docs: a page, not a 404 (%s)" % st)

# ---- sessions for the rest ---------------------------------------------------

A, B = P + "a", P + "b"
TOKA = open_session(A, "acme")
TOKB = open_session(B, "beta")
if not ok(TOKA and TOKB, "two sessions of two tenants open"):
    print("Bail out! no sessions")
    sys.exit(1)
req("POST", "/sessions/%s/write" % B, {"path": "b.txt", "content_b64": base64.b64encode(b"beta's\n").decode()}, TOKB)
for i in range(3):
    req("POST", "/sessions/%s/read" % A, {"path": "none"}, TOKA)

# ---- item 6: nothing of a body before its token, bounded bodies ---------------

idle = hwm()
diag("the service's peak memory before the floods: %.1f MiB" % (idle / MiB))

st, raw = headers_only("POST", "/sessions/%s/write" % A, 1 * MiB)
ok(st == 401 and b"Connection: close" in raw,
   "a body's headers with no token: 401 and Connection: close before a byte of the body is sent", raw)
st, raw = headers_only("POST", "/sessions/%s/write" % A, 1 * MiB, token="x" * 43)
ok(st == 401 and b"Connection: close" in raw, "... a made-up session token too", raw)
st, raw = headers_only("POST", "/sessions/%s/write" % A, 1 * MiB, token=TOKB)
ok(st == 401, "... another session's token too", raw)
st, raw = headers_only("POST", "/sessions", 1 * MiB, token=TOKA)
ok(st == 401, "... a session's token on a route of the service's", raw)
st, raw = headers_only("PUT", "/policy", 1024, token=TA)
ok(st == 403, "... a tenant's token on a route of the service's alone: 403", raw)
st, raw = headers_only("POST", "/sessions/%s/exec" % A, 64, token=TOKA)
ok(st is None, "the session's own token: the service waits for the body (%s)" % st, raw)

res = flood(64, "/sessions/%s/write" % A, 60 * MiB, None)
bad = [x for x in res if x not in (401, None)]
ok(not bad and res.count(401) > 0,
   "64 tokenless 60 MiB writes at once: each answered 401 or cut, never read (%d 401s)" % res.count(401), res)
res = flood(16, "/sessions/%s/write" % A, 60 * MiB, "y" * 43)
ok(all(x in (401, None) for x in res), "16 60 MiB writes with made-up tokens: 401 or cut", res)
res = flood(16, "/sessions/%s/write" % A, 60 * MiB, None, chunked=True)
ok(all(x in (401, None) for x in res), "16 tokenless chunked 60 MiB writes: 401 or cut", res)
# 3 MiB each, 8 at once: a service that parsed them would take ~1.2 GB
# (and fail the bound below), yet not the machine's memory.
nodes = b"[" + b"{}," * (1 * MiB) + b"{}]"
res = flood(8, "/sessions", len(nodes), None, body=nodes)
ok(all(x in (401, None) for x in res), "8 tokenless 3 MiB [{},{},...] bodies to /sessions at once: 401 or cut", res)
peak = hwm()
diag("the service's peak memory after the floods: %.1f MiB" % (peak / MiB))
ok(peak - idle < 64 * MiB,
   "the service's peak memory grew by less than 64 MiB (%.1f MiB)" % ((peak - idle) / MiB))
st, doc, _ = req("GET", "/healthz")
ok(st == 200, "the service answers after the floods")

# What a token holder's body may cost.
st, raw = headers_only("POST", "/sessions", len(nodes), token=TOKEN)
ok(st == 413, "POST /sessions takes a few fields: a 3 MiB body is 413 before it is read", raw)
small = b"[" + b"{}," * 20000 + b"{}]"
st, doc, _ = req("POST", "/sessions", raw=small, token=TOKEN)
ok(st == 413 and "JSON values" in (doc or {}).get("detail", ""),
   "a body of 20,000 JSON values: 413 before it is parsed (%s)" % st, doc)
deep = b'{"session_id": ' + b"[" * 50 + b"]" * 50 + b"}"
st, doc, _ = req("POST", "/sessions", raw=deep, token=TOKEN)
ok(st == 422 and "nested" in json.dumps(doc), "a body nested 50 deep: 422 (%s)" % st, doc)
st, raw = headers_only("PUT", "/policy", 64 * 1024, token=TOKEN)
ok(st == 413, "PUT /policy: a 64 KiB body is 413", raw)
st, raw = headers_only("POST", "/sessions/%s/read" % A, 1 * MiB, token=TOKA)
ok(st == 413, "read: a 1 MiB body is 413", raw)
st, raw = headers_only("POST", "/sessions/%s/exec" % A, 2 * MiB, token=TOKA)
ok(st == 413, "exec: a 2 MiB body is 413", raw)
argv = ["echo"] + ["x" * 100] * 4000
st, doc, _ = req("POST", "/sessions/%s/run" % A, {"argv": argv, "env": {"K%d" % i: "v" for i in range(100)}}, TOKA)
ok(st == 200 and len(doc["stdout"]) > 400000, "run: argv of 4,000 strings and 100 env still runs (%s)" % st)

# ---- item 3: a write up to SANDBOXD_MAX_WRITE_BYTES ---------------------------

data = os.urandom(60 * MiB)
want = hashlib.sha256(data).hexdigest()
body = json.dumps({"path": "big.bin", "content_b64": base64.b64encode(data).decode()})
st, doc, _ = req("POST", "/sessions/%s/write" % A, raw=body, token=TOKA)
ok(st == 200 and doc.get("error") is None and str(doc.get("path", "")).endswith("big.bin"),
   "a 60 MiB write (an 80 MiB body) passes through the wire (%s)" % st, doc if st != 413 else "413")
st, doc, _ = req("POST", "/sessions/%s/exec" % A, {"command": "sha256sum big.bin"}, TOKA)
ok(st == 200 and doc["output"].split(" ")[0] == want, "... and reads back identical (sha256sum in the sandbox)", doc)
del data, body
cap = (MAX_WRITE // 3 + 1) * 4 + 64 * 1024
st, raw = headers_only("POST", "/sessions/%s/write" % A, cap + 1, token=TOKA)
ok(st == 413, "a write body past base64 of the limit is 413 before it is read", raw)

# ---- item 8: a run is its session's ------------------------------------------

RUN = "ab" * 16
result = {}


def run_in(sid, tok, argv, key):
    t = time.time()
    result[key] = req("POST", "/sessions/%s/run" % sid, {"argv": argv, "run_id": RUN}, tok)[:2] + (time.time() - t,)


tb = threading.Thread(target=run_in, args=(B, TOKB, ["sleep", "30"], "b"))
tb.start()
time.sleep(2)
st, doc, _ = req("POST", "/sessions/%s/run" % A, {"argv": ["echo", "mine"], "run_id": RUN}, TOKA)
ok(st == 200 and doc["stdout"] == "mine\n", "a run R in A while B runs R: served, never 409 (%s)" % st, doc)
st, _, _ = req("POST", "/sessions/%s/runs/%s/stop" % (A, RUN), token=TOKA)
ok(st == 204, "A's stop of run R (A has none now) answers 204 (%s)" % st)
time.sleep(1.5)
ok(tb.is_alive(), "... and B's run R goes on")
ta = threading.Thread(target=run_in, args=(A, TOKA, ["sleep", "30"], "a"))
ta.start()
time.sleep(2)
st, _, _ = req("POST", "/sessions/%s/runs/%s/stop" % (B, RUN), token=TOKB)
tb.join(10)
ok(not tb.is_alive() and result["b"][0] == 200 and result["b"][2] < 15,
   "B's stop stops B's run R (%.1f s)" % result.get("b", (0, 0, 99))[2], result.get("b"))
time.sleep(1)
ok(ta.is_alive(), "... and not A's run R")
req("POST", "/sessions/%s/runs/%s/stop" % (A, RUN), token=TOKA)
ta.join(10)
ok(not ta.is_alive(), "A's own stop stops A's run R")

# ---- item 7: one caller's flood, another tenant served ------------------------

st, d1, _ = req("GET", "/sessions/%s?usage=true" % A, token=TOKA)
st2, d2, _ = req("GET", "/sessions/%s?usage=true" % A, token=TOKA)
ok(st == 200 and st2 == 200 and d1.get("usage") is not None and d1["usage"] == d2["usage"],
   "usage is sampled once and kept: two GETs within 5 s answer the same sample", (d1, d2))
flood_res = [None] * 48
reads = []


def usage_get(i):
    try:
        c = http.client.HTTPConnection(HOST, PORT, timeout=120)
        c.request("GET", "/sessions/%s?usage=true" % A, headers={"X-Sandbox-Token": TOKA})
        r = c.getresponse()
        r.read()
        flood_res[i] = (r.status, r.getheader("Retry-After"))
        c.close()
    except OSError as e:
        flood_res[i] = ("error", str(e))


time.sleep(5.5)  # the sample kept above has gone stale: the flood asks the engine
th = [threading.Thread(target=usage_get, args=(i,)) for i in range(48)]
for t in th:
    t.start()
for i in range(6):
    st, doc, _ = req("POST", "/sessions/%s/read" % B, {"path": "b.txt"}, TOKB)
    reads.append(st)
    time.sleep(0.1)
for t in th:
    t.join()
ok(reads == [200] * 6, "48 ?usage=true GETs of one session at once: another tenant's read is 200 each time (%s)" % reads)
codes = sorted(set(str(x) for x in flood_res))
ok(all(x[0] == 200 or (x[0] == 429 and x[1] == "1") for x in flood_res),
   "... the flood's answers are 200, or 429 with Retry-After: 1 past its share (%s)" % codes)

# ---- item 10: paths no template holds -----------------------------------------


def raw_get(target, token=TOKEN):
    s = conn()
    s.sendall(b"GET " + target.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Sandbox-Token: " + token.encode()
              + b"\r\nConnection: close\r\n\r\n")
    st, raw = response_of(s)
    s.close()
    return st, raw


st, raw = raw_get("/sessions/%s%%00/events/x" % A)
ok(st == 400, "GET /sessions/ID%%00/events/x: 400, never served as /sessions/{id} (%s)" % st, raw)
st, raw = raw_get("/sessions/%s%%00" % A)
ok(st == 400, "GET /sessions/ID%%00: 400 (%s)" % st, raw)
st, raw = raw_get("/sessions/%s%%2Fevents" % A)
ok(st == 404, "GET /sessions/ID%%2Fevents: 404 (no id holds a '/'), never /sessions/{id}/events (%s)" % st, raw)
st, raw = raw_get("/sessions/%s/events?after=0%%00" % A)
ok(st == 400, "a %%00 in the query: 400 (%s)" % st, raw)
st, raw = raw_get("/sessions/%s/events?after=0" % A)
ok(st == 200, "the same path without it: 200 (%s)" % st, raw)

for sid, tok in ((A, TOKA), (B, TOKB)):
    req("DELETE", "/sessions/%s?purge=true" % sid, token=tok)
plan()
sys.exit(1 if taplib.failed else 0)

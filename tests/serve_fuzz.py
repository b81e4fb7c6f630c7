#!/usr/bin/env python3
"""serve_fuzz.py - no request ends `sbxcat serve` (issue 28 item 2,
docs/serve.md "Text"), through a real HTTP client (http.client) against a
running service (tests/t-serve-fuzz.sh starts it).

A session's workspace is filled host side with files of random bytes under
random names (invalid UTF-8, control characters, long names, deep
directories, symlinks out of the workspace, fifos); then the explicit cases
(a latin-1 file reads back as its text on the session route and the
archive route, a file with NUL bytes, UTF-16 and UTF-8 byte order marks, an
edit of a latin-1 file, rows of names that are not UTF-8), then every route
driven with random and hostile values for SERVE_FUZZ_N requests from the
seed SERVE_FUZZ_SEED (printed).  Every answer must be a well-formed HTTP
response with a status below 600, JSON where JSON is promised, and at the
end the service is the same process, alive, answering /healthz.  Prints
TAP.

Environment: SERVE_HOST, SERVE_PORT, SERVE_TOKEN, SERVE_PID (the
service's), SERVE_ROOT (the workspace root), SERVE_PREFIX (unique to the
run), SERVE_FUZZ_SEED, SERVE_FUZZ_N.
"""
import base64
import http.client
import json
import os
import random
import socket
import stat
import sys
import time
import urllib.parse

from taplib import ok, diag, plan
from wirehost import key_of

E = os.environ
HOST, PORT, TOKEN = E["SERVE_HOST"], int(E["SERVE_PORT"]), E["SERVE_TOKEN"]
PID = int(E["SERVE_PID"])
ROOT = E["SERVE_ROOT"]
P = E["SERVE_PREFIX"]
SEED = int(E.get("SERVE_FUZZ_SEED", "1"))
N = int(E.get("SERVE_FUZZ_N", "400"))
rnd = random.Random(SEED)
# An answer may echo a nested input (a 422's "input"), as deep as the body
# sent (jansson takes 2048 levels); Python's parser recurses per level.
sys.setrecursionlimit(20000)


class Dead(Exception):
    pass


def alive():
    try:
        os.kill(PID, 0)
    except OSError:
        return False
    # A zombie is not alive: its pid still answers kill 0.
    try:
        with open("/proc/%d/stat" % PID) as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


problems = []  # (what was sent, what was wrong)


def send(method, path, body=None, token=None, headers=None, timeout=90):
    """One request; (status, headers, body bytes).  A malformed answer, or
    none, is a problem noted (and Dead raised when the process is gone)."""
    c = http.client.HTTPConnection(HOST, PORT, timeout=timeout)
    h = {}
    if body is not None:
        h["Content-Type"] = "application/json"
    if token is not None:
        h["X-Sandbox-Token"] = token
    h.update(headers or {})
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    try:
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in h.items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        status, rh = r.status, r
    except (OSError, http.client.HTTPException) as e:
        c.close()
        if not alive():
            raise Dead("%s %s: %r" % (method, path[:200], e))
        problems.append(("%s %s" % (method, path[:200]), "no well-formed answer: %r" % e))
        return None, None, b""
    c.close()
    if not 100 <= status < 600:
        problems.append(("%s %s" % (method, path[:200]), "status %d" % status))
    ctype = rh.getheader("Content-Type") or ""
    if "json" in ctype and status not in (204, 304):  # no content at all
        try:
            json.loads(data)
        except ValueError as e:
            problems.append(("%s %s" % (method, path[:200]), "JSON promised, not given: %r %r" % (e, data[:200])))
    elif status not in (204, 304) and not (path.startswith("/metrics") and status == 200):
        problems.append(("%s %s" % (method, path[:200]), "status %d without JSON (%r)" % (status, ctype)))
    return status, rh, data


def call(method, path, body=None, token=None, **kw):
    """send, with body a JSON document (or raw text); the parsed answer."""
    if body is not None and not isinstance(body, (str, bytes)):
        body = json.dumps(body)
    st, rh, data = send(method, path, body, token, **kw)
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    return st, doc


# ---- the session and its workspace ----

FZ = P + "fz"
st, doc = call("POST", "/sessions", {"session_id": FZ}, TOKEN)
if not ok(st == 200, "a session to fill", doc):
    plan()
    sys.exit(1)
TOK = doc["token"]
st, info = call("GET", "/sessions/" + FZ, token=TOKEN)
KEY = key_of(ROOT, FZ)
ok(isinstance(info, dict) and "key" not in info, "the wire never names the session's key", info)
wsrel = None
try:
    with open(os.path.join(ROOT, KEY, "session.json")) as f:
        wsrel = json.load(f).get("workspace")
except (OSError, ValueError, TypeError):
    pass
WS = os.path.join(ROOT, wsrel) if wsrel else os.path.join(ROOT, KEY or "-", "workspace")
if not ok(os.path.isdir(WS), "the session's workspace is found on the host (%s)" % WS):
    plan()
    sys.exit(1)
WUID = os.stat(WS).st_uid
WSB = os.fsencode(WS)


def put(rel, data):
    """rel (bytes, relative) made with data, the sandbox's."""
    full = os.path.join(WSB, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)
    os.chown(full, WUID, WUID)


def rand_name(maxlen=60):
    """A file name of random bytes: never NUL or '/', never . or .."""
    while True:
        k = rnd.randrange(4)
        if k == 0:   # any byte
            b = bytes(rnd.choice([i for i in range(1, 256) if i != 0x2F]) for _ in range(rnd.randrange(1, maxlen)))
        elif k == 1:  # control characters and blanks
            b = bytes(rnd.choice(b"\t\n\r\x01\x1b\x7f \x85") for _ in range(rnd.randrange(1, 8))) + b"x"
        elif k == 2:  # latin-1 words
            b = rnd.choice([b"caf\xe9", b"cr\xe8me", b"\xff\xfe", b"na\xefve", b"\x80\x81"]) + b".txt"
        else:        # the longest a name may be
            b = bytes(rnd.choice(b"abc\xc3\xa9\xff") for _ in range(255))
        b = b[:maxlen] if maxlen < 60 else b
        if b not in (b".", b"..") and b"/" not in b and b"\0" not in b and len(b) <= 255:
            return b


def rand_bytes(maxlen=3000):
    k = rnd.randrange(6)
    size = rnd.randrange(maxlen)
    if k == 0:
        return bytes(rnd.randrange(256) for _ in range(size))
    if k == 1:
        return "".join(chr(rnd.randrange(0x20, 0x3000)) for _ in range(size // 3)).encode("utf-8", "replace")
    if k == 2:
        return bytes(rnd.choice(b"caf\xe9 cr\xe8me\n\0\x80\x9f") for _ in range(size))
    if k == 3:
        return "\ufeff".encode("utf-16-le")[:0] + "x\u00e9\n\U0001F600".encode(rnd.choice(["utf-16", "utf-16-be", "utf-16-le"])) * (size // 16 + 1)
    if k == 4:
        return b"\xff\xfe" + bytes(rnd.randrange(256) for _ in range(size | 1))  # odd UTF-16
    return b"line\n" * (size // 5)


names = []  # relative paths (bytes) made
for i in range(120):
    depth = rnd.randrange(4) if i % 10 else rnd.randrange(20, 40)
    rel = b"/".join([rand_name(20) for _ in range(depth)] + [rand_name()])
    try:
        put(rel, rand_bytes())
        names.append(rel)
    except OSError as e:  # a path too long for the host: not a case
        if e.errno not in (17, 20, 21, 36):  # taken, or too long
            diag("cannot make %r: %s" % (rel[:80], e))
for i, target in enumerate([b"/etc/passwd", b"/", b"../../..", b"../../../../etc/shadow", b"nowhere", b"\xff"]):
    rel = b"link-%d-" % i + rand_name(40)
    os.symlink(target, os.path.join(WSB, rel))
    os.lchown(os.path.join(WSB, rel), WUID, WUID)
    names.append(rel)
for i in range(3):
    rel = b"fifo-%d-" % i + rand_name(40)
    os.mkfifo(os.path.join(WSB, rel))
    os.chown(os.path.join(WSB, rel), WUID, WUID)
    names.append(rel)
os.makedirs(os.path.join(WSB, b"empty-\xff-dir"), exist_ok=True)
os.chown(os.path.join(WSB, b"empty-\xff-dir"), WUID, WUID)
names.append(b"empty-\xff-dir")
diag("the workspace holds %d random names" % len(names))
files = [x for x in names if not x.startswith((b"fifo-", b"link-"))]

# ---- the explicit cases ----

LATIN = b"caf\xe9 cr\xe8me"
put(b"latin1.txt", LATIN)
put(b"nul.txt", b"a\0b\nc\0")
put(b"utf16.txt", "h\u00e9\nx\U0001F600\n".encode("utf-16"))
put(b"utf16be.txt", b"\xfe\xff" + "be \u00e9".encode("utf-16-be"))
put(b"bom8.txt", b"\xef\xbb\xbfbom \xc3\xa9")
put(b"cp1252.txt", b"\x80 \x93q\x94")
put(b"lat\xe9n.txt", b"grep me caf\xe9\n")

st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "latin1.txt"}, TOK)
ok(st == 200 and doc == {"content": "caf\u00e9 cr\u00e8me"},
   "a latin-1 file reads back as its text on the session's route", (st, doc))
st, doc = call("POST", "/workspaces/%s/read" % FZ, {"path": "latin1.txt"}, TOKEN)
ok(st == 200 and doc == {"content": "caf\u00e9 cr\u00e8me"},
   "... and on the archive route", (st, doc))
ok(alive(), "... and the service lives")
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "/workspace/latin1.txt", "offset": 0, "limit": 1}, TOK)
ok(st == 200 and doc == {"content": "caf\u00e9 cr\u00e8me"}, "... a slice of it too", (st, doc))
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "nul.txt"}, TOK)
ok(st == 200 and doc == {"content": "a\u0000b\nc\u0000"}, "NUL bytes read as U+0000", (st, doc))
st, doc = call("POST", "/workspaces/%s/read" % FZ, {"path": "nul.txt"}, TOKEN)
ok(st == 200 and doc == {"content": "a\u0000b\nc\u0000"}, "... on the archive route too", (st, doc))
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "utf16.txt"}, TOK)
ok(st == 200 and doc == {"content": "h\u00e9\nx\U0001F600"}, "a UTF-16 file with its byte order mark reads as its text", (st, doc))
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "utf16.txt", "offset": 1, "limit": 1}, TOK)
ok(st == 200 and doc == {"content": "x\U0001F600"}, "... its lines are the text's lines", (st, doc))
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "utf16be.txt"}, TOK)
ok(st == 200 and doc == {"content": "be \u00e9"}, "... UTF-16BE too", (st, doc))
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "bom8.txt"}, TOK)
ok(st == 200 and doc == {"content": "bom \u00e9"}, "a UTF-8 byte order mark is not part of the text", (st, doc))
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "cp1252.txt"}, TOK)
ok(st == 200 and doc == {"content": "\u20ac \u201cq\u201d"}, "bytes 0x80-0x9f read as windows-1252", (st, doc))
st, doc = call("POST", "/sessions/%s/read_bytes" % FZ, {"path": "nul.txt"}, TOK)
ok(st == 200 and base64.b64decode(doc["content_b64"]) == b"a\0b\nc\0", "read_bytes gives the bytes as they are", doc)

# edit keeps a latin-1 file latin-1 (docs/serve.md "Text")
st, doc = call("POST", "/sessions/%s/edit" % FZ, {"path": "latin1.txt", "old_string": "cr\u00e8me", "new_string": "br\u00fbl\u00e9e"}, TOK)
ok(st == 200 and doc["error"] is None and doc["occurrences"] == 1, "an edit of a latin-1 file by its text", (st, doc))
with open(os.path.join(WSB, b"latin1.txt"), "rb") as f:
    got = f.read()
ok(got == b"caf\xe9 br\xfbl\xe9e", "... is written in its own encoding, nothing else changed", got)
st, doc = call("POST", "/sessions/%s/edit" % FZ, {"path": "latin1.txt", "old_string": "caf\u00e9", "new_string": "\u2192"}, TOK)
ok(st == 200 and doc["error"] and doc["occurrences"] is None, "a new text latin-1 cannot hold is refused in the body", (st, doc))
with open(os.path.join(WSB, b"latin1.txt"), "rb") as f:
    ok(f.read() == got, "... and the file is as it was")
st, doc = call("POST", "/sessions/%s/edit" % FZ, {"path": "utf16.txt", "old_string": "h\u00e9", "new_string": "\U0001F600"}, TOK)
with open(os.path.join(WSB, b"utf16.txt"), "rb") as f:
    got = f.read()
ok(st == 200 and doc["occurrences"] == 1 and got == "\U0001F600\nx\U0001F600\n".encode("utf-16"),
   "an edit of a UTF-16 file stays UTF-16 with its byte order mark", (st, doc, got))

# rows of names that are not UTF-8, lines that are not UTF-8
st, doc = call("POST", "/sessions/%s/ls" % FZ, {"path": "."}, TOK)
ok(st == 200 and isinstance(doc, list) and all(isinstance(e["name"], str) and isinstance(e["path"], str) for e in doc)
   and any(e["name"] == "lat\ufffdn.txt" for e in doc),
   "ls: a name that is not UTF-8 is a string, each invalid byte U+FFFD", (st, str(doc)[:500]))
st, doc = call("POST", "/workspaces/%s/ls" % FZ, {"path": "."}, TOKEN)
ok(st == 200 and isinstance(doc, list) and any(e["name"] == "lat\ufffdn.txt" for e in doc),
   "... on the archive route too", (st, str(doc)[:500]))
st, doc = call("POST", "/sessions/%s/glob" % FZ, {"pattern": "lat*"}, TOK)
ok(st == 200 and any(e["path"] == "./lat\ufffdn.txt" for e in doc), "glob: the same", (st, str(doc)[:500]))
st, doc = call("POST", "/sessions/%s/grep" % FZ, {"pattern": "grep me"}, TOK)
rows = doc.get("matches") if isinstance(doc, dict) else None
ok(st == 200 and rows and rows[0]["line"] == "grep me caf\ufffd" and rows[0]["path"].endswith("lat\ufffdn.txt"),
   "grep: a line and a path that are not UTF-8 show U+FFFD, not nothing", (st, doc))
st, doc = call("POST", "/sessions", {}, TOKEN)
sid = doc.get("session", {}).get("session_id", "") if isinstance(doc, dict) else ""
ok(st == 200 and len(sid) == 18 and sid.startswith("s-") and all(c in "0123456789abcdef" for c in sid[2:]),
   "an open without a session_id names one, s- and 16 hex digits (once a stack overflow)", (st, doc))
if sid:
    call("DELETE", "/sessions/%s?purge=true" % sid, token=TOKEN)
fifo = next(x for x in names if x.startswith(b"fifo-"))
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": fifo.decode("latin-1")}, TOK, timeout=30)
ok(st == 200, "a read of a fifo is answered", (st, doc))
# Rows of the audit whose targets are not UTF-8 (the command line names
# such paths and patterns), then the session's events read through the
# route that shows them.
if E.get("SERVE_SBXCAT") and E.get("SERVE_CAT"):
    import subprocess
    for args in (["read", b"lat\xe9n.txt"], ["grep", b"caf\xe9"], ["ls", b"empty-\xff-dir"],
                 ["edit", b"lat\xe9n.txt", "--old", b"grep", "--new", b"\xff"],
                 ["glob", b"\x01\x1b[31m*"]):
        r = subprocess.run([E["SERVE_SBXCAT"], "-C", E["SERVE_CAT"], "fs", KEY] + args,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        if r.returncode not in (0, 1):
            diag("sbxcat fs %r: status %d %r" % (args, r.returncode, r.stderr[:200]))
    st, doc = call("GET", "/sessions/%s/events" % FZ, token=TOK)
    ok(st in (200, 503) and isinstance(doc, dict), "events whose targets are not UTF-8 are answered (%s)" % st,
       str(doc)[:300])
ok(alive(), "the service lives after the explicit cases")

# Requests no client library sends: the answer, if any, is well-formed or
# the connection closed (or held: a request the server waits on is the
# connection limits' to end, not this test's); the process lives.
RAW = [b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\n\r\n", b"\x00\xff\xfe\r\n\r\n",
       b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
       b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 200000 + b"\r\n\r\n",
       b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
       b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
       b"POST /sessions/%s/read HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n" % FZ.encode(),
       b"POST /sessions/%s/read HTTP/1.1\r\nHost: x\r\nX-Sandbox-Token: %s\r\nContent-Length: 5\r\n\r\n{\"pa" % (FZ.encode(), TOK.encode()),
       b"GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /healthz\r\n\r\n",
       b"BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
       b"GET /%00%ff/../healthz?%zz HTTP/1.1\r\nHost: x\r\nX-Sandbox-Token: \xff\xfe\x80\r\n\r\n"]
bad_raw = []
for raw in RAW:
    t0 = time.time()
    s = socket.create_connection((HOST, PORT), timeout=5)
    try:
        s.sendall(raw)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            k = s.recv(65536)
            if not k:
                break
            got += k
    except OSError:
        got = b""
    s.close()
    if not got:
        diag("raw %r: no answer (closed or held) in %.1f s" % (raw[:40], time.time() - t0))
    if got and not (got.startswith(b"HTTP/1.") and 100 <= int(got[9:12] or b"0") < 600):
        bad_raw.append((raw[:60], got[:120]))
ok(not bad_raw and alive(), "%d malformed requests: each answered well-formed or closed; the service lives" % len(RAW),
   bad_raw)

# ---- the fuzzer ----

ROUTES = [
    ("GET", "/", None), ("GET", "/healthz", None), ("GET", "/metrics", "svc"),
    ("GET", "/policy", "svc"), ("PUT", "/policy", "svc"),
    ("POST", "/sessions", "svc"), ("GET", "/sessions", "svc"),
    ("GET", "/sessions/{id}", "sess"), ("DELETE", "/sessions/{id}", "spare"),
    ("GET", "/sessions/{id}/events", "sess"),
    ("POST", "/sessions/{id}/exec", "sess"), ("POST", "/sessions/{id}/run", "sess"),
    ("POST", "/sessions/{id}/runs/{r}/stop", "sess"),
] + [("POST", "/sessions/{id}/" + o, "sess") for o in
     ["read", "read_bytes", "write", "edit", "exists", "ls", "glob", "grep"]] + [
    ("POST", "/workspaces/{id}/" + o, "svc") for o in ["ls", "read", "read_bytes"]]
FIELDS = ["path", "command", "timeout", "timeout_seconds", "offset", "limit", "content_b64",
          "old_string", "new_string", "replace_all", "pattern", "glob", "ignore_hidden", "argv",
          "env", "cwd", "run_id", "session_id", "runtime", "tenant", "reuse", "attach", "labels",
          "durability", "disk_quota", "disk_inodes", "max_sessions", "mem_limit", "runtimes",
          "default_runtime", "execute_timeout", "max_read_bytes", "cpus"]
SPARE = [P + "sp1", P + "sp2"]
HUGE = [2**63, 2**63 - 1, -2**63, -2**63 - 1, 2**64, 10**30, -1, 0, 1e308, -1e308, 1.5, float("nan")]


def ustr():
    """A string of random code points, NUL and lone surrogates included
    (written as \\u escapes by rawjson)."""
    k = rnd.randrange(4)
    if k == 0:
        return "".join(chr(rnd.randrange(0, 0x110000)) for _ in range(rnd.randrange(30)))
    if k == 1:
        return "".join(chr(rnd.randrange(0, 0x100)) for _ in range(rnd.randrange(30)))
    if k == 2:
        return rnd.choice(names).decode(rnd.choice(["latin-1", "utf-8"]), "surrogateescape" if rnd.random() < 0.5 else "replace")
    return rnd.choice(["latin1.txt", "nul.txt", "utf16.txt", ".", "/", "/workspace", "..", "../..",
                       "/etc/passwd", "a" * 5000, "*", "**/*", "[", "\\", "%s", "%n" * 10])


def junk(depth=0):
    k = rnd.randrange(10 if depth < 3 else 6)
    if k == 0:
        return None
    if k == 1:
        return rnd.random() < 0.5
    if k == 2:
        return rnd.choice(HUGE)
    if k in (3, 4, 5):
        return ustr()
    if k == 6:
        return [junk(depth + 1) for _ in range(rnd.randrange(5))]
    if k == 7:
        return {ustr(): junk(depth + 1) for _ in range(rnd.randrange(4))}
    return {f: junk(depth + 1) for f in rnd.sample(FIELDS, rnd.randrange(1, 6))}


def rawjson(v):
    """JSON text of v with every non-ASCII code point, NUL and lone
    surrogate as a \\u escape (what json.dumps writes), nan as NaN."""
    return json.dumps(v, allow_nan=True)


def field_value(f):
    if rnd.random() < 0.15:
        return junk()
    if f in ("path", "cwd"):
        if rnd.random() < 0.6:
            return rnd.choice(names).decode("utf-8", "replace")
        return ustr()
    if f == "content_b64":
        return rnd.choice([base64.b64encode(rand_bytes(200)).decode(), "!!!", "", "=" * 7, ustr()])
    if f in ("offset", "limit", "timeout", "timeout_seconds", "disk_inodes", "max_sessions",
             "execute_timeout", "max_read_bytes"):
        return rnd.choice(HUGE + [0, 1, 2, 5])
    if f == "command":
        return rnd.choice(["cat latin1.txt", "printf '\\377\\376\\000x'", "ls -la", "head -c 300 /dev/urandom",
                           "echo caf\u00e9", "true", "exit 3", "cat '%s'" % rnd.choice(files).decode("latin-1")[:100],
                           ustr()])
    if f == "argv":
        return [rnd.choice(["cat", "ls", "printf", "\xff", ustr()]) for _ in range(rnd.randrange(4))]
    if f == "env":
        return {ustr(): rnd.choice([ustr(), 1, None]) for _ in range(rnd.randrange(3))}
    if f in ("replace_all", "ignore_hidden", "reuse", "attach"):
        return rnd.choice([True, False, "yes", 1])
    if f == "labels":
        return {ustr(): ustr() for _ in range(rnd.randrange(3))}
    return ustr()


def enc_seg(s):
    """A URL path segment: random bytes percent-encoded, or as they are."""
    if rnd.random() < 0.5:
        return urllib.parse.quote(s.encode("utf-8", "surrogatepass"), safe="")
    return "".join(rnd.choice(["%%%02X" % rnd.randrange(256), rnd.choice("aZ09._-~:@!$&'()*+,;="), "%", "%0", "%zz"])
                   for _ in range(rnd.randrange(1, 40)))


def rand_headers():
    h = {}
    for _ in range(rnd.randrange(3)):
        k = rnd.choice(["X-Sandbox-Token", "Content-Type", "Accept", "X-" + "".join(rnd.choice("abcXYZ-") for _ in range(8)),
                        "Authorization", "Expect", "Connection"])
        v = bytes(rnd.choice([b for b in range(0x20, 0x100) if b != 0x7F]) for _ in range(rnd.randrange(60)))
        h[k] = v
    return h


statuses = {}
errors5 = []
dead = None
try:
    for i in range(N):
        method, tmpl, auth = rnd.choice(ROUTES)
        sid = FZ
        if auth == "spare" or (tmpl.startswith("/sessions/{id}") and rnd.random() < 0.1):
            sid = rnd.choice(SPARE)
        if rnd.random() < 0.08:
            sid = enc_seg("".join(chr(rnd.randrange(1, 0x100)) for _ in range(rnd.randrange(1, 70))))
        path = tmpl.replace("{id}", sid).replace("{r}", enc_seg(ustr()) or "r")
        if rnd.random() < 0.1:
            path += "/" + enc_seg(ustr())
        if rnd.random() < 0.3:
            q = [(rnd.choice(["usage", "purge", "after", "x", ustr()]), rnd.choice(["true", "0", "-1", "99999999999999999999999", "%ff", ustr()]))
                 for _ in range(rnd.randrange(1, 4))]
            path += "?" + "&".join(enc_seg(a) + "=" + enc_seg(b) for a, b in q)
        token = {None: None, "svc": TOKEN, "sess": TOK, "spare": TOKEN}[auth]
        r = rnd.random()
        if r < 0.1:
            token = rnd.choice([None, "x", "\xff\xfe".encode("latin-1"), TOKEN, TOK])
        body = None
        if method in ("POST", "PUT"):
            kind = rnd.randrange(10)
            if kind < 6:
                fields = rnd.sample(FIELDS, rnd.randrange(1, 7))
                if "path" not in fields and rnd.random() < 0.7:
                    fields.append("path")
                doc = {f: field_value(f) for f in fields}
                if tmpl == "/sessions" and rnd.random() < 0.8:
                    doc["session_id"] = rnd.choice(SPARE) if rnd.random() < 0.3 else ustr()
                body = rawjson(doc)
            elif kind == 6:
                body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(300)))
            elif kind == 7:
                d = rnd.randrange(1, 5000)
                body = "[" * d + "]" * d if rnd.random() < 0.5 else '{"a":' * d + "1" + "}" * d
            elif kind == 8:
                body = rawjson(junk())
            else:
                body = '{"path": "' + "".join(rnd.choice(["\\u0000", "\\ud800", "\\udfff", "\\u00e9", "\\uffff", "\\x", "\\", '"', "a"])
                                              for _ in range(rnd.randrange(20))) + '"}'
        headers = rand_headers() if rnd.random() < 0.2 else None
        st, rh, data = send(method, path, body, token, headers=headers, timeout=120)
        statuses[st] = statuses.get(st, 0) + 1
        if st is not None and st >= 500 and st not in (502, 503, 504):
            errors5.append((method, path[:120], st, data[:200]))
        if i % 50 == 49 and not alive():
            raise Dead("after request %d" % i)
except Dead as e:
    dead = str(e)

ok(dead is None, "%d random requests: the service never ended (seed %d)" % (N, SEED), dead)
diag("statuses: %s" % sorted(statuses.items(), key=lambda kv: str(kv[0])))
ok(not problems, "every answer is well-formed HTTP, status < 600, JSON where JSON is promised",
   "\n".join("%s: %s" % p for p in problems[:20]))
ok(not errors5, "no answer is a 500 (an error the service did not expect)",
   "\n".join(repr(e) for e in errors5[:10]))

# ---- the end ----
ok(alive(), "the service's process (pid %d) is alive" % PID)
st, doc = call("GET", "/healthz") if alive() else (None, None)
ok(st == 200 and doc.get("status") == "ok", "/healthz answers", doc)
st, doc = call("POST", "/sessions/%s/read" % FZ, {"path": "nul.txt"}, TOK) if alive() else (None, None)
ok(st in (200, 401), "the session's routes still answer (%s)" % st, doc)
call("PUT", "/policy", {"max_sessions": 100, "max_sessions_per_tenant": 100, "execute_timeout": 60,
                        "max_read_bytes": 65536}, TOKEN)
for s in [FZ] + SPARE:
    call("DELETE", "/sessions/%s?purge=true" % s, token=TOKEN)
plan()

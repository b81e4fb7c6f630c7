#!/usr/bin/env python3
"""conformance.py - the platform's own client, call by call, against a
running `sbxcat serve` (tests/t-conformance.sh starts it on the real
engine).  Issue 28, "Tests": every call RemoteSandbox and WorkspaceArchive
(pydantic-ai-backend's remote/client.py, generation A, 7e15c75) make, in
the order a session of the platform makes them, with the exact request
bodies they send (nulls included) and the headers a caller's own
httpx.Client adds; every answer is checked against the pydantic v2 model
the client parses it with, as pydantic's lax mode would take it, so a shape
the real client refuses fails here naming the model and the field.  Then
sandboxd-wire.md's section 10 cases and section 11's rules.  Prints TAP
lines (no plan: the calling script goes on counting) and writes how many it
printed to CONF_COUNT.

No pydantic here (none is installable): the models are restated below from
wire.py as field tables, read, not copied.

Environment: CONF_HOST, CONF_PORT, CONF_TOKEN (the service token), CONF_RT
(the default runtime), CONF_RT2 (another), CONF_RUNTIMES (every alias,
sorted, comma separated), CONF_MAX_READ (SANDBOXD_MAX_READ_BYTES),
CONF_MAX_WRITE (SANDBOXD_MAX_WRITE_BYTES, the documented default when
unset), CONF_EXEC_TIMEOUT, CONF_TENANT_MAX (SANDBOXD_MAX_SESSIONS_PER_TENANT),
CONF_ROOT (the host's workspace root: it must never reach the sandbox),
CONF_PREFIX (unique to the run), CONF_COUNT (a file for the count),
CONF_SERVER_PID (the service's pid: no answer may name it), CONF_RT_BROKEN
(a runtime whose sandbox cannot start; its case is left out when unset),
CONF_PHASE ("walk", the default, or "reaped": case 20 against a service
whose reaper has run; CONF_SID and CONF_STOKEN then name the reaped
session and its token).
"""
import base64
import binascii
import hashlib
import http.client
import json
import os
import re
import sys
import time

import taplib
from taplib import ok, diag, plan

E = os.environ
HOST, PORT, TOKEN = E["CONF_HOST"], int(E["CONF_PORT"]), E["CONF_TOKEN"]
P = E.get("CONF_PREFIX", "xc-c%d-" % os.getpid())


# --- TAP -------------------------------------------------------------------


def finish():
    if "CONF_COUNT" in E:
        with open(E["CONF_COUNT"], "w") as f:
            f.write("%d\n" % taplib.n)
    sys.exit(0)


# --- The client's models, as pydantic v2 (lax mode) takes them --------------
#
# A type is one of the names below, ("opt", T) for `T | None`, ("lit",
# values...) for a Literal, ("list", T), or a model: a dict of field ->
# (type, required).  Extra fields are ignored (the models' default).

def _int(v):
    # int accepts an int, a bool, a float with no fraction, a string of
    # an integer; never null.
    if isinstance(v, (bool, int)):
        return True
    if isinstance(v, float):
        return v == v and v not in (float("inf"), float("-inf")) and v.is_integer()
    if isinstance(v, str):
        try:
            int(v.strip())
            return True
        except ValueError:
            return False
    return False


def _float(v):
    if isinstance(v, (bool, int, float)):
        return True
    if isinstance(v, str):
        try:
            float(v.strip())
            return True
        except ValueError:
            return False
    return False


_BOOL_STR = {"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"}


def _bool(v):
    if isinstance(v, bool):
        return True
    if isinstance(v, (int, float)):
        return v in (0, 1)
    return isinstance(v, str) and v.strip().lower() in _BOOL_STR


SCALARS = {"str": lambda v: isinstance(v, str), "int": _int, "float": _float, "bool": _bool}

# wire.py at 7e15c75 (generation A): every model client.py parses, and those
# the deployment reads (GET /, /healthz, /sessions, /events, /policy).
SessionUsage = {"memory_bytes": (("opt", "int"), False), "memory_limit_bytes": (("opt", "int"), False),
                "cpu_percent": (("opt", "float"), False), "pids": (("opt", "int"), False)}
SessionInfo = {"session_id": ("str", True), "runtime": ("str", True), "tenant": (("opt", "str"), False),
               "alive": ("bool", True), "state": (("lit", "running", "hibernated"), False),
               "created_at": ("float", True), "last_activity": ("float", True),
               "idle_seconds": ("float", True), "usage": (("opt", SessionUsage), False)}
SessionCreated = {"session": (SessionInfo, True), "token": ("str", True)}
ServiceHealth = {"status": ("str", False), "sessions": ("int", False), "limit": (("opt", "int"), False),
                 "open_sessions": ("int", False), "open_limit": (("opt", "int"), False),
                 "runtimes": (("list", "str"), False)}
ServiceIndex = {"service": ("str", False), "health": (ServiceHealth, True), "docs_url": ("str", False),
                "openapi_url": ("str", False), "ui_url": (("opt", "str"), False),
                "endpoints": (("list", "str"), False)}
RuntimePolicy = {"alias": ("str", True), "image": ("str", True), "description": ("str", False),
                 "builds": ("bool", False), "mem_limit": (("opt", "str"), False),
                 "memswap_limit": (("opt", "str"), False), "cpus": (("opt", "float"), False),
                 "cpu_shares": (("opt", "int"), False), "pids_limit": (("opt", "int"), False),
                 "network_mode": (("opt", "str"), False), "oci_runtime": (("opt", "str"), False)}
ServicePolicy = {"runtimes": (("list", RuntimePolicy), False), "default_runtime": ("str", False),
                 "max_sessions": (("opt", "int"), False), "max_open_sessions": (("opt", "int"), False),
                 "max_sessions_per_tenant": (("opt", "int"), False),
                 "evict_idle_after": (("opt", "int"), False), "mem_limit": (("opt", "str"), False),
                 "memswap_limit": (("opt", "str"), False), "cpus": (("opt", "float"), False),
                 "cpu_shares": (("opt", "int"), False), "pids_limit": (("opt", "int"), False),
                 "network_mode": (("opt", "str"), False), "oci_runtime": (("opt", "str"), False),
                 "work_dir": ("str", False), "idle_timeout": ("int", False),
                 "execute_timeout": ("int", False), "max_read_bytes": ("int", False),
                 "persist_containers": ("bool", False), "sandbox_uid": (("opt", "int"), False),
                 "workspace_ttl": (("opt", "int"), False), "container_ttl": (("opt", "int"), False),
                 "tmpfs_size": (("opt", "str"), False), "prewarm": ("bool", False),
                 "buildkit": ("bool", False)}
SessionList = {"sessions": (("list", SessionInfo), False), "limit": (("opt", "int"), False),
               "open_limit": (("opt", "int"), False), "tenant_limit": (("opt", "int"), False)}
SessionEvent = {"seq": ("int", True), "at": ("float", True), "op": ("str", True), "target": ("str", True),
                "ok": ("bool", True), "detail": ("str", False), "duration_ms": ("float", False)}
SessionEvents = {"events": (("list", SessionEvent), False), "latest_seq": ("int", False)}
ExecResponse = {"output": ("str", True), "exit_code": (("opt", "int"), False), "truncated": ("bool", False)}
ReadResponse = {"content": ("str", True)}
ReadBytesResponse = {"content_b64": ("str", True)}
WriteResponse = {"path": (("opt", "str"), False), "error": (("opt", "str"), False)}
EditResponse = {"path": (("opt", "str"), False), "error": (("opt", "str"), False),
                "occurrences": (("opt", "int"), False)}
ExistsResponse = {"exists": ("bool", True)}
FileEntry = {"name": ("str", True), "path": ("str", True), "is_dir": ("bool", True),
             "size": (("opt", "int"), False)}
GrepMatchEntry = {"path": ("str", True), "line_number": ("int", True), "line": ("str", True)}
GrepResponse = {"matches": (("list", GrepMatchEntry), False), "error": (("opt", "str"), False)}
MODEL_NAMES = {id(v): k for k, v in list(globals().items()) if isinstance(v, dict) and k[0].isupper()}


def refusal(t, v, where):
    """Why the model would refuse v as type t at `where`, or None."""
    if isinstance(t, dict):
        name = MODEL_NAMES.get(id(t), "model")
        if not isinstance(v, dict):
            return "%s: %s is not an object (%s)" % (where or name, name, type(v).__name__)
        for f, (ft, required) in t.items():
            at = "%s.%s" % (where or name, f)
            if f not in v:
                if required:
                    return "%s: required field missing" % at
                continue
            why = refusal(ft, v[f], at)
            if why:
                return why
        return None
    if isinstance(t, tuple) and t[0] == "opt":
        return None if v is None else refusal(t[1], v, where)
    if isinstance(t, tuple) and t[0] == "lit":
        return None if isinstance(v, str) and v in t[1:] else "%s: %r is not one of %s" % (where, v, t[1:])
    if isinstance(t, tuple) and t[0] == "list":
        if not isinstance(v, list):
            return "%s: %r is not a list" % (where, v)
        for i, x in enumerate(v):
            why = refusal(t[1], x, "%s[%d]" % (where, i))
            if why:
                return why
        return None
    if v is None:
        return "%s: null where the model wants %s" % (where, t)
    return None if SCALARS[t](v) else "%s: %r is not a %s" % (where, v, t)


def model_ok(model, doc, name, st=200):
    """The answer parses as the client's model (and came with a status the
    client reads it on: below 400)."""
    mname = MODEL_NAMES[id(model)]
    if st >= 400:
        return ok(False, "%s: parses as %s" % (name, mname), "status %d: %r" % (st, doc))
    why = refusal(model, doc, mname)
    return ok(why is None, "%s: parses as %s" % (name, mname), why)


def rows_ok(doc, name, st=200):
    """A listing: the client iterates the body and validates every row as
    FileEntry (a dict body would iterate its keys and fail)."""
    if st >= 400:
        return ok(False, "%s: parses as [FileEntry]" % name, "status %d: %r" % (st, doc))
    why = refusal(("list", FileEntry), doc, "[FileEntry]")
    return ok(why is None, "%s: parses as [FileEntry]" % name, why)


# The checker itself, on shapes whose fate under pydantic 2 is known: a
# checker that passes everything would pass every walk.
_INFO = {"session_id": "a", "runtime": "r", "alive": True, "created_at": 1, "last_activity": 1.5,
         "idle_seconds": 0}
_REFUSED = [(SessionInfo, dict(_INFO, runtime=None)), (SessionInfo, dict(_INFO, state="paused")),
            (SessionInfo, {k: v for k, v in _INFO.items() if k != "alive"}),
            (SessionInfo, dict(_INFO, created_at="soon")), (SessionInfo, dict(_INFO, alive="maybe")),
            (SessionInfo, dict(_INFO, usage={"pids": 1.5})),
            (ServiceIndex, {"health": {}, "docs_url": None}), (ServiceIndex, {}),
            (ExistsResponse, {}), (ReadResponse, {"content": None}), (ExecResponse, {"output": 3}),
            (GrepResponse, {"matches": [{"path": "a", "line": "x"}]}), (("list", FileEntry), {"name": "a"}),
            (("list", FileEntry), [{"name": "a", "path": "a"}]), (SessionCreated, {"session": _INFO}),
            (ServicePolicy, {"runtimes": [{"alias": "a"}]}), (ServicePolicy, {"execute_timeout": None})]
_TAKEN = [(SessionInfo, dict(_INFO, extra={"x": 1}, tenant=None, state="hibernated", usage=None)),
          (SessionInfo, dict(_INFO, created_at="1.5", alive=1, usage={"pids": 2.0, "cpu_percent": 3})),
          (ServiceIndex, {"health": {}}), (ExecResponse, {"output": "", "exit_code": "3", "truncated": "no"}),
          (("list", FileEntry), []), (WriteResponse, {}), (GrepResponse, {"error": "Error: x"})]
_wrong = [(MODEL_NAMES.get(id(t), t), v) for t, v in _REFUSED if refusal(t, v, "") is None]
_wrong += [(MODEL_NAMES.get(id(t), t), v, refusal(t, v, "")) for t, v in _TAKEN if refusal(t, v, "")]
ok(not _wrong, "the model checker refuses what pydantic 2 refuses and takes what it takes", _wrong)


# --- HTTP, as the client's httpx.Client sends it ----------------------------
#
# One kept-alive connection (httpx pools them), JSON bodies as httpx writes
# them (compact, UTF-8), and the headers a caller's own client adds to every
# request (section 11: who the agent and the run are, as docs/serve.md's
# recipe sends them).

CALLER_HEADERS = {"User-Agent": "python-httpx/0.27.0", "Accept": "*/*",
                  "Accept-Encoding": "gzip, deflate", "X-Sandbox-Agent": "agent-7",
                  "X-Sandbox-Run": "run-%s" % os.urandom(4).hex()}
_conn = None  # the kept-alive connection
# The host's workspace root: no answer may name it (issue 28, item 1).
ROOT = E.get("CONF_ROOT", "")
LEAKS = []


def req(method, path, body=None, token=None, raw=None, timeout=120):
    global _conn
    h = dict(CALLER_HEADERS)
    if token is not None:
        h["X-Sandbox-Token"] = token
    data = raw
    if body is not None:
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    if data is not None:
        h["Content-Type"] = "application/json"
    for attempt in (0, 1):
        reused = _conn is not None
        if _conn is None:
            _conn = http.client.HTTPConnection(HOST, PORT, timeout=timeout)
        _conn.timeout = timeout
        if _conn.sock is not None:
            _conn.sock.settimeout(timeout)
        try:
            _conn.request(method, path, body=data, headers=h)
            r = _conn.getresponse()
            text = r.read()
        except (http.client.HTTPException, OSError) as e:
            _conn.close()
            _conn = None
            # A kept-alive connection the server closed meanwhile is tried
            # once more on a new one, as httpx does; anything else is the
            # answer (status 0).
            if attempt or not reused:
                why = "%s: %s" % (type(e).__name__, e)
                return 0, {"transport error": why}, why.encode(), None
            continue
        if r.getheader("Connection", "").lower() == "close":
            _conn.close()
            _conn = None
        if r.getheader("Content-Encoding", "") == "gzip":
            import gzip
            text = gzip.decompress(text)
        try:
            doc = json.loads(text) if text else None
        except ValueError:
            doc = None
        if ROOT and ROOT.encode() in text:
            LEAKS.append("%s %s -> %d: %s" % (method, path, r.status, text[:300]))
        return r.status, doc, text, r
    return 0, None, b"", None


def alive():
    st, _, _, _ = req("GET", "/healthz", timeout=10)
    return st == 200


def create_body(sid, runtime=None, tenant=None, reuse=False):
    """CreateSessionRequest.model_dump(mode="json"): every field, nulls kept."""
    return {"session_id": sid, "runtime": runtime, "tenant": tenant, "reuse": reuse}


def open_s(sid, runtime=None, tenant=None, reuse=False, token=TOKEN):
    return req("POST", "/sessions", create_body(sid, runtime, tenant, reuse), token, timeout=60)


def op(sid, tok, name, body, timeout=None):
    return req("POST", "/sessions/%s/%s" % (sid, name), body, tok, timeout=timeout or 120)


def write_raw(sid, tok, path, data, timeout=300):
    """A write of many bytes: the body httpx would send, built without the
    copies json.dumps makes (the test's own memory stays near 3x the file)."""
    body = b'{"path":' + json.dumps(path).encode() + b',"content_b64":"' + base64.b64encode(data) + b'"}'
    return req("POST", "/sessions/%s/write" % sid, token=tok, raw=body, timeout=timeout)


def b64(data):
    return base64.b64encode(data).decode("ascii")


def strict_bytes(doc):
    """RemoteSandbox.read_bytes: the model, then strict base64 (no newline,
    no stray character); anything else is b""."""
    if refusal(ReadBytesResponse, doc, ""):
        return None
    try:
        return base64.b64decode(doc["content_b64"], validate=True)
    except (binascii.Error, ValueError):
        return None


def get(doc, *keys):
    for k in keys:
        if isinstance(doc, dict):
            doc = doc.get(k)
        elif isinstance(doc, list) and isinstance(k, int) and -len(doc) <= k < len(doc):
            doc = doc[k]
        else:
            return None
    return doc


# --- Case 20: a session the reaper took (CONF_PHASE=reaped) -----------------

if E.get("CONF_PHASE") == "reaped":
    sid, stok = E["CONF_SID"], E["CONF_STOKEN"]
    st, doc, _, _ = op(sid, stok, "read", {"path": "kept.txt", "offset": 0, "limit": 2000})
    ok(st >= 400, "20: a reaped session's read is refused (the client says \"Error: could not read\")",
       (st, doc))
    st, doc, _, _ = req("GET", "/sessions/%s" % sid, token=stok)
    ok(st >= 400 or get(doc, "alive") is False, "20: is_alive() of the reaped session is false", (st, doc))
    st, doc, _, _ = open_s(sid, reuse=True)
    model_ok(SessionCreated, doc, "20: a new reuse=True instance opens", st)
    tok = get(doc, "token") or ""
    st, doc, _, _ = op(sid, tok, "read_bytes", {"path": "kept.txt"})
    ok(st == 200 and strict_bytes(doc) == b"kept\n", "20: ... and finds the files", (st, doc))
    req("DELETE", "/sessions/%s?purge=true" % sid, token=tok)
    finish()


# --- The walk ----------------------------------------------------------------

RT, RT2 = E["CONF_RT"], E["CONF_RT2"]
MAX_READ = int(E["CONF_MAX_READ"])
MAX_WRITE = int(E.get("CONF_MAX_WRITE") or 64 * 1024 * 1024)
EXEC_TIMEOUT = int(E["CONF_EXEC_TIMEOUT"])
TENANT_MAX = int(E["CONF_TENANT_MAX"])
SPID = E.get("CONF_SERVER_PID", "")


def container_path(p):
    """A path as the sandbox sees it: under /workspace, or relative to it."""
    return isinstance(p, str) and (p.startswith("/workspace/") or p == "/workspace"
                                  or not p.startswith("/"))

# The probe (section 8): GET / and /healthz, no token.
st, doc, _, _ = req("GET", "/")
model_ok(ServiceIndex, doc, "GET / (the platform's probe)", st)
ok(isinstance(get(doc, "docs_url"), str) and isinstance(get(doc, "openapi_url"), str),
   "GET /: docs_url and openapi_url are strings, never null (section 11)", doc)
ok(get(doc, "service") == "sandboxd" and "/healthz" in (get(doc, "endpoints") or []),
   "GET /: service \"sandboxd\", its endpoints listed", doc)
eps = get(doc, "endpoints") or []
ok(eps == sorted(set(eps)), "GET /: endpoints sorted, each path once (sandboxd lists a set)", eps)
for k in ("docs_url", "openapi_url"):
    if isinstance(get(doc, k), str):
        st2, _, _, _ = req("GET", doc[k])
        diag("GET %s (the index's %s): %d" % (doc[k], k, st2))
st, doc, _, _ = req("GET", "/healthz")
model_ok(ServiceHealth, doc, "1: GET /healthz without a token", st)
ok(get(doc, "status") == "ok" and get(doc, "runtimes") == E["CONF_RUNTIMES"].split(","),
   "1: status ok, runtimes the allowlist, sorted", doc)

# 2: a wrong token: start() raises "HTTP 401".
S = P + "t1"
st, doc, _, _ = open_s(S, token="wrong")
ok(st == 401, "2: an open with a wrong token is HTTP 401", (st, doc))

# 3: RemoteSandbox(url, token=T, session_id=S).start(): the open, nulls
# included, then GET /policy for server_timeout.
st, doc, _, _ = open_s(S)
model_ok(SessionCreated, doc, "3: POST /sessions {session_id, runtime: null, tenant: null, reuse: false}", st)
tok = get(doc, "token") or ""
ok(get(doc, "session", "session_id") == S, "3: the client adopts the session id it asked for", doc)
ok(st == 200 and get(doc, "session", "runtime") == RT,
   "3: runtime null opens the default runtime, named in the answer", doc)
ok(st == 200 and "tenant" in doc["session"] and doc["session"]["tenant"] is None,
   "3: an open without a tenant answers tenant null (section 11)", doc)
ok(st == 200 and get(doc, "session", "alive") is True and get(doc, "session", "state") == "running",
   "3: alive, running", doc)
st, pol, _, _ = req("GET", "/policy", token=TOKEN, timeout=60)
model_ok(ServicePolicy, pol, "3: GET /policy", st)
ok(isinstance(get(pol, "execute_timeout"), int) and pol["execute_timeout"] == EXEC_TIMEOUT,
   "3: server_timeout = execute_timeout (%d)" % EXEC_TIMEOUT, pol)
ok(get(pol, "work_dir") == "/workspace", "3: the policy's work_dir is the sandbox's /workspace",
   get(pol, "work_dir"))

# is_alive(), resource_usage(): GET /sessions/{id} with the session token.
st, doc, _, _ = req("GET", "/sessions/%s" % S, token=tok, timeout=60)
model_ok(SessionInfo, doc, "is_alive(): GET /sessions/{id}", st)
ok(get(doc, "alive") is True, "is_alive() is true", doc)
st, doc, _, _ = req("GET", "/sessions/%s?usage=true" % S, token=tok, timeout=60)
model_ok(SessionInfo, doc, "resource_usage(): GET /sessions/{id}?usage=true", st)
ok(isinstance(get(doc, "usage"), dict) and get(doc, "usage", "memory_bytes"),
   "resource_usage() gives a sample", doc)

# 4-6: execute(command, timeout): {"command", "timeout_seconds"}.
st, doc, _, _ = op(S, tok, "exec", {"command": "echo out; echo err >&2; exit 3", "timeout_seconds": None})
model_ok(ExecResponse, doc, "4: execute()", st)
ok("out" in (get(doc, "output") or "") and "err" in doc["output"] and doc.get("exit_code") == 3
   and doc.get("truncated") is False, "4: stdout and stderr merged, exit 3, not truncated", doc)
st, doc, _, _ = op(S, tok, "exec", {"command": "pwd", "timeout_seconds": None})
ok(st == 200 and get(doc, "output") == "/workspace\n",
   "exec \"pwd\" prints /workspace (section 11: the sandbox's work dir)", doc)
st, doc, _, _ = op(S, tok, "exec", {"command": "ls /workspace && ls -d /workspace", "timeout_seconds": None})
ok(st == 200 and get(doc, "exit_code") == 0, "exec \"ls /workspace\" works", doc)
st, doc, _, _ = op(S, tok, "exec", {"command": "env", "timeout_seconds": None})
ok(st == 200 and ROOT and ROOT not in (get(doc, "output") or ROOT),
   "the host's workspace root is not in the sandbox's environment",
   "\n".join(l for l in (get(doc, "output") or "").splitlines() if ROOT and ROOT in l))
t0 = time.time()
st, doc, _, _ = op(S, tok, "exec", {"command": "sleep 30", "timeout_seconds": 1}, timeout=1 + 10)
el = time.time() - t0
ok(st == 200 and get(doc, "exit_code") == 124 and el < 8,
   "5: execute(\"sleep 30\", timeout=1): exit 124 in %.1f s, within the client's 1 + 10 s" % el, (st, doc))
st, doc, _, _ = op(S, tok, "exec", {"command": "head -c 200000 /dev/zero | tr '\\0' a", "timeout_seconds": None})
ok(st == 200 and get(doc, "truncated") is True and len(get(doc, "output") or "") == 100000,
   "6: output cut at 100,000, truncated true", (st, len(get(doc, "output") or "")))

# 7: write("notes/a.txt", "x\n"), read_bytes, exists.
st, doc, _, _ = op(S, tok, "write", {"path": "notes/a.txt", "content_b64": b64(b"x\n")})
model_ok(WriteResponse, doc, "7: write()", st)
ok(get(doc, "path") == "/workspace/notes/a.txt" and get(doc, "error") is None,
   "7: write(\"notes/a.txt\") answers path \"/workspace/notes/a.txt\", error null", doc)
st, doc, _, _ = op(S, tok, "read_bytes", {"path": "notes/a.txt"})
model_ok(ReadBytesResponse, doc, "7: read_bytes()", st)
ok(strict_bytes(doc) == b"x\n", "7: read_bytes(\"notes/a.txt\") == b\"x\\n\" (strict base64)", doc)
st, doc, _, _ = op(S, tok, "read_bytes", {"path": "/workspace/notes/a.txt"})
ok(strict_bytes(doc) == b"x\n", "7: read_bytes(\"/workspace/notes/a.txt\"), the path write gave", doc)
st, doc, _, _ = op(S, tok, "exec", {"command": "cat /workspace/notes/a.txt", "timeout_seconds": None})
ok(st == 200 and get(doc, "output") == "x\n", "7: the sandbox sees it at /workspace/notes/a.txt", doc)
st, doc, _, _ = op(S, tok, "exec", {"command": "cat notes/a.txt", "timeout_seconds": None})
ok(st == 200 and get(doc, "output") == "x\n", "7: a command starts in the work dir (cat notes/a.txt)", doc)
st, doc, _, _ = op(S, tok, "write", {"path": "/workspace/notes/b.txt", "content_b64": b64(b"b\n")})
ok(get(doc, "path") == "/workspace/notes/b.txt" and get(doc, "error") is None,
   "write(\"/workspace/notes/b.txt\") answers that path", doc)
st, doc, _, _ = op(S, tok, "write", {"path": "deep/er/c.txt", "content_b64": b64(b"c\n")})
ok(get(doc, "path") == "/workspace/deep/er/c.txt", "write(\"deep/er/c.txt\") makes the parents, answers "
   "\"/workspace/deep/er/c.txt\"", doc)
st, doc, _, _ = op(S, tok, "exec", {"command": "cat /workspace/notes/b.txt /workspace/deep/er/c.txt",
                                   "timeout_seconds": None})
ok(get(doc, "output") == "b\nc\n", "... the sandbox reads both at the paths written", doc)
st, doc, _, _ = op(S, tok, "exec", {"command": "echo s > /workspace/fromsh.txt", "timeout_seconds": None})
st, doc, _, _ = op(S, tok, "read", {"path": "/workspace/fromsh.txt", "offset": 0, "limit": 2000})
ok(get(doc, "content") == "s", "a file a command wrote at /workspace/... reads back through read()", doc)
st, doc, _, _ = op(S, tok, "exec", {"command": "rm -r fromsh.txt deep notes/b.txt; : " + "y" * 300,
                                   "timeout_seconds": None})
st, doc, _, _ = op(S, tok, "exec", {"command": "true", "timeout_seconds": None, "unknown_field": 1})
ok(st == 200, "a body with a field the model does not know is served (pydantic ignores extras)", (st, doc))
st, d1, _, _ = op(S, tok, "exists", {"path": "notes/a.txt"})
model_ok(ExistsResponse, d1, "7: exists()", st)
st2, d2, _, _ = op(S, tok, "exists", {"path": "notes"})
ok(get(d1, "exists") is True and get(d2, "exists") is False,
   "7: exists(\"notes/a.txt\") true, exists(\"notes\") false", (d1, d2))

# 8: 256 bytes, round trip.
data = bytes(range(256))
st, doc, _, _ = op(S, tok, "write", {"path": "bin.dat", "content_b64": b64(data)})
st, doc, _, _ = op(S, tok, "read_bytes", {"path": "bin.dat"})
ok(strict_bytes(doc) == data, "8: bytes(range(256)) written and read back identical", doc)

# 9: read(path, offset, limit): {"path", "offset", "limit"}.
op(S, tok, "write", {"path": "three.txt", "content_b64": b64(b"l1\nl2\nl3\n")})
st, doc, _, _ = op(S, tok, "read", {"path": "three.txt", "offset": 0, "limit": 1})
model_ok(ReadResponse, doc, "9: read()", st)
ok(get(doc, "content") == "l1\n\n[... 2 more lines. Use offset=1 to read more.]",
   "9: read(p, 0, 1) says how many lines are left", doc)
st, doc, _, _ = op(S, tok, "read", {"path": "three.txt", "offset": 0, "limit": 2000})
ok(get(doc, "content") == "l1\nl2\nl3", "9: read(p) joins the lines, no numbers", doc)
st, doc, _, _ = op(S, tok, "read", {"path": "three.txt", "offset": 5, "limit": 2000})
ok(get(doc, "content") == "[End of file]", "9: read(p, 5) is [End of file]", doc)
st, doc, _, _ = op(S, tok, "read", {"path": "missing.txt", "offset": 0, "limit": 2000})
ok(get(doc, "content") == "Error: File 'missing.txt' not found", "9: read(\"missing.txt\")", doc)

# Lines as sandboxd splits them (str.splitlines): CRLF and a lone CR end
# a line too.
op(S, tok, "write", {"path": "crlf.txt", "content_b64": b64(b"c1\r\nc2\rc3\n")})
st, doc, _, _ = op(S, tok, "read", {"path": "crlf.txt", "offset": 0, "limit": 2000})
ok(get(doc, "content") == "c1\nc2\nc3", "9: CRLF and CR end lines as LF does (\"c1\\nc2\\nc3\")", doc)
st, doc, _, _ = op(S, tok, "read", {"path": "crlf.txt", "offset": 1, "limit": 1})
ok(get(doc, "content") == "c2\n\n[... 1 more lines. Use offset=2 to read more.]", "9: ... and count as lines", doc)

# 10: over the read limit.
big = MAX_READ + 10
op(S, tok, "exec", {"command": "head -c %d /dev/zero | tr '\\0' b > big.txt" % big, "timeout_seconds": None})
st, doc, _, _ = op(S, tok, "read", {"path": "big.txt", "offset": 0, "limit": 2000})
ok(st == 200 and (get(doc, "content") or "").startswith("[Error: File is %d bytes, over the %d-byte read limit"
                                                        % (big, MAX_READ)),
   "10: read of a file over the read limit: [Error: File is ...", doc)
st, doc, _, _ = op(S, tok, "read_bytes", {"path": "big.txt"})
ok(st == 200 and strict_bytes(doc) == b"", "10: read_bytes of it is b\"\"", (st, doc))

# 11: edit(path, old, new, replace_all): every field sent.
op(S, tok, "write", {"path": "e.txt", "content_b64": b64(b"one x two x\nthree\n")})
st, doc, _, _ = op(S, tok, "edit", {"path": "e.txt", "old_string": "three", "new_string": "3",
                                   "replace_all": False})
model_ok(EditResponse, doc, "11: edit()", st)
ok(get(doc, "occurrences") == 1 and get(doc, "error") is None and get(doc, "path") == "/workspace/e.txt",
   "11: one hit: occurrences 1, path \"/workspace/e.txt\"", doc)
st, doc, _, _ = op(S, tok, "edit", {"path": "e.txt", "old_string": "x", "new_string": "y",
                                   "replace_all": False})
ok((get(doc, "error") or "").startswith("String 'x' found 2 times."), "11: two hits without replace_all", doc)
st, doc, _, _ = op(S, tok, "edit", {"path": "e.txt", "old_string": "q", "new_string": "y",
                                   "replace_all": False})
ok(get(doc, "error") == "String 'q' not found in file", "11: an absent string", doc)
st, doc, _, _ = op(S, tok, "edit", {"path": "e.txt", "old_string": "x", "new_string": "y",
                                   "replace_all": True})
ok(get(doc, "occurrences") == 2, "11: replace_all replaces both", doc)

# 12: ls_info("/workspace").
st, doc, _, _ = op(S, tok, "ls", {"path": "/workspace"})
rows_ok(doc, "12: ls_info(\"/workspace\")", st)
rows = doc if isinstance(doc, list) else []
dirs = [get(r, "is_dir") is True for r in rows]
ok(rows and get(rows[0], "name") == "notes" and dirs == sorted(dirs, reverse=True),
   "12: directories first", [get(r, "name") for r in rows])
ok(any(get(r, "path") == "/workspace/notes" and get(r, "is_dir") is True for r in rows)
   and any(get(r, "path") == "/workspace/three.txt" and get(r, "size") == 9 for r in rows),
   "12: rows name, path (\"/workspace/notes\"), is_dir, size", doc)
st, doc, _, _ = op(S, tok, "ls", {"path": "/workspace/no-such-dir"})
ok(st == 200 and doc == [], "12: a missing directory is []", (st, doc))

# 13: glob_info("**/*.txt"), path "/".
st, doc, _, _ = op(S, tok, "glob", {"pattern": "**/*.txt", "path": "/"})
rows_ok(doc, "13: glob_info(\"**/*.txt\")", st)
paths = [get(r, "path") for r in doc] if isinstance(doc, list) else []
ok("./notes/a.txt" in paths and "./three.txt" in paths and paths == sorted(paths)
   and all(get(r, "is_dir") is False for r in doc) and not any("/etc" in p or "/proc" in p for p in paths),
   "13: only the workspace's files, sorted, is_dir false", paths)

st, doc, _, _ = op(S, tok, "glob", {"pattern": "*.txt", "path": "/workspace/notes"})
paths = [get(r, "path") for r in doc] if isinstance(doc, list) else []
ok(st == 200 and paths and all(container_path(p) for p in paths) and any(p.endswith("notes/a.txt") for p in paths),
   "13: glob_info(\"*.txt\", \"/workspace/notes\"): paths the sandbox can open", paths)

# 14: grep_raw(pattern, path=None, glob=None, ignore_hidden=True).
st, doc, _, _ = op(S, tok, "grep", {"pattern": "l2", "path": None, "glob": None, "ignore_hidden": True})
model_ok(GrepResponse, doc, "14: grep_raw()", st)
ok(get(doc, "error") is None and [(get(m, "line_number"), get(m, "line")) for m in get(doc, "matches") or []]
   == [(2, "l2")] and "three.txt" in (get(doc, "matches", 0, "path") or ""),
   "14: a hit: path, line_number, line", doc)
st, doc, _, _ = op(S, tok, "grep", {"pattern": "x", "path": "/workspace/notes", "glob": "*.txt",
                                   "ignore_hidden": True})
hits = get(doc, "matches") or []
ok(st == 200 and hits and all(container_path(get(m, "path")) for m in hits),
   "14: grep_raw(\"x\", \"/workspace/notes\", \"*.txt\"): paths the sandbox can open", doc)
st, doc, _, _ = op(S, tok, "grep", {"pattern": "zzz-no-hit", "path": None, "glob": None, "ignore_hidden": True})
ok(st == 200 and get(doc, "matches") == [] and get(doc, "error") is None, "14: no hit is []", doc)
st, doc, _, _ = op(S, tok, "grep", {"pattern": "x", "path": "no-such-dir", "glob": None, "ignore_hidden": True})
ok(st == 200 and (get(doc, "error") or "").startswith("Error"),
   "14: an unreadable root gives the error string \"Error: ...\"", (st, doc))

# The caller's own headers rode on every call above; the service kept them
# out of the way (section 11).
ok(alive(), "every call carried the caller's own headers (X-Sandbox-Agent, X-Sandbox-Run) and was served")

# 60 MiB: one write body of about 80 MiB (section 11, item 3).
blob = os.urandom(60 * 1024 * 1024)
t0 = time.time()
st, doc, _, _ = write_raw(S, tok, "big60.bin", blob)
el = time.time() - t0
ok(st == 200 and get(doc, "path") == "/workspace/big60.bin" and get(doc, "error") is None,
   "a write of 60 MiB travels in one body (%.1f s)" % el, (st, doc))
st, doc, _, _ = op(S, tok, "exec", {"command": "wc -c < big60.bin; sha256sum big60.bin", "timeout_seconds": None})
out = (get(doc, "output") or "").split()
ok(out[:2] == [str(len(blob)), hashlib.sha256(blob).hexdigest()],
   "... and reads back identical (wc -c, sha256sum in the sandbox)", (st, doc))
del blob
# The limit itself passes: a write of exactly SANDBOXD_MAX_WRITE_BYTES.
blob = b"\0" * MAX_WRITE
st, doc, _, _ = write_raw(S, tok, "atlimit.bin", blob)
ok(st == 200 and get(doc, "error") is None and get(doc, "path") == "/workspace/atlimit.bin",
   "a write of exactly SANDBOXD_MAX_WRITE_BYTES (%d) passes" % MAX_WRITE, (st, doc))
blob += b"\0"
st, doc, _, _ = write_raw(S, tok, "overlimit.bin", blob)
# Refused in the body, or 413 (sent as soon as the headers are in, the
# connection then closed under the body still being sent: the client sees a
# transport error and degrades, as it does for a 413); the service lives.
ok((st == 200 and get(doc, "path") is None and get(doc, "error")) or st == 413
   or (st == 0 and alive()), "one byte over it is refused (in the body, or 413), never a dead service", (st, doc))
del blob
op(S, tok, "exec", {"command": "rm -f big60.bin atlimit.bin overlimit.bin", "timeout_seconds": None})
ok(alive(), "the service answers after the large writes")

# The deployment's own calls: the list, the events (the ticker).
st, doc, _, _ = req("GET", "/sessions", token=TOKEN)
model_ok(SessionList, doc, "GET /sessions (the dashboard)", st)
st, doc, _, _ = req("GET", "/sessions?usage=true", token=TOKEN)
model_ok(SessionList, doc, "GET /sessions?usage=true", st)
st, doc, _, _ = req("GET", "/sessions/%s/events" % S, token=tok)
model_ok(SessionEvents, doc, "GET /sessions/{id}/events (the ticker)", st)
ops = {get(e, "op") for e in get(doc, "events") or []}
want = {"exec", "read", "read_bytes", "write", "edit", "exists", "ls", "glob", "grep"}
ok(want <= ops, "the events name every op by sandboxd's names", sorted(want - ops))
diag("ops beside sandboxd's: %s" % sorted(o for o in ops - want if o))
who = {(get(e, "agent"), get(e, "run")) for e in get(doc, "events") or []}
ok(who == {(CALLER_HEADERS["X-Sandbox-Agent"], CALLER_HEADERS["X-Sandbox-Run"])},
   "every event names the agent and run the client's headers said", sorted(who, key=str))
longest = max([len(get(e, "target") or "") for e in get(doc, "events") or []] or [0])
diag("the longest event target: %d characters (sandboxd cuts at 200 and a mark)" % longest)
diag("the first events: %r" % (get(doc, "events") or [])[:3])
after = get(doc, "latest_seq") or 0
st, doc, _, _ = req("GET", "/sessions/%s/events?after=%d" % (S, after), token=tok)
ok(st == 200 and get(doc, "events") == [], "events?after=latest_seq is empty", doc)
SEV = get(doc, "latest_seq")

# 15: another instance, same id, reuse=True.
st, doc, _, _ = open_s(S, reuse=True)
model_ok(SessionCreated, doc, "15: reuse=True on an open id", st)
tok2 = get(doc, "token") or ""
st, doc, _, _ = op(S, tok2, "read_bytes", {"path": "notes/a.txt"})
ok(strict_bytes(doc) == b"x\n", "15: the adopted token sees notes/a.txt", doc)
st, doc, _, _ = op(S, tok, "exists", {"path": "notes/a.txt"})
ok(get(doc, "exists") is True, "15: the first instance's token still works", (st, doc))
st, doc, _, _ = open_s(S)
ok(st == 409, "15: the same id without reuse: HTTP 409", (st, doc))
st, doc, _, _ = open_s(S, runtime=RT2, reuse=True)
ok(st == 409, "15: reuse with another runtime: HTTP 409", (st, doc))

# 16: an unknown runtime; a tenant over its ceiling; no tenant, no ceiling.
st, doc, _, _ = open_s(P + "nope", runtime="nope")
ok(st == 400, "16: runtime \"nope\": HTTP 400", (st, doc))
extra = []
tenant = "org-" + os.urandom(4).hex()
for i in range(TENANT_MAX):
    sid = "%sten%d" % (P, i)
    st, doc, _, _ = open_s(sid, tenant=tenant)
    model_ok(SessionCreated, doc, "16: tenant %r, session %d of %d" % (tenant, i + 1, TENANT_MAX), st)
    ok(get(doc, "session", "tenant") == tenant, "16: ... its tenant is named", get(doc, "session"))
    if st == 200:
        extra.append((sid, doc["token"]))
st, doc, _, _ = open_s(P + "tenover", tenant=tenant)
ok(st == 429 and "already holds %d of %d" % (TENANT_MAX, TENANT_MAX) in str(get(doc, "detail")),
   "16: one more for that tenant: HTTP 429 \"already holds %d of %d\"" % (TENANT_MAX, TENANT_MAX), (st, doc))
free = 0
for i in range(TENANT_MAX + 1):
    sid = "%snotenant%d" % (P, i)
    st, doc, _, _ = open_s(sid)
    if st == 200:
        free += 1
        extra.append((sid, doc["token"]))
    elif i == TENANT_MAX:
        diag("the open refused: %d %r" % (st, doc))
ok(free == TENANT_MAX + 1, "opens without a tenant are not held to the per-tenant ceiling (%d of %d past it)"
   % (free, TENANT_MAX + 1), free)
# The host's ceiling still holds for them.
st, h, _, _ = req("GET", "/healthz")
held = get(h, "sessions") or 0
st, doc, _, _ = req("PUT", "/policy", {"max_sessions": held}, TOKEN)
model_ok(ServicePolicy, doc, "PUT /policy (the deployment's ceilings)", st)
st, doc, _, _ = open_s(P + "hostover")
ok(st == 429 and "Session limit of %d reached" % held in str(get(doc, "detail")),
   "... the host's ceiling still holds: HTTP 429 \"Session limit of %d reached\"" % held, (st, doc))
if st == 200:
    extra.append((P + "hostover", doc["token"]))
req("PUT", "/policy", {"max_sessions": 100}, TOKEN)
for sid, t in extra:
    req("DELETE", "/sessions/%s?purge=true" % sid, token=t, timeout=60)

# An open without an id (the model allows null): the service names it.
st, doc, _, _ = req("POST", "/sessions", {"session_id": None, "runtime": None, "tenant": None, "reuse": False},
                    TOKEN, timeout=60)
model_ok(SessionCreated, doc, "session_id null: the service names the session", st)
ok(re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", get(doc, "session", "session_id") or "") is not None,
   "... with an id of the pattern", doc)
if st == 200:
    # sandboxd's is "s-" and 16 hex digits; more means the id was made
    # past its buffer.
    ok(re.match(r"^s-[0-9a-f]{16}$", doc["session"]["session_id"]) is not None,
       "... \"s-\" and 16 hex digits, as sandboxd's", doc["session"]["session_id"])
    req("DELETE", "/sessions/%s?purge=true" % doc["session"]["session_id"], token=doc["token"], timeout=60)
# A sandbox that cannot start: 502, and its text names no host path or pid.
if E.get("CONF_RT_BROKEN"):
    st, doc, text, _ = open_s(P + "broken", runtime=E["CONF_RT_BROKEN"])
    ok(st == 502 and str(get(doc, "detail")).startswith("Could not start sandbox"),
       "a sandbox that cannot start: 502 \"Could not start sandbox: ...\"", (st, doc))
    ok(not (ROOT and ROOT.encode() in text)
       and not (SPID and re.search(r"\b%s\b" % SPID, text.decode("utf-8", "replace"))),
       "... naming neither the host's workspace root nor the service's pid", doc)
    diag("its detail: %r" % get(doc, "detail"))

# 19: tokens and ids.
S2 = P + "t2"
st, doc, _, _ = open_s(S2, runtime=RT2)
tokb = get(doc, "token") or ""
st, doc, _, _ = op(S2, tok, "exec", {"command": "true", "timeout_seconds": None})
ok(st == 401, "19: the session's token on another session: 401", (st, doc))
st, doc, _, _ = req("GET", "/sessions/%s" % S2, token=tok)
ok(st == 401, "19: ... and on its GET: 401", (st, doc))
st, doc, _, _ = op(P + "never", TOKEN, "exec", {"command": "true", "timeout_seconds": None})
ok(st == 404, "19: the service token on an unknown id: 404", (st, doc))
st, doc, _, _ = op("a%2Fb", TOKEN, "exec", {"command": "true", "timeout_seconds": None})
ok(st in (404, 422), "19: an id \"a/b\": 404 or 422", (st, doc))
st, doc, _, _ = op("x" * 65, TOKEN, "exec", {"command": "true", "timeout_seconds": None})
ok(st in (404, 422), "19: an id of 65 characters: 404 or 422", (st, doc))
req("DELETE", "/sessions/%s?purge=true" % S2, token=tokb, timeout=60)

# 17: stop(), then the archive (WorkspaceArchive, the service token).
st, doc, _, _ = req("DELETE", "/sessions/%s" % S, token=tok2, timeout=60)
ok(st == 204, "17: stop(): DELETE /sessions/{id} is 204", (st, doc))
st, doc, _, _ = req("GET", "/sessions/%s" % S, token=tok2)
ok(st >= 400 or get(doc, "alive") is False, "17: is_alive() after stop() is false", (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S, {"path": "."}, TOKEN)
rows_ok(doc, "17: WorkspaceArchive.ls(id) (path \".\")", st)
ok(isinstance(doc, list) and "notes" in [get(r, "name") for r in doc], "17: ... still lists notes", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S, {"path": "/workspace/notes"}, TOKEN)
rows_ok(doc, "17: WorkspaceArchive.ls(id, \"/workspace/notes\")", st)
ok(isinstance(doc, list) and [get(r, "path") for r in doc] == ["notes/a.txt"],
   "17: ... rows relative to the workspace", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/read" % S,
                    {"path": "/workspace/notes/a.txt", "offset": 0, "limit": 2000}, TOKEN)
model_ok(ReadResponse, doc, "17: WorkspaceArchive.read(id, \"/workspace/notes/a.txt\")", st)
ok(get(doc, "content") == "x", "17: ... reads \"x\"", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/read_bytes" % S, {"path": "/workspace/notes/a.txt"}, TOKEN)
model_ok(ReadBytesResponse, doc, "17: WorkspaceArchive.read_bytes(id, \"/workspace/notes/a.txt\")", st)
try:
    got = base64.b64decode(get(doc, "content_b64") or "")
except (binascii.Error, ValueError):
    got = None
ok(got == b"x\n", "17: ... == b\"x\\n\"", doc)
for route, body in (("read_bytes", {"path": "../x"}), ("read", {"path": "../x", "offset": 0, "limit": 2000}),
                    ("ls", {"path": "../x"})):
    st, doc, _, _ = req("POST", "/workspaces/%s/%s" % (S, route), body, TOKEN)
    ok(st == 400, "17: WorkspaceArchive.%s(id, \"../x\"): WorkspaceArchiveError 400" % route, (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/read_bytes" % S, {"path": "nope.txt"}, TOKEN)
ok(st == 404, "17: a missing file: 404", (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/read" % S, {"path": "nope.txt", "offset": 0, "limit": 2000}, TOKEN)
ok(st == 404, "17: read of a missing file: 404 (not the live read's text)", (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/read" % S, {"path": "crlf.txt", "offset": 0, "limit": 2000}, TOKEN)
ok(st == 200 and get(doc, "content") == "c1\nc2\nc3", "17: the archive splits lines as the live read", (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S, {"path": "no-such-dir"}, TOKEN)
ok(st == 404, "17: a missing directory: 404", (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/read_bytes" % S, {"path": "big.txt"}, TOKEN)
ok(st == 400 and "over the %d-byte read limit" % MAX_READ in str(get(doc, "detail")),
   "17: read_bytes of a file over the read limit: 400", (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/read" % S, {"path": "big.txt", "offset": 0, "limit": 2000}, TOKEN)
ok(st == 400 and "over the %d-byte read limit" % MAX_READ in str(get(doc, "detail")),
   "17: read of it: 400", (st, doc))
st, doc, text, _ = req("POST", "/workspaces/%s/read_bytes" % S, {"path": "/etc/passwd"}, TOKEN)
ok(st in (400, 404) and b"root:" not in text, "17: read_bytes(id, \"/etc/passwd\") is refused, never the host's file",
   (st, doc))
diag("the archive's /etc/passwd: %d %r (sandboxd re-roots it in the workspace: 404)" % (st, get(doc, "detail")))
st, doc, _, _ = req("POST", "/workspaces/%snever/ls" % P, {"path": "."}, TOKEN)
ok(st == 404, "17: a session that never was: 404", (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S, {"path": "."}, tok2)
ok(st == 401, "17: the archive takes the service token only (a session's: 401)", (st, doc))

# 18: stop(purge=True) on a reopened session; the archive then says 404.
st, doc, _, _ = open_s(S, reuse=True)
ok(st == 200 and get(doc, "session", "session_id") == S, "18: the id reopens (reuse)", (st, doc))
tok3 = get(doc, "token") or ""
st, doc, _, _ = op(S, tok3, "read_bytes", {"path": "notes/a.txt"})
ok(strict_bytes(doc) == b"x\n", "18: ... and finds its files", doc)

ok(not LEAKS, "no answer named the host's workspace root (%d did)" % len(LEAKS), "\n".join(LEAKS[:10]))

# Text that is not UTF-8 (section 11, item 2): last, since today it ends
# the service.
L1 = "caf\u00e9 cr\u00e8me"
op(S, tok3, "write", {"path": "latin1.txt", "content_b64": b64((L1 + "\n").encode("latin-1"))})
st, doc, _, _ = op(S, tok3, "read", {"path": "latin1.txt", "offset": 0, "limit": 2000})
ok(st == 200 and get(doc, "content") == L1, "a latin-1 file reads \"caf\u00e9 cr\u00e8me\"", (st, doc))
ok(alive(), "... and the service is still up")
st, doc, _, _ = req("POST", "/workspaces/%s/read" % S, {"path": "latin1.txt", "offset": 0, "limit": 2000}, TOKEN)
ok(st == 200 and get(doc, "content") == L1, "the archive reads it the same", (st, doc))
ok(alive(), "... and the service is still up")

st, doc, _, _ = req("DELETE", "/sessions/%s?purge=true" % S, token=tok3, timeout=60)
ok(st == 204, "18: stop(purge=True): 204", (st, doc))
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S, {"path": "."}, TOKEN)
ok(st == 404, "18: the archive's ls then raises 404", (st, doc))
finish()

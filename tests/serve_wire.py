#!/usr/bin/env python3
"""serve_wire.py - sandboxd's wire, checked through a real HTTP client
(http.client) against a running `sbxcat serve` (tests/t-serve.sh starts
it).  The cases of sandboxd-wire.md section 10 and the status codes and
details of section 3, generation B's run and stop, and the tenants' tokens.
Prints TAP.

Environment: SERVE_HOST, SERVE_PORT, SERVE_TOKEN, SERVE_RT (the default
runtime), SERVE_RT2 (another), SERVE_RUNTIMES (every alias, sorted, comma
separated), SERVE_MAX_READ (the read limit), SERVE_EXEC_TIMEOUT,
SERVE_TENANT_A/B and SERVE_TOKEN_A/B (the tenants file's), SERVE_ROOT (the
workspace root), SERVE_PREFIX (a prefix for session ids, unique to the run).
"""
import base64
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

from taplib import ok, plan
from wirehost import engine, key_of

E = os.environ
HOST, PORT, TOKEN = E["SERVE_HOST"], int(E["SERVE_PORT"]), E["SERVE_TOKEN"]
RT, RT2 = E["SERVE_RT"], E["SERVE_RT2"]
P = E["SERVE_PREFIX"]


def req(method, path, body=None, token=None, raw=None, headers=None, timeout=120):
    c = http.client.HTTPConnection(HOST, PORT, timeout=timeout)
    h = {"Content-Type": "application/json"}
    if token is not None:
        h["X-Sandbox-Token"] = token
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    text = r.read()
    c.close()
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        doc = None
    return r.status, doc, text, r


def detail(doc):
    return doc.get("detail") if isinstance(doc, dict) else None


def open_session(sid, token=TOKEN, runtime=None, tenant=None, reuse=False, **kw):
    body = {"session_id": sid, "runtime": runtime, "tenant": tenant, "reuse": reuse}
    body.update(kw)
    return req("POST", "/sessions", body, token)


def op(sid, tok, name, **body):
    return req("POST", "/sessions/%s/%s" % (sid, name), body, tok)


def b64(data):
    return base64.b64encode(data).decode()


def plain(rows):
    """FileEntry rows without generation B's modified_at (checked apart)."""
    if not isinstance(rows, list):
        return rows
    return [{k: v for k, v in r.items() if k != "modified_at"} for r in rows]


# 1. health, without a token
st, doc, _, _ = req("GET", "/healthz")
ok(st == 200 and doc["status"] == "ok", "healthz answers 200 ok without a token", doc)
ok(doc and doc.get("runtimes") == E["SERVE_RUNTIMES"].split(","),
   "healthz lists the allowlist, sorted", doc)
st, doc, _, _ = req("GET", "/")
ok(st == 200 and doc["service"] == "sandboxd" and "/healthz" in doc["endpoints"],
   "the index names the service and its endpoints", doc)

# 2. a wrong token
st, doc, _, _ = open_session(P + "t1", token="wrong")
ok(st == 401 and detail(doc) == "Invalid or missing sandbox token",
   "an open with a wrong token is 401 with sandboxd's detail", doc)
st, doc, _, _ = req("POST", "/sessions", {"session_id": P + "t1"})
ok(st == 401, "an open with no token is 401")
st, _, _, _ = req("GET", "/sessions", token="caf\u00e9".encode().decode("latin-1"))
ok(st == 401, "a token that is not ASCII is 401, not a crash")

# 3. open
S1 = P + "t1"
st, doc, _, _ = open_session(S1)
ok(st == 200, "open with the service token, nulls included: 200", doc)
tok1 = doc["token"] if st == 200 else ""
ok(st == 200 and doc["session"]["session_id"] == S1 and len(tok1) >= 43,
   "the session is named by its id, with a token of 43+ characters", doc)
ok(st == 200 and doc["session"]["runtime"] == RT and doc["session"]["alive"] is True
   and doc["session"]["state"] == "running", "it runs the default runtime", doc)
for k in ("created_at", "last_activity", "idle_seconds"):
    ok(st == 200 and isinstance(doc["session"][k], (int, float)), "SessionInfo has %s" % k)
st, pol, _, _ = req("GET", "/policy", token=TOKEN)
ok(st == 200 and pol["execute_timeout"] == int(E["SERVE_EXEC_TIMEOUT"]),
   "GET /policy gives execute_timeout", pol)
ok(st == 200 and all("alias" in r and "image" in r for r in pol["runtimes"]),
   "every runtime of the policy has alias and image", pol)
st, pol2, _, _ = req("GET", "/policy", token=tok1)
ok(st == 401, "a session's token does not read the policy")

# 4-6. exec
st, doc, _, _ = op(S1, tok1, "exec", command="echo out; echo err >&2; exit 3", timeout_seconds=None)
ok(st == 200 and "out" in doc["output"] and "err" in doc["output"]
   and doc["exit_code"] == 3 and doc["truncated"] is False,
   "exec merges stdout and stderr and gives the exit code", doc)
t0 = time.time()
st, doc, _, _ = op(S1, tok1, "exec", command="sleep 30", timeout_seconds=1)
el = time.time() - t0
ok(st == 200 and doc["exit_code"] == 124 and el < 8,
   "a command past its timeout is exit 124, in about its timeout (%.1f s)" % el, doc)
st, doc, _, _ = op(S1, tok1, "exec", command="head -c 200000 /dev/zero | tr '\\0' a")
ok(st == 200 and doc["truncated"] is True and len(doc["output"]) == 100000,
   "output is cut at 100,000 bytes and says so", (st, doc and len(doc.get("output", ""))))
st, doc, _, _ = op(S1, tok1, "exec", command="printf '\\377\\376ok'")
ok(st == 200 and doc["output"].endswith("ok") and "\ufffd" in doc["output"],
   "bytes that are not UTF-8 are replaced, not an error", doc)
st, doc, _, _ = op(S1, tok1, "exec", command="true", timeout_seconds=0)
ok(st == 200 and doc["exit_code"] == 0, "a timeout of 0 is the ceiling, not none", doc)

# 7-8. write, read_bytes, exists
st, doc, _, _ = op(S1, tok1, "write", path="notes/a.txt", content_b64=b64(b"x\n"))
ok(st == 200 and doc["error"] is None and doc["path"].endswith("/workspace/notes/a.txt")
   and doc["path"].startswith("/"), "write gives the absolute path, no error", doc)
ws_abs = doc["path"][: -len("/notes/a.txt")] if st == 200 and doc["path"] else "/nowhere"
st, doc, _, _ = op(S1, tok1, "read_bytes", path="notes/a.txt")
ok(st == 200 and base64.b64decode(doc["content_b64"], validate=True) == b"x\n",
   "read_bytes gives the bytes written (strict base64)", doc)
st, doc, _, _ = op(S1, tok1, "read_bytes", path=ws_abs + "/notes/a.txt")
ok(st == 200 and base64.b64decode(doc["content_b64"]) == b"x\n",
   "the container's absolute path names the same file", doc)
st, doc, _, _ = op(S1, tok1, "read_bytes", path="/workspace/notes/a.txt")
ok(st == 200 and base64.b64decode(doc["content_b64"]) == b"x\n",
   "sandboxd's /workspace names the workspace too", doc)
st, doc, _, _ = op(S1, tok1, "exec", command="cat %s/notes/a.txt" % ws_abs)
ok(st == 200 and doc["output"] == "x\n", "the sandbox sees the file at that path", doc)
st, d1, _, _ = op(S1, tok1, "exists", path="notes/a.txt")
st2, d2, _, _ = op(S1, tok1, "exists", path="notes")
ok(d1 == {"exists": True} and d2 == {"exists": False}, "exists: a file yes, a directory no", (d1, d2))
data = bytes(range(256))
st, doc, _, _ = op(S1, tok1, "write", path="bin.dat", content_b64=b64(data))
st, doc, _, _ = op(S1, tok1, "read_bytes", path="bin.dat")
ok(st == 200 and base64.b64decode(doc["content_b64"]) == data, "256 bytes round-trip exactly")
st, doc, _, _ = op(S1, tok1, "write", path="bad.dat", content_b64="not base64!")
ok(st == 400 and detail(doc).startswith("content_b64 is not valid base64: "),
   "bad base64 is 400 with sandboxd's detail", doc)
st, doc, _, _ = op(S1, tok1, "write", path="bad.dat", content_b64="eA=\n")
ok(st == 400, "base64 with a newline is refused (strict)", doc)
st, doc, _, _ = op(S1, tok1, "write", path="../escape.txt", content_b64=b64(b"x"))
ok(st == 200 and doc["path"] is None and doc["error"], "a write outside the workspace fails in the body", doc)
st, doc, _, _ = op(S1, tok1, "write", path="/etc/passwd", content_b64=b64(b"x"))
ok(st == 200 and doc["path"] is None and doc["error"], "an absolute path outside the workspace fails", doc)

# 9-10. read
op(S1, tok1, "write", path="three.txt", content_b64=b64(b"l1\nl2\nl3\n"))
st, doc, _, _ = op(S1, tok1, "read", path="three.txt", offset=0, limit=1)
ok(st == 200 and doc["content"] == "l1\n\n[... 2 more lines. Use offset=1 to read more.]",
   "a slice says how many lines are left and where to go on", doc)
st, doc, _, _ = op(S1, tok1, "read", path="three.txt", offset=1, limit=1)
ok(st == 200 and doc["content"].startswith("l2\n\n[... 1 more lines. Use offset=2"), "offset goes on", doc)
st, doc, _, _ = op(S1, tok1, "read", path="three.txt")
ok(st == 200 and doc["content"] == "l1\nl2\nl3", "a whole read joins the lines, no numbers", doc)
st, doc, _, _ = op(S1, tok1, "read", path="three.txt", offset=5)
ok(st == 200 and doc["content"] == "[End of file]", "past the end: [End of file]", doc)
st, doc, _, _ = op(S1, tok1, "read", path="missing.txt")
ok(st == 200 and doc["content"] == "Error: File 'missing.txt' not found", "a missing file", doc)
op(S1, tok1, "write", path="empty.txt", content_b64="")
st, doc, _, _ = op(S1, tok1, "read", path="empty.txt")
ok(st == 200 and doc["content"] == "", "an empty file reads empty (sandboxd said not found)", doc)
big = int(E["SERVE_MAX_READ"]) + 10
op(S1, tok1, "exec", command="head -c %d /dev/zero | tr '\\0' b > big.txt" % big)
st, doc, _, _ = op(S1, tok1, "read", path="big.txt")
ok(st == 200 and doc["content"].startswith("[Error: File is %d bytes" % big),
   "a file over the read limit is refused with sandboxd's words", doc)
st, doc, _, _ = op(S1, tok1, "read_bytes", path="big.txt")
ok(st == 200 and doc["content_b64"] == "", "read_bytes of it is empty", doc)
st, doc, _, _ = op(S1, tok1, "read", path="three.txt", offset=-1)
ok(st == 422 and isinstance(detail(doc), list), "a negative offset is 422 in FastAPI's shape", doc)
st, doc, _, _ = op(S1, tok1, "read", path="three.txt", limit=0)
ok(st == 422, "a limit of 0 is 422", doc)
st, doc, _, _ = op(S1, tok1, "read", path=5)
ok(st == 422 and detail(doc)[0]["loc"] == ["body", "path"], "a path of the wrong type is 422 naming it", doc)
st, doc, _, _ = op(S1, tok1, "read")
ok(st == 422 and detail(doc)[0]["type"] == "missing", "a missing field is 422 missing", doc)
st, doc, _, _ = req("POST", "/sessions/%s/read" % S1, raw="{not json", token=tok1)
ok(st == 422, "malformed JSON is 422", doc)
st, doc, _, _ = req("POST", "/sessions/%s/read" % S1, raw="[1,2]", token=tok1)
ok(st == 422, "a body that is not an object is 422", doc)

# 11. edit
op(S1, tok1, "write", path="e.txt", content_b64=b64(b"one x two x\nthree\n"))
st, doc, _, _ = op(S1, tok1, "edit", path="e.txt", old_string="three", new_string="3")
ok(st == 200 and doc["occurrences"] == 1 and doc["error"] is None and doc["path"].endswith("/e.txt"),
   "edit of one occurrence", doc)
st, doc, _, _ = op(S1, tok1, "edit", path="e.txt", old_string="x", new_string="y")
ok(st == 200 and (doc["error"] or "").startswith("String 'x' found 2 times."), "two hits without replace_all", doc)
st, doc, _, _ = op(S1, tok1, "edit", path="e.txt", old_string="x", new_string="y", replace_all=True)
ok(st == 200 and doc["occurrences"] == 2, "replace_all replaces both", doc)
st, doc, _, _ = op(S1, tok1, "edit", path="e.txt", old_string="q", new_string="y")
ok(st == 200 and doc["error"] == "String 'q' not found in file", "an absent string", doc)
st, doc, _, _ = op(S1, tok1, "edit", path="nope.txt", old_string="q", new_string="y")
ok(st == 200 and doc["error"] == "File 'nope.txt' not found", "edit of a missing file", doc)

# 12-14. ls, glob, grep
st, doc, _, _ = op(S1, tok1, "ls", path="/workspace")
names = [e["name"] for e in doc] if st == 200 and isinstance(doc, list) else []
ok(st == 200 and names and names[0] == "notes" and all({"name", "path", "is_dir", "size"} <= set(e) for e in doc),
   "ls: directories first, rows with name, path, is_dir, size", doc)
ok(st == 200 and any(e["path"] == "/workspace/notes" for e in doc), "ls paths begin with the path given", doc)
st, doc, _, _ = op(S1, tok1, "ls", path="notes/")
ok(st == 200 and plain(doc) == [{"name": "a.txt", "path": "notes/a.txt", "is_dir": False, "size": 2}],
   "a relative ls gives relative paths", doc)
ok(st == 200 and abs(time.mktime(time.strptime(doc[0]["modified_at"], "%Y-%m-%dT%H:%M:%SZ"))
                     - time.timezone - time.time()) < 600,
   "rows have generation B's modified_at (ISO 8601, UTC, about now)", doc)
# A time the sandbox can give its files that ISO 8601 UTC does not write
# here (before 1970): modified_at null, the listing whole.
import glob as _glob
st, _, _, _ = op(S1, tok1, "write", path="old/then.txt", content_b64="eA==")
hits = _glob.glob(os.path.join(E.get("SANDBOXD_WORKSPACE_ROOT", "/nonexistent"), "*", "workspace", "old", "then.txt"))
for h in hits:
    os.utime(h, (-31536000, -31536000))
st, doc, _, _ = op(S1, tok1, "ls", path="old")
ok(st == 200 and len(hits) == 1 and [e.get("name") for e in doc] == ["then.txt"] and doc[0].get("modified_at", 0) is None,
   "a file dated before 1970: listed, modified_at null", doc)
st, doc, _, _ = op(S1, tok1, "ls", path="no-such-dir")
ok(st == 200 and doc == [], "ls of a missing directory is []", doc)
st, doc, _, _ = op(S1, tok1, "glob", pattern="**/*.txt")
paths = [e["path"] for e in doc] if isinstance(doc, list) else []
ok(st == 200 and "./notes/a.txt" in paths and "./three.txt" in paths and paths == sorted(paths)
   and all(e["is_dir"] is False for e in doc), "glob finds the workspace's files, sorted", doc)
st, doc, _, _ = op(S1, tok1, "glob", pattern="*.dat", path="/")
ok(st == 200 and [e["path"] for e in doc] == ["./bin.dat"], "glob of a plain pattern matches at any depth", doc)
st, doc, _, _ = op(S1, tok1, "grep", pattern="l2")
ok(st == 200 and doc["error"] is None and doc["matches"] == [{"path": "three.txt", "line_number": 2, "line": "l2"}],
   "grep gives path, line number, line", doc)
st, doc, _, _ = op(S1, tok1, "grep", pattern="zzz-no-hit")
ok(st == 200 and doc["matches"] == [], "grep without a hit is []", doc)
st, doc, _, _ = op(S1, tok1, "grep", pattern="l", glob="*.txt", path="notes")
ok(st == 200 and doc["matches"] == [], "grep with a path and a glob", doc)

# 15. reuse, conflicts
st, doc, _, _ = open_session(S1, reuse=True)
tok1b = doc["token"] if st == 200 else ""
ok(st == 200 and doc["session"]["session_id"] == S1, "reuse of an open session: 200", doc)
st, doc, _, _ = op(S1, tok1b, "read_bytes", path="notes/a.txt")
ok(st == 200 and base64.b64decode(doc["content_b64"]) == b"x\n", "reuse finds the files", doc)
st, doc, _, _ = op(S1, tok1, "exists", path="notes/a.txt")
ok(st == 200 and doc["exists"], "the first token still works after a reuse", doc)
st, doc, _, _ = open_session(S1)
ok(st == 409 and detail(doc) == "Session exists: %s" % S1, "the same id without reuse: 409", doc)
st, doc, _, _ = open_session(S1, reuse=True, runtime=RT2)
ok(st == 409 and detail(doc) == ("Session %s is open on runtime '%s', not '%s'. Close it before "
                                  "changing runtime." % (S1, RT, RT2)), "reuse on another runtime: 409", doc)

# 16. unknown runtime, tenant ceiling
st, doc, _, _ = open_session(P + "x1", runtime="nope")
ok(st == 400 and detail(doc).startswith("Unknown runtime 'nope'. Allowed: "), "an unknown runtime: 400", doc)
st, doc, _, _ = open_session(P + "bad/id")
ok(st == 422, "an id outside the pattern at open: 422", doc)
st, doc, _, _ = open_session("x" * 65)
ok(st == 422, "an id of 65 characters at open: 422", doc)
st, doc, _, _ = open_session(P + "x2", tenant="bad tenant")
ok(st == 422, "a tenant outside the pattern: 422", doc)
st, doc, _, _ = req("PUT", "/policy", {"max_sessions_per_tenant": 1}, TOKEN)
ok(st == 200 and doc["max_sessions_per_tenant"] == 1, "PUT /policy sets the tenant ceiling", doc)
st, doc, _, _ = open_session(P + "q1", tenant="tq")
ok(st == 200, "the tenant's first session opens", doc)
st, doc, _, _ = open_session(P + "q2", tenant="tq")
ok(st == 429 and detail(doc) == ("Tenant 'tq' already holds 1 of 1 sessions. Release an idle session "
                                  "before opening another."), "over the tenant's ceiling: 429", doc)
req("PUT", "/policy", {"max_sessions_per_tenant": 100}, TOKEN)
st, doc, _, _ = req("PUT", "/policy", {"network_mode": "bridge"}, TOKEN)
ok(st == 422, "a field that cannot be changed: 422", doc)
st, doc, _, _ = req("PUT", "/policy", {"default_runtime": "nope"}, TOKEN)
ok(st == 400, "an unknown default runtime: 400", doc)
st, doc, _, _ = req("PUT", "/policy", {"max_sessions": -1}, TOKEN)
ok(st == 422, "a negative ceiling: 422", doc)

# concurrent opens of one id: exactly one wins
res = []
def racer():
    res.append(open_session(P + "race")[0])
th = [threading.Thread(target=racer) for _ in range(2)]
[t.start() for t in th]
[t.join() for t in th]
ok(sorted(res) == [200, 409], "two opens of one id at once: one 200, one 409", res)

# 19. tokens and ids
S2 = P + "t2"
st, doc, _, _ = open_session(S2, runtime=RT2)
tok2 = doc["token"] if st == 200 else ""
st, doc, _, _ = op(S2, tok1, "exec", command="true")
ok(st == 401, "session A's token on session B: 401", doc)
st, doc, _, _ = op(P + "never", tok1, "exec", command="true")
ok(st == 401, "a session token on an unknown id: 401 (existence not revealed)", doc)
st, doc, _, _ = op(P + "never", TOKEN, "exec", command="true")
ok(st == 404 and detail(doc) == "No such session: %snever" % P, "the service token on an unknown id: 404", doc)
st, doc, _, _ = op("a%2Fb", TOKEN, "exec", command="true")
ok(st in (404, 422), "an id with a slash: 404 or 422", (st, doc))
st, doc, _, _ = op("x" * 65, TOKEN, "exec", command="true")
ok(st == 422, "an id of 65 characters: 422", (st, doc))
st, doc, _, _ = op("..", TOKEN, "read", path="x")
ok(st in (404, 422), "an id of '..': never a path", (st, doc))
st, doc, _, _ = req("GET", "/sessions/%s" % S1, token=tok1)
ok(st == 200 and doc["session_id"] == S1 and doc["alive"] is True, "GET a session with its token", doc)
st, doc, _, _ = req("GET", "/sessions/%s?usage=true" % S1, token=tok1)
u = doc.get("usage") if isinstance(doc, dict) else None
ok(st == 200 and isinstance(u, dict) and isinstance(u.get("memory_bytes"), int) and u["memory_bytes"] > 0
   and isinstance(u.get("memory_limit_bytes"), int) and isinstance(u.get("pids"), int) and "cpu_percent" in u,
   "?usage=true samples the container: memory, its limit, pids", doc)
st, doc, _, _ = req("GET", "/sessions/%s" % S1, token=tok1)
ok(st == 200 and doc["usage"] is None, "without ?usage the usage is null (no sample)", doc)
st, doc, _, _ = req("GET", "/sessions", token=TOKEN)
ids = [s["session_id"] for s in doc["sessions"]] if st == 200 else []
ok(st == 200 and S1 in ids and S2 in ids and "limit" in doc and "tenant_limit" in doc,
   "GET /sessions lists them with the ceilings", doc)

# events, from the audit
st, doc, _, _ = req("GET", "/sessions/%s/events" % S1, token=tok1)
evs = doc.get("events", []) if isinstance(doc, dict) else []
ok(st == 200 and len(evs) >= 20 and [e["seq"] for e in evs] == sorted(e["seq"] for e in evs)
   and doc["latest_seq"] == evs[-1]["seq"], "events: the session's operations, in order", (st, doc))
ok(all({"seq", "at", "op", "target", "ok", "detail", "duration_ms"} <= set(e) for e in evs),
   "every event has seq, at, op, target, ok, detail, duration_ms", evs[:2])
ops = {e["op"] for e in evs}
ok({"exec", "write", "read", "read_bytes", "edit", "ls", "glob", "grep"} <= ops,
   "the events name sandboxd's ops", ops)
ok(not any("x\n" == e.get("detail") for e in evs), "no event holds a payload")
mid = evs[len(evs) // 2]["seq"] if evs else 0
st, doc, _, _ = req("GET", "/sessions/%s/events?after=%d" % (S1, mid), token=tok1)
ok(st == 200 and doc["events"] and all(e["seq"] > mid for e in doc["events"]), "after= gives only later events", doc)
st, doc, _, _ = req("GET", "/sessions/%s/events?after=-1" % S1, token=tok1)
ok(st == 422, "after=-1 is 422", doc)

# generation B: run, stop
st, doc, _, _ = op(S1, tok1, "run", argv=["/bin/sh", "-c", "echo o; echo e >&2; exit 2"])
ok(st == 200 and doc["stdout"] == "o\n" and doc["stderr"] == "e\n" and doc["exit_code"] == 2
   and doc["timed_out"] is False and doc["output_limited"] is False, "run keeps stdout and stderr apart", doc)
st, doc, _, _ = op(S1, tok1, "run", argv=["echo", "a b", "$HOME"])
ok(st == 200 and doc["stdout"] == "a b $HOME\n", "argv is literal, never a shell", doc)
t0 = time.time()
st, doc, _, _ = op(S1, tok1, "run", argv=["sleep", "30"], timeout_seconds=1.5)
ok(st == 200 and doc["timed_out"] is True and doc["exit_code"] is None and time.time() - t0 < 8,
   "a run past its timeout: timed_out, exit_code null", doc)
rid = os.urandom(16).hex()
box = {}
def runner():
    box["r"] = op(S1, tok1, "run", argv=["sleep", "30"], run_id=rid)
t = threading.Thread(target=runner)
t0 = time.time()
t.start()
time.sleep(1.5)
st, doc, _, _ = req("POST", "/sessions/%s/runs/%s/stop" % (S1, rid), token=tok1)
t.join(20)
el = time.time() - t0
ok(st == 204, "stop of a running run: 204", doc)
ok("r" in box and box["r"][0] == 200 and el < 10 and box["r"][1]["timed_out"] is False,
   "the stopped run ends at once (%.1f s), not at a timeout" % el, box.get("r", [None, None])[1])
st, doc, _, _ = req("POST", "/sessions/%s/runs/%s/stop" % (S1, rid), token=tok1)
ok(st == 204, "stop again, after the run ended: 204")
st, doc, _, _ = req("POST", "/sessions/%s/runs/%s/stop" % (S1, "zz"), token=tok1)
ok(st == 422, "a run id outside the pattern: 422", doc)
st, doc, _, _ = op(S1, tok1, "run", argv=[])
ok(st == 422, "an empty argv: 422", doc)
st, doc, _, _ = op(S1, tok1, "run", argv=["true"], timeout_seconds=0)
ok(st == 422, "a run timeout of 0: 422 (must be > 0)", doc)
st, doc, _, _ = op(S1, tok1, "run", argv=["true"], run_id="nothex")
ok(st == 422, "a run_id outside the pattern: 422", doc)

# issue 20: a run's environment, working directory, fractional deadline
SECRET = "sv-" + os.urandom(8).hex()
st, doc, _, _ = op(S1, tok1, "run", argv=["/bin/sh", "-c", 'printf "%s|%s|%s" "$A" "$B" "$C"'],
                   env={"A": SECRET, "B": "", "C": "é x\ny"})
ok(st == 200 and doc["stdout"] == SECRET + "||é x\ny", "run's env reaches the command exactly", doc)
for bad, why in (({"1X": "v"}, "a name starting with a digit"), ({"A B": "v"}, "a name with a space"),
                 ({"A": 1}, "a value not a string"), (["A=v"], "a list, not an object"),
                 ({"A": "x" * 40000}, "a value over 32 KiB")):
    st, doc, text, _ = op(S1, tok1, "run", argv=["true"], env=bad)
    ok(st == 422 and b"xxxxxxxxxx" not in text, "run env: %s is 422 (no value echoed)" % why, doc)
st, doc, _, _ = op(S1, tok1, "write", path="cwdtest/f.txt", content_b64=b64(b"x"))
st, doc, _, _ = op(S1, tok1, "run", argv=["pwd"], cwd="cwdtest")
ok(st == 200 and doc["stdout"].rstrip("\n").endswith("/workspace/cwdtest"),
   "run's cwd: a directory of the workspace, as the container sees it", doc)
st, doc, _, _ = op(S1, tok1, "run", argv=["pwd"], cwd="/workspace/cwdtest")
ok(st == 200 and doc["stdout"].rstrip("\n").endswith("/cwdtest"), "run's cwd under /workspace, as the file operations take it", doc)
for bad in ("/etc", "../..", "cwdtest/f.txt", "nosuchdir"):
    st, doc, _, _ = op(S1, tok1, "run", argv=["pwd"], cwd=bad)
    ok(st == 422, "run's cwd %r refused: 422" % bad, (st, doc))
t0 = time.time()
st, doc, _, _ = op(S1, tok1, "run", argv=["sleep", "5"], timeout_seconds=0.2)
el = time.time() - t0
ok(st == 200 and doc["timed_out"] is True and el < 3, "a float timeout_seconds of 0.2 stops sleep 5 (%.2f s)" % el, doc)
st, doc, _, _ = req("GET", "/sessions/%s/events" % S1, token=tok1)
ok(st == 200 and SECRET not in json.dumps(doc), "no event holds an env value", None)

# run on a session whose container is gone: 410 in the wire's words (the
# reason's row of the one status table), never the key or a host path.
if E.get("DOCKER_HOST", "").startswith("unix://"):
    SG = P + "gone"
    st, doc, _, _ = open_session(SG, runtime=RT)
    tokg = doc["token"] if st == 200 else ""
    keyg = (key_of(E["SERVE_ROOT"], SG) or "none") if st == 200 else "none"
    est, rows = engine("GET", "/containers/json?all=1&filters=" +
                       urllib.parse.quote(json.dumps({"name": [keyg]})))
    for c in rows or []:
        engine("DELETE", "/containers/%s?force=1" % c["Id"])
    ok(est == 200 and len(rows or []) == 1, "the gone session's container removed at the engine", rows)
    st, doc, text, _ = op(SG, tokg, "run", argv=["true"])
    ok(st == 410 and detail(doc) == "The sandbox is gone: its container was removed",
       "run on a removed container: 410, the sandbox gone", (st, doc))
    ok(keyg.encode() not in text and E["SERVE_ROOT"].encode() not in text,
       "... naming neither the session's key nor the host's root", text)
    req("DELETE", "/sessions/%s?purge=true" % SG, token=TOKEN)
else:
    print("# SKIP run on a removed container: DOCKER_HOST is not a unix socket")

# tenants' tokens
TA, TB = E.get("SERVE_TOKEN_A"), E.get("SERVE_TOKEN_B")
if TA:
    A, B = E["SERVE_TENANT_A"], E["SERVE_TENANT_B"]
    st, doc, _, _ = open_session(P + "ta", token=TA)
    tka = doc["token"] if st == 200 else ""
    ok(st == 200 and doc["session"]["tenant"] == A, "a tenant's token opens a session of its tenant", doc)
    st, doc, _, _ = open_session(P + "ta2", token=TA, tenant=B)
    ok(st == 403, "a tenant's token cannot open for another tenant", doc)
    st, doc, _, _ = req("GET", "/sessions", token=TB)
    ok(st == 200 and all(s["tenant"] == B for s in doc["sessions"]), "another tenant lists none of its sessions", doc)
    st, doc, _, _ = req("GET", "/sessions", token=TA)
    ok(st == 200 and [s["session_id"] for s in doc["sessions"]] == [P + "ta"], "the tenant lists its own", doc)
    st, doc, _, _ = op(P + "ta", TB, "exec", command="true")
    ok(st == 404, "another tenant's token on the session: 404, as no session", doc)
    st, doc, _, _ = op(P + "ta", TA, "exec", command="echo hi")
    ok(st == 200 and doc["output"] == "hi\n", "the tenant's token reaches its session", doc)
    st, doc, _, _ = op(S1, TA, "exec", command="true")
    ok(st == 404, "a tenant's token does not reach the service's sessions", doc)
    st, doc, _, _ = open_session(P + "ta", token=TB, reuse=True)
    ok(st == 409, "another tenant cannot take the id", doc)
    st, doc, _, _ = req("PUT", "/policy", {"max_sessions": 50}, TA)
    ok(st == 403, "a tenant's token cannot change the policy", doc)
    st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S1, {"path": "."}, TA)
    ok(st == 404, "a tenant's token does not read the service's workspaces", doc)
    req("DELETE", "/sessions/%s" % (P + "ta"), token=tka)

# 17. close, the archive
st, doc, text, _ = req("DELETE", "/sessions/%s" % S1, token=tok1)
ok(st == 204 and text == b"", "DELETE is 204 with an empty body", (st, text))
st, doc, _, _ = req("GET", "/sessions/%s" % S1, token=tok1)
ok(st == 401, "the token of a closed session is worth nothing", doc)
st, doc, _, _ = op(S1, TOKEN, "exec", command="true")
ok(st == 404, "the service token on a closed session: 404", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S1, {"path": "."}, TOKEN)
ok(st == 200 and any(e["name"] == "notes" and e["is_dir"] for e in doc), "the archive lists the kept workspace", doc)
ok(st == 200 and doc and doc[0]["is_dir"], "archive rows: directories first", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S1, {"path": "notes"}, TOKEN)
ok(st == 200 and plain(doc) == [{"name": "a.txt", "path": "notes/a.txt", "is_dir": False, "size": 2}],
   "archive paths are relative to the workspace", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/read_bytes" % S1, {"path": "/workspace/notes/a.txt"}, TOKEN)
ok(st == 200 and base64.b64decode(doc["content_b64"]) == b"x\n", "archive read_bytes of /workspace/...", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/read" % S1, {"path": "three.txt", "offset": 0, "limit": 1}, TOKEN)
ok(st == 200 and doc["content"].startswith("l1\n\n[... 2 more lines."), "archive read slices as the live read", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/read_bytes" % S1, {"path": "../x"}, TOKEN)
ok(st == 400 and detail(doc) == "Path '../x' is outside the workspace", "archive ../x: 400", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/read_bytes" % S1, {"path": "nope"}, TOKEN)
ok(st == 404 and detail(doc) == "No such file: nope", "archive missing file: 404", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/read_bytes" % S1, {"path": "big.txt"}, TOKEN)
ok(st == 400 and detail(doc) == "File is %d bytes, over the %s-byte read limit" % (big, E["SERVE_MAX_READ"]),
   "archive read_bytes over the read limit: 400 in sandboxd's words, the file's size said", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S1, {"path": "nodir"}, TOKEN)
ok(st == 404 and detail(doc) == "No such directory: nodir", "archive ls of a missing directory: 404", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % (P + "never"), {"path": "."}, TOKEN)
ok(st == 404 and detail(doc) == "No workspace for session: %snever" % P, "archive of an unknown id: 404", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S1, {"path": "."}, tok2)
ok(st == 401, "the archive needs the service token", doc)

# generation B's attach
st, doc, _, _ = open_session(P + "never-was", attach=True)
ok(st == 404 and detail(doc) == "Nothing to attach to: %snever-was" % P, "attach to nothing: 404", doc)
st, doc, _, _ = req("POST", "/sessions", {"attach": True}, TOKEN)
ok(st == 400, "attach without a session_id: 400", doc)
st, doc, _, _ = open_session(S1, attach=True)
tok1c = doc["token"] if st == 200 else ""
ok(st == 200 and doc["session"]["session_id"] == S1, "attach to a kept workspace: the session again", doc)
req("DELETE", "/sessions/%s" % S1, token=tok1c)

# 18. reopen: the files come back; purge
st, doc, _, _ = open_session(S1, reuse=True)
tok1c = doc["token"] if st == 200 else ""
st, doc, _, _ = op(S1, tok1c, "read_bytes", path="notes/a.txt")
ok(st == 200 and base64.b64decode(doc["content_b64"]) == b"x\n", "reopened after close, the files are back", doc)
st, doc, _, _ = req("DELETE", "/sessions/%s?purge=true" % S1, token=tok1c)
ok(st == 204, "DELETE ?purge=true: 204", doc)
st, doc, _, _ = req("POST", "/workspaces/%s/ls" % S1, {"path": "."}, TOKEN)
ok(st == 404, "after a purge the archive has nothing: 404", doc)
st, doc, _, _ = req("DELETE", "/sessions/%s?purge=maybe" % S2, token=tok2)
ok(st == 422, "purge=maybe: 422", doc)
req("DELETE", "/sessions/%s?purge=true" % S2, token=tok2)
for sid in (P + "q1", P + "race"):
    req("DELETE", "/sessions/%s?purge=true" % sid, token=TOKEN)

# A small fuzzer: random bodies of every shape to every route, random ids
# and bytes; never a 5xx but the engine's 502, never a crash, and the
# service answers the same afterwards.
# issue 20: labels, durability and expires_at on the wire
import calendar


def rfc3339(t):
    """Unix seconds of an RFC 3339 time in UTC (sbxcat writes ...Z)."""
    return calendar.timegm(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ"))


ROOT = E["SERVE_ROOT"]
CAFE = "caf\u00e9 \U0001F408 \"q\" \\ = x"
LAB = {"env": "prod", "team": CAFE, "empty": "", "a/b.c_d-e": "x=y"}
SL = P + "lab"
st, doc, _, _ = open_session(SL, labels=LAB)
ok(st == 200 and doc["session"]["labels"] == LAB,
   "an open's labels come back exactly in its SessionInfo (unicode, empty, '=')", doc)
tokl = doc["token"] if st == 200 else TOKEN
ok(st == 200 and doc["session"]["durability"] == "persistent",
   "the default durability is persistent", doc)
st, pol, _, _ = req("GET", "/policy", token=TOKEN)
st, doc, _, _ = req("GET", "/sessions/" + SL, token=tokl)
ok(st == 200 and doc["labels"] == LAB, "GET /sessions/{id} gives the labels exactly", doc)
ok(st == 200 and not [k for k in doc["labels"] if k.lower().startswith("io.sbxcat")],
   "... and none of sbxcat's own", doc)
ok(st == 200 and isinstance(doc.get("expires_at"), str)
   and rfc3339(doc["expires_at"]) - int(doc["last_activity"]) == pol["idle_timeout"],
   "expires_at is last_activity + the idle timeout (%s s), RFC 3339" % pol.get("idle_timeout"), doc)
exp0 = doc.get("expires_at")
st, doc, _, _ = req("GET", "/sessions", token=TOKEN)
row = [r for r in doc["sessions"] if r["session_id"] == SL] if st == 200 else []
ok(row and row[0]["labels"] == LAB and row[0]["durability"] == "persistent"
   and row[0]["expires_at"] == exp0, "the list gives labels, durability, expires_at", row)
time.sleep(1.1)
op(SL, tokl, "exec", command="true")
st, doc, _, _ = req("GET", "/sessions/" + SL, token=tokl)
ok(st == 200 and rfc3339(doc["expires_at"]) > rfc3339(exp0),
   "an operation moves expires_at on", (exp0, doc))
st, doc, _, _ = open_session(SL, reuse=True)
ok(st == 200 and doc["session"]["labels"] == LAB, "a reuse without labels keeps them", doc)
st, doc, _, _ = open_session(SL, reuse=True, labels={"only": "one"})
ok(st == 200 and doc["session"]["labels"] == {"only": "one"}, "a reuse with labels replaces them", doc)
st, doc, _, _ = open_session(SL, reuse=True, durability="ephemeral")
ok(st == 409 and detail(doc) == ("Session %s is persistent. Close it with purge before "
                                 "opening it ephemeral." % SL),
   "a reuse asking ephemeral of a persistent session: 409", doc)
for bad, why in (({"io.sbxcat.tenant": "x"}, "label 'io.sbxcat.tenant': keys in 'io.sbxcat'"),
                 ({"IO.SbxCat.key": "x"}, "label 'IO.SbxCat.key'"),
                 ({"a b": "x"}, "label 'a b'"),
                 ({"nl": "a\nb"}, "label 'nl': a label's value holds a control character"),
                 ({"n": 1}, "label 'n': its value is not a string"),
                 ({"long": "v" * 257}, "label 'long': a label's value is longer than 256 bytes"),
                 ({"k%d" % i: "v" for i in range(33)}, "a session has at most 32 labels")):
    st, doc, _, _ = open_session(P + "labbad", labels=bad)
    d = doc.get("detail") if isinstance(doc, dict) else None
    ok(st == 422 and isinstance(d, list) and d[0]["loc"] == ["body", "labels"]
       and d[0]["msg"].startswith(why), "bad labels are 422 naming them: %s" % why, doc)
st, doc, _, _ = open_session(P + "labbad", labels=["x"])
ok(st == 422, "labels that are not an object: 422", doc)
st, doc, _, _ = open_session(P + "labbad", durability="forever")
ok(st == 422, "a durability that is neither: 422", doc)
st, doc, _, _ = req("GET", "/sessions/" + P + "labbad", token=TOKEN)
ok(st == 404, "the refused opens opened nothing", doc)
# ephemeral: its DELETE takes the workspace, purge or not
SE = P + "eph"
st, doc, _, _ = open_session(SE, durability="ephemeral")
toke = doc["token"] if st == 200 else TOKEN
ok(st == 200 and doc["session"]["durability"] == "ephemeral", "an ephemeral open", doc)
key_e = (key_of(E["SERVE_ROOT"], SE) or "none") if st == 200 else "none"
st, doc, _, _ = op(SE, toke, "write", path="f.txt", content_b64=b64(b"x"))
wse = os.path.join(ROOT, key_e, "workspace")
ok(os.path.isfile(os.path.join(wse, "f.txt")), "it writes into its workspace", doc)
st, doc, _, _ = open_session(SE, reuse=True, durability="persistent")
ok(st == 409 and "is ephemeral" in (detail(doc) or ""), "a reuse asking persistent of it: 409", doc)
st, _, _, _ = req("DELETE", "/sessions/" + SE, token=toke)
ok(st == 204, "its DELETE (no purge) is 204")
ok(not os.path.exists(os.path.join(ROOT, key_e)), "... and its workspace and record are gone")
SP = P + "per"
st, doc, _, _ = open_session(SP, durability="persistent")
tokp = doc["token"] if st == 200 else TOKEN
key_p = (key_of(E["SERVE_ROOT"], SP) or "none") if st == 200 else "none"
op(SP, tokp, "write", path="f.txt", content_b64=b64(b"x"))
req("DELETE", "/sessions/" + SP, token=tokp)
ok(os.path.isfile(os.path.join(ROOT, key_p, "workspace", "f.txt")),
   "a persistent session's DELETE keeps its workspace")
req("DELETE", "/sessions/%s?purge=true" % SP, token=TOKEN)
req("DELETE", "/sessions/%s?purge=true" % SL, token=TOKEN)

import random
rnd = random.Random(int(E.get("SERVE_FUZZ_SEED", "1")))
FZ = P + "fz"
st, doc, _, _ = open_session(FZ)
tokf = doc["token"] if st == 200 else TOKEN


def junk(depth=0):
    k = rnd.randrange(9 if depth < 2 else 6)
    if k == 0:
        return None
    if k == 1:
        return rnd.random() < 0.5
    if k == 2:
        return rnd.randint(-2**63, 2**63 - 1)
    if k == 3:
        return rnd.random() * 1e300
    if k == 4:
        return "".join(chr(rnd.randrange(0x20, 0x3000)) for _ in range(rnd.randrange(40)))
    if k == 5:
        return "../" * rnd.randrange(5) + "x" * rnd.randrange(300)
    if k == 6:
        return [junk(depth + 1) for _ in range(rnd.randrange(4))]
    return {f: junk(depth + 1) for f in rnd.sample(FIELDS, rnd.randrange(1 if k == 7 else len(FIELDS)))}


FIELDS = ["path", "command", "timeout_seconds", "offset", "limit", "content_b64", "old_string",
          "new_string", "replace_all", "pattern", "glob", "ignore_hidden", "argv", "env", "cwd", "run_id",
          "session_id", "runtime", "tenant", "reuse", "attach", "labels", "durability",
          "max_sessions", "mem_limit", "runtimes", "default_runtime"]
OPS = ["exec", "read", "read_bytes", "write", "edit", "exists", "ls", "glob", "grep", "run"]
bad5xx = []
for i in range(300):
    kind = rnd.randrange(4)
    if kind == 0:
        body = {f: junk() for f in rnd.sample(FIELDS, rnd.randrange(1, 6))}
        path = "/sessions/%s/%s" % (FZ, rnd.choice(OPS))
        st, doc, text, _ = req("POST", path, raw=json.dumps(body), token=tokf)
    elif kind == 1:
        raw = bytes(rnd.randrange(256) for _ in range(rnd.randrange(200)))
        path = "/sessions/%s/%s" % (FZ, rnd.choice(OPS))
        st, doc, text, _ = req("POST", path, raw=raw, token=tokf)
    elif kind == 2:
        sid = "".join(rnd.choice("aZ09._-%/~:") for _ in range(rnd.randrange(1, 80)))
        path = "/sessions/%s/%s" % (sid, rnd.choice(OPS))
        st, doc, text, _ = req("POST", path, {"path": "x", "command": "true"}, token=rnd.choice([TOKEN, tokf, "x"]))
    else:
        body = {f: junk() for f in rnd.sample(FIELDS, rnd.randrange(1, 6))}
        where = rnd.choice(["/sessions", "/policy"])
        if where == "/sessions":
            body["session_id"] = "bad id %d" % i  # checked, never opened
        st, doc, text, _ = req("POST" if where == "/sessions" else "PUT", where,
                               raw=json.dumps(body), token=TOKEN)
    if st >= 500 and st != 502:
        bad5xx.append((path if kind < 3 else "open/policy", st, text[:200]))
ok(not bad5xx, "300 random requests: no 5xx but the engine's 502", bad5xx[:5])
st, doc, _, _ = req("GET", "/healthz")
ok(st == 200, "the service answers after the fuzzer")
st, doc, _, _ = op(FZ, tokf, "exec", command="echo still")
ok(st == 200 and doc["output"] == "still\n", "... and its session still runs commands", doc)
req("PUT", "/policy", {"max_sessions": 100, "max_sessions_per_tenant": 100, "execute_timeout": 60,
                       "max_read_bytes": int(E["SERVE_MAX_READ"])}, TOKEN)
req("DELETE", "/sessions/%s?purge=true" % FZ, token=TOKEN)

# routes
st, doc, _, _ = req("GET", "/no/such/route")
ok(st == 404, "an unknown route: 404", doc)
st, doc, _, _ = req("PATCH", "/healthz")
ok(st == 405, "a known route with another method: 405", doc)
st, doc, text, r = req("GET", "/metrics", token=TOKEN)
ok(st == 200 and b"sbxcat_http_requests_total" in text and b"sbxcat_engine_errors_total" in text,
   "metrics in Prometheus text", text[:300])
plan()

#!/usr/bin/env python3
"""serve_who.py - who acted, through `sbxcat serve` (docs/serve.md, "Agent
and run"): the X-Sandbox-Agent and X-Sandbox-Run headers, the session's
defaults from POST /sessions, the service's --agent/--run, and what the
audit and the events then say.  tests/t-serve-who.sh starts the service
and runs one phase at a time (a restart between them).  Prints TAP.

Environment: SERVE_PORT, SERVE_TOKEN, SERVE_ROOT (the workspace root),
SERVE_PREFIX (session ids unique to the run), SBXCAT (the binary),
WHO_SQL (a command that runs its one argument as SQL on the test's
database and prints the rows), WHO_STATE (a file the phases share).
"""
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import time

from taplib import ok, plan
from wirehost import key_of

E = os.environ
PORT, TOKEN, P = int(E["SERVE_PORT"]), E["SERVE_TOKEN"], E["SERVE_PREFIX"]
AH, RH = "X-Sandbox-Agent", "X-Sandbox-Run"


def req(method, path, body=None, token=TOKEN, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    h = {"Content-Type": "application/json", "X-Sandbox-Token": token}
    h.update(headers or {})
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers=h)
    r = c.getresponse()
    text = r.read()
    c.close()
    try:
        return r.status, json.loads(text) if text else None
    except ValueError:
        return r.status, text


def raw(method, path, header_lines, body=b"", token=TOKEN):
    """A request with header lines of raw bytes (a value http.client
    would refuse): (status, body bytes), status 0 when the service closed
    the connection without an answer."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=60)
    head = b"%s %s HTTP/1.1\r\nHost: x\r\nX-Sandbox-Token: %s\r\n" % (
        method.encode(), path.encode(), token.encode())
    for h in header_lines:
        head += h + b"\r\n"
    head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    head += b"Connection: close\r\n\r\n"
    s.sendall(head + body)
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    s.close()
    if not data.startswith(b"HTTP/1."):
        return 0, data
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[-1]


def sql(q):
    return subprocess.run([E["WHO_SQL"], q], capture_output=True, text=True,
                          check=True).stdout.strip()


def rows(key, where=""):
    """(op, agent, run) of key's rows, in seq order."""
    out = sql("SELECT op || '|' || coalesce(agent_ref, '-') || '|' || "
              "coalesce(run_ref, '-') FROM sandbox_operations WHERE "
              "session_key = '%s' %s ORDER BY seq" % (key, where))
    return [tuple(line.split("|")) for line in out.splitlines() if line]


def settle(key, want, timeout=20):
    """key's rows once there are want of them (the writer commits in
    groups), or what there is after timeout."""
    end = time.time() + timeout
    while True:
        r = rows(key)
        if len(r) >= want or time.time() > end:
            return r
        time.sleep(0.1)


def rows_of(text):
    """audit ls --json's rows (its last line is the page's cursor)."""
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in lines if "id" in r]


def exec_(sid, tok, command, headers=None):
    return req("POST", "/sessions/%s/exec" % sid, {"command": command}, tok, headers)


def state_load():
    with open(E["WHO_STATE"]) as f:
        return json.load(f)


def state_save(st):
    with open(E["WHO_STATE"], "w") as f:
        json.dump(st, f)


def valid_id(b):
    """svc_id_check's rule, as the service sees a header's value
    (a NUL ends it): 1 to 200 bytes of UTF-8, no control character (C0,
    DEL, C1) and no bidirectional control."""
    b = b.split(b"\0", 1)[0]
    if not 1 <= len(b) <= 200:
        return False
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    bidi = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A)) | {0x200E, 0x200F, 0x061C}
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or ord(c) in bidi for c in s)


def phase1():
    s1, s2 = P + "who1", P + "who2"
    st = {}
    # An open with defaults in its body and an agent header: the open's
    # own row is the header's agent and the body's run.
    code, doc = req("POST", "/sessions",
                    {"session_id": s1, "agent": "agent-default", "run": "run-default"},
                    headers={AH: "agent-open"})
    ok(code == 200, "an open with agent and run in its body", doc)
    st["t1"] = t1 = doc["token"]
    st["k1"] = k1 = key_of(E["SERVE_ROOT"], s1)
    with open(os.path.join(E["SERVE_ROOT"], k1, "wire.json")) as f:
        w = json.load(f)
    ok(w.get("agent") == "agent-default" and w.get("run") == "run-default",
       "... the defaults are kept with the session's wire record", w)
    # Requests on it: none, both, one header.
    exec_(s1, t1, "true")
    exec_(s1, t1, "true", {AH: "agent-hdr", RH: "run-hdr"})
    exec_(s1, t1, "true", {RH: "run-only"})
    # The service's token acts on the session too: the defaults still hold.
    exec_(s1, TOKEN, "true")
    r = settle(k1, 5)
    ok(r[:5] == [("open", "agent-open", "run-default"),
                 ("execute", "agent-default", "run-default"),
                 ("execute", "agent-hdr", "run-hdr"),
                 ("execute", "agent-default", "run-only"),
                 ("execute", "agent-default", "run-default")],
       "rows: header over the session's default, field by field", r)
    # A session opened without defaults: the service's --agent/--run.
    code, doc = req("POST", "/sessions", {"session_id": s2})
    st["t2"] = t2 = doc["token"]
    st["k2"] = k2 = key_of(E["SERVE_ROOT"], s2)
    exec_(s2, t2, "true")
    exec_(s2, t2, "true", {AH: "agent-hdr2"})
    with open(os.path.join(E["SERVE_ROOT"], k2, "wire.json")) as f:
        w = json.load(f)
    ok("agent" not in w and "run" not in w,
       "an open without defaults keeps none (the older form of the file)", w)
    r = settle(k2, 3)
    ok(r == [("open", "serve-agent", "serve-run"),
             ("execute", "serve-agent", "serve-run"),
             ("execute", "agent-hdr2", "serve-run")],
       "without a header or a session default: serve --agent and --run", r)
    # Found by the auditor's filters.
    out = subprocess.run([E["SBXCAT"], "audit", "ls", "--agent", "agent-hdr", "--run",
                          "run-hdr", "--json"], capture_output=True, text=True)
    found = rows_of(out.stdout)
    ok(out.returncode == 0 and len(found) == 1 and found[0].get("session") == k1
       and found[0].get("agent") == "agent-hdr" and found[0].get("run") == "run-hdr",
       "sbxcat audit ls --agent --run finds the header's row, and only it",
       out.stdout + out.stderr)
    out = subprocess.run([E["SBXCAT"], "audit", "ls", "--run", "run-default", "--json"],
                         capture_output=True, text=True)
    found = rows_of(out.stdout)
    ok(len(found) == 3, "... --run alone finds the session default's rows (3)", out.stdout)

    # Events show who acted; sandboxd's SessionEvent ignores extra keys.
    code, doc = req("GET", "/sessions/%s/events" % s1, token=t1)
    ev = doc["events"] if code == 200 else []
    ok(code == 200 and [(e["op"], e["agent"], e["run"]) for e in ev[:3]] ==
       [("open", "agent-open", "run-default"), ("exec", "agent-default", "run-default"),
        ("exec", "agent-hdr", "run-hdr")],
       "events show each event's agent and run", doc)
    ok(all(set(("seq", "at", "op", "target", "ok", "detail", "duration_ms")) <= set(e)
           for e in ev), "... beside sandboxd's fields", ev)
    code, doc = req("GET", "/sessions/%s/events" % s2, token=t2, headers={AH: "x"})
    ok(code == 200 and doc["events"][0]["agent"] == "serve-agent",
       "... the service's default shows as the row's agent", doc)

    # Bad values: 422 naming the header; nothing runs, nothing is recorded.
    before = len(settle(k1, 5))
    bad = [
        ("empty", [b"X-Sandbox-Agent: "], AH),
        ("201 bytes", [b"X-Sandbox-Run: " + b"r" * 201], RH),
        ("a control character", [b"X-Sandbox-Agent: a\x01b"], AH),
        ("DEL", [b"X-Sandbox-Run: a\x7fb"], RH),
        ("bytes that are not UTF-8", [b"X-Sandbox-Agent: caf\xe9"], AH),
        ("a C1 control in UTF-8", [b"X-Sandbox-Agent: a\xc2\x85b"], AH),
        ("a bidirectional control", [b"X-Sandbox-Run: a\xe2\x80\xaeb"], RH),
        ("repeated with different values", [b"X-Sandbox-Agent: one",
                                            b"X-Sandbox-Agent: two"], AH),
        ("repeated, different case, different values",
         [b"X-Sandbox-Run: one", b"x-sandbox-run: two"], RH),
    ]
    for i, (what, lines, name) in enumerate(bad):
        body = json.dumps({"command": "touch ran-%d" % i}).encode()
        code, text = raw("POST", "/sessions/%s/exec" % s1, lines, body, t1)
        try:
            d = json.loads(text)["detail"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            d = {}
        ok(code == 422 and d.get("loc") == ["header", name],
           "a header %s: 422 naming %s" % (what, name), text)
    code, _ = raw("POST", "/sessions/%s/exec" % s1,
                  [b"X-Sandbox-Agent: same", b"X-Sandbox-Agent: same"],
                  json.dumps({"command": "true"}).encode(), t1)
    ok(code == 200, "a header repeated with the same value is one value")
    # libmicrohttpd 0.9.75 hands a value on as a C string: a NUL ends it
    # (and is never recorded).  The platform's client cannot send one
    # (h11 refuses it).
    code, text = raw("POST", "/sessions/%s/exec" % s1, [b"X-Sandbox-Agent: ag\x00ent"],
                     json.dumps({"command": "true"}).encode(), t1)
    ok(code in (200, 400, 422), "a header with a NUL byte: answered (%d)" % code, text)
    if code == 200:
        before += 1
    ok(not any(os.path.exists(os.path.join(E["SERVE_ROOT"], k1, "workspace", "ran-%d" % i))
               for i in range(len(bad))), "... no refused command ran")
    r = settle(k1, before + 1)
    ok(len(r) == before + 1 and ("execute", "same", "run-default") in r[-2:] and
       all(a != "ag\x00ent" for _, a, _ in r),
       "... and only the accepted requests have rows", r[before - 1:])
    code, text = raw("POST", "/sessions", [b"X-Sandbox-Agent: a\nb"],
                     json.dumps({"session_id": P + "never"}).encode())
    ok(code in (400, 422), "an open with a bad header is refused (%d)" % code, text)
    code, text = raw("POST", "/sessions", [b"X-Sandbox-Agent: a\x02"],
                     json.dumps({"session_id": P + "never"}).encode())
    ok(code == 422 and key_of(E["SERVE_ROOT"], P + "never") is None,
       "... 422, and no session is opened", text)
    code, doc = req("POST", "/sessions", {"session_id": P + "never", "agent": "x" * 201})
    ok(code == 422 and doc["detail"][0]["loc"] == ["body", "agent"],
       "an open's body agent over 200 bytes: 422 naming it", doc)
    code, doc = req("POST", "/sessions", {"session_id": P + "never", "run": ""})
    ok(code == 422 and doc["detail"][0]["loc"] == ["body", "run"],
       "an open's empty body run: 422 naming it", doc)
    code, doc = req("POST", "/sessions", {"session_id": P + "never", "run": 7})
    ok(code == 422 and doc["detail"][0]["loc"] == ["body", "run"],
       "an open's run that is not a string: 422", doc)
    code, doc = req("GET", "/healthz", headers={AH: "x" * 201})
    ok(code == 422, "every route checks the headers (/healthz)", doc)
    code, doc = req("GET", "/healthz", token="wrong", headers={AH: "ok-agent"})
    ok(code == 200, "... and takes good ones")
    code, doc = req("GET", "/sessions/%s" % s1, token="wrong", headers={AH: ""})
    ok(code == 401, "a wrong token is 401 before the headers are looked at", doc)
    st["before_restart"] = len(settle(k1, before + 1))
    state_save(st)


def fuzz():
    """Random bytes as the headers' values, on a quick route that records
    (a read of a missing file): the service answers every one, never with
    5xx, and accepts only values svc_id_check would."""
    st = state_load()
    s1, t1 = P + "who1", st["t1"]
    seed = int(E.get("WHO_FUZZ_SEED", "1"))
    rnd = random.Random(seed)
    print("# fuzz seed %d (WHO_FUZZ_SEED=N repeats it)" % seed)
    codes, wrong = {}, []
    body = json.dumps({"path": "missing.txt"}).encode()
    for i in range(int(E.get("WHO_FUZZ_N", "400"))):
        k = rnd.choice([1, 5, 40, 199, 200, 201, 300, 2000])
        v = bytes(rnd.randrange(256) for _ in range(rnd.randrange(k + 1)))
        if rnd.random() < 0.5:  # mostly printable, to pass sometimes
            v = bytes(rnd.randrange(0x21, 0x7f) for _ in range(rnd.randrange(k + 1))) + \
                (v[:1] if rnd.random() < 0.3 else b"")
        name = rnd.choice([b"X-Sandbox-Agent", b"X-Sandbox-Run", b"x-sandbox-agent"])
        code, text = raw("POST", "/sessions/%s/read" % s1, [name + b": " + v], body, t1)
        codes[code] = codes.get(code, 0) + 1
        # Another header line, or none; spaces and tabs at the ends,
        # which libmicrohttpd trims in part: no verdict but an answer.
        cut = v.split(b"\0", 1)[0]
        broken = b"\r" in v or b"\n" in v or cut != cut.strip(b" \t")
        if code >= 500 or code == 0 or (not broken and (code == 200) != valid_id(v)):
            wrong.append((code, v[:60]))
    print("# fuzz statuses %s" % sorted(codes.items()))
    ok(not wrong, "random header values: each answered, 200 only for a valid id, "
       "422 for an invalid one", wrong[:10])
    code, _ = req("GET", "/healthz")
    ok(code == 200, "... and the service still answers")


def phase2():
    """After a restart of the service without --agent/--run."""
    st = state_load()
    s1, s2 = P + "who1", P + "who2"
    k1, k2 = st["k1"], st["k2"]
    have = len(rows(k1))
    exec_(s1, st["t1"], "true")
    r = settle(k1, have + 1)
    ok(r[-1] == ("execute", "agent-default", "run-default"),
       "after a restart the session's defaults still apply", r[-2:])
    have2 = len(rows(k2))
    exec_(s2, st["t2"], "true")
    r = settle(k2, have2 + 1)
    ok(r[-1] == ("execute", "-", "-"),
       "... and a service started without --agent records none", r[-1:])
    # A reuse naming new defaults replaces them; one naming none keeps them.
    code, doc = req("POST", "/sessions", {"session_id": s1, "reuse": True,
                                          "agent": "agent-2"})
    ok(code == 200, "a reuse with a new agent", doc)
    t = doc["token"]
    exec_(s1, t, "true")
    code, doc = req("POST", "/sessions", {"session_id": s1, "reuse": True})
    exec_(s1, doc["token"], "true")
    r = settle(k1, have + 5)
    ok(r[-4:] == [("open", "agent-2", "run-default"), ("execute", "agent-2", "run-default"),
                  ("open", "agent-2", "run-default"), ("execute", "agent-2", "run-default")],
       "... replaces the agent, keeps the run; a reuse naming none keeps both", r[-4:])
    # Closed, then opened again without defaults: the new session has none.
    req("DELETE", "/sessions/%s" % s1, token=TOKEN)
    code, doc = req("POST", "/sessions", {"session_id": s1})
    exec_(s1, doc["token"], "true")
    r = settle(k1, have + 8)
    ok(r[-1] == ("execute", "-", "-"),
       "a session closed and opened anew does not inherit the old defaults", r[-3:])
    req("DELETE", "/sessions/%s?purge=true" % s1, token=TOKEN)
    req("DELETE", "/sessions/%s?purge=true" % s2, token=TOKEN)


def main():
    {"phase1": phase1, "fuzz": fuzz, "phase2": phase2}[sys.argv[1]]()
    plan()


if __name__ == "__main__":
    main()

"""The HTTP side of t-e2b-api.sh: E2B's control plane on a real `sbxcat
serve` (docs/e2b.md, "Control plane" and "Lifecycle"), with the shapes the
E2B SDK's generated models require, tenants, paging, the lifecycle and
hostile inputs.  Run as: e2b_api.py PHASE (shapes, lifecycle, fuzz)."""
import datetime
import glob
import http.client
import json
import os
import random
import subprocess
import sys
import time
import urllib.parse

from taplib import diag, ok, plan

PORT = int(os.environ["E2B_PORT"])
TOKEN = os.environ["E2B_TOKEN"]
KA = os.environ["E2B_KEY_A"]
KB = os.environ["E2B_KEY_B"]
ROOT = os.environ["E2B_ROOT"]
DEP = os.environ["E2B_DEP"]
SQL = os.environ["E2B_SQL"]
TEMPLATE = os.environ["E2B_TEMPLATE"]
TAG = os.environ["E2B_TAG"]
RETENTION = int(os.environ["E2B_RETENTION"])
IDLE = int(os.environ["E2B_IDLE"])


def req(method, path, body=None, key=TOKEN, raw=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    h = {"X-API-KEY": key} if key else {}
    h.update(headers or {})
    data = raw if raw is not None else (
        json.dumps(body) if body is not None else None)
    if data is not None:
        h.setdefault("Content-Type", "application/json")
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    b = r.read()
    try:
        j = json.loads(b) if b else None
    except ValueError:
        j = None
    hdr = r.getheader("X-Next-Token")
    c.close()
    return r.status, j, hdr, b


def is_type(v, t):
    if t is int:
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, t)


SANDBOX = {"sandboxID": str, "templateID": str, "clientID": str,
           "envdVersion": str, "envdAccessToken": str}
DETAIL = {"templateID": str, "sandboxID": str, "clientID": str,
          "startedAt": str, "endAt": str, "envdVersion": str,
          "cpuCount": int, "memoryMB": int, "diskSizeMB": int,
          "metadata": dict, "state": str}


def shape(doc, want):
    if not isinstance(doc, dict):
        return False
    return all(k in doc and is_type(doc[k], t) for k, t in want.items())


def when(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def create(meta=None, timeout=None, key=TOKEN, v2=True, **kw):
    body = {"templateID": kw.pop("template", TEMPLATE)}
    if meta is not None:
        body["metadata"] = meta
    if timeout is not None:
        body["timeout"] = timeout
    body.update(kw)
    return req("POST", "/v2/sandboxes" if v2 else "/sandboxes", body, key=key)


def key_of(sid):
    for f in glob.glob(os.path.join(ROOT, "*", "wire.json")):
        try:
            if json.load(open(f))["id"] == sid:
                return os.path.basename(os.path.dirname(f))
        except (OSError, ValueError, KeyError):
            pass
    return None


def engine_state(sid):
    k = key_of(sid)
    if not k:
        return "no key"
    p = subprocess.run(["docker", "inspect", "-f", "{{.State.Status}}",
                        "sbxcat-%s-%s" % (DEP, k)],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "gone"


def envd(sid, token):
    return req("POST", "/process.Process/List", raw="{}", key=None,
               headers={"E2b-Sandbox-Id": sid, "X-Access-Token": token,
                        "Content-Type": "application/json"})


def sql(q):
    return subprocess.run([SQL, q], capture_output=True, text=True).stdout


def wait_for(pred, secs):
    end = time.time() + secs
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.5)
    return pred()


def list_all(query, key=TOKEN, limit=None, between=None):
    """Every page of GET /v2/sandboxes?query, by X-Next-Token."""
    got, tok, pages = [], None, 0
    while pages < 50:
        q = dict(query)
        if limit:
            q["limit"] = str(limit)
        if tok:
            q["nextToken"] = tok
        st, j, tok, b = req("GET", "/v2/sandboxes?" +
                            urllib.parse.urlencode(q, doseq=True), key=key)
        if st != 200:
            return None, st, b
        got += j
        pages += 1
        if between and pages == 1:
            between()
        if not tok:
            break
    return got, pages, None


def sdk_metadata(m):
    """The metadata query as the SDK builds it (URLSearchParams of the
    encodeURIComponent'd pairs)."""
    enc = {urllib.parse.quote(k, safe="-_.!~*'()"):
           urllib.parse.quote(v, safe="-_.!~*'()") for k, v in m.items()}
    return urllib.parse.urlencode(enc)


def phase_shapes():
    st, j, _, b = create({"tag": TAG, "who": "a b&c=d"}, 600)
    ok(st == 201 and shape(j, SANDBOX), "POST /v2/sandboxes: 201 Sandbox "
       "with every required field", b)
    ok(j and "domain" in j and j.get("alias") == TEMPLATE and
       j.get("trafficAccessToken") == j.get("envdAccessToken"),
       "... domain and alias as the model has them; trafficAccessToken "
       "the access token (the code interpreter's /contexts send it alone)", b)
    a = j["sandboxID"] if j else ""
    ta = j["envdAccessToken"] if j else ""
    ok(len(a) == 20 and a.isalnum() and a == a.lower(),
       "the sandboxID is a DNS label of 20 [a-z0-9]", a)
    st, j1, _, b = create({"tag": TAG}, None, v2=False,
                          template="code-interpreter-v1")
    ok(st == 201 and shape(j1, SANDBOX) and
       j1["templateID"] == "code-interpreter-v1",
       "POST /sandboxes (v1) with the SDK's default template: 201", b)
    s1 = j1["sandboxID"] if j1 else ""
    st, d, _, b = req("GET", "/sandboxes/" + s1)
    ok(st == 200 and 10 <= when(d["endAt"]) - when(d["startedAt"]) <= 17,
       "v1's default timeout is 15 s (endAt - startedAt)", b)
    req("DELETE", "/sandboxes/" + s1)

    st, d, _, b = req("GET", "/sandboxes/" + a)
    ok(st == 200 and shape(d, DETAIL), "GET /sandboxes/{id}: SandboxDetail "
       "with every required field", b)
    ok(d and d["metadata"] == {"tag": TAG, "who": "a b&c=d"} and
       d["state"] == "running" and d["sandboxID"] == a,
       "... its metadata and state running", b)
    ok(d and 595 <= when(d["endAt"]) - when(d["startedAt"]) <= 605,
       "... endAt is startedAt + the timeout", b)
    ok(d and d["cpuCount"] == 2 and d["memoryMB"] > 0 and
       d["lifecycle"] == {"autoResume": False, "onTimeout": "kill"},
       "... cpuCount, memoryMB and lifecycle", b)
    ok(d and when(d["startedAt"]) <= time.time() + 1,
       "... startedAt parses as a time", b)

    st, j, _, b = create({}, 10, template="nope")
    ok(st == 404 and j and j.get("code") == 404 and
       "template 'nope' not found; templates: " in j.get("message", "") and
       "code-interpreter-v1" in j["message"] and TEMPLATE in j["message"],
       "an unknown template: 404 naming the templates", b)

    # Three more of this run's tag, for the filters and the paging.
    ids = [a]
    for i in range(3):
        st, j, _, b = create({"tag": TAG, "n": str(i)}, 600)
        if st == 201:
            ids.append(j["sandboxID"])
    ok(len(ids) == 4, "four sandboxes of the tag", ids)
    st, j, _, b = req("GET", "/v2/sandboxes?metadata=" +
                      urllib.parse.quote(sdk_metadata({"tag": TAG})))
    got = sorted(x["sandboxID"] for x in (j or []))
    ok(st == 200 and got == sorted(ids) and
       all(shape(x, DETAIL) for x in j),
       "GET /v2/sandboxes by metadata as the SDK encodes it: the four, "
       "ListedSandbox shapes", b)
    st, j, _, b = req("GET", "/v2/sandboxes?metadata=" + urllib.parse.quote(
        sdk_metadata({"tag": TAG, "who": "a b&c=d"})))
    ok(st == 200 and [x["sandboxID"] for x in j] == [a],
       "... two pairs, a value with space, & and =: the one", b)
    st, j, _, b = req("GET", "/v2/sandboxes?state=paused&metadata=" +
                      urllib.parse.quote(sdk_metadata({"tag": TAG})))
    ok(st == 200 and j == [], "state=paused: none yet", b)
    st, j, _, b = req("GET", "/sandboxes?metadata=" +
                      urllib.parse.quote(sdk_metadata({"tag": TAG})))
    ok(st == 200 and sorted(x["sandboxID"] for x in j) == sorted(ids),
       "GET /sandboxes (v1): the running ones", b)

    # Paging: limit 1, a new one made between the pages.
    made = []

    def between():
        st, j, _, _ = create({"tag": TAG, "late": "1"}, 600)
        if st == 201:
            made.append(j["sandboxID"])
    got, pages, b = list_all({"metadata": sdk_metadata({"tag": TAG})},
                             limit=1, between=between)
    gid = [x["sandboxID"] for x in (got or [])]
    ok(got is not None and len(gid) == len(set(gid)) and
       set(ids) <= set(gid) and pages >= 4,
       "limit=1 pages by X-Next-Token: every one once, none missed, "
       "while one was made meanwhile (%s pages)" % pages, b or gid)
    starts = [when(x["startedAt"]) for x in got or []]
    ok(starts == sorted(starts, reverse=True), "... newest first", starts)
    got, pages, b = list_all({"metadata": sdk_metadata({"tag": TAG}),
                              "order": "asc"}, limit=2)
    gid = [x["sandboxID"] for x in (got or [])]
    ok(got is not None and set(gid) == set(ids + made) and
       len(gid) == len(set(gid)), "order=asc, limit=2: the same set", gid)

    # Tenants.
    st, j, _, b = create({"tag": TAG, "t": "a"}, 600, key=KA)
    ok(st == 201, "tenant A's key (e2b_<hex>) creates", b)
    sa = j["sandboxID"] if j else ""
    st, j, _, b = req("GET", "/v2/sandboxes", key=KB)
    ok(st == 200 and j == [], "tenant B lists nothing", b)
    for m, p, body in (("GET", "", None), ("DELETE", "", None),
                       ("POST", "/connect", {"timeout": 10}),
                       ("POST", "/pause", {}),
                       ("POST", "/timeout", {"timeout": 10})):
        st, j, _, b = req(m, "/sandboxes/" + sa + p, body, key=KB)
        ok(st == 404, "tenant B: %s /sandboxes/A%s is 404" % (m, p), b)
    st, j, _, b = req("GET", "/v2/sandboxes", key=KA)
    ok(st == 200 and [x["sandboxID"] for x in j] == [sa],
       "tenant A lists its own alone", b)
    st, j, _, b = req("GET", "/v2/sandboxes?metadata=t%3Da")
    ok(st == 200 and [x["sandboxID"] for x in j] == [sa],
       "the service token sees tenant A's", b)
    st, _, _, b = req("GET", "/v2/sandboxes", key="e2b_" + "0" * 40)
    ok(st == 401, "an unknown key: 401", b)
    st, _, _, b = req("GET", "/v2/sandboxes", key=None)
    ok(st == 401, "no key: 401", b)

    # A wire session of sandboxd's is no E2B sandbox.
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    c.request("POST", "/sessions", body=json.dumps({"session_id": "w" + TAG}),
              headers={"X-Sandbox-Token": TOKEN,
                       "Content-Type": "application/json"})
    r = c.getresponse()
    wb = r.read()
    ok(r.status == 200, "a sandboxd session opens", wb)
    wtok = json.loads(wb).get("token", "") if r.status == 200 else ""
    st, _, _, b = req("GET", "/sandboxes/w" + TAG)
    ok(st == 404, "GET /sandboxes/{a sandboxd session}: 404", b)
    st, _, _, b = envd("w" + TAG, wtok)
    ok(st == 404, "envd on a sandboxd session, its own token: 404", b)

    p = subprocess.run(["docker", "inspect", "-f",
                        "{{.Config.WorkingDir}} {{range .Config.Env}}{{.}} {{end}}",
                        "sbxcat-%s-%s" % (DEP, key_of(a))],
                       capture_output=True, text=True)
    ok(p.stdout.startswith("/home/user ") and " HOME=/home/user " in
       " " + p.stdout, "the sandbox works in /home/user, its HOME", p.stdout)

    # Pause and connect.
    st, _, _, b = envd(a, ta)
    ok(st not in (401, 502), "envd reaches a running sandbox (%d)" % st, b)
    st, _, _, b = req("POST", "/sandboxes/%s/pause" % a)
    ok(st == 204, "pause: 204", b)
    ok(engine_state(a) == "paused", "... its container is paused",
       engine_state(a))
    st, j, _, b = req("POST", "/sandboxes/%s/pause" % a, {})
    ok(st == 409 and j and j["code"] == 409, "pause again: 409", b)
    st, d, _, b = req("GET", "/sandboxes/" + a)
    ok(st == 200 and d["state"] == "paused", "GET: state paused", b)
    st, j, _, b = req("GET", "/v2/sandboxes?state=paused&metadata=" +
                      urllib.parse.quote(sdk_metadata({"tag": TAG})))
    ok(st == 200 and [x["sandboxID"] for x in j] == [a],
       "state=paused lists it alone", b)
    st, j, _, b = req("GET", "/v2/sandboxes?state=running&state=paused&"
                      "metadata=" + urllib.parse.quote(sdk_metadata({"tag": TAG})))
    ok(st == 200 and a in [x["sandboxID"] for x in j] and
       len(j) == len(ids) + len(made) + 1,
       "state=running&state=paused lists them all", b)
    st, j, _, b = envd(a, ta)
    ok(st == 502 and j and "paused" in j.get("message", ""),
       "envd on a paused sandbox: 502, as E2B's proxy", b)
    ok(engine_state(a) == "paused", "... and it stays paused",
       engine_state(a))
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    c.request("POST", "/sessions/%s/exec" % a,
              body=json.dumps({"command": "echo hi"}),
              headers={"X-Sandbox-Token": TOKEN,
                       "Content-Type": "application/json"})
    r = c.getresponse()
    xb = r.read()
    xj = json.loads(xb) if xb[:1] == b"{" else {}
    ok(xj.get("exit_code") != 0 and "hi" not in xj.get("output", "hi"),
       "sandboxd's exec on it does not run (%d)" % r.status, xb)
    ok(engine_state(a) == "paused", "... nor wake it: still paused",
       engine_state(a))
    st, j, _, b = req("POST", "/v2/sandboxes/%s/connect" % a, {"timeout": 900})
    ok(st == 201 and shape(j, SANDBOX), "connect a paused one: 201 Sandbox", b)
    tb = j["envdAccessToken"] if j else ""
    ok(engine_state(a) == "running", "... its container runs again",
       engine_state(a))
    st, d, _, b = req("GET", "/sandboxes/" + a)
    ok(st == 200 and d["state"] == "running" and
       880 <= when(d["endAt"]) - time.time() <= 910,
       "... running, endAt now + connect's timeout", b)
    st, j, _, b = req("POST", "/sandboxes/%s/connect" % a, {"timeout": 10})
    ok(st == 200 and shape(j, SANDBOX), "connect a running one: 200", b)
    st, d, _, b = req("GET", "/sandboxes/" + a)
    ok(st == 200 and when(d["endAt"]) - time.time() > 800,
       "... connect never shortens endAt", b)
    for t, name in ((ta, "create's"), (tb, "connect's")):
        st, _, _, b = envd(a, t)
        ok(st not in (401, 502), "envd takes the %s token" % name, b)
    st, j, _, b = req("POST", "/sandboxes/%s/resume" % a, {"timeout": 30})
    ok(st == 200, "the deprecated resume of a running one: as connect", b)
    st, _, _, b = req("POST", "/sandboxes/%s/pause" % a, {"memory": False})
    ok(st == 204, "pause with memory false: 204", b)
    ok(engine_state(a) == "exited", "... hibernated: its container stopped",
       engine_state(a))
    st, j, _, b = req("POST", "/sandboxes/%s/connect" % a, {"timeout": 900})
    ok(st == 201 and engine_state(a) == "running",
       "connect wakes it: 201, running", b)

    # Timeout and refreshes.
    st, _, _, b = req("POST", "/sandboxes/%s/timeout" % a, {"timeout": 3600})
    st2, d, _, _ = req("GET", "/sandboxes/" + a)
    ok(st == 204 and 3590 <= when(d["endAt"]) - time.time() <= 3610,
       "timeout: 204, endAt now + 3600", b)
    st, _, _, b = req("POST", "/sandboxes/%s/timeout" % a, {"timeout": 700})
    st2, d, _, _ = req("GET", "/sandboxes/" + a)
    ok(st == 204 and 690 <= when(d["endAt"]) - time.time() <= 710,
       "timeout shortens too", b)
    st, _, _, b = req("POST", "/sandboxes/%s/refreshes" % a, {"duration": 5})
    st2, d, _, _ = req("GET", "/sandboxes/" + a)
    ok(st == 204 and when(d["endAt"]) - time.time() > 600,
       "refreshes: 204, never shortening", b)

    # Not served: 501 naming itself.
    for m, p in (("GET", "/sandboxes/%s/metrics" % a),
                 ("POST", "/sandboxes/%s/snapshots" % a),
                 ("GET", "/sandboxes/%s/logs" % a), ("GET", "/volumes"),
                 ("GET", "/templates/aliases/x"), ("GET", "/snapshots")):
        st, j, _, b = req(m, p, {} if m == "POST" else None)
        ok(st == 501 and j and j["code"] == 501 and
           "is not served by sbxcat" in j["message"],
           "%s %s: 501 not served" % (m, p.replace(a, "{id}")), b)

    # Kill.
    st, _, _, b = req("DELETE", "/sandboxes/" + ids[1])
    ok(st == 204, "DELETE: 204", b)
    st, _, _, b = req("DELETE", "/sandboxes/" + ids[1])
    ok(st == 404, "DELETE again: 404", b)
    st, _, _, b = req("GET", "/sandboxes/" + ids[1])
    ok(st == 404, "GET a killed one: 404", b)
    st, _, _, b = req("POST", "/sandboxes/%s/connect" % ids[1], {"timeout": 5})
    ok(st == 404, "connect a killed one: 404", b)
    ok(key_of(ids[1]) is None, "its workspace is gone with it")

    time.sleep(2)  # the audit writer's group commit
    rows = sql("select op || ':' || coalesce(detail, '') from "
               "sandbox_operations where wire_id = '%s' order by created_at"
               % ids[1]).split()
    ok(rows[:1] and rows[0].startswith("open:") and
       rows[-1].startswith("close:") and len(rows) == 2,
       "audit: the create's open row and the kill's close row", rows)
    rows = sql("select coalesce(detail, '') from sandbox_operations where "
               "wire_id = '%s' and op = 'open' order by created_at" % a)
    for d in ("e2b pause", "e2b resume", "e2b connect", "e2b timeout",
              "e2b pause, memory dropped"):
        ok(d in rows.splitlines(), "audit: a row '%s'" % d, rows)
    agent = sql("select count(*) from sandbox_operations where wire_id = '%s' "
                "and agent_ref = 'ag-%s'" % (a, TAG)).strip()
    st, _, _, b = req("POST", "/sandboxes/%s/timeout" % a, {"timeout": 700},
                      headers={"X-Sandbox-Agent": "ag-" + TAG,
                               "X-Sandbox-Run": "run-" + TAG})
    time.sleep(2)
    agent2 = sql("select count(*) from sandbox_operations where wire_id = '%s' "
                 "and agent_ref = 'ag-%s' and run_ref = 'run-%s'" % (a, TAG, TAG)).strip()
    ok(agent == "0" and agent2 == "1",
       "X-Sandbox-Agent and X-Sandbox-Run name the row", (agent, agent2))


def phase_lifecycle():
    # A deadline kills; with autoPause it pauses.
    st, j, _, b = create({"tag": TAG, "life": "kill"}, 2)
    k = j["sandboxID"] if st == 201 else ""
    st, j, _, b = create({"tag": TAG, "life": "pause"}, 2, autoPause=True)
    p = j["sandboxID"] if st == 201 else ""
    st, j, _, b = create({"tag": TAG, "life": "hib"}, 2, autoPause=True,
                         autoPauseMemory=False)
    hib = j["sandboxID"] if st == 201 else ""
    st, j, _, b = create({"tag": TAG, "life": "held"}, 600)
    h = j["sandboxID"] if st == 201 else ""
    st, j, _, b = create({"tag": TAG, "life": "idle"}, 600)
    i = j["sandboxID"] if st == 201 else ""
    ok(all((k, p, h, i)), "four sandboxes for the lifecycle")
    st, _, _, _ = req("POST", "/sandboxes/%s/pause" % h)
    held_at = time.time()
    ok(st == 204, "one paused by its client")
    ok(wait_for(lambda: req("GET", "/sandboxes/" + k)[0] == 404, 15),
       "past its timeout, the reaper kills it")
    ok(wait_for(lambda: (req("GET", "/sandboxes/" + p)[1] or {}).get(
        "state") == "paused", 15), "with autoPause, it is paused instead")
    ok(engine_state(p) == "paused", "... its container paused",
       engine_state(p))
    ok(wait_for(lambda: (req("GET", "/sandboxes/" + hib)[1] or {}).get(
        "state") == "paused" and engine_state(hib) == "exited", 15),
       "with autoPauseMemory false, paused by hibernation (stopped)",
       engine_state(hib))
    st, j, _, b = req("POST", "/sandboxes/%s/connect" % hib, {"timeout": 60})
    ok(st == 201 and engine_state(hib) == "running",
       "... and connect wakes it", b)
    time.sleep(max(0, IDLE * 2 + 2 - (time.time() - held_at)))
    ok(time.time() - held_at < RETENTION, "(still within the retention)")
    st, d, _, b = req("GET", "/sandboxes/" + h)
    ok(st == 200 and d["state"] == "paused" and engine_state(h) == "paused",
       "paused past twice the idle timeout: held, not stopped",
       (b, engine_state(h)))
    st, d, _, b = req("GET", "/sandboxes/" + i)
    ok(st == 200 and d["state"] == "running" and
       engine_state(i) in ("running", "paused"),
       "running past twice the idle timeout: not stopped, its deadline "
       "alone ends it", (b, engine_state(i)))
    st, j, _, b = req("POST", "/sandboxes/%s/connect" % p, {"timeout": 600})
    ok(st == 201, "connect the auto-paused one: 201", b)
    ok(wait_for(lambda: req("GET", "/sandboxes/" + h)[0] == 404,
                RETENTION + 15),
       "past its paused retention, the held one is killed")
    time.sleep(2)
    rows = sql("select op || ':' || coalesce(detail, '') from "
               "sandbox_operations where wire_id = '%s'" % p)
    ok("reap:e2b timeout: paused" in rows, "audit: the reaper's pause row",
       rows)
    rows = sql("select op from sandbox_operations where wire_id = '%s'" % k)
    ok("close" in rows.split(), "audit: the deadline's close row", rows)
    for x in (p, i, hib):
        req("DELETE", "/sandboxes/" + x)


def phase_fuzz():
    st, j, _, b = create({"tag": TAG, "f": "1"}, 600)
    sid = j["sandboxID"] if st == 201 else "x"
    cases = [
        ("POST", "/v2/sandboxes", "{", 400, "bad JSON"),
        ("POST", "/v2/sandboxes", "[]", 400, "a body that is an array"),
        ("POST", "/v2/sandboxes", "{}", 400, "no templateID"),
        ("POST", "/v2/sandboxes", json.dumps({"templateID": 5}), 400,
         "templateID not a string"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE,
             "metadata": {str(n): "v" for n in range(65)}}), 400,
         "65 metadata keys"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "metadata": {"k": "v" * 3000}}), 400,
         "a 3000-byte metadata value"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "metadata": {"k" * 300: "v"}}), 400,
         "a 300-byte metadata key"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "metadata": {"k": 5}}), 400,
         "a metadata value not a string"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "metadata": ["a"]}), 400,
         "metadata not an object"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "envVars": {"1BAD": "v"}}), 400,
         "an envVars name that is not one"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "envVars": {"A": 1}}), 400,
         "an envVars value not a string"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "timeout": -1}), 400, "timeout -1"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "timeout": 10 ** 12}), 400,
         "timeout 10^12"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "timeout": "5"}), 400, "timeout '5'"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "timeout": 1.5}), 400, "timeout 1.5"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "autoPause": "yes"}), 400,
         "autoPause not a boolean"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": TEMPLATE, "volumeMounts": [{"name": "v",
                                                       "path": "/v"}]}),
         400, "volumeMounts"),
        ("POST", "/v2/sandboxes", json.dumps(
            {"templateID": "x" * 200}), 400, "a 200-byte templateID"),
        ("POST", "/sandboxes/%s/timeout" % sid, json.dumps({}), 400,
         "timeout without timeout"),
        ("POST", "/sandboxes/%s/timeout" % sid, json.dumps({"timeout": -5}),
         400, "timeout -5"),
        ("POST", "/sandboxes/%s/timeout" % sid, "nope", 400,
         "timeout's bad JSON"),
        ("POST", "/sandboxes/%s/connect" % sid, json.dumps({"timeout": "x"}),
         400, "connect with a string timeout"),
        ("POST", "/sandboxes/%s/pause" % sid, json.dumps({"memory": 1}),
         400, "pause with memory 1"),
        ("GET", "/v2/sandboxes?limit=0", None, 400, "limit=0"),
        ("GET", "/v2/sandboxes?limit=-1", None, 400, "limit=-1"),
        ("GET", "/v2/sandboxes?limit=1e9", None, 400, "limit=1e9"),
        ("GET", "/v2/sandboxes?limit=1000000000", None, 400,
         "limit=1000000000"),
        ("GET", "/v2/sandboxes?limit=abc", None, 400, "limit=abc"),
        ("GET", "/v2/sandboxes?nextToken=zzz", None, 400, "a bad nextToken"),
        ("GET", "/v2/sandboxes?nextToken=1.UPPER", None, 400,
         "a nextToken with a bad id"),
        ("GET", "/v2/sandboxes?state=dead", None, 400, "state=dead"),
        ("GET", "/v2/sandboxes?metadata=a%3D%25zz", None, 400,
         "a metadata filter with a bad %-escape"),
        ("GET", "/v2/sandboxes?metadata=noequals", None, 400,
         "a metadata filter without ="),
        ("GET", "/v2/sandboxes?order=up", None, 400, "order=up"),
        ("GET", "/v2/sandboxes?startedAfter=yesterday", None, 400,
         "startedAfter not a time"),
    ]
    for bad in (sid.upper(), "a" * 100, "a.b", "a%2Fb", "a_b", "-a"):
        cases.append(("GET", "/sandboxes/" + bad, None, 404,
                      "id %r" % bad[:20]))
        cases.append(("DELETE", "/sandboxes/" + bad, None, 404,
                      "DELETE id %r" % bad[:20]))
        cases.append(("POST", "/sandboxes/%s/pause" % bad, "{}", 404,
                      "pause id %r" % bad[:20]))
    for m, p, raw, want, name in cases:
        st, j, _, b = req(m, p, raw=raw)
        if "%2F" in p:
            # Decoded to '/' before routing: no route has that many
            # segments, so the server's own 404 answers.
            ok(st == 404, "%s: 404 (no route)" % name, (st, b[:300]))
            continue
        ok(st == want and isinstance(j, dict) and j.get("code") == want and
           isinstance(j.get("message"), str),
           "%s: %d {code, message}" % (name, want), (st, b[:300]))
    st, j, _, b = req("GET", "/sandboxes/" + sid)
    ok(st == 200 and j["metadata"] == {"tag": TAG, "f": "1"},
       "the sandbox is as it was", b)
    # Random bodies and queries: never a 5xx.
    rnd = random.Random(int(os.environ.get("E2B_SEED", "1")))
    alphabet = '{}[]":,0123456789-.eE truefalsn\\u"abc\x00\xff'
    worst = 0
    for n in range(300):
        body = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 60)))
        path = rnd.choice(["/v2/sandboxes", "/sandboxes/%s/connect" % sid,
                           "/sandboxes/%s/timeout" % sid,
                           "/sandboxes/%s/refreshes" % sid,
                           "/v2/sandboxes/%s/connect" % sid])
        if rnd.random() < 0.3:
            body = json.dumps({"templateID": TEMPLATE,
                               "timeout": rnd.choice([None, -1, 0, 2 ** 40,
                                                      "x", [], {}]),
                               "metadata": rnd.choice([None, {}, [], "x",
                                                       {"a": None}])})
            path = "/v2/sandboxes"
        st, j, _, b = req("POST", path, raw=body.encode("utf-8", "replace"))
        worst = max(worst, st)
        if st == 201 and j and path == "/v2/sandboxes":
            req("DELETE", "/sandboxes/" + j["sandboxID"])
        if st >= 500:
            diag("fuzz %s %r: %d %r" % (path, body, st, b[:200]))
    ok(worst < 500, "300 random bodies: never a 5xx (worst %d)" % worst)
    for _ in range(100):
        q = "".join(rnd.choice("abc=&%2F0-9state=limit=nextToken=metadata=")
                    for _ in range(rnd.randint(0, 40)))
        st, _, _, b = req("GET", "/v2/sandboxes?" + q)
        worst = max(worst, st)
    ok(worst < 500, "100 random queries: never a 5xx")
    req("DELETE", "/sandboxes/" + sid)


{"shapes": phase_shapes, "lifecycle": phase_lifecycle,
 "fuzz": phase_fuzz}[sys.argv[1]]()
plan()

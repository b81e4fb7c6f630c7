"""The HTTP side of t-e2b-code.sh: E2B's /execute and /contexts on a real
`sbxcat serve`, as the code-interpreter SDK calls them (headers
E2b-Sandbox-Id, E2b-Sandbox-Port 49999, X-Access-Token), the sandbox
opened through the sandboxd front."""
import http.client
import json
import os
import random
import subprocess
import time
import urllib.parse

from taplib import ok, diag, plan
from wirehost import engine

E = os.environ
PORT, TOKEN = int(E["SERVE_PORT"]), E["SERVE_TOKEN"]


def raw(method, path, body, headers, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    return r


def open_session(runtime):
    r = raw("POST", "/v2/sandboxes", json.dumps({"templateID": runtime, "timeout": 3600}),
            {"X-API-KEY": TOKEN, "Content-Type": "application/json"}, 120)
    doc = json.loads(r.read() or b"null") or {}
    if r.status != 201:
        return doc.get("message", ""), None
    return doc.get("sandboxID", ""), doc.get("envdAccessToken", "")


def hdrs(sid, tok):
    return {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999",
            "X-Access-Token": tok, "Content-Type": "application/json"}


def execute(sid, tok, code, timeout=60, times=None, **kw):
    """(status, lines, raw body); times gets each line's arrival."""
    body = dict(kw)
    body["code"] = code
    r = raw("POST", "/execute", json.dumps(body), hdrs(sid, tok), timeout)
    if r.status != 200:
        return r.status, None, r.read()
    lines, t0 = [], time.monotonic()
    while True:
        line = r.readline()
        if not line:
            break
        if times is not None:
            times.append(time.monotonic() - t0)
        lines.append(json.loads(line))
    return r.status, lines, None


def typed(lines, t):
    return [x for x in lines or [] if x.get("type") == t]


def text_of(lines):
    for x in typed(lines, "result"):
        if x.get("is_main_result"):
            return x.get("text")
    return None


def stdout(lines):
    return "".join(x["text"] for x in typed(lines, "stdout"))


def err(lines):
    e = typed(lines, "error")
    return e[-1] if e else None


sid, tok = open_session(E["CODE_RUNTIME_PY"])
ok(tok, "a sandbox on the python runtime opened through the sandboxd front")

# Variables kept between executions; the last expression's value.
st, l1, _ = execute(sid, tok, "x = 41")
st2, l2, _ = execute(sid, tok, "x + 1")
ok(st == 200 and st2 == 200 and text_of(l2) == "42", "x = 41 then x + 1: result text 42", (l1, l2))
cnt = typed(l2, "number_of_executions")
ok(cnt and cnt[0]["execution_count"] == 2, "... execution_count 2", l2)
ok(l2 and l2[-1] == {"type": "end_of_execution"}, "... the stream ends with end_of_execution", l2)
ok(not typed(l1, "result"), "an assignment gives no result", l1)
st, l, _ = execute(sid, tok, "'abc'")
ok(text_of(l) == "abc", "a str's result text without its quotes, as E2B's server gives it", l)
st, l, _ = execute(sid, tok, "print('hi')\nimport sys; print('oops', file=sys.stderr)")
ok(stdout(l) == "hi\n", "print: a stdout line", l)
ok("".join(x["text"] for x in typed(l, "stderr")) == "oops\n", "... stderr apart", l)
ok(all(isinstance(x.get("timestamp"), str) for x in typed(l, "stdout")), "... each with a timestamp", l)
st, l, _ = execute(sid, tok, "y = 2\n1/0")
e = err(l)
ok(e and e["name"] == "ZeroDivisionError" and "division by zero" in e["value"]
   and "1/0" in e["traceback"] and "Traceback" in e["traceback"],
   "1/0: error ZeroDivisionError, its value and a traceback quoting the line", l)
ok(e and "interp-driver" not in e["traceback"] and "<cell" in e["traceback"],
   "... the traceback is the code's, not the driver's", e)
st, l, _ = execute(sid, tok, "def f(:\n pass")
ok(err(l) and err(l)["name"] == "SyntaxError", "a syntax error: SyntaxError", l)
st, l, _ = execute(sid, tok, "import subprocess; subprocess.run(['echo', 'from a child'])")
ok("from a child" in stdout(l), "a subprocess's output is the execution's stdout", l)
st, l, _ = execute(sid, tok, "import os; os.environ.get('E2B_T')", env_vars={"E2B_T": "v1"})
ok(text_of(l) == "v1", "env_vars are the execution's environment", l)
st, l, _ = execute(sid, tok, "import os; os.environ.get('E2B_T')")
ok(text_of(l) == "None" or not typed(l, "result"), "... and this execution's only", l)

# Streaming: a line printed before a sleep arrives before the end.
times = []
st, l, _ = execute(sid, tok, "import time\nprint('a', flush=True)\ntime.sleep(2)\nprint('b')", times=times)
ok(stdout(l) == "a\nb\n", "a sleep between two prints: both lines", l)
diag("first line after %.2f s, last after %.2f s" % (times[0], times[-1]) if times else "no lines")
if E.get("CODE_STREAMING") == "1":
    ok(times and times[1] < 1.5, "... the first stdout line streamed before the code finished", times)

# Contexts: variables of their own.
r = raw("POST", "/contexts", json.dumps({"language": "python", "cwd": "/tmp"}), hdrs(sid, tok))
ctx = json.loads(r.read() or b"null")
ok(r.status == 200 and isinstance(ctx, dict) and ctx.get("language") == "python"
   and ctx.get("cwd") == "/tmp" and ctx.get("id"), "POST /contexts: {id, language, cwd}", (r.status, ctx))
cid = ctx.get("id", "none") if isinstance(ctx, dict) else "none"
st, l, _ = execute(sid, tok, "x = 'ctx'\nimport os; os.getcwd()", context_id=cid)
ok(text_of(l) == "/tmp", "a context runs in its cwd", l)
st, l, _ = execute(sid, tok, "x")
ok(text_of(l) == "41", "the default context keeps its own x", l)
st, l, _ = execute(sid, tok, "x", context_id=cid)
ok(text_of(l) == "ctx", "... and the context its own", l)
r = raw("GET", "/contexts", None, hdrs(sid, tok))
lst = json.loads(r.read() or b"null")
ok(r.status == 200 and sorted(c["id"] for c in lst) == sorted(["default", cid]),
   "GET /contexts: the default and the one made", lst)
# The code interpreter's SDK sends its context calls with the create's
# trafficAccessToken alone (the same token), never X-Access-Token.
th = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999", "E2B-Traffic-Access-Token": tok}
r = raw("GET", "/contexts", None, th)
r.read()
ok(r.status == 200, "GET /contexts with E2B-Traffic-Access-Token alone: 200", r.status)
r = raw("GET", "/contexts", None, dict(th, **{"E2B-Traffic-Access-Token": "x" + tok}))
r.read()
ok(r.status == 401, "... and a wrong one: 401", r.status)
r = raw("POST", "/contexts/%s/restart" % cid, None, hdrs(sid, tok))
r.read()
st, l, _ = execute(sid, tok, "x", context_id=cid)
ok(r.status == 204 and err(l) and err(l)["name"] == "NameError", "a restarted context has lost its variables", (r.status, l))
r = raw("DELETE", "/contexts/%s" % cid, None, hdrs(sid, tok))
r.read()
st, l, body = execute(sid, tok, "1", context_id=cid)
ok(r.status == 204 and st == 404, "a deleted context is gone: 404", (r.status, st, body))
made = []
for i in range(9):
    r = raw("POST", "/contexts", "{}", hdrs(sid, tok))
    d = json.loads(r.read() or b"null")
    made.append((r.status, d.get("id") if isinstance(d, dict) else None))
ok([s for s, _ in made].count(200) == 7 and made[-1][0] == 429, "at most 8 contexts per sandbox, the default among them: 429", made)
for s, i in made:
    if i:
        raw("DELETE", "/contexts/%s" % i, None, hdrs(sid, tok)).read()

# The deadline (SANDBOXD_EXECUTE_TIMEOUT=4): interrupted, variables kept.
t0 = time.monotonic()
st, l, _ = execute(sid, tok, "while True: pass")
dt = time.monotonic() - t0
ok(err(l) and err(l)["name"] == "KeyboardInterrupt" and 3.5 < dt < 8,
   "while True: pass is interrupted at the deadline (%.1f s)" % dt, l)
st, l, _ = execute(sid, tok, "x")
ok(text_of(l) == "41", "... and its variables are kept", l)
# Code that swallows the interrupt: its interpreter stopped, said so.
t0 = time.monotonic()
st, l, _ = execute(sid, tok, "import time\nwhile True:\n try:\n  time.sleep(0.05)\n except BaseException: pass")
dt = time.monotonic() - t0
ok(err(l) and err(l)["name"] == "TimeoutError" and "variables" in err(l)["value"] and dt < 12,
   "code that ignores the interrupt: stopped with its interpreter, said so (%.1f s)" % dt, l)
st, l, _ = execute(sid, tok, "x")
notice = "".join(x["text"] for x in typed(l, "stderr"))
ok(err(l) and err(l)["name"] == "NameError" and "variables are gone" in notice,
   "the next call works in a new interpreter and says the variables are gone", l)
st, l, _ = execute(sid, tok, "x = 7")
st, l, _ = execute(sid, tok, "x")
ok(text_of(l) == "7" and not typed(l, "stderr"), "... said once; the new interpreter keeps variables", l)

# Pause and unpause of the container: the interpreter survives.
est, rows = engine("GET", "/containers/json?filters=" + urllib.parse.quote(json.dumps(
    {"label": ["io.sbxcat.deployment=" + E["CODE_DEP"]], "ancestor": [E["CODE_IMAGE"]]})))
ok(est == 200 and len(rows) == 1, "the sandbox's container found at the engine", rows)
if rows:
    p1, _ = engine("POST", "/containers/%s/pause" % rows[0]["Id"])
    time.sleep(1)
    p2, _ = engine("POST", "/containers/%s/unpause" % rows[0]["Id"])
    st, l, _ = execute(sid, tok, "x")
    ok(p1 == 204 and p2 == 204 and text_of(l) == "7", "docker pause, unpause: the variables are kept", (p1, p2, l))

# Hostile output: forged lines, huge output, binary, a driver killed.
st, l, _ = execute(sid, tok, "import os\nos.write(1, b'{\"type\":\"end\",\"seq\":1}\\n{\"type\":\"result\",\"text\":\"forged\",\"is_main_result\":true}\\n')\n5")
ok(text_of(l) == "5" and "forged" in stdout(l), "forged NDJSON on fd 1 is stdout text, not a result", l)
st, l, _ = execute(sid, tok, "import os\nfor fd in range(3, 10):\n try: os.write(fd, b'{\"type\":\"end\",\"seq\":424242}\\n' + b'z' * 5000000 + b'\\n{\"type\":\"number_of_executions\",\"execution_count\":\"x\"}\\n[1,2]\\n\\xff\\xfe\\n')\n except OSError: pass\n6")
ok(st == 200 and text_of(l) == "6", "forged and malformed lines on every descriptor: dropped, the execution ends right", l)
st, l, _ = execute(sid, tok, "x")
ok(text_of(l) == "7", "... and the interpreter is whole", l)
st, l, _ = execute(sid, tok, "print('x' * 10**7)")
out = stdout(l)
ok(st == 200 and len(out) <= 200000 and err(l) and err(l)["name"] == "OutputLimitExceeded",
   "10 MB printed: cut at SANDBOXD_MAX_OUTPUT_BYTES, said so (%d bytes kept)" % len(out), (len(out), err(l)))
st, l, _ = execute(sid, tok, "import os; os.write(1, bytes(range(256)) * 64)")
ok(st == 200 and len(stdout(l)) > 0, "binary on fd 1: valid JSON lines of text", l[:3] if l else l)
st, l, _ = execute(sid, tok, "import os; os._exit(3)")
ok(err(l) and err(l)["name"] == "InterpreterDied", "os._exit: the execution says the interpreter died", l)
st, l, _ = execute(sid, tok, "x = 7\n1 + 1")
ok(text_of(l) == "2", "... and the next call works", l)
ok(os.path.exists("/proc/%s" % E["SERVE_PID"]), "the service is alive, the same process")

# Hostile bodies.
def post(body, h=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    try:
        c.request("POST", "/execute", body=body, headers=h or hdrs(sid, tok))
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before the body was read: the answer is there
    r = c.getresponse()
    t = r.read()
    try:
        d = json.loads(t)
    except ValueError:
        d = None
    return r.status, d


for name, body, want in [
        ("not JSON", b"{code", 400),
        ("a JSON array", b"[1]", 400),
        ("code not a string", json.dumps({"code": 5}), 400),
        ("no code", json.dumps({}), 400),
        ("code with a NUL", json.dumps({"code": "1\u0000"}), 400),
        ("unknown context_id", json.dumps({"code": "1", "context_id": "nope"}), 404),
        ("language r", json.dumps({"code": "1", "language": "r"}), 400),
        ("context_id and language", json.dumps({"code": "1", "context_id": "default", "language": "python"}), 400),
        ("env_vars not strings", json.dumps({"code": "1", "env_vars": {"A": 1}}), 400),
        ("env_vars bad name", json.dumps({"code": "1", "env_vars": {"A B": "1"}}), 400),
        ("10 MB of code", json.dumps({"code": "#" * (10 << 20)}), 413)]:
    st, d = post(body)
    ok(st == want and (st == 413 or (isinstance(d, dict) and d.get("code") == st and d.get("message"))),
       "%s: %d with {code, message}" % (name, want), (st, d))
st, d = post(json.dumps({"code": "1"}), dict(hdrs(sid, "wrong-token")))
ok(st == 401, "a wrong X-Access-Token: 401", (st, d))
st, l, _ = execute(sid, tok, "' Python '", language=" Python ")
ok(text_of(l) == " Python ", "language python in any case and spacing", l)
rnd = random.Random(int(E.get("CODE_FUZZ_SEED", "1")))
for i in range(60):
    b = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300)))
    post(b)
st, l, _ = execute(sid, tok, "x")
ok(text_of(l) == "7" and os.path.exists("/proc/%s" % E["SERVE_PID"]), "60 random bodies later: the service and the interpreter whole", l)

# One execution at a time per context: a second waits, then runs.
import threading
res = {}
def slow():
    res["a"] = execute(sid, tok, "import time; time.sleep(2); 'a'")
t = threading.Thread(target=slow)
t.start()
time.sleep(0.5)
st, l, _ = execute(sid, tok, "'b'")
t.join()
ok(text_of(l) == "b" and text_of(res["a"][1]) == "a", "two executions on one context: the second waits its turn", (l, res))

# A runtime without python3: refused, clearly, found out once.
sid2, tok2 = open_session(E["CODE_RUNTIME_NOPY"])
for i in range(2):
    t0 = time.monotonic()
    st, d = post(json.dumps({"code": "1"}), hdrs(sid2, tok2))
    ok(st == 400 and "no python3" in (d or {}).get("message", ""), "a runtime without python3: 400 saying so (%d)" % i, (st, d))
    diag("refused in %.2f s" % (time.monotonic() - t0))

# The audit: one execute row per execution, "python: " and the first line.
def q(sql):
    return subprocess.run([E["CODE_SQL"], sql], capture_output=True, text=True).stdout.strip()


time.sleep(3)
rows = q("select target || '|' || ok || '|' || detail from sandbox_operations where op = 'execute' and target like 'python: x = 41%'")
ok(rows == "python: x = 41|true|python: ok", "the row of x = 41: target, ok, detail", rows)
rows = q("select count(*) from sandbox_operations where op = 'execute' and target = 'python: y = 2 ...' and not ok and detail = 'python: raised an exception'")
ok(rows == "1", "the row of an execution that raised: not ok, its first line", rows)
rows = q("select count(*) from sandbox_operations where op = 'execute' and target = 'python: import time ...' and detail like 'timeout after 4 s%'")
ok(rows == "1", "the row of the execution that was stopped: timeout after 4 s", rows)
rows = q("select count(*) from sandbox_operations where op = 'execute' and target like 'python3 -u -c %'")
ok(rows not in ("", "0"), "the interpreters' own exec rows (%s)" % rows, rows)
rows = q("select count(*) from sandbox_operations where target like '%forged%' or target like '%zzzzz%'")
ok(rows == "0", "no output in any row (the code's first line only)", rows)
plan()

# interp-driver.py - the persistent Python interpreter behind E2B's
# /execute (svc-interp.h, docs/e2b.md): sbxcat starts it in a sandbox
# through exec and talks to it over the exec's stdin and stdout, one
# request at a time, as a Jupyter kernel is talked to.  It is embedded in
# the binary (interp-driver.inc, made from this file) and sent over stdin
# by a short bootstrap, so what runs is always what this sbxcat speaks.
#
# Requests (stdin, one JSON object a line): {"seq", "code", "env",
# "timeout_ms"} to run code; {"interrupt": seq} to interrupt it.
# Replies (the exec's stdout, one JSON object a line): {"type": "ready"},
# then per request number_of_executions, stdout, stderr, result and error
# lines in E2B's shapes, and {"type": "end", "seq"}.  The host trusts none
# of it: the code run here can write anything to any descriptor.
#
# The code's stdout and stderr are pipes of each execution (fd 1 and 2,
# so what its subprocesses write is caught too); its stdin is /dev/null;
# the protocol's descriptors are private copies, not inherited.
import ast
import base64
import codecs
import json
import linecache
import os
import signal
import sys
import threading
import traceback

conf = json.loads(os.environ.pop("SBXCAT_INTERP_CONF", "{}"))
proto_in = os.dup(0)
proto_out = os.dup(1)
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0)
os.dup2(devnull, 1)
os.dup2(devnull, 2)
sys.stdin = open(os.devnull)
signal.signal(signal.SIGINT, signal.default_int_handler)
send_lock = threading.Lock()


def send(obj):
    data = (json.dumps(obj) + "\n").encode()
    with send_lock:
        while data:
            n = os.write(proto_out, data)
            data = data[n:]


requests = []
req_cond = threading.Condition()
current = {"seq": None}


def reader():
    buf = b""
    while True:
        try:
            chunk = os.read(proto_in, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            with req_cond:
                requests.append(None)
                req_cond.notify()
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "interrupt" in msg:
                if msg["interrupt"] == current["seq"]:
                    os.kill(os.getpid(), signal.SIGINT)
                continue
            with req_cond:
                requests.append(msg)
                req_cond.notify()


def pump(fd, kind, state):
    dec = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        try:
            b = os.read(fd, 65536)
        except OSError:
            b = b""
        text = dec.decode(b, final=not b)
        if text and not state["late"]:
            send({"type": kind, "text": text})
        if not b:
            os.close(fd)
            return


FORMATS = (("html", "_repr_html_"), ("markdown", "_repr_markdown_"),
           ("svg", "_repr_svg_"), ("png", "_repr_png_"),
           ("jpeg", "_repr_jpeg_"), ("latex", "_repr_latex_"),
           ("javascript", "_repr_javascript_"))


def result_of(v):
    text = repr(v)
    # As E2B's server does with Jupyter's text/plain of a str.
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        text = text[1:-1]
    res = {"type": "result", "text": text, "is_main_result": True}
    for name, meth in FORMATS:
        f = getattr(v, meth, None)
        if f is None or isinstance(v, type):
            continue
        try:
            r = f()
        except Exception:
            continue
        if isinstance(r, bytes):
            r = base64.b64encode(r).decode()
        if isinstance(r, str):
            res[name] = r
    return res


def error_of(e, tb):
    if isinstance(e, SyntaxError):
        lines = traceback.format_exception_only(type(e), e)
    else:
        lines = traceback.format_exception(type(e), e, tb)
    return {"type": "error", "name": type(e).__name__, "value": str(e),
            "traceback": "".join(lines)}


ns = {"__name__": "__main__", "__builtins__": __builtins__}
count = 0


def run(req):
    global count
    count += 1
    name = "<cell %d>" % count
    send({"type": "number_of_executions", "execution_count": count})
    code = req.get("code")
    if not isinstance(code, str):
        code = ""
    env = req.get("env") if isinstance(req.get("env"), dict) else {}
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        try:
            os.environ[str(k)] = str(v)
        except (ValueError, OSError):
            pass
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    state = {"late": False}
    pumps = []
    for fd, kind in ((1, "stdout"), (2, "stderr")):
        r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        t = threading.Thread(target=pump, args=(r, kind, state), daemon=True)
        t.start()
        pumps.append(t)
    timer = None
    timeout = req.get("timeout_ms")
    if isinstance(timeout, int) and timeout > 0:
        timer = threading.Timer(timeout / 1000.0,
                                lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.daemon = True
    err = None
    value = None
    has_value = False
    current["seq"] = req.get("seq")
    try:
        if timer:
            timer.start()
        tree = ast.parse(code, name, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), ns)
        if last is not None:
            value = eval(compile(last, name, "eval"), ns)
            has_value = value is not None
    except BaseException as e:
        tb = e.__traceback__
        # The driver's own frame is not the code's.
        if tb is not None and tb.tb_frame.f_code is run.__code__:
            tb = tb.tb_next
        err = error_of(e, tb)
    finally:
        current["seq"] = None
        if timer:
            timer.cancel()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    for t in pumps:
        # A subprocess the code left running may hold the pipe: what it
        # writes later is no longer this execution's.
        t.join(0.5)
    state["late"] = True
    if has_value:
        ns["_"] = value
        try:
            send(result_of(value))
        except Exception as e:
            send(error_of(e, e.__traceback__))
    if err:
        send(err)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    send({"type": "end", "seq": req.get("seq")})


def main():
    cwd = conf.get("cwd")
    if cwd:
        try:
            os.chdir(cwd)
        except OSError as e:
            send({"type": "failed", "why": "cwd", "errno": e.errno})
            return
    sys.path.insert(0, "")
    sys.argv = [""]
    threading.Thread(target=reader, daemon=True).start()
    idle = conf.get("idle_s")
    send({"type": "ready"})
    while True:
        with req_cond:
            if not requests:
                req_cond.wait(idle if isinstance(idle, int) and idle > 0
                              else None)
            if not requests:
                return
            req = requests.pop(0)
        if req is None:
            return
        try:
            run(req)
        except KeyboardInterrupt:
            # An interrupt that came between two executions.
            send({"type": "end", "seq": req.get("seq")})


main()
os._exit(0)

#!/bin/sh
# t-http.sh - the service's HTTP server (src/serve/http.c) against real
# clients: tests/t-http serves a route table of test handlers on a unix
# socket and loopback TCP ports, and curl and Python's http.client and
# raw sockets drive it: routing, every limit of docs/serve.md "Limits"
# (413, 431, 503 over the cap and when the queue is full, idle and slow
# clients cut, 1,000 idle connections), a client gone mid-request, the
# access log, the metrics, and SIGTERM with requests in flight; what a
# route declares (the admit hook's refusal before the body, a route's own
# cap), one caller's fair share of a pool, and paths no template holds.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/httpbed.sh
. "$srcdir/tests/httpbed.sh"

# The client side, in Python: each command prints one line to compare.
cat >"$T/c.py" <<'PY'
import base64, http.client, json, os, resource, socket, sys, time
cmd, port = sys.argv[1], int(sys.argv[2])
args = sys.argv[3:]

def conn():
    return socket.create_connection(("127.0.0.1", port))

def read_all(s, wait=5.0):
    s.settimeout(wait)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except socket.timeout:
        out += b"<timeout>"
    except ConnectionResetError:
        out += b"<reset>"
    return out

def status_of(raw):
    line = raw.split(b"\r\n", 1)[0].decode("latin-1")
    return line.split(" ")[1] if line.startswith("HTTP/") else "closed:" + raw.decode("latin-1")[:40]

def get(path, headers={}):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    return r.status, r.read(), r

if cmd == "echo":
    # method route params body query header, via http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/echo/p%C3%A9?q=a%20b&other=1", body=b"the body\x00x",
              headers={"X-Echo": "v1", "Content-Type": "text/plain"})
    r = c.getresponse()
    d = json.loads(r.read())
    print(r.status, d["method"], d["route"], d["params"], base64.b64decode(d["body"]), d["body_len"], d["query"], d["header"])
elif cmd == "nonascii":
    s = conn()
    s.sendall(b"GET /echo/x HTTP/1.1\r\nHost: x\r\nX-Echo: caf\xc3\xa9 \xff\xfe\x01\r\nConnection: close\r\n\r\n")
    raw = read_all(s)
    body = raw.split(b"\r\n\r\n", 1)[1]
    print(status_of(raw), ascii(json.loads(body)["header"]))
elif cmd == "cl413":
    # the headers of a 100 MiB body, and not one byte of it
    s = conn()
    t = time.time()
    s.sendall(b"POST /echo/x HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n")
    raw = read_all(s)
    print(status_of(raw), b"Connection: close" in raw, time.time() - t < 1.0)
elif cmd == "chunked":
    # n KiB in chunks of 1 KiB, then the end (unless "open"); to
    # $CHUNKED_PATH (/echo/x)
    n = int(args[0])
    s = conn()
    s.sendall(b"POST " + os.environ.get("CHUNKED_PATH", "/echo/x").encode() +
              b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    try:
        for i in range(n):
            s.sendall(b"400\r\n" + b"z" * 1024 + b"\r\n")
        if len(args) < 2:
            s.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    raw = read_all(s)
    print(status_of(raw))
elif cmd == "header":
    n = int(args[0])
    s = conn()
    s.sendall(b"GET /echo/x HTTP/1.1\r\nHost: x\r\nX-Big: " + b"h" * n + b"\r\n\r\n")
    raw = read_all(s)
    print(status_of(raw))
elif cmd == "big":
    st, body, r = get("/big/" + args[0])
    want = bytes(ord("a") + i % 26 for i in range(int(args[0])))
    print(st, len(body), body == want)
elif cmd == "trickle":
    # args: mode (line|headers); a byte a second; print when it was cut
    s = conn()
    t = time.time()
    data = b"GET /echo/x HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 100 + b"\r\n\r\n"
    if args[0] == "headers":
        s.sendall(data[:22])
        data = data[22:]
    s.settimeout(0.01)
    cut = None
    for b in data:
        try:
            s.sendall(bytes([b]))
            d = s.recv(100)
            if not d:
                cut = time.time() - t
                break
        except socket.timeout:
            pass
        except (BrokenPipeError, ConnectionResetError):
            cut = time.time() - t
            break
        time.sleep(1)
    print("cut" if cut is not None else "not-cut", round(cut or 0, 1))
elif cmd == "idle-after":
    # one request, then idle: seconds until the server closes
    s = conn()
    s.sendall(b"GET /echo/x HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(5)
    d = s.recv(65536)
    t = time.time()
    d = read_all(s, 20)
    print(status_of(b"HTTP/1.1 200") if d == b"" else "data", round(time.time() - t))
elif cmd == "hold":
    # open n connections, keep them idle, run CMD meanwhile; print the
    # time a normal request took and the server's connection gauge
    n = int(args[0])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
    held = [conn() for i in range(n)]
    time.sleep(0.5)
    t = time.time()
    st, body, r = get("/echo/during")
    took = time.time() - t
    st2, m, r = get("/metrics")
    gauge = [l for l in m.decode().splitlines() if l.startswith("sbxcat_http_connections ")][0].split()[1]
    print(st, took < 0.5, gauge, open("/proc/%s/status" % args[1]).read().split("Threads:")[1].split()[0])
    for s in held:
        s.close()
elif cmd == "cap":
    # hold n connections; the next gets 503
    n = int(args[0])
    held = [conn() for i in range(n)]
    time.sleep(0.3)
    s = conn()
    s.sendall(b"GET /echo/x HTTP/1.1\r\nHost: x\r\n\r\n")
    raw = read_all(s)
    print(status_of(raw), b"Retry-After: 1\r\n" in raw, b"Connection: close\r\n" in raw, raw.endswith(b"}"))
    for h in held:
        h.close()
elif cmd == "gone":
    # a sleeping handler, the client closing after 0.5 s: print the time
    # it closed (epoch ms)
    s = conn()
    s.sendall(b"GET /sleep/10 HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.5)
    s.close()
    print(int(time.time() * 1000))
elif cmd == "burst":
    # n slow requests at once on connections opened first: the statuses
    n = int(args[0])
    held = [conn() for i in range(n)]
    for s in held:
        s.sendall(b"GET /sleep/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    print(" ".join(sorted(str(status_of(read_all(s))) for s in held)))
    for s in held:
        s.close()
elif cmd == "raw":
    # a request target sent as it is (no client normalises it)
    s = conn()
    s.sendall(b"GET " + args[0].encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    raw = read_all(s)
    print(status_of(raw), raw.split(b"\r\n\r\n", 1)[-1].decode("latin-1"))
elif cmd == "keyless":
    # the headers of a 100 MiB body (or a chunked one) to a route the
    # admit hook refuses: answered at once, the connection closed, not a
    # byte of the body read
    s = conn()
    t = time.time()
    if args[0] == "chunked":
        s.sendall(b"POST /keyed/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + b"z" * 1024 + b"\r\n")
    else:
        s.sendall(b"POST /keyed/x HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n")
    raw = read_all(s)
    print(status_of(raw), b"Connection: close" in raw, time.time() - t < 1.0, raw.split(b"\r\n\r\n", 1)[-1].decode())
elif cmd == "share":
    # caller A asks three slow requests at once (its share: 2 places, 1
    # worker); caller B one, a moment later: A's third is 429, B's is
    # served while A's second waits
    import threading
    out = {}
    def one(name, path, caller):
        t = time.time()
        st, body, r = get(path, {"X-Caller": caller})
        out[name] = (st, r.getheader("Retry-After"), time.time() - t)
    th = [threading.Thread(target=one, args=("a%d" % i, "/sleep/3", "A")) for i in range(3)]
    for x in th:
        x.start()
    time.sleep(0.5)
    b = threading.Thread(target=one, args=("b", "/sleep/0", "B"))
    b.start()
    for x in th + [b]:
        x.join()
    a = sorted("%d/%s" % (out["a%d" % i][0], out["a%d" % i][1]) for i in range(3))
    print(" ".join(a), out["b"][0], out["b"][2] < 2.0)
elif cmd == "get":
    st, body, r = get(args[0], dict(a.split(": ", 1) for a in args[1:]))
    print(st, r.getheader("Retry-After"), body.decode("utf-8", "replace"))
PY
c() { python3 "$T/c.py" "$@"; }


# --- A: routing, the listeners, the body and header limits ------------------
start a -u "$T/a.sock" -t 127.0.0.1:0 -t '[::1]:0' -b 4096 -H 4096 -q 2 -s 2 -Q 2 -i 3 -r 2
A=$PID
PA=$PORT
P6=$(sed -n 2p "$T/a.ports")
is "$(stat -c '%a %F' "$T/a.sock")" "660 socket" "unix:PATH is a socket of mode 0660"
is "$(c echo "$PA")" "200 POST /echo/{x} ['pé'] b'the body\\x00x' 10 a b v1" \
	"method, route, params (decoded), body (with a NUL), query and header reach the handler"
is "$(curl -s --unix-socket "$T/a.sock" http://x/echo/u)" \
	'{"method":"GET","route":"/echo/{x}","path":"/echo/u","params":["u"],"body":"","body_len":0,"query":null,"header":null}' \
	"the unix socket serves (curl --unix-socket)"
is "$(curl -s "http://[::1]:$P6/echo/six?q=6")" \
	'{"method":"GET","route":"/echo/{x}","path":"/echo/six","params":["six"],"body":"","body_len":0,"query":"6","header":null}' \
	"tcp:[::1]:0 serves IPv6, on the port http_server_port reports"
is "$(curl -s -w ' %{http_code}' "http://127.0.0.1:$PA/nowhere/at/all")" '{"detail":"Not Found"} 404' \
	"no template matches: 404 {\"detail\":\"Not Found\"}"
is "$(curl -s -w ' %{http_code}' "http://127.0.0.1:$PA/only-put")" '{"detail":"Method Not Allowed"} 405' \
	"the path matches but not the method: 405 {\"detail\":\"Method Not Allowed\"}"
is "$(curl -s -w '%{http_code}' -X PUT "http://127.0.0.1:$PA/only-put")" "204" "the other method there answers"
is "$(curl -s -w ' %{http_code}' "http://127.0.0.1:$PA/echo/")" '{"detail":"Not Found"} 404' \
	"a {param} never matches an empty segment"
is "$(c nonascii "$PA")" "200 'caf\\xe9 \\ufffd\\ufffd\\x01'" \
	"a header value that is not ASCII reaches the handler as its bytes, nothing crashes"
is "$(c cl413 "$PA")" "413 True True" \
	"Content-Length of 100 MiB: 413 at once, the body never sent, Connection: close"
is "$(curl -s -w ' %{http_code}' --data-binary @/dev/null -H 'Content-Length: 4097' -H 'Expect:' --max-time 3 "http://127.0.0.1:$PA/echo/x")" \
	'{"detail":"Request body too large"} 413' "Content-Length one past max_body_bytes: 413 (curl)"
head -c 4096 /dev/zero | tr '\0' 'b' >"$T/4k"
is "$(curl -s "http://127.0.0.1:$PA/echo/x" --data-binary @"$T/4k" | python3 -c 'import json,sys; print(json.load(sys.stdin)["body_len"])')" \
	"4096" "a body of exactly max_body_bytes is served"
is "$(c chunked "$PA" 3)" "200" "a chunked body under the limit is served"
is "$(c chunked "$PA" 6)" "413" "a chunked body past the limit: 413"
is "$(c chunked "$PA" 64 open)" "closed:" \
	"a chunked body past twice the limit: the connection is closed (no response mid-body in libmicrohttpd)"
is "$(c header "$PA" 3900)" "200" "headers just under max_header_bytes are served"
is "$(c header "$PA" 4200)" "431" "headers over max_header_bytes: 431"
is "$(c header "$PA" 200000)" "431" "headers past libmicrohttpd's own pool: 431 (libmicrohttpd's)"
is "$(c big "$PA" 5000000)" "200 5000000 True" "a 5 MB response body arrives whole"

# A burst on idle workers: every request a worker or the queue can hold
# is taken, whether or not the workers have picked up the first ones yet.
is "$(c burst "$PA" 4)" "200 200 200 200" \
	"four slow requests at once on 2 idle workers and a queue of 2: all served"
is "$(c burst "$PA" 5)" "200 200 200 200 503" \
	"... five at once: exactly one refused"

# The slow pool busy: 2 workers, 2 waiting; the fifth is 503, quick
# routes still answer at once.  The sleepers sleep long enough that
# none ends before the test is done (a loaded machine starts curl
# slowly), and are sent away after it: their handlers see them go.
SLEEPERS=""
for i in 1 2 3 4; do
	curl -s -o /dev/null "http://127.0.0.1:$PA/sleep/60" &
	SLEEPERS="$SLEEPERS $!"
done
# Until all four are handed to the pool: the server's count of requests
# queued or running, the asking one included.
n=0
busy=0
while [ $n -lt 400 ]; do
	busy=$(curl -s "http://127.0.0.1:$PA/inflight")
	[ "$busy" -ge 5 ] 2>/dev/null && break
	sleep 0.05
	n=$((n + 1))
done
diag "requests in flight with the asking one: $busy"
is "$(c get "$PA" /sleep/2)" '503 1 {"detail":"Server busy"}' \
	"every slow worker busy and the queue full: 503 with Retry-After: 1"
t0=$(date +%s%N)
r=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PA/echo/quick")
ms=$((($(date +%s%N) - t0) / 1000000))
# Well under the sleepers' 60 s (a sanitizer's build is slow).
[ "$r" = 200 ] && [ $ms -lt 1000 ]
ok $? "with every slow worker busy, a quick route answers at once ($r in $ms ms)"
# shellcheck disable=SC2086
kill $SLEEPERS 2>/dev/null
for p in $SLEEPERS; do wait "$p" 2>/dev/null; done
n=0
while [ $n -lt 200 ] && [ "$(curl -s "http://127.0.0.1:$PA/inflight")" != 1 ]; do
	sleep 0.05
	n=$((n + 1))
done
is "$(curl -s "http://127.0.0.1:$PA/inflight")" "1" \
	"the sleepers sent away: their handlers returned (only the asking request in flight)"

# Slow and idle clients (idle 3 s, request 2 s).
c trickle "$PA" headers >"$T/tr1" &
TR1=$!
c trickle "$PA" line >"$T/tr2" &
TR2=$!
sleep 1
t0=$(date +%s%N)
r=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PA/echo/meanwhile")
ms=$((($(date +%s%N) - t0) / 1000000))
# Well under the trickles' 2 and 5 s (a sanitizer's build is slow).
[ "$r" = 200 ] && [ $ms -lt 1000 ]
ok $? "while two clients trickle a byte a second, others are served ($r in $ms ms)"
wait $TR1 $TR2
read -r w1 s1 <"$T/tr1"
[ "$w1" = cut ] && python3 -c "import sys; sys.exit(not 1.8 <= $s1 <= 3.0)"
ok $? "a request line in, then its headers a byte a second: cut at request_timeout_s (2 s: $w1 at $s1 s)"
read -r w2 s2 <"$T/tr2"
[ "$w2" = cut ] && python3 -c "import sys; sys.exit(not 4.8 <= $s2 <= 6.0)"
ok $? "a request line a byte a second: cut at idle + request timeouts (5 s: $w2 at $s2 s)"
is "$(c idle-after "$PA")" "200 3" "an idle keep-alive connection is closed after idle_timeout_s (3 s)"
grep -c ' 408 ' "$T/a.log" | grep -qx 2
ok $? "both cut clients are in the access log as 408"

# The client gone: the sleeping handler sees it within 200 ms.
closed=$(c gone "$PA")
sleep 0.5
line=$(grep 'sleep: gone=1' "$T/a.err" | tail -1)
at=${line##*at=}
diag "closed at $closed, handler saw it at $at"
[ -n "$line" ] && [ $((at - closed)) -ge 0 ] && [ $((at - closed)) -lt 200 ]
ok $? "a client that closes mid-request: req->gone within 200 ms ($((at - closed)) ms)"
case $line in *" why=-1 "*) r=0 ;; *) r=1 ;; esac
ok $r "... saying the client went away (HTTP_GONE_CLIENT)"
stop $A
is "$(test -e "$T/a.sock" && echo there || echo removed)" "removed" "stop removes the unix socket"

# --- B: 1,000 idle connections, the cap, the metrics, the log ---------------
start b -t 127.0.0.1:0 -c 1100 -n 4096 -q 2 -s 2 -i 30 -r 30
B=$PID
r=$(c hold "$PORT" 1000 "$B")
set -- $r
[ "$1" = 200 ] && [ "$2" = True ] && [ "$3" -ge 1001 ]
ok $? "1,000 idle connections held, a request is answered at once (status $1, fast $2, gauge $3)"
[ "$4" -lt 24 ]
ok $? "the server's threads stay few with 1,000 connections ($4)"
stop $B

start cap -t 127.0.0.1:0 -c 5
is "$(c cap "$PORT" 5)" "503 True True True" \
	"over max_connections: 503, Retry-After: 1, Connection: close, a JSON detail"
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/echo/after")" "200" \
	"under the cap again: served"
stop $PID

start m -t 127.0.0.1:0
M=$PID
for i in 1 2 3 4 5 6 7; do
	curl -s -o /dev/null -H 'X-Sandbox-Token: tok-SECRET-123' -H 'X-Tenant: acme' \
		--data 'BODY-SECRET-456' "http://127.0.0.1:$PORT/echo/s$i"
done
curl -s -o /dev/null "http://127.0.0.1:$PORT/raw-path-789"
curl -s "http://127.0.0.1:$PORT/metrics" >"$T/metrics"
python3 - "$T/metrics" >"$T/mcheck" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
assert text.endswith("\n")
sample = re.compile(r'^([a-z_]+)(\{([a-z_]+="(?:[^"\\]|\\.)*"(,[a-z_]+="(?:[^"\\]|\\.)*")*)\})? ([0-9.e+-]+)$')
types, vals = {}, {}
for line in text.splitlines():
    if line.startswith("# HELP "):
        continue
    if line.startswith("# TYPE "):
        _, _, name, t = line.split(" ")
        types[name] = t
        continue
    m = sample.match(line)
    assert m, "not a sample: " + line
    vals[(m.group(1), m.group(3) or "")] = float(m.group(5))
assert types == {"sbxcat_http_requests_total": "counter",
                 "sbxcat_http_request_duration_seconds": "histogram",
                 "sbxcat_http_connections": "gauge",
                 "sbxcat_http_refused_total": "counter"}, types
for (name, labels), v in vals.items():
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    assert base in types, name
# the histogram (by route and method): buckets rise to +Inf, which is _count
r = 'route="/echo/{x}"'
rm = r + ',method="POST"'
buckets = sorted((float(l.split('le="')[1].rstrip('"').replace("+Inf", "inf")), v)
                 for (n, l), v in vals.items()
                 if n == "sbxcat_http_request_duration_seconds_bucket" and l.startswith(rm + ","))
assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:]))
assert buckets[-1][0] == float("inf")
print(int(vals[("sbxcat_http_requests_total", r + ',method="POST",status="200"')]),
      int(buckets[-1][1]), int(vals[("sbxcat_http_request_duration_seconds_count", rm)]),
      int(vals[("sbxcat_http_requests_total", 'route="-",method="GET",status="404"')]))
PY
is "$(cat "$T/mcheck")" "7 7 7 1" \
	"metrics: the text format parses; after 7 requests the route's counter, +Inf bucket and count read 7"
stop $M
is "$(grep -c 'POST /echo/{x} 200 [0-9]*ms acme s[1-7]$' "$T/m.log")" "7" \
	"the access log: one line per request, with route template, status, duration, tenant, session"
grep -q 'GET - 404 [0-9]*ms - -$' "$T/m.log"
ok $? "a path no route matches is logged as '-', not as the path"
! grep -q 'SECRET\|raw-path' "$T/m.log"
ok $? "neither the token, the body nor the raw path is in the log"

# --- C: SIGTERM with requests in flight -------------------------------------
start g -u "$T/g.sock" -t 127.0.0.1:0 -g 3000
G=$PID
curl -s "http://127.0.0.1:$PORT/sleep/1" >"$T/g.out" &
CURL=$!
sleep 0.3
t0=$(date +%s%N)
kill -TERM $G
sleep 0.2
curl -s --max-time 1 "http://127.0.0.1:$PORT/echo/late" >/dev/null
ok $((!$?)) "after SIGTERM no new connection is accepted"
wait $CURL
is "$(sed 's/"slept_ms":1[0-9][0-9][0-9]}/"slept_ms":1xxx}/' "$T/g.out")" '{"gone":false,"slept_ms":1xxx}' \
	"a request in flight that finishes within the grace gets its response"
wait $G
is "$?" "0" "t-http exits 0 after the grace"
is "$(test -e "$T/g.sock" && echo there || echo removed)" "removed" "the unix socket's path is removed at stop"

start h -t 127.0.0.1:0 -g 500
H=$PID
curl -s --max-time 10 "http://127.0.0.1:$PORT/sleep/30" >"$T/h.out" &
CURL=$!
sleep 0.3
t0=$(date +%s%N)
kill -TERM $H
wait $H
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 0 ] && [ $ms -lt 2500 ]
ok $? "a request past the grace: t-http still exits 0, promptly ($rc in $ms ms)"
grep -q 'sleep: gone=1 why=-3 ' "$T/h.err"
ok $? "its handler saw gone, saying the server stopped (HTTP_GONE_SHUTDOWN)"
wait $CURL
diag "the client got: $(cat "$T/h.out")"
case "$(cat "$T/h.out")" in '{"gone":true'* | '') r=0 ;; *) r=1 ;; esac
ok $r "its client got the handler's response or a closed connection"

# --- E: what a route declares: the admit hook, its cap, fair shares, paths --
start e -t 127.0.0.1:0 -q 2 -s 2 -Q 2
is "$(c keyless "$PORT" length)" '401 True True {"detail":"No key"}' \
	"a route's admit hook refuses from the headers: 401 at once, Connection: close, the 100 MiB body never read"
is "$(c keyless "$PORT" chunked)" '401 True True {"detail":"No key"}' \
	"... a chunked body too"
is "$(curl -s -w ' %{http_code}' -H 'X-Key: good' -d 'k' "http://127.0.0.1:$PORT/keyed/x" | sed 's/.*"body_len":\([0-9]*\).* /\1 /')" "1 200" \
	"... and lets the request with the key in"
head -c 1024 /dev/zero >"$T/1k"
head -c 1025 /dev/zero >"$T/1k1"
is "$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$T/1k" "http://127.0.0.1:$PORT/capped/x")" 200 \
	"a route's own cap (1 KiB): a body of 1 KiB is served"
is "$(curl -s -w ' %{http_code}' -H 'Expect:' --data-binary @"$T/1k1" "http://127.0.0.1:$PORT/capped/x")" \
	'{"detail":"Request body too large"} 413' "... one byte more is 413 (the server's cap is 12 MiB)"
is "$(CHUNKED_PATH=/capped/x c chunked "$PORT" 2)" 413 "... chunked too"
is "$(c raw "$PORT" '/echo/a1%00/events/x')" '400 {"detail":"Invalid path: an encoded NUL in it"}' \
	"%00 in the path: 400 before routing (never served as /echo/{x} with a cut string)"
is "$(c raw "$PORT" '/echo%2Fx')" '404 {"detail":"Not Found"}' "%2F inside a segment: 404 (no template's segment holds a '/'), never routed as /echo/x"
is "$(c raw "$PORT" '/keyed/a%2fb')" '404 {"detail":"Not Found"}' "... lower case too, before the route's admit hook"
is "$(c raw "$PORT" '/echo/x?q=a%00b' | cut -c1-3)" 400 "%00 in the query: 400"
is "$(c raw "$PORT" '/echo/x?q=a%2Fb' | sed 's/^\([0-9]*\) .*"query":"\([^"]*\)".*/\1 \2/')" "200 a/b" \
	"%2F in the query is a '/' of its value"
is "$(c raw "$PORT" '/echo/a%20b' | sed 's/^\([0-9]*\) .*"params":\(\[[^]]*\]\).*/\1 \2/')" '200 ["a b"]' \
	"other escapes decode as before"
is "$(c share "$PORT")" "200/None 200/None 429/1 200 True" \
	"one caller past its share of a pool: 429 with Retry-After: 1; another caller is served while its requests wait"
is "$(c burst "$PORT" 4)" "200 200 200 200" "requests with no caller have no share"
curl -s "http://127.0.0.1:$PORT/metrics" >"$T/e.metrics"
for reason in path admit 429; do
	grep -q "^sbxcat_http_refused_total{reason=\"$reason\"} [1-9]" "$T/e.metrics"
	ok $? "refusals are counted: reason=$reason"
done
kill "$PID"
wait "$PID"

# --- D: the unix socket already there ---------------------------------------
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$T/stale.sock"
start s -u "$T/stale.sock" -t 127.0.0.1:0
is "$(curl -s --unix-socket "$T/stale.sock" http://x/echo/st | head -c 20)" '{"method":"GET","rou' \
	"a stale socket file (nobody listening) is replaced"
"$BIN" -u "$T/stale.sock" 2>"$T/live.err"
is "$?" "1" "a live socket is refused"
grep -q "another server listens there" "$T/live.err"
ok $? "naming why ($(cat "$T/live.err"))"
stop $PID
echo plain >"$T/file"
"$BIN" -u "$T/file" 2>"$T/file.err"
is "$?:$(cat "$T/file")" "1:plain" "a file that is not a socket is refused, and left alone"
"$BIN" -t 'nohost' 2>"$T/bad.err"
is "$?" "1" "a bad tcp: address is refused"
# Under make check-tsan and check-sanitize: any report of a server fails.
! grep -l 'Sanitizer\|runtime error' "$T"/*.err
ok $? "no sanitizer report from any server"

done_testing

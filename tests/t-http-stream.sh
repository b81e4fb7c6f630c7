#!/bin/sh
# t-http-stream.sh - streamed responses (http_stream_start/_write,
# src/serve/http-stream.c) against real clients: tests/t-http's
# /stream/{bytes} writes "first", waits for a file the client makes once
# it has read "first" (so the order proves the bytes went out before the
# handler's wait ended, whatever the machine's speed), then a payload.
# A silent stream costs no CPU (the connection suspended, not polled); a
# client that stops reading fails the handler's write within the write
# timeout, and one that leaves raises gone; the server's stop during a
# stream; one caller's streams bounded by its share (429); many streams
# at once, read at random speeds, arrive whole.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/httpbed.sh
. "$srcdir/tests/httpbed.sh"

cat >"$T/c.py" <<'PY'
import http.client, os, random, socket, sys, threading, time
cmd, port = sys.argv[1], int(sys.argv[2])
args = sys.argv[3:]

def pattern(n):
    return bytes(ord("a") + i % 26 for i in range(n))

def cpu(pid):
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])

def open_stream(path, headers):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("GET", path, headers=headers)
    return c, c.getresponse()

if cmd == "order":
    # read "first", measure the server's CPU while the handler waits (a
    # busy reader would burn a core), then release it; the rest
    rel, pid = args
    c, r = open_stream("/stream/10", {"X-Release": rel})
    first = r.read1(100)
    c0 = cpu(pid)
    time.sleep(1.0)
    ticks = cpu(pid) - c0
    open(rel, "w").close()
    rest = r.read()
    print(r.status, r.getheader("Transfer-Encoding"), r.getheader("X-Streamed"),
          r.getheader("Content-Type"), repr(first + rest), ticks < 20 or ticks)
elif cmd == "stall":
    # ask for n bytes, read the first line, then read nothing; wait for
    # the handler's line in ERRFILE; print it
    n, errfile = args
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /stream/" + n.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    t = time.time()
    got = ""
    while time.time() - t < 20:
        got = [l for l in open(errfile).read().splitlines() if l.startswith("stream:")]
        if got:
            break
        time.sleep(0.05)
    print(got[-1].rsplit(" after=", 1)[0] if got else "nothing", round(time.time() - t))
    s.close()
elif cmd == "leave":
    # read "first" of a waiting stream (or some of a big one), close
    path, hdr = args
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" +
              (b"X-Release: " + hdr.encode() + b"\r\n" if hdr != "-" else b"") + b"\r\n")
    d = b""
    while b"first" not in d:
        d += s.recv(65536)
    s.close()
    print(int(time.time() * 1000))
elif cmd == "share":
    # caller A: three streams at once (its share: 2 places), each
    # waiting for REL; B one: A's third is 429, B's is served
    rel, = args
    out = {}
    def one(name, caller):
        try:
            c, r = open_stream("/stream/3", {"X-Caller": caller, "X-Release": rel})
            out[name] = "%d:%s" % (r.status, r.read().decode().replace("\n", "|"))
        except Exception as e:
            out[name] = repr(e)
    th = [threading.Thread(target=one, args=("a%d" % i, "A")) for i in range(3)]
    for x in th:
        x.start()
        time.sleep(0.2)
    b = threading.Thread(target=one, args=("b", "B"))
    b.start()
    time.sleep(0.5)
    open(rel, "w").close()
    for x in th + [b]:
        x.join()
    print(" ".join(sorted(out["a%d" % i][:3] for i in range(3))), out["b"])
elif cmd == "many":
    # n streams of random sizes (up to 3 MiB, pieces of random sizes),
    # read at random speeds, at once; each checked whole
    n = int(args[0])
    rnd = random.Random(int(args[1]))
    bad = []
    def one(size, piece, sleep):
        try:
            c, r = open_stream("/stream/%d" % size, {"X-Piece": str(piece)})
            body = b""
            while True:
                d = r.read1(rnd.choice([1, 7, 4096, 65536]))
                if not d:
                    break
                body += d
                if sleep:
                    time.sleep(sleep)
            if body != b"first\n" + pattern(size) + b"end\n":
                bad.append((size, piece, len(body)))
        except Exception as e:
            bad.append(repr(e))
    th = [threading.Thread(target=one, args=(rnd.randrange(0, 3 << 20),
                                             rnd.choice([1, 100, 4096, 70000, 300000, 1 << 20]),
                                             rnd.choice([0, 0, 0.001])))
          for i in range(n)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    print("ok" if not bad else bad)
elif cmd == "stop":
    # a stream waiting for its release (MARK made once its headers are
    # in); print what the client got when the server stopped
    c, r = open_stream("/stream/5", {"X-Release": args[0]})
    open(args[1], "w").close()
    try:
        print(r.status, repr(r.read()))
    except Exception as e:
        print("error", repr(e))
PY
c() { python3 "$T/c.py" "$@"; }


# --- the bytes go out as they are written --------------------------------
start a -t 127.0.0.1:0 -s 4 -i 30
is "$(c order "$PORT" "$T/rel1" "$PID")" \
	"200 chunked yes text/plain b'first\\nreleased\\nabcdefghijend\\n' True" \
	"the client reads the first chunk while the handler still waits (then the rest), chunked, with the handler's headers; a silent stream burns no CPU"
is "$(curl -s --http1.0 -D - "http://127.0.0.1:$PORT/stream/3" | tr -d '\r' | grep -v '^Date' | tr '\n' '|')" \
	"HTTP/1.1 200 OK|Connection: close|Content-Type: text/plain|X-Streamed: yes||first|abcend|" \
	"an HTTP/1.0 client: no chunks, the end is the connection's close"
is "$(curl -s -w '[%{num_connects}]' "http://127.0.0.1:$PORT/stream/0" "http://127.0.0.1:$PORT/echo/after" |
	tr '\n' '|' | sed 's/{"method":"GET","route":"\/echo\/{x}".*}/echo/')" \
	"first|end|[1]echo[0]" \
	"the connection is kept alive after a stream: the next request on it is served"
grep -q 'http_stream_start misbehaved' "$T/a.err"
ok $((!$?)) "http_stream_start twice: the second is refused"
is "$(c many "$PORT" 12 "$$")" ok "12 streams at once of random sizes and pieces, read at random speeds, arrive whole"

# --- a client that leaves, or stops reading -----------------------------
closed=$(c leave "$PORT" /stream/0 "$T/never")
sleep 0.5
line=$(grep 'stream: rc=0 wrote=0 gone=-1' "$T/a.err" | tail -1)
[ -n "$line" ]
ok $? "a client that leaves while its stream is silent: the handler sees gone (HTTP_GONE_CLIENT) ($line)"
n0=$(grep -c 'stream: rc=-1' "$T/a.err")
c leave "$PORT" /stream/100000000 - >/dev/null
i=0
while [ "$(grep -c 'stream: rc=-1' "$T/a.err")" = "$n0" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
like "$(grep 'stream: rc=-1' "$T/a.err" | tail -1)" 'stream: rc=-1 wrote=[0-9]+ gone=-1 ' \
	"a client that leaves mid-stream: the handler's write fails and gone is raised"
kill "$PID"
wait "$PID"
is "$?" 0 "t-http exits 0"
is "$(grep -c 'GET /stream/{bytes} 200' "$T/a.log")" 17 "every stream has its access-log line (a cut one too)"

start w -t 127.0.0.1:0 -i 30 -w 2
out=$(c stall "$PORT" 100000000 "$T/w.err")
like "$out" '^stream: rc=-1 wrote=[0-9]+ gone=-1 [2-5]$' \
	"a client that stops reading: the write fails at the write timeout (2 s, idle 30 s) and gone is raised ($out)"
stop "$PID"

start i -t 127.0.0.1:0 -i 2
out=$(c stall "$PORT" 100000000 "$T/i.err")
like "$out" '^stream: rc=-1 wrote=[0-9]+ gone=-1 [2-5]$' \
	"the write timeout is the idle timeout by default (2 s: $out)"
stop "$PID"

# --- the server's stop, and the callers' shares -------------------------
start s -t 127.0.0.1:0 -g 500
c stop "$PORT" "$T/never" "$T/streaming" >"$T/stop.out" &
CL=$!
i=0
while [ ! -e "$T/streaming" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
kill -TERM "$PID"
wait "$PID"
is "$?" 0 "the server stops during a stream: exit 0"
wait $CL
is "$(cat "$T/stop.out")" "200 b'first\\n'" "... its client gets what was written and a proper end"
grep -q 'stream: rc=-1 wrote=0 gone=-3' "$T/s.err"
ok $? "... its handler saw gone, saying the server stopped (HTTP_GONE_SHUTDOWN)"

start e -t 127.0.0.1:0 -q 2 -s 2 -Q 2
is "$(c share "$PORT" "$T/rel2")" "200 200 429 200:first|released|abcend|" \
	"one caller's streams hold its share of the pool: its third is 429; another caller's stream is served"
stop "$PID"

! grep -l 'Sanitizer\|runtime error' "$T"/*.err
ok $? "no sanitizer report from any server"
done_testing

# tests/tlsbed.sh - what the TLS tests share (t-http-tls.sh,
# t-serve-tls.sh): a test CA and server certificates made with openssl in
# $H (SANs 127.0.0.1, *.e2b.test and e2b.test), and a Python client,
# `c CMD PORT ARGS...` (get, serial, keepalive, stream, hostile, silent:
# see each).  Skips the whole test without curl, python3 or openssl.
#
#   H=$(mktemp -d); . "$srcdir/tests/tlsbed.sh"
#
# $H/ca.pem the CA; $H/other-ca.pem another; $H/one.pem (serial 0x1001),
# two.pem (0x2002) and stray.pem (0x3003), each with its NAME.key (mode
# 600); $H/cert.pem and $H/key.pem a copy of one's, for a server to read.
# shellcheck disable=SC2034
for c in curl python3 openssl; do
	command -v $c >/dev/null || skip_all "no $c"
done

# mkcert NAME SERIAL [KEY]: $H/NAME.pem signed by the test CA (a new key
# $H/NAME.key unless KEY names one to reuse).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$H/ca.key" -out "$H/ca.pem" \
	-days 2 -subj "/CN=sbxcat test CA" 2>/dev/null || bail_out "openssl cannot make a CA"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$H/other-ca.key" -out "$H/other-ca.pem" \
	-days 2 -subj "/CN=another CA" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:*.e2b.test,DNS:e2b.test\n' >"$H/ext"
mkcert() {
	key=${3:-$H/$1.key}
	[ -f "$key" ] || openssl genrsa -out "$key" 2048 2>/dev/null
	chmod 600 "$key"
	openssl req -new -key "$key" -subj "/CN=sbxcat test server" -out "$H/$1.csr" 2>/dev/null &&
		openssl x509 -req -in "$H/$1.csr" -CA "$H/ca.pem" -CAkey "$H/ca.key" \
			-set_serial "$2" -days 2 -extfile "$H/ext" -out "$H/$1.pem" 2>/dev/null
}
mkcert one 0x1001 && mkcert two 0x2002 && mkcert stray 0x3003 || bail_out "openssl cannot sign"
cp "$H/one.pem" "$H/cert.pem" && cp "$H/one.key" "$H/key.pem" && chmod 600 "$H/key.pem"

cat >"$H/c.py" <<'PY'
import http.client, os, random, socket, ssl, sys, threading, time
cmd, port = sys.argv[1], int(sys.argv[2])
args = sys.argv[3:]

def ctx(ca):
    c = ssl.create_default_context(cafile=ca)
    return c

def client_hello(ca):
    """A real client hello, from an in-memory TLS client."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx(ca).wrap_bio(inc, out, server_hostname="127.0.0.1")
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()

def serial(ca):
    s = ctx(ca).wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
    from subprocess import run
    der = s.getpeercert(binary_form=True)
    s.close()
    out = run(["openssl", "x509", "-inform", "DER", "-noout", "-serial"], input=der, capture_output=True).stdout
    return out.decode().strip()

if cmd == "get":
    # GET PATH with CA: status, body's first 40 bytes
    ca, path = args
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx(ca), timeout=10)
    try:
        c.request("GET", path)
        r = c.getresponse()
        print(r.status, r.read()[:40].decode())
    except ssl.SSLCertVerificationError as e:
        print("verify-failed", e.verify_message)
elif cmd == "serial":
    print(serial(args[0]))
elif cmd == "keepalive":
    # a connection made now, used again after $2 (a file) exists: its
    # certificate's serial and both statuses
    ca, mark, done = args
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx(ca), timeout=10)
    c.request("GET", "/echo/before")
    r = c.getresponse(); r.read()
    st1 = r.status
    open(mark, "w").close()
    while not os.path.exists(done):
        time.sleep(0.05)
    c.request("GET", "/echo/after")
    r = c.getresponse(); r.read()
    from subprocess import run
    der = c.sock.getpeercert(binary_form=True)
    out = run(["openssl", "x509", "-inform", "DER", "-noout", "-serial"], input=der, capture_output=True).stdout
    print(st1, r.status, out.decode().strip())
elif cmd == "stream":
    # a stream open while MARK is made; its whole body
    ca, rel, mark = args
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx(ca), timeout=20)
    c.request("GET", "/stream/5", headers={"X-Release": rel})
    r = c.getresponse()
    first = r.read1(100)
    open(mark, "w").close()
    print(r.status, repr(first + r.read()))
elif cmd == "hostile":
    # N connections of random bytes, cut or mangled client hellos,
    # plain HTTP (held open); then GET PATH must be served at once
    ca, n, path = args[0], int(args[1]), args[3]
    rnd = random.Random(int(args[2]))
    hello = client_hello(ca)
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        k = rnd.randrange(4)
        if k == 0:
            data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 3000)))
        elif k == 1:
            data = hello[:rnd.randrange(len(hello))]
        elif k == 2:
            b = bytearray(hello)
            for _ in range(rnd.randrange(1, 20)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            data = bytes(b)
        else:
            data = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        try:
            s.sendall(data)
        except OSError:
            pass
        socks.append(s)
    t = time.time()
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx(ca), timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    print(r.status, time.time() - t < 1.0)
    for s in socks:
        s.close()
elif cmd == "silent":
    # a client hello, then nothing: seconds until the server closes
    ca = args[0]
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(client_hello(ca))
    t = time.time()
    s.settimeout(30)
    try:
        while s.recv(65536):
            pass
    except (ConnectionResetError, socket.timeout):
        pass
    print(round(time.time() - t))
PY

c() { python3 "$H/c.py" "$@"; }

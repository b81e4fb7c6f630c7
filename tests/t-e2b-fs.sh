#!/bin/sh
# t-e2b-fs.sh - envd's filesystem through the E2B front of a real
# `sbxcat serve` (docs/e2b.md, "Files"), on the real engine and PostgreSQL:
# GET/POST /files (multipart, several parts, octet-stream; bytes back
# exactly: NULs, latin-1, empty, the write limit and one byte over),
# filesystem.Filesystem's Stat, ListDir (depth), MakeDir, Move, Remove
# and the watchers' unimplemented, relative paths, users (root refused),
# a symlink out of the workspace never followed on the host, multipart
# tricks each a 400 with the service alive (same pid), and the audit's
# rows in PostgreSQL.  The sandbox is opened through the sandboxd front
# (its id is E2b-Sandbox-Id, its token X-Access-Token).
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init e2b-fs ef
sb_audit_db t_e2b_fs_$$

TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
# A small write limit, so the limit and one byte over are cheap.
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0 SANDBOXD_MAX_WRITE_BYTES=65536
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL SANDBOXD_MAX_WRITE_BYTES
sb_serve_start
ok $? "sbxcat serve starts" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }

sb_e2b_create "$TOKEN" "$RSMALL" 2>"$T/open.err"
ok $? "a sandbox made through the control plane" || diag "$(cat "$T/open.err")"
SID=$E2B_SID ATOK=$E2B_TOK
KEY=$(PYTHONPATH=$srcdir/tests python3 -c "import wirehost,sys; print(wirehost.key_of(sys.argv[1], sys.argv[2]))" "$ROOT" "$SID")
WS=$ROOT/$KEY/workspace
ok "$([ -d "$WS" ]; echo $?)" "its workspace is on the host"
# A symlink out of the workspace, made on the host as a command would.
ln -s /etc "$WS/etc-link"
ln -s /etc/hostname "$WS/host-link"

E2B_PORT=$PORT E2B_SID=$SID E2B_TOK=$ATOK E2B_WS=$WS E2B_PID=$SPID PYTHONPATH=$srcdir/tests
export E2B_PORT E2B_SID E2B_TOK E2B_WS E2B_PID PYTHONPATH
timeout -s KILL 300 python3 - >"$T/py.tap" 2>"$T/py.err" <<'EOF'
import base64, http.client, json, os, random, socket
from taplib import ok, diag, plan

PORT = int(os.environ["E2B_PORT"])
SID, TOK, WS = os.environ["E2B_SID"], os.environ["E2B_TOK"], os.environ["E2B_WS"]
PID = int(os.environ["E2B_PID"])
MAX = 65536
ENVD = {"E2b-Sandbox-Id": SID, "E2b-Sandbox-Port": "49983", "X-Access-Token": TOK}


def req(method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    h = dict(ENVD)
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheader("Content-Type") or "", data


def connect(method, msg, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    st, _, data = req("POST", "/filesystem.Filesystem/" + method,
                      json.dumps(msg).encode(), h)
    try:
        return st, json.loads(data)
    except ValueError:
        return st, data


def multipart(parts, boundary="----sbxcat-test-b0undary"):
    out = b""
    for name, filename, data in parts:
        disp = b'form-data; name="%s"' % name.encode()
        if filename is not None:
            disp += b'; filename="%s"' % filename.encode("latin-1")
        out += b"--" + boundary.encode() + b"\r\nContent-Disposition: " + disp
        out += b"\r\nContent-Type: application/octet-stream\r\n\r\n" + data + b"\r\n"
    out += b"--" + boundary.encode() + b"--\r\n"
    return out, "multipart/form-data; boundary=" + boundary


def upload(parts, query="", **kw):
    body, ct = multipart(parts, **kw)
    return req("POST", "/files" + query, body, {"Content-Type": ct})


def read(path):
    from urllib.parse import quote
    return req("GET", "/files?path=" + quote(path))


def alive():
    try:
        os.kill(PID, 0)
    except OSError:
        return False
    st, _, _ = req("GET", "/health")
    return st == 204


from urllib.parse import quote

# ---- /health ----
st, _, body = req("GET", "/health")
ok(st == 204 and body == b"", "GET /health: 204, no body")

# ---- write, read back exactly ----
cases = {
    "bin.dat": bytes(range(256)) * 3 + b"\0\0end\0",
    "latin.txt": "caf\xe9 na\xefve \xff".encode("latin-1"),
    "empty.txt": b"",
    "at-cap.bin": bytes(random.getrandbits(8) for _ in range(MAX)),
}
for name, data in cases.items():
    st, ct, body = upload([("file", "/home/user/w/" + name, data)])
    doc = json.loads(body) if st == 200 else body
    ok(st == 200 and doc == [{"name": name, "type": "file", "path": "/home/user/w/" + name}],
       "multipart write of %s (%d bytes) answers its entry" % (name, len(data)), (st, doc))
    st, ct, got = read("/home/user/w/" + name)
    ok(st == 200 and got == data and ct.startswith("application/octet-stream"),
       "GET /files gives %s's bytes back exactly" % name, (st, ct, len(got)))
    with open(os.path.join(WS, "w", name), "rb") as f:
        ok(f.read() == data, "... and the host's file holds them")

over = b"x" * (MAX + 1)
st, _, body = upload([("file", "/home/user/w/over.bin", over)])
ok(st == 413 and json.loads(body)["code"] == 413 and not os.path.exists(os.path.join(WS, "w/over.bin")),
   "one byte over the write limit: 413 {code, message}, nothing written", (st, body))
st, _, body = req("POST", "/files?path=/home/user/w/over2.bin", over,
                  {"Content-Type": "application/octet-stream"})
ok(st == 413 and not os.path.exists(os.path.join(WS, "w/over2.bin")),
   "octet-stream one byte over: 413, nothing written", (st, body))
st, _, body = req("POST", "/files?path=/home/user/w/huge.bin", b"y" * (MAX + 200000),
                  {"Content-Type": "application/octet-stream"})
ok(st == 413, "a body past the route's cap: 413 before it is read", (st, body[:200]))

# octet-stream, relative paths, parents made, ?username=
st, _, body = req("POST", "/files?path=deep/er/o.bin&username=user", b"\0octet\r\n",
                  {"Content-Type": "application/octet-stream"})
ok(st == 200 and json.loads(body) == [{"name": "o.bin", "type": "file", "path": "/home/user/deep/er/o.bin"}],
   "octet-stream upload to a relative path makes its parents", (st, body))
st, _, got = read("deep/er/o.bin")
ok(st == 200 and got == b"\0octet\r\n", "a relative read gives it back", (st, got))
st, _, got = read("/home/user/./deep//er/o.bin")
ok(st == 200 and got == b"\0octet\r\n", "'.' and '//' in a path are the same file", (st, got))

# several parts at once, ?path= naming the one file
st, _, body = upload([("file", "m/a.txt", b"A"), ("file", "m/b.txt", b"BB"), ("other", None, b"ignored")])
ok(st == 200 and [e["path"] for e in json.loads(body)] == ["/home/user/m/a.txt", "/home/user/m/b.txt"],
   "several parts: each written, each answered", (st, body))
ok(read("m/b.txt")[2] == b"BB", "... the second part's bytes are its own")
st, _, body = upload([("file", "ignored-name", b"Q")], query="?path=/home/user/q.txt")
ok(st == 200 and json.loads(body)[0]["path"] == "/home/user/q.txt" and read("q.txt")[2] == b"Q",
   "?path= names the file of a one-part upload", (st, body))
st, _, body = upload([("file", "x1", b"1"), ("file", "x2", b"2")], query="?path=/home/user/two.txt")
ok(st == 400 and not os.path.exists(os.path.join(WS, "two.txt")),
   "?path= with two parts: 400, nothing written", (st, body))

# ---- GET /files errors ----
st, ct, body = read("/home/user/nope.txt")
doc = json.loads(body)
ok(st == 404 and doc["code"] == 404 and doc["message"], "a missing file: 404 {code, message}", (st, body))
st, _, body = read("/home/user/w")
ok(st == 400 and json.loads(body)["code"] == 400, "a directory: 400", (st, body))
st, _, body = req("GET", "/files")
ok(st == 400, "no ?path=: 400", (st, body))
st, _, body = read("/home/user/host-link")
ok(st != 200, "a symlink to a host file is not followed on the host (%d)" % st, body)
st, _, body = read("/home/user/etc-link/passwd")
ok(st != 200 and b"root:" not in body, "a path through a symlink out of the workspace is not followed (%d)" % st, body)
with open("/etc/passwd", "rb") as f:
    host_passwd = f.read()
st, _, inner = read("/etc/passwd")
ok(st == 200 and b"root:" in inner and inner != host_passwd,
   "a path outside the home is the container's, not the host's", (st, inner[:200]))
st, _, body = read("/home/user/../../etc/passwd")
ok(st == 200 and body == inner, "'..' out of the home is the container's path too", (st, body[:200]))

# ---- the container's paths: write, read, stat, list, mkdir, move, remove ----
data = bytes(range(256)) + b"\0inside"
st, _, body = req("POST", "/files?path=/tmp/e2b-fs/deep/in.bin", data, {"Content-Type": "application/octet-stream"})
ok(st == 200 and json.loads(body) == [{"name": "in.bin", "type": "file", "path": "/tmp/e2b-fs/deep/in.bin"}]
   and not os.path.exists("/tmp/e2b-fs"), "an upload to /tmp: the container's, its parents made", (st, body))
st, _, got = read("/tmp/e2b-fs/deep/in.bin")
ok(st == 200 and got == data, "... read back exactly from the container", (st, len(got)))
st, _, body = upload([("file", "/tmp/e2b-fs/mp.txt", b"multi")])
ok(st == 200 and read("/tmp/e2b-fs/mp.txt")[2] == b"multi", "a multipart upload to /tmp", (st, body))
st, doc = connect("Stat", {"path": "/tmp/e2b-fs/deep/in.bin"})
ok(st == 200 and doc["entry"]["type"] == "FILE_TYPE_FILE" and int(doc["entry"]["size"]) == len(data)
   and doc["entry"]["path"] == "/tmp/e2b-fs/deep/in.bin" and doc["entry"]["owner"],
   "Stat in the container", (st, doc))
st, doc = connect("ListDir", {"path": "/"})
names = [e["name"] for e in doc.get("entries", [])] if st == 200 else []
ok(st == 200 and "tmp" in names and "etc" in names, "ListDir of / lists the container's root", (st, str(doc)[:300]))
st, doc = connect("ListDir", {"path": "/tmp/e2b-fs", "depth": 2})
paths = sorted(e["path"] for e in doc.get("entries", [])) if st == 200 else []
ok(paths == ["/tmp/e2b-fs/deep", "/tmp/e2b-fs/deep/in.bin", "/tmp/e2b-fs/mp.txt"], "ListDir depth 2 in the container", (st, doc))
st, doc = connect("MakeDir", {"path": "/tmp/e2b-fs/made/sub"})
ok(st == 200 and doc["entry"]["type"] == "FILE_TYPE_DIRECTORY", "MakeDir in the container", (st, doc))
st, doc = connect("MakeDir", {"path": "/tmp/e2b-fs/made/sub"})
ok(st == 409 and doc.get("code") == "already_exists", "... again: already_exists", (st, doc))
st, doc = connect("Move", {"source": "/tmp/e2b-fs/mp.txt", "destination": "/home/user/from-tmp.txt"})
ok(st == 200 and doc["entry"]["path"] == "/home/user/from-tmp.txt"
   and open(os.path.join(WS, "from-tmp.txt"), "rb").read() == b"multi",
   "Move from /tmp into the home: the container moves it, the workspace has it", (st, doc))
st, doc = connect("Remove", {"path": "/tmp/e2b-fs"})
ok(st == 200 and read("/tmp/e2b-fs/deep/in.bin")[0] == 404, "Remove in the container", (st, doc))
st, _, body = read("/tmp/e2b-fs/none")
ok(st == 404 and json.loads(body)["code"] == 404, "a missing container's file: 404", (st, body))
st, _, body = read("/tmp")
ok(st == 400, "a container's directory: 400", (st, body))

# ---- users ----
st, _, body = req("GET", "/files?path=q.txt&username=root")
ok(st == 403 and b"root" in body, "?username=root: 403", (st, body))
st, _, body = req("GET", "/files?path=q.txt&username=sandbox")
ok(st == 200 and body == b"Q", "?username= the runtime's user: served", (st, body))
st, _, body = req("GET", "/files?path=q.txt&username=mallory")
ok(st == 400, "another user: 400", (st, body))
root = {"Authorization": "Basic " + base64.b64encode(b"root:").decode()}
st, doc = connect("Stat", {"path": "q.txt"}, root)
ok(st == 403 and doc.get("code") == "permission_denied", "Connect as root: permission_denied", (st, doc))
st, doc = connect("Stat", {"path": "q.txt"}, {"Authorization": "Basic !!not base64"})
ok(st == 400 and doc.get("code") == "invalid_argument", "Authorization: Basic that is not base64: invalid_argument", (st, doc))
st, doc = connect("Stat", {"path": "q.txt"}, {"Authorization": "Basic " + base64.b64encode(b"sandbox:").decode()})
ok(st == 200, "Connect as the runtime's user: served", (st, doc))
st, _, body = req("POST", "/files?path=gz.txt", b"\x1f\x8b", {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})
ok(st == 415 and not os.path.exists(os.path.join(WS, "gz.txt")), "a gzip upload: 415, nothing written", (st, body))
user = {"Authorization": "Basic " + base64.b64encode(b"user:").decode()}
st, doc = connect("Stat", {"path": "q.txt"}, user)
ok(st == 200, "Connect as user: served", (st, doc))

# ---- Stat ----
st, doc = connect("Stat", {"path": "/home/user/w/bin.dat"})
e = doc.get("entry", {}) if st == 200 else {}
ok(st == 200 and e.get("name") == "bin.dat" and e.get("type") == "FILE_TYPE_FILE"
   and e.get("path") == "/home/user/w/bin.dat" and int(e.get("size")) == len(cases["bin.dat"])
   and e.get("permissions", "").startswith("-rw") and e.get("owner") == "user"
   and e.get("modifiedTime", "").endswith("Z") and isinstance(e.get("mode"), int),
   "Stat: an EntryInfo of every field", (st, doc))
st, doc = connect("Stat", {"path": "w"})
ok(st == 200 and doc["entry"]["type"] == "FILE_TYPE_DIRECTORY" and doc["entry"]["permissions"][0] == "d",
   "Stat of a relative directory", (st, doc))
st, doc = connect("Stat", {"path": "host-link"})
ok(st == 200 and doc["entry"]["type"] == "FILE_TYPE_SYMLINK" and doc["entry"].get("symlinkTarget") == "/etc/hostname",
   "Stat of a symlink: the link itself, its target named", (st, doc))
st, doc = connect("Stat", {"path": ""})
ok(st == 200 and doc["entry"]["path"] == "/home/user" and doc["entry"]["name"] == "user",
   "Stat of the home", (st, doc))
st, doc = connect("Stat", {"path": "/home/user/none"})
ok(st == 404 and doc.get("code") == "not_found", "Stat of a missing path: not_found", (st, doc))
st, doc = connect("Stat", {"path": 7})
ok(st == 400 and doc.get("code") == "invalid_argument", "a path that is not a string: invalid_argument", (st, doc))
st, doc = connect("Stat", {"path": "a\u0000b"})
ok(st == 400 and doc.get("code") == "invalid_argument", "a path with a NUL: invalid_argument", (st, doc))

# ---- ListDir ----
for i in range(3):
    upload([("file", "tree/d%d/e%d/f.txt" % (i, i), b"x")])
st, doc = connect("ListDir", {"path": "/home/user/tree"})
names = sorted(e["path"] for e in doc.get("entries", []))
ok(st == 200 and names == ["/home/user/tree/d0", "/home/user/tree/d1", "/home/user/tree/d2"],
   "ListDir, depth 1 by default: the directory's own entries", (st, doc))
st, doc = connect("ListDir", {"path": "tree", "depth": 2})
names = sorted(e["path"] for e in doc.get("entries", []))
ok(st == 200 and len(names) == 6 and "/home/user/tree/d1/e1" in names, "ListDir depth 2: two levels", (st, names))
st, doc = connect("ListDir", {"path": "tree", "depth": "3"})
names = sorted(e["path"] for e in doc.get("entries", []))
ok(st == 200 and "/home/user/tree/d2/e2/f.txt" in names and len(names) == 9,
   "ListDir depth 3 (as a string, protobuf's uint32 JSON)", (st, names))
ok(all(set(e) >= {"name", "type", "path", "size", "mode", "permissions", "owner", "group"}
       for e in doc.get("entries", [])), "every entry has EntryInfo's fields")
st, doc = connect("ListDir", {"path": "tree", "depth": 11})
ok(st == 400 and doc.get("code") == "invalid_argument", "depth over 10: invalid_argument", (st, doc))
st, doc = connect("ListDir", {"path": "tree", "depth": -1})
ok(st == 400, "a negative depth: invalid_argument", (st, doc))
st, doc = connect("ListDir", {"path": "w/bin.dat"})
ok(st != 200 or doc.get("entries") is not None, "ListDir of a file answers (%d)" % st, doc)
st, doc = connect("ListDir", {"path": "nowhere"})
ok(st == 404 and doc.get("code") == "not_found", "ListDir of a missing directory: not_found", (st, doc))
st, doc = connect("ListDir", {"path": "etc-link"})
ok(st != 200 or not any(e["name"] == "passwd" for e in doc.get("entries", [])),
   "ListDir through a symlink out of the workspace shows nothing of the host", (st, doc))
os.makedirs(os.path.join(WS, "big"))
for i in range(10001):
    open(os.path.join(WS, "big", "f%05d" % i), "w").close()
st, doc = connect("ListDir", {"path": "big"})
ok(st == 400 and doc.get("code") == "out_of_range", "more than 10000 entries: out_of_range", (st, str(doc)[:300]))

# ---- Remove, MakeDir, Move, watchers ----
st, doc = connect("Remove", {"path": "tree/d0"})
ok(st == 200 and doc == {} and not os.path.exists(os.path.join(WS, "tree/d0")),
   "Remove of a directory: {} and gone", (st, doc))
st, doc = connect("Remove", {"path": "tree/none"})
ok(st == 404 and doc.get("code") == "not_found", "Remove of a missing path: not_found", (st, doc))
st, doc = connect("Remove", {"path": "/home/user"})
ok(st == 400 and os.path.isdir(WS), "Remove of the home: refused", (st, doc))
st, doc = connect("Remove", {"path": "etc-link"})
ok(st == 200 and os.path.isdir("/etc") and not os.path.lexists(os.path.join(WS, "etc-link")),
   "Remove of a symlink removes the link, not its target", (st, doc))
st, doc = connect("MakeDir", {"path": "newdir/sub"})
ok(st == 200 and doc["entry"]["type"] == "FILE_TYPE_DIRECTORY" and doc["entry"]["path"] == "/home/user/newdir/sub"
   and os.path.isdir(os.path.join(WS, "newdir/sub")) and os.stat(os.path.join(WS, "newdir")).st_uid == 10001,
   "MakeDir makes the directory and its parents, the sandbox's", (st, doc))
st, doc = connect("MakeDir", {"path": "/home/user/newdir/sub"})
ok(st == 409 and doc.get("code") == "already_exists", "MakeDir of a directory there: already_exists", (st, doc))
st, doc = connect("MakeDir", {"path": "q.txt/x"})
ok(st >= 400 and st < 500 and st != 409, "MakeDir under a file: refused (%d)" % st, doc)
os.symlink("/etc", os.path.join(WS, "etc-link2"))
st, doc = connect("MakeDir", {"path": "etc-link2/sbxcat-e2b-fs"})
ok(st != 200 and not os.path.exists("/etc/sbxcat-e2b-fs"), "MakeDir through a symlink out: never on the host (%d)" % st, doc)
st, doc = connect("Move", {"source": "q.txt", "destination": "newdir/q2.txt"})
ok(st == 200 and doc["entry"]["path"] == "/home/user/newdir/q2.txt" and doc["entry"]["type"] == "FILE_TYPE_FILE"
   and doc["entry"]["name"] == "q2.txt" and read("newdir/q2.txt")[2] == b"Q" and read("q.txt")[0] == 404,
   "Move renames, answering the moved entry", (st, doc))
st, doc = connect("Move", {"source": "newdir", "destination": "moved-dir"})
ok(st == 200 and doc["entry"]["type"] == "FILE_TYPE_DIRECTORY" and read("moved-dir/q2.txt")[2] == b"Q",
   "Move of a directory", (st, doc))
st, doc = connect("Move", {"source": "moved-dir/q2.txt", "destination": "etc-link2/sbxcat-e2b-moved"})
ok(st != 200 and not os.path.exists("/etc/sbxcat-e2b-moved") and read("moved-dir/q2.txt")[2] == b"Q",
   "Move into a symlink out of the workspace: refused, never on the host (%d)" % st, doc)
st, doc = connect("Move", {"source": "etc-link2/hostname", "destination": "stolen"})
ok(st != 200 and not os.path.exists(os.path.join(WS, "stolen")),
   "Move out of a symlink leading out: refused (%d)" % st, doc)
st, doc = connect("Move", {"source": "none", "destination": "x"})
ok(st == 404 and doc.get("code") == "not_found", "Move of a missing path: not_found", (st, doc))
st, doc = connect("Move", {"source": "moved-dir", "destination": "nodir/x"})
ok(st == 404, "Move into a missing directory: not_found", (st, doc))
st, doc = connect("Move", {"source": "host-link", "destination": "hl2"})
ok(st == 200 and doc["entry"]["type"] == "FILE_TYPE_SYMLINK" and os.path.exists("/etc/hostname"),
   "Move of a symlink moves the link", (st, doc))
st, doc = connect("Move", {"source": "moved-dir", "destination": "/tmp/out"})
ok(st == 200 and not os.path.exists("/tmp/out") and not os.path.exists(os.path.join(WS, "moved-dir"))
   and read("/tmp/out/q2.txt")[2] == b"Q", "Move out of the home: the container's /tmp, never the host's", (st, doc))
st, doc = connect("Move", {"source": "moved-dir"})
ok(st == 400 and doc.get("code") == "invalid_argument", "Move without a destination: invalid_argument", (st, doc))
st, doc = connect("MakeDir", {})
ok(st == 400 and doc.get("code") == "invalid_argument", "MakeDir without a path: invalid_argument", (st, doc))
for m in ("CreateWatcher", "GetWatcherEvents", "RemoveWatcher"):
    st, doc = connect(m, {"path": "w"})
    ok(st == 501 and doc.get("code") == "unimplemented" and doc.get("message"),
       "%s: unimplemented with a message" % m, (st, doc))
env = json.dumps({"path": "w"}).encode()
st, ct, body = req("POST", "/filesystem.Filesystem/WatchDir", b"\0" + len(env).to_bytes(4, "big") + env,
                   {"Content-Type": "application/connect+json"})
ok(st == 200 and ct.startswith("application/connect+json") and body[0] == 2 and b"unimplemented" in body,
   "WatchDir (a stream): an end-stream frame saying unimplemented", (st, ct, body))

# ---- who ----
st, _, body = req("GET", "/files?path=q.txt", headers={"X-Access-Token": "wrong"})
ok(st == 401, "a wrong X-Access-Token: 401", (st, body))
st, doc = connect("Stat", {"path": "q.txt"}, {"E2b-Sandbox-Id": "b" * 20})
ok(st == 401, "another sandbox id with this token: 401", (st, doc))

# ---- multipart tricks: each a 400, the service alive ----
B = "----trick"
def raw_upload(body, ct="multipart/form-data; boundary=" + B):
    return req("POST", "/files", body, {"Content-Type": ct})

disp = b'Content-Disposition: form-data; name="file"; filename="t/x.txt"\r\n\r\n'
tricks = {
    "no boundary parameter": (b"--" + B.encode() + b"\r\n" + disp + b"x\r\n--" + B.encode() + b"--", "multipart/form-data"),
    "not multipart": (b"x", "text/plain"),
    "a part without a name": (b"--" + B.encode() + b'\r\nContent-Disposition: form-data; filename="t/y"\r\n\r\nx\r\n--' + B.encode() + b"--", None),
    "a filename with a NUL": (b"--" + B.encode() + b'\r\nContent-Disposition: form-data; name="file"; filename="t/a\0b"\r\n\r\nx\r\n--' + B.encode() + b"--", None),
    "a filename with a newline": (b"--" + B.encode() + b'\r\nContent-Disposition: form-data; name="file"; filename="t/a\nb"\r\n\r\nx\r\n--' + B.encode() + b"--", None),
    "headers split by a bare LF": (b"--" + B.encode() + b'\r\nContent-Disposition: form-data;\n name="file"; filename="t/z"\r\n\r\nx\r\n--' + B.encode() + b"--", None),
    "a folded header": (b"--" + B.encode() + b'\r\nContent-Disposition: form-data;\r\n name="file"; filename="t/z"\r\n\r\nx\r\n--' + B.encode() + b"--", None),
    "a missing final boundary": (b"--" + B.encode() + b"\r\n" + disp + b"x\r\n", None),
    "no boundary line at all": (b"just bytes", None),
    "a part with no filename": (b"--" + B.encode() + b'\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--' + B.encode() + b"--", None),
    "no part named file": (b"--" + B.encode() + b'\r\nContent-Disposition: form-data; name="f"; filename="t/q"\r\n\r\nx\r\n--' + B.encode() + b"--", None),
    "huge part headers": (b"--" + B.encode() + b"\r\nX-Pad: " + b"p" * 20000 + b"\r\n" + disp + b"x\r\n--" + B.encode() + b"--", None),
    "1001 parts": (b"".join(b"--" + B.encode() + b'\r\nContent-Disposition: form-data; name="file"; filename="t/n%d"\r\n\r\n\r\n' % i for i in range(1001)) + b"--" + B.encode() + b"--", None),
    "an unclosed quote": (b"--" + B.encode() + b'\r\nContent-Disposition: form-data; name="file; filename=t/q\r\n\r\nx\r\n--' + B.encode() + b"--", None),
}
for what, (body, ct) in tricks.items():
    st, _, ans = raw_upload(body, ct) if ct else raw_upload(body)
    good = st == 400
    try:
        good = good and json.loads(ans)["code"] == 400
    except (ValueError, KeyError):
        good = False
    ok(good, "multipart with %s: 400 {code, message}" % what, (st, ans[:300]))
body = b"".join(b"--" + B.encode() + b'\r\nContent-Disposition: form-data; name="file"; filename="t/n%d"\r\n\r\n\r\n' % i for i in range(10000)) + b"--" + B.encode() + b"--"
# Headers alone: the answer comes before the body is read.
sk = socket.create_connection(("127.0.0.1", PORT), timeout=30)
head = "POST /files HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n" % (B, len(body))
head += "".join("%s: %s\r\n" % kv for kv in ENVD.items()) + "\r\n"
sk.sendall(head.encode())
ans = sk.recv(4096)
sk.close()
ok(ans.startswith(b"HTTP/1.1 413"), "a body of 10000 parts, past the route's cap: 413 before it is read", ans[:200])
ok(not os.path.exists(os.path.join(WS, "t")), "no trick wrote a file")
# The boundary inside the content (not after CRLF) is content.
body = b"--" + B.encode() + b"\r\n" + disp + b"a--" + B.encode() + b"--b\r\n--" + B.encode() + b"--"
st, _, ans = raw_upload(body)
ok(st == 200 and read("t/x.txt")[2] == b"a--" + B.encode() + b"--b", "the boundary inside a part's bytes is content", (st, ans))
# '../' in a filename: a path out of the home, never the host's.
st, _, ans = upload([("file", "../../../../tmp/sbxcat-e2b-fs-escape", b"E")])
ok(st == 200 and not os.path.exists("/tmp/sbxcat-e2b-fs-escape")
   and read("/tmp/sbxcat-e2b-fs-escape")[2] == b"E",
   "a filename with ../ climbing out of the home writes the container's /tmp, never the host's", (st, ans))

# Random mutations of a good body: any answer but a 5xx, the service alive.
random.seed(int(os.environ.get("E2B_FS_SEED", "30")))
good, ct = multipart([("file", "fz/a", b"AAAA"), ("file", "fz/b", b"\r\n--x")])
bad5 = 0
for i in range(300):
    b = bytearray(good)
    for _ in range(random.randint(1, 6)):
        k = random.randrange(4)
        at = random.randrange(len(b) + 1)
        if k == 0 and b:
            b[at % len(b)] = random.randrange(256)
        elif k == 1:
            del b[at:at + random.randint(1, 20)]
        else:
            b[at:at] = random.choice([b"\r\n", b"--", b"--" + B.encode(), b"\0", b'"', b";", b"\n", b"../"])
    st, _, ans = req("POST", "/files", bytes(b), {"Content-Type": ct})
    if st >= 500 or st not in (200, 400, 403, 404, 409, 413):
        bad5 += 1
        diag("mutation %d: %d %r" % (i, st, ans[:200]))
ok(bad5 == 0, "300 mutated multipart bodies: none a 5xx or an odd status")
ok(alive(), "the service is the same process and answers after all of it")
plan()
EOF
p_rc=$?
is "$p_rc" 0 "the HTTP side ran to its end"
sed 's/^/# /' "$T/py.err" | head -20
cat "$T/py.tap" | grep -v '^1\.\.' | sed 's/^ok [0-9]* - /ok - /; s/^not ok [0-9]* - /not ok - /' >"$T/py.lines"
while IFS= read -r line; do
	case $line in
	"ok - "*) ok 0 "${line#ok - }" ;;
	"not ok - "*) ok 1 "${line#not ok - }" ;;
	*) echo "$line" ;;
	esac
done <"$T/py.lines"

# The audit: every operation its row, op and target as served.
rows() { q "SELECT count(*) FROM sandbox_operations WHERE wire_id = '$SID' AND op = '$1' AND target = '$2'"; }
for spec in "write w/bin.dat" "write deep/er/o.bin" "read_bytes w/bin.dat" "stat w/bin.dat" \
	"ls_info tree" "remove tree/d0"; do
	n=$(rows "${spec%% *}" "${spec#* }")
	ok "$([ "${n:-0}" -ge 1 ]; echo $?)" "the audit has a ${spec%% *} row of ${spec#* } ($n)"
done
n=$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id = '$SID' AND op = 'write' AND target = 'newdir/sub' AND detail = 'directory made'")
is "$n" 1 "MakeDir's row: write of newdir/sub, 'directory made'"
n=$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id = '$SID' AND op = 'write' AND target = 'q.txt -> newdir/q2.txt' AND detail = 'moved'")
is "$n" 1 "Move's row: write of 'q.txt -> newdir/q2.txt', 'moved'"
n=$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id = '$SID' AND op = 'ls_info' AND target = '.'")
ok "$([ "${n:-0}" -ge 1 ]; echo $?)" "Stat of the home: its ls_info row of . ($n)"
n=$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id = '$SID' AND op = 'write' AND target = 'w/over.bin'")
is "$n" 0 "a write refused before it ran (over the limit) wrote no row"
n=$(q "SELECT count(*) FROM sandbox_operations WHERE wire_id = '$SID' AND op = 'read_bytes' AND target = 'nope.txt' AND NOT ok")
ok "$([ "${n:-0}" -ge 1 ]; echo $?)" "a read of a missing file has its refused row ($n)"
# The container's paths: the rows name the sandbox's path.
for spec in "write /tmp/e2b-fs/deep/in.bin" "stat /tmp/e2b-fs/deep/in.bin" "remove /tmp/e2b-fs"; do
	n=$(rows "${spec%% *}" "${spec#* }")
	ok "$([ "${n:-0}" -ge 1 ]; echo $?)" "the audit has a ${spec%% *} row of ${spec#* } ($n)"
done
kill -0 "$SPID" 2>/dev/null
ok $? "sbxcat serve is still running"
sb_done

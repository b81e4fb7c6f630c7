#!/usr/bin/env python3
# tests/fake-engine.py SOCKET MODE DIR - a stand-in Docker engine on a unix
# socket, for what a real engine will not do on demand.
#
#   old        GET /version says ApiVersion 1.40 (Docker 19.03)
#   notdocker  GET /version answers JSON without an ApiVersion
#   build      API 1.41, no image is ever present, POST /build succeeds
#              (a complete stream) without tagging anything
#   stall      like build, but POST /build sends one line and then nothing,
#              and GET /_ping never answers: an engine that stopped
#   many       like build, but POST /build streams 1,000 steps at once
#   hostile    every image is present, the registry has nothing (GET
#              /distribution: 404), and POST /images/NAME/push answers 200
#              with a 2 MiB line, lines that are not JSON, and, for a NAME
#              holding "err", an error line with a terminal escape in it
#
# Each request line and its headers are appended to DIR/requests; the body
# of each POST /build, de-chunked, is saved as DIR/build-N.tar.
import http.server
import json
import os
import socketserver
import sys
import threading
import time

sock, mode, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
count = {"build": 0}
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def address_string(self):
        return "unix"

    def record(self):
        with lock, open(os.path.join(outdir, "requests"), "a") as f:
            f.write(self.requestline + "\n")
            for k, v in self.headers.items():
                f.write("  %s: %s\n" % (k, v))

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        if self.headers.get("Transfer-Encoding", "") == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        self.record()
        path = self.path.split("?")[0]
        if path == "/version":
            if mode == "old":
                self.reply(200, {"ApiVersion": "1.40", "MinAPIVersion": "1.12",
                                 "Version": "19.03.15"})
            elif mode == "notdocker":
                self.reply(200, {"hello": "world"})
            else:
                self.reply(200, {"ApiVersion": "1.41", "MinAPIVersion": "1.12",
                                 "Version": "20.10.24-fake"})
        elif path == "/_ping" and mode == "stall":
            time.sleep(3600)
        elif path == "/_ping":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")
        elif path.endswith("/images/json") or path.endswith("/containers/json"):
            self.reply(200, [])
        elif path.endswith("/json") and "/images/" in path and mode == "hostile":
            name = path[path.index("/images/") + 8:-5]
            self.reply(200, {"Id": "sha256:" + "ab" * 32, "RepoTags": [name]})
        elif path.endswith("/json") and "/images/" in path:
            self.reply(404, {"message": "No such image: fake"})
        elif "/distribution/" in path:
            self.reply(404, {"message": "manifest unknown"})
        else:
            self.reply(404, {"message": "page not found"})

    def do_POST(self):
        self.record()
        if self.path.split("?")[0].endswith("/build"):
            data = self.body()
            with lock:
                count["build"] += 1
                n = count["build"]
            with open(os.path.join(outdir, "build-%d.tar" % n), "wb") as f:
                f.write(data)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if mode == "many":
                self.chunk("".join('{"stream":"Step %d/1000 : RUN true\\n"}\r\n' % i
                                   for i in range(1, 1001)))
            self.chunk('{"stream":"Step 1/2 : FROM sbxcat-test/busybox:1"}\r\n')
            if mode == "stall":
                time.sleep(3600)
            self.chunk('{"stream":"\\n"}\r\n{"stream":"Step 2/2 : RUN true\\n"}\r\n')
            self.chunk('{"aux":{"ID":"sha256:0000"}}\r\n')
            self.chunk('{"stream":"Successfully built 0000\\n"}\r\n')
            self.wfile.write(b"0\r\n\r\n")
        elif mode == "hostile" and self.path.split("?")[0].endswith("/tag"):
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "hostile" and self.path.split("?")[0].endswith("/push"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.chunk('{"status":"The push refers to repository"}\r\n')
            self.chunk("x" * (2 << 20) + "\r\n")
            self.chunk("not json {{{\r\n[1,2]\r\n")
            if "err" in self.path:
                self.chunk('{"errorDetail":{"message":"denied: \\u001b[31mred"},'
                           '"error":"denied: \\u001b[31mred"}\r\n')
            self.chunk('{"status":"done"}\r\n')
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.reply(404, {"message": "page not found"})

    def do_DELETE(self):
        self.record()
        self.reply(200, [])


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


if os.path.exists(sock):
    os.unlink(sock)
Server(sock, Handler).serve_forever()

#!/usr/bin/env python3
"""stallproxy.py LISTEN TARGET PATTERN SECONDS - forward every connection
made to the unix socket LISTEN to the unix socket TARGET, both ways, but
hold a request whose bytes hold PATTERN (e.g. "/containers/create")
SECONDS before passing it on: an engine that is slow at one call, so a
test can catch an open between its count and its start.  Each time it
holds one it appends a line to LISTEN.held.  SIGTERM removes LISTEN."""
import os
import signal
import socket
import sys
import threading
import time

listen, target, pattern, secs = sys.argv[1], sys.argv[2], sys.argv[3].encode(), float(sys.argv[4])
try:
    os.unlink(listen)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX)
srv.bind(listen)
srv.listen(128)


def stop(*_):
    try:
        os.unlink(listen)
    except FileNotFoundError:
        pass
    os._exit(0)


signal.signal(signal.SIGTERM, stop)


def pump(a, b, hold):
    # An end goes on as a half-close (an exec's stdin ends so); an error
    # ends both.
    try:
        while True:
            data = a.recv(65536)
            if not data:
                b.shutdown(socket.SHUT_WR)
                return
            if hold and pattern in data:
                with open(listen + ".held", "a") as f:
                    f.write("held\n")
                time.sleep(secs)
            b.sendall(data)
    except OSError:
        for x in (a, b):
            try:
                x.close()
            except OSError:
                pass


while True:
    c, _ = srv.accept()
    e = socket.socket(socket.AF_UNIX)
    try:
        e.connect(target)
    except OSError:
        c.close()
        continue
    threading.Thread(target=pump, args=(c, e, True), daemon=True).start()
    threading.Thread(target=pump, args=(e, c, False), daemon=True).start()

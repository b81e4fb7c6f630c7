#!/usr/bin/env python3
"""sockproxy.py LISTEN TARGET - forward every connection made to the unix
socket LISTEN to the unix socket TARGET, byte for byte, both ways (the
test's way to take an engine away and give it back: kill this, start it
again).  SIGTERM closes every connection and removes LISTEN."""
import os
import selectors
import signal
import socket
import sys

listen, target = sys.argv[1], sys.argv[2]
try:
    os.unlink(listen)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX)
srv.bind(listen)
srv.listen(128)
sel = selectors.DefaultSelector()
sel.register(srv, selectors.EVENT_READ)
peer = {}


def stop(*_):
    for s in list(peer):
        s.close()
    try:
        os.unlink(listen)
    except FileNotFoundError:
        pass
    os._exit(0)


signal.signal(signal.SIGTERM, stop)
while True:
    for key, _ in sel.select():
        s = key.fileobj
        if s is srv:
            a, _ = srv.accept()
            b = socket.socket(socket.AF_UNIX)
            try:
                b.connect(target)
            except OSError:
                a.close()
                continue
            peer[a], peer[b] = b, a
            sel.register(a, selectors.EVENT_READ)
            sel.register(b, selectors.EVENT_READ)
            continue
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        other = peer.get(s)
        if data and other:
            try:
                other.sendall(data)
                continue
            except OSError:
                pass
        for x in (s, other):
            if x is not None and x in peer:
                sel.unregister(x)
                peer.pop(x, None)
                x.close()

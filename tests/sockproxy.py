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
ended = {}  # a socket whose reading side has ended (its peer half-closed)


def drop(x):
    if x in peer:
        try:
            sel.unregister(x)
        except (KeyError, ValueError):
            pass
        peer.pop(x, None)
        ended.pop(x, None)
        x.close()


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
        if s not in peer:
            continue
        other = peer[s]
        try:
            data = s.recv(65536)
        except OSError:
            data = None
        if data:
            try:
                other.sendall(data)
                continue
            except OSError:
                data = None
        if data is None:
            drop(s)
            drop(other)
            continue
        # A half-close goes on as a half-close (an exec's stdin ends so).
        sel.unregister(s)
        ended[s] = True
        try:
            other.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        if other in ended:
            drop(s)
            drop(other)

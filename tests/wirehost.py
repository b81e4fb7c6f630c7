"""What the tests of sbxcat serve read on the host, not on the wire."""
import http.client
import json
import os
import socket


def key_of(root, sid):
    """The key of the wire's session sid, as the host knows it
    (ROOT/KEY/wire.json names the wire's id): the wire never says it."""
    for d in os.listdir(root):
        try:
            with open(os.path.join(root, d, "wire.json")) as f:
                if json.load(f).get("id") == sid:
                    return d
        except (OSError, ValueError):
            continue
    return None


def engine(method, path):
    """The test-bed's engine (DOCKER_HOST, a unix socket): (status, the
    JSON document, or None when the body is empty or not JSON)."""
    class UnixConn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(os.environ["DOCKER_HOST"][len("unix://"):])

    c = UnixConn("localhost", timeout=60)
    try:
        c.request(method, path)
        r = c.getresponse()
        text = r.read()
    finally:
        c.close()
    try:
        return r.status, json.loads(text) if text else None
    except ValueError:
        return r.status, None

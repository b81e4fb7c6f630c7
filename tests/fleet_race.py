#!/usr/bin/env python3
"""fleet_race.py - opens fired at once through several hosts of a fleet
(tests/t-fleet.sh): one thread per open, each with its connection made
first, then all released together by a barrier.  Prints one line per
open: "ID STATUS DETAIL-OR-HOST", DETAIL the answer's detail (a refusal)
or "-".

Usage: fleet_race.py TOKEN PREFIX M URL...  (the i-th open goes to the
(i mod len(URL))-th url).
"""
import http.client
import json
import sys
import threading
import urllib.parse

token, prefix, m, urls = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
barrier = threading.Barrier(m)
out = [None] * m


def one(i):
    u = urllib.parse.urlsplit(urls[i % len(urls)])
    sid = "%s%d" % (prefix, i)
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        c.connect()
    except OSError as e:
        barrier.abort()
        out[i] = "%s 000 %s" % (sid, e)
        return
    body = json.dumps({"session_id": sid, "runtime": "fb2"})
    try:
        barrier.wait(30)
        c.request("POST", "/sessions", body, {"X-Sandbox-Token": token,
                                              "Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        try:
            d = json.loads(data).get("detail") or "-"
        except ValueError:
            d = repr(data[:200])
        out[i] = "%s %d %s" % (sid, r.status, d)
    except Exception as e:  # noqa: BLE001 - every failure is a line
        out[i] = "%s 000 %r" % (sid, e)
    finally:
        c.close()


ts = [threading.Thread(target=one, args=(i,)) for i in range(m)]
for t in ts:
    t.start()
for t in ts:
    t.join(120)
for line in out:
    print(line if line else "? 000 no answer")

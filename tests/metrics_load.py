#!/usr/bin/env python3
"""metrics_load.py - /metrics scraped while clients load the server on
several routes and methods, each scrape read by a real parser
(tests/promcheck.py: promtool, prometheus_client's parser) and by the
rules they let pass (no series twice, HELP and TYPE for every family,
histograms consistent); then the last scrape's counts against what the
clients sent.  Prints TAP (no plan: the caller's).

  metrics_load.py http     tests/t-http's routes (t-http-metrics.sh)
  metrics_load.py serve    sbxcat serve's routes on the real engine
                           (t-serve-metrics.sh)

Environment: M_HOST, M_PORT; for serve also M_TOKEN (the service's),
M_SCRAPE (the scrape-only token), M_PREFIX (a prefix for session ids).
"""
import http.client
import json
import os
import sys
import threading
import time

import promcheck
from taplib import ok, plan

E = os.environ
HOST, PORT = E["M_HOST"], int(E["M_PORT"])
MODE = sys.argv[1]


class Client:
    def __init__(self):
        self.c = http.client.HTTPConnection(HOST, PORT, timeout=120)

    def req(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        data = json.dumps(body) if body is not None else None
        for attempt in (0, 1):
            try:
                self.c.request(method, path, body=data, headers=h)
                r = self.c.getresponse()
                text = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.c.close()
                return r.status, text
            except (http.client.HTTPException, ConnectionError, OSError):
                self.c.close()
                self.c = http.client.HTTPConnection(HOST, PORT, timeout=120)
                if attempt:
                    raise


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def xtoken(tok):
    return {"X-Sandbox-Token": tok}


def scrape(c, headers):
    st, text = c.req("GET", "/metrics", headers=headers)
    return st, text.decode("utf-8", "replace")


def run_load(ops, scrape_headers, seconds=6, workers=6, scrapers=2):
    """ops: a list of (method, path, body, headers); workers go round it
    (each from its own offset) while scrapers scrape.  Returns the number
    of requests each (method, path-template key) got, the scrapes' problems
    and how many scrapes there were."""
    sent = {}
    problems = []
    scrapes = [0]
    lock = threading.Lock()
    stop = time.time() + seconds

    def work(k):
        c = Client()
        i = k
        while time.time() < stop:
            method, path, body, headers, key = ops[i % len(ops)]
            st, _ = c.req(method, path, body, headers)
            with lock:
                sent[(key, method, st)] = sent.get((key, method, st), 0) + 1
            i += 1

    def scraper():
        c = Client()
        while time.time() < stop:
            st, text = scrape(c, scrape_headers)
            p = promcheck.check(text) if st == 200 else ["status %d" % st]
            with lock:
                scrapes[0] += 1
                if p and len(problems) < 20:
                    problems.extend(p)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
    ts += [threading.Thread(target=scraper) for _ in range(scrapers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sent, problems, scrapes[0]


def hist_count(samples, route, method):
    return samples.get(("sbxcat_http_request_duration_seconds_count",
                        frozenset({("route", route), ("method", method)})))


def requests_sum(samples, route, method):
    t = 0
    for (name, labels), v in samples.items():
        d = dict(labels)
        if name == "sbxcat_http_requests_total" and d.get("route") == route and d.get("method") == method:
            t += v
    return t


def consistent(samples):
    """Each (route, method): its requests' total over statuses == its
    histogram's count (both counted under one lock, read under it)."""
    bad = []
    for (name, labels), v in samples.items():
        if name != "sbxcat_http_request_duration_seconds_count":
            continue
        d = dict(labels)
        if requests_sum(samples, d["route"], d["method"]) != v:
            bad.append((d, v, requests_sum(samples, d["route"], d["method"])))
    return bad


def common(sent, problems, nscrapes, final, samples):
    ok(nscrapes >= 4 and not problems,
       "%d scrapes under load, each accepted by %s"
       % (nscrapes, ", ".join(promcheck.readers() + ["the format's rules"])), "\n".join(problems))
    ok(not promcheck.check(final), "the scrape after the load too", "\n".join(promcheck.check(final)))
    bad = consistent(samples)
    ok(not bad and samples, "each (route, method)'s requests by status add up to its histogram's count", bad)


def mode_http():
    ops = [
        ("GET", "/echo/a", None, {}, "/echo/{x}"),
        ("POST", "/echo/b", {"x": 1}, {}, "/echo/{x}"),
        ("GET", "/only-put", None, {}, "-"),          # 405
        ("PUT", "/only-put", None, {}, "/only-put"),
        ("GET", "/no/such/route", None, {}, "-"),     # 404
        ("BREW", "/echo/c", None, {}, "-"),           # a method of no route: OTHER
        ("GET", "/odd%5C%22q/1", None, {}, '/odd\\"q/{x}'),
    ]
    sent, problems, k = run_load(ops, {})
    st, final = scrape(Client(), {})
    samples = promcheck.parse(final)
    common(sent, problems, k, final, samples)
    get = sum(v for (key, m, s), v in sent.items() if key == "/echo/{x}" and m == "GET")
    post = sum(v for (key, m, s), v in sent.items() if key == "/echo/{x}" and m == "POST")
    ok(hist_count(samples, "/echo/{x}", "GET") == get and hist_count(samples, "/echo/{x}", "POST") == post,
       "GET and POST of one template are two series of the histogram, each with its own count (%d, %d)" % (get, post),
       [hist_count(samples, "/echo/{x}", "GET"), hist_count(samples, "/echo/{x}", "POST")])
    other = sum(v for (key, m, s), v in sent.items() if m == "BREW")
    ok(hist_count(samples, "-", "OTHER") == other and requests_sum(samples, "-", "OTHER") == other,
       "a method of no route is method=\"OTHER\" on route \"-\" (%d)" % other)
    wrong = sum(v for (key, m, s), v in sent.items() if key == "-" and m == "GET")
    ok(hist_count(samples, "-", "GET") == wrong,
       "a 404 and a 405 are route \"-\" with their method (%d GET)" % wrong)
    odd = sum(v for (key, m, s), v in sent.items() if key.startswith("/odd"))
    ok(hist_count(samples, '/odd\\"q/{x}', "GET") == odd and odd > 0,
       "a template holding a backslash and a double quote reads back as itself from the escaped label (%d)" % odd,
       [l for l in final.splitlines() if "odd" in l][:3])
    plan()


def mode_serve():
    tok, scr, P = E["M_TOKEN"], E["M_SCRAPE"], E["M_PREFIX"]
    c = Client()
    sids = []
    stoks = []
    for i in range(2):
        sid = "%sm%d" % (P, i)
        st, text = c.req("POST", "/sessions", {"session_id": sid}, xtoken(tok))
        if not ok(st == 200, "session %s opened" % sid, text):
            plan()
            return
        sids.append(sid)
        stoks.append(json.loads(text)["token"])
    ops = []
    for sid, stok in zip(sids, stoks):
        ops += [
            ("GET", "/sessions/" + sid, None, bearer(stok), "/sessions/{id}"),
            ("POST", "/sessions/%s/write" % sid, {"path": "m.txt", "content": "x"}, bearer(stok),
             "/sessions/{id}/write"),
            ("POST", "/sessions/%s/read" % sid, {"path": "m.txt"}, xtoken(stok), "/sessions/{id}/read"),
            ("POST", "/sessions/%s/exec" % sid, {"command": "true"}, xtoken(stok), "/sessions/{id}/exec"),
        ]
    ops += [
        ("GET", "/sessions", None, bearer(tok), "/sessions"),
        ("POST", "/sessions", {"session_id": "bad id!"}, xtoken(tok), "/sessions"),  # 422
        ("GET", "/healthz", None, {}, "/healthz"),
        ("PUT", "/sessions", None, xtoken(tok), "-"),                              # 405
        ("DELETE", "/sessions/%snone" % P, None, xtoken(tok), "/sessions/{id}"),   # 404
        ("BREW", "/healthz", None, {}, "-"),
    ]
    sent, problems, k = run_load(ops, bearer(scr))
    st, final = scrape(Client(), bearer(scr))
    samples = promcheck.parse(final)
    common(sent, problems, k, final, samples)
    get = hist_count(samples, "/sessions", "GET")
    post = hist_count(samples, "/sessions", "POST")
    ok(get and post and get >= sum(v for (key, m, s), v in sent.items() if key == "/sessions" and m == "GET")
       and post >= sum(v for (key, m, s), v in sent.items() if key == "/sessions" and m == "POST"),
       "GET /sessions and POST /sessions are two series of the histogram (%s, %s)" % (get, post))
    ok(hist_count(samples, "/sessions/{id}", "DELETE") and hist_count(samples, "/sessions/{id}", "GET"),
       "GET and DELETE /sessions/{id} too")
    for sid in sids:
        c.req("DELETE", "/sessions/" + sid, None, xtoken(tok))
    plan()


{"http": mode_http, "serve": mode_serve}[MODE]()

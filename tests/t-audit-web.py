#!/usr/bin/env python3
"""t-audit-web.py - the checks of tests/t-audit-web.sh against a running
`sbxcat audit web` (HTTP on loopback, http.client) and the database it
reads (psql, as the test-bed's superuser, for the counts).

    t-audit-web.py BASE_URL PSQL CONNINFO SHARE_DIR

Environment: TOK_A (tenant acme's auditor), TOK_ALL (every tenant's),
KEY_A, WIRE_A (an acme session), KEY_B, WIRE_B (a globex one), KEY_SQL
(an acme session whose row was inserted around sbxcat: chain broken).

Prints one line per check, "0 description" (passed) or "1 description:
what went wrong", for the shell's TAP; never raises out (an exception is
a failed check).
"""
import csv
import html.parser
import http.client
import io
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import xml.etree.ElementTree as ET

BASE, PSQL, CONNINFO, SHARE = sys.argv[1:5]
U = urllib.parse.urlsplit(BASE)
HOST, PORT = U.hostname, U.port
TOK_A, TOK_ALL = os.environ["TOK_A"], os.environ["TOK_ALL"]
KEY_A, WIRE_A = os.environ["KEY_A"], os.environ["WIRE_A"]
KEY_B, WIRE_B = os.environ["KEY_B"], os.environ["WIRE_B"]
KEY_SQL = os.environ["KEY_SQL"]
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def out(passed, desc, why=""):
    line = "%d %s" % (0 if passed else 1, desc)
    if not passed and why:
        line += ": " + str(why).replace("\n", " ")[:300]
    print(line, flush=True)


def check(desc, cond, why=""):
    out(bool(cond), desc, why)
    return bool(cond)


def sql(q):
    r = subprocess.run([PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", CONNINFO, "-c", q],
                       capture_output=True, text=True, timeout=30)
    if r.returncode:
        raise RuntimeError("psql: " + r.stderr)
    return r.stdout.strip()


HEADERS_SEEN = []


def req(method, path, headers=None, body=None, raw_path=False):
    """(status, headers dict (lower-case names), body bytes)."""
    c = http.client.HTTPConnection(HOST, PORT, timeout=15)
    c.putrequest(method, path, skip_accept_encoding=True)
    for k, v in (headers or {}).items():
        c.putheader(k, v)
    if body is not None:
        c.putheader("Content-Length", str(len(body)))
    c.endheaders(body)
    r = c.getresponse()
    data = r.read()
    h = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    HEADERS_SEEN.append((method, path, r.status, h))
    return r.status, h, data


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def get_json(path, tok=TOK_A):
    s, h, b = req("GET", path, bearer(tok))
    return s, json.loads(b.decode()) if b else None


def q(s):
    return urllib.parse.quote(s, safe="")


def all_rows(tok, query=""):
    rows, nxt, pages = [], None, 0
    while pages < 100:
        p = "/api/ops?limit=200" + query + ("&after=" + q(nxt) if nxt else "")
        s, d = get_json(p, tok)
        if s != 200:
            raise RuntimeError("%s: %d %s" % (p, s, d))
        rows += d["rows"]
        nxt = d["next"]
        pages += 1
        if not nxt:
            break
    return rows


class Inline(html.parser.HTMLParser):
    """Every inline script or style, event handler attribute, or style=."""

    def __init__(self):
        super().__init__()
        self.bad, self.in_script = [], False

    def handle_starttag(self, tag, attrs):
        names = [a for a, _ in attrs]
        if tag == "style":
            self.bad.append("<style>")
        if tag == "script":
            if "src" not in names:
                self.bad.append("<script> without src")
            self.in_script = True
        for a, v in attrs:
            if a == "style" or a.startswith("on"):
                self.bad.append("%s=%r on <%s>" % (a, v, tag))
            if a in ("href", "src", "action") and v and v.strip().lower().startswith("javascript:"):
                self.bad.append("javascript: URL")

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.in_script and data.strip():
            self.bad.append("inline script text")


def inline_of(page):
    p = Inline()
    p.feed(page)
    return p.bad


def main():
    # -- who asks
    s, h, b = req("GET", "/")
    check("a page without a login: 303 to /login", s == 303 and h.get("location") == "/login", (s, h))
    s, h, b = req("GET", "/api/ops")
    check("the API without a login: 401 JSON {error}", s == 401 and "error" in json.loads(b), (s, b))
    s, h, b = req("GET", "/api/ops", bearer("not-an-auditor-token-at-all"))
    check("a wrong Bearer token: 401", s == 401, s)
    s, h, b = req("POST", "/login", {"Content-Type": "application/x-www-form-urlencoded"},
                  b"token=wrong-token-wrong-token")
    check("POST /login with a wrong token: 401, the form again", s == 401 and b'id="login"' in b, s)
    s, h, b = req("POST", "/login", {"Content-Type": "application/x-www-form-urlencoded"},
                  ("token=" + q(TOK_A)).encode())
    ck = h.get("set-cookie", "")
    check("POST /login: 303 to / with the cookie (HttpOnly, SameSite=Strict, Path=/, 8 h)",
          s == 303 and h.get("location") == "/" and re.match(r"sbxcat_audit=[0-9a-f]{32};", ck)
          and "HttpOnly" in ck and "SameSite=Strict" in ck and "Path=/" in ck and "Max-Age=28800" in ck,
          (s, ck))
    cookie = {"Cookie": ck.split(";")[0]}
    s, h, b = req("GET", "/", cookie)
    check("the cookie opens the log page", s == 200 and h.get("content-type", "").startswith("text/html"), s)
    s, h, b = req("GET", "/api/ops?limit=1", cookie)
    check("... and the API", s == 200, s)
    s, h, b = req("POST", "/logout", cookie)
    check("POST /logout: 303 to /login, the cookie cleared", s == 303 and "Max-Age=0" in h.get("set-cookie", ""), (s, h))
    s, h, b = req("GET", "/", cookie)
    check("... and the old cookie no longer opens a page", s == 303, s)

    # -- tenant A's auditor sees tenant A's rows, all of them, and no other's
    want_a = set(sql("SELECT id FROM sandbox_operations WHERE tenant = 'acme'").split())
    want_all = set(sql("SELECT id FROM sandbox_operations").split())
    got_a = all_rows(TOK_A)
    check("ops, paged with next: acme's auditor gets exactly acme's rows (%d, by SQL)" % len(want_a),
          set(r["id"] for r in got_a) == want_a and len(got_a) == len(want_a), (len(got_a), len(want_a)))
    check("... and not one row of another tenant", all(r["tenant"] == "acme" for r in got_a))
    got_all = all_rows(TOK_ALL)
    check("the '*' auditor gets every row (%d)" % len(want_all), set(r["id"] for r in got_all) == want_all)
    got_b = all_rows(TOK_ALL, "&tenant=globex")
    check("... and tenant=globex narrows it to globex's",
          set(r["id"] for r in got_b) == set(sql("SELECT id FROM sandbox_operations WHERE tenant = 'globex'").split()))
    s, d = get_json("/api/ops?tenant=globex")
    check("tenant=globex with acme's token: 403 naming the auditor's tenant",
          s == 403 and d == {"error": "this auditor token is for tenant 'acme'"}, (s, d))
    for name, cond, sqlw in (("op=execute", "&op=execute", "op = 'execute'"),
                             ("failed=1", "&failed=1", "NOT ok"),
                             ("q=echo 1", "&q=" + q("echo 1"), "target LIKE '%echo 1%'"),
                             ("agent=agent-2", "&agent=agent-2", "agent_ref = 'agent-2'"),
                             ("session=wire id", "&session=" + WIRE_A, "(session_key = '%s' OR wire_id = '%s')" % (WIRE_A, WIRE_A))):
        got = all_rows(TOK_A, cond)
        want = set(sql("SELECT id FROM sandbox_operations WHERE tenant = 'acme' AND " + sqlw).split())
        check("filter %s: the rows SQL counts (%d)" % (name, len(want)), set(r["id"] for r in got) == want and want,
              (len(got), len(want)))
    got = all_rows(TOK_A, "&since=45m&until=25m")
    want = set(sql("SELECT id FROM sandbox_operations WHERE tenant='acme' AND created_at >= now() - interval '45 min' AND created_at < now() - interval '25 min'").split())
    check("since=45m&until=25m: the window's rows (%d)" % len(want), set(r["id"] for r in got) == want and want, (len(got), len(want)))
    for bad, name in (("limit=0", "limit"), ("limit=201", "limit"), ("after=nope", "after"),
                      ("since=whenever", "since"), ("op=fly", "op"), ("failed=maybe", "failed"),
                      ("by=colour", "by"), ("since=1h&until=2h", "until"), ("q=%FF", "search")):
        s, d = get_json("/api/ops?" + bad)
        check("%s: 400 naming %s" % (bad, name), s == 400 and name in d.get("error", ""), (s, d))
    s, h, b = req("GET", "/?q=%FF%FE", bearer(TOK_A))
    try:
        text = b.decode("utf-8")
        good = True
    except UnicodeDecodeError:
        good = False
    check("q of invalid UTF-8 on a page: 400, the page valid UTF-8, the bytes shown escaped",
          s == 400 and good and "\\xff" in text, (s, b[:200]))
    s, h, b = req("GET", "/api/ops?q=" + "x" * 5000, bearer(TOK_A))
    check("a query string over 4 KiB: 414", s == 414, s)
    s, h, b = req("POST", "/login", {"Content-Type": "application/x-www-form-urlencoded"}, b"token=" + b"y" * 2000)
    check("a login body over 1 KiB: 413", s == 413, s)

    # -- a session: timeline, files, chain; another tenant's is not there
    n_a = int(sql("SELECT count(*) FROM sandbox_operations WHERE session_key = '%s'" % KEY_A))
    s, d = get_json("/api/sessions/%s/timeline" % WIRE_A)
    ev = d["events"] if s == 200 else []
    check("timeline by wire id: every event of the session (%d), in seq order" % n_a,
          s == 200 and d["session"] == KEY_A and d["wire_id"] == WIRE_A and len(ev) == n_a
          and [e["seq"] for e in ev] == sorted(e["seq"] for e in ev) and d["next"] is None, (s, len(ev)))
    check("... open first, close last, failures marked",
          ev and ev[0]["op"] == "open" and ev[-1]["op"] == "close" and any(e["ok"] is False for e in ev))
    check("... times RFC 3339 UTC with microseconds",
          ev and all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$", e["at"]) for e in ev))
    seqs, after, pages = [], 0, 0
    while pages < 50:
        s, d = get_json("/api/sessions/%s/timeline?limit=7&after=%d" % (KEY_A, after))
        seqs += [e["seq"] for e in d["events"]]
        pages += 1
        if d["next"] is None:
            break
        after = d["next"]
    check("... paged by 7: the same events, none twice", seqs == [e["seq"] for e in ev], (len(seqs), len(ev)))
    s, d = get_json("/api/sessions/%s/files" % KEY_A)
    want = int(sql("SELECT count(DISTINCT target) FROM sandbox_operations WHERE session_key = '%s' AND op IN ('read','read_bytes','write','edit','remove')" % KEY_A))
    notes = [f for f in d.get("files", []) if f["path"] == "notes.txt"]
    check("files touched: each path once (%d by SQL); notes.txt read 1, removed 1" % want,
          s == 200 and len(d["files"]) == want and notes and notes[0]["read"] == 1 and notes[0]["removed"] == 1
          and d["truncated"] is False, (s, d))
    s, d = get_json("/api/sessions/%s/chain" % KEY_A)
    check("chain of a session sbxcat wrote: verified, its rows", s == 200 and d["state"] == "verified" and d["rows"] == n_a, d)
    s, d = get_json("/api/sessions/%s/chain" % KEY_SQL)
    check("chain of a row inserted around sbxcat: broken, at its seq, why", s == 200 and d["state"] == "broken"
          and isinstance(d["at_seq"], int) and d["why"], d)
    s0, h0, nobody = req("GET", "/api/sessions/no-such-session/timeline", bearer(TOK_A))
    for what in ("timeline", "files", "chain"):
        for sid in (KEY_B, WIRE_B):
            s, h, b = req("GET", "/api/sessions/%s/%s" % (sid, what), bearer(TOK_A))
            check("globex's session %s by %s to acme's auditor: 404, as one that does not exist" %
                  (what, "key" if sid == KEY_B else "wire id"), s == 404 and b == nobody, (s, b))
    s, h, b = req("GET", "/session/" + WIRE_B, bearer(TOK_A))
    check("... and its page: 404", s == 404, s)
    s, d = get_json("/api/sessions/%s/timeline" % WIRE_B, TOK_ALL)
    check("... which the '*' auditor reads", s == 200 and len(d["events"]) == int(sql("SELECT count(*) FROM sandbox_operations WHERE session_key = '%s'" % KEY_B)))

    # -- chart: buckets per hour, top keys, the SQL's counts
    for by in ("tenant", "agent"):
        s, d = get_json("/api/chart?by=%s&since=3h" % by)
        tot = sum(sum(x["ok"]) + sum(x["failed"]) for x in d["series"]) if s == 200 else -1
        fails = sum(sum(x["failed"]) for x in d["series"]) if s == 200 else -1
        want = int(sql("SELECT count(*) FROM sandbox_operations WHERE tenant = 'acme' AND created_at >= now() - interval '3 hours'"))
        wantf = int(sql("SELECT count(*) FROM sandbox_operations WHERE tenant = 'acme' AND NOT ok AND created_at >= now() - interval '3 hours'"))
        check("chart by %s (acme, 3 h): ok+failed = %d, failed = %d, as SQL counts" % (by, want, wantf),
              tot == want and fails == wantf and len(d["hours"]) in (3, 4) and len(d["series"]) <= 9, (tot, fails, d))
    s, d = get_json("/api/chart?by=tenant&since=3h")
    check("... by tenant, acme's auditor: one series, acme", s == 200 and [x["key"] for x in d["series"]] == ["acme"], d)
    s, d = get_json("/api/chart?by=tenant&since=3h", TOK_ALL)
    check("the '*' auditor's chart by tenant: acme and globex", s == 200 and sorted(x["key"] for x in d["series"]) == ["acme", "globex"], d)
    s, d = get_json("/api/chart?since=40d")
    check("a chart over 31 days: 400", s == 400 and "31 days" in d["error"], d)
    s, h, b = req("GET", "/chart.svg?by=agent&since=3h", bearer(TOK_A))
    try:
        root = ET.fromstring(b)
        svg_ok = root.tag.endswith("svg") and root.find(".//{http://www.w3.org/2000/svg}script") is None
    except ET.ParseError:
        svg_ok = False
    check("chart.svg: image/svg+xml, well-formed, no script", s == 200 and h.get("content-type") == "image/svg+xml"
          and svg_ok and b"<script" not in b and b"globex" not in b and b"agent-g" not in b, (s, b[:200]))

    # -- export: streamed, tenant-scoped, formulas guarded
    s, h, b = req("GET", "/api/export?format=csv", bearer(TOK_A))
    rows = list(csv.DictReader(io.StringIO(b.decode())))
    check("export csv: an attachment of acme's rows, every one (%d)" % len(want_a),
          s == 200 and "attachment" in h.get("content-disposition", "") and set(r["id"] for r in rows) == want_a, (s, len(rows)))
    check("... none of another tenant", all(r["tenant"] == "acme" for r in rows))
    f = [r["target"] for r in rows if "cmd|" in r["target"]]
    check("... a formula target exported with a ' first", f == ["'=cmd|' /C calc'!A0"], f)
    s, h, b = req("GET", "/api/export?format=jsonl&tenant=acme", bearer(TOK_ALL))
    lines = [json.loads(x) for x in b.decode().splitlines() if x]
    check("export jsonl (the '*' auditor, tenant=acme): acme's rows", s == 200 and set(r["id"] for r in lines) == want_a)
    s, h, b = req("GET", "/api/export?format=csv&tenant=globex", bearer(TOK_A))
    check("export of another tenant: 403", s == 403, s)
    s, h, b = req("GET", "/api/export?format=xls", bearer(TOK_A))
    check("export format=xls: 400", s == 400, s)

    # -- hostile bytes on the pages
    s, h, page = req("GET", "/?limit=200", bearer(TOK_A))
    page = page.decode()
    s, h, first = req("GET", "/", bearer(TOK_A))
    first = first.decode()
    s2, h2, sp = req("GET", "/session/" + KEY_A, bearer(TOK_A))
    sp = sp.decode()
    s3, h3, sq = req("GET", "/session/" + KEY_SQL, bearer(TOK_A))
    sq = sq.decode()
    for name, p in (("the log", page), ("a session", sp)):
        check("%s: <script> target as text" % name, "&lt;script&gt;alert(1)&lt;/script&gt;" in p and "<script>alert" not in p)
        check("%s: \"><img onerror> target as text" % name, "&quot;&gt;&lt;img src=x onerror=x&gt;" in p and "<img src=x" not in p)
        check("%s: the 512-byte target whole" % name, "x" * 512 in p)
        check("%s: the formula target as text" % name, "=cmd|&#39; /C calc&#39;!A0" in p)
    check("a bidi override and a BEL shown as visible escapes",
          '<span class="esc">\\u202e</span>' in sq and '<span class="esc">\\u0007</span>' in sq and "\u202e" not in sq, sq[:300])
    check("the log page: the same escapes", '<span class="esc">\\u202e</span>' in page and "\u202e" not in page)
    s, h, b = req("GET", "/?q=" + q('"><script>alert(2)</script>'), bearer(TOK_A))
    check("a hostile search echoed into the form escaped", b'value="&quot;&gt;&lt;script&gt;alert(2)' in b and b"<script>alert(2)" not in b, b[:100])
    s4, h4, lp = req("GET", "/login")
    s5, h5, ep = req("GET", "/session/no-such-session", bearer(TOK_A))
    for name, p in (("/", page), ("/session/KEY", sp), ("/login", lp.decode()), ("an error page", ep.decode()),
                    ("a broken chain's page", sq)):
        bad = inline_of(p)
        check("%s: no inline script, style, style= or on*= attribute" % name, not bad, bad)
    for i in ('form id="filters"', 'id="f-q"', 'id="f-op"', 'id="f-failed"', 'table id="log"', 'id="ticker"',
              'img id="chart"', 'a id="next"', 'id="export-csv"'):
        check("the log page has %s" % i, i in first)
    nxt = re.search(r'<a id="next" rel="next" href="([^"]*)"', first)
    s, h, second = req("GET", nxt.group(1).replace("&amp;", "&") if nxt else "/", bearer(TOK_A))
    rows1 = re.findall(r'<tr class="op[^"]*" data-seq="(\d+)"', first)
    rows2 = re.findall(r'<tr class="op[^"]*" data-seq="(\d+)"', second.decode())
    check("the next page link: 50 rows, then the next ones, none twice, no JavaScript needed",
          len(rows1) == 50 and rows2 and not set(rows1) & set(rows2) and len(rows1) + len(rows2) == len(want_a), (len(rows1), len(rows2)))
    for i in ('table id="timeline"', 'ul id="files"', 'div id="chain"'):
        check("a session's page has %s" % i, i in sp)

    # -- assets
    for name, ctype in (("app.js", "text/javascript; charset=utf-8"), ("app.css", "text/css; charset=utf-8")):
        s, h, b = req("GET", "/static/" + name)
        with open(os.path.join(SHARE, name), "rb") as fh:
            want = fh.read()
        check("/static/%s: %s, share/audit-web/%s's bytes" % (name, ctype, name), s == 200 and h.get("content-type") == ctype and b == want, (s, h.get("content-type")))
    s, h, b = req("GET", "/healthz")
    check("/healthz: 200 ok without a login", s == 200 and b == b"ok\n", (s, b))

    # -- live: tenant-scoped, 4 an auditor, the 5th 429
    socks = []
    for i in range(4):
        so = socket.create_connection((HOST, PORT), timeout=10)
        so.sendall(("GET /api/live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % TOK_A).encode())
        socks.append(so)
    heads = []
    for so in socks:
        buf = b""
        end = time.time() + 5
        while b": live" not in buf and time.time() < end:
            buf += so.recv(4096)
        heads.append(buf)
    check("4 live streams of one auditor: each 200 text/event-stream",
          all(x.startswith(b"HTTP/1.1 200") and b"text/event-stream" in x for x in heads), heads[:1])
    s, h, b = req("GET", "/api/live", bearer(TOK_A))
    check("the 5th: 429 JSON", s == 429 and "error" in json.loads(b), (s, b))
    sql("INSERT INTO sandbox_operations (id, created_at, tenant, session_key, runtime, op, target, ok, duration_ms, detail, hash) "
        "VALUES (gen_random_uuid(), now(), 'globex', 'xc-live-g', 'base', 'read', 'live-globex', true, 1, '', decode(repeat('00',32),'hex'))")
    sql("INSERT INTO sandbox_operations (id, created_at, tenant, session_key, runtime, op, target, ok, duration_ms, detail, hash) "
        "VALUES (gen_random_uuid(), now(), 'acme', 'xc-live-a', 'base', 'read', 'live-acme', true, 1, '', decode(repeat('00',32),'hex'))")
    buf = heads[0]
    end = time.time() + 8
    socks[0].settimeout(1)
    while b"live-acme" not in buf and time.time() < end:
        try:
            buf += socks[0].recv(65536)
        except socket.timeout:
            pass
    check("live: acme's new row arrives as event: op", b"event: op" in buf and b"live-acme" in buf, buf[-300:])
    check("... globex's, committed before it, does not", b"live-globex" not in buf)
    for so in socks:
        so.close()
    end, s = time.time() + 10, 0
    while time.time() < end:
        c = http.client.HTTPConnection(HOST, PORT, timeout=5)
        c.request("GET", "/api/live", headers=bearer(TOK_A))
        r = c.getresponse()
        s = r.status
        c.close()
        if s == 200:
            break
        time.sleep(0.3)
    check("streams closed by their clients are given back: a new one is 200", s == 200, s)

    # -- a fuzz of paths and query strings: never a 5xx, never a crash
    rnd = random.Random(int(os.environ.get("FUZZ_SEED", "32")))
    paths = ["/", "/api/ops", "/api/chart", "/chart.svg", "/api/export", "/session/" + KEY_A,
             "/api/sessions/%s/timeline" % KEY_A, "/api/sessions/%s/files" % WIRE_A, "/login",
             "/api/sessions/x/chain", "/static/app.js", "/nope", "/api", "/session/", "//", "/api/ops/"]
    names = ["tenant", "session", "agent", "run", "op", "failed", "q", "since", "until", "after", "limit",
             "by", "format", "x", ""]
    values = ["", "acme", "globex", "<script>", "%22%3E%3Cimg", "%FF%FE", "%E2%80%AE", "=cmd|", "-1", "0",
              "99999999999999999999", "2h", "40d", "1970-01-01", "9999-12-31", "now", "read,write", "read,,",
              "%25%25", "%5C", "a" * 600, "MToxOjE", "csv", "jsonl", "tenant", "agent", "%20", "+", "1",
              "%C0%AF", "%ED%A0%80", "..%2F..%2Fetc", "'; DROP TABLE x; --"]
    bad5 = []
    for i in range(300):
        p = rnd.choice(paths)
        if rnd.random() < 0.15:
            p += "/" + "".join(rnd.choice("abc%/.~-_") for _ in range(rnd.randint(1, 20)))
        qs = "&".join("%s=%s" % (rnd.choice(names), urllib.parse.quote(rnd.choice(values), safe="%+"))
                      for _ in range(rnd.randint(0, 5)))
        path = p + ("?" + qs if qs else "")
        method = rnd.choice(["GET"] * 8 + ["POST", "HEAD", "PUT", "DELETE"])
        hdr = bearer(rnd.choice([TOK_A, TOK_ALL, "junk"])) if rnd.random() < 0.9 else {}
        if "/api/live" in path:
            continue
        try:
            s, h, b = req(method, path, hdr)
        except Exception as e:
            bad5.append((path, repr(e)))
            continue
        if s >= 500:
            bad5.append((method, path, s, b[:120]))
    check("300 fuzzed requests: no 5xx, no lost connection", not bad5, bad5[:3])
    s, h, b = req("GET", "/healthz")
    check("... and the service still answers", s == 200, s)

    # -- every response carried the security headers
    missing = [(m, p, s) for m, p, s, h in HEADERS_SEEN
               if h.get("content-security-policy") != CSP or h.get("x-content-type-options") != "nosniff"
               or h.get("referrer-policy") != "no-referrer"]
    check("every one of %d responses: the CSP, nosniff, no-referrer" % len(HEADERS_SEEN), not missing, missing[:3])
    nostore = [(m, p, s) for m, p, s, h in HEADERS_SEEN if h.get("cache-control") != "no-store"]
    check("every answer: Cache-Control no-store", not nostore, nostore[:3])


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        import traceback
        out(False, "the checks ran to their end", traceback.format_exc())

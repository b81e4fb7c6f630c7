"""The auditor's page in a real headless Chromium (run by
tests/t-audit-web-browser.sh, inside a network namespace of its own with
only loopback up; chromedriver on DRIVER_PORT, `sbxcat audit web` on
BASE).  Every row the page shows is checked against SQL on the same
database: the same filter, the same order, the same count.

Environment: BASE, DRIVER_PORT, PSQL, DB_URL (the admin's conninfo, for
the checks and the live rows), WRITER (tests/t-audit-follow-writer),
TOKEN_A (tenant acme's auditor), SHOTS (the screenshots' directory),
UDD (a directory for the browsers' profiles), TZ_OFFSET_MIN (the zone
chromedriver was started in, as minutes east of UTC).
"""
import datetime
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, diag, plan  # noqa: E402
import taplib  # noqa: E402
from webdriver import Driver, WebDriverError, chromium_options  # noqa: E402

BASE = os.environ["BASE"]
PSQL = os.environ["PSQL"]
DB_URL = os.environ["DB_URL"]
WRITER = os.environ["WRITER"]
TOKEN_A = os.environ["TOKEN_A"]
SHOTS = os.environ["SHOTS"]
UDD = os.environ["UDD"]
TZ_OFFSET = int(os.environ.get("TZ_OFFSET_MIN", "0"))
ORDER = "ORDER BY created_at DESC, seq DESC"


def sql(q):
    out = subprocess.run([PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", DB_URL, "-c", q],
                         check=True, capture_output=True, timeout=20).stdout.decode()
    return [x for x in out.split("\n") if x != ""]


def seqs(where, limit=None):
    q = "SELECT seq FROM sandbox_operations WHERE %s %s" % (where, ORDER)
    if limit:
        q += " LIMIT %d" % limit
    return [int(x) for x in sql(q)]


def write(tenant, session, n, tag):
    p = subprocess.run([WRITER, "write", DB_URL, tenant, session, "-", str(n), "1", "0", tag],
                       capture_output=True, timeout=20)
    if p.returncode != 0:
        # What the writer said (an error, a sanitizer's report) is shown.
        for line in p.stderr.decode(errors="replace").splitlines()[:60]:
            print("# writer: " + line)
        sys.stdout.flush()
        raise subprocess.CalledProcessError(p.returncode, p.args)


def lit(s):
    return "'" + s.replace("'", "''") + "'"


drv = Driver("127.0.0.1", int(os.environ["DRIVER_PORT"]))
if not drv.ready(15):
    print("Bail out! chromedriver does not answer")
    sys.exit(1)

ROWS_JS = ("return Array.prototype.map.call(document.querySelectorAll("
           "'#log tbody tr[data-seq]'), function (r) { return +r.dataset.seq; });")


def login(s, js):
    s.get(BASE + "/login")
    s.find("input[name=token]").send_keys(TOKEN_A + "\ue007")  # Enter submits
    s.wait("the log page after the login",
           lambda: s.url().rstrip("/") == BASE.rstrip("/") and
           s.js("return document.readyState") == "complete", 10)


def shown(s):
    return s.js(ROWS_JS)


def settle(s, want, what, seconds=10):
    """Wait until the table shows exactly want (a list of seqs); the
    check is that it does, within seconds."""
    got = None
    end = time.time() + seconds
    while time.time() < end:
        got = shown(s)
        if got == want:
            break
        time.sleep(0.1)
    return ok(got == want, what, "want %d rows %s...\ngot  %s rows %s..." % (
        len(want), want[:8], None if got is None else len(got), (got or [])[:8]))


def set_field(s, name, value):
    kind = s.js("var e = document.querySelector('form [name=\"' + arguments[0] + '\"]');"
                "return e ? e.tagName + ':' + (e.type || '') : null;", name)
    if kind is None:
        raise RuntimeError("the filter form has no field " + name)
    if kind.startswith("SELECT"):
        s.js("var e = document.querySelector('form [name=\"' + arguments[0] + '\"]');"
             "e.value = arguments[1]; e.dispatchEvent(new Event('change', {bubbles: true}));",
             name, value)
    elif kind.endswith("checkbox"):
        if bool(s.js("return document.querySelector('form [name=\"' + arguments[0] +"
                     " '\"]').checked;", name)) != bool(value):
            s.find('form [name="%s"]' % name).click()
    else:
        e = s.find('form [name="%s"]' % name)
        e.clear()
        if value:
            e.send_keys(value)
        else:  # clear() fires change, not input: say it as typing would
            s.js("var e = document.querySelector('form [name=\"' + arguments[0] + '\"]');"
                 "e.dispatchEvent(new Event('input', {bubbles: true}));", name)


A = "tenant = 'acme'"

# -- A small fuzzer: session s-a-fuzz's targets made of markup, quotes,
# escapes, controls, bidi and separators, astral characters, set raw by
# SQL (sbxcat itself would store them escaped).  The page must show each
# exactly as the rule says (shown()), with JavaScript on and off.
PIECES = ["<", ">", "&", '"', "'", "\\", "/", "=", "a", "Z", "0", " ", "\t", "\n",
          "\u202e", "\u202a", "\u2066", "\u2069", "\u200e", "\u200f", "\u2028", "\u2029",
          "\ufeff", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\x9b", "\x9f", "\u00e9",
          "\u6f22", "\U0001f600", "\ufffd", "<script>alert(1)</script>",
          "<img src=x onerror=alert(1)>", "&amp;", "&#x202e;", "\\u202e", "]]>", "<!--"]


def escaped(c):
    o = ord(c)
    return (o <= 0x1f or 0x7f <= o <= 0x9f or o in (0x200e, 0x200f, 0x2028, 0x2029, 0xfeff) or
            0x202a <= o <= 0x202e or 0x2066 <= o <= 0x2069)


def rule(t):
    return "".join("\\u%04x" % ord(c) if escaped(c) else c for c in t)


seed = int(os.environ.get("FUZZ_SEED", str(int(time.time() * 1000) % 1000000)))
rng = random.Random(seed)
diag("fuzz seed %d (FUZZ_SEED=%d to replay)" % (seed, seed))
fuzz = {}
for seq in [int(x) for x in sql("SELECT seq FROM sandbox_operations WHERE session_key = 's-a-fuzz' ORDER BY seq")]:
    t = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
    fuzz[seq] = t
    sql("UPDATE sandbox_operations SET target = convert_from(decode('%s', 'hex'), 'UTF8') WHERE seq = %d"
        % (t.encode().hex(), seq))
FUZZ_JS = ("var o = {}; Array.prototype.forEach.call(document.querySelectorAll("
           "'#timeline tbody tr[data-seq]'), function (r) {"
           " o[r.dataset.seq] = r.querySelector('td.c-target').textContent; }); return o;")
FUZZ_EL_JS = "return document.querySelectorAll('#timeline td.c-target *:not(span.esc)').length;"


def fuzz_check(s, how):
    s.get(BASE + "/session/s-a-fuzz")
    want = {str(k): rule(v) for k, v in fuzz.items()}
    try:
        s.wait("the fuzzed timeline", lambda: len(s.js(FUZZ_JS)) == len(want), 10)
    except TimeoutError:
        pass
    got = s.js(FUZZ_JS)
    bad = [(k, want[k], got.get(k)) for k in sorted(want, key=int) if got.get(k) != want[k]]
    ok(not bad, "%s: %d random hostile targets shown exactly as the escape rule says" % (how, len(want)),
       "\n".join("seq %s: want %r\n        got  %r" % b for b in bad[:5]))
    ok(s.js(FUZZ_EL_JS) == 0 and s.alert_text() is None and
       s.js("return document.querySelectorAll('img[src=x]').length") == 0,
       "... as text only: no element but span.esc in a target, no dialog, no <img src=x>")

failed = False
s = drv.session(chromium_options(os.path.join(UDD, "js"), js=True))
try:
    # -- Log in through the form, as a person does.
    login(s, True)
    ok(s.js("return document.documentElement.classList.contains('js')"),
       "login with tenant acme's auditor token through the form: the log page, app.js ran")

    # -- The first page: the newest 50 of tenant acme, in SQL's order.
    settle(s, seqs(A, 50), "the log's first page: the same rows as SQL's newest 50 of acme, in order")
    ok(shown(s)[:1] == seqs(A, 1), "... its first row is SQL's newest (seq %s)" % seqs(A, 1))
    tenants = s.js("return Array.prototype.map.call(document.querySelectorAll('#log td.c-tenant'),"
                   " function (c) { return c.textContent; });")
    ok(tenants and set(tenants) == {"acme"}, "... every row shown is tenant acme's", tenants[:5])
    body = s.js("return document.body.textContent")
    ok("tenantb-secret" not in body, "... and no row of tenant other is anywhere on the page")

    # -- Hostile targets render as text.
    ok(s.alert_text() is None, "hostile targets: no dialog opened (GET alert/text: no such alert)")
    ok(s.js("return document.querySelectorAll('img[src=x]').length") == 0,
       "... no <img src=x> element was made")
    ok(s.js("return document.querySelectorAll('script:not([src])').length") == 0,
       "... no inline <script> element in the document")
    ok("<script>alert(1)</script>" in body, "... the literal <script>alert(1)</script> is text on the page")
    ok('"><img src=x onerror=alert(1)>' in body, "... and so is \"><img src=x onerror=alert(1)>")
    ok("=cmd|' /C calc'!A0" in body, "... and =cmd|' /C calc'!A0")
    ok("\u202e" not in body and "\u0007" not in body,
       "... a raw U+202E or BEL in a target is never in the page's text")
    escs = s.js("return Array.prototype.map.call(document.querySelectorAll('#log td.c-target .esc'),"
                " function (c) { return c.textContent; });")
    ok("\\u202e" in escs and "\\u0007" in escs,
       "... they are shown as visible escapes (span.esc \\u202e, \\u0007)", escs)

    # -- Times in the viewer's zone.
    t = s.js("var t = document.querySelector('#log td.c-time time');"
             "return [t.getAttribute('datetime'), t.textContent];")
    utc = datetime.datetime.fromisoformat(t[0].replace("Z", "+00:00"))
    local = (utc + datetime.timedelta(minutes=TZ_OFFSET)).strftime("%H:%M:%S")
    ok(local in t[1], "times in the viewer's zone: %s UTC shows as %s (%s)" % (t[0], local, t[1]))

    # -- The chart and the export links carry the filters.
    ok(s.js("var i = document.getElementById('chart');"
            "return !!i && i.complete && i.naturalWidth > 0;"),
       "the chart (/chart.svg) is loaded as an image")

    # -- The live ticker: a row of acme arrives within 10 s; tenant
    # other's, written first, never does.
    s.wait("the ticker connected", lambda: "connected" in s.find("#live-state").text(), 10)
    tag = "live-%d" % os.getpid()
    write("other", "s-b-live", 1, "tenantb-secret-live")
    write("acme", "s-a-live", 1, tag)
    t0 = time.time()
    try:
        s.wait("the live row", lambda: tag in s.find("#live").text(), 10)
        ok(True, "live: a row written now is in the ticker after %.1f s (bound 10 s)" % (time.time() - t0))
    except TimeoutError as e:
        ok(False, "live: a row written now is in the ticker within 10 s", e)
    ok("tenantb-secret" not in s.find("#live").text(),
       "... and tenant other's row, written before it, is not")
    # Paused: a row waits; resumed: it shows.
    s.find("#live-pause").click()
    write("acme", "s-a-live", 1, tag + "-paused")
    try:
        s.wait("the paused row held", lambda: "1 waiting" in s.find("#live-state").text(), 10)
        held = tag + "-paused" not in s.find("#live").text()
    except TimeoutError:
        held = False
    ok(held, "live paused: the new row is counted as waiting, not shown")
    s.find("#live-pause").click()
    ok(tag + "-paused" in s.find("#live").text(), "... resumed: it is shown")
    s.screenshot(os.path.join(SHOTS, "log.png"))

    # -- Filters, applied as you type; each against SQL.
    set_field(s, "op", "write")
    settle(s, seqs(A + " AND op = 'write'", 50), "filter op=write (typed): the rows SQL gives, in order")
    href = s.js("var a = document.querySelector(\"a[href*='/api/export']\"); return a && a.getAttribute('href');")
    ok(href and "op=write" in href, "... the export link carries the filter", href)
    chart = s.js("return document.getElementById('chart').getAttribute('src')")
    ok(chart and "op=write" in chart, "... so does the chart", chart)
    set_field(s, "failed", True)
    settle(s, seqs(A + " AND op = 'write' AND NOT ok", 50), "... and failed only: SQL's rows")
    ok(s.js("return document.querySelectorAll('#log tbody tr.failed').length ==="
            " document.querySelectorAll('#log tbody tr').length"),
       "... every row shown is marked failed")
    set_field(s, "op", "")
    set_field(s, "failed", False)
    set_field(s, "q", "<script>")
    settle(s, seqs(A + " AND strpos(target, '<script>') > 0", 50), "search <script> (typed): SQL's rows")
    set_field(s, "q", "")
    set_field(s, "tenant", "other")
    try:
        s.wait("the refusal", lambda: "acme" in s.find("#status").text(), 10)
        ok(not shown(s), "tenant=other as acme's auditor: the refusal is said, no row shown",
           s.find("#status").text())
    except TimeoutError as e:
        ok(False, "tenant=other as acme's auditor: the refusal is said", e)
    set_field(s, "tenant", "")

    # -- Paging with "next": every acme row once, in SQL's order.
    all_a = seqs(A)
    settle(s, all_a[:50], "filters cleared: the first page again")
    pages = 1
    while s.js("var b = document.getElementById('more'); return !b.disabled;") and pages < 20:
        before = len(shown(s))
        s.find("#more").click()
        s.wait("page %d" % (pages + 1), lambda: len(shown(s)) > before, 10)
        pages += 1
    got = shown(s)
    ok(got == all_a, "next page until the last (%d pages): all %d rows of acme once each, in SQL's order"
       % (pages, len(all_a)), "got %d rows; first difference at %s" % (
           len(got), next((i for i, (x, y) in enumerate(zip(got, all_a)) if x != y), min(len(got), len(all_a)))))
    ok(len(set(got)) == len(got), "... no row repeated")

    # -- A session's timeline.
    s.get(BASE + "/session/s-a1")
    want = [int(x) for x in sql("SELECT seq FROM sandbox_operations WHERE session_key = 's-a1' ORDER BY seq")]
    TL = ("return Array.prototype.map.call(document.querySelectorAll("
          "'#timeline tbody tr' + arguments[0]), function (r) { return +r.dataset.seq; });")
    try:
        s.wait("the timeline", lambda: s.js(TL, "[data-seq]") == want, 10)
    except TimeoutError:
        pass
    ok(s.js(TL, "[data-seq]") == want, "timeline of s-a1: its %d rows in seq order, as SQL has them" % len(want))
    wantf = [int(x) for x in sql("SELECT seq FROM sandbox_operations WHERE session_key = 's-a1'"
                                 " AND NOT ok ORDER BY seq")]
    ok(s.js(TL, ".failed") == wantf and wantf,
       "... the %d failed ones, and only they, are marked failed" % len(wantf))
    ok(s.js("return document.getElementById('tl-count').textContent") == str(len(want)),
       "... the summary counts them")
    try:
        st = s.wait("the chain state", lambda: (lambda t: t if "checking" not in t else None)(
            s.find("#chain").text()), 10)
    except TimeoutError as e:
        st = str(e)
    ok("verified" in st.lower(), "... its chain: verified", st)
    files = s.js("return Array.prototype.map.call(document.querySelectorAll('#files tbody tr'),"
                 " function (r) { return r.cells[0].textContent; });")
    nf = int(sql("SELECT count(DISTINCT target) FROM sandbox_operations WHERE session_key = 's-a1'"
                 " AND op IN ('read', 'read_bytes', 'write', 'edit', 'remove')")[0])
    ok(len(files) == nf, "... files touched: %d paths, as SQL counts them" % nf, files[:5])
    s.screenshot(os.path.join(SHOTS, "timeline.png"))
    s.get(BASE + "/session/s-a-raw")
    try:
        st = s.wait("the chain state", lambda: (lambda t: t if "checking" not in t else None)(
            s.find("#chain").text()), 10)
    except (TimeoutError, WebDriverError) as e:
        st = str(e)
    ok("broken" in st.lower(), "a session whose row was changed by SQL: its chain is broken", st)

    fuzz_check(s, "JavaScript on")

    # -- No CSP violation, no script error, all along.
    logs = s.logs()
    bad = [m["message"] for m in logs if "Content Security Policy" in m["message"] or
           "Uncaught" in m["message"] or "Refused to" in m["message"]]
    ok(not bad, "the console has no CSP violation and no script error (%d messages)" % len(logs), bad)

    # -- Tenant other's session is not there for acme's auditor.
    s.get(BASE + "/session/s-b1")
    time.sleep(0.5)
    text = s.js("return document.body.textContent")
    ok("tenantb-secret" not in text and not s.js(TL, "[data-seq]"),
       "tenant other's session, asked by acme's auditor: nothing of it shown")
finally:
    s.close()

# -- JavaScript off: the log and a session are still readable.
s = drv.session(chromium_options(os.path.join(UDD, "nojs"), js=False))
try:
    login(s, False)
    ok(not s.js("return document.documentElement.classList.contains('js')"),
       "JavaScript off: logged in through the form, app.js did not run")
    got = shown(s)
    ok(got == all_a[:50], "... the log's first page is SQL's newest 50 of acme, in order",
       "got %d rows %s..." % (len(got), got[:8]))
    ok(s.js("return !!document.querySelector('#pager a#next[rel=next]')"),
       "... with a link to the next page")
    text = s.js("return document.body.textContent")
    ok("tenantb-secret" not in text, "... none of tenant other's")
    ok("\u202e" not in text and "<script>alert(1)</script>" in s.js("return document.body.textContent"),
       "... hostile targets as text there too, U+202E never raw")
    s.get(BASE + "/session/s-a1")
    ok(s.js(TL, "[data-seq]") == want and s.js(TL, ".failed") == wantf,
       "... a session's timeline: its %d rows in seq order, the %d failed marked" % (len(want), len(wantf)))
    ok(s.js("return document.getElementById('chain').getAttribute('data-state')") == "verified",
       "... and its chain state (verified)")
    fuzz_check(s, "JavaScript off")
finally:
    s.close()

plan()
sys.exit(1 if taplib.failed else 0)

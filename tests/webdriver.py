"""A small W3C WebDriver client over http.client, for chromedriver.

tests/t-audit-web-browser.sh drives a real headless Chromium through it
(tests/audit_web_browser.py): no selenium, nothing from npm, only the
standard library.  The endpoints are the W3C's
(https://www.w3.org/TR/webdriver2/), plus chromedriver's browser log.

    drv = Driver("127.0.0.1", 9515)
    s = drv.session(chromium_options(udd, js=True))
    s.get("http://127.0.0.1:8091/login")
    s.find("input[name=token]").send_keys("...")
    s.close()

Every call is bounded (the socket's timeout); an error answer raises
WebDriverError with the W3C error code ("no such element", "no such
alert"...).
"""
import base64
import http.client
import json
import time

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    def __init__(self, status, error, message):
        Exception.__init__(self, "%s (%s): %s" % (error, status, message))
        self.status = status
        self.error = error
        self.message = message


class Driver:
    def __init__(self, host, port, timeout=30):
        self.host, self.port, self.timeout = host, port, timeout

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            c.request(method, path, body=data,
                      headers={"Content-Type": "application/json; charset=utf-8"})
            r = c.getresponse()
            text = r.read().decode("utf-8", "replace")
        finally:
            c.close()
        try:
            j = json.loads(text)
        except ValueError:
            raise WebDriverError(r.status, "not JSON", text[:300])
        v = j.get("value") if isinstance(j, dict) else None
        if r.status != 200:
            if isinstance(v, dict):
                raise WebDriverError(r.status, v.get("error", "?"),
                                     (v.get("message") or "")[:500])
            raise WebDriverError(r.status, "?", text[:300])
        return v

    def ready(self, seconds=10):
        """Wait (bounded) for chromedriver's /status to say ready."""
        end = time.time() + seconds
        while time.time() < end:
            try:
                if self.call("GET", "/status").get("ready"):
                    return True
            except (OSError, WebDriverError):
                pass
            time.sleep(0.1)
        return False

    def session(self, options):
        v = self.call("POST", "/session", {"capabilities": {"alwaysMatch": options}})
        return Session(self, v["sessionId"])


def chromium_options(user_data_dir, js=True, binary="/usr/bin/chromium"):
    """Headless Chromium that contacts nothing but the page it is sent to:
    no background networking, updates, sync, metrics, pings; a profile
    of its own.  js=False turns JavaScript off (the content setting and
    Blink's own switch)."""
    args = ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--no-default-browser-check",
            "--disable-default-apps", "--disable-extensions",
            "--metrics-recording-only", "--disable-domain-reliability",
            "--no-pings", "--disable-breakpad", "--disable-client-side-phishing-detection",
            "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
            "--password-store=basic", "--use-mock-keychain",
            "--window-size=1400,1000", "--lang=en-US",
            "--user-data-dir=" + user_data_dir]
    prefs = {}
    if not js:
        args.append("--blink-settings=scriptEnabled=false")
        prefs["profile.managed_default_content_settings.javascript"] = 2
    return {"browserName": "chrome",
            "goog:chromeOptions": {"binary": binary, "args": args, "prefs": prefs},
            "goog:loggingPrefs": {"browser": "ALL"},
            "timeouts": {"pageLoad": 20000, "script": 10000, "implicit": 0}}


class Element:
    def __init__(self, s, eid):
        self.s, self.id = s, eid

    def _p(self, tail):
        return "/session/%s/element/%s/%s" % (self.s.id, self.id, tail)

    def click(self):
        self.s.drv.call("POST", self._p("click"), {})

    def clear(self):
        self.s.drv.call("POST", self._p("clear"), {})

    def send_keys(self, text):
        self.s.drv.call("POST", self._p("value"), {"text": text})

    def text(self):
        return self.s.drv.call("GET", self._p("text"))

    def attr(self, name):
        return self.s.drv.call("GET", self._p("attribute/" + name))

    def prop(self, name):
        return self.s.drv.call("GET", self._p("property/" + name))

    def tag(self):
        return self.s.drv.call("GET", self._p("name"))


class Session:
    def __init__(self, drv, sid):
        self.drv, self.id = drv, sid

    def _p(self, tail):
        return "/session/%s/%s" % (self.id, tail)

    def get(self, url):
        self.drv.call("POST", self._p("url"), {"url": url})

    def url(self):
        return self.drv.call("GET", self._p("url"))

    def source(self):
        return self.drv.call("GET", self._p("source"))

    def find(self, css):
        v = self.drv.call("POST", self._p("element"),
                          {"using": "css selector", "value": css})
        return Element(self, v[ELEMENT])

    def find_all(self, css):
        v = self.drv.call("POST", self._p("elements"),
                          {"using": "css selector", "value": css})
        return [Element(self, e[ELEMENT]) for e in v]

    def js(self, script, *args):
        """Run script (a function body; arguments[i]) in the page."""
        return self.drv.call("POST", self._p("execute/sync"),
                             {"script": script, "args": list(args)})

    def alert_text(self):
        """The open dialog's text, or None when there is none."""
        try:
            return self.drv.call("GET", self._p("alert/text"))
        except WebDriverError as e:
            if e.error == "no such alert":
                return None
            raise

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.drv.call("GET", self._p("screenshot"))))

    def logs(self):
        """The browser's console since the last call (chromedriver)."""
        try:
            return self.drv.call("POST", self._p("se/log"), {"type": "browser"})
        except WebDriverError:
            return self.drv.call("POST", self._p("log"), {"type": "browser"})

    def wait(self, what, cond, seconds=10, every=0.1):
        """Poll cond() until it is true (returned), at most seconds; then
        raise TimeoutError naming what was awaited and cond's last value."""
        end = time.time() + seconds
        last = None
        while True:
            try:
                last = cond()
            except WebDriverError as e:
                last = e
            if last and not isinstance(last, Exception):
                return last
            if time.time() >= end:
                raise TimeoutError("waited %g s for %s; last: %r" % (seconds, what, last))
            time.sleep(every)

    def close(self):
        try:
            self.drv.call("DELETE", "/session/" + self.id)
        except (OSError, WebDriverError):
            pass

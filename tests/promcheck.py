"""promcheck.py - Prometheus' text exposition format (0.0.4) checked as a
scraper would take it, for the tests of /metrics (t-serve-metrics.sh).

check(text) returns a list of problems (empty: good) from three readers:

- promtool's `check metrics` (Debian's prometheus package; $SBXCAT_PROMTOOL
  or promtool on PATH), when there is one;
- prometheus_client's text parser (python3-prometheus-client), when it
  imports;
- the rules both of them let pass, read here: every family has one HELP and
  one TYPE before its samples and its samples together; no series twice (a
  name and label set); a histogram's buckets cumulative, its +Inf bucket
  equal to its _count, a _sum beside it.

readers() says which of the first two there are: a test with neither skips
loudly rather than pass on the last alone.  parse(text) gives the samples
as {(name, frozenset(labels.items())): value} for the test's own sums.
"""
import os
import re
import shutil
import subprocess

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(" + NAME + r")(\{(.*)\})?[ \t]+(\S+)([ \t]+-?\d+)?$")
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count", "")}


def promtool():
    p = os.environ.get("SBXCAT_PROMTOOL") or shutil.which("promtool")
    return p if p and os.access(p, os.X_OK) else None


# Debian's python3-prometheus-client is in the system's python3; a python3
# of its own earlier on PATH (pyenv's) does not see it: that one then runs it.
SYSTEM_PY = "/usr/bin/python3"
PARSE_ALL = ("import sys\n"
             "from prometheus_client.parser import text_string_to_metric_families as f\n"
             "for _ in f(sys.stdin.read()): pass\n")


def client_parser():
    try:
        from prometheus_client.parser import text_string_to_metric_families

        def run(text):
            for _ in text_string_to_metric_families(text):
                pass
        return run
    except ImportError:
        pass
    if os.access(SYSTEM_PY, os.X_OK) and subprocess.run(
            [SYSTEM_PY, "-c", "import prometheus_client.parser"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
        def run(text):
            r = subprocess.run([SYSTEM_PY, "-c", PARSE_ALL], input=text.encode(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            if r.returncode != 0:
                raise ValueError(r.stdout.decode()[-2000:])
        return run
    return None


def readers():
    out = []
    if promtool():
        out.append("promtool")
    if client_parser():
        out.append("prometheus_client")
    return out


def unescape(v):
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "\\": "\\", '"': '"'}.get(m.group(1), "\\" + m.group(1)), v)


def labels_of(s, problems, line):
    out = {}
    pos = 0
    while pos < len(s):
        m = LABEL.match(s, pos)
        if not m:
            problems.append("bad label set: %r" % line)
            return out
        if m.group(1) in out:
            problems.append("label %s twice: %r" % (m.group(1), line))
        out[m.group(1)] = unescape(m.group(2))
        pos = m.end()
        if m.group(3) == "":
            break
    return out


def family_of(name, types):
    if name in types:
        return name
    for fam, t in types.items():
        for suf in SUFFIXES.get(t, ()):
            if suf and name == fam + suf:
                return fam
    return None


def own_rules(text):
    problems = []
    helps, types, seen, samples = {}, {}, {}, {}
    closed, current = set(), None
    if not text.endswith("\n"):
        problems.append("the text does not end with a newline")
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                d = helps if parts[1] == "HELP" else types
                fam = parts[2]
                if fam in d:
                    problems.append("%s of %s twice" % (parts[1], fam))
                if fam in closed or (fam in samples):
                    problems.append("%s of %s after its samples" % (parts[1], fam))
                d[fam] = parts[3] if len(parts) > 3 else ""
                if parts[1] == "HELP" and re.search(r"\\[^n\\]|\\$", d[fam]):
                    problems.append("HELP of %s has a bad escape" % fam)
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append("not a sample: %r" % line)
            continue
        name, lab = m.group(1), labels_of(m.group(3) or "", problems, line)
        try:
            value = float(m.group(4))
        except ValueError:
            problems.append("not a value: %r" % line)
            continue
        fam = family_of(name, types)
        if fam is None:
            problems.append("sample of a family with no TYPE: %r" % line)
            continue
        if fam not in helps:
            problems.append("family %s has no HELP" % fam)
        if fam != current:
            if current is not None:
                closed.add(current)
            if fam in closed:
                problems.append("samples of %s not together" % fam)
            current = fam
        key = (name, frozenset(lab.items()))
        if key in seen:
            problems.append("series twice: %s%s" % (name, sorted(lab.items())))
        seen[key] = value
        samples.setdefault(fam, []).append((name, lab, value))
    for fam, t in types.items():
        if t == "histogram":
            problems += histogram_rules(fam, samples.get(fam, []))
    return problems, seen


def histogram_rules(fam, rows):
    problems = []
    groups = {}
    for name, lab, value in rows:
        rest = frozenset((k, v) for k, v in lab.items() if k != "le")
        g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if name == fam + "_bucket":
            le = lab.get("le")
            if le is None:
                problems.append("%s bucket without le" % fam)
                continue
            g["buckets"].append((float("inf") if le == "+Inf" else float(le), value))
        elif name == fam + "_sum":
            g["sum"] = value
        elif name == fam + "_count":
            g["count"] = value
    for rest, g in groups.items():
        where = "%s%s" % (fam, sorted(rest))
        b = sorted(g["buckets"])
        if not b or b[-1][0] != float("inf"):
            problems.append("%s has no +Inf bucket" % where)
            continue
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            problems.append("%s buckets not cumulative: %s" % (where, b))
        if g["count"] is None or g["sum"] is None:
            problems.append("%s lacks _count or _sum" % where)
        elif b[-1][1] != g["count"]:
            problems.append("%s +Inf bucket %s != count %s" % (where, b[-1][1], g["count"]))
    return problems


def parse(text):
    return own_rules(text)[1]


def check(text):
    problems, _ = own_rules(text)
    tool = promtool()
    if tool:
        r = subprocess.run([tool, "check", "metrics"], input=text.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if r.returncode != 0:
            problems.append("promtool check metrics (status %d): %s" % (r.returncode, r.stdout.decode()[:2000]))
    parse_all = client_parser()
    if parse_all:
        try:
            parse_all(text)
        except Exception as e:  # the parser's own words, whatever its type
            problems.append("prometheus_client's parser: %r" % e)
    return problems

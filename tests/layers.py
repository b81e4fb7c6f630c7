#!/usr/bin/env python3
"""layers.py - the layering rule of docs/hacking.md, checked.

    layers.py SRCDIR BUILDDIR

src/ is laid out by layer, one folder each.  A folder may include the
headers of, and call the functions of, only the folders USES gives it
(and its own).  Two checks:

  includes  every '#include "DIR/x.h"' in SRCDIR/src/DIR2/*.[ch] names a
            DIR that DIR2 may use;
  calls     every symbol an object of BUILDDIR/src/DIR2/ leaves undefined
            (nm -u) that an object of another folder defines is defined
            in a folder DIR2 may use.

Prints one line per violation ("includes: src/cli/cmd-exec.c includes
session/procs.h" or "calls: src/cli/cmd-exec.o calls procs_stop, defined
in session/"), and exits 1 when there is any, 2 when it cannot check.
"""
import os
import re
import subprocess
import sys

# What each folder may use besides itself, from the bottom up.
USES = {
    "basic": [],
    "catalog": ["basic"],
    "engine": ["basic", "catalog"],
    "workspace": ["basic"],
    "audit": ["basic"],
    "session": ["basic", "catalog", "engine", "workspace"],
    "svc": ["basic", "catalog", "engine", "workspace", "audit", "session"],
    "serve": ["basic", "catalog", "svc"],
    "cli": ["basic", "catalog", "svc", "serve"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z0-9_-]+)/[^"]+"', re.M)


def may(user, used):
    return used == user or used in USES[user]


def check_includes(srcdir, out):
    for d in USES:
        top = os.path.join(srcdir, "src", d)
        if not os.path.isdir(top):
            continue
        for name in sorted(os.listdir(top)):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(top, name), encoding="utf-8") as f:
                text = f.read()
            for used in INCLUDE.findall(text):
                if used not in USES:
                    out.append("includes: src/%s/%s includes %s/, "
                               "which is no layer" % (d, name, used))
                elif not may(d, used):
                    out.append("includes: src/%s/%s includes a header of "
                               "%s/" % (d, name, used))


def nm(path, undefined):
    args = ["nm", "-u" if undefined else "--defined-only", path]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("layers.py: %s: %s" % (" ".join(args), r.stderr))
        sys.exit(2)
    syms = set()
    for line in r.stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if undefined:
            syms.add(f[-1].split("@")[0])
        elif len(f) >= 3 and f[1] in "TDBRGSVW":
            syms.add(f[2])
    return syms


def check_calls(builddir, out):
    objs = {}
    for d in USES:
        top = os.path.join(builddir, "src", d)
        if not os.path.isdir(top):
            continue
        for name in sorted(os.listdir(top)):
            if name.endswith(".o"):
                objs[os.path.join(top, name)] = d
    if not objs:
        sys.stderr.write("layers.py: no objects under %s/src: build "
                         "first\n" % builddir)
        sys.exit(2)
    owner = {}
    for path, d in objs.items():
        for s in nm(path, False):
            owner.setdefault(s, d)
    for path, d in sorted(objs.items()):
        for s in sorted(nm(path, True)):
            used = owner.get(s)
            if used and not may(d, used):
                out.append("calls: %s calls %s, defined in %s/" %
                           (os.path.relpath(path, builddir), s, used))


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: layers.py SRCDIR BUILDDIR\n")
        return 2
    out = []
    check_includes(sys.argv[1], out)
    check_calls(sys.argv[2], out)
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())

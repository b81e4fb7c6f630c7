#!/usr/bin/env python3
"""engine-keys.py SRC [--count] - the Docker Engine API's JSON keys are
built and read in src/engine/ alone (docs/hacking.md, "Layers").

Every C file under SRC but engine/ is read, its comments dropped, and
each string literal that is one of the API's keys (KEYS) and stands in
the arguments of a jansson call that builds or reads an object
(json_object_get, json_object_set*, json_pack, xjson_pack, json_unpack,
...) is a violation, said as FILE:LINE: "KEY" in CALL.  Exit 1 when there
is one.  --count prints the number per folder and exits 0.

A second way to start a command then slots in beside the engine's: what
session/ and svc/ know of a container or an exec is engine.h's
structures, not the engine's words.
"""
import os
import re
import sys

# The Engine API's keys sbxcat sends or reads (containers, execs, lists,
# stats).  Generic words of the API that sbxcat's own documents also use
# in lower case ("type", "source") are not in it: the API's are
# capitalised.
KEYS = {
    "Id", "Name", "Names", "State", "Status", "Running", "Paused",
    "Restarting", "OOMKilled", "Dead", "Pid", "ExitCode", "Error",
    "StartedAt", "FinishedAt", "Config", "Image", "User", "Env", "Cmd",
    "Entrypoint", "WorkingDir", "Hostname", "Labels", "Tty", "OpenStdin",
    "StdinOnce", "AttachStdin", "AttachStdout", "AttachStderr",
    "StopSignal", "HostConfig", "Init", "CapDrop", "CapAdd", "SecurityOpt",
    "PidsLimit", "NanoCpus", "Memory", "MemorySwap", "Tmpfs", "NetworkMode",
    "Mounts", "Binds", "Type", "Source", "Target", "Destination", "ReadOnly",
    "BindOptions", "Propagation", "Privileged", "PublishAllPorts", "IpcMode",
    "CgroupnsMode", "RestartPolicy", "AutoRemove", "Devices",
    "ReadonlyRootfs", "Created", "Detach", "ExecIDs", "NetworkSettings",
    "memory_stats", "pids_stats", "inactive_file",
}

# The jansson calls that name an object's keys.
CALLS = re.compile(
    r"^(x?json_(object_(get|set|set_new|del|iter_at)|pack|pack_ex|"
    r"unpack|unpack_ex)|xjson_set_path)$")

# Files that still read the engine's reply, each with its reason; an
# entry here is a debt, not a rule.
ALLOWED = set()

TOKEN = re.compile(
    r'''(?P<comment>/\*.*?\*/|//[^\n]*)'''
    r'''|(?P<str>"(?:\\.|[^"\\\n])*")'''
    r'''|(?P<chr>'(?:\\.|[^'\\\n])*')'''
    r'''|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)'''
    r'''|(?P<open>\()|(?P<close>\))''', re.S)


def violations(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    stack = []  # the name before each open parenthesis (or None)
    last_ident = None
    out = []
    for m in TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("comment", "chr"):
            continue
        if kind == "ident":
            last_ident = m.group()
            continue
        if kind == "open":
            stack.append(last_ident)
        elif kind == "close":
            if stack:
                stack.pop()
        elif kind == "str":
            key = m.group()[1:-1]
            if key in KEYS:
                call = next((c for c in reversed(stack)
                             if c and CALLS.match(c)), None)
                if call:
                    line = text.count("\n", 0, m.start()) + 1
                    out.append((line, key, call))
        last_ident = None
    return out


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: engine-keys.py SRC [--count]\n")
        return 2
    src = argv[1]
    count = "--count" in argv[2:]
    bad = 0
    per = {}
    for folder in sorted(os.listdir(src)):
        d = os.path.join(src, folder)
        if not os.path.isdir(d) or folder == "engine":
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            rel = folder + "/" + name
            v = violations(os.path.join(d, name))
            per[folder] = per.get(folder, 0) + len(v)
            if count or rel in ALLOWED:
                continue
            for line, key, call in v:
                print('src/%s:%d: "%s" in %s: the engine\'s key outside '
                      'engine/' % (rel, line, key, call))
                bad += 1
    if count:
        eng = os.path.join(src, "engine")
        n = sum(len(violations(os.path.join(eng, f)))
                for f in sorted(os.listdir(eng)) if f.endswith((".c", ".h")))
        for folder in sorted(per):
            print("%s %d" % (folder, per[folder]))
        print("engine %d" % n)
        return 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""layers.py - the layering rule of docs/hacking.md, checked.

    layers.py SRCDIR BUILDDIR

src/ is laid out by layer, one folder each.  A folder may include the
headers of, and call the functions of, only the folders USES gives it
(and its own).  Three checks:

  includes  every '#include "DIR/x.h"' in SRCDIR/src/DIR2/*.[ch] names a
            DIR that DIR2 may use;
  calls     every symbol an object of BUILDDIR/src/DIR2/ leaves undefined
            (nm -u) that an object of another folder defines is defined
            in a folder DIR2 may use;
  names     every name a file of DIR2 uses (its own text: a macro, a
            struct, union or enum tag, an enumerator, a typedef, a
            function or a variable) that a header of another folder
            defines is defined in a folder DIR2 may use, however it came
            in: an allowed header that includes a forbidden one brings
            that one's names, and using them is the violation.  A macro
            of an allowed folder is followed through what it expands to,
            so a forbidden name re-exported under an allowed one
            ("#define SVC_X SESSION_X") is named too.

Prints one line per violation ("includes: src/cli/cmd-exec.c includes
exec/procs.h", "calls: src/cli/cmd-exec.o calls procs_stop, defined
in session/", "names: src/serve/wire.c uses SESSION_STATE_HIBERNATED,
defined in session/session.h"), and exits 1 when there is any, 2 when it
cannot check.
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
    "exec": ["basic"],
    "session": ["basic", "catalog", "engine", "workspace", "exec"],
    "svc": ["basic", "catalog", "engine", "workspace", "audit", "session",
            "exec"],
    "serve": ["basic", "catalog", "svc"],
    "cli": ["basic", "catalog", "svc", "serve"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z0-9_-]+)/[^"]+"', re.M)


def may(user, used):
    return used == user or used in USES[user]


def sources(srcdir, exts=(".c", ".h")):
    """(folder, file name, text) of every source of every layer."""
    for d in USES:
        top = os.path.join(srcdir, "src", d)
        if not os.path.isdir(top):
            continue
        for name in sorted(os.listdir(top)):
            if name.endswith(exts):
                with open(os.path.join(top, name), encoding="utf-8") as f:
                    yield d, name, f.read()


def check_includes(srcdir, out):
    for d, name, text in sources(srcdir):
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


# ---- names ----

KEYWORDS = set("""auto break case char const continue default do double else
enum extern float for goto if inline int long register restrict return short
signed sizeof static struct switch typedef union unsigned void volatile while
_Bool _Complex _Static_assert _Thread_local _Atomic _Alignas _Alignof
_Noreturn __attribute__ __typeof__ typeof asm __asm__ __extension__ bool
true false NULL""".split())

LEXEME = re.compile(r"""
    (?P<skip>/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>[0-9][A-Za-z0-9_.]*)
  | (?P<arrow>->)
  | (?P<punct>[^\sA-Za-z0-9_])
""", re.S | re.X)


def tokens(text):
    """The identifiers and punctuation of C text, comments and literals
    left out."""
    out = []
    for m in LEXEME.finditer(text):
        if m.lastgroup in ("skip", "num"):
            continue
        out.append(m.group(m.lastgroup))
    return out


def split_directives(text):
    """(the #define lines as (name, params, body tokens), the text with
    every directive blanked)."""
    text = text.replace("\\\n", " ")
    # Comments first, so a '#' or a line end inside one is not seen.
    text = re.sub(r"/\*.*?\*/", lambda m: " " * 0 + re.sub(r"[^\n]", " ",
                  m.group(0)), text, flags=re.S)
    defines, rest = [], []
    for line in text.split("\n"):
        m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?(.*)",
                     line)
        if m:
            params = set(p.strip() for p in (m.group(3) or "").split(","))
            defines.append((m.group(1), params, tokens(m.group(4))))
        if re.match(r"\s*#", line):
            rest.append("")
        else:
            rest.append(line)
    return defines, "\n".join(rest)


def declarations(text):
    """The file-scope names C text declares: (tags, funcs, others),
    where others holds enumerators, typedefs and variables."""
    toks = tokens(text)
    tags, funcs, others = set(), set(), set()
    i, n = 0, len(toks)
    stmt = []

    def block_end(j):
        depth = 0
        while j < n:
            if toks[j] == "{":
                depth += 1
            elif toks[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        return n - 1

    def finish(st):
        if not st:
            return
        ids = [t for t in st if re.match(r"[A-Za-z_]", t)]
        if st[0] == "typedef":
            for k in range(len(st) - 3):
                if st[k] == "(" and st[k + 1] == "*" and \
                        re.match(r"[A-Za-z_]", st[k + 2]):
                    others.add(st[k + 2])
                    return
            names = [t for t in ids if t not in KEYWORDS]
            if names:
                others.add(names[-1])
            return
        if "(" in st:
            k = st.index("(")
            if st[k + 1:k + 2] == ["*"] and k + 2 < len(st):
                others.add(st[k + 2])
            elif k > 0 and st[k - 1] not in KEYWORDS and \
                    re.match(r"[A-Za-z_]", st[k - 1]):
                funcs.add(st[k - 1])
            return
        # A forward declaration names a tag, nothing else.
        if len(ids) == 2 and ids[0] in ("struct", "union", "enum"):
            return
        cut = [t for t in st if t in ("[", "=")]
        upto = st[:st.index(cut[0])] if cut else st
        names = [t for t in upto if re.match(r"[A-Za-z_]", t)
                 and t not in KEYWORDS]
        if len(names) >= 2 or (names and "extern" in st):
            others.add(names[-1])

    while i < n:
        t = toks[i]
        if t == "{":
            j = block_end(i)
            kw = [x for x in stmt if x in ("struct", "union", "enum")]
            if stmt and stmt[-1] not in ("struct", "union", "enum") and \
                    len(stmt) >= 2 and stmt[-2] in ("struct", "union",
                                                    "enum"):
                tags.add(stmt[-1])
            if kw and kw[-1] == "enum":
                body = toks[i + 1:j]
                expect = True
                depth = 0
                for b in body:
                    if b in "([":
                        depth += 1
                    elif b in ")]":
                        depth -= 1
                    elif b == "," and depth == 0:
                        expect = True
                    elif expect and re.match(r"[A-Za-z_]", b):
                        others.add(b)
                        expect = False
            if "(" in stmt and stmt[0] not in ("struct", "union", "enum",
                                               "typedef") and \
                    not (stmt and stmt[-1] == "="):
                finish(stmt)  # a function's body
                stmt = []
            else:
                stmt.append("{}")
            i = j + 1
            continue
        if t == ";":
            finish([x for x in stmt if x != "{}"])
            stmt = []
        else:
            stmt.append(t)
        i += 1
    others -= KEYWORDS
    funcs -= KEYWORDS
    return tags, funcs, others


class Names:
    """What every header of SRCDIR/src defines, and where."""

    def __init__(self, srcdir):
        self.tags, self.funcs, self.others, self.macros = {}, {}, {}, {}
        for d, name, text in sources(srcdir, (".h",)):
            where = "%s/%s" % (d, name)
            defines, code = split_directives(text)
            for mname, params, body in defines:
                if not mname.endswith("_H"):
                    self.macros.setdefault(mname, []).append(
                        (where, [b for b in body if b not in params]))
            tags, funcs, others = declarations(code)
            for t in tags:
                self.tags.setdefault(t, []).append(where)
            for t in funcs:
                self.funcs.setdefault(t, []).append(where)
            for o in others:
                self.others.setdefault(o, []).append(where)

    def owners(self, tok, tag, call):
        """The headers that define tok, as a tag or as any other name (a
        function only where it is called: a name declared beside one,
        a member, is no use of it; one taken as a value is nm's)."""
        if tag:
            return self.tags.get(tok, [])
        return self.others.get(tok, []) + \
            (self.funcs.get(tok, []) if call else []) + \
            [w for w, _ in self.macros.get(tok, [])]

    def brought(self, tok, user, seen):
        """The forbidden names an allowed macro expands to: (name,
        header) pairs."""
        out = []
        for where, body in self.macros.get(tok, []):
            if not may(user, where.split("/")[0]):
                continue
            prev = None
            for k, b in enumerate(body):
                if not re.match(r"[A-Za-z_]", b) or b in seen or \
                        prev in (".", "->"):
                    prev = b
                    continue
                seen.add(b)
                tag = prev in ("struct", "union", "enum")
                homes = self.owners(b, tag, body[k + 1:k + 2] == ["("])
                if homes and not any(may(user, h.split("/")[0])
                                     for h in homes):
                    out.append(((prev + " " if tag else "") + b, homes[0]))
                else:
                    out.extend(self.brought(b, user, seen))
                prev = b
        return out


def check_names(srcdir, out):
    names = Names(srcdir)
    for d, fname, text in sources(srcdir):
        path = "src/%s/%s" % (d, fname)
        defines, code = split_directives(text)
        own_tags, own_funcs, own = declarations(code)
        own |= own_funcs | set(m for m, _, _ in defines)
        toks = tokens(code)
        for m, params, body in defines:
            toks += [b for b in body if b not in params]
        said = set()
        prev = None
        for k, t in enumerate(toks):
            if not re.match(r"[A-Za-z_]", t) or prev in (".", "->"):
                prev = t
                continue
            tag = prev in ("struct", "union", "enum")
            local = t in (own_tags if tag else own)
            homes = [] if local else names.owners(
                t, tag, toks[k + 1:k + 2] == ["("])
            shown = (prev + " " if tag else "") + t
            if homes and not any(may(d, h.split("/")[0])
                                 for h in homes):
                line = "names: %s uses %s, defined in %s" % (
                    path, shown, homes[0])
            elif homes and not tag:
                line = None
                for b, h in names.brought(t, d, set()):
                    line = ("names: %s uses %s, which brings %s, "
                            "defined in %s" % (path, t, b, h))
                    break
            else:
                line = None
            if line and line not in said:
                said.add(line)
                out.append(line)
            prev = t


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: layers.py SRCDIR BUILDDIR\n")
        return 2
    out = []
    check_includes(sys.argv[1], out)
    check_calls(sys.argv[2], out)
    check_names(sys.argv[1], out)
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())

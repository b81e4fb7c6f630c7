"""TAP for the Python sides of the shell tests (serve_wire.py and the
others run by a tests/t-*.sh): ok() numbers and prints a check, diag() a
comment, plan() the closing 1..N.  n and failed count what ok() saw."""
import sys

n = 0
failed = 0


def ok(cond, name, extra=None):
    """Print check n as ok or not ok; when it failed, up to 30 lines of
    extra (its first 3,000 characters) as comments.  Returns bool(cond)."""
    global n, failed
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, name))
    if not cond:
        failed += 1
        if extra is not None:
            for line in str(extra)[:3000].splitlines()[:30]:
                print("#   " + line)
    sys.stdout.flush()
    return bool(cond)


def diag(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def plan():
    print("1..%d" % n)
    sys.stdout.flush()

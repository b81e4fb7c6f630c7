#!/bin/sh
# bench/bench-audit-follow.sh - `audit ls --follow` (issue 29) on the
# test-bed's private PostgreSQL: RATE rows a second (1,000) committed by
# sbxcat's own insert in transactions of BATCH rows (10: the service's
# writer groups rows so), for SECONDS (5); each row's latency from its
# commit returning to the writer to its JSON line reaching a reader of
# `sbxcat audit ls --follow --json`, p50/p95/max, beside the same for a
# bare LISTEN on the trigger's channel (the least any follower can do:
# the notification's own trip; a follower polling once a second, the
# fallback alone, would average 500 ms).  The issue's target: p95 <= 100 ms.
#   SBXCAT_BENCH_FOLLOW_RATE, _BATCH, _SECONDS
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$here/..}
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
S=${SBXCAT:-$here/../sbxcat}
W=${S%/sbxcat}/tests/t-audit-follow-writer
RATE=${SBXCAT_BENCH_FOLLOW_RATE:-1000}
BATCH=${SBXCAT_BENCH_FOLLOW_BATCH:-10}
SECS=${SBXCAT_BENCH_FOLLOW_SECONDS:-5}
[ -x "$W" ] || { echo "bench-audit-follow: $W is not built (make tests/t-audit-follow-writer)"; exit 1; }
pgbed_start || { echo "bench-audit-follow: no PostgreSQL test-bed (reason above)"; exit 1; }
unset SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR SBXCAT_AUDIT
T=$(mktemp -d)
DB=bench_follow_$$
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT
URL=$(pgbed_newdb "$DB") || { echo "bench-audit-follow: cannot make a database"; exit 1; }
SBXCAT_DATABASE_URL=$URL "$S" audit migrate >/dev/null || exit 1
N=$((RATE * SECS))
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

# A reader stamping each line as it arrives: "TARGET ARRIVAL_US".
stamp='import json, sys, time
for l in sys.stdin:
    t = time.time_ns() // 1000
    print(json.loads(l)["target"], t, flush=True)'
SBXCAT_DATABASE_URL=$URL "$S" audit ls --follow --json 2>"$T/f.err" |
	python3 -c "$stamp" >"$T/follow" &
pids="$pids $!"
"$W" listen "$URL" $((N / BATCH)) >"$T/listen" &
pids="$pids $!"
sleep 1.5
"$W" write "$URL" acme bench - "$N" "$BATCH" "$RATE" b >"$T/commits" || { echo "bench-audit-follow: the writer failed"; exit 1; }
sleep 2
python3 - "$T" "$N" "$BATCH" "$RATE" <<'PY'
import sys
T, n, batch, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
commit = dict(l.split() for l in open(T + "/commits"))
def lat(path):
    got = {}
    for l in open(path):
        k, v = l.split()
        if k not in got:
            got[k] = int(v)
    return sorted((got[k] - int(commit[k])) / 1000 for k in commit if k in got), len(got)
def pct(xs, p):
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")
f, nf = lat(T + "/follow")
# LISTEN: the k-th notification is the k-th commit (one a transaction)
commits = []
for l in open(T + "/commits"):
    v = int(l.split()[1])
    if not commits or commits[-1] != v:
        commits.append(v)
notes = [int(l) for l in open(T + "/listen") if l.strip().isdigit()]
ls = sorted((a - c) / 1000 for a, c in zip(notes, commits))
print(f"{n} rows at {rate}/s in transactions of {batch}; latency from commit to the reader, ms")
print(f"{'':28} {'rows':>6} {'p50':>8} {'p95':>8} {'max':>8}")
for name, xs, cnt in (("audit ls --follow --json", f, nf),
                      ("bare LISTEN (baseline)", ls, len(ls))):
    print(f"{name:28} {cnt:>6} {pct(xs, .5):8.1f} {pct(xs, .95):8.1f} {xs[-1] if xs else float('nan'):8.1f}")
p95 = pct(f, .95)
print(f"follow p95 / LISTEN p95: {p95 / max(pct(ls, .95), 0.001):.1f}x")
ok = nf == n and p95 <= 100
print(f"target: every row ({nf}/{n}) within 100 ms p95: {'met' if ok else 'NOT MET'}")
sys.exit(0 if ok else 1)
PY

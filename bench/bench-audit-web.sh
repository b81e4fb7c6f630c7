#!/bin/sh
# bench/bench-audit-web.sh - the auditor's page at 10^6 rows (issue 32):
# the log's first page (/api/ops?limit=50) and a session's timeline
# (/api/sessions/ID/timeline?limit=500) through `sbxcat audit web`'s API,
# p50/p95 of N requests on one kept HTTP connection (python3 http.client),
# beside the same rows read by psql on one session (\timing: the query
# alone, no HTTP, no JSON), on the test-bed's private PostgreSQL.  The
# rows: tests/t-auditq-db's million over 30 days, one partition a day
# (its explain mode loads them, and checks the plans on the way).  The
# target: p95 <= 50 ms for each.
#   SBXCAT_BENCH_WEB_N   requests of each kind (200)
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$here/..}
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
S=${SBXCAT:-$here/../sbxcat}
B=$(dirname "$S")/tests/t-auditq-db
N=${SBXCAT_BENCH_WEB_N:-200}
PSQL=$PGB_BIN/psql
[ -x "$B" ] || { echo "bench-audit-web: no $B (make check builds it)"; exit 1; }
pgbed_start || { echo "bench-audit-web: no PostgreSQL test-bed (reason above)"; exit 1; }
unset SBXCAT_DATABASE_URL PGHOST PGPORT PGDATABASE PGUSER PGPASSWORD OPERATION_RETENTION_DAYS
T=$(mktemp -d)
DB=bench_web_$$
RD=bench_web_rd_$$ LG=bench_web_lg_$$
PID=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	pgbed_dropdb "$DB" 2>/dev/null
	pgbed_psql postgres -c "DROP ROLE IF EXISTS $LG" -c "DROP ROLE IF EXISTS $RD" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
URL=$(pgbed_newdb "$DB") || { echo "bench-audit-web: cannot make a database"; exit 1; }
echo "bench-audit-web: loading 10^6 rows over 30 days (about a minute)"
"$B" explain "$URL" >"$T/load.tap" 2>&1
grep -q '^not ok' "$T/load.tap" && echo "bench-audit-web: note: a plan check failed (see t-auditq-explain)"
SBXCAT_DATABASE_URL=$URL "$S" audit migrate --reader "$RD" >/dev/null || exit 1
pgbed_psql "$DB" -c "CREATE ROLE $LG LOGIN IN ROLE $RD" >/dev/null || exit 1
LURL="$URL user=$LG"
TOK=bench-web-token-0123456789abcdef
printf '* %s\n' "$TOK" >"$T/auditors"
chmod 600 "$T/auditors"
SBXCAT_DATABASE_URL=$LURL "$S" audit web --auditors "$T/auditors" \
	--listen "unix:$T/web.sock" >"$T/web.out" 2>&1 &
PID=$!
i=0
while [ ! -S "$T/web.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$T/web.sock" ] || { echo "bench-audit-web: audit web did not start:"; cat "$T/web.out"; exit 1; }
python3 - "$T/web.sock" "$TOK" "$N" "$PSQL" "$URL" <<'PY'
import http.client, json, socket, subprocess, sys, time, re
sock, tok, n, psql, url = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sock)
c = C("localhost")
def get(p):
    t = time.perf_counter()
    c.request("GET", p, headers={"Authorization": "Bearer " + tok})
    r = c.getresponse(); b = r.read()
    if r.status != 200: sys.exit("bench-audit-web: %s: %d %s" % (p, r.status, b[:200]))
    return (time.perf_counter() - t) * 1000, json.loads(b)
def pct(a, q):
    a = sorted(a); return a[min(len(a) - 1, int(q * len(a)))]
_, first = get("/api/ops?limit=50")
assert len(first["rows"]) == 50, "a full first page"
sess = "sess-42"
_, tl = get("/api/sessions/%s/timeline?limit=500" % sess)
ops = [get("/api/ops?limit=50")[0] for _ in range(n)]
tls = [get("/api/sessions/%s/timeline?limit=500" % sess)[0] for _ in range(n)]
# The same rows by psql on one session: the query's own time (\timing).
q1 = ("SELECT * FROM sandbox_operations ORDER BY created_at DESC, seq DESC LIMIT 50;")
q2 = ("SELECT * FROM sandbox_operations WHERE session_key = 'sess-42' ORDER BY seq LIMIT 500;")
def psql_times(q):
    script = "\\timing on\n" + (q + "\n") * n
    out = subprocess.run([psql, url, "-qAt", "-o", "/dev/null"], input=script, capture_output=True, text=True).stdout
    return [float(x) for x in re.findall(r"Time: ([0-9.]+) ms", out)]
p1, p2 = psql_times(q1), psql_times(q2)
def line(name, a, b):
    ok = "ok" if pct(a, .95) <= 50 else "MISSED"
    print("  %-34s p50 %6.2f ms  p95 %6.2f ms   psql p50 %6.2f  p95 %6.2f  (%.1fx psql's p95)  target p95 <= 50 ms: %s"
          % (name, pct(a, .5), pct(a, .95), pct(b, .5), pct(b, .95), pct(a, .95) / max(pct(b, .95), 1e-3), ok))
print("bench-audit-web: %d requests each, 10^6 rows over 30 days, one kept connection" % n)
line("the log's first page (50 rows)", ops, p1)
line("a session's timeline (%d events)" % len(tl["events"]), tls, p2)
PY

#!/bin/sh
# t-audit-web.sh - the auditor's page (issue 32), the service side: a real
# `sbxcat audit web` on a loopback port over the PostgreSQL test-bed, its
# rows written by sbxcat (the spool replayed by `audit flush`) and, for
# what sbxcat refuses to write (a bidi override, a BEL), inserted by SQL.
#   - the role: `audit migrate --reader` makes a SELECT-only role; audit
#     web refuses a superuser and a role with INSERT (exit 2, naming the
#     privilege and table), and starts with the reader's login role;
#   - the auditors file checked as the tenants file (mode, lines);
#   - tests/t-audit-web.py: login, cookie and Bearer; tenant A's auditor
#     never sees tenant B's rows (ops, timeline, files, chain, chart,
#     export, live), counted against SQL; hostile targets escaped in HTML
#     and CSV; the CSP and friends on every response; no inline script or
#     style; the limits; 4 live streams an auditor, the 5th 429; a fuzz of
#     300 requests with no 5xx;
#   - a database of the test's own stopped under a running page: 503 with
#     a clear error (JSON and HTML) while down, answers again once it is
#     back, the process never restarted; and a page started while its
#     database is down.
set -u
: "${srcdir:?srcdir must name the source tree}"
srcdir=$(cd "$srcdir" && pwd)
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
command -v python3 >/dev/null || skip_all "no python3 for the HTTP checks"
command -v curl >/dev/null || skip_all "no curl"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
T=$(mktemp -d) || exit 1
chmod 711 "$T"
DB=t_audit_web_$$
RD=t_aw_reader_$$ LG=t_aw_login_$$ WR=t_aw_writer_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
PORT=$((20000 + ($$ + 11) % 20000))
pgbed_own "$T" "$PORT"
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	sh "$T/pgc.sh" stop fast
	pgbed_dropdb "$DB" 2>/dev/null
	pgbed_psql postgres -c "DROP ROLE IF EXISTS $LG" -c "DROP ROLE IF EXISTS $WR" \
		-c "DROP ROLE IF EXISTS $RD" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
unset SBXCAT_DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE \
	PGSERVICEFILE SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT SBXCAT_TENANT \
	SBXCAT_AUDITORS_FILE SBXCAT_AUDIT_WEB_LISTEN SANDBOXD_TOKEN
export SBXCAT_SPOOL_DIR="$T/spool"
# No engine, no workspace root: the page must need neither.
export DOCKER_HOST=unix:///nonexistent/docker.sock SANDBOXD_WORKSPACE_ROOT=/nonexistent

TOK_A=acme-auditor-token-0123456789 TOK_ALL=every-tenant-auditor-token-42
KEY_A=xc-acme-$(printf 'a%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30)
KEY_B=xc-globex-$(printf 'b%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28)
WIRE_A=wire-acme-1 WIRE_B=wire-globex-1 KEY_SQL=xc-acme-sql
export TOK_A TOK_ALL KEY_A KEY_B WIRE_A WIRE_B KEY_SQL
printf '# the auditors\nacme %s\n\n* %s\n' "$TOK_A" "$TOK_ALL" >"$T/auditors"
chmod 600 "$T/auditors"

# rows DIR: a spool of rows as a recorder writes them (one JSON line, its
# SHA-256 last): an acme session (open, hostile targets, reads, a remove,
# a refusal, 60 commands, close) and a globex one, in the last hour.
rows() {
	python3 - "$1" <<'PY'
import hashlib, json, os, sys, time, uuid
d = sys.argv[1]
os.makedirs(d, mode=0o700, exist_ok=True)
now = time.time()
def at(s):
    t = now - s
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)
E = os.environ
rows = []
def add(tenant, key, wire, op, target, ok, detail, agent, age):
    rows.append({"id": str(uuid.uuid4()), "created_at": at(age), "tenant": tenant, "session": key,
                 "runtime": "base", "agent": agent, "run": "run-1", "op": op, "target": target,
                 "ok": ok, "exit_status": None, "bytes": None, "results": None, "duration_ms": 3,
                 "detail": detail, "wire_id": wire})
ka, kb = E["KEY_A"], E["KEY_B"]
add("acme", ka, E["WIRE_A"], "open", "", True, "", "agent-1", 3000)
for i, h in enumerate(["<script>alert(1)</script>", "\"><img src=x onerror=x>", "=cmd|' /C calc'!A0", "x" * 512]):
    add("acme", ka, E["WIRE_A"], "write", h, True, "created", "agent-1", 2900 - i)
add("acme", ka, E["WIRE_A"], "read", "notes.txt", True, "", "agent-1", 2000)
add("acme", ka, E["WIRE_A"], "remove", "notes.txt", True, "", "agent-1", 1900)
add("acme", ka, E["WIRE_A"], "read", "../etc/passwd", False, "refused: outside the workspace", "agent-2", 1800)
for i in range(60):
    add("acme", ka, E["WIRE_A"], "execute", "echo %d" % i, i % 7 != 0, "exit 0", "agent-%d" % (i % 3), 1700 - i)
add("acme", ka, E["WIRE_A"], "close", "", True, "", "agent-1", 100)
for i in range(25):
    add("globex", kb, E["WIRE_B"], "write", "secret-%d.txt" % i, True, "created", "agent-g", 2500 - i)
with open(os.path.join(d, "audit.jsonl"), "w") as f:
    for row in rows:
        text = json.dumps(row, separators=(",", ":"), ensure_ascii=False)[:-1]
        f.write(text + ',"sum":"%s"}\n' % hashlib.sha256(text.encode()).hexdigest())
PY
}

# start NAME URL [LISTEN]: audit web in the background on URL's database;
# its port in $port (0 when it did not start within 10 s), stderr in
# $T/NAME.err.
start() {
	SBXCAT_DATABASE_URL=$2 "$S" audit web --auditors "$T/auditors" \
		--listen "${3:-tcp:127.0.0.1:0}" 2>"$T/$1.err" &
	eval "pid_$1=$!"
	pids="$pids $!"
	port=0 n=0
	while [ $n -lt 100 ]; do
		port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$T/$1.err")
		[ -n "$port" ] && break
		port=0 n=$((n + 1))
		sleep 0.1
	done
}

# -- The reader role, the rows.
rows "$T/spool"
SBXCAT_DATABASE_URL=$URL "$S" audit migrate --reader "$RD" >"$T/mig.out" 2>&1
is "$?" 0 "audit migrate --reader ROLE: status 0"
like "$(cat "$T/mig.out")" "role $RD may read the audit \\(SELECT only\\)" "... and it says what it made"
is "$(pgbed_psql "$DB" -c "SELECT rolcanlogin FROM pg_roles WHERE rolname = '$RD'")" f "... a NOLOGIN role"
is "$(pgbed_psql "$DB" -c "SELECT string_agg(privilege_type || ' ' || table_name, ',' ORDER BY table_name, privilege_type) FROM information_schema.role_table_grants WHERE grantee = '$RD'")" \
	"SELECT agents,SELECT audit_chains,SELECT runs,SELECT sandbox_operations,SELECT schema_migrations" \
	"... holding SELECT on the audit's five tables and nothing else"
SBXCAT_DATABASE_URL=$URL "$S" audit migrate --reader "$RD" >/dev/null 2>&1
is "$?" 0 "... again: nothing to do, status 0"
SBXCAT_DATABASE_URL=$URL "$S" audit migrate --reader 'x"; DROP' >/dev/null 2>"$T/bad.err"
is "$?" 2 "a role name that is not an identifier: status 2"
SBXCAT_DATABASE_URL=$URL "$S" audit flush >/dev/null 2>&1 || bail_out "audit flush failed"
pgbed_psql "$DB" -c "CREATE ROLE $LG LOGIN IN ROLE $RD" \
	-c "CREATE ROLE $WR LOGIN IN ROLE $RD" \
	-c "GRANT INSERT ON sandbox_operations TO $WR" \
	-c "INSERT INTO sandbox_operations (id, created_at, tenant, session_key, runtime, op, target, ok, duration_ms, detail, hash)
	    VALUES (gen_random_uuid(), now() - interval '5 min', 'acme', '$KEY_SQL', 'base', 'write',
	            E'evil\\u202etxt.exe\\u0007', true, 1, E'bell\\u0007', decode(repeat('00', 32), 'hex'))" ||
	bail_out "cannot make the test's roles"
PGURL=$(pgbed_url "$DB")
LURL="$PGURL user=$LG" WURL="$PGURL user=$WR"

# -- Who may serve.
SBXCAT_DATABASE_URL=$PGURL "$S" audit web --auditors "$T/auditors" --listen tcp:127.0.0.1:0 >/dev/null 2>"$T/su.err"
is "$?" 2 "audit web as a superuser: status 2"
like "$(cat "$T/su.err")" "is a superuser" "... naming why"
SBXCAT_DATABASE_URL=$WURL "$S" audit web --auditors "$T/auditors" --listen tcp:127.0.0.1:0 >/dev/null 2>"$T/wr.err"
is "$?" 2 "audit web as a role with INSERT: status 2"
like "$(cat "$T/wr.err")" "has INSERT on the table sandbox_operations" "... naming the privilege and the table"
SBXCAT_DATABASE_URL=$LURL "$S" audit web --listen tcp:127.0.0.1:0 >/dev/null 2>"$T/na.err"
is "$?" 2 "no auditors file: status 2"
chmod 640 "$T/auditors"
SBXCAT_DATABASE_URL=$LURL "$S" audit web --auditors "$T/auditors" --listen tcp:127.0.0.1:0 >/dev/null 2>"$T/mode.err"
is "$?" 2 "an auditors file others may read: status 2"
like "$(cat "$T/mode.err")" "chmod 600" "... saying what to do"
chmod 600 "$T/auditors"
printf 'acme short\n' >"$T/short" && chmod 600 "$T/short"
SBXCAT_DATABASE_URL=$LURL "$S" audit web --auditors "$T/short" --listen tcp:127.0.0.1:0 >/dev/null 2>"$T/short.err"
is "$?" 2 "an auditor's token under 16 characters: status 2"
SANDBOXD_TOKEN=$TOK_A SBXCAT_DATABASE_URL=$LURL "$S" audit web --auditors "$T/auditors" --listen tcp:127.0.0.1:0 >/dev/null 2>"$T/svc.err"
is "$?" 2 "an auditor's token that is the service's: status 2"

# -- The page, with the SELECT-only login role.
start web "$LURL"
ok "$([ "$port" != 0 ]; echo $?)" "audit web starts with the reader's login role (no Docker, no root)"
[ "$port" != 0 ] || bail_out "audit web did not start: $(cat "$T/web.err")"
python3 "$srcdir/tests/t-audit-web.py" "http://127.0.0.1:$port" "$PGB_BIN/psql" "$PGURL" \
	"$srcdir/share/audit-web" >"$T/checks" 2>"$T/checks.err"
while IFS= read -r line; do
	ok "${line%% *}" "${line#* }"
done <"$T/checks"
[ -s "$T/checks" ] || ok 1 "the HTTP checks ran: $(tail -n 3 "$T/checks.err")"
kill -0 "$pid_web" 2>/dev/null
ok $? "audit web still runs after the checks and the fuzz"

# -- A database of the test's own, stopped and started under the page.
if sh "$T/pgc.sh" start 2>"$T/pgc.err"; then
	FURL="host=$T/pgc-run port=$PORT user=sbxcat dbname=postgres"
	rows "$T/spool2"
	SBXCAT_SPOOL_DIR=$T/spool2 SBXCAT_DATABASE_URL=$FURL "$S" audit migrate --reader "$RD" >/dev/null 2>&1 &&
		SBXCAT_SPOOL_DIR=$T/spool2 SBXCAT_DATABASE_URL=$FURL "$S" audit flush >/dev/null 2>&1 &&
		PGCONNECT_TIMEOUT=10 "$PGB_BIN/psql" -X -q "$FURL" -c "CREATE ROLE $LG LOGIN IN ROLE $RD" >/dev/null ||
		bail_out "the test's own cluster cannot be set up"
	OURL="host=$T/pgc-run port=$PORT user=$LG dbname=postgres"
	start own "$OURL"
	[ "$port" != 0 ] || bail_out "audit web on the own cluster did not start: $(cat "$T/own.err")"
	B=http://127.0.0.1:$port
	H="Authorization: Bearer $TOK_A"
	code() { curl -s -o "$T/body" -w '%{http_code}' -H "$H" "$B$1"; }
	is "$(code /api/ops)" 200 "own cluster: the page answers"
	sh "$T/pgc.sh" stop fast
	is "$(code /api/ops)" 503 "the database stopped: /api/ops 503"
	like "$(cat "$T/body")" '^\{"error":"the audit database is unavailable: ' "... with a JSON error that says so"
	is "$(code /)" 503 "... the log page 503"
	like "$(cat "$T/body")" '<p id="error" class="error">the audit database is unavailable' "... an HTML page that says so"
	is "$(code /session/$KEY_A)" 503 "... a session's page 503"
	is "$(code /healthz)" 503 "... /healthz 503"
	is "$(code /static/app.js)" 200 "... the assets still served"
	sh "$T/pgc.sh" start 2>>"$T/pgc.err" || bail_out "the cluster did not start again"
	n=0 c=0
	while [ $n -lt 50 ]; do
		c=$(code /api/ops)
		[ "$c" = 200 ] && break
		n=$((n + 1))
		sleep 0.1
	done
	is "$c" 200 "the database back: /api/ops 200 again, audit web not restarted"
	is "$(code "/api/sessions/$KEY_A/chain" | tr -d '\n'):$(sed 's/"rows".*//' "$T/body")" '200:{"state":"verified",' "... a chain verified"
	kill -0 "$pid_own" 2>/dev/null
	ok $? "... the same process throughout"
	# Started while its database is down: it serves 503, then rows.
	sh "$T/pgc.sh" stop fast
	start down "$OURL"
	ok "$([ "$port" != 0 ]; echo $?)" "audit web starts while its database is down"
	like "$(cat "$T/down.err")" "does not answer now" "... and says so"
	B=http://127.0.0.1:$port
	is "$(code /api/ops)" 503 "... answering 503"
	sh "$T/pgc.sh" start 2>>"$T/pgc.err" || bail_out "the cluster did not start again"
	n=0 c=0
	while [ $n -lt 50 ]; do
		c=$(code /api/ops)
		[ "$c" = 200 ] && break
		n=$((n + 1))
		sleep 0.1
	done
	is "$c" 200 "... then rows once it is up"
else
	skip "the test's own cluster did not start: $(cat "$T/pgc.err")" "a database restart under the page"
fi
done_testing

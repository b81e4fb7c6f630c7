#!/bin/sh
# t-audit-web-browser.sh - the auditor's page (sbxcat audit web) in a real
# headless Chromium, driven through chromedriver's W3C WebDriver API
# (tests/webdriver.py; the checks in tests/audit_web_browser.py): login
# through the form, the log's rows against SQL (first page, filters typed,
# paging to the end), a session's timeline, chain and files against SQL,
# hostile targets as text (and 40 random ones, shown exactly as the
# escape rule says with JavaScript on and off), tenant isolation, the live ticker, times in the
# viewer's zone, no CSP violation, and the log and a session readable with
# JavaScript off.  Screenshots of the log and of a timeline are left in
# tests/audit-web-shots/ for a person to look at.
#
# Chromium, chromedriver and the service run in a network namespace of
# their own with only loopback up (unshare -n), and a PID namespace
# (unshare -p, with a /proc of its own: LeakSanitizer in a sanitizer
# build reads /proc/PID/task by its own PID): no packet can leave the
# machine, and every process the browser started ends with the namespace.  The database is the
# test-bed's, reached by its unix socket.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"

CHROMIUM=${SBXCAT_CHROMIUM:-/usr/bin/chromium}
DRIVER=${SBXCAT_CHROMEDRIVER:-/usr/bin/chromedriver}
[ -x "$CHROMIUM" ] || skip_all "no Chromium at $CHROMIUM (sh scripts/deps.sh test installs chromium)"
[ -x "$DRIVER" ] || skip_all "no chromedriver at $DRIVER (sh scripts/deps.sh test installs chromium-driver)"
command -v unshare >/dev/null || skip_all "no unshare (util-linux): the browser runs only in a private network namespace"
command -v ip >/dev/null || skip_all "no ip (iproute2): cannot bring the namespace's loopback up"
unshare -n -p -f true 2>/dev/null ||
	skip_all "unshare -n -p cannot make a private network and PID namespace here (root is needed)"
[ -x ./tests/t-audit-follow-writer ] || bail_out "tests/t-audit-follow-writer is not built (make check builds it)"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"

DB=t_audit_web_browser_$$
READER=awb_reader_$$
LOGIN=awb_login_$$
T=$(mktemp -d "${TMPDIR:-/tmp}/sbxcat-awb.XXXXXX") || bail_out "mktemp"
SHOTS=tests/audit-web-shots
cleanup() {
	pgbed_dropdb "$DB" 2>/dev/null
	pgbed_psql postgres -c "DROP ROLE IF EXISTS $LOGIN" -c "DROP ROLE IF EXISTS $READER" \
		>/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE PGSERVICEFILE \
	SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT DATABASE_URL
q() { pgbed_psql "$DB" -c "$1"; }

# -- The schema, the read-only role, a login role in it.
SBXCAT_DATABASE_URL=$URL ./sbxcat audit migrate >"$T/out" 2>&1 ||
	bail_out "audit migrate: $(cat "$T/out")"
SBXCAT_DATABASE_URL=$URL ./sbxcat audit migrate --reader "$READER" >"$T/out" 2>&1 ||
	bail_out "audit migrate --reader: $(cat "$T/out")"
q "CREATE ROLE $LOGIN LOGIN IN ROLE $READER" >/dev/null || bail_out "cannot make the login role"
case $URL in
*://*\?*) RURL="$URL&user=$LOGIN" ;;
*://*) RURL="$URL?user=$LOGIN" ;;
*) RURL="$URL user=$LOGIN" ;;
esac

# -- Rows: tenant acme's sessions (chained by sbxcat's own insert), tenant
# other's, then acme's hostile targets, newest, on the first page.
w() { ./tests/t-audit-follow-writer write "$URL" "$1" "$2" - "$3" 50 0 "$4" >/dev/null ||
	bail_out "t-audit-follow-writer $*"; }
w acme s-a-fuzz 40 "fuzz"	# targets made hostile below (audit_web_browser.py)
w acme s-a1 70 "src/app"
w acme s-a2 60 "docs/page"
w other s-b1 30 "tenantb-secret"
w acme s-a-hostile 2 "<script>alert(1)</script>"
w acme s-a-hostile 2 '"><img src=x onerror=alert(1)>'
w acme s-a-hostile 2 "=cmd|' /C calc'!A0"
w acme s-a-hostile 2 "$(printf 'evil\342\200\256gnp.exe')"
w acme s-a-hostile 2 "$(printf 'bad\377\376bytes')"
w acme s-a-raw 3 "raw"
# sbxcat stores control, bidi and invalid bytes escaped (\u202e, \xff);
# a row changed by SQL can hold them raw: the page must show them
# visibly all the same (and that session's chain is broken now).
q "UPDATE sandbox_operations SET target = 'raw' || chr(8238) || 'gnp.exe' || chr(7)
   WHERE seq = (SELECT max(seq) FROM sandbox_operations WHERE session_key = 's-a-raw')" >/dev/null ||
	bail_out "cannot change a row"

TOKEN_A=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
TOKEN_B=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
printf 'acme %s\nother %s\n' "$TOKEN_A" "$TOKEN_B" >"$T/auditors"
chmod 600 "$T/auditors"
rm -rf "$SHOTS"
mkdir -p "$SHOTS" "$T/udd"

# The zone the browser runs in, so the test can tell the viewer's zone
# from UTC: Asia/Kolkata, UTC+05:30, no summer time.
cat >"$T/inner.sh" <<'EOF'
set -u
ip link set lo up || { echo "Bail out! cannot bring loopback up in the namespace"; exit 1; }
DOCKER_HOST=unix:///nonexistent SBXCAT_DATABASE_URL=$RURL ./sbxcat audit web \
	--listen tcp:127.0.0.1:8091 --auditors "$T/auditors" >"$T/web.log" 2>&1 &
TZ=Asia/Kolkata "$DRIVER" --port=9515 --allowed-ips= >"$T/driver.log" 2>&1 &
n=0
until curl -sf -o /dev/null http://127.0.0.1:8091/healthz; do
	n=$((n + 1))
	[ $n -lt 100 ] || { echo "Bail out! sbxcat audit web did not answer in 10 s: $(cat "$T/web.log")"; exit 1; }
	sleep 0.1
done
BASE=http://127.0.0.1:8091 DRIVER_PORT=9515 TZ_OFFSET_MIN=330 UDD=$T/udd \
	timeout 90 python3 "$srcdir/tests/audit_web_browser.py"
rc=$?
[ -s "$T/web.log" ] && sed 's/^/# audit web: /' "$T/web.log" | tail -n 20
exit $rc
EOF
# The PID namespace's first process is sh: when it ends, the kernel ends
# every process left in the namespace (the service, chromedriver, every
# Chromium process).
PSQL=$PGB_BIN/psql DB_URL=$URL WRITER=./tests/t-audit-follow-writer
export RURL T DRIVER SHOTS PSQL DB_URL WRITER TOKEN_A srcdir
timeout 120 unshare -n -p -f --mount-proc --kill-child sh "$T/inner.sh"
rc=$?
[ -f "$SHOTS/log.png" ] && [ -f "$SHOTS/timeline.png" ] &&
	echo "# screenshots: $SHOTS/log.png, $SHOTS/timeline.png"
exit $rc

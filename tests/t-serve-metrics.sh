#!/bin/sh
# t-serve-metrics.sh - `sbxcat serve`'s /metrics as Prometheus takes it
# (docs/serve.md, "Metrics"), on the real engine and PostgreSQL: scraped
# with the scrape-only token in Authorization: Bearer while clients load
# several routes and methods, every scrape read by promtool and/or
# prometheus_client's parser and the format's rules (tests/promcheck.py,
# tests/metrics_load.py); sbxcat_build_info, process_start_time_seconds;
# Bearer on every route; the scrape token reads /metrics and nothing else
# (refused before a body is read); the metrics token file's rules at start;
# the reload's outcome in /metrics and /healthz, flipping to 0 on a bad
# SIGHUP and back to 1 (a new time) on a good one; the scrape token
# rotated by a SIGHUP.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
readers=$(cd "$srcdir/tests" && python3 -c 'import promcheck; print(" ".join(promcheck.readers()))')
[ -n "$readers" ] || skip_all "no reader of Prometheus' text format: neither promtool (Debian's prometheus, or SBXCAT_PROMTOOL) nor python3-prometheus-client (scripts/deps.sh test installs it)"
sb_init serve-metrics sm
diag "readers: $readers"
sb_audit_db t_serve_metrics_$$

TOKEN=svc-$(sb_rand) TA=ta-$(sb_rand) SCRAPE=scr-$(sb_rand)
printf 'acme %s\n' "$TA" >"$T/tenants"
printf '%s\n' "$SCRAPE" >"$T/scrape"
chmod 600 "$T/tenants" "$T/scrape"
PORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN
export SANDBOXD_TOKEN
SERVE_CAT=$T/serve-cat.json
cp "$CAT" "$SERVE_CAT"
B="http://127.0.0.1:$PORT"

# The metrics token file's rules, at start: refused, saying why, nothing
# listening.
refused() { # WHY-PATTERN NAME
	timeout 10 "$S" -C "$CAT" serve --listen "unix:$T/no.sock" --metrics-token-file "$T/bad" >"$T/o" 2>&1
	r=$?
	ok $((r == 0)) "$2 (status $r)"
	grep -q -- "$1" "$T/o"
	ok $? "... saying why" || sed 's/^/# /' "$T/o"
}
printf '%s\n' "$SCRAPE" >"$T/bad"
chmod 644 "$T/bad"
refused "group or others" "a metrics token file others may read is refused"
chmod 600 "$T/bad"
printf '%s\n' "$TOKEN" >"$T/bad"
refused "the service's or a tenant's" "a metrics token that is the service token is refused"
printf 'short\n' >"$T/bad"
refused "shorter than 16" "a metrics token shorter than 16 characters is refused"
ln -sf "$T/scrape" "$T/link"
timeout 10 "$S" -C "$CAT" serve --listen "unix:$T/no.sock" --metrics-token-file "$T/link" >"$T/o" 2>&1
ok $(($? == 0)) "a metrics token file that is a symbolic link is refused"

t0=$(date +%s)
sb_serve_start --tenants "$T/tenants" --metrics-token-file "$T/scrape" ||
	bail_out "the service did not start: $(tail -3 "$T/log")"
t1=$(date +%s)
ok 0 "sbxcat serve starts with --metrics-token-file"

# code ARGS...: the status curl gets.
code() { curl -s -o "$T/body" -w '%{http_code}' "$@"; }
# metric NAME: its value in a scrape with the scrape token.
metric() { curl -s -H "Authorization: Bearer $SCRAPE" "$B/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }

# Under load, read by the parsers.
M_HOST=127.0.0.1 M_PORT=$PORT M_TOKEN=$TOKEN M_SCRAPE=$SCRAPE M_PREFIX=m$$- PYTHONPATH=$srcdir/tests \
	timeout -s KILL 300 python3 "$srcdir/tests/metrics_load.py" serve >"$T/load.tap" 2>"$T/load.err"
grep -v '^1\.\.' "$T/load.tap" | sed 's/^ok [0-9]* - /# /; s/^not ok [0-9]* - /# FAILED: /'
sed 's/^/# /' "$T/load.err" | tail -5
grep -q '^not ok' "$T/load.tap"
ok $((!$?)) "/metrics under load: every scrape accepted, no series twice, the counts add up"
ok $(($(grep -c '^ok' "$T/load.tap") < 6)) "... every step of it ran"

# What the process is.
curl -s -H "Authorization: Bearer $SCRAPE" "$B/metrics" >"$T/m"
grep -qx "sbxcat_build_info{version=\"$("$S" --version | awk '{ print $2 }')\"} 1" "$T/m"
ok $? "sbxcat_build_info{version} 1, the version sbxcat --version says"
st=$(awk '$1 == "process_start_time_seconds" { printf "%d", $2 }' "$T/m")
ok $((${st:-0} < t0 - 1 || ${st:-0} > t1)) "process_start_time_seconds is when it started ($t0 <= ${st:-none} <= $t1)"
for f in sbxcat_build_info process_start_time_seconds sbxcat_config_last_reload_successful \
	sbxcat_config_last_reload_success_timestamp_seconds sbxcat_engine_errors_total; do
	grep -q "^# HELP $f [A-Z].*\.$" "$T/m"
	ok $? "$f has a whole HELP sentence"
done

# Bearer, the scrape token, and who may read what.
is "$(code "$B/metrics")" 401 "/metrics without a token: 401"
is "$(code -H "Authorization: Bearer wrong-$(sb_rand)" "$B/metrics")" 401 "... with a wrong Bearer token: 401"
is "$(code -H "Authorization: Bearer $TOKEN" "$B/metrics")" 200 "... the service token in Authorization: Bearer: 200"
is "$(code -H "X-Sandbox-Token: $TOKEN" "$B/metrics")" 200 "... the service token in X-Sandbox-Token: 200"
is "$(code -H "Authorization: Bearer $SCRAPE" "$B/metrics")" 200 "... the scrape token in Authorization: Bearer: 200"
is "$(code -H "Authorization: bearer  $SCRAPE" "$B/metrics")" 200 "... the scheme in any case, spaces after it: 200"
is "$(code -H "X-Sandbox-Token: $SCRAPE" "$B/metrics")" 200 "... the scrape token in X-Sandbox-Token: 200"
is "$(code -H "X-Sandbox-Token: $TA" "$B/metrics")" 403 "... a tenant's token: 403"
is "$(code -H "Authorization: Basic $TOKEN" "$B/metrics")" 401 "... the service token under another scheme: 401"
is "$(code -H "Authorization: Bearer$TOKEN" "$B/metrics")" 401 "... Bearer with no space before the token: 401"
is "$(code -H "Authorization: Bearer" "$B/metrics")" 401 "... Bearer and no token: 401"
is "$(code -H "X-Sandbox-Token: wrong-$(sb_rand)" -H "Authorization: Bearer $TOKEN" "$B/metrics")" 401 \
	"... X-Sandbox-Token wins over Authorization: a wrong one is 401 whatever Bearer says"
is "$(code -H "Authorization: Bearer $TOKEN" "$B/sessions")" 200 "the service token in Bearer lists sessions"
is "$(code -H "Authorization: Bearer $TA" "$B/policy")" 200 "a tenant's token in Bearer reads the policy"
code -H "Authorization: Bearer $TOKEN" -d '{"session_id": "sm-b"}' "$B/sessions" >/dev/null
ST=$(jq -r .token "$T/body")
is "$(code -H "Authorization: Bearer $ST" "$B/sessions/sm-b")" 200 "a session's token in Bearer reaches its session"
is "$(code -H "Authorization: Bearer $ST" -d '{"path": "."}' "$B/sessions/sm-b/ls")" 200 "... and its operations"
for r in "GET /sessions" "GET /policy" "GET /sessions/sm-b" "GET /sessions/sm-b/events" \
	"POST /sessions/sm-b/exec" "POST /workspaces/sm-b/ls" "DELETE /sessions/sm-b?purge=true" \
	"PUT /policy" "POST /sessions"; do
	set -- $r
	got=$(code -X "$1" -H "Authorization: Bearer $SCRAPE" -H 'Content-Type: application/json' \
		$([ "$1" = POST ] || [ "$1" = PUT ] && echo "-d {}") "$B$2")
	is "$got/$(jq -r .detail "$T/body" 2>/dev/null)" "403/The metrics token reads /metrics alone" \
		"the scrape token on $1 $2: 403 in the wire's shape"
done
is "$(code -H "X-Sandbox-Token: $SCRAPE" "$B/sessions/sm-b")" 403 "... in X-Sandbox-Token too"
is "$(code -H "Authorization: Bearer $ST" "$B/metrics")" 401 "a session's token does not read /metrics"
# Refused from the headers: a body announced and never sent is not waited for.
python3 - "$PORT" "$SCRAPE" >"$T/o" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(5)
t = time.time()
s.sendall(("PUT /policy HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{" % sys.argv[2]).encode())
try:
    print(s.recv(100).split(b"\r\n")[0].decode(), time.time() - t < 3)
except socket.timeout:
    print("no answer")
PY
is "$(cat "$T/o")" "HTTP/1.1 403 Forbidden True" "the scrape token is refused before the body is read"
is "$(code -H "Authorization: Bearer $TOKEN" -X DELETE "$B/sessions/sm-b")" 204 "the session closed with the service token in Bearer"

# The reload's outcome.
is "$(metric sbxcat_config_last_reload_successful)" 1 "reload successful is 1 from the start"
ts0=$(metric sbxcat_config_last_reload_success_timestamp_seconds)
ok $((${ts0%.*} < t0 - 1 || ${ts0%.*} > t1)) "... its time is the start's ($ts0)"
curl -s "$B/healthz" >"$T/h"
is "$(jq -r '.reload.successful' "$T/h")" true "/healthz says the reload state: successful"
is "$(jq -r '.status' "$T/h")" ok "... status ok"
# reload_wait WANT: until reload successful reads WANT (5 s at most).
reload_wait() {
	n=0
	while [ "$(metric sbxcat_config_last_reload_successful)" != "$1" ] && [ $n -lt 50 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	metric sbxcat_config_last_reload_successful
}
sleep 1.1
echo '[{"alias": "broken"' >"$T/serve-cat.json"
kill -HUP "$SPID"
is "$(reload_wait 0)" 0 "a SIGHUP with a broken catalogue: reload successful 0"
is "$(metric sbxcat_config_last_reload_success_timestamp_seconds)" "$ts0" "... the success's time unchanged"
curl -s "$B/healthz" >"$T/h"
is "$(jq -r '.reload.successful' "$T/h")/$(jq -r .status "$T/h")" false/ok \
	"... /healthz says it (and stays ok: the service serves what it had)"
cp "$CAT" "$T/serve-cat.json"
kill -HUP "$SPID"
is "$(reload_wait 1)" 1 "a good SIGHUP: back to 1"
ts1=$(metric sbxcat_config_last_reload_success_timestamp_seconds)
ok $((${ts1%.*} <= ${ts0%.*})) "... with a later time ($ts0 -> $ts1)"
is "$(curl -s "$B/healthz" | jq -r '.reload.successful')" true "... /healthz too"
is "$(date -u -d "$(curl -s "$B/healthz" | jq -r '.reload.last_success_at')" +%s)" "${ts1%.*}" \
	"... its last_success_at is the metric's time"

# The scrape token read again at a reload.
NEW=scr2-$(sb_rand)
printf '%s\n' "$NEW" >"$T/scrape"
kill -HUP "$SPID"
n=0
while [ "$(code -H "Authorization: Bearer $NEW" "$B/metrics")" != 200 ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
is "$(code -H "Authorization: Bearer $NEW" "$B/metrics")" 200 "a new scrape token in the file: read at SIGHUP"
is "$(code -H "Authorization: Bearer $SCRAPE" "$B/metrics")" 401 "... the old one no longer reads /metrics"
SCRAPE=$NEW
chmod 644 "$T/scrape"
kill -HUP "$SPID"
is "$(reload_wait 0)" 0 "a scrape token file others may read at SIGHUP: reload successful 0"
is "$(code -H "Authorization: Bearer $SCRAPE" "$B/metrics")" 200 "... the token in use kept"
grep -q "reload: the metrics token is kept as it was" "$T/log"
ok $? "... the log says why"
chmod 600 "$T/scrape"
kill -HUP "$SPID"
is "$(reload_wait 1)" 1 "... mode 600 again and a SIGHUP: 1"
grep -q -e "$SCRAPE" -e "$TOKEN" "$T/log"
ok $((!$?)) "the log never holds a token"

kill -TERM "$SPID"
wait "$SPID"
is "$?" 0 "the service stops cleanly"
SPID=""
sb_done

#!/bin/sh
# t-serve-tls.sh - `sbxcat serve` over HTTPS (docs/serve.md, "TLS"), on the
# real engine and PostgreSQL (servebed.sh), with the certificates of
# tests/tlsbed.sh: the options' rules (exit 2), a key anyone may read or
# that is not the certificate's refused, /healthz and a session's exec
# over HTTPS, plain HTTP to the TLS port refused, the E2B front's Host
# routing (PORT-ID.e2b.test) under TLS, SIGHUP with an exec in flight
# (it finishes; new connections get the new certificate), a bad new key
# kept out and the reload's failure in /metrics and /healthz, hostile
# TLS input.  The HTTP layer's own TLS tests are t-http-tls.sh.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init serve-tls stls
sb_audit_db t_serve_tls_$$
H=$T/tls
mkdir "$H" || exit 1
# shellcheck source=tests/tlsbed.sh
. "$srcdir/tests/tlsbed.sh"
TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
HPORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL
cp "$H/one.pem" "$H/cert.pem" && cp "$H/one.key" "$H/key.pem"

u() { timeout 10 "$S" -C "$CAT" serve "$@" >"$T/o" 2>&1; echo "$?"; }
is "$(u --listen "https:127.0.0.1:$HPORT")" 2 "serve --listen https: without --tls-cert and --tls-key: exit 2"
grep -q "needs --tls-cert and --tls-key" "$T/o"
ok $? "... saying what it needs"
is "$(u --listen "https:127.0.0.1:$HPORT" --tls-cert "$H/cert.pem")" 2 "... with the certificate alone: exit 2"
is "$(u --listen "tcp:127.0.0.1:$HPORT" --tls-cert "$H/cert.pem" --tls-key "$H/key.pem")" 2 \
	"a certificate and key with no https: listener: exit 2"
grep -q "need a --listen https:HOST:PORT" "$T/o"
ok $? "... saying so"
SBXCAT_TLS_CERT=$H/cert.pem timeout 10 "$S" -C "$CAT" serve --listen "tcp:127.0.0.1:$HPORT" >"$T/o" 2>&1
is "$?" 2 "... SBXCAT_TLS_CERT alone too"
cp "$H/one.key" "$H/open.key" && chmod 644 "$H/open.key"
is "$(u --listen "https:127.0.0.1:$HPORT" --tls-cert "$H/cert.pem" --tls-key "$H/open.key")" 2 \
	"a key file group or others may read is refused"
grep -q "may be read by group or others" "$T/o"
ok $? "... saying chmod 600 ($(tr '\n' ' ' <"$T/o"))"
[ "$(u --listen "https:127.0.0.1:$HPORT" --tls-cert "$H/cert.pem" --tls-key "$H/stray.key")" != 0 ] &&
	grep -q "the TLS key does not match the certificate" "$T/o"
ok $? "a key that is not the certificate's is refused at start"
"$S" serve --help 2>&1 | grep -q -- "--tls-cert FILE --tls-key FILE"
ok $? "serve's usage names --tls-cert and --tls-key"

SBXCAT_TLS_CERT=$H/cert.pem SBXCAT_TLS_KEY=$H/key.pem
export SBXCAT_TLS_CERT SBXCAT_TLS_KEY
sb_serve_start --listen "https:127.0.0.1:$HPORT" || bail_out "serve with https: did not start: $(tail -5 "$T/log")"
hs() { curl -s --cacert "$H/ca.pem" -H "X-Sandbox-Token: $TOKEN" ${2:+-d "$2"} "https://127.0.0.1:$HPORT$1"; }
is "$(hs /healthz | jq -r .status)" ok "serve over https: /healthz (certificate from SBXCAT_TLS_CERT, checked by curl)"
hs /sessions '{"session_id": "tls"}' >"$T/open.json"
ST=$(jq -r .token "$T/open.json")
[ ${#ST} -gt 10 ]
ok $? "a session opened over https"
is "$(curl -s --cacert "$H/ca.pem" -H "X-Sandbox-Token: $ST" -d '{"command": "echo over-tls"}' \
	"https://127.0.0.1:$HPORT/sessions/tls/exec" | jq -r .output)" "over-tls" "... and a command run in it"
curl -s --max-time 5 "http://127.0.0.1:$HPORT/healthz" >/dev/null
ok $((! $?)) "plain HTTP to serve's https: port fails"
ID=aaaaaaaaaaaaaaaaaaaa
is "$(curl -s --cacert "$H/ca.pem" --resolve "49999-$ID.e2b.test:$HPORT:127.0.0.1" -w ' %{http_code}' \
	-d '{"code": "1"}' "https://49999-$ID.e2b.test:$HPORT/execute")" \
	'{"code":401,"message":"Invalid or missing access token"} 401' \
	"the E2B front routes by Host PORT-ID.e2b.test under TLS: the sandbox named by the Host asks for its token"
is "$(curl -s --cacert "$H/ca.pem" -w ' %{http_code}' -d '{"code": "1"}' "https://127.0.0.1:$HPORT/execute" | sed 's/.* //')" \
	"$(curl -s -w ' %{http_code}' -d '{"code": "1"}' "http://127.0.0.1:$PORT/execute" | sed 's/.* //')" \
	"... and without such a Host answers as over plain HTTP"

# SIGHUP with an exec in flight: it finishes; new connections get the new
# certificate.
curl -s --cacert "$H/ca.pem" -H "X-Sandbox-Token: $ST" -d '{"command": "sleep 2; echo slept"}' \
	"https://127.0.0.1:$HPORT/sessions/tls/exec" >"$T/slow.json" &
SLOW=$!
sleep 0.5
cp "$H/two.pem" "$H/cert.pem" && cp "$H/two.key" "$H/key.pem"
kill -HUP "$SPID"
i=0
while [ "$(c serial "$HPORT" "$H/ca.pem")" != "serial=2002" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
is "$(c serial "$HPORT" "$H/ca.pem")" "serial=2002" "SIGHUP: a new connection gets the new certificate"
wait $SLOW
is "$(jq -r .output "$T/slow.json")" "slept" "... an exec in flight over https during the reload finishes"
is "$(curl -s -H "X-Sandbox-Token: $TOKEN" "http://127.0.0.1:$PORT/metrics" | grep '^sbxcat_config_last_reload_successful ')" \
	"sbxcat_config_last_reload_successful 1" "... and /metrics says the reload succeeded"
cp "$H/stray.key" "$H/key.pem"
kill -HUP "$SPID"
i=0
while ! grep -q "the TLS certificate is kept as it was" "$T/log" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "reload: the TLS certificate is kept as it was: the TLS key does not match the certificate" "$T/log"
ok $? "a bad new key: the reload fails, saying why"
is "$(curl -s -H "X-Sandbox-Token: $TOKEN" "http://127.0.0.1:$PORT/metrics" | grep '^sbxcat_config_last_reload_successful ')" \
	"sbxcat_config_last_reload_successful 0" "... /metrics says the reload failed"
is "$(c serial "$HPORT" "$H/ca.pem")" "serial=2002" "... and the certificate in use is still served"
is "$(hs /healthz | jq -r .reload.successful)" false "... /healthz says so too"
is "$(c hostile "$HPORT" "$H/ca.pem" 100 "$$" /healthz)" "200 True" "hostile TLS input to serve: a normal client is served at once"
kill -0 "$SPID"
ok $? "serve still runs"
done_testing

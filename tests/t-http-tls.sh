#!/bin/sh
# t-http-tls.sh - HTTPS in the HTTP layer (src/serve/http-tls.c, docs/serve.md
# "TLS"): tests/t-http on https: with the certificates of tests/tlsbed.sh.
# curl and Python's ssl check the certificate, plain HTTP to the TLS port
# fails, SIGHUP with new files serves the new certificate to new
# connections while a connection made before keeps the old one and a
# stream open across the reload completes, a bad new key or certificate
# keeps the old one, reloads leave no daemon or thread behind; hostile
# input (random bytes, cut or mangled client hellos, a hello and silence,
# hundreds of half-open handshakes) never stops the server nor keeps
# others waiting; the pair's rules at start.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/httpbed.sh
. "$srcdir/tests/httpbed.sh"
H=$T
# shellcheck source=tests/tlsbed.sh
. "$srcdir/tests/tlsbed.sh"

# reloaded N: wait for the N-th "reload" line of t-http's stderr.
reloaded() {
	i=0
	while [ "$(grep -c 't-http: reload' "$H/a.err")" -lt "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	grep 't-http: reload' "$H/a.err" | sed -n "$1p"
}
threads() { ls "/proc/$1/task" | wc -l; }

start a -S 127.0.0.1:0 -C "$H/cert.pem" -K "$H/key.pem" -s 4
A=$PID
is "$(curl -s --cacert "$H/ca.pem" "https://127.0.0.1:$PORT/echo/x" | head -c 30)" '{"method":"GET","route":"/echo' \
	"curl --cacert over https: served, the certificate checked"
is "$(curl -s --cacert "$H/ca.pem" --resolve "49999-abc.e2b.test:$PORT:127.0.0.1" \
	"https://49999-abc.e2b.test:$PORT/echo/y" | head -c 30)" '{"method":"GET","route":"/echo' \
	"... under a name of the wildcard (*.e2b.test)"
curl -s --max-time 5 "http://127.0.0.1:$PORT/echo/x" >"$H/plain.out"
rc=$?
[ $rc -ne 0 ] && ! grep -q route "$H/plain.out"
ok $? "plain HTTP to the TLS port is not served (curl $rc)"
is "$(c get "$PORT" "$H/ca.pem" /echo/z)" '200 {"method":"GET","route":"/echo/{x}","pat' \
	"Python's http.client with an ssl context checks the certificate and is served"
is "$(c get "$PORT" "$H/other-ca.pem" /echo/z)" "verify-failed unable to get local issuer certificate" \
	"... and refuses it against another CA"
is "$(c serial "$PORT" "$H/ca.pem")" "serial=1001" "the certificate served is the first one"

t0=$(threads "$A")
c keepalive "$PORT" "$H/ca.pem" "$H/ka.mark" "$H/ka.done" >"$H/ka.out" &
KA=$!
c stream "$PORT" "$H/ca.pem" "$H/rel" "$H/st.mark" >"$H/st.out" &
ST=$!
i=0
while { [ ! -e "$H/ka.mark" ] || [ ! -e "$H/st.mark" ]; } && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
cp "$H/two.pem" "$H/cert.pem" && cp "$H/two.key" "$H/key.pem"
kill -HUP "$A"
is "$(reloaded 1)" "t-http: reload ok" "SIGHUP with a new certificate and key: reloaded"
is "$(c serial "$PORT" "$H/ca.pem")" "serial=2002" "... a new connection gets the new certificate"
touch "$H/ka.done" "$H/rel"
wait $KA
is "$(cat "$H/ka.out")" "200 200 serial=1001" "... a connection made before keeps the old one and is served after the reload"
wait $ST
is "$(cat "$H/st.out")" "200 b'first\\nreleased\\nabcdeend\\n'" "... a stream open across the reload completes"

cp "$H/stray.key" "$H/key.pem"
kill -HUP "$A"
is "$(reloaded 2)" "t-http: reload failed: the TLS key does not match the certificate" \
	"a new key that is not the certificate's: the reload fails, saying why"
is "$(c serial "$PORT" "$H/ca.pem")" "serial=2002" "... and the certificate in use is still served"
echo "not a certificate" >"$H/cert.pem"
cp "$H/two.key" "$H/key.pem"
kill -HUP "$A"
is "$(reloaded 3)" "t-http: reload failed: the TLS certificate is not a PEM X.509 certificate" \
	"a certificate file that is not one: the reload fails"
cp "$H/two.pem" "$H/cert.pem"
for n in 4 5 6 7 8 9 10 11 12 13; do
	kill -HUP "$A"
	reloaded $n >/dev/null
done
is "$(grep -c 't-http: reload ok' "$H/a.err")" 11 "ten reloads more, all good"
sleep 0.5
t1=$(threads "$A")
[ "$t1" -le "$t0" ]
ok $? "the replaced daemons are stopped once their connections are done (threads $t0 before, $t1 after)"
is "$(c serial "$PORT" "$H/ca.pem")" "serial=2002" "... and the last certificate is served"

is "$(c hostile "$PORT" "$H/ca.pem" 300 "$$" /echo/during)" "200 True" \
	"300 connections of random bytes, cut or mangled client hellos, plain HTTP: a normal client is served at once"
kill -0 "$A"
ok $? "t-http still serves"
kill "$A"
wait "$A"
is "$?" 0 "... and stops cleanly"
start b -S 127.0.0.1:0 -C "$H/cert.pem" -K "$H/key.pem" -i 2 -r 1
s=$(c silent "$PORT" "$H/ca.pem")
[ "$s" -ge 1 ] && [ "$s" -le 4 ]
ok $? "a client hello, then silence: the connection closed by the timeouts (idle 2 s, request 1 s: $s s)"
kill "$PID"
wait "$PID"

"$BIN" -S 127.0.0.1:0 2>"$H/nocert.err"
is "$?:$(cat "$H/nocert.err")" "1:t-http: cannot listen on 'https:127.0.0.1:0' without a TLS certificate and its key" \
	"the HTTP layer refuses https: without a certificate"
"$BIN" -t 127.0.0.1:0 -C "$H/two.pem" -K "$H/two.key" 2>"$H/notls.err"
is "$?:$(cat "$H/notls.err")" "1:t-http: a TLS certificate and key but no https: listener to serve them" \
	"... and a certificate with no https: listener"
"$BIN" -S 127.0.0.1:0 -C "$H/two.pem" -K "$H/stray.key" 2>"$H/mismatch.err"
is "$?:$(cat "$H/mismatch.err")" "1:t-http: the TLS key does not match the certificate" \
	"... and a key that is not the certificate's"
! grep -l 'Sanitizer\|runtime error' "$H"/*.err
ok $? "no sanitizer report from t-http"

done_testing

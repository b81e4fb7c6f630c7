#!/bin/sh
# t-e2b-sdk.sh - the E2B front (docs/e2b.md) judged by the real E2B SDK
# from the npm registry: Seizu's sequence (tests/e2b/seizu.mjs: create with
# metadata, commands ok / non-zero / past their deadline, envs and cwd,
# background and kill, stdin, every file call, runCode twice with the
# variable kept, pause, list paused by metadata page by page, connect,
# getInfo, setTimeout, kill, and a second tenant who sees none of it) on a
# real `sbxcat serve`, on the real engine and PostgreSQL:
#  - over plain HTTP, E2B_API_URL and E2B_SANDBOX_URL both the service's
#    URL, with e2b 2.51.0 (create at POST /v2/sandboxes) and the code
#    interpreter 2.8.0, then e2b 2.50.0 and 2.30.5 (create at POST
#    /sandboxes; 2.30 is Seizu's lock's);
#  - over TLS with a CA of the test's own and a certificate for
#    *.e2b.test, E2B_DOMAIN=e2b.test:PORT and no URL at all, so the SDK
#    builds https://api.e2b.test:PORT and https://PORT-ID.e2b.test:PORT
#    itself (the service routes by Host), runCode included (the Python
#    code interpreter 2.8 goes there whatever E2B_SANDBOX_URL says);
#    tests/e2b/resolve.cjs, preloaded, resolves e2b.test's names to
#    127.0.0.1 for node alone;
#  - the audit: the rows of tenant A's calls name its sandboxes, tenant B
#    acted on none of them.
# The SDKs are installed by tests/e2b/sdk.sh into the build tree; the
# test skips (loudly) only when node is missing or the npm registry cannot
# be reached, and an SDK whose engines exclude this node is skipped alone.
set -u
: "${srcdir:?srcdir must name the source tree}"
# The build tree's tests/e2b, before sb_init moves to the test's own dir.
E2B_DIR=${E2B_SDK_DIR:-$(pwd)/tests/e2b}
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
# shellcheck source=tests/e2b/sdk.sh
. "$srcdir/tests/e2b/sdk.sh"
# shellcheck source=tests/e2b/image.sh
. "$srcdir/tests/e2b/image.sh"
command -v openssl >/dev/null || skip_all "openssl is missing (scripts/deps.sh test installs it)"
e2b_sdk_install "$E2B_DIR"
case $? in
0) ;;
1) skip_all "$E2B_SDK_WHY" ;;
*) echo "Bail out! $E2B_SDK_WHY"; exit 1 ;;
esac
sb_init e2b-sdk es
e2b_image || skip_all "no E2B test image (reason above)"
sb_audit_db t_e2b_sdk_$$
diag "node $(node --version); SDKs in $E2B_DIR/node_modules: $E2B_SDK_PINS; image $E2B_IMAGE"

# Two tenants whose tokens have E2B's key shape (the SDK checks it).
KA=e2b_$(sb_rand)$(sb_rand | cut -c1-8) KB=e2b_$(sb_rand)$(sb_rand | cut -c1-8)
printf 'ta %s\ntb %s\n' "$KA" "$KB" >"$T/tenants"
chmod 600 "$T/tenants"
# Two runtimes of the one image: the first is the default (what the SDK's
# own templates, base and code-interpreter-v1, map to).
RE=es-e2b-$sfx RS=es-e2bsmall-$sfx
SERVE_CAT=$T/e2b-cat.json
cat >"$SERVE_CAT" <<JSON
[
  {"alias": "$RE", "description": "E2B-like: bash and python3", "image": "$E2B_IMAGE"},
  {"alias": "$RS", "description": "the same, less memory", "image": "$E2B_IMAGE", "mem_limit": "256m"}
]
JSON
TOKEN=svc-$(sb_rand) PORT=$(sb_free_port) TPORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL SERVE_CAT

# The test CA and a wildcard certificate for *.e2b.test (and e2b.test).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
	-subj /CN=sbxcat-t-e2b-sdk-CA -addext basicConstraints=critical,CA:TRUE \
	-addext keyUsage=critical,keyCertSign,cRLSign >"$T/openssl.log" 2>&1 &&
	openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" \
		-subj /CN=e2b.test >>"$T/openssl.log" 2>&1 &&
	printf 'subjectAltName=DNS:*.e2b.test,DNS:e2b.test\nextendedKeyUsage=serverAuth\n' >"$T/srv.ext" &&
	openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
		-out "$T/srv.pem" -days 2 -extfile "$T/srv.ext" >>"$T/openssl.log" 2>&1
is "$?" 0 "a test CA and a certificate for *.e2b.test" || sed 's/^/# /' "$T/openssl.log"
chmod 600 "$T/srv.key"

# The service: plain HTTP on $PORT and, when it has the options, HTTPS on
# $TPORT with the certificate.
tls=""
"$S" serve --help 2>&1 | grep -q -- '--tls-cert' && tls=yes
ok "$([ -n "$tls" ]; echo $?)" "sbxcat serve has --tls-cert and --tls-key"
if [ -n "$tls" ]; then
	sb_serve_start --tenants "$T/tenants" --listen "https:127.0.0.1:$TPORT" \
		--tls-cert "$T/srv.pem" --tls-key "$T/srv.key"
else
	sb_serve_start --tenants "$T/tenants"
fi
ok $? "sbxcat serve starts" || { sed 's/^/# /' "$T/log" | tail -20; bail_out "no service"; }

# drive NAME SDK CODE [ENV=VALUE...]: seizu.mjs on package SDK (CODE 1: the
# code interpreter too), its TAP folded in as one check per case, in the
# environment given (nothing else of E2B's).
# T_E2B_SDK_RUNS picks runs by name (a developer's shortcut; all of them
# by default).
picked() {
	case " ${T_E2B_SDK_RUNS:-$1} " in
	*" $1 "*) return 0 ;;
	*) return 1 ;;
	esac
}
drive() {
	d_name=$1 d_sdk=$2 d_code=$3
	shift 3
	if ! picked "$d_name"; then
		skip "not in T_E2B_SDK_RUNS" "$d_name: the SDK's Seizu sequence"
		return
	fi
	if ! e2b_sdk_usable "$E2B_DIR" "$d_sdk"; then
		skip "$E2B_SDK_WHY" "$d_name: the SDK's Seizu sequence"
		return
	fi
	env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DOMAIN -u E2B_DEBUG -u NODE_OPTIONS \
		E2B_MODULES="$E2B_DIR/node_modules" E2B_SDK="$d_sdk" E2B_CODE="$d_code" \
		E2B_API_KEY="$KA" E2B_API_KEY_B="$KB" E2B_TEMPLATES="$RE,$RS" \
		SEIZU_RUN="$d_name-$sfx" "$@" \
		timeout -s KILL 900 node ${D_PRELOAD:+--require "$D_PRELOAD"} "$srcdir/tests/e2b/seizu.mjs" \
		>"$T/$d_name.tap" 2>"$T/$d_name.err"
	d_rc=$?
	sed 's/^/# stderr: /' "$T/$d_name.err" | head -20
	sed -n 's/^# sandbox //p' "$T/$d_name.tap" >>"$T/ids"
	# Each case of the driver is a check of this test, by its own name.
	while IFS= read -r line; do
		case $line in
		"ok "*) tap_n=$((tap_n + 1)); printf 'ok %s - %s: %s\n' "$tap_n" "$d_name" "${line#ok * - }" ;;
		"not ok "*) tap_n=$((tap_n + 1)); printf 'not ok %s - %s: %s\n' "$tap_n" "$d_name" "${line#not ok * - }" ;;
		"#"*) printf '%s\n' "$line" ;;
		esac
	done <"$T/$d_name.tap"
	grep -q '^1\.\.[0-9]' "$T/$d_name.tap"
	ok $? "$d_name: the driver ran to its end (exit $d_rc)"
	# The second sandbox's create and pause carried X-Sandbox-Agent and
	# -Run through the SDK's headers option.
	# The audit's writer commits in groups: wait for the rows (10 s).
	d_n=0
	while :; do
		d_who=$(q "SELECT count(*) FROM sandbox_operations WHERE tenant = 'ta' AND agent_id = 'seizu' AND run_id = '$d_name-$sfx'")
		[ "${d_who:-0}" -ge 2 ] || [ $d_n -ge 100 ] && break
		sleep 0.1
		d_n=$((d_n + 1))
	done
	ok "$([ "${d_who:-0}" -ge 2 ]; echo $?)" "$d_name: the audit names the agent and run the SDK's headers gave ($d_who rows)"
}

URL_PLAIN=http://127.0.0.1:$PORT
drive v2 e2b 1 E2B_API_URL="$URL_PLAIN" E2B_SANDBOX_URL="$URL_PLAIN"
drive v1 e2b-old 0 E2B_API_URL="$URL_PLAIN" E2B_SANDBOX_URL="$URL_PLAIN"
drive seizu-pin e2b-seizu 0 E2B_API_URL="$URL_PLAIN" E2B_SANDBOX_URL="$URL_PLAIN"
if picked v2; then
	grep -q ' POST /v2/sandboxes 201 ' "$T/log"
	ok $? "the access log has the current SDK's create, POST /v2/sandboxes 201"
fi
if picked v1 || picked seizu-pin; then
	grep -q ' POST /sandboxes 201 ' "$T/log"
	ok $? "... and the older SDKs' POST /sandboxes 201"
fi

# TLS: the SDK's own URLs, resolved to the service by the preload.
if [ -n "$tls" ] && picked tls; then
	curl -sf --cacert "$T/ca.pem" --resolve "api.e2b.test:$TPORT:127.0.0.1" \
		"https://api.e2b.test:$TPORT/healthz" >/dev/null
	ok $? "HTTPS answers for api.e2b.test with the test CA's certificate"
	tls_from=$(($(wc -l <"$T/log") + 1))
	D_PRELOAD=$srcdir/tests/e2b/resolve.cjs
	drive tls e2b 1 SEIZU_HOST=1 E2B_DOMAIN="e2b.test:$TPORT" NODE_EXTRA_CA_CERTS="$T/ca.pem" \
		E2B_RESOLVE_DOMAIN=e2b.test
	D_PRELOAD=""
	tail -n "+$tls_from" "$T/log" >"$T/log.tls"
	grep -q ' POST /v2/sandboxes 201 ' "$T/log.tls"
	ok $? "the TLS run created at https://api.e2b.test:PORT (POST /v2/sandboxes 201 in its access log)"
	grep -q ' POST /execute 200 ' "$T/log.tls"
	ok $? "... and ran code at https://49999-ID.e2b.test:PORT (POST /execute 200)"
elif [ -z "$tls" ]; then
	skip "sbxcat serve has no --tls-cert" "tls: the SDK's Seizu sequence over HTTPS"
fi

# The audit: tenant A's calls are rows naming its sandboxes; tenant B
# acted on none of them (its refusals found nothing of A's).
sb_serve_stop
ids=$(sort -u "$T/ids" 2>/dev/null | tr '\n' ' ')
ok "$([ -n "$ids" ]; echo $?)" "the drivers named the sandboxes they made ($(echo "$ids" | wc -w))"
nA=0 nB=0
for id in $ids; do
	nA=$((nA + $(q "SELECT count(*) FROM sandbox_operations WHERE tenant = 'ta' AND (session_key LIKE '%$id%' OR target LIKE '%$id%')")))
	nB=$((nB + $(q "SELECT count(*) FROM sandbox_operations WHERE tenant = 'tb' AND ok AND (session_key LIKE '%$id%' OR target LIKE '%$id%')")))
done
ok "$([ "$nA" -gt 0 ]; echo $?)" "the audit has tenant A's rows on its sandboxes ($nA)"
is "$nB" 0 "tenant B has no successful row on A's sandboxes"
is "$(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP" | wc -l)" 0 \
	"every sandbox the drivers made is gone from the engine"
sb_done

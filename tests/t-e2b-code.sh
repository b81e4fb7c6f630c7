#!/bin/sh
# t-e2b-code.sh - E2B's code interpreter through `sbxcat serve` (docs/e2b.md,
# "Code"), on the real engine and PostgreSQL: POST /execute and /contexts
# on a persistent python3 per context, in a runtime made here from the
# host's python3 (the test-bed's busybox has none) and in one without.
# The HTTP side is tests/e2b_code.py.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/servebed.sh
. "$srcdir/tests/servebed.sh"
sb_init e2b-code ec
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "no /usr/bin/python3 on the host to make the sandbox's runtime from"
sb_audit_db t_e2b_code_$$

# The runtime with python3: the host's interpreter, its libraries and its
# standard library (without the test suite), over the test-bed's busybox.
PYIMG=sbxcat/ec-py-$sfx:1
mkdir -p "$T/img/root"
pyver=$($PY -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
pylib=$($PY -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
pyexe=$(readlink -f "$PY")
{
	echo "$pyexe"
	ldd "$pyexe" | awk '/=>/ {print $3} /^\t\/lib/ {print $1}'
	for so in "$pylib"/lib-dynload/*.so; do
		ldd "$so" 2>/dev/null | awk '/=>/ {print $3}'
	done
} | sort -u | grep '^/' >"$T/img/files"
tar -C / -chf - $(sed 's,^/,,' "$T/img/files") \
	--exclude="${pylib#/}/test" --exclude="${pylib#/}/idlelib" \
	--exclude="${pylib#/}/tkinter" --exclude="${pylib#/}/ensurepip" \
	--exclude='*/__pycache__' "${pylib#/}" 2>/dev/null | tar -C "$T/img/root" -xf -
mkdir -p "$T/img/root/usr/local/bin"
ln -sf "$pyexe" "$T/img/root/usr/local/bin/python3"
printf 'FROM sbxcat-test/busybox:1\nCOPY root/ /\n' >"$T/img/Dockerfile"
tb_docker build -q -t "$PYIMG" "$T/img" >"$T/build.out" 2>&1
ok $? "the python3 runtime image is built from the host's $pyver" || sed 's/^/# /' "$T/build.out"
RPY=ec-py-$sfx
jq --arg a "$RPY" --arg i "$PYIMG" '[{"alias": $a, "description": "python3", "image": $i}] + .' "$CAT" >"$T/cat2.json"
SERVE_CAT=$T/cat2.json

TOKEN=svc-$(sb_rand)
PORT=$(sb_free_port)
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0 SANDBOXD_EXECUTE_TIMEOUT=4
SANDBOXD_MAX_OUTPUT_BYTES=200000
export SANDBOXD_TOKEN SANDBOXD_CLEANUP_INTERVAL SANDBOXD_EXECUTE_TIMEOUT SANDBOXD_MAX_OUTPUT_BYTES
sb_serve_start
ok $? "sbxcat serve starts" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }

cat >"$T/sql" <<SQL
#!/bin/sh
. "$srcdir/tests/pgbed.sh"
pgbed_psql "$DB" -c "\$1"
SQL
chmod +x "$T/sql"
CODE_SQL=$T/sql SERVE_PORT=$PORT SERVE_TOKEN=$TOKEN CODE_RUNTIME_PY=$RPY CODE_RUNTIME_NOPY=$RA
SERVE_PID=$SPID PYTHONPATH=$srcdir/tests CODE_DEP=$DEP CODE_IMAGE=$PYIMG
export CODE_SQL SERVE_PORT SERVE_TOKEN CODE_RUNTIME_PY CODE_RUNTIME_NOPY SERVE_PID PYTHONPATH CODE_DEP CODE_IMAGE
timeout -s KILL 400 python3 "$srcdir/tests/e2b_code.py" >"$T/py.tap" 2>"$T/py.err"
p_rc=$?
is "$p_rc" 0 "the HTTP side ran to its end"
sed 's/^/# /' "$T/py.err" | head -30
np=$(grep -c '^ok ' "$T/py.tap")
nf=$(grep -c '^not ok ' "$T/py.tap")
grep -B2 -A20 '^not ok' "$T/py.tap" | head -150 | sed 's/^/# /'
is "$nf" 0 "every case of the HTTP side passed ($np passed)"
ok $((np < 20)) "its cases ran ($np of them)"
kill -0 "$SPID" 2>/dev/null
ok $? "the service is still running"
kill -TERM "$SPID"
wait "$SPID"
is "$?" 0 "the service stops with status 0" ||
	grep -B2 -A40 'Sanitizer\|runtime error\|Assertion\|ERROR' "$T/log" | head -80 | sed 's/^/# /'
SPID=""
n=$(tb_docker ps -q --filter "label=io.sbxcat.deployment=$DEP" | while read -r c; do
	tb_docker top "$c" -eo args 2>/dev/null | grep -c '[p]ython3 -u -c'
done | awk '{s += $1} END {print s + 0}')
is "$n" 0 "no interpreter is left running once the service stopped"
sb_done

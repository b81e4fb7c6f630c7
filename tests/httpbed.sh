# tests/httpbed.sh - what the tests of tests/t-http share (t-http.sh,
# t-http-stream.sh, t-http-tls.sh): tap.sh, the binary, the test's own
# directory $T (removed at exit, with every server started), and
#
#   start NAME OPTIONS...   a t-http in the background, waiting until it
#                           serves: $PID, $PORT (its first TCP port),
#                           $T/NAME.err (stderr), $T/NAME.log (access log)
#   stop PID                SIGTERM, and wait for it
#
# Skips the whole test without the binary, curl or python3.
# shellcheck disable=SC2034
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
BIN=$PWD/tests/t-http
[ -x "$BIN" ] || skip_all "tests/t-http is not built"
command -v curl >/dev/null || skip_all "no curl (apt-get install curl)"
command -v python3 >/dev/null || skip_all "no python3"
T=$(mktemp -d)
SERVERS=""
cleanup() {
	for p in $SERVERS; do kill "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

start() {
	name=$1
	shift
	rm -f "$T/$name.ports"
	"$BIN" -p "$T/$name.ports" -l "$T/$name.log" "$@" 2>"$T/$name.err" &
	PID=$!
	SERVERS="$SERVERS $PID"
	i=0
	while [ ! -s "$T/$name.ports" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	[ -s "$T/$name.ports" ] || bail_out "t-http $name did not start: $(cat "$T/$name.err")"
	PORT=$(head -1 "$T/$name.ports")
}
stop() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

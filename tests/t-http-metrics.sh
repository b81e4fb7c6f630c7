#!/bin/sh
# t-http-metrics.sh - /metrics of the service's HTTP server (src/serve/
# http-metrics.c) as Prometheus takes it: tests/t-http loaded on several
# routes and methods (GET and POST of one template, a 404, a 405, a method
# no route has, a template whose label needs escaping) while it is scraped,
# every scrape read by promtool and/or prometheus_client's parser and the
# format's rules (tests/promcheck.py, driven by tests/metrics_load.py).
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
BIN=$PWD/tests/t-http
[ -x "$BIN" ] || skip_all "tests/t-http is not built"
command -v python3 >/dev/null || skip_all "no python3"
readers=$(cd "$srcdir/tests" && python3 -c 'import promcheck; print(" ".join(promcheck.readers()))')
[ -n "$readers" ] || skip_all "no reader of Prometheus' text format: neither promtool (Debian's prometheus, or SBXCAT_PROMTOOL) nor python3-prometheus-client (scripts/deps.sh test installs it)"
diag "readers: $readers"
T=$(mktemp -d)
SPID=""
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
"$BIN" -t 127.0.0.1:0 -p "$T/port" -l /dev/null 2>"$T/err" &
SPID=$!
n=0
while [ ! -s "$T/port" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ -s "$T/port" ] || bail_out "tests/t-http did not start: $(cat "$T/err")"
M_HOST=127.0.0.1 M_PORT=$(head -1 "$T/port") PYTHONPATH=$srcdir/tests \
	timeout -s KILL 120 python3 "$srcdir/tests/metrics_load.py" http

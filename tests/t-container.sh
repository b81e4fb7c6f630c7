#!/bin/sh
# t-container.sh - runs tests/t-container (the engine's container and exec
# calls, in C) against the test-bed engine: finds or starts it as every
# engine test does, then removes whatever the C test left if it died
# before its own clean-up: the containers named t-container-PID-* and
# labelled t-container.pid=PID (PID this script's), and its directory.
# T_CONTAINER_WRAP runs it under a tool, e.g.
# T_CONTAINER_WRAP='valgrind --leak-check=full --error-exitcode=9'.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
BIN=${S%/*}/tests/t-container

[ -x "$BIN" ] || skip_all "$BIN is not built"
testbed_docker || skip_all "no Docker engine could be reached or started (reason above)"
testbed_base_image || skip_all "no base image sbxcat-test/busybox:1 (reason above)"

pid=$$
T_CONTAINER_PID=$pid; export T_CONTAINER_PID
T_CONTAINER_DIR=$(mktemp -d /tmp/t-container.XXXXXX) || exit 1
export T_CONTAINER_DIR
trap 'rm -rf "$T_CONTAINER_DIR"' EXIT
# shellcheck disable=SC2086
${T_CONTAINER_WRAP:-} "$BIN"
rc=$?
left=$(tb_docker ps -aq --filter "label=t-container.pid=$pid")
if [ -n "$left" ]; then
	echo "# removing containers t-container left: $left"
	# shellcheck disable=SC2086
	tb_docker rm -f $left >/dev/null
fi
exit $rc

#!/bin/sh
# scripts/deps.sh build|setup|test - install the Debian packages sbxcat needs.
#
# Only what is missing is installed, and `apt-get update` runs only then, so
# a machine that has everything pays nothing.  Needs root for the install.
set -eu
build="autoconf automake libtool pkg-config gcc make libc6-dev
	libjansson-dev libyaml-dev libcurl4-openssl-dev libpq-dev libssl-dev
	libpcre2-dev"
# The engines tests/testbed.sh starts: docker.io (it brings iptables, which
# each engine uses in its own network namespace), util-linux for flock,
# unshare, nsenter and umount, iproute2 for ip (the namespace's loopback),
# curl to ask an engine whether it answers; man-db for man -l docs/sbxcat.1.
engine="docker.io util-linux iproute2 curl man-db"
# test: busybox-static for the base image the tests import, docker-compose
# to check compose files, jq for the shell tests, python3-jsonschema for the
# schema test (it brings the python3 the stand-in engine of t-engine.sh
# runs on), setpriv (util-linux) and openssl for the engine's permission
# and TLS tests, GNU time for make bench, procps for the session tests'
# pgrep and ps (what a timed-out command left on the host), strace for
# t-fs.sh (a refused read reads not a byte of the file).
test="$build $engine busybox-static docker-compose jq python3-jsonschema strace
	openssl time procps"
# setup: what the main job uses besides the build: an engine to prewarm on.
setup="$build $engine"
case "${1:-build}" in
build) want=$build ;;
setup) want=$setup ;;
test) want=$test ;;
*) echo "usage: $0 build|setup|test" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "sbxcat: missing Debian packages:$missing; run as root or: apt-get install$missing" >&2
	exit 3
fi
echo "sbxcat: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null

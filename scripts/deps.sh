#!/bin/sh
# scripts/deps.sh build|setup|test - install the Debian packages sbxcat needs.
#
# Only what is missing is installed, and `apt-get update` runs only then, so
# a machine that has everything pays nothing.  Needs root for the install.
set -eu
build="autoconf automake libtool pkg-config gcc make libc6-dev
	libjansson-dev libyaml-dev libcurl4-openssl-dev libpq-dev libssl-dev"
# test: a Docker engine and its client, busybox-static for the base image
# the tests import, docker-compose to check compose files, jq and curl for
# the shell tests, python3-jsonschema for the schema test (it brings the
# python3 the stand-in engine of t-engine.sh runs on), util-linux for flock,
# mount and setpriv, openssl for the engine's TLS test, GNU time for make
# bench.
test="$build docker.io busybox-static docker-compose jq curl
	python3-jsonschema util-linux openssl time"
# setup: what the main job uses besides the build: an engine to prewarm on.
setup="$build docker.io curl util-linux"
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

#!/bin/sh
# scripts/deps.sh build|setup|test - install the Debian packages sbxcat needs.
#
# Only what is missing is installed, and `apt-get update` runs only then, so
# a machine that has everything pays nothing.  Needs root for the install.
set -eu
build="autoconf automake libtool pkg-config gcc make libc6-dev
	libjansson-dev libyaml-dev libcurl4-openssl-dev libpq-dev libssl-dev
	libpcre2-dev libmicrohttpd-dev"
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
# t-fs.sh (a refused read reads not a byte of the file); the PostgreSQL 15
# server and psql for the audit's private cluster (tests/pgbed.sh);
# e2fsprogs for t-disk.sh's ext4 on a loop device (mkfs.ext4, dumpe2fs)
# and for disk budgets (mkfs.ext4 makes each budget's image; t-budget.sh);
# python3-prometheus-client, a reader of Prometheus' text format for the
# /metrics tests (Debian's prometheus, whose promtool they also use when it
# is there, is a 96 MB server with a system user and a service of its own);
# docker-registry (2.8, /usr/bin/docker-registry) for the fleet's private
# registry (tests/fleetbed.sh), run by the tests with a config of their own;
# chromium and chromium-driver (chromedriver) for the auditor's page in a
# real headless browser (tests/t-audit-web-browser.sh).
test="$build $engine busybox-static docker-compose jq python3-jsonschema strace
	openssl time procps postgresql-15 postgresql-client-15 e2fsprogs
	python3-prometheus-client docker-registry chromium chromium-driver"
# setup: what the main job uses besides the build: an engine to prewarm on,
# and e2fsprogs for disk budgets (SANDBOXD_WORKSPACE_QUOTA).
setup="$build $engine e2fsprogs"
# t-e2b-sdk.sh runs the real E2B SDK from npm on node: Debian's nodejs
# and npm when the machine has no node at all (a node of its own, as
# nodesource's, is kept: it brings its npm, which Debian's would conflict with).
command -v node >/dev/null || test="$test nodejs npm"
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
# Installing the PostgreSQL server must neither create nor start a system
# cluster (postgresql-common makes and starts "main" on port 5432): the
# tests run their own (tests/pgbed.sh).  createcluster.conf says so before
# postgresql-common is installed (it keeps a file it finds); policy-rc.d
# forbids starting services for the length of the install.
undo=""
case " $missing " in
*" postgresql-15 "*)
	if ! dpkg-query -W -f '${Status}\n' postgresql-common 2>/dev/null |
		grep -q '^install ok installed$'; then
		if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
			mkdir -p /etc/postgresql-common
			echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.conf
		fi
	else
		# postgresql-common is there (another version, or removed
		# without purge): its createcluster.conf is not ours to
		# change, but it reads createcluster.d; a file there for the
		# length of the install.
		mkdir -p /etc/postgresql-common/createcluster.d
		f=/etc/postgresql-common/createcluster.d/zz-sbxcat-install.conf
		echo 'create_main_cluster = false' >"$f"
		undo="$undo $f"
	fi
	;;
esac
# docker-registry's postinst starts a system registry on port 5000 (its
# init script): the tests run their own (tests/fleetbed.sh).  policy-rc.d
# forbids starting services for the length of the install, for both.
case " $missing " in
*" postgresql-15 "* | *" docker-registry "*)
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		undo="$undo /usr/sbin/policy-rc.d"
	fi ;;
esac
# shellcheck disable=SC2086
[ -n "$undo" ] && trap 'rm -f $undo' EXIT
apt-get update -qq
# confold (dpkg's conffiles, ucf's files): a file we wrote is kept.
# shellcheck disable=SC2086
UCF_FORCE_CONFFOLD=1 apt-get install -y -qq --no-install-recommends \
	-o Dpkg::Options::=--force-confold $missing >/dev/null

#!/bin/sh
# contrib/fleet/mkimage.sh - the sbxcat image made from this machine's own
# files, for a host with no registry to build FROM (docs/fleet.md,
# "Deployment"):
#
#   sh contrib/fleet/mkimage.sh [-C CATALOGUE] SBXCAT IMAGE
#
# A root file system holding SBXCAT as /usr/local/bin/sbxcat, every library
# `ldd` lists for it and for the three sbxcat loads on first use (dlopen:
# libmicrohttpd, libpq, libcurl, each with what ldd lists for it), the
# dynamic loader, the CA bundle when there is one, the catalogue at
# /usr/local/share/sbxcat/sandbox_runtimes.json, and what the Swarm task
# (contrib/fleet/sbxcat-node) runs with: busybox (busybox-static) as sh and
# its few tools, curl and jq with their libraries; then `docker import` of
# it as IMAGE through $DOCKER_HOST (the client's default otherwise), with
# the Dockerfile's PATH, entrypoint and command.  The libraries are this
# machine's, so the image runs where a binary built here runs (the same
# Debian release).  contrib/fleet/Dockerfile makes the same image from
# debian:bookworm-slim where a registry is reachable.
#
# Exit: 0 made; 1 a file or the engine failed; 2 usage.
set -eu

catalogue=
if [ "${1:-}" = -C ]; then
	[ $# -ge 2 ] || { echo "usage: $0 [-C CATALOGUE] SBXCAT IMAGE" >&2; exit 2; }
	catalogue=$2
	shift 2
fi
[ $# -eq 2 ] || { echo "usage: $0 [-C CATALOGUE] SBXCAT IMAGE" >&2; exit 2; }
bin=$1 image=$2
[ -x "$bin" ] || { echo "$0: $bin: not an executable" >&2; exit 1; }
if [ -z "$catalogue" ]; then
	catalogue=$(dirname "$0")/../../catalog/sandbox_runtimes.json
fi
[ -r "$catalogue" ] || { echo "$0: $catalogue: cannot read the catalogue" >&2; exit 1; }
DOCKER=${DOCKER:-docker}

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# The paths ldd prints for FILE: "name => /path (addr)" and "/path (addr)".
libs_of() {
	ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
}
# The path of a soname in the loader's cache (none: nothing).
soname_path() {
	/sbin/ldconfig -p | awk -v n="$1" '$1 == n && $NF ~ /^\// { print $NF; exit }'
}

mkdir -p "$root/usr/local/bin" "$root/usr/local/share/sbxcat" "$root/etc" \
	"$root/tmp" "$root/run" "$root/var/spool"
chmod 1777 "$root/tmp"
cp "$bin" "$root/usr/local/bin/sbxcat"
cp "$catalogue" "$root/usr/local/share/sbxcat/sandbox_runtimes.json"
bb=$(command -v busybox) || { echo "$0: busybox is missing (apt-get install busybox-static)" >&2; exit 1; }
for t in curl jq; do
	command -v $t >/dev/null || { echo "$0: $t is missing (apt-get install $t)" >&2; exit 1; }
done
mkdir -p "$root/bin" "$root/usr/bin"
cp "$bb" "$root/bin/busybox"
for t in sh cat cp chmod hostname ls mkdir mktemp rm tar; do
	ln -s busybox "$root/bin/$t"
done
cp "$(dirname "$0")/sbxcat-node" "$root/usr/local/bin/sbxcat-node"
chmod 755 "$root/usr/local/bin/sbxcat-node"
{
	libs_of "$bin"
	for t in curl jq; do
		p=$(command -v $t)
		cp "$p" "$root/usr/bin/$t"
		libs_of "$p"
	done
	for so in libmicrohttpd.so.12 libpq.so.5 libcurl.so.4; do
		p=$(soname_path "$so")
		if [ -z "$p" ]; then
			echo "$0: warning: $so is not installed here: the image lacks it" >&2
			continue
		fi
		echo "$p"
		libs_of "$p"
	done
} | sort -u | while read -r lib; do
	# The path as the loader looks it up, and the file it names.
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
# usrmerge: /lib and /lib64 are links into /usr on bookworm; keep that
# shape when the loader's path went through them.
for d in lib lib64; do
	if [ -L "/$d" ] && [ -d "$root/$d" ] && [ ! -L "$root/$d" ]; then
		mkdir -p "$root/usr/$d"
		cp -a "$root/$d/." "$root/usr/$d/"
		rm -rf "${root:?}/$d"
		ln -s "usr/$d" "$root/$d"
	fi
done
[ -r /etc/ssl/certs/ca-certificates.crt ] && {
	mkdir -p "$root/etc/ssl/certs"
	cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
}
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"

tar -C "$root" --numeric-owner --owner=0 --group=0 -c . |
	"$DOCKER" import \
		-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		-c 'ENTRYPOINT ["/usr/local/bin/sbxcat", "-C", "/usr/local/share/sbxcat/sandbox_runtimes.json"]' \
		-c 'CMD ["serve", "--listen", "tcp:0.0.0.0:8080"]' \
		- "$image" >/dev/null
echo "$image"

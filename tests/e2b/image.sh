# tests/e2b/image.sh - an image like E2B's base template for the tests
# and the bench of the E2B front: the test-bed's busybox applets, plus the
# host's bash (the SDK runs every command as `/bin/bash -l -c CMD`) and the
# host's python3 with its standard library (the code interpreter), a user
# `user` whose home is /home/user.  There is no registry here, so it is
# made with `docker import` from the host's own files, like the test-bed's
# base image (tests/testbed.sh), and kept in the engine under a tag that
# names the python it carries.
#
#   . "$srcdir/tests/testbed.sh"; . "$srcdir/tests/e2b/image.sh"
#   e2b_image || skip_all "..."     # sets $E2B_IMAGE
# shellcheck shell=sh

# e2b_image_make ROOT: the image's tree in ROOT.
e2b_image_make() {
	ei_root=$1
	mkdir -p "$ei_root/bin" "$ei_root/etc" "$ei_root/tmp" "$ei_root/home/user" \
		"$ei_root/usr/bin" "$ei_root/usr/lib" || return 1
	chmod 1777 "$ei_root/tmp"
	cp /bin/busybox "$ei_root/bin/" || return 1
	# shellcheck disable=SC2046
	perl -e '$d = shift; for (grep { $_ ne "busybox" && $_ ne "bash" } @ARGV) {
		symlink("busybox", "$d/$_") or die "$d/$_: $!\n" }' \
		"$ei_root/bin" $(/bin/busybox --list) || return 1
	cp /bin/bash "$ei_root/bin/bash" || return 1
	ei_py=$(readlink -f "$E2B_PYTHON") || return 1
	cp "$ei_py" "$ei_root/usr/bin/" || return 1
	ln -s "$(basename "$ei_py")" "$ei_root/usr/bin/python3"
	ln -s "$(basename "$ei_py")" "$ei_root/usr/bin/python"
	# The standard library without what no sandbox runs (its tests, the
	# GUI, pip's bootstrap) and the packages Debian adds.
	ei_lib=$("$ei_py" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
	mkdir -p "$ei_root$ei_lib"
	tar -C "$ei_lib" --exclude=./test --exclude=./idlelib --exclude=./tkinter \
		--exclude=./ensurepip --exclude=./lib2to3 --exclude=./turtledemo \
		--exclude=./dist-packages --exclude=./site-packages -c . |
		tar -C "$ei_root$ei_lib" -x || return 1
	# Every shared library the three binaries and the interpreter's
	# extension modules load, at the path the host has it.
	for ei_so in $(ldd /bin/bash "$ei_py" "$ei_lib"/lib-dynload/*.so 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(0x/ { print $1 }' | sort -u); do
		mkdir -p "$ei_root$(dirname "$ei_so")"
		cp -L "$ei_so" "$ei_root$ei_so" || return 1
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:10001:10001::/home/user:/bin/bash\n' >"$ei_root/etc/passwd"
	printf 'root:x:0:\nuser:x:10001:\n' >"$ei_root/etc/group"
	chmod 644 "$ei_root/etc/passwd" "$ei_root/etc/group"
}

# e2b_image_import: the image, made once (under the test-bed's lock).
e2b_image_import() {
	tb_docker image inspect "$E2B_IMAGE" >/dev/null 2>&1 && return 0
	ei_t=$(mktemp -d) || return 1
	trap 'rm -rf "$ei_t"' EXIT	# we are in tb_locked's subshell
	e2b_image_make "$ei_t" || { tb_say "cannot gather the files of $E2B_IMAGE"; return 1; }
	tar -C "$ei_t" --owner=0 --group=0 --numeric-owner -c . |
		tb_docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - "$E2B_IMAGE" >/dev/null
}

# e2b_image: $E2B_IMAGE, there or made; 1 (the reason on stderr) when the
# host has no bash, python3 or busybox-static to make it of.
e2b_image() {
	testbed_docker || return 1
	# Debian's python3, not a user's (pyenv's shims are scripts).
	E2B_PYTHON=/usr/bin/python3
	for ei_c in /bin/busybox /bin/bash $E2B_PYTHON ldd perl; do
		command -v "$ei_c" >/dev/null || { tb_say "$ei_c is missing: cannot make the E2B test image"; return 1; }
	done
	E2B_IMAGE=sbxcat-test/e2b:py$("$E2B_PYTHON" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')-1
	tb_locked e2b_image_import || { tb_say "docker import of $E2B_IMAGE failed"; return 1; }
}

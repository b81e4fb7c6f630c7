#!/bin/sh
# t-layers.sh - the layering of docs/hacking.md, checked (tests/layers.py):
# cli/ calls svc/, catalog/ and basic/ only, and no folder includes a
# header of a folder it may not use.  First the checker itself, on a tree
# of its own with a violation planted (it must fail, naming it) and
# without (it must pass); then the real tree.
set -u
. "$srcdir/tests/tap.sh"
command -v python3 >/dev/null || skip_all "python3 is not installed"
command -v nm >/dev/null || skip_all "nm is not installed (binutils)"
CC=${CC:-cc}
T=$(mktemp -d "${TMPDIR:-/tmp}/t-layers.XXXXXX")
trap 'rm -rf "$T"' EXIT

# A small tree: session/ defines session_find, svc/ wraps it, cli/ calls
# svc_find (allowed) or, planted, session_find itself.
mk() { # mk DIR FILE TEXT
	mkdir -p "$T/$1/src/$(dirname "$2")"
	printf '%s\n' "$3" >"$T/$1/src/$2"
}
for t in good bad; do
	mk $t session/session.h 'void session_find(void);'
	mk $t session/session.c '#include "session/session.h"
void session_find(void) {}'
	mk $t svc/svc.h 'void svc_find(void);'
	mk $t svc/svc.c '#include "session/session.h"
#include "svc/svc.h"
void svc_find(void) { session_find(); }'
done
mk good cli/cmd.c '#include "svc/svc.h"
void cmd(void) { svc_find(); }'
mk bad cli/cmd.c '#include "session/session.h"
void cmd(void) { session_find(); }'
built=0
for t in good bad; do
	for c in session/session svc/svc cli/cmd; do
		$CC -c -I"$T/$t/src" -o "$T/$t/src/$c.o" "$T/$t/src/$c.c" ||
			built=1
	done
done
ok $built "the checker's own trees build"

out=$(python3 "$srcdir/tests/layers.py" "$T/good" "$T/good")
is "$?:$out" "0:" "a tree that keeps the layers passes"
out=$(python3 "$srcdir/tests/layers.py" "$T/bad" "$T/bad")
rc=$?
is "$rc" 1 "a tree with a planted violation fails"
case $out in
*"includes: src/cli/cmd.c includes a header of session/"*) r=0 ;;
*) r=1 ;;
esac
ok $r "it names the planted include (cli/cmd.c of session/)" || diag "$out"
case $out in
*"calls: src/cli/cmd.o calls session_find, defined in session/"*) r=0 ;;
*) r=1 ;;
esac
ok $r "it names the planted call (cli/cmd.o calls session_find)" || diag "$out"

# The real tree.
if [ -d src/cli ] && ls src/cli/*.o >/dev/null 2>&1; then
	out=$(python3 "$srcdir/tests/layers.py" "$srcdir" .)
	rc=$?
	is "$rc" 0 "sbxcat keeps its layers" || printf '%s\n' "$out" | sed 's/^/# /'
else
	bail_out "no objects under src/cli: build first"
fi
done_testing

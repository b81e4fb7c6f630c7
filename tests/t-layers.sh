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
# svc_find (allowed) or, planted, session_find itself.  A third tree,
# "hidden", includes only svc/'s header, which brings session/'s: its
# cli/ uses session/'s names that came in so (a macro, a struct, an
# enumerator, a static inline function) and one svc/ re-exports under
# its own name ("#define SVC_ASLEEP SESSION_ASLEEP"); no include and no
# call of it is wrong, the names are.
mk() { # mk DIR FILE TEXT
	mkdir -p "$T/$1/src/$(dirname "$2")"
	printf '%s\n' "$3" >"$T/$1/src/$2"
}
for t in good bad hidden; do
	mk $t session/session.h '#ifndef SESSION_H
#define SESSION_H
void session_find(void);
#define SESSION_ASLEEP "hibernated"
struct session_row { int n; };
enum session_state { SESSION_RUNNING, SESSION_GONE };
static inline int session_alive(int s) { return s == SESSION_RUNNING; }
#endif'
	mk $t session/session.c '#include "session/session.h"
void session_find(void) {}'
	mk $t svc/svc.h '#include "session/session.h"
/* svc/ may use session/: these are its own. */
#define SVC_ASLEEP SESSION_ASLEEP
#define SVC_ROWS 4
struct svc_row { struct session_row r; };
void svc_find(void);'
	mk $t svc/svc.c '#include "session/session.h"
#include "svc/svc.h"
void svc_find(void) { session_find(); }'
done
mk good cli/cmd.c '#include "svc/svc.h"
void cmd(void) { svc_find(); }'
mk bad cli/cmd.c '#include "session/session.h"
void cmd(void) { session_find(); }'
mk hidden cli/cmd.c '#include "svc/svc.h"
/* a member named as session/ names things is no use of them */
struct cmd_view { int session_alive; struct svc_row row[SVC_ROWS]; };
const char *cmd(struct cmd_view *v) {
	struct session_row r = {SESSION_GONE};
	v->session_alive = session_alive(r.n);
	svc_find();
	return v->row[0].r.n ? SESSION_ASLEEP : SVC_ASLEEP;
}'
built=0
for t in good bad hidden; do
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

out=$(python3 "$srcdir/tests/layers.py" "$T/hidden" "$T/hidden")
rc=$?
is "$rc" 1 "a tree using names a header brought in fails"
for want in \
	"names: src/cli/cmd.c uses SESSION_ASLEEP, defined in session/session.h" \
	"names: src/cli/cmd.c uses struct session_row, defined in session/session.h" \
	"names: src/cli/cmd.c uses SESSION_GONE, defined in session/session.h" \
	"names: src/cli/cmd.c uses session_alive, defined in session/session.h" \
	"names: src/cli/cmd.c uses SVC_ASLEEP, which brings SESSION_ASLEEP, defined in session/session.h"; do
	case $out in
	*"$want"*) r=0 ;;
	*) r=1 ;;
	esac
	ok $r "it names the planted use: ${want#names: src/cli/cmd.c uses }" ||
		diag "$out"
done
is "$(printf '%s\n' "$out" | grep -c .)" 5 \
	"... and nothing else (no include, no call, not svc/'s own names, not a member)" ||
	diag "$out"

# The real tree.
if [ -d src/cli ] && ls src/cli/*.o >/dev/null 2>&1; then
	out=$(python3 "$srcdir/tests/layers.py" "$srcdir" .)
	rc=$?
	is "$rc" 0 "sbxcat keeps its layers" || printf '%s\n' "$out" | sed 's/^/# /'
else
	bail_out "no objects under src/cli: build first"
fi
done_testing

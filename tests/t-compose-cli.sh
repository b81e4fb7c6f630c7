#!/bin/sh
# t-compose-cli.sh - `sbxcat compose` as a platform admin runs it: the shipped
# files are current (the drift guard of `make check`), a catalogue edit is
# caught by --check naming every file, a regeneration touches one line,
# and every bad input of issue 3 fails with its exact message and leaves
# the file byte-identical.  The round trip through the real docker-compose
# is t-compose-config.sh.
set -u
. "$srcdir/tests/tap.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
T=$(mktemp -d)
cleanup() {
	for m in "$T/rodir" "$T/rofile.yml"; do
		mountpoint -q "$m" 2>/dev/null && umount "$m"
	done
	chmod -R u+w "$T"
	rm -rf "$T"
}
trap cleanup EXIT
unset SBXCAT_CATALOG
FILES="compose/docker-compose.yml compose/docker-compose-dev.yml compose/docker-compose-prod.yml"
stale_msg() { echo "$1: SANDBOXD_RUNTIMES is stale; run 'sbxcat compose'"; }

# The drift guard: forgetting to regenerate after a catalogue edit fails
# `make check` right here.
(cd "$srcdir" && "$S" compose --check) >"$T/out" 2>"$T/err"
rc=$?
is "$rc" 0 "the shipped compose files are current (if not: run 'sbxcat compose' and commit)" ||
	sed 's/^/# /' "$T/err"
is "$(cat "$T/out")" "compose/docker-compose.yml: up to date
compose/docker-compose-dev.yml: up to date
compose/docker-compose-prod.yml: up to date" "--check says every default file is up to date"

# A working copy of the tree's catalogue and compose files.
cd "$T" || exit 1
mkdir catalog compose orig
install -m 644 "$srcdir/catalog/sandbox_runtimes.json" catalog/
for f in $FILES; do install -m 644 "$srcdir/$f" compose/; install -m 644 "$srcdir/$f" orig/; done
same_as_orig() { # all three files byte-identical to the originals
	for f in $FILES; do cmp -s "$f" "orig/$(basename "$f")" || return 1; done
}

"$S" compose >out 2>err; ok $? "compose on current files exits 0"
is "$(cat out)" "compose/docker-compose.yml: up to date
compose/docker-compose-dev.yml: up to date
compose/docker-compose-prod.yml: up to date" "a current file is reported up to date"
same_as_orig; ok $? "and not one byte changes"

# Drift: edit the catalogue, forget to regenerate.
jq '.[0].description = "Edited by an operator, $HOME and all"' \
	"$srcdir/catalog/sandbox_runtimes.json" >catalog/sandbox_runtimes.json
"$S" compose --check >out 2>err; is $? 1 "--check after a catalogue edit exits 1"
is "$(cat err)" "$(stale_msg compose/docker-compose.yml)
$(stale_msg compose/docker-compose-dev.yml)
$(stale_msg compose/docker-compose-prod.yml)" "--check names every stale file and the command that fixes it"
same_as_orig; ok $? "--check writes nothing"
"$S" compose --check --json >out 2>/dev/null
is "$(jq -c '[.[] | [.path, .state, .changed]]' out)" \
	'[["compose/docker-compose.yml","stale",false],["compose/docker-compose-dev.yml","stale",false],["compose/docker-compose-prod.yml","stale",false]]' \
	"--check --json"

# Regenerate: one line changes in each file, modes stay, nothing is left.
chmod 600 compose/docker-compose-dev.yml
"$S" compose >out 2>err; ok $? "compose after the edit exits 0"
is "$(cat out)" "compose/docker-compose.yml: SANDBOXD_RUNTIMES written
compose/docker-compose-dev.yml: SANDBOXD_RUNTIMES written
compose/docker-compose-prod.yml: SANDBOXD_RUNTIMES written" "compose reports what it wrote"
for f in $FILES; do
	b=$(basename "$f")
	is "$(diff "orig/$b" "$f" | grep -c '^[<>]')" 2 "$b: exactly one line changed"
	is "$(diff "orig/$b" "$f" | sed -n 's/^> *\(SANDBOXD_RUNTIMES\): .*/\1/p')" SANDBOXD_RUNTIMES "$b: the changed line is the value"
done
is "$(stat -c %a compose/docker-compose-dev.yml)" 600 "the file's mode is kept"
is "$(ls -A compose | wc -l)" 3 "no temporary file is left behind"
grep -q 'Edited by an operator, \$\$HOME and all' compose/docker-compose.yml
ok $? "the new text is in, with \$ written \$\$"
"$S" compose --check >out 2>err; ok $? "--check passes after regenerating"
cp compose/*.yml orig/
touch -d 2001-01-01 compose/docker-compose.yml
"$S" compose >out; is "$(head -n 1 out)" "compose/docker-compose.yml: up to date" "a second run changes nothing"
is "$(stat -c %Y compose/docker-compose.yml)" "$(date -d 2001-01-01 +%s)" "an up-to-date file is not rewritten"
"$S" compose --json >out
is "$(jq -c '[.[] | [.state, .changed]]' out)" '[["up to date",false],["up to date",false],["up to date",false]]' "compose --json"

# --print: the value alone.
"$S" -C "$srcdir/tests/compose/catalog.json" compose --print >out
cmp -s out "$srcdir/tests/compose/value.json"; ok $? "--print prints the value (service network none)"
"$S" -C "$srcdir/tests/compose/catalog.json" compose --print "$srcdir/tests/compose/bridge.out.yml" >out
cmp -s out "$srcdir/tests/compose/value-bridge.json"; ok $? "--print FILE follows that file's SANDBOXD_NETWORK_MODE"
"$S" compose --check --print >out 2>err; is $? 2 "--check with --print is a usage error"
"$S" compose --frobnicate >out 2>err; is $? 2 "an unknown option is a usage error"

# Bad input: each with its exact message, the file untouched.
mkdir bad
for src in "$srcdir"/tests/compose/bad-*.yml; do
	name=$(basename "$src" .yml)
	install -m 644 "$src" "bad/$name.yml"
	(cd bad && "$S" -C ../catalog/sandbox_runtimes.json compose "$name.yml") >out 2>err
	rc=$?
	is "$rc $(cat err)" "1 sbxcat: $(cat "$srcdir/tests/compose/$name.err")" "$name: exit 1 and its message"
	cmp -s "$src" "bad/$name.yml"; ok $? "$name: the file is untouched"
	(cd bad && "$S" -C ../catalog/sandbox_runtimes.json compose --check "$name.yml") >out 2>err
	is "$? $(cat err)" "1 sbxcat: $(cat "$srcdir/tests/compose/$name.err")" "$name: --check says the same"
done
is "$(ls -A bad | wc -l)" "$(ls "$srcdir"/tests/compose/bad-*.yml | wc -l)" "no temporary file beside the bad files"

# One bad file among good ones: nothing is written to any of them.
install -m 644 "$srcdir/tests/compose/mapping.in.yml" stale.yml
install -m 644 "$srcdir/tests/compose/bad-block.yml" block.yml
"$S" compose stale.yml block.yml >out 2>err; is $? 1 "a bad file among others exits 1"
is "$(tail -n 1 err)" "sbxcat: 1 of 2 files cannot be updated; nothing was written" "and says nothing was written"
cmp -s stale.yml "$srcdir/tests/compose/mapping.in.yml"; ok $? "the good, stale file is not written either"

# A catalogue that fails check: nothing written to any file.
jq '.[0].mem_limit = "2gb"' "$srcdir/catalog/sandbox_runtimes.json" >bad-catalog.json
"$S" -C bad-catalog.json compose >out 2>err; is $? 1 "an invalid catalogue exits 1"
is "$(tail -n 1 err)" "sbxcat: 'bad-catalog.json' has 1 error; nothing was done" "an invalid catalogue: message"
same_as_orig; ok $? "an invalid catalogue writes nothing to any file"
"$S" -C bad-catalog.json compose stale.yml >out 2>err
cmp -s stale.yml "$srcdir/tests/compose/mapping.in.yml"; ok $? "nor to a named file"

# Files that cannot be read or written: exit 3, original intact.
"$S" compose nope.yml >out 2>err; is $? 3 "a missing file exits 3"
is "$(cat err)" "sbxcat: cannot open 'nope.yml': No such file or directory" "missing file: message"
mkdir empty && (cd empty && "$S" -C ../catalog/sandbox_runtimes.json compose --check) >out 2>err
is "$(head -n 1 err)" "sbxcat: cannot open 'compose/docker-compose.yml': No such file or directory" "the default files are looked for in the current directory"
install -m 644 "$srcdir/tests/compose/mapping.in.yml" ro.yml; chmod 444 ro.yml
"$S" compose ro.yml >out 2>err; is $? 3 "a read-only file exits 3 (even for root)"
is "$(cat err)
$(cmp ro.yml "$srcdir/tests/compose/mapping.in.yml" && echo intact)" "sbxcat: cannot write 'ro.yml': the file is read-only (mode 444)
intact" "read-only file: message, original intact"
"$S" compose --check ro.yml >out 2>err; is $? 1 "--check reads a read-only file (stale: 1)"
mkdir rodir; install -m 644 "$srcdir/tests/compose/mapping.in.yml" rodir/c.yml
install -m 644 "$srcdir/tests/compose/mapping.in.yml" rofile.yml
if [ "$(id -u)" -eq 0 ]; then
	# root ignores permission bits: only a read-only mount stops it.
	mount --bind rodir rodir 2>/dev/null && mount -o remount,bind,ro rodir 2>/dev/null
	mount --bind rofile.yml rofile.yml 2>/dev/null && mount -o remount,bind,ro rofile.yml 2>/dev/null
	dir_err="sbxcat: cannot write 'rodir/c.yml': Read-only file system"
else
	chmod 555 rodir
	dir_err="sbxcat: cannot create a temporary file beside 'rodir/c.yml': Permission denied"
fi
if touch rodir/c.yml 2>/dev/null && [ -w rodir ] && [ "$(id -u)" -eq 0 ]; then
	skip "cannot make a read-only directory here (mount --bind failed)" "a read-only directory"
	skip "cannot make a read-only directory here (mount --bind failed)" "read-only directory: original intact"
else
	"$S" compose rodir/c.yml >out 2>err; is "$? $(head -n 1 err)" "3 $dir_err" "a read-only directory: exit 3 and message"
	cmp -s rodir/c.yml "$srcdir/tests/compose/mapping.in.yml"; ok $? "read-only directory: original intact"
fi
if [ "$(id -u)" -ne 0 ] || ! mountpoint -q rofile.yml; then
	skip "needs root and a bind mount" "a file on a read-only mount"
else
	"$S" compose rofile.yml >out 2>err
	is "$? $(head -n 1 err)" "3 sbxcat: cannot write 'rofile.yml': Read-only file system" "a file on a read-only mount: exit 3 and message"
	cmp -s rofile.yml "$srcdir/tests/compose/mapping.in.yml"; ok $? "read-only mount: original intact"
fi

# A symbolic link is written through and stays a link.
install -m 644 "$srcdir/tests/compose/list.in.yml" target.yml; ln -s target.yml link.yml
"$S" -C "$srcdir/tests/compose/catalog.json" compose link.yml >out 2>err; ok $? "compose through a symbolic link"
[ -L link.yml ]; ok $? "the link is still a link"
cmp -s target.yml "$srcdir/tests/compose/list.out.yml"; ok $? "its target holds the golden bytes"

done_testing

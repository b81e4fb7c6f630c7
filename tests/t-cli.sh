#!/bin/sh
# t-cli.sh - the commands as a user runs them: output, exit statuses,
# --json, and generate's atomic, idempotent writes.
set -u
. "$srcdir/tests/tap.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
T=$(mktemp -d)
trap 'chmod -R u+w "$T"; rm -rf "$T"' EXIT
cd "$T" || exit 1
install -m 644 "$srcdir/tests/golden/everyfield.json" cat.json
unset SBXCAT_CATALOG SANDBOXD_SANDBOX_UID

# Exit statuses: 0 valid, 1 invalid, 2 usage, 3 unreadable.
"$S" check cat.json >out 2>err; ok $? "check of a valid catalogue exits 0"
is "$(cat out)" "cat.json: 2 runtimes, valid" "check says valid on stdout"
"$S" check "$srcdir/tests/cases/many-errors.json" >out 2>err
is $? 1 "check of an invalid catalogue exits 1"
is "$(grep -c 'many-errors.json:[0-9]*:[0-9]*: ' err)" 7 "every error is reported, not only the first"
is "$(tail -n 1 err)" "$srcdir/tests/cases/many-errors.json: 7 errors" "check ends with the count"
"$S" check nonexistent.json >out 2>err; is $? 3 "an unreadable catalogue exits 3"
is "$(cat err)" "sbxcat: cannot open 'nonexistent.json': No such file or directory" "unreadable: message"
"$S" check a b >out 2>err; is $? 2 "too many arguments exits 2"
"$S" frobnicate >out 2>err; is $? 2 "an unknown command exits 2"
is "$(head -n 1 err)" "sbxcat: 'frobnicate' is not an sbxcat command" "unknown command: message"
"$S" --sandbox-uid abc -C cat.json tag full >out 2>err; is $? 2 "a bad --sandbox-uid exits 2"
SANDBOXD_SANDBOX_UID=-5 "$S" -C cat.json tag full >out 2>err; is $? 2 "a bad SANDBOXD_SANDBOX_UID exits 2"
is "$(cat err)" "sbxcat: SANDBOXD_SANDBOX_UID: invalid sandbox uid '-5': expected a number from 0 (no account) to 2147483647" "bad uid: message"

SANDBOXD_SANDBOX_UID=-5 "$S" check cat.json >out 2>err; ok $? "a bad SANDBOXD_SANDBOX_UID does not stop check, which needs no uid"
SANDBOXD_SANDBOX_UID=-5 "$S" -C cat.json --sandbox-uid 7 tag full >out 2>err; ok $? "--sandbox-uid overrides a bad SANDBOXD_SANDBOX_UID"

# --json
"$S" -C cat.json tag --json full >out; is "$(jq -r '.alias + " " + .tag' out)" "full $("$S" -C cat.json tag full)" "tag --json"
"$S" -C cat.json dockerfile --json full >out; is "$(jq -j .dockerfile out | sha256sum)" "$("$S" -C cat.json dockerfile full | sha256sum)" "dockerfile --json carries the same bytes"
"$S" check --json "$srcdir/tests/cases/unknown-field.json" >out 2>err; is $? 1 "check --json of an invalid catalogue exits 1"
is "$(jq -c '.[0] | [.line, .column, .entry, .alias, .message]' out)" \
	'[6,5,1,"tools","'"'"'mem_limt'"'"': unknown field; did you mean '"'"'mem_limit'"'"'?"]' \
	"check --json gives line, column, entry and message"
"$S" check --json cat.json >out; is "$(jq -c . out)" "[]" "check --json of a valid catalogue is []"
"$S" -C cat.json list --json >out; is "$(jq -c '[.[] | [.alias, .kind, .default]]' out)" '[["full","built",true],["ready","image",false]]' "list --json"

# list
"$S" -C cat.json list >out; ok $? "list exits 0"
is "$(awk 'NR==2 {print $1, $2, $3}' out)" "full * built" "list marks the default runtime"
is "$(awk 'NR==3 {print $2, $3, $5, $6, $7}' out)" "image busybox:1.36 0 1g yes" "list shows an image entry"

# SBXCAT_CATALOG and -C
SBXCAT_CATALOG=$T/cat.json "$S" list >out; ok $? "SBXCAT_CATALOG picks the catalogue"
SBXCAT_CATALOG=/nope "$S" -C cat.json list >out; ok $? "-C wins over SBXCAT_CATALOG"

# tag = 12 hex of SHA-256 over exactly the bytes dockerfile prints.
"$S" -C cat.json dockerfile full >df
is "$("$S" -C cat.json tag full)" "sbxcat/full:$(sha256sum df | cut -c1-12)" "tag is the SHA-256 of the Dockerfile bytes"
is "$(SANDBOXD_SANDBOX_UID=4242 "$S" -C cat.json dockerfile full | grep '^USER [0-9]')" "USER 4242" "SANDBOXD_SANDBOX_UID sets the account"
is "$(SANDBOXD_SANDBOX_UID= "$S" -C cat.json dockerfile full | grep -c 'useradd')" 0 "an empty SANDBOXD_SANDBOX_UID disables the account"
is "$("$S" -C cat.json --sandbox-uid 0 dockerfile full | grep -c '^USER [0-9]')" 0 "--sandbox-uid 0 disables the account"
"$S" -C cat.json dockerfile ready >out 2>err; is $? 1 "dockerfile of an image entry exits 1"
is "$(cat err)" "sbxcat: runtime 'ready' uses the ready-made image 'busybox:1.36'; it has no Dockerfile" "image entry: message"
is "$("$S" -C cat.json tag ready)" "busybox:1.36" "tag of an image entry is the image"
"$S" -C cat.json tag nope >out 2>err; is $? 1 "tag of an unknown alias exits 1"

# briefing
"$S" -C cat.json briefing >out; is "$(head -n 1 out)" "## Sandbox runtime: full" "briefing defaults to the first runtime"
"$S" -C cat.json briefing nope >out 2>err; is $? 1 "briefing of an unknown alias exits 1"
is "$(wc -c <out)" 0 "briefing of an unknown alias prints nothing on stdout"
"$S" -C "$srcdir/tests/cases/mem-2gb.json" briefing >out 2>err; is $? 1 "an invalid catalogue fails every command"
is "$(tail -n 1 err)" "sbxcat: '$srcdir/tests/cases/mem-2gb.json' has 1 error; nothing was done" "invalid catalogue: message"

# generate: atomic, idempotent, removes nothing else.
mkdir -p out.d/full out.d/other; echo keep >out.d/other/file; echo keep >out.d/full/notes
"$S" -C cat.json generate -o out.d >gen; ok $? "generate exits 0"
cmp -s out.d/full/Dockerfile df; ok $? "generate writes the same bytes as dockerfile"
is "$(cat gen)" "out.d/full/Dockerfile: written ($("$S" -C cat.json tag full))" "generate reports what it wrote"
[ ! -e out.d/ready ]; ok $? "generate writes nothing for an image entry"
[ "$(cat out.d/other/file)" = keep ] && [ "$(cat out.d/full/notes)" = keep ]; ok $? "generate removes nothing else in DIR"
is "$(stat -c %a out.d/full/Dockerfile)" 644 "a new Dockerfile is mode 644"
touch -d '2001-01-01' out.d/full/Dockerfile
"$S" -C cat.json generate -o out.d >gen
is "$(cat gen)" "out.d/full/Dockerfile: up to date ($("$S" -C cat.json tag full))" "a second generate changes nothing"
is "$(stat -c %Y out.d/full/Dockerfile)" "$(date -d 2001-01-01 +%s)" "an unchanged Dockerfile is not rewritten"
echo stale >out.d/full/Dockerfile; chmod 600 out.d/full/Dockerfile
"$S" -C cat.json generate -o out.d >/dev/null
cmp -s out.d/full/Dockerfile df; ok $? "a stale Dockerfile is replaced"
is "$(stat -c %a out.d/full/Dockerfile)" 600 "replacing keeps the file's mode"
is "$(ls -A out.d/full)" "Dockerfile
notes" "no temporary file is left behind"
"$S" -C cat.json generate --json -o out.d >out; is "$(jq -c '[.[] | [.alias, .changed]]' out)" '[["full",false]]' "generate --json"
if [ "$(id -u)" -eq 0 ]; then
	# root ignores directory permissions; a read-only bind would need mount.
	mkdir ro; mount --bind ro ro 2>/dev/null && mount -o remount,bind,ro ro 2>/dev/null
	if touch ro/x 2>/dev/null; then
		umount ro 2>/dev/null; skip "cannot make a read-only directory here" "generate into a read-only directory fails cleanly"
		skip "cannot make a read-only directory here" "read-only: message"
	else
		"$S" -C cat.json generate -o ro >out 2>err; is $? 3 "generate into a read-only directory exits 3"
		is "$(cat err)" "sbxcat: cannot create directory 'ro/full': Read-only file system" "read-only: message"
		umount ro
	fi
else
	mkdir ro; chmod 555 ro
	"$S" -C cat.json generate -o ro >out 2>err; is $? 3 "generate into a read-only directory exits 3"
	is "$(cat err)" "sbxcat: cannot create directory 'ro/full': Permission denied" "read-only: message"
fi

# Determinism across processes: the bytes and file modes sbxcat writes do
# not depend on the umask, the time zone or the locale of the caller.
det() { # det DIR UMASK TZ LC_ALL: generate into DIR, print a listing
	( umask "$2"; export TZ="$3" LC_ALL="$4"
	  "$S" -C cat.json generate -o "$1" >/dev/null &&
	  "$S" -C cat.json dockerfile full >"$1.dockerfile" &&
	  "$S" -C cat.json tag full >"$1.tag" &&
	  "$S" -C cat.json briefing >"$1.briefing" ) || return 1
	find "$1" -type f -exec stat -c '%a %n' {} + | sed "s|^\([0-7]*\) $1|\1 |" | sort
}
la=$(det detA 022 UTC C) && lb=$(det detB 077 Asia/Kathmandu C.UTF-8) &&
	lc=$(det detC 002 America/St_Johns tr_TR.UTF-8)
ok $? "generate, dockerfile, tag and briefing run under three umasks, zones and locales"
is "$la" "644 /full/Dockerfile" "generate writes one file, mode 644"
is "$lb" "$la" "generate writes the same files with the same modes under umask 077, another zone and locale"
is "$lc" "$la" "... and under umask 002, a third zone and a locale that is not installed"
same=0
for f in detB detC; do
	diff -r detA $f >/dev/null && cmp -s detA.dockerfile $f.dockerfile &&
		cmp -s detA.tag $f.tag && cmp -s detA.briefing $f.briefing || same=1
done
ok $same "the bytes are the same in every process"

# The shipped catalogue and the README's main job.
"$S" check "$srcdir/catalog/sandbox_runtimes.json" >out; ok $? "the shipped catalogue is valid"
done_testing

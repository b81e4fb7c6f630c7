#!/bin/sh
# t-fs.sh - sbxcat fs against the real engine (issue 9, "Tests (a real
# engine)"; docs/workspace.md, CLI.md of issue 9): every verb, its exit
# status, messages and --json shape; every way out of the workspace (..,
# absolute paths, symlinks the sandbox plants to /, /etc, /etc/passwd,
# chains, /proc/self/root, another mount, device files, FIFOs, sockets);
# write then exec cat; a 9 MiB read refused before a byte of it is read
# (strace); the race: the sandbox swaps a path between a file and symlinks
# out while fs reads, writes, edits, lists and stats it thousands of
# times; listings bounded at 2,000 entries and 6 levels; a catastrophic
# regex; what listings hide; last_activity; usage errors; a path fuzzer;
# sbxcat's own peak RSS and CPU bounded by the limits (edit, read --json,
# grep --json, read --offset of 20 GB of hole; issue 16 items 1 and 5) and
# the audit's normalised, end-kept targets (item 6).
#
# Everything runs under a deployment id and a workspace root of this run's
# own (tests/sessionbed.sh); its containers are removed at the end.  Host
# /etc and / are only ever read: whatever a broken fs might write through
# a symlink goes to sentinel files of this test ($T/sent), never to a
# system file.  A device node and a socket are made host-side (the sandbox
# cannot mknod) in this test's own workspace.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
sb_init fstest tf
# A tmpfs mounted inside the workspace (the other-mount case) goes first.
trap 'umount "$WS/mnt" 2>/dev/null; sb_cleanup' EXIT
WS=/nonexistent
unset SANDBOXD_MAX_READ_BYTES SANDBOXD_MAX_WRITE_BYTES SANDBOXD_SPILL_DIR \
	SANDBOXD_IDLE_TIMEOUT SANDBOXD_CONTAINER_TTL SANDBOXD_WORKSPACE_TTL

open_s acme run fs-main
K=$key
is "$rc" 0 "session open (the session fs works on)"
open_s acme run fs-tree
KT=$key
is "$rc" 0 "session open (a second one, for the 3,000-file tree)"
if [ -z "$K" ] || [ -z "$KT" ]; then
	echo "Bail out! session open failed: $(err)"
	exit 1
fi
WS=$(ws "$K")
WT=$(ws "$KT")
ex() { sbx exec "$@" </dev/null; }
# f ARGS...: sbxcat fs $K ARGS (stdin /dev/null unless redirected).
f() { sbx fs "$K" "$@"; }
# e1: the one message line fs printed (stderr, without hint: lines).
e1() { err | head -n 1; }
# jqt EXPR: is EXPR true of the JSON in $T/out (an empty output is not)?
jqt() { [ -s "$T/out" ] && jq -e "$1" "$T/out" >/dev/null 2>&1; }
nlines() { err | wc -l | tr -d ' '; }
# hint: the "hint:" lines (err leaves them out), where the command line
# names the flag a module's message does not.
hint() { grep -a '^hint: ' "$T/err"; }
TAB=$(printf '\t')

# -- write.
printf 'hello\nworld\n' >"$T/in.txt"
f write a.txt <"$T/in.txt"
is "$rc:$(out)" "0:wrote 12 bytes to 'a.txt'" "write: exit 0, 'wrote 12 bytes to 'a.txt''"
is "$(cat "$WS/a.txt")" "$(cat "$T/in.txt")" "write: the file holds what stdin gave"
is "$(stat -c %u:%g "$WS/a.txt")" 10001:10001 "write: the file is the sandbox uid's (10001:10001)"
is "$(stat -c %a "$WS/a.txt")" 644 "write: a new file is 0644"
f write a.txt --json <"$T/in.txt"
is "$rc:$(jq -c . "$T/out")" '0:{"path":"a.txt","bytes":12,"created":false}' "write --json over an existing file: created false"
f write n1/n2/n3/deep.txt --json <"$T/in.txt"
is "$rc:$(jq -c .created "$T/out")" "0:true" "write --json of a new file: created true"
is "$(stat -c %u:%g "$WS/n1" "$WS/n1/n2" "$WS/n1/n2/n3" | sort -u)" 10001:10001 "write: the parents it made are 10001's"
is "$(stat -c %a "$WS/n1/n2")" 755 "write: ... and 0755"
ex "$K" -c 'chmod 600 a.txt'
f write a.txt <"$T/in.txt"
is "$(stat -c %a "$WS/a.txt")" 600 "write over a 0600 file keeps 0600"
# Random binary data, NULs included, then exec cat gives back the same bytes.
{ head -c 300000 /dev/urandom; printf '\0\0\0end\0'; } >"$T/bin"
f write bin.dat <"$T/bin"
is "$rc:$(out)" "0:wrote 300007 bytes to 'bin.dat'" "write of 300,007 random bytes with NULs"
ex "$K" -- cat bin.dat
cmp -s "$T/bin" "$T/out"; ok $? "write then exec cat: the same bytes"
is "$(stat -c %u:%g "$WS/bin.dat")" 10001:10001 "... owned by 10001:10001 on the host"
ex "$K" -c 'echo more >>bin.dat'
is "$rc" 0 "... and the sandbox can append to it"
printf '' >"$T/empty"
f write empty.txt <"$T/empty"
is "$rc:$(out):$(stat -c %s "$WS/empty.txt")" "0:wrote 0 bytes to 'empty.txt':0" "write of nothing: an empty file"
head -c 2000 /dev/urandom >"$T/2k"
SANDBOXD_MAX_WRITE_BYTES=1024 f write a.txt <"$T/2k"
is "$rc" 1 "write over SANDBOXD_MAX_WRITE_BYTES (1024): exit 1"
is "$(cat "$WS/a.txt")" "$(cat "$T/in.txt")" "... and the file is unchanged"
is "$(find "$WS" -maxdepth 1 -name '.sbxcat-*' | wc -l | tr -d ' ')" 0 "... and no temporary is left behind"
mkdir "$WS/half" && chown 10001:10001 "$WS/half"
SANDBOXD_MAX_WRITE_BYTES=1024 f write half/new1/new2/big.bin <"$T/2k"
is "$rc:$(find "$WS/half" | wc -l | tr -d ' ')" "1:1" \
	"write over the limit into new directories: refused, and the directories it made are gone (the one that was there stays)"
f write n1 <"$T/in.txt"
is "$rc" 1 "write over a directory: exit 1"
e1 | grep -q "'n1'"; ok $? "... naming the path ($(e1))"
f write "" <"$T/in.txt"
[ "$rc" = 1 ] || [ "$rc" = 2 ]; ok $? "write of the workspace itself (''): refused ($rc)"

diag "at read: $(($(date +%s) - sb_t0)) s"
# -- read.
seq 1 2500 | sed 's/^/line /' >"$T/l2500"
cp "$T/l2500" "$WS/l2500.txt"
f read l2500.txt
{ head -n 2000 "$T/l2500" | cat -n; echo "... 500 more lines; read on with --offset 2001"; } >"$T/want"
cmp -s "$T/want" "$T/out"; ok $? "read: 2,000 lines numbered as cat -n, then '... 500 more lines; read on with --offset 2001'"
is "$rc" 0 "... exit 0"
f read l2500.txt --offset 2001
{ tail -n 500 "$T/l2500" | cat -n | awk -F '\t' '{ printf "%6d\t%s\n", $1 + 2000, $2 }'; } >"$T/want"
cmp -s "$T/want" "$T/out"; ok $? "read --offset 2001: lines 2001-2500, numbered from 2001, no 'more' line"
f read l2500.txt --offset 10 --limit 3
printf '    10\tline 10\n    11\tline 11\n    12\tline 12\n... 2488 more lines; read on with --offset 13\n' >"$T/want"
cmp -s "$T/want" "$T/out"; ok $? "read --offset 10 --limit 3: three lines and '2488 more lines; read on with --offset 13'"
seq 1 12 >"$WS/twelve"
f read twelve --offset 20
is "$rc:$(e1)" "1:sbxcat: 'twelve' has 12 lines; line 20 is past the end" "read past the end: exit 1 and the message"
f read twelve --offset 13
is "$rc" 1 "read --offset lines+1: past the end"
f read twelve --offset 12
is "$rc:$(out)" "0:    12${TAB}12" "read --offset = the last line: that line"
f read empty.txt
is "$rc:$(out)" "0:" "read of an empty file: nothing, exit 0"
f read empty.txt --json
is "$(jq -c '[.lines, .more]' "$T/out")" '[[],false]' "read --json of an empty file: lines []"
printf 'one\ntwo' >"$WS/nonl"
f read nonl
is "$(out)" "$(printf '     1\tone\n     2\ttwo')" "read: a last line without a newline is a line"
f read l2500.txt --offset 2499 --json
jqt '.path == "l2500.txt" and .offset == 2499 and (.lines | length) == 2 and .lines[0] == {"n": 2499, "text": "line 2499"} and .lines_left == 0 and .more == false and .cut == false and .size == '"$(stat -c %s "$T/l2500")"
ok $? "read --json: path, offset, lines [{n, text}], lines_left, more, cut, size"
f read l2500.txt --limit 5 --json
jqt '.lines_left == 2495 and .more == true'; ok $? "read --json with lines left: lines_left 2495, more true"
printf 'a\tb\001c\n' >"$WS/ctl"
f read ctl
is "$(out)" "$(printf '     1\ta\tb\001c')" "read to a pipe: raw bytes (control bytes passed as they are)"
f read nosuch
is "$rc" 1 "read of a missing file: exit 1"
e1 | grep -q "'nosuch'"; ok $? "... naming it ($(e1))"
f read n1
is "$rc" 1 "read of a directory: exit 1"
e1 | grep -q "'n1' is a directory"; ok $? "... saying it is a directory ($(e1))"

# -- read-bytes.
f read-bytes bin.dat
{ cat "$T/bin"; echo more; } >"$T/want"
cmp -s "$T/want" "$T/out"; ok $? "read-bytes: the raw bytes, NULs included"
f read-bytes bin.dat --json
jq -r .content_base64 "$T/out" | base64 -d >"$T/dec"
cmp -s "$T/want" "$T/dec"; ok $? "read-bytes --json: content_base64 decodes to the bytes"
is "$(jq -c '[.path, .bytes]' "$T/out")" "[\"bin.dat\",$(stat -c %s "$T/want")]" "read-bytes --json: path and bytes"

# -- edit.
printf 'alpha beta\ngamma beta\nbeta\nx\n' >"$WS/e.txt"
chown 10001:10001 "$WS/e.txt"
chmod 640 "$WS/e.txt"
f edit e.txt --old alpha --new ALPHA
is "$rc:$(out)" "0:replaced 1 occurrence in 'e.txt'" "edit of a unique text: 'replaced 1 occurrence in 'e.txt''"
is "$(head -n 1 "$WS/e.txt")" "ALPHA beta" "... the file changed"
is "$(stat -c '%u:%g %a' "$WS/e.txt")" "10001:10001 640" "... still 10001's and still 0640"
f edit e.txt --old beta --new B
is "$rc:$(e1)" "1:sbxcat: old text matches 3 times in 'e.txt', on lines 1, 2 and 3; give more context to make it unique, or replace every occurrence" \
	"edit of a text found 3 times: exit 1, how many and on which lines"
is "$(hint)" "hint: --all replaces every occurrence" "... and the hint names --all"
f edit e.txt --old nothere --new y
is "$rc:$(e1)" "1:sbxcat: old text not found in 'e.txt'" "edit of an absent text: exit 1, not found"
f edit e.txt --old beta --new B --all
is "$rc:$(out)" "0:replaced 3 occurrences in 'e.txt'" "edit --all: 'replaced 3 occurrences in 'e.txt''"
is "$(tr '\n' '|' <"$WS/e.txt")" "ALPHA B|gamma B|B|x|" "... every one replaced"
f edit e.txt --old gamma --new "" --json
is "$rc:$(jq -c . "$T/out")" '0:{"path":"e.txt","replaced":1,"line":2}' "edit --json, --new empty: {path, replaced, line}"
f edit e.txt --old "" --new y
is "$rc" 2 "edit --old '': usage error, 2"
f edit e.txt --new y
is "$rc" 2 "edit without --old: 2"
seq 1 30 | sed 's/.*/dup/' >"$WS/dup"
f edit dup --old dup --new x
e1 | grep -q "matches 30 times in 'dup', on lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10"; ok $? "edit: at most 10 line numbers ($(e1))"
printf 'aaa\n' >"$WS/ov"
f edit ov --old aa --new b --all
is "$rc:$(cat "$WS/ov")" "0:ba" "edit --all: occurrences do not overlap (aaa, aa -> b: ba)"
f edit nosuch --old a --new b
is "$rc" 1 "edit of a missing file: exit 1"

# -- ls, glob.
mkdir -p "$WS/t/sub/deeper" && touch "$WS/t/f1" "$WS/t/sub/f2" "$WS/t/sub/deeper/f3"
ln -s f1 "$WS/t/lnk"
chown -R -h 10001:10001 "$WS/t"
f ls t
is "$(out | tr '\n' ' ')" "t/f1 t/lnk@ t/sub/ " "ls DIR: its own entries, sorted, '/' for directories, '@' for symlinks"
f ls t -R
is "$(out | tr '\n' ' ')" "t/f1 t/lnk@ t/sub/ t/sub/deeper/ t/sub/f2 t/sub/deeper/f3 " "ls -R: breadth-first, each level sorted"
f ls t/f1
is "$rc:$(out)" "0:t/f1" "ls of a file: that file"
f ls t -R --max-depth 2
is "$(out | tr '\n' ' ')" "t/f1 t/lnk@ t/sub/ t/sub/deeper/ t/sub/f2 listing stopped at depth 2; deeper entries are not shown " "ls -R --max-depth 2: stops and says so"
f ls t -R --json
jqt '.path == "t" and .truncated == false and .why == null and .skipped == [] and (.entries | length) == 6
	and (.entries[0] | keys) == ["mode", "mtime", "path", "size", "type", "upload"]
	and .entries[0].type == "file" and .entries[1].type == "symlink" and .entries[2].type == "dir"
	and .entries[0].mode == "0644" and .entries[0].upload == false'
ok $? "ls --json: path, entries [{path, type, size, mtime, mode, upload}], truncated, why, skipped"
jq -r '.entries[0].mtime' "$T/out" | grep -Eq "$RFC3339_RE"; ok $? "ls --json: mtime in RFC 3339 UTC"
f ls nosuch
is "$rc" 1 "ls of a missing path: exit 1"
mkdir -p "$WS/gl/x/y" && touch "$WS/gl/a.txt" "$WS/gl/x/b.txt" "$WS/gl/x/y/c.txt" "$WS/gl/x/y/c.md" "$WS/gl/.h.txt"
f glob 'gl/**/*.txt'
is "$rc:$(out | sort | tr '\n' ' ')" "0:gl/a.txt gl/x/b.txt gl/x/y/c.txt " "glob 'gl/**/*.txt': ** matches zero or more directories"
f glob 'gl/*.txt'
is "$(out)" "gl/a.txt" "glob 'gl/*.txt': * does not cross '/' and skips hidden files"
f glob 'gl/*.txt' --hidden
is "$(out | sort | tr '\n' ' ')" "gl/.h.txt gl/a.txt " "glob --hidden: hidden files too"
f glob 'gl/**/*.nomatch'
is "$rc:$(out)" "0:" "glob without a match: exit 0, nothing"
f glob 'nosuch/dir/*.txt'
is "$rc:$(out)" "0:" "glob under a directory that does not exist: no match, exit 0"
printf '1\n2\n3\n' >"$WS/gl/three.md"
sbx fs --limit 1 "$K" read gl/three.md
is "$rc:$(out | tail -n 1)" "0:... 2 more lines; read on with --offset 2" "an option with a value before KEY (--limit 1) is the verb's"
f glob 'gl/**/*.nomatch' --json
is "$(jq -c '[.pattern, .matches, .truncated]' "$T/out")" '["gl/**/*.nomatch",[],false]' "glob --json without a match: matches []"
f glob 'gl/x/*' --json
jqt '(.matches | map(.path)) == ["gl/x/b.txt", "gl/x/y"] and .matches[1].type == "dir"'
ok $? "glob --json: matches as ls entries"
f glob '/etc/*'
is "$rc" 1 "glob '/etc/*': a leading / is refused, exit 1"
f glob '../*'
is "$rc" 1 "glob '../*': refused, exit 1"
f glob 'gl/[a'
is "$rc" 2 "glob with an unterminated class: 2"

# -- grep.
mkdir -p "$WS/g/sub" "$WS/g/.hid"
printf 'nothing\nfoo bar\nFOO big\na.c and abc\n' >"$WS/g/a.txt"
printf 'foo in md\n' >"$WS/g/sub/b.md"
printf 'foo hidden\n' >"$WS/g/.hid/h.txt"
printf 'foo dot\n' >"$WS/g/.dot.txt"
printf 'foo\0binary\n' >"$WS/g/bin.dat"
{ printf 'foo'; head -c 3000 /dev/zero | tr '\0' y; echo; } >"$WS/g/long.txt"
f grep foo g
is "$rc:$(out | cut -c 1-20 | sort | tr '\n' '|')" "0:g/a.txt:2:foo bar|g/long.txt:1:fooyyyy|g/sub/b.md:1:foo in |" \
	"grep: path:line:text, hidden files and the binary file left out"
is "$(out | awk -F: '$1 == "g/long.txt" { t = $3; m = sub(/ \[line cut\]$/, "", t); print length(t) ":" m }')" 1000:1 \
	"grep: a long line is cut to 1,000 bytes and marked ' [line cut]'"
err | grep -q 'skipped 1 binary file'; ok $? "grep: the binary file skipped and said so on stderr ($(err | tr '\n' '|'))"
f grep foo g --hidden
is "$(out | cut -d : -f 1 | sort | tr '\n' ' ')" "g/.dot.txt g/.hid/h.txt g/a.txt g/long.txt g/sub/b.md " "grep --hidden: hidden files and directories too"
f grep foo g -i
is "$(out | grep -c '^g/a.txt:')" 2 "grep -i: FOO matches too"
f grep 'a.c' g/a.txt
is "$(out)" "g/a.txt:4:a.c and abc" "grep of a regex (one match per line, a.c matches)"
f grep 'b.c' g/a.txt -F
is "$rc:$(out)" "0:" "grep -F: b.c is literal (no match), exit 0"
f grep 'a.c' g/a.txt -F
is "$(out)" "g/a.txt:4:a.c and abc" "grep -F a.c: the literal line"
f grep foo g --include '*.md'
is "$(out)" "g/sub/b.md:1:foo in md" "grep --include '*.md': only .md files"
seq 1 50 | sed 's/^/m /' >"$WS/g/many.txt"
f grep '^m' g/many.txt --max-count 7
is "$(out | wc -l | tr -d ' ')" 7 "grep --max-count 7: 7 matches"
err | grep -q 'stopped at 7 matches; not every match is shown'; ok $? "... and says it stopped ($(err | tr '\n' '|'))"
f grep '^m' g/many.txt --max-count 7 --json
jqt '.truncated == true and .why == "matches" and (.matches | length) == 7'
ok $? "grep --json at --max-count: truncated true, why matches"
f grep foo g --json
jqt '.pattern == "foo" and .binary_skipped == 1 and .too_big_skipped == 0 and .limited == 0
	and .truncated == false and .why == null and .skipped == [] and (.files_searched | type) == "number"
	and (.matches[0] | keys) == ["cut", "line", "path", "text"]
	and ([.matches[] | select(.path == "g/long.txt")][0].cut == true)'
ok $? "grep --json: pattern, matches [{path, line, text, cut}], files_searched, binary_skipped, too_big_skipped, limited, truncated, why, skipped"
f grep nomatchatall g
is "$rc:$(out)" "0:" "grep without a match: exit 0 (unlike grep(1)), nothing"
f grep '(' g
is "$rc" 2 "grep of a bad pattern: 2"
err | grep -q 'offset'; ok $? "... with PCRE2's message and offset ($(e1))"

# -- stat.
f stat a.txt
{ grep -qx 'path: a.txt' "$T/out" && grep -qx 'type: file' "$T/out" && grep -qx 'size: 12' "$T/out" &&
	grep -qx 'mode: 0600' "$T/out" && grep -qx 'uid: 10001' "$T/out" && grep -qx 'gid: 10001' "$T/out" &&
	grep -qx 'links: 1' "$T/out" && grep -Eqx 'mtime: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}(\.[0-9]+)?Z' "$T/out" &&
	! grep -q '^target:' "$T/out"; }
ok $? "stat: path, type, size, mode, uid, gid, mtime, links ($(out | tr '\n' '|'))"
f stat t/lnk
grep -qx 'type: symlink' "$T/out" && grep -qx 'target: f1' "$T/out"; ok $? "stat of a symlink: the link itself, and its target"
f stat n1 --json
jqt '.path == "n1" and .type == "dir" and .mode == "0755" and .uid == 10001 and .gid == 10001 and (.size | type) == "number" and (.links | type) == "number"'
ok $? "stat --json: the same keys"
f stat nosuch
is "$rc" 1 "stat of a missing path: exit 1"

# -- rm.
f rm empty.txt
is "$rc:$(out)" "0:removed 'empty.txt'" "rm of a file: 'removed 'empty.txt''"
[ ! -e "$WS/empty.txt" ]; ok $? "... it is gone"
mkdir "$WS/emptydir"
f rm emptydir
is "$rc:$(out)" "0:removed 'emptydir'" "rm of an empty directory"
f rm n1
is "$rc" 1 "rm of a non-empty directory without -r: exit 1"
e1 | grep -q "'n1' is a directory that is not empty; only a recursive remove removes it"; ok $? "... and says only a recursive remove does ($(e1))"
is "$(hint)" "hint: -r removes it and all it holds" "... and the hint names -r"
[ -e "$WS/n1/n2/n3/deep.txt" ]; ok $? "... nothing removed"
f rm n1 -r
is "$rc:$(out)" "0:removed 'n1' (4 entries)" "rm -r: 'removed 'n1' (4 entries)'"
f rm t/lnk --json
is "$rc:$(jq -c . "$T/out")" '0:{"path":"t/lnk","removed":1}' "rm --json of a symlink: {path, removed}"
[ -e "$WS/t/f1" ]; ok $? "... the symlink's target stays"
for r in "" "." "./"; do
	f rm "$r" -r
	is "$rc" 1 "rm -r of the workspace itself ('$r'): exit 1"
done
[ -d "$WS/t" ]; ok $? "... nothing removed"
f rm nosuch
is "$rc" 1 "rm of a missing path: exit 1"

diag "at the ways out: $(($(date +%s) - sb_t0)) s"
# -- Ways out.  Symlinks the sandbox plants (ln -s in the container, as
# 10001); a sentinel directory on the host holds what a symlink "to the
# host" points at, for the verbs that change things.
SENT=$T/sent
mkdir -p "$SENT/dir" && echo "sentinel x" >"$SENT/file" && echo keep >"$SENT/dir/sentinel-entry"
sent_sum() { (cd "$SENT" && find . -print | sort && cat file dir/*) | sha256sum; }
sent0=$(sent_sum)
etcsum() { { ls -A /etc; ls -A /; stat -c '%n %Y %s' /etc /etc/passwd /; sha256sum /etc/passwd; } 2>&1 | sha256sum; }
etc0=$(etcsum)
ex "$K" -c "mkdir -p out && cd out && ln -s / lroot && ln -s /etc letc && ln -s /etc/passwd lpasswd &&
	ln -s lpasswd chain1 && ln -s chain1 chain2 && ln -s chain2 chain3 && ln -s /proc/self/root pr &&
	ln -s ../../.. up && ln -s ../../../../../../../../etc/passwd relpasswd && ln -s $SENT/file lsent &&
	ln -s $SENT/dir lsentdir && ln -s ../../../../sent relsent && ln -s /dev/zero devzero && ln -s ../a.txt inside && echo ok"
is "$rc:$(out)" "0:ok" "the sandbox plants symlinks to /, /etc, /etc/passwd, a chain, /proc/self/root, ../../.., the host sentinels"
f read out/inside
is "$rc:$(out | head -n 1)" "0:     1${TAB}hello" "read through a symlink that stays inside: followed"

# refused VERB ARGS...: exit 1, a one-line message naming the path, no
# host content on stdout.
refused() {
	r_verb=$1 r_path=$2 r_name=${r_name:-$2}
	shift 2
	timeout -s KILL 20 "$S" -C "$CAT" fs "$K" "$r_verb" "$r_path" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	r_why="rc $rc, $(e1)"
	if [ "$rc" = 1 ] && [ "$(nlines)" = 1 ] && e1 | grep -qF "'$r_name'" &&
		! grep -q 'root:x:0:0' "$T/out"; then
		ok 0 "$r_verb '$r_path' refused: $(e1)"
	else
		ok 1 "$r_verb '$r_path' refused: exit 1, one message naming '$r_name' ($r_why)"
	fi
	r_name=
}
refused read ../x
is "$(e1)" "sbxcat: '../x' is outside the workspace: '..' is not allowed" "... the message for '..'"
refused read a/../../x
refused read /etc/passwd
is "$(e1)" "sbxcat: '/etc/passwd' is outside the workspace: paths are relative to it" "... the message for an absolute path"
refused read "$WS/a.txt"
for p in out/lpasswd out/chain3 out/letc/passwd out/lroot/etc/passwd out/pr/etc/passwd \
	out/pr/root/etc/passwd out/up/etc/passwd out/relpasswd out/lsent out/devzero; do
	refused read "$p"
done
refused read out/lpasswd
is "$(e1)" "sbxcat: 'out/lpasswd' leads outside the workspace (a symlink out of it, or onto another mount)" "... the message for a symlink out"
for p in out/lpasswd out/chain2 out/lroot/etc/passwd; do refused read-bytes "$p"; done
refused edit out/lsent --old x --new y
refused edit out/relsent/file --old x --new y
refused write out/lsentdir/new
refused write out/relsent/dir/new
refused write "out/lroot${SENT}/dir/new"
refused write out/up/fstest-never
[ ! -e "$ROOT/fstest-never" ]; ok $? "... nothing written through ../../.. into the workspace root's directory"
refused ls out/letc
refused ls out/lroot -R
refused ls out/lsentdir
r_name=out/lroot refused glob 'out/lroot/*'
r_name=out/letc refused grep root out/letc
r_name=out/lpasswd refused grep root out/lpasswd
refused stat out/letc/passwd
refused stat out/pr/etc
refused rm out/lsentdir/sentinel-entry
refused rm "out/lroot${SENT}/file"
refused rm out/relsent/dir -r
f glob 'out/**'
is "$(out | grep -c '^out/l.*/')" 0 "glob 'out/**' lists the symlinks, never what is behind them"
f grep root out --hidden
is "$(out | grep -c 'root:x:0')" 0 "grep over a directory of symlinks out: none followed"
f ls out -R
is "$(out | grep -c '^out/.*@$')" 14 "ls -R lists the 14 symlinks as symlinks, none descended"
f stat out/letc
{ [ "$rc" = 0 ] && grep -qx 'type: symlink' "$T/out" && grep -qx 'target: /etc' "$T/out"; }
ok $? "stat of a symlink out: the link itself (type symlink, target /etc), nothing behind it"
# write and rm of a symlink's own name replace or remove the link, never
# what it points to.
f write out/lsent <"$T/in.txt"
[ "$rc" = 1 ] || { [ "$rc" = 0 ] && [ -f "$WS/out/lsent" ] && [ ! -L "$WS/out/lsent" ]; }
ok $? "write onto a symlink out: refused, or the link replaced by a file in the workspace (rc $rc)"
f rm out/lsentdir -r
[ "$rc" = 1 ] || [ ! -L "$WS/out/lsentdir" ]; ok $? "rm -r of a symlink to a host directory: only the link (rc $rc)"
is "$(sent_sum)" "$sent0" "the host sentinels are unchanged"
is "$(etcsum)" "$etc0" "host /etc and / are unchanged (names, mtimes, /etc/passwd)"

# Another mount inside the workspace (RESOLVE_NO_XDEV).
mkdir "$WS/mnt"
if mount -t tmpfs -o size=1m fstest-mnt "$WS/mnt" 2>/dev/null; then
	echo inmount >"$WS/mnt/f"
	refused read mnt/f
	refused write mnt/g
	[ ! -e "$WS/mnt/g" ]; ok $? "... nothing written on the other mount"
	umount "$WS/mnt"
else
	skip "mount -t tmpfs failed here" "a file on another mount inside the workspace is refused"
fi

# Device files, FIFOs, sockets.
mknod "$WS/zero" c 1 5 && mknod "$WS/blk" b 7 0 && chown 10001:10001 "$WS/zero" "$WS/blk"
ok $? "mknod host-side: a character device (/dev/zero's) and a block device in the workspace"
ex "$K" -c 'mkfifo fifo && ln -s zero zlink && ln -s fifo flink && echo ok'
is "$(out)" ok "the sandbox makes a FIFO and symlinks to it and to the device"
for p in zero blk zlink; do
	refused read "$p"
	e1 | grep -q 'a device file'; ok $? "... '$p' is said to be a device file"
done
refused read-bytes zero
refused edit zero --old a --new b
for p in fifo flink; do
	t0=$(now)
	refused read "$p"
	e1 | grep -q 'FIFO'; ok $? "... '$p' is said to be a FIFO"
	lt "$(elapsed "$t0" "$(now)")" 10; ok $? "... without hanging ($(elapsed "$t0" "$(now)") s)"
done
refused read-bytes fifo
refused edit fifo --old a --new b
t0=$(now)
timeout -s KILL 20 "$S" -C "$CAT" fs "$K" grep zzz . --hidden >"$T/out" 2>"$T/err" </dev/null
rc=$?
is "$rc" 0 "grep over a workspace holding a FIFO and device files: exit 0, no hang ($(elapsed "$t0" "$(now)") s)"
if python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$WS/sock" 2>/dev/null; then
	refused read sock
	e1 | grep -q 'socket'; ok $? "... said to be a socket"
else
	skip "python3 could not make a socket" "a socket is refused"
fi
f ls . --json
is "$(jq -r '[.entries[] | select(.path == "zero" or .path == "fifo" or .path == "blk") | .type] | join(",")' "$T/out")" \
	"other,other,other" "ls --json: devices and FIFOs are 'other', listed, never opened"

diag "at strace: $(($(date +%s) - sb_t0)) s"
# -- strace: a 9 MiB read refused before a byte of it is read; a slice
# of it reads far less than the file.
mkdir "$WS/bigd"
yes 'aaaaaaaaaaaaaaa' | head -c 9437184 >"$WS/bigd/big"
f read bigd/big
is "$rc:$(e1)" "1:sbxcat: 'bigd/big' is 9437184 bytes, over the 8388608-byte read limit; read a slice of its lines or use exec" \
	"read of a 9 MiB file: exit 1 and the message"
f read-bytes bigd/big
is "$rc:$(e1)" "1:sbxcat: 'bigd/big' is 9437184 bytes, over the 8388608-byte read limit; read a slice of its lines or use exec" \
	"read-bytes of a 9 MiB file: the same"
is "$(hint)" "hint: sbxcat fs KEY read PATH --offset LINE --limit N reads a slice" \
	"... and the hint names --offset and --limit"
f edit bigd/big --old a --new b
is "$rc" 1 "edit of a 9 MiB file: refused"
# bytes_read LOG: the bytes the traced reads returned on a descriptor
# that is bigd/big (strace -y names it), and how many calls touched it.
bytes_read() {
	awk '/(read|pread64|readv|preadv|preadv2)\([0-9]+<[^>]*\/bigd\/big>/ {
		n = $NF; if (n + 0 > 0) sum += n; calls++ } END { printf "%d %d", sum, calls }' "$1"
}
mentions() { grep -c '/bigd/big' "$1"; }
# shellcheck disable=SC2086
# LeakSanitizer cannot run under ptrace (make check-sanitize): off there.
STR="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -y -qq -e trace=read,pread64,readv,preadv,preadv2,openat,openat2,open"
if $STR -o "$T/st0" dd if="$WS/bigd/big" of=/dev/null bs=65536 >/dev/null 2>&1 && [ "$(bytes_read "$T/st0" | cut -d ' ' -f 1)" = 9437184 ]; then
	ok 0 "strace works here, and the log parser sees all 9437184 bytes dd reads"
	$STR -o "$T/st1" "$S" -C "$CAT" fs "$K" read bigd/big >"$T/out" 2>"$T/err" </dev/null
	is "$?" 1 "under strace: read of the 9 MiB file still refused"
	[ "$(mentions "$T/st1")" -gt 0 ]; ok $? "... strace saw the file opened ($(mentions "$T/st1") lines)"
	is "$(bytes_read "$T/st1" | cut -d ' ' -f 1)" 0 "... and no read on its descriptor returned a byte ($(bytes_read "$T/st1") bytes, calls)"
	$STR -o "$T/st2" "$S" -C "$CAT" fs "$K" read-bytes bigd/big >"$T/out" 2>"$T/err" </dev/null
	is "$?:$(bytes_read "$T/st2" | cut -d ' ' -f 1)" "1:0" "read-bytes of it: refused, not a byte read"
	$STR -o "$T/st3" "$S" -C "$CAT" fs "$K" read bigd/big --offset 1 --limit 5 >"$T/out" 2>"$T/err" </dev/null
	is "$?:$(head -n 1 "$T/out")" "0:     1${TAB}aaaaaaaaaaaaaaa" "a slice (--offset 1 --limit 5) of the 9 MiB file: exit 0, its lines"
	is "$(tail -n 1 "$T/out")" "... more lines follow; read on with --offset 6" "... then 'more lines follow' (too big to count)"
	sl=$(bytes_read "$T/st3" | cut -d ' ' -f 1)
	{ [ "$sl" -gt 0 ] && [ "$sl" -lt 1048576 ]; }; ok $? "... having read $sl bytes of it (less than 1 MiB)"
	$STR -o "$T/st4" "$S" -C "$CAT" fs "$K" read bigd/big --offset 1000 --limit 3 --json >"$T/out" 2>"$T/err" </dev/null
	jqt '.lines[0].n == 1000 and .lines_left == null and .more == true and .size == 9437184'
	ok $? "a slice --json: lines_left null, more true, size"
	sl=$(bytes_read "$T/st4" | cut -d ' ' -f 1)
	{ [ "$sl" -gt 0 ] && [ "$sl" -lt 1048576 ]; }; ok $? "... having read $sl bytes of it (less than 1 MiB)"
else
	skip "strace cannot trace here (ptrace refused?)" "9 MiB read refused before a byte is read, proven by strace"
fi
f grep aaa bigd
is "$rc:$(out)" "0:" "grep over a directory with a 9 MiB file: the file skipped"
err | grep -q '1 file over the 8388608-byte read limit'; ok $? "... and said so ($(err | tr '\n' '|'))"

# -- A catastrophic regex: (a+)+$ on 50,000 a's then b.
{ head -c 50000 /dev/zero | tr '\0' a; echo b; } >"$WS/cata.txt"
t0=$(now)
timeout -s KILL 30 "$S" -C "$CAT" fs "$K" grep '(a+)+$' cata.txt >"$T/out" 2>"$T/err" </dev/null
rc=$?
t=$(elapsed "$t0" "$(now)")
is "$rc:$(out)" "0:" "grep '(a+)+\$' on 50,000 a's then b: exit 0, no match"
lt "$t" 10; ok $? "... within its limit ($t s, bound 30 s)"
err | grep -q 'the pattern hit its match limit in 1 file'; ok $? "... and says the pattern hit its match limit ($(err | tr '\n' '|'))"
timeout -s KILL 30 "$S" -C "$CAT" fs "$K" grep '(a+)+$' cata.txt --json >"$T/out" 2>"$T/err" </dev/null
is "$(jq -c .limited "$T/out" 2>/dev/null)" 1 "grep --json: limited 1"

diag "at what listings hide: $(($(date +%s) - sb_t0)) s"
# -- What listings hide: skills/, the spill directory, sbxcat's own
# temporaries (always); hidden files for grep and glob; uploads/ marked.
mkdir -p "$WS/h/skills" "$WS/skills" "$WS/large_tool_results" "$WS/altspill" "$WS/uploads" "$WS/.hid"
echo needle-skill >"$WS/skills/s.md"
echo needle-spill >"$WS/large_tool_results/r.txt"
echo needle-alt >"$WS/altspill/r.txt"
echo needle-up >"$WS/uploads/u.txt"
echo needle-hid >"$WS/.hid/h.txt"
echo needle-tmp >"$WS/.sbxcat-a1B2c3"
echo needle-nested >"$WS/h/skills/n.txt"
f ls
{ ! out | grep -q '^skills/$' && ! out | grep -q '^large_tool_results/$' && out | grep -q '^uploads/$' &&
	out | grep -q '^\.hid/$' && out | grep -q '^altspill/$' && ! out | grep -q 'sbxcat-a1B2c3'; }
ok $? "ls: skills/ and large_tool_results/ left out, .hid/ shown (ls shows hidden entries), no sbxcat temporary"
f ls --all
{ out | grep -q '^skills/$' && out | grep -q '^large_tool_results/$' && ! out | grep -q 'sbxcat-a1B2c3'; }
ok $? "ls --all: skills/ and large_tool_results/ shown; sbxcat's temporary still not"
f ls uploads
is "$(out)" "uploads/u.txt${TAB}(uploaded)" "ls uploads: its entries marked '\\t(uploaded)'"
f ls uploads --json
is "$(jq -c '[.entries[0].path, .entries[0].upload]' "$T/out")" '["uploads/u.txt",true]' "ls --json: upload true"
f ls h -R
is "$(out | tr '\n' ' ')" "h/skills/ h/skills/n.txt " "skills/ below the top is an ordinary directory"
f grep needle --max-entries 100000 --max-depth 3
is "$(out | sort | tr '\n' ' ')" "altspill/r.txt:1:needle-alt h/skills/n.txt:1:needle-nested uploads/u.txt:1:needle-up " \
	"grep: skills/, the spill directory, hidden files and sbxcat's temporary left out"
f grep needle --max-entries 100000 --max-depth 3 --all --hidden
is "$(out | cut -d : -f 1 | sort | tr '\n' ' ')" ".hid/h.txt altspill/r.txt h/skills/n.txt large_tool_results/r.txt skills/s.md uploads/u.txt " \
	"grep --all --hidden: all of them but sbxcat's temporary"
SANDBOXD_SPILL_DIR=altspill f grep needle --max-entries 100000 --max-depth 3
is "$(out | cut -d : -f 1 | sort | tr '\n' ' ')" "h/skills/n.txt large_tool_results/r.txt uploads/u.txt " \
	"SANDBOXD_SPILL_DIR=altspill: altspill/ left out, large_tool_results/ is ordinary"
f glob '**/*.txt' --max-entries 100000
{ ! out | grep -q '^skills/\|^large_tool_results/\|^\.hid/' && out | grep -q '^uploads/u.txt'; }
ok $? "glob '**': skills/, the spill directory and hidden ones left out"
rm -rf "$WS/h" "$WS/skills" "$WS/large_tool_results" "$WS/altspill" "$WS/uploads" "$WS/.hid" "$WS/.sbxcat-a1B2c3"

diag "at the race: $(($(date +%s) - sb_t0)) s"
# -- The race.  From inside, one loop swaps, as fast as busybox can:
#   race/p between a file and symlinks to /etc/passwd, /etc, / and
#          /proc/self/root/etc/passwd; fs only reads it (read, read-bytes,
#          ls, stat, grep);
#   race/s between a file and symlinks to /etc, / and the host sentinel
#          file; fs writes and edits it;
#   race/q between a directory and a symlink to the host sentinel
#          directory; fs writes, removes, lists and stats race/q/w.
# Resolved on the host, each symlink would be the host's file, which is
# the attack.  No system file is ever the target of a write, even a
# broken one: s and q point only at system directories (a write through
# them fails on any implementation) and at this test's sentinels.
# Under the sanitizers (make check-sanitize) each call is ten times
# slower: fewer calls, the same race.
if [ -n "${ASAN_OPTIONS:-}" ]; then RACE_N=${SBXCAT_FS_RACE_N:-300}; else RACE_N=${SBXCAT_FS_RACE_N:-1000}; fi
TOKEN=fstest-token-$sfx
printf 'x %s\n' "$TOKEN" >"$T/tok"
mkdir -p "$WS/race/q" && chown -R 10001:10001 "$WS/race"
: >"$T/marker"
sleep 1
timeout -s KILL 300 "$S" -C "$CAT" exec "$K" --timeout 280 -c "cd race || exit 1; n=0
	while [ ! -e ../stop ]; do
		echo x >p.f; mv -Tf p.f p; ln -sf /etc/passwd p.l; mv -Tf p.l p
		echo x >s.f; mv -Tf s.f s; ln -sf $SENT/file s.l; mv -Tf s.l s
		rm -rf q; mkdir q
		echo x >p.f; mv -Tf p.f p; ln -sf /etc p.l; mv -Tf p.l p
		ln -sf /etc s.l; mv -Tf s.l s
		rm -rf q; ln -sfn $SENT/dir q
		ln -sf / p.l; mv -Tf p.l p; ln -sf / s.l; mv -Tf s.l s
		rm -f p; echo x >p; rm -f s; echo x >s; rm -f q; mkdir q
		ln -sfn /etc/passwd p; rm -f s; ln -s $SENT/file s
		ln -sf /proc/self/root/etc/passwd p.l; mv -Tf p.l p; rm -rf q; ln -sfn $SENT/dir q
		n=\$((n + 1))
	done
	echo \$n" >"$T/swap.out" 2>&1 </dev/null &
sw_pid=$!
i=0
while [ ! -e "$WS/race/s" ] && [ ! -L "$WS/race/s" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
# hammer LOG N ARGS...: fs ARGS, N times, each call's output and status in
# LOG ("rc=N" after each), the whole loop bounded (a hang fails, not waits).
hammer() {
	h_log=$1
	shift
	timeout -s KILL 240 sh -c 'n=$1 S=$2 C=$3 K=$4 IN=$5; shift 5; i=0
		while [ $i -lt "$n" ]; do "$S" -C "$C" fs "$K" "$@" <"$IN"; echo "rc=$?"; i=$((i + 1)); done' \
		hammer "$@" >"$h_log" 2>&1
}
t0=$(now)
hammer "$T/r.read" "$RACE_N" "$S" "$CAT" "$K" /dev/null read race/p &
p1=$!
{ hammer "$T/r.write" $((RACE_N / 2)) "$S" "$CAT" "$K" "$T/tok" write race/s
  hammer "$T/r.writeq" $((RACE_N / 2)) "$S" "$CAT" "$K" "$T/tok" write race/q/w; } &
p2=$!
{ hammer "$T/r.edit" $((RACE_N * 3 / 10)) "$S" "$CAT" "$K" /dev/null edit race/s --old x --new y
  hammer "$T/r.ls" $((RACE_N * 3 / 20)) "$S" "$CAT" "$K" /dev/null ls race/p
  hammer "$T/r.lsq" $((RACE_N * 3 / 20)) "$S" "$CAT" "$K" /dev/null ls race/q
  hammer "$T/r.stat" $((RACE_N / 10)) "$S" "$CAT" "$K" /dev/null stat race/p
  hammer "$T/r.statq" $((RACE_N / 10)) "$S" "$CAT" "$K" /dev/null stat race/q/w
  hammer "$T/r.rb" $((RACE_N / 10)) "$S" "$CAT" "$K" /dev/null read-bytes race/p
  hammer "$T/r.grep" $((RACE_N / 10)) "$S" "$CAT" "$K" /dev/null grep root race/p
  hammer "$T/r.rm" $((RACE_N / 10)) "$S" "$CAT" "$K" /dev/null rm race/q/w; } &
p3=$!
wait $p1 $p2 $p3
touch "$WS/stop"
wait "$sw_pid"
swaps=$(tail -n 1 "$T/swap.out")
diag "race: $(elapsed "$t0" "$(now)") s, $(cat "$T"/r.* | grep -c '^rc=') fs calls; the sandbox swapped $swaps times"
[ "$swaps" -gt 10 ] 2>/dev/null; ok $? "race: the sandbox's loop ran and swapped ($(head -c 200 "$T/swap.out"))"
cat "$T"/r.* >"$T/r.all"
is "$(grep '^rc=' "$T/r.all" | grep -vc '^rc=[01]$')" 0 "race: every call exited 0 or 1"
is "$(grep -c '^rc=' "$T/r.read"):$(cat "$T/r.write" "$T/r.writeq" | grep -c '^rc=')" "$RACE_N:$((RACE_N / 2 * 2))" \
	"race: $RACE_N reads and $((RACE_N / 2 * 2)) writes ran"
is "$(grep -c 'root:x:0:0' "$T/r.all")" 0 "race: no output holds a line of an /etc/passwd"
grep '^race/[pq]/' "$T/r.all" | grep -v -e '^race/q/w$' -e '^race/q/dir@$' | sort | uniq -c | head -n 5 | while read -r l; do diag "ls listed: $l"; done
is "$(grep '^race/[pq]/' "$T/r.all" | grep -vc -e '^race/q/w$' -e '^race/q/dir@$')" 0 "race: ls never listed what race/p or race/q pointed to (race/q/w and the link race/q/dir are the sandbox's own, when q is a directory)"
is "$(grep -c 'sentinel' "$T/r.all")" 0 "race: nothing of the host sentinels was shown"
is "$(grep -c '^type: dir' "$T/r.stat")" 0 "race: stat never described a directory behind race/p"
n0=$(grep -c '^rc=0$' "$T/r.read") n1=$(grep -c '^rc=1$' "$T/r.read")
diag "race reads: $n0 read the file, $n1 refused"
{ [ "$n0" -gt 0 ] && [ "$n1" -gt 0 ]; }; ok $? "race: reads saw both outcomes ($n0 read the sandbox's file, $n1 refused): the race was run"
is "$(grep -v '^rc=' "$T/r.read" | grep -v "^     1${TAB}x\$" | grep -v "^sbxcat: 'race/p' " | sort -u | head -n 5)" "" \
	"race: read printed only the sandbox's file ('x') or a refusal naming race/p"
n0=$(cat "$T/r.write" "$T/r.writeq" | grep -c '^rc=0$')
n1=$(cat "$T/r.write" "$T/r.writeq" | grep -c '^rc=1$')
diag "race writes: $n0 written, $n1 refused; edits: $(grep -c '^rc=0$' "$T/r.edit") done; rm: $(grep -c '^rc=0$' "$T/r.rm") done"
{ [ "$n0" -gt 0 ] && [ "$n1" -gt 0 ]; }; ok $? "race: writes saw both outcomes ($n0 written, $n1 refused)"
grep -q "^wrote [0-9]* bytes to 'race/s'$" "$T/r.write"; ok $? "race: the writes that were done said so"
is "$(sent_sum)" "$sent0" "race: the host sentinel file and directory are unchanged"
is "$(etcsum)" "$etc0" "race: host /etc and / are unchanged (names, mtimes, /etc/passwd)"
is "$(find /etc / -xdev -maxdepth 1 -newer "$T/marker" -type f -exec grep -l "$TOKEN" {} + 2>/dev/null)" "" \
	"race: no file newer than the race in /etc or / holds the written token"
is "$({ grep -rl "$TOKEN" "$SENT"; find /root -maxdepth 1 -newer "$T/marker" -type f -exec grep -l "$TOKEN" {} +; } 2>/dev/null | head -n 3)" "" \
	"race: the token is in neither the sentinels nor new files of /root"

diag "at the tree: $(($(date +%s) - sb_t0)) s"
# -- Bounds: a tree of 3,000 files 8 levels deep, in the second session:
# 550 files at each of the first five levels, 83 or 84 at the last three.
(
	cd "$WT" || exit 1
	d=tree
	for lv in 1 2 3 4 5 6 7 8; do
		mkdir -p "$d" || exit 1
		if [ $lv -le 5 ]; then n=550; elif [ $lv -le 7 ]; then n=83; else n=84; fi
		(cd "$d" && seq -f "f%g.txt" 1 $n | xargs touch) || exit 1
		d=$d/d$lv
	done
	chown -R 10001:10001 tree
) || { echo "Bail out! the 3,000-file tree could not be made"; exit 1; }
is "$(find "$WT/tree" -type f | wc -l | tr -d ' ')" 3000 "a tree of 3,000 files 8 levels deep"
ft() { sbx fs "$KT" "$@"; }
ft ls -R
is "$rc:$(out | tail -n 1)" "0:listing stopped at 2,000 entries; not every file is shown" "ls -R of it: stops and says 'listing stopped at 2,000 entries; not every file is shown'"
is "$(($(out | wc -l) - 1))" 2000 "... after 2,000 entries"
is "$(out | grep -c '^tree/d1/d2/f')":"$(out | grep -c '^tree/d1/d2/d3/d4/.')" 550:0 "... breadth-first: all 550 files of level 4 shown, nothing of level 6"
ft ls -R --json
jqt '.truncated == true and .why == "entries" and (.entries | length) <= 2000 and (.entries | length) > 1500'
ok $? "ls -R --json: truncated true, why entries, at most 2,000 entries ($(jq '.entries | length' "$T/out" 2>/dev/null))"
ft glob '**'
is "$rc:$(out | tail -n 1)" "0:listing stopped at 2,000 entries; not every file is shown" "glob '**': stops at 2,000 entries and says so"
ft glob '**' --json
jqt '.truncated == true and .why == "entries" and (.matches | length) <= 2000'
ok $? "glob '**' --json: truncated true, why entries"
ft ls -R --max-entries 100000
is "$(out | tail -n 1)" "listing stopped at depth 6; deeper entries are not shown" "ls -R with room for every entry: stops at depth 6 and says so"
is "$(out | grep -v '^listing' | awk -F / '{ sub(/[\/@]$/, ""); if (NF > m) m = NF } END { print m }')" 6 "... no path deeper than 6 levels"
ft ls -R --max-entries 100000 --json
is "$(jq -c '[.truncated, .why]' "$T/out")" '[true,"depth"]' "... --json: truncated true, why depth"
ft ls -R --max-entries 100000 --max-depth 20 --json
is "$(jq -c '[.truncated, (.entries | length)]' "$T/out")" '[false,3008]' "--max-depth 20 --max-entries 100000: all 3,008 entries (3,000 files, 8 directories), not truncated"
ft glob '**/f7.txt' --max-depth 20 --max-entries 100000
is "$(out | wc -l | tr -d ' ')" 8 "glob '**/f7.txt' finds the one at each of the 8 levels"
ft grep zzz --max-count 5
err | grep -q 'listing stopped at 2,000 entries'; ok $? "grep over the tree: the walk's bound said on stderr ($(err | tr '\n' '|'))"
ft grep zzz --json
jqt '.truncated == true and .why == "entries"'; ok $? "grep --json over the tree: truncated, why entries"

diag "at last_activity: $(($(date +%s) - sb_t0)) s"
# -- last_activity: every verb, refused ones too, stamps it.  The record's
# stamp is set back to 2001 host-side, then each verb must bring it to now.
REC=$ROOT/$K/session.json
backdate() {
	jq -c '.last_activity = 1000000000' "$REC" >"$REC.t" && chmod 600 "$REC.t" && mv "$REC.t" "$REC"
}
stamped() { # DESCRIPTION
	s_now=$(date +%s)
	s_la=$(jq -r .last_activity "$REC")
	[ "$s_la" -ge $((s_now - 5)) ] 2>/dev/null; ok $? "$1 stamps last_activity (record: $s_la)"
}
set -f
for v in "read a.txt" "read-bytes a.txt" "edit a.txt --old hello --new hullo" "ls" "glob *.txt" "grep hello" \
	"stat a.txt" "rm bin.dat" "read ../x" "read nosuch"; do
	backdate
	# shellcheck disable=SC2086
	f $v
	stamped "fs $v (rc $rc)"
done
set +f
backdate
f write w.txt <"$T/in.txt"
stamped "fs write"
backdate
sbx session show "$K" --json
t1=$(jq -r .last_activity "$T/out")
f stat a.txt
sbx session show "$K" --json
{ [ "$t1" != "$(jq -r .last_activity "$T/out")" ] && jq -r .last_activity "$T/out" | grep -Eq "$RFC3339_RE" &&
	! jq -r .last_activity "$T/out" | grep -q '^2001'; }
ok $? "session show --json sees the stamp move ($t1 -> $(jq -r .last_activity "$T/out"))"

# -- Usage, missing keys, tenants.
sbx fs
is "$rc" 2 "fs without a key: 2"
sbx fs "$K"
is "$rc" 2 "fs without a verb: 2"
sbx fs "$K" frobnicate x
is "$rc" 2 "fs with an unknown verb: 2"
FS_VERBS="write, read, read-bytes, edit, ls, glob, grep, stat, rm"
is "$(e1)" "sbxcat: 'frobnicate' is not an fs verb ($FS_VERBS)" "... naming the verbs"
sbx fs "$K" rdae a.txt
is "$rc:$(e1)" "2:sbxcat: 'rdae' is not an fs verb ($FS_VERBS); did you mean 'read'?" \
	"a mistyped verb: 2, and the did-you-mean a command gets"
sbx fs "$K" --json gerp x
is "$rc:$(e1)" "2:sbxcat: 'gerp' is not an fs verb ($FS_VERBS); did you mean 'grep'?" "... after an option too"
sbx fs "$K"
is "$(e1)" "sbxcat: which operation? VERB is missing ($FS_VERBS)" "fs without a verb: the verbs named"
sbx fs "$K" read a.txt --all
is "$rc:$(e1)" "2:sbxcat: 'read' does not take --all" "an option the verb does not take: 2, naming both"
sbx fs "$K" ls -i
is "$rc:$(e1)" "2:sbxcat: 'ls' does not take -i" "... a short one too"
sbx fs --offset 2 "$K" stat a.txt
is "$rc:$(e1)" "2:sbxcat: 'stat' does not take --offset" "... given before KEY"
sbx fs "$K" --help
hv=0
for v in write read read-bytes edit ls glob grep stat rm; do
	out | grep -q "^  $v " || hv=1
done
ok "$hv" "fs --help lists every verb with its usage"
for bad in "read" "read a.txt --offset abc" "read a.txt --offset 0" "read a.txt --limit -1" "read a.txt --bogus" \
	"edit a.txt --old x" "ls --max-depth abc" "ls --max-entries -5" "grep" "grep x --max-count abc" \
	"grep x --timeout abc" "glob" "stat" "rm" "read a.txt b.txt"; do
	# shellcheck disable=SC2086
	f $bad
	is "$rc" 2 "fs $bad: usage error, 2 ($(e1))"
done
sbx fs xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa read a.txt
is "$rc:$(e1)" "1:sbxcat: no session 'xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa'" "an unknown key: 1, no session"
sbx fs "$K" read a.txt --tenant someone-else
is "$rc:$(e1):$(out)" "1:sbxcat: no session '$K':" "another tenant's key (--tenant): exactly like an unknown key, nothing shown"
SBXCAT_TENANT=someone-else sbx fs "$K" read a.txt
is "$rc:$(e1)" "1:sbxcat: no session '$K'" "another tenant's key (SBXCAT_TENANT): the same"
sbx fs "$K" read a.txt --tenant acme
is "$rc" 0 "the owner's tenant: exit 0"
SANDBOXD_MAX_READ_BYTES=lots f read a.txt
is "$rc" 2 "SANDBOXD_MAX_READ_BYTES=lots: 2"
e1 | grep -q SANDBOXD_MAX_READ_BYTES; ok $? "... naming the variable ($(e1))"

diag "at the fuzzer: $(($(date +%s) - sb_t0)) s"
# -- A fuzzer: random path strings through read and stat.  Never exit 0
# for a path that is absolute or has a '..' component, never anything but
# 0, 1 or 2, always one message line when not 0, never host content.
mkdir -p "$WS/a" && echo inside >"$WS/a/f.txt" && echo inside >"$WS/f.txt"
ln -s .. "$WS/a/a" && ln -s ../.. "$WS/a/up" && ln -s / "$WS/lroot" && ln -s /etc "$WS/letc"
ln -s /etc/passwd "$WS/lpasswd" && ln -s /proc/self/root "$WS/pr"
FUZZ_N=${SBXCAT_FS_FUZZ_N:-120}
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
seed=${SBXCAT_FS_FUZZ_SEED:-$seed}
diag "fuzzer seed $seed (SBXCAT_FS_FUZZ_SEED=$seed to repeat)"
awk -v n="$FUZZ_N" -v seed="$seed" 'BEGIN {
	srand(seed)
	split("/|.|..|a|f.txt|lroot|letc|lpasswd|pr|etc|passwd|%%|%%s%%n|\\t|\\n|\\001|\\033[1m|\\377|\\303\\251|\\\\| |*|//|up|-|--|L|a/a|\\177", t, "|")
	nt = 0; for (k in t) nt++
	for (i = 0; i < n; i++) {
		s = (rand() < 0.15) ? "/" : ""
		m = 1 + int(rand() * 8)
		for (j = 0; j < m; j++) {
			k = 1 + int(rand() * nt)
			w = (t[k] == "L") ? sprintf("%0" (200 + int(rand() * 200)) "d", 0) : t[k]
			s = s w (rand() < 0.7 ? "/" : "")
		}
		if (rand() < 0.02) s = s sprintf("%05000d", 0)
		print s
	}
}' >"$T/fuzz"
fz_bad=0 fz_n=0 fz_zero=0
while IFS= read -r fz_fmt; do
	# shellcheck disable=SC2059
	fz_p=$(printf "x${fz_fmt}x")
	fz_p=${fz_p#x}
	fz_p=${fz_p%x}
	for fz_v in read stat; do
		timeout -s KILL 20 "$S" -C "$CAT" fs "$K" "$fz_v" "$fz_p" >"$T/out" 2>"$T/err" </dev/null
		rc=$?
		fz_n=$((fz_n + 1))
		fz_why=""
		case $rc in
		0) fz_zero=$((fz_zero + 1))
		   case "$fz_p" in /*) fz_why="exit 0 for an absolute path" ;; esac
		   case "/$fz_p/" in */../*) fz_why="exit 0 for a path with '..'" ;; esac
		   grep -q 'root:x:0:0' "$T/out" && fz_why="host /etc/passwd content" ;;
		1) [ "$(nlines)" = 1 ] || fz_why="$(nlines) message lines"
		   e1 | grep -q '^sbxcat: ' || fz_why="a message not starting 'sbxcat: '" ;;
		2) # a path that starts with '-' is an option to getopt: a
		   # usage error, then the usage line
		   e1 | grep -q '^sbxcat: ' || fz_why="a message not starting 'sbxcat: '" ;;
		*) fz_why="exit $rc" ;;
		esac
		if [ -n "$fz_why" ]; then
			fz_bad=$((fz_bad + 1))
			[ $fz_bad -le 5 ] && diag "fuzz: fs $fz_v '$(printf '%s' "$fz_fmt" | head -c 200)': $fz_why: $(err | head -n 3 | head -c 300)"
		fi
	done
done <"$T/fuzz"
is "$fz_bad" 0 "fuzzer: $fz_n calls of read and stat on random paths ($fz_zero exit 0): never 0 outside, never a crash, one message line"

# -- sbxcat's own memory, time and bytes are bounded by the limits, whatever
# the file and the arguments (issue 16 items 1 and 5; docs/workspace.md,
# "Budgets").  Peak RSS and CPU seconds as GNU time counts them (%M, %U,
# %S), never wall-clock time: the machine may be loaded.
if [ -x /usr/bin/time ]; then
	# tm ARGS...: f ARGS under GNU time, stdout to /dev/null (read --json
	# of a million lines is tens of megabytes of output); the peak RSS
	# in KiB in $kib, CPU seconds (user + system) in $cpu.
	tm() {
		/usr/bin/time -f '%M %U %S' -o "$T/time" \
			timeout -s KILL 120 "$S" -C "$CAT" fs "$K" "$@" >/dev/null 2>"$T/err"
		rc=$?
		kib=$(tail -n 1 "$T/time" | cut -d' ' -f1)
		cpu=$(tail -n 1 "$T/time" | awk '{ printf "%d", $2 + $3 }')
	}
	# rss_le BOUND DESC: the peak RSS in $kib is at most BOUND KiB; under
	# the sanitizers (make check-sanitize) it is not sbxcat's to bound.
	rss_le() {
		if [ -n "${ASAN_OPTIONS:-}" ]; then
			skip "AddressSanitizer's shadow memory and quarantine count in RSS" "$2"
		else
			ok "$([ "$kib" -le "$1" ] && echo 0 || echo 1)" "$2"
		fi
	}
	# row: the newest audit row (the spool of this test), as op|target|ok|detail.
	row() { tail -n 1 "$T/spool/audit.jsonl" | jq -r '[.op, .target, (.ok|tostring), .detail] | join("|")'; }
	mib=1048576
	printf 'tiny\n' >"$WS/tiny.txt"
	tm stat tiny.txt
	base=$kib
	diag "a trivial fs run (stat): $base KiB peak RSS"
	# 1 MiB of 'a'; --old a --new of 1,000 bytes, no --all: 1,048,576
	# matches, a 1 GB result that today's main built only to refuse it.
	head -c $mib /dev/zero | tr '\0' a >"$T/a1m"
	cp "$T/a1m" "$WS/a1m"
	new1k=$(head -c 1000 /dev/zero | tr '\0' b)
	tm edit a1m --old a --new "$new1k"
	is "$rc" 1 "edit of a 1 MiB file of 'a', --old a, --new of 1,000 bytes, no --all: refused"
	e1 | grep -q "matches 1048576 times in 'a1m'"; ok $? "... not unique: counted exactly ($(e1 | head -c 120))"
	# bound: the base, the file (1 MiB) twice, and 8 MiB of slack
	rss_le $((base + 10 * 1024)) \
		"... in at most 10 MiB over a trivial run's RSS ($kib KiB, base $base KiB)"
	is "$(row)" "edit|a1m|false|refused: old text not unique" "... and its audit row is written"
	# 8 MiB (the read limit) of 'a', --all: an 8 GB result, refused before
	# it is built; today's main died of out-of-memory with no row.
	head -c $((8 * mib)) /dev/zero | tr '\0' a >"$WS/a8m"
	tm edit a8m --old a --new "$new1k" --all
	is "$rc" 1 "edit --all of 8 MiB of 'a' into an 8 GB result: refused"
	is "$(e1)" "sbxcat: 'a8m' would be 8388608000 bytes after the edit, over the 67108864-byte write limit" \
		"... saying how big the result would be"
	rss_le $((base + 3 * 8 * 1024)) \
		"... in at most 3 read limits (24 MiB) over the base ($kib KiB)"
	is "$(row)" "edit|a8m|false|refused: over the write limit" "... and its audit row is written"
	is "$(cmp -s "$WS/a8m" "$T/a1m" ; stat -c %s "$WS/a8m")" "$((8 * mib))" "... and the file is unchanged"
	# A real --all edit of the same file: file + result, both within limits.
	tm edit a8m --old aaaa --new b --all
	is "$rc:$(stat -c %s "$WS/a8m")" "0:$((2 * mib))" "edit --all aaaa -> b of 8 MiB: done, 2 MiB"
	rss_le $((base + 3 * 8 * 1024)) \
		"... in at most 3 read limits over the base ($kib KiB)"
	# read --json of 2 MiB of newlines, --limit 100,000,000: 2,097,152
	# lines; today's main held a jansson object per line (1 GB here).
	head -c $((2 * mib)) /dev/zero | tr '\0' '\n' >"$WS/nl2m"
	SANDBOXD_MAX_READ_BYTES=$((4 * mib)) tm read nl2m --json --limit 100000000
	is "$rc" 0 "read --json --limit 100000000 of 2 MiB of newlines: exit 0"
	rss_le $((base + 3 * 4 * 1024)) \
		"... in at most 3 read limits (4 MiB each) over the base ($kib KiB)"
	SANDBOXD_MAX_READ_BYTES=$((4 * mib)) f read nl2m --json --limit 100000000
	is "$rc:$(jq -c '[(.lines | length), .lines[0], .lines[-1], .lines_left, .more]' "$T/out")" \
		'0:[2097152,{"n":1,"text":""},{"n":2097152,"text":""},0,false]' \
		"... and its output is one JSON document with every line"
	# grep --json --max-count 100000000 over 1,048,576 matching lines.
	head -c $((2 * mib)) /dev/zero | tr '\0' a | sed 's/a/a\n/g' | head -c $((2 * mib)) >"$WS/g2m"
	tm grep a g2m -F --json --max-count 100000000
	is "$rc" 0 "grep --json --max-count 100000000 of 1,048,576 matching lines: exit 0"
	rss_le $((base + 3 * 8 * 1024)) \
		"... in at most 3 read limits over the base ($kib KiB)"
	f grep a g2m -F --json --max-count 100000000
	is "$rc:$(jq -c '[(.matches | length), .matches[-1].line, .files_searched, .truncated]' "$T/out")" \
		"0:[1048576,1048576,1,false]" "... one JSON document with every match"
	# JSON written as it is made is byte for byte what a whole document
	# printed: jansson's JSON_INDENT(2) of a small read, ls and grep.
	printf 'x\n"y"\n' >"$WS/two"
	f read two --json
	printf '%s\n' '{' '  "path": "two",' '  "offset": 1,' '  "lines": [' '    {' \
		'      "n": 1,' '      "text": "x"' '    },' '    {' '      "n": 2,' \
		'      "text": "\"y\""' '    }' '  ],' '  "lines_left": 0,' '  "more": false,' \
		'  "cut": false,' '  "size": 6' '}' >"$T/want"
	cmp -s "$T/out" "$T/want"; ok $? "read --json: the bytes of an indented document, as before"
	mkdir -p "$WS/emptydir"
	f ls emptydir --json
	printf '%s\n' '{' '  "path": "emptydir",' '  "entries": [],' '  "truncated": false,' \
		'  "why": null,' '  "skipped": []' '}' >"$T/want"
	cmp -s "$T/out" "$T/want"; ok $? "ls --json of an empty directory: '\"entries\": []', as before"
	f grep zzz-nowhere two --json
	jqt '.matches == [] and .files_searched == 1'; ok $? "grep --json with no match: one document, matches []"

	# -- read --offset within its budgets (item 5).  20 GB of hole: the
	# 52 s of a core that today's main spent reading zeros.
	truncate -s 20G "$WS/hole20g"
	tm read hole20g --offset 2 --limit 1
	is "$rc:$(e1)" "1:sbxcat: 'hole20g' has 1 line; line 2 is past the end" \
		"read --offset 2 of a 20 GB sparse file: its one line (all hole) counted, past the end"
	ok "$([ "$cpu" -lt 5 ] && echo 0 || echo 1)" "... in under 5 s of CPU, a quarter of the 20 s budget (${cpu} s)"
	truncate -s 20G "$WS/tail20g"
	printf 'a\nb\n' | dd of="$WS/tail20g" bs=1 seek=$((20 << 30)) conv=notrunc status=none
	tm read tail20g --offset 2 --limit 1
	is "$rc:$cpu" "0:0" "read --offset 2 of 20 GB of hole then two short lines: exit 0, under a second of CPU"
	f read tail20g --offset 2 --limit 1
	is "$(out)" "$(printf '     2\tb')" "... line 2 is 'b'"
	is "$(row)" "read|tail20g|true|" "... its audit row"
	# Dense data past the bytes budget (64 read limits: 4 MiB at 64 KiB).
	head -c $((5 * mib)) /dev/zero | tr '\0' a >"$WS/dense5m"
	SANDBOXD_MAX_READ_BYTES=65536 tm read dense5m --offset 2
	is "$rc:$(e1)" "1:sbxcat: 'dense5m' line 2 is deeper than a read reaches: after its budget of 4194304 bytes read (64 times the read limit) it was on line 1, at byte 4194304; read that part with exec (sed -n)" \
		"read --offset of a dense file past its bytes budget: refused, saying where"
	is "$(row)" "read|dense5m|false|refused: offset beyond the read budget" "... and its audit row is written"
	SANDBOXD_MAX_READ_BYTES=65536 f read dense5m --offset 1 --limit 1
	is "$rc:$(tail -n 1 "$T/out")" "0:... output stopped at the 65536-byte read limit; read on with --offset 2" \
		"... while its first line is shown, cut at the read limit"
	rm -f "$WS/hole20g" "$WS/tail20g" "$WS/dense5m" "$WS/a1m" "$WS/a8m" "$WS/nl2m" "$WS/g2m"
else
	skip "GNU time (/usr/bin/time, package time) is missing" "peak RSS and CPU of fs verbs"
fi
# -- The audit's target is the path the operation used, normalised, and
# a cut keeps its end (issue 16 item 6; docs/audit.md, "Targets").
row6() { tail -n 1 "$T/spool/audit.jsonl" | jq -r .target; }
printf 'TOKEN=1\n' >"$WS/secrets.env"
dots=$(printf './%.0s' $(seq 300))
f read "${dots}secrets.env"
is "$rc:$(row6)" "0:secrets.env" "read of 300 './' then secrets.env: the row's target is 'secrets.env'"
f stat ".//./secrets.env"
is "$(row6)" "secrets.env" "stat .//./secrets.env: target 'secrets.env'"
f ls "./"
is "$(row6)" "." "ls ./: target '.'"
f read "${dots}../secrets.env"
is "$rc:$(row6)" "1:../secrets.env" "a refused '..' path: normalised all the same, the '..' kept"
d1=$(head -c 200 /dev/zero | tr '\0' d) d2=$(head -c 200 /dev/zero | tr '\0' e)
long=$(head -c 240 /dev/zero | tr '\0' n)-last.env
mkdir -p "$WS/$d1/$d2" && printf 'x\n' >"$WS/$d1/$d2/$long"
f read "$d1/$d2/$long"
t6=$(row6)
is "$rc:${#t6}" "0:512" "a path of $((200 + 1 + 200 + 1 + ${#long})) characters: its target is cut to 512"
case $t6 in "[cut] "*"/$long") ok 0 "... marked '[cut] ' in front, its end (the last component) kept" ;;
*) ok 1 "... marked '[cut] ' in front, its end (the last component) kept"; diag "target: $t6" ;; esac
# exec's command line shares the cut: its last arguments are kept.
words=$(printf 'word%.0s ' $(seq 150))
sbx exec "$K" -- echo $words tail-marker </dev/null
t6=$(row6)
case $t6 in "[cut] "*" tail-marker") ok 0 "exec of a ${#words}-character command: the target keeps its end (${#t6} characters)" ;;
*) ok 1 "exec of a long command: the target keeps its end"; diag "target: $t6" ;; esac
# audit ls --search finds it, from the database.
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
if pgbed_start; then
	DB6=t_fs_$$
	if URL6=$(pgbed_newdb "$DB6"); then
		# a spool of its own: the rows above are not replayed into it
		SBXCAT_SPOOL_DIR=$T/spool6
		SBXCAT_DATABASE_URL=$URL6 sbx audit migrate
		SBXCAT_DATABASE_URL=$URL6 sbx fs "$K" read "${dots}secrets.env" </dev/null
		SBXCAT_DATABASE_URL=$URL6 sbx fs "$K" read "$d1/$d2/$long" </dev/null
		SBXCAT_DATABASE_URL=$URL6 sbx audit ls --search secrets.env --json
		is "$rc:$(jq -rs '[.[] | select(.op) | .target] | join(",")' "$T/out" 2>/dev/null || out)" "0:secrets.env" \
			"audit ls --search secrets.env (the database): finds the read of 300 './' then secrets.env"
		SBXCAT_DATABASE_URL=$URL6 sbx audit ls --search "$long" --json
		is "$rc:$(jq -rs '[.[] | select(.op)] | length' "$T/out" 2>/dev/null || out)" "0:1" \
			"audit ls --search of the long path's last component: found"
		pgbed_dropdb "$DB6"
		SBXCAT_SPOOL_DIR=$T/spool
	else
		skip "the PostgreSQL test-bed cannot make a database" "audit ls --search secrets.env"
		skip "the PostgreSQL test-bed cannot make a database" "audit ls --search of a long last component"
	fi
else
	skip "no PostgreSQL test-bed" "audit ls --search secrets.env"
	skip "no PostgreSQL test-bed" "audit ls --search of a long last component"
fi

# -- Last: another mount cleaned up, nothing of ours left in /etc.
is "$(etcsum)" "$etc0" "at the end: host /etc and / unchanged"
sb_done

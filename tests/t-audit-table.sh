#!/bin/sh
# t-audit-table.sh - the auditor's table (issue 29): `audit ls` in a real
# pseudo-terminal of 100 columns (tests/ptyrun.py) against the PostgreSQL
# test-bed: AGENT, RUN and a short DETAIL; every line fits, the target cut
# in the middle (start and end kept), the other columns whole; COLUMNS;
# --columns and -o wide; failed rows red on a terminal only, NO_COLOR,
# TERM=dumb and --color honoured; the pager on a terminal ($SBXCAT_PAGER,
# $PAGER, less -FRX with LESS=FRX), not with --no-pager nor off a terminal,
# a pager that quits early ending sbxcat quietly with status 0, a missing
# one falling back to the terminal; the notice of rows waiting in the
# spool after an outage; `session ls`'s header off a terminal; the prewarm
# display plain on TERM=dumb.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
srcdir=$(cd "$srcdir" && pwd) # the test works in a directory of its own
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
PTY="$srcdir/tests/ptyrun.py"
command -v python3 >/dev/null || skip_all "no python3 for the pseudo-terminal (tests/ptyrun.py)"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_table_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
T=$(mktemp -d) || exit 1
trap 'pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE PGSERVICEFILE \
	SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT SBXCAT_TENANT NO_COLOR COLUMNS \
	PAGER SBXCAT_PAGER LESS LC_ALL LC_CTYPE SBXCAT_CATALOG
SBXCAT_DATABASE_URL=$URL SBXCAT_SPOOL_DIR=$T/spool SANDBOXD_WORKSPACE_ROOT=$T/root
TERM=xterm LANG=C.UTF-8
export SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR SANDBOXD_WORKSPACE_ROOT TERM LANG
mkdir -m 755 "$T/root"
ESC=$(printf '\033')

# pty CMD...: CMD on a 100x50 terminal; what it showed in $T/tty, stderr
# (kept apart) in $T/err, its status in $rc.
pty() {
	python3 "$PTY" 100 50 sh -c '"$@" 2>"$0"' "$T/err" "$@" >"$T/tty"
	rc=$?
}
# widest FILE: the widest line of FILE in terminal columns, colours
# removed, East Asian wide characters counted 2.
widest() {
	python3 - "$1" <<'PY'
import re, sys, unicodedata
text = open(sys.argv[1], encoding="utf-8").read()
text = re.sub("\x1b\\[[0-9;]*m", "", text)
def w(line):
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
print(max((w(l) for l in text.split("\n")), default=0))
PY
}
# has GOT TEXT NAME: GOT holds TEXT (a fixed string).
has() {
	case $1 in
	*"$2"*) ok 0 "$3" ;;
	*) ok 1 "$3"; printf "%s\n" "$1" | sed "s/^/#   got: /" ;;
	esac
}
# line WORD: the line of $T/tty holding WORD.
line() { grep -F -- "$1" "$T/tty" | head -n 1; }

# -- Rows: written to the spool as a recorder writes them (one JSON line,
# its SHA-256 last), then replayed into the database by `audit flush`.
python3 - "$T/spool" <<'PY'
import hashlib, json, os, sys, uuid
d = sys.argv[1]
os.makedirs(d, mode=0o700, exist_ok=True)
key = "xc-acme-run-" + "k" * 26
deep = "src/" + "deep/" * 30 + "END-of-path.txt"
cjk = "\u6587\u4ef6/" * 30 + "\u672b\u5c3e.txt"
rows = [
  # op, target, ok, exit, bytes, detail, agent, run
  ("write", deep, True, None, 120, "created", "agent-8", "run-42"),
  ("read", "../../etc/" + "x" * 80 + "/passwd", False, None, None,
   "refused: outside the workspace", "agent-8", "run-42"),
  ("execute", "python3 -c 'print(1)' " + "--flag " * 20 + "LAST-ARG", False, 2, None,
   "exit 2", "agent-8", "run-42"),
  ("execute", "sleep 1000", False, None, None, "timed out after 5 s, killed 1",
   "agent-9", "run-43"),
  ("write", "gone.txt", True, None, None, "removed", "agent-9", "run-43"),
  ("read", cjk, True, None, 9, "", "agent-9", "run-43"),
  ("read", "no-agent.txt", True, None, 3, "", None, None),
  ("read", "nosuch.txt", False, None, None, "refused: no such session; session asked: xc-zz",
   "agent-9", "run-43"),
]
with open(os.path.join(d, "audit.jsonl"), "w") as f:
    for i, (op, target, ok, ex, nb, detail, agent, run) in enumerate(rows):
        row = {"id": str(uuid.uuid4()), "created_at": "2026-12-05T10:00:%02d.000000Z" % i,
               "tenant": "acme", "session": key, "runtime": "base", "agent": agent,
               "run": run, "op": op, "target": target, "ok": ok, "exit_status": ex,
               "bytes": nb, "results": None, "duration_ms": 7, "detail": detail}
        text = json.dumps(row, separators=(",", ":"), ensure_ascii=False)[:-1]
        s = hashlib.sha256(text.encode()).hexdigest()
        f.write(text + ',"sum":"%s"}\n' % s)
PY
"$S" audit migrate >/dev/null || bail_out "audit migrate failed"
"$S" audit flush >"$T/out" 2>&1
is "$?:$(cat "$T/out")" "0:flushed 8 rows (0 already there), 0 lines kept aside" "eight rows replayed into the database"

# -- The table on a 100-column terminal.
pty "$S" audit ls --no-pager
is "$rc" 0 "audit ls on a terminal: exit 0"
is "$(widest "$T/tty")" 100 "every line fits in 100 columns (the widest is 100: the target took the room left)"
is "$(head -n 1 "$T/tty" | tr -s ' ')" "TIME (UTC) AGENT RUN OP TARGET DETAIL" \
	"the usual columns: time, agent, run, op, target, detail"
is "$(grep -c . "$T/tty")" 9 "a header and 8 rows, none wrapped"
l=$(line "created")
has "$l" "2026-12-05 10:00:00  agent-8  run-42  write    src/deep/d…f-path.txt  created" \
	"the first row: time, agent, run, op whole; the target's start and end, an ellipsis between; the detail whole"
has "$(line "sleep 1000" | tr -s ' ')" "execute sleep 1000 timeout" "a command stopped at its deadline: DETAIL 'timeout'"
has "$(line "LAST-ARG")" "LAST-ARG  exit 2" "a command that failed: the end of its command line, 'exit 2'"
has "$(line passwd)" "refused: outside the workspace" "a refusal: 'refused: outside the workspace'"
has "$(line gone.txt)" "removed" "a removal: 'removed'"
has "$(line "nosuch.txt")" "refused: no such session" "a detail's short form: up to its first '; '"
grep -F "nosuch.txt" "$T/tty" | grep -q "session asked"; ok $((!$?)) "... not the rest"
has "$(line no-agent.txt)" '-        -       read     no-agent.txt' "no agent, no run: '-'"
has "$(line '末尾.txt')" "…" "a target of wide characters cut too (and counted as 2 columns above)"

# Colour: failed rows red on a terminal, the rest not.
grep -F "passwd" "$T/tty" | grep -q "^${ESC}\[31m"; ok $? "a failed row is red on a terminal"
grep -F "gone.txt" "$T/tty" | grep -q "$ESC"; ok $((!$?)) "... a row that did not fail is not coloured"
is "$(grep -c "^${ESC}\[31m" "$T/tty")" 4 "... the four failed rows, and only they"
NO_COLOR=1 pty "$S" audit ls --no-pager
grep -q "$ESC" "$T/tty"; ok $((!$?)) "NO_COLOR=1: no colour"
NO_COLOR='' pty "$S" audit ls --no-pager
grep -q "$ESC" "$T/tty"; ok $? "NO_COLOR empty: colour (no-color.org: only a non-empty value)"
TERM=dumb pty "$S" audit ls --no-pager
grep -q "$ESC" "$T/tty"; ok $((!$?)) "TERM=dumb: no colour"
pty "$S" audit ls --no-pager --color=never
grep -q "$ESC" "$T/tty"; ok $((!$?)) "--color=never: no colour"
"$S" audit ls --color=always >"$T/out" 2>&1
grep -q "^${ESC}\[31m" "$T/out"; ok $? "--color=always: colour off a terminal too"
"$S" audit ls >"$T/out" 2>&1
grep -q "$ESC" "$T/out"; ok $((!$?)) "off a terminal: no colour"
"$S" audit ls --color=sometimes >"$T/out" 2>&1
is "$?:$(head -n 1 "$T/out")" "2:sbxcat: --color 'sometimes': expected auto, always or never" "--color with another word: usage error"

# Off a terminal: a header, tab-separated whole rows.
"$S" audit ls >"$T/out" 2>"$T/err"
TAB=$(printf '\t')
is "$(head -n 1 "$T/out")" "TIME (UTC)${TAB}AGENT${TAB}RUN${TAB}OP${TAB}TARGET${TAB}DETAIL" "off a terminal: the header, tab-separated"
grep -q "$(printf 'deep/%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30)END-of-path.txt${TAB}created" "$T/out"
ok $? "... the target whole (nothing cut off a terminal)"
grep -q "…" "$T/out"; ok $((!$?)) "... no ellipsis anywhere"

# COLUMNS wins over the terminal's width.
COLUMNS=72 pty "$S" audit ls --no-pager
is "$(widest "$T/tty")" 72 "COLUMNS=72 on a 100-column terminal: lines of 72"
COLUMNS=60 pty "$S" audit ls --no-pager
is "$(widest "$T/tty"):$(head -n 1 "$T/tty" | tr -s ' ')" "60:TIME (UTC) AGENT RUN OP TARGET DETAIL" \
	"COLUMNS=60: the detail and the ids give too (the target first), every column kept"
has "$(line "2026-12-05 10:00:02")" " execute " "... the time and the op never cut"
COLUMNS=300 pty "$S" audit ls --no-pager
grep -q "…" "$T/tty"; ok $((!$?)) "COLUMNS=300: room for every target, nothing cut"

# --columns, -o wide.
pty "$S" audit ls --no-pager --columns op,session,target
is "$(head -n 1 "$T/tty" | tr -s ' ')" "OP SESSION TARGET" "--columns op,session,target: those, in that order"
is "$(widest "$T/tty")" 100 "... fitted too"
has "$(line gone.txt | tr -s ' ')" "write xc-acme-run-kkkkkkkkkkkkkkkkkkkkkkkkkk gone.txt" "... the session whole while the target gives"
"$S" audit ls --columns op,tagret >"$T/out" 2>&1
is "$?:$(head -n 1 "$T/out")" "2:sbxcat: --columns: 'tagret' is not a column; did you mean 'target'?" "--columns with a misspelt name: refused, with a suggestion"
"$S" audit ls --columns op,zzzzzzzz >"$T/out" 2>&1
has "$?:$(head -n 1 "$T/out")" "2:sbxcat: --columns: 'zzzzzzzz' is not a column (the columns: id, time, tenant, session," "--columns with an unknown name: refused, with the list"
"$S" audit ls --columns '' >"$T/out" 2>&1
is "$?" 2 "--columns '': refused"
pty "$S" audit ls --no-pager -o wide
is "$(head -n 1 "$T/tty" | tr -s ' ')" "ID TIME (UTC) TENANT SESSION RUNTIME AGENT RUN OP TARGET OK EXIT BYTES RESULTS MS DETAIL WIRE ID" "-o wide: every column (the wire id last)"
grep -q "…" "$T/tty"; ok $((!$?)) "... nothing cut"
has "$(line nosuch.txt)" "refused: no such session; session asked: xc-zz" "... the whole detail"
"$S" audit ls -o yaml >"$T/out" 2>&1
is "$?:$(head -n 1 "$T/out")" "2:sbxcat: -o 'yaml': expected wide" "-o with another word: usage error"

# audit stats' slowest: the same table, with how long each took.
pty "$S" audit stats --since 2026-12-05 --until 2026-12-06
grep -A1 '^slowest:' "$T/tty" | tail -n 1 | tr -s ' ' >"$T/head"
is "$(cat "$T/head")" "TIME (UTC) AGENT RUN OP TARGET MS DETAIL" "audit stats: the slowest in the usual table, with MS"
is "$(widest "$T/tty")" 100 "... fitted to the terminal too"

# -- The pager.
cat >"$T/pager" <<EOF
#!/bin/sh
echo "called LESS=\${LESS:-unset} args=\$*" >>"$T/pager.log"
cat
EOF
chmod +x "$T/pager"
: >"$T/pager.log"
PAGER=$T/pager pty "$S" audit ls
is "$rc:$(cat "$T/pager.log")" "0:called LESS=FRX args=" "on a terminal: through \$PAGER, LESS=FRX set for it"
grep -q "f-path.txt  created" "$T/tty"; ok $? "... which shows the table"
grep -F passwd "$T/tty" | grep -q "^${ESC}\[31m"; ok $? "... in colour (decided for the terminal, not the pipe)"
is "$(widest "$T/tty")" 100 "... fitted to the terminal"
: >"$T/pager.log"
LESS=S SBXCAT_PAGER="$T/pager --x" PAGER=/nonexistent pty "$S" audit ls
is "$(cat "$T/pager.log")" "called LESS=S args=--x" "\$SBXCAT_PAGER before \$PAGER, with its words; LESS kept when set"
: >"$T/pager.log"
PAGER=$T/pager pty "$S" audit ls --no-pager
is "$rc:$(cat "$T/pager.log")" "0:" "--no-pager: no pager"
PAGER=$T/pager "$S" audit ls >"$T/out" 2>&1
is "$(cat "$T/pager.log")" "" "off a terminal: no pager"
PAGER=$T/pager TERM=dumb pty "$S" audit ls
is "$(cat "$T/pager.log")" "" "TERM=dumb: no pager"
PAGER='cat' pty "$S" audit ls
is "$rc:$(grep -c . "$T/tty")" "0:9" "PAGER=cat: none, the table on the terminal"
PAGER="$T/pager | cat" pty "$S" audit ls
is "$rc:$(grep -c called "$T/pager.log")" "0:1" "a pager with shell syntax runs through sh -c"
: >"$T/pager.log"
PAGER=/nonexistent/pager pty "$S" audit ls
is "$rc:$(grep -c . "$T/tty")" "0:9" "a pager that is not there: the table on the terminal all the same (and one warning)"
has "$(cat "$T/err")" "sbxcat: warning: cannot run the pager '/nonexistent/pager': No such file or directory" "... the warning names it"
# A pager that quits after its first line while 2,000 rows come.
python3 - "$T/spool" 2000 <<'PY'
import hashlib, json, os, sys, uuid
with open(os.path.join(sys.argv[1], "audit.jsonl"), "w") as f:
    for i in range(int(sys.argv[2])):
        row = {"id": str(uuid.uuid4()), "created_at": "2026-12-04T10:00:00.%06dZ" % i,
               "tenant": "bulk", "session": "", "runtime": "", "agent": "bulk-agent",
               "run": None, "op": "read", "target": "bulk/%06d.txt" % i, "ok": True,
               "exit_status": None, "bytes": 1, "results": None, "duration_ms": 1,
               "detail": ""}
        text = json.dumps(row, separators=(",", ":"))[:-1]
        f.write(text + ',"sum":"%s"}\n' % hashlib.sha256(text.encode()).hexdigest())
PY
"$S" audit flush >/dev/null 2>&1
printf '#!/bin/sh\nhead -n 1\n' >"$T/quitter"
chmod +x "$T/quitter"
PAGER=$T/quitter pty "$S" audit ls --limit 2000 --tenant bulk
is "$rc:$(cat "$T/err")" "0:" "the pager quits early under 2,000 rows: status 0, nothing on stderr"
PAGER=$T/quitter pty "$S" audit ls --limit 2000 --tenant bulk --json
is "$rc:$(cat "$T/err")" "0:" "... with --json too"
# The default: less -FRX, found on PATH (here a stand-in that says how it
# was called, then the real one when installed).
mkdir "$T/bin"
printf '#!/bin/sh\necho "less LESS=$LESS args=$*" >>"%s"\ncat\n' "$T/pager.log" >"$T/bin/less"
chmod +x "$T/bin/less"
: >"$T/pager.log"
PATH=$T/bin:$PATH pty "$S" audit ls --limit 5 --tenant bulk
is "$rc:$(cat "$T/pager.log")" "0:less LESS=FRX args=-FRX" "no SBXCAT_PAGER, no PAGER: 'less -FRX', LESS=FRX"
PAGER='' SBXCAT_PAGER='' PATH=$T/bin:$PATH pty "$S" audit ls --limit 5 --tenant bulk
is "$rc:$(cat "$T/pager.log")" "0:less LESS=FRX args=-FRX" "PAGER empty: no pager"
if command -v less >/dev/null; then
	pty "$S" audit ls --columns op,target --limit 5 --tenant bulk
	is "$rc:$(grep -c bulk/ "$T/tty")" "0:5" "the real less -FRX: a short table shown, less gone by itself"
else
	skip "no less installed" "the default pager (less -FRX)"
fi

# -- Rows waiting in the spool: said on stderr.
SBXCAT_DATABASE_URL="host=127.0.0.1 port=1 dbname=x connect_timeout=3" \
	"$S" fs no-such-key read a.txt --agent agent-x >/dev/null 2>&1
SBXCAT_DATABASE_URL="host=127.0.0.1 port=1 dbname=x connect_timeout=3" \
	"$S" fs no-such-key stat b.txt --agent agent-x >/dev/null 2>&1
is "$(wc -l <"$T/spool/audit.jsonl" | tr -d ' ')" 2 "the database unreachable: two refused operations' rows go to the spool"
"$S" audit ls --agent agent-x >"$T/out" 2>"$T/err"
is "$?:$(cat "$T/err")" "0:sbxcat: 2 rows waiting in the spool, not in this list (sbxcat audit flush)" \
	"audit ls against the database: the rows waiting said on stderr"
is "$(grep -c . "$T/out")" 1 "... and the list has only what the database has (the header)"
"$S" audit ls --json --agent agent-x >"$T/out" 2>"$T/err"
has "$(cat "$T/err")" "2 rows waiting in the spool" "... with --json too (on stderr, the JSON clean)"
pty "$S" audit ls --agent agent-x
has "$(cat "$T/err")" "2 rows waiting in the spool" "... on a terminal, after the pager"
"$S" audit flush >/dev/null 2>&1
"$S" audit ls --agent agent-x >"$T/out" 2>"$T/err"
is "$?:$(cat "$T/err"):$(grep -c agent-x "$T/out")" "0::2" "after a flush: no notice, the two rows listed"

# -- With the engine: session ls's header off a terminal, and the prewarm
# display on a dumb terminal.
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
if testbed_docker && testbed_base_image; then
	"$S" session ls >"$T/out" 2>"$T/err"
	is "$?:$(head -n 1 "$T/out")" "0:KEY${TAB}TENANT${TAB}RUNTIME${TAB}STATE${TAB}CREATED${TAB}LAST ACTIVITY" \
		"session ls off a terminal: a tab-separated header, as audit ls has"
	pty "$S" session ls
	is "$(head -n 1 "$T/tty" | tr -s ' ')" "KEY TENANT RUNTIME STATE CREATED LAST ACTIVITY" "... and on a terminal, aligned"
	sfx=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	trap 'testbed_remove_mine "$sfx"; pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT
	cat >"$T/cat.json" <<JSON
[{"alias": "tt-$sfx", "description": "a build", "base_image": "sbxcat-test/busybox:1",
  "env_vars": {"SBX_T": "$sfx"}, "packages": []}]
JSON
	# The display and the report on the terminal, stderr with them.
	python3 "$PTY" 100 50 "$S" -C "$T/cat.json" prewarm --force >"$T/tty"
	grep -q "${ESC}\[" "$T/tty"; ok $? "prewarm on a terminal: the live display moves the cursor (what the next check can see)"
	TERM=dumb python3 "$PTY" 100 50 "$S" -C "$T/cat.json" prewarm --force >"$T/tty"
	is "$?:$(grep -c "$ESC" "$T/tty")" "0:0" "prewarm with TERM=dumb: no escape sequence at all"
	grep -q "tt-$sfx: building" "$T/tty"; ok $? "... the plain lines a log gets instead"
else
	skip "no engine" "session ls off a terminal: a header"
	skip "no engine" "session ls on a terminal"
	skip "no engine" "prewarm on a terminal"
	skip "no engine" "prewarm with TERM=dumb"
	skip "no engine" "prewarm with TERM=dumb: plain lines"
fi

done_testing

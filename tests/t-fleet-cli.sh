#!/bin/sh
# t-fleet-cli.sh - the operator's fleet commands (issue 31): `sbxcat fleet
# ls|drain|undrain|forget` on a database of the test's own on the
# PostgreSQL test-bed.  Hosts and their sessions are rows written with SQL
# (alive, lapsed, draining, sessions in each state), so every value is
# the database's: ls's table and --json field by field (a lease that is
# past shows dead, placed counts 'placing' and 'open', not 'kept'); drain
# and undrain flip the flag in the table; an unknown host named with a
# did-you-mean; forget refusing a live host without --force and taking the
# host's session rows with it; a database never migrated; hostile names
# (control characters, 300 bytes, SQL quotes, a hand-written row with
# escapes) refused with exit 2 or shown escaped, and a fuzz loop of random
# names; COLUMNS on a pseudo-terminal (tests/ptyrun.py).
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
command -v python3 >/dev/null || skip_all "no python3 (the JSON checks, the pseudo-terminal)"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_fleetcli_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
T=$(mktemp -d) || exit 1
trap 'pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE PGSERVICEFILE \
	SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_TENANT SBXCAT_FLEET COLUMNS \
	LC_ALL LC_CTYPE SBXCAT_CATALOG
SBXCAT_DATABASE_URL=$URL SBXCAT_SPOOL_DIR=$T/spool TERM=xterm LANG=C.UTF-8
export SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR TERM LANG
TAB=$(printf '\t')
ESC=$(printf '\033')

q() { pgbed_psql "$DB" -c "$1"; }
# run ARGS...: sbxcat ARGS, stdout in $T/out, stderr in $T/err, status $rc.
run() {
	"$S" "$@" >"$T/out" 2>"$T/err"
	rc=$?
}
# field HOST N: column N of HOST's line of ls's plain output ($T/out).
field() { awk -F'\t' -v h="$1" -v n="$2" '$1 == h { print $n }' "$T/out"; }

# -- A database never migrated: no fleet tables, said so; nothing made.
for verb in "ls" "drain web-1" "undrain web-1" "forget web-1"; do
	# shellcheck disable=SC2086
	run fleet $verb
	is "$rc:$(cat "$T/err")" '3:sbxcat: the database has no fleet tables: run `sbxcat audit migrate`' \
		"fleet $verb before any migration: exit 3, run audit migrate"
done
is "$(q "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" 0 "... and no table was made"
SBXCAT_DATABASE_URL='' run fleet ls
like "$rc:$(cat "$T/err")" '^3:sbxcat: no database configured \(--db URI, SBXCAT_DATABASE_URL' \
	"no database configured: exit 3, where to configure one"

run audit migrate
is "$rc" 0 "the test's database migrated"

# -- An empty fleet.
run fleet ls
is "$rc:$(cat "$T/out")" "0:HOST${TAB}STATE${TAB}LEASE${TAB}SESSIONS${TAB}RESIDENT${TAB}POOL${TAB}URL" \
	"an empty fleet: the header alone, tab-separated off a terminal"
run --json fleet ls
is "$rc:$(tr -d ' \n' <"$T/out")" "0:[]" "... --json: []"

# -- The fleet: alpha alive with a pool; beta lapsed 150 s ago; gamma
# alive and draining; delta lapsed 3 h ago and draining.  Sessions in each
# state: placed counts placing and open, not kept.
q "INSERT INTO fleet_hosts (name, url, instance, capacity, resident, pool, draining, lease_until, epoch) VALUES
  ('alpha', 'http://10.0.0.1:8080', 'i-a', 10, 3, '{\"python\": 2, \"node\": 1}', false, now() + interval '30 s', 4),
  ('beta', 'http://10.0.0.2:8080', 'i-b', 4, 1, '{}', false, now() - interval '150 s', 1),
  ('gamma', 'http://10.0.0.3:8080', 'i-c', 2, 0, '{\"python\": 0}', true, now() + interval '20 s', 2),
  ('delta', 'http://10.0.0.4:8080', 'i-d', 6, 0, '{}', true, now() - interval '3 hours', 1);
INSERT INTO fleet_sessions (wire_id, tenant, host, state, runtime) VALUES
  ('a1', 'acme', 'alpha', 'open', 'python'), ('a2', 'acme', 'alpha', 'placing', 'python'),
  ('a3', NULL, 'alpha', 'kept', 'node'), ('b1', 'acme', 'beta', 'open', 'python'),
  ('b2', 'zeta', 'beta', 'kept', NULL), ('g1', 'zeta', 'gamma', 'kept', NULL)" >/dev/null ||
	bail_out "cannot write the fleet's rows"

run fleet ls
is "$rc:$(wc -l <"$T/out" | tr -d ' '):$(cut -f1 "$T/out" | tr '\n' ' ')" "0:5:HOST alpha beta delta gamma " \
	"ls: a header and a line a host, by name"
is "$(field alpha 2):$(field alpha 4):$(field alpha 5):$(field alpha 6):$(field alpha 7)" \
	"alive:2/10:3:node:1,python:2:http://10.0.0.1:8080" \
	"alpha: alive, 2 placed (placing + open, not kept) of 10, 3 resident, its pool by runtime, its url"
like "$(field alpha 3)" '^(2[0-9]|30)s$' "... its lease's seconds left, the database's (about 30 s)"
is "$(field beta 2):$(field beta 3):$(field beta 4):$(field beta 6)" "dead:dead 2m:1/4:-" \
	"beta, lapsed 150 s ago: dead, 'dead 2m', 1 placed of 4, no pool"
is "$(field gamma 2):$(field gamma 4):$(field gamma 6)" "draining:0/2:python:0" \
	"gamma: draining (alive), nothing placed (its kept session holds no slot), python:0"
is "$(field delta 2):$(field delta 3)" "dead:dead 3h" "delta, lapsed 3 h ago and draining: dead wins, 'dead 3h'"

run --json fleet ls
python3 - "$T/out" "$(q "SELECT string_agg(name || '=' || round(extract(epoch FROM lease_until - now()) * 1000), ',' ORDER BY name) FROM fleet_hosts")" >"$T/py" 2>&1 <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
left = dict(kv.split("=") for kv in sys.argv[2].split(","))
want = {
    "alpha": dict(url="http://10.0.0.1:8080", state="alive", alive=True, draining=False,
                  capacity=10, resident=3, placed=2, pool={"python": 2, "node": 1}, epoch=4),
    "beta": dict(url="http://10.0.0.2:8080", state="dead", alive=False, draining=False,
                 capacity=4, resident=1, placed=1, pool={}, epoch=1),
    "delta": dict(url="http://10.0.0.4:8080", state="dead", alive=False, draining=True,
                  capacity=6, resident=0, placed=0, pool={}, epoch=1),
    "gamma": dict(url="http://10.0.0.3:8080", state="draining", alive=True, draining=True,
                  capacity=2, resident=0, placed=0, pool={"python": 0}, epoch=2),
}
bad = []
if [h["name"] for h in doc] != sorted(want):
    bad.append("names %r" % [h["name"] for h in doc])
for h in doc:
    w = want.get(h["name"], {})
    for k, v in w.items():
        if h.get(k) != v:
            bad.append("%s.%s = %r, not %r" % (h["name"], k, h.get(k), v))
    # The lease's milliseconds: the database's, read a moment apart.
    if abs(h["lease_left_ms"] - int(left[h["name"]])) > 3000:
        bad.append("%s.lease_left_ms %r, the database says %s" % (h["name"], h["lease_left_ms"], left[h["name"]]))
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", h.get("renewed_at", "")):
        bad.append("%s.renewed_at %r" % (h["name"], h.get("renewed_at")))
    extra = set(h) - set(w) - {"name", "lease_left_ms", "renewed_at"}
    if extra:
        bad.append("%s: unexpected keys %r" % (h["name"], sorted(extra)))
print("\n".join(bad) or "ok")
PY
is "$rc:$(cat "$T/py")" "0:ok" "ls --json: every field of every host, the lease's milliseconds the database's"

# A lease that passes: the same host, dead at once, by the database's clock.
q "UPDATE fleet_hosts SET lease_until = now() - interval '1 s' WHERE name = 'alpha'" >/dev/null
run fleet ls
is "$(field alpha 2)" "dead" "alpha's lease_until set in the past: ls shows it dead"
like "$(field alpha 3)" '^dead [0-9.]+s$' "... 'dead' and the seconds since"
q "UPDATE fleet_hosts SET lease_until = now() + interval '30 s' WHERE name = 'alpha'" >/dev/null

# -- drain, undrain: the flag in the table.
run fleet drain alpha
is "$rc:$(cat "$T/out"):$(q "SELECT draining FROM fleet_hosts WHERE name = 'alpha'")" "0:draining alpha:t" \
	"drain alpha: the row's draining is true"
run fleet ls
is "$(field alpha 2)" "draining" "... ls shows it draining"
run fleet drain alpha
is "$rc:$(q "SELECT draining FROM fleet_hosts WHERE name = 'alpha'")" "0:t" "drain again: still draining, exit 0"
run --json fleet undrain alpha
is "$rc:$(tr -d ' \n' <"$T/out"):$(q "SELECT draining FROM fleet_hosts WHERE name = 'alpha'")" \
	'0:{"host":"alpha","draining":false}:f' "undrain alpha --json: the document, the flag false"
is "$(q "SELECT string_agg(name || '=' || draining, ',' ORDER BY name) FROM fleet_hosts")" \
	"alpha=false,beta=false,delta=true,gamma=true" "... no other host's flag touched"
run fleet drain delta
is "$rc" 0 "drain a dead host: allowed (it is drained when it comes back)"

run fleet drain alpah
is "$rc:$(cat "$T/err")" "1:sbxcat: no host 'alpah' in the fleet
hint: did you mean 'alpha'?" "drain an unknown host: exit 1, named, did you mean"
run fleet undrain zzzzzzzz
is "$rc:$(cat "$T/err")" "1:sbxcat: no host 'zzzzzzzz' in the fleet
hint: the fleet's hosts: alpha, beta, delta, gamma" "... nothing near: the fleet's hosts listed"
run fleet drain
is "$rc:$(head -n 1 "$T/err")" "2:sbxcat: which host?" "drain without a host: usage, exit 2"
run fleet drian alpha
like "$rc:$(head -n 1 "$T/err")" "^2:.*did you mean 'drain'" "a misspelt verb: exit 2, did you mean"

# -- forget.
run fleet forget alpha
like "$rc:$(cat "$T/err")" "^1:sbxcat: host 'alpha' is alive: its lease runs another [0-9.]+s
hint: .*--force" "forget a live host: refused, exit 1, --force said"
is "$(q "SELECT count(*) FROM fleet_hosts WHERE name = 'alpha'"):$(q "SELECT count(*) FROM fleet_sessions WHERE host = 'alpha'")" \
	"1:3" "... its row and its three sessions' rows still there"
run fleet forget beta
is "$rc:$(cat "$T/out")" "0:forgot beta and 2 sessions" "forget beta (dead): done, its 2 sessions (open and kept) with it"
is "$(q "SELECT count(*) FROM fleet_hosts WHERE name = 'beta'"):$(q "SELECT count(*) FROM fleet_sessions WHERE host = 'beta'")" \
	"0:0" "... the host's row and its sessions' rows gone (ON DELETE CASCADE)"
run --json fleet forget alpha --force
is "$rc:$(tr -d ' \n' <"$T/out")" '0:{"host":"alpha","forgotten":true,"sessions":3}' "forget alpha --force: done while alive"
is "$(q "SELECT string_agg(name, ',' ORDER BY name) FROM fleet_hosts"):$(q "SELECT string_agg(wire_id, ',' ORDER BY wire_id) FROM fleet_sessions")" \
	"delta,gamma:g1" "... only the other hosts and their sessions left"
run fleet forget beta
is "$rc:$(head -n 1 "$T/err")" "1:sbxcat: no host 'beta' in the fleet" "forget it again: no such host, exit 1"

# -- Hostile names: refused before the database is asked, exit 2, the
# name escaped in one line; the tables untouched.
before=$(q "SELECT count(*) FROM fleet_hosts")
long=$(printf '%300s' '' | tr ' ' 'a')
n64=$(printf '%64s' '' | tr ' ' 'b')
# hostile LABEL NAME: drain NAME refused, exit 2, one line, no control
# character in it.
hostile() {
	run fleet drain -- "$2"
	if [ "$rc" = 2 ] && [ "$(wc -l <"$T/err")" -le 1 ] &&
		! LC_ALL=C grep -q "$(printf '[\001-\010\016-\037]')" "$T/err"; then
		ok 0 "hostile name ($1): exit 2, one escaped line"
	else
		ok 1 "hostile name ($1): exit 2, one escaped line"
		diag "exit $rc: $(cat "$T/err")"
	fi
}
hostile "a control character" "$(printf 'a\001b')"
hostile "a newline" "$(printf 'web\n1')"
hostile "an escape sequence" "$(printf 'a\033[2Jb')"
hostile "300 bytes" "$long"
hostile "65 characters" "${n64}c"
hostile "SQL quotes" "x' OR '1'='1"
hostile "SQL statements" "a; DROP TABLE fleet_hosts; --"
hostile "empty" ""
hostile "a space" " "
hostile "a path" "../x"
hostile "a dash first" "-x"
hostile "a dot first" ".x"
hostile "not ASCII" "wéb"
hostile "invalid UTF-8" "$(printf 'w\377b')"
run fleet forget --force -- "$long"
like "$rc:$(cat "$T/err")" "^2:sbxcat: host 'a{40,}\\.\\.\\.': not a host's name" "300 bytes: refused, shown cut"
run fleet drain "$n64"
is "$rc" 1 "64 characters: a valid name (not in the fleet: exit 1)"
is "$(q "SELECT count(*) FROM fleet_hosts")" "$before" "... the hosts' table untouched by them all"

# A row written by hand with escapes in its name and url: ls shows them
# escaped, one line each; --json stays valid.
q "INSERT INTO fleet_hosts (name, url, instance, capacity, lease_until) VALUES
  (E'evil\\033[31mred', E'http://x\\n/\\033]0;t\\007', 'i', 1, now() + interval '10 s')" >/dev/null
run fleet ls
if grep -q "$ESC" "$T/out" || [ "$(wc -l <"$T/out" | tr -d ' ')" != 4 ]; then
	ok 1 "a hand-written row with escapes: ls shows them escaped, one line a host"
	od -c "$T/out" | head -n 20 | sed 's/^/# /'
else
	ok 0 "a hand-written row with escapes: ls shows them escaped, one line a host"
fi
like "$(grep evil "$T/out" | cut -f1,7)" '^evil\\x1b\[31mred	http://x\\n/\\x1b]0;t\\x07$' "... as \\x1b, \\n, \\x07"
run --json fleet ls
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any(h["name"]=="evil\x1b[31mred" for h in d)' "$T/out"
ok $? "... --json: valid, the name as it is"
run fleet drain evil31mred
is "$rc:$(tail -n 1 "$T/err")" "1:hint: did you mean 'evil\\x1b[31mred'?" "... a suggestion of it escaped too"

# -- Fuzz: random names, never a crash; exit 2 for a name the pattern
# refuses, 1 for a valid one the fleet lacks.
python3 - "$S" >"$T/fuzz" 2>&1 <<'PY'
import os, random, re, subprocess, sys
rnd = random.Random(os.getpid())
pat = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
alphabet = b"abcXYZ019._-'\";\\%$ \t\x01\x1b\x7f\xc3\xa9\xff/"
bad = []
for i in range(100):
    n = rnd.choice([1, 2, 8, 30, 63, 64, 65, 80, 300])
    if rnd.random() < 0.5:
        name = bytes(rnd.choice(alphabet) for _ in range(n))
    else:
        name = bytes(rnd.randrange(1, 256) for _ in range(n))
    p = subprocess.run([sys.argv[1], "fleet", rnd.choice(["drain", "undrain", "forget"]), "--", name],
                       capture_output=True, timeout=20)
    want = 1 if pat.fullmatch(name) else 2
    if p.returncode != want or re.search(rb"[\x00-\x09\x0b-\x1f]", p.stderr) or not p.stderr.startswith(b"sbxcat: "):
        bad.append("%r: exit %d, %r" % (name, p.returncode, p.stderr[:200]))
print("\n".join(bad[:5]) or "ok")
PY
is "$(cat "$T/fuzz")" "ok" "100 random names: exit 2 when invalid, 1 when valid and unknown, one clean message, no crash"
is "$(q "SELECT count(*) FROM fleet_hosts")" "$((before + 1))" "... the hosts' table untouched"

# -- COLUMNS on a terminal; off one, whole lines.
q "DELETE FROM fleet_hosts WHERE name LIKE 'evil%';
INSERT INTO fleet_hosts (name, url, instance, capacity, pool, lease_until) VALUES
  ('worker-with-a-rather-long-name-01', 'http://sandbox-host-01.example.internal:18080', 'i', 64,
   '{\"python\": 4, \"node\": 2, \"workbench\": 1, \"rust\": 3}', now() + interval '60 s')" >/dev/null
# widest FILE: the widest line of FILE in terminal columns (the locale's
# UTF-8: "…" is one).
widest() { wc -L <"$1" | tr -d ' '; }
COLUMNS=70 python3 "$PTY" 100 30 sh -c '"$@" 2>/dev/null' sh "$S" fleet ls >"$T/tty"
is "$?:$(widest "$T/tty"):$(head -n 1 "$T/tty" | tr -s ' ')" "0:70:HOST STATE LEASE SESSIONS RESIDENT POOL URL" \
	"COLUMNS=70 on a 100-column terminal: lines of 70, every column kept"
like "$(grep work "$T/tty")" "^work[^ ]*…[^ ]*-01 +alive +[0-9]+s +0/64 +0 +node:[^ ]*… +http[^ ]*…[^ ]*8080$" \
	"... the host's name and the url cut in the middle, the pool at its end, the rest whole"
COLUMNS=200 python3 "$PTY" 100 30 sh -c '"$@" 2>/dev/null' sh "$S" fleet ls >"$T/tty"
if grep -q "…" "$T/tty"; then ok 1 "COLUMNS=200: nothing cut"; else ok 0 "COLUMNS=200: nothing cut"; fi
like "$(grep worker "$T/tty")" "node:2,python:4,rust:3,workbench:1 +http://sandbox-host-01.example.internal:18080$" "... the pool and the url whole, aligned"
COLUMNS=20 run fleet ls
like "$(grep worker "$T/out")" "^worker-with-a-rather-long-name-01${TAB}alive${TAB}[0-9]+s${TAB}0/64${TAB}0${TAB}node:2,python:4,rust:3,workbench:1${TAB}http://sandbox-host-01.example.internal:18080$" \
	"off a terminal COLUMNS changes nothing: whole, tab-separated"

done_testing

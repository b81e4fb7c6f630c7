#!/bin/sh
# bench/bench-audit.sh - the operation audit (issue 10) beside psql (the
# PostgreSQL 15 client) running the equivalent statements, on the
# test-bed's private PostgreSQL (tests/pgbed.sh) and, for (a), a session on
# the test-bed engine.  Times are wall times of whole processes (sbxcat's,
# psql's: a new connection each), taken by a small spawner in python3 so
# the clock costs no fork; p50 and p95 (nearest rank), and ratios, since
# these machines are shared and noisy:
#  (a) recording overhead of one operation: `fs read` of a small file with
#      SBXCAT_AUDIT=off, against the same with its row to the database, and
#      with the spool alone (no database configured); beside `psql -c
#      "INSERT ..."` of one row.  Target: p95 with minus p95 without
#      <= 5 ms, for the database and for the spool.
#  (a2) the same read through `sbxcat serve` with the audit on (the
#      database) and off, one client on a kept connection: the audit's
#      share, p95(on) - p95(off), target <= 1 ms (issue 33).
#  (b) `audit flush` of a spool of 100,000 rows (made from rows inserted
#      with generate_series, exported as jsonl, each line given its "sum"
#      as src/audit/spool.c does) into a fresh migrated database: rows/s of the
#      median run; target >= 100,000 rows/s.  Beside psql `\copy` of the
#      same rows as CSV into a plain table, and, to tell the database's
#      share from sbxcat's, into sandbox_operations with its indexes.
#  (c) `audit ls` on 1,000,000 rows (generate_series into the real schema,
#      audit_chains filled; the hashes are 32 zero bytes and do not verify,
#      which ls never looks at): the first page and a page deep in the
#      keyset (--after the cursor of the filter's middle row), without a
#      filter and with --tenant, --op, --failed, --search and three at
#      once; beside psql running auditq_page_sql's SELECT with the
#      parameters filled in.  Targets: p95 <= 20 ms for every page, and
#      p95 no slower than psql's (ratio <= 1.0).
#  (d) `audit export --format csv` of the 1,000,000 rows: time and peak
#      RSS beside `psql -c "\copy (SELECT ...) TO STDOUT CSV HEADER"` (the
#      outputs are checked to be the same bytes); no target.
#  (e) `audit sweep` of the 500,000 rows made 40 days old, beside psql's
#      `DELETE ... WHERE created_at < now() - interval '30 days'` on a copy
#      of the database; no target.
# Beside them, for reading the figures on a loaded machine: the client's
# CPU (user+sys, from wait4) in (a) and (b), the time of a bare connection
# (pg_isready) and each page statement's time in the server (planning
# and execution by EXPLAIN ANALYZE, as the first statement of a new
# connection, as sbxcat's is) in (c), and the load average at the start and the end.
# A missed target exits 1.  Sizes (environment):
#   SBXCAT_BENCH_AUDIT_RUNS         runs of each command in (a)   (200)
#   SBXCAT_BENCH_AUDIT_SPOOL_ROWS   rows of the spool in (b)      (100000)
#   SBXCAT_BENCH_AUDIT_FLUSH_RUNS   flushes in (b), median shown  (3)
#   SBXCAT_BENCH_AUDIT_ROWS         rows for (c), (d), (e)        (1000000)
#   SBXCAT_BENCH_AUDIT_OLD_ROWS     of which 40 days old, (e)     (500000)
#   SBXCAT_BENCH_AUDIT_LS_RUNS      runs of each page in (c)      (50)
#   SBXCAT_BENCH_AUDIT_EXPORT_RUNS  runs of each export in (d)    (3)
#   SBXCAT_BENCH_AUDIT_ONLY_A       set: (a) and (a2) alone, then stop
# It took 9 minutes on 2 cores shared with other work (load average 4 to
# 5); most of it is loading the 1,000,000 rows and the flushes.  Everything made here (the databases,
# the session's container, the runtime's image, the temporary directory)
# is removed at the end.
# the timed helpers are called indirectly:
# shellcheck disable=SC2317
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/sessionbench.sh
. "$here/sessionbench.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"

NA=${SBXCAT_BENCH_AUDIT_RUNS:-200}
NS=${SBXCAT_BENCH_AUDIT_SPOOL_ROWS:-100000}
NF=${SBXCAT_BENCH_AUDIT_FLUSH_RUNS:-3}
NB=${SBXCAT_BENCH_AUDIT_ROWS:-1000000}
NO=${SBXCAT_BENCH_AUDIT_OLD_ROWS:-500000}
NL=${SBXCAT_BENCH_AUDIT_LS_RUNS:-50}
NE=${SBXCAT_BENCH_AUDIT_EXPORT_RUNS:-3}
for v in "$NA" "$NS" "$NF" "$NB" "$NO" "$NL" "$NE"; do
	case $v in '' | *[!0-9]* | 0*) echo "bench-audit: sizes are positive numbers, not '$v'"; exit 1 ;; esac
done
[ "$NO" -lt "$NB" ] || { echo "bench-audit: SBXCAT_BENCH_AUDIT_OLD_ROWS must be below SBXCAT_BENCH_AUDIT_ROWS"; exit 1; }
PSQL=$PGB_BIN/psql
[ -x "$PSQL" ] || { echo "bench-audit: no psql at $PSQL (apt-get install postgresql-client-15)"; exit 1; }
command -v python3 >/dev/null || { echo "bench-audit: needs python3 (the timer, the spool's sums)"; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-audit: needs GNU time (/usr/bin/time) for the peak RSS"; exit 1; }
pgbed_start || { echo "bench-audit: no PostgreSQL test-bed (reason above)"; exit 1; }

# Nothing of the caller's reaches the audit: no database but the ones
# given below, no spool but ours, recording off while setting up.
unset SBXCAT_DATABASE_URL PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD \
	PGSERVICE PGSERVICEFILE PGOPTIONS SBXCAT_AGENT_ID SBXCAT_RUN_ID OPERATION_RETENTION_DAYS
SBXCAT_AUDIT=off
export SBXCAT_AUDIT
sb_bench_init bench-audit ba
SBXCAT_SPOOL_DIR=$T/spool-setup
export SBXCAT_SPOOL_DIR
DBP=bench_audit_$$_
DBS="a gen flush flushix big bigcopy"
ba_cleanup() {
	for d in $DBS; do pgbed_dropdb "$DBP$d" 2>/dev/null; done
	sb_bench_cleanup
}
trap ba_cleanup EXIT
umask 077

# timer N WARMUPS SPEC [--- SPEC]...: SPEC is OUT-FILE [VAR=VALUE | VAR]...
# -- ARGV...  (VAR alone: unset).  Runs each SPEC WARMUPS times, then N
# rounds of each in turn (drift hits all alike), appending each run's wall
# seconds to its OUT-FILE, and its CPU seconds (user and system, from
# wait4) to OUT-FILE.cpu; stdin /dev/null, stdout to $T/timer.out, stderr
# to $T/timer.err (of the last run).  A run that exits non-zero stops the
# bench.
cat >"$T/timer.py" <<'PY'
import os, shutil, sys, time
a = sys.argv[1:]
n, warm, out, err = int(a[0]), int(a[1]), a[2], a[3]
specs, cur = [], []
for x in a[4:]:
    if x == '---':
        specs.append(cur); cur = []
    else:
        cur.append(x)
specs.append(cur)
runs = []
for s in specs:
    env, i = dict(os.environ), 1
    while s[i] != '--':
        k, eq, v = s[i].partition('=')
        if eq:
            env[k] = v
        else:
            env.pop(k, None)
        i += 1
    argv = s[i + 1:]
    path = argv[0] if '/' in argv[0] else shutil.which(argv[0], path=env.get('PATH'))
    runs.append((s[0], env, argv, path))
def one(r):
    o = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    e = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fa = [(os.POSIX_SPAWN_OPEN, 0, '/dev/null', os.O_RDONLY, 0),
          (os.POSIX_SPAWN_DUP2, o, 1), (os.POSIX_SPAWN_DUP2, e, 2)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(r[3], r[2], r[1], file_actions=fa)
    st, ru = os.wait4(pid, 0)[1:]
    t = time.perf_counter() - t0
    os.close(o); os.close(e)
    code = os.waitstatus_to_exitcode(st)
    if code != 0:
        sys.stderr.write("bench-audit: '%s' exited %d:\n" % (' '.join(r[2]), code))
        sys.stderr.write(open(err, errors='replace').read())
        sys.exit(1)
    return t, ru.ru_utime + ru.ru_stime
for r in runs:
    for _ in range(warm):
        one(r)
res = [[] for _ in runs]
for _ in range(n):
    for i, r in enumerate(runs):
        res[i].append(one(r))
for i, r in enumerate(runs):
    with open(r[0], 'a') as f:
        f.writelines('%.6f\n' % t[0] for t in res[i])
    with open(r[0] + '.cpu', 'a') as f:
        f.writelines('%.6f\n' % t[1] for t in res[i])
PY
timer() {
	tm_n=$1 tm_w=$2
	shift 2
	python3 "$T/timer.py" "$tm_n" "$tm_w" "$T/timer.out" "$T/timer.err" "$@" || exit 1
}
# ms FILE: "p50 p95" in milliseconds of the seconds in FILE (nearest rank).
ms() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		r = int(0.95 * NR + 0.999999); if (r < 1) r = 1
		printf "%.2f %.2f", m * 1000, v[r] * 1000 }'
}
p50() { ms "$1" | cut -d ' ' -f 1; }
p95() { ms "$1" | cut -d ' ' -f 2; }
# verdict VALUE OP TARGET: v is "ok" or "MISSED" (and the bench fails).
missed=0
verdict() {
	if awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; then v=ok; else v=MISSED; missed=1; fi
}
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
fail() { echo "bench-audit: $*"; exit 1; }
# newdb NAME [migrate]: a fresh database of ours; its conninfo in U.
newdb() {
	U=$(pgbed_newdb "$DBP$1") || fail "cannot make the database $DBP$1"
	if [ -n "${2:-}" ]; then
		SBXCAT_DATABASE_URL=$U "$S" audit migrate >/dev/null || fail "audit migrate failed on $DBP$1"
	fi
}
# q DB ARGS...: pgbed_psql on our database DB (or on postgres).
q() {
	q_db=$1
	shift
	[ "$q_db" = postgres ] || q_db=$DBP$q_db
	pgbed_psql "$q_db" "$@" || fail "SQL on $q_db failed"
}
# drop_ix DB: drop sandbox_operations' secondary indexes, their definitions
# kept in $T/ix-DB.sql (for build_ix): a bulk load builds them faster
# afterwards than row by row.
drop_ix() {
	iq="FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'sandbox_operations'
	    AND indexname NOT IN ('sandbox_operations_pkey', 'sandbox_operations_seq_key')"
	q "$1" -c "SELECT count(*) FROM pg_indexes WHERE tablename = 'sandbox_operations'" >"$T/ix-$1.n"
	q "$1" -c "SELECT indexdef || ';' $iq" >"$T/ix-$1.sql"
	q "$1" -c "SELECT format('DROP INDEX %I;', indexname) $iq" | q "$1"
}
# build_ix DB: build them again from their own definitions, the trigram
# index (GIN builds on one core) beside the B-trees.
build_ix() {
	grep 'USING gin' "$T/ix-$1.sql" >"$T/ix-$1-gin.sql"
	grep -v 'USING gin' "$T/ix-$1.sql" >"$T/ix-$1-bt.sql"
	q "$1" -c "SET maintenance_work_mem = '256MB'" -f "$T/ix-$1-gin.sql" &
	bi_pid=$!
	q "$1" -c "SET maintenance_work_mem = '256MB'" -f "$T/ix-$1-bt.sql"
	wait "$bi_pid" || fail "building the trigram index failed"
}
ZERO="decode(repeat('00', 32), 'hex')"
OPS="(ARRAY['write','edit','read','read_bytes','ls_info','glob_info','grep_raw','execute','open','close','reap'])[1 + i % 11]"
t_start=$(now)
echo "PostgreSQL: $(q postgres -c 'SHOW server_version') at $(pgbed_url); psql: $PSQL; sbxcat: $S"
echo "load average at the start: $(cut -d ' ' -f 1-3 /proc/loadavg) ($(nproc) cores)"

# ---- (a) recording overhead
K=$(sx session open --runtime "$RT" --tenant bench --scope run --subject audit) ||
	fail "session open failed"
WS=$T/root/$K/workspace
printf 'one\ntwo\nthree\n' >"$WS/small.txt"
chown 10001:10001 "$WS/small.txt"
newdb a migrate
UA=$U
mkdir "$T/spool-db" "$T/spool-only"
READ="-- $S -C $T/cat.json fs $K read small.txt"
INS="INSERT INTO sandbox_operations (id, created_at, tenant, session_key, runtime, op,
	target, ok, bytes, results, duration_ms, detail, hash) VALUES (gen_random_uuid(), now(),
	'bench', 'psql-insert', '$RT', 'read', 'small.txt', true, 14, 3, 0, '', $ZERO)"
# shellcheck disable=SC2086
timer "$NA" 3 a.off SBXCAT_AUDIT=off $READ \
	--- a.db SBXCAT_AUDIT=on "SBXCAT_DATABASE_URL=$UA" "SBXCAT_SPOOL_DIR=$T/spool-db" $READ \
	--- a.spool SBXCAT_AUDIT=on "SBXCAT_SPOOL_DIR=$T/spool-only" $READ \
	--- a.psql -- "$PSQL" -X -q -v ON_ERROR_STOP=1 "$UA" -c "$INS"
# Each went where it was meant to: every row, and only there.
n_db=$(q a -c "SELECT count(*) FROM sandbox_operations WHERE session_key = '$K' AND op = 'read' AND ok")
n_sp=$(wc -l <"$T/spool-only/audit.jsonl")
n_lost=0
[ -e "$T/spool-db/audit.jsonl" ] && n_lost=$(wc -l <"$T/spool-db/audit.jsonl")
[ "$n_db:$n_sp:$n_lost" = "$((NA + 3)):$((NA + 3)):0" ] ||
	fail "(a) rows in the database $n_db, in the spool $n_sp, spooled beside the database $n_lost; wanted $((NA + 3)), $((NA + 3)), 0"
echo "(a) fs read of a 14-byte file, $NA runs each (rows checked: $n_db in the database, $n_sp in the spool)"
printf '(a) audit off: p50 %s ms p95 %s ms\n' "$(p50 a.off)" "$(p95 a.off)"
for w in db spool; do
	o=$(calc %.2f "$(p95 a.$w) - $(p95 a.off)")
	verdict "$o" "<=" 5
	[ $w = db ] && wl="row to the database" || wl="row to the spool alone"
	printf '(a) %s: p50 %s ms p95 %s ms; overhead p95 %s ms (target <= 5 ms) %s; p50 %s ms\n' \
		"$wl" "$(p50 a.$w)" "$(p95 a.$w)" "$o" "$v" "$(calc %.2f "$(p50 a.$w) - $(p50 a.off)")"
done
printf '(a) psql -c "INSERT ..." of one row, a new connection each: p50 %s ms p95 %s ms; database overhead p95 / psql p95 = %s\n' \
	"$(p50 a.psql)" "$(p95 a.psql)" "$(calc %.2f "($(p95 a.db) - $(p95 a.off)) / $(p95 a.psql)")"
printf '(a) CPU of the client process (user+sys, p50): audit off %s ms, to the database %s ms, to the spool %s ms, psql %s ms\n' \
	"$(p50 a.off.cpu)" "$(p50 a.db.cpu)" "$(p50 a.spool.cpu)" "$(p50 a.psql.cpu)"

# (a2) the audit's share in the service: the same small read through
# `sbxcat serve` with the audit on (rows to the database of (a)) and
# through a second service with SBXCAT_AUDIT=off, alternately, one client
# on a kept connection (bench/serve_bench.py read).  A command line's
# recorder commits its own row; the service's goes through its writer
# (src/audit/audit-writer.c): committed by the calling thread when the
# writer is idle, in the writer's groups under load.  Target (issue 33):
# share = p95(on) - p95(off) <= 1 ms.  Beside it, held to no target, a
# third service whose connections run at synchronous_commit=off (a
# measurement of what the commit's WAL flush costs on this disk, never a
# setting of sbxcat), against the same service off.
TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# up PORT LOG: wait (bounded) until the service on PORT answers /healthz.
up() {
	n=0
	until python3 -c "import http.client,sys; c=http.client.HTTPConnection('127.0.0.1',$1,timeout=2); c.request('GET','/healthz'); sys.exit(c.getresponse().status!=200)" 2>/dev/null; do
		[ $n -lt 100 ] || { tail -5 "$2"; fail "(a2) a service did not start"; }
		sleep 0.1
		n=$((n + 1))
	done
}
mkdir -m 755 "$T/root-off" "$T/root-nf"
PORTA=$(freeport) PORTB=$(freeport) PORTC=$(freeport)
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0 SBXCAT_AUDIT=on SBXCAT_DATABASE_URL=$UA \
	SBXCAT_SPOOL_DIR=$T/spool-db "$S" -C "$T/cat.json" serve --listen "tcp:127.0.0.1:$PORTA" \
	2>"$T/log-on" &
PA=$!
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0 SBXCAT_AUDIT=off SBXCAT_SPOOL_DIR=$T/spool-off \
	SANDBOXD_WORKSPACE_ROOT=$T/root-off SBXCAT_DEPLOYMENT_ID=$DEP-off \
	"$S" -C "$T/cat.json" serve --listen "tcp:127.0.0.1:$PORTB" 2>"$T/log-off" &
PB=$!
SANDBOXD_TOKEN=$TOKEN SANDBOXD_CLEANUP_INTERVAL=0 SBXCAT_AUDIT=on \
	SBXCAT_DATABASE_URL="$UA options='-c synchronous_commit=off'" SBXCAT_SPOOL_DIR=$T/spool-db \
	SANDBOXD_WORKSPACE_ROOT=$T/root-nf SBXCAT_DEPLOYMENT_ID=$DEP-nf \
	"$S" -C "$T/cat.json" serve --listen "tcp:127.0.0.1:$PORTC" 2>"$T/log-nf" &
PC=$!
a2_stop() {
	kill -TERM "$PA" "$PB" "$PC" 2>/dev/null
	wait "$PA" "$PB" "$PC" 2>/dev/null
	# shellcheck disable=SC2046
	tb_docker rm -f $(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP-off") \
		$(tb_docker ps -aq --filter "label=io.sbxcat.deployment=$DEP-nf") >/dev/null 2>&1
	PA="" PB="" PC=""
}
trap 'a2_stop; ba_cleanup' EXIT
up "$PORTA" "$T/log-on"
up "$PORTB" "$T/log-off"
up "$PORTC" "$T/log-nf"
n_before=$(q a -c "SELECT count(*) FROM sandbox_operations WHERE op = 'read' AND ok")
SERVE_PORT_A=$PORTA SERVE_PORT_B=$PORTB SERVE_TOKEN=$TOKEN OUT=$T PREFIX=ba$$- \
	python3 "$here/serve_bench.py" read "$NA" >"$T/a2.out" || fail "(a2) the driver failed"
mv read.on a2.on
mv read.off a2.off
SERVE_PORT_A=$PORTC SERVE_PORT_B=$PORTB SERVE_TOKEN=$TOKEN OUT=$T PREFIX=ba$$-nf- \
	python3 "$here/serve_bench.py" read "$NA" >"$T/a2.out" || fail "(a2) the driver failed"
mv read.on a2.nf
mv read.off a2.nfoff
a2_stop
trap ba_cleanup EXIT
n_svc=$(($(q a -c "SELECT count(*) FROM sandbox_operations WHERE op = 'read' AND ok") - n_before))
[ "$n_svc" = "$((2 * (NA + 5)))" ] || fail "(a2) $n_svc read rows in the database; wanted $((2 * (NA + 5)))"
o=$(calc %.2f "$(p95 a2.on) - $(p95 a2.off)")
verdict "$o" "<=" 1
printf '(a2) the same read through sbxcat serve, %s runs each (rows checked: %s): audit off p50 %s ms p95 %s ms; audit on p50 %s ms p95 %s ms\n' \
	"$NA" "$n_svc" "$(p50 a2.off)" "$(p95 a2.off)" "$(p50 a2.on)" "$(p95 a2.on)"
printf '(a2) the audit'"'"'s share: p95(on) - p95(off) = %s ms (target <= 1 ms) %s; p50 %s ms\n' \
	"$o" "$v" "$(calc %.2f "$(p50 a2.on) - $(p50 a2.off)")"
printf '(a2) without the commit'"'"'s WAL flush (synchronous_commit=off, not sbxcat'"'"'s setting): off p50 %s ms p95 %s ms; on p50 %s ms p95 %s ms; share p95 %s ms, p50 %s ms\n' \
	"$(p50 a2.nfoff)" "$(p95 a2.nfoff)" "$(p50 a2.nf)" "$(p95 a2.nf)" \
	"$(calc %.2f "$(p95 a2.nf) - $(p95 a2.nfoff)")" "$(calc %.2f "$(p50 a2.nf) - $(p50 a2.nfoff)")"
if [ -n "${SBXCAT_BENCH_AUDIT_ONLY_A:-}" ]; then
	pgbed_dropdb "${DBP}a"
	echo "bench-audit: (a) only, $(elapsed "$t_start" "$(now)") s; $([ $missed = 0 ] && echo 'every target met' || echo 'a target was MISSED')"
	exit $missed
fi
pgbed_dropdb "${DBP}a"

# ---- (b) flush of a spool
t0=$(now)
newdb gen migrate
UG=$U
drop_ix gen	# a scratch table: nothing is looked up in it
q gen -c "INSERT INTO sandbox_operations (id, created_at, tenant, session_key, runtime,
	agent_ref, run_ref, op, target, ok, exit_status, bytes, results, duration_ms, detail, hash)
	SELECT gen_random_uuid(), now() - ($NS - i) * interval '10 milliseconds', 'tenant-' || i % 4,
	  'spool-' || i % 100, 'python', 'agent-' || i % 10, 'run-' || i % 50, $OPS,
	  '/work/src/file' || i % 5000 || '.c', i % 10 <> 0,
	  CASE WHEN i % 11 = 7 THEN CASE WHEN i % 10 <> 0 THEN 0 ELSE 2 END END, i % 100000,
	  CASE WHEN i % 11 IN (2, 4, 5, 6) THEN i % 50 END, i % 997,
	  CASE WHEN i % 11 = 7 THEN 'exit ' || CASE WHEN i % 10 <> 0 THEN 0 ELSE 2 END
	       WHEN i % 10 = 0 THEN 'refused: not found' ELSE '' END, $ZERO
	FROM generate_series(1, $NS) i"
# The spool's lines in the order they were made (oldest first): the row
# as export prints it, without "seq", then "sum" as spool_line makes it:
# the SHA-256 hex of the line's bytes before ',"sum":"'.
SBXCAT_DATABASE_URL=$UG "$S" audit export --format jsonl >"$T/rows.jsonl" || fail "(b) export jsonl failed"
tac "$T/rows.jsonl" | python3 "$here/spool_lines.py" >"$T/spool.jsonl" || fail "(b) making the spool failed"
# The same rows as CSV: as export prints them (a plain table's columns),
# and as sbxcat's COPY sends them (sandbox_operations' columns, the hash).
SBXCAT_DATABASE_URL=$UG "$S" audit export --format csv >"$T/rows.csv" || fail "(b) export csv failed"
q gen -c "\\copy (SELECT id, created_at, tenant, session_key, runtime, agent_id, run_id, agent_ref,
	run_ref, op, target, ok, exit_status, bytes, results, duration_ms, detail, hash
	FROM sandbox_operations ORDER BY seq) TO '$T/rows-full.csv' CSV"
q gen -c "CREATE TABLE plain (id uuid, seq bigint, created_at timestamptz, tenant text,
	session text, runtime text, agent text, run text, op text, target text, ok boolean,
	exit_status integer, bytes bigint, results bigint, duration_ms bigint, detail text)"
echo "(b) a spool of $(wc -l <"$T/spool.jsonl") rows, $(($(wc -c <"$T/spool.jsonl") / 1024)) KiB, made in $(elapsed "$t0" "$(now)") s"
COLS="id, created_at, tenant, session_key, runtime, agent_id, run_id, agent_ref, run_ref, op,
	target, ok, exit_status, bytes, results, duration_ms, detail, hash"
i=1
while [ $i -le "$NF" ]; do
	newdb flush migrate
	rm -rf "$T/sp"
	{ mkdir "$T/sp" && cp "$T/spool.jsonl" "$T/sp/audit.jsonl"; } || fail "cannot copy the spool"
	timer 1 0 b.flush SBXCAT_AUDIT=on "SBXCAT_DATABASE_URL=$U" "SBXCAT_SPOOL_DIR=$T/sp" -- "$S" audit flush
	got=$(cat "$T/timer.out")
	[ "$got" = "flushed $NS rows (0 already there), 0 lines kept aside" ] || fail "(b) flush said: $got"
	[ "$(q flush -c 'SELECT count(*) FROM sandbox_operations')" = "$NS" ] || fail "(b) flush did not insert $NS rows"
	[ -s "$T/sp/audit.jsonl" ] && fail "(b) the spool is not empty after the flush"
	q gen -c "TRUNCATE plain"
	timer 1 0 b.plain -- "$PSQL" -X -q -v ON_ERROR_STOP=1 "$UG" -c "\\copy plain FROM '$T/rows.csv' CSV HEADER"
	newdb flushix migrate
	timer 1 0 b.ix -- "$PSQL" -X -q -v ON_ERROR_STOP=1 "$U" -c "\\copy sandbox_operations ($COLS) FROM '$T/rows-full.csv' CSV"
	i=$((i + 1))
done
[ "$(q gen -c 'SELECT count(*) FROM plain')" = "$NS" ] || fail "(b) \\copy did not load $NS rows"
rate() { calc %.0f "$NS / $(p50 "$1") * 1000"; }
r=$(rate b.flush)
verdict "$r" ">=" 100000
printf '(b) sbxcat audit flush of %s rows: median %s ms, %s rows/s (target >= 100000) %s\n' \
	"$NS" "$(p50 b.flush)" "$r" "$v"
printf '(b) of which sbxcat'"'"'s own CPU (user+sys, median): %s ms; the rest is waiting for the server\n' "$(p50 b.flush.cpu)"
printf '(b) psql \\copy of the same rows as CSV into a plain table: median %s ms, %s rows/s; flush / psql time ratio %s\n' \
	"$(p50 b.plain)" "$(rate b.plain)" "$(calc %.2f "$(p50 b.flush) / $(p50 b.plain)")"
printf '(b) psql \\copy of them into sandbox_operations (its %s indexes, no chains): median %s ms, %s rows/s; flush / psql time ratio %s\n' \
	"$(cat "$T/ix-gen.n")" "$(p50 b.ix)" "$(rate b.ix)" "$(calc %.2f "$(p50 b.flush) / $(p50 b.ix)")"
for d in gen flush flushix; do pgbed_dropdb "$DBP$d"; done
rm -f "$T"/rows* "$T/spool.jsonl"

# ---- (c) ls on NB rows
# Rows 1..NO are 40 days old and older (one a second, the lowest seqs, so
# the sweep of (e) takes each chain's whole old prefix), the rest end now,
# one a second.  Ids are v4-shaped and sequential (gen_random_uuid costs
# more than the insert); 8 tenants, 1,000 sessions, 20 agents, a tenth
# failed, every 1,000th target secrets.env.
t0=$(now)
newdb big migrate
UB=$U
drop_ix big
q big -c "BEGIN" -c "TRUNCATE sandbox_operations" -c "INSERT INTO sandbox_operations (id,
	created_at, tenant, session_key, runtime, agent_ref, run_ref, op, target, ok, exit_status,
	bytes, results, duration_ms, detail, hash)
	SELECT (lpad(to_hex(i), 8, '0') || '-0000-4000-8000-000000000000')::uuid,
	  CASE WHEN i <= $NO THEN now() - interval '40 days' - ($NO - i) * interval '1 second'
	       ELSE now() - ($NB - i) * interval '1 second' END
	  - (i::bigint * 7919 % 1000000) * interval '1 microsecond',
	  'tenant-' || i % 8, 'sess-' || i % 1000, 'python',
	  CASE WHEN i % 7 = 0 THEN NULL ELSE 'agent-' || i % 20 END, 'run-' || i % 200, $OPS,
	  CASE WHEN i % 1000 = 0 THEN '/work/conf/secrets.env' ELSE '/work/src/file' || i % 5000 || '.c' END,
	  i % 10 <> 0, CASE WHEN i % 11 = 7 THEN CASE WHEN i % 10 <> 0 THEN 0 ELSE 2 END END,
	  i % 100000, CASE WHEN i % 11 IN (2, 4, 5, 6) THEN i % 50 END, i % 997,
	  CASE WHEN i % 11 = 7 THEN 'exit ' || CASE WHEN i % 10 <> 0 THEN 0 ELSE 2 END
	       WHEN i % 10 = 0 THEN 'refused: not found' ELSE '' END, $ZERO
	FROM generate_series(1, $NB) i" -c "COMMIT"
build_ix big
q big -c "INSERT INTO audit_chains (session_key, tenant, head, head_seq, nrows, swept_hash, swept_rows)
	SELECT session_key, min(tenant), $ZERO, max(seq), count(*), $ZERO, 0
	FROM sandbox_operations GROUP BY session_key" -c "VACUUM ANALYZE"
[ "$(q big -c "SELECT count(*) FROM pg_indexes WHERE tablename = 'sandbox_operations'")" = "$(cat "$T/ix-big.n")" ] ||
	fail "(c) the indexes were not all built again"
echo "(c) $NB rows ($(q big -c "SELECT pg_size_pretty(pg_total_relation_size('sandbox_operations'))") with indexes) loaded in $(elapsed "$t0" "$(now)") s; their hashes are zeros (ls does not read them; verify would fail)"

# auditq.c's page statement (auditq_page_sql), its parameters filled in:
# the default --limit 50 asks for 51 rows.
US="(extract(epoch FROM created_at) * 1000000)::bigint"
ROWJ="json_build_object('id', id, 'created_at', to_char(created_at AT TIME ZONE 'UTC',
	'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), 'tenant', tenant, 'session', session_key,
	'runtime', runtime, 'agent', agent_ref, 'run', run_ref, 'op', op, 'target', target,
	'ok', ok, 'exit_status', exit_status, 'bytes', bytes, 'results', results,
	'duration_ms', duration_ms, 'detail', detail, 'seq', seq)"
ORDER="ORDER BY created_at DESC, seq DESC"
# ls_case NAME WHERE SBXCAT-ARGS...: the first page and a deep one.
ls_case() {
	lc_name=$1 lc_where=$2
	shift 2
	lc_w=${lc_where:+ WHERE $lc_where}
	lc_n=$(q big -c "SELECT count(*) FROM sandbox_operations$lc_w")
	# The cursor of the middle row of this filter's rows, as auditq.c
	# encodes it: base64url, no padding, of "1:CREATED_US:SEQ".
	IFS='|' read -r lc_us lc_seq lc_ts <<EOF
$(q big -c "SELECT $US, seq, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'
	FROM sandbox_operations$lc_w $ORDER OFFSET $((lc_n / 2)) LIMIT 1")
EOF
	lc_cur=$(printf '1:%s:%s' "$lc_us" "$lc_seq" | base64 -w 0 | tr '+/' '-_' | tr -d '=')
	for lc_p in first deep; do
		if [ $lc_p = first ]; then
			lc_sw=$lc_w lc_after="" lc_label="first page"
		else
			lc_sw="${lc_w:- WHERE}${lc_w:+ AND} (created_at, seq) < ('$lc_ts'::timestamptz, $lc_seq::bigint)"
			lc_after="--after $lc_cur" lc_label="deep page (row $((lc_n / 2 + 1)) of $lc_n)"
		fi
		lc_sql="SELECT $US, seq, $ROWJ::text FROM sandbox_operations$lc_sw $ORDER LIMIT 51::bigint"
		# Both give the same rows.
		# shellcheck disable=SC2086
		SBXCAT_DATABASE_URL=$UB "$S" audit ls "$@" $lc_after --json 2>&1 |
			sed -n 's/.*"seq":\([0-9]*\).*/\1/p' >"$T/ls.sbx"
		"$PSQL" -X -q -A -t "$UB" -c "$lc_sql" | head -n 50 | cut -d '|' -f 2 >"$T/ls.psql"
		{ [ -s "$T/ls.sbx" ] && cmp -s "$T/ls.sbx" "$T/ls.psql"; } ||
			fail "(c) $lc_name $lc_label: sbxcat audit ls and psql give other rows ($(wc -l <"$T/ls.sbx") and $(wc -l <"$T/ls.psql"))"
		rm -f c.sbx c.psql c.sbx.cpu c.psql.cpu
		# shellcheck disable=SC2086
		timer "$NL" 2 c.sbx "SBXCAT_DATABASE_URL=$UB" -- "$S" audit ls "$@" $lc_after \
			--- c.psql -- "$PSQL" -X -q -A -t "$UB" -c "$lc_sql"
		lc_r=$(calc %.2f "$(p95 c.sbx) / $(p95 c.psql)")
		# The statement's own time in the server, planning and execution.
		lc_x=$("$PSQL" -X -q -A -t "$UB" -c "EXPLAIN (ANALYZE, TIMING OFF) $lc_sql" |
			sed -n 's/^\(Planning\|Execution\) Time: \([0-9.]*\) ms$/\2/p' |
			awk '{ s += $1 } END { printf "%.2f", s }')
		verdict "$(p95 c.sbx)" "<=" 20
		lc_v1=$v
		verdict "$lc_r" "<=" 1.0
		printf '(c) ls %s, %s: sbxcat p50 %s ms p95 %s ms (target <= 20 ms) %s; psql p50 %s ms p95 %s ms; ratio of p95s %s (target <= 1.0) %s; in the server %s ms\n' \
			"$lc_name" "$lc_label" "$(p50 c.sbx)" "$(p95 c.sbx)" "$lc_v1" \
			"$(p50 c.psql)" "$(p95 c.psql)" "$lc_r" "$v" "$lc_x"
	done
}
echo "(c) audit ls, $NL runs of each page, end to end (a new process and connection each)"
timer "$NL" 2 c.floor -- "$PGB_BIN/pg_isready" -q -d "$UB"
printf '(c) a new connection alone (pg_isready, no query): p50 %s ms p95 %s ms\n' "$(p50 c.floor)" "$(p95 c.floor)"
ls_case "no filter" ""
ls_case "--tenant" "tenant = 'tenant-2'::text" --tenant tenant-2
ls_case "--op write" "op = 'write'::text" --op write
ls_case "--failed" "NOT ok" --failed
ls_case "--search secrets.env" "target LIKE '%secrets.env%'::text ESCAPE '\\'" --search secrets.env
ls_case "--tenant --op --failed" "tenant = 'tenant-2'::text AND op = 'write'::text AND NOT ok" \
	--tenant tenant-2 --op write --failed

# ---- (d) export
CSV="id, seq, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS created_at,
	tenant, session_key AS session, runtime, agent_ref AS agent, run_ref AS run, op, target,
	CASE WHEN ok THEN 'true' ELSE 'false' END AS ok, exit_status, bytes, results, duration_ms, detail"
ex_sbx() { SBXCAT_DATABASE_URL=$UB "$S" audit export --format csv; }
ex_psql() { "$PSQL" -X -q -v ON_ERROR_STOP=1 "$UB" -c "\\copy (SELECT $CSV FROM sandbox_operations $ORDER) TO STDOUT CSV HEADER"; }
s1=$(ex_sbx | md5sum)
s2=$(ex_psql | md5sum)
[ "$s1" = "$s2" ] || fail "(d) sbxcat audit export and psql \\copy wrote other bytes"
[ "$(ex_sbx | wc -l)" = "$((NB + 1))" ] || fail "(d) export did not write $NB rows and a header"
# rss_run FILE CMD...: CMD's wall time and peak RSS appended to FILE.
rss_run() {
	rr_f=$1
	shift
	/usr/bin/time -f '%e %M' -a -o "$rr_f" "$@" >/dev/null || fail "(d) '$*' failed"
}
SBXCAT_DATABASE_URL=$UB
export SBXCAT_DATABASE_URL
i=1
while [ $i -le "$NE" ]; do
	rss_run d.sbx "$S" audit export --format csv
	rss_run d.psql "$PSQL" -X -q -v ON_ERROR_STOP=1 "$UB" -c "\\copy (SELECT $CSV FROM sandbox_operations $ORDER) TO STDOUT CSV HEADER"
	i=$((i + 1))
done
rss_run d.t3 "$S" audit export --format csv --tenant tenant-2
unset SBXCAT_DATABASE_URL
# col FILE N: the median of column N
col() { cut -d ' ' -f "$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { printf "%s", v[int((NR + 1) / 2)] }'; }
printf '(d) sbxcat audit export --format csv of %s rows: median %s s, peak RSS %s KiB; --tenant tenant-2 (%s rows): peak RSS %s KiB\n' \
	"$NB" "$(col d.sbx 1)" "$(col d.sbx 2)" "$(q big -c "SELECT count(*) FROM sandbox_operations WHERE tenant = 'tenant-2'")" "$(col d.t3 2)"
printf '(d) psql \\copy (SELECT ...) TO STDOUT CSV HEADER: median %s s, peak RSS %s KiB; time ratio %s (the same bytes, %s runs each)\n' \
	"$(col d.psql 1)" "$(col d.psql 2)" "$(calc %.2f "$(col d.sbx 1) / $(col d.psql 1)")" "$NE"

# ---- (e) sweep
q postgres -c "CREATE DATABASE ${DBP}bigcopy TEMPLATE ${DBP}big"
UC=$(pgbed_url "${DBP}bigcopy")
timer 1 0 e.psql -- "$PSQL" -X -v ON_ERROR_STOP=1 "$UC" -c "DELETE FROM sandbox_operations WHERE created_at < now() - interval '30 days'"
[ "$(cat "$T/timer.out")" = "DELETE $NO" ] || fail "(e) psql said: $(cat "$T/timer.out")"
timer 1 0 e.sbx "SBXCAT_DATABASE_URL=$UB" -- "$S" audit sweep
got=$(cat "$T/timer.out")
case $got in
*"held back"*) fail "(e) sweep held rows back: $got" ;;
"deleted $NO rows ("*) ;;
*) fail "(e) sweep said: $got" ;;
esac
[ "$(q big -c 'SELECT count(*) FROM sandbox_operations')" = "$((NB - NO))" ] || fail "(e) sweep left other rows"
printf '(e) sbxcat audit sweep of %s rows (in 10,000-row transactions per chain, 1,000 chains): %s s; psql DELETE of them in one statement on a copy: %s s; ratio %s\n' \
	"$NO" "$(calc %.2f "$(cat e.sbx)")" "$(calc %.2f "$(cat e.psql)")" "$(calc %.2f "$(cat e.sbx) / $(cat e.psql)")"

echo "load average at the end: $(cut -d ' ' -f 1-3 /proc/loadavg)"
echo "bench-audit: $(elapsed "$t_start" "$(now)") s in all; $([ $missed = 0 ] && echo 'every target met' || echo 'a target was MISSED')"
exit $missed

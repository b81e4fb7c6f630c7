#!/bin/sh
# bench/bench-fs.sh - sbxcat fs beside what a user would do without it
# (issue 9), on the test-bed engine, medians of a few runs each
# (SBXCAT_BENCH_FS_RUNS, default 5), after one warm-up run:
#  (a) `fs read` of a 1 MiB text file (1,748 lines, all shown) against
#      `docker exec CONTAINER cat` (target: ratio of medians <= 0.5);
#  (b) `fs read-bytes` of it, against the same (target <= 0.5);
#  (c) `fs write` of 1 MiB against `docker cp` into the container
#      (target <= 0.5);
#  (d) `fs grep` of a literal and of a regular expression over a
#      10,000-file, 100 MB tree against `grep -rn` (and `rg -n` where
#      installed) on the host (target <= 1.5 against GNU grep);
#  (e) `fs ls -R` of a 3,000-file tree 8 levels deep (bounds raised so
#      every entry is listed) against `find` (no target: shown).
# fs needs no engine; the docker CLI goes through the engine for each
# call, which is the cost sbxcat saves.  A missed target exits 1.
# Everything made here (the session's container, the workspace root, the
# runtime's image) is removed at the end.
# the timed helpers are called indirectly (time1):
# shellcheck disable=SC2317
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/sessionbench.sh
. "$here/sessionbench.sh"
sb_bench_init bench-fs bf
K=$(sx session open --runtime "$RT" --tenant bench --scope run --subject fs) ||
	{ echo "bench-fs: session open failed"; exit 1; }
CTR=sbxcat-$DEP-$K
WS=$T/root/$K/workspace

N=${SBXCAT_BENCH_FS_RUNS:-5}
missed=0
# compare LABEL NAME FILE OTHER-NAME OTHER-FILE [TARGET]: both medians and
# their ratio, against TARGET when given.
compare() {
	c_r=$(ratio "$(med "$3")" "$(med "$5")")
	c_v=""
	if [ -n "${6:-}" ]; then
		if awk -v v="$c_r" -v t="$6" 'BEGIN { exit !(v <= t) }'; then c_v=" (target <= $6) ok"
		else c_v=" (target <= $6) MISSED"; missed=1; fi
	fi
	printf '%s: %s median %s s; %s median %s s: ratio %s%s\n' \
		"$1" "$2" "$(med "$3")" "$4" "$(med "$5")" "$c_r" "$c_v"
}
# pair FILE-A FILE-B CMD-A CMD-B: one warm-up of each, then A and B in
# turn N times (drift hits both alike); CMD-A and CMD-B are functions.
pair() {
	"$3" >/dev/null 2>&1
	"$4" >/dev/null 2>&1
	p_i=1
	while [ $p_i -le "$N" ]; do
		time1 "$1" "$3"
		time1 "$2" "$4"
		p_i=$((p_i + 1))
	done
}

echo "engine: $DOCKER_HOST; client for comparison: $DOCKER; $N runs each"

# (a), (b): a 1 MiB text file of 1,748 lines (read shows them all).
awk 'BEGIN { for (i = 1; i <= 1748; i++) { s = sprintf("%06d ", i);
	while (length(s) < 599) s = s "lorem ipsum dolor sit amet "; print substr(s, 1, 599) } }' >"$WS/one.txt"
chown 10001:10001 "$WS/one.txt"
sx fs "$K" read one.txt >"$T/check" 2>&1
[ "$(wc -l <"$T/check")" = 1748 ] ||
	{ echo "bench-fs: fs read of the 1 MiB file did not show its 1,748 lines:"; head -n 3 "$T/check"; exit 1; }
fs_read() { sx fs "$K" read one.txt; }
fs_rb() { sx fs "$K" read-bytes one.txt; }
dk_cat() { tb_docker exec "$CTR" cat "$WS/one.txt"; }
pair a.sbx a.docker fs_read dk_cat
compare "(a) read 1 MiB" "sbxcat fs read" a.sbx "docker exec cat" a.docker 0.5
pair b.sbx b.docker fs_rb dk_cat
compare "(b) read-bytes 1 MiB" "sbxcat fs read-bytes" b.sbx "docker exec cat" b.docker 0.5

# (c): 1 MiB of random bytes.
head -c 1048576 /dev/urandom >"$T/one.bin"
fs_write() { sx fs "$K" write w.bin <"$T/one.bin"; }
dk_cp() { tb_docker cp "$T/one.bin" "$CTR:$WS/cp.bin"; }
pair c.sbx c.docker fs_write dk_cp
cmp -s "$T/one.bin" "$WS/w.bin" || { echo "bench-fs: fs write did not write the bytes"; exit 1; }
compare "(c) write 1 MiB" "sbxcat fs write" c.sbx "docker cp" c.docker 0.5

# (d): 10,000 files of about 10 KB in 100 directories: 64 lines of text
# mixed per file, and a line naming the file (needle-NNNN) in each.
t0=$(now)
mkdir -p "$WS/g" && awk -v root="$WS/g" 'BEGIN {
	srand(7)
	split("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega rho tau", w, " ")
	for (l = 0; l < 64; l++) { s = ""; while (length(s) < 60) s = s w[1 + int(rand() * 13)] " "; line[l] = s }
	for (d = 0; d < 100; d++) {
		dir = sprintf("%s/d%02d", root, d); system("mkdir -p " dir)
		for (f = 0; f < 100; f++) {
			n = d * 100 + f; p = sprintf("%s/f%04d.txt", dir, n)
			for (k = 0; k < 160; k++) { if (k == 80) printf "needle-%04d here\n", n > p
				printf "%s\n", line[(n * 7 + k * 13) % 64] > p }
			close(p)
		} } }'
chown -R 10001:10001 "$WS/g"
echo "(d) tree: $(find "$WS/g" -type f | wc -l) files, $(du -sm "$WS/g" | cut -f 1) MB, made in $(elapsed "$t0" "$(now)") s"
G="--max-entries 20000 --max-count 100000000 --timeout 600"
# shellcheck disable=SC2086
fs_grep() { sx fs "$K" grep "$P" g $FL $G; }
# shellcheck disable=SC2086
host_grep() { grep -rn $GF "$P" "$WS/g"; }
# shellcheck disable=SC2086
host_rg() { rg -n $GF "$P" "$WS/g"; }
for pat in lit re; do
	if [ $pat = lit ]; then P=needle-7 FL=-F GF=-F; else P='ne+dle-[0-9]+7 h' FL="" GF=-E; fi
	fs_grep >"$T/g.sbx" 2>"$T/g.err"
	host_grep >"$T/g.host"
	if ! { [ "$(wc -l <"$T/g.sbx")" = "$(wc -l <"$T/g.host")" ] && [ -s "$T/g.host" ]; }; then
		echo "bench-fs: fs grep '$P' found $(wc -l <"$T/g.sbx") lines, grep -rn $(wc -l <"$T/g.host"):"
		head -n 3 "$T/g.err"
		exit 1
	fi
	pair "d.$pat.sbx" "d.$pat.grep" fs_grep host_grep
	compare "(d) grep $pat '$P' ($(wc -l <"$T/g.host") matches)" "sbxcat fs grep" "d.$pat.sbx" "grep -rn" "d.$pat.grep" 1.5
	if command -v rg >/dev/null; then
		rm -f "d.$pat.sbx"
		pair "d.$pat.sbx" "d.$pat.rg" fs_grep host_rg
		compare "(d) grep $pat '$P'" "sbxcat fs grep" "d.$pat.sbx" "rg -n" "d.$pat.rg"
	fi
done
[ -x "$(command -v rg)" ] || echo "(d) rg is not installed: no comparison with it"

# (e): 3,000 files 8 levels deep, every entry listed.
d=$WS/tree
for lv in 1 2 3 4 5 6 7 8; do
	mkdir -p "$d" && (cd "$d" && seq -f "f%g.txt" 1 375 | xargs touch)
	d=$d/d$lv
done
fs_ls() { sx fs "$K" ls tree -R --max-entries 10000 --max-depth 10; }
host_find() { find "$WS/tree"; }
pair e.sbx e.find fs_ls host_find
compare "(e) ls -R of 3,000 files" "sbxcat fs ls -R" e.sbx "find" e.find
exit $missed

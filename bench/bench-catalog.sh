#!/bin/sh
# bench/bench-catalog.sh - `sbxcat check` and `sbxcat generate` on a
# generated 1,000-entry catalogue: median wall time and peak RSS, beside
# `jq` parsing the same file (the least a user would otherwise run).
# Targets (issue 2): under 50 ms and 10 MiB each.
set -u
S=${SBXCAT:?SBXCAT must name the built binary}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
TIME=/usr/bin/time
[ -x $TIME ] || { echo "bench-catalog: /usr/bin/time missing (apt-get install time)"; exit 1; }

# 1,000 built entries, each with setup commands, packages, env and briefing.
awk 'BEGIN {
	print "["
	for (i = 0; i < 1000; i++) {
		printf "  {\"alias\": \"rt-%d\", \"description\": \"runtime number %d\", ", i, i
		printf "\"base_image\": \"debian:bookworm-slim\", "
		printf "\"setup_commands\": [\"apt-get update\", \"echo %d > /marker\"], ", i
		printf "\"packages\": [\"requests==2.32.%d\", \"pandas>=2,<3\", \"pyyaml\"], ", i % 10
		printf "\"env_vars\": {\"A\": \"%d\", \"B\": \"x y\"}, ", i
		printf "\"briefing\": [\"Sentence one.\", \"Sentence two.\"], "
		printf "\"mem_limit\": \"%dm\", \"needs_network\": %s}%s\n", 256 + i, i % 2 ? "true" : "false", i < 999 ? "," : ""
	}
	print "]"
}' >"$T/cat.json"
echo "catalogue: 1000 entries, $(wc -c <"$T/cat.json") bytes"

# median MS RSS over 11 runs of a command
measure() {
	for n in 1 2 3 4 5 6 7 8 9 10 11; do
		$TIME -f '%e %M' -o "$T/t" "$@" >/dev/null 2>&1
		cat "$T/t"
	done | sort -n | sed -n 6p | awk '{printf "%.0f %d", $1 * 1000, $2}'
}
report() { # label ms kib base_ms base_kib
	awk -v l="$1" -v ms="$2" -v kb="$3" -v bms="$4" -v bkb="$5" -v bl="$6" 'BEGIN {
		printf "%-28s %6d ms %7.1f MiB   %-14s %6d ms %7.1f MiB   time ratio %.2f\n",
			l, ms, kb / 1024, bl, bms, bkb / 1024, bms ? ms / bms : 0 }'
}
# /usr/bin/time rounds to 10 ms; take a finer reading from the shell too.
fine() {
	start=$(date +%s%N)
	for n in 1 2 3 4 5 6 7 8 9 10; do "$@" >/dev/null 2>&1; done
	echo $(( ($(date +%s%N) - start) / 10000000 ))
}

set -- $(measure "$S" check "$T/cat.json"); c_ms=$1 c_kb=$2
set -- $(measure jq -e 'type == "array"' "$T/cat.json"); j_ms=$1 j_kb=$2
report "sbxcat check" "$c_ms" "$c_kb" "$j_ms" "$j_kb" "jq parse"
set -- $(measure "$S" -C "$T/cat.json" generate -o "$T/out"); g_ms=$1 g_kb=$2
report "sbxcat generate (1000 files)" "$g_ms" "$g_kb" "$j_ms" "$j_kb" "jq parse"
echo "finer: check $(fine "$S" check "$T/cat.json") ms, generate (files up to date) $(fine "$S" -C "$T/cat.json" generate -o "$T/out") ms, jq $(fine jq -e 'type == "array"' "$T/cat.json") ms (mean of 10)"
# Writing 1,000 new files (each into a fresh directory), the cold case.
for n in 1 2 3 4 5; do
	$TIME -f '%e %M' -o "$T/t" "$S" -C "$T/cat.json" generate -o "$T/new$n" >/dev/null 2>&1
	cat "$T/t"; rm -rf "$T/new$n"
done | sort -n | sed -n 3p | awk '{printf "generate writing 1000 new files: %.0f ms, %.1f MiB (median of 5)\n", $1 * 1000, $2 / 1024}'
awk -v c="$c_ms" -v g="$g_ms" -v ck="$c_kb" -v gk="$g_kb" 'BEGIN {
	printf "targets: check %s (%d ms, %.1f MiB), generate %s (%d ms, %.1f MiB)\n",
		(c < 50 && ck < 10240) ? "met" : "MISSED", c, ck / 1024,
		(g < 50 && gk < 10240) ? "met" : "MISSED", g, gk / 1024 }'

# Scaling (issue 7): `check` once took time quadratic in the keys of one
# object, the env vars of an entry and the entries sharing an alias.  Each
# shape is timed at N and 4N; linear work takes about 4 times as long,
# quadratic 16 times.  The catalogues carry an error, so the position scan
# and the duplicate checks run too.
shape() { # shape KIND N: a catalogue on stdout
	awk -v kind="$1" -v n="$2" 'BEGIN {
		e = "{\"alias\": \"a\", \"description\": \"d\", \"image\": \"busybox:1\""
		printf "["
		if (kind == "env vars") {
			printf "%s, \"mem_limit\": \"1\", \"env_vars\": {", e
			for (i = 0; i < n; i++) printf "%s\"V%d\": \"x\"", i ? ", " : "", i
			printf "}}"
		} else if (kind == "duplicate env vars") {
			printf "%s, \"env_vars\": {", e
			for (i = 0; i < n; i++) printf "%s\"V%d\": \"x\"", i ? ", " : "", i % (n / 2)
			printf "}}"
		} else if (kind == "unknown keys") {
			printf "%s", e
			for (i = 0; i < n; i++) printf ", \"k%d\": 1", i
			printf "}"
		} else if (kind == "entries, one alias") {
			for (i = 0; i < n; i++) printf "%s%s}", i ? ",\n" : "", e
		}
		print "]"
	}'
}
median3() { # median3 CMD...: median wall time of 3 runs, in ms
	for n in 1 2 3; do
		start=$(date +%s%N)
		"$@" >/dev/null 2>&1
		echo $(( ($(date +%s%N) - start) / 1000000 ))
	done | sort -n | sed -n 2p
}
N=10000
worst=0
for kind in "env vars" "duplicate env vars" "unknown keys" "entries, one alias"; do
	shape "$kind" $N >"$T/s1.json"
	shape "$kind" $((4 * N)) >"$T/s4.json"
	t1=$(median3 "$S" check "$T/s1.json")
	t4=$(median3 "$S" check "$T/s4.json")
	awk -v k="$kind" -v n=$N -v a="$t1" -v b="$t4" 'BEGIN {
		printf "check, %-20s %6d: %6d ms   %6d: %6d ms   ratio %5.1f (linear 4, quadratic 16)\n",
			k, n, a, 4 * n, b, a ? b / a : 0 }'
	worst=$(awk -v w="$worst" -v a="$t1" -v b="$t4" 'BEGIN { r = a ? b / a : 0; print (r > w ? r : w) }')
done
awk -v w="$worst" 'BEGIN { printf "scaling: %s (worst ratio %.1f; above 8 is not linear)\n", w <= 8 ? "linear" : "RELAPSE", w }'

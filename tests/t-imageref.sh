#!/bin/sh
# t-imageref.sh - sbxcat holds image references to Docker's own grammar.
#
# tests/cases/image-refs.tab lists references and whether Docker accepts
# them.  For each one, `sbxcat check` must agree with the table; so must
# Docker itself, asked two ways that never leave the machine: the docker
# CLI's `pull`, which parses the reference (distribution/reference and
# go-digest, the engine's own libraries) before it connects, pointed at a
# socket that does not exist; and for references with a digest the engine,
# through `docker image inspect` (an invalid reference is refused, a valid
# one is merely absent).
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
tab="$srcdir/tests/cases/image-refs.tab"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
grep -v '^#' "$tab" >"$T/refs"

# One catalogue, one entry per reference; the diagnostics name the entry.
jq -R -s 'split("\n") | map(select(length > 0) | split("\t")) |
	to_entries | map({alias: ("r\(.key)"), description: "d",
	image: .value[1]})' "$T/refs" >"$T/cat.json"
"$S" check --json "$T/cat.json" >"$T/diags.json"
jq -r '.[] | select(.field == "image") | .entry' "$T/diags.json" >"$T/refused"

# Docker's CLI: a dead socket keeps it off the network and every engine.
cli=""
for c in /usr/bin/docker "$(command -v docker)"; do
	[ -n "$c" ] && [ -x "$c" ] && { cli=$c; break; }
done
cli_verdict() {
	c_out=$(DOCKER_HOST=unix:///nonexistent/sbxcat-imageref.sock \
		timeout 20 "$cli" pull -- "$1" 2>&1)
	case $c_out in
	*"Cannot connect to the Docker daemon"*) echo yes ;;
	*) echo no ;;
	esac
}
engine=no
testbed_docker >/dev/null 2>&1 && engine=yes
[ "$engine" = yes ] || diag "no engine: the engine's own verdicts are skipped"

tab_char=$(printf '\t')
i=0
while IFS="$tab_char" read -r want ref; do
	i=$((i + 1))
	shown=$(printf '%.70s' "$ref")
	got=yes
	grep -qx "$i" "$T/refused" && got=no
	is "$got" "$want" "sbxcat: '$shown' valid: $want"
	if [ -n "$cli" ]; then
		is "$(cli_verdict "$ref")" "$want" "docker CLI: '$shown' valid: $want"
	else
		skip "no docker CLI" "docker CLI: '$shown'"
	fi
	case $ref in
	*@*)
		if [ "$engine" = yes ]; then
			e_out=$(tb_docker image inspect "$ref" 2>&1 >/dev/null)
			case $e_out in
			*"No such image: $ref") e=yes ;;
			*) e=no ;;
			esac
			is "$e" "$want" "engine: '$shown' valid: $want"
		else
			skip "no engine" "engine: '$shown'"
		fi
		;;
	esac
done <"$T/refs"
done_testing

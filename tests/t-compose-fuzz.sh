#!/bin/sh
# t-compose-fuzz.sh - mutate compose files (the shipped ones, the golden
# inputs, hostile seeds full of aliases, anchors, merges, tags, BOMs and
# escaped NULs) and hold every `sbxcat compose` run to the rule: refused
# and byte-identical, or written so that PyYAML (docker-compose's loader)
# and compose's own config loader read exactly the new value and nothing
# else changed.  The fuzzer is tests/compose-fuzz.py; this runs a quick,
# fixed-seed round (SBXCAT_FUZZ_N mutants, default 300, seed
# SBXCAT_FUZZ_SEED); see docs/compose.md for a longer run.
set -u
S=${SBXCAT:?SBXCAT must name the built binary}
# docker-compose's own interpreter has PyYAML and compose's loader.
PY=
DC=$(command -v docker-compose) && PY=$(sed -n '1s/^#! *\([^ ]*\).*/\1/p' "$DC")
if [ -z "$PY" ] || ! "$PY" -c 'import yaml' 2>/dev/null; then
	PY=python3
	"$PY" -c 'import yaml' 2>/dev/null || {
		echo "1..0 # SKIP no Python with PyYAML (apt-get install python3-yaml): nothing to check the splice against"
		exit 0
	}
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset SBXCAT_CATALOG COMPOSE_FILE COMPOSE_PROJECT_NAME
"$PY" "$srcdir/tests/compose-fuzz.py" "$S" "$srcdir/tests/compose" "$T" \
	"${SBXCAT_FUZZ_N:-300}" "${SBXCAT_FUZZ_SEED:-7}"

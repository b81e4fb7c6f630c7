#!/bin/sh
# bench/bench.sh - `make bench`: run every bench/bench-*.sh in turn.
# Each prints its figures beside the tool a user would use instead, as
# ratios: these machines are shared and noisy, so absolute times drift.
set -u
here=$(cd "$(dirname "$0")" && pwd)
SBXCAT=${SBXCAT:-$here/../sbxcat}; export SBXCAT
rc=0
for b in "$here"/bench-*.sh; do
	echo "== $(basename "$b")"
	sh "$b" || rc=1
done
exit $rc

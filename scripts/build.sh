#!/bin/sh
# scripts/build.sh - configure (once) and build sbxcat in the source tree.
set -eu
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure --quiet
make -j"$(nproc)" >/dev/null

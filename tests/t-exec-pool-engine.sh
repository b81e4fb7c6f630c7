#!/bin/sh
# t-exec-pool-engine.sh - tests/t-exec-pool.sh (t-exec.sh on a session
# claimed from the warm pool), every case, with
# SBXCAT_EXEC_PATH=engine: commands started through the engine's exec, the
# fallback of issue 33's fast path, which the default (auto) takes only
# when the fast path cannot run; both paths pass the same suite.
: "${srcdir:?srcdir must name the source tree}"
SBXCAT_EXEC_PATH=engine
export SBXCAT_EXEC_PATH
exec sh "$srcdir/tests/t-exec-pool.sh"

#!/bin/sh
# t-exec-pool.sh - tests/t-exec.sh, every case, against a session claimed
# from the warm pool (issue 19: a claimed container passes exactly the
# checks a cold one passes).
: "${srcdir:?srcdir must name the source tree}"
SBX_EXEC_POOL=1
export SBX_EXEC_POOL
exec sh "$srcdir/tests/t-exec.sh"

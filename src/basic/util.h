/*
 * util.h - the umbrella for the layers every module uses: alloc.h (memory,
 * checked sizes, strbuf), text.h (UTF-8 and control characters), error.h,
 * fileio.h (limited reads, atomic writes, mkdir -p) and hash.h (SHA-256).
 *
 * New code includes the headers it needs; this one keeps older includes
 * compiling.  The layers, bottom up: alloc, then error and text (which use
 * only alloc), then fileio and hash.  Nothing below includes anything above.
 *
 * Thread rule: each header's own.
 */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/hash.h"
#include "basic/text.h"

#endif

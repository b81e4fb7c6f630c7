#!/bin/sh
# t-modules.sh - "modules never print" (style.md), checked: no object in
# src/libsbxcat.a (everything but cli/) may reference stdio output or the
# standard streams.  The fatal paths in alloc.c write to file descriptor 2
# with write(2), which this does not forbid: it is the one way out that
# needs no memory.  Nor, from svc/ down (brief section 10), the
# environment (configuration is read once, by cli/, into svc-config.h),
# signal dispositions or the process's exit: basic/sig.c is the program's
# one place for signals (main alone calls it), and session/procs.c's
# deadline watcher sets up its own process after its fork.
set -u
. "$srcdir/tests/tap.sh"
LIB=${LIB:-src/libsbxcat.a}
[ -f "$LIB" ] || skip_all "no $LIB: build first"
command -v nm >/dev/null || skip_all "nm is not installed (binutils)"

# The printing functions, with glibc's _FORTIFY_SOURCE variants.
FORBIDDEN='printf fprintf vprintf vfprintf dprintf vdprintf fputs puts
fwrite putchar putc fputc putchar_unlocked putc_unlocked fputc_unlocked
fputs_unlocked fwrite_unlocked perror psignal psiginfo error error_at_line
warn warnx vwarn vwarnx err errx verr verrx stdout stderr
__printf_chk __fprintf_chk __vprintf_chk __vfprintf_chk __dprintf_chk
__vdprintf_chk'

members=$(ar t "$LIB")
[ -n "$members" ]; ok $? "$LIB has members"
for m in $members; do
	bad=$(ar p "$LIB" "$m" >"${TMPDIR:-/tmp}/t-modules.$$.o" &&
		nm -u "${TMPDIR:-/tmp}/t-modules.$$.o" | awk '{print $NF}' |
		sed 's/@.*//' | while read -r sym; do
			for f in $FORBIDDEN; do
				[ "$sym" = "$f" ] && echo "$sym"
			done
		done | sort -u | tr '\n' ' ')
	is "$bad" "" "module ${m%.o} references no printing function or standard stream"
done

# What a library (and a service that runs many calls at once) may not do.
PROCESS='getenv secure_getenv signal sigaction exit _exit _Exit stdin'
for m in $members; do
	case $m in
	sig.o) continue ;;
	procs.o) allowed='signal sigaction _exit' ;;
	*) allowed= ;;
	esac
	bad=$(ar p "$LIB" "$m" >"${TMPDIR:-/tmp}/t-modules.$$.o" &&
		nm -u "${TMPDIR:-/tmp}/t-modules.$$.o" | awk '{print $NF}' |
		sed 's/@.*//' | while read -r sym; do
			for f in $PROCESS; do
				[ "$sym" = "$f" ] || continue
				case " $allowed " in *" $f "*) continue ;; esac
				echo "$sym"
			done
		done | sort -u | tr '\n' ' ')
	is "$bad" "" "module ${m%.o} reads no environment, sets no signal, never exits"
done
rm -f "${TMPDIR:-/tmp}/t-modules.$$.o"
done_testing

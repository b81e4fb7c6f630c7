/*
 * sig.h - the program's one place for signals.
 *
 * main() calls sig_init() once.  SIGINT, SIGTERM and SIGHUP (unless ignored
 * when the program started, as nohup and background jobs arrange) then only
 * record which signal came (the first one wins) in a C11 atomic that any
 * thread may read; every loop that can run long polls sig_caught() and
 * unwinds: temporary files removed, containers and builds left as they
 * are safe to leave.  The handler is SA_RESETHAND, so a second signal of
 * the same kind kills at once, as users expect of a second Ctrl-C.
 *
 * At the end main() calls sig_reraise(): when a signal was caught, its
 * default action is restored and it is raised again, so the parent sees
 * death by that signal (WIFSIGNALED), not an exit status that only looks
 * like one.  SIGPIPE keeps its default action.
 *
 * Thread rule: sig_init() and sig_reraise() are main's alone; the flag may
 * be read by any thread.
 */
#ifndef SBX_SIG_H
#define SBX_SIG_H

#include <stdatomic.h>

void sig_init(void);

/* The signal that asked the program to stop, or 0. */
int sig_caught(void);

/* The flag itself, for modules that take a cancel flag (the engine). */
const atomic_int *sig_flag(void);

/* The status a shell reports for death by the caught signal (128 + N). */
int sig_exit_status(void);

/* Forget the caught signal: for a command whose ordinary end it is
 * (`audit ls --follow`, as tail -f), which then exits 0 (the handler
 * stays reset: a second one kills). */
void sig_forget(void);

/* Re-raise the caught signal with its default action; returns when none
 * was caught (or the signal did not kill). */
void sig_reraise(void);

#endif

/*
 * tty.h - what the command line does differently on a terminal: how wide
 * it is, whether to colour, how many columns a text takes on it, and the
 * pager long output goes through (as git and journalctl do).
 *
 * The environment is read where each is asked: COLUMNS, NO_COLOR, TERM,
 * SBXCAT_PAGER, PAGER, LESS and the locale's variables.  Off a terminal
 * nothing here changes the output: a script reads whole lines, no colour,
 * no pager.
 *
 * Thread rule: the command line's one thread; the pager's state is a
 * static of this file (one pager per process).
 */
#ifndef SBX_TTY_H
#define SBX_TTY_H

#include <stdbool.h>
#include <stddef.h>

/* A terminal that cannot move the cursor or colour: TERM unset or "dumb"
 * (systemd's rule: an editor's shell buffer, a serial console). */
bool tty_dumb(void);

/* --color=WHEN. */
enum tty_when { TTY_AUTO, TTY_ALWAYS, TTY_NEVER };
/* "auto", "always", "never" into *when; -1 for anything else. */
int tty_parse_when(const char *arg, enum tty_when *when);

/*
 * Whether to colour what goes to fd: always, never, or (auto) when fd is
 * a terminal, NO_COLOR is unset or empty (no-color.org) and the terminal
 * is not dumb.
 */
bool tty_colour(int fd, enum tty_when when);
#define TTY_RED "\033[31m"
#define TTY_RESET "\033[m"

/* The width of the terminal fd is, in columns: COLUMNS when it is a
 * number above 0, else the terminal's (TIOCGWINSZ), else 80; 0 when fd is
 * not a terminal. */
size_t tty_columns(int fd);

/*
 * The columns s[0..len) (valid UTF-8, no control character: what
 * text_add_escaped makes) takes on a terminal: 2 for an East Asian wide
 * or fullwidth character, 0 for a combining mark or a zero-width one, else
 * 1.  tty_head and tty_tail: how many bytes of its start, and from which
 * byte its end, fit in cols columns, never splitting a character.
 */
size_t tty_width(const char *s, size_t len);
size_t tty_head(const char *s, size_t len, size_t cols);
size_t tty_tail(const char *s, size_t len, size_t cols);

/* sb (as tty_width takes) cut to w columns: in the middle (its start and
 * end kept, the ellipsis between) or at its end; as it is when it fits. */
struct strbuf;
void tty_cut(struct strbuf *sb, size_t w, bool middle);

/* The mark of a cut: "…" when the locale is UTF-8 (one column), else
 * "..."; tty_ellipsis_width its columns. */
const char *tty_ellipsis(void);
size_t tty_ellipsis_width(void);

/*
 * Standard output through a pager, when it is a terminal that is not
 * dumb and use: $SBXCAT_PAGER, else $PAGER, else "less -FRX" (LESS=FRX
 * set for it when LESS is unset: quit when the output fits one screen,
 * colours kept, the screen not cleared); an empty one or "cat" is none.
 * A pager that cannot be started is none: a warning when it was the
 * user's choice, silence for the default (no less installed).  While it
 * runs SIGPIPE is ignored, so the user quitting it early ends our
 * writes with EPIPE; tty_pager_end then waits for it, puts standard
 * output back and forgets that error, so the command ends quietly, with
 * its own status.  Returns whether a pager runs.
 */
bool tty_pager_start(bool use);
void tty_pager_end(void);

#endif

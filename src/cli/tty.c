/*
 * tty.c - the terminal's width, colour and pager (tty.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/text.h"
#include "cli/tty.h"

bool tty_dumb(void)
{
	const char *t = getenv("TERM");

	return !t || !*t || !strcmp(t, "dumb");
}

int tty_parse_when(const char *arg, enum tty_when *when)
{
	if (!strcmp(arg, "auto"))
		*when = TTY_AUTO;
	else if (!strcmp(arg, "always"))
		*when = TTY_ALWAYS;
	else if (!strcmp(arg, "never"))
		*when = TTY_NEVER;
	else
		return -1;
	return 0;
}

bool tty_colour(int fd, enum tty_when when)
{
	const char *no = getenv("NO_COLOR");

	if (when != TTY_AUTO)
		return when == TTY_ALWAYS;
	return isatty(fd) && !(no && *no) && !tty_dumb();
}

size_t tty_columns(int fd)
{
	const char *env = getenv("COLUMNS");
	unsigned long long n;
	struct winsize ws;

	if (!isatty(fd))
		return 0;
	if (env && text_parse_uint(env, 100000, &n) && n > 0)
		return (size_t)n;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* ---- widths ---- */

/* Ranges of code points, first and last. */
struct range {
	uint32_t lo, hi;
};

/* East Asian Wide and Fullwidth (UAX #11), in blocks: what terminals
 * draw in two cells. */
static const struct range wide[] = {
    {0x1100, 0x115F},	{0x231A, 0x231B},   {0x2329, 0x232A},
    {0x23E9, 0x23EC},	{0x23F0, 0x23F0},   {0x23F3, 0x23F3},
    {0x25FD, 0x25FE},	{0x2614, 0x2615},   {0x2648, 0x2653},
    {0x267F, 0x267F},	{0x2693, 0x2693},   {0x26A1, 0x26A1},
    {0x26AA, 0x26AB},	{0x26BD, 0x26BE},   {0x26C4, 0x26C5},
    {0x26CE, 0x26CE},	{0x26D4, 0x26D4},   {0x26EA, 0x26EA},
    {0x26F2, 0x26F3},	{0x26F5, 0x26F5},   {0x26FA, 0x26FA},
    {0x26FD, 0x26FD},	{0x2705, 0x2705},   {0x270A, 0x270B},
    {0x2728, 0x2728},	{0x274C, 0x274C},   {0x274E, 0x274E},
    {0x2753, 0x2755},	{0x2757, 0x2757},   {0x2795, 0x2797},
    {0x27B0, 0x27B0},	{0x27BF, 0x27BF},   {0x2B1B, 0x2B1C},
    {0x2B50, 0x2B50},	{0x2B55, 0x2B55},   {0x2E80, 0x303E},
    {0x3041, 0x33FF},	{0x3400, 0x4DBF},   {0x4E00, 0x9FFF},
    {0xA000, 0xA4CF},	{0xA960, 0xA97F},   {0xAC00, 0xD7A3},
    {0xF900, 0xFAFF},	{0xFE10, 0xFE19},   {0xFE30, 0xFE6F},
    {0xFF00, 0xFF60},	{0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4},
    {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004},
    {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A},
    {0x1F200, 0x1F251}, {0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF},
    {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF},
    {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

/* Combining marks and zero-width characters: no cell of their own. */
static const struct range zero[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A},
    {0x064B, 0x065F}, {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E},
    {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, {0x200B, 0x200F}, {0x20D0, 0x20FF},
    {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}, {0xE0100, 0xE01EF},
};

static bool in(const struct range *r, size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < r[mid].lo)
			hi = mid;
		else if (cp > r[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The cells of the character at s (its bytes in *len). */
static size_t cells(const char *s, size_t avail, size_t *len)
{
	uint32_t cp;

	*len = utf8_decode(s, avail, &cp);
	if (!*len) {
		*len = 1; /* not UTF-8: the caller's escaping prevents it */
		return 1;
	}
	if (in(zero, N(zero), cp))
		return 0;
	return in(wide, N(wide), cp) ? 2 : 1;
}

size_t tty_width(const char *s, size_t len)
{
	size_t w = 0, off = 0, k;

	while (off < len) {
		w += cells(s + off, len - off, &k);
		off += k;
	}
	return w;
}

size_t tty_head(const char *s, size_t len, size_t cols)
{
	size_t w = 0, off = 0, k;

	while (off < len) {
		size_t c = cells(s + off, len - off, &k);

		if (w + c > cols)
			break;
		w += c;
		off += k;
	}
	/* Combining marks after the last character kept stay with it. */
	while (off < len && cells(s + off, len - off, &k) == 0)
		off += k;
	return off;
}

size_t tty_tail(const char *s, size_t len, size_t cols)
{
	size_t w = 0, at = len;

	/* Walk back a character at a time: skip continuation bytes. */
	while (at > 0) {
		size_t start = at - 1, k, c;

		while (start > 0 && ((unsigned char)s[start] & 0xC0) == 0x80)
			start--;
		c = cells(s + start, at - start, &k);
		if (w + c > cols)
			break;
		w += c;
		at = start;
	}
	/* A tail never starts with a mark whose character was cut off. */
	while (at < len) {
		size_t k;

		if (cells(s + at, len - at, &k) != 0)
			break;
		at += k;
	}
	return at;
}

/* The locale's character set is UTF-8 (LC_ALL, else LC_CTYPE, else LANG,
 * as setlocale would choose), so "…" shows as one. */
static bool utf8_locale(void)
{
	static const char *const vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};

	for (size_t i = 0; i < N(vars); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
	}
	return false;
}

const char *tty_ellipsis(void)
{
	return utf8_locale() ? "\xe2\x80\xa6" : "...";
}

size_t tty_ellipsis_width(void)
{
	return utf8_locale() ? 1 : 3;
}

/* ---- the pager ---- */

static pid_t pager_pid = -1;
static int pager_saved = -1; /* standard output before the pager */
static void (*pager_sigpipe)(int);

/* Characters that make a pager's command a shell's to run. */
#define SHELL_CHARS "|&;<>()$`\\\"'*?[]#~=%{}\n"

/* In the child: run the pager on fd 0, or write errno to status. */
static void pager_exec(const char *cmd, int status)
{
	int e;

	if (!getenv("LESS"))
		setenv("LESS", "FRX", 1);
	if (!getenv("LV"))
		setenv("LV", "-c", 1);
	if (strpbrk(cmd, SHELL_CHARS)) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	} else {
		/* Words split on blanks, run without a shell: a pager that
		 * is not installed is then known here, and said. */
		char *copy = xstrdup(cmd), *save = NULL, *w;
		char **argv = xcalloc(strlen(cmd) / 2 + 2, sizeof(*argv));
		size_t n = 0;

		for (w = strtok_r(copy, " \t", &save); w;
		     w = strtok_r(NULL, " \t", &save))
			argv[n++] = w;
		if (n)
			execvp(argv[0], argv);
		errno = n ? errno : ENOENT;
	}
	e = errno;
	if (write(status, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

bool tty_pager_start(bool use)
{
	const char *cmd = getenv("SBXCAT_PAGER");
	bool chosen = true;
	int data[2], status[2], e = 0;
	ssize_t got;
	pid_t pid;

	if (!cmd)
		cmd = getenv("PAGER");
	if (!cmd) {
		cmd = "less -FRX";
		chosen = false;
	}
	if (!use || pager_pid > 0 || !*cmd || !strcmp(cmd, "cat") ||
	    !isatty(STDOUT_FILENO) || tty_dumb())
		return false;
	if (pipe2(data, O_CLOEXEC) < 0)
		return false;
	if (pipe2(status, O_CLOEXEC) < 0) {
		close(data[0]);
		close(data[1]);
		return false;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(data[1]);
		close(status[0]);
		if (dup2(data[0], STDIN_FILENO) < 0) {
			e = errno;
			if (write(status[1], &e, sizeof(e)) < 0)
				_exit(127);
			_exit(127);
		}
		pager_exec(cmd, status[1]);
	}
	close(data[0]);
	close(status[1]);
	if (pid < 0) {
		close(data[1]);
		close(status[0]);
		return false;
	}
	/* The status pipe closes on a successful exec: nothing to read. */
	do
		got = read(status[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	close(status[0]);
	if (got > 0) {
		close(data[1]);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (chosen)
			fprintf(stderr,
				"sbxcat: warning: cannot run the pager '%s': "
				"%s; writing to the terminal\n",
				cmd, strerror(e));
		return false;
	}
	pager_saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (pager_saved < 0 || dup2(data[1], STDOUT_FILENO) < 0) {
		/* No way to put stdout back: without the pager, then. */
		if (pager_saved >= 0)
			close(pager_saved);
		pager_saved = -1;
		close(data[1]);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return false;
	}
	close(data[1]);
	pager_pid = pid;
	pager_sigpipe = signal(SIGPIPE, SIG_IGN);
	return true;
}

void tty_pager_end(void)
{
	if (pager_pid <= 0)
		return;
	/* EPIPE here is the user having quit the pager: not an error. */
	fflush(stdout);
	clearerr(stdout);
	dup2(pager_saved, STDOUT_FILENO); /* closes the pipe: the pager's EOF */
	close(pager_saved);
	pager_saved = -1;
	while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
		;
	pager_pid = -1;
	signal(SIGPIPE, pager_sigpipe);
}

void tty_cut(struct strbuf *sb, size_t w, bool middle)
{
	size_t e = tty_ellipsis_width(), head, tail;
	struct strbuf cut = STRBUF_INIT;

	if (tty_width(sb->buf, sb->len) <= w)
		return;
	if (w <= e) {
		strbuf_setlen(sb, tty_head(sb->buf, sb->len, w));
		return;
	}
	if (middle) {
		head = tty_head(sb->buf, sb->len, (w - e + 1) / 2);
		tail = tty_tail(sb->buf, sb->len,
				w - e - tty_width(sb->buf, head));
	} else {
		head = tty_head(sb->buf, sb->len, w - e);
		tail = sb->len;
	}
	strbuf_add(&cut, sb->buf, head);
	strbuf_addstr(&cut, tty_ellipsis());
	strbuf_add(&cut, sb->buf + tail, sb->len - tail);
	strbuf_reset(sb);
	strbuf_add(sb, cut.buf, cut.len);
	strbuf_release(&cut);
}

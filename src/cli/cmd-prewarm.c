/*
 * cmd-prewarm.c - sbxcat prewarm [ALIAS...] [-j N] [--force] [--push
 * REGISTRY] [--json]: pull the image entries and build the built entries
 * the engine does not have yet (from SBXCAT_REGISTRY when it is set), so
 * that no session ever waits for a build; with --push, push the built
 * ones to a registry for the other hosts.
 *
 * The work is svc-prewarm.c's (and prewarm.c's below it); this file
 * chooses the runtimes, talks to the user while it runs (a live display
 * on a terminal, plain lines in a log, nothing but the JSON report with
 * --json) and prints the report.  The same display shows the prewarm a
 * session open makes (cmd_prewarm_watch).  Ctrl-C cancels: the transfers
 * in flight are aborted, which makes the engine abandon those builds, and
 * the report still says what finished; a second Ctrl-C kills at once.
 * Signals are sig.h's; the status on a cancel is sig_exit_status(), and
 * main() re-raises the signal.
 *
 * The display runs on the operation's thread, from snapshots, never under
 * the lock the workers need: a stderr that does not drain (a paused
 * terminal, a full pipe) holds up the display and nothing else.  Build
 * output reaches it made printable by the engine's decoder; error text is
 * escaped again here before it reaches a terminal.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/sig.h"
#include "basic/text.h"
#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "cli/tty.h"
#include "svc/svc-prewarm.h"

/* Often enough to look alive, rarely enough to cost nothing. */
#define TICK_TTY_MS 100

/* What the user sees while it runs. */
struct display {
	enum { SHOW_NONE, SHOW_PLAIN, SHOW_TTY } mode;
	bool report;  /* the report on stderr at the end */
	size_t drawn; /* lines of the live area on screen */
	unsigned spin;
	/* per job, what a plain log has said already */
	svc_prewarm_state *said_state;
	int *said_step;
};

static void term_size(int *cols, int *rows)
{
	struct winsize ws;

	*cols = 80;
	*rows = 24;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row > 0 ? ws.ws_row : 24;
	}
}

/* One line of the live area, cut to the terminal's width. */
static void tty_line(struct strbuf *out, int cols, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tty_line(struct strbuf *out, int cols, const char *fmt, ...)
{
	va_list ap;
	char *s;
	size_t n;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	n = strlen(s);
	if (cols > 1 && n > (size_t)cols - 1)
		n = utf8_whole(s, (size_t)cols - 1);
	strbuf_addstr(out, "\r\033[K");
	strbuf_add(out, s, n);
	strbuf_addch(out, '\n');
	free(s);
}

static void job_tty_line(struct strbuf *out, int cols, size_t w,
			 const char *alias, const svc_prewarm_snap *j,
			 long long now, char spin)
{
	double secs =
	    j->started_ms ? (double)(now - j->started_ms) / 1000.0 : 0;

	if (svc_prewarm_done(j->state)) {
		tty_line(out, cols, "  %-*s %-9s %5.1fs", (int)w, alias,
			 svc_prewarm_state_name(j->state),
			 (double)j->ms / 1000.0);
	} else if (j->state == SVC_PREWARM_WAITING) {
		tty_line(out, cols, "  %-*s waiting", (int)w, alias);
	} else if (j->state == SVC_PREWARM_BUILDING && j->nsteps) {
		tty_line(out, cols, "%c %-*s %-9s %5.1fs step %d/%d %s%s%s",
			 spin, (int)w, alias, "building", secs, j->step,
			 j->nsteps, j->step_text, j->current[0] ? " | " : "",
			 j->current);
	} else {
		tty_line(out, cols, "%c %-*s %-9s %5.1fs %s", spin, (int)w,
			 alias, svc_prewarm_state_name(j->state), secs,
			 j->current);
	}
}

static size_t alias_width(const svc_prewarm_job *jobs, size_t n)
{
	size_t w = 5;
	for (size_t i = 0; i < n; i++)
		if (strlen(jobs[i].rt->alias) > w)
			w = strlen(jobs[i].rt->alias);
	return w;
}

/*
 * Redraw the live area in place: every runtime when they fit on the
 * screen, else the ones at work and a count of the rest.
 */
static void tty_draw(struct display *d, const struct svc_prewarm_progress *pr)
{
	static const char spinner[] = "|/-\\";
	const svc_prewarm_snap *snap = pr->snap;
	struct strbuf out = STRBUF_INIT;
	int cols, rows;
	size_t n = pr->n, w = alias_width(pr->jobs, n), lines = 0,
	       counts[SVC_PREWARM_CANCELLED + 1] = {0};
	long long now = clock_now_ms();
	char spin = spinner[d->spin++ / 2 % 4];

	term_size(&cols, &rows);
	if (d->drawn)
		strbuf_addf(&out, "\033[%zuA", d->drawn);
	for (size_t i = 0; i < n; i++)
		counts[snap[i].state]++;
	for (size_t i = 0; i < n; i++) {
		const svc_prewarm_snap *j = &snap[i];
		bool busy = !svc_prewarm_done(j->state) &&
			    j->state != SVC_PREWARM_WAITING;
		if (n + 1 <= (size_t)rows - 1 || busy) {
			job_tty_line(&out, cols, w, pr->jobs[i].rt->alias, j,
				     now, spin);
			lines++;
		}
	}
	tty_line(
	    &out, cols,
	    "  %zu/%zu done: %zu built, %zu pulled, %zu cached, %zu pushed, "
	    "%zu failed",
	    n - counts[SVC_PREWARM_WAITING] - counts[SVC_PREWARM_CHECKING] -
		counts[SVC_PREWARM_PULLING] - counts[SVC_PREWARM_BUILDING] -
		counts[SVC_PREWARM_PUSHING],
	    n, counts[SVC_PREWARM_BUILT], counts[SVC_PREWARM_PULLED],
	    counts[SVC_PREWARM_CACHED],
	    counts[SVC_PREWARM_PUSHED] + counts[SVC_PREWARM_PRESENT],
	    counts[SVC_PREWARM_FAILED]);
	lines++;
	/* Fewer lines than last time: clear what is left below. */
	strbuf_addstr(&out, "\033[J");
	fwrite(out.buf, 1, out.len, stderr);
	fflush(stderr);
	d->drawn = lines;
	strbuf_release(&out);
}

static void tty_clear(struct display *d)
{
	if (d->drawn)
		fprintf(stderr, "\033[%zuA\r\033[J", d->drawn);
	fflush(stderr);
	d->drawn = 0;
}

/* A log gets a line when a runtime starts work and at each build step. */
static void plain_event(struct display *d, const svc_prewarm_job *jobs,
			const svc_prewarm_event *ev)
{
	const svc_prewarm_job *j = &jobs[ev->job];

	if (ev->state != d->said_state[ev->job]) {
		d->said_state[ev->job] = ev->state;
		if (ev->state == SVC_PREWARM_PULLING)
			fprintf(stderr, "%s: pulling %s\n", j->rt->alias,
				j->tag);
		else if (ev->state == SVC_PREWARM_BUILDING)
			fprintf(stderr, "%s: building %s\n", j->rt->alias,
				j->tag);
		else if (ev->state == SVC_PREWARM_PUSHING)
			fprintf(stderr, "%s: pushing %s\n", j->rt->alias,
				j->tag);
	}
	if (ev->state == SVC_PREWARM_BUILDING && ev->step &&
	    ev->step != d->said_step[ev->job]) {
		d->said_step[ev->job] = ev->step;
		fprintf(stderr, "%s: step %d/%d : %s\n", j->rt->alias, ev->step,
			ev->nsteps, ev->step_text);
	}
}

/*
 * Print a possibly multi-line message, every line indented and escaped:
 * the engine's messages are escaped already, this is the backstop for a
 * message made elsewhere that quotes one.
 */
static void print_indented(FILE *f, const char *indent, const char *msg)
{
	struct strbuf sb = STRBUF_INIT;

	while (*msg) {
		size_t n = strcspn(msg, "\n");
		sb.len = 0;
		text_add_escaped(&sb, msg, n);
		fprintf(f, "%s%s\n", indent, strbuf_str(&sb));
		msg += n + (msg[n] == '\n');
	}
	strbuf_release(&sb);
}

static void print_report(FILE *f, const svc_prewarm_job *jobs, size_t n)
{
	size_t w = alias_width(jobs, n),
	       counts[SVC_PREWARM_CANCELLED + 1] = {0};
	static const svc_prewarm_state order[] = {
	    SVC_PREWARM_BUILT,	   SVC_PREWARM_PULLED,	SVC_PREWARM_CACHED,
	    SVC_PREWARM_PUSHED,	   SVC_PREWARM_PRESENT, SVC_PREWARM_FAILED,
	    SVC_PREWARM_CANCELLED,
	};
	const char *sep = "";

	for (size_t i = 0; i < n; i++) {
		const svc_prewarm_job *j = &jobs[i];

		counts[j->state]++;
		fprintf(f, "%-*s  %-9s %6.1f s  %s\n", (int)w, j->rt->alias,
			svc_prewarm_state_name(j->state),
			(double)j->ms / 1000.0, j->tag);
		if (j->error)
			print_indented(f, "    ", j->error);
		if (j->failed_step)
			fprintf(f, "    at %s\n", j->failed_step);
		for (size_t k = 0; k < j->noutput; k++)
			fprintf(f, "    | %s\n", j->output[k]);
		for (size_t k = 0; k < j->nremoved; k++)
			fprintf(f, "    removed superseded %s\n", j->removed[k]);
		for (size_t k = 0; k < j->nkept; k++)
			fprintf(f, "    kept superseded %s: %s\n",
				j->kept[k].tag, j->kept[k].why);
		for (size_t k = 0; k < j->nnotes; k++)
			print_indented(f, "    ", j->notes[k]);
	}
	fprintf(f, "%zu runtime%s:", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!counts[order[i]])
			continue;
		fprintf(f, "%s %zu %s", sep, counts[order[i]],
			svc_prewarm_state_name(order[i]));
		sep = ",";
	}
	fprintf(f, "%s\n", *sep ? "" : " nothing to do");
}

/* The operation's progress callback: this may block on stderr. */
static void progress(void *arg, const struct svc_prewarm_progress *pr)
{
	struct display *d = arg;

	switch (pr->phase) {
	case SVC_PREWARM_START:
		d->said_state =
		    xcalloc(pr->n ? pr->n : 1, sizeof(*d->said_state));
		d->said_step =
		    xcalloc(pr->n ? pr->n : 1, sizeof(*d->said_step));
		if (pr->image && pr->n)
			fprintf(stderr,
				"sbxcat: the engine has no %s yet; prewarming "
				"'%s'\n",
				pr->image, pr->jobs[0].rt->alias);
		break;
	case SVC_PREWARM_UPDATE:
		if (d->mode == SHOW_TTY) {
			tty_draw(d, pr);
			break;
		}
		/* The log fell behind (stderr not read): say so, and go on
		 * from the events that were kept. */
		if (pr->lost)
			fprintf(stderr,
				"prewarm: %llu progress line%s not shown: "
				"standard error was not being read\n",
				pr->lost, pr->lost == 1 ? "" : "s");
		for (size_t i = 0; i < pr->nevents; i++)
			plain_event(d, pr->jobs, &pr->events[i]);
		fflush(stderr);
		break;
	case SVC_PREWARM_DONE:
		if (d->mode == SHOW_TTY)
			tty_clear(d);
		if (d->report)
			print_report(stderr, pr->jobs, pr->n);
		break;
	}
}

void cmd_prewarm_watch(struct svc_prewarm_watch *w, bool report)
{
	struct display *d = xcalloc(1, sizeof(*d));

	/* A dumb terminal cannot move the cursor: it gets a log's lines.
	 * (The display has no colour, so NO_COLOR changes nothing.) */
	d->mode = isatty(STDERR_FILENO) && !tty_dumb() ? SHOW_TTY : SHOW_PLAIN;
	d->report = report;
	w->progress = progress;
	w->arg = d;
	w->tick_ms = d->mode == SHOW_TTY ? TICK_TTY_MS : 0;
}

void cmd_prewarm_unwatch(struct svc_prewarm_watch *w)
{
	struct display *d = w->arg;

	if (d) {
		free(d->said_state);
		free(d->said_step);
		free(d);
	}
	memset(w, 0, sizeof(*w));
}

/* 0 ok, 128+N cancelled, 3 when what serves it failed, else 1. */
static int exit_status(const struct svc_prewarm_res *res)
{
	if (sig_caught() || res->cancelled)
		return sig_exit_status();
	return res->failed ? cmd_kind_exit(res->failed_kind) : SBX_EXIT_OK;
}

struct prewarm_opts {
	const char *jobs;
	const char *push;
	bool force;
	unsigned long long timeout;
	bool has_timeout;
};

static const struct cmd_option prewarm_options[] = {
    CMD_STRING("jobs", 'j', struct prewarm_opts, jobs, 0),
    CMD_STRING("push", 0, struct prewarm_opts, push, 0),
    CMD_FLAG("force", 0, struct prewarm_opts, force, 0),
    CMD_COUNT("timeout", struct prewarm_opts, timeout, has_timeout,
	      7 * 86400ULL, 0),
    CMD_OPTIONS_END,
};

/* The runtimes named (every one when none is), in catalogue order. */
static int choose(const struct catalog *cat, int nargs, char **args,
		  const struct runtime ***rts, size_t *n)
{
	bool *chosen = xcalloc(cat->n ? cat->n : 1, sizeof(*chosen));

	*rts = xcalloc(cat->n ? cat->n : 1, sizeof(**rts));
	*n = 0;
	for (int i = 0; i < nargs; i++) {
		const struct runtime *rt = cmd_find_runtime(cat, args[i]);

		if (!rt) {
			free(chosen);
			return SBX_EXIT_FAIL;
		}
		chosen[rt - cat->rt] = true;
	}
	for (size_t i = 0; i < cat->n; i++)
		if (!nargs || chosen[i])
			(*rts)[(*n)++] = &cat->rt[i];
	free(chosen);
	return 0;
}

static int cmd_prewarm(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	const struct prewarm_opts *o = opts;
	struct svc_prewarm_req req = {
	    .force = o->force,
	    .timeout_s = o->has_timeout ? (long)o->timeout : 0,
	    .push = o->push,
	};
	struct svc_prewarm_res res;
	struct sbx_error *err = NULL;
	const struct runtime **rts = NULL;
	unsigned long long jobs = 0;
	struct catalog cat;
	int rc = 0;

	if (o->jobs)
		rc = cmd_parse_count(&cmd_prewarm_entry, "-j", o->jobs,
				     SVC_PREWARM_JOBS_MAX, &jobs);
	if (rc)
		return rc;
	req.jobs = (unsigned)jobs;
	catalog_init(&cat);
	rc = cmd_load_catalog(ctx, NULL, &cat);
	if (!rc)
		rc = choose(&cat, nargs, args, &rts, &req.n);
	if (rc)
		goto out;
	req.runtimes = rts;
	/* Harmless when main() called it already. */
	sig_init();
	if (!ctx->json)
		cmd_prewarm_watch(&req.watch, false);
	if (svc_prewarm(&ctx->svc, &ctx->call, &req, &res, &err) < 0) {
		if (err->errnum == ECANCELED) {
			sbx_error_free(&err);
			rc = sig_exit_status();
		} else {
			rc = cmd_report(&err);
		}
		goto out;
	}
	if (ctx->json)
		cmd_print_json(steal_pointer(&res.doc));
	else
		print_report(stdout, res.jobs, res.n);
	fflush(stdout);
	rc = exit_status(&res);
	svc_prewarm_res_release(&res);
out:
	cmd_prewarm_unwatch(&req.watch);
	free(rts);
	catalog_release(&cat);
	return rc;
}

const struct cmd_entry cmd_prewarm_entry = {
    .name = "prewarm",
    .usage = "[ALIAS...] [-j N] [--force] [--timeout S] [--push REGISTRY] "
	     "[--json]",
    .summary = "build or pull every runtime the engine does not have yet",
    .options = prewarm_options,
    .opts_size = sizeof(struct prewarm_opts),
    .max_args = -1,
    .needs = CMD_NEEDS_CALL,
    .run = cmd_prewarm,
};

/*
 * cmd-prewarm.c - sbxcat prewarm [ALIAS...] [-j N] [--force] [--json]:
 * pull the image entries and build the built entries the engine does not
 * have yet, so that no session ever waits for a build.
 *
 * The work is prewarm.c's; this file chooses the runtimes, talks to the
 * user while it runs (a live display on a terminal, plain lines in a log,
 * nothing but the JSON report with --json) and prints the report.  Ctrl-C
 * cancels: the transfers in flight are aborted, which makes the engine
 * abandon those builds, and the report still says what finished; a second
 * Ctrl-C kills at once.  Signals are sig.h's; the status on a cancel is
 * sig_exit_status(), and main() re-raises the signal.
 *
 * The display runs on prewarm_run()'s thread, from snapshots, never under
 * the lock the workers need: a stderr that does not drain (a paused
 * terminal, a full pipe) holds up the display and nothing else.  Build
 * output reaches it made printable by the engine's decoder; error text is
 * escaped again here before it reaches a terminal.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "catalog/deployment.h"
#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "engine/engine.h"
#include "basic/error.h"
#include "engine/prewarm.h"
#include "basic/sig.h"
#include "basic/util.h"
#include "basic/xjson.h"

#define JOBS_MAX 64
/* Often enough to look alive, rarely enough to cost nothing. */
#define TICK_TTY_MS 100

/* What the user sees while it runs. */
struct display {
	enum { SHOW_NONE, SHOW_PLAIN, SHOW_TTY } mode;
	size_t drawn; /* lines of the live area on screen */
	long long drawn_ms;
	unsigned spin;
	/* per job, what a plain log has said already */
	enum prewarm_state *said_state;
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
			 const char *alias, const struct prewarm_snap *j,
			 long long now, char spin)
{
	double secs =
	    j->started_ms ? (double)(now - j->started_ms) / 1000.0 : 0;

	if (prewarm_done(j->state)) {
		tty_line(out, cols, "  %-*s %-9s %5.1fs", (int)w, alias,
			 prewarm_state_name(j->state), (double)j->ms / 1000.0);
	} else if (j->state == PREWARM_WAITING) {
		tty_line(out, cols, "  %-*s waiting", (int)w, alias);
	} else if (j->state == PREWARM_BUILDING && j->nsteps) {
		tty_line(out, cols, "%c %-*s %-9s %5.1fs step %d/%d %s%s%s",
			 spin, (int)w, alias, "building", secs, j->step,
			 j->nsteps, j->step_text, j->current[0] ? " | " : "",
			 j->current);
	} else {
		tty_line(out, cols, "%c %-*s %-9s %5.1fs %s", spin, (int)w,
			 alias, prewarm_state_name(j->state), secs, j->current);
	}
}

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t alias_width(const struct prewarm *p)
{
	size_t w = 5;
	for (size_t i = 0; i < p->n; i++)
		if (strlen(p->jobs[i].rt->alias) > w)
			w = strlen(p->jobs[i].rt->alias);
	return w;
}

/*
 * Redraw the live area in place: every runtime when they fit on the
 * screen, else the ones at work and a count of the rest.
 */
static void tty_draw(struct display *d, const struct prewarm *p,
		     const struct prewarm_snap *snap)
{
	static const char spinner[] = "|/-\\";
	struct strbuf out = STRBUF_INIT;
	int cols, rows;
	size_t w = alias_width(p), lines = 0,
	       counts[PREWARM_CANCELLED + 1] = {0};
	long long now = mono_ms();
	char spin = spinner[d->spin++ / 2 % 4];

	term_size(&cols, &rows);
	if (d->drawn)
		strbuf_addf(&out, "\033[%zuA", d->drawn);
	for (size_t i = 0; i < p->n; i++)
		counts[snap[i].state]++;
	for (size_t i = 0; i < p->n; i++) {
		const struct prewarm_snap *j = &snap[i];
		bool busy =
		    !prewarm_done(j->state) && j->state != PREWARM_WAITING;
		if (p->n + 1 <= (size_t)rows - 1 || busy) {
			job_tty_line(&out, cols, w, p->jobs[i].rt->alias, j,
				     now, spin);
			lines++;
		}
	}
	tty_line(
	    &out, cols,
	    "  %zu/%zu done: %zu built, %zu pulled, %zu cached, %zu failed",
	    p->n - counts[PREWARM_WAITING] - counts[PREWARM_CHECKING] -
		counts[PREWARM_PULLING] - counts[PREWARM_BUILDING],
	    p->n, counts[PREWARM_BUILT], counts[PREWARM_PULLED],
	    counts[PREWARM_CACHED], counts[PREWARM_FAILED]);
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
static void plain_event(struct display *d, const struct prewarm *p,
			const struct prewarm_event *ev)
{
	const struct prewarm_job *j = &p->jobs[ev->job];

	if (ev->state != d->said_state[ev->job]) {
		d->said_state[ev->job] = ev->state;
		if (ev->state == PREWARM_PULLING)
			fprintf(stderr, "%s: pulling %s\n", j->rt->alias,
				j->tag);
		else if (ev->state == PREWARM_BUILDING)
			fprintf(stderr, "%s: building %s\n", j->rt->alias,
				j->tag);
	}
	if (ev->state == PREWARM_BUILDING && ev->step &&
	    ev->step != d->said_step[ev->job]) {
		d->said_step[ev->job] = ev->step;
		fprintf(stderr, "%s: step %d/%d : %s\n", j->rt->alias, ev->step,
			ev->nsteps, ev->step_text);
	}
}

/* Called by prewarm_run() without its lock: this may block on stderr. */
static void notify(void *ctx, const struct prewarm *p,
		   const struct prewarm_snap *snap,
		   const struct prewarm_event *events, size_t nevents,
		   unsigned long long lost)
{
	struct display *d = ctx;

	if (d->mode == SHOW_TTY) {
		tty_draw(d, p, snap);
	} else if (d->mode == SHOW_PLAIN) {
		/* The log fell behind (stderr not read): say so, and go on
		 * from the events that were kept. */
		if (lost)
			fprintf(stderr,
				"prewarm: %llu progress line%s not shown: "
				"standard error was not being read\n",
				lost, lost == 1 ? "" : "s");
		for (size_t i = 0; i < nevents; i++)
			plain_event(d, p, &events[i]);
		fflush(stderr);
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

static void print_report(FILE *f, const struct prewarm *p)
{
	size_t w = alias_width(p), counts[PREWARM_CANCELLED + 1] = {0};
	static const enum prewarm_state order[] = {
	    PREWARM_BUILT,  PREWARM_PULLED,    PREWARM_CACHED,
	    PREWARM_FAILED, PREWARM_CANCELLED,
	};
	const char *sep = "";

	for (size_t i = 0; i < p->n; i++) {
		const struct prewarm_job *j = &p->jobs[i];

		counts[j->state]++;
		fprintf(f, "%-*s  %-9s %6.1f s  %s\n", (int)w, j->rt->alias,
		       prewarm_state_name(j->state), (double)j->ms / 1000.0,
		       j->tag);
		if (j->error)
			print_indented(f, "    ", j->error);
		if (j->failed_step)
			fprintf(f, "    at %s\n", j->failed_step);
		for (size_t k = 0; k < j->noutput; k++)
			fprintf(f, "    | %s\n", j->output[k]);
		for (size_t k = 0; k < j->nremoved; k++)
			fprintf(f, "    removed superseded %s\n", j->removed[k]);
		for (size_t k = 0; k < j->nkept; k++)
			fprintf(f, "    kept superseded %s: %s\n", j->kept[k].tag,
			       j->kept[k].why);
	}
	fprintf(f, "%zu runtime%s:", p->n, p->n == 1 ? "" : "s");
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!counts[order[i]])
			continue;
		fprintf(f, "%s %zu %s", sep, counts[order[i]],
		       prewarm_state_name(order[i]));
		sep = ",";
	}
	fprintf(f, "%s\n", *sep ? "" : " nothing to do");
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, xjson_text(v[i]));
	return a;
}

static json_t *report_json(const struct prewarm *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->n; i++) {
		const struct prewarm_job *j = &p->jobs[i];
		json_t *kept = json_array();

		for (size_t k = 0; k < j->nkept; k++)
			json_array_append_new(
			    kept,
			    xjson_pack("{s:o, s:o}", "tag",
				       xjson_text(j->kept[k].tag), "reason",
				       xjson_text(j->kept[k].why)));
		json_array_append_new(
		    arr,
		    xjson_pack(
			"{s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, "
			"s:o, s:o}",
			"alias", j->rt->alias, "kind",
			j->dockerfile ? "built" : "image", "tag", j->tag,
			"result", prewarm_state_name(j->state), "ms",
			(json_int_t)j->ms, "error",
			j->error ? xjson_text(j->error) : json_null(), "step",
			j->failed_step ? xjson_text(j->failed_step)
				       : json_null(),
			"output", strv_json(j->output, j->noutput), "removed",
			strv_json(j->removed, j->nremoved), "kept", kept));
	}
	return arr;
}

/* 0 ok, 128+N cancelled, 3 when the engine itself failed, else 1. */
static int exit_status(const struct prewarm *p)
{
	int rc = SBX_EXIT_OK;

	if (sig_caught())
		return sig_exit_status();
	for (size_t i = 0; i < p->n; i++) {
		const struct prewarm_job *j = &p->jobs[i];
		if (j->state == PREWARM_CANCELLED)
			return sig_exit_status();
		if (j->state != PREWARM_FAILED)
			continue;
		if (cmd_kind_exit(j->error_kind) == SBX_EXIT_ENV)
			rc = SBX_EXIT_ENV;
		else if (rc == SBX_EXIT_OK)
			rc = SBX_EXIT_FAIL;
	}
	return rc;
}

/* Run p with d's display (d->mode chosen) and clear it at the end. */
static void run_shown(struct prewarm *p, struct display *d)
{
	p->notify = notify;
	p->ctx = d;
	p->tick_ms = d->mode == SHOW_TTY ? TICK_TTY_MS : 0;
	prewarm_run(p);
	if (d->mode == SHOW_TTY)
		tty_clear(d);
}

static int cmd_prewarm(struct sbx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS,
	    {"jobs", required_argument, NULL, 'j'},
	    {"force", no_argument, NULL, 'F'},
	    {"timeout", required_argument, NULL, 'T'},
	    {0}};
	struct sbx_error *err = NULL;
	struct catalog cat;
	struct engine engine;
	struct prewarm p;
	struct display d = {0};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long long jobs = cpus < 1 ? 1 : (unsigned long long)cpus,
			   timeout = PREWARM_TIMEOUT_SECONDS;
	bool force = false, *chosen = NULL;
	const char *deployment;
	int c, rc = 0;

	if (jobs > JOBS_MAX)
		jobs = JOBS_MAX;
	for (;;) {
		c = getopt_long(argc, argv, COMMON_SHORTOPTS "j:", longopts,
				NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'j':
			rc = cmd_parse_count(&cmd_prewarm_entry, "-j", optarg,
					     JOBS_MAX, &jobs);
			break;
		case 'F':
			force = true;
			break;
		case 'T':
			rc = cmd_parse_count(&cmd_prewarm_entry, "--timeout",
					     optarg, 7 * 86400ULL, &timeout);
			break;
		default:
			rc = cmd_common_option(ctx, &cmd_prewarm_entry, c,
					       optarg);
			break;
		}
		if (rc)
			return rc < 0 ? 0 : rc;
	}

	catalog_init(&cat);
	rc = cmd_load_catalog(ctx, NULL, &cat);
	if (rc) {
		catalog_release(&cat);
		return rc;
	}
	chosen = xcalloc(cat.n ? cat.n : 1, sizeof(*chosen));
	for (int i = optind; i < argc; i++) {
		const struct runtime *rt = cmd_find_runtime(&cat, argv[i]);
		if (!rt) {
			free(chosen);
			catalog_release(&cat);
			return SBX_EXIT_FAIL;
		}
		chosen[rt - cat.rt] = true;
	}

	/* Harmless when main() called it already. */
	sig_init();
	deployment = getenv("SBXCAT_DEPLOYMENT_ID");
	if (!deployment || !*deployment)
		deployment = DEPLOYMENT_DEFAULT;
	memset(&engine, 0, sizeof(engine));
	engine.trace_fd = -1;
	rc = deployment_check(deployment, &err);
	if (rc == 0)
		rc = svc_config_check(ctx->svc.cfg.engine_err, &err);
	if (rc == 0)
		rc = engine_init(&engine, &ctx->svc.cfg.engine, NULL, &err);
	if (rc == 0) {
		engine.cancel = sig_flag();
		rc = engine_negotiate(&engine, NULL, &err);
	}
	if (rc < 0) {
		engine_release(&engine);
		free(chosen);
		catalog_release(&cat);
		if (err->errnum == ECANCELED) {
			sbx_error_free(&err);
			return sig_exit_status();
		}
		return cmd_report(&err);
	}

	prewarm_init(&p);
	p.deployment = deployment;
	for (size_t i = 0; i < cat.n; i++)
		if (optind >= argc || chosen[i])
			prewarm_add(&p, &cat.rt[i], &ctx->recipe);
	free(chosen);
	p.concurrency = (unsigned)jobs;
	p.force = force;
	p.timeout_ms = (long)timeout * 1000;
	p.engine = &engine;
	p.cancel = sig_flag();
	d.said_state = xcalloc(p.n ? p.n : 1, sizeof(*d.said_state));
	d.said_step = xcalloc(p.n ? p.n : 1, sizeof(*d.said_step));
	if (ctx->json)
		d.mode = SHOW_NONE;
	else if (isatty(STDERR_FILENO))
		d.mode = SHOW_TTY;
	else
		d.mode = SHOW_PLAIN;
	run_shown(&p, &d);
	if (ctx->json) {
		json_t *report = report_json(&p);
		json_dumpf(report, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(report);
	} else {
		print_report(stdout, &p);
	}
	fflush(stdout);
	rc = exit_status(&p);
	free(d.said_state);
	free(d.said_step);
	prewarm_release(&p);
	engine_release(&engine);
	catalog_release(&cat);
	return rc;
}

const struct cmd_entry cmd_prewarm_entry = {
    .name = "prewarm",
    .usage = "[ALIAS...] [-j N] [--force] [--timeout S] [--json]",
    .summary = "build or pull every runtime the engine does not have yet",
    .exec = cmd_prewarm,
};

int cmd_prewarm_one(struct sbx_ctx *ctx, const struct engine *engine,
		    const struct runtime *rt, char **why)
{
	struct prewarm p;
	struct display d = {0};
	enum prewarm_state said_state = PREWARM_WAITING;
	int said_step = 0, rc;
	const char *deployment = getenv("SBXCAT_DEPLOYMENT_ID");

	if (!deployment || !*deployment)
		deployment = DEPLOYMENT_DEFAULT;
	prewarm_init(&p);
	p.deployment = deployment;
	prewarm_add(&p, rt, &ctx->recipe);
	p.concurrency = 1;
	p.timeout_ms = PREWARM_TIMEOUT_SECONDS * 1000L;
	p.engine = engine;
	p.cancel = sig_flag();
	d.said_state = &said_state;
	d.said_step = &said_step;
	d.mode = isatty(STDERR_FILENO) ? SHOW_TTY : SHOW_PLAIN;
	run_shown(&p, &d);
	print_report(stderr, &p);
	rc = exit_status(&p);
	*why = p.jobs[0].error ? xstrdup(p.jobs[0].error) : NULL;
	prewarm_release(&p);
	return rc;
}

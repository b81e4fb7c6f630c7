/*
 * cmd-compose.c - sbxcat compose [--check | --print] [FILE...]: write or
 * drift-check SANDBOXD_RUNTIMES in the compose files.
 *
 * Every file is read, spliced and verified before any is written, so a
 * mistake in one file (or a read-only one) leaves all of them as they were:
 * a half-regenerated set of deployments is harder to reason about than an
 * untouched one.  --check exits 0 exactly when a plain run would change
 * nothing.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "cli/cmd.h"
#include "catalog/compose.h"
#include "basic/error.h"
#include "basic/sig.h"
#include "basic/util.h"
#include "basic/xjson.h"

enum mode { MODE_WRITE, MODE_CHECK, MODE_PRINT };

struct file_state {
	const char *path;
	struct compose_result res;
	struct sbx_error *err;
	const char *state; /* for the report */
};

/* The worse of two exit statuses: an environment problem (3) outranks a
 * failed check (1), which outranks success. */
static int worse(int a, int b)
{
	return a > b ? a : b;
}

static void report_error(struct file_state *f, int *rc)
{
	*rc = worse(*rc, cmd_exit_status(f->err));
	f->state = "error";
}

static json_t *file_json(const struct file_state *f, const char *msg)
{
	json_t *o = json_object();

	xjson_set_path(o, "path", f->path);
	json_object_set_new(o, "state", xjson_string(f->state));
	json_object_set_new(o, "changed",
			    json_boolean(strcmp(f->state, "written") == 0));
	if (msg)
		json_object_set_new(o, "error", xjson_text(msg));
	return o;
}

static int run(struct sbx_ctx *ctx, enum mode mode, const struct catalog *cat,
	       const char *const *files, size_t nfiles)
{
	struct file_state *fs = xcalloc(nfiles, sizeof(*fs));
	json_t *report = ctx->json && mode != MODE_PRINT ? json_array() : NULL;
	size_t nbad = 0;
	int rc = 0;

	/* Phase one: read, splice, verify; for a write, also make sure the
	 * file can be replaced, so that nothing is written unless all can. */
	for (size_t i = 0; i < nfiles; i++) {
		struct file_state *f = &fs[i];
		f->path = files[i];
		if (compose_prepare(cat, f->path, &f->res, &f->err) < 0 ||
		    (mode == MODE_WRITE && f->res.changed &&
		     compose_check_writable(f->path, &f->err) < 0)) {
			report_error(f, &rc);
			nbad++;
			continue;
		}
		f->state = f->res.changed ? "stale" : "up to date";
	}

	/* Phase two: act and report, in the order the files were named. */
	for (size_t i = 0; i < nfiles; i++) {
		struct file_state *f = &fs[i];
		char *msg = NULL;

		if (sig_caught()) {
			/* Interrupted: write no further file, say nothing;
			 * main re-raises the signal. */
			sbx_error_free(&f->err);
			compose_result_release(&f->res);
			continue;
		}
		if (f->err) {
			msg = xstrdup(f->err->msg);
			cmd_report(&f->err);
		} else if (mode == MODE_PRINT) {
			printf("%s\n", f->res.value);
		} else if (mode == MODE_CHECK) {
			if (f->res.changed) {
				fprintf(stderr,
					"%s: " COMPOSE_KEY " is stale; run "
					"'sbxcat compose'\n",
					f->path);
				rc = worse(rc, SBX_EXIT_FAIL);
			} else if (!report) {
				printf("%s: up to date\n", f->path);
			}
		} else if (nbad == 0 && f->res.changed) {
			if (compose_write(f->path, &f->res, &f->err) < 0) {
				f->state = "error";
				rc = worse(rc, cmd_exit_status(f->err));
				msg = xstrdup(f->err->msg);
				cmd_report(&f->err);
			} else {
				f->state = "written";
				if (!report)
					printf("%s: " COMPOSE_KEY " written\n",
					       f->path);
			}
		} else if (!f->res.changed && !report) {
			printf("%s: up to date\n", f->path);
		}
		if (report)
			json_array_append_new(report, file_json(f, msg));
		free(msg);
		compose_result_release(&f->res);
	}
	/* With one file its own error says it all. */
	if (mode == MODE_WRITE && nbad && nfiles > 1)
		fprintf(stderr,
			"sbxcat: %zu of %zu files cannot be updated; nothing "
			"was written\n",
			nbad, nfiles);
	if (sig_caught()) {
		json_decref(report);
		rc = sig_exit_status();
	} else if (report) {
		cmd_print_json(report);
	}
	free(fs);
	return rc;
}

struct compose_opts {
	bool check, print;
};

static const struct cmd_option compose_options[] = {
    CMD_FLAG("check", 0, struct compose_opts, check, 0),
    CMD_FLAG("print", 0, struct compose_opts, print, 0),
    CMD_OPTIONS_END,
};

static int cmd_compose(struct sbx_ctx *ctx, void *opts, int nargs, char **args)
{
	static const char *const defaults[] = {COMPOSE_DEFAULT_FILES};
	const struct compose_opts *o = opts;
	enum mode mode = MODE_WRITE;
	int rc;

	if (o->check && o->print)
		return cmd_usage_error(
		    &cmd_compose_entry,
		    "--check and --print do not go together");
	if (o->check)
		mode = MODE_CHECK;
	if (o->print)
		mode = MODE_PRINT;
	rc = cmd_setup(ctx, CMD_NEEDS_CATALOG);
	if (rc)
		return rc;
	if (mode == MODE_PRINT && !nargs) {
		/* No file to ask: the value for the shipped service-wide
		 * network mode, none. */
		char *v = compose_value(ctx->cat, false);
		printf("%s\n", v);
		free(v);
	} else if (!nargs) {
		rc = run(ctx, mode, ctx->cat, defaults,
			 sizeof(defaults) / sizeof(defaults[0]));
	} else {
		rc = run(ctx, mode, ctx->cat, (const char *const *)args,
			 (size_t)nargs);
	}
	return rc;
}

const struct cmd_entry cmd_compose_entry = {
    .name = "compose",
    .usage = "[--check | --print] [FILE...]",
    .summary = "write or drift-check SANDBOXD_RUNTIMES in the compose files",
    .options = compose_options,
    .opts_size = sizeof(struct compose_opts),
    .max_args = -1,
    .run = cmd_compose,
};

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

enum { OPT_CHECK = 256, OPT_PRINT };
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

static int cmd_compose(struct sbx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
	    COMMON_LONGOPTS,
	    {"check", no_argument, NULL, OPT_CHECK},
	    {"print", no_argument, NULL, OPT_PRINT},
	    {0}};
	static const char *const defaults[] = {COMPOSE_DEFAULT_FILES};
	enum mode mode = MODE_WRITE;
	bool check = false, print = false;
	struct catalog cat;
	int c, rc;

	for (;;) {
		c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts, NULL);
		if (c == -1)
			break;
		if (c == OPT_CHECK) {
			check = true;
			continue;
		}
		if (c == OPT_PRINT) {
			print = true;
			continue;
		}
		rc = cmd_common_option(ctx, &cmd_compose_entry, c, optarg);
		if (rc)
			return rc < 0 ? 0 : rc;
	}
	if (check && print)
		return cmd_usage_error(
		    &cmd_compose_entry,
		    "--check and --print do not go together");
	if (check)
		mode = MODE_CHECK;
	if (print)
		mode = MODE_PRINT;

	catalog_init(&cat);
	rc = cmd_load_catalog(ctx, NULL, &cat);
	if (rc) {
		catalog_release(&cat);
		return rc;
	}
	if (mode == MODE_PRINT && optind == argc) {
		/* No file to ask: the value for the shipped service-wide
		 * network mode, none. */
		char *v = compose_value(&cat, false);
		printf("%s\n", v);
		free(v);
	} else if (optind == argc) {
		rc = run(ctx, mode, &cat, defaults,
			 sizeof(defaults) / sizeof(defaults[0]));
	} else {
		rc = run(ctx, mode, &cat, (const char *const *)(argv + optind),
			 (size_t)(argc - optind));
	}
	catalog_release(&cat);
	return rc;
}

const struct cmd_entry cmd_compose_entry = {
    .name = "compose",
    .usage = "[--check | --print] [FILE...]",
    .summary = "write or drift-check SANDBOXD_RUNTIMES in the compose files",
    .exec = cmd_compose,
};

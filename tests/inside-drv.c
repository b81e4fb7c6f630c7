/*
 * inside-drv.c - the svc-inside operations from a test's shell
 * (tests/t-inside.sh): one operation per run, its result as one JSON
 * document on stdout, its error as {"error": KIND, "errnum", "reason",
 * "message"} and exit 1.  The configuration from the environment, as
 * sbxcat's; the tenant the first argument.
 *
 *   inside-drv TENANT stat|ls|read|write|mkdir|rm|rename KEY PATH [ARG]
 *
 * ls's ARG is the depth; rename's the new path; write's bytes are stdin;
 * read writes the bytes to stdout (no JSON) and its length to stderr.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/env.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/xjson.h"
#include "svc/svc-inside.h"
#include "svc/svc.h"

static int fail(struct sbx_error *err)
{
	json_t *j = xjson_pack("{s:s, s:i, s:o, s:o}", "error",
			       sbx_kind_name(err->kind), "errnum", err->errnum,
			       "reason",
			       err->reason ? json_string(err->reason)
					   : json_null(),
			       "message", xjson_string(err->msg));

	json_dumpf(j, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(j);
	return 1;
}

static int print(json_t *j)
{
	json_dumpf(j, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(j);
	return 0;
}

int main(int argc, char **argv)
{
	extern char **environ;
	static const atomic_int never;
	struct sbx_env env;
	struct svc s;
	struct svc_call call = {0};
	struct sbx_error *err = NULL;
	const char *op, *key, *path;
	int rc = 2;

	if (argc < 5) {
		fprintf(stderr, "usage: inside-drv TENANT OP KEY PATH [ARG]\n");
		return 2;
	}
	xjson_init();
	sbx_env_capture(&env, environ);
	svc_init(&s, &env);
	call.tenant = argv[1];
	call.agent = "inside-drv";
	call.cancel = &never;
	op = argv[2];
	key = argv[3];
	path = argv[4];
	if (strcmp(op, "stat") == 0) {
		struct svc_inside_stat_req q = {key, path};
		struct svc_inside_stat_res r;

		rc = svc_inside_stat(&s, &call, &q, &r, &err) < 0
			 ? fail(err)
			 : print(svc_inside_entry_json(&r.e));
		svc_inside_stat_res_release(&r);
	} else if (strcmp(op, "ls") == 0) {
		struct svc_inside_ls_req q = {key, path,
					      argc > 5 ? (unsigned)atoi(argv[5])
						       : 0,
					      0};
		struct svc_inside_ls_res r;

		if (svc_inside_ls(&s, &call, &q, &r, &err) < 0) {
			rc = fail(err);
		} else {
			json_t *a = json_array();

			for (size_t i = 0; i < r.n; i++)
				json_array_append_new(
				    a, svc_inside_entry_json(&r.entries[i]));
			rc = print(xjson_pack(
			    "{s:o, s:I, s:b, s:o, s:I, s:I}", "entries", a,
			    "n", (json_int_t)r.n, "truncated", r.truncated,
			    "why", r.why ? json_string(r.why) : json_null(),
			    "skipped", (json_int_t)r.skipped, "max_entries",
			    (json_int_t)r.max_entries));
		}
		svc_inside_ls_res_release(&r);
	} else if (strcmp(op, "read") == 0) {
		struct svc_inside_read_req q = {key, path};
		struct svc_inside_read_res r;

		if (svc_inside_read(&s, &call, &q, &r, &err) < 0) {
			rc = fail(err);
		} else {
			rc = write_all(1, r.data, r.len) < 0 ? 3 : 0;
			fprintf(stderr, "%zu\n", r.len);
		}
		svc_inside_read_res_release(&r);
	} else if (strcmp(op, "write") == 0) {
		struct strbuf in = STRBUF_INIT;
		char buf[65536];
		ssize_t n;
		struct svc_inside_write_req q = {key, path, NULL, 0};
		struct svc_inside_write_res r;

		while ((n = read(0, buf, sizeof(buf))) > 0)
			strbuf_add(&in, buf, (size_t)n);
		q.data = in.buf;
		q.len = in.len;
		if (svc_inside_write(&s, &call, &q, &r, &err) < 0) {
			rc = fail(err);
		} else {
			json_t *j = svc_inside_entry_json(&r.e);

			json_object_set_new(j, "created",
					    json_boolean(r.created));
			rc = print(j);
		}
		svc_inside_write_res_release(&r);
		strbuf_release(&in);
	} else if (strcmp(op, "mkdir") == 0) {
		struct svc_inside_mkdir_req q = {key, path};
		struct svc_inside_mkdir_res r;

		if (svc_inside_mkdir(&s, &call, &q, &r, &err) < 0) {
			rc = fail(err);
		} else {
			json_t *j = svc_inside_entry_json(&r.e);

			json_object_set_new(j, "created",
					    json_boolean(r.created));
			rc = print(j);
		}
		svc_inside_mkdir_res_release(&r);
	} else if (strcmp(op, "rm") == 0) {
		struct svc_inside_rm_req q = {key, path};

		rc = svc_inside_rm(&s, &call, &q, &err) < 0
			 ? fail(err)
			 : print(json_pack("{s:b}", "removed", 1));
	} else if (strcmp(op, "rename") == 0 && argc > 5) {
		struct svc_inside_rename_req q = {key, path, argv[5]};
		struct svc_inside_rename_res r;

		rc = svc_inside_rename(&s, &call, &q, &r, &err) < 0
			 ? fail(err)
			 : print(svc_inside_entry_json(&r.e));
		svc_inside_rename_res_release(&r);
	} else {
		fprintf(stderr, "inside-drv: unknown op '%s'\n", op);
	}
	sbx_error_free(&err);
	svc_release(&s);
	sbx_env_release(&env);
	return rc;
}

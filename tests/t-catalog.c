/*
 * t-catalog.c - the catalogue validator, driven by tables.
 *
 * tests/cases/NAME.json holds a catalogue and NAME.err the exact
 * diagnostics it must produce, one per line (an empty .err: valid).  The
 * field checks run over tables of accepted and refused values, and the
 * cases that are awkward to keep as files (not UTF-8, empty, 10 MB) are
 * made here.
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "basic/error.h"
#include "tap.h"
#include "basic/util.h"

static char *diags_text(struct catalog *cat)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < cat->ndiags; i++) {
		char *line = catalog_diag_format(cat, &cat->diags[i]);
		strbuf_addf(&sb, "%s\n", line);
		free(line);
	}
	return strbuf_detach(&sb, NULL);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_case_files(void)
{
	DIR *d = opendir(".");
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, alloc = 0;

	if (!d)
		bail_out("cannot open tests/cases");
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0) {
			ALLOC_GROW(names, n + 1, alloc);
			names[n++] = xstrdup(de->d_name);
		}
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	if (n < 30)
		bail_out("only %zu case files found", n);

	for (size_t i = 0; i < n; i++) {
		struct catalog cat;
		struct sbx_error *err = NULL;
		char *want = NULL, *got;
		size_t wantlen;
		char *errpath =
		    xasprintf("%.*s.err", (int)strlen(names[i]) - 5, names[i]);

		if (read_file_limited(errpath, 1 << 20, &want, &wantlen, &err) <
		    0)
			bail_out("%s", err->msg);
		catalog_init(&cat);
		if (catalog_load(&cat, names[i], &err) < 0)
			bail_out("%s", err->msg);
		got = diags_text(&cat);
		is_str(got, want, "case %s", names[i]);
		free(got);
		free(want);
		free(errpath);
		free(names[i]);
		catalog_release(&cat);
	}
	free(names);
}

static void check_buffer(const char *what, const char *buf, size_t len,
			 const char *want)
{
	struct catalog cat;
	char *got;

	catalog_init(&cat);
	catalog_load_buffer(&cat, "mem.json", buf, len);
	got = diags_text(&cat);
	is_str(got, want, "%s", what);
	free(got);
	catalog_release(&cat);
}

static void run_made_cases(void)
{
	static const char valid[] =
	    "[{\"alias\": \"a\", \"description\": \"d\", \"image\": "
	    "\"busybox:1\"}]";
	struct catalog cat;
	struct sbx_error *err = NULL;
	char tmpl[] = "/tmp/t-catalog-XXXXXX";
	char *big;
	int fd;

	check_buffer("not UTF-8", "[\n  {\"alias\": \"a\xff\"}]", 20,
		     "mem.json:2:15: not valid UTF-8 (byte 0xff); a catalogue "
		     "must be UTF-8 text\n");
	check_buffer("overlong UTF-8", "[\"\xc0\xaf\"]", 6,
		     "mem.json:1:3: not valid UTF-8 (byte 0xc0); a catalogue "
		     "must be UTF-8 text\n");
	check_buffer("empty file", "", 0,
		     "mem.json: the file is empty; a catalogue is a JSON array "
		     "of runtime entries\n");
	check_buffer("whitespace only", " \n\t\n", 4,
		     "mem.json: the file is empty; a catalogue is a JSON array "
		     "of runtime entries\n");
	check_buffer("top-level string", "\"x\"", 3,
		     "mem.json:1:3: invalid JSON: '[' or '{' expected near "
		     "'\"x\"'\n");
	{
		char *bom = xasprintf("\xEF\xBB\xBF%s", valid);
		check_buffer("byte order mark is accepted", bom, strlen(bom),
			     "");
		free(bom);
	}
	check_buffer("valid in-memory catalogue", valid, strlen(valid), "");

	/* A 10 MB file is refused unread, as a catalogue problem (exit 1). */
	fd = mkstemp(tmpl);
	if (fd < 0)
		bail_out("mkstemp failed");
	big = xmalloc(10 << 20);
	memset(big, ' ', 10 << 20);
	memcpy(big, valid, sizeof(valid) - 1);
	if (write(fd, big, 10 << 20) != 10 << 20)
		bail_out("write failed");
	close(fd);
	free(big);
	catalog_init(&cat);
	ok(catalog_load(&cat, tmpl, &err) == 0 && cat.ndiags == 1,
	   "10 MB file gives one diagnostic");
	is_str(
	    cat.ndiags ? cat.diags[0].msg : NULL,
	    "the file is larger than 4194304 bytes; a catalogue that size is "
	    "a mistake",
	    "10 MB file: message");
	catalog_release(&cat);
	unlink(tmpl);

	catalog_init(&cat);
	ok(catalog_load(&cat, "/nonexistent/cat.json", &err) < 0 && err &&
	       tap_status(err) == 3,
	   "a missing file is an environment error (exit 3)");
	is_str(err ? err->msg : NULL,
	       "cannot open '/nonexistent/cat.json': No such file or directory",
	       "missing file: message");
	sbx_error_free(&err);
	catalog_release(&cat);

	catalog_init(&cat);
	ok(catalog_load(&cat, "/tmp", &err) < 0 && err &&
	       tap_status(err) == 3,
	   "a directory is an environment error");
	sbx_error_free(&err);
	catalog_release(&cat);
}

struct value_case {
	const char *value;
	bool accepted;
};

static void run_table(const char *what, char *(*check)(const char *),
		      const struct value_case *cases)
{
	for (const struct value_case *c = cases; c->value; c++) {
		char *msg = check(c->value);
		char shown[128];
		size_t k = 0;

		/* A TAP name is one line: show a newline as \n. */
		for (const char *p = c->value; *p && k + 3 < sizeof(shown);
		     p++) {
			if (*p == '\n') {
				shown[k++] = '\\';
				shown[k++] = 'n';
			} else {
				shown[k++] = *p;
			}
		}
		shown[k] = '\0';
		ok((msg == NULL) == c->accepted, "%s '%s' %s", what, shown,
		   c->accepted ? "accepted" : "refused");
		if ((msg == NULL) != c->accepted)
			diag("message: %s", msg ? msg : "(none)");
		free(msg);
	}
}

static void run_field_tables(void)
{
	static const struct value_case aliases[] = {
	    {"workbench", true},
	    {"a", true},
	    {"py-3-12", true},
	    {"abcdefghijklmnopqrstuvwxyz012345", true},	  /* 32 */
	    {"abcdefghijklmnopqrstuvwxyz0123456", false}, /* 33 */
	    {"Work-Bench", false},
	    {"9x", false},
	    {"-a", false},
	    {"a_b", false},
	    {"a.b", false},
	    {"", false},
	    {NULL, false}};
	static const struct value_case images[] = {
	    {"python:3.12-slim", true},
	    {"busybox", true},
	    {"library/debian:bookworm", true},
	    {"registry.example.com:5000/team/img:1.0", true},
	    {"localhost/img", true},
	    {"img@sha256:"
	     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	     true},
	    {"img:tag@sha256:"
	     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	     true},
	    {"a__b/c-d.e", true},
	    {"a-b", true},
	    {"a--b.c_d__e", true},
	    {"localhost:5000", true}, /* name localhost, tag 5000 */
	    {"localhost:5000/img", true},
	    {"Registry.Example.com/img", true},
	    {"[::1]/img", false},
	    {"Img/x", false},
	    {"a-/b", false},
	    {"a..b", false},
	    {"a___b", false},
	    {"host:/img", false},
	    {"img:tag:tag", false},
	    {"img@sha256:0123456789abcdef0123456789abcde", false},
	    /* The grammar admits these; go-digest, and so Docker, does not. */
	    {"img@sha256:0123456789abcdef0123456789abcdef", false},
	    {"img@sha256:"
	     "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF",
	     false},
	    {"img@md5:0123456789abcdef0123456789abcdef", false},
	    {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	     false},
	    {"Python:3.12", false},
	    {"img:", false},
	    {":tag", false},
	    {"img:-bad", false},
	    {"img name", false},
	    {"img/", false},
	    {"img@sha256:abc", false},
	    {"img;rm", false},
	    {"", false},
	    {NULL, false}};
	static const struct value_case packages[] = {
	    {"requests", true},
	    {"requests==2.32.3", true},
	    {"pandas>=2,<3", true},
	    {"uvicorn[standard]>=0.30", true},
	    {"a.b_c-d", true},
	    {"pkg~=1.4.2", true},
	    {"pkg!=1.*", true},
	    {"pkg===1.0+local", true},
	    {"a", true},
	    {"pkg[a,b]==1", true},
	    {"pkg[]", false},
	    {"pkg-", false},
	    {"pkg==1,", false},
	    {"pkg=1", false},
	    {"requests; rm -rf /", false},
	    {"--index-url=http://x", false},
	    {"-e.", false},
	    {"foo bar", false},
	    {"pkg\nRUN x", false},
	    {"pkg @ https://x/y.whl", false},
	    {"git+https://x/y", false},
	    {"pkg$(id)", false},
	    {"pkg`id`", false},
	    {"pkg\"", false},
	    {"pkg==", false},
	    {"pkg[", false},
	    {"_pkg", false},
	    {"pkg|x", false},
	    {"", false},
	    {NULL, false}};
	static const struct value_case env_names[] = {
	    {"PATH", true},  {"_x", true},   {"a1_B2", true},
	    {"1BAD", false}, {"A-B", false}, {"A B", false},
	    {"", false},     {"A=B", false}, {NULL, false}};
	static const struct value_case mems[] = {
	    {"2g", true},    {"512m", true},
	    {"2G", true},    {"6291456", true},
	    {"6144k", true}, {"2gb", false},
	    {"0g", false},   {"0", false},
	    {"1m", false},   {"1.5g", false},
	    {"g", false},    {"-1g", false},
	    {"2 g", false},  {"99999999999999999g", false},
	    {"", false},     {NULL, false}};

	run_table("alias", catalog_check_alias, aliases);
	run_table("image", catalog_check_image_ref, images);
	run_table("package", catalog_check_package, packages);
	run_table("env name", catalog_check_env_name, env_names);
	run_table("mem_limit", catalog_check_mem_limit, mems);
}

static void run_shipped(void)
{
	struct catalog cat;
	struct sbx_error *err = NULL;
	const struct runtime *wb;

	catalog_init(&cat);
	ok(catalog_load(&cat, "../../catalog/sandbox_runtimes.json", &err) ==
		   0 &&
	       catalog_valid(&cat),
	   "the shipped catalogue is valid");
	wb = catalog_default(&cat);
	is_str(wb ? wb->alias : NULL, "workbench",
	       "its default runtime is workbench");
	is_str(wb ? wb->base_image : NULL, "python:3.12-slim",
	       "workbench base");
	is_int(wb ? (long long)wb->npackages : -1, 17,
	       "workbench has 17 packages");
	is_str(wb ? wb->mem_limit : NULL, "2g", "workbench mem_limit");
	ok(wb && wb->needs_network, "workbench needs a network");
	catalog_release(&cat);
}

int main(void)
{
	const char *srcdir = getenv("srcdir");
	cleanup_free char *dir =
	    xasprintf("%s/tests/cases", srcdir ? srcdir : ".");

	if (chdir(dir) < 0)
		bail_out("cannot enter %s", dir);
	run_case_files();
	run_made_cases();
	run_field_tables();
	run_shipped();
	return done_testing();
}

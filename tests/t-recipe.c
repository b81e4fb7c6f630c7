/*
 * t-recipe.c - Dockerfiles, tags and briefings against golden files, and
 * the properties the golden files cannot show on their own: determinism,
 * the layer order, and that no catalogue value adds an instruction.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "briefing.h"
#include "catalog.h"
#include "error.h"
#include "recipe.h"
#include "tap.h"
#include "util.h"

static char *slurp(const char *path)
{
	struct sbx_error *err = NULL;
	char *data;
	size_t len;
	if (read_file_limited(path, 1 << 20, &data, &len, &err) < 0)
		bail_out("%s", err->msg);
	return data;
}

static void load(struct catalog *cat, const char *path)
{
	struct sbx_error *err = NULL;
	catalog_init(cat);
	if (catalog_load(cat, path, &err) < 0 || !catalog_valid(cat))
		bail_out("cannot load %s", path);
}

static void golden_dockerfile(const struct catalog *cat, const char *alias,
			      unsigned long uid, const char *golden)
{
	struct recipe_opts o = {.sandbox_uid = uid};
	char *want = slurp(golden);
	char *got = recipe_dockerfile(catalog_find(cat, alias), &o, NULL);
	is_str(got, want, "Dockerfile of '%s' (uid %lu) matches %s", alias, uid,
	       golden);
	free(got);
	free(want);
}

static void golden_briefing(const struct catalog *cat, const char *alias,
			    const char *golden)
{
	const struct runtime *rt = catalog_find(cat, alias);
	char *want = slurp(golden);
	char *got = briefing_markdown(rt, rt == catalog_default(cat));
	is_str(got, want, "briefing of '%s' matches %s", alias, golden);
	free(got);
	free(want);
}

/*
 * Count the instructions of a Dockerfile the way Docker reads it: a line
 * ending in a backslash continues onto the next; comments are skipped.
 * Returns -1 when a line starts with anything but a known instruction.
 */
static int count_instructions(const char *df, char *first_words, size_t cap)
{
	static const char *const known[] = {
	    "FROM ", "RUN ", "ENV ", "LABEL ", "WORKDIR ", "USER ", NULL};
	int n = 0;
	bool continued = false;

	first_words[0] = '\0';
	for (const char *line = df; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		bool cont_next = len > 0 && line[len - 1] == '\\';

		if (!continued && line[0] != '#') {
			const char *const *k;
			for (k = known; *k; k++)
				if (strncmp(line, *k, strlen(*k)) == 0)
					break;
			if (!*k)
				return -1;
			n++;
			strncat(first_words, *k, cap - strlen(first_words) - 1);
		}
		continued = cont_next;
		line += len + (nl ? 1 : 0);
	}
	return n;
}

static void test_structure(const struct catalog *cat)
{
	const struct runtime *rt = catalog_find(cat, "full");
	struct recipe_opts o = {.sandbox_uid = 10001};
	char words[1024];
	size_t len1, len2;
	char *a = recipe_dockerfile(rt, &o, &len1);
	char *b = recipe_dockerfile(rt, &o, &len2);
	int n;

	ok(len1 == len2 && memcmp(a, b, len1) == 0,
	   "the same catalogue gives the same bytes");
	n = count_instructions(a, words, sizeof(words));
	/* FROM, USER root, 2 setup RUNs, pip RUN, account RUN, venv ENV, 7
	 * ENVs, LABEL, WORKDIR, USER: a value that added a line would show. */
	is_int(n, 17, "hostile values add no instruction");
	is_str(
	    words,
	    "FROM USER RUN RUN RUN RUN ENV ENV ENV ENV ENV ENV ENV ENV LABEL "
	    "WORKDIR USER ",
	    "instructions come in layer order");
	free(a);
	free(b);
}

static void test_hashes(struct catalog *cat)
{
	struct runtime *rt = (struct runtime *)catalog_find(cat, "full");
	struct recipe_opts o = {.sandbox_uid = 10001};
	size_t len;
	char *df = recipe_dockerfile(rt, &o, &len);
	char *tag = recipe_tag(rt, &o);
	char hash[65], want[128];
	struct strbuf nolabel = STRBUF_INIT;
	const char *label, *eol;
	char *tag2, *df2, *old;

	sha256_hex(df, len, hash);
	snprintf(want, sizeof(want), "sbxcat/full:%.12s", hash);
	is_str(tag, want, "tag is 12 hex of SHA-256 over the Dockerfile");

	label = strstr(df, "\nLABEL ") + 1;
	eol = strchr(label, '\n') + 1;
	strbuf_add(&nolabel, df, (size_t)(label - df));
	strbuf_addstr(&nolabel, eol);
	sha256_hex(nolabel.buf, nolabel.len, hash);
	snprintf(want, sizeof(want), "io.sbxcat.recipe=\"%s\"", hash);
	ok(strstr(label, want) != NULL && strstr(label, want) < eol,
	   "recipe label is SHA-256 of the Dockerfile without its LABEL line");
	strbuf_release(&nolabel);

	/* A changed env var gives a new tag but keeps every install layer. */
	old = rt->env[0].value;
	rt->env[0].value = xstrdup("changed");
	tag2 = recipe_tag(rt, &o);
	df2 = recipe_dockerfile(rt, &o, NULL);
	ok(strcmp(tag, tag2) != 0, "a changed env var gives a new tag");
	{
		size_t keep = (size_t)(strstr(df, "\nENV PLAIN=") - df);
		ok(strncmp(df, df2, keep) == 0,
		   "a changed env var leaves every line before the env block");
	}
	free(rt->env[0].value);
	rt->env[0].value = old;
	free(tag2);
	free(df2);

	o.sandbox_uid = 0;
	tag2 = recipe_tag(rt, &o);
	ok(strcmp(tag, tag2) != 0, "the sandbox uid is part of the tag");
	free(tag2);
	free(tag);
	free(df);

	rt = (struct runtime *)catalog_find(cat, "ready");
	ok(recipe_dockerfile(rt, &o, NULL) == NULL,
	   "an image entry has no Dockerfile");
	tag = recipe_tag(rt, &o);
	is_str(tag, "busybox:1.36", "an image entry's tag is its image");
	free(tag);
}

static void test_parse_uid(void)
{
	static const struct {
		const char *in;
		long long want; /* -1: refused */
	} cases[] = {{"", 0},
		     {"0", 0},
		     {"10001", 10001},
		     {"1", 1},
		     {"2147483647", 2147483647},
		     {"2147483648", -1},
		     {"-1", -1},
		     {"abc", -1},
		     {"10001x", -1},
		     {" 1", -1},
		     {"+1", -1}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sbx_error *err = NULL;
		unsigned long uid = 99;
		int rc = recipe_parse_uid(cases[i].in, &uid, &err);
		if (cases[i].want < 0)
			ok(rc < 0 && err && err->status == SBX_EXIT_USAGE,
			   "uid '%s' refused as a usage error", cases[i].in);
		else
			is_int(rc == 0 ? (long long)uid : -1, cases[i].want,
			       "uid '%s'", cases[i].in);
		sbx_error_free(&err);
	}
}

int main(void)
{
	const char *srcdir = getenv("srcdir");
	struct catalog shipped, full;

	if (srcdir && chdir(srcdir) < 0)
		bail_out("cannot enter %s", srcdir);
	load(&shipped, "catalog/sandbox_runtimes.json");
	load(&full, "tests/golden/everyfield.json");

	golden_dockerfile(&shipped, "workbench", 10001,
			  "tests/golden/workbench.Dockerfile");
	golden_dockerfile(&shipped, "workbench", 0,
			  "tests/golden/workbench-nouid.Dockerfile");
	golden_dockerfile(&full, "full", 10001, "tests/golden/full.Dockerfile");
	golden_dockerfile(&full, "full", 4242,
			  "tests/golden/full-uid4242.Dockerfile");
	golden_briefing(&shipped, "workbench",
			"tests/golden/workbench.briefing.md");
	golden_briefing(&full, "full", "tests/golden/full.briefing.md");
	golden_briefing(&full, "ready", "tests/golden/ready.briefing.md");

	test_structure(&full);
	test_hashes(&full);
	test_parse_uid();

	catalog_release(&shipped);
	catalog_release(&full);
	return done_testing();
}

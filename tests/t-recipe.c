/*
 * t-recipe.c - Dockerfiles, tags and briefings against golden files, and
 * the properties the golden files cannot show on their own: the layer order,
 * and that no catalogue value adds an instruction or changes what RUN does
 * (read by a model of Docker's parser, over fuzzed hostile values).
 * Determinism across processes is tested by t-cli.sh.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/briefing.h"
#include "catalog/catalog.h"
#include "basic/error.h"
#include "catalog/recipe.h"
#include "tap.h"
#include "basic/util.h"

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
 * A model of Docker's Dockerfile parser (moby/buildkit
 * frontend/dockerfile/parser, which dockerd 20.10's own builder uses too),
 * as far as it decides how many instructions there are and what RUN does:
 *
 *  - lines are split on '\n'; an instruction's first line is trimmed of
 *    leading white space (Go's unicode.IsSpace) and skipped when empty or
 *    a comment;
 *  - a line continues when it ends in the escape character and [ \t]*;
 *    comment and empty lines inside a continuation are skipped;
 *  - splitCommand: the line is trimmed (unicode.IsSpace), cut at the first
 *    run of [\t\v\f\r ] into the instruction and the rest;
 *    extractBuilderFlags then takes words starting "--" as flags, skipping
 *    bytes b where unicode.IsSpace(rune(b)); what is left, trimmed, are the
 *    arguments;
 *  - RUN arguments starting with '[' are tried as the exec form; '<<' is a
 *    heredoc (BuildKit).
 *
 * Checked against the test-bed engine (dockerd 20.10, DOCKER_BUILDKIT=0):
 * "RUN \u00a0[\"/bin/true\"]" runs /bin/true without a shell, "RUN
 * \u00a0--network=host" runs the shell with "--network=host", "RUN  \t
 * --network=host true" is refused ("Unknown flag: network"), "RUN \u00a0" is
 * a RUN of nothing.  tests/t-build.sh builds hostile values for real.
 */
static bool go_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || c == ' ' || c == 0x85 || c == 0xA0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* strings.TrimLeftFunc(s, unicode.IsSpace) */
static const char *trim_left(const char *s, const char *end)
{
	while (s < end) {
		uint32_t c;
		size_t n = utf8_decode(s, (size_t)(end - s), &c);
		if (n == 0 || !go_space(c))
			break;
		s += n;
	}
	return s;
}

/* strings.TrimRightFunc(s, unicode.IsSpace): the new end */
static const char *trim_right(const char *s, const char *end)
{
	for (;;) {
		const char *p = end;
		uint32_t c;
		/* back to the start of the last character */
		while (p > s && ((unsigned char)p[-1] & 0xC0) == 0x80)
			p--;
		if (p == s && end == s)
			return end;
		if (p > s)
			p--;
		while (p > s && ((unsigned char)*p & 0xC0) == 0x80)
			p--;
		if (utf8_decode(p, (size_t)(end - p), &c) !=
			(size_t)(end - p) ||
		    !go_space(c))
			return end;
		end = p;
	}
}

struct bk_instr {
	char cmd[16];
	int nflags;
	char *args; /* trimmed */
};

/* Parse df into at most cap instructions; returns how many there are. */
static size_t bk_parse(const char *df, struct bk_instr *out, size_t cap)
{
	size_t n = 0;
	const char *p = df;

	while (*p) {
		struct strbuf line = STRBUF_INIT;
		bool more = true, first = true;
		const char *s, *e, *w;

		while (more && *p) {
			const char *nl = strchr(p, '\n');
			const char *end = nl ? nl : p + strlen(p), *t = end;
			const char *b = trim_left(p, end);

			if (end > p && end[-1] == '\r')
				end--, t--;
			if (b == end || *b == '#') { /* empty or comment */
				p = nl ? nl + 1 : end;
				if (first)
					break;
				continue;
			}
			while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
				t--;
			more = t > p && t[-1] == '\\';
			strbuf_add(
			    &line, first ? b : p,
			    (size_t)((more ? t - 1 : end) - (first ? b : p)));
			first = false;
			p = nl ? nl + 1 : end;
		}
		if (first) {
			strbuf_release(&line);
			continue;
		}
		/* splitCommand */
		s = trim_left(line.buf, line.buf + line.len);
		e = trim_right(s, line.buf + line.len);
		w = s;
		while (w < e && !strchr("\t\v\f\r ", *w))
			w++;
		if (n < cap) {
			snprintf(out[n].cmd, sizeof(out[n].cmd), "%.*s",
				 (int)(w - s), s);
			out[n].nflags = 0;
		}
		while (w < e && strchr("\t\v\f\r ", *w))
			w++;
		/* extractBuilderFlags: byte-wise white space */
		for (;;) {
			while (w < e && ((*w >= 9 && *w <= 13) || *w == ' ' ||
					 (unsigned char)*w == 0x85 ||
					 (unsigned char)*w == 0xA0))
				w++;
			if (e - w < 2 || w[0] != '-' || w[1] != '-')
				break;
			if (n < cap)
				out[n].nflags++;
			while (w < e && !((*w >= 9 && *w <= 13) || *w == ' '))
				w++;
		}
		if (n < cap) {
			const char *as = trim_left(w, e);
			out[n].args =
			    xstrndup(as, (size_t)(trim_right(as, e) - as));
		}
		n++;
		strbuf_release(&line);
	}
	return n;
}

static void bk_free(struct bk_instr *in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(in[i].args);
}

/* The model itself, on lines whose reading the real engine showed. */
static void test_model(void)
{
	static const struct {
		const char *df, *cmds;
		int flags;
		const char *last_args;
	} cases[] = {
	    {"FROM x\nRUN true\n", "FROM RUN ", 0, "true"},
	    {"FROM x\nRUN --network=host true\n", "FROM RUN ", 1, "true"},
	    {"FROM x\nRUN  \t --network=host --mount=a,b true\n", "FROM RUN ",
	     2, "true"},
	    {"FROM x\nRUN \xc2\xa0--network=host\n", "FROM RUN ", 0,
	     "--network=host"},
	    {"FROM x\nRUN \xc2\xa0[\"/bin/true\"]\n", "FROM RUN ", 0,
	     "[\"/bin/true\"]"},
	    {"FROM x\nRUN \xe3\x80\x80\n", "FROM RUN ", 0, ""},
	    {"FROM x\nRUN a \\  \n# c\n\n b\n", "FROM RUN ", 0, "a  b"},
	    {"FROM x\nRUN a \\\xc2\xa0\nUSER b\n", "FROM RUN USER ", 0, "b"},
	    {"  # c\n\nFROM x\r\n  USER root \n", "FROM USER ", 0, "root"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bk_instr in[8];
		size_t n = bk_parse(cases[i].df, in, 8);
		struct strbuf cmds = STRBUF_INIT;
		for (size_t k = 0; k < n; k++)
			strbuf_addf(&cmds, "%s ", in[k].cmd);
		ok(strcmp(cmds.buf, cases[i].cmds) == 0 && n > 0 &&
		       in[n - 1].nflags == cases[i].flags &&
		       strcmp(in[n - 1].args, cases[i].last_args) == 0,
		   "parser model, case %zu: %s, %d flags, args '%s'", i,
		   cases[i].cmds, cases[i].flags, cases[i].last_args);
		strbuf_release(&cmds);
		bk_free(in, n);
	}
}

static void test_structure(const struct catalog *cat)
{
	const struct runtime *rt = catalog_find(cat, "full");
	struct recipe_opts o = {.sandbox_uid = 10001};
	struct bk_instr in[32];
	struct strbuf words = STRBUF_INIT;
	char *a = recipe_dockerfile(rt, &o, NULL);
	size_t n = bk_parse(a, in, 32);
	int flags = 0;

	for (size_t k = 0; k < n && k < 32; k++) {
		strbuf_addf(&words, "%s ", in[k].cmd);
		flags += in[k].nflags;
	}
	/* FROM, USER root, 2 setup RUNs, pip RUN, account RUN, venv ENV, 7
	 * ENVs, LABEL, WORKDIR, USER: a value that added a line would show. */
	is_int((long long)n, 17, "hostile values add no instruction");
	is_str(words.buf,
	       "FROM USER RUN RUN RUN RUN ENV ENV ENV ENV ENV ENV ENV ENV "
	       "LABEL WORKDIR USER ",
	       "instructions come in layer order");
	is_int(flags, 0, "no instruction has a flag");
	bk_free(in, n < 32 ? n : 32);
	strbuf_release(&words);
	free(a);
}

/* A deterministic generator: the same values on every run. */
static uint32_t rng_next(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return (uint32_t)(*st >> 16);
}

/*
 * Fuzz: values made of the pieces that have changed a Dockerfile's meaning
 * (or might), as a setup command and an env value.  Whenever the catalogue
 * is accepted, the model must read the Dockerfile as the same instructions
 * as ever, no flag anywhere, and the setup RUN as the shell form of the
 * value trimmed as Docker trims it.
 */
static void test_hostile_fuzz(void)
{
	static const char *const pieces[] = {
	    "-",
	    "--",
	    "--network=host",
	    "--mount=type=bind,source=/,target=/h",
	    "[",
	    "[\"/bin/true\"]",
	    "]",
	    " ",
	    "  ",
	    "\xc2\xa0",
	    "\xe3\x80\x80",
	    "\xe2\x80\xa8",
	    "\xe2\x80\x83",
	    "\xe1\x9a\x80",
	    "\t",
	    "\n",
	    "\r",
	    "\xc2\x85",
	    "\v",
	    "\\",
	    "\\\\",
	    "<<",
	    "<",
	    "EOF",
	    "#",
	    "\"",
	    "'",
	    "$",
	    "${X}",
	    "`",
	    ";",
	    "&&",
	    "true",
	    "echo",
	    "RUN",
	    "FROM scratch",
	    "USER root",
	    "x",
	    "=",
	    "\\ ",
	    "\\\xc2\xa0",
	    "{",
	    "}"};
	const size_t np = sizeof(pieces) / sizeof(pieces[0]);
	uint64_t st = 0x5eed5eedcafef00dull;
	size_t accepted = 0, refused = 0, bad = 0;
	const int rounds = 6000;

	for (int r = 0; r < rounds; r++) {
		struct strbuf v = STRBUF_INIT, w = STRBUF_INIT;
		struct catalog cat;
		json_t *j;
		char *text, *df;
		struct bk_instr in[16];
		size_t n, k = 1 + rng_next(&st) % 6;
		struct strbuf words = STRBUF_INIT;
		int flags = 0;
		const char *vs, *ve;
		bool good;

		for (size_t i = 0; i < k; i++)
			strbuf_addstr(&v, pieces[rng_next(&st) % np]);
		k = rng_next(&st) % 4;
		for (size_t i = 0; i < k; i++)
			strbuf_addstr(&w, pieces[rng_next(&st) % np]);
		j = json_pack("[{s:s, s:s, s:s, s:[s], s:{s:s}}]", "alias", "h",
			      "description", "d", "base_image", "busybox:1",
			      "setup_commands", v.buf, "env_vars", "X",
			      w.len ? w.buf : "");
		if (!j)
			bail_out("json_pack failed");
		text = json_dumps(j, 0);
		catalog_init(&cat);
		catalog_load_buffer(&cat, "fuzz.json", text, strlen(text));
		if (!catalog_valid(&cat)) {
			refused++;
			goto next;
		}
		accepted++;
		{
			struct recipe_opts o = {.sandbox_uid = 10001};
			df = recipe_dockerfile(&cat.rt[0], &o, NULL);
		}
		n = bk_parse(df, in, 16);
		for (size_t i = 0; i < n && i < 16; i++) {
			strbuf_addf(&words, "%s ", in[i].cmd);
			flags += in[i].nflags;
		}
		vs = trim_left(v.buf, v.buf + v.len);
		ve = trim_right(vs, v.buf + v.len);
		good = strcmp(words.buf, "FROM USER RUN RUN ENV ENV LABEL "
					 "WORKDIR USER ") == 0 &&
		       flags == 0 && n >= 3 && in[2].args[0] != '[' &&
		       in[2].args[0] != '\0' && !strstr(in[2].args, "<<") &&
		       strlen(in[2].args) == (size_t)(ve - vs) &&
		       memcmp(in[2].args, vs, (size_t)(ve - vs)) == 0;
		if (!good && bad++ < 5) {
			cleanup_free char *shown = NULL;
			struct strbuf e = STRBUF_INIT;
			text_add_escaped(&e, v.buf, v.len);
			strbuf_addstr(&e, " / ");
			text_add_escaped(&e, w.buf, w.len);
			shown = strbuf_detach(&e, NULL);
			diag("accepted, but Docker would read it otherwise: %s "
			     "(instructions %s, %d flags)",
			     shown, words.buf, flags);
		}
		bk_free(in, n < 16 ? n : 16);
		free(df);
	next:
		strbuf_release(&words);
		catalog_release(&cat);
		free(text);
		json_decref(j);
		strbuf_release(&v);
		strbuf_release(&w);
	}
	is_int((long long)bad, 0,
	       "%d hostile setup commands and env values: every accepted one "
	       "is one shell-form RUN and one ENV, no flag",
	       rounds);
	/* A fuzzer that accepts nothing, or everything, tests nothing. */
	ok(accepted > (size_t)rounds / 10 && refused > (size_t)rounds / 10,
	   "the fuzzer reaches both sides (%zu accepted, %zu refused)",
	   accepted, refused);
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
			ok(rc < 0 && err && tap_status(err) == 2,
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

	test_model();
	test_structure(&full);
	test_hostile_fuzz();
	test_hashes(&full);
	test_parse_uid();

	catalog_release(&shipped);
	catalog_release(&full);
	return done_testing();
}

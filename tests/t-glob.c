/*
 * t-glob.c - glob_match, glob_may_descend and glob_check (walk.h): hand
 * cases, a fuzzer against a simple recursive reference matcher and against
 * fnmatch(3), and patterns that would blow up a backtracking matcher.
 */
#include "config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/alloc.h"
#include "tap.h"
#include "workspace/walk.h"

/* ---- the reference: exponential, obviously right ---- */

/* A class at p ('['): matched c? *end past it; false with *end NULL when
 * unterminated. */
static bool ref_class(const char *p, const char *pend, unsigned char c,
		     const char **end)
{
	const char *q = p + 1;
	bool neg = false, in = false, first = true;

	if (q < pend && (*q == '!' || *q == '^')) {
		neg = true;
		q++;
	}
	for (;;) {
		unsigned char lo, hi;

		if (q >= pend) {
			*end = NULL;
			return false;
		}
		if (*q == ']' && !first)
			break;
		first = false;
		if (*q == '\\' && ++q >= pend) {
			*end = NULL;
			return false;
		}
		lo = hi = (unsigned char)*q++;
		if (q + 1 < pend && *q == '-' && q[1] != ']') {
			q++;
			if (*q == '\\' && ++q >= pend) {
				*end = NULL;
				return false;
			}
			hi = (unsigned char)*q++;
		}
		if (c >= lo && c <= hi)
			in = true;
	}
	*end = q + 1;
	return in != neg;
}

static bool ref_seg(const char *p, const char *pe, const char *s,
		    const char *se, bool lead, bool hidden)
{
	const char *end;

	if (p == pe)
		return s == se;
	if (lead && s < se && *s == '.' && !hidden) {
		if (*p == '.' || (*p == '\\' && p + 1 < pe && p[1] == '.'))
			return ref_seg(p + (*p == '\\' ? 2 : 1), pe, s + 1, se,
				       false, hidden);
		return false;
	}
	switch (*p) {
	case '*':
		for (const char *t = s; t <= se; t++)
			if (ref_seg(p + 1, pe, t, se, false, hidden))
				return true;
		return false;
	case '?':
		return s < se && ref_seg(p + 1, pe, s + 1, se, false, hidden);
	case '[':
		if (s < se) {
			bool m = ref_class(p, pe, (unsigned char)*s, &end);

			if (end)
				return m && ref_seg(end, pe, s + 1, se, false,
						    hidden);
		} else {
			ref_class(p, pe, 0, &end);
			if (end)
				return false;
		}
		return s < se && *s == '[' &&
		       ref_seg(p + 1, pe, s + 1, se, false, hidden);
	case '\\':
		if (p + 1 >= pe)
			return false;
		return s < se && *s == p[1] &&
		       ref_seg(p + 2, pe, s + 1, se, false, hidden);
	default:
		return s < se && *s == *p &&
		       ref_seg(p + 1, pe, s + 1, se, false, hidden);
	}
}

/* The end of the pattern component at p (the next unescaped '/'). */
static const char *pcomp_end(const char *p)
{
	while (*p && *p != '/') {
		if (*p == '\\' && p[1])
			p++;
		p++;
	}
	return p;
}

static bool ref_path(const char *p, const char *s, bool hidden)
{
	const char *pe = pcomp_end(p);
	const char *se = strchrnul(s, '/');

	if (pe - p == 2 && p[0] == '*' && p[1] == '*') {
		const char *rest = *pe ? pe + 1 : NULL;

		/* zero components */
		if (rest ? ref_path(rest, s, hidden) : !*s)
			return true;
		/* one more */
		if (!*s || (*s == '.' && !hidden))
			return false;
		return ref_path(p, *se ? se + 1 : se, hidden);
	}
	if (!*s)
		return false;
	if (!ref_seg(p, pe, s, se, true, hidden))
		return false;
	if (!*pe)
		return !*se;
	/* The path ends: only "**" components may be left, matching none. */
	return ref_path(pe + 1, *se ? se + 1 : se, hidden);
}

/* ---- generators ---- */

static void gen_pattern(char *out, size_t cap, bool allow_globstar)
{
	static const char *tok[] = {"a", "b", ".", "/", "*", "?", "**", "[ab]",
				    "[!a]"};
	size_t n = 1 + tap_rand() % 7;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *t = tok[tap_rand() % (allow_globstar ? 9 : 9)];

		if (!allow_globstar && strcmp(t, "**") == 0)
			t = "*";
		if (strlen(out) + strlen(t) + 1 < cap)
			strcat(out, t);
	}
}

/* A normalised path: non-empty components of a, b and '.'. */
static void gen_path(char *out, size_t cap)
{
	size_t comps = 1 + tap_rand() % 4, len = 0;

	for (size_t c = 0; c < comps; c++) {
		size_t n = 1 + tap_rand() % 3;

		if (c && len + 1 < cap)
			out[len++] = '/';
		for (size_t i = 0; i < n && len + 1 < cap; i++)
			out[len++] = "ab."[tap_rand() % 3];
	}
	out[len] = '\0';
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether some extension of dir (dir/x/y...) matches, by brute force over
 * short suffixes of the alphabet. */
static bool ref_descend(const char *pat, const char *dir, bool hidden)
{
	static const char *comps[] = {"a", "b", ".", "ab", ".a", "aa", "b.",
				      "ba", "a.", ".b", "bb", "aba", "..a"};
	char buf[256];
	size_t nc = sizeof(comps) / sizeof(*comps);

	for (size_t i = 0; i < nc; i++) {
		snprintf(buf, sizeof(buf), "%s/%s", dir, comps[i]);
		if (ref_path(pat, buf, hidden))
			return true;
		for (size_t j = 0; j < nc; j++) {
			for (size_t k = 0; k < nc; k++) {
				snprintf(buf, sizeof(buf), "%s/%s/%s/%s", dir,
					 comps[i], comps[j], comps[k]);
				if (ref_path(pat, buf, hidden))
					return true;
			}
			snprintf(buf, sizeof(buf), "%s/%s/%s", dir, comps[i],
				 comps[j]);
			if (ref_path(pat, buf, hidden))
				return true;
		}
	}
	return false;
}

int main(void)
{
	char pat[64], path[64], big[20001];
	int bad_ref = 0, bad_fn = 0, runs_fn = 0, bad_desc = 0, unsound = 0;
	double t0;

	/* Hand cases. */
	ok(glob_match("*.c", "walk.c", false), "*.c matches walk.c");
	ok(!glob_match("*.c", "src/walk.c", false), "* does not cross '/'");
	ok(glob_match("**/*.c", "walk.c", false), "**/ matches zero dirs");
	ok(glob_match("**/*.c", "a/b/c/walk.c", false), "**/ matches three");
	ok(glob_match("src/**", "src/a/b", false), "trailing ** matches all");
	ok(glob_match("src/**", "src", false), "trailing ** matches none");
	ok(glob_match("a/**/b", "a/b", false), "a/**/b matches a/b");
	ok(!glob_match("a/**/b", "a/.x/b", false), "** skips hidden dirs");
	ok(glob_match("a/**/b", "a/.x/b", true), "** takes hidden ones too");
	ok(!glob_match("*", ".bashrc", false), "* misses a dot file");
	ok(glob_match(".*", ".bashrc", false), ".* takes a dot file");
	ok(glob_match("*", ".bashrc", true), "* takes it when hidden");
	ok(!glob_match("?bashrc", ".bashrc", false), "? misses the dot");
	ok(!glob_match("[.]bashrc", ".bashrc", false), "a class misses it");
	ok(glob_match("\\.bashrc", ".bashrc", false), "\\. is a literal dot");
	ok(glob_match("\\*", "*", false) && !glob_match("\\*", "x", false),
	   "\\* matches only a star");
	ok(glob_match("[]a]", "]", false) && glob_match("[]a]", "a", false) &&
	       !glob_match("[]a]", "b", false),
	   "']' first in a class is literal");
	ok(glob_match("[!]a]", "b", false) && !glob_match("[!]a]", "]", false),
	   "[!]a] negates ']' and 'a'");
	ok(glob_match("[^a]", "b", false) && !glob_match("[^a]", "a", false),
	   "[^a] negates");
	ok(glob_match("[a-c]x", "bx", false) && !glob_match("[a-c]x", "dx", false),
	   "ranges");
	ok(glob_match("[a-]", "-", false), "a '-' last is literal");
	ok(glob_match("[", "[", false), "an unterminated [ is literal");
	ok(!glob_match("a\\", "a\\", false), "a trailing \\ matches nothing");
	ok(glob_match("caf\xc3\xa9?", "caf\xc3\xa9\xff", false),
	   "bytes, not characters");
	is_str(glob_check("[ab"), "unterminated [ class", "glob_check [ab");
	ok(glob_check("a\\") != NULL, "glob_check trailing backslash");
	ok(glob_check("") != NULL, "glob_check empty");
	ok(glob_check("**/*.[ch]") == NULL, "glob_check a good pattern");

	ok(glob_may_descend("src/**/*.c", "src", false), "descend src");
	ok(glob_may_descend("src/**/*.c", "src/a/b", false), "descend deeper");
	ok(!glob_may_descend("src/*.c", "lib", false), "not lib");
	ok(!glob_may_descend("*.c", "src", false), "not for a top-level glob");
	ok(glob_may_descend("**/x", "a/b", false), "**/x anywhere");
	ok(glob_may_descend("a/b/c", "a/b", false), "a/b toward a/b/c");
	ok(!glob_may_descend("a/b", "a/b", false), "a/b not below a/b");
	ok(!glob_may_descend("**/x", ".git", false), "not into .git");

	/* Fuzz against the reference, both hidden settings. */
	for (int i = 0; i < 20000; i++) {
		bool hidden = i & 1;

		gen_pattern(pat, sizeof(pat), true);
		gen_path(path, sizeof(path));
		if (glob_match(pat, path, hidden) != ref_path(pat, path, hidden)) {
			if (bad_ref++ < 5)
				diag("reference: '%s' '%s' hidden=%d: got %d", pat,
				     path, hidden, glob_match(pat, path, hidden));
		}
	}
	is_int(bad_ref, 0, "20,000 random cases agree with the reference");

	/* Fuzz against fnmatch(3), where there is no ** component. */
	for (int i = 0; i < 20000; i++) {
		bool hidden = i & 1;
		int flags = FNM_PATHNAME | (hidden ? 0 : FNM_PERIOD);

		gen_pattern(pat, sizeof(pat), false);
		gen_path(path, sizeof(path));
		if (strstr(pat, "**"))
			continue;
		runs_fn++;
		if (glob_match(pat, path, hidden) !=
		    (fnmatch(pat, path, flags) == 0)) {
			if (bad_fn++ < 5)
				diag("fnmatch: '%s' '%s' hidden=%d: got %d", pat,
				     path, hidden, glob_match(pat, path, hidden));
		}
	}
	ok(runs_fn > 10000, "%d cases compared with fnmatch", runs_fn);
	is_int(bad_fn, 0, "they agree with fnmatch(FNM_PATHNAME|FNM_PERIOD)");

	/* glob_may_descend: never false when some path below matches (that
	 * would prune a match); and exact for these short cases. */
	for (int i = 0; i < 1500; i++) {
		bool hidden = i & 1, got, want;

		gen_pattern(pat, sizeof(pat), true);
		gen_path(path, sizeof(path));
		got = glob_may_descend(pat, path, hidden);
		want = ref_descend(pat, path, hidden);
		if (want && !got && unsound++ < 5)
			diag("descend unsound: '%s' '%s' hidden=%d", pat, path,
			     hidden);
		if (want != got)
			bad_desc++;
	}
	is_int(unsound, 0, "glob_may_descend never prunes a match");
	ok(bad_desc < 75, "glob_may_descend is tight (%d of 1500 loose)",
	   bad_desc);

	/* Patterns that make a backtracking matcher exponential. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	t0 = now();
	ok(!glob_match("*a*a*a*a*a*a*a*b", big, false), "*a*a...*b on a's");
	ok(!glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", big, false),
	   "20 stars on 20,000 a's");
	{
		struct strbuf deep = STRBUF_INIT, p2 = STRBUF_INIT;

		for (int i = 0; i < 2000; i++)
			strbuf_addstr(&deep, i ? "/a" : "a");
		for (int i = 0; i < 30; i++)
			strbuf_addstr(&p2, "**/a*/");
		strbuf_addstr(&p2, "b");
		ok(!glob_match(p2.buf, deep.buf, false),
		   "30 '**/a*' on a path of 2,000 components");
		ok(glob_may_descend(p2.buf, deep.buf, false),
		   "may descend it all the same");
		strbuf_release(&deep);
		strbuf_release(&p2);
	}
	ok(now() - t0 < 2.0, "the pathological cases took %.3f s", now() - t0);
	return done_testing();
}

/*
 * t-compose.c - the SANDBOXD_RUNTIMES value and its splice, driven by the
 * files in tests/compose/.
 *
 * NAME.in.yml is a hand-written compose file and NAME.out.yml the exact
 * bytes the splice must make of it with tests/compose/catalog.json (a
 * catalogue whose strings hold $ ' " \ # : U+2028 and non-ASCII text).
 * Beside the golden comparison, each pair is checked for the properties a
 * golden file could hide: only one stretch of the file changed and it
 * holds no line break, a second splice changes nothing, and the value read
 * back is the generated one.  bad-NAME.yml must fail with the message in
 * bad-NAME.err.  Cases that are awkward as files (control characters, a
 * BOM on the key's own line, line separators before the key) are made
 * here.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "catalog/compose.h"
#include "basic/error.h"
#include "tap.h"
#include "basic/util.h"

static struct catalog cat;

static char *slurp(const char *path, size_t *len)
{
	struct sbx_error *err = NULL;
	char *data = NULL;
	size_t n;

	if (read_file_limited(path, 1 << 20, &data, &n, &err) < 0)
		bail_out("%s", err->msg);
	if (len)
		*len = n;
	return data;
}

static void chomp(char *s)
{
	size_t n = strlen(s);
	while (n && s[n - 1] == '\n')
		s[--n] = '\0';
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in the current directory that start with prefix and end with
 * suffix, sorted; the caller frees each and the array. */
static char **list_files(const char *prefix, const char *suffix, size_t *n)
{
	DIR *d = opendir(".");
	struct dirent *de;
	char **names = NULL;
	size_t alloc = 0;
	size_t pl = strlen(prefix), sl = strlen(suffix);

	*n = 0;
	if (!d)
		bail_out("cannot open tests/compose");
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len > pl + sl && strncmp(de->d_name, prefix, pl) == 0 &&
		    strcmp(de->d_name + len - sl, suffix) == 0) {
			ALLOC_GROW(names, *n + 1, alloc);
			names[(*n)++] = xstrdup(de->d_name);
		}
	}
	closedir(d);
	qsort(names, *n, sizeof(*names), cmp_str);
	return names;
}

/*
 * The stretch of b that differs from a: everything before it and after it
 * must be byte-identical, and it must be one line (the new scalar).
 */
static void check_one_stretch(const char *name, const char *a, size_t alen,
			      const char *b, size_t blen)
{
	size_t pre = 0, post = 0;
	bool one_line = true;

	while (pre < alen && pre < blen && a[pre] == b[pre])
		pre++;
	while (post < alen - pre && post < blen - pre &&
	       a[alen - 1 - post] == b[blen - 1 - post])
		post++;
	for (size_t i = pre; i < blen - post; i++)
		if (b[i] == '\n' || b[i] == '\r')
			one_line = false;
	ok(one_line && blen - post > pre,
	   "%s: one stretch changed (bytes %zu-%zu), on one line", name, pre,
	   blen - post);
}

static void run_pairs(void)
{
	size_t n;
	char **names = list_files("", ".in.yml", &n);

	if (n < 10)
		bail_out("only %zu golden pairs found", n);
	for (size_t i = 0; i < n; i++) {
		struct compose_result res, again;
		struct sbx_error *err = NULL;
		cleanup_free char *outname = xasprintf(
		    "%.*s.out.yml", (int)strlen(names[i]) - 7, names[i]);
		cleanup_free char *want_value = NULL;
		cleanup_free char *back = NULL;
		size_t inlen, outlen;
		cleanup_free char *in = slurp(names[i], &inlen);
		cleanup_free char *out = slurp(outname, &outlen);

		if (compose_splice(&cat, names[i], in, inlen, &res, &err) < 0) {
			ok(false, "%s: splice: %s", names[i], err->msg);
			sbx_error_free(&err);
			free(names[i]);
			continue;
		}
		is_str(res.text, out, "%s: the golden bytes", names[i]);
		ok(res.len == outlen && res.changed, "%s: length %zu, changed",
		   names[i], res.len);
		check_one_stretch(names[i], in, inlen, res.text, res.len);

		want_value = compose_value(&cat, res.service_bridge);
		is_str(res.value, want_value, "%s: the value generated",
		       names[i]);
		if (compose_read(outname, out, outlen, &back, &err) < 0) {
			ok(false, "%s: read back: %s", outname, err->msg);
			sbx_error_free(&err);
		} else {
			is_str(back, want_value, "%s: reads back the value",
			       outname);
		}

		if (compose_splice(&cat, outname, out, outlen, &again, &err) <
		    0) {
			ok(false, "%s: second splice: %s", outname, err->msg);
			sbx_error_free(&err);
		} else {
			ok(!again.changed && again.len == outlen &&
			       memcmp(again.text, out, outlen) == 0,
			   "%s: a second splice changes nothing", outname);
			compose_result_release(&again);
		}
		compose_result_release(&res);
		free(names[i]);
	}
	free(names);
}

static void run_bad_files(void)
{
	size_t n;
	char **names = list_files("bad-", ".yml", &n);

	if (n < 12)
		bail_out("only %zu bad cases found", n);
	for (size_t i = 0; i < n; i++) {
		struct compose_result res;
		struct sbx_error *err = NULL;
		cleanup_free char *errname =
		    xasprintf("%.*s.err", (int)strlen(names[i]) - 4, names[i]);
		cleanup_free char *want = slurp(errname, NULL);
		size_t len;
		cleanup_free char *in = slurp(names[i], &len);

		chomp(want);
		if (compose_splice(&cat, names[i], in, len, &res, &err) == 0) {
			ok(false, "%s: refused", names[i]);
			compose_result_release(&res);
		} else {
			is_str(err->msg, want, "%s: refused with its message",
			       names[i]);
			is_int(tap_status(err), 1, "%s: status 1",
			       names[i]);
			sbx_error_free(&err);
		}
		free(names[i]);
	}
	free(names);
}

/* Splice text (len bytes) and expect an error message. */
static void refuse_n(const char *what, const char *text, size_t len,
		     const char *want)
{
	struct compose_result res;
	struct sbx_error *err = NULL;

	if (compose_splice(&cat, "mem.yml", text, len, &res, &err) == 0) {
		ok(false, "%s: refused", what);
		diag("got: %s", res.text);
		compose_result_release(&res);
		return;
	}
	is_str(err->msg, want, "%s", what);
	sbx_error_free(&err);
}

static void refuse(const char *what, const char *text, const char *want)
{
	refuse_n(what, text, strlen(text), want);
}

/*
 * Splice text, expect the result to be text with the span [from, to)
 * replaced by the new scalar, and the value to read back.
 */
static void accept(const char *what, const char *text, const char *from,
		   const char *to)
{
	struct compose_result res;
	struct sbx_error *err = NULL;
	size_t len = strlen(text);
	cleanup_free char *back = NULL;
	size_t start = (size_t)(strstr(text, from) - text);
	size_t end = (size_t)(strstr(text + start, to) - text);

	if (compose_splice(&cat, "mem.yml", text, len, &res, &err) < 0) {
		ok(false, "%s: %s", what, err->msg);
		sbx_error_free(&err);
		return;
	}
	ok(res.len > start + (len - end) &&
	       memcmp(res.text, text, start) == 0 &&
	       memcmp(res.text + res.len - (len - end), text + end,
		      len - end) == 0 &&
	       res.text[start] == '"' &&
	       res.text[res.len - (len - end) - 1] == '"',
	   "%s: only the scalar changed", what);
	if (compose_read("mem.yml", res.text, res.len, &back, &err) < 0) {
		ok(false, "%s: read back: %s", what, err->msg);
		sbx_error_free(&err);
	} else {
		is_str(back, res.value, "%s: reads back", what);
	}
	compose_result_release(&res);
}

static void run_made_cases(void)
{
	static const char ctl[] = "services:\n  sandboxd:\n    environment:\n"
				  "      SANDBOXD_RUNTIMES: 'a\x01'\n";
	static const char nul[] = "services: {}\nx: \"a\0b\"\n";
	static const char dollars[] = "services: {sandboxd: {environment: "
				      "{SANDBOXD_RUNTIMES: 'a$$b$$$$c'}}}";
	static const char lone[] = "services: {sandboxd: {environment: "
				   "{SANDBOXD_RUNTIMES: 'a$HOME'}}}";
	struct sbx_error *err = NULL;
	char *v = NULL;

	accept(
	    "a BOM on the key's own line",
	    "\xEF\xBB\xBF"
	    "services: {sandboxd: {environment: {SANDBOXD_RUNTIMES: 'x'}}}\n",
	    "'x'", "}}}");
	accept("non-ASCII before the value on its own line",
	       "services: {sandboxd: {environment: {\"ключ\": \"значение "
	       "🙂\", "
	       "SANDBOXD_RUNTIMES: 'x'}}}\n",
	       "'x'", "}}}");
	/* libyaml counts NEL, LS and PS as characters and as line breaks;
	 * inside a quoted scalar before the key they shift nothing. */
	accept("NEL, LS and PS inside a value before the key",
	       "x-a: \"one\xC2\x85two\xE2\x80\xA8three\xE2\x80\xA9"
	       "four\"\n"
	       "services:\n  sandboxd:\n    environment:\n"
	       "      SANDBOXD_RUNTIMES: \"old\"  # c\n",
	       "\"old\"", "  # c");
	accept("a key that is not first in a list item",
	       "services:\n  sandboxd:\n    environment:\n      - A=1\n"
	       "      - SANDBOXD_RUNTIMES=x y z\n      - B=2\n",
	       "SANDBOXD_RUNTIMES=x", "\n      - B=2");

	refuse_n(
	    "a control character is a YAML error with its place", ctl,
	    sizeof(ctl) - 1,
	    "mem.yml:4:28: invalid YAML: control characters are not allowed");
	refuse_n(
	    "a NUL byte", nul, sizeof(nul) - 1,
	    "mem.yml:2:6: invalid YAML: control characters are not allowed");
	refuse("an empty file", "",
	       "mem.yml: no service 'sandboxd' under 'services'; "
	       "SANDBOXD_RUNTIMES belongs in its environment");
	refuse("a scalar document", "just text\n",
	       "mem.yml: no service 'sandboxd' under 'services'; "
	       "SANDBOXD_RUNTIMES belongs in its environment");
	refuse("a service with no environment",
	       "services:\n  sandboxd:\n    image: x\n",
	       "mem.yml: service 'sandboxd' has no SANDBOXD_RUNTIMES in its "
	       "environment; add 'SANDBOXD_RUNTIMES: \"\"' and run 'sbxcat "
	       "compose'");
	refuse(
	    "a mapping as the value",
	    "services: {sandboxd: {environment: {SANDBOXD_RUNTIMES: {a: "
	    "1}}}}\n",
	    "mem.yml:1:56: the value of SANDBOXD_RUNTIMES is a mapping, not a "
	    "string; write 'SANDBOXD_RUNTIMES: \"\"' and run 'sbxcat "
	    "compose'");
	refuse("a tagged value",
	       "services: {sandboxd: {environment: {SANDBOXD_RUNTIMES: !!str "
	       "x}}}\n",
	       "mem.yml:1:56: the value of SANDBOXD_RUNTIMES carries a tag "
	       "('tag:yaml.org,2002:str'); write 'SANDBOXD_RUNTIMES: \"\"' and "
	       "run 'sbxcat compose'");
	refuse("the service twice",
	       "services:\n  sandboxd: {environment: [SANDBOXD_RUNTIMES=]}\n"
	       "  sandboxd: {}\n",
	       "mem.yml:3:3: 'sandboxd' is set twice in 'services' (first at "
	       "2:3); keep one");
	refuse("'services' twice",
	       "services: {}\nservices: {sandboxd: {environment: "
	       "[SANDBOXD_RUNTIMES=]}}\n",
	       "mem.yml:2:1: 'services' is set twice in the file's top level "
	       "(first at 1:1); keep one");
	refuse("the environment twice",
	       "services: {sandboxd: {environment: [SANDBOXD_RUNTIMES=], "
	       "environment: []}}\n",
	       "mem.yml:1:58: 'environment' is set twice in service 'sandboxd' "
	       "(first at 1:23); keep one");
	refuse("SANDBOXD_NETWORK_MODE twice",
	       "services: {sandboxd: {environment: [SANDBOXD_RUNTIMES=, "
	       "SANDBOXD_NETWORK_MODE=none, SANDBOXD_NETWORK_MODE=bridge]}}\n",
	       "mem.yml:1:85: 'SANDBOXD_NETWORK_MODE' is set twice in the "
	       "environment of service 'sandboxd' (first at 1:57); keep one");
	refuse("the service as an alias",
	       "x: &s {environment: [SANDBOXD_RUNTIMES=]}\nservices: "
	       "{sandboxd: *s}\n",
	       "mem.yml:2:22: service 'sandboxd' is an alias ('*s'), which "
	       "sbxcat does not follow; write it out in place");

	/* compose_read: what compose would pass on. */
	if (compose_read("mem.yml", dollars, strlen(dollars), &v, &err) < 0)
		bail_out("%s", err->msg);
	is_str(v, "a$b$$c", "read: $$ is a literal $");
	free(v);
	v = NULL;
	ok(compose_read("mem.yml", lone, strlen(lone), &v, &err) < 0,
	   "read: a lone $ would interpolate");
	is_str(err ? err->msg : NULL,
	       "mem.yml:1:56: SANDBOXD_RUNTIMES holds a '$' that compose would "
	       "interpolate; run 'sbxcat compose'",
	       "read: lone $: message");
	sbx_error_free(&err);
	free(v);
}

/*
 * The check behind every write: the re-parsed file must be the original's
 * event stream with one scalar changed.  Fed a splice one character early
 * (what a miscounted BOM did), or a correct value with another change
 * beside it, it must refuse.
 */
static void run_verify(void)
{
	static const char old[] =
	    "services: {sandboxd: {environment: {A: 'a1', "
	    "SANDBOXD_RUNTIMES: 'x', B: b}}}\n";
	struct compose_result res;
	struct sbx_error *err = NULL;
	const char *at;
	size_t start, end;
	cleanup_free char *shifted = NULL;
	cleanup_free char *other = NULL;
	char *p;

	if (compose_splice(&cat, "mem.yml", old, strlen(old), &res, &err) < 0)
		bail_out("%s", err->msg);
	ok(compose_verify("mem.yml", old, strlen(old), res.text, res.len,
			  res.value, &err) == 0,
	   "verify: the splice itself passes");
	sbx_error_free(&err);

	at = strstr(old, "'x'");
	start = (size_t)(at - old);
	end = start + 3;
	p = strstr(res.text, "SANDBOXD_RUNTIMES: ") +
	    strlen("SANDBOXD_RUNTIMES: ");
	/* The new scalar, placed one character early. */
	shifted = xasprintf("%.*s%.*s%s", (int)start - 1, old,
			    (int)(strstr(p, ", B: b") - p), p, old + end - 1);
	ok(compose_verify("mem.yml", old, strlen(old), shifted, strlen(shifted),
			  res.value, &err) < 0,
	   "verify: a splice one character early is refused");
	diag("%s", err ? err->msg : "(accepted)");
	sbx_error_free(&err);

	/* The right value, and another scalar changed. */
	other = xstrdup(res.text);
	other[strstr(other, "'a1'") - other + 2] = '2';
	ok(compose_verify("mem.yml", old, strlen(old), other, strlen(other),
			  res.value, &err) < 0,
	   "verify: a change beside the value is refused");
	is_str(err ? err->msg : NULL,
	       "mem.yml: after the splice the file reads differently at 1:40, "
	       "not only in the value of SANDBOXD_RUNTIMES; nothing was "
	       "written (a bug in sbxcat)",
	       "verify: the message names the place");
	sbx_error_free(&err);
	compose_result_release(&res);
}

/* A write that would take the file past sbxcat's own read limit. */
static void run_size_limit(void)
{
	static const char head[] = "services: {sandboxd: {environment: "
				   "{SANDBOXD_RUNTIMES: ''}}}\n#";
	size_t len = COMPOSE_MAX_BYTES - 10;
	char *text = xmalloc(len + 1);
	struct compose_result res;
	struct sbx_error *err = NULL;

	memset(text, 'x', len);
	memcpy(text, head, strlen(head));
	text[len - 1] = '\n';
	text[len] = '\0';
	ok(compose_splice(&cat, "big.yml", text, len, &res, &err) < 0,
	   "a write past the %u-byte limit is refused",
	   (unsigned)COMPOSE_MAX_BYTES);
	ok(err &&
	       strstr(err->msg, "big.yml:1:56: the new value of "
				"SANDBOXD_RUNTIMES would make the file ") &&
	       strstr(err->msg, "over the limit of 4194304; nothing was "
				"written"),
	   "size limit: message");
	diag("%s", err ? err->msg : "(accepted)");
	sbx_error_free(&err);
	free(text);
}

static void run_files(void)
{
	char dir[] = "/tmp/t-compose-XXXXXX";
	struct compose_result res;
	struct sbx_error *err = NULL;
	struct stat st;
	const char *text = "services: {sandboxd: {environment: "
			   "{SANDBOXD_RUNTIMES: ''}}}\n";
	cleanup_free char *path = NULL;
	cleanup_free char *link = NULL;
	cleanup_free char *got = NULL;
	FILE *f;

	if (!mkdtemp(dir))
		bail_out("mkdtemp: %s", strerror(errno));
	path = xasprintf("%s/c.yml", dir);
	link = xasprintf("%s/link.yml", dir);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		bail_out("cannot write %s", path);
	if (chmod(path, 0640) < 0 || symlink("c.yml", link) < 0)
		bail_out("cannot set up %s", dir);

	if (compose_prepare(&cat, link, &res, &err) < 0)
		bail_out("%s", err->msg);
	ok(compose_write(link, &res, &err) == 0, "write through a link");
	ok(lstat(link, &st) == 0 && S_ISLNK(st.st_mode),
	   "the link is still a link");
	ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640,
	   "the mode is kept");
	got = slurp(path, NULL);
	is_str(got, res.text, "the file holds the new text");
	compose_result_release(&res);

	if (chmod(path, 0444) < 0)
		bail_out("chmod: %s", strerror(errno));
	ok(compose_check_writable(path, &err) < 0,
	   "a file with no write bit is refused, even for root");
	{
		cleanup_free char *want = xasprintf(
		    "cannot write '%s': the file is read-only (mode 444)",
		    path);
		is_str(err ? err->msg : NULL, want, "read-only: message");
		is_int(err ? tap_status(err) : 0, 3,
		       "read-only: status 3");
	}
	sbx_error_free(&err);
	ok(compose_prepare(&cat, "/nonexistent/c.yml", &res, &err) < 0 &&
	       tap_status(err) == 3,
	   "an unreadable file: status 3");
	sbx_error_free(&err);

	unlink(link);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const char *srcdir = getenv("srcdir");
	cleanup_free char *dir =
	    xasprintf("%s/tests/compose", srcdir ? srcdir : ".");
	struct sbx_error *err = NULL;
	cleanup_free char *want = NULL;
	cleanup_free char *want_bridge = NULL;
	cleanup_free char *v = NULL;
	cleanup_free char *vb = NULL;

	if (chdir(dir) < 0)
		bail_out("cannot enter %s", dir);
	catalog_init(&cat);
	if (catalog_load(&cat, "catalog.json", &err) < 0)
		bail_out("%s", err->msg);
	if (!catalog_valid(&cat))
		bail_out("tests/compose/catalog.json is not valid");

	want = slurp("value.json", NULL);
	want_bridge = slurp("value-bridge.json", NULL);
	chomp(want);
	chomp(want_bridge);
	v = compose_value(&cat, false);
	vb = compose_value(&cat, true);
	is_str(v, want, "the value: catalogue order, env order, network_mode");
	is_str(vb, want_bridge,
	       "the value when the service is already bridge: no network_mode");

	run_pairs();
	run_bad_files();
	run_made_cases();
	run_verify();
	run_size_limit();
	run_files();
	catalog_release(&cat);
	return done_testing();
}

/*
 * catalog.c - parse and validate the runtime catalogue (brief section 3).
 *
 * jansson does the parsing and decoding; jsonpos supplies the line and
 * column of every value and sees duplicate keys.  Validation never stops at
 * the first problem: each one becomes a diagnostic, so an operator fixes a
 * catalogue in one round instead of one error per run.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "basic/error.h"
#include "basic/jsonpos.h"
#include "basic/size.h"
#include "basic/suggest.h"
#include "basic/util.h"
#include "basic/xjson.h"

static const char *const known_fields[] = {
    "alias",	"description", "image",	   "base_image", "setup_commands",
    "packages", "env_vars",    "briefing", "mem_limit",	 "needs_network",
};
#define NFIELDS (sizeof(known_fields) / sizeof(known_fields[0]))

#define ALIAS_MAX 32
#define DESCRIPTION_MAX 200

void catalog_init(struct catalog *cat)
{
	memset(cat, 0, sizeof(*cat));
}

static void runtime_release(struct runtime *rt)
{
	free(rt->alias);
	free(rt->description);
	free(rt->image);
	free(rt->base_image);
	strv_free(rt->setup_commands, rt->nsetup);
	strv_free(rt->packages, rt->npackages);
	for (size_t i = 0; i < rt->nenv; i++) {
		free(rt->env[i].name);
		free(rt->env[i].value);
	}
	free(rt->env);
	strv_free(rt->briefing, rt->nbriefing);
	free(rt->mem_limit);
}

void catalog_release(struct catalog *cat)
{
	for (size_t i = 0; i < cat->n; i++)
		runtime_release(&cat->rt[i]);
	free(cat->rt);
	for (size_t i = 0; i < cat->ndiags; i++) {
		free(cat->diags[i].entry);
		free(cat->diags[i].field);
		free(cat->diags[i].msg);
	}
	free(cat->diags);
	free(cat->path);
	catalog_init(cat);
}

/* Validation context for one entry. */
struct vctx {
	struct catalog *cat;
	int index;
	char *entry; /* label used in messages */
};

static void add_diag(struct catalog *cat, int line, int col, int index,
		     const char *entry, const char *field, char *msg)
{
	struct catalog_diag *d;

	ALLOC_GROW(cat->diags, cat->ndiags + 1, cat->adiags);
	d = &cat->diags[cat->ndiags++];
	d->line = line;
	d->col = col;
	d->index = index;
	d->entry = entry ? xstrdup(entry) : NULL;
	d->field = field ? xstrdup(field) : NULL;
	d->msg = msg;
}

__attribute__((format(printf, 4, 5))) static void vdiag(struct vctx *v,
							const struct jpos *at,
							const char *field,
							const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	add_diag(v->cat, at ? at->line : 0, at ? at->col : 0, v->index,
		 v->entry, field, msg);
}

/* As vdiag, with a message already made (taken over). */
static void vdiag_msg(struct vctx *v, const struct jpos *at, const char *field,
		      char *msg)
{
	add_diag(v->cat, at ? at->line : 0, at ? at->col : 0, v->index,
		 v->entry, field, msg);
}

static const char *type_name(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "something else";
}

/* Check that j is a string without control characters; report if not. */
static bool want_string(struct vctx *v, const json_t *j, const struct jpos *at,
			const char *field)
{
	uint32_t cp = 0;
	size_t where;

	if (!json_is_string(j)) {
		vdiag(v, at, field, "must be a string, not %s", type_name(j));
		return false;
	}
	where =
	    text_find_control(json_string_value(j), json_string_length(j), &cp);
	if (where) {
		vdiag(v, at, field,
		      "contains a control character (U+%04X) at character %zu; "
		      "strings must be one line of printable text",
		      (unsigned)cp, where);
		return false;
	}
	return true;
}

/*
 * The grammars below are written out by hand: glibc's regcomp/regexec cost
 * 1.7 ms per image reference, which made checking a 1,000-entry catalogue
 * take 400 ms.
 */
static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* Count of leading characters of s that are in set. */
static size_t span_class(const char *s, size_t n, bool (*in)(char))
{
	size_t i = 0;
	while (i < n && in(s[i]))
		i++;
	return i;
}

/* [a-z0-9]+(([_.]|__|-+)[a-z0-9]+)* over exactly s[0..n) */
static bool is_path_component(const char *s, size_t n)
{
	size_t i = span_class(s, n, is_lower_alnum);
	if (i == 0)
		return false;
	while (i < n) {
		size_t sep = i, k;
		if (s[i] == '.') {
			i++;
		} else if (s[i] == '_') {
			i += (i + 1 < n && s[i + 1] == '_') ? 2 : 1;
		} else {
			while (i < n && s[i] == '-')
				i++;
		}
		if (i == sep)
			return false;
		k = span_class(s + i, n - i, is_lower_alnum);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

static bool is_alnum_dash(char c)
{
	return is_alnum(c) || c == '-';
}

/* domain-component(.domain-component)*(:port)? over exactly s[0..n) */
static bool is_domain(const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t end = colon ? (size_t)(colon - s) : n;
	size_t i = 0;

	if (colon) {
		size_t digits = n - end - 1;
		if (digits == 0)
			return false;
		for (size_t k = end + 1; k < n; k++)
			if (s[k] < '0' || s[k] > '9')
				return false;
	}
	while (i < end) {
		size_t k = span_class(s + i, end - i, is_alnum_dash);
		if (k == 0 || s[i] == '-' || s[i + k - 1] == '-')
			return false;
		i += k;
		if (i < end) {
			if (s[i] != '.' || i + 1 == end)
				return false;
			i++;
		}
	}
	return end > 0;
}

static bool is_tag_char(char c)
{
	return is_alnum(c) || c == '_' || c == '.' || c == '-';
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= 'f') && (c <= '9' || c >= 'a');
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/*
 * A digest Docker accepts: the grammar admits any algorithm and 32 or more
 * hex digits, but go-digest then refuses an algorithm it has no hash for
 * and an encoded part of the wrong length or case.  Docker links sha256,
 * sha384 and sha512.
 */
static bool is_digest(const char *s)
{
	static const struct {
		const char *alg;
		size_t hex;
	} algs[] = {{"sha256:", 64}, {"sha384:", 96}, {"sha512:", 128}};

	for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
		size_t al = strlen(algs[i].alg);
		if (strncmp(s, algs[i].alg, al) == 0)
			return strlen(s + al) == algs[i].hex &&
			       span_class(s + al, algs[i].hex, is_lower_hex) ==
				   algs[i].hex;
	}
	return false;
}

/* Docker's reference grammar (distribution/reference), without IPv6 hosts:
 * [domain/]path[/path...][:tag][@digest].  *namelen is the length of the
 * name, *domainlen that of its domain (0 when there is none). */
static bool is_image_ref(const char *s, size_t *namelen, size_t *domainlen)
{
	const char *at = strchr(s, '@');
	size_t n = at ? (size_t)(at - s) : strlen(s);
	const char *slash = memrchr(s, '/', n);
	const char *colon = memrchr(s, ':', n);
	size_t start = 0;

	*domainlen = 0;
	if (colon && (!slash || colon > slash)) {
		size_t tl = n - (size_t)(colon - s) - 1;
		if (tl == 0 || tl > 128 || colon[1] == '.' || colon[1] == '-' ||
		    span_class(colon + 1, tl, is_tag_char) != tl)
			return false;
		n = (size_t)(colon - s);
	}
	*namelen = n;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '/')
			continue;
		/* The first of several components is a registry host when it
		 * looks like one, as Docker decides: a '.', a ':' or localhost.
		 */
		if (start == 0 && i < n && is_domain(s, i) &&
		    (memchr(s, '.', i) || memchr(s, ':', i) ||
		     (i == 9 && memcmp(s, "localhost", 9) == 0)))
			*domainlen = i;
		else if (!is_path_component(s + start, i - start))
			return false;
		start = i + 1;
	}
	return true;
}

/*
 * The length of the name as Docker normalises it before it applies its
 * limit of 255: "busybox" is "docker.io/library/busybox", a name with a
 * path but no domain gets "docker.io/", and "index.docker.io" is
 * "docker.io".
 */
static size_t normalized_name_length(const char *s, size_t namelen,
				     size_t domainlen)
{
	if (domainlen == 15 && memcmp(s, "index.docker.io", 15) == 0)
		return namelen - 6;
	if (domainlen)
		return namelen;
	return strlen("docker.io/") +
	       (memchr(s, '/', namelen) ? 0 : strlen("library/")) + namelen;
}

/* The value quoted for a message, made only when there is a message. */
#define QUOTED(s) (q ? q : (q = text_quote_short(s)))

char *catalog_check_alias(const char *s)
{
	size_t n = strlen(s);
	cleanup_free char *q = NULL;

	if (n == 0)
		return xstrdup("must not be empty");
	if (!(s[0] >= 'a' && s[0] <= 'z'))
		return xasprintf("%s must start with a lower-case letter",
				 QUOTED(s));
	if (strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
		return xasprintf("%s may contain only lower-case letters, "
				 "digits and '-'",
				 QUOTED(s));
	if (n > ALIAS_MAX)
		return xasprintf("%s is %zu characters long; the limit is %d",
				 QUOTED(s), n, ALIAS_MAX);
	return NULL;
}

char *catalog_check_image_ref(const char *s)
{
	cleanup_free char *q = NULL;
	const char *at = strchr(s, '@');
	size_t namelen = 0, domainlen = 0;

	if (!*s)
		return xstrdup("must not be empty");
	if (at && !is_digest(at + 1))
		return xasprintf("%s is not a valid image reference: a digest "
				 "is 'sha256:' and 64 lower-case hex digits "
				 "(or sha384 with 96, sha512 with 128)",
				 QUOTED(s));
	if (!is_image_ref(s, &namelen, &domainlen))
		return xasprintf("%s is not a valid image reference "
				 "([registry/]name[:tag][@digest], name in "
				 "lower case)",
				 QUOTED(s));
	if (strlen(s) == 64 && span_class(s, 64, is_lower_hex) == 64)
		return xasprintf("%s is not a valid image reference: 64 hex "
				 "digits alone are read as an image ID",
				 QUOTED(s));
	if (normalized_name_length(s, namelen, domainlen) > 255)
		return xasprintf(
		    "%s is not a valid image reference: the name is "
		    "longer than 255 characters",
		    QUOTED(s));
	return NULL;
}

static bool is_pkg_name_char(char c)
{
	return is_alnum(c) || c == '.' || c == '_' || c == '-';
}

/* [A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])? at s; returns its length. */
static size_t pkg_name(const char *s)
{
	size_t n;
	if (!is_alnum(s[0]))
		return 0;
	n = span_class(s, strlen(s), is_pkg_name_char);
	while (n > 1 && !is_alnum(s[n - 1]))
		n--;
	return n;
}

static bool is_version_char(char c)
{
	return is_alnum(c) || strchr(".*+!_-", c) != NULL;
}

/* name [extras] [op version (, op version)*], PEP 508 without markers or
 * URLs: what pip reads as a plain requirement. */
static bool is_plain_requirement(const char *s)
{
	static const char *const ops[] = {
	    "===", "==", "!=", "~=", "<=", ">=", "<", ">", NULL};
	size_t n = pkg_name(s);

	if (n == 0)
		return false;
	s += n;
	if (*s == '[') {
		do {
			s++;
			n = pkg_name(s);
			if (n == 0)
				return false;
			s += n;
		} while (*s == ',');
		if (*s++ != ']')
			return false;
	}
	if (!*s)
		return true;
	for (;;) {
		const char *const *op;
		for (op = ops; *op; op++)
			if (strncmp(s, *op, strlen(*op)) == 0)
				break;
		if (!*op)
			return false;
		s += strlen(*op);
		n = span_class(s, strlen(s), is_version_char);
		if (n == 0)
			return false;
		s += n;
		if (!*s)
			return true;
		if (*s++ != ',')
			return false;
	}
}

char *catalog_check_package(const char *s)
{
	cleanup_free char *q = NULL;
	const char *p;

	if (!*s)
		return xstrdup("must not be empty");
	if (s[0] == '-')
		return xasprintf("%s is not a plain PEP 508 requirement: pip "
				 "options are not allowed (nothing may start "
				 "with '-')",
				 QUOTED(s));
	if (strstr(s, "://") || strchr(s, '@'))
		return xasprintf("%s is not a plain PEP 508 requirement: URLs "
				 "and direct references are not allowed",
				 QUOTED(s));
	p = strpbrk(s, "'\"`");
	if (p)
		return xasprintf("%s is not a plain PEP 508 requirement: quote "
				 "%c is not allowed",
				 QUOTED(s), *p);
	p = strpbrk(s, ";&|$\\(){}#");
	if (p)
		return xasprintf("%s is not a plain PEP 508 requirement: shell "
				 "metacharacter '%c' is not allowed",
				 QUOTED(s), *p);
	if (strpbrk(s, " \t"))
		return xasprintf("%s is not a plain PEP 508 requirement: "
				 "whitespace is not allowed",
				 QUOTED(s));
	if (!is_plain_requirement(s))
		return xasprintf(
		    "%s is not a plain PEP 508 requirement (a name, "
		    "optional [extras], optional version "
		    "specifiers such as '>=2,<3')",
		    QUOTED(s));
	return NULL;
}

char *catalog_check_env_name(const char *s)
{
	cleanup_free char *q = NULL;
	if (!(is_alpha(s[0]) || s[0] == '_') ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		      "0123456789_") != strlen(s))
		return xasprintf(
		    "%s is not a valid environment variable name "
		    "(a letter or '_', then letters, digits or '_')",
		    QUOTED(s));
	return NULL;
}

/* The one grammar of sizes (basic/size.h), a memory limit's bounds. */
char *catalog_check_mem_limit(const char *s)
{
	unsigned long long bytes;

	return size_parse(s, &size_memory, &bytes);
}

static const char *did_you_mean(const char *key)
{
	return suggest_word(key, known_fields, NFIELDS);
}

static bool is_known_field(const char *key)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (strcmp(key, known_fields[i]) == 0)
			return true;
	return false;
}

/* The position of member key's value, or of the entry when absent. */
static const struct jpos *member_pos(const struct jpos *pe, const char *key)
{
	const struct jpos_member *m = jpos_member(pe, key);
	return m ? m->val : pe;
}

/* jansson keeps the last of two equal keys; the operator meant one.  The
 * position scan noted each key's first member, so this is one pass. */
static void check_duplicates(struct vctx *v, const struct jpos *obj,
			     const char *prefix)
{
	if (!obj || obj->kind != '{')
		return;
	for (size_t i = 0; i < obj->n; i++) {
		const struct jpos_member *m = &obj->members[i];
		const struct jpos_member *first = &obj->members[m->first];
		struct jpos at = {.line = m->kline, .col = m->kcol};
		cleanup_free char *q = NULL;
		cleanup_free char *field = NULL;

		if (m->first == i)
			continue;
		q = text_quote_short(m->key);
		field = xasprintf("%s%.*s", prefix, (int)strlen(q) - 2, q + 1);
		vdiag(v, &at, field,
		      "duplicate key; the first is at line %d, column %d",
		      first->kline, first->kcol);
	}
}

static void check_keys(struct vctx *v, json_t *e, const struct jpos *pe)
{
	const char *key;
	json_t *val;

	check_duplicates(v, pe, "");
	json_object_foreach(e, key, val)
	{
		const struct jpos_member *m = jpos_member(pe, key);
		struct jpos at = {.line = m ? m->kline : 0,
				  .col = m ? m->kcol : 0};
		cleanup_free char *q = NULL;
		const char *hint;

		(void)val;
		if (is_known_field(key))
			continue;
		q = text_quote_short(key);
		hint = did_you_mean(key);
		/* Unknown keys are named by msgquote: they may hold anything.
		 */
		vdiag_msg(v, &at, NULL,
			  hint ? xasprintf("%s: unknown field; did you mean "
					   "'%s'?",
					   q, hint)
			       : xasprintf("%s: unknown field", q));
	}
}

/* A string field; stores a copy in *out when valid. */
static bool get_string_field(struct vctx *v, json_t *e, const struct jpos *pe,
			     const char *key, char **out)
{
	json_t *j = json_object_get(e, key);
	if (!j)
		return false;
	if (!want_string(v, j, member_pos(pe, key), key))
		return false;
	*out = xstrdup(json_string_value(j));
	return true;
}

typedef char *(*item_check_fn)(const char *);

/* An array of strings, each checked by check (may be NULL). */
static void get_string_array(struct vctx *v, json_t *e, const struct jpos *pe,
			     const char *key, item_check_fn check, char ***out,
			     size_t *nout)
{
	json_t *arr = json_object_get(e, key);
	const struct jpos *pa = member_pos(pe, key);
	size_t i;
	json_t *item;

	if (!arr)
		return;
	if (!json_is_array(arr)) {
		vdiag(v, pa, key, "must be an array of strings, not %s",
		      type_name(arr));
		return;
	}
	*out = xcalloc(json_array_size(arr), sizeof(char *));
	json_array_foreach(arr, i, item)
	{
		cleanup_free char *field = xasprintf("%s[%zu]", key, i);
		const struct jpos *pi = jpos_item(pa, i);
		const char *s;
		char *msg;

		if (!want_string(v, item, pi, field))
			continue;
		s = json_string_value(item);
		if (!*s) {
			vdiag(v, pi, field, "must not be empty");
			continue;
		}
		msg = check ? check(s) : NULL;
		if (msg) {
			vdiag_msg(v, pi, field, msg);
			continue;
		}
		(*out)[(*nout)++] = xstrdup(s);
	}
}

/*
 * White space as Docker's Dockerfile parser (Go's unicode.IsSpace, used by
 * strings.TrimSpace) reads it: it trims all of these from the arguments of
 * RUN before deciding between the shell form and the exec form.
 */
static bool is_go_space(uint32_t cp)
{
	return (cp >= 0x09 && cp <= 0x0D) || cp == ' ' || cp == 0x85 ||
	       cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
	       cp == 0x3000;
}

/*
 * A setup command becomes one shell-form RUN line, "RUN " and the value,
 * and must stay one: nothing in it may change what RUN does.
 */
static char *check_setup_command(const char *s)
{
	size_t n = strlen(s), i = 0;
	uint32_t cp = 0;

	/* Docker trims white space before it looks at the arguments. */
	while (i < n) {
		size_t k = utf8_decode(s + i, n - i, &cp);
		if (k == 0 || !is_go_space(cp))
			break;
		i += k;
	}
	if (i == n)
		return xstrdup("is only white space, which would make a RUN "
			       "with no command");
	if (s[i] == '-')
		return xstrdup(
		    "starts with '-', which Docker reads as an option of RUN "
		    "(such as --network=host or --mount) or the shell as one "
		    "of its own; start with the command");
	if (s[i] == '[')
		return xstrdup(
		    "starts with '[', which Docker reads as the exec "
		    "form of RUN (a JSON array run without a "
		    "shell); start with the command");
	/* Docker continues a line that ends in a backslash and blanks. */
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n && s[n - 1] == '\\')
		return xstrdup(
		    "ends with a backslash, which would continue onto "
		    "the next Dockerfile line");
	/* BuildKit reads '<<WORD' in a RUN line as a heredoc whose body is
	 * the following lines: the next instructions. */
	if (strstr(s, "<<"))
		return xstrdup("contains '<<', which Docker reads as a heredoc "
			       "taking in the next Dockerfile lines; write the "
			       "text with printf instead");
	return NULL;
}

static void get_env(struct vctx *v, json_t *e, const struct jpos *pe,
		    struct runtime *rt)
{
	json_t *obj = json_object_get(e, "env_vars");
	const struct jpos *po = member_pos(pe, "env_vars");
	const char *name;
	json_t *val;

	if (!obj)
		return;
	if (!json_is_object(obj)) {
		vdiag(v, po, "env_vars",
		      "must be an object mapping names to strings, not %s",
		      type_name(obj));
		return;
	}
	check_duplicates(v, po, "env_vars.");
	rt->env = xcalloc(json_object_size(obj), sizeof(*rt->env));
	json_object_foreach(obj, name, val)
	{
		const struct jpos_member *m = jpos_member(po, name);
		struct jpos at = {.line = m ? m->kline : 0,
				  .col = m ? m->kcol : 0};
		cleanup_free char *field = NULL;
		cleanup_free char *qname = text_quote_short(name);
		uint32_t cp;
		char *msg;

		/* Report a bad name by its quoted form: it may hold anything.
		 */
		if (text_find_control(name, strlen(name), &cp))
			field = xasprintf("env_vars.%.*s",
					  (int)strlen(qname) - 2, qname + 1);
		else
			field = xasprintf("env_vars.%s", name);
		msg = catalog_check_env_name(name);
		if (msg) {
			add_diag(v->cat, at.line, at.col, v->index, v->entry,
				 field, msg);
			continue;
		}
		if (!want_string(v, val, m ? m->val : po, field))
			continue;
		rt->env[rt->nenv].name = xstrdup(name);
		rt->env[rt->nenv].value = xstrdup(json_string_value(val));
		rt->nenv++;
	}
}

static void validate_entry(struct catalog *cat, int index, json_t *e,
			   const struct jpos *pe, struct runtime *rt)
{
	struct vctx v = {.cat = cat, .index = index};
	json_t *j;
	char *msg;
	bool has_image, has_base;

	/* Name the entry by its alias only when the alias is valid: an
	 * invalid one may be anything, even a whole paragraph. */
	j = json_object_get(e, "alias");
	msg = json_is_string(j) ? catalog_check_alias(json_string_value(j))
				: xstrdup("");
	if (!msg && !text_find_control(json_string_value(j),
				       json_string_length(j), &(uint32_t){0}))
		v.entry = xasprintf("'%s'", json_string_value(j));
	else
		v.entry = xasprintf("$[%d]", index);
	free(msg);
	if (!json_is_object(e)) {
		vdiag(&v, pe, NULL, "must be an object, not %s", type_name(e));
		free(v.entry);
		return;
	}

	check_keys(&v, e, pe);

	if (!j) {
		vdiag(&v, pe, "alias", "required field is missing");
	} else if (want_string(&v, j, member_pos(pe, "alias"), "alias")) {
		msg = catalog_check_alias(json_string_value(j));
		if (msg)
			vdiag_msg(&v, member_pos(pe, "alias"), "alias", msg);
		else
			rt->alias = xstrdup(json_string_value(j));
	}

	if (!json_object_get(e, "description")) {
		vdiag(&v, pe, "description", "required field is missing");
	} else if (get_string_field(&v, e, pe, "description",
				    &rt->description)) {
		size_t chars =
		    utf8_chars(rt->description, strlen(rt->description));
		if (chars == 0)
			vdiag(&v, member_pos(pe, "description"), "description",
			      "must not be empty");
		else if (chars > DESCRIPTION_MAX)
			vdiag(&v, member_pos(pe, "description"), "description",
			      "is %zu characters long; it must be 1 to %d",
			      chars, DESCRIPTION_MAX);
	}

	has_image = json_object_get(e, "image") != NULL;
	has_base = json_object_get(e, "base_image") != NULL;
	if (has_image && has_base)
		vdiag(&v, member_pos(pe, "base_image"), "base_image",
		      "an entry has 'image' or 'base_image', never both");
	else if (!has_image && !has_base)
		vdiag(&v, pe, NULL,
		      "needs 'image' (a ready-made image) or 'base_image' "
		      "(built by sbxcat)");
	if (get_string_field(&v, e, pe, "image", &rt->image) &&
	    (msg = catalog_check_image_ref(rt->image)))
		vdiag_msg(&v, member_pos(pe, "image"), "image", msg);
	if (get_string_field(&v, e, pe, "base_image", &rt->base_image) &&
	    (msg = catalog_check_image_ref(rt->base_image)))
		vdiag_msg(&v, member_pos(pe, "base_image"), "base_image", msg);

	if (has_image && !has_base) {
		static const char *const build_only[] = {"packages",
							 "setup_commands"};
		for (size_t k = 0; k < 2; k++)
			if (json_object_get(e, build_only[k]))
				vdiag(&v, member_pos(pe, build_only[k]),
				      build_only[k],
				      "an 'image' entry builds nothing, so it "
				      "installs nothing; use 'base_image' to "
				      "install");
	}

	get_string_array(&v, e, pe, "setup_commands", check_setup_command,
			 &rt->setup_commands, &rt->nsetup);
	get_string_array(&v, e, pe, "packages", catalog_check_package,
			 &rt->packages, &rt->npackages);
	get_string_array(&v, e, pe, "briefing", NULL, &rt->briefing,
			 &rt->nbriefing);
	get_env(&v, e, pe, rt);

	if (get_string_field(&v, e, pe, "mem_limit", &rt->mem_limit) &&
	    (msg = catalog_check_mem_limit(rt->mem_limit)))
		vdiag_msg(&v, member_pos(pe, "mem_limit"), "mem_limit", msg);

	j = json_object_get(e, "needs_network");
	if (j && !json_is_boolean(j))
		vdiag(&v, member_pos(pe, "needs_network"), "needs_network",
		      "must be true or false, not %s", type_name(j));
	rt->needs_network = json_is_true(j);

	free(v.entry);
}

/* Position of the first byte that is not valid UTF-8, or 0 if all are. */
/* Line and column (in characters) of byte offset off of valid text. */
static void position_of(const char *s, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)s[i] & 0xC0) != 0x80) {
			(*col)++;
		}
	}
}

static void file_diag(struct catalog *cat, int line, int col, char *msg)
{
	add_diag(cat, line, col, -1, NULL, NULL, msg);
}

static int cmp_alias_index(const void *a, const void *b, void *arg)
{
	const struct runtime *rt = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(rt[x].alias, rt[y].alias);
	return c ? c : (x < y ? -1 : 1);
}

/* Aliases name images, directories and compose keys: one each.  Sorting
 * keeps this O(n log n) for big catalogues, and each run of equal aliases
 * is reported against its first entry in one pass. */
static void report_duplicate_aliases(struct catalog *cat,
				     const struct jpos *proot)
{
	size_t *idx = xcalloc(cat->n, sizeof(*idx));
	size_t m = 0, first = 0;

	for (size_t i = 0; i < cat->n; i++)
		if (cat->rt[i].alias)
			idx[m++] = i;
	qsort_r(idx, m, sizeof(*idx), cmp_alias_index, cat->rt);
	for (size_t k = 1; k < m; k++) {
		size_t i = idx[k];
		struct vctx v = {.cat = cat, .index = (int)i};

		if (strcmp(cat->rt[idx[k - 1]].alias, cat->rt[i].alias) != 0) {
			first = k;
			continue;
		}
		v.entry = xasprintf("'%s'", cat->rt[i].alias);
		vdiag(&v, member_pos(jpos_item(proot, i), "alias"), "alias",
		      "duplicate alias; entry #%zu already uses it",
		      idx[first] + 1);
		free(v.entry);
	}
	free(idx);
}

/* Report in reading order; the entry checks run field by field. */
static int cmp_diag(const void *a, const void *b)
{
	const struct catalog_diag *x = a, *y = b;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return strcmp(x->msg, y->msg);
}

static void sort_diags(struct catalog *cat)
{
	if (cat->ndiags > 1) /* qsort(NULL, 0) is undefined */
		qsort(cat->diags, cat->ndiags, sizeof(*cat->diags), cmp_diag);
}

static bool all_blank(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", buf[i]) || buf[i] == '\0')
			return false;
	return true;
}

static void clear_results(struct catalog *cat)
{
	char *path = cat->path;
	cat->path = NULL;
	catalog_release(cat);
	cat->path = path;
}

/* Validate every entry; proot may be NULL (no positions known). */
static void validate(struct catalog *cat, json_t *root,
		     const struct jpos *proot)
{
	size_t i;
	json_t *e;

	if (!json_is_array(root)) {
		file_diag(cat, proot ? proot->line : 0, proot ? proot->col : 0,
			  xasprintf("a catalogue is a JSON array of runtime "
				    "entries, not %s",
				    type_name(root)));
		return;
	}
	if (json_array_size(root) == 0) {
		file_diag(cat, proot ? proot->line : 0, proot ? proot->col : 0,
			  xstrdup("the catalogue has no runtimes; it needs at "
				  "least one, and the first is the default"));
		return;
	}
	cat->rt = xcalloc(json_array_size(root), sizeof(*cat->rt));
	cat->n = json_array_size(root);
	json_array_foreach(root, i, e)
	    validate_entry(cat, (int)i, e, jpos_item(proot, i), &cat->rt[i]);
	report_duplicate_aliases(cat, proot);
	sort_diags(cat);
}

void catalog_load_buffer(struct catalog *cat, const char *path, const char *buf,
			 size_t len)
{
	json_error_t jerr;
	json_t *root;
	struct jpos *proot;
	long bad;
	int line, col;

	free(cat->path);
	cat->path = xstrdup(path);

	/* Editors on some systems write a byte order mark; it carries nothing.
	 */
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
		buf += 3;
		len -= 3;
	}
	if (all_blank(buf, len)) {
		file_diag(
		    cat, 0, 0,
		    xstrdup("the file is empty; a catalogue is a JSON array "
			    "of runtime entries"));
		return;
	}
	bad = utf8_first_invalid(buf, len);
	if (bad >= 0) {
		position_of(buf, (size_t)bad, &line, &col);
		file_diag(
		    cat, line, col,
		    xasprintf("not valid UTF-8 (byte 0x%02x); a catalogue "
			      "must be UTF-8 text",
			      (unsigned char)buf[bad]));
		return;
	}

	/*
	 * Positions cost as much as the parse and are needed only to report a
	 * problem, so a catalogue is first validated without them; when that
	 * finds anything (or jansson meets a duplicate key, which only the
	 * position scan can report in full), it is validated again with them.
	 */
	root = json_loadb(buf, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
			  &jerr);
	if (root) {
		validate(cat, root, NULL);
		if (catalog_valid(cat)) {
			json_decref(root);
			return;
		}
		clear_results(cat);
	} else if (json_error_code(&jerr) == json_error_duplicate_key) {
		root = json_loadb(buf, len, JSON_ALLOW_NUL, &jerr);
	}
	if (!root) {
		/* jansson says column 0 at the start of a line; editors say 1.
		 */
		file_diag(cat, jerr.line, jerr.column > 0 ? jerr.column : 1,
			  xasprintf("invalid JSON: %s", jerr.text));
		return;
	}
	proot = jpos_scan(buf, len);
	validate(cat, root, proot);
	jpos_free(proot);
	json_decref(root);
}

int catalog_load(struct catalog *cat, const char *path, struct sbx_error **err)
{
	struct sbx_error *rerr = NULL;
	char *buf = NULL;
	size_t len = 0;

	if (read_file_limited(path, CATALOG_MAX_BYTES, &buf, &len, &rerr) < 0) {
		if (rerr->kind != SBX_E_REFUSED) {
			*err = rerr;
			return -1;
		}
		/* Too large is a property of the catalogue, not the machine. */
		free(cat->path);
		cat->path = xstrdup(path);
		file_diag(cat, 0, 0,
			  xasprintf("the file is larger than %u bytes; a "
				    "catalogue that size is a mistake",
				    CATALOG_MAX_BYTES));
		sbx_error_free(&rerr);
		return 0;
	}
	catalog_load_buffer(cat, path, buf, len);
	free(buf);
	return 0;
}

char *catalog_diag_format(const struct catalog *cat,
			  const struct catalog_diag *d)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, cat->path);
	if (d->line > 0)
		strbuf_addf(&sb, ":%d:%d", d->line, d->col);
	strbuf_addstr(&sb, ": ");
	if (d->entry)
		strbuf_addf(&sb, "entry %s (#%d): ", d->entry, d->index + 1);
	if (d->field)
		strbuf_addf(&sb, "'%s': ", d->field);
	strbuf_addstr(&sb, d->msg);
	return strbuf_detach(&sb, NULL);
}

json_t *catalog_diags_json(const struct catalog *cat)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < cat->ndiags; i++) {
		const struct catalog_diag *d = &cat->diags[i];
		const struct runtime *rt =
		    d->index >= 0 ? &cat->rt[d->index] : NULL;
		json_t *o = xjson_pack(
		    "{s:o, s:o, s:o, s:o, s:o, s:o}", "line",
		    d->line ? json_integer(d->line) : json_null(), "column",
		    d->col ? json_integer(d->col) : json_null(), "entry",
		    d->index >= 0 ? json_integer(d->index + 1) : json_null(),
		    "alias",
		    rt && rt->alias ? xjson_text(rt->alias) : json_null(),
		    "field", d->field ? xjson_text(d->field) : json_null(),
		    "message", xjson_text(d->msg));
		xjson_set_path(o, "file", cat->path);
		json_array_append_new(arr, o);
	}
	return arr;
}

const struct runtime *catalog_find(const struct catalog *cat, const char *alias)
{
	for (size_t i = 0; i < cat->n; i++)
		if (cat->rt[i].alias && strcmp(cat->rt[i].alias, alias) == 0)
			return &cat->rt[i];
	return NULL;
}

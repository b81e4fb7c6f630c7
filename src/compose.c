/*
 * compose.c - generate SANDBOXD_RUNTIMES and splice it into a compose file
 * without disturbing anything else in it (brief section 5).
 *
 * libyaml finds the scalar: its events carry marks that cover exactly the
 * scalar's source text (quotes included, a trailing comment excluded).  The
 * marks count characters, not bytes, so they are converted by walking the
 * UTF-8 text; a leading byte order mark is taken off before libyaml sees
 * the text and added back to the offsets, so whether a libyaml version
 * counts it does not matter.  The new scalar is written by libyaml's own
 * emitter, double-quoted on one line, because YAML treats NEL, LS and PS as
 * line breaks and only its escapes (\N, \L, \P) carry them through; every
 * '$' is doubled because compose interpolates.  The result is parsed again
 * and must give back exactly the value before anyone may write it.
 */
#include "config.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <yaml.h>

#include "catalog.h"
#include "compose.h"
#include "error.h"
#include "util.h"

/* ---- the value ---- */

static json_t *jstrings(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *runtime_json(const struct runtime *rt, bool service_bridge)
{
	json_t *e = json_object();

	json_object_set_new(e, "description", json_string(rt->description));
	if (rt->image) {
		json_object_set_new(e, "image", json_string(rt->image));
	} else {
		json_t *r = json_object();
		json_t *env = json_object();

		/* env_vars in catalogue order: jansson keeps insertion order.
		 */
		for (size_t i = 0; i < rt->nenv; i++)
			json_object_set_new(env, rt->env[i].name,
					    json_string(rt->env[i].value));
		json_object_set_new(r, "name", json_string(rt->alias));
		json_object_set_new(r, "base_image",
				    json_string(rt->base_image));
		json_object_set_new(r, "description",
				    json_string(rt->description));
		json_object_set_new(r, "setup_commands",
				    jstrings(rt->setup_commands, rt->nsetup));
		json_object_set_new(r, "packages",
				    jstrings(rt->packages, rt->npackages));
		json_object_set_new(r, "env_vars", env);
		json_object_set_new(e, "runtime", r);
	}
	if (rt->mem_limit)
		json_object_set_new(e, "mem_limit", json_string(rt->mem_limit));
	if (rt->needs_network && !service_bridge)
		json_object_set_new(e, "network_mode", json_string("bridge"));
	return e;
}

char *compose_value(const struct catalog *cat, bool service_bridge)
{
	json_t *root = json_object();
	char *s, *copy;

	for (size_t i = 0; i < cat->n; i++)
		json_object_set_new(root, cat->rt[i].alias,
				    runtime_json(&cat->rt[i], service_bridge));
	s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	/* A valid catalogue holds only valid UTF-8, so NULL here can only be
	 * an allocation failure: fatal, as everywhere else. */
	if (!s)
		abort();
	copy = xstrdup(s);
	free(s);
	return copy;
}

/* ---- positions ---- */

/* The byte offset of character number index in valid UTF-8 text. */
static size_t char_to_byte(const char *s, size_t len, size_t index)
{
	size_t i = 0;

	for (; i < len; i++) {
		if (((unsigned char)s[i] & 0xC0) == 0x80)
			continue;
		if (index == 0)
			return i;
		index--;
	}
	return len;
}

/*
 * Line and column (1-based) of byte offset off, as an editor shows them:
 * LF, CRLF and a lone CR end a line; NEL, LS and PS do not, though libyaml
 * counts them, so its own line numbers would point at the wrong line.
 */
static void byte_pos(const char *s, size_t len, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && i < len; i++) {
		unsigned char b = (unsigned char)s[i];
		if (b == '\n' ||
		    (b == '\r' && (i + 1 >= len || s[i + 1] != '\n'))) {
			(*line)++;
			*col = 1;
		} else if ((b & 0xC0) != 0x80 && b != '\r') {
			(*col)++;
		}
	}
}

/* ---- finding the scalar ---- */

/* One scalar found in the environment. */
struct found {
	bool set;
	size_t key;	   /* character mark of the key (or list item) */
	size_t start, end; /* character marks, as libyaml gives them */
	int style;	   /* yaml_scalar_style_t */
	char *value;	   /* as parsed, list-form prefix removed */
};

struct walker {
	yaml_parser_t parser;
	const char *path;
	const char *text; /* what libyaml parses: the file without its BOM */
	size_t len;
	size_t bom; /* bytes of the byte order mark in front of text */
	struct sbx_error **err;

	int nservices, nservice, nenv;
	struct found runtimes;
	bool list_form;
	struct found network;
};

/* Line and column of a libyaml character mark. */
static void mark_pos(const struct walker *w, size_t index, int *line, int *col)
{
	byte_pos(w->text, w->len, char_to_byte(w->text, w->len, index), line,
		 col);
}

__attribute__((format(printf, 3, 4))) static int
fail_at(struct walker *w, size_t index, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int line, col;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	mark_pos(w, index, &line, &col);
	sbx_error_set(w->err, SBX_EXIT_FAIL, 0, "%s:%d:%d: %s", w->path, line,
		      col, msg);
	free(msg);
	return -1;
}

static int yaml_fail(struct walker *w)
{
	yaml_parser_t *p = &w->parser;
	int line, col;

	if (p->error == YAML_MEMORY_ERROR)
		abort(); /* allocation failure is fatal everywhere */
	if (p->error == YAML_READER_ERROR) {
		/* The reader reports a byte offset, not a mark. */
		byte_pos(w->text, w->len, p->problem_offset, &line, &col);
		return sbx_error_set(w->err, SBX_EXIT_FAIL, 0,
				     "%s:%d:%d: invalid YAML: %s", w->path,
				     line, col, p->problem);
	}
	if (p->context) {
		int cl, cc;
		mark_pos(w, p->context_mark.index, &cl, &cc);
		return fail_at(w, p->problem_mark.index,
			       "invalid YAML: %s (%s that starts at %d:%d)",
			       p->problem, p->context, cl, cc);
	}
	return fail_at(w, p->problem_mark.index, "invalid YAML: %s",
		       p->problem ? p->problem : "unknown error");
}

static int next_event(struct walker *w, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&w->parser, ev))
		return yaml_fail(w);
	return 0;
}

/* Consume the rest of the node whose first event is ev. */
static int skip_node(struct walker *w, const yaml_event_t *ev)
{
	int depth;

	if (ev->type != YAML_MAPPING_START_EVENT &&
	    ev->type != YAML_SEQUENCE_START_EVENT)
		return 0;
	depth = 1;
	while (depth > 0) {
		yaml_event_t e;
		if (next_event(w, &e) < 0)
			return -1;
		if (e.type == YAML_MAPPING_START_EVENT ||
		    e.type == YAML_SEQUENCE_START_EVENT)
			depth++;
		else if (e.type == YAML_MAPPING_END_EVENT ||
			 e.type == YAML_SEQUENCE_END_EVENT)
			depth--;
		yaml_event_delete(&e);
	}
	return 0;
}

static bool is_scalar(const yaml_event_t *ev, const char *s)
{
	return ev->type == YAML_SCALAR_EVENT &&
	       strcmp((const char *)ev->data.scalar.value, s) == 0;
}

/*
 * Called for each pair of a mapping whose key is a scalar; must consume
 * the value node that starts with val.
 */
typedef int (*pair_fn)(struct walker *w, const yaml_event_t *key,
		       const yaml_event_t *val);

/* Walk the pairs of a mapping whose start event was just read. */
static int walk_pairs(struct walker *w, pair_fn fn)
{
	for (;;) {
		yaml_event_t k, v;
		int rc;

		if (next_event(w, &k) < 0)
			return -1;
		if (k.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&k);
			return 0;
		}
		if (skip_node(w, &k) < 0 || next_event(w, &v) < 0) {
			yaml_event_delete(&k);
			return -1;
		}
		if (k.type == YAML_SCALAR_EVENT)
			rc = fn(w, &k, &v);
		else
			rc = skip_node(w, &v);
		yaml_event_delete(&k);
		yaml_event_delete(&v);
		if (rc < 0)
			return -1;
	}
}

static const char *style_name(int style)
{
	return style == YAML_LITERAL_SCALAR_STYLE ? "|" : ">";
}

/*
 * Record the scalar that holds SANDBOXD_RUNTIMES.  Everything sbxcat could
 * not replace by one double-quoted scalar without changing what else the
 * file means is refused: an alias (the value lives elsewhere), an anchor
 * (other nodes would silently change), a tag, a block scalar (its extent
 * runs into the lines below), an empty value (there is no text to replace).
 */
static int found_runtimes(struct walker *w, const yaml_event_t *key,
			  const yaml_event_t *val, bool list_form)
{
	const char *what =
	    list_form ? "the item " COMPOSE_KEY : "the value of " COMPOSE_KEY;
	const char *fix = list_form ? "write '- " COMPOSE_KEY "=' and run "
				      "'sbxcat compose'"
				    : "write '" COMPOSE_KEY ": \"\"' and run "
				      "'sbxcat compose'";
	struct found *f = &w->runtimes;
	const char *v;

	if (f->set) {
		int line, col;
		mark_pos(w, f->key, &line, &col);
		return fail_at(w, key->start_mark.index,
			       COMPOSE_KEY
			       " is set twice in service '" COMPOSE_SERVICE
			       "' (first at %d:%d); keep one",
			       line, col);
	}
	if (val->type == YAML_ALIAS_EVENT)
		return fail_at(w, val->start_mark.index,
			       "%s is an alias ('*%s'), which sbxcat cannot "
			       "rewrite in place; %s",
			       what, val->data.alias.anchor, fix);
	if (val->type != YAML_SCALAR_EVENT)
		return fail_at(w, val->start_mark.index,
			       "%s is a %s, not a string; %s", what,
			       val->type == YAML_MAPPING_START_EVENT ? "mapping"
								     : "list",
			       fix);
	if (val->data.scalar.anchor)
		return fail_at(w, val->start_mark.index,
			       "%s carries an anchor ('&%s'), and rewriting it "
			       "would change what refers to it; %s",
			       what, val->data.scalar.anchor, fix);
	if (val->data.scalar.tag)
		return fail_at(w, val->start_mark.index,
			       "%s carries a tag ('%s'); %s", what,
			       val->data.scalar.tag, fix);
	if (val->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
	    val->data.scalar.style == YAML_FOLDED_SCALAR_STYLE)
		return fail_at(w, val->start_mark.index,
			       "%s is a block scalar ('%s'), which sbxcat does "
			       "not rewrite; %s",
			       what, style_name(val->data.scalar.style), fix);

	v = (const char *)val->data.scalar.value;
	if (list_form) {
		if (strcmp(v, COMPOSE_KEY) == 0)
			return fail_at(w, val->start_mark.index,
				       "%s has no value, so compose would take "
				       "it from the host; %s",
				       what, fix);
		v += strlen(COMPOSE_KEY "=");
	} else if (val->start_mark.index == val->end_mark.index) {
		return fail_at(w, val->start_mark.index, "%s is empty; %s",
			       what, fix);
	}
	f->set = true;
	f->key = key->start_mark.index;
	f->start = val->start_mark.index;
	f->end = val->end_mark.index;
	f->style = val->data.scalar.style;
	f->value = xstrdup(v);
	w->list_form = list_form;
	return 0;
}

static int found_network(struct walker *w, const yaml_event_t *key,
			 const yaml_event_t *val, const char *v)
{
	struct found *f = &w->network;

	if (f->set) {
		int line, col;
		mark_pos(w, f->key, &line, &col);
		return fail_at(w, key->start_mark.index,
			       COMPOSE_NETWORK_KEY
			       " is set twice in service '" COMPOSE_SERVICE
			       "' (first at %d:%d); keep one",
			       line, col);
	}
	f->set = true;
	f->key = key->start_mark.index;
	/* Anything but a plain string (an alias, an empty value) is not
	 * "bridge": entries that need a network then say so themselves. */
	f->value = v ? xstrdup(v) : NULL;
	return 0;
}

static int env_pair(struct walker *w, const yaml_event_t *key,
		    const yaml_event_t *val)
{
	if (is_scalar(key, COMPOSE_KEY))
		return found_runtimes(w, key, val, false);
	if (is_scalar(key, COMPOSE_NETWORK_KEY)) {
		const char *v = val->type == YAML_SCALAR_EVENT
				    ? (const char *)val->data.scalar.value
				    : NULL;
		if (found_network(w, key, val, v) < 0)
			return -1;
	}
	return skip_node(w, val);
}

static int env_list(struct walker *w)
{
	static const char rt_prefix[] = COMPOSE_KEY "=";
	static const char net_prefix[] = COMPOSE_NETWORK_KEY "=";

	for (;;) {
		yaml_event_t e;
		const char *v;
		int rc = 0;

		if (next_event(w, &e) < 0)
			return -1;
		if (e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			return 0;
		}
		v = e.type == YAML_SCALAR_EVENT
			? (const char *)e.data.scalar.value
			: "";
		if (strncmp(v, rt_prefix, sizeof(rt_prefix) - 1) == 0 ||
		    strcmp(v, COMPOSE_KEY) == 0)
			rc = found_runtimes(w, &e, &e, true);
		else if (strncmp(v, net_prefix, sizeof(net_prefix) - 1) == 0)
			rc = found_network(w, &e, &e,
					   v + sizeof(net_prefix) - 1);
		else
			rc = skip_node(w, &e);
		yaml_event_delete(&e);
		if (rc < 0)
			return -1;
	}
}

static int alias_fail(struct walker *w, const yaml_event_t *val,
		      const char *what)
{
	return fail_at(w, val->start_mark.index,
		       "%s is an alias ('*%s'); sbxcat edits " COMPOSE_KEY
		       " in place, so write it out in this service",
		       what, val->data.alias.anchor);
}

static int service_pair(struct walker *w, const yaml_event_t *key,
			const yaml_event_t *val)
{
	const char *what = "the environment of service '" COMPOSE_SERVICE "'";

	if (!is_scalar(key, "environment"))
		return skip_node(w, val);
	if (w->nenv++)
		return fail_at(w, key->start_mark.index,
			       "service '" COMPOSE_SERVICE
			       "' has 'environment' "
			       "twice; keep one");
	if (val->type == YAML_ALIAS_EVENT)
		return alias_fail(w, val, what);
	if (val->type == YAML_MAPPING_START_EVENT)
		return walk_pairs(w, env_pair);
	if (val->type == YAML_SEQUENCE_START_EVENT)
		return env_list(w);
	/* A scalar: "environment:" left empty, or nonsense compose itself
	 * refuses; either way there is no key to find. */
	return 0;
}

static int services_pair(struct walker *w, const yaml_event_t *key,
			 const yaml_event_t *val)
{
	if (!is_scalar(key, COMPOSE_SERVICE))
		return skip_node(w, val);
	if (w->nservice++)
		return fail_at(w, key->start_mark.index,
			       "service '" COMPOSE_SERVICE
			       "' is defined twice; "
			       "keep one");
	if (val->type == YAML_ALIAS_EVENT)
		return alias_fail(w, val, "service '" COMPOSE_SERVICE "'");
	if (val->type == YAML_MAPPING_START_EVENT)
		return walk_pairs(w, service_pair);
	return skip_node(w, val);
}

static int root_pair(struct walker *w, const yaml_event_t *key,
		     const yaml_event_t *val)
{
	if (!is_scalar(key, "services"))
		return skip_node(w, val);
	if (w->nservices++)
		return fail_at(w, key->start_mark.index,
			       "'services' is set twice; keep one");
	if (val->type == YAML_ALIAS_EVENT)
		return alias_fail(w, val, "'services'");
	if (val->type == YAML_MAPPING_START_EVENT)
		return walk_pairs(w, services_pair);
	return skip_node(w, val);
}

/* Walk the whole stream: a syntax error anywhere is an error. */
static int walk_stream(struct walker *w)
{
	int ndocs = 0;

	for (;;) {
		yaml_event_t e;
		int rc = 0;

		if (next_event(w, &e) < 0)
			return -1;
		if (e.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&e);
			return 0;
		}
		if (e.type == YAML_DOCUMENT_START_EVENT && ndocs++) {
			rc = fail_at(w, e.start_mark.index,
				     "a second YAML document; a compose file "
				     "holds one");
		} else if (e.type == YAML_MAPPING_START_EVENT) {
			rc = walk_pairs(w, root_pair);
		} else {
			rc = skip_node(w, &e);
		}
		yaml_event_delete(&e);
		if (rc < 0)
			return -1;
	}
}

static void walker_release(struct walker *w)
{
	yaml_parser_delete(&w->parser);
	free(w->runtimes.value);
	free(w->network.value);
}

/* Parse buf and find the scalar; on success the caller releases w. */
static int locate(struct walker *w, const char *path, const char *buf,
		  size_t len, struct sbx_error **err)
{
	long bad;

	memset(w, 0, sizeof(*w));
	w->path = path;
	w->err = err;
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		w->bom = 3;
	w->text = buf + w->bom;
	w->len = len - w->bom;
	bad = utf8_first_invalid(w->text, w->len);
	if (bad >= 0) {
		int line, col;
		byte_pos(w->text, w->len, (size_t)bad, &line, &col);
		return sbx_error_set(err, SBX_EXIT_FAIL, 0,
				     "%s:%d:%d: not valid UTF-8 (byte 0x%02x); "
				     "a compose file must be UTF-8 text",
				     path, line, col,
				     (unsigned char)w->text[bad]);
	}
	if (!yaml_parser_initialize(&w->parser))
		abort();
	yaml_parser_set_input_string(&w->parser, (const unsigned char *)w->text,
				     w->len);
	if (walk_stream(w) < 0) {
		walker_release(w);
		return -1;
	}
	if (!w->nservice) {
		walker_release(w);
		return sbx_error_set(
		    err, SBX_EXIT_FAIL, 0,
		    "%s: no service '" COMPOSE_SERVICE "' under "
		    "'services'; " COMPOSE_KEY " belongs in its "
		    "environment",
		    path);
	}
	if (!w->runtimes.set) {
		walker_release(w);
		return sbx_error_set(err, SBX_EXIT_FAIL, 0,
				     "%s: service '" COMPOSE_SERVICE
				     "' has no " COMPOSE_KEY
				     " in its environment; add '" COMPOSE_KEY
				     ": \"\"' and run 'sbxcat "
				     "compose'",
				     path);
	}
	return 0;
}

/* ---- writing the scalar ---- */

static int emit_out(void *data, unsigned char *buf, size_t size)
{
	strbuf_add(data, buf, size);
	return 1;
}

/* s as one double-quoted YAML scalar, by libyaml's emitter. */
static char *emit_double_quoted(const char *s)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	struct strbuf sb = STRBUF_INIT;
	bool okay;

	if (!yaml_emitter_initialize(&em))
		abort();
	yaml_emitter_set_output(&em, emit_out, &sb);
	yaml_emitter_set_unicode(&em, 1);
	/* No folding: a break inside the scalar would depend on the indent
	 * of the line it lands on. */
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_break(&em, YAML_LN_BREAK);
	okay = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
	       yaml_emitter_emit(&em, &ev) &&
	       yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
	       yaml_emitter_emit(&em, &ev) &&
	       yaml_scalar_event_initialize(
		   &ev, NULL, NULL, (const yaml_char_t *)s, (int)strlen(s), 1,
		   1, YAML_DOUBLE_QUOTED_SCALAR_STYLE) &&
	       yaml_emitter_emit(&em, &ev) &&
	       yaml_document_end_event_initialize(&ev, 1) &&
	       yaml_emitter_emit(&em, &ev) &&
	       yaml_stream_end_event_initialize(&ev) &&
	       yaml_emitter_emit(&em, &ev);
	yaml_emitter_delete(&em);
	/* Valid UTF-8 in, so only memory can fail. */
	if (!okay)
		abort();
	while (sb.len && sb.buf[sb.len - 1] == '\n')
		sb.buf[--sb.len] = '\0';
	return strbuf_detach(&sb, NULL);
}

/* Compose interpolates "$VAR"; "$$" is a literal "$". */
static char *double_dollars(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	for (; *s; s++) {
		if (*s == '$')
			strbuf_addch(&sb, '$');
		strbuf_addch(&sb, *s);
	}
	return strbuf_detach(&sb, NULL);
}

/* What compose passes on for s, or NULL when s would interpolate. */
static char *undouble_dollars(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	for (; *s; s++) {
		if (*s == '$') {
			if (s[1] != '$') {
				strbuf_release(&sb);
				return NULL;
			}
			s++;
		}
		strbuf_addch(&sb, *s);
	}
	return strbuf_detach(&sb, NULL);
}

void compose_result_init(struct compose_result *res)
{
	memset(res, 0, sizeof(*res));
}

void compose_result_release(struct compose_result *res)
{
	free(res->text);
	free(res->value);
	compose_result_init(res);
}

int compose_read(const char *path, const char *buf, size_t len, char **value,
		 struct sbx_error **err)
{
	struct walker w;
	char *v;

	if (locate(&w, path, buf, len, err) < 0)
		return -1;
	v = undouble_dollars(w.runtimes.value);
	if (!v) {
		int rc =
		    fail_at(&w, w.runtimes.start,
			    COMPOSE_KEY " holds a '$' that compose would "
					"interpolate; run 'sbxcat compose'");
		walker_release(&w);
		return rc;
	}
	walker_release(&w);
	*value = v;
	return 0;
}

int compose_splice(const struct catalog *cat, const char *path, const char *buf,
		   size_t len, struct compose_result *res,
		   struct sbx_error **err)
{
	struct walker w;
	struct strbuf out = STRBUF_INIT;
	cleanup_free char *escaped = NULL;
	cleanup_free char *scalar_text = NULL;
	cleanup_free char *back = NULL;
	size_t start, end;
	char q;

	compose_result_init(res);
	if (locate(&w, path, buf, len, err) < 0)
		return -1;
	res->list_form = w.list_form;
	res->service_bridge =
	    w.network.value && strcmp(w.network.value, "bridge") == 0;
	res->value = compose_value(cat, res->service_bridge);
	escaped = double_dollars(res->value);
	if (w.list_form) {
		char *item = xasprintf(COMPOSE_KEY "=%s", escaped);
		free(escaped);
		escaped = item;
	}
	scalar_text = emit_double_quoted(escaped);

	start = w.bom + char_to_byte(w.text, w.len, w.runtimes.start);
	end = w.bom + char_to_byte(w.text, w.len, w.runtimes.end);
	/* The marks must frame the quotes of a quoted scalar; if they do
	 * not, the offsets are wrong and nothing may be written. */
	q = w.runtimes.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE	  ? '"'
	    : w.runtimes.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ? '\''
								  : 0;
	walker_release(&w);
	if (end < start || end > len ||
	    (q && (end - start < 2 || buf[start] != q || buf[end - 1] != q))) {
		compose_result_release(res);
		return sbx_error_set(
		    err, SBX_EXIT_FAIL, 0,
		    "%s: cannot place the value of " COMPOSE_KEY
		    " (bytes %zu-%zu); nothing was written",
		    path, start, end);
	}

	strbuf_add(&out, buf, start);
	strbuf_addstr(&out, scalar_text);
	strbuf_add(&out, buf + end, len - end);
	res->text = strbuf_detach(&out, &res->len);
	res->changed = res->len != len || memcmp(res->text, buf, len) != 0;

	/* Read the new text as compose will, and demand the exact value. */
	if (compose_read(path, res->text, res->len, &back, err) < 0) {
		compose_result_release(res);
		return sbx_error_wrap(err, "after the splice");
	}
	if (strcmp(back, res->value) != 0) {
		compose_result_release(res);
		return sbx_error_set(err, SBX_EXIT_FAIL, 0,
				     "%s: the value read back after the splice "
				     "differs from the one generated; nothing "
				     "was written (a bug in sbxcat)",
				     path);
	}
	return 0;
}

int compose_prepare(const struct catalog *cat, const char *path,
		    struct compose_result *res, struct sbx_error **err)
{
	cleanup_free char *buf = NULL;
	size_t len;

	compose_result_init(res);
	if (read_file_limited(path, COMPOSE_MAX_BYTES, &buf, &len, err) < 0)
		return -1;
	return compose_splice(cat, path, buf, len, res, err);
}

int compose_check_writable(const char *path, struct sbx_error **err)
{
	cleanup_free char *real = realpath(path, NULL);
	cleanup_free char *dircopy = NULL;
	struct stat st;

	if (!real || stat(real, &st) < 0)
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
				     "cannot stat '%s'", path);
	/* rename() replaces a file whatever its mode, and root may write
	 * anything: the mode is the only way to say "leave this alone". */
	if (!(st.st_mode & 0222))
		return sbx_error_set(err, SBX_EXIT_ENV, 0,
				     "cannot write '%s': the file is read-only "
				     "(mode %03o)",
				     path, (unsigned)(st.st_mode & 07777));
	if (access(real, W_OK) < 0)
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
				     "cannot write '%s'", path);
	dircopy = xstrdup(real);
	if (access(dirname(dircopy), W_OK | X_OK) < 0)
		return sbx_error_set(
		    err, SBX_EXIT_ENV, errno,
		    "cannot create a temporary file beside '%s'", path);
	return 0;
}

int compose_write(const char *path, const struct compose_result *res,
		  struct sbx_error **err)
{
	cleanup_free char *real = NULL;
	bool changed;

	if (!res->changed)
		return 0;
	if (compose_check_writable(path, err) < 0)
		return -1;
	/* Write the file a link points to, not over the link. */
	real = realpath(path, NULL);
	if (!real)
		return sbx_error_set(err, SBX_EXIT_ENV, errno,
				     "cannot stat '%s'", path);
	if (write_file_atomic(real, res->text, res->len, 0644, &changed, err) <
	    0)
		return -1;
	return 0;
}

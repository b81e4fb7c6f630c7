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

#include "catalog/catalog.h"
#include "catalog/compose.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/util.h"
#include "basic/xjson.h"

/* ---- the value ---- */

static json_t *jstrings(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, xjson_string(v[i]));
	return a;
}

static json_t *runtime_json(const struct runtime *rt, bool service_bridge)
{
	json_t *e = json_object();

	json_object_set_new(e, "description", xjson_string(rt->description));
	if (rt->image) {
		json_object_set_new(e, "image", xjson_string(rt->image));
	} else {
		json_t *r = json_object();
		json_t *env = json_object();

		/* env_vars in catalogue order: jansson keeps insertion order.
		 */
		for (size_t i = 0; i < rt->nenv; i++)
			json_object_set_new(env, rt->env[i].name,
					    xjson_string(rt->env[i].value));
		json_object_set_new(r, "name", xjson_string(rt->alias));
		json_object_set_new(r, "base_image",
				    xjson_string(rt->base_image));
		json_object_set_new(r, "description",
				    xjson_string(rt->description));
		json_object_set_new(r, "setup_commands",
				    jstrings(rt->setup_commands, rt->nsetup));
		json_object_set_new(r, "packages",
				    jstrings(rt->packages, rt->npackages));
		json_object_set_new(r, "env_vars", env);
		json_object_set_new(e, "runtime", r);
	}
	if (rt->mem_limit)
		json_object_set_new(e, "mem_limit",
				    xjson_string(rt->mem_limit));
	if (rt->needs_network && !service_bridge)
		json_object_set_new(e, "network_mode", xjson_string("bridge"));
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
		die_oom();
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

/* ---- the event stream ---- */

/*
 * The whole file is parsed into an array of events before anything is
 * looked up: a node is then an index, its extent is known without parsing
 * further, an alias can be followed to its anchor, and the stream after
 * the splice can be compared with the one before, event for event.
 */
struct node_ev {
	yaml_event_t ev;
	size_t end; /* index just past the node that starts here */
};

struct anchor_slot {
	const char *name; /* owned by the event that defines it */
	size_t index;	  /* of that event */
};

/* What a lookup found in one environment. */
struct found {
	size_t key; /* event index of the key or list item; 0: not found */
	size_t val; /* event index of the value (the item in list form) */
};

struct walker {
	const char *path;
	const char *buf; /* the whole file, byte order mark and all */
	size_t buflen;
	const char *text; /* buf after a leading byte order mark */
	size_t len;
	size_t bom; /* bytes of that mark */
	struct sbx_error **err;

	struct node_ev *e;
	size_t n, alloc;
	struct anchor_slot *anchors; /* open addressing, cap a power of 2 */
	size_t nanchors, cap;
	size_t budget; /* nodes a merge may still visit */

	bool service; /* service 'sandboxd' was found */
	struct found runtimes, network;
	bool list_form;
};

/*
 * Line and column of a libyaml character mark.  libyaml does not count a
 * leading byte order mark, so the marks index text, not buf.
 */
static void mark_pos(const struct walker *w, size_t index, int *line, int *col)
{
	byte_pos(w->text, w->len, char_to_byte(w->text, w->len, index), line,
		 col);
}

static void event_pos(const struct walker *w, size_t i, int *line, int *col)
{
	mark_pos(w, w->e[i].ev.start_mark.index, line, col);
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
	sbx_error_set(w->err, SBX_E_BAD_DATA, 0, "%s:%d:%d: %s", w->path, line,
		      col, msg);
	free(msg);
	return -1;
}

/* fail_at the start of event i. */
#define fail_ev(w, i, ...)                                                     \
	fail_at((w), (w)->e[i].ev.start_mark.index, __VA_ARGS__)

static int yaml_fail(struct walker *w, yaml_parser_t *p)
{
	int line, col;

	if (p->error == YAML_MEMORY_ERROR)
		die_oom();
	if (p->error == YAML_READER_ERROR) {
		/* The reader reports a byte offset into buf, not a mark. */
		size_t off = p->problem_offset;
		byte_pos(w->text, w->len, off > w->bom ? off - w->bom : 0,
			 &line, &col);
		return sbx_error_set(w->err, SBX_E_BAD_DATA, 0,
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

/* A node's anchor, or NULL. */
static const char *ev_anchor(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return (const char *)ev->data.scalar.anchor;
	case YAML_MAPPING_START_EVENT:
		return (const char *)ev->data.mapping_start.anchor;
	case YAML_SEQUENCE_START_EVENT:
		return (const char *)ev->data.sequence_start.anchor;
	default:
		return NULL;
	}
}

static const char *ev_tag(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return (const char *)ev->data.scalar.tag;
	case YAML_MAPPING_START_EVENT:
		return (const char *)ev->data.mapping_start.tag;
	case YAML_SEQUENCE_START_EVENT:
		return (const char *)ev->data.sequence_start.tag;
	default:
		return NULL;
	}
}

static struct anchor_slot *anchor_slot(struct walker *w, const char *name)
{
	size_t i = hash_str(name) & (w->cap - 1);

	while (w->anchors[i].name && strcmp(w->anchors[i].name, name) != 0)
		i = (i + 1) & (w->cap - 1);
	return &w->anchors[i];
}

/* The event index of the node anchored name, or 0. */
static size_t anchor_find(struct walker *w, const char *name)
{
	struct anchor_slot *s;

	if (!w->cap)
		return 0;
	s = anchor_slot(w, name);
	return s->name ? s->index : 0;
}

static void anchor_add(struct walker *w, const char *name, size_t index)
{
	if (2 * (w->nanchors + 1) > w->cap) {
		struct anchor_slot *old = w->anchors;
		size_t oldcap = w->cap;

		w->cap = oldcap ? 2 * oldcap : 16;
		w->anchors = xcalloc(w->cap, sizeof(*w->anchors));
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].name)
				*anchor_slot(w, old[i].name) = old[i];
		free(old);
	}
	*anchor_slot(w, name) = (struct anchor_slot){name, index};
	w->nanchors++;
}

/*
 * The tags PyYAML's safe loader (docker-compose's) can construct; any
 * other tag makes docker-compose refuse the file.
 */
static bool tag_known(const char *tag)
{
	static const char *const known[] = {
	    "null",  "bool", "int", "float", "binary", "timestamp", "omap",
	    "pairs", "set",  "str", "seq",   "map",    "merge"};
	static const char prefix[] = "tag:yaml.org,2002:";

	if (strcmp(tag, "!") == 0)
		return true;
	if (strncmp(tag, prefix, sizeof(prefix) - 1) != 0)
		return false;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(tag + sizeof(prefix) - 1, known[i]) == 0)
			return true;
	return false;
}

/*
 * What every loader must agree on before any node is looked at: one
 * document (PyYAML refuses a second, compose-go merges it in), every
 * anchor defined once (PyYAML refuses a second definition, yaml.v3 takes
 * the later one) and before any alias to it (libyaml's parser does not
 * check; every loader refuses), every tag one docker-compose can read.
 */
static int check_event(struct walker *w, size_t i, int *ndocs)
{
	const yaml_event_t *ev = &w->e[i].ev;
	const char *anchor = ev_anchor(ev);
	const char *tag = ev_tag(ev);

	if (ev->type == YAML_DOCUMENT_START_EVENT && (*ndocs)++)
		return fail_ev(w, i,
			       "a second YAML document; a compose file holds "
			       "one");
	if (ev->type == YAML_ALIAS_EVENT &&
	    !anchor_find(w, (const char *)ev->data.alias.anchor))
		return fail_ev(w, i,
			       "the alias '*%s' refers to no anchor defined "
			       "before it; no YAML loader can read it",
			       ev->data.alias.anchor);
	if (anchor) {
		size_t first = anchor_find(w, anchor);
		if (first) {
			int line, col;
			event_pos(w, first, &line, &col);
			return fail_ev(w, i,
				       "the anchor '&%s' is defined twice "
				       "(first at %d:%d); YAML loaders "
				       "disagree on which one an alias "
				       "means, so rename one",
				       anchor, line, col);
		}
		anchor_add(w, anchor, i);
	}
	if (tag && !tag_known(tag))
		return fail_ev(w, i,
			       "a tag ('%s') that docker-compose's YAML loader "
			       "cannot read; remove it",
			       tag);
	return 0;
}

/* Parse the whole of buf into w->e. */
static int load_events(struct walker *w)
{
	yaml_parser_t p;
	size_t *open = NULL;
	size_t nopen = 0, openalloc = 0;
	int ndocs = 0, rc = 0;

	if (!yaml_parser_initialize(&p))
		die_oom();
	yaml_parser_set_input_string(&p, (const unsigned char *)w->buf,
				     w->buflen);
	for (;;) {
		size_t i = w->n;
		yaml_event_type_t type;

		ALLOC_GROW(w->e, w->n + 1, w->alloc);
		if (!yaml_parser_parse(&p, &w->e[i].ev)) {
			rc = yaml_fail(w, &p);
			break;
		}
		w->n++;
		w->e[i].end = i + 1;
		type = w->e[i].ev.type;
		if (type == YAML_MAPPING_START_EVENT ||
		    type == YAML_SEQUENCE_START_EVENT) {
			ALLOC_GROW(open, nopen + 1, openalloc);
			open[nopen++] = i;
		} else if ((type == YAML_MAPPING_END_EVENT ||
			    type == YAML_SEQUENCE_END_EVENT) &&
			   nopen) {
			w->e[open[--nopen]].end = i + 1;
		}
		rc = check_event(w, i, &ndocs);
		if (rc < 0 || type == YAML_STREAM_END_EVENT)
			break;
	}
	free(open);
	yaml_parser_delete(&p);
	return rc;
}

/* ---- finding the scalar ---- */

static bool scalar_is(const yaml_event_t *ev, const char *s)
{
	size_t n = strlen(s);

	/* With the length: an escaped NUL ("KEY\0x") is another string. */
	return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == n &&
	       memcmp(ev->data.scalar.value, s, n) == 0;
}

/* Whether a scalar starts with prefix (lengths, not C strings). */
static bool scalar_starts(const yaml_event_t *ev, const char *prefix)
{
	size_t n = strlen(prefix);

	return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length >= n &&
	       memcmp(ev->data.scalar.value, prefix, n) == 0;
}

/* s (len bytes) escaped for a message. */
static char *quoted(const unsigned char *s, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	text_add_escaped(&sb, (const char *)s, len);
	return strbuf_detach(&sb, NULL);
}

static const char *kind_name(yaml_event_type_t t)
{
	return t == YAML_MAPPING_START_EVENT ? "mapping" : "list";
}

/*
 * Refuse what makes node i mean other than it shows where sbxcat reads:
 * an alias (sbxcat does not follow it), a tag (!!binary turns text into
 * bytes, and loaders disagree); and, on a node that holds the rewritten
 * value, an anchor, because whatever aliases or merges it would change
 * with it.
 */
static int plain_node(struct walker *w, size_t i, const char *what,
		      bool holds_value)
{
	const yaml_event_t *ev = &w->e[i].ev;

	if (ev->type == YAML_ALIAS_EVENT)
		return fail_ev(w, i,
			       "%s is an alias ('*%s'), which sbxcat does not "
			       "follow; write it out in place",
			       what, ev->data.alias.anchor);
	if (ev_tag(ev))
		return fail_ev(w, i,
			       "%s carries a tag ('%s'), which YAML loaders "
			       "read differently; remove it",
			       what, ev_tag(ev));
	if (holds_value && ev_anchor(ev))
		return fail_ev(w, i,
			       "%s carries an anchor ('&%s'): whatever aliases "
			       "or merges it would change with " COMPOSE_KEY
			       "; remove the anchor",
			       what, ev_anchor(ev));
	return 0;
}

/* The keys sbxcat looks up in one mapping, and what to do with them. */
struct lookup {
	const char *what; /* the mapping, for messages */
	const char *const *keys;
	size_t nkeys;
	int (*pair)(struct walker *w, size_t key, size_t val);
};

static const char *looked_up(const struct lookup *lk, const yaml_event_t *ev)
{
	for (size_t i = 0; i < lk->nkeys; i++)
		if (scalar_is(ev, lk->keys[i]))
			return lk->keys[i];
	return NULL;
}

/* A key must be a scalar as written, so that its string is plain to see. */
static int check_key(struct walker *w, size_t k, const char *what)
{
	const yaml_event_t *ev = &w->e[k].ev;

	if (ev->type == YAML_ALIAS_EVENT)
		return fail_ev(w, k,
			       "a key in %s is an alias ('*%s'), which sbxcat "
			       "does not follow; write the key out",
			       what, ev->data.alias.anchor);
	if (ev->type != YAML_SCALAR_EVENT)
		return fail_ev(w, k, "a key in %s is a %s; write a plain key",
			       what, kind_name(ev->type));
	if (ev->data.scalar.tag)
		return fail_ev(w, k,
			       "a key in %s carries a tag ('%s'), which YAML "
			       "loaders read differently; remove it",
			       what, ev->data.scalar.tag);
	return 0;
}

/*
 * The keys a merge ("<<: *x", "<<: [*a, *b]", "<<: {…}") brings in, as
 * PyYAML and yaml.v3 resolve it, must not include one sbxcat looks up:
 * explicit keys win over merged ones in both, but which merged key wins
 * differs, and a merged key is not where sbxcat would write it.
 */
static int check_merge(struct walker *w, size_t merge, size_t i,
		       const struct lookup *lk, bool top, int depth)
{
	const yaml_event_t *ev = &w->e[i].ev;
	int line, col;

	event_pos(w, merge, &line, &col);
	if (depth > 64 || w->budget == 0 || !--w->budget)
		return fail_ev(w, merge,
			       "the merge ('<<') in %s reaches too many nodes "
			       "for sbxcat to follow",
			       lk->what);
	if (ev->type == YAML_ALIAS_EVENT)
		return check_merge(
		    w, merge,
		    anchor_find(w, (const char *)ev->data.alias.anchor), lk,
		    top, depth + 1);
	if (ev->type == YAML_SEQUENCE_START_EVENT && top) {
		for (size_t j = i + 1; j < w->e[i].end - 1; j = w->e[j].end)
			if (check_merge(w, merge, j, lk, false, depth + 1) < 0)
				return -1;
		return 0;
	}
	if (ev->type != YAML_MAPPING_START_EVENT)
		return fail_ev(w, merge,
			       "the merge ('<<') in %s is not of a mapping; "
			       "YAML loaders refuse it",
			       lk->what);
	for (size_t k = i + 1; k < w->e[i].end - 1;) {
		size_t v = w->e[k].end;
		const char *key;
		cleanup_free char *what =
		    xasprintf("what the merge at %d:%d brings into %s", line,
			      col, lk->what);

		if (check_key(w, k, what) < 0)
			return -1;
		if (scalar_is(&w->e[k].ev, "<<")) {
			if (check_merge(w, merge, v, lk, true, depth + 1) < 0)
				return -1;
		} else {
			key = looked_up(lk, &w->e[k].ev);
			if (key)
				return fail_ev(
				    w, merge,
				    "the merge ('<<') brings '%s' into %s; "
				    "sbxcat reads and writes it only where it "
				    "is written out, so write it out there",
				    key, lk->what);
		}
		k = w->e[v].end;
	}
	return 0;
}

struct key_ref {
	const unsigned char *s;
	size_t len;
	size_t index;
};

static int cmp_key_ref(const void *pa, const void *pb)
{
	const struct key_ref *a = pa, *b = pb;
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->s, b->s, n);

	if (c)
		return c;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/*
 * A key set twice: PyYAML takes the last, yaml.v3 refuses the file.  One
 * sort, so a mapping with many keys costs n log n.
 */
static int check_duplicates(struct walker *w, struct key_ref *keys, size_t n,
			    const char *what)
{
	qsort(keys, n, sizeof(*keys), cmp_key_ref);
	for (size_t i = 1; i < n; i++) {
		if (keys[i].len == keys[i - 1].len &&
		    memcmp(keys[i].s, keys[i - 1].s, keys[i].len) == 0) {
			cleanup_free char *k = quoted(keys[i].s, keys[i].len);
			int line, col;
			event_pos(w, keys[i - 1].index, &line, &col);
			return fail_ev(w, keys[i].index,
				       "'%s' is set twice in %s (first at "
				       "%d:%d); keep one",
				       k, what, line, col);
		}
	}
	return 0;
}

/*
 * Walk a mapping sbxcat reads (the mapping starts at event i): every key
 * plain, none twice, no merge bringing in a key looked up; then hand each
 * looked-up key to lk->pair.
 */
static int walk_mapping(struct walker *w, size_t i, const struct lookup *lk)
{
	struct key_ref *keys = NULL;
	size_t nkeys = 0, alloc = 0;
	int rc = 0;

	for (size_t k = i + 1; rc == 0 && k < w->e[i].end - 1;) {
		const yaml_event_t *ev = &w->e[k].ev;
		size_t v = w->e[k].end;

		rc = check_key(w, k, lk->what);
		if (rc < 0)
			break;
		if (scalar_is(ev, "<<")) {
			/* Only a plain "<<" is a merge to PyYAML; whether
			 * a quoted one is depends on the loader. */
			if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
				rc = fail_ev(w, k,
					     "a quoted '<<' key in %s, which "
					     "YAML loaders read differently; "
					     "write it plain or rename it",
					     lk->what);
			else
				rc = check_merge(w, k, v, lk, true, 0);
		} else {
			ALLOC_GROW(keys, nkeys + 1, alloc);
			keys[nkeys++] = (struct key_ref){
			    ev->data.scalar.value, ev->data.scalar.length, k};
		}
		k = w->e[v].end;
	}
	if (rc == 0)
		rc = check_duplicates(w, keys, nkeys, lk->what);
	free(keys);
	for (size_t k = i + 1; rc == 0 && k < w->e[i].end - 1;) {
		size_t v = w->e[k].end;
		if (looked_up(lk, &w->e[k].ev))
			rc = lk->pair(w, k, v);
		k = w->e[v].end;
	}
	return rc;
}

#define SERVICE_WHAT "service '" COMPOSE_SERVICE "'"
#define ENV_WHAT "the environment of " SERVICE_WHAT

static int twice(struct walker *w, const struct found *f, size_t k,
		 const char *key)
{
	int line, col;

	event_pos(w, f->key, &line, &col);
	return fail_ev(w, k,
		       "'%s' is set twice in " ENV_WHAT " (first at %d:%d); "
		       "keep one",
		       key, line, col);
}

/*
 * Record the scalar that holds SANDBOXD_RUNTIMES.  Everything sbxcat could
 * not replace by one double-quoted scalar without changing what else the
 * file means is refused: an alias (the value lives elsewhere), an anchor
 * (other nodes would silently change), a tag, a block scalar (its extent
 * runs into the lines below), an empty value (there is no text to replace).
 */
static int found_runtimes(struct walker *w, size_t k, size_t v, bool list_form)
{
	const yaml_event_t *val = &w->e[v].ev;
	const char *what =
	    list_form ? "the item " COMPOSE_KEY : "the value of " COMPOSE_KEY;
	const char *fix = list_form ? "write '- " COMPOSE_KEY "=' and run "
				      "'sbxcat compose'"
				    : "write '" COMPOSE_KEY ": \"\"' and run "
				      "'sbxcat compose'";

	if (w->runtimes.key)
		return twice(w, &w->runtimes, k, COMPOSE_KEY);
	if (val->type == YAML_ALIAS_EVENT)
		return fail_ev(w, v,
			       "%s is an alias ('*%s'), which sbxcat cannot "
			       "rewrite in place; %s",
			       what, val->data.alias.anchor, fix);
	if (val->type != YAML_SCALAR_EVENT)
		return fail_ev(w, v, "%s is a %s, not a string; %s", what,
			       kind_name(val->type), fix);
	if (val->data.scalar.anchor)
		return fail_ev(w, v,
			       "%s carries an anchor ('&%s'), and rewriting it "
			       "would change what refers to it; %s",
			       what, val->data.scalar.anchor, fix);
	if (val->data.scalar.tag)
		return fail_ev(w, v, "%s carries a tag ('%s'); %s", what,
			       val->data.scalar.tag, fix);
	if (val->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
	    val->data.scalar.style == YAML_FOLDED_SCALAR_STYLE)
		return fail_ev(
		    w, v,
		    "%s is a block scalar ('%s'), which sbxcat does "
		    "not rewrite; %s",
		    what,
		    val->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ? "|"
									: ">",
		    fix);
	if (list_form && scalar_is(val, COMPOSE_KEY))
		return fail_ev(w, v,
			       "%s has no value, so compose would take it "
			       "from the host; %s",
			       what, fix);
	if (!list_form && val->start_mark.index == val->end_mark.index)
		return fail_ev(w, v, "%s is empty; %s", what, fix);
	w->runtimes = (struct found){k, v};
	w->list_form = list_form;
	return 0;
}

/* Record SANDBOXD_NETWORK_MODE; v is 0 for a list item with no '='. */
static int found_network(struct walker *w, size_t k, size_t v)
{
	if (w->network.key)
		return twice(w, &w->network, k, COMPOSE_NETWORK_KEY);
	if (v &&
	    plain_node(w, v, "the value of " COMPOSE_NETWORK_KEY, false) < 0)
		return -1;
	w->network = (struct found){k, v};
	return 0;
}

static int env_pair(struct walker *w, size_t k, size_t v)
{
	if (scalar_is(&w->e[k].ev, COMPOSE_KEY))
		return found_runtimes(w, k, v, false);
	return found_network(w, k, v);
}

/* The list form: "- KEY=VALUE" items, "- KEY" taking it from the host. */
static int env_list(struct walker *w, size_t i)
{
	for (size_t j = i + 1; j < w->e[i].end - 1; j = w->e[j].end) {
		const yaml_event_t *ev = &w->e[j].ev;
		int rc = 0;

		/* An item that is an alias or tagged could be either key. */
		if (ev->type == YAML_ALIAS_EVENT || ev_tag(ev))
			rc = plain_node(w, j, "an item of " ENV_WHAT, false);
		else if (scalar_starts(ev, COMPOSE_KEY "=") ||
			 scalar_is(ev, COMPOSE_KEY))
			rc = found_runtimes(w, j, j, true);
		else if (scalar_starts(ev, COMPOSE_NETWORK_KEY "="))
			rc = found_network(w, j, j);
		else if (scalar_is(ev, COMPOSE_NETWORK_KEY))
			rc = found_network(w, j, 0);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int service_pair(struct walker *w, size_t k, size_t v)
{
	static const char *const env_keys[] = {COMPOSE_KEY,
					       COMPOSE_NETWORK_KEY};
	static const struct lookup env = {ENV_WHAT, env_keys, 2, env_pair};
	yaml_event_type_t t = w->e[v].ev.type;

	if (scalar_is(&w->e[k].ev, "extends"))
		return fail_ev(w, k,
			       SERVICE_WHAT " extends another service, whose "
					    "environment sbxcat does not "
					    "follow; write it out here");
	if (plain_node(w, v, ENV_WHAT, true) < 0)
		return -1;
	if (t == YAML_MAPPING_START_EVENT)
		return walk_mapping(w, v, &env);
	if (t == YAML_SEQUENCE_START_EVENT)
		return env_list(w, v);
	/* A scalar: "environment:" left empty, or nonsense compose itself
	 * refuses; either way there is no key to find. */
	return 0;
}

static int services_pair(struct walker *w, size_t k, size_t v)
{
	static const char *const service_keys[] = {"environment", "extends"};
	static const struct lookup service = {SERVICE_WHAT, service_keys, 2,
					      service_pair};

	(void)k;
	w->service = true;
	if (plain_node(w, v, SERVICE_WHAT, true) < 0)
		return -1;
	if (w->e[v].ev.type == YAML_MAPPING_START_EVENT)
		return walk_mapping(w, v, &service);
	return 0;
}

static int root_pair(struct walker *w, size_t k, size_t v)
{
	static const char *const services_keys[] = {COMPOSE_SERVICE};
	static const struct lookup services = {"'services'", services_keys, 1,
					       services_pair};

	(void)k;
	if (plain_node(w, v, "'services'", true) < 0)
		return -1;
	if (w->e[v].ev.type == YAML_MAPPING_START_EVENT)
		return walk_mapping(w, v, &services);
	return 0;
}

/* The document's root node, if it is a mapping. */
static int walk_root(struct walker *w)
{
	static const char *const root_keys[] = {"services"};
	static const struct lookup root = {"the file's top level", root_keys, 1,
					   root_pair};

	/* STREAM-START, DOCUMENT-START, then the root node. */
	if (w->n < 3 || w->e[1].ev.type != YAML_DOCUMENT_START_EVENT)
		return 0;
	if (plain_node(w, 2, "the document", true) < 0)
		return -1;
	if (w->e[2].ev.type != YAML_MAPPING_START_EVENT)
		return 0;
	return walk_mapping(w, 2, &root);
}

static void walker_release(struct walker *w)
{
	for (size_t i = 0; i < w->n; i++)
		yaml_event_delete(&w->e[i].ev);
	free(w->e);
	free(w->anchors);
	memset(w, 0, sizeof(*w));
}

/*
 * A byte order mark is allowed at the very start only.  libyaml skips one
 * at the start of any line and counts it; PyYAML skips only the first and
 * reads a second as part of the next key ("\ufeffservices").
 */
static int check_bom(struct walker *w)
{
	const char *hit = memmem(w->text, w->len, "\xEF\xBB\xBF", 3);
	int line, col;

	if (!hit)
		return 0;
	byte_pos(w->text, w->len, (size_t)(hit - w->text), &line, &col);
	return sbx_error_set(
	    w->err, SBX_E_BAD_DATA, 0,
	    "%s:%d:%d: a byte order mark (U+FEFF) after the start of the "
	    "file, which YAML loaders read differently; remove it",
	    w->path, line, col);
}

/* Converts increasing character marks to byte offsets in one pass. */
struct cursor {
	size_t chr, byte;
};

static size_t cursor_to(const struct walker *w, struct cursor *c, size_t index)
{
	while (c->chr < index && c->byte < w->len) {
		c->byte++;
		while (c->byte < w->len &&
		       ((unsigned char)w->text[c->byte] & 0xC0) == 0x80)
			c->byte++;
		c->chr++;
	}
	return c->byte;
}

/*
 * A tab is whitespace to libyaml almost anywhere, but PyYAML (the loader
 * of docker-compose 1.x) refuses a file with a tab anywhere outside a
 * quoted or block scalar and a comment.  Outside the scalars libyaml
 * found, a '#' can only start a comment.
 */
static int check_tabs(struct walker *w)
{
	struct cursor c = {0, 0};
	size_t pos = 0;
	bool comment = false;

	if (!memchr(w->text, '\t', w->len))
		return 0;
	for (size_t i = 0; i <= w->n; i++) {
		const yaml_event_t *ev = i < w->n ? &w->e[i].ev : NULL;
		size_t start = w->len, end = w->len;
		bool tab_ok = false;

		if (ev && ev->type != YAML_SCALAR_EVENT)
			continue;
		if (ev) {
			start = cursor_to(w, &c, ev->start_mark.index);
			end = cursor_to(w, &c, ev->end_mark.index);
			tab_ok =
			    ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
		}
		for (; pos < start; pos++) {
			char b = w->text[pos];
			if (b == '\n' || b == '\r')
				comment = false;
			else if (b == '#')
				comment = true;
			else if (b == '\t' && !comment)
				break;
		}
		if (pos < start || (!tab_ok && pos < end &&
				    memchr(w->text + pos, '\t', end - pos))) {
			int line, col;
			if (pos >= start)
				pos += (size_t)((const char *)memchr(
						    w->text + pos, '\t',
						    end - pos) -
						(w->text + pos));
			byte_pos(w->text, w->len, pos, &line, &col);
			return sbx_error_set(
			    w->err, SBX_E_BAD_DATA, 0,
			    "%s:%d:%d: a tab outside a quoted string or a "
			    "comment, which docker-compose's YAML loader "
			    "refuses; use spaces",
			    w->path, line, col);
		}
		if (end > pos)
			pos = end;
	}
	return 0;
}

/* Parse buf and find the scalar; on success the caller releases w. */
static int locate(struct walker *w, const char *path, const char *buf,
		  size_t len, struct sbx_error **err)
{
	long bad;

	memset(w, 0, sizeof(*w));
	w->path = path;
	w->err = err;
	w->buf = buf;
	w->buflen = len;
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		w->bom = 3;
	w->text = buf + w->bom;
	w->len = len - w->bom;
	/* Merges may alias merges: bound the work, not just the depth. */
	w->budget = 100000;
	bad = utf8_first_invalid(w->text, w->len);
	if (bad >= 0) {
		int line, col;
		byte_pos(w->text, w->len, (size_t)bad, &line, &col);
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "%s:%d:%d: not valid UTF-8 (byte 0x%02x); "
				     "a compose file must be UTF-8 text",
				     path, line, col,
				     (unsigned char)w->text[bad]);
	}
	if (check_bom(w) < 0 || load_events(w) < 0 || check_tabs(w) < 0 ||
	    walk_root(w) < 0) {
		walker_release(w);
		return -1;
	}
	if (!w->service) {
		walker_release(w);
		return sbx_error_set(
		    err, SBX_E_BAD_DATA, 0,
		    "%s: no service '" COMPOSE_SERVICE "' under "
		    "'services'; " COMPOSE_KEY " belongs in its "
		    "environment",
		    path);
	}
	if (!w->runtimes.key) {
		walker_release(w);
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "%s: " SERVICE_WHAT " has no " COMPOSE_KEY
				     " in its environment; add '" COMPOSE_KEY
				     ": \"\"' and run 'sbxcat compose'",
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
		die_oom();
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
		die_oom();
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

/*
 * What compose passes on for s (len bytes, NULs and all), or NULL when s
 * would interpolate.
 */
static char *undouble_dollars(const char *s, size_t len, size_t *outlen)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '$') {
			if (i + 1 >= len || s[i + 1] != '$') {
				strbuf_release(&sb);
				return NULL;
			}
			i++;
		}
		strbuf_addch(&sb, s[i]);
	}
	return strbuf_detach(&sb, outlen);
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

/* The value compose passes on from the scalar w found ("$$" read as "$"). */
static int runtimes_value(struct walker *w, char **value, size_t *len)
{
	const yaml_event_t *ev = &w->e[w->runtimes.val].ev;
	const char *v = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;

	if (w->list_form) {
		v += strlen(COMPOSE_KEY "=");
		n -= strlen(COMPOSE_KEY "=");
	}
	*value = undouble_dollars(v, n, len);
	if (!*value)
		return fail_ev(w, w->runtimes.val,
			       COMPOSE_KEY " holds a '$' that compose would "
					   "interpolate; run 'sbxcat compose'");
	return 0;
}

int compose_read(const char *path, const char *buf, size_t len, char **value,
		 struct sbx_error **err)
{
	struct walker w;
	size_t n;
	int rc;

	if (locate(&w, path, buf, len, err) < 0)
		return -1;
	rc = runtimes_value(&w, value, &n);
	walker_release(&w);
	return rc;
}

static bool same_str(const yaml_char_t *a, const yaml_char_t *b)
{
	return (!a && !b) ||
	       (a && b && strcmp((const char *)a, (const char *)b) == 0);
}

static bool same_directives(const yaml_event_t *a, const yaml_event_t *b)
{
	const yaml_version_directive_t *va =
	    a->data.document_start.version_directive;
	const yaml_version_directive_t *vb =
	    b->data.document_start.version_directive;
	const yaml_tag_directive_t *ta =
	    a->data.document_start.tag_directives.start;
	const yaml_tag_directive_t *tb =
	    b->data.document_start.tag_directives.start;
	const yaml_tag_directive_t *ea =
	    a->data.document_start.tag_directives.end;
	const yaml_tag_directive_t *eb =
	    b->data.document_start.tag_directives.end;

	if (!!va != !!vb ||
	    (va && (va->major != vb->major || va->minor != vb->minor)))
		return false;
	if (ea - ta != eb - tb)
		return false;
	for (; ta < ea; ta++, tb++)
		if (!same_str(ta->handle, tb->handle) ||
		    !same_str(ta->prefix, tb->prefix))
			return false;
	return a->data.document_start.implicit ==
	       b->data.document_start.implicit;
}

/* Two events equal in everything a loader reads: not their places. */
static bool same_event(const yaml_event_t *a, const yaml_event_t *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case YAML_STREAM_START_EVENT:
		return a->data.stream_start.encoding ==
		       b->data.stream_start.encoding;
	case YAML_DOCUMENT_START_EVENT:
		return same_directives(a, b);
	case YAML_DOCUMENT_END_EVENT:
		return a->data.document_end.implicit ==
		       b->data.document_end.implicit;
	case YAML_ALIAS_EVENT:
		return same_str(a->data.alias.anchor, b->data.alias.anchor);
	case YAML_SCALAR_EVENT:
		return a->data.scalar.length == b->data.scalar.length &&
		       memcmp(a->data.scalar.value, b->data.scalar.value,
			      a->data.scalar.length) == 0 &&
		       same_str(a->data.scalar.anchor, b->data.scalar.anchor) &&
		       same_str(a->data.scalar.tag, b->data.scalar.tag) &&
		       a->data.scalar.style == b->data.scalar.style &&
		       a->data.scalar.plain_implicit ==
			   b->data.scalar.plain_implicit &&
		       a->data.scalar.quoted_implicit ==
			   b->data.scalar.quoted_implicit;
	case YAML_MAPPING_START_EVENT:
		return same_str(a->data.mapping_start.anchor,
				b->data.mapping_start.anchor) &&
		       same_str(a->data.mapping_start.tag,
				b->data.mapping_start.tag) &&
		       a->data.mapping_start.implicit ==
			   b->data.mapping_start.implicit &&
		       a->data.mapping_start.style ==
			   b->data.mapping_start.style;
	case YAML_SEQUENCE_START_EVENT:
		return same_str(a->data.sequence_start.anchor,
				b->data.sequence_start.anchor) &&
		       same_str(a->data.sequence_start.tag,
				b->data.sequence_start.tag) &&
		       a->data.sequence_start.implicit ==
			   b->data.sequence_start.implicit &&
		       a->data.sequence_start.style ==
			   b->data.sequence_start.style;
	default:
		return true;
	}
}

/*
 * The check every write must pass: the new text, read again from
 * scratch, is the old text's event stream with one scalar changed, and
 * that scalar is double-quoted, where it was, and gives back value.
 */
static int verify(struct walker *old, const char *path, const char *text,
		  size_t len, const char *value, struct sbx_error **err)
{
	struct walker w;
	cleanup_free char *back = NULL;
	size_t backlen, at = 0;

	if (locate(&w, path, text, len, err) < 0)
		return sbx_error_wrap(err, "after the splice");
	if (w.n != old->n || w.runtimes.val != old->runtimes.val ||
	    w.list_form != old->list_form)
		at = w.n < old->n ? w.n : old->n;
	for (size_t i = 0; !at && i < w.n; i++)
		if (i != w.runtimes.val &&
		    !same_event(&w.e[i].ev, &old->e[i].ev))
			at = i;
	if (!at && w.e[w.runtimes.val].ev.data.scalar.style !=
		       YAML_DOUBLE_QUOTED_SCALAR_STYLE)
		at = w.runtimes.val;
	if (at) {
		int line, col;
		if (at >= w.n)
			at = w.n - 1;
		event_pos(&w, at, &line, &col);
		walker_release(&w);
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "%s: after the splice the file reads "
				     "differently at %d:%d, not only in the "
				     "value of " COMPOSE_KEY "; nothing was "
				     "written (a bug in sbxcat)",
				     path, line, col);
	}
	if (runtimes_value(&w, &back, &backlen) < 0) {
		walker_release(&w);
		return sbx_error_wrap(err, "after the splice");
	}
	walker_release(&w);
	if (backlen != strlen(value) || memcmp(back, value, backlen) != 0)
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "%s: the value read back after the splice "
				     "differs from the one generated; nothing "
				     "was written (a bug in sbxcat)",
				     path);
	return 0;
}

int compose_verify(const char *path, const char *old, size_t oldlen,
		   const char *text, size_t len, const char *value,
		   struct sbx_error **err)
{
	struct walker w;
	int rc;

	if (locate(&w, path, old, oldlen, err) < 0)
		return -1;
	rc = verify(&w, path, text, len, value, err);
	walker_release(&w);
	return rc;
}

int compose_splice(const struct catalog *cat, const char *path, const char *buf,
		   size_t len, struct compose_result *res,
		   struct sbx_error **err)
{
	struct walker w;
	struct strbuf out = STRBUF_INIT;
	cleanup_free char *escaped = NULL;
	cleanup_free char *scalar_text = NULL;
	const yaml_event_t *ev;
	const yaml_event_t *net;
	size_t start, end;
	char q;

	compose_result_init(res);
	if (locate(&w, path, buf, len, err) < 0)
		return -1;
	res->list_form = w.list_form;
	net = w.network.val ? &w.e[w.network.val].ev : NULL;
	/* Exactly "bridge" as the service reads it; a list item carries
	 * the key in front.  No YAML 1.1 or 1.2 rule reads "bridge" as
	 * anything but a string, and tags were refused. */
	if (net && net->type == YAML_SCALAR_EVENT)
		res->service_bridge =
		    scalar_is(net, w.network.key == w.network.val
				       ? COMPOSE_NETWORK_KEY "=bridge"
				       : "bridge");
	res->value = compose_value(cat, res->service_bridge);
	escaped = double_dollars(res->value);
	if (w.list_form) {
		char *item = xasprintf(COMPOSE_KEY "=%s", escaped);
		free(escaped);
		escaped = item;
	}
	scalar_text = emit_double_quoted(escaped);

	ev = &w.e[w.runtimes.val].ev;
	start = w.bom + char_to_byte(w.text, w.len, ev->start_mark.index);
	end = w.bom + char_to_byte(w.text, w.len, ev->end_mark.index);
	/* The marks must frame the quotes of a quoted scalar; if they do
	 * not, the offsets are wrong and nothing may be written. */
	q = ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE   ? '"'
	    : ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ? '\''
								       : 0;
	if (end < start || end > len ||
	    (q && (end - start < 2 || buf[start] != q || buf[end - 1] != q))) {
		walker_release(&w);
		compose_result_release(res);
		return sbx_error_set(
		    err, SBX_E_BAD_DATA, 0,
		    "%s: cannot place the value of " COMPOSE_KEY
		    " (bytes %zu-%zu); nothing was written",
		    path, start, end);
	}

	strbuf_add(&out, buf, start);
	strbuf_addstr(&out, scalar_text);
	strbuf_add(&out, buf + end, len - end);
	res->text = strbuf_detach(&out, &res->len);
	res->changed = res->len != len || memcmp(res->text, buf, len) != 0;

	/* sbxcat could not read the file again, nor could anyone else who
	 * keeps to the same limit. */
	if (res->len > COMPOSE_MAX_BYTES) {
		int line, col;
		event_pos(&w, w.runtimes.val, &line, &col);
		walker_release(&w);
		sbx_error_set(err, SBX_E_BAD_DATA, 0,
			      "%s:%d:%d: the new value of " COMPOSE_KEY
			      " would make the file %zu bytes, over the "
			      "limit of %u; nothing was written",
			      path, line, col, res->len,
			      (unsigned)COMPOSE_MAX_BYTES);
		compose_result_release(res);
		return -1;
	}
	if (verify(&w, path, res->text, res->len, res->value, err) < 0) {
		walker_release(&w);
		compose_result_release(res);
		return -1;
	}
	walker_release(&w);
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
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot stat '%s'", path);
	/* rename() replaces a file whatever its mode, and root may write
	 * anything: the mode is the only way to say "leave this alone". */
	if (!(st.st_mode & 0222))
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "cannot write '%s': the file is read-only "
				     "(mode %03o)",
				     path, (unsigned)(st.st_mode & 07777));
	if (access(real, W_OK) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot write '%s'", path);
	dircopy = xstrdup(real);
	if (access(dirname(dircopy), W_OK | X_OK) < 0)
		return sbx_error_set(
		    err, SBX_E_UNAVAILABLE, errno,
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
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "cannot stat '%s'", path);
	if (write_file_atomic(real, res->text, res->len, 0644, &changed, err) <
	    0)
		return -1;
	return 0;
}

/*
 * jsonpos.c - a position-only JSON scanner (see jsonpos.h).
 *
 * It trusts the input to be valid JSON (jansson checked it first), so it
 * only needs to know where tokens start and end; it never validates.
 */
#include "config.h"

#include <string.h>

#include "basic/hash.h"
#include "basic/jsonpos.h"
#include "basic/util.h"

struct cursor {
	const char *s;
	size_t len, i;
	int line, col;
};

static void advance(struct cursor *c)
{
	unsigned char b = (unsigned char)c->s[c->i++];
	if (b == '\n') {
		c->line++;
		c->col = 1;
	} else if ((b & 0xC0) != 0x80) {
		c->col++;
	}
}

static int peek(const struct cursor *c)
{
	return c->i < c->len ? (unsigned char)c->s[c->i] : -1;
}

static void skip_ws(struct cursor *c)
{
	for (int ch = peek(c);
	     ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; ch = peek(c))
		advance(c);
}

static unsigned hex4(const char *p)
{
	unsigned v = 0;
	for (int k = 0; k < 4; k++) {
		char h = p[k];
		v <<= 4;
		if (h >= '0' && h <= '9')
			v |= (unsigned)(h - '0');
		else if (h >= 'a' && h <= 'f')
			v |= (unsigned)(h - 'a' + 10);
		else if (h >= 'A' && h <= 'F')
			v |= (unsigned)(h - 'A' + 10);
	}
	return v;
}

static void add_utf8(struct strbuf *sb, unsigned cp)
{
	if (cp < 0x80) {
		strbuf_addch(sb, (int)cp);
	} else if (cp < 0x800) {
		strbuf_addch(sb, (int)(0xC0 | (cp >> 6)));
		strbuf_addch(sb, (int)(0x80 | (cp & 0x3F)));
	} else if (cp < 0x10000) {
		strbuf_addch(sb, (int)(0xE0 | (cp >> 12)));
		strbuf_addch(sb, (int)(0x80 | ((cp >> 6) & 0x3F)));
		strbuf_addch(sb, (int)(0x80 | (cp & 0x3F)));
	} else {
		strbuf_addch(sb, (int)(0xF0 | (cp >> 18)));
		strbuf_addch(sb, (int)(0x80 | ((cp >> 12) & 0x3F)));
		strbuf_addch(sb, (int)(0x80 | ((cp >> 6) & 0x3F)));
		strbuf_addch(sb, (int)(0x80 | (cp & 0x3F)));
	}
}

/* Scan a string token; decode it into out when out is not NULL. */
static void scan_string(struct cursor *c, struct strbuf *out)
{
	advance(c); /* opening quote */
	while (c->i < c->len && c->s[c->i] != '"') {
		char ch = c->s[c->i];
		if (ch != '\\') {
			if (out)
				strbuf_addch(out, ch);
			advance(c);
			continue;
		}
		advance(c);
		if (c->i >= c->len)
			break;
		ch = c->s[c->i];
		if (ch == 'u' && c->i + 4 < c->len) {
			unsigned cp = hex4(c->s + c->i + 1);
			for (int k = 0; k < 5; k++)
				advance(c);
			if (cp >= 0xD800 && cp < 0xDC00 && c->i + 5 < c->len &&
			    c->s[c->i] == '\\' && c->s[c->i + 1] == 'u') {
				unsigned lo = hex4(c->s + c->i + 2);
				for (int k = 0; k < 6; k++)
					advance(c);
				cp = 0x10000 + ((cp - 0xD800) << 10) +
				     (lo - 0xDC00);
			}
			if (out)
				add_utf8(out, cp);
			continue;
		}
		if (out) {
			static const char from[] = "bfnrt", to[] = "\b\f\n\r\t";
			const char *k = strchr(from, ch);
			strbuf_addch(out, k ? to[k - from] : ch);
		}
		advance(c);
	}
	if (c->i < c->len)
		advance(c); /* closing quote */
}

static struct jpos *scan_value(struct cursor *c, int depth);

static struct jpos *new_node(const struct cursor *c, char kind)
{
	struct jpos *p = xcalloc(1, sizeof(*p));
	p->line = c->line;
	p->col = c->col;
	p->kind = kind;
	return p;
}

static struct jpos *scan_array(struct cursor *c, int depth)
{
	struct jpos *p = new_node(c, '[');
	size_t alloc = 0;

	advance(c);
	skip_ws(c);
	while (peek(c) != ']' && peek(c) != -1) {
		ALLOC_GROW(p->items, p->n + 1, alloc);
		p->items[p->n++] = scan_value(c, depth + 1);
		skip_ws(c);
		if (peek(c) == ',') {
			advance(c);
			skip_ws(c);
		}
	}
	if (peek(c) == ']')
		advance(c);
	return p;
}

/* The slot of key: the one holding it, or the empty one it would take. */
static size_t find_slot(const struct jpos *p, const char *key)
{
	size_t mask = p->nslots - 1;
	size_t i = hash_str(key) & mask;

	while (p->slots[i] && strcmp(p->members[p->slots[i] - 1].key, key))
		i = (i + 1) & mask;
	return i;
}

/* Index the members of an object, noting each key's first member. */
static void index_members(struct jpos *p)
{
	if (p->n == 0)
		return;
	p->nslots = 4;
	while (p->nslots < 2 * p->n)
		p->nslots *= 2;
	p->slots = xcalloc(p->nslots, sizeof(*p->slots));
	for (size_t i = 0; i < p->n; i++) {
		size_t s = find_slot(p, p->members[i].key);
		p->members[i].first =
		    p->slots[s] ? p->members[p->slots[s] - 1].first : i;
		p->slots[s] = i + 1;
	}
}

static struct jpos *scan_object(struct cursor *c, int depth)
{
	struct jpos *p = new_node(c, '{');
	size_t alloc = 0;

	advance(c);
	skip_ws(c);
	while (peek(c) == '"') {
		struct jpos_member *m;
		struct strbuf key = STRBUF_INIT;

		ALLOC_GROW(p->members, p->n + 1, alloc);
		m = &p->members[p->n++];
		m->kline = c->line;
		m->kcol = c->col;
		scan_string(c, &key);
		m->key = strbuf_detach(&key, NULL);
		skip_ws(c);
		if (peek(c) == ':')
			advance(c);
		skip_ws(c);
		m->val = scan_value(c, depth + 1);
		skip_ws(c);
		if (peek(c) == ',') {
			advance(c);
			skip_ws(c);
		}
	}
	if (peek(c) == '}')
		advance(c);
	index_members(p);
	return p;
}

static struct jpos *scan_value(struct cursor *c, int depth)
{
	struct jpos *p;
	int ch;

	skip_ws(c);
	ch = peek(c);
	/* jansson refuses nesting deeper than 2048 before we get here. */
	if (ch == '[' && depth < 4096)
		return scan_array(c, depth);
	if (ch == '{' && depth < 4096)
		return scan_object(c, depth);
	p = new_node(c, 'v');
	if (ch == '"') {
		scan_string(c, NULL);
		return p;
	}
	while (c->i < c->len && !strchr(",]} \t\r\n", c->s[c->i]))
		advance(c);
	return p;
}

struct jpos *jpos_scan(const char *buf, size_t len)
{
	struct cursor c = {buf, len, 0, 1, 1};
	return scan_value(&c, 0);
}

void jpos_free(struct jpos *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		if (p->kind == '{') {
			free(p->members[i].key);
			jpos_free(p->members[i].val);
		} else {
			jpos_free(p->items[i]);
		}
	}
	free(p->members);
	free(p->items);
	free(p->slots);
	free(p);
}

const struct jpos *jpos_item(const struct jpos *p, size_t i)
{
	if (!p || p->kind != '[' || i >= p->n)
		return NULL;
	return p->items[i];
}

const struct jpos_member *jpos_member(const struct jpos *p, const char *key)
{
	size_t s;

	if (!p || p->kind != '{' || p->n == 0)
		return NULL;
	s = find_slot(p, key);
	return p->slots[s] ? &p->members[p->slots[s] - 1] : NULL;
}

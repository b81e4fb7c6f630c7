/*
 * audit.c - the audit's rows (audit.h): op names, a new row with its UUID
 * and time, clean text for targets and details, and the row as JSON and
 * back, strictly (the spool replays only what it wrote).
 *
 * The recorder (audit_open ... audit_close) and the chain encoding
 * (audit-chain.c) live elsewhere.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include "basic/alloc.h"
#include "audit/audit.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/text.h"
#include "basic/xjson.h"

static const char *const op_names[AUDIT_NOPS] = {
    "write",	 "edit",     "read",	"read_bytes", "ls_info",
    "glob_info", "grep_raw", "execute", "open",	      "close",
    "reap",	 "stat",     "remove",
};

const char *audit_op_name(enum audit_op op)
{
	return (unsigned)op < AUDIT_NOPS ? op_names[op] : NULL;
}

int audit_op_parse(const char *s)
{
	for (int i = 0; i < AUDIT_NOPS; i++)
		if (!strcmp(s, op_names[i]))
			return i;
	return -1;
}

int audit_op_parse_alias(const char *s)
{
	/* serve/wire.c's event_op, the other way */
	static const char *const alias[][2] = {
	    {"exec", "execute"},  {"ls", "ls_info"},  {"glob", "glob_info"},
	    {"grep", "grep_raw"}, {"exists", "stat"},
	};

	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(s, alias[i][0]))
			return audit_op_parse(alias[i][1]);
	return audit_op_parse(s);
}

/* 16 random bytes as a version 4, variant 1 (RFC 9562) UUID. */
static void uuid_v4(char out[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[16];
	char *o = out;

	random_bytes(b, sizeof(b));
	b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
	for (size_t i = 0; i < sizeof(b); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*o++ = '-';
		*o++ = hex[b[i] >> 4];
		*o++ = hex[b[i] & 15];
	}
	*o = '\0';
}

long long audit_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void audit_row_init(struct audit_row *r, enum audit_op op)
{
	memset(r, 0, sizeof(*r));
	uuid_v4(r->id);
	r->created_us = audit_now_us();
	r->tenant = xstrdup("");
	r->session_key = xstrdup("");
	r->runtime = xstrdup("");
	r->target = xstrdup("");
	r->detail = xstrdup("");
	r->op = op;
	r->version = AUDIT_CHAIN_VERSION;
	r->bytes = AUDIT_NONE;
	r->results = AUDIT_NONE;
}

void audit_row_release(struct audit_row *r)
{
	free(r->tenant);
	free(r->session_key);
	free(r->runtime);
	free(r->agent);
	free(r->run);
	free(r->target);
	free(r->detail);
	free(r->wire_id);
	r->tenant = r->session_key = r->runtime = NULL;
	r->agent = r->run = r->target = r->detail = r->wire_id = NULL;
}

#define CUT_MARK " [cut]"
#define CUT_LEN (sizeof(CUT_MARK) - 1)

/*
 * Each character of s is one unit of the output: itself, or its escape
 * (text_add_escaped's forms, all ASCII, so an escape's bytes are its
 * characters).  A backslash is a unit escaped too (\\): without that
 * a file named with a tab and one named with a backslash and a t would be
 * recorded as the same bytes.  Cleaning a clean string therefore changes
 * it; what is clean is checked by undoing the escapes (audit_is_clean).
 * The cut keeps the units that fit before the mark whole; an escape that
 * would straddle the mark goes whole, so the result is then up to 5
 * characters short of max.  Only about max units are looked at, whatever
 * len is.
 */
/* One unit of s at i (see audit_clean) appended to out: its bytes in s,
 * its width (characters) in *w. */
static size_t clean_unit(struct strbuf *out, const char *s, size_t len,
			 size_t i, size_t *w)
{
	uint32_t c;
	size_t n = utf8_decode(s + i, len - i, &c), before = out->len;

	if (n == 0) {
		text_add_escaped(out, s + i, 1);
		*w = out->len - before;
		return 1;
	}
	if (text_is_control(c) || text_is_bidi(c) || c == '\\') {
		text_add_escaped(out, s + i, n);
		*w = out->len - before;
	} else {
		strbuf_add(out, s + i, n);
		*w = 1;
	}
	return n;
}

void audit_clean(struct strbuf *out, const char *s, size_t len, size_t max)
{
	size_t chars = 0, keep = out->len;

	if (max < CUT_LEN)
		die_bug("audit_clean: max %zu is below the cut mark", max);
	strbuf_grow(out, len < max ? len : max);
	for (size_t i = 0; i < len;) {
		size_t w;

		i += clean_unit(out, s, len, i, &w);
		if (chars + w <= max - CUT_LEN)
			keep = out->len;
		chars += w;
		if (chars > max) {
			strbuf_setlen(out, keep);
			strbuf_addstr(out, CUT_MARK);
			return;
		}
	}
}

#define HEAD_MARK "[cut] "
#define HEAD_LEN (sizeof(HEAD_MARK) - 1)

/*
 * A unit is at most 4 bytes and at least 1 character wide, so the last
 * max characters come from the last 4 * max bytes: only those are looked
 * at, whatever len is.  A start inside that window that is a UTF-8
 * continuation byte is moved past (at most 3 of them), to a byte that
 * starts a unit in s as a whole too.
 */
void audit_clean_tail(struct strbuf *out, const char *s, size_t len, size_t max)
{
	size_t from = 0, chars = 0, w, i;
	struct strbuf tmp = STRBUF_INIT;

	if (max < HEAD_LEN)
		die_bug("audit_clean_tail: max %zu is below the cut mark", max);
	if (len / 4 > max) {
		from = len - 4 * max;
		for (int k = 0;
		     k < 3 && ((unsigned char)s[from] & 0xc0) == 0x80; k++)
			from++;
	}
	for (i = from; i < len;) {
		i += clean_unit(&tmp, s, len, i, &w);
		chars += w;
	}
	if (from == 0 && chars <= max) {
		strbuf_add(out, tmp.buf ? tmp.buf : "", tmp.len);
		strbuf_release(&tmp);
		return;
	}
	/* Drop units from the front until the rest fits after the mark. */
	strbuf_addstr(out, HEAD_MARK);
	for (i = from; i < len && chars > max - HEAD_LEN;) {
		strbuf_reset(&tmp);
		i += clean_unit(&tmp, s, len, i, &w);
		chars -= w;
	}
	for (; i < len;)
		i += clean_unit(out, s, len, i, &w);
	strbuf_release(&tmp);
}

static void row_set(char **field, struct strbuf *sb)
{
	free(*field);
	*field = strbuf_detach(sb, NULL);
	if (!*field)
		*field = xstrdup("");
}

void audit_row_set(char **field, const char *s, size_t len, size_t max)
{
	struct strbuf sb = STRBUF_INIT;

	audit_clean(&sb, s, len, max);
	row_set(field, &sb);
}

void audit_row_set_target(struct audit_row *r, const char *s, size_t len)
{
	struct strbuf sb = STRBUF_INIT;

	audit_clean_tail(&sb, s, len, AUDIT_TARGET_MAX);
	row_set(&r->target, &sb);
}

/*
 * s with text_add_escaped's escapes undone into raw; false for a backslash
 * that starts none of them (\\ \n \r \t \xNN \uNNNN, lowercase hex).
 * Whether the escapes were the ones clean_unit would write is for the
 * caller to see, by cleaning raw again.
 */
static bool unescape(const char *s, size_t len, struct strbuf *raw)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		size_t ndig;
		uint32_t v = 0;

		if (s[i] != '\\') {
			strbuf_addch(raw, s[i]);
			continue;
		}
		if (++i == len)
			return false;
		switch (s[i]) {
		case '\\':
			strbuf_addch(raw, '\\');
			continue;
		case 'n':
			strbuf_addch(raw, '\n');
			continue;
		case 'r':
			strbuf_addch(raw, '\r');
			continue;
		case 't':
			strbuf_addch(raw, '\t');
			continue;
		case 'x':
			ndig = 2;
			break;
		case 'u':
			ndig = 4;
			break;
		default:
			return false;
		}
		if (len - i - 1 < ndig)
			return false;
		for (size_t k = 1; k <= ndig; k++) {
			const char *d = s[i + k] ? strchr(hex, s[i + k]) : NULL;

			if (!d)
				return false;
			v = v * 16 + (uint32_t)(d - hex);
		}
		i += ndig;
		if (ndig == 2) {
			strbuf_addch(raw, (char)v);
		} else if (v < 0x80 || (v >= 0xd800 && v < 0xe000)) {
			return false;
		} else if (v < 0x800) {
			strbuf_addch(raw, (char)(0xc0 | v >> 6));
			strbuf_addch(raw, (char)(0x80 | (v & 0x3f)));
		} else {
			strbuf_addch(raw, (char)(0xe0 | v >> 12));
			strbuf_addch(raw, (char)(0x80 | ((v >> 6) & 0x3f)));
			strbuf_addch(raw, (char)(0x80 | (v & 0x3f)));
		}
	}
	return true;
}

bool audit_is_clean(const char *s, size_t max)
{
	struct strbuf raw = STRBUF_INIT, sb = STRBUF_INIT;
	size_t len = strlen(s);
	bool same = false;

	if (unescape(s, len, &raw)) {
		audit_clean(&sb, raw.buf ? raw.buf : "", raw.len, max);
		same = sb.len == len && (len == 0 || !memcmp(sb.buf, s, len));
	}
	strbuf_release(&raw);
	strbuf_release(&sb);
	return same;
}

bool audit_is_plain(const char *s, size_t max)
{
	size_t len = strlen(s), chars = 0;

	for (size_t i = 0; i < len; chars++) {
		uint32_t c;
		size_t n = utf8_decode(s + i, len - i, &c);

		if (n == 0 || text_is_control(c) || text_is_bidi(c))
			return false;
		i += n;
	}
	return chars <= max;
}

/* Years 0001-9999: what RFC 3339 can write and PostgreSQL can hold. */
#define US_MIN (-62135596800LL * 1000000)
#define US_MAX (253402300799LL * 1000000 + 999999)

void audit_time_format(char out[32], long long us)
{
	long long sec = us / 1000000, frac = us % 1000000;
	time_t tt;
	struct tm tm;

	if (frac < 0) {
		frac += 1000000;
		sec--;
	}
	tt = (time_t)sec;
	if (us < US_MIN || us > US_MAX || !gmtime_r(&tt, &tm)) {
		snprintf(out, 32, "out of range");
		return;
	}
	/* The range checked above keeps it to 27 characters; the compiler
	 * cannot know that of struct tm. */
	snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02u.%06uZ",
		 (unsigned)(tm.tm_year + 1900) % 10000,
		 (unsigned)(tm.tm_mon + 1) % 100, (unsigned)tm.tm_mday % 100,
		 (unsigned)tm.tm_hour % 100, (unsigned)tm.tm_min % 100,
		 (unsigned)tm.tm_sec % 100, (unsigned)frac % 1000000);
}

/* Exactly "YYYY-MM-DDTHH:MM:SS.ffffffZ", a time that exists. */
bool audit_time_parse(const char *s, long long *us)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
	int v[7] = {0};
	int pos[7][2] = {{0, 4},  {5, 2},  {8, 2}, {11, 2},
			 {14, 2}, {17, 2}, {20, 6}};
	struct tm tm = {0}, back;
	time_t tt;

	if (strlen(s) != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9')
				    : s[i] != shape[i])
			return false;
	}
	for (int k = 0; k < 7; k++)
		for (int i = 0; i < pos[k][1]; i++)
			v[k] = v[k] * 10 + (s[pos[k][0] + i] - '0');
	if (v[0] < 1)
		return false;
	tm.tm_year = v[0] - 1900;
	tm.tm_mon = v[1] - 1;
	tm.tm_mday = v[2];
	tm.tm_hour = v[3];
	tm.tm_min = v[4];
	tm.tm_sec = v[5];
	tt = timegm(&tm);
	/* timegm normalises Feb 30 into March and 24:00 into tomorrow. */
	if (!gmtime_r(&tt, &back) || back.tm_year != v[0] - 1900 ||
	    back.tm_mon != v[1] - 1 || back.tm_mday != v[2] ||
	    back.tm_hour != v[3] || back.tm_min != v[4] || back.tm_sec != v[5])
		return false;
	*us = (long long)tt * 1000000 + v[6];
	return true;
}

json_t *audit_row_json(const struct audit_row *r)
{
	json_t *j = json_object();

	for (size_t i = 0; i < audit_ncolumns; i++) {
		/* A row of version 1 (from an older spool line) is written
		 * back as it was read: without wire_id, which says its
		 * version (audit_row_from_json). */
		if (r->version == 1 && !strcmp(audit_columns[i].key, "wire_id"))
			continue;
		json_object_set_new(j, audit_columns[i].key,
				    audit_column_json(&audit_columns[i], r));
	}
	return j;
}

bool audit_uuid_ok(const char *id)
{
	for (int i = 0; i < 36; i++) {
		char c = id[i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return false;
		} else if (!((c >= '0' && c <= '9') ||
			     (c >= 'a' && c <= 'f'))) {
			return false;
		}
	}
	return id[36] == '\0' && id[14] == '4' && strchr("89ab", id[19]);
}

static int bad(struct sbx_error **err, const char *key, const char *why)
{
	return sbx_error_set(err, SBX_E_BAD_DATA, 0, "'%s': %s", key, why);
}

/* s is clean by the rule of a row of version v: version 1 rows were
 * cleaned with the backslash kept as it is (audit_is_plain, without the
 * cut's rule: a row of 0.x is taken as it was written). */
static int check_text(const char *s, const char *key, size_t max, int v,
		      struct sbx_error **err)
{
	if (!s)
		return bad(err, key, "missing");
	if (utf8_chars(s, strlen(s)) > max)
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "'%s': over %zu characters", key, max);
	if (v == 1 ? !audit_is_plain(s, max) : !audit_is_clean(s, max))
		return bad(err, key, "not clean text");
	return 0;
}

/* An id (agent, run, wire_id) is kept byte for byte, never escaped: it
 * is refused at the door when it holds what would need escaping. */
static int check_id(const char *s, const char *key, struct sbx_error **err)
{
	if (!s)
		return 0;
	if (!*s)
		return bad(err, key, "empty");
	if (strlen(s) > AUDIT_ID_MAX)
		return sbx_error_set(err, SBX_E_BAD_DATA, 0,
				     "'%s': over %d bytes", key, AUDIT_ID_MAX);
	return check_text(s, key, AUDIT_ID_MAX, 1, err);
}

/*
 * Names (tenant, session, runtime) are sbxcat's own and much shorter; the
 * bound is there so a row always fits a spool line (spool.c).
 */
#define NAME_MAX_CHARS AUDIT_TARGET_MAX

int audit_row_check(const struct audit_row *r, struct sbx_error **err)
{
	int v = r->version;

	if (v < 1 || v > AUDIT_CHAIN_VERSION)
		return bad(err, "version", "not a version this sbxcat knows");
	if (!audit_uuid_ok(r->id))
		return bad(err, "id", "not a lowercase version 4 UUID");
	if (r->created_us < AUDIT_US_MIN || r->created_us > AUDIT_US_MAX)
		return bad(err, "created_at", "out of range");
	if (check_text(r->tenant, "tenant", NAME_MAX_CHARS, v, err) < 0 ||
	    check_text(r->session_key, "session", NAME_MAX_CHARS, v, err) < 0 ||
	    check_text(r->runtime, "runtime", NAME_MAX_CHARS, v, err) < 0 ||
	    check_id(r->agent, "agent", err) < 0 ||
	    check_id(r->run, "run", err) < 0 ||
	    check_id(r->wire_id, "wire_id", err) < 0)
		return -1;
	if (v == 1 && r->wire_id)
		return bad(err, "wire_id", "not in a row of version 1");
	if (!audit_op_name(r->op))
		return bad(err, "op", "not an operation");
	if (check_text(r->target, "target", AUDIT_TARGET_MAX, v, err) < 0)
		return -1;
	if (r->bytes < 0 && r->bytes != AUDIT_NONE)
		return bad(err, "bytes", "negative");
	if (r->results < 0 && r->results != AUDIT_NONE)
		return bad(err, "results", "negative");
	if (r->duration_ms < 0)
		return bad(err, "duration_ms", "negative");
	return check_text(r->detail, "detail", AUDIT_DETAIL_MAX, v, err);
}

static int from_json(json_t *j, struct audit_row *r, struct sbx_error **err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(j))
		return sbx_error_set(err, SBX_E_BAD_DATA, 0, "not an object");
	json_object_foreach(j, key, v)
	{
		size_t k = 0;

		while (k < audit_ncolumns && strcmp(key, audit_columns[k].key))
			k++;
		if (k == audit_ncolumns) {
			struct strbuf sb = STRBUF_INIT;

			text_add_escaped(&sb, key, strlen(key));
			sbx_error_set(err, SBX_E_BAD_DATA, 0, "unknown key '%s'",
				      sb.buf ? sb.buf : "");
			strbuf_release(&sb);
			return -1;
		}
	}
	/* A line written before version 2 has no wire_id: its strings were
	 * cleaned by version 1's rule, and its hash will be of version 1. */
	r->version = json_object_get(j, "wire_id") ? AUDIT_CHAIN_VERSION : 1;
	for (size_t k = 0; k < audit_ncolumns; k++)
		if (audit_column_from_json(&audit_columns[k], j, r, err) < 0)
			return -1;
	return audit_row_check(r, err);
}

int audit_row_from_json(json_t *j, struct audit_row *r, struct sbx_error **err)
{
	memset(r, 0, sizeof(*r));
	if (from_json(j, r, err) < 0) {
		audit_row_release(r);
		return -1;
	}
	return 0;
}

/*
 * audit-column.c - the columns of an audit row, defined once (audit.h,
 * docs/audit.md "Adding a column"): the table, and what each type of
 * column is in the database (a value inserted, a value read back by name),
 * in the server's JSON and CSV, in the row's own JSON (the spool's, the
 * jsonl export's) and on a terminal.
 *
 * The insert (auditdb.c), the verify reader (auditdb.c), the page JSON
 * and the CSV export (auditq.c), the spool's lines (audit.c) and the
 * terminal table (cli/, through svc-audit.h) all go through this table,
 * so a column added here reaches each of them.  What the chain hashes
 * does not: that is audit_canonical's, explicit and versioned.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "basic/alloc.h"
#include "basic/error.h"
#include "basic/text.h"
#include "basic/xjson.h"

#define FIELD(name) offsetof(struct audit_row, name)

/* The terminal's cells of a page row (audit_column_cell). */
static void cell_time(const struct audit_column *c, json_t *row,
		      struct strbuf *out);
static void cell_text(const struct audit_column *c, json_t *row,
		      struct strbuf *out);
static void cell_ok(const struct audit_column *c, json_t *row,
		    struct strbuf *out);
static void cell_number(const struct audit_column *c, json_t *row,
			struct strbuf *out);
static void brief_detail(const struct audit_column *c, json_t *row,
			 struct strbuf *out);

/*
 * In the order of struct audit_row, which is the order of the JSON
 * objects' keys and of the CSV's columns (seq, the database's own, follows
 * id in CSV and ends a page's JSON object).
 */
const struct audit_column audit_columns[] = {
    {.key = "id",
     .sql = "id",
     .type = AUDIT_COL_UUID,
     .offset = FIELD(id),
     .head = "ID",
     .name = "id",
     .cell = cell_text},
    {.key = "created_at",
     .sql = "created_at",
     .type = AUDIT_COL_TIME,
     .offset = FIELD(created_us),
     .head = "TIME (UTC)",
     .name = "time",
     .usual = true,
     .cell = cell_time},
    /*
     * The usual table is what answers "what did that agent do": the
     * time, the agent and run, the op, its target, how it ended; in 100
     * columns, with room for the target.  The tenant, the session (a
     * 40-character key), the counts and the times are --columns' and -o
     * wide's.
     */
    {.key = "tenant",
     .sql = "tenant",
     .type = AUDIT_COL_TEXT,
     .offset = FIELD(tenant),
     .head = "TENANT",
     .name = "tenant",
     .cut = AUDIT_CUT_MIDDLE,
     .cell = cell_text},
    {.key = "session",
     .sql = "session_key",
     .type = AUDIT_COL_TEXT,
     .offset = FIELD(session_key),
     .head = "SESSION",
     .name = "session",
     .cut = AUDIT_CUT_MIDDLE,
     .cell = cell_text},
    {.key = "runtime",
     .sql = "runtime",
     .type = AUDIT_COL_TEXT,
     .offset = FIELD(runtime),
     .head = "RUNTIME",
     .name = "runtime",
     .cut = AUDIT_CUT_MIDDLE,
     .cell = cell_text},
    /* agent_ref is what was recorded, and what the chain covers;
     * agent_id the foreign key, SET NULL when the agent goes. */
    {.key = "agent",
     .sql = "agent_ref",
     .also = "agent_id",
     .type = AUDIT_COL_ID,
     .offset = FIELD(agent),
     .head = "AGENT",
     .name = "agent",
     .usual = true,
     .cut = AUDIT_CUT_MIDDLE,
     .cell = cell_text},
    {.key = "run",
     .sql = "run_ref",
     .also = "run_id",
     .type = AUDIT_COL_ID,
     .offset = FIELD(run),
     .head = "RUN",
     .name = "run",
     .usual = true,
     .cut = AUDIT_CUT_MIDDLE,
     .cell = cell_text},
    {.key = "op",
     .sql = "op",
     .type = AUDIT_COL_OP,
     .offset = FIELD(op),
     .head = "OP",
     .name = "op",
     .usual = true,
     .cell = cell_text},
    /* The one cell that may be long (a path, a command line): the first
     * a narrow terminal cuts. */
    {.key = "target",
     .sql = "target",
     .type = AUDIT_COL_TEXT,
     .offset = FIELD(target),
     .head = "TARGET",
     .name = "target",
     .usual = true,
     .cut = AUDIT_CUT_FIRST,
     .cell = cell_text},
    {.key = "ok",
     .sql = "ok",
     .type = AUDIT_COL_BOOL,
     .offset = FIELD(ok),
     .head = "OK",
     .name = "ok",
     .cell = cell_ok},
    {.key = "exit_status",
     .sql = "exit_status",
     .type = AUDIT_COL_EXIT,
     .offset = FIELD(exit_status),
     .head = "EXIT",
     .name = "exit",
     .cell = cell_number},
    {.key = "bytes",
     .sql = "bytes",
     .type = AUDIT_COL_COUNT,
     .offset = FIELD(bytes),
     .head = "BYTES",
     .name = "bytes",
     .cell = cell_number},
    {.key = "results",
     .sql = "results",
     .type = AUDIT_COL_COUNT,
     .offset = FIELD(results),
     .head = "RESULTS",
     .name = "results",
     .cell = cell_number},
    {.key = "duration_ms",
     .sql = "duration_ms",
     .type = AUDIT_COL_MS,
     .offset = FIELD(duration_ms),
     .head = "MS",
     .name = "ms",
     .cell = cell_number},
    /* The usual table's DETAIL says how it ended, in short (brief_detail);
     * -o wide shows the whole detail. */
    {.key = "detail",
     .sql = "detail",
     .type = AUDIT_COL_TEXT,
     .offset = FIELD(detail),
     .head = "DETAIL",
     .name = "detail",
     .usual = true,
     .cut = AUDIT_CUT_END,
     .cell = cell_text,
     .brief = brief_detail},
    /* Migration 4: the session's id on the service's wire.  A spool
     * line without it was written before (audit_row_from_json). */
    {.key = "wire_id",
     .sql = "wire_id",
     .type = AUDIT_COL_ID,
     .offset = FIELD(wire_id),
     .head = "WIRE ID",
     .name = "wire_id",
     .cut = AUDIT_CUT_MIDDLE,
     .cell = cell_text},
};
const size_t audit_ncolumns = sizeof(audit_columns) / sizeof(audit_columns[0]);

/* The field of r that c is. */
#define AT(r, c, type) ((type *)((char *)(r) + (c)->offset))
#define CAT(r, c, type) ((const type *)((const char *)(r) + (c)->offset))

/* ---- the database ---- */

const char *audit_column_value(const struct audit_column *c,
			       const struct audit_row *r,
			       char buf[AUDIT_VALUE_MAX])
{
	long long n;

	switch (c->type) {
	case AUDIT_COL_UUID:
		return CAT(r, c, char);
	case AUDIT_COL_TIME:
		/* RFC 3339, which timestamptz takes as it is */
		audit_time_format(buf, *CAT(r, c, long long));
		return buf;
	case AUDIT_COL_TEXT:
	case AUDIT_COL_ID:
		return *CAT(r, c, char *const);
	case AUDIT_COL_OP:
		return audit_op_name(*CAT(r, c, enum audit_op));
	case AUDIT_COL_BOOL:
		return *CAT(r, c, bool) ? "t" : "f";
	case AUDIT_COL_EXIT:
		if (!r->has_exit)
			return NULL;
		snprintf(buf, AUDIT_VALUE_MAX, "%d", *CAT(r, c, int));
		return buf;
	case AUDIT_COL_COUNT:
	case AUDIT_COL_MS:
		n = *CAT(r, c, long long);
		if (c->type == AUDIT_COL_COUNT && n == AUDIT_NONE)
			return NULL;
		snprintf(buf, AUDIT_VALUE_MAX, "%lld", n);
		return buf;
	}
	die_bug("audit column '%s' of type %d", c->key, (int)c->type);
}

void audit_column_select(const struct audit_column *c, struct strbuf *out)
{
	if (c->type == AUDIT_COL_TIME)
		strbuf_addf(out, "(extract(epoch FROM %s) * 1000000)::bigint",
			    c->sql);
	else
		strbuf_addstr(out, c->sql);
	strbuf_addf(out, " AS %s", c->key);
}

/* A decimal number, all of s. */
static int number(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int audit_column_read(const struct audit_column *c, const char *v,
		      struct audit_row *r)
{
	long long n;
	int op;

	switch (c->type) {
	case AUDIT_COL_UUID:
		if (!v || strlen(v) != 36)
			return -1;
		memcpy(AT(r, c, char), v, 37);
		return 0;
	case AUDIT_COL_TIME:
		return number(v, LLONG_MIN, LLONG_MAX, AT(r, c, long long));
	case AUDIT_COL_TEXT:
		if (!v)
			return -1;
		/* fall through */
	case AUDIT_COL_ID:
		*AT(r, c, char *) = (char *)v;
		return 0;
	case AUDIT_COL_OP:
		op = v ? audit_op_parse(v) : -1;
		*AT(r, c, enum audit_op) =
		    op < 0 ? AUDIT_NOPS : (enum audit_op)op;
		return op < 0 ? -1 : 0;
	case AUDIT_COL_BOOL:
		if (!v || (strcmp(v, "t") && strcmp(v, "f")))
			return -1;
		*AT(r, c, bool) = !strcmp(v, "t");
		return 0;
	case AUDIT_COL_EXIT:
		r->has_exit = v != NULL;
		*AT(r, c, int) = 0;
		if (!v)
			return 0;
		if (number(v, INT_MIN, INT_MAX, &n) < 0)
			return -1;
		*AT(r, c, int) = (int)n;
		return 0;
	case AUDIT_COL_COUNT:
		if (!v) {
			*AT(r, c, long long) = AUDIT_NONE;
			return 0;
		}
		/* fall through */
	case AUDIT_COL_MS:
		return number(v, 0, LLONG_MAX, AT(r, c, long long));
	}
	die_bug("audit column '%s' of type %d", c->key, (int)c->type);
}

#define TS_FORMAT "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'"

void audit_column_json_sql(const struct audit_column *c, struct strbuf *out)
{
	if (c->type == AUDIT_COL_TIME)
		strbuf_addf(out,
			    "to_char(%s AT TIME ZONE 'UTC', " TS_FORMAT ")",
			    c->sql);
	else
		strbuf_addstr(out, c->sql);
}

void audit_column_csv_sql(const struct audit_column *c, struct strbuf *out)
{
	switch (c->type) {
	case AUDIT_COL_TIME:
		audit_column_json_sql(c, out);
		break;
	case AUDIT_COL_TEXT:
	case AUDIT_COL_ID:
		/* A text cell a spreadsheet would take for a formula (= + -
		 * @, a tab or a CR first) gets a ' in front, as OWASP's
		 * CSV-injection advice says. */
		strbuf_addf(out,
			    "CASE WHEN %s ~ E'^[-=+@\\t\\r]' THEN '''' || %s "
			    "ELSE %s END",
			    c->sql, c->sql, c->sql);
		break;
	case AUDIT_COL_BOOL:
		strbuf_addf(out, "CASE WHEN %s THEN 'true' ELSE 'false' END",
			    c->sql);
		break;
	default:
		strbuf_addstr(out, c->sql);
	}
	strbuf_addf(out, " AS %s", c->key);
}

/* ---- the row's own JSON ---- */

json_t *audit_column_json(const struct audit_column *c,
			  const struct audit_row *r)
{
	char buf[AUDIT_VALUE_MAX];
	const char *s;

	switch (c->type) {
	case AUDIT_COL_UUID:
	case AUDIT_COL_TIME:
	case AUDIT_COL_OP:
		s = audit_column_value(c, r, buf);
		return json_string(s ? s : "?");
	case AUDIT_COL_TEXT:
	case AUDIT_COL_ID:
		s = *CAT(r, c, char *const);
		return s ? xjson_text(s) : json_null();
	case AUDIT_COL_BOOL:
		return json_boolean(*CAT(r, c, bool));
	case AUDIT_COL_EXIT:
		return r->has_exit ? json_integer(*CAT(r, c, int))
				   : json_null();
	case AUDIT_COL_COUNT:
	case AUDIT_COL_MS:
		if (c->type == AUDIT_COL_COUNT &&
		    *CAT(r, c, long long) == AUDIT_NONE)
			return json_null();
		return json_integer(*CAT(r, c, long long));
	}
	die_bug("audit column '%s' of type %d", c->key, (int)c->type);
}

static int bad(struct sbx_error **err, const char *key, const char *why)
{
	return sbx_error_set(err, SBX_E_BAD_DATA, 0, "'%s': %s", key, why);
}

/* A string member (or null when nullable) copied into *out. */
static int get_str(json_t *j, const char *key, bool nullable, char **out,
		   struct sbx_error **err)
{
	json_t *v = json_object_get(j, key);

	if (!v)
		return bad(err, key, "missing");
	if (nullable && json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(err, key,
			   nullable ? "not a string or null" : "not a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(err, key, "holds a NUL");
	*out = xstrdup(json_string_value(v));
	return 0;
}

/* An integer member in [min, max], or null (*set false) when nullable. */
static int get_int(json_t *j, const char *key, bool nullable, long long min,
		   long long max, bool *set, long long *out,
		   struct sbx_error **err)
{
	json_t *v = json_object_get(j, key);

	if (!v)
		return bad(err, key, "missing");
	if (nullable && json_is_null(v)) {
		*set = false;
		return 0;
	}
	if (!json_is_integer(v))
		return bad(err, key,
			   nullable ? "not an integer or null"
				    : "not an integer");
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return bad(err, key, "out of range");
	*set = true;
	*out = json_integer_value(v);
	return 0;
}

int audit_column_from_json(const struct audit_column *c, json_t *j,
			   struct audit_row *r, struct sbx_error **err)
{
	json_t *v = json_object_get(j, c->key);
	long long n = 0;
	bool set;
	int op;

	switch (c->type) {
	case AUDIT_COL_UUID:
		if (!v)
			return bad(err, c->key, "missing");
		if (!json_is_string(v) || json_string_length(v) != 36 ||
		    !audit_uuid_ok(json_string_value(v)))
			return bad(err, c->key,
				   "not a lowercase version 4 UUID");
		memcpy(AT(r, c, char), json_string_value(v), 37);
		return 0;
	case AUDIT_COL_TIME:
		if (!v)
			return bad(err, c->key, "missing");
		if (!json_is_string(v) ||
		    !audit_time_parse(json_string_value(v),
				      AT(r, c, long long)))
			return bad(err, c->key,
				   "not a time as YYYY-MM-DDTHH:MM:SS.ffffffZ");
		return 0;
	case AUDIT_COL_TEXT:
	case AUDIT_COL_ID:
		/* wire_id, the one column added since the spool's first
		 * lines: absent is null (a row of version 1). */
		if (!v && !strcmp(c->key, "wire_id"))
			return 0;
		return get_str(j, c->key, c->type == AUDIT_COL_ID,
			       AT(r, c, char *), err);
	case AUDIT_COL_OP:
		if (!v)
			return bad(err, c->key, "missing");
		op = json_is_string(v) ? audit_op_parse(json_string_value(v))
				       : -1;
		if (op < 0)
			return bad(err, c->key, "not an operation");
		*AT(r, c, enum audit_op) = (enum audit_op)op;
		return 0;
	case AUDIT_COL_BOOL:
		if (!v)
			return bad(err, c->key, "missing");
		if (!json_is_boolean(v))
			return bad(err, c->key, "not true or false");
		*AT(r, c, bool) = json_is_true(v);
		return 0;
	case AUDIT_COL_EXIT:
		if (get_int(j, c->key, true, INT_MIN, INT_MAX, &r->has_exit, &n,
			    err) < 0)
			return -1;
		*AT(r, c, int) = r->has_exit ? (int)n : 0;
		return 0;
	case AUDIT_COL_COUNT:
	case AUDIT_COL_MS:
		if (get_int(j, c->key, c->type == AUDIT_COL_COUNT, 0, LLONG_MAX,
			    &set, &n, err) < 0)
			return -1;
		*AT(r, c, long long) = set ? n : AUDIT_NONE;
		return 0;
	}
	die_bug("audit column '%s' of type %d", c->key, (int)c->type);
}

/* ---- a terminal ---- */

/* 2026-12-01T10:00:00.123456Z -> 2026-12-01 10:00:00; a time with an
 * offset keeps it (--local's: 2026-12-01 11:00:00+01:00). */
static void cell_time(const struct audit_column *c, json_t *row,
		      struct strbuf *out)
{
	const char *ts = json_string_value(json_object_get(row, c->key));
	size_t at = out->len;

	strbuf_add(out, ts ? ts : "", ts && strlen(ts) >= 19 ? 19 : 0);
	if (out->len > at + 10)
		out->buf[at + 10] = ' ';
	if (out->len == at + 19) {
		const char *z = ts + 19;

		if (*z == '.')
			z += 1 + strspn(z + 1, "0123456789");
		if (*z && strcmp(z, "Z"))
			strbuf_addstr(out, z);
	}
}

/* s[0..len) as stored (clean: a backslash is already \\), but what a
 * terminal would act on escaped, should a row hold it (a database
 * written by something else). */
static void add_shown(struct strbuf *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_decode(s + i, len - i, &cp);

		if (n == 0 || text_is_control(cp) || text_is_bidi(cp))
			text_add_escaped(out, s + i, n ? n : 1);
		else
			strbuf_add(out, s + i, n);
		i += n ? n : 1;
	}
}

static void cell_text(const struct audit_column *c, json_t *row,
		      struct strbuf *out)
{
	const char *s = json_string_value(json_object_get(row, c->key));

	add_shown(out, s ? s : "", s ? strlen(s) : 0);
}

/* "ok" or "failed". */
static void cell_ok(const struct audit_column *c, json_t *row,
		    struct strbuf *out)
{
	strbuf_addstr(
	    out, json_is_true(json_object_get(row, c->key)) ? "ok" : "failed");
}

/* Whether s starts with pre. */
static bool starts(const char *s, const char *pre)
{
	return !strncmp(s, pre, strlen(pre));
}

/*
 * How the operation ended, in a few words: the detail up to its first
 * "; " (what follows names the key asked for, or more), without the
 * count of processes a stop killed; a command stopped at its deadline
 * "timeout"; with no detail, "ok", the command's "exit N", or "failed".
 */
static void brief_detail(const struct audit_column *c, json_t *row,
			 struct strbuf *out)
{
	const char *d = json_string_value(json_object_get(row, c->key));
	json_t *ex = json_object_get(row, "exit_status");
	const char *end;
	size_t n;

	if (d && (starts(d, "timed out") || starts(d, "timeout"))) {
		strbuf_addstr(out, "timeout");
		return;
	}
	if (!d || !*d) {
		if (json_is_true(json_object_get(row, "ok")))
			strbuf_addstr(out, "ok");
		else if (json_is_integer(ex))
			strbuf_addf(out, "exit %lld",
				    (long long)json_integer_value(ex));
		else
			strbuf_addstr(out, "failed");
		return;
	}
	n = strlen(d);
	end = strstr(d, "; ");
	if (end)
		n = (size_t)(end - d);
	end = strstr(d, ", killed ");
	if (end && (size_t)(end - d) < n)
		n = (size_t)(end - d);
	add_shown(out, d, n);
}

/* The number, or "-" when not counted. */
static void cell_number(const struct audit_column *c, json_t *row,
			struct strbuf *out)
{
	json_t *v = json_object_get(row, c->key);

	if (json_is_integer(v))
		strbuf_addf(out, "%lld", (long long)json_integer_value(v));
	else
		strbuf_addstr(out, "-");
}

void audit_column_cell(const struct audit_column *c, json_t *row, bool brief,
		       struct strbuf *out)
{
	if (brief && c->brief)
		c->brief(c, row, out);
	else if (c->cell)
		c->cell(c, row, out);
}

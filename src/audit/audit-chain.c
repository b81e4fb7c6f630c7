/*
 * audit-chain.c - the canonical encodings of an audit row, by version, and
 * the hash that links it to the row before it in its session's chain
 * (audit.h, docs/audit.md "The chain").  A new version is a new function
 * and a new case: an old one is never edited, or the rows hashed with it
 * stop verifying.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "basic/alloc.h"
#include "audit/audit.h"
#include "basic/hash.h"

/* "\n" then "-" for NULL, else LEN:VALUE. */
static void add_field(struct strbuf *out, const char *s)
{
	if (!s) {
		strbuf_add(out, "\n-", 2);
		return;
	}
	size_t len = strlen(s);
	strbuf_addf(out, "\n%zu:", len);
	strbuf_add(out, s, len);
}

static void add_number(struct strbuf *out, bool null, long long v)
{
	char buf[32];

	if (null) {
		add_field(out, NULL);
		return;
	}
	snprintf(buf, sizeof(buf), "%lld", v);
	add_field(out, buf);
}

/* Version 1 (audit.h): the fields of struct audit_row as 0.1.0 had
 * them.  Never changed: a row hashed with it must verify for ever. */
static void canonical_1(struct strbuf *out, const struct audit_row *r)
{
	const char *op = audit_op_name(r->op);

	strbuf_addstr(out, "sbxcat-audit-1");
	add_field(out, r->id);
	add_number(out, false, r->created_us);
	add_field(out, r->tenant);
	add_field(out, r->session_key);
	add_field(out, r->runtime);
	add_field(out, r->agent);
	add_field(out, r->run);
	add_field(out, op ? op : "");
	add_field(out, r->target);
	add_field(out, r->ok ? "t" : "f");
	add_number(out, !r->has_exit, r->exit_status);
	add_number(out, r->bytes == AUDIT_NONE, r->bytes);
	add_number(out, r->results == AUDIT_NONE, r->results);
	add_number(out, false, r->duration_ms);
	add_field(out, r->detail);
}

/* Version 2 (audit.h): version 1's fields under its own tag, then the
 * wire id.  Never changed. */
static void canonical_2(struct strbuf *out, const struct audit_row *r)
{
	struct strbuf v1 = STRBUF_INIT;

	canonical_1(&v1, r);
	strbuf_addstr(out, "sbxcat-audit-2");
	strbuf_add(out, v1.buf + strlen("sbxcat-audit-1"),
		   v1.len - strlen("sbxcat-audit-1"));
	strbuf_release(&v1);
	add_field(out, r->wire_id);
}

int audit_canonical(struct strbuf *out, const struct audit_row *r, int version)
{
	switch (version) {
	case 1:
		canonical_1(out, r);
		return 0;
	case 2:
		canonical_2(out, r);
		return 0;
	default:
		return -1;
	}
}

int audit_chain_hash(const unsigned char prev[32], const struct audit_row *r,
		     int version, unsigned char out[32])
{
	struct strbuf sb = STRBUF_INIT;
	int rc;

	strbuf_add(&sb, prev, 32);
	rc = audit_canonical(&sb, r, version);
	if (rc == 0)
		sha256(sb.buf, sb.len, out);
	strbuf_release(&sb);
	return rc;
}

/*
 * audit-chain.c - the canonical encoding of an audit row and the hash that
 * links it to the row before it in its session's chain (audit.h,
 * docs/audit.md "The chain").
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

void audit_canonical(struct strbuf *out, const struct audit_row *r)
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

void audit_chain_hash(const unsigned char prev[32], const struct audit_row *r,
		      unsigned char out[32])
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_add(&sb, prev, 32);
	audit_canonical(&sb, r);
	sha256(sb.buf, sb.len, out);
	strbuf_release(&sb);
}

/*
 * audit-chain.c - the canonical encoding of an audit row and the hash that
 * links it to the row before it in its session's chain (audit.h,
 * docs/audit.md "The chain").
 */
#include "config.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "audit.h"

/*
 * TEMPORARY, until the core helper's audit.c is merged (which defines
 * these two; the integrator removes this copy).
 */
static const char *const op_names[AUDIT_NOPS] = {
	"write",   "edit", "read",  "read_bytes", "ls_info", "glob_info",
	"grep_raw", "execute", "open", "close", "reap",
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
/* END TEMPORARY */

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
	unsigned int mdlen = 0;

	strbuf_add(&sb, prev, 32);
	audit_canonical(&sb, r);
	if (!EVP_Digest(sb.buf, sb.len, out, &mdlen, EVP_sha256(), NULL))
		die_oom(); /* only fails on allocation */
	strbuf_release(&sb);
}

/*
 * t-session-host.c - session.c without an engine: keys (format, determinism,
 * each field and the secret counted, no collision among 100,000 subjects,
 * no ambiguity between fields, checked against an independent encoding),
 * the configuration's variables, the size parser, the field checks (and a
 * fuzzer for them), the workspace root's checks (the root and every
 * ancestor), ROOT/KEY and the workspace, records, purge and size of a tree
 * a sandbox could have planted (symlinks out, 10,000 levels, odd names, a
 * mount), and the lock between two processes.
 *
 * Run as root (it chowns and checks root's ownership), as CI does; every
 * tree lives under a mktemp -d directory of its own in /tmp.  T_SESSION_QUICK=1
 * makes the 100,000-key and fuzz loops smaller (for valgrind).
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "basic/env.h"
#include "basic/hash.h"
#include "basic/util.h"
#include "basic/xjson.h"
#include "session/session-budget.h"
#include "session/session.h"
#include "tap.h"

#define OTHER_UID 12345
#define SANDBOX_UID 10001

static char tmpdir[] = "/tmp/t-session.XXXXXX";
static bool quick;



static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;

	va_start(ap, fmt);
	cmd = xvasprintf(fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		bail_out("command failed: %s", cmd);
	free(cmd);
}

static bool msg_has(struct sbx_error *err, const char *want)
{
	bool r = err && err->msg && strstr(err->msg, want);

	if (!r)
		diag("message: %s (wanted '%s')", err ? err->msg : "(none)",
		     want);
	return r;
}

/* ---- keys ---- */

static const struct session_config nosecret;

static void key_of(const struct session_config *c, const char *tenant,
		   const char *scope, const char *subject, const char *host,
		   char key[SESSION_KEY_MAX + 1])
{
	session_key(c, tenant, scope, subject, host, key);
}

/*
 * The key as the header describes it, written apart from session.c: the
 * fields as netstrings of 4-byte lengths, the digest, then base32 taken
 * bit by bit.
 */
static void reference_key(const unsigned char *secret, size_t slen,
			  const char *tenant, const char *scope,
			  const char *subject, const char *host, char *out)
{
	const char *fields[] = {"docker", scope, tenant, host, subject};
	unsigned char buf[4096], md[32];
	unsigned mdlen = 32;
	size_t n = 0, o = 0;
	char org[16] = "";
	size_t on = 0;

	for (int i = 0; i < 5; i++) {
		size_t l = strlen(fields[i]);
		buf[n++] = (unsigned char)(l >> 24);
		buf[n++] = (unsigned char)(l >> 16);
		buf[n++] = (unsigned char)(l >> 8);
		buf[n++] = (unsigned char)l;
		memcpy(buf + n, fields[i], l);
		n += l;
	}
	if (secret)
		HMAC(EVP_sha256(), secret, (int)slen, buf, n, md, &mdlen);
	else
		EVP_Digest(buf, n, md, &mdlen, EVP_sha256(), NULL);
	for (const char *t = tenant; *t; t++) {
		char ch = (char)tolower((unsigned char)*t);
		if (on < 8 &&
		    ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
			org[on++] = ch;
	}
	if (!on)
		org[on++] = 'x';
	o = (size_t)sprintf(out, "xc-%s-%s-", org, scope);
	for (int d = 0; d < 26; d++) {
		unsigned v = 0;
		for (int b = 0; b < 5; b++) {
			int bit = d * 5 + b;
			v = v << 1 | ((md[bit / 8] >> (7 - bit % 8)) & 1);
		}
		out[o++] = "abcdefghijklmnopqrstuvwxyz234567"[v];
	}
	out[o] = '\0';
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_hmac(void)
{
	/* RFC 4231 test cases 1, 2 and 6 (a key longer than a block). */
	unsigned char out[32], k1[20], k6[131];
	char hex[65];

	memset(k1, 0x0b, sizeof(k1));
	memset(k6, 0xaa, sizeof(k6));
	hmac_sha256(k1, 20, "Hi There", 8, out);
	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", out[i]);
	is_str(
	    hex,
	    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
	    "hmac_sha256: RFC 4231 case 1");
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, out);
	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", out[i]);
	is_str(
	    hex,
	    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
	    "hmac_sha256: RFC 4231 case 2");
	hmac_sha256(k6, 131,
		    "Test Using Larger Than Block-Size Key - Hash Key First",
		    54, out);
	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", out[i]);
	is_str(
	    hex,
	    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
	    "hmac_sha256: RFC 4231 case 6");
}

static void test_keys(void)
{
	struct session_config sec = {0}, sec2 = {0};
	char k[SESSION_KEY_MAX + 1], k2[SESSION_KEY_MAX + 1],
	    ref[SESSION_KEY_MAX + 1];
	regex_t re;
	size_t nkeys = quick ? 5000 : 100000;
	char **keys = xcalloc(nkeys, sizeof(*keys));
	size_t dup = 0, badform = 0, badref = 0;
	static const char *const scopes[] = {"run", "conversation", "channel",
					     "user", "agent"};

	sec.secret = (unsigned char *)"s3cret";
	sec.secret_len = 6;
	sec2.secret = (unsigned char *)"s3creT";
	sec2.secret_len = 6;
	if (regcomp(&re,
		    "^xc-[a-z0-9]{1,8}-(run|conversation|channel|user|agent)-"
		    "[a-z2-7]{26}$",
		    REG_EXTENDED | REG_NOSUB))
		bail_out("regcomp");

	for (size_t i = 0; i < 5; i++) {
		key_of(&nosecret, "acme", scopes[i], "thread-1", "", k);
		ok(regexec(&re, k, 0, NULL, 0) == 0 && session_key_valid(k) &&
		       strlen(k) <= SESSION_KEY_MAX,
		   "key of scope %s has the format: %s", scopes[i], k);
	}
	key_of(&nosecret, "acme", "conversation", "thread-1", "h", k);
	reference_key(NULL, 0, "acme", "conversation", "thread-1", "h", ref);
	is_str(k, ref, "key without a secret: SHA-256 as documented");
	key_of(&sec, "acme-corp", "conversation", "thread-1", "h", k);
	reference_key((const unsigned char *)"s3cret", 6, "acme-corp",
		      "conversation", "thread-1", "h", ref);
	is_str(k, ref, "key with a secret: HMAC-SHA256 as documented");
	is_int((long long)strlen(k), 51, "the longest key is 51 characters");

	key_of(&sec, "acme", "run", "s", "h", k);
	key_of(&sec, "acme", "run", "s", "h", k2);
	is_str(k, k2, "the same fields give the same key");
	key_of(&sec, "acme", "run", "s", NULL, k);
	key_of(&sec, "acme", "run", "s", "", k2);
	is_str(k, k2, "no host is the empty host");

	key_of(&sec, "acme", "run", "s", "h", k);
	key_of(&sec, "acme2", "run", "s", "h", k2);
	ok(strcmp(k + 12, k2 + 13) != 0, "the tenant changes the digits");
	key_of(&sec, "acme", "user", "s", "h", k2);
	ok(strcmp(k + 12, k2 + 13) != 0, "the scope changes the digits");
	key_of(&sec, "acme", "run", "t", "h", k2);
	ok(strcmp(k, k2) != 0, "the subject changes the key");
	key_of(&sec, "acme", "run", "s", "h2", k2);
	ok(strcmp(k, k2) != 0, "the host changes the key");
	key_of(&sec2, "acme", "run", "s", "h", k2);
	ok(strcmp(k, k2) != 0, "the secret changes the key");
	key_of(&nosecret, "acme", "run", "s", "h", k2);
	ok(strcmp(k, k2) != 0, "no secret is not the same as a secret");
	/* The tenant differs only where ORG8 drops it: digits still differ. */
	key_of(&sec, "ac.me", "run", "s", "h", k2);
	ok(strncmp(k, k2, 12) == 0 && strcmp(k, k2) != 0,
	   "tenants with one ORG8 get different digits");

	{
		/* Moving bytes between adjacent fields changes the key. */
		static const char *const amb[][4] = {
		    {"a", "b-c", "", "a-b"},
		    {"a", "bc", "", "ab"},
		    {"ab", "c", "", "a"},
		    {"a", "b", "c", "a"},
		};
		char x[SESSION_KEY_MAX + 1], y[SESSION_KEY_MAX + 1];

		key_of(&nosecret, "a", "run", "b-c", "", x);
		key_of(&nosecret, "a-b", "run", "c", "", y);
		ok(strcmp(x, y) != 0, "tenant a, subject b-c != tenant a-b, "
				      "subject c");
		key_of(&nosecret, "a", "run", "bc", "", x);
		key_of(&nosecret, "a", "run", "c", "b", y);
		ok(strcmp(x, y) != 0, "subject bc != host b, subject c");
		key_of(&nosecret, "a", "run", "b", "c", x);
		key_of(&nosecret, "a", "run", "c", "b", y);
		ok(strcmp(x, y) != 0, "host and subject swapped differ");
		key_of(&nosecret, "ab", "run", "c", "", x);
		key_of(&nosecret, "a", "run", "c", "b", y);
		ok(strcmp(x, y) != 0, "tenant ab != tenant a, host b");
		(void)amb;
	}

	key_of(&nosecret, "ACME Corp", "run", "s", "", k);
	ok(strncmp(k, "xc-acmecorp-run-", 16) == 0, "ORG8 lowercased: %s", k);
	key_of(&nosecret, "Very.Long-Tenant@example.org", "run", "s", "", k);
	ok(strncmp(k, "xc-verylong-run-", 16) == 0, "ORG8 cut to 8: %s", k);
	key_of(&nosecret, "@.-", "run", "s", "", k);
	ok(strncmp(k, "xc-x-run-", 9) == 0, "ORG8 empty is x: %s", k);

	for (size_t i = 0; i < nkeys; i++) {
		char subj[40];

		snprintf(subj, sizeof(subj), "subject-%08x%08x-%zu", tap_rand(),
			 tap_rand(), i);
		key_of(&sec, "acme", "conversation", subj, "", k);
		if (regexec(&re, k, 0, NULL, 0) != 0)
			badform++;
		if (i % 97 == 0) {
			reference_key(sec.secret, sec.secret_len, "acme",
				      "conversation", subj, "", ref);
			badref += strcmp(k, ref) != 0;
		}
		keys[i] = xstrdup(k);
	}
	qsort(keys, nkeys, sizeof(*keys), cmp_str);
	for (size_t i = 1; i < nkeys; i++)
		dup += strcmp(keys[i], keys[i - 1]) == 0;
	is_int((long long)dup, 0, "no two of %zu random subjects collide",
	       nkeys);
	is_int((long long)badform, 0, "all %zu keys have the format", nkeys);
	is_int((long long)badref, 0, "sampled keys match the reference");
	strv_free(keys, nkeys);
	regfree(&re);

	ok(session_key_valid("xc-acme-run-abc") && session_key_valid("a") &&
	       !session_key_valid("") && !session_key_valid("-a") &&
	       !session_key_valid("A") && !session_key_valid(".") &&
	       !session_key_valid("..") && !session_key_valid("a/b") &&
	       !session_key_valid("a_b"),
	   "session_key_valid: the shape [a-z0-9][a-z0-9-]*");
	memset(k, 'a', 65);
	k[64] = '\0';
	ok(session_key_valid(k), "64 characters is a key");
	{
		char k65[66];
		memset(k65, 'a', 65);
		k65[65] = '\0';
		ok(!session_key_valid(k65), "65 characters is not");
	}
}

/* ---- field checks ---- */

static void test_checks(void)
{
	char big[2000];

	ok(!session_check_scope("run") && !session_check_scope("agent") &&
	       !session_check_scope("conversation") &&
	       session_check_scope("Run") && session_check_scope("") &&
	       session_check_scope("runs") && session_check_scope("ru"),
	   "scope: one of the five, exactly");
	ok(!session_check_tenant("acme") && !session_check_tenant("a") &&
	       !session_check_tenant("Acme.Corp_1@x-y") &&
	       !session_check_tenant("9"),
	   "tenant: good ones accepted");
	ok(session_check_tenant("") && session_check_tenant("-acme") &&
	       session_check_tenant(".acme") && session_check_tenant("@acme") &&
	       session_check_tenant("ac me") && session_check_tenant("ac/me") &&
	       session_check_tenant("ac\nme") &&
	       session_check_tenant("caf\xc3\xa9"),
	   "tenant: bad ones refused");
	memset(big, 'a', 129);
	big[128] = '\0';
	ok(!session_check_tenant(big), "tenant: 128 bytes accepted");
	big[128] = 'a';
	big[129] = '\0';
	ok(session_check_tenant(big) != NULL, "tenant: 129 refused");

	ok(!session_check_subject("x") &&
	       !session_check_subject("caf\xc3\xa9 \xf0\x9f\x98\x80 #1") &&
	       !session_check_subject("a b/c:d"),
	   "subject: text accepted");
	ok(session_check_subject("") && session_check_subject("a\nb") &&
	       session_check_subject("a\tb") &&
	       session_check_subject("a\x1b[31m") &&
	       session_check_subject("a\xc2\x9b") &&
	       session_check_subject("a\x7f") &&
	       session_check_subject("\xff") && session_check_subject("\xc3") &&
	       session_check_subject("\xed\xa0\x80"),
	   "subject: empty, controls (C0, DEL, C1) and invalid UTF-8 "
	   "refused");
	memset(big, 'a', 1025);
	big[1024] = '\0';
	ok(!session_check_subject(big), "subject: 1024 bytes accepted");
	big[1024] = 'a';
	big[1025] = '\0';
	ok(session_check_subject(big) != NULL, "subject: 1025 refused");

	ok(!session_check_host("") && !session_check_host("web-1.example.org"),
	   "host: empty and names accepted");
	ok(session_check_host("a b") && session_check_host("a_b") &&
	       session_check_host("a/b") && session_check_host("a:1"),
	   "host: other bytes refused");
	memset(big, 'a', 254);
	big[253] = '\0';
	ok(!session_check_host(big), "host: 253 accepted");
	big[253] = 'a';
	big[254] = '\0';
	ok(session_check_host(big) != NULL, "host: 254 refused");
}

/* Independent rules for the fuzzer: bytes, not code points. */
static bool ref_subject(const char *s, size_t n)
{
	if (n < 1 || n > 1024 || utf8_first_invalid(s, n) >= 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];
		if (b < 0x20 || b == 0x7f)
			return false;
		/* U+0080-U+009F is C2 80 - C2 9F. */
		if (b == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f)
			return false;
	}
	return true;
}

static bool ref_tenant(const char *s, size_t n)
{
	if (n < 1 || n > 128 || !isalnum((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._@-", s[i]))
			return false;
	return true;
}

static void test_fuzz(void)
{
	static const char alphabet[] = "aZ09._@-/ \n\t\x1b\x7f\xc2\x9b\xc3"
				       "\xa9\xff\xe2\x80\xae:";
	int rounds = quick ? 3000 : 60000;
	int bad_tenant = 0, bad_subject = 0, bad_key = 0, accepted = 0;

	for (int r = 0; r < rounds; r++) {
		char s[300], k[SESSION_KEY_MAX + 1];
		size_t n = tap_rand() % 140;
		bool ok_t, ok_s;

		for (size_t i = 0; i < n; i++)
			s[i] = alphabet[tap_rand() % (sizeof(alphabet) - 1)];
		s[n] = '\0';
		ok_t = session_check_tenant(s) == NULL;
		if (ok_t != ref_tenant(s, n))
			bad_tenant++;
		ok_s = session_check_subject(s) == NULL;
		if (ok_s != ref_subject(s, n))
			bad_subject++;
		if (ok_t && ok_s) {
			accepted++;
			session_key(&nosecret, s, "user", s, "", k);
			if (!session_key_valid(k) || strncmp(k, "xc-", 3) != 0)
				bad_key++;
		}
	}
	is_int(bad_tenant, 0, "fuzz: tenant check agrees with a reference");
	is_int(bad_subject, 0, "fuzz: subject check agrees with a reference");
	is_int(bad_key, 0, "fuzz: every accepted pair makes a key (%d)",
	       accepted);
}

/* ---- disk budgets' bounds ---- */

static void test_budget_bounds(void)
{
	static const struct {
		unsigned long long bytes, inodes;
		bool good;
	} v[] = {
	    {0, 0, true},
	    {16ull << 20, 0, true},
	    {(16ull << 20) - 1, 0, false},
	    {16ull << 40, 0, true},
	    {(16ull << 40) + 1, 0, false},
	    {1ull << 30, 64, true},
	    {1ull << 30, 63, false},
	    {1ull << 30, 1ull << 31, true},
	    {1ull << 30, (1ull << 31) + 1, false},
	    {~0ull, ~0ull, false},
	};
	int wrong = 0;

	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
		wrong += (session_budget_check(v[i].bytes, v[i].inodes) ==
			  NULL) != v[i].good;
	is_int(wrong, 0,
	       "budget bounds: 16 MiB to 16 TiB, 64 to 2^31 inodes, 0 none");
}

/* ---- configuration ---- */

static const char *const config_vars[] = {
    "SANDBOXD_WORKSPACE_ROOT",	   "SANDBOXD_MAX_SESSIONS_PER_TENANT",
    "SANDBOXD_MAX_SESSIONS",	   "SANDBOXD_MEM_LIMIT",
    "SANDBOXD_EXECUTE_TIMEOUT",	   "SANDBOXD_MAX_OUTPUT_BYTES",
    "SANDBOXD_PERSIST_CONTAINERS", "SBXCAT_SESSION_NETWORK",
    "SBXCAT_DEPLOYMENT_ID",	   "SBXCAT_KEY_SECRET",
    "SBXCAT_KEY_SECRET_FILE",	   "SANDBOXD_WORKSPACE_QUOTA",
    "SANDBOXD_WORKSPACE_INODES",   "SBXCAT_MKFS",
    "SANDBOXD_MAX_READ_BYTES",
};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(config_vars) / sizeof(*config_vars); i++)
		unsetenv(config_vars[i]);
}

/* session_config_load from the environment as it is now. */
static int load_env(struct session_config *c, struct sbx_error **err)
{
	struct sbx_env env;
	int rc;

	sbx_env_capture(&env, environ);
	rc = session_config_load(c, &env, err);
	sbx_env_release(&env);
	return rc;
}

static int load_with(const char *var, const char *val, struct session_config *c,
		     struct sbx_error **err)
{
	clear_env();
	if (var)
		setenv(var, val, 1);
	sbx_error_free(err);
	return load_env(c, err);
}

static void test_config(void)
{
	struct session_config c;
	struct sbx_error *err = NULL;
	static const struct {
		const char *var, *val;
	} bad[] = {
	    {"SANDBOXD_WORKSPACE_ROOT", "relative/path"},
	    {"SANDBOXD_WORKSPACE_ROOT", "/"},
	    {"SANDBOXD_WORKSPACE_ROOT", "///"},
	    {"SANDBOXD_WORKSPACE_ROOT", "/srv/../etc"},
	    {"SANDBOXD_WORKSPACE_ROOT", "/srv/./x"},
	    {"SANDBOXD_WORKSPACE_ROOT", "/srv/a\nb"},
	    {"SANDBOXD_WORKSPACE_ROOT", "/srv/\xff"},
	    {"SANDBOXD_MAX_SESSIONS_PER_TENANT", "0"},
	    {"SANDBOXD_MAX_SESSIONS_PER_TENANT", "-1"},
	    {"SANDBOXD_MAX_SESSIONS_PER_TENANT", "ten"},
	    {"SANDBOXD_MAX_SESSIONS_PER_TENANT", "10 "},
	    {"SANDBOXD_MAX_SESSIONS_PER_TENANT", "+5"},
	    {"SANDBOXD_MAX_SESSIONS_PER_TENANT", "99999999999999999999999"},
	    {"SANDBOXD_MAX_SESSIONS", "0"},
	    {"SANDBOXD_MAX_SESSIONS", "1e3"},
	    {"SANDBOXD_MAX_SESSIONS", "100001"},
	    {"SANDBOXD_MEM_LIMIT", "1x"},
	    {"SANDBOXD_MEM_LIMIT", "1m"},
	    {"SANDBOXD_MEM_LIMIT", "0"},
	    {"SANDBOXD_MEM_LIMIT", "-1g"},
	    {"SANDBOXD_MEM_LIMIT", "1 g"},
	    {"SANDBOXD_EXECUTE_TIMEOUT", "0"},
	    {"SANDBOXD_EXECUTE_TIMEOUT", "1.5"},
	    {"SANDBOXD_EXECUTE_TIMEOUT", "300s"},
	    {"SANDBOXD_EXECUTE_TIMEOUT", "604801"},
	    {"SANDBOXD_MAX_OUTPUT_BYTES", "0"},
	    {"SANDBOXD_MAX_OUTPUT_BYTES", "lots"},
	    {"SANDBOXD_PERSIST_CONTAINERS", "maybe"},
	    {"SANDBOXD_PERSIST_CONTAINERS", "2"},
	    {"SBXCAT_SESSION_NETWORK", "host"},
	    {"SBXCAT_SESSION_NETWORK", "container:abc"},
	    {"SBXCAT_SESSION_NETWORK", "-net"},
	    {"SBXCAT_SESSION_NETWORK", "a b"},
	    {"SBXCAT_DEPLOYMENT_ID", "Prod"},
	    {"SBXCAT_DEPLOYMENT_ID", "a b"},
	    {"SBXCAT_KEY_SECRET", ""},
	    {"SBXCAT_KEY_SECRET_FILE", ""},
	    {"SANDBOXD_WORKSPACE_QUOTA", "1m"},
	    {"SANDBOXD_WORKSPACE_QUOTA", "17t"},
	    {"SANDBOXD_WORKSPACE_QUOTA", "16385g"},
	    {"SANDBOXD_WORKSPACE_QUOTA", "16t"},
	    {"SANDBOXD_MEM_LIMIT", "1k"},
	    {"SANDBOXD_MEM_LIMIT", "1.5g"},
	    {"SANDBOXD_MEM_LIMIT", "1t"},
	    {"SANDBOXD_MAX_READ_BYTES", "1.5m"},
	    {"SANDBOXD_WORKSPACE_QUOTA", "lots"},
	    {"SANDBOXD_WORKSPACE_INODES", "10"},
	    {"SANDBOXD_WORKSPACE_INODES", "2147483649"},
	    {"SANDBOXD_WORKSPACE_INODES", "1k"},
	    {"SBXCAT_MKFS", "mkfs.ext4"},
	};
	int fails = 0;

	is_int(load_with(NULL, NULL, &c, &err), 0, "defaults load");
	is_str(c.root, "/srv/sandboxd/workspaces", "default root");
	ok(c.max_per_tenant == 10 && c.max_sessions == 20 &&
	       c.mem_limit == 1ull << 30 && c.execute_timeout_s == 300 &&
	       c.max_output == 10485760 && !c.persist_containers &&
	       !strcmp(c.network, "bridge") &&
	       !strcmp(c.deployment, "default") && !c.secret,
	   "defaults as documented");
	ok(!c.disk_quota && !c.disk_inodes &&
	       !strcmp(c.mkfs, "/sbin/mkfs.ext4"),
	   "no disk budget by default; mkfs.ext4 from /sbin");
	session_config_release(&c);

	load_with("SANDBOXD_WORKSPACE_QUOTA", "10g", &c, &err);
	is_int((long long)c.disk_quota, 10ll << 30, "disk quota 10g");
	session_config_release(&c);
	load_with("SANDBOXD_WORKSPACE_QUOTA", "16384g", &c, &err);
	is_int((long long)c.disk_quota, 16ll << 40, "disk quota at its bound");
	session_config_release(&c);
	load_with("SANDBOXD_WORKSPACE_INODES", "100000", &c, &err);
	is_int((long long)c.disk_inodes, 100000, "disk inodes set");
	session_config_release(&c);
	load_with("SBXCAT_MKFS", "/opt/e2fs/mkfs.ext4", &c, &err);
	is_str(c.mkfs, "/opt/e2fs/mkfs.ext4", "SBXCAT_MKFS set");
	session_config_release(&c);

	load_with("SANDBOXD_WORKSPACE_ROOT", "//srv//ws/", &c, &err);
	is_str(c.root, "/srv/ws", "root: repeated and trailing slashes go");
	session_config_release(&c);
	load_with("SANDBOXD_MAX_SESSIONS_PER_TENANT", "3", &c, &err);
	is_int(c.max_per_tenant, 3, "per-tenant set");
	session_config_release(&c);
	load_with("SANDBOXD_MAX_SESSIONS", "100000", &c, &err);
	is_int(c.max_sessions, 100000, "max sessions at its bound");
	session_config_release(&c);
	load_with("SANDBOXD_MEM_LIMIT", "512m", &c, &err);
	is_int((long long)c.mem_limit, 512ll << 20, "mem limit 512m");
	session_config_release(&c);
	load_with("SANDBOXD_EXECUTE_TIMEOUT", "5", &c, &err);
	is_int(c.execute_timeout_s, 5, "timeout 5");
	session_config_release(&c);
	load_with("SANDBOXD_MAX_OUTPUT_BYTES", "1048576", &c, &err);
	is_int((long long)c.max_output, 1048576, "max output in bytes");
	session_config_release(&c);
	load_with("SANDBOXD_MAX_OUTPUT_BYTES", "2k", &c, &err);
	is_int((long long)c.max_output, 2048, "max output with a unit");
	session_config_release(&c);
	{
		static const char *const yes[] = {"1", "true", "yes", "TRUE"};
		static const char *const no[] = {"0", "false", "no", ""};
		int wrong = 0;
		for (int i = 0; i < 4; i++) {
			wrong += load_with("SANDBOXD_PERSIST_CONTAINERS",
					   yes[i], &c, &err) != 0 ||
				 !c.persist_containers;
			session_config_release(&c);
			wrong += load_with("SANDBOXD_PERSIST_CONTAINERS", no[i],
					   &c, &err) != 0 ||
				 c.persist_containers;
			session_config_release(&c);
		}
		is_int(wrong, 0, "persist: 1/true/yes and 0/false/no/empty");
	}
	load_with("SBXCAT_SESSION_NETWORK", "sbx_net.1-a", &c, &err);
	is_str(c.network, "sbx_net.1-a", "network name");
	session_config_release(&c);
	load_with("SBXCAT_DEPLOYMENT_ID", "prod-2", &c, &err);
	is_str(c.deployment, "prod-2", "deployment id");
	session_config_release(&c);

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		int rc = load_with(bad[i].var, bad[i].val, &c, &err);

		if (rc == 0 || !err || tap_status(err) != 2 ||
		    !strstr(err->msg, bad[i].var) || strchr(err->msg, '\n') ||
		    strchr(err->msg, '\x1b')) {
			fails++;
			diag("%s='%s': rc %d, %s", bad[i].var, bad[i].val, rc,
			     err ? err->msg : "no error");
		}
		if (rc == 0)
			session_config_release(&c);
	}
	is_int(fails, 0, "%zu bad values: status 2 naming the variable",
	       sizeof(bad) / sizeof(*bad));
	load_with("SBXCAT_SESSION_NETWORK", "a\x1b[31mb\n", &c, &err);
	ok(msg_has(err, "a\\x1b[31mb\\n"), "the value is shown escaped");
	load_with("SANDBOXD_MEM_LIMIT", "1\x1bg", &c, &err);
	ok(err && tap_status(err) == 2 && msg_has(err, "SANDBOXD_MEM_LIMIT") &&
	       msg_has(err, "1\\x1bg"),
	   "a bad size names the variable, escaped");
	clear_env();
	setenv("SBXCAT_KEY_SECRET", "a", 1);
	setenv("SBXCAT_KEY_SECRET_FILE", "/nonexistent", 1);
	sbx_error_free(&err);
	ok(load_env(&c, &err) < 0 && tap_status(err) == 2,
	   "both secret variables: refused");
	clear_env();
	sbx_error_free(&err);
}

/* ---- the secret ---- */

static void test_secret(void)
{
	struct session_config c, f;
	struct sbx_error *err = NULL;
	char k1[SESSION_KEY_MAX + 1], k2[SESSION_KEY_MAX + 1];
	char *file = tap_path(tmpdir, "secret"), *link = tap_path(tmpdir, "secret-link");
	char *dir = tap_path(tmpdir, "secret-dir"), *fifo = tap_path(tmpdir, "secret-fifo");
	int rc;

	is_int(load_with("SBXCAT_KEY_SECRET", "Hunter2-TopSecret", &c, &err), 0,
	       "secret from the environment");
	ok(c.secret_len == 17 && !memcmp(c.secret, "Hunter2-TopSecret", 17),
	   "its bytes");
	sh("printf 'Hunter2-TopSecret\\nsecond line\\n' > %s; chmod 600 %s",
	   file, file);
	is_int(load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err), 0,
	       "secret from a file");
	ok(f.secret_len == 17 && !memcmp(f.secret, "Hunter2-TopSecret", 17),
	   "the file's first line is the secret");
	session_key(&c, "t", "run", "s", "", k1);
	session_key(&f, "t", "run", "s", "", k2);
	is_str(k2, k1, "the same secret either way: the same key");
	session_config_release(&f);
	session_config_release(&c);

	sh("printf 'Hunter2-TopSecret\\r\\n' > %s", file);
	load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err);
	ok(f.secret_len == 17, "a CRLF line ending is not the secret's");
	session_config_release(&f);
	sh("printf 'Hunter2-TopSecret' > %s", file);
	load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err);
	ok(f.secret_len == 17, "no final newline");
	session_config_release(&f);

	sh("printf 'Hunter2-TopSecret\\n' > %s; chmod 640 %s", file, file);
	rc = load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "group or others") &&
	       !strstr(err->msg, "Hunter2"),
	   "group-readable secret file: refused, the secret not shown");
	sh("chmod 604 %s", file);
	rc = load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "0604"),
	   "other-readable secret file: refused");
	sh("chmod 600 %s; ln -sf %s %s", file, file, link);
	rc = load_with("SBXCAT_KEY_SECRET_FILE", link, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "symlink"),
	   "secret file that is a symlink: refused");
	sh("mkdir -m 700 %s; mkfifo -m 600 %s", dir, fifo);
	rc = load_with("SBXCAT_KEY_SECRET_FILE", dir, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "not a regular file"),
	   "secret file that is a directory: refused");
	rc = load_with("SBXCAT_KEY_SECRET_FILE", fifo, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "not a regular file"),
	   "secret file that is a FIFO: refused, without blocking");
	sh(": > %s", file);
	rc = load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "empty"),
	   "empty secret file: refused");
	sh("printf '\\nHunter2\\n' > %s", file);
	rc = load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "empty") &&
	       !strstr(err->msg, "Hunter2"),
	   "secret file with an empty first line: refused");
	sh("printf 'Hunter2\\n' > %s; chown %d %s", file, OTHER_UID, file);
	rc = load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "owned by uid 12345"),
	   "secret file of another user: refused");
	sh("head -c 5000 /dev/zero | tr '\\0' a > %s; chown 0 %s", file, file);
	rc = load_with("SBXCAT_KEY_SECRET_FILE", file, &f, &err);
	ok(rc < 0 && tap_status(err) == 3 && !strstr(err->msg, "aaaa"),
	   "secret file over 4 KiB: refused");
	rc = load_with("SBXCAT_KEY_SECRET_FILE", "/nonexistent/secret", &f,
		       &err);
	ok(rc < 0 && tap_status(err) == 3, "missing secret file: status 3");
	clear_env();
	sbx_error_free(&err);
	free(file);
	free(link);
	free(dir);
	free(fifo);
}

/* ---- the root ---- */

static int open_root(const char *path, struct session_root *r,
		     struct sbx_error **err)
{
	sbx_error_free(err);
	return session_root_open(r, path, err);
}

static void test_root(void)
{
	struct session_root r;
	struct sbx_error *err = NULL;
	char *p = tap_path(tmpdir, "a/b/root");
	struct stat st;
	int rc;

	is_int(open_root(p, &r, &err), 0, "a missing root is made");
	ok(stat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
	       (st.st_mode & 07777) == 0755 && st.st_uid == 0,
	   "made root's, 0755");
	ok(r.fd >= 0 && r.lock_fd == -1 && !strcmp(r.path, p),
	   "the root is held");
	session_root_close(&r);
	is_int(open_root(p, &r, &err), 0, "and opens again");
	session_root_close(&r);
	free(p);

	sh("mkdir -p %s/real && ln -s real %s/link", tmpdir, tmpdir);
	p = tap_path(tmpdir, "link");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "symlink"),
	   "a root that is a symlink: refused");
	free(p);
	p = tap_path(tmpdir, "link/");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && msg_has(err, "symlink"), "even with a trailing slash");
	free(p);

	sh("touch %s/file", tmpdir);
	p = tap_path(tmpdir, "file");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "not a directory"),
	   "a root that is a file: refused");
	free(p);

	sh("mkdir -p %s/other && chown %d %s/other", tmpdir, OTHER_UID, tmpdir);
	p = tap_path(tmpdir, "other");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "owned by uid 12345"),
	   "a root of another uid: refused");
	free(p);

	sh("mkdir -p %s/m777 %s/m775 %s/m1777 && chmod 777 %s/m777 && "
	   "chmod 775 %s/m775 && chmod 1777 %s/m1777",
	   tmpdir, tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
	p = tap_path(tmpdir, "m777");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && msg_has(err, "writable by group or others (mode 0777)"),
	   "a root of mode 0777: refused");
	free(p);
	p = tap_path(tmpdir, "m775");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && msg_has(err, "mode 0775"), "a root of mode 0775: refused");
	free(p);
	p = tap_path(tmpdir, "m1777");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && msg_has(err, "mode 1777"),
	   "a sticky root writable by others: refused all the same");
	free(p);

	/* Ancestors. */
	p = tap_path(tmpdir, "m777/root");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && msg_has(err, "ancestor") && msg_has(err, "/m777'") &&
	       msg_has(err, "not sticky"),
	   "an ancestor writable by others: refused, named");
	ok(access(p, F_OK) != 0, "and nothing made below it");
	free(p);
	p = tap_path(tmpdir, "m1777/root");
	is_int(open_root(p, &r, &err), 0,
	       "a sticky ancestor writable by others (as /tmp): accepted");
	session_root_close(&r);
	free(p);
	p = tap_path(tmpdir, "other/root");
	sh("mkdir -p %s/other/root", tmpdir);
	rc = open_root(p, &r, &err);
	ok(rc < 0 && msg_has(err, "ancestor") && msg_has(err, "/other'") &&
	       msg_has(err, "uid 12345"),
	   "an ancestor of another uid: refused, named");
	free(p);
	/* A symlink on the way is followed and what it leads to checked. */
	sh("mkdir -p %s/safe && ln -s safe %s/to-safe && ln -s m777 "
	   "%s/to-unsafe && ln -s %s/m1777 %s/to-sticky-abs",
	   tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
	p = tap_path(tmpdir, "to-safe/root");
	is_int(open_root(p, &r, &err), 0,
	       "a symlink ancestor into a safe directory: accepted");
	ok(access(tmpdir, F_OK) == 0 && stat(p, &st) == 0 &&
	       S_ISDIR(st.st_mode),
	   "the root made where the link leads");
	session_root_close(&r);
	free(p);
	p = tap_path(tmpdir, "to-unsafe/root");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && msg_has(err, "/m777'"),
	   "a symlink ancestor into an unsafe directory: refused, named");
	free(p);
	/* A symlink of another user in a sticky directory: its owner can
	 * point it elsewhere whenever it likes. */
	sh("ln -s %s/safe %s/m1777/users-link && chown -h 12345 "
	   "%s/m1777/users-link",
	   tmpdir, tmpdir, tmpdir);
	p = tap_path(tmpdir, "m1777/users-link/root3");
	rc = open_root(p, &r, &err);
	ok(rc < 0 && msg_has(err, "owned by uid 12345") &&
	       msg_has(err, "'users-link'"),
	   "a symlink of another uid on the way: refused, named");
	if (rc == 0)
		session_root_close(&r);
	free(p);
	p = tap_path(tmpdir, "to-sticky-abs/x/../root2");
	rc = open_root(p, &r, &err);
	ok(rc == 0, "an absolute symlink and '..' on the way");
	if (rc == 0)
		session_root_close(&r);
	free(p);
	rc = open_root("relative/root", &r, &err);
	ok(rc < 0 && tap_status(err) == 3, "a relative root: refused");
	rc = open_root("/tmp/a\x1b[2Jb", &r, &err);
	ok(rc < 0 && !strchr(err->msg, '\x1b'),
	   "a root with a control character: refused, escaped");
	sbx_error_free(&err);
}

/* ---- ROOT/KEY, workspace, records ---- */

static struct session_root root;

/* A record of key alone: its workspace KEY/workspace (one at a time). */
static const struct session_record *rec_of(const char *key)
{
	static struct session_record r;

	memset(&r, 0, sizeof(r));
	snprintf(r.key, sizeof(r.key), "%s", key);
	return &r;
}

static void test_workspace(void)
{
	struct sbx_error *err = NULL;
	char *rp = tap_path(tmpdir, "ws-root");
	const char *key = "xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa";
	bool created = false;
	struct stat st;
	char *p, *ws;
	int rc;

	if (open_root(rp, &root, &err) < 0)
		bail_out("root: %s", err->msg);
	ws = session_workspace_path(&root, rec_of(key));
	p = xasprintf("%s/%s/workspace", rp, key);
	is_str(ws, p, "session_workspace_path");
	free(p);

	is_int(session_workspace_make(&root, key, SANDBOX_UID, &created, &err),
	       0, "workspace_make: fresh");
	ok(created, "it says it made the workspace");
	p = xasprintf("%s/%s", rp, key);
	ok(lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
	       (st.st_mode & 07777) == 0700,
	   "ROOT/KEY is root's, 0700");
	ok(lstat(ws, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == SANDBOX_UID && st.st_gid == SANDBOX_UID &&
	       (st.st_mode & 07777) == 0755,
	   "the workspace is the sandbox uid's, 0755");
	is_int(session_workspace_make(&root, key, SANDBOX_UID, &created, &err),
	       0, "workspace_make again");
	ok(!created, "idempotent: nothing made");
	sh("chown -R 20000:20000 %s && touch %s/f && chown 20000 %s/f", ws, ws,
	   ws);
	session_workspace_make(&root, key, SANDBOX_UID, &created, &err);
	ok(lstat(ws, &st) == 0 && st.st_uid == 20000,
	   "an existing workspace is not chowned again");
	{
		DIR *d = opendir(p);
		struct dirent *de;
		int extra = 0;
		while (d && (de = readdir(d)))
			extra += strncmp(de->d_name, "workspace.", 10) == 0;
		if (d)
			closedir(d);
		is_int(extra, 0, "no temporary directory left");
	}
	free(p);

	/* Planted ROOT/KEY. */
	{
		const char *k2 = "xc-acme-run-bbbbbbbbbbbbbbbbbbbbbbbbbb";
		char *elsewhere = tap_path(tmpdir, "elsewhere");
		char *kp = xasprintf("%s/%s", rp, k2);
		char *wsx = xasprintf("%s/workspace", elsewhere);

		sh("mkdir -p %s && ln -s %s %s", elsewhere, elsewhere, kp);
		sbx_error_free(&err);
		rc = session_workspace_make(&root, k2, SANDBOX_UID, &created,
					    &err);
		ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "symlink"),
		   "ROOT/KEY planted as a symlink: refused");
		ok(access(wsx, F_OK) != 0, "nothing made where it points");
		sh("rm %s && mkdir -m 755 %s", kp, kp);
		rc = session_workspace_make(&root, k2, SANDBOX_UID, &created,
					    &err);
		ok(rc < 0 && msg_has(err, "mode 0755"),
		   "ROOT/KEY open to others: refused, not fixed");
		ok(stat(kp, &st) == 0 && (st.st_mode & 07777) == 0755,
		   "its mode left alone");
		sh("chmod 700 %s && chown %d %s", kp, OTHER_UID, kp);
		rc = session_workspace_make(&root, k2, SANDBOX_UID, &created,
					    &err);
		ok(rc < 0 && msg_has(err, "uid 12345"),
		   "ROOT/KEY of another uid: refused");
		sh("chown 0 %s && ln -s %s %s/workspace", kp, elsewhere, kp);
		rc = session_workspace_make(&root, k2, SANDBOX_UID, &created,
					    &err);
		ok(rc < 0 && msg_has(err, "not a directory"),
		   "workspace planted as a symlink: refused");
		ok(lstat(elsewhere, &st) == 0 && st.st_uid == 0,
		   "its target not chowned");
		sh("rm %s/workspace && touch %s/workspace", kp, kp);
		rc = session_workspace_make(&root, k2, SANDBOX_UID, &created,
					    &err);
		ok(rc < 0 && msg_has(err, "not a directory"),
		   "workspace that is a file: refused");
		sh("rm -rf %s", kp);
		rc = session_workspace_make(&root, "../escape", SANDBOX_UID,
					    &created, &err);
		ok(rc < 0 && tap_status(err) == 2,
		   "a key that would resolve outside: refused");
		free(elsewhere);
		free(kp);
		free(wsx);
	}
	free(ws);
	free(rp);
	sbx_error_free(&err);
}

/* A record of version 3 but for its labels and durability. */
#define V3_HEAD                                                                \
	"{\"version\":3,\"key\":\"xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa\","   \
	"\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":\"python\","        \
	"\"image\":\"x:1\",\"container\":null,\"created\":1,"                  \
	"\"last_activity\":1,\"workspace\":\"xc-acme-run-"                     \
	"aaaaaaaaaaaaaaaaaaaaaaaaaa/workspace\","

static void test_records(void)
{
	struct sbx_error *err = NULL;
	const char *key = "xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa";
	struct session_record rec = {0}, back;
	char *file = xasprintf("%s/%s/session.json", root.path, key);
	struct stat st;
	time_t now;
	int rc;

	strcpy(rec.key, key);
	rec.tenant = xstrdup("acme");
	rec.scope = xstrdup("run");
	rec.runtime = xstrdup("python");
	rec.image = xstrdup("sbxcat/python:0123456789ab");
	rec.container = NULL;
	rec.created = 1700000000;
	rec.last_activity = 1700000001;
	is_int(session_record_write(&root, &rec, &err), 0, "record written");
	ok(lstat(file, &st) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_mode & 07777) == 0600 && st.st_uid == 0,
	   "record is root's, 0600");
	is_int(session_record_read(&root, key, &back, &err), 0, "record read");
	ok(!strcmp(back.key, key) && !strcmp(back.tenant, "acme") &&
	       !strcmp(back.scope, "run") && !strcmp(back.runtime, "python") &&
	       !strcmp(back.image, rec.image) && back.container == NULL &&
	       back.created == 1700000000 && back.last_activity == 1700000001,
	   "round trip, no container");
	session_record_release(&back);
	rec.container = xstrdup("0123456789abcdef0123456789abcdef0123456789a"
				"bcdef0123456789abcdef");
	session_record_write(&root, &rec, &err);
	session_record_read(&root, key, &back, &err);
	is_str(back.container, rec.container, "round trip, a container");
	session_record_release(&back);

	{
		struct session_record l = rec;

		/* Labels and durability are written and read back exactly:
		 * unicode, an empty value, order by key. */
		session_labels_init(&l.labels);
		session_labels_add(
		    &l.labels, "team", "caf\xc3\xa9 \xf0\x9f\x90\x88",
		    strlen("caf\xc3\xa9 \xf0\x9f\x90\x88"), &err);
		session_labels_add(&l.labels, "a/b", "", 0, &err);
		l.durability = SESSION_EPHEMERAL;
		is_int(session_record_write(&root, &l, &err), 0,
		       "a record with labels written");
		is_int(session_record_read(&root, key, &back, &err), 0,
		       "and read");
		ok(session_labels_equal(&back.labels, &l.labels) &&
		       back.durability == SESSION_EPHEMERAL,
		   "labels and durability round trip");
		session_record_release(&back);
		session_labels_release(&l.labels);
		l.durability = SESSION_PERSISTENT;
		session_record_write(&root, &l, &err);
	}

	now = time(NULL);
	is_int(session_record_touch(&root, key, &err), 0, "touch");
	session_record_read(&root, key, &back, &err);
	ok(back.last_activity >= now && back.last_activity <= now + 5 &&
	       back.created == 1700000000 && back.container,
	   "touch sets last activity, keeps the rest");
	session_record_release(&back);

	{
		struct session_record bad = rec;
		bad.tenant = (char *)"-bad";
		rc = session_record_write(&root, &bad, &err);
		ok(rc < 0 && tap_status(err) == 2,
		   "a record with a bad tenant is not written");
		bad = rec;
		bad.container = (char *)"../../etc";
		rc = session_record_write(&root, &bad, &err);
		ok(rc < 0, "a record with a bad container id is not written");
	}

	{
		static const struct {
			const char *what, *text;
		} bad[] = {
		    {"corrupt", "{\"version\":1,\"key\":"},
		    {"not an object", "[1]"},
		    {"version 2 without its workspace",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1}"},
		    {"wrong version",
		     "{\"version\":3,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":"
		     "\".sbxcat-ws/aaaaaaaaaaaaaaaaaaaaaaaaaa\"}"},
		    {"version 1 with a workspace",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":"
		     "\"xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa/workspace\"}"},
		    {"a workspace out of the root",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":\"../../"
		     "etc\"}"},
		    {"an absolute workspace",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":\"/"
		     "etc\"}"},
		    {"another key's workspace",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":\"xc-"
		     "acme-run-bbbbbbbbbbbbbbbbbbbbbbbbbb/workspace\"}"},
		    {"a pool id too short",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":\"."
		     "sbxcat-ws/aaaa\"}"},
		    {"a pool id with a slash",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":\"."
		     "sbxcat-ws/aaaaaaaaaaaaa/aaaaaaaaaaaa\"}"},
		    {"a pool id with a dot",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":\"."
		     "sbxcat-ws/aaaaaaaaaaaaaaaaaaaaaaaaa.\"}"},
		    {"the pool directory itself",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":\"."
		     "sbxcat-ws\"}"},
		    {"the key's directory",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":\"xc-"
		     "acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa\"}"},
		    {"a workspace not a string",
		     "{\"version\":2,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"workspace\":1}"},
		    {"key mismatch",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "bbbbbbbbbbbbbbbbbbbbbb"
		     "bbbb\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1}"},
		    {"unknown member",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1,\"evil\":1}"},
		    {"missing member",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1}"},
		    {"duplicate member",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"tenant\":\"evil\",\"scope\":"
		     "\"run\",\"runtime\":\"python\",\"image\":\"x:1\","
		     "\"container\":null,\"created\":1,\"last_activity\":1}"},
		    {"bad scope",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"all\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1}"},
		    {"string time",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":\"1\",\"last_activity\":1}"},
		    {"negative time",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":-1,\"last_activity\":1}"},
		    {"NUL in a string",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\\u0000x\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1}"},
		    {"bad container",
		     "{\"version\":1,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":\"abc\","
		     "\"created\":1,\"last_activity\":1}"},
		    {"version 3 without labels",
		     V3_HEAD "\"durability\":\"persistent\"}"},
		    {"version 3 with sbxcat's own label", V3_HEAD
		     "\"durability\":\"persistent\",\"labels\":{\"io.sbxcat."
		     "tenant\":\"x\"}}"},
		    {"version 3 with a control character in a label",
		     V3_HEAD "\"durability\":\"persistent\",\"labels\":{\"a\":"
			     "\"\\u001b[2J\"}}"},
		    {"version 3 with a number as a label", V3_HEAD
		     "\"durability\":\"persistent\",\"labels\":{\"a\":1}}"},
		    {"version 3 with another durability",
		     V3_HEAD "\"durability\":\"forever\",\"labels\":{}}"},
		    {"version 4",
		     "{\"version\":4,\"key\":\"xc-acme-run-"
		     "aaaaaaaaaaaaaaaaaaaaaa"
		     "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		     "\"python\",\"image\":\"x:1\",\"container\":null,"
		     "\"created\":1,\"last_activity\":1}"},
		};
		int wrong = 0;
		const char *good =
		    "{\"version\":1,\"key\":\"xc-acme-run-"
		    "aaaaaaaaaaaaaaaaaaaaaa"
		    "aaaa\",\"tenant\":\"acme\",\"scope\":\"run\",\"runtime\":"
		    "\"python\",\"image\":\"x:1\",\"container\":null,"
		    "\"created\":1,\"last_activity\":1}";
		FILE *fp = fopen(file, "w");

		fputs(good, fp);
		fclose(fp);
		is_int(session_record_read(&root, key, &back, &err), 0,
		       "a hand-written record reads (the table's base)");
		is_str(back.workspace,
		       "xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa/workspace",
		       "... of version 1: its workspace is KEY/workspace");
		session_record_release(&back);
		fp = fopen(file, "w");
		fputs(V3_HEAD "\"durability\":\"ephemeral\",\"labels\":{\"k\":"
			      "\"caf\\u00e9\"}}",
		      fp);
		fclose(fp);
		is_int(session_record_read(&root, key, &back, &err), 0,
		       "a hand-written record of version 3 reads (its table's "
		       "base)");
		ok(back.labels.n == 1 && !strcmp(back.labels.keys[0], "k") &&
		       !strcmp(back.labels.values[0], "caf\xc3\xa9") &&
		       back.durability == SESSION_EPHEMERAL,
		   "... its labels and durability as written");
		session_record_release(&back);
		fp = fopen(file, "w");
		fputs("{\"version\":2,\"key\":\"xc-acme-run-"
		      "aaaaaaaaaaaaaaaaaaaaaaaaaa\",\"tenant\":\"acme\","
		      "\"scope\":\"run\",\"runtime\":\"python\",\"image\":"
		      "\"x:1\",\"container\":null,\"created\":1,"
		      "\"last_activity\":1,\"workspace\":\".sbxcat-ws/"
		      "abcdefghijklmnopqrstuvwxyz\"}",
		      fp);
		fclose(fp);
		is_int(session_record_read(&root, key, &back, &err), 0,
		       "a record of version 2 naming a pooled workspace reads");
		ok(back.labels.n == 0 && back.durability == SESSION_PERSISTENT,
		   "... with no labels, persistent");
		is_str(back.workspace, ".sbxcat-ws/abcdefghijklmnopqrstuvwxyz",
		       "... its workspace as written");
		ok(session_workspace_pooled(&back), "... pooled");
		{
			char *p = session_workspace_path(&root, &back);
			ok(p && strcmp(
				    p + strlen(p) - 38,
				    "/.sbxcat-ws/abcdefghijklmnopqrstuvwxyz") ==
				    0,
			   "... its path ROOT/.sbxcat-ws/ID (%s)", p);
			free(p);
		}
		sbx_error_free(&err);
		rc = session_workspace_open(&root, &back, &err);
		ok(rc < 0 && tap_status(err) == 3,
		   "... a pooled workspace missing: status 3 (%s)",
		   err ? err->msg : "opened");
		sbx_error_free(&err);
		session_record_release(&back);
		for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
			fp = fopen(file, "w");
			fputs(bad[i].text, fp);
			fclose(fp);
			sbx_error_free(&err);
			rc = session_record_read(&root, key, &back, &err);
			if (rc == 0 || tap_status(err) != 3 ||
			    !strstr(err->msg, file)) {
				wrong++;
				diag("%s: rc %d %s", bad[i].what, rc,
				     err ? err->msg : "");
			}
			if (rc == 0)
				session_record_release(&back);
		}
		is_int(wrong, 0,
		       "%zu bad records refused, status 3, file named",
		       sizeof(bad) / sizeof(*bad));
	}
	sh("head -c 70000 /dev/zero | tr '\\0' ' ' > %s", file);
	rc = session_record_read(&root, key, &back, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "limit"),
	   "a record over 64 KiB: refused");
	sh("rm %s && ln -s /etc/passwd %s", file, file);
	rc = session_record_read(&root, key, &back, &err);
	ok(rc < 0 && tap_status(err) == 3, "a record that is a symlink: refused");
	is_int(session_record_write(&root, &rec, &err), 0,
	       "writing replaces a planted symlink");
	ok(lstat(file, &st) == 0 && S_ISREG(st.st_mode),
	   "with a file; /etc/passwd untouched");
	sh("rm %s", file);
	rc = session_record_read(&root, key, &back, &err);
	ok(rc < 0 && tap_status(err) == 1 && err->errnum == ENOENT,
	   "no record: status 1, ENOENT");
	rc = session_record_read(
	    &root, "xc-none-run-cccccccccccccccccccccccccc", &back, &err);
	ok(rc < 0 && tap_status(err) == 1 && err->errnum == ENOENT &&
	       !strcmp(err->msg,
		       "no session 'xc-none-run-cccccccccccccccccccccccccc'"),
	   "no directory: \"no session 'KEY'\"");
	rc = session_record_read(&root, "../../etc", &back, &err);
	ok(rc < 0 && tap_status(err) == 1, "a key that is no key: no session");
	session_record_write(&root, &rec, &err);
	session_record_release(&rec);
	free(file);
	sbx_error_free(&err);
}

static void test_keys_list(void)
{
	struct sbx_error *err = NULL;
	char **keys = NULL;
	size_t n = 0;
	const char *rp = root.path;

	sh("cd %s && mkdir -m 700 xc-b-run-x xc-a-run-x .hidden UPPER a_b && "
	   "touch xc-file-run-x && ln -s xc-a-run-x xc-link-run-x && "
	   "ln -s /etc xc-etc-run-x",
	   rp);
	is_int(session_keys(&root, &keys, &n, &err), 0, "session_keys");
	ok(n == 3 && !strcmp(keys[0], "xc-a-run-x") &&
	       !strcmp(keys[1], "xc-acme-run-aaaaaaaaaaaaaaaaaaaaaaaaaa") &&
	       !strcmp(keys[2], "xc-b-run-x"),
	   "only directories with key names, sorted (%zu)", n);
	strv_free(keys, n);
	sh("cd %s && rm -rf xc-b-run-x xc-a-run-x .hidden UPPER a_b "
	   "xc-file-run-x xc-link-run-x xc-etc-run-x",
	   rp);
	sbx_error_free(&err);
}

/* ---- purge and size ---- */

/* A chain of depth directories below dirfd, made with *at calls. */
static void deep_chain(int dirfd, int depth)
{
	int fd = dup(dirfd);

	for (int i = 0; i < depth; i++) {
		int sub;
		if (mkdirat(fd, "d", 0755) < 0)
			bail_out("mkdirat at depth %d: %s", i, strerror(errno));
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		close(fd);
		if (sub < 0)
			bail_out("openat at depth %d", i);
		fd = sub;
	}
	close(fd);
}

/* The number a shell command prints (du, find | wc); cmd is freed. */
static unsigned long long count_of(char *cmd)
{
	FILE *p = popen(cmd, "r");
	unsigned long long v = 0;

	if (!p || fscanf(p, "%llu", &v) != 1)
		bail_out("failed: %s", cmd);
	pclose(p);
	free(cmd);
	return v;
}

static unsigned long long du_bytes(const char *path)
{
	return count_of(xasprintf("du -sxB1 '%s'", path));
}

static unsigned long long find_count(const char *path)
{
	return count_of(xasprintf("find '%s' -xdev -mindepth 1 | wc -l", path));
}

static int open_dir(const char *p)
{
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		bail_out("open %s: %s", p, strerror(errno));
	return fd;
}

static void test_size(void)
{
	struct sbx_error *err = NULL;
	const char *key = "xc-size-run-aaaaaaaaaaaaaaaaaaaaaaaaaa";
	unsigned long long bytes = 0, files = 0;
	bool created;
	char *ws = session_workspace_path(&root, rec_of(key));
	bool purged = true;
	int fd;

	session_workspace_make(&root, key, SANDBOX_UID, &created, &err);
	sh("cd %s && head -c 100000 /dev/urandom > big && ln big hard && "
	   "ln -s big soft && ln -s /etc etc && mkdir -p a/b/c && "
	   "head -c 5000 /dev/urandom > a/b/c/f && ln a/b/c/f a/h",
	   ws);
	is_int(session_workspace_size(&root, rec_of(key), &bytes, &files, &err),
	       0, "workspace_size");
	is_int((long long)bytes, (long long)du_bytes(ws),
	       "bytes as du -sx counts them (hard links once, symlinks not "
	       "followed)");
	is_int((long long)files, (long long)find_count(ws),
	       "entries as find counts them");
	ok(bytes < 200000, "the /etc link not followed (%llu)", bytes);

	/* Deep and wide: the walk resumes each listing where it left it. */
	fd = open_dir(ws);
	deep_chain(fd, quick ? 500 : 3000);
	close(fd);
	sh("cd %s && mkdir wide && cd wide && for i in $(seq 1 300); do "
	   "mkdir d$i; echo $i > d$i/f; done",
	   ws);
	is_int(session_workspace_size(&root, rec_of(key), &bytes, &files, &err),
	       0, "workspace_size of a deep and wide tree");
	is_int((long long)bytes, (long long)du_bytes(ws), "bytes as du");
	is_int((long long)files, (long long)find_count(ws), "entries as find");

	/* A mount inside is not crossed. */
	sh("mkdir %s/mnt", ws);
	{
		char *mnt = xasprintf("%s/mnt", ws);
		if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") == 0) {
			unsigned long long before = files;
			sh("head -c 500000 /dev/urandom > %s/x", mnt);
			session_workspace_size(&root, rec_of(key), &bytes,
					       &files, &err);
			is_int((long long)files, (long long)before + 1,
			       "a mount point counted, not entered");
			char *pat =
			    xasprintf("%s/.sbxcat-trash/%s.*/workspace/mnt",
				      root.path, key);
			glob_t g = {0};

			sbx_error_free(&err);
			ok(session_purge(&root, key, &err) < 0 &&
			       msg_has(err, "mount"),
			   "purge stops at a mount point");
			/* ROOT/KEY was moved into the trash first: the mount
			 * went with it, and stays for a later finish. */
			ok(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1 &&
			       access(g.gl_pathv[0], F_OK) == 0,
			   "and the mount is still there, in the trash");
			if (g.gl_pathc == 1)
				umount(g.gl_pathv[0]);
			globfree(&g);
			free(pat);
			purged = false;
		} else {
			skip("mount(2) not permitted here", "size and purge "
							    "at a mount");
			skip("mount(2) not permitted here", "purge at a mount");
			skip("mount(2) not permitted here", "mount kept");
		}
		free(mnt);
	}
	sbx_error_free(&err);
	if (purged) {
		is_int(session_purge(&root, key, &err), 0,
		       "purge after the unmount");
	} else {
		unsigned n = 0;
		char *pat = xasprintf("%s/.sbxcat-trash/*", root.path);
		glob_t g = {0};

		is_int(session_trash_finish(&root, &n, &err), 0,
		       "the trash is finished after the unmount: %s",
		       err ? err->msg : "ok");
		ok(n == 1 && glob(pat, 0, NULL, &g) == GLOB_NOMATCH,
		   "... its one entry removed (%u)", n);
		globfree(&g);
		free(pat);
	}
	free(ws);
}

static void test_purge(void)
{
	struct sbx_error *err = NULL;
	const char *key = "xc-purge-run-aaaaaaaaaaaaaaaaaaaaaaaaaa";
	char *outside = tap_path(tmpdir, "outside");
	char *ws = session_workspace_path(&root, rec_of(key));
	char *kp = xasprintf("%s/%s", root.path, key);
	bool created;
	struct stat st;
	int fd, rc;

	sh("mkdir -p %s/sub && echo keep > %s/file && echo keep > "
	   "%s/sub/file && chmod 700 %s",
	   outside, outside, outside, outside);
	session_workspace_make(&root, key, SANDBOX_UID, &created, &err);
	sh("cd %s && ln -s %s out && ln -s %s/file outfile && "
	   "mkdir -p x/y && ln -s %s x/y/deep-out && ln -s / rootlink && "
	   "ln -s ../../../.. up && ln -s dangling nowhere && "
	   "touch ./-rf 'new\nline' \"$(printf 'bad\\377name')\" ' space' "
	   "'...' '*' && mkfifo pipe && mkdir locked && touch locked/f && "
	   "chmod 000 locked && ln %s/file hardout 2>/dev/null; true",
	   ws, outside, outside, outside, outside);
	fd = open_dir(ws);
	deep_chain(fd, quick ? 2000 : 10000);
	close(fd);

	rc = session_purge(&root, key, &err);
	is_int(rc, 0, "purge of a planted tree: %s", err ? err->msg : "ok");
	ok(lstat(kp, &st) != 0 && errno == ENOENT, "ROOT/KEY is gone");
	{
		char *f1 = xasprintf("%s/file", outside);
		char *f2 = xasprintf("%s/sub/file", outside);
		char buf[16] = "";
		FILE *fp = fopen(f2, "r");
		ok(access(f1, F_OK) == 0 && fp && fgets(buf, sizeof(buf), fp) &&
		       !strcmp(buf, "keep\n"),
		   "what the symlinks pointed to survives untouched");
		ok(stat(outside, &st) == 0 && (st.st_mode & 07777) == 0700,
		   "and keeps its mode");
		if (fp)
			fclose(fp);
		free(f1);
		free(f2);
	}
	ok(access("/etc/passwd", F_OK) == 0, "/etc is still there");
	rc = session_purge(&root, key, &err);
	ok(rc < 0 && tap_status(err) == 1 && err->errnum == ENOENT,
	   "purge of a gone session: no session");
	/* ROOT/KEY planted as a symlink: never followed. */
	sh("ln -s %s %s", outside, kp);
	rc = session_purge(&root, key, &err);
	ok(rc < 0 && tap_status(err) == 3, "purge of a symlink ROOT/KEY: refused");
	ok(access(outside, F_OK) == 0, "its target untouched");
	sh("rm %s", kp);
	free(outside);
	free(ws);
	free(kp);
	sbx_error_free(&err);
}

/* ---- the lock ---- */

static void test_lock(void)
{
	struct sbx_error *err = NULL;
	char *lock = xasprintf("%s/.sbxcat.lock", root.path);
	struct stat st;
	int status;
	pid_t pid;

	is_int(session_lock(&root, &err), 0, "lock taken");
	ok(root.lock_fd >= 0 && lstat(lock, &st) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_mode & 07777) == 0600,
	   "the lock file is a regular file, 0600");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int fd = open(lock, O_RDWR);
		_exit(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0 &&
			      errno == EWOULDBLOCK
			  ? 0
			  : 1);
	}
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "a second process cannot take it while it is held");
	session_unlock(&root);
	ok(root.lock_fd == -1, "unlocked");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int fd = open(lock, O_RDWR);
		_exit(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "after unlock, another process takes it");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* The child holds it; the parent waits in session_lock. */
		int fd = open(lock, O_RDWR);
		flock(fd, LOCK_EX);
		usleep(300000);
		_exit(0);
	}
	usleep(100000);
	{
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		is_int(session_lock(&root, &err), 0, "lock waits for a holder");
		clock_gettime(CLOCK_MONOTONIC, &b);
		ok((b.tv_sec - a.tv_sec) * 1000 +
			   (b.tv_nsec - a.tv_nsec) / 1000000 >=
		       100,
		   "and got it only once the holder let go");
		session_unlock(&root);
	}
	waitpid(pid, &status, 0);
	sh("rm %s && ln -s /etc/shadow-sbxcat-test %s", lock, lock);
	sbx_error_free(&err);
	ok(session_lock(&root, &err) < 0 &&
	       access("/etc/shadow-sbxcat-test", F_OK) != 0,
	   "a lock file planted as a symlink: refused, nothing made");
	sh("rm %s", lock);
	sbx_error_free(&err);
	free(lock);
}

/* ---- the key secret made on first use, and the trash ---- */

/* A root of its own under tmpdir, opened into *r. */
static void fresh_root(struct session_root *r, const char *name)
{
	struct sbx_error *err = NULL;
	char *p = tap_path(tmpdir, "%s", name);

	*r = (struct session_root)SESSION_ROOT_INIT;
	if (session_root_open(r, p, &err) < 0)
		bail_out("root %s: %s", p, err->msg);
	free(p);
}

static void test_made_secret(void)
{
	struct session_root r;
	struct session_config c = {0}, d = {0}, e = {0};
	struct sbx_error *err = NULL;
	char k1[SESSION_KEY_MAX + 1], k2[SESSION_KEY_MAX + 1],
	    k0[SESSION_KEY_MAX + 1];
	char *file;
	struct stat st;
	int pipefd[2], rc;

	fresh_root(&r, "root-secret");
	file = xasprintf("%s/.sbxcat-key-secret", r.path);
	is_int(session_secret_load(&c, &r, &err), 0,
	       "no secret configured: one is made on first use");
	ok(stat(file, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	       (st.st_mode & 07777) == 0600 && st.st_size == 65,
	   "ROOT/.sbxcat-key-secret: root's, 0600, one line of 64 hex");
	ok(c.secret_len == 64, "its line is the secret (%zu bytes)",
	   c.secret_len);
	is_int(session_secret_load(&d, &r, &err), 0, "the second use reads it");
	ok(d.secret_len == c.secret_len &&
	       !memcmp(d.secret, c.secret, c.secret_len),
	   "... and gets the same secret");
	session_key(&c, "t", "run", "s", "", k1);
	session_key(&d, "t", "run", "s", "", k2);
	session_key(&nosecret, "t", "run", "s", "", k0);
	is_str(k2, k1, "the same key from either use");
	ok(strcmp(k1, k0) != 0, "not the plain SHA-256 key anyone can compute");
	/* A secret of the environment wins: nothing read, nothing made. */
	e.secret = (unsigned char *)xstrdup("given");
	e.secret_len = 5;
	is_int(session_secret_load(&e, &r, &err), 0, "a configured secret");
	ok(e.secret_len == 5 && !memcmp(e.secret, "given", 5),
	   "... wins over the made one");
	session_config_release(&e);
	session_config_release(&d);

	sh("chmod 640 %s", file);
	rc = session_secret_load(&d, &r, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "group or others"),
	   "a made secret readable by its group: refused");
	sbx_error_free(&err);
	sh("chmod 600 %s && chown %d %s", file, OTHER_UID, file);
	rc = session_secret_load(&d, &r, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "uid"),
	   "a made secret not root's: refused");
	sbx_error_free(&err);
	sh("rm %s && ln -s /etc/passwd %s", file, file);
	rc = session_secret_load(&d, &r, &err);
	ok(rc < 0 && tap_status(err) == 3 && msg_has(err, "symlink"),
	   "a made secret planted as a symlink: refused");
	sbx_error_free(&err);
	sh("rm %s", file);
	session_root_close(&r);
	free(file);

	/* A temporary left by a first use that crashed (here the name every
	 * first use once made, without its random part) stops no other. */
	fresh_root(&r, "root-stale");
	sh("touch %s/.sbxcat-key-secret. && chmod 600 %s/.sbxcat-key-secret.",
	   r.path, r.path);
	rc = session_secret_load(&d, &r, &err);
	ok(rc == 0 && d.secret_len == 64,
	   "a temporary left behind: the secret is made beside it (%s)",
	   err ? err->msg : "made");
	sbx_error_free(&err);
	session_config_release(&d);
	session_root_close(&r);

	/* Eight first uses at once: one secret, no temporary left behind. */
	fresh_root(&r, "root-race");
	if (pipe(pipefd) < 0)
		bail_out("pipe: %s", strerror(errno));
	for (int i = 0; i < 8; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct session_config x = {0};
			struct sbx_error *xe = NULL;
			char key[SESSION_KEY_MAX + 1];

			if (session_secret_load(&x, &r, &xe) < 0)
				_exit(1);
			session_key(&x, "t", "run", "race", "", key);
			strcat(key, "\n");
			if (write(pipefd[1], key, strlen(key)) < 0)
				_exit(1);
			_exit(0);
		}
	}
	close(pipefd[1]);
	{
		char buf[4096];
		size_t n = 0;
		ssize_t k;
		int fails = 0, status, lines = 0;

		while ((k = read(pipefd[0], buf + n, sizeof(buf) - 1 - n)) > 0)
			n += (size_t)k;
		buf[n] = '\0';
		close(pipefd[0]);
		while (wait(&status) > 0)
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				fails++;
		for (char *l = buf; *l; l = strchr(l, '\n') + 1) {
			lines++;
			if (strncmp(l, buf, strcspn(buf, "\n") + 1))
				fails++;
		}
		ok(fails == 0 && lines == 8,
		   "8 first uses racing: all 8 compute one key (%d lines, %d "
		   "different or failed)",
		   lines, fails);
	}
	{
		char *pat = xasprintf("%s/.sbxcat-key-secret*", r.path);
		glob_t g = {0};

		int grc = glob(pat, 0, NULL, &g);

		ok(grc == 0 && g.gl_pathc == 1,
		   "... from one file, no temporary left (%zu names)",
		   g.gl_pathc);
		globfree(&g);
		free(pat);
	}
	session_root_close(&r);
	session_config_release(&c);
}

/* The names under ROOT/.sbxcat-trash. */
static int trash_count(const struct session_root *r)
{
	char *pat = xasprintf("%s/.sbxcat-trash/*", r->path);
	glob_t g = {0};
	int n = glob(pat, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;

	globfree(&g);
	free(pat);
	return n;
}

static void test_trash(void)
{
	struct session_root r;
	struct session_trash t;
	struct sbx_error *err = NULL;
	const char *key = "xc-trash-run-aaaaaaaaaaaaaaaaaaaaaaaaaa";
	char *kp, *ws, *trash;
	bool created;
	unsigned n = 9;
	struct stat st;

	fresh_root(&r, "root-trash");
	kp = xasprintf("%s/%s", r.path, key);
	trash = xasprintf("%s/.sbxcat-trash", r.path);
	is_int(session_trash_finish(&r, &n, &err), 0,
	       "finishing a trash never made: nothing to do");
	ok(n == 0 && access(trash, F_OK) < 0, "... and nothing made");
	session_workspace_make(&r, key, SANDBOX_UID, &created, &err);
	ws = session_workspace_path(&r, rec_of(key));
	sh("cd %s && mkdir -p a/b && touch a/b/f g && ln -s /etc etc", ws);
	is_int(session_trash_key(&r, key, &t, &err), 0,
	       "ROOT/KEY into the trash");
	ok(access(kp, F_OK) < 0 && errno == ENOENT, "... ROOT/KEY is gone");
	ok(stat(trash, &st) == 0 && st.st_uid == 0 &&
	       (st.st_mode & 07777) == 0700,
	   "... the trash is root's, 0700");
	is_int(trash_count(&r), 1, "... one entry in it");
	is_int(session_trash_finish(&r, &n, &err), 0,
	       "a finish while the purge holds its entry");
	ok(n == 0 && trash_count(&r) == 1, "... leaves that entry to it");
	is_int(session_trash_empty(&r, &t, &err), 0, "the purge empties it");
	ok(trash_count(&r) == 0 && access("/etc/passwd", F_OK) == 0,
	   "... nothing left, nothing followed");
	is_int(session_trash_key(&r, key, &t, &err), -1, "a gone key: refused");
	ok(err && err->errnum == ENOENT, "... as no session");
	sbx_error_free(&err);

	/* What a crash leaves: an entry half emptied, nobody holding it. */
	sh("mkdir -p %s/%s.0123456789abcdef/workspace/x/y && touch "
	   "%s/%s.0123456789abcdef/workspace/x/y/z %s/stray",
	   trash, key, trash, key, trash);
	is_int(session_trash_finish(&r, &n, &err), 0,
	       "finishing what a crash left: %s", err ? err->msg : "ok");
	ok(n == 2 && trash_count(&r) == 0, "... both entries gone (%u)", n);
	/* A trash that is not sbxcat's is refused. */
	sh("chmod 755 %s && mkdir %s/x", trash, trash);
	ok(session_trash_finish(&r, &n, &err) < 0 && tap_status(err) == 3,
	   "a trash open to others: refused");
	free(kp);
	kp = xasprintf("%s/x", trash);
	ok(access(kp, F_OK) == 0, "... and left alone");
	sbx_error_free(&err);
	session_root_close(&r);
	free(kp);
	free(ws);
	free(trash);
}

/* At exit, bail_out's too: the mount (if a check left it), then the tree. */
static void cleanup(void)
{
	char *cmd = xasprintf("grep -q ' %s/' /proc/mounts && umount -l "
			      "$(grep -o ' %s/[^ ]*' /proc/mounts); "
			      "chmod -R u+rwx %s 2>/dev/null; rm -rf %s",
			      tmpdir, tmpdir, tmpdir, tmpdir);

	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", tmpdir);
	free(cmd);
}

int main(void)
{
	quick = getenv("T_SESSION_QUICK") != NULL;
	xjson_init();
	umask(022);
	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root (chown, root-owned roots)\n");
		return 0;
	}
	if (!mkdtemp(tmpdir))
		bail_out("mkdtemp: %s", strerror(errno));
	atexit(cleanup);
	test_hmac();
	test_keys();
	test_checks();
	test_fuzz();
	test_config();
	test_budget_bounds();
	test_secret();
	test_root();
	test_workspace();
	test_records();
	test_keys_list();
	test_size();
	test_purge();
	test_made_secret();
	test_trash();
	test_lock();
	session_root_close(&root);
	return done_testing();
}

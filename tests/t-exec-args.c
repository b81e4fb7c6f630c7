/*
 * t-exec-args.c - the parsers of issue 20's exec arguments, against
 * references written apart here: svc_exec_seconds_parse (fractional
 * deadlines) against a strict reading with strtod checked digit by digit,
 * svc_exec_env_check's rules, session_run_id_valid; each with a small
 * fuzzer, and a check that no refusal ever quotes a value.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session-runs.h"
#include "svc/svc-exec.h"
#include "tap.h"

/* The reference: [0-9]*(.[0-9]*)? with a digit somewhere, > 0 and at
 * most 7 days, in milliseconds rounded up. */
static bool ref_seconds(const char *s, unsigned long long *ms)
{
	size_t i = 0, nd = 0, nf = 0;
	unsigned long long w = 0, f = 0;
	bool rest = false;

	while (s[i] >= '0' && s[i] <= '9') {
		if (nd < 12)
			w = w * 10 + (unsigned long long)(s[i] - '0');
		i++, nd++;
	}
	if (s[i] == '.') {
		i++;
		while (s[i] >= '0' && s[i] <= '9') {
			if (nf < 3)
				f = f * 10 + (unsigned long long)(s[i] - '0');
			else if (s[i] != '0')
				rest = true;
			i++, nf++;
		}
	}
	if (s[i] || (!nd && !nf) || nd > 12)
		return false;
	for (size_t k = nf; k < 3; k++)
		f *= 10;
	*ms = w * 1000 + f + rest;
	return *ms > 0 && *ms <= 7ULL * 86400 * 1000;
}

static void seconds(void)
{
	static const struct {
		const char *s;
		long long ms; /* -1: refused */
	} cases[] = {
	    {"30", 30000},
	    {"0.2", 200},
	    {".5", 500},
	    {"1.25", 1250},
	    {"5.", 5000},
	    {"0.0001", 1},
	    {"0.0010", 1},
	    {"2.0005", 2001},
	    {"604800", 604800000},
	    {"604800.0", 604800000},
	    {"604800.001", -1},
	    {"0", -1},
	    {"0.000", -1},
	    {"", -1},
	    {".", -1},
	    {"-1", -1},
	    {"+1", -1},
	    {"1e3", -1},
	    {"nan", -1},
	    {"inf", -1},
	    {" 1", -1},
	    {"1 ", -1},
	    {"0x10", -1},
	    {"1.2.3", -1},
	    {"1,5", -1},
	    {"99999999999999999999", -1},
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sbx_error *err = NULL;
		unsigned long long ms = 0;
		int rc = svc_exec_seconds_parse(cases[i].s, &ms, &err);

		if (cases[i].ms < 0)
			ok(rc < 0 && err && err->kind == SBX_E_INVALID,
			   "seconds '%s' refused", cases[i].s);
		else
			ok(rc == 0 && ms == (unsigned long long)cases[i].ms,
			   "seconds '%s' is %lld ms (got %llu)", cases[i].s,
			   cases[i].ms, ms);
		sbx_error_free(&err);
	}
	is_str(svc_exec_seconds(buf, 500), "0.5", "500 ms shown as 0.5");
	is_str(svc_exec_seconds(buf, 30000), "30", "30000 ms shown as 30");
	is_str(svc_exec_seconds(buf, 1250), "1.25", "1250 ms shown as 1.25");
	is_str(svc_exec_seconds(buf, 1), "0.001", "1 ms shown as 0.001");

	/* The fuzzer: strings of the characters that matter. */
	{
		static const char alpha[] = "0123456789.+-e x";
		int bad = 0;

		for (int n = 0; n < 20000; n++) {
			char s[20];
			size_t len = tap_rand() % 16;
			unsigned long long a = 0, b = 0;
			struct sbx_error *err = NULL;
			bool want, got;

			for (size_t k = 0; k < len; k++)
				s[k] = alpha[tap_rand() % (sizeof(alpha) - 1)];
			s[len] = '\0';
			want = ref_seconds(s, &a);
			got = svc_exec_seconds_parse(s, &b, &err) == 0;
			sbx_error_free(&err);
			if (want != got || (want && a != b)) {
				if (bad++ < 5)
					diag("'%s': want %d (%llu), got %d "
					     "(%llu)",
					     s, want, a, got, b);
			}
		}
		is_int(bad, 0,
		       "20000 random deadlines read as the reference "
		       "reads them");
	}
}

static int env1(const char *e, struct sbx_error **err)
{
	return svc_exec_env_check(&e, 1, err);
}

static void env(void)
{
	static const char *const good[] = {"A=1", "_=", "a_b9=x=y", "PATH=/bin",
					   "U=\xc3\xa9 x\ny"};
	static const char *const bad[] = {
	    "1A=QZQV",	     "A-B=QZQV",
	    "=QZQV",	     "NOEQ",
	    "A B=QZQV",	     "\xc3\xa9=QZQV",
	    "A=QZQ\xff\xfe", "A=QZQ\xed\xa0\x80" /* a surrogate */,
	};
	struct sbx_error *err = NULL;
	char *big;
	const char *two[2];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ok(env1(good[i], &err) == 0, "env entry %zu taken", i);
		sbx_error_free(&err);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(env1(bad[i], &err) < 0 && err->kind == SBX_E_INVALID,
		   "env entry %zu refused", i);
		ok(err && !strstr(err->msg, "QZQ"),
		   "its refusal does not quote the value");
		sbx_error_free(&err);
	}
	big = malloc(SVC_EXEC_ENV_VALUE_MAX + 8);
	if (!big)
		bail_out("out of memory");
	memcpy(big, "BIG=", 4);
	memset(big + 4, 'q', SVC_EXEC_ENV_VALUE_MAX);
	big[4 + SVC_EXEC_ENV_VALUE_MAX] = '\0';
	ok(env1(big, &err) == 0, "a value of exactly 32 KiB is taken");
	sbx_error_free(&err);
	big[4 + SVC_EXEC_ENV_VALUE_MAX] = 'q';
	big[5 + SVC_EXEC_ENV_VALUE_MAX] = '\0';
	ok(env1(big, &err) < 0 && !strstr(err->msg, "qqqq"),
	   "one byte more is refused, without the value");
	sbx_error_free(&err);
	free(big);
	two[0] = "X=secret-one";
	two[1] = "X=secret-two";
	ok(svc_exec_env_check(two, 2, &err) < 0 &&
	       strstr(err->msg, "'X' is given twice") &&
	       !strstr(err->msg, "secret"),
	   "a name given twice is refused by its name");
	sbx_error_free(&err);
	two[1] = "XY=1";
	ok(svc_exec_env_check(two, 2, &err) == 0,
	   "X and XY are two names, not one given twice");
	sbx_error_free(&err);

	/* The fuzzer: random entries never crash it, and a refusal never
	 * holds the value's bytes (made of a letter the names lack). */
	{
		int leaks = 0;

		for (int n = 0; n < 20000; n++) {
			char e[40];
			size_t nl = tap_rand() % 6, vl = 4 + tap_rand() % 10, k;

			for (k = 0; k < nl; k++)
				e[k] = "AZ_09-= \x80"[tap_rand() % 9];
			e[k++] = '=';
			for (size_t j = 0; j < vl; j++)
				e[k++] = (tap_rand() % 7)
					     ? 'v'
					     : "\xff\x01"[tap_rand() % 2];
			e[k] = '\0';
			if (env1(e, &err) < 0 && strstr(err->msg, "vvvv"))
				leaks++;
			sbx_error_free(&err);
		}
		is_int(leaks, 0,
		       "20000 random entries: no refusal quotes a "
		       "value");
	}
}

static void run_ids(void)
{
	char long64[66];

	ok(session_run_id_valid("job-1_A"), "a run id of letters, digits, "
					    "'-' and '_'");
	memset(long64, 'a', 64);
	long64[64] = '\0';
	ok(session_run_id_valid(long64), "64 characters");
	long64[64] = 'a';
	long64[65] = '\0';
	ok(!session_run_id_valid(long64), "65 refused");
	ok(!session_run_id_valid(""), "empty refused");
	ok(!session_run_id_valid(NULL), "none refused");
	ok(!session_run_id_valid("../x"), "'../x' refused");
	ok(!session_run_id_valid("a/b"), "'a/b' refused");
	ok(!session_run_id_valid("."), "'.' refused");
	ok(!session_run_id_valid("a b"), "'a b' refused");
}

int main(void)
{
	seconds();
	env();
	run_ids();
	return done_testing();
}

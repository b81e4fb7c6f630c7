/*
 * t-dl.c - the optional libraries loaded on first use: libpq loads and
 * answers PQlibVersion through its typed symbol (skipped, loudly, without
 * libpq5), a library that is missing or lacks a symbol gives an error
 * naming the Debian package, and the engine client refuses to send a
 * request when libcurl does not take an option (a unix socket path curl
 * refuses would otherwise send the request to localhost:80).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/curl-dl.h"
#include "basic/dl.h"
#include "engine/engine.h"
#include "basic/error.h"
#include "audit/pq-dl.h"
#include "tap.h"
#include "basic/util.h"

static void test_pq(void)
{
	struct sbx_error *err = NULL;

	if (pq_dl_load(&err) < 0) {
		diag("SKIPPED: libpq.so.5 cannot be loaded (apt-get install "
		     "libpq5): %s",
		     err->msg);
		skip("libpq5 is not installed", "pq-dl: PQlibVersion");
		ok(strstr(err->msg, "apt-get install libpq5") != NULL,
		   "pq-dl: the error names the Debian package");
		sbx_error_free(&err);
		return;
	}
	ok(sym_PQlibVersion() >= 100000,
	   "pq-dl: libpq loads and PQlibVersion answers (%d)",
	   sym_PQlibVersion());
	ok(pq_dl_load(&err) == 0, "pq-dl: loading again is a no-op");
}

static int dummy_symbol(void)
{
	return 0;
}

static void test_failures(void)
{
	int (*slot)(void) = dummy_symbol;
	const struct dl_sym syms[] = {{(void **)&slot, "PQlibVersion"}};
	const struct dl_sym bad[] = {{(void **)&slot, "no_such_symbol_x"}};
	char *error = NULL;

	ok(dl_load("libsbxcat-absent.so.9", "libsbxcat-absent9", syms, 1,
		   &error) < 0,
	   "dl_load: a missing library fails");
	ok(error && strstr(error, "cannot load libsbxcat-absent.so.9 "
				  "(apt-get install libsbxcat-absent9): "),
	   "dl_load: the error names the soname and the package (%s)",
	   error ? error : "(none)");
	free(error);
	error = NULL;
	ok(dl_load(SBX_CURL_SONAME, SBX_CURL_PACKAGE, bad, 1, &error) < 0 &&
	       slot == NULL,
	   "dl_load: a missing symbol fails and leaves no slot set");
	ok(error && strstr(error, "has no no_such_symbol_x") &&
	       strstr(error, "libcurl4"),
	   "dl_load: the error names the symbol and the package (%s)",
	   error ? error : "(none)");
	free(error);
}

static void test_setopt(void)
{
	struct sbx_error *err = NULL;
	struct engine e;
	char *huge;

	if (engine_init(&e, NULL, "unix:///nonexistent/sbxcat-t-dl.sock", &err) < 0) {
		skip(err->msg, "setopt (2 tests)");
		sbx_error_free(&err);
		return;
	}
	/* curl refuses strings over 8,000,000 bytes (CURL_MAX_INPUT_LENGTH) */
	huge = xmalloc(9000001);
	memset(huge, 's', 9000000);
	huge[9000000] = '\0';
	free(e.sock);
	e.sock = huge;
	ok(engine_ping(&e, &err) < 0 && err && tap_status(err) == 3,
	   "a unix socket path curl does not take fails with status 3");
	ok(err && strstr(err->msg, "cannot set CURLOPT_UNIX_SOCKET_PATH for "
				   "GET /_ping"),
	   "the error names the option (%s)", err ? err->msg : "(none)");
	sbx_error_free(&err);
	engine_release(&e);
}

int main(void)
{
	test_pq();
	test_failures();
	test_setopt();
	return done_testing();
}

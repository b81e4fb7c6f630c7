/*
 * curl-dl.c - load libcurl on first use (see curl-dl.h).
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "curl-dl.h"
#include "error.h"
#include "util.h"

ELF_NOTE_DLOPEN(curl_dlopen_note,
		"[{\"feature\":\"engine\",\"description\":\"the Docker Engine "
		"client (prewarm)\",\"priority\":\"recommended\",\"soname\":["
		"\"" SBX_CURL_SONAME "\"]}]");

DLSYM_DEFINE(curl_global_init);
DLSYM_DEFINE(curl_global_cleanup);
DLSYM_DEFINE(curl_easy_init);
DLSYM_DEFINE(curl_easy_setopt);
DLSYM_DEFINE(curl_easy_perform);
DLSYM_DEFINE(curl_easy_getinfo);
DLSYM_DEFINE(curl_easy_reset);
DLSYM_DEFINE(curl_easy_cleanup);
DLSYM_DEFINE(curl_easy_strerror);
DLSYM_DEFINE(curl_easy_escape);
DLSYM_DEFINE(curl_free);
DLSYM_DEFINE(curl_slist_append);
DLSYM_DEFINE(curl_slist_free_all);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char *load_error; /* set once, read after pthread_once */

static void cleanup(void)
{
	sym_curl_global_cleanup();
}

static void load(void)
{
	static const struct dl_sym syms[] = {
	    DLSYM_ENTRY(curl_global_init),    DLSYM_ENTRY(curl_global_cleanup),
	    DLSYM_ENTRY(curl_easy_init),      DLSYM_ENTRY(curl_easy_setopt),
	    DLSYM_ENTRY(curl_easy_perform),   DLSYM_ENTRY(curl_easy_getinfo),
	    DLSYM_ENTRY(curl_easy_reset),     DLSYM_ENTRY(curl_easy_cleanup),
	    DLSYM_ENTRY(curl_easy_strerror),  DLSYM_ENTRY(curl_easy_escape),
	    DLSYM_ENTRY(curl_free),	      DLSYM_ENTRY(curl_slist_append),
	    DLSYM_ENTRY(curl_slist_free_all),
	};

	if (dl_load(SBX_CURL_SONAME, SBX_CURL_PACKAGE, syms,
		    sizeof(syms) / sizeof(syms[0]), &load_error) < 0)
		return;
	/* curl_global_init is not thread-safe: pthread_once makes it so. */
	if (sym_curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		load_error = xasprintf("cannot initialise %s", SBX_CURL_SONAME);
		return;
	}
	atexit(cleanup);
}

int curl_dl_load(struct sbx_error **err)
{
	pthread_once(&once, load);
	if (load_error)
		return sbx_error_set(err, SBX_EXIT_ENV, 0, "%s", load_error);
	return 0;
}

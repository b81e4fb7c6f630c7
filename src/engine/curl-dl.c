/*
 * curl-dl.c - load libcurl on first use (see curl-dl.h).
 */
#include "config.h"

#include <stdlib.h>

#include "engine/curl-dl.h"
#include "basic/error.h"
#include "basic/util.h"

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

static void cleanup(void)
{
	sym_curl_global_cleanup();
}

static int init(char **error)
{
	if (sym_curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		*error = xasprintf("cannot initialise %s", SBX_CURL_SONAME);
		return -1;
	}
	atexit(cleanup);
	return 0;
}

static const struct dl_sym syms[] = {
    DLSYM_ENTRY(curl_global_init),    DLSYM_ENTRY(curl_global_cleanup),
    DLSYM_ENTRY(curl_easy_init),      DLSYM_ENTRY(curl_easy_setopt),
    DLSYM_ENTRY(curl_easy_perform),   DLSYM_ENTRY(curl_easy_getinfo),
    DLSYM_ENTRY(curl_easy_reset),     DLSYM_ENTRY(curl_easy_cleanup),
    DLSYM_ENTRY(curl_easy_strerror),  DLSYM_ENTRY(curl_easy_escape),
    DLSYM_ENTRY(curl_free),	      DLSYM_ENTRY(curl_slist_append),
    DLSYM_ENTRY(curl_slist_free_all),
};

/* curl_global_init is not thread-safe: dl_load_once's lock makes it so. */
static struct dl_lib curl_lib = {
    .soname = SBX_CURL_SONAME,
    .package = SBX_CURL_PACKAGE,
    .syms = syms,
    .nsyms = sizeof(syms) / sizeof(syms[0]),
    .init = init,
};

int curl_dl_load(struct sbx_error **err)
{
	return dl_load_once(&curl_lib, err);
}

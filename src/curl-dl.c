/*
 * curl-dl.c - load libcurl on first use (see curl-dl.h).
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#define SBX_CURL_DL_IMPL 1
#include "curl-dl.h"
#include "error.h"
#include "util.h"

struct sbx_curl sbx_curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char *load_error; /* set once, read after pthread_once */

static void cleanup(void)
{
	sbx_curl.global_cleanup();
}

static void load(void)
{
	void *h = dlopen(SBX_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	const struct {
		void **slot;
		const char *name;
	} syms[] = {
	    {(void **)&sbx_curl.global_init, "curl_global_init"},
	    {(void **)&sbx_curl.global_cleanup, "curl_global_cleanup"},
	    {(void **)&sbx_curl.easy_init, "curl_easy_init"},
	    {(void **)&sbx_curl.easy_setopt, "curl_easy_setopt"},
	    {(void **)&sbx_curl.easy_perform, "curl_easy_perform"},
	    {(void **)&sbx_curl.easy_getinfo, "curl_easy_getinfo"},
	    {(void **)&sbx_curl.easy_reset, "curl_easy_reset"},
	    {(void **)&sbx_curl.easy_cleanup, "curl_easy_cleanup"},
	    {(void **)&sbx_curl.easy_strerror, "curl_easy_strerror"},
	    {(void **)&sbx_curl.easy_escape, "curl_easy_escape"},
	    {(void **)&sbx_curl.free, "curl_free"},
	    {(void **)&sbx_curl.slist_append, "curl_slist_append"},
	    {(void **)&sbx_curl.slist_free_all, "curl_slist_free_all"},
	};

	if (!h) {
		load_error =
		    xasprintf("cannot load %s (apt-get install libcurl4): %s",
			      SBX_CURL_SONAME, dlerror());
		return;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			load_error = xasprintf("%s has no %s", SBX_CURL_SONAME,
					       syms[i].name);
			return;
		}
	}
	/* curl_global_init is not thread-safe: pthread_once makes it so. */
	if (sbx_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
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

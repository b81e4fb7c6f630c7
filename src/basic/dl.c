/*
 * dl.c - open an optional library and resolve its symbols (see dl.h).
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>

#include "basic/dl.h"
#include "basic/error.h"
#include "basic/util.h"

/* One lock for every library: loading is rare, and libcurl's
 * curl_global_init must not run twice at once. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

int dl_load_once(struct dl_lib *lib, struct sbx_error **err)
{
	char *error;

	pthread_mutex_lock(&load_lock);
	if (!lib->tried) {
		lib->tried = true;
		if (dl_load(lib->soname, lib->package, lib->syms, lib->nsyms,
			    &lib->error) == 0 &&
		    lib->init)
			lib->init(&lib->error);
	}
	error = lib->error;
	pthread_mutex_unlock(&load_lock);
	if (error)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0, "%s", error);
	return 0;
}

int dl_load(const char *soname, const char *package, const struct dl_sym *syms,
	    size_t nsyms, char **error)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	*error = NULL;
	if (!h) {
		*error = xasprintf("cannot load %s (apt-get install %s): %s",
				   soname, package, dlerror());
		return -1;
	}
	for (size_t i = 0; i < nsyms; i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			*error = xasprintf("%s has no %s: install a newer %s",
					   soname, syms[i].name, package);
			/* No half-loaded library: every slot or none. */
			for (size_t k = 0; k < i; k++)
				*syms[k].slot = NULL;
			dlclose(h);
			return -1;
		}
	}
	return 0;
}

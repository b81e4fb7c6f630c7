/*
 * dl.c - open an optional library and resolve its symbols (see dl.h).
 */
#include "config.h"

#include <dlfcn.h>

#include "dl.h"
#include "util.h"

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

/*
 * briefing.c - compose the model briefing of a runtime.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/briefing.h"
#include "catalog/catalog.h"
#include "basic/util.h"

static int cmp_pkg(const void *a, const void *b)
{
	return strcasecmp(*(char *const *)a, *(char *const *)b);
}

char *briefing_markdown(const struct runtime *rt, int is_default)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addf(&sb, "## Sandbox runtime: %s\n\n", rt->alias);
	strbuf_addf(&sb, "You are working in the `%s` sandbox runtime%s: %s",
		    rt->alias, is_default ? " (the default)" : "",
		    rt->description);
	/* Descriptions are one line, usually without a full stop. */
	if (!strchr(".!?", rt->description[strlen(rt->description) - 1]))
		strbuf_addch(&sb, '.');
	strbuf_addch(&sb, '\n');

	if (rt->nbriefing) {
		strbuf_addch(&sb, '\n');
		for (size_t i = 0; i < rt->nbriefing; i++)
			strbuf_addf(&sb, "%s%s", i ? " " : "", rt->briefing[i]);
		strbuf_addch(&sb, '\n');
	}

	if (rt->npackages) {
		char **sorted = xcalloc(rt->npackages, sizeof(*sorted));
		memcpy(sorted, rt->packages, rt->npackages * sizeof(*sorted));
		qsort(sorted, rt->npackages, sizeof(*sorted), cmp_pkg);
		strbuf_addstr(&sb,
			      "\nPython packages already installed (do not "
			      "install them again): ");
		for (size_t i = 0; i < rt->npackages; i++)
			strbuf_addf(&sb, "%s`%s`", i ? ", " : "", sorted[i]);
		strbuf_addstr(&sb, ".\n");
		free(sorted);
	}

	strbuf_addch(&sb, '\n');
	if (rt->needs_network)
		strbuf_addstr(&sb,
			      "Network: this sandbox can reach the network.\n");
	else
		strbuf_addstr(&sb,
			      "Network: none. This sandbox has no network, so "
			      "installs and downloads will fail; work with "
			      "what is installed.\n");
	return strbuf_detach(&sb, NULL);
}

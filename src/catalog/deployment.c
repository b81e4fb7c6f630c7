/*
 * deployment.c - the deployment id's check (deployment.h).
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "basic/util.h"
#include "catalog/deployment.h"

int deployment_check(const char *id, struct sbx_error **err)
{
	size_t n = strlen(id);
	bool good = n >= 1 && n <= DEPLOYMENT_MAX &&
		    strchr("abcdefghijklmnopqrstuvwxyz0123456789", id[0]) &&
		    strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
	struct strbuf shown = STRBUF_INIT;
	int rc;

	if (good)
		return 0;
	/* It comes from the environment: shown escaped, and cut. */
	text_add_escaped(&shown, id, utf8_whole(id, n > 80 ? 80 : n));
	rc = sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
			   "SBXCAT_DEPLOYMENT_ID '%s%s': expected 1 to %d of "
			   "a-z, 0-9, '_', '.', '-', beginning with a letter "
			   "or a digit",
			   strbuf_str(&shown), n > 80 ? "..." : "",
			   DEPLOYMENT_MAX);
	strbuf_release(&shown);
	return rc;
}

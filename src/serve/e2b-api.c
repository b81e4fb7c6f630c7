/*
 * e2b-api.c - the E2B front's control plane (e2b.h, docs/e2b.md):
 * sandboxes created, connected, paused, listed and killed over REST.
 */
#include "config.h"

#include "serve/e2b.h"

bool e2b_envd_ready(struct e2b_req *e)
{
	(void)e;
	return true;
}

json_t *e2b_sandbox_envs(struct e2b_req *e)
{
	(void)e;
	return NULL;
}

static void not_yet(struct e2b_req *e)
{
	e2b_rest_error(e, 501, "Not served yet: %s %s", e->w.req->method,
		       e->w.req->route);
}

const struct http_route e2b_api_routes[] = {
    E2B_ROUTE("GET", "/v2/sandboxes", QUICK, 4096, not_yet, API_KEY, REST),
};
const size_t e2b_api_nroutes = sizeof(e2b_api_routes) / sizeof(*e2b_api_routes);

/*
 * e2b-code.c - the code interpreter's /execute and /contexts (e2b.h,
 * docs/e2b.md).
 */
#include "config.h"

#include "serve/e2b.h"

static void not_yet(struct e2b_req *e)
{
	e2b_rest_error(e, 501, "Not served yet: %s", e->w.req->route);
}

const struct http_route e2b_code_routes[] = {
    E2B_ROUTE("POST", "/execute", SLOW, 1 << 20, not_yet, ENVD, REST),
};
const size_t e2b_code_nroutes =
    sizeof(e2b_code_routes) / sizeof(*e2b_code_routes);

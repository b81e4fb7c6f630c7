/*
 * e2b-fs.c - envd's filesystem service over Connect and its /files and
 * /health routes (e2b.h, docs/e2b.md).
 */
#include "config.h"

#include "serve/e2b.h"

/* envd's health: 204, no body, no token. */
static void health(struct e2b_req *e)
{
	e2b_rest_empty(e, 204);
}

const struct http_route e2b_fs_routes[] = {
    E2B_ROUTE("GET", "/health", QUICK, 4096, health, NONE, REST),
};
const size_t e2b_fs_nroutes = sizeof(e2b_fs_routes) / sizeof(*e2b_fs_routes);

/*
 * e2b-process.c - envd's process service over Connect (e2b.h,
 * docs/e2b.md): commands started, streamed, signalled and fed.
 */
#include "config.h"

#include "serve/e2b.h"

static void not_yet(struct e2b_req *e)
{
	e2b_connect_error(e, "unimplemented", "Not served yet: %s",
			  e->w.req->route);
}

const struct http_route e2b_process_routes[] = {
    E2B_ROUTE("POST", "/process.Process/List", QUICK, 4096, not_yet, ENVD,
	      CONNECT, .body = true),
};
const size_t e2b_process_nroutes =
    sizeof(e2b_process_routes) / sizeof(*e2b_process_routes);

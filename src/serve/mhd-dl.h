/*
 * mhd-dl.h - libmicrohttpd, loaded the first time a server starts.
 *
 * Only `sbxcat serve` speaks HTTP, so the other commands never map
 * libmicrohttpd and the GnuTLS it pulls in: the server loads it with
 * dlopen() (basic/dl.h: typed symbols, a .note.dlopen entry) in
 * http_server_start.  The headers are libmicrohttpd-dev's; the library is
 * Debian's libmicrohttpd12.
 *
 * Include this instead of <microhttpd.h> and call sym_MHD_*: each is
 * declared with microhttpd.h's own prototype.  mhd_dl_load() loads the
 * library once per process; call it before any sym_MHD_* function.
 * Status 3 when libmicrohttpd is missing.
 *
 * Thread rule: mhd_dl_load may be called by any thread at once (dl.h).
 */
#ifndef SBX_MHD_DL_H
#define SBX_MHD_DL_H

#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "basic/dl.h"

struct sbx_error;

#define SBX_MHD_SONAME "libmicrohttpd.so.12"
#define SBX_MHD_PACKAGE "libmicrohttpd12"

DLSYM_PROTOTYPE(MHD_start_daemon);
DLSYM_PROTOTYPE(MHD_stop_daemon);
DLSYM_PROTOTYPE(MHD_quiesce_daemon);
DLSYM_PROTOTYPE(MHD_get_connection_info);
DLSYM_PROTOTYPE(MHD_get_connection_values);
DLSYM_PROTOTYPE(MHD_lookup_connection_value);
DLSYM_PROTOTYPE(MHD_suspend_connection);
DLSYM_PROTOTYPE(MHD_resume_connection);
DLSYM_PROTOTYPE(MHD_queue_response);
DLSYM_PROTOTYPE(MHD_create_response_from_buffer);
DLSYM_PROTOTYPE(MHD_create_response_from_callback);
DLSYM_PROTOTYPE(MHD_is_feature_supported);
DLSYM_PROTOTYPE(MHD_get_daemon_info);
DLSYM_PROTOTYPE(MHD_add_response_header);
DLSYM_PROTOTYPE(MHD_destroy_response);

int mhd_dl_load(struct sbx_error **err);

#endif

/*
 * mhd-dl.c - load libmicrohttpd on first use (see mhd-dl.h).
 */
#include "config.h"

#include "basic/error.h"
#include "serve/mhd-dl.h"

ELF_NOTE_DLOPEN(mhd_dlopen_note,
		"[{\"feature\":\"serve\",\"description\":\"the HTTP service "
		"(sbxcat serve)\",\"priority\":\"recommended\",\"soname\":["
		"\"" SBX_MHD_SONAME "\"]}]");

DLSYM_DEFINE(MHD_start_daemon);
DLSYM_DEFINE(MHD_stop_daemon);
DLSYM_DEFINE(MHD_quiesce_daemon);
DLSYM_DEFINE(MHD_get_connection_info);
DLSYM_DEFINE(MHD_get_connection_values);
DLSYM_DEFINE(MHD_lookup_connection_value);
DLSYM_DEFINE(MHD_suspend_connection);
DLSYM_DEFINE(MHD_resume_connection);
DLSYM_DEFINE(MHD_queue_response);
DLSYM_DEFINE(MHD_create_response_from_buffer);
DLSYM_DEFINE(MHD_create_response_from_callback);
DLSYM_DEFINE(MHD_is_feature_supported);
DLSYM_DEFINE(MHD_get_daemon_info);
DLSYM_DEFINE(MHD_add_response_header);
DLSYM_DEFINE(MHD_destroy_response);

static const struct dl_sym syms[] = {
    DLSYM_ENTRY(MHD_start_daemon),
    DLSYM_ENTRY(MHD_stop_daemon),
    DLSYM_ENTRY(MHD_quiesce_daemon),
    DLSYM_ENTRY(MHD_get_connection_info),
    DLSYM_ENTRY(MHD_get_connection_values),
    DLSYM_ENTRY(MHD_lookup_connection_value),
    DLSYM_ENTRY(MHD_suspend_connection),
    DLSYM_ENTRY(MHD_resume_connection),
    DLSYM_ENTRY(MHD_queue_response),
    DLSYM_ENTRY(MHD_create_response_from_buffer),
    DLSYM_ENTRY(MHD_create_response_from_callback),
    DLSYM_ENTRY(MHD_is_feature_supported),
    DLSYM_ENTRY(MHD_get_daemon_info),
    DLSYM_ENTRY(MHD_add_response_header),
    DLSYM_ENTRY(MHD_destroy_response),
};

static struct dl_lib mhd_lib = {
    .soname = SBX_MHD_SONAME,
    .package = SBX_MHD_PACKAGE,
    .syms = syms,
    .nsyms = sizeof(syms) / sizeof(syms[0]),
};

int mhd_dl_load(struct sbx_error **err)
{
	return dl_load_once(&mhd_lib, err);
}

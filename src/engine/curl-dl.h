/*
 * curl-dl.h - libcurl, loaded the first time an engine is made.
 *
 * Linking libcurl maps it and the thirty libraries it needs (OpenSSL,
 * GSSAPI, LDAP, SSH, ...) into every run of sbxcat: 5 MiB of resident
 * memory and a few milliseconds before main() even for `sbxcat check`.
 * Only the commands that talk to the Docker engine need it, so they load
 * it with dlopen() (dl.h: typed symbols, a .note.dlopen entry), and the
 * rest of sbxcat never maps it.
 *
 * Include this instead of <curl/curl.h> and call sym_curl_*: each is
 * declared with curl.h's own prototype.  curl_dl_load() loads and
 * initialises libcurl once per process (thread-safe); call it before any
 * sym_curl_* function.  Status 3 when libcurl is missing.
 *
 * curl_easy_setopt and curl_easy_getinfo are variadic, and curl.h wraps
 * them in macros (typecheck-gcc.h) that check the argument's type against
 * the option at compile time.  Those macros call the function by its name
 * and cannot wrap a pointer, so CURL_DISABLE_TYPECHECK turns them off
 * (typeof then sees the plain declaration), and the engine sets options
 * through typed helpers instead (engine-http.c: setopt_long, setopt_str,
 * ...), each checking that the option is of its type.
 *
 * Thread rule: curl_dl_load may be called by any thread at once (dl.h).
 */
#ifndef SBX_CURL_DL_H
#define SBX_CURL_DL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "basic/dl.h"

struct sbx_error;

/* The soname of Debian's libcurl4 (the OpenSSL flavour, libcurl4-openssl-dev).
 */
#define SBX_CURL_SONAME "libcurl.so.4"
#define SBX_CURL_PACKAGE "libcurl4"

DLSYM_PROTOTYPE(curl_global_init);
DLSYM_PROTOTYPE(curl_global_cleanup);
DLSYM_PROTOTYPE(curl_easy_init);
DLSYM_PROTOTYPE(curl_easy_setopt);
DLSYM_PROTOTYPE(curl_easy_perform);
DLSYM_PROTOTYPE(curl_easy_getinfo);
DLSYM_PROTOTYPE(curl_easy_reset);
DLSYM_PROTOTYPE(curl_easy_cleanup);
DLSYM_PROTOTYPE(curl_easy_strerror);
DLSYM_PROTOTYPE(curl_easy_escape);
DLSYM_PROTOTYPE(curl_free);
DLSYM_PROTOTYPE(curl_slist_append);
DLSYM_PROTOTYPE(curl_slist_free_all);

int curl_dl_load(struct sbx_error **err);

#endif

/*
 * curl-dl.h - libcurl, loaded the first time an engine is made.
 *
 * Linking libcurl maps it and the thirty libraries it needs (OpenSSL,
 * GSSAPI, LDAP, SSH, ...) into every run of sbxcat: 5 MiB of resident
 * memory and a few milliseconds before main() even for `sbxcat check`.
 * Only the commands that talk to the Docker engine need it, so they load
 * it with dlopen() (as systemd does for its optional libraries), and the
 * rest of sbxcat never pays for it.
 *
 * Include this instead of <curl/curl.h>: the curl_* names used by the
 * engine client are redirected to the loaded functions.  curl_dl_load()
 * loads and initialises libcurl once per process (thread-safe); call it
 * before any other curl_* function.  Status 3 when libcurl is missing.
 */
#ifndef SBX_CURL_DL_H
#define SBX_CURL_DL_H

/* The type-checking wrappers are macros named after the functions. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

struct sbx_error;

/* The soname of Debian's libcurl4 (the OpenSSL flavour, libcurl4-openssl-dev).
 */
#define SBX_CURL_SONAME "libcurl.so.4"

struct sbx_curl {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *curl);
	CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	void (*easy_reset)(CURL *curl);
	void (*easy_cleanup)(CURL *curl);
	const char *(*easy_strerror)(CURLcode code);
	char *(*easy_escape)(CURL *curl, const char *s, int len);
	void (*free)(void *p);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};

extern struct sbx_curl sbx_curl;

int curl_dl_load(struct sbx_error **err);

#ifndef SBX_CURL_DL_IMPL
/* curl.h wraps these two in argument-counting macros: replace them. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init sbx_curl.global_init
#define curl_global_cleanup sbx_curl.global_cleanup
#define curl_easy_init sbx_curl.easy_init
#define curl_easy_setopt sbx_curl.easy_setopt
#define curl_easy_perform sbx_curl.easy_perform
#define curl_easy_getinfo sbx_curl.easy_getinfo
#define curl_easy_reset sbx_curl.easy_reset
#define curl_easy_cleanup sbx_curl.easy_cleanup
#define curl_easy_strerror sbx_curl.easy_strerror
#define curl_easy_escape sbx_curl.easy_escape
#define curl_free sbx_curl.free
#define curl_slist_append sbx_curl.slist_append
#define curl_slist_free_all sbx_curl.slist_free_all
#endif

#endif

/*
 * http-tls.c - HTTPS (see http.h): a certificate and key checked, and
 * replaced on the https: listeners at a reload.
 *
 * The TLS itself is libmicrohttpd's (GnuTLS, MHD_USE_TLS, the PEM given
 * in memory).  The pair is checked here first, with libcrypto, so that a
 * bad one is refused with a message that says what is wrong (GnuTLS, in
 * MHD_start_daemon, would only fail) and before any daemon is touched.
 *
 * A reload cannot change a running daemon's certificate, so each https:
 * listener gets a new daemon on the same listening socket: it is started
 * first (a bad pair, or a daemon that will not start, leaves every old
 * one serving), then the old one is quiesced (it stops accepting, and
 * gives the socket back rather than closing it) and retired: its
 * connections, and the requests in flight on them, finish on the old
 * certificate; a thread stops it once it has none.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "basic/error.h"
#include "serve/http-int.h"
#include "serve/mhd-dl.h"

/* How often a retired daemon's connections are counted. */
#define RETIRE_TICK_MS 100

bool http_listen_is_tls(const char *spec)
{
	return !strncmp(spec, "https:", 6);
}

/* An encrypted key is refused, never prompted for on a terminal
 * (OpenSSL's default callback would read one). */
static int no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return -1;
}

static void serial_hex(X509 *x, char serial[static 80])
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn ? BN_bn2hex(bn) : NULL;

	snprintf(serial, 80, "%s", hex ? hex : "?");
	OPENSSL_free(hex);
	BN_free(bn);
}

int http_tls_check(const char *cert_pem, const char *key_pem, char *serial,
		   struct sbx_error **err)
{
	BIO *cb = BIO_new_mem_buf(cert_pem, -1);
	BIO *kb = BIO_new_mem_buf(key_pem, -1);
	X509 *x = cb ? PEM_read_bio_X509(cb, NULL, no_password, NULL) : NULL;
	EVP_PKEY *k =
	    kb ? PEM_read_bio_PrivateKey(kb, NULL, no_password, NULL) : NULL;
	int rc = 0;

	if (!x)
		rc = sbx_error_set(err, SBX_E_INVALID, 0,
				   "the TLS certificate is not a PEM X.509 "
				   "certificate");
	else if (!k)
		rc = sbx_error_set(err, SBX_E_INVALID, 0,
				   "the TLS key is not a PEM private key (or "
				   "it is encrypted)");
	else if (X509_check_private_key(x, k) != 1)
		rc = sbx_error_set(err, SBX_E_INVALID, 0,
				   "the TLS key does not match the "
				   "certificate");
	else if (serial)
		serial_hex(x, serial);
	ERR_clear_error();
	EVP_PKEY_free(k);
	X509_free(x);
	BIO_free(kb);
	BIO_free(cb);
	return rc;
}

static void pem_free(char *cert, char *key)
{
	free(cert);
	if (key)
		explicit_bzero(key, strlen(key));
	free(key);
}

static unsigned daemon_connections(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *di =
	    sym_MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return di ? di->num_connections : 0;
}

static void *retire_main(void *arg)
{
	struct http_retired *rt = arg;
	struct http_server *srv = rt->srv;

	pthread_mutex_lock(&srv->lock);
	while (!srv->retire_stop) {
		unsigned n;

		pthread_mutex_unlock(&srv->lock);
		n = daemon_connections(rt->mhd);
		pthread_mutex_lock(&srv->lock);
		if (!n)
			break;
		http_cond_wait_ms(&srv->cond, &srv->lock, RETIRE_TICK_MS);
	}
	pthread_mutex_unlock(&srv->lock);
	/* Quiesced: its listening socket is the new daemon's, not closed. */
	sym_MHD_stop_daemon(rt->mhd);
	pthread_mutex_lock(&srv->lock);
	rt->done = true;
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* The records of the retired daemons stopped already, joined and freed
 * (a server reloaded every hour for a year keeps none of them). */
static void reap(struct http_server *srv)
{
	struct http_retired *done = NULL, **p;

	pthread_mutex_lock(&srv->lock);
	for (p = &srv->retired; *p;) {
		struct http_retired *rt = *p;

		if (rt->done) {
			*p = rt->next;
			rt->next = done;
			done = rt;
		} else {
			p = &rt->next;
		}
	}
	pthread_mutex_unlock(&srv->lock);
	while (done) {
		struct http_retired *next = done->next;

		pthread_join(done->thread, NULL);
		pem_free(done->cert, done->key);
		free(done);
		done = next;
	}
}

/* Hand l's daemon over to a retirement thread. */
static void retire(struct http_server *srv, struct http_listener *l)
{
	struct http_retired *rt = xcalloc(1, sizeof(*rt));

	rt->srv = srv;
	rt->mhd = l->mhd;
	rt->cert = l->cert;
	rt->key = l->key;
	sym_MHD_quiesce_daemon(rt->mhd);
	/* No thread: the daemon is stopped with the server. */
	rt->threaded = !pthread_create(&rt->thread, NULL, retire_main, rt);
	pthread_mutex_lock(&srv->lock);
	rt->next = srv->retired;
	srv->retired = rt;
	pthread_mutex_unlock(&srv->lock);
}

int http_server_tls_reload(struct http_server *srv, const char *cert_pem,
			   const char *key_pem, struct sbx_error **err)
{
	struct MHD_Daemon **nd = xcalloc(srv->nls, sizeof(*nd));
	char **certs = xcalloc(srv->nls, sizeof(*certs));
	char **keys = xcalloc(srv->nls, sizeof(*keys));
	size_t ntls = 0, i;
	int rc = 0;

	reap(srv);
	for (i = 0; i < srv->nls; i++)
		ntls += srv->ls[i].tls;
	if (!ntls)
		rc = sbx_error_set(err, SBX_E_INVALID, 0,
				   "no https: listener for a TLS certificate");
	else if (http_tls_check(cert_pem, key_pem, NULL, err) < 0)
		rc = -1;
	for (i = 0; !rc && i < srv->nls; i++) {
		struct http_listener *l = &srv->ls[i];

		if (!l->tls)
			continue;
		certs[i] = xstrdup(cert_pem);
		keys[i] = xstrdup(key_pem);
		nd[i] = http_daemon_start(srv, l, certs[i], keys[i]);
		if (!nd[i])
			rc = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					   "cannot serve the new TLS "
					   "certificate on '%s'",
					   l->spec);
	}
	for (i = 0; i < srv->nls; i++) {
		struct http_listener *l = &srv->ls[i];

		if (!l->tls)
			continue;
		if (rc) {
			/* The old daemons serve on; a new one that started
			 * gives the socket back, and its connections (it
			 * may have accepted some) are closed. */
			if (nd[i]) {
				sym_MHD_quiesce_daemon(nd[i]);
				sym_MHD_stop_daemon(nd[i]);
			}
			pem_free(certs[i], keys[i]);
			continue;
		}
		retire(srv, l);
		l->mhd = nd[i];
		l->cert = certs[i];
		l->key = keys[i];
	}
	free(nd);
	free(certs);
	free(keys);
	return rc;
}

void http_tls_retired_stop(struct http_server *srv)
{
	struct http_retired *rt;

	pthread_mutex_lock(&srv->lock);
	srv->retire_stop = true;
	pthread_cond_broadcast(&srv->cond);
	rt = srv->retired;
	srv->retired = NULL;
	pthread_mutex_unlock(&srv->lock);
	while (rt) {
		struct http_retired *next = rt->next;

		if (rt->threaded)
			pthread_join(rt->thread, NULL);
		else
			sym_MHD_stop_daemon(rt->mhd);
		pem_free(rt->cert, rt->key);
		free(rt);
		rt = next;
	}
}

/*
 * auditweb.h - `sbxcat audit web`: the auditor's page (docs/audit.md,
 * "The auditor's page"), a read-only HTTP service over the audit's
 * database on the HTTP server of http.h.  It needs the database alone:
 * no Docker socket, no workspace root.
 *
 * Who may look: the auditors of a file like the tenants file ("TENANT
 * TOKEN", or "* TOKEN" for every tenant), by a login cookie (POST /login)
 * or "Authorization: Bearer TOKEN".  A tenant's auditor sees that
 * tenant's rows and no other's.
 *
 * Thread rule: auditpage_start and auditpage_stop are called by one
 * thread; the handlers run on the HTTP server's workers and share only
 * the login table and the stream counts, under the page's mutex.
 */
#ifndef SBX_AUDITPAGE_H
#define SBX_AUDITPAGE_H

struct svc;
struct sbx_error;

struct auditpage_config {
	const struct svc *svc;	   /* the audit's database */
	const char *listen;	   /* "tcp:HOST:PORT" or "unix:PATH" */
	const char *auditors_file; /* required */
	/* The service's token (SANDBOXD_TOKEN), or NULL: an auditor's token
	 * may not be it. */
	const char *service_token;
	int log_fd; /* the access log, -1: none */
};

struct auditpage;
/*
 * Read the auditors, check the database's role when the database answers
 * (a role that can write: -1 SBX_E_INVALID naming the privilege and
 * table; a database that does not answer is no error: the page starts and
 * says 503 until it does; *down, malloc'd, then says why), and listen.
 */
int auditpage_start(struct auditpage **ap, const struct auditpage_config *c,
		    char **down, struct sbx_error **err);
/* The port listened on (a tcp: port 0 gets one). */
unsigned auditpage_port(struct auditpage *ap);
void auditpage_stop(struct auditpage *ap, unsigned grace_ms);

#endif

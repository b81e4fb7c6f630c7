/*
 * pq-dl.h - libpq, loaded the first time the audit needs the database.
 *
 * As with libcurl (curl-dl.h, dl.h): sbxcat is not linked with libpq, so
 * `sbxcat check` and the other commands that never talk to PostgreSQL do
 * not map it and its libraries (Kerberos, LDAP, OpenSSL).  Include this
 * instead of <libpq-fe.h> and call sym_PQ*: each is declared with
 * libpq-fe.h's own prototype.  pq_dl_load() loads libpq once per process
 * (thread-safe); call it before any sym_PQ* function.  Status 3, naming
 * the Debian package, when libpq is missing (or older than 14, without
 * pipeline mode).
 *
 * Thread rule: pq_dl_load may be called from any thread at once
 * (dl_load_once's lock); the sym_PQ* pointers are set once, before it
 * first returns 0, and only read afterwards.  The one static, the library
 * loaded, is the process's, not a call's.
 */
#ifndef SBX_PQ_DL_H
#define SBX_PQ_DL_H

#include <libpq-fe.h>

#include "basic/dl.h"

struct sbx_error;

#define SBX_PQ_SONAME "libpq.so.5"
#define SBX_PQ_PACKAGE "libpq5"

DLSYM_PROTOTYPE(PQlibVersion);
DLSYM_PROTOTYPE(PQconnectdb);
DLSYM_PROTOTYPE(PQstatus);
DLSYM_PROTOTYPE(PQerrorMessage);
DLSYM_PROTOTYPE(PQserverVersion);
DLSYM_PROTOTYPE(PQfinish);
DLSYM_PROTOTYPE(PQexec);
DLSYM_PROTOTYPE(PQexecParams);
DLSYM_PROTOTYPE(PQresultStatus);
DLSYM_PROTOTYPE(PQresultErrorMessage);
DLSYM_PROTOTYPE(PQresultErrorField);
DLSYM_PROTOTYPE(PQntuples);
DLSYM_PROTOTYPE(PQnfields);
DLSYM_PROTOTYPE(PQgetvalue);
DLSYM_PROTOTYPE(PQgetisnull);
DLSYM_PROTOTYPE(PQfnumber);
DLSYM_PROTOTYPE(PQcmdTuples);
DLSYM_PROTOTYPE(PQclear);
DLSYM_PROTOTYPE(PQputCopyData);
DLSYM_PROTOTYPE(PQputCopyEnd);
DLSYM_PROTOTYPE(PQgetCopyData);
DLSYM_PROTOTYPE(PQgetResult);
DLSYM_PROTOTYPE(PQescapeIdentifier);
DLSYM_PROTOTYPE(PQescapeLiteral);
DLSYM_PROTOTYPE(PQfreemem);
DLSYM_PROTOTYPE(PQsetNoticeProcessor);
DLSYM_PROTOTYPE(PQparameterStatus);
DLSYM_PROTOTYPE(PQconnectStartParams);
DLSYM_PROTOTYPE(PQconnectPoll);
DLSYM_PROTOTYPE(PQsocket);
DLSYM_PROTOTYPE(PQconninfo);
DLSYM_PROTOTYPE(PQconninfoFree);
DLSYM_PROTOTYPE(PQsendQueryParams);
DLSYM_PROTOTYPE(PQsetSingleRowMode);
DLSYM_PROTOTYPE(PQtransactionStatus);
/* Notifications (auditq-follow.c's LISTEN). */
DLSYM_PROTOTYPE(PQconsumeInput);
DLSYM_PROTOTYPE(PQnotifies);
DLSYM_PROTOTYPE(PQisBusy);
/* Pipeline mode (libpq 14 and later) and statements prepared in it: a
 * group's statements sent at once (auditdb.c's insert). */
DLSYM_PROTOTYPE(PQenterPipelineMode);
DLSYM_PROTOTYPE(PQexitPipelineMode);
DLSYM_PROTOTYPE(PQpipelineSync);
DLSYM_PROTOTYPE(PQpipelineStatus);
DLSYM_PROTOTYPE(PQsendPrepare);
DLSYM_PROTOTYPE(PQsendQueryPrepared);

int pq_dl_load(struct sbx_error **err);

#endif

/*
 * pq-dl.c - load libpq on first use (see pq-dl.h).
 *
 * auditdb.c calls pq_dl_load() when it first connects; Makefile.am links
 * sbxcat with -u pq_dl_load so this object, and with it the .note.dlopen
 * entry, is in the executable whatever calls it.
 */
#include "config.h"

#include "basic/error.h"
#include "audit/pq-dl.h"

ELF_NOTE_DLOPEN(
    pq_dlopen_note,
    "[{\"feature\":\"audit\",\"description\":\"the PostgreSQL "
    "audit log\",\"priority\":\"recommended\",\"soname\":[\"" SBX_PQ_SONAME
    "\"]}]");

DLSYM_DEFINE(PQlibVersion);
DLSYM_DEFINE(PQconnectdb);
DLSYM_DEFINE(PQstatus);
DLSYM_DEFINE(PQerrorMessage);
DLSYM_DEFINE(PQserverVersion);
DLSYM_DEFINE(PQfinish);
DLSYM_DEFINE(PQexec);
DLSYM_DEFINE(PQexecParams);
DLSYM_DEFINE(PQresultStatus);
DLSYM_DEFINE(PQresultErrorMessage);
DLSYM_DEFINE(PQresultErrorField);
DLSYM_DEFINE(PQntuples);
DLSYM_DEFINE(PQnfields);
DLSYM_DEFINE(PQgetvalue);
DLSYM_DEFINE(PQgetisnull);
DLSYM_DEFINE(PQfnumber);
DLSYM_DEFINE(PQcmdTuples);
DLSYM_DEFINE(PQclear);
DLSYM_DEFINE(PQputCopyData);
DLSYM_DEFINE(PQputCopyEnd);
DLSYM_DEFINE(PQgetCopyData);
DLSYM_DEFINE(PQgetResult);
DLSYM_DEFINE(PQescapeIdentifier);
DLSYM_DEFINE(PQescapeLiteral);
DLSYM_DEFINE(PQfreemem);
DLSYM_DEFINE(PQsetNoticeProcessor);
DLSYM_DEFINE(PQparameterStatus);
DLSYM_DEFINE(PQconnectStartParams);
DLSYM_DEFINE(PQconnectPoll);
DLSYM_DEFINE(PQsocket);
DLSYM_DEFINE(PQconninfo);
DLSYM_DEFINE(PQconninfoFree);
DLSYM_DEFINE(PQsendQueryParams);
DLSYM_DEFINE(PQsetSingleRowMode);
DLSYM_DEFINE(PQtransactionStatus);
DLSYM_DEFINE(PQconsumeInput);
DLSYM_DEFINE(PQnotifies);
DLSYM_DEFINE(PQisBusy);
DLSYM_DEFINE(PQenterPipelineMode);
DLSYM_DEFINE(PQexitPipelineMode);
DLSYM_DEFINE(PQpipelineSync);
DLSYM_DEFINE(PQpipelineStatus);
DLSYM_DEFINE(PQsendPrepare);
DLSYM_DEFINE(PQsendQueryPrepared);

static const struct dl_sym syms[] = {
    DLSYM_ENTRY(PQlibVersion),
    DLSYM_ENTRY(PQconnectdb),
    DLSYM_ENTRY(PQstatus),
    DLSYM_ENTRY(PQerrorMessage),
    DLSYM_ENTRY(PQserverVersion),
    DLSYM_ENTRY(PQfinish),
    DLSYM_ENTRY(PQexec),
    DLSYM_ENTRY(PQexecParams),
    DLSYM_ENTRY(PQresultStatus),
    DLSYM_ENTRY(PQresultErrorMessage),
    DLSYM_ENTRY(PQresultErrorField),
    DLSYM_ENTRY(PQntuples),
    DLSYM_ENTRY(PQnfields),
    DLSYM_ENTRY(PQgetvalue),
    DLSYM_ENTRY(PQgetisnull),
    DLSYM_ENTRY(PQfnumber),
    DLSYM_ENTRY(PQcmdTuples),
    DLSYM_ENTRY(PQclear),
    DLSYM_ENTRY(PQputCopyData),
    DLSYM_ENTRY(PQputCopyEnd),
    DLSYM_ENTRY(PQgetCopyData),
    DLSYM_ENTRY(PQgetResult),
    DLSYM_ENTRY(PQescapeIdentifier),
    DLSYM_ENTRY(PQescapeLiteral),
    DLSYM_ENTRY(PQfreemem),
    DLSYM_ENTRY(PQsetNoticeProcessor),
    DLSYM_ENTRY(PQparameterStatus),
    DLSYM_ENTRY(PQconnectStartParams),
    DLSYM_ENTRY(PQconnectPoll),
    DLSYM_ENTRY(PQsocket),
    DLSYM_ENTRY(PQconninfo),
    DLSYM_ENTRY(PQconninfoFree),
    DLSYM_ENTRY(PQsendQueryParams),
    DLSYM_ENTRY(PQsetSingleRowMode),
    DLSYM_ENTRY(PQtransactionStatus),
    DLSYM_ENTRY(PQconsumeInput),
    DLSYM_ENTRY(PQnotifies),
    DLSYM_ENTRY(PQisBusy),
    DLSYM_ENTRY(PQenterPipelineMode),
    DLSYM_ENTRY(PQexitPipelineMode),
    DLSYM_ENTRY(PQpipelineSync),
    DLSYM_ENTRY(PQpipelineStatus),
    DLSYM_ENTRY(PQsendPrepare),
    DLSYM_ENTRY(PQsendQueryPrepared),
};

static struct dl_lib pq_lib = {
    .soname = SBX_PQ_SONAME,
    .package = SBX_PQ_PACKAGE,
    .syms = syms,
    .nsyms = sizeof(syms) / sizeof(syms[0]),
};

int pq_dl_load(struct sbx_error **err)
{
	return dl_load_once(&pq_lib, err);
}

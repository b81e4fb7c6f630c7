/*
 * auditdb-pq.h - what the audit's readers (auditq.c, auditq-follow.c)
 * share on auditdb_conn's libpq connection: a statement run with the
 * audit's errors, and a row's JSON object read back.  Here, not in
 * auditdb.h, so auditdb.h's callers need no libpq header.
 *
 * Thread rule: auditdb.h's (one connection, one thread at a time).
 */
#ifndef SBX_AUDITDB_PQ_H
#define SBX_AUDITDB_PQ_H

#include <jansson.h>

#include "audit/pq-dl.h"

struct sbx_error;

/* "WHAT: MESSAGE" (msg, libpq's or the server's, on one line, escaped),
 * SBX_E_UNAVAILABLE; returns -1. */
int auditdb_pq_error(struct sbx_error **err, const char *what, const char *msg);

/* Run sql with n params: 0, and *res (when res is not NULL, else the
 * result cleared) on PGRES_TUPLES_OK or PGRES_COMMAND_OK; -1 as
 * auditdb_pq_error says otherwise. */
int auditdb_run(PGconn *c, const char *what, const char *sql, int n,
		char *const *params, PGresult **res, struct sbx_error **err);

/* The JSON object text (a row the query built with json_build_object),
 * newly referenced; NULL and "WHAT: a row is not JSON: ..." if it is not
 * one. */
json_t *auditdb_row_object(const char *text, const char *what,
			   struct sbx_error **err);

#endif

/*
 * shim-audit.c - TEMPORARY: audit_op_name (a-core's audit.c) and the
 * connection and migration calls of auditdb.h (a-db's auditdb.c), the
 * least the auditq tests need, until those branches are merged.
 */
#include "config.h"

#include <stddef.h>

#include "alloc.h"
#include "audit.h"
#include "auditdb.h"
#include "error.h"
#include "pq-dl.h"

const char *audit_op_name(enum audit_op op)
{
	static const char *const n[] = {
	    "write",   "edit", "read",	"read_bytes", "ls_info", "glob_info",
	    "grep_raw", "execute", "open", "close",	   "reap"};
	return (unsigned)op < AUDIT_NOPS ? n[op] : NULL;
}

struct auditdb {
	PGconn *c;
};

void *auditdb_conn(struct auditdb *db)
{
	return db->c;
}

int auditdb_connect(const char *conninfo, struct auditdb **db,
		    struct sbx_error **err)
{
	PGconn *c;

	if (pq_dl_load(err))
		return -1;
	c = sym_PQconnectdb(conninfo);
	if (sym_PQstatus(c) != CONNECTION_OK) {
		sbx_error_set(err, 3, 0, "database unreachable: %s",
			      sym_PQerrorMessage(c));
		sym_PQfinish(c);
		return -1;
	}
	*db = xmalloc(sizeof(**db));
	(*db)->c = c;
	return 0;
}

void auditdb_close(struct auditdb *db)
{
	if (db)
		sym_PQfinish(db->c);
	free(db);
}

int auditdb_migrate(struct auditdb *db, int *applied, struct sbx_error **err)
{
	*applied = 0;
	for (int i = 0; i < auditdb_nmigrations; i++) {
		PGresult *r = sym_PQexec(db->c, auditdb_migrations[i].sql);

		if (sym_PQresultStatus(r) != PGRES_COMMAND_OK) {
			sbx_error_set(err, 3, 0, "migration %d: %s",
				      auditdb_migrations[i].version,
				      sym_PQresultErrorMessage(r));
			sym_PQclear(r);
			return -1;
		}
		sym_PQclear(r);
		++*applied;
	}
	return 0;
}

/* TEMPORARY until a-core's audit.c and a-db's auditdb.c are merged. */
#include "config.h"
#include <stddef.h>
#include "audit.h"
#include "auditdb.h"
const char *audit_op_name(enum audit_op op)
{
	static const char *const n[] = {"write", "edit", "read", "read_bytes", "ls_info", "glob_info", "grep_raw", "execute", "open", "close", "reap"};
	return (unsigned)op < AUDIT_NOPS ? n[op] : NULL;
}
void *auditdb_conn(struct auditdb *db) { return *(void **)db; }

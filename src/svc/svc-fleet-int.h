/*
 * svc-fleet-int.h - what svc-fleet-host.c and svc-forward.c share: the
 * member's state.  Private to src/svc.
 *
 * Thread rule: svc-fleet-host.h's; the cache and the easy handles under
 * lock.
 */
#ifndef SBX_SVC_FLEET_INT_H
#define SBX_SVC_FLEET_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "svc/svc-fleet-host.h"

struct auditdb_pool;
struct where_entry;

/* Idle libcurl handles kept (their connections to peers kept alive). */
#define FORWARD_HANDLES_MAX 32

struct svc_fleet {
	struct svc_fleet_config cfg;
	char instance[33];
	struct auditdb_pool *pool;
	bool joined;
	pthread_mutex_t lock;
	struct where_entry *cache;
	size_t ncache;
	void *handles[FORWARD_HANDLES_MAX];
	size_t nhandles;
};

/* The forwarder's handles freed (svc_fleet_leave). */
void svc_forward_free(struct svc_fleet *f);

#endif

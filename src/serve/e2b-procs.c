/*
 * e2b-procs.c - the per-sandbox table of the commands envd's process
 * service runs (e2b-procs.h): their pids, tags, configs and stdin.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/xjson.h"
#include "serve/e2b-procs.h"

/* What the table keeps of a sandbox: its next pid, its running count,
 * whether it has no /bin/bash. */
struct sbox {
	char id[E2B_ID_MAX + 1];
	unsigned next_pid;
	unsigned nprocs;
	bool no_bash;
	long long used;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sbox *boxes;
static size_t nboxes, aboxes;
/* The highest pid a forgotten sandbox gave: a sandbox seen again starts
 * past it, so a pid is never given twice to one sandbox. */
static unsigned forgotten_pid;
static struct e2b_proc *procs;

/* The sandbox's entry, made when make is set (the one forgotten first
 * is the least recently used with nothing running): NULL when none,
 * or the table is full of sandboxes that run something.  Under lock. */
static struct sbox *box_of(const char *id, bool make)
{
	struct sbox *old = NULL;

	for (size_t i = 0; i < nboxes; i++)
		if (!strcmp(boxes[i].id, id)) {
			boxes[i].used = clock_now_ms();
			return &boxes[i];
		}
	if (!make)
		return NULL;
	if (nboxes == E2B_PROCS_SANDBOXES) {
		for (size_t i = 0; i < nboxes; i++)
			if (!boxes[i].nprocs &&
			    (!old || boxes[i].used < old->used))
				old = &boxes[i];
		if (!old)
			return NULL;
		if (old->next_pid - 1 > forgotten_pid)
			forgotten_pid = old->next_pid - 1;
	} else {
		if (nboxes == aboxes) {
			aboxes = aboxes ? 2 * aboxes : 16;
			boxes =
			    xrealloc(boxes, st_mult(aboxes, sizeof(*boxes)));
		}
		old = &boxes[nboxes++];
	}
	memset(old, 0, sizeof(*old));
	snprintf(old->id, sizeof(old->id), "%s", id);
	old->next_pid = forgotten_pid + 1;
	old->used = clock_now_ms();
	return old;
}

struct e2b_proc *e2b_procs_add(const char *sandbox, json_t *config, char *tag,
			       bool has_stdin, int in_fd)
{
	struct e2b_proc *p = NULL;
	struct sbox *b;

	pthread_mutex_lock(&lock);
	b = box_of(sandbox, true);
	if (b && b->nprocs < E2B_PROCS_MAX) {
		p = xcalloc(1, sizeof(*p));
		snprintf(p->sandbox, sizeof(p->sandbox), "%s", sandbox);
		/* 0 is protobuf's "no pid": never given. */
		if (!b->next_pid)
			b->next_pid = 1;
		p->pid = b->next_pid++;
		p->tag = tag;
		p->config = config;
		p->has_stdin = has_stdin;
		p->in_fd = in_fd;
		pthread_mutex_init(&p->in_lock, NULL);
		p->refs = 1;
		p->listed = true;
		p->next = procs;
		procs = p;
		b->nprocs++;
	}
	pthread_mutex_unlock(&lock);
	if (!p) {
		json_decref(config);
		free(tag);
	}
	return p;
}

static void proc_free(struct e2b_proc *p)
{
	if (p->in_fd >= 0)
		close(p->in_fd);
	pthread_mutex_destroy(&p->in_lock);
	json_decref(p->config);
	free(p->tag);
	free(p);
}

void e2b_procs_put(struct e2b_proc *p)
{
	bool last;

	if (!p)
		return;
	pthread_mutex_lock(&lock);
	last = --p->refs == 0;
	pthread_mutex_unlock(&lock);
	if (last)
		proc_free(p);
}

void e2b_procs_del(struct e2b_proc *p)
{
	struct sbox *b;

	pthread_mutex_lock(&lock);
	if (p->listed) {
		for (struct e2b_proc **pp = &procs; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		p->listed = false;
		b = box_of(p->sandbox, false);
		if (b && b->nprocs)
			b->nprocs--;
	}
	pthread_mutex_unlock(&lock);
	/* A SendInput that holds the process writes no more: it finds the
	 * descriptor gone. */
	pthread_mutex_lock(&p->in_lock);
	if (p->in_fd >= 0)
		close(p->in_fd);
	p->in_fd = -1;
	pthread_mutex_unlock(&p->in_lock);
	e2b_procs_put(p);
}

struct e2b_proc *e2b_procs_get(const char *sandbox, unsigned pid,
			       const char *tag)
{
	struct e2b_proc *p;

	pthread_mutex_lock(&lock);
	for (p = procs; p; p = p->next)
		if (!strcmp(p->sandbox, sandbox) &&
		    (tag ? p->tag && !strcmp(p->tag, tag) : p->pid == pid))
			break;
	if (p)
		p->refs++;
	pthread_mutex_unlock(&lock);
	return p;
}

json_t *e2b_procs_list(const char *sandbox)
{
	json_t *list = json_array();

	pthread_mutex_lock(&lock);
	for (struct e2b_proc *p = procs; p; p = p->next) {
		json_t *info;

		if (strcmp(p->sandbox, sandbox) != 0)
			continue;
		/* A copy: a reference count is not the threads' to share. */
		info = xjson_pack("{s:o, s:I}", "config",
				  json_deep_copy(p->config), "pid",
				  (json_int_t)p->pid);
		if (p->tag)
			json_object_set_new(info, "tag", xjson_text(p->tag));
		json_array_append_new(list, info);
	}
	pthread_mutex_unlock(&lock);
	return list;
}

bool e2b_procs_no_bash(const char *sandbox)
{
	struct sbox *b;
	bool no;

	pthread_mutex_lock(&lock);
	b = box_of(sandbox, false);
	no = b && b->no_bash;
	pthread_mutex_unlock(&lock);
	return no;
}

void e2b_procs_no_bash_set(const char *sandbox)
{
	struct sbox *b;

	pthread_mutex_lock(&lock);
	b = box_of(sandbox, true);
	if (b)
		b->no_bash = true;
	pthread_mutex_unlock(&lock);
}

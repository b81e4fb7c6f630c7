/*
 * catalog.h - the runtime catalogue: loading, validation, lookup.
 *
 * catalog_load() reads and validates a catalogue.  It fails (returns -1
 * with *err, status 3) only when the file cannot be read at all; every
 * problem with its content, syntax included, becomes a diagnostic in
 * cat->diags, and the catalogue is usable only when catalog_valid().  The
 * struct catalog owns everything it points to; catalog_release() frees it.
 * Lookups return borrowed pointers that live as long as the catalogue.
 *
 * Thread rule: a loaded catalogue is read-only: any number of threads may
 * read it at once; loading and releasing it are for one.
 */
#ifndef SBX_CATALOG_H
#define SBX_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct sbx_error;

/* A catalogue larger than this is refused unread: it is a mistake. */
#define CATALOG_MAX_BYTES (4u << 20)

struct env_var {
	char *name, *value;
};

struct runtime {
	char *alias;
	char *description;
	char *image;	  /* a ready-made image, or NULL */
	char *base_image; /* built by sbxcat, or NULL */
	char **setup_commands;
	size_t nsetup;
	char **packages;
	size_t npackages;
	struct env_var *env;
	size_t nenv;
	char **briefing;
	size_t nbriefing;
	char *mem_limit; /* NULL: the service default */
	bool needs_network;
};

struct catalog_diag {
	int line, col; /* 0 when the problem has no position */
	int index;     /* entry index, 0-based; -1 for the whole file */
	char *entry;   /* "'alias'" or "$[i]"; NULL for the whole file */
	char *field;   /* "packages[2]", "env_vars.X"; NULL for the entry */
	char *msg;
};

struct catalog {
	char *path;
	struct runtime *rt;
	size_t n;
	struct catalog_diag *diags;
	size_t ndiags, adiags;
};

void catalog_init(struct catalog *cat);
void catalog_release(struct catalog *cat);

int catalog_load(struct catalog *cat, const char *path, struct sbx_error **err);
/* Validate an in-memory document; path is used in messages only. */
void catalog_load_buffer(struct catalog *cat, const char *path, const char *buf,
			 size_t len);

static inline bool catalog_valid(const struct catalog *cat)
{
	return cat->ndiags == 0;
}

/* "FILE:LINE:COL: entry 'a' (#1): 'field': message", newly allocated. */
char *catalog_diag_format(const struct catalog *cat,
			  const struct catalog_diag *d);
/* The diagnostics as a JSON array (new reference). */
json_t *catalog_diags_json(const struct catalog *cat);

const struct runtime *catalog_find(const struct catalog *cat,
				   const char *alias);
/* The first entry is the default runtime. */
static inline const struct runtime *catalog_default(const struct catalog *cat)
{
	return cat->n ? &cat->rt[0] : NULL;
}

/* Field-level checks, exposed for tests.  Each returns NULL when the value
 * is acceptable, else a message (static or newly allocated: free it). */
char *catalog_check_alias(const char *s);
char *catalog_check_image_ref(const char *s);
char *catalog_check_package(const char *s);
char *catalog_check_env_name(const char *s);
char *catalog_check_mem_limit(const char *s);

#endif

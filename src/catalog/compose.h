/*
 * compose.h - the SANDBOXD_RUNTIMES value and its splice into a compose
 * file (brief section 5).
 *
 * The sandbox service takes its runtimes only from SANDBOXD_RUNTIMES, so
 * the value is generated from the catalogue into the tracked compose files.
 * Those files are edited by hand, so the splice rewrites exactly one scalar
 * (the value of SANDBOXD_RUNTIMES in service 'sandboxd') and no other byte,
 * and proves it by parsing the result again before anything is written.
 *
 * This module never prints.  Ownership: compose_value() returns memory the
 * caller frees with free(); a struct compose_result owns its strings and
 * compose_result_release() frees them.  Errors name the file, with
 * LINE:COL (1-based, characters, as an editor counts them) when the
 * problem has a place; status 1 for a file whose content is wrong, 3 when
 * it cannot be read or written.
 *
 * Thread rule: none needed (no state; buffers are the caller's).
 */
#ifndef SBX_COMPOSE_H
#define SBX_COMPOSE_H

#include <stdbool.h>
#include <stddef.h>

struct catalog;
struct sbx_error;

/* The service whose environment holds SANDBOXD_RUNTIMES. */
#define COMPOSE_SERVICE "sandboxd"
#define COMPOSE_KEY "SANDBOXD_RUNTIMES"
#define COMPOSE_NETWORK_KEY "SANDBOXD_NETWORK_MODE"
/* A compose file this large is a mistake, not a deployment. */
#define COMPOSE_MAX_BYTES (4u << 20)

/* The three shipped files, relative to the top of the tree. */
#define COMPOSE_DEFAULT_FILES                                                  \
	"compose/docker-compose.yml", "compose/docker-compose-dev.yml",        \
	    "compose/docker-compose-prod.yml"

/*
 * The value as the service reads it: compact JSON, one member per runtime
 * in catalogue order.  service_bridge says the file's own
 * SANDBOXD_NETWORK_MODE is already "bridge", so entries that need a
 * network get no "network_mode" of their own.  The catalogue must be
 * valid.
 */
char *compose_value(const struct catalog *cat, bool service_bridge);

struct compose_result {
	char *text; /* the whole file with the new value */
	size_t len;
	char *value;	/* the value the service will see ($ not doubled) */
	bool changed;	/* text differs from the input */
	bool list_form; /* "- SANDBOXD_RUNTIMES=..." rather than a mapping */
	bool service_bridge; /* the file's SANDBOXD_NETWORK_MODE is "bridge" */
};

void compose_result_init(struct compose_result *res);
void compose_result_release(struct compose_result *res);

/*
 * Splice the value for cat into the compose text buf (len bytes, path used
 * in messages only).  On success res holds the new text, already parsed
 * again and checked to carry exactly the value.
 */
int compose_splice(const struct catalog *cat, const char *path, const char *buf,
		   size_t len, struct compose_result *res,
		   struct sbx_error **err);

/*
 * The value of SANDBOXD_RUNTIMES in buf as compose passes it on ("$$"
 * read as "$"), newly allocated in *value.  For tests and read-back.
 */
int compose_read(const char *path, const char *buf, size_t len, char **value,
		 struct sbx_error **err);

/*
 * The check compose_splice makes before it returns new text: text, parsed
 * from scratch, must be old's YAML event stream with only the value of
 * SANDBOXD_RUNTIMES changed (same events, values, tags, anchors and
 * styles), that one double-quoted and giving back value.  For tests.
 */
int compose_verify(const char *path, const char *old, size_t oldlen,
		   const char *text, size_t len, const char *value,
		   struct sbx_error **err);

/* Read path and splice (compose_splice). */
int compose_prepare(const struct catalog *cat, const char *path,
		    struct compose_result *res, struct sbx_error **err);

/*
 * Whether path may be replaced: the file must be writable (a file with no
 * write permission bit is refused even for root, who could otherwise
 * replace it) and so must its directory, for the temporary file.
 */
int compose_check_writable(const char *path, struct sbx_error **err);

/*
 * Replace path (through a symbolic link: the link stays a link) with
 * res->text, atomically, keeping its mode.  Does nothing when
 * !res->changed.
 */
int compose_write(const char *path, const struct compose_result *res,
		  struct sbx_error **err);

#endif

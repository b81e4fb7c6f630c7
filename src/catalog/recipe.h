/*
 * recipe.h - Dockerfiles and content-hash tags for built runtimes.
 *
 * The Dockerfile is a pure function of the runtime and the options: the
 * same catalogue always gives the same bytes, so the tag, a hash of those
 * bytes, names the image before anything is built.  Returned strings are
 * newly allocated; the caller frees them.
 *
 * Thread rule: none needed (no state; the catalogue is read only).
 */
#ifndef SBX_RECIPE_H
#define SBX_RECIPE_H

#include <stddef.h>

struct runtime;
struct sbx_error;

#define SANDBOX_UID_DEFAULT 10001ul
#define SANDBOX_HOME "/home/sandbox"
#define SANDBOX_VENV "/opt/sandbox-venv"

struct recipe_opts {
	unsigned long sandbox_uid; /* 0: no unprivileged account */
};

/*
 * Parse a sandbox uid as given by SANDBOXD_SANDBOX_UID or --sandbox-uid:
 * empty or "0" disables the account.  Status 2 for anything else invalid.
 */
int recipe_parse_uid(const char *s, unsigned long *uid, struct sbx_error **err);

/* The Dockerfile of a base_image entry; NULL for an image entry. */
char *recipe_dockerfile(const struct runtime *rt, const struct recipe_opts *o,
			size_t *len);

/* sbxcat/ALIAS:<12 hex of SHA-256 of the Dockerfile>, or the image. */
char *recipe_tag(const struct runtime *rt, const struct recipe_opts *o);
/* The same, from a Dockerfile already made (NULL for an image entry). */
char *recipe_tag_of(const struct runtime *rt, const char *dockerfile,
		    size_t len);

#endif

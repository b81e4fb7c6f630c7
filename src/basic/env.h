/*
 * env.h - the configuration's source: a copy of the environment, taken
 * once at start, that the configuration loaders read.
 *
 * Nothing below cli/ calls getenv(): main takes sbx_env_capture() once,
 * svc_config_load() reads every setting from it into one structure, and
 * the modules are handed their part of that structure.  A test (or the
 * service, for a variable it overrides) builds its own with sbx_env_set.
 *
 * Thread rule: an env is read-only once built; any number of threads may
 * read it at once.  Building it (capture, set) is for one thread.
 */
#ifndef SBX_ENV_H
#define SBX_ENV_H

#include <stddef.h>

struct sbx_env {
	char **vars; /* "NAME=value", sorted by NAME, owned */
	size_t n;
};
#define SBX_ENV_INIT {NULL, 0}

/* A copy of environ (the process's environment now). */
void sbx_env_capture(struct sbx_env *env, char **environ_);
/* Set (or, value NULL, remove) one variable. */
void sbx_env_set(struct sbx_env *env, const char *name, const char *value);
/* The value of name, or NULL when unset (an empty value is ""). */
const char *sbx_env_get(const struct sbx_env *env, const char *name);
/* The value when set and not empty, else NULL. */
const char *sbx_env_nonempty(const struct sbx_env *env, const char *name);
void sbx_env_release(struct sbx_env *env);

#endif

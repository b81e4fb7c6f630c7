/*
 * env.c - the environment's copy of env.h: a sorted array, searched by
 * bisection.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "basic/alloc.h"
#include "basic/env.h"

/* Compare the NAME of "NAME=value" a with name (of length len). */
static int name_cmp(const char *var, const char *name, size_t len)
{
	const char *eq = strchr(var, '=');
	size_t vl = eq ? (size_t)(eq - var) : strlen(var);
	int c = memcmp(var, name, vl < len ? vl : len);

	if (c)
		return c;
	return vl < len ? -1 : vl > len ? 1 : 0;
}

/* The index of name, or where it would go (*found false). */
static size_t find(const struct sbx_env *env, const char *name, int *found)
{
	size_t lo = 0, hi = env->n, len = strlen(name);

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = name_cmp(env->vars[mid], name, len);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void sbx_env_set(struct sbx_env *env, const char *name, const char *value)
{
	int found;
	size_t i = find(env, name, &found);

	if (!value) {
		if (found) {
			free(env->vars[i]);
			memmove(env->vars + i, env->vars + i + 1,
				(env->n - i - 1) * sizeof(*env->vars));
			env->n--;
		}
		return;
	}
	if (found) {
		free(env->vars[i]);
	} else {
		env->vars = xrealloc(env->vars,
				     st_mult(st_add(env->n, 1), sizeof(char *)));
		memmove(env->vars + i + 1, env->vars + i,
			(env->n - i) * sizeof(*env->vars));
		env->n++;
	}
	env->vars[i] = xasprintf("%s=%s", name, value);
}

void sbx_env_capture(struct sbx_env *env, char **environ_)
{
	env->vars = NULL;
	env->n = 0;
	for (char **p = environ_; p && *p; p++) {
		const char *eq = strchr(*p, '=');
		char *name;

		if (!eq || eq == *p)
			continue;
		name = xstrndup(*p, (size_t)(eq - *p));
		/* The first of duplicates wins, as getenv's does. */
		if (!sbx_env_get(env, name))
			sbx_env_set(env, name, eq + 1);
		free(name);
	}
}

const char *sbx_env_get(const struct sbx_env *env, const char *name)
{
	int found;
	size_t i;

	if (!env)
		return NULL;
	i = find(env, name, &found);
	return found ? strchr(env->vars[i], '=') + 1 : NULL;
}

const char *sbx_env_nonempty(const struct sbx_env *env, const char *name)
{
	const char *v = sbx_env_get(env, name);

	return v && *v ? v : NULL;
}

void sbx_env_release(struct sbx_env *env)
{
	for (size_t i = 0; i < env->n; i++)
		free(env->vars[i]);
	free(env->vars);
	env->vars = NULL;
	env->n = 0;
}

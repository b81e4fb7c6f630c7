/*
 * walk.c - bounded breadth-first listings of a workspace and the glob
 * matcher (walk.h).  Never prints.
 *
 * Every directory is opened with workspace_openat() relative to the held
 * workspace descriptor, so a directory the sandbox swaps for a symlink
 * between two levels is refused by the kernel (RESOLVE_BENEATH, and
 * O_NOFOLLOW on the last component below the start), never followed.
 * Entries are lstat'ed through the directory's own descriptor.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/alloc.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/text.h"
#include "workspace/walk.h"
#include "workspace/workspace.h"

const char *walk_type_name(enum walk_type t)
{
	switch (t) {
	case WALK_FILE:
		return "file";
	case WALK_DIR:
		return "dir";
	case WALK_SYMLINK:
		return "symlink";
	case WALK_OTHER:
		break;
	}
	return "other";
}

/* ".sbxcat-" and 6 characters: a temporary of workspace_write. */
static bool is_temporary(const char *name)
{
	return strncmp(name, ".sbxcat-", 8) == 0 && strlen(name) == 14;
}

/* A short reason for an entry that could not be listed or read. */
static const char *problem_why(int errnum)
{
	switch (errnum) {
	case EACCES:
	case EPERM:
		return "permission denied";
	case ENOENT:
		return "it disappeared meanwhile";
	case ENOTDIR:
	case ELOOP:
		return "it was replaced by a symlink or a file meanwhile";
	case EXDEV:
		return "it leads outside the workspace or onto another mount";
	case EAGAIN:
		return "it was renamed meanwhile";
	case EMFILE:
	case ENFILE:
		return "too many open files";
	default:
		return NULL;
	}
}

void walk_problem_add(struct walk_problem **v, size_t *n, size_t *alloc,
		      const char *path, int errnum, const char *msg)
{
	const char *why = problem_why(errnum);
	struct walk_problem *p;

	ALLOC_GROW(*v, *n + 1, *alloc);
	p = &(*v)[(*n)++];
	p->path = xstrdup(path);
	if (why)
		p->why = xstrdup(why);
	else if (errnum)
		p->why = xstrdup(strerror(errnum));
	else
		p->why = xstrdup(msg ? msg : "cannot be read");
}

void walk_problems_free(struct walk_problem *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].why);
	}
	free(v);
}

static void add_problem(struct walk_result *res, const char *path, int errnum,
			const char *msg)
{
	walk_problem_add(&res->problems, &res->nproblems, &res->aproblems,
			 path, errnum, msg);
}

struct dirq {
	char *path;
	unsigned depth; /* of the directory itself; 0 for the start */
};

struct names {
	char **v;
	size_t n, alloc;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Keep only the keep smallest names: a hostile directory of millions of
 * entries costs at most 2 * keep names of memory, not one per entry.
 */
static void names_trim(struct names *nm, size_t keep)
{
	if (nm->n > 1) /* qsort(NULL, 0) is undefined */
		qsort(nm->v, nm->n, sizeof(*nm->v), cmp_name);
	while (nm->n > keep)
		free(nm->v[--nm->n]);
}

static void names_release(struct names *nm)
{
	strv_free(nm->v, nm->n);
	memset(nm, 0, sizeof(*nm));
}

/* Whether a name in directory dir is reported at all. */
static bool name_listed(const struct walk_opts *o, const char *dir,
			const char *name)
{
	if (is_temporary(name))
		return false;
	if (name[0] == '.' && !o->hidden)
		return false;
	if (*dir == '\0' && !o->all &&
	    (strcmp(name, "skills") == 0 ||
	     (o->spill && *o->spill && strcmp(name, o->spill) == 0)))
		return false;
	return true;
}

/* The name, then its NUL, then its d_type in the byte after. */
static char *name_with_type(const char *name, unsigned char type)
{
	size_t len = strlen(name);
	char *v = xmalloc(st_add(len, 2));

	memcpy(v, name, len + 1);
	v[len + 1] = (char)type;
	return v;
}

/*
 * The lstat of name, or (types_only) what readdir said of it when that
 * is enough: a file system that gives d_type spares a system call per
 * entry.  A directory is always stat'ed, for its device (another mount
 * is not descended).  -1 when it is gone.
 */
static int entry_stat(const struct workspace *w, const struct walk_opts *o,
		      int dfd, const char *name, struct stat *st)
{
	unsigned char dt = (unsigned char)name[strlen(name) + 1];

	if (!o->types_only || dt == DT_DIR || dt == DT_UNKNOWN)
		return fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW);
	memset(st, 0, sizeof(*st));
	st->st_dev = w->dev;
	st->st_mode = dt == DT_REG ? S_IFREG : dt == DT_LNK ? S_IFLNK : S_IFIFO;
	return 0;
}

/* A cancel, the deadline or the caller's stop. */
static bool must_stop(const struct workspace *w, const struct walk_opts *o)
{
	return workspace_cancelled(w) ||
	       (o->deadline_ms && clock_now_ms() >= o->deadline_ms) ||
	       (o->stop && o->stop(o->ctx));
}

#define STOPPED (-2)

/*
 * Read the names of the directory d, sorted, at most keep of them (the
 * smallest).  -1 with errno on a read error; STOPPED when must_stop said
 * so (a directory of millions of names takes seconds to read).
 */
static int read_names(const struct workspace *w, DIR *d,
		      const struct walk_opts *o, const char *dir, size_t keep,
		      struct names *nm)
{
	struct dirent *de;
	size_t seen = 0;

	if (keep > SIZE_MAX / 4)
		keep = SIZE_MAX / 4;
	for (;;) {
		if (++seen % 4096 == 0 && must_stop(w, o))
			return STOPPED;
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    !name_listed(o, dir, de->d_name))
			continue;
		ALLOC_GROW(nm->v, nm->n + 1, nm->alloc);
		nm->v[nm->n++] = name_with_type(de->d_name, de->d_type);
		if (nm->n >= 2 * keep + 16)
			names_trim(nm, keep);
	}
	if (errno)
		return -1;
	names_trim(nm, keep);
	return 0;
}

/* fdopendir, closing fd when it fails. */
static DIR *open_dirstream(int fd)
{
	DIR *d = fdopendir(fd);

	if (!d) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return d;
}

static char *join(const char *dir, const char *name)
{
	return *dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
}

static void fill_entry(struct walk_entry *e, char *path, const struct stat *st,
		       unsigned depth)
{
	const char *slash = strrchr(path, '/');

	memset(e, 0, sizeof(*e));
	e->path = path;
	e->name = slash ? slash + 1 : path;
	if (S_ISREG(st->st_mode))
		e->type = WALK_FILE;
	else if (S_ISDIR(st->st_mode))
		e->type = WALK_DIR;
	else if (S_ISLNK(st->st_mode))
		e->type = WALK_SYMLINK;
	else
		e->type = WALK_OTHER;
	e->size = (unsigned long long)st->st_size;
	e->mtime = (long long)st->st_mtime;
	e->mode = (unsigned)(st->st_mode & 07777);
	e->depth = depth;
	e->upload = strncmp(path, "uploads/", 8) == 0;
}

/* Open a directory found by the walk: beneath, its last component not a
 * symlink (one swapped in since it was listed is refused, ELOOP). */
static int open_dir(const struct workspace *w, const char *rel, bool start,
		    const char *shown, struct sbx_error **err)
{
	return workspace_openat(w, rel,
				O_RDONLY | O_DIRECTORY | (start ? 0 : O_NOFOLLOW),
				0, 0, shown, err);
}

/* Whether the directory rel has an entry the walk would report. */
static bool dir_has_entries(const struct workspace *w, const char *rel,
			    const struct walk_opts *o)
{
	struct sbx_error *e = NULL;
	int fd = open_dir(w, rel, false, rel, &e);
	struct dirent *de;
	DIR *d;

	sbx_error_free(&e);
	if (fd < 0)
		return false;
	d = open_dirstream(fd);
	if (!d)
		return false;
	/* The first name the walk would report answers it. */
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    name_listed(o, rel, de->d_name))
			break;
	closedir(d);
	return de != NULL;
}

static void set_entries_bound(struct walk_result *res)
{
	res->truncated = true;
	res->why = "entries";
}

/*
 * List one directory (fd, consumed) at depth d (its entries are d + 1):
 * append its entries, queue the directories to descend.  Returns false
 * when the entries bound stopped the walk.
 */
static bool list_dir(const struct workspace *w, const char *dir, int fd,
		     unsigned d, const struct walk_opts *o, size_t max_entries,
		     struct walk_result *res,
		     struct dirq **next, size_t *nnext, size_t *anext)
{
	struct names nm = {0};
	size_t left = max_entries - res->visited;
	DIR *dstream = open_dirstream(fd);
	bool more = true;
	int dfd;

	if (!dstream) {
		add_problem(res, dir, errno, NULL);
		return true;
	}
	switch (read_names(w, dstream, o, dir, left + 1, &nm)) {
	case STOPPED:
		res->stopped = true;
		names_release(&nm);
		closedir(dstream);
		return false;
	case -1:
		add_problem(res, dir, errno, NULL);
		names_release(&nm);
		closedir(dstream);
		return true;
	}
	dfd = dirfd(dstream);
	for (size_t i = 0; i < nm.n; i++) {
		struct walk_entry e;
		struct stat st;
		bool keep, descend;

		if (entry_stat(w, o, dfd, nm.v[i], &st) < 0)
			continue; /* gone since it was read */
		if (res->visited >= max_entries) {
			set_entries_bound(res);
			more = false;
			break;
		}
		res->visited++;
		fill_entry(&e, join(dir, nm.v[i]), &st, d + 1);
		descend = o->recursive && e.type == WALK_DIR &&
			  st.st_dev == w->dev;
		keep = o->want ? o->want(o->ctx, &e, &descend) : true;
		if (descend) {
			ALLOC_GROW(*next, *nnext + 1, *anext);
			(*next)[*nnext].path = xstrdup(e.path);
			(*next)[(*nnext)++].depth = d + 1;
		}
		if (keep) {
			ALLOC_GROW(res->v, res->n + 1, res->alloc);
			res->v[res->n++] = e;
		} else {
			free(e.path);
		}
	}
	names_release(&nm);
	closedir(dstream);
	return more;
}

static void dirq_free(struct dirq *q, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(q[i].path);
	free(q);
}

static int cancelled(const struct workspace *w, const char *shown,
		     struct sbx_error **err)
{
	struct strbuf sb = STRBUF_INIT;
	int r;

	text_add_escaped(&sb, shown, strlen(shown));
	r = sbx_error_set(err, SBX_E_CANCELLED, 0,
			  "interrupted by signal %d while listing '%s'",
			  workspace_cancelled(w), strbuf_str(&sb));
	strbuf_release(&sb);
	return r;
}

static int not_a_directory(struct sbx_error **err, const char *shown)
{
	struct strbuf sb = STRBUF_INIT;
	int r;

	text_add_escaped(&sb, shown, strlen(shown));
	r = sbx_error_set(err, SBX_E_REFUSED, 0, "'%s' is not a directory",
			  strbuf_str(&sb));
	sbx_error_why(*err, SBX_R_NOT_A_DIRECTORY, 0, 0);
	strbuf_release(&sb);
	return r;
}

int walk_run(const struct workspace *w, const char *start, const char *shown,
	     const struct walk_opts *opts, struct walk_result *res,
	     struct sbx_error **err)
{
	struct walk_opts o = *opts;
	size_t max_entries = o.max_entries ? o.max_entries : WALK_ENTRIES_DEFAULT;
	unsigned max_depth = o.max_depth ? o.max_depth : WALK_DEPTH_DEFAULT;
	struct dirq *cur = NULL, *next = NULL;
	size_t ncur = 0, nnext = 0, anext = 0;
	struct stat st;
	int pfd, fd;

	memset(res, 0, sizeof(*res));
	if (!shown)
		shown = *start ? start : ".";
	pfd = workspace_openat(w, start, O_PATH, 0, 0, shown, err);
	if (pfd < 0)
		return -1;
	if (fstat(pfd, &st) < 0) {
		int e = errno;

		close(pfd);
		return sbx_error_set(err, SBX_E_UNAVAILABLE, e, "cannot stat '%s'",
				     shown);
	}
	if (!S_ISDIR(st.st_mode)) {
		close(pfd);
		if (!S_ISREG(st.st_mode) || o.recursive)
			return not_a_directory(err, shown);
		ALLOC_GROW(res->v, 1, res->alloc);
		fill_entry(&res->v[0], xstrdup(start), &st, 1);
		res->n = res->visited = 1;
		return 0;
	}
	/* Reopen that very directory for reading (O_PATH cannot be read). */
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		close(pfd);
		return sbx_error_set(err, e == ENOENT ? SBX_E_NOT_FOUND : SBX_E_REFUSED, e, "cannot list '%s'",
				     shown);
	}
	close(pfd);

	if (!list_dir(w, start, fd, 0, &o, max_entries, res, &next,
		      &nnext, &anext))
		goto out;
	for (unsigned level = 1; nnext > 0; level++) {
		dirq_free(cur, ncur);
		cur = next;
		ncur = nnext;
		next = NULL;
		nnext = anext = 0;
		if (level >= max_depth) {
			/* Only a directory that has entries is cut off. */
			for (size_t i = 0; i < ncur; i++) {
				if (must_stop(w, &o)) {
					res->stopped = true;
					goto out;
				}
				if (dir_has_entries(w, cur[i].path, &o)) {
					res->truncated = true;
					res->why = "depth";
					break;
				}
			}
			break;
		}
		for (size_t i = 0; i < ncur; i++) {
			struct sbx_error *e = NULL;

			if (must_stop(w, &o)) {
				res->stopped = true;
				goto out;
			}
			fd = open_dir(w, cur[i].path, false, cur[i].path, &e);
			if (fd < 0) {
				add_problem(res, cur[i].path, e ? e->errnum : 0,
					    e ? e->msg : NULL);
				sbx_error_free(&e);
				continue;
			}
			if (!list_dir(w, cur[i].path, fd, cur[i].depth, &o,
				      max_entries, res, &next,
				      &nnext, &anext))
				goto out;
		}
	}
out:
	dirq_free(cur, ncur);
	dirq_free(next, nnext);
	if (res->stopped && workspace_cancelled(w))
		return cancelled(w, shown, err);
	return 0;
}

void walk_result_release(struct walk_result *res)
{
	for (size_t i = 0; i < res->n; i++)
		free(res->v[i].path);
	free(res->v);
	walk_problems_free(res->problems, res->nproblems);
	memset(res, 0, sizeof(*res));
}

/*
 * Glob matching.  The pattern is split into components at '/'; a
 * component that is exactly "**" (a globstar) matches zero or more whole
 * path components, any other is a list of tokens matched against one
 * path component.  One component is matched by the classic two-pointer
 * algorithm that remembers only the last '*' (correct because every other
 * token takes exactly one byte): O(len(p) * len(s)) at worst.  The
 * components are matched by a set of states (how many pattern components
 * the path so far can have consumed), one step per path component, so
 * no combination of '*' and '**' backtracks exponentially.
 */
enum gkind { G_LIT, G_ANY, G_STAR, G_CLASS, G_NEVER };

struct gtok {
	unsigned char kind, c;
	unsigned cls; /* index into gpat.cls */
};

struct gcomp {
	bool globstar;
	size_t start, n; /* tokens tok[start .. start + n) */
};

struct gpat {
	struct gtok *tok;
	size_t ntok, atok;
	unsigned char (*cls)[32];
	size_t ncls, acls;
	struct gcomp *comp;
	size_t ncomp, acomp;
	const char *error;
};

static void gpat_release(struct gpat *g)
{
	free(g->tok);
	free(g->cls);
	free(g->comp);
}

static struct gtok *gpat_tok(struct gpat *g, enum gkind kind, int c)
{
	struct gtok *t;

	ALLOC_GROW(g->tok, g->ntok + 1, g->atok);
	t = &g->tok[g->ntok++];
	t->kind = (unsigned char)kind;
	t->c = (unsigned char)c;
	t->cls = 0;
	return t;
}

/*
 * Parse a class at p[0] == '[' within p[0..end): the tokens' end or NULL
 * when it is not terminated (then '[' is a literal).
 */
static const char *parse_class(struct gpat *g, const char *p, const char *end)
{
	const char *q = p + 1;
	unsigned char set[32] = {0};
	bool neg = false, first = true;
	struct gtok *t;

	if (q < end && (*q == '!' || *q == '^')) {
		neg = true;
		q++;
	}
	for (;;) {
		unsigned char lo, hi;

		if (q >= end)
			return NULL;
		if (*q == ']' && !first)
			break;
		first = false;
		if (*q == '\\') {
			if (++q >= end)
				return NULL;
		}
		lo = (unsigned char)*q++;
		hi = lo;
		if (q + 1 < end && *q == '-' && q[1] != ']') {
			q++;
			if (*q == '\\' && ++q >= end)
				return NULL;
			hi = (unsigned char)*q++;
		}
		for (unsigned c = lo; c <= hi; c++)
			set[c / 8] |= (unsigned char)(1u << (c % 8));
	}
	if (neg)
		for (size_t i = 0; i < sizeof(set); i++)
			set[i] = (unsigned char)~set[i];
	ALLOC_GROW(g->cls, g->ncls + 1, g->acls);
	memcpy(g->cls[g->ncls], set, sizeof(set));
	t = gpat_tok(g, G_CLASS, 0);
	t->cls = (unsigned)g->ncls++;
	return q + 1;
}

static void gpat_compile(struct gpat *g, const char *pattern)
{
	const char *p = pattern;

	memset(g, 0, sizeof(*g));
	for (;;) {
		const char *end = p;
		struct gcomp *c;

		/* The component's end: the next '/' not escaped. */
		while (*end && *end != '/') {
			if (*end == '\\' && end[1])
				end++;
			end++;
		}
		ALLOC_GROW(g->comp, g->ncomp + 1, g->acomp);
		c = &g->comp[g->ncomp++];
		c->start = g->ntok;
		c->globstar = end - p == 2 && p[0] == '*' && p[1] == '*';
		while (!c->globstar && p < end) {
			const char *q;

			switch (*p) {
			case '*':
				if (g->ntok == c->start ||
				    g->tok[g->ntok - 1].kind != G_STAR)
					gpat_tok(g, G_STAR, 0);
				p++;
				break;
			case '?':
				gpat_tok(g, G_ANY, 0);
				p++;
				break;
			case '[':
				q = parse_class(g, p, end);
				if (!q) {
					g->error = "unterminated [ class";
					gpat_tok(g, G_LIT, '[');
					p++;
				} else {
					p = q;
				}
				break;
			case '\\':
				if (p + 1 < end) {
					gpat_tok(g, G_LIT, p[1]);
					p += 2;
				} else {
					/* As fnmatch: a trailing '\' loses. */
					g->error = "a '\\' at the end escapes nothing";
					gpat_tok(g, G_NEVER, 0);
					p++;
				}
				break;
			default:
				gpat_tok(g, G_LIT, *p);
				p++;
			}
		}
		c->n = g->ntok - c->start;
		if (!*end)
			break;
		p = end + 1;
	}
}

static bool tok_one(const struct gpat *g, const struct gtok *t, unsigned char c)
{
	switch (t->kind) {
	case G_LIT:
		return t->c == c;
	case G_ANY:
		return true;
	case G_CLASS:
		return g->cls[t->cls][c / 8] & (1u << (c % 8));
	default:
		return false;
	}
}

/* One pattern component against one path component s[0..n). */
static bool seg_match(const struct gpat *g, const struct gcomp *c,
		      const char *s, size_t n, bool hidden)
{
	const struct gtok *t = g->tok + c->start;
	size_t nt = c->n, ti = 0, si = 0, star_t = SIZE_MAX, star_s = 0;

	if (n > 0 && s[0] == '.' && !hidden) {
		/* A leading '.' is matched only by a literal '.'. */
		if (nt == 0 || t[0].kind != G_LIT || t[0].c != '.')
			return false;
		ti = si = 1;
	}
	while (si < n) {
		if (ti < nt && t[ti].kind == G_STAR) {
			star_t = ti++;
			star_s = si;
		} else if (ti < nt && tok_one(g, &t[ti], (unsigned char)s[si])) {
			ti++;
			si++;
		} else if (star_t != SIZE_MAX) {
			ti = star_t + 1;
			si = ++star_s;
		} else {
			return false;
		}
	}
	while (ti < nt && t[ti].kind == G_STAR)
		ti++;
	return ti == nt;
}

/* A "**" stays on a state or skips it. */
static void closure(const struct gpat *g, bool *st)
{
	for (size_t i = 0; i < g->ncomp; i++)
		if (st[i] && g->comp[i].globstar)
			st[i + 1] = true;
}

/*
 * Run the path's components through the pattern: st[i] (i = 0 ..
 * ncomp) says whether the path can have consumed i pattern components.
 * False when no state is left.
 */
static bool run_states(const struct gpat *g, const char *path, bool hidden,
		       bool *st, bool *nx)
{
	const char *s = path;
	size_t m = g->ncomp;
	bool any = true;

	memset(st, 0, m + 1);
	st[0] = true;
	closure(g, st);
	while (*s && any) {
		const char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);
		bool visible = hidden || n == 0 || s[0] != '.';

		memset(nx, 0, m + 1);
		any = false;
		for (size_t i = 0; i < m; i++) {
			if (!st[i])
				continue;
			if (g->comp[i].globstar) {
				if (visible)
					nx[i] = any = true;
			} else if (seg_match(g, &g->comp[i], s, n, hidden)) {
				nx[i + 1] = any = true;
			}
		}
		closure(g, nx);
		memcpy(st, nx, m + 1);
		s = *e ? e + 1 : e;
	}
	return any;
}

static bool glob_states(const char *pattern, const char *path, bool hidden,
			bool descend)
{
	struct gpat g;
	bool *st, *nx, r = false;

	gpat_compile(&g, pattern);
	st = xcalloc(g.ncomp + 1, 2);
	nx = st + g.ncomp + 1;
	if (run_states(&g, path, hidden, st, nx)) {
		if (!descend) {
			r = st[g.ncomp];
		} else {
			for (size_t i = 0; i < g.ncomp && !r; i++)
				r = st[i];
		}
	}
	free(st);
	gpat_release(&g);
	return r;
}

bool glob_match(const char *pattern, const char *path, bool hidden)
{
	return glob_states(pattern, path, hidden, false);
}

bool glob_may_descend(const char *pattern, const char *dir, bool hidden)
{
	return glob_states(pattern, dir, hidden, true);
}

const char *glob_check(const char *pattern)
{
	struct gpat g;
	const char *e;

	if (!*pattern)
		return "the pattern is empty";
	gpat_compile(&g, pattern);
	e = g.error;
	gpat_release(&g);
	return e;
}

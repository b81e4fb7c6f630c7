/*
 * t-tar.c - the ustar writer against GNU tar: `tar -tvf` lists exactly
 * the entries, owners, modes, sizes and the fixed date; extracting gives
 * back the same bytes and modes; the same files in any order give the same
 * archive, whatever size the pieces it is read in.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/error.h"
#include "tap.h"
#include "engine/tar.h"
#include "basic/util.h"

struct file {
	const char *name;
	unsigned mode, want_mode;
	size_t len;
	char *data;
};

static char long_dir_name[200], long_name[101];

static struct file files[] = {
    {"zeta.txt", 0600, 0644, 5, NULL},
    {"Dockerfile", 0644, 0644, 95, NULL},
    {"bin/run.sh", 0700, 0755, 1000, NULL},
    {"empty", 0644, 0644, 0, NULL},
    {"exact512", 0755, 0755, 512, NULL},
    {long_name, 0644, 0644, 3, NULL},	  /* 100 bytes: fills the field */
    {long_dir_name, 0644, 0644, 7, NULL}, /* needs the prefix field */
    {"a/b/c/d.bin", 0644, 0644, 70000, NULL},
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static void make_files(void)
{
	memset(long_name, 'n', 100);
	long_name[100] = '\0';
	/* 120 bytes of directory, '/', 60 of name: 181 in all. */
	memset(long_dir_name, 'd', 120);
	long_dir_name[120] = '/';
	memset(long_dir_name + 121, 'f', 60);
	long_dir_name[181] = '\0';
	for (size_t i = 0; i < NFILES; i++) {
		files[i].data = xmalloc(files[i].len ? files[i].len : 1);
		for (size_t k = 0; k < files[i].len; k++)
			files[i].data[k] = (char)((k * 7 + i * 13) & 0xff);
	}
}

static void add_all(struct tar *t, bool reverse)
{
	struct sbx_error *err = NULL;
	for (size_t k = 0; k < NFILES; k++) {
		size_t i = reverse ? NFILES - 1 - k : k;
		if (tar_add(t, files[i].name, files[i].data, files[i].len,
			    files[i].mode, &err) < 0)
			bail_out("tar_add %s: %s", files[i].name, err->msg);
	}
	tar_finish(t);
}

/* Read the whole archive in pieces of `piece` bytes. */
static char *read_all(struct tar *t, size_t piece, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	char *buf = xmalloc(piece);
	size_t n;

	tar_rewind(t);
	for (;;) {
		n = tar_read(t, buf, piece);
		if (n == 0)
			break;
		strbuf_add(&sb, buf, n);
	}
	free(buf);
	return strbuf_detach(&sb, len);
}

static char *run(const char *cmd)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	FILE *f = popen(cmd, "r");

	if (!f)
		bail_out("popen %s", cmd);
	for (;;) {
		n = fread(buf, 1, sizeof(buf), f);
		if (n == 0)
			break;
		strbuf_add(&sb, buf, n);
	}
	if (pclose(f) != 0)
		diag("'%s' failed", cmd);
	return strbuf_detach(&sb, NULL);
}

static int cmp_name(const void *a, const void *b)
{
	const struct file *x = *(const struct file *const *)a;
	const struct file *y = *(const struct file *const *)b;
	return strcmp(x->name, y->name);
}

static void test_refusals(void)
{
	static const char *const bad[] = {
	    "", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a/", "a/.",
	};
	struct sbx_error *err = NULL;
	struct tar t;
	char toolong[102], noslash[300];

	tar_init(&t);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(tar_add(&t, bad[i], "x", 1, 0644, &err) < 0 && err &&
		       tap_status(err) == 1,
		   "refused name '%s'", bad[i]);
		sbx_error_free(&err);
	}
	memset(toolong, 'x', 101);
	toolong[101] = '\0';
	ok(tar_add(&t, toolong, "x", 1, 0644, &err) < 0,
	   "a 101-byte name with no '/' is refused");
	sbx_error_free(&err);
	memset(noslash, 'p', 200);
	noslash[200] = '/';
	strcpy(noslash + 201, "f");
	ok(tar_add(&t, noslash, "x", 1, 0644, &err) < 0,
	   "a prefix over 155 bytes is refused");
	sbx_error_free(&err);
	ok(tar_add(&t, "same", "x", 1, 0644, &err) == 0,
	   "a first 'same' is added");
	ok(tar_add(&t, "same", "y", 1, 0644, &err) < 0,
	   "a second 'same' is refused");
	is_str(err ? err->msg : NULL, "cannot add 'same' to the archive twice",
	       "the duplicate's message");
	sbx_error_free(&err);
	tar_release(&t);
}

/*
 * Clashes: in any order, a name that another entry's path makes a
 * directory (or the reverse) is refused; names that only share a prefix
 * of characters are not clashes.  Every pair of the names below, added
 * both ways round, is checked against a model: clash when one is the
 * other plus "/" and more.
 */
static void test_clashes(void)
{
	static const char *const names[] = {
	    "a",   "a/b",   "a/b/c", "a/bc", "ab",	"a.b",	   "a-",
	    "b/a", "a/b/d", "x/y",   "x",    "x/y/z/w", "a/b/c/d",
	};
	const size_t n = sizeof(names) / sizeof(names[0]);
	struct sbx_error *err = NULL;
	bool model = true, msg = true;
	size_t pairs = 0;

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < n; k++) {
			struct tar t;
			size_t li = strlen(names[i]), lk = strlen(names[k]);
			bool want_refused =
			    i == k ||
			    (li < lk && strncmp(names[i], names[k], li) == 0 &&
			     names[k][li] == '/') ||
			    (lk < li && strncmp(names[k], names[i], lk) == 0 &&
			     names[i][lk] == '/');
			bool refused;

			tar_init(&t);
			if (tar_add(&t, names[i], "1", 1, 0644, &err) < 0)
				bail_out("first add %s: %s", names[i],
					 err->msg);
			refused = tar_add(&t, names[k], "2", 1, 0644, &err) < 0;
			if (refused != want_refused) {
				diag("'%s' then '%s': %s", names[i], names[k],
				     refused ? "refused" : "added");
				model = false;
			}
			if (refused && i != k &&
			    (!err || !strstr(err->msg, "a file and a "
						       "directory"))) {
				diag("message: %s", err ? err->msg : "(none)");
				msg = false;
			}
			sbx_error_free(&err);
			tar_release(&t);
			pairs++;
		}
	}
	ok(model,
	   "clashes: %zu ordered pairs refused exactly when one "
	   "path is under the other or they are the same",
	   pairs);
	ok(msg, "clashes: the message says a path cannot be a file and a "
		"directory");
	{
		struct tar t;
		tar_init(&t);
		tar_add(&t, "a/b", "x", 1, 0644, &err);
		ok(tar_add(&t, "a", "y", 1, 0644, &err) < 0,
		   "a file 'a' after 'a/b' is refused");
		is_str(err ? err->msg : NULL,
		       "cannot add 'a' to the archive: 'a/b' is in it, and a "
		       "path cannot be a file and a directory",
		       "the clash names both entries");
		sbx_error_free(&err);
		tar_release(&t);
	}
}

int main(void)
{
	char dir[] = "/tmp/t-tar.XXXXXX";
	cleanup_free char *path = NULL, *cmd = NULL, *listing = NULL;
	struct strbuf want = STRBUF_INIT;
	struct tar t, t2, empty;
	char *whole, *again, *bytewise, *odd;
	size_t len, len2, len3, len4;
	const struct file *sorted[NFILES];
	bool ends_zero = true;
	FILE *f;

	make_files();
	if (!mkdtemp(dir))
		bail_out("mkdtemp");

	tar_init(&t);
	add_all(&t, false);
	whole = read_all(&t, 1 << 20, &len);
	is_int((long long)len, (long long)tar_size(&t),
	       "tar_size is what is read");
	is_int((long long)(len % 512), 0,
	       "the archive is whole 512-byte blocks");
	for (size_t i = len - 1024; i < len; i++)
		ends_zero = ends_zero && whole[i] == '\0';
	ok(ends_zero, "the archive ends with two zero blocks");
	ok(memcmp(whole + 257,
		  "ustar\0"
		  "00",
		  8) == 0,
	   "the first header is ustar 00");
	is_str(whole, "Dockerfile",
	       "entries are sorted: 'Dockerfile' comes first");
	ok(memcmp(whole + 136, "00000000000", 11) == 0, "mtime is 0");

	bytewise = read_all(&t, 1, &len3);
	ok(len3 == len && memcmp(bytewise, whole, len) == 0,
	   "read a byte at a time: the same bytes");
	odd = read_all(&t, 333, &len4);
	ok(len4 == len && memcmp(odd, whole, len) == 0,
	   "read 333 bytes at a time: the same bytes");

	tar_init(&t2);
	add_all(&t2, true);
	again = read_all(&t2, 4096, &len2);
	ok(len2 == len && memcmp(again, whole, len) == 0,
	   "the same files added in another order: the same bytes");

	tar_init(&empty);
	tar_finish(&empty);
	is_int((long long)tar_size(&empty), 1024,
	       "an empty archive is two zero blocks");

	path = xasprintf("%s/ctx.tar", dir);
	f = fopen(path, "wb");
	if (!f || fwrite(whole, 1, len, f) != len || fclose(f) != 0)
		bail_out("cannot write %s", path);

	/* tar -tvf: one line per entry, sorted, root/root, fixed date. */
	for (size_t i = 0; i < NFILES; i++)
		sorted[i] = &files[i];
	qsort(sorted, NFILES, sizeof(sorted[0]), cmp_name);
	for (size_t i = 0; i < NFILES; i++)
		strbuf_addf(&want, "%s root/root %zu 1970-01-01 00:00 %s\n",
			    sorted[i]->want_mode == 0755 ? "-rwxr-xr-x"
							 : "-rw-r--r--",
			    sorted[i]->len, sorted[i]->name);
	cmd = xasprintf("TZ=UTC LC_ALL=C tar -tvf '%s' 2>&1 | tr -s ' '", path);
	listing = run(cmd);
	is_str(listing, strbuf_str(&want),
	       "tar -tvf lists every entry as written");
	free(cmd);
	free(listing);
	cmd = xasprintf("LC_ALL=C tar --numeric-owner -tvf '%s' 2>&1 | "
			"awk '{print $2}' | sort -u",
			path);
	listing = run(cmd);
	is_str(listing, "0/0\n", "uid and gid are 0");

	/* Round trip: GNU tar extracts the same bytes and modes. */
	free(cmd);
	cmd = xasprintf("mkdir '%s/out' && tar -xf '%s' -C '%s/out' 2>&1", dir,
			path, dir);
	free(listing);
	listing = run(cmd);
	is_str(listing, "", "GNU tar extracts it without a warning");
	for (size_t i = 0; i < NFILES; i++) {
		cleanup_free char *p =
		    xasprintf("%s/out/%s", dir, files[i].name);
		char *data = NULL;
		size_t dlen = 0;
		struct stat st;
		bool same =
		    read_file_limited(p, 1 << 20, &data, &dlen, NULL) == 0 &&
		    dlen == files[i].len &&
		    memcmp(data, files[i].data, dlen) == 0;
		ok(same, "round trip: '%.40s' has the same %zu bytes",
		   files[i].name, files[i].len);
		is_int(stat(p, &st) == 0 ? (long long)(st.st_mode & 07777) : -1,
		       files[i].want_mode, "round trip: '%.40s' has mode %o",
		       files[i].name, files[i].want_mode);
		free(data);
	}

	test_refusals();
	test_clashes();

	free(cmd);
	cmd = xasprintf("rm -rf '%s'", dir);
	free(run(cmd));
	free(whole);
	free(again);
	free(bytewise);
	free(odd);
	strbuf_release(&want);
	tar_release(&t);
	tar_release(&t2);
	tar_release(&empty);
	for (size_t i = 0; i < NFILES; i++)
		free(files[i].data);
	return done_testing();
}

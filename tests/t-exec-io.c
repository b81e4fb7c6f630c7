/*
 * t-exec-io.c - the client side of an exec's hijacked connection, with
 * no engine: the frame decoder cut at every byte and fuzzed, and
 * exec_io_run()/exec_io_drain() over a socketpair whose other end a
 * thread plays with real frames (echoing stdin while it reads it, going
 * silent, closing without reading, writing more than the cap).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/alloc.h"
#include "engine/engine.h"
#include "basic/error.h"
#include "exec/exec-io.h"
#include "tap.h"

/* ---- the decoder ---- */

struct got {
	struct strbuf s[2];
	size_t calls;
	size_t fail_at; /* sink fails on this call (1-based), 0: never */
};

static int collect(void *ctx, int stream, const char *p, size_t len)
{
	struct got *g = ctx;
	if (++g->calls == g->fail_at)
		return -1;
	if (stream != EXEC_IO_STDOUT && stream != EXEC_IO_STDERR)
		return -1;
	strbuf_add(&g->s[stream], p, len);
	return 0;
}

static void got_release(struct got *g)
{
	strbuf_release(&g->s[0]);
	strbuf_release(&g->s[1]);
}

static void frame(struct strbuf *sb, int type, const void *p, size_t len)
{
	unsigned char h[8] = {(unsigned char)type, 0, 0, 0,
			      (unsigned char)(len >> 24),
			      (unsigned char)(len >> 16),
			      (unsigned char)(len >> 8), (unsigned char)len};
	strbuf_add(sb, h, 8);
	strbuf_add(sb, p, len);
}

/* Feed in pieces cut at the given offsets; 0 or -1 as the decoder said. */
static int feed_cut(const char *s, size_t n, const size_t *cuts, size_t ncuts,
		    struct got *g)
{
	struct exec_frames f = {0};
	size_t at = 0;

	for (size_t i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : n;
		if (exec_frames_feed(&f, s + at, to - at, collect, g) < 0)
			return -1;
		at = to;
	}
	return 0;
}

static bool same(const struct got *g, const char *o, const char *e)
{
	return strcmp(g->s[0].buf ? g->s[0].buf : "", o) == 0 &&
	       strcmp(g->s[1].buf ? g->s[1].buf : "", e) == 0;
}

static void test_decoder(void)
{
	struct strbuf st = STRBUF_INIT;
	struct got g = {{STRBUF_INIT, STRBUF_INIT}, 0, 0};
	bool all = true;
	int rc;

	frame(&st, 1, "hello ", 6);
	frame(&st, 2, "oops\n", 5);
	frame(&st, 1, "", 0);
	frame(&st, 0, "world", 5); /* stdin's type: taken as stdout */
	frame(&st, 2, "", 0);
	frame(&st, 2, "!", 1);
	frame(&st, 1, "\n", 1);

	rc = feed_cut(st.buf, st.len, NULL, 0, &g);
	ok(rc == 0 && same(&g, "hello world\n", "oops\n!"),
	   "decoder: many frames in one read, 0-length frames, type 0 is "
	   "stdout");
	got_release(&g);

	for (size_t c = 0; c <= st.len; c++) {
		struct got h = {{STRBUF_INIT, STRBUF_INIT}, 0, 0};
		if (feed_cut(st.buf, st.len, &c, 1, &h) < 0 ||
		    !same(&h, "hello world\n", "oops\n!")) {
			diag("cut at %zu differs", c);
			all = false;
		}
		got_release(&h);
	}
	ok(all, "decoder: the same whatever the one cut (every offset)");

	all = true;
	for (size_t c1 = 0; c1 <= st.len; c1++)
		for (size_t c2 = c1; c2 <= st.len; c2++) {
			struct got h = {{STRBUF_INIT, STRBUF_INIT}, 0, 0};
			size_t cuts[2] = {c1, c2};
			if (feed_cut(st.buf, st.len, cuts, 2, &h) < 0 ||
			    !same(&h, "hello world\n", "oops\n!"))
				all = false;
			got_release(&h);
		}
	ok(all, "decoder: the same whatever two cuts");

	{
		struct exec_frames f = {0};
		struct got h = {{STRBUF_INIT, STRBUF_INIT}, 0, 0};
		bool fine = true;
		for (size_t i = 0; i < st.len; i++)
			fine = fine && exec_frames_feed(&f, st.buf + i, 1,
							collect, &h) == 0;
		ok(fine && same(&h, "hello world\n", "oops\n!") &&
		       f.nhdr == 0 && f.left == 0,
		   "decoder: a byte at a time, ends between frames");
		got_release(&h);
	}

	/* Headers that are not the multiplexed stream's. */
	{
		static const unsigned char bad[][8] = {
		    {3, 0, 0, 0, 0, 0, 0, 1},
		    {1, 1, 0, 0, 0, 0, 0, 1},
		    {2, 0, 0, 7, 0, 0, 0, 1},
		    {'H', 'T', 'T', 'P', '/', '1', '.', '1'},
		    {0xff, 0, 0, 0, 0, 0, 0, 0},
		};
		bool refused = true;
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct exec_frames f = {0};
			struct got h = {{STRBUF_INIT, STRBUF_INIT}, 0, 0};
			struct strbuf s2 = STRBUF_INIT;
			frame(&s2, 1, "ok", 2);
			strbuf_add(&s2, bad[i], 8);
			strbuf_add(&s2, "x", 1);
			frame(&s2, 1, "after", 5);
			int r1 = exec_frames_feed(&f, s2.buf, s2.len, collect,
						  &h);
			int r2 = exec_frames_feed(&f, "\1\0\0\0\0\0\0\0", 8,
						  collect, &h);
			if (r1 != -1 || r2 != -1 ||
			    strcmp(h.s[0].buf, "ok") != 0) {
				diag("bad header %zu: %d %d", i, r1, r2);
				refused = false;
			}
			got_release(&h);
			strbuf_release(&s2);
		}
		ok(refused, "decoder: a bad header is refused, and stays "
			    "refused; nothing after it is passed on");
	}

	{
		struct got h = {{STRBUF_INIT, STRBUF_INIT}, 0, 2};
		rc = feed_cut(st.buf, st.len, NULL, 0, &h);
		ok(rc == -1 && h.calls == 2, "decoder: a sink's -1 stops it");
		got_release(&h);
	}
	strbuf_release(&st);
}

/* Random frames, random cuts: the same bytes come out as went in. */
static void test_fuzz(void)
{
	unsigned seed = 12345;
	bool all = true;
	int rounds = 400;

	for (int r = 0; r < rounds && all; r++) {
		struct strbuf st = STRBUF_INIT, want[2] = {STRBUF_INIT,
							   STRBUF_INIT};
		struct got g = {{STRBUF_INIT, STRBUF_INIT}, 0, 0};
		size_t nf = (size_t)(rand_r(&seed) % 40), cuts[16], nc;
		char buf[300];

		for (size_t i = 0; i < nf; i++) {
			int type = rand_r(&seed) % 3;
			size_t len = (size_t)(rand_r(&seed) % 4 == 0
						  ? 0
						  : rand_r(&seed) % 300);
			for (size_t k = 0; k < len; k++)
				buf[k] = (char)rand_r(&seed);
			frame(&st, type, buf, len);
			strbuf_add(&want[type == 2], buf, len);
		}
		nc = (size_t)(rand_r(&seed) % 16);
		for (size_t i = 0; i < nc; i++)
			cuts[i] = st.len ? (size_t)rand_r(&seed) % (st.len + 1)
					 : 0;
		/* sorted cuts */
		for (size_t i = 1; i < nc; i++)
			for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
				size_t t = cuts[j];
				cuts[j] = cuts[j - 1];
				cuts[j - 1] = t;
			}
		if (feed_cut(st.buf, st.len, cuts, nc, &g) < 0 ||
		    g.s[0].len != want[0].len || g.s[1].len != want[1].len ||
		    (want[0].len &&
		     memcmp(g.s[0].buf, want[0].buf, want[0].len) != 0) ||
		    (want[1].len &&
		     memcmp(g.s[1].buf, want[1].buf, want[1].len) != 0)) {
			diag("fuzz round %d differs", r);
			all = false;
		}
		got_release(&g);
		strbuf_release(&st);
		strbuf_release(&want[0]);
		strbuf_release(&want[1]);
	}
	ok(all, "fuzz: %d random frame sequences cut at random points decode "
		"to what was built",
	   rounds);
}

/* ---- the loop, against a thread playing the engine ---- */

struct peer {
	int fd; /* the engine's end */
	void (*play)(struct peer *);
	size_t n;		/* a size for the play */
	struct strbuf got;	/* stdin as the engine saw it */
	bool saw_eof;
	atomic_int *cancel;
	int hold[2]; /* a silent peer waits for hold[1] to close */
	pthread_t t;
};

static void send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* the client went away: the test says */
		}
		c += w;
		n -= (size_t)w;
	}
}

static void send_frame(int fd, int type, const void *p, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	frame(&sb, type, p, len);
	send_all(fd, sb.buf, sb.len);
	strbuf_release(&sb);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	p->play(p);
	close(p->fd);
	return NULL;
}

static void play_separate(struct peer *p)
{
	send_frame(p->fd, 1, "out one\n", 8);
	send_frame(p->fd, 2, "err one\n", 8);
	send_frame(p->fd, 0, "out two\n", 8);
	send_frame(p->fd, 2, "", 0);
	send_frame(p->fd, 2, "err two\n", 8);
}

/* p->n bytes of stdout, a pattern, in frames of changing sizes. */
static void play_flood(struct peer *p)
{
	char *buf = xmalloc(70000);
	size_t sent = 0, k = 1;
	for (size_t i = 0; i < 70000; i++)
		buf[i] = (char)('a' + i % 26);
	while (sent < p->n) {
		size_t len = (k * 7919) % 70000;
		if (len > p->n - sent)
			len = p->n - sent;
		/* the pattern continues across frames */
		send_frame(p->fd, 1, buf + sent % 26, len > 60000 ? 60000 : len);
		sent += len > 60000 ? 60000 : len;
		k++;
	}
	send_frame(p->fd, 2, "done\n", 5);
	free(buf);
}

/* Echo stdin as stdout while reading it; at EOF say so on stderr. */
static void play_echo(struct peer *p)
{
	char buf[32768];
	for (;;) {
		ssize_t n = recv(p->fd, buf, sizeof(buf), 0);
		if (n <= 0) {
			p->saw_eof = n == 0;
			break;
		}
		strbuf_add(&p->got, buf, (size_t)n);
		send_frame(p->fd, 1, buf, (size_t)n);
	}
	if (p->saw_eof)
		send_frame(p->fd, 2, "eof\n", 4);
}

/* Read a little of stdin, then exit: close with the rest unread. */
static void play_no_read(struct peer *p)
{
	char buf[100];
	ssize_t n = recv(p->fd, buf, sizeof(buf), 0);
	(void)n;
	send_frame(p->fd, 1, "bye\n", 4);
	sleep_ms(50);
}

/* Says nothing, reads nothing, keeps the connection until released. */
static void play_silent(struct peer *p)
{
	char c;
	while (read(p->hold[0], &c, 1) > 0)
		;
}

static void play_late(struct peer *p)
{
	char big[5000];
	memset(big, 'z', sizeof(big));
	send_frame(p->fd, 1, "0123456789", 10);
	send_frame(p->fd, 2, "e", 1);
	sleep_ms(400);
	send_frame(p->fd, 1, big, sizeof(big));
	send_frame(p->fd, 2, big, 7);
}

static void play_cancel(struct peer *p)
{
	sleep_ms(100);
	atomic_store(p->cancel, 1);
	play_silent(p);
}

/* The second half of a header that came in the reply's headers. */
static void play_rest(struct peer *p)
{
	send_all(p->fd, "\0\0\0\3abc", 7);
}

static void play_garbage(struct peer *p)
{
	send_frame(p->fd, 1, "fine", 4);
	send_all(p->fd, "HTTP/1.1 500 Internal Server Error\r\n\r\n", 38);
}

static void peer_start(struct peer *p, int *client)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		bail_out("socketpair: %s", strerror(errno));
	p->fd = sv[1];
	*client = sv[0];
	if (pipe(p->hold) < 0)
		bail_out("pipe: %s", strerror(errno));
	strbuf_init(&p->got);
	if (pthread_create(&p->t, NULL, peer_main, p) != 0)
		bail_out("pthread_create");
}

static void peer_join(struct peer *p)
{
	close(p->hold[1]);
	pthread_join(p->t, NULL);
	close(p->hold[0]);
	strbuf_release(&p->got);
}

static int tmpfd(void)
{
	char path[] = "/tmp/t-exec-io.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		bail_out("mkstemp: %s", strerror(errno));
	unlink(path);
	return fd;
}

static char *slurp(int fd, size_t *len)
{
	struct stat st;
	char *b;
	fstat(fd, &st);
	b = xmalloc((size_t)st.st_size + 1);
	*len = (size_t)pread(fd, b, (size_t)st.st_size, 0);
	b[*len] = '\0';
	return b;
}

/*
 * One run: the peer playing, the client's end, stdout and stderr in
 * temporary files unless the test puts its own descriptors there.
 */
struct scene {
	struct peer p;
	int conn, o, e;
	struct exec_io io;
	struct exec_io_result r;
	struct sbx_error *err;
	int rc;
	char *out, *errs; /* what reached the files, after scene_read */
};

static void scene_start(struct scene *sc, void (*play)(struct peer *),
			size_t n, int in_fd)
{
	memset(sc, 0, sizeof(*sc));
	sc->p.play = play;
	sc->p.n = n;
	sc->o = tmpfd();
	sc->e = tmpfd();
	peer_start(&sc->p, &sc->conn);
	sc->io.conn = sc->conn;
	sc->io.in_fd = in_fd;
	sc->io.out_fd[0] = sc->o;
	sc->io.out_fd[1] = sc->e;
	sc->io.deadline_ms = clock_now_ms() + 60000;
}

static void scene_run(struct scene *sc)
{
	sc->rc = exec_io_run(&sc->io, &sc->r, &sc->err);
}

static void scene_read(struct scene *sc)
{
	size_t len;
	free(sc->out);
	free(sc->errs);
	sc->out = slurp(sc->o, &len);
	sc->errs = slurp(sc->e, &len);
}

static void scene_end(struct scene *sc)
{
	close(sc->conn); /* a peer still reading sees EOF */
	peer_join(&sc->p);
	close(sc->o);
	close(sc->e);
	free(sc->out);
	free(sc->errs);
	sbx_error_free(&sc->err);
}

static void test_separate(void)
{
	struct scene sc;

	scene_start(&sc, play_separate, 0, -1);
	scene_run(&sc);
	scene_read(&sc);
	ok(sc.rc == 0 && sc.r.eof && !sc.r.timed_out,
	   "run: ends at the engine's EOF");
	is_str(sc.out, "out one\nout two\n", "run: stdout on its descriptor");
	is_str(sc.errs, "err one\nerr two\n", "run: stderr on its descriptor");
	ok(sc.r.bytes[0] == 16 && sc.r.written[0] == 16 &&
	       sc.r.bytes[1] == 16 && !sc.r.cut[0] && !sc.r.cut[1],
	   "run: counts");
	scene_end(&sc);
}

static void test_cap(void)
{
	struct scene sc;
	bool pattern = true;
	size_t lo;

	scene_start(&sc, play_flood, 10u << 20, -1);
	sc.io.max_out = 1u << 20;
	scene_run(&sc);
	scene_read(&sc);
	lo = strlen(sc.out);
	for (size_t i = 0; i < lo && pattern; i++)
		pattern = sc.out[i] == (char)('a' + i % 26);
	ok(sc.rc == 0 && sc.r.eof, "cap: run ends");
	is_int((long long)lo, 1 << 20, "cap: exactly 1 MiB of 10 passed on");
	ok(pattern, "cap: the first MiB, in order");
	is_int((long long)sc.r.bytes[0], 10 << 20, "cap: all 10 MiB counted");
	is_int((long long)sc.r.written[0], 1 << 20, "cap: written says 1 MiB");
	ok(sc.r.cut[0] && !sc.r.cut[1], "cap: stdout cut, stderr not");
	is_str(sc.errs, "done\n", "cap: stderr after the flood passed on");
	scene_end(&sc);
}

struct feeder {
	int fd;
	size_t n;
	pthread_t t;
};

static void *feeder_main(void *arg)
{
	struct feeder *f = arg;
	char buf[10000];
	size_t sent = 0;
	while (sent < f->n) {
		size_t k = f->n - sent < sizeof(buf) ? f->n - sent : sizeof(buf);
		for (size_t i = 0; i < k; i++)
			buf[i] = (char)((sent + i) * 31 % 251);
		ssize_t w = write(f->fd, buf, k);
		if (w <= 0)
			break;
		sent += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

static void test_stdin(void)
{
	struct scene sc;
	struct feeder f = {.n = 8u << 20};
	int pp[2];
	size_t lo = 0;
	bool same_bytes = true;
	long long t0;
	struct stat st;

	if (pipe(pp) < 0)
		bail_out("pipe");
	f.fd = pp[1];
	pthread_create(&f.t, NULL, feeder_main, &f);
	scene_start(&sc, play_echo, 0, pp[0]);
	t0 = clock_now_ms();
	scene_run(&sc);
	pthread_join(f.t, NULL);
	scene_read(&sc);
	if (fstat(sc.o, &st) == 0)
		lo = (size_t)st.st_size;
	for (size_t i = 0; i < lo && same_bytes; i++)
		same_bytes = sc.out[i] == (char)(i * 31 % 251);
	ok(sc.rc == 0 && sc.r.eof && !sc.r.timed_out,
	   "stdin: 8 MiB through a pipe, echoed while it flows: no deadlock "
	   "(%lld ms)",
	   clock_now_ms() - t0);
	is_int((long long)sc.r.in_bytes, 8 << 20, "stdin: in_bytes");
	is_int((long long)lo, 8 << 20, "stdin: all of it came back");
	ok(same_bytes, "stdin: the same bytes");
	ok(sc.p.saw_eof, "stdin: EOF delivered as a half-close");
	is_str(sc.errs, "eof\n", "stdin: output after the half-close read");
	scene_end(&sc);
	close(pp[0]);
}

static void test_no_stdin(void)
{
	struct scene sc;

	scene_start(&sc, play_echo, 0, -1);
	scene_run(&sc);
	scene_read(&sc);
	ok(sc.rc == 0 && sc.p.saw_eof && strcmp(sc.errs, "eof\n") == 0 &&
	       sc.r.in_bytes == 0,
	   "no stdin: the connection is half-closed at once");
	scene_end(&sc);
}

static void test_peer_stops_reading(void)
{
	struct scene sc;
	int in = tmpfd();
	char *big = xcalloc(1, 4u << 20);

	if (write(in, big, 4u << 20) != 4 << 20)
		bail_out("write");
	lseek(in, 0, SEEK_SET);
	free(big);
	signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would end this test here */
	scene_start(&sc, play_no_read, 0, in);
	scene_run(&sc);
	scene_read(&sc);
	ok(sc.rc == 0 && sc.r.eof && !sc.r.timed_out,
	   "peer exits without reading 4 MiB of stdin: no error, no "
	   "SIGPIPE%s%s",
	   sc.err ? ": " : "", sc.err ? sc.err->msg : "");
	ok(sc.r.in_bytes < 4u << 20, "peer exits: not all stdin sent (%llu)",
	   sc.r.in_bytes);
	is_str(sc.out, "bye\n", "peer exits: its output still passed on");
	scene_end(&sc);
	close(in);
}

static void test_deadline_silent(void)
{
	struct scene sc;
	int pp[2];
	long long late;

	if (pipe(pp) < 0) /* stdin that never comes nor ends */
		bail_out("pipe");
	scene_start(&sc, play_silent, 0, pp[0]);
	sc.io.deadline_ms = clock_now_ms() + 300;
	scene_run(&sc);
	late = clock_now_ms() - sc.io.deadline_ms;
	ok(sc.rc == 0 && sc.r.timed_out && !sc.r.eof && !sc.r.cancelled,
	   "deadline: a silent peer times out");
	ok(late >= 0 && late < 100, "deadline: within 100 ms of it (%lld ms)",
	   late);
	ok(fcntl(sc.conn, F_GETFD) >= 0, "deadline: the connection left open");
	scene_end(&sc);
	close(pp[0]);
	close(pp[1]);
}

static void test_blocked_out(void)
{
	struct scene sc;
	int pp[2], fl0;
	long long late;
	unsigned long long w;

	if (pipe(pp) < 0) /* nobody reads pp[0] */
		bail_out("pipe");
	fl0 = fcntl(pp[1], F_GETFL);
	scene_start(&sc, play_flood, 4u << 20, -1);
	sc.io.out_fd[0] = pp[1];
	sc.io.deadline_ms = clock_now_ms() + 300;
	scene_run(&sc);
	late = clock_now_ms() - sc.io.deadline_ms;
	ok(sc.rc == 0 && sc.r.timed_out,
	   "blocked stdout: the deadline still fires");
	ok(late >= 0 && late < 100, "blocked stdout: within 100 ms (%lld ms)",
	   late);
	ok(sc.r.written[0] > 0 && sc.r.written[0] <= sc.r.bytes[0] &&
	       sc.r.bytes[0] < 4u << 20,
	   "blocked stdout: wrote what the pipe took (%llu of %llu read)",
	   sc.r.written[0], sc.r.bytes[0]);
	is_int(fcntl(pp[1], F_GETFL), fl0,
	       "blocked stdout: its flags restored (blocking again)");
	/* drain: counted, not written; the peer goes on as we read */
	w = sc.r.written[0];
	sc.rc = exec_io_drain(&sc.io, &sc.r, clock_now_ms() + 20000, &sc.err);
	ok(sc.rc == 0 && sc.r.eof, "drain: reads to EOF");
	is_int((long long)sc.r.bytes[0], 4 << 20,
	       "drain: all of stdout counted");
	ok(sc.r.written[0] == w, "drain: nothing more written");
	scene_end(&sc);
	close(pp[0]);
	close(pp[1]);
}

static void test_drain(void)
{
	struct scene sc;

	scene_start(&sc, play_late, 0, -1);
	sc.io.deadline_ms = clock_now_ms() + 200;
	scene_run(&sc);
	ok(sc.rc == 0 && sc.r.timed_out && sc.r.bytes[0] == 10 &&
	       sc.r.bytes[1] == 1,
	   "drain: run timed out after 10 + 1 bytes");
	sc.rc = exec_io_drain(&sc.io, &sc.r, clock_now_ms() + 5000, &sc.err);
	scene_read(&sc);
	ok(sc.rc == 0 && sc.r.eof, "drain: to the engine's EOF");
	is_int((long long)sc.r.bytes[0], 5010, "drain: stdout counted");
	is_int((long long)sc.r.bytes[1], 8, "drain: stderr counted");
	is_str(sc.out, "0123456789", "drain: nothing written");
	scene_end(&sc);
}

static void test_drain_deadline(void)
{
	struct scene sc;
	long long until, late;

	scene_start(&sc, play_silent, 0, -1);
	sc.io.deadline_ms = clock_now_ms() + 50;
	scene_run(&sc);
	until = clock_now_ms() + 200;
	sc.rc = exec_io_drain(&sc.io, &sc.r, until, &sc.err);
	late = clock_now_ms() - until;
	ok(sc.rc == 0 && sc.r.timed_out && !sc.r.eof && late >= 0 &&
	       late < 100,
	   "drain: bounded by its own deadline on a silent peer (%lld ms)",
	   late);
	scene_end(&sc);
}

static void test_cancel(void)
{
	atomic_int cancel = 0;
	struct scene sc;
	long long t0;

	scene_start(&sc, play_cancel, 0, -1);
	sc.p.cancel = &cancel;
	sc.io.cancel = &cancel;
	t0 = clock_now_ms();
	scene_run(&sc);
	ok(sc.rc == 0 && sc.r.cancelled && !sc.r.timed_out &&
	       clock_now_ms() - t0 < 400,
	   "cancel: a flag set by another thread ends the loop (%lld ms)",
	   clock_now_ms() - t0);
	scene_end(&sc);
}

static void test_pre(void)
{
	struct scene sc;
	struct strbuf pre = STRBUF_INIT;

	/* Two frames and half a header, as if read with the reply's
	 * headers; the other half comes on the connection. */
	frame(&pre, 1, "pre ", 4);
	frame(&pre, 2, "PRE ", 4);
	strbuf_add(&pre, "\1\0\0\0", 4);
	scene_start(&sc, play_rest, 0, -1);
	sc.io.pre = pre.buf;
	sc.io.npre = pre.len;
	scene_run(&sc);
	scene_read(&sc);
	ok(sc.rc == 0 && sc.io.npre == 0, "pre: run ends, pre consumed");
	is_str(sc.out, "pre abc",
	       "pre: decoded first, its split header completed from the "
	       "connection");
	is_str(sc.errs, "PRE ", "pre: its stderr frame");
	scene_end(&sc);
	strbuf_release(&pre);
}

static void test_garbage(void)
{
	struct scene sc;

	scene_start(&sc, play_garbage, 0, -1);
	scene_run(&sc);
	ok(sc.rc == -1 && sc.err && tap_status(sc.err) == 3 &&
	       strstr(sc.err->msg, "not multiplexed"),
	   "garbage on the connection: refused (%s)",
	   sc.err ? sc.err->msg : "");
	scene_end(&sc);
}

static void test_out_epipe(void)
{
	struct scene sc;
	int pp[2];

	if (pipe(pp) < 0)
		bail_out("pipe");
	close(pp[0]);
	signal(SIGPIPE, SIG_IGN);
	scene_start(&sc, play_separate, 0, -1);
	sc.io.out_fd[0] = pp[1];
	scene_run(&sc);
	ok(sc.rc == -1 && sc.err && sc.err->errnum == EPIPE &&
	       sc.r.bytes[0] > 0,
	   "our stdout gone: an error with EPIPE for the caller to judge (%s)",
	   sc.err ? sc.err->msg : "");
	signal(SIGPIPE, SIG_DFL);
	scene_end(&sc);
	close(pp[1]);
}

int main(void)
{
	alarm(120); /* a loop that hangs fails the test */
	test_decoder();
	test_fuzz();
	test_separate();
	test_cap();
	test_stdin();
	test_no_stdin();
	test_peer_stops_reading();
	test_deadline_silent();
	test_blocked_out();
	test_drain();
	test_drain_deadline();
	test_cancel();
	test_pre();
	test_garbage();
	test_out_epipe();
	return done_testing();
}

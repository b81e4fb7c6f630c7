/*
 * exec-io.c - the client side of one exec's hijacked connection (the
 * contract is exec-io.h): the multiplexed stream decoded onto stdout and
 * stderr with per-stream caps, stdin pumped the other way, a deadline
 * and a cancel flag that hold whatever the other three descriptors do.
 *
 * The loop never holds more than one read of the connection (RBUF): the
 * connection is read only when everything decoded from the previous read
 * has been written, so a slow reader of our stdout slows the command
 * (the engine stops reading its pipe), never our memory; and stdin is
 * read only when the connection has taken all of the previous read.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/alloc.h"
#include "basic/error.h"
#include "exec/exec-io.h"

#define RBUF (64u << 10)
/* A read's payload, and the held head of stdout let go with it. */
#define PAYBUF (RBUF + sizeof(((struct exec_io_result *)0)->head))
/* How often a cancel flag set by another thread is looked at, at worst. */
#define CANCEL_POLL_MS 50

int exec_frames_feed(struct exec_frames *f, const void *buf, size_t n,
		     int (*sink)(void *ctx, int stream, const char *p,
				 size_t len),
		     void *ctx)
{
	const char *p = buf;

	while (n > 0 || (f->nhdr == sizeof(f->hdr) && f->left == 0)) {
		if (f->left > 0) {
			size_t k = f->left < n ? (size_t)f->left : n;
			f->left -= k;
			if (sink(ctx, f->stream, p, k) < 0)
				return -1;
			p += k;
			n -= k;
			continue;
		}
		if (f->nhdr < sizeof(f->hdr)) {
			size_t k = sizeof(f->hdr) - f->nhdr;
			if (k > n)
				k = n;
			memcpy(f->hdr + f->nhdr, p, k);
			f->nhdr += k;
			p += k;
			n -= k;
			if (f->nhdr < sizeof(f->hdr))
				break;
		}
		/*
		 * A whole header.  A bad one is left in place, so every later
		 * feed fails too: the stream cannot be resynchronised.
		 */
		if (f->hdr[0] > 2 || f->hdr[1] || f->hdr[2] || f->hdr[3])
			return -1;
		f->stream = f->hdr[0] == 2 ? EXEC_IO_STDERR : EXEC_IO_STDOUT;
		f->left = (unsigned long long)f->hdr[4] << 24 |
			  (unsigned long long)f->hdr[5] << 16 |
			  (unsigned long long)f->hdr[6] << 8 | f->hdr[7];
		f->nhdr = 0;
	}
	return 0;
}

/* Decoded payload waiting for its descriptor, in stream order. */
struct seg {
	int stream;
	size_t len;
};

struct pump {
	struct exec_io *io;
	struct exec_io_result *r;
	bool count_only; /* drain: nothing is queued */
	unsigned long long admitted[2]; /* bytes queued, per stream (the cap) */
	char *pay; /* RBUF: payload of one read, at most a read's size */
	size_t npay, payoff; /* queued bytes, of which written */
	struct seg *segs;
	size_t nseg, aseg, head; /* head: the segment being written */
	size_t headoff;		 /* bytes of it written */
	bool src_eof[2];	 /* pipes: that output gave EOF */
	bool exited;		 /* pipes: the process ended (or no pidfd) */
};

/* pipes: the end is both outputs' EOF and the process's end. */
static void pipes_eof(struct pump *pm)
{
	pm->r->eof = pm->src_eof[0] && pm->src_eof[1] &&
		     (pm->exited || pm->count_only || pm->io->pidfd < 0);
}

/* Queue what the cap lets through of one payload piece. */
static void admit(struct pump *pm, int stream, const char *p, size_t len)
{
	unsigned long long cap = pm->io->max_out, take = len;

	if (cap && take > cap - pm->admitted[stream])
		take = cap - pm->admitted[stream];
	if (!take)
		return;
	pm->admitted[stream] += take;
	if (pm->nseg && pm->segs[pm->nseg - 1].stream == stream) {
		pm->segs[pm->nseg - 1].len += take;
	} else {
		ALLOC_GROW(pm->segs, pm->nseg + 1, pm->aseg);
		pm->segs[pm->nseg].stream = stream;
		pm->segs[pm->nseg].len = take;
		pm->nseg++;
	}
	if (pm->npay + take > PAYBUF)
		die_bug("exec-io: payload larger than the read it came from");
	memcpy(pm->pay + pm->npay, p, take);
	pm->npay += take;
}

/*
 * Could stdout's first bytes be the engine's own "could not start"
 * message (engine-container.c)?  Compared over what has come so far.
 */
static bool maybe_engine_message(const char *p, size_t len)
{
	static const char *const prefixes[] = {"OCI runtime exec failed",
					       "unable to find user"};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);
		if (memcmp(p, prefixes[i], len < n ? len : n) == 0)
			return true;
	}
	return false;
}

/* Stop holding: what was held goes out first, as it came. */
static void release_held(struct pump *pm)
{
	if (!pm->r->held)
		return;
	pm->r->held = false;
	admit(pm, EXEC_IO_STDOUT, pm->r->head, pm->r->nhead);
}

static int sink(void *ctx, int stream, const char *p, size_t len)
{
	struct pump *pm = ctx;
	unsigned long long cap = pm->io->max_out;
	bool first = pm->r->bytes[EXEC_IO_STDOUT] == 0;

	if (stream == EXEC_IO_STDOUT && pm->r->nhead < sizeof(pm->r->head)) {
		size_t n = sizeof(pm->r->head) - pm->r->nhead;
		if (n > len)
			n = len;
		memcpy(pm->r->head + pm->r->nhead, p, n);
		pm->r->nhead += n;
	}
	pm->r->bytes[stream] += len;
	if (cap && pm->r->bytes[stream] > cap)
		pm->r->cut[stream] = true;
	if (pm->count_only || !len)
		return 0;
	/* Hold stdout's first bytes while they may be the engine's reason
	 * for not starting the command: the caller shows that on stderr.
	 * Anything else that comes lets them go. */
	if (!pm->io->pipes && stream == EXEC_IO_STDOUT &&
	    (first || pm->r->held) &&
	    pm->r->bytes[stream] <= sizeof(pm->r->head) &&
	    maybe_engine_message(pm->r->head, pm->r->nhead)) {
		pm->r->held = true;
		return 0;
	}
	if (pm->r->held) {
		release_held(pm);
		if (stream == EXEC_IO_STDOUT) {
			/* Part of this piece is in head already. */
			size_t had = pm->r->nhead - (pm->r->bytes[stream] - len <
							     pm->r->nhead
							 ? pm->r->nhead -
							       (pm->r->bytes[stream] -
								len)
							 : 0);
			(void)had;
		}
	}
	admit(pm, stream, p, len);
	return 0;
}

static bool queue_empty(const struct pump *pm)
{
	return pm->head >= pm->nseg;
}

static void queue_reset(struct pump *pm)
{
	pm->npay = pm->payoff = pm->nseg = pm->head = pm->headoff = 0;
}

static int feed(struct pump *pm, const char *p, size_t n,
		struct sbx_error **err)
{
	const unsigned char *h = pm->io->frames.hdr;

	if (exec_frames_feed(&pm->io->frames, p, n, sink, pm) < 0)
		return sbx_error_set(err, SBX_E_UNAVAILABLE, 0,
				     "the engine's exec stream is not "
				     "multiplexed (a frame header starts "
				     "%02x %02x %02x %02x)",
				     h[0], h[1], h[2], h[3]);
	return 0;
}

/* The next piece of the bytes that came with the reply's headers. */
static int feed_pre(struct pump *pm, struct sbx_error **err)
{
	size_t k = pm->io->npre < RBUF ? pm->io->npre : RBUF;
	const char *p = pm->io->pre;

	pm->io->pre += k;
	pm->io->npre -= k;
	return feed(pm, p, k, err);
}

/*
 * Write what the head segment's descriptor takes now.  0, or -1 with
 * *err on a write error (errnum kept: EPIPE is the caller's to judge).
 */
static int write_out(struct pump *pm, struct sbx_error **err)
{
	while (!queue_empty(pm)) {
		struct seg *s = &pm->segs[pm->head];
		ssize_t w;

		if (pm->io->write) {
			size_t len = s->len - pm->headoff;

			w = pm->io->write(pm->io->write_arg, s->stream,
					  pm->pay + pm->payoff, len) < 0
				? -1
				: (ssize_t)len;
			if (w < 0 && (errno == EAGAIN || errno == EINTR))
				errno = EIO; /* a callback takes all or fails */
		} else {
			w = write(pm->io->out_fd[s->stream],
				  pm->pay + pm->payoff, s->len - pm->headoff);
		}
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				return 0;
			return sbx_error_set(
			    err, SBX_E_UNAVAILABLE, errno, "writing the command's %s",
			    s->stream == EXEC_IO_STDERR ? "stderr" : "stdout");
		}
		pm->r->written[s->stream] += (size_t)w;
		pm->payoff += (size_t)w;
		pm->headoff += (size_t)w;
		if (pm->headoff == s->len) {
			pm->head++;
			pm->headoff = 0;
		}
	}
	queue_reset(pm);
	return 0;
}

/* Read one of the command's pipes once (the fast path). */
static int read_pipe(struct pump *pm, int stream, char *buf,
		     struct sbx_error **err)
{
	ssize_t got;

	if (pm->src_eof[stream])
		return 0;
	got = read(pm->io->pipe_out[stream], buf, RBUF);
	if (got < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "reading the command's output");
	}
	if (got == 0) {
		pm->src_eof[stream] = true;
		pipes_eof(pm);
		return 0;
	}
	return sink(pm, stream, buf, (size_t)got);
}

/* Read the connection once.  *eof when the engine closed it. */
static int read_conn(struct pump *pm, char *buf, struct sbx_error **err)
{
	ssize_t got = recv(pm->io->conn, buf, RBUF, MSG_DONTWAIT);

	if (got < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		/*
		 * A peer that closes with our stdin unread in its buffer
		 * resets the connection; what it wrote before was read
		 * first (the error comes only once the queue is empty).
		 */
		if (errno == ECONNRESET) {
			pm->r->eof = true;
			return 0;
		}
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "reading the command's output");
	}
	if (got == 0) {
		pm->r->eof = true;
		return 0;
	}
	return feed(pm, buf, (size_t)got, err);
}

/* Remaining milliseconds to deadline_ms, -1 for none; 0 when passed. */
static int poll_timeout(long long deadline_ms, bool watched)
{
	long long left = -1;

	if (deadline_ms) {
		left = deadline_ms - clock_now_ms();
		if (left < 0)
			left = 0;
		if (left > 1000000)
			left = 1000000;
	}
	if (watched && (left < 0 || left > CANCEL_POLL_MS))
		left = CANCEL_POLL_MS;
	return (int)left;
}

/* The command's stdin at its end: EOF. */
static void stdin_close(struct exec_io *io)
{
	if (!io->pipes) {
		shutdown(io->conn, SHUT_WR);
	} else if (io->pipe_in >= 0) {
		close(io->pipe_in);
		io->pipe_in = -1;
	}
}

struct stdin_pump {
	char *buf; /* RBUF */
	size_t len, off;
	bool eof;	/* in_fd gave EOF (or was never there) */
	bool done;	/* the connection was half-closed, or refused more */
	bool conn_room; /* the connection said POLLOUT since our last send */
};

/* Send what is buffered.  A peer that stopped reading ends the pump. */
static int send_stdin(struct pump *pm, struct stdin_pump *in,
		      struct sbx_error **err)
{
	while (in->off < in->len) {
		/* A pipe's EPIPE raises SIGPIPE: whoever calls with stdin
		 * ignores it (svc-exec.h). */
		ssize_t w = pm->io->pipes
				? write(pm->io->pipe_in, in->buf + in->off,
					in->len - in->off)
				: send(pm->io->conn, in->buf + in->off,
				       in->len - in->off,
				       MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				in->conn_room = false;
				return 0;
			}
			if (errno == EPIPE || errno == ECONNRESET) {
				in->done = true;
				in->len = in->off = 0;
				stdin_close(pm->io);
				return 0;
			}
			return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
					     "sending the command's stdin");
		}
		in->off += (size_t)w;
		pm->r->in_bytes += (size_t)w;
	}
	in->len = in->off = 0;
	if (in->eof && !in->done) {
		/* ENOTCONN: the peer is gone already; EOF is moot. */
		stdin_close(pm->io);
		in->done = true;
	}
	return 0;
}

static int read_stdin(struct pump *pm, struct stdin_pump *in,
		      struct sbx_error **err)
{
	ssize_t got = read(pm->io->in_fd, in->buf, RBUF);

	if (got < 0) {
		/* EAGAIN: in_fd may share its file with a non-blocking out. */
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		return sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
				     "reading the command's stdin");
	}
	if (got == 0)
		in->eof = true;
	in->len = (size_t)got;
	in->off = 0;
	return send_stdin(pm, in, err);
}

static bool stopped(struct exec_io *io, struct exec_io_result *r,
		    long long deadline_ms)
{
	if (io->cancel && atomic_load(io->cancel)) {
		r->cancelled = true;
		return true;
	}
	if (io->stop && io->stop(io->stop_arg)) {
		r->cancelled = r->stop_asked = true;
		return true;
	}
	if (deadline_ms && clock_now_ms() >= deadline_ms) {
		r->timed_out = true;
		return true;
	}
	return false;
}

/* The out descriptors non-blocking for the loop; flags saved to restore. */
static void out_nonblock(struct exec_io *io, int saved[2])
{
	saved[0] = saved[1] = -1;
	if (io->write)
		return;
	for (int i = 0; i < 2; i++) {
		saved[i] = fcntl(io->out_fd[i], F_GETFL);
		if (saved[i] >= 0 && !(saved[i] & O_NONBLOCK))
			fcntl(io->out_fd[i], F_SETFL, saved[i] | O_NONBLOCK);
	}
}

/* In reverse: when both share one open file, the first one's flags win. */
static void out_restore(struct exec_io *io, const int saved[2])
{
	for (int i = 1; i >= 0; i--)
		if (saved[i] >= 0)
			fcntl(io->out_fd[i], F_SETFL, saved[i]);
}

enum { P_CONN, P_IN, P_OUT, P_ERR, P_INW, P_PID, P_N };

int exec_io_run(struct exec_io *io, struct exec_io_result *r,
		struct sbx_error **err)
{
	struct pump pm = {.io = io, .r = r};
	struct stdin_pump in = {.conn_room = false};
	char *rbuf = xmalloc(RBUF);
	int saved[2], ret = 0;

	memset(r, 0, sizeof(*r));
	pm.pay = xmalloc(PAYBUF);
	in.buf = xmalloc(RBUF);
	if (io->in_fd < 0) {
		in.eof = in.done = true;
		stdin_close(io);
	}
	out_nonblock(io, saved);

	for (;;) {
		struct pollfd pfd[P_N];
		bool want_out;

		if (queue_empty(&pm)) {
			if (io->npre) {
				ret = feed_pre(&pm, err);
				if (ret < 0)
					break;
				continue;
			}
			if (r->eof)
				break;
		}
		if (stopped(io, r, io->deadline_ms))
			break;
		/* A callback takes the output at once: no descriptor to
		 * wait on. */
		if (io->write && !queue_empty(&pm)) {
			ret = write_out(&pm, err);
			if (ret < 0)
				break;
			continue;
		}

		for (int i = 0; i < P_N; i++)
			pfd[i] = (struct pollfd){.fd = -1};
		/* Stdin: its buffer sent first; then read it only when the
		 * connection has room. */
		want_out = !in.done &&
			   (in.off < in.len || (!in.eof && !in.conn_room));
		if (io->pipes) {
			/* Output from either pipe; stdin to its own. */
			if (queue_empty(&pm) && !pm.src_eof[EXEC_IO_STDOUT]) {
				pfd[P_CONN].fd = io->pipe_out[EXEC_IO_STDOUT];
				pfd[P_CONN].events = POLLIN;
			}
			if (queue_empty(&pm) && !pm.src_eof[EXEC_IO_STDERR]) {
				pfd[P_ERR].fd = io->pipe_out[EXEC_IO_STDERR];
				pfd[P_ERR].events = POLLIN;
			}
			if (want_out && io->pipe_in >= 0) {
				pfd[P_INW].fd = io->pipe_in;
				pfd[P_INW].events = POLLOUT;
			}
			if (io->pidfd >= 0 && !pm.exited) {
				pfd[P_PID].fd = io->pidfd;
				pfd[P_PID].events = POLLIN;
			}
		} else {
			if (queue_empty(&pm))
				pfd[P_CONN].events |= POLLIN;
			if (want_out)
				pfd[P_CONN].events |= POLLOUT;
			if (pfd[P_CONN].events)
				pfd[P_CONN].fd = io->conn;
		}
		if (!in.done && !in.eof && in.off == in.len && in.conn_room) {
			pfd[P_IN].fd = io->in_fd;
			pfd[P_IN].events = POLLIN;
		}
		if (!queue_empty(&pm)) {
			pfd[P_OUT].fd = io->out_fd[pm.segs[pm.head].stream];
			pfd[P_OUT].events = POLLOUT;
		}

		if (poll(pfd, P_N,
			 poll_timeout(io->deadline_ms,
				      io->cancel || io->stop)) < 0) {
			if (errno == EINTR)
				continue;
			ret = sbx_error_set(err, SBX_E_UNAVAILABLE, errno, "poll");
			break;
		}
		if (pfd[P_OUT].revents) {
			ret = write_out(&pm, err);
			if (ret < 0)
				break;
		}
		if ((pfd[io->pipes ? P_INW : P_CONN].revents &
		     (POLLOUT | POLLERR | POLLHUP)) &&
		    want_out) {
			in.conn_room = true;
			ret = send_stdin(&pm, &in, err);
			if (ret < 0)
				break;
		}
		if (pfd[P_IN].revents) {
			ret = read_stdin(&pm, &in, err);
			if (ret < 0)
				break;
		}
		if (io->pipes) {
			if (pfd[P_PID].revents) {
				pm.exited = true;
				pipes_eof(&pm);
			}
			for (int i = 0; i < 2 && ret == 0; i++)
				if (pfd[i == 0 ? P_CONN : P_ERR].revents &&
				    queue_empty(&pm))
					ret = read_pipe(&pm, i, rbuf, err);
			if (ret < 0)
				break;
		} else if (pfd[P_CONN].revents & (POLLIN | POLLERR | POLLHUP) &&
			   queue_empty(&pm) && !r->eof) {
			ret = read_conn(&pm, rbuf, err);
			if (ret < 0)
				break;
		}
	}

	out_restore(io, saved);
	free(rbuf);
	free(in.buf);
	free(pm.pay);
	free(pm.segs);
	return ret;
}

int exec_io_drain(struct exec_io *io, struct exec_io_result *r,
		  long long deadline_ms, struct sbx_error **err)
{
	struct pump pm = {.io = io, .r = r, .count_only = true};
	char *rbuf = xmalloc(RBUF);
	int ret = 0;

	while (io->npre && ret == 0)
		ret = feed_pre(&pm, err);
	for (int i = 0; i < 2; i++)
		pm.src_eof[i] = !io->pipes || io->pipe_out[i] < 0;
	while (ret == 0 && !r->eof) {
		struct pollfd pfd[2] = {{.fd = -1}, {.fd = -1}};
		int t;

		if (deadline_ms && clock_now_ms() >= deadline_ms)
			break;
		if (!io->pipes) {
			pfd[0] = (struct pollfd){.fd = io->conn, .events = POLLIN};
		} else {
			for (int i = 0; i < 2; i++)
				if (!pm.src_eof[i])
					pfd[i] = (struct pollfd){
					    .fd = io->pipe_out[i],
					    .events = POLLIN};
		}
		t = poll_timeout(deadline_ms, false);
		if (poll(pfd, 2, t) < 0) {
			if (errno != EINTR)
				ret = sbx_error_set(err, SBX_E_UNAVAILABLE, errno,
						    "poll");
			continue;
		}
		for (int i = 0; i < 2 && ret == 0; i++)
			if (pfd[i].revents)
				ret = io->pipes ? read_pipe(&pm, i, rbuf, err)
						: read_conn(&pm, rbuf, err);
	}
	free(rbuf);
	return ret;
}

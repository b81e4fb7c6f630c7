/*
 * exec-io.h - the client side of one exec's hijacked connection: the
 * engine's multiplexed stream decoded onto two file descriptors, stdin
 * pumped the other way, output caps, and the deadline; never prints.
 *
 * The stream is the Engine API's for Tty:false: frames of an 8-byte
 * header [type, 0, 0, 0, len32be] and len bytes, type 1 stdout, 2 stderr
 * (0, stdin, is taken as stdout, as the engine's own client does).  Frames
 * split across reads, or many in one read, are the normal case.
 *
 * exec_io_run() multiplexes with poll(2) over the connection, the stdin
 * descriptor (when in_fd >= 0) and the output descriptors, so that:
 * - stdin of any size is passed through without deadlock: it is read only
 *   while the connection can take it, output is read whenever it comes;
 *   when in_fd reaches EOF the connection is half-closed (shutdown
 *   SHUT_WR), which the engine delivers to the command as EOF.  A command
 *   that exits without reading its input ends the pump (EPIPE, ECONNRESET
 *   on the connection are not errors).
 * - each stream's first max_out bytes go to its descriptor, the rest is
 *   read and counted but not written (the command never blocks on a
 *   cap); max_out 0 means no cap.
 * - with io->write set, output goes to it instead of the descriptors
 *   (a socket's writer, a buffer): it is called as soon as bytes come.
 *   The loop waits for it: the deadline and the cancel flag are looked at
 *   between calls, so a writer that can stall (a reader across a
 *   network) must bound its own wait, or be given as a descriptor.
 * - out/err descriptors that block (a slow terminal, a full pipe) delay
 *   only the reading of the connection, never the deadline: writes are
 *   made non-blocking-aware (poll for POLLOUT), and at the deadline the
 *   loop returns whatever it had not written.
 * - at deadline_ms (monotonic milliseconds, clock_now_ms(); 0: none) or
 *   when *cancel becomes non-zero (or io->stop says so), it returns with
 * r->timed_out or r->cancelled set, the connection still open: the caller stops
 * the command's processes and then calls exec_io_drain() to read what is left
 * (bounded by its own deadline) and count it. It returns when the engine closes
 * the connection (the command's output is done: it exited, or its last writer
 * closed).
 *
 * Errors: -1 with *err (status 3) when the connection breaks in a way
 * that is not a normal end, or a write to out/err fails (EPIPE on our own
 * stdout: the caller decides; err->errnum says which); the counts are
 * valid either way.
 *
 * Details of the call: exec_io_run() zeroes *r first; it advances
 * io->pre/io->npre over what it decoded, so exec_io_drain() goes on where
 * it stopped (io->frames too).  With in_fd < 0 it half-closes the
 * connection itself at the start.  The out descriptors are O_NONBLOCK
 * during the call and get their flags back on return; that flag belongs
 * to the open file, shared with its other descriptors (a terminal's
 * stdin among them), which is why reads of in_fd take EAGAIN in stride.
 * cut[i] is bytes[i] > max_out.
 *
 * Thread rule: a struct exec_io is used by one thread; nothing is shared
 * between calls.
 */
#ifndef SBX_EXEC_IO_H
#define SBX_EXEC_IO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct sbx_error;

enum { EXEC_IO_STDOUT = 0, EXEC_IO_STDERR = 1 };

/* Decoder state, exposed so that t-exec-io can feed it byte by byte. */
struct exec_frames {
	unsigned char hdr[8];
	size_t nhdr;
	unsigned long long left; /* payload bytes left in this frame */
	int stream;		 /* EXEC_IO_STDOUT or EXEC_IO_STDERR */
};

struct exec_io {
	int conn;	   /* the hijacked connection */
	/*
	 * Instead of conn, when set (the fast path, exec-ns.h): the
	 * command's own pipes, read raw (no frames, nothing held):
	 * pipe_out[EXEC_IO_STDOUT] and [EXEC_IO_STDERR] the read ends of
	 * its output, pipe_in the write end of its stdin (-1: none).  The
	 * run closes pipe_in at in_fd's EOF (the command's EOF) and sets it
	 * to -1; r->eof once both outputs gave EOF (every writer gone) and
 * the process ended (pidfd).
	 */
	bool pipes;
	int pipe_out[2];
	int pipe_in;
	/* pipes: a pidfd of the command's process, or -1; with one, r->eof
	 * waits for the process to end too (it may close its output and
	 * run on). */
	int pidfd;
	const char *pre;   /* stream bytes already read with the headers */
	size_t npre;
	int in_fd;	   /* -1: no stdin (the connection is half-closed) */
	int out_fd[2];	   /* where stdout and stderr go */
	/* Instead of out_fd, when set: take len bytes of stream (a
	 * callback that may block; it is called only with bytes to pass
	 * on).  Returns 0, or -1 with errno set (EPIPE: the reader left). */
	int (*write)(void *arg, int stream, const char *buf, size_t len);
	void *write_arg;
	unsigned long long max_out; /* per stream; 0: no cap */
	long long deadline_ms;	    /* 0: none */
	const atomic_int *cancel;   /* may be NULL */
	/* When set, asked as often as the cancel flag is looked at: true
	 * ends the run as a cancel does (r->cancelled and r->stop_asked). */
	bool (*stop)(void *arg);
	void *stop_arg;
	struct exec_frames frames; /* decoder state: zero it before run */
};

struct exec_io_result {
	unsigned long long bytes[2];   /* every byte the command wrote */
	unsigned long long written[2]; /* of which passed on */
	unsigned long long in_bytes;   /* stdin bytes sent */
	bool cut[2];		       /* bytes[i] > written[i] by the cap */
	bool timed_out, cancelled;
	bool stop_asked; /* cancelled by io->stop */
	bool eof; /* the engine closed the stream */
	/* The first bytes of stdout, kept (not shown) so the caller can
	 * tell the engine's own "could not start" message. */
	char head[256];
	size_t nhead;
	/* At the end, head[0..nhead) was not written: it began like the
	 * engine's own message ("OCI runtime exec failed...") and nothing
	 * else came.  The caller writes it, or shows it as the reason. */
	bool held;
};

/*
 * Feed n bytes of stream to the decoder; each payload piece is handed to
 * sink(ctx, stream, bytes, len), which returns 0 or -1 to stop.  A header
 * whose type is not 0, 1 or 2, or whose reserved bytes are not zero, fails
 * (-1): the stream is not what was asked for (a Tty stream, or garbage)
 * and is not guessed at.
 */
int exec_frames_feed(struct exec_frames *f, const void *buf, size_t n,
		     int (*sink)(void *ctx, int stream, const char *p,
				 size_t len),
		     void *ctx);

int exec_io_run(struct exec_io *io, struct exec_io_result *r,
		struct sbx_error **err);
/* After a timeout: read and count (not write) until EOF or deadline_ms. */
int exec_io_drain(struct exec_io *io, struct exec_io_result *r,
		  long long deadline_ms, struct sbx_error **err);

#endif

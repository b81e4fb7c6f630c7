#!/usr/bin/env python3
"""ptyrun.py - run a command on a pseudo-terminal of a given size.

    ptyrun.py COLS ROWS CMD [ARG...]

CMD runs in a session of its own whose controlling terminal is a new
pseudo-terminal of COLS x ROWS (TIOCSWINSZ, so TIOCGWINSZ answers it), its
standard input, output and error all that terminal.  What it writes there is
copied to our standard output byte for byte, then our exit status is CMD's
(128 + N when a signal N killed it).  The terminal's own output processing
is turned off (no \\n -> \\r\\n), so a test reads the lines as written.
Redirect stderr inside CMD (sh -c '... 2>FILE') to keep it apart.
"""
import errno
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time


def main():
    cols, rows = int(sys.argv[1]), int(sys.argv[2])
    cmd = sys.argv[3:]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # output as written: no CR added
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(slave, termios.TCSANOW, attrs)

    def setup():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave,
                         preexec_fn=setup, close_fds=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                chunk = b""
            if not chunk:
                break  # every holder of the terminal closed it
            out += chunk
        elif p.poll() is not None:
            # Exited, and nothing more to read for a moment: done (a
            # grandchild may still hold the terminal open).
            r, _, _ = select.select([master], [], [], 0.2)
            if not r:
                break
    else:
        p.kill()
        sys.stderr.write("ptyrun.py: timed out\n")
    rc = p.wait()
    sys.stdout.buffer.write(bytes(out))
    sys.stdout.flush()
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main())

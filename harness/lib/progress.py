"""progress.py - the progress line of a long phase, for Python drivers and
monitors (lib/rampmon.py, run_remote.py); lib/common.sh `progress` is the
same rule for bash.

On a terminal the line is redrawn in place (\\r); elsewhere (a piped log, a
file) a plain line is printed at a change of format (a new phase) and at most
one every 10 s after, so a log holds no \\r and still shows each phase (tests
wait for "holding")."""
import sys
import time

EVERY_S = 10


class Progress:
    """MODE: "tty" (redrawn), "line" (plain lines) or "off" (nothing)."""

    def __init__(self, mode="line", out=None):
        self.mode, self.out = mode, out or sys.stderr
        self.fmt, self.next, self.shown = None, 0.0, False

    def show(self, fmt, args):
        if self.mode == "off":
            return
        if self.mode == "tty":
            self.out.write("\r" + fmt % args)
        elif fmt != self.fmt or time.monotonic() >= self.next:
            self.fmt, self.next = fmt, time.monotonic() + EVERY_S
            self.out.write(fmt % args + "\n")
        else:
            return
        self.shown = True
        self.out.flush()

    def end(self):
        """The newline that ends a redrawn line (nothing when none was drawn)."""
        if self.mode == "tty" and self.shown:
            self.out.write("\n")
            self.out.flush()
        self.shown = False

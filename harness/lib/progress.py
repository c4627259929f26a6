"""progress.py - the progress line of a long phase, for Python drivers and
monitors (lib/rampmon.py, run_remote.py); lib/common.sh `progress` is the
same rule for bash.

On a terminal the line is redrawn in place (\\r); elsewhere (a piped log, a
file) a plain line is printed at a change of format (a new phase) and at most
one every 10 s after, so a log holds no \\r and still shows each phase (tests
wait for "holding"). A line that cannot be written (a reader gone: EPIPE, a
full disk) turns the line off; it never ends the run."""
import sys
import time

EVERY_S = 10


class Progress:
    """MODE: "tty" (redrawn), "line" (plain lines) or "off" (nothing)."""

    def __init__(self, mode="line", out=None):
        self.mode, self.out = mode, out or sys.stderr
        if self.out is None:        # (started with stderr closed: Python's sys.stderr is None)
            self.mode = "off"
        self.fmt, self.next, self.shown = None, 0.0, False

    def show(self, fmt, args):
        if self.mode == "off":
            return
        if self.mode == "tty":
            self._write("\r" + fmt % args)
        elif fmt != self.fmt or time.monotonic() >= self.next:
            self.fmt, self.next = fmt, time.monotonic() + EVERY_S
            self._write(fmt % args + "\n")
        else:
            return
        self.shown = self.mode != "off"

    def end(self):
        """The newline that ends a redrawn line (nothing when none was drawn)."""
        if self.mode == "tty" and self.shown:
            self._write("\n")
        self.shown = False

    def _write(self, text):
        try:
            self.out.write(text)
            self.out.flush()
        except OSError:
            self.mode = "off"

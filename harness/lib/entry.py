"""entry.py - how a harness command-line tool ends: its last line is
`entry.run(main, ARGV)`.

A Ctrl-C (KeyboardInterrupt) ends it as SIGINT itself would, without Python's
traceback: SIGINT's default action, raised again on itself, so the calling
shell sees a death by SIGINT (status 130) and stops too, trap or no trap (an
`exit 130` would let a shell script without an INT trap carry on with its
next command)."""
import os
import signal
import sys


def run(main, argv):
    try:
        code = main(argv)
    except KeyboardInterrupt:
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130      # (only if SIGINT is blocked here)
    sys.exit(code)

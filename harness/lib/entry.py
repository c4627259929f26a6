"""entry.py - how a harness command-line tool ends: its last line is
`entry.run(main, ARGV)`.

A Ctrl-C (KeyboardInterrupt) ends it as SIGINT itself would, without Python's
traceback: SIGINT's default action, raised again on itself, so the calling
shell sees a death by SIGINT (status 130) and stops too, trap or no trap (an
`exit 130` would let a shell script without an INT trap carry on with its
next command). A reader of its stdout gone (a script stopped while it read
the tool's output) ends it quietly with 1, not with Python's BrokenPipeError
on the script's terminal."""
import os
import signal
import sys


def run(main, argv):
    try:
        code = main(argv)
        sys.stdout.flush()      # here, not at exit: where a BrokenPipeError is caught
    except KeyboardInterrupt:
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130      # (only if SIGINT is blocked here)
    except BrokenPipeError:
        # what is still buffered goes nowhere, instead of failing again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)

"""unavailable.py - the one exception a backend raises when this machine
cannot run it (uvloop, the c1m extension or gevent not importable): the
program exits 3, which the harness records as `unavailable`. Its own module:
loops.py and gevent_server.py both raise it, and loops.py imports
gevent_server.py."""


class Unavailable(Exception):
    """The requested loop cannot be imported (exit status 3)."""

"""py_server/gevent_server.py's connection accounting (run by
tests/contenders_new.bats; needs python3-gevent): a handler's connection is
counted closed and its socket closed exactly once, whether the handler ran to
its end or was killed at shutdown (Pool.kill) before it ever started."""
import types
import unittest

from py_server import gevent_server


class Counters:
    def __init__(self):
        self.open = self.closed = self.accepted = self.accept_errors = 0
        self.cap, self.resume_at = 10, 9
        self.lows = 0

    def low(self):
        self.lows += 1

    def at_cap(self):
        pass


class GeventAccounting(unittest.TestCase):
    def setUp(self):
        self.gevent = gevent_server.import_gevent()
        import gevent.socket
        self.gsocket = gevent.socket
        cfg = types.SimpleNamespace(sndbuf=0, rcvbuf=0, max_pending=1 << 20)
        self.c = Counters()
        self.b = gevent_server.GeventBackend(cfg, self.c)
        self.lsock = self.gsocket.socket()
        self.server = self.b.Server(self.lsock, self.b.handle, spawn=self.b.group)
        self.addCleanup(self.lsock.close)

    def accepted(self):
        """One connection as Server.do_read hands it on: counted open."""
        a, peer = self.gsocket.socketpair()
        self.addCleanup(peer.close)
        self.c.open += 1
        self.c.accepted += 1
        return a, peer

    def test_killed_before_start(self):
        a, _ = self.accepted()
        self.server.do_handle(a, None)
        self.b.close_connections()  # the shutdown: Pool.kill(block=False)
        self.gevent.sleep(0.05)     # link callbacks run on the hub
        self.assertEqual((self.c.open, self.c.closed), (0, 1))
        self.assertEqual(a.fileno(), -1)  # closed, not left to the GC

    def test_handler_ends(self):
        a, peer = self.accepted()
        self.server.do_handle(a, None)
        self.gevent.sleep(0.05)  # the handler starts and waits in recv()
        self.assertEqual(self.c.open, 1)
        peer.close()             # EOF: blocking.serve returns
        self.gevent.sleep(0.05)
        self.b.close_connections()  # nothing left to kill: counted once
        self.gevent.sleep(0.05)
        self.assertEqual((self.c.open, self.c.closed), (0, 1))
        self.assertEqual(a.fileno(), -1)


if __name__ == "__main__":
    unittest.main()

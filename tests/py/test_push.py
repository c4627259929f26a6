"""tests/py/test_push.py - the Python contenders' server push without a server
(py_server/push.py): the message format and size, the SEQ bound, the
schedule's tick and its cursor, and the pushed ledger (noted, dropped: what a
slow peer's cut takes out of `pushed` and `pongs`). No sockets, no timing;
the same push on live servers: tests/py_netns/test_push_parity.py.

    python3 -m unittest tests.py.test_push
"""
import time
import unittest

import util  # noqa: E402,F401  (the root on sys.path)

from py_server.push import TAIL, Schedule, dropped, message_maker, noted, seq_max  # noqa: E402


class MessageTest(unittest.TestCase):
    """The message and the schedule without a server."""

    def test_message_format_and_size(self):
        for size in (32, 64, 1025):
            m = message_maker(size)(7)
            self.assertEqual(len(m), size)
            self.assertRegex(m, rb"^push 7 [0-9]{16} \.*\n$")
            usec = int(m.split()[2])
            self.assertLess(abs(usec - time.time_ns() // 1000), 10_000_000)

    def test_seq_max_fits(self):
        self.assertEqual(seq_max(32), 99_999_999)
        self.assertEqual(seq_max(34), (1 << 32) - 1)
        self.assertEqual(seq_max(1025), (1 << 32) - 1)
        self.assertEqual(len(message_maker(32)(seq_max(32))), 32)

    def test_ledger_keeps_only_pushes_still_queued(self):
        self.assertIsNone(noted(None, 64, 0, True))          # sent at once: nothing waits
        self.assertIsNone(noted(None, 10, 50))               # pongs alone: no ledger
        led = noted(None, 64, 100, True)                     # 36 bytes of pongs, then the push
        self.assertIs(led, TAIL)
        led = noted(led, 20, 70)                             # 4 pongs written, 50 bytes sent
        self.assertEqual(list(led), [70, 50])                # the push ends 20 bytes before the end
        led = noted(led, 64, 134, True)
        self.assertEqual(list(led), [134, 50, 134])
        led = noted(led, 5, 80)                              # the first push is out now
        self.assertEqual(list(led), [139, 134])
        self.assertIsNone(noted(led, 5, 6))                  # the second too: pongs only wait
        self.assertIsNone(noted(TAIL, 5, 0))
        self.assertIsNone(noted(TAIL, 5, 5))                 # the push sent, the pong waits

    def test_uvloop_pushes_keep_no_array(self):
        """uvloop's write() queues until the end of the loop's turn: each push
        is queued when written, and the one before it sent by then. No array
        for that (a connection's ledger weighs nothing while it keeps up)."""
        led = None
        for _ in range(100):
            led = noted(led, 512, 512, True)
            self.assertIs(led, TAIL)
        # a ping answered while the push waits, then both sent
        led = noted(led, 5, 517)
        self.assertEqual(list(led), [517, 512])
        self.assertIs(noted(led, 512, 512, True), TAIL)      # back to one at the end

    def test_dropped(self):
        self.assertEqual(dropped(0, 512, None), (0, 0))
        self.assertEqual(dropped(10, 512, None), (0, 2))    # a backlog of pongs only
        self.assertEqual(dropped(1, 512, TAIL), (1, 0))     # a partly sent one was not sent
        self.assertEqual(dropped(1025, 512, TAIL), (1, 103))  # a pong and 512 bytes ahead of it
        led = TAIL
        for k in range(8):
            led = noted(led, 512, 1025 + (k + 1) * 512, True)
        self.assertEqual(dropped(1025 + 8 * 512, 512, led), (9, 103))
        self.assertEqual(dropped(300, 512, led), (1, 0))    # the last one, partly sent

    def test_a_push_sent_ahead_of_queued_pongs_stays_counted(self):
        """The failure the ledger fixes: a pinger's push went out, the pongs
        behind it did not; the old rule, min(ceil(queued/size), pushes written
        since the buffer was empty), took the push out of `pushed`."""
        led = noted(None, 64, 64 + 5 * 10, True)             # 10 pongs ahead of the push
        led = noted(led, 5 * 2000, 5 * 1000)                 # 2,000 more; 1,000 still queued
        self.assertIsNone(led)
        self.assertEqual(dropped(5 * 1000, 64, led), (0, 1000))
        led = noted(None, 64, 64, True)                      # the push alone queued...
        led = noted(led, 5 * 2000, 5 * 2000 + 30)            # ...30 of its bytes still queued
        self.assertEqual(dropped(5 * 2000 + 30, 64, led), (1, 2000))

    def test_ledger_bounded_by_what_waits(self):
        """A slowly reading peer: the queue never empties, the ledger stays
        the pushes in it, not every push since."""
        led, queued = None, 0
        for i in range(1000):
            queued += 64
            led = noted(led, 64, queued, True)
            queued -= 60                                     # the peer takes 60 bytes a turn
        self.assertLessEqual(len(led) - 1, -(-queued // 64) + 1)
        pushes, pongs = dropped(queued, 64, led)
        self.assertEqual(pongs, 0)
        self.assertEqual(pushes, -(-queued // 64))

    def test_ledger_matches_a_byte_queue(self):
        """Against a model: a FIFO of (kind, bytes) written, sent from the front
        in random amounts; at each step the ledger's dropped() is what the model
        drops (a message or pong partly sent counted as not sent)."""
        import random
        rnd = random.Random(7)
        for trial in range(300):
            size = rnd.choice((32, 64, 512))
            q, led = [], None      # q: [kind, bytes left] from the front
            for _ in range(rnd.randrange(1, 60)):
                if rnd.random() < 0.4:
                    q.append(["push", size])
                    wrote, push = size, True
                else:
                    k = rnd.randrange(1, 6)
                    q += [["pong", 5] for _ in range(k)]
                    wrote, push = 5 * k, False
                sent = rnd.randrange(0, sum(b for _, b in q) + 1) if rnd.random() < 0.6 else 0
                while sent and q:
                    take = min(sent, q[0][1])
                    q[0][1] -= take
                    sent -= take
                    if not q[0][1]:
                        q.pop(0)
                queued = sum(b for _, b in q)
                led = noted(led, wrote, queued, push)
                want = (sum(1 for kind, _ in q if kind == "push"),
                        sum(1 for kind, _ in q if kind == "pong"))
                self.assertEqual(dropped(queued, size, led), want, (trial, q, led))

    def test_tick_rearms_after_a_failing_push(self):
        class Bad:
            i = -1

            def push(self):
                raise RuntimeError("boom")

        class FakeLoop:
            t = 0.0
            later = []

            def time(self):
                return self.t

            def call_later(self, d, fn):
                self.later.append(fn)

        lp = FakeLoop()
        s = Schedule(lp, 0.05, False)
        good = type("Good", (), {"i": -1, "got": 0, "push": lambda self: setattr(self, "got", self.got + 1)})()
        s.add(Bad())
        s.add(good)
        s.start()
        lp.t = 0.06
        with self.assertLogs("c1m.push", "ERROR") as cm:
            s.tick()
        lp.t = 0.12
        s.tick()                            # the second failure is not logged again
        self.assertEqual(len(cm.records), 1)
        self.assertEqual(len(lp.later), 3)  # start + each tick re-armed
        self.assertEqual(good.got, 2)       # the others still get theirs

    def test_schedule_remove_keeps_the_swept_split(self):
        class C:
            def __init__(self, k):
                self.k, self.i, self.got = k, -1, 0

            def push(self):
                self.got += 1

        class FakeLoop:
            def time(self):
                return 0.0

        s = Schedule(FakeLoop(), 1.0, False)
        cs = [C(k) for k in range(10)]
        for c in cs:
            s.add(c)
        s.sweep(5)                   # 0..4 sent to in this interval
        s.remove(cs[1])              # a swept one closes
        s.remove(cs[7])              # an unswept one closes
        self.assertEqual(s.cursor, 4)
        self.assertTrue(all(c.got == 1 for c in s.conns[:s.cursor]))
        self.assertTrue(all(c.got == 0 for c in s.conns[s.cursor:]))
        self.assertEqual(sorted(c.k for c in s.conns), [0, 2, 3, 4, 5, 6, 8, 9])
        self.assertTrue(all(s.conns[c.i] is c for c in s.conns))
        s.sweep(len(s.conns))        # the rest of the interval: each exactly once
        self.assertEqual([c.got for c in s.conns], [1] * 8)


if __name__ == "__main__":
    unittest.main()

"""harness/lib/monlib.py, what the monitors share: the go file a monitor
waits on (wait_go). Stdlib only; no sockets."""
import errno
import os
import unittest

from util import TmpDir  # noqa: F401  (harness/lib on sys.path)
import monlib  # noqa: E402


class WaitGo(TmpDir):
    def test_the_go_line_parsed(self):
        go = os.path.join(self.dir, "go")
        with open(go, "w") as f:
            f.write("123 456\n")
        self.assertEqual(monlib.wait_go(go, lambda w: w, False), ["123", "456"])
        self.assertTrue(os.path.exists(go + ".ready"))

    def test_a_fifo_for_the_ready_file_is_an_error_not_a_wait(self):
        # open(".ready", "w") on a FIFO waited for a reader for ever, SIGTERM only noted
        go = os.path.join(self.dir, "go")
        os.mkfifo(go + ".ready")
        with self.assertRaises(OSError) as e:
            monlib.wait_go(go, lambda w: w, False)
        self.assertEqual(e.exception.errno, errno.ENXIO)

    def test_a_stop_ends_the_wait(self):
        self.assertIsNone(monlib.wait_go(os.path.join(self.dir, "never"), lambda w: w, True))


if __name__ == "__main__":
    unittest.main()

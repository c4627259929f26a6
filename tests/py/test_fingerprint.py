"""tests/py/test_fingerprint.py - the machine fingerprint in meta.json
(harness/lib/fingerprint.py) read from a fake /proc and /sys, how two differ,
and that `results.py meta` writes it. Stdlib only; no sockets, no timing.

    python3 -m unittest tests.py.test_fingerprint
"""
import contextlib
import hashlib
import io
import json
import os
import unittest

from util import TmpDir  # noqa: E402  (harness/lib on sys.path)

import fingerprint  # noqa: E402
import results  # noqa: E402

FLAGS = "fpu vme de pse tsc msr hypervisor avx2"
CPUINFO = "".join(
    "processor\t: %d\nvendor_id\t: GenuineIntel\nmodel name\t: Fake CPU %s\n"
    "microcode\t: 0x2b\nflags\t\t: %s\n\n" % (i, "@ 2.0GHz", FLAGS) for i in range(3))


def fake_root(d, meltdown="Not affected", cmdline="quiet mitigations=auto"):
    files = {
        "proc/cpuinfo": CPUINFO,
        "proc/cmdline": cmdline + "\n",
        "proc/sys/kernel/osrelease": "6.18.44-fc-v1272\n",
        "proc/sys/kernel/version": "#1 SMP PREEMPT_DYNAMIC @0\n",
        "sys/devices/system/cpu/vulnerabilities/meltdown": meltdown + "\n",
        "sys/devices/system/cpu/vulnerabilities/spectre_v1": "Mitigation: usercopy\n",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": "tsc\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
    }
    for p, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
        with open(os.path.join(d, p), "w") as f:
            f.write(text)
    return d


class TestFingerprint(TmpDir):
    def root(self, name, **kw):
        return fake_root(os.path.join(self.dir, name), **kw)

    def test_fields_from_a_fake_root(self):
        fp = fingerprint.collect(self.root("a"))
        self.assertEqual(set(fp), set(fingerprint.FIELDS))
        self.assertEqual(fp["kernel_release"], "6.18.44-fc-v1272")
        self.assertEqual(fp["kernel_build"], "#1 SMP PREEMPT_DYNAMIC @0")
        self.assertEqual(fp["cmdline"], "quiet mitigations=auto")
        self.assertEqual(fp["vulnerabilities"], {"meltdown": "Not affected",
                                                 "spectre_v1": "Mitigation: usercopy"})
        self.assertEqual(fp["cpu_model"], "Fake CPU @ 2.0GHz")
        self.assertEqual(fp["cpu_flags_sha256"], hashlib.sha256(FLAGS.encode()).hexdigest())
        self.assertEqual(fp["microcode"], "0x2b")
        self.assertEqual(fp["cpu_count"], 3)
        self.assertEqual(fp["hypervisor"], "yes (cpuinfo flag)")
        self.assertEqual(fp["clocksource"], "tsc")
        self.assertEqual(fp["thp"], "madvise")

    def test_missing_files_are_none_and_sys_hypervisor_wins(self):
        fp = fingerprint.collect(self.dir)     # an empty root
        self.assertTrue(all(fp[k] is None for k in fingerprint.FIELDS), fp)
        r = self.root("xen")
        os.makedirs(os.path.join(r, "sys/hypervisor"))
        with open(os.path.join(r, "sys/hypervisor/type"), "w") as f:
            f.write("xen\n")
        self.assertEqual(fingerprint.collect(r)["hypervisor"], "xen")

    def test_differences_name_the_mitigation(self):
        a = fingerprint.collect(self.root("a"))
        b = fingerprint.collect(self.root("b", meltdown="Mitigation: PTI", cmdline="quiet pti=on"))
        self.assertEqual(fingerprint.differences(a, a), [])
        self.assertEqual(fingerprint.differences(a, b), [
            ("cmdline", "quiet mitigations=auto", "quiet pti=on"),
            ("vulnerabilities/meltdown", "Not affected", "Mitigation: PTI")])
        self.assertIn("meltdown: Mitigation: PTI", fingerprint.one_line(b))

    def test_a_foreign_fingerprint_is_shown_not_a_crash(self):
        # vulnerabilities that are no object: results.py machine and report
        # (bench.sh's last step) died with AttributeError
        for vul in (["x"], "x", 3):
            line = fingerprint.one_line({"vulnerabilities": vul, "cpu_model": "X"})
            self.assertIn("CPU X", line)
            self.assertIn("meltdown: ?", line)

    def test_meta_json_carries_the_fingerprint(self):
        d = os.path.join(self.dir, "run")
        os.makedirs(d)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(results.main(["results.py", "meta", d, "tiers=2k"]), 0)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual(set(meta["fingerprint"]), set(fingerprint.FIELDS))
        self.assertEqual(meta["fingerprint"], fingerprint.collect("/"))


if __name__ == "__main__":
    unittest.main()

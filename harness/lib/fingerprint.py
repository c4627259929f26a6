"""fingerprint.py - what identifies the machine a run was measured on
(meta.json `fingerprint`, written by results.py meta; compared by compare.py).

Two instances of one machine kind can differ where /proc/stat shows nothing:
the kernel build, its boot command line, and above all the CPU vulnerability
mitigations (`pti=on` made every syscall dearer: 1.5x the server CPU of a 1M
ramp, MACHINE.md). pyperf's metadata (_collect_metadata.py: kernel, cmdline,
CPU model, microcode, clocksource, THP) is the model; the mitigations go
beyond it.

    fingerprint.py show [ROOT]   print the fingerprint as JSON (ROOT: where /proc
                                 and /sys are, default /; the tests use a fake one)
Exit: 0 printed, 2 usage.

Only the standard library; reading nothing raises: a missing file is None.
"""
import hashlib
import json
import os
import sys

# the fields compare.py shows when two fingerprints differ, in this order
FIELDS = ["kernel_release", "kernel_build", "cmdline", "vulnerabilities", "cpu_model",
          "cpu_flags_sha256", "microcode", "cpu_count", "hypervisor", "clocksource", "thp"]


def _read(root, path):
    try:
        with open(os.path.join(root, path.lstrip("/")), errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _cpuinfo(text):
    """The first processor's fields of /proc/cpuinfo, and the count of processors."""
    first, count = {}, 0
    for line in (text or "").splitlines():
        k, sep, v = line.partition(":")
        if not sep:
            continue
        k = k.strip()
        if k == "processor":
            count += 1
        if count <= 1 and k not in first:
            first[k] = v.strip()
    return first, count


def _thp(text):
    """The selected word of /sys/kernel/mm/transparent_hugepage/enabled ("[madvise]")."""
    if text is None:
        return None
    for w in text.split():
        if w.startswith("[") and w.endswith("]"):
            return w[1:-1]
    return text


def collect(root="/"):
    """The fingerprint of the machine whose /proc and /sys are under ROOT."""
    info, count = _cpuinfo(_read(root, "/proc/cpuinfo"))
    flags = info.get("flags")
    vdir = os.path.join(root, "sys/devices/system/cpu/vulnerabilities")
    try:
        names = sorted(os.listdir(vdir))
    except OSError:
        names = []
    vulns = {n: _read(root, "/sys/devices/system/cpu/vulnerabilities/" + n) for n in names}
    hyp = _read(root, "/sys/hypervisor/type")
    if not hyp and flags is not None:
        hyp = "yes (cpuinfo flag)" if "hypervisor" in flags.split() else "none"
    release = _read(root, "/proc/sys/kernel/osrelease")
    build = _read(root, "/proc/sys/kernel/version")
    if root in ("/", "") and hasattr(os, "uname"):
        u = os.uname()
        release, build = release or u.release, build or u.version
    return {
        "kernel_release": release,
        "kernel_build": build,
        "cmdline": _read(root, "/proc/cmdline"),
        "vulnerabilities": vulns or None,
        "cpu_model": info.get("model name"),
        "cpu_flags_sha256": hashlib.sha256(flags.encode()).hexdigest() if flags is not None else None,
        "microcode": info.get("microcode"),
        "cpu_count": count or None,
        "hypervisor": hyp,
        "clocksource": _read(root, "/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "thp": _thp(_read(root, "/sys/kernel/mm/transparent_hugepage/enabled")),
    }


def differences(a, b):
    """[(field, value in A, value in B)] where two fingerprints differ; the
    vulnerabilities one line per mitigation that changed."""
    out = []
    for k in FIELDS:
        va, vb = a.get(k), b.get(k)
        if k == "vulnerabilities" and isinstance(va, dict) and isinstance(vb, dict):
            for n in sorted(set(va) | set(vb)):
                if va.get(n) != vb.get(n):
                    out.append(("vulnerabilities/" + n, va.get(n), vb.get(n)))
        elif va != vb:
            out.append((k, va, vb))
    return out


def one_line(fp):
    """"kernel 6.18.44-fc-v1252 (#1 SMP ...), CPU X, meltdown: Not affected"."""
    vul = fp.get("vulnerabilities")
    vul = vul.get("meltdown") if isinstance(vul, dict) else None   # (a foreign meta.json's list: none)
    return "kernel %s (%s), CPU %s x%s, meltdown: %s" % (
        fp.get("kernel_release"), fp.get("kernel_build"), fp.get("cpu_model"),
        fp.get("cpu_count"), vul or "?")


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    if sys.argv[1:2] != ["show"] or len(sys.argv) > 3:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    print(json.dumps(collect(sys.argv[2] if len(sys.argv) > 2 else "/"), indent=2, sort_keys=True))

"""results.py - the bookkeeping half of the harness: runs.csv rows, meta.json,
the summary tables and the data files the gnuplot scripts read.

    results.py row RUN_DIR RESULT_ENV key=value...   append one runs.csv row
    results.py meta RUN_DIR [key=value...]           write/refresh meta.json
    results.py summary RUN_DIR                       the terminal table
    results.py plotdata RUN_DIR DATA_DIR             .dat files + vars.gp for plots/*.gp
    results.py report RUN_DIR                        report.md (after plotdata + gnuplot)

Only the standard library: it runs under the interpreter the contenders use.
Everything except `row` and `meta` reads nothing but runs.csv, ramp/*.csv and
meta.json, so plot.sh can redraw a copied results directory.
"""
import csv
import glob
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys

# runs.csv columns, in order (harness/README.md documents each one).
COLUMNS = [
    "contender", "tier", "tier_label", "repeat", "status", "accepted",
    "t_accept_s", "t_client_established_s", "server_workers", "client_workers",
    "server_rss_idle_kib", "server_rss_kib", "server_pss_kib",
    "user_bytes_per_conn", "kernel_bytes_per_conn", "slab_bytes_per_conn",
    "server_cpu_connect_s", "server_cpu_hold_pct", "machine_cpu_connect_pct",
    "machine_cpu_hold_pct", "client_cpu_run_s", "client_established", "client_failed",
    "client_failures", "connect_p99_ms", "listen_overflows", "listen_drops", "reqq_full",
    "sockstat_tcp_inuse", "hb_pongs", "hb_p99_ms", "open_after_hold", "slow_closed",
    "heartbeat_s", "hold_s", "hold_wall_s", "server_exit", "server_stop_s", "client_exit",
    "slab_caches", "ramp_file", "run_dir", "note",
]


def read_env(path):
    """key=value lines (values may hold '=' and spaces)."""
    d = {}
    try:
        with open(path) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    d[k] = v
    except OSError:
        pass
    return d


def read_runs(run_dir):
    path = os.path.join(run_dir, "runs.csv")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def median_min_max(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals)


def label_of(n):
    n = int(n)
    if n % 1000000 == 0:
        return "%dm" % (n // 1000000)
    if n % 1000 == 0:
        return "%dk" % (n // 1000)
    return str(n)


# ---------------------------------------------------------------- row
def cmd_row(run_dir, result_env, pairs):
    """Append a row: values from result.env, overridden by key=value args."""
    row = {k: "" for k in COLUMNS}
    env = read_env(result_env) if result_env != "-" else {}
    for k in COLUMNS:
        if k in env:
            row[k] = env[k]
    for p in pairs:
        k, _, v = p.partition("=")
        if k not in row:
            sys.exit("results.py row: unknown column %s" % k)
        row[k] = v
    path = os.path.join(run_dir, "runs.csv")
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        if new:
            w.writeheader()
        w.writerow(row)


# ---------------------------------------------------------------- meta
def sh(args, default=None):
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else default
    except (OSError, subprocess.SubprocessError):
        return default


def first_match(path, pattern):
    try:
        with open(path) as f:
            for line in f:
                m = re.match(pattern, line)
                if m:
                    return m.group(1).strip()
    except OSError:
        pass
    return None


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def uvloop_version():
    try:
        import uvloop  # noqa: F401  (the contenders' interpreter runs this file)
        return getattr(uvloop, "__version__", "unknown")
    except Exception:
        return None


def sysctl_profiles(run_dir):
    """{run id: {key: value}} from every run's sysctl.txt."""
    out = {}
    for p in sorted(glob.glob(os.path.join(run_dir, "runs", "*", "sysctl.txt"))):
        prof = read_env(p)
        if prof:
            out[os.path.basename(os.path.dirname(p))] = prof
    return out


def cmd_meta(run_dir, pairs):
    path = os.path.join(run_dir, "meta.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        meta = {}
    settings = meta.get("settings", {})
    for p in pairs:
        k, _, v = p.partition("=")
        if k in ("command", "started_utc", "finished_utc", "completed"):
            meta[k] = (v == "true") if k == "completed" else v
        else:
            settings[k] = v
    meta["settings"] = settings
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    gcc = sh(["gcc", "--version"], "")
    commit = sh(["git", "-C", root, "rev-parse", "HEAD"])
    dirty = sh(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"])
    meta.update({
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "cpu_model": first_match("/proc/cpuinfo", r"model name\s*:\s*(.*)"),
        "cores": os.cpu_count(),
        "mem_total_kib": read_int_field("/proc/meminfo", "MemTotal"),
        "distro": first_match("/etc/os-release", r'PRETTY_NAME="?([^"]*)"?'),
        "gcc_version": gcc.splitlines()[0] if gcc else None,
        "python": sys.executable,
        "python_version": platform.python_version(),
        "uvloop_version": uvloop_version(),
        "git_commit": commit,
        "git_dirty": bool(dirty) if commit else None,
        "fd_limit_soft": soft,
        "fd_limit_hard": hard,
        "fs_file_max": read_int("/proc/sys/fs/file-max"),
        "fs_nr_open": read_int("/proc/sys/fs/nr_open"),
    })
    meta.setdefault("mem_available_at_start_kib", read_int_field("/proc/meminfo", "MemAvailable"))
    profs = sysctl_profiles(run_dir)
    if profs:
        ids = list(profs)
        ref = profs[ids[0]]
        differ = [i for i in ids if profs[i] != ref]
        meta["sysctl_profile"] = ref
        meta["sysctl_profile_identical"] = not differ
        meta["sysctl_profile_differs_in"] = {i: profs[i] for i in differ}
        meta["sysctl_profile_runs"] = len(ids)
    else:
        meta["sysctl_profile"] = None
        meta["sysctl_profile_identical"] = None
    workers = []
    try:
        for r in read_runs(run_dir):
            if r.get("server_workers") or r.get("client_workers"):
                workers.append({k: (int(r[k]) if r.get(k, "").isdigit() else r.get(k) or None)
                                for k in ("contender", "tier", "repeat", "server_workers",
                                          "client_workers")})
    except OSError:
        pass
    meta["worker_counts"] = workers
    with open(path + ".tmp", "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)
    if profs and differ:
        print("warning: the applied sysctl profile differs between runs: %s" % ", ".join(differ),
              file=sys.stderr)


def read_int_field(path, key):
    v = first_match(path, r"%s:\s*(\d+)" % re.escape(key))
    return int(v) if v else None


# ---------------------------------------------------------------- aggregation
def groups(rows):
    """{(contender, tier): [rows]} keeping first-seen contender order."""
    out = {}
    for r in rows:
        out.setdefault((r["contender"], int(r["tier"])), []).append(r)
    return out


def contenders_of(rows):
    seen = []
    for r in rows:
        if r["contender"] not in seen:
            seen.append(r["contender"])
    return seen


def ok_rows(rs):
    return [r for r in rs if r["status"] == "ok"]


def status_text(rs):
    counts = {}
    for r in rs:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    if len(counts) == 1 and len(rs) == 1:
        return rs[0]["status"]
    return " ".join("%s %d/%d" % (s, n, len(rs)) for s, n in counts.items())


def agg(rs, col):
    return median_min_max([num(r.get(col)) for r in ok_rows(rs)])


def fmt_mmm(m, fmt="%.2f", scale=1.0):
    if m is None:
        return "-"
    med, lo, hi = (v * scale for v in m)
    if lo == hi:
        return fmt % med
    return (fmt + " (" + fmt + "-" + fmt + ")") % (med, lo, hi)


def fmt_med(m, fmt="%.0f", scale=1.0):
    return "-" if m is None else fmt % (m[0] * scale)


def summary_rows(rows):
    """One dict per contender x tier: the figures the tables show."""
    out = []
    order = contenders_of(rows)
    g = groups(rows)
    for (c, tier) in sorted(g, key=lambda k: (order.index(k[0]), k[1])):
        rs = g[(c, tier)]
        out.append({
            "contender": c, "tier": label_of(tier), "runs": len(rs),
            "status": status_text(rs),
            "t_accept_s": fmt_mmm(agg(rs, "t_accept_s"), "%.2f"),
            "user_b": fmt_med(agg(rs, "user_bytes_per_conn")),
            "kernel_b": fmt_med(agg(rs, "kernel_bytes_per_conn")),
            "slab_b": fmt_med(agg(rs, "slab_bytes_per_conn")),
            "rss_mib": fmt_med(agg(rs, "server_rss_kib"), "%.1f", 1 / 1024),
            "cpu_connect_s": fmt_mmm(agg(rs, "server_cpu_connect_s"), "%.2f"),
            "cpu_hold_pct": fmt_med(agg(rs, "server_cpu_hold_pct"), "%.1f"),
            "workers": fmt_med(agg(rs, "server_workers")),
            "note": "; ".join(sorted({r["note"] for r in rs if r.get("note")}))[:120],
        })
    return out


SUMMARY_COLS = [
    ("contender", "contender"), ("tier", "tier"), ("status", "status"),
    ("t_accept_s", "t_accept s (min-max)"), ("user_b", "user B/conn"),
    ("kernel_b", "kernel B/conn"), ("slab_b", "slab B/conn"), ("rss_mib", "RSS MiB"),
    ("cpu_connect_s", "CPU connect s"), ("cpu_hold_pct", "CPU hold %"),
]


def cmd_summary(run_dir):
    rows = read_runs(run_dir)
    if not rows:
        print("no runs recorded")
        return
    table = summary_rows(rows)
    widths = [max(len(h), *(len(t[k]) for t in table)) for k, h in SUMMARY_COLS]
    line = "  ".join("%-*s" % (w, h) for (k, h), w in zip(SUMMARY_COLS, widths))
    print(line)
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join("%-*s" % (w, t[k]) for (k, h), w in zip(SUMMARY_COLS, widths)))
    notes = [t for t in table if t["note"] and not t["status"].startswith("ok")]
    for t in notes:
        print("  %s %s: %s" % (t["contender"], t["tier"], t["note"]))


# ---------------------------------------------------------------- plot data
def largest_tier(rows):
    ok = [int(r["tier"]) for r in rows if r["status"] == "ok"]
    if ok:
        return max(ok)
    some = [int(r["tier"]) for r in rows if (num(r.get("accepted")) or 0) > 0]
    return max(some) if some else None


def pick_ramp_run(rs):
    """The run whose t_accept is the (lower) median among the ok ones, else any
    run with a ramp file: its curve stands for the contender."""
    rs = [r for r in rs if r.get("ramp_file")]
    ok = sorted(ok_rows(rs), key=lambda r: num(r["t_accept_s"]) or 0)
    if ok:
        return ok[(len(ok) - 1) // 2]
    return rs[0] if rs else None


def gp_str(s):
    return "'" + s.replace("'", "''") + "'"


def cmd_plotdata(run_dir, data_dir):
    rows = read_runs(run_dir)
    os.makedirs(data_dir, exist_ok=True)
    for old in glob.glob(os.path.join(data_dir, "*.dat")):
        os.remove(old)
    g = groups(rows)
    conts = contenders_of(rows)
    tiers = sorted({int(r["tier"]) for r in rows})
    # per contender: tier, t (med min max), RSS MiB (med min max), CPU s (med min max), label
    with_data = []
    for c in conts:
        lines = []
        for t in tiers:
            rs = g.get((c, t), [])
            ta, rss, cpu = agg(rs, "t_accept_s"), agg(rs, "server_rss_kib"), agg(rs, "server_cpu_connect_s")
            if ta is None:
                continue
            rss = tuple(v / 1024 for v in rss) if rss else (0, 0, 0)
            cpu = cpu or (0, 0, 0)
            lines.append("%d %.4f %.4f %.4f %.3f %.3f %.3f %.3f %.3f %.3f %s" % (
                (t,) + tuple(ta) + rss + tuple(cpu) + (label_of(t),)))
        if lines:
            with_data.append(c)
            with open(os.path.join(data_dir, "tiers-%s.dat" % c), "w") as f:
                f.write("# tier t_med t_min t_max rss_mib_med min max cpu_s_med min max label\n")
                f.write("\n".join(lines) + "\n")
    # ramp curves at the largest tier
    big = largest_tier(rows)
    ramp_conts = []
    if big is not None:
        for c in conts:
            r = pick_ramp_run(g.get((c, big), []))
            if not r:
                continue
            src = os.path.join(run_dir, r["ramp_file"])
            try:
                with open(src, newline="") as f:
                    pts = [(row["seconds"], row["accepted"]) for row in csv.DictReader(f)]
            except (OSError, KeyError):
                continue
            if not pts:
                continue
            with open(os.path.join(data_dir, "ramp-%s.dat" % c), "w") as f:
                f.write("# seconds accepted (%s repeat %s, %s)\n" % (c, r["repeat"], r["status"]))
                f.write("".join("%s %s\n" % p for p in pts))
            ramp_conts.append(c if r["status"] == "ok" else "%s:%s" % (c, r["status"]))
    # bytes per connection: each contender at the largest tier it completed
    bar_lines = []
    for c in conts:
        ts = [t for t in tiers if ok_rows(g.get((c, t), []))]
        if not ts:
            continue
        t = max(ts)
        rs = g[(c, t)]
        user = agg(rs, "user_bytes_per_conn")
        kern = agg(rs, "kernel_bytes_per_conn")
        name = c if t == big else "%s@%s" % (c, label_of(t))
        bar_lines.append("%s %.0f %.0f" % (name, max(user[0], 0) if user else 0,
                                            max(kern[0], 0) if kern else 0))
    if bar_lines:
        with open(os.path.join(data_dir, "bytes.dat"), "w") as f:
            f.write("# contender user_bytes kernel_bytes (medians, ok runs)\n")
            f.write("\n".join(bar_lines) + "\n")
    logx = 1 if tiers and tiers[-1] >= 10 * tiers[0] else 0
    with open(os.path.join(data_dir, "vars.gp"), "w") as f:
        f.write("contenders = %s\n" % gp_str(" ".join(with_data)))
        # "name" or "name:status" (a curve of a run that did not finish)
        f.write("ramp_runs = %s\n" % gp_str(" ".join(ramp_conts)))
        f.write("big_label = %s\n" % gp_str(label_of(big) if big else ""))
        f.write("logx = %d\n" % logx)
        f.write("has_bytes = %d\n" % (1 if bar_lines else 0))
    print(" ".join(["tiers"] * bool(with_data) + ["ramp"] * bool(ramp_conts) +
                   ["bytes"] * bool(bar_lines)))


# ---------------------------------------------------------------- report
PLOTS = [
    ("t_connect", "Time to connect vs tier (median, min-max bars)"),
    ("rss", "Server RSS (anonymous) vs tier"),
    ("cpu", "Server CPU seconds during the connect phase vs tier"),
    ("ramp", "Ramp at the largest tier: accepted vs seconds since the client started"),
    ("bytes", "Bytes per connection: kernel (both sockets) and server userspace"),
]


def md_table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in rows:
        out.append("| " + " | ".join(str(v).replace("|", "\\|") for v in r) + " |")
    return "\n".join(out)


def cmd_report(run_dir):
    rows = read_runs(run_dir)
    try:
        with open(os.path.join(run_dir, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        meta = {}
    s = meta.get("settings", {})
    name = os.path.basename(os.path.abspath(run_dir))
    out = ["# c1m benchmark: %s" % name, ""]
    out.append("Command:\n\n```\n%s\n```\n" % meta.get("command", "(unknown)"))
    if meta.get("completed") is False:
        out.append("**This run was interrupted; the tables hold the runs that finished.**\n")
    mem = meta.get("mem_total_kib")
    machine = [
        ("CPU", "%s, %s cores" % (meta.get("cpu_model"), meta.get("cores"))),
        ("memory", "%.1f GiB" % (mem / 1048576) if mem else "?"),
        ("kernel", "%s (%s)" % (meta.get("kernel"), meta.get("kernel_version"))),
        ("distro", meta.get("distro")),
        ("gcc", meta.get("gcc_version")),
        ("Python", "%s (%s)" % (meta.get("python_version"), meta.get("python"))),
        ("uvloop", meta.get("uvloop_version") or "not importable"),
        ("git commit", "%s%s" % (meta.get("git_commit"), " (dirty tree)" if meta.get("git_dirty") else "")),
        ("fd limit (soft/hard)", "%s / %s" % (meta.get("fd_limit_soft"), meta.get("fd_limit_hard"))),
        ("fs.file-max / fs.nr_open", "%s / %s" % (meta.get("fs_file_max"), meta.get("fs_nr_open"))),
        ("started / finished (UTC)", "%s / %s" % (meta.get("started_utc"), meta.get("finished_utc"))),
    ]
    out.append("## Machine\n")
    out.append(md_table(["", ""], machine) + "\n")
    out.append("Settings: tiers %s, contenders %s, repeat %s, hold %s s, heartbeat %s, "
               "ramp timeout %s s, MemAvailable floor %s MiB.\n" % (
                   s.get("tiers"), s.get("contenders"), s.get("repeat"), s.get("hold"),
                   s.get("heartbeat"), s.get("timeout"), s.get("min_available_mib")))
    out.append("## Summary (medians over repeats; ok runs only)\n")
    table = summary_rows(rows)
    out.append(md_table([h for _, h in SUMMARY_COLS],
                        [[t[k] for k, _ in SUMMARY_COLS] for t in table]) + "\n")
    out.append("time to connect: client start until the server's own counters show all N open "
               "(polled every 10 ms). kernel B/conn: the socket slab caches, both ends of each "
               "loopback connection (2 sockets). slab B/conn: the whole /proc/meminfo Slab delta. "
               "See harness/README.md.\n")
    out.append("## Plots\n")
    for base, title in PLOTS:
        png = os.path.join("plots", base + ".png")
        if os.path.exists(os.path.join(run_dir, png)):
            out.append("### %s\n\n![%s](%s)  \n[SVG](plots/%s.svg)\n" % (title, title, png, base))
    out.append("## Runs\n")
    cols = ["contender", "tier_label", "repeat", "status", "accepted", "t_accept_s",
            "t_client_established_s", "server_workers", "client_workers", "user_bytes_per_conn",
            "kernel_bytes_per_conn", "slab_bytes_per_conn", "server_rss_kib",
            "server_cpu_connect_s", "server_cpu_hold_pct", "client_cpu_run_s", "hb_p99_ms", "note"]
    out.append(md_table(cols, [[r.get(c, "") for c in cols] for r in rows]) + "\n")
    prof = meta.get("sysctl_profile")
    if prof:
        same = meta.get("sysctl_profile_identical")
        out.append("## Kernel profile as applied in each run's namespace (%s)\n" %
                   ("identical in all %s runs" % meta.get("sysctl_profile_runs") if same
                    else "DIFFERS between runs, see meta.json"))
        out.append("```\n" + "\n".join("%s = %s" % kv for kv in prof.items()) + "\n```\n")
    with open(os.path.join(run_dir, "report.md"), "w") as f:
        f.write("\n".join(out))


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "row" and len(args) >= 2:
        cmd_row(args[0], args[1], args[2:])
    elif cmd == "meta" and args:
        cmd_meta(args[0], args[1:])
    elif cmd == "summary" and len(args) == 1:
        cmd_summary(args[0])
    elif cmd == "plotdata" and len(args) == 2:
        cmd_plotdata(args[0], args[1])
    elif cmd == "report" and len(args) == 1:
        cmd_report(args[0])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)

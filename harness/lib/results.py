"""results.py - the bookkeeping half of the harness: run records, meta.json,
the summary tables and the data files the gnuplot scripts read.

    results.py row RUN_DIR RECORD [--kind KIND] key=value...
                                                 append one run to runs.jsonl
                                                 (RECORD: its result.json, or -)
                                                 and re-derive runs.csv; with a
                                                 record, write its ramp curve
                                                 ramp/ID.csv (run_dir=runs/ID)
    results.py csv RUN_DIR                       re-derive runs.csv from runs.jsonl
    results.py meta RUN_DIR [key=value...]       write/refresh meta.json
    results.py summary RUN_DIR                   the terminal table
    results.py plotdata RUN_DIR DATA_DIR         .dat files + vars.gp for plots/*.gp
    results.py report RUN_DIR                    report.md (after plotdata + gnuplot)
    results.py compare A_DIR B_DIR [opts]        B/A per contender and tier (make compare)
    results.py machine RUN_DIR                   one line: the machine and its calibration

Only the standard library: it runs under the interpreter the contenders use.
Everything except `row` and `meta` reads nothing but runs.jsonl (else
runs.csv, as in older results directories), ramp/*.csv and meta.json, so
plot.sh can redraw a copied results directory.
Exit: 0 done, 1 unreadable input, 2 usage; a Ctrl-C ends it by SIGINT (130; lib/entry.py).
"""
import glob
import importlib
import json
import math
import os
import platform
import re
import resource
import subprocess
import sys

import bootstrap
import c1m_root  # noqa: F401  (py_server.cli_rules)
import capacity_model
import cells as cellmod
import entry
import fingerprint
import judge
import runstore
from cells import DAGGER, cpu_us_per_conn, fmt_stat, label_of, md_table, num
from py_server import cli_rules
from runstore import COLUMNS, read_runs, text  # noqa: F401  (COLUMNS: the public list)


class Usage(Exception):
    pass


# ---------------------------------------------------------------- row
def cmd_row(run_dir, record, pairs):
    """Append one run: RECORD's keys (a result.json; "-" for a run that has
    none, e.g. skipped), overridden by the key=value pairs. A record that cannot
    be read still gives a row (the overrides and a note saying why). With
    --kind KIND, a row bench.sh writes itself: its status is lib/judge.py's
    row_status, printed. A status given is one of lib/judge.py STATUSES, and
    the row must pass runstore.check_run, as its readers will: else a usage
    error and nothing written."""
    kind = None
    if "--kind" in pairs:
        i = pairs.index("--kind")
        if i + 1 >= len(pairs) or pairs[i + 1] not in judge.ROW_KINDS:
            raise Usage("results.py row: --kind needs one of %s" % " ".join(judge.ROW_KINDS))
        kind, pairs = pairs[i + 1], pairs[:i] + pairs[i + 2:]
    try:
        over = runstore.parse_pairs(pairs)
    except ValueError as e:
        raise Usage("results.py row: %s" % e)
    if over.get("status") not in (None,) + judge.STATUSES:
        raise Usage("results.py row: unknown status %r (lib/judge.py STATUSES)" % over["status"])
    rec, problem = {}, None
    if record != "-":
        try:
            rec = runstore.load_record(record)
        except ValueError as e:
            problem = str(e)
            print("results.py row: %s" % problem, file=sys.stderr)
    recorded = rec.get("status")
    rec.update(over)
    if kind:
        rec["status"] = judge.row_status(kind, recorded)
    if problem:
        rec["note"] = "; ".join(str(x) for x in (rec.get("note"), "record: " + problem) if x)
    if not rec.get("ramp_file"):   # (a record or a pair may name its own)
        rec["ramp_file"] = write_ramp(run_dir, rec) if record != "-" else ""
    for k in COLUMNS[:5]:
        rec.setdefault(k, None)
    try:
        # the readers' check: a line they refuse would fail every later read
        runstore.check_run(rec, "results.py row: %s" % ("the key=value pairs" if record == "-" else record))
    except ValueError as e:
        raise Usage(str(e))
    if kind:
        print(rec["status"])
    runstore.append_record(run_dir, rec)


def ramp_curve(src, t0_ms, end_s):
    """The lines of a run's ramp file from its 10 Hz counter samples (SRC:
    c1m-stat --csv, unix_ms,open,accepted,...): seconds since the client's
    start (t0_ms), accepted, open; from 0.2 s before that start (shown at 0)
    to 1 s after the ramp ended (end_s, when known). A field that is not a
    number reads 0, a time that is not one skips its sample."""
    def whole(x):
        try:
            v = float(x)
        except ValueError:
            return 0
        return int(v) if math.isfinite(v) else 0
    lines = ["seconds,accepted,open"]
    with open(src, newline="") as f:
        next(f, None)
        for line in f:
            fields = line.rstrip("\r\n").split(",")
            try:
                s = (float(fields[0]) - t0_ms) / 1000
            except ValueError:
                continue
            if not s >= -0.2:
                continue
            if end_s is not None and s > end_s + 1:
                break
            get = lambda i: fields[i] if i < len(fields) else ""  # noqa: E731
            lines.append("%.2f,%d,%d" % (max(s, 0.0), whole(get(2)), whole(get(1))))
    return lines


def write_ramp(out_dir, rec):
    """OUT/ramp/ID.csv (ramp_curve) for the run whose directory is rec's
    run_dir (runs/ID), from its ramp.csv; its name relative to OUT, or "" when
    the run has no samples or no client start to count from."""
    rd = text(rec, "run_dir")
    t0, end = num(rec.get("client_start_unix_ms")), num(rec.get("t_accept_s"))
    src = os.path.join(out_dir, rd, "ramp.csv") if rd else ""
    if t0 is None or not src or not os.path.isfile(src) or os.path.getsize(src) == 0:
        return ""
    name = os.path.join("ramp", os.path.basename(rd) + ".csv")
    try:
        lines = ramp_curve(src, t0, end)
        os.makedirs(os.path.join(out_dir, "ramp"), exist_ok=True)
        with open(os.path.join(out_dir, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    except (OSError, UnicodeDecodeError) as e:
        print("results.py row: no ramp curve for %s: %s" % (rd, e), file=sys.stderr)
        return ""
    return name


def cmd_csv(run_dir):
    runstore.write_csv(run_dir, runstore.read_jsonl(os.path.join(run_dir, "runs.jsonl")))


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


def read_env(path):
    """key=value lines (values may hold '=' and spaces): a run's sysctl.txt."""
    d = {}
    try:
        with runstore.open_regular(path) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    d[k] = v
    except OSError:
        pass
    return d


def sysctl_profiles(run_dir):
    """{run id: {key: value}} from every run's sysctl.txt."""
    out = {}
    for p in sorted(glob.glob(os.path.join(run_dir, "runs", "*", "sysctl.txt"))):
        prof = read_env(p)
        if prof:
            out[os.path.basename(os.path.dirname(p))] = prof
    return out


def run_profiles(run_dir, ids=()):
    """{run id: profile label} from the records (run_dir runs/ID), else from
    the run's own runs/ID/result.json; a run with neither (interrupted before
    it wrote one) is left out: its label is unknown, not "tuned". Records from
    before run_dir (no record names one: before profiles, every run tuned):
    each of IDS without a label is tuned."""
    out = {}
    try:
        rows = read_runs(run_dir)
    except (OSError, ValueError):
        rows = []
    for r in rows:
        rd = text(r, "run_dir")
        if rd:
            out[os.path.basename(rd)] = cellmod.profile_of(r)
    for p in sorted(glob.glob(os.path.join(run_dir, "runs", "*", "result.json"))):
        i = os.path.basename(os.path.dirname(p))
        if i in out:
            continue
        try:
            with runstore.open_regular(p) as f:
                r = json.load(f)
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(r, dict):
            out[i] = cellmod.profile_of(r)
    if not any(text(r, "run_dir") for r in rows):
        out.update({i: "tuned" for i in ids if i not in out})
    return out


def profile_meta(profs, labels):
    """meta.json's kernel profile keys from {run id: {key: value}} and {run id:
    profile}: per profile the values of its first run, and the runs whose
    values differ from that (a profile must apply the same everywhere)."""
    groups = {}
    profs = {i: p for i, p in profs.items() if i in labels}     # unlabelled: left out
    for i in profs:
        groups.setdefault(labels[i], []).append(i)
    if not groups:
        return {"sysctl_profile": None, "sysctl_profiles": {}, "sysctl_profile_identical": None,
                "sysctl_profile_differs_in": {}, "sysctl_profile_runs": 0}
    per, differ = {}, {}
    for label, ids in groups.items():
        per[label] = profs[ids[0]]
        differ.update({i: profs[i] for i in ids if profs[i] != profs[ids[0]]})
    main = "tuned" if "tuned" in per else next(iter(per))
    return {
        "sysctl_profile": per[main],               # the tuned profile (else the first)
        "sysctl_profiles": per,                    # every profile that ran, by label
        "sysctl_profile_identical": not differ,    # within each profile
        "sysctl_profile_differs_in": differ,
        "sysctl_profile_runs": len(profs),
    }


def cmd_meta(run_dir, pairs):
    path = os.path.join(run_dir, "meta.json")
    meta = runstore.read_meta(run_dir)
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
        # what identifies this instance (kernel build, mitigations, CPU): compare.py
        "fingerprint": fingerprint.collect("/"),
    })
    if "mem_available_at_start_kib" not in meta:   # (the first write of meta.json: the start)
        avail = read_int_field("/proc/meminfo", "MemAvailable")
        meta["mem_available_at_start_kib"] = avail
        # what the memory guard reads (MemAvailable less SReclaimable);
        # harness/capacity --check re-predicts from it
        try:
            meta["mem_usable_at_start_kib"] = cli_rules.mem_usable_kib()
        except OSError:
            meta["mem_usable_at_start_kib"] = None
    # this instance's calibration (bench.sh calibrate: c1m-calib after the quiet
    # gate); a run over SSH (HOSTS): every host's facts, kernel settings and how
    # they differ from the profile (lib/remote.py prepare)
    for key, name in (("calibration", "calibration.json"), ("remote_hosts", "hosts-meta.json")):
        src = os.path.join(run_dir, name)
        if os.path.exists(src):
            try:
                with runstore.open_regular(src) as f:
                    meta[key] = json.load(f)
            except (OSError, ValueError, RecursionError):
                meta[key] = None
    profs = sysctl_profiles(run_dir)
    differ = None
    if profs:
        meta.update(profile_meta(profs, run_profiles(run_dir, profs)))
        differ = meta["sysctl_profile_differs_in"]
    else:
        meta["sysctl_profile"] = None
        meta["sysctl_profile_identical"] = None
    workers = []
    try:
        for r in read_runs(run_dir):
            if r.get("server_workers") or r.get("client_workers"):
                workers.append({k: (int(text(r, k)) if cli_rules.ascii_digits(text(r, k)) else r.get(k) or None)
                                for k in ("contender", "tier", "repeat", "server_workers",
                                          "client_workers")})
    except OSError:
        pass
    meta["worker_counts"] = workers
    runstore.write_json(path, meta, indent=2, sort_keys=True)
    if differ:
        print("warning: the applied sysctl profile differs between runs of one profile: %s"
              % ", ".join(differ), file=sys.stderr)


def calib_text(cal):
    """"floor accept 7.29 us CPU (6.20-7.95, 5 rounds of 10000), getppid 137 ns (133-147)",
    then ", Python loop 921 ns (918-924)" when the suite measured it (lib/pycalib.py)."""
    if not cal:
        return "none"
    a, s = cal.get("accept_cpu_us") or {}, cal.get("syscall_ns") or {}
    py = cal.get("python_ns") if isinstance(cal.get("python_ns"), dict) else None
    f = lambda d, k, p: "?" if not isinstance(d.get(k), (int, float)) else p % d[k]  # noqa: E731
    return ("floor accept %s us CPU (%s-%s, %s rounds of %s), getppid %s ns (%s-%s)%s%s"
            % (f(a, "median", "%.2f"), f(a, "min", "%.2f"), f(a, "max", "%.2f"), cal.get("rounds"),
               cal.get("conns"), f(s, "median", "%.0f"), f(s, "min", "%.0f"), f(s, "max", "%.0f"),
               "" if py is None else ", Python loop %s ns (%s-%s)" % (
                   f(py, "median", "%.0f"), f(py, "min", "%.0f"), f(py, "max", "%.0f")),
               "" if cal.get("gate") in ("quiet", "off", None) else ", quiet gate " + str(cal.get("gate"))))


def cmd_machine(run_dir):
    runstore.open_regular(os.path.join(run_dir, "meta.json")).close()   # none, unreadable, no file: exit 1
    meta = runstore.read_meta(run_dir)
    print("machine: %s; calibration: %s" % (fingerprint.one_line(meta.get("fingerprint") or {}),
                                            calib_text(meta.get("calibration"))))


def read_int_field(path, key):
    v = first_match(path, r"%s:\s*(\d+)" % re.escape(key))
    return int(v) if v else None


# ---------------------------------------------------------------- summary
def summary_rows(rows):
    """One dict per contender x tier: the figures the tables show."""
    out = []
    for c in cellmod.cells(rows):
        st = c.stat
        out.append({
            "contender": c.contender, "tier": c.label, "condition": c.condition,
            "runs": len(c.runs),
            "status": c.status_text(),
            "t_accept_s": fmt_stat(st("t_accept_s"), c),
            "user_b": fmt_stat(st("user_bytes_per_conn"), c, "%.0f"),
            "kernel_b": fmt_stat(st("kernel_bytes_per_conn"), c, "%.0f", interval=False),
            "slab_b": fmt_stat(st("slab_bytes_per_conn"), c, "%.0f", interval=False),
            "rss_mib": fmt_stat(st("server_rss_kib"), c, "%.1f", 1 / 1024, interval=False),
            "cpu_connect_s": fmt_stat(st("server_cpu_connect_s"), c),
            "cpu_hold_pct": fmt_stat(st("server_cpu_hold_pct"), c, "%.1f", interval=False),
            "cell": c,
        })
    return out


SUMMARY_COLS = [
    ("contender", "contender"), ("tier", "tier"), ("status", "runs (status)"),
    ("t_accept_s", "t_accept s"), ("user_b", "user B/conn"),
    ("kernel_b", "kernel B/conn"), ("slab_b", "slab B/conn"), ("rss_mib", "RSS MiB"),
    ("cpu_connect_s", "CPU connect s"), ("cpu_hold_pct", "CPU hold %"),
]


def summary_cols(table):
    """SUMMARY_COLS, with a condition column after the tier when any cell has
    one (a run of default conditions only looks as it always did)."""
    if not any(t["condition"] for t in table):
        return SUMMARY_COLS
    return SUMMARY_COLS[:2] + [("condition", "condition")] + SUMMARY_COLS[2:]


LEGEND = ("medians of the ok runs; [a-b] bootstrap 95%% interval of the median "
          "(>= %d ok runs), (a-b) min-max (fewer runs)" % bootstrap.MIN_RUNS)


def footnotes(table):
    """The legend, the dagger's footnote when used, and one line per cell that
    had runs dropped (how many, which statuses)."""
    out = [LEGEND]
    cl = [t["cell"] for t in table]
    if any(c.all_disturbed for c in cl):
        out.append("%s %s" % (DAGGER, cellmod.ALL_DISTURBED))
    dropped = cellmod.dropped_text(cl)
    out.append("runs dropped from the figures:%s" % ("" if dropped else " none"))
    return out + ["  " + d for d in dropped]


def cmd_summary(run_dir):
    rows = read_runs(run_dir)
    if not rows:
        print("no runs recorded")
        return
    table = summary_rows(rows)
    cols = summary_cols(table)
    widths = [max(len(h), *(len(t[k]) for t in table)) for k, h in cols]
    print("  ".join("%-*s" % (w, h) for (k, h), w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join("%-*s" % (w, t[k]) for (k, h), w in zip(cols, widths)))
    for line in footnotes(table):
        print(line)


# ---------------------------------------------------------------- plot data
def largest_tier(rows):
    ok = [int(r["tier"]) for r in rows if cellmod.status_of(r) == "ok"]
    if ok:
        return max(ok)
    some = [int(r["tier"]) for r in rows if (num(r.get("accepted")) or 0) > 0]
    return max(some) if some else None


def pick_ramp_run(cell):
    """The run whose t_accept is the (lower) median among the ok ones, else any
    run with a ramp file: its curve stands for the contender."""
    rs = [r for r in (cell.runs if cell else []) if r.get("ramp_file")]
    ok = sorted((r for r in rs if cellmod.status_of(r) == "ok"),
                key=lambda r: num(r.get("t_accept_s")) or 0)
    if ok:
        return ok[(len(ok) - 1) // 2]
    return rs[0] if rs else None


def gp_str(s):
    return "'" + s.replace("'", "''") + "'"


# The tier plots' figures: a run's value of each (None: not measured).
FIGURES = [
    ("t", lambda r: num(r.get("t_accept_s"))),
    ("rss", lambda r: None if num(r.get("server_rss_kib")) is None else num(r["server_rss_kib"]) / 1024),
    ("cpu", cpu_us_per_conn),
]


def figure_vals(c, f):
    return [v for v in (f(r) for r in c.used) if v is not None]


def bars_text(cell_list):
    """What a point and its bars are, as the plots' subtitle: the number of
    runs, and the interval named by what it is. With few runs the bootstrap
    95% interval of a median is the runs' min-max (bootstrap.py): it is then
    called min-max."""
    ns, kinds = set(), set()
    for c in cell_list:
        for _, f in FIGURES:
            vals = figure_vals(c, f)
            if not vals:
                continue
            ns.add(len(vals))
            if len(vals) > 1:
                _, lo, hi, _ = bootstrap.spread(vals)
                kinds.add("minmax" if (lo, hi) == (min(vals), max(vals)) else "ci")
    if not ns:
        return ""
    n = "%d" % min(ns) if len(ns) == 1 else "%d-%d" % (min(ns), max(ns))
    out = "median of %s run%s" % (n, "" if ns == {1} else "s")
    if kinds == {"minmax"}:
        out += ", bars: min-max of the runs"
        if min(ns) >= bootstrap.MIN_RUNS:
            out += " (= their bootstrap 95% interval)"
    elif kinds == {"ci"}:
        out += ", bars: bootstrap 95% interval of the median"
    elif kinds:
        out += ", bars: bootstrap 95%% interval of the median (>= %d runs) or min-max" % bootstrap.MIN_RUNS
    return out


def axis_vars(cell_list):
    """[(figure, log axis?, bar base)]: a log axis when the figure's medians
    span 20x or more (the smallest stays visible), its bars then starting
    at the power of 10 below the smallest value."""
    out = []
    for k, f in FIGURES:
        meds = [bootstrap.spread(v)[0] for v in (figure_vals(c, f) for c in cell_list) if v]
        lows = [min(v) for v in (figure_vals(c, f) for c in cell_list) if v]
        lg = bool(meds) and min(meds) > 0 and max(meds) >= 20 * min(meds)
        out.append((k, int(lg), 10 ** math.floor(math.log10(min(lows))) if lg else 0))
    return out


def dropped_note(cell_list):
    """Short text for the plots: how many runs were dropped, by status."""
    runs = [r for c in cell_list for r in c.runs]
    counts = {}
    for c in cell_list:
        for r in c.dropped:
            counts[cellmod.status_of(r)] = counts.get(cellmod.status_of(r), 0) + 1
    if not counts:
        return "ok runs only; none dropped"
    n = sum(counts.values())
    out = "ok runs only; %d of %d runs dropped (%s)" % (
        n, len(runs), ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    if any(c.all_disturbed for c in cell_list):
        out += "; %s all runs disturbed" % DAGGER
    return out


def stat_cols(s, fmt):
    return " ".join(fmt % v for v in s[:3]) if s else "NaN NaN NaN"


def floor_ratio(c, floor, f):
    """(ratio, lo, hi) of cell C's figure F over the floor cell's (medians, the
    bootstrap interval of their ratio), or None without a floor or a positive
    figure on both; the floor to itself is 1 by definition. The ratio plot's
    bars and report.md's "/ floor" columns."""
    a = figure_vals(floor, f) if floor is not None else []
    b = figure_vals(c, f)
    if not (a and b and min(a) > 0 and min(b) > 0):
        return None
    return (1.0, 1.0, 1.0) if floor is c else bootstrap.ratio_ci(a, b)


def tier_line(c, floor=None):
    """tier t(med lo hi) rss_mib(med lo hi) cpu_us_per_conn(med lo hi) label
    t/floor(med lo hi) cpu/floor(med lo hi), or None without a time. A
    figure no run measured is NaN (gnuplot leaves the point out), never a 0
    the plot would draw as measured; so is a ratio without a floor cell."""
    if c.stat("t_accept_s") is None:
        return None
    figs = [bootstrap.spread(figure_vals(c, f)) for _, f in FIGURES]
    ratios = [stat_cols(floor_ratio(c, floor, f), "%.4f") for _, f in (FIGURES[0], FIGURES[2])]
    return "%d %s %s %s %s %s" % (c.tier, stat_cols(figs[0], "%.4f"), stat_cols(figs[1], "%.3f"),
                                  stat_cols(figs[2], "%.3f"), c.label, " ".join(ratios))


def write_dat(path, lines):
    with open(path, "w") as f:
        f.write("# tier t_med t_lo t_hi rss_mib_med lo hi cpu_us_per_conn_med lo hi label "
                "t/floor_med lo hi cpu/floor_med lo hi\n")
        f.write("\n".join(lines) + "\n")


# The tier, ramp and bytes plots draw one series per contender and condition
# ("c", "c~stock": '/' in a condition becomes ','); at most this many
# conditions, else only the default one (the others have their own plots).
MAX_PLOT_CONDITIONS = 4


def series_of(contender, condition):
    return contender + ("~" + condition.replace("/", ",") if condition else "")


def plot_conditions(rows):
    """The conditions the tier/ramp/bytes plots draw, and a note for the rest."""
    conds = cellmod.conditions_of(rows)
    if len(conds) <= MAX_PLOT_CONDITIONS:
        return conds, ""
    keep = [""] if "" in conds else conds[:1]
    return keep, "; %d other conditions in their own plots" % (len(conds) - 1)


def report_modules():
    """The report modules (harness/lib/report_*.py, by name): each may define
    plotdata(run_dir, rows, data_dir) -> [names of harness/plots/NAME.gp to
    draw] and report(run_dir, rows, meta) -> markdown text ("" for nothing)."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    for n in sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(here, "report_*.py"))):
        try:
            out.append((n, importlib.import_module(n)))
        except Exception as e:     # noqa: BLE001  (a broken module must not take the report down)
            print("results.py: cannot load %s: %s: %s" % (n, type(e).__name__, e), file=sys.stderr)
    return out


def call_module(name, mod, func, *args):
    """mod.func(*args), or None when it has no such function; a module that
    fails is reported on stderr and skipped (the rest of the report stands)."""
    f = getattr(mod, func, None)
    if f is None:
        return None
    try:
        return f(*args)
    except Exception as e:      # noqa: BLE001  (one module must not take the report down)
        print("results.py: %s.%s failed: %s: %s" % (name, func, type(e).__name__, e),
              file=sys.stderr)
        return None


def status_counts(runs, skip="ok"):
    """"1 disturbed, 2 ramp-stalled": the runs not of status SKIP."""
    counts = {}
    for r in runs:
        if cellmod.status_of(r) != skip:
            counts[cellmod.status_of(r)] = counts.get(cellmod.status_of(r), 0) + 1
    return ", ".join("%d %s" % (k, s) for s, k in sorted(counts.items()))


def ramp_data(run_dir, data_dir, cell, ser, big_label):
    """The ramp files of every run of CELL with one: ramp-SER.dat for the
    median run (pick_ramp_run), ramp-SER-rREPEAT.dat for the others. Returns
    (title, [other files], {file: (last second, ok?)}) or None when no run
    has a readable ramp."""
    bold = pick_ramp_run(cell)
    if bold is None:
        return None
    faint, ends = [], {}
    for r in cell.runs:
        if not r.get("ramp_file"):
            continue
        try:
            path = os.path.join(run_dir, str(r["ramp_file"]))
            with runstore.open_regular(path, newline="") as f:
                pts = [(row["seconds"], row["accepted"]) for row in runstore.csv_rows(path, f)]
        except (OSError, KeyError, ValueError):
            continue
        if not pts:
            continue
        name = "ramp-%s.dat" % ser if r is bold else "ramp-%s-r%s.dat" % (ser, text(r, "repeat"))
        with open(os.path.join(data_dir, name), "w") as f:
            f.write("# seconds accepted (%s %s repeat %s, %s)\n" % (
                ser, big_label, text(r, "repeat"), cellmod.status_of(r)))
            f.write("".join("%s %s\n" % p for p in pts))
        ends[name] = (float(pts[-1][0]), cellmod.status_of(r) == "ok")
        if r is not bold:
            faint.append(name)
    if not os.path.exists(os.path.join(data_dir, "ramp-%s.dat" % ser)):
        return None
    other = status_counts(cell.runs)
    return ser.replace("~", " ") + (" (%s)" % other if other else ""), faint, ends


def ramp_axis(ramps):
    """The ramp plot's time axis: to 1.2x the end of the slowest ok run, so
    that a run that stalled for minutes does not squeeze the others into the
    first pixels; (xmax, or 0 for autoscale when no run is cut; [(series
    index, its longest run's end)] cut)."""
    ok_ends = [e for r in ramps for e, ok in r[3].values() if ok]
    if not ok_ends:
        return 0, []
    xmax = 1.2 * max(ok_ends)
    cut = [(i, max(e for e, _ in r[3].values()))
           for i, r in enumerate(ramps, 1) if max(e for e, _ in r[3].values()) > xmax]
    return (xmax if cut else 0), cut


def cmd_plotdata(run_dir, data_dir):
    rows = read_runs(run_dir)
    os.makedirs(data_dir, exist_ok=True)
    for old in glob.glob(os.path.join(data_dir, "*.dat")):
        os.remove(old)
    shown, cond_note = plot_conditions(rows)
    cl = [c for c in cellmod.cells(rows) if c.condition in shown]
    by_key = {(c.contender, c.tier, c.condition): c for c in cl}
    conts = cellmod.contenders_of(rows)
    tiers = sorted({c.tier for c in cl})
    # Per series: its ok cells (a line with bars), and cells where every
    # run was disturbed (open markers, its own file and key entry). One
    # tier: every series a row of single.dat (bars), the disturbed marked.
    with_data, disturbed, drawn, single, has_ratio = [], [], [], [], False
    for name in conts:
        for cond in shown:
            ok_lines, dist_lines = [], []
            ser = series_of(name, cond)
            for t in tiers:
                c = by_key.get((name, t, cond))
                line = c and tier_line(c, by_key.get(("floor", t, cond)))
                if not line:
                    if c:   # a row that says why it has no bar: "no ok run (3 ramp-stalled)"
                        single.append('%s %d%s %s%s %s "no ok run (%s)"' % (
                            ser, t, " NaN" * 9, c.label, " NaN" * 6, ser, status_counts(c.runs)))
                    continue
                drawn.append(c)
                # a ratio plot needs a contender beside the floor: the floor to itself is
                # 1 by definition, and gnuplot 5.4 segfaults drawing that lone bar (a
                # bench of CONTENDERS=floor exited 1 on it)
                has_ratio = has_ratio or (name != "floor" and line.split()[11] != "NaN")
                (dist_lines if c.all_disturbed else ok_lines).append(line)
                single.append('%s%s %s %s ""' % (ser, DAGGER if c.all_disturbed else "", line, ser))
            if ok_lines:
                with_data.append(ser)
                write_dat(os.path.join(data_dir, "tiers-%s.dat" % ser), ok_lines)
            if dist_lines:
                disturbed.append(ser)
                write_dat(os.path.join(data_dir, "tiers-%s-disturbed.dat" % ser), dist_lines)
    if len(tiers) == 1 and single:
        with open(os.path.join(data_dir, "single.dat"), "w") as f:
            f.write("# name, the columns of tiers-*.dat, series, why no bar (one tier: a bar per series)\n")
            f.write("\n".join(single) + "\n")
    # ramp curves at the largest tier: every run, its median run bold
    big = largest_tier(rows)
    ramps = []
    if big is not None:
        for name in conts:
            for cond in shown:
                c, ser = by_key.get((name, big, cond)), series_of(name, cond)
                got = c and ramp_data(run_dir, data_dir, c, ser, label_of(big))
                if got:
                    ramps.append((ser,) + got)
    # bytes per connection: each series at the largest tier it completed;
    # without an ok run anywhere, its largest tier where every run was
    # disturbed (the name marked with the dagger)
    bar_lines = []
    for name in conts:
        for cond in shown:
            mine = [c for c in cl if c.contender == name and c.condition == cond]
            usable = [c for c in mine if c.ok] or [c for c in mine if c.all_disturbed]
            if not usable:
                continue
            c = max(usable, key=lambda c: c.tier)
            ser = series_of(name, cond)
            label = ser + (DAGGER if c.all_disturbed else "")
            label = label if c.tier == big else "%s@%s" % (label, c.label)
            user = [max(v, 0) for v in figure_vals(c, lambda r: num(r.get("user_bytes_per_conn")))]
            kern = [max(v, 0) for v in figure_vals(c, lambda r: num(r.get("kernel_bytes_per_conn")))]
            tot = [max(num(r.get("user_bytes_per_conn")), 0) + max(num(r.get("kernel_bytes_per_conn")), 0)
                   for r in c.used if num(r.get("user_bytes_per_conn")) is not None
                   and num(r.get("kernel_bytes_per_conn")) is not None]
            u, k, t = (bootstrap.spread(v) or (0, 0, 0) for v in (user, kern, tot))
            bar_lines.append("%s %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %s" % (
                label, u[0], k[0], u[1], u[2], k[1], k[2], t[0], t[1], t[2], ser))
    if bar_lines:
        with open(os.path.join(data_dir, "bytes.dat"), "w") as f:
            f.write("# contender user_bytes kernel_bytes user_lo user_hi kernel_lo kernel_hi "
                    "total_med total_lo total_hi series (medians of the ok runs; "
                    "name%s: of the disturbed runs)\n" % DAGGER)
            f.write("\n".join(bar_lines) + "\n")
    logx = 1 if tiers and tiers[-1] >= 10 * tiers[0] else 0
    axes = axis_vars(drawn)
    with open(os.path.join(data_dir, "vars.gp"), "w") as f:
        # the measured tiers, every one a tic; per figure a log axis when its
        # medians span 20x or more, and the bars' base on it
        f.write("tier_tics = %s\n" % gp_str("(%s)" % ", ".join('"%s" %d' % (label_of(t), t) for t in tiers)))
        f.write("tier_lo = %d\ntier_hi = %d\n" % (tiers[0] if tiers else 0, tiers[-1] if tiers else 0))
        f.write("".join("logy_%s = %d\nbase_%s = %g\n" % (k, lg, k, b) for k, lg, b in axes))
        # the widest bar name (the bars' left margin, characters)
        f.write("single_width = %d\n" % max([len(ln.split()[0]) for ln in single] or [0]))
        f.write("single_series = %s\n" % gp_str(" ".join(ln.split()[18] for ln in single) if len(tiers) == 1 else ""))
        # series: "contender" or "contender~condition"
        f.write("contenders = %s\n" % gp_str(" ".join(with_data)))
        # series with tiers where every run was disturbed (drawn apart)
        f.write("disturbed = %s\n" % gp_str(" ".join(disturbed)))
        # the non-default conditions drawn (dash type: position in this list + 1)
        f.write("conditions = %s\n" % gp_str(" ".join(x.replace("/", ",") for x in shown if x)))
        f.write("dagger = %s\n" % gp_str(DAGGER))
        # what a point and its bars are, and how many runs were dropped
        f.write("bars = %s\n" % gp_str(bars_text(drawn)))
        f.write("dropped_note = %s\n" % gp_str(dropped_note(cl) + cond_note))
        # the ramps: per series i, its file ramp-SER.dat (the median run), the
        # title (with the other statuses) and the other runs' files
        f.write("ramp_n = %d\n" % len(ramps))
        xmax, cut = ramp_axis(ramps)
        cut = dict(cut)
        for i, (ser, title, faint, _) in enumerate(ramps, 1):
            if i in cut:    # "threads (3 ramp-stalled; runs to 466 s)"
                note = "runs to %.0f s" % cut[i]
                title = title[:-1] + "; " + note + ")" if title.endswith(")") else "%s (%s)" % (title, note)
            f.write("ramp_ser_%d = %s\nramp_title_%d = %s\nramp_faint_%d = %s\n" % (
                i, gp_str(ser), i, gp_str(title), i, gp_str(" ".join(faint))))
        f.write("ramp_xmax = %g\n" % xmax)
        f.write("ramp_others = %d\n" % (1 if any(r[2] for r in ramps) else 0))
        f.write("big_label = %s\n" % gp_str(label_of(big) if big else ""))
        f.write("logx = %d\n" % logx)
        # one tier: bars (single.dat), not a column of points
        f.write("ntiers = %d\n" % len(tiers))
        f.write("has_bytes = %d\n" % (1 if bar_lines else 0))
        f.write("bytes_series = %s\n" % gp_str(" ".join(ln.split()[-1] for ln in bar_lines)))
    extra = []
    for name, mod in report_modules():
        for plot in call_module(name, mod, "plotdata", run_dir, rows, data_dir) or []:
            if plot not in extra:
                extra.append(plot)
    print(" ".join(["tiers"] * bool(with_data or disturbed) + ["ramp"] * bool(ramps) +
                   ["bytes"] * bool(bar_lines) + ["ratio"] * has_ratio + extra))


# ---------------------------------------------------------------- report
PLOTS = [
    ("t_connect", "Time to connect vs tier"),
    ("rss", "Server RSS (anonymous) vs tier"),
    ("cpu", "Server CPU per accepted connection during the connect phase vs tier"),
    ("ramp", "Ramp at the largest tier: accepted vs seconds since the client started"),
    ("bytes", "Bytes per connection: kernel (both sockets) and server userspace"),
    ("ratio", "Time to connect and server CPU as a ratio to the floor"),
]

RUN_COLS = ["contender", "tier_label", "repeat", "status", "accepted", "t_accept_s",
            "t_client_established_s", "server_workers", "client_workers", "user_bytes_per_conn",
            "kernel_bytes_per_conn", "slab_bytes_per_conn", "server_rss_kib",
            "server_cpu_connect_s", "server_cpu_hold_pct", "client_cpu_run_s", "hb_p99_ms",
            "outside_cpu_pct", "note"]

DROPPED_COLS = ["contender", "tier", "repeat", "status", "cause", "outside_cpu_pct",
                "outside_top", "gate_wait_s"]


def floor_ratios(table):
    """Sets each summary row's "t_floor" and "cpu_floor": the median of its runs'
    time and connect CPU over the floor's run of the same tier, condition and
    repeat (compare.values: an absolute figure belongs to one instance, this
    ratio travels). The note under the table, or "" when no cell has a floor."""
    floors = {(t["cell"].tier, t["cell"].condition): t["cell"] for t in table
              if t["contender"] == "floor"}
    if not floors:
        return ""
    for t in table:
        base = floors.get((t["cell"].tier, t["cell"].condition))
        for key, (_, f) in (("t_floor", FIGURES[0]), ("cpu_floor", FIGURES[2])):
            r = floor_ratio(t["cell"], base, f)
            t[key] = fmt_stat(r + ("ci",), t["cell"]) if r else "-"
    return ("t_accept / floor, CPU connect / floor: the contender's median over the floor's at "
            "the same tier in this invocation, [a-b] the bootstrap 95% interval of that ratio "
            "(the ratio plot's bars). An absolute figure belongs to one machine instance; these "
            "ratios compare across instances (make compare).")


def dropped_cell(r, k):
    if k == "cause":
        return cellmod.cause_of(r)
    if k == "tier":
        return label_of(r["tier"])
    return text(r, k)


def cmd_report(run_dir):
    text = report_text(run_dir)     # first: a failure leaves the report as it was
    runstore.write_text(os.path.join(run_dir, "report.md"), text)


def report_text(run_dir):
    """RUN_DIR's report.md as this version writes it (docs.py check holds the
    committed results/reference* reports to it)."""
    rows = read_runs(run_dir)
    meta = runstore.read_meta(run_dir)
    s = meta.get("settings", {})
    name = os.path.basename(os.path.abspath(run_dir))
    out = ["# c1m benchmark: %s" % name, ""]
    out.append("Command:\n\n```\n%s\n```\n" % meta.get("command", "(unknown)"))
    if meta.get("completed") is False:
        out.append("**This run was interrupted; the tables hold the runs that finished.**\n")
    mem = num(meta.get("mem_total_kib"))     # (a hand-edited meta.json: "?" for a non-figure)
    machine = [
        ("CPU", "%s, %s cores" % (meta.get("cpu_model"), meta.get("cores"))),
        ("memory", "%.1f GiB" % (mem / 1048576) if mem and math.isfinite(mem) else "?"),
        ("kernel", "%s (%s)" % (meta.get("kernel"), meta.get("kernel_version"))),
        ("distro", meta.get("distro")),
        ("gcc", meta.get("gcc_version")),
        ("Python", "%s (%s)" % (meta.get("python_version"), meta.get("python"))),
        ("uvloop", meta.get("uvloop_version") or "not importable"),
        ("git commit", "%s%s" % (meta.get("git_commit"), " (dirty tree)" if meta.get("git_dirty") else "")),
        ("fd limit (soft/hard)", "%s / %s" % (meta.get("fd_limit_soft"), meta.get("fd_limit_hard"))),
        ("fs.file-max / fs.nr_open", "%s / %s" % (meta.get("fs_file_max"), meta.get("fs_nr_open"))),
        ("instance", fingerprint.one_line(meta["fingerprint"]) if meta.get("fingerprint")
         else "no fingerprint (meta.json from before fingerprints)"),
        ("calibration (c1m-calib)", calib_text(meta.get("calibration"))),
        ("started / finished (UTC)", "%s / %s" % (meta.get("started_utc"), meta.get("finished_utc"))),
    ]
    out.append("## Machine\n")
    out.append(md_table(["", ""], machine) + "\n")
    out.append("Settings: tiers %s, contenders %s, repeat %s, hold %s s, heartbeat %s, "
               "ramp timeout %s s (stalled after %s s without a new connection), usable memory floor "
               "%s MiB (MemAvailable less SReclaimable).\n" % (
                   s.get("tiers"), s.get("contenders"), s.get("repeat"), s.get("hold"),
                   s.get("heartbeat"), s.get("timeout"), s.get("ramp_stall", "-"),
                   s.get("min_available_mib")))
    out.append("## Summary (medians of the ok runs)\n")
    table = summary_rows(rows)
    cols = summary_cols(table)
    ratio_note = floor_ratios(table)
    if ratio_note:
        i = [k for k, _ in cols].index("cpu_connect_s") + 1
        cols = (cols[:4] + [("t_floor", "t_accept / floor")] + cols[4:i]
                + [("cpu_floor", "CPU connect / floor")] + cols[i:])
    out.append(md_table([h for _, h in cols], [[t[k] for k, _ in cols] for t in table]) + "\n")
    if ratio_note:
        out.append(ratio_note + "\n")
    out.append("\n".join(("  - " + line.strip()) if line.startswith("  ") else "- " + line
                          for line in footnotes(table)) + "\n")
    out.append("time to connect: client start until the server's own counters show all N open "
               "(polled every 10 ms). kernel B/conn: the socket slab caches, both ends of each "
               "loopback connection (2 sockets). slab B/conn: the whole /proc/meminfo Slab delta. "
               "Intervals: percentile bootstrap of the median, %d resamples, fixed seed. "
               "See harness/README.md.\n" % bootstrap.RESAMPLES)
    out.append(capacity_model.report_section(run_dir))   # the capacity table; it never raises
    out.append("## Plots\n")
    for base, title in PLOTS:
        png = os.path.join("plots", base + ".png")
        if os.path.exists(os.path.join(run_dir, png)):
            out.append("### %s\n\n![%s](%s)  \n[SVG](plots/%s.svg)\n" % (title, title, png, base))
    # the report modules' sections (report_*.py: profiles, scenarios)
    for mname, mod in report_modules():
        sec = call_module(mname, mod, "report", run_dir, rows, meta)
        if sec:
            out.append(sec.rstrip("\n") + "\n")
    with_cond = any(cellmod.condition_of(r) for r in rows)
    dcols = DROPPED_COLS[:2] + ["condition"] + DROPPED_COLS[2:] if with_cond else DROPPED_COLS
    rcols = RUN_COLS[:2] + ["condition"] + RUN_COLS[2:] if with_cond else RUN_COLS
    dropped = [r for r in rows if cellmod.status_of(r) != "ok"]
    out.append("## Runs dropped from the figures (%d of %d)\n" % (len(dropped), len(rows)))
    if dropped:
        out.append(md_table(dcols, [[dropped_cell(r, k) for k in dcols] for r in dropped]) + "\n")
    else:
        out.append("None: every run is `ok`.\n")
    out.append("## Runs\n")
    out.append(md_table(rcols, [[text(r, c) for c in rcols] for r in rows]) + "\n")
    profs = meta.get("sysctl_profiles") or {}
    if not profs and meta.get("sysctl_profile"):
        profs = {"tuned": meta["sysctl_profile"]}       # meta.json from before profiles
    if profs:
        same = meta.get("sysctl_profile_identical")
        out.append("## Kernel profile%s as applied in each run's namespace (%s)\n" % (
            "s" if len(profs) > 1 else "",
            "identical in all %s runs%s" % (meta.get("sysctl_profile_runs"),
                                            " of each profile" if len(profs) > 1 else "")
            if same else "DIFFERS between runs, see meta.json"))
        for label, prof in profs.items():
            if len(profs) > 1:
                out.append("%s:\n" % label)
            out.append("```\n" + "\n".join("%s = %s" % kv for kv in prof.items()) + "\n```\n")
    return "\n".join(out)


def main(argv):
    cmd, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    try:
        if cmd == "row" and len(args) >= 2:
            cmd_row(args[0], args[1], args[2:])
        elif cmd == "csv" and len(args) == 1:
            cmd_csv(args[0])
        elif cmd == "meta" and args:
            cmd_meta(args[0], args[1:])
        elif cmd == "machine" and len(args) == 1:
            cmd_machine(args[0])
        elif cmd == "summary" and len(args) == 1:
            cmd_summary(args[0])
        elif cmd == "plotdata" and len(args) == 2:
            cmd_plotdata(args[0], args[1])
        elif cmd == "report" and len(args) == 1:
            cmd_report(args[0])
        elif cmd == "compare":
            import compare
            return compare.main(args)
        else:
            raise Usage(__doc__.rstrip())
    except Usage as e:
        print(e, file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("results.py %s: %s" % (cmd, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    entry.run(main, sys.argv)

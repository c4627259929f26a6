"""report_profiles.py - what the kernel profiles change (PROFILE=stock,tuned,
tuned-KEY, ablate, FILE) and where drops start (RATE=...): report.md sections
and plot data. A report module (results.py report_modules): results.py calls
plotdata() from `results.py plotdata` and report() from `results.py report`.

Every figure is the median over a cell's runs (cells.py: contender x tier x
condition). A profile that breaks the ramp is the result, not noise: a cell
without an ok (or all-disturbed) run shows the runs that measured it anyway
(client-stopped, timeout, inconsistent, suspect), marked DOUBLE_DAGGER.

Sections (each only when its runs exist):
  - before/after, in the seeds' form: metric, better, stock, tuned, tuned/stock, per
    contender and tier (with the settings that differ, key by key);
  - every profile side by side (drops, retransmits, queue, failures);
  - one setting at a time: each tuned-KEY against tuned;
  - per client rate: the counters, and the first rate at which each
    contender's listener drops.
"""
import os
import statistics

import cells as cellmod
from cells import DAGGER, label_of, md_table, num

DOUBLE_DAGGER = "\u2021"
# statuses whose counters still measured the profile (the ramp ran; it is the
# result that it did not finish; storm-timeout: the ramp and hold finished, the
# recovery after the kill did not, which is the stock profile's storm result)
MEASURED = ("client-stopped", "timeout", "ramp-stalled", "inconsistent", "suspect", "storm-timeout")

# metric, what it is, format, which way is better ("lower", "higher", or ""
# for a figure that describes the load rather than scores it)
METRICS = [
    ("t_accept_s", "time to connect, s", "%.2f", "lower"),
    ("connect_p99_ms", "client connect latency p99, ms", "%.1f", "lower"),
    ("listen_overflows", "accept queue overflows (ListenOverflows)", "%.0f", "lower"),
    ("listen_drops", "dropped at the listener (ListenDrops)", "%.0f", "lower"),
    ("reqq_full_drop", "SYN queue full, SYN dropped (TCPReqQFullDrop)", "%.0f", "lower"),
    ("reqq_full_cookies", "SYN queue full, cookie sent (TCPReqQFullDoCookies)", "%.0f", "lower"),
    ("syncookies_sent", "syncookies sent (SyncookiesSent)", "%.0f", "lower"),
    ("syn_retrans", "SYN + SYN-ACK retransmits (TCPSynRetrans)", "%.0f", "lower"),
    ("acceptq_max", "accept queue high-water, one listener", "%.0f", ""),
    ("acceptq_sum_max", "accept queue high-water, all listeners", "%.0f", ""),
    ("acceptq_backlog", "accept queue limit per listener", "%.0f", "higher"),
    ("client_failed", "failed connects", "%.0f", "lower"),
    ("connect_timeouts", "connect timeouts (ETIMEDOUT)", "%.0f", "lower"),
    ("accepted", "connections the server accepted", "%.0f", "higher"),
    ("server_cpu_connect_s", "server CPU during the ramp, s", "%.2f", "lower"),
]
FMT = {m: f for m, _, f, _ in METRICS}
# the compact per-profile table and the ablation table
SIDE_COLS = ["t_accept_s", "listen_drops", "reqq_full_drop", "syn_retrans", "acceptq_max",
             "client_failed", "connect_timeouts"]
# what "drops" means in the rate table and the plots: refused at the listener
# (ListenDrops counts the accept-queue overflows too) plus SYN-queue drops
DROP_COLS = ("listen_drops", "reqq_full_drop")


# ---------------------------------------------------------------- figures
def runs_of(cell):
    """(the runs a cell's figures come from, mark): the ok (or all-disturbed)
    runs; else those that measured the profile without finishing (marked)."""
    if cell.used:
        return cell.used, DAGGER if cell.all_disturbed else ""
    runs = [r for r in cell.runs if cellmod.status_of(r) in MEASURED]
    return runs, DOUBLE_DAGGER if runs else ""


def median(cell, col):
    """The median of COL over runs_of(cell), or None."""
    runs, _ = runs_of(cell)
    vals = [v for v in (num(r.get(col)) for r in runs) if v is not None]
    return statistics.median(vals) if vals else None


def drops(cell):
    vals = [median(cell, c) for c in DROP_COLS]
    return None if all(v is None for v in vals) else sum(v or 0 for v in vals)


def fmt(col, v, mark=""):
    return "-" if v is None else (FMT.get(col, "%.2f") % v) + mark


def ratio(a, b):
    """a/b as text: "-" without both, "=" when both are 0, "inf" over a 0."""
    if a is None or b is None:
        return "-"
    if b == 0:
        return "=" if a == 0 else "inf"
    return "%.2f" % (a / b)


def other_of(cell):
    """The cell's condition without its profile: (variant, rate)."""
    r = cell.runs[0]
    return (str(r.get("variant") or ""), cellmod.rate_of(r))


def other_text(variant, rate):
    return ", ".join(x for x in (variant, "rate %d/s" % rate if rate else "") if x)


def groups(rows):
    """{(contender, tier, variant, rate): {profile: cell}} in cell order."""
    out = {}
    for c in cellmod.cells(rows):
        v, rt = other_of(c)
        out.setdefault((c.contender, c.tier, v, rt), {})[cellmod.profile_of(c.runs[0])] = c
    return out


def profiles_of(rows):
    seen = []
    for r in rows:
        p = cellmod.profile_of(r)
        if p not in seen:
            seen.append(p)
    return seen


def ablated(profiles):
    return [p for p in profiles if p.startswith("tuned-")]


def head(key):
    c, t, v, rt = key
    extra = other_text(v, rt)
    return "%s at %s%s" % (c, label_of(t), " (%s)" % extra if extra else "")


# ---------------------------------------------------------------- report
def before_after(rows, meta):
    g = {k: v for k, v in groups(rows).items() if "stock" in v and "tuned" in v}
    if not g:
        return []
    out = ["## What tuning buys: stock vs tuned kernel profile\n",
           "The same servers, client, flags and addresses; only the namespace's sysctls "
           "differ (stock: nothing written, a fresh namespace's values on this kernel). "
           "Medians of each cell's runs. tuned/stock: the tuned figure over the stock one "
           "(after/before, as the seeds give it); `better` says which way helps: below 1 is "
           "tuning's gain where lower is better (times, drops, retransmits, failures, CPU), "
           "above 1 where higher is better (connections accepted, the queue limit); the "
           "high-water marks describe the load (neither).\n"]
    profs = meta.get("sysctl_profiles") or {}
    st, tu = profs.get("stock") or {}, profs.get("tuned") or {}
    diff = [k for k in tu if st.get(k) != tu.get(k)]
    if diff:
        out.append("Settings that differ (read back in the runs' namespaces):\n")
        out.append(md_table(["key", "stock", "tuned"],
                            [["`%s`" % k, st.get(k, "?"), tu[k]] for k in diff]) + "\n")
    for key, by in g.items():
        s, t = by["stock"], by["tuned"]
        (_, ms), (_, mt) = runs_of(s), runs_of(t)
        lines = []
        for col, what, _, better in METRICS:
            a, b = median(s, col), median(t, col)
            if a is None and b is None:
                continue
            lines.append([what, better or "-", fmt(col, a, ms), fmt(col, b, mt), ratio(b, a)])
        out.append("### %s\n" % head(key))
        out.append("runs: stock %s; tuned %s\n" % (s.status_text(), t.status_text()))
        out.append(md_table(["metric", "better", "stock", "tuned", "tuned/stock"], lines) + "\n")
    out.append(notes(g.values()))
    return out


def notes(cell_maps):
    marks = {runs_of(c)[1] for by in cell_maps for c in by.values()}
    out = []
    if DAGGER in marks:
        out.append("- %s %s" % (DAGGER, cellmod.ALL_DISTURBED))
    if DOUBLE_DAGGER in marks:
        out.append("- %s no run held all N under this profile: the figures are those of the "
                   "runs that measured it anyway (%s)" % (DOUBLE_DAGGER, ", ".join(MEASURED)))
    return "\n".join(out) + "\n" if out else ""


def side_by_side(rows):
    profiles = profiles_of(rows)
    if len(profiles) < 2:
        return []
    lines, used = [], []
    for key, by in groups(rows).items():
        for p in profiles:
            c = by.get(p)
            if c is None:
                continue
            _, m = runs_of(c)
            used.append({p: c})
            lines.append([key[0], label_of(key[1]) + (" " + other_text(*key[2:]) if other_text(*key[2:]) else ""),
                          p, c.status_text()] + [fmt(col, median(c, col), m) for col in SIDE_COLS])
    out = ["## Every kernel profile side by side\n",
           md_table(["contender", "tier", "profile", "runs"] + SIDE_COLS, lines) + "\n"]
    n = notes(used)
    return out + ([n] if n else [])


def ablation(rows, meta):
    profiles = profiles_of(rows)
    keys = ablated(profiles)
    g = {k: v for k, v in groups(rows).items() if "tuned" in v and any(p in v for p in keys)}
    if not g:
        return []
    profs = meta.get("sysctl_profiles") or {}
    tu = profs.get("tuned") or {}
    out = ["## One setting at a time: tuned with one key back at its stock value\n",
           "Each row: the tuned profile except KEY (left at the fresh namespace's value). "
           "vs tuned: time to connect divided by tuned's; drops: ListenDrops + "
           "TCPReqQFullDrop, tuned's in the first row.\n"]
    for key, by in g.items():
        t = by["tuned"]
        tt, td = median(t, "t_accept_s"), drops(t)
        lines = [["(tuned)", "", "", fmt("t_accept_s", tt, runs_of(t)[1]), "1.00", fmt("listen_drops", td),
                  fmt("syn_retrans", median(t, "syn_retrans")), fmt("acceptq_max", median(t, "acceptq_max")),
                  fmt("client_failed", median(t, "client_failed"))]]
        for p in keys:
            c = by.get(p)
            if c is None:
                continue
            k = p[len("tuned-"):]
            _, m = runs_of(c)
            at_stock = (profs.get(p) or {}).get(k, "?")
            a = median(c, "t_accept_s")
            lines.append(["`%s`" % k, tu.get(k, "?"), at_stock, fmt("t_accept_s", a, m), ratio(a, tt),
                          fmt("listen_drops", drops(c), m), fmt("syn_retrans", median(c, "syn_retrans"), m),
                          fmt("acceptq_max", median(c, "acceptq_max"), m),
                          fmt("client_failed", median(c, "client_failed"), m)])
        out.append("### %s\n" % head(key))
        out.append(md_table(["key", "tuned", "stock", "time to connect s", "vs tuned", "drops",
                             "SYN retransmits", "accept queue max", "failed connects"], lines) + "\n")
    out.append(notes(g.values()))
    return out


def rate_key(rate):
    """Sort order of rates: unlimited (0) after every finite rate."""
    return (rate == 0, rate)


def rates(rows):
    rs = sorted({cellmod.rate_of(r) for r in rows}, key=rate_key)
    if len(rs) < 2:
        return []
    series = {}
    for c in cellmod.cells(rows):
        r = c.runs[0]
        k = (c.contender, c.tier, cellmod.profile_of(r), str(r.get("variant") or ""))
        series.setdefault(k, {})[cellmod.rate_of(r)] = c
    lines, first = [], []
    for k, by in series.items():
        start = None
        for rt in sorted(by, key=rate_key):
            c = by[rt]
            d = drops(c)
            _, m = runs_of(c)
            if start is None and d:
                start = rt
            lines.append([k[0], label_of(k[1]), k[2] + (" " + k[3] if k[3] else ""),
                          "%d/s" % rt if rt else "unlimited", fmt("t_accept_s", median(c, "t_accept_s"), m),
                          fmt("listen_drops", d, m), fmt("syn_retrans", median(c, "syn_retrans"), m),
                          fmt("client_failed", median(c, "client_failed"), m)])
        top = max(by, key=rate_key)
        first.append("- %s at %s, %s: %s" % (
            k[0], label_of(k[1]), k[2] + (" " + k[3] if k[3] else ""),
            "no drop up to %s" % ("%d/s" % top if top else "unlimited") if start is None
            else "drops from %s" % ("%d/s" % start if start else "unlimited (every finite rate held)")))
    return ["## Where drops start, per client connect rate\n",
            "drops: ListenDrops + TCPReqQFullDrop in the run's namespace; rate: the client's "
            "--rate (new connections/s over all workers; unlimited = as fast as it can).\n",
            md_table(["contender", "tier", "profile", "rate", "time to connect s", "drops",
                      "SYN retransmits", "failed connects"], lines) + "\n",
            "\n".join(first) + "\n"]


PLOTS = [
    ("profile_t_connect", "Time to connect per kernel profile"),
    ("profile_drops", "Drops, retransmits and failed connects per kernel profile"),
    ("profile_ablation", "One setting at a time: what putting each key back to stock changes"),
    ("profile_rates", "Drops per client connect rate"),
]


def report(run_dir, rows, meta):
    """report.md's profile sections (markdown), "" when no run used a
    non-default profile or rate."""
    if len(profiles_of(rows)) < 2 and len({cellmod.rate_of(r) for r in rows}) < 2:
        return ""
    out = before_after(rows, meta) + side_by_side(rows) + ablation(rows, meta) + rates(rows)
    pics = []
    for base, title in PLOTS:
        if os.path.exists(os.path.join(run_dir, "plots", base + ".png")):
            pics.append("### %s\n\n![%s](plots/%s.png)  \n[SVG](plots/%s.svg)\n" % (title, title, base, base))
    if pics:
        out += ["## Kernel profile plots\n"] + pics
    return "\n".join(out)


# ---------------------------------------------------------------- plot data
def gp_str(s):
    return "'" + s.replace("'", "''") + "'"


def dat(v):
    return "NaN" if v is None else "%g" % v


def positive(v):
    """For a log axis: a 0 (or nothing) is left out (NaN), never drawn as 1."""
    return "NaN" if not v else "%g" % v


def plotdata(run_dir, rows, data_dir):
    """Data files and profile-vars.gp for harness/plots/profile_*.gp; returns
    the names of the plots to draw (none whose every figure is missing:
    gnuplot cannot autoscale nothing). Counters are drawn on a log axis when
    any is above 0 (a 0 is then left out: "a missing bar is 0")."""
    plots = []
    profiles = profiles_of(rows)
    conts = cellmod.contenders_of(rows)
    g = groups(rows)
    v = {}

    def first_key(keys):
        # default variant and rate first, then the largest tier
        return sorted(keys, key=lambda k: (k[2] != "" or k[3] != 0, -k[1]))[0]

    multi = [k for k, by in g.items() if len(by) >= 2]
    if len(profiles) >= 2 and multi:
        _, t0, v0, r0 = first_key(multi)
        sel = {c: g.get((c, t0, v0, r0), {}) for c in conts}
        with_any = [c for c in conts if sel[c]]
        t_med = {c: [median(sel[c][p], "t_accept_s") if p in sel[c] else None for p in profiles]
                 for c in with_any}
        # a contender with no median in any profile (every run disturbed or
        # suspect) has no bar: gnuplot stops on a histogram column without one
        # valid point ("No valid points"), and bench.sh exited 1 on it
        drawn = [c for c in with_any if any(x is not None for x in t_med[c])]
        tl = [[t_med[c][i] for c in drawn] for i in range(len(profiles))]
        v["prof_tier"] = label_of(t0) + (" (%s)" % other_text(v0, r0) if other_text(v0, r0) else "")
        v["prof_contenders"] = " ".join(drawn)
        if drawn:
            with open(os.path.join(data_dir, "profile-t_connect.dat"), "w") as f:
                f.write("# profile %s: median time to connect, s\n" % " ".join(drawn))
                for p, line in zip(profiles, tl):
                    f.write("%s %s\n" % (p, " ".join(dat(x) for x in line)))
            plots.append("profile_t_connect")
        cols = ("listen_drops", "reqq_full_drop", "syn_retrans", "client_failed", "connect_timeouts")
        dl = [("%s~%s" % (c, p), [median(sel[c][p], col) for col in cols])
              for c in with_any for p in profiles if p in sel[c]]
        known = [x for _, line in dl for x in line if x is not None]
        if known:
            log = any(x > 0 for x in known)
            v["prof_log"] = "1" if log else "0"
            # on a log axis a counter that is 0 everywhere has no bar to draw, and
            # gnuplot refuses a histogram column without one valid point
            v["prof_cols"] = " ".join(str(i + 2) for i in range(len(cols))
                                      if not log or any((line[i] or 0) > 0 for _, line in dl))
            with open(os.path.join(data_dir, "profile-drops.dat"), "w") as f:
                f.write("# contender~profile %s\n" % " ".join(cols))
                for name, line in dl:
                    f.write("%s %s\n" % (name, " ".join((positive if log else dat)(x) for x in line)))
            plots.append("profile_drops")
    keys = ablated(profiles)
    ab = [k for k, by in g.items() if "tuned" in by and any(p in by for p in keys)]
    if ab:
        _, t0, v0, r0 = first_key(ab)
        with_ab = [c for c in conts if "tuned" in g.get((c, t0, v0, r0), {})]
        lines = []
        for p in keys:
            vt, vd = [], []
            for c in with_ab:
                by = g[(c, t0, v0, r0)]
                cell = by.get(p)
                tt, a = median(by["tuned"], "t_accept_s"), median(cell, "t_accept_s") if cell else None
                vt.append(a / tt if a is not None and tt else None)
                dt, da = drops(by["tuned"]), drops(cell) if cell else None
                vd.append(da - dt if da is not None and dt is not None else None)
            lines.append((p[len("tuned-"):].replace("net.ipv4.", "").replace("net.core.", ""), vt, vd))
        if any(x is not None for _, vt, _ in lines for x in vt):
            # a drop difference nobody measured is drawn as none (0): the bar
            # above it says whether the run happened
            with open(os.path.join(data_dir, "profile-ablation.dat"), "w") as f:
                f.write("# key, time to connect / tuned's per contender (%s), then drops - tuned's\n"
                        % " ".join(with_ab))
                for k, vt, vd in lines:
                    f.write("%s %s %s\n" % (k, " ".join(dat(x) for x in vt),
                                            " ".join(dat(x if x is not None else 0) for x in vd)))
            v["abl_contenders"] = " ".join(with_ab)
            v["abl_tier"] = label_of(t0) + (" (%s)" % other_text(v0, r0) if other_text(v0, r0) else "")
            plots.append("profile_ablation")
    rs = sorted({cellmod.rate_of(r) for r in rows}, key=rate_key)
    if len(rs) >= 2:
        big = max(c.tier for c in cellmod.cells(rows))
        series, pts_all = [], {}
        for c in conts:
            for p in profiles:
                pts = [(i, rt, drops(g[(c, big, "", rt)][p]))
                       for i, rt in enumerate(rs) if p in g.get((c, big, "", rt), {})]
                if pts:
                    name = c if p == "tuned" else "%s~%s" % (c, p)
                    series.append(name)
                    pts_all[name] = pts
        known = [d for pts in pts_all.values() for _, _, d in pts if d is not None]
        if known:
            log = any(d > 0 for d in known)
            for name, pts in pts_all.items():
                with open(os.path.join(data_dir, "profile-rate-%s.dat" % name), "w") as f:
                    f.write("# index rate drops (%s)\n" % name)
                    f.write("".join("%d %s %s\n" % (i, "%d" % rt if rt else "unlimited",
                                                     (positive if log else dat)(d))
                                    for i, rt, d in pts))
            v["rate_series"] = " ".join(series)
            v["rate_tier"] = label_of(big)
            v["rate_log"] = "1" if log else "0"
            plots.append("profile_rates")
    with open(os.path.join(data_dir, "profile-vars.gp"), "w") as f:
        for k, val in v.items():
            f.write("%s = %s\n" % (k, val if k.endswith("_log") else gp_str(val)))
    return plots

"""report_storm.py - the reconnect storm's plots and table (SCENARIO=storm,
harness/lib/scenarios/storm.sh). A report module of results.py (report_*.py):

plotdata(run_dir, rows, data_dir): for each tier and condition of the storm
runs, the restarted server's open connections through the kill and the
recovery (runs/ID/storm.csv), one line per contender: its ok run with the
median recovery time, else its first run with a curve (titled with its
status) -> plots/storm_curves.{png,svg}, one panel per tier and condition.
Where a tier and profile ran both client policies, `now` (solid) against
`backoff` (dashed) -> plots/storm_policies.{png,svg}, one panel each.

report(run_dir, rows, meta): the storm table: per tier, condition and
contender the recovery time (kill until the server's counters show all N
again; median of the ok runs), its ratio to c under the same tier and
condition, the client's failed reconnects, the namespace's drops and SYN
retransmits during the storm, the restarted server's CPU and peak memory.
"""
import os

import bootstrap
import cells as cellmod
import runstore
from cells import fmt_stat, md_table

CURVES = "storm_curves"
POLICIES = "storm_policies"
PANEL_COLS = 2
POLICY_DASH = {"now": 1, "backoff": 2}


def storm_rows(rows):
    return [r for r in rows if str(r.get("scenario") or "") == "storm"]


def num(r, k):
    return cellmod.num(r.get(k))


def curve_path(run_dir, r):
    rd = str(r.get("run_dir") or "")
    return os.path.join(run_dir, rd, "storm.csv") if rd else None


def read_curve(path):
    """[(seconds, open)] of a storm.csv, [] when missing or unreadable."""
    try:
        with runstore.open_regular(path, newline="") as f:
            return [(float(row["seconds"]), int(row["open"])) for row in runstore.csv_rows(path, f)]
    except (OSError, TypeError, KeyError, ValueError):
        return []


def pick_run(runs, run_dir):
    """(run, curve): the ok run with the median recovery time that has a
    curve, else the first run with one; (None, []) when none has."""
    ok = sorted((r for r in runs if cellmod.status_of(r) == "ok"
                 and num(r, "storm_recovery_s") is not None),
                key=lambda r: num(r, "storm_recovery_s"))
    order = ok[(len(ok) - 1) // 2:] + ok[:(len(ok) - 1) // 2] + [r for r in runs if r not in ok]
    for r in order:
        pts = read_curve(curve_path(run_dir, r))
        if pts:
            return r, pts
    return None, []


def gp_str(s):
    return "'" + str(s).replace("'", "''") + "'"


def profile_of(r):
    f = getattr(cellmod, "profile_of", None)
    return f(r) if f else "tuned"


def write_panels(data_dir, pfx, title, panels, lines):
    """panels: [(title, target, [(contender, series title, dash, points)])];
    one .dat per series and the variables storm_panels.gp reads."""
    lines += ["%s_title = %s" % (pfx, gp_str(title)), "%s_n = %d" % (pfx, len(panels)),
              "%s_cols = %d" % (pfx, min(PANEL_COLS, len(panels)))]
    for i, (ptitle, target, series) in enumerate(panels, 1):
        lines += ["%s_title_%d = %s" % (pfx, i, gp_str(ptitle)),
                  "%s_target_%d = %d" % (pfx, i, target), "%s_k_%d = %d" % (pfx, i, len(series))]
        for k, (cont, stitle, dash, pts) in enumerate(series, 1):
            name = "%s-%d-%d.dat" % (pfx, i, k)
            with open(os.path.join(data_dir, name), "w") as f:
                f.write("# seconds_since_kill open (%s)\n" % stitle)
                f.write("".join("%.3f %d\n" % p for p in pts))
            lines += ["%s_f_%d_%d = %s" % (pfx, i, k, gp_str(name)),
                      "%s_c_%d_%d = %s" % (pfx, i, k, gp_str(cont)),
                      "%s_t_%d_%d = %s" % (pfx, i, k, gp_str(stitle)),
                      "%s_d_%d_%d = %d" % (pfx, i, k, dash)]


def cond_text(cond):
    """A storm condition with its profile spelt out: "now" -> "tuned/now"."""
    first = cond.split("/")[0] if cond else ""
    return cond if first not in ("", "now", "backoff") else "tuned" + ("/" + cond if cond else "")


def series_title(name, r):
    st = cellmod.status_of(r)
    return name if st == "ok" else "%s (%s)" % (name, st)


def plotdata(run_dir, rows, data_dir):
    rows = storm_rows(rows)
    if not rows:
        return []
    conts = cellmod.contenders_of(rows)
    conds = cellmod.conditions_of(rows)
    tiers = sorted({int(r["tier"]) for r in rows})
    groups = {}
    for r in rows:
        groups.setdefault((int(r["tier"]), cellmod.condition_of(r), r.get("contender")), []).append(r)
    curves, picked = [], {}
    for t in tiers:
        for cond in conds:
            series = []
            for name in conts:
                r, pts = pick_run(groups.get((t, cond, name), []), run_dir)
                if r is None:
                    continue
                picked[(t, cond, name)] = (r, pts)
                series.append((name, series_title(name, r), 1, pts))
            if series:
                curves.append(("%s, %s" % (cellmod.label_of(t), cond_text(cond)), t, series))
    policies = []
    for t in tiers:
        # now and backoff are paired under the same profile and client --rate
        profs = []
        for (tt, cond, name), (r, pts) in picked.items():
            if tt == t and (profile_of(r), cellmod.rate_of(r)) not in profs:
                profs.append((profile_of(r), cellmod.rate_of(r)))
        for prof, rate in profs:
            series = []
            for name in conts:
                for var in ("now", "backoff"):
                    hit = [rp for (tt, cond, n), rp in picked.items()
                           if tt == t and n == name and profile_of(rp[0]) == prof
                           and cellmod.rate_of(rp[0]) == rate
                           and str(rp[0].get("variant") or "") == var]
                    if hit:
                        r, pts = hit[0]
                        series.append((name, series_title("%s %s" % (name, var), r),
                                       POLICY_DASH[var], pts))
            if {POLICY_DASH["now"], POLICY_DASH["backoff"]} <= {s[2] for s in series}:
                policies.append(("%s, %s%s: now (solid) vs backoff (dashed)" % (
                    cellmod.label_of(t), prof, ", rate %d/s" % rate if rate else ""), t, series))
    lines, out = [], []
    if curves:
        write_panels(data_dir, "sc", "Reconnect storm: the server's open connections after "
                     "every server process was killed", curves, lines)
        out.append(CURVES)
    if policies:
        write_panels(data_dir, "sp", "Reconnect storm: client policy now vs backoff "
                     "(full jitter)", policies, lines)
        out.append(POLICIES)
    if out:
        with open(os.path.join(data_dir, "storm_vars.gp"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return out


def ratio_text(cell, ref):
    """median(cell) / median(ref) of storm_recovery_s, with the bootstrap
    interval when both have MIN_RUNS runs."""
    if ref is None or cell is ref:
        return "1" if cell is ref and cell.stat("storm_recovery_s") else "-"
    a = [v for v in (cellmod.num(r.get("storm_recovery_s")) for r in ref.used) if v]
    b = [v for v in (cellmod.num(r.get("storm_recovery_s")) for r in cell.used) if v]
    if not a or not b:
        return "-"
    try:
        ratio, lo, hi = bootstrap.ratio_ci(a, b)
    except ValueError:          # a value <= 0: no ratio
        return "-"
    if min(len(a), len(b)) >= bootstrap.MIN_RUNS:
        return "%.2f [%.2f-%.2f]" % (ratio, lo, hi)
    return "%.2f" % ratio


def client_back_s(r):
    """Kill until the client's last reconnect (its own clock: a slow server's
    kernel completes handshakes long before the server accepts them)."""
    last, start, kill = (num(r, "client_last_reconnect_s"), num(r, "client_start_unix_ms"),
                         num(r, "storm_kill_unix_ms"))
    if None in (last, start, kill):
        return None
    return (start + last * 1000 - kill) / 1000


COLS = ["tier", "condition", "contender", "status", "recovery s", "machine CPU %", "ratio to c",
        "client back s", "ready s", "reconnect failures", "by errno (median run)", "ListenOverflows",
        "ListenDrops", "SYN retrans", "server CPU s", "peak RSS MiB", "held RSS MiB"]


def report(run_dir, rows, meta):
    # the tables' formatting, results.py's (imported here: it imports this module)
    rows = storm_rows(rows)
    if not rows:
        return ""
    cl = cellmod.cells(rows)
    by = {(c.tier, c.condition, c.contender): c for c in cl}
    table = []
    for c in sorted(cl, key=lambda c: (c.tier, cellmod.conditions_of(rows).index(c.condition))):
        def fmt(col, f="%.2f", scale=1.0, c=c):
            return fmt_stat(c.stat(col), c, f, scale)
        r, _ = pick_run(c.used or c.runs, run_dir)
        table.append([
            c.label, cond_text(c.condition), c.contender, c.status_text(),
            fmt("storm_recovery_s"), fmt("storm_machine_cpu_pct", "%.0f"), ratio_text(c, by.get((c.tier, c.condition, "c"))),
            fmt_stat(bootstrap.spread([client_back_s(x) for x in c.used]), c),
            fmt("storm_ready_s"), fmt("client_reconnect_failures", "%.0f"),
            str((r or {}).get("client_reconnect_failures_by") or "-"),
            fmt("storm_listen_overflows", "%.0f"), fmt("storm_listen_drops", "%.0f"),
            fmt("storm_syn_retrans", "%.0f"), fmt("storm_server_cpu_s"),
            fmt("storm_server_rss_peak_kib", "%.0f", 1 / 1024),
            fmt("server_rss_kib", "%.0f", 1 / 1024),
        ])
    s = meta.get("settings", {}) if isinstance(meta, dict) else {}
    out = ["## Reconnect storm\n",
           "After the ramp and the hold, every server process was killed at once (SIGKILL) "
           "and started again with the same command as soon as they were gone; the client "
           "reconnected each closed connection itself: `now` at once (and at once again after "
           "a failure), `backoff` after a delay drawn from [0, min(cap, base x 2^attempt)] "
           "(full jitter; base %s ms, cap %s ms). Recovery: from the kill until the restarted "
           "server's own counters show all N open (polled every 10 ms); a storm that did not "
           "recover within %s s is `storm-timeout` and left out of the medians. Client back: "
           "from the kill until the client's last reconnect completed (the kernel completes "
           "handshakes before the server accepts them). Ready: from the kill until every "
           "worker of the restarted server listened (it was launched once the killed "
           "processes were gone). Machine CPU: the whole machine busy over the storm, %% of one "
           "CPU (client, server and kernel share the same CPUs: with `now`, refused reconnects "
           "keep the client's workers spinning beside the restarting server). Drops, "
           "overflows and SYN retransmits: the namespace's counters over the same window. "
           "Server CPU: the restarted server from its start to the recovery. Peak RSS: "
           "the restarted processes' VmHWM summed at the end of the recovery (each "
           "one's exact peak resident set since the restart, file pages included); held "
           "RSS: RssAnon of the original server with all N open, before the kill.\n" % (
               s.get("storm_backoff_base_ms") or 100, s.get("storm_backoff_cap_ms") or 10000,
               s.get("storm_timeout") or 300),
           md_table(COLS, table) + "\n"]
    for base, title in ((CURVES, "Open connections through the kill and the recovery"),
                        (POLICIES, "now vs backoff")):
        if os.path.exists(os.path.join(run_dir, "plots", base + ".png")):
            out.append("### %s\n\n![%s](plots/%s.png)  \n[SVG](plots/%s.svg)\n" % (
                title, title, base, base))
    return "\n".join(out)

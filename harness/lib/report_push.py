"""report_push.py - server push and stalled readers (SCENARIO=push and
SCENARIO=stall, harness/lib/scenarios/push.sh and stall.sh): report.md
sections and plot data. A report module of results.py (report_*.py).

plotdata(run_dir, rows, data_dir):
  push_broadcast  broadcast time (SIGUSR1 to every server worker until the
                  last connection received the line) vs tier, per contender
                  and condition: median, error bars as in the tier plots
  push_latency    delivery latency p99 vs tier, the same way
  stall_memory    memory per stalled connection, stacked: kernel (the
                  TCP buffer pages by sockstat, both ends), the server's
                  userspace growth and what the machine lost beyond both
                  (MemAvailable); per contender and variant at the largest
                  stall tier. Runs stopped by the memory guard (an unbounded
                  idiom: oom-guard) are drawn too, marked "(oom-guard)": what
                  they took before the guard stopped them is the finding.

report(run_dir, rows, meta): a table per scenario (push: latency, lines,
gaps, bytes, the server's `pushed`, the broadcast; stall: memory per stalled
connection, Send-Q, slow cuts and when they happened, how the phase ended).
"""
import os

import cells as cellmod
from cells import DAGGER, label_of, md_table, num

DOUBLE_DAGGER = "\u2021"    # figures of runs the memory guard stopped (oom-guard)
BROADCAST, LATENCY, STALL_MEM = "push_broadcast", "push_latency", "stall_memory"


def rows_of(rows, scenario):
    return [r for r in rows if str(r.get("scenario") or "") == scenario]


def series_of(contender, condition):
    return contender + ("~" + condition.replace("/", ",") if condition else "")


def gp_str(s):
    return "'" + str(s).replace("'", "''") + "'"


def runs_of(cell, oom_counts=False):
    """(runs the figures come from, mark): ok runs (all-disturbed: those,
    DAGGER); for the stall figures also runs the memory guard stopped
    (DOUBLE_DAGGER) when no other run made it."""
    if cell.used:
        return cell.used, DAGGER if cell.all_disturbed else ""
    if oom_counts:
        runs = [r for r in cell.runs if cellmod.status_of(r) == "oom-guard"]
        if runs:
            return runs, DOUBLE_DAGGER
    return [], ""


def stat(cell, col, oom_counts=False):
    """(median, lo, hi) of COL over runs_of(cell), lo/hi the min and max
    (the bootstrap interval needs 3 runs; these tables show few), or None."""
    runs, _ = runs_of(cell, oom_counts)
    vals = sorted(v for v in (num(r.get(col)) for r in runs) if v is not None)
    if not vals:
        return None
    n = len(vals)
    med = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
    return med, vals[0], vals[-1]


def fmt(cell, col, f="%.2f", scale=1.0, oom_counts=False):
    s = stat(cell, col, oom_counts)
    if s is None:
        return "-"
    _, mark = runs_of(cell, oom_counts)
    med, lo, hi = (x * scale for x in s)
    out = f % med
    if (f % lo) != (f % hi):
        out += " (%s-%s)" % (f % lo, f % hi)
    return out + mark


def tier_lines(cells, col):
    """{series: ["tier med lo hi label"]} of COL over the cells."""
    out = {}
    for c in cells:
        s = stat(c, col)
        if s is None:
            continue
        out.setdefault(series_of(c.contender, c.condition), []).append(
            "%d %.6f %.6f %.6f %s" % (c.tier, s[0], s[1], s[2], c.label))
    return out


def write_series(data_dir, prefix, series):
    for name, lines in series.items():
        with open(os.path.join(data_dir, "%s-%s.dat" % (prefix, name)), "w") as f:
            f.write("# tier median min max label\n" + "\n".join(lines) + "\n")
    return " ".join(series)


def stall_bars(cells):
    """[(label, kernel, user, beyond)] per contender and condition at the
    largest tier with stall figures (oom-guard runs included, marked). beyond:
    what the machine lost (MemAvailable) past kernel + user, the page fragments
    the held lines keep; 0 when lost is not more, or was not measured."""
    have = [c for c in cells if stat(c, "stall_tcp_mem_bytes_per_stalled", True) is not None]
    if not have:
        return [], None
    big = max(c.tier for c in have)
    top = [c for c in have if c.tier == big]
    # a profile every bar shares ("file=NAME/") says nothing apart: left out of the labels
    prefix = os.path.commonprefix([(c.condition or "") for c in top])
    prefix = prefix[:prefix.rfind("/") + 1]
    out = []
    for c in top:
        k = stat(c, "stall_tcp_mem_bytes_per_stalled", True)
        u = stat(c, "stall_user_bytes_per_stalled", True)
        lost = stat(c, "stall_avail_drop_bytes_per_stalled", True)
        _, mark = runs_of(c, True)
        label = "%s %s" % (c.contender, (c.condition or "")[len(prefix):])
        if mark == DOUBLE_DAGGER:
            label += " (oom-guard)"
        elif mark:
            label += " " + mark
        kern, user = max(k[0], 0), max(u[0], 0) if u else 0
        out.append((label.strip(), kern, user, max(lost[0] - kern - user, 0) if lost else 0))
    return out, big


def plotdata(run_dir, rows, data_dir):
    push = cellmod.cells(rows_of(rows, "push"))
    stall = cellmod.cells(rows_of(rows, "stall"))
    if not push and not stall:
        return []
    plots, lines = [], []
    bc = write_series(data_dir, BROADCAST, tier_lines(push, "broadcast_s"))
    lat = write_series(data_dir, LATENCY, tier_lines(push, "push_p99_ms"))
    lines += ["bc_series = %s" % gp_str(bc), "lat_series = %s" % gp_str(lat)]
    if bc:
        plots.append(BROADCAST)
    if lat:
        plots.append(LATENCY)
    bars, big = stall_bars(stall)
    if bars:
        with open(os.path.join(data_dir, STALL_MEM + ".dat"), "w") as f:
            f.write("# label kernel_bytes user_bytes beyond_bytes (per stalled connection, medians)\n")
            f.write("".join('"%s" %.0f %.0f %.0f\n' % b for b in bars))
        lines.append("stall_label = %s" % gp_str(label_of(big)))
        plots.append(STALL_MEM)
    with open(os.path.join(data_dir, "push_vars.gp"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return plots


def plot_md(run_dir, base, title):
    if os.path.exists(os.path.join(run_dir, "plots", base + ".png")):
        return "### %s\n\n![%s](plots/%s.png)  \n[SVG](plots/%s.svg)\n" % (title, title, base, base)
    return ""


PUSH_COLS = ["tier", "condition", "contender", "status", "latency p50 ms", "p99 ms", "max ms",
             "received", "server pushed", "missing", "bad", "MiB received", "broadcast s",
             "server wrote it s", "reached"]


def push_section(run_dir, cells, settings):
    table = []
    for c in cells:
        table.append([c.label, c.condition or "-", c.contender, c.status_text(),
                      fmt(c, "push_p50_ms", "%.2f"), fmt(c, "push_p99_ms", "%.2f"),
                      fmt(c, "push_max_ms", "%.1f"), fmt(c, "push_received", "%.0f"),
                      fmt(c, "push_pushed", "%.0f"), fmt(c, "push_missing", "%.0f"),
                      fmt(c, "push_bad", "%.0f"), fmt(c, "push_bytes", "%.1f", 1 / 1048576),
                      fmt(c, "broadcast_s", "%.3f"), fmt(c, "broadcast_server_s", "%.3f"),
                      fmt(c, "broadcast_reached", "%.0f")])
    size, every = settings.get("push_bytes") or 1024, str(settings.get("push_every") or 30)
    if every == "0":        # PUSH_EVERY=0: the broadcast alone
        what = ("Each server pushed nothing through the ramp and the hold (`PUSH_EVERY=0`): "
                "the lines are the broadcast's, one of %s bytes per connection. " % size)
    else:
        what = ("Each server pushed a line of %s bytes to every connection every %s s (paced "
                "over the interval%s) through the ramp and the hold. "
                % (size, every, "; all at once" if str(settings.get("push_burst") or 0) == "1" else ""))
    out = ["## Server push\n",
           what + "Latency: the client's "
           "CLOCK_REALTIME at the read that completed a line minus the server's stamp in it "
           "(the moment it handed the line to the kernel or its transport), over every line "
           "the client received. missing: sequence numbers skipped; bad: lines starting "
           "`push ` that did not parse. server pushed: the server's `pushed` counter at the "
           "end (lines still in flight when the client stopped are in it, not in received). "
           "Broadcast: after the hold, SIGUSR1 to every server worker at once; seconds from "
           "that signal until the last connection received a line sent after it (client "
           "side, client/push_watch.h); 'server wrote it': until the server's counters "
           "showed N more lines handed to the kernel. Figures: median (min-max) of the ok "
           "runs.\n",
           md_table(PUSH_COLS, table) + "\n",
           plot_md(run_dir, BROADCAST, "Broadcast time vs tier"),
           plot_md(run_dir, LATENCY, "Push delivery latency p99 vs tier")]
    return "\n".join(x for x in out if x)


STALL_COLS = ["tier", "condition", "contender", "status", "stalled", "ended", "phase s",
              "kernel B/stalled", "server user B/stalled", "MemAvailable B/stalled", "Send-Q B/stalled",
              "skmem w B/stalled", "cut as slow", "first cut s", "last cut s",
              "TCP mem peak MiB", "ss s"]


def steady_window(cells, settings):
    """The seconds without change that ended a phase `steady`, as the runs
    recorded them (stall_steady_s: STALL_STEADY or more, by the push
    interval); a range when they differ; the setting for older runs."""
    seen = sorted({num(r.get("stall_steady_s")) for c in cells for r in c.runs}
                  - {None})
    if not seen:
        return "%s" % (settings.get("stall_steady") or 10)
    lo, hi = ("%g" % seen[0]), ("%g" % seen[-1])
    return lo if lo == hi else "%s-%s" % (lo, hi)


def stall_section(run_dir, cells, settings):
    table = []
    for c in cells:
        f = lambda col, spec="%.0f", scale=1.0, c=c: fmt(c, col, spec, scale, oom_counts=True)
        runs, _ = runs_of(c, True)
        ends = sorted({str(r.get("stall_end") or "-") for r in runs}) or ["-"]
        table.append([c.label, c.condition or "-", c.contender, c.status_text(),
                      f("stalled"), "/".join(ends), f("stall_phase_s", "%.0f"),
                      f("stall_tcp_mem_bytes_per_stalled"), f("stall_user_bytes_per_stalled"),
                      f("stall_avail_drop_bytes_per_stalled"), f("stall_sendq_bytes_per_stalled"), f("stall_wmem_bytes_per_stalled"),
                      f("stall_cut"), f("stall_cut_first_s", "%.1f"),
                      f("stall_cut_last_s", "%.1f"),
                      f("stall_tcp_mem_peak_kib", "%.0f", 1 / 1024), f("stall_ss_s", "%.1f")])
    findings = [r for c in cells for r in c.runs if cellmod.status_of(r) == "oom-guard"]
    out = ["## Stalled readers\n",
           "The server pushed %s bytes to every connection every %s s%s; after the hold, the "
           "client stopped reading a fraction of each worker's connections (the condition: "
           "`stall=F`; `-sndbuf0`: the server with `--sndbuf 0`, kernel autotuning up to "
           "tcp_wmem's max, otherwise its default 4096 and `--max-pending 4096`), and the "
           "harness watched for up to %s s, once a second. ended: `cut` every stalled "
           "connection closed as slow; `steady` no cut, and TCP memory (and the server's RssAnon, plus 2 MiB) within a tenth of what the stalled peers would pin at the push rate, for %s s (`STALL_STEADY`, and at least the push intervals in which a filling peer would show); `wait` still "
           "filling at the end; `oom-guard` usable memory (MemAvailable less SReclaimable) under the floor, or falling fast "
           "enough to be under it at the next sample. kernel: the peak of sockstat's TCP "
           "`mem` pages (machine-wide) minus before the stall, x the page size, per "
           "stalled connection (both ends: the client's receive queue too). server user: "
           "peak RssAnon growth. MemAvailable: what the machine lost, MemAvailable just before "
           "the stall minus its low during the phase, per stalled connection; above kernel + "
           "user when the lines held for stalled peers share the sending task's 32 KiB page "
           "fragments with lines to reading peers, which then stay in memory too "
           "(harness/README.md, Scenario stall). Send-Q, skmem w: `ss -tmn` summed over the server's sockets "
           "once at the end (cut connections still draining in FIN-WAIT included). first/"
           "last cut: seconds from the stall to the first / last slow close (10 Hz counter "
           "samples). %s marks figures of runs the memory guard stopped: what an unbounded "
           "idiom took before it was stopped.\n" % (
               settings.get("stall_push_bytes") or 1024, settings.get("stall_push_every") or 1,
               (", in the naive idiom (`STALL_PUSH_FLOW=ignore`: the Python contenders write "
                "every push whatever is queued, without flow control)"
                if settings.get("stall_push_flow") == "ignore" else ""),
               settings.get("stall_wait") or 300, steady_window(cells, settings),
               DOUBLE_DAGGER),
           md_table(STALL_COLS, table) + "\n"]
    if findings:
        out.append("Runs the memory guard stopped:\n")
        out += ["- %s %s %s: %s" % (r.get("contender"), label_of(r.get("tier")),
                                    cellmod.condition_of(r), r.get("note") or "")
                for r in findings]
        out.append("")
    out.append(plot_md(run_dir, STALL_MEM, "Memory per stalled connection"))
    return "\n".join(x for x in out if x)


def report(run_dir, rows, meta):
    s = meta.get("settings", {}) if isinstance(meta, dict) else {}
    out = []
    push = cellmod.cells(rows_of(rows, "push"))
    if push:
        out.append(push_section(run_dir, push, s))
    stall = cellmod.cells(rows_of(rows, "stall"))
    if stall:
        out.append(stall_section(run_dir, stall, s))
    return "\n".join(out)

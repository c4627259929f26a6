"""cells.py - runs grouped by contender x tier x condition, and which runs count.

A run's condition (runs.csv `condition`: the kernel profile, scenario variant
and client rate that differ from the default, e.g. "stock", "rate=20000";
"" for the default) makes its own cell: runs of different conditions are
never pooled. Older records without the column are the default condition.

A cell's figures come from its `ok` runs only. Every other run is dropped and
counted by status (summary, plots and report say how many and why). A cell
with no `ok` run but `disturbed` ones shows the disturbed runs' median,
marked DAGGER ("all runs disturbed"), rather than nothing.
"""
import bootstrap

DAGGER = "\u2020"
ALL_DISTURBED = "all runs disturbed: median of the disturbed runs"


def num(v):
    if isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):     # (OverflowError: an int past a float's range)
        return None
    return f if f == f else None    # NaN is not a measurement


def label_of(n):
    n = int(n)
    if n % 1000000 == 0:
        return "%dm" % (n // 1000000)
    if n % 1000 == 0:
        return "%dk" % (n // 1000)
    return str(n)


def cpu_us_per_conn(r):
    """Server CPU in the connect phase per accepted connection, microseconds
    (report.md's cpu plot, the ladder of fixes)."""
    cpu, acc = num(r.get("server_cpu_connect_s")), num(r.get("accepted")) or num(r.get("tier"))
    return cpu / acc * 1e6 if cpu is not None and acc else None


def status_of(r):
    return str(r.get("status") or "?")


def condition_of(r):
    return str(r.get("condition") or "")


def profile_of(r):
    """A run's kernel profile as its condition names it (lib/profiles.sh
    profile_label: tuned, stock, tuned-KEY, file=NAME): the condition without
    the variant and the rate part; "tuned" when nothing is left (the default,
    and records from before profiles)."""
    parts = [p for p in condition_of(r).split("/")
             if p and p != str(r.get("variant") or "") and not p.startswith("rate=")]
    return parts[0] if parts else "tuned"


def rate_of(r):
    """The client's --rate of a run (0 = unlimited; also for older records)."""
    v = num(r.get("rate"))
    return int(v) if v and v > 0 else 0


class Cell:
    """One contender at one tier under one condition: all its runs, and the
    ones its figures use."""

    def __init__(self, contender, tier, runs, condition=""):
        self.contender, self.tier, self.runs = contender, tier, runs
        self.condition = condition
        self.ok = [r for r in runs if status_of(r) == "ok"]
        # A disturbed run stands in for missing ok runs (marked) only when its
        # figures passed the sanity bounds: a flag (record.py) would have made
        # an ok run `suspect`, which no median uses.
        disturbed = [r for r in runs if status_of(r) == "disturbed" and not r.get("flags")]
        self.all_disturbed = not self.ok and bool(disturbed)
        self.used = self.ok or disturbed
        self.counts = {}
        for r in runs:
            self.counts[status_of(r)] = self.counts.get(status_of(r), 0) + 1

    @property
    def label(self):
        return label_of(self.tier)

    @property
    def name(self):
        """"c 100k", or "c 100k stock" under a condition."""
        return " ".join(x for x in (self.contender, self.label, self.condition) if x)

    @property
    def dropped(self):
        return [r for r in self.runs if status_of(r) != "ok"]

    def stat(self, col):
        """(median, lo, hi, kind) of COL over the runs used; None without data.
        kind "ci": bootstrap 95% interval (>= 3 runs); "minmax" otherwise."""
        return bootstrap.spread([num(r.get(col)) for r in self.used])

    def status_text(self):
        """"ok" for one ok run; else counts: "ok 2/3, disturbed 1/3"."""
        if len(self.runs) == 1:
            return status_of(self.runs[0])
        n = len(self.runs)
        return ", ".join("%s %d/%d" % (s, k, n) for s, k in self.counts.items())


def contenders_of(rows):
    seen = []
    for r in rows:
        if r.get("contender") not in seen:
            seen.append(r.get("contender"))
    return seen


def conditions_of(rows):
    """The conditions in first-seen order ("" = the default)."""
    seen = []
    for r in rows:
        if condition_of(r) not in seen:
            seen.append(condition_of(r))
    return seen


def cells(rows):
    """[Cell] in first-seen contender order, then by tier, then by condition
    (first-seen order: a before/after pair sits together)."""
    g = {}
    for r in rows:
        g.setdefault((r.get("contender"), int(r["tier"]), condition_of(r)), []).append(r)
    order, conds = contenders_of(rows), conditions_of(rows)
    keys = sorted(g, key=lambda k: (order.index(k[0]), k[1], conds.index(k[2])))
    return [Cell(c, t, g[(c, t, d)], d) for (c, t, d) in keys]


# The field that says why a run has its status (the note comes after it).
CAUSE_FIELD = {"disturbed": "disturb_cause", "server-died": "health",
               "inconsistent": "health", "suspect": "flags"}


def cause_of(r):
    """Why a run was dropped: the field its status points at (disturb_cause,
    health or flags), then its note; for other statuses the note alone, else
    whichever of those fields is set."""
    first = CAUSE_FIELD.get(status_of(r))
    keys = [first, "note"] if first else ["note"]
    parts = []
    for k in keys:
        v = r.get(k)
        if v not in (None, "") and str(v) not in parts:
            parts.append(str(v))
    if status_of(r) == "disturbed" and r.get("flags"):    # why it could not stand in
        parts.append("flags %s" % r["flags"])
    if not parts:
        for k in ("disturb_cause", "health", "flags"):
            if r.get(k) not in (None, ""):
                parts.append(str(r[k]))
                break
    return "; ".join(parts)


def dropped_text(cell_list):
    """One line per cell with dropped runs and their causes:
    "c 100k: 1 of 3 dropped (disturbed 1): outside 12% (burn)"."""
    out = []
    for c in cell_list:
        d = c.dropped
        if not d:
            continue
        counts = {}
        for r in d:
            counts[status_of(r)] = counts.get(status_of(r), 0) + 1
        causes = []
        for r in d:
            if cause_of(r) and cause_of(r) not in causes:
                causes.append(cause_of(r))
        out.append("%s: %d of %d dropped (%s)%s%s" % (
            c.name, len(d), len(c.runs),
            ", ".join("%s %d" % kv for kv in counts.items()),
            " " + DAGGER if c.all_disturbed else "",
            (": " + "; ".join(causes))[:200] if causes else ""))
    return out


def fmt_stat(s, cell, fmt="%.2f", scale=1.0, interval=True):
    """"1.45 [1.40-1.80]" (95% CI, >= 3 runs), "1.45 (1.40-1.50)" (min-max),
    "1.45" (one value), "-" (none); DAGGER when only disturbed runs made it."""
    if s is None:
        return "-"
    med, lo, hi, kind = s
    med, lo, hi = med * scale, lo * scale, hi * scale
    out = fmt % med
    if interval and (fmt % lo) != (fmt % hi):
        out += (" [%s-%s]" if kind == "ci" else " (%s-%s)") % (fmt % lo, fmt % hi)
    return out + (DAGGER if cell.all_disturbed else "")


def md_table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in rows:
        out.append("| " + " | ".join(str(v).replace("|", "\\|").replace("\n", " ")
                                     for v in r) + " |")
    return "\n".join(out)

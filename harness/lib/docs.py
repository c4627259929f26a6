"""docs.py - the figures of README.md and docs/ rendered from the committed
results, and the check that they still agree (make docs, make docs-check).

    docs.py render [ROOT]     rewrite every marker's value, and results/README.md
    docs.py check [ROOT]      render in memory; exit 1 naming FILE:LINE on any
                              difference, unmarked figure, missing cited path

Markers (one line each; the text between them is what `render` writes):

  <!--fig DIR COLUMN STAT [key=value...]-->VALUE<!--/fig-->
      DIR is a directory under results/ (its runs.csv: the runs grouped into
      cells by harness/lib/cells.py, the ok runs only, the same median and
      interval code as report.md), or a CSV/JSON file under results/.
      STAT: median, lo, hi (the bootstrap 95% interval, or min-max under 3
      runs), ci ("median [lo-hi]"), min, max, n (runs used), ratio (this
      cell's median over the median of over=CONTENDER, or of over_tier=,
      over_condition=, over_dir=, over_col=), pairs (the same ratio run by run,
      repeat by repeat: "1.15x, 0.96x, 1.28x"), value (a CSV row's cell, a
      number or else its text, or a JSON field: COLUMN is a dotted path), sum (COLUMN is a |-joined list of
      a CSV row's columns), share (that sum over the row's of=COLUMN).
      keys: contender= tier= (1m, 300k) condition= select the cell
      (condition=A,B pools the runs of conditions A and B); any other
      key=value selects a CSV row (exactly one must match); fmt= the units
      (harness/lib/units.py: kib, bytes, s, x, pct, frac, int, fN ...);
      runs=all: every run of the cell, not only the ok ones (a run the medians
      leave out, quoted for what it did; say so beside it); plus=COLUMN adds
      that column's median; invert=1 takes 1/value first; scale= then multiplies (4096: pages to bytes); word=N takes the Nth
      word (from 0) of a text column (tcp_mem's three thresholds). Quote a name with spaces: "kernel: epoll".
  <!--table DIR summary [tier=T] [cols=KEY,KEY...]-->
  ...rendered table...
  <!--/table-->
      report.md's summary table (results.summary_rows) of DIR; or
  <!--table DIR cells [tier=T,..] [contender=C,..] [condition=..] "HEADER=COLUMN:STAT[:FMT]"...-->
      one row per cell, a column per HEADER (STAT as for fig, or ratio/CONTENDER;
      COLUMN contender,
      tier, condition or status: the cell's own).
  <!--out COMMAND ARGS...-->
  ```...```
  <!--/out-->
      the output of one of the project's own reporting commands (OUT_COMMANDS:
      harness/capacity, harness/lib/results.py summary|compare), run with
      the current interpreter from ROOT, in a code block.
  <!--hand SOURCE-->TEXT<!--/hand-->
      a figure written by hand; SOURCE says where it comes from.
  <!--checked--> ... <!--/checked-->
      a region where every figure (a decimal number, or a number with a unit
      or %) must be inside a fig, table or hand marker.

`check` also fails on a `results/...` path cited in README.md or docs/ that
does not exist, on a reference to a file outside the repository (`shared/`)
or to an issue number (there and in results/*/NOTES.md), and when results/README.md (the catalogue) differs
from what `render` would write.
Exit: 0 in agreement, 1 differences (listed), 2 usage.
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys

import bootstrap
import cells as cellmod
import results
import runstore
import units

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FIG_RE = re.compile(r"<!--fig (.*?)-->(.*?)<!--/fig-->")
HAND_RE = re.compile(r"<!--hand (.*?)-->(.*?)<!--/hand-->")
OUT_RE = re.compile(r"<!--out (.*?)-->\n(.*?)<!--/out-->", re.S)
OUT_COMMANDS = (["harness/capacity"], ["harness/lib/results.py", "summary"],
                ["harness/lib/results.py", "compare"])
TABLE_RE = re.compile(r"<!--table (.*?)-->\n(.*?)<!--/table-->", re.S)
PATH_RE = re.compile(r"(?<![\w-])results/[A-Za-z0-9_.\-/]*[A-Za-z0-9_]")
PLACEHOLDER_RE = re.compile(r"^results/([A-Z_]+|<|archive)")
FIGURE_RE = re.compile(r"(?<![\w.])\d[\d,]*(\.\d+)?(\s?(%|x\b|s\b|ms\b|µs\b|us\b|KiB|MiB|GiB|KB|MB|GB|B/|B\b))"
                       r"|(?<![\w.])\d+\.\d+")
FORBIDDEN_RE = re.compile(r"shared/(seeds|MACHINE|STYLE)|\b[Ii]ssues?[ -]#?\d+")
CATALOGUE = os.path.join("results", "README.md")
CELL_KEYS = ("contender", "tier", "condition")
OPT_KEYS = ("fmt", "scale", "of", "word", "invert", "plus", "runs", "over", "over_tier", "over_condition", "over_dir", "over_col")


class DocError(Exception):
    pass


def doc_files(root):
    """The documents whose markers are rendered and checked."""
    out = [os.path.join(root, "README.md")]
    out += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [p for p in out if os.path.exists(p)]


# ---------------------------------------------------------------- data
_cache = {}


def load_runs(root, d):
    key = ("runs", root, d)
    if key not in _cache:
        path = os.path.join(root, "results", d)
        if not os.path.exists(os.path.join(path, "runs.csv")):
            raise DocError("results/%s has no runs.csv" % d)
        try:
            _cache[key] = runstore.read_runs(path)
        except (OSError, ValueError) as e:
            raise DocError(str(e))
    return _cache[key]


def find_cell(rows, sel, d):
    """The cell SEL names; condition=A,B pools the runs of several conditions
    into one cell (said so beside the figure)."""
    tier, cont, cond = sel.get("tier"), sel.get("contender"), sel.get("condition", "")
    conds = cond.split(",")
    found = [c for c in cellmod.cells(rows)
             if c.contender == cont and (c.label == tier or str(c.tier) == tier)
             and c.condition in conds]
    if len(found) != len(conds):
        raise DocError("results/%s: no cell contender=%s tier=%s condition=%r" % (d, cont, tier, cond))
    if len(found) == 1:
        return found[0]
    return cellmod.Cell(cont, found[0].tier, [r for c in found for r in c.runs], cond)


def cell_stat(root, d, col, stat, sel, word=None, every=False):
    """STAT of COL over the cell's runs used for figures (the ok runs, as
    report.md), or over every run of the cell with runs=all (a run the
    medians leave out, quoted for what it did)."""
    rows = load_runs(root, d)
    if word is not None:          # the Nth word of a text column (tcp_mem: "low pressure high")
        rows = [dict(r, **{col: (str(r.get(col) or "").split() + [None] * (int(word) + 1))[int(word)]})
                for r in rows]
    c = find_cell(rows, sel, d)
    runs = c.runs if every else c.used
    if stat == "n":
        return len(runs)
    vals = [cellmod.num(r.get(col)) for r in runs]
    s = bootstrap.spread(vals)
    if s is None:
        raise DocError("results/%s: %s has no %s%s" % (d, c.name, col,
                                                      "" if every else " in its ok runs"))
    med, lo, hi, _ = s
    if stat in ("median", "ratio"):
        return med
    if stat in ("lo", "hi"):
        return lo if stat == "lo" else hi
    if stat in ("min", "max"):
        known = [v for v in vals if v is not None]
        return min(known) if stat == "min" else max(known)
    raise DocError("unknown stat %r" % stat)


def fmt_one(v, opts):
    if isinstance(v, str) and ("invert" in opts or "scale" in opts):
        # a CSV cell that is text (a ladder step's statuses) has no arithmetic
        raise DocError("scale=/invert= of a cell that is no number: %r" % v)
    if opts.get("invert") == "1":
        v = 1 / float(v) if float(v) else 0.0
    if "scale" in opts:
        v = float(v) * float(opts["scale"])
    fmt = opts.get("fmt")
    if not fmt:
        return str(v)
    try:
        return units.fmt_value(v, fmt)
    except (TypeError, ValueError) as e:
        raise DocError(str(e))


def ci_text(root, d, col, sel, opts):
    """"1,357 [1,356-1,371]": the median and its bootstrap 95% interval (3 runs
    or more), "(a-b)" the min-max under 3 runs, as report.md writes them."""
    c = find_cell(load_runs(root, d), sel, d)
    s = c.stat(col)
    if s is None:
        raise DocError("results/%s: %s has no %s" % (d, c.name, col))
    med, lo, hi, kind = s
    m, a, b = (fmt_one(x, opts) for x in (med, lo, hi))
    if a == b:
        return m
    unit = re.search(r"[^\d.,]*$", m).group(0)        # "8.6 µs [7.7-10.0]": the unit once
    if unit and a.endswith(unit) and b.endswith(unit):
        a, b = a[:len(a) - len(unit)], b[:len(b) - len(unit)]
    return m + ((" [%s-%s]" if kind == "ci" else " (%s-%s)") % (a, b))


def pairs_text(root, d, col, sel, opts):
    """"1.15x, 0.96x, 1.28x": the cell's runs over over=CONTENDER's, repeat by
    repeat (run order), where both runs of a repeat are used."""
    if "over" not in opts:
        raise DocError("pairs needs over=CONTENDER")
    rows = load_runs(root, d)
    a = find_cell(rows, sel, d)
    b = find_cell(rows, dict(sel, contender=opts["over"]), d)
    base = {str(r.get("repeat")): cellmod.num(r.get(col)) for r in b.used}
    out = []
    for r in a.used:
        v, w = cellmod.num(r.get(col)), base.get(str(r.get("repeat")))
        if v is not None and w:
            out.append(fmt_one(v / w, opts))
    if not out:
        raise DocError("results/%s: no pairs of %s and %s" % (d, a.name, b.name))
    return ", ".join(out)


def file_rows(root, rel):
    key = ("file", root, rel)
    if key not in _cache:
        path = os.path.join(root, "results", rel)
        try:
            with open(path, newline="") as f:
                _cache[key] = json.load(f) if rel.endswith(".json") else list(runstore.csv_rows(path, f))
        except (OSError, ValueError) as e:
            raise DocError("results/%s: %s" % (rel, e))
    return _cache[key]


def file_value(root, rel, col, stat, sel, of=None):
    data = file_rows(root, rel)
    if rel.endswith(".json"):
        v = data
        for part in col.split("."):
            if isinstance(v, list) and part.isdigit() and int(part) < len(v):
                v = v[int(part)]
            elif isinstance(v, dict) and part in v:
                v = v[part]
            else:
                raise DocError("results/%s: no field %s" % (rel, col))
        return v
    rows = [r for r in data if all(r.get(k) == v for k, v in sel.items())]
    if len(rows) != 1:
        raise DocError("results/%s: %d rows match %s" % (rel, len(rows), sel))
    if stat == "value" and rows[0].get(col) not in (None, "") and cellmod.num(rows[0][col]) is None:
        return rows[0][col]          # a text cell ("ok 2, disturbed 1"), as it is
    names = col.split("|") if stat in ("sum", "share") else [col]
    if stat == "share":
        names.append(of)
    vals = [cellmod.num(rows[0].get(n)) for n in names]
    if None in vals:
        raise DocError("results/%s: no number in %s" % (rel, ", ".join(names)))
    if stat == "share":
        return sum(vals[:-1]) / vals[-1] if vals[-1] else 0.0
    return sum(vals)


def check_opts(opts):
    """DocError naming the first option whose value is not of its kind."""
    if not re.fullmatch(r"[0-9]+", opts.get("word", "0")):
        raise DocError("word=%s: a word's number, 0 for the first" % opts["word"])
    if opts.get("invert", "1") not in ("0", "1"):
        raise DocError("invert=%s: 1 or 0" % opts["invert"])
    if cellmod.num(opts.get("scale", "1")) is None:
        raise DocError("scale=%s: a number" % opts["scale"])


def fig_value(root, spec):
    """The rendered text of one fig marker's SPEC."""
    try:
        args = shlex.split(spec)
    except ValueError as e:
        raise DocError("bad marker: %s" % e)
    if len(args) < 3:
        raise DocError("a fig marker needs DIR COLUMN STAT")
    d, col, stat = args[:3]
    kv = {}
    for a in args[3:]:
        k, eq, v = a.partition("=")
        if not eq:
            raise DocError("bad key=value %r" % a)
        kv[k] = v
    opts = {k: kv.pop(k) for k in OPT_KEYS if k in kv}
    check_opts(opts)
    if os.path.isdir(os.path.join(root, "results", d)):
        bad = [k for k in kv if k not in CELL_KEYS]
        if bad:
            raise DocError("unknown key %s" % bad[0])
        if stat == "ci":
            return ci_text(root, d, col, kv, opts)
        if stat == "pairs":
            return pairs_text(root, d, col, kv, opts)
        every = opts.get("runs") == "all"
        v = cell_stat(root, d, col, stat, kv, opts.get("word"), every)
        if stat == "ratio":
            if not any(k in opts for k in ("over", "over_tier", "over_condition", "over_dir", "over_col")):
                raise DocError("ratio needs over=, over_tier=, over_condition=, over_dir= or over_col=")
            sel = dict(kv)
            for k in ("over", "over_tier", "over_condition"):
                if k in opts:
                    sel[{"over": "contender"}.get(k, k[5:])] = opts[k]
            base = cell_stat(root, opts.get("over_dir", d), opts.get("over_col", col), "median", sel,
                             None, every)
            if not base:
                raise DocError("ratio over zero")
            v = v / base
        if "plus" in opts:                   # the sum of two columns' medians
            v += cell_stat(root, d, opts["plus"], "median", kv, None, every)
    else:
        if stat == "share" and "of" not in opts:
            raise DocError("share needs of=COLUMN")
        v = file_value(root, d, col, stat, kv, opts.get("of"))
    return fmt_one(v, opts)


def cells_table(root, d, args):
    """One row per cell of DIR (filters tier=, contender=, condition=, each a
    comma list), one column per "HEADER=COLUMN:STAT[:FMT]" (COLUMN contender,
    tier, condition or status: the cell's own)."""
    filt, cols = {}, []
    for a in args:
        k, eq, v = a.partition("=")
        if not eq:
            raise DocError("bad table argument %r" % a)
        if k in CELL_KEYS and v != k and ":" not in v:    # "contender=contender" is a column
            filt[k] = v.split(",")
        else:
            cols.append((k, v))
    if not cols:
        raise DocError("a cells table needs columns: \"HEADER=COLUMN:STAT[:FMT]\"")
    out = []
    for c in cellmod.cells(load_runs(root, d)):
        if ("tier" in filt and c.label not in filt["tier"]
                or "contender" in filt and c.contender not in filt["contender"]
                or "condition" in filt and c.condition not in filt["condition"]):
            continue
        row = []
        for _, v in cols:
            col, _, rest = v.partition(":")
            stat, _, fmt = rest.partition(":")
            own = {"contender": c.contender, "tier": c.label, "condition": c.condition,
                   "status": c.status_text()}
            if col in own:
                row.append(own[col])
                continue
            sel = {"contender": c.contender, "tier": c.label, "condition": c.condition}
            opts = {"fmt": fmt} if fmt else {}
            try:
                if stat == "ci":
                    row.append(ci_text(root, d, col, sel, opts))
                elif stat.startswith("ratio/"):       # over the same tier's cell of that contender
                    base = cell_stat(root, d, col, "median", dict(sel, contender=stat[6:]))
                    v = cell_stat(root, d, col, "median", sel)
                    row.append(fmt_one(v / base, opts) if base else "-")
                else:
                    row.append(fmt_one(cell_stat(root, d, col, stat or "median", sel), opts))
            except DocError:
                if not c.used:
                    row.append("-")
                else:
                    raise
        out.append(row)
    if not out:
        raise DocError("results/%s: no cells" % d)
    return cellmod.md_table([h for h, _ in cols], out) + "\n"


def table_text(root, spec):
    args = shlex.split(spec)
    if len(args) >= 2 and args[1] == "cells":
        return cells_table(root, args[0], args[2:])
    if len(args) < 2 or args[1] != "summary":
        raise DocError("a table marker is: DIR summary [tier=T] [cols=KEY,...], or DIR cells ...")
    kv = dict(a.partition("=")[::2] for a in args[2:])
    table = results.summary_rows(load_runs(root, args[0]))
    if "tier" in kv:
        table = [t for t in table if t["tier"] in kv["tier"].split(",")]
    if not table:
        raise DocError("results/%s: no cells" % args[0])
    cols = results.summary_cols(table)
    if "cols" in kv:
        want = kv["cols"].split(",")
        unknown = [k for k in want if k not in dict(cols)]
        if unknown:
            raise DocError("unknown column %s" % unknown[0])
        cols = [c for c in cols if c[0] in want]
    return cellmod.md_table([h for _, h in cols], [[t[k] for k, _ in cols] for t in table]) + "\n"


def out_text(root, spec):
    args = shlex.split(spec)
    if not any(args[:len(c)] == c for c in OUT_COMMANDS):
        raise DocError("an out marker runs only %s" % ", ".join(" ".join(c) for c in OUT_COMMANDS))
    key = ("out", root, spec)
    if key not in _cache:
        p = subprocess.run([sys.executable] + args, cwd=root, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        if p.returncode != 0:
            raise DocError("%s: exit %d: %s" % (spec, p.returncode, p.stderr.strip()[:200]))
        _cache[key] = "```\n%s\n```\n" % p.stdout.rstrip("\n")
    return _cache[key]


# ---------------------------------------------------------------- render
def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def render_text(text, root, errors, name="-"):
    """TEXT with every marker re-rendered; each failure appended to ERRORS as
    'NAME:LINE: message' (the marker then keeps its text)."""
    def fig(m):
        try:
            v = fig_value(root, m.group(1))
        except DocError as e:
            errors.append("%s:%d: %s" % (name, line_of(text, m.start()), e))
            return m.group(0)
        return "<!--fig %s-->%s<!--/fig-->" % (m.group(1), v)

    def table(m):
        try:
            v = table_text(root, m.group(1))
        except (DocError, ValueError) as e:
            errors.append("%s:%d: %s" % (name, line_of(text, m.start()), e))
            return m.group(0)
        return "<!--table %s-->\n%s<!--/table-->" % (m.group(1), v)

    def out(m):
        try:
            v = out_text(root, m.group(1))
        except (DocError, ValueError, OSError, subprocess.SubprocessError) as e:
            errors.append("%s:%d: %s" % (name, line_of(text, m.start()), e))
            return m.group(0)
        return "<!--out %s-->\n%s<!--/out-->" % (m.group(1), v)

    return FIG_RE.sub(fig, TABLE_RE.sub(table, OUT_RE.sub(out, text)))


def blank_markers(line):
    line = FIG_RE.sub("", line)
    line = HAND_RE.sub("", line)
    line = re.sub(r"<!--.*?-->", "", line)
    line = re.sub(r"`[^`]*`", "", line)
    return re.sub(r"\]\([^)]*\)", "]", line)         # link targets


def lint(text, root, name):
    """Unmarked figures in checked regions, cited results/ paths that do not
    exist, references outside the repository."""
    out = []
    checked = in_table = fence = False
    lines = text.split("\n")
    for i, line in enumerate(lines, 1):
        header = i < len(lines) and re.match(r"^\s*\|[-:| ]+\|\s*$", lines[i]) is not None
        # the parts of the line inside a checked region (a region may open or
        # close mid-line)
        parts, inside = [], checked
        for piece in re.split(r"(<!--/?checked-->)", line):
            if piece == "<!--checked-->":
                inside = True
            elif piece == "<!--/checked-->":
                inside = False
            elif inside:
                parts.append(piece)
        if "<!--table " in line or "<!--out " in line:
            in_table = True
        if line.lstrip().startswith("```"):
            fence = not fence
        elif parts and not in_table and not fence and not header:   # a table's header names
            m = FIGURE_RE.search(blank_markers(" ".join(parts)))
            if m:
                out.append("%s:%d: unmarked figure %r in a checked section" % (name, i, m.group(0)))
        if "<!--/table-->" in line or "<!--/out-->" in line:
            in_table = False
        checked = inside
        for m in PATH_RE.finditer(line):
            p = m.group(0)
            after = line[m.end():m.end() + 2]
            if (PLACEHOLDER_RE.match(p) or after.startswith("<") or after in ("-<", "/<")
                    or os.path.exists(os.path.join(root, p))):
                continue
            out.append("%s:%d: cites %s, which does not exist" % (name, i, p))
        m = FORBIDDEN_RE.search(line)
        if m:
            out.append("%s:%d: refers to %r, which is not in the repository" % (name, i, m.group(0)))
    return out


def notes_lint(root):
    """References outside the repository in the results directories' NOTES.md
    (the per-experiment notes the catalogue and the docs lead to)."""
    out = []
    for p in sorted(glob.glob(os.path.join(root, "results", "*", "NOTES.md"))
                    + glob.glob(os.path.join(root, "results", "*", "*", "NOTES.md"))):
        with open(p) as f:
            for i, line in enumerate(f, 1):
                m = FORBIDDEN_RE.search(line)
                if m:
                    out.append("%s:%d: refers to %r, which is not in the repository"
                               % (os.path.relpath(p, root), i, m.group(0)))
    return out


def reports_lint(root):
    """The committed results directories' report.md against what
    results.py report writes from their records today: a report an older
    version wrote (its columns, its pointers into the docs) is stale. The fix
    is `make plot RUN=DIR` (the plots the report shows are redrawn with it)."""
    out = []
    for d in sorted(glob.glob(os.path.join(root, "results", "reference*", ""))):
        rep = os.path.join(d, "report.md")
        if not os.path.exists(rep) or not os.path.exists(os.path.join(d, "runs.jsonl")):
            continue
        name = os.path.relpath(rep, root)
        try:
            with open(rep) as f:
                old = f.read()
            new = results.report_text(d)
        except Exception as e:   # noqa: BLE001 - one line naming the report, not a traceback
            out.append("%s: cannot be checked: %s: %s" % (name, type(e).__name__, e))
            continue
        if old != new:
            i, x, y = first_diff(old, new)
            out.append("%s:%d: not what results.py report writes from its records (has %r, writes %r); "
                       "run make plot RUN=%s" % (name, i, x.strip()[:120], y.strip()[:120],
                                                 os.path.relpath(d, root).rstrip("/")))
    return out


# ---------------------------------------------------------------- catalogue
def doc_texts(root):
    key = ("texts", root)
    if key not in _cache:
        out = []
        for p in doc_files(root) + [os.path.join(root, "harness", "README.md")]:
            if os.path.exists(p):
                with open(p) as f:     # a hand marker's SOURCE is not a citation
                    out.append((os.path.relpath(p, root), re.sub(r"<!--hand .*?-->", "", f.read())))
        _cache[key] = out
    return _cache[key]


def cite_re(d):
    return re.compile(r"results/%s(?![\w.-])" % re.escape(d))


def cited_by(root, d):
    return [name for name, text in doc_texts(root) if cite_re(d).search(text)]


def plain(md):
    md = re.sub(r"<!--fig .*?-->(.*?)<!--/fig-->", r"\1", md)
    md = re.sub(r"<!--.*?-->", "", md)
    md = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)
    md = re.sub(r"\s*\((?:[^()]*\b[Ii]ssues?[ -]#?\d+[^()]*)\)", "", md)
    return " ".join(md.replace("**", "").split()).rstrip(".:")


def question_from_docs(root, d):
    """The lead of the first paragraph that cites D (its bold phrase), else
    the heading of its section: what the directory is cited to show."""
    for name, text in doc_texts(root):
        text = re.sub(r"```.*?```", "", text, flags=re.S)       # commands are not questions
        m = cite_re(d).search(text)
        if not m:
            continue
        pos = m.start()
        while True:             # cited in a table: what the paragraph before the table asks
            ls = text.rfind("\n", 0, pos) + 1
            if not text.startswith("|", ls) or ls == 0:
                break
            pos = ls - 1
        start = max(text.rfind("\n\n", 0, pos), text.rfind("\n- ", 0, pos))
        para = text[start + 1:pos]
        bold = re.search(r"\*\*(.+?)\*\*", para)
        if bold:
            return plain(bold.group(1)) + " (%s)" % name
        heads = re.findall(r"^#+ (.+)$", text[:pos], re.M)
        if heads:
            return plain(heads[-1]) + " (%s)" % name
    return ""


def heading_question(path):
    """The directory's own question: the first line of its NOTES.md when that
    is a heading (else of its layers.md, a CPU anatomy's); None without one."""
    for name in ("NOTES.md", "layers.md"):
        try:
            with open(os.path.join(path, name)) as f:
                first = f.readline()
        except OSError:
            continue
        if first.startswith("#"):
            q = plain(first.lstrip("#"))
            if q and not q.lower().startswith("notes on this"):
                return q
    return None


def question_of(root, path, meta):
    """The directory's own question (heading_question), else meta.json's,
    else what the docs cite the directory for (questions_lint fails on a
    committed directory without its own)."""
    return (heading_question(path) or meta.get("question")
            or question_from_docs(root, os.path.basename(os.path.normpath(path))))


def questions_lint(root):
    """Every committed results directory asks its own question, in the first
    line of its NOTES.md: the catalogue's column, which a reader quoting a
    result goes by ("What tuning buys" for five directories told none apart)."""
    tracked = committed_result_dirs(root)
    if tracked is None:
        return []
    out, seen = [], {}
    for d in sorted(tracked):
        path = os.path.join(root, "results", d)
        if not os.path.isdir(path):
            continue
        q = heading_question(path)
        if q is None:
            out.append("results/%s/NOTES.md:1: no heading: write the question this directory answers "
                       "as its first line (`# ...`), the catalogue's question" % d)
        elif q.lower() in seen:
            out.append("results/%s/NOTES.md:1: the same question as results/%s (%r): say what tells "
                       "them apart" % (d, seen[q.lower()], q[:80]))
        else:
            seen[q.lower()] = d
    return out


def dir_meta_runs(path):
    """meta.json and the runs of a directory, or of its subdirectories (one
    results directory per part: each its own meta.json and runs.csv)."""
    def one(p):
        meta = runstore.read_meta(p)
        try:
            runs = runstore.read_runs(p)
        except OSError:
            runs = []
        except ValueError as e:             # a damaged runs file: named, never a crash
            raise DocError(str(e))
        return meta, runs
    meta, runs = one(path)
    if meta or runs:
        return [meta], runs
    metas, runs = [], []
    for sub in sorted(glob.glob(os.path.join(path, "*", ""))):
        m, r = one(sub)
        if m:
            metas.append(m)
        runs += r
    return metas or [{}], runs


def committed_result_dirs(root):
    """The results/ directories git tracks in root, or None when root is no git checkout.
    The catalogue lists what is committed: a run a user just made (results/<timestamp>,
    results/demo-*) must not make `make docs-check` fail as stale."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "results/"],
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    dirs = set()
    for f in out.decode("utf-8", "replace").split("\0"):
        parts = f.split("/")
        if len(parts) > 2 and parts[0] == "results":
            dirs.add(parts[1])
    return dirs


def catalogue(root):
    rows = []
    tracked = committed_result_dirs(root)
    # the headline (results/reference, what README.md quotes) first, the rest by name
    paths = sorted(glob.glob(os.path.join(root, "results", "*", "")),
                   key=lambda p: (os.path.basename(os.path.dirname(p)) != "reference",
                                  os.path.basename(os.path.dirname(p))))
    for path in paths:
        d = os.path.basename(os.path.dirname(path))
        if tracked is not None and d not in tracked:
            continue
        metas, runs = dir_meta_runs(path)
        counts = {}
        for r in runs:
            counts[cellmod.status_of(r)] = counts.get(cellmod.status_of(r), 0) + 1
        status = ", ".join("%s %d" % kv for kv in sorted(counts.items())) or "-"
        commits = []
        for m in metas:
            c = (m.get("git_commit") or "")[:7]
            if c:
                c += " (dirty)" if m.get("git_dirty") else ""
                if c not in commits:
                    commits.append(c)
        dates = sorted({(m.get("started_utc") or "")[:10] for m in metas} - {""})
        date = dates[0] + ("..%s" % dates[-1] if len(dates) > 1 else "") if dates else "-"
        cmds = ["`%s`" % (m.get("command") or "").replace("`", "'") for m in metas if m.get("command")]
        docs = ", ".join("[%s](../%s)" % (c, c) for c in cited_by(root, d)) or "-"
        rows.append(["[%s](%s/)" % (d, d), question_of(root, path, metas[0]) or "-",
                     "<br>".join(cmds) or "-", ", ".join(commits) or "-", date, status, docs])
    head = ("# Results: the catalogue\n\n"
            "Generated by `make docs` (harness/lib/docs.py) from each directory's NOTES.md "
            "(its first heading), meta.json and runs.csv; `make docs-check` fails when it is "
            "stale. runs: how many runs of each status (only `ok` runs make the medians). "
            "cited by: the documents that cite the directory. The headline reference first, "
            "the rest by name.\n\n")
    return head + cellmod.md_table(
        ["directory", "question", "command", "commit", "date", "runs", "cited by"], rows) + "\n"


# ---------------------------------------------------------------- commands
def render_all(root):
    """{path: (old, new)} and the errors."""
    errors, out = [], {}
    for p in doc_files(root):
        with open(p) as f:
            old = f.read()
        out[p] = (old, render_text(old, root, errors, os.path.relpath(p, root)))
    # the catalogue reads the documents as rendered (what render writes)
    texts = [(os.path.relpath(p, root), re.sub(r"<!--hand .*?-->", "", new))
             for p, (_, new) in out.items()]
    hr = os.path.join(root, "harness", "README.md")
    if os.path.exists(hr):
        with open(hr) as f:
            texts.append((os.path.relpath(hr, root), re.sub(r"<!--hand .*?-->", "", f.read())))
    _cache[("texts", root)] = texts
    cat = os.path.join(root, CATALOGUE)
    try:
        with open(cat) as f:
            old = f.read()
    except OSError:
        old = ""
    try:
        out[cat] = (old, catalogue(root))
    except DocError as e:
        errors.append("%s: %s" % (CATALOGUE, e))
    return out, errors


def first_diff(old, new):
    a, b = old.split("\n"), new.split("\n")
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            return i, x, y
    n = min(len(a), len(b)) + 1
    return n, (a[n - 1] if n <= len(a) else ""), (b[n - 1] if n <= len(b) else "")


def check(root=ROOT):
    """Every difference as 'FILE:LINE: message'; [] when the docs agree."""
    _cache.clear()
    rendered, errors = render_all(root)
    out = list(errors)
    for p, (old, new) in rendered.items():
        name = os.path.relpath(p, root)
        if old != new:
            a, b = old.split("\n"), new.split("\n")
            diffs = [(i, x, y) for i, (x, y) in enumerate(zip(a, b), 1) if x != y]
            for i, x, y in diffs[:10]:
                if True:
                    out.append("%s:%d: differs from the data: has %r, the data gives %r"
                               % (name, i, x.strip()[:200], y.strip()[:200]))
            if len(a) != len(b):
                out.append("%s:%d: differs from the data (%d lines, the data gives %d)%s"
                           % (name, min(len(a), len(b)), len(a), len(b),
                              "; run make docs" if p.endswith(CATALOGUE) else ""))
        if not p.endswith(CATALOGUE):
            out += lint(old, root, name)
    return out + notes_lint(root) + reports_lint(root) + questions_lint(root)


def render(root=ROOT):
    _cache.clear()
    rendered, errors = render_all(root)
    for p, (old, new) in rendered.items():
        if old != new:
            with open(p, "w") as f:
                f.write(new)
    return errors


def main(argv):
    if len(argv) not in (2, 3) or argv[1] not in ("render", "check"):
        sys.stderr.write("usage: docs.py render|check [ROOT]\n")
        return 2
    root = argv[2] if len(argv) == 3 else ROOT
    problems = render(root) if argv[1] == "render" else check(root)
    for p in problems:
        print(p)
    if problems:
        print("docs: %d problem%s" % (len(problems), "" if len(problems) == 1 else "s"))
        return 1
    if argv[1] == "check":
        print("docs: every marked figure agrees with the data")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

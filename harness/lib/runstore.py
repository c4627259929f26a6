"""runstore.py - the results directory's run records.

RUN_DIR/runs.jsonl is the canonical store: one JSON object per run (typed
values, the client's summary under "client", every key run_one.sh's
result.json had, plus bench.sh's overrides). RUN_DIR/runs.csv is derived from
it: the known COLUMNS in order, then every other key (sorted), so nothing a
run recorded is dropped. Older results directories (results/reference*) hold
only runs.csv; read_runs() reads whichever is there.
"""
import csv
import errno
import io
import json
import math
import os
import re
import stat
import tempfile

# runs.csv columns, in order (harness/README.md documents each one). Keys a
# record has beyond these follow them in the CSV, sorted.
COLUMNS = [
    "contender", "tier", "tier_label", "repeat", "status", "accepted",
    # the run's condition (harness/lib/scenario.sh): "" for the default idle/tuned/unlimited
    "scenario", "profile", "variant", "rate", "py_gc", "condition",
    "t_accept_s", "t_client_established_s", "server_workers", "client_workers",
    "server_rss_idle_kib", "server_rss_kib", "server_pss_kib",
    "user_bytes_per_conn", "kernel_bytes_per_conn", "slab_bytes_per_conn",
    "server_cpu_connect_s", "server_cpu_hold_pct", "machine_cpu_connect_pct",
    "machine_cpu_hold_pct", "client_cpu_run_s", "client_established", "client_failed",
    "client_failures", "connect_timeouts", "connect_p99_ms",
    # the namespace's TCP counters after the ramp (tcp_mem_*: at the run's end; tcp_mem:
    # the machine-wide limit the run ran under), and the accept queues sampled through it
    "listen_overflows", "listen_drops", "reqq_full_drop", "reqq_full_cookies", "syncookies_sent",
    "syn_retrans", "tcp_mem_pressures", "tcp_mem_pressure_ms", "tcp_abort_on_memory", "tcp_mem_pressures_stop", "tcp_mem",
    "acceptq_max", "acceptq_sum_max", "acceptq_backlog", "acceptq_full",
    "acceptq_samples", "acceptq_listeners", "acceptq_max_per_listener",
    "sockstat_tcp_inuse", "sockstat_tcp_mem_kib", "hb_pongs", "hb_p99_ms", "open_after_hold", "client_open_at_end",
    "workers_dead", "slow_closed", "heartbeat_s", "hold_s", "hold_wall_s", "server_exit",
    "server_stop_s", "client_exit",
    # trust: the quiet-machine gate before the run, what disturbed it, its health
    "gate", "gate_wait_s", "outside_cpu_pct", "outside_ramp_pct", "outside_hold_pct",
    "outside_scenario_pct", "outside_top", "init_cpu_pct", "controller_cpu_pct", "ksoftirqd_pct", "steal_pct", "softirq_pct",
    "disturb_cause", "health", "flags",
    "slab_caches", "slab_growth", "ramp_file", "run_dir", "note",
]

# Columns that stay text even when a value looks like a number.
TEXT_COLUMNS = {
    "contender", "tier_label", "status", "scenario", "profile", "variant", "condition", "client_failures", "slab_caches", "slab_growth", "ramp_file", "acceptq_max_per_listener",
    "run_dir", "note", "gate", "outside_top", "disturb_cause", "health", "flags",
    # ports ("9000-9015"), CPU lists ("0" or "0-1"), host names and tcp_mem stay text too
    "port", "ports", "server_cpus", "client_cpus", "hosts", "tcp_mem",
}

# Figures that can never be negative: bytes, KiB, percentages and seconds (CPU
# seconds and durations). lib/judge.py flags a run holding one (an ok run turns
# suspect); check_run refuses a record with one and no flags: no run wrote it.
NON_NEGATIVE = re.compile(r"(_kib|_bytes_per_conn|_pct|_s)$")

KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
INT_RE = re.compile(r"^-?[0-9]+$")
# a dot or an exponent (1e-05, how Python prints a small float); digits alone are INT_RE's
FLOAT_RE = re.compile(r"^-?(([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)$")


def write_json(path, obj, **dump_kw):
    """obj as JSON in path, atomically (write_text). OSError as raised."""
    write_text(path, json.dumps(obj, **dump_kw) + "\n", suffix=".json")


def write_text(path, text, suffix=""):
    """TEXT in PATH, atomically: a temporary file beside it, renamed over it (a
    reader never sees half a file; a FIFO or a symlink at PATH is replaced, not
    opened: plot.sh hung on a FIFO as report.md, wrote through a symlink),
    UTF-8, with the mode the umask gives a new file (an existing file's own
    mode is not kept). OSError as raised."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix,
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:     # what every reader demands
            # the mode open(path, "w") gives, not mkstemp's 0600: root's make bench
            # wrote meta.json 0600, and a user's make compare and capacity read it
            # as absent (no fingerprint; "machine reserve 0": another figure)
            os.fchmod(f.fileno(), 0o666 & ~umask())
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def umask():
    """The process's umask: /proc/self/status's Umask (Linux 4.7+), read
    without changing it; else os.umask's set-and-restore (not thread-safe)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def typed(key, text):
    """A key=value override's value as the record stores it: numbers as
    numbers (except in text columns), "" as null. A number too large for a
    float (1.0e999), or inf, stays text, which check_run refuses (results.py
    row: exit 2); a record's writers take figure() instead."""
    if text == "":
        return None
    if key not in TEXT_COLUMNS:
        if INT_RE.match(text) and len(text) < 19:
            return int(text)
        if FLOAT_RE.match(text) and math.isfinite(float(text)):
            return float(text)
    return text


def figure(key, text):
    """(value, flag) for a run's record (record.py's values, the judge's
    derived figures): typed(KEY, TEXT), but what reads as no finite number
    (inf, nan, 1.0e999: non_finite) is null and flagged not-finite:KEY (the
    run suspect), not text every reader would refuse the whole run over."""
    if non_finite(key, text):
        return None, "not-finite:" + key
    return typed(key, text), None


def non_finite(key, text):
    """Whether TEXT, a value of KEY, reads as a number that is not finite
    (outside the text columns): a figure no reader can take."""
    if key in TEXT_COLUMNS:
        return False
    try:
        return not math.isfinite(float(text))
    except (TypeError, ValueError):
        return False


def parse_pairs(pairs):
    """["k=v", ...] -> {k: typed v}; ValueError names a malformed pair."""
    out = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not KEY_RE.match(k):
            raise ValueError("not key=value: %r" % p)
        out[k] = typed(k, v)
    return out


def open_regular(path, **kw):
    """open(PATH, **KW) for reading, a regular file only: OSError (EISDIR,
    else EINVAL) for anything else. Opened without blocking first: a FIFO in its place
    would hold the reader in open() for ever (summary, compare, machine hung)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(errno.EISDIR, "Is a directory", path)
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
        return open(fd, **kw)
    except BaseException:
        os.close(fd)
        raise


def load_record(path):
    """A run's result.json as a dict; ValueError says why it cannot be used."""
    try:
        with open_regular(path) as f:
            rec = json.load(f)
    except OSError as e:
        raise ValueError("cannot read %s: %s" % (path, e.strerror))
    except (ValueError, RecursionError) as e:     # (RecursionError: JSON nested past the parser)
        raise ValueError("%s is not valid JSON: %s" % (path, e))
    if not isinstance(rec, dict):
        raise ValueError("%s does not hold a JSON object" % path)
    return rec


def cell(v):
    """A record value as CSV text: null -> "", nested values as compact JSON."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"), sort_keys=True)
    return str(v)


def csv_columns(records):
    extra = sorted({k for r in records for k in r} - set(COLUMNS))
    return COLUMNS + extra


def write_csv(run_dir, records):
    """(Re)write RUN_DIR/runs.csv from the records, atomically."""
    cols = csv_columns(records)
    # (write_text: a FIFO or symlink at runs.csv.tmp, the name it used, was opened)
    write_csv_rows(os.path.join(run_dir, "runs.csv"), cols,
                   ([cell(r.get(k)) for k in cols] for r in records), lineterminator="\n")


def write_csv_rows(path, header, rows, **dialect):
    """HEADER and ROWS as CSV (csv.writer's DIALECT) in PATH, atomically
    (write_text): runs.csv, the ladder's ladder.csv."""
    f = io.StringIO(newline="")
    w = csv.writer(f, **dialect)
    w.writerow(header)
    w.writerows(rows)
    write_text(path, f.getvalue())


def check_run(rec, where):
    """ValueError naming WHERE unless REC is a run: a contender's name and its
    tier, a whole number of connections (int, or digits as runs.csv has it)."""
    c, t = rec.get("contender"), rec.get("tier")
    if not isinstance(c, str) or not c:
        raise ValueError("%s: no contender (not a run record)" % where)
    if t is None or t == "":
        raise ValueError("%s: no tier (not a run record)" % where)
    if not (type(t) is int or isinstance(t, str) and re.fullmatch(r"[0-9]+", t)) or int(t) < 1:
        raise ValueError("%s: tier %r is not a number of connections" % (where, t))
    for k, v in rec.items():
        x = number(k, v)
        if x is None:
            continue
        # JSON reads Infinity, NaN and 400-digit integers, and runs.csv's text
        # "inf" or "1e400" reads as one (cells.num: float()): no figure of a run;
        # nor is a float past the integers' bound (1e300 s: 300-digit ratios)
        if isinstance(x, float) and not (math.isfinite(x) and abs(x) < 2.0 ** 63) \
                or type(x) is int and abs(x) >= 1 << 63:
            shown = (v if isinstance(v, str) else repr(x) if isinstance(x, float)
                     else "an integer of %d bits" % x.bit_length())
            raise ValueError("%s: %s %s is not a figure" % (where, k, shown))
        # a negative one where none can be: a damaged or edited record (summary,
        # capacity and compare took it as a figure: "N = 11,396,226 connections
        # fit"). accepted, the count figures are divided by, is the server's
        # counters' digits; a figure of NON_NEGATIVE is flagged when negative.
        if x < 0 and (k == "accepted" or NON_NEGATIVE.search(k) and not rec.get("flags")):
            raise ValueError("%s: %s %s is negative: not a figure a run records%s" % (
                where, k, v, "" if k == "accepted" else " without flagging it (lib/judge.py)"))


def number(key, v):
    """V as the readers take it as a number (cells.num), else None: a JSON
    number, or runs.csv's text that float() reads (a text column's apart)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and key not in TEXT_COLUMNS:
        try:
            return float(v)
        except ValueError:
            return None
    return None


def lines(path):
    """The lines of PATH; ValueError naming it when they are not UTF-8 text."""
    try:
        with open_regular(path, newline="") as f:
            return f.readlines()
    except UnicodeDecodeError as e:
        raise ValueError("%s is not UTF-8 text: %s" % (path, e))


def read_jsonl(path):
    out = []
    for n, line in enumerate(lines(path), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError) as e:     # (RecursionError: JSON nested past the parser)
            raise ValueError("%s line %d is not valid JSON: %s" % (path, n, e))
        if not isinstance(rec, dict):
            raise ValueError("%s line %d is not a JSON object" % (path, n))
        check_run(rec, "%s line %d" % (path, n))
        out.append(rec)
    return out


def append_record(run_dir, rec):
    """Append one run to runs.jsonl and re-derive runs.csv from all of them."""
    path = os.path.join(run_dir, "runs.jsonl")
    with open(path, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")
    write_csv(run_dir, read_jsonl(path))


def csv_rows(path, source):
    """csv.DictReader's rows of SOURCE (lines, or the open file PATH); a
    ValueError naming PATH and the line where the csv module refuses it (a
    field over its size limit, a NUL byte) instead of csv.Error."""
    reader = csv.DictReader(source)
    try:
        yield from reader
    except csv.Error as e:
        # DictReader's own line_num is the last row it returned
        raise ValueError("%s line %d: %s" % (path, reader.reader.line_num, e)) from None


def read_runs(run_dir):
    """Every run of RUN_DIR as a dict: from runs.jsonl (typed values) when it
    exists, else from runs.csv (text; "" for not measured). OSError when
    neither exists."""
    jl = os.path.join(run_dir, "runs.jsonl")
    if os.path.exists(jl):
        return read_jsonl(jl)
    path = os.path.join(run_dir, "runs.csv")
    src = lines(path)
    # write_csv ends every row with a newline and gives it every column: a row
    # without them was cut short (a copy that stopped), and its last figure may
    # be cut too ("2.661" read as "2.6")
    if src and not src[-1].endswith("\n"):
        raise ValueError("%s is cut short: its last line has no newline" % path)
    rows = list(csv_rows(path, src))
    for n, r in enumerate(rows, 1):
        # DictReader keeps a row's fields past the header under None and
        # gives the columns a short row lacks None
        cols = [k for k in r if k is not None]
        fields = sum(r[k] is not None for k in cols) + len(r.get(None) or ())
        if fields != len(cols):
            raise ValueError("%s row %d: %d fields, its header %d (cut short or damaged)"
                             % (path, n, fields, len(cols)))
        check_run(r, "%s row %d" % (path, n))
    return rows


# meta.json's fields that hold objects, and the objects inside them ("*": every
# value is one: the kernel profiles by label, each a sysctl -> value object)
META_OBJECTS = {"settings": (), "fingerprint": (), "calibration": ("accept_cpu_us", "syscall_ns", "python_ns"),
                "sysctl_profile": (), "sysctl_profiles": "*"}


def read_meta(run_dir):
    """RUN_DIR/meta.json as a dict; {} when it is absent, unreadable, not JSON or
    not an object. A field of META_OBJECTS (or one inside it) that is not an
    object is left out: a foreign or damaged meta.json is missing metadata,
    never a crash of the commands that read it."""
    try:
        with open_regular(os.path.join(run_dir, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(meta, dict):
        return {}
    for key, inner in META_OBJECTS.items():
        v = meta.get(key)
        if key in meta and not isinstance(v, dict):
            del meta[key]
        elif isinstance(v, dict):
            for k in (list(v) if inner == "*" else inner):
                if k in v and not isinstance(v[k], dict):
                    del v[k]
    return meta


def unreadable(run_dir, e):
    """What an OSError of read_runs(RUN_DIR) means, for a message."""
    if isinstance(e, FileNotFoundError):
        return "%s holds no runs.jsonl or runs.csv" % run_dir
    return "cannot read the runs of %s: %s: %s" % (run_dir, e.strerror, e.filename)


def text(r, key):
    """A run's value as display text ("" when absent or null)."""
    return cell(r.get(key))

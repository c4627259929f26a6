#!/usr/bin/python3
"""record.py - the one JSON record a run writes (OUT/result.json), and reads of it.

    record.py write OUT.json [--client CLIENT.json] [--obs NAME=TEXT]... [--merge FILE]...
                    [--merge-obs FILE]... key=value...
    record.py get FILE KEY...
    record.py pairs FILE KEY

write: every key=value becomes a typed field (runstore.figure: an int or a
float when the text is a plain number outside the text columns, null when
empty, else the string; a number that is not finite, inf or 1e999, null and
the flag not-finite:KEY). --merge: a sampler's summary (a JSON object:
acceptq.py, disturb.py, pushkept.py, probe.sh's netns counters) merged in,
each value typed as if given as key=value, its "flags" added to the record's
(a missing or empty file adds nothing). With --client the client's whole JSON summary is
kept under "client", and the flat client_* columns runs.csv shows are derived
from it (a key=value given explicitly wins; a field of the wrong type counts
as missing, a number that is not finite, NaN or 1e999, becomes null: either
adds the flag client-json-bad-field). Then the verdict
(lib/judge.py) from the run's observations (--obs, and --merge-obs: a
monitor's JSON object of observations, lib/rampmon.py's; kept as text in
observations.json beside OUT.json): the status, the note, the flags, the
sanity bounds (a negative byte, KiB, percentage or seconds figure, a CPU%
above what the machine has, more accepted than asked for, each add a word to
"flags" and turn an "ok" into "suspect"). The files are replaced atomically
(a reader never sees half a record).

get: one line per KEY, its value ("" when missing or null; a dotted key such as
client.heartbeat.pongs reaches into nested objects; a list or object prints as
JSON). For shell callers: no eval of JSON anywhere.

pairs: the object at KEY (dotted) as key, NUL, value, NUL, for each of its
keys, values as get prints them (nothing when it is missing): a scenario
copies its monitor's summary into the run's record (scenarios/idle.sh
scenario_record).

Exit: 0 done, 1 the file cannot be read or written, 2 usage.
"""
import json
import os
import sys

import judge
import runstore
from monlib import ascii_digits, number
from runstore import KEY_RE, figure   # one parser for key=value values, shared with runs.jsonl

def usage(msg=None):
    if msg:
        print(f"record.py: {msg}", file=sys.stderr)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def clean(v, bad, where=""):
    """V with every number no record may hold (NaN, Infinity, 1e999, an int
    of 64 bits or more: monlib.number) replaced by None, its dotted place
    appended to BAD."""
    if isinstance(v, dict):
        return {k: clean(x, bad, f"{where}.{k}" if where else k) for k, x in v.items()}
    if isinstance(v, list):
        return [clean(x, bad, f"{where}.{i}") for i, x in enumerate(v)]
    if isinstance(v, (int, float)) and not isinstance(v, bool) and number(v) is None:
        bad.append(where)
        return None
    return v


def client_columns(j, bad=None):
    """The flat client_* columns runs.csv shows, from the client's JSON summary.
    A field of the wrong type counts as missing (its column null), its name
    appended to BAD."""
    bad = [] if bad is None else bad

    def num(d, key, where=""):
        v = d.get(key)
        if v is not None and number(v) is None:
            bad.append(where + key)
        return number(v)

    def obj(d, key, where=""):
        v = d.get(key)
        if v is not None and not isinstance(v, dict):
            bad.append(where + key)
            return {}
        return v or {}

    def counts(key):
        """{reason: count}; None when missing or not that."""
        v = j.get(key)
        if v is None:
            return None
        if isinstance(v, dict) and all(number(x) is not None for x in v.values()):
            return v
        bad.append(key)
        return None

    def by_reason(c):
        return None if c is None else ";".join(f"{k}:{v}" for k, v in sorted(c.items())) or "none"

    hb = obj(j, "heartbeat")
    hb_lat = obj(hb, "latency_ms", "heartbeat.")
    lat = obj(j, "connect_latency_ms")
    fails = counts("failures")
    cpu = None
    user, sys_ = num(j, "cpu_user_s"), num(j, "cpu_sys_s")
    if user is not None or sys_ is not None:
        # user+sys of the client's whole run (ramp, hold, heartbeats), not the ramp alone
        cpu = number(round((user or 0) + (sys_ or 0), 2))
    cols = {}
    mode = j.get("reconnect")
    if mode is not None and not isinstance(mode, str):
        bad.append("reconnect")
    elif mode not in (None, "off"):
        # --reconnect now|backoff (the storm scenario): slots the peer closed
        cols = {
            "client_reconnects": num(j, "reconnects"),
            "client_reconnect_attempts": num(j, "reconnect_attempts"),
            "client_reconnect_failures": num(j, "reconnect_failures"),
            "client_reconnect_failures_by": by_reason(counts("reconnect_failures_by_errno")),
            "client_reconnect_waiting": num(j, "reconnect_waiting"),
            "client_last_reconnect_s": num(j, "last_reconnect_s"),
        }
    if number(j.get("push_received")) or number(j.get("push_bad")):
        # server push (client/push_rx.h; SCENARIO=push|stall): lines the client got
        plat = obj(j, "push_latency_us")
        ms = {q: num(plat, q, "push_latency_us.") for q in ("p50", "p99", "max")}
        cols.update({
            "push_received": num(j, "push_received"), "push_missing": num(j, "push_missing"),
            "push_bytes": num(j, "push_bytes"), "push_bad": num(j, "push_bad"),
            "push_p50_ms": None if ms["p50"] is None else ms["p50"] / 1000,
            "push_p99_ms": None if ms["p99"] is None else ms["p99"] / 1000,
            "push_max_ms": None if ms["max"] is None else ms["max"] / 1000,
        })
    return cols | {
        "client_established": num(j, "established"),
        "client_failed": num(j, "failed"),
        "client_failures": by_reason(fails),
        # the client's --connect-timeout expiries are its ETIMEDOUT failures (10 s by
        # default: well before the kernel's own SYN give-up, ~127 s with tcp_syn_retries 6)
        "connect_timeouts": fails.get("ETIMEDOUT", 0) if fails is not None else None,
        "t_client_established_s": num(j, "time_to_established_s"),
        "client_workers": num(j, "workers"),
        "client_cpu_run_s": cpu,
        "connect_p99_ms": num(lat, "p99", "connect_latency_ms."),
        "hb_pongs": num(hb, "pongs", "heartbeat."),
        "hb_p99_ms": num(hb_lat, "p99", "heartbeat.latency_ms."),
        "client_open_at_end": num(j, "open_at_end"),
    }


def load_object(path):
    """The JSON object in PATH ({} when it is missing or empty; an unreadable
    one is said and counts as {})."""
    try:
        with open(path) as f:
            text = f.read()
        obj = json.loads(text) if text.strip() else {}
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as e:      # (RecursionError: JSON nested past the parser)
        print(f"record.py: {path}: {e}", file=sys.stderr)
        return {}
    return obj


def merge_obs(obs, path):
    """A monitor's observations in PATH into obs, as text (an --obs each)."""
    for k, v in load_object(path).items():
        if KEY_RE.match(k) and isinstance(v, (str, int, float)) and not isinstance(v, bool):
            obs[k] = str(v)


def merge(rec, path):
    """A sampler's JSON summary in PATH into rec (see the module's doc)."""
    summary = load_object(path)
    for k, v in summary.items():
        if not KEY_RE.match(k):
            continue
        if k == "flags":
            add_flag(rec, str(v))
        else:
            put(rec, k, str(v))


def put(rec, k, text):
    """REC[K] = TEXT typed (runstore.figure): a figure that is no finite
    number null there and flagged not-finite:K (the run then suspect), as the
    client's are."""
    rec[k], flag = figure(k, text)
    add_flag(rec, flag)


def add_flag(rec, flag):
    """FLAG (words, ;-separated) after REC's flags; none for an empty one."""
    rec["flags"] = ";".join(x for x in (rec.get("flags"), flag) if x)


def cmd_write(args):
    if not args:
        usage("write: needs OUT.json")
    out, rest = args[0], args[1:]
    if out.startswith("-"):     # `write --help` wrote a failed record to a file named --help
        usage("write: OUT.json first, not an option: %s" % out)
    client_path = None
    rec, obs, merges, obs_files = {}, {}, [], []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--client":
            if i + 1 >= len(rest):
                usage("--client: needs a file")
            client_path = rest[i + 1]
            i += 2
            continue
        if a in ("--merge", "--merge-obs"):
            if i + 1 >= len(rest):
                usage(f"{a}: needs a file")
            (merges if a == "--merge" else obs_files).append(rest[i + 1])
            i += 2
            continue
        if a == "--obs":
            k, sep, v = rest[i + 1].partition("=") if i + 1 < len(rest) else ("", "", "")
            if not sep or not KEY_RE.match(k):
                usage("--obs: needs NAME=TEXT")
            obs[k] = v
            i += 2
            continue
        k, sep, v = a.partition("=")
        if not sep or not KEY_RE.match(k):
            usage(f"not key=value: {a!r}")
        put(rec, k, v)
        i += 1
    for path in merges:
        merge(rec, path)
    for path in obs_files:
        merge_obs(obs, path)
    if client_path and os.path.exists(client_path) and os.path.getsize(client_path) > 0:
        try:
            with open(client_path) as f:
                client = json.load(f)
            if not isinstance(client, dict):
                raise ValueError("not a JSON object")
            # the bucket-by-bucket histograms (for merging several clients)
            # stay in the run's client.json: the record keeps the percentiles
            client.pop("histograms", None)
            bad = []
            client = clean(client, bad)     # (recursive: JSON that parses can still nest too deep for it)
        except (OSError, ValueError, RecursionError) as e:
            # a client killed while writing leaves half a file: say so, keep the rest
            add_flag(rec, "client-json-unreadable")
            print(f"record.py: {client_path}: {e}", file=sys.stderr)
        else:
            rec["client"] = client
            for k, v in client_columns(client, bad).items():
                if rec.get(k) is None:
                    rec[k] = v
            if bad:
                # read as missing; the flag turns an ok run suspect
                add_flag(rec, "client-json-bad-field")
                print(f"record.py: {client_path}: not a finite number or of the wrong type, "
                      f"taken as missing: {', '.join(bad)}", file=sys.stderr)
    # the CPUs of the machine the server ran on (a remote run's server host: its obs)
    cpus = str(obs.get("stat_cpus", ""))
    ncpu = (int(cpus) if ascii_digits(cpus) else 0) or os.cpu_count() or 1   # (int() refuses "²")
    rec = judge.judge_or_fail(rec, obs, ncpu)
    if rec.get("status") == "harness-error" and "judge-failed" in str(rec.get("flags")):
        print(f"record.py: {rec['note']}", file=sys.stderr)
    try:
        if obs:
            runstore.write_json(os.path.join(os.path.dirname(out) or ".", "observations.json"),
                                obs, indent=1, sort_keys=True)
        runstore.write_json(out, rec, indent=1, sort_keys=True)
    except OSError as e:
        print(f"record.py: cannot write {out}: {e}", file=sys.stderr)
        return 1
    return 0


def text_of(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return str(v).replace("\n", " ")


def lookup(rec, key):
    v = rec
    for part in key.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v


def cmd_get(args):
    if len(args) < 2:
        usage("get: needs FILE and at least one KEY")
    try:
        with runstore.open_regular(args[0]) as f:     # (a FIFO there held it for ever)
            rec = json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        print(f"record.py: cannot read {args[0]}: {e}", file=sys.stderr)
        return 1
    if not isinstance(rec, dict):
        print(f"record.py: {args[0]}: not a JSON object", file=sys.stderr)
        return 1
    for k in args[1:]:
        print(text_of(lookup(rec, k)))
    return 0


def cmd_pairs(args):
    if len(args) != 2:
        usage("pairs: needs FILE and KEY")
    try:
        with open(args[0]) as f:
            obj = lookup(json.load(f), args[1])
    except (OSError, ValueError, RecursionError) as e:
        print(f"record.py: cannot read {args[0]}: {e}", file=sys.stderr)
        return 1
    for k, v in (obj or {}).items() if isinstance(obj, dict) else ():
        sys.stdout.write(f"{k}\0{text_of(v)}\0")
    return 0


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage()
    if argv[0] == "write":
        return cmd_write(argv[1:])
    if argv[0] == "get":
        return cmd_get(argv[1:])
    if argv[0] == "pairs":
        return cmd_pairs(argv[1:])
    usage(f"unknown command: {argv[0]}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""settings.py - the one table of c1m's make targets and settings.

Every setting make or a script reads from its command line or environment is
a row of SETTINGS: name, default, one-line meaning, the targets that read it
and, where simple, a pattern its value must match. `make help` prints the
table; make refuses a command-line variable that is not in it, and bench.sh an
environment variable that is clearly a misspelt one (check-make, check-env
below), both with exit 2 and the closest known name, before anything starts.

  settings.py help                     make help: targets and settings, one line each
  settings.py check-make [--goals "GOAL..."] NAME=VALUE...
                                       exit 2 on an unknown name, a bad value or a
                                       setting every goal running servers ignores
  settings.py check-env [TARGET]       exit 2 on an environment variable that is a typo
                                       and, for TARGET (bench, anatomy-cpu, demo), on a
                                       setting it reads set but empty
  settings.py names [TARGET]           the names (read by TARGET), one a line

Exit: 0 fine, 2 a refused setting (the message on stderr), a Ctrl-C ends it by SIGINT (130; lib/entry.py).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import entry  # noqa: E402

# (target, duration, meaning). Durations (DURATION_SOURCES): build, c, pyext,
# plot, compare, capacity, docs, fuzz-build measured on this machine kind (2 vCPUs,
# `make -s TARGET` into an empty BUILD, load under 1, 2026-12-07; plot, compare and
# capacity on results/reference); bench computed by estimate.py from
# the committed runs; test the whole suite's last measured length.
TARGETS = [
    ("help", "instant", "this list"),
    ("build", "~5 s", "compile the C programs, the C unit tests and the Python extension into BUILD"),
    ("check", "~1 min", "build, then the fast tier: C unit tests, command lines, pure Python suites (no root; tests/README.md)"),
    ("test", "~10 min", "install the test packages (root), build, the check tier and every bats suite (each in its own namespace), JOBS files at a time"),
    ("test-long", "~6 min", "the long end-to-end tests (tagged long) that make test skips (root)"),
    ("bench", "ESTIMATE", "the benchmark suite (root): CONTENDERS (default: five) at every tier of TIERS, results/<UTC>/"),
    ("demo", "~1 min at 10k", "C against Python in one picture a class can read: every ladder contender at DEMO_TIER, one run each (root)"),
    ("plot", "~2 s", "redraw the plots and report.md of RUN from its records (no root)"),
    ("compare", "~1 s", "B against A per contender and tier: ratio of medians, bootstrap interval, verdict"),
    ("capacity", "~1 s", "connections that fit in a memory per contender, from RUN's measured costs"),
    ("anatomy-cpu", "~35 s a contender at 300k", "the server's CPU per accepted connection by layer, with perf (root)"),
    ("fuzz", "~70 s", "the libFuzzer targets, FUZZ_SECONDS in all (clang)"),
    ("docs", "~2 s", "render the figures of README.md and docs/ and results/README.md from the committed results"),
    ("docs-check", "~4 s", "fail, naming FILE:LINE, where a document's figure differs from the data"),
    ("clean", "instant", "remove build/, build-san/ and pyext/build"),
    ("c", "~3 s", "the C programs and C unit tests only (part of build)"),
    ("pyext", "~2 s", "the Python extension only (part of build)"),
    ("test-deps", "~1 s installed", "apt packages the tests need (root; apt-get when missing)"),
    ("bench-deps", "~1 s installed", "apt packages make bench needs (root; apt-get when missing)"),
    ("bench-args", "~1 s", "refuse (exit 2) a bad bench setting: the first step of bench, before root, packages and the build"),
    ("bench-root", "instant", "refuse (exit 1) unless root: the first step of anatomy-cpu and demo, after bench-args of bench"),
    ("fuzz-deps", "~1 s installed", "clang and libFuzzer (root; apt-get when missing)"),
    ("fuzz-build", "~6 s", "build the fuzz targets only"),
    ("all", "~5 s", "the same as build"),
]
DURATION_SOURCES = (
    "durations: build, c, pyext, plot, compare, capacity, fuzz-build, docs-check measured on this machine kind "
    "(2 vCPUs, an empty BUILD), the *-deps with their packages installed; check, test and test-long the steps of .ci/run on a fresh clone with nothing else running (2026-12-07); bench estimated from the committed "
    "runs in results/ (harness/lib/estimate.py); anatomy-cpu from results/reference-anatomy-cpu-300k's "
    "samples; demo a run at 10k (47-55 s, 2026-12-07); fuzz: FUZZ_SECONDS (60) plus its build")

ALL = ("bench", "anatomy-cpu")
# name, default, meaning, targets, pattern: only for a make-only setting no
# script checks (SANITIZE=2 would build without sanitizers); None: the script
# that reads it checks it (one home per rule)
SETTINGS = [
    # build and tests
    ("PYTHON", "/usr/bin/python3", "the interpreter of the Python contenders and the harness", ("build", "check", "test", "test-long", "bench", "plot", "compare", "capacity", "anatomy-cpu"), None),
    ("BUILD", "build (build-san with SANITIZE=1)", "the build directory", ("build", "check", "test", "test-long", "bench", "anatomy-cpu", "fuzz"), None),
    ("SANITIZE", "0", "1: build and test with ASan/UBSan (into build-san)", ("build", "check", "test", "test-long"), r"[01]"),
    ("JOBS", "2 (1 with SANITIZE=1)", "bats files make test runs at once (those not tagged serial; tests/README.md)", ("check", "test", "test-long"), None),
    ("CC", "gcc", "the C compiler", ("build",), None),
    ("EXTRA_CFLAGS", "", "added to the C compiler's flags", ("build",), None),
    ("EXTRA_LDFLAGS", "", "added to the linker's flags", ("build",), None),
    ("FUZZ_CC", "clang", "the compiler of the fuzz targets", ("fuzz",), None),
    ("FUZZ_SECONDS", "60 / targets", "seconds each fuzz target runs", ("fuzz",), None),
    ("STATUS_FILE", "", "write the script's own exit status (0/1/2/3/130) to this file (make exits 2 on any failure)", ("bench", "demo", "plot", "compare", "capacity", "anatomy-cpu"), None),
    # the suite (harness/bench.sh)
    ("TIERS", "300k,500k,800k,1m", "connection counts (k/m suffixes), run smallest first", ("bench",), None),
    ("CONTENDERS", "c,pyext,uvloop,asyncio-protocol,asyncio-streams (anatomy-cpu c,pyext)", "comma list of contenders, or all", ALL, None),
    ("REPEAT", "1", "runs per contender and tier, interleaved; the summary is their median", ("bench",), None),
    ("HOLD", "10", "seconds the connections are held after the ramp, heartbeats running", ALL, None),
    ("HEARTBEAT", "auto", "seconds between two pings on a connection; auto = max(5, N/20000)", ALL, None),
    ("TIMEOUT", "900", "seconds a ramp may take before the run is a timeout", ALL, None),
    ("RAMP_STALL", "120", "seconds a ramp may go without a new connection (0 = only TIMEOUT)", ("bench",), None),
    ("OUT", "results/<UTC time>", "the results directory (must not hold a runs.csv yet)", ALL + ("demo",), None),
    ("SERVER_WORKER_CONNS", "the server's own", "per-worker connection cap of the server", ALL, None),
    ("CLIENT_WORKER_CONNS", "10000", "per-worker connection cap of the client", ALL, None),
    ("MIN_AVAILABLE_MIB", "1024", "a run stops opening connections below this usable memory", ("bench",), None),
    ("MEM_GUARD_MIB", "", "pretend usable memory is this (tests the memory guard)", ("bench",), None),
    ("SETTLE_MAX", "60", "max seconds to wait between runs for freed memory to settle", ("bench",), None),
    ("MEM_SETTLE", "1", "0: a run reads memory at once, no 1 s and 2 s waits for it to settle (tests that judge no memory figure; local runs)", ("bench", "anatomy-cpu"), None),
    ("CALIBRATE", "1", "0: no calibration of this machine before the runs, none in meta.json (tests that judge something else)", ("bench",), None),
    ("QUIET_MAX", "600 (anatomy-cpu 120)", "wait up to this many seconds for a quiet machine before each run; 0 = no gate", ALL, None),
    ("QUIET_CPU_PCT", "10", "quiet = the machine at most this % busy over ~2 s", ALL, None),
    ("DISTURB_PCT", "5", "a run whose outside CPU exceeds this % of the machine is disturbed", ("bench",), None),
    ("INIT_PCT", "5", "the same for PID 1 alone (this machine kind's fd scanner)", ("bench",), None),
    ("TCP_MEM", "host", "net.ipv4.tcp_mem during each run: host, auto or LOW,PRESSURE,HIGH pages", ("bench",), None),
    ("SCENARIO", "idle", "what a run does after the hold: idle, push, stall, storm", ("bench",), None),
    ("PROFILE", "tuned", "comma list of kernel profiles (tuned, stock, tuned-KEY, FILE, ablate), each a condition", ("bench",), None),
    ("RATE", "0", "comma list of client connect rates (connections/s, 0 = unlimited), each a condition", ("bench",), None),
    ("PY_GC", "freeze", "the Python contenders' garbage collector (py_server --gc: freeze, default = CPython's untouched, off); bench: a comma list, each a condition", ALL, None),
    ("PORTS", "9000", "the server's port or a range LO-HI (up to 1024 ports)", ("bench",), None),
    ("CPUS_SERVER", "", "local runs: the server on these CPUs (taskset -c)", ("bench",), None),
    ("CPUS_CLIENT", "", "local runs: the client on these CPUs (taskset -c)", ("bench",), None),
    ("HOSTS", "", "a hosts file: the server and the clients on other machines over SSH", ("bench",), None),
    ("APPLY_SYSCTL", "0", "with HOSTS: 1 writes the profile's kernel settings on the hosts, restored at the end", ("bench",), None),
    ("REMOTE_PYTHON", "PYTHON", "with HOSTS: the interpreter on the hosts", ("bench",), None),
    ("SSH_OPTS", "", "with HOSTS: extra ssh options (words)", ("bench",), None),
    # scenario knobs (harness/lib/scenarios/NAME.sh scenario_knobs)
    ("PUSH_BYTES", "1024", "SCENARIO=push: bytes per pushed message (32-1025)", ("bench",), None),
    ("PUSH_EVERY", "30", "SCENARIO=push: seconds between two messages to a connection (0 = one broadcast)", ("bench",), None),
    ("PUSH_BURST", "0", "SCENARIO=push: 1 = each interval's messages at once", ("bench",), None),
    ("PUSH_BROADCAST", "1", "SCENARIO=push: 1 = also time one SIGUSR1 broadcast", ("bench",), None),
    ("PUSH_WAIT", "300", "SCENARIO=push: seconds the push phase may take", ("bench",), None),
    ("STALL", "0.01,0.1 (capacity: none)", "fractions of connections that stop reading (SCENARIO=stall; capacity: the planned one)", ("bench", "capacity"), None),
    ("STALL_SNDBUF", "default,0", "SCENARIO=stall: the server's SO_SNDBUF variants", ("bench",), None),
    ("STALL_PUSH_BYTES", "1024", "SCENARIO=stall: bytes per pushed message", ("bench",), None),
    ("STALL_PUSH_EVERY", "1", "SCENARIO=stall: seconds between two pushes to a connection", ("bench",), None),
    ("STALL_PUSH_FLOW", "honour", "SCENARIO=stall: honour or ignore the transport's flow control", ("bench",), None),
    ("STALL_WAIT", "300", "SCENARIO=stall: seconds the stall phase may take", ("bench",), None),
    ("STALL_STEADY", "10", "SCENARIO=stall: seconds without change that end the phase", ("bench",), None),
    ("STORM_POLICY", "now,backoff", "SCENARIO=storm: the client's reconnect policies", ("bench",), None),
    ("STORM_BACKOFF_BASE_MS", "100", "SCENARIO=storm: the backoff's base delay", ("bench",), None),
    ("STORM_BACKOFF_CAP_MS", "10000", "SCENARIO=storm: the backoff's largest delay", ("bench",), None),
    ("STORM_TIMEOUT", "300", "SCENARIO=storm: seconds the reconnection may take", ("bench",), None),
    # demo (harness/demo)
    ("DEMO_TIER", "10k", "connections per contender (at most 100k)", ("demo",), None),
    ("DEMO_CONTENDERS", "floor,c,pyext,uvloop,asyncio-protocol,asyncio-streams", "the contenders the demo runs and draws, some of these in this order", ("demo",), None),
    ("DEMO_ANATOMY", "asyncio-streams", "the Python contender opened up by object type", ("demo",), None),
    # plot, compare, capacity
    ("RUN", "", "a results directory (results/X)", ("plot", "capacity"), None),
    ("A", "the reference sharing most cells with B", "the results directory compared against", ("compare",), None),
    ("B", "", "the results directory compared", ("compare",), None),
    ("MODE", "auto", "compare: time and CPU as absolute figures or ratios to the floor (auto, absolute, ratio)", ("compare",), None),
    ("DISTURBED", "0", "compare: 1 = include disturbed runs, marked", ("compare",), r"[01]"),
    ("FORMAT", "text", "compare's output: text, md, json or csv", ("compare",), None),
    ("MEM", "8/24/64/256 GiB table", "the memory to plan for (64G)", ("capacity",), None),
    ("CONNS", "", "the other way: the memory this many connections need (10m)", ("capacity",), None),
    # anatomy-cpu
    ("N", "300k", "connections (k/m suffixes)", ("anatomy-cpu",), None),
    ("PERF_PERIOD_US", "1000", "CPU microseconds between two samples of one process", ("anatomy-cpu",), None),
    ("PERF_CALLGRAPH", "dwarf", "perf's call graphs: dwarf or fp", ("anatomy-cpu",), None),
    ("C1M_PERF", "perf on PATH", "the perf binary", ("anatomy-cpu",), None),
    ("KEEP_PERF_DATA", "0", "1 = keep perf's raw data (large)", ("anatomy-cpu",), None),
    ("SCRIPT_TIMEOUT", "1800", "seconds perf script and the folding of one phase may take", ("anatomy-cpu",), None),
]
NAMES = [s[0] for s in SETTINGS]

# Environment variables common outside c1m that are one letter from a setting
# (HOST/HOSTS, PORT/PORTS): never taken for a typo.
COMMON_ENV = {"HOST", "PORT", "HOSTNAME", "RUNLEVEL", "TERM", "HOME", "USER", "SHELL", "PATH", "LANG", "PWD"}


def distance(a, b):
    """Damerau-Levenshtein (optimal string alignment) distance."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def closest(name):
    """(known name, distance) nearest to name, case-insensitively."""
    return min(((k, distance(name.upper(), k)) for k in NAMES), key=lambda kd: kd[1])


def is_typo(name):
    """An environment name that is clearly a misspelt setting: upper case, not
    a setting, not a common variable, and one edit (insert, delete, replace,
    swap) from a setting of 4 or more letters (two for names of 10 or more)."""
    if name in NAMES or name in COMMON_ENV or not re.fullmatch(r"[A-Z][A-Z0-9_]{3,}", name):
        return None
    k, d = closest(name)
    return k if len(k) >= 4 and (d <= 1 or (d <= 2 and len(name) >= 10)) else None


def refuse(msg):
    print(msg, file=sys.stderr)
    return 2


def refuse_env(lines):
    """A script's refusal of its environment: each line as its own `bad`
    says it (error: ...), exit 2."""
    return refuse("\n".join("error: " + x for x in lines))


# The targets that run servers, each reading the settings of its rows (make
# bench's are bench.sh's environment, demo's and anatomy-cpu's their scripts').
SCRIPTS = ("bench", "anatomy-cpu", "demo")
# harness/demo runs bench.sh with these set to its own values (run_bench's env;
# tests/py/test_demo.py holds the two together), and passes every other setting
# of bench through to it
DEMO_SETS = {"TIERS", "CONTENDERS", "REPEAT", "HOLD", "QUIET_MAX", "SETTLE_MAX"}
# A setting TARGET does not read, and the one it reads for the same thing
INSTEAD = {("anatomy-cpu", "TIERS"): "N", ("anatomy-cpu", "DEMO_TIER"): "N",
           ("anatomy-cpu", "DEMO_CONTENDERS"): "CONTENDERS", ("demo", "N"): "DEMO_TIER",
           ("demo", "TIERS"): "DEMO_TIER", ("demo", "CONTENDERS"): "DEMO_CONTENDERS",
           ("bench", "N"): "TIERS", ("bench", "DEMO_TIER"): "TIERS",
           ("bench", "DEMO_CONTENDERS"): "CONTENDERS"}
# Set but empty is a mistake (make bench OUT=, OUT=$UNSET), not the default
# (OUT= wrote a suite into results/<UTC time>): refused for a setting whose
# default is not empty, but these, whose empty value is a choice
EMPTY_IS_A_CHOICE = {"SERVER_WORKER_CONNS",   # the server's own cap, its default
                     "CLIENT_WORKER_CONNS",   # no --worker-conns: the client's own cap
                     "REMOTE_PYTHON"}         # PYTHON
# A target's own default where the table's column gives several (the refusal
# of an empty one names the target's)
DEFAULT_FOR = {("bench", "CONTENDERS"): "c,pyext,uvloop,asyncio-protocol,asyncio-streams",
               ("anatomy-cpu", "CONTENDERS"): "c,pyext", ("bench", "QUIET_MAX"): "600",
               ("anatomy-cpu", "QUIET_MAX"): "120", ("bench", "STALL"): "0.01,0.1",
               ("demo", "OUT"): "results/demo-<UTC time>",
               ("anatomy-cpu", "OUT"): "results/anatomy-cpu-<UTC time>"}


def reads(target, name):
    """Whether TARGET reads setting NAME (the table's targets; the demo also
    every setting of bench it passes through)."""
    targets = SETTINGS[NAMES.index(name)][3]
    return target in targets or (target == "demo" and "bench" in targets and name not in DEMO_SETS)


def not_read(name, goals):
    """The refusal of NAME when a goal of GOALS runs servers and no goal
    reads it (nor the build), else None: `make anatomy-cpu
    TIERS=10k` ran its default 300k, `make demo TIERS=100k` its 10k, `make
    anatomy-cpu RATE=5000` without a rate, the setting silently dropped."""
    targets = SETTINGS[NAMES.index(name)][3]
    ignoring = [g for g in goals if g in SCRIPTS]
    # (a setting of the build is read: those targets build first)
    if not ignoring or "build" in targets or any(reads(g, name) for g in goals):
        return None
    g = ignoring[0]
    instead = INSTEAD.get((g, name))
    why = "make demo sets it itself" if g == "demo" and name in DEMO_SETS else "make %s does not read it" % g
    return "%s: %s%s (make help: the targets each setting is read by)" % (
        name, why, "; its setting is %s" % instead if instead else "")


def set_but_empty(env, target):
    """The refusals of the settings TARGET reads that ENV holds set but empty
    (those with a default; EMPTY_IS_A_CHOICE apart)."""
    return ["%s: set but empty (unset it for the default: %s)" % (name, DEFAULT_FOR.get((target, name), default))
            for name, default, _, _, _ in SETTINGS
            if env.get(name) == "" and default and name not in EMPTY_IS_A_CHOICE and reads(target, name)]


def check_make(pairs, goals=()):
    """make's command-line variables: every name in the table, every value
    matching its pattern, none a setting the goals running servers ignore (not_read)."""
    errs = []
    for p in pairs:
        name, _, value = p.partition("=")
        if name not in NAMES:
            k, d = closest(name)
            hint = "; did you mean %s?" % k if d <= max(2, len(name) // 3) else ""
            errs.append("%s: unknown setting%s (make help lists them)" % (name, hint))
            continue
        why = not_read(name, goals)
        if why:
            errs.append(why)
            continue
        pat = SETTINGS[NAMES.index(name)][4]
        if pat and value and not re.fullmatch(pat, value):
            errs.append("%s: %r does not match %s (make help)" % (name, value, pat))
    # set but empty, before the build the scripts' own check would come after
    given = {n: v for n, _, v in (p.partition("=") for p in pairs) if n in NAMES}
    for g in goals:
        errs += [e for e in (set_but_empty(given, g) if g in SCRIPTS else []) if e not in errs]
    return refuse("\n".join(errs)) if errs else 0


def check_env(env, target=None):
    """A script's environment: no misspelt setting and, given the TARGET the
    script is, none of its settings set but empty."""
    bad = ["%s: unknown setting; did you mean %s? (a setting's name one letter away: "
           "unset it or fix it; make help lists them)" % (n, is_typo(n))
           for n in sorted(env) if is_typo(n)]
    bad += set_but_empty(env, target) if target else []
    return refuse_env(bad) if bad else 0


def help_text():
    import estimate
    out = ["c1m: make TARGET [NAME=VALUE ...]   (an unknown NAME is refused: exit 2)", "", "targets:"]
    for name, dur, meaning in TARGETS:
        if dur == "ESTIMATE":
            dur = estimate.default_duration()
        out.append("  %-12s %-26s %s" % (name, dur, meaning))
    out += ["  (" + DURATION_SOURCES + ")", "", "settings (NAME=VALUE; default; the targets that read it):"]
    for name, default, meaning, targets, _ in SETTINGS:
        out.append("  %-22s %s [default %s; %s]" % (name, meaning, default or "unset", ",".join(targets)))
    return "\n".join(out)


def main(argv):
    if len(argv) < 2:
        return refuse("usage: settings.py help | check-make NAME=VALUE... | check-env [TARGET] | names [TARGET]")
    cmd = argv[1]
    if cmd in ("-h", "--help"):
        print(__doc__)
        return 0
    if cmd == "help":
        try:
            print(help_text())
        except BrokenPipeError:     # make help | head
            sys.stderr.close()
        return 0
    if cmd == "check-make":
        args = argv[2:]
        goals = args[1].split() if args[:1] == ["--goals"] and len(args) > 1 else []
        return check_make(args[2:] if args[:1] == ["--goals"] else args, goals)
    if cmd == "check-env":
        if len(argv) > 3 or (len(argv) == 3 and argv[2] not in SCRIPTS):
            return refuse("usage: settings.py check-env [%s]" % "|".join(SCRIPTS))
        return check_env(os.environ, argv[2] if len(argv) == 3 else None)
    if cmd == "names":
        for name, _, _, targets, _ in SETTINGS:
            if len(argv) < 3 or argv[2] in targets:
                print(name)
        return 0
    return refuse("settings.py: unknown command %r (help, check-make, check-env, names)" % cmd)


if __name__ == "__main__":
    entry.run(main, sys.argv)

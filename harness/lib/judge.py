"""judge.py - a run's verdict: its observations in, its status, note and flags out.

run_one.sh drives the processes and records what it saw as observations
(`obs KEY VALUE`: the server's readiness, how the ramp ended, the end-of-hold
counts, the dead workers, the silent ones, the stop...) and merges its samplers'
summaries (acceptq.py, disturb.py, pushkept.py: JSON); record.py passes them
here with the run's figures, and writes what judge() returns. run_remote.py
records the same observations as far as a remote run has them, and its own
(below: "What a remote run observes"). Every status a run's record can hold
is in STATUSES and set in this module: a scenario names its failure as the
observation scenario_status (one of SCENARIO_STATUSES), bench.sh the rows it
writes itself as a kind (ROW_KINDS, row_status; results.py row --kind).

    judge(rec, obs, ncpu) -> the record with status, note, flags (and the
                             figures() and the health, workers_dead,
                             disturb_cause and tcp_mem_pressures_stop derived
                             from the observations)

rec: the run's typed fields (runstore.figure), the client's summary under
"client"; obs: observation name -> text. Pure: no file, no process.
"""
import re

from runstore import NON_NEGATIVE, figure   # (NON_NEGATIVE: the readers hold records to it too)

# CPU percentages of ONE CPU (200 = both vCPUs of a 2-vCPU machine busy).
CPU_PCT_OF_ONE = ("server_cpu_hold_pct", "machine_cpu_connect_pct", "machine_cpu_hold_pct",
                  "storm_server_cpu_pct", "storm_machine_cpu_pct")
# Percentages of the WHOLE machine (100 = every CPU busy): the disturbance figures.
CPU_PCT_OF_MACHINE = ("outside_cpu_pct", "outside_ramp_pct", "outside_hold_pct",
                      "outside_scenario_pct", "init_cpu_pct", "controller_cpu_pct", "ksoftirqd_pct",
                      "steal_pct", "softirq_pct")

# Every status a run's record (result.json, a runs.jsonl row) can hold: the one
# list. results.py row refuses another; tests/py/test_statuses.py holds the
# harness to it (no status set elsewhere; harness/README.md says what each means).
STATUSES = ("ok", "suspect", "disturbed", "failed", "unavailable", "crashed", "client-stopped",
            "oom-guard", "timeout", "ramp-stalled", "server-died", "server-hung", "inconsistent",
            "push-behind", "scenario-failed", "broadcast-timeout", "storm-timeout", "storm-kill-failed",
            "storm-restart-failed", "storm-server-died", "interrupted", "host-lost", "harness-error",
            "unsupported", "skipped-memory")
# The rows bench.sh writes itself (results.py row --kind KIND): KIND -> status.
ROW_KINDS = {"unsupported": "unsupported",        # the contender lacks what the run needs: never started
             "unavailable": "unavailable",        # unavailable at an earlier tier: not retried
             "skipped-memory": "skipped-memory",  # the memory guard's prediction: never started
             "interrupted": "interrupted",        # the suite was stopped during the run
             "driver-failed": "harness-error"}    # run_one.sh or run_remote.py failed (row_status)
# What a remote run observes (run_remote.py) that a local one never does:
#   remote      1: the processes ran on other hosts (no quiet gate, no disturbance
#               sampler, no namespace): the health is h_server, h_established (the
#               server host's established sockets on its ports), h_client (the
#               clients' summed open_at_end) and dead_stat
#   ramp_exit   the exit status of the server or client that ended the ramp;
#   ramp_client the client host whose client ended it (ramp_end client-exited)
#   ramp_end    worker-died: the streamed counters showed a dead worker
#   hold_end    server-exited|client-exited during the hold, with hold_exit, hold_client
#   lost        a host stopped answering (a session ended without an exit status,
#               a command could not connect): the text names it
#   driver_error  the driver's own failure (run_remote.py's bug, run_one.sh's
#                 ramp watch that failed): the text; status harness-error
#   cleanup_signal  a stop signal that came during the cleanup of an ended run
# It records the readings figures() derives from as run_one.sh does (t0, t1 in the
# server host's clock, cpu0, cpu1, clk_tck, rss_idle, rss_full, slab0, slab1, hold_*),
# less the machine CPU ones (machine0/1, hold_machine0/1): figures() derives both alike.
# What the server's readiness check saw (obs ready) -> the status of a run that ends there.
READY_FAILED = {"unavailable": "unavailable", "exited": "crashed"}
# How the ramp ended (obs ramp_end) -> status.
RAMP_END = {"reached": "ok", "server-exited": "crashed", "client-exited": "client-stopped",
            "oom-guard": "oom-guard", "timeout": "timeout", "ramp-stalled": "ramp-stalled",
            "worker-died": "crashed"}
# How a remote run's hold ended early (obs hold_end) -> status.
HOLD_END = {"server-exited": "server-died", "client-exited": "client-stopped"}
# The statuses a scenario's phase may give an otherwise ok run (obs scenario_status).
# The storm's recovery watch (lib/stormmon.py judge) gives three of them: storm-timeout,
# storm-server-died and client-stopped (tests/py/test_judge.py holds the two lists together).
SCENARIO_STATUSES = ("scenario-failed", "server-died", "broadcast-timeout", "oom-guard",
                     "storm-timeout", "storm-kill-failed", "storm-restart-failed",
                     "storm-server-died", "client-stopped")
NUM = re.compile(r"^[0-9]+$")


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def sanity_flags(rec, ncpu):
    """Words naming each figure outside what is physically possible."""
    flags = []
    for k, v in rec.items():
        if is_num(v) and v < 0 and NON_NEGATIVE.search(k):
            flags.append(f"negative:{k}")
    for k in CPU_PCT_OF_ONE:
        if is_num(rec.get(k)) and rec[k] > 100 * ncpu:
            flags.append(f"cpu-above-machine:{k}")
    for k in CPU_PCT_OF_MACHINE:
        if is_num(rec.get(k)) and rec[k] > 100:
            flags.append(f"cpu-above-machine:{k}")
    acc, target = rec.get("accepted"), rec.get("target")
    if is_num(acc) and is_num(target) and acc > target:
        flags.append("accepted-above-target")
    return flags


def _t(v):
    """A record value as the shell wrote it ("" for none)."""
    return "" if v is None else str(v)


def _count(v):
    """A count observation: its int, None when not a plain count."""
    v = _t(v)
    return int(v) if NUM.match(v) else None


def _trunc_div(a, b):
    """a / b rounded toward zero (as bash's $(( )) does)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _pct_of_one_cpu(before, after, ncpu):
    """The machine's busy share between two "busy total" jiffies readings
    (lib/probe.sh machine_cpu), in % of ONE CPU (200 = both CPUs of 2 busy)."""
    (b0, t0), (b1, t1) = (map(int, before.split()), map(int, after.split()))
    return f"{100 * ncpu * (b1 - b0) / (t1 - t0):.0f}" if t1 - t0 else "0"


def figures(obs, accepted):
    """(figures, flags) derived from a run's raw readings, run_one.sh's or
    run_remote.py's: times (unix seconds), CPU ticks, "busy total" jiffies,
    "anon pss" and "sockets slab" KiB (lib/probe.sh); per connection: of the
    ACCEPTED. A reading it lacks leaves its figures out (a remote run reads no
    machine CPU: its server host is not this machine)."""
    f, flags = {}, []
    hz, ncpu = int(obs.get("clk_tck") or 100), int(obs.get("stat_cpus") or 1)
    if "t0" in obs:
        f["client_start_unix_ms"] = f"{float(obs['t0']) * 1000:.0f}"
    if all(k in obs for k in ("t0", "t1", "cpu0", "cpu1")):
        f["t_accept_s"] = f"{float(obs['t1']) - float(obs['t0']):.3f}"
        f["server_cpu_connect_s"] = f"{(int(obs['cpu1']) - int(obs['cpu0'])) / hz:.2f}"
        if "machine1" in obs:
            f["machine_cpu_connect_pct"] = _pct_of_one_cpu(obs["machine0"], obs["machine1"], ncpu)
    for key, cols in (("rss_idle", ("server_rss_idle_kib", "server_pss_idle_kib")),
                      ("rss_full", ("server_rss_kib", "server_pss_kib"))):
        if key in obs:
            f.update(zip(cols, obs[key].split()))
    n = accepted if isinstance(accepted, int) and not isinstance(accepted, bool) else 0
    if all(k in obs for k in ("rss_idle", "rss_full", "slab0", "slab1")) and n > 0:
        f["user_bytes_per_conn"] = str(_trunc_div((int(obs["rss_full"].split()[0]) - int(obs["rss_idle"].split()[0])) * 1024, n))
        # A local run's namespace holds both ends (the socket slab delta covers 2
        # sockets per connection), a remote run's server host one.
        # An unreadable figure ("-") is left out and flagged, never a made-up 0.
        for i, col in ((0, "kernel_bytes_per_conn"), (1, "slab_bytes_per_conn")):
            a, b = obs["slab0"].split()[i], obs["slab1"].split()[i]
            if a != "-" and b != "-":
                f[col] = str(_trunc_div((int(b) - int(a)) * 1024, n))
            else:
                flags.append(f"unmeasured:{col}")
    if all(k in obs for k in ("hold_a", "hold_b", "hold_c", "hold_d", "hold_cpu0", "hold_cpu1")):
        # the CPU% over the wall time between the midpoints of the two readings
        a, b, c, d = (float(obs[k]) for k in ("hold_a", "hold_b", "hold_c", "hold_d"))
        f["hold_wall_s"] = wall = f"{(c + d) / 2 - (a + b) / 2:.3f}"
        ticks = int(obs["hold_cpu1"]) - int(obs["hold_cpu0"])
        f["server_cpu_hold_pct"] = f"{100 * ticks / hz / float(wall):.1f}" if float(wall) > 0 else "0.0"
        if "hold_machine1" in obs:
            f["machine_cpu_hold_pct"] = _pct_of_one_cpu(obs["hold_machine0"], obs["hold_machine1"], ncpu)
    if all(k in obs for k in ("storm_cpu", "storm_t_restart", "storm_t_done")):
        # the storm's restarted server over its whole life so far (its start-up
        # and the recovery), and the machine from before the kill
        ticks, a, b = int(obs["storm_cpu"]), float(obs["storm_t_restart"]), float(obs["storm_t_done"])
        f["storm_server_cpu_s"] = f"{ticks / hz:.2f}"
        f["storm_server_cpu_pct"] = f"{100 * ticks / hz / (b - a) if b > a else 0:.1f}"
        if "storm_machine1" in obs:
            f["storm_machine_cpu_pct"] = _pct_of_one_cpu(obs["storm_machine0"], obs["storm_machine1"], ncpu)
    return f, flags


def ramp_verdict(rec, obs):
    """(status, note) of the run up to the end of its ramp."""
    ready = obs.get("ready")
    if ready is None:   # no run observed: failed (a test's record keeps the status it gives)
        return _t(rec.get("status")) or "failed", ""
    if ready != "ok":
        return READY_FAILED.get(ready, "failed"), f"server did not become ready: {obs.get('ready_log', '')}"
    end = obs.get("ramp_end")
    oom = obs.get("ramp_oom", "")
    oom = f": the kernel's OOM killer killed {oom} (dmesg)" if oom else ""
    if end == "server-exited":
        return "crashed", "server exited" + (f" {obs['ramp_exit']}" if "ramp_exit" in obs else "") + \
            " during the ramp" + oom
    if end == "worker-died":    # (a C server's parent ends the others and exits then: this comes first)
        return "crashed", "a server worker died during the ramp" + oom
    if end == "client-exited":
        if "ramp_client" in obs:
            return "client-stopped", f"the client on {obs['ramp_client']} exited {obs.get('ramp_exit', '')} during the ramp"
        return "client-stopped", f"client exited: {obs.get('client_log', '')}"
    if end == "oom-guard":
        return "oom-guard", ("usable memory (MemAvailable less the reclaimable slab) under "
                             f"{_t(rec.get('min_available_mib'))} MiB")
    if end == "timeout":
        return "timeout", f"not all accepted after {_t(rec.get('timeout_s'))}s"
    if end == "ramp-stalled":
        return "ramp-stalled", (
            f"no new connection for {_t(rec.get('ramp_stall_s'))}s: at most {obs.get('ramp_best', '')} of "
            f"{_t(rec.get('target'))} open, {obs.get('ramp_open') or '?'} now, "
            f"after {float(obs.get('ramp_elapsed_s') or 0):.0f}s")
    return RAMP_END.get(end, "failed"), ""


def health(rec, obs):
    """(health text, (server, sockets, client) counts as text or "") at the end of the hold."""
    server = obs.get("h_server", "")
    if "remote" in obs:   # the server host's established sockets, the clients' summed count
        sock, client = obs.get("h_established", ""), obs.get("h_client", "")
        return (f"target={_t(rec.get('target'))} server={server or '?'} sockets={sock or '?'} "
                f"(established on the server host) client={client or '?'} "
                f"workers_dead={obs.get('dead_stat') or '?'}"), (server, sock, client)
    inuse, listen = obs.get("h_inuse", ""), obs.get("h_listen", "")
    sock = ""
    if NUM.match(inuse) and re.match(r"^-?[0-9]+$", listen) and (int(inuse) - int(listen)) % 2 == 0:
        sock = str((int(inuse) - int(listen)) // 2)
    client = (rec.get("client") or {}).get("open_at_end")
    client = str(client) if isinstance(client, int) and not isinstance(client, bool) and client >= 0 else ""
    dead_stat = obs.get("dead_stat", "")
    text = (f"target={_t(rec.get('target'))} server={server or '?'} sockets={sock or '?'} "
            f"(inuse {inuse or '?'} - {listen or '?'} listening, /2) client={client or '?'} "
            f"workers_dead={_t(rec.get('workers_dead'))}/{obs.get('n_workers', '')}"
            + (f" (counters: {dead_stat})" if dead_stat else ""))
    return text, (server, sock, client)


def judge_or_fail(rec, obs, ncpu):
    """judge(), or, should an observation be unreadable in a way no probe
    prints today (a bug), the record as given with status harness-error and
    the reason: the run keeps a result.json saying so rather than none."""
    try:
        return judge(rec, obs, ncpu)
    except (ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError) as e:
        r = dict(rec)
        r["status"] = "harness-error"
        r["note"] = "the judge could not read the run's observations (%s: %s); see observations.json" % (
            type(e).__name__, e)
        r["flags"] = ";".join(x for x in (_t(r.get("flags")), "judge-failed") if x)
        return r


def judge(rec, obs, ncpu):
    """The record with its verdict (see the module's doc)."""
    r = dict(rec)
    push_kept = r.pop("push_kept_verdict", None)   # lib/pushkept.py's, merged: not a column
    derived, flags = figures(obs, r.get("accepted"))
    for k, v in derived.items():
        r[k], flag = figure(k, v)
        flags += [flag] if flag else []
    flags += [x for x in _t(r.get("flags")).split(";") if x]
    status, first = ramp_verdict(r, obs)
    notes = [first] if first else []
    notes += [x for x in [_t(r.get("note"))] if x]   # the scenario's notes, as it wrote them
    pushed, received = r.get("push_pushed"), r.get("push_received")
    if is_num(pushed) and is_num(received) and pushed < received:
        # a line is counted when handed over: fewer than the client got is a wrong count
        notes.append(f"push: the server counted {pushed} lines pushed, the client received {received}")
    if "dead_gone" in obs:
        # the dead workers: gone from the process table, or dead by the counters file
        dead, stat = _count(obs["dead_gone"]) or 0, _count(obs.get("dead_stat"))
        r["workers_dead"] = stat if stat is not None and stat > dead else dead
    if status == "ok" and obs.get("scenario_status"):
        status = obs["scenario_status"] if obs["scenario_status"] in SCENARIO_STATUSES else "scenario-failed"
    if status == "ok" and obs.get("hold_end"):   # a remote run's server or client ended in the hold
        status = HOLD_END.get(obs["hold_end"], "failed")
        notes.append(("the server" if obs["hold_end"] == "server-exited" else f"the client on {obs.get('hold_client', '')}")
                     + f" exited {obs.get('hold_exit', '')} during the hold")
    at_end = obs.get("verdict") == "1"   # the run got to its end-of-run checks
    if at_end and obs.get("ramp_end") == "reached":
        r["health"], (server, sock, client) = health(r, obs)
        conns = _t(r.get("target"))
        dead, parent_gone = r.get("workers_dead") or 0, _count(obs.get("parent_gone")) or 0
        if status != "ok":
            pass   # the scenario's own status stands (storm-timeout...); the health is recorded
        elif dead > 0 or parent_gone > 0:
            status = "server-died"
            oom = obs.get("oom", "")
            notes.append(f"server died during the run: {dead} worker(s) dead"
                         + (", parent gone" if parent_gone > 0 else "")
                         + (f"; the kernel's OOM killer killed {oom} (dmesg)" if oom else ""))
        elif obs.get("silent"):
            status = "server-hung"
            notes.append(f"worker(s) alive but serving nothing: no line counted and no CPU used over the end of "
                         f"the {_t(r.get('hold_s'))}s hold while their connections were pinged every "
                         f"{_t(r.get('heartbeat_s'))}s (pid:open {obs['silent']})")
        elif not server or not sock or not client or server != conns or sock != conns or client != conns:
            status = "inconsistent"
            notes.append(f"the end-of-hold counts disagree: {r['health']}")
        elif push_kept == "behind":
            status = "push-behind"   # lib/probe.sh push_kept_check; the note says by how much
    if at_end and "remote" not in obs:   # (a remote run has no disturbance sampler)
        status = disturbance(r, obs, status, flags)
    if "stop_killed" in obs:
        if obs["stop_killed"] == "1":
            notes.append("server ignored SIGTERM for 120s: killed")
        elif _t(r.get("server_exit")) != "0" and status == "ok":
            notes.append(f"server exited {_t(r.get('server_exit'))} after SIGTERM (see server.log)")
    if "interrupted" in obs:
        status, notes = "interrupted", [f"interrupted by SIG{obs['interrupted']}"]
    elif "lost" in obs:
        status, notes = "host-lost", [obs["lost"]]
    elif "driver_error" in obs:     # the harness's own failure, not the server's
        status, notes = "harness-error", [obs["driver_error"]]
    if "cleanup_signal" in obs:
        notes.append(f"stop signal SIG{obs['cleanup_signal']} during the cleanup")
    r["status"] = status
    if notes:
        r["note"] = "; ".join(notes)
    else:
        r.pop("note", None)
    flags += [x for x in sanity_flags(r, ncpu) if x not in flags]
    r["flags"] = ";".join(flags)
    if flags and r["status"] == "ok":
        r["status"] = "suspect"
    return r


def row_status(kind, recorded):
    """The status of a row bench.sh writes itself, of KIND (ROW_KINDS; else
    ValueError): a failed driver's run that recorded itself interrupted
    (RECORDED, its result.json's status) stays interrupted."""
    if kind not in ROW_KINDS:
        raise ValueError("unknown row kind %r (known: %s)" % (kind, " ".join(ROW_KINDS)))
    if kind == "driver-failed" and recorded == "interrupted":
        return "interrupted"
    return ROW_KINDS[kind]


def disturbance(r, obs, status, flags):
    """What disturbed the run (r's disturb_cause), the flags it could not
    measure, and its status: only an otherwise ok run becomes disturbed."""
    causes = []
    if r.pop("disturbed", None) == 1:
        causes.append(_t(r.get("disturb_cause")))
    # The kernel's machine-wide TCP memory limit (net.ipv4.tcp_mem): a run that met
    # it before its client stopped had its socket buffers clamped and, past the
    # hard limit, connections killed, so its timings, drops and memory are the
    # limit's, not the contender's. The client's stop meeting it is recorded, not
    # a cause: nothing is measured after it.
    p_end, pressures = _count(obs.get("tcp_mem_pressures_end")), r.get("tcp_mem_pressures")
    if p_end is not None and isinstance(pressures, int) and pressures >= 0:
        r["tcp_mem_pressures_stop"] = p_end - pressures
    if (pressures if is_num(pressures) else 0) > 0 or (
            r.get("tcp_abort_on_memory") if is_num(r.get("tcp_abort_on_memory")) else 0) > 0:
        arg = obs.get("tcp_mem_arg", "host")
        causes.append("the kernel's TCP memory limit was reached (net.ipv4.tcp_mem, machine-wide: "
                      f"{_t(r.get('tcp_mem'))} pages" + (f", set for this run by --tcp-mem {arg}" if arg != "host" else "")
                      + f"): TCPMemoryPressures {_t(pressures) or '?'}, TCPAbortOnMemory {_t(r.get('tcp_abort_on_memory')) or '?'}")
    if r.get("gate") == "timeout":
        causes.append(f"started after the quiet gate timed out ({obs.get('quiet_max', '')}s): {obs.get('gate_cause', '')}")
    # No disturbance figure (the sampler failed): the run is not proven quiet.
    # (disturb.py flags a window its samples did not cover: disturbance-unmeasured:ramp|hold)
    if obs.get("ramp_end") == "reached" and r.get("outside_cpu_pct") is None \
            and not any("disturbance-unmeasured" in f for f in flags):
        flags.append("disturbance-unmeasured")
    if causes:
        r["disturb_cause"] = "; ".join(causes)
        return "disturbed" if status == "ok" else status
    r.pop("disturb_cause", None)
    return status

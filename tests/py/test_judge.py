"""Unit tests of a run's verdict (harness/lib/judge.py): one case per
status, from observations as run_one.sh records them, and a remote run's
from run_remote.py's (the statuses and notes it decided itself before, to
the letter). Pure: no process."""
import unittest

import util  # noqa: E402,F401  (harness/lib on sys.path)
import judge  # noqa: E402


def run(obs=None, **rec):
    """A 1,000-connection run that went well, changed by obs and rec."""
    r = {"contender": "c", "target": 1000, "accepted": 1000, "status": "failed", "hold_s": 10,
         "heartbeat_s": 5, "timeout_s": 600, "ramp_stall_s": 120, "min_available_mib": 1024,
         "gate": "pass", "tcp_mem": "1 2 3", "outside_cpu_pct": 0.5, "server_exit": 0,
         "tcp_mem_pressures": 0, "tcp_abort_on_memory": 0, "client": {"open_at_end": 1000}}
    o = {"ready": "ok", "ramp_end": "reached", "dead_gone": "0", "dead_stat": "0",
         "parent_gone": "0", "n_workers": "2", "h_server": "1000", "h_inuse": "2002",
         "h_listen": "2", "silent": "", "oom": "", "tcp_mem_arg": "host", "quiet_max": "600",
         "gate_cause": "", "verdict": "1", "stop_killed": "0"}
    r.update(rec)
    o.update(obs or {})
    return judge.judge(r, {k: v for k, v in o.items() if v is not None}, 2)


def remote(obs=None, **rec):
    """A remote 1,000-connection run that went well, as run_remote.py
    records it (observations: Run.O), changed by obs and rec."""
    r = {"contender": "c", "target": 1000, "accepted": 1000, "hold_s": 10, "heartbeat_s": 5,
         "timeout_s": 600, "ramp_stall_s": 120, "min_available_mib": 1024, "gate": "remote",
         "remote": 1, "workers_dead": 0, "server_exit": 0, "client": {"open_at_end": 1000}}
    o = {"remote": "1", "ready": "ok", "ramp_end": "reached", "h_server": "1000",
         "h_established": "1000", "h_client": "1000", "dead_stat": "0", "verdict": "1"}
    r.update(rec)
    o.update(obs or {})
    return judge.judge(r, {k: v for k, v in o.items() if v is not None}, 2)


class Judge(unittest.TestCase):
    def test_ok(self):
        r = run()
        self.assertEqual((r["status"], r["flags"], r["workers_dead"]), ("ok", "", 0))
        self.assertNotIn("note", r)
        self.assertEqual(r["health"], "target=1000 server=1000 sockets=1000 (inuse 2002 - 2 listening, /2) "
                                      "client=1000 workers_dead=0/2 (counters: 0)")

    def test_a_derived_figure_that_is_no_finite_number_is_null_and_flagged(self):
        # a reading of inf gave status ok, t_accept_s null and no flag (typed's
        # null, silent): the run looked clean, with no accept time
        r = run({"t0": "100", "t1": "inf", "cpu0": "0", "cpu1": "10"})
        self.assertIsNone(r["t_accept_s"])
        self.assertEqual((r["status"], r["flags"]), ("suspect", "not-finite:t_accept_s"))
        r = run({"t0": "100", "t1": "102", "cpu0": "0", "cpu1": "10"})
        self.assertEqual((r["status"], r["flags"], r["t_accept_s"]), ("ok", "", 2.0))

    def test_not_ready(self):
        for ready, status in (("unavailable", "unavailable"), ("exited", "crashed"), ("not-ready", "failed")):
            r = run({"ready": ready, "ready_log": "no io_uring", "ramp_end": None, "verdict": None,
                     "stop_killed": None})
            self.assertEqual((r["status"], r["note"]), (status, "server did not become ready: no io_uring"))

    def test_crashed_in_the_ramp(self):
        r = run({"ramp_end": "server-exited", "ramp_oom": ""})
        self.assertEqual((r["status"], r["note"]), ("crashed", "server exited during the ramp"))
        self.assertNotIn("health", r)
        r = run({"ramp_end": "server-exited", "ramp_oom": "pid 12 (python3)"})
        self.assertEqual(r["note"], "server exited during the ramp: the kernel's OOM killer killed pid 12 (python3) (dmesg)")
        # a worker killed: the ramp's watch sees the dead worker before the parent's exit
        r = run({"ramp_end": "worker-died", "ramp_oom": "pid 12 (c1m-server)"})
        self.assertEqual((r["status"], r["note"]), ("crashed", "a server worker died during the ramp: the kernel's "
                                                    "OOM killer killed pid 12 (c1m-server) (dmesg)"))

    def test_ramp_ends(self):
        self.assertEqual((run({"ramp_end": "client-exited", "client_log": "EMFILE"})["status"],
                          run({"ramp_end": "client-exited", "client_log": "EMFILE"})["note"]),
                         ("client-stopped", "client exited: EMFILE"))
        r = run({"ramp_end": "oom-guard"})
        self.assertEqual((r["status"], r["note"]), ("oom-guard", "usable memory (MemAvailable less the reclaimable slab) under 1024 MiB"))
        r = run({"ramp_end": "timeout"})
        self.assertEqual((r["status"], r["note"]), ("timeout", "not all accepted after 600s"))
        r = run({"ramp_end": "ramp-stalled", "ramp_best": "700", "ramp_open": "650", "ramp_elapsed_s": "200.6"})
        self.assertEqual((r["status"], r["note"]),
                         ("ramp-stalled", "no new connection for 120s: at most 700 of 1000 open, 650 now, after 201s"))
        self.assertEqual(run({"ramp_end": "ramp-stalled", "ramp_best": "0", "ramp_open": "",
                              "ramp_elapsed_s": "130"})["note"],
                         "no new connection for 120s: at most 0 of 1000 open, ? now, after 130s")
        self.assertEqual(run({"ramp_end": None, "verdict": None, "stop_killed": None})["status"], "failed")

    def test_server_died(self):
        r = run({"dead_gone": "1"})
        self.assertEqual((r["status"], r["note"], r["workers_dead"]),
                         ("server-died", "server died during the run: 1 worker(s) dead", 1))
        # the counters file counts more dead than are gone; the parent gone; the OOM killer's note
        r = run({"dead_stat": "2", "parent_gone": "1", "oom": "pid 7 (c1m-server)"}, note="stall: x")
        self.assertEqual((r["status"], r["workers_dead"]), ("server-died", 2))
        self.assertEqual(r["note"], "stall: x; server died during the run: 2 worker(s) dead, parent gone; "
                                    "the kernel's OOM killer killed pid 7 (c1m-server) (dmesg)")
        self.assertIn("workers_dead=2/2 (counters: 2)", r["health"])

    def test_server_hung(self):
        r = run({"silent": "123:500"})
        self.assertEqual(r["status"], "server-hung")
        self.assertIn("the 10s hold while their connections were pinged every 5s (pid:open 123:500)", r["note"])

    def test_inconsistent(self):
        for o, rec in (({"h_server": "999"}, {}), ({"h_inuse": "2001"}, {}), ({"h_inuse": ""}, {}),
                       ({}, {"client": {"open_at_end": 998}}), ({}, {"client": None})):
            r = run(o, **rec)
            self.assertEqual(r["status"], "inconsistent", (o, rec))
            self.assertTrue(r["note"].startswith("the end-of-hold counts disagree: target=1000 "), r["note"])
        self.assertIn("sockets=? (inuse 2001 - 2 listening, /2)", run({"h_inuse": "2001"})["health"])

    def test_push_behind(self):
        r = run(push_kept_verdict="behind")
        self.assertEqual(r["status"], "push-behind")
        self.assertNotIn("push_kept_verdict", r)
        self.assertEqual(run(push_kept_verdict="ok")["status"], "ok")
        # the health first
        self.assertEqual(run({"dead_gone": "1"}, push_kept_verdict="behind")["status"], "server-died")

    def test_push_count_under_what_the_client_received_is_noted(self):
        r = run(push_pushed=990, push_received=1000, note="push: a scenario note")
        self.assertEqual((r["status"], r["note"]), ("ok", "push: a scenario note; push: the server "
                                                    "counted 990 lines pushed, the client received 1000"))
        for pushed in (1000, 1010, None):
            self.assertNotIn("note", run(push_pushed=pushed, push_received=1000))

    def test_scenario_status_stands(self):
        for s in judge.SCENARIO_STATUSES:
            r = run({"scenario_status": s, "dead_gone": "1"})
            self.assertEqual(r["status"], s)
            self.assertIn("health", r)
        self.assertEqual(run({"scenario_status": "bogus"})["status"], "scenario-failed")

    def test_an_unreadable_observation_is_a_harness_error_with_a_record(self):
        # no probe prints an empty CPU reading today; should one, the run keeps a
        # result.json that says why (judge() raised, and record.py wrote nothing)
        good = {"contender": "c", "target": 1000, "accepted": 1000, "flags": "x"}
        obs = {"ready": "ok", "ramp_end": "reached", "t0": "1.0", "t1": "2.0", "cpu0": "1", "cpu1": "2",
               "machine0": "", "machine1": "5 9"}
        with self.assertRaises(ValueError):
            judge.judge(good, obs, 2)
        r = judge.judge_or_fail(good, obs, 2)
        self.assertEqual((r["status"], r["flags"]), ("harness-error", "x;judge-failed"))
        self.assertIn("ValueError", r["note"])
        self.assertEqual(r["accepted"], 1000)
        # a reading past a float's range (a hand-edited observations.json)
        huge = dict(obs, machine0="1 2", machine1="5 9", hold_a="1.0", hold_b="1.0", hold_c="2.0",
                    hold_d="2.0", hold_cpu0="1", hold_cpu1="1" + "0" * 400)
        with self.assertRaises(OverflowError):
            judge.judge(good, huge, 2)
        r = judge.judge_or_fail(good, huge, 2)
        self.assertEqual(r["status"], "harness-error")
        self.assertIn("OverflowError", r["note"])

    def test_every_status_of_the_storm_watch_stands(self):
        # stormmon.judge's failures reach the judge through scenario_fail; one
        # left off SCENARIO_STATUSES was recorded as scenario-failed
        import stormmon
        passes = ({"server": False, "dead": 1, "client": True, "el": 1, "open": 5},
                  {"server": True, "dead": 0, "client": False, "el": 1, "open": 5},
                  {"server": True, "dead": 0, "client": True, "el": 99, "open": 5})
        got = [stormmon.judge(p, 10, 30)[0] for p in passes]
        self.assertEqual(got, ["storm-server-died", "client-stopped", "storm-timeout"])
        for s in got:
            self.assertEqual(run({"scenario_status": s})["status"], s)

    def test_disturbed(self):
        r = run(disturbed=1, disturb_cause="outside CPU 9% over the ramp")
        self.assertEqual((r["status"], r["disturb_cause"]), ("disturbed", "outside CPU 9% over the ramp"))
        self.assertNotIn("disturbed", r)
        r = run({"gate_cause": "sockets not freed"}, gate="timeout")
        self.assertEqual((r["status"], r["disturb_cause"]),
                         ("disturbed", "started after the quiet gate timed out (600s): sockets not freed"))
        r = run({"tcp_mem_arg": "auto", "tcp_mem_pressures_end": "5"}, tcp_mem_pressures=3)
        self.assertEqual(r["status"], "disturbed")
        self.assertEqual(r["disturb_cause"], "the kernel's TCP memory limit was reached (net.ipv4.tcp_mem, "
                         "machine-wide: 1 2 3 pages, set for this run by --tcp-mem auto): "
                         "TCPMemoryPressures 3, TCPAbortOnMemory 0")
        self.assertEqual(r["tcp_mem_pressures_stop"], 2)
        r = run(tcp_abort_on_memory=1, disturbed=1, disturb_cause="a")
        self.assertEqual(r["disturb_cause"].split("; ")[0], "a")
        self.assertIn("machine-wide: 1 2 3 pages): TCPMemoryPressures 0, TCPAbortOnMemory 1", r["disturb_cause"])
        # the cause is kept on a run that failed otherwise; its status stands
        r = run({"dead_gone": "1"}, disturbed=1, disturb_cause="a")
        self.assertEqual((r["status"], r["disturb_cause"]), ("server-died", "a"))
        # a cause given but not disturbed is dropped
        self.assertNotIn("disturb_cause", run(disturb_cause="x"))

    def test_disturbance_unmeasured(self):
        r = run(outside_cpu_pct=None)
        self.assertEqual((r["status"], r["flags"]), ("suspect", "disturbance-unmeasured"))
        r = run(outside_cpu_pct=None, flags="disturbance-unmeasured:hold")
        self.assertEqual(r["flags"], "disturbance-unmeasured:hold")
        self.assertEqual(run({"ramp_end": "timeout"}, outside_cpu_pct=None)["flags"], "")

    def test_flags(self):
        r = run(flags="unmeasured:kernel_bytes_per_conn")
        self.assertEqual((r["status"], r["flags"]), ("suspect", "unmeasured:kernel_bytes_per_conn"))
        r = run(user_bytes_per_conn=-5, server_cpu_hold_pct=250.0, accepted=1001)
        self.assertEqual(r["flags"], "negative:user_bytes_per_conn;cpu-above-machine:server_cpu_hold_pct;"
                                     "accepted-above-target")

    def test_stop(self):
        r = run({"stop_killed": "1"})
        self.assertEqual((r["status"], r["note"]), ("ok", "server ignored SIGTERM for 120s: killed"))
        self.assertEqual(run(server_exit=1)["note"], "server exited 1 after SIGTERM (see server.log)")
        self.assertEqual(run({"dead_gone": "1"}, server_exit=1)["note"], "server died during the run: 1 worker(s) dead")

    def test_figures(self):
        r = run({"t0": "1700000000.123456", "t1": "1700000002.5", "cpu0": "10", "cpu1": "61", "clk_tck": "100",
                 "stat_cpus": "2", "machine0": "100 1000", "machine1": "250 1300", "rss_idle": "1000 1200",
                 "rss_full": "1500 1900", "slab0": "100 5000", "slab1": "90 6000", "hold_a": "10", "hold_b": "10.5",
                 "hold_c": "20", "hold_d": "20.5", "hold_cpu0": "0", "hold_cpu1": "5",
                 "hold_machine0": "0 0", "hold_machine1": "0 0"}, accepted=1000)
        self.assertEqual({k: r[k] for k in ("client_start_unix_ms", "t_accept_s", "server_cpu_connect_s",
                                            "machine_cpu_connect_pct", "server_rss_idle_kib", "server_pss_kib",
                                            "user_bytes_per_conn", "kernel_bytes_per_conn", "slab_bytes_per_conn",
                                            "hold_wall_s", "server_cpu_hold_pct", "machine_cpu_hold_pct")},
                         {"client_start_unix_ms": 1700000000123, "t_accept_s": 2.377, "server_cpu_connect_s": 0.51,
                          "machine_cpu_connect_pct": 100, "server_rss_idle_kib": 1000, "server_pss_kib": 1900,
                          "user_bytes_per_conn": 512, "kernel_bytes_per_conn": -10, "slab_bytes_per_conn": 1024,
                          "hold_wall_s": 10.0, "server_cpu_hold_pct": 0.5, "machine_cpu_hold_pct": 0})
        self.assertEqual(r["flags"], "negative:kernel_bytes_per_conn")   # rounded toward zero, then flagged
        r = run({"rss_idle": "1000 1200", "rss_full": "1500 1900", "slab0": "- 5000", "slab1": "- 6000"},
                flags="unmeasured:push_kept")
        self.assertEqual(r["flags"], "unmeasured:kernel_bytes_per_conn;unmeasured:push_kept")
        self.assertNotIn("kernel_bytes_per_conn", r)
        self.assertNotIn("user_bytes_per_conn", run({"rss_idle": "1 1", "rss_full": "2 2", "slab0": "1 1",
                                                      "slab1": "2 2"}, accepted=None))

    def test_storm_figures(self):
        # the restarted server's ticks over its life, the machine's from before the kill
        r = run({"clk_tck": "100", "stat_cpus": "2", "storm_cpu": "250", "storm_t_restart": "100.0",
                 "storm_t_done": "105.0", "storm_machine0": "1000 5000", "storm_machine1": "1600 6000"})
        self.assertEqual((r["storm_server_cpu_s"], r["storm_server_cpu_pct"], r["storm_machine_cpu_pct"]),
                         (2.5, 50.0, 120))
        r = run({"clk_tck": "100", "storm_cpu": "7", "storm_t_restart": "100.0", "storm_t_done": "100.0"})
        self.assertEqual((r["storm_server_cpu_s"], r["storm_server_cpu_pct"]), (0.07, 0.0))
        self.assertNotIn("storm_machine_cpu_pct", r)
        self.assertNotIn("storm_server_cpu_s", run({"storm_cpu": "7"}))     # a storm cut short

    def test_interrupted(self):
        r = run({"interrupted": "INT", "dead_gone": "1"}, note="push: x")
        self.assertEqual((r["status"], r["note"]), ("interrupted", "interrupted by SIGINT"))

    def test_remote_ok(self):
        # no disturbance sampler runs for a remote run: nothing unmeasured, not suspect
        r = remote()
        self.assertEqual((r["status"], r["flags"]), ("ok", ""))
        self.assertNotIn("note", r)
        self.assertEqual(r["health"], "target=1000 server=1000 sockets=1000 (established on the server host) "
                                      "client=1000 workers_dead=0")
        r = remote(user_bytes_per_conn=-3)      # the sanity bounds as for a local run
        self.assertEqual((r["status"], r["flags"]), ("suspect", "negative:user_bytes_per_conn"))

    def test_remote_figures_from_its_readings(self):
        # run_remote.py records the readings, figures() derives them as for a local
        # run: no machine CPU (the server host is not this machine); the hold's
        # wall time between the midpoints of its SSH readings
        readings = {"t0": "1000.000000", "t1": "1012.345678", "cpu0": "100", "cpu1": "350",
                    "clk_tck": "100", "rss_idle": "2048 2100", "rss_full": "4096 4200",
                    "slab0": "10000 50000", "slab1": "12000 53000", "hold_a": "1020.0",
                    "hold_b": "1020.2", "hold_cpu0": "400", "hold_c": "1030.0", "hold_d": "1030.2",
                    "hold_cpu1": "410"}
        r = remote(readings)
        self.assertEqual((r["status"], r["flags"]), ("ok", ""))
        self.assertEqual((r["client_start_unix_ms"], r["t_accept_s"], r["server_cpu_connect_s"]),
                         (1000000, 12.346, 2.5))
        self.assertEqual((r["server_rss_idle_kib"], r["server_pss_kib"], r["user_bytes_per_conn"],
                          r["kernel_bytes_per_conn"], r["slab_bytes_per_conn"]), (2048, 4200, 2097, 2048, 3072))
        self.assertEqual((r["hold_wall_s"], r["server_cpu_hold_pct"]), (10.0, 1.0))
        self.assertNotIn("machine_cpu_connect_pct", r)
        self.assertNotIn("machine_cpu_hold_pct", r)
        # a slab reading the server host could not make: that figure left out, flagged
        r = remote(dict(readings, slab0="- 50000", slab1="- 53000"))
        self.assertNotIn("kernel_bytes_per_conn", r)
        self.assertEqual((r["slab_bytes_per_conn"], r["status"], r["flags"]),
                         (3072, "suspect", "unmeasured:kernel_bytes_per_conn"))

    def test_readings_cut_short_leave_their_figures_out(self):
        # a stop or a lost host between two readings (t1 before cpu1, rss_full
        # before slab1, a hold without its end): the figures left out, the run
        # judged as it ended (not harness-error: the judge did not fail)
        for missing, gone in (("cpu1", "t_accept_s"), ("slab1", "user_bytes_per_conn"),
                              ("hold_d", "hold_wall_s")):
            obs = {"t0": "1000.0", "t1": "1010.0", "cpu0": "1", "cpu1": "2", "rss_idle": "1 1",
                   "rss_full": "2 2", "slab0": "1 1", "slab1": "2 2", "hold_a": "1", "hold_b": "1",
                   "hold_c": "2", "hold_d": "2", "hold_cpu0": "1", "hold_cpu1": "1", "interrupted": "INT"}
            del obs[missing]
            r = run(obs)
            self.assertEqual(r["status"], "interrupted", (missing, r))
            self.assertNotIn(gone, r, missing)
            r = remote(dict(obs, lost="198.51.100.12 stopped answering"))
            self.assertNotIn("judge-failed", r["flags"], missing)
            self.assertNotIn(gone, r, missing)

    def test_remote_not_ready(self):
        for ready, status in (("unavailable", "unavailable"), ("exited", "crashed"), ("not-ready", "failed")):
            r = remote({"ready": ready, "ready_log": "uring: no multishot", "ramp_end": None, "verdict": None,
                        "h_server": None, "h_established": None, "h_client": None, "dead_stat": None})
            self.assertEqual((r["status"], r["note"]), (status, "server did not become ready: uring: no multishot"))

    def test_remote_ramp_ends(self):
        for o, status, note in (
                ({"ramp_end": "worker-died"}, "crashed", "a server worker died during the ramp"),
                ({"ramp_end": "server-exited", "ramp_exit": "139"}, "crashed", "server exited 139 during the ramp"),
                ({"ramp_end": "client-exited", "ramp_client": "198.51.100.12", "ramp_exit": "1"}, "client-stopped",
                 "the client on 198.51.100.12 exited 1 during the ramp"),
                ({"ramp_end": "timeout"}, "timeout", "not all accepted after 600s"),
                ({"ramp_end": "ramp-stalled", "ramp_best": "700", "ramp_open": "0", "ramp_elapsed_s": "130.52"},
                 "ramp-stalled", "no new connection for 120s: at most 700 of 1000 open, 0 now, after 131s")):
            r = remote(dict(o, h_server=""))
            self.assertEqual((r["status"], r["note"]), (status, note), o)
            self.assertNotIn("health", r)

    def test_remote_hold_ends(self):
        r = remote({"hold_end": "server-exited", "hold_exit": "1", "dead_stat": "", "h_server": ""}, workers_dead=None)
        self.assertEqual((r["status"], r["note"]), ("server-died", "the server exited 1 during the hold"))
        self.assertIn("server=? sockets=1000 (established on the server host) client=1000 workers_dead=?", r["health"])
        r = remote({"hold_end": "client-exited", "hold_client": "198.51.100.11", "hold_exit": "0", "h_client": ""})
        self.assertEqual((r["status"], r["note"]), ("client-stopped", "the client on 198.51.100.11 exited 0 during the hold"))

    def test_remote_health(self):
        r = remote({"dead_stat": "2", "h_server": "600"}, workers_dead=2)
        self.assertEqual((r["status"], r["note"]), ("server-died", "server died during the run: 2 worker(s) dead"))
        self.assertEqual(r["workers_dead"], 2)
        for o in ({"h_established": "999"}, {"h_client": ""}, {"h_server": ""}):
            r = remote(o)
            self.assertEqual(r["status"], "inconsistent", o)
            self.assertEqual(r["note"], "the end-of-hold counts disagree: " + r["health"])
        self.assertEqual(remote({"h_client": ""})["health"], "target=1000 server=1000 sockets=1000 "
                         "(established on the server host) client=? workers_dead=0")

    def test_remote_lost_interrupted_failed(self):
        lost = "client root@198.51.100.12 (line 4) lost: its session ended during the hold"
        for o in ({"lost": lost}, {"lost": lost, "ready": None, "ramp_end": None, "verdict": None}):
            r = remote(o)
            self.assertEqual((r["status"], r["note"]), ("host-lost", lost))
        r = remote({"interrupted": "TERM", "hold_end": "server-exited", "hold_exit": "1"})
        self.assertEqual((r["status"], r["note"]), ("interrupted", "interrupted by SIGTERM"))
        r = remote({"driver_error": "run_remote.py: KeyError: 'x'", "ready": None})
        self.assertEqual((r["status"], r["note"]), ("harness-error", "run_remote.py: KeyError: 'x'"))
        # a stop signal in the cleanup of a run that had ended: said, the status stands
        r = remote({"cleanup_signal": "TERM"})
        self.assertEqual((r["status"], r["note"]), ("ok", "stop signal SIGTERM during the cleanup"))
        r = remote({"lost": lost, "cleanup_signal": "INT"})
        self.assertEqual((r["status"], r["note"]), ("host-lost", lost + "; stop signal SIGINT during the cleanup"))

    def test_no_observation_keeps_the_given_status(self):
        r = judge.judge({"status": "host-lost", "note": "h1 lost"}, {}, 2)
        self.assertEqual((r["status"], r["note"]), ("host-lost", "h1 lost"))
        self.assertEqual(judge.judge({}, {}, 2)["status"], "failed")   # run_one.sh stopped before its server


if __name__ == "__main__":
    unittest.main()

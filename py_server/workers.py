"""The parent process: create the counters file, fork the workers, supervise.

Like c_server/lib/workers.c: SIGINT/SIGTERM are blocked across fork (a worker
never runs the parent's disposition); the parent then waits for them and for
SIGCHLD with sigtimedwait, forwards a stop as SIGTERM to every worker, reaps
them, and never runs on half-dead: a worker that dies unexpectedly is marked
failed in the counters file, reported, and the others are stopped (exit 1).
"""
import errno
import gc
import os
import signal
import socket
import sys
import time
import traceback

from . import stats as st
from .loops import check_available
from .unavailable import Unavailable
from .worker import Worker

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
KILL_AFTER_S = 30.0   # workers still alive this long after the stop get SIGKILL


def log(msg):
    sys.stderr.write("py_server: %s\n" % msg)
    sys.stderr.flush()


def probe_listen(host, port):
    """Fail early and clearly if host:port cannot be bound. No SO_REUSEPORT
    here, so a live listener of another process on the port is found instead
    of being joined."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, stype, proto, _, addr = infos[0]
    s = socket.socket(family, stype, proto)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
        s.listen(1)
    finally:
        s.close()


def _die_with_parent(parent):
    """SIGTERM this worker when the parent dies (even by SIGKILL): no orphans
    left holding sockets. Linux prctl(PR_SET_PDEATHSIG); best effort."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _child(cfg, sf, index, old_mask, parent):
    """In a forked worker: never returns."""
    rc = 1
    try:
        _die_with_parent(parent)  # SIGTERM is still blocked here: handled below
        early = []
        for sig in STOP_SIGNALS:
            signal.signal(sig, lambda signum, frame: early.append(signum))
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        # this worker's port of a --port range, as if it had been given alone
        cfg.port += index % cfg.port_count
        cfg.port_count = 1
        apply_gc(getattr(cfg, "gc", "freeze"), "worker")
        rc = Worker(cfg, sf, index, log=log).run(early_stop=lambda: bool(early))
    except BaseException:
        traceback.print_exc()
        try:
            sf.publish(index, os.getpid(), st.FAILED)
        except Exception:
            pass
        rc = 1
    finally:
        try:
            # a SIGUSR1 after the loop is gone (asyncio resets its handler to
            # SIG_DFL) must not kill the worker while it exits
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc)


def describe(status):
    if os.WIFSIGNALED(status):
        return "killed by signal %d" % os.WTERMSIG(status)
    return "exited with status %d" % os.WEXITSTATUS(status)


def run(cfg):
    """The whole server; returns the exit status."""
    try:
        check_available(cfg.loop)
    except Unavailable as e:
        log(str(e))
        return 3
    for port in range(cfg.port, cfg.port + cfg.port_count):
        try:
            probe_listen(cfg.host, port)
        except OSError as e:
            why = "address in use" if e.errno == errno.EADDRINUSE else (e.strerror or e)
            log("cannot listen on %s:%d: %s" % (cfg.host, port, why))
            return 1
    try:
        sf = st.StatsFile.create(cfg.stats, cfg.workers, cfg.max_conns, cfg.kind)
    except OSError as e:
        log("--stats %s: %s" % (cfg.stats, e.strerror or e))
        return 1
    if not cfg.quiet:
        ports = ("%d-%d" % (cfg.port, cfg.port + cfg.port_count - 1) if cfg.port_count > 1
                 else "%d" % cfg.port)
        log("%s: %d workers x %d connections on %s:%s (sndbuf %d, rcvbuf %d, max-pending %d); "
            "stats %s; pid %d" % (cfg.kind, cfg.workers, cfg.worker_conns, cfg.host, ports,
                                  cfg.sndbuf, cfg.rcvbuf, cfg.max_pending, cfg.stats, os.getpid()))

    try:
        return _fork_and_supervise(cfg, sf)
    finally:
        # the default file (cli.parse) is this process's own: remove it
        # (workers leave with os._exit and never get here)
        if getattr(cfg, "stats_default", False):
            try:
                os.unlink(cfg.stats)
            except OSError:
                pass


def apply_gc(mode, where):
    """--gc MODE at WHERE ("parent": after start-up, before forking;
    "worker": in a worker before it serves). freeze (and off): start-up's
    objects into the permanent generation in the parent (below); default:
    CPython's collector untouched; off: no collection in the workers either
    (reference counting still frees what has no cycle)."""
    if mode in ("freeze", "off") and where == "parent":
        gc.freeze()
    elif mode == "off" and where == "worker":
        gc.disable()


def _fork_and_supervise(cfg, sf):
    waitset = set(STOP_SIGNALS) | {signal.SIGCHLD}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, waitset)
    pids = [0] * cfg.workers
    parent = os.getpid()
    # Everything made so far (modules, classes, the config) lives as long as
    # the workers: out of the collector's sight (the permanent generation),
    # a worker's collections no longer scan it, nor write its GC headers,
    # which would copy the parent's pages into every worker (copy-on-write
    # faults, kernel CPU in the ramp). gc's documentation for fork without exec.
    # (--gc default leaves the collector as CPython has it: the ladder of fixes)
    apply_gc(getattr(cfg, "gc", "freeze"), "parent")
    if getattr(cfg, "push", 0):
        # SIGUSR1 (push broadcast) is the workers': ignored from before the
        # fork, so one that arrives before a worker installs its handler (which
        # replaces SIG_IGN) does not kill it, nor one sent to the parent
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    for i in range(cfg.workers):
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as e:
            log("fork: %s" % e.strerror)
            for p in pids[:i]:
                os.kill(p, signal.SIGTERM)
            for p in pids[:i]:
                os.waitpid(p, 0)
            return 1
        if pid == 0:
            _child(cfg, sf, i, old_mask, parent)
        pids[i] = pid
    status = supervise(pids, sf)
    if not cfg.quiet:
        log("all workers exited cleanly" if status == 0 else "stopped after a worker failure")
    sf.close()
    return status


def supervise(pids, sf):
    """Wait for every worker (signals stay blocked: taken with sigtimedwait)."""
    live = {pid: i for i, pid in enumerate(pids)}
    waitset = set(STOP_SIGNALS) | {signal.SIGCHLD}
    failed = 0
    stopping = False
    stop_at = None
    killed = False

    def kill_all(sig):
        for pid in live:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    while live:
        while live:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                live.clear()
                break
            if pid == 0:
                break
            i = live.pop(pid, None)
            if i is None:
                continue
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                continue
            failed += 1
            try:
                sf.set_state(i, st.FAILED, pid)
            except Exception:
                pass
            if not stopping:
                log("worker %d (pid %d) %s; stopping all workers" % (i, pid, describe(status)))
                stopping = True
                stop_at = time.monotonic()
                kill_all(signal.SIGTERM)
            else:
                log("worker %d (pid %d) %s while stopping" % (i, pid, describe(status)))
        if not live:
            break
        info = signal.sigtimedwait(waitset, 0.2)
        if info is not None and info.si_signo in STOP_SIGNALS:
            if not stopping:
                stopping = True
                stop_at = time.monotonic()
            kill_all(signal.SIGTERM)
        if stopping and not killed and time.monotonic() - stop_at > KILL_AFTER_S:
            log("workers still running %.0f s after the stop: SIGKILL" % KILL_AFTER_S)
            killed = True
            kill_all(signal.SIGKILL)
    return 1 if failed else 0

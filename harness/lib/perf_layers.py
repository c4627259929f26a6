"""Where a server's CPU goes: perf samples -> layers, folded stacks, tables.

    perf script -F comm,pid,tid,period,event,ip,sym,dso -i ramp.data \\
        | perf_layers.py fold --ours-syms syms.txt --ours-dso c1m-server \\
              --folded c-ramp.folded --summary c-ramp.json
    perf_layers.py table OUT_DIR          # layers.csv, layers.md, plot data

Used by harness/anatomy-cpu. Each sample (one cpu-clock period of one server
process, with its call chain) is charged to ONE layer: the first frame, from
the leaf towards the root, that a rule in LAYER_RULES below names. Generic
frames (memcpy, locks, the slab allocator, the scheduler, libc's syscall
wrappers) are transparent: the sample goes to whoever called them. Kernel
frames always come first in a chain (the leaf side), so kernel time stays
kernel time whatever user code made the syscall; a kernel chain no specific
rule names is charged by its syscall (accept4, read, close... -> the TCP
path; epoll_* -> epoll) and else to "kernel: other" (syscall entry and exit,
page faults, timers). A sample whose leaf has no symbol and whose library no
rule names is "unknown": perf could not say what ran, and the report says
where (by library). An unnamed frame in the interpreter (Debian strips
CPython's static functions) is not unknown: Classifier._classify_user says
where it goes.

The layer times in the table are each layer's share of the samples times the
server's measured CPU (sum_exec_runtime of the parent and every worker over
the same window) divided by the accepted connections, so they add up to the
measured total; perf's own sampled total (the sum of the sample periods)
is listed beside it as the coverage check, for the tree and for its busiest
processes one by one (a worker perf did not see shows as 0%). The tree's
coverage stays under 100%: perf's cpu-clock runs from a task's switch in to
its switch out, while sum_exec_runtime also holds the context switches
themselves (on this VM, 3-6% for one busy worker, 8-20% for three workers
contending for two CPUs at 4,000 connections).
"""
import argparse
import collections
import csv
import json
import os
import re
import sys

import c1m_root  # noqa: F401  (py_server.cli_rules)
import runstore
from py_server.cli_rules import ascii_digits

# ---------------------------------------------------------------------------
# The layers, in the order the table and the stacked bar show them (bottom up).
LAYERS = (
    "kernel: accept + TCP",
    "kernel: epoll",
    "kernel: page faults",
    "kernel: other",
    "libc1m loop",
    "c1m server/extension code",
    "counters publishing",
    "libuv/uvloop",
    "gevent/greenlet/libev",
    "_asyncio C accelerator",
    "socket/select modules",
    "CPython eval loop",
    "CPython objects/calls/builtins",
    "CPython unnamed statics",
    "allocation (pymalloc, malloc)",
    "garbage collector",
    "libc",
    "other",
    "unknown",
)
(K_TCP, K_EPOLL, K_FAULT, K_OTHER, LIBC1M, OURS, COUNTERS, LIBUV, GEVENT, ASYNCIO_C, SOCKET, EVAL,
 OBJECTS, STATICS, ALLOC, GC, LIBC, OTHER, UNKNOWN) = LAYERS
# One colour per layer: the flame graphs and the stacked bars agree.
COLOURS = dict(zip(LAYERS, ("#4c72b0", "#64b5cd", "#2a4d7a", "#8da0cb", "#55a868", "#8fd175", "#ccb974",
                            "#8172b3", "#b59bd9", "#da8bc3", "#937860", "#dd8452", "#f0b27a", "#f5d6b3",
                            "#c44e52", "#7a1f24", "#6b8e23", "#bcbcbc", "#e0e0e0")))
GENERIC = "generic (counted in its caller's layer)"
TRANSPARENT = None      # a rule result: not this frame, ask its caller

# The rule table: (where, symbol regex, DSO regex, layer). where = "k" kernel
# frames, "u" user frames. First match wins, frame by frame from the leaf; a
# layer of TRANSPARENT passes the sample to the frame's caller. A symbol regex
# of None matches any symbol, also none (a rule on the library alone).
# "ours" (the libc1m symbol list, the server binary and the extension) is
# handled in classify_user() because it needs the list read from the build.
_K_GENERIC = (r"_raw_spin_.*|raw_spin_.*|queued_spin_.*|native_queued_spin.*|__raw_spin.*|"
              r"mem(cpy|set|move|cmp)\w*|__mem(cpy|set|move)\w*|copy_(user|to_user|from_user)\w*|"
              r"_copy_(to|from)_(user|iter)\w*|rep_(movs|stos)_\w+|clear_user\w*|"
              r"kmem_cache_\w+|__kmem_cache_\w+|kmalloc\w*|__kmalloc\w*|kfree\w*|__slab_\w+|"
              r"___slab_\w+|slab_\w+|__alloc_pages\w*|get_page_from_freelist|alloc_pages\w*|"
              r"rcu_\w+|__rcu_\w+|schedule\w*|__schedule|finish_task_switch\w*|preempt_\w+|"
              r"__cond_resched|_cond_resched|mutex_\w+|__mutex_\w+|refcount_\w+|"
              r"__fget\w*|fget\w*|__fdget\w*|fput\w*|fd_install|security_\w+|apparmor_\w+|"
              r"__check_object_size|check_heap_object|__virt_addr_valid|ktime_get\w*|"
              r"__local_bh_enable_ip|local_bh_enable|_local_bh_enable|__cgroup_\w+|mod_memcg\w*|"
              r"__mod_memcg\w*|memcg_\w+|obj_cgroup_\w+|__memcg_\w+|lock_sock_nested|release_sock|"
              r"__wake_up\w*|try_to_wake_up|ttwu_\w+|wake_up_\w+|__x86_indirect_thunk\w*|"
              r"__x86_return_thunk|srso_\w+|retbleed_\w+")
_K_TCP = (r"tcp_\w+|__tcp_\w+|tcp4_\w+|inet_\w+|__inet_\w+|inet6_\w+|ip_\w+|__ip_\w+|ipv4_\w+|"
          r"ip6_\w+|sk_\w+|__sk_\w+|sock_\w+|__sock_\w+|sockfd_lookup\w*|__sys_(accept4|recvfrom|"
          r"sendto|recvmsg|sendmsg|setsockopt|getsockopt|getsockname|getpeername|shutdown)\w*|"
          r"do_accept|__do_accept|move_addr_to_user|skb_\w+|__skb_\w+|kfree_skb\w*|__kfree_skb\w*|"
          r"consume_skb|__alloc_skb|alloc_skb\w*|__napi_\w+|napi_\w+|net_rx_action|process_backlog|"
          r"__netif_\w+|netif_\w+|loopback_xmit|__dev_queue_xmit|dev_hard_start_xmit|"
          r"dev_queue_xmit\w*|neigh_\w+|nf_\w+|__nf_\w+|raw_local_deliver|reqsk_\w+|"
          r"inet_csk_\w+|sock_def_\w+|sk_stream_\w+|"  # security_socket_*: _K_GENERIC (transparent)
          r"__x64_sys_(accept4?|recvfrom|sendto|recvmsg|sendmsg|setsockopt|getsockopt|"
          r"getsockname|getpeername|shutdown)")
_K_EPOLL = r"ep_\w+|__ep_\w+|do_epoll_\w+|__x64_sys_epoll_\w+|__do_sys_epoll_\w+|epoll_\w+|eventpoll_\w+"
# A socket's poll callback called by epoll (ep_item_poll -> sock_poll ->
# tcp_poll: epoll asking each ready socket what it is ready for) is epoll's
# per-ready-event work, not the TCP path's: charged to epoll.
_K_SOCK_POLL = re.compile(r"^(?:tcp_poll|__tcp_poll|sock_poll|datagram_poll|unix_poll)$")
_K_EPOLL_POLLER = re.compile(r"^(?:ep_item_poll|__ep_item_poll|ep_send_events\w*|ep_poll_callback)$")
# Syscalls that, on these servers, act on sockets (the fallback for a kernel
# chain no specific rule named: e.g. close() ending in __fput -> dput).
_SYSCALL_ENTRY = re.compile(r"^(?:__x64_sys|__do_sys|__se_sys|__ia32_sys)_(\w+)$")
_SOCKET_SYSCALLS = {"accept", "accept4", "read", "readv", "recvfrom", "recvmsg", "write", "writev",
                    "sendto", "sendmsg", "close", "shutdown", "setsockopt", "getsockopt",
                    "getsockname", "getpeername", "socket", "bind", "listen", "ioctl", "fcntl"}

# Allocation: pymalloc (obmalloc), malloc, and the object allocators of the
# gc-tracked types (gc_alloc, _PyObject_GC_New...: the allocation; a collection
# they trigger is the garbage collector's, below).
_U_ALLOC = (r"PyObject_(Malloc|Calloc|Realloc|Free)|_PyObject_(Malloc|Calloc|Realloc|Free)\w*|"
            r"pymalloc_\w+|allocate_from_new_pool|insert_to_\w+pool|_PyObject_GC_(New|NewVar|Resize|Link)\w*|"
            r"PyObject_GC_(Track|UnTrack|Del)|gc_alloc|_PyObject_New\w*|PyObject_Init\w*|"
            r"PyType_GenericAlloc|_PyType_AllocNoTrack|"
            r"PyMem_\w+|_PyMem_\w+|_PyObject_ArenaMmap|_PyObject_ArenaMunmap|obmalloc\w*|new_arena|"
            r"malloc|free|calloc|realloc|cfree|_int_malloc|_int_free|_int_realloc|__libc_(malloc|"
            r"free|calloc|realloc)|tcache_\w+|malloc_consolidate|unlink_chunk\w*|sysmalloc|"
            r"__GI___libc_(malloc|free)|_dl_\w*alloc\w*")
# The garbage collector's collection (Modules/gcmodule.c): a sample with any of
# these frames is the collector's, whatever it was visiting (the tp_traverse
# of a dict, a list...), so this rule is tried on the whole chain first.
_U_GC_COLLECT = re.compile(
    r"^(?:gc_collect\w*|collect|collect_with_callback|collect_generations|PyGC_Collect|_PyGC_\w+|"
    r"gc_collect_main|subtract_refs|update_refs|move_unreachable|visit_decref|visit_reachable|"
    r"deduce_unreachable|move_legacy_finalizers|handle_legacy_finalizers|finalize_garbage|"
    r"delete_garbage|untrack_tuples|untrack_dicts|invoke_gc_callback|gc_list_\w+)$")
_U_GENERIC = (r"__?mem(cpy|set|move|cmp)\w*|__strlen\w*|strlen|__str\w+|__GI_\w+|"
              r"__libc_\w+|__(accept4|read|write|close|recv|send|epoll_wait|epoll_ctl)\w*|"
              r"(accept4|read|write|close|recv|recvfrom|send|sendto|epoll_wait|epoll_pwait|"
              r"epoll_ctl|clock_gettime|__clock_gettime\w*|gettimeofday|syscall|ioctl|fcntl\w*)|"
              r"__vdso_\w+|__x86\.get_pc_thunk\.\w+|pthread_\w+|__pthread_\w+|___pthread_\w+")
# libc's socket and epoll wrappers: an unnamed interpreter frame calling one of
# these is the socket or select module (Modules/socketmodule.c and
# selectmodule.c are the interpreter's only callers of them).
_U_SOCKET_WRAPPER = re.compile(
    r"^(?:__GI_)?_*(?:libc_)?(?:accept4?|recv|recvfrom|recvmsg|send|sendto|sendmsg|setsockopt|"
    r"getsockopt|getsockname|getpeername|shutdown|socket|bind|listen|epoll_wait|epoll_pwait|"
    r"epoll_ctl|epoll_create1?)$")
_PY_DSO = r".*/(python3[.\d]*|libpython3[.\d]*\.so[.\d]*)$"
_PY_DSO_RE = re.compile(_PY_DSO)

LAYER_RULES = (
    # kernel frames
    ("k", _K_GENERIC, None, TRANSPARENT),
    ("k", r"asm_exc_page_fault|exc_page_fault|do_user_addr_fault|handle_mm_fault|__handle_mm_fault|"
          r"handle_pte_fault|do_anonymous_page|do_fault|do_read_fault|do_cow_fault|do_wp_page|"
          r"wp_page_copy|do_huge_pmd_anonymous_page|clear_page\w*|lock_vma_under_rcu|"
          r"lock_mm_and_find_vma|filemap_map_pages", None, K_FAULT),
    ("k", _K_EPOLL, None, K_EPOLL),
    ("k", _K_TCP, None, K_TCP),
    # user frames: C libraries and accelerators by their file, named or not
    ("u", None, r".*(/libuv[^/]*\.so[^/]*|/uvloop/[^/]*\.so)$", LIBUV),
    ("u", r"uv_\w+|uv__\w+", None, LIBUV),
    ("u", None, r".*/(gevent|greenlet)/.*\.so$|.*/libev[^/]*\.so[^/]*$", GEVENT),
    ("u", None, r".*/_asyncio[.\w-]*\.so$", ASYNCIO_C),
    ("u", _U_ALLOC, None, ALLOC),
    ("u", _U_GENERIC, None, TRANSPARENT),
    # the socket and select modules, where their functions are named (a
    # CPython built with its symbols; Debian's strips them: see _classify_user)
    ("u", r"sock_\w+|socket_\w+|internal_(setblocking|select|connect)|getsockaddrarg|makesockaddr|"
          r"makeipaddr|setipaddr|init_sockobject|new_sockobject|select_\w+|pyepoll_\w+|"
          r"newPyEpoll_Object", _PY_DSO + r"|.*/(_socket|select)[.\w-]*\.so$", SOCKET),
    ("u", r"_?PyEval_\w+|_PyEval_Vector", None, EVAL),
    ("u", r"_?Py\w+", None, OBJECTS),
    # any other resolved symbol of the interpreter or its C modules: objects,
    # calls and builtins (dict lookups, type slots, method descriptors...)
    ("u", r".+", _PY_DSO, OBJECTS),
    ("u", r".+", r".*/python3[.\d]*/lib-dynload/[^/]*\.so$", OBJECTS),
    ("u", r".+", r".*/libc\.so[.\d]*$", LIBC),
)
# In our own binary / extension (the --ours-dso files): the counters writer
# (libc1m's stats.c, c1m-server's publish timer, the extension's
# c1m.Counters and its C timer) is its own layer; the rest
# is libc1m when the symbol is in libc1m.a's list, else the server's or the
# extension's own code.
_OURS_COUNTERS = re.compile(r"^(?:c1m_stats_\w+|publish|on_publish_tick|c1m_counters_publish)$")
_COMPILED = [(w, re.compile("^(?:%s)$" % s) if s is not None else None,
              re.compile(d) if d is not None else None, layer) for w, s, d, layer in LAYER_RULES]
_NO_RULE = object()


class Frame(collections.namedtuple("Frame", "sym dso kernel")):
    """One call-chain entry: sym is None when perf resolved no symbol."""


def parse_frame_line(line):
    """'\\t ffffffff8123 tcp_v4_rcv+0x12 ([kernel.kallsyms])' -> Frame, or None."""
    s = line.strip()
    if not s:
        return None
    addr, _, rest = s.partition(" ")
    if not re.fullmatch(r"[0-9a-fA-F]+", addr):
        return None
    rest = rest.strip()
    dso = ""
    if rest.endswith(")") and " (" in rest:
        rest, _, dso = rest.rpartition(" (")
        dso = dso[:-1]
    elif rest.startswith("(") and rest.endswith(")"):
        dso, rest = rest[1:-1], ""
    sym = re.sub(r"\+0x[0-9a-fA-F]+$", "", rest.strip()) or None
    if sym in ("[unknown]", "unknown"):
        sym = None
    kernel = dso.startswith("[kernel") or dso.endswith(".ko") or dso.startswith("[guest.kernel")
    return Frame(sym, dso, kernel)


def parse_perf_script(lines):
    """Yield (period, [frames leaf first], pid) per sample of `perf script`
    output (-F comm,pid,tid,period,event,ip,sym,dso: a header line, the chain
    indented one frame per line, a blank line). The period is the header's
    number before the event name (nanoseconds for cpu-clock); 1 when absent.
    The pid is the header's PID/TID field's PID; None when absent."""
    period, frames, pid, in_sample = 1, [], None, False
    for line in lines:
        if not line.strip():
            if in_sample:
                yield period, frames, pid
            period, frames, pid, in_sample = 1, [], None, False
            continue
        if line[0] in " \t":
            if in_sample:
                f = parse_frame_line(line)
                if f is not None:
                    frames.append(f)
            continue
        if in_sample:            # a header right after a sample with no blank line
            yield period, frames, pid
        in_sample, frames, period, pid = True, [], 1, None
        m = re.search(r"\s(\d+)\s+[\w:-]*clock[\w:-]*:?", line) or re.search(r"\s(\d+)\s+\S+:\s*$", line)
        if m:
            period = int(m.group(1))
        m = re.search(r"\s(\d+)/\d+\s", line)
        if m:
            pid = int(m.group(1))
    if in_sample:
        yield period, frames, pid


class Classifier:
    """Layer of a sample from its frames. ours_syms: the symbols of libc1m
    (nm of libc1m.a); ours_dsos: basenames of our server binary / extension,
    whose other symbols are "c1m server/extension code"."""

    def __init__(self, ours_syms=(), ours_dsos=()):
        self.via_unnamed = False    # the last user sample was charged through an unnamed frame
        self.ours_syms = set(ours_syms)
        self.ours_dsos = tuple(ours_dsos)

    def _is_ours(self, dso):
        b = os.path.basename(dso)
        return any(b == d or b.startswith(d) for d in self.ours_dsos)

    def frame_layer(self, f):
        """The layer a frame names, TRANSPARENT, or _NO_RULE."""
        where = "k" if f.kernel else "u"
        if not f.kernel and f.sym is not None and self._is_ours(f.dso):
            if _OURS_COUNTERS.match(f.sym):
                return COUNTERS
            return LIBC1M if f.sym in self.ours_syms else OURS
        for w, sym_re, dso_re, layer in _COMPILED:
            if w != where:
                continue
            if sym_re is not None and (f.sym is None or not sym_re.match(f.sym)):
                continue
            if dso_re is not None and not dso_re.match(f.dso):
                continue
            return layer
        return _NO_RULE

    def frame_layer_name(self, f):
        """The layer a single frame belongs to, for the flame graph's colours:
        a layer name, GENERIC for a transparent frame."""
        layer = self.frame_layer(f)
        if layer is TRANSPARENT:
            return GENERIC
        if layer is _NO_RULE:
            if f.sym is None:
                return STATICS if not f.kernel and _PY_DSO_RE.match(f.dso) else UNKNOWN
            return K_OTHER if f.kernel else OTHER
        return layer

    def classify(self, frames):
        """(layer, unresolved_dso or None) for one sample, frames leaf first."""
        self.via_unnamed = False
        if not frames:
            return UNKNOWN, "(no call chain)"
        if frames[0].kernel:
            return self._classify_kernel(frames), None
        return self._classify_user(frames)

    def _classify_kernel(self, frames):
        kframes = [f for f in frames if f.kernel]
        if kframes[0].sym is None:
            return UNKNOWN
        for i, f in enumerate(kframes):
            if f.sym is None:
                continue
            layer = self.frame_layer(f)
            if layer is TRANSPARENT or layer is _NO_RULE:
                continue
            if _K_SOCK_POLL.match(f.sym) and any(g.sym and _K_EPOLL_POLLER.match(g.sym)
                                                 for g in kframes[i + 1:]):
                return K_EPOLL
            return layer
        for f in kframes:         # no specific frame: which syscall is this?
            m = _SYSCALL_ENTRY.match(f.sym or "")
            if m:
                name = m.group(1)
                if name.startswith("epoll"):
                    return K_EPOLL
                if name in _SOCKET_SYSCALLS:
                    return K_TCP
        return K_OTHER

    def _classify_user(self, frames):
        """Leaf to root, the first frame a rule names. Debian's CPython is
        stripped of its static functions (most of the interpreter: dict
        lookups, type slots, the socket module, obmalloc's and the gc's
        internals): an unnamed frame in the interpreter is charged to its
        nearest named caller's layer (code a named allocator calls is
        allocation, code _PyObject_GetAttr calls is objects), except that under
        the eval loop itself (or under nothing named) it is "CPython unnamed
        statics": C code the bytecode called that perf cannot name. One that
        calls a libc socket or epoll wrapper is the socket/select modules. A
        sample with a collection frame anywhere is the garbage collector's."""
        self.via_unnamed = False
        if any(f.sym is not None and _U_GC_COLLECT.match(f.sym) for f in frames):
            return GC, None
        leaf = frames[0]
        unnamed_py = False
        for i, f in enumerate(frames):
            layer = self.frame_layer(f)
            if layer is TRANSPARENT:
                continue
            if layer is _NO_RULE:
                if f.sym is None:
                    if _PY_DSO_RE.match(f.dso):
                        if i > 0 and frames[i - 1].sym and _U_SOCKET_WRAPPER.match(frames[i - 1].sym):
                            return SOCKET, None
                        unnamed_py = self.via_unnamed = True
                        continue
                    if i == 0:    # perf cannot say what code ran
                        return UNKNOWN, os.path.basename(f.dso) or "[unknown]"
                    continue      # an unresolved caller: look further up
                return OTHER, None
            if unnamed_py and layer == EVAL:
                return STATICS, None
            return layer, None
        if unnamed_py:
            return STATICS, None
        if leaf.sym is None:
            return UNKNOWN, os.path.basename(leaf.dso) or "[unknown]"
        return OTHER, None


def frame_name(f):
    """A frame in a folded stack: kernel symbols get flamegraph.pl's _[k]."""
    if f.sym is None:
        return "[%s]" % (os.path.basename(f.dso) or "unknown")
    name = f.sym.replace(";", ":")
    return name + "_[k]" if f.kernel else name


def fold(lines, classifier):
    """Fold perf script output: (folded {stack: samples}, summary dict)."""
    folded = collections.Counter()
    per_layer = {l: [0, 0] for l in LAYERS}
    unresolved = collections.Counter()
    frame_layers = {}
    samples = period_ns = 0
    by_pid = collections.Counter()
    via_unnamed = 0
    for period, frames, pid in parse_perf_script(lines):
        if pid is not None:
            by_pid[str(pid)] += period
        layer, udso = classifier.classify(frames)
        for f in frames:
            name = frame_name(f)
            if name not in frame_layers:
                frame_layers[name] = classifier.frame_layer_name(f)
        per_layer[layer][0] += 1
        per_layer[layer][1] += period
        if udso is not None:
            unresolved[udso] += 1
        via_unnamed += classifier.via_unnamed
        samples += 1
        period_ns += period
        stack = ";".join(frame_name(f) for f in reversed(frames)) or "[no call chain]"
        folded[stack] += 1
    summary = {"samples": samples, "period_ns": period_ns,
               "layers": {l: {"samples": c, "period_ns": p} for l, (c, p) in per_layer.items()},
               "unknown_by_dso": dict(unresolved.most_common()),
               "period_ns_by_pid": dict(by_pid),
               "via_unnamed_interpreter_frames": via_unnamed,
               "frame_layers": frame_layers}
    return folded, summary


def read_folded(lines):
    """Folded-stack lines 'a;b;c 12' -> Counter({('a','b','c'): 12}); bad lines are skipped."""
    out = collections.Counter()
    for line in lines:
        line = line.rstrip("\n")
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        out[tuple(stack.split(";"))] += int(n)
    return out


def write_folded(folded, path):
    with open(path, "w") as f:
        for stack, n in sorted(folded.items()):
            f.write("%s %d\n" % (stack, n))


# ---------------------------------------------------------------------------
# The table across contenders and phases.
PHASES = ("ramp", "hold")


def layer_times(summary, measured_ns, conns, seconds=1.0):
    """{layer: us per connection (per second of the phase, when seconds is given)}:
    each layer's share of the samples x the measured CPU."""
    total = summary["samples"] if summary else 0
    out = {}
    for l in LAYERS:
        if not total:
            out[l] = None
            continue
        share = summary["layers"][l]["samples"] / total
        out[l] = share * measured_ns / 1000.0 / conns / seconds
    return out


def parse_by_pid(text):
    """'PID:NS,PID:NS' (anatomy-cpu's cpu_ns_by_pid) -> {pid: ns}; bad items skipped."""
    out = {}
    for item in str(text or "").split(","):
        pid, _, ns = item.strip().partition(":")
        if ascii_digits(pid) and ascii_digits(ns.lstrip("-")):
            out[pid] = int(ns)
    return out


# A process that used less than this share of the tree's CPU (the parent, an
# idle worker) has too few samples for its own coverage to mean anything.
COVERAGE_MIN_SHARE = 0.05


def coverage(summary, measure):
    """(tree, lowest, pid): perf's sampled CPU over the measured CPU for the
    whole tree, and the lowest such ratio among the processes that used at
    least COVERAGE_MIN_SHARE of the tree's CPU, with its pid (None where not
    known). perf's cpu-clock counts a task from its switch in to its switch
    out; sum_exec_runtime also holds the context switches, so the tree's ratio
    stays under 1 by their cost. A process perf never saw shows as 0."""
    if not summary:
        return None, None, None
    measured = int(measure.get("cpu_ns") or 0)
    tree = summary.get("period_ns", 0) / measured if measured > 0 else None
    by_pid = parse_by_pid(measure.get("cpu_ns_by_pid"))
    sampled = summary.get("period_ns_by_pid") or {}
    total = sum(v for v in by_pid.values() if v > 0)
    low = low_pid = None
    for pid, ns in by_pid.items():
        if total <= 0 or ns < COVERAGE_MIN_SHARE * total:
            continue
        r = sampled.get(pid, 0) / ns
        if low is None or r < low:
            low, low_pid = r, pid
    return tree, low, low_pid


def load_runs(outdir):
    """The runs of an anatomy directory: OUT/CONTENDER/measure-PHASE.json
    (anatomy-cpu) with the fold summary beside it (CONTENDER-PHASE.json)."""
    runs = []
    for name in sorted(os.listdir(outdir) if os.path.isdir(outdir) else []):
        d = os.path.join(outdir, name)
        if not os.path.isdir(d):
            continue
        for phase in PHASES:
            mpath = os.path.join(d, "measure-%s.json" % phase)
            if not os.path.exists(mpath):
                continue
            with open(mpath) as f:
                m = json.load(f)
            spath = os.path.join(outdir, "%s-%s.json" % (name, phase))
            s = None
            if os.path.exists(spath):
                with open(spath) as f:
                    s = json.load(f)
            runs.append((name, phase, m, s))
    contenders = str(runstore.read_meta(outdir).get("contenders") or "")
    order = {c: i for i, c in enumerate(contenders.split(","))} if contenders else {}
    if order:      # this run's contenders only (OUT may hold an interrupted earlier run's)
        runs = [r for r in runs if r[0] in order]
    runs.sort(key=lambda r: (PHASES.index(r[1]), order.get(r[0], 99), r[0]))
    return runs


def fmt(v, digits=2):
    return "" if v is None else ("%.*f" % (digits, v))


def table(outdir):
    """Write layers.csv, layers.md and plots/data/layers-PHASE.dat; return the md text."""
    runs = load_runs(outdir)
    if not runs:
        raise SystemExit("perf_layers.py table: no measure-*.json under %s" % outdir)
    rows, refused = [], []
    for contender, phase, m, s in runs:
        try:
            conns = int(m.get("conns"))
        except (TypeError, ValueError):
            conns = 0
        if conns < 1:
            # no count of connections: a per-connection figure would be the
            # whole CPU of the window (left out of the table, said in layers.md)
            refused.append("%s %s: left out: no connections counted (conns=%r)"
                           % (contender, phase, m.get("conns")))
            continue
        secs = float(m.get("window_s") or 1.0) if phase == "hold" else 1.0
        measured_ns = int(m.get("cpu_ns") or 0)
        if measured_ns <= 0 and m.get("cpu_ticks"):   # a kernel without /proc/PID/schedstat
            measured_ns = int(m["cpu_ticks"] * 1e9 / (m.get("clk_tck") or 100))
        lt = layer_times(s if m.get("perf") == "ok" else None, measured_ns, conns, secs)
        if all(v is None for v in lt.values()):
            lt[UNKNOWN] = measured_ns / 1000.0 / conns / secs  # no profile: all of it unknown
        sampled = (s["period_ns"] / 1000.0 / conns / secs) if (s and m.get("perf") == "ok") else None
        cov, cov_low, cov_pid = coverage(s if m.get("perf") == "ok" else None, m)
        rows.append({
            "contender": contender, "phase": phase, "conns": conns, "window_s": m.get("window_s"),
            "unit": "us/conn" if phase == "ramp" else "us/conn/s",
            "measured_total": measured_ns / 1000.0 / conns / secs,
            "measured_ticks_total": ((m.get("cpu_ticks") or 0) / (m.get("clk_tck") or 100) * 1e6 / conns / secs),
            "sampled_total": sampled,
            "coverage": cov, "coverage_min_process": cov_low, "coverage_min_pid": cov_pid,
            "samples": s["samples"] if s else 0,
            "perf": m.get("perf", "unavailable"),
            "perf_cause": m.get("perf_cause", ""),
            "layers": lt,
            "unknown_by_dso": (s or {}).get("unknown_by_dso", {}),
            "workers": m.get("workers"),
            "perf_warning": m.get("perf_warning", ""),
            "gate": m.get("gate", ""), "gate_wait_s": m.get("gate_wait_s"), "gate_cause": m.get("gate_cause", ""),
            "outside_cpu_pct": m.get("outside_cpu_pct"), "init_cpu_pct": m.get("init_cpu_pct"),
            "disturbed": m.get("disturbed"), "disturb_cause": m.get("disturb_cause", ""),
        })
    cols = ["contender", "phase", "unit", "conns", "window_s", "workers", "samples", "perf",
            "measured_total", "sampled_total", "measured_ticks_total", "coverage",
            "coverage_min_process"] + list(LAYERS) + [
            "gate", "gate_wait_s", "outside_cpu_pct", "init_cpu_pct", "disturbed"]
    with open(os.path.join(outdir, "layers.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r["contender"], r["phase"], r["unit"], r["conns"], fmt(r["window_s"], 3),
                        r["workers"], r["samples"], r["perf"], fmt(r["measured_total"]),
                        fmt(r["sampled_total"]), fmt(r["measured_ticks_total"]),
                        fmt(r["coverage"], 3), fmt(r["coverage_min_process"], 3)]
                       + [fmt(r["layers"][l]) for l in LAYERS]
                       + [r["gate"], "" if r["gate_wait_s"] is None else r["gate_wait_s"],
                          "" if r["outside_cpu_pct"] is None else r["outside_cpu_pct"],
                          "" if r["init_cpu_pct"] is None else r["init_cpu_pct"],
                          "" if r["disturbed"] is None else r["disturbed"]])
    pdir = os.path.join(outdir, "plots", "data")
    os.makedirs(pdir, exist_ok=True)
    have = []
    for phase in PHASES:
        pr = [r for r in rows if r["phase"] == phase]
        if not pr:
            continue
        have.append(phase)
        write_plot_data(pdir, phase, pr)
    md = render_md(rows, runstore.read_meta(outdir), refused)
    with open(os.path.join(outdir, "layers.md"), "w") as f:
        f.write(md)
    return md, have


def write_plot_data(pdir, phase, rows):
    """plots/data/layers-PHASE.dat (a header row, then one row per contender:
    the layers any contender has, then the measured total) and
    layers-PHASE.gp (ncol, colours, the unit) for harness/plots/anatomy_cpu.gp."""
    used = [l for l in LAYERS if any((r["layers"][l] or 0) > 0 for r in rows)] or [UNKNOWN]
    with open(os.path.join(pdir, "layers-%s.dat" % phase), "w") as f:
        f.write("contender %s total\n" % " ".join('"%s"' % l for l in used))
        for r in rows:
            f.write("%s %s %s\n" % (r["contender"], " ".join(fmt(r["layers"][l] or 0.0, 4) for l in used),
                                    fmt(r["measured_total"], 4)))
    unit = ("microseconds of server CPU per accepted connection" if phase == "ramp"
            else "microseconds of server CPU per connection per second held")
    with open(os.path.join(pdir, "layers-%s.gp" % phase), "w") as f:
        f.write("nlayers = %d\n" % len(used))
        f.write("colours = '%s'\n" % " ".join(COLOURS[l] for l in used))
        f.write("unit = '%s'\n" % unit)
        f.write("ttl = '%s'\n" % ("Server CPU per accepted connection, by layer (ramp)" if phase == "ramp"
                                   else "Server CPU while holding, by layer (heartbeats)"))


def render_md(rows, meta=None, refused=()):
    out = ["# Server CPU by layer", ""]
    if meta:
        out.append("`%s` (%s connections; perf %s, cpu-clock every %s us of CPU, %s call graphs; "
                   "kernel %s, %s CPUs; commit %s)" % (
                       meta.get("command"), meta.get("conns"), meta.get("perf"), meta.get("perf_period_us"),
                       meta.get("perf_callgraph"), meta.get("kernel"), meta.get("cpus"),
                       str(meta.get("git_commit", ""))[:12]))
        if meta.get("perf_cause"):
            out.append("")
            out.append("No CPU profile: %s" % meta["perf_cause"])
        out.append("")
    for phase in PHASES:
        pr = [r for r in rows if r["phase"] == phase]
        if not pr:
            continue
        if phase == "ramp":
            out.append("## Ramp: microseconds of server CPU per accepted connection")
        else:
            out.append("## Hold: microseconds of server CPU per connection per second held (heartbeats)")
        out.append("")
        out.append("| layer | " + " | ".join(r["contender"] for r in pr) + " |")
        out.append("|---|" + "---:|" * len(pr))
        for l in LAYERS:
            vals = [r["layers"][l] for r in pr]
            if all(v is None or v == 0 for v in vals):
                continue
            out.append("| %s | %s |" % (l, " | ".join(fmt(v) if v is not None else "unknown" for v in vals)))
        out.append("| **measured total** (sum_exec_runtime) | %s |" % " | ".join(fmt(r["measured_total"]) for r in pr))
        out.append("| perf's sampled total | %s |" % " | ".join(fmt(r["sampled_total"]) or "-" for r in pr))
        out.append("| perf's coverage: sampled / measured (lowest busy process) | %s |" % " | ".join(
            "-" if r["coverage"] is None else "%.0f%%%s" % (100 * r["coverage"], "" if r["coverage_min_process"] is None
                                                         else " (%.0f%%)" % (100 * r["coverage_min_process"]))
            for r in pr))
        out.append("| utime+stime (10 ms ticks) | %s |" % " | ".join(fmt(r["measured_ticks_total"]) for r in pr))
        out.append("| samples | %s |" % " | ".join(str(r["samples"]) for r in pr))
        out.append("| outside CPU, %% of the machine (disturb.py) | %s |" % " | ".join(
            "-" if r["outside_cpu_pct"] is None else str(r["outside_cpu_pct"]) for r in pr))
        out.append("")
        for r in pr:
            if r["gate"] == "timeout":
                out.append("- %s: started after the quiet gate timed out (%ss): %s"
                           % (r["contender"], r["gate_wait_s"], r["gate_cause"]))
            if str(r["disturbed"]) == "1":
                out.append("- %s: DISTURBED: %s" % (r["contender"], r["disturb_cause"]))
            elif r["outside_cpu_pct"] is None:
                out.append("- %s: disturbance not measured (no sampler figure): not proven quiet"
                           % r["contender"])
            if r["perf_warning"]:
                out.append("- %s: perf said: %s (its sampled total is short by what it lost)"
                           % (r["contender"], r["perf_warning"]))
            if r["perf"] != "ok":
                out.append("- %s: no profile (%s): every layer is unknown; the total is measured."
                           % (r["contender"], r["perf_cause"] or r["perf"]))
            elif r["unknown_by_dso"]:
                top = ", ".join("%s %d" % kv for kv in list(r["unknown_by_dso"].items())[:4])
                out.append("- %s: %d of %d samples had no symbol for the code that ran (%s): "
                           "they are the unknown layer." % (r["contender"], sum(r["unknown_by_dso"].values()),
                                                           r["samples"], top))
        out.append("")
    for line in refused:
        out.append("- " + line)
    return "\n".join(out)


def read_syms(path):
    if not path:
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.strip()]


def main(argv=None):
    p = argparse.ArgumentParser(prog="perf_layers.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fold", help="perf script output on stdin -> folded stacks + layer summary")
    f.add_argument("--ours-syms", help="file: one libc1m symbol per line (nm of libc1m.a)")
    f.add_argument("--ours-dso", action="append", default=[],
                   help="basename (or prefix) of our server binary / extension (repeatable)")
    f.add_argument("--folded", required=True)
    f.add_argument("--summary", required=True)
    t = sub.add_parser("table", help="layers.csv, layers.md and plot data of an anatomy directory")
    t.add_argument("outdir")
    a = p.parse_args(argv)
    if a.cmd == "fold":
        cl = Classifier(read_syms(a.ours_syms), a.ours_dso)
        stream = open(sys.stdin.fileno(), "r", errors="replace", closefd=False)
        folded, summary = fold(stream, cl)
        write_folded(folded, a.folded)
        with open(a.summary, "w") as f:
            json.dump(summary, f, indent=1)
        return 0
    md, have = table(a.outdir)
    print(" ".join(have))
    return 0


if __name__ == "__main__":
    sys.exit(main())

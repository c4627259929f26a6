#!/usr/bin/python3
"""acceptq.py - the accept queue of every TCP listener, sampled (what `ss -lnt`
shows as Recv-Q / Send-Q), and its high-water marks.

    acceptq.py sample --out FILE [--interval S] [--max-seconds S]
    acceptq.py summary FILE

sample: run INSIDE the run's network namespace (ip netns exec NS ...). Every
--interval seconds (default 0.1: 10 Hz, like ramp.csv) one sock_diag netlink
dump of the namespace's listening TCP sockets (IPv4 and IPv6): per listener
the connections waiting in its accept queue (queued: completed handshakes the
server has not accept()ed yet) and the queue's limit (backlog: min(listen()
backlog, net.core.somaxconn)). One CSV line per listener per sample:
unix_ms,listener,port,queued,backlog (listener: the socket's inode). Stops on
SIGTERM/SIGINT, or after --max-seconds (default 3600): bounded either way.
Each sample is flushed: a killed sampler leaves every complete line.

summary: a JSON object for run_one.sh (record.py --merge):
    acceptq_max       the highest queue any one listener reached
    acceptq_sum_max   the highest total over all listeners at one sample
    acceptq_backlog   the smallest listener limit seen (the queue's size)
    acceptq_full      samples in which some listener's queue was full as the
                      kernel counts it (sk_acceptq_is_full: queued > backlog;
                      the next completed handshake overflows)
    acceptq_samples   samples that saw a listener (a sample with none writes
                      no line: before the server listens, after it closed)
    acceptq_listeners listeners seen
    acceptq_max_per_listener  each listener's high-water mark, in the order
                      first seen, ";"-separated (one per server worker)
An empty object for a file without a sample (never a made-up 0).

Exit: 0 done, 1 netlink or file error, 2 usage.
"""
import json
import os
import socket
import struct
import sys
import time

import monlib
import runstore

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10
NLMSG_HDR = struct.Struct("=IHHII")
# inet_diag_msg: family state timer retrans, sockid (sport dport src[16] dst[16]
# if cookie[2]), expires rqueue wqueue uid inode
DIAG_MSG = struct.Struct("=BBBBHH16s16sIIIIIIII")
MAX_PARTS = 10000          # netlink messages read per dump: bounded


def usage(msg):
    print("acceptq.py: %s" % msg, file=sys.stderr)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def request(family, seq):
    # inet_diag_req_v2: family protocol ext pad states, then a zero sockid (48 bytes)
    body = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, 1 << TCP_LISTEN) + bytes(48)
    return NLMSG_HDR.pack(NLMSG_HDR.size + len(body), SOCK_DIAG_BY_FAMILY,
                          NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body


def parse(buf, seq, out):
    """Append (inode, port, queued, backlog) of each listener in BUF to OUT;
    True once the dump is done. OSError for a netlink error."""
    off = 0
    while off + NLMSG_HDR.size <= len(buf):
        length, mtype, _flags, mseq, _pid = NLMSG_HDR.unpack_from(buf, off)
        if length < NLMSG_HDR.size:
            raise OSError("netlink: malformed message")
        if mseq == seq:
            if mtype == NLMSG_DONE:
                return True
            if mtype == NLMSG_ERROR:
                err = struct.unpack_from("=i", buf, off + NLMSG_HDR.size)[0]
                raise OSError(-err, "sock_diag: %s" % os.strerror(-err))
            if mtype == SOCK_DIAG_BY_FAMILY and length >= NLMSG_HDR.size + DIAG_MSG.size:
                f = DIAG_MSG.unpack_from(buf, off + NLMSG_HDR.size)
                # sport is big-endian on the wire
                port = socket.ntohs(f[4])
                out.append((f[15], port, f[12], f[13]))   # inode, port, rqueue, wqueue
        off += (length + 3) & ~3
    return False


def listeners(sock, seq):
    """[(inode, port, queued, backlog)] of every listening TCP socket."""
    out = []
    for family in (socket.AF_INET, socket.AF_INET6):
        seq += 1
        sock.send(request(family, seq))
        for _ in range(MAX_PARTS):
            if parse(sock.recv(1 << 16), seq, out):
                break
        else:
            raise OSError("sock_diag: dump did not end")
    return out, seq


def cmd_sample(args):
    out_path, interval, max_s = None, 0.1, 3600.0
    i = 0
    while i < len(args):
        if args[i] in ("--out", "--interval", "--max-seconds") and i + 1 < len(args):
            v = args[i + 1]
            if args[i] == "--out":
                out_path = v
            else:
                try:
                    x = float(v)
                except ValueError:
                    usage("%s: expects seconds: %r" % (args[i], v))
                if not (0.01 <= x <= 86400):
                    usage("%s: expects 0.01..86400 seconds: %r" % (args[i], v))
                if args[i] == "--interval":
                    interval = x
                else:
                    max_s = x
            i += 2
        else:
            usage("unknown or incomplete argument: %r" % args[i])
    if not out_path:
        usage("sample: --out FILE is required")
    stop = monlib.stop_flag()
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
        f = open(out_path, "w")
    except OSError as e:
        print("acceptq.py: %s" % e, file=sys.stderr)
        return 1
    with sock, f:
        f.write("unix_ms,listener,port,queued,backlog\n")
        f.flush()
        seq, end = 0, time.monotonic() + max_s
        for _ in range(int(max_s / interval) + 2):
            if stop or time.monotonic() > end:
                break
            t = time.monotonic()
            try:
                rows, seq = listeners(sock, seq)
            except InterruptedError:
                continue
            except OSError as e:
                print("acceptq.py: %s" % e, file=sys.stderr)
                return 1
            ms = int(time.time() * 1000)
            f.write("".join("%d,%d,%d,%d,%d\n" % ((ms,) + r) for r in rows))
            f.flush()
            left = interval - (time.monotonic() - t)
            if left > 0 and not stop:
                time.sleep(left)
    return 0


def summarize(path):
    """The summary's {key: value} from a sample file; {} without a sample."""
    per_sample = {}
    peak, backlog, listeners_seen, full = {}, None, set(), set()   # peak: first-seen order
    with open(path, newline="", errors="replace") as f:     # a byte not text: its line skipped
        for row in runstore.csv_rows(path, f):
            try:
                ms, lid = int(row["unix_ms"]), int(row["listener"])
                q, b = int(row["queued"]), int(row["backlog"])
            except (KeyError, TypeError, ValueError):
                continue            # a line cut short by a kill
            per_sample[ms] = per_sample.get(ms, 0) + q
            peak[lid] = max(peak.get(lid, 0), q)
            listeners_seen.add(lid)
            backlog = b if backlog is None else min(backlog, b)
            if q > b:                # the kernel's test (sk_acceptq_is_full)
                full.add(ms)
    if not per_sample:
        return {}
    return {
        "acceptq_max": max(peak.values()),
        "acceptq_sum_max": max(per_sample.values()),
        "acceptq_backlog": backlog,
        "acceptq_full": len(full),
        "acceptq_samples": len(per_sample),
        "acceptq_listeners": len(listeners_seen),
        "acceptq_max_per_listener": ";".join(str(v) for v in peak.values()),
    }


def cmd_summary(args):
    if len(args) != 1:
        usage("summary: expects one FILE")
    try:
        s = summarize(args[0])
    except (OSError, ValueError) as e:
        print("acceptq.py: %s" % e, file=sys.stderr)
        return 1
    print(json.dumps(s))
    return 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        usage("expects sample or summary")
    if argv[1] == "sample":
        return cmd_sample(argv[2:])
    if argv[1] == "summary":
        return cmd_summary(argv[2:])
    usage("unknown command: %r" % argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""hosts.py - the hosts file of a run over several machines (HOSTS=path,
harness/README.md "Remote hosts"): parsed, checked, printed as JSON.

    hosts.py check FILE      the JSON on stdout, or exit 2 naming the line

One host per line, `#` starts a comment:

    ROLE  USER@ADDRESS[:PORT]  [KEY=VALUE ...]

ROLE is `server` (exactly one) or `client` (one or more); ADDRESS a name, an
IPv4 address or a bracketed IPv6 one ([2001:db8::1]:22). Keys:
    addr=IP        server: the address the clients connect to (default ADDRESS, which
                   must then be an IP address; not unspecified, multicast or broadcast)
    src=A[-B]      client: IPv4 source addresses to bind (c1m-client --src: at most
                   65536, none in 0.0.0.0/8, multicast or 255.255.255.255)
    capacity=W     client: its share of the connections, relative (default 1)
    cpus=LIST      the CPUs the host's processes run on (taskset -c LIST)
    dir=PATH       where the build is staged, under PATH/<commit> (default ~/.cache/c1m-stage,
                   the remote user's home; it and every directory above it must belong to
                   root or that user and be writable by no one else)
"""
import ipaddress
import json
import re
import sys

import entry
from runstore import open_regular

ROLES = ("server", "client")
KEYS = {"server": ("addr", "cpus", "dir"), "client": ("src", "capacity", "cpus", "dir")}
DEFAULT_DIR = "~/.cache/c1m-stage"   # the remote user's home: no other user can change it
TARGET = re.compile(r"^(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]{0,31})@"
                    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9._-]{1,253}))"
                    r"(?::(?P<port>[0-9]{1,5}))?$")
CPUS = re.compile(r"^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$")
PATH = re.compile(r"^(/|~/)[A-Za-z0-9._/+-]*$")


MAX_BYTES = 1 << 20     # a hosts file is a few lines; more is a wrong path (a device)


class HostsError(ValueError):
    pass


def _ipv4(s, what):
    try:
        return ipaddress.IPv4Address(s)
    except ValueError:
        raise HostsError("%s: not an IPv4 address: %r" % (what, s)) from None


# Addresses no connection can come from or go to: "this network" (0/8, the
# unspecified 0.0.0.0 among them), multicast and the limited broadcast.
NO_HOST4 = [ipaddress.ip_network(n) for n in ("0.0.0.0/8", "224.0.0.0/4", "255.255.255.255/32")]
SRC_MAX = 65536     # c1m-client --src's bound (client/options.c parse_src)


def parse_src(v):
    """'A' or 'A-B' (IPv4, A <= B, at most SRC_MAX addresses, none of
    NO_HOST4) -> (first, count)."""
    a, dash, b = v.partition("-")
    lo = _ipv4(a, "src")
    hi = _ipv4(b, "src") if dash else lo
    if int(hi) < int(lo):
        raise HostsError("src: %s is after %s" % (lo, hi))
    if int(hi) - int(lo) + 1 > SRC_MAX:
        raise HostsError("src: %s-%s is %d addresses; c1m-client binds at most %d"
                         % (lo, hi, int(hi) - int(lo) + 1, SRC_MAX))
    for n in NO_HOST4:
        if int(lo) <= int(n.broadcast_address) and int(n.network_address) <= int(hi):
            raise HostsError("src: %s includes %s, which no connection can come from" % (v, n))
    return str(lo), int(hi) - int(lo) + 1


def parse_addr(v):
    """addr=IP: an address a client can connect to (not unspecified,
    multicast or broadcast)."""
    ip = ipaddress.ip_address(v)
    scope = getattr(ip, "scope_id", None)
    if scope is not None and not re.match(r"^[A-Za-z0-9_.-]{1,15}$", scope):
        raise HostsError("addr: %r: the zone after %% is not an interface name" % v)
    if ip.is_unspecified or ip.is_multicast or (ip.version == 4 and any(ip in n for n in NO_HOST4)):
        raise HostsError("addr: %s is not an address a client can connect to" % ip)
    return str(ip)


def _is_ip(s):
    try:
        ipaddress.ip_address(s)
        return True
    except ValueError:
        return False


def parse_line(text, lineno):
    words = text.split()
    role, target, rest = words[0], words[1] if len(words) > 1 else None, words[2:]
    if role not in ROLES:
        raise HostsError("line %d: unknown role %r (known: server, client)" % (lineno, role))
    if target is None:
        raise HostsError("line %d: %s: no USER@ADDRESS[:PORT]" % (lineno, role))
    m = TARGET.match(target)
    if not m:
        raise HostsError("line %d: %r: expects USER@ADDRESS[:PORT] (a bracketed [IPv6])" % (lineno, target))
    port = int(m.group("port") or 22)
    if not 1 <= port <= 65535:
        raise HostsError("line %d: %r: ssh port %d out of 1-65535" % (lineno, target, port))
    address = m.group("v6") or m.group("host")
    if m.group("v6"):
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            raise HostsError("line %d: %r: not an IPv6 address" % (lineno, address)) from None
    h = {"line": lineno, "role": role, "target": target, "user": m.group("user"),
         "address": address, "ssh_port": port,
         "name": address if port == 22 else "%s_%d" % (address, port),
         "cpus": None, "dir": DEFAULT_DIR}
    if role == "server":
        try:   # the SSH address, when an IP, is the one the clients connect to
            h["addr"] = parse_addr(address) if _is_ip(address) else None
        except HostsError as e:
            raise HostsError("line %d: %r: %s (give addr=IP)" % (lineno, target, e)) from None
    else:
        h["src_first"], h["src_count"], h["capacity"] = None, 0, 1.0
    seen = set()
    for kv in rest:
        k, eq, v = kv.partition("=")
        if not eq or not v:
            raise HostsError("line %d: %r: expects KEY=VALUE" % (lineno, kv))
        if k not in KEYS[role]:
            raise HostsError("line %d: %s: unknown key %r (known for a %s: %s)"
                             % (lineno, role, k, role, ", ".join(KEYS[role])))
        if k in seen:
            raise HostsError("line %d: %s given twice" % (lineno, k))
        seen.add(k)
        try:
            if k == "addr":
                h["addr"] = parse_addr(v)
            elif k == "src":
                h["src_first"], h["src_count"] = parse_src(v)
            elif k == "capacity":
                if not re.match(r"^[0-9]+(\.[0-9]+)?$", v) or float(v) <= 0 or float(v) > 1e6:
                    raise HostsError("capacity: expects a number above 0 (a relative share): %r" % v)
                h["capacity"] = float(v)
            elif k == "cpus":
                # (a range A-B with A above B: taskset refuses it on the host, after staging)
                if not CPUS.match(v) or any(int(a) > int(b) for a, _, b in
                                            (r.partition("-") for r in v.split(",")) if b):
                    raise HostsError("cpus: expects a CPU list such as 0-3,6: %r" % v)
                h["cpus"] = v
            elif k == "dir":
                if not PATH.match(v) or "/../" in v + "/" or len(v) > 200:
                    raise HostsError("dir: expects an absolute path (or ~/...) of letters, digits "
                                     "and ._/+-: %r" % v)
                h["dir"] = v.rstrip("/") or "/"
        except HostsError as e:
            raise HostsError("line %d: %s" % (lineno, e)) from None
        except ValueError as e:
            raise HostsError("line %d: %s: %s" % (lineno, k, e)) from None
    return h


def parse(text):
    hosts = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            hosts.append(parse_line(line, i))
    servers = [h for h in hosts if h["role"] == "server"]
    clients = [h for h in hosts if h["role"] == "client"]
    if len(servers) != 1:
        raise HostsError("expects exactly one server line, found %d%s" % (
            len(servers), "" if not servers else " (lines %s)" % ", ".join(str(h["line"]) for h in servers)))
    if not clients:
        raise HostsError("expects at least one client line")
    names = {}
    for h in hosts:     # the name files and tables use: the address, unique
        if h["name"] in names:
            raise HostsError("line %d: %s is already on line %d (each host once)"
                             % (h["line"], h["target"], names[h["name"]]))
        names[h["name"]] = h["line"]
    srv = servers[0]
    if srv["addr"] is None:
        raise HostsError("line %d: %s: a name: give the address the clients connect to, addr=IP"
                         % (srv["line"], srv["target"]))
    if ":" in srv["addr"]:
        for h in clients:
            if h["src_first"]:
                raise HostsError("line %d: src=: IPv4 source addresses, but the server's address "
                                 "is IPv6 (line %d)" % (h["line"], srv["line"]))
    total = sum(h["capacity"] for h in clients)
    for h in clients:
        h["share"] = h["capacity"] / total
    return {"server": servers[0], "clients": clients}


def shares(n, clients):
    """N split over the clients by capacity, largest remainders: sums to N."""
    raw = [n * c["share"] for c in clients]
    out = [int(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - out[i], reverse=True)
    for i in order[: n - sum(out)]:
        out[i] += 1
    return out


def main(argv):
    if len(argv) != 2 or argv[0] != "check":
        print("usage: hosts.py check FILE", file=sys.stderr)
        return 2
    path = argv[1]
    try:
        # a regular file alone (a FIFO held open() for ever: bench.sh hung before
        # anything ran), and bounded: a huge file is no hosts file either
        with open_regular(path, encoding="utf-8") as f:
            text = f.read(MAX_BYTES + 1)
    except OSError as e:
        print("HOSTS=%s: %s" % (path, e.strerror), file=sys.stderr)
        return 2
    except UnicodeDecodeError as e:
        print("HOSTS=%s: not UTF-8 text (byte %d)" % (path, e.start), file=sys.stderr)
        return 2
    if len(text) > MAX_BYTES:
        print("HOSTS=%s: more than %d bytes: not a hosts file" % (path, MAX_BYTES), file=sys.stderr)
        return 2
    try:
        cfg = parse(text)
    except HostsError as e:
        print("HOSTS=%s: %s" % (path, e), file=sys.stderr)
        return 2
    json.dump(cfg, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    entry.run(main, sys.argv[1:])

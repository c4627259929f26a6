"""remote.py - the harness's hosts over SSH (HOSTS=path; harness/README.md
"Remote hosts"): one OpenSSH connection per host (ControlMaster), a private
directory per suite on each host with the build staged in it, the
prerequisites, the hosts' kernel settings (recorded, compared with the
profile, applied and restored with APPLY_SYSCTL=1), and remote processes that
end with the SSH session that started them.

What root runs or restores on the hosts is never read from a place another
user can write: a suite keeps it in its state directory on this machine,
STATE = $C1M_STATE_ROOT/remote-PID-START (/run/c1m; bench.sh's pid and start
time; mode 0700; refused anywhere else, see state_dir): hosts.json (the
checked hosts file), dirs.json (each host's private directory, written as
soon as it exists), meta.json (the hosts' facts) and sysctl.json (each
changed setting's old value and the value c1m set, written before the
change).

    remote.py prepare STATE OUT --contenders C,... [--apply-sysctl]
        connect, check, make each host's private directory and stage the
        build in it; OUT/hosts-meta.json is a copy of STATE/meta.json for the
        record (never read back). Exit 2 naming the host and the reason when a
        host is unreachable or lacks something: then no run started (what was
        made or changed is undone by `cleanup`, bench.sh's exit).
    remote.py cleanup STATE
        the hosts' settings put back (each only if it still holds the value
        c1m set), the private directories removed, the connections closed;
        prints what it did, one line each. STATE is deleted once nothing is
        left to undo; else exit 1, STATE kept for the next bench.sh.

SSH options: SSH_OPTS (words, e.g. "-i KEY -o UserKnownHostsFile=FILE"; they
win over the defaults), then BatchMode=yes (no password prompt can hang a run),
a connect timeout and keep-alives (a host that stops answering is lost within
~15 s).
The control sockets live in C1M_SSH_CTL (default /tmp/c1m-ssh-<uid>).
"""
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

import contenders
import entry
import runstore

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROFILES_SH = os.path.join(ROOT, "harness", "lib", "profiles.sh")
# what a host needs per contender (besides the C programs every run uses)
PY_CONTENDERS = {c for c in contenders.LADDER if contenders.is_python(c)}
PY_MODULES = {"uvloop": "uvloop", "gevent": "gevent"}
BINARIES = ("c1m-server", "c1m-client", "c1m-stat", "c1m-floor", "c1m-libuv", "c1m-uring")


class RemoteError(Exception):
    """A host that cannot be used: its name and why."""

    def __init__(self, host, why):
        super().__init__("%s %s (line %d): %s" % (host["role"], host["target"], host["line"], why))
        self.host = host


def ctl_dir():
    """The control sockets' directory: ours alone (owner, 0700, not a symlink),
    or RemoteError-free refusal as SystemExit naming it."""
    d = os.environ.get("C1M_SSH_CTL") or "/tmp/c1m-ssh-%d" % os.getuid()
    os.makedirs(d, mode=0o700, exist_ok=True)
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise SystemExit("remote.py: %s: not a private directory of uid %d (owner %d, mode %o): "
                         "remove it or set C1M_SSH_CTL" % (d, os.getuid(), st.st_uid, st.st_mode & 0o7777))
    return d


def ssh_argv(host, *, master=True):
    """ssh's words for host, up to (and with) the destination."""
    # SSH_OPTS first: ssh takes the first value given for an option, so the
    # user's own choices win over these defaults
    argv = ["ssh"] + shlex.split(os.environ.get("SSH_OPTS", "")) + [
        "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
        "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-p", str(host["ssh_port"])]
    if master:
        argv += ["-o", "ControlMaster=auto", "-o", "ControlPath=%s/%%C" % ctl_dir(),
                 "-o", "ControlPersist=600"]
    return argv + ["%s@%s" % (host["user"], host["address"])]


def run(host, script, timeout=60, input_bytes=None):
    """Run `script` (a shell command line) on host. Returns (rc, out, err)
    as text; rc 255 is ssh's own failure (host unreachable or lost)."""
    try:
        # never the terminal's input: ssh would read it (input_bytes, or nothing)
        p = subprocess.run(ssh_argv(host) + [script], input=input_bytes if input_bytes is not None else b"",
                           capture_output=True, timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return 255, "", "no answer within %ds" % timeout
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def must(host, script, what, timeout=60, input_bytes=None):
    rc, out, err = run(host, script, timeout, input_bytes)
    if rc != 0:
        last = (err.strip().splitlines() or ["exit %d" % rc])[-1]
        raise RemoteError(host, "%s: %s" % (what, "unreachable: " + last if rc == 255 else last))
    return out


def close(host):
    subprocess.run(ssh_argv(host)[:-1] + ["-O", "exit", ssh_argv(host)[-1]],
                   capture_output=True, timeout=15, stdin=subprocess.DEVNULL)


def all_hosts(cfg):
    return [cfg["server"]] + cfg["clients"]


# ---------------------------------------------------------------------------
# staging

def commit_key():
    """The staging directory's name: the commit, with -dirty when the tree has
    uncommitted changes to tracked files (those are staged too)."""
    def git(*a):
        return subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True, text=True).stdout.strip()
    c = git("rev-parse", "HEAD") or "nogit"
    return c[:12] + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def build_tar(build, pyext):
    """A gzip tar of what a host runs: bin/ (the C programs built), pyext/
    (the extension), py_server/ (the Python contenders) and harness/lib/probe.sh."""
    fd, path = tempfile.mkstemp(prefix="c1m-stage-", suffix=".tar.gz")
    os.close(fd)
    with tarfile.open(path, "w:gz") as t:
        for b in BINARIES:
            p = os.path.join(build, b)
            if os.path.exists(p):
                t.add(p, arcname="bin/" + b)
        if pyext and os.path.isdir(os.path.join(build, "pyext")):
            for f in os.listdir(os.path.join(build, "pyext")):
                if f.endswith(".so"):
                    t.add(os.path.join(build, "pyext", f), arcname="pyext/" + f)
        for f in sorted(os.listdir(os.path.join(ROOT, "py_server"))):
            if f.endswith(".py"):
                t.add(os.path.join(ROOT, "py_server", f), arcname="py_server/" + f)
        # what the run reads on a host (server pids, RSS, CPU, slab): the same
        # functions as a local run's
        t.add(os.path.join(ROOT, "harness", "lib", "probe.sh"), arcname="harness/lib/probe.sh")
    return path


# ---------------------------------------------------------------------------
# the suite's state on this machine (root's alone)

STATE_NAME = re.compile(r"^remote-[0-9]+-[0-9]+$")


def state_dir(path):
    """PATH as an absolute path, provided it is a suite's state directory:
    $C1M_STATE_ROOT/remote-PID-START, a directory of this user with mode 0700,
    and it and every directory above it a directory (no symlink) of root or
    this user that no one else can write (a sticky one apart). SystemExit
    naming it otherwise: nothing is read from any other place."""
    root = os.path.abspath(os.environ.get("C1M_STATE_ROOT") or "/run/c1m")
    p = os.path.abspath(path)
    if os.path.dirname(p) != root or not STATE_NAME.match(os.path.basename(p)):
        raise SystemExit("remote.py: %s: not a state directory (%s/remote-PID-START)" % (path, root))
    q = p
    while True:
        try:
            st = os.lstat(q)
        except OSError as e:
            raise SystemExit("remote.py: state %s: %s: %s" % (p, q, e.strerror))
        if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, os.geteuid()) or \
                (st.st_mode & 0o022 and not st.st_mode & 0o1000) or (q == p and st.st_mode & 0o077):
            raise SystemExit("remote.py: state %s: %s is not a directory of root alone (uid %d, mode %o)"
                             % (p, q, st.st_uid, st.st_mode & 0o7777))
        if q == "/":
            return p
        q = os.path.dirname(q)


def state_read(state, name, default=None):
    try:
        with open(os.path.join(state, name)) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def state_write(state, name, obj):
    runstore.write_json(os.path.join(state, name), obj, indent=1)


def load_state(path):
    """(STATE, the hosts' config, their metadata) of a prepared suite."""
    state = state_dir(path)
    return state, state_read(state, "hosts.json"), state_read(state, "meta.json")


# ---------------------------------------------------------------------------
# each host's private directory

# check_dir DIR (sh): DIR is a directory (not a symlink, none in its path) of
# this user (root) with mode 0700. check DIR: that, and every directory above
# it belongs to root or this user and no one else can write it (a sticky
# directory such as /tmp apart): no one else can put, change or swap anything
# root writes or runs there.
PRIVATE_CHECK = r"""
me=$(id -u)
check_dir() {
    [ -d "$1" ] && [ ! -L "$1" ] && [ "$(cd -- "$1" && pwd -P)" = "$1" ] \
        || { echo "$1: not a directory, or a symlink in its path" >&2; return 3; }
    set -- "$1" $(stat -c '%u %a' -- "$1") || return 1
    [ "$2" = "$me" ] && [ "$3" = 700 ] || { echo "$1: uid $2, mode $3: not root's private directory" >&2; return 3; }
}
check() {
    check_dir "$1" || return
    p=$1
    while [ "$p" != / ]; do
        p=$(dirname -- "$p")
        set -- $(stat -c '%u %a' -- "$p") || return 1
        [ "$1" = 0 ] || [ "$1" = "$me" ] || { echo "$p belongs to uid $1" >&2; return 3; }
        m=$((0$2))
        if [ $((m & 18)) != 0 ] && [ $((m & 512)) = 0 ]; then echo "$p is writable by others" >&2; return 3; fi
    done
}
"""
# $1 the hosts file's dir=: made if missing; a fresh directory in it (printed
# first, so that it is removed whatever the check says), checked
MAKE_PRIVATE = PRIVATE_CHECK + r"""
umask 077
mkdir -p -- "$1" && base=$(cd -- "$1" && pwd -P) || exit 1
d=$(mktemp -d "${base%/}/c1m.XXXXXXXXXX") || exit 1
echo "$d"
check "$d"
"""
# $1 the private directory: checked, the build unpacked (stdin), checked again
STAGE = PRIVATE_CHECK + r"""
check "$1" || exit
cd "$1" && umask 022 && tar -xzf - --no-same-owner && check "$1"
"""
# $1 the private directory: removed if it is still root's (what is above it
# does not matter: rm never follows a link in it); gone already is fine
REMOVE_PRIVATE = PRIVATE_CHECK + r"""
[ -e "$1" ] || [ -L "$1" ] || exit 0
check_dir "$1" && rm -rf -- "$1"
"""
PRIVATE_NAME = re.compile(r"^/(?:[A-Za-z0-9._+-]+/)*c1m\.[A-Za-z0-9]{10}$")


def remote_path(path):
    """A hosts-file dir for the remote shell: ~/... is the remote user's home."""
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def private_script(script, d, what):
    """The shell command running SCRIPT (above) on directory D."""
    if not PRIVATE_NAME.match(d):
        raise SystemExit("remote.py: %s: %r is not a private directory's name" % (what, d))
    return "sh -c %s - %s" % (shlex.quote(script), shlex.quote(d))


def make_private(host, state):
    """A fresh private directory on host under its dir=, recorded in
    STATE/dirs.json before it is checked (a failed check still removes it)."""
    rc, out, err = run(host, "sh -c %s - %s" % (shlex.quote(MAKE_PRIVATE), remote_path(host["dir"])))
    d = (out.strip().splitlines() or [""])[0]
    if PRIVATE_NAME.match(d):
        dirs = state_read(state, "dirs.json", {})
        dirs[host["name"]] = d
        state_write(state, "dirs.json", dirs)
    if rc != 0 or not PRIVATE_NAME.match(d):
        last = (err.strip().splitlines() or ["exit %d" % rc if rc else "made %r: a name out of [A-Za-z0-9._+-]" % d])[-1]
        raise RemoteError(host, "staging into %s: %s" % (host["dir"], "unreachable: " + last if rc == 255 else last))
    return d


def check_private(host, d):
    """RemoteError unless D on host is still root's private directory."""
    must(host, private_script(PRIVATE_CHECK + 'check "$1"', d, "check"), "checking %s" % d)


def stage(host, tar_path, d):
    """The build unpacked into host's private directory D (checked before and after)."""
    with open(tar_path, "rb") as f:
        data = f.read()
    must(host, private_script(STAGE, d, "stage"), "staging into %s" % d, timeout=120, input_bytes=data)


def _profiles_sh(script, *args):
    """Run SCRIPT with lib/profiles.sh sourced (its parser and normaliser: one
    implementation for local and remote runs); its stdout."""
    p = subprocess.run(["bash", "-c", 'source "$1"; shift; ' + script, "-", PROFILES_SH] + list(args),
                       capture_output=True, text=True, env=dict(os.environ, C1M_ROOT=ROOT))
    if p.returncode != 0:
        raise SystemExit("remote.py: profiles.sh: %s" % (p.stderr.strip() or "exit %d" % p.returncode))
    return p.stdout


def profile_keys():
    """The tuned profile's (key, value) pairs (profiles.sh profile_pairs)."""
    out = []
    for line in _profiles_sh('profile_pairs "$(profile_tuned_file)"').splitlines():
        k, _, v = line.partition("=")
        out.append((k, v))
    return out


def read_sysctls(host, keys):
    """{key: value, or None for a key the host lacks}, read as profile_read
    reads a namespace's (the same norm())."""
    body = _profiles_sh("declare -f norm") + (
        'for k; do if v=$(cat "/proc/sys/${k//.//}" 2>/dev/null); then printf "%s=%s\\n" "$k" "$(norm "$v")"; '
        'else printf "%s\\n" "$k"; fi; done')
    out = must(host, "bash -c %s read %s" % (shlex.quote(body), " ".join(shlex.quote(k) for k in keys)),
               "reading its kernel settings")
    vals = {k: None for k in keys}
    for line in out.splitlines():
        k, eq, v = line.partition("=")
        if k in vals:
            vals[k] = v if eq else None
    return vals


def facts(host, keys):
    """The host's kernel, CPUs, memory, fd limits and every profile key."""
    script = ("uname -r; uname -m; nproc; awk '/^MemTotal:/{print $2}' /proc/meminfo; ulimit -n; "
              "cat /proc/sys/fs/nr_open /proc/sys/fs/file-max; id -u")
    lines = must(host, script, "reading its facts").splitlines()
    if len(lines) < 8:
        raise RemoteError(host, "reading its facts: short answer")
    return {"kernel": lines[0], "arch": lines[1], "cpus": int(lines[2]), "mem_kib": int(lines[3]),
            "nofile": lines[4], "nr_open": lines[5], "file_max": lines[6], "uid": lines[7],
            "sysctl": read_sysctls(host, [k for k, _ in keys])}


def prepare(cfg, state, out, contenders, apply_sysctl, build, python):
    """Every host connected, checked and staged in a private directory, or
    RemoteError for the first that cannot be used. Returns the hosts'
    metadata (STATE/meta.json, copied to OUT/hosts-meta.json)."""
    keys = profile_keys()
    local_arch = os.uname().machine
    # the interpreter the extension was built for runs this script (PYTHON)
    local_py = "%d.%d" % sys.version_info[:2]
    need_py = bool(PY_CONTENDERS & set(contenders))
    meta = {"hosts": {}, "commit": commit_key(), "profile": dict(keys)}
    for h in all_hosts(cfg):        # reachable at all, before anything else
        must(h, "true", "connecting")
    tar = build_tar(build, need_py)
    try:
        for h in all_hosts(cfg):
            f = facts(h, keys)
            if f["arch"] != local_arch:
                raise RemoteError(h, "architecture %s, the build is %s" % (f["arch"], local_arch))
            # root: /proc/slabinfo (the kernel's bytes), sysctl -w (APPLY_SYSCTL)
            if f["uid"] != "0":
                raise RemoteError(h, "the remote user is uid %s: runs need root (/proc/slabinfo, "
                                  "sysctl)" % f["uid"])
            must(h, "for c in bash tar ss taskset awk mktemp; do command -v $c >/dev/null || "
                 "{ echo \"$c: not installed\" >&2; exit 1; }; done", "the tools a run uses")
            if need_py and h["role"] == "server":
                v = must(h, "%s -c \"import sys; print('%%d.%%d' %% sys.version_info[:2])\""
                         % shlex.quote(python), "running %s" % python).strip()
                if v != local_py:
                    raise RemoteError(h, "%s is Python %s; the extension is built for %s"
                                      % (python, v, local_py))
                for c, mod in PY_MODULES.items():
                    if c in contenders:
                        must(h, "%s -c 'import %s'" % (shlex.quote(python), mod),
                             "contender %s needs the module %s" % (c, mod))
            d = make_private(h, state)
            stage(h, tar, d)
            q = shlex.quote(d)
            must(h, "%s/bin/c1m-stat --help >/dev/null && %s/bin/c1m-client --help >/dev/null"
                 % (q, q), "running the staged programs in %s" % d)
            if h["role"] == "server":
                # what each contender loads (a missing libuv.so exits 127; a kernel
                # without io_uring exits 3: that run is then `unavailable`)
                for c, b in (("libuv", "c1m-libuv"), ("io_uring", "c1m-uring")):
                    if c in contenders:
                        must(h, "%s/bin/%s --check >/dev/null; rc=$?; [ $rc = 0 ] || [ $rc = 3 ]"
                             % (q, b), "contender %s: %s --check" % (c, b))
                if "pyext" in contenders:
                    must(h, "cd %s && PYTHONPATH=%s:%s/pyext %s -c 'import c1m'"
                         % (q, q, q, shlex.quote(python)), "contender pyext: importing c1m")
            f["dir"] = d
            f["differs"] = {k: {"host": f["sysctl"].get(k), "profile": v}
                            for k, v in keys if f["sysctl"].get(k) != v}
            meta["hosts"][h["name"]] = f
    finally:
        os.unlink(tar)
    if apply_sysctl:
        restore = {}
        for h in all_hosts(cfg):
            d = meta["hosts"][h["name"]]["differs"]
            for k, v in d.items():
                if v["host"] is None:
                    raise RemoteError(h, "APPLY_SYSCTL: %s: this host's kernel has no such setting" % k)
            if not d:
                continue
            # written before the change: an interrupted apply is put back too
            restore[h["name"]] = {k: {"orig": v["host"], "set": v["profile"]} for k, v in d.items()}
            state_write(state, "sysctl.json", restore)
            # one command per host (sysctl names a key it cannot write)
            must(h, "sysctl -q -w %s" % " ".join(shlex.quote("%s=%s" % (k, v["profile"]))
                                               for k, v in d.items()),
                 "APPLY_SYSCTL: writing %s" % ", ".join(d))
        meta["applied"] = True
    state_write(state, "meta.json", meta)
    runstore.write_json(os.path.join(out, "hosts-meta.json"), meta, indent=1)
    return meta


def restore_host(host, values):
    """Put back host's settings VALUES ({key: {orig, set}}), each only if it
    still holds the value c1m set (another value: someone changed it since,
    left as is). Returns (done, lines): done False when it could not be
    carried out (the host unreachable, sysctl refused)."""
    want = ", ".join("%s=%s" % (k, v["orig"]) for k, v in values.items())
    try:
        cur = read_sysctls(host, list(values))
    except RemoteError as e:
        return False, ["%s: could NOT put back %s: %s" % (host["name"], want, str(e).split(": ", 1)[-1])]
    lines, put = [], {}
    for k, v in values.items():
        if cur[k] == v["set"]:
            put[k] = v["orig"]
        elif cur[k] != v["orig"]:
            lines.append("%s: %s is %s, not the %s c1m set: left as is (not put back to %s)"
                         % (host["name"], k, cur[k], v["set"], v["orig"]))
    if put:
        pairs = ["%s=%s" % kv for kv in put.items()]
        rc, _, err = run(host, "sysctl -q -w %s" % " ".join(shlex.quote(x) for x in pairs), timeout=30)
        if rc != 0:
            why = (err.strip().splitlines() or ["exit %d" % rc])[-1]
            return False, lines + ["%s: could NOT put back %s: %s%s" % (
                host["name"], ", ".join(pairs), "unreachable: " if rc == 255 else "", why)]
        lines.append("%s: put back %s" % (host["name"], ", ".join(pairs)))
    return True, lines


def cleanup(path):
    """Undo what a suite's prepare did on its hosts (see the module's
    doc); (lines, everything undone)."""
    state, cfg, _ = load_state(path)
    hosts = {h["name"]: h for h in all_hosts(cfg)} if cfg else {}
    lines, left = [], False
    restore = state_read(state, "sysctl.json", {})
    for name in list(restore):
        if name not in hosts:
            lines.append("%s: could NOT put back %s: no such host in %s/hosts.json" % (name, restore[name], state))
            left = True
            continue
        done, said = restore_host(hosts[name], restore[name])
        lines += said
        if done:
            del restore[name]
            state_write(state, "sysctl.json", restore)
        else:
            left = True
    dirs = state_read(state, "dirs.json", {})
    for name in list(dirs):
        if name not in hosts:
            lines.append("%s: could NOT remove %s: no such host in %s/hosts.json" % (name, dirs[name], state))
            left = True
            continue
        rc, _, err = run(hosts[name], private_script(REMOVE_PRIVATE, dirs[name], "cleanup"), timeout=30)
        if rc == 0:
            del dirs[name]
            state_write(state, "dirs.json", dirs)
        else:
            left = True
            lines.append("%s: could NOT remove %s: %s%s" % (name, dirs[name], "unreachable: " if rc == 255 else "",
                                                             (err.strip().splitlines() or ["exit %d" % rc])[-1]))
    for h in hosts.values():
        close(h)
    if not left:
        shutil.rmtree(state)
    return lines, not left


# ---------------------------------------------------------------------------
# remote processes

# The wrapper every remote process runs under (bash): it reports its pid,
# runs the command with its output to LOG, and kills it (TERM, then KILL after
# 10 s) when its session stops talking: the harness writes a line on the
# session's input every KEEPALIVE/3 s, and the watcher ends the process when
# none came for KEEPALIVE seconds or the input ended (the harness closed it,
# exited or died, the connection dropped, or went silent: a partitioned
# network leaves sshd's side of the session open for hours). With BARRIER it
# first prints "ready" and waits for a line on stdin before starting. (A
# background job's stdin is /dev/null: the watcher reads the session's input
# through fd 3, which the command itself does not get.)
KEEPALIVE = int(os.environ.get("C1M_REMOTE_KEEPALIVE", "30"))
WRAPPER = r"""
%(barrier)s
cd %(dir)s || exit 97
exec 3<&0
%(env)s %(cmd)s > %(log)s 2>&1 < /dev/null 3<&- &
p=$!
echo "pid $p"
( while read -r -t %(keepalive)d _ <&3; do :; done
  kill -TERM $p 2>/dev/null || exit 0
  i=0; while kill -0 $p 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL $p 2>/dev/null ) > /dev/null 2>&1 &
w=$!
exec 3<&-
wait $p
rc=$?
kill $w 2>/dev/null
echo "exit $rc"
"""


class Proc:
    """A process started on a host under WRAPPER."""

    def __init__(self, host, directory, cmd, log, env=None, barrier=False, cpus=None):
        words = " ".join(shlex.quote(w) for w in cmd)
        if cpus:
            words = "taskset -c %s %s" % (shlex.quote(cpus), words)
        script = WRAPPER % {
            "barrier": 'echo ready; read -r go || exit 98' if barrier else "",
            "dir": shlex.quote(directory), "keepalive": KEEPALIVE,
            "env": "env " + " ".join(shlex.quote("%s=%s" % kv) for kv in (env or {}).items()) if env else "",
            "cmd": words, "log": shlex.quote(log)}
        self.host, self.log = host, log
        self.pid = None
        self.rc = None
        self.started = False      # running: keep-alives go to its input
        # its own session: a stop signal to the harness's process group (^C)
        # reaches the harness, which ends this in order; not ssh, whose death
        # would look like a lost host
        self.p = subprocess.Popen(ssh_argv(host) + ["bash -c %s" % shlex.quote(script)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, bufsize=0, start_new_session=True)

    def readline(self, timeout):
        """The wrapper's next line ("ready", "pid N", "exit N"), "" at its
        end, or None after timeout seconds."""
        import select
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            return None
        line = self.p.stdout.readline()
        return line.decode(errors="replace").strip() if line else ""

    def expect(self, word, timeout):
        """Wait for the wrapper's WORD line; False when the session ended."""
        import time
        end = time.monotonic() + timeout
        while True:
            line = self.readline(max(0.0, end - time.monotonic()))
            if not line:          # None: time is up; "": the session ended
                return False
            if line.startswith("exit "):
                self.rc = int(line.split()[1])
                self.started = False
            if line == word or line.startswith(word + " "):
                if word == "pid":
                    self.pid = int(line.split()[1])
                    self.started = True
                return True

    def go(self):
        self.p.stdin.write(b"go\n")
        self.p.stdin.flush()

    def ping(self):
        """A keep-alive line to the watcher (see WRAPPER)."""
        if self.started:
            try:
                self.p.stdin.write(b"\n")
                self.p.stdin.flush()
            except (OSError, ValueError):
                pass

    def alive(self):
        return self.p.poll() is None

    def ended_with(self):
        """The process's exit status when its session told it ("exit N"), else
        None (the session ended without saying: the host or the link was lost)."""
        if self.rc is None:
            self.expect("exit", 2)
        return self.rc

    def signal(self, sig="TERM"):
        if self.pid and self.rc is None:
            run(self.host, "kill -%s %d 2>/dev/null" % (sig, self.pid), timeout=20)

    def finish(self, timeout):
        """Wait for the process's end (its "exit N", also one already sent
        before its session closed); returns its status or None. Then the
        session is closed (the wrapper kills what is left)."""
        if self.rc is None:
            self.expect("exit", timeout)
        self.close()
        return self.rc

    def close(self):
        self.started = False
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()

    def stderr_tail(self):
        """ssh's last error line, once its session ended (never blocks)."""
        if self.alive():
            return []
        try:
            return (self.p.stderr.read() or b"").decode(errors="replace").strip().splitlines()[-1:]
        except (OSError, ValueError):
            return []


def main(argv):
    import argparse
    p = argparse.ArgumentParser(prog="remote.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("state")
    a.add_argument("out")
    a.add_argument("--contenders", required=True)
    a.add_argument("--apply-sysctl", action="store_true")
    a.add_argument("--build", default=os.environ.get("BUILD", os.path.join(ROOT, "build")))
    a.add_argument("--python", default=os.environ.get("REMOTE_PYTHON") or os.environ.get("PYTHON")
                   or "/usr/bin/python3")
    c = sub.add_parser("cleanup")
    c.add_argument("state")
    args = p.parse_args(argv)
    if args.cmd == "cleanup":
        lines, done = cleanup(args.state)
        for line in lines:
            print(line)
        return 0 if done else 1
    state, cfg, _ = load_state(args.state)
    try:
        meta = prepare(cfg, state, args.out, args.contenders.split(","), args.apply_sysctl, args.build,
                       args.python)
    except RemoteError as e:
        print("HOSTS: %s; nothing started" % e, file=sys.stderr)
        return 2
    for name, f in meta["hosts"].items():
        if f["differs"] and not meta.get("applied"):
            print("remote.py: %s: %d kernel settings differ from the profile (not applied; "
                  "APPLY_SYSCTL=1 applies them): %s" % (name, len(f["differs"]), ", ".join(
                      "%s=%s (profile %s)" % (k, v["host"], v["profile"]) for k, v in f["differs"].items())),
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry.run(main, sys.argv[1:])

"""remote.py - the harness's hosts over SSH (HOSTS=path; harness/README.md
"Remote hosts"): one OpenSSH connection per host (ControlMaster), staging of
the build, the prerequisites, the hosts' kernel settings (recorded, compared
with the profile, applied and restored with APPLY_SYSCTL=1), and remote
processes that end with the SSH session that started them.

    remote.py prepare HOSTS.json OUT_DIR --contenders C,... [--apply-sysctl]
        connect, check, stage; writes OUT_DIR/hosts-meta.json (facts, the
        profile's differences, each host's staging directory) and, with
        --apply-sysctl, OUT_DIR/sysctl-restore.json. Exit 2 naming the host
        and the reason when a host is unreachable or lacks something: then
        nothing was started or changed (a host staged before the failing one
        keeps its staging directory, which is keyed by the commit).
    remote.py restore OUT_DIR      put back what prepare --apply-sysctl wrote
    remote.py close HOSTS.json     end the ControlMaster connections

SSH options: SSH_OPTS (words, e.g. "-i KEY -o UserKnownHostsFile=FILE"; they
win over the defaults), then BatchMode=yes (no password prompt can hang a run),
a connect timeout and keep-alives (a host that stops answering is lost within
~15 s).
The control sockets live in C1M_SSH_CTL (default /tmp/c1m-ssh-<uid>).
"""
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile

import runstore

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROFILES_SH = os.path.join(ROOT, "harness", "lib", "profiles.sh")
# what a host needs per contender (besides the C programs every run uses)
PY_CONTENDERS = {"pyext", "asyncio-protocol", "asyncio-streams", "uvloop", "gevent", "threads"}
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
    import stat as st_mod
    if not st_mod.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
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


# After the unpack: the staging directory's absolute path, provided it and
# every directory above it belong to root or to the remote user and no one
# else can write them (a sticky directory such as /tmp apart): a directory
# another user could change would let them swap the programs root runs.
STAGE_CHECK = r"""
d=$(cd "$1" && pwd -P) || exit 1
me=$(id -u) p=$d
while :; do
    set -- $(stat -c '%u %a' "$p") || exit 1
    [ "$1" = 0 ] || [ "$1" = "$me" ] || { echo "$p belongs to uid $1" >&2; exit 3; }
    m=$((0$2))
    if [ $((m & 18)) != 0 ] && [ $((m & 512)) = 0 ]; then echo "$p is writable by others" >&2; exit 3; fi
    [ "$p" = / ] && break
    p=$(dirname "$p")
done
echo "$d"
"""


def remote_path(path):
    """A hosts-file dir for the remote shell: ~/... is the remote user's home."""
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def stage(host, tar_path, key):
    """Copy and unpack the build into host's DIR/KEY (over the SSH connection);
    returns that directory's absolute path, checked (STAGE_CHECK)."""
    d = "%s/%s" % (host["dir"], key)
    rd = remote_path(d)
    with open(tar_path, "rb") as f:
        data = f.read()
    out = must(host, "umask 022 && mkdir -p %s && tar -xzf - --no-same-owner -C %s && sh -c %s - %s"
               % (rd, rd, shlex.quote(STAGE_CHECK), rd),
               "staging into %s" % d, timeout=120, input_bytes=data)
    return out.strip().splitlines()[-1]


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


def prepare(cfg, out, contenders, apply_sysctl, build, python):
    """Every host connected, checked and staged, or RemoteError for the first
    that cannot be used. Returns the hosts' metadata."""
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
            must(h, "for c in bash tar ss taskset awk; do command -v $c >/dev/null || "
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
            d = stage(h, tar, meta["commit"])
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
        try:
            for h in all_hosts(cfg):
                d = meta["hosts"][h["name"]]["differs"]
                restore[h["name"]] = {"host": h, "values": {k: v["host"] for k, v in d.items()}}
                # written before the change: an interrupted apply is restored too
                runstore.write_json(os.path.join(out, "sysctl-restore.json"), restore, indent=1)
                for k, v in d.items():
                    if v["host"] is None:
                        raise RemoteError(h, "APPLY_SYSCTL: %s: this host's kernel has no such "
                                          "setting" % k)
                if d:   # one command per host (sysctl names a key it cannot write)
                    must(h, "sysctl -q -w %s" % " ".join(shlex.quote("%s=%s" % (k, v["profile"]))
                                                       for k, v in d.items()),
                         "APPLY_SYSCTL: writing %s" % ", ".join(d))
        except RemoteError:
            restore_sysctl(out)
            raise
        meta["applied"] = True
    runstore.write_json(os.path.join(out, "hosts-meta.json"), meta, indent=1)
    return meta


def restore_sysctl(out):
    """Put back the values prepare() changed; returns the errors (strings)."""
    path = os.path.join(out, "sysctl-restore.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        restore = json.load(f)
    errors = []
    for name, r in restore.items():
        pairs = ["%s=%s" % (k, v) for k, v in r["values"].items() if v is not None]
        if not pairs:
            continue
        rc, _, err = run(r["host"], "sysctl -q -w %s" % " ".join(shlex.quote(x) for x in pairs),
                         timeout=30)
        if rc != 0:
            errors.append("%s: putting back %s: %s" % (name, ", ".join(pairs),
                                                       err.strip() or "exit %d" % rc))
    if not errors:
        os.unlink(path)
    return errors


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
    a.add_argument("hosts")
    a.add_argument("out")
    a.add_argument("--contenders", required=True)
    a.add_argument("--apply-sysctl", action="store_true")
    a.add_argument("--build", default=os.environ.get("BUILD", os.path.join(ROOT, "build")))
    a.add_argument("--python", default=os.environ.get("REMOTE_PYTHON") or os.environ.get("PYTHON")
                   or "/usr/bin/python3")
    r = sub.add_parser("restore")
    r.add_argument("out")
    c = sub.add_parser("close")
    c.add_argument("hosts")
    args = p.parse_args(argv)
    if args.cmd == "restore":
        errors = restore_sysctl(args.out)
        for e in errors:
            print("remote.py: restore: %s" % e, file=sys.stderr)
        return 1 if errors else 0
    with open(args.hosts) as f:
        cfg = json.load(f)
    if args.cmd == "close":
        for h in all_hosts(cfg):
            close(h)
        return 0
    try:
        meta = prepare(cfg, args.out, args.contenders.split(","), args.apply_sysctl, args.build,
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
    sys.exit(main(sys.argv[1:]))

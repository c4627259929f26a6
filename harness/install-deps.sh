#!/usr/bin/env bash
# install-deps.sh {build|test|bench|anatomy|fuzz}: install the Debian packages a
# target needs, only those missing. Needs root (apt-get) when something is missing.
# openssh-server (the remote hosts' test, tests/remote.bats) is installed with every
# service start forbidden (policy-rc.d): no sshd of the host's own ever listens; the
# tests start theirs inside their namespaces.
set -euo pipefail
what=${1:-test}
pkgs=(gcc make libc6-dev python3 python3-dev python3-setuptools)
case "$what" in
    # the contenders on libuv and io_uring (c_server/libuv, c_server/uring)
    build) pkgs+=(libuv1-dev liburing-dev) ;;
    # parallel: GNU parallel, for bats --jobs (make test runs independent files JOBS at a time)
    test) pkgs+=(bats bats-assert bats-support parallel iproute2 procps python3-uvloop python3-gevent gnuplot-nox linux-perf
                 openssh-client openssh-server) ;;
    # (openssh-client: HOSTS=, runs on other machines)
    bench) pkgs+=(iproute2 procps gnuplot-nox python3-uvloop python3-gevent openssh-client) ;;
    # make anatomy-cpu: perf (Debian's linux-perf) samples the servers
    anatomy) pkgs+=(iproute2 procps gnuplot-nox python3-uvloop linux-perf) ;;
    # make fuzz: clang and the compiler-rt of the same LLVM version (the
    # unversioned libclang-rt-dev follows clang), which holds libFuzzer for
    # -fsanitize=fuzzer; clang only recommends it.
    fuzz) pkgs+=(clang libclang-rt-dev) ;;
    *) echo "usage: install-deps.sh build|test|bench|anatomy|fuzz" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "missing packages: ${missing[*]}" >&2
    echo "install them as root: apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# No package's maintainer script may start a service here (openssh-server's
# would listen on the host's port 22): policy-rc.d answers "forbidden" (101)
# while apt runs, unless the machine has its own policy.
policy=/usr/sbin/policy-rc.d ours=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# c1m install-deps.sh: no service starts during this install\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    ours=1
    trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ "$ours" = 1 ] && rm -f "$policy"
trap - EXIT

#!/usr/bin/env bash
# Build the c1m extension into BUILD_DIR/pyext (default: build/pyext), objects
# in BUILD_DIR/pyext-tmp. Then: PYTHONPATH=BUILD_DIR/pyext python3 -c 'import c1m'
#   PYTHON=/usr/bin/python3   interpreter to build for (default: /usr/bin/python3)
#   SANITIZE=1 / C1M_SANITIZE=1   ASan+UBSan build (run with LD_PRELOAD=libasan, see README.md)
# Usage: pyext/build.sh [BUILD_DIR]      (relative paths are relative to the repo root)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
build="${1:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
python="${PYTHON:-/usr/bin/python3}"
export C1M_SANITIZE="${C1M_SANITIZE:-${SANITIZE:-0}}"
mkdir -p "$build/pyext" "$build/pyext-tmp"
cd "$here"
"$python" setup.py --quiet build_ext --build-lib "$build/pyext" --build-temp "$build/pyext-tmp"
ls "$build"/pyext/c1m*.so

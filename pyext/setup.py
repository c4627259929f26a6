"""Build the c1m CPython extension.

The sources are pyext/*.c plus the suite's own event-loop library
(c_server/lib/loop.c, net.c, listener.c, stats.c), compiled into the extension: one
implementation for the C server, the client and Python. Paths are absolute
(computed from this file) so setuptools keeps every object file inside its
build directory.

    cd pyext && python3 setup.py build_ext --build-lib ../build/pyext   # see build.sh
    cd pyext && python3 -m pip install --no-build-isolation .            # Debian: + --break-system-packages
    C1M_SANITIZE=1 ...   adds -fsanitize=address,undefined (run with LD_PRELOAD=libasan, see README.md)
"""
import glob
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.normpath(os.path.join(HERE, "..", "c_server", "lib"))
LIB_SOURCES = ["loop.c", "net.c", "listener.c", "stats.c"]

sources = sorted(glob.glob(os.path.join(HERE, "*.c"))) + [os.path.join(LIB, f) for f in LIB_SOURCES]
depends = sorted(glob.glob(os.path.join(HERE, "*.h"))) + sorted(glob.glob(os.path.join(LIB, "*.h")))

# Same warnings as the top-level Makefile's CFLAGS.
cflags = ["-std=c11", "-D_GNU_SOURCE", "-g", "-Wall", "-Wextra", "-Werror", "-Wshadow",
          "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wformat=2"]
ldflags = []
if os.environ.get("C1M_SANITIZE", os.environ.get("SANITIZE", "0")) == "1":
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
           "-fno-sanitize-recover=undefined"]
    # -UNDEBUG: keep the assert()s (sysconfig's CFLAGS say -DNDEBUG): the
    # loop invariants and "callbacks run with the GIL" are checked here
    cflags += san + ["-O1", "-UNDEBUG"]
    ldflags += san
cflags += os.environ.get("C1M_EXTRA_CFLAGS", "").split()

setup(
    ext_modules=[
        Extension(
            "c1m",
            sources=sources,
            depends=depends,
            include_dirs=[HERE, LIB],
            extra_compile_args=cflags,
            extra_link_args=ldflags,
        )
    ],
)

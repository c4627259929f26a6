# c1m - build, test and benchmark.
#   make build      compile everything (no tests, no installs beyond headers)
#   make check      build, then the fast tier: C unit tests, command lines, pure Python
#                   suites (no root, no namespace; tests/README.md)
#   make test       install test dependencies (apt, as root), build, run the check tier
#                   and the bats suites (root: network namespaces); JOBS=2 files at a time
#   make test SANITIZE=1   the suites that exercise C and the extension, on ASan/UBSan
#   make test-long  the long end-to-end cases (tagged long), which make test skips
#   make bench      the benchmark harness (root, network namespaces)
#   make fuzz       libFuzzer targets fuzz/fuzz_*.c (clang), FUZZ_SECONDS each
#   make help       every target and setting, one line each (harness/lib/settings.py)
SHELL := /bin/bash
ifeq ($(origin CC),default)
CC := gcc
endif
SANITIZE ?= 0
# One interpreter, chosen once: Debian's sees apt's python3-uvloop.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)

# Every NAME=VALUE on make's command line must be a setting of harness/lib/settings.py
# (make help lists them): a typo (TIER=10k) stops make here, exit 2, naming the closest.
CMDLINE_VARS := $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v)))
# $(call shq,VALUE): VALUE as one shell word, whatever it holds (quotes, spaces)
shq = '$(subst ','\'',$(1))'
# $(call one_path,NAME): NAME (PYTHON, BUILD) must be one word: make splits a
# value with a space into two (a target, an unquoted command), so it is refused
# here, exit 2, before anything runs
one_path = $(if $(word 2,$($(1))),$(if $(STATUS_FILE),$(shell echo 2 > $(call shq,$(value STATUS_FILE))))$(error $(1) must be one path without spaces or tabs, not '$($(1))'))
$(call one_path,PYTHON)
ifneq ($(strip $(CMDLINE_VARS)),)
SETTINGS_ERR := $(shell $(PYTHON) harness/lib/settings.py check-make --goals $(call shq,$(MAKECMDGOALS)) \
	$(foreach v,$(CMDLINE_VARS),$(call shq,$(v)=$(value $(v)))) 2>&1)
ifneq ($(.SHELLSTATUS),0)
$(if $(STATUS_FILE),$(shell echo 2 > $(call shq,$(value STATUS_FILE))))
$(error $(SETTINGS_ERR))
endif
endif
# STATUS_FILE=F: the exit status of the script a target ran (0, 1, 2, 3, 130) is
# written to F; make's own status is 2 for any failure (harness/README.md).
# F is removed first: absent afterwards, no script ran (a build or a prerequisite failed).
$(if $(STATUS_FILE),$(shell rm -f $(call shq,$(value STATUS_FILE))))
keep_status = $(if $(STATUS_FILE),; rc=$$?; echo $$rc > $(call shq,$(value STATUS_FILE)); exit $$rc)
# the same for a step before the script: written only when it fails (its success
# is not the target's status, which the script writes)
keep_failure = $(if $(STATUS_FILE), || { rc=$$?; echo $$rc > $(call shq,$(value STATUS_FILE)); exit $$rc; })

ifeq ($(SANITIZE),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT := -O1
else
BUILD ?= build
SANFLAGS :=
# assert() checks invariants (the event loop's) only in the SANITIZE=1 build
OPT := -O2 -DNDEBUG
endif
$(call one_path,BUILD)

CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) -g -fPIC -Wall -Wextra -Werror -Wshadow \
          -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 $(SANFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(SANFLAGS) $(EXTRA_LDFLAGS)

LIB_SRC := $(wildcard c_server/lib/*.c)
LIB_OBJ := $(patsubst c_server/lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRC))
SERVER_SRC := $(wildcard c_server/server/*.c)
SERVER_OBJ := $(patsubst c_server/server/%.c,$(BUILD)/server/%.o,$(SERVER_SRC))
# c1m-floor: the zero-state reference server (harness contender `floor`)
FLOOR_SRC := $(wildcard c_server/floor/*.c)
FLOOR_OBJ := $(patsubst c_server/floor/%.c,$(BUILD)/floor/%.o,$(FLOOR_SRC))
# c1m-calib: this instance's cost per accept and per syscall (meta.json `calibration`)
CALIB_SRC := $(wildcard c_server/calib/*.c)
CALIB_OBJ := $(patsubst c_server/calib/%.c,$(BUILD)/calib/%.o,$(CALIB_SRC))
CLIENT_SRC := $(wildcard client/*.c)
CLIENT_OBJ := $(patsubst client/%.c,$(BUILD)/client/%.o,$(CLIENT_SRC))

# C unit tests: tests/c/NAME.c -> $(BUILD)/tests/NAME, linked with libc1m (run by tests/check/c_unit.bats: make check)
CTEST_SRC := $(wildcard tests/c/*.c)
CTEST_BINS := $(patsubst tests/c/%.c,$(BUILD)/tests/%,$(CTEST_SRC))

BINS := $(BUILD)/c1m-server $(BUILD)/c1m-client $(BUILD)/c1m-stat $(BUILD)/c1m-floor $(BUILD)/c1m-calib

.PHONY: all build c pyext check test test-long test-deps bench bench-args bench-root bench-deps plot compare clean fuzz fuzz-deps fuzz-build help
all: build
help:
	@$(PYTHON) harness/lib/settings.py help
build: c pyext
c: $(BINS) $(CTEST_BINS)

$(BUILD)/lib/%.o: c_server/lib/%.c $(wildcard c_server/lib/*.h) | $(BUILD)/lib
	$(CC) $(CFLAGS) -Ic_server/lib -c $< -o $@
$(BUILD)/server/%.o: c_server/server/%.c $(wildcard c_server/lib/*.h c_server/server/*.h) | $(BUILD)/server
	$(CC) $(CFLAGS) -Ic_server/lib -c $< -o $@
$(BUILD)/floor/%.o: c_server/floor/%.c $(wildcard c_server/lib/*.h c_server/floor/*.h) | $(BUILD)/floor
	$(CC) $(CFLAGS) -Ic_server/lib -c $< -o $@
$(BUILD)/calib/%.o: c_server/calib/%.c $(wildcard c_server/lib/*.h) | $(BUILD)/calib
	$(CC) $(CFLAGS) -Ic_server/lib -c $< -o $@
$(BUILD)/client/%.o: client/%.c $(wildcard c_server/lib/*.h client/*.h) | $(BUILD)/client
	$(CC) $(CFLAGS) -Ic_server/lib -c $< -o $@
$(BUILD)/libc1m.a: $(LIB_OBJ)
	ar rcs $@ $^
$(BUILD)/c1m-server: $(filter-out $(BUILD)/server/stat_main.o,$(SERVER_OBJ)) $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -o $@
$(BUILD)/c1m-stat: $(BUILD)/server/stat_main.o $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -o $@
$(BUILD)/c1m-floor: $(FLOOR_OBJ) $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -o $@
$(BUILD)/c1m-calib: $(CALIB_OBJ) $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -o $@
$(BUILD)/c1m-client: $(CLIENT_OBJ) $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -lm -o $@
$(BUILD)/tests/%: tests/c/%.c $(BUILD)/libc1m.a $(wildcard c_server/lib/*.h) $(wildcard tests/c/*.h) | $(BUILD)/tests
	$(CC) $(CFLAGS) -Ic_server/lib $< $(BUILD)/libc1m.a $(LDFLAGS) -o $@
# reconnect_test compiles the client's client/reconnect.c in (tests/check/c_unit.bats)
$(BUILD)/tests/reconnect_test: client/reconnect.c client/reconnect.h
# push_rx_test compiles client/push_rx.c and client/histogram.c in (tests/check/c_unit.bats)
$(BUILD)/tests/push_rx_test: client/push_rx.c client/push_rx.h client/histogram.c client/histogram.h
$(BUILD)/lib $(BUILD)/server $(BUILD)/client $(BUILD)/floor $(BUILD)/calib $(BUILD)/tests:
	mkdir -p $@

# ---- contenders on other event libraries (issue 12), sharing c1m-server's
# command line (c_server/contender/): c1m-libuv (libuv1-dev) and c1m-uring
# (liburing-dev). Their headers come from harness/install-deps.sh build, run
# when missing, as for the extension's Python.h.
ALT_CFLAGS := $(CFLAGS) -Ic_server/lib -Ic_server/contender
ALT_HDRS := $(wildcard c_server/lib/*.h c_server/contender/*.h)
CONTENDER_OBJ := $(patsubst c_server/contender/%.c,$(BUILD)/contender/%.o,$(wildcard c_server/contender/*.c))
LIBUV_OBJ := $(patsubst c_server/libuv/%.c,$(BUILD)/libuv/%.o,$(wildcard c_server/libuv/*.c))
URING_OBJ := $(patsubst c_server/uring/%.c,$(BUILD)/uring/%.o,$(wildcard c_server/uring/*.c))
ALT_BINS := $(if $(LIBUV_OBJ),$(BUILD)/c1m-libuv) $(if $(URING_OBJ),$(BUILD)/c1m-uring)
c: $(ALT_BINS)
$(BUILD)/contender/%.o: c_server/contender/%.c $(ALT_HDRS) | $(BUILD)/contender
	$(CC) $(ALT_CFLAGS) -c $< -o $@
$(BUILD)/libuv/%.o: c_server/libuv/%.c $(ALT_HDRS) $(wildcard c_server/libuv/*.h) | $(BUILD)/libuv
	@test -f /usr/include/uv.h || harness/install-deps.sh build
	$(CC) $(ALT_CFLAGS) -c $< -o $@
$(BUILD)/uring/%.o: c_server/uring/%.c $(ALT_HDRS) $(wildcard c_server/uring/*.h) | $(BUILD)/uring
	@test -f /usr/include/liburing.h || harness/install-deps.sh build
	$(CC) $(ALT_CFLAGS) -c $< -o $@
$(BUILD)/c1m-libuv: $(LIBUV_OBJ) $(CONTENDER_OBJ) $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -luv -o $@
$(BUILD)/c1m-uring: $(URING_OBJ) $(CONTENDER_OBJ) $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -luring -o $@
$(BUILD)/contender $(BUILD)/libuv $(BUILD)/uring:
	mkdir -p $@

# ---- the Python extension (pyext/), built for $(PYTHON) into $(BUILD)/pyext
PYEXT_SRC := $(wildcard pyext/*.c pyext/*.h) $(LIB_SRC) $(wildcard c_server/lib/*.h)
pyext: $(BUILD)/pyext/.built
$(BUILD)/pyext/.built: $(PYEXT_SRC) pyext/setup.py
	@test -f $$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h \
		|| harness/install-deps.sh build
	cd pyext && C1M_SANITIZE=$(SANITIZE) $(PYTHON) setup.py -q build_ext \
		--build-temp $(abspath $(BUILD))/pyext-tmp --build-lib $(abspath $(BUILD))/pyext
	touch $@

# ---- tests (tests/README.md: the tiers): against $(BUILD); SANITIZE=1 runs them on ASan/UBSan.
# tests/run.sh prints TAP, then "make TIER (...): PASSED|FAILED: ..." and, last,
# "tests: N passed, N failed, N skipped".
# files at a time in make test's parallel group; one at a time on the ASan build (its
# slower servers against the tests' wait limits)
JOBS ?= $(if $(filter 1,$(SANITIZE)),1,2)
TEST_ENV = C1M_BUILD=$(abspath $(BUILD)) PYTHON=$(PYTHON) SANITIZE=$(SANITIZE) JOBS=$(JOBS)
check: build
	$(TEST_ENV) bash tests/run.sh check
test: test-deps build
	$(TEST_ENV) bash tests/run.sh test
test-long: test-deps build
	$(TEST_ENV) bash tests/run.sh long
test-deps:
	@harness/install-deps.sh test

# ---- the benchmark harness (root): TIERS=10k,100k CONTENDERS=c,pyext REPEAT=3
bench: bench-args bench-root bench-deps build
	PYTHON=$(PYTHON) BUILD=$(abspath $(BUILD)) harness/bench.sh$(keep_status)
# a bad setting (TIERS=abc) is refused first: before root, packages and the build
bench-args:
	@PYTHON=$(PYTHON) harness/bench.sh --check$(keep_failure)
# say why before installing or building anything
bench-root:
	@bash -c '. harness/lib/common.sh && require_root "make $(or $(filter bench demo anatomy-cpu,$(MAKECMDGOALS)),bench)"'
bench-deps:
	@harness/install-deps.sh bench
# C against Python in about a minute, one picture (harness/demo; harness/README.md "make demo"):
# [DEMO_TIER=10k] [DEMO_CONTENDERS=floor,c,...] [DEMO_ANATOMY=asyncio-streams] [OUT=results/demo-<UTC time>]
.PHONY: demo
demo: bench-root bench-deps build
	PYTHON=$(PYTHON) BUILD=$(abspath $(BUILD)) harness/demo$(keep_status)
plot:
	@test -n $(call shq,$(value RUN)) || { echo "usage: make plot RUN=results/<dir>" >&2; (exit 2); }$(keep_status)
	harness/plot.sh $(call shq,$(value RUN))$(keep_status)
# B/A per contender and tier with bootstrap 95% intervals and verdicts (harness/README.md):
# the machines' differences first; time and CPU as ratios to the floor unless the
# fingerprints are the same. [MODE=auto|absolute|ratio] [DISTURBED=1] [FORMAT=text|md|json|csv];
# B= alone: A is the committed results/reference* sharing the most cells with B
compare:
	@test -n $(call shq,$(value B)) || { echo "usage: make compare A=results/X B=results/Y [MODE=auto|absolute|ratio] [DISTURBED=1] [FORMAT=text|md|json|csv]" >&2; (exit 2); }$(keep_status)
	@$(PYTHON) harness/lib/results.py compare $(if $(MODE),--mode $(call shq,$(value MODE))) \
		$(if $(filter-out 0,$(DISTURBED)),--disturbed) $(if $(FORMAT),--format $(call shq,$(value FORMAT))) \
		$(if $(value A),$(call shq,$(value A)),--reference) $(call shq,$(value B))$(keep_status)
# the figures of README.md and docs/ from the committed results, and results/README.md
# (harness/lib/docs.py; docs/README.md "Figures"); docs-check fails, naming FILE:LINE, on drift
.PHONY: docs docs-check
docs:
	@$(PYTHON) harness/lib/docs.py render
docs-check:
	@$(PYTHON) harness/lib/docs.py check
# connections that fit per contender, seed 002's formula (docs/capacity.md):
# RUN=results/X [MEM=64G] [STALL=0.01]; without MEM, the 8/24/64/256 GiB table;
# CONNS=10m: the other way, the memory N connections need. --mem=VALUE and -- before
# RUN: a value that begins with "-" (MEM=-1G) reaches its own check, not argparse's
# "expected one argument"
.PHONY: capacity
capacity:
	@test -n $(call shq,$(value RUN)) || { echo "usage: make capacity RUN=results/X [MEM=64G | CONNS=10m] [STALL=0.01]" >&2; (exit 2); }$(keep_status)
	@$(PYTHON) harness/capacity $(if $(MEM),--mem=$(call shq,$(value MEM))) $(if $(CONNS),--conns=$(call shq,$(value CONNS))) $(if $(STALL),--stall=$(call shq,$(value STALL))) -- $(call shq,$(value RUN))$(keep_status)
# where each microsecond of an accept goes, by layer (perf; harness/anatomy-cpu, README):
# CONTENDERS=c,pyext N=300k [HOLD=10] [OUT=results/X]; exit 3 when perf cannot sample
.PHONY: anatomy-cpu
anatomy-cpu: bench-root build
	@harness/install-deps.sh anatomy || echo "anatomy-cpu: its packages could not all be installed: running with what is here" >&2
	PYTHON=$(PYTHON) BUILD=$(abspath $(BUILD)) harness/anatomy-cpu$(keep_status)

# ---- fuzzing (clang + libFuzzer; `make build` never needs clang).
# Every fuzz/fuzz_NAME.c is a libFuzzer target linked with the library sources,
# built into $(BUILD)/fuzz/ with ASan+UBSan; fuzz/corpus/NAME/ is its seed
# corpus (read-only: new inputs go to $(BUILD)/fuzz/corpus-NAME/). `make fuzz`
# runs each target FUZZ_SECONDS (default: ~60 s for all of them together) and
# fails on any crash, sanitizer report, leak or per-input timeout.
FUZZ_CC ?= clang
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_NAMES := $(patsubst fuzz/fuzz_%.c,%,$(FUZZ_SRC))
FUZZ_BINS := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_SECONDS ?= $(shell expr 60 / $(if $(FUZZ_NAMES),$(words $(FUZZ_NAMES)),1))
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Wshadow -Ic_server/lib
FUZZ_LIB_OBJ := $(patsubst c_server/lib/%.c,$(BUILD)/fuzz/lib/%.o,$(LIB_SRC))

fuzz: fuzz-deps
	@[[ "$(FUZZ_SECONDS)" =~ ^[1-9][0-9]*$$ ]] \
		|| { echo "make fuzz: FUZZ_SECONDS must be a positive whole number of seconds, not '$(FUZZ_SECONDS)'" >&2; exit 2; }
	@$(MAKE) --no-print-directory fuzz-build
	@set -e; for n in $(FUZZ_NAMES); do \
		mkdir -p $(BUILD)/fuzz/corpus-$$n; seeds=; \
		[ -d fuzz/corpus/$$n ] && seeds=fuzz/corpus/$$n; \
		echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
		$(BUILD)/fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/crash-$$n- \
			$(BUILD)/fuzz/corpus-$$n $$seeds > $(BUILD)/fuzz/$$n.log 2>&1 \
			|| { tail -n 60 $(BUILD)/fuzz/$$n.log >&2; \
			     echo "fuzz: $$n FAILED (log $(BUILD)/fuzz/$$n.log, input $(BUILD)/fuzz/crash-$$n-*)" >&2; exit 1; }; \
		grep -E '^stat::number_of_executed_units' $(BUILD)/fuzz/$$n.log | sed "s/^/fuzz: $$n: /"; \
	done; echo "fuzz: all targets passed"
fuzz-deps:
	@harness/install-deps.sh fuzz
fuzz-build: $(FUZZ_LIB_OBJ) $(FUZZ_BINS)
$(BUILD)/fuzz/lib/%.o: c_server/lib/%.c $(wildcard c_server/lib/*.h) | $(BUILD)/fuzz/lib
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@
$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_LIB_OBJ) $(wildcard c_server/lib/*.h)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer $< $(FUZZ_LIB_OBJ) -o $@
$(BUILD)/fuzz/lib:
	mkdir -p $@

clean:
	rm -rf build build-san pyext/build

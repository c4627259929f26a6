# c1m - build, test and benchmark.
#   make build      compile everything (no tests, no installs beyond headers)
#   make test       install test dependencies (apt, as root), build, run bats tests
#   make test SANITIZE=1   the same suite against an ASan/UBSan build
#   make bench      the benchmark harness (root, network namespaces)
SHELL := /bin/bash
ifeq ($(origin CC),default)
CC := gcc
endif
SANITIZE ?= 0
# One interpreter, chosen once: Debian's sees apt's python3-uvloop.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)

ifeq ($(SANITIZE),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT := -O1
else
BUILD ?= build
SANFLAGS :=
OPT := -O2
endif

CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) -g -fPIC -Wall -Wextra -Werror -Wshadow \
          -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 $(SANFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(SANFLAGS) $(EXTRA_LDFLAGS)

LIB_SRC := $(wildcard c_server/lib/*.c)
LIB_OBJ := $(patsubst c_server/lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRC))
SERVER_SRC := $(wildcard c_server/server/*.c)
SERVER_OBJ := $(patsubst c_server/server/%.c,$(BUILD)/server/%.o,$(SERVER_SRC))
CLIENT_SRC := $(wildcard client/*.c)
CLIENT_OBJ := $(patsubst client/%.c,$(BUILD)/client/%.o,$(CLIENT_SRC))

BINS := $(BUILD)/c1m-server $(BUILD)/c1m-client $(BUILD)/c1m-stat

.PHONY: all build c pyext test test-deps bench bench-root bench-deps plot compare clean
all: build
build: c pyext
c: $(BINS)

$(BUILD)/lib/%.o: c_server/lib/%.c $(wildcard c_server/lib/*.h) | $(BUILD)/lib
	$(CC) $(CFLAGS) -Ic_server/lib -c $< -o $@
$(BUILD)/server/%.o: c_server/server/%.c $(wildcard c_server/lib/*.h c_server/server/*.h) | $(BUILD)/server
	$(CC) $(CFLAGS) -Ic_server/lib -c $< -o $@
$(BUILD)/client/%.o: client/%.c $(wildcard c_server/lib/*.h client/*.h) | $(BUILD)/client
	$(CC) $(CFLAGS) -Ic_server/lib -c $< -o $@
$(BUILD)/libc1m.a: $(LIB_OBJ)
	ar rcs $@ $^
$(BUILD)/c1m-server: $(filter-out $(BUILD)/server/stat_main.o,$(SERVER_OBJ)) $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -o $@
$(BUILD)/c1m-stat: $(BUILD)/server/stat_main.o $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -o $@
$(BUILD)/c1m-client: $(CLIENT_OBJ) $(BUILD)/libc1m.a
	$(CC) $(LDFLAGS) $^ -lm -o $@
$(BUILD)/lib $(BUILD)/server $(BUILD)/client:
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

# ---- tests: bats suites against $(BUILD); SANITIZE=1 runs them on ASan/UBSan.
# tests/run.sh prints TAP, then a closing "make test (...): PASSED|FAILED: N tests..." line.
test: test-deps build
	C1M_BUILD=$(abspath $(BUILD)) PYTHON=$(PYTHON) SANITIZE=$(SANITIZE) bash tests/run.sh
test-deps:
	@harness/install-deps.sh test

# ---- the benchmark harness (root): TIERS=10k,100k CONTENDERS=c,pyext REPEAT=3
bench: bench-root bench-deps build
	PYTHON=$(PYTHON) BUILD=$(abspath $(BUILD)) harness/bench.sh
# say why before installing or building anything
bench-root:
	@bash -c '. harness/lib/common.sh && require_root "make bench"'
bench-deps:
	@harness/install-deps.sh bench
plot:
	@test -n "$(RUN)" || { echo "usage: make plot RUN=results/<dir>" >&2; exit 2; }
	harness/plot.sh $(RUN)
# B/A per contender and tier with bootstrap 95% intervals and verdicts (harness/README.md)
compare:
	@test -n "$(A)" && test -n "$(B)" || { echo "usage: make compare A=results/X B=results/Y" >&2; exit 2; }
	@$(PYTHON) harness/lib/results.py compare $(A) $(B)

clean:
	rm -rf build build-san pyext/build

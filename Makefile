# Top-level convenience wrapper: the two README commands and helpers.
# The build itself is CMake's; everything below only drives it.
#
#   make bench   deps, RelWithDebInfo build in build/, run `mqs-bench yield`
#   make report  deps, build, `mqs-bench report --out report` (the standard
#                set within REPORT_BUDGET minutes, default 9; report/ is
#                git-ignored); open report/index.html
#   make test    deps, then three builds, each running ctest:
#                  build/       default cc         every test
#                  build-asan/  $(ASAN_CC), ASan+UBSan   every test
#                  build-tsan/  $(TSAN_CC), TSan         the concurrency tests
#                every phase runs even if an earlier one failed; the exit
#                status is non-zero if any failed.
#   make clang   clang build in build-clang/ and every test
#   make peers   install the peer toolchains (scripts/peers.sh: Go,
#                g++, Boost.Fiber), rebuild build/ with the peers in
#                build/peers/ and run their test (test_peers)
#   make check-arm64  aarch64 cross build in build-arm64/ (gcc cross,
#                cmake/aarch64-linux-gnu.cmake), every test run under
#                qemu-user; installs the cross tools when root
#                (scripts/deps-aarch64.sh).  Not part of `make test`.
#   make clean   remove the build directories
#
# Knobs: JOBS (parallel compile, default 2), CTEST_JOBS (test programs at a
# time, default 1: the tests start their own worker threads), ASAN_CC,
# TSAN_CC, SAN_STRESS_TASKS (stress size under sanitizers), SLOW_SOAK_S
# (test_netsoak's seconds under TSan and qemu; 60 elsewhere), TSAN_EXCLUDE
# (ctest -E regex of tests skipped under TSan; empty = run all),
# ARM64_EXCLUDE (the same for check-arm64).

JOBS ?= 2
CTEST_JOBS ?= 1
ASAN_CC ?= clang
TSAN_CC ?= gcc
SAN_STRESS_TASKS ?= 10000
SLOW_SOAK_S ?= 20
TSAN_EXCLUDE ?=

CMAKE ?= cmake
CTEST ?= ctest
CTEST_FLAGS = --output-on-failure -j$(CTEST_JOBS)

ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
           MQS_STRESS_TASKS=$(SAN_STRESS_TASKS) MQS_TEST_TIMEOUT=300
TSAN_ENV = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
           MQS_STRESS_TASKS=$(SAN_STRESS_TASKS) MQS_TEST_TIMEOUT=300 \
           MQS_SOAK_S=$(SLOW_SOAK_S)

.PHONY: all deps bench report test clang clean peers \
        build check-default check-asan check-tsan check-arm64

all: build

deps:
	@scripts/deps.sh

# ---- normal build (default cc, CMake's default build type) ----------
build: deps
	$(CMAKE) -S . -B build
	$(CMAKE) --build build -j$(JOBS)

bench: build
	build/mqs-bench yield

REPORT_BUDGET ?= 9
report: build
	build/mqs-bench report --out report --budget $(REPORT_BUDGET)

check-default: build
	cd build && $(CTEST) $(CTEST_FLAGS)

# ---- sanitizer builds ------------------------------------------------
check-asan: deps
	$(CMAKE) -S . -B build-asan -DMQS_SANITIZE=address \
	  -DCMAKE_C_COMPILER=$(ASAN_CC) -DCMAKE_ASM_COMPILER=$(ASAN_CC)
	$(CMAKE) --build build-asan -j$(JOBS)
	cd build-asan && $(ASAN_ENV) $(CTEST) $(CTEST_FLAGS)

check-tsan: deps
	$(CMAKE) -S . -B build-tsan -DMQS_SANITIZE=thread \
	  -DCMAKE_C_COMPILER=$(TSAN_CC) -DCMAKE_ASM_COMPILER=$(TSAN_CC)
	$(CMAKE) --build build-tsan -j$(JOBS)
	cd build-tsan && $(TSAN_ENV) $(CTEST) $(CTEST_FLAGS) \
	  $(if $(TSAN_EXCLUDE),-E '$(TSAN_EXCLUDE)')

# Run every phase, then say which failed.
test: deps
	@failed=""; \
	for phase in check-default check-asan check-tsan; do \
	  echo "==== make $$phase"; \
	  $(MAKE) --no-print-directory $$phase || failed="$$failed $$phase"; \
	done; \
	if [ -n "$$failed" ]; then \
	  echo "==== make test: FAILED:$$failed"; exit 1; \
	fi; \
	echo "==== make test: all phases passed"

# ---- clang build -----------------------------------------------------
clang: deps
	$(CMAKE) -S . -B build-clang -DCMAKE_C_COMPILER=clang -DCMAKE_ASM_COMPILER=clang
	$(CMAKE) --build build-clang -j$(JOBS)
	cd build-clang && $(CTEST) $(CTEST_FLAGS)

# ---- peer runtimes (optional; nothing else depends on them) -----------
peers: deps
	@scripts/peers.sh
	$(CMAKE) -S . -B build -DMQS_BUILD_PEERS=ON
	$(CMAKE) --build build -j$(JOBS)
	cd build && $(CTEST) $(CTEST_FLAGS) -R '^test_peers$$'

# ---- aarch64 cross build, tests under qemu-user (docs/aarch64.md) -----
# Each case gets 300 s (MQS_TEST_TIMEOUT) as under the sanitizers: the
# emulator runs the same code several times slower.
ARM64_EXCLUDE ?=
ARM64_ENV = MQS_TEST_TIMEOUT=300 MQS_SOAK_S=$(SLOW_SOAK_S)
check-arm64:
	@scripts/deps-aarch64.sh
	$(CMAKE) -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
	$(CMAKE) --build build-arm64 -j$(JOBS)
	cd build-arm64 && $(ARM64_ENV) $(CTEST) $(CTEST_FLAGS) \
	  $(if $(ARM64_EXCLUDE),-E '$(ARM64_EXCLUDE)')

clean:
	rm -rf build build-asan build-tsan build-clang build-arm64

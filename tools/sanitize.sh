#!/usr/bin/env bash
# The test suite under the sanitizers: every test with AddressSanitizer + UBSan, then the concurrency
# tests (many threads on shared jitted functions, GEMMs, convolutions, random, checkpoints) under
# ThreadSanitizer. `.ci/run` runs it after tools/test.sh.
#   tools/sanitize.sh [asan-build-dir] [tsan-build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
asan=${1:-$root/build-asan}
tsan=${2:-$root/build-tsan}
# libclang-rt-14-dev: libFuzzer's FuzzedDataProvider.h, for the fuzz targets' corpora (fuzz/replay)
"$root/tools/deps.sh" dataset-fashion-mnist libclang-rt-14-dev

# ASan: -O1 -g1 (line tables for the reports' stacks) builds in half the time of -O2 -g and still finds
# what it finds.
opt=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DGRAFT_TEST_SHARDS=4
     -DGRAFT_WERROR=ON -DGRAFT_WITH_CUDA=OFF)

# ASan + UBSan: the whole suite, and the fuzz targets' corpora (fuzz/replay). Allocations beyond the
# machine return null (graft turns them into a MemoryError, as it does without sanitizers) instead of
# aborting. The test files themselves are not instrumented (tests/CMakeLists.txt). Left out, as the
# release suite runs them: the FusedKernels tests, whose time is the host compiler's (they compile the
# generated CUDA kernels for the CPU), and export_rows (every row traced, exported and reloaded: the
# export code is checked here by test_io and the fuzz corpora, the rows by test_prims).
cmake -S "$root" -B "$asan" -G Ninja "${opt[@]}" -DGRAFT_SANITIZE=ON >/dev/null
cmake --build "$asan"
ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS="suppressions=$root/tools/lsan.supp" GTEST_FILTER="-FusedKernels.*" \
  ctest --test-dir "$asan" --output-on-failure -j "$(nproc)" -E "package_consumer|distributed|data_parallel|export_rows"
# The tests under mpirun: memory errors and UB are checked; leaks are not (OpenMPI keeps allocations
# until exit that no suppression list covers across its versions). Two and three ranks (an odd count);
# four ranks on two cores under ASan take minutes, and the release suite runs them.
ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$asan" --output-on-failure -R "distributed_np[123]|distributed_faults|data_parallel"

# TSan: the concurrency tests. OpenMP (libgomp) is not instrumented, so kernels run on one thread per
# caller (GRAFT_NUM_THREADS=1): the threads under test are the user's, and their sharing is what TSan sees.
cmake -S "$root" -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAFT_TEST_SHARDS=4 -DGRAFT_WERROR=ON \
  -DGRAFT_WITH_CUDA=OFF -DGRAFT_TSAN=ON >/dev/null
cmake --build "$tsan" --target test_nn test_runtime test_io test_transforms
export GRAFT_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
"$tsan/tests/test_nn" --gtest_filter='Threads.*'
"$tsan/tests/test_runtime" --gtest_filter='Threads.*'
"$tsan/tests/test_io" --gtest_filter='*Concurrent*'
"$tsan/tests/test_transforms" --gtest_filter='Jit.*'
echo "sanitizers: the suite is clean under ASan + UBSan, the concurrency tests under TSan"

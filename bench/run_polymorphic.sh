#!/usr/bin/env bash
# jit's batch polymorphism on the main job's training step (bench/bench_polymorphic.cpp): the masked
# program against the exact one at a full and a partial batch, interleaved in one process.
#   bench/run_polymorphic.sh [build-dir] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
"$root/tools/deps.sh" libbenchmark-dev >/dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target bench_polymorphic >/dev/null
"$build/bench/bench_polymorphic" "${2:-7}"

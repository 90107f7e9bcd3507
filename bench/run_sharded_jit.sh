#!/usr/bin/env bash
# Sharded jit (issue 32), in one process over 4 CPU devices made by hand: the MLP's data-parallel step
# as pjit against the hand-written jit(shard_map) step (interleaved rounds), and the partitioning's
# time against jit's cold first call of the transformer step (the disk cache off). Three processes
# (fresh compiles each time); prints the JSON lines.
#   bench/run_sharded_jit.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target bench_sharded_jit >/dev/null
for run in 1 2 3; do
  "$build/bench/bench_sharded_jit" 7
done

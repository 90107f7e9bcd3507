#!/usr/bin/env bash
# A fresh process's compile time of the MLP training step (bench/bench_compile_cache.cpp), five new
# processes each: against an empty cache (cold), with only the kernels' machine code cached (the
# optimizer runs), and with the whole program cached (graft/compiler/program_cache.h).
#   bench/run_compile_cache.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
"$root/tools/deps.sh" libbenchmark-dev >/dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target bench_compile_cache >/dev/null
cache=$(mktemp -d)
export GRAFT_CACHE_DIR=$cache
bench=$build/bench/bench_compile_cache
echo "# cold: an empty cache each time"
for i in 1 2 3 4 5; do rm -rf "$cache"/*; "$bench"; done
echo "# kernels' objects cached, the program optimized again"
"$bench" >/dev/null
for i in 1 2 3 4 5; do rm -f "$cache"/*.gkp; "$bench"; done
echo "# the whole program cached"
"$bench" >/dev/null
for i in 1 2 3 4 5; do "$bench"; done
rm -rf "$cache"

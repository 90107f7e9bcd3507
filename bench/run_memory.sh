#!/usr/bin/env bash
# Peak heap memory of the MLP 784-512-512-10 training step (batch 128), graft beside PyTorch, both
# counted by one allocation meter (bench/memshim.c, preloaded), each case in a fresh process.
#   bench/run_memory.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
"$root/tools/deps.sh" libbenchmark-dev python3-torch >/dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target bench_memory >/dev/null
shim=$(mktemp -d)/memshim.so
gcc -O2 -shared -fPIC "$root/bench/memshim.c" -o "$shim"
for opt in sgd adam; do
  for mode in donate keep; do GRAFT_CPU_CACHE_BYTES=0 LD_PRELOAD=$shim "$build/bench/bench_memory" $opt $mode; done
  LD_PRELOAD=$shim OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$root/bench/torch_memory.py" $opt
done
rm -f "$shim"

#!/usr/bin/env bash
# Eager host overhead per primitive (1-element arrays) and cached-jit call overhead, graft next to
# libtorch in the same binary and the same run; prints a table with the ratios.
#   bench/run_eager.sh [build-dir]       (default: build-bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON -DGRAFT_BUILD_TESTS=OFF \
  -DGRAFT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target bench_eager >/dev/null
out=$(mktemp)
"$build/bench/bench_eager" --benchmark_min_time=0.5 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$out" 2>/dev/null
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
med = {b["run_name"]: b["real_time"] for b in d["benchmarks"] if b.get("aggregate_name") == "median"}
pairs = [("add", "graft_add", "torch_add"), ("add (lax, no promotion)", "graft_lax_add", "torch_add"),
         ("mul by C++ scalar", "graft_mul_scalar", "torch_mul_scalar"), ("sin", "graft_sin", "torch_sin"),
         ("sum", "graft_sum", "torch_sum"), ("matmul 1x1", "graft_matmul_1x1", "torch_matmul_1x1"),
         ("grad of sum(sin(x))", "graft_grad_call", "torch_grad_call")]
print(f"{'op (1 element)':28s} {'graft ns':>9s} {'libtorch ns':>12s} {'graft/torch':>12s}")
for name, g, t in pairs:
    if g in med and t in med:
        print(f"{name:28s} {med[g]:9.0f} {med[t]:12.0f} {med[g]/med[t]:12.2f}")
    elif g in med:
        print(f"{name:28s} {med[g]:9.0f} {'-':>12s} {'-':>12s}")
if "torch_add_inference_mode" in med:
    print(f"{'libtorch add, InferenceMode':28s} {'':9s} {med['torch_add_inference_mode']:12.0f}")
j, e = med.get("graft_jit_call"), med.get("graft_jit_call_eager_equivalent")
if j and e:
    print(f"cached jit call of sin(x)*2+1: {j:.0f} ns (the same 3 ops eagerly: {e:.0f} ns)")
j1, l1 = med.get("graft_jit_call_1op"), med.get("graft_lax_add")
if j1 and l1:
    print(f"cached jit call of x+1: {j1:.0f} ns, i.e. {j1 - l1:.0f} ns of call overhead over the eager op ({l1:.0f} ns)")
PY
rm -f "$out"

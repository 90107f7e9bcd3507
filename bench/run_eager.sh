#!/usr/bin/env bash
# Eager host overhead per primitive (1-element arrays), cached-jit call overhead and eager throughput in
# f32, bf16 and f16 (2^20 elements), graft next to libtorch in the same binary and the same run; prints
# tables with the ratios.
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
# the 16-bit throughput peer: PyTorch's eager ops from Python (the same ops, 2^20 elements, the median
# of 200 calls as graft's figure is a median; the table says "-" where PyTorch is missing)
"$root/tools/deps.sh" python3-torch >/dev/null || true
torch_wide=$(/usr/bin/python3 - <<'PY' || echo '{}'
import json, os, time
try:
    import torch
except ImportError:
    print("{}"); raise SystemExit
torch.set_num_threads(os.cpu_count())
a0 = torch.randn(1 << 20)
r = {}
for d, dt in enumerate([torch.float32, torch.bfloat16, torch.float16]):
    a = a0.to(dt)
    for o, f in enumerate([lambda: a + a, lambda: torch.exp(a), lambda: torch.sum(a)]):
        try:
            f()
        except RuntimeError:  # PyTorch 1.13 has no f16 exp on the CPU
            continue
        ts = []
        for _ in range(200):
            t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
        r[f"torch_wide/{o}/{d}"] = sorted(ts)[len(ts) // 2] * 1e6
print(json.dumps(r))
PY
)
/usr/bin/python3 - "$out" "$torch_wide" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
med = {b["run_name"]: b["real_time"] for b in d["benchmarks"] if b.get("aggregate_name") == "median"}
med.update(json.loads(sys.argv[2]))  # PyTorch's 16-bit throughput, in us
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
print()
print(f"{'2^20 elements':16s} {'graft us':>9s} {'PyTorch us':>12s} {'graft/torch':>12s} {'graft dtype/f32':>16s}")
for o, op in enumerate(["a + a", "exp", "sum"]):
    for d, dt in enumerate(["f32", "bf16", "f16"]):
        g, t, f = med.get(f"graft_wide/{o}/{d}"), med.get(f"torch_wide/{o}/{d}"), med.get(f"graft_wide/{o}/0")
        if g is None:
            continue
        tt = f"{t:12.1f} {g / t:12.2f}" if t else f"{'-':>12s} {'-':>12s}"
        print(f"{op + ' ' + dt:16s} {g:9.1f} {tt} {g / f:16.2f}")
j, e = med.get("graft_jit_call"), med.get("graft_jit_call_eager_equivalent")
if j and e:
    print(f"cached jit call of sin(x)*2+1: {j:.0f} ns (the same 3 ops eagerly: {e:.0f} ns)")
j1, l1 = med.get("graft_jit_call_1op"), med.get("graft_lax_add")
if j1 and l1:
    print(f"cached jit call of x+1: {j1:.0f} ns, i.e. {j1 - l1:.0f} ns of call overhead over the eager op ({l1:.0f} ns)")
PY
rm -f "$out"

#!/usr/bin/env bash
# Control flow against PyTorch in one run: bench_control (a 1,000-step RNN as jit(scan), eager scan, an
# eager unrolled loop, jit(value_and_grad) through the scan) and bench/torch_rnn.py (PyTorch's eager loop,
# in both OpenMP wait policies). Prints the JSON lines, then a table of ratios.
#   bench/run_control.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
"$root/tools/deps.sh" libbenchmark-dev python3-torch >/dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target bench_control >/dev/null
out=$(mktemp -d)
"$build/bench/bench_control" | tee "$out/graft.json"
OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$root/bench/torch_rnn.py" | tee "$out/torch_passive.json"
/usr/bin/python3 "$root/bench/torch_rnn.py" | tee "$out/torch_default.json"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
def load(name):
    return {o["name"]: o["value"] for o in map(json.loads, filter(lambda l: l.startswith("{"), open(f"{d}/{name}")))}
g, tp, td = load("graft.json"), load("torch_passive.json"), load("torch_default.json")
fwd = min(tp["torch_rnn_1000_eager_forward"], td["torch_rnn_1000_eager_forward"])
vg = min(tp["torch_rnn_1000_eager_value_and_grad"], td["torch_rnn_1000_eager_value_and_grad"])
print()
print(f"{'1,000-step RNN (ms)':40s} {'graft':>8s} {'PyTorch':>8s} {'ratio':>6s}")
for name, key, ref in [("jit(scan), forward", "rnn_1000_jit_scan", fwd),
                       ("scan run eagerly, forward", "rnn_1000_eager_scan", fwd),
                       ("eager unrolled loop, forward", "rnn_1000_eager_unrolled", fwd),
                       ("jit(value_and_grad) through the scan", "rnn_1000_jit_value_and_grad", vg)]:
    print(f"{name:40s} {g[key]:8.2f} {ref:8.2f} {g[key] / ref:6.2f}")
PY
rm -rf "$out"

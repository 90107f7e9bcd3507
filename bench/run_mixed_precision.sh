#!/usr/bin/env bash
# bf16 against f32 on this CPU, in one run (issue 35):
#   - bench_mixed_precision: the MLP, CNN and transformer training steps in f32, in bf16 on the CPU's bf16
#     dot products, and in bf16 forced onto the f32 route (GRAFT_NATIVE_BF16=0's path), interleaved
#     round by round with oneDNN's sgemm rate (the transformer's share of the GEMM roofline);
#   - one layer's fused attention forward and backward in f32, bf16 and f16, in the same rounds;
#   - PyTorch's step of the same transformer (../shared/peers/torch_gpt.py), before and after;
#   - the main job's MLP epochs in the three modes, alternated (best epoch after the first of each run).
# Prints the JSON lines, then a table of ratios.
#   bench/run_mixed_precision.sh [build-dir] [peers-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
peers=${2:-$root/../shared/peers}
"$root/tools/deps.sh" libbenchmark-dev python3-torch dataset-fashion-mnist >/dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target bench_mixed_precision train_fashion_mnist >/dev/null
out=$(mktemp -d)
torch() { /usr/bin/python3 "$peers/torch_gpt.py" --batch 8 --seq 128 --threads "$(nproc)" 2>/dev/null | grep '^{'; }
torch >"$out/torch1.json"
"$build/bench/bench_mixed_precision" 7 | tee "$out/graft.json"
torch >"$out/torch2.json"
cat "$out"/torch*.json
epochs() {  # dtype native -> the best epoch time after the first
  GRAFT_NATIVE_BF16=$2 "$build/examples/train_fashion_mnist" --epochs 3 --dtype "$1" --out "$out/run" | tr '\r' '\n' |
    sed -n 's/^epoch [2-9]: \([0-9.]*\) s,.*/\1/p' | sort -n | head -1
}
for r in 1 2; do
  echo "$(epochs f32 1) $(epochs bf16 1) $(epochs bf16 0)" >>"$out/epochs.txt"
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
d = sys.argv[1]
g = {}
for line in open(f"{d}/graft.json"):
    if line.startswith("{"):
        o = json.loads(line); g[o["name"]] = o
torch = [json.loads(l)["value"] / 1e6 for f in ("torch1.json", "torch2.json") for l in open(f"{d}/{f}") if l.startswith("{")]
ep = [list(map(float, l.split())) for l in open(f"{d}/epochs.txt") if l.strip()]
f32, nat, via = (statistics.median(e[i] for e in ep) for i in range(3))
print()
print(f"{'figure':58s} {'value':>9s}  goal")
def row(name, v, goal=""):
    print(f"{name:58s} {v:9.3f}  {goal}")
row("MLP epoch f32, s (main job, best after the first)", f32)
row("MLP epoch bf16 / f32 (native bf16)", nat / f32, "<= 0.6")
row("MLP epoch bf16 / f32 (forced f32 route)", via / f32, "<= 1.0")
row("MLP step bf16 / f32 (native, paired rounds)", g["mlp_bf16/f32"]["value"], "")
row("MLP step bf16 / f32 (f32 route, paired rounds)", g["mlp_bf16_via_f32/f32"]["value"], "")
row("CNN step f32 (batch 32), ms", g["cnn_f32_step_ms"]["value"])
row("CNN step bf16 / f32 (native, paired rounds)", g["cnn_bf16/f32"]["value"], "")
row("CNN step bf16 / f32 (f32 route, paired rounds)", g["cnn_bf16_via_f32/f32"]["value"], "<= 1.0")
row("transformer step f32, ms", g["transformer_f32_step_ms"]["value"])
row("transformer step bf16 / f32 (native, paired rounds)", g["transformer_bf16/f32"]["value"], "<= 0.7")
row("transformer step bf16 / f32 (f32 route, paired rounds)", g["transformer_bf16_via_f32/f32"]["value"], "<= 1.0")
row("attention fwd+bwd [8,128,4,32] causal, f32, us", g["attention_fwd_bwd_f32_us"]["value"])
row("attention fwd+bwd bf16 / f32 (paired rounds)", g["attention_bf16/f32"]["value"], "")
row("attention fwd+bwd f16 / f32 (paired rounds)", g["attention_f16/f32"]["value"], "")
row("transformer f32 step, share of the sgemm roofline", g["transformer_f32_gemm_roofline_share"]["value"], ">= 0.7")
print(f"{'  (step GFLOP; sgemm 1024^3 GFLOP/s)':58s} {g['transformer_f32_gemm_roofline_share']['gflop']:9.3f}  {g['sgemm_1024_gflops']['value']:.0f}")
if torch:
    t = min(torch)
    row("PyTorch transformer step, ms (best of before/after)", t * 1e3)
    row("transformer step f32 / PyTorch", g["transformer_f32_step_ms"]["value"] / 1e3 / t, "<= 0.3")
PY
rm -rf "$out"

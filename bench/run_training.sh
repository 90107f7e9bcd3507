#!/usr/bin/env bash
# The main job's speed next to PyTorch, in one run: MLP (784-512-512-10, Adam, batch 128) and CNN
# epochs of examples/train_fashion_mnist, and ../shared/peers/torch_bench.py in its best
# configuration (OMP_WAIT_POLICY=PASSIVE). Prints seconds per epoch and the ratios.
#   bench/run_training.sh [build-dir] [peers-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
peers=${2:-$root/../shared/peers}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target train_fashion_mnist >/dev/null
out=$(mktemp -d)
epoch_times() {  # model epochs -> the epoch seconds, one per line
  "$build/examples/train_fashion_mnist" --model "$1" --epochs "$2" --batch-size 128 --out "$out/$1" | tr '\r' '\n' |
    sed -n 's/^epoch [0-9]*: \([0-9.]*\) s,.*test accuracy \([0-9.]*\).*/\1 \2/p'
}
mlp=$(epoch_times mlp 3)
cnn=$(epoch_times cnn 2)
torch=$(OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$peers/torch_bench.py" --only mlp_epoch,cnn_step 2>/dev/null | grep '^{')
/usr/bin/python3 - "$mlp" "$cnn" "$torch" <<'PY'
import json, sys
mlp = [tuple(map(float, l.split())) for l in sys.argv[1].splitlines() if l.strip()]
cnn = [tuple(map(float, l.split())) for l in sys.argv[2].splitlines() if l.strip()]
t = {}
for line in sys.argv[3].splitlines():
    r = json.loads(line)
    t[r["name"]] = r["value"]
g_mlp = min(s for s, _ in mlp[1:]) if len(mlp) > 1 else mlp[0][0]  # first epoch includes tracing
g_cnn = min(s for s, _ in cnn[1:]) if len(cnn) > 1 else cnn[0][0]
t_mlp = t.get("mlp_epoch_adam")
t_cnn = t.get("cnn_step_ms_adam", 0) * 469 / 1000  # 469 steps of 128 per epoch
print(f"{'epoch (Adam, batch 128)':26s} {'graft s':>8s} {'PyTorch s':>10s} {'graft/PyTorch':>14s}")
print(f"{'MLP 784-512-512-10':26s} {g_mlp:8.2f} {t_mlp:10.2f} {g_mlp / t_mlp:14.2f}")
print(f"{'CNN (2 conv+pool, 2 dense)':26s} {g_cnn:8.2f} {t_cnn:10.2f} {g_cnn / t_cnn:14.2f}")
print(f"graft test accuracy: MLP after {len(mlp)} epochs {mlp[-1][1]:.4f}, CNN after {len(cnn)} epochs {cnn[-1][1]:.4f}")
PY
rm -rf "$out"

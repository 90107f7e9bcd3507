#!/usr/bin/env bash
# The main job's checkpoints: a run killed after epoch 2 and resumed, and a run killed in the middle of
# saving its epoch-3 checkpoint and resumed, both end with the bits of an uninterrupted run.
# Usage: resume.sh <train_fashion_mnist> <kill_in_write.so> <scratch dir>
set -euo pipefail
train=$1 shim=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
args=(--epochs 5 --limit 3000 --batch-size 100)

"$train" "${args[@]}" --out "$dir/whole" > "$dir/whole.log"

# 1. killed (SIGKILL) as soon as epoch 2's checkpoint is written, then resumed for the 3 epochs left
"$train" "${args[@]}" --out "$dir/killed" > "$dir/killed.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q "checkpoint: epoch 2 saved" "$dir/killed.log" && break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
grep -q "checkpoint: epoch 2 saved" "$dir/killed.log" || { echo "FAIL: no epoch-2 checkpoint"; cat "$dir/killed.log"; exit 1; }
[ ! -e "$dir/killed/model.safetensors" ] || { echo "FAIL: the killed run finished first"; exit 1; }
"$train" "${args[@]}" --resume "$dir/killed" > "$dir/resumed.log"
grep -q "resuming from .* after epoch [2-4] of 5" "$dir/resumed.log" || { echo "FAIL: did not resume"; cat "$dir/resumed.log"; exit 1; }
cmp "$dir/whole/model.safetensors" "$dir/killed/model.safetensors" || { echo "FAIL: resumed parameters differ"; exit 1; }

# 2. killed halfway through writing epoch 3's checkpoint: epoch 2's stays whole and is resumed from
status=0
# (an ASan build must be told that its runtime may come after the preloaded shim)
GRAFT_KILL_IN_WRITE="checkpoint.safetensors.tmp:3" LD_PRELOAD="$shim" ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
  "$train" "${args[@]}" --out "$dir/midsave" > "$dir/midsave.log" 2>&1 || status=$?
[ "$status" -eq 137 ] || { echo "FAIL: expected death by SIGKILL (137), got $status"; cat "$dir/midsave.log"; exit 1; }
grep -q "checkpoint: epoch 2 saved" "$dir/midsave.log" && ! grep -q "checkpoint: epoch 3 saved" "$dir/midsave.log" ||
  { echo "FAIL: the kill did not land in epoch 3's save"; cat "$dir/midsave.log"; exit 1; }
"$train" "${args[@]}" --resume "$dir/midsave" > "$dir/midsave_resumed.log"
grep -q "after epoch 2 of 5" "$dir/midsave_resumed.log" || { echo "FAIL: not resumed from epoch 2"; cat "$dir/midsave_resumed.log"; exit 1; }
cmp "$dir/whole/model.safetensors" "$dir/midsave/model.safetensors" || { echo "FAIL: parameters differ after a mid-save kill"; exit 1; }

# 3. a resume with other settings is refused
if "$train" --epochs 5 --limit 3000 --batch-size 50 --resume "$dir/killed" > "$dir/bad.log" 2>&1; then
  echo "FAIL: resumed with another batch size"; exit 1
fi
grep -q "batch_size = 100, this run has 50" "$dir/bad.log" || { echo "FAIL: unclear refusal"; cat "$dir/bad.log"; exit 1; }
if "$train" "${args[@]}" --dtype bf16 --resume "$dir/killed" > "$dir/bad.log" 2>&1; then
  echo "FAIL: resumed an f32 run in bf16"; exit 1
fi
grep -q "dtype = f32, this run has bf16" "$dir/bad.log" || { echo "FAIL: unclear dtype refusal"; cat "$dir/bad.log"; exit 1; }

# 4. mixed precision (--dtype bf16: bf16 compute, f32 master weights) learns as f32 does
"$train" "${args[@]}" --dtype bf16 --out "$dir/bf16" > "$dir/bf16.log"
acc=$(grep -o "epoch 5: .*test accuracy [0-9.]*" "$dir/bf16.log" | grep -o "[0-9.]*$")
ref=$(grep -o "epoch 5: .*test accuracy [0-9.]*" "$dir/whole.log" | grep -o "[0-9.]*$")
awk -v a="$acc" -v r="$ref" 'BEGIN { exit !(a > 0.7 && a > r - 0.02) }' ||
  { echo "FAIL: bf16 reached $acc, f32 $ref"; cat "$dir/bf16.log"; exit 1; }
rm -rf "$dir"
echo "resume: bit-identical after a kill between epochs and a kill while saving; bf16 reached $acc (f32 $ref)"

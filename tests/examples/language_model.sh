#!/usr/bin/env bash
# The main job's language model (--model transformer, on Debian's license texts): it learns (test
# accuracy well above the most frequent byte's share), writes a sample, resumes a killed run to the
# same bits, exports a program graft-run runs to the same predictions, and refuses settings that do not
# apply to it.
# Usage: language_model.sh <train_fashion_mnist> <graft-run> <scratch dir>
set -euo pipefail
train=$1 run=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
args=(--model transformer --epochs 3 --limit 20000 --seq-len 32)

"$train" "${args[@]}" --out "$dir/whole" > "$dir/whole.log"
grep -q "^text: 20000 training / .* test bytes of .* files, windows of 32" "$dir/whole.log" ||
  { echo "FAIL: header"; cat "$dir/whole.log"; exit 1; }
acc=$(grep -o "epoch 3: .*test accuracy [0-9.]*" "$dir/whole.log" | grep -o "[0-9.]*$")
# a space, the most frequent byte, is about 15% of the text
awk -v a="$acc" 'BEGIN { exit !(a > 0.25) }' || { echo "FAIL: test accuracy $acc"; cat "$dir/whole.log"; exit 1; }
grep -q "bits/byte" "$dir/whole.log" || { echo "FAIL: no test loss"; exit 1; }
grep -A1 "^sample (temperature 0.8):" "$dir/whole.log" | grep -q "^This License" || { echo "FAIL: no sample"; cat "$dir/whole.log"; exit 1; }

# killed after epoch 1's checkpoint, resumed: the same parameters as the uninterrupted run
"$train" "${args[@]}" --out "$dir/killed" > "$dir/killed.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q "checkpoint: epoch 1 saved" "$dir/killed.log" && break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
if [ ! -e "$dir/killed/model.safetensors" ]; then
  "$train" "${args[@]}" --resume "$dir/killed" > "$dir/resumed.log"
  grep -q "resuming from .* after epoch [12] of 3" "$dir/resumed.log" || { echo "FAIL: did not resume"; cat "$dir/resumed.log"; exit 1; }
fi
cmp "$dir/whole/model.safetensors" "$dir/killed/model.safetensors" || { echo "FAIL: resumed parameters differ"; exit 1; }

# the exported next-byte program: graft-run gives the training process's logits and predictions
s=$dir/whole/sample.safetensors
"$run" "$dir/whole/model.graft" --input "$s" --expect "$s" > "$dir/run.log" 2>&1 || { echo "FAIL: graft-run"; cat "$dir/run.log"; exit 1; }

# settings that do not apply
refuse() {
  local words=$1
  shift
  if "$@" > "$dir/bad.log" 2>&1; then echo "FAIL: accepted $*"; exit 1; fi
  grep -qF -- "$words" "$dir/bad.log" || { echo "FAIL: '$words' not in:"; cat "$dir/bad.log"; exit 1; }
}
refuse "--flip flips images" "$train" --model transformer --flip --out "$dir/bad"
refuse "--seq-len applies to --model transformer" "$train" --model mlp --seq-len 64 --out "$dir/bad"
refuse "no-such-file" "$train" --model transformer --text "$dir/no-such-file" --out "$dir/bad"
refuse "is f32[32,128], the model expects f32[64,128]" "$train" --model transformer --epochs 3 --limit 20000 --seq-len 64 --resume "$dir/whole"
rm -rf "$dir"
echo "language model: test accuracy $acc after 3 short epochs; resumed to the same bits; export runs in graft-run"

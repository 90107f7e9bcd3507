#!/usr/bin/env bash
# The main job exports its trained classifier; graft-run, a separate process without the model's code,
# gives the same predictions (bit for bit) as the training process, from safetensors and .npz files.
# Usage: export.sh <train_fashion_mnist> <graft-run> <scratch dir>
set -uo pipefail
train=$1 run=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
fails=0
check() {  # check <description> <command...>: must succeed
  local what=$1
  shift
  if ! "$@" > "$dir/out.log" 2>&1; then echo "FAIL: $what"; cat "$dir/out.log"; fails=$((fails + 1)); fi
}
refuse() {  # refuse <words> <command...>: exit status 1 with the words on stderr
  local words=$1
  shift
  "$@" > "$dir/out.log" 2> "$dir/err.log"
  local st=$?
  if [ "$st" -ne 1 ] || ! grep -qF -- "$words" "$dir/err.log"; then
    echo "FAIL: $* -> status $st, expected 1 and '$words'"; cat "$dir/err.log"; fails=$((fails + 1))
  fi
}
for model in mlp cnn; do
  check "train $model" "$train" --model $model --epochs 1 --limit 600 --out "$dir/$model"
  m=$dir/$model/model.graft s=$dir/$model/sample.safetensors
  check "$model: graft-run's predictions are the training process's" "$run" "$m" --input "$s" --expect "$s"
  check "$model: to .npz" "$run" "$m" --input "$s" --output "$dir/$model/y.npz"
  check "$model: .npz read back" "$run" "$m" --input "$s" --expect "$dir/$model/y.npz"
  check "$model: --onnx" "$run" "$m" --onnx "$dir/$model/model.onnx"
  if /usr/bin/python3 -c "import onnx" 2>/dev/null; then
    check "$model: the ONNX model passes onnx's checker" /usr/bin/python3 -c \
      "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)" "$dir/$model/model.onnx"
  fi
  check "$model: --print" "$run" "$m" --print
  grep -q "images: u8\[100,28,28\]" "$dir/out.log" || { echo "FAIL: --print shows no signature"; fails=$((fails + 1)); }
done
# any number of images in calls of 100 (the last padded): rows equal to whole-batch calls
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  /usr/bin/python3 -c "import numpy as np; np.save('$dir/x250.npy', np.random.default_rng(0).integers(0, 256, (250, 28, 28)).astype(np.uint8)); np.save('$dir/x100.npy', np.load('$dir/x250.npy')[150:250])"
  check "--split-batch" "$run" "$dir/mlp/model.graft" --input "$dir/x250.npy" --split-batch --output "$dir/y250.npz"
  check "--split-batch: one whole call" "$run" "$dir/mlp/model.graft" --input "$dir/x100.npy" --output "$dir/y100.npz"
  # rows 150..249 came from two calls (the second padded); here from one
  check "--split-batch: the rows are those of a whole call" /usr/bin/python3 -c "
import numpy as np
a, b = np.load('$dir/y250.npz'), np.load('$dir/y100.npz')
assert a['logits'].shape == (250, 10) and b['logits'].shape == (100, 10)
assert np.allclose(a['logits'][150:], b['logits'], rtol=1e-5, atol=1e-5)
assert np.array_equal(a['labels'][150:], b['labels'])"
fi
refuse "has no array 'images'" "$run" "$dir/mlp/model.graft" --input "$dir/mlp/model.safetensors"
refuse "the program takes inputs" "$run" "$dir/mlp/model.graft"
refuse "not an exported graft program" "$run" "$dir/mlp/model.safetensors" --print
# a prediction that differs is reported, with status 1
"$run" "$dir/cnn/model.graft" --input "$dir/mlp/sample.safetensors" --output "$dir/other.safetensors" > /dev/null 2>&1
refuse "output 'logits'" "$run" "$dir/mlp/model.graft" --input "$dir/mlp/sample.safetensors" --expect "$dir/other.safetensors"
[ $fails -eq 0 ] && echo "export: all checks passed"
exit $fails

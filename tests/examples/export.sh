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
refuse "has no array 'images'" "$run" "$dir/mlp/model.graft" --input "$dir/mlp/model.safetensors"
refuse "the program takes inputs" "$run" "$dir/mlp/model.graft"
refuse "not an exported graft program" "$run" "$dir/mlp/model.safetensors" --print
# a prediction that differs is reported, with status 1
"$run" "$dir/cnn/model.graft" --input "$dir/mlp/sample.safetensors" --output "$dir/other.safetensors" > /dev/null 2>&1
refuse "output 'logits'" "$run" "$dir/mlp/model.graft" --input "$dir/mlp/sample.safetensors" --expect "$dir/other.safetensors"
[ $fails -eq 0 ] && echo "export: all checks passed"
exit $fails

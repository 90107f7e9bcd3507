#!/usr/bin/env bash
# The main job refuses bad settings and bad data before training, with a message and exit status 1
# (it used to abort after the whole run, or train garbage and save it with status 0).
# Usage: bad_input.sh <train_fashion_mnist> <scratch dir>
set -uo pipefail
train=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
fails=0
expect() {  # expect <words> <args...>: exit status 1, the words on stderr, nothing trained or saved
  local words=$1
  shift
  "$train" "$@" > "$dir/out.log" 2> "$dir/err.log"
  local st=$?
  if [ "$st" -ne 1 ] || ! grep -qF -- "$words" "$dir/err.log" || grep -q "^epoch 1:" "$dir/out.log"; then
    echo "FAIL: $* -> status $st, expected 1 and '$words'"; cat "$dir/err.log"; fails=$((fails + 1))
  fi
}
touch "$dir/a_file"
expect "exists and is not a directory" --out "$dir/a_file"
expect "unknown device 'tpu'" --device tpu --out "$dir/r"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi >/dev/null 2>&1; then  # no GPU here: the reason, before training
  expect "--device cuda: " --device cuda --out "$dir/r"
fi
expect "--lr must be a finite positive number" --lr nan --out "$dir/r"
expect "--lr must be a finite positive number" --lr inf --out "$dir/r"
expect "--lr must be a finite positive number" --lr -1 --out "$dir/r"
expect "--dropout must be in [0, 0.95]" --model cnn --dropout nan --out "$dir/r"
expect "--dropout must be in [0, 0.95]" --model cnn --dropout 2 --out "$dir/r"
expect "larger than the training set" --batch-size 100000 --out "$dir/r"
expect "larger than the training set" --limit 100 --batch-size 128 --out "$dir/r"

expect "cannot open" --resume "$dir/nowhere" --out "$dir/r"
# a dataset whose labels leave the 10 classes (labels 0..11 used to train to loss 0)
data=$dir/data
mkdir -p "$data"
idx() {  # idx <file> <magic bytes (printf escapes)> <payload bytes> : a gzip IDX file
  { printf "$2"; head -c "$3" /dev/zero | tr '\0' '\013'; } | gzip > "$data/$1"
}
idx train-images-idx3-ubyte.gz '\0\0\010\003\0\0\0\002\0\0\0\034\0\0\0\034' $((2 * 784))
idx t10k-images-idx3-ubyte.gz '\0\0\010\003\0\0\0\002\0\0\0\034\0\0\0\034' $((2 * 784))
idx train-labels-idx1-ubyte.gz '\0\0\010\001\0\0\0\002' 2   # two labels of 11
idx t10k-labels-idx1-ubyte.gz '\0\0\010\001\0\0\0\002' 2
expect "outside the 10 classes" --data "$data" --batch-size 1 --out "$dir/r"
[ ! -e "$dir/r/model.safetensors" ] || { echo "FAIL: a model was saved"; fails=$((fails + 1)); }
rm -rf "$dir"
[ "$fails" -eq 0 ] && echo "bad input: every case refused with status 1 and a message"
exit $((fails > 0))

#!/usr/bin/env bash
# The main job, data parallel: 2 MPI ranks (each global batch split over them, the gradient averaged
# inside the jitted step) follow the single-process run: the same losses and accuracy to float
# reordering. Only rank 0 writes.
# Usage: data_parallel.sh <mpiexec> <train_fashion_mnist> <scratch dir>
set -euo pipefail
mpiexec=$1 train=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
args=(--epochs 2 --limit 4096 --batch-size 128 --optimizer sgd --lr 0.05 --schedule constant)
"$train" "${args[@]}" --out "$dir/one" > "$dir/one.log"
export OMPI_MCA_btl_vader_single_copy_mechanism=none
"$mpiexec" -np 2 --oversubscribe --allow-run-as-root -x GRAFT_NUM_THREADS=1 \
  "$train" "${args[@]}" --out "$dir/two" > "$dir/two.log"
grep -q "data parallel over 2 processes" "$dir/two.log" || { echo "FAIL: not data parallel"; cat "$dir/two.log"; exit 1; }
[ "$(grep -c "^Fashion-MNIST" "$dir/two.log")" = 1 ] || { echo "FAIL: more than rank 0 printed"; exit 1; }
[ -s "$dir/two/model.safetensors" ] || { echo "FAIL: rank 0 wrote no model"; exit 1; }
# "epoch 2: ... train loss L, test accuracy A" of both runs
read -r l1 a1 < <(sed -n 's/.*epoch 2: .*train loss \([0-9.]*\), test accuracy \([0-9.]*\).*/\1 \2/p' "$dir/one.log")
read -r l2 a2 < <(sed -n 's/.*epoch 2: .*train loss \([0-9.]*\), test accuracy \([0-9.]*\).*/\1 \2/p' "$dir/two.log")
echo "one process: loss $l1 accuracy $a1; two processes: loss $l2 accuracy $a2"
awk -v l1="$l1" -v l2="$l2" -v a1="$a1" -v a2="$a2" 'BEGIN {
  d = l1 - l2; if (d < 0) d = -d; e = a1 - a2; if (e < 0) e = -e;
  if (l1 == "" || l2 == "" || d > 0.005 || e > 0.005) { print "FAIL: the runs differ"; exit 1 } }'
echo "ok"

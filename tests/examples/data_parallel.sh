#!/usr/bin/env bash
# The main job, data parallel: 2 MPI ranks (each global batch split over them, the gradient averaged
# inside the jitted step) follow the single-process run: the same losses and accuracy to float
# reordering; so does sharded jit across the ranks (--mesh). Only rank 0 writes.
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
same() {
  awk -v l1="$l1" -v l2="$l2" -v a1="$a1" -v a2="$a2" 'BEGIN {
    d = l1 - l2; if (d < 0) d = -d; e = a1 - a2; if (e < 0) e = -e;
    if (l1 == "" || l2 == "" || d > 0.005 || e > 0.005) { print "FAIL: the runs differ"; exit 1 } }'
}
echo "one process: loss $l1 accuracy $a1; two processes: loss $l2 accuracy $a2"
same
# sharded jit across the processes (--mesh under mpirun: each process passes its blocks): FSDP over
# 'data', and Megatron's layers over 'model' (every process sees the whole batch)
for layout in "data=2 --fsdp" "model=2"; do
  name=${layout//[ =,-]/_}
  # shellcheck disable=SC2086
  "$mpiexec" -np 2 --oversubscribe --allow-run-as-root -x GRAFT_NUM_THREADS=1 \
    "$train" "${args[@]}" --mesh $layout --out "$dir/$name" > "$dir/$name.log"
  grep -q "across 2 processes (MPI)" "$dir/$name.log" || { echo "FAIL: $layout is not sharded"; cat "$dir/$name.log"; exit 1; }
  [ -s "$dir/$name/model.safetensors" ] || { echo "FAIL: --mesh $layout wrote no model"; exit 1; }
  read -r l2 a2 < <(tr '\r' '\n' < "$dir/$name.log" | sed -n 's/^epoch 2: .*train loss \([0-9.]*\), test accuracy \([0-9.]*\).*/\1 \2/p')
  echo "one process: loss $l1 accuracy $a1; --mesh $layout over two processes: loss $l2 accuracy $a2"
  same
done
echo "ok"

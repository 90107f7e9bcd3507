#!/usr/bin/env bash
# The main job under sharded jit: the transformer language model over a 2 x 2 mesh of this process's
# devices with its layouts as annotations only (batches over 'data', Megatron over 'model', and FSDP)
# follows the plain run (losses and accuracy to float reordering); mistakes are errors that say what
# to do.
# Usage: sharded.sh <train_fashion_mnist> <scratch dir>
set -euo pipefail
train=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
args=(--model transformer --epochs 2 --limit 40000 --batch-size 8)
export GRAFT_CPU_DEVICES=4
"$train" "${args[@]}" --out "$dir/plain" > "$dir/plain.log"
metrics() { tr '\r' '\n' < "$1" | sed -n 's/^epoch 2: .*train loss \([0-9.]*\), test accuracy \([0-9.]*\).*/\1 \2/p'; }
read -r l0 a0 < <(metrics "$dir/plain.log")
# the last run's loss $l and accuracy $a within float reordering of the plain run's
same_as_plain() {
  awk -v l0="$l0" -v l="$l" -v a0="$a0" -v a="$a" 'BEGIN {
    d = l0 - l; if (d < 0) d = -d; e = a0 - a; if (e < 0) e = -e;
    if (l0 == "" || l == "" || d > 0.005 || e > 0.005) { print "FAIL: the runs differ"; exit 1 } }'
}
for layout in "data=4" "data=2,model=2" "data=2,model=2 --fsdp"; do
  name=${layout//[ =,-]/_}
  # shellcheck disable=SC2086
  "$train" "${args[@]}" --mesh $layout --out "$dir/$name" > "$dir/$name.log"
  grep -q "sharded jit over Mesh" "$dir/$name.log" || { echo "FAIL: $layout is not sharded"; cat "$dir/$name.log"; exit 1; }
  read -r l a < <(metrics "$dir/$name.log")
  echo "plain: loss $l0 accuracy $a0; --mesh $layout: loss $l accuracy $a"
  same_as_plain
done
# automatic layouts: the replicated parameters and Adam state (5.7 MB) exceed the 3 MB limit, so the
# search splits some; training follows the plain run
GRAFT_DEVICE_MEMORY=3M "$train" "${args[@]}" --mesh data=4 --auto --out "$dir/auto" > "$dir/auto.log"
grep -q "automatic sharding over Mesh('data': 4)" "$dir/auto.log" || { echo "FAIL: no plan printed"; cat "$dir/auto.log"; exit 1; }
grep -q "P('data'" "$dir/auto.log" || { echo "FAIL: the plan splits nothing under the limit"; cat "$dir/auto.log"; exit 1; }
read -r l a < <(metrics "$dir/auto.log")
echo "plain: loss $l0 accuracy $a0; --mesh data=4 --auto (3M per device): loss $l accuracy $a"
same_as_plain
# errors: too few devices, an axis the layouts do not know, --fsdp without a data axis
expect_error() {
  local want=$1; shift
  if [ "$1" = env ]; then
    if GRAFT_CPU_DEVICES=2 "$@" --out "$dir/err" > "$dir/err.log" 2>&1; then echo "FAIL: $* succeeded"; exit 1; fi
  elif GRAFT_CPU_DEVICES=2 "$train" "$@" --out "$dir/err" > "$dir/err.log" 2>&1; then echo "FAIL: $* succeeded"; exit 1; fi
  grep -q "$want" "$dir/err.log" || { echo "FAIL: $* did not say '$want'"; cat "$dir/err.log"; exit 1; }
}
expect_error "run with GRAFT_CPU_DEVICES=4" "${args[@]}" --mesh data=2,model=2
expect_error "name an axis 'data' or 'model'" "${args[@]}" --mesh rows=2
expect_error "which --mesh lacks" "${args[@]}" --mesh model=2 --fsdp
expect_error "no layout found that fits" env GRAFT_DEVICE_MEMORY=1K "$train" "${args[@]}" --mesh data=2 --auto
echo "ok"

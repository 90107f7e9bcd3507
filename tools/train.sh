#!/usr/bin/env bash
# Sets up and runs the main job: trains the MLP 784-512-512-10 on Fashion-MNIST.
# Usage: tools/train.sh [--nproc N [--hosts H1:S1,H2:S2]] [train_fashion_mnist options, e.g. --epochs 5]
#   --nproc N   data parallel over N processes (mpirun -np N): each global batch split over the ranks
#   --hosts L   run them on several machines (mpirun -H L: host:slots, comma separated; every machine
#               needs this checkout built at the same path and passwordless ssh from this one)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
nproc=1
hosts=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nproc) nproc=$2; shift 2 ;;
    --nproc=*) nproc=${1#--nproc=}; shift ;;
    --hosts) hosts=$2; shift 2 ;;
    --hosts=*) hosts=${1#--hosts=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
"$root/tools/deps.sh" dataset-fashion-mnist
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target train_fashion_mnist
if [ "$nproc" = 1 ]; then
  exec "$build/examples/train_fashion_mnist" "${args[@]}"
fi
root_flag=()
[ "$(id -u)" -eq 0 ] && root_flag=(--allow-run-as-root)
# (containers forbid the cross-process copy mechanism of OpenMPI's shared-memory transport)
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# the ranks on one machine share its cores: threads per rank = cores / ranks per machine
per_host=$nproc
host_flag=()
if [ -n "$hosts" ]; then
  host_flag=(-H "$hosts")
  nhosts=$(echo "$hosts" | tr ',' '\n' | grep -c .)
  per_host=$(( (nproc + nhosts - 1) / nhosts ))
fi
threads=$(( $(command nproc) / per_host ))
[ "$threads" -ge 1 ] || threads=1
exec mpirun -np "$nproc" "${host_flag[@]}" --oversubscribe "${root_flag[@]}" \
  -x OMPI_MCA_btl_vader_single_copy_mechanism -x GRAFT_NUM_THREADS="${GRAFT_NUM_THREADS:-$threads}" \
  "$build/examples/train_fashion_mnist" --distributed "${args[@]}"

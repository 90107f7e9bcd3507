#!/usr/bin/env bash
# Distributed benchmarks beside their peers, in one run (2 processes x 1 thread on this machine):
#   - bench_distributed under mpirun -np 2: graft's psum of 1 KiB .. 64 MiB against a bare
#     MPI_Allreduce of the same bytes (and MPI_Iallreduce + MPI_Wait, the call graft makes), and the
#     MLP's data-parallel step with its communication fraction;
#   - bench/torch_ddp.py: PyTorch's DistributedDataParallel over gloo, the same model and global batch.
# graft and PyTorch alternate twice (the machine drifts); prints the JSON lines, then the tables.
#   bench/run_distributed.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
"$root/tools/deps.sh" libbenchmark-dev python3-torch openmpi-bin libopenmpi-dev >/dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target bench_distributed >/dev/null
out=$(mktemp -d)
export OMPI_MCA_btl_vader_single_copy_mechanism=none GRAFT_NUM_THREADS=1 OMP_NUM_THREADS=1
mpi=(mpirun -np 2 --oversubscribe --allow-run-as-root --bind-to none)
"${mpi[@]}" "$build/bench/bench_distributed" psum | tee "$out/psum.json"
for round in 1 2; do
  "${mpi[@]}" "$build/bench/bench_distributed" step | tee -a "$out/step.json"
  /usr/bin/python3 "$root/bench/torch_ddp.py" 2 | tee -a "$out/step.json"
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(f"{d}/psum.json") if l.startswith("{")]
print()
print(f"{'psum, 2 processes':>18s} {'graft us':>10s} {'MPI us':>10s} {'Iallred us':>10s} {'graft GB/s':>11s} {'MPI GB/s':>9s} {'bw ratio':>9s}")
for r in rows:
    b = r["bytes"]
    size = f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"
    print(f"{size:>18s} {r['graft_us']:10.1f} {r['mpi_us']:10.1f} {r['mpi_nb_us']:10.1f} {r['graft_GBps']:11.3f} {r['mpi_GBps']:9.3f} "
          f"{r['graft_GBps'] / r['mpi_GBps']:9.2f}")
steps = [json.loads(l) for l in open(f"{d}/step.json") if l.startswith("{")]
g = [s for s in steps if s["name"] == "dp_mlp_step"]
t = [s for s in steps if s["name"] == "torch_ddp_mlp_step"]
print()
print(f"{'MLP data-parallel step (2 x 1 thread)':40s} {'graft us':>9s} {'DDP us':>9s} {'ratio':>6s} {'graft comm':>10s}")
for a, b in zip(g, t):
    print(f"{'round':40s} {a['step_us']:9.0f} {b['step_us']:9.0f} {a['step_us'] / b['step_us']:6.2f} "
          f"{a['comm_fraction']:10.2f}")
PY
rm -rf "$out"

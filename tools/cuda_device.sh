#!/usr/bin/env bash
# Runs graft's GPU checks on a machine with an NVIDIA GPU (a lent one: the device tool), in one command.
# Two ways to get the binaries:
#   tools/device_pack.sh                      # here: builds them (no GPU needed) into .devcarry/
#   device run: bash tools/cuda_device.sh .devcarry      (carry: [".devcarry"], timeout 600)
# or build them there (minutes of the lent machine's time):
#   tools/device_debs.sh                      # here, once: the packages the lent machine lacks, into .debs/
#   device run: bash tools/cuda_device.sh --build        (carry: [".debs"], timeout 600)
# --build unpacks .debs/ into a prefix and builds test_cuda, bench_cuda and the main job with the CUDA
# toolkit there (no LLVM, oneDNN, OpenBLAS, MPI or Python: the GPU path needs none of them).
# Then the stages named in STAGES (default "tests train bench"; add "sanitize", "jaxvalues"), each with its own time
# limit, logs under $OUT: the GPU tests in SHARDS processes at once (every conformance row on the GPU,
# jit's fused kernels, placement, memory, NCCL at world size 1; they check values, not speed), the main
# job on the GPU (MLP f32 and bf16 for EPOCHS epochs, the CNN and the transformer on a slice), the
# figures (bench_cuda beside PyTorch, bench/torch_cuda.py, and JAX, bench/jax_cuda.py), and the GPU tests
# under compute-sanitizer memcheck, racecheck and synccheck with the caching allocator off.
# Files under $OUT: build.log, test_cuda.log, failures.txt, train.log, bench.txt, sanitizer_<tool>.log.
# GPU_FILTER and SANITIZE_FILTER choose tests; TORCH_COMPILE=0 skips torch.compile's peers.
# Usage: tools/cuda_device.sh [--build] [build dir] [out dir]
set -uo pipefail
do_build=0
if [ "${1:-}" = "--build" ]; then do_build=1; shift; fi
build=${1:-build-dev}
out=${2:-${OUT:-/tmp/graft-cuda}}
stages=" ${STAGES:-tests train bench} "
mkdir -p "$out"
prefix=/tmp/graft-prefix
export PATH=/usr/local/cuda/bin:$PATH
if [ "$do_build" = 1 ]; then
  mkdir -p "$prefix"
  for f in .debs/*.deb; do dpkg -x "$f" "$prefix"; done
  # zlib1g-dev's libz.so names the system's file by an absolute path: the prefix's own instead
  ln -sf "$(ls "$prefix"/lib/x86_64-linux-gnu/libz.so.1.* | head -1)" "$prefix/usr/lib/x86_64-linux-gnu/libz.so"
  cmake -S . -B "$build" -G "$(command -v ninja >/dev/null && echo Ninja || echo 'Unix Makefiles')" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix/usr" -DGRAFT_NATIVE=OFF -DGRAFT_WITH_LLVM=OFF \
    -DGRAFT_WITH_DNNL=OFF -DGRAFT_WITH_BLAS=OFF -DGRAFT_WITH_MPI=OFF -DGRAFT_WITH_PYTHON=OFF \
    -DGTest_DIR="$prefix/usr/lib/x86_64-linux-gnu/cmake/GTest" -DZLIB_ROOT="$prefix/usr" > /tmp/graft-configure.log 2>&1 ||
    { tail -30 /tmp/graft-configure.log; exit 1; }
  cmake --build "$build" -j "$(nproc)" --target test_cuda bench_cuda train_fashion_mnist > "$out/build.log" 2>&1 ||
    { grep -E "error|Error" "$out/build.log" | head -30; exit 1; }
  echo "built in $SECONDS s"
fi
export LD_LIBRARY_PATH=$PWD/$build/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
if ldd "$build/tests/test_cuda" | grep -q "not found"; then  # CUDA's libraries elsewhere (Python's wheels)
  for l in $(ldd "$build/tests/test_cuda" | awk '/not found/ {print $1}'); do
    d=$(find /usr /opt -name "$l" -print -quit 2>/dev/null)
    [ -n "$d" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$d")
  done
fi
export GRAFT_CUDA_CACHE_DIR=/tmp/graft-cuda-kernels
data=$prefix/usr/share/datasets/fashion-mnist
[ -d "$build/data" ] && data=$build/data
text=()
[ -d "$build/text" ] && text=(--text "$build/text")
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/bench.txt"
if ! "$build/tests/test_cuda" --gtest_list_tests > /dev/null 2> "$out/build.log"; then
  echo "the GPU tests do not start:"; head -5 "$out/build.log"; ldd "$build/tests/test_cuda" | grep "not found"; exit 1
fi
status=0
if [[ $stages == *" tests "* ]]; then
  shards=${SHARDS:-8}
  echo "== test_cuda in $shards processes (timeout ${TEST_TIMEOUT:-240} s)"
  for i in $(seq 0 $((shards - 1))); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${TEST_TIMEOUT:-240}" "$build/tests/test_cuda" --gtest_brief=1 \
      --gtest_filter="${GPU_FILTER:-Cuda*:*CudaConformance.*-CudaKernels.*}" > "/tmp/test_cuda.$i.log" 2>&1 &
  done
  wait
  cat /tmp/test_cuda.*.log > "$out/test_cuda.log"
  grep -E "^\[  FAILED  \]|Failure|timed out|Segmentation|Aborted|terminate called" "$out/test_cuda.log" | sort -u > "$out/failures.txt"
  grep -h -E "^\[  PASSED  \]|FAILED TEST|primitives run through the host" /tmp/test_cuda.*.log
  grep -c "^\[  FAILED  \]" "$out/test_cuda.log" | sed 's/^/failed: /'
  for i in $(seq 0 $((shards - 1))); do grep -q -E "tests? from .* ran" "/tmp/test_cuda.$i.log" || echo "shard $i did not finish"; done
  grep -q "^\[  FAILED  \]" "$out/test_cuda.log" && status=1
fi
if [[ $stages == *" train "* ]]; then
  run() {  # name, limit, then the main job's arguments
    local name=$1 limit=$2; shift 2
    echo "== main job: $name" | tee -a "$out/train.log"
    local t0=$SECONDS
    timeout "$limit" "$build/examples/train_fashion_mnist" --device cuda --data "$data" --out "/tmp/graft-run-$name" "$@" 2>&1 |
      tr '\r' '\n' | grep -v -E "^epoch [0-9]+ \[" >> "$out/train.log"
    echo "exit ${PIPESTATUS[0]} after $((SECONDS - t0)) s" | tee -a "$out/train.log"
    tail -3 "$out/train.log" | head -2
  }
  run mlp 60 --model mlp --epochs "${EPOCHS:-5}"
  run mlp-bf16 60 --model mlp --epochs "${EPOCHS:-5}" --dtype bf16
  run cnn 45 --model cnn --epochs 1 --limit 12000
  run transformer 45 --model transformer --epochs 1 --limit 200000 "${text[@]}"
fi
if [[ $stages == *" bench "* ]]; then
  echo "== bench"
  timeout 150 "$build/bench_cuda" 2>&1 | tee -a "$out/bench.txt"
  for e in ${ROW_ELEMS:-4 16}; do  # lanes per row of the fused row kernels (softmax): variants
    GRAFT_CUDA_ROW_ELEMS=$e timeout 30 "$build/bench_cuda" jit 2>&1 | sed "s/^/row_elems_$e /" | tee -a "$out/bench.txt"
  done
  for e in ${ROW_VECTOR_ELEMS:-8 16}; do  # and with 16-byte vector accesses in the rows
    GRAFT_CUDA_ROW_VECTORS=1 GRAFT_CUDA_ROW_ELEMS=$e timeout 30 "$build/bench_cuda" jit 2>&1 | sed "s/^/row_vectors_$e /" |
      tee -a "$out/bench.txt"
  done
  PYTHONUNBUFFERED=1 TORCH_COMPILE=${TORCH_COMPILE:-1} timeout 300 python3 bench/torch_cuda.py 2>&1 | tee -a "$out/bench.txt"
  PYTHONUNBUFFERED=1 timeout 180 python3 bench/jax_cuda.py 2>&1 | tee -a "$out/bench.txt"
fi
if [[ $stages == *" jaxvalues "* ]]; then  # JAX's draws for graft's bit-for-bit random tests (issue 33)
  echo "== jax random values"
  JAX_PLATFORMS=cpu timeout 120 python3 tools/jax_random_values.py > "$out/jax_random_values.json" 2> "$out/jax_random_values.log" &&
    echo "wrote $out/jax_random_values.json: commit it as tests/data/jax_random_values.json" || tail -5 "$out/jax_random_values.log"
fi
if [[ $stages == *" sanitize "* ]]; then
  if command -v compute-sanitizer >/dev/null; then
    tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck}
    echo "== compute-sanitizer --tool {${tools// /,}} at once (timeout ${SANITIZE_TIMEOUT:-120} s)"
    for tool in $tools; do
      (GRAFT_CUDA_CACHING=0 timeout "${SANITIZE_TIMEOUT:-120}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$build/tests/test_cuda" --gtest_brief=1 --gtest_filter="${SANITIZE_FILTER:-CudaArrays.RoundTrip*:CudaArrays.Transformations*:CudaArrays.MainJob*:CudaFusion.*:*CudaConformance.ValuesMatchTheCpu/*}" \
        > "$out/sanitizer_$tool.log" 2>&1; echo "exit $?" >> "$out/sanitizer_$tool.log") &
    done
    wait
    for tool in $tools; do
      echo "-- $tool"; grep -E "ERROR SUMMARY|PASSED|FAILED|^exit" "$out/sanitizer_$tool.log" | tail -5
    done
  else
    echo "compute-sanitizer is not on this machine"
  fi
fi
exit $status

#!/usr/bin/env bash
# Runs graft's GPU checks on a machine with an NVIDIA GPU (a lent one: the device tool), in one command:
#   tools/device_debs.sh                      # here, once: the packages the lent machine lacks, into .debs/
#   device run: bash tools/cuda_device.sh --build   (carry: [".debs"], timeout 600)
# --build unpacks .debs/ into a prefix and builds test_cuda, bench_cuda and the main job with the CUDA
# toolkit there (no LLVM, oneDNN, OpenBLAS, MPI or Python: the GPU path needs none of them):
#   cmake -S . -B build-dev -DGRAFT_NATIVE=OFF -DGRAFT_WITH_LLVM=OFF -DGRAFT_WITH_DNNL=OFF \
#         -DGRAFT_WITH_BLAS=OFF -DGRAFT_WITH_MPI=OFF -DGRAFT_WITH_PYTHON=OFF
# Then, in order of what matters most (each step's log under $OUT): the GPU tests (every conformance row
# on the GPU, jit's fused kernels, placement, memory), the main job for one epoch on the GPU (MLP and
# transformer), the figures (bench_cuda beside PyTorch, bench/torch_cuda.py, and JAX, bench/jax_cuda.py),
# and the GPU tests under compute-sanitizer memcheck and racecheck with the caching allocator off.
# Files under $OUT (the device tool brings back 8 at most): build.log, test_cuda.log, train.log, bench.txt,
# sanitizer_memcheck.log, sanitizer_racecheck.log. SANITIZE=0 skips the sanitizers; GPU_FILTER and
# SANITIZE_FILTER choose tests.
# Usage: tools/cuda_device.sh [--build] [build dir] [out dir]
set -uo pipefail
do_build=0
if [ "${1:-}" = "--build" ]; then do_build=1; shift; fi
build=${1:-build-dev}
out=${2:-${OUT:-/tmp/graft-cuda}}
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
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export GRAFT_CUDA_CACHE_DIR=/tmp/graft-cuda-kernels
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/bench.txt"
status=0
echo "== test_cuda (the GPU tests; the others run in CI)"
"$build/tests/test_cuda" --gtest_brief=1 --gtest_filter="${GPU_FILTER:-CudaArrays*:CudaFusion.*:CudaNccl.*:CudaCoverage.*:*CudaConformance.*}" \
  > "$out/test_cuda.log" 2>&1 || status=1
grep -E "FAILED|PASSED|primitives run through the host" "$out/test_cuda.log" | head -60
if [ -x "$build/examples/train_fashion_mnist" ]; then
  data=$prefix/usr/share/datasets/fashion-mnist
  for model in mlp transformer; do
    echo "== main job: --model $model --device cuda, one epoch"
    timeout 120 "$build/examples/train_fashion_mnist" --model $model --device cuda --epochs 1 --data "$data" \
      --out /tmp/graft-run-$model 2>&1 | tr '\r' '\n' | grep -v "^epoch 1 \[" | tee -a "$out/train.log" | tail -8
  done
fi
echo "== bench"
timeout 150 "$build/bench_cuda" 2>&1 | tee -a "$out/bench.txt"
PYTHONUNBUFFERED=1 timeout 240 python3 bench/torch_cuda.py 2>&1 | tee -a "$out/bench.txt"
PYTHONUNBUFFERED=1 timeout 120 python3 bench/jax_cuda.py 2>&1 | tee -a "$out/bench.txt"
if [ "${SANITIZE:-1}" = 1 ]; then
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      echo "== compute-sanitizer --tool $tool"
      GRAFT_CUDA_CACHING=0 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$build/tests/test_cuda" --gtest_brief=1 --gtest_filter="${SANITIZE_FILTER:-CudaArrays.RoundTrip*:CudaArrays.Transformations*:CudaFusion.*:*CudaConformance.ValuesMatchTheCpu/*}" \
        > "$out/sanitizer_$tool.log" 2>&1
      echo "exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/sanitizer_$tool.log" | tail -5
    done
  fi
fi
exit $status

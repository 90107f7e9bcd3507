#!/usr/bin/env bash
# Runs graft's GPU checks on a machine with an NVIDIA GPU, from binaries built elsewhere by
#   cmake -S . -B build-dev -DGRAFT_NATIVE=OFF -DGRAFT_WITH_LLVM=OFF -DGRAFT_WITH_DNNL=OFF \
#         -DGRAFT_WITH_BLAS=OFF -DGRAFT_WITH_MPI=OFF -DGRAFT_WITH_PYTHON=OFF -DGRAFT_BUILD_EXAMPLES=OFF
#   cmake --build build-dev --target test_cuda bench_cuda
# (the binaries need only libcudart/NVRTC/cuBLAS from the CUDA 13 toolkit there). Steps: the CUDA test
# suite (every conformance row on the GPU), the suite again under compute-sanitizer memcheck and
# racecheck with the caching allocator off, then the figures: bench_cuda beside PyTorch
# (bench/torch_cuda.py) and JAX (bench/jax_cuda.py) on the same GPU.
# Usage: tools/cuda_device.sh [build dir] [out dir]
set -uo pipefail
build=${1:-build-dev}
out=${2:-${OUT:-/tmp/graft-cuda}}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export GRAFT_CUDA_CACHE_DIR=/tmp/graft-cuda-kernels
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
status=0
echo "== test_cuda"
"$build/tests/test_cuda" --gtest_brief=1 2>&1 | tee "$out/test_cuda.log" | tail -40 || status=1
grep -E "primitives run through the host" "$out/test_cuda.log"
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    GRAFT_CUDA_CACHING=0 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$build/tests/test_cuda" --gtest_brief=1 --gtest_filter="${SANITIZE_FILTER:-CudaArrays.RoundTrip*:CudaArrays.Transformations*:CudaFusion.*:*CudaConformance.ValuesMatchTheCpu/*}" \
      > "$out/sanitizer_$tool.log" 2>&1
    echo "exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/sanitizer_$tool.log" | tail -5
  done
fi
echo "== bench"
"$build/bench_cuda" 2>&1 | tee "$out/bench_graft.txt"
python3 bench/torch_cuda.py 2>&1 | tee "$out/bench_torch.txt"
python3 bench/jax_cuda.py 2>&1 | tee "$out/bench_jax.txt"
exit $status

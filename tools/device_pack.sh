#!/usr/bin/env bash
# Builds graft's GPU checks here (the CUDA toolkit compiles without a GPU) and packs what a lent GPU machine
# runs into .devcarry/ (ignored by git, about 45 MB): the GPU tests, bench_cuda, the main job, libgraft if shared, the
# Fashion-MNIST files and the transformer's texts. Building here saves the lent machine's minutes; the
# binaries need only the CUDA 13 runtime libraries and glibc >= this machine's, which the lent image has.
#   tools/device_pack.sh
#   device run: bash tools/cuda_device.sh .devcarry     (carry: [".devcarry"])
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-dev
export PATH=/usr/local/cuda/bin:$PATH
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_NATIVE=OFF -DGRAFT_WITH_LLVM=OFF \
  -DGRAFT_WITH_DNNL=OFF -DGRAFT_WITH_BLAS=OFF -DGRAFT_WITH_MPI=OFF -DGRAFT_WITH_PYTHON=OFF >/dev/null
cmake --build "$build" --target test_cuda bench_cuda train_fashion_mnist
pack=$root/.devcarry
rm -rf "$pack"
mkdir -p "$pack/tests" "$pack/examples" "$pack/lib" "$pack/data" "$pack/text"
strip -o "$pack/tests/test_cuda" "$build/tests/test_cuda"
strip -o "$pack/bench_cuda" "$build/bench_cuda"
strip -o "$pack/examples/train_fashion_mnist" "$build/examples/train_fashion_mnist"
# (graft links statically unless BUILD_SHARED_LIBS: then libgraft travels too)
for f in "$build"/libgraft.so.*.*; do [ -e "$f" ] && cp -a "$build"/libgraft.so* "$pack/lib/"; done
# OpenMP's runtime, which the lent image may lack (the loader prefers it over the image's own)
cp -L "$(ldconfig -p | grep -m1 'libgomp.so.1 ' | sed 's/.*=> //')" "$pack/lib/"
cp /usr/share/datasets/fashion-mnist/*.gz "$pack/data/"
cp -rL /usr/share/common-licenses/. "$pack/text/"
du -sh "$pack"

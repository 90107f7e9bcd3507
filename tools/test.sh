#!/usr/bin/env bash
# Sets up and runs graft's test suite on a fresh Debian machine: installs the dependencies, builds
# (warnings are errors), runs every test. Usage: tools/test.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
# python3-torch: the Python tests exchange memory with PyTorch through DLPack; python3-onnx checks the
# ONNX export; python3-scipy is the oracle of graft.scipy.special's tests
"$root/tools/deps.sh" dataset-fashion-mnist python3-torch python3-onnx python3-scipy
# GRAFT_TEST_SHARDS: each test program runs as 4 processes of gtest shards rather than one process per
# TEST (tests/CMakeLists.txt: starting a process costs about half a second)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAFT_WERROR=ON -DGRAFT_TEST_SHARDS=4
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"

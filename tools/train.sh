#!/usr/bin/env bash
# Sets up and runs the main job: trains the MLP 784-512-512-10 on Fashion-MNIST.
# Usage: tools/train.sh [train_fashion_mnist options, e.g. --epochs 5 --optimizer adam]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
"$root/tools/deps.sh" dataset-fashion-mnist
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target train_fashion_mnist
"$build/examples/train_fashion_mnist" "$@"

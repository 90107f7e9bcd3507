#!/usr/bin/env bash
# Downloads (here, where Debian's archive is reachable) the packages a lent GPU machine lacks to build
# graft's GPU checks: GoogleTest, nlohmann-json, CLI11, zlib's headers and the Fashion-MNIST dataset,
# into .debs/ (ignored by git). tools/cuda_device.sh --build unpacks them there. Run once per checkout,
# then give the device tool `carry: [".debs"]` (about 33 MB).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/.debs"
cd "$root/.debs"
# (apt's sandbox user cannot write into a root-owned checkout)
apt-get -o APT::Sandbox::User=root download googletest libgtest-dev nlohmann-json3-dev libcli11-dev zlib1g zlib1g-dev \
  dataset-fashion-mnist
ls -la

#!/usr/bin/env bash
# Installs what graft needs on Debian (as root, or with sudo). Usage: tools/deps.sh [extra packages...]
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
need=(cmake ninja-build g++ libgtest-dev libopenblas-dev libfftw3-dev libdnnl-dev zlib1g-dev nlohmann-json3-dev libcli11-dev llvm-14-dev
      openmpi-bin libopenmpi-dev pybind11-dev python3-dev python3-numpy python3-pytest python3-pip python3-venv "$@")
missing=()
for p in "${need[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

#!/usr/bin/env bash
# Builds graft's Python package and installs it for Debian's python3 with pip (offline: pyproject.toml
# builds it with CMake through python/pep517/graft_build.py, from Debian's pybind11-dev,
# python3-dev and python3-numpy; --no-index: nothing comes from a package index).
#   tools/python.sh                 install into python3's own site-packages (e.g. /usr/local/lib/python3.11/dist-packages)
#   tools/python.sh --target DIR    install into DIR instead (put it on PYTHONPATH)
#   tools/python.sh --venv DIR      make a venv at DIR (with Debian's NumPy visible) and install there
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
"$root/tools/deps.sh" python3-pip python3-venv
# the repository's build tree serves the wheel (the package target only), as it serves the tests
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
export GRAFT_BUILD_DIR=$build PIP_NO_INDEX=1
python=/usr/bin/python3
where=()
case "${1:-}" in
  --target) where=(--target "$2" --upgrade) ;;
  --venv) "$python" -m venv --system-site-packages "$2"; python=$2/bin/python ;;
  "") where=(--break-system-packages) ;;  # Debian's python3 is externally managed (PEP 668)
  *) echo "usage: tools/python.sh [--target DIR | --venv DIR]" >&2; exit 2 ;;
esac
"$python" -m pip install --no-cache-dir "${where[@]}" "$root"
cd /
extra=${2:-}
[ "${1:-}" = --target ] && export PYTHONPATH="$extra${PYTHONPATH:+:$PYTHONPATH}"
"$python" -c "import graft, graft.numpy as gnp; print('installed graft', graft.__version__, 'at', graft.__file__); print(graft.grad(lambda x: gnp.sum(x ** 2))(gnp.arange(3.0)))"

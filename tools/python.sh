#!/usr/bin/env bash
# Builds graft's Python package and installs it for Debian's python3 (offline: Debian's pybind11-dev,
# python3-dev and python3-numpy; no package index).
#   tools/python.sh [site-packages dir]   (default: python3's own, e.g. /usr/local/lib/python3.11/dist-packages)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
"$root/tools/deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target graft_python
site=${1:-$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')}
mkdir -p "$site"
# replaced as a whole (a half-copied package is never importable)
rm -rf "$site/graft.new"
cp -r "$build/python/graft" "$site/graft.new"
rm -rf "$site/graft"
mv "$site/graft.new" "$site/graft"
cd /
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 -c "import graft, graft.numpy as gnp; print('installed', graft.__file__); print(graft.grad(lambda x: gnp.sum(x ** 2))(gnp.arange(3.0)))"

#!/usr/bin/env bash
# `pip install .` of the Python package, offline (PIP_NO_INDEX=1), into a fresh venv that sees Debian's
# NumPy; the build backend reuses the test build tree (GRAFT_BUILD_DIR) instead of configuring its own.
# Then graft imports from outside the source tree, reports the CMake project's version, and computes.
#   pip_install.sh <source dir> <build dir> <version>
set -euo pipefail
src=$1 build=$2 version=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
cd "$src"
PIP_NO_INDEX=1 GRAFT_BUILD_DIR=$build "$work/venv/bin/pip" install --no-cache-dir . >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log"; exit 1; }
cd "$work"
"$work/venv/bin/python" - "$version" <<'PY'
import sys
import graft, graft.numpy as gnp
assert graft.__version__ == sys.argv[1], (graft.__version__, sys.argv[1])
assert "/venv/" in graft.__file__, graft.__file__
g = graft.grad(lambda x: gnp.sum(x ** 2))(gnp.arange(3.0))
assert [float(v) for v in g] == [0.0, 2.0, 4.0], g
print("pip install . ->", graft.__file__, graft.__version__)
PY

import os
import sys

# Without PYTHONPATH (ctest sets it to <build>/python), test the package as built in ./build/python.
_build = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))
if not os.environ.get("PYTHONPATH") and os.path.isdir(os.path.join(_build, "graft")):
    sys.path.insert(0, _build)

# The suite checks graft against NumPy in float64 (finite differences, tight tolerances), so it runs with
# JAX's 64-bit mode on unless the environment says otherwise (GRAFT_ENABLE_X64=0 runs it as a default
# session would; test_x64.py checks the 32-bit default itself by switching the mode off).
os.environ.setdefault("GRAFT_ENABLE_X64", "1")

import os
import sys

# Without PYTHONPATH (ctest sets it to <build>/python), test the package as built in ./build/python.
_build = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))
if not os.environ.get("PYTHONPATH") and os.path.isdir(os.path.join(_build, "graft")):
    sys.path.insert(0, _build)

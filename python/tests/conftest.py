import os
import sys

# the package as built (<build>/python) when PYTHONPATH does not name it
_here = os.path.dirname(os.path.abspath(__file__))
_build = os.path.join(_here, "..", "..", "build", "python")
if not any(os.path.isdir(os.path.join(p, "graft")) and os.path.exists(os.path.join(p, "graft", "_api.py"))
           for p in sys.path if p):
    sys.path.insert(0, os.path.abspath(_build))

"""NumPy-style methods of graft.Array and JAX's functional updates (x.at[i].set(v))."""
from . import _graft
from ._graft import Array


class _AtIndex:
    __slots__ = ("x", "idx")

    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def get(self):
        return self.x._at_apply(self.idx, "get", None)

    def set(self, v):
        return self.x._at_apply(self.idx, "set", v)

    def add(self, v):
        return self.x._at_apply(self.idx, "add", v)

    def multiply(self, v):
        return self.x._at_apply(self.idx, "multiply", v)

    def min(self, v):
        return self.x._at_apply(self.idx, "min", v)

    def max(self, v):
        return self.x._at_apply(self.idx, "max", v)


class _At:
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _AtIndex(self.x, idx)


def _method(f):
    return lambda self, *a, **k: f(self, *a, **k)


Array.at = property(lambda self: _At(self))
Array.__iter__ = lambda self: (self[i] for i in range(len(self)))
for _name in ("sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax", "argmin", "cumsum",
              "transpose", "squeeze", "ravel", "sort", "argsort", "clip", "repeat", "take", "swapaxes"):
    setattr(Array, _name, _method(getattr(_graft, _name)))
Array.flatten = _method(_graft.ravel)
Array.dot = _method(_graft.dot)
Array.round = _method(_graft.round)
Array.conj = lambda self: self
Array.real = property(lambda self: self)
Array.__array_priority__ = 100  # NumPy defers to graft's operators (np_array + graft_array -> graft)

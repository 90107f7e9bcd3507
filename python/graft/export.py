"""Exported programs (JAX's jax.export): a traced function saved to a .graft file that another process
loads and calls without the Python code that traced it, under jit, vmap and grad too. Inputs and
outputs are flat lists of arrays. See docs/export.md.

    exp = graft.export.export(graft.jit(predict), name="predict", in_names=["images"])(x)
    exp.save("model.graft")
    m = graft.export.load("model.graft")
    y = m(x)
"""
from . import _graft
from ._api import ClosedJaxpr
from ._tree import tree_flatten, tree_unflatten

__all__ = ["export", "load", "deserialize", "Exported", "parse_jaxpr"]


class Exported:
    """A program with its constants, its inputs' and outputs' types and names."""

    def __init__(self, impl):
        self._impl = impl

    name = property(lambda self: self._impl.name)
    in_names = property(lambda self: list(self._impl.in_names))
    out_names = property(lambda self: list(self._impl.out_names))
    in_types = property(lambda self: list(self._impl.in_types))
    out_types = property(lambda self: list(self._impl.out_types))
    jaxpr = property(lambda self: ClosedJaxpr(self._impl.text))

    def __call__(self, *args):
        """The outputs for these inputs: one array, or a tuple when the program has several outputs."""
        outs = self._impl.call(list(args))
        return outs[0] if len(outs) == 1 else tuple(outs)

    call = __call__

    def save(self, path):
        self._impl.save(str(path))

    def serialize(self):
        return self._impl.serialize()

    def to_onnx(self):
        """The program as an ONNX model's bytes (opset 17; inference primitives only)."""
        return self._impl.onnx()

    def __repr__(self):
        ins = ", ".join(f"{n}: {t}" for n, t in zip(self.in_names, self.in_types))
        outs = ", ".join(f"{n}: {t}" for n, t in zip(self.out_names, self.out_types))
        return f"Exported {self.name}({ins}) -> ({outs})"


def export(fun, *, name=None, in_names=(), out_names=()):
    """export(fun)(*args): fun traced at the types of args (pytrees flattened) as an Exported."""

    def trace(*args):
        leaves, tree = tree_flatten(args)

        def flat(xs):
            return tree_flatten(fun(*tree_unflatten(tree, xs)))[0]

        n = name if name is not None else getattr(fun, "__name__", "exported")
        return Exported(_graft.export(flat, leaves, n, list(in_names), list(out_names)))

    return trace


def load(path):
    """The program in a .graft file."""
    return Exported(_graft.load_exported(str(path)))


def deserialize(data):
    """The program in a .graft file's bytes."""
    return Exported(_graft.deserialize_exported(bytes(data)))


def parse_jaxpr(text):
    """Reads a printed jaxpr back (a ValueError names the line and column of a bad text)."""
    return ClosedJaxpr(_graft.parse_jaxpr(str(text)))

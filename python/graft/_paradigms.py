"""The seeds' other ways to differentiate, from Python: Theano / TF1's explicit graph, PyTorch's tape
(x.requires_grad_(), y.backward(), x.grad) and TF2's GradientTape."""
from . import _graft
from ._graft import Array


class Graph:
    """An explicit graph (Theano / TF1): operations on placeholders are recorded, not run.

        with gf.Graph() as g:
            a, b = g.placeholder(()), g.placeholder(())
            c = a * b
            f = g.function([a, b], [c])
        gf.graph_grad(f)(1.5, 2.5)   # [Array(2.5)]
    """

    def __init__(self, name="graph"):
        self._name = name
        self._g = None
        self._closed = False

    def __enter__(self):
        self._g = _graft._Graph(self._name)
        return self

    def __exit__(self, *exc):
        if not self._closed:
            self._closed = True
            self._g.function([], [])  # closes the recording scope

    def placeholder(self, shape=(), dtype="float32"):
        if self._g is None:
            raise ValueError("Graph.placeholder: use the graph in a `with` block")
        return self._g.placeholder(shape, dtype)

    def function(self, inputs, outputs):
        single = isinstance(outputs, Array)
        f = self._g.function(list(inputs), [outputs] if single else list(outputs))
        self._closed = True
        return f


def graph_grad(f, argnums=0):
    """The gradient graph of a graph Function (its first output a scalar) w.r.t. the inputs at argnums."""
    return _graft.graph_grad(f, [argnums] if isinstance(argnums, int) else list(argnums))


class GradientTape:
    """TF2's tape: records the operations on watched arrays inside its `with` block.

        with gf.GradientTape() as tape:
            tape.watch(a)          # a now refers to the watched value inside the block
            c = a * b
        tape.gradient(c, a)
    Tapes nest (an outer tape records the inner one's gradient: second derivatives)."""

    def __init__(self):
        self._tape = None
        self._watched = {}  # id(object) -> (object, original value, this tape's watched value)

    def __enter__(self):
        self._tape = _graft._Tape()
        return self

    def __exit__(self, *exc):
        self._tape.stop_recording()
        # the watched objects are their own values again after the block (as TF's variables are)
        for obj, original, _ in self._watched.values():
            obj._assign(original)

    def watch(self, x):
        for obj in (x if isinstance(x, (list, tuple)) else [x]):
            if not isinstance(obj, Array):
                raise TypeError(f"GradientTape.watch: {type(obj).__name__} is not a graft Array")
            # watch what the object holds now (an enclosing tape's watched value, if any)
            w = self._tape.watch(obj)
            self._watched[id(obj)] = (obj, Array(obj), w)
            obj._assign(w)

    def gradient(self, target, sources):
        single = isinstance(sources, Array)
        srcs = [sources] if single else list(sources)
        mine = []
        for s in srcs:
            entry = self._watched.get(id(s))
            if entry is None:
                raise ValueError("GradientTape.gradient: a source was not watched by this tape")
            mine.append(entry[2])
        g = self._tape.gradient(target, mine)
        return g[0] if single else g

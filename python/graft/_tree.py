"""Pytrees: nested lists, tuples (named tuples too), dicts and None, with arrays (or anything else) at
the leaves, flattened in JAX's order (dict keys sorted)."""


class PyTreeDef:
    """The structure of a pytree: what tree_unflatten needs to rebuild it from its leaves."""

    __slots__ = ("kind", "meta", "children", "num_leaves", "_k", "_h")

    def __init__(self, kind, meta, children):
        self.kind = kind  # "leaf", "none", "tuple", "list", "dict", "namedtuple"
        self.meta = meta  # dict keys, or the namedtuple class
        self.children = children
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in children)
        # the structure as a nested tuple, built once from the children's (jit keys its cache on it)
        self._k = (kind, meta, tuple(c._k for c in children))
        self._h = hash(self._k)

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and self._h == other._h and self._k == other._k

    def __hash__(self):
        return self._h

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children)) + "}"
        if self.kind == "namedtuple":
            return f"{self.meta.__name__}({inner})"
        return f"({inner}{',' if len(self.children) == 1 else ''})"


_LEAF = PyTreeDef("leaf", None, ())
_NONE = PyTreeDef("none", None, ())


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _flatten(x, leaves):
    if x is None:
        return _NONE
    if isinstance(x, (list, tuple)):
        kind = "list" if isinstance(x, list) else ("namedtuple" if _is_namedtuple(x) else "tuple")
        return PyTreeDef(kind, type(x) if kind == "namedtuple" else None, tuple(_flatten(c, leaves) for c in x))
    if isinstance(x, dict):
        keys = tuple(sorted(x))
        return PyTreeDef("dict", keys, tuple(_flatten(x[k], leaves) for k in keys))
    leaves.append(x)
    return _LEAF


def tree_flatten(tree):
    """(leaves, treedef)."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _unflatten(d, it):
    if d.kind == "leaf":
        return next(it)
    if d.kind == "none":
        return None
    children = [_unflatten(c, it) for c in d.children]
    if d.kind == "list":
        return children
    if d.kind == "tuple":
        return tuple(children)
    if d.kind == "namedtuple":
        return d.meta(*children)
    return dict(zip(d.meta, children))


def tree_unflatten(treedef, leaves):
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: {treedef} has {treedef.num_leaves} leaves, got {len(leaves)}")
    return _unflatten(treedef, iter(leaves))


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_structure(tree):
    return tree_flatten(tree)[1]


def tree_map(f, tree, *rest):
    """f applied leaf by leaf (to the leaves of `tree` and of each tree in `rest`, of the same structure)."""
    leaves, d = tree_flatten(tree)
    others = []
    for r in rest:
        rl, rd = tree_flatten(r)
        if rd != d:
            raise ValueError(f"tree_map: the trees differ in structure: {d} and {rd}")
        others.append(rl)
    return tree_unflatten(d, [f(*xs) for xs in zip(leaves, *others)])


def broadcast_prefix(prefix, tree, what, is_leaf=None):
    """The leaves of `prefix` (a pytree prefix of `tree`, e.g. vmap's in_axes) repeated for every leaf
    of `tree` below them; is_leaf(p) marks prefix nodes that are leaves themselves (partition specs)."""
    out = []

    def go(p, t):
        if (p is None or isinstance(p, int) or not isinstance(p, (list, tuple, dict))
                or (is_leaf is not None and is_leaf(p))):
            out.extend([p] * tree_structure(t).num_leaves)
            return
        if isinstance(p, dict):
            if not isinstance(t, dict) or sorted(p) != sorted(t):
                raise ValueError(f"{what}: {p!r} does not match the structure of the arguments")
            for k in sorted(p):
                go(p[k], t[k])
            return
        if not isinstance(t, (list, tuple)) or len(p) != len(t):
            raise ValueError(f"{what} {p!r} does not match the structure of the arguments "
                             f"({tree_structure(t)})")
        for a, b in zip(p, t):
            go(a, b)

    go(prefix, tree)
    return out

"""Pytrees: nested lists, tuples (named tuples too), dicts, None and registered node types (custom classes,
dataclasses, functools.partial through Partial), with arrays (or anything else) at the leaves, flattened in
JAX's order (dict keys sorted). The public names are in graft.tree_util and graft.tree."""
import dataclasses as _dataclasses
import functools as _functools


class _Node:
    __slots__ = ("flatten", "unflatten", "flatten_with_keys")

    def __init__(self, flatten, unflatten, flatten_with_keys):
        self.flatten, self.unflatten, self.flatten_with_keys = flatten, unflatten, flatten_with_keys


_registry = {}  # node type (matched exactly, as JAX) -> _Node


class PyTreeDef:
    """The structure of a pytree: what tree_unflatten needs to rebuild it from its leaves."""

    __slots__ = ("kind", "meta", "children_", "num_leaves", "num_nodes", "_k", "_h")

    def __init__(self, kind, meta, children):
        self.kind = kind  # "leaf", "none", "tuple", "list", "dict", "namedtuple", "custom"
        self.meta = meta  # dict keys, the namedtuple class, or (node type, auxiliary data)
        self.children_ = children
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in children)
        self.num_nodes = 1 + sum(c.num_nodes for c in children)
        # the structure as a nested tuple, built once from the children's (jit keys its cache on it)
        self._k = (kind, meta, tuple(c._k for c in children))
        try:
            self._h = hash(self._k)
        except TypeError:  # unhashable auxiliary data: equal structures still compare equal
            self._h = hash((kind, meta[0] if kind == "custom" else None, len(children)))

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and self._h == other._h and self._k == other._k

    def __hash__(self):
        return self._h

    def children(self):
        """The structures of the root's children."""
        return list(self.children_)

    def node_data(self):
        """(node type, auxiliary data) of the root, or None for a leaf."""
        if self.kind == "leaf":
            return None
        if self.kind == "custom":
            return self.meta
        types = {"none": type(None), "tuple": tuple, "list": list, "dict": dict}
        return (self.meta, None) if self.kind == "namedtuple" else (types[self.kind], self.meta)

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree):
        """The subtrees of `tree` at this structure's leaves (tree must have this structure down to them)."""
        out = []
        _flatten_up_to(self, tree, out)
        return out

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children_)
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children_)) + "}"
        if self.kind == "namedtuple":
            return f"{self.meta.__name__}({inner})"
        if self.kind == "custom":
            return f"CustomNode({self.meta[0].__name__}[{self.meta[1]!r}], [{inner}])"
        return f"({inner}{',' if len(self.children_) == 1 else ''})"


_LEAF = PyTreeDef("leaf", None, ())
_NONE = PyTreeDef("none", None, ())


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _flatten(x, leaves, is_leaf):
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    if x is None:
        return _NONE
    node = _registry.get(type(x))
    if node is not None:
        children, aux = node.flatten(x)
        return PyTreeDef("custom", (type(x), aux), tuple(_flatten(c, leaves, is_leaf) for c in children))
    if isinstance(x, (list, tuple)):
        kind = "list" if isinstance(x, list) else ("namedtuple" if _is_namedtuple(x) else "tuple")
        return PyTreeDef(kind, type(x) if kind == "namedtuple" else None,
                         tuple(_flatten(c, leaves, is_leaf) for c in x))
    if isinstance(x, dict):
        keys = tuple(sorted(x))
        return PyTreeDef("dict", keys, tuple(_flatten(x[k], leaves, is_leaf) for k in keys))
    leaves.append(x)
    return _LEAF


def tree_flatten(tree, is_leaf=None):
    """(leaves, treedef); is_leaf(x) true makes x a leaf however it is built."""
    leaves = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _unflatten(d, it):
    if d.kind == "leaf":
        return next(it)
    if d.kind == "none":
        return None
    children = [_unflatten(c, it) for c in d.children_]
    if d.kind == "list":
        return children
    if d.kind == "tuple":
        return tuple(children)
    if d.kind == "namedtuple":
        return d.meta(*children)
    if d.kind == "custom":
        return _registry[d.meta[0]].unflatten(d.meta[1], children)
    return dict(zip(d.meta, children))


def tree_unflatten(treedef, leaves):
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: {treedef} has {treedef.num_leaves} leaves, got {len(leaves)}")
    return _unflatten(treedef, iter(leaves))


def _children_of(d, x):
    """x's children as the node `d` describes them, or a ValueError naming the mismatch."""
    def mismatch(what):
        return ValueError(f"tree structure mismatch: expected {what} matching {d}, got {type(x).__name__} {x!r}")
    if d.kind == "none":
        if x is not None:
            raise mismatch("None")
        return []
    if d.kind == "custom":
        if type(x) is not d.meta[0]:
            raise mismatch(d.meta[0].__name__)
        children, aux = _registry[d.meta[0]].flatten(x)
        children = list(children)
    elif d.kind == "dict":
        if not isinstance(x, dict) or tuple(sorted(x)) != d.meta:
            raise mismatch("a dict with keys " + repr(list(d.meta)))
        children = [x[k] for k in d.meta]
    else:
        want = {"list": list, "tuple": tuple, "namedtuple": d.meta}[d.kind]
        if not isinstance(x, want) or (d.kind == "tuple" and _is_namedtuple(x)):
            raise mismatch(want.__name__)
        children = list(x)
    if len(children) != len(d.children_):
        raise mismatch(f"{len(d.children_)} children")
    return children


def _flatten_up_to(d, x, out):
    if d.kind == "leaf":
        out.append(x)
        return
    for c, y in zip(d.children_, _children_of(d, x)):
        _flatten_up_to(c, y, out)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f, tree, *rest, is_leaf=None):
    """f applied leaf by leaf to the leaves of `tree` and the corresponding subtrees of each tree in `rest`
    (which have tree's structure, at least down to its leaves)."""
    leaves, d = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        if is_leaf is None:
            rl, rd = tree_flatten(r)
            if rd == d:
                others.append(rl)
                continue
        try:
            others.append(d.flatten_up_to(r))
        except ValueError:
            raise ValueError(f"tree_map: the trees differ in structure: {d} and {tree_structure(r)}") from None
    return tree_unflatten(d, [f(*xs) for xs in zip(leaves, *others)])


# ---- registration -------------------------------------------------------------------------------------
def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
    """Makes instances of `nodetype` (exactly that type) pytree nodes: flatten_func(x) -> (children, aux_data),
    unflatten_func(aux_data, children) -> x. aux_data is part of the structure (jit's cache key): keep it
    hashable. flatten_with_keys_func(x) -> ([(key, child), ...], aux_data) names the children in paths."""
    if nodetype in _registry or nodetype in (list, tuple, dict, type(None)):
        raise ValueError(f"register_pytree_node: {nodetype.__name__} is already a pytree node type")
    _registry[nodetype] = _Node(flatten_func, unflatten_func, flatten_with_keys_func)
    return nodetype


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    if flatten_func is None:
        def flatten_func(x):
            kc, aux = flatten_with_keys(x)
            return [c for _, c in kc], aux
    return register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls):
    """Class decorator: the class's tree_flatten() -> (children, aux_data) and its classmethod
    tree_unflatten(aux_data, children) make it a pytree node."""
    return register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)


def register_dataclass(nodetype, data_fields=None, meta_fields=None, drop_fields=()):
    """A dataclass as a pytree node: data_fields are its children, meta_fields (hashable) its static part.
    Without either list they come from the dataclass's fields: those with metadata {"static": True} are
    meta fields, the others data. Usable as a class decorator."""
    if data_fields is None and meta_fields is None:
        if not _dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype.__name__} is not a dataclass; pass data_fields and "
                            "meta_fields")
        fields = [f for f in _dataclasses.fields(nodetype) if f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    elif data_fields is None or meta_fields is None:
        raise TypeError("register_dataclass: pass both data_fields and meta_fields, or neither")
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if _dataclasses.is_dataclass(nodetype):
        init = {f.name for f in _dataclasses.fields(nodetype) if f.init}
        missing = init - set(data_fields) - set(meta_fields) - set(drop_fields)
        if missing:
            raise ValueError(f"register_dataclass: fields {sorted(missing)} of {nodetype.__name__} are neither data "
                             "nor meta fields")

    def flatten_with_keys(x):
        return [(GetAttrKey(n), getattr(x, n)) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(aux, children):
        obj = object.__new__(nodetype)
        for n, v in zip(data_fields, children):
            object.__setattr__(obj, n, v)
        for n, v in zip(meta_fields, aux):
            object.__setattr__(obj, n, v)
        return obj

    return register_pytree_node(nodetype,
                                lambda x: ([getattr(x, n) for n in data_fields],
                                           tuple(getattr(x, n) for n in meta_fields)),
                                unflatten, flatten_with_keys)


def register_static(cls):
    """Instances of cls are pytree nodes without children: the whole object is static (hashable)."""
    register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux)
    return cls


class Partial(_functools.partial):
    """functools.partial as a pytree: its bound arguments are children, the function is static, so a
    Partial passes through jit and the other transformations as an argument."""

    def __new__(cls, func, *args, **kw):
        if isinstance(func, _functools.partial):  # flatten nested partials as functools does
            args, kw = func.args + args, {**func.keywords, **kw}
            func = func.func
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, ch: Partial(func, *ch[0], **ch[1]))


# ---- paths --------------------------------------------------------------------------------------------
@_dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@_dataclasses.dataclass(frozen=True)
class DictKey:
    key: object

    def __str__(self):
        return f"[{self.key!r}]"


@_dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"


@_dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def keystr(keys):
    """A path as text: ['a'][0].b"""
    return "".join(str(k) for k in keys)


def _keyed_children(x, d):
    if d.kind == "list" or d.kind == "tuple":
        return [(SequenceKey(i), c) for i, c in enumerate(x)]
    if d.kind == "namedtuple":
        return [(GetAttrKey(f), c) for f, c in zip(x._fields, x)]
    if d.kind == "dict":
        return [(DictKey(k), x[k]) for k in d.meta]
    if d.kind == "custom":
        node = _registry[d.meta[0]]
        if node.flatten_with_keys is not None:
            return list(node.flatten_with_keys(x)[0])
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(node.flatten(x)[0])]
    return []


def tree_flatten_with_path(tree, is_leaf=None):
    """([(path, leaf), ...], treedef): each leaf with the keys that lead to it."""
    leaves, d = tree_flatten(tree, is_leaf)
    paths = []

    def walk(x, s, prefix):
        if s.kind == "leaf":
            paths.append(prefix)
            return
        for (k, c), cs in zip(_keyed_children(x, s), s.children_):
            walk(c, cs, prefix + (k,))

    walk(tree, d, ())
    return list(zip(paths, leaves)), d


def tree_leaves_with_path(tree, is_leaf=None):
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    """f(path, leaf, *others) leaf by leaf."""
    pl, d = tree_flatten_with_path(tree, is_leaf)
    others = [d.flatten_up_to(r) for r in rest]
    return tree_unflatten(d, [f(p, x, *xs) for (p, x), *xs in zip(pl, *others)])


# ---- whole-tree helpers ---------------------------------------------------------------------------------
def tree_all(tree, is_leaf=None):
    return all(tree_leaves(tree, is_leaf))


_MISSING = object()


def tree_reduce(function, tree, initializer=_MISSING, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _MISSING:
        return _functools.reduce(function, leaves)
    return _functools.reduce(function, leaves, initializer)


def treedef_is_leaf(treedef):
    return treedef.kind == "leaf"


def treedef_children(treedef):
    return treedef.children()


def treedef_tuple(treedefs):
    return PyTreeDef("tuple", None, tuple(treedefs))


def all_leaves(iterable, is_leaf=None):
    """Whether every element of iterable is a leaf."""
    return all(tree_structure(x, is_leaf).kind == "leaf" for x in iterable)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """An outer structure of inner structures turned into an inner structure of outer ones."""
    flat = outer_treedef.flatten_up_to(pytree_to_transpose)
    inner = [inner_treedef.flatten_up_to(x) for x in flat]
    n = inner_treedef.num_leaves
    columns = [tree_unflatten(outer_treedef, [row[i] for row in inner]) for i in range(n)]
    return tree_unflatten(inner_treedef, columns)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """prefix_tree's leaves repeated over the subtrees of full_tree below them."""
    d = tree_structure(prefix_tree, is_leaf)
    subtrees = d.flatten_up_to(full_tree)
    reps = [tree_map(lambda _, v=v: v, s) for v, s in zip(tree_leaves(prefix_tree, is_leaf), subtrees)]
    return tree_unflatten(d, reps)


def broadcast_prefix(prefix, tree, what, is_leaf=None):
    """The leaves of `prefix` (a pytree prefix of `tree`, e.g. vmap's in_axes) repeated for every leaf
    of `tree` below them; is_leaf(p) marks prefix nodes that are leaves themselves (partition specs)."""
    out = []

    def go(p, t):
        if is_leaf is not None and is_leaf(p):
            out.extend([p] * tree_structure(t).num_leaves)
            return
        node = _registry.get(type(p))
        if node is not None:
            if type(t) is not type(p):
                raise ValueError(f"{what}: {p!r} does not match the structure of the arguments")
            for a, b in zip(node.flatten(p)[0], node.flatten(t)[0]):
                go(a, b)
            return
        if p is None or isinstance(p, int) or not isinstance(p, (list, tuple, dict)):
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


# ---- one level at a time, associative reductions, the registry --------------------------------------------
def is_tree_node(x, is_leaf=None):
    """Whether x is an internal node (a container or a registered type) rather than a leaf."""
    if is_leaf is not None and is_leaf(x):
        return False
    return x is None or type(x) in _registry or isinstance(x, (list, tuple, dict))


def flatten_one_level(tree):
    """(children, aux): x's immediate children and its node's static part; ValueError for a leaf."""
    if not is_tree_node(tree) or tree is None:
        if tree is None:
            return [], None
        raise ValueError(f"flatten_one_level: {type(tree).__name__} is a leaf, not a pytree node")
    d = _flatten(tree, [], lambda y: y is not tree)
    children = _children_of(d, tree)
    return children, d.meta


def flatten_one_level_with_keys(tree):
    """([(key, child), ...], aux) for x's immediate children."""
    children, aux = flatten_one_level(tree)
    d = _flatten(tree, [], lambda y: y is not tree)
    return _keyed_children(tree, d), aux


def tree_reduce_associative(operation, tree, *, is_leaf=None):
    """The leaves combined with an associative operation as a balanced tree (log depth)."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        raise ValueError("tree_reduce_associative: the tree has no leaves and there is no initializer")
    while len(leaves) > 1:
        pairs = [operation(leaves[i], leaves[i + 1]) for i in range(0, len(leaves) - 1, 2)]
        leaves = pairs + ([leaves[-1]] if len(leaves) % 2 else [])
    return leaves[0]


def register_pytree_with_keys_class(cls):
    """Class decorator: tree_flatten_with_keys() -> ([(key, child), ...], aux) and the classmethod
    tree_unflatten(aux, children); tree_flatten() is derived unless the class defines it."""
    flat = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    return register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten, flat)


class _Registry:
    """The default pytree registry (jax.tree_util.default_registry): the node types graft knows."""

    def __contains__(self, t):
        return t in _registry or t in (list, tuple, dict, type(None))

    def flatten(self, tree, is_leaf=None):
        return tree_flatten(tree, is_leaf)

    def flatten_one_level(self, tree):
        return flatten_one_level(tree)

    def register_node(self, nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
        return register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


default_registry = _Registry()
KeyEntry = object  # SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey or a registered type's own keys
KeyPath = tuple  # a tuple of KeyEntry
